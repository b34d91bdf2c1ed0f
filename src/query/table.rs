//! [`AcceleratedTable`]: the DataFusion table over a dataset's acceleration.
//!
//! The schema is fixed when the query is planned; each scan reads the version
//! its statement or transaction pinned ([`Pins`]: the version published when
//! the statement or transaction first read the table) and keeps it for the
//! whole scan, so a refresh that publishes meanwhile never tears a result,
//! and a transaction reads one version of each table from start to end.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::engine::SessionInfo;
use super::pruning;
use super::table_statistics::WithStatistics;
use crate::accelerator::{ArrowAcceleration, TableData};

/// The acceleration versions one statement, or one transaction, reads: the
/// first read of a table pins the version published then, and every later
/// read in the same statement or transaction gets that version.
#[derive(Debug, Default)]
pub struct Pins {
    versions: Mutex<HashMap<String, Arc<TableData>>>,
}

impl Pins {
    /// The version of `acceleration` this statement or transaction reads;
    /// `None` before its first load.
    pub fn version(&self, acceleration: &ArrowAcceleration) -> Option<Arc<TableData>> {
        let mut versions = self.versions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(version) = versions.get(acceleration.dataset()) {
            return Some(Arc::clone(version));
        }
        let current = acceleration.current()?;
        versions.insert(acceleration.dataset().to_owned(), Arc::clone(&current));
        Some(current)
    }
}

/// The version of `acceleration` a read under `pins` sees.
pub fn pinned_version(
    acceleration: &ArrowAcceleration,
    pins: Option<&Pins>,
) -> Option<Arc<TableData>> {
    match pins {
        Some(pins) => pins.version(acceleration),
        None => acceleration.current(),
    }
}

/// Errors of the query path that carry their own SQLSTATE.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(
        "dataset '{dataset}' is still loading its initial data; query it again once it is ready"
    )]
    Loading { dataset: String },
    #[error(
        "relation \"{dataset}\" does not exist: table not found, because dataset '{dataset}' has no data loaded and its source failed: {cause}"
    )]
    Unavailable { dataset: String, cause: String },
    #[error(
        "cached plan must not change result type: the schema of dataset '{dataset}' changed since the statement was planned; prepare it again"
    )]
    SchemaChanged { dataset: String },
    #[error("{type_name} out of range")]
    OutOfRange { type_name: &'static str },
}

#[derive(Debug)]
pub struct AcceleratedTable {
    acceleration: Arc<ArrowAcceleration>,
    schema: SchemaRef,
}

impl AcceleratedTable {
    pub fn acceleration(&self) -> &Arc<ArrowAcceleration> {
        &self.acceleration
    }

    /// The schema and table the dataset is served as.
    pub fn served_name(&self) -> Option<(String, String)> {
        let name = crate::config::DatasetName::parse(self.acceleration.dataset()).ok()?;
        Some((name.schema, name.table))
    }

    /// Whether the published version still has the schema this table was
    /// planned with.
    pub fn is_current(&self) -> bool {
        self.acceleration
            .current()
            .is_some_and(|data| data.schema().fields() == self.schema.fields())
    }

    /// `None` while the dataset has no published data yet.
    pub fn try_new(acceleration: Arc<ArrowAcceleration>) -> Option<Self> {
        let schema = Arc::clone(acceleration.current()?.schema());
        Some(AcceleratedTable {
            acceleration,
            schema,
        })
    }
}

#[async_trait]
impl TableProvider for AcceleratedTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Inexact: each scan skips the batches whose ranges of values the
    /// filters cannot match (see [`pruning`]), and DataFusion filters the
    /// rest.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    /// The published version's row count and, once computed, each
    /// column's range and distinct count: what the join order is chosen
    /// from (see [`super::join_order`]).
    fn statistics(&self) -> Option<Statistics> {
        let data = self.acceleration.current()?;
        let mut statistics = Statistics::new_unknown(&self.schema);
        statistics.num_rows = Precision::Exact(data.rows());
        statistics.total_byte_size = Precision::Inexact(data.bytes());
        if let Some(table) = data.column_statistics()
            && table.columns.len() == statistics.column_statistics.len()
        {
            statistics.column_statistics = table.columns.clone();
        }
        Some(statistics)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let dataset = self.acceleration.dataset().to_owned();
        let pins = SessionInfo::of(state.config_options()).and_then(|info| info.pins.load_full());
        let data = pinned_version(&self.acceleration, pins.as_deref()).ok_or_else(|| {
            DataFusionError::External(Box::new(QueryError::Loading {
                dataset: dataset.clone(),
            }))
        })?;
        if data.schema().fields() != self.schema.fields() {
            return Err(DataFusionError::External(Box::new(
                QueryError::SchemaChanged { dataset },
            )));
        }
        let kept = pruning::kept_partitions(&dataset, &data, state, filters);
        let source = MemorySourceConfig::try_new(
            kept.as_deref().unwrap_or(data.partitions()),
            Arc::clone(data.schema()),
            projection.cloned(),
        )?
        .with_limit(limit);
        Ok(match data.column_statistics() {
            Some(statistics) => {
                DataSourceExec::from_data_source(WithStatistics::new(source, statistics))
            }
            None => DataSourceExec::from_data_source(source),
        })
    }
}

/// The source itself, standing in for a dataset whose acceleration is not
/// loaded yet (`ready_state: on_registration` or `on_schema_resolved`).
/// Filters, projections and limits go to the source's provider, which
/// pushes them into the query it sends. A plan holding one is planned again
/// once the acceleration is loaded.
#[derive(Debug)]
pub struct FederatedTable {
    acceleration: Arc<ArrowAcceleration>,
    source: Arc<dyn TableProvider>,
}

impl FederatedTable {
    pub fn new(acceleration: Arc<ArrowAcceleration>, source: Arc<dyn TableProvider>) -> Self {
        FederatedTable {
            acceleration,
            source,
        }
    }

    /// Whether the acceleration is still not loaded (so this plan stands).
    pub fn is_current(&self) -> bool {
        self.acceleration.current().is_none()
    }
}

#[async_trait]
impl TableProvider for FederatedTable {
    fn schema(&self) -> SchemaRef {
        self.source.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<datafusion::logical_expr::TableProviderFilterPushDown>> {
        self.source.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // A scan for no columns (`count(*)`) reads one column and drops it:
        // some source views cannot plan an empty projection themselves.
        if projection.is_some_and(Vec::is_empty) && !self.source.schema().fields().is_empty() {
            let one = self
                .source
                .scan(state, Some(&vec![0]), filters, limit)
                .await?;
            return without_columns(one);
        }
        self.source.scan(state, projection, filters, limit).await
    }
}

/// `plan`'s rows with no columns (for `count(*)` over a scan that had to
/// read one).
pub(super) fn without_columns(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    let none: Vec<datafusion::physical_plan::projection::ProjectionExpr> = Vec::new();
    Ok(Arc::new(
        datafusion::physical_plan::projection::ProjectionExec::try_new(none, plan)?,
    ))
}
