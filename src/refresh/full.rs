//! `refresh_mode: full`: read the whole source table, build the next
//! acceleration aside, publish it in one step.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use tokio::time::Instant;

use super::RefreshError;
use crate::accelerator::{
    ArrowAcceleration, Change, Checkpoint, FileVersion, ReadProgress, Store, StoreError, TableData,
    TableDataBuilder,
};
use crate::source::{ReadFilter, Source, SourceError};

/// How long a refresh waits for each batch after the first one. The seeds
/// fix it at ten minutes; it is not configurable.
pub const STALL_LIMIT: Duration = Duration::from_secs(600);

/// How often a waiting refresh looks at the clock (and at the limit, which
/// tests may shorten).
const STALL_CHECK: Duration = Duration::from_millis(250);

/// The stall limit in force: [`STALL_LIMIT`], unless a test shortened it.
static STALL_LIMIT_MS: AtomicU64 = AtomicU64::new(STALL_LIMIT.as_millis() as u64);

fn stall_limit() -> Duration {
    Duration::from_millis(STALL_LIMIT_MS.load(Ordering::Relaxed))
}

/// Test-only hook: shortens the stall limit of every refresh in this
/// process, so that a test does not wait ten minutes. Not part of the
/// product's configuration.
#[doc(hidden)]
pub fn set_stall_limit_for_tests(limit: Duration) {
    STALL_LIMIT_MS.store(limit.as_millis() as u64, Ordering::Relaxed);
}

/// What a completed refresh published.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    pub rows: usize,
    pub bytes: usize,
    pub index_bytes: usize,
    /// When it completed; a file acceleration's checkpoint records it.
    pub completed: DateTime<Utc>,
}

pub async fn run(
    source: &Source,
    acceleration: &Arc<ArrowAcceleration>,
    partitions: usize,
    configured_key: &[String],
    filter: &ReadFilter,
    expected: Option<&SchemaRef>,
    position: Option<String>,
) -> Result<(Published, Arc<TableData>), RefreshError> {
    let data = read(
        source,
        acceleration,
        partitions,
        configured_key,
        filter,
        expected,
    )
    .await?;
    // Invariant: the data, and its primary-key index, are complete before
    // they become visible; a refresh that fails or is cancelled above
    // publishes nothing.
    let change = Change::Replace(data.batches());
    publish_at(
        acceleration,
        data,
        change,
        refresh_sql_text(filter),
        now(),
        position,
    )
    .await
}

/// What the read of a refresh hands the file's writer.
enum Feed {
    Batch(RecordBatch),
    /// Every row is sent: commit, holding the commit section until the
    /// new version is published.
    End(tokio::sync::OwnedMutexGuard<()>),
}

