//! `refresh_mode: snapshot`: a read-only acceleration that follows the
//! snapshots a writer publishes and never contacts its source. Each poll
//! reads metadata.json once, conditionally on the ETag of the last poll
//! that loaded the current snapshot, and uses that one read for the id
//! comparison, the schema check and the download; a newer snapshot is
//! verified, read into memory and published in one swap, so queries see the
//! old snapshot or the new one, never a mix.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::accelerator::{Checkpoint, Store, TableData};
use crate::config::{BootstrapOnFailure, Engine, Schedule};
use crate::dataset::{Dataset, SnapshotReport};
use crate::metrics;
use crate::refresh::{persisted, retry};
use crate::snapshot::files::{self, DownloadError, sibling};
use crate::snapshot::location::Location;
use crate::snapshot::metadata::{self, DatasetSnapshots, Read, SnapshotEntry, SnapshotSchema};
use crate::snapshot::queue::Notified;
use crate::snapshot::{Setup, restore};

/// How often the location is checked without a `refresh_check_interval`.
const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// Follows the snapshots of `dataset` until `shutdown`.
pub async fn run(
    dataset: Arc<Dataset>,
    setup: Setup,
    partitions: usize,
    shutdown: CancellationToken,
) {
    let name = dataset.name();
    let Some(file) = dataset.config.acceleration.file_path(&name) else {
        error!(dataset = %name, "refresh_mode: snapshot needs a file engine");
        return;
    };
    let interval = match dataset.config.acceleration.schedule {
        Some(Schedule::Interval(every)) => every,
        _ => DEFAULT_INTERVAL,
    };
    let mut notified = setup.notified;
    let mut follower = Follower {
        dataset,
        location: setup.location,
        behavior: setup.on_failure,
        partitions,
        file,
        loaded: None,
        etag: None,
        announced_wait: false,
        attempts: 0,
    };
    let mut retry_soon = follower.poll().await;
    loop {
        let wait = if retry_soon {
            follower.attempts += 1;
            retry::delay(follower.attempts).min(interval)
        } else {
            follower.attempts = 0;
            interval
        };
        retry_soon = tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(read) = notification(&mut notified) => follower.consider(&read).await,
            _ = follower.dataset.refresh_requested() => follower.poll().await,
            _ = tokio::time::sleep(wait) => follower.poll().await,
        };
    }
    follower.dataset.shutting_down();
}

/// The next metadata.json a notification hands over; pending for ever
/// without a queue (or once the queue's listener is gone).
async fn notification(notified: &mut Option<Notified>) -> Option<Arc<Read>> {
    let Some(receiver) = notified else {
        return std::future::pending().await;
    };
    loop {
        if receiver.changed().await.is_err() {
            *notified = None;
            return std::future::pending().await;
        }
        if let Some(read) = receiver.borrow_and_update().clone() {
            return Some(read);
        }
    }
}

struct Follower {
    dataset: Arc<Dataset>,
    location: Location,
    behavior: BootstrapOnFailure,
    partitions: usize,
    /// Where the loaded snapshot is kept.
    file: PathBuf,
    /// The snapshot served, once one is.
    loaded: Option<SnapshotEntry>,
    /// The ETag of the last read of metadata.json that loaded its current
    /// snapshot; sent in If-None-Match.
    etag: Option<String>,
    announced_wait: bool,
    /// Consecutive failed attempts at a first snapshot with
    /// `bootstrap_on_failure_behavior: retry`.
    attempts: u32,
}

impl Follower {
    fn name(&self) -> String {
        self.dataset.name()
    }

    /// One poll. True when a first snapshot failed to load and `retry`
    /// asks to poll again soon.
    async fn poll(&mut self) -> bool {
        match metadata::read(&self.location, self.etag.as_deref()).await {
            Ok(Read::NotModified) => {
                metrics::snapshot_poll(&self.name(), "not_modified");
                false
            }
            Ok(read) => self.consider(&read).await,
            Err(e) => {
                self.cannot_refresh("snapshot_download_failed", &e.to_string());
                self.loaded.is_none() && self.behavior == BootstrapOnFailure::Retry
            }
        }
    }

