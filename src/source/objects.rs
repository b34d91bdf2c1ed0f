//! The data files of a `file:` or `s3://` source, reached through the
//! `object_store` crate (the one DataFusion reads files with), and one
//! generation of them pinned for the whole of a read.
//!
//! A read lists the objects once. Every request DataFusion then makes for
//! an object carries the listed ETag in If-Match (or the listed version id),
//! so an object overwritten during the read fails the read with
//! [`object_store::Error::Precondition`] instead of mixing two generations;
//! the refresh counts it as `object_generation_changed` and starts over with
//! a new listing.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path as FsPath;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::execution::object_store::ObjectStoreUrl;
use futures::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

use crate::config::Secret;
use crate::snapshot::location::s3_builder;

/// Where a source's files are.
#[derive(Debug, Clone)]
pub struct Objects {
    store: Arc<dyn ObjectStore>,
    /// `file://` or `s3://bucket`: what DataFusion resolves the store by.
    url: ObjectStoreUrl,
    /// The file, or the folder/prefix the files are under.
    prefix: Path,
    /// How the source was named, for messages.
    shown: String,
}

impl fmt::Display for Objects {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Objects {
    /// A local file or folder.
    pub fn local(path: &FsPath) -> Result<Objects, String> {
        let absolute = std::path::absolute(path)
            .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
        let prefix = Path::from_absolute_path(&absolute)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Ok(Objects {
            store: Arc::new(LocalFileSystem::new()),
            url: ObjectStoreUrl::local_filesystem(),
            prefix,
            shown: path.display().to_string(),
        })
    }

    /// An S3 prefix (`s3://bucket/prefix/`), with the `s3_*` and
    /// `allow_http` keys of the dataset's `params`.
    pub fn s3(url: &str, params: &BTreeMap<String, Secret>) -> Result<Objects, String> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| format!("'{url}' is not an s3:// URL"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let store = s3_builder(bucket, params)
            .build()
            .map_err(|e| format!("{url}: {e}"))?;
        Ok(Objects {
            store: Arc::new(store),
            url: ObjectStoreUrl::parse(format!("s3://{bucket}"))
                .map_err(|e| format!("{url}: {e}"))?,
            prefix: Path::from(prefix.trim_matches('/')),
            shown: url.to_owned(),
        })
    }

    pub fn store_url(&self) -> &ObjectStoreUrl {
        &self.url
    }

    /// The unpinned store, for reads that need no single generation (the
    /// source answering queries while nothing is loaded).
    pub fn store(&self) -> Arc<dyn ObjectStore> {
        Arc::clone(&self.store)
    }

    /// The data files: the object named, or every object under the prefix
    /// whose name ends in one of `extensions`, in path order.
    pub async fn list(&self, extensions: &[&str]) -> Result<Vec<ObjectMeta>, String> {
        let listed: Vec<ObjectMeta> = self
            .store
            .list(Some(&self.prefix))
            .try_collect()
            .await
            .map_err(|e| format!("cannot list {}: {e}", self.shown))?;
        let mut files: Vec<ObjectMeta> = listed
            .into_iter()
            .filter(|meta| {
                let name = meta.location.as_ref().to_ascii_lowercase();
                meta.location == self.prefix
                    || extensions
                        .iter()
                        .any(|extension| name.ends_with(&format!(".{extension}")))
            })
            .collect();
        if files.is_empty() && self.prefix.parts().count() > 0 {
            // A single object: listing it as a prefix finds nothing on S3
            // when its name is the whole prefix; ask for it directly.
            if let Ok(meta) = object_store::ObjectStoreExt::head(&*self.store, &self.prefix).await {
                files.push(meta);
            }
        }
        files.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(files)
    }

    /// The URL DataFusion reads `meta` by.
    pub fn object_url(&self, meta: &ObjectMeta) -> String {
        format!("{}{}", self.url.as_str(), meta.location)
    }

    /// The store as of `listing`: only those objects, each read at its
    /// listed generation.
    pub fn pinned(&self, listing: &[ObjectMeta]) -> Arc<Pinned> {
        Arc::new(Pinned {
            inner: Arc::clone(&self.store),
            objects: listing
                .iter()
                .map(|meta| (meta.location.clone(), meta.clone()))
                .collect(),
        })
    }
}

/// A read-only view of a store that holds one listed generation of some
/// of its objects (see the module documentation).
#[derive(Debug)]
pub struct Pinned {
    inner: Arc<dyn ObjectStore>,
    objects: HashMap<Path, ObjectMeta>,
}

impl fmt::Display for Pinned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} pinned to {} objects", self.inner, self.objects.len())
    }
}

impl Pinned {
    fn read_only(&self, location: &Path) -> object_store::Error {
        object_store::Error::NotSupported {
            source: format!("{location}: a source's files are only read").into(),
        }
    }

