//! A database schema whose tables are the datasets placed in it.
//!
//! A dataset whose acceleration file is open but not yet read into memory
//! is answered from the file ([`super::file_table`]). A dataset with no
//! data loaded yet is known but not listed. Querying it
//! goes to its source when its `ready_state` says so and the source has been
//! reached; otherwise it fails with an error that names it and says it is
//! loading, or, once its source has failed, as a table that does not exist
//! (the seeds' outage rule).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};

use super::caching::CachingTable;
use super::file_table::FileTable;
use super::table::{AcceleratedTable, FederatedTable, QueryError};
use super::zero_results::ZeroResultsTable;
use crate::config::{ReadyState, ZeroResults};
use crate::dataset::{Dataset, DatasetStatus, Registry};
use crate::metrics;

#[derive(Debug)]
pub struct DatasetSchema {
    registry: Arc<Registry>,
    schema: String,
}

impl DatasetSchema {
    pub fn new(registry: Arc<Registry>, schema: String) -> Self {
        DatasetSchema { registry, schema }
    }

    fn datasets(&self) -> impl Iterator<Item = &Arc<Dataset>> {
        self.registry
            .iter()
            .filter(|dataset| dataset.config.name.schema == self.schema)
    }

    fn dataset(&self, table: &str) -> Option<&Arc<Dataset>> {
        self.datasets()
            .find(|dataset| dataset.config.name.table == table)
    }
}

#[async_trait]
impl SchemaProvider for DatasetSchema {
    fn table_names(&self) -> Vec<String> {
        self.datasets()
            .filter(|dataset| {
                dataset.acceleration.serving()
                    || dataset.in_place().is_some()
                    || (!dataset.config.acceleration.enabled && dataset.federated().is_some())
            })
            .map(|dataset| dataset.config.name.table.clone())
            .collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let Some(dataset) = self.dataset(name) else {
            return Ok(None);
        };
        let served: Option<Arc<dyn TableProvider>> =
            match AcceleratedTable::try_new(Arc::clone(&dataset.acceleration)) {
                Some(table) => Some(Arc::new(table)),
                None => dataset.acceleration.file_version().map(|version| {
                    Arc::new(FileTable::in_place(
                        Arc::clone(&dataset.acceleration),
                        &version,
                    )) as Arc<dyn TableProvider>
                }),
            };
        if let Some(table) = served {
            if dataset.config.acceleration.on_zero_results == ZeroResults::UseSource
                && let Some(source) = dataset.federated()
            {
                let table = ZeroResultsTable::new(table, source, &dataset.config)
                    .map_err(DataFusionError::Plan)?;
                return Ok(Some(Arc::new(table)));
            }
            return Ok(Some(table));
        }
        if let Some(table) = dataset.in_place() {
            return Ok(Some(table));
        }
        if let Some(cache) = &dataset.cache
            && let Some(source) = dataset.federated()
        {
            return Ok(Some(Arc::new(CachingTable::new(Arc::clone(cache), source))));
        }
        // A dataset without acceleration is always answered by its source;
        // another only until its acceleration is loaded, if its
        // `ready_state` allows.
        let accelerated = dataset.config.acceleration.enabled;
        if (!accelerated || dataset.config.ready_state != ReadyState::OnLoad)
            && let Some(source) = dataset.federated()
        {
            if accelerated {
                metrics::federated_fallback(&dataset.name());
            }
            let table = FederatedTable::new(Arc::clone(&dataset.acceleration), source);
            return Ok(Some(Arc::new(table)));
        }
        if dataset.status() == DatasetStatus::Error {
            return Err(DataFusionError::External(Box::new(
                QueryError::Unavailable {
                    dataset: dataset.name(),
                    cause: dataset.report().error_message.unwrap_or_default(),
                },
            )));
        }
        Err(DataFusionError::External(Box::new(QueryError::Loading {
            dataset: dataset.name(),
        })))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.dataset(name).is_some()
    }
}
