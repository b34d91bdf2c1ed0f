//! PostgreSQL's system catalogs (`pg_catalog`) and `information_schema`,
//! answering for pgaccel's datasets the way PostgreSQL answers for its
//! tables, so psql's `\d`, ORMs' inspectors, JDBC `DatabaseMetaData` and BI
//! tools see every dataset with its columns, types and modifiers, `NOT
//! NULL`, primary key (as a `<table>_pkey` index and constraint) and
//! comment.
//!
//! The catalogs of PostgreSQL's own objects (types, functions, operators,
//! system relations) are the ones datafusion-pg-catalog ships; pgaccel adds
//! the rows of its datasets and of the session (database, user, settings,
//! activity, cursors) each time a query reads them, so they are never stale.

mod functions;
mod information_schema;
pub mod oids;
mod relations;
pub mod rows;
mod server;
pub mod types;

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_pg_catalog::pg_catalog::PgCatalogStaticTables;

use super::activity::Activity;
use super::engine::SessionInfo;
use crate::dataset::Registry;
use rows::ArrayColumn;
pub use types::Types;

/// What the catalog tables are built from.
pub struct System {
    registry: Arc<Registry>,
    activity: Arc<Activity>,
    /// PostgreSQL's own catalog rows, by table, with their array columns
    /// typed as arrays.
    shipped: HashMap<&'static str, RecordBatch>,
    types: Types,
    /// The catalog's own relations (`pg_catalog.*`, `information_schema.*`)
    /// with their columns, for `pg_class` and `pg_attribute`.
    system_relations: Vec<relations::SystemRelation>,
}

/// The catalog columns kept as arrays, by table.
const ARRAY_COLUMNS: &[(&str, &[(&str, ArrayColumn)])] = &[
    (
        "pg_index",
        &[
            ("indkey", ArrayColumn::Int2Vector),
            ("indcollation", ArrayColumn::OidVector),
            ("indclass", ArrayColumn::OidVector),
            ("indoption", ArrayColumn::Int2Vector),
        ],
    ),
    (
        "pg_proc",
        &[
            ("proargtypes", ArrayColumn::OidVector),
            ("proallargtypes", ArrayColumn::OidArray),
            ("proargmodes", ArrayColumn::TextArray("_char")),
            ("proargnames", ArrayColumn::TextArray("_text")),
            ("proconfig", ArrayColumn::TextArray("_text")),
            ("proacl", ArrayColumn::TextArray("_aclitem")),
        ],
    ),
    (
        "pg_constraint",
        &[
            ("conkey", ArrayColumn::Int2Array),
            ("confkey", ArrayColumn::Int2Array),
            ("conpfeqop", ArrayColumn::OidArray),
            ("conppeqop", ArrayColumn::OidArray),
            ("conffeqop", ArrayColumn::OidArray),
            ("confdelsetcols", ArrayColumn::Int2Array),
            ("conexclop", ArrayColumn::OidArray),
        ],
    ),
    (
        "pg_class",
        &[
            ("relacl", ArrayColumn::TextArray("_aclitem")),
            ("reloptions", ArrayColumn::TextArray("_text")),
        ],
    ),
    (
        "pg_namespace",
        &[("nspacl", ArrayColumn::TextArray("_aclitem"))],
    ),
    (
        "pg_tablespace",
        &[
            ("spcacl", ArrayColumn::TextArray("_aclitem")),
            ("spcoptions", ArrayColumn::TextArray("_text")),
        ],
    ),
    (
        "pg_database",
        &[("datacl", ArrayColumn::TextArray("_aclitem"))],
    ),
    ("pg_type", &[("typacl", ArrayColumn::TextArray("_aclitem"))]),
    (
        "pg_attribute",
        &[
            ("attacl", ArrayColumn::TextArray("_aclitem")),
            ("attoptions", ArrayColumn::TextArray("_text")),
            ("attfdwoptions", ArrayColumn::TextArray("_text")),
        ],
    ),
    ("pg_trigger", &[("tgattr", ArrayColumn::Int2Vector)]),
    (
        "pg_statistic_ext",
        &[
            ("stxkeys", ArrayColumn::Int2Vector),
            ("stxkind", ArrayColumn::TextArray("_char")),
        ],
    ),
    (
        "pg_extension",
        &[
            ("extconfig", ArrayColumn::OidArray),
            ("extcondition", ArrayColumn::TextArray("_text")),
        ],
    ),
    (
        "pg_default_acl",
        &[("defaclacl", ArrayColumn::TextArray("_aclitem"))],
    ),
    (
        "pg_foreign_data_wrapper",
        &[
            ("fdwacl", ArrayColumn::TextArray("_aclitem")),
            ("fdwoptions", ArrayColumn::TextArray("_text")),
        ],
    ),
    (
        "pg_foreign_server",
        &[
            ("srvacl", ArrayColumn::TextArray("_aclitem")),
            ("srvoptions", ArrayColumn::TextArray("_text")),
        ],
    ),
    (
        "pg_foreign_table",
        &[("ftoptions", ArrayColumn::TextArray("_text"))],
    ),
    (
        "pg_user_mapping",
        &[("umoptions", ArrayColumn::TextArray("_text"))],
    ),
    (
        "pg_largeobject_metadata",
        &[("lomacl", ArrayColumn::TextArray("_aclitem"))],
    ),
    ("pg_policy", &[("polroles", ArrayColumn::OidArray)]),
    (
        "pg_publication_rel",
        &[("prattrs", ArrayColumn::Int2Vector)],
    ),
    (
        "pg_partitioned_table",
        &[("partattrs", ArrayColumn::Int2Vector)],
    ),
    (
        "pg_db_role_setting",
        &[("setconfig", ArrayColumn::TextArray("_text"))],
    ),
    (
        "pg_language",
        &[("lanacl", ArrayColumn::TextArray("_aclitem"))],
    ),
];

