//! Full reads of a PostgreSQL table as `COPY (SELECT …) TO STDOUT (FORMAT
//! binary)`, decoded straight into Arrow builders.
//!
//! The table provider reads a refresh through tokio-postgres `Row`s: every
//! value of every row is looked up, type-checked and converted on its own,
//! which made a full refresh take 1.7 times as long as PostgreSQL's own
//! binary COPY of the same table. Here the SELECT the provider would send
//! (with its projection, pushed-down filters and limit) is sent as a COPY
//! instead, and each field of the binary stream is appended to its column's
//! builder as it arrives. Written by hand because no crate decodes
//! PostgreSQL's binary COPY format into Arrow (the ones that exist encode
//! Arrow into it, the other direction).
//!
//! Each column produces exactly the array the provider's row reader would
//! (same Arrow type, same values), so an acceleration does not depend on
//! which reader loaded it; [`Decode::choose`] refuses any pairing of types it
//! does not know, and the read then goes through the provider as before.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use datafusion::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder,
    Float64Builder, Int8Builder, Int16Builder, Int32Builder, Int64Builder,
    IntervalMonthDayNanoBuilder, StringArray, StringBuilder, Time64NanosecondBuilder,
    TimestampNanosecondBuilder, UInt32Builder,
};
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, IntervalUnit, SchemaRef, TimeUnit,
};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_table_providers::sql::db_connection_pool::postgrespool::PostgresConnectionPool;
use futures::StreamExt;

use super::fitted;
use tokio_postgres::types::{Kind, Type};

/// Rows per batch: a batch is handed on once it holds at least this many.
const BATCH_ROWS: usize = 8192;

/// The signature that opens every binary COPY stream.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// Microseconds from 1970-01-01 (Arrow's epoch) to 2000-01-01
/// (PostgreSQL's).
const EPOCH_SHIFT_MICROS: i64 = 946_684_800_000_000;

/// Days from 1970-01-01 to 2000-01-01.
const EPOCH_SHIFT_DAYS: i32 = 10_957;

/// Whether refreshes from PostgreSQL read through binary COPY
/// (`PGACCEL_POSTGRES_COPY=off` reads through the table provider's rows
/// instead, for comparisons).
pub fn enabled() -> bool {
    std::env::var("PGACCEL_POSTGRES_COPY").map_or(true, |value| value != "off")
}

/// How one column's binary values become Arrow values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decode {
    Bool,
    /// The one-byte `"char"`.
    Char,
    Int2,
    Int4,
    Int8,
    Oid,
    Float4,
    Float8,
    Numeric {
        precision: u8,
        scale: i8,
    },
    Text,
    /// `char(n)`: trailing whitespace trimmed, as the provider's reader does.
    Bpchar,
    Uuid,
    Jsonb,
    Bytea,
    Date,
    Time,
    Timestamptz,
    Interval,
}

impl Decode {
    /// The decoder of a column PostgreSQL sends as `pg` and the acceleration
    /// holds as `arrow`; `None` for a pairing this reader does not handle.
    fn choose(pg: &Type, arrow: &DataType) -> Option<Decode> {
        if let Kind::Domain(base) = pg.kind() {
            return Decode::choose(base, arrow);
        }
        Some(match (pg.name(), arrow) {
            ("bool", DataType::Boolean) => Decode::Bool,
            ("char", DataType::Int8) => Decode::Char,
            ("int2", DataType::Int16) => Decode::Int2,
            ("int4", DataType::Int32) => Decode::Int4,
            ("int8", DataType::Int64) => Decode::Int8,
            ("oid", DataType::UInt32) => Decode::Oid,
            ("float4", DataType::Float32) => Decode::Float4,
            ("float8", DataType::Float64) => Decode::Float8,
            ("numeric", DataType::Decimal128(precision, scale)) => Decode::Numeric {
                precision: *precision,
                scale: *scale,
            },
            ("text" | "varchar" | "name" | "json", DataType::Utf8) => Decode::Text,
            ("bpchar", DataType::Utf8) => Decode::Bpchar,
            ("uuid", DataType::Utf8) => Decode::Uuid,
            ("jsonb", DataType::Utf8) => Decode::Jsonb,
            ("bytea", DataType::Binary) => Decode::Bytea,
            ("date", DataType::Date32) => Decode::Date,
            ("time", DataType::Time64(TimeUnit::Nanosecond)) => Decode::Time,
            ("timestamptz", DataType::Timestamp(TimeUnit::Nanosecond, Some(_))) => {
                Decode::Timestamptz
            }
            ("interval", DataType::Interval(IntervalUnit::MonthDayNano)) => Decode::Interval,
            _ => return None,
        })
    }
}

