-- DBeaver (PostgreSQL plugin, over pgjdbc): connect, read schemas, tables, columns,
-- constraints, indexes, open a table (Data tab, row count).
-- Connect queries: DBeaver 25.1.5 as logged by a PostgreSQL server (datafusion-postgres
-- issue #135 / tests/dbeaver.rs). Navigator queries: DBeaver's source (dbeaver/dbeaver,
-- snapshot of 2024-10-24), PostgreSchema.java caches, at server version >= 10.
-- DBeaver binds the schema / table OID as a bigint parameter (c.relnamespace=$1,
-- c.oid=$1); since an OID is not portable, that parameter is written in place as
-- '{schema}'::regnamespace or '{schema}.{table}'::regclass. pgjdbc's type lookups keep
-- their $1 (type OID 1034, aclitem[], the same on every server).
-- Placeholders: {schema}, {table} (a table with primary key id), {database}, {user}.
-- Format: each block is  -- query / -- source / -- reads [/ -- params]  then the SQL, ended by a line ';;'.
-- 'reads' lists the result columns in order, as PostgreSQL 15 names them.

-- query: dbeaver connect: float digits (pgjdbc)
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads:
SET extra_float_digits = 3
;;

-- query: dbeaver connect: application name (pgjdbc)
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads:
SET application_name = 'PostgreSQL JDBC Driver'
;;

-- query: dbeaver connect: application name (DBeaver)
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads:
SET application_name = 'DBeaver 25.1.5 - Main <postgres>'
;;

-- query: dbeaver connect: current schema and user
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: current_schema, session_user
SELECT current_schema(),session_user
;;

-- query: dbeaver connect / read schemas: namespaces with comments
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: oid, oid, nspname, nspowner, nspacl, description
SELECT n.oid,n.*,d.description FROM pg_catalog.pg_namespace n
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=n.oid AND d.objsubid=0 AND d.classoid='pg_namespace'::regclass
 ORDER BY nspname
;;

-- query: dbeaver connect: pgjdbc type lookup for a result column of type aclitem[] (oid 1034)
-- source: pgjdbc/pgjdbc pgjdbc/src/main/java/org/postgresql/jdbc/TypeInfoCache.java (bundled pgjdbc), as in DBeaver 25.1.5's log (datafusion-postgres issue #135)
-- reads: ?column?, nspname, typname
-- params: 1034
SELECT n.nspname = ANY(current_schemas(true)), n.nspname, t.typname FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON t.typnamespace = n.oid WHERE t.oid = $1
;;

-- query: dbeaver connect: pgjdbc array-type check for oid 1034
-- source: pgjdbc/pgjdbc pgjdbc/src/main/java/org/postgresql/jdbc/TypeInfoCache.java (bundled pgjdbc), as in DBeaver 25.1.5's log (datafusion-postgres issue #135)
-- reads: is_array, typtype, typname, oid
-- params: 1034
SELECT typinput='pg_catalog.array_in'::regproc as is_array, typtype, typname, pg_type.oid   FROM pg_catalog.pg_type   LEFT JOIN (select ns.oid as nspoid, ns.nspname, r.r           from pg_namespace as ns           join ( select s.r, (current_schemas(false))[s.r] as nspname                    from generate_series(1, array_upper(current_schemas(false), 1)) as s(r) ) as r          using ( nspname )        ) as sp     ON sp.nspoid = typnamespace  WHERE pg_type.oid = $1  ORDER BY sp.r, pg_type.oid DESC
;;

-- query: dbeaver connect: search_path
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: search_path
SHOW search_path
;;

-- query: dbeaver connect: the connected database
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: oid, oid, datname, datdba, encoding, datlocprovider, datistemplate, datallowconn, datconnlimit, datfrozenxid, datminmxid, dattablespace, datcollate, datctype, daticulocale, datcollversion, datacl
SELECT db.oid,db.* FROM pg_catalog.pg_database db WHERE datname='{database}'
;;

-- query: dbeaver connect: standard_conforming_strings
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: name, setting, unit, category, short_desc, extra_desc, context, vartype, source, min_val, max_val, enumvals, boot_val, reset_val, sourcefile, sourceline, pending_restart
SELECT * FROM pg_catalog.pg_settings where name='standard_conforming_strings'
;;

