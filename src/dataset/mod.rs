//! The registry of configured datasets and the state a person watches: status,
//! last and next refresh, the error of the last failed refresh, readiness.
//!
//! This module records what the refresh path reports; it never starts a
//! refresh or touches a source itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::accelerator::{ArrowAcceleration, ProgressReport};
use datafusion::catalog::TableProvider;

use crate::config::{DatasetConfig, ReadyState, RefreshMode, RefreshSql};
use crate::metrics;
use crate::query::caching::{Cache, Held};
use crate::query::file_table::FileTable;

/// The lifecycle of a dataset as reported by `GET /v1/datasets?status=true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DatasetStatus {
    /// Registered; the first load has not completed.
    Initializing,
    /// Serving its acceleration; no refresh running.
    Ready,
    /// Serving its acceleration while a refresh runs.
    Refreshing,
    /// The last refresh failed (the acceleration, if any, is still served).
    Error,
    /// The runtime is stopping.
    ShuttingDown,
}

impl DatasetStatus {
    fn gauge_value(self) -> u8 {
        match self {
            DatasetStatus::Initializing => 0,
            DatasetStatus::Ready => 1,
            DatasetStatus::Refreshing => 2,
            DatasetStatus::Error => 3,
            DatasetStatus::ShuttingDown => 4,
        }
    }
}

/// A point-in-time copy of a dataset's state, for the API and the CLI.
#[derive(Debug, Clone, Serialize)]
pub struct StatusReport {
    pub status: DatasetStatus,
    pub last_refresh: Option<DateTime<Utc>>,
    pub next_refresh: Option<DateTime<Utc>>,
    pub error_message: Option<String>,
    pub rows: Option<usize>,
    /// The acceleration snapshot served or last published, if any.
    pub snapshot: Option<SnapshotReport>,
    /// What a refresh in flight is doing: `starting` (connecting to the
    /// source), `reading` it, or `committing` the new version (to the file,
    /// then to queries).
    pub refresh_phase: Option<&'static str>,
    /// `refresh_mode: changes`: where the applied changes stand.
    pub changes: Option<ChangesReport>,
    /// `refresh_mode: caching`: what the cache holds.
    pub caching: Option<Held>,
    /// The rows, bytes and rate the refresh in flight has read so far.
    pub refresh_progress: Option<ProgressReport>,
    /// When the last refresh attempt started (whatever its outcome).
    pub last_refresh_attempt: Option<DateTime<Utc>>,
    /// When a failed refresh is tried again, while it waits to be.
    pub next_retry: Option<DateTime<Utc>>,
    /// `computing` while the column statistics of the version served in
    /// memory are computed after it was published, then `ready`.
    pub column_statistics: Option<&'static str>,
}

/// How far a `refresh_mode: changes` dataset has applied its source's
/// change stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangesReport {
    /// The stream position the served rows are current to (a PostgreSQL
    /// LSN, or a MySQL binlog file and offset).
    pub position: String,
    /// How long before its application the last applied transaction was
    /// committed at the source, in milliseconds; 0 while the stream is idle.
    pub lag_ms: u64,
    /// When a change was last applied, or the stream last found nothing to
    /// apply.
    pub applied_at: DateTime<Utc>,
}

/// A snapshot a dataset serves (restored or followed) or last published.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotReport {
    /// `YYYYMMDDTHHMMSSZ`.
    pub id: String,
    /// When the writer took it.
    pub created_at: DateTime<Utc>,
    /// `restored` (at startup), `loaded` (followed by `refresh_mode:
    /// snapshot`) or `published` (by this writer).
    pub origin: &'static str,
}

#[derive(Debug)]
struct State {
    status: DatasetStatus,
    last_refresh: Option<DateTime<Utc>>,
    next_refresh: Option<DateTime<Utc>>,
    error_message: Option<String>,
    snapshot: Option<SnapshotReport>,
    changes: Option<ChangesReport>,
    last_attempt: Option<DateTime<Utc>>,
    next_retry: Option<DateTime<Utc>>,
    /// A refresh attempt started and has neither completed nor failed.
    attempting: bool,
}

