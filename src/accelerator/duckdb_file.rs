//! `engine: duckdb` files. Columns keep their own DuckDB types (integers,
//! floats, DECIMAL, DATE, TIME, TIMESTAMP, TIMESTAMPTZ, VARCHAR,
//! BLOB), written with DuckDB's Arrow appender; a type DuckDB has no match
//! for is kept as its text form. The checkpoint holds the exact Arrow
//! schema the rows are read back into.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion_table_providers_common::arrow_bridge;
use duckdb::{Connection, OptionalExt, Transaction, params};

use super::store::{
    Change, Checkpoint, CheckpointRow, Choose, DELETE_POSITION, Idle, SELECT_CHECKPOINT,
    SELECT_POSITION, UPSERT_CHECKPOINT, UPSERT_POSITION, column_definitions, create_checkpoint_sql,
    create_position_sql, from_storage, key_index_sql, matching_sql, quote, recreate_table_sql,
    storage_schema, to_storage,
};

/// A table of fewer rows than this per core is read on one connection
/// (small in unit tests, so that they read on several).
#[cfg(not(test))]
const PARALLEL_READ_ROWS: usize = 1 << 20;
#[cfg(test)]
const PARALLEL_READ_ROWS: usize = 1000;

/// The table that holds the keys an upsert removes, inside its transaction.
const REMOVED_TABLE: &str = "pgaccel_removed_keys";

/// The table that holds the rows an append probes for, inside a
/// transaction that is rolled back.
const PROBE_TABLE: &str = "pgaccel_probe";

/// The table that holds the row ids an eviction deletes, inside its
/// transaction.
const EVICTED_TABLE: &str = "pgaccel_evicted";

/// What DuckDB's key index (an ART, which DuckDB holds in memory while it
/// builds and commits it) takes per row, about: measured near 40 bytes for
/// a BIGINT key, rounded up.
const INDEX_BYTES_PER_ROW: u64 = 48;

#[derive(Debug)]
pub struct DuckdbFile {
    path: PathBuf,
    table: String,
    connection: Mutex<Connection>,
    /// The memory DuckDB may use for the file: `params.duckdb_memory_limit`,
    /// or DuckDB's own default (80% of the host's or the cgroup's memory);
    /// `None` if DuckDB reports none it can be read from.
    memory_limit: Option<u64>,
}

/// A size as DuckDB prints a setting (`19.2 GiB`, `64.0 MiB`, `512 bytes`,
/// `1.5 GB`), in bytes.
fn size_in_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let number: f64 = text[..split].parse().ok()?;
    let unit: f64 = match text[split..].trim().to_ascii_lowercase().as_str() {
        "" | "b" | "byte" | "bytes" => 1.0,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return None,
    };
    Some((number * unit) as u64)
}

/// How DuckDB keeps a column of type `data_type`; `None` for its text form.
fn storage_type(data_type: &DataType) -> Option<DataType> {
    use DataType::*;
    match data_type {
        Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float32
        | Float64 | Date32 => Some(data_type.clone()),
        Float16 => Some(Float32),
        Utf8 | LargeUtf8 | Utf8View => Some(Utf8),
        Binary | LargeBinary | BinaryView | FixedSizeBinary(_) => Some(Binary),
        Timestamp(_, None) => Some(data_type.clone()),
        // TIMESTAMPTZ has microseconds; nanoseconds would be cut.
        Timestamp(TimeUnit::Nanosecond, Some(_)) => None,
        Timestamp(_, Some(zone)) => Some(Timestamp(TimeUnit::Microsecond, Some(zone.clone()))),
        Time32(_) | Time64(TimeUnit::Microsecond) => Some(Time64(TimeUnit::Microsecond)),
        Decimal128(precision, _) if *precision <= 38 => Some(data_type.clone()),
        // Intervals go as text: DuckDB's Arrow appender writes a NULL
        // interval as a zero one.
        _ => None,
    }
}

pub(super) fn sql_type(storage: &DataType) -> String {
    use DataType::*;
    match storage {
        Boolean => "BOOLEAN".into(),
        Int8 => "TINYINT".into(),
        Int16 => "SMALLINT".into(),
        Int32 => "INTEGER".into(),
        Int64 => "BIGINT".into(),
        UInt8 => "UTINYINT".into(),
        UInt16 => "USMALLINT".into(),
        UInt32 => "UINTEGER".into(),
        UInt64 => "UBIGINT".into(),
        Float32 => "FLOAT".into(),
        Float64 => "DOUBLE".into(),
        Date32 => "DATE".into(),
        Binary => "BLOB".into(),
        Timestamp(_, Some(_)) => "TIMESTAMPTZ".into(),
        Timestamp(TimeUnit::Second, None) => "TIMESTAMP_S".into(),
        Timestamp(TimeUnit::Millisecond, None) => "TIMESTAMP_MS".into(),
        Timestamp(TimeUnit::Microsecond, None) => "TIMESTAMP".into(),
        Timestamp(TimeUnit::Nanosecond, None) => "TIMESTAMP_NS".into(),
        Time64(_) => "TIME".into(),
        Decimal128(precision, scale) => format!("DECIMAL({precision}, {scale})"),
        _ => "VARCHAR".into(),
    }
}