/// The decoders of `sql`'s result columns, if every one of them can be read
/// from binary COPY into the type `schema` gives it.
pub async fn plan(
    pool: &PostgresConnectionPool,
    sql: &str,
    schema: &SchemaRef,
) -> Result<Option<Vec<(String, DataType, Decode)>>> {
    let connection = pool
        .connect_direct()
        .await
        .map_err(|e| super::plan_error(&e))?;
    let statement = connection
        .conn
        .prepare(sql)
        .await
        .map_err(|e| super::plan_error(&e))?;
    if statement.columns().len() != schema.fields().len() {
        return Ok(None);
    }
    Ok(statement
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| {
            Decode::choose(column.type_(), field.data_type())
                .map(|decode| (field.name().clone(), field.data_type().clone(), decode))
        })
        .collect())
}

/// Reads one SELECT as binary COPY.
pub struct CopyExec {
    pool: Arc<PostgresConnectionPool>,
    sql: String,
    /// Each partition reads one range of pages, all in one snapshot.
    split: Option<Split>,
    columns: Arc<[(String, DataType, Decode)]>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for CopyExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CopyExec").field("sql", &self.sql).finish()
    }
}

impl CopyExec {
    /// `columns` as [`plan`] chose them for `sql`, whose rows have `schema`.
    pub fn new(
        pool: Arc<PostgresConnectionPool>,
        sql: String,
        schema: SchemaRef,
        columns: Vec<(String, DataType, Decode)>,
        split: Option<Split>,
    ) -> Self {
        let partitions = split.as_ref().map_or(1, |split| split.bounds.len() + 1);
        let properties = super::read_properties(schema, partitions);
        CopyExec {
            pool,
            sql,
            split,
            columns: columns.into(),
            properties,
        }
    }
}

impl DisplayAs for CopyExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CopyExec: COPY ({}) TO STDOUT (FORMAT binary)", self.sql)
    }
}

impl ExecutionPlan for CopyExec {
    fn name(&self) -> &str {
        "CopyExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = self.schema();
        let (sql, leader) = match &self.split {
            None => (self.sql.clone(), None),
            Some(split) => {
                let from = partition.checked_sub(1).map(|index| split.bounds[index]);
                let to = split.bounds.get(partition).copied();
                let sql = within_pages(&self.sql, from, to)?;
                (sql, Some(Arc::clone(&split.leader)))
            }
        };
        let reading = Reading {
            pool: Arc::clone(&self.pool),
            sql,
            leader,
            copy: None,
            tuples: Tuples::new(&self.columns),
            schema: Arc::clone(&schema),
            finished: false,
        };
        let batches = futures::stream::try_unfold(reading, Reading::next_batch);
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}

type CopyStream = Pin<Box<tokio_postgres::CopyOutStream>>;

type Connection = datafusion_table_providers::postgres::conn::PostgresPooledConnection;

/// A pooled connection that may be inside a transaction: one dropped before
/// its transaction ended (a read that failed or was cancelled) is rolled
/// back before the pool hands it out again.
struct Held {
    connection: Option<Connection>,
    in_transaction: bool,
}

impl Held {
    /// Commits the (read-only) transaction, if any, and returns the
    /// connection to the pool.
    async fn release(mut self) -> Result<()> {
        if let Some(connection) = self.connection.take()
            && self.in_transaction
        {
            connection
                .batch_execute("COMMIT")
                .await
                .map_err(|e| super::plan_error(&e))?;
        }
        Ok(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take()
            && self.in_transaction
        {
            roll_back(connection);
        }
    }
}

/// Ends `connection`'s transaction in the background; it goes back to the
/// pool once PostgreSQL has answered (after any COPY still under way).
fn roll_back(connection: Connection) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(async move {
            let _ = connection.batch_execute("ROLLBACK").await;
        });
    }
}

/// A COPY being read: its connection (held until the stream ends) and the
/// rows decoded so far.
struct Reading {
    pool: Arc<PostgresConnectionPool>,
    sql: String,
    /// For one range of a split read: the snapshot every range reads.
    leader: Option<Arc<Leader>>,
    copy: Option<(Held, CopyStream)>,
    tuples: Tuples,
    schema: SchemaRef,
    finished: bool,
}

