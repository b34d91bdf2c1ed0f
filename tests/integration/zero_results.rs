//! `on_zero_results: use_source`: an empty accelerated result is answered by
//! the source, with the inverse of the retention policy, so an evicted row
//! is never read back.

use std::time::{Duration, Instant};

use crate::support::{MysqlDatabase, Server, SourceSchema, simple_rows};

const USER_EVENTS: &str = "CREATE TABLE {schema}.user_events (
        id int PRIMARY KEY, user_id int, status text, updated_at timestamptz);
    INSERT INTO {schema}.user_events VALUES
        (100, 1, 'active', now()),
        (420, 42, 'archived', now()),
        (700, 7, 'active', now()),
        (701, 7, 'archived', now()),
        (702, 7, 'active', now() - interval '400 days'),
        (703, 7, NULL, NULL)";

/// The `id`s `sql` returns, in order.
async fn ids(server: &Server, sql: &str) -> Vec<String> {
    simple_rows(&server.client().await, sql)
        .await
        .into_iter()
        .map(|row| row[0].clone().unwrap_or_default())
        .collect()
}

async fn fallbacks(server: &Server, name: &str) -> f64 {
    let (_, metrics) = server.get("/metrics").await;
    let series = format!("accelerated_zero_results_federated_fallback{{dataset=\"{name}\"}} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

#[tokio::test]
async fn an_empty_result_falls_back_to_the_source_without_evicted_rows() {
    let source = SourceSchema::create("zero_results").await;
    source.execute(USER_EVENTS).await;
    // User 7 is never loaded (refresh_sql); user 42's only row is archived
    // and evicted by retention.
    let name = "user_events";
    let config = source.dataset(
        "user_events",
        name,
        "    time_column: updated_at\n    acceleration:\n      refresh_sql: SELECT * FROM user_events WHERE user_id <> 7\n      on_zero_results: use_source\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 365d\n      retention_sql: DELETE FROM user_events WHERE status = 'archived'\n",
    );
    let server = Server::start(&config).await;
    server.wait_ready().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while ids(
        &server,
        "SELECT id FROM user_events WHERE user_id = 1 OR user_id = 42 ORDER BY id",
    )
    .await
        != ["100"]
    {
        assert!(Instant::now() < deadline, "retention did not evict row 420");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = fallbacks(&server, name).await;
    // 1. The archived row of user 42 is not read back from the source.
    assert!(
        ids(&server, "SELECT * FROM user_events WHERE user_id = 42")
            .await
            .is_empty()
    );
    // 2. A user never loaded falls back; the source's archived and expired
    //    rows are left out, a NULL status or time is kept.
    assert_eq!(
        ids(
            &server,
            "SELECT id FROM user_events WHERE user_id = 7 ORDER BY id"
        )
        .await,
        ["700", "703"]
    );
    // 3. A projection without the retention columns still hides them.
    assert_eq!(
        ids(
            &server,
            "SELECT id FROM user_events WHERE user_id = 7 AND id >= 701 ORDER BY id"
        )
        .await,
        ["703"]
    );
    // 4. The limit goes to the source too.
    assert_eq!(
        ids(
            &server,
            "SELECT id FROM user_events WHERE user_id = 7 ORDER BY id LIMIT 1"
        )
        .await
        .len(),
        1
    );
    // A prepared lookup by primary key falls back too, and a key evicted
    // by retention stays hidden.
    let client = server.client().await;
    let lookup = client
        .prepare("SELECT id, status FROM user_events WHERE id = $1")
        .await
        .unwrap();
    let found = client.query(&lookup, &[&700i32]).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].get::<_, String>(1), "active");
    assert!(client.query(&lookup, &[&701i32]).await.unwrap().is_empty());
    assert!(client.query(&lookup, &[&420i32]).await.unwrap().is_empty());
    let held = client.query(&lookup, &[&100i32]).await.unwrap();
    assert_eq!(held.len(), 1);
    // A count reads no column: it falls back the same way.
    assert_eq!(
        ids(
            &server,
            "SELECT count(*) FROM user_events WHERE user_id = 7"
        )
        .await,
        ["2"]
    );
    assert!(fallbacks(&server, name).await >= before + 7.0);
    // 5. A partial result is returned as it is: user 1 is loaded, so user
    //    7's rows are not fetched.
    let counted = fallbacks(&server, name).await;
    assert_eq!(
        ids(
            &server,
            "SELECT id FROM user_events WHERE user_id IN (1, 7) ORDER BY id"
        )
        .await,
        ["100"]
    );
    assert_eq!(fallbacks(&server, name).await, counted);
    // 6. A predicate only in a subquery takes no part in the decision: the
    //    outer scan finds rows, so nothing falls back and row 700 (never
    //    loaded) is not found.
    assert_eq!(
        ids(
            &server,
            "SELECT count(*) FROM user_events WHERE id IN (SELECT 700)"
        )
        .await,
        ["0"]
    );
}

#[tokio::test]
async fn a_retention_the_source_cannot_filter_on_refuses_the_dataset() {
    let source = SourceSchema::create("zero_results_refused").await;
    source.execute(USER_EVENTS).await;
    let config = source.dataset(
        "user_events",
        "refused_events",
        "    acceleration:\n      on_zero_results: use_source\n      retention_check_enabled: true\n      retention_check_interval: 1h\n      retention_sql: DELETE FROM refused_events WHERE archived_at IS NOT NULL\n",
    );
    let server = Server::start(&config).await;
    let status = server
        .wait_for_status("refused_events", |s| s["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap();
    let expected = "Failed to register dataset 'refused_events' (postgres): `on_zero_results: use_source` cannot be combined with this retention configuration, so the dataset was not loaded.";
    assert!(message.starts_with(expected), "{message}");
    let error = server
        .client()
        .await
        .query("SELECT * FROM refused_events", &[])
        .await
        .unwrap_err();
    assert_eq!(crate::support::sqlstate(&error), "42P01", "{error}");
}

#[tokio::test]
async fn a_mariadb_dataset_falls_back_without_archived_rows() {
    let mariadb = MysqlDatabase::create("zero_results").await;
    mariadb
        .execute(
            "CREATE TABLE {db}.user_events (id INT PRIMARY KEY, user_id INT, status VARCHAR(20));
             INSERT INTO {db}.user_events VALUES (100, 1, 'active'), (420, 42, 'archived'),
                 (700, 7, 'active'), (701, 7, 'archived')",
        )
        .await;
    let config = mariadb.dataset(
        "user_events",
        "maria_events",
        "    acceleration:\n      refresh_sql: SELECT * FROM maria_events WHERE user_id <> 7\n      on_zero_results: use_source\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_sql: DELETE FROM maria_events WHERE status = 'archived'\n",
    );
    let server = Server::start(&config).await;
    server.wait_ready().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ids(&server, "SELECT id FROM maria_events WHERE user_id = 42")
        .await
        .is_empty()
    {
        assert!(Instant::now() < deadline, "retention did not evict row 420");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        ids(
            &server,
            "SELECT id FROM maria_events WHERE user_id = 7 ORDER BY id"
        )
        .await,
        ["700"]
    );
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of now minus `hours`.
fn hours_ago(hours: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::hours(hours))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

fn duckdb_execute(file: &std::path::Path, sql: &str) {
    let connection = duckdb::Connection::open(file).unwrap();
    connection
        .execute_batch(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The seeds' "Accelerating application logs" configuration, each of its
/// numbered behaviours in turn.
#[tokio::test]
async fn the_application_logs_example() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("logs.duckdb");
    duckdb_execute(
        &file,
        &format!(
            "CREATE TABLE logs (id INTEGER PRIMARY KEY, asset VARCHAR, created_at TIMESTAMP, message VARCHAR);
             INSERT INTO logs VALUES
                 (1, 'asset_id', TIMESTAMP '{recent}', 'recent'),
                 (2, 'asset_id', TIMESTAMP '{two_days}', 'two days old'),
                 (3, 'asset_id', TIMESTAMP '{ten_days}', 'ten days old'),
                 (4, 'other', TIMESTAMP '{recent}', 'other asset');",
            recent = hours_ago(1),
            two_days = hours_ago(48),
            ten_days = hours_ago(240),
        ),
    );
    let config = format!(
        "  - from: duckdb:logs\n    name: logs\n    time_column: created_at\n    params:\n      duckdb_open: '{}'\n    acceleration:\n      refresh_mode: append\n      refresh_check_interval: 10m\n      refresh_sql: \"SELECT * FROM logs WHERE asset = 'asset_id'\"\n      refresh_data_window: 1d\n      on_zero_results: use_source\n      retention_check_enabled: true\n      retention_period: 7d\n      retention_check_interval: 10m\n",
        file.display()
    );
    let server = Server::start(&config).await;
    server.wait_ready().await;
    let before = fallbacks(&server, "logs").await;
    // 1, 2. Only the last day of asset_id is loaded.
    assert_eq!(server.dataset_status("logs").await["rows"], 1);
    // 6. A range reaching past the window returns what is loaded, without
    //    asking the source (results were found).
    assert_eq!(
        ids(
            &server,
            &format!(
                "SELECT id FROM logs WHERE created_at > TIMESTAMP '{}' ORDER BY id",
                hours_ago(72)
            )
        )
        .await,
        ["1"]
    );
    assert_eq!(fallbacks(&server, "logs").await, before);
    // 4. Another asset falls back to the source.
    assert_eq!(
        ids(&server, "SELECT id FROM logs WHERE asset = 'other'").await,
        ["4"]
    );
    // 5. A log older than the window falls back too, but one older than the
    //    retention period is not returned.
    assert_eq!(
        ids(&server, "SELECT id FROM logs WHERE id = 2").await,
        ["2"]
    );
    assert!(
        ids(&server, "SELECT id FROM logs WHERE id = 3")
            .await
            .is_empty()
    );
    assert!(fallbacks(&server, "logs").await >= before + 3.0);
    // 3. A refresh appends the new rows of asset_id only.
    duckdb_execute(
        &file,
        &format!(
            "INSERT INTO logs VALUES (5, 'asset_id', TIMESTAMP '{now}', 'new'), (6, 'other', TIMESTAMP '{now}', 'new other');",
            now = hours_ago(0)
        ),
    );
    server.refresh("logs").await;
    assert_eq!(
        ids(
            &server,
            "SELECT id FROM logs WHERE asset = 'asset_id' ORDER BY id"
        )
        .await,
        ["1", "5"]
    );
    // 7. A retention check ran at startup (nothing older than 7 days is held).
    assert!(
        crate::support::logs()
            .iter()
            .any(|l| l.contains("[retention] Dataset 'logs': the retention check evicted 0 rows")),
        "no retention check logged"
    );
}

/// With `time_partition_column` and a scheduled check, the fallback keeps a
/// row whose partition is recent (the check keeps it too), on every engine.
#[tokio::test]
async fn the_fallback_follows_the_partition_rule_of_the_retention_check() {
    let source = SourceSchema::create("zero_results_partition").await;
    source
        .execute(
            "CREATE TABLE {schema}.events (id int PRIMARY KEY, at timestamptz, day date);
             INSERT INTO {schema}.events VALUES
                 (1, now() - interval '40 days', current_date),
                 (2, now() - interval '40 days', current_date - 40),
                 (3, now(), current_date)",
        )
        .await;
    let folder = tempfile::tempdir().unwrap();
    // Row 2 is old by both columns: never returned.
    for (engine, expected) in [("arrow", ["1"].as_slice()), ("sqlite", ["1"].as_slice())] {
        let name = format!("fallback_partition_{engine}");
        let storage = match engine {
            "arrow" => String::new(),
            _ => format!(
                "      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
                folder.path().join(format!("{name}.db")).display()
            ),
        };
        // Only row 3 is loaded; rows 1 and 2 can only come from the source.
        let config = source.dataset(
            "events",
            &name,
            &format!(
                "    time_column: at\n    time_partition_column: day\n    time_partition_format: date\n    acceleration:\n{storage}      refresh_sql: SELECT * FROM {name} WHERE id = 3\n      on_zero_results: use_source\n      retention_check_enabled: true\n      retention_check_interval: 1h\n      retention_period: 30d\n"
            ),
        );
        let server = Server::start(&config).await;
        server.wait_ready().await;
        let mut returned = Vec::new();
        for id in [1, 2] {
            returned.extend(ids(&server, &format!("SELECT id FROM {name} WHERE id = {id}")).await);
        }
        assert_eq!(returned, expected, "{engine}");
        server.runtime.shutdown().await;
    }
}
