//! Aggregates over a DuckDB file acceleration queried in place, computed
//! by DuckDB instead of reading every row into DataFusion: `SELECT status,
//! count(*), sum(qty), max(day) FROM big WHERE region = 'EU' GROUP BY
//! status` reads a few rows back rather than the whole table.
//!
//! Only what DuckDB computes exactly as DataFusion does is handed over:
//! grouping by plain columns whose values DuckDB compares as pgaccel does
//! (integers, text, dates, decimals); `count(*)`, `count(column)`,
//! `count(DISTINCT column)`, `min` and `max` of such columns, `sum` of
//! integers narrower than 64 bits (a bigint, as in PostgreSQL) or of
//! decimals, and `avg` of integers or decimals (DuckDB's exact sum and
//! count, divided above as PostgreSQL divides them, since DuckDB's own
//! `avg` is a double); a `WHERE` the file evaluates exactly (see
//! `file_table::condition_sql`). Anything else keeps DataFusion's aggregate
//! over the file's rows. The results come back in the very types, names and
//! column order the aggregate had, so the plan above it is unchanged.
//!
//! SQLite files are not handed aggregates: SQLite groups by sorting every
//! row on one thread, which measured slower than DataFusion hashing the
//! streamed rows (TPC-H `orders`, 1.5M rows: 490 ms against 270 ms).
//!
//! DataFusion's optimizer rules and datafusion-table-providers' federation
//! push whole plans to a remote engine by unparsing them; the few shapes
//! here are written by hand because the point is which ones keep
//! PostgreSQL's answer exactly, each column's stored type checked.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::default_table_source::{provider_as_source, source_as_provider};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, DFSchema, Result};
use datafusion::datasource::TableType;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    Aggregate, BinaryExpr, Cast, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator,
    Projection,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};
use datafusion::physical_plan::ExecutionPlan;

use super::file_table::{FileRead, FileScanExec, FileTable, condition_sql, file_version_has};
use crate::accelerator::store::{AggregateQuery, literal_sql, quote};
use crate::accelerator::{ArrowAcceleration, FileReader};
use crate::query::numeric::{average_of_sum, is_exact_average};

/// The name the computed aggregate is scanned under in a plan.
const SCAN: &str = "pgaccel_file_aggregate";

/// Replaces an aggregate over a file queried in place by the file engine's
/// own, where it computes the same answer.
#[derive(Debug, Default)]
pub struct FileAggregates;

