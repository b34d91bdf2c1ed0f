-- psql (PostgreSQL 15.20 client) against PostgreSQL 15.20: the hidden queries of the
-- backslash commands (psql -E) and the queries of tab completion, recorded on the wire
-- with a logging proxy (see record_proxy.py) on a probe schema.
-- psql reads every result column by position (PQgetvalue), so 'reads' is the whole row.
-- \x is client-side and sends nothing. psql sends nothing on connect.
-- The table's OID, which psql takes from the first query's answer and writes as a
-- quoted literal ('16401'), is written here as '{schema}.{table}'::pg_catalog.regclass.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: psql \d
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Type, Owner
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','v','m','S','f','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;
;;

-- query: psql \dt
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Type, Owner
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;
;;

-- query: psql \dt {schema}.*
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Type, Owner
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','t','s','')
  AND n.nspname OPERATOR(pg_catalog.~) '^({schema})$' COLLATE pg_catalog.default
ORDER BY 1,2;
;;

-- query: psql \dn
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Name, Owner
SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;
;;

-- query: psql \df
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Result data type, Argument data types, Type
SELECT n.nspname as "Schema",
  p.proname as "Name",
  pg_catalog.pg_get_function_result(p.oid) as "Result data type",
  pg_catalog.pg_get_function_arguments(p.oid) as "Argument data types",
 CASE p.prokind
  WHEN 'a' THEN 'agg'
  WHEN 'w' THEN 'window'
  WHEN 'p' THEN 'proc'
  ELSE 'func'
 END as "Type"
FROM pg_catalog.pg_proc p
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE pg_catalog.pg_function_is_visible(p.oid)
      AND n.nspname <> 'pg_catalog'
      AND n.nspname <> 'information_schema'
ORDER BY 1, 2, 4;
;;

-- query: psql \df {schema}.*
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Result data type, Argument data types, Type
SELECT n.nspname as "Schema",
  p.proname as "Name",
  pg_catalog.pg_get_function_result(p.oid) as "Result data type",
  pg_catalog.pg_get_function_arguments(p.oid) as "Argument data types",
 CASE p.prokind
  WHEN 'a' THEN 'agg'
  WHEN 'w' THEN 'window'
  WHEN 'p' THEN 'proc'
  ELSE 'func'
 END as "Type"
FROM pg_catalog.pg_proc p
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname OPERATOR(pg_catalog.~) '^({schema})$' COLLATE pg_catalog.default
ORDER BY 1, 2, 4;
;;

-- query: psql \dv
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Type, Owner
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;
;;

-- query: psql \dv {schema}.*
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Type, Owner
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('v','s','')
  AND n.nspname OPERATOR(pg_catalog.~) '^({schema})$' COLLATE pg_catalog.default
ORDER BY 1,2;
;;

-- query: psql \di {schema}.*
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Type, Owner, Table
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner",
  c2.relname as "Table"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
     LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid
     LEFT JOIN pg_catalog.pg_class c2 ON i.indrelid = c2.oid
WHERE c.relkind IN ('i','I','s','')
  AND n.nspname OPERATOR(pg_catalog.~) '^({schema})$' COLLATE pg_catalog.default
ORDER BY 1,2;
;;

-- query: psql \l
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Name, Owner, Encoding, Collate, Ctype, ICU Locale, Locale Provider, Access privileges
SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;
;;

-- query: psql \du
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolconnlimit, rolvaliduntil, memberof, rolreplication, rolbypassrls
SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  ARRAY(SELECT b.rolname
        FROM pg_catalog.pg_auth_members m
        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)
        WHERE m.member = r.oid) as memberof
, r.rolreplication
, r.rolbypassrls
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_'
ORDER BY 1;
;;

-- query: psql \d {schema}.{table}: find the relation by name pattern
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: oid, nspname, relname
SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^({table})$' COLLATE pg_catalog.default
  AND n.nspname OPERATOR(pg_catalog.~) '^({schema})$' COLLATE pg_catalog.default
ORDER BY 2, 3;
;;

-- query: psql \d {schema}.{table}: table properties
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: relchecks, relkind, relhasindex, relhasrules, relhastriggers, relrowsecurity, relforcerowsecurity, relhasoids, relispartition, ?column?, reltablespace, reloftype, relpersistence, relreplident, amname
SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = '{schema}.{table}'::pg_catalog.regclass;
;;

