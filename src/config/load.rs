//! Reading the YAML with the `config` crate: the file (or a string) plus `PGACCEL__`
//! environment overrides, merged into one untyped document for `validate.rs`.
//!
//! Overrides use `__` between levels and after the prefix, e.g.
//! `PGACCEL__RUNTIME__PG__LISTEN=0.0.0.0:15432`; the double underscore keeps
//! `PGACCEL_SECRET_*` variables (read by `${secrets:..}`) from being taken as keys.
//! Override keys are lower-cased by the `config` crate; file keys keep their case.

use std::path::Path;

use ::config::{Environment, File, FileFormat};
use serde_json::Value;

use super::error::{ConfigError, ConfigErrors};

/// The environment-variable prefix for overrides.
const ENV_PREFIX: &str = "PGACCEL";

/// Where the document's text comes from.
pub(crate) enum Input<'a> {
    Path(&'a Path),
    Yaml(&'a str),
}

/// The process environment's overrides.
pub(crate) fn process_overrides() -> Environment {
    Environment::with_prefix(ENV_PREFIX).separator("__")
}

/// Reads and merges the document; errors here are unreadable files or broken YAML.
pub(crate) fn document(input: Input<'_>, overrides: Environment) -> Result<Value, ConfigErrors> {
    let (origin, builder) = match input {
        Input::Path(path) => (
            path.display().to_string(),
            ::config::Config::builder().add_source(File::from(path).format(FileFormat::Yaml)),
        ),
        Input::Yaml(yaml) => (
            "(yaml)".to_string(),
            ::config::Config::builder().add_source(File::from_str(yaml, FileFormat::Yaml)),
        ),
    };
    builder
        .add_source(overrides)
        .build()
        .and_then(|merged| merged.try_deserialize::<Value>())
        .map_err(|error| {
            let message = format!("cannot read the configuration: {error}");
            ConfigErrors(vec![ConfigError::new(None, origin, message)])
        })
}
