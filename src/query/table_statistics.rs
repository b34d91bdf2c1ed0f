//! [`WithStatistics`]: an in-memory scan that tells the optimizer each
//! column's range and distinct count, from the version's column statistics
//! (`accelerator::statistics`).
//!
//! DataFusion's memory scan reports row counts and null counts only, and
//! offers no way to add more; this wraps it, answers the same to every
//! other question, and keeps the wrapping through projection, limit and
//! repartitioning, which replace the scan with a new one.

use std::fmt;
use std::sync::Arc;

use datafusion::common::Statistics;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSource;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::{EquivalenceProperties, LexOrdering, Partitioning, PhysicalExpr};
use datafusion::physical_plan::DisplayFormatType;
use datafusion::physical_plan::execution_plan::SchedulingType;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;

use crate::accelerator::TableStatistics;

/// A memory scan with the column statistics of the version it reads.
#[derive(Debug, Clone)]
pub struct WithStatistics {
    scan: MemorySourceConfig,
    table: Arc<TableStatistics>,
}

impl WithStatistics {
    pub fn new(scan: MemorySourceConfig, table: Arc<TableStatistics>) -> Self {
        WithStatistics { scan, table }
    }

    /// `source`, a memory scan derived from this one, wrapped again.
    fn wrap(&self, source: Arc<dyn DataSource>) -> Arc<dyn DataSource> {
        match source.downcast_ref::<MemorySourceConfig>() {
            Some(scan) => Arc::new(WithStatistics::new(scan.clone(), Arc::clone(&self.table))),
            None => source,
        }
    }
}

