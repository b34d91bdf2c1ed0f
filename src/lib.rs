//! pgaccel: a PostgreSQL-wire read replica that answers queries from local
//! accelerations of source tables.
//!
//! # The two flows
//!
//! **Query path** — a client connects with any PostgreSQL driver:
//! [`wire`] (the protocol only: connection loop with PostgreSQL's output
//! buffering, startup, messages, parameter decoding, result and COPY
//! encoding) → [`query`] (per-connection sessions with their settings,
//! transactions and cursors; the planner with its plan caches and
//! PostgreSQL compatibility rewrites; the system catalogs; the DataFusion
//! session, [`query::AcceleratedTable`], and [`query::DirectPlan`] for
//! primary-key lookups and table-less selects that need no planning at
//! execution) → [`accelerator`] (the published, immutable
//! acceleration and its primary-key index, read through `arc-swap`, so a
//! refresh never blocks or tears a query).
//!
//! **Refresh path** — one loop per dataset:
//! [`refresh`] (schedule, on-demand trigger, retries) → [`source`] (reads the
//! source table as Arrow batches) → [`accelerator`] (builds the next
//! acceleration, commits it to its file for the DuckDB and SQLite engines, and
//! publishes it atomically) → [`dataset`] (status, readiness) and [`metrics`].
//! Retention checks run in the same loop, between refreshes.
//!
//! # Modules
//! - [`config`]: `pgaccel.yaml` parsed into validated types; secrets resolution.
//! - [`runtime`]: builds everything from a config; owns shutdown.
//! - [`dataset`]: the registry of datasets, their status and readiness.
//! - [`source`]: one file per source kind (PostgreSQL, MySQL/MariaDB, SQLite,
//!   DuckDB, files).
//! - [`accelerator`]: the in-memory version (Arrow), its atomic publication and
//!   primary-key index; the DuckDB and SQLite files that keep it with a
//!   checkpoint.
//! - [`refresh`]: the per-dataset scheduler and refresh runner, retries,
//!   startup from an acceleration file, retention checks.
//! - [`query`]: sessions (settings, transactions, cursors, COPY sources), the
//!   planner and its caches, PostgreSQL compatibility (names, literal types,
//!   catalog-query rewrites, json/interval/uuid/bytea types, casts to text),
//!   the system catalogs (`pg_catalog`, `information_schema`), the DataFusion
//!   session, the accelerated table provider, direct answers (lookups,
//!   constants), simple-protocol lookup shapes, the zero-results fallback.
//! - [`wire`]: the PostgreSQL wire protocol: messages, portals, parameter
//!   decoding, row and COPY encoding, SQLSTATEs on the wire.
//! - [`snapshot`]: acceleration snapshots in object storage: the writer that
//!   publishes them, the bootstrap and `refresh_mode: snapshot` that read them.
//! - [`admin_api`]: the HTTP admin API (health, readiness, status, refresh, metrics).
//! - [`metrics`]: every metric name, its help text and its labels.

pub mod accelerator;
pub mod admin_api;
pub mod config;
pub mod dataset;
pub mod metrics;
pub mod query;
pub mod refresh;
pub mod runtime;
pub mod snapshot;
pub mod source;
pub mod threads;
pub mod wire;
