//! Startup of a file acceleration: open its file, and serve the rows a
//! previous run left there when the dataset's configuration allows it (the
//! seeds' conditions for serving an existing acceleration while the source is
//! unavailable). Decides when the first refresh runs.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tracing::{debug, error, info, warn};

use crate::accelerator::{Checkpoint, FileVersion, Store, TableData};
use crate::config::{
    DatasetConfig, Mode, OnSchemaChange, RefreshMode, RefreshOnStartup, SourceRef, ZeroResults,
};
use crate::dataset::{Dataset, SnapshotReport};
use crate::metrics;
use crate::query::file_table::FileTable;

use super::schedule;

/// What the refresh loop does first.
#[derive(Debug)]
pub enum Startup {
    /// Nothing is served from the file: load from the source at once.
    /// `waits` names the configuration that kept persisted rows from being
    /// served, for the messages of a failed first load.
    Load { waits: Option<String> },
    /// The file's rows are served; refresh from the source at once.
    RefreshNow,
    /// The file's rows are served; the next refresh is due at this time
    /// (`None`: only on demand).
    At(Option<DateTime<Utc>>),
    /// The file cannot be used; the dataset reports the error and does not
    /// refresh.
    Broken,
}

/// Why a dataset whose file holds rows does not serve them until its source
/// answers, as the seeds word it (`uses ...`); `None` when it serves them.
fn waits_for_source(config: &DatasetConfig) -> Option<String> {
    let acceleration = &config.acceleration;
    if acceleration.mode == Mode::FileUpdate && acceleration.refresh_mode != RefreshMode::Disabled {
        return Some("`mode: file_update`".to_owned());
    }
    if matches!(
        acceleration.refresh_mode,
        RefreshMode::Changes | RefreshMode::Caching
    ) {
        return Some(format!(
            "`refresh_mode: {}`",
            acceleration.refresh_mode.as_str()
        ));
    }
    if matches!(config.from, SourceRef::File { .. }) {
        return Some("the `file` connector".to_owned());
    }
    // Rows kept under columns the source may no longer have are served
    // only while a change of them blocks the refresh.
    if acceleration.on_schema_change != OnSchemaChange::Block {
        return Some(format!(
            "`on_schema_change: {}`",
            acceleration.on_schema_change.as_str()
        ));
    }
    None
}

