//! File accelerations (`engine: duckdb | sqlite`, `mode: file | file_create |
//! file_update`): the dataset's rows and its checkpoint, kept in one database
//! file so that a restart finds them again.
//!
//! A dataset refreshed in full or by appends is queried in place through a
//! [`FileReader`]; one whose refresh mode revises rows in memory is answered
//! from its in-memory version ([`super::TableData`]), and the file is its
//! durable copy. Every write is one transaction of the file's
//! database, holding the rows and the checkpoint together, so a crash at any
//! point (even `kill -9`) leaves the file with the complete old version or
//! the complete new one; a refresh publishes its version to queries only
//! after that transaction commits.
//!
//! The providers of datafusion-table-providers write through their own
//! transactions and keep no checkpoint, so the two writers here drive the
//! `duckdb` and `rusqlite` crates directly.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch};
use datafusion::arrow::compute::{CastOptions, can_cast_types, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::common::ScalarValue;

use super::duckdb_file::{self, DuckdbFile, DuckdbReader};
use super::sqlite_file::{self, SqliteReader};
use super::{TableData, TableDataBuilder, sqlite_file::SqliteFile};
use crate::config::Engine;

/// Bumped when the layout of the checkpoint or of the data changes; a file
/// of another version is not read (the dataset loads from its source).
const FORMAT: i64 = 1;

/// The column both engines number a table's rows by.
const ROWID: &str = "rowid";

/// What [`Store::evict`] hands each batch to: the row ids of the batch's
/// rows to delete.
pub(super) type Choose<'a> = dyn FnMut(RecordBatch) -> Result<Vec<i64>, String> + 'a;

/// The name of the table that holds the checkpoint, beside the data table.
const CHECKPOINT_TABLE: &str = "pgaccel_checkpoint";

#[derive(Debug, thiserror::Error)]
#[error("the {engine} acceleration file {} of dataset '{dataset}': {message}", file.display())]
pub struct StoreError {
    pub dataset: String,
    pub engine: &'static str,
    pub file: PathBuf,
    pub message: String,
}

/// What a completed refresh records beside its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub last_refresh: DateTime<Utc>,
    /// The acceleration's columns, with the field metadata the wire layer
    /// reads (PostgreSQL type names).
    pub schema: SchemaRef,
    /// The key the acceleration was indexed by; empty for none.
    pub primary_key: Vec<String>,
    /// The `refresh_sql` the rows were read with.
    pub refresh_sql: Option<String>,
    /// For `refresh_mode: changes`, the position in the source's change
    /// stream the rows are current to (a PostgreSQL LSN, a MySQL binlog
    /// position), so a restart resumes the stream exactly there; `None` for
    /// rows not kept by a stream.
    pub position: Option<String>,
}

/// The rows and checkpoint found in a file.
#[cfg(test)]
#[derive(Debug)]
pub struct Persisted {
    pub checkpoint: Checkpoint,
    pub batches: Vec<RecordBatch>,
}

/// What a write changes in the file's rows.
#[derive(Debug)]
pub enum Change {
    /// The rows become exactly `batches`.
    Replace(Vec<RecordBatch>),
    /// The rows whose key equals a row of `removed` (key columns only) go,
    /// then `added` is inserted.
    Upsert {
        removed: Option<RecordBatch>,
        added: Vec<RecordBatch>,
    },
    /// Only the checkpoint is rewritten (a refresh that found nothing new).
    Nothing,
}

/// One dataset's acceleration file.
#[derive(Debug)]
pub enum Store {
    Duckdb(DuckdbFile),
    Sqlite(SqliteFile),
}

