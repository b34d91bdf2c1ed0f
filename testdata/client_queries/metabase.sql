-- Metabase's PostgreSQL driver (metabase/metabase src/metabase/driver/postgres.clj, on the
-- sql-jdbc driver and pgjdbc 42.7): connect / connection test, describe-database (schemas,
-- privileges, tables), describe-table (describe-fields, getColumns, getPrimaryKeys),
-- describe-fks, fingerprinting samples and a simple question.
-- The SQL is taken from a public wire capture of Metabase v0.62.1.5 syncing PostgreSQL 16,
-- which gives the bound parameter values ($n, listed in -- params); two v0.55.1 forms come
-- from datafusion-postgres' Metabase test. The recording's schema 'public' and its tables
-- are replaced by {schema} / {table} and the columns of {table}; OIDs by
-- '{schema}.{table}'::regclass::oid. The recorder ended each statement with ';', which is
-- left off here except where Metabase's source has it ('show timezone;').
-- pgjdbc's own DatabaseMetaData SQL (42.5.5, recorded here) is in pgjdbc.sql.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: metabase connect: set application name
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #1); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads:
SET application_name = 'Metabase v0.62.1.5 [d4fe74c4-96c3-4812-b3ae-35e513752b13]'
;;

-- query: metabase connect (v0.55.1): float digits
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/metabase.rs (Metabase v0.55.1 startup recording)
-- reads:
SET extra_float_digits = 2
;;

-- query: metabase connection test / pool validation
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #2); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: ?column?
SELECT 1
;;

-- query: metabase connect: read default isolation level
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #3); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: transaction_isolation
SHOW TRANSACTION ISOLATION LEVEL
;;

-- query: metabase connect: current catalog
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #4); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: current_catalog
select current_catalog
;;

-- query: metabase sync: relax isolation for metadata reads
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #5); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads:
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ UNCOMMITTED
;;

-- query: metabase sync: restore isolation
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #6); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads:
SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED
;;

-- query: metabase describe-database: syncable schemas (pgjdbc 42.7 getSchemas)
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #7); SQL of pgjdbc 42.7 PgDatabaseMetaData.java (pgjdbc/pgjdbc)
-- reads: TABLE_SCHEM, TABLE_CATALOG
SELECT nspname AS "TABLE_SCHEM", current_database() AS "TABLE_CATALOG" FROM pg_catalog.pg_namespace  WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname = (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))  ORDER BY "TABLE_SCHEM"
;;

-- query: metabase describe-database: table privileges of the current user
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #8); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: role, schema, table, update, select, insert, delete
with table_privileges as (
 select
   NULL as role,
   t.schemaname as schema,
   t.objectname as table,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'update') as update,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'select') as select,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'insert') as insert,
   pg_catalog.has_table_privilege(     current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"',  'delete') as delete
 from (
   select schemaname, tablename as objectname from pg_catalog.pg_tables
   union
   select schemaname, viewname as objectname from pg_catalog.pg_views
   union
   select schemaname, matviewname as objectname from pg_catalog.pg_matviews
 ) t
 where t.schemaname !~ '^pg_'
   and t.schemaname <> 'information_schema'
   and pg_catalog.has_schema_privilege(current_user, t.schemaname, 'usage')
)
select t.*
from table_privileges t
;;

-- query: metabase describe-database: tables of the synced schemas (get-tables-sql)
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #9); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: schema, name, type, description, estimated_row_count
-- params: 0, 0, ^pg_, information_schema, {schema}
SELECT "n"."nspname" AS "schema", "c"."relname" AS "name", CASE "c"."relkind" WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS "type", "d"."description" AS "description", NULLIF("stat"."n_live_tup", $1) AS "estimated_row_count" FROM "pg_catalog"."pg_class" AS "c" INNER JOIN "pg_catalog"."pg_namespace" AS "n" ON "c"."relnamespace" = "n"."oid" LEFT JOIN "pg_catalog"."pg_description" AS "d" ON ("c"."oid" = "d"."objoid") AND ("d"."objsubid" = $2) AND ("d"."classoid" = 'pg_class'::regclass) LEFT JOIN "pg_stat_user_tables" AS "stat" ON ("n"."nspname" = "stat"."schemaname") AND ("c"."relname" = "stat"."relname") WHERE ("c"."relnamespace" = "n"."oid") AND ("n"."nspname" !~ $3) AND ("n"."nspname" <> $4) AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND ("n"."nspname" IN ($5)) ORDER BY "type" ASC, "schema" ASC, "name" ASC
;;

