-- pgAdmin 4: connect, dashboard, browser tree (databases, roles, tablespaces, schemas,
-- tables, columns, constraints, indexes, triggers, rules, policies, partitions) and
-- View/Edit Data.
-- pgAdmin renders Jinja templates (pgadmin-org/pgadmin4 web/pgadmin/browser/server_groups/
-- servers/...templates) per server version; the rendered text as pgAdmin sent it comes from
-- a pgAdmin session transcribed into lhgravendeel/memgres' tests (the 'DbTool*' tests) and
-- from datafusion-postgres' pgAdmin test; View/Edit Data is rendered here from the
-- sqleditor templates.
-- pgAdmin writes the OIDs of the objects it browses into the SQL (from the tree node);
-- those are written as '{schema}'::regnamespace and '{schema}.{table}'::regclass.
-- Left out: queries of the same session that need PostgreSQL 17 (pg_collation.colllocale,
-- pg_database.datlocale), which pgAdmin only sends to a 17+ server.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: pgadmin connect: DateStyle
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (set_datestyle_iso; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads:
SET DateStyle=ISO
;;

-- query: pgadmin connect: client_min_messages
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (set_client_min_messages; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads:
SET client_min_messages=notice
;;

-- query: pgadmin connect: bytea_output
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (set_config_from_pg_show_all_settings; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: set_config
SELECT set_config('bytea_output','hex',false) FROM pg_show_all_settings() WHERE name = 'bytea_output'
;;

-- query: pgadmin connect: client encoding
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (set_client_encoding; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads:
SET client_encoding='utf-8'
;;

-- query: pgadmin connect: server version
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (select_version; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: version
SELECT version()
;;

-- query: pgadmin connect: the connected database
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (pg_database_current_database; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: did, datname, datallowconn, serverencoding, cancreate, datistemplate
SELECT
    db.oid as did, db.datname, db.datallowconn,
    pg_encoding_to_char(db.encoding) AS serverencoding,
    has_database_privilege(db.oid, 'CREATE') as cancreate,
    datistemplate
FROM
    pg_catalog.pg_database db
WHERE db.datname = current_database()
;;

-- query: pgadmin connect: GSSAPI status
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (pg_stat_gssapi_query; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: gss_authenticated, encrypted
SELECT
    gss_authenticated, encrypted
FROM
    pg_catalog.pg_stat_gssapi
WHERE pid = pg_backend_pid()
;;

-- query: pgadmin connect: replication type (bdr / slots)
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolConnectionTest.java (replication_detection_query; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: type
SELECT CASE
    WHEN (SELECT count(extname) FROM pg_catalog.pg_extension WHERE extname='bdr') > 0
    THEN 'pgd'
    WHEN (SELECT COUNT(*) FROM pg_replication_slots) > 0
    THEN 'log'
    ELSE NULL
END as type
;;

-- query: pgadmin connect: current role and its rights
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (pg_roles_with_recursive_cte; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: id, name, is_superuser, can_create_role, can_create_db, can_signal_backend
SELECT
    roles.oid as id, roles.rolname as name,
    roles.rolsuper as is_superuser,
    CASE WHEN roles.rolsuper THEN true ELSE roles.rolcreaterole END as
    can_create_role,
    CASE WHEN roles.rolsuper THEN true
    ELSE roles.rolcreatedb END as can_create_db,
    CASE WHEN 'pg_signal_backend'=ANY(ARRAY(WITH RECURSIVE cte AS (
    SELECT pg_roles.oid,pg_roles.rolname FROM pg_roles
        WHERE pg_roles.oid = roles.oid
    UNION ALL
    SELECT m.roleid,pgr.rolname FROM cte cte_1
        JOIN pg_auth_members m ON m.member = cte_1.oid
        JOIN pg_roles pgr ON pgr.oid = m.roleid)
    SELECT rolname  FROM cte)) THEN True
    ELSE False END as can_signal_backend
FROM
    pg_catalog.pg_roles as roles
WHERE
    rolname = current_user
;;

-- query: pgadmin dashboard: session statistics
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (dashboard_stats_query; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: chart_name, chart_data
SELECT 'session_stats' AS chart_name, pg_catalog.row_to_json(t) AS chart_data
FROM (SELECT
   (SELECT count(*) FROM pg_catalog.pg_stat_activity) AS "Total",
   (SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE state = 'active')  AS "Active",
   (SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE state = 'idle')  AS "Idle"
) t
UNION ALL
SELECT 'tps_stats' AS chart_name, pg_catalog.row_to_json(t) AS chart_data
FROM (SELECT
   (SELECT sum(xact_commit) + sum(xact_rollback) FROM pg_catalog.pg_stat_database) AS "Transactions",
   (SELECT sum(xact_commit) FROM pg_catalog.pg_stat_database) AS "Commits",
   (SELECT sum(xact_rollback) FROM pg_catalog.pg_stat_database) AS "Rollbacks"
) t
UNION ALL
SELECT 'ti_stats' AS chart_name, pg_catalog.row_to_json(t) AS chart_data
FROM (SELECT
   (SELECT sum(tup_inserted) FROM pg_catalog.pg_stat_database) AS "Inserts",
   (SELECT sum(tup_updated) FROM pg_catalog.pg_stat_database) AS "Updates",
   (SELECT sum(tup_deleted) FROM pg_catalog.pg_stat_database) AS "Deletes"
) t
UNION ALL
SELECT 'to_stats' AS chart_name, pg_catalog.row_to_json(t) AS chart_data
FROM (SELECT
   (SELECT sum(tup_fetched) FROM pg_catalog.pg_stat_database) AS "Fetched",
   (SELECT sum(tup_returned) FROM pg_catalog.pg_stat_database) AS "Returned"
) t
UNION ALL
SELECT 'bio_stats' AS chart_name, pg_catalog.row_to_json(t) AS chart_data
FROM (SELECT
   (SELECT sum(blks_read) FROM pg_catalog.pg_stat_database) AS "Reads",
   (SELECT sum(blks_hit) FROM pg_catalog.pg_stat_database) AS "Hits"
) t
;;

-- query: pgadmin browser: pgAgent jobs available?
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (pgagent_job_check; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: has_priviledge
SELECT
    has_table_privilege(
      'pgagent.pga_job', 'INSERT, SELECT, UPDATE'
    ) has_priviledge
WHERE EXISTS(
    SELECT has_schema_privilege('pgagent', 'USAGE')
    WHERE EXISTS(
        SELECT cl.oid FROM pg_catalog.pg_class cl
        LEFT JOIN pg_catalog.pg_namespace ns ON ns.oid=relnamespace
        WHERE relname='pga_job' AND nspname='pgagent'
    )
)
;;

-- query: pgadmin browser: Databases node
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (database_list_with_joins; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: did, name, spcname, datallowconn, is_template, cancreate, owner, description
SELECT
    db.oid as did, db.datname as name, ta.spcname as spcname, db.datallowconn,
    db.datistemplate AS is_template,
    pg_catalog.has_database_privilege(db.oid, 'CREATE') as cancreate, datdba as owner,
    descr.description
FROM
    pg_catalog.pg_database db
    LEFT OUTER JOIN pg_catalog.pg_tablespace ta ON db.dattablespace = ta.oid
    LEFT OUTER JOIN pg_catalog.pg_shdescription descr ON (
        db.oid=descr.objoid AND descr.classoid='pg_database'::regclass
    )
WHERE db.oid > 0::OID OR db.datname IN ('postgres', 'edb')
ORDER BY datname
;;

-- query: pgadmin browser: Login/Group Roles node
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (pg_roles_with_description; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, rolname, rolcanlogin, rolsuper, description
SELECT
    r.oid, r.rolname, r.rolcanlogin, r.rolsuper, d.description
FROM pg_catalog.pg_roles r
    LEFT JOIN pg_catalog.pg_shdescription d
    ON d.objoid = r.oid AND d.classoid = 'pg_catalog.pg_authid'::regclass
ORDER BY r.rolcanlogin, r.rolname
;;

-- query: pgadmin browser: Tablespaces node
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (pg_tablespace_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, owner, description
SELECT
    ts.oid AS oid, spcname AS name, spcowner as owner,
    pg_catalog.shobj_description(oid, 'pg_tablespace') AS description
FROM
    pg_catalog.pg_tablespace ts
ORDER BY name
;;

-- query: pgadmin database properties: encodings
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (encoding_list_via_generate_series; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: encoding
SELECT * FROM
(SELECT pg_catalog.pg_encoding_to_char(s.i) AS encoding
FROM (SELECT pg_catalog.generate_series(0, 100, 1) as i) s) a
WHERE encoding != '' ORDER BY encoding
;;

-- query: pgadmin database properties: settings
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolFullSessionTest.java (pg_show_all_settings_with_context_filter; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: name, vartype, min_val, max_val, enumvals
SELECT name, vartype, min_val, max_val, enumvals
FROM pg_catalog.pg_show_all_settings() WHERE context in ('user', 'superuser')
;;

-- query: pgadmin browser: Schemas node
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (namespace_listing_with_catalog_detection; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, can_create, has_usage, description
SELECT
    nsp.oid, nsp.nspname as name,
    pg_catalog.has_schema_privilege(nsp.oid, 'CREATE') as can_create,
    pg_catalog.has_schema_privilege(nsp.oid, 'USAGE') as has_usage,
    des.description
FROM pg_catalog.pg_namespace nsp
    LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=nsp.oid AND des.classoid='pg_namespace'::regclass)
WHERE nspname NOT LIKE E'pg\_%'
    AND NOT (
        (nsp.nspname = 'pg_catalog' AND EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'pg_class' AND relnamespace = nsp.oid LIMIT 1)) OR
        (nsp.nspname = 'pgagent' AND EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'pga_job' AND relnamespace = nsp.oid LIMIT 1)) OR
        (nsp.nspname = 'information_schema' AND EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'tables' AND relnamespace = nsp.oid LIMIT 1))
    )
ORDER BY nspname
;;

-- query: pgadmin browser: schema {schema} is a catalog?
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (namespace_is_catalog_detection; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: schema_name, is_catalog, db_support
SELECT nsp.nspname as schema_name,
    (nsp.nspname = 'pg_catalog' AND EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'pg_class' AND relnamespace = nsp.oid LIMIT 1)) OR
    (nsp.nspname = 'pgagent' AND EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'pga_job' AND relnamespace = nsp.oid LIMIT 1)) OR
    (nsp.nspname = 'information_schema' AND EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = 'tables' AND relnamespace = nsp.oid LIMIT 1)) AS is_catalog,
    CASE WHEN nsp.nspname = ANY('{information_schema}') THEN false ELSE true END AS db_support
FROM pg_catalog.pg_namespace nsp
WHERE nsp.oid = '{schema}'::regnamespace::OID
;;

-- query: pgadmin browser: Tables node of {schema}
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (table_listing_with_trigger_inherit_counts; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, triggercount, has_enable_triggers, is_partitioned, is_inherits, is_inherited, description
SELECT rel.oid, rel.relname AS name,
    (SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid=rel.oid AND tgisinternal = FALSE) AS triggercount,
    (SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid=rel.oid AND tgisinternal = FALSE AND tgenabled = 'O') AS has_enable_triggers,
    (CASE WHEN rel.relkind = 'p' THEN true ELSE false END) AS is_partitioned,
    (SELECT count(1) FROM pg_catalog.pg_inherits WHERE inhrelid=rel.oid LIMIT 1) as is_inherits,
    (SELECT count(1) FROM pg_catalog.pg_inherits WHERE inhparent=rel.oid LIMIT 1) as is_inherited,
    des.description
FROM pg_catalog.pg_class rel
    LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=rel.oid AND des.objsubid=0 AND des.classoid='pg_class'::regclass)
WHERE rel.relkind IN ('r','s','t','p') AND rel.relnamespace = '{schema}'::regnamespace::oid
    AND NOT rel.relispartition
ORDER BY rel.relname
;;

-- query: pgadmin browser: table {table} is partitioned?
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (is_partitioned_check; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: ptable
SELECT CASE WHEN c.relkind = 'p' THEN True ELSE False END As ptable FROM pg_catalog.pg_class c WHERE c.oid = '{schema}.{table}'::regclass::oid
;;

-- query: pgadmin browser: {table} > Constraints: foreign keys
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (fk_constraints_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, convalidated, comment
SELECT ct.oid, conname as name, NOT convalidated as convalidated, description as comment
FROM pg_catalog.pg_constraint ct
LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=ct.oid AND des.classoid='pg_constraint'::regclass)
WHERE contype='f' AND conrelid = '{schema}.{table}'::regclass::oid ORDER BY conname
;;

-- query: pgadmin browser: {table} > Constraints: check
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (check_constraints_with_conislocal; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, convalidated, conislocal, comment
SELECT c.oid, conname as name, NOT convalidated as convalidated, conislocal, description as comment
FROM pg_catalog.pg_constraint c
LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=c.oid AND des.classoid='pg_constraint'::regclass)
WHERE contype = 'c' AND conrelid = '{schema}.{table}'::regclass::oid
;;

-- query: pgadmin browser: {table} > Constraints: exclusion
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (exclusion_constraints_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, convalidated, comment
SELECT conindid as oid, conname as name, NOT convalidated as convalidated, desp.description AS comment
FROM pg_catalog.pg_constraint ct
LEFT OUTER JOIN pg_catalog.pg_description desp ON (desp.objoid=ct.oid AND desp.objsubid = 0 AND desp.classoid='pg_constraint'::regclass)
WHERE contype='x' AND conrelid = '{schema}.{table}'::regclass::oid ORDER BY conname
;;

-- query: pgadmin browser: {table} > Constraints: primary key
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (pk_index_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, comment
SELECT cls.oid, cls.relname as name,
    CASE contype WHEN 'p' THEN desp.description WHEN 'u' THEN desp.description WHEN 'x' THEN desp.description ELSE des.description END AS comment
FROM pg_catalog.pg_index idx
JOIN pg_catalog.pg_class cls ON cls.oid=indexrelid
LEFT JOIN pg_catalog.pg_depend dep ON (dep.classid = cls.tableoid AND dep.objid = cls.oid AND dep.refobjsubid = '0' AND dep.refclassid=(SELECT oid FROM pg_catalog.pg_class WHERE relname='pg_constraint') AND dep.deptype='i')
LEFT OUTER JOIN pg_catalog.pg_constraint con ON (con.tableoid = dep.refclassid AND con.oid = dep.refobjid)
LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=cls.oid AND des.classoid='pg_class'::regclass)
LEFT OUTER JOIN pg_catalog.pg_description desp ON (desp.objoid=con.oid AND desp.objsubid = 0 AND desp.classoid='pg_constraint'::regclass)
WHERE indrelid = '{schema}.{table}'::regclass::oid AND contype='p'
;;

-- query: pgadmin browser: {table} > Constraints: unique
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (unique_index_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, comment
SELECT cls.oid, cls.relname as name,
    CASE contype WHEN 'p' THEN desp.description WHEN 'u' THEN desp.description WHEN 'x' THEN desp.description ELSE des.description END AS comment
FROM pg_catalog.pg_index idx
JOIN pg_catalog.pg_class cls ON cls.oid=indexrelid
LEFT JOIN pg_catalog.pg_depend dep ON (dep.classid = cls.tableoid AND dep.objid = cls.oid AND dep.refobjsubid = '0' AND dep.refclassid=(SELECT oid FROM pg_catalog.pg_class WHERE relname='pg_constraint') AND dep.deptype='i')
LEFT OUTER JOIN pg_catalog.pg_constraint con ON (con.tableoid = dep.refclassid AND con.oid = dep.refobjid)
LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=cls.oid AND des.classoid='pg_class'::regclass)
LEFT OUTER JOIN pg_catalog.pg_description desp ON (desp.objoid=con.oid AND desp.objsubid = 0 AND desp.classoid='pg_constraint'::regclass)
WHERE indrelid = '{schema}.{table}'::regclass::oid AND contype='u'
;;

-- query: pgadmin browser: {table} > Indexes
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolTableBrowseTest.java (distinct_on_index_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, is_inherited, description
SELECT DISTINCT ON(cls.relname) cls.oid, cls.relname as name,
(SELECT (CASE WHEN count(i.inhrelid) > 0 THEN true ELSE false END) FROM pg_inherits i WHERE i.inhrelid = cls.oid) as is_inherited,
CASE WHEN contype IN ('p', 'u', 'x') THEN desp.description ELSE des.description END AS description
FROM pg_catalog.pg_index idx
    JOIN pg_catalog.pg_class cls ON cls.oid=indexrelid
    JOIN pg_catalog.pg_class tab ON tab.oid=indrelid
    LEFT OUTER JOIN pg_catalog.pg_tablespace ta on ta.oid=cls.reltablespace
    JOIN pg_catalog.pg_namespace n ON n.oid=tab.relnamespace
    JOIN pg_catalog.pg_am am ON am.oid=cls.relam
    LEFT JOIN pg_catalog.pg_depend dep ON (dep.classid = cls.tableoid AND dep.objid = cls.oid AND dep.refobjsubid = '0' AND dep.refclassid=(SELECT oid FROM pg_catalog.pg_class WHERE relname='pg_constraint') AND dep.deptype='i')
    LEFT OUTER JOIN pg_catalog.pg_constraint con ON (con.tableoid = dep.refclassid AND con.oid = dep.refobjid)
    LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=cls.oid AND des.classoid='pg_class'::regclass)
    LEFT OUTER JOIN pg_catalog.pg_description desp ON (desp.objoid=con.oid AND desp.objsubid = 0 AND desp.classoid='pg_constraint'::regclass)
WHERE indrelid = '{schema}.{table}'::regclass::OID
    AND conname is NULL
    ORDER BY cls.relname
;;

-- query: pgadmin browser: {table} > Triggers
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolNewQueriesTest.java (trigger_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, is_enable_trigger, description
SELECT t.oid, t.tgname as name, t.tgenabled AS is_enable_trigger, des.description
FROM pg_catalog.pg_trigger t
    LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=t.oid AND des.classoid='pg_trigger'::regclass)
WHERE NOT tgisinternal
    AND tgrelid = '{schema}.{table}'::regclass::OID ORDER BY tgname
;;

-- query: pgadmin browser: {table} > Rules
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolNewQueriesTest.java (rule_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, enabled, is_enable_rule, comment
SELECT rw.oid AS oid, rw.rulename AS name,
    CASE WHEN rw.ev_enabled != 'D' THEN True ELSE False END AS enabled,
    rw.ev_enabled AS is_enable_rule,
    description AS comment
FROM pg_catalog.pg_rewrite rw
    LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=rw.oid AND des.classoid='pg_rewrite'::regclass)
WHERE rw.ev_class = '{schema}.{table}'::regclass ORDER BY rw.rulename
;;

-- query: pgadmin browser: {table} > RLS Policies
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolNewQueriesTest.java (policy_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name
SELECT pl.oid AS oid, pl.polname AS name
FROM pg_catalog.pg_policy pl
WHERE pl.polrelid = '{schema}.{table}'::regclass ORDER BY pl.polname
;;

-- query: pgadmin browser: {table} > Partitions
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolNewQueriesTest.java (partition_listing; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: oid, name, triggercount, has_enable_triggers, partition_value, schema_id, schema_name, is_partitioned, is_sub_partitioned, partition_scheme, sub_partition_scheme, relpersistence, spcname, fillfactor, reloptions, toast_reloptions, reloftype, typname, typoid, description, relowner, inhdetachpending, amname
SELECT rel.oid, rel.relname AS name,
    (SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid=rel.oid AND tgisinternal = FALSE) AS triggercount,
    (SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid=rel.oid AND tgisinternal = FALSE AND tgenabled = 'O') AS has_enable_triggers,
    pg_catalog.pg_get_expr(rel.relpartbound, rel.oid) AS partition_value,
    rel.relnamespace AS schema_id,
    nsp.nspname AS schema_name,
    (CASE WHEN rel.relkind = 'p' THEN true ELSE false END) AS is_partitioned,
    (CASE WHEN rel.relkind = 'p' THEN true ELSE false END) AS is_sub_partitioned,
    (CASE WHEN rel.relkind = 'p' THEN pg_catalog.pg_get_partkeydef(rel.oid::oid) ELSE '' END) AS partition_scheme,
    (CASE WHEN rel.relkind = 'p' THEN pg_catalog.pg_get_partkeydef(rel.oid::oid) ELSE '' END) AS sub_partition_scheme,
    (CASE WHEN rel.relpersistence = 'u' THEN true ELSE false END) AS relpersistence,
    (CASE WHEN length(spc.spcname::text) > 0 THEN spc.spcname ELSE
        (SELECT sp.spcname FROM pg_catalog.pg_database dtb
        JOIN pg_catalog.pg_tablespace sp ON dtb.dattablespace=sp.oid
        WHERE dtb.oid = (SELECT oid FROM pg_database WHERE datname = current_database()))
    END) as spcname,
    substring(pg_catalog.array_to_string(rel.reloptions, ',') FROM 'fillfactor=([0-9]*)') AS fillfactor,
    rel.reloptions AS reloptions, tst.reloptions AS toast_reloptions, rel.reloftype, typ.typname,
    typ.typrelid AS typoid, des.description, pg_catalog.pg_get_userbyid(rel.relowner) AS relowner,
    inh.inhdetachpending, am.amname
FROM
    (SELECT * FROM pg_catalog.pg_inherits WHERE inhparent = '{schema}.{table}'::regclass    ::oid) inh
    LEFT JOIN pg_catalog.pg_class rel ON inh.inhrelid = rel.oid
    LEFT JOIN pg_catalog.pg_namespace nsp ON rel.relnamespace = nsp.oid
    LEFT OUTER JOIN pg_catalog.pg_class tst ON tst.oid = rel.reltoastrelid
    LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=rel.oid AND des.objsubid=0 AND des.classoid='pg_class'::regclass)
    LEFT OUTER JOIN pg_catalog.pg_tablespace spc on spc.oid=rel.reltablespace
    LEFT OUTER JOIN pg_catalog.pg_am am ON am.oid = rel.relam
    LEFT JOIN pg_catalog.pg_type typ ON rel.reloftype=typ.oid
WHERE rel.relispartition
ORDER BY rel.relname
;;

-- query: pgadmin browser: schema and name of {table}
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolColumnIntrospectionTest.java (schema_table_lookup_by_oid; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: schema, table
SELECT nsp.nspname AS schema, rel.relname AS table
FROM pg_catalog.pg_class rel
    JOIN pg_catalog.pg_namespace nsp ON rel.relnamespace = nsp.oid::oid
WHERE rel.oid = '{schema}.{table}'::regclass::oid
;;

-- query: pgadmin browser: {table} > Columns
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolColumnIntrospectionTest.java (column_introspection_with_pg_sequence; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: name, oid, datatype, not_null, has_default_val, description, seqtypid
SELECT DISTINCT att.attname as name, att.attnum as OID, pg_catalog.format_type(ty.oid,NULL) AS datatype,
att.attnotnull as not_null,
CASE WHEN att.atthasdef OR att.attidentity != '' OR ty.typdefault IS NOT NULL THEN True
ELSE False END as has_default_val, des.description, seq.seqtypid
FROM pg_catalog.pg_attribute att
    JOIN pg_catalog.pg_type ty ON ty.oid=atttypid
    JOIN pg_catalog.pg_namespace tn ON tn.oid=ty.typnamespace
    JOIN pg_catalog.pg_class cl ON cl.oid=att.attrelid
    JOIN pg_catalog.pg_namespace na ON na.oid=cl.relnamespace
    LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=ty.typelem
    LEFT OUTER JOIN pg_catalog.pg_attrdef def ON adrelid=att.attrelid AND adnum=att.attnum
    LEFT OUTER JOIN (pg_catalog.pg_depend JOIN pg_catalog.pg_class cs ON classid='pg_class'::regclass AND objid=cs.oid AND cs.relkind='S') ON refobjid=att.attrelid AND refobjsubid=att.attnum
    LEFT OUTER JOIN pg_catalog.pg_namespace ns ON ns.oid=cs.relnamespace
    LEFT OUTER JOIN pg_catalog.pg_index pi ON pi.indrelid=att.attrelid AND indisprimary
    LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid=att.attrelid AND des.objsubid=att.attnum AND des.classoid='pg_class'::regclass)
    LEFT OUTER JOIN pg_catalog.pg_sequence seq ON cs.oid=seq.seqrelid
WHERE
    att.attrelid = '{schema}.{table}'::regclass::oid
    AND att.attnum > 0
    AND att.attisdropped IS FALSE
ORDER BY att.attnum
;;

-- query: pgadmin properties of {table}: columns
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/DbToolColumnPropertiesTest.java (fullDbToolColumnPropertiesQuery; a pgAdmin 4 session transcribed from a PostgreSQL server log)
-- reads: name, atttypid, attnum, attnotnull, defval, typname, cltype, inheritedfrom, inheritedid, description, indkey
WITH INH_TABLES AS (SELECT   at.attname AS name, ph.inhparent AS inheritedid, ph.inhseqno,   pg_catalog.concat(nmsp_parent.nspname, '.', parent.relname) AS inheritedfrom  FROM   pg_catalog.pg_attribute at  JOIN   pg_catalog.pg_inherits ph ON ph.inhparent = at.attrelid     AND ph.inhrelid = '{schema}.{table}'::regclass::oid  JOIN   pg_catalog.pg_class parent ON ph.inhparent = parent.oid  JOIN   pg_catalog.pg_namespace nmsp_parent ON nmsp_parent.oid = parent.relnamespace  GROUP BY at.attname, ph.inhparent, ph.inhseqno, inheritedfrom  ORDER BY at.attname, ph.inhparent, ph.inhseqno, inheritedfrom ) SELECT DISTINCT ON (att.attnum) att.attname as name, att.atttypid, att.attnum,   att.attnotnull,   pg_catalog.pg_get_expr(def.adbin, def.adrelid) AS defval,   pg_catalog.format_type(ty.oid, NULL) AS typname,   pg_catalog.format_type(ty.oid, att.atttypmod) AS cltype,   inh.inheritedfrom,   inh.inheritedid,   description, pi.indkey FROM pg_catalog.pg_attribute att   JOIN pg_catalog.pg_type ty ON ty.oid = atttypid   LEFT OUTER JOIN pg_catalog.pg_attrdef def ON adrelid = att.attrelid AND adnum = att.attnum   LEFT OUTER JOIN pg_catalog.pg_description des ON (des.objoid = att.attrelid AND des.objsubid = att.attnum AND des.classoid = 'pg_class'::regclass)   LEFT OUTER JOIN pg_catalog.pg_index pi ON pi.indrelid = att.attrelid AND indisprimary   LEFT OUTER JOIN pg_catalog.pg_class tab ON tab.oid = att.attrelid   LEFT OUTER JOIN INH_TABLES AS inh ON att.attname = inh.name WHERE att.attrelid = '{schema}.{table}'::regclass::oid   AND att.attnum > 0   AND att.attisdropped IS FALSE ORDER BY att.attnum
;;

-- query: pgadmin connect: replication type (startup)
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/pgadmin.rs (pgAdmin startup, issue #178)
-- reads: type
SELECT CASE
        WHEN (SELECT count(extname) FROM pg_catalog.pg_extension WHERE extname='bdr') > 0
        THEN 'pgd'
        WHEN (SELECT COUNT(*) FROM pg_replication_slots) > 0
        THEN 'log'
        ELSE NULL
    END as type
;;

-- query: pgadmin View/Edit Data: schema and name of the object
-- source: pgadmin-org/pgadmin4 web/pgadmin/tools/sqleditor/templates/sqleditor/sql/default/objectname.sql (rendered for {schema}.{table})
-- reads: nspname, relname
SELECT n.nspname, r.relname
FROM pg_catalog.pg_class r
    LEFT JOIN pg_catalog.pg_namespace n ON (r.relnamespace = n.oid)
WHERE r.oid = '{schema}.{table}'::regclass;
;;

-- query: pgadmin View/Edit Data > First 100 Rows (sorted by primary key)
-- source: pgadmin-org/pgadmin4 web/pgadmin/tools/sqleditor/templates/sqleditor/sql/default/objectquery.sql (rendered for {schema}.{table})
-- reads: id, amount, name, created
SELECT * FROM {schema}.{table}
ORDER BY id ASC
LIMIT 100
;;

-- query: pgadmin View/Edit Data > All Rows
-- source: pgadmin-org/pgadmin4 web/pgadmin/tools/sqleditor/templates/sqleditor/sql/default/objectquery.sql (rendered for {schema}.{table})
-- reads: id, amount, name, created
SELECT * FROM {schema}.{table}
ORDER BY id ASC
;;