impl Store {
    /// Opens (creating it and its folder if needed) the file of `dataset`;
    /// `recreate` (`mode: file_create`) first removes what a previous run left.
    /// `memory_limit` caps DuckDB's memory for the file.
    pub fn open(
        dataset: &str,
        engine: Engine,
        file: &Path,
        recreate: bool,
        memory_limit: Option<u64>,
    ) -> Result<Store, StoreError> {
        let engine_name = engine.as_str();
        let fail = |message: String| StoreError {
            dataset: dataset.to_owned(),
            engine: engine_name,
            file: file.to_owned(),
            message,
        };
        if let Some(folder) = file.parent().filter(|f| !f.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder)
                .map_err(|e| fail(format!("cannot create its folder: {e}")))?;
        }
        if recreate {
            for suffix in ["", ".wal", "-wal", "-journal", "-shm"] {
                let mut path = file.as_os_str().to_owned();
                path.push(suffix);
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(fail(format!("cannot remove it (mode: file_create): {e}")));
                    }
                }
            }
        }
        let table = dataset.to_owned();
        match engine {
            Engine::Duckdb => DuckdbFile::open(file, table, memory_limit).map(Store::Duckdb),
            Engine::Sqlite => SqliteFile::open(file, table).map(Store::Sqlite),
            Engine::Arrow => Err("the arrow engine keeps no file".to_owned()),
        }
        .map_err(fail)
    }

    /// The checkpoint of the last completed write; `None` when the file
    /// holds none (new, or written by another format version).
    pub fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        match self {
            Store::Duckdb(file) => file.checkpoint(),
            Store::Sqlite(file) => file.checkpoint(),
        }
        .map_err(|message| self.error(message))
    }

    /// A reader that queries use to read the file in place, as `checkpoint`
    /// describes it.
    pub fn reader(&self, checkpoint: &Checkpoint) -> Result<FileReader, StoreError> {
        let engine = match self {
            Store::Duckdb(file) => file.reader().map(ReaderEngine::Duckdb),
            Store::Sqlite(file) => Ok(ReaderEngine::Sqlite(file.reader())),
        }
        .map_err(|m| self.error(m))?;
        let table = self.table();
        let mut reader = FileReader {
            table: table.to_owned(),
            schema: Arc::clone(&checkpoint.schema),
            rows: 0,
            engine,
        };
        let all = select_sql(table, &Arc::new(Schema::empty()), None, None);
        let rows = reader.engine.count(&all).map_err(|m| self.error(m))?;
        reader.rows = usize::try_from(rows).unwrap_or(0);
        Ok(reader)
    }

    /// Replaces the file's rows with those `feed` sends, streamed into one
    /// transaction (see `DuckdbFile::replace_from`), and indexes them by
    /// the checkpoint's primary key; returns the checkpoint committed.
    pub fn replace_from(
        &self,
        checkpoint: Checkpoint,
        feed: &mut dyn FnMut() -> Option<Option<RecordBatch>>,
        completed: fn() -> chrono::DateTime<Utc>,
    ) -> Result<Checkpoint, StoreError> {
        match self {
            Store::Duckdb(file) => file.replace_from(checkpoint, feed, completed),
            Store::Sqlite(file) => file.replace_from(checkpoint, feed, completed),
        }
        .map_err(|m| self.error(m))
    }

    /// The rows whose `probe` columns (named as the table's) equal, NULL
    /// matching NULL, those of some row of `probe`, in the columns of
    /// `checkpoint.schema`; each matching row once. The file is not
    /// changed. What an append reads back of the rows it may replace.
    pub fn matching(
        &self,
        probe: &RecordBatch,
        checkpoint: &Checkpoint,
    ) -> Result<Vec<RecordBatch>, StoreError> {
        let mut rows = Vec::new();
        if probe.num_rows() > 0 {
            let mut sink = |batch: RecordBatch| {
                rows.push(batch);
                Ok(())
            };
            match self {
                Store::Duckdb(file) => file.matching(probe, checkpoint, &mut sink),
                Store::Sqlite(file) => file.matching(probe, checkpoint, &mut sink),
            }
            .map_err(|m| self.error(m))?;
        }
        Ok(rows)
    }

    /// Deletes, in one transaction that also writes `checkpoint`, the rows
    /// for which `keep` (given batches in the checkpoint's columns) answers
    /// false (not NULL); returns how many. Nothing is written when none is.
    pub fn evict(
        &self,
        checkpoint: &Checkpoint,
        keep: &mut dyn FnMut(&RecordBatch) -> Result<BooleanArray, String>,
    ) -> Result<u64, StoreError> {
        if let Some(field) = checkpoint
            .schema
            .fields()
            .iter()
            .find(|f| f.name().eq_ignore_ascii_case(ROWID))
        {
            return Err(self.error(format!(
                "rows cannot be evicted in place from a table with a column named '{}', which hides the file's row ids",
                field.name()
            )));
        }
        let mut rows_with_ids: Vec<Field> = checkpoint
            .schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        rows_with_ids.push(Field::new(ROWID, DataType::Int64, false));
        let rows_with_ids = Arc::new(Schema::new(rows_with_ids));
        let columns = checkpoint.schema.fields().len();
        let served: Vec<usize> = (0..columns).collect();
        let mut choose = |batch: RecordBatch| {
            let kept = keep(&batch.project(&served).map_err(|e| e.to_string())?)?;
            let ids = batch
                .column(columns)
                .as_any()
                .downcast_ref::<Int64Array>()
                .ok_or("the file's row ids are not integers")?;
            Ok((0..batch.num_rows())
                .filter(|&row| kept.is_valid(row) && !kept.value(row))
                .map(|row| ids.value(row))
                .collect())
        };
        let names: Vec<String> = checkpoint
            .schema
            .fields()
            .iter()
            .map(|f| quote(f.name()))
            .collect();
        let select = format!(
            "SELECT {}, {ROWID} FROM {}",
            names.join(", "),
            quote(self.table())
        );
        match self {
            Store::Duckdb(file) => file.evict(&select, &rows_with_ids, &mut choose, checkpoint),
            Store::Sqlite(file) => file.evict(&select, &rows_with_ids, &mut choose, checkpoint),
        }
        .map_err(|m| self.error(m))
    }

    /// The size of the file (and of its write-ahead log), in bytes.
    pub fn bytes(&self) -> u64 {
        ["", ".wal", "-wal"]
            .iter()
            .filter_map(|suffix| {
                let mut path = self.path().as_os_str().to_owned();
                path.push(suffix);
                std::fs::metadata(path).ok().map(|m| m.len())
            })
            .sum()
    }

    /// The rows of the write `checkpoint` records, as the version queries
    /// are served from, spread over `partitions`. Reading the file (this
    /// thread) and coalescing its batches (another thread) overlap, so a
    /// restart or a restored snapshot takes about as long as the read. The
    /// primary-key index is not built here: the rows can be served while it
    /// is ([`TableData::indexed`]), which takes a restart's first answer off
    /// the index's critical path.
    pub fn read(
        &self,
        checkpoint: &Checkpoint,
        partitions: usize,
    ) -> Result<TableData, StoreError> {
        if let Some(missing) = checkpoint
            .primary_key
            .iter()
            .find(|name| checkpoint.schema.index_of(name).is_err())
        {
            return Err(self.error(format!(
                "primary key column `{missing}` is not a column of the table"
            )));
        }
        let builder = TableDataBuilder::new(Arc::clone(&checkpoint.schema));
        // A few stored batches' worth in flight bounds the memory held
        // between the two threads.
        let (sender, receiver) = std::sync::mpsc::sync_channel::<RecordBatch>(32);
        std::thread::scope(|scope| {
            let building = scope.spawn(move || {
                let mut builder = builder;
                for batch in receiver {
                    builder.push(batch)?;
                }
                builder.finish(partitions)
            });
            let read = self.scan(checkpoint, &mut |batch| {
                // Closed only when the builder failed; its error is reported.
                sender
                    .send(batch)
                    .map_err(|_| "building its rows stopped".to_owned())
            });
            drop(sender);
            let built = building
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            match (read, built) {
                (_, Err(e)) => Err(self.error(format!("building its rows failed: {e}"))),
                (Err(message), Ok(_)) => Err(self.error(message)),
                (Ok(()), Ok(data)) => Ok(data),
            }
        })
    }

    /// The rows and checkpoint of the last completed write, as stored.
    #[cfg(test)]
    pub fn load(&self) -> Result<Option<Persisted>, StoreError> {
        let Some(checkpoint) = self.checkpoint()? else {
            return Ok(None);
        };
        let mut batches = Vec::new();
        self.scan(&checkpoint, &mut |batch| {
            batches.push(batch);
            Ok(())
        })
        .map_err(|message| self.error(message))?;
        Ok(Some(Persisted {
            checkpoint,
            batches,
        }))
    }

    fn scan(
        &self,
        checkpoint: &Checkpoint,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        match self {
            Store::Duckdb(file) => file.scan(checkpoint, sink),
            Store::Sqlite(file) => file.scan(checkpoint, sink),
        }
    }

    /// Writes `change` and `checkpoint` in one transaction.
    pub fn write(&self, change: &Change, checkpoint: &Checkpoint) -> Result<(), StoreError> {
        match self {
            Store::Duckdb(file) => file.write(change, checkpoint),
            Store::Sqlite(file) => file.write(change, checkpoint),
        }
        .map_err(|message| self.error(message))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        match self {
            Store::Duckdb(file) => file.path(),
            Store::Sqlite(file) => file.path(),
        }
    }

    /// Writes a consistent copy of the file to `to` (replacing what is
    /// there), never one caught mid-write: the file's connection is held for
    /// the whole copy, so no write can start meanwhile.
    pub fn export(&self, to: &Path) -> Result<(), StoreError> {
        match std::fs::remove_file(to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.error(format!("cannot replace {}: {e}", to.display()))),
        }
        match self {
            Store::Duckdb(file) => file.export(to),
            Store::Sqlite(file) => file.export(to),
        }
        .map_err(|message| self.error(format!("copying it to {} failed: {message}", to.display())))
    }

    /// The table the file keeps the rows in (the dataset's name).
    fn table(&self) -> &str {
        match self {
            Store::Duckdb(file) => file.table(),
            Store::Sqlite(file) => file.table(),
        }
    }

    /// An error of this file, saying `message`.
    pub fn error(&self, message: String) -> StoreError {
        let engine = match self {
            Store::Duckdb(_) => "duckdb",
            Store::Sqlite(_) => "sqlite",
        };
        StoreError {
            dataset: self.table().to_owned(),
            engine,
            file: self.path().to_owned(),
            message,
        }
    }
}