-- query: metabase describe-database (v0.55.1): tables of the synced schemas, values inlined
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/metabase.rs (Metabase v0.55.1 startup recording)
-- reads: schema, name, type, description, estimated_row_count
SELECT "n"."nspname" AS "schema", "c"."relname" AS "name", CASE "c"."relkind" WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW' WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS "type", "d"."description" AS "description", "stat"."n_live_tup" AS "estimated_row_count" FROM "pg_catalog"."pg_class" AS "c" INNER JOIN "pg_catalog"."pg_namespace" AS "n" ON "c"."relnamespace" = "n"."oid" LEFT JOIN "pg_catalog"."pg_description" AS "d" ON ("c"."oid" = "d"."objoid") AND ("d"."objsubid" = '0') AND ("d"."classoid" = 'pg_class'::regclass) LEFT JOIN "pg_stat_user_tables" AS "stat" ON ("n"."nspname" = "stat"."schemaname") AND ("c"."relname" = "stat"."relname") WHERE ("c"."relnamespace" = "n"."oid") AND ("n"."nspname" !~ '^pg_') AND ("n"."nspname" <> 'information_schema') AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND ("n"."nspname" IN ('{schema}')) ORDER BY "type" ASC, "schema" ASC, "name" ASC
;;

-- query: metabase db-default-timezone
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #10); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: TimeZone
show timezone;
;;

-- query: metabase sync: enum types
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #11); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: nspname, typname
SELECT nspname, typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid IN (SELECT DISTINCT enumtypid FROM pg_enum e)
;;

