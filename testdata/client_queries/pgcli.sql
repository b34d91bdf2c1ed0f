-- pgcli 4.7.1 (psycopg 3, pgspecial 2.2.1) against PostgreSQL 15.20, recorded on the wire with a
-- logging proxy (record_proxy.py): the connect queries, the background completion refresh
-- (schemata, tables, views, columns, foreign keys, datatypes, databases, functions, search_path,
-- casing) and the backslash commands \dt, \d {table}, \l, \dn.
-- psycopg 3 sends the relkind filters as a bound parameter ($1, text form given in -- params).
-- A params value that holds a comma is written in single quotes.
-- \d {table} was typed unqualified with {schema} on the search_path; the table OID that pgcli
-- takes from the first answer is written as '{schema}.{table}'::pg_catalog.regclass.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: pgcli connect: liveness check
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: ?column?
SELECT 1
;;

-- query: pgcli connect: read session time zone
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: TimeZone
show time zone
;;

-- query: pgcli completion refresh: search_path
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: unnest
SELECT * FROM unnest(current_schemas(true))
;;

-- query: pgcli completion refresh: schemata
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: nspname
SELECT  nspname
FROM    pg_catalog.pg_namespace
ORDER BY 1
;;

-- query: pgcli completion refresh: tables (relkind = ANY($1))
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: schema_name, table_name
-- params: '{r,p,f}'
SELECT  n.nspname schema_name,
        c.relname table_name
FROM    pg_catalog.pg_class c
        LEFT JOIN pg_catalog.pg_namespace n
            ON n.oid = c.relnamespace
WHERE   c.relkind = ANY($1)
ORDER BY 1,2;
;;

-- query: pgcli completion refresh: table columns (relkind = ANY($1))
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: schema_name, table_name, column_name, type_name, has_default, default
-- params: '{r,p,f}'
SELECT  nsp.nspname schema_name,
        cls.relname table_name,
        att.attname column_name,
        att.atttypid::regtype::text type_name,
        att.atthasdef AS has_default,
        pg_catalog.pg_get_expr(def.adbin, def.adrelid, true) as default
FROM    pg_catalog.pg_attribute att
        INNER JOIN pg_catalog.pg_class cls
            ON att.attrelid = cls.oid
        INNER JOIN pg_catalog.pg_namespace nsp
            ON cls.relnamespace = nsp.oid
        LEFT OUTER JOIN pg_attrdef def
            ON def.adrelid = att.attrelid
            AND def.adnum = att.attnum
WHERE   cls.relkind = ANY($1)
        AND NOT att.attisdropped
        AND att.attnum  > 0
ORDER BY 1, 2, att.attnum
;;

-- query: pgcli completion refresh: foreign keys (join suggestions)
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: parentschema, parenttable, parentcolumn, childschema, childtable, childcolumn
SELECT s_p.nspname AS parentschema,
       t_p.relname AS parenttable,
       unnest((
        select
            array_agg(attname ORDER BY i)
        from
            (select unnest(confkey) as attnum, generate_subscripts(confkey, 1) as i) x
            JOIN pg_catalog.pg_attribute c USING(attnum)
            WHERE c.attrelid = fk.confrelid
        )) AS parentcolumn,
       s_c.nspname AS childschema,
       t_c.relname AS childtable,
       unnest((
        select
            array_agg(attname ORDER BY i)
        from
            (select unnest(conkey) as attnum, generate_subscripts(conkey, 1) as i) x
            JOIN pg_catalog.pg_attribute c USING(attnum)
            WHERE c.attrelid = fk.conrelid
        )) AS childcolumn
FROM pg_catalog.pg_constraint fk
JOIN pg_catalog.pg_class      t_p ON t_p.oid = fk.confrelid
JOIN pg_catalog.pg_namespace  s_p ON s_p.oid = t_p.relnamespace
JOIN pg_catalog.pg_class      t_c ON t_c.oid = fk.conrelid
JOIN pg_catalog.pg_namespace  s_c ON s_c.oid = t_c.relnamespace
WHERE fk.contype = 'f';
;;

