//! Where snapshots live: a folder (a path or `file://`) or an S3 prefix
//! (`s3://bucket/prefix/`, any S3-compatible endpoint), reached through the
//! `object_store` crate that DataFusion reads files with.

use std::collections::BTreeMap;
use std::sync::Arc;

use object_store::ObjectStore;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;

use crate::config::Secret;

/// The S3 settings of `params` (the keys of the top-level
/// `snapshots.params`) for `bucket`: keys when `s3_auth: key`, otherwise
/// the default credential chain.
pub fn s3_builder(bucket: &str, params: &BTreeMap<String, Secret>) -> AmazonS3Builder {
    let param = |name: &str| params.get(name).map(|s| s.expose().to_owned());
    let mut builder = match param("s3_auth").as_deref() {
        // Keys given in the configuration, and nothing from the
        // environment that could override them.
        Some("key") => AmazonS3Builder::new(),
        // The default credential chain: environment, web identity,
        // instance metadata.
        _ => AmazonS3Builder::from_env(),
    }
    .with_bucket_name(bucket);
    if let (Some(key), Some(secret)) = (param("s3_key"), param("s3_secret")) {
        builder = builder
            .with_access_key_id(key)
            .with_secret_access_key(secret);
    }
    if let Some(region) = param("s3_region") {
        builder = builder.with_region(region);
    }
    if let Some(endpoint) = param("s3_endpoint") {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(allow) = param("allow_http") {
        builder = builder.with_allow_http(allow.eq_ignore_ascii_case("true"));
    }
    builder
}

/// A snapshot location, opened.
#[derive(Debug, Clone)]
pub struct Location {
    /// The location as configured, for messages.
    pub url: String,
    pub store: Arc<dyn ObjectStore>,
    /// The prefix every object of the location lies under.
    pub prefix: Path,
    /// Whether the store has no conditional update of its own (local
    /// folders), so metadata writes take a lock object instead.
    pub lock_writes: bool,
}

impl Location {
    /// Opens `url` with the object-store settings of `params` (the keys of
    /// the top-level `snapshots.params`).
    pub fn open(url: &str, params: &BTreeMap<String, Secret>) -> Result<Location, String> {
        if let Some(message) = crate::config::snapshot_location_error(url) {
            return Err(message);
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            let store = s3_builder(bucket, params)
                .build()
                .map_err(|e| format!("snapshot location '{url}': {e}"))?;
            return Ok(Location {
                url: url.to_owned(),
                store: Arc::new(store),
                prefix: Path::from(prefix.trim_matches('/')),
                lock_writes: false,
            });
        }
        let folder = url.strip_prefix("file://").unwrap_or(url);
        std::fs::create_dir_all(folder)
            .map_err(|e| format!("cannot create the snapshot folder '{folder}': {e}"))?;
        let store = LocalFileSystem::new_with_prefix(folder)
            .map_err(|e| format!("snapshot location '{url}': {e}"))?;
        Ok(Location {
            url: url.to_owned(),
            store: Arc::new(store),
            prefix: Path::default(),
            lock_writes: true,
        })
    }

    /// The path of `relative` (slash-separated) under the location.
    pub fn path(&self, relative: &str) -> Path {
        relative
            .split('/')
            .filter(|part| !part.is_empty())
            .fold(self.prefix.clone(), |path, part| path.join(part))
    }

    /// Whether `url` is an S3 location.
    pub fn is_s3(url: &str) -> bool {
        url.starts_with("s3://")
    }
}
