//! [`FileTable`]: a dataset answered straight from its acceleration file,
//! either for good (a file acceleration queried in place, which never needs
//! to fit in memory) or while the rows of that file are read into memory (a
//! restart, a restored or followed snapshot, of a dataset whose refresh mode
//! revises rows in memory): a replica serves from the moment its file is
//! open instead of once every row has been read.
//!
//! Projection and limit go to the file, and so do the filters the file's
//! engine evaluates exactly as DataFusion does (comparisons, `IN`,
//! `BETWEEN`, `IS NULL` of integer, text, date and decimal columns against
//! literals, combined with AND, OR, NOT), so that a lookup by key uses the
//! file's key index and a selective filter reads only what it selects.
//! DataFusion applies every filter again and computes every expression,
//! exactly as it does over the in-memory rows, so the answers are the same.
//! Once an in-memory version is published, a scan planned against the file
//! reads that instead, and a cached plan holding a `FileTable` is planned
//! again.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, project_schema};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};

use super::table::AcceleratedTable;
use crate::accelerator::store::{AggregateQuery, literal_sql, quote};
use crate::accelerator::{ArrowAcceleration, FileReader, FileVersion};

/// Batches read ahead of the query consuming them.
const READ_AHEAD: usize = 4;

#[derive(Debug)]
pub struct FileTable {
    acceleration: Arc<ArrowAcceleration>,
    reader: Arc<FileReader>,
    /// Read in place for good, rather than until the rows are in memory.
    in_place: bool,
}

impl FileTable {
    /// The file, read until its rows are in memory.
    pub fn new(acceleration: Arc<ArrowAcceleration>, reader: FileReader) -> Self {
        FileTable {
            acceleration,
            reader: Arc::new(reader),
            in_place: false,
        }
    }

    /// The version `version` of a file acceleration queried in place.
    pub fn in_place(acceleration: Arc<ArrowAcceleration>, version: &FileVersion) -> Self {
        FileTable {
            acceleration,
            reader: Arc::clone(&version.reader),
            in_place: true,
        }
    }

    /// The acceleration, when this is its version queried in place for good.
    pub fn served_in_place(&self) -> Option<&Arc<ArrowAcceleration>> {
        self.in_place.then_some(&self.acceleration)
    }

    /// The reader of the file version this table reads.
    pub fn reader(&self) -> Arc<FileReader> {
        Arc::clone(&self.reader)
    }

    /// The rows the file holds.
    pub fn rows(&self) -> usize {
        self.reader.rows()
    }

    /// Whether a plan reading the file stands: for a file queried in place,
    /// while the version in the file has the columns planned with; for one
    /// read into memory, while those rows are not published.
    pub fn is_current(&self) -> bool {
        if self.in_place {
            return file_version_has(&self.acceleration, self.reader.schema());
        }
        self.acceleration.current().is_none()
    }

    /// `filter` as a condition the file's engine evaluates as DataFusion
    /// does, or `None` when it may not.
    fn condition(&self, filter: &Expr) -> Option<String> {
        condition_sql(filter, &self.reader)
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

    /// Inexact: the file selects a superset of the rows (exactly the rows,
    /// in fact), and DataFusion filters again.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|filter| match self.condition(filter) {
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Published meanwhile: the same rows, from memory.
        if !self.in_place
            && let Some(table) = AcceleratedTable::try_new(Arc::clone(&self.acceleration))
        {
            return table.scan(state, projection, filters, limit).await;
        }
        let schema = project_schema(self.reader.schema(), projection)?;
        let conditions: Vec<String> = filters.iter().filter_map(|f| self.condition(f)).collect();
        let condition = (!conditions.is_empty()).then(|| conditions.join(" AND "));
        // Exact only for the whole table of a file read until loaded, which
        // does not change meanwhile; a file queried in place may commit a
        // new version between planning and execution.
        let rows = limit.map_or(self.reader.rows(), |n| n.min(self.reader.rows()));
        let rows = if self.in_place || condition.is_some() {
            Precision::Inexact(rows)
        } else {
            Precision::Exact(rows)
        };
        Ok(Arc::new(FileScanExec::new(
            self.acceleration.dataset(),
            Arc::clone(&self.reader),
            FileRead::Rows {
                projection: projection.cloned(),
                condition,
                limit,
            },
            schema,
            rows,
        )))
    }
}

