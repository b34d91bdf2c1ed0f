//! pgaccel: a PostgreSQL-wire read replica that answers queries from local
//! accelerations of source tables.
//!
//! # The two flows
//!
//! **Query path** — a client connects with any PostgreSQL driver:
//! [`wire`] (pgwire server, startup, statement hooks, SQLSTATE mapping) →
//! [`query`] (DataFusion session, [`query::AcceleratedTable`]) →
//! [`accelerator`] (the published, immutable acceleration read through
//! `arc-swap`, so a refresh never blocks or tears a query).
//!
//! **Refresh path** — one loop per dataset:
//! [`refresh`] (schedule, on-demand trigger, retries) → [`source`] (reads the
//! source table as Arrow batches) → [`accelerator`] (builds the next
//! acceleration and publishes it atomically) → [`dataset`] (status, readiness)
//! and [`metrics`].
//!
//! # Modules
//! - [`config`]: `pgaccel.yaml` parsed into validated types; secrets resolution.
//! - [`runtime`]: builds everything from a config; owns shutdown.
//! - [`dataset`]: the registry of datasets, their status and readiness.
//! - [`source`]: one file per source kind (PostgreSQL, files).
//! - [`accelerator`]: one file per engine (Arrow in memory); atomic publication.
//! - [`refresh`]: the per-dataset scheduler and refresh runner, retries.
//! - [`query`]: the DataFusion session and the accelerated table provider.
//! - [`wire`]: the PostgreSQL wire protocol front end.
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
pub mod source;
pub mod wire;
