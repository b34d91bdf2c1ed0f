-- Apache Superset's introspection of a PostgreSQL database goes through SQLAlchemy's
-- PostgreSQL dialect (Inspector: has_table, get_schema_names, get_table_names,
-- get_foreign_table_names, get_view_names, get_columns, get_pk_constraint, get_foreign_keys,
-- get_indexes, get_unique_constraints, get_check_constraints, get_table_comment) plus a
-- few queries of its own PostgresEngineSpec. Superset pins SQLAlchemy 1.4, so those blocks
-- come first; the same Inspector calls under SQLAlchemy 2.0 (which builds different SQL)
-- follow, labelled 'SQLAlchemy 2.0'.
-- Recorded on the wire (record_proxy.py) with psycopg2 against PostgreSQL 15.20; psycopg2
-- interpolates parameters client-side, so the SQL is exactly the text sent.
-- The table OID that the dialect takes from a previous answer and writes as a bare number
-- is written here as '{schema}.{table}'::regclass::oid.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: superset test connection: dialect.do_ping
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: ?column?
SELECT 1
;;

-- query: superset get_catalog_names (PostgresEngineSpec)
-- source: apache/superset superset/db_engine_specs/postgres.py (PostgresEngineSpec), via SQLAlchemy 1.4.54, captured on the wire
-- reads: datname
SELECT datname FROM pg_database
WHERE datistemplate = false;
;;

-- query: superset prequery: set search_path (PostgresEngineSpec.get_prequeries)
-- source: apache/superset superset/db_engine_specs/postgres.py (PostgresEngineSpec), via SQLAlchemy 1.4.54, captured on the wire
-- reads:
set search_path = "{schema}"
;;

-- query: superset get_cancel_query_id
-- source: apache/superset superset/db_engine_specs/postgres.py (PostgresEngineSpec), via SQLAlchemy 1.4.54, captured on the wire
-- reads: pg_backend_pid
SELECT pg_backend_pid()
;;

-- query: superset (SQLAlchemy 1.4) first connect: hstore OID lookup (psycopg2 dialect)
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: oid, typarray
SELECT t.oid, typarray
FROM pg_type t JOIN pg_namespace ns
    ON typnamespace = ns.oid
WHERE typname = 'hstore';
;;

-- query: superset (SQLAlchemy 1.4) first connect: server version
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: version
select pg_catalog.version()
;;

-- query: superset (SQLAlchemy 1.4) first connect: default schema
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: current_schema
select current_schema()
;;

-- query: superset (SQLAlchemy 1.4) first connect: default isolation level
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: transaction_isolation
show transaction isolation level
;;

-- query: superset (SQLAlchemy 1.4) first connect: standard_conforming_strings
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: standard_conforming_strings
show standard_conforming_strings
;;

-- query: superset (SQLAlchemy 1.4) has_table
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: relname
select relname from pg_class c join pg_namespace n on n.oid=c.relnamespace where n.nspname='{schema}' and relname='{table}'
;;

-- query: superset (SQLAlchemy 1.4) get_schema_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: nspname
SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg_%' ORDER BY nspname
;;

-- query: superset (SQLAlchemy 1.4) get_table_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: relname
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' AND c.relkind in ('r', 'p')
;;

-- query: superset (SQLAlchemy 1.4) get_foreign_table_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: relname
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' AND c.relkind = 'f'
;;

-- query: superset (SQLAlchemy 1.4) get_view_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: relname
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' AND c.relkind IN ('v', 'm')
;;

-- query: superset (SQLAlchemy 1.4) get_materialized_view_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: relname
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}' AND c.relkind IN ('m')
;;

-- query: superset (SQLAlchemy 1.4) get_columns: table OID lookup
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: oid
SELECT c.oid
FROM pg_catalog.pg_class c
LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE (n.nspname = '{schema}')
AND c.relname = '{table}' AND c.relkind in
('r', 'v', 'm', 'f', 'p')
;;