/// Whether the version of `acceleration` in its file has the columns of
/// `schema`, which a plan reading the file in place was planned against.
pub(super) fn file_version_has(acceleration: &ArrowAcceleration, schema: &SchemaRef) -> bool {
    acceleration
        .file_version()
        .is_some_and(|version| version.reader.schema().fields() == schema.fields())
}

/// What a [`FileScanExec`] reads from the file.
#[derive(Debug, Clone)]
pub(super) enum FileRead {
    /// The columns `projection` of at most `limit` rows for which
    /// `condition` (the pushed filters, as SQL of the file's engine) holds.
    Rows {
        projection: Option<Vec<usize>>,
        condition: Option<String>,
        limit: Option<usize>,
    },
    /// The columns `projection` of an aggregate the file's engine computes.
    Aggregate {
        query: AggregateQuery,
        projection: Option<Vec<usize>>,
    },
}

/// Reads the file on a blocking thread, a few batches ahead of the query.
#[derive(Debug)]
pub(super) struct FileScanExec {
    dataset: String,
    reader: Arc<FileReader>,
    read: FileRead,
    /// The rows the scan yields.
    rows: Precision<usize>,
    properties: Arc<PlanProperties>,
}

impl FileScanExec {
    pub(super) fn new(
        dataset: &str,
        reader: Arc<FileReader>,
        read: FileRead,
        schema: SchemaRef,
        rows: Precision<usize>,
    ) -> Self {
        FileScanExec {
            dataset: dataset.to_owned(),
            reader,
            read,
            rows,
            properties: Arc::new(PlanProperties::new(
                EquivalenceProperties::new(schema),
                Partitioning::UnknownPartitioning(1),
                EmissionType::Incremental,
                Boundedness::Bounded,
            )),
        }
    }
}

