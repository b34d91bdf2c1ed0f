//! Keeping accelerations fresh: one loop per dataset that waits for the next
//! due time or an on-demand request, runs at most one refresh at a time
//! (an on-demand request cancels the refresh in flight and starts again), and
//! retries transient failures with backoff.
//!
//! The loop reports what happens to the [`Dataset`] (status, times, errors)
//! and to [`metrics`]; it never serves queries.

mod append;
mod caching;
mod changes;
mod feed;
mod full;
mod persisted;
mod retention;
pub mod retry;
pub mod schedule;
mod snapshot;

use std::fmt::Display;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::config::{OnSchemaChange, RefreshMode, SnapshotMode, ZeroResults};
use crate::dataset::{Dataset, SnapshotReport};
use crate::metrics;
use crate::snapshot::{self as snapshots, Publisher};
use crate::source::{ReadFilter, Source, SourceError, TimeBound};

pub use full::{Published, STALL_LIMIT, set_stall_limit_for_tests};

#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("building the acceleration of dataset '{dataset}' failed: {message}")]
    Build { dataset: String, message: String },
    #[error(
        "The source of dataset '{dataset}' stopped sending data mid-refresh: no data for {seconds}s after it started sending, so the connection is treated as lost and the refresh is retried"
    )]
    Stalled { dataset: String, seconds: u64 },
    /// The source's columns differ from the acceleration's, and
    /// `on_schema_change: block` keeps the last good data.
    #[error(
        "The source of dataset '{dataset}' has other columns than its acceleration: {change}. With on_schema_change: block (the default) the refresh fails and the last good data keeps being served; restore the source's columns, or set acceleration.on_schema_change: rebuild to load the new ones"
    )]
    SchemaChanged { dataset: String, change: String },
    /// The dataset cannot be served as configured (found once its source
    /// answered); it is not loaded.
    #[error("{0}")]
    Register(String),
}

impl RefreshError {
    fn build(dataset: &str, error: impl Display) -> Self {
        RefreshError::Build {
            dataset: dataset.to_owned(),
            message: error.to_string(),
        }
    }

    pub fn is_transient(&self) -> bool {
        match self {
            RefreshError::Source(source) => source.is_transient(),
            RefreshError::Build { .. }
            | RefreshError::Register(_)
            | RefreshError::SchemaChanged { .. } => false,
            RefreshError::Stalled { .. } => true,
        }
    }

    pub fn reason(&self) -> &'static str {
        match self {
            RefreshError::Source(source) => source.reason(),
            RefreshError::Build { .. } => "build",
            RefreshError::Stalled { .. } => "stalled",
            RefreshError::Register(_) => "config",
            RefreshError::SchemaChanged { .. } => "schema_change",
        }
    }
}

