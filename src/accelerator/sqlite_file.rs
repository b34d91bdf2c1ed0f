//! `engine: sqlite` files. Integers and booleans are kept as INTEGER,
//! floats as REAL, strings as TEXT, bytes as BLOB; every other type (dates,
//! times, timestamps, numerics, intervals) as its text form, which reads back
//! to the same value. The checkpoint holds the exact Arrow schema the rows
//! are read back into.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use datafusion::arrow::array::{
    Array, ArrayRef, BinaryArray, BinaryBuilder, Float64Array, Float64Builder, Int64Array,
    Int64Builder, RecordBatch, StringArray, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::ScalarValue;
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, OptionalExtension, Transaction, params};

use super::store::{
    Change, Checkpoint, CheckpointRow, Choose, DELETE_POSITION, Idle, SELECT_CHECKPOINT,
    SELECT_POSITION, UPSERT_CHECKPOINT, UPSERT_POSITION, column_definitions, create_checkpoint_sql,
    create_position_sql, from_storage, key_index_sql, matching_sql, quote, recreate_table_sql,
    select_sql, storage_schema, to_storage,
};

/// The table that holds the rows an append probes for, inside a
/// transaction that is rolled back.
const PROBE_TABLE: &str = "pgaccel_probe";

/// Rows per batch read back from the file.
const READ_BATCH_ROWS: usize = 8192;

#[derive(Debug)]
pub struct SqliteFile {
    path: PathBuf,
    table: String,
    connection: Mutex<Connection>,
}

/// How SQLite keeps a column of type `data_type`; `None` for its text form.
fn storage_type(data_type: &DataType) -> Option<DataType> {
    use DataType::*;
    match data_type {
        Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 => Some(Int64),
        Float16 | Float32 | Float64 => Some(Float64),
        Utf8 | LargeUtf8 | Utf8View => Some(Utf8),
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => Some(Binary),
        _ => None,
    }
}

fn sql_type(storage: &DataType) -> String {
    match storage {
        DataType::Int64 => "INTEGER",
        DataType::Float64 => "REAL",
        DataType::Binary => "BLOB",
        _ => "TEXT",
    }
    .to_owned()
}

