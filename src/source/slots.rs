//! The replication slots this pgaccel created, recorded in
//! `.pgaccel/data/replication_slots.json` (the default folder of the
//! acceleration files, relative to the working directory). A slot keeps WAL
//! on its source for as long as it exists, so a dataset removed from the
//! configuration must not leave one behind unnoticed: at the next start,
//! its slot is dropped when the dataset had `params.drop_slot_on_remove:
//! true`, and named in a warning otherwise.
//!
//! The record is this instance's own: two pgaccel instances streaming from
//! one source each clean up only the slots they created.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use super::pg_stream::{self, Names};
use crate::config::{
    DEFAULT_FILE_FOLDER, DatasetConfig, PostgresParams, RefreshMode, SourceParams, SourceRef,
};

const FILE_NAME: &str = "replication_slots.json";

/// Serializes the read-modify-write of the record within this process.
static RECORD: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Entry {
    dataset: String,
    slot: String,
    /// `host:port/database` of the source.
    server: String,
    drop_on_remove: bool,
}

fn path() -> PathBuf {
    PathBuf::from(DEFAULT_FILE_FOLDER).join(FILE_NAME)
}

fn load() -> Vec<Entry> {
    match std::fs::read(path()) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            warn!(file = %path().display(), "the record of replication slots cannot be read, so slots of removed datasets are not cleaned up: {e}");
            Vec::new()
        }),
        Err(_) => Vec::new(),
    }
}

/// Writes the record whole, through a temporary file renamed over it, so
/// a crash leaves the old record or the new one.
fn save(entries: &[Entry]) {
    let target = path();
    let written = (|| {
        if let Some(folder) = target.parent() {
            std::fs::create_dir_all(folder)?;
        }
        let temporary = target.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(entries).map_err(std::io::Error::other)?;
        std::fs::write(&temporary, text)?;
        std::fs::rename(&temporary, &target)
    })();
    if let Err(e) = written {
        warn!(file = %target.display(), "cannot record the replication slots this pgaccel created: {e}");
    }
}

/// The source server a dataset's parameters name, as `host:port/database`.
fn server(params: &PostgresParams) -> String {
    if let Some(text) = &params.connection_string
        && let Ok(parsed) = tokio_postgres::Config::from_str(text.expose())
    {
        let host = match parsed.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
            _ => String::new(),
        };
        let port = parsed.get_ports().first().copied().unwrap_or(5432);
        let database = parsed
            .get_dbname()
            .or(parsed.get_user())
            .unwrap_or_default();
        return format!("{host}:{port}/{database}");
    }
    format!("{}:{}/{}", params.host, params.port, params.db)
}

/// Records that `dataset` streams through `slot`.
pub async fn record(dataset: &str, params: &PostgresParams, slot: &str) {
    let _held = RECORD.lock().await;
    let mut entries = load();
    entries.retain(|entry| entry.dataset != dataset);
    entries.push(Entry {
        dataset: dataset.to_owned(),
        slot: slot.to_owned(),
        server: server(params),
        drop_on_remove: params.drop_slot_on_remove,
    });
    entries.sort();
    save(&entries);
}

/// At startup: the slots recorded for datasets that no longer stream
/// through them are dropped (`drop_slot_on_remove: true`, through a
/// configured dataset of the same source) or named in a warning.
pub async fn clean_up(datasets: &[DatasetConfig]) {
    let _held = RECORD.lock().await;
    let entries = load();
    if entries.is_empty() {
        return;
    }
    let postgres: Vec<(&DatasetConfig, &PostgresParams)> = datasets
        .iter()
        .filter_map(|config| match (&config.from, &config.params) {
            (SourceRef::Postgres { .. }, SourceParams::Postgres(params)) => Some((config, params)),
            _ => None,
        })
        .collect();
    let streaming: BTreeSet<(String, String)> = postgres
        .iter()
        .filter(|(config, _)| {
            config.acceleration.enabled && config.acceleration.refresh_mode == RefreshMode::Changes
        })
        .map(|(config, params)| {
            let name = config.name.to_string();
            let slot = Names::of(&name, params).slot;
            (name, slot)
        })
        .collect();
    let mut kept = Vec::new();
    for entry in entries {
        if streaming.contains(&(entry.dataset.clone(), entry.slot.clone())) {
            kept.push(entry);
            continue;
        }
        let via = postgres
            .iter()
            .map(|(_, params)| *params)
            .find(|params| server(params) == entry.server);
        match (entry.drop_on_remove, via) {
            (true, Some(params)) => {
                match pg_stream::drop_slot(&entry.dataset, params, &entry.slot).await {
                    Ok(()) => {
                        info!(dataset = %entry.dataset, slot = %entry.slot, "dropped the replication slot of a dataset no longer configured to stream changes (drop_slot_on_remove: true)");
                    }
                    Err(e) => {
                        warn!(dataset = %entry.dataset, slot = %entry.slot, "cannot drop the replication slot of a dataset no longer configured to stream changes; it keeps WAL on {}: {e}", entry.server);
                        kept.push(entry);
                    }
                }
            }
            (true, None) => {
                warn!(dataset = %entry.dataset, slot = %entry.slot, "the replication slot of a dataset no longer configured is left on {}: no configured dataset reaches that source to drop it; drop it there with SELECT pg_drop_replication_slot('{}')", entry.server, entry.slot);
                kept.push(entry);
            }
            (false, via) => {
                let exists = match via {
                    Some(params) => pg_stream::slot_exists(&entry.dataset, params, &entry.slot)
                        .await
                        .unwrap_or(true),
                    None => true,
                };
                if exists {
                    pg_stream::warn_slot_left(&entry.dataset, &entry.slot);
                    kept.push(entry);
                }
            }
        }
    }
    save(&kept);
}
