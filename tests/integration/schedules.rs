//! Refresh schedules against a real PostgreSQL: cron times, jittered
//! intervals and how `next_refresh` reports them (seeds: Refresh Schedules,
//! Refresh Jitter, Monitoring Freshness). Second-scale schedules keep each
//! test to a few seconds.

use std::time::Duration;

use chrono::{DateTime, Timelike, Utc};
use serde_json::Value;

use crate::support::{Server, SourceSchema};

fn time(status: &Value, key: &str) -> Option<DateTime<Utc>> {
    status[key]
        .as_str()
        .map(|text| DateTime::parse_from_rfc3339(text).unwrap().to_utc())
}

/// Waits until `last_refresh` moves past `after`; returns the new status.
async fn next_refresh_after(server: &Server, name: &str, after: DateTime<Utc>) -> Value {
    server
        .wait_for_status(name, |status| {
            time(status, "last_refresh").is_some_and(|last| last > after)
        })
        .await
}

/// A source schema with table `t` holding one row, and pgaccel serving it
/// as dataset `t` with `acceleration` (YAML lines).
async fn serve_one_row(prefix: &str, acceleration: &str) -> (SourceSchema, Server) {
    let source = SourceSchema::create(prefix).await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1);")
        .await;
    let server = Server::start(&source.dataset("t", "t", acceleration)).await;
    server.wait_ready().await;
    (source, server)
}

#[tokio::test]
async fn cron_refreshes_run_at_cron_times_and_report_them() {
    // Every two seconds, with the optional seconds field.
    let (source, server) = serve_one_row(
        "cron",
        "    acceleration:\n      refresh_cron: '*/2 * * * * *'\n",
    )
    .await;
    let status = server.dataset_status("t").await;
    let loaded = time(&status, "last_refresh").expect("initial load");
    let due = time(&status, "next_refresh").expect("a cron schedule reports its next time");
    assert!(due.second().is_multiple_of(2), "{status}");
    assert_eq!(
        due.nanosecond(),
        0,
        "a cron time is a whole second: {status}"
    );
    assert!(
        due > loaded && due <= loaded + chrono::Duration::seconds(2),
        "{status}"
    );

    // The next refresh happens at that cron time and picks up new rows.
    source.execute("INSERT INTO {schema}.t VALUES (2);").await;
    let status = next_refresh_after(&server, "t", loaded).await;
    let refreshed = time(&status, "last_refresh").unwrap();
    assert!(
        refreshed >= due,
        "refreshed at {refreshed}, before its cron time {due}"
    );
    assert!(refreshed < due + chrono::Duration::seconds(2), "{status}");
    let count: i64 = server
        .client()
        .await
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 2);
    let next = time(&status, "next_refresh").unwrap();
    assert!(next > due && next.second().is_multiple_of(2), "{status}");
}

#[tokio::test]
async fn jittered_intervals_stay_within_the_jitter_max() {
    let (_source, server) = serve_one_row(
        "jitter",
        "    acceleration:\n      refresh_check_interval: 1s\n      refresh_jitter_enabled: true\n      refresh_jitter_max: 500ms\n",
    )
    .await;
    let mut last = time(&server.dataset_status("t").await, "last_refresh").unwrap();
    let mut gaps = Vec::new();
    for _ in 0..3 {
        let status = server.dataset_status("t").await;
        let due = time(&status, "next_refresh").expect("an interval schedule reports its due time");
        let gap = (due - last).to_std().unwrap();
        assert!(
            gap >= Duration::from_millis(500) && gap <= Duration::from_millis(1600),
            "due {gap:?} after the last refresh, outside 1s ± 500ms: {status}"
        );
        gaps.push(gap);
        let status = next_refresh_after(&server, "t", last).await;
        last = time(&status, "last_refresh").unwrap();
    }
    // Without jitter every gap would be the interval to within microseconds.
    assert!(
        gaps.iter()
            .any(|gap| gap.abs_diff(Duration::from_secs(1)) > Duration::from_millis(20)),
        "jitter varies the interval: {gaps:?}"
    );
}