-- query: superset (SQLAlchemy 1.4) get_columns: columns
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: attname, format_type, default, attnotnull, table_oid, comment, generated, identity_options
SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (
    SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid)
    FROM pg_catalog.pg_attrdef d
    WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum
    AND a.atthasdef
  ) AS DEFAULT,
  a.attnotnull,
  a.attrelid as table_oid,
  pgd.description as comment,
  a.attgenerated as generated,
                  (SELECT json_build_object(
        'always', a.attidentity = 'a',
        'start', s.seqstart,
        'increment', s.seqincrement,
        'minvalue', s.seqmin,
        'maxvalue', s.seqmax,
        'cache', s.seqcache,
        'cycle', s.seqcycle)
    FROM pg_catalog.pg_sequence s
    JOIN pg_catalog.pg_class c on s.seqrelid = c."oid"
    WHERE c.relkind = 'S'
    AND a.attidentity != ''
    AND s.seqrelid = pg_catalog.pg_get_serial_sequence(
        a.attrelid::regclass::text, a.attname
    )::regclass::oid
    ) as identity_options
FROM pg_catalog.pg_attribute a
LEFT JOIN pg_catalog.pg_description pgd ON (
    pgd.objoid = a.attrelid AND pgd.objsubid = a.attnum)
WHERE a.attrelid = '{schema}.{table}'::regclass::oid
AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
;;

-- query: superset (SQLAlchemy 1.4) get_columns: domains
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: name, attype, nullable, default, visible, schema
SELECT t.typname as "name",
   pg_catalog.format_type(t.typbasetype, t.typtypmod) as "attype",
   not t.typnotnull as "nullable",
   t.typdefault as "default",
   pg_catalog.pg_type_is_visible(t.oid) as "visible",
   n.nspname as "schema"
FROM pg_catalog.pg_type t
   LEFT JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE t.typtype = 'd'
;;

-- query: superset (SQLAlchemy 1.4) get_columns: enum types
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: name, visible, schema, label
    SELECT t.typname as "name",
       -- no enum defaults in 8.4 at least
       -- t.typdefault as "default",
       pg_catalog.pg_type_is_visible(t.oid) as "visible",
       n.nspname as "schema",
       e.enumlabel as "label"
    FROM pg_catalog.pg_type t
         LEFT JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
         LEFT JOIN pg_catalog.pg_enum e ON t.oid = e.enumtypid
    WHERE t.typtype = 'e'
ORDER BY "schema", "name", e.oid
;;

-- query: superset (SQLAlchemy 1.4) get_pk_constraint: key columns
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: attname
SELECT a.attname
FROM pg_attribute a JOIN (
    SELECT unnest(ix.indkey) attnum,
           generate_subscripts(ix.indkey, 1) ord
    FROM pg_index ix
    WHERE ix.indrelid = '{schema}.{table}'::regclass::oid AND ix.indisprimary
    ) k ON a.attnum=k.attnum
WHERE a.attrelid = '{schema}.{table}'::regclass::oid
ORDER BY k.ord
;;

-- query: superset (SQLAlchemy 1.4) get_pk_constraint: constraint name
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: conname
SELECT conname
   FROM  pg_catalog.pg_constraint r
   WHERE r.conrelid = '{schema}.{table}'::regclass::oid AND r.contype = 'p'
   ORDER BY 1
;;

-- query: superset (SQLAlchemy 1.4) get_foreign_keys
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: conname, condef, conschema
SELECT r.conname,
      pg_catalog.pg_get_constraintdef(r.oid, true) as condef,
      n.nspname as conschema
FROM  pg_catalog.pg_constraint r,
      pg_namespace n,
      pg_class c

WHERE r.conrelid = '{schema}.{table}'::regclass::oid AND
      r.contype = 'f' AND
      c.oid = confrelid AND
      n.oid = c.relnamespace
ORDER BY 1
;;

-- query: superset (SQLAlchemy 1.4) get_indexes
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: relname, indisunique, indexprs, attname, attnum, conrelid, indkey, indoption, reloptions, amname, pg_get_expr, indnkeyatts
SELECT
    i.relname as relname,
    ix.indisunique, ix.indexprs,
    a.attname, a.attnum, c.conrelid, ix.indkey::varchar,
    ix.indoption::varchar, i.reloptions, am.amname,
    pg_get_expr(ix.indpred, ix.indrelid),
    ix.indnkeyatts as indnkeyatts