-- query: pgcli completion refresh: views (relkind = ANY($1))
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: schema_name, table_name
-- params: '{v,m}'
SELECT  n.nspname schema_name,
        c.relname table_name
FROM    pg_catalog.pg_class c
        LEFT JOIN pg_catalog.pg_namespace n
            ON n.oid = c.relnamespace
WHERE   c.relkind = ANY($1)
ORDER BY 1,2;
;;

-- query: pgcli completion refresh: view columns (relkind = ANY($1))
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: schema_name, table_name, column_name, type_name, has_default, default
-- params: '{v,m}'
SELECT  nsp.nspname schema_name,
        cls.relname table_name,
        att.attname column_name,
        att.atttypid::regtype::text type_name,
        att.atthasdef AS has_default,
        pg_catalog.pg_get_expr(def.adbin, def.adrelid, true) as default
FROM    pg_catalog.pg_attribute att
        INNER JOIN pg_catalog.pg_class cls
            ON att.attrelid = cls.oid
        INNER JOIN pg_catalog.pg_namespace nsp
            ON cls.relnamespace = nsp.oid
        LEFT OUTER JOIN pg_attrdef def
            ON def.adrelid = att.attrelid
            AND def.adnum = att.attnum
WHERE   cls.relkind = ANY($1)
        AND NOT att.attisdropped
        AND att.attnum  > 0
ORDER BY 1, 2, att.attnum
;;

-- query: pgcli completion refresh: datatypes
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: schema_name, type_name
SELECT n.nspname schema_name,
       t.typname type_name
FROM   pg_catalog.pg_type t
       INNER JOIN pg_catalog.pg_namespace n
          ON n.oid = t.typnamespace
WHERE ( t.typrelid = 0  -- non-composite types
        OR (  -- composite type, but not a table
              SELECT c.relkind = 'c'
              FROM pg_catalog.pg_class c
              WHERE c.oid = t.typrelid
            )
      )
      AND NOT EXISTS( -- ignore array types
            SELECT  1
            FROM    pg_catalog.pg_type el
            WHERE   el.oid = t.typelem AND el.typarray = t.oid
          )
      AND n.nspname <> 'pg_catalog'
      AND n.nspname <> 'information_schema'
ORDER BY 1, 2;
;;

-- query: pgcli completion refresh: databases
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: datname
SELECT d.datname
FROM pg_catalog.pg_database d
ORDER BY 1
;;

-- query: pgcli completion refresh: functions
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: schema_name, func_name, proargnames, coalesce, proargmodes, return_type, is_aggregate, is_window, is_set_returning, is_extension, arg_defaults
SELECT n.nspname schema_name,
        p.proname func_name,
        p.proargnames,
        COALESCE(proallargtypes::regtype[], proargtypes::regtype[])::text[],
        p.proargmodes,
        prorettype::regtype::text return_type,
        p.prokind = 'a' is_aggregate,
        p.prokind = 'w' is_window,
        p.proretset is_set_returning,
        d.deptype = 'e' is_extension,
        pg_get_expr(proargdefaults, 0) AS arg_defaults
FROM pg_catalog.pg_proc p
        INNER JOIN pg_catalog.pg_namespace n
            ON n.oid = p.pronamespace
LEFT JOIN pg_depend d ON d.objid = p.oid and d.deptype = 'e'
WHERE p.prorettype::regtype != 'trigger'::regtype
ORDER BY 1, 2
;;

-- query: pgcli \dt
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: schema, name, type, owner
SELECT n.nspname as schema,
                    c.relname as name,
                    CASE c.relkind
                      WHEN 'r' THEN 'table' WHEN 'v' THEN 'view'
                      WHEN 'p' THEN 'partitioned table'
                      WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index'
                      WHEN 'S' THEN 'sequence' WHEN 's' THEN 'special'
                      WHEN 'f' THEN 'foreign table' END
                    as type,
                    pg_catalog.pg_get_userbyid(c.relowner) as owner

            FROM    pg_catalog.pg_class c
                    LEFT JOIN pg_catalog.pg_namespace n
                      ON n.oid = c.relnamespace
            WHERE   c.relkind = ANY('{r,p,""}')

            AND n.nspname <> 'pg_catalog'
            AND n.nspname <> 'information_schema'
            AND n.nspname !~ '^pg_toast'
            AND pg_catalog.pg_table_is_visible(c.oid)

            ORDER BY 1, 2
