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
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::DFSchema;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::prelude::SessionContext;
use tracing::{error, info};

use super::{append, full};
use crate::accelerator::Change;
use crate::config::{DatasetConfig, Engine, RetentionSql, TimeFormat};
use crate::dataset::Dataset;
use crate::metrics;
use crate::source::instants;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// A complete retention policy: what a check evicts, and how often.
#[derive(Debug, Clone)]
pub struct Policy {
    pub interval: Duration,
    period: Option<Period>,
    sql: Option<RetentionSql>,
}

#[derive(Debug, Clone)]
struct Period {
    period: Duration,
    column: (String, Option<TimeFormat>),
    /// With a file engine, a row is evicted only when this column is older
    /// than the cutoff too.
    partition: Option<(String, Option<TimeFormat>)>,
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
    let period = retention
        .period
        .zip(config.time_column.clone())
        .map(|(period, column)| Period {
            period,
            column: (column, config.time_format),
            partition: config
                .time_partition_column
                .clone()
                .filter(|_| config.acceleration.engine != Engine::Arrow)
                .map(|column| (column, config.time_partition_format)),
        });
    Some(Policy {
        interval,
        period,
        sql: retention.sql.clone(),
    })
}

/// Runs one check: evicts the rows the policy selects and says how many.
pub async fn check(dataset: &Dataset, policy: &Policy) -> Result<usize, String> {
    let Some(held) = dataset.acceleration.current() else {
        return Ok(0);
    };
    let schema = Arc::clone(held.schema());
    let predicate = match &policy.sql {
        Some(sql) => Some(plan(sql.predicate(), &schema)?),
        None => None,
    };
    let now = Utc::now();
    let cutoff = |period: Duration| {
        (now - chrono::Duration::from_std(period).unwrap_or(chrono::Duration::MAX))
            .timestamp_micros()
    };
    let column = |name: &str| {
        schema.index_of(name).map_err(|_| {
            format!("the retention column '{name}' is not a column of the acceleration")
        })
    };
    let mut removed: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for number in 0..held.batch_count() as u32 {
        let batch = held.batch(number);
        let mut evict = vec![false; batch.num_rows()];
        if let Some(period) = &policy.period {
            let older = |(name, format): &(String, Option<TimeFormat>)| {
                let values = batch.column(column(name)?);
                // A date holds its whole day: one is evicted only when the
                // cutoff's day is later, as the zero-results fallback's
                // inverse (`date >= the cutoff's day`) keeps it.
                let date = *format == Some(TimeFormat::Date)
                    || matches!(values.data_type(), DataType::Date32 | DataType::Date64);
                let mut cutoff = cutoff(period.period);
                if date {
                    cutoff = cutoff.div_euclid(MICROS_PER_DAY) * MICROS_PER_DAY;
                }
                let times = instants(values, *format).map_err(|e| e.to_string())?;
                Ok::<_, String>(
                    (0..times.len())
                        .map(|row| times.is_valid(row) && times.value(row) < cutoff)
                        .collect::<Vec<_>>(),
                )
            };
            let mut old = older(&period.column)?;
            if let Some(partition) = &period.partition {
                for (row, partition_old) in older(partition)?.into_iter().enumerate() {
                    old[row] &= partition_old;
                }
            }
            for (row, old) in old.into_iter().enumerate() {
                evict[row] |= old;
            }
        }
        if let Some(predicate) = &predicate {
            let matched = predicate
                .evaluate(batch)
                .and_then(|value| value.into_array(batch.num_rows()))
                .map_err(|e| format!("retention_sql cannot be evaluated: {e}"))?;
            let matched = matched
                .as_boolean_opt()
                .ok_or("retention_sql is not a predicate")?;
            for (row, evict) in evict.iter_mut().enumerate() {
                *evict |= matched.is_valid(row) && matched.value(row);
            }
        }
        let rows: BTreeSet<u32> = evict
            .iter()
            .enumerate()
            .filter(|(_, evict)| **evict)
            .map(|(row, _)| row as u32)
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
    full::publish(
        &dataset.acceleration,
        data,
        change,
        refresh_sql,
        last_refresh,
    )
    .await
    .map_err(|e| e.to_string())?;
    Ok(evicted)
}

/// Runs a check and reports it: a log line and the eviction counter.
pub async fn run(dataset: &Dataset, policy: &Policy) {
    let name = dataset.name();
    match check(dataset, policy).await {
        Ok(evicted) => {
            metrics::retention_evicted(&name, evicted);
            info!(dataset = %name, evicted, "[retention] Dataset '{name}': the retention check evicted {evicted} rows");
        }
        Err(message) => {
            error!(dataset = %name, "[retention] Dataset '{name}': the retention check failed: {message}");
        }
    }
}

/// `predicate` as an expression over `schema`, simplified (so `now()` is
/// the time of this check).
fn plan(predicate: &str, schema: &SchemaRef) -> Result<Arc<dyn PhysicalExpr>, String> {
    let invalid = |e: datafusion::error::DataFusionError| {
        format!(
            "retention_sql's predicate `{predicate}` does not fit the acceleration's columns: {e}"
        )
    };
    let ctx = SessionContext::new();
    let df_schema = Arc::new(DFSchema::try_from(schema.as_ref().clone()).map_err(invalid)?);
    let expr = ctx.parse_sql_expr(predicate, &df_schema).map_err(invalid)?;
    let simplifier = ExprSimplifier::new(
        SimplifyContext::builder()
            .with_schema(Arc::clone(&df_schema))
            .with_query_execution_start_time(Some(Utc::now()))
            .build(),
    );
    let expr = simplifier.coerce(expr, &df_schema).map_err(invalid)?;
    let expr = simplifier.simplify(expr).map_err(invalid)?;
    ctx.create_physical_expr(expr, &df_schema).map_err(invalid)
}