-- query: dbeaver connect: SQL keywords (pgjdbc 42.7 getSQLKeywords)
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: string_agg
SELECT string_agg(word, ',' ) from pg_catalog.pg_get_keywords() where word <> ALL ('{a,abs,absolute,action,ada,add,admin,after,all,allocate,alter,aIways,and,any,are,array,as,asc,asenstitive,assertion,assignment,asymmetric,at,atomic,attribute,attributes,authorization,avg,before,begin,bernoulli,between,bigint,binary,blob,boolean,both,breaadth,by,c,call,called,cardinaliity,cascade,cascaded,case,cast,catalog,catalog_name,ceil,ceiling,chain,char,char_length,character,character_length,character_set_catalog,character_set_name,character_set_schema,characteristics,characters,check,checkeed,class_origin,clob,close,coalesce,coboI,code_units,collate,collation,collaition_catalog,collaition_name,collaition_schema,collect,colum,column_name,command_function,command_function_code,commit,committed,condiition,condiition_number,connect,connection_name,constraint,constraint_catalog,constraint_name,constraint_schema,constraints,constructors,contains,continue,convert,corr,correspondiing,count,covar_pop,covar_samp,create,cross,cube,cume_dist,current,current_collation,current_date,current_default_transfom_group,current_path,current_role,current_time,current_timestamp,current_transfom_group_for_type,current_user,cursor,cursor_name,cycle,data,date,datetime_interval_code,datetime_interval_precision,day,deallocate,dec,decimaI,declare,default,defaults,not,null,nullable,nullif,nulls,number,numeric,object,octeet_length,octets,of,old,on,only,open,option,options,or,order,ordering,ordinaliity,others,out,outer,output,over,overlaps,overlay,overriding,pad,parameter,parameter_mode,parameter_name,parameter_ordinal_position,parameter_speciific_catalog,parameter_speciific_name,parameter_speciific_schema,partiaI,partitioon,pascal,path,percent_rank,percentile_cont,percentile_disc,placing,pli,position,power,preceding,precision,prepare,preseerv,primary,prior,privileges,procedure,public,range,rank,read,reads,real,recursivve,ref,references,referencing,regr_avgx,regr_avgy,regr_count,regr_intercept,regr_r2,regr_slope,regr_sxx,regr_sxy,regr_sy y,relative,release,repeatable,restart,result,retun,returned_cardinality,returned_length,returned_octeet_length,returned_sqlstate,returns,revoe,right,role,rollback,rollup,routine,routine_catalog,routine_name,routine_schema,row,row_count,row_number,rows,savepoint,scale,schema,schema_name,scope_catalog,scope_name,scope_schema,scroll,search,second,section,security,select,self,sensitive,sequence,seriializeable,server_name,session,session_user,set,sets,similar,simple,size,smalIint,some,source,space,specifiic,speciific_name,speciifictype,sql,sqlexception,sqlstate,sqlwarning,sqrt,start,state,statement,static,stddev_pop,stddev_samp,structure,style,subclass_origin,submultiset,substring,sum,symmetric,system,system_user,table,table_name,tablesample,temporary,then,ties,time,timesamp,timezone_hour,timezone_minute,to,top_level_count,trailing,transaction,transaction_active,transactions_committed,transactions_rolled_back,transfor,transforms,translate,translation,treat,trigger,trigger_catalog,trigger_name,trigger_schema,trim,true,type,unbounde,undefined,uncommitted,under,union,unique,unknown,unnaamed,unnest,update,upper,usage,user,user_defined_type_catalog,user_defined_type_code,user_defined_type_name,user_defined_type_schema,using,value,values,var_pop,var_samp,varchar,varying,view,when,whenever,where,width_bucket,window,with,within,without,work,write,year,zone}'::text[])
;;

-- query: dbeaver connect: server version
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: version
SELECT version()
;;

-- query: dbeaver connect: probe pg_enum
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs; SQL built in dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/../PostgreUtils.java
-- reads: oid, enumtypid, enumsortorder, enumlabel
SELECT * FROM pg_catalog.pg_enum WHERE 1<>1 LIMIT 1
;;

