//! The reader side: finding a dataset's current snapshot in metadata.json,
//! downloading and verifying it, and the startup bootstrap of datasets with
//! `acceleration.snapshots: enabled | bootstrap_only`.

use std::path::Path;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::files::{self, DownloadError};
use super::location::Location;
use super::metadata::{self, DatasetSnapshots, Read, SnapshotEntry};
use crate::config::BootstrapOnFailure;
use crate::metrics;
use crate::refresh::retry;

/// How long a snapshot file that metadata.json names but the location does
/// not hold yet is waited for, and how often it is looked for meanwhile.
pub const FILE_WAIT: Duration = Duration::from_secs(90);
pub const FILE_RECHECK: Duration = Duration::from_secs(10);

/// The snapshots of `dataset` in a read of metadata.json.
pub fn of_dataset<'a>(read: &'a Read, dataset: &str) -> Option<&'a DatasetSnapshots> {
    match read {
        Read::Found { metadata, .. } => metadata.datasets.get(dataset),
        _ => None,
    }
}

/// Downloads `entry` to `to` (moved into place only once verified, and
/// with `durable` once synced to disk), waiting up to [`FILE_WAIT`] for a
/// file metadata.json names before it arrived; a file that fails
/// verification is reported at once. Without `durable` the caller syncs
/// `to` ([`files::make_durable`]) before it serves it from where a restart
/// would find it.
pub async fn fetch(
    location: &Location,
    dataset: &str,
    entry: &SnapshotEntry,
    to: &Path,
    durable: bool,
) -> Result<(), DownloadError> {
    let deadline = tokio::time::Instant::now() + FILE_WAIT;
    loop {
        match files::download(location, entry, to).await {
            Ok(partial) => {
                if durable {
                    files::make_durable(&partial).await.map_err(|message| {
                        DownloadError::Failed {
                            id: entry.id.clone(),
                            message,
                        }
                    })?;
                }
                tokio::fs::rename(&partial, to)
                    .await
                    .map_err(|e| DownloadError::Failed {
                        id: entry.id.clone(),
                        message: format!("cannot move it to {}: {e}", to.display()),
                    })?;
                metrics::snapshot_downloaded(dataset, entry.size);
                return Ok(());
            }
            Err(DownloadError::NotFound { .. })
                if tokio::time::Instant::now() + FILE_RECHECK <= deadline =>
            {
                info!(dataset = %dataset, "snapshot {} of dataset '{dataset}' is listed in metadata.json but not at {} yet; checking again in {}s", entry.id, location.url, FILE_RECHECK.as_secs());
                tokio::time::sleep(FILE_RECHECK).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Restores the current snapshot of `dataset` into `to` at startup (there
/// is no file there). `None` when there is none to restore or restoring
/// failed and `behavior` says to load from the source instead.
pub async fn bootstrap(
    location: &Location,
    dataset: &str,
    to: &Path,
    behavior: BootstrapOnFailure,
    shutdown: &CancellationToken,
) -> Option<SnapshotEntry> {
    let mut attempts = 0;
    loop {
        let failure = match metadata::read(location, None).await {
            Err(e) => e.to_string(),
            Ok(read) => {
                let Some(entry) = of_dataset(&read, dataset).and_then(DatasetSnapshots::current)
                else {
                    info!(dataset = %dataset, "no snapshot of dataset '{dataset}' at {} yet: loading from the source", location.url);
                    metrics::snapshot_bootstrap(dataset, "not_found");
                    return None;
                };
                match fetch(location, dataset, entry, to, true).await {
                    Ok(()) => {
                        metrics::snapshot_bootstrap(dataset, "restored");
                        info!(dataset = %dataset, snapshot = %entry.id, "restored dataset '{dataset}' from snapshot {}", entry.id);
                        return Some(entry.clone());
                    }
                    Err(e) if behavior == BootstrapOnFailure::Fallback => {
                        warn!(dataset = %dataset, "{e}; trying older snapshots of dataset '{dataset}'");
                        let snapshots = of_dataset(&read, dataset).expect("found above");
                        for older in snapshots.older() {
                            match fetch(location, dataset, older, to, true).await {
                                Ok(()) => {
                                    metrics::snapshot_bootstrap(dataset, "fallback");
                                    info!(dataset = %dataset, snapshot = %older.id, "restored dataset '{dataset}' from the older snapshot {}", older.id);
                                    return Some(older.clone());
                                }
                                Err(e) => warn!(dataset = %dataset, "{e}"),
                            }
                        }
                        metrics::snapshot_bootstrap(dataset, "failed");
                        warn!(dataset = %dataset, "no snapshot of dataset '{dataset}' could be restored: loading from the source");
                        return None;
                    }
                    Err(e) => e.to_string(),
                }
            }
        };
        metrics::snapshot_bootstrap(dataset, "failed");
        if behavior != BootstrapOnFailure::Retry {
            warn!(dataset = %dataset, "restoring dataset '{dataset}' from its snapshot failed, loading from the source instead: {failure}");
            return None;
        }
        attempts += 1;
        let wait = retry::delay(attempts);
        warn!(dataset = %dataset, "restoring dataset '{dataset}' from its snapshot failed, retrying in {:.1}s: {failure}", wait.as_secs_f64());
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep(wait) => {}
        }
    }
}
