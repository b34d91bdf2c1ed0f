//! Full reads of a MySQL or MariaDB table with each row's values appended
//! straight to Arrow builders.
//!
//! The table provider converts every value of a read through mysql_async's
//! owned conversions: each string and decimal is copied out of the row, and
//! each decimal parsed into a heap-allocated `BigDecimal` before it becomes
//! an `i128`. Here the same SELECT (the provider's, with its projection,
//! filters and limit) runs on the same protocol, and each value is read in
//! place from the row: integers and floats as they are, decimals parsed from
//! their digits, text checked as UTF-8 and appended. Written by hand because
//! the provider has no hook for its row conversion.
//!
//! Each column produces exactly the array the provider's reader would;
//! [`Decode::choose`] refuses any column it does not know, and the read then
//! goes through the provider as before.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Date32Builder, Decimal128Builder, Float32Builder, Float64Builder, Int8Builder,
    Int16Builder, Int32Builder, Int64Builder, LargeStringBuilder, StringBuilder, UInt8Builder,
    UInt16Builder, UInt32Builder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use datafusion_table_providers::sql::db_connection_pool::mysqlpool::MySQLConnectionPool;
use datafusion_table_providers::sql::sql_provider_datafusion::SqlTable;
use mysql_async::consts::{ColumnFlags, ColumnType};
use mysql_async::prelude::Queryable;
use mysql_async::{Column, Value};

use super::fitted;

/// Rows per batch.
const BATCH_ROWS: usize = 8192;

/// Whether refreshes from MySQL decode rows in place
/// (`PGACCEL_MYSQL_DIRECT=off` reads through the table provider's
/// conversion instead, for comparisons).
pub fn enabled() -> bool {
    std::env::var("PGACCEL_MYSQL_DIRECT").map_or(true, |value| value != "off")
}

/// How one column's values become Arrow values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decode {
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float32,
    Float64,
    Decimal { precision: u8, scale: i8 },
    Text,
    LargeText,
    Date,
}

impl Decode {
    /// The decoder of a result column `column` that the provider gives the
    /// type `arrow`; `None` for one this reader leaves to the provider.
    fn choose(column: &Column, arrow: &DataType) -> Option<Decode> {
        use ColumnType::*;
        let flags = column.flags();
        let unsigned = flags.contains(ColumnFlags::UNSIGNED_FLAG);
        // The provider reads a column it types as text as text, whatever
        // its collation; ENUM and SET columns it types otherwise.
        let text = !flags.intersects(ColumnFlags::ENUM_FLAG | ColumnFlags::SET_FLAG);
        Some(match (column.column_type(), arrow) {
            (MYSQL_TYPE_TINY, DataType::Int8) if !unsigned => Decode::Int8,
            (MYSQL_TYPE_TINY, DataType::UInt8) if unsigned => Decode::UInt8,
            (MYSQL_TYPE_SHORT, DataType::Int16) if !unsigned => Decode::Int16,
            (MYSQL_TYPE_SHORT, DataType::UInt16) if unsigned => Decode::UInt16,
            (MYSQL_TYPE_LONG | MYSQL_TYPE_INT24, DataType::Int32) if !unsigned => Decode::Int32,
            (MYSQL_TYPE_LONG | MYSQL_TYPE_INT24, DataType::UInt32) if unsigned => Decode::UInt32,
            (MYSQL_TYPE_LONGLONG, DataType::Int64) if !unsigned => Decode::Int64,
            (MYSQL_TYPE_LONGLONG, DataType::UInt64) if unsigned => Decode::UInt64,
            (MYSQL_TYPE_FLOAT, DataType::Float32) => Decode::Float32,
            (MYSQL_TYPE_DOUBLE, DataType::Float64) => Decode::Float64,
            (
                MYSQL_TYPE_NEWDECIMAL | MYSQL_TYPE_DECIMAL,
                DataType::Decimal128(precision, scale),
            ) => Decode::Decimal {
                precision: *precision,
                scale: *scale,
            },
            (MYSQL_TYPE_VAR_STRING | MYSQL_TYPE_STRING | MYSQL_TYPE_BLOB, DataType::Utf8)
                if text =>
            {
                Decode::Text
            }
            (MYSQL_TYPE_VARCHAR | MYSQL_TYPE_BLOB, DataType::LargeUtf8) if text => {
                Decode::LargeText
            }
            (MYSQL_TYPE_DATE, DataType::Date32) => Decode::Date,
            _ => return None,
        })
    }
}