/// One configured dataset: its configuration, its acceleration and its state.
#[derive(Debug)]
pub struct Dataset {
    pub config: DatasetConfig,
    pub acceleration: Arc<ArrowAcceleration>,
    state: Mutex<State>,
    /// Set once the dataset has been Ready; runtime readiness (`on_load`)
    /// counts a dataset that was Ready once even if it later turns Error.
    ever_ready: AtomicBool,
    /// Wakes the dataset's refresh loop for an on-demand refresh.
    refresh_requested: Notify,
    /// The `refresh_sql` in force: the configured one, until
    /// `PATCH /v1/datasets/{name}/acceleration` replaces it (until restart).
    refresh_sql: Mutex<Option<RefreshSql>>,
    /// The text of the `refresh_sql` the served rows were read with
    /// (`Some(None)`: none), once rows are served: a refresh with the same
    /// one that finds other columns met a change of the source's schema.
    loaded_sql: Mutex<Option<Option<String>>>,
    /// The source's table, for queries the source answers while nothing is
    /// loaded; set once the source has been reached.
    federated: Mutex<Option<Arc<dyn TableProvider>>>,
    /// `refresh_mode: caching`: the rows queries fetched, by their filters.
    pub cache: Option<Arc<Cache>>,
    /// The acceleration file, answering queries in place while its rows are
    /// read into memory.
    in_place: Mutex<Option<Arc<FileTable>>>,
}

impl Dataset {
    pub fn new(config: DatasetConfig) -> Self {
        let name = config.name.to_string();
        metrics::register_dataset(&name);
        metrics::load_state(&name, DatasetStatus::Initializing.gauge_value());
        let caching =
            config.acceleration.enabled && config.acceleration.refresh_mode == RefreshMode::Caching;
        Dataset {
            cache: caching
                .then(|| Arc::new(Cache::new(&name, config.acceleration.caching.clone()))),
            acceleration: Arc::new(
                ArrowAcceleration::new(name).sorted_by(config.acceleration.sort_by.clone()),
            ),
            state: Mutex::new(State {
                status: DatasetStatus::Initializing,
                last_refresh: None,
                next_refresh: None,
                error_message: None,
                snapshot: None,
                changes: None,
                last_attempt: None,
                next_retry: None,
                attempting: false,
            }),
            refresh_requested: Notify::new(),
            refresh_sql: Mutex::new(config.acceleration.refresh_sql.clone()),
            loaded_sql: Mutex::new(None),
            federated: Mutex::new(None),
            in_place: Mutex::new(None),
            // `on_registration`: ready as soon as it is registered.
            ever_ready: AtomicBool::new(config.ready_state == ReadyState::OnRegistration),
            config,
        }
    }

    /// Records that the source answered and resolved its schema; `source`
    /// is its table, for queries the source answers until data is loaded.
    /// `ready_state: on_schema_resolved` counts as ready from here on.
    pub fn source_reached(&self, source: Option<Arc<dyn TableProvider>>) {
        if source.is_some() {
            *self.federated.lock().unwrap_or_else(|e| e.into_inner()) = source;
        }
        if self.config.ready_state == ReadyState::OnSchemaResolved {
            self.ever_ready.store(true, Ordering::Release);
        }
    }

