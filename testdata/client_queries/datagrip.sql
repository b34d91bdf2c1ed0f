-- JetBrains DataGrip (and IntelliJ's database tools, which share its PostgreSQL introspector):
-- connect, then the full introspection of the server and of schema {schema} (tables,
-- columns, types, routines, indexes, constraints, comments, ACLs ...).
-- DataGrip is closed source; these come from public recordings: DataGrip 2025.2.3's
-- startup as logged by a PostgreSQL server (datafusion-postgres), and a whole DataGrip
-- introspection session transcribed into lhgravendeel/memgres' tests (against PostgreSQL
-- 18, whose server version selects the variant of each template).
-- DataGrip binds the schema OID as $1::oid (bigint); memgres inlined it, and here it is
-- written as '{schema}'::regnamespace::oid. DataGrip's templates also carry comment lines
-- (e.g. '--  and pg_catalog.age(T.xmin) <= #TXAGE') in the text it sends; memgres' transcription
-- left those out, so they are missing here (a server log of DataGrip, e.g. the one quoted
-- in datafusion-postgres issue #165, shows them).
-- DataGrip's incremental introspection adds 'pg_catalog.age(xmin) <= ...' filters whose
-- value ('0'::varchar::xid here) comes from a previous answer.
-- Not included: DataGrip's 'open table' query (a SELECT with a row limit), for which no
-- recording was found.
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: datagrip connect: float digits (pgjdbc)
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads:
SET extra_float_digits = 3
;;

-- query: datagrip connect: reset application name (pgjdbc)
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads:
SET application_name = ''
;;

-- query: datagrip connect: server version
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: version
select version()
;;

-- query: datagrip connect: application name
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads:
SET application_name = 'DataGrip 2025.2.3'
;;

-- query: datagrip connect: current database and schemas
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: a, b
select current_database() as a, current_schemas(false) as b
;;

-- query: datagrip connect: isolation level
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: transaction_isolation
SHOW TRANSACTION ISOLATION LEVEL
;;

-- query: datagrip connect: server start time
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: startup_time
select round(extract(epoch from pg_postmaster_start_time() at time zone 'UTC')) as startup_time
;;

-- query: datagrip connect: oldest transaction
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: transaction_id
select L.transactionid::varchar::bigint as transaction_id
        from pg_catalog.pg_locks L
        where L.transactionid is not null
        order by pg_catalog.age(L.transactionid) desc
        limit 1
;;

-- query: datagrip connect: current transaction id
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: current_txid
select case
          when pg_catalog.pg_is_in_recovery()
            then null
          else
            (pg_catalog.txid_current() % 4294967296)::varchar::bigint
          end as current_txid
;;

-- query: datagrip introspection: databases
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: id, name, description, is_template, allow_connections, owner
select N.oid::bigint as id,
               datname as name,
               D.description,
               datistemplate as is_template,
               datallowconn as allow_connections,
               pg_catalog.pg_get_userbyid(N.datdba) as "owner"
        from pg_catalog.pg_database N
          left join pg_catalog.pg_shdescription D on N.oid = D.objoid
        order by case when datname = pg_catalog.current_database() then -1::bigint else N.oid::bigint end
;;

-- query: datagrip introspection: schemas
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: id, state_number, name, description, owner
select N.oid::bigint as id,
               N.xmin as state_number,
               nspname as name,
               D.description,
               pg_catalog.pg_get_userbyid(N.nspowner) as "owner"
        from pg_catalog.pg_namespace N
          left join pg_catalog.pg_description D on N.oid = D.objoid
        order by case when nspname = pg_catalog.current_schema() then -1::bigint else N.oid::bigint end
;;

-- query: datagrip pgjdbc type info for oid 28 (xid)
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: is_array, typtype, typname, oid
SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid   FROM pg_catalog.pg_type   LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r           from pg_namespace as ns           join ( select s.r, (current_schemas(false))[s.r] as nspname                    from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r          using ( nspname )        ) as sp     ON sp.nspoid = typnamespace  WHERE pg_type.oid = '28'  ORDER BY sp.r, pg_type.oid DESC
;;

-- query: datagrip connect: DateStyle
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: DateStyle
show DateStyle
;;

-- query: datagrip introspection: time zones
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: name, is_dst
select name, is_dst from pg_catalog.pg_timezone_names
        union distinct
        select abbrev as name, is_dst from pg_catalog.pg_timezone_abbrevs
;;

-- query: datagrip introspection: roles
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: role_id, role_name, is_super, is_inherit, can_createrole, can_createdb, can_login, is_replication, conn_limit, valid_until, bypass_rls, config, description
select R.oid::bigint as role_id, rolname as role_name,
          rolsuper is_super, rolinherit is_inherit,
          rolcreaterole can_createrole, rolcreatedb can_createdb,
          rolcanlogin can_login, rolreplication /* false */ is_replication,
          rolconnlimit conn_limit, rolvaliduntil valid_until,
          rolbypassrls /* false */ bypass_rls, rolconfig config,
          D.description
        from pg_catalog.pg_roles R
          left join pg_catalog.pg_shdescription D on D.objoid = R.oid
;;

-- query: datagrip introspection: role membership
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: id, role_id, admin_option
select member id, roleid role_id, admin_option
                  from pg_catalog.pg_auth_members order by id, roleid::text
;;

-- query: datagrip introspection: tablespaces
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: id, name, state_number, owner, location, options, comment
select T.oid::bigint as id, T.spcname as name,
               T.xmin as state_number, pg_catalog.pg_get_userbyid(T.spcowner) as owner,
               pg_catalog.pg_tablespace_location(T.oid) /* null */ as location,
               T.spcoptions /* null */ as options,
               D.description as comment
        from pg_catalog.pg_tablespace T
          left join pg_catalog.pg_shdescription D on D.objoid = T.oid
        --  where pg_catalog.age(T.xmin) <= #TXAGE
;;

-- query: datagrip introspection: tablespace and database ACLs
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: object_id, acl
select T.oid as object_id,
                         T.spcacl as acl
                  from pg_catalog.pg_tablespace T
                  union all
                  select T.oid as object_id,
                         T.datacl as acl
                  from pg_catalog.pg_database T
;;

-- query: datagrip pgjdbc type info for oid 1034 (aclitem[])
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: is_array, typtype, typname, oid
SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid   FROM pg_catalog.pg_type   LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r           from pg_namespace as ns           join ( select s.r, (current_schemas(false))[s.r] as nspname                    from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r          using ( nspname )        ) as sp     ON sp.nspoid = typnamespace  WHERE pg_type.oid = '1034'  ORDER BY sp.r, pg_type.oid DESC
;;

-- query: datagrip pgjdbc array delimiter for oid 1034
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: typdelim
SELECT e.typdelim FROM pg_catalog.pg_type t, pg_catalog.pg_type e WHERE t.oid = '1034' and t.typelem = e.oid
;;

-- query: datagrip pgjdbc array element type for oid 1034
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: oid, ?column?, nspname, typname
SELECT e.oid, n.nspname = ANY(current_schemas(true)), n.nspname, e.typname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_type e ON t.typelem = e.oid JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = '1034'
;;

-- query: datagrip pgjdbc type info for oid 1033 (aclitem)
-- source: datafusion-contrib/datafusion-postgres datafusion-postgres/tests/datagrip.rs (DataGrip 2025.2.3 startup, from a PostgreSQL server log: datafusion-postgres issue #165)
-- reads: is_array, typtype, typname, oid
SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid   FROM pg_catalog.pg_type   LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r           from pg_namespace as ns           join ( select s.r, (current_schemas(false))[s.r] as nspname                    from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r          using ( nspname )        ) as sp     ON sp.nspoid = typnamespace  WHERE pg_type.oid = '1033'  ORDER BY sp.r, pg_type.oid DESC
;;

-- query: datagrip introspection: current all
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q06; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: current_database, current_schema, current_user
select current_database(), current_schema(), current_user
;;

-- query: datagrip introspection: pg locks txid
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q08; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: transaction_id
select L.transactionid::varchar::bigint as transaction_id
from pg_catalog.pg_locks L
where L.transactionid is not null
order by pg_catalog.age(L.transactionid) desc
limit 1
;;

-- query: datagrip introspection: txid current
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q09; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: current_txid
select case
  when pg_catalog.pg_is_in_recovery()
    then null
  else
    (pg_catalog.txid_current() % 4294967296)::varchar::bigint
  end as current_txid
;;

-- query: datagrip introspection: pg database
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q10; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, name, description, is_template, allow_connections, owner
select N.oid::bigint as id,
       datname as name,
       D.description,
       datistemplate as is_template,
       datallowconn as allow_connections,
       pg_catalog.pg_get_userbyid(N.datdba) as "owner"
from pg_catalog.pg_database N
  left join pg_catalog.pg_shdescription D on N.oid = D.objoid
order by case when datname = pg_catalog.current_database() then -1::bigint else N.oid::bigint end
;;

-- query: datagrip introspection: timezone names
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q12; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: name, is_dst
select name, is_dst from pg_catalog.pg_timezone_names
union distinct
select abbrev as name, is_dst from pg_catalog.pg_timezone_abbrevs
;;

-- query: datagrip introspection: pg roles
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q13; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: role_id, role_name, is_super, is_inherit, can_createrole, can_createdb, can_login, is_replication, conn_limit, valid_until, bypass_rls, config, description
select R.oid::bigint as role_id, rolname as role_name,
  rolsuper is_super, rolinherit is_inherit,
  rolcreaterole can_createrole, rolcreatedb can_createdb,
  rolcanlogin can_login, rolreplication /* false */ is_replication,
  rolconnlimit conn_limit, rolvaliduntil valid_until,
  rolbypassrls /* false */ bypass_rls, rolconfig config,
  D.description
from pg_catalog.pg_roles R
  left join pg_catalog.pg_shdescription D on D.objoid = R.oid
;;

-- query: datagrip introspection: pg auth members
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q14; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, role_id, admin_option
select member id, roleid role_id, admin_option
          from pg_catalog.pg_auth_members order by id, roleid::text
;;

-- query: datagrip introspection: pg tablespace
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q15; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, name, state_number, owner, location, options, comment
select T.oid::bigint as id, T.spcname as name,
       T.xmin as state_number, pg_catalog.pg_get_userbyid(T.spcowner) as owner,
       pg_catalog.pg_tablespace_location(T.oid) /* null */ as location,
       T.spcoptions /* null */ as options,
       D.description as comment
from pg_catalog.pg_tablespace T
  left join pg_catalog.pg_shdescription D on D.objoid = T.oid
;;

-- query: datagrip introspection: tablespace db acl
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q16; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: object_id, acl
select T.oid as object_id,
                 T.spcacl as acl
          from pg_catalog.pg_tablespace T
          union all
          select T.oid as object_id,
                 T.datacl as acl
          from pg_catalog.pg_database T
;;

-- query: datagrip introspection: pg namespace
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q17; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, description, owner
select N.oid::bigint as id,
       N.xmin as state_number,
       nspname as name,
       D.description,
       pg_catalog.pg_get_userbyid(N.nspowner) as "owner"
from pg_catalog.pg_namespace N
  left join pg_catalog.pg_description D on N.oid = D.objoid
order by case when nspname = pg_catalog.current_schema() then -1::bigint else N.oid::bigint end
;;

-- query: datagrip introspection: usesuper
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q18; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: usesuper
select usesuper
from pg_user
where usename = current_user
;;

-- query: datagrip introspection: pg event trigger
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q19; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, event, routine_id, owner, tags, is_disabled
select t.oid as id,
       t.xmin as state_number,
       t.evtname as name,
       t.evtevent as event,
       t.evtfoid as routine_id,
       pg_catalog.pg_get_userbyid(t.evtowner) as owner,
       t.evttags as tags,
       case when t.evtenabled = 'D' then 1 else 0 end as is_disabled
from pg_catalog.pg_event_trigger t
;;

-- query: datagrip introspection: pg fdw
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q20; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, handler, handler_schema, validator, validator_schema, options, owner
select fdw.oid as id,
       fdw.xmin as state_number,
       fdw.fdwname as name,
       pr.proname as handler,
       nspc.nspname as handler_schema,
       pr2.proname as validator,
       nspc2.nspname as validator_schema,
       fdw.fdwoptions as options,
       pg_catalog.pg_get_userbyid(fdw.fdwowner) as "owner"
from pg_catalog.pg_foreign_data_wrapper fdw
     left outer join pg_catalog.pg_proc pr on fdw.fdwhandler = pr.oid
     left outer join pg_catalog.pg_namespace nspc on pr.pronamespace = nspc.oid
     left outer join pg_catalog.pg_proc pr2 on fdw.fdwvalidator = pr2.oid
     left outer join pg_catalog.pg_namespace nspc2 on pr2.pronamespace = nspc2.oid
;;

-- query: datagrip introspection: pg foreign server
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q21; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, fdw_id, state_number, name, type, version, options, owner
select srv.oid as id,
       srv.srvfdw as fdw_id,
       srv.xmin as state_number,
       srv.srvname as name,
       srv.srvtype as type,
       srv.srvversion as version,
       srv.srvoptions as options,
       pg_catalog.pg_get_userbyid(srv.srvowner) as "owner"
from pg_catalog.pg_foreign_server srv
;;

-- query: datagrip introspection: pg user mapping
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q22; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, server_id, user, options
select oid as id,
       umserver as server_id,
       case when umuser = 0 then null else pg_catalog.pg_get_userbyid(umuser) end as user,
       umoptions as options
from pg_catalog.pg_user_mapping
order by server_id
;;

-- query: datagrip introspection: pg am
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q23; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: access_method_id, state_number, access_method_name, handler_id, handler_name, access_method_type
select A.oid as access_method_id,
       A.xmin as state_number,
       A.amname as access_method_name
       ,
       A.amhandler::oid as handler_id,
       pg_catalog.quote_ident(N.nspname) || '.' || pg_catalog.quote_ident(P.proname) as handler_name,
       A.amtype as access_method_type

from pg_am A
     join pg_proc P on A.amhandler::oid = P.oid
     join pg_namespace N on P.pronamespace = N.oid
;;

-- query: datagrip introspection: pg extension
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q24; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, version, schema_id, schema_name, available_updates
select E.oid        as id,
       E.xmin       as state_number,
       extname      as name,
       extversion   as version,
       extnamespace as schema_id,
       nspname      as schema_name
       ,
       array(select unnest
             from unnest(available_versions)
             where unnest > extversion) as available_updates

from pg_catalog.pg_extension E
       join pg_namespace N on E.extnamespace = N.oid
       left join (select name, array_agg(version) as available_versions
                  from pg_available_extension_versions()
                  group by name) V on E.extname = V.name
;;

-- query: datagrip introspection: pg type elem
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q25; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid, ?column?, nspname, typname
SELECT e.oid, n.nspname = ANY(current_schemas(true)), n.nspname, e.typname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_type e ON t.typelem = e.oid JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = 0
;;

-- query: datagrip introspection: pg language
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q26; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, trusted, handler, handlerschema, inline, inlineschema, validator, validatorschema
select l.oid as id, l.xmin state_number, lanname as name, lanpltrusted as trusted,
       h.proname as handler, hs.nspname as handlerSchema,
       i.proname as inline, isc.nspname as inlineSchema,
       v.proname as validator, vs.nspname as validatorSchema
from pg_catalog.pg_language l
    left join pg_catalog.pg_proc h on h.oid = lanplcallfoid
    left join pg_catalog.pg_namespace hs on hs.oid = h.pronamespace
    left join pg_catalog.pg_proc i on i.oid = laninline
    left join pg_catalog.pg_namespace isc on isc.oid = i.pronamespace
    left join pg_catalog.pg_proc v on v.oid = lanvalidator
    left join pg_catalog.pg_namespace vs on vs.oid = v.pronamespace
order by lanname
;;

-- query: datagrip introspection: desc global
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q27; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, kind, sub_id, description
select D.objoid id, case
    when 'pg_catalog.pg_event_trigger'::regclass = classoid then 'T'
    when 'pg_catalog.pg_am'::regclass = classoid then 'A'
    when 'pg_catalog.pg_cast'::regclass = classoid then 'C'
    when 'pg_catalog.pg_foreign_data_wrapper'::regclass = classoid then 'W'
    when 'pg_catalog.pg_foreign_server'::regclass = classoid then 'S'
    when 'pg_catalog.pg_language'::regclass = classoid then 'L'
    when 'pg_catalog.pg_extension'::regclass = classoid then 'E'

  end as kind,
  D.objsubid sub_id, D.description
from pg_catalog.pg_description D
where classoid in (
  'pg_catalog.pg_event_trigger'::regclass,
  'pg_catalog.pg_am'::regclass,
  'pg_catalog.pg_cast'::regclass,
  'pg_catalog.pg_foreign_data_wrapper'::regclass,
  'pg_catalog.pg_foreign_server'::regclass,
  'pg_catalog.pg_language'::regclass
  ,
  'pg_catalog.pg_extension'::regclass

)
;;

-- query: datagrip introspection: acl global
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q28; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: object_id, acl
select T.oid as object_id,
                 T.fdwacl as acl
          from pg_catalog.pg_foreign_data_wrapper T
          union all
          select T.oid as object_id,
                 T.lanacl as acl
          from pg_catalog.pg_language T
          union all
          select T.oid as object_id,
                 T.nspacl as acl
          from pg_catalog.pg_namespace T
          union all
          select T.oid as object_id,
                 T.srvacl as acl
          from pg_catalog.pg_foreign_server T
;;

-- query: datagrip introspection: pg cast
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q29; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid, state_number, castsource_id, castsource_name, casttarget_id, casttarget_name, castfunc_id, castfunc_name, castcontext, castmethod
select C.oid,
       C.xmin as state_number,
       C.castsource as castsource_id,
       pg_catalog.quote_ident(SN.nspname) || '.' || pg_catalog.quote_ident(S.typname) as castsource_name,
       C.casttarget as casttarget_id,
       pg_catalog.quote_ident(TN.nspname) || '.' || pg_catalog.quote_ident(T.typname) as casttarget_name,
       C.castfunc as castfunc_id,
       pg_catalog.quote_ident(FN.nspname) || '.' || pg_catalog.quote_ident(F.proname) as castfunc_name,
       C.castcontext,
       C.castmethod
from pg_cast C
     left outer join pg_proc F on C.castfunc::oid = F.oid
     left outer join pg_namespace FN on F.pronamespace = FN.oid
     join pg_type S on C.castsource::oid = S.oid
     join pg_namespace SN on S.typnamespace = SN.oid
     join pg_type T on C.casttarget::oid = T.oid
     join pg_namespace TN on T.typnamespace = TN.oid
;;

-- query: datagrip introspection: extension depend
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q30; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: extension_id, member_id
select E.oid   as extension_id,
       D.objid as member_id
from pg_extension E
     join pg_depend D on E.oid = D.refobjid and
                         D.refclassid = 'pg_extension'::regclass::oid
where D.deptype = 'e'
order by extension_id
;;

-- query: datagrip introspection: big union null
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q31; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid, schemaid, kind
select T.oid as oid,
       relnamespace as schemaId,
       pg_catalog.translate(relkind, 'rmvpfS', 'rmvrfS') as kind
from pg_catalog.pg_class T
where relnamespace in ( null )
  and relkind in ('r', 'm', 'v', 'p', 'f', 'S')
--
union all
-- begin objectType
select T.oid,
       T.typnamespace,
       'T' as kind
from pg_catalog.pg_type T
     left outer join pg_catalog.pg_class C on T.typrelid = C.oid
where T.typnamespace in ( null )
  and ( T.typtype in ('d','e') or
        C.relkind = 'c'::"char" or
        (T.typtype = 'b' and (T.typelem = 0 OR T.typcategory <> 'A')) or
        T.typtype = 'p' and not T.typisdefined )
--
union all
-- begin collation
select oid,
       collnamespace,
       'C' as kind
from pg_catalog.pg_collation
where collnamespace in ( null )
--
union all
-- begin ops
select oid,
       oprnamespace,
       'O' as kind
from pg_catalog.pg_operator
where oprnamespace in ( null )
--
union all
-- begin opClasses
select oid,
       opcnamespace,
       'c' as kind
from pg_catalog.pg_opclass
where opcnamespace in ( null )
--
union all
-- begin opFams
select oid,
       opfnamespace,
       'F' as kind
from pg_catalog.pg_opfamily
where opfnamespace in ( null )
--
union all
-- begin agg & routine
select oid,
       pronamespace,
       case when prokind != 'a' /* not proisagg */ then 'R'
            else 'a'
            end as kind
from pg_catalog.pg_proc
where pronamespace in ( null )
;;

-- query: datagrip introspection: big union names
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q32; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid, schemaid, kind, name
select T.oid as oid,
       relnamespace as schemaId,
       pg_catalog.translate(relkind, 'rmvpfS', 'rmvrfS') as kind,
       relname as name
from pg_catalog.pg_class T
where relnamespace in ( '{schema}'::regnamespace::oid )
  and relkind in ('r', 'm', 'v', 'p', 'f', 'S')
union all
select T.oid,
       T.typnamespace,
       'T',
       T.typname
from pg_catalog.pg_type T
     left outer join pg_catalog.pg_class C on T.typrelid = C.oid
where T.typnamespace in ( '{schema}'::regnamespace::oid )
  and ( T.typtype in ('d','e') or
        C.relkind = 'c'::"char" or
        (T.typtype = 'b' and (T.typelem = 0 OR T.typcategory <> 'A')) or
        T.typtype = 'p' and not T.typisdefined )
union all
select oid,
       collnamespace,
       'C',
       collname
from pg_catalog.pg_collation
where collnamespace in ( '{schema}'::regnamespace::oid )
union all
select oid,
       oprnamespace,
       'O',
       oprname
from pg_catalog.pg_operator
where oprnamespace in ( '{schema}'::regnamespace::oid )
union all
select oid,
       opcnamespace,
       'c',
       opcname
from pg_catalog.pg_opclass
where opcnamespace in ( '{schema}'::regnamespace::oid )
union all
select oid,
       opfnamespace,
       'F',
       opfname
from pg_catalog.pg_opfamily
where opfnamespace in ( '{schema}'::regnamespace::oid )
union all
select oid,
       pronamespace,
       case when prokind != 'a'/* not proisagg*/ then 'R'
            else 'a'
            end,
       proname
from pg_catalog.pg_proc
where pronamespace in ( '{schema}'::regnamespace::oid )
order by schemaId
;;

-- query: datagrip introspection: proc args
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q33; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: schemaid, majoroid, argnames, argmodes, nargs
select pronamespace as schemaId,
       oid as majorOid,
       proargnames as argNames,
       proargmodes as argModes,
       array_length(proargtypes, 1) as nArgs
from pg_catalog.pg_proc
where pronamespace in ( '{schema}'::regnamespace::oid )
order by schemaId
;;

-- query: datagrip introspection: column names
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q34; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: schemaid, majoroid, kind, position, name
with T as ( select T.oid as oid,
                                     T.relkind as kind,
                                     T.relnamespace as schemaId
            from pg_catalog.pg_class T
            where T.relnamespace in ( '{schema}'::regnamespace::oid )
              and T.relkind in ('r', 'm', 'v', 'f', 'p')
          )
select T.schemaId as schemaId,
       T.oid as majorOid,
       pg_catalog.translate(T.kind, 'rmvpf', 'rmvrf') as kind,
       C.attnum as position,
       C.attname as name
from T
     join pg_catalog.pg_attribute C on T.oid = C.attrelid
where C.attnum > 0
  and not C.attisdropped
order by schemaId, majorOid
;;

-- query: datagrip introspection: sequence listing
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q35; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: sequence_state_number, sequence_id, sequence_name, data_type, start_value, inc_value, min_value, max_value, cache_size, cycle_option, owner
select cls.xmin as sequence_state_number,
       sq.seqrelid as sequence_id,
       cls.relname as sequence_name,
       pg_catalog.format_type(sq.seqtypid, null) as data_type,
       sq.seqstart as start_value,
       sq.seqincrement as inc_value,
       sq.seqmin as min_value,
       sq.seqmax as max_value,
       sq.seqcache as cache_size,
       sq.seqcycle as cycle_option,
       pg_catalog.pg_get_userbyid(cls.relowner) as "owner"
from pg_catalog.pg_sequence sq
    join pg_class cls on sq.seqrelid = cls.oid
    where cls.relnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: type listing
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q36; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: type_id, type_state_number, type_name, type_sub_kind, type_category, class_id, base_type_id, type_def, dimensions_number, default_expression, mandatory, owner
select T.oid as type_id,
       T.xmin as type_state_number,
       T.typname as type_name,
       T.typtype as type_sub_kind,
       T.typcategory as type_category,
       T.typrelid as class_id,
       T.typbasetype as base_type_id,
       case when T.typtype in ('c','e') then null
            else pg_catalog.format_type(T.typbasetype, T.typtypmod) end as type_def,
       T.typndims as dimensions_number,
       T.typdefault as default_expression,
       T.typnotnull as mandatory,
       pg_catalog.pg_get_userbyid(T.typowner) as "owner"
from pg_catalog.pg_type T
         left outer join pg_catalog.pg_class C
             on T.typrelid = C.oid
where T.typnamespace = '{schema}'::regnamespace::oid
  and (T.typtype in ('d','e') or
       C.relkind = 'c'::"char" or
       (T.typtype = 'b' and (T.typelem = 0 OR T.typcategory <> 'A')) or
       T.typtype = 'p' and not T.typisdefined)
order by 1
;;

-- query: datagrip introspection: table listing
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q37; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: table_kind, table_name, table_id, table_state_number, table_with_oids, tablespace_id, options, persistence, ancestors, successors, is_partition, partition_key, partition_expression, am_id, owner
select T.relkind as table_kind,
       T.relname as table_name,
       T.oid as table_id,
       T.xmin as table_state_number,
       false /* T.relhasoids */ as table_with_oids,
       T.reltablespace as tablespace_id,
       T.reloptions as options,
       T.relpersistence as persistence,
       (select pg_catalog.array_agg(inhparent::bigint order by inhseqno)::varchar from pg_catalog.pg_inherits where T.oid = inhrelid) as ancestors,
       (select pg_catalog.array_agg(inhrelid::bigint order by inhrelid)::varchar from pg_catalog.pg_inherits where T.oid = inhparent) as successors,
       T.relispartition /* false */ as is_partition,
       pg_catalog.pg_get_partkeydef(T.oid) /* null */ as partition_key,
       pg_catalog.pg_get_expr(T.relpartbound, T.oid) /* null */ as partition_expression,
       T.relam am_id,
       pg_catalog.pg_get_userbyid(T.relowner) as "owner"
from pg_catalog.pg_class T
where relnamespace = '{schema}'::regnamespace::oid
       and relkind in ('r', 'm', 'v', 'f', 'p')
order by table_kind, table_id
;;

-- query: datagrip introspection: foreign table
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q38; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: table_id, table_server, table_options, owner
select ft.ftrelid as table_id,
       srv.srvname as table_server,
       ft.ftoptions as table_options,
       pg_catalog.pg_get_userbyid(cls.relowner) as "owner"
from pg_catalog.pg_foreign_table ft
     left outer join pg_catalog.pg_foreign_server srv on ft.ftserver = srv.oid
     join pg_catalog.pg_class cls on ft.ftrelid = cls.oid
where cls.relnamespace = '{schema}'::regnamespace::oid
order by table_id
;;

-- query: datagrip introspection: schema arg types
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q39; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: type_id, type_spec
with schema_procs as (select prorettype, proargtypes, proallargtypes
                      from pg_catalog.pg_proc
                      where pronamespace = '{schema}'::regnamespace::oid),
     schema_opers as (select oprleft, oprright, oprresult
                      from pg_catalog.pg_operator
                      where oprnamespace = '{schema}'::regnamespace::oid),
     schema_aggregates as (select A.aggtranstype , A.aggmtranstype
                           from pg_catalog.pg_aggregate A
                           join pg_catalog.pg_proc P
                             on A.aggfnoid = P.oid
                           where P.pronamespace = '{schema}'::regnamespace::oid),
     schema_arg_types as ( select prorettype as type_id
                           from schema_procs
                           union
                           select distinct unnest(proargtypes) as type_id
                           from schema_procs
                           union
                           select distinct unnest(proallargtypes) as type_id
                           from schema_procs
                           union
                           select oprleft as type_id
                           from schema_opers
                           where oprleft is not null
                           union
                           select oprright as type_id
                           from schema_opers
                           where oprright is not null
                           union
                           select oprresult as type_id
                           from schema_opers
                           where oprresult is not null
                           union
                           select aggtranstype::oid as type_id
                           from schema_aggregates
                           union
                           select aggmtranstype::oid as type_id
                           from schema_aggregates

                           )
select type_id, pg_catalog.format_type(type_id, null) as type_spec
from schema_arg_types
where type_id <> 0
;;

-- query: datagrip introspection: routines
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q40; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: lang_oid, r_name, r_id, r_state_number, arg_names, arg_modes, in_arg_types, all_arg_types, arg_defaults, arg_variadic_id, ret_type_id, ret_set, kind, volatile_kind, is_strict, is_security_definer, configuration_parameters, cost, owner, rows, is_leakproof, concurrency_kind, lang
with languages as (select oid as lang_oid, lanname as lang
                   from pg_catalog.pg_language),
     routines as (select proname as r_name,
                         prolang as lang_oid,
                         oid as r_id,
                         xmin as r_state_number,
                         proargnames as arg_names,
                         proargmodes as arg_modes,
                         proargtypes::int[] as in_arg_types,
                         proallargtypes::int[] as all_arg_types,
                         pg_catalog.pg_get_expr(proargdefaults, 0) as arg_defaults,
                         provariadic as arg_variadic_id,
                         prorettype as ret_type_id,
                         proretset as ret_set,
                         prokind /* case when proiswindow then 'w'
                                                when proisagg then 'a'
                                                else 'f'
                                           end */ as kind,
                         provolatile as volatile_kind,
                         proisstrict as is_strict,
                         prosecdef as is_security_definer,
                         proconfig as configuration_parameters,
                         procost as cost,
                         pg_catalog.pg_get_userbyid(proowner) as "owner",
                         prorows as rows ,
                         proleakproof as is_leakproof  ,
                         proparallel as concurrency_kind
                  from pg_catalog.pg_proc
                  where pronamespace = '{schema}'::regnamespace::oid
                    and not (prokind = 'a') /* proisagg */)
select *
from routines natural join languages
;;

-- query: datagrip introspection: aggregates
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q41; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: aggregate_id, state_number, aggregate_name, arg_names, arg_modes, in_arg_types, all_arg_types, transition_function_id, transition_function_name, transition_type, final_function_id, final_function_name, final_return_type, initial_value, sort_operator_id, sort_operator_name, owner, final_extra, state_size, moving_transition_id, moving_transition_name, inverse_transition_id, inverse_transition_name, moving_state_type, moving_state_size, moving_final_id, moving_final_name, moving_final_extra, moving_initial_value, aggregate_kind, direct_args, combine_function_id, combine_function_name, serialization_function_id, serialization_function_name, deserialization_function_id, deserialization_function_name, concurrency_kind
select P.oid as aggregate_id,
       P.xmin as state_number,
       P.proname as aggregate_name,
       P.proargnames as arg_names,
       P.proargmodes as arg_modes,
       P.proargtypes::int[] as in_arg_types,
       P.proallargtypes::int[] as all_arg_types,
       A.aggtransfn::oid as transition_function_id,
       A.aggtransfn::regproc::text as transition_function_name,
       A.aggtranstype as transition_type,
       A.aggfinalfn::oid as final_function_id,
       case when A.aggfinalfn::oid = 0 then null else A.aggfinalfn::regproc::varchar end as final_function_name,
       case when A.aggfinalfn::oid = 0 then 0 else P.prorettype end as final_return_type,
       A.agginitval as initial_value,
       A.aggsortop as sort_operator_id,
       case when A.aggsortop = 0 then null else A.aggsortop::regoper::varchar end as sort_operator_name,
       pg_catalog.pg_get_userbyid(P.proowner) as "owner"
       ,
       A.aggfinalextra as final_extra,
       A.aggtransspace as state_size,
       A.aggmtransfn::oid as moving_transition_id,
       case when A.aggmtransfn::oid = 0 then null else A.aggmtransfn::regproc::varchar end as moving_transition_name,
       A.aggminvtransfn::oid as inverse_transition_id,
       case when A.aggminvtransfn::oid = 0 then null else A.aggminvtransfn::regproc::varchar end as inverse_transition_name,
       A.aggmtranstype::oid as moving_state_type,
       A.aggmtransspace as moving_state_size,
       A.aggmfinalfn::oid as moving_final_id,
       case when A.aggmfinalfn::oid = 0 then null else A.aggmfinalfn::regproc::varchar end as moving_final_name,
       A.aggmfinalextra as moving_final_extra,
       A.aggminitval as moving_initial_value,
       A.aggkind as aggregate_kind,
       A.aggnumdirectargs as direct_args

       ,
       A.aggcombinefn::oid as combine_function_id,
       case when A.aggcombinefn::oid = 0 then null else A.aggcombinefn::regproc::varchar end as combine_function_name,
       A.aggserialfn::oid as serialization_function_id,
       case when A.aggserialfn::oid = 0 then null else A.aggserialfn::regproc::varchar end as serialization_function_name,
       A.aggdeserialfn::oid as deserialization_function_id,
       case when A.aggdeserialfn::oid = 0 then null else A.aggdeserialfn::regproc::varchar end as deserialization_function_name,
       P.proparallel as concurrency_kind

from pg_catalog.pg_aggregate A
     join pg_catalog.pg_proc P
       on A.aggfnoid = P.oid
where P.pronamespace = '{schema}'::regnamespace::oid
order by P.oid
;;

-- query: datagrip introspection: operators
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q42; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: op_id, state_number, op_name, op_kind, arg_left_type_id, arg_right_type_id, arg_result_type_id, main_id, main_name, restrict_id, restrict_name, join_id, join_name, com_id, com_name, neg_id, neg_name, merges, hashes, owner
select O.oid as op_id,
       O.xmin as state_number,
       oprname as op_name,
       oprkind as op_kind,
       oprleft as arg_left_type_id,
       oprright as arg_right_type_id,
       oprresult as arg_result_type_id,
       oprcode::oid as main_id,
       oprcode::varchar as main_name,
       oprrest::oid as restrict_id,
       oprrest::varchar as restrict_name,
       oprjoin::oid as join_id,
       oprjoin::varchar as join_name,
       oprcom::oid as com_id,
       oprcom::regoper::varchar as com_name,
       oprnegate::oid as neg_id,
       oprnegate::regoper::varchar as neg_name,
       oprcanmerge as merges,
       oprcanhash as hashes,
       pg_catalog.pg_get_userbyid(O.oprowner) as "owner"
from pg_catalog.pg_operator O
where oprnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: collation
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q43; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, lc_collate, lc_ctype, owner
select oid as id,
       xmin as state_number,
       collname as name,
       collcollate as lc_collate,
       collctype as lc_ctype,
       pg_catalog.pg_get_userbyid(collowner) as "owner"
from pg_catalog.pg_collation
where collnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: opclass
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q44; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, in_type, key_type, is_default, family_id, family, access_method_id, owner
select O.oid as id,
       O.xmin as state_number,
       opcname as name,
       opcintype::regtype::varchar as in_type,
       case when opckeytype = 0 then null else opckeytype::regtype::varchar end as key_type,
       opcdefault as is_default,
       opcfamily as family_id,
       opfname as family,
       opcmethod as access_method_id,
       pg_catalog.pg_get_userbyid(O.opcowner) as "owner"
from pg_catalog.pg_opclass O
     join pg_catalog.pg_opfamily F on F.oid = opcfamily
where opcnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: opfamily
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q45; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, name, access_method_id, owner
select O.oid as id,
       O.xmin as state_number,
       opfname as name,
       opfmethod as access_method_id,
       pg_catalog.pg_get_userbyid(O.opfowner) as "owner"
from pg_catalog.pg_opfamily O
where opfnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: amop oids
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q46; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid
select pg_amop.oid
from pg_catalog.pg_amop
         join pg_catalog.pg_opfamily on pg_opfamily.oid = amopfamily
where opfnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: amop details
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q47; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, strategy, op_id, op_sig, sort_family_id, sort_family, family_id, class_id
select O.oid as id,
       O.amopstrategy as strategy,
       O.amopopr as op_id,
       O.amopopr::regoperator::varchar as op_sig,
       O.amopsortfamily /* null */ as sort_family_id,
       SF.opfname /* null */ as sort_family,
       O.amopfamily as family_id,
       C.oid as class_id
from pg_catalog.pg_amop O
     left join pg_opfamily F on O.amopfamily = F.oid
     left join pg_opfamily SF on O.amopsortfamily = SF.oid
     left join pg_depend D on D.classid = 'pg_amop'::regclass and O.oid = D.objid and D.objsubid = 0
     left join pg_opclass C on D.refclassid = 'pg_opclass'::regclass and C.oid = D.refobjid and D.refobjsubid = 0
where C.opcnamespace = '{schema}'::regnamespace::oid or C.opcnamespace is null and F.opfnamespace = '{schema}'::regnamespace::oid
order by C.oid, F.oid
;;

-- query: datagrip introspection: amproc oids
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q48; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid
select pg_amproc.oid
from pg_catalog.pg_amproc
         join pg_catalog.pg_opfamily on pg_opfamily.oid = amprocfamily
where opfnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: amproc details
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q49; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, num, proc_id, proc_sig, left_type, right_type, family_id, class_id
select P.oid as id,
       P.amprocnum as num,
       P.amproc::oid as proc_id,
       P.amproc::regprocedure::varchar as proc_sig,
       P.amproclefttype::regtype::varchar as left_type,
       P.amprocrighttype::regtype::varchar as right_type,
       P.amprocfamily as family_id,
       C.oid as class_id
from pg_catalog.pg_amproc P
     left join pg_opfamily F on P.amprocfamily = F.oid
     left join pg_depend D on D.classid = 'pg_amproc'::regclass and P.oid = D.objid and D.objsubid = 0
     left join pg_opclass C on D.refclassid = 'pg_opclass'::regclass and C.oid = D.refobjid and D.refobjsubid = 0
where C.opcnamespace = '{schema}'::regnamespace::oid or C.opcnamespace is null and F.opfnamespace = '{schema}'::regnamespace::oid
order by C.oid, F.oid
;;

-- query: datagrip introspection: index oids
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q50; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: indexrelid
select IX.indexrelid
from pg_catalog.pg_index IX,
     pg_catalog.pg_class IC
where IC.oid = IX.indrelid
  and IC.relnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: index head
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q51; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: table_id, table_kind, index_name, index_id, state_number, is_unique, is_primary, nulls_not_distinct, condition, ancestors, tablespace_id, access_method_id
select tab.oid               table_id,
       tab.relkind           table_kind,
       ind_stor.relname      index_name,
       ind_head.indexrelid   index_id,
       ind_stor.xmin         state_number,
       ind_head.indisunique  is_unique,
       ind_head.indisprimary is_primary,
       ind_head.indnullsnotdistinct /* false */ nulls_not_distinct,
       pg_catalog.pg_get_expr(ind_head.indpred, ind_head.indrelid) as condition,
       (select pg_catalog.array_agg(inhparent::bigint order by inhseqno)::varchar from pg_catalog.pg_inherits where ind_stor.oid = inhrelid) as ancestors,
       ind_stor.reltablespace tablespace_id,
       opcmethod as access_method_id
from pg_catalog.pg_class tab
         join pg_catalog.pg_index ind_head
              on ind_head.indrelid = tab.oid
         join pg_catalog.pg_class ind_stor
              on tab.relnamespace = ind_stor.relnamespace and ind_stor.oid = ind_head.indexrelid
         left join pg_catalog.pg_opclass on pg_opclass.oid = ANY(indclass)
where tab.relnamespace = '{schema}'::regnamespace::oid
        and tab.relkind in ('r', 'm', 'v', 'p')
        and ind_stor.relkind in ('i', 'I')
;;

-- query: datagrip introspection: index columns
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q52; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: index_id, col_idx, in_key, column_position, column_options, collation, collation_schema, collation_str, opclass, opclass_schema, opclass_str, expression, can_order
select ind_head.indexrelid index_id,
       k col_idx,
       k <= indnkeyatts /* true */ in_key,
       ind_head.indkey[k-1] column_position,
       ind_head.indoption[k-1] column_options,
       ind_head.indcollation[k-1] /* null */ as collation,
       colln.nspname /* null */ as collation_schema,
       collname /* null */ as collation_str,
       ind_head.indclass[k-1] as opclass,
       case when opcdefault then null else opcn.nspname end as opclass_schema,
       case when opcdefault then null else opcname end as opclass_str,
       case
           when indexprs is null then null
           when ind_head.indkey[k-1] = 0 then chr(27) || pg_catalog.pg_get_indexdef(ind_head.indexrelid, k::int, true)
           else pg_catalog.pg_get_indexdef(ind_head.indexrelid, k::int, true)
       end as expression,
       amcanorder can_order
from pg_catalog.pg_index /* (select *, pg_catalog.generate_subscripts(indkey::int[], 1) + 1 k from pg_catalog.pg_index) */ ind_head
         join pg_catalog.pg_class ind_stor
              on ind_stor.oid = ind_head.indexrelid
cross join unnest(ind_head.indkey) with ordinality u(u, k)
left join pg_catalog.pg_collation
on pg_collation.oid = ind_head.indcollation[k-1]
left join pg_catalog.pg_namespace colln on collnamespace = colln.oid
cross join pg_catalog.pg_indexam_has_property(ind_stor.relam, 'can_order') amcanorder
         left join pg_catalog.pg_opclass
                   on pg_opclass.oid = ind_head.indclass[k-1]
         left join pg_catalog.pg_namespace opcn on opcnamespace = opcn.oid
where ind_stor.relnamespace = '{schema}'::regnamespace::oid
  and ind_stor.relkind in ('i', 'I')
order by index_id, k
;;

-- query: datagrip introspection: constraint oids
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q53; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid
select oid
from pg_catalog.pg_constraint
where conrelid != 0 and connamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: constraint details
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q54; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: table_id, table_kind, con_id, con_state_id, con_name, con_kind, con_columns, index_id, ref_table_id, is_deferrable, is_init_deferred, on_update, on_delete, no_inherit, con_expression, ref_columns, excl_operators, excl_operators_str
select T.oid table_id,
       relkind table_kind,
       C.oid::bigint con_id,
       C.xmin::varchar::bigint con_state_id,
       conname con_name,
       contype con_kind,
       conkey con_columns,
       conindid index_id,
       confrelid ref_table_id,
       condeferrable is_deferrable,
       condeferred is_init_deferred,
       confupdtype on_update,
       confdeltype on_delete,
       connoinherit no_inherit,
       pg_catalog.pg_get_expr(conbin, T.oid) /* consrc */ con_expression,
       confkey ref_columns,
       conexclop::int[] excl_operators,
       array(select unnest::regoper::varchar from unnest(conexclop)) excl_operators_str
from pg_catalog.pg_constraint C
         join pg_catalog.pg_class T
              on C.conrelid = T.oid
where relkind in ('r', 'v', 'f', 'p')
  and relnamespace = '{schema}'::regnamespace::oid
  and contype in ('p', 'u', 'f', 'c', 'x')
  and connamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: rewrite oids
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q55; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid
select RU.oid
from pg_catalog.pg_rewrite RU,
     pg_catalog.pg_class RC
where RC.oid = RU.ev_class
  and RC.relnamespace = '{schema}'::regnamespace::oid
  and not RU.rulename = '_RETURN'
;;

-- query: datagrip introspection: policy oids
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q56; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid
select P.oid
from pg_catalog.pg_policy P
     join pg_catalog.pg_class C on polrelid = C.oid
where relnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: policy details
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q57; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, state_number, policyname, table_id, permissive, roles, cmd, qual, with_check
select
       P.oid id,
       P.xmin as state_number,
       polname policyname,
       polrelid table_id,
       polpermissive /* true */ as permissive,
       polroles roles,
       polcmd cmd,
       pg_get_expr(polqual, polrelid) qual,
       pg_get_expr(polwithcheck, polrelid) with_check
from pg_catalog.pg_policy P
       join pg_catalog.pg_class C on polrelid = C.oid
where relnamespace = '{schema}'::regnamespace::oid
order by polrelid
;;

-- query: datagrip introspection: trigger oids
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q58; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: oid
select TG.oid
from pg_catalog.pg_trigger TG,
     pg_catalog.pg_class TC
where TC.oid = TG.tgrelid
  and TC.relnamespace = '{schema}'::regnamespace::oid
;;

-- query: datagrip introspection: desc objects
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q59; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, sub_ids
select D.objoid id, pg_catalog.array_agg(D.objsubid) sub_ids
from pg_catalog.pg_description D
  join pg_catalog.pg_class C on D.objoid = C.oid
where C.relnamespace = '{schema}'::regnamespace::oid and C.relkind != 'c' and D.classoid = 'pg_catalog.pg_class'::regclass
group by D.objoid
union all
select T.oid id, pg_catalog.array_agg(D.objsubid)
from pg_catalog.pg_description D
  join pg_catalog.pg_type T on T.oid = D.objoid or T.typrelid = D.objoid
  left join pg_catalog.pg_class C on T.typrelid = C.oid
where T.typnamespace = '{schema}'::regnamespace::oid and (C.relkind = 'c' or C.relkind is null)
group by T.oid
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_constraint C on D.objoid = C.oid
where C.connamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_constraint'::regclass
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_trigger T on T.oid = D.objoid
  join pg_catalog.pg_class C on C.oid = T.tgrelid
where C.relnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_trigger'::regclass
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_rewrite R on R.oid = D.objoid
  join pg_catalog.pg_class C on C.oid = R.ev_class
where C.relnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_rewrite'::regclass
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_proc P on P.oid = D.objoid
where P.pronamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_proc'::regclass
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_operator O on O.oid = D.objoid
where O.oprnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_operator'::regclass
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_opclass O on O.oid = D.objoid
where O.opcnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_opclass'::regclass
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_opfamily O on O.oid = D.objoid
where O.opfnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_opfamily'::regclass
union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_collation C on C.oid = D.objoid
where C.collnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_collation'::regclass

union all
select D.objoid id, array[D.objsubid]
from pg_catalog.pg_description D
  join pg_catalog.pg_policy P on P.oid = D.objoid
  join pg_catalog.pg_class C on P.polrelid = C.oid
where C.relnamespace = '{schema}'::regnamespace::oid  and D.classoid = 'pg_catalog.pg_policy'::regclass
;;

-- query: datagrip introspection: desc details
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q60; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, kind, sub_id, description
select D.objoid id, C.relkind::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_class C on D.objoid = C.oid
where C.relnamespace = '{schema}'::regnamespace::oid and C.relkind != 'c' and D.classoid = 'pg_catalog.pg_class'::regclass
union all
select T.oid id, 'T'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_type T on T.oid = D.objoid or T.typrelid = D.objoid
  left join pg_catalog.pg_class C on T.typrelid = C.oid
where T.typnamespace = '{schema}'::regnamespace::oid and (C.relkind = 'c' or C.relkind is null)
union all
select D.objoid id, pg_catalog.translate(C.contype, 'pufc', 'kkxz')::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_constraint C on D.objoid = C.oid
where C.connamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_constraint'::regclass
union all
select D.objoid id, 't'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_trigger T on T.oid = D.objoid
  join pg_catalog.pg_class C on C.oid = T.tgrelid
where C.relnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_trigger'::regclass
union all
select D.objoid id, 'R'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_rewrite R on R.oid = D.objoid
  join pg_catalog.pg_class C on C.oid = R.ev_class
where C.relnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_rewrite'::regclass
union all
select D.objoid id, 'F'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_proc P on P.oid = D.objoid
where P.pronamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_proc'::regclass
union all
select D.objoid id, 'O'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_operator O on O.oid = D.objoid
where O.oprnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_operator'::regclass
union all
select D.objoid id, 'f'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_opfamily O on O.oid = D.objoid
where O.opfnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_opfamily'::regclass
union all
select D.objoid id, 'c'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_opclass O on O.oid = D.objoid
where O.opcnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_opclass'::regclass
  union all
select D.objoid id, 'C'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
  join pg_catalog.pg_collation C on C.oid = D.objoid
where C.collnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_collation'::regclass

  union all
select D.objoid id, 'P'::char as kind, D.objsubid sub_id, D.description
from pg_catalog.pg_description D
       join pg_catalog.pg_policy P on P.oid = D.objoid
       join pg_catalog.pg_class C on P.polrelid = C.oid
where C.relnamespace = '{schema}'::regnamespace::oid and D.classoid = 'pg_catalog.pg_policy'::regclass
;;

-- query: datagrip introspection: acl with xid
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q61; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: object_id, acl
select T.oid as object_id,
                 T.relacl as acl
          from pg_catalog.pg_class T
          where relnamespace = '{schema}'::regnamespace::oid
            and pg_catalog.age(T.xmin) <= pg_catalog.age('0'::varchar::xid)
          union all
          select T.oid as object_id,
                 T.proacl as acl
          from pg_catalog.pg_proc T
          where pronamespace = '{schema}'::regnamespace::oid
            and pg_catalog.age(T.xmin) <= pg_catalog.age('0'::varchar::xid)
          union all
          select T.oid as object_id,
                 T.typacl as acl
          from pg_catalog.pg_type T
          where typnamespace = '{schema}'::regnamespace::oid
            and pg_catalog.age(T.xmin) <= pg_catalog.age('0'::varchar::xid)
          order by object_id
;;

-- query: datagrip introspection: attr acl
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q62; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: object_id, attr_position, acl
select T.oid as object_id,
               A.attnum as attr_position,
               A.attacl as acl
        from pg_catalog.pg_attribute A join pg_catalog.pg_class T on T.oid = A.attrelid
        where relnamespace = '{schema}'::regnamespace::oid
          and attnum > 0
          and pg_catalog.age(A.xmin) <= pg_catalog.age('0'::varchar::xid)
        order by object_id, attr_position
;;

-- query: datagrip introspection: depend seq
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q63; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: dependent_id, owner_id, owner_subobject_id
select D.objid as dependent_id,
       D.refobjid as owner_id,
       D.refobjsubid as owner_subobject_id
from pg_depend D
  join pg_class C_SEQ on D.objid    = C_SEQ.oid and D.classid    = 'pg_class'::regclass::oid
  join pg_class C_TAB on D.refobjid = C_TAB.oid and D.refclassid = 'pg_class'::regclass::oid
where C_SEQ.relkind = 'S'
  and C_TAB.relkind = 'r'
  and D.refobjsubid <> 0
  and (D.deptype = 'a' or D.deptype = 'i')
  and C_TAB.relnamespace = '{schema}'::regnamespace::oid
order by owner_id
;;

-- query: datagrip introspection: viewdef
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q64; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: view_kind, view_id, source_text
select T.relkind as view_kind,
       T.oid as view_id,
       pg_catalog.pg_get_viewdef(T.oid, true) as source_text
from pg_catalog.pg_class T
     join pg_catalog.pg_namespace N on T.relnamespace = N.oid
where N.oid = '{schema}'::regnamespace::oid
  and T.relkind in ('m','v')
  and (pg_catalog.age(T.xmin) <= coalesce(nullif(greatest(pg_catalog.age('0'::varchar::xid), -1), -1), 2147483647) or exists(
  select A.attrelid from pg_catalog.pg_attribute A where A.attrelid = T.oid and pg_catalog.age(A.xmin) <= coalesce(nullif(greatest(pg_catalog.age('0'::varchar::xid), -1), -1), 2147483647)))
;;

-- query: datagrip introspection: function source
-- source: lhgravendeel/memgres memgres-core/src/test/java/com/memgres/client/ClientDbLog5CompareTest.java (Q65; a DataGrip introspection session transcribed from a PostgreSQL 18 server log, bound OIDs inlined)
-- reads: id, arguments_def, result_def, sqlbody_def, source_text
with system_languages as ( select oid as lang
                           from pg_catalog.pg_language
                           where lanname in ('c','internal') )
select oid as id,
       pg_catalog.pg_get_function_arguments(oid) as arguments_def,
       pg_catalog.pg_get_function_result(oid) as result_def,
       pg_catalog.pg_get_function_sqlbody(oid) /* null */ as sqlbody_def,
       prosrc as source_text
from pg_catalog.pg_proc
where pronamespace = '{schema}'::regnamespace::oid
  and not (prokind = 'a') /* proisagg */
  and prolang not in (select lang from system_languages)
  and prosrc is not null
;;
