//! Point lookups through the primary-key index, without DataFusion planning
//! or a table scan at execution.
//!
//! A statement of the shape `SELECT <expressions> FROM <dataset> WHERE <key
//! pinned by equality> [AND <other filters>] [LIMIT n]` is recognised once,
//! when it is prepared: the key values (literals or `$n` parameters), the
//! other filters and the select list are compiled against the table schema.
//! Each execution then probes the index, takes the matching rows, applies the
//! filters and the select list, and returns the batch. A file acceleration
//! queried in place is probed the same way, through the file's key index,
//! when its engine compares the key's type exactly. Anything else, or a
//! version of the table whose schema differs from the prepared one, goes
//! through DataFusion unchanged, so results are the same either way.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::catalog::default_table_source::source_as_provider;
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{ParamValues, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    BinaryExpr, Cast, Expr, Filter, LogicalPlan, Operator, Projection, TryCast, Volatility,
};
use datafusion::physical_expr::PhysicalExpr;

use super::file_table::FileTable;
use super::table::{AcceleratedTable, Pins, pinned_version};
use crate::accelerator::store::literal_sql;
use crate::accelerator::{ArrowAcceleration, RowRef, TableData};

/// Where one key value comes from at execution.
#[derive(Debug, Clone)]
enum KeyValue {
    Literal(ScalarValue),
    /// `$n` (0-based position), cast to a type when the statement casts it.
    Parameter {
        position: usize,
        cast: Option<DataType>,
    },
}

/// A prepared point lookup.
#[derive(Debug)]
pub struct LookupPlan {
    acceleration: Arc<ArrowAcceleration>,
    /// For a file queried in place, the key columns and their types: each
    /// execution reads the rows with those key values through the file's
    /// index. `None` for an acceleration in memory.
    file_key: Option<Vec<(String, DataType)>>,
    /// The table schema the statement was prepared against.
    table_schema: SchemaRef,
    /// One probe per key value list entry (several for `IN (...)`), each one
    /// value per key column.
    probes: Vec<Vec<KeyValue>>,
    residual: Option<Arc<dyn PhysicalExpr>>,
    select: Vec<Arc<dyn PhysicalExpr>>,
    output: SchemaRef,
    limit: Option<usize>,
}

impl LookupPlan {
    /// Recognises a lookup in a logical plan straight from the SQL planner.
    /// `analyzed` is `plan` after the analyzer's rules.
    pub fn try_new(
        plan: &LogicalPlan,
        analyzed: &LogicalPlan,
        state: &SessionState,
    ) -> Option<LookupPlan> {
        // Cheap shape check first: most statements stop here.
        Self::shape(plan)?;
        let (projection, filter, acceleration, limit) = Self::shape(analyzed)?;
        let scan_schema = filter.input.schema();
        let (table_schema, key_columns, file_key) = match acceleration.current() {
            Some(data) => (Arc::clone(data.schema()), key_column_names(&data)?, None),
            None => {
                let version = acceleration.file_version()?;
                let schema = Arc::clone(&version.checkpoint.schema);
                let key = version.checkpoint.primary_key.clone();
                // Only a key the file compares exactly as pgaccel does.
                let typed = key
                    .iter()
                    .map(|name| {
                        let data_type = schema.field_with_name(name).ok()?.data_type().clone();
                        version
                            .reader
                            .compares_as_served(&data_type)
                            .then(|| (name.clone(), data_type))
                    })
                    .collect::<Option<Vec<_>>>()
                    .filter(|typed| !typed.is_empty())?;
                (schema, key, Some(typed))
            }
        };
        let (probes, others) = key_probes(&filter.predicate, &key_columns)?;
        let residual = match conjunction(others) {
            Some(expr) if varies_per_execution(&expr) => return None,
            Some(expr) => Some(compile(state, expr, scan_schema)?),
            None => None,
        };
        let select = projection
            .expr
            .iter()
            .map(|expr| {
                if varies_per_execution(expr) {
                    None
                } else {
                    compile(state, expr.clone(), scan_schema)
                }
            })
            .collect::<Option<Vec<_>>>()?;
        Some(LookupPlan {
            table_schema,
            acceleration,
            file_key,
            probes,
            residual,
            select,
            output: Arc::new(projection.schema.as_arrow().clone()),
            limit,
        })
    }

