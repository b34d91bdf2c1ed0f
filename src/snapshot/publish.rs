//! The writer side (`acceleration.snapshots: enabled | create_only`): after
//! each completed refresh, a consistent copy of the acceleration file is
//! taken (under the file's lock, never while it is written) and uploaded in
//! the background to
//! `<location>/month=YYYY-MM/day=YYYY-MM-DD/dataset=<name>/<name>_<id>.<ext>`,
//! then made current in metadata.json with a conditional write. Failed
//! uploads are retried with the refresh backoff; a newer copy replaces one
//! still waiting, and neither queries nor the next refresh wait for either.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, NaiveDateTime, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::files::{self, sibling};
use super::location::Location;
use super::metadata::{self, MetadataError, Read, SnapshotEntry, SnapshotSchema};
use crate::config::Engine;
use crate::dataset::{Dataset, SnapshotReport};
use crate::metrics;
use crate::refresh::retry;

/// The format of snapshot ids and of the time in snapshot file names.
pub const ID_FORMAT: &str = "%Y%m%dT%H%M%SZ";
/// How often a metadata update is tried again at once after another
/// writer's update got in first.
const CONFLICT_ATTEMPTS: usize = 20;

/// A consistent copy of an acceleration file, waiting to be uploaded.
#[derive(Debug)]
struct Copy {
    file: PathBuf,
    rows: u64,
    schema: SchemaRef,
    taken: DateTime<Utc>,
}

impl Drop for Copy {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// Publishes the snapshots of one dataset.
#[derive(Debug)]
pub struct Publisher {
    dataset: Arc<Dataset>,
    next: watch::Sender<Option<Arc<Copy>>>,
    /// Numbers the local copies, so a new one never overwrites one still
    /// uploading.
    copies: AtomicU64,
}

impl Publisher {
    /// Starts the upload task of `dataset`, which runs until `shutdown`.
    pub fn start(
        dataset: Arc<Dataset>,
        engine: Engine,
        location: Location,
        shutdown: CancellationToken,
    ) -> Publisher {
        let (next, receiver) = watch::channel(None);
        tokio::spawn(upload_loop(
            Arc::clone(&dataset),
            engine,
            location,
            receiver,
            shutdown,
        ));
        Publisher {
            dataset,
            next,
            copies: AtomicU64::new(0),
        }
    }