FROM
    pg_class t
          join pg_index ix on t.oid = ix.indrelid
          join pg_class i on i.oid = ix.indexrelid
          left outer join
              pg_attribute a
              on t.oid = a.attrelid and a.attnum = ANY(ix.indkey)
          left outer join
              pg_constraint c
              on (ix.indrelid = c.conrelid and
                  ix.indexrelid = c.conindid and
                  c.contype in ('p', 'u', 'x'))
          left outer join
              pg_am am
              on i.relam = am.oid
WHERE
    t.relkind IN ('r', 'v', 'f', 'm', 'p')
    and t.oid = '{schema}.{table}'::regclass::oid
    and ix.indisprimary = 'f'
ORDER BY
    t.relname,
    i.relname
;;

-- query: superset (SQLAlchemy 1.4) get_unique_constraints
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: name, key, col_num, col_name
SELECT
    cons.conname as name,
    cons.conkey as key,
    a.attnum as col_num,
    a.attname as col_name
FROM
    pg_catalog.pg_constraint cons
    join pg_attribute a
      on cons.conrelid = a.attrelid AND
        a.attnum = ANY(cons.conkey)
WHERE
    cons.conrelid = '{schema}.{table}'::regclass::oid AND
    cons.contype = 'u'
;;

-- query: superset (SQLAlchemy 1.4) get_check_constraints
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: name, src
SELECT
    cons.conname as name,
    pg_get_constraintdef(cons.oid) as src
FROM
    pg_catalog.pg_constraint cons
WHERE
    cons.conrelid = '{schema}.{table}'::regclass::oid AND
    cons.contype = 'c'
;;

-- query: superset (SQLAlchemy 1.4) get_table_comment
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 1.4.54, psycopg2), captured on the wire
-- reads: table_comment
SELECT
    pgd.description as table_comment
FROM
    pg_catalog.pg_description pgd
WHERE
    pgd.objsubid = 0 AND
    pgd.objoid = '{schema}.{table}'::regclass::oid
;;

-- query: SQLAlchemy 2.0 has_schema
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: nspname
SELECT pg_catalog.pg_namespace.nspname
FROM pg_catalog.pg_namespace
WHERE pg_catalog.pg_namespace.nspname = '{schema}'
;;

-- query: SQLAlchemy 2.0 has_table
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname
SELECT pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relname = '{table}' AND pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_namespace.nspname = '{schema}'
;;

-- query: SQLAlchemy 2.0 get_schema_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: nspname
SELECT pg_catalog.pg_namespace.nspname
FROM pg_catalog.pg_namespace
WHERE (pg_catalog.pg_namespace.nspname NOT LIKE 'pg/_' || '%' ESCAPE '/') ORDER BY pg_catalog.pg_namespace.nspname
;;

-- query: SQLAlchemy 2.0 get_table_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname
SELECT pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p']) AND pg_catalog.pg_class.relpersistence != 't' AND pg_catalog.pg_namespace.nspname = '{schema}'
;;

-- query: SQLAlchemy 2.0 get_foreign_table_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname
SELECT pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['f']) AND pg_catalog.pg_namespace.nspname = '{schema}'
;;

-- query: SQLAlchemy 2.0 get_view_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname
SELECT pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['v']) AND pg_catalog.pg_class.relpersistence != 't' AND pg_catalog.pg_namespace.nspname = '{schema}'
;;

-- query: SQLAlchemy 2.0 get_materialized_view_names
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname
SELECT pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['m']) AND pg_catalog.pg_class.relpersistence != 't' AND pg_catalog.pg_namespace.nspname = '{schema}'
;;