impl Reading {
    async fn open(&self) -> Result<(Held, CopyStream)> {
        let connection = self
            .pool
            .connect_direct()
            .await
            .map_err(|e| super::plan_error(&e))?
            .conn;
        let mut held = Held {
            connection: Some(connection),
            in_transaction: false,
        };
        if let Some(leader) = &self.leader {
            held.in_transaction = true;
            let begin = format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{}'",
                leader.snapshot
            );
            let imported = held
                .connection
                .as_ref()
                .expect("held above")
                .batch_execute(&begin)
                .await;
            // Whether or not it took, this range no longer needs the
            // leader's transaction.
            leader.imported().await;
            imported.map_err(|e| super::plan_error(&e))?;
        }
        let copy = format!("COPY ({}) TO STDOUT (FORMAT binary)", self.sql);
        let stream = held
            .connection
            .as_ref()
            .expect("held above")
            .copy_out(copy.as_str())
            .await
            .map_err(|e| super::plan_error(&e))?;
        Ok((held, Box::pin(stream)))
    }

    async fn next_batch(mut self) -> Result<Option<(RecordBatch, Reading)>> {
        if self.finished {
            return Ok(None);
        }
        let (held, mut stream) = match self.copy.take() {
            Some(open) => open,
            None => self.open().await?,
        };
        loop {
            match stream.next().await {
                Some(chunk) => {
                    let chunk = chunk.map_err(|e| super::plan_error(&e))?;
                    self.tuples
                        .feed(chunk)
                        .map_err(DataFusionError::Execution)?;
                    if self.tuples.rows >= BATCH_ROWS {
                        let batch = self.tuples.batch(&self.schema)?;
                        self.copy = Some((held, stream));
                        return Ok(Some((batch, self)));
                    }
                }
                None => {
                    self.tuples.end().map_err(DataFusionError::Execution)?;
                    self.finished = true;
                    drop(stream);
                    held.release().await?;
                    if self.tuples.rows == 0 {
                        return Ok(None);
                    }
                    let batch = self.tuples.batch(&self.schema)?;
                    return Ok(Some((batch, self)));
                }
            }
        }
    }
}

/// The transaction whose snapshot every range of a split read imports,
/// so that together they read the table as of one instant. It stays open
/// until the last range has imported it.
struct Leader {
    connection: std::sync::Mutex<Option<Connection>>,
    snapshot: String,
    /// Ranges yet to import the snapshot.
    waiting: std::sync::atomic::AtomicUsize,
}

impl Leader {
    async fn imported(&self) {
        use std::sync::atomic::Ordering;
        if self.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
            let connection = self.connection.lock().expect("not poisoned").take();
            if let Some(connection) = connection {
                let _ = connection.batch_execute("COMMIT").await;
            }
        }
    }
}

impl Drop for Leader {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.get_mut().expect("not poisoned").take() {
            roll_back(connection);
        }
    }
}

/// A read split into ranges of the table's pages (`ctid`), read by
/// parallel COPYs in one snapshot.
pub struct Split {
    leader: Arc<Leader>,
    /// The first page of each range after the first.
    bounds: Vec<u64>,
}

/// When and how a large table's read is split into ranges of its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitPolicy {
    /// How many ranges (1: never split).
    pub ranges: usize,
    /// The fewest pages (8 kB each) a table must have to be split.
    pub min_pages: i64,
}

impl SplitPolicy {
    /// Half the host's cores, at most 4, for tables of 128 MB or more:
    /// the ranges' COPYs and decoding take a core each, on pgaccel's host
    /// and the source's, and the other half stays with the queries served
    /// meanwhile (on 2 cores a read is never split). Below 128 MB the
    /// ranges' extra connections and planning would cost more than they
    /// save. `PGACCEL_POSTGRES_COPY_RANGES` sets the number of ranges (1
    /// never splits).
    pub fn from_env() -> Self {
        let ranges = std::env::var("PGACCEL_POSTGRES_COPY_RANGES")
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| {
                (std::thread::available_parallelism()
                    .map(usize::from)
                    .unwrap_or(1)
                    / 2)
                .clamp(1, 4)
            });
        SplitPolicy {
            ranges,
            min_pages: 16_384,
        }
    }
}

/// Splits the read of `table` (a quoted, qualified name) into ranges of
/// its pages when it is a large plain table, and opens the transaction
/// whose snapshot they share; `None` reads it with one COPY.
pub async fn split(
    pool: &PostgresConnectionPool,
    table: &str,
    policy: SplitPolicy,
) -> Result<Option<Split>> {
    let ranges = policy.ranges;
    if ranges < 2 {
        return Ok(None);
    }
    let connection = pool
        .connect_direct()
        .await
        .map_err(|e| super::plan_error(&e))?
        .conn;
    let row = connection
        .query_opt(
            "SELECT c.relkind::text, pg_relation_size(c.oid) / current_setting('block_size')::int8 \
             FROM pg_class c WHERE c.oid = to_regclass($1)",
            &[&table],
        )
        .await;
    // A table whose size cannot be read is read with one COPY, which
    // reports what is wrong with it.
    let Ok(Some(row)) = row else {
        return Ok(None);
    };
    let (kind, pages): (String, i64) = (row.get(0), row.get(1));
    if !matches!(kind.as_str(), "r" | "m") || pages < policy.min_pages.max(ranges as i64) {
        return Ok(None);
    }
    let mut held = Held {
        connection: Some(connection),
        in_transaction: true,
    };
    let leader = held.connection.as_ref().expect("held above");
    let exported = async {
        leader
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await?;
        leader.query_one("SELECT pg_export_snapshot()", &[]).await
    };
    // A server that cannot export a snapshot (a standby in recovery, for
    // one) is read with one COPY.
    let snapshot: String = match exported.await {
        Ok(row) => row.get(0),
        Err(error) => {
            tracing::debug!(
                table,
                "reading with one COPY: no snapshot to share: {}",
                super::with_causes(&error)
            );
            return Ok(None);
        }
    };
    let pages = pages as u64;
    let bounds = (1..ranges as u64)
        .map(|range| pages * range / ranges as u64)
        .collect();
    let leader = Leader {
        connection: std::sync::Mutex::new(held.connection.take()),
        snapshot,
        waiting: std::sync::atomic::AtomicUsize::new(ranges),
    };
    Ok(Some(Split {
        leader: Arc::new(leader),
        bounds,
    }))
}