    /// Takes a consistent copy of the dataset's acceleration file and
    /// queues it for upload, replacing a copy still queued. Runs on the
    /// refresh task after a completed refresh, before the next one can
    /// write; a failure is logged and counted (the next refresh publishes
    /// again).
    pub async fn publish(&self) {
        let name = self.dataset.name();
        let acceleration = &self.dataset.acceleration;
        let (Some(store), Some(rows), Some(schema)) = (
            acceleration.store().cloned(),
            acceleration.served_rows(),
            acceleration.served_schema(),
        ) else {
            return;
        };
        let number = self.copies.fetch_add(1, Ordering::Relaxed);
        let file = sibling(store.path(), &format!("snapshot-{number}"));
        let target = file.clone();
        let exported = tokio::task::spawn_blocking(move || store.export(&target))
            .await
            .map_err(|e| e.to_string())
            .and_then(|result| result.map_err(|e| e.to_string()));
        if let Err(message) = exported {
            let _ = std::fs::remove_file(&file);
            metrics::snapshot_publish_failed(&name);
            warn!(dataset = %name, "cannot take a snapshot of dataset '{name}': {message}");
            return;
        }
        let copy = Copy {
            file,
            rows: rows as u64,
            schema,
            taken: Utc::now(),
        };
        let _ = self.next.send(Some(Arc::new(copy)));
    }
}

async fn upload_loop(
    dataset: Arc<Dataset>,
    engine: Engine,
    location: Location,
    mut receiver: watch::Receiver<Option<Arc<Copy>>>,
    shutdown: CancellationToken,
) {
    let name = dataset.name();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            changed = receiver.changed() => if changed.is_err() { return },
        }
        let Some(mut copy) = receiver.borrow_and_update().clone() else {
            continue;
        };
        let mut failures = 0;
        loop {
            match publish_once(&name, engine, &location, &copy).await {
                Ok(entry) => {
                    metrics::snapshot_published(&name, entry.size);
                    info!(dataset = %name, snapshot = %entry.id, bytes = entry.size, "published snapshot {} of dataset '{name}' to {}", entry.id, location.url);
                    dataset.snapshot_published(SnapshotReport {
                        id: entry.id,
                        created_at: entry.created_at,
                        origin: "published",
                    });
                    break;
                }
                Err(message) => {
                    failures += 1;
                    metrics::snapshot_publish_failed(&name);
                    let wait = retry::delay(failures);
                    warn!(dataset = %name, "publishing a snapshot of dataset '{name}' failed, retrying in {:.1}s: {message}", wait.as_secs_f64());
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(wait) => {}
                        // A newer copy supersedes this one.
                        changed = receiver.changed() => {
                            if changed.is_err() { return }
                            match receiver.borrow_and_update().clone() {
                                Some(newer) => { copy = newer; failures = 0; }
                                None => break,
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Uploads `copy` and makes it the dataset's current snapshot.
async fn publish_once(
    dataset: &str,
    engine: Engine,
    location: &Location,
    copy: &Copy,
) -> Result<SnapshotEntry, String> {
    // The id follows the newest one published, even within one second.
    // This read is also the base of the first metadata update below: the
    // conditional write refuses it if another writer got in meanwhile.
    let mut read = Some(
        metadata::read(location, None)
            .await
            .map_err(|e| e.to_string())?,
    );
    let known = match &read {
        Some(Read::Found { metadata, .. }) => metadata
            .datasets
            .get(dataset)
            .and_then(|d| d.snapshots.iter().map(|s| s.id.clone()).max()),
        _ => None,
    };
    let at = next_id_time(copy.taken, known.as_deref());
    let id = at.format(ID_FORMAT).to_string();
    let extension = engine.as_str();
    let path = format!(
        "month={}/day={}/dataset={dataset}/{dataset}_{id}.{extension}",
        at.format("%Y-%m"),
        at.format("%Y-%m-%d"),
    );
    let uploaded = files::upload(location, &copy.file, &path).await?;
    let entry = SnapshotEntry {
        id: id.clone(),
        path,
        sha256: uploaded.sha256,
        size: uploaded.size,
        engine: extension.to_owned(),
        created_at: copy.taken,
        rows: copy.rows,
        schema: SnapshotSchema::of(&copy.schema),
    };
    for _ in 0..CONFLICT_ATTEMPTS {
        let current = match read.take() {
            Some(read) => read,
            None => metadata::read(location, None)
                .await
                .map_err(|e| e.to_string())?,
        };
        let (mut metadata, version) = match current {
            Read::Found { metadata, version } => (metadata, Some(version)),
            Read::Missing | Read::NotModified => (metadata::Metadata::default(), None),
        };
        let snapshots = metadata.datasets.entry(dataset.to_owned()).or_default();
        if !snapshots.snapshots.iter().any(|s| s.id == entry.id) {
            snapshots.snapshots.push(entry.clone());
        }
        if snapshots
            .current
            .as_ref()
            .is_none_or(|current| *current < entry.id)
        {
            snapshots.current = Some(entry.id.clone());
        }
        match metadata::write(location, &metadata, version.as_ref()).await {
            Ok(()) => return Ok(entry),
            Err(MetadataError::Conflict { .. }) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err(format!(
        "metadata.json at {} kept changing under {CONFLICT_ATTEMPTS} attempts to update it",
        location.url
    ))
}

/// The time an id is made of: `taken` in whole seconds, or one second
/// after the newest id `known` when that is not earlier, so that ids of a
/// dataset only grow.
fn next_id_time(taken: DateTime<Utc>, known: Option<&str>) -> DateTime<Utc> {
    let seconds = DateTime::from_timestamp(taken.timestamp(), 0).unwrap_or(taken);
    match known.and_then(|id| NaiveDateTime::parse_from_str(id, ID_FORMAT).ok()) {
        Some(last) if last.and_utc() >= seconds => last.and_utc() + chrono::Duration::seconds(1),
        _ => seconds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_grow_within_one_second() {
        let at = DateTime::parse_from_rfc3339("2026-12-03T13:15:00.400Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            next_id_time(at, None).format(ID_FORMAT).to_string(),
            "20261203T131500Z"
        );
        assert_eq!(
            next_id_time(at, Some("20261203T131500Z"))
                .format(ID_FORMAT)
                .to_string(),
            "20261203T131501Z"
        );
        assert_eq!(
            next_id_time(at, Some("20261203T120000Z"))
                .format(ID_FORMAT)
                .to_string(),
            "20261203T131500Z"
        );
    }
}