/// The tables pgaccel builds (all others are shipped as they are).
const BUILT: &[&str] = &[
    "pg_namespace",
    "pg_class",
    "pg_attribute",
    "pg_index",
    "pg_constraint",
    "pg_depend",
    "pg_description",
    "pg_tables",
    "pg_indexes",
    "pg_database",
    "pg_roles",
    "pg_user",
    "pg_authid",
    "pg_settings",
    "pg_stat_activity",
    "pg_stat_database",
    "pg_locks",
    "pg_stat_ssl",
    "pg_timezone_names",
    "pg_timezone_abbrevs",
    "pg_cursors",
    "pg_stat_user_tables",
    "pg_statio_user_tables",
    "pg_prepared_statements",
];

impl System {
    /// `shipped_catalog` is the pg_catalog schema datafusion-pg-catalog
    /// built; its tables are listed as system relations.
    pub fn new(
        registry: Arc<Registry>,
        activity: Arc<Activity>,
        shipped_catalog: &dyn SchemaProvider,
    ) -> Result<System> {
        let shipped_tables = PgCatalogStaticTables::try_new()?;
        let mut shipped = HashMap::new();
        for (name, table) in shipped_tables_by_name(&shipped_tables) {
            let batch = match table.data() {
                [] => RecordBatch::new_empty(table.schema()),
                [one] => one.clone(),
                many => datafusion::arrow::compute::concat_batches(&table.schema(), many)?,
            };
            let arrays = ARRAY_COLUMNS
                .iter()
                .find(|(table, _)| *table == name)
                .map_or(&[][..], |(_, columns)| *columns);
            shipped.insert(name, rows::with_arrays(&batch, arrays)?);
        }
        let types = Types::from_pg_type(&shipped["pg_type"]);
        let mut system = System {
            registry,
            activity,
            shipped,
            types,
            system_relations: Vec::new(),
        };
        system.system_relations = relations::system_relations(&system, shipped_catalog)?;
        Ok(system)
    }

    pub fn types(&self) -> &Types {
        &self.types
    }

    /// PostgreSQL's own rows of catalog table `name`.
    fn shipped(&self, name: &str) -> Option<&RecordBatch> {
        self.shipped.get(name)
    }

    /// The rows of catalog table `name` for a query of `session`.
    fn build(&self, name: &str, session: Option<&SessionInfo>) -> Result<RecordBatch> {
        let datasets = relations::Datasets::of(&self.registry, &self.types);
        match name {
            "pg_namespace" => relations::namespaces(self, &datasets),
            "pg_class" => relations::classes(self, &datasets),
            "pg_attribute" => relations::attributes(self, &datasets),
            "pg_index" => relations::indexes(self, &datasets),
            "pg_constraint" => relations::constraints(self, &datasets),
            "pg_depend" => relations::dependencies(self, &datasets),
            "pg_description" => relations::descriptions(self, &datasets),
            "pg_tables" => relations::tables(&datasets, session),
            "pg_indexes" => relations::index_definitions(&datasets),
            "pg_stat_user_tables" | "pg_statio_user_tables" => {
                relations::table_statistics(name, &datasets)
            }
            "pg_database" => server::databases(self, session),
            "pg_roles" | "pg_user" | "pg_authid" => server::roles(self, name, session),
            "pg_settings" => server::settings(session),
            "pg_stat_activity" => server::activity(&self.activity),
            "pg_stat_database" => server::database_statistics(
                &self.activity,
                session,
                session.map_or_else(chrono::Utc::now, |s| s.started),
            ),
            "pg_locks" => server::locks(),
            "pg_stat_ssl" => server::ssl(&self.activity),
            "pg_timezone_names" => server::time_zone_names(),
            "pg_timezone_abbrevs" => server::time_zone_abbreviations(),
            "pg_cursors" => server::cursors(session),
            "pg_prepared_statements" => server::prepared_statements(),
            other => Err(DataFusionError::Plan(format!("no catalog table {other}"))),
        }
    }

