//! Retention: at every check, evict the accelerated rows that
//! `retention_period` (older than now - period by `time_column`) or
//! `retention_sql` (`DELETE FROM <dataset> WHERE <predicate>`) selects.
//!
//! Checks run in the dataset's refresh loop, between refreshes, so a check
//! and a refresh never build versions from the same one and lose each other's
//! changes. Each check publishes the evicted version like a refresh does
//! (file engines commit it to the file first), keeping the last refresh time.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use datafusion::arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DFSchema;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;
use tracing::{error, info};

use super::{append, full};
use crate::accelerator::{Change, Checkpoint, FileVersion};
use crate::config::DatasetConfig;
use crate::dataset::Dataset;
use crate::metrics;

/// A complete retention policy. What a check evicts is the complement of
/// [`crate::query::inverse_retention`], the predicate of the rows retention
/// keeps, which the `on_zero_results: use_source` fallback also sends to the
/// source: the two cannot disagree.
#[derive(Debug, Clone)]
pub struct Policy {
    pub interval: Duration,
}

/// The dataset's retention policy; `None` when retention is off, or when
/// the policy is incomplete, which is logged as a `[retention]` error naming
/// the missing setting (nothing is scheduled then).
pub fn policy(config: &DatasetConfig) -> Option<Policy> {
    let retention = &config.acceleration.retention;
    if !retention.check_enabled {
        return None;
    }
    let name = &config.name;
    if retention.period.is_none() && retention.sql.is_none() {
        error!(dataset = %name, "[retention] Dataset '{name}' sets retention_check_enabled but neither retention_period nor retention_sql, so nothing says which rows to evict: no retention check is scheduled");
        return None;
    }
    if retention.period.is_some() && config.time_column.is_none() {
        error!(dataset = %name, "[retention] Dataset '{name}' sets retention_period but no time_column to compare with the cutoff: no retention check is scheduled");
        return None;
    }
    let Some(interval) = retention.check_interval else {
        error!(dataset = %name, "[retention] Dataset '{name}' sets retention_check_enabled but no retention_check_interval (it has no default): no retention check is scheduled");
        return None;
    };
    Some(Policy { interval })
}

/// Runs one check: evicts the rows the policy selects and says how many.
/// `position`: where in its change stream the rows are current to (kept
/// with them in a file, so a restart resumes the stream there).
pub async fn check(dataset: &Dataset, position: Option<String>) -> Result<usize, String> {
    if let Some(version) = dataset.acceleration.file_version() {
        return check_in_place(dataset, &version, position).await;
    }
    let Some(held) = dataset.acceleration.current() else {
        return Ok(0);
    };
    let schema = Arc::clone(held.schema());
    let keep = crate::query::inverse_retention(&dataset.config, &schema)?
        .ok_or("the retention policy selects no rows")?;
    let keep = plan(keep, &schema)?;
    let mut removed: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for number in 0..held.batch_count() as u32 {
        let batch = held.batch(number);
        let kept = kept(keep.as_ref(), batch)?;
        // Evicted: the rows the policy does not keep (false, not NULL).
        let rows: BTreeSet<u32> = (0..batch.num_rows())
            .filter(|row| kept.is_valid(*row) && !kept.value(*row))
            .map(|row| row as u32)
            .collect();
        if !rows.is_empty() {
            removed.insert(number, rows);
        }
    }
    let evicted: usize = removed.values().map(BTreeSet::len).sum();
    if evicted == 0 {
        return Ok(0);
    }
    let data = held
        .revise(&removed, Vec::new())
        .map_err(|e| e.to_string())?;
    let change = match dataset.acceleration.store() {
        // By key when the rows have one; else the file is rewritten.
        Some(_) if held.primary_key().is_some() => Change::Upsert {
            removed: append::removed_keys(&held, &removed).map_err(|e| e.to_string())?,
            added: Vec::new(),
        },
        Some(_) => Change::Replace(data.batches()),
        None => Change::Nothing,
    };
    let refresh_sql = dataset.refresh_sql().map(|sql| sql.as_str().to_owned());
    let last_refresh = dataset.report().last_refresh.unwrap_or_else(full::now);
    full::publish_at(
        &dataset.acceleration,
        data,
        change,
        refresh_sql,
        last_refresh,
        position,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(evicted)
}

/// [`check`] of an acceleration queried in place: the file's rows are read
/// in the transaction that deletes those the policy evicts.
async fn check_in_place(
    dataset: &Dataset,
    version: &FileVersion,
    position: Option<String>,
) -> Result<usize, String> {
    let schema = Arc::clone(&version.checkpoint.schema);
    let keep = crate::query::inverse_retention(&dataset.config, &schema)?
        .ok_or("the retention policy selects no rows")?;
    let keep = plan(keep, &schema)?;
    let checkpoint = Checkpoint {
        last_refresh: dataset.report().last_refresh.unwrap_or_else(full::now),
        position,
        ..version.checkpoint.clone()
    };
    let (_, evicted) = full::commit_in_place(&dataset.acceleration, move |store| {
        let evicted = store.evict(&checkpoint, &mut |batch| kept(keep.as_ref(), batch))?;
        Ok(((evicted > 0).then_some(checkpoint), evicted))
    })
    .await
    .map_err(|e| e.to_string())?;
    Ok(usize::try_from(evicted).unwrap_or(usize::MAX))
}

/// Which rows of `batch` the policy keeps (true), evicts (false) or
/// leaves alone (NULL: kept).
fn kept(keep: &dyn PhysicalExpr, batch: &RecordBatch) -> Result<BooleanArray, String> {
    let kept = keep
        .evaluate(batch)
        .and_then(|value| value.into_array(batch.num_rows()))
        .map_err(|e| format!("the retention policy cannot be evaluated: {e}"))?;
    kept.as_boolean_opt()
        .cloned()
        .ok_or_else(|| "the retention policy is not a condition".to_owned())
}

/// Runs a check and reports it: a log line and the eviction counter.
pub async fn run(dataset: &Dataset, position: Option<String>) {
    let name = dataset.name();
    match check(dataset, position).await {
        Ok(evicted) => {
            metrics::retention_evicted(&name, evicted);
            info!(dataset = %name, evicted, "[retention] Dataset '{name}': the retention check evicted {evicted} rows");
        }
        Err(message) => {
            error!(dataset = %name, "[retention] Dataset '{name}': the retention check failed: {message}");
        }
    }
}

/// `expr` over `schema`, coerced and simplified (so `now()` is the time of
/// this check).
fn plan(expr: Expr, schema: &SchemaRef) -> Result<Arc<dyn PhysicalExpr>, String> {
    let invalid = |e: datafusion::error::DataFusionError| {
        format!("the retention policy does not fit the acceleration's columns: {e}")
    };
    let df_schema = Arc::new(DFSchema::try_from(schema.as_ref().clone()).map_err(invalid)?);
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::clone(&df_schema))
            .with_query_execution_start_time(Some(Utc::now()))
            .build(),
    );
    let expr = simplifier.coerce(expr, &df_schema).map_err(invalid)?;
    let expr = simplifier.simplify(expr).map_err(invalid)?;
    SessionContext::new()
        .create_physical_expr(expr, &df_schema)
        .map_err(invalid)
}