/// Opens the file of a file acceleration (a no-op for memory ones) and
/// serves what it holds where allowed. `keeps_time`: the checkpoint's last
/// refresh time is reported (not for a dataset that creates snapshots or
/// was restored from one, `from_snapshot`, until a refresh completes).
pub async fn open(
    dataset: &Dataset,
    partitions: usize,
    keeps_time: bool,
    from_snapshot: Option<SnapshotReport>,
) -> Startup {
    let name = dataset.name();
    let config = &dataset.config;
    let Some(path) = config.acceleration.file_path(&name) else {
        return Startup::Load { waits: None };
    };
    let (engine, recreate, memory_limit) = (
        config.acceleration.engine,
        config.acceleration.mode == Mode::FileCreate,
        config.acceleration.duckdb_memory_limit,
    );
    if let Some(reason) = config.acceleration.in_memory_reason() {
        info!(dataset = %name, "the acceleration file is read into memory to be queried, because the dataset uses {reason}");
    }
    let opened = {
        let name = name.clone();
        tokio::task::spawn_blocking(move || {
            let store = Store::open(&name, engine, &path, recreate, memory_limit)?;
            let checkpoint = store.checkpoint()?;
            Ok::<_, crate::accelerator::StoreError>((store, checkpoint))
        })
        .await
    };
    let (store, checkpoint) = match opened {
        Ok(Ok(found)) => found,
        Ok(Err(e)) => return broken(dataset, e.to_string()),
        Err(e) => {
            return broken(
                dataset,
                format!("opening the acceleration file failed: {e}"),
            );
        }
    };
    let store = Arc::new(store);
    dataset.acceleration.attach_store(Arc::clone(&store));
    let Some(checkpoint) = checkpoint else {
        return Startup::Load { waits: None };
    };
    if let Some(reason) = waits_for_source(config) {
        debug!(dataset = %name, "the acceleration file holds rows, but the dataset uses {reason}: they are not served before the source answers");
        return Startup::Load {
            waits: Some(reason),
        };
    }
    // Served from the file at once where it can be read in place; the
    // status says so now rather than once the rows are in memory.
    let startup = after_restore(dataset, &checkpoint);
    if config.acceleration.in_place() {
        return serve_version(
            dataset,
            store,
            checkpoint,
            startup,
            keeps_time,
            from_snapshot,
        )
        .await;
    }
    let mut from_snapshot = from_snapshot;
    let in_place = serve_in_place(dataset, &store, &checkpoint).await;
    if in_place {
        report_restored(
            dataset,
            &checkpoint,
            &startup,
            keeps_time,
            from_snapshot.take(),
        );
    }
    let read = {
        let checkpoint = checkpoint.clone();
        tokio::task::spawn_blocking(move || store.read(&checkpoint, partitions)).await
    };
    let data = match read {
        Ok(Ok(data)) => data,
        Ok(Err(e)) => {
            dataset.end_in_place_unread();
            return broken(dataset, e.to_string());
        }
        Err(e) => {
            dataset.end_in_place_unread();
            return broken(
                dataset,
                format!("reading the acceleration file failed: {e}"),
            );
        }
    };
    metrics::restored(
        &name,
        keeps_time.then(|| checkpoint.last_refresh.timestamp_millis()),
        data.rows(),
        data.bytes(),
        data.index_bytes(),
    );
    info!(
        dataset = %name,
        rows = data.rows(),
        last_refresh = %checkpoint.last_refresh,
        "serving the acceleration file from the last run"
    );
    let served = dataset.acceleration.publish(data);
    dataset.end_in_place();
    if !in_place {
        report_restored(dataset, &checkpoint, &startup, keeps_time, from_snapshot);
    }
    index_served(dataset, served, &checkpoint.primary_key).await;
    startup
}

/// Serves the version `checkpoint` describes from the file, in place (a
/// file acceleration queried in place: nothing is read into memory).
async fn serve_version(
    dataset: &Dataset,
    store: Arc<Store>,
    checkpoint: Checkpoint,
    startup: Startup,
    keeps_time: bool,
    from_snapshot: Option<SnapshotReport>,
) -> Startup {
    let name = dataset.name();
    let opened = {
        let checkpoint = checkpoint.clone();
        tokio::task::spawn_blocking(move || {
            let reader = store.reader(&checkpoint)?;
            Ok::<_, crate::accelerator::StoreError>((reader, store.bytes()))
        })
        .await
    };
    let (reader, bytes) = match opened {
        Ok(Ok(opened)) => opened,
        Ok(Err(e)) => return broken(dataset, e.to_string()),
        Err(e) => {
            return broken(
                dataset,
                format!("opening the acceleration file failed: {e}"),
            );
        }
    };
    let rows = reader.rows();
    metrics::restored(
        &name,
        keeps_time.then(|| checkpoint.last_refresh.timestamp_millis()),
        rows,
        usize::try_from(bytes).unwrap_or(usize::MAX),
        0,
    );
    info!(dataset = %name, rows, last_refresh = %checkpoint.last_refresh, "serving the acceleration file from the last run, in place");
    dataset.acceleration.publish_file(FileVersion {
        reader: Arc::new(reader),
        checkpoint: checkpoint.clone(),
        bytes,
    });
    report_restored(dataset, &checkpoint, &startup, keeps_time, from_snapshot);
    startup
}

