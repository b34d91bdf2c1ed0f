//! `refresh_mode: append`: read only the rows newer than the newest one the
//! acceleration holds (less `refresh_append_overlap`), and add them to it.
//!
//! A re-read row never appears twice. With a primary key (configured, or the
//! source table's own), a row whose key is already held replaces the held one
//! unless the held one is newer by the time column; without one, a row equal
//! in every column to a held row of the re-read window is the same row read
//! again. Batches the append does not touch are shared with the previous
//! version, so an append costs what it adds, not what the table holds.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, UInt32Array};
use datafusion::arrow::compute::{concat_batches, filter_record_batch, take};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::min_max::MaxAccumulator;
use datafusion::logical_expr::Accumulator;
use tracing::info;

use super::RefreshError;
use super::full::{self, Published};
use crate::accelerator::{
    ArrowAcceleration, Change, Checkpoint, FileVersion, RowRef, Store, TableData, TableDataBuilder,
};
use crate::config::{DatasetConfig, TimeFormat};
use crate::source::{Floor, ReadFilter, Source, SourceError, TimeBound, instant, instants};

/// The columns an append orders rows by, from the dataset's configuration.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `time_column`, or else `time_partition_column`, with its format.
    order: (String, Option<TimeFormat>),
    /// Whether `order` is the partition column, whose values are coarse:
    /// rows at the newest value are read again, not only newer ones.
    coarse: bool,
    /// `time_partition_column`, when `time_column` is set too.
    partition: Option<String>,
    overlap: Duration,
}

impl Plan {
    /// `None` unless the dataset has a time or partition column (which the
    /// configuration requires of `refresh_mode: append`).
    pub fn of(config: &DatasetConfig) -> Option<Plan> {
        let overlap = config
            .acceleration
            .refresh_append_overlap
            .unwrap_or_default();
        match (&config.time_column, &config.time_partition_column) {
            (Some(time), partition) => Some(Plan {
                order: (time.clone(), config.time_format),
                coarse: false,
                partition: partition.clone().filter(|p| p != time),
                overlap,
            }),
            (None, Some(partition)) => Some(Plan {
                order: (partition.clone(), config.time_partition_format),
                coarse: true,
                partition: None,
                overlap,
            }),
            (None, None) => None,
        }
    }
}

/// The newest instant of each batch of the version this loop published
/// last, so that the next append need not scan the acceleration for the
/// high-water mark or for the batches its re-read window reaches.
#[derive(Debug, Default)]
pub struct Watermark {
    version: Weak<TableData>,
    /// By batch number. A batch's figure only overstates it after rows were
    /// removed, and an append removes a row only for a newer version of it,
    /// so their maximum is the newest instant held.
    batches: Vec<Option<i64>>,
    /// For an acceleration queried in place: the version published last
    /// and the newest instant it holds (or more, after an eviction).
    file: Option<(Weak<FileVersion>, Option<i64>)>,
}

