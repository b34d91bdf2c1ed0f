//! `refresh_mode: changes`: the acceleration follows its source's change
//! stream (PostgreSQL logical decoding, the MySQL/MariaDB row binlog)
//! instead of being re-read.
//!
//! Start: the table is copied in a snapshot whose position in the stream is
//! known ([`super::feed`]: a slot's exported snapshot, a consistent-snapshot
//! transaction and its binlog position), so the copy and the stream meet
//! exactly: nothing is lost between them and nothing is applied twice. A
//! file acceleration keeps the stream position with its checkpoint, so a
//! restart serves its file (in place, or read back into memory) and resumes
//! the stream there; a memory one copies again. A file queried in place is
//! copied into and revised in the file: only the rows a batch of
//! transactions touches are read back.
//!
//! Then each committed source transaction is applied whole: the rows it
//! inserts, updates and deletes go into a new version of the acceleration
//! that is published in one step (with its file transaction, for a file
//! engine), so a query sees a source transaction entirely or not at all.
//! Transactions that arrive together are applied together, still whole.
//! A PostgreSQL slot is told a position only once the version holding it
//! is published (and, for a file engine, committed to the file).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use datafusion::arrow::array::{ArrayRef, RecordBatch, new_empty_array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::feed::{Checked, Feed, Position, Stream, Transaction};
use super::{RefreshError, full, persisted, retention, retry};
use crate::accelerator::{
    ArrowAcceleration, Change, Checkpoint, FileVersion, Store, StoreError, TableData,
    TableDataBuilder,
};
use crate::dataset::{ChangesReport, Dataset};
use crate::metrics;
use crate::source::change::{Row, RowChange, SourceTransaction, StreamEvent};
use crate::source::{ReadFilter, Source};

/// The most transactions applied as one version.
const MOST_TRANSACTIONS_PER_VERSION: usize = 1024;

/// How often the WAL the slot keeps is measured.
const SLOT_CHECK_EVERY: Duration = Duration::from_secs(30);

/// Runs the dataset's change stream until `shutdown` fires.
pub async fn run(dataset: Arc<Dataset>, partitions: usize, shutdown: CancellationToken) {
    let name = dataset.name();
    let feed = match Feed::of(&name, &dataset.config.from, &dataset.config.params) {
        Some(feed) => feed,
        None => {
            let message = format!(
                "dataset '{name}' uses refresh_mode: changes, which streams from PostgreSQL and MySQL/MariaDB sources only"
            );
            error!(dataset = %name, "{message}");
            dataset.refresh_failed(message);
            shutdown.cancelled().await;
            dataset.shutting_down();
            return;
        }
    };
    if let persisted::Startup::Broken = persisted::open(&dataset, partitions, true, None).await {
        shutdown.cancelled().await;
        dataset.shutting_down();
        return;
    }
    let mut follower = Follower {
        dataset: Arc::clone(&dataset),
        partitions,
        feed,
        position: None,
        recopy: false,
        federated: false,
        retries: 0,
    };
    loop {
        let failed = tokio::select! {
            _ = shutdown.cancelled() => break,
            outcome = follower.follow() => match outcome {
                Err(error) => error,
            },
        };
        metrics::refresh_failed(&name, failed.reason());
        let message = if !dataset.acceleration.serving() {
            format!(
                "Not served: waits for its source because it uses `refresh_mode: changes`. Cause: {failed}"
            )
        } else {
            failed.to_string()
        };
        dataset.refresh_failed(message);
        if failed.is_transient() {
            follower.retries += 1;
            let wait = retry::delay(follower.retries);
            warn!(dataset = %name, retry_in_ms = wait.as_millis() as u64, "the change stream stopped; resuming it after a pause. {failed}");
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(wait) => {}
                _ = dataset.refresh_requested() => follower.recopy = true,
            }
        } else {
            error!(dataset = %name, "the change stream stopped and is not resumed until the cause is fixed and a refresh is requested (POST /v1/datasets/{name}/acceleration/refresh); the dataset keeps serving its last state. {failed}");
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = dataset.refresh_requested() => follower.recopy = true,
            }
        }
    }
    dataset.shutting_down();
}

struct Follower {
    dataset: Arc<Dataset>,
    partitions: usize,
    feed: Feed,
    /// Where the served rows stand in the stream, once streaming in this
    /// process.
    position: Option<Position>,
    /// Copy the table again rather than resume (an on-demand refresh).
    recopy: bool,
    /// Whether the source's table is registered for the queries the source
    /// answers.
    federated: bool,
    retries: u32,
}