/// `refresh_mode: full` of a file acceleration queried in place: the
/// source's rows stream into the file in one transaction, which is
/// indexed by the key and committed, and the committed version is
/// published. No more than a few batches are ever in memory, so a table
/// larger than memory refreshes. Queries read the previous version until
/// the commit; a read that fails or is cancelled rolls the transaction
/// back, and a commit once started completes (and publishes) even if the
/// refresh awaiting it is dropped.
///
/// `position`: where in the source's change stream the rows are current to
/// (`refresh_mode: changes`), kept with them. `keyless`: the error to fail
/// with, before anything is written, when the rows have no primary key
/// (`None`: they need none).
pub async fn run_in_file(
    source: &Source,
    acceleration: &Arc<ArrowAcceleration>,
    configured_key: &[String],
    filter: &ReadFilter,
    expected: Option<&SchemaRef>,
    position: Option<String>,
    keyless: Option<RefreshError>,
) -> Result<Published, RefreshError> {
    let dataset = acceleration.dataset();
    let Some(store) = acceleration.store().cloned() else {
        return Err(RefreshError::build(
            dataset,
            "its acceleration file is not open",
        ));
    };
    let snapshot = read_expected(source, dataset, filter, expected).await?;
    let primary_key = key_of(configured_key, &snapshot.primary_key).to_vec();
    if let Some(missing) = primary_key
        .iter()
        .find(|name| snapshot.schema.index_of(name).is_err())
    {
        return Err(RefreshError::build(
            dataset,
            format!("primary key column `{missing}` is not a column of the table"),
        ));
    }
    if let Some(error) = keyless.filter(|_| primary_key.is_empty()) {
        return Err(error);
    }
    let checkpoint = Checkpoint {
        last_refresh: now(),
        schema: Arc::clone(&snapshot.schema),
        primary_key,
        refresh_sql: refresh_sql_text(filter),
        position,
    };
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Feed>(4);
    let writer = {
        let acceleration = Arc::clone(acceleration);
        tokio::task::spawn_blocking(move || {
            let mut section = None;
            let committed = store.replace_from(
                checkpoint,
                &mut || match receiver.blocking_recv() {
                    Some(Feed::Batch(batch)) => Some(Some(batch)),
                    Some(Feed::End(guard)) => {
                        section = Some(guard);
                        Some(None)
                    }
                    None => None,
                },
                now,
            )?;
            let (published, _) = publish_in_place(&acceleration, &store, committed)?;
            drop(section);
            Ok::<_, crate::accelerator::StoreError>(published)
        })
    };
    // Set when the writer stopped taking batches: its error is the cause.
    let writer_stopped = std::sync::atomic::AtomicBool::new(false);
    let stopped = || {
        writer_stopped.store(true, Ordering::Relaxed);
        RefreshError::build(dataset, "the write to the acceleration file stopped")
    };
    let mut read = drain(snapshot.stream, dataset, acceleration.progress(), |batch| {
        let (sender, stopped) = (&sender, &stopped);
        async move { sender.send(Feed::Batch(batch)).await.map_err(|_| stopped()) }
    })
    .await;
    if read.is_ok() {
        let section = acceleration.commit_lock().await;
        read = sender.send(Feed::End(section)).await.map_err(|_| stopped());
    }
    drop(sender);
    let written = writer
        .await
        .map_err(|e| RefreshError::build(dataset, e))?
        .map_err(|e| RefreshError::build(dataset, e));
    match (read, written) {
        (Ok(()), written) => written,
        (Err(_), Err(written)) if writer_stopped.load(Ordering::Relaxed) => Err(written),
        (Err(read), _) => Err(read),
    }
}

/// Publishes the version `committed` describes, just committed to the file
/// of `store`, to queries that read it in place.
fn publish_in_place(
    acceleration: &ArrowAcceleration,
    store: &Store,
    committed: Checkpoint,
) -> Result<(Published, Arc<FileVersion>), StoreError> {
    let (reader, bytes) = (store.reader(&committed)?, store.bytes());
    let published = Published {
        rows: reader.rows(),
        bytes: usize::try_from(bytes).unwrap_or(usize::MAX),
        index_bytes: 0,
        completed: committed.last_refresh,
    };
    let version = acceleration.publish_file(FileVersion {
        reader: Arc::new(reader),
        bytes,
        checkpoint: committed,
    });
    Ok((published, version))
}

/// Runs `write` on the file of an acceleration queried in place, on a
/// blocking thread and inside the commit section, then publishes the
/// version it committed, if any (`write` answers the checkpoint it
/// committed with, or `None` when it wrote nothing, and a value of its own).
pub(super) async fn commit_in_place<T: Send + 'static>(
    acceleration: &Arc<ArrowAcceleration>,
    write: impl FnOnce(&Store) -> Result<(Option<Checkpoint>, T), StoreError> + Send + 'static,
) -> Result<(Option<(Published, Arc<FileVersion>)>, T), RefreshError> {
    let dataset = acceleration.dataset();
    let Some(store) = acceleration.store().cloned() else {
        return Err(RefreshError::build(
            dataset,
            "its acceleration file is not open",
        ));
    };
    let section = acceleration.commit_lock().await;
    let acceleration = Arc::clone(acceleration);
    tokio::task::spawn_blocking(move || {
        let _section = section;
        let (committed, outcome) = write(&store)?;
        let published = committed
            .map(|checkpoint| publish_in_place(&acceleration, &store, checkpoint))
            .transpose()?;
        Ok::<_, StoreError>((published, outcome))
    })
    .await
    .map_err(|e| RefreshError::build(dataset, e))?
    .map_err(|e| RefreshError::build(dataset, e))
}