/// Appends to `held`. `Ok(None)` when the source's columns no longer match
/// the acceleration's: the caller reloads in full.
pub async fn run(
    source: &Source,
    acceleration: &Arc<ArrowAcceleration>,
    held: Arc<TableData>,
    plan: &Plan,
    base: ReadFilter,
    watermark: &mut Watermark,
) -> Result<Option<(Published, Arc<TableData>)>, RefreshError> {
    let dataset = acceleration.dataset();
    let (order_name, format) = (&plan.order.0, plan.order.1);
    let order = order_column(held.schema(), order_name, dataset)?;
    let build = |e: ArrowError| RefreshError::build(dataset, e);
    let refresh_sql = full::refresh_sql_text(&base);
    let batch_newest = match watermark.version.upgrade() {
        Some(version) if Arc::ptr_eq(&version, &held) => watermark.batches.clone(),
        _ => newest_by_batch(&held, 0, Vec::new(), order, format).map_err(build)?,
    };
    let newest = batch_newest.iter().copied().max().flatten();
    let (since, lower) = window(
        plan,
        held.schema().field(order).data_type(),
        newest,
        base.since,
    );
    let floor = match (&plan.partition, lower) {
        (Some(partition), Some(lower)) => held
            .schema()
            .index_of(partition)
            .ok()
            .map(|column| {
                let mut floor =
                    FloorScan::new(held.schema().field(column).data_type(), lower, format)?;
                for number in 0..held.batch_count() as u32 {
                    let batch = held.batch(number);
                    floor.update(batch.column(order), batch.column(column))?;
                }
                floor.finish(partition)
            })
            .transpose()
            .map_err(build)?
            .flatten(),
        _ => None,
    };
    let filter = ReadFilter {
        refresh_sql: base.refresh_sql,
        since,
        floor,
    };
    let Some(incoming) = read_incoming(source, acceleration, held.schema(), &filter).await? else {
        return Ok(None);
    };
    let read: usize = incoming.iter().map(RecordBatch::num_rows).sum();
    let merge = Merge {
        held: &held,
        order,
        format,
        lower,
        batch_newest: &batch_newest,
    };
    let (removed, added) = merge.apply(incoming).map_err(build)?;
    let replaced: usize = removed.values().map(BTreeSet::len).sum();
    let added_rows: usize = added.iter().map(RecordBatch::num_rows).sum();
    let change = Change::Upsert {
        removed: match acceleration.store() {
            Some(_) => removed_keys(&held, &removed).map_err(build)?,
            None => None,
        },
        added: added.clone(),
    };
    let data = held.revise(&removed, added).map_err(build)?;
    // Batches before the old last one are the old ones (maybe with rows
    // removed); the rest are new, or the old last one merged with new rows.
    let unchanged = held.batch_count().saturating_sub(1);
    let batch_newest =
        newest_by_batch(&data, unchanged, batch_newest, order, format).map_err(build)?;
    info!(
        dataset,
        read,
        added = added_rows,
        replaced,
        "append refresh merged the new rows"
    );
    let (published, version) =
        full::publish(acceleration, data, change, refresh_sql, full::now()).await?;
    *watermark = Watermark {
        version: Arc::downgrade(&version),
        batches: batch_newest,
        file: None,
    };
    Ok(Some((published, version)))
}

/// Appends to the version `held` of an acceleration queried in place from
/// its file. Only the rows the append may replace are read back: those
/// whose key a read row has (through the file's key index) or, without a
/// key, those equal to a read row; the merge then decides as [`run`] does,
/// and its change is written to the file in one transaction. `Ok(None)` as
/// for [`run`].
pub async fn run_in_file(
    source: &Source,
    acceleration: &Arc<ArrowAcceleration>,
    held: Arc<FileVersion>,
    plan: &Plan,
    base: ReadFilter,
    watermark: &mut Watermark,
) -> Result<Option<Published>, RefreshError> {
    let dataset = acceleration.dataset();
    let (order_name, format) = (&plan.order.0, plan.order.1);
    let schema = Arc::clone(&held.checkpoint.schema);
    let order = order_column(&schema, order_name, dataset)?;
    let build = |e: ArrowError| RefreshError::build(dataset, e);
    let refresh_sql = full::refresh_sql_text(&base);
    let newest = match &watermark.file {
        Some((version, newest)) if version.upgrade().is_some_and(|v| Arc::ptr_eq(&v, &held)) => {
            *newest
        }
        _ => {
            let found = scan_file(&held, vec![order], None, move |newest, batch| {
                *newest = (*newest).max(max_instant(batch.column(0), format)?);
                Ok(())
            });
            found.await.map_err(build)?
        }
    };
    let (since, lower) = window(plan, schema.field(order).data_type(), newest, base.since);
    let floor = match (&plan.partition, lower) {
        (Some(partition), Some(lower)) => match schema.index_of(partition) {
            Ok(column) => {
                let scan = FloorScan::new(schema.field(column).data_type(), lower, format)
                    .map_err(build)?;
                let scan = scan_file(&held, vec![order, column], scan, |scan, batch| {
                    scan.update(batch.column(0), batch.column(1))
                });
                scan.await
                    .map_err(build)?
                    .finish(partition)
                    .map_err(build)?
            }
            Err(_) => None,
        },
        _ => None,
    };
    let filter = ReadFilter {
        refresh_sql: base.refresh_sql,
        since,
        floor,
    };
    let Some(incoming) = read_incoming(source, acceleration, &schema, &filter).await? else {
        return Ok(None);
    };
    let read: usize = incoming.iter().map(RecordBatch::num_rows).sum();
    // The held rows the read rows may replace or repeat, as a version of
    // their own that the merge looks them up in.
    let key = &held.checkpoint.primary_key;
    let probe_columns: Vec<usize> = match key.is_empty() {
        true => (0..schema.fields().len()).collect(),
        false => key
            .iter()
            .map(|name| schema.index_of(name))
            .collect::<Result<_, _>>()
            .map_err(build)?,
    };
    let probe = incoming
        .iter()
        .map(|batch| batch.project(&probe_columns))
        .collect::<Result<Vec<_>, _>>()
        .map_err(build)?;
    let probe = match probe.first() {
        Some(first) => concat_batches(&first.schema(), &probe).map_err(build)?,
        None => RecordBatch::new_empty(Arc::new(schema.project(&probe_columns).map_err(build)?)),
    };
    let matched = {
        let (store, checkpoint) = (file_store(acceleration)?, held.checkpoint.clone());
        tokio::task::spawn_blocking(move || store.matching(&probe, &checkpoint))
            .await
            .map_err(|e| RefreshError::build(dataset, e))?
            .map_err(|e| RefreshError::build(dataset, e))?
    };
    let mut builder = TableDataBuilder::keyed(Arc::clone(&schema), key, 0).map_err(build)?;
    for batch in matched {
        builder.push(batch).map_err(build)?;
    }
    let matched = builder.finish(1).map_err(build)?;
    let batch_newest = newest_by_batch(&matched, 0, Vec::new(), order, format).map_err(build)?;
    let merge = Merge {
        held: &matched,
        order,
        format,
        lower,
        batch_newest: &batch_newest,
    };
    let (removed, added) = merge.apply(incoming).map_err(build)?;
    let replaced: usize = removed.values().map(BTreeSet::len).sum();
    let added_rows: usize = added.iter().map(RecordBatch::num_rows).sum();
    let mut newest = newest;
    for batch in &added {
        newest = newest.max(max_instant(batch.column(order), format).map_err(build)?);
    }
    let change = Change::Upsert {
        removed: removed_keys(&matched, &removed).map_err(build)?,
        added,
    };
    let checkpoint = Checkpoint {
        last_refresh: full::now(),
        schema,
        primary_key: key.clone(),
        refresh_sql,
        position: None,
    };
    let (published, ()) = full::commit_in_place(acceleration, move |store| {
        store.write(&change, &checkpoint)?;
        Ok((Some(checkpoint), ()))
    })
    .await?;
    let (published, version) = published.expect("a checkpoint is committed");
    info!(
        dataset,
        read,
        added = added_rows,
        replaced,
        "append refresh wrote the new rows to the acceleration file"
    );
    watermark.file = Some((Arc::downgrade(&version), newest));
    Ok(Some(published))
}