-- query: psql \d {schema}.{table}: columns
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: attname, format_type, pg_get_expr, attnotnull, attcollation, attidentity, attgenerated
SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '{schema}.{table}'::pg_catalog.regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;
;;

-- query: psql \d {schema}.{table}: indexes
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: relname, indisprimary, indisunique, indisclustered, indisvalid, pg_get_indexdef, pg_get_constraintdef, contype, condeferrable, condeferred, indisreplident, reltablespace
SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = '{schema}.{table}'::pg_catalog.regclass AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;
;;

-- query: psql \d {schema}.{table}: foreign keys
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: sametable, conname, condef, ontable
SELECT true as sametable, conname,
  pg_catalog.pg_get_constraintdef(r.oid, true) as condef,
  conrelid::pg_catalog.regclass AS ontable
FROM pg_catalog.pg_constraint r
WHERE r.conrelid = '{schema}.{table}'::pg_catalog.regclass AND r.contype = 'f'
     AND conparentid = 0
ORDER BY conname
;;

-- query: psql \d {schema}.{table}: referenced by (incoming foreign keys)
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: conname, ontable, condef
SELECT conname, conrelid::pg_catalog.regclass AS ontable,
       pg_catalog.pg_get_constraintdef(oid, true) AS condef
  FROM pg_catalog.pg_constraint c
 WHERE confrelid IN (SELECT pg_catalog.pg_partition_ancestors('{schema}.{table}'::pg_catalog.regclass)
                     UNION ALL VALUES ('{schema}.{table}'::pg_catalog.regclass::pg_catalog.regclass))
       AND contype = 'f' AND conparentid = 0
ORDER BY conname;
;;

-- query: psql \d {schema}.{table}: row-level security policies
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: polname, polpermissive, array_to_string, pg_get_expr, pg_get_expr, cmd
SELECT pol.polname, pol.polpermissive,
  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
  CASE pol.polcmd
    WHEN 'r' THEN 'SELECT'
    WHEN 'a' THEN 'INSERT'
    WHEN 'w' THEN 'UPDATE'
    WHEN 'd' THEN 'DELETE'
    END AS cmd
FROM pg_catalog.pg_policy pol
WHERE pol.polrelid = '{schema}.{table}'::pg_catalog.regclass ORDER BY 1;
;;

-- query: psql \d {schema}.{table}: extended statistics
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: oid, stxrelid, nsp, stxname, columns, ndist_enabled, deps_enabled, mcv_enabled, stxstattarget
SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,
pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,
  'd' = any(stxkind) AS ndist_enabled,
  'f' = any(stxkind) AS deps_enabled,
  'm' = any(stxkind) AS mcv_enabled,
stxstattarget
FROM pg_catalog.pg_statistic_ext
WHERE stxrelid = '{schema}.{table}'::pg_catalog.regclass
ORDER BY nsp, stxname;
;;

-- query: psql \d {schema}.{table}: publications
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: pubname, ?column?, ?column?
SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid
     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid
WHERE pc.oid ='{schema}.{table}'::pg_catalog.regclass and pg_catalog.pg_relation_is_publishable('{schema}.{table}'::pg_catalog.regclass)
UNION
SELECT pubname
     , pg_get_expr(pr.prqual, c.oid)
     , (CASE WHEN pr.prattrs IS NOT NULL THEN
         (SELECT string_agg(attname, ', ')
           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,
                pg_catalog.pg_attribute
          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])
        ELSE NULL END) FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
WHERE pr.prrelid = '{schema}.{table}'::pg_catalog.regclass
UNION
SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
WHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('{schema}.{table}'::pg_catalog.regclass)
ORDER BY 1;
;;

-- query: psql \d {schema}.{table}: triggers
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: tgname, pg_get_triggerdef, tgenabled, tgisinternal, parent
SELECT t.tgname, pg_catalog.pg_get_triggerdef(t.oid, true), t.tgenabled, t.tgisinternal,
  CASE WHEN t.tgparentid != 0 THEN
    (SELECT u.tgrelid::pg_catalog.regclass
     FROM pg_catalog.pg_trigger AS u,
          pg_catalog.pg_partition_ancestors(t.tgrelid) WITH ORDINALITY AS a(relid, depth)
     WHERE u.tgname = t.tgname AND u.tgrelid = a.relid
           AND u.tgparentid = 0
     ORDER BY a.depth LIMIT 1)
  END AS parent
