//! Sources that go away: pgaccel reaches PostgreSQL and MariaDB through a
//! relay the test cuts and restores. A loaded acceleration keeps answering;
//! a dataset with nothing loaded is an unknown table until its source
//! answers; `ready_state` decides readiness and where queries go meanwhile.

use std::time::Duration;

use crate::support::{MysqlDatabase, Relay, Server, SourceSchema, eventually, logs, sqlstate};

/// A dataset entry reading `{schema}.{table}` through `relay`.
fn via(relay: &Relay, source: &SourceSchema, table: &str, name: &str, extra: &str) -> String {
    format!(
        "  - from: postgres:{schema}.{table}\n    name: {name}\n    params: {{ pg_host: 127.0.0.1, pg_port: {port}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n{extra}",
        schema = source.name,
        port = relay.port,
    )
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> Result<i64, tokio_postgres::Error> {
    client.query_one(sql, &[]).await.map(|row| row.get(0))
}

#[tokio::test]
async fn a_dataset_whose_source_is_down_is_unknown_until_the_source_answers() {
    let source = SourceSchema::create("outage_start").await;
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1), (2)",
        )
        .await;
    let relay = Relay::start(None).await;
    relay.cut();
    let server = Server::start(&via(&relay, &source, "t", "down_at_start", "")).await;
    let status = server
        .wait_for_status("down_at_start", |s| s["status"] == "Error")
        .await;
    assert!(
        status["error_message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{status}"
    );
    let replica = server.client().await;
    let error = count(&replica, "SELECT count(*) FROM down_at_start")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "42P01", "{error}");
    assert_eq!(server.get("/v1/ready").await.0, 503);
    // Still retrying (without limit): restoring the source loads it.
    relay.restore();
    server
        .wait_for_status("down_at_start", |s| s["status"] == "Ready")
        .await;
    assert_eq!(
        count(&replica, "SELECT count(*) FROM down_at_start")
            .await
            .unwrap(),
        2
    );
    assert_eq!(server.get("/v1/ready").await.0, 200);
}

#[tokio::test]
async fn a_loaded_acceleration_is_served_while_its_source_is_down() {
    let source = SourceSchema::create("outage_serve").await;
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1), (2)",
        )
        .await;
    let relay = Relay::start(None).await;
    let server = Server::start(&via(&relay, &source, "t", "served_while_down", "")).await;
    server.wait_ready().await;
    let replica = server.client().await;
    relay.cut();
    source.execute("INSERT INTO {schema}.t VALUES (3)").await;
    let (status, _) = server
        .post("/v1/datasets/served_while_down/acceleration/refresh")
        .await;
    assert_eq!(status, 201);
    let status = server
        .wait_for_status("served_while_down", |s| s["status"] == "Error")
        .await;
    assert!(status["error_message"].as_str().is_some(), "{status}");
    // Query availability and source health are separate.
    assert_eq!(
        count(&replica, "SELECT count(*) FROM served_while_down")
            .await
            .unwrap(),
        2
    );
    assert_eq!(server.get("/v1/ready").await.0, 200);
    let warning = "Failed to connect to the source for dataset served_while_down. Serving data from the existing acceleration for served_while_down while retrying the connection.";
    eventually("the outage warning", || async {
        logs()
            .iter()
            .any(|line| line.contains(" WARN ") && line.contains(warning))
    })
    .await;
    // Refreshes resume once the source answers again.
    relay.restore();
    server
        .wait_for_status("served_while_down", |s| s["status"] == "Ready")
        .await;
    assert_eq!(
        count(&replica, "SELECT count(*) FROM served_while_down")
            .await
            .unwrap(),
        3
    );
    // The warning is not repeated within five minutes.
    let warnings = logs().iter().filter(|line| line.contains(warning)).count();
    assert_eq!(warnings, 1);
}

