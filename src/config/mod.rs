//! Configuration: reads `pgaccel.yaml` (plus `PGACCEL__` environment overrides),
//! substitutes `${secrets:NAME}`/`${env:NAME}`, and turns the raw YAML into validated
//! types where invalid states cannot be expressed. Every error names the dataset and the
//! dotted key and says what would be valid; all errors are collected, not just the
//! first. This module decides *what* the configuration means; whether this version of
//! pgaccel implements it is asked separately through [`Config::unsupported`]. It never
//! opens connections or touches files other than the configuration itself.
//!
//! Files: `raw.rs` (serde mirror of the YAML), `values.rs` (scalar conversions),
//! `dataset.rs`, `source.rs`, `params.rs`, `acceleration.rs`, `policy.rs`, `runtime.rs` (validated types and their
//! rules), `validate.rs` (whole-document pass), `load.rs` (the `config` crate),
//! `secret.rs`, `duration.rs`, `schedule.rs`, `support.rs` (not yet implemented keys).

mod acceleration;
mod dataset;
mod duration;
mod error;
mod load;
mod params;
mod policy;
mod raw;
mod refresh_sql;
mod retention_sql;
mod runtime;
mod schedule;
mod secret;
mod source;
mod support;
mod validate;
mod values;

#[cfg(test)]
mod fixtures;

use std::path::Path;

pub use acceleration::{
    Acceleration, Caching, DEFAULT_FILE_FOLDER, Engine, Mode, OnSchemaChange, RefreshMode,
    RefreshOnStartup, SnapshotMode, ZeroResults,
};
pub use dataset::{DatasetConfig, DatasetName, ReadyState, TimeFormat};
pub use error::{ConfigError, ConfigErrors};
pub use params::{FileFormat, HttpParams, MysqlParams, PostgresParams, SourceParams, SslMode};
pub use policy::{Retention, RetryPolicy};
pub use refresh_sql::RefreshSql;
pub(crate) use refresh_sql::normalized as normalized_identifier;
pub use retention_sql::RetentionSql;
pub use runtime::{
    AuthConfig, AuthMethod, BootstrapOnFailure, HttpConfig, PgConfig, QueueUrl, RuntimeConfig,
    RuntimeReadyState, SnapshotStore, TlsConfig, TlsVersion, Unsupported, UserConfig,
    parse_queue_url, snapshot_location_error,
};
pub use schedule::{CronSchedule, Schedule};
pub use secret::Secret;
pub use source::SourceRef;

/// A validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub runtime: RuntimeConfig,
    /// The top-level `snapshots:` block; `None` when absent.
    pub snapshots: Option<SnapshotStore>,
    /// In file order.
    pub datasets: Vec<DatasetConfig>,
}

/// Reads, parses and validates the file at `path`. Does not check whether this version
/// supports every key; call [`Config::unsupported`] for that.
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    let document = load::document(load::Input::Path(path), load::process_overrides())?;
    validate::validate(document, &secret::process_env)
}

/// Like [`load`], from YAML text; environment overrides and secrets still apply.
pub fn from_yaml_str(yaml: &str) -> Result<Config, ConfigErrors> {
    let document = load::document(load::Input::Yaml(yaml), load::process_overrides())?;
    validate::validate(document, &secret::process_env)
}

impl Config {
    /// Keys whose behaviour this version of pgaccel does not implement yet; startup
    /// refuses a configuration for which this is not empty.
    pub fn unsupported(&self) -> Vec<ConfigError> {
        support::unsupported(self)
    }
}
