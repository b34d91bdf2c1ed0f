//! Moving snapshot files between a local folder and a location: uploads in
//! parts, downloads into a file beside the destination, both hashing what
//! passes so that a download is verified before it is used.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::{GetResultPayload, ObjectStoreExt, WriteMultipart};
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
/// SHA-256; returns the downloaded file, not yet synced to disk: the caller
/// makes it durable ([`make_durable`]) before it moves it into place.
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
    let received = match result.payload {
        // A local folder: copied on a blocking thread in large reads (the
        // payload's own stream yields 8 KiB chunks, a blocking task each).
        GetResultPayload::File(file, _) => {
            let into = partial.clone();
            tokio::task::spawn_blocking(move || copy_file(file, &into))
                .await
                .map_err(|e| e.to_string())
                .and_then(|copied| copied)
        }
        GetResultPayload::Stream(stream) => receive(stream, &partial).await,
    };
    let outcome = received.map_err(failed).and_then(|(sha256, size)| {
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
        match mismatch {
            Some(message) => Err(DownloadError::Corrupt {
                id: entry.id.clone(),
                message,
            }),
            None => Ok(()),
        }
    });
    if let Err(e) = outcome {
        let _ = tokio::fs::remove_file(&partial).await;
        return Err(e);
    }
    Ok(partial)
}

/// Size of the writes (and local reads) of a download.
const DOWNLOAD_BUFFER: usize = 4 * 1024 * 1024;

/// Writes `stream` to a new file at `into`; its SHA-256 and size.
async fn receive(
    mut stream: BoxStream<'static, object_store::Result<Bytes>>,
    into: &Path,
) -> Result<(String, u64), String> {
    let cannot_write = |e: std::io::Error| format!("cannot write {}: {e}", into.display());
    let file = tokio::fs::File::create(into).await.map_err(cannot_write)?;
    // Each write of a tokio file is a blocking task: a large buffer keeps
    // them few whatever the size of the chunks the store sends.
    let mut file = tokio::io::BufWriter::with_capacity(DOWNLOAD_BUFFER, file);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        hasher.update(&chunk);
        size += chunk.len() as u64;
        file.write_all(&chunk).await.map_err(cannot_write)?;
    }
    file.flush().await.map_err(cannot_write)?;
    Ok((hex(&hasher.finalize()), size))
}

/// Copies `from` (a file of a local snapshot folder) to a new file at
/// `into`; its SHA-256 and size.
fn copy_file(mut from: std::fs::File, into: &Path) -> Result<(String, u64), String> {
    use std::io::{Read, Write};
    let cannot_write = |e: std::io::Error| format!("cannot write {}: {e}", into.display());
    let mut file = std::fs::File::create(into).map_err(cannot_write)?;
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut buffer = vec![0u8; DOWNLOAD_BUFFER];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("cannot read the snapshot: {e}")),
        };
        hasher.update(&buffer[..read]);
        size += read as u64;
        file.write_all(&buffer[..read]).map_err(cannot_write)?;
    }
    Ok((hex(&hasher.finalize()), size))
}

/// Syncs the downloaded file at `path` to disk, so that once it is moved
/// into place a crash cannot leave a torn file there. Runs on a blocking
/// thread, so that it can overlap reading the file.
pub async fn make_durable(path: &Path) -> Result<(), String> {
    let file = path.to_owned();
    tokio::task::spawn_blocking(move || std::fs::File::open(&file).and_then(|f| f.sync_all()))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
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