-- query: SQLAlchemy 2.0 get_columns: columns
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: name, format_type, default, not_null, table_name, comment, generated, identity_options, collation
SELECT pg_catalog.pg_attribute.attname AS name, pg_catalog.format_type(pg_catalog.pg_attribute.atttypid, pg_catalog.pg_attribute.atttypmod) AS format_type, (SELECT pg_catalog.pg_get_expr(pg_catalog.pg_attrdef.adbin, pg_catalog.pg_attrdef.adrelid) AS pg_get_expr_1
FROM pg_catalog.pg_attrdef
WHERE pg_catalog.pg_attrdef.adrelid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attrdef.adnum = pg_catalog.pg_attribute.attnum AND pg_catalog.pg_attribute.atthasdef) AS "default", pg_catalog.pg_attribute.attnotnull AS not_null, pg_catalog.pg_class.relname AS table_name, pg_catalog.pg_description.description AS comment, pg_catalog.pg_attribute.attgenerated AS generated, (SELECT json_build_object('always', pg_catalog.pg_attribute.attidentity = 'a', 'start', pg_catalog.pg_sequence.seqstart, 'increment', pg_catalog.pg_sequence.seqincrement, 'minvalue', pg_catalog.pg_sequence.seqmin, 'maxvalue', pg_catalog.pg_sequence.seqmax, 'cache', pg_catalog.pg_sequence.seqcache, 'cycle', pg_catalog.pg_sequence.seqcycle) AS json_build_object_1
FROM pg_catalog.pg_sequence
WHERE pg_catalog.pg_attribute.attidentity != '' AND pg_catalog.pg_sequence.seqrelid = CAST(CAST(pg_catalog.pg_get_serial_sequence(CAST(CAST(pg_catalog.pg_attribute.attrelid AS REGCLASS) AS TEXT), pg_catalog.pg_attribute.attname) AS REGCLASS) AS OID)) AS identity_options, CASE WHEN (pg_catalog.pg_attribute.attcollation != 0 AND (SELECT pg_catalog.pg_type.typcollation
FROM pg_catalog.pg_type
WHERE pg_catalog.pg_type.oid = pg_catalog.pg_attribute.atttypid) != pg_catalog.pg_attribute.attcollation) THEN (SELECT pg_catalog.pg_collation.collname
FROM pg_catalog.pg_collation
WHERE pg_catalog.pg_collation.oid = pg_catalog.pg_attribute.attcollation) ELSE NULL END AS collation
FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_attribute ON pg_catalog.pg_class.oid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_attribute.attnum > 0 AND NOT pg_catalog.pg_attribute.attisdropped LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_attribute.attrelid AND pg_catalog.pg_description.objsubid = pg_catalog.pg_attribute.attnum JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_namespace.nspname = '{schema}' AND pg_catalog.pg_class.relname IN ('{table}') ORDER BY pg_catalog.pg_class.relname, pg_catalog.pg_attribute.attnum
;;

-- query: SQLAlchemy 2.0 get_columns: domains
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: name, attype, nullable, default, visible, schema, condefs, connames, collname
SELECT pg_catalog.pg_type.typname AS name, pg_catalog.format_type(pg_catalog.pg_type.typbasetype, pg_catalog.pg_type.typtypmod) AS attype, NOT pg_catalog.pg_type.typnotnull AS nullable, pg_catalog.pg_type.typdefault AS "default", pg_catalog.pg_type_is_visible(pg_catalog.pg_type.oid) AS visible, pg_catalog.pg_namespace.nspname AS schema, domain_constraints.condefs, domain_constraints.connames, pg_catalog.pg_collation.collname
FROM pg_catalog.pg_type JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_type.typnamespace LEFT OUTER JOIN pg_catalog.pg_collation ON pg_catalog.pg_type.typcollation = pg_catalog.pg_collation.oid LEFT OUTER JOIN (SELECT pg_catalog.pg_constraint.contypid AS contypid, array_agg(pg_catalog.pg_get_constraintdef(pg_catalog.pg_constraint.oid, true)) AS condefs, array_agg(CAST(pg_catalog.pg_constraint.conname AS TEXT)) AS connames
FROM pg_catalog.pg_constraint
WHERE pg_catalog.pg_constraint.contypid != 0 GROUP BY pg_catalog.pg_constraint.contypid) AS domain_constraints ON pg_catalog.pg_type.oid = domain_constraints.contypid
WHERE pg_catalog.pg_type.typtype = 'd' ORDER BY pg_catalog.pg_namespace.nspname, pg_catalog.pg_type.typname
;;

