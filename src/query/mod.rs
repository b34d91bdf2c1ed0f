//! The query engine: the shared [`Engine`] (a DataFusion state whose catalog
//! exposes every dataset as an [`AcceleratedTable`], plus the `pg_catalog`
//! and `information_schema` that PostgreSQL clients introspect, and the
//! [`planner`] with its plan caches) and one [`Session`] per client, with its
//! own settings, transaction and cursors.
//!
//! This module plans and executes; it knows nothing of the wire protocol or of
//! how accelerations are refreshed.

mod activity;
mod age;
mod array_dims;
mod array_operators;
mod array_text;
mod array_types;
mod bytea;
pub mod caching;
mod case_mapping;
mod cast_labels;
mod catalog;
mod compat;
pub(crate) use compat::with_seconds;
pub mod cursor;
mod date_trunc;
mod decimal_arithmetic;
mod direct;
mod distinct_sums;
mod encoding;
mod engine;
pub mod error;
mod file_aggregate;
pub mod file_table;
mod float_extremes;
mod float_regression;
mod float_sums;
pub mod forward;
mod from_char;
mod functions;
pub mod interval;
mod interval_arithmetic;
mod join_order;
pub mod json;
mod lateral_aggregate;
mod lateral_limit;
mod lazy_conditions;
mod literals;
mod lookup;
mod make;
mod math;
mod names;
mod numeric;
mod ordered_set;
pub mod origins;
mod outer_unnest;
mod outer_using;
mod overflow;
mod overlaps;
mod packed_groups;
pub mod parameterize;
pub mod pg_types;
pub mod planner;
mod pruning;
mod quote_ident;
mod regex;
mod resolve;
mod row_json;
mod row_values;
mod series;
pub mod session;
mod set_operations;
pub mod settings;
pub mod sqlstate;
pub mod statement;
mod subqueries;
mod subscripts;
mod syntax_variants;
pub mod system;
mod table;
mod table_qualifiers;
mod table_statistics;
mod temporal;
pub mod text;
mod text_casts;
mod to_char;
mod unknown_literals;
mod using_joins;
mod zero_results;
mod zoned_casts;

use std::sync::Arc;

use datafusion::catalog::default_table_source::source_as_provider;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::common::TableReference;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_pg_catalog::pg_catalog::context::EmptyContextProvider;
use datafusion_pg_catalog::pg_catalog::setup_pg_catalog;

use crate::dataset::Registry;

pub use catalog::DatasetSchema;
pub use direct::DirectPlan;
pub use engine::{Engine, Identity, SessionInfo};
pub use error::{Notice, NoticeLevel, PgError};
pub use literals::apply_postgres_literal_types;
pub use lookup::LookupPlan;
pub use names::{apply_postgres_names, display_name};
pub use planner::{PlannedQuery, Prepared};
pub use session::{Outcome, Session, SimpleQuery, TransactionStatus};
pub use table::{AcceleratedTable, Pins, QueryError};
pub use zero_results::inverse_retention;

/// The name of the DataFusion catalog that holds every dataset. Clients see
/// it under the database name they connected with.
pub const CATALOG: &str = "pgaccel";

/// The PostgreSQL version pgaccel presents itself as, everywhere: the
/// startup `server_version`, `SHOW server_version` and `version()`.
pub const SERVER_VERSION: &str = "16.6 (pgaccel 0.1.0)";
pub const SERVER_VERSION_NUM: &str = "160006";

/// What `version()` returns.
pub fn version_string() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} on {}-linux, compiled by rustc, 64-bit",
        std::env::consts::ARCH
    )
}

