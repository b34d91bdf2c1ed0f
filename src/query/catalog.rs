//! A database schema whose tables are the datasets placed in it. A dataset
//! still loading its first data is known but not listed: querying it fails
//! with an error that names it and says it is loading.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result};

use super::table::{AcceleratedTable, QueryError};
use crate::dataset::{Dataset, Registry};

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
            .filter(|dataset| dataset.acceleration.current().is_some())
            .map(|dataset| dataset.config.name.table.clone())
            .collect()
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        let Some(dataset) = self.dataset(name) else {
            return Ok(None);
        };
        match AcceleratedTable::try_new(Arc::clone(&dataset.acceleration)) {
            Some(table) => Ok(Some(Arc::new(table))),
            None => Err(DataFusionError::External(Box::new(QueryError::Loading {
                dataset: dataset.name(),
            }))),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.dataset(name).is_some()
    }
}