impl DataSource for WithStatistics {
    fn open(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.scan.open(partition, context)
    }

    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.scan.fmt_as(t, f)
    }

    fn repartitioned(
        &self,
        target_partitions: usize,
        repartition_file_min_size: usize,
        output_ordering: Option<LexOrdering>,
    ) -> Result<Option<Arc<dyn DataSource>>> {
        Ok(self
            .scan
            .repartitioned(
                target_partitions,
                repartition_file_min_size,
                output_ordering,
            )?
            .map(|source| self.wrap(source)))
    }

    fn output_partitioning(&self) -> Partitioning {
        self.scan.output_partitioning()
    }

    fn eq_properties(&self) -> EquivalenceProperties {
        self.scan.eq_properties()
    }

    fn scheduling_type(&self) -> SchedulingType {
        self.scan.scheduling_type()
    }

    /// The memory scan's statistics, with each column's range and distinct
    /// count over the whole table added to the statistics of the whole scan.
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let scanned = self.scan.partition_statistics(partition)?;
        if partition.is_some() {
            return Ok(scanned);
        }
        let mut statistics = Arc::unwrap_or_clone(scanned);
        let projection = self.scan.projection();
        for (position, column) in statistics.column_statistics.iter_mut().enumerate() {
            let index = projection
                .as_ref()
                .map_or(position, |projection| projection[position]);
            let Some(table) = self.table.columns.get(index) else {
                continue;
            };
            column.min_value = table.min_value.clone();
            column.max_value = table.max_value.clone();
            column.distinct_count = table.distinct_count;
        }
        Ok(Arc::new(statistics))
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn DataSource>> {
        self.scan.with_fetch(limit).map(|source| self.wrap(source))
    }

    fn fetch(&self) -> Option<usize> {
        self.scan.fetch()
    }

    fn metrics(&self) -> ExecutionPlanMetricsSet {
        self.scan.metrics()
    }

    fn try_swapping_with_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn DataSource>>> {
        Ok(self
            .scan
            .try_swapping_with_projection(projection)?
            .map(|source| self.wrap(source)))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.scan.apply_expressions(f)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::prelude::SessionContext;

    use crate::accelerator::TableDataBuilder;
    use crate::dataset::{Dataset, Registry};

    /// Publishes `columns` (name, values) as the rows of `dataset`.
    fn publish(dataset: &Dataset, columns: &[(&str, Vec<i64>)]) {
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(name, _)| Field::new(*name, DataType::Int64, false))
                .collect::<Vec<_>>(),
        ));
        let arrays: Vec<ArrayRef> = columns
            .iter()
            .map(|(_, values)| Arc::new(Int64Array::from(values.clone())) as ArrayRef)
            .collect();
        let mut builder = TableDataBuilder::new(Arc::clone(&schema));
        builder
            .push(RecordBatch::try_new(schema, arrays).unwrap())
            .unwrap();
        dataset.acceleration.publish(builder.finish(2).unwrap());
    }

    async fn explained(ctx: &SessionContext, sql: &str) -> String {
        let batches = ctx
            .sql(&format!("EXPLAIN {sql}"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string()
    }

    /// With each key's distinct count known, a join's output is estimated
    /// from its keys, not as its smaller input, so the next join builds its
    /// hash table on the small table instead of on that output; and the
    /// scan reports the range and distinct count of each column it reads.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_join_builds_on_the_side_the_statistics_show_smaller() {
        let yaml = ["big", "medium", "small"]
            .iter()
            .map(|name| {
                format!(
                    "  - from: postgres:public.{name}\n    name: {name}\n    params: {{ pg_host: 127.0.0.1, pg_db: test, pg_user: postgres }}\n"
                )
            })
            .collect::<String>();
        let config = crate::config::from_yaml_str(&format!("datasets:\n{yaml}")).unwrap();
        let datasets: Vec<Arc<Dataset>> = config
            .datasets
            .into_iter()
            .map(|dataset| Arc::new(Dataset::new(dataset)))
            .collect();
        // 20,000 rows whose `k` takes 100 values, each joined to one of
        // 100 `medium` rows: the join gives 20,000 rows, not 100.
        publish(
            &datasets[0],
            &[
                ("k", (0..20_000).map(|i| i % 100).collect()),
                ("s", (0..20_000).map(|i| i % 1000).collect()),
            ],
        );
        publish(&datasets[1], &[("id", (0..100).collect())]);
        publish(&datasets[2], &[("id", (0..1000).collect())]);
        let deadline = Instant::now() + Duration::from_secs(30);
        while datasets.iter().any(|dataset| {
            dataset
                .acceleration
                .current()
                .is_some_and(|data| data.column_statistics().is_none())
        }) {
            assert!(Instant::now() < deadline, "statistics not computed in 30 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let registry = Arc::new(Registry::new(datasets));
        let ctx = crate::query::context(&registry).unwrap();

        let plan = ctx
            .table("big")
            .await
            .unwrap()
            .select_columns(&["s"])
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let scan = plan
            .downcast_ref::<datafusion::datasource::source::DataSourceExec>()
            .unwrap_or_else(|| panic!("a bare scan: {plan:?}"));
        let statistics = scan.data_source().partition_statistics(None).unwrap();
        let s = &statistics.column_statistics[0];
        assert_eq!(
            s.min_value.get_value(),
            Some(&datafusion::common::ScalarValue::Int64(Some(0)))
        );
        assert_eq!(
            s.max_value.get_value(),
            Some(&datafusion::common::ScalarValue::Int64(Some(999)))
        );
        assert!(
            s.distinct_count
                .get_value()
                .is_some_and(|n| (950..=1050).contains(n)),
            "{s:?}"
        );

        let sql = "SELECT count(*) FROM big JOIN medium ON big.k = medium.id JOIN small ON big.s = small.id";
        let plan = explained(&ctx, sql).await;
        let outer_join = plan
            .lines()
            .find(|line| line.contains("HashJoinExec"))
            .expect("a hash join");
        assert!(
            outer_join.contains("on=[(id@0, s@"),
            "the outer join should build on `small`:\n{plan}"
        );
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let count = batches[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(0);
        assert_eq!(count, 20_000);
    }
}