impl Follower {
    /// Copies or resumes, then applies the stream until it fails.
    async fn follow(&mut self) -> Result<Infallible, RefreshError> {
        loop {
            let name = self.dataset.name();
            let checked = self.feed.prepare(&name).await?;
            if !self.federated {
                let source = Source::connect(&self.dataset.config).await?;
                self.dataset.source_reached(source.federated());
                self.federated = true;
            }
            let stream = match self.resume_point(&checked).await? {
                Some(from) => {
                    let held = self
                        .dataset
                        .acceleration
                        .served_schema()
                        .expect("a resume point has rows");
                    self.feed
                        .resume(&name, from, held, &checked, self.all_columns())
                        .await?
                }
                None => self.copy(&checked).await?,
            };
            self.recopy = false;
            self.stream(stream).await?;
        }
    }

    fn all_columns(&self) -> bool {
        self.dataset
            .refresh_sql()
            .is_none_or(|sql| sql.columns().is_none())
    }

    fn refresh_sql_text(&self) -> Option<String> {
        self.dataset
            .refresh_sql()
            .map(|sql| sql.as_str().to_owned())
    }

    /// Where the stream resumes: the position of the rows served in this
    /// process, or of those the acceleration file kept (read back now);
    /// `None` when the table must be copied (and a new slot made).
    async fn resume_point(&mut self, checked: &Checked) -> Result<Option<Position>, RefreshError> {
        let name = self.dataset.name();
        if self.recopy {
            return Ok(None);
        }
        if let (Some(position), true) = (&self.position, self.dataset.acceleration.serving()) {
            let position = position.clone();
            return Ok(self
                .feed
                .can_resume(&name, checked, &position)
                .await?
                .then_some(position));
        }
        let Some(store) = self.dataset.acceleration.store().cloned() else {
            return Ok(None);
        };
        let checkpoint = {
            let store = Arc::clone(&store);
            tokio::task::spawn_blocking(move || store.checkpoint())
                .await
                .map_err(|e| RefreshError::build(&name, e))?
                .map_err(|e| RefreshError::build(&name, e))?
        };
        let Some(checkpoint) = checkpoint else {
            return Ok(None);
        };
        let Some(position) = checkpoint
            .position
            .as_deref()
            .and_then(|text| self.feed.parse(text))
        else {
            return Ok(None);
        };
        if !self.feed.can_resume(&name, checked, &position).await? {
            return Ok(None);
        }
        if checkpoint.refresh_sql != self.refresh_sql_text() {
            info!(dataset = %name, "refresh_sql differs from the one the acceleration file was loaded with: copying the table again");
            return Ok(None);
        }
        if self.dataset.config.acceleration.in_place() {
            self.serve_in_place(store, checkpoint, &position).await?;
            self.position = Some(position.clone());
            return Ok(Some(position));
        }
        let partitions = self.partitions;
        let read = {
            let checkpoint = checkpoint.clone();
            tokio::task::spawn_blocking(move || store.read(&checkpoint, partitions))
                .await
                .map_err(|e| RefreshError::build(&name, e))?
                .map_err(|e| RefreshError::build(&name, e))?
        };
        info!(dataset = %name, rows = read.rows(), %position, "serving the acceleration file from the last run and resuming its change stream");
        metrics::restored(
            &name,
            Some(checkpoint.last_refresh.timestamp_millis()),
            read.rows(),
            read.bytes(),
            read.index_bytes(),
        );
        let served = self.dataset.acceleration.publish(read);
        self.dataset.loaded_with(checkpoint.refresh_sql.clone());
        self.dataset.restored(Some(checkpoint.last_refresh));
        persisted::index_served(&self.dataset, served, &checkpoint.primary_key).await;
        self.position = Some(position.clone());
        Ok(Some(position))
    }

    /// Takes a consistent start (a new slot, a snapshot at a binlog
    /// position), copies the table in it and publishes the copy; returns the
    /// stream of what was committed after it.
    async fn copy(&mut self, checked: &Checked) -> Result<Stream, RefreshError> {
        let name = self.dataset.name();
        let started = std::time::Instant::now();
        self.dataset.refresh_started();
        let (source, start) = self.feed.start_copy(&name, false).await?;
        let filter = ReadFilter {
            refresh_sql: self.dataset.refresh_sql(),
            since: None,
            floor: None,
        };
        let position = start.position();
        let acceleration = &self.dataset.acceleration;
        let primary_key = &self.dataset.config.acceleration.primary_key;
        let copied = async {
            if self.dataset.config.acceleration.in_place() {
                // Streamed into the file with its position, as a full
                // refresh is.
                let keyless = no_key(&name, &self.feed.table_name());
                let published = full::run_in_file(
                    &source,
                    acceleration,
                    primary_key,
                    &filter,
                    None,
                    Some(position.to_string()),
                    Some(keyless),
                )
                .await?;
                return Ok(Copied::InPlace(published));
            }
            let data = full::read(
                &source,
                acceleration,
                self.partitions,
                primary_key,
                &filter,
                None,
            )
            .await?;
            require_key(&data, &name, &self.feed.table_name())?;
            Ok::<_, RefreshError>(Copied::Memory(Box::new(data)))
        }
        .await;
        // Dropping the source ends the copy's transaction (and its snapshot).
        drop(source);
        let copied = match copied {
            Ok(copied) => copied,
            Err(error) => {
                self.feed.abandon(&name, start, false).await;
                return Err(error);
            }
        };
        let published = match copied {
            Copied::InPlace(published) => published,
            Copied::Memory(data) => {
                acceleration.settled().await;
                let change = Change::Replace(data.batches());
                let (published, _) = full::publish_at(
                    acceleration,
                    *data,
                    change,
                    full::refresh_sql_text(&filter),
                    full::now(),
                    Some(position.to_string()),
                )
                .await?;
                published
            }
        };
        let target = acceleration.served_schema().expect("the copy is published");
        self.dataset.loaded_with(full::refresh_sql_text(&filter));
        metrics::refresh_succeeded(
            &name,
            published.completed.timestamp_millis(),
            started.elapsed(),
            published.rows,
            published.bytes,
            published.index_bytes,
        );
        self.dataset.refresh_succeeded(published.completed, None);
        info!(dataset = %name, rows = published.rows, %position, "copied the table in a snapshot at a known stream position in {:.3}s; streaming its changes", started.elapsed().as_secs_f64());
        self.position = Some(position);
        Ok(self
            .feed
            .start(&name, start, target, checked, self.all_columns())
            .await?)
    }

