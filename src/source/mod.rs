//! Sources: where a dataset's rows come from. One file per source kind; each
//! resolves the source table's schema and reads its rows as Arrow batches.
//!
//! A source knows nothing of accelerations or schedules: the refresh path asks
//! it for a stream and decides what to do with it. Errors are classified here,
//! once, as transient (worth retrying) or permanent.

pub mod binlog;
pub mod change;
pub mod classify;
mod duckdb;
mod file;
pub mod http;
mod mysql;
mod mysql_read;
mod objects;
mod pg_copy;
pub mod pg_stream;
pub mod pgoutput;
mod postgres;
pub mod slots;
mod sqlite;
mod time;

use std::sync::Arc;

use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::ScalarValue;
use datafusion::error::DataFusionError;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{Partitioning, PlanProperties};
use futures::StreamExt;

use datafusion::prelude::DataFrame;

use crate::config::{DatasetConfig, RefreshSql, SourceParams, SourceRef};

use self::classify::Class;

pub use self::duckdb::DuckdbSource;
pub use file::FileSource;
pub use mysql::MysqlSource;
pub use postgres::{PostgresSource, postgres_pool};
pub use sqlite::SqliteSource;
pub use time::{TimeBound, instant, instants};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot connect to the source of dataset '{dataset}': {message}")]
    Connect { dataset: String, message: String },
    #[error(
        "the source of dataset '{dataset}' rejected its configuration (credentials or TLS): {message}"
    )]
    Rejected { dataset: String, message: String },
    #[error("cannot resolve the schema of the source table of dataset '{dataset}': {message}")]
    Schema { dataset: String, message: String },
    #[error("reading the source of dataset '{dataset}' failed: {message}")]
    Read { dataset: String, message: String },
    #[error("dataset '{dataset}': {message}")]
    Unsupported { dataset: String, message: String },
    #[error(
        "the refresh_sql or refresh_data_window of dataset '{dataset}' does not fit its source table: {message}"
    )]
    RefreshSql { dataset: String, message: String },
    #[error("the source of dataset '{dataset}' refused the read: {message}")]
    Query { dataset: String, message: String },
    /// A file was overwritten after the read listed it: the read stopped
    /// rather than mix two generations of it, and starts over.
    #[error(
        "a file of the source of dataset '{dataset}' changed while it was read, so the read stopped rather than mix two versions of it and is retried: {message}"
    )]
    GenerationChanged { dataset: String, message: String },
}

impl SourceError {
    /// A connection failure, classified by the typed error of the driver
    /// in its causes (see [`classify`]): rejected credentials, a failed
    /// TLS handshake or certificate check, a database that does not exist
    /// or may not be connected to are configuration errors no retry
    /// resolves; anything else (refused, reset, timed out, the server
    /// starting or shutting down) is worth retrying.
    pub fn connect_failed(dataset: &str, error: &(dyn std::error::Error + 'static)) -> Self {
        let dataset = dataset.to_owned();
        let message = with_causes(error);
        match classify::of(error) {
            Some(Class::Rejected | Class::Refused) => SourceError::Rejected { dataset, message },
            Some(Class::Transient) | None => SourceError::Connect { dataset, message },
        }
    }

    /// A read failure. The table providers pass a read's errors on as text
    /// only, so it is classified afterwards, by asking the source again
    /// ([`Source::classify_read`]); until then it counts as transient.
    pub fn reading(dataset: &str, message: String) -> Self {
        SourceError::Read {
            dataset: dataset.to_owned(),
            message,
        }
    }

    /// A failure of a read's stream: a file that changed after it was
    /// listed, or else as [`SourceError::reading`] classifies it.
    pub fn stream_failed(dataset: &str, error: &datafusion::error::DataFusionError) -> Self {
        if objects::generation_changed(error) {
            return SourceError::GenerationChanged {
                dataset: dataset.to_owned(),
                message: error.to_string(),
            };
        }
        SourceError::reading(dataset, error.to_string())
    }

    /// Transient errors (connectivity, a read cut short, a file changed
    /// mid-read) are worth retrying; schema and configuration errors are
    /// not.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            SourceError::Connect { .. }
                | SourceError::Read { .. }
                | SourceError::GenerationChanged { .. }
        )
    }

    /// The `reason` label of `dataset_acceleration_refresh_errors`.
    pub fn reason(&self) -> &'static str {
        match self {
            SourceError::Connect { .. } => "connect",
            SourceError::Rejected { .. } => "credentials",
            SourceError::Schema { .. } => "schema",
            SourceError::Read { .. } => "read",
            SourceError::Unsupported { .. } | SourceError::RefreshSql { .. } => "config",
            SourceError::Query { .. } => "query",
            SourceError::GenerationChanged { .. } => "object_generation_changed",
        }
    }
}