/// The checkpoint table; `text` and `integer` are the engine's names for
/// those types.
pub(super) fn create_checkpoint_sql(text: &str, integer: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {CHECKPOINT_TABLE} (
             dataset {text} PRIMARY KEY, format {integer} NOT NULL,
             last_refresh_us {integer} NOT NULL, schema BLOB NOT NULL,
             primary_key {text} NOT NULL, refresh_sql {text})"
    )
}

/// The table of stream positions (see [`Checkpoint::position`]), beside
/// the checkpoint: a table of its own, so files written before positions
/// existed open unchanged.
pub(super) fn create_position_sql(text: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS pgaccel_stream_position (
             dataset {text} PRIMARY KEY, position {text} NOT NULL)"
    )
}

pub(super) const SELECT_POSITION: &str =
    "SELECT position FROM pgaccel_stream_position WHERE dataset = ?";

pub(super) const UPSERT_POSITION: &str =
    "INSERT OR REPLACE INTO pgaccel_stream_position (dataset, position) VALUES (?, ?)";

pub(super) const DELETE_POSITION: &str = "DELETE FROM pgaccel_stream_position WHERE dataset = ?";

/// Reads the checkpoint of one dataset (bound as the only parameter) in
/// [`CheckpointRow`]'s column order.
pub(super) const SELECT_CHECKPOINT: &str = "SELECT format, last_refresh_us, schema, primary_key, refresh_sql \
     FROM pgaccel_checkpoint WHERE dataset = ?";

/// Writes a checkpoint: the dataset, then [`CheckpointRow`]'s columns.
pub(super) const UPSERT_CHECKPOINT: &str = "INSERT OR REPLACE INTO pgaccel_checkpoint \
     (dataset, format, last_refresh_us, schema, primary_key, refresh_sql) VALUES (?, ?, ?, ?, ?, ?)";

/// A checkpoint as its table keeps it.
pub(super) struct CheckpointRow {
    pub format: i64,
    pub last_refresh_us: i64,
    pub schema: Vec<u8>,
    pub primary_key: String,
    pub refresh_sql: Option<String>,
}

impl CheckpointRow {
    pub fn of(checkpoint: &Checkpoint) -> Result<CheckpointRow, String> {
        Ok(CheckpointRow {
            format: FORMAT,
            last_refresh_us: checkpoint.last_refresh.timestamp_micros(),
            schema: encode_schema(&checkpoint.schema).map_err(|e| e.to_string())?,
            primary_key: encode_key(&checkpoint.primary_key),
            refresh_sql: checkpoint.refresh_sql.clone(),
        })
    }

    /// `None` for a checkpoint of another format version.
    pub fn decode(self) -> Result<Option<Checkpoint>, String> {
        if self.format != FORMAT {
            return Ok(None);
        }
        Ok(Some(Checkpoint {
            last_refresh: DateTime::from_timestamp_micros(self.last_refresh_us)
                .ok_or("the checkpoint's refresh time is out of range")?,
            schema: decode_schema(&self.schema).map_err(|e| e.to_string())?,
            primary_key: decode_key(&self.primary_key)?,
            refresh_sql: self.refresh_sql,
            position: None,
        }))
    }
}

/// Drops the data table and creates it with `storage`'s columns, each of
/// the SQL type `sql_type` gives.
pub(super) fn recreate_table_sql(
    table: &str,
    storage: &SchemaRef,
    sql_type: impl Fn(&DataType) -> String,
) -> String {
    let table = quote(table);
    format!(
        "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} ({});",
        column_definitions(storage, sql_type)
    )
}

/// The index a file keeps on the primary key of the table `table`
/// (unquoted), for lookups by key read in place; `None` without a key.
pub(super) fn key_index_sql(table: &str, key: &[String]) -> Option<String> {
    if key.is_empty() {
        return None;
    }
    let columns: Vec<String> = key.iter().map(|c| quote(c)).collect();
    Some(format!(
        "CREATE INDEX {} ON {} ({})",
        quote(&format!("{table}_pgaccel_key")),
        quote(table),
        columns.join(", ")
    ))
}

/// `SELECT <schema's columns> FROM table [WHERE condition] [LIMIT n]`; with
/// no columns, a `SELECT 1` per row.
pub(super) fn select_sql(
    table: &str,
    schema: &SchemaRef,
    condition: Option<&str>,
    limit: Option<usize>,
) -> String {
    let columns: Vec<String> = schema.fields().iter().map(|f| quote(f.name())).collect();
    let columns = if columns.is_empty() {
        "1".to_owned()
    } else {
        columns.join(", ")
    };
    let mut sql = format!("SELECT {columns} FROM {}", quote(table));
    if let Some(condition) = condition {
        sql.push_str(" WHERE ");
        sql.push_str(condition);
    }
    if let Some(n) = limit {
        sql.push_str(&format!(" LIMIT {n}"));
    }
    sql
}