    fn under<'a>(&'a self, prefix: Option<&'a Path>) -> impl Iterator<Item = &'a ObjectMeta> {
        self.objects.values().filter(move |meta| {
            prefix.is_none_or(|prefix| {
                meta.location == *prefix || meta.location.prefix_matches(prefix)
            })
        })
    }
}

#[async_trait]
impl ObjectStore for Pinned {
    async fn put_opts(
        &self,
        location: &Path,
        _payload: PutPayload,
        _opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(self.read_only(location))
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        _opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(self.read_only(location))
    }

    async fn get_opts(
        &self,
        location: &Path,
        mut options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let Some(meta) = self.objects.get(location) else {
            return Err(object_store::Error::NotFound {
                path: location.to_string(),
                source: "not among the files listed for this read".into(),
            });
        };
        match (&meta.version, &meta.e_tag) {
            (Some(version), _) => options.version = Some(version.clone()),
            (None, Some(e_tag)) => options.if_match = Some(e_tag.clone()),
            (None, None) => {}
        }
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        locations
            .map(|location| {
                let location = location?;
                Err(object_store::Error::NotSupported {
                    source: format!("{location}: a source's files are only read").into(),
                })
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let mut found: Vec<ObjectMeta> = self.under(prefix).cloned().collect();
        found.sort_by(|a, b| a.location.cmp(&b.location));
        stream::iter(found.into_iter().map(Ok)).boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        let depth = prefix.map_or(0, |prefix| prefix.parts().count());
        let mut objects = Vec::new();
        let mut common_prefixes = BTreeSet::new();
        for meta in self.under(prefix) {
            let parts: Vec<_> = meta.location.parts().collect();
            if parts.len() == depth + 1 {
                objects.push(meta.clone());
            } else if parts.len() > depth + 1 {
                common_prefixes.insert(Path::from_iter(parts.into_iter().take(depth + 1)));
            }
        }
        objects.sort_by(|a, b| a.location.cmp(&b.location));
        Ok(ListResult {
            common_prefixes: common_prefixes.into_iter().collect(),
            objects,
        })
    }

    async fn copy_opts(
        &self,
        _from: &Path,
        to: &Path,
        _options: CopyOptions,
    ) -> object_store::Result<()> {
        Err(self.read_only(to))
    }
}

/// Whether `error` (from anywhere in a read) says that an object changed
/// after it was listed.
pub fn generation_changed(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(object_store::Error::Precondition { .. }) =
            error.downcast_ref::<object_store::Error>()
        {
            return true;
        }
        if let Some(datafusion::error::DataFusionError::ObjectStore(inner)) =
            error.downcast_ref::<datafusion::error::DataFusionError>()
            && matches!(**inner, object_store::Error::Precondition { .. })
        {
            return true;
        }
        current = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn a_pinned_read_fails_once_the_object_is_overwritten() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(folder.path().join("data/sub")).unwrap();
        std::fs::write(folder.path().join("data/a.csv"), "x\n1\n").unwrap();
        std::fs::write(folder.path().join("data/sub/b.csv"), "x\n2\n").unwrap();
        std::fs::write(folder.path().join("data/notes.txt"), "not data").unwrap();
        let objects = Objects::local(&folder.path().join("data")).unwrap();
        let listing = objects.list(&["csv"]).await.unwrap();
        let names: Vec<String> = listing
            .iter()
            .map(|meta| meta.location.filename().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["a.csv", "b.csv"]);
        let pinned = objects.pinned(&listing);
        let a = &listing[0].location;
        let read = pinned.get(a).await.unwrap().bytes().await.unwrap();
        assert_eq!(&read[..], b"x\n1\n");
        let listed: Vec<ObjectMeta> = pinned
            .list(Some(&objects.prefix))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(listed.len(), 2);
        let level = pinned
            .list_with_delimiter(Some(&objects.prefix))
            .await
            .unwrap();
        assert_eq!(level.objects.len(), 1);
        assert_eq!(level.common_prefixes.len(), 1);
        // Overwritten after the listing: the pinned read refuses it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(folder.path().join("data/a.csv"), "x\n10\n20\n").unwrap();
        let error = pinned.get(a).await.unwrap_err();
        assert!(
            matches!(error, object_store::Error::Precondition { .. }),
            "{error:?}"
        );
        assert!(generation_changed(&error));
        let wrapped = datafusion::error::DataFusionError::ObjectStore(Box::new(error));
        assert!(generation_changed(&wrapped));
        // Objects outside the listing do not exist for the read.
        let outside = Path::from_absolute_path(folder.path().join("data/notes.txt")).unwrap();
        assert!(matches!(
            pinned.get(&outside).await.unwrap_err(),
            object_store::Error::NotFound { .. }
        ));
    }
}
