//! [`FileTable`]: a dataset answered straight from its acceleration file
//! while the rows of that file are read into memory (a restart, a restored
//! or followed snapshot). A replica serves from the moment its file is open
//! instead of once every row has been read.
//!
//! Only projection and limit go to the file; DataFusion applies every filter
//! and computes every expression, exactly as it does over the in-memory
//! rows, so the answers are the same. Once the in-memory version is
//! published, a scan planned against the file reads that instead, and a
//! cached plan holding a `FileTable` is planned again.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, project_schema};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};

use super::table::AcceleratedTable;
use crate::accelerator::{ArrowAcceleration, FileReader};

/// Batches read ahead of the query consuming them.
const READ_AHEAD: usize = 4;

#[derive(Debug)]
pub struct FileTable {
    acceleration: Arc<ArrowAcceleration>,
    reader: Arc<FileReader>,
}

impl FileTable {
    pub fn new(acceleration: Arc<ArrowAcceleration>, reader: FileReader) -> Self {
        FileTable {
            acceleration,
            reader: Arc::new(reader),
        }
    }

    /// The rows the file holds.
    pub fn rows(&self) -> usize {
        self.reader.rows()
    }

    /// Whether the in-memory version is still not published (so a plan
    /// reading the file stands).
    pub fn is_current(&self) -> bool {
        self.acceleration.current().is_none()
    }
}

#[async_trait]
impl TableProvider for FileTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(self.reader.schema())
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Published meanwhile: the same rows, from memory.
        if let Some(table) = AcceleratedTable::try_new(Arc::clone(&self.acceleration)) {
            return table.scan(state, projection, filters, limit).await;
        }
        let schema = project_schema(self.reader.schema(), projection)?;
        let rows = limit.map_or(self.reader.rows(), |n| n.min(self.reader.rows()));
        Ok(Arc::new(FileScanExec {
            dataset: self.acceleration.dataset().to_owned(),
            reader: Arc::clone(&self.reader),
            projection: projection.cloned(),
            limit,
            rows,
            properties: Arc::new(PlanProperties::new(
                EquivalenceProperties::new(Arc::clone(&schema)),
                Partitioning::UnknownPartitioning(1),
                EmissionType::Incremental,
                Boundedness::Bounded,
            )),
        }))
    }
}

/// Reads the file on a blocking thread, a few batches ahead of the query.
#[derive(Debug)]
struct FileScanExec {
    dataset: String,
    reader: Arc<FileReader>,
    projection: Option<Vec<usize>>,
    limit: Option<usize>,
    /// The rows the scan yields.
    rows: usize,
    properties: Arc<PlanProperties>,
}

impl DisplayAs for FileScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileScanExec: dataset={}", self.dataset)?;
        if let Some(limit) = self.limit {
            write!(f, ", limit={limit}")?;
        }
        Ok(())
    }
}