    /// `[Limit] → Projection → Filter → [alias] → scan of an accelerated table`.
    fn shape(
        plan: &LogicalPlan,
    ) -> Option<(&Projection, &Filter, Arc<ArrowAcceleration>, Option<usize>)> {
        let (plan, limit) = peel_limit(plan)?;
        let LogicalPlan::Projection(projection) = plan else {
            return None;
        };
        let LogicalPlan::Filter(filter) = projection.input.as_ref() else {
            return None;
        };
        let acceleration = accelerated_table(filter.input.as_ref())?;
        Some((projection, filter, acceleration, limit))
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.output
    }

    /// Runs the lookup; `None` when the published table no longer matches
    /// the prepared statement (the caller plans it afresh).
    pub fn execute(
        &self,
        params: Option<&ParamValues>,
        pins: Option<&Pins>,
    ) -> Result<Option<RecordBatch>> {
        let rows = match &self.file_key {
            Some(key) => self.rows_in_file(key, params)?,
            None => match pinned_version(&self.acceleration, pins) {
                Some(data) if data.schema().fields() == self.table_schema.fields() => {
                    self.matching_rows(&data, params)?
                }
                _ => None,
            },
        };
        let Some(rows) = rows else {
            return Ok(None);
        };
        let rows = match &self.residual {
            Some(residual) => {
                let keep = residual.evaluate(&rows)?.into_array(rows.num_rows())?;
                filter_record_batch(&rows, keep.as_boolean())?
            }
            None => rows,
        };
        let rows = match self.limit {
            Some(limit) if limit < rows.num_rows() => rows.slice(0, limit),
            _ => rows,
        };
        let columns = self
            .select
            .iter()
            .map(|expr| expr.evaluate(&rows)?.into_array(rows.num_rows()))
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows.num_rows()));
        Ok(Some(RecordBatch::try_new_with_options(
            Arc::clone(&self.output),
            columns,
            &options,
        )?))
    }

    fn matching_rows(
        &self,
        data: &TableData,
        params: Option<&ParamValues>,
    ) -> Result<Option<RecordBatch>> {
        let mut found: Vec<RowRef> = Vec::new();
        for probe in &self.probes {
            let key = probe
                .iter()
                .map(|value| key_value(value, params))
                .collect::<Result<Vec<_>>>()?;
            let Some(rows) = data.lookup(&key)? else {
                return Ok(None);
            };
            for row in rows {
                // `IN (1, 1)` returns the row once, as PostgreSQL does.
                if !found.contains(&row) {
                    found.push(row);
                }
            }
        }
        if found.is_empty() {
            return Ok(Some(RecordBatch::new_empty(Arc::clone(data.schema()))));
        }
        Ok(Some(data.rows_at(&found)?))
    }
}

impl LookupPlan {
    /// The rows of the file version served whose key is one of the
    /// probes', read through the file's key index; `None` when the version
    /// has other columns, or a key value has no exact form in the file
    /// (the caller plans the statement instead).
    fn rows_in_file(
        &self,
        key: &[(String, DataType)],
        params: Option<&ParamValues>,
    ) -> Result<Option<RecordBatch>> {
        let Some(version) = self.acceleration.file_version() else {
            return Ok(None);
        };
        if version.checkpoint.schema.fields() != self.table_schema.fields() {
            return Ok(None);
        }
        let mut probes: Vec<Vec<ScalarValue>> = Vec::with_capacity(self.probes.len());
        'probes: for probe in &self.probes {
            let mut values = Vec::with_capacity(key.len());
            for (value, (_, data_type)) in probe.iter().zip(key) {
                let Ok(value) = key_value(value, params)?.cast_to(data_type) else {
                    return Ok(None);
                };
                if value.is_null() {
                    // `= NULL` matches no row.
                    continue 'probes;
                }
                if literal_sql(&value, data_type).is_none() {
                    // No exact form in the file's SQL.
                    return Ok(None);
                }
                values.push(value);
            }
            // Each row once, whatever the probes repeat, as PostgreSQL
            // answers `IN (1, 1)`.
            if !probes.contains(&values) {
                probes.push(values);
            }
        }
        let schema = Arc::clone(&version.checkpoint.schema);
        if probes.is_empty() {
            return Ok(Some(RecordBatch::new_empty(schema)));
        }
        let mut batches = Vec::new();
        let mut read = || {
            version.reader.lookup(key, &probes, &mut |batch| {
                batches.push(batch);
                Ok(())
            })
        };
        // A DuckDB read takes a millisecond or so, more where DuckDB keeps
        // no key index and scans the key column: the worker thread's other
        // tasks move elsewhere meanwhile. An SQLite read through its index
        // takes tens of microseconds, less than handing the worker over
        // (measured: 4 clients look up 1.3x as fast without). A connection
        // lane cannot hand its thread over: there the read runs in place.
        let read = match tokio::runtime::Handle::try_current() {
            Ok(handle)
                if version.reader.is_duckdb()
                    && !crate::threads::on_lane()
                    && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread =>
            {
                tokio::task::block_in_place(read)
            }
            _ => read(),
        };
        read.map_err(|message| {
            DataFusionError::Execution(format!(
                "reading the acceleration file of dataset '{}' failed: {message}",
                self.acceleration.dataset()
            ))
        })?;
        Ok(Some(concat_batches(&schema, &batches)?))
    }
}

