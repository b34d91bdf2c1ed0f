//! Acceleration snapshots in object storage: one writer publishes a copy of
//! a dataset's acceleration file after each refresh; replicas restore the
//! current copy at startup, and `refresh_mode: snapshot` replicas follow
//! newer ones without ever contacting the source.
//!
//! Layout of a location (a folder or an S3 prefix):
//!
//! ```text
//! <location>/metadata.json                       every snapshot, and each dataset's current one
//! <location>/month=YYYY-MM/day=YYYY-MM-DD/dataset=<name>/<name>_<YYYYMMDDTHHMMSSZ>.<duckdb|sqlite>
//! ```
//!
//! - [`location`]: opening a location through `object_store`.
//! - [`metadata`]: metadata.json, read conditionally and written with a
//!   conditional update.
//! - [`files`]: uploads and verified downloads of snapshot files.
//! - [`publish`]: the writer.
//! - [`restore`]: startup bootstrap and finding the current snapshot.
//! - [`queue`]: reloading on S3 event notifications (SQS).

pub mod files;
pub mod location;
pub mod metadata;
pub mod publish;
pub mod queue;
pub mod restore;

pub use location::Location;
pub use publish::Publisher;

use crate::config::BootstrapOnFailure;

/// How one dataset uses snapshots: where they live and what a failed
/// restore does.
#[derive(Debug, Clone)]
pub struct Setup {
    pub location: Location,
    pub on_failure: BootstrapOnFailure,
    /// With `snapshots.params.s3_queue_url`, the metadata.json read when a
    /// notification says the dataset's current snapshot changed.
    pub notified: Option<queue::Notified>,
}
