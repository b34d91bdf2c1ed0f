//! Refresh and retention policies of an acceleration: retries, jitter, retention, and the
//! loose shape checks of the SQL texts (`refresh_sql`, `retention_sql`). Split from
//! `acceleration.rs` to keep files small; the rules here only read the acceleration block
//! and the dataset facts in `Context`.

use std::time::Duration;

use super::acceleration::{Context, key};
use super::raw::{RawAcceleration, Scalar};
use super::retention_sql::RetentionSql;
use super::schedule::Schedule;
use super::values::Values;

/// Retries of failed refreshes (Fibonacci backoff on transient errors).
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub enabled: bool,
    /// `None`: retry until the refresh succeeds or a newer one replaces it.
    pub max_attempts: Option<u32>,
}

/// Eviction of rows from the acceleration. An incomplete policy with `check_enabled` is
/// kept as written: per the seeds the runtime reports it as a `[retention]` error instead
/// of refusing the configuration.
#[derive(Debug, Clone)]
pub struct Retention {
    pub check_enabled: bool,
    pub check_interval: Option<Duration>,
    pub period: Option<Duration>,
    pub sql: Option<RetentionSql>,
}

/// A SQL text that must start with the given keywords (checked loosely; the planner
/// checks the rest when the dataset loads).
pub(super) fn parse_statement(
    values: &mut Values<'_, '_>,
    field: &str,
    raw: &Option<Scalar>,
    keywords: &[&str],
) -> Option<String> {
    let sql = values.non_empty(&key(field), raw, "a SQL statement")?;
    let words: Vec<&str> = sql.split_whitespace().take(keywords.len()).collect();
    let matches = words.len() == keywords.len()
        && words
            .iter()
            .zip(keywords)
            .all(|(w, k)| w.eq_ignore_ascii_case(k));
    if !matches {
        let shape = if keywords.first() == Some(&"SELECT") {
            "SELECT ... FROM <dataset> [WHERE ...]"
        } else {
            "DELETE FROM <dataset> WHERE ..."
        };
        values.error(
            &key(field),
            format!("must be a statement of the form {shape}"),
        );
        return None;
    }
    Some(sql)
}

pub(super) fn parse_retry(values: &mut Values<'_, '_>, raw: &RawAcceleration) -> RetryPolicy {
    let enabled = values.flag(
        &key("refresh_retry_enabled"),
        &raw.refresh_retry_enabled,
        true,
    );
    let attempts_key = key("refresh_retry_max_attempts");
    let max_attempts = values
        .integer(
            &attempts_key,
            &raw.refresh_retry_max_attempts,
            1,
            u64::from(u32::MAX),
            "a number of attempts",
        )
        .and_then(|n| u32::try_from(n).ok());
    if raw.refresh_retry_max_attempts.is_some() && !enabled {
        values.error(
            &attempts_key,
            "has no effect while refresh_retry_enabled is false; remove one of them",
        );
    }
    RetryPolicy {
        enabled,
        max_attempts,
    }
}

/// Resolves jitter: `refresh_jitter_max`, else 10% of the interval.
pub(super) fn resolve_jitter(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    schedule: Option<&Schedule>,
) -> Option<Duration> {
    let enabled = values.flag(
        &key("refresh_jitter_enabled"),
        &raw.refresh_jitter_enabled,
        false,
    );
    let max = values.duration(&key("refresh_jitter_max"), &raw.refresh_jitter_max, true);
    if !enabled {
        if raw.refresh_jitter_max.is_some() {
            values.error(
                &key("refresh_jitter_max"),
                "refresh_jitter_max has no effect unless refresh_jitter_enabled: true",
            );
        }
        return None;
    }
    let interval = match schedule {
        Some(Schedule::Interval(interval)) => Some(*interval),
        _ => None,
    };
    match (max, interval) {
        (Some(max), Some(interval)) if max > interval => {
            let message = format!(
                "refresh_jitter_max ({}) is larger than refresh_check_interval ({}); use at most the interval",
                humantime::format_duration(max),
                humantime::format_duration(interval)
            );
            values.error(&key("refresh_jitter_max"), message);
            None
        }
        (Some(max), _) => Some(max),
        (None, Some(interval)) => Some(interval / 10),
        (None, None) => {
            if raw.refresh_jitter_max.is_none() {
                let message = "needs refresh_jitter_max when there is no refresh_check_interval (the default is 10% of the interval)";
                values.error(&key("refresh_jitter_enabled"), message);
            }
            None
        }
    }
}

pub(super) fn parse_retention(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    ctx: &Context,
) -> Retention {
    let check_enabled = values.flag(
        &key("retention_check_enabled"),
        &raw.retention_check_enabled,
        false,
    );
    let period = values.duration(&key("retention_period"), &raw.retention_period, false);
    if raw.retention_period.is_some() && !ctx.time_column && !check_enabled {
        values.error(
            &key("retention_period"),
            "needs time_column on the dataset (the column compared with the retention cutoff)",
        );
    }
    Retention {
        check_enabled,
        check_interval: values.duration(
            &key("retention_check_interval"),
            &raw.retention_check_interval,
            false,
        ),
        period,
        sql: parse_statement(
            values,
            "retention_sql",
            &raw.retention_sql,
            &["DELETE", "FROM"],
        )
        .and_then(|text| {
            RetentionSql::parse(&text)
                .map_err(|message| values.error(&key("retention_sql"), message))
                .ok()
        }),
    }
}