/// A connected source of one dataset.
#[derive(Debug)]
pub enum Source {
    Postgres(PostgresSource),
    Mysql(MysqlSource),
    Sqlite(SqliteSource),
    Duckdb(DuckdbSource),
    File(FileSource),
    Http(http::HttpSource),
}

impl Source {
    /// Connects to the source and resolves the table's schema.
    pub async fn connect(config: &DatasetConfig) -> Result<Source, SourceError> {
        let dataset = config.name.to_string();
        match (&config.from, &config.params) {
            (SourceRef::Postgres { schema, table }, SourceParams::Postgres(params)) => {
                let schema = schema.as_deref().unwrap_or("public");
                PostgresSource::connect(dataset, params, schema, table)
                    .await
                    .map(Source::Postgres)
            }
            (SourceRef::Mysql { database, table }, SourceParams::Mysql(params)) => {
                MysqlSource::connect(dataset, params, database.as_deref(), table)
                    .await
                    .map(Source::Mysql)
            }
            (SourceRef::Sqlite { table }, SourceParams::Sqlite { file }) => {
                SqliteSource::connect(dataset, file, table)
                    .await
                    .map(Source::Sqlite)
            }
            (SourceRef::Duckdb { table }, SourceParams::Duckdb { open }) => {
                DuckdbSource::connect(dataset, open, table)
                    .await
                    .map(Source::Duckdb)
            }
            (
                from @ (SourceRef::File { .. } | SourceRef::S3 { .. }),
                SourceParams::File { format, store },
            ) => {
                let modified = [&config.time_column, &config.time_partition_column]
                    .into_iter()
                    .any(|column| column.as_deref() == Some(file::LAST_MODIFIED));
                let objects = match from {
                    SourceRef::S3 { url } => objects::Objects::s3(url, store),
                    SourceRef::File { path } => objects::Objects::local(path),
                    _ => unreachable!("matched above"),
                }
                .map_err(|message| SourceError::Schema {
                    dataset: dataset.clone(),
                    message,
                })?;
                FileSource::open(dataset, objects, *format, modified)
                    .await
                    .map(Source::File)
            }
            (SourceRef::Http { url }, SourceParams::Http(params)) => {
                http::HttpSource::connect(dataset, url, params).map(Source::Http)
            }
            (from, _) => Err(SourceError::Unsupported {
                dataset,
                message: format!(
                    "the source `{from:?}` is not supported yet by this version of pgaccel"
                ),
            }),
        }
    }

    /// The source's table as pgaccel presents it (same columns and types as
    /// an acceleration of it), for queries the source answers itself while
    /// nothing is loaded.
    pub fn federated(&self) -> Option<Arc<dyn TableProvider>> {
        Some(match self {
            Source::Postgres(source) => source.federated(),
            Source::Mysql(source) => source.federated(),
            Source::Sqlite(source) => source.federated(),
            Source::Duckdb(source) => source.federated(),
            Source::File(source) => source.federated()?,
            Source::Http(source) => source.federated(),
        })
    }

    /// Reads the source table's rows (those `filter` selects), with the
    /// table's current schema and primary key.
    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        match self {
            Source::Postgres(source) => source.read_all(filter).await,
            Source::Mysql(source) => source.read_all(filter).await,
            Source::Sqlite(source) => source.read_all(filter).await,
            Source::Duckdb(source) => source.read_all(filter).await,
            Source::File(source) => source.read_all(filter).await,
            Source::Http(source) => source.read_all(filter).await,
        }
    }

    /// Classifies a failed read (which the table providers report as text)
    /// by reading the table again on a connection of pgaccel's own and
    /// typing the error that meets, if any: a source that now refuses the
    /// table (privilege, table gone) or the credentials is not retried;
    /// one that answers, or cannot be reached, may be. Other errors, and
    /// sources without a server, are returned as they are.
    pub async fn classify_read(&self, error: SourceError) -> SourceError {
        /// A probe that hangs (a source that stopped answering) says nothing.
        const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
        let SourceError::Read { dataset, message } = error else {
            return error;
        };
        let probe = async {
            match self {
                Source::Postgres(source) => source.probe().await,
                Source::Mysql(source) => source.probe().await,
                _ => None,
            }
        };
        match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            Ok(Some(Class::Refused)) => SourceError::Query { dataset, message },
            Ok(Some(Class::Rejected)) => SourceError::Rejected { dataset, message },
            _ => SourceError::Read { dataset, message },
        }
    }
}

