//! The query engine: one DataFusion [`SessionContext`] whose catalog exposes
//! every dataset as an [`AcceleratedTable`], plus the `pg_catalog` and
//! `information_schema` that PostgreSQL clients introspect.
//!
//! This module plans and executes; it knows nothing of the wire protocol or of
//! how accelerations are refreshed.

mod catalog;
mod direct;
mod literals;
mod lookup;
mod names;
mod overflow;
pub mod parameterize;
mod table;
mod zero_results;

use std::sync::Arc;

use datafusion::catalog::default_table_source::source_as_provider;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_pg_catalog::pg_catalog::setup_pg_catalog;

use crate::dataset::Registry;

pub use catalog::DatasetSchema;
pub use direct::DirectPlan;
pub use literals::apply_postgres_literal_types;
pub use lookup::LookupPlan;
pub use names::{apply_postgres_names, display_name};
pub use table::{AcceleratedTable, QueryError};
pub use zero_results::inverse_retention;

/// The catalog (database) name clients see in `current_database()`.
pub const CATALOG: &str = "pgaccel";

/// Builds the session every connection plans in.
///
/// DataFusion's own settings can be tuned with its `DATAFUSION_*`
/// environment variables (`DATAFUSION_EXECUTION_TARGET_PARTITIONS`,
/// `DATAFUSION_EXECUTION_BATCH_SIZE`, ...); by default a query runs on as many
/// partitions as the machine has cores.
pub fn session(registry: &Arc<Registry>) -> Result<SessionContext, DataFusionError> {
    let mut config = SessionConfig::from_env()?
        .with_default_catalog_and_schema(CATALOG, "public")
        .with_information_schema(true);
    // PostgreSQL reads `7.5` as numeric, not double precision.
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    let ctx = SessionContext::new_with_config(config);
    let catalog = Arc::new(MemoryCatalogProvider::new());
    for schema in schema_names(registry) {
        let provider = Arc::new(DatasetSchema::new(Arc::clone(registry), schema.clone()));
        catalog.register_schema(&schema, provider)?;
    }
    ctx.register_catalog(CATALOG, catalog);
    ctx.add_analyzer_rule(Arc::new(overflow::CheckedIntegerArithmetic::default()));
    setup_pg_catalog(&ctx, CATALOG, EmptyContextProvider).map_err(|e| *e)?;
    Ok(ctx)
}

/// Whether every accelerated table `plan` reads still has the schema it was
/// planned with, and every dataset it sent to its source is still unloaded;
/// a cached plan that fails this is planned again.
pub fn plan_is_current(plan: &LogicalPlan) -> bool {
    let mut current = true;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && let Ok(provider) = source_as_provider(&scan.source)
        {
            let stands = if let Some(table) = provider.downcast_ref::<AcceleratedTable>() {
                table.is_current()
            } else if let Some(table) = provider.downcast_ref::<table::FederatedTable>() {
                table.is_current()
            } else if let Some(table) = provider.downcast_ref::<zero_results::ZeroResultsTable>() {
                table.accelerated().is_current()
            } else {
                true
            };
            if !stands {
                current = false;
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    current
}

/// `public` plus every schema a dataset name places a table in.
fn schema_names(registry: &Registry) -> Vec<String> {
    let mut names = vec!["public".to_owned()];
    for dataset in registry.iter() {
        let schema = &dataset.config.name.schema;
        if !names.contains(schema) {
            names.push(schema.clone());
        }
    }
    names
}

/// The primary-key column names of the accelerated table `name` (as written
/// in SQL) resolves to; `None` when it is not one, is not loaded yet, or has
/// no primary key.
pub async fn key_columns(ctx: &SessionContext, name: &str) -> Option<Vec<String>> {
    let provider = ctx.table_provider(name).await.ok()?;
    let table = provider.downcast_ref::<AcceleratedTable>()?;
    lookup::key_column_names(&*table.acceleration().current()?)
}
