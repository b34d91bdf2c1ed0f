-- Tableau (Desktop / Server) PostgreSQL connector. Tableau is closed source and no public
-- recording of the exact SQL it sends to PostgreSQL was found. What is public: the connector
-- runs on the PostgreSQL JDBC driver (tableau/connector-plugin-sdk samples/plugins/
-- postgres_jdbc), and Tableau's JDBC metadata enumeration uses DatabaseMetaData getCatalogs,
-- getSchemas, getTables and getColumns (connector-plugin-sdk docs/metadata-enumeration.md),
-- falling back to 'SELECT * ... WHERE 1=0' / 'LIMIT 0' queries under some capabilities.
-- So this file holds the pgjdbc SQL of those calls (pgjdbc 42.5.5, recorded on the wire,
-- same text as in pgjdbc.sql) and the two documented query shapes written for {table}.
-- Tableau's own connection-time probes (temp-table tests etc.) are NOT included.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: tableau connect: SET extra_float_digits = 3
-- source: pgjdbc/pgjdbc ConnectionFactoryImpl.java (pgjdbc 42.5.5, captured on the wire); Tableau's PostgreSQL connector runs on the PostgreSQL JDBC driver (tableau/connector-plugin-sdk samples/plugins/postgres_jdbc)
-- reads:
SET extra_float_digits = 3
;;

-- query: tableau connect: SET application_name = 'PostgreSQL JDBC Driver'
-- source: pgjdbc/pgjdbc ConnectionFactoryImpl.java (pgjdbc 42.5.5, captured on the wire); Tableau's PostgreSQL connector runs on the PostgreSQL JDBC driver (tableau/connector-plugin-sdk samples/plugins/postgres_jdbc)
-- reads:
SET application_name = 'PostgreSQL JDBC Driver'
;;

-- query: tableau connect dialog: schema list (DatabaseMetaData.getSchemas)
-- source: pgjdbc/pgjdbc PgDatabaseMetaData.java (pgjdbc 42.5.5, captured on the wire); Tableau's JDBC metadata enumeration calls DatabaseMetaData getCatalogs, getSchemas, getTables and getColumns (tableau/connector-plugin-sdk docs/metadata-enumeration.md, PR #781)
-- reads: table_schem, table_catalog
SELECT nspname AS TABLE_SCHEM, NULL AS TABLE_CATALOG FROM pg_catalog.pg_namespace  WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_'  OR nspname = (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_'  OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_'))  ORDER BY TABLE_SCHEM
;;

-- query: tableau table search (DatabaseMetaData.getTables, all types)
-- source: pgjdbc/pgjdbc PgDatabaseMetaData.java (pgjdbc 42.5.5, captured on the wire); Tableau's JDBC metadata enumeration calls DatabaseMetaData getCatalogs, getSchemas, getTables and getColumns (tableau/connector-plugin-sdk docs/metadata-enumeration.md, PR #781)
-- reads: table_cat, table_schem, table_name, table_type, remarks, type_cat, type_schem, type_name, self_referencing_col_name, ref_generation
SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN 'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN 'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN 'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then 'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN 'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = 'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND n.nspname LIKE '{schema}' AND c.relname LIKE '%' ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME
;;