-- query: SQLAlchemy 2.0 get_columns: enum types
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: name, visible, schema, labels
SELECT pg_catalog.pg_type.typname AS name, pg_catalog.pg_type_is_visible(pg_catalog.pg_type.oid) AS visible, pg_catalog.pg_namespace.nspname AS schema, lbl_agg.labels AS labels
FROM pg_catalog.pg_type JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_type.typnamespace LEFT OUTER JOIN (SELECT pg_catalog.pg_enum.enumtypid AS enumtypid, array_agg(CAST(pg_catalog.pg_enum.enumlabel AS TEXT) ORDER BY pg_catalog.pg_enum.enumsortorder) AS labels
FROM pg_catalog.pg_enum GROUP BY pg_catalog.pg_enum.enumtypid) AS lbl_agg ON pg_catalog.pg_type.oid = lbl_agg.enumtypid
WHERE pg_catalog.pg_type.typtype = 'e' ORDER BY pg_catalog.pg_namespace.nspname, pg_catalog.pg_type.typname
;;

-- query: SQLAlchemy 2.0 get_pk_constraint: table OID lookup
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: oid, relname
SELECT pg_catalog.pg_class.oid, pg_catalog.pg_class.relname
FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_namespace.nspname = '{schema}' AND pg_catalog.pg_class.relname IN ('{table}')
;;

-- query: SQLAlchemy 2.0 get_pk_constraint
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: conrelid, cols, conname, description, indnkeyatts, indnullsnotdistinct
SELECT attr.conrelid, array_agg(CAST(attr.attname AS TEXT) ORDER BY attr.ord) AS cols, attr.conname, min(attr.description) AS description, min(attr.indnkeyatts) AS indnkeyatts, bool_and(attr.indnullsnotdistinct) AS indnullsnotdistinct
FROM (SELECT con.conrelid AS conrelid, con.conname AS conname, con.description AS description, con.ord AS ord, con.indnkeyatts AS indnkeyatts, con.indnullsnotdistinct AS indnullsnotdistinct, pg_catalog.pg_attribute.attname AS attname
FROM pg_catalog.pg_attribute JOIN (SELECT pg_catalog.pg_constraint.conrelid AS conrelid, pg_catalog.pg_constraint.conname AS conname, unnest(pg_catalog.pg_index.indkey) AS attnum, generate_subscripts(pg_catalog.pg_index.indkey, 1) AS ord, pg_catalog.pg_index.indnkeyatts AS indnkeyatts, pg_catalog.pg_index.indnullsnotdistinct AS indnullsnotdistinct, pg_catalog.pg_description.description AS description
FROM pg_catalog.pg_constraint JOIN pg_catalog.pg_index ON pg_catalog.pg_constraint.conindid = pg_catalog.pg_index.indexrelid LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_constraint' AS REGCLASS)
WHERE pg_catalog.pg_constraint.contype = 'p' AND pg_catalog.pg_constraint.conrelid IN ('{schema}.{table}'::regclass::oid)) AS con ON pg_catalog.pg_attribute.attnum = con.attnum AND pg_catalog.pg_attribute.attrelid = con.conrelid
WHERE con.conrelid IN ('{schema}.{table}'::regclass::oid)) AS attr GROUP BY attr.conrelid, attr.conname ORDER BY attr.conrelid, attr.conname
;;

-- query: SQLAlchemy 2.0 get_foreign_keys
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname, conname, anon_1, nspname, description
SELECT pg_catalog.pg_class.relname, pg_catalog.pg_constraint.conname, CASE WHEN (pg_catalog.pg_constraint.oid IS NOT NULL) THEN pg_catalog.pg_get_constraintdef(pg_catalog.pg_constraint.oid, true) END AS anon_1, nsp_ref.nspname, pg_catalog.pg_description.description
FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_constraint ON pg_catalog.pg_class.oid = pg_catalog.pg_constraint.conrelid AND pg_catalog.pg_constraint.contype = 'f' LEFT OUTER JOIN pg_catalog.pg_class AS cls_ref ON cls_ref.oid = pg_catalog.pg_constraint.confrelid LEFT OUTER JOIN pg_catalog.pg_namespace AS nsp_ref ON cls_ref.relnamespace = nsp_ref.oid LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_constraint' AS REGCLASS) JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_namespace.nspname = '{schema}' AND pg_catalog.pg_class.relname IN ('{table}') ORDER BY pg_catalog.pg_class.relname, pg_catalog.pg_constraint.conname
;;