-- query: dbeaver connect: probe pg_class.reltype
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs; SQL built in dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/../PostgreUtils.java
-- reads: reltype
SELECT reltype FROM pg_catalog.pg_class WHERE 1<>1 LIMIT 1
;;

-- query: dbeaver connect: data types
-- source: datafusion-contrib/datafusion-postgres issue #135 (PostgreSQL server log of DBeaver 25.1.5 connecting) and datafusion-postgres/tests/dbeaver.rs
-- reads: oid, oid, typname, typnamespace, typowner, typlen, typbyval, typtype, typcategory, typispreferred, typisdefined, typdelim, typrelid, typsubscript, typelem, typarray, typinput, typoutput, typreceive, typsend, typmodin, typmodout, typanalyze, typalign, typstorage, typnotnull, typbasetype, typtypmod, typndims, typcollation, typdefaultbin, typdefault, typacl, relkind, base_type_name, description
SELECT t.oid,t.*,c.relkind,format_type(nullif(t.typbasetype, 0), t.typtypmod) as base_type_name, d.description FROM pg_catalog.pg_type t LEFT OUTER JOIN pg_catalog.pg_type et ON et.oid=t.typelem LEFT OUTER JOIN pg_catalog.pg_class c ON c.oid=t.typrelid LEFT OUTER JOIN pg_catalog.pg_description d ON t.oid=d.objoid WHERE t.typname IS NOT NULL AND (c.relkind IS NULL OR c.relkind = 'c') AND (et.typcategory IS NULL OR et.typcategory <> 'C')
;;

-- query: dbeaver read database comment
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreDatabase.java; text as logged in dbeaver/dbeaver issue #35810
-- reads: description
select description from pg_shdescription join pg_database on objoid = pg_database.oid where datname = '{database}'
;;

-- query: dbeaver read tables of {schema} (TableCache)
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java
-- reads: oid, oid, relname, relnamespace, reltype, reloftype, relowner, relam, relfilenode, reltablespace, relpages, reltuples, relallvisible, reltoastrelid, relhasindex, relisshared, relpersistence, relkind, relnatts, relchecks, relhasrules, relhastriggers, relhassubclass, relrowsecurity, relforcerowsecurity, relispopulated, relreplident, relispartition, relrewrite, relfrozenxid, relminmxid, relacl, reloptions, relpartbound, description, partition_expr, partition_key
SELECT c.oid,c.*,d.description,pg_catalog.pg_get_expr(c.relpartbound, c.oid) as partition_expr,  pg_catalog.pg_get_partkeydef(c.oid) as partition_key
FROM pg_catalog.pg_class c
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_class'::regclass
WHERE c.relnamespace='{schema}'::regnamespace AND c.relkind not in ('i','I','c')
;;

-- query: dbeaver read table inheritance in {schema}
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java
-- reads: relid, parent_ns, parent_oid, inhseqno
SELECT i.inhrelid relid, pc.relnamespace parent_ns, pc.oid parent_oid, i.inhseqno
FROM pg_catalog.pg_inherits i, pg_class rc, pg_class pc
WHERE rc.oid=i.inhrelid AND rc.relnamespace='{schema}'::regnamespace AND pc.oid=i.inhparent
;;

-- query: dbeaver read relation sizes in {schema}
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java
-- reads: oid, total_rel_size, rel_size
select c.oid,pg_catalog.pg_total_relation_size(c.oid) as total_rel_size,pg_catalog.pg_relation_size(c.oid) as rel_size
FROM pg_class c
WHERE c.relnamespace='{schema}'::regnamespace
;;

-- query: dbeaver read columns of {table}
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java; text as logged in dbeaver/dbeaver issue #35810
-- reads: relname, attrelid, attname, atttypid, attstattarget, attlen, attnum, attndims, attcacheoff, atttypmod, attbyval, attalign, attstorage, attcompression, attnotnull, atthasdef, atthasmissing, attidentity, attgenerated, attisdropped, attislocal, attinhcount, attcollation, attacl, attoptions, attfdwoptions, attmissingval, def_value, description, objid
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description,dep.objid
FROM pg_catalog.pg_attribute a
INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)
LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)
LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)
LEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid
WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.oid='{schema}.{table}'::regclass
ORDER BY a.attnum
;;