;;

-- query: pgcli \d {table}: find the relation
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: oid, nspname, relname
-- params: ^({table})$
SELECT c.oid, n.nspname, c.relname
             FROM pg_catalog.pg_class c
             LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE pg_catalog.pg_table_is_visible(c.oid) AND c.relname OPERATOR(pg_catalog.~) $1
             ORDER BY 2,3
;;

-- query: pgcli \d {table}: table properties
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: relchecks, relkind, relhasindex, relhasrules, relhastriggers, relhasoids, ?column?, reltablespace, reloftype, relpersistence, relispartition
SELECT c.relchecks, c.relkind, c.relhasindex,
                    c.relhasrules, c.relhastriggers, false as relhasoids,
                    '',
                    c.reltablespace,
                    CASE WHEN c.reloftype = 0 THEN ''
                        ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text
                    END,
                    c.relpersistence,
                    c.relispartition
                 FROM pg_catalog.pg_class c
                 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
                 WHERE c.oid = '{schema}.{table}'::pg_catalog.regclass
;;

-- query: pgcli \d {table}: columns
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: attname, format_type, substring, attnotnull, attcollation, attidentity, attgenerated, indexdef, attfdwoptions
SELECT a.attname,
    pg_catalog.format_type(a.atttypid, a.atttypmod)
    , (SELECT substring(pg_catalog.pg_get_expr(d.adbin, d.adrelid, true) for 128)
                     FROM pg_catalog.pg_attrdef d
                     WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef)
                    , a.attnotnull,
(SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
                    WHERE c.oid = a.attcollation
                    AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated,
 NULL AS indexdef, NULL AS attfdwoptions FROM pg_catalog.pg_attribute a WHERE a.attrelid = '{schema}.{table}'::pg_catalog.regclass AND
    a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum;
;;

-- query: pgcli \d {table}: indexes
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: relname, indisprimary, indisunique, indisclustered, indisvalid, pg_get_indexdef, pg_get_constraintdef, contype, condeferrable, condeferred, reltablespace
SELECT c2.relname,
                                i.indisprimary,
                                i.indisunique,
                                i.indisclustered,
                                i.indisvalid,
                                pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
                                pg_catalog.pg_get_constraintdef(con.oid, true),
                                contype,
                                condeferrable,
                                condeferred,
                                c2.reltablespace
                        FROM pg_catalog.pg_class c,
                            pg_catalog.pg_class c2,
                            pg_catalog.pg_index i
                        LEFT JOIN pg_catalog.pg_constraint con
                        ON conrelid = i.indrelid
                            AND conindid = i.indexrelid
                            AND contype IN ('p','u','x')
                        WHERE c.oid = '{schema}.{table}'::pg_catalog.regclass
                            AND c.oid = i.indrelid
                            AND i.indexrelid = c2.oid
                        ORDER BY i.indisprimary DESC,
                            i.indisunique DESC,
                            c2.relname;
;;

-- query: pgcli \d {table}: foreign keys
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: conname, condef
SELECT conname,
 pg_catalog.pg_get_constraintdef(r.oid, true) as condef
FROM pg_catalog.pg_constraint r
WHERE r.conrelid = '{schema}.{table}'::pg_catalog.regclass AND r.contype = 'f' ORDER BY 1;
;;

-- query: pgcli \d {table}: referenced by
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: conrelid, conname, condef
SELECT conrelid::pg_catalog.regclass, conname,
  pg_catalog.pg_get_constraintdef(c.oid, true) as condef
FROM pg_catalog.pg_constraint c
WHERE c.confrelid = '{schema}.{table}'::pg_catalog.regclass AND c.contype = 'f' ORDER BY 1;
;;

-- query: pgcli \d {table}: triggers
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: tgname, pg_get_triggerdef, tgenabled
SELECT t.tgname,
                        pg_catalog.pg_get_triggerdef(t.oid, true),
                        t.tgenabled
                   FROM pg_catalog.pg_trigger t
                   WHERE t.tgrelid = '{schema}.{table}'::pg_catalog.regclass AND NOT t.tgisinternal
                   ORDER BY 1
;;

-- query: pgcli \d {table}: parent tables
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: oid
SELECT c.oid::pg_catalog.regclass
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhparent
  AND i.inhrelid = '{schema}.{table}'::pg_catalog.regclass
ORDER BY inhseqno
;;

-- query: pgcli \d {table}: child tables
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: oid
SELECT c.oid::pg_catalog.regclass
                        FROM pg_catalog.pg_class c,
                            pg_catalog.pg_inherits i
                        WHERE c.oid = i.inhrelid
                            AND i.inhparent = '{schema}.{table}'::pg_catalog.regclass
                        ORDER BY c.oid::pg_catalog.regclass::pg_catalog.text;
;;

-- query: pgcli \l
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: name, owner, encoding, collate, ctype, access_privileges
SELECT d.datname as name,
        pg_catalog.pg_get_userbyid(d.datdba) as owner,
        pg_catalog.pg_encoding_to_char(d.encoding) as encoding,
        d.datcollate as collate,
        d.datctype as ctype,
        pg_catalog.array_to_string(d.datacl, E'
') AS access_privileges

        FROM pg_catalog.pg_database d


        ORDER BY 1
;;

-- query: pgcli \dn
-- source: pgcli 4.7.1 backslash command via pgspecial 2.2.1 (dbcli/pgspecial pgspecial/dbcommands.py), captured on the wire
-- reads: name, owner
SELECT n.nspname AS name, pg_catalog.pg_get_userbyid(n.nspowner) AS owner

              FROM pg_catalog.pg_namespace n WHERE n.nspname
                !~ '^pg_' AND n.nspname <> 'information_schema'
              ORDER BY 1
;;

-- query: pgcli completion refresh: casing (only when generate_casing_file is on)
-- source: pgcli 4.7.1 (psycopg 3.3.9, pgspecial 2.2.1), captured on the wire; SQL in dbcli/pgcli pgcli/pgexecute.py
-- reads: word
WITH Words AS (
      SELECT regexp_split_to_table(prosrc, '\W+') AS Word, COUNT(1)
      FROM pg_catalog.pg_proc P
      JOIN pg_catalog.pg_namespace N ON N.oid = P.pronamespace
      JOIN pg_catalog.pg_language L ON L.oid = P.prolang
      WHERE L.lanname IN ('sql', 'plpgsql')
      AND N.nspname NOT IN ('pg_catalog', 'information_schema')
      GROUP BY Word
  ),
  OrderWords AS (
      SELECT Word,
          ROW_NUMBER() OVER(PARTITION BY LOWER(Word) ORDER BY Count DESC)
      FROM Words
      WHERE Word ~* '.*[a-z].*'
  ),
  Names AS (
      --Column names
      SELECT attname AS Name
      FROM pg_catalog.pg_attribute
      UNION -- Table/view names
      SELECT relname
      FROM pg_catalog.pg_class
      UNION -- Function names
      SELECT proname
      FROM pg_catalog.pg_proc
      UNION -- Type names
      SELECT typname
      FROM pg_catalog.pg_type
      UNION -- Schema names
      SELECT nspname
      FROM pg_catalog.pg_namespace
      UNION -- Parameter names
      SELECT unnest(proargnames)
      FROM pg_proc
  )
  SELECT Word
  FROM OrderWords
  WHERE LOWER(Word) IN (SELECT Name FROM Names)
  AND Row_Number = 1;
;;