/// One complete read of a source table.
pub struct Snapshot {
    /// The table's columns, with [`crate::accelerator::PG_TYPE_METADATA`] on
    /// those whose PostgreSQL type Arrow cannot express.
    pub schema: SchemaRef,
    /// The source's own primary key (column names); empty when it has none
    /// or cannot declare one.
    pub primary_key: Vec<String>,
    pub stream: SendableRecordBatchStream,
}

/// Which rows and columns of the source table a refresh reads.
#[derive(Debug, Clone, Default)]
pub struct ReadFilter {
    pub refresh_sql: Option<RefreshSql>,
    /// `refresh_data_window` (and the append high-water mark), AND-ed with
    /// the predicate of `refresh_sql`.
    pub since: Option<TimeBound>,
    /// A partition-pruning bound on `time_partition_column`.
    pub floor: Option<Floor>,
}

/// `column >= value`, with `value` of the column's own type.
#[derive(Debug, Clone)]
pub struct Floor {
    pub column: String,
    pub value: ScalarValue,
}

/// The error's message followed by those of its causes: a pool's own
/// message ("MySQL connection failed") hides the server's reason, or which
/// certificate check failed.
pub(super) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string().trim().to_owned();
    let mut cause = error.source();
    while let Some(error) = cause {
        let message = error.to_string();
        if !text.contains(message.trim()) {
            text.push_str(": ");
            text.push_str(message.trim());
        }
        cause = error.source();
    }
    text
}

/// An error of a source server as a plan's error, with the server's own
/// message (drivers often say only "db error").
pub(super) fn plan_error(error: &(dyn std::error::Error + 'static)) -> DataFusionError {
    DataFusionError::Execution(with_causes(error))
}

/// The properties of a plan that reads a source in `partitions` streams,
/// each handing on rows as they come.
pub(super) fn read_properties(schema: SchemaRef, partitions: usize) -> Arc<PlanProperties> {
    Arc::new(PlanProperties::new(
        EquivalenceProperties::new(schema),
        Partitioning::UnknownPartitioning(partitions),
        EmissionType::Incremental,
        Boundedness::Bounded,
    ))
}

/// `array` with its buffers cut to what it holds: a builder grows by
/// doubling, and a batch kept for the life of a version should not carry
/// the unused half.
pub(super) fn fitted<A: datafusion::arrow::array::Array + 'static>(
    mut array: A,
) -> datafusion::arrow::array::ArrayRef {
    array.shrink_to_fit();
    Arc::new(array)
}

/// A CA file named by `key` (`params.pg_sslrootcert`, ...) must be
/// readable: the pools would report only that some path does not exist.
pub(super) fn check_root_cert(key: &str, path: Option<&std::path::Path>) -> Result<(), String> {
    match path {
        Some(path) => std::fs::File::open(path)
            .map(drop)
            .map_err(|e| format!("{key}: cannot read {}: {e}", path.display())),
        None => Ok(()),
    }
}

/// Applies `filter` to a read of the whole source table: the column list of
/// `refresh_sql` as a projection, its predicate and the time bound as
/// filters, which DataFusion pushes into the source's scan (for PostgreSQL,
/// into the SQL it sends).
fn restrict(
    dataset: &str,
    frame: DataFrame,
    filter: &ReadFilter,
) -> Result<DataFrame, SourceError> {
    let misfit = |message: String| SourceError::RefreshSql {
        dataset: dataset.to_owned(),
        message,
    };
    let mut frame = frame;
    if let Some(since) = &filter.since {
        let predicate = since.predicate(frame.schema()).map_err(misfit)?;
        frame = frame.filter(predicate).map_err(|e| misfit(e.to_string()))?;
    }
    if let Some(floor) = &filter.floor {
        let column = datafusion::common::Column::new_unqualified(&floor.column);
        if !frame.schema().has_column(&column) {
            let message = format!(
                "time_partition_column '{}' is not a column of the source",
                floor.column
            );
            return Err(misfit(message));
        }
        let predicate =
            datafusion::prelude::col(column).gt_eq(datafusion::prelude::lit(floor.value.clone()));
        frame = frame.filter(predicate).map_err(|e| misfit(e.to_string()))?;
    }
    let Some(refresh_sql) = &filter.refresh_sql else {
        return Ok(frame);
    };
    if let Some(predicate) = refresh_sql.filter() {
        let predicate = frame
            .parse_sql_expr(predicate)
            .map_err(|e| misfit(e.to_string()))?;
        frame = frame.filter(predicate).map_err(|e| misfit(e.to_string()))?;
    }
    match refresh_sql.columns() {
        Some(columns) => {
            let names: Vec<&str> = columns.iter().map(String::as_str).collect();
            frame
                .select_columns(&names)
                .map_err(|e| misfit(e.to_string()))
        }
        None => Ok(frame),
    }
}