#[tokio::test]
async fn ready_state_decides_readiness_and_sends_queries_to_the_source_until_loaded() {
    let source = SourceSchema::create("ready_states").await;
    // Large enough that the load is still stalled when the test queries.
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY, pad text);
             INSERT INTO {schema}.t SELECT i, repeat('x', 100) FROM generate_series(1, 20000) AS i",
        )
        .await;
    for (ready_state, ready_while_down) in [
        ("on_load", false),
        ("on_registration", true),
        ("on_schema_resolved", false),
    ] {
        let name = format!("rs_{ready_state}");
        // The connection that carries the load goes silent after 256 KiB;
        // every other connection is relayed normally.
        let relay = Relay::start(Some(256 * 1024)).await;
        relay.cut();
        let entry = via(
            &relay,
            &source,
            "t",
            &name,
            &format!("    ready_state: {ready_state}\n"),
        );
        let server = Server::start(&entry).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let ready = server.get("/v1/ready").await.0;
        assert_eq!(
            ready == 200,
            ready_while_down,
            "{ready_state} while the source is down"
        );
        let replica = server.client().await;
        assert!(
            count(&replica, &format!("SELECT count(*) FROM {name}"))
                .await
                .is_err()
        );
        relay.restore();
        let sql = format!("SELECT count(*) FROM {name} WHERE id <= 10");
        if ready_state == "on_load" {
            // Loading: no answers and not ready until the load completes.
            tokio::time::sleep(Duration::from_millis(500)).await;
            assert_eq!(server.get("/v1/ready").await.0, 503);
            assert!(count(&replica, &sql).await.is_err());
        } else {
            // The source answers while the load is stalled.
            eventually(&format!("{ready_state}: the source answers"), || async {
                count(&replica, &sql).await.ok() == Some(10)
            })
            .await;
            assert_eq!(server.get("/v1/ready").await.0, 200, "{ready_state}");
            let metrics = server.get("/metrics").await.1;
            let fallback = metrics
                .lines()
                .find(|line| {
                    line.starts_with("accelerated_ready_state_federated_fallback{")
                        && line.contains(&format!("dataset=\"{name}\""))
                })
                .unwrap_or_else(|| panic!("no fallback metric for {name}"));
            let value: f64 = fallback.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(value >= 1.0, "{fallback}");
        }
        // An on-demand refresh starts the stalled load again, on a new
        // connection.
        eventually("the load stalls", || async { relay.has_stalled() }).await;
        server.refresh(&name).await;
        assert_eq!(count(&replica, &sql).await.unwrap(), 10, "{ready_state}");
        assert_eq!(server.get("/v1/ready").await.0, 200, "{ready_state}");
    }
}

#[tokio::test]
async fn a_mariadb_source_outage_is_served_from_the_acceleration() {
    let db = MysqlDatabase::create("outage_mysql").await;
    db.execute("CREATE TABLE {db}.t (id int PRIMARY KEY); INSERT INTO {db}.t VALUES (1), (2);")
        .await;
    let relay = Relay::start_to(3306, None).await;
    let server = Server::start(&db.dataset_via(relay.port, "t", "mysql_down", "")).await;
    server.wait_ready().await;
    let replica = server.client().await;
    relay.cut();
    db.execute("INSERT INTO {db}.t VALUES (3);").await;
    let (status, _) = server
        .post("/v1/datasets/mysql_down/acceleration/refresh")
        .await;
    assert_eq!(status, 201);
    server
        .wait_for_status("mysql_down", |s| s["status"] == "Error")
        .await;
    assert_eq!(
        count(&replica, "SELECT count(*) FROM mysql_down")
            .await
            .unwrap(),
        2
    );
    relay.restore();
    server
        .wait_for_status("mysql_down", |s| s["status"] == "Ready")
        .await;
    assert_eq!(
        count(&replica, "SELECT count(*) FROM mysql_down")
            .await
            .unwrap(),
        3
    );
}