/// `sql` (one SELECT of one table) restricted to the pages from `from`
/// (inclusive) to `to` (exclusive); an open end reads to the table's end,
/// pages added since its size was read included.
fn within_pages(sql: &str, from: Option<u64>, to: Option<u64>) -> Result<String> {
    use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, SetExpr, Statement};
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    let bounds: Vec<String> = [
        from.map(|page| format!("ctid >= '({page},0)'::tid")),
        to.map(|page| format!("ctid < '({page},0)'::tid")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if bounds.is_empty() {
        return Ok(sql.to_owned());
    }
    let parse_error = |e: datafusion::sql::sqlparser::parser::ParserError| {
        DataFusionError::Plan(format!("cannot split the read {sql}: {e}"))
    };
    let bound = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&bounds.join(" AND "))
        .and_then(|mut parser| parser.parse_expr())
        .map_err(parse_error)?;
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).map_err(parse_error)?;
    let [Statement::Query(query)] = statements.as_mut_slice() else {
        return Err(DataFusionError::Plan(format!(
            "cannot split the read {sql}"
        )));
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(DataFusionError::Plan(format!(
            "cannot split the read {sql}"
        )));
    };
    select.selection = Some(match select.selection.take() {
        Some(filter) => Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(filter))),
            op: BinaryOperator::And,
            right: Box::new(bound),
        },
        None => bound,
    });
    Ok(statements[0].to_string())
}

/// The decoder of a binary COPY stream: the rows of the batch being built.
struct Tuples {
    columns: Vec<Column>,
    names: Vec<String>,
    /// The start of a tuple (or of the header) that a chunk cut short.
    pending: BytesMut,
    header_read: bool,
    trailer_read: bool,
    rows: usize,
}

impl Tuples {
    fn new(columns: &[(String, DataType, Decode)]) -> Self {
        Tuples {
            columns: columns
                .iter()
                .map(|(_, data_type, decode)| Column::new(*decode, data_type))
                .collect(),
            names: columns.iter().map(|(name, _, _)| name.clone()).collect(),
            pending: BytesMut::new(),
            header_read: false,
            trailer_read: false,
            rows: 0,
        }
    }

    /// Decodes every complete tuple of `chunk` (after what an earlier chunk
    /// left over).
    fn feed(&mut self, chunk: Bytes) -> std::result::Result<(), String> {
        if self.pending.is_empty() {
            let used = self.decode(&chunk)?;
            self.pending.extend_from_slice(&chunk[used..]);
        } else {
            self.pending.extend_from_slice(&chunk);
            let pending = std::mem::take(&mut self.pending);
            let used = self.decode(&pending)?;
            self.pending = pending;
            self.pending.advance(used);
        }
        Ok(())
    }

    /// Checks that the stream ended where it should.
    fn end(&self) -> std::result::Result<(), String> {
        if !self.trailer_read || !self.pending.is_empty() {
            return Err("the COPY stream from PostgreSQL ended in the middle of a row".into());
        }
        Ok(())
    }

    /// Decodes the complete tuples at the start of `data`; returns how many
    /// bytes they took.
    fn decode(&mut self, data: &[u8]) -> std::result::Result<usize, String> {
        let mut at = 0;
        if !self.header_read {
            // Signature, flags, then the header extension's length and bytes.
            let Some(extension) = data.get(15..19) else {
                return Ok(0);
            };
            if &data[..11] != SIGNATURE {
                return Err(
                    "PostgreSQL's COPY stream does not start with the binary signature".into(),
                );
            }
            let extension = be_i32(extension) as usize;
            if data.len() < 19 + extension {
                return Ok(0);
            }
            at = 19 + extension;
            self.header_read = true;
        }
        while !self.trailer_read {
            let Some(count) = data.get(at..at + 2) else {
                break;
            };
            let count = i16::from_be_bytes([count[0], count[1]]);
            if count == -1 {
                self.trailer_read = true;
                at += 2;
                break;
            }
            if count as usize != self.columns.len() {
                return Err(format!(
                    "a row of PostgreSQL's COPY stream has {count} fields, the read expects {}",
                    self.columns.len()
                ));
            }
            // The tuple is decoded only once it is whole, so that a column
            // never holds half a row.
            let Some(end) = tuple_end(data, at + 2, self.columns.len()) else {
                break;
            };
            let mut field = at + 2;
            for (index, column) in self.columns.iter_mut().enumerate() {
                let length = be_i32(&data[field..field + 4]);
                field += 4;
                let value = if length < 0 {
                    None
                } else {
                    let value = &data[field..field + length as usize];
                    field += length as usize;
                    Some(value)
                };
                column
                    .append(value)
                    .map_err(|message| format!("column \"{}\": {message}", self.names[index]))?;
            }
            debug_assert_eq!(field, end);
            self.rows += 1;
            at = end;
        }
        Ok(at)
    }