/// Runs the refresh loop of one dataset until `shutdown` fires; with
/// `snapshots`, the dataset restores, publishes or follows acceleration
/// snapshots as its `acceleration.snapshots` says.
pub async fn run(
    dataset: Arc<Dataset>,
    partitions: usize,
    snapshots: Option<snapshots::Setup>,
    shutdown: CancellationToken,
) {
    let acceleration = &dataset.config.acceleration;
    if acceleration.refresh_mode == RefreshMode::Changes {
        changes::run(dataset, partitions, shutdown).await;
        return;
    }
    if acceleration.refresh_mode == RefreshMode::Caching {
        caching::run(dataset, shutdown).await;
        return;
    }
    if acceleration.refresh_mode == RefreshMode::Snapshot {
        match snapshots {
            Some(setup) => snapshot::run(dataset, setup, partitions, shutdown).await,
            None => {
                error!(dataset = %dataset.name(), "refresh_mode: snapshot without a snapshot location")
            }
        }
        return;
    }
    let (scheduled, jitter) = (acceleration.schedule.clone(), acceleration.jitter);
    let append = match acceleration.refresh_mode {
        RefreshMode::Append => append::Plan::of(&dataset.config),
        _ => None,
    };
    let mode = acceleration.snapshots;
    let restored = match (&snapshots, acceleration.file_path(&dataset.name())) {
        (Some(setup), Some(file))
            if matches!(mode, SnapshotMode::Enabled | SnapshotMode::BootstrapOnly)
                && !file.exists() =>
        {
            snapshots::restore::bootstrap(
                &setup.location,
                &dataset.name(),
                &file,
                setup.on_failure,
                &shutdown,
            )
            .await
        }
        _ => None,
    };
    let publisher = snapshots
        .filter(|_| matches!(mode, SnapshotMode::Enabled | SnapshotMode::CreateOnly))
        .map(|setup| {
            Publisher::start(
                Arc::clone(&dataset),
                acceleration.engine,
                setup.location,
                shutdown.clone(),
            )
        });
    let from_snapshot = restored.map(|entry| SnapshotReport {
        id: entry.id,
        created_at: entry.created_at,
        origin: "restored",
    });
    let keeps_time = publisher.is_none() && from_snapshot.is_none();
    let startup = persisted::open(&dataset, partitions, keeps_time, from_snapshot).await;
    let retention = retention::policy(&dataset.config);
    // The first retention check runs at startup, or once data is loaded.
    let mut retention_wake = retention.as_ref().map(|_| tokio::time::Instant::now());
    let mut retention_pending = retention.is_some();
    let mut refresher = Refresher {
        dataset,
        partitions,
        source: None,
        append,
        watermark: append::Watermark::default(),
        warned_unreachable: None,
        waits: None,
        waits_reported: false,
    };
    // The initial load starts at once, or after a random part of the jitter.
    let delay = schedule::initial_delay(jitter, &mut rand::rng());
    let mut wake = Some(tokio::time::Instant::now() + delay);
    let mut initial = true;
    // Rows served from the file get their first retention check now, even
    // if the source is down and the startup refresh waits for it.
    if matches!(
        startup,
        persisted::Startup::RefreshNow | persisted::Startup::At(_)
    ) && let Some(policy) = &retention
    {
        retention::run(&refresher.dataset, None).await;
        retention_pending = false;
        retention_wake = Some(tokio::time::Instant::now() + policy.interval);
    }
    match startup {
        persisted::Startup::Load { waits } => refresher.waits = waits,
        persisted::Startup::RefreshNow => {}
        persisted::Startup::At(due) => {
            refresher.dataset.set_next_refresh(due);
            wake = due.map(schedule::instant_of);
            initial = false;
            // Served from the file with no refresh due: connect to the
            // source meanwhile, so that its health shows in the status and
            // `on_schema_resolved` can turn ready. A due or requested
            // refresh takes over (and connects itself).
            let dataset = Arc::clone(&refresher.dataset);
            tokio::select! {
                _ = shutdown.cancelled() => {
                    dataset.shutting_down();
                    return;
                }
                _ = refresher.connect_with_retries() => {}
                _ = dataset.refresh_requested() => wake = Some(tokio::time::Instant::now()),
                _ = sleep_until(wake) => wake = Some(tokio::time::Instant::now()),
            }
        }
        persisted::Startup::Broken => {
            shutdown.cancelled().await;
            refresher.dataset.shutting_down();
            return;
        }
    }
    loop {
        let on_demand = tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = refresher.dataset.refresh_requested() => true,
            _ = sleep_until(wake) => false,
            _ = sleep_until(retention_wake) => {
                let policy = retention.as_ref().expect("scheduled only with a policy");
                if refresher.dataset.acceleration.serving() {
                    retention::run(&refresher.dataset, None).await;
                    retention_pending = false;
                }
                retention_wake = Some(tokio::time::Instant::now() + policy.interval);
                continue;
            }
        };
        if !on_demand && !initial {
            // A cron refresh starts a random part of the jitter after its
            // cron time, and reports that start as its due time meanwhile.
            let delay = schedule::cron_start_delay(scheduled.as_ref(), jitter, &mut rand::rng());
            if !delay.is_zero() {
                refresher.dataset.set_next_refresh(Some(Utc::now() + delay));
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = refresher.dataset.refresh_requested() => {}
                    _ = tokio::time::sleep(delay) => {}
                }
            }
        }
        let Some(outcome) = refresher.refresh_until_done(&shutdown).await else {
            break;
        };
        if retention_pending && outcome.is_ok() && retention.is_some() {
            retention::run(&refresher.dataset, None).await;
            retention_pending = false;
        }
        if outcome.is_ok()
            && let Some(publisher) = &publisher
        {
            publisher.publish().await;
        }
        wake = refresher.schedule_next(outcome.is_ok());
        initial = false;
    }
    refresher.dataset.shutting_down();
}

/// The README section that the "waits for its source" message points to.
const OUTAGES_SECTION: &str = "Serving through source outages";

/// A dataset without an acceleration (`acceleration.enabled: false`): its
/// queries go to the source, with filters, projections and limits pushed
/// down. This connects to the source (again and again while it cannot be
/// reached, as for a dataset with nothing loaded) and keeps the status.
pub async fn federate(dataset: Arc<Dataset>, shutdown: CancellationToken) {
    let mut refresher = Refresher {
        dataset,
        partitions: 1,
        source: None,
        append: None,
        watermark: append::Watermark::default(),
        warned_unreachable: None,
        waits: None,
        waits_reported: false,
    };
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = refresher.connect_with_retries() => {}
    }
}

