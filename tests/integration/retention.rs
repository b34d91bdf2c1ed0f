//! Retention: `retention_period` and `retention_sql` evict rows at every
//! check, on every engine; incomplete policies are reported, not ignored.

use std::time::{Duration, Instant};

use crate::support::{MysqlDatabase, Relay, Server, SourceSchema, eventually, logs, simple_rows};

/// Ids held by dataset `name`, in order.
async fn ids(server: &Server, name: &str) -> Vec<String> {
    simple_rows(
        &server.client().await,
        &format!("SELECT id FROM {name} ORDER BY id"),
    )
    .await
    .into_iter()
    .map(|row| row[0].clone().unwrap())
    .collect()
}

/// Polls until dataset `name` holds exactly `expected` (at most 30 s).
async fn wait_for_ids(server: &Server, name: &str, expected: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let held = ids(server, name).await;
        if held == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: holds {held:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

const EVENTS: &str =
    "CREATE TABLE {schema}.events (id int PRIMARY KEY, status text, at timestamptz);
    INSERT INTO {schema}.events VALUES
        (1, 'active', now() - interval '1 hour'),
        (2, 'active', now() - interval '40 days'),
        (3, 'archived', now() - interval '1 hour'),
        (4, 'active', NULL),
        (5, NULL, now() - interval '2 hours')";

#[tokio::test]
async fn retention_evicts_by_period_and_by_sql_on_every_engine() {
    let source = SourceSchema::create("retention").await;
    source.execute(EVENTS).await;
    let folder = tempfile::tempdir().unwrap();
    let relay = Relay::start(None).await;
    for engine in ["arrow", "sqlite", "duckdb"] {
        relay.restore();
        let name = format!("events_{engine}");
        let storage = match engine {
            "arrow" => String::new(),
            _ => format!(
                "      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
                folder.path().join(format!("{name}.db")).display()
            ),
        };
        let config = format!(
            "  - from: postgres:{schema}.events\n    name: {name}\n    params: {{ pg_host: 127.0.0.1, pg_port: {port}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    time_column: at\n    acceleration:\n{storage}      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 30d\n      retention_sql: DELETE FROM {name} WHERE status = 'archived'\n",
            schema = source.name,
            port = relay.port,
        );
        let server = Server::start(&config).await;
        server.wait_ready().await;
        // Row 2 is too old, row 3 archived; NULL time or status is kept.
        wait_for_ids(&server, &name, &["1", "4", "5"]).await;
        let evicted = format!("[retention] Dataset '{name}': the retention check evicted 2 rows");
        // The check logs once it has published, so the log may follow the rows.
        eventually(&format!("the log '{evicted}'"), || async {
            logs().iter().any(|l| l.contains(&evicted))
        })
        .await;
        let (_, metrics) = server.get("/metrics").await;
        let series = format!("dataset_acceleration_retention_evicted_rows{{dataset=\"{name}\"}} ");
        let counted: f64 = metrics
            .lines()
            .find_map(|line| line.strip_prefix(&series))
            .unwrap_or_else(|| panic!("no {series} in metrics"))
            .trim()
            .parse()
            .unwrap();
        assert!(counted >= 2.0, "{counted}");
        // A refresh loads an archived row again; the next check evicts it.
        source
            .execute("UPDATE {schema}.events SET status = 'archived' WHERE id = 5")
            .await;
        server.refresh(&name).await;
        wait_for_ids(&server, &name, &["1", "4"]).await;
        server.runtime.shutdown().await;
        source
            .execute("UPDATE {schema}.events SET status = NULL WHERE id = 5")
            .await;
        if engine != "arrow" {
            // The file holds what the last check left, also while the
            // source is down.
            relay.cut();
            let server = Server::start(&config).await;
            server.wait_ready().await;
            assert_eq!(ids(&server, &name).await, ["1", "4"], "{engine}");
            server.runtime.shutdown().await;
        }
    }
}

#[tokio::test]
async fn retention_on_a_mariadb_dataset() {
    let mariadb = MysqlDatabase::create("retention").await;
    mariadb
        .execute(
            "CREATE TABLE {db}.logs (id INT PRIMARY KEY, level VARCHAR(10), at DATETIME);
             INSERT INTO {db}.logs VALUES
                 (1, 'info', UTC_TIMESTAMP() - INTERVAL 1 HOUR),
                 (2, 'debug', UTC_TIMESTAMP() - INTERVAL 1 HOUR),
                 (3, 'info', UTC_TIMESTAMP() - INTERVAL 10 DAY)",
        )
        .await;
    let config = mariadb.dataset(
        "logs",
        "maria_logs",
        "    time_column: at\n    acceleration:\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 7d\n      retention_sql: DELETE FROM maria_logs WHERE level = 'debug'\n",
    );
    let server = Server::start(&config).await;
    server.wait_ready().await;
    wait_for_ids(&server, "maria_logs", &["1"]).await;
}

#[tokio::test]
async fn an_incomplete_retention_policy_is_reported_and_nothing_is_scheduled() {
    let source = SourceSchema::create("retention_incomplete").await;
    source.execute(EVENTS).await;
    let cases = [
        (
            "no_policy",
            "    time_column: at\n    acceleration:\n      retention_check_enabled: true\n      retention_check_interval: 1s\n",
            "neither retention_period nor retention_sql",
        ),
        (
            "no_time_column",
            "    acceleration:\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 30d\n",
            "sets retention_period but no time_column",
        ),
        (
            "no_interval",
            "    time_column: at\n    acceleration:\n      retention_check_enabled: true\n      retention_period: 30d\n",
            "no retention_check_interval",
        ),
        (
            "disabled",
            "    time_column: at\n    acceleration:\n      retention_check_enabled: false\n      retention_check_interval: 1s\n      retention_sql: DELETE FROM disabled WHERE true\n",
            "",
        ),
    ];
    let datasets: String = cases
        .iter()
        .map(|(name, extra, _)| source.dataset("events", name, extra))
        .collect();
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (name, _, missing) in cases {
        // Nothing is evicted: no check runs.
        assert_eq!(ids(&server, name).await.len(), 5, "{name}");
        let reported: Vec<String> = logs()
            .into_iter()
            .filter(|l| l.contains("[retention]") && l.contains(&format!("Dataset '{name}'")))
            .collect();
        if missing.is_empty() {
            assert!(reported.is_empty(), "{name}: {reported:?}");
        } else {
            assert_eq!(reported.len(), 1, "{name}: {reported:?}");
            assert!(reported[0].contains(" ERROR "), "{}", reported[0]);
            assert!(reported[0].contains(missing), "{}", reported[0]);
        }
    }
}

/// The seeds' end-to-end incremental ingestion example: append with overlap
/// and a primary key, retention by period and by soft delete.
#[tokio::test]
async fn the_soft_delete_orders_pipeline() {
    let source = SourceSchema::create("soft_delete").await;
    source
        .execute(
            "CREATE TABLE {schema}.orders (id int PRIMARY KEY, status text, updated_at timestamptz NOT NULL, deleted_at timestamptz);
             INSERT INTO {schema}.orders VALUES
                 (1, 'new', now() - interval '1 hour', NULL),
                 (2, 'new', now() - interval '1 hour', now()),
                 (3, 'new', now() - interval '100 days', NULL)",
        )
        .await;
    let folder = tempfile::tempdir().unwrap();
    let config = source.dataset(
        "orders",
        "orders",
        &format!(
            "    time_column: updated_at\n    acceleration:\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{}' }}\n      refresh_mode: append\n      refresh_check_interval: 1h\n      refresh_append_overlap: 5m\n      primary_key: id\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 90d\n      retention_sql: DELETE FROM orders WHERE deleted_at IS NOT NULL\n",
            folder.path().join("orders.duckdb").display()
        ),
    );
    let server = Server::start(&config).await;
    server.wait_ready().await;
    // The soft-deleted row and the one older than 90 days are evicted.
    wait_for_ids(&server, "orders", &["1"]).await;
    // An update replaces the held row (no duplicate); a new row is added.
    source
        .execute(
            "UPDATE {schema}.orders SET status = 'shipped', updated_at = now() WHERE id = 1;
             INSERT INTO {schema}.orders VALUES (4, 'new', now(), NULL)",
        )
        .await;
    server.refresh("orders").await;
    // The overlap reads the soft-deleted row 2 again; the next check
    // evicts it again.
    wait_for_ids(&server, "orders", &["1", "4"]).await;
    let rows = simple_rows(
        &server.client().await,
        "SELECT id, status FROM orders ORDER BY id",
    )
    .await;
    assert_eq!(
        rows,
        vec![
            vec![Some("1".to_owned()), Some("shipped".to_owned())],
            vec![Some("4".to_owned()), Some("new".to_owned())],
        ]
    );
    // A soft delete arrives with the next append and is evicted by the
    // next check.
    source
        .execute("UPDATE {schema}.orders SET deleted_at = now(), updated_at = now() WHERE id = 1")
        .await;
    server.refresh("orders").await;
    wait_for_ids(&server, "orders", &["4"]).await;
}

/// With `time_partition_column` and a scheduled check, every engine evicts
/// only the rows old by both columns.
#[tokio::test]
async fn with_a_partition_column_every_engine_evicts_only_rows_old_by_both() {
    let source = SourceSchema::create("retention_partition").await;
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
    for (engine, kept) in [
        ("arrow", ["1", "3"].as_slice()),
        ("sqlite", ["1", "3"].as_slice()),
    ] {
        let name = format!("partitioned_{engine}");
        let storage = match engine {
            "arrow" => String::new(),
            _ => format!(
                "      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
                folder.path().join(format!("{name}.db")).display()
            ),
        };
        let config = source.dataset(
            "events",
            &name,
            &format!(
                "    time_column: at\n    time_partition_column: day\n    time_partition_format: date\n    acceleration:\n{storage}      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 30d\n"
            ),
        );
        let server = Server::start(&config).await;
        server.wait_ready().await;
        wait_for_ids(&server, &name, kept).await;
        server.runtime.shutdown().await;
    }
}