-- query: SQLAlchemy 2.0 get_indexes
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: indrelid, relname, indisunique, has_constraint, indoption, reloptions, amname, filter_definition, indnkeyatts, indnullsnotdistinct, elements, elements_is_expr, elements_opclass, elements_opdefault
SELECT pg_catalog.pg_index.indrelid, pg_catalog.pg_class.relname, pg_catalog.pg_index.indisunique, pg_catalog.pg_constraint.conrelid IS NOT NULL AS has_constraint, pg_catalog.pg_index.indoption, pg_catalog.pg_class.reloptions, pg_catalog.pg_am.amname, CASE WHEN (pg_catalog.pg_index.indpred IS NOT NULL) THEN pg_catalog.pg_get_expr(pg_catalog.pg_index.indpred, pg_catalog.pg_index.indrelid) END AS filter_definition, pg_catalog.pg_index.indnkeyatts, pg_catalog.pg_index.indnullsnotdistinct, idx_cols.elements, idx_cols.elements_is_expr, idx_cols.elements_opclass, idx_cols.elements_opdefault
FROM pg_catalog.pg_index JOIN pg_catalog.pg_class ON pg_catalog.pg_index.indexrelid = pg_catalog.pg_class.oid JOIN pg_catalog.pg_am ON pg_catalog.pg_class.relam = pg_catalog.pg_am.oid LEFT OUTER JOIN (SELECT idx_attr.indexrelid AS indexrelid, min(idx_attr.indrelid) AS min_1, array_agg(idx_attr.element ORDER BY idx_attr.ord) AS elements, array_agg(idx_attr.is_expr ORDER BY idx_attr.ord) AS elements_is_expr, array_agg(idx_attr.opcname ORDER BY idx_attr.ord) AS elements_opclass, array_agg(idx_attr.opcdefault ORDER BY idx_attr.ord) AS elements_opdefault
FROM (SELECT idx.indexrelid AS indexrelid, idx.indrelid AS indrelid, idx.ord AS ord, CASE WHEN (idx.attnum = 0) THEN pg_catalog.pg_get_indexdef(idx.indexrelid, idx.ord + 1, true) ELSE CAST(pg_catalog.pg_attribute.attname AS TEXT) END AS element, idx.attnum = 0 AS is_expr, pg_catalog.pg_opclass.opcname AS opcname, pg_catalog.pg_opclass.opcdefault AS opcdefault
FROM (SELECT pg_catalog.pg_index.indexrelid AS indexrelid, pg_catalog.pg_index.indrelid AS indrelid, unnest(pg_catalog.pg_index.indkey) AS attnum, unnest(pg_catalog.pg_index.indclass) AS att_opclass, generate_subscripts(pg_catalog.pg_index.indkey, 1) AS ord
FROM pg_catalog.pg_index
WHERE NOT pg_catalog.pg_index.indisprimary AND pg_catalog.pg_index.indrelid IN ('{schema}.{table}'::regclass::oid)) AS idx LEFT OUTER JOIN pg_catalog.pg_attribute ON pg_catalog.pg_attribute.attnum = idx.attnum AND pg_catalog.pg_attribute.attrelid = idx.indrelid LEFT OUTER JOIN pg_catalog.pg_opclass ON pg_catalog.pg_opclass.oid = idx.att_opclass
WHERE idx.indrelid IN ('{schema}.{table}'::regclass::oid)) AS idx_attr GROUP BY idx_attr.indexrelid) AS idx_cols ON pg_catalog.pg_index.indexrelid = idx_cols.indexrelid LEFT OUTER JOIN pg_catalog.pg_constraint ON pg_catalog.pg_index.indrelid = pg_catalog.pg_constraint.conrelid AND pg_catalog.pg_index.indexrelid = pg_catalog.pg_constraint.conindid AND pg_catalog.pg_constraint.contype = ANY (ARRAY['p', 'u', 'x'])
WHERE pg_catalog.pg_index.indrelid IN ('{schema}.{table}'::regclass::oid) AND NOT pg_catalog.pg_index.indisprimary ORDER BY pg_catalog.pg_index.indrelid, pg_catalog.pg_class.relname
;;