/// The rows of `table` (as `schema`'s columns) whose `probe` columns equal
/// those of a row of the table `probe_table`, NULLs matching with `same`
/// (the engine's `IS NOT DISTINCT FROM`), each row once: the distinct probe
/// rows are joined to the table with `join`, so that the table's key index,
/// where the probe is its key, answers each.
pub(super) fn matching_sql(
    table: &str,
    schema: &SchemaRef,
    probe: &SchemaRef,
    probe_table: &str,
    join: &str,
    same: &str,
) -> String {
    let columns: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("held.{}", quote(f.name())))
        .collect();
    let probed: Vec<String> = probe.fields().iter().map(|f| quote(f.name())).collect();
    let condition: Vec<String> = probed
        .iter()
        .map(|c| format!("held.{c} {same} probe.{c}"))
        .collect();
    format!(
        "SELECT {} FROM (SELECT DISTINCT {} FROM {probe_table}) AS probe {join} {} AS held ON {}",
        columns.join(", "),
        probed.join(", "),
        quote(table),
        condition.join(" AND ")
    )
}

/// A batch of `rows` rows and no columns (what `count(*)` reads).
fn rows_only(schema: SchemaRef, rows: i64) -> Result<RecordBatch, String> {
    let options = datafusion::arrow::record_batch::RecordBatchOptions::new()
        .with_row_count(Some(usize::try_from(rows).unwrap_or(0)));
    RecordBatch::try_new_with_options(schema, Vec::new(), &options).map_err(|e| e.to_string())
}

/// Reads the acceleration a file holds, in place, in the served columns and
/// types.
#[derive(Debug)]
pub struct FileReader {
    table: String,
    schema: SchemaRef,
    rows: usize,
    engine: ReaderEngine,
}

#[derive(Debug)]
enum ReaderEngine {
    Duckdb(DuckdbReader),
    Sqlite(SqliteReader),
}

impl ReaderEngine {
    fn count(&self, select: &str) -> Result<i64, String> {
        match self {
            ReaderEngine::Duckdb(reader) => reader.count(select),
            ReaderEngine::Sqlite(reader) => reader.count(select),
        }
    }
}

impl FileReader {
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The rows the file held when the reader was made.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Whether the file's engine compares values of a column served as
    /// `data_type` exactly as DataFusion does, so a condition on it can be
    /// evaluated in the file.
    pub fn compares_as_served(&self, data_type: &DataType) -> bool {
        match self.engine {
            ReaderEngine::Duckdb(_) => duckdb_file::compares_as_served(data_type),
            ReaderEngine::Sqlite(_) => sqlite_file::compares_as_served(data_type),
        }
    }

    /// Hands the columns `projection` (indices into the schema; all with
    /// `None`) of at most `limit` rows for which `condition` (SQL over the
    /// file's columns) holds to `sink`, batch by batch.
    pub fn read(
        &self,
        projection: Option<&[usize]>,
        condition: Option<&str>,
        limit: Option<usize>,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        let schema = match projection {
            Some(columns) => Arc::new(self.schema.project(columns).map_err(|e| e.to_string())?),
            None => Arc::clone(&self.schema),
        };
        let select = select_sql(&self.table, &schema, condition, limit);
        if schema.fields().is_empty() {
            // No column asked for (`count(*)`): the rows, without values.
            let rows = self.engine.count(&select)?;
            return sink(rows_only(schema, rows)?);
        }
        match &self.engine {
            ReaderEngine::Duckdb(reader) => reader.read(&select, &schema, sink),
            ReaderEngine::Sqlite(reader) => reader.read(&select, &schema, sink),
        }
    }

    /// The table the file keeps the rows in.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Hands the rows of `query`, computed by the file's engine, to `sink`.
    pub fn aggregate(
        &self,
        query: &AggregateQuery,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        let sql = query.sql(&self.table);
        match &self.engine {
            ReaderEngine::Duckdb(reader) => reader.read(&sql, &query.schema, sink),
            ReaderEngine::Sqlite(reader) => reader.read(&sql, &query.schema, sink),
        }
    }

    /// Whether the file's engine is DuckDB: a statement costs it a
    /// millisecond or so, and a lookup may scan the key column where the
    /// file keeps no key index.
    pub fn is_duckdb(&self) -> bool {
        matches!(self.engine, ReaderEngine::Duckdb(_))
    }

