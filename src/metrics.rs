//! Every metric pgaccel exports: names, help texts, units and labels, in one
//! place. Labels are bounded (dataset name, error reason); SQL text or client
//! addresses never become labels.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{
    Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

pub const REFRESH_ERRORS: &str = "dataset_acceleration_refresh_errors";
pub const LAST_REFRESH_TIME: &str = "dataset_acceleration_last_refresh_unix_time_ms";
pub const REFRESH_DURATION: &str = "dataset_acceleration_refresh_duration_ms";
pub const ROWS: &str = "dataset_acceleration_rows";
pub const BYTES: &str = "dataset_acceleration_bytes";
pub const INDEX_BYTES: &str = "dataset_acceleration_index_bytes";
pub const LOAD_STATE: &str = "dataset_load_state";
pub const QUERIES: &str = "query_executions";
pub const QUERY_ERRORS: &str = "query_errors";
pub const QUERY_DURATION: &str = "query_duration_ms";
pub const CONNECTIONS: &str = "pg_connections";
pub const CONNECTIONS_REFUSED: &str = "pg_connections_refused_total";
pub const INDEX_LOOKUPS: &str = "query_index_lookups";
pub const STATEMENTS_PLANNED: &str = "query_statements_planned";
pub const BATCHES_SKIPPED: &str = "query_batches_skipped";
pub const READY_STATE_FALLBACK: &str = "accelerated_ready_state_federated_fallback";
pub const ZERO_RESULTS_FALLBACK: &str = "accelerated_zero_results_federated_fallback";
pub const RETENTION_EVICTED: &str = "dataset_acceleration_retention_evicted_rows";
pub const QUERY_FORWARDED: &str = "query_forwarded_total";
pub const SNAPSHOTS_PUBLISHED: &str = "dataset_acceleration_snapshots_published";
pub const SNAPSHOT_PUBLISH_ERRORS: &str = "dataset_acceleration_snapshot_publish_errors";
pub const SNAPSHOT_BYTES: &str = "dataset_acceleration_snapshot_bytes";
pub const SNAPSHOT_BOOTSTRAPS: &str = "dataset_acceleration_snapshot_bootstraps";
pub const SNAPSHOT_POLLS: &str = "dataset_acceleration_snapshot_polls";
pub const SNAPSHOT_NOTIFICATIONS: &str = "snapshot_notifications";
pub const AUTH_FAILURES: &str = "pg_auth_failures_total";
pub const CHANGES_APPLIED: &str = "dataset_acceleration_changes_applied_total";
pub const CHANGES_LAG: &str = "dataset_acceleration_changes_lag_ms";
pub const SLOT_RETAINED_WAL: &str = "dataset_acceleration_slot_retained_wal_bytes";
pub const CACHING_REQUESTS: &str = "dataset_acceleration_caching_requests_total";
pub const CACHING_KEYS: &str = "dataset_acceleration_caching_keys";
pub const CACHING_BYTES: &str = "dataset_acceleration_caching_bytes";

const DURATION_BUCKETS_MS: [f64; 20] = [
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1e3, 2.5e3, 5e3, 1e4, 3e4,
    6e4, 3e5, 9e5, 3.6e6,
];

/// The process-wide Prometheus recorder. The `metrics` facade has one global
/// recorder, so every runtime in the process (tests start several) shares it.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        // Histograms as Prometheus histograms (not summaries), so that a
        // dashboard can take quantiles over several replicas; milliseconds
        // from a point lookup to an hour-long refresh.
        let recorder = PrometheusBuilder::new()
            .set_buckets(&DURATION_BUCKETS_MS)
            .expect("the bucket list is not empty")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed (an embedding program's);
        // then our handle renders only what we record, which is still correct.
        let _ = metrics::set_global_recorder(recorder);
        describe();
        // Present at zero from startup, for dashboards.
        counter!(CONNECTIONS_REFUSED).absolute(0);
        gauge!(CONNECTIONS).increment(0.0);
        handle
    })
}

