//! Moving snapshot files between a local folder and a location: uploads in
//! parts, downloads into a file beside the destination, both hashing what
//! passes so that a download is verified before it is used.

use std::path::{Path, PathBuf};

use futures::StreamExt;
use object_store::{ObjectStoreExt, WriteMultipart};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::location::Location;
use super::metadata::SnapshotEntry;

/// The part size of uploads (S3 needs at least 5 MiB but for the last).
const PART: usize = 8 * 1024 * 1024;

/// What an upload wrote.
#[derive(Debug, Clone)]
pub struct Uploaded {
    pub sha256: String,
    pub size: u64,
}

/// Uploads the file at `from` to `relative` under the location.
pub async fn upload(location: &Location, from: &Path, relative: &str) -> Result<Uploaded, String> {
    let path = location.path(relative);
    let mut file = tokio::fs::File::open(from)
        .await
        .map_err(|e| format!("cannot read the snapshot copy {}: {e}", from.display()))?;
    let upload = location
        .store
        .put_multipart(&path)
        .await
        .map_err(|e| format!("cannot upload {relative} to {}: {e}", location.url))?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buffer = vec![0u8; 1024 * 1024];
    loop {
        let read = match file.read(&mut buffer).await {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) => {
                let _ = writer.abort().await;
                return Err(format!(
                    "cannot read the snapshot copy {}: {e}",
                    from.display()
                ));
            }
        };
        hasher.update(&buffer[..read]);
        size += read as u64;
        writer
            .wait_for_capacity(4)
            .await
            .map_err(|e| format!("cannot upload {relative} to {}: {e}", location.url))?;
        writer.write(&buffer[..read]);
    }
    writer
        .finish()
        .await
        .map_err(|e| format!("cannot upload {relative} to {}: {e}", location.url))?;
    Ok(Uploaded {
        sha256: hex(&hasher.finalize()),
        size,
    })
}

/// Why a download could not be used.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The file is not (yet) at the location.
    #[error("snapshot {id} is not at {url}/{path}")]
    NotFound {
        id: String,
        url: String,
        path: String,
    },
    /// The file differs from what metadata.json records.
    #[error("snapshot {id} failed verification: {message}")]
    Corrupt { id: String, message: String },
    #[error("downloading snapshot {id} failed: {message}")]
    Failed { id: String, message: String },
}

/// Downloads `entry` into a new file beside `to` and verifies its size and
/// SHA-256; returns the downloaded file (the caller moves it into place)
/// and the bytes read.
pub async fn download(
    location: &Location,
    entry: &SnapshotEntry,
    to: &Path,
) -> Result<PathBuf, DownloadError> {
    let failed = |message: String| DownloadError::Failed {
        id: entry.id.clone(),
        message,
    };
    let result = match location.store.get(&location.path(&entry.path)).await {
        Ok(result) => result,
        Err(object_store::Error::NotFound { .. }) => {
            return Err(DownloadError::NotFound {
                id: entry.id.clone(),
                url: location.url.trim_end_matches('/').to_owned(),
                path: entry.path.clone(),
            });
        }
        Err(e) => return Err(failed(e.to_string())),
    };
    let partial = sibling(to, "download");
    let mut file = tokio::fs::File::create(&partial)
        .await
        .map_err(|e| failed(format!("cannot create {}: {e}", partial.display())))?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut stream = result.into_stream();
    let outcome: Result<(), DownloadError> = async {
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| failed(e.to_string()))?;
            hasher.update(&chunk);
            size += chunk.len() as u64;
            file.write_all(&chunk)
                .await
                .map_err(|e| failed(format!("cannot write {}: {e}", partial.display())))?;
        }
        file.sync_all()
            .await
            .map_err(|e| failed(format!("cannot write {}: {e}", partial.display())))?;
        let sha256 = hex(&hasher.finalize());
        let mismatch = if size != entry.size {
            Some(format!(
                "it has {size} bytes where metadata.json records {}",
                entry.size
            ))
        } else if sha256 != entry.sha256 {
            Some(format!(
                "its SHA-256 is {sha256} where metadata.json records {}",
                entry.sha256
            ))
        } else {
            None
        };
        if let Some(message) = mismatch {
            return Err(DownloadError::Corrupt {
                id: entry.id.clone(),
                message,
            });
        }
        Ok(())
    }
    .await;
    if let Err(e) = outcome {
        let _ = tokio::fs::remove_file(&partial).await;
        return Err(e);
    }
    Ok(partial)
}

/// `file` with `.suffix` appended to its name, in the same folder (so that
/// a rename onto `file` is atomic).
pub fn sibling(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