/// A view of `provider` with the columns of `schema`: the same names, cast
/// to `schema`'s types where they differ and carrying its PostgreSQL type
/// annotations. Filters and projections on the view still reach
/// `provider`, which pushes them to the source.
fn federated_view(
    dataset: &str,
    provider: Arc<dyn TableProvider>,
    schema: &SchemaRef,
) -> Result<Arc<dyn TableProvider>, SourceError> {
    let schema_error = |e: datafusion::error::DataFusionError| SourceError::Schema {
        dataset: dataset.to_owned(),
        message: e.to_string(),
    };
    let frame = datafusion::prelude::SessionContext::new()
        .read_table(Arc::clone(&provider))
        .map_err(schema_error)?;
    let read = provider.schema();
    let columns = schema
        .fields()
        .iter()
        .map(|field| {
            let column =
                datafusion::prelude::col(datafusion::common::Column::new_unqualified(field.name()));
            let same_type = read
                .field_with_name(field.name())
                .is_ok_and(|read| read.data_type() == field.data_type());
            let value = if same_type {
                column
            } else {
                datafusion::prelude::cast(column, field.data_type().clone())
            };
            let metadata = (!field.metadata().is_empty())
                .then(|| datafusion::common::metadata::FieldMetadata::from(field.as_ref()));
            value.alias_with_metadata(field.name(), metadata)
        })
        .collect::<Vec<_>>();
    Ok(frame.select(columns).map_err(schema_error)?.into_view())
}

/// The source's primary key, if the read keeps all of its columns (a
/// `refresh_sql` may leave one out); else none.
fn key_within(primary_key: Vec<String>, schema: &SchemaRef) -> Vec<String> {
    if primary_key
        .iter()
        .all(|column| schema.field_with_name(column).is_ok())
    {
        primary_key
    } else {
        Vec::new()
    }
}

/// Starts the read `frame` describes.
async fn execute(
    dataset: &str,
    frame: DataFrame,
) -> Result<SendableRecordBatchStream, SourceError> {
    frame
        .execute_stream()
        .await
        .map_err(|e| SourceError::reading(dataset, e.to_string()))
}

/// Casts every batch to `schema` (same columns, PostgreSQL-facing types).
pub(super) fn convert(
    stream: SendableRecordBatchStream,
    schema: SchemaRef,
) -> SendableRecordBatchStream {
    let target = Arc::clone(&schema);
    let converted = stream.map(move |batch| {
        let batch = batch?;
        let columns = batch
            .columns()
            .iter()
            .zip(target.fields())
            .map(|(column, field)| {
                if column.data_type() == field.data_type() {
                    Ok(Arc::clone(column))
                } else {
                    cast(column, field.data_type())
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new(Arc::clone(&target), columns)?)
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, converted))
}

/// Re-labels every batch with `schema` (same columns, plus metadata).
fn with_schema(stream: SendableRecordBatchStream, schema: SchemaRef) -> SendableRecordBatchStream {
    let target = Arc::clone(&schema);
    let relabelled = stream.map(move |batch| {
        let batch = batch?;
        Ok(batch.with_schema(Arc::clone(&target))?)
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, relabelled))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_failures_are_classified_by_their_typed_cause() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        let unreachable = SourceError::connect_failed("orders", &refused);
        assert!(unreachable.is_transient());
        assert_eq!(unreachable.reason(), "connect");
        let denied = mysql_async::Error::Server(mysql_async::ServerError {
            code: 1045,
            message: "Access denied for user 'app'@'localhost'".into(),
            state: "28000".into(),
        });
        let rejected = SourceError::connect_failed("orders", &denied);
        assert!(!rejected.is_transient());
        assert_eq!(rejected.reason(), "credentials");
        // Words alone decide nothing.
        let worded = std::io::Error::other("password authentication failed");
        assert!(SourceError::connect_failed("orders", &worded).is_transient());
    }
}