/// The provider's table, read through [`MysqlReadExec`] wherever every
/// column of a read decodes; otherwise through the provider itself.
pub struct DirectTable {
    provider: Arc<dyn TableProvider>,
    /// The provider's own SQL generation, for the SELECT a scan sends.
    sql: SqlTable<mysql_async::Conn, &'static (dyn mysql_async::prelude::ToValue + Sync)>,
    pool: Arc<MySQLConnectionPool>,
}

impl fmt::Debug for DirectTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectTable")
            .field("provider", &self.provider)
            .finish()
    }
}

impl DirectTable {
    pub fn new(
        provider: Arc<dyn TableProvider>,
        pool: Arc<MySQLConnectionPool>,
        reference: datafusion::common::TableReference,
    ) -> Self {
        let dyn_pool: Arc<
            dyn datafusion_table_providers::sql::db_connection_pool::DbConnectionPool<
                    mysql_async::Conn,
                    &'static (dyn mysql_async::prelude::ToValue + Sync),
                > + Send
                + Sync,
        > = Arc::clone(&pool) as _;
        let sql = SqlTable::new_with_schema("mysql", &dyn_pool, provider.schema(), reference)
            .with_dialect(Arc::new(
                datafusion::sql::unparser::dialect::MySqlDialect {},
            ));
        DirectTable {
            provider,
            sql,
            pool,
        }
    }
}

#[async_trait::async_trait]
impl TableProvider for DirectTable {
    fn schema(&self) -> SchemaRef {
        self.provider.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.provider.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // As the provider sends it: it strips double quotes.
        let sql = self
            .sql
            .scan_to_sql(projection, filters, limit)?
            .replace('"', "");
        let schema = match projection {
            Some(indices) => Arc::new(self.schema().project(indices)?),
            None => self.schema(),
        };
        match plan(&self.pool, &sql, &schema).await? {
            Some(columns) => Ok(Arc::new(MysqlReadExec::new(
                Arc::clone(&self.pool),
                sql,
                schema,
                columns,
            ))),
            None => self.provider.scan(state, projection, filters, limit).await,
        }
    }
}

/// The decoders of `sql`'s result columns, if every one of them decodes
/// into the type `schema` gives it.
async fn plan(
    pool: &MySQLConnectionPool,
    sql: &str,
    schema: &SchemaRef,
) -> Result<Option<Vec<(String, Decode)>>> {
    let connection = pool
        .connect_direct()
        .await
        .map_err(|e| super::plan_error(&e))?;
    let mut conn = connection.conn.lock().await;
    let statement = conn.prep(sql).await.map_err(|e| super::plan_error(&e))?;
    let columns = statement.columns();
    if columns.len() != schema.fields().len() {
        return Ok(None);
    }
    Ok(columns
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| {
            Decode::choose(column, field.data_type()).map(|decode| (field.name().clone(), decode))
        })
        .collect())
}

/// Reads one SELECT, decoding its rows in place.
struct MysqlReadExec {
    pool: Arc<MySQLConnectionPool>,
    sql: String,
    columns: Arc<[(String, Decode)]>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for MysqlReadExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MysqlReadExec")
            .field("sql", &self.sql)
            .finish()
    }
}

