//! What this version of pgaccel does not implement yet. The configuration may be valid,
//! but startup refuses it rather than silently behaving differently. Everything lives in
//! `unsupported`, one line per feature: implementing a feature means deleting its line.

use std::fmt::Display;

use super::Config;
use super::acceleration::RefreshMode;
use super::dataset::DatasetConfig;
use super::error::ConfigError;
use super::source::SourceRef;

/// Every key whose behaviour is not implemented yet, naming dataset and key.
#[rustfmt::skip] // one line per feature, so that implementing one deletes one line
pub(crate) fn unsupported(config: &Config) -> Vec<ConfigError> {
    let mut out = Vec::new();
    for d in &config.datasets {
        let (a, n) = (&d.acceleration, Some(d));
        refuse(&mut out, n, !matches!(d.from, SourceRef::Postgres { .. } | SourceRef::Mysql { .. } | SourceRef::Sqlite { .. } | SourceRef::Duckdb { .. } | SourceRef::File { .. } | SourceRef::S3 { .. }), "from", format!("the {} source", d.from.kind()));
        refuse(&mut out, n, !matches!(a.refresh_mode, RefreshMode::Full | RefreshMode::Append | RefreshMode::Changes | RefreshMode::Caching | RefreshMode::Snapshot | RefreshMode::Disabled), "acceleration.refresh_mode", format!("refresh_mode: {}", a.refresh_mode.as_str()));
    }
    out
}

/// Records one refusal when `when` holds.
fn refuse(
    out: &mut Vec<ConfigError>,
    dataset: Option<&DatasetConfig>,
    when: bool,
    key: &str,
    what: impl Display,
) {
    if when {
        let message = format!("{what} is not supported yet by this version of pgaccel");
        let dataset = dataset.map(|d| d.name.to_string());
        out.push(ConfigError {
            dataset,
            key: key.to_string(),
            message,
        });
    }
}