async fn sleep_until(wake: Option<tokio::time::Instant>) {
    match wake {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

struct Refresher {
    dataset: Arc<Dataset>,
    partitions: usize,
    /// The connected source, kept between refreshes and dropped after a
    /// failure so that the next attempt reconnects (and re-reads the schema).
    source: Option<Source>,
    /// For `refresh_mode: append`, the columns it orders rows by.
    append: Option<append::Plan>,
    watermark: append::Watermark,
    /// When the last "cannot reach the source" warning was logged.
    warned_unreachable: Option<Instant>,
    /// The configuration that keeps the rows of the acceleration file from
    /// being served before the source answers (`uses ...`); taken when the
    /// first failed load reports it.
    waits: Option<String>,
    waits_reported: bool,
}

/// How often the warning that a source cannot be reached is repeated while
/// the connection is retried.
const UNREACHABLE_WARNING_EVERY: Duration = Duration::from_secs(300);

impl Refresher {
    /// Runs one refresh (with retries) to completion; an on-demand request
    /// that arrives meanwhile cancels it and starts it again. `None` when
    /// the runtime is shutting down.
    async fn refresh_until_done(
        &mut self,
        shutdown: &CancellationToken,
    ) -> Option<Result<Published, RefreshError>> {
        loop {
            let dataset = Arc::clone(&self.dataset);
            tokio::select! {
                _ = shutdown.cancelled() => return None,
                _ = dataset.refresh_requested() => {}
                outcome = self.refresh_with_retries() => return Some(outcome),
            }
            info!(dataset = %dataset.name(), "on-demand refresh requested: restarting the refresh in flight");
            // The cancelled read may have left a connection mid-query (or
            // stalled): start again on new connections.
            self.source = None;
        }
    }

    /// Connects to the source, retrying an unreachable one with backoff
    /// and without limit; returns once connected, or when the source
    /// rejects the configuration (not retried).
    async fn connect_with_retries(&mut self) {
        let mut retries = 0;
        loop {
            // A dataset without acceleration is ready once its source
            // answered, or failed to, the first time: queries before that
            // would find no table to read.
            let federated_only = !self.dataset.config.acceleration.enabled;
            match self.connect().await {
                Ok(()) => {
                    self.dataset.source_recovered();
                    if federated_only {
                        self.dataset.mark_ready();
                    }
                    return;
                }
                Err(error) => {
                    let unreachable =
                        matches!(error, RefreshError::Source(SourceError::Connect { .. }));
                    metrics::refresh_failed(&self.dataset.name(), error.reason());
                    self.dataset.refresh_failed(error.to_string());
                    if federated_only {
                        self.dataset.first_attempt_made();
                    }
                    self.report_failure(&error, unreachable);
                    if !unreachable {
                        return;
                    }
                    retries += 1;
                    tokio::time::sleep(retry::delay(retries)).await;
                }
            }
        }
    }

    /// With `on_zero_results: use_source` and a retention policy, the
    /// inverse of the policy must be a filter on the source's columns, or
    /// the fallback could return evicted rows: the dataset is not loaded.
    fn check_fallback(&self, source: &Source) -> Result<(), RefreshError> {
        let config = &self.dataset.config;
        let retention = &config.acceleration.retention;
        if config.acceleration.on_zero_results != ZeroResults::UseSource
            || (retention.sql.is_none() && retention.period.is_none())
        {
            return Ok(());
        }
        let Some(federated) = source.federated() else {
            return Ok(());
        };
        crate::query::inverse_retention(config, &federated.schema())
            .map(|_| ())
            .map_err(|cause| {
                RefreshError::Register(format!(
                    "Failed to register dataset '{}' ({}): `on_zero_results: use_source` cannot be combined with this retention configuration, so the dataset was not loaded. {cause}",
                    config.name,
                    config.from.kind()
                ))
            })
    }

    /// Connects to the source unless connected.
    async fn connect(&mut self) -> Result<(), RefreshError> {
        if self.source.is_none() {
            let source = Source::connect(&self.dataset.config).await?;
            self.warned_unreachable = None;
            self.check_fallback(&source)?;
            self.dataset.source_reached(source.federated());
            self.source = Some(source);
        }
        Ok(())
    }

    async fn refresh_with_retries(&mut self) -> Result<Published, RefreshError> {
        let policy = self.dataset.config.acceleration.retry.clone();
        let mut retries = 0;
        loop {
            match self.attempt().await {
                Ok(published) => return Ok(published),
                Err(error) => {
                    // A dataset with nothing to serve tries a source that
                    // cannot be reached again without limit (the seeds'
                    // outage rule), to load as soon as it answers. Every
                    // other retry follows refresh_retry_enabled and
                    // refresh_retry_max_attempts.
                    let unreachable =
                        matches!(error, RefreshError::Source(SourceError::Connect { .. }));
                    let serving = self.dataset.acceleration.serving();
                    let may_retry = (unreachable && !serving)
                        || (error.is_transient()
                            && policy.enabled
                            && policy.max_attempts.is_none_or(|max| retries < max));
                    self.report_failure(&error, may_retry);
                    if !may_retry {
                        if unreachable && serving {
                            let why = if policy.enabled {
                                format!(
                                    "refresh_retry_max_attempts: {} reached",
                                    policy.max_attempts.unwrap_or_default()
                                )
                            } else {
                                "refresh_retry_enabled: false".to_owned()
                            };
                            let name = self.dataset.name();
                            warn!(
                                dataset = %name,
                                attempts = retries + 1,
                                "Failed to connect to the source for dataset {name}. Serving data from the existing acceleration for {name}; not retrying ({why}): the next refresh is the next scheduled or requested one. {error}"
                            );
                        }
                        return Err(error);
                    }
                    retries += 1;
                    let wait = retry::delay(retries);
                    self.dataset.retry_at(
                        Utc::now() + chrono::Duration::from_std(wait).unwrap_or_default(),
                    );
                    info!(dataset = %self.dataset.name(), retry = retries, "retrying in {:.1}s", wait.as_secs_f64());
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    /// Whether the "cannot reach the source" warning is due (the first
    /// failure, then at most every five minutes); records it as logged.
    fn unreachable_warning_due(&mut self) -> bool {
        let due = self
            .warned_unreachable
            .is_none_or(|at| at.elapsed() >= UNREACHABLE_WARNING_EVERY);
        if due {
            self.warned_unreachable = Some(Instant::now());
        }
        due
    }

    /// Logs a failed attempt as the seeds word it: a source that cannot be
    /// reached while an acceleration is served is a warning, repeated at
    /// most every five minutes; a configuration the source rejects is an
    /// error at once; anything else as it comes.
    fn report_failure(&mut self, error: &RefreshError, retrying: bool) {
        let name = self.dataset.name();
        let serving = self.dataset.acceleration.serving();
        if !serving
            && !self.waits_reported
            && let Some(reason) = &self.waits
        {
            self.waits_reported = true;
            info!(
                dataset = %name,
                "Dataset '{name}' waits for its source before serving because it uses {reason}. See: the README's \"{OUTAGES_SECTION}\""
            );
        }
        match error {
            RefreshError::Source(SourceError::Connect { message, .. }) if serving => {
                if retrying && self.unreachable_warning_due() {
                    warn!(
                        dataset = %name,
                        "Failed to connect to the source for dataset {name}. Serving data from the existing acceleration for {name} while retrying the connection. {message}"
                    );
                }
            }
            RefreshError::Source(SourceError::Rejected { message, .. }) if serving => {
                error!(
                    dataset = %name,
                    "Dataset '{name}' cannot connect to its source because of its configuration, so it is served from its existing acceleration and will not refresh until the configuration is fixed. {message}"
                );
            }
            RefreshError::Source(SourceError::Connect { message, .. }) => {
                if self.unreachable_warning_due() {
                    warn!(
                        dataset = %name,
                        "Failed to connect to the source for dataset {name}. It has no acceleration to serve yet and is loaded once the source answers; retrying the connection. {message}"
                    );
                }
            }
            _ if retrying => warn!(dataset = %name, "refresh failed: {error}"),
            _ => error!(dataset = %name, "refresh failed: {error}"),
        }
    }

    async fn attempt(&mut self) -> Result<Published, RefreshError> {
        self.dataset.refresh_started();
        let started = Instant::now();
        let outcome = self.load().await;
        match &outcome {
            Ok(published) => self.succeeded(*published, started.elapsed()),
            Err(error) => {
                self.source = None;
                let name = self.dataset.name();
                metrics::refresh_failed(&name, error.reason());
                let message = match &self.waits {
                    Some(reason) if !self.dataset.acceleration.serving() => {
                        format!(
                            "Not served: waits for its source because it uses {reason}. Cause: {error}"
                        )
                    }
                    _ => error.to_string(),
                };
                self.dataset.refresh_failed(message);
            }
        }
        outcome
    }

    async fn load(&mut self) -> Result<Published, RefreshError> {
        self.connect().await?;
        match self.load_connected().await {
            Err(RefreshError::Source(error)) => {
                let source = self.source.as_ref().expect("connected just above");
                Err(RefreshError::Source(source.classify_read(error).await))
            }
            outcome => outcome,
        }
    }

    async fn load_connected(&mut self) -> Result<Published, RefreshError> {
        let source = self.source.as_ref().expect("connected by load");
        let acceleration = &self.dataset.acceleration;
        acceleration.settled().await;
        let filter = self.read_filter();
        let refresh_sql = full::refresh_sql_text(&filter);
        // The columns the source should answer with: those served, unless
        // the refresh_sql changed since or `on_schema_change: rebuild`.
        let expected = acceleration.served_schema().filter(|_| {
            self.dataset.config.acceleration.on_schema_change == OnSchemaChange::Block
                && self.dataset.was_loaded_with(&refresh_sql)
        });
        // An append extends what is held; the first load, or one whose
        // source changed its columns, reads in full (within the window).
        if let Some(plan) = &self.append {
            let (filter, watermark) = (filter.clone(), &mut self.watermark);
            let appended = match (acceleration.current(), acceleration.file_version()) {
                (Some(held), _) => append::run(source, acceleration, held, plan, filter, watermark)
                    .await?
                    .map(|(published, _)| published),
                (None, Some(held)) => {
                    append::run_in_file(source, acceleration, held, plan, filter, watermark).await?
                }
                (None, None) => None,
            };
            if let Some(published) = appended {
                self.dataset.loaded_with(refresh_sql);
                return Ok(published);
            }
        }
        let primary_key = &self.dataset.config.acceleration.primary_key;
        if self.dataset.config.acceleration.in_place() {
            let published = full::run_in_file(
                source,
                acceleration,
                primary_key,
                &filter,
                expected.as_ref(),
                None,
                None,
            )
            .await?;
            self.dataset.loaded_with(refresh_sql);
            return Ok(published);
        }
        let (published, _) = full::run(
            source,
            acceleration,
            self.partitions,
            primary_key,
            &filter,
            expected.as_ref(),
            None,
        )
        .await?;
        self.dataset.loaded_with(refresh_sql);
        Ok(published)
    }

    /// What this refresh reads: the `refresh_sql` in force and the data
    /// window (`time_column` after now - `refresh_data_window`).
    fn read_filter(&self) -> ReadFilter {
        let config = &self.dataset.config;
        let since = config
            .acceleration
            .refresh_data_window
            .zip(config.time_column.as_ref())
            .map(|(window, column)| TimeBound {
                column: column.clone(),
                format: config.time_format,
                after: Utc::now() - window,
                inclusive: false,
            });
        ReadFilter {
            refresh_sql: self.dataset.refresh_sql(),
            since,
            floor: None,
        }
    }

    fn succeeded(&self, published: Published, took: Duration) {
        let now = published.completed;
        let name = self.dataset.name();
        metrics::refresh_succeeded(
            &name,
            now.timestamp_millis(),
            took,
            published.rows,
            published.bytes,
            published.index_bytes,
        );
        self.dataset.refresh_succeeded(now, self.next_due());
        info!(dataset = %name, rows = published.rows, bytes = published.bytes, "refresh completed in {:.3}s", took.as_secs_f64());
    }

    /// The next due time from the schedule (interval with jitter, or the
    /// next cron time), from now.
    fn next_due(&self) -> Option<chrono::DateTime<Utc>> {
        let acceleration = &self.dataset.config.acceleration;
        schedule::next_due(
            acceleration.schedule.as_ref(),
            acceleration.jitter,
            Utc::now(),
            &mut rand::rng(),
        )
    }

    /// The next wake-up: after a success, the due time the success reported
    /// (see [`Self::succeeded`]); after a failure, the next from the
    /// schedule, while the reported due time stays until a refresh
    /// succeeds.
    fn schedule_next(&self, succeeded: bool) -> Option<tokio::time::Instant> {
        let due = if succeeded {
            self.dataset.next_refresh()
        } else {
            self.next_due()
        };
        due.map(schedule::instant_of)
    }
}

#[cfg(test)]
mod readme {
    #[test]
    fn the_outage_message_points_at_a_readme_section_that_exists() {
        let heading = format!("### {}\n", super::OUTAGES_SECTION);
        assert!(include_str!("../../README.md").contains(&heading));
    }
}
