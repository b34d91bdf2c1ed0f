//! Integration tests: pgaccel in process, against the real PostgreSQL at
//! 127.0.0.1:5432, queried with tokio-postgres, psql and HTTP. One test binary
//! (DataFusion links once); a module per capability.

mod append;
mod caching;
mod cdc;
mod cli;
mod client_queries;
mod clients;
mod data_window;
mod differential;
mod duckdb_source;
mod end_to_end;
mod faults;
mod forward;
mod generator;
mod hostile;
mod in_place;
mod isolation;
mod limits;
mod lookups;
mod mysql;
mod object_sources;
mod operations;
mod outages;
mod persistence;
mod pruning;
mod raw;
mod refresh_sql;
mod retention;
mod schedules;
mod schema_change;
mod secrets;
mod security;
mod sessions;
mod shutdown;
mod snapshots;
mod sqlite;
mod stalls;
mod support;
mod torn_reads;
mod tpch;
mod types;
mod wire;
mod zero_results;
