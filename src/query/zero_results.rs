//! `on_zero_results: use_source`: a scan of the acceleration that finds no
//! row is answered by the source instead, with the query's projection,
//! filters and limit, and with the inverse of the retention policy, so that
//! a row retention evicted is never read back from the source.
//!
//! The decision is made per table scan: the filters DataFusion pushes into
//! the scan take part, a predicate it cannot push (a subquery) does not.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use chrono::Utc;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, DFSchema};
use datafusion::datasource::{TableType, provider_as_source};
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, LogicalPlanBuilder, TableProviderFilterPushDown, col};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, EmptyRecordBatchStream, ExecutionPlan, ExecutionPlanProperties,
    Partitioning, PlanProperties,
};
use datafusion::prelude::SessionContext;
use futures::{StreamExt, TryStreamExt};

use super::file_table::FileTable;
use super::table::{AcceleratedTable, without_columns};
use crate::config::DatasetConfig;
use crate::metrics;
use crate::source::TimeBound;

/// The rows retention keeps, as a predicate over a table with `schema`
/// (SQL three-valued logic: what the eviction leaves behind); `None` without
/// a retention policy. The error says why it cannot be planned.
pub fn inverse_retention(
    config: &DatasetConfig,
    schema: &SchemaRef,
) -> Result<Option<Expr>, String> {
    let retention = &config.acceleration.retention;
    let df_schema = DFSchema::try_from(schema.as_ref().clone()).map_err(|e| e.to_string())?;
    let mut keep: Vec<Expr> = Vec::new();
    if let Some(sql) = &retention.sql {
        let predicate = SessionContext::new()
            .parse_sql_expr(sql.predicate(), &df_schema)
            .map_err(|e| {
                format!("retention_sql's predicate does not fit the source's columns: {e}")
            })?;
        check_boolean(&predicate, &df_schema, "retention_sql's predicate")?;
        keep.push(Expr::Not(Box::new(predicate.clone())).or(predicate.is_null()));
    }
    if let (Some(period), Some(column)) = (retention.period, &config.time_column) {
        let cutoff =
            Utc::now() - chrono::Duration::from_std(period).unwrap_or(chrono::Duration::MAX);
        let kept = |column: &str, format| {
            let bound = TimeBound {
                column: column.to_owned(),
                format,
                after: cutoff,
                inclusive: true,
            };
            let recent = bound.predicate(&df_schema)?;
            check_boolean(&recent, &df_schema, "the retention_period cutoff")?;
            Ok::<_, String>(recent.or(col(Column::new_unqualified(column)).is_null()))
        };
        let mut rule = kept(column, config.time_format)?;
        // A scheduled check evicts a row only when its partition column is
        // older too.
        let scheduled = retention.check_enabled && retention.check_interval.is_some();
        if let Some(partition) = &config.time_partition_column
            && scheduled
        {
            rule = rule.or(kept(partition, config.time_partition_format)?);
        }
        keep.push(rule);
    }
    Ok(keep.into_iter().reduce(Expr::and))
}

/// Whether `expr` plans to a boolean over `schema`.
fn check_boolean(expr: &Expr, schema: &DFSchema, what: &str) -> Result<(), String> {
    use datafusion::logical_expr::ExprSchemable;
    match expr.get_type(schema) {
        Ok(datafusion::arrow::datatypes::DataType::Boolean) => Ok(()),
        Ok(other) => Err(format!("{what} is of type {other}, not a condition")),
        Err(e) => Err(format!(
            "{what} cannot be planned against the source's columns: {e}"
        )),
    }
}

/// The accelerated table (in memory, or a file queried in place), with the
/// source behind it for scans that find nothing.
#[derive(Debug)]
pub struct ZeroResultsTable {
    accelerated: Arc<dyn TableProvider>,
    source: Arc<dyn TableProvider>,
    /// For the inverse retention filter, made again at each scan: a cached
    /// plan must not keep an old `retention_period` cutoff.
    config: DatasetConfig,
}

impl ZeroResultsTable {
    pub fn new(
        accelerated: Arc<dyn TableProvider>,
        source: Arc<dyn TableProvider>,
        config: &DatasetConfig,
    ) -> Result<Self, String> {
        inverse_retention(config, &source.schema())?;
        Ok(ZeroResultsTable {
            accelerated,
            source,
            config: config.clone(),
        })
    }

    /// The in-memory table in front of the source, if the acceleration is
    /// in memory.
    pub fn accelerated(&self) -> Option<&AcceleratedTable> {
        self.accelerated.downcast_ref::<AcceleratedTable>()
    }

    /// Whether a plan of this table stands (see the tables it wraps).
    pub fn is_current(&self) -> bool {
        match self.accelerated() {
            Some(table) => table.is_current(),
            None => self
                .accelerated
                .downcast_ref::<FileTable>()
                .is_none_or(FileTable::is_current),
        }
    }
}

/// `expr` with every column unqualified, to plan it over a new scan.
pub(super) fn unqualified(expr: &Expr) -> Result<Expr> {
    expr.clone()
        .transform(|e| match e {
            Expr::Column(column) if column.relation.is_some() => Ok(Transformed::yes(
                Expr::Column(Column::new_unqualified(column.name)),
            )),
            other => Ok(Transformed::no(other)),
        })
        .map(|t| t.data)
}