    /// Applies the stream until it fails, or returns `Ok` for an on-demand
    /// refresh (which copies the table again).
    async fn stream(&mut self, mut stream: Stream) -> Result<(), RefreshError> {
        let name = self.dataset.name();
        let monitor = self.feed.monitor(&name).await;
        let mut slot_check = tokio::time::interval(SLOT_CHECK_EVERY);
        let retention = retention::policy(&self.dataset.config);
        let mut retention_check = tokio::time::interval(
            retention
                .as_ref()
                .map_or(Duration::from_secs(3600), |policy| policy.interval),
        );
        // An on-demand refresh copies the table again while the stream goes
        // on; the transactions applied meanwhile are replayed on the copy.
        let mut copying: Option<std::pin::Pin<Box<CopyAside>>> = None;
        let mut applied_meanwhile: Vec<Transaction> = Vec::new();
        if let Some(position) = &self.position {
            self.report(position, 0);
        }
        loop {
            tokio::select! {
                _ = self.dataset.refresh_requested(), if copying.is_none() => {
                    if self.dataset.config.acceleration.in_place() {
                        // A copy aside would be a second table of the file's
                        // size: the stream stops, and the table is copied
                        // into the file again, as at the start.
                        info!(dataset = %name, "on-demand refresh requested: copying the table into the acceleration file again, then streaming from there");
                        self.recopy = true;
                        return Ok(());
                    }
                    info!(dataset = %name, "on-demand refresh requested: copying the table again while its changes keep streaming");
                    self.dataset.refresh_started();
                    applied_meanwhile.clear();
                    copying = Some(Box::pin(copy_aside(self.aside())));
                }
                copied = async { copying.as_mut().expect("guarded").await }, if copying.is_some() => {
                    copying = None;
                    let replay = std::mem::take(&mut applied_meanwhile);
                    match copied {
                        Ok((data, at, took)) => self.replace(data, at, replay, took).await?,
                        Err(error) => {
                            metrics::refresh_failed(&name, error.reason());
                            warn!(dataset = %name, "the on-demand copy of the table failed; the stream goes on. {error}");
                            self.dataset.refresh_failed(error.to_string());
                        }
                    }
                }
                _ = slot_check.tick() => {
                    if let Some(bytes) = match &monitor {
                        Some(monitor) => monitor.retained_bytes().await,
                        None => None,
                    } {
                        metrics::slot_retained_wal(&name, bytes);
                    }
                }
                _ = retention_check.tick(), if retention.is_some() => {
                    // The file keeps the stream position with the rows.
                    let position = self.position.as_ref().map(Position::to_string);
                    retention::run(&self.dataset, position).await;
                }
                event = stream.next() => match event? {
                    StreamEvent::Idle(at) => {
                        stream.confirm(&at);
                        self.retries = 0;
                        let at = match &self.position {
                            Some(position) if *position > at => position.clone(),
                            _ => at,
                        };
                        self.report(&at, 0);
                    }
                    StreamEvent::Transaction(first) => {
                        let mut transactions = vec![first];
                        let mut failed = None;
                        while transactions.len() < MOST_TRANSACTIONS_PER_VERSION {
                            match stream.next().now_or_never() {
                                Some(Ok(StreamEvent::Transaction(next))) => transactions.push(next),
                                Some(Ok(StreamEvent::Idle(_))) => {}
                                Some(Err(error)) => {
                                    failed = Some(error);
                                    break;
                                }
                                None => break,
                            }
                        }
                        if copying.is_some() {
                            applied_meanwhile.extend(transactions.iter().cloned());
                        }
                        let end = self.apply(transactions).await?;
                        stream.confirm(&end);
                        self.retries = 0;
                        if let Some(error) = failed {
                            return Err(error.into());
                        }
                    }
                }
            }
        }
    }