fn describe() {
    describe_counter!(
        CACHING_REQUESTS,
        "Scans of a refresh_mode: caching dataset, by result (hit, miss, stale, stale_if_error)"
    );
    describe_gauge!(
        CACHING_KEYS,
        "Filter combinations a refresh_mode: caching dataset holds rows for"
    );
    describe_gauge!(
        CACHING_BYTES,
        Unit::Bytes,
        "Arrow memory of the rows a refresh_mode: caching dataset holds"
    );
    describe_counter!(
        REFRESH_ERRORS,
        "Failed refresh attempts, by dataset and reason"
    );
    describe_gauge!(
        LAST_REFRESH_TIME,
        Unit::Milliseconds,
        "Unix time of the last successful refresh"
    );
    describe_histogram!(
        REFRESH_DURATION,
        Unit::Milliseconds,
        "Duration of successful refreshes"
    );
    describe_gauge!(ROWS, "Rows held by the acceleration");
    describe_counter!(
        CHANGES_APPLIED,
        "Row changes of the source's change stream applied (refresh_mode: changes), by op"
    );
    describe_gauge!(
        CHANGES_LAG,
        "Milliseconds between a transaction's commit at the source and its application (refresh_mode: changes)"
    );
    describe_gauge!(
        SLOT_RETAINED_WAL,
        Unit::Bytes,
        "WAL the dataset's replication slot keeps on the PostgreSQL source"
    );
    describe_gauge!(BYTES, Unit::Bytes, "Arrow memory held by the acceleration");
    describe_gauge!(
        INDEX_BYTES,
        Unit::Bytes,
        "Memory of the acceleration's primary-key index"
    );
    describe_gauge!(
        LOAD_STATE,
        "Dataset status: 0 initializing, 1 ready, 2 refreshing, 3 error, 4 shutting down"
    );
    describe_counter!(
        QUERY_FORWARDED,
        "Queries pgaccel refused as not supported, answered by their PostgreSQL source (runtime.query.unsupported: source)"
    );
    describe_counter!(
        ZERO_RESULTS_FALLBACK,
        "Queries answered by the source because the acceleration had no matching row (on_zero_results: use_source)"
    );
    describe_counter!(
        RETENTION_EVICTED,
        "Rows evicted from the acceleration by retention checks"
    );
    describe_counter!(
        QUERIES,
        "Statements executed over the wire, by outcome (ok, error)"
    );
    describe_counter!(
        QUERY_ERRORS,
        "Statements that ended in an error, by SQLSTATE class"
    );
    describe_counter!(
        INDEX_LOOKUPS,
        "Statements answered by a primary-key index lookup instead of a scan"
    );
    describe_counter!(
        BATCHES_SKIPPED,
        "Stored batches that scans of an in-memory acceleration skipped because their range of values could not match the filters, by dataset"
    );
    describe_counter!(
        STATEMENTS_PLANNED,
        "Statements parsed and planned; statements answered from a cached plan do not count"
    );
    describe_counter!(
        READY_STATE_FALLBACK,
        "Queries sent to the source because the dataset's acceleration was not loaded yet (ready_state on_registration or on_schema_resolved)"
    );
    describe_counter!(
        SNAPSHOTS_PUBLISHED,
        "Acceleration snapshots uploaded and made current in the snapshot location"
    );
    describe_counter!(
        SNAPSHOT_PUBLISH_ERRORS,
        "Failed attempts to publish an acceleration snapshot (each is retried)"
    );
    describe_counter!(
        SNAPSHOT_BYTES,
        Unit::Bytes,
        "Bytes of snapshot files moved, by direction (upload, download)"
    );
    describe_counter!(
        SNAPSHOT_BOOTSTRAPS,
        "Startup restores from a snapshot, by outcome (restored, fallback, not_found, failed)"
    );
    describe_counter!(
        SNAPSHOT_POLLS,
        "Checks of the snapshot location by refresh_mode: snapshot datasets, by outcome (not_modified, unchanged, loaded, not_found, older, failed)"
    );
    describe_counter!(
        SNAPSHOT_NOTIFICATIONS,
        "Messages of the snapshots.params.s3_queue_url queue, by outcome (reload, ignored, outside: left on the queue)"
    );
    describe_counter!(
        AUTH_FAILURES,
        "Failed password logins on the PostgreSQL port, by method (scram-sha-256, md5, password)"
    );
    describe_histogram!(
        QUERY_DURATION,
        Unit::Milliseconds,
        "Statement time, from the start of its execution until its last row or its error reached the client, by outcome (ok, error)"
    );
    describe_gauge!(
        CONNECTIONS,
        "Client connections open on the PostgreSQL port"
    );
    describe_counter!(
        CONNECTIONS_REFUSED,
        "Connections refused on the PostgreSQL port because runtime.pg.max_connections were open"
    );
}