/// The names of the primary-key columns of `data`, when it has a key.
pub(super) fn key_column_names(data: &TableData) -> Option<Vec<String>> {
    let names = data
        .primary_key()?
        .columns()
        .iter()
        .map(|column| data.schema().field(*column).name().clone())
        .collect();
    Some(names)
}

fn key_value(value: &KeyValue, params: Option<&ParamValues>) -> Result<ScalarValue> {
    match value {
        KeyValue::Literal(value) => Ok(value.clone()),
        KeyValue::Parameter { position, cast } => {
            let params =
                params.ok_or_else(|| DataFusionError::Plan("a parameter has no value".into()))?;
            let value = match params {
                ParamValues::List(values) => values.get(*position).map(|v| v.value.clone()),
                ParamValues::Map(_) => None,
            }
            .ok_or_else(|| {
                DataFusionError::Plan(format!("no value for parameter ${}", position + 1))
            })?;
            match cast {
                Some(data_type) => value.cast_to(data_type),
                None => Ok(value),
            }
        }
    }
}

fn peel_limit(plan: &LogicalPlan) -> Option<(&LogicalPlan, Option<usize>)> {
    let LogicalPlan::Limit(limit) = plan else {
        return Some((plan, None));
    };
    if limit
        .skip
        .as_deref()
        .is_some_and(|skip| !matches!(skip, Expr::Literal(ScalarValue::Int64(Some(0)), _)))
    {
        return None;
    }
    let fetch = match limit.fetch.as_deref() {
        None => None,
        Some(Expr::Literal(ScalarValue::Int64(Some(n)), _)) if *n >= 0 => Some(*n as usize),
        Some(_) => return None,
    };
    Some((limit.input.as_ref(), fetch))
}

fn accelerated_table(plan: &LogicalPlan) -> Option<Arc<ArrowAcceleration>> {
    match plan {
        LogicalPlan::SubqueryAlias(alias) => accelerated_table(&alias.input),
        LogicalPlan::TableScan(scan) if scan.filters.is_empty() && scan.fetch.is_none() => {
            let provider = source_as_provider(&scan.source).ok()?;
            match provider.downcast_ref::<AcceleratedTable>() {
                Some(table) => Some(Arc::clone(table.acceleration())),
                None => provider
                    .downcast_ref::<FileTable>()?
                    .served_in_place()
                    .cloned(),
            }
        }
        _ => None,
    }
}