    /// Acts on one read of metadata.json (a poll's, or the one a
    /// notification handed over): the id comparison, the schema check and
    /// the download all use it.
    async fn consider(&mut self, read: &Read) -> bool {
        let name = self.name();
        let version = match read {
            Read::Found { version, .. } => version.e_tag.clone(),
            _ => None,
        };
        let Some(snapshots) = restore::of_dataset(read, &name).filter(|s| s.current().is_some())
        else {
            self.etag = None;
            if self.loaded.is_none() {
                if !self.announced_wait {
                    self.announced_wait = true;
                    info!(dataset = %name, "Snapshot acceleration for dataset '{name}' is waiting for its first snapshot");
                }
            } else {
                self.cannot_refresh(
                    "snapshot_not_found",
                    &format!("{} has no current snapshot of it", self.location.url),
                );
            }
            return false;
        };
        let current = snapshots.current().expect("filtered above").clone();
        if let Some(loaded) = &self.loaded {
            if loaded.id == current.id {
                metrics::snapshot_poll(&name, "unchanged");
                self.etag = version;
                self.dataset.snapshot_checked();
                return false;
            }
            if current.id < loaded.id {
                self.etag = None;
                let message = format!(
                    "the snapshot metadata current id {} is older than the locally loaded snapshot {}",
                    current.id, loaded.id
                );
                self.cannot_refresh("snapshot_older_than_loaded", &message);
                return false;
            }
            if let Some(difference) = current.schema.difference(&loaded.schema) {
                self.etag = None;
                self.cannot_refresh("snapshot_schema_mismatch", &difference);
                return false;
            }
        }
        match self.load(&current).await {
            Ok(()) => {
                metrics::snapshot_poll(&name, "loaded");
                self.etag = version;
                false
            }
            Err(e) => {
                self.etag = None;
                if self.loaded.is_some() {
                    self.cannot_refresh("snapshot_download_failed", &e);
                    return false;
                }
                self.first_load_failed(snapshots, &e).await
            }
        }
    }

    /// A first snapshot did not load: `fallback` tries older ones, `retry`
    /// polls again soon, `warn` at the next interval.
    async fn first_load_failed(&mut self, snapshots: &DatasetSnapshots, cause: &str) -> bool {
        let name = self.name();
        metrics::refresh_failed(&name, "snapshot_download_failed");
        self.dataset.refresh_failed(format!(
            "Snapshot acceleration for dataset '{name}' could not load its first snapshot: {cause}"
        ));
        warn!(dataset = %name, "Snapshot acceleration for dataset '{name}' could not load its first snapshot: {cause}");
        match self.behavior {
            BootstrapOnFailure::Retry => true,
            BootstrapOnFailure::Warn => false,
            BootstrapOnFailure::Fallback => {
                for older in snapshots.older() {
                    match self.load(older).await {
                        Ok(()) => return false,
                        Err(e) => warn!(dataset = %name, "{e}"),
                    }
                }
                false
            }
        }
    }

    /// The dataset keeps serving what it has; counted and logged as the
    /// seed words it.
    fn cannot_refresh(&self, reason: &'static str, cause: &str) {
        let name = self.name();
        metrics::refresh_failed(&name, reason);
        metrics::snapshot_poll(&name, reason.trim_start_matches("snapshot_"));
        match &self.loaded {
            Some(loaded) => {
                self.dataset.snapshot_checked();
                warn!(
                dataset = %name,
                "Dataset '{name}' cannot refresh from its snapshot location, so it keeps serving snapshot {}: {cause}",
                loaded.id
                );
            }
            None => {
                warn!(dataset = %name, "Snapshot acceleration for dataset '{name}' has no snapshot to serve: {cause}")
            }
        }
    }