/// The rows of the version `acceleration` serves (0 before the first
/// load): what the next full read of it most likely holds, so that its
/// index is sized once instead of growing by doubling, each step holding
/// the old table and the new one at once.
fn served_rows(acceleration: &ArrowAcceleration) -> usize {
    acceleration.current().map_or(0, |data| data.rows())
}

/// Reads the whole (filtered) table into a new version of `acceleration`,
/// indexed by the configured key or else the source's primary key (sized
/// for the rows it serves now) and sorted by its `sort_by` columns;
/// publishes nothing.
pub(super) async fn read(
    source: &Source,
    acceleration: &ArrowAcceleration,
    partitions: usize,
    configured_key: &[String],
    filter: &ReadFilter,
    expected: Option<&SchemaRef>,
) -> Result<TableData, RefreshError> {
    let dataset = acceleration.dataset();
    let progress = acceleration.progress();
    let snapshot = read_expected(source, dataset, filter, expected).await?;
    let primary_key = key_of(configured_key, &snapshot.primary_key);
    let mut builder =
        TableDataBuilder::keyed(snapshot.schema, primary_key, served_rows(acceleration))
            .and_then(|builder| builder.sorted_by(acceleration.sort_by()))
            .map_err(|e| RefreshError::build(dataset, e))?;
    drain(snapshot.stream, dataset, progress, |batch| {
        std::future::ready(
            builder
                .push(batch)
                .map_err(|e| RefreshError::build(dataset, e)),
        )
    })
    .await?;
    // Sorting a large table takes seconds of CPU: off the async workers.
    let finished = if acceleration.sort_by().is_empty() {
        builder.finish(partitions)
    } else {
        tokio::task::spawn_blocking(move || builder.finish(partitions))
            .await
            .map_err(|e| RefreshError::build(dataset, e))?
    };
    finished.map_err(|e| RefreshError::build(dataset, e))
}

/// Starts the read of the whole (filtered) table; fails when the source
/// answers with other columns than `expected`.
async fn read_expected(
    source: &Source,
    dataset: &str,
    filter: &ReadFilter,
    expected: Option<&SchemaRef>,
) -> Result<crate::source::Snapshot, RefreshError> {
    let snapshot = source.read_all(filter).await?;
    if let Some(change) = expected.and_then(|held| column_change(held, &snapshot.schema)) {
        return Err(RefreshError::SchemaChanged {
            dataset: dataset.to_owned(),
            change,
        });
    }
    Ok(snapshot)
}

/// The key a version is indexed by: the configured one, else the source's.
fn key_of<'a>(configured: &'a [String], source: &'a [String]) -> &'a [String] {
    if configured.is_empty() {
        source
    } else {
        configured
    }
}

/// Publishes `data` as of `completed` (the last refresh time the checkpoint
/// records). With a file engine, `change` (what makes the file's
/// rows `data`'s) and the checkpoint are committed to the file first: a
/// version queries see is always one a restart finds again.
///
/// The commit and the publish form one section that is never cancelled
/// half-way: they run on a blocking thread that finishes them even when the
/// refresh awaiting them is dropped (an on-demand request restarting it, a
/// shutdown). Otherwise a file could hold rows the served version lacks, and
/// the next append would write them again. The section holds the
/// acceleration's commit lock, which the next refresh awaits
/// ([`ArrowAcceleration::settled`]) before it reads what is served.
pub(super) async fn publish(
    acceleration: &Arc<ArrowAcceleration>,
    data: TableData,
    change: Change,
    refresh_sql: Option<String>,
    completed: DateTime<Utc>,
) -> Result<(Published, Arc<TableData>), RefreshError> {
    publish_at(acceleration, data, change, refresh_sql, completed, None).await
}

