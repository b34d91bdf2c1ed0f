//! What this version of pgaccel does not implement yet. The configuration may be valid,
//! but startup refuses it rather than silently behaving differently. Everything lives in
//! `unsupported`, one line per feature: implementing a feature means deleting its line.

use super::Config;
use super::acceleration::{Engine, Mode, RefreshMode, SnapshotMode, ZeroResults};
use super::dataset::ReadyState;
use super::error::ConfigError;
use super::runtime::RuntimeReadyState;
use super::source::{FileFormat, SourceParams, SourceRef};

/// Every key whose behaviour is not implemented yet, naming dataset and key.
pub(crate) fn unsupported(config: &Config) -> Vec<ConfigError> {
    let mut out = Refusals::default();
    let runtime = &config.runtime;
    out.check(
        None,
        runtime.pg.tls.is_some(),
        "runtime.pg.tls",
        "TLS on the PostgreSQL listener",
    );
    out.check(
        None,
        runtime.pg.auth.is_some(),
        "runtime.pg.auth",
        "password authentication",
    );
    out.check(
        None,
        runtime.ready_state != RuntimeReadyState::OnLoad,
        "runtime.ready_state",
        format!("ready_state: {}", runtime.ready_state.as_str()),
    );
    out.check(
        None,
        config.snapshots.as_ref().is_some_and(|s| s.enabled),
        "snapshots.enabled",
        "publishing and restoring acceleration snapshots",
    );
    for dataset in &config.datasets {
        let (d, a) = (Some(dataset.name.to_string()), &dataset.acceleration);
        out.check(
            d.clone(),
            !matches!(
                dataset.from,
                SourceRef::Postgres { .. } | SourceRef::File { .. }
            ),
            "from",
            format!("the {} source", dataset.from.kind()),
        );
        out.check(
            d.clone(),
            matches!(
                dataset.params,
                SourceParams::File {
                    format: FileFormat::Json | FileFormat::Snapshot
                }
            ),
            "params.file_format",
            file_format(&dataset.params),
        );
        out.check(
            d.clone(),
            dataset.time_partition_column.is_some(),
            "time_partition_column",
            "time_partition_column",
        );
        out.check(
            d.clone(),
            dataset.ready_state != ReadyState::OnLoad,
            "ready_state",
            format!("ready_state: {}", dataset.ready_state.as_str()),
        );
        out.check(
            d.clone(),
            a.engine != Engine::Arrow,
            "acceleration.engine",
            format!("engine: {}", a.engine.as_str()),
        );
        out.check(
            d.clone(),
            a.mode != Mode::Memory,
            "acceleration.mode",
            format!("mode: {}", a.mode.as_str()),
        );
        out.check(
            d.clone(),
            a.refresh_mode != RefreshMode::Full,
            "acceleration.refresh_mode",
            format!("refresh_mode: {}", a.refresh_mode.as_str()),
        );
        out.check(
            d.clone(),
            matches!(a.schedule, Some(super::Schedule::Cron(_))),
            "acceleration.refresh_cron",
            "refresh_cron",
        );
        out.check(
            d.clone(),
            a.jitter.is_some(),
            "acceleration.refresh_jitter_enabled",
            "refresh_jitter_enabled: true",
        );
        out.check(
            d.clone(),
            a.refresh_sql.is_some(),
            "acceleration.refresh_sql",
            "refresh_sql",
        );
        out.check(
            d.clone(),
            a.refresh_data_window.is_some(),
            "acceleration.refresh_data_window",
            "refresh_data_window",
        );
        out.check(
            d.clone(),
            a.refresh_append_overlap.is_some(),
            "acceleration.refresh_append_overlap",
            "refresh_append_overlap",
        );
        out.check(
            d.clone(),
            a.on_zero_results == ZeroResults::UseSource,
            "acceleration.on_zero_results",
            "on_zero_results: use_source",
        );
        out.check(
            d.clone(),
            a.retention.check_enabled,
            "acceleration.retention_check_enabled",
            "retention_check_enabled: true",
        );
        out.check(
            d.clone(),
            a.retention.period.is_some(),
            "acceleration.retention_period",
            "retention_period",
        );
        out.check(
            d.clone(),
            a.retention.sql.is_some(),
            "acceleration.retention_sql",
            "retention_sql",
        );
        out.check(
            d.clone(),
            a.snapshots != SnapshotMode::Disabled,
            "acceleration.snapshots",
            format!("snapshots: {}", a.snapshots.as_str()),
        );
    }
    out.0
}

fn file_format(params: &SourceParams) -> String {
    match params {
        SourceParams::File { format } => format!("file_format: {}", format.as_str()),
        _ => String::new(),
    }
}

#[derive(Default)]
struct Refusals(Vec<ConfigError>);

impl Refusals {
    fn check(
        &mut self,
        dataset: Option<String>,
        when: bool,
        key: &str,
        what: impl std::fmt::Display,
    ) {
        if when {
            let message = format!("{what} is not supported yet by this version of pgaccel");
            self.0.push(ConfigError {
                dataset,
                key: key.to_string(),
                message,
            });
        }
    }
}