    /// Serves the rows the acceleration file kept (current to `position`)
    /// in place, for the stream to resume from.
    async fn serve_in_place(
        &self,
        store: Arc<Store>,
        checkpoint: Checkpoint,
        position: &Position,
    ) -> Result<(), RefreshError> {
        let name = self.dataset.name();
        let (reader, bytes) = {
            let checkpoint = checkpoint.clone();
            tokio::task::spawn_blocking(move || {
                Ok::<_, StoreError>((store.reader(&checkpoint)?, store.bytes()))
            })
            .await
            .map_err(|e| RefreshError::build(&name, e))?
            .map_err(|e| RefreshError::build(&name, e))?
        };
        info!(dataset = %name, rows = reader.rows(), %position, "serving the acceleration file from the last run, in place, and resuming its change stream");
        metrics::restored(
            &name,
            Some(checkpoint.last_refresh.timestamp_millis()),
            reader.rows(),
            usize::try_from(bytes).unwrap_or(usize::MAX),
            0,
        );
        self.dataset.loaded_with(checkpoint.refresh_sql.clone());
        self.dataset.restored(Some(checkpoint.last_refresh));
        self.dataset.acceleration.publish_file(FileVersion {
            reader: Arc::new(reader),
            checkpoint,
            bytes,
        });
        Ok(())
    }

    /// What a copy aside needs, owned.
    fn aside(&self) -> Aside {
        Aside {
            dataset: self.dataset.name(),
            acceleration: Arc::clone(&self.dataset.acceleration),
            feed: self.feed.clone(),
            primary_key: self.dataset.config.acceleration.primary_key.clone(),
            filter: ReadFilter {
                refresh_sql: self.dataset.refresh_sql(),
                since: None,
                floor: None,
            },
            partitions: self.partitions,
        }
    }

    /// Publishes `copy` (taken at `at`) in place of the served version,
    /// with the transactions applied since that came after `at` replayed on
    /// it: the new version is current to the stream's position.
    async fn replace(
        &mut self,
        copy: TableData,
        at: Position,
        applied: Vec<Transaction>,
        took: Duration,
    ) -> Result<(), RefreshError> {
        let name = self.dataset.name();
        let replay: Vec<Transaction> = applied.into_iter().filter(|t| t.end > at).collect();
        let replayed = replay.len();
        let lenient = retention::policy(&self.dataset.config).is_some();
        let partitions = self.partitions;
        let data = if replay.is_empty() {
            copy
        } else {
            let dataset = name.clone();
            tokio::task::spawn_blocking(move || {
                merge(&copy, &replay, partitions, false, lenient)
                    .map(|merged| merged.data)
                    .map_err(|message| RefreshError::Build { dataset, message })
            })
            .await
            .map_err(|e| RefreshError::build(&name, e))??
        };
        let change = Change::Replace(data.batches());
        let position = self.position.as_ref().map(Position::to_string);
        let (published, _) = full::publish_at(
            &self.dataset.acceleration,
            data,
            change,
            self.refresh_sql_text(),
            full::now(),
            position,
        )
        .await?;
        self.dataset.loaded_with(self.refresh_sql_text());
        metrics::refresh_succeeded(
            &name,
            published.completed.timestamp_millis(),
            took,
            published.rows,
            published.bytes,
            published.index_bytes,
        );
        self.dataset.refresh_succeeded(published.completed, None);
        info!(dataset = %name, rows = published.rows, replayed, "copied the table again in {:.3}s while streaming, and replayed the transactions committed since", took.as_secs_f64());
        Ok(())
    }

    fn report(&self, position: &Position, lag_ms: u64) {
        metrics::changes_lag(&self.dataset.name(), lag_ms);
        self.dataset.changes_applied(ChangesReport {
            position: position.to_string(),
            lag_ms,
            applied_at: Utc::now(),
        });
    }