/// The process's memory, CPU time, threads and open files
/// (`process_resident_memory_bytes`, ...), read at each scrape.
pub fn render() -> String {
    static PROCESS: OnceLock<metrics_process::Collector> = OnceLock::new();
    let handle = handle();
    PROCESS
        .get_or_init(|| {
            let collector = metrics_process::Collector::default();
            collector.describe();
            collector
        })
        .collect();
    handle.render()
}

/// An open client connection, counted in `pg_connections` while it lives.
#[must_use]
pub struct OpenConnection(());

impl OpenConnection {
    pub fn new() -> Self {
        gauge!(CONNECTIONS).increment(1.0);
        OpenConnection(())
    }
}

impl Default for OpenConnection {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        gauge!(CONNECTIONS).decrement(1.0);
    }
}

pub fn connection_refused() {
    counter!(CONNECTIONS_REFUSED).increment(1);
}

pub fn auth_failed(method: &'static str) {
    counter!(AUTH_FAILURES, "method" => method).increment(1);
}

pub fn refresh_failed(dataset: &str, reason: &'static str) {
    counter!(REFRESH_ERRORS, "dataset" => dataset.to_owned(), "reason" => reason).increment(1);
}

pub fn refresh_succeeded(
    dataset: &str,
    unix_ms: i64,
    took: Duration,
    rows: usize,
    bytes: usize,
    index_bytes: usize,
) {
    let label = dataset.to_owned();
    gauge!(LAST_REFRESH_TIME, "dataset" => label.clone()).set(unix_ms as f64);
    histogram!(REFRESH_DURATION, "dataset" => label.clone()).record(took.as_secs_f64() * 1e3);
    gauge!(ROWS, "dataset" => label.clone()).set(rows as f64);
    gauge!(BYTES, "dataset" => label.clone()).set(bytes as f64);
    gauge!(INDEX_BYTES, "dataset" => label).set(index_bytes as f64);
}

/// An acceleration served from its file at startup: its last refresh time
/// (from the checkpoint, where it is reported) and its size.
pub fn restored(
    dataset: &str,
    unix_ms: Option<i64>,
    rows: usize,
    bytes: usize,
    index_bytes: usize,
) {
    let label = dataset.to_owned();
    if let Some(unix_ms) = unix_ms {
        gauge!(LAST_REFRESH_TIME, "dataset" => label.clone()).set(unix_ms as f64);
    }
    gauge!(ROWS, "dataset" => label.clone()).set(rows as f64);
    gauge!(BYTES, "dataset" => label.clone()).set(bytes as f64);
    gauge!(INDEX_BYTES, "dataset" => label).set(index_bytes as f64);
}

/// The primary-key index of rows served from a file, built after them.
pub fn index_built(dataset: &str, index_bytes: usize) {
    gauge!(INDEX_BYTES, "dataset" => dataset.to_owned()).set(index_bytes as f64);
}

/// `refresh_mode: changes` applied `count` row changes of kind `op`
/// (`insert`, `update`, `delete`, `truncate`).
pub fn changes_applied(dataset: &str, op: &'static str, count: u64) {
    counter!(CHANGES_APPLIED, "dataset" => dataset.to_owned(), "op" => op).increment(count);
}

/// How long after its commit at the source the last applied transaction
/// was applied.
pub fn changes_lag(dataset: &str, lag_ms: u64) {
    gauge!(CHANGES_LAG, "dataset" => dataset.to_owned()).set(lag_ms as f64);
}

/// The WAL the dataset's replication slot keeps on the source.
pub fn slot_retained_wal(dataset: &str, bytes: i64) {
    gauge!(SLOT_RETAINED_WAL, "dataset" => dataset.to_owned()).set(bytes as f64);
}

/// One scan of a caching dataset and how the cache answered it.
pub fn caching_request(dataset: &str, result: &'static str) {
    counter!(CACHING_REQUESTS, "dataset" => dataset.to_owned(), "result" => result).increment(1);
}

/// What a caching dataset's cache holds now.
pub fn caching_held(dataset: &str, keys: usize, bytes: u64) {
    gauge!(CACHING_KEYS, "dataset" => dataset.to_owned()).set(keys as f64);
    gauge!(CACHING_BYTES, "dataset" => dataset.to_owned()).set(bytes as f64);
}