    /// The source's table, once the source has been reached.
    pub fn federated(&self) -> Option<Arc<dyn TableProvider>> {
        self.federated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The `refresh_sql` the next refresh applies.
    pub fn refresh_sql(&self) -> Option<RefreshSql> {
        self.refresh_sql
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The served rows were read with `refresh_sql` (its text).
    pub fn loaded_with(&self, refresh_sql: Option<String>) {
        *self.loaded_sql.lock().unwrap_or_else(|e| e.into_inner()) = Some(refresh_sql);
    }

    /// Whether the served rows were read with this `refresh_sql` text, so
    /// that their columns are the ones a refresh with it should find.
    pub fn was_loaded_with(&self, refresh_sql: &Option<String>) -> bool {
        self.loaded_sql
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            == Some(refresh_sql)
    }

    /// Replaces the `refresh_sql` until restart; the next refresh applies it.
    pub fn set_refresh_sql(&self, refresh_sql: Option<RefreshSql>) {
        *self.refresh_sql.lock().unwrap_or_else(|e| e.into_inner()) = refresh_sql;
    }

    /// The name clients query, `orders` or `shop.orders`.
    pub fn name(&self) -> String {
        self.config.name.to_string()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave State inconsistent
        // (every update is a plain field store), so poisoning is ignored.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queries read `table` (the acceleration file) until
    /// [`Dataset::end_in_place`].
    pub fn serve_in_place(&self, table: FileTable) {
        *self.in_place.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(table));
    }

    /// The file's rows are in memory (published), or cannot be read.
    pub fn end_in_place(&self) {
        *self.in_place.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The file served in place failed while its rows were read into
    /// memory: it no longer answers, and with nothing in memory a dataset
    /// that is ready once loaded (`ready_state: on_load`) is not ready
    /// again until a load succeeds, so `/v1/ready` stops counting it.
    pub fn end_in_place_unread(&self) {
        self.end_in_place();
        if self.config.ready_state == ReadyState::OnLoad && !self.acceleration.serving() {
            self.ever_ready.store(false, Ordering::Release);
        }
    }

    /// The acceleration file queries read while nothing is in memory.
    pub fn in_place(&self) -> Option<Arc<FileTable>> {
        self.in_place
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn report(&self) -> StatusReport {
        let progress = self.acceleration.progress().report();
        let state = self.state();
        StatusReport {
            status: state.status,
            last_refresh: state.last_refresh,
            next_refresh: state.next_refresh,
            error_message: state.error_message.clone(),
            rows: self
                .acceleration
                .served_rows()
                .or_else(|| self.in_place().map(|table| table.rows())),
            snapshot: state.snapshot.clone(),
            refresh_progress: progress.clone(),
            last_refresh_attempt: state.last_attempt,
            next_retry: state.next_retry,
            refresh_phase: if self.acceleration.committing() {
                Some("committing")
            } else if state.status == DatasetStatus::Refreshing || progress.is_some() {
                Some("reading")
            } else if state.attempting {
                // Connecting to the source, or planning its read.
                Some("starting")
            } else {
                None
            },
            changes: state.changes.clone(),
            caching: self.cache.as_ref().map(|cache| cache.held()),
            column_statistics: self
                .acceleration
                .statistics_pending()
                .map(|pending| if pending { "computing" } else { "ready" }),
        }
    }

    /// The change stream is applied up to `report` (`refresh_mode:
    /// changes`); a dataset in Error because the stream failed is Ready
    /// again.
    pub fn changes_applied(&self, report: ChangesReport) {
        let mut state = self.state();
        state.changes = Some(report);
        if state.status != DatasetStatus::Ready && self.acceleration.serving() {
            state.error_message = None;
            self.set_status(&mut state, DatasetStatus::Ready);
            self.ever_ready.store(true, Ordering::Release);
        }
    }

    /// The id of the snapshot served or last published, if any.
    pub fn snapshot_id(&self) -> Option<String> {
        self.state().snapshot.as_ref().map(|s| s.id.clone())
    }

    pub fn status(&self) -> DatasetStatus {
        self.state().status
    }

    pub fn was_ever_ready(&self) -> bool {
        self.ever_ready.load(Ordering::Acquire)
    }

    fn set_status(&self, state: &mut State, status: DatasetStatus) {
        state.status = status;
        metrics::load_state(&self.name(), status.gauge_value());
    }

    /// A refresh attempt started: Refreshing while data is served. With
    /// nothing served, a dataset whose source failed stays in Error while
    /// it tries again (its queries keep failing as an unknown table).
    pub fn refresh_started(&self) {
        let mut state = self.state();
        state.last_attempt = Some(Utc::now());
        state.next_retry = None;
        state.attempting = true;
        if self.acceleration.serving() {
            self.set_status(&mut state, DatasetStatus::Refreshing);
        }
    }

    /// A refresh completed at `at`; the next is due at `next` (both change
    /// together, so the status never shows a new refresh with the old due
    /// time).
    pub fn refresh_succeeded(&self, at: DateTime<Utc>, next: Option<DateTime<Utc>>) {
        let mut state = self.state();
        state.attempting = false;
        state.last_refresh = Some(at);
        state.next_refresh = next;
        state.error_message = None;
        self.set_status(&mut state, DatasetStatus::Ready);
        self.ever_ready.store(true, Ordering::Release);
    }

    /// The acceleration was served from its file at startup: Ready (queries
    /// answer from it), with the checkpoint's last refresh time where it is
    /// reported.
    pub fn restored(&self, last_refresh: Option<DateTime<Utc>>) {
        let mut state = self.state();
        state.last_refresh = last_refresh;
        self.set_status(&mut state, DatasetStatus::Ready);
        // `on_schema_resolved` stays not ready until the source is reached.
        if self.config.ready_state != ReadyState::OnSchemaResolved {
            self.ever_ready.store(true, Ordering::Release);
        }
    }

    /// The acceleration restored from a snapshot at startup is served:
    /// Ready, without a last refresh time (the seeds: a dataset restored
    /// from a snapshot reports one once a refresh completes).
    pub fn snapshot_restored(&self, snapshot: SnapshotReport) {
        self.state().snapshot = Some(snapshot);
        self.restored(None);
    }

    /// A `refresh_mode: snapshot` dataset serves a newly loaded snapshot:
    /// that load is its refresh, completed at `at`.
    pub fn snapshot_loaded(&self, snapshot: SnapshotReport, at: DateTime<Utc>) {
        let mut state = self.state();
        state.attempting = false;
        state.snapshot = Some(snapshot);
        state.last_refresh = Some(at);
        state.error_message = None;
        self.set_status(&mut state, DatasetStatus::Ready);
        self.ever_ready.store(true, Ordering::Release);
    }

    /// A `refresh_mode: snapshot` dataset checked its location and keeps
    /// serving what it has: Ready again after an error.
    pub fn snapshot_checked(&self) {
        let mut state = self.state();
        state.attempting = false;
        if state.status != DatasetStatus::Ready && self.acceleration.serving() {
            state.error_message = None;
            self.set_status(&mut state, DatasetStatus::Ready);
        }
    }

    /// This writer published `snapshot`.
    pub fn snapshot_published(&self, snapshot: SnapshotReport) {
        self.state().snapshot = Some(snapshot);
    }

    /// The source answers again: a dataset serving its acceleration while
    /// in Error is Ready again (the next refresh follows its schedule).
    pub fn source_recovered(&self) {
        let mut state = self.state();
        if state.status == DatasetStatus::Error && self.acceleration.serving() {
            state.error_message = None;
            self.set_status(&mut state, DatasetStatus::Ready);
        }
    }

    /// The failed refresh is tried again at `at`.
    pub fn retry_at(&self, at: DateTime<Utc>) {
        self.state().next_retry = Some(at);
    }

    pub fn refresh_failed(&self, message: String) {
        let mut state = self.state();
        state.attempting = false;
        state.error_message = Some(message);
        self.set_status(&mut state, DatasetStatus::Error);
    }

    /// Marks a dataset with nothing to refresh (acceleration disabled) as
    /// ready, once its source answered.
    pub fn mark_ready(&self) {
        let mut state = self.state();
        self.set_status(&mut state, DatasetStatus::Ready);
        self.ever_ready.store(true, Ordering::Release);
    }

    /// A dataset without acceleration whose source failed the first time:
    /// it counts as ready for the runtime (its queries fail with the
    /// source's error, and the others need not wait for it), and keeps its
    /// Error status.
    pub fn first_attempt_made(&self) {
        self.ever_ready.store(true, Ordering::Release);
    }

    /// When the next refresh is due, as the status reports it.
    pub fn next_refresh(&self) -> Option<DateTime<Utc>> {
        self.state().next_refresh
    }

    pub fn set_next_refresh(&self, at: Option<DateTime<Utc>>) {
        self.state().next_refresh = at;
    }

    pub fn shutting_down(&self) {
        let mut state = self.state();
        self.set_status(&mut state, DatasetStatus::ShuttingDown);
    }

    /// Asks the refresh loop for an immediate refresh; one in flight is
    /// cancelled and started again.
    pub fn request_refresh(&self) {
        self.refresh_requested.notify_one();
    }

    pub async fn refresh_requested(&self) {
        self.refresh_requested.notified().await;
    }
}

/// Every configured dataset, by the name clients use.
#[derive(Debug, Default)]
pub struct Registry {
    datasets: Vec<Arc<Dataset>>,
    by_name: HashMap<String, Arc<Dataset>>,
}

impl Registry {
    pub fn new(datasets: Vec<Arc<Dataset>>) -> Self {
        let by_name = datasets
            .iter()
            .map(|dataset| (dataset.name().to_lowercase(), Arc::clone(dataset)))
            .collect();
        Registry { datasets, by_name }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Dataset>> {
        self.by_name.get(&name.to_lowercase())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<Dataset>> {
        self.datasets.iter()
    }

    /// Runtime readiness (`ready_state: on_load`): every dataset has been
    /// Ready at least once.
    pub fn all_ready(&self) -> bool {
        self.datasets.iter().all(|dataset| dataset.was_ever_ready())
    }
}