impl OptimizerRule for FileAggregates {
    fn name(&self) -> &str {
        "pgaccel_file_aggregates"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::BottomUp)
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Aggregate(aggregate) = &plan else {
            return Ok(Transformed::no(plan));
        };
        match computed_in_file(aggregate)? {
            Some(replacement) => Ok(Transformed::yes(replacement)),
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// The file read in place under `plan` (a scan, through aliases, filters
/// and projections of plain columns), with the filters on it.
fn file_input(plan: &LogicalPlan) -> Option<(Arc<ArrowAcceleration>, Arc<FileReader>, Vec<Expr>)> {
    match plan {
        LogicalPlan::Filter(filter) => {
            let (acceleration, reader, mut filters) = file_input(&filter.input)?;
            filters.push(filter.predicate.clone());
            Some((acceleration, reader, filters))
        }
        LogicalPlan::SubqueryAlias(alias) => file_input(&alias.input),
        // Columns kept under their own names.
        LogicalPlan::Projection(projection)
            if projection
                .expr
                .iter()
                .all(|expr| matches!(expr, Expr::Column(_))) =>
        {
            file_input(&projection.input)
        }
        LogicalPlan::TableScan(scan) if scan.fetch.is_none() => {
            let provider = source_as_provider(&scan.source).ok()?;
            let table = provider.downcast_ref::<FileTable>()?;
            let acceleration = Arc::clone(table.served_in_place()?);
            Some((acceleration, table.reader(), scan.filters.clone()))
        }
        _ => None,
    }
}

/// The aggregate as one computed by the file's engine, under a projection
/// that gives back its schema; `None` where the engine might answer
/// otherwise than DataFusion.
fn computed_in_file(aggregate: &Aggregate) -> Result<Option<LogicalPlan>> {
    let Some((acceleration, reader, filters)) = file_input(&aggregate.input) else {
        return Ok(None);
    };
    if !reader.is_duckdb() {
        return Ok(None);
    }
    let output = aggregate.schema.fields();
    let input = aggregate.input.schema().as_ref();
    if output.len() != aggregate.group_expr.len() + aggregate.aggr_expr.len() {
        return Ok(None);
    }
    // The file's columns (its select list and their fields), and the
    // aggregate's own over them: most are one column of the file's, and an
    // average is computed above from two.
    let mut select = Vec::with_capacity(output.len());
    let mut fields = Vec::with_capacity(output.len());
    let mut exprs = Vec::with_capacity(output.len());
    let mut scanned = |sql: String, field: Field| {
        let column = Expr::Column(Column::new(Some(SCAN), format!("c{}", select.len())));
        fields.push(field.with_name(format!("c{}", select.len())));
        select.push(sql);
        column
    };
    let mut group_by = Vec::with_capacity(aggregate.group_expr.len());
    for (expr, field) in aggregate.group_expr.iter().zip(output) {
        // The output keeps the alias; the file groups by the column.
        let expr = match expr {
            Expr::Alias(alias) => alias.expr.as_ref(),
            expr => expr,
        };
        let Some((name, data_type)) = stored_column(expr, &reader) else {
            return Ok(None);
        };
        if !reader.compares_as_served(data_type) {
            return Ok(None);
        }
        exprs.push(scanned(name.clone(), field.as_ref().clone()));
        group_by.push(name);
    }
    for (expr, field) in aggregate
        .aggr_expr
        .iter()
        .zip(&output[aggregate.group_expr.len()..])
    {
        if let Some((name, sum, count, scale)) = average_sql(expr, input, &reader) {
            let sum_field = Field::new("sum", DataType::Decimal128(38, scale), true);
            let sum = scanned(sum, sum_field);
            let count = scanned(count, Field::new("count", DataType::Int64, false));
            let Some(average) = average_of_sum(&name, sum, count, i32::from(scale)) else {
                return Ok(None);
            };
            exprs.push(average);
            continue;
        }
        let Some(sql) = aggregate_sql(expr, field.data_type(), input, &reader) else {
            return Ok(None);
        };
        exprs.push(scanned(sql, field.as_ref().clone()));
    }
    let mut conditions = Vec::with_capacity(filters.len());
    for filter in &filters {
        let Some(condition) = condition_sql(filter, &reader) else {
            return Ok(None);
        };
        conditions.push(condition);
    }
    let table = FileAggregateTable {
        table_schema: Arc::clone(reader.schema()),
        acceleration,
        reader,
        query: AggregateQuery {
            select,
            condition: (!conditions.is_empty()).then(|| conditions.join(" AND ")),
            group_by,
            schema: Arc::new(Schema::new(fields)),
        },
    };
    let scan =
        LogicalPlanBuilder::scan(SCAN, provider_as_source(Arc::new(table)), None)?.build()?;
    let columns = aggregate
        .schema
        .iter()
        .zip(exprs)
        .map(|((qualifier, field), expr)| expr.alias_qualified(qualifier.cloned(), field.name()))
        .collect();
    Ok(Some(LogicalPlan::Projection(Projection::try_new(
        columns,
        Arc::new(scan),
    )?)))
}

/// `avg` of integers or decimals (as pgaccel computes it, see
/// [`average_of_sum`]) as the name of that average and the file's SQL for
/// the exact sum of the values, at their scale, and their count. DuckDB
/// sums in 128 bits; values of at most 28 decimal digits (every integer
/// type) cannot overflow them within 2^32 rows.
fn average_sql(
    expr: &Expr,
    input: &DFSchema,
    reader: &FileReader,
) -> Option<(String, String, String, i8)> {
    let expr = match expr {
        Expr::Alias(alias) => alias.expr.as_ref(),
        expr => expr,
    };
    let Expr::AggregateFunction(AggregateFunction { func, params }) = expr else {
        return None;
    };
    if !is_exact_average(func.name())
        || params.distinct
        || params.filter.is_some()
        || !params.order_by.is_empty()
        || params.null_treatment.is_some()
    {
        return None;
    }
    let [arg] = params.args.as_slice() else {
        return None;
    };
    let (name, data_type) = value_sql(arg, input, reader)?;
    use DataType::*;
    let scale = match data_type {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 => 0,
        Decimal128(precision, scale) if precision <= 28 && scale >= 0 => scale,
        _ => return None,
    };
    Some((
        func.name().to_owned(),
        format!("CAST(sum({name}) AS DECIMAL(38, {scale}))"),
        format!("count({name})"),
        scale,
    ))
}

/// The quoted name and type of the file column `expr` names.
fn stored_column<'a>(expr: &Expr, reader: &'a FileReader) -> Option<(String, &'a DataType)> {
    let Expr::Column(column) = expr else {
        return None;
    };
    let field = reader.schema().field_with_name(&column.name).ok()?;
    Some((quote(&column.name), field.data_type()))
}

/// `expr` as the file's SQL computing the very values DataFusion computes
/// for it, with their type: a column whose values the file compares as
/// served, or `+`, `-`, `*` and negation of decimals over such columns and
/// literals, each step cast to the decimal type DataFusion gives it (it is
/// exact in both engines; a product that could need more than 38 digits is
/// planned in 256 bits, which no file engine has, and stays DataFusion's).
/// Integers enter only through a widening cast to a decimal: their own
/// arithmetic is checked for overflow by pgaccel's functions.
fn value_sql(expr: &Expr, input: &DFSchema, reader: &FileReader) -> Option<(String, DataType)> {
    if let Expr::Column(_) = expr {
        let (name, data_type) = stored_column(expr, reader)?;
        return reader
            .compares_as_served(data_type)
            .then(|| (name, data_type.clone()));
    }
    let data_type = expr.get_type(input).ok()?;
    let DataType::Decimal128(precision, scale) = data_type else {
        return None;
    };
    if scale < 0 {
        return None;
    }
    let decimal = |sql: String| format!("CAST({sql} AS DECIMAL({precision}, {scale}))");
    let operand = |expr: &Expr| match value_sql(expr, input, reader)? {
        (sql, DataType::Decimal128(..)) => Some(sql),
        _ => None,
    };
    let sql = match expr {
        Expr::Literal(value, _) if !value.is_null() => literal_sql(value, &data_type)?,
        Expr::Negative(inner) => decimal(format!("(- {})", operand(inner)?)),
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: op @ (Operator::Plus | Operator::Minus | Operator::Multiply),
            right,
        }) => decimal(format!("({} {op} {})", operand(left)?, operand(right)?)),
        Expr::Cast(Cast { expr: inner, .. }) => {
            // Widening only: no digit is lost on either side of the point.
            let (sql, from) = match inner.as_ref() {
                Expr::Literal(value, _) if !value.is_null() && value.data_type().is_integer() => {
                    let digits = value.to_string().trim_start_matches('-').len();
                    (value.to_string(), (digits as u8, 0))
                }
                inner => {
                    let (sql, from) = value_sql(inner, input, reader)?;
                    (sql, integer_digits(&from)?)
                }
            };
            let (from_precision, from_scale) = from;
            if from_scale < 0
                || scale < from_scale
                || (precision as i16 - scale as i16) < (from_precision as i16 - from_scale as i16)
            {
                return None;
            }
            decimal(sql)
        }
        _ => return None,
    };
    Some((sql, data_type))
}