/// When the first refresh runs after the file's rows are served.
fn after_restore(dataset: &Dataset, checkpoint: &Checkpoint) -> Startup {
    let name = dataset.name();
    let config = &dataset.config;
    let acceleration = &config.acceleration;
    let configured_sql = dataset.refresh_sql().map(|sql| sql.as_str().to_owned());
    if configured_sql != checkpoint.refresh_sql {
        info!(dataset = %name, "refresh_sql differs from the one the acceleration file was loaded with: refreshing at startup");
        return Startup::RefreshNow;
    }
    if !acceleration.primary_key.is_empty() && acceleration.primary_key != checkpoint.primary_key {
        info!(dataset = %name, "primary_key differs from the one the acceleration file was indexed by: refreshing at startup");
        return Startup::RefreshNow;
    }
    match (acceleration.refresh_mode, acceleration.refresh_on_startup) {
        // Append adds what is new since the file's rows once the source answers.
        // Loaded once already: never again.
        (RefreshMode::Disabled, _) => Startup::At(None),
        (RefreshMode::Append, _) | (_, RefreshOnStartup::Always) => Startup::RefreshNow,
        _ => {
            // `auto`: keep the schedule across the restart; an overdue
            // refresh runs at once.
            let due = schedule::next_due(
                acceleration.schedule.as_ref(),
                acceleration.jitter,
                checkpoint.last_refresh,
                &mut rand::rng(),
            );
            Startup::At(due)
        }
    }
}

/// The rows of `checkpoint` are served: Ready, with the checkpoint's last
/// refresh time where it is reported, or the snapshot they came from, and
/// the next refresh `startup` schedules (shown with the rows, never after).
fn report_restored(
    dataset: &Dataset,
    checkpoint: &Checkpoint,
    startup: &Startup,
    keeps_time: bool,
    from_snapshot: Option<SnapshotReport>,
) {
    if let Startup::At(due) = startup {
        dataset.set_next_refresh(*due);
    }
    dataset.loaded_with(checkpoint.refresh_sql.clone());
    match from_snapshot {
        Some(snapshot) => dataset.snapshot_restored(snapshot),
        None => dataset.restored(keeps_time.then_some(checkpoint.last_refresh)),
    }
}

/// Lets queries read the file of `store` in place (as `checkpoint` describes
/// it) until its rows are in memory; whether they do. Not for a dataset
/// whose `on_zero_results: use_source` fallback wraps the in-memory rows.
pub(super) async fn serve_in_place(
    dataset: &Dataset,
    store: &Arc<Store>,
    checkpoint: &Checkpoint,
) -> bool {
    if dataset.config.acceleration.on_zero_results == ZeroResults::UseSource {
        return false;
    }
    let reader = {
        let (store, checkpoint) = (Arc::clone(store), checkpoint.clone());
        tokio::task::spawn_blocking(move || store.reader(&checkpoint))
            .await
            .map_err(|e| e.to_string())
            .and_then(|found| found.map_err(|e| e.to_string()))
    };
    match reader {
        Ok(reader) => {
            dataset.serve_in_place(FileTable::new(Arc::clone(&dataset.acceleration), reader));
            debug!(dataset = %dataset.name(), "answering from the acceleration file while its rows are read into memory");
            true
        }
        Err(e) => {
            warn!(dataset = %dataset.name(), "the acceleration file cannot be read in place, so it is served once its rows are in memory: {e}");
            false
        }
    }
}

/// Builds the primary-key index of `served`, rows read back from a file
/// and already answering queries, and publishes it unless a newer version
/// replaced them meanwhile. Awaited before the dataset's next refresh, which
/// extends the index of the version it revises. Until it is published a
/// lookup by key scans the rows: slower, never different.
pub(super) async fn index_served(
    dataset: &Dataset,
    served: Arc<TableData>,
    primary_key: &[String],
) {
    let name = dataset.name();
    let started = std::time::Instant::now();
    let built = {
        let (rows, key) = (Arc::clone(&served), primary_key.to_vec());
        match tokio::task::spawn_blocking(move || rows.indexed(&key)).await {
            Ok(built) => built.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    };
    match built {
        Ok(Some(indexed)) => {
            let bytes = indexed.index_bytes();
            if dataset.acceleration.publish_index(&served, indexed) {
                metrics::index_built(&name, bytes);
                debug!(dataset = %name, took_ms = started.elapsed().as_millis() as u64, "the primary-key index of the served rows is built");
            }
        }
        Ok(None) => {}
        Err(e) => {
            warn!(dataset = %name, "building the primary-key index failed, so lookups by key scan the table: {e}");
        }
    }
}

fn broken(dataset: &Dataset, message: String) -> Startup {
    error!(dataset = %dataset.name(), "{message}; the dataset is not loaded until this is fixed");
    dataset.refresh_failed(message);
    Startup::Broken
}