/// Builds the engine every session plans and runs in.
///
/// DataFusion's own settings can be tuned with its `DATAFUSION_*`
/// environment variables (`DATAFUSION_EXECUTION_TARGET_PARTITIONS`,
/// `DATAFUSION_EXECUTION_BATCH_SIZE`, ...); by default a query runs on as many
/// partitions as the machine has cores.
pub fn engine(
    registry: &Arc<Registry>,
    server: settings::ServerValues,
    unsupported: crate::config::Unsupported,
    memory_limit: usize,
) -> Result<Arc<Engine>, DataFusionError> {
    let ctx = context(registry)?;
    let mut state = ctx.state();
    let catalog = state
        .catalog_list()
        .catalog(CATALOG)
        .ok_or_else(|| DataFusionError::Internal(format!("catalog {CATALOG} is missing")))?;
    let activity = Arc::new(activity::Activity::default());
    system::install(&mut state, &catalog, registry, &activity)?;
    // Untyped literals take the other operand's type before DataFusion's
    // type coercion runs.
    let mut rules: Vec<Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> = vec![
        Arc::new(unknown_literals::UnknownLiterals),
        Arc::new(interval_arithmetic::IntervalAverages),
    ];
    rules.extend(state.analyzer().rules.iter().cloned());
    // After type coercion, which adds the implicit casts to text and
    // between timestamps.
    rules.push(Arc::new(zoned_casts::ZonedCasts));
    rules.push(Arc::new(text_casts::TextCasts));
    // pgaccel's JSON operators come before DataFusion's own planners.
    let mut planners: Vec<Arc<dyn datafusion::logical_expr::planner::ExprPlanner>> = vec![
        Arc::new(json::JsonOperators),
        Arc::new(interval_arithmetic::IntervalOperators),
        Arc::new(unknown_literals::ArrayLiterals),
        Arc::new(array_operators::ArrayOperators),
        Arc::new(subscripts::ArraySubscripts),
        Arc::new(table_qualifiers::TableQualifiers),
        Arc::new(bytea::SubstringPlanner),
    ];
    planners.extend(state.expr_planners().iter().cloned());
    let optimizers = state
        .optimizers()
        .iter()
        .map(
            |rule| -> Arc<dyn datafusion::optimizer::OptimizerRule + Send + Sync> {
                if rule.name() == distinct_sums::REPLACED_RULE {
                    Arc::new(distinct_sums::SingleDistinctUnlessDecimalSum::new(
                        Arc::clone(rule),
                    ))
                } else {
                    Arc::clone(rule)
                }
            },
        )
        .chain(std::iter::once(
            // Last, over the joins DataFusion's rules settled; the next
            // pass prunes and pushes filters through the new order.
            Arc::new(join_order::JoinOrder::from_environment())
                as Arc<dyn datafusion::optimizer::OptimizerRule + Send + Sync>,
        ))
        .collect();
    let mut state =
        datafusion::execution::session_state::SessionStateBuilder::new_from_existing(state)
            .with_analyzer_rules(rules)
            .with_optimizer_rules(optimizers)
            .with_expr_planners(planners)
            // Last, over the plan DataFusion's own rules settled.
            .with_physical_optimizer_rule(Arc::new(lazy_conditions::LazyConditions))
            // After the lazy conditions, which judge the cost and the
            // risk of DataFusion's own operators.
            .with_physical_optimizer_rule(Arc::new(decimal_arithmetic::FastDecimals))
            // After the decimal rule, which rewrites the arguments of the
            // aggregates this one wraps.
            .with_physical_optimizer_rule(Arc::new(packed_groups::PackedGroups::from_environment()))
            .build();
    functions::register(&mut state)?;
    functions::register_aggregates(&mut state)?;
    for aggregate in ordered_set::functions()
        .into_iter()
        .chain(float_extremes::functions())
        .chain(float_sums::functions())
        .chain(float_regression::functions())
        .chain([interval_arithmetic::planning_average()])
    {
        datafusion::execution::FunctionRegistry::register_udaf(&mut state, Arc::new(aggregate))?;
    }
    numeric::register(&mut state)?;
    datafusion::execution::FunctionRegistry::register_udf(
        &mut state,
        Arc::new(cast_labels::function()),
    )?;
    series::register(&mut state);
    json::register(&mut state)?;
    datafusion::execution::FunctionRegistry::register_udf(
        &mut state,
        Arc::new(outer_unnest::udf()),
    )?;
    for function in regex::udfs() {
        datafusion::execution::FunctionRegistry::register_udf(&mut state, function)?;
    }
    for function in pg_types::functions()
        .into_iter()
        .chain(temporal::functions())
        .chain(interval_arithmetic::functions())
        .chain(math::functions())
        .chain(case_mapping::functions())
        .chain(encoding::functions())
        .chain(unknown_literals::functions())
        .chain(
            [
                to_char::function(),
                age::function(),
                overlaps::function(),
                make::function(),
                make::time_function(),
                date_trunc::function(),
                array_dims::function(),
            ]
            .map(Arc::new),
        )
    {
        replace_udf(&mut state, function)?;
    }
    for function in bytea::functions(&state)? {
        replace_udf(&mut state, function)?;
    }
    if let Some(keywords) = state.scalar_functions().get("quote_ident").cloned() {
        replace_udf(&mut state, Arc::new(quote_ident::function(keywords)))?;
    }
    Ok(Arc::new(Engine::new(
        state,
        catalog,
        Arc::clone(registry),
        server,
        activity,
        forward::Forwarder::new(unsupported),
        memory_limit,
    )))
}

/// Registers `function`, first removing any function of its name together
/// with that function's aliases: a session state is rebuilt from every
/// registered function, and a replaced one still registered under an alias
/// (`date_format` for `to_char`) would take its name back.
fn replace_udf(
    state: &mut SessionState,
    function: Arc<datafusion::logical_expr::ScalarUDF>,
) -> Result<(), DataFusionError> {
    use datafusion::execution::FunctionRegistry;
    for name in
        std::iter::once(function.name()).chain(function.aliases().iter().map(String::as_str))
    {
        if state.scalar_functions().contains_key(name) {
            state.deregister_udf(name)?;
        }
    }
    state.register_udf(function)?;
    Ok(())
}

