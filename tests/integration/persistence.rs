//! File accelerations (`engine: duckdb | sqlite`, file modes): the rows and
//! checkpoint survive a restart, are served while the source is down, and a
//! `kill -9` at any point of a refresh leaves the complete old or new data.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rand::Rng;

use crate::support::{
    MysqlDatabase, Process, Relay, Server, SourceSchema, logs, simple_rows, sqlstate,
};

const ENGINES: [&str; 2] = ["sqlite", "duckdb"];

/// A dataset entry reading `{schema}.{table}` through `port`, accelerated
/// by `engine` in `file` with `mode`, plus `extra` acceleration keys.
fn entry(
    port: u16,
    source: &SourceSchema,
    name: &str,
    engine: &str,
    mode: &str,
    file: &Path,
    extra: &str,
) -> String {
    format!(
        "  - from: postgres:{schema}.t\n    name: {name}\n    params: {{ pg_host: 127.0.0.1, pg_port: {port}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    acceleration:\n      engine: {engine}\n      mode: {mode}\n      params: {{ {engine}_file: '{file}' }}\n{extra}",
        schema = source.name,
        file = file.display(),
    )
}

/// Every row of `sql` (over `{schema}.t`), as text, from the source and
/// from pgaccel's dataset `name`.
async fn same_rows(
    server: &Server,
    source: &SourceSchema,
    name: &str,
    sql: &str,
) -> Vec<Vec<Option<String>>> {
    let replica = simple_rows(&server.client().await, &sql.replace("{schema}.t", name)).await;
    let primary = simple_rows(&source.client, &sql.replace("{schema}", &source.name)).await;
    assert_eq!(replica, primary, "{sql}");
    replica
}

/// Columns of several types, so the file's round trip of each is checked
/// against PostgreSQL's own text.
const TABLE: &str = "CREATE TABLE {schema}.t (
        id int PRIMARY KEY, name varchar(20), amount numeric(12, 2), ratio float8,
        at timestamptz, day date, local timestamp, flag bool, tags text, raw bytea);
    INSERT INTO {schema}.t
    SELECT i, 'name ' || i, i * 1.25, i / 3.0, timestamptz '2024-05-01 10:00:00+00' + i * interval '1 hour',
           date '2024-01-01' + i, timestamp '2024-01-01 00:00:00.123456' + i * interval '1 minute',
           i % 2 = 0, CASE WHEN i % 3 = 0 THEN NULL ELSE 'x' END, decode('00ff', 'hex')
    FROM generate_series(1, 500) AS i";

const DUMP: &str =
    "SELECT id, name, amount, ratio, at, day, local, flag, tags, raw FROM {schema}.t ORDER BY id";

