//! YAML in, queries and HTTP calls out: a PostgreSQL table accelerated,
//! queried through tokio-postgres and psql, changed at the source and
//! refreshed on demand.

use std::time::{Duration, Instant};

use crate::support::{Process, Server, SourceSchema, psql, simple_rows};

const ORDERS: &str = "CREATE TABLE {schema}.orders (id int PRIMARY KEY, customer text NOT NULL, total numeric(10,2), placed date);
    INSERT INTO {schema}.orders VALUES (1, 'ada', 10.50, '2026-01-02'), (2, 'grace', 20.00, '2026-01-03'), (3, 'ada', 5.25, '2026-01-04');";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn source_changes_appear_after_an_on_demand_refresh() {
    let source = SourceSchema::create("e2e").await;
    source.execute(ORDERS).await;
    let server = Server::start(&source.dataset("orders", "orders", "")).await;
    server.wait_ready().await;
    let client = server.client().await;

    let rows = client
        .query("SELECT customer, sum(total)::text AS spent FROM orders GROUP BY customer ORDER BY customer", &[])
        .await
        .unwrap();
    let got: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        got,
        [
            ("ada".into(), "15.75".into()),
            ("grace".into(), "20.00".into())
        ]
    );

    let (ok, out) = psql(
        server.runtime.pg_addr().port(),
        "SELECT count(*) FROM orders",
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "3");

    source.execute("INSERT INTO {schema}.orders VALUES (4, 'linus', 99.99, '2026-02-01'); DELETE FROM {schema}.orders WHERE id = 2;").await;
    // Unchanged until refreshed: the acceleration answers, not the source.
    let count: i64 = client
        .query_one("SELECT count(*) FROM orders WHERE id = 4", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0);

    server.refresh("orders").await;
    let ids: Vec<i32> = client
        .query("SELECT id FROM orders ORDER BY id", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(ids, [1, 3, 4]);
    let (_, out) = psql(
        server.runtime.pg_addr().port(),
        "SELECT customer FROM orders WHERE id = 4",
    );
    assert_eq!(out.trim(), "linus");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_readiness_and_metrics_describe_each_dataset() {
    let source = SourceSchema::create("status").await;
    source.execute(ORDERS).await;
    let datasets = source.dataset(
        "orders",
        "orders",
        "    acceleration:\n      refresh_check_interval: 1h\n",
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;

    assert_eq!(server.get("/health").await, (200, "ok".to_owned()));
    let status = server.dataset_status("orders").await;
    assert_eq!(status["status"], "Ready");
    assert_eq!(status["from"], format!("postgres:{}.orders", source.name));
    let last =
        chrono::DateTime::parse_from_rfc3339(status["last_refresh"].as_str().unwrap()).unwrap();
    let next =
        chrono::DateTime::parse_from_rfc3339(status["next_refresh"].as_str().unwrap()).unwrap();
    let gap = (next - last).num_seconds();
    assert!(
        (3599..=3601).contains(&gap),
        "next_refresh should be an hour after last_refresh: {status}"
    );
    assert!(status.get("error_message").is_none(), "{status}");
    // The column statistics are computed after the version is published.
    assert!(
        matches!(
            status["column_statistics"].as_str(),
            Some("computing" | "ready")
        ),
        "{status}"
    );
    server
        .wait_for_status("orders", |status| status["column_statistics"] == "ready")
        .await;

    let (code, metrics) = server.get("/metrics").await;
    assert_eq!(code, 200);
    for needle in [
        "dataset_acceleration_last_refresh_unix_time_ms{dataset=\"orders\"}",
        "dataset_acceleration_rows{dataset=\"orders\"} 3",
        "dataset_acceleration_refresh_errors{dataset=\"orders\"",
        "dataset_acceleration_refresh_duration_ms",
    ] {
        assert!(
            metrics.contains(needle),
            "{needle} missing from /metrics:\n{metrics}"
        );
    }

    let (code, body) = server
        .post("/v1/datasets/nosuch/acceleration/refresh")
        .await;
    assert_eq!(code, 404, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataset_that_cannot_load_keeps_readiness_down_and_says_why() {
    let source = SourceSchema::create("loading").await;
    source.execute(ORDERS).await;
    let datasets = format!(
        "{}{}",
        source.dataset("orders", "orders", ""),
        source.dataset(
            "missing",
            "ghost",
            "    acceleration:\n      refresh_retry_enabled: false\n"
        )
    );
    let server = Server::start(&datasets).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        let status = server.dataset_status("ghost").await;
        if status["status"] == "Error" {
            break status;
        }
        assert!(Instant::now() < deadline, "ghost never failed: {status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains("ghost") && message.contains("missing"),
        "{message}"
    );
    assert_eq!(server.get("/v1/ready").await.0, 503);

    let client = server.client().await;
    let error = client.query("SELECT * FROM ghost", &[]).await.unwrap_err();
    let db = error.as_db_error().expect("a server error");
    // A dataset whose source failed with nothing loaded is not a table yet.
    assert_eq!(db.code().code(), "42P01");
    assert!(
        db.message().contains("'ghost'") && db.message().contains("not found"),
        "{}",
        db.message()
    );
    // The other dataset serves meanwhile.
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.dataset_status("orders").await["status"] != "Ready" {
        assert!(Instant::now() < deadline, "orders never loaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let count: i64 = client
        .query_one("SELECT count(*) FROM orders", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 3);
    let (_, metrics) = server.get("/metrics").await;
    assert!(
        metrics.lines().any(|line| line
            .starts_with("dataset_acceleration_refresh_errors{dataset=\"ghost\"")
            && !line.ends_with(" 0")),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interval_refresh_picks_up_changes_by_itself() {
    let source = SourceSchema::create("interval").await;
    source.execute(ORDERS).await;
    let datasets = source.dataset(
        "orders",
        "orders",
        "    acceleration:\n      refresh_check_interval: 1s\n",
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    source
        .execute("INSERT INTO {schema}.orders VALUES (5, 'edsger', 1.00, '2026-03-01')")
        .await;
    let client = server.client().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let count: i64 = client
            .query_one("SELECT count(*) FROM orders", &[])
            .await
            .unwrap()
            .get(0);
        if count == 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "interval refresh never showed the new row"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Successful refreshes recorded for `dataset`, from `/metrics`.
async fn completed_refreshes(server: &Server, dataset: &str) -> u64 {
    let (_, metrics) = server.get("/metrics").await;
    let prefix =
        format!("dataset_acceleration_refresh_duration_ms_count{{dataset=\"{dataset}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map_or(0, |count| count.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_on_demand_refresh_cancels_the_one_in_flight() {
    let source = SourceSchema::create("cancel").await;
    // Reading this view takes two seconds.
    source
        .execute(
            "CREATE TABLE {schema}.base (id int); INSERT INTO {schema}.base VALUES (1), (2);
             CREATE VIEW {schema}.slow AS SELECT b.id FROM {schema}.base b CROSS JOIN pg_sleep(2);",
        )
        .await;
    let server = Server::start(&source.dataset("slow", "slow", "")).await;
    server.wait_ready().await;
    assert_eq!(completed_refreshes(&server, "slow").await, 1);

    let path = "/v1/datasets/slow/acceleration/refresh";
    assert_eq!(server.post(path).await.0, 201);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(server.dataset_status("slow").await["status"], "Refreshing");
    assert_eq!(server.post(path).await.0, 201);
    let deadline = Instant::now() + Duration::from_secs(20);
    while completed_refreshes(&server, "slow").await < 2 {
        assert!(
            Instant::now() < deadline,
            "the second refresh never completed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The first on-demand refresh was cancelled, not completed after it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(completed_refreshes(&server, "slow").await, 2);
}

/// A dataset that names no connection parameters reads them from libpq's
/// standard environment (PGHOST, PGPORT, PGDATABASE, PGUSER, PGSSLMODE),
/// as the seeds' examples expect; pgaccel runs as a process of its own so
/// that the environment is its alone.
#[tokio::test]
async fn connection_parameters_come_from_the_standard_environment() {
    let source = SourceSchema::create("pg_env").await;
    source.execute(ORDERS).await;
    let folder = tempfile::tempdir().unwrap();
    let datasets = format!(
        "  - from: postgres:{}.orders\n    name: env_orders\n",
        source.name
    );
    let process = Process::start_with_env(
        folder.path(),
        "",
        &datasets,
        &[
            ("PGHOST", "127.0.0.1"),
            ("PGPORT", "5432"),
            ("PGDATABASE", "test"),
            ("PGUSER", "postgres"),
            ("PGSSLMODE", "disable"),
        ],
    );
    process.wait_ready().await;
    let rows = simple_rows(
        &process.client().await,
        "SELECT count(*), sum(total) FROM env_orders",
    )
    .await;
    assert_eq!(rows, [[Some("3".to_owned()), Some("35.75".to_owned())]]);
}

/// `acceleration.enabled: false` makes a federated dataset: every query is
/// answered by the source itself, so a change at the source shows at once,
/// with no refresh; it is listed like any table.
#[tokio::test]
async fn a_dataset_without_acceleration_is_answered_by_its_source() {
    let source = SourceSchema::create("federated").await;
    source.execute(ORDERS).await;
    let server = Server::start(&source.dataset(
        "orders",
        "live_orders",
        "    acceleration:\n      enabled: false\n",
    ))
    .await;
    // Ready once its source has answered: the first query finds the table.
    server.wait_ready().await;
    let client = server.client().await;
    let sql = "SELECT customer, count(*), sum(total) FROM live_orders WHERE placed >= '2026-01-03' GROUP BY customer ORDER BY customer";
    let answer = simple_rows(&client, sql).await;
    let expected = simple_rows(
        &source.client,
        &sql.replace("live_orders", &format!("{}.orders", source.name)),
    )
    .await;
    assert_eq!(answer, expected);
    source
        .execute("INSERT INTO {schema}.orders VALUES (4, 'ada', 1.00, '2026-02-01')")
        .await;
    let rows = simple_rows(&client, "SELECT count(*) FROM live_orders").await;
    assert_eq!(rows, [[Some("4".to_owned())]]);
    let tables = simple_rows(
        &client,
        "SELECT table_name FROM information_schema.tables WHERE table_name = 'live_orders'",
    )
    .await;
    assert_eq!(tables.len(), 1);
    assert_eq!(
        server.dataset_status("live_orders").await["status"],
        "Ready"
    );
}

/// A dataset without acceleration whose source cannot be reached at startup
/// counts as ready once the first attempt failed: it does not hold the
/// replica's other datasets out of service, and its status says why.
#[tokio::test]
async fn a_federated_dataset_with_its_source_down_does_not_hold_readiness() {
    let source = SourceSchema::create("federated_down").await;
    source.execute(ORDERS).await;
    let reachable = source.dataset("orders", "served_orders", "");
    let down = format!(
        "  - from: postgres:{}.orders\n    name: down_orders\n    params: {{ pg_host: 127.0.0.1, pg_port: {}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    acceleration:\n      enabled: false\n",
        source.name,
        crate::support::free_port()
    );
    let server = Server::start(&format!("{reachable}{down}")).await;
    server.wait_ready().await;
    let status = server.dataset_status("down_orders").await;
    assert_eq!(status["status"], "Error", "{status}");
    assert!(
        status["error_message"]
            .as_str()
            .is_some_and(|message| message.contains("connect")),
        "{status}"
    );
    let client = server.client().await;
    let rows = simple_rows(&client, "SELECT count(*) FROM served_orders").await;
    assert_eq!(rows, [[Some("3".to_owned())]]);
}
