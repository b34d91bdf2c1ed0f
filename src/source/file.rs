//! `file:path` and `s3://bucket/prefix/`: Parquet, CSV and JSON (one
//! object per line) files, one file or every file of a folder or prefix,
//! read by DataFusion's own readers through the `object_store` crate. The
//! files are listed again at every refresh, so new ones are picked up, and
//! each read sees the generation of every file it listed (see
//! [`super::objects`]).
//!
//! When `time_column` or `time_partition_column` is `last_modified` and the
//! data has no such column, each row gets its file's modification time in a
//! `last_modified` column, and a read bounded on it opens only the files
//! modified after the bound: an append refresh reads new and changed files,
//! not the whole folder.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::dataframe::DataFrame;
use datafusion::datasource::TableType;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{
    CsvReadOptions, JsonReadOptions, ParquetReadOptions, SessionContext, lit,
};
use object_store::{ObjectMeta, ObjectStore};

use super::objects::Objects;
use super::{ReadFilter, Snapshot, SourceError};
use crate::config::FileFormat;

/// The column holding each row's file modification time.
pub const LAST_MODIFIED: &str = "last_modified";

#[derive(Debug)]
pub struct FileSource {
    dataset: String,
    objects: Objects,
    format: FileFormat,
    /// Whether `last_modified` was configured as a time or partition column.
    modified: bool,
    /// The files as read at connection, for queries the source answers.
    federated: Option<Arc<dyn TableProvider>>,
}

impl FileSource {
    pub async fn open(
        dataset: String,
        objects: Objects,
        format: FileFormat,
        modified: bool,
    ) -> Result<Self, SourceError> {
        let mut source = FileSource {
            dataset,
            objects,
            format,
            modified,
            federated: None,
        };
        // Listed and opened once here so that missing or unreadable files
        // are reported at connection, like an unreachable database.
        let listing = source.listing().await?;
        let ctx = source.context(source.objects.store());
        let whole = source.read(&ctx, &listing, None).await?;
        // Files answer queries directly only when they are read as they
        // are (no `last_modified` column made from file times).
        if !modified {
            source.federated = Some(Arc::new(OnStore {
                inner: whole.into_view(),
                url: source.objects.store_url().clone(),
                store: source.objects.store(),
            }));
        }
        Ok(source)
    }

    pub fn federated(&self) -> Option<Arc<dyn TableProvider>> {
        self.federated.clone()
    }