    /// Publishes a version with `transactions` applied; returns the
    /// position it is current to.
    async fn apply(&mut self, transactions: Vec<Transaction>) -> Result<Position, RefreshError> {
        let name = self.dataset.name();
        let end = transactions
            .last()
            .map(|t| t.end.clone())
            .expect("at least one transaction");
        if transactions.iter().all(|t| t.changes.is_empty()) {
            // Transactions of other tables of the publication: nothing to
            // publish, and the stream moves past them.
            self.report(&end, 0);
            self.position = Some(end.clone());
            return Ok(end);
        }
        let acceleration = &self.dataset.acceleration;
        acceleration.settled().await;
        let committed = transactions
            .last()
            .map(|t| t.commit_unix_micros)
            .unwrap_or_default();
        let lenient = retention::policy(&self.dataset.config).is_some();
        let (published, counts) = match acceleration.file_version() {
            Some(version) => {
                let refresh_sql = self.refresh_sql_text();
                apply_in_file(
                    acceleration,
                    &version,
                    transactions,
                    &end,
                    refresh_sql,
                    lenient,
                )
                .await?
            }
            None => {
                let held = acceleration
                    .current()
                    .expect("changes are applied to a served version");
                let (partitions, with_file) = (self.partitions, acceleration.store().is_some());
                let merged = {
                    let dataset = name.clone();
                    tokio::task::spawn_blocking(move || {
                        merge(&held, &transactions, partitions, with_file, lenient)
                            .map_err(|message| RefreshError::Build { dataset, message })
                    })
                    .await
                    .map_err(|e| RefreshError::build(&name, e))??
                };
                let (published, _) = full::publish_at(
                    acceleration,
                    merged.data,
                    merged.change,
                    self.refresh_sql_text(),
                    full::now(),
                    Some(end.to_string()),
                )
                .await?;
                (published, merged.counts)
            }
        };
        self.position = Some(end.clone());
        for (op, count) in [
            ("insert", counts.inserts),
            ("update", counts.updates),
            ("delete", counts.deletes),
            ("truncate", counts.truncates),
        ] {
            if count > 0 {
                metrics::changes_applied(&name, op, count);
            }
        }
        metrics::restored(
            &name,
            Some(published.completed.timestamp_millis()),
            published.rows,
            published.bytes,
            published.index_bytes,
        );
        let lag_ms = (Utc::now().timestamp_micros() - committed).max(0) as u64 / 1000;
        self.dataset.refresh_succeeded(published.completed, None);
        self.report(&end, lag_ms);
        Ok(end)
    }
}

/// Applies `transactions` to the version `held` of an acceleration queried
/// in place: only the rows whose keys they touch are read back from the
/// file (through its key index), merged as in memory, and the change is
/// written with the stream position `end` in one transaction.
async fn apply_in_file(
    acceleration: &Arc<ArrowAcceleration>,
    held: &FileVersion,
    transactions: Vec<Transaction>,
    end: &Position,
    refresh_sql: Option<String>,
    lenient: bool,
) -> Result<(full::Published, Counts), RefreshError> {
    let dataset = acceleration.dataset().to_owned();
    let build = |message: String| RefreshError::Build {
        dataset: dataset.clone(),
        message,
    };
    let checkpoint = Checkpoint {
        last_refresh: full::now(),
        refresh_sql,
        position: Some(end.to_string()),
        ..held.checkpoint.clone()
    };
    let probe =
        touched_keys(&checkpoint.schema, &checkpoint.primary_key, &transactions).map_err(build)?;
    let (published, counts) = full::commit_in_place(acceleration, move |store| {
        let matched = store.matching(&probe, &checkpoint)?;
        let merged = merge_matched(&checkpoint, matched, &transactions, lenient)
            .map_err(|message| store.error(message))?;
        store.write(&merged.change, &checkpoint)?;
        Ok((Some(checkpoint), merged.counts))
    })
    .await?;
    let (published, _) = published.expect("a checkpoint is committed");
    Ok((published, counts))
}

/// [`merge`] over the held rows `matched` that the transactions touch.
fn merge_matched(
    checkpoint: &Checkpoint,
    matched: Vec<RecordBatch>,
    transactions: &[Transaction],
    lenient: bool,
) -> Result<Merged, String> {
    let mut builder =
        TableDataBuilder::keyed(Arc::clone(&checkpoint.schema), &checkpoint.primary_key, 0)
            .map_err(|e| e.to_string())?;
    for batch in matched {
        builder.push(batch).map_err(|e| e.to_string())?;
    }
    let matched = builder.finish(1).map_err(|e| e.to_string())?;
    merge(&matched, transactions, 1, true, lenient)
}