-- query: dbeaver read columns of all tables of {schema}
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java
-- reads: relname, attrelid, attname, atttypid, attstattarget, attlen, attnum, attndims, attcacheoff, atttypmod, attbyval, attalign, attstorage, attcompression, attnotnull, atthasdef, atthasmissing, attidentity, attgenerated, attisdropped, attislocal, attinhcount, attcollation, attacl, attoptions, attfdwoptions, attmissingval, def_value, description, objid
SELECT c.relname,a.*,pg_catalog.pg_get_expr(ad.adbin, ad.adrelid, true) as def_value,dsc.description,dep.objid
FROM pg_catalog.pg_attribute a
INNER JOIN pg_catalog.pg_class c ON (a.attrelid=c.oid)
LEFT OUTER JOIN pg_catalog.pg_attrdef ad ON (a.attrelid=ad.adrelid AND a.attnum = ad.adnum)
LEFT OUTER JOIN pg_catalog.pg_description dsc ON (c.oid=dsc.objoid AND a.attnum = dsc.objsubid)
LEFT OUTER JOIN pg_depend dep on dep.refobjid = a.attrelid AND dep.deptype = 'i' and dep.refobjsubid = a.attnum and dep.classid = dep.refclassid
WHERE NOT a.attisdropped AND c.relkind not in ('i','I','c') AND c.relnamespace='{schema}'::regnamespace
ORDER BY a.attnum
;;

-- query: dbeaver read constraints of {table} (primary key, unique, check, foreign keys)
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java (ConstraintCache)
-- reads: oid, oid, conname, connamespace, contype, condeferrable, condeferred, convalidated, conrelid, contypid, conindid, conparentid, confrelid, confupdtype, confdeltype, confmatchtype, conislocal, coninhcount, connoinherit, conkey, confkey, conpfeqop, conppeqop, conffeqop, confdelsetcols, conexclop, conbin, tabrelname, refnamespace, description, consrc_copy
SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description, case when c.contype='c' then "substring"(pg_get_constraintdef(c.oid), 7) else null end consrc_copy
FROM pg_catalog.pg_constraint c
INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid
LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_constraint'::regclass
WHERE c.conrelid='{schema}.{table}'::regclass
ORDER BY c.oid
;;

-- query: dbeaver read constraints of all tables of {schema}
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java (ConstraintCache)
-- reads: oid, oid, conname, connamespace, contype, condeferrable, condeferred, convalidated, conrelid, contypid, conindid, conparentid, confrelid, confupdtype, confdeltype, confmatchtype, conislocal, coninhcount, connoinherit, conkey, confkey, conpfeqop, conppeqop, conffeqop, confdelsetcols, conexclop, conbin, tabrelname, refnamespace, description, consrc_copy
SELECT c.oid,c.*,t.relname as tabrelname,rt.relnamespace as refnamespace,d.description, case when c.contype='c' then "substring"(pg_get_constraintdef(c.oid), 7) else null end consrc_copy
FROM pg_catalog.pg_constraint c
INNER JOIN pg_catalog.pg_class t ON t.oid=c.conrelid
LEFT OUTER JOIN pg_catalog.pg_class rt ON rt.oid=c.confrelid
LEFT OUTER JOIN pg_catalog.pg_description d ON d.objoid=c.oid AND d.objsubid=0 AND d.classoid='pg_constraint'::regclass
WHERE t.relnamespace='{schema}'::regnamespace
ORDER BY c.oid
;;

-- query: dbeaver read indexes of {table}
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java (IndexCache)
-- reads: indexrelid, indrelid, indnatts, indnkeyatts, indisunique, indnullsnotdistinct, indisprimary, indisexclusion, indimmediate, indisclustered, indisvalid, indcheckxmin, indisready, indislive, indisreplident, indkey, indcollation, indclass, indoption, indexprs, indpred, keys, relname, relnamespace, relam, reltablespace, tabrelname, description, pred_expr, expr, index_rel_size, index_num_scans
SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,tc.relname as tabrelname,dsc.description,pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr,pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr,pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size,pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans
FROM pg_catalog.pg_index i
INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid
INNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid
LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid
WHERE  i.indrelid='{schema}.{table}'::regclass ORDER BY c.relname
;;