/// The index of the column `name` an append orders rows by.
fn order_column(schema: &SchemaRef, name: &str, dataset: &str) -> Result<usize, RefreshError> {
    schema.index_of(name).map_err(|_| {
        RefreshError::Source(SourceError::RefreshSql {
            dataset: dataset.to_owned(),
            message: format!(
                "append compares '{name}', which is not among the columns the acceleration holds"
            ),
        })
    })
}

/// Reads the rows `filter` selects, in the acceleration's columns
/// `schema`; `None` when the source's columns no longer match them.
async fn read_incoming(
    source: &Source,
    acceleration: &ArrowAcceleration,
    schema: &SchemaRef,
    filter: &ReadFilter,
) -> Result<Option<Vec<RecordBatch>>, RefreshError> {
    let dataset = acceleration.dataset();
    let snapshot = source.read_all(filter).await?;
    if let Some(change) = full::column_change(schema, &snapshot.schema) {
        // The full read that follows applies on_schema_change.
        info!(
            dataset,
            "the source's columns changed ({change}): reading in full"
        );
        return Ok(None);
    }
    let mut incoming = Vec::new();
    full::drain(snapshot.stream, dataset, acceleration.progress(), |batch| {
        incoming.push(batch);
        std::future::ready(Ok(()))
    })
    .await?;
    let Ok(incoming) = incoming
        .into_iter()
        .map(|batch| RecordBatch::try_new(Arc::clone(schema), batch.columns().to_vec()))
        .collect::<Result<Vec<_>, _>>()
    else {
        info!(
            dataset,
            "the source's rows no longer fit the acceleration's columns: reloading in full"
        );
        return Ok(None);
    };
    Ok(Some(incoming))
}

/// The file of an acceleration queried in place.
fn file_store(acceleration: &ArrowAcceleration) -> Result<Arc<Store>, RefreshError> {
    acceleration.store().cloned().ok_or_else(|| {
        RefreshError::build(acceleration.dataset(), "its acceleration file is not open")
    })
}