#[tokio::test]
async fn a_file_acceleration_is_served_after_a_restart_while_its_source_is_down() {
    for engine in ENGINES {
        let source = SourceSchema::create(&format!("persist_{engine}")).await;
        source.execute(TABLE).await;
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join(format!("accel/t.{engine}"));
        let relay = Relay::start(None).await;
        let name = format!("persisted_{engine}");
        let config = entry(
            relay.port,
            &source,
            &name,
            engine,
            "file",
            &file,
            "      refresh_check_interval: 1h\n",
        );
        let server = Server::start(&config).await;
        server.wait_ready().await;
        same_rows(&server, &source, &name, DUMP).await;
        let loaded = server.dataset_status(&name).await["last_refresh"].clone();
        server.runtime.shutdown().await;
        assert!(file.is_file(), "{engine}: no file at {}", file.display());

        // The source goes away and changes meanwhile; pgaccel restarts.
        relay.cut();
        let server = Server::start(&config).await;
        server.wait_ready().await;
        let replica = server.client().await;
        // The persisted rows, exactly as the source had them.
        same_rows(&server, &source, &name, DUMP).await;
        source
            .execute("INSERT INTO {schema}.t (id) VALUES (1000)")
            .await;
        let status = server
            .wait_for_status(&name, |s| s["status"] == "Error")
            .await;
        assert_eq!(status["last_refresh"], loaded, "{engine}: {status}");
        assert!(
            status["error_message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{status}"
        );
        assert_eq!(server.get("/v1/ready").await.0, 200);
        let count = replica
            .query_one(&format!("SELECT count(*) FROM {name}"), &[])
            .await
            .unwrap();
        assert_eq!(count.get::<_, i64>(0), 500);
        // Served in place from the file, indexed by the checkpoint's key,
        // which lookups use.
        let version = server
            .runtime
            .registry()
            .get(&name)
            .and_then(|dataset| dataset.acceleration.file_version())
            .expect("the file's version is served");
        assert_eq!(version.checkpoint.primary_key, ["id"], "{engine}");
        let row = replica
            .query_one(&format!("SELECT name FROM {name} WHERE id = $1"), &[&42i32])
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), "name 42");
        let warning = format!(
            "Failed to connect to the source for dataset {name}. Serving data from the existing acceleration for {name} while retrying the connection."
        );
        assert!(
            logs()
                .iter()
                .any(|l| l.contains(" WARN ") && l.contains(&warning)),
            "no warning '{warning}'"
        );
        // The source answers again: the status recovers and refreshes resume.
        relay.restore();
        server
            .wait_for_status(&name, |s| s["status"] == "Ready")
            .await;
        server.refresh(&name).await;
        same_rows(&server, &source, &name, DUMP).await;
        server.runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_checkpoint_keeps_the_schedule_and_a_changed_refresh_sql_reloads() {
    for engine in ENGINES {
        let source = SourceSchema::create(&format!("checkpoint_{engine}")).await;
        source.execute(TABLE).await;
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join(format!("t.{engine}"));
        let name = format!("checkpointed_{engine}");
        let with_sql = |sql: &str| {
            entry(
                5432,
                &source,
                &name,
                engine,
                "file",
                &file,
                &format!("      refresh_check_interval: 1h\n      refresh_sql: \"{sql}\"\n"),
            )
        };
        let first = with_sql(&format!("SELECT * FROM {name} WHERE id <= 10"));
        let server = Server::start(&first).await;
        server.wait_ready().await;
        let loaded = server.dataset_status(&name).await;
        server.runtime.shutdown().await;
        source.execute("DELETE FROM {schema}.t WHERE id = 1").await;

        // Same configuration: no refresh at startup (the next one is an
        // hour after the restored last refresh); the source's change is
        // not seen.
        let server = Server::start(&first).await;
        server.wait_ready().await;
        let status = server.dataset_status(&name).await;
        assert_eq!(status["last_refresh"], loaded["last_refresh"], "{engine}");
        let due =
            chrono::DateTime::parse_from_rfc3339(status["next_refresh"].as_str().unwrap()).unwrap();
        let last =
            chrono::DateTime::parse_from_rfc3339(status["last_refresh"].as_str().unwrap()).unwrap();
        assert_eq!((due - last).num_minutes(), 60, "{status}");
        let replica = server.client().await;
        let rows = simple_rows(&replica, &format!("SELECT count(*), min(id) FROM {name}")).await;
        assert_eq!(rows[0], [Some("10".into()), Some("1".into())], "{engine}");
        server.runtime.shutdown().await;

        // A changed refresh_sql reloads at startup.
        let second = with_sql(&format!("SELECT * FROM {name} WHERE id <= 20"));
        let server = Server::start(&second).await;
        server
            .wait_for_status(&name, |s| {
                s["last_refresh"] != loaded["last_refresh"] && s["status"] == "Ready"
            })
            .await;
        let replica = server.client().await;
        let rows = simple_rows(&replica, &format!("SELECT count(*), min(id) FROM {name}")).await;
        assert_eq!(rows[0], [Some("19".into()), Some("2".into())], "{engine}");
        server.runtime.shutdown().await;
    }
}

#[tokio::test]
async fn append_resumes_from_the_persisted_rows() {
    for engine in ENGINES {
        let source = SourceSchema::create(&format!("persist_append_{engine}")).await;
        source
            .execute(
                "CREATE TABLE {schema}.t (id int PRIMARY KEY, v text, at timestamptz NOT NULL);
                 INSERT INTO {schema}.t SELECT i, 'a', timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second'
                 FROM generate_series(1, 100) AS i",
            )
            .await;
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join(format!("t.{engine}"));
        let relay = Relay::start(None).await;
        let name = format!("appended_{engine}");
        let config = entry(
            relay.port,
            &source,
            &name,
            engine,
            "file",
            &file,
            "      refresh_mode: append\n",
        )
        .replace(
            "    acceleration:",
            "    time_column: at\n    acceleration:",
        );
        let server = Server::start(&config).await;
        server.wait_ready().await;
        // An append that replaces a row by key, and one that adds rows.
        source
            .execute(
                "UPDATE {schema}.t SET v = 'b', at = at + interval '1 day' WHERE id = 5;
                 INSERT INTO {schema}.t VALUES (101, 'a', '2024-02-01 00:00:00+00')",
            )
            .await;
        server.refresh(&name).await;
        same_rows(
            &server,
            &source,
            &name,
            "SELECT id, v, at FROM {schema}.t ORDER BY id",
        )
        .await;
        server.runtime.shutdown().await;

        relay.cut();
        source
            .execute("INSERT INTO {schema}.t VALUES (102, 'a', '2024-03-01 00:00:00+00')")
            .await;
        let server = Server::start(&config).await;
        server.wait_ready().await;
        let replica = server.client().await;
        let rows = simple_rows(&replica, &format!("SELECT count(*), max(id) FROM {name}")).await;
        assert_eq!(
            rows[0],
            [Some("101".into()), Some("101".into())],
            "{engine}"
        );
        // Once the source answers, the startup append adds what is new.
        relay.restore();
        server
            .wait_for_status(&name, |s| s["status"] == "Ready" && s["rows"] == 102)
            .await;
        same_rows(
            &server,
            &source,
            &name,
            "SELECT id, v, at FROM {schema}.t ORDER BY id",
        )
        .await;
        server.runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_dataset_that_cannot_serve_its_file_says_why_and_waits_for_its_source() {
    let source = SourceSchema::create("waits").await;
    source.execute(TABLE).await;
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("t.sqlite");
    let relay = Relay::start(None).await;
    let name = "waits_update";
    let server = Server::start(&entry(
        relay.port, &source, name, "sqlite", "file", &file, "",
    ))
    .await;
    server.wait_ready().await;
    server.runtime.shutdown().await;
    relay.cut();
    for (mode, waits) in [("file_update", true), ("file_create", false)] {
        let server =
            Server::start(&entry(relay.port, &source, name, "sqlite", mode, &file, "")).await;
        let status = server
            .wait_for_status(name, |s| s["status"] == "Error")
            .await;
        let message = status["error_message"].as_str().unwrap();
        let expected =
            "Not served: waits for its source because it uses `mode: file_update`. Cause: ";
        assert_eq!(message.starts_with(expected), waits, "{mode}: {message}");
        let error = server
            .client()
            .await
            .query_one(&format!("SELECT count(*) FROM {name}"), &[])
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&error), "42P01", "{mode}: {error}");
        assert_eq!(server.get("/v1/ready").await.0, 503);
        server.runtime.shutdown().await;
    }
    let info = format!(
        "Dataset '{name}' waits for its source before serving because it uses `mode: file_update`."
    );
    assert_eq!(
        logs()
            .iter()
            .filter(|l| l.contains(" INFO ") && l.contains(&info))
            .count(),
        1,
        "one INFO '{info}'"
    );
}

#[tokio::test]
async fn kill_9_during_a_refresh_leaves_the_complete_old_or_new_data() {
    const ROWS: i64 = 30_000;
    const ROUNDS: usize = 10;
    for engine in ENGINES {
        let source = SourceSchema::create(&format!("kill_{engine}")).await;
        source
            .execute(&format!(
                "CREATE TABLE {{schema}}.t (id int PRIMARY KEY, version int NOT NULL, pad text);
                 INSERT INTO {{schema}}.t SELECT i, 0, repeat('p', 50) FROM generate_series(1, {ROWS}) AS i"
            ))
            .await;
        let folder = tempfile::tempdir().unwrap();
        let file: PathBuf = folder.path().join(format!("t.{engine}"));
        let datasets = entry(
            5432,
            &source,
            "killed",
            engine,
            "file",
            &file,
            "      refresh_check_interval: 1h\n",
        );
        let mut committed = 0;
        let (mut old, mut new) = (0, 0);
        let mut rng = rand::rng();
        for round in 1..=ROUNDS {
            let process = Process::start(folder.path(), "", &datasets);
            process.wait_ready().await;
            let replica = process.client().await;
            let rows = simple_rows(
                &replica,
                "SELECT count(*), min(version), max(version) FROM killed",
            )
            .await;
            let (count, low, high): (i64, i64, i64) = (
                rows[0][0].as_deref().unwrap().parse().unwrap(),
                rows[0][1].as_deref().unwrap().parse().unwrap(),
                rows[0][2].as_deref().unwrap().parse().unwrap(),
            );
            assert_eq!(count, ROWS, "{engine} round {round}: rows torn");
            assert_eq!(low, high, "{engine} round {round}: versions mixed");
            // The version before the killed refresh, or the one it wrote.
            assert!(
                low == committed || low == round as i64 - 1,
                "{engine} round {round}: version {low}, expected {committed} or {}",
                round - 1
            );
            if round > 1 {
                if low == committed { old += 1 } else { new += 1 }
            }
            committed = low;
            source
                .execute(&format!("UPDATE {{schema}}.t SET version = {round}"))
                .await;
            let (status, body) = process
                .post("/v1/datasets/killed/acceleration/refresh")
                .await;
            assert_eq!(status, 201, "{body}");
            let wait = rng.random_range(0..1000);
            tokio::time::sleep(Duration::from_millis(wait)).await;
            process.kill();
        }
        eprintln!("{engine}: after a kill, {old} restarts found the old data and {new} the new");
        // A refresh that completed before the kill is never lost: without
        // this, a refresh that never reached the file would pass as "old".
        let process = Process::start(folder.path(), "", &datasets);
        process.wait_ready().await;
        source
            .execute(&format!("UPDATE {{schema}}.t SET version = {}", ROUNDS + 1))
            .await;
        process.refresh("killed").await;
        process.kill();
        let process = Process::start(folder.path(), "", &datasets);
        process.wait_ready().await;
        let replica = process.client().await;
        let rows = simple_rows(
            &replica,
            "SELECT count(*), min(version), max(version) FROM killed",
        )
        .await;
        let expected = ROWS.to_string();
        let version = (ROUNDS + 1).to_string();
        assert_eq!(
            rows[0],
            [Some(expected), Some(version.clone()), Some(version)],
            "{engine}: the committed refresh was lost"
        );
    }
}

#[tokio::test]
async fn ready_state_with_a_persisted_acceleration_while_the_source_is_down() {
    let source = SourceSchema::create("persist_ready").await;
    source.execute(TABLE).await;
    let folder = tempfile::tempdir().unwrap();
    let relay = Relay::start(None).await;
    // on_load and on_registration are ready from the file; on_schema_resolved
    // waits for the source, but its queries are answered from the file.
    for (ready_state, ready_while_down) in [
        ("on_load", true),
        ("on_registration", true),
        ("on_schema_resolved", false),
    ] {
        relay.restore();
        let name = format!("ready_{ready_state}");
        let file = folder.path().join(format!("{name}.db"));
        let config = entry(relay.port, &source, &name, "sqlite", "file", &file, "").replace(
            "    acceleration:",
            &format!("    ready_state: {ready_state}\n    acceleration:"),
        );
        let server = Server::start(&config).await;
        server
            .wait_for_status(&name, |s| s["status"] == "Ready")
            .await;
        server.runtime.shutdown().await;
        relay.cut();
        let server = Server::start(&config).await;
        server
            .wait_for_status(&name, |s| s["status"] == "Error")
            .await;
        let ready = server.get("/v1/ready").await.0 == 200;
        assert_eq!(ready, ready_while_down, "{ready_state}");
        same_rows(&server, &source, &name, DUMP).await;
        relay.restore();
        server.wait_ready().await;
        server.runtime.shutdown().await;
    }
}

#[tokio::test]
async fn a_mariadb_dataset_is_served_from_its_file_while_mariadb_is_down() {
    let mariadb = MysqlDatabase::create("persist").await;
    mariadb
        .execute(
            "CREATE TABLE {db}.t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(10, 2), at DATETIME);
             INSERT INTO {db}.t VALUES (1, 'one', 1.50, '2024-01-01 10:00:00'), (2, NULL, NULL, NULL)",
        )
        .await;
    let relay = Relay::start_to(3306, None).await;
    let folder = tempfile::tempdir().unwrap();
    for engine in ENGINES {
        relay.restore();
        let name = format!("maria_{engine}");
        let file = folder.path().join(format!("{name}.db"));
        let config = mariadb.dataset_via(
            relay.port,
            "t",
            &name,
            &format!(
                "    acceleration:\n      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
                file.display()
            ),
        );
        let server = Server::start(&config).await;
        server.wait_ready().await;
        server.runtime.shutdown().await;
        relay.cut();
        let server = Server::start(&config).await;
        server.wait_ready().await;
        let replica = server.client().await;
        let all = format!("SELECT id, name, amount, at FROM {name} ORDER BY id");
        let expected = vec![
            vec![
                Some("1".to_owned()),
                Some("one".to_owned()),
                Some("1.50".to_owned()),
                Some("2024-01-01 10:00:00".to_owned()),
            ],
            vec![Some("2".to_owned()), None, None, None],
        ];
        assert_eq!(simple_rows(&replica, &all).await, expected, "{engine}");
        server
            .wait_for_status(&name, |s| s["status"] == "Error")
            .await;
        mariadb
            .execute("INSERT INTO {db}.t VALUES (3, 'three', 3.00, '2024-01-03 10:00:00')")
            .await;
        relay.restore();
        server
            .wait_for_status(&name, |s| s["status"] == "Ready")
            .await;
        server.refresh(&name).await;
        let count = simple_rows(&replica, &format!("SELECT count(*) FROM {name}")).await;
        assert_eq!(count[0][0].as_deref(), Some("3"), "{engine}");
        server.runtime.shutdown().await;
        mariadb.execute("DELETE FROM {db}.t WHERE id = 3").await;
    }
}

/// `refresh_mode: disabled` loads once and never refreshes: an on-demand
/// refresh is refused saying so, and a restart serves the file as it is,
/// also with `mode: file_update` and a source that is down.
#[tokio::test]
async fn refresh_mode_disabled_loads_once_and_never_again() {
    let source = SourceSchema::create("disabled").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t SELECT generate_series(1, 10)")
        .await;
    let folder = tempfile::tempdir().unwrap();
    for engine in ENGINES {
        let file = folder.path().join(format!("disabled.{engine}"));
        let datasets = |port: u16, mode: &str| {
            entry(
                port,
                &source,
                "frozen",
                engine,
                mode,
                &file,
                "      refresh_mode: disabled\n",
            )
        };
        let server = Server::start(&datasets(5432, "file")).await;
        server.wait_ready().await;
        source
            .execute("INSERT INTO {schema}.t SELECT generate_series(11, 15)")
            .await;
        let (status, body) = server
            .post("/v1/datasets/frozen/acceleration/refresh")
            .await;
        assert_eq!(status, 400, "{body}");
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.contains("refresh_mode: disabled")),
            "{body}"
        );
        server.runtime.shutdown().await;
        // Nothing listens on port 1: only the file can answer.
        let restarted = Server::start(&datasets(1, "file_update")).await;
        restarted.wait_ready().await;
        let rows = simple_rows(&restarted.client().await, "SELECT count(*) FROM frozen").await;
        assert_eq!(rows, [[Some("10".to_owned())]], "{engine}");
        assert_eq!(
            restarted.dataset_status("frozen").await["next_refresh"],
            serde_json::Value::Null
        );
        restarted.runtime.shutdown().await;
        source.execute("DELETE FROM {schema}.t WHERE id > 10").await;
    }
}