-- query: metabase describe-table / describe-fields: columns of the synced schema (describe-fields-sql)
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #12); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: name, database-type, database-position, table-schema, table-name, pk?, field-comment, database-required, database-default, database-is-auto-increment, database-is-generated, database-is-nullable
-- params: ALWAYS, {schema}, {schema}
SELECT "c"."column_name" AS "name", CASE WHEN "c"."udt_schema" IN ('public', 'pg_catalog') THEN FORMAT('%s', "c"."udt_name") ELSE FORMAT('"%s"."%s"', "c"."udt_schema", "c"."udt_name") END AS "database-type", "c"."ordinal_position" - 1 AS "database-position", "c"."table_schema" AS "table-schema", "c"."table_name" AS "table-name", "pk"."column_name" IS NOT NULL AS "pk?", COL_DESCRIPTION(CAST(CAST(FORMAT('%I.%I', CAST("c"."table_schema" AS TEXT), CAST("c"."table_name" AS TEXT)) AS REGCLASS) AS OID), "c"."ordinal_position") AS "field-comment", (("column_default" IS NULL) OR (LOWER("column_default") = 'null')) AND ("is_nullable" = 'NO') AND NOT ((("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO')) AS "database-required", "column_default" AS "database-default", (("column_default" IS NOT NULL) AND ("column_default" LIKE '%nextval(%')) OR ("is_identity" <> 'NO') AS "database-is-auto-increment", "is_generated" = $1 AS "database-is-generated", "is_nullable" = 'YES' AS "database-is-nullable" FROM "information_schema"."columns" AS "c" LEFT JOIN (SELECT "tc"."table_schema", "tc"."table_name", "kc"."column_name" FROM "information_schema"."table_constraints" AS "tc" INNER JOIN "information_schema"."key_column_usage" AS "kc" ON ("tc"."constraint_name" = "kc"."constraint_name") AND ("tc"."table_schema" = "kc"."table_schema") AND ("tc"."table_name" = "kc"."table_name") WHERE "tc"."constraint_type" = 'PRIMARY KEY') AS "pk" ON ("c"."table_schema" = "pk"."table_schema") AND ("c"."table_name" = "pk"."table_name") AND ("c"."column_name" = "pk"."column_name") WHERE c.table_schema !~ '^information_schema|catalog_history|pg_' AND ("c"."table_schema" IN ($2)) UNION ALL SELECT "pa"."attname" AS "name", CASE WHEN "ptn"."nspname" IN ('public', 'pg_catalog') THEN FORMAT('%s', "pt"."typname") ELSE FORMAT('"%s"."%s"', "ptn"."nspname", "pt"."typname") END AS "database-type", "pa"."attnum" - 1 AS "database-position", "pn"."nspname" AS "table-schema", "pc"."relname" AS "table-name", FALSE AS "pk?", NULL AS "field-comment", FALSE AS "database-required", NULL AS "database-default", FALSE AS "database-is-auto-increment", FALSE AS "database-is-generated", FALSE AS "database-is-nullable" FROM "pg_catalog"."pg_class" AS "pc" INNER JOIN "pg_catalog"."pg_namespace" AS "pn" ON "pn"."oid" = "pc"."relnamespace" INNER JOIN "pg_catalog"."pg_attribute" AS "pa" ON "pa"."attrelid" = "pc"."oid" INNER JOIN "pg_catalog"."pg_type" AS "pt" ON "pt"."oid" = "pa"."atttypid" INNER JOIN "pg_catalog"."pg_namespace" AS "ptn" ON "ptn"."oid" = "pt"."typnamespace" WHERE ("pc"."relkind" = 'm') AND ("pa"."attnum" >= 1) AND ("pn"."nspname" IN ($3)) ORDER BY "table-schema" ASC, "table-name" ASC, "database-position" ASC
;;

-- query: metabase describe-table: columns via pgjdbc 42.7 DatabaseMetaData.getColumns
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #13); SQL of pgjdbc 42.7 PgDatabaseMetaData.java (pgjdbc/pgjdbc)
-- reads: current_database, nspname, relname, attname, atttypid, attnotnull, atttypmod, attlen, typtypmod, attnum, attidentity, attgenerated, adsrc, description, typbasetype, typtype
-- params: {schema}, {table}
SELECT * FROM (SELECT current_database() AS current_database, n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull  OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped  AND n.nspname LIKE $1 AND c.relname LIKE $2) c WHERE true  ORDER BY nspname,c.relname,attnum
;;

-- query: metabase describe-table: primary key via pgjdbc 42.7 DatabaseMetaData.getPrimaryKeys
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #14); SQL of pgjdbc 42.7 PgDatabaseMetaData.java (pgjdbc/pgjdbc)
-- reads: TABLE_CAT, TABLE_SCHEM, TABLE_NAME, COLUMN_NAME, KEY_SEQ, PK_NAME
-- params: {schema}, {table}
SELECT        result.TABLE_CAT AS "TABLE_CAT",        result.TABLE_SCHEM AS "TABLE_SCHEM",        result.TABLE_NAME AS "TABLE_NAME",        result.COLUMN_NAME AS "COLUMN_NAME",        result.KEY_SEQ AS "KEY_SEQ",        result.PK_NAME AS "PK_NAME"FROM      (SELECT current_database() AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM, i.indnkeyatts as KEY_COUNT FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid) WHERE true  AND n.nspname = $1 AND ct.relname = $2 AND i.indisprimary  ) result where  result.A_ATTNUM = (result.KEYS).x AND result.KEY_SEQ <= KEY_COUNT  ORDER BY result.table_name, result.pk_name, result.key_seq
;;

-- query: metabase describe-fks: foreign keys of the synced schema (describe-fks-sql)
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #15); SQL built in metabase/metabase src/metabase/driver/postgres.clj
-- reads: fk-table-schema, fk-table-name, fk-column-name, pk-table-schema, pk-table-name, pk-column-name
-- params: {schema}
SELECT "fk_ns"."nspname" AS "fk-table-schema", "fk_table"."relname" AS "fk-table-name", "fk_column"."attname" AS "fk-column-name", "pk_ns"."nspname" AS "pk-table-schema", "pk_table"."relname" AS "pk-table-name", "pk_column"."attname" AS "pk-column-name" FROM "pg_constraint" AS "c" INNER JOIN "pg_class" AS "fk_table" ON "c"."conrelid" = "fk_table"."oid" INNER JOIN "pg_namespace" AS "fk_ns" ON "c"."connamespace" = "fk_ns"."oid" INNER JOIN "pg_attribute" AS "fk_column" ON "c"."conrelid" = "fk_column"."attrelid" INNER JOIN "pg_class" AS "pk_table" ON "c"."confrelid" = "pk_table"."oid" INNER JOIN "pg_namespace" AS "pk_ns" ON "pk_table"."relnamespace" = "pk_ns"."oid" INNER JOIN "pg_attribute" AS "pk_column" ON "c"."confrelid" = "pk_column"."attrelid" WHERE fk_ns.nspname !~ '^information_schema|catalog_history|pg_' AND ("c"."contype" = 'f'::char) AND ("fk_column"."attnum" = ANY(c.conkey)) AND ("pk_column"."attnum" = ANY(c.confkey)) AND ("fk_ns"."nspname" IN ($1)) ORDER BY "fk-table-schema" ASC, "fk-table-name" ASC
;;

-- query: metabase fingerprint: sample of the text columns of {table}
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #16); SQL built in metabase/metabase src/metabase/driver/postgres.clj — written for {table}'s text column name
-- reads: substring4476
-- Metabase
SELECT SUBSTRING("{schema}"."{table}"."name", 1, 1234) AS "substring4476" FROM "{schema}"."{table}" LIMIT 10000
;;

-- query: metabase fingerprint: sample of the other columns of {table}
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #17); SQL built in metabase/metabase src/metabase/driver/postgres.clj — written for {table}'s columns id, amount, created
-- reads: id, amount, created
-- Metabase
SELECT "{schema}"."{table}"."id" AS "id", "{schema}"."{table}"."amount" AS "amount", "{schema}"."{table}"."created" AS "created" FROM "{schema}"."{table}" LIMIT 10000
;;

-- query: metabase fingerprint: ResultSetMetaData column origins of that sample
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #18); SQL of pgjdbc 42.7 PgResultSetMetaData.java — attnums 1, 2, 4 of {table}
-- reads: oid, attnum, attname, relname, nspname, ?column?, ?column?
SELECT c.oid, a.attnum, a.attname, c.relname, n.nspname, a.attnotnull OR (t.typtype = 'd' AND t.typnotnull), a.attidentity != '' OR pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE '%nextval(%' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON (c.relnamespace = n.oid) JOIN pg_catalog.pg_attribute a ON (c.oid = a.attrelid) JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid) LEFT JOIN pg_catalog.pg_attrdef d ON (d.adrelid = a.attrelid AND d.adnum = a.attnum) JOIN (SELECT '{schema}.{table}'::regclass::oid AS oid , 1 AS attnum UNION ALL SELECT '{schema}.{table}'::regclass::oid, 2 UNION ALL SELECT '{schema}.{table}'::regclass::oid, 4) vals ON (c.oid = vals.oid AND a.attnum = vals.attnum) where c.oid in ('{schema}.{table}'::regclass::oid)
;;

-- query: metabase question: count rows of {table} (MBQL)
-- source: public wire capture 'Captured from Metabase v0.62.1.5 syncing a real Postgres 16' (statement #20); SQL built in metabase/metabase src/metabase/driver/postgres.clj — written for {table}
-- reads: count
-- Metabase:: userID: 1 queryType: MBQL queryHash: a54de39466cbf3e82ff09c5a9a2bccf1f922bf9fd59b2717c1ad5e09a1c0bfbc
SELECT COUNT(*) AS "count" FROM "{schema}"."{table}"
;;