/// A query whose accelerated result was empty, answered by the source.
pub fn zero_results_fallback(dataset: &str) {
    counter!(ZERO_RESULTS_FALLBACK, "dataset" => dataset.to_owned()).increment(1);
}

/// Rows a retention check evicted.
pub fn retention_evicted(dataset: &str, rows: usize) {
    counter!(RETENTION_EVICTED, "dataset" => dataset.to_owned()).increment(rows as u64);
}

pub fn load_state(dataset: &str, state: u8) {
    gauge!(LOAD_STATE, "dataset" => dataset.to_owned()).set(f64::from(state));
}

/// Makes the per-dataset series visible (at zero) before the first event, so
/// a dashboard sees every dataset from startup.
pub fn register_dataset(dataset: &str) {
    counter!(REFRESH_ERRORS, "dataset" => dataset.to_owned(), "reason" => "source").absolute(0);
    counter!(READY_STATE_FALLBACK, "dataset" => dataset.to_owned()).absolute(0);
    counter!(RETENTION_EVICTED, "dataset" => dataset.to_owned()).absolute(0);
    counter!(ZERO_RESULTS_FALLBACK, "dataset" => dataset.to_owned()).absolute(0);
}

/// A snapshot of `bytes` bytes was published.
pub fn snapshot_published(dataset: &str, bytes: u64) {
    counter!(SNAPSHOTS_PUBLISHED, "dataset" => dataset.to_owned()).increment(1);
    counter!(SNAPSHOT_BYTES, "dataset" => dataset.to_owned(), "direction" => "upload")
        .increment(bytes);
}

pub fn snapshot_publish_failed(dataset: &str) {
    counter!(SNAPSHOT_PUBLISH_ERRORS, "dataset" => dataset.to_owned()).increment(1);
}

/// A snapshot of `bytes` bytes was downloaded and verified.
pub fn snapshot_downloaded(dataset: &str, bytes: u64) {
    counter!(SNAPSHOT_BYTES, "dataset" => dataset.to_owned(), "direction" => "download")
        .increment(bytes);
}

pub fn snapshot_bootstrap(dataset: &str, outcome: &'static str) {
    counter!(SNAPSHOT_BOOTSTRAPS, "dataset" => dataset.to_owned(), "outcome" => outcome)
        .increment(1);
}

pub fn snapshot_poll(dataset: &str, outcome: &'static str) {
    counter!(SNAPSHOT_POLLS, "dataset" => dataset.to_owned(), "outcome" => outcome).increment(1);
}

/// A message of the snapshot notification queue was handled: `reload`,
/// `ignored` (deleted without a reload) or `outside` (left on the queue).
pub fn snapshot_notification(outcome: &'static str) {
    counter!(SNAPSHOT_NOTIFICATIONS, "outcome" => outcome).increment(1);
}

/// A query on `dataset` went to its source (nothing loaded yet).
pub fn federated_fallback(dataset: &str) {
    counter!(READY_STATE_FALLBACK, "dataset" => dataset.to_owned()).increment(1);
}

/// A statement ended, `ok` or with an error (counted by SQLSTATE in
/// [`query_failed`]), `took` after its execution began.
pub fn statement_ended(took: Duration, ok: bool) {
    let outcome = if ok { "ok" } else { "error" };
    counter!(QUERIES, "outcome" => outcome).increment(1);
    histogram!(QUERY_DURATION, "outcome" => outcome).record(took.as_secs_f64() * 1e3);
}

pub fn statement_planned() {
    counter!(STATEMENTS_PLANNED).increment(1);
}

pub fn index_lookup() {
    counter!(INDEX_LOOKUPS).increment(1);
}

/// `skipped` batches of `dataset` that a scan did not read (see
/// `query::pruning`).
pub fn batches_skipped(dataset: &str, skipped: usize) {
    counter!(BATCHES_SKIPPED, "dataset" => dataset.to_owned()).increment(skipped as u64);
}

/// A query pgaccel refused, answered by its source instead.
pub fn query_forwarded(reason: &'static str) {
    counter!(QUERY_FORWARDED, "reason" => reason).increment(1);
}

pub fn query_failed(sqlstate: &str) {
    let class: String = sqlstate.chars().take(2).collect();
    counter!(QUERY_ERRORS, "class" => class).increment(1);
}
