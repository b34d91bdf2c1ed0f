//! Failed refreshes and whether they are retried. A source that stops
//! sending mid-refresh (seeds: Source That Stops Sending Mid-Refresh): once
//! the first batch has arrived, a refresh waits at most the stall limit for
//! each later one, then fails as transient and is retried on a new
//! connection. A read the source refuses is permanent and not retried.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::{Relay, Server, SourceSchema};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_stops_sending_is_retried_on_a_new_connection() {
    // Ten minutes in production; every refresh in this test process gets
    // three seconds, far longer than any healthy gap between two batches.
    pgaccel::refresh::set_stall_limit_for_tests(Duration::from_secs(3));
    let source = SourceSchema::create("stall").await;
    source
        .execute(
            "CREATE TABLE {schema}.big (id int PRIMARY KEY, pad text);
             INSERT INTO {schema}.big SELECT g, repeat('x', 100) FROM generate_series(1, 300000) g;",
        )
        .await;
    // The first connection carrying 2 MB of results goes silent.
    let relay = Relay::start(Some(2 * 1024 * 1024)).await;
    let server = Server::start(&format!(
        "  - from: postgres:{schema}.big\n    name: big\n    params: {{ pg_host: 127.0.0.1, pg_port: {port}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n",
        schema = source.name,
        port = relay.port,
    ))
    .await;
    let mut stalled_message = None;
    server
        .wait_for_status("big", |status| {
            if let Some(message) = status["error_message"].as_str()
                && message.contains("stopped sending data mid-refresh")
            {
                stalled_message = Some(message.to_owned());
            }
            status["status"] == "Ready"
        })
        .await;
    assert_eq!(
        stalled_message.as_deref(),
        Some(
            "The source of dataset 'big' stopped sending data mid-refresh: no data for 3s after it started sending, so the connection is treated as lost and the refresh is retried"
        )
    );
    let count: i64 = server
        .client()
        .await
        .query_one("SELECT count(*) FROM big", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 300_000, "the retry loaded every row");
    assert!(
        relay.connections.load(Ordering::SeqCst) >= 2,
        "a new connection"
    );
    let (_, metrics) = server.get("/metrics").await;
    assert!(
        metrics.lines().any(|line| line.starts_with(
            "dataset_acceleration_refresh_errors{dataset=\"big\",reason=\"stalled\"}"
        ) && !line.ends_with(" 0")),
        "{metrics}"
    );
}

/// A read the source refuses (here: no privilege on the table) is a
/// permanent failure: reported once, under `reason="query"`, not retried.
#[tokio::test]
async fn a_read_the_source_refuses_is_not_retried() {
    let source = SourceSchema::create("refused").await;
    let role = format!("{}_reader", source.name);
    source
        .execute(&format!(
            "CREATE TABLE {{schema}}.t (id int PRIMARY KEY); INSERT INTO {{schema}}.t VALUES (1);
             CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {{schema}} TO {role};"
        ))
        .await;
    let server = Server::start(&format!(
        "  - from: postgres:{schema}.t\n    name: refused\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: {role}, pg_sslmode: disable }}\n",
        schema = source.name,
    ))
    .await;
    let status = server
        .wait_for_status("refused", |status| status["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(message.contains("permission denied"), "{message}");
    // Retries would come after about 1 s and 2 s more.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let (_, metrics) = server.get("/metrics").await;
    let errors: Vec<&str> = metrics
        .lines()
        .filter(|line| line.starts_with("dataset_acceleration_refresh_errors{dataset=\"refused\","))
        .filter(|line| !line.ends_with(" 0"))
        .collect();
    assert_eq!(
        errors,
        vec!["dataset_acceleration_refresh_errors{dataset=\"refused\",reason=\"query\"} 1"]
    );
    drop(server);
    source
        .execute(&format!(
            "REVOKE USAGE ON SCHEMA {{schema}} FROM {role}; DROP ROLE {role};"
        ))
        .await;
}