/// The precision and scale of `data_type` as a decimal holding every value
/// of it exactly.
fn integer_digits(data_type: &DataType) -> Option<(u8, i8)> {
    use DataType::*;
    Some(match data_type {
        Int8 | UInt8 => (3, 0),
        Int16 | UInt16 => (5, 0),
        Int32 | UInt32 => (10, 0),
        Int64 => (19, 0),
        UInt64 => (20, 0),
        Decimal128(precision, scale) => (*precision, *scale),
        _ => return None,
    })
}

/// `expr` as an aggregate of the file's SQL whose value, read back as
/// `output`, is the one DataFusion computes.
fn aggregate_sql(
    expr: &Expr,
    output: &DataType,
    input: &DFSchema,
    reader: &FileReader,
) -> Option<String> {
    let expr = match expr {
        Expr::Alias(alias) => alias.expr.as_ref(),
        expr => expr,
    };
    let Expr::AggregateFunction(AggregateFunction { func, params }) = expr else {
        return None;
    };
    if params.filter.is_some() || !params.order_by.is_empty() || params.null_treatment.is_some() {
        return None;
    }
    let distinct = params.distinct;
    match (func.name(), params.args.as_slice()) {
        ("count", []) if *output == DataType::Int64 && !distinct => Some("count(*)".to_owned()),
        ("count", [Expr::Literal(value, _)])
            if *output == DataType::Int64 && !distinct && !value.is_null() =>
        {
            Some("count(*)".to_owned())
        }
        ("count", [arg]) if *output == DataType::Int64 => {
            let (name, data_type) = stored_column(arg, reader)?;
            if distinct {
                // Distinct values are told apart as DataFusion does.
                reader
                    .compares_as_served(data_type)
                    .then(|| format!("count(DISTINCT {name})"))
            } else {
                Some(format!("count({name})"))
            }
        }
        ("min" | "max", [arg]) => {
            let (sql, data_type) = value_sql(arg, input, reader)?;
            (data_type == *output && reader.compares_as_served(&data_type))
                .then(|| format!("{}({sql})", func.name()))
        }
        ("sum", [arg]) if !distinct => {
            // DataFusion sums narrow integers as bigints: an exact widening.
            let arg = match arg {
                Expr::Cast(Cast { expr, field }) if *field.data_type() == DataType::Int64 => {
                    expr.as_ref()
                }
                arg => arg,
            };
            let (name, data_type) = value_sql(arg, input, reader)?;
            use DataType::*;
            match (&data_type, output) {
                // At most 2^32 rows of 32-bit values: no bigint overflows.
                (Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32, Int64) => {
                    Some(format!("CAST(sum({name}) AS BIGINT)"))
                }
                (Decimal128(_, scale), Decimal128(precision, output_scale))
                    if scale == output_scale =>
                {
                    Some(format!(
                        "CAST(sum({name}) AS DECIMAL({precision}, {scale}))"
                    ))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The rows of an aggregate the file's engine computes, as a table.
struct FileAggregateTable {
    acceleration: Arc<ArrowAcceleration>,
    reader: Arc<FileReader>,
    /// The columns of the file version planned against.
    table_schema: SchemaRef,
    query: AggregateQuery,
}

impl fmt::Debug for FileAggregateTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileAggregateTable")
            .field("dataset", &self.acceleration.dataset())
            .field("query", &self.query)
            .finish()
    }
}

impl FileAggregateTable {
    /// Whether a plan holding this aggregate stands: while the version in
    /// the file has the columns planned with.
    pub fn is_current(&self) -> bool {
        file_version_has(&self.acceleration, &self.table_schema)
    }
}

/// Whether `provider` is a computed aggregate whose plan no longer stands.
pub fn is_stale(provider: &dyn TableProvider) -> bool {
    provider
        .downcast_ref::<FileAggregateTable>()
        .is_some_and(|table| !table.is_current())
}

#[async_trait]
impl TableProvider for FileAggregateTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.query.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = match projection {
            Some(columns) => Arc::new(self.query.schema.project(columns)?),
            None => Arc::clone(&self.query.schema),
        };
        Ok(Arc::new(FileScanExec::new(
            self.acceleration.dataset(),
            Arc::clone(&self.reader),
            FileRead::Aggregate {
                query: self.query.clone(),
                projection: projection.cloned(),
            },
            schema,
            Precision::Absent,
        )))
    }
}
