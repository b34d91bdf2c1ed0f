//! `sqlite:table` with `params.sqlite_file`: reads a table of a SQLite
//! database file through datafusion-table-providers' SQLite pool and table
//! provider, which push projections and filters down into the SQL it runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::TableReference;
use datafusion::prelude::SessionContext;
use datafusion_table_providers::sql::db_connection_pool::Mode;
use datafusion_table_providers::sql::db_connection_pool::sqlitepool::SqliteConnectionPoolFactory;
use datafusion_table_providers::sqlite::SqliteTableFactory;

use super::{ReadFilter, Snapshot, SourceError};

/// How long a read waits for a writer holding the database's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct SqliteSource {
    dataset: String,
    file: PathBuf,
    table: String,
    /// The table as resolved at connection, for queries the source answers.
    federated: Option<Arc<dyn TableProvider>>,
}

impl SqliteSource {
    /// Opens the database file (which must exist: a source is never created)
    /// and checks that the table exists.
    pub async fn connect(dataset: String, file: &Path, table: &str) -> Result<Self, SourceError> {
        if !file.is_file() {
            return Err(SourceError::Connect {
                dataset,
                message: format!("the SQLite database file {} does not exist", file.display()),
            });
        }
        let mut source = SqliteSource {
            dataset,
            file: file.to_owned(),
            table: table.to_owned(),
            federated: None,
        };
        let (provider, _) = source.describe().await?;
        source.federated = Some(provider);
        Ok(source)
    }

    pub fn federated(&self) -> Arc<dyn TableProvider> {
        Arc::clone(self.federated.as_ref().expect("set at connection"))
    }

    /// A provider reading the table with its current columns, and its
    /// primary key.
    async fn describe(&self) -> Result<(Arc<dyn TableProvider>, Vec<String>), SourceError> {
        let primary_key = self.primary_key().await?;
        let pool = SqliteConnectionPoolFactory::new(
            &self.file.to_string_lossy(),
            Mode::File,
            BUSY_TIMEOUT,
        )
        .build()
        .await
        .map_err(|e| SourceError::connect_failed(&self.dataset, &*e))?;
        let provider = SqliteTableFactory::new(Arc::new(pool))
            .table_provider(TableReference::bare(self.table.as_str()))
            .await
            .map_err(|e| SourceError::Schema {
                dataset: self.dataset.clone(),
                message: e.to_string(),
            })?;
        Ok((provider, primary_key))
    }

    /// The table's primary-key columns, in key order (`PRAGMA table_info`);
    /// an error when the table does not exist.
    async fn primary_key(&self) -> Result<Vec<String>, SourceError> {
        let (file, table) = (self.file.clone(), self.table.clone());
        let found = tokio::task::spawn_blocking(move || {
            let connection = rusqlite::Connection::open_with_flags(
                &file,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )?;
            let mut statement = connection.prepare("SELECT name, pk FROM pragma_table_info(?1)")?;
            let rows = statement
                .query_map([&table], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            Ok::<_, rusqlite::Error>(rows)
        })
        .await
        .map_err(|e| SourceError::connect_failed(&self.dataset, &e))?
        .map_err(|e| SourceError::connect_failed(&self.dataset, &e))?;
        if found.is_empty() {
            return Err(SourceError::Schema {
                dataset: self.dataset.clone(),
                message: format!(
                    "table {} does not exist in {}",
                    self.table,
                    self.file.display()
                ),
            });
        }
        let mut key: Vec<(i64, String)> = found
            .into_iter()
            .filter(|(_, position)| *position > 0)
            .map(|(name, position)| (position, name))
            .collect();
        key.sort();
        Ok(key.into_iter().map(|(_, name)| name).collect())
    }

    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        let (provider, primary_key) = self.describe().await?;
        let read_error = |message: String| SourceError::reading(&self.dataset, message);
        let frame = SessionContext::new()
            .read_table(provider)
            .map_err(|e| read_error(e.to_string()))?;
        let frame = super::restrict(&self.dataset, frame, filter)?;
        let schema = SchemaRef::new(frame.schema().as_arrow().clone());
        let primary_key = super::key_within(primary_key, &schema);
        let stream = super::execute(&self.dataset, frame).await?;
        Ok(Snapshot {
            stream,
            schema,
            primary_key,
        })
    }
}