/// Folds the columns `projection` of every row of the file version
/// `version` into `state` with `fold`, on a blocking thread.
async fn scan_file<T: Send + 'static>(
    version: &FileVersion,
    projection: Vec<usize>,
    state: T,
    mut fold: impl FnMut(&mut T, &RecordBatch) -> Result<(), ArrowError> + Send + 'static,
) -> Result<T, ArrowError> {
    let reader = Arc::clone(&version.reader);
    tokio::task::spawn_blocking(move || {
        let mut state = state;
        reader
            .read(Some(&projection), None, None, &mut |batch| {
                fold(&mut state, &batch).map_err(|e| e.to_string())
            })
            .map_err(|e| ArrowError::ExternalError(e.into()))?;
        Ok(state)
    })
    .await
    .map_err(|e| ArrowError::ExternalError(Box::new(e)))?
}

/// The key columns of the `removed` rows of `held`, which a file
/// acceleration deletes by key (an append removes a held row only for a
/// read row with the same key); `None` when nothing is removed.
pub(super) fn removed_keys(
    held: &TableData,
    removed: &Removed,
) -> Result<Option<RecordBatch>, ArrowError> {
    let Some(index) = held.primary_key().filter(|_| !removed.is_empty()) else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    for (&number, rows) in removed {
        let rows = UInt32Array::from_iter_values(rows.iter().copied());
        let keys = held.batch(number).project(index.columns())?;
        let columns = keys
            .columns()
            .iter()
            .map(|column| take(column, &rows, None))
            .collect::<Result<Vec<_>, _>>()?;
        parts.push(RecordBatch::try_new(keys.schema(), columns)?);
    }
    let schema = parts[0].schema();
    concat_batches(&schema, &parts).map(Some)
}

/// The time bound of an append's read: the data window `since` or the
/// high-water mark `newest` less the overlap, whichever is later; and the
/// lowest instant the read can return (none: it reads everything), from
/// which held rows may be read again.
fn window(
    plan: &Plan,
    order_type: &datafusion::arrow::datatypes::DataType,
    newest: Option<i64>,
    since: Option<TimeBound>,
) -> (Option<TimeBound>, Option<i64>) {
    let (order_name, format) = (&plan.order.0, plan.order.1);
    let mark = newest.and_then(instant).map(|newest| TimeBound {
        column: order_name.clone(),
        format,
        after: newest - plan.overlap,
        inclusive: plan.coarse,
    });
    // Both bounds hold: the later one decides.
    let since = match (since, mark) {
        (Some(window), Some(mark)) if window.after > mark.after => Some(window),
        (window, None) => window,
        (_, mark) => mark,
    };
    let lower = since
        .as_ref()
        .map(|since| lowest_instant(since, order_type));
    (since, lower)
}

/// The lowest instant (as [`instants`] gives it) a row read with `since` can
/// have: a date bound reads from the start of its day.
fn lowest_instant(since: &TimeBound, column_type: &datafusion::arrow::datatypes::DataType) -> i64 {
    let day_granular = since.format == Some(TimeFormat::Date)
        || (since.format.is_none()
            && matches!(
                column_type,
                datafusion::arrow::datatypes::DataType::Date32
                    | datafusion::arrow::datatypes::DataType::Date64
            ));
    let after: DateTime<Utc> = since.after;
    if day_granular {
        after
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .expect("midnight exists")
            .and_utc()
            .timestamp_micros()
    } else {
        after.timestamp_micros()
    }
}

/// `time_partition_column >= P`, where P is the newest partition value
/// among held rows older than every row the read can return (`lower`),
/// gathered batch by batch. A row's partition is a coarser view of its
/// time, so every newer row lies in P's partition or a later one, whatever
/// the partitions' granularity. No floor when no held row is that old.
struct FloorScan {
    max: MaxAccumulator,
    any: bool,
    lower: i64,
    format: Option<TimeFormat>,
}

impl FloorScan {
    fn new(
        partition_type: &datafusion::arrow::datatypes::DataType,
        lower: i64,
        format: Option<TimeFormat>,
    ) -> Result<FloorScan, ArrowError> {
        Ok(FloorScan {
            max: MaxAccumulator::try_new(partition_type).map_err(to_arrow)?,
            any: false,
            lower,
            format,
        })
    }