impl MysqlReadExec {
    fn new(
        pool: Arc<MySQLConnectionPool>,
        sql: String,
        schema: SchemaRef,
        columns: Vec<(String, Decode)>,
    ) -> Self {
        let properties = super::read_properties(schema, 1);
        MysqlReadExec {
            pool,
            sql,
            columns: columns.into(),
            properties,
        }
    }
}

impl DisplayAs for MysqlReadExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MysqlReadExec: {}", self.sql)
    }
}

impl ExecutionPlan for MysqlReadExec {
    fn name(&self) -> &str {
        "MysqlReadExec"
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
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = self.schema();
        // The rows are read and decoded by a task of their own, which holds
        // the connection and its result set (a borrow of it), a batch ahead
        // of the consumer.
        let (sender, receiver) = tokio::sync::mpsc::channel(2);
        let read = read(
            Arc::clone(&self.pool),
            self.sql.clone(),
            Arc::clone(&self.columns),
            Arc::clone(&schema),
            sender.clone(),
        );
        let task = tokio::spawn(async move {
            if let Err(error) = read.await {
                let _ = sender.send(Err(error)).await;
            }
        });
        let abort = AbortOnDrop(task);
        let batches = futures::stream::unfold((receiver, abort), |(mut receiver, abort)| async {
            let next = receiver.recv().await?;
            Some((next, (receiver, abort)))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
    }
}

/// Stops the reading task when the stream is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn read(
    pool: Arc<MySQLConnectionPool>,
    sql: String,
    columns: Arc<[(String, Decode)]>,
    schema: SchemaRef,
    sender: tokio::sync::mpsc::Sender<Result<RecordBatch>>,
) -> Result<()> {
    let connection = pool
        .connect_direct()
        .await
        .map_err(|e| super::plan_error(&e))?;
    let mut conn = connection.conn.lock().await;
    let mut result = conn
        .exec_iter(sql.as_str(), ())
        .await
        .map_err(|e| super::plan_error(&e))?;
    let mut builders: Vec<Builder> = columns
        .iter()
        .map(|(_, decode)| Builder::new(*decode))
        .collect();
    let mut rows = 0;
    while let Some(row) = result.next().await.map_err(|e| super::plan_error(&e))? {
        for (index, builder) in builders.iter_mut().enumerate() {
            builder
                .append(row.as_ref(index).unwrap_or(&Value::NULL))
                .map_err(|message| {
                    DataFusionError::Execution(format!(
                        "column \"{}\": {message}",
                        columns[index].0
                    ))
                })?;
        }
        rows += 1;
        if rows == BATCH_ROWS {
            rows = 0;
            let batch = finish(&mut builders, &schema)?;
            if sender.send(Ok(batch)).await.is_err() {
                return Ok(());
            }
        }
    }
    if rows > 0 {
        let batch = finish(&mut builders, &schema)?;
        let _ = sender.send(Ok(batch)).await;
    }
    Ok(())
}

fn finish(builders: &mut [Builder], schema: &SchemaRef) -> Result<RecordBatch> {
    let columns = builders
        .iter_mut()
        .map(Builder::finish)
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// One column's builder.
enum Builder {
    Int8(Int8Builder),
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    UInt8(UInt8Builder),
    UInt16(UInt16Builder),
    UInt32(UInt32Builder),
    UInt64(UInt64Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Decimal {
        builder: Decimal128Builder,
        precision: u8,
        scale: i8,
    },
    Text(StringBuilder),
    LargeText(LargeStringBuilder),
    Date(Date32Builder),
}

impl Builder {
    fn new(decode: Decode) -> Builder {
        match decode {
            Decode::Int8 => Builder::Int8(Int8Builder::with_capacity(BATCH_ROWS)),
            Decode::Int16 => Builder::Int16(Int16Builder::with_capacity(BATCH_ROWS)),
            Decode::Int32 => Builder::Int32(Int32Builder::with_capacity(BATCH_ROWS)),
            Decode::Int64 => Builder::Int64(Int64Builder::with_capacity(BATCH_ROWS)),
            Decode::UInt8 => Builder::UInt8(UInt8Builder::with_capacity(BATCH_ROWS)),
            Decode::UInt16 => Builder::UInt16(UInt16Builder::with_capacity(BATCH_ROWS)),
            Decode::UInt32 => Builder::UInt32(UInt32Builder::with_capacity(BATCH_ROWS)),
            Decode::UInt64 => Builder::UInt64(UInt64Builder::with_capacity(BATCH_ROWS)),
            Decode::Float32 => Builder::Float32(Float32Builder::with_capacity(BATCH_ROWS)),
            Decode::Float64 => Builder::Float64(Float64Builder::with_capacity(BATCH_ROWS)),
            Decode::Decimal { precision, scale } => Builder::Decimal {
                builder: Decimal128Builder::with_capacity(BATCH_ROWS),
                precision,
                scale,
            },
            Decode::Text => {
                Builder::Text(StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 16))
            }
            Decode::LargeText => Builder::LargeText(LargeStringBuilder::with_capacity(
                BATCH_ROWS,
                BATCH_ROWS * 16,
            )),
            Decode::Date => Builder::Date(Date32Builder::with_capacity(BATCH_ROWS)),
        }
    }

    fn append(&mut self, value: &Value) -> std::result::Result<(), String> {
        if matches!(value, Value::NULL) {
            self.append_null();
            return Ok(());
        }
        match self {
            Builder::Int8(builder) => builder.append_value(integer(value)?),
            Builder::Int16(builder) => builder.append_value(integer(value)?),
            Builder::Int32(builder) => builder.append_value(integer(value)?),
            Builder::Int64(builder) => builder.append_value(integer(value)?),
            Builder::UInt8(builder) => builder.append_value(integer(value)?),
            Builder::UInt16(builder) => builder.append_value(integer(value)?),
            Builder::UInt32(builder) => builder.append_value(integer(value)?),
            Builder::UInt64(builder) => builder.append_value(integer(value)?),
            Builder::Float32(builder) => match value {
                Value::Float(value) => builder.append_value(*value),
                other => return Err(format!("a FLOAT column sent {other:?}")),
            },
            Builder::Float64(builder) => match value {
                Value::Double(value) => builder.append_value(*value),
                Value::Float(value) => builder.append_value(f64::from(*value)),
                other => return Err(format!("a DOUBLE column sent {other:?}")),
            },
            Builder::Decimal { builder, .. } => match value {
                Value::Bytes(digits) => builder.append_value(decimal(digits)?),
                other => return Err(format!("a DECIMAL column sent {other:?}")),
            },
            Builder::Text(builder) => builder.append_value(text(value)?),
            Builder::LargeText(builder) => builder.append_value(text(value)?),
            Builder::Date(builder) => match value {
                // MySQL's zero date reads as NULL, as the provider reads it.
                Value::Date(0, 0, 0, 0, 0, 0, 0) => builder.append_null(),
                Value::Date(year, month, day, ..) => {
                    let date = chrono::NaiveDate::from_ymd_opt(
                        i32::from(*year),
                        u32::from(*month),
                        u32::from(*day),
                    )
                    .ok_or_else(|| {
                        format!("the date {year:04}-{month:02}-{day:02} is not valid")
                    })?;
                    builder.append_value(
                        datafusion::arrow::datatypes::Date32Type::from_naive_date(date),
                    );
                }
                other => return Err(format!("a DATE column sent {other:?}")),
            },
        }
        Ok(())
    }

    fn append_null(&mut self) {
        match self {
            Builder::Int8(builder) => builder.append_null(),
            Builder::Int16(builder) => builder.append_null(),
            Builder::Int32(builder) => builder.append_null(),
            Builder::Int64(builder) => builder.append_null(),
            Builder::UInt8(builder) => builder.append_null(),
            Builder::UInt16(builder) => builder.append_null(),
            Builder::UInt32(builder) => builder.append_null(),
            Builder::UInt64(builder) => builder.append_null(),
            Builder::Float32(builder) => builder.append_null(),
            Builder::Float64(builder) => builder.append_null(),
            Builder::Decimal { builder, .. } => builder.append_null(),
            Builder::Text(builder) => builder.append_null(),
            Builder::LargeText(builder) => builder.append_null(),
            Builder::Date(builder) => builder.append_null(),
        }
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(match self {
            Builder::Decimal {
                builder,
                precision,
                scale,
            } => fitted(
                builder
                    .finish()
                    .with_precision_and_scale(*precision, *scale)?,
            ),
            Builder::Int8(builder) => fitted(builder.finish()),
            Builder::Int16(builder) => fitted(builder.finish()),
            Builder::Int32(builder) => fitted(builder.finish()),
            Builder::Int64(builder) => fitted(builder.finish()),
            Builder::UInt8(builder) => fitted(builder.finish()),
            Builder::UInt16(builder) => fitted(builder.finish()),
            Builder::UInt32(builder) => fitted(builder.finish()),
            Builder::UInt64(builder) => fitted(builder.finish()),
            Builder::Float32(builder) => fitted(builder.finish()),
            Builder::Float64(builder) => fitted(builder.finish()),
            Builder::Text(builder) => fitted(builder.finish()),
            Builder::LargeText(builder) => fitted(builder.finish()),
            Builder::Date(builder) => fitted(builder.finish()),
        })
    }
}

/// An integer value, in the column's own width.
fn integer<T: TryFrom<i64> + TryFrom<u64>>(value: &Value) -> std::result::Result<T, String> {
    let fits = match value {
        Value::Int(value) => T::try_from(*value).ok(),
        Value::UInt(value) => T::try_from(*value).ok(),
        other => return Err(format!("an integer column sent {other:?}")),
    };
    fits.ok_or_else(|| format!("the value {value:?} does not fit the column's type"))
}

fn text(value: &Value) -> std::result::Result<&str, String> {
    match value {
        Value::Bytes(bytes) => std::str::from_utf8(bytes)
            .map_err(|_| "MySQL sent text that is not valid UTF-8".to_owned()),
        other => Err(format!("a text column sent {other:?}")),
    }
}

/// A DECIMAL as MySQL prints it (`-123.45`), as its digits without the
/// point: the unscaled value at the scale it is printed with, which is the
/// column's.
fn decimal(digits: &[u8]) -> std::result::Result<i128, String> {
    let invalid = || {
        format!(
            "the DECIMAL value {:?} is not a plain decimal number",
            String::from_utf8_lossy(digits)
        )
    };
    let (negative, body) = match digits.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, digits),
    };
    if body.is_empty() {
        return Err(invalid());
    }
    let mut unscaled: i128 = 0;
    let mut point = false;
    for &byte in body {
        match byte {
            b'0'..=b'9' => {
                unscaled = unscaled
                    .checked_mul(10)
                    .and_then(|value| value.checked_add(i128::from(byte - b'0')))
                    .ok_or_else(invalid)?;
            }
            b'.' if !point => point = true,
            _ => return Err(invalid()),
        }
    }
    Ok(if negative { -unscaled } else { unscaled })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_read_from_their_digits() {
        assert_eq!(decimal(b"-123.45"), Ok(-12345));
        assert_eq!(decimal(b"0.00"), Ok(0));
        assert_eq!(decimal(b"9999999999.99"), Ok(999_999_999_999));
        assert_eq!(decimal(b"17"), Ok(17));
        assert_eq!(
            decimal(b"1e5").unwrap_err(),
            "the DECIMAL value \"1e5\" is not a plain decimal number"
        );
        assert!(decimal(b"-").is_err());
        assert!(decimal(b"1.2.3").is_err());
    }
}
