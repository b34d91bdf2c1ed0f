//! Local accelerations: where a dataset's copy of its source lives and how a
//! refresh publishes a new one.
//!
//! Invariant kept by every engine: a published acceleration is immutable. A
//! refresh builds the complete next version aside and publishes it in one
//! atomic step, so a query sees the old data or the new, never a mix, and is
//! never blocked by a refresh. The file engines (`duckdb`, `sqlite` with a
//! file mode) keep every version durably in a file, with a checkpoint, so a
//! restart serves it again (see [`store`]); queries read that file in place
//! ([`FileVersion`]), or, for the refresh modes that revise rows in memory,
//! an in-memory copy of it.

mod arrow;
mod duckdb_file;
mod index;
mod progress;
mod ranges;
mod sqlite_file;
mod statistics;
pub mod store;

pub use arrow::{ArrowAcceleration, TableData, TableDataBuilder};
pub use index::{PrimaryKeyIndex, RowRef};
pub use progress::{ProgressReport, ReadProgress};
pub use ranges::ColumnRanges;
pub use statistics::TableStatistics;
#[cfg(test)]
pub use store::Persisted;
pub use store::{Change, Checkpoint, FileReader, FileVersion, Store, StoreError};

/// Field metadata key recording the source column's PostgreSQL type where
/// Arrow alone cannot tell it (`uuid`, `json`, `jsonb`, `varchar` are all
/// Utf8 in Arrow). The wire layer reports and encodes such columns as that
/// type, so clients see the types the primary would send.
pub const PG_TYPE_METADATA: &str = "pgaccel.pg_type";

/// Field metadata key: the column's type as the source declares it in
/// PostgreSQL's terms (`numeric`, `varchar`, `int4`, `_int4` for arrays),
/// for the catalog clients introspect.
pub const DECLARED_TYPE_METADATA: &str = "pgaccel.declared_type";

/// Field metadata key: the declared type's modifier as PostgreSQL encodes it
/// in `atttypmod` (`numeric(12,2)` is 786438, `varchar(40)` is 44).
pub const TYPMOD_METADATA: &str = "pgaccel.typmod";

/// Field metadata key: for a `regtype` column (whose values are type names),
/// the OID every value names, which is its binary form.
pub const REGTYPE_OID_METADATA: &str = "pgaccel.regtype_oid";

/// Field and schema metadata key: the comment the source keeps on the
/// column or table.
pub const DESCRIPTION_METADATA: &str = "pgaccel.description";

/// Field metadata key, `true` for a column the source declares `NOT NULL`.
pub const NOT_NULL_METADATA: &str = "pgaccel.not_null";