fn storage(schema: &SchemaRef) -> Result<SchemaRef, String> {
    storage_schema(schema, "duckdb", storage_type)
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

impl DuckdbFile {
    /// Opens `path`; `memory_limit` caps what DuckDB holds in memory for it
    /// (buffer cache, index builds) before spilling to disk.
    pub fn open(
        path: &Path,
        table: String,
        memory_limit: Option<u64>,
    ) -> Result<DuckdbFile, String> {
        let connection = Connection::open(path).map_err(text)?;
        if let Some(bytes) = memory_limit {
            connection
                .execute_batch(&format!("SET memory_limit = '{}MiB'", (bytes >> 20).max(1)))
                .map_err(text)?;
        }
        connection
            .execute_batch(&format!(
                "{}; {}",
                create_checkpoint_sql("VARCHAR", "BIGINT"),
                create_position_sql("VARCHAR")
            ))
            .map_err(text)?;
        let in_force = connection
            .query_row("SELECT current_setting('memory_limit')", [], |row| {
                row.get::<_, String>(0)
            })
            .ok()
            .and_then(|text| size_in_bytes(&text));
        Ok(DuckdbFile {
            path: path.to_owned(),
            table,
            connection: Mutex::new(connection),
            memory_limit: in_force.or(memory_limit),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic mid-write drops its transaction, which rolls it back; the
        // connection itself stays usable.
        self.connection.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Copies the file to `to` once a `CHECKPOINT` has moved everything in
    /// DuckDB's write-ahead log into it, holding the connection throughout.
    pub fn export(&self, to: &Path) -> Result<(), String> {
        let connection = self.connection();
        connection.execute_batch("CHECKPOINT").map_err(text)?;
        std::fs::copy(&self.path, to).map_err(text)?;
        std::fs::File::open(to)
            .and_then(|file| file.sync_all())
            .map_err(text)?;
        drop(connection);
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

    /// A reader of the file on a connection of its own: queries read the
    /// file in place without waiting on this one.
    pub fn reader(&self) -> Result<DuckdbReader, String> {
        let connection = self.connection().try_clone().map_err(text)?;
        Ok(DuckdbReader {
            connection: Mutex::new(connection),
            idle: Idle::new(),
        })
    }

    /// Hands the rows to `sink` batch by batch, in the columns and types of
    /// `checkpoint.schema`, in no particular order. A large table is read
    /// in row-id ranges on one connection per core: turning DuckDB's rows
    /// into Arrow arrays is the larger part of the read, and runs on the
    /// calling thread of each query. The ranges are read in transactions of
    /// their own: callers read when nothing writes (at startup, or a
    /// downloaded snapshot).
    pub fn scan(
        &self,
        checkpoint: &Checkpoint,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        let connection = self.connection();
        let columns: Vec<String> = checkpoint
            .schema
            .fields()
            .iter()
            .map(|f| quote(f.name()))
            .collect();
        let select = format!("SELECT {} FROM {}", columns.join(", "), quote(&self.table));
        let schema = &checkpoint.schema;
        let (first, last): (Option<i64>, Option<i64>) = connection
            .query_row(
                &format!("SELECT min(rowid), max(rowid) FROM {}", quote(&self.table)),
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .map_err(text)?;
        let span = match (first, last) {
            (Some(first), Some(last)) => usize::try_from(last - first + 1).unwrap_or(0),
            _ => 0,
        };
        let readers = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .min(span / PARALLEL_READ_ROWS);
        let first = first.unwrap_or(0);
        if readers < 2 {
            return read_rows(&connection, &select, schema, sink);
        }
        let step = span.div_ceil(readers) as i64;
        let (sender, receiver) = std::sync::mpsc::sync_channel(readers * 4);
        std::thread::scope(|scope| {
            for reader in 0..readers as i64 {
                let connection = connection.try_clone().map_err(text)?;
                let sender = sender.clone();
                let (from, to) = (first + reader * step, first + (reader + 1) * step);
                let sql = format!("{select} WHERE rowid >= {from} AND rowid < {to}");
                scope.spawn(move || {
                    let read = read_rows(&connection, &sql, schema, &mut |batch| {
                        // Closed only when the caller stopped reading.
                        sender
                            .send(Ok(batch))
                            .map_err(|_| "the read stopped".to_owned())
                    });
                    if let Err(error) = read {
                        let _ = sender.send(Err(error));
                    }
                });
            }
            drop(sender);
            for batch in receiver {
                sink(batch?)?;
            }
            Ok(())
        })
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
                append(&transaction, &self.table, &storage, batches)?;
            }
            Change::Upsert { removed, added } => {
                if let Some(removed) = removed {
                    delete_keys(&transaction, &table, removed)?;
                }
                append(&transaction, &self.table, &storage, added)?;
            }
            Change::Nothing => {}
        }
        self.commit(transaction, checkpoint)
    }

    /// Replaces the rows with those `feed` sends, all in one transaction:
    /// each batch is appended as it arrives (DuckDB writes a large
    /// transaction's row groups to the file as they fill, so the rows never
    /// need to fit in memory). `Some(batch)` carries rows, `None` ends the
    /// feed: the key index is built, the checkpoint (its last refresh set
    /// by `completed`) written and the whole committed. A feed closed
    /// without `None` (a failed or cancelled read) rolls everything back.
    pub fn replace_from(
        &self,
        mut checkpoint: Checkpoint,
        feed: &mut dyn FnMut() -> Option<Option<RecordBatch>>,
        completed: fn() -> chrono::DateTime<chrono::Utc>,
    ) -> Result<Checkpoint, String> {
        let storage = storage(&checkpoint.schema)?;
        let mut connection = self.connection();
        let transaction = connection.transaction().map_err(text)?;
        transaction
            .execute_batch(&recreate_table_sql(&self.table, &storage, sql_type))
            .map_err(text)?;
        let mut rows = 0u64;
        {
            let mut appender = transaction.appender(&self.table).map_err(text)?;
            loop {
                match feed() {
                    Some(Some(batch)) if batch.num_rows() > 0 => {
                        rows += batch.num_rows() as u64;
                        let batch = to_storage(&batch, &storage).map_err(text)?;
                        let batch = arrow_bridge::record_batch_to_60(&batch).map_err(text)?;
                        appender.append_record_batch(batch).map_err(text)?;
                    }
                    Some(Some(_)) => {}
                    Some(None) => break,
                    None => return Err("the read of the source stopped".to_owned()),
                }
            }
            appender.flush().map_err(text)?;
        }
        if let Some(index) = key_index_sql(&self.table, &checkpoint.primary_key) {
            // The old version's index and the new one are both in memory
            // until the commit: an index that would not fit is not built,
            // and a lookup by key reads the key column, skipping the row
            // groups whose key range (DuckDB's zone maps) excludes it.
            match self.memory_limit {
                Some(limit) if rows * INDEX_BYTES_PER_ROW * 4 > limit => {
                    tracing::info!(
                        dataset = %self.table,
                        rows,
                        "no key index in the DuckDB file: it would not fit DuckDB's memory limit ({} MB; params.duckdb_memory_limit sets it); lookups by key scan the key column",
                        limit >> 20
                    );
                }
                _ => transaction.execute_batch(&index).map_err(text)?,
            }
        }
        checkpoint.last_refresh = completed();
        self.commit(transaction, &checkpoint)?;
        Ok(checkpoint)
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
        append(
            &transaction,
            PROBE_TABLE,
            &probe_storage,
            std::slice::from_ref(probe),
        )?;
        let select = matching_sql(
            &self.table,
            &checkpoint.schema,
            &probe.schema(),
            PROBE_TABLE,
            "JOIN",
            "IS NOT DISTINCT FROM",
        );
        read_rows(&transaction, &select, &checkpoint.schema, sink)
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
        read_rows(&transaction, select, schema, &mut |batch| {
            ids.extend(choose(batch)?);
            Ok(())
        })?;
        if ids.is_empty() {
            return Ok(0);
        }
        let evicted = ids.len() as u64;
        let ids_schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let ids = RecordBatch::try_new(
            Arc::clone(&ids_schema),
            vec![Arc::new(Int64Array::from(ids))],
        )
        .map_err(text)?;
        transaction
            .execute_batch(&format!("CREATE TABLE {EVICTED_TABLE} (id BIGINT)"))
            .map_err(text)?;
        append(&transaction, EVICTED_TABLE, &ids_schema, &[ids])?;
        transaction
            .execute_batch(&format!(
                "DELETE FROM {} WHERE rowid IN (SELECT id FROM {EVICTED_TABLE}); DROP TABLE {EVICTED_TABLE};",
                quote(&self.table)
            ))
            .map_err(text)?;
        self.commit(transaction, checkpoint)?;
        Ok(evicted)
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

/// The rows `sql` selects, in `schema`'s types, batch by batch to `sink`.
fn read_rows(
    connection: &Connection,
    sql: &str,
    schema: &SchemaRef,
    sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
) -> Result<(), String> {
    let mut statement = connection.prepare(sql).map_err(text)?;
    // Streamed chunk by chunk: a whole result would be materialized first.
    for batch in statement.stream_arrow([]).map_err(text)? {
        let batch = arrow_bridge::record_batch_from_60(&batch.map_err(text)?).map_err(text)?;
        sink(from_storage(batch.columns().to_vec(), schema).map_err(text)?)?;
    }
    Ok(())
}

/// Appends `batches`, cast to `storage`, to the table `table` (unquoted).
fn append(
    transaction: &Transaction<'_>,
    table: &str,
    storage: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<(), String> {
    let mut appender = transaction.appender(table).map_err(text)?;
    for batch in batches {
        if batch.num_rows() == 0 {
            continue;
        }
        let batch = to_storage(batch, storage).map_err(text)?;
        let batch = arrow_bridge::record_batch_to_60(&batch).map_err(text)?;
        appender.append_record_batch(batch).map_err(text)?;
    }
    appender.flush().map_err(text)
}

/// Deletes the rows whose key columns equal a row of `keys`.
fn delete_keys(
    transaction: &Transaction<'_>,
    table: &str,
    keys: &RecordBatch,
) -> Result<(), String> {
    let storage = storage(&keys.schema())?;
    transaction
        .execute_batch(&format!(
            "CREATE TABLE {REMOVED_TABLE} ({});",
            column_definitions(&storage, sql_type)
        ))
        .map_err(text)?;
    append(
        transaction,
        REMOVED_TABLE,
        &storage,
        std::slice::from_ref(keys),
    )?;
    let condition: Vec<String> = storage
        .fields()
        .iter()
        .map(|f| {
            let column = quote(f.name());
            format!("{table}.{column} = k.{column}")
        })
        .collect();
    transaction
        .execute_batch(&format!(
            "DELETE FROM {table} USING {REMOVED_TABLE} k WHERE {}; DROP TABLE {REMOVED_TABLE};",
            condition.join(" AND ")
        ))
        .map_err(text)
}

/// Reads a DuckDB file in place: each read is one statement (so one
/// consistent version of the file) on a connection of its own.
#[derive(Debug)]
pub struct DuckdbReader {
    /// Cloned when a read finds no idle connection; reads run side by side.
    connection: Mutex<Connection>,
    idle: Idle<Connection>,
}

/// Whether DuckDB compares values of a column of `data_type` exactly as
/// the served type does: the column is stored as that very type.
pub fn compares_as_served(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Utf8 | Date32
    ) || matches!(data_type, Decimal128(precision, _) if *precision <= 38)
}

impl DuckdbReader {
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
            self.connection
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .try_clone()
                .map_err(text)
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
        self.with_connection(|connection| read_rows(connection, select, schema, sink))
    }

    /// The rows `select` reads with each list of `probes` bound to its
    /// parameters in turn (as text, which `select` casts), batch by batch
    /// to `sink`. The connection keeps `select` prepared.
    pub fn read_each(
        &self,
        select: &str,
        probes: &[Vec<String>],
        schema: &SchemaRef,
        sink: &mut dyn FnMut(RecordBatch) -> Result<(), String>,
    ) -> Result<(), String> {
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(select).map_err(text)?;
            for probe in probes {
                let batches = statement
                    .stream_arrow(duckdb::params_from_iter(probe))
                    .map_err(text)?;
                for batch in batches {
                    let batch =
                        arrow_bridge::record_batch_from_60(&batch.map_err(text)?).map_err(text)?;
                    sink(from_storage(batch.columns().to_vec(), schema).map_err(text)?)?;
                }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duckdb_sizes_read_as_bytes() {
        assert_eq!(size_in_bytes("512 bytes"), Some(512));
        assert_eq!(size_in_bytes("64.0 MiB"), Some(64 << 20));
        assert_eq!(size_in_bytes("1.5 GB"), Some(1_500_000_000));
        assert_eq!(
            size_in_bytes("19.2 GiB"),
            Some((19.2 * (1u64 << 30) as f64) as u64)
        );
        assert_eq!(size_in_bytes("lots"), None);
    }

    /// The limit in force is what DuckDB reports: the configured one, or
    /// its own default when none is configured.
    #[test]
    fn the_memory_limit_in_force_is_known() {
        let folder = tempfile::tempdir().unwrap();
        let limited =
            DuckdbFile::open(&folder.path().join("a.db"), "a".into(), Some(96 << 20)).unwrap();
        assert_eq!(limited.memory_limit, Some(96 << 20));
        let default = DuckdbFile::open(&folder.path().join("b.db"), "b".into(), None).unwrap();
        assert!(
            default.memory_limit.is_some_and(|bytes| bytes > 96 << 20),
            "{:?}",
            default.memory_limit
        );
    }
}
