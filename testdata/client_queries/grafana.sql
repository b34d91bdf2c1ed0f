-- Grafana PostgreSQL data source: Save & test (health check), the configuration editor's
-- auto-detection, and the query builder / SQL completion lookups of schemas, tables and
-- columns (grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/
-- postgresMetaQuery.ts, which builds them as strings; datafusion-postgres keeps a recording).
-- The builder sends them through Grafana's backend, which executes them as given.
-- The health check is a driver ping: ';' with lib/pq, '-- ping' with pgx (both answered
-- by PostgreSQL with an EmptyQueryResponse, no columns).
-- Note: the '-- ping' block's SQL is a comment line; block parsers must take every line
-- after the header fields as SQL.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: grafana Save & test (health check) via lib/pq: db.Ping()
-- source: lib/pq conn_go18.go (*conn).Ping, used by grafana/grafana pkg/tsdb/grafana-postgresql-datasource (sqleng CheckHealth)
-- reads:
;
;;

-- query: grafana Save & test (health check) via pgx (Grafana 12 postgresDSUsePGX): pool.Ping()
-- source: jackc/pgx pgconn/pgconn.go (*PgConn).Ping, used by grafana/grafana pkg/tsdb/grafana-postgresql-datasource
-- reads:
-- ping
;;

-- query: grafana config editor: auto-detect server version
-- source: grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (getVersion)
-- reads: version
SELECT current_setting('server_version_num')::int/100 as version
;;

-- query: grafana config editor: auto-detect TimescaleDB
-- source: grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (getTimescaleDBVersion)
-- reads: extversion
SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'
;;

-- query: grafana query builder: schema list
-- source: grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (showSchemas)
-- reads: name
SELECT schema_name AS "name"
    FROM information_schema.schemata
    WHERE schema_name NOT IN ('information_schema',
                              'pg_catalog',
                              'pg_toast',
                              '_timescaledb_cache',
                              '_timescaledb_catalog',
                              '_timescaledb_internal',
                              '_timescaledb_config',
                              'timescaledb_information',
                              'timescaledb_experimental')
    ORDER BY schema_name
;;

-- query: grafana query builder / completion: table list (fetchTables)
-- source: grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (showTables()); datafusion-contrib/datafusion-postgres datafusion-postgres/tests/grafana.rs (recorded text of the same queries)
-- reads: table
SELECT
    CASE WHEN
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      THEN quote_ident(table_name)
      ELSE quote_ident(table_schema) || '.' || quote_ident(table_name)
    END AS "table"
    FROM information_schema.tables
    WHERE quote_ident(table_schema) NOT IN ('information_schema',
                             'pg_catalog',
                             '_timescaledb_cache',
                             '_timescaledb_catalog',
                             '_timescaledb_internal',
                             '_timescaledb_config',
                             'timescaledb_information',
                             'timescaledb_experimental')
    ORDER BY CASE WHEN
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          ) THEN 0 ELSE 1 END, 1
;;

-- query: grafana query builder: tables of schema {schema}
-- source: grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (showTables(schema))
-- reads: table
SELECT quote_ident(table_name) AS "table"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = '{schema}'
      ORDER BY 1
;;

-- query: grafana query builder / completion: columns of {schema}.{table} (fetchFields)
-- source: grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (getSchema); datafusion-contrib/datafusion-postgres datafusion-postgres/tests/grafana.rs (recorded text of the same queries)
-- reads: column, type
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('{schema}.{table}'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('{schema}.{table}'))[1]
          AND quote_ident(table_name) = (parse_ident('{schema}.{table}'))[2]
        ELSE quote_ident(table_name) = '{schema}.{table}'
          AND
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
;;

-- query: grafana query builder / completion: columns of {table} on the search_path (fetchFields)
-- source: grafana/grafana public/app/plugins/datasource/grafana-postgresql-datasource/postgresMetaQuery.ts (getSchema)
-- reads: column, type
SELECT quote_ident(column_name) AS "column", data_type AS "type"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('{table}'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('{table}'))[1]
          AND quote_ident(table_name) = (parse_ident('{table}'))[2]
        ELSE quote_ident(table_name) = '{table}'
          AND
          quote_ident(table_schema) IN (
          SELECT
            CASE WHEN trim(s[i]) = '"$user"' THEN user ELSE trim(s[i]) END
          FROM
            generate_series(
              array_lower(string_to_array(current_setting('search_path'),','),1),
              array_upper(string_to_array(current_setting('search_path'),','),1)
            ) as i,
            string_to_array(current_setting('search_path'),',') s
          )
      END
;;

-- query: grafana query builder: default query after picking {table} and column amount
-- source: grafana/grafana packages/grafana-sql (toRawSql: SELECT <columns> FROM <table> LIMIT 50); written for {schema}.{table}
-- reads: amount
SELECT amount FROM {schema}.{table} LIMIT 50
;;