    /// Hands the rows whose `key` columns (names and served types) equal
    /// those of one of `probes` (distinct lists of values of those types, none
    /// NULL) to `sink`, batch by batch, each read through the file's key
    /// index with the values bound to a statement each connection keeps
    /// prepared (DuckDB casts them from their text form, so every key type
    /// binds the same way).
    pub fn lookup(
        &self,
        key: &[(String, DataType)],
        probes: &[Vec<ScalarValue>],
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        let schema = &self.schema;
        match &self.engine {
            ReaderEngine::Sqlite(reader) => {
                let condition = key
                    .iter()
                    .enumerate()
                    .map(|(i, (name, _))| format!("{} = ?{}", quote(name), i + 1))
                    .collect::<Vec<_>>()
                    .join(" AND ");
                let select = select_sql(&self.table, schema, Some(&condition), None);
                reader.read_each(&select, probes, schema, sink)
            }
            ReaderEngine::Duckdb(reader) => {
                let condition = key
                    .iter()
                    .enumerate()
                    .map(|(i, (name, data_type))| {
                        format!(
                            "{} = CAST(?{} AS {})",
                            quote(name),
                            i + 1,
                            duckdb_file::sql_type(data_type)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(" AND ");
                let select = select_sql(&self.table, schema, Some(&condition), None);
                let probes = probes
                    .iter()
                    .map(|probe| probe.iter().map(key_text).collect::<Option<Vec<_>>>())
                    .collect::<Option<Vec<_>>>()
                    .ok_or("a key value has no text form")?;
                reader.read_each(&select, &probes, schema, sink)
            }
        }
    }
}

/// `value` as a literal of the file's SQL, compared with a column of
/// `column_type` exactly as DataFusion compares them; `None` for other
/// pairings.
pub fn literal_sql(value: &ScalarValue, column_type: &DataType) -> Option<String> {
    use ScalarValue::*;
    if value.is_null() {
        return Some("NULL".to_owned());
    }

    let integer_column = column_type.is_integer();
    match value {
        Int8(Some(v)) if integer_column => Some(v.to_string()),
        Int16(Some(v)) if integer_column => Some(v.to_string()),
        Int32(Some(v)) if integer_column => Some(v.to_string()),
        Int64(Some(v)) if integer_column => Some(v.to_string()),
        UInt8(Some(v)) if integer_column => Some(v.to_string()),
        UInt16(Some(v)) if integer_column => Some(v.to_string()),
        UInt32(Some(v)) if integer_column => Some(v.to_string()),
        UInt64(Some(v)) if integer_column => Some(v.to_string()),
        Utf8(Some(text)) | LargeUtf8(Some(text)) | Utf8View(Some(text))
            if *column_type == DataType::Utf8 && !text.contains('\0') =>
        {
            Some(format!("'{}'", text.replace('\'', "''")))
        }
        Date32(Some(_)) if *column_type == DataType::Date32 => {
            Some(format!("DATE '{}'", key_text(value)?))
        }
        Decimal128(Some(_), precision, scale)
            if matches!(column_type, DataType::Decimal128(..)) && *scale >= 0 =>
        {
            Some(format!(
                "CAST('{}' AS DECIMAL({precision}, {scale}))",
                key_text(value)?
            ))
        }
        _ => None,
    }
}

/// `value` as the text DuckDB casts back to it (a key value, never NULL).
fn key_text(value: &ScalarValue) -> Option<String> {
    use ScalarValue::*;
    Some(match value {
        Int8(Some(v)) => v.to_string(),
        Int16(Some(v)) => v.to_string(),
        Int32(Some(v)) => v.to_string(),
        Int64(Some(v)) => v.to_string(),
        UInt8(Some(v)) => v.to_string(),
        UInt16(Some(v)) => v.to_string(),
        UInt32(Some(v)) => v.to_string(),
        UInt64(Some(v)) => v.to_string(),
        Utf8(Some(text)) => text.clone(),
        Date32(Some(days)) => chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?
            .checked_add_signed(chrono::TimeDelta::days(i64::from(*days)))?
            .format("%Y-%m-%d")
            .to_string(),
        Decimal128(Some(v), precision, scale) if *scale >= 0 => {
            datafusion::arrow::array::Decimal128Array::from(vec![*v])
                .with_precision_and_scale(*precision, *scale)
                .ok()?
                .value_as_string(0)
        }
        _ => return None,
    })
}

/// The most connections a reader keeps idle between reads; more are opened
/// while more reads run side by side, and closed after.
const IDLE_CONNECTIONS: usize = 16;

/// The connections a file reader keeps open between reads: a lookup is a
/// few dozen microseconds of reading, and opening a connection for each
/// would cost more than the read.
#[derive(Debug)]
pub(super) struct Idle<C>(std::sync::Mutex<Vec<C>>);

impl<C> Idle<C> {
    pub(super) fn new() -> Self {
        Idle(std::sync::Mutex::new(Vec::new()))
    }

    /// How many connections wait for a read.
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Runs `read` on an idle connection, or on one `open` makes, and keeps
    /// the connection for a later read.
    pub(super) fn with<T>(
        &self,
        open: impl FnOnce() -> Result<C, String>,
        read: impl FnOnce(&C) -> Result<T, String>,
    ) -> Result<T, String> {
        let idle = self.0.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let connection = match idle {
            Some(connection) => connection,
            None => open()?,
        };
        let result = read(&connection);
        let mut idle = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_CONNECTIONS {
            idle.push(connection);
        } else {
            // Closed after the lock is let go.
            drop(idle);
            drop(connection);
        }
        result
    }
}

/// An aggregate the file's engine computes over the rows it holds: `SELECT
/// <select> FROM <table> [WHERE <condition>] [GROUP BY <group_by>]`, read
/// back as `schema` (the served types of the select list).
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateQuery {
    /// The select list, as SQL of the file's engine.
    pub select: Vec<String>,
    pub condition: Option<String>,
    pub group_by: Vec<String>,
    pub schema: SchemaRef,
}

impl AggregateQuery {
    /// The statement over `table`.
    pub fn sql(&self, table: &str) -> String {
        let mut sql = format!("SELECT {} FROM {}", self.select.join(", "), quote(table));
        if let Some(condition) = &self.condition {
            sql.push_str(" WHERE ");
            sql.push_str(condition);
        }
        if !self.group_by.is_empty() {
            sql.push_str(" GROUP BY ");
            sql.push_str(&self.group_by.join(", "));
        }
        sql
    }
}

/// The version of a file acceleration that queries read in place.
#[derive(Debug)]
pub struct FileVersion {
    pub reader: Arc<FileReader>,
    pub checkpoint: Checkpoint,
    /// The file's size once this version was committed.
    pub bytes: u64,
}

/// `"a" TYPE, "b" TYPE` for `storage`'s columns.
pub(super) fn column_definitions(
    storage: &SchemaRef,
    sql_type: impl Fn(&DataType) -> String,
) -> String {
    storage
        .fields()
        .iter()
        .map(|f| format!("{} {}", quote(f.name()), sql_type(f.data_type())))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `"name"`, with embedded quotes doubled: an SQL identifier in both DuckDB
/// and SQLite.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The schema as an Arrow IPC stream with no rows: keeps every type and
/// every field's metadata.
fn encode_schema(schema: &SchemaRef) -> Result<Vec<u8>, ArrowError> {
    let mut bytes = Vec::new();
    let mut writer = StreamWriter::try_new(&mut bytes, schema)?;
    writer.finish()?;
    drop(writer);
    Ok(bytes)
}

fn decode_schema(bytes: &[u8]) -> Result<SchemaRef, ArrowError> {
    StreamReader::try_new(Cursor::new(bytes), None).map(|reader| reader.schema())
}

/// Casts `batch`'s columns to `storage` (see the engines' `storage_type`).
pub(super) fn to_storage(
    batch: &RecordBatch,
    storage: &SchemaRef,
) -> Result<RecordBatch, ArrowError> {
    let columns = batch
        .columns()
        .iter()
        .zip(storage.fields())
        .map(|(column, field)| cast_exact(column, field.data_type()))
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(storage), columns)
}

/// Casts columns read back from a file to the checkpoint's schema.
pub(super) fn from_storage(
    columns: Vec<ArrayRef>,
    schema: &SchemaRef,
) -> Result<RecordBatch, ArrowError> {
    let columns = columns
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| cast_exact(column, field.data_type()))
        .collect::<Result<Vec<_>, _>>()?;
    RecordBatch::try_new(Arc::clone(schema), columns)
}

/// A cast that fails rather than turn a value it cannot represent into NULL.
fn cast_exact(column: &ArrayRef, to: &DataType) -> Result<ArrayRef, ArrowError> {
    if column.data_type() == to {
        return Ok(Arc::clone(column));
    }
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(column, to, &options)
}

/// The storage schema of `schema`, each field's type given by `storage`, or
/// an error naming the first column the engine cannot keep.
pub(super) fn storage_schema(
    schema: &SchemaRef,
    engine: &str,
    storage: impl Fn(&DataType) -> Option<DataType>,
) -> Result<SchemaRef, String> {
    let fields = schema
        .fields()
        .iter()
        .map(|field| {
            let kept = storage(field.data_type())
                .or_else(|| {
                    (can_cast_types(field.data_type(), &DataType::Utf8)
                        && can_cast_types(&DataType::Utf8, field.data_type()))
                    .then_some(DataType::Utf8)
                })
                .ok_or_else(|| {
                    format!(
                        "column '{}' has type {}, which engine {engine} cannot store; use engine: arrow",
                        field.name(),
                        field.data_type()
                    )
                })?;
            Ok(Field::new(field.name(), kept, true))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Arc::new(Schema::new(fields)))
}

/// `[a, b]` as the JSON text kept in the checkpoint.
fn encode_key(key: &[String]) -> String {
    serde_json::to_string(key).expect("a list of strings serializes")
}

fn decode_key(text: &str) -> Result<Vec<String>, String> {
    serde_json::from_str(text).map_err(|e| format!("unreadable primary key in the checkpoint: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int16Array,
        Int64Array, IntervalMonthDayNanoArray, StringArray, Time64MicrosecondArray,
        TimestampMicrosecondArray, UInt64Array,
    };
    use datafusion::arrow::datatypes::IntervalMonthDayNano;
    use std::collections::HashMap;

    /// One row of every type a source produces, and a row of NULLs.
    pub(crate) fn every_type() -> RecordBatch {
        let pg = |name: &str| HashMap::from([("pgaccel.pg_type".to_owned(), name.to_owned())]);
        let fields = vec![
            Field::new("i2", DataType::Int16, true),
            Field::new("i8", DataType::Int64, false),
            Field::new("u8", DataType::UInt64, true),
            Field::new("f8", DataType::Float64, true),
            Field::new("b", DataType::Boolean, true),
            Field::new("t", DataType::Utf8, true).with_metadata(pg("varchar")),
            Field::new("bytes", DataType::Binary, true),
            Field::new("d", DataType::Date32, true),
            Field::new(
                "ts",
                DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, None),
                true,
            ),
            Field::new(
                "tstz",
                DataType::Timestamp(
                    datafusion::arrow::datatypes::TimeUnit::Microsecond,
                    Some("+00:00".into()),
                ),
                true,
            ),
            Field::new(
                "tm",
                DataType::Time64(datafusion::arrow::datatypes::TimeUnit::Microsecond),
                true,
            ),
            Field::new("n", DataType::Decimal128(20, 4), true),
            Field::new(
                "iv",
                DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
                true,
            ),
        ];
        let schema = Arc::new(Schema::new(fields));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int16Array::from(vec![Some(-7), None])),
            Arc::new(Int64Array::from(vec![i64::MIN, i64::MAX])),
            Arc::new(UInt64Array::from(vec![Some(u64::MAX), None])),
            Arc::new(Float64Array::from(vec![Some(0.1), None])),
            Arc::new(BooleanArray::from(vec![Some(true), None])),
            Arc::new(StringArray::from(vec![Some("it's \"x\" é"), None])),
            Arc::new(BinaryArray::from(vec![Some(&b"\x00\xff"[..]), None])),
            Arc::new(Date32Array::from(vec![Some(19_723), None])),
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(1_700_000_000_123_456),
                None,
            ])),
            Arc::new(
                TimestampMicrosecondArray::from(vec![Some(-1_000_001), None])
                    .with_timezone("+00:00"),
            ),
            Arc::new(Time64MicrosecondArray::from(vec![
                Some(45_296_000_001),
                None,
            ])),
            Arc::new(
                Decimal128Array::from(vec![Some(-1_234_567_890_123), None])
                    .with_precision_and_scale(20, 4)
                    .unwrap(),
            ),
            Arc::new(IntervalMonthDayNanoArray::from(vec![
                Some(IntervalMonthDayNano::new(14, 3, 4_000_000_000)),
                None,
            ])),
        ];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    fn checkpoint(schema: SchemaRef, refresh_sql: Option<&str>) -> Checkpoint {
        Checkpoint {
            last_refresh: DateTime::from_timestamp_millis(1_750_000_000_123).unwrap(),
            schema,
            primary_key: vec!["i8".to_owned()],
            refresh_sql: refresh_sql.map(str::to_owned),
            position: None,
        }
    }

    fn round_trip(engine: Engine) {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("nested/orders.db");
        let batch = every_type();
        let first = checkpoint(batch.schema(), None);
        {
            let store = Store::open("orders", engine, &path, false, None).unwrap();
            assert!(store.load().unwrap().is_none());
            store
                .write(&Change::Replace(vec![batch.clone()]), &first)
                .unwrap();
        }
        let store = Store::open("orders", engine, &path, false, None).unwrap();
        let found = store.load().unwrap().unwrap();
        assert_eq!(found.checkpoint, first);
        assert_eq!(found.batches.len(), 1);
        for (i, field) in batch.schema().fields().iter().enumerate() {
            assert_eq!(
                found.batches[0].column(i).as_ref(),
                batch.column(i).as_ref(),
                "{engine:?}: column {}",
                field.name()
            );
        }
        assert_eq!(found.batches[0], batch);
        // An upsert removes the key of row 0 and adds it back changed.
        let key = batch.project(&[1]).unwrap().slice(0, 1);
        let mut changed = batch.slice(0, 1);
        let i2: ArrayRef = Arc::new(Int16Array::from(vec![Some(99)]));
        let mut columns = changed.columns().to_vec();
        columns[0] = i2;
        changed = RecordBatch::try_new(batch.schema(), columns).unwrap();
        let second = checkpoint(batch.schema(), Some("SELECT * FROM orders"));
        store
            .write(
                &Change::Upsert {
                    removed: Some(key),
                    added: vec![changed.clone()],
                },
                &second,
            )
            .unwrap();
        let found = store.load().unwrap().unwrap();
        assert_eq!(found.checkpoint, second);
        let rows: usize = found.batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(rows, 2);
        let all =
            datafusion::arrow::compute::concat_batches(&batch.schema(), &found.batches).unwrap();
        let i2 = all.column(0).as_any().downcast_ref::<Int16Array>().unwrap();
        assert!(i2.iter().any(|v| v == Some(99)));
        assert!(!i2.iter().any(|v| v == Some(-7)));
        drop(store);
        // mode: file_create starts from an empty file.
        let store = Store::open("orders", engine, &path, true, None).unwrap();
        assert!(store.load().unwrap().is_none());
    }

    /// `rows` keyed rows (`id` 0.., a text column), written, then every
    /// third removed by an upsert (which leaves gaps in DuckDB's row ids).
    fn written_with_gaps(engine: Engine, path: &Path, rows: i64) -> (Store, Checkpoint) {
        use datafusion::arrow::array::Int64Array;
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Int64Array::from_iter_values(0..rows)),
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|i| format!("row {i}")),
                )),
            ],
        )
        .unwrap();
        let checkpoint = Checkpoint {
            last_refresh: Utc::now(),
            schema: Arc::clone(&schema),
            primary_key: vec!["id".to_owned()],
            refresh_sql: None,
            position: None,
        };
        let store = Store::open("t", engine, path, false, None).unwrap();
        store
            .write(&Change::Replace(vec![batch]), &checkpoint)
            .unwrap();
        let removed = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from_iter_values(
                (0..rows).filter(|i| i % 3 == 0),
            ))],
        )
        .unwrap();
        store
            .write(
                &Change::Upsert {
                    removed: Some(removed),
                    added: Vec::new(),
                },
                &checkpoint,
            )
            .unwrap();
        (store, checkpoint)
    }

    /// The `id`s (first column, BIGINT) of `batches`, in order.
    fn ids(batches: &[RecordBatch]) -> Vec<i64> {
        use datafusion::arrow::array::Int64Array;
        let mut ids: Vec<i64> = batches
            .iter()
            .flat_map(|batch| {
                let ids = batch.column(0).as_any().downcast_ref::<Int64Array>();
                ids.unwrap().values().to_vec()
            })
            .collect();
        ids.sort_unstable();
        ids
    }

    /// What an append reads back: the rows whose key (or whose every
    /// column) matches a probe row, each once, NULL matching NULL; the
    /// file is left as it was.
    #[test]
    fn matching_reads_back_the_rows_a_probe_names() {
        use datafusion::arrow::array::Int64Array;
        for engine in [Engine::Duckdb, Engine::Sqlite] {
            let folder = tempfile::tempdir().unwrap();
            let (store, checkpoint) = written_with_gaps(engine, &folder.path().join("t.db"), 100);
            let keys = RecordBatch::try_new(
                Arc::new(checkpoint.schema.project(&[0]).unwrap()),
                // 3 was removed; 4 is asked twice; 1000 was never held.
                vec![Arc::new(Int64Array::from(vec![3, 4, 4, 5, 1000]))],
            )
            .unwrap();
            let found = store.matching(&keys, &checkpoint).unwrap();
            assert_eq!(ids(&found), [4, 5], "{engine:?}");
            assert_eq!(found[0].schema(), checkpoint.schema, "{engine:?}");
            let rows = RecordBatch::try_new(
                Arc::clone(&checkpoint.schema),
                vec![
                    Arc::new(Int64Array::from(vec![7, 8])),
                    Arc::new(StringArray::from(vec![Some("row 7"), Some("not row 8")])),
                ],
            )
            .unwrap();
            assert_eq!(ids(&store.matching(&rows, &checkpoint).unwrap()), [7]);
            let held: usize = store
                .load()
                .unwrap()
                .unwrap()
                .batches
                .iter()
                .map(RecordBatch::num_rows)
                .sum();
            assert_eq!(held, 66, "{engine:?}: the probe left nothing behind");
        }
    }

    /// A lookup by key reads the rows of the distinct probes given, on
    /// connections the reader keeps between reads; a key text with a quote
    /// is read as itself.
    #[test]
    fn lookup_reads_the_rows_of_each_probe() {
        for engine in [Engine::Duckdb, Engine::Sqlite] {
            let folder = tempfile::tempdir().unwrap();
            let (store, checkpoint) = written_with_gaps(engine, &folder.path().join("t.db"), 100);
            let reader = store.reader(&checkpoint).unwrap();
            let lookup = |key: &str, probes: Vec<ScalarValue>| {
                let data_type = probes[0].data_type();
                let probes: Vec<Vec<ScalarValue>> = probes.into_iter().map(|v| vec![v]).collect();
                let mut found = Vec::new();
                reader
                    .lookup(&[(key.to_owned(), data_type)], &probes, &mut |batch| {
                        found.push(batch);
                        Ok(())
                    })
                    .unwrap();
                found
            };
            for _ in 0..3 {
                // 3 was removed; 1000 was never held.
                let found = lookup(
                    "id",
                    [4, 3, 1000, 98]
                        .map(|id| ScalarValue::Int64(Some(id)))
                        .into(),
                );
                assert_eq!(ids(&found), [4, 98], "{engine:?}");
                assert!(found.iter().all(|b| b.schema() == checkpoint.schema));
            }
            let by_name = lookup(
                "name",
                vec![
                    ScalarValue::Utf8(Some("row 7".into())),
                    ScalarValue::Utf8(Some("row 7' OR '1' = '1".into())),
                ],
            );
            assert_eq!(ids(&by_name), [7], "{engine:?}");
            let idle = match &reader.engine {
                ReaderEngine::Duckdb(reader) => reader.idle_connections(),
                ReaderEngine::Sqlite(reader) => reader.idle_connections(),
            };
            assert_eq!(idle, 1, "{engine:?}: one connection served every read");
        }
    }

    /// Key values as the text the file casts back: dates in ISO form,
    /// decimals at their scale.
    #[test]
    fn key_values_have_an_exact_text_form() {
        assert_eq!(
            key_text(&ScalarValue::Date32(Some(19753))).as_deref(),
            Some("2024-01-31")
        );
        assert_eq!(
            key_text(&ScalarValue::Decimal128(Some(-12345), 10, 3)).as_deref(),
            Some("-12.345")
        );
        assert_eq!(
            literal_sql(
                &ScalarValue::Decimal128(Some(5), 4, 2),
                &DataType::Decimal128(4, 2)
            )
            .as_deref(),
            Some("CAST('0.05' AS DECIMAL(4, 2))")
        );
        assert_eq!(key_text(&ScalarValue::Float64(Some(1.5))), None);
    }

    /// A retention check in place: the rows the predicate answers false for
    /// go, with the checkpoint, in one transaction; NULL keeps a row; when
    /// nothing goes, nothing is written.
    #[test]
    fn evict_deletes_the_rows_the_predicate_rejects() {
        use datafusion::arrow::array::Int64Array;
        for engine in [Engine::Duckdb, Engine::Sqlite] {
            let folder = tempfile::tempdir().unwrap();
            let (store, checkpoint) = written_with_gaps(engine, &folder.path().join("t.db"), 3000);
            let later = Checkpoint {
                refresh_sql: Some("evicted".to_owned()),
                ..checkpoint.clone()
            };
            // Keeps ids below 1000; id 1001 is NULL (unknown): kept too.
            let mut keep = |batch: &RecordBatch| {
                let ids = batch
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .unwrap();
                Ok(ids
                    .iter()
                    .map(|id| id.and_then(|id| (id != 1001).then_some(id < 1000)))
                    .collect::<BooleanArray>())
            };
            let evicted = store.evict(&later, &mut keep).unwrap();
            let kept_by_rule = (0..3000).filter(|i| i % 3 != 0 && (*i < 1000 || *i == 1001));
            assert_eq!(
                evicted,
                2000 - kept_by_rule.clone().count() as u64,
                "{engine:?}"
            );
            let found = store.load().unwrap().unwrap();
            assert_eq!(found.checkpoint.refresh_sql.as_deref(), Some("evicted"));
            assert_eq!(
                ids(&found.batches),
                kept_by_rule.collect::<Vec<_>>(),
                "{engine:?}"
            );
            assert_eq!(store.evict(&checkpoint, &mut keep).unwrap(), 0);
            let unchanged = store.checkpoint().unwrap().unwrap();
            assert_eq!(
                unchanged.refresh_sql.as_deref(),
                Some("evicted"),
                "{engine:?}"
            );
        }
    }

    /// The served version read back from a file: every row once (a large
    /// DuckDB table is read on several connections, see
    /// `PARALLEL_READ_ROWS`), spread and indexed by its key.
    #[test]
    fn read_builds_the_served_version_of_a_file() {
        for engine in [Engine::Duckdb, Engine::Sqlite] {
            let folder = tempfile::tempdir().unwrap();
            let rows = 20_000;
            let (store, checkpoint) = written_with_gaps(engine, &folder.path().join("t.db"), rows);
            let served = store.read(&checkpoint, 3).unwrap();
            assert!(
                served.primary_key().is_none(),
                "served before it is indexed"
            );
            let data = served.indexed(&checkpoint.primary_key).unwrap().unwrap();
            let kept: Vec<i64> = (0..rows).filter(|i| i % 3 != 0).collect();
            assert_eq!(data.rows(), kept.len(), "{engine:?}");
            assert_eq!(data.partitions().len(), 3);
            let mut ids: Vec<i64> = data
                .batches()
                .iter()
                .flat_map(|batch| {
                    batch
                        .column(0)
                        .as_any()
                        .downcast_ref::<datafusion::arrow::array::Int64Array>()
                        .unwrap()
                        .values()
                        .to_vec()
                })
                .collect();
            ids.sort_unstable();
            assert_eq!(ids, kept, "{engine:?}: every row once");
            for id in [1, 2, rows - 1] {
                let found = data
                    .lookup(&[datafusion::common::ScalarValue::Int64(Some(id))])
                    .unwrap()
                    .unwrap();
                let row = data.rows_at(&found).unwrap();
                let name = row
                    .column(1)
                    .as_any()
                    .downcast_ref::<StringArray>()
                    .unwrap()
                    .value(0)
                    .to_owned();
                assert_eq!(name, format!("row {id}"), "{engine:?}");
            }
            let gone = data
                .lookup(&[datafusion::common::ScalarValue::Int64(Some(3))])
                .unwrap()
                .unwrap_or_default();
            assert!(gone.is_empty(), "{engine:?}: a removed key is not indexed");
        }
    }

    /// A stream position is written with the rows of the same transaction,
    /// read back with the checkpoint, and cleared by a write without one
    /// (a full reload that no stream keeps).
    #[test]
    fn the_stream_position_is_kept_with_the_checkpoint() {
        for engine in [Engine::Duckdb, Engine::Sqlite] {
            let folder = tempfile::tempdir().unwrap();
            let path = folder.path().join("t.db");
            let (store, mut checkpoint) = written_with_gaps(engine, &path, 10);
            assert_eq!(store.checkpoint().unwrap().unwrap().position, None);
            checkpoint.position = Some("16/B374D848".to_owned());
            store.write(&Change::Nothing, &checkpoint).unwrap();
            drop(store);
            let reopened = Store::open("t", engine, &path, false, None).unwrap();
            let found = reopened.checkpoint().unwrap().unwrap();
            assert_eq!(found.position.as_deref(), Some("16/B374D848"), "{engine:?}");
            checkpoint.position = None;
            reopened.write(&Change::Nothing, &checkpoint).unwrap();
            assert_eq!(
                reopened.checkpoint().unwrap().unwrap().position,
                None,
                "{engine:?}"
            );
        }
    }

    #[test]
    fn sqlite_keeps_every_type_and_the_checkpoint() {
        round_trip(Engine::Sqlite);
    }

    #[test]
    fn duckdb_keeps_every_type_and_the_checkpoint() {
        round_trip(Engine::Duckdb);
    }
}