/// The key (columns `key` of `schema`) of every row `transactions` insert,
/// update or delete, as a batch of the key columns.
fn touched_keys<P>(
    schema: &SchemaRef,
    key: &[String],
    transactions: &[SourceTransaction<P>],
) -> Result<RecordBatch, String> {
    let columns: Vec<usize> = key
        .iter()
        .map(|name| schema.index_of(name).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    if columns.is_empty() {
        return Err("the acceleration has no primary key to apply changes by".to_owned());
    }
    let mut values: Vec<Vec<ScalarValue>> = vec![Vec::new(); columns.len()];
    let mut push = |row: &Row| {
        let key: Option<Vec<ScalarValue>> = columns
            .iter()
            .map(|&c| row.0[c].clone().filter(|value| !value.is_null()))
            .collect();
        for (column, value) in values.iter_mut().zip(key.into_iter().flatten()) {
            column.push(value);
        }
    };
    for transaction in transactions {
        for change in &transaction.changes {
            match change {
                RowChange::Insert(row) | RowChange::Delete(row) => push(row),
                RowChange::Update { old, new } => {
                    if let Some(old) = old {
                        push(old);
                    }
                    push(new);
                }
                RowChange::Truncate => {}
            }
        }
    }
    let fields: Vec<Field> = columns
        .iter()
        .map(|&c| schema.field(c).as_ref().clone().with_nullable(true))
        .collect();
    let arrays = values
        .into_iter()
        .zip(&fields)
        .map(|(values, field)| {
            if values.is_empty() {
                return Ok(new_empty_array(field.data_type()));
            }
            let array = ScalarValue::iter_to_array(values).map_err(|e| e.to_string())?;
            match array.data_type() == field.data_type() {
                true => Ok(array),
                false => cast(&array, field.data_type()).map_err(|e| e.to_string()),
            }
        })
        .collect::<Result<Vec<_>, String>>()?;
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(|e| e.to_string())
}

/// A copy must be indexed by a key: each change is applied to the row with
/// the same key.
fn require_key(data: &TableData, dataset: &str, table: &str) -> Result<(), RefreshError> {
    if data.primary_key().is_some() {
        return Ok(());
    }
    Err(no_key(dataset, table))
}

/// What a copy without a key is refused with.
fn no_key(dataset: &str, table: &str) -> RefreshError {
    RefreshError::Register(format!(
        "dataset '{dataset}' uses refresh_mode: changes, which applies each change to the row with the same key, but {table} has no primary key: add one at the source, or set acceleration.primary_key"
    ))
}

/// A copy of the table: written to the file queried in place (and
/// published), or in memory, to be published.
enum Copied {
    InPlace(full::Published),
    Memory(Box<TableData>),
}

/// What [`copy_aside`] needs.
struct Aside {
    dataset: String,
    acceleration: Arc<ArrowAcceleration>,
    feed: Feed,
    primary_key: Vec<String>,
    filter: ReadFilter,
    partitions: usize,
}

type CopyAside =
    dyn std::future::Future<Output = Result<(TableData, Position, Duration), RefreshError>> + Send;

/// Copies the table in a consistent start of its own (a temporary slot's
/// snapshot, a snapshot at a binlog position), without publishing it;
/// returns the copy and the position it is current to.
async fn copy_aside(aside: Aside) -> Result<(TableData, Position, Duration), RefreshError> {
    let started = std::time::Instant::now();
    let (source, start) = aside.feed.start_copy(&aside.dataset, true).await?;
    let at = start.position();
    // The copy's transaction holds the snapshot now.
    aside.feed.abandon(&aside.dataset, start, true).await;
    let data = full::read(
        &source,
        &aside.acceleration,
        aside.partitions,
        &aside.primary_key,
        &aside.filter,
        None,
    )
    .await?;
    require_key(&data, &aside.dataset, &aside.feed.table_name())?;
    Ok((data, at, started.elapsed()))
}

#[derive(Debug, Default, PartialEq)]
struct Counts {
    inserts: u64,
    updates: u64,
    deletes: u64,
    truncates: u64,
}

/// A version with changes applied, and what its file write changes.
struct Merged {
    data: TableData,
    change: Change,
    counts: Counts,
}

/// Applies `transactions` (in commit order) to `held`: the final state of
/// each key they touch replaces the held row with that key. `lenient`
/// (a retention policy may have evicted rows): an update of a row the
/// acceleration no longer holds that leaves some of its values unsent is
/// skipped rather than failing the stream.
fn merge<P>(
    held: &TableData,
    transactions: &[SourceTransaction<P>],
    partitions: usize,
    with_file: bool,
    lenient: bool,
) -> Result<Merged, String> {
    let index = held
        .primary_key()
        .ok_or("the acceleration has no primary-key index")?;
    let key_columns = index.columns().to_vec();
    let key_of = |row: &[ScalarValue]| -> Vec<ScalarValue> {
        key_columns.iter().map(|&c| row[c].clone()).collect()
    };
    let partial_key = |row: &Row| -> Option<Vec<ScalarValue>> {
        key_columns
            .iter()
            .map(|&c| row.0[c].clone().filter(|value| !value.is_null()))
            .collect()
    };
    let mut rows: Vec<Vec<ScalarValue>> = Vec::new();
    // The final state of each key touched: the row that replaces it, or
    // none (deleted).
    let mut state: HashMap<Vec<ScalarValue>, Option<usize>> = HashMap::new();
    let mut truncated = false;
    let mut counts = Counts::default();
    // The current values of `key`'s row, to fill in what a change left unsent.
    let current = |key: &[ScalarValue],
                   state: &HashMap<Vec<ScalarValue>, Option<usize>>,
                   rows: &[Vec<ScalarValue>],
                   truncated: bool|
     -> Result<Option<Vec<ScalarValue>>, String> {
        match state.get(key) {
            Some(Some(at)) => return Ok(Some(rows[*at].clone())),
            Some(None) => return Ok(None),
            None if truncated => return Ok(None),
            None => {}
        }
        let Some(found) = held.lookup(key).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let Some(at) = found.first() else {
            return Ok(None);
        };
        let batch = held.batch(at.batch);
        batch
            .columns()
            .iter()
            .map(|column| ScalarValue::try_from_array(column, at.row as usize))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
            .map_err(|e| e.to_string())
    };
    for transaction in transactions {
        for change in &transaction.changes {
            match change {
                RowChange::Insert(row) => {
                    counts.inserts += 1;
                    let full: Vec<ScalarValue> = row
                        .0
                        .iter()
                        .map(|value| value.clone().ok_or("an insert left a value unsent"))
                        .collect::<Result<_, _>>()?;
                    let key = key_of(&full);
                    rows.push(full);
                    state.insert(key, Some(rows.len() - 1));
                }
                RowChange::Update { old, new } => {
                    counts.updates += 1;
                    let old_key = old.as_ref().and_then(partial_key);
                    let new_key = partial_key(new).or_else(|| old_key.clone());
                    let Some(new_key) = new_key else {
                        return Err("an update sent no key".to_owned());
                    };
                    let base_key = old_key.clone().unwrap_or_else(|| new_key.clone());
                    let full = if new.0.iter().any(Option::is_none) {
                        match current(&base_key, &state, &rows, truncated)? {
                            Some(base) => new
                                .0
                                .iter()
                                .zip(base)
                                .map(|(value, base)| value.clone().unwrap_or(base))
                                .collect(),
                            None if lenient => continue,
                            None => {
                                return Err(
                                    "an update left values unsent for a row the acceleration does not hold"
                                        .to_owned(),
                                );
                            }
                        }
                    } else {
                        new.0
                            .iter()
                            .map(|v| v.clone().unwrap_or(ScalarValue::Null))
                            .collect()
                    };
                    if let Some(old_key) = old_key
                        && old_key != new_key
                    {
                        state.insert(old_key, None);
                    }
                    rows.push(full);
                    state.insert(new_key, Some(rows.len() - 1));
                }
                RowChange::Delete(old) => {
                    counts.deletes += 1;
                    let key = partial_key(old).ok_or("a delete sent no key")?;
                    state.insert(key, None);
                }
                RowChange::Truncate => {
                    counts.truncates += 1;
                    truncated = true;
                    state.clear();
                    rows.clear();
                }
            }
        }
    }
    let mut kept: Vec<usize> = state.values().filter_map(|at| *at).collect();
    kept.sort_unstable();
    let added = match kept.is_empty() {
        true => Vec::new(),
        false => vec![rows_batch(held, &rows, &kept)?],
    };
    if truncated {
        let mut builder = TableDataBuilder::keyed(Arc::clone(held.schema()), &held.key_names(), 0)
            .map_err(|e| e.to_string())?;
        for batch in &added {
            builder.push(batch.clone()).map_err(|e| e.to_string())?;
        }
        let data = builder.finish(partitions).map_err(|e| e.to_string())?;
        return Ok(Merged {
            change: Change::Replace(data.batches()),
            data,
            counts,
        });
    }
    let mut removed: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for key in state.keys() {
        for at in held
            .lookup(key)
            .map_err(|e| e.to_string())?
            .unwrap_or_default()
        {
            removed.entry(at.batch).or_default().insert(at.row);
        }
    }
    let change = Change::Upsert {
        removed: match with_file {
            true => super::append::removed_keys(held, &removed).map_err(|e| e.to_string())?,
            false => None,
        },
        added: added.clone(),
    };
    let data = held.revise(&removed, added).map_err(|e| e.to_string())?;
    Ok(Merged {
        data,
        change,
        counts,
    })
}

/// The rows `kept` of `rows`, as one batch of `held`'s columns.
fn rows_batch(
    held: &TableData,
    rows: &[Vec<ScalarValue>],
    kept: &[usize],
) -> Result<RecordBatch, String> {
    let schema = held.schema();
    let columns = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(c, field)| {
            let values = kept.iter().map(|&at| rows[at][c].clone());
            let array: ArrayRef = ScalarValue::iter_to_array(values).map_err(|e| e.to_string())?;
            if array.data_type() == field.data_type() {
                Ok(array)
            } else {
                cast(&array, field.data_type()).map_err(|e| e.to_string())
            }
        })
        .collect::<Result<Vec<_>, String>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn held(rows: &[(i64, &str)]) -> TableData {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
            ],
        )
        .unwrap();
        let mut builder = TableDataBuilder::keyed(schema, &["id".to_owned()], 0).unwrap();
        builder.push(batch).unwrap();
        builder.finish(2).unwrap()
    }

    fn row(id: Option<i64>, name: Option<Option<&str>>) -> Row {
        Row(vec![
            Some(ScalarValue::Int64(id)),
            name.map(|n| ScalarValue::Utf8(n.map(str::to_owned))),
        ])
    }

    fn contents(data: &TableData) -> Vec<(i64, Option<String>)> {
        let mut out = Vec::new();
        for batch in data.batches() {
            let ids = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            let names = batch
                .column(1)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            for i in 0..batch.num_rows() {
                out.push((
                    ids.value(i),
                    names.is_valid(i).then(|| names.value(i).to_owned()),
                ));
            }
        }
        out.sort();
        out
    }

    fn transaction(end: u64, changes: Vec<RowChange>) -> SourceTransaction<u64> {
        SourceTransaction {
            end,
            commit_unix_micros: 0,
            changes,
        }
    }

    /// What a file queried in place reads back before applying changes:
    /// the key of every row inserted, updated (old and new key) or deleted,
    /// in the key column's type; a row without its key names nothing.
    #[test]
    fn the_keys_changes_touch_are_gathered_for_the_file() {
        let schema = Arc::clone(held(&[]).schema());
        let transactions = vec![
            transaction(
                1,
                vec![
                    RowChange::Insert(row(Some(4), Some(Some("four")))),
                    RowChange::Update {
                        old: Some(row(Some(1), None)),
                        new: row(Some(10), None),
                    },
                ],
            ),
            transaction(
                2,
                vec![
                    RowChange::Delete(row(Some(3), None)),
                    RowChange::Truncate,
                    RowChange::Delete(row(None, None)),
                ],
            ),
        ];
        let keys = touched_keys(&schema, &["id".to_owned()], &transactions).unwrap();
        assert_eq!(keys.schema().field(0).name(), "id");
        let ids = keys
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(ids.values().to_vec(), [4, 1, 10, 3]);
        let no_changes = touched_keys(&schema, &["id".to_owned()], &transactions[..0]).unwrap();
        assert_eq!(no_changes.num_rows(), 0);
        assert!(touched_keys(&schema, &[], &transactions).is_err());
    }

    /// Inserts, an update that changes the key and keeps an unsent value,
    /// a delete, and a later transaction that touches the same keys again:
    /// the final state of each key wins, in commit order.
    #[test]
    fn changes_apply_in_commit_order_by_key() {
        let held = held(&[(1, "one"), (2, "two"), (3, "three")]);
        let transactions = vec![
            transaction(
                10,
                vec![
                    RowChange::Insert(row(Some(4), Some(Some("four")))),
                    RowChange::Update {
                        old: Some(row(Some(2), Some(None))),
                        new: row(Some(20), None),
                    },
                    RowChange::Delete(row(Some(3), Some(None))),
                ],
            ),
            transaction(
                11,
                vec![
                    RowChange::Update {
                        old: None,
                        new: row(Some(4), Some(Some("FOUR"))),
                    },
                    RowChange::Insert(row(Some(3), Some(Some("three again")))),
                ],
            ),
        ];
        let merged = merge(&held, &transactions, 2, true, false).unwrap();
        assert_eq!(
            contents(&merged.data),
            vec![
                (1, Some("one".to_owned())),
                (3, Some("three again".to_owned())),
                (4, Some("FOUR".to_owned())),
                (20, Some("two".to_owned())),
            ]
        );
        assert_eq!(
            merged.counts,
            Counts {
                inserts: 2,
                updates: 2,
                deletes: 1,
                truncates: 0
            }
        );
        let Change::Upsert { removed, added } = &merged.change else {
            panic!("an upsert");
        };
        assert_eq!(removed.as_ref().unwrap().num_rows(), 2, "rows 2 and 3 go");
        assert_eq!(added.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
        // The index follows: the old key is gone, the new one found.
        assert!(
            merged
                .data
                .lookup(&[ScalarValue::Int64(Some(2))])
                .unwrap()
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            merged
                .data
                .lookup(&[ScalarValue::Int64(Some(20))])
                .unwrap()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn a_truncate_replaces_everything_held_before_it() {
        let held = held(&[(1, "one"), (2, "two")]);
        let transactions = vec![transaction(
            10,
            vec![
                RowChange::Insert(row(Some(3), Some(Some("three")))),
                RowChange::Truncate,
                RowChange::Insert(row(Some(5), Some(Some("five")))),
            ],
        )];
        let merged = merge(&held, &transactions, 2, true, false).unwrap();
        assert_eq!(contents(&merged.data), vec![(5, Some("five".to_owned()))]);
        assert!(matches!(merged.change, Change::Replace(_)));
    }

    #[test]
    fn an_unsent_value_of_a_row_not_held_is_an_error_unless_retention_evicts() {
        let held = held(&[(1, "one")]);
        let transactions = vec![transaction(
            10,
            vec![RowChange::Update {
                old: None,
                new: row(Some(9), None),
            }],
        )];
        assert!(
            merge(&held, &transactions, 1, false, false)
                .err()
                .unwrap()
                .contains("does not hold")
        );
        let merged = merge(&held, &transactions, 1, false, true).unwrap();
        assert_eq!(contents(&merged.data), vec![(1, Some("one".to_owned()))]);
    }
}