/// The DataFusion context with the dataset catalog and `pg_catalog`.
fn context(registry: &Arc<Registry>) -> Result<SessionContext, DataFusionError> {
    let mut config = SessionConfig::from_env()?
        .with_default_catalog_and_schema(CATALOG, "public")
        // pgaccel serves its own information_schema (see `system`).
        .with_information_schema(false);
    // PostgreSQL reads `7.5` as numeric, not double precision.
    config.options_mut().sql_parser.parse_float_as_decimal = true;
    // `now()` is a timestamptz; DataFusion types it with this zone, and a
    // session's `TimeZone` decides how it prints.
    config.options_mut().execution.time_zone = Some("UTC".to_owned());
    // A set operation whose branch a constant filter empties leaves the
    // nullability of the branch kept and of the operation apart (`SELECT id
    // ... UNION SELECT x ... WHERE false`), and DataFusion then refuses to
    // plan an aggregate over it with an internal error. The data is the same
    // either way: only that check is skipped.
    config
        .options_mut()
        .execution
        .skip_physical_aggregate_schema_check = true;
    let ctx = SessionContext::new_with_config(config);
    let catalog = Arc::new(MemoryCatalogProvider::new());
    for schema in schema_names(registry) {
        let provider = Arc::new(DatasetSchema::new(Arc::clone(registry), schema.clone()));
        catalog.register_schema(&schema, provider)?;
    }
    ctx.register_catalog(CATALOG, catalog);
    ctx.add_analyzer_rule(Arc::new(overflow::CheckedIntegerArithmetic::default()));
    ctx.add_optimizer_rule(Arc::new(file_aggregate::FileAggregates));
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
            } else if let Some(table) = provider.downcast_ref::<file_table::FileTable>() {
                table.is_current()
            } else if let Some(table) = provider.downcast_ref::<zero_results::ZeroResultsTable>() {
                table.is_current()
            } else {
                !file_aggregate::is_stale(provider.as_ref())
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

/// The table `name` (as written in SQL, schema qualified or in `public`)
/// of the catalog, if there is one.
async fn table_in(
    state: &SessionState,
    name: &str,
) -> Option<Arc<dyn datafusion::catalog::TableProvider>> {
    let reference = TableReference::from(name).resolve(CATALOG, "public");
    state
        .catalog_list()
        .catalog(&reference.catalog)?
        .schema(&reference.schema)?
        .table(&reference.table)
        .await
        .ok()?
}

/// The column names of the table `name` (as written in SQL, schema
/// qualified or in `public`), in order; `None` when the catalog has no
/// such table.
pub(crate) async fn column_names_in(state: &SessionState, name: &str) -> Option<Vec<String>> {
    let provider = table_in(state, name).await?;
    Some(
        provider
            .schema()
            .fields()
            .iter()
            .map(|field| field.name().clone())
            .collect(),
    )
}

/// The primary-key column names of the accelerated table `name` (as written
/// in SQL) resolves to; `None` when it is not one, is not loaded yet, or has
/// no primary key.
pub async fn key_columns_in(state: &SessionState, name: &str) -> Option<Vec<String>> {
    let provider = table_in(state, name).await?;
    if let Some(table) = provider.downcast_ref::<AcceleratedTable>() {
        return lookup::key_column_names(&*table.acceleration().current()?);
    }
    // A file queried in place: the key its checkpoint records.
    let acceleration = provider
        .downcast_ref::<file_table::FileTable>()?
        .served_in_place()?;
    let key = acceleration.file_version()?.checkpoint.primary_key.clone();
    (!key.is_empty()).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A function pgaccel replaced must not stay reachable under another
    /// of its names: DataFusion builds each session's state from the
    /// registry's functions in hash order, so one left under an alias would
    /// come back in place of pgaccel's in some sessions.
    #[test]
    fn replaced_functions_leave_no_alias_behind() {
        let registry = Arc::new(Registry::new(Vec::new()));
        let engine = engine(
            &registry,
            settings::ServerValues::default(),
            crate::config::Unsupported::Error,
            1 << 30,
        )
        .unwrap();
        let state = &engine.base;
        let mut stale = Vec::new();
        for (key, function) in state.scalar_functions() {
            if let Some(current) = state.scalar_functions().get(function.name())
                && !Arc::ptr_eq(current, function)
            {
                stale.push(format!("scalar {key} ({})", function.name()));
            }
        }
        for (key, function) in state.aggregate_functions() {
            if let Some(current) = state.aggregate_functions().get(function.name())
                && !Arc::ptr_eq(current, function)
            {
                stale.push(format!("aggregate {key} ({})", function.name()));
            }
        }
        for (key, function) in state.window_functions() {
            if let Some(current) = state.window_functions().get(function.name())
                && !Arc::ptr_eq(current, function)
            {
                stale.push(format!("window {key} ({})", function.name()));
            }
        }
        stale.sort();
        assert!(stale.is_empty(), "{stale:?}");
    }
}