/// [`publish`], recording `position`: where in the source's change stream
/// the rows are current to (`refresh_mode: changes`).
pub(super) async fn publish_at(
    acceleration: &Arc<ArrowAcceleration>,
    data: TableData,
    change: Change,
    refresh_sql: Option<String>,
    completed: DateTime<Utc>,
    position: Option<String>,
) -> Result<(Published, Arc<TableData>), RefreshError> {
    let section = acceleration.commit_lock().await;
    let published = Published {
        rows: data.rows(),
        bytes: data.bytes(),
        index_bytes: data.index_bytes(),
        completed,
    };
    let dataset = acceleration.dataset().to_owned();
    let acceleration = Arc::clone(acceleration);
    tokio::task::spawn_blocking(move || {
        let _section = section;
        if let Some(store) = acceleration.store() {
            let checkpoint = Checkpoint {
                last_refresh: completed,
                schema: Arc::clone(data.schema()),
                primary_key: data.key_names(),
                refresh_sql,
                position,
            };
            store.write(&change, &checkpoint)?;
        }
        Ok::<_, crate::accelerator::StoreError>((published, acceleration.publish(data)))
    })
    .await
    .map_err(|e| RefreshError::build(&dataset, e))?
    .map_err(|e| RefreshError::build(&dataset, e))
}

/// How the columns `read` from the source differ from those `held`, in
/// words naming them; `None` when the names and types match in order
/// (nullability and metadata aside).
pub(super) fn column_change(held: &SchemaRef, read: &SchemaRef) -> Option<String> {
    let same = held.fields().len() == read.fields().len()
        && held
            .fields()
            .iter()
            .zip(read.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    if same {
        return None;
    }
    let find = |schema: &SchemaRef, name: &str| {
        schema
            .fields()
            .iter()
            .find(|field| field.name() == name)
            .cloned()
    };
    let mut changes = Vec::new();
    for field in read.fields() {
        match find(held, field.name()) {
            None => changes.push(format!(
                "column \"{}\" ({}) was added",
                field.name(),
                field.data_type()
            )),
            Some(was) if was.data_type() != field.data_type() => changes.push(format!(
                "column \"{}\" changed type from {} to {}",
                field.name(),
                was.data_type(),
                field.data_type()
            )),
            Some(_) => {}
        }
    }
    for field in held.fields() {
        if find(read, field.name()).is_none() {
            changes.push(format!("column \"{}\" was removed", field.name()));
        }
    }
    if changes.is_empty() {
        changes.push("the columns were reordered".to_owned());
    }
    Some(changes.join(", "))
}

/// The time a refresh completes, in microseconds: what the checkpoint keeps,
/// so a restart reports the same.
pub(super) fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// The text of the `refresh_sql` a read applied, as a checkpoint records it.
pub(super) fn refresh_sql_text(filter: &ReadFilter) -> Option<String> {
    filter
        .refresh_sql
        .as_ref()
        .map(|sql| sql.as_str().to_owned())
}

/// Reads `stream` to its end, handing each batch to `each`. The first batch
/// may take as long as the source needs to plan and start the query; after
/// it, each batch must come within the stall limit, or the connection is
/// taken for lost. `progress` reports the rows read while it runs.
pub(super) async fn drain<F>(
    mut stream: SendableRecordBatchStream,
    dataset: &str,
    progress: &ReadProgress,
    mut each: impl FnMut(RecordBatch) -> F,
) -> Result<(), RefreshError>
where
    F: std::future::Future<Output = Result<(), RefreshError>>,
{
    let _reading = progress.begin();
    let mut last_batch: Option<Instant> = None;
    loop {
        let next = match last_batch {
            None => stream.next().await,
            Some(at) => match tokio::time::timeout(STALL_CHECK, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    let limit = stall_limit();
                    if at.elapsed() >= limit {
                        return Err(RefreshError::Stalled {
                            dataset: dataset.to_owned(),
                            seconds: limit.as_secs(),
                        });
                    }
                    continue;
                }
            },
        };
        let Some(batch) = next else {
            return Ok(());
        };
        let batch =
            batch.map_err(|e| RefreshError::Source(SourceError::stream_failed(dataset, &e)))?;
        last_batch = Some(Instant::now());
        progress.add(&batch);
        each(batch).await?;
    }
}