    /// Lists the files again and reads them, with their current schema,
    /// each at the generation listed.
    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        let listing = self.listing().await?;
        let ctx = self.context(self.objects.pinned(&listing));
        let whole = self.read(&ctx, &listing, None).await?;
        let frame = if self.modified
            && !whole
                .schema()
                .has_column_with_unqualified_name(LAST_MODIFIED)
        {
            self.read_modified(&ctx, &listing, whole, filter).await?
        } else {
            whole
        };
        let frame = super::restrict(&self.dataset, frame, filter)?;
        let schema = SchemaRef::new(frame.schema().as_arrow().clone());
        let stream = frame
            .execute_stream()
            .await
            .map_err(|e| SourceError::stream_failed(&self.dataset, &e))?;
        Ok(Snapshot {
            stream,
            schema,
            primary_key: Vec::new(),
        })
    }

    /// The files the bounds of `filter` on `last_modified` let through, each
    /// with its modification time as a `last_modified` column.
    async fn read_modified(
        &self,
        ctx: &SessionContext,
        listing: &[ObjectMeta],
        whole: DataFrame,
        filter: &ReadFilter,
    ) -> Result<DataFrame, SourceError> {
        let schema = whole.schema().as_arrow().clone();
        let wanted = |modified: i64| {
            let since = filter.since.as_ref().filter(|s| s.column == LAST_MODIFIED);
            let after = since.is_none_or(|since| {
                let bound = since.after.timestamp_micros();
                modified > bound || (since.inclusive && modified == bound)
            });
            let floor = filter.floor.as_ref().filter(|f| f.column == LAST_MODIFIED);
            let above = floor.is_none_or(|floor| match &floor.value {
                ScalarValue::TimestampMicrosecond(Some(bound), _) => modified >= *bound,
                _ => true,
            });
            after && above
        };
        let read_error = |e: datafusion::error::DataFusionError| {
            SourceError::reading(&self.dataset, e.to_string())
        };
        let mut union: Option<DataFrame> = None;
        for meta in listing {
            let modified = meta.last_modified.timestamp_micros();
            if !wanted(modified) {
                continue;
            }
            let frame = self
                .read(ctx, std::slice::from_ref(meta), Some(&schema))
                .await?
                .with_column(LAST_MODIFIED, lit(modified_at(modified)))
                .map_err(read_error)?;
            union = Some(match union {
                None => frame,
                Some(all) => all.union(frame).map_err(read_error)?,
            });
        }
        match union {
            Some(frame) => Ok(frame),
            // Nothing new: no rows, with the columns every read has.
            None => whole
                .with_column(LAST_MODIFIED, lit(modified_at(0)))
                .and_then(|frame| frame.limit(0, Some(0)))
                .map_err(read_error),
        }
    }

    /// The data files, in path order; none is an error.
    async fn listing(&self) -> Result<Vec<ObjectMeta>, SourceError> {
        let extensions: &[&str] = match self.format {
            FileFormat::Parquet => &["parquet"],
            FileFormat::Csv => &["csv"],
            FileFormat::Json => &["json", "jsonl", "ndjson"],
            FileFormat::Snapshot => &[],
        };
        let listing = self
            .objects
            .list(extensions)
            .await
            .map_err(|message| SourceError::Read {
                dataset: self.dataset.clone(),
                message,
            })?;
        if listing.is_empty() {
            return Err(SourceError::Schema {
                dataset: self.dataset.clone(),
                message: format!(
                    "{} holds no {} files (names ending in .{})",
                    self.objects,
                    self.format.as_str(),
                    extensions.join(", .")
                ),
            });
        }
        Ok(listing)
    }

    /// A session that reads the files through `store`.
    fn context(&self, store: Arc<dyn ObjectStore>) -> SessionContext {
        let ctx = SessionContext::new();
        ctx.register_object_store(self.objects.store_url().as_ref(), store);
        ctx
    }

    /// `files`; with `schema`, read as those columns.
    async fn read(
        &self,
        ctx: &SessionContext,
        files: &[ObjectMeta],
        schema: Option<&Schema>,
    ) -> Result<DataFrame, SourceError> {
        let urls: Vec<String> = files
            .iter()
            .map(|meta| self.objects.object_url(meta))
            .collect();
        // The files are already chosen by name: no extension filter.
        let frame = match self.format {
            FileFormat::Parquet => {
                let mut options = ParquetReadOptions {
                    file_extension: "",
                    ..Default::default()
                };
                if let Some(schema) = schema {
                    options = options.schema(schema);
                }
                ctx.read_parquet(urls, options).await
            }
            FileFormat::Csv => {
                let mut options = CsvReadOptions::new().has_header(true).file_extension("");
                if let Some(schema) = schema {
                    options = options.schema(schema);
                }
                ctx.read_csv(urls, options).await
            }
            FileFormat::Json => {
                let mut options = JsonReadOptions::default().file_extension("");
                if let Some(schema) = schema {
                    options = options.schema(schema);
                }
                ctx.read_json(urls, options).await
            }
            FileFormat::Snapshot => {
                return Err(SourceError::Unsupported {
                    dataset: self.dataset.clone(),
                    message: "file_format: snapshot is served from snapshots, not read as a source"
                        .to_owned(),
                });
            }
        };
        frame.map_err(|e| match SourceError::stream_failed(&self.dataset, &e) {
            changed @ SourceError::GenerationChanged { .. } => changed,
            _ => SourceError::Schema {
                dataset: self.dataset.clone(),
                message: format!("cannot read {}: {e}", self.objects),
            },
        })
    }
}

/// The files' table for queries the source answers. DataFusion finds the
/// store of `s3://bucket` in the registry of the session that runs the
/// query, not of the one that read the files, so each scan registers it
/// there first. (Datasets on one bucket share that entry; each registers
/// its own store before its scan.)
#[derive(Debug)]
struct OnStore {
    inner: Arc<dyn TableProvider>,
    url: ObjectStoreUrl,
    store: Arc<dyn ObjectStore>,
}

#[async_trait::async_trait]
impl TableProvider for OnStore {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        state
            .runtime_env()
            .register_object_store(self.url.as_ref(), Arc::clone(&self.store));
        self.inner.scan(state, projection, filters, limit).await
    }
}

fn modified_at(micros: i64) -> ScalarValue {
    ScalarValue::TimestampMicrosecond(Some(micros), Some("UTC".into()))
}
