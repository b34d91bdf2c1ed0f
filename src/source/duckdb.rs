//! `duckdb:table` with `params.duckdb_open`: reads a table of a DuckDB
//! database file through datafusion-table-providers' DuckDB pool and table
//! provider (read-only, so other processes may read the file too), which
//! push projections and filters down into the SQL DuckDB runs.
//!
//! The file is open only while it is read: DuckDB lets one process write a
//! file only while no other process has it open, so holding it would block
//! whatever keeps the source up to date. Queries the source answers (before
//! the first load, or on zero results) open it for their scan only.
//!
//! Columns keep DuckDB's types where PostgreSQL has the same one; DuckDB's
//! view and dictionary encodings of strings and bytes are read as plain
//! text and bytea.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::TableReference;
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use datafusion_table_providers::duckdb::DuckDBTableFactory;
use datafusion_table_providers::sql::db_connection_pool::duckdbpool::DuckDbConnectionPool;
use duckdb::AccessMode;

use super::{ReadFilter, Snapshot, SourceError};

#[derive(Debug)]
pub struct DuckdbSource {
    dataset: String,
    file: PathBuf,
    table: String,
    primary_key: Vec<String>,
    /// The table as pgaccel presents it, for queries the source answers.
    federated: Arc<dyn TableProvider>,
}

impl DuckdbSource {
    /// Opens the database file read-only (it must exist: a source is never
    /// created) and resolves the table's columns and primary key.
    pub async fn connect(dataset: String, file: &Path, table: &str) -> Result<Self, SourceError> {
        if !file.is_file() {
            return Err(SourceError::Connect {
                dataset,
                message: format!("the DuckDB database file {} does not exist", file.display()),
            });
        }
        let primary_key = primary_key(&dataset, file, table).await?;
        let read = open(&dataset, file, table).await?.schema();
        let per_scan = Arc::new(OpenPerScan {
            dataset: dataset.clone(),
            file: file.to_owned(),
            table: table.to_owned(),
            schema: Arc::clone(&read),
        });
        let federated = super::federated_view(&dataset, per_scan, &pg_schema(&read))?;
        Ok(DuckdbSource {
            dataset,
            file: file.to_owned(),
            table: table.to_owned(),
            primary_key,
            federated,
        })
    }

    pub fn federated(&self) -> Arc<dyn TableProvider> {
        Arc::clone(&self.federated)
    }

    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        // Opened for this read (the stream holds the pool until it ends),
        // and resolved again, so a changed table is read as it is.
        let provider = open(&self.dataset, &self.file, &self.table).await?;
        let read_error = |message: String| SourceError::reading(&self.dataset, message);
        let frame = SessionContext::new()
            .read_table(provider)
            .map_err(|e| read_error(e.to_string()))?;
        let frame = super::restrict(&self.dataset, frame, filter)?;
        let read_schema = SchemaRef::new(frame.schema().as_arrow().clone());
        if let Some(field) = read_schema
            .fields()
            .iter()
            .find(|f| matches!(f.data_type(), DataType::Interval(_)))
        {
            return Err(SourceError::Unsupported {
                dataset: self.dataset.clone(),
                message: format!(
                    "column '{}' is a DuckDB INTERVAL, which the DuckDB reader does not deliver faithfully (a NULL interval arrives as a value); leave it out with refresh_sql, or read a view that casts it to VARCHAR",
                    field.name()
                ),
            });
        }
        let schema = pg_schema(&read_schema);
        let primary_key = super::key_within(self.primary_key.clone(), &schema);
        let stream = super::execute(&self.dataset, frame).await?;
        Ok(Snapshot {
            stream: super::convert(stream, Arc::clone(&schema)),
            schema,
            primary_key,
        })
    }
}

/// A provider over a new read-only pool of `file`: the file stays open for
/// as long as the provider (or a plan of it) lives.
async fn open(
    dataset: &str,
    file: &Path,
    table: &str,
) -> Result<Arc<dyn TableProvider>, SourceError> {
    let pool = DuckDbConnectionPool::new_file(&file.to_string_lossy(), &AccessMode::ReadOnly)
        .map_err(|e| SourceError::connect_failed(dataset, &*e))?;
    DuckDBTableFactory::new(Arc::new(pool))
        .table_provider(TableReference::bare(table))
        .await
        .map_err(|e| SourceError::Schema {
            dataset: dataset.to_owned(),
            message: e.to_string(),
        })
}

/// The table's primary-key columns, in key order; an error when the table
/// does not exist.
async fn primary_key(dataset: &str, file: &Path, table: &str) -> Result<Vec<String>, SourceError> {
    let (file, table_name) = (file.to_owned(), table.to_owned());
    let found = tokio::task::spawn_blocking(move || {
        let config = duckdb::Config::default().access_mode(AccessMode::ReadOnly)?;
        let connection = duckdb::Connection::open_with_flags(&file, config)?;
        let exists: i64 = connection.query_row(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
            [&table_name],
            |row| row.get(0),
        )?;
        let mut statement = connection.prepare(
            "SELECT unnest(constraint_column_names) FROM duckdb_constraints() \
             WHERE table_name = ? AND constraint_type = 'PRIMARY KEY'",
        )?;
        let key = statement
            .query_map([&table_name], |row| row.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, duckdb::Error>((exists > 0, key))
    })
    .await
    .map_err(|e| SourceError::connect_failed(dataset, &e))?
    .map_err(|e| SourceError::connect_failed(dataset, &e))?;
    match found {
        (true, key) => Ok(key),
        (false, _) => Err(SourceError::Schema {
            dataset: dataset.to_owned(),
            message: format!("table {table} does not exist in the DuckDB database"),
        }),
    }
}

/// The schema pgaccel keeps: strings and bytes in their plain Arrow form,
/// times in microseconds (PostgreSQL's precision).
fn pg_schema(read: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = read
        .fields()
        .iter()
        .map(|field| {
            let data_type = match field.data_type() {
                DataType::Dictionary(_, value) => plain(value),
                other => plain(other),
            };
            Field::new(field.name(), data_type, field.is_nullable())
                .with_metadata(field.metadata().clone())
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn plain(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Utf8View | DataType::LargeUtf8 => DataType::Utf8,
        DataType::BinaryView | DataType::LargeBinary => DataType::Binary,
        DataType::Time64(TimeUnit::Nanosecond) => DataType::Time64(TimeUnit::Microsecond),
        other => other.clone(),
    }
}

/// The source table for queries, opening the file for each scan only.
#[derive(Debug)]
struct OpenPerScan {
    dataset: String,
    file: PathBuf,
    table: String,
    schema: SchemaRef,
}

#[async_trait::async_trait]
impl TableProvider for OpenPerScan {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The scan sends the filters it can to DuckDB; DataFusion applies
    /// them all again, since which ones the SQL carries is decided per scan.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let provider = open(&self.dataset, &self.file, &self.table)
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        provider.scan(state, projection, filters, limit).await
    }
}