#[tokio::test]
async fn credentials_rejected_after_a_load_are_an_error_that_is_not_retried() {
    let db = MysqlDatabase::create("outage_rejected").await;
    let user = format!("pgaccel_u{}", std::process::id());
    let hosts = ["localhost", "127.0.0.1", "%"];
    let mut setup =
        String::from("CREATE TABLE {db}.t (id int PRIMARY KEY); INSERT INTO {db}.t VALUES (1);");
    for host in hosts {
        setup.push_str(&format!(
            "DROP USER IF EXISTS '{user}'@'{host}'; CREATE USER '{user}'@'{host}' IDENTIFIED BY 'first';
             GRANT SELECT ON {{db}}.* TO '{user}'@'{host}';"
        ));
    }
    db.execute(&setup).await;
    let relay = Relay::start_to(3306, None).await;
    let entry = format!(
        "  - from: mysql:{db}.t\n    name: rejected\n    params: {{ mysql_host: 127.0.0.1, mysql_tcp_port: {port}, mysql_db: {db}, mysql_user: {user}, mysql_pass: first, mysql_sslmode: disabled }}\n",
        db = db.name,
        port = relay.port,
    );
    let server = Server::start(&entry).await;
    server.wait_ready().await;
    // The password changes; the connections pgaccel holds are cut, so the
    // next refresh must log in again.
    let mut change = String::new();
    for host in hosts {
        change.push_str(&format!(
            "ALTER USER '{user}'@'{host}' IDENTIFIED BY 'second';"
        ));
    }
    db.execute(&change).await;
    relay.cut();
    let (status, _) = server
        .post("/v1/datasets/rejected/acceleration/refresh")
        .await;
    assert_eq!(status, 201);
    tokio::time::sleep(Duration::from_millis(200)).await;
    relay.restore();
    let error = "Dataset 'rejected' cannot connect to its source because of its configuration, so it is served from its existing acceleration and will not refresh until the configuration is fixed.";
    eventually("the configuration error", || async {
        logs()
            .iter()
            .any(|line| line.contains(" ERROR ") && line.contains(error))
    })
    .await;
    let replica = server.client().await;
    assert_eq!(
        count(&replica, "SELECT count(*) FROM rejected")
            .await
            .unwrap(),
        1
    );
    let status = server.dataset_status("rejected").await;
    assert_eq!(status["status"], "Error", "{status}");
    // Not retried: no new connection reaches the relay.
    let connections = relay.connections.load(std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        relay.connections.load(std::sync::atomic::Ordering::SeqCst),
        connections
    );
    let mut cleanup = String::new();
    for host in hosts {
        cleanup.push_str(&format!("DROP USER IF EXISTS '{user}'@'{host}';"));
    }
    db.execute(&cleanup).await;
}

/// A dataset with data to serve retries a source that cannot be reached
/// only as `refresh_retry_enabled` and `refresh_retry_max_attempts` allow
/// (the unlimited retry is for a dataset with nothing to serve).
#[tokio::test]
async fn retries_of_a_served_dataset_follow_its_retry_settings() {
    let source = SourceSchema::create("outage_retries").await;
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1), (2)",
        )
        .await;
    let relay = Relay::start(None).await;
    let datasets = via(
        &relay,
        &source,
        "t",
        "no_retries",
        "    acceleration:\n      refresh_retry_enabled: false\n",
    ) + &via(
        &relay,
        &source,
        "t",
        "two_retries",
        "    acceleration:\n      refresh_retry_max_attempts: 2\n",
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    relay.cut();
    for (name, attempts, why) in [
        ("no_retries", 1, "refresh_retry_enabled: false"),
        ("two_retries", 3, "refresh_retry_max_attempts: 2 reached"),
    ] {
        let (status, body) = server
            .post(&format!("/v1/datasets/{name}/acceleration/refresh"))
            .await;
        assert_eq!(status, 201, "{body}");
        let gave_up = format!(
            "Failed to connect to the source for dataset {name}. Serving data from the existing acceleration for {name}; not retrying ({why})"
        );
        eventually("the refresh gives up", || async {
            logs().iter().any(|line| line.contains(&gave_up))
        })
        .await;
        // Given up after exactly that many attempts.
        assert_eq!(refresh_errors(&server, name).await, attempts, "{name}");
        assert_eq!(
            count(
                &server.client().await,
                &format!("SELECT count(*) FROM {name}")
            )
            .await
            .unwrap(),
            2
        );
    }
}

/// The count of `dataset_acceleration_refresh_errors` of `name`, all
/// reasons.
async fn refresh_errors(server: &Server, name: &str) -> u64 {
    let (_, text) = server.get("/metrics").await;
    text.lines()
        .filter(|line| {
            line.starts_with("dataset_acceleration_refresh_errors")
                && line.contains(&format!("dataset=\"{name}\""))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}