    pub(super) fn schema_of(&self, name: &str) -> Result<SchemaRef> {
        // Building without data gives the schema; catalog tables are small.
        Ok(self.build(name, None)?.schema())
    }
}

fn shipped_tables_by_name(
    tables: &PgCatalogStaticTables,
) -> Vec<(
    &'static str,
    Arc<datafusion_pg_catalog::pg_catalog::ArrowTable>,
)> {
    vec![
        ("pg_aggregate", Arc::clone(&tables.pg_aggregate)),
        ("pg_am", Arc::clone(&tables.pg_am)),
        ("pg_amop", Arc::clone(&tables.pg_amop)),
        ("pg_amproc", Arc::clone(&tables.pg_amproc)),
        ("pg_cast", Arc::clone(&tables.pg_cast)),
        ("pg_collation", Arc::clone(&tables.pg_collation)),
        ("pg_conversion", Arc::clone(&tables.pg_conversion)),
        ("pg_language", Arc::clone(&tables.pg_language)),
        ("pg_opclass", Arc::clone(&tables.pg_opclass)),
        ("pg_operator", Arc::clone(&tables.pg_operator)),
        ("pg_opfamily", Arc::clone(&tables.pg_opfamily)),
        ("pg_proc", Arc::clone(&tables.pg_proc)),
        ("pg_range", Arc::clone(&tables.pg_range)),
        ("pg_ts_config", Arc::clone(&tables.pg_ts_config)),
        ("pg_ts_dict", Arc::clone(&tables.pg_ts_dict)),
        ("pg_ts_parser", Arc::clone(&tables.pg_ts_parser)),
        ("pg_ts_template", Arc::clone(&tables.pg_ts_template)),
        ("pg_type", Arc::clone(&tables.pg_type)),
        ("pg_attrdef", Arc::clone(&tables.pg_attrdef)),
        ("pg_auth_members", Arc::clone(&tables.pg_auth_members)),
        ("pg_authid", Arc::clone(&tables.pg_authid)),
        ("pg_constraint", Arc::clone(&tables.pg_constraint)),
        ("pg_db_role_setting", Arc::clone(&tables.pg_db_role_setting)),
        ("pg_default_acl", Arc::clone(&tables.pg_default_acl)),
        ("pg_depend", Arc::clone(&tables.pg_depend)),
        ("pg_description", Arc::clone(&tables.pg_description)),
        ("pg_enum", Arc::clone(&tables.pg_enum)),
        ("pg_event_trigger", Arc::clone(&tables.pg_event_trigger)),
        ("pg_extension", Arc::clone(&tables.pg_extension)),
        (
            "pg_foreign_data_wrapper",
            Arc::clone(&tables.pg_foreign_data_wrapper),
        ),
        ("pg_foreign_server", Arc::clone(&tables.pg_foreign_server)),
        ("pg_foreign_table", Arc::clone(&tables.pg_foreign_table)),
        ("pg_index", Arc::clone(&tables.pg_index)),
        ("pg_inherits", Arc::clone(&tables.pg_inherits)),
        ("pg_init_privs", Arc::clone(&tables.pg_init_privs)),
        ("pg_largeobject", Arc::clone(&tables.pg_largeobject)),
        (
            "pg_largeobject_metadata",
            Arc::clone(&tables.pg_largeobject_metadata),
        ),
        (
            "pg_partitioned_table",
            Arc::clone(&tables.pg_partitioned_table),
        ),
        ("pg_policy", Arc::clone(&tables.pg_policy)),
        ("pg_publication", Arc::clone(&tables.pg_publication)),
        (
            "pg_publication_namespace",
            Arc::clone(&tables.pg_publication_namespace),
        ),
        ("pg_publication_rel", Arc::clone(&tables.pg_publication_rel)),
        (
            "pg_replication_origin",
            Arc::clone(&tables.pg_replication_origin),
        ),
        ("pg_rewrite", Arc::clone(&tables.pg_rewrite)),
        ("pg_seclabel", Arc::clone(&tables.pg_seclabel)),
        ("pg_sequence", Arc::clone(&tables.pg_sequence)),
        ("pg_shdepend", Arc::clone(&tables.pg_shdepend)),
        ("pg_shdescription", Arc::clone(&tables.pg_shdescription)),
        ("pg_shseclabel", Arc::clone(&tables.pg_shseclabel)),
        ("pg_statistic", Arc::clone(&tables.pg_statistic)),
        ("pg_statistic_ext", Arc::clone(&tables.pg_statistic_ext)),
        (
            "pg_statistic_ext_data",
            Arc::clone(&tables.pg_statistic_ext_data),
        ),
        ("pg_subscription", Arc::clone(&tables.pg_subscription)),
        (
            "pg_subscription_rel",
            Arc::clone(&tables.pg_subscription_rel),
        ),
        ("pg_tablespace", Arc::clone(&tables.pg_tablespace)),
        ("pg_trigger", Arc::clone(&tables.pg_trigger)),
        ("pg_user_mapping", Arc::clone(&tables.pg_user_mapping)),
    ]
}