-- query: dbeaver read indexes of all tables of {schema}
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.ext.postgresql/src/org/jkiss/dbeaver/ext/postgresql/model/PostgreSchema.java (IndexCache)
-- reads: indexrelid, indrelid, indnatts, indnkeyatts, indisunique, indnullsnotdistinct, indisprimary, indisexclusion, indimmediate, indisclustered, indisvalid, indcheckxmin, indisready, indislive, indisreplident, indkey, indcollation, indclass, indoption, indexprs, indpred, keys, relname, relnamespace, relam, reltablespace, tabrelname, description, pred_expr, expr, index_rel_size, index_num_scans
SELECT i.*,i.indkey as keys,c.relname,c.relnamespace,c.relam,c.reltablespace,tc.relname as tabrelname,dsc.description,pg_catalog.pg_get_expr(i.indpred, i.indrelid) as pred_expr,pg_catalog.pg_get_expr(i.indexprs, i.indrelid, true) as expr,pg_catalog.pg_relation_size(i.indexrelid) as index_rel_size,pg_catalog.pg_stat_get_numscans(i.indexrelid) as index_num_scans
FROM pg_catalog.pg_index i
INNER JOIN pg_catalog.pg_class c ON c.oid=i.indexrelid
INNER JOIN pg_catalog.pg_class tc ON tc.oid=i.indrelid
LEFT OUTER JOIN pg_catalog.pg_description dsc ON i.indexrelid=dsc.objoid
WHERE  c.relnamespace='{schema}'::regnamespace ORDER BY c.relname
;;

-- query: dbeaver open a table: Data tab (setMaxRows 200)
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.model.jdbc/src/org/jkiss/dbeaver/model/impl/jdbc/struct/JDBCTable.java (readData / countData); 'SELECT x.* FROM public.patient_visits x' seen in dbeaver/dbeaver issue #35810
-- reads: id, amount, name, created
SELECT x.* FROM {schema}.{table} x
;;

-- query: dbeaver open a table: row count (Calculate total row count)
-- source: dbeaver/dbeaver plugins/org.jkiss.dbeaver.model.jdbc/src/org/jkiss/dbeaver/model/impl/jdbc/struct/JDBCTable.java (readData / countData); 'SELECT x.* FROM public.patient_visits x' seen in dbeaver/dbeaver issue #35810
-- reads: count
SELECT COUNT(*) FROM {schema}.{table}
;;

-- query: dbeaver open a table: pgjdbc 42.7 ResultSetMetaData column origins of the Data tab's result
-- source: pgjdbc/pgjdbc pgjdbc/src/main/java/org/postgresql/jdbc/PgResultSetMetaData.java (42.7 text as in the Metabase capture, see metabase.sql), attnums 1-4 of {table}
-- reads: oid, attnum, attname, relname, nspname, ?column?, ?column?
SELECT c.oid, a.attnum, a.attname, c.relname, n.nspname, a.attnotnull OR (t.typtype = 'd' AND t.typnotnull), a.attidentity != '' OR pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE '%nextval(%' FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON (c.relnamespace = n.oid) JOIN pg_catalog.pg_attribute a ON (c.oid = a.attrelid) JOIN pg_catalog.pg_type t ON (a.atttypid = t.oid) LEFT JOIN pg_catalog.pg_attrdef d ON (d.adrelid = a.attrelid AND d.adnum = a.attnum) JOIN (SELECT '{schema}.{table}'::regclass::oid AS oid , 1 AS attnum UNION ALL SELECT '{schema}.{table}'::regclass::oid, 2 UNION ALL SELECT '{schema}.{table}'::regclass::oid, 3 UNION ALL SELECT '{schema}.{table}'::regclass::oid, 4) vals ON (c.oid = vals.oid AND a.attnum = vals.attnum) where c.oid in ('{schema}.{table}'::regclass::oid)
;;