    /// The rows decoded so far, as one batch; the builders start over.
    fn batch(&mut self, schema: &SchemaRef) -> Result<RecordBatch> {
        let columns = self
            .columns
            .iter_mut()
            .zip(&self.names)
            .map(|(column, name)| {
                column.finish().map_err(|message| {
                    DataFusionError::Execution(format!("column \"{name}\": {message}"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.rows = 0;
        Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
    }
}

/// The end of the tuple whose fields start at `at`, if `data` holds all of
/// it.
fn tuple_end(data: &[u8], mut at: usize, fields: usize) -> Option<usize> {
    for _ in 0..fields {
        let length = be_i32(data.get(at..at + 4)?);
        at += 4;
        if length > 0 {
            at += length as usize;
        }
    }
    (at <= data.len()).then_some(at)
}

fn be_i32(bytes: &[u8]) -> i32 {
    i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn be_i64(bytes: &[u8]) -> i64 {
    i64::from_be_bytes(
        bytes
            .try_into()
            .expect("eight bytes, checked by the caller"),
    )
}

/// One column's builder.
enum Column {
    Bool(BooleanBuilder),
    Char(Int8Builder),
    Int2(Int16Builder),
    Int4(Int32Builder),
    Int8(Int64Builder),
    Oid(UInt32Builder),
    Float4(Float32Builder),
    Float8(Float64Builder),
    Numeric {
        builder: Decimal128Builder,
        precision: u8,
        scale: i8,
    },
    /// UTF-8 checked once per batch, when it becomes a string array.
    Text(BinaryBuilder),
    Bpchar(StringBuilder),
    Uuid(StringBuilder),
    /// A version byte, then the text.
    Jsonb(BinaryBuilder),
    Bytea(BinaryBuilder),
    Date(Date32Builder),
    Time(Time64NanosecondBuilder),
    Timestamptz {
        builder: TimestampNanosecondBuilder,
        zone: Arc<str>,
    },
    Interval(IntervalMonthDayNanoBuilder),
}

impl Column {
    fn new(decode: Decode, data_type: &DataType) -> Column {
        match decode {
            Decode::Bool => Column::Bool(BooleanBuilder::with_capacity(BATCH_ROWS)),
            Decode::Char => Column::Char(Int8Builder::with_capacity(BATCH_ROWS)),
            Decode::Int2 => Column::Int2(Int16Builder::with_capacity(BATCH_ROWS)),
            Decode::Int4 => Column::Int4(Int32Builder::with_capacity(BATCH_ROWS)),
            Decode::Int8 => Column::Int8(Int64Builder::with_capacity(BATCH_ROWS)),
            Decode::Oid => Column::Oid(UInt32Builder::with_capacity(BATCH_ROWS)),
            Decode::Float4 => Column::Float4(Float32Builder::with_capacity(BATCH_ROWS)),
            Decode::Float8 => Column::Float8(Float64Builder::with_capacity(BATCH_ROWS)),
            Decode::Numeric { precision, scale } => Column::Numeric {
                builder: Decimal128Builder::with_capacity(BATCH_ROWS),
                precision,
                scale,
            },
            Decode::Text => Column::Text(BinaryBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 16)),
            Decode::Bpchar => {
                Column::Bpchar(StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 8))
            }
            Decode::Uuid => Column::Uuid(StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 36)),
            Decode::Jsonb => Column::Jsonb(BinaryBuilder::new()),
            Decode::Bytea => Column::Bytea(BinaryBuilder::new()),
            Decode::Date => Column::Date(Date32Builder::with_capacity(BATCH_ROWS)),
            Decode::Time => Column::Time(Time64NanosecondBuilder::with_capacity(BATCH_ROWS)),
            Decode::Timestamptz => Column::Timestamptz {
                builder: TimestampNanosecondBuilder::with_capacity(BATCH_ROWS),
                zone: match data_type {
                    DataType::Timestamp(_, Some(zone)) => Arc::clone(zone),
                    _ => Arc::from("UTC"),
                },
            },
            Decode::Interval => {
                Column::Interval(IntervalMonthDayNanoBuilder::with_capacity(BATCH_ROWS))
            }
        }
    }

    fn append(&mut self, value: Option<&[u8]>) -> std::result::Result<(), String> {
        let Some(value) = value else {
            self.append_null();
            return Ok(());
        };
        match self {
            Column::Bool(builder) => builder.append_value(fixed::<1>(value)?[0] != 0),
            Column::Char(builder) => builder.append_value(fixed::<1>(value)?[0] as i8),
            Column::Int2(builder) => builder.append_value(i16::from_be_bytes(fixed(value)?)),
            Column::Int4(builder) => builder.append_value(i32::from_be_bytes(fixed(value)?)),
            Column::Int8(builder) => builder.append_value(i64::from_be_bytes(fixed(value)?)),
            Column::Oid(builder) => builder.append_value(u32::from_be_bytes(fixed(value)?)),
            Column::Float4(builder) => builder.append_value(f32::from_be_bytes(fixed(value)?)),
            Column::Float8(builder) => builder.append_value(f64::from_be_bytes(fixed(value)?)),
            Column::Numeric {
                builder,
                precision,
                scale,
            } => builder.append_value(numeric(value, *precision, *scale)?),
            Column::Text(builder) | Column::Bytea(builder) => builder.append_value(value),
            Column::Bpchar(builder) => builder.append_value(utf8(value)?.trim_end()),
            Column::Uuid(builder) => {
                let mut text = [0; uuid::fmt::Hyphenated::LENGTH];
                let uuid = uuid::Uuid::from_bytes(fixed(value)?);
                builder.append_value(uuid.hyphenated().encode_lower(&mut text));
            }
            Column::Jsonb(builder) => match value.split_first() {
                Some((1, text)) => builder.append_value(text),
                _ => return Err("a jsonb value of an unknown binary version".into()),
            },
            Column::Date(builder) => {
                let days = i32::from_be_bytes(fixed(value)?);
                if days == i32::MAX || days == i32::MIN {
                    return Err("the date 'infinity' has no Arrow equivalent".into());
                }
                builder.append_value(days.checked_add(EPOCH_SHIFT_DAYS).ok_or_else(|| {
                    format!("the date {days} days after 2000-01-01 is out of range")
                })?);
            }
            Column::Time(builder) => {
                let micros = i64::from_be_bytes(fixed(value)?);
                builder.append_value(micros * 1_000);
            }
            Column::Timestamptz { builder, .. } => {
                let micros = i64::from_be_bytes(fixed(value)?);
                if micros == i64::MAX || micros == i64::MIN {
                    return Err("the timestamp 'infinity' has no Arrow equivalent".into());
                }
                let nanos = micros
                    .checked_add(EPOCH_SHIFT_MICROS)
                    .and_then(|micros| micros.checked_mul(1_000))
                    .ok_or("a timestamp outside the years 1677 to 2262, which nanosecond timestamps hold")?;
                builder.append_value(nanos);
            }
            Column::Interval(builder) => {
                let value: [u8; 16] = fixed(value)?;
                let micros = be_i64(&value[..8]);
                let days = be_i32(&value[8..12]);
                let months = be_i32(&value[12..]);
                let nanos = micros
                    .checked_mul(1_000)
                    .ok_or("an interval whose time part exceeds 292 years in nanoseconds")?;
                builder.append_value(IntervalMonthDayNano::new(months, days, nanos));
            }
        }
        Ok(())
    }

    fn append_null(&mut self) {
        match self {
            Column::Bool(builder) => builder.append_null(),
            Column::Char(builder) => builder.append_null(),
            Column::Int2(builder) => builder.append_null(),
            Column::Int4(builder) => builder.append_null(),
            Column::Int8(builder) => builder.append_null(),
            Column::Oid(builder) => builder.append_null(),
            Column::Float4(builder) => builder.append_null(),
            Column::Float8(builder) => builder.append_null(),
            Column::Numeric { builder, .. } => builder.append_null(),
            Column::Text(builder) | Column::Jsonb(builder) | Column::Bytea(builder) => {
                builder.append_null()
            }
            Column::Bpchar(builder) | Column::Uuid(builder) => builder.append_null(),
            Column::Date(builder) => builder.append_null(),
            Column::Time(builder) => builder.append_null(),
            Column::Timestamptz { builder, .. } => builder.append_null(),
            Column::Interval(builder) => builder.append_null(),
        }
    }

    fn finish(&mut self) -> std::result::Result<ArrayRef, String> {
        Ok(match self {
            Column::Bool(builder) => fitted(builder.finish()),
            Column::Char(builder) => fitted(builder.finish()),
            Column::Int2(builder) => fitted(builder.finish()),
            Column::Int4(builder) => fitted(builder.finish()),
            Column::Int8(builder) => fitted(builder.finish()),
            Column::Oid(builder) => fitted(builder.finish()),
            Column::Float4(builder) => fitted(builder.finish()),
            Column::Float8(builder) => fitted(builder.finish()),
            Column::Numeric {
                builder,
                precision,
                scale,
            } => fitted(
                builder
                    .finish()
                    .with_precision_and_scale(*precision, *scale)
                    .map_err(|e| e.to_string())?,
            ),
            Column::Text(builder) | Column::Jsonb(builder) => fitted(
                StringArray::try_from_binary(builder.finish())
                    .map_err(|_| "PostgreSQL sent text that is not valid UTF-8".to_owned())?,
            ),
            Column::Bytea(builder) => fitted(builder.finish()),
            Column::Bpchar(builder) | Column::Uuid(builder) => fitted(builder.finish()),
            Column::Date(builder) => fitted(builder.finish()),
            Column::Time(builder) => fitted(builder.finish()),
            Column::Timestamptz { builder, zone } => {
                fitted(builder.finish().with_timezone(Arc::clone(zone)))
            }
            Column::Interval(builder) => fitted(builder.finish()),
        })
    }
}

/// A fixed-width value, checked for its width.
fn fixed<const N: usize>(value: &[u8]) -> std::result::Result<[u8; N], String> {
    value.try_into().map_err(|_| {
        format!(
            "a binary value of {} bytes where {N} were expected",
            value.len()
        )
    })
}

fn utf8(value: &[u8]) -> std::result::Result<&str, String> {
    std::str::from_utf8(value).map_err(|_| "PostgreSQL sent text that is not valid UTF-8".into())
}

/// A binary `numeric` (digit count, weight, sign, display scale, then base
/// 10,000 digits) as the unscaled value of a `Decimal128(precision,
/// scale)`.
fn numeric(value: &[u8], precision: u8, scale: i8) -> std::result::Result<i128, String> {
    let word = |at: usize| u16::from_be_bytes([value[at], value[at + 1]]);
    if value.len() < 8 {
        return Err("a numeric value shorter than its header".into());
    }
    let digits = usize::from(word(0));
    let weight = i32::from(word(2) as i16);
    let negative = match word(4) {
        0x0000 => false,
        0x4000 => true,
        0xC000 => return Err("the numeric NaN has no decimal equivalent".into()),
        0xD000 | 0xF000 => return Err("a numeric infinity has no decimal equivalent".into()),
        sign => return Err(format!("a numeric value with the unknown sign {sign:#x}")),
    };
    if value.len() != 8 + 2 * digits {
        return Err("a numeric value whose length does not match its digit count".into());
    }
    let too_wide = || format!("a numeric value wider than numeric({precision},{scale})");
    let mut unscaled: i128 = 0;
    for index in 0..digits {
        let digit = i128::from(word(8 + 2 * index));
        unscaled = unscaled
            .checked_mul(10_000)
            .and_then(|value| value.checked_add(digit))
            .ok_or_else(too_wide)?;
    }
    // The last digit stands for 10,000^(weight - digits + 1).
    let exponent = 4 * (weight - digits as i32 + 1) + i32::from(scale);
    if unscaled != 0 {
        if exponent >= 0 {
            unscaled = 10i128
                .checked_pow(exponent as u32)
                .and_then(|factor| unscaled.checked_mul(factor))
                .ok_or_else(too_wide)?;
        } else {
            let divisor = 10i128.checked_pow(exponent.unsigned_abs());
            match divisor {
                Some(divisor) if unscaled % divisor == 0 => unscaled /= divisor,
                _ => {
                    return Err(format!(
                        "a numeric value with more decimal places than numeric({precision},{scale})"
                    ));
                }
            }
        }
    }
    if unscaled >= 10i128.pow(u32::from(precision)) {
        return Err(too_wide());
    }
    Ok(if negative { -unscaled } else { unscaled })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The binary form PostgreSQL sends for a numeric.
    fn binary_numeric(weight: i16, sign: u16, scale: u16, digits: &[u16]) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend((digits.len() as u16).to_be_bytes());
        bytes.extend(weight.to_be_bytes());
        bytes.extend(sign.to_be_bytes());
        bytes.extend(scale.to_be_bytes());
        for digit in digits {
            bytes.extend(digit.to_be_bytes());
        }
        bytes
    }

    #[test]
    fn numerics_become_the_unscaled_value_at_the_column_scale() {
        // 12345.67: digits 1, 2345, 6700 with weight 1.
        let value = binary_numeric(1, 0, 2, &[1, 2345, 6700]);
        assert_eq!(numeric(&value, 15, 2), Ok(1_234_567));
        assert_eq!(numeric(&value, 15, 4), Ok(123_456_700));
        // -0.05: one digit 500 at weight -1.
        let value = binary_numeric(-1, 0x4000, 2, &[500]);
        assert_eq!(numeric(&value, 15, 2), Ok(-5));
        // 20000: one digit 2 at weight 1 (trailing zero digits are left out).
        let value = binary_numeric(1, 0, 0, &[2]);
        assert_eq!(numeric(&value, 10, 2), Ok(2_000_000));
        // Zero has no digits.
        assert_eq!(numeric(&binary_numeric(0, 0, 2, &[]), 15, 2), Ok(0));
        let more_places = binary_numeric(-1, 0, 3, &[1230]);
        assert_eq!(
            numeric(&more_places, 15, 2).unwrap_err(),
            "a numeric value with more decimal places than numeric(15,2)"
        );
        assert_eq!(
            numeric(&binary_numeric(2, 0, 0, &[1]), 5, 0).unwrap_err(),
            "a numeric value wider than numeric(5,0)"
        );
        assert_eq!(
            numeric(&binary_numeric(0, 0xC000, 0, &[]), 5, 0).unwrap_err(),
            "the numeric NaN has no decimal equivalent"
        );
    }

    /// A binary COPY stream of `rows`, each a list of fields.
    fn stream(rows: &[Vec<Option<Vec<u8>>>]) -> Vec<u8> {
        let mut bytes = SIGNATURE.to_vec();
        bytes.extend(0i32.to_be_bytes());
        bytes.extend(4i32.to_be_bytes());
        bytes.extend(b"ext!");
        for row in rows {
            bytes.extend((row.len() as i16).to_be_bytes());
            for field in row {
                match field {
                    None => bytes.extend((-1i32).to_be_bytes()),
                    Some(value) => {
                        bytes.extend((value.len() as i32).to_be_bytes());
                        bytes.extend(value);
                    }
                }
            }
        }
        bytes.extend((-1i16).to_be_bytes());
        bytes
    }

    #[test]
    fn a_range_of_pages_is_and_ed_with_the_read_filters() {
        let sql = r#"SELECT "a" FROM "s"."t" WHERE ("a" > 1 OR "a" IS NULL)"#;
        assert_eq!(
            within_pages(sql, Some(10), Some(20)).unwrap(),
            r#"SELECT "a" FROM "s"."t" WHERE (("a" > 1 OR "a" IS NULL)) AND ctid >= '(10,0)'::tid AND ctid < '(20,0)'::tid"#
        );
        assert_eq!(
            within_pages(r#"SELECT "a" FROM "s"."t""#, None, Some(7)).unwrap(),
            r#"SELECT "a" FROM "s"."t" WHERE ctid < '(7,0)'::tid"#
        );
        assert_eq!(within_pages(sql, None, None).unwrap(), sql);
    }

    #[test]
    fn a_stream_cut_anywhere_decodes_to_the_same_rows() {
        use datafusion::arrow::array::{AsArray, Int64Array};
        use datafusion::arrow::datatypes::{Field, Int64Type, Schema};
        let columns = vec![
            ("id".to_owned(), DataType::Int64, Decode::Int8),
            ("name".to_owned(), DataType::Utf8, Decode::Bpchar),
        ];
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let rows: Vec<Vec<Option<Vec<u8>>>> = (0..5i64)
            .map(|id| {
                let name = (id != 3).then(|| format!("n{id}   ").into_bytes());
                vec![Some(id.to_be_bytes().to_vec()), name]
            })
            .collect();
        let bytes = stream(&rows);
        for size in [1, 2, 3, 7, 19, 20, bytes.len()] {
            let mut tuples = Tuples::new(&columns);
            for chunk in bytes.chunks(size) {
                tuples.feed(Bytes::copy_from_slice(chunk)).unwrap();
            }
            tuples.end().unwrap();
            let batch = tuples.batch(&schema).unwrap();
            assert_eq!(
                batch.column(0).as_primitive::<Int64Type>(),
                &Int64Array::from(vec![0, 1, 2, 3, 4]),
                "chunks of {size} bytes"
            );
            let names = batch.column(1).as_string::<i32>();
            let texts: Vec<Option<&str>> = names.iter().collect();
            assert_eq!(
                texts,
                [Some("n0"), Some("n1"), Some("n2"), None, Some("n4")]
            );
            // The builder's room for a whole batch is not kept.
            assert!(
                names.values().capacity() < 1024,
                "{} bytes kept for 8 bytes of text",
                names.values().capacity()
            );
        }
        // A stream that stops in the middle of a row.
        let mut tuples = Tuples::new(&columns);
        tuples
            .feed(Bytes::copy_from_slice(&bytes[..bytes.len() - 5]))
            .unwrap();
        assert_eq!(
            tuples.end().unwrap_err(),
            "the COPY stream from PostgreSQL ended in the middle of a row"
        );
    }
}