/// A catalog table built when a query scans it, for the session scanning.
#[derive(Debug)]
pub(super) struct SystemTable {
    pub(super) name: &'static str,
    pub(super) schema: SchemaRef,
    pub(super) system: Arc<System>,
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System").finish_non_exhaustive()
    }
}

#[async_trait]
impl TableProvider for SystemTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let session = SessionInfo::of(state.config_options());
        let batch = if self.name.starts_with("information_schema.") {
            information_schema::build(&self.system, self.name, session)?
        } else {
            self.system.build(self.name, session)?
        };
        let source = MemorySourceConfig::try_new(
            &[vec![batch]],
            Arc::clone(&self.schema),
            projection.cloned(),
        )?
        .with_limit(limit);
        Ok(DataSourceExec::from_data_source(source))
    }
}

/// `pg_catalog`: pgaccel's built tables, and PostgreSQL's own rows for the
/// rest.
#[derive(Debug)]
pub struct PgCatalog {
    system: Arc<System>,
    /// datafusion-pg-catalog's schema, for the tables pgaccel does not build.
    shipped: Arc<dyn SchemaProvider>,
}

#[async_trait]
impl SchemaProvider for PgCatalog {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.shipped.table_names();
        names.extend(BUILT.iter().map(|name| (*name).to_owned()));
        names.sort();
        names.dedup();
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if let Some(built) = BUILT.iter().find(|built| **built == name) {
            return Ok(Some(Arc::new(SystemTable {
                name: built,
                schema: self.system.schema_of(built)?,
                system: Arc::clone(&self.system),
            })));
        }
        if let Some(batch) = self.system.shipped(name) {
            let table =
                datafusion::catalog::MemTable::try_new(batch.schema(), vec![vec![batch.clone()]])?;
            return Ok(Some(Arc::new(table)));
        }
        self.shipped.table(name).await
    }

    fn table_exist(&self, name: &str) -> bool {
        BUILT.contains(&name) || self.shipped.table_exist(name)
    }
}

/// `information_schema`, over the datasets.
#[derive(Debug)]
pub struct InformationSchema {
    system: Arc<System>,
}

#[async_trait]
impl SchemaProvider for InformationSchema {
    fn table_names(&self) -> Vec<String> {
        information_schema::TABLES
            .iter()
            .map(|name| (*name).to_owned())
            .collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let Some(qualified) = information_schema::qualified(name) else {
            return Ok(None);
        };
        let schema = information_schema::build(&self.system, qualified, None)?.schema();
        Ok(Some(Arc::new(SystemTable {
            name: qualified,
            schema,
            system: Arc::clone(&self.system),
        })))
    }

    fn table_exist(&self, name: &str) -> bool {
        information_schema::qualified(name).is_some()
    }
}

/// Registers `pg_catalog` and `information_schema` in `catalog`, and the
/// catalog functions in `state`, over what datafusion-pg-catalog set up.
pub fn install(
    state: &mut SessionState,
    catalog: &Arc<dyn datafusion::catalog::CatalogProvider>,
    registry: &Arc<Registry>,
    activity: &Arc<Activity>,
) -> Result<()> {
    let shipped = catalog
        .schema("pg_catalog")
        .ok_or_else(|| DataFusionError::Internal("pg_catalog is missing".to_owned()))?;
    let system = Arc::new(System::new(
        Arc::clone(registry),
        Arc::clone(activity),
        shipped.as_ref(),
    )?);
    catalog.register_schema(
        "pg_catalog",
        Arc::new(PgCatalog {
            system: Arc::clone(&system),
            shipped,
        }),
    )?;
    catalog.register_schema(
        "information_schema",
        Arc::new(InformationSchema {
            system: Arc::clone(&system),
        }),
    )?;
    functions::register_table_functions(state, &system);
    functions::register(state, system)
}