fn storage(schema: &SchemaRef) -> Result<SchemaRef, String> {
    storage_schema(schema, "sqlite", storage_type)
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

impl SqliteFile {
    pub fn open(path: &Path, table: String) -> Result<SqliteFile, String> {
        let connection = Connection::open(path).map_err(text)?;
        connection
            .busy_timeout(Duration::from_secs(5))
            .map_err(text)?;
        // A write-ahead log with full syncs: a transaction is either in the
        // file or rolled back when the file is next opened, and queries
        // reading the file in place go on reading the last committed
        // version while a refresh writes the next (a rollback journal
        // would lock them out once the writer's cache spills).
        connection
            .execute_batch(&format!(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; {}; {}",
                create_checkpoint_sql("TEXT", "INTEGER"),
                create_position_sql("TEXT")
            ))
            .map_err(text)?;
        Ok(SqliteFile {
            path: path.to_owned(),
            table,
            connection: Mutex::new(connection),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic mid-write leaves an open transaction that rusqlite rolls
        // back on drop; the connection itself stays usable.
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes a copy of the database to `to` with `VACUUM INTO`, which
    /// reads one consistent version of it.
    pub fn export(&self, to: &Path) -> Result<(), String> {
        let target = to
            .to_str()
            .ok_or_else(|| format!("{} is not valid UTF-8", to.display()))?;
        self.connection()
            .execute("VACUUM INTO ?1", [target])
            .map_err(text)?;
        Ok(())
    }

    pub fn checkpoint(&self) -> Result<Option<Checkpoint>, String> {
        let connection = self.connection();
        let row = connection
            .query_row(SELECT_CHECKPOINT, [&self.table], |row| {
                Ok(CheckpointRow {
                    format: row.get(0)?,
                    last_refresh_us: row.get(1)?,
                    schema: row.get(2)?,
                    primary_key: row.get(3)?,
                    refresh_sql: row.get(4)?,
                })
            })
            .optional()
            .map_err(text)?;
        let Some(mut checkpoint) = row.map(CheckpointRow::decode).transpose()?.flatten() else {
            return Ok(None);
        };
        checkpoint.position = connection
            .query_row(SELECT_POSITION, [&self.table], |row| row.get(0))
            .optional()
            .map_err(text)?;
        Ok(Some(checkpoint))
    }

    /// Hands the rows to `sink` batch by batch, in the columns and types of
    /// `checkpoint.schema`.
    pub fn scan(
        &self,
        checkpoint: &Checkpoint,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        let select = select_sql(&self.table, &checkpoint.schema, None, None);
        read_rows(&self.connection(), &select, &[], &checkpoint.schema, sink)
    }

    /// A reader of the file on read-only connections of its own.
    pub fn reader(&self) -> SqliteReader {
        SqliteReader {
            path: self.path.clone(),
            idle: Idle::new(),
        }
    }

    /// Replaces the rows with those `feed` sends in one transaction (see
    /// `DuckdbFile::replace_from`); the write-ahead log holds what does not
    /// fit SQLite's page cache.
    pub fn replace_from(
        &self,
        mut checkpoint: Checkpoint,
        feed: &mut dyn FnMut() -> Option<Option<RecordBatch>>,
        completed: fn() -> chrono::DateTime<chrono::Utc>,
    ) -> Result<Checkpoint, String> {
        let storage = storage(&checkpoint.schema)?;
        let mut connection = self.connection();
        let transaction = connection.transaction().map_err(text)?;
        let table = quote(&self.table);
        transaction
            .execute_batch(&recreate_table_sql(&self.table, &storage, sql_type))
            .map_err(text)?;
        loop {
            match feed() {
                Some(Some(batch)) => {
                    insert(&transaction, &table, &storage, std::slice::from_ref(&batch))?
                }
                Some(None) => break,
                None => return Err("the read of the source stopped".to_owned()),
            }
        }
        if let Some(index) = key_index_sql(&self.table, &checkpoint.primary_key) {
            transaction.execute_batch(&index).map_err(text)?;
        }
        checkpoint.last_refresh = completed();
        self.commit(transaction, &checkpoint)?;
        Ok(checkpoint)
    }

    pub fn write(&self, change: &Change, checkpoint: &Checkpoint) -> Result<(), String> {
        let storage = storage(&checkpoint.schema)?;
        let mut connection = self.connection();
        let transaction = connection.transaction().map_err(text)?;
        let table = quote(&self.table);
        match change {
            Change::Replace(batches) => {
                transaction
                    .execute_batch(&recreate_table_sql(&self.table, &storage, sql_type))
                    .map_err(text)?;
                if let Some(index) = key_index_sql(&self.table, &checkpoint.primary_key) {
                    transaction.execute_batch(&index).map_err(text)?;
                }
                insert(&transaction, &table, &storage, batches)?;
            }
            Change::Upsert { removed, added } => {
                if let Some(removed) = removed {
                    delete_keys(&transaction, &table, removed)?;
                }
                insert(&transaction, &table, &storage, added)?;
            }
            Change::Nothing => {}
        }
        self.commit(transaction, checkpoint)
    }

    /// Hands `sink` the rows whose `probe` columns match a row of `probe`
    /// (see `Store::matching`), read in a transaction that is rolled back.
    pub fn matching(
        &self,
        probe: &RecordBatch,
        checkpoint: &Checkpoint,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        let probe_storage = storage(&probe.schema())?;
        let mut connection = self.connection();
        let transaction = connection.transaction().map_err(text)?;
        transaction
            .execute_batch(&format!(
                "CREATE TABLE {PROBE_TABLE} ({})",
                column_definitions(&probe_storage, sql_type)
            ))
            .map_err(text)?;
        insert(
            &transaction,
            PROBE_TABLE,
            &probe_storage,
            std::slice::from_ref(probe),
        )?;
        // CROSS JOIN keeps the probe rows outermost: each is looked up in
        // the table's key index (or an automatic index SQLite builds).
        let select = matching_sql(
            &self.table,
            &checkpoint.schema,
            &probe.schema(),
            PROBE_TABLE,
            "CROSS JOIN",
            "IS",
        );
        read_rows(&transaction, &select, &[], &checkpoint.schema, sink)
        // The transaction, and the probe table with it, is rolled back.
    }

    /// Deletes the rows `choose` picks of those `select` reads (each with
    /// its row id last, in `schema`), then commits with `checkpoint`; see
    /// `Store::evict`.
    pub fn evict(
        &self,
        select: &str,
        schema: &SchemaRef,
        choose: &mut Choose<'_>,
        checkpoint: &Checkpoint,
    ) -> Result<u64, String> {
        let mut connection = self.connection();
        let transaction = connection.transaction().map_err(text)?;
        let mut ids = Vec::new();
        read_rows(&transaction, select, &[], schema, &mut |batch| {
            ids.extend(choose(batch)?);
            Ok(())
        })?;
        if ids.is_empty() {
            return Ok(0);
        }
        {
            let mut delete = transaction
                .prepare(&format!(
                    "DELETE FROM {} WHERE rowid = ?1",
                    quote(&self.table)
                ))
                .map_err(text)?;
            for id in &ids {
                delete.execute([id]).map_err(text)?;
            }
        }
        self.commit(transaction, checkpoint)?;
        Ok(ids.len() as u64)
    }

    /// Writes `checkpoint` into `transaction` and commits it.
    fn commit(&self, transaction: Transaction<'_>, checkpoint: &Checkpoint) -> Result<(), String> {
        let row = CheckpointRow::of(checkpoint)?;
        transaction
            .execute(
                UPSERT_CHECKPOINT,
                params![
                    self.table,
                    row.format,
                    row.last_refresh_us,
                    row.schema,
                    row.primary_key,
                    row.refresh_sql,
                ],
            )
            .map_err(text)?;
        match &checkpoint.position {
            Some(position) => transaction.execute(UPSERT_POSITION, params![self.table, position]),
            None => transaction.execute(DELETE_POSITION, params![self.table]),
        }
        .map_err(text)?;
        transaction.commit().map_err(text)
    }
}

/// Reads an SQLite file in place; each read is one statement on a
/// read-only connection of its own (kept for the next read).
#[derive(Debug)]
pub struct SqliteReader {
    path: PathBuf,
    idle: Idle<Connection>,
}

/// Whether SQLite compares values of a column of `data_type` exactly as the
/// served type does: integers kept as INTEGER, strings as TEXT (compared
/// byte by byte, as DataFusion does).
pub fn compares_as_served(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | Utf8
    )
}

impl SqliteReader {
    #[cfg(test)]
    pub(super) fn idle_connections(&self) -> usize {
        self.idle.count()
    }

    /// Runs `read` on an idle connection, or a new one.
    fn with_connection<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, String>,
    ) -> Result<T, String> {
        let open = || {
            let connection = Connection::open_with_flags(
                &self.path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(text)?;
            connection
                .busy_timeout(Duration::from_secs(5))
                .map_err(text)?;
            Ok(connection)
        };
        self.idle.with(open, read)
    }

    /// The rows `select` reads, in `schema`'s columns, batch by batch to
    /// `sink`.
    pub fn read(
        &self,
        select: &str,
        schema: &SchemaRef,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        self.with_connection(|connection| read_rows(connection, select, &[], schema, sink))
    }

    /// The rows `select` reads with each list of `probes` bound to its
    /// parameters in turn, batch by batch to `sink`. The connection keeps
    /// `select` prepared, so a lookup by key is planned once per connection.
    pub fn read_each(
        &self,
        select: &str,
        probes: &[Vec<ScalarValue>],
        schema: &SchemaRef,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        self.with_connection(|connection| {
            for probe in probes {
                let bound = probe
                    .iter()
                    .map(bound_value)
                    .collect::<Result<Vec<_>, _>>()?;
                read_rows(connection, select, &bound, schema, sink)?;
            }
            Ok(())
        })
    }

    /// The number of rows `select` reads.
    pub fn count(&self, select: &str) -> Result<i64, String> {
        self.with_connection(|connection| {
            connection
                .query_row(&format!("SELECT count(*) FROM ({select})"), [], |row| {
                    row.get(0)
                })
                .map_err(text)
        })
    }
}

/// Inserts every row of `batches`, cast to `storage`, with one prepared
/// statement.
fn insert(
    transaction: &Transaction<'_>,
    table: &str,
    storage: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<(), String> {
    let count = storage.fields().len();
    let placeholders: Vec<String> = (1..=count).map(|i| format!("?{i}")).collect();
    let mut statement = transaction
        .prepare(&format!(
            "INSERT INTO {table} VALUES ({})",
            placeholders.join(", ")
        ))
        .map_err(text)?;
    for batch in batches {
        let batch = to_storage(batch, storage).map_err(text)?;
        for row in 0..batch.num_rows() {
            for (i, column) in batch.columns().iter().enumerate() {
                statement
                    .raw_bind_parameter(i + 1, ToSqlOutput::Borrowed(cell(column, row)))
                    .map_err(text)?;
            }
            statement.raw_execute().map_err(text)?;
        }
    }
    Ok(())
}

/// Deletes the rows whose key columns equal a row of `keys` (named as the
/// table's columns; NULL keys match nothing).
fn delete_keys(
    transaction: &Transaction<'_>,
    table: &str,
    keys: &RecordBatch,
) -> Result<(), String> {
    let schema = keys.schema();
    let storage = storage(&schema)?;
    let condition: Vec<String> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| format!("{} = ?{}", quote(f.name()), i + 1))
        .collect();
    let mut statement = transaction
        .prepare(&format!(
            "DELETE FROM {table} WHERE {}",
            condition.join(" AND ")
        ))
        .map_err(text)?;
    let keys = to_storage(keys, &storage).map_err(text)?;
    for row in 0..keys.num_rows() {
        for (i, column) in keys.columns().iter().enumerate() {
            statement
                .raw_bind_parameter(i + 1, ToSqlOutput::Borrowed(cell(column, row)))
                .map_err(text)?;
        }
        statement.raw_execute().map_err(text)?;
    }
    Ok(())
}

/// One stored value (of a storage-typed column).
fn cell(column: &ArrayRef, row: usize) -> ValueRef<'_> {
    if column.is_null(row) {
        return ValueRef::Null;
    }
    let any = column.as_any();
    if let Some(values) = any.downcast_ref::<Int64Array>() {
        ValueRef::Integer(values.value(row))
    } else if let Some(values) = any.downcast_ref::<Float64Array>() {
        ValueRef::Real(values.value(row))
    } else if let Some(values) = any.downcast_ref::<StringArray>() {
        ValueRef::Text(values.value(row).as_bytes())
    } else if let Some(values) = any.downcast_ref::<BinaryArray>() {
        ValueRef::Blob(values.value(row))
    } else {
        unreachable!("storage types are Int64, Float64, Utf8 and Binary")
    }
}

enum ColumnBuilder {
    Integer(Int64Builder),
    Real(Float64Builder),
    Text(StringBuilder),
    Blob(BinaryBuilder),
}

impl ColumnBuilder {
    fn new(storage: &DataType) -> Self {
        match storage {
            DataType::Int64 => ColumnBuilder::Integer(Int64Builder::new()),
            DataType::Float64 => ColumnBuilder::Real(Float64Builder::new()),
            DataType::Binary => ColumnBuilder::Blob(BinaryBuilder::new()),
            _ => ColumnBuilder::Text(StringBuilder::new()),
        }
    }

    fn push(&mut self, value: ValueRef<'_>) -> Result<(), String> {
        match (self, value) {
            (ColumnBuilder::Integer(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Real(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Text(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Blob(b), ValueRef::Null) => b.append_null(),
            (ColumnBuilder::Integer(b), ValueRef::Integer(v)) => b.append_value(v),
            (ColumnBuilder::Real(b), ValueRef::Real(v)) => b.append_value(v),
            (ColumnBuilder::Real(b), ValueRef::Integer(v)) => b.append_value(v as f64),
            (ColumnBuilder::Text(b), ValueRef::Text(v)) => {
                b.append_value(std::str::from_utf8(v).map_err(text)?)
            }
            (ColumnBuilder::Blob(b), ValueRef::Blob(v)) => b.append_value(v),
            (_, other) => {
                return Err(format!(
                    "a stored value of type {} does not match its column",
                    other.data_type()
                ));
            }
        }
        Ok(())
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            ColumnBuilder::Integer(b) => Arc::new(b.finish()),
            ColumnBuilder::Real(b) => Arc::new(b.finish()),
            ColumnBuilder::Text(b) => Arc::new(b.finish()),
            ColumnBuilder::Blob(b) => Arc::new(b.finish()),
        }
    }
}

/// `value` as SQLite stores a column of its type: integers as INTEGER,
/// strings as TEXT (the key types [`compares_as_served`] admits).
fn bound_value(value: &ScalarValue) -> Result<Value, String> {
    use ScalarValue::*;
    let integer = match value {
        Int8(Some(v)) => i64::from(*v),
        Int16(Some(v)) => i64::from(*v),
        Int32(Some(v)) => i64::from(*v),
        Int64(Some(v)) => *v,
        UInt8(Some(v)) => i64::from(*v),
        UInt16(Some(v)) => i64::from(*v),
        UInt32(Some(v)) => i64::from(*v),
        Utf8(Some(text)) => return Ok(Value::Text(text.clone())),
        other => {
            return Err(format!(
                "a key value of type {} is not bound",
                other.data_type()
            ));
        }
    };
    Ok(Value::Integer(integer))
}

/// The rows `select` reads (in `schema`'s columns), batch by batch to `sink`.
fn read_rows(
    connection: &Connection,
    select: &str,
    bound: &[Value],
    schema: &SchemaRef,
    sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    let storage = storage(schema)?;
    let mut statement = connection.prepare_cached(select).map_err(text)?;
    let mut builders: Vec<ColumnBuilder> = storage
        .fields()
        .iter()
        .map(|f| ColumnBuilder::new(f.data_type()))
        .collect();
    let mut rows = statement
        .query(rusqlite::params_from_iter(bound))
        .map_err(text)?;
    let (mut sent, mut pending) = (false, 0);
    let flush = |builders: &mut Vec<ColumnBuilder>| {
        let arrays = builders.iter_mut().map(ColumnBuilder::finish).collect();
        from_storage(arrays, schema).map_err(text)
    };
    while let Some(row) = rows.next().map_err(text)? {
        for (i, builder) in builders.iter_mut().enumerate() {
            builder.push(row.get_ref(i).map_err(text)?)?;
        }
        pending += 1;
        if pending == READ_BATCH_ROWS {
            sink(flush(&mut builders)?)?;
            (sent, pending) = (true, 0);
        }
    }
    if pending > 0 || !sent {
        sink(flush(&mut builders)?)?;
    }
    Ok(())
}