FROM pg_catalog.pg_trigger t
WHERE t.tgrelid = '{schema}.{table}'::pg_catalog.regclass AND (NOT t.tgisinternal OR (t.tgisinternal AND t.tgenabled = 'D'))
ORDER BY 1;
;;

-- query: psql \d {schema}.{table}: parent tables (inheritance)
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: oid
SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent AND i.inhrelid = '{schema}.{table}'::pg_catalog.regclass
  AND c.relkind != 'p' AND c.relkind != 'I'
ORDER BY inhseqno;
;;

-- query: psql \d {schema}.{table}: child tables / partitions
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: oid, relkind, inhdetachpending, pg_get_expr
SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhrelid AND i.inhparent = '{schema}.{table}'::pg_catalog.regclass
ORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;
;;

-- query: psql \d+ {schema}.{table}: table properties
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: relchecks, relkind, relhasindex, relhasrules, relhastriggers, relrowsecurity, relforcerowsecurity, relhasoids, relispartition, array_to_string, reltablespace, reloftype, relpersistence, relreplident, amname
SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, pg_catalog.array_to_string(c.reloptions || array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), ', ')
, c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = '{schema}.{table}'::pg_catalog.regclass;
;;

-- query: psql \d+ {schema}.{table}: columns
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: attname, format_type, pg_get_expr, attnotnull, attcollation, attidentity, attgenerated, attstorage, attcompression, attstattarget, col_description
SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated,
  a.attstorage,
  a.attcompression AS attcompression,
  CASE WHEN a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget,
  pg_catalog.col_description(a.attrelid, a.attnum)
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = '{schema}.{table}'::pg_catalog.regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;
;;

-- query: psql \d {table}  (unqualified, {schema} on search_path): find the relation by name pattern
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: oid, nspname, relname
SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^({table})$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;
;;

-- query: psql \dt+ {schema}.*
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Schema, Name, Type, Owner, Persistence, Access method, Size, Description
SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner",
  CASE c.relpersistence WHEN 'p' THEN 'permanent' WHEN 't' THEN 'temporary' WHEN 'u' THEN 'unlogged' END as "Persistence",
  am.amname as "Access method",
  pg_catalog.pg_size_pretty(pg_catalog.pg_table_size(c.oid)) as "Size",
  pg_catalog.obj_description(c.oid, 'pg_class') as "Description"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','t','s','')
  AND n.nspname OPERATOR(pg_catalog.~) '^({schema})$' COLLATE pg_catalog.default
ORDER BY 1,2;
;;

-- query: psql \dn+
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Name, Owner, Access privileges, Description
SELECT n.nspname AS "Name",
  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner",
  pg_catalog.array_to_string(n.nspacl, E'\n') AS "Access privileges",
  pg_catalog.obj_description(n.oid, 'pg_namespace') AS "Description"
FROM pg_catalog.pg_namespace n
WHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
ORDER BY 1;
;;

-- query: psql \dx
-- source: psql -E (psql 15.20 against PostgreSQL 15.20; also captured on the wire)
-- reads: Name, Version, Schema, Description
SELECT e.extname AS "Name", e.extversion AS "Version", n.nspname AS "Schema", c.description AS "Description"
FROM pg_catalog.pg_extension e LEFT JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace LEFT JOIN pg_catalog.pg_description c ON c.objoid = e.oid AND c.classoid = 'pg_catalog.pg_extension'::pg_catalog.regclass
ORDER BY 1;
;;

-- query: psql tab completion: relation and schema names (SELECT * FROM it<TAB>) [typed: it]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, text
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE 'it%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE 'it%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
;;

-- query: psql tab completion: relation and schema names (SELECT * FROM it<TAB>) [typed: {table}]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, text
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE '{table}%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE '{table}%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
;;