/// Splits `predicate` into index probes covering every key column, and the
/// other conjuncts. `None` when the key is not pinned by equality.
fn key_probes(predicate: &Expr, key_columns: &[String]) -> Option<(Vec<Vec<KeyValue>>, Vec<Expr>)> {
    let mut pinned: Vec<Option<Vec<KeyValue>>> = vec![None; key_columns.len()];
    let mut others = Vec::new();
    for conjunct in split_conjunction(predicate) {
        match pinned_values(conjunct, key_columns) {
            Some((column, values)) if pinned[column].is_none() => pinned[column] = Some(values),
            _ => others.push(conjunct.clone()),
        }
    }
    let pinned: Vec<Vec<KeyValue>> = pinned.into_iter().collect::<Option<_>>()?;
    // Several values (an IN list) only for a single-column key.
    let probes = match pinned.as_slice() {
        [values] => values.iter().map(|value| vec![value.clone()]).collect(),
        _ if pinned.iter().all(|values| values.len() == 1) => {
            vec![pinned.into_iter().map(|mut v| v.remove(0)).collect()]
        }
        _ => return None,
    };
    Some((probes, others))
}

/// `key = value`, `value = key` or `key IN (values)`: the key column's
/// position and the values.
fn pinned_values(conjunct: &Expr, key_columns: &[String]) -> Option<(usize, Vec<KeyValue>)> {
    let key_position = |expr: &Expr| match expr {
        Expr::Column(column) => key_columns.iter().position(|key| *key == column.name),
        _ => None,
    };
    match conjunct {
        Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Eq,
            right,
        }) => {
            if let (Some(column), Some(value)) = (key_position(left), key_value_of(right)) {
                Some((column, vec![value]))
            } else {
                Some((key_position(right)?, vec![key_value_of(left)?]))
            }
        }
        Expr::InList(list) if !list.negated && !list.list.is_empty() => {
            let column = key_position(&list.expr)?;
            let values = list
                .list
                .iter()
                .map(key_value_of)
                .collect::<Option<Vec<_>>>()?;
            Some((column, values))
        }
        _ => None,
    }
}

/// A constant or a parameter, possibly cast.
fn key_value_of(expr: &Expr) -> Option<KeyValue> {
    match expr {
        Expr::Literal(value, _) => Some(KeyValue::Literal(value.clone())),
        Expr::Placeholder(placeholder) => {
            let position = placeholder
                .id
                .strip_prefix('$')?
                .parse::<usize>()
                .ok()?
                .checked_sub(1)?;
            Some(KeyValue::Parameter {
                position,
                cast: None,
            })
        }
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            match key_value_of(expr)? {
                KeyValue::Literal(value) => {
                    Some(KeyValue::Literal(value.cast_to(field.data_type()).ok()?))
                }
                KeyValue::Parameter { position, .. } => Some(KeyValue::Parameter {
                    position,
                    cast: Some(field.data_type().clone()),
                }),
            }
        }
        _ => None,
    }
}

/// `expr`, over `schema`, as the executable expression a direct answer
/// evaluates: simplified first, as the optimizer simplifies the scan path
/// (some functions, `coalesce`, only run in their simplified form).
pub(super) fn compile(
    state: &SessionState,
    expr: Expr,
    schema: &datafusion::common::DFSchemaRef,
) -> Option<Arc<dyn PhysicalExpr>> {
    use datafusion::logical_expr::simplify::SimplifyContext;
    use datafusion::optimizer::simplify_expressions::ExprSimplifier;
    let context = SimplifyContext::builder()
        .with_schema(Arc::clone(schema))
        .with_config_options(Arc::new(state.config_options().as_ref().clone()))
        .build();
    let simplified = ExprSimplifier::new(context).simplify(expr).ok()?;
    state.create_physical_expr(simplified, schema).ok()
}

/// `plan` after the analyzer's rules (type coercion, checked integer
/// arithmetic), which apply to direct answers as on the scan path so that
/// both compute the same values.
pub(super) fn analyze(plan: &LogicalPlan, state: &SessionState) -> Option<LogicalPlan> {
    state
        .analyzer()
        .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
        .ok()
}

/// Whether `expr` cannot be compiled once for every execution: it has a
/// parameter, or a function whose value may change between executions
/// (`now()`, `random()`), which DataFusion fixes when it plans.
pub(super) fn varies_per_execution(expr: &Expr) -> bool {
    expr.exists(|e| {
        Ok(match e {
            Expr::Placeholder(_) => true,
            Expr::ScalarFunction(function) => {
                function.func.signature().volatility != Volatility::Immutable
            }
            _ => false,
        })
    })
    .unwrap_or(true)
}