    /// Takes in the rows of one batch: their times and partitions.
    fn update(&mut self, times: &ArrayRef, partitions: &ArrayRef) -> Result<(), ArrowError> {
        let older: BooleanArray = instants(times, self.format)?
            .iter()
            .map(|t| Some(t.is_some_and(|t| t < self.lower)))
            .collect();
        if older.true_count() > 0 {
            let values = datafusion::arrow::compute::filter(partitions, &older)?;
            self.max.update_batch(&[values]).map_err(to_arrow)?;
            self.any = true;
        }
        Ok(())
    }

    fn finish(mut self, partition: &str) -> Result<Option<Floor>, ArrowError> {
        let value = self.max.evaluate().map_err(to_arrow)?;
        Ok((self.any && !value.is_null()).then(|| Floor {
            column: partition.to_owned(),
            value,
        }))
    }
}

/// The newest instant of the `order` column in each batch of `data`: the
/// first `keep` figures are taken from `known`, the others computed.
fn newest_by_batch(
    data: &TableData,
    keep: usize,
    mut known: Vec<Option<i64>>,
    order: usize,
    format: Option<TimeFormat>,
) -> Result<Vec<Option<i64>>, ArrowError> {
    known.truncate(keep);
    for number in known.len()..data.batch_count() {
        known.push(max_instant(
            data.batch(number as u32).column(order),
            format,
        )?);
    }
    Ok(known)
}

fn max_instant(column: &ArrayRef, format: Option<TimeFormat>) -> Result<Option<i64>, ArrowError> {
    Ok(datafusion::arrow::compute::max(&instants(column, format)?))
}

fn to_arrow(error: datafusion::error::DataFusionError) -> ArrowError {
    ArrowError::ComputeError(error.to_string())
}

/// Decides which read rows are new and which held rows they replace.
struct Merge<'a> {
    held: &'a TableData,
    order: usize,
    format: Option<TimeFormat>,
    /// The lowest instant the read can return (none: it read everything).
    lower: Option<i64>,
    /// The newest instant of each held batch, or more.
    batch_newest: &'a [Option<i64>],
}

/// Held rows to drop, by batch number then row.
type Removed = BTreeMap<u32, BTreeSet<u32>>;