-- query: psql tab completion: column names of {table} (WHERE / ORDER BY / INSERT INTO {table} ( / UPDATE {table} SET <TAB>) [typed: am]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: attname, text
SELECT a.attname, NULL::pg_catalog.text FROM pg_catalog.pg_attribute a, pg_catalog.pg_class c WHERE c.oid = a.attrelid and a.attnum > 0 and not a.attisdropped AND (a.attname) LIKE 'am%' AND c.relname = '{table}' AND pg_catalog.pg_table_is_visible(c.oid)
LIMIT 1000
;;

-- query: psql tab completion: relation names in a schema (SELECT * FROM {schema}.<TAB>) [typed: it]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, nspname
SELECT c.relname, n.nspname FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE 'it%' AND n.nspname = '{schema}'
LIMIT 1000
;;

-- query: psql tab completion: relation names in a schema (SELECT * FROM {schema}.<TAB>) [typed: {table}]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, nspname
SELECT c.relname, n.nspname FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE '{table}%' AND n.nspname = '{schema}'
LIMIT 1000
;;

-- query: psql tab completion: relation and schema names (SELECT * FROM it<TAB>) [typed: cq\_pr]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, text
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE 'cq\_pr%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE 'cq\_pr%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
;;

-- query: psql tab completion: relation names in a schema (SELECT * FROM {schema}.<TAB>) [typed: nothing]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, nspname
SELECT c.relname, n.nspname FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'S', 'v', 'm', 'f', 'p') AND (c.relname) LIKE '%' AND n.nspname = '{schema}'
LIMIT 1000
;;

-- query: psql tab completion: any relation or schema name (\d it<TAB>) [typed: it]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, text
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE (c.relname) LIKE 'it%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE 'it%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
;;

-- query: psql tab completion: any relation or schema name (\d it<TAB>) [typed: {table}]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, text
SELECT c.relname, NULL::pg_catalog.text FROM pg_catalog.pg_class c WHERE (c.relname) LIKE '{table}%' AND pg_catalog.pg_table_is_visible(c.oid) AND c.relnamespace <> (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = 'pg_catalog')
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE '{table}%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
;;

-- query: psql tab completion: database names (\c te<TAB>) [typed: te]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: datname
SELECT datname FROM pg_catalog.pg_database  WHERE datname LIKE 'te%'
LIMIT 1000
;;

-- query: psql tab completion: column names of {table} (WHERE / ORDER BY / INSERT INTO {table} ( / UPDATE {table} SET <TAB>) [typed: nothing]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: attname, text
SELECT a.attname, NULL::pg_catalog.text FROM pg_catalog.pg_attribute a, pg_catalog.pg_class c WHERE c.oid = a.attrelid and a.attnum > 0 and not a.attisdropped AND (a.attname) LIKE '%' AND c.relname = '{table}' AND pg_catalog.pg_table_is_visible(c.oid)
LIMIT 1000
;;

-- query: psql tab completion: function names (\df <TAB>) [typed: nothing]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: proname, text
SELECT p.proname, NULL::pg_catalog.text FROM pg_catalog.pg_proc p WHERE (p.proname) LIKE '%' AND pg_catalog.pg_function_is_visible(p.oid)
UNION ALL
SELECT NULL::pg_catalog.text, n.nspname FROM pg_catalog.pg_namespace n WHERE n.nspname LIKE '%' AND n.nspname NOT LIKE E'pg\\_%'
LIMIT 1000
;;

-- query: psql tab completion: schema names (\dn c<TAB>) [typed: c]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: nspname
SELECT nspname FROM pg_catalog.pg_namespace  WHERE nspname LIKE 'c%'
LIMIT 1000
;;

-- query: psql tab completion: any relation in a schema (\d {schema}.<TAB>) [typed: {table}]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: relname, nspname
SELECT c.relname, n.nspname FROM pg_catalog.pg_class c, pg_catalog.pg_namespace n WHERE c.relnamespace = n.oid AND (c.relname) LIKE '{table}%' AND n.nspname = '{schema}'
LIMIT 1000
;;

-- query: psql tab completion: column names of {schema}.{table} (SELECT * FROM {schema}.{table} WHERE n<TAB>) [typed: n]
-- source: psql 15.20 tab completion, captured on the wire (SQL from src/bin/psql/tab-complete.c, postgres/postgres REL_15_STABLE)
-- reads: attname, text
SELECT a.attname, NULL::pg_catalog.text FROM pg_catalog.pg_attribute a, pg_catalog.pg_class c, pg_catalog.pg_namespace nr WHERE c.oid = a.attrelid and a.attnum > 0 and not a.attisdropped AND (a.attname) LIKE 'n%' AND c.relname = '{table}' AND c.relnamespace = nr.oid AND nr.nspname = '{schema}'
LIMIT 1000
;;
