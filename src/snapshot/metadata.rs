//! `<location>/metadata.json`: every published snapshot of every dataset of
//! a location, and each dataset's current one. Writers change it only with
//! a conditional write against the version they read, so a writer holding a
//! stale view never overwrites another's update; readers read it with the
//! ETag of their last read and stop at "not modified".

use std::collections::BTreeMap;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use object_store::{
    GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion,
};
use serde::{Deserialize, Serialize};

use super::location::Location;

/// The metadata object's name under the location.
pub const METADATA: &str = "metadata.json";
/// The lock object a folder location's writers take around a metadata
/// update (local folders have no conditional update).
const LOCK: &str = "metadata.json.lock";
/// A lock older than this was left by a writer that died holding it.
const STALE_LOCK: std::time::Duration = std::time::Duration::from_secs(60);
/// The layout version of metadata.json this pgaccel writes and reads.
const FORMAT: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub format: u32,
    #[serde(default)]
    pub datasets: BTreeMap<String, DatasetSnapshots>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetSnapshots {
    /// The id of the snapshot replicas load.
    pub current: Option<String>,
    /// Every published snapshot, oldest first.
    #[serde(default)]
    pub snapshots: Vec<SnapshotEntry>,
}

/// One published snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotEntry {
    /// `YYYYMMDDTHHMMSSZ`; ids of one dataset sort in publication order.
    pub id: String,
    /// The file, relative to the location.
    pub path: String,
    /// Hex SHA-256 of the file.
    pub sha256: String,
    pub size: u64,
    /// `duckdb` or `sqlite`.
    pub engine: String,
    pub created_at: DateTime<Utc>,
    pub rows: u64,
    pub schema: SnapshotSchema,
}

/// The columns of a snapshot, checked against a replica's before download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotSchema {
    pub columns: Vec<SnapshotColumn>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotColumn {
    pub name: String,
    /// The Arrow type, as Arrow prints it.
    pub data_type: String,
    pub nullable: bool,
}

impl SnapshotSchema {
    pub fn of(schema: &datafusion::arrow::datatypes::Schema) -> SnapshotSchema {
        SnapshotSchema {
            columns: schema
                .fields()
                .iter()
                .map(|field| SnapshotColumn {
                    name: field.name().clone(),
                    data_type: field.data_type().to_string(),
                    nullable: field.is_nullable(),
                })
                .collect(),
        }
    }

    /// How `self` differs from `loaded`, in words; `None` when the columns
    /// and their types are the same.
    pub fn difference(&self, loaded: &SnapshotSchema) -> Option<String> {
        if self.columns.len() == loaded.columns.len()
            && self
                .columns
                .iter()
                .zip(&loaded.columns)
                .all(|(a, b)| a.name == b.name && a.data_type == b.data_type)
        {
            return None;
        }
        let list = |schema: &SnapshotSchema| {
            schema
                .columns
                .iter()
                .map(|c| format!("{} {}", c.name, c.data_type))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Some(format!(
            "the snapshot has columns ({}) where the loaded acceleration has ({})",
            list(self),
            list(loaded)
        ))
    }
}

impl DatasetSnapshots {
    pub fn current(&self) -> Option<&SnapshotEntry> {
        let id = self.current.as_ref()?;
        self.snapshots.iter().find(|entry| &entry.id == id)
    }