impl DisplayAs for FileScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileScanExec: dataset={}", self.dataset)?;
        match &self.read {
            FileRead::Rows {
                condition, limit, ..
            } => {
                if let Some(condition) = condition {
                    write!(f, ", condition={condition}")?;
                }
                if let Some(limit) = limit {
                    write!(f, ", limit={limit}")?;
                }
            }
            FileRead::Aggregate { query, .. } => {
                write!(f, ", aggregate={}", query.sql(self.reader.table()))?;
            }
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

    /// The row count (see `FileTable::scan` for when it is exact).
    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        let mut statistics = Statistics::new_unknown(&self.schema());
        statistics.num_rows = self.rows;
        Ok(Arc::new(statistics))
    }

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let (sender, receiver) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(READ_AHEAD);
        let (reader, read, dataset) = (
            Arc::clone(&self.reader),
            self.read.clone(),
            self.dataset.clone(),
        );
        tokio::task::spawn_blocking(move || {
            let mut sink = |batch| {
                // Closed when the query stopped reading.
                sender
                    .blocking_send(Ok(batch))
                    .map_err(|_| "the query stopped reading".to_owned())
            };
            let read = match read {
                FileRead::Rows {
                    projection,
                    condition,
                    limit,
                } => reader.read(
                    projection.as_deref(),
                    condition.as_deref(),
                    limit,
                    &mut sink,
                ),
                FileRead::Aggregate { query, projection } => {
                    reader.aggregate(&query, &mut |batch| match &projection {
                        Some(columns) => sink(batch.project(columns).map_err(|e| e.to_string())?),
                        None => sink(batch),
                    })
                }
            };
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

/// `filter` as SQL that DuckDB and SQLite evaluate to the same truth value
/// DataFusion does, for every row of the file `reader` reads; `None` for
/// anything else. Written here rather than with DataFusion's unparser
/// because what matters is the few shapes whose meaning is the same in all
/// three engines, each column's stored type checked.
pub(super) fn condition_sql(filter: &Expr, reader: &FileReader) -> Option<String> {
    let column = |expr: &Expr, comparable: bool| -> Option<(String, DataType)> {
        let Expr::Column(column) = expr else {
            return None;
        };
        let field = reader.schema().field_with_name(&column.name).ok()?;
        if comparable && !reader.compares_as_served(field.data_type()) {
            return None;
        }
        Some((quote(&column.name), field.data_type().clone()))
    };
    let value = |expr: &Expr, column_type: &DataType| -> Option<String> {
        let Expr::Literal(value, _) = expr else {
            return None;
        };
        literal_sql(value, column_type)
    };
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And | Operator::Or => Some(format!(
                "({} {op} {})",
                condition_sql(left, reader)?,
                condition_sql(right, reader)?
            )),
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq => {
                let (name, op, literal) = match column(left, true) {
                    Some((name, data_type)) => (name, *op, value(right, &data_type)?),
                    None => {
                        let (name, data_type) = column(right, true)?;
                        (name, op.swap()?, value(left, &data_type)?)
                    }
                };
                Some(format!("{name} {op} {literal}"))
            }
            _ => None,
        },
        Expr::Not(inner) => Some(format!("(NOT {})", condition_sql(inner, reader)?)),
        Expr::IsNull(inner) => Some(format!("{} IS NULL", column(inner, false)?.0)),
        Expr::IsNotNull(inner) => Some(format!("{} IS NOT NULL", column(inner, false)?.0)),
        Expr::InList(list) => {
            let (name, data_type) = column(&list.expr, true)?;
            let values = list
                .list
                .iter()
                .map(|item| value(item, &data_type))
                .collect::<Option<Vec<_>>>()?;
            let not = if list.negated { "NOT " } else { "" };
            (!values.is_empty()).then(|| format!("{name} {not}IN ({})", values.join(", ")))
        }
        Expr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => {
            let (name, data_type) = column(expr, true)?;
            let not = if *negated { "NOT " } else { "" };
            Some(format!(
                "{name} {not}BETWEEN {} AND {}",
                value(low, &data_type)?,
                value(high, &data_type)?
            ))
        }
        _ => None,
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

    /// The checkpoint of `batch`'s rows, keyed by `id`.
    fn keyed_by_id(batch: &RecordBatch) -> Checkpoint {
        Checkpoint {
            last_refresh: Utc::now(),
            schema: batch.schema(),
            primary_key: vec!["id".to_owned()],
            refresh_sql: None,
            position: None,
        }
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
        let store = Store::open(
            "t",
            Engine::Duckdb,
            &folder.path().join("t.db"),
            false,
            None,
        )
        .unwrap();
        let batch = rows(5000);
        let checkpoint = keyed_by_id(&batch);
        store
            .write(&Change::Replace(vec![batch.clone()]), &checkpoint)
            .unwrap();
        let reader = store.reader(&checkpoint).unwrap();
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

    /// A file queried in place evaluates in the file the filters its
    /// engine evaluates as DataFusion does, and answers every query as the
    /// same rows in memory do, pushed down or not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_queried_in_place_filters_as_the_rows_in_memory_do() {
        let queries = [
            "SELECT * FROM {t} WHERE id = 42",
            "SELECT id, name FROM {t} WHERE id IN (1, 2, 4999, 7000) ORDER BY id",
            "SELECT id FROM {t} WHERE id NOT IN (1, 2) AND id < 20 ORDER BY id",
            "SELECT id, amount FROM {t} WHERE name = 'name 3' AND id BETWEEN 100 AND 300 ORDER BY id",
            "SELECT count(*) FROM {t} WHERE name < 'name 2' OR amount >= 1000.50",
            "SELECT id FROM {t} WHERE NOT (id > 40) AND name IS NULL ORDER BY id",
            "SELECT count(*), sum(amount) FROM {t} WHERE name IS NOT NULL AND id >= 4990",
            "SELECT count(*) FROM {t} WHERE name = 'it''s' OR name = 'name 1'",
            "SELECT id FROM {t} WHERE amount BETWEEN 10 AND 20.5 ORDER BY id",
            "SELECT id FROM {t} WHERE 4995 < id ORDER BY id",
            "SELECT count(*) FROM {t} WHERE at > '2023-11-14 23:13:30+00'",
            "SELECT count(*) FROM {t} WHERE id > 100",
            "SELECT name, count(*) FROM {t} WHERE id <> 7 GROUP BY name ORDER BY name",
        ];
        for engine in [Engine::Duckdb, Engine::Sqlite] {
            let folder = tempfile::tempdir().unwrap();
            let store = Store::open("t", engine, &folder.path().join("t.db"), false, None).unwrap();
            let batch = rows(5000);
            let checkpoint = keyed_by_id(&batch);
            let mut feed = vec![
                Some(batch.slice(0, 3000)),
                Some(batch.slice(3000, 2000)),
                None,
            ]
            .into_iter();
            let committed = store
                .replace_from(checkpoint, &mut || feed.next(), Utc::now)
                .unwrap();
            let acceleration = Arc::new(ArrowAcceleration::new("t".to_owned()));
            let version = acceleration.publish_file(FileVersion {
                reader: Arc::new(store.reader(&committed).unwrap()),
                checkpoint: committed,
                bytes: store.bytes(),
            });
            assert_eq!(acceleration.served_rows(), Some(5000));
            let file = Arc::new(FileTable::in_place(Arc::clone(&acceleration), &version));
            assert!(file.is_current());
            let ctx = SessionContext::new();
            ctx.register_table("f", Arc::clone(&file) as Arc<dyn TableProvider>)
                .unwrap();
            ctx.register_batch("m", batch).unwrap();
            for query in queries {
                assert_eq!(
                    answer(&ctx, &query.replace("{t}", "f AS t")).await,
                    answer(&ctx, &query.replace("{t}", "m AS t")).await,
                    "{engine:?}: {query}"
                );
            }
            let plan = explained(
                &ctx,
                "SELECT name FROM f WHERE id = 42 AND name IS NOT NULL",
            )
            .await;
            assert!(
                plan.contains(r#"condition="id" = 42 AND "name" IS NOT NULL"#),
                "{engine:?}: the key and the null test go to the file: {plan}"
            );
            let plan =
                explained(&ctx, "SELECT id FROM f WHERE at > '2023-11-14 23:13:30+00'").await;
            assert!(
                !plan.contains("condition="),
                "{engine:?}: a timestamp with time zone is compared by DataFusion only: {plan}"
            );
        }
    }

    /// A streamed replacement that ends without its last message (a read
    /// that failed) leaves the file's previous version, and its key index
    /// serves lookups.
    #[test]
    fn a_streamed_replacement_cut_short_keeps_the_previous_version() {
        for engine in [Engine::Duckdb, Engine::Sqlite] {
            let folder = tempfile::tempdir().unwrap();
            let store = Store::open("t", engine, &folder.path().join("t.db"), false, None).unwrap();
            let batch = rows(100);
            let checkpoint = keyed_by_id(&batch);
            let mut feed = vec![Some(batch.clone()), None].into_iter();
            let microseconds = || chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
            let first = store
                .replace_from(checkpoint.clone(), &mut || feed.next(), microseconds)
                .unwrap();
            let mut cut = vec![Some(rows(10))].into_iter();
            let error = store
                .replace_from(checkpoint, &mut || cut.next(), Utc::now)
                .unwrap_err();
            assert!(
                error.to_string().contains("the read of the source stopped"),
                "{error}"
            );
            assert_eq!(store.checkpoint().unwrap(), Some(first.clone()));
            let reader = store.reader(&first).unwrap();
            assert_eq!(reader.rows(), 100, "{engine:?}");
            let mut found = Vec::new();
            reader
                .read(Some(&[1]), Some(r#""id" = 99"#), None, &mut |batch| {
                    found.push(batch);
                    Ok(())
                })
                .unwrap();
            let names = pretty_format_batches(&found).unwrap().to_string();
            assert!(names.contains("name 8"), "{engine:?}: {names}");
        }
    }

    /// A DuckDB acceleration file in `folder` holding `count` rows, and
    /// dataset `t` configured over it (nothing loaded or served yet).
    fn file_dataset(
        folder: &std::path::Path,
        count: i64,
    ) -> (Store, Checkpoint, crate::dataset::Dataset) {
        let path = folder.join("t.db");
        let store = Store::open("t", Engine::Duckdb, &path, false, None).unwrap();
        let batch = rows(count);
        let checkpoint = keyed_by_id(&batch);
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

        let reader = store.reader(&checkpoint).unwrap();
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
            let reader = store.reader(&checkpoint).unwrap();
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