impl Merge<'_> {
    /// The held rows to remove and the read rows to add.
    fn apply(&self, incoming: Vec<RecordBatch>) -> Result<(Removed, Vec<RecordBatch>), ArrowError> {
        let keep = if self.held.primary_key().is_some() {
            self.upserts(&incoming)?
        } else {
            self.unseen(&incoming)?
        };
        let (removed, keep) = keep;
        let mut added = Vec::with_capacity(incoming.len());
        for (batch, keep) in incoming.iter().zip(keep) {
            let keep = BooleanArray::from(keep);
            if keep.true_count() > 0 {
                added.push(filter_record_batch(batch, &keep)?);
            }
        }
        Ok((removed, added))
    }

    /// With a primary key: the newest read row of each key, unless a held
    /// row with that key is newer or the same; the held rows it replaces.
    fn upserts(&self, incoming: &[RecordBatch]) -> Result<(Removed, Vec<Vec<bool>>), ArrowError> {
        let index = self.held.primary_key().expect("called with a primary key");
        let key_columns = index.columns().to_vec();
        let converter = RowConverter::new(
            key_columns
                .iter()
                .map(|c| SortField::new(self.held.schema().field(*c).data_type().clone()))
                .collect(),
        )?;
        let mut keep: Vec<Vec<bool>> = incoming.iter().map(|b| vec![true; b.num_rows()]).collect();
        let times: Vec<Int64Array> = incoming
            .iter()
            .map(|batch| instants(batch.column(self.order), self.format))
            .collect::<Result<_, _>>()?;
        let time = |batch: usize, row: usize| {
            let times = &times[batch];
            times.is_valid(row).then(|| times.value(row))
        };
        // Among the read rows, the newest of each key wins (the later one on
        // a tie); rows with a NULL key match nothing and are all kept.
        let mut newest: HashMap<Vec<u8>, (usize, usize)> = HashMap::new();
        for (b, batch) in incoming.iter().enumerate() {
            let keys: Vec<ArrayRef> = key_columns
                .iter()
                .map(|c| Arc::clone(batch.column(*c)))
                .collect();
            let rows = converter.convert_columns(&keys)?;
            for row in 0..batch.num_rows() {
                if keys.iter().any(|key| key.is_null(row)) {
                    continue;
                }
                match newest.entry(rows.row(row).as_ref().to_vec()) {
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert((b, row));
                    }
                    std::collections::hash_map::Entry::Occupied(mut slot) => {
                        let (ob, orow) = *slot.get();
                        if time(b, row) >= time(ob, orow) {
                            keep[ob][orow] = false;
                            slot.insert((b, row));
                        } else {
                            keep[b][row] = false;
                        }
                    }
                }
            }
        }
        let mut held_times: HashMap<u32, Int64Array> = HashMap::new();
        let mut removed = Removed::new();
        for (b, batch) in incoming.iter().enumerate() {
            let matches = index.matches(batch, |number| self.held.batch(number))?;
            for (row, held_rows) in matches.iter().enumerate() {
                if !keep[b][row] || held_rows.is_empty() {
                    continue;
                }
                let mut held_newest = None;
                for at in held_rows {
                    let times = match held_times.get(&at.batch) {
                        Some(times) => times,
                        None => {
                            let column = self.held.batch(at.batch).column(self.order);
                            held_times
                                .entry(at.batch)
                                .or_insert(instants(column, self.format)?)
                        }
                    };
                    let t = times
                        .is_valid(at.row as usize)
                        .then(|| times.value(at.row as usize));
                    held_newest = held_newest.max(Some(t));
                }
                let held_newest = held_newest.flatten();
                if held_newest > time(b, row)
                    || (held_rows.len() == 1 && self.same_row(held_rows[0], batch, row)?)
                {
                    keep[b][row] = false;
                    continue;
                }
                for at in held_rows {
                    removed.entry(at.batch).or_default().insert(at.row);
                }
            }
        }
        Ok((removed, keep))
    }

    /// Whether the held row `at` equals row `row` of `batch` in every column.
    fn same_row(&self, at: RowRef, batch: &RecordBatch, row: usize) -> Result<bool, ArrowError> {
        let held = self.held.batch(at.batch);
        for column in 0..batch.num_columns() {
            let a = ScalarValue::try_from_array(held.column(column), at.row as usize)
                .map_err(to_arrow)?;
            let b = ScalarValue::try_from_array(batch.column(column), row).map_err(to_arrow)?;
            if a != b {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Without a primary key: the read rows not already held. A held row of
    /// the re-read window (at or after the read's lowest instant) that
    /// equals a read row in every column is that row read again; each held
    /// copy accounts for one read copy.
    fn unseen(&self, incoming: &[RecordBatch]) -> Result<(Removed, Vec<Vec<bool>>), ArrowError> {
        let mut keep: Vec<Vec<bool>> = incoming.iter().map(|b| vec![true; b.num_rows()]).collect();
        if incoming.iter().all(|b| b.num_rows() == 0) {
            return Ok((Removed::new(), keep));
        }
        let converter = RowConverter::new(
            self.held
                .schema()
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?;
        let mut held: HashMap<Vec<u8>, usize> = HashMap::new();
        for number in 0..self.held.batch_count() as u32 {
            let batch = self.held.batch(number);
            let window = match self.lower {
                None => batch.clone(),
                // A batch all older than the window has no row in it.
                Some(lower)
                    if self
                        .batch_newest
                        .get(number as usize)
                        .is_some_and(|newest| newest.is_none_or(|newest| newest < lower)) =>
                {
                    continue;
                }
                Some(lower) => {
                    let times = instants(batch.column(self.order), self.format)?;
                    let inside: BooleanArray = times
                        .iter()
                        .map(|t| Some(t.is_some_and(|t| t >= lower)))
                        .collect();
                    if inside.true_count() == 0 {
                        continue;
                    }
                    filter_record_batch(batch, &inside)?
                }
            };
            let rows = converter.convert_columns(window.columns())?;
            for row in rows.iter() {
                *held.entry(row.as_ref().to_vec()).or_default() += 1;
            }
        }
        for (b, batch) in incoming.iter().enumerate() {
            let rows = converter.convert_columns(batch.columns())?;
            for (row, encoded) in rows.iter().enumerate() {
                if let Some(count) = held.get_mut(encoded.as_ref())
                    && *count > 0
                {
                    *count -= 1;
                    keep[b][row] = false;
                }
            }
        }
        Ok((Removed::new(), keep))
    }
}