    /// Reads the downloaded `entry` at `incoming` into memory, once its
    /// columns are checked and `durable` has synced it, and moves it into
    /// place; its rows and the primary key to index them by. A dataset with
    /// nothing served yet answers from the file meanwhile (reported as
    /// `report`).
    async fn read(
        &self,
        entry: &SnapshotEntry,
        engine: Engine,
        incoming: &Path,
        durable: tokio::task::JoinHandle<Result<(), String>>,
        report: SnapshotReport,
    ) -> Result<(TableData, Vec<String>), String> {
        let (file, table) = (incoming.to_owned(), self.name());
        let (store, checkpoint) =
            tokio::task::spawn_blocking(move || open_file(&table, engine, &file))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("snapshot {} cannot be read: {e}", entry.id))?;
        if SnapshotSchema::of(&checkpoint.schema)
            .difference(&entry.schema)
            .is_some()
        {
            return Err(format!(
                "snapshot {} holds other columns than metadata.json records",
                entry.id
            ));
        }
        let store = Arc::new(store);
        if self.dataset.acceleration.current().is_none()
            && persisted::serve_in_place(&self.dataset, &store, &checkpoint).await
        {
            self.dataset.snapshot_loaded(report, chrono::Utc::now());
        }
        let partitions = self.partitions;
        let data = {
            let checkpoint = checkpoint.clone();
            tokio::task::spawn_blocking(move || store.read(&checkpoint, partitions))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| format!("snapshot {} cannot be read: {e}", entry.id))?
        };
        durable
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("snapshot {} cannot be kept: {e}", entry.id))?;
        replace(incoming, &self.file).map_err(|e| {
            format!(
                "cannot keep snapshot {} at {}: {e}",
                entry.id,
                self.file.display()
            )
        })?;
        Ok((data, checkpoint.primary_key))
    }

    /// Downloads, verifies and serves `entry`.
    async fn load(&mut self, entry: &SnapshotEntry) -> Result<(), String> {
        let name = self.name();
        self.dataset.refresh_started();
        let started = std::time::Instant::now();
        let incoming = sibling(&self.file, "incoming");
        restore::fetch(&self.location, &name, entry, &incoming, false)
            .await
            .map_err(|e: DownloadError| e.to_string())?;
        // Synced to disk while it is read; moved into place after both.
        let durable = tokio::spawn({
            let incoming = incoming.clone();
            async move { files::make_durable(&incoming).await }
        });
        // The engine the writer kept it in (a `file_format: snapshot`
        // dataset names none of its own).
        let engine = match entry.engine.as_str() {
            "duckdb" => Engine::Duckdb,
            "sqlite" => Engine::Sqlite,
            other => {
                return Err(format!(
                    "snapshot {} was written by the {other} engine, which pgaccel cannot read",
                    entry.id
                ));
            }
        };
        let report = SnapshotReport {
            id: entry.id.clone(),
            created_at: entry.created_at,
            origin: "loaded",
        };
        let read = self
            .read(entry, engine, &incoming, durable, report.clone())
            .await;
        let (data, primary_key) = match read {
            Ok(read) => read,
            Err(message) => {
                self.dataset.end_in_place_unread();
                let _ = std::fs::remove_file(&incoming);
                return Err(message);
            }
        };
        let rows = data.rows();
        metrics::refresh_succeeded(
            &name,
            entry.created_at.timestamp_millis(),
            started.elapsed(),
            rows,
            data.bytes(),
            data.index_bytes(),
        );
        let served = self.dataset.acceleration.publish(data);
        self.dataset.end_in_place();
        self.dataset.snapshot_loaded(report, chrono::Utc::now());
        info!(dataset = %name, snapshot = %entry.id, rows, "dataset '{name}' serves snapshot {}", entry.id);
        self.loaded = Some(entry.clone());
        persisted::index_served(&self.dataset, served, &primary_key).await;
        Ok(())
    }
}

/// The acceleration file at `file` and what its checkpoint says of it.
fn open_file(
    table: &str,
    engine: crate::config::Engine,
    file: &Path,
) -> Result<(Store, Checkpoint), String> {
    let store = Store::open(table, engine, file, false, None).map_err(|e| e.to_string())?;
    let checkpoint = store
        .checkpoint()
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the file holds no acceleration of dataset '{table}'"))?;
    Ok((store, checkpoint))
}

/// Moves `incoming` onto `file` (and drops the journal files an engine may
/// have left beside the old one).
fn replace(incoming: &Path, file: &Path) -> std::io::Result<()> {
    for suffix in ["wal", "-wal", "-journal", "-shm"] {
        let mut path = file.as_os_str().to_owned();
        if !suffix.starts_with('-') {
            path.push(".");
        }
        path.push(suffix);
        let _ = std::fs::remove_file(&path);
    }
    std::fs::rename(incoming, file)
}