impl ExecutionPlan for FileScanExec {
    fn name(&self) -> &str {
        "FileScanExec"
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
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            return Ok(self);
        }
        Err(DataFusionError::Internal(
            "FileScanExec has no children".into(),
        ))
    }

    /// The exact row count: the file does not change while it is read in
    /// place (nothing refreshes the dataset before its rows are in memory).
    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        let mut statistics = Statistics::new_unknown(&self.schema());
        statistics.num_rows = Precision::Exact(self.rows);
        Ok(Arc::new(statistics))
    }

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(READ_AHEAD);
        let (reader, projection, limit, dataset) = (
            Arc::clone(&self.reader),
            self.projection.clone(),
            self.limit,
            self.dataset.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let read = reader.read(projection.as_deref(), limit, &mut |batch| {
                // Closed when the query stopped reading.
                sender
                    .blocking_send(Ok(batch))
                    .map_err(|_| "the query stopped reading".to_owned())
            });
            if let Err(message) = read
                && !sender.is_closed()
            {
                let _ = sender.blocking_send(Err(DataFusionError::Execution(format!(
                    "reading the acceleration file of dataset '{dataset}' failed: {message}"
                ))));
            }
        });
        let batches = futures::stream::unfold(receiver, |mut receiver| async move {
            receiver.recv().await.map(|batch| (batch, receiver))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batches,
        )))
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use datafusion::arrow::array::{
        ArrayRef, Decimal128Array, Int64Array, StringArray, TimestampMicrosecondArray,
    };
    use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::prelude::SessionContext;

    use super::*;
    use crate::accelerator::{Change, Checkpoint, Store};
    use crate::config::Engine;

    fn rows(count: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, true),
            Field::new("amount", DataType::Decimal128(12, 2), true),
            Field::new(
                "at",
                DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
                true,
            ),
        ]));
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(0..count)),
            Arc::new(StringArray::from_iter(
                (0..count).map(|i| (i % 7 != 0).then(|| format!("name {}", i % 13))),
            )),
            Arc::new(
                Decimal128Array::from_iter(
                    (0..count).map(|i| (i % 5 != 0).then_some(i128::from(i) * 37)),
                )
                .with_precision_and_scale(12, 2)
                .unwrap(),
            ),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(
                    (0..count).map(|i| 1_700_000_000_000_000 + i * 1_000_003),
                )
                .with_timezone("+00:00"),
            ),
        ];
        RecordBatch::try_new(schema, columns).unwrap()
    }

    async fn answer(ctx: &SessionContext, sql: &str) -> String {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    }

    /// The file read in place answers as the same rows in memory do, and
    /// once those are published the same table reads them instead.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_file_read_in_place_answers_as_the_rows_in_memory() {
        let folder = tempfile::tempdir().unwrap();
        let store = Store::open("t", Engine::Duckdb, &folder.path().join("t.db"), false).unwrap();
        let batch = rows(5000);
        let checkpoint = Checkpoint {
            last_refresh: Utc::now(),
            schema: batch.schema(),
            primary_key: vec!["id".to_owned()],
            refresh_sql: None,
            position: None,
        };
        store
            .write(&Change::Replace(vec![batch.clone()]), &checkpoint)
            .unwrap();
        let reader = store
            .reader(&checkpoint)
            .expect("DuckDB has a reader")
            .unwrap();
        assert_eq!(reader.rows(), 5000);
        let acceleration = Arc::new(ArrowAcceleration::new("t".to_owned()));
        let file = Arc::new(FileTable::new(Arc::clone(&acceleration), reader));
        assert!(file.is_current());
        let ctx = SessionContext::new();
        ctx.register_table("f", Arc::clone(&file) as Arc<dyn TableProvider>)
            .unwrap();
        ctx.register_batch("m", batch).unwrap();
        let queries = [
            "SELECT count(*) FROM {t}",
            "SELECT count(*), count(name), count(amount) FROM {t} WHERE id % 3 = 1",
            "SELECT id, name, amount, at FROM {t} WHERE amount > 100 ORDER BY id DESC LIMIT 20",
            "SELECT name, sum(amount), min(at), max(id) FROM {t} GROUP BY name ORDER BY name",
            "SELECT count(*) FROM (SELECT name FROM {t} LIMIT 7)",
            "SELECT * FROM {t} ORDER BY at LIMIT 3",
        ];
        let check = |ctx: SessionContext| async move {
            for query in queries {
                assert_eq!(
                    answer(&ctx, &query.replace("{t}", "f AS t")).await,
                    answer(&ctx, &query.replace("{t}", "m AS t")).await,
                    "{query}"
                );
            }
        };
        check(ctx.clone()).await;

        let data = store.read(&checkpoint, 2).unwrap();
        acceleration.publish(data);
        assert!(!file.is_current(), "a plan over the file is planned again");
        check(ctx).await;
    }

    /// A DuckDB acceleration file in `folder` holding `count` rows, and
    /// dataset `t` configured over it (nothing loaded or served yet).
    fn file_dataset(
        folder: &std::path::Path,
        count: i64,
    ) -> (Store, Checkpoint, crate::dataset::Dataset) {
        let path = folder.join("t.db");
        let store = Store::open("t", Engine::Duckdb, &path, false).unwrap();
        let batch = rows(count);
        let checkpoint = Checkpoint {
            last_refresh: Utc::now(),
            schema: batch.schema(),
            primary_key: vec!["id".to_owned()],
            refresh_sql: None,
            position: None,
        };
        store
            .write(&Change::Replace(vec![batch]), &checkpoint)
            .unwrap();
        let yaml = format!(
            "datasets:\n  - from: postgres:public.t\n    name: t\n    params: {{ pg_host: 127.0.0.1, pg_db: test, pg_user: postgres }}\n    acceleration:\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{}' }}\n",
            path.display()
        );
        let config = crate::config::from_yaml_str(&yaml).unwrap();
        let dataset = crate::dataset::Dataset::new(config.datasets.into_iter().next().unwrap());
        (store, checkpoint, dataset)
    }

    async fn explained(ctx: &SessionContext, sql: &str) -> String {
        answer(ctx, &format!("EXPLAIN {sql}")).await
    }

    /// The catalog answers a dataset from its file while nothing is in
    /// memory, and from memory once the rows are published.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_catalog_reads_the_file_until_the_rows_are_published() {
        let folder = tempfile::tempdir().unwrap();
        let (store, checkpoint, dataset) = file_dataset(folder.path(), 100);
        let dataset = Arc::new(dataset);
        let registry = Arc::new(crate::dataset::Registry::new(vec![Arc::clone(&dataset)]));
        let ctx = crate::query::context(&registry).unwrap();
        let sql = "SELECT sum(id) AS total FROM t WHERE name IS NOT NULL";
        assert!(ctx.sql(sql).await.is_err(), "nothing is served yet");

        let reader = store.reader(&checkpoint).unwrap().unwrap();
        dataset.serve_in_place(FileTable::new(Arc::clone(&dataset.acceleration), reader));
        assert_eq!(dataset.report().rows, Some(100));
        let from_file = answer(&ctx, sql).await;
        assert!(from_file.contains("| 4215  |"), "{from_file}");
        assert!(explained(&ctx, sql).await.contains("FileScanExec"));

        dataset
            .acceleration
            .publish(store.read(&checkpoint, 1).unwrap());
        dataset.end_in_place();
        assert_eq!(answer(&ctx, sql).await, from_file);
        assert!(!explained(&ctx, sql).await.contains("FileScanExec"));
    }

    /// A file served in place that then fails to be read into memory
    /// leaves nothing served: the dataset no longer counts as ready. Once
    /// rows are in memory, the same end keeps it ready.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_that_fails_to_load_after_serving_in_place_is_not_ready() {
        let folder = tempfile::tempdir().unwrap();
        let (store, checkpoint, dataset) = file_dataset(folder.path(), 10);
        let serve = || {
            let reader = store.reader(&checkpoint).unwrap().unwrap();
            dataset.serve_in_place(FileTable::new(Arc::clone(&dataset.acceleration), reader));
            dataset.restored(Some(checkpoint.last_refresh));
            assert!(dataset.was_ever_ready());
        };

        serve();
        dataset.end_in_place_unread();
        assert!(dataset.in_place().is_none());
        assert!(!dataset.was_ever_ready(), "nothing is served");

        serve();
        dataset
            .acceleration
            .publish(store.read(&checkpoint, 1).unwrap());
        dataset.end_in_place_unread();
        assert!(dataset.was_ever_ready(), "the rows in memory are served");
    }
}