/// The physical plan of `provider` filtered by `filters`, projected to
/// `columns` (names) and limited to `limit` rows; for no columns, one row
/// per match with no columns.
pub(super) async fn plan(
    state: &dyn Session,
    provider: Arc<dyn TableProvider>,
    filters: &[Expr],
    columns: &[String],
    limit: Option<usize>,
) -> Result<Arc<dyn ExecutionPlan>> {
    let first = provider.schema().field(0).name().clone();
    let mut builder = LogicalPlanBuilder::scan("t", provider_as_source(provider), None)?;
    for filter in filters {
        builder = builder.filter(unqualified(filter)?)?;
    }
    let selected: Vec<Expr> = if columns.is_empty() {
        vec![col(Column::new_unqualified(first))]
    } else {
        columns
            .iter()
            .map(|name| col(Column::new_unqualified(name)))
            .collect()
    };
    builder = builder.project(selected)?;
    if let Some(limit) = limit {
        builder = builder.limit(0, Some(limit))?;
    }
    let plan = state.create_physical_plan(&builder.build()?).await?;
    if columns.is_empty() {
        return without_columns(plan);
    }
    Ok(plan)
}

#[async_trait]
impl TableProvider for ZeroResultsTable {
    fn schema(&self) -> SchemaRef {
        self.accelerated.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Every filter is applied by this table (to the acceleration and to
    /// the source alike), so that an empty accelerated result means that no
    /// row matches them.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Exact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let schema = self.schema();
        let columns: Vec<String> = match projection {
            Some(indices) => indices
                .iter()
                .map(|i| schema.field(*i).name().clone())
                .collect(),
            None => schema.fields().iter().map(|f| f.name().clone()).collect(),
        };
        // The version in memory now, not the one this table was made with;
        // a file read in place is read as it is now.
        let accelerated: Arc<dyn TableProvider> = match self.accelerated() {
            Some(table) => Arc::new(
                AcceleratedTable::try_new(Arc::clone(table.acceleration())).ok_or_else(|| {
                    datafusion::error::DataFusionError::Plan(format!(
                        "dataset '{}' has no acceleration loaded",
                        self.config.name
                    ))
                })?,
            ),
            None => Arc::clone(&self.accelerated),
        };
        let accelerated = plan(state, accelerated, filters, &columns, limit).await?;
        let keep = inverse_retention(&self.config, &self.source.schema())
            .map_err(datafusion::error::DataFusionError::Plan)?;
        let mut source_filters = filters.to_vec();
        source_filters.extend(keep);
        let fallback = plan(
            state,
            Arc::clone(&self.source),
            &source_filters,
            &columns,
            limit,
        )
        .await?;
        Ok(Arc::new(ZeroResultsExec::new(
            self.config.name.to_string(),
            accelerated,
            fallback,
        )))
    }
}

/// Streams the accelerated plan; if it ends without a row, streams the
/// fallback plan instead.
#[derive(Debug)]
struct ZeroResultsExec {
    dataset: String,
    accelerated: Arc<dyn ExecutionPlan>,
    fallback: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

fn single(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
    if plan.output_partitioning().partition_count() > 1 {
        Arc::new(CoalescePartitionsExec::new(plan))
    } else {
        plan
    }
}

impl ZeroResultsExec {
    fn new(
        dataset: String,
        accelerated: Arc<dyn ExecutionPlan>,
        fallback: Arc<dyn ExecutionPlan>,
    ) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(accelerated.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        ZeroResultsExec {
            dataset,
            accelerated: single(accelerated),
            fallback: single(fallback),
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for ZeroResultsExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ZeroResultsExec: dataset={}, on_zero_results=use_source",
            self.dataset
        )
    }
}

impl ExecutionPlan for ZeroResultsExec {
    fn name(&self) -> &str {
        "ZeroResultsExec"
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
        vec![&self.accelerated, &self.fallback]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [accelerated, fallback]: [Arc<dyn ExecutionPlan>; 2] =
            children.try_into().map_err(|_| {
                datafusion::error::DataFusionError::Internal(
                    "ZeroResultsExec has two children".into(),
                )
            })?;
        Ok(Arc::new(ZeroResultsExec::new(
            self.dataset.clone(),
            accelerated,
            fallback,
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = self.schema();
        let accelerated = self.accelerated.execute(partition, Arc::clone(&context))?;
        let seen = Arc::new(AtomicBool::new(false));
        let marked = Arc::clone(&seen);
        let accelerated = accelerated.inspect(move |batch| {
            if batch.as_ref().is_ok_and(|b| b.num_rows() > 0) {
                marked.store(true, Ordering::Relaxed);
            }
        });
        let (fallback, dataset, target) = (
            Arc::clone(&self.fallback),
            self.dataset.clone(),
            Arc::clone(&schema),
        );
        let then = futures::stream::once(async move {
            if seen.load(Ordering::Relaxed) {
                let empty: SendableRecordBatchStream =
                    Box::pin(EmptyRecordBatchStream::new(target));
                return Ok::<_, datafusion::error::DataFusionError>(empty);
            }
            metrics::zero_results_fallback(&dataset);
            let relabel = Arc::clone(&target);
            let stream = fallback.execute(0, context)?.map(move |batch| {
                let batch = batch?;
                let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
                Ok(RecordBatch::try_new_with_options(
                    Arc::clone(&relabel),
                    batch.columns().to_vec(),
                    &options,
                )?)
            });
            let stream: SendableRecordBatchStream =
                Box::pin(RecordBatchStreamAdapter::new(target, stream));
            Ok(stream)
        })
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            accelerated.chain(then),
        )))
    }
}
