//! The Arrow engine (`engine: arrow`, `mode: memory`): record batches in
//! memory, published through `arc-swap`.
//!
//! Readers call [`ArrowAcceleration::current`] and keep the `Arc` for the
//! whole query, so a refresh that publishes meanwhile cannot change what they
//! read; the old version is freed when its last reader finishes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::ArcSwapOption;
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray};
use datafusion::arrow::compute::{
    BatchCoalescer, SortColumn, SortOptions, concat, concat_batches, filter_record_batch,
    interleave, lexsort_to_indices,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::ScalarValue;

use super::index::{PrimaryKeyIndex, RowRef};
use super::ranges::{ColumnRanges, Ranges};
use super::statistics::{self, TableStatistics};
use super::store::Store;

/// Rows per stored batch. Small source batches are coalesced up to this size
/// so scans do not pay per-batch overhead, and so buffers are allocated to
/// their final size (the source's builders over-allocate).
const STORED_BATCH_ROWS: usize = 8192;

/// One immutable version of a dataset's data.
#[derive(Debug)]
pub struct TableData {
    schema: SchemaRef,
    /// Batches split into partitions so a scan runs on every query thread.
    partitions: Vec<Vec<RecordBatch>>,
    rows: usize,
    bytes: usize,
    /// Built from exactly these batches before publication; `None` when the
    /// dataset has no primary key.
    primary_key: Option<PrimaryKeyIndex>,
    /// Column statistics for the optimizer, computed after publication.
    statistics: OnceLock<Arc<TableStatistics>>,
    /// Each batch's range of values per column, computed when a filter
    /// first needs them.
    ranges: Ranges,
}

impl TableData {
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    pub fn partitions(&self) -> &[Vec<RecordBatch>] {
        &self.partitions
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Arrow memory held by this version.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Memory of the primary-key index, apart from [`Self::bytes`].
    pub fn index_bytes(&self) -> usize {
        self.primary_key.as_ref().map_or(0, PrimaryKeyIndex::bytes)
    }

    pub fn primary_key(&self) -> Option<&PrimaryKeyIndex> {
        self.primary_key.as_ref()
    }

    /// Each column's statistics, once computed (see [`statistics`]).
    pub fn column_statistics(&self) -> Option<Arc<TableStatistics>> {
        self.statistics.get().cloned()
    }

    /// Each batch's range of values in column `column` (by position in the
    /// schema), in load order; `None` for a type whose ranges are not kept.
    pub fn column_ranges(&self, column: usize) -> Option<Arc<ColumnRanges>> {
        let data_type = self.schema.fields().get(column)?.data_type();
        let batches = (0..self.batch_count() as u32).map(|number| self.batch(number));
        self.ranges.column(column, data_type, batches)
    }

    /// Whether this version still needs its column statistics.
    fn lacks_statistics(&self) -> bool {
        self.statistics.get().is_none() && self.rows > 0
    }

    /// The rows whose primary key equals `key`; `None` without a key index.
    pub fn lookup(&self, key: &[ScalarValue]) -> Result<Option<Vec<RowRef>>, ArrowError> {
        let Some(index) = &self.primary_key else {
            return Ok(None);
        };
        index.lookup(key, |number| self.batch(number)).map(Some)
    }

    /// The rows at `refs`, as one batch (a zero-copy slice for one row).
    pub fn rows_at(&self, refs: &[RowRef]) -> Result<RecordBatch, ArrowError> {
        let slices: Vec<RecordBatch> = refs
            .iter()
            .map(|r| self.batch(r.batch).slice(r.row as usize, 1))
            .collect();
        match slices.as_slice() {
            [one] => Ok(one.clone()),
            _ => concat_batches(&self.schema, &slices),
        }
    }

    /// The names of the primary-key columns this version is indexed by.
    pub fn key_names(&self) -> Vec<String> {
        self.primary_key.as_ref().map_or_else(Vec::new, |index| {
            index
                .columns()
                .iter()
                .map(|c| self.schema.field(*c).name().clone())
                .collect()
        })
    }

    /// Every batch, in load order.
    pub fn batches(&self) -> Vec<RecordBatch> {
        (0..self.batch_count() as u32)
            .map(|number| self.batch(number).clone())
            .collect()
    }

    /// How many batches this version holds.
    pub fn batch_count(&self) -> usize {
        self.partitions.iter().map(Vec::len).sum()
    }

    /// A new version: this one without the rows `removed` lists (by batch
    /// number, then row) and with `added` after them. Batches no row was
    /// removed from are shared with this version, not copied, and the
    /// primary-key index is updated for the rows that changed only; the cost
    /// follows the rows changed, not the size of the table.
    pub fn revise(
        &self,
        removed: &BTreeMap<u32, BTreeSet<u32>>,
        added: Vec<RecordBatch>,
    ) -> Result<TableData, ArrowError> {
        let mut batches: Vec<RecordBatch> = (0..self.batch_count() as u32)
            .map(|number| self.batch(number).clone())
            .collect();
        let mut index = self.primary_key.clone();
        for (&number, rows) in removed {
            let old = &batches[number as usize];
            let keep: BooleanArray = (0..old.num_rows() as u32)
                .map(|row| Some(!rows.contains(&row)))
                .collect();
            let kept = filter_record_batch(old, &keep)?;
            if let Some(index) = &mut index {
                index.remove_batch(number, old)?;
                index.insert_batch(number, &kept)?;
            }
            batches[number as usize] = kept;
        }
        let mut builder = TableDataBuilder::new(Arc::clone(&self.schema));
        // A small last batch is merged with the new rows, so that frequent
        // small appends do not leave a trail of tiny batches for every scan.
        if !added.is_empty()
            && let Some(last) = batches.pop_if(|last| last.num_rows() < STORED_BATCH_ROWS / 2)
        {
            if let Some(index) = &mut index {
                index.remove_batch(batches.len() as u32, &last)?;
            }
            builder.push(last)?;
        }
        for batch in added {
            builder.push(batch)?;
        }
        builder.coalescer.finish_buffered_batch()?;
        builder.drain_completed()?;
        for batch in builder.batches {
            if let Some(index) = &mut index {
                index.insert_batch(batches.len() as u32, &batch)?;
            }
            batches.push(batch);
        }
        if let Some(index) = &mut index {
            index.fold_if_due();
        }
        let revised = TableData::spread(
            Arc::clone(&self.schema),
            batches,
            self.partitions.len(),
            index,
        );
        // A stream of small revisions keeps the statistics of the version
        // they were computed on (as estimates) until the rows have drifted
        // by a tenth; only then are they computed again.
        if let Some(computed) = self.statistics.get()
            && revised.rows.abs_diff(computed.rows) <= computed.rows / 10
        {
            let _ = revised.statistics.set(Arc::new(computed.estimated()));
        }
        Ok(revised)
    }

    /// This version's rows indexed by `primary_key` (column names), as a new
    /// version that shares the batches; `None` for an empty key. Lets rows
    /// read back from a file be served before their index is built.
    pub fn indexed(&self, primary_key: &[String]) -> Result<Option<TableData>, ArrowError> {
        let Some(mut index) = key_index(&self.schema, primary_key, self.rows)? else {
            return Ok(None);
        };
        for number in 0..self.batch_count() as u32 {
            index.insert_batch(number, self.batch(number))?;
        }
        index.fold_if_due();
        Ok(Some(TableData {
            schema: Arc::clone(&self.schema),
            partitions: self.partitions.clone(),
            rows: self.rows,
            bytes: self.bytes,
            primary_key: Some(index),
            statistics: self.statistics.clone(),
            ranges: self.ranges.clone(),
        }))
    }

    /// Deals `batches` (in load order) round-robin over `partitions`.
    fn spread(
        schema: SchemaRef,
        batches: Vec<RecordBatch>,
        partitions: usize,
        primary_key: Option<PrimaryKeyIndex>,
    ) -> TableData {
        let partition_count = partitions.max(1);
        let mut spread = vec![Vec::new(); partition_count];
        let mut rows = 0;
        let mut bytes = 0;
        for (number, batch) in batches.into_iter().enumerate() {
            rows += batch.num_rows();
            bytes += batch.get_array_memory_size();
            spread[number % partition_count].push(batch);
        }
        TableData {
            ranges: Ranges::new(schema.fields().len()),
            schema,
            partitions: spread,
            rows,
            bytes,
            primary_key,
            statistics: OnceLock::new(),
        }
    }

    /// The `number`-th batch in load order (batches are dealt round-robin
    /// over the partitions).
    pub fn batch(&self, number: u32) -> &RecordBatch {
        let partitions = self.partitions.len();
        let number = number as usize;
        &self.partitions[number % partitions][number / partitions]
    }
}

/// Accumulates a refresh's batches into the next [`TableData`], indexing
/// each stored batch as it completes (so that building overlaps reading
/// when the batches arrive from another thread).
pub struct TableDataBuilder {
    coalescer: BatchCoalescer,
    batches: Vec<RecordBatch>,
    index: Option<PrimaryKeyIndex>,
    /// Columns (positions) `finish` sorts the rows by; the index is then
    /// built after the sort instead of as batches complete.
    sort_by: Vec<usize>,
}

impl TableDataBuilder {
    /// A builder of a version with no primary-key index.
    pub fn new(schema: SchemaRef) -> Self {
        TableDataBuilder {
            // Batches already near the target size are kept as they are:
            // copying them would cost refresh time and save little.
            coalescer: BatchCoalescer::new(schema, STORED_BATCH_ROWS)
                .with_biggest_coalesce_batch_size(Some(STORED_BATCH_ROWS / 2)),
            batches: Vec::new(),
            index: None,
            sort_by: Vec::new(),
        }
    }

    /// This builder, sorting the finished version's rows by `columns`
    /// (names; ascending, NULLs last; none: rows stay in the order pushed).
    pub fn sorted_by(mut self, columns: &[String]) -> Result<Self, ArrowError> {
        let schema = self.coalescer.schema();
        self.sort_by = columns
            .iter()
            .map(|name| {
                schema.index_of(name).map_err(|_| {
                    ArrowError::SchemaError(format!(
                        "sort_by column `{name}` is not a column of the table"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(self)
    }

    /// A builder of a version indexed by `primary_key` (column names; empty
    /// for none); `rows` is the expected row count (0 when unknown).
    pub fn keyed(
        schema: SchemaRef,
        primary_key: &[String],
        rows: usize,
    ) -> Result<Self, ArrowError> {
        let index = key_index(&schema, primary_key, rows)?;
        Ok(TableDataBuilder {
            index,
            ..TableDataBuilder::new(schema)
        })
    }

    pub fn push(&mut self, batch: RecordBatch) -> Result<(), ArrowError> {
        self.coalescer.push_batch(batch)?;
        self.drain_completed()
    }

    fn drain_completed(&mut self) -> Result<(), ArrowError> {
        while let Some(batch) = self.coalescer.next_completed_batch() {
            if let Some(index) = self.index.as_mut().filter(|_| self.sort_by.is_empty()) {
                index.insert_batch(self.batches.len() as u32, &batch)?;
            }
            self.batches.push(batch);
        }
        Ok(())
    }

    /// Finishes the version, spreading batches round-robin over
    /// `partitions` partitions.
    pub fn finish(mut self, partitions: usize) -> Result<TableData, ArrowError> {
        self.coalescer.finish_buffered_batch()?;
        self.drain_completed()?;
        let schema = self.coalescer.schema();
        if !self.sort_by.is_empty() {
            self.batches = sorted(&schema, std::mem::take(&mut self.batches), &self.sort_by)?;
            if let Some(index) = &mut self.index {
                for (number, batch) in self.batches.iter().enumerate() {
                    index.insert_batch(number as u32, batch)?;
                }
            }
        }
        if let Some(index) = &mut self.index {
            index.fold_if_due();
        }
        Ok(TableData::spread(
            schema,
            self.batches,
            partitions,
            self.index,
        ))
    }
}

/// The rows of `batches` sorted by `columns` (positions; ascending, NULLs
/// last, ties in no set order), as batches of [`STORED_BATCH_ROWS`].
///
/// Built column by column: each column's sorted copy is made and its
/// unsorted batches freed before the next, so the sort holds one column
/// twice (and the row order, 12 bytes a row at most), never the whole table.
fn sorted(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
    columns: &[usize],
) -> Result<Vec<RecordBatch>, ArrowError> {
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if rows == 0 || schema.fields().is_empty() {
        return Ok(batches);
    }
    let cannot = |why: String| {
        let names: Vec<String> = columns
            .iter()
            .map(|c| format!("`{}`", schema.field(*c).name()))
            .collect();
        ArrowError::ComputeError(format!(
            "cannot sort the rows by {} (sort_by): {why}",
            names.join(", ")
        ))
    };
    // Row positions are 32-bit, as in the primary-key index.
    if u32::try_from(rows).is_err() {
        return Err(cannot(format!("{rows} rows are more than {}", u32::MAX)));
    }
    let keys = columns
        .iter()
        .map(|&column| {
            let parts: Vec<&dyn Array> =
                batches.iter().map(|b| b.column(column).as_ref()).collect();
            Ok(SortColumn {
                values: concat(&parts).map_err(|e| cannot(e.to_string()))?,
                options: Some(SortOptions {
                    descending: false,
                    nulls_first: false,
                }),
            })
        })
        .collect::<Result<Vec<_>, ArrowError>>()?;
    let order = lexsort_to_indices(&keys, None).map_err(|e| cannot(e.to_string()))?;
    drop(keys);
    // Each sorted row's batch and row in `batches`.
    let mut starts = Vec::with_capacity(batches.len());
    let mut start = 0u32;
    for batch in &batches {
        starts.push(start);
        start += batch.num_rows() as u32;
    }
    let from: Vec<(u32, u32)> = order
        .values()
        .iter()
        .map(|&row| {
            let batch = starts.partition_point(|&start| start <= row) - 1;
            (batch as u32, row - starts[batch])
        })
        .collect();
    drop(order);
    let mut inputs: Vec<Vec<ArrayRef>> = (0..schema.fields().len())
        .map(|column| {
            batches
                .iter()
                .map(|b| Arc::clone(b.column(column)))
                .collect()
        })
        .collect();
    drop(batches);
    let mut outputs: Vec<Vec<ArrayRef>> =
        vec![Vec::with_capacity(inputs.len()); rows.div_ceil(STORED_BATCH_ROWS)];
    let mut pairs = Vec::with_capacity(STORED_BATCH_ROWS);
    for input in &mut inputs {
        // Taken, so that this column's unsorted arrays are freed below.
        let column = std::mem::take(input);
        let parts: Vec<&dyn Array> = column.iter().map(AsRef::as_ref).collect();
        for (chunk, output) in from.chunks(STORED_BATCH_ROWS).zip(&mut outputs) {
            pairs.clear();
            pairs.extend(chunk.iter().map(|&(b, r)| (b as usize, r as usize)));
            output.push(interleave(&parts, &pairs)?);
        }
    }
    outputs
        .into_iter()
        .map(|columns| RecordBatch::try_new(Arc::clone(schema), columns))
        .collect()
}

fn key_index(
    schema: &SchemaRef,
    primary_key: &[String],
    rows: usize,
) -> Result<Option<PrimaryKeyIndex>, ArrowError> {
    if primary_key.is_empty() {
        return Ok(None);
    }
    let columns = primary_key
        .iter()
        .map(|name| {
            schema.index_of(name).map_err(|_| {
                ArrowError::SchemaError(format!(
                    "primary key column `{name}` is not a column of the table"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    PrimaryKeyIndex::new(schema, columns, rows).map(Some)
}

/// The in-memory acceleration of one dataset.
#[derive(Debug)]
pub struct ArrowAcceleration {
    dataset: String,
    current: Arc<ArcSwapOption<TableData>>,
    /// Set while a thread computes column statistics for the published
    /// version (one at a time per dataset).
    computing_statistics: Arc<AtomicBool>,
    /// The file that keeps every published version (file engines only),
    /// attached when the refresh loop opens it.
    store: OnceLock<Arc<Store>>,
    /// Held from the start of a version's commit to the file until it is
    /// published (see `refresh::full::publish`).
    commit: Arc<tokio::sync::Mutex<()>>,
    /// The refresh's read of its source in flight.
    progress: super::ReadProgress,
    /// The version queries read in place from the file (file engines whose
    /// refresh mode never revises rows in memory).
    in_file: ArcSwapOption<super::FileVersion>,
    /// Columns a full refresh sorts the rows by (`acceleration.sort_by`).
    sort_by: Vec<String>,
}

impl ArrowAcceleration {
    pub fn new(dataset: String) -> Self {
        ArrowAcceleration {
            dataset,
            current: Arc::new(ArcSwapOption::empty()),
            computing_statistics: Arc::new(AtomicBool::new(false)),
            store: OnceLock::new(),
            commit: Arc::new(tokio::sync::Mutex::new(())),
            progress: super::ReadProgress::default(),
            in_file: ArcSwapOption::empty(),
            sort_by: Vec::new(),
        }
    }

    /// This acceleration, with every full refresh sorting its rows by
    /// `columns` (none: rows stay in the order read).
    pub fn sorted_by(self, columns: Vec<String>) -> Self {
        ArrowAcceleration {
            sort_by: columns,
            ..self
        }
    }

    /// The columns a full refresh sorts the rows by.
    pub fn sort_by(&self) -> &[String] {
        &self.sort_by
    }

    /// The version read in place from the file, once one is committed.
    pub fn file_version(&self) -> Option<Arc<super::FileVersion>> {
        self.in_file.load_full()
    }

    /// Publishes a version committed to the file, read in place.
    pub fn publish_file(&self, version: super::FileVersion) -> Arc<super::FileVersion> {
        let version = Arc::new(version);
        self.in_file.store(Some(Arc::clone(&version)));
        version
    }

    /// Whether a version is served, from memory or in place from the file.
    pub fn serving(&self) -> bool {
        self.current.load().is_some() || self.in_file.load().is_some()
    }

    /// The columns of the version served, if any.
    pub fn served_schema(&self) -> Option<SchemaRef> {
        match self.current() {
            Some(data) => Some(Arc::clone(data.schema())),
            None => self
                .file_version()
                .map(|version| Arc::clone(&version.checkpoint.schema)),
        }
    }

    /// The rows of the version served, if any.
    pub fn served_rows(&self) -> Option<usize> {
        match self.current() {
            Some(data) => Some(data.rows()),
            None => self.file_version().map(|version| version.reader.rows()),
        }
    }

    /// Whether the served in-memory version's column statistics are still
    /// being computed (`Some(true)`) or are ready (`Some(false)`); `None`
    /// without such a version or with statistics turned off. Queries
    /// planned meanwhile are planned without them, and the computing thread
    /// competes with queries for the cores.
    pub fn statistics_pending(&self) -> Option<bool> {
        if !statistics::enabled() {
            return None;
        }
        self.current().map(|data| data.lacks_statistics())
    }

    /// How far the read of the refresh in flight has come.
    pub fn progress(&self) -> &super::ReadProgress {
        &self.progress
    }

    /// Makes `store` the durable copy of every version published from now.
    pub fn attach_store(&self, store: Arc<Store>) {
        let _ = self.store.set(store);
    }

    /// The acceleration file, for file engines once opened.
    pub fn store(&self) -> Option<&Arc<Store>> {
        self.store.get()
    }

    pub fn dataset(&self) -> &str {
        &self.dataset
    }

    /// The published version, or `None` before the first load completes.
    pub fn current(&self) -> Option<Arc<TableData>> {
        self.current.load_full()
    }

    /// Publishes `indexed` (the rows of `served` with their primary-key
    /// index) if `served` is still the published version; `false` when a
    /// newer version replaced it meanwhile.
    pub fn publish_index(&self, served: &Arc<TableData>, indexed: TableData) -> bool {
        let expected = Some(Arc::clone(served));
        // The same rows: their statistics carry over.
        if let Some(computed) = served.statistics.get() {
            let _ = indexed.statistics.set(Arc::clone(computed));
        }
        let indexed = Arc::new(indexed);
        let previous = self
            .current
            .compare_and_swap(&expected, Some(Arc::clone(&indexed)));
        self.compute_statistics();
        previous
            .as_ref()
            .is_some_and(|previous| Arc::ptr_eq(previous, served))
    }

    /// The commit lock: held while a version is committed and published.
    pub async fn commit_lock(&self) -> tokio::sync::OwnedMutexGuard<()> {
        Arc::clone(&self.commit).lock_owned().await
    }

    /// Whether a version is being committed and published now.
    pub fn committing(&self) -> bool {
        self.commit.try_lock().is_err()
    }

    /// Returns once no commit is in flight: a refresh whose predecessor was
    /// cancelled during its commit sees what that commit published.
    pub async fn settled(&self) {
        drop(self.commit.lock().await);
    }

    /// Computes the column statistics of the published version on a
    /// low-priority thread, and then of any version published meanwhile,
    /// unless a thread is at it already.
    fn compute_statistics(&self) {
        let pending = |current: &ArcSwapOption<TableData>| {
            current.load_full().filter(|data| data.lacks_statistics())
        };
        if !statistics::enabled()
            || pending(&self.current).is_none()
            || self.computing_statistics.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let current = Arc::clone(&self.current);
        let computing = Arc::clone(&self.computing_statistics);
        let dataset = self.dataset.clone();
        let spawned = std::thread::Builder::new()
            .name("table-statistics".to_owned())
            .spawn(move || {
                let _ = crate::threads::set_current_nice(crate::threads::REFRESH_NICE);
                loop {
                    while let Some(data) = pending(&current) {
                        let started = std::time::Instant::now();
                        let computed = TableStatistics {
                            columns: statistics::compute(&data.schema, &data.batches()),
                            rows: data.rows,
                        };
                        let _ = data.statistics.set(Arc::new(computed));
                        tracing::debug!(dataset = %dataset, rows = data.rows, took_ms = started.elapsed().as_millis() as u64, "column statistics computed");
                    }
                    computing.store(false, Ordering::Release);
                    // A version published after the last look, whose
                    // publisher saw this thread still at work.
                    if pending(&current).is_none() || computing.swap(true, Ordering::AcqRel) {
                        break;
                    }
                }
            });
        if let Err(e) = spawned {
            self.computing_statistics.store(false, Ordering::Release);
            tracing::warn!(dataset = %self.dataset, error = %e, "cannot start a thread for column statistics; queries are planned without them");
        }
    }

    /// Publishes a complete new version; readers holding the old one keep it.
    pub fn publish(&self, data: TableData) -> Arc<TableData> {
        let data = Arc::new(data);
        self.current.store(Some(Arc::clone(&data)));
        self.compute_statistics();
        data
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    fn batch(schema: &SchemaRef, values: Vec<i64>) -> RecordBatch {
        let column: ArrayRef = Arc::new(Int64Array::from(values));
        RecordBatch::try_new(Arc::clone(schema), vec![column]).unwrap()
    }

    #[test]
    fn builder_coalesces_and_spreads_batches() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let mut builder = TableDataBuilder::new(Arc::clone(&schema));
        for chunk in 0..10 {
            builder
                .push(batch(
                    &schema,
                    (0..3000).map(|i| chunk * 3000 + i).collect(),
                ))
                .unwrap();
        }
        let data = builder.finish(2).unwrap();
        assert_eq!(data.rows(), 30_000);
        assert_eq!(data.partitions().len(), 2);
        let stored: Vec<usize> = data
            .partitions()
            .iter()
            .flatten()
            .map(RecordBatch::num_rows)
            .collect();
        assert_eq!(stored.iter().sum::<usize>(), 30_000);
        assert!(stored.iter().all(|rows| *rows <= STORED_BATCH_ROWS));
        assert!(data.bytes() >= 30_000 * 8);
    }

    #[test]
    fn a_sorted_version_orders_its_rows_and_indexes_them_where_they_land() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("day", DataType::Int64, true),
            Field::new("note", DataType::Utf8, true),
        ]));
        let day = |id: i64| (id % 50 != 0).then_some((id * 7919) % 1000);
        let mut builder = TableDataBuilder::keyed(Arc::clone(&schema), &["id".to_owned()], 0)
            .unwrap()
            .sorted_by(&["day".to_owned()])
            .unwrap();
        for chunk in 0..3i64 {
            let ids: Vec<i64> = (0..7000).map(|i| chunk * 7000 + i).collect();
            let columns: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(ids.clone())),
                Arc::new(Int64Array::from(
                    ids.iter().map(|&id| day(id)).collect::<Vec<_>>(),
                )),
                Arc::new(datafusion::arrow::array::StringArray::from(
                    ids.iter().map(|id| format!("row {id}")).collect::<Vec<_>>(),
                )),
            ];
            builder
                .push(RecordBatch::try_new(Arc::clone(&schema), columns).unwrap())
                .unwrap();
        }
        let data = builder.finish(2).unwrap();
        assert_eq!(data.rows(), 21_000);
        let batches = data.batches();
        assert!(
            batches[..batches.len() - 1]
                .iter()
                .all(|b| b.num_rows() == STORED_BATCH_ROWS)
        );
        let column = |b: &RecordBatch, c: usize| {
            b.column(c)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .clone()
        };
        let stored: Vec<(Option<i64>, i64)> = batches
            .iter()
            .flat_map(|b| {
                column(b, 1)
                    .iter()
                    .zip(column(b, 0).values().to_vec())
                    .collect::<Vec<_>>()
            })
            .collect();
        // By day, NULLs last; every row once.
        let days: Vec<(bool, Option<i64>)> = stored
            .iter()
            .map(|&(day, _)| (day.is_none(), day))
            .collect();
        assert!(days.is_sorted(), "rows are not in day order");
        let mut rows = stored.clone();
        rows.sort_by_key(|&(day, id)| (day.is_none(), day, id));
        let mut expected: Vec<(Option<i64>, i64)> = (0..21_000).map(|id| (day(id), id)).collect();
        expected.sort_by_key(|&(day, id)| (day.is_none(), day, id));
        assert_eq!(rows, expected);
        for id in [0i64, 49, 50, 12_345, 20_999] {
            let found = data
                .lookup(&[ScalarValue::Int64(Some(id))])
                .unwrap()
                .unwrap();
            assert_eq!(found.len(), 1, "id {id}");
            let row = data.rows_at(&found).unwrap();
            assert_eq!(column(&row, 0).value(0), id);
            let note = row
                .column(2)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::StringArray>()
                .unwrap();
            assert_eq!(note.value(0), format!("row {id}"));
        }
        let error = TableDataBuilder::new(schema)
            .sorted_by(&["hour".to_owned()])
            .err()
            .expect("an unknown column is refused");
        assert!(
            error
                .to_string()
                .contains("sort_by column `hour` is not a column of the table"),
            "{error}"
        );
    }

    #[test]
    fn readers_keep_the_version_they_loaded() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let acceleration = ArrowAcceleration::new("t".into());
        assert!(acceleration.current().is_none());
        let mut first = TableDataBuilder::new(Arc::clone(&schema));
        first.push(batch(&schema, vec![1])).unwrap();
        acceleration.publish(first.finish(1).unwrap());
        let held = acceleration.current().unwrap();
        let mut second =
            TableDataBuilder::keyed(Arc::clone(&schema), &["id".to_owned()], 0).unwrap();
        second.push(batch(&schema, vec![1, 2])).unwrap();
        acceleration.publish(second.finish(1).unwrap());
        assert_eq!(held.rows(), 1);
        assert!(held.primary_key().is_none());
        let current = acceleration.current().unwrap();
        assert_eq!(current.rows(), 2);
        let found = current
            .lookup(&[ScalarValue::Int64(Some(2))])
            .unwrap()
            .unwrap();
        assert_eq!(current.rows_at(&found).unwrap().num_rows(), 1);
    }

    #[test]
    fn revise_removes_and_adds_rows_and_keeps_the_index_current() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let key = ["id".to_owned()];
        let mut builder = TableDataBuilder::keyed(Arc::clone(&schema), &key, 0).unwrap();
        builder
            .push(batch(&schema, (0..STORED_BATCH_ROWS as i64).collect()))
            .unwrap();
        builder.push(batch(&schema, vec![-1, -2])).unwrap();
        let data = builder.finish(2).unwrap();
        assert_eq!(data.batch_count(), 2);
        let find = |data: &TableData, id: i64| {
            let rows = data
                .lookup(&[ScalarValue::Int64(Some(id))])
                .unwrap()
                .unwrap();
            let found = data.rows_at(&rows).unwrap();
            assert!(found.num_rows() <= 1);
            (found.num_rows() == 1).then(|| {
                found
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap()
                    .value(0)
            })
        };
        // Rows 5 and -2 go; 7 is added, joining the small last batch.
        let removed = BTreeMap::from([(0, BTreeSet::from([5])), (1, BTreeSet::from([1]))]);
        let next = data
            .revise(&removed, vec![batch(&schema, vec![7_000_000])])
            .unwrap();
        assert_eq!(next.rows(), STORED_BATCH_ROWS + 1);
        assert_eq!(next.batch_count(), 2);
        assert_eq!(find(&next, 5), None);
        assert_eq!(find(&next, -2), None);
        assert_eq!(find(&next, -1), Some(-1));
        assert_eq!(find(&next, 6), Some(6));
        assert_eq!(find(&next, 7_000_000), Some(7_000_000));
        // The version it came from is untouched.
        assert_eq!(data.rows(), STORED_BATCH_ROWS + 2);
        assert_eq!(find(&data, 5), Some(5));
        assert_eq!(find(&data, 7_000_000), None);
    }

    #[test]
    fn many_revisions_fold_the_index_and_keep_every_key_found() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let key = ["id".to_owned()];
        let mut builder = TableDataBuilder::keyed(Arc::clone(&schema), &key, 0).unwrap();
        builder.push(batch(&schema, (0..20_000).collect())).unwrap();
        let mut data = builder.finish(2).unwrap();
        // Each round removes the first 1000 live ids and adds 1000 new ones:
        // well past the point where the changes are folded into the base.
        let mut live: Vec<i64> = (0..20_000).collect();
        let mut next = 20_000;
        for _ in 0..12 {
            let mut removed: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
            for id in live.drain(..1000) {
                let rows = data
                    .lookup(&[ScalarValue::Int64(Some(id))])
                    .unwrap()
                    .unwrap();
                assert_eq!(rows.len(), 1, "id {id}");
                removed
                    .entry(rows[0].batch)
                    .or_default()
                    .insert(rows[0].row);
            }
            let added: Vec<i64> = (next..next + 1000).collect();
            next += 1000;
            live.extend(&added);
            data = data.revise(&removed, vec![batch(&schema, added)]).unwrap();
            assert_eq!(data.rows(), 20_000);
        }
        for id in [0, 11_999, 12_000, 19_999, 20_000, next - 1] {
            let found = data
                .lookup(&[ScalarValue::Int64(Some(id))])
                .unwrap()
                .unwrap();
            assert_eq!(found.len(), usize::from(live.contains(&id)), "id {id}");
        }
        for id in live.iter().step_by(97) {
            let found = data
                .lookup(&[ScalarValue::Int64(Some(*id))])
                .unwrap()
                .unwrap();
            let row = data.rows_at(&found).unwrap();
            let value = row
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .value(0);
            assert_eq!(value, *id);
        }
    }
}
