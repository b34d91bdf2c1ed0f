//! `file:path`: Parquet and CSV files (a file or a folder of files), read by
//! DataFusion's own readers. The folder is listed again at every refresh, so
//! new files are picked up.

use std::path::{Path, PathBuf};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::dataframe::DataFrame;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};

use super::{ReadFilter, Snapshot, SourceError};
use crate::config::FileFormat;

#[derive(Debug)]
pub struct FileSource {
    dataset: String,
    path: PathBuf,
    format: FileFormat,
}

impl FileSource {
    pub async fn open(
        dataset: String,
        path: &Path,
        format: FileFormat,
    ) -> Result<Self, SourceError> {
        // Opened once here so that a missing or unreadable file is reported
        // at connection, like an unreachable database.
        read(&dataset, path, format).await?;
        Ok(FileSource {
            dataset,
            path: path.to_owned(),
            format,
        })
    }

    /// Lists and reads the files again, with their current schema.
    pub async fn read_all(&self, filter: &ReadFilter) -> Result<Snapshot, SourceError> {
        let frame = read(&self.dataset, &self.path, self.format).await?;
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
}

async fn read(dataset: &str, path: &Path, format: FileFormat) -> Result<DataFrame, SourceError> {
    let ctx = SessionContext::new();
    let location = path.to_string_lossy();
    let frame = match format {
        FileFormat::Parquet => {
            ctx.read_parquet(location.as_ref(), ParquetReadOptions::default())
                .await
        }
        FileFormat::Csv => {
            ctx.read_csv(location.as_ref(), CsvReadOptions::new().has_header(true))
                .await
        }
        other => {
            return Err(SourceError::Unsupported {
                dataset: dataset.to_owned(),
                message: format!(
                    "params.file_format: `{}` is not supported yet by this version of pgaccel",
                    other.as_str()
                ),
            });
        }
    };
    frame.map_err(|e| SourceError::Schema {
        dataset: dataset.to_owned(),
        message: format!("cannot read {}: {e}", path.display()),
    })
}