    /// The snapshots older than the current one, newest first.
    pub fn older(&self) -> Vec<&SnapshotEntry> {
        let Some(current) = &self.current else {
            return Vec::new();
        };
        let mut older: Vec<&SnapshotEntry> = self
            .snapshots
            .iter()
            .filter(|entry| entry.id < *current)
            .collect();
        older.sort_by(|a, b| b.id.cmp(&a.id));
        older
    }
}

/// What a read of metadata.json found.
#[derive(Debug)]
pub enum Read {
    /// Unchanged since the read with the ETag given.
    NotModified,
    /// No metadata.json: nothing published at this location.
    Missing,
    Found {
        metadata: Metadata,
        version: UpdateVersion,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("{METADATA} at {url}: {source}")]
    Store {
        url: String,
        source: object_store::Error,
    },
    #[error("{METADATA} at {url} is not valid: {message}")]
    Invalid { url: String, message: String },
    /// Another writer changed metadata.json since it was read.
    #[error("{METADATA} at {url} was changed by another writer since it was read")]
    Conflict { url: String },
}

/// Reads metadata.json; with `if_none_match`, stops at "not modified".
pub async fn read(location: &Location, if_none_match: Option<&str>) -> Result<Read, MetadataError> {
    let path = location.path(METADATA);
    let options = GetOptions {
        if_none_match: if_none_match.map(str::to_owned),
        ..GetOptions::default()
    };
    let store_error = |source| MetadataError::Store {
        url: location.url.clone(),
        source,
    };
    let result = match location.store.get_opts(&path, options).await {
        Ok(result) => result,
        Err(object_store::Error::NotModified { .. }) => return Ok(Read::NotModified),
        Err(object_store::Error::NotFound { .. }) => return Ok(Read::Missing),
        Err(e) => return Err(store_error(e)),
    };
    let version = UpdateVersion {
        e_tag: result.meta.e_tag.clone(),
        version: result.meta.version.clone(),
    };
    let bytes = result.bytes().await.map_err(store_error)?;
    let metadata = parse(&bytes).map_err(|message| MetadataError::Invalid {
        url: location.url.clone(),
        message,
    })?;
    Ok(Read::Found { metadata, version })
}

fn parse(bytes: &[u8]) -> Result<Metadata, String> {
    let metadata: Metadata = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if metadata.format != FORMAT {
        return Err(format!(
            "it has format {}, and this pgaccel reads format {FORMAT}",
            metadata.format
        ));
    }
    Ok(metadata)
}

/// Writes `metadata` over the version `read` (`None`: there was none), or
/// fails with [`MetadataError::Conflict`] when another writer changed it
/// meanwhile.
pub async fn write(
    location: &Location,
    metadata: &Metadata,
    read: Option<&UpdateVersion>,
) -> Result<(), MetadataError> {
    let mut metadata = metadata.clone();
    metadata.format = FORMAT;
    let bytes = Bytes::from(serde_json::to_vec_pretty(&metadata).expect("metadata serializes"));
    if location.lock_writes {
        return write_locked(location, bytes, read).await;
    }
    let mode = match read {
        Some(version) => PutMode::Update(version.clone()),
        None => PutMode::Create,
    };
    match location
        .store
        .put_opts(
            &location.path(METADATA),
            PutPayload::from(bytes),
            PutOptions::from(mode),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(
            object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. },
        ) => Err(MetadataError::Conflict {
            url: location.url.clone(),
        }),
        Err(source) => Err(MetadataError::Store {
            url: location.url.clone(),
            source,
        }),
    }
}

/// The conditional write for stores without one: under a lock object
/// (created only if absent), check that metadata.json is still the version
/// read, then replace it (a local folder renames it into place atomically).
async fn write_locked(
    location: &Location,
    bytes: Bytes,
    read: Option<&UpdateVersion>,
) -> Result<(), MetadataError> {
    let store_error = |source| MetadataError::Store {
        url: location.url.clone(),
        source,
    };
    let lock = location.path(LOCK);
    let stamp = Bytes::from(Utc::now().to_rfc3339());
    let deadline = tokio::time::Instant::now() + STALE_LOCK * 2;
    loop {
        match location
            .store
            .put_opts(
                &lock,
                PutPayload::from(stamp.clone()),
                PutOptions::from(PutMode::Create),
            )
            .await
        {
            Ok(_) => break,
            Err(object_store::Error::AlreadyExists { .. }) => {
                // Held by another writer; a lock left by a dead one is
                // removed once stale.
                if let Ok(meta) = location.store.head(&lock).await
                    && Utc::now() - meta.last_modified
                        > chrono::Duration::from_std(STALE_LOCK).expect("small")
                {
                    let _ = location.store.delete(&lock).await;
                    continue;
                }
                if tokio::time::Instant::now() > deadline {
                    return Err(MetadataError::Conflict {
                        url: location.url.clone(),
                    });
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Err(e) => return Err(store_error(e)),
        }
    }
    let outcome = async {
        let now = match location.store.head(&location.path(METADATA)).await {
            Ok(meta) => Some(meta.e_tag),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => return Err(store_error(e)),
        };
        if now != read.map(|version| version.e_tag.clone()) {
            return Err(MetadataError::Conflict {
                url: location.url.clone(),
            });
        }
        location
            .store
            .put_opts(
                &location.path(METADATA),
                PutPayload::from(bytes),
                PutOptions::from(PutMode::Overwrite),
            )
            .await
            .map(|_| ())
            .map_err(store_error)
    }
    .await;
    let _ = location.store.delete(&lock).await;
    outcome
}
