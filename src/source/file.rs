//! `file:path`: Parquet and CSV files (a file or a folder of files), read by
//! DataFusion's own readers. The folder is listed again at every refresh, so
//! new files are picked up.
//!
//! When `time_column` or `time_partition_column` is `last_modified` and the
//! data has no such column, each row gets its file's modification time in a
//! `last_modified` column, and a read bounded on it opens only the files
//! modified after the bound: an append refresh reads new and changed files,
//! not the whole folder.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::ScalarValue;
use datafusion::dataframe::DataFrame;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext, lit};

use super::{ReadFilter, Snapshot, SourceError};
use crate::config::FileFormat;

/// The column holding each row's file modification time.
pub const LAST_MODIFIED: &str = "last_modified";

#[derive(Debug)]
pub struct FileSource {
    dataset: String,
    path: PathBuf,
    format: FileFormat,
    /// Whether `last_modified` was configured as a time or partition column.
    modified: bool,
    /// The files as read at connection, for queries the source answers.
    federated: Option<Arc<dyn TableProvider>>,
}

impl FileSource {
    pub async fn open(
        dataset: String,
        path: &Path,
        format: FileFormat,
        modified: bool,
    ) -> Result<Self, SourceError> {
        let mut source = FileSource {
            dataset,
            path: path.to_owned(),
            format,
            modified,
            federated: None,
        };
        // Opened once here so that a missing or unreadable file is reported
        // at connection, like an unreachable database.
        let whole = source.read(&source.path, None).await?;
        // Files answer queries directly only when they are read as they
        // are (no `last_modified` column made from file times).
        if !modified {
            source.federated = Some(whole.into_view());
        }
        Ok(source)
    }

    pub fn federated(&self) -> Option<Arc<dyn TableProvider>> {
        self.federated.clone()
    }

    /// Lists and reads the files again, with their current schema.
    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        let whole = self.read(&self.path, None).await?;
        let frame = if self.modified
            && !whole
                .schema()
                .has_column_with_unqualified_name(LAST_MODIFIED)
        {
            self.read_modified(whole, filter).await?
        } else {
            whole
        };
        let frame = super::restrict(&self.dataset, frame, filter)?;
        let schema = SchemaRef::new(frame.schema().as_arrow().clone());
        let stream = frame
            .execute_stream()
            .await
            .map_err(|e| SourceError::reading(&self.dataset, e.to_string()))?;
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
        whole: DataFrame,
        filter: &ReadFilter,
    ) -> Result<DataFrame, SourceError> {
        let schema = whole.schema().as_arrow().clone();
        let files = self.files().map_err(|e| SourceError::Schema {
            dataset: self.dataset.clone(),
            message: format!("cannot list {}: {e}", self.path.display()),
        })?;
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
        for (path, modified) in files {
            if !wanted(modified) {
                continue;
            }
            let frame = self
                .read(&path, Some(&schema))
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

    /// Every data file under the path, with its modification time in
    /// microseconds since the epoch, in path order.
    fn files(&self) -> std::io::Result<Vec<(PathBuf, i64)>> {
        let extension = self.format.as_str();
        let mut found = Vec::new();
        let mut pending = vec![self.path.clone()];
        while let Some(path) = pending.pop() {
            let metadata = std::fs::metadata(&path)?;
            if metadata.is_dir() {
                for entry in std::fs::read_dir(&path)? {
                    pending.push(entry?.path());
                }
            } else if path == self.path
                || path
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case(extension))
            {
                found.push((path, micros_since_epoch(metadata.modified()?)));
            }
        }
        found.sort();
        Ok(found)
    }

    /// One file or the whole folder; with `schema`, read as those columns.
    async fn read(&self, path: &Path, schema: Option<&Schema>) -> Result<DataFrame, SourceError> {
        let ctx = SessionContext::new();
        let location = path.to_string_lossy();
        let frame = match self.format {
            FileFormat::Parquet => {
                let mut options = ParquetReadOptions::default();
                if let Some(schema) = schema {
                    options = options.schema(schema);
                }
                ctx.read_parquet(location.as_ref(), options).await
            }
            FileFormat::Csv => {
                let mut options = CsvReadOptions::new().has_header(true);
                if let Some(schema) = schema {
                    options = options.schema(schema);
                }
                ctx.read_csv(location.as_ref(), options).await
            }
            other => {
                return Err(SourceError::Unsupported {
                    dataset: self.dataset.clone(),
                    message: format!(
                        "params.file_format: `{}` is not supported yet by this version of pgaccel",
                        other.as_str()
                    ),
                });
            }
        };
        frame.map_err(|e| SourceError::Schema {
            dataset: self.dataset.clone(),
            message: format!("cannot read {}: {e}", path.display()),
        })
    }
}

fn micros_since_epoch(time: SystemTime) -> i64 {
    DateTime::<Utc>::from(time).timestamp_micros()
}

fn modified_at(micros: i64) -> ScalarValue {
    ScalarValue::TimestampMicrosecond(Some(micros), Some("UTC".into()))
}