-- query: tableau schema picked: table list (DatabaseMetaData.getTables)
-- source: pgjdbc/pgjdbc PgDatabaseMetaData.java (pgjdbc 42.5.5, captured on the wire); Tableau's JDBC metadata enumeration calls DatabaseMetaData getCatalogs, getSchemas, getTables and getColumns (tableau/connector-plugin-sdk docs/metadata-enumeration.md, PR #781)
-- reads: table_cat, table_schem, table_name, table_type, remarks, type_cat, type_schem, type_name, self_referencing_col_name, ref_generation
SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN 'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN 'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN 'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'P' then 'PARTITIONED INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN 'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = 'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND n.nspname LIKE '{schema}' AND c.relname LIKE '%' AND (false  OR ( c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' )  OR ( c.relkind = 'p' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' )  OR ( c.relkind = 'v' AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema' )  OR ( c.relkind = 'f' )  OR ( c.relkind = 'm' ) )  ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME
;;

-- query: tableau table dragged to the canvas: columns (DatabaseMetaData.getColumns)
-- source: pgjdbc/pgjdbc PgDatabaseMetaData.java (pgjdbc 42.5.5, captured on the wire); Tableau's JDBC metadata enumeration calls DatabaseMetaData getCatalogs, getSchemas, getTables and getColumns (tableau/connector-plugin-sdk docs/metadata-enumeration.md, PR #781)
-- reads: nspname, relname, attname, atttypid, attnotnull, atttypmod, attlen, typtypmod, attnum, attidentity, attgenerated, adsrc, description, typbasetype, typtype
SELECT * FROM (SELECT n.nspname,c.relname,a.attname,a.atttypid,a.attnotnull OR (t.typtype = 'd' AND t.typnotnull) AS attnotnull,a.atttypmod,a.attlen,t.typtypmod,row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum) AS attnum, nullif(a.attidentity, '') as attidentity,nullif(a.attgenerated, '') as attgenerated,pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS adsrc,dsc.description,t.typbasetype,t.typtype  FROM pg_catalog.pg_namespace n  JOIN pg_catalog.pg_class c ON (c.relnamespace = n.oid)  JOIN pg_catalog.pg_attribute a ON (a.attrelid=c.oid)  JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid)  LEFT JOIN pg_catalog.pg_attrdef def ON (a.attrelid=def.adrelid AND a.attnum = def.adnum)  LEFT JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)  LEFT JOIN pg_catalog.pg_class dc ON (dc.oid=dsc.classoid AND dc.relname='pg_class')  LEFT JOIN pg_catalog.pg_namespace dn ON (dc.relnamespace=dn.oid AND dn.nspname='pg_catalog')  WHERE c.relkind in ('r','p','v','f','m') and a.attnum > 0 AND NOT a.attisdropped  AND n.nspname LIKE '{schema}' AND c.relname LIKE '{table}') c WHERE true  AND attname LIKE '%' ORDER BY nspname,c.relname,attnum
;;

-- query: tableau result metadata of a data query (pgjdbc ResultSetMetaData column origins)
-- source: pgjdbc/pgjdbc PgResultSetMetaData.java (pgjdbc 42.5.5, captured on the wire)
-- reads: oid, attnum, attname, relname, nspname, ?column?, ?column?
SELECT c.oid, a.attnum, a.attname, c.relname, n.nspname, a.attnotnull OR (t.typtype = 'd' AND t.typnotnull), a.attidentity != '' OR pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE '%nextval(%' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON (c.relnamespace = n.oid) JOIN pg_catalog.pg_attribute a ON (c.oid = a.attrelid) JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid) LEFT JOIN pg_catalog.pg_attrdef d ON (d.adrelid = a.attrelid AND d.adnum = a.attnum) JOIN (SELECT '{schema}.{table}'::regclass::oid AS oid , 1 AS attnum UNION ALL SELECT '{schema}.{table}'::regclass::oid, 2 UNION ALL SELECT '{schema}.{table}'::regclass::oid, 3 UNION ALL SELECT '{schema}.{table}'::regclass::oid, 4) vals ON (c.oid = vals.oid AND a.attnum = vals.attnum)
;;

-- query: tableau table metadata by a where-false query (CAP_QUERY_WHERE_FALSE_METADATA, set in the postgres_jdbc sample)
-- source: tableau/connector-plugin-sdk docs/metadata-enumeration.md (PR #688: 'SELECT * FROM default.testv1_batters WHERE 1=0', '... LIMIT 0'); written for {schema}.{table}
-- reads: id, amount, name, created
SELECT * FROM {schema}.{table} WHERE 1=0
;;

-- query: tableau table metadata by a LIMIT 0 query (CAP_QUERY_TOP_0_METADATA)
-- source: tableau/connector-plugin-sdk docs/metadata-enumeration.md (PR #688: 'SELECT * FROM default.testv1_batters WHERE 1=0', '... LIMIT 0'); written for {schema}.{table}
-- reads: id, amount, name, created
SELECT * FROM {schema}.{table} LIMIT 0
;;