-- query: SQLAlchemy 2.0 get_unique_constraints
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: conrelid, cols, conname, description, indnkeyatts, indnullsnotdistinct
SELECT attr.conrelid, array_agg(CAST(attr.attname AS TEXT) ORDER BY attr.ord) AS cols, attr.conname, min(attr.description) AS description, min(attr.indnkeyatts) AS indnkeyatts, bool_and(attr.indnullsnotdistinct) AS indnullsnotdistinct
FROM (SELECT con.conrelid AS conrelid, con.conname AS conname, con.description AS description, con.ord AS ord, con.indnkeyatts AS indnkeyatts, con.indnullsnotdistinct AS indnullsnotdistinct, pg_catalog.pg_attribute.attname AS attname
FROM pg_catalog.pg_attribute JOIN (SELECT pg_catalog.pg_constraint.conrelid AS conrelid, pg_catalog.pg_constraint.conname AS conname, unnest(pg_catalog.pg_index.indkey) AS attnum, generate_subscripts(pg_catalog.pg_index.indkey, 1) AS ord, pg_catalog.pg_index.indnkeyatts AS indnkeyatts, pg_catalog.pg_index.indnullsnotdistinct AS indnullsnotdistinct, pg_catalog.pg_description.description AS description
FROM pg_catalog.pg_constraint JOIN pg_catalog.pg_index ON pg_catalog.pg_constraint.conindid = pg_catalog.pg_index.indexrelid LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_constraint' AS REGCLASS)
WHERE pg_catalog.pg_constraint.contype = 'u' AND pg_catalog.pg_constraint.conrelid IN ('{schema}.{table}'::regclass::oid)) AS con ON pg_catalog.pg_attribute.attnum = con.attnum AND pg_catalog.pg_attribute.attrelid = con.conrelid
WHERE con.conrelid IN ('{schema}.{table}'::regclass::oid)) AS attr GROUP BY attr.conrelid, attr.conname ORDER BY attr.conrelid, attr.conname
;;

-- query: SQLAlchemy 2.0 get_check_constraints
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname, conname, anon_1, description
SELECT pg_catalog.pg_class.relname, pg_catalog.pg_constraint.conname, CASE WHEN (pg_catalog.pg_constraint.oid IS NOT NULL) THEN pg_catalog.pg_get_constraintdef(pg_catalog.pg_constraint.oid, true) END AS anon_1, pg_catalog.pg_description.description
FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_constraint ON pg_catalog.pg_class.oid = pg_catalog.pg_constraint.conrelid AND pg_catalog.pg_constraint.contype = 'c' LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_description.objoid = pg_catalog.pg_constraint.oid AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_constraint' AS REGCLASS) JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_namespace.nspname = '{schema}' AND pg_catalog.pg_class.relname IN ('{table}') ORDER BY pg_catalog.pg_class.relname, pg_catalog.pg_constraint.conname
;;

-- query: SQLAlchemy 2.0 get_table_comment
-- source: sqlalchemy/sqlalchemy lib/sqlalchemy/dialects/postgresql/base.py (SQLAlchemy 2.0.58, psycopg2), captured on the wire
-- reads: relname, description
SELECT pg_catalog.pg_class.relname, pg_catalog.pg_description.description
FROM pg_catalog.pg_class LEFT OUTER JOIN pg_catalog.pg_description ON pg_catalog.pg_class.oid = pg_catalog.pg_description.objoid AND pg_catalog.pg_description.objsubid = 0 AND pg_catalog.pg_description.classoid = CAST('pg_catalog.pg_class' AS REGCLASS) JOIN pg_catalog.pg_namespace ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace
WHERE pg_catalog.pg_class.relkind = ANY (ARRAY['r', 'p', 'f', 'v', 'm']) AND pg_catalog.pg_namespace.nspname = '{schema}' AND pg_catalog.pg_class.relname IN ('{table}')
;;
