//! From the parsed document to a `Config`: splits it into sections, deserializes each
//! on its own (one dataset per pass, so one bad entry does not hide another's errors),
//! validates them, and applies the rules that span datasets. Returns every error found.

use serde_json::Value;

use super::Config;
use super::dataset::{self, DatasetConfig, ReadyState};
use super::error::{ConfigError, ConfigErrors, Report};
use super::raw::{self, RawDataset, RawRoot, RawRuntime, RawSnapshots};
use super::runtime::{self, RuntimeReadyState, SnapshotStore};
use super::secret::Lookup;
use super::values::Values;

/// Validates the whole document; `lookup` resolves `${secrets:..}`/`${env:..}`.
pub(crate) fn validate(document: Value, lookup: Lookup<'_>) -> Result<Config, ConfigErrors> {
    let mut errors = Vec::new();
    if !document.is_object() && !document.is_null() {
        errors.push(ConfigError::new(
            None,
            "(top level)",
            "the file must be a mapping with the keys runtime, snapshots and datasets",
        ));
        return Err(ConfigErrors(errors));
    }
    let document = if document.is_null() {
        Value::Object(Default::default())
    } else {
        document
    };
    let root = raw::section::<RawRoot>(document, "", &mut Report::new(None, &mut errors));
    let root = root.unwrap_or(RawRoot {
        runtime: None,
        snapshots: None,
        datasets: None,
    });

    let mut report = Report::new(None, &mut errors);
    let raw_runtime =
        present(root.runtime).and_then(|v| raw::section::<RawRuntime>(v, "runtime", &mut report));
    let raw_snapshots = present(root.snapshots)
        .and_then(|v| raw::section::<RawSnapshots>(v, "snapshots", &mut report));
    let mut values = Values::new(&mut report, lookup);
    let runtime = runtime::parse_runtime(&mut values, &raw_runtime.unwrap_or_default());
    let snapshots = raw_snapshots.map(|raw| runtime::parse_snapshots(&mut values, &raw));
    let store_enabled = snapshots
        .as_ref()
        .is_some_and(|store: &SnapshotStore| store.enabled);
    let defaults = dataset::Defaults {
        snapshot_store: store_enabled,
        snapshot_queue: store_enabled
            && snapshots
                .as_ref()
                .is_some_and(|store| store.params.contains_key("s3_queue_url")),
        ready_state: match runtime.ready_state {
            RuntimeReadyState::OnLoad => ReadyState::OnLoad,
            RuntimeReadyState::OnRegistration => ReadyState::OnRegistration,
        },
    };
    let datasets = datasets(present(root.datasets), &defaults, lookup, &mut errors);

    if errors.is_empty() {
        Ok(Config {
            runtime,
            snapshots,
            datasets,
        })
    } else {
        Err(ConfigErrors(errors))
    }
}

/// `key:` with no value is the same as leaving the key out.
fn present(value: Option<Value>) -> Option<Value> {
    value.filter(|v| !v.is_null())
}

fn datasets(
    value: Option<Value>,
    defaults: &dataset::Defaults,
    lookup: Lookup<'_>,
    errors: &mut Vec<ConfigError>,
) -> Vec<DatasetConfig> {
    let entries = match value {
        None => return Vec::new(),
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            errors.push(ConfigError::new(
                None,
                "datasets",
                "must be a list of datasets (each entry starting with '- from: ...')",
            ));
            return Vec::new();
        }
    };
    let mut datasets: Vec<(String, DatasetConfig)> = Vec::new();
    for (index, entry) in entries.into_iter().enumerate() {
        if !entry.is_object() {
            let message = "each dataset must be a mapping of keys, starting with '- from: ...'";
            errors.push(ConfigError::new(
                None,
                format!("datasets[{index}]"),
                message,
            ));
            continue;
        }
        let label = label(&entry, index);
        let mut report = Report::new(Some(label.clone()), errors);
        let Some(raw) = raw::section::<RawDataset>(entry, "", &mut report) else {
            continue;
        };
        let mut values = Values::new(&mut report, lookup);
        let Some(dataset) = dataset::parse(&mut values, &raw, defaults) else {
            continue;
        };
        if let Some((other, _)) = datasets
            .iter()
            .find(|(_, d)| d.name.folded() == dataset.name.folded())
        {
            let message = format!(
                "dataset name '{}' is already used by dataset '{other}'; names must be unique (case-insensitive)",
                dataset.name
            );
            report.error("name", message);
            continue;
        }
        if let Some(file) = dataset.acceleration.file_path(&dataset.name.to_string())
            && let Some((other, _)) = datasets.iter().find(|(_, d)| {
                d.acceleration.file_path(&d.name.to_string()).as_ref() == Some(&file)
            })
        {
            let message = format!(
                "the acceleration file {} is already used by dataset '{other}'; each dataset needs a file of its own",
                file.display()
            );
            let key = match dataset.acceleration.engine {
                super::Engine::Duckdb => "acceleration.params.duckdb_file",
                _ => "acceleration.params.sqlite_file",
            };
            report.error(key, message);
            continue;
        }
        datasets.push((label, dataset));
    }
    datasets.into_iter().map(|(_, d)| d).collect()
}

/// How errors refer to a dataset: its name as written, else its position.
fn label(entry: &Value, index: usize) -> String {
    match entry.get("name").and_then(Value::as_str) {
        Some(name) if !name.trim().is_empty() => name.trim().to_string(),
        _ => format!("datasets[{index}]"),
    }
}
