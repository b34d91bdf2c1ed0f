//! Primary-key lookups: answered through the index (counted in
//! `query_index_lookups`), with results identical to PostgreSQL's and to
//! pgaccel's own scan path for the same question.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row};

use crate::support::{SOURCE_DSN, Server, SourceSchema, connect};

const TABLES: &str = "
  CREATE TABLE {schema}.accounts (id int8 PRIMARY KEY, name text NOT NULL, balance numeric(12,2), opened date);
  INSERT INTO {schema}.accounts SELECT g, 'account ' || g, g * 1.25, date '2020-01-01' + g FROM generate_series(1, 2000) g;
  CREATE TABLE {schema}.events (tenant int4, seq int8, kind text, PRIMARY KEY (tenant, seq));
  INSERT INTO {schema}.events SELECT t, s, 'kind ' || (t * s) % 7 FROM generate_series(1, 20) t, generate_series(1, 50) s;
  CREATE TABLE {schema}.k_int2 (k int2 PRIMARY KEY, v int);
  INSERT INTO {schema}.k_int2 SELECT g, g FROM generate_series(-50, 50) g;
  CREATE TABLE {schema}.k_int4 (k int4 PRIMARY KEY, v int);
  INSERT INTO {schema}.k_int4 SELECT g * 1000, g FROM generate_series(1, 100) g;
  CREATE TABLE {schema}.k_text (k text PRIMARY KEY, v int);
  INSERT INTO {schema}.k_text SELECT 'key-' || g, g FROM generate_series(1, 100) g;
  CREATE TABLE {schema}.k_uuid (k uuid PRIMARY KEY, v int);
  INSERT INTO {schema}.k_uuid SELECT md5(g::text)::uuid, g FROM generate_series(1, 100) g;
  CREATE TABLE {schema}.k_date (k date PRIMARY KEY, v int);
  INSERT INTO {schema}.k_date SELECT date '2024-01-01' + g, g FROM generate_series(1, 100) g;
  CREATE TABLE {schema}.k_ts (k timestamp PRIMARY KEY, v int);
  INSERT INTO {schema}.k_ts SELECT timestamp '2024-01-01 00:00:00' + g * interval '90 minutes', g FROM generate_series(1, 100) g;";

/// The source tables as datasets kept by `engine`: `arrow` in memory, or
/// `duckdb` / `sqlite` in a file each (in the folder returned), queried in
/// place.
async fn setup(prefix: &str, engine: &str) -> (SourceSchema, Server, tempfile::TempDir) {
    let source = SourceSchema::create(prefix).await;
    source.execute(TABLES).await;
    let files = tempfile::tempdir().unwrap();
    let datasets: String = [
        "accounts", "events", "k_int2", "k_int4", "k_text", "k_uuid", "k_date", "k_ts",
    ]
    .iter()
    .map(|table| {
        let acceleration = match engine {
            "arrow" => String::new(),
            _ => format!(
                "    acceleration:\n      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
                files.path().join(format!("{table}.db")).display()
            ),
        };
        source.dataset(table, table, &acceleration)
    })
    .collect();
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    (source, server, files)
}

async fn index_lookups(server: &Server) -> u64 {
    let (_, metrics) = server.get("/metrics").await;
    metrics
        .lines()
        .find_map(|line| line.strip_prefix("query_index_lookups "))
        .map_or(0, |value| value.trim().parse().unwrap())
}

fn render(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .map(|row| {
            (0..row.len())
                .map(|i| match *row.columns()[i].type_() {
                    Type::INT2 => format!("{:?}", row.get::<_, Option<i16>>(i)),
                    Type::INT4 => format!("{:?}", row.get::<_, Option<i32>>(i)),
                    Type::INT8 => format!("{:?}", row.get::<_, Option<i64>>(i)),
                    Type::TEXT | Type::VARCHAR => format!("{:?}", row.get::<_, Option<String>>(i)),
                    ref other => panic!("render {other} as text in the test query"),
                })
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// Runs `sql` on pgaccel through the index, on pgaccel with the lookup shape
/// defeated (`OR false` around the filter, so the scan path answers), and on
/// PostgreSQL; all three must agree, and the first must use the index.
async fn check(
    server: &Server,
    replica: &Client,
    primary: &Client,
    schema: &str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
    indexed: &dyn Fn(&str) -> bool,
) {
    let before = index_lookups(server).await;
    let through_index = replica
        .query(sql, params)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(
        index_lookups(server).await > before,
        indexed(sql),
        "answered through the index, or not, unexpectedly: {sql}"
    );
    let scan_sql = sql
        .replacen(" WHERE ", " WHERE false OR (", 1)
        .replacen(" LIMIT", ") LIMIT", 1);
    let scan_sql = if scan_sql.contains(") LIMIT") {
        scan_sql
    } else {
        format!("{scan_sql})")
    };
    let through_scan = replica
        .query(scan_sql.as_str(), params)
        .await
        .unwrap_or_else(|e| panic!("{scan_sql}: {e}"));
    let on_primary_sql = sql.replace(" FROM ", &format!(" FROM {schema}."));
    let on_primary = primary
        .query(on_primary_sql.as_str(), params)
        .await
        .unwrap();
    let mut expected = render(&on_primary);
    expected.sort();
    let mut got = render(&through_index);
    got.sort();
    let mut scanned = render(&through_scan);
    scanned.sort();
    assert_eq!(got, expected, "index vs PostgreSQL: {sql}");
    assert_eq!(scanned, expected, "scan vs PostgreSQL: {scan_sql}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_by_every_key_shape_match_postgres() {
    every_key_shape("arrow").await;
}

/// A DuckDB file queried in place answers lookups through its key index.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_in_a_duckdb_file_by_every_key_shape_match_postgres() {
    every_key_shape("duckdb").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_in_an_sqlite_file_by_every_key_shape_match_postgres() {
    every_key_shape("sqlite").await;
}

async fn every_key_shape(engine: &str) {
    let (source, server, _files) = setup(&format!("lookup_{engine}"), engine).await;
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    let schema = source.name.as_str();
    // A file is probed only by a key its engine compares exactly as pgaccel
    // does; other lookups read the file through a planned scan.
    let indexed = |sql: &str| match engine {
        "duckdb" => !sql.contains("k_ts"),
        "sqlite" => !sql.contains("k_ts") && !sql.contains("k_date"),
        _ => true,
    };
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT id::text, name, balance::text FROM accounts WHERE id = $1",
        &[&42i64],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT name FROM accounts WHERE id = $1",
        &[&99_999i64],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT name FROM accounts WHERE id = $1",
        &[&None::<i64>],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT name FROM accounts WHERE id = 7",
        &[],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT name FROM accounts WHERE id IN (1, 5, 5, 123456)",
        &[],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT name FROM accounts WHERE id = 10 AND balance > 100",
        &[],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT name FROM accounts WHERE id = 100 AND balance > 100",
        &[],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        // Computed columns are compiled once with the lookup (a date's
        // text, which follows the session's DateStyle, takes the scan path).
        "SELECT upper(name), length(name) + 1 FROM accounts WHERE 11 = id LIMIT 1",
        &[],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT kind FROM events WHERE tenant = $1 AND seq = $2",
        &[&3i32, &17i64],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT kind FROM events WHERE seq = 50 AND tenant = 20",
        &[],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT v FROM k_int2 WHERE k = $1",
        &[&-7i16],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT v FROM k_int4 WHERE k = $1",
        &[&5000i32],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT v FROM k_text WHERE k = $1",
        &[&"key-77"],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT v FROM k_uuid WHERE k = 'c4ca4238-a0b9-2382-0dcc-509a6f75849b'",
        &[],
        &indexed,
    )
    .await;
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT v FROM k_date WHERE k = $1",
        &[&chrono::NaiveDate::from_ymd_opt(2024, 1, 31).unwrap()],
        &indexed,
    )
    .await;
    let at = chrono::NaiveDate::from_ymd_opt(2024, 1, 2)
        .unwrap()
        .and_hms_opt(1, 30, 0)
        .unwrap();
    check(
        &server,
        &replica,
        &primary,
        schema,
        "SELECT v FROM k_ts WHERE k = $1",
        &[&at],
        &indexed,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_follows_every_refresh() {
    let (source, server, _files) = setup("lookup_refresh", "arrow").await;
    let replica = server.client().await;
    let statement = replica
        .prepare("SELECT name FROM accounts WHERE id = $1")
        .await
        .unwrap();
    let name = |rows: Vec<Row>| rows.first().map(|row| row.get::<_, String>(0));
    assert_eq!(
        name(replica.query(&statement, &[&5i64]).await.unwrap()),
        Some("account 5".into())
    );
    source
        .execute("UPDATE {schema}.accounts SET name = 'renamed' WHERE id = 5; DELETE FROM {schema}.accounts WHERE id = 6; INSERT INTO {schema}.accounts VALUES (5000, 'new', 1, '2026-01-01');")
        .await;
    server.refresh("accounts").await;
    assert_eq!(
        name(replica.query(&statement, &[&5i64]).await.unwrap()),
        Some("renamed".into())
    );
    assert_eq!(
        name(replica.query(&statement, &[&6i64]).await.unwrap()),
        None
    );
    assert_eq!(
        name(replica.query(&statement, &[&5000i64]).await.unwrap()),
        Some("new".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lookup_racing_refreshes_always_finds_a_key_present_in_both_versions() {
    racing_refreshes("arrow").await;
}

/// The same of a DuckDB file queried in place: a refresh commits a new
/// version into the file while lookups read it through its index.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lookup_in_a_file_racing_refreshes_always_finds_a_key_present_in_both_versions() {
    racing_refreshes("duckdb").await;
}

async fn racing_refreshes(engine: &str) {
    let (source, server, _files) = setup(&format!("lookup_race_{engine}"), engine).await;
    let server = Arc::new(server);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = tokio::spawn({
        let (server, stop) = (Arc::clone(&server), Arc::clone(&stop));
        async move {
            let client = server.client().await;
            let statement = client
                .prepare("SELECT name FROM accounts WHERE id = $1")
                .await
                .unwrap();
            let mut answers = 0;
            while !stop.load(Ordering::Relaxed) {
                let rows = client
                    .query(&statement, &[&1500i64])
                    .await
                    .expect("lookups never fail");
                assert_eq!(rows.len(), 1, "key 1500 exists in both versions");
                let name: String = rows[0].get(0);
                assert!(name == "account 1500" || name == "changed", "{name}");
                answers += 1;
            }
            answers
        }
    });
    for round in 0..10 {
        let name = if round % 2 == 0 {
            "'changed'"
        } else {
            "'account 1500'"
        };
        source
            .execute(&format!("UPDATE {{schema}}.accounts SET name = {name} WHERE id = 1500; DELETE FROM {{schema}}.accounts WHERE id = {};", 100 + round))
            .await;
        server.refresh("accounts").await;
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.await.unwrap() > 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_change_invalidates_the_plans_that_read_the_table() {
    let source = SourceSchema::create("plan_cache").await;
    source.execute("CREATE TABLE {schema}.t (id int8 PRIMARY KEY, a text); INSERT INTO {schema}.t VALUES (1, 'x'), (2, 'y');").await;
    let server = Server::start(&source.dataset(
        "t",
        "t",
        "    acceleration:\n      on_schema_change: rebuild\n",
    ))
    .await;
    server.wait_ready().await;
    let client = server.client().await;
    let columns = |messages: Vec<tokio_postgres::SimpleQueryMessage>| {
        messages
            .into_iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                    row.columns()
                        .iter()
                        .map(|c| c.name().to_owned())
                        .collect::<Vec<_>>(),
                ),
                _ => None,
            })
            .unwrap()
    };
    // Planned once, then served from the statement cache.
    for _ in 0..2 {
        assert_eq!(
            columns(
                client
                    .simple_query("SELECT * FROM t WHERE id = 1")
                    .await
                    .unwrap()
            ),
            ["id", "a"]
        );
        assert_eq!(
            columns(
                client
                    .simple_query("SELECT * FROM t ORDER BY id")
                    .await
                    .unwrap()
            ),
            ["id", "a"]
        );
    }
    let prepared = client.prepare("SELECT * FROM t ORDER BY id").await.unwrap();
    source
        .execute("ALTER TABLE {schema}.t ADD COLUMN b int; UPDATE {schema}.t SET b = id * 10;")
        .await;
    server.refresh("t").await;
    // The cached plans are planned again for the new schema.
    assert_eq!(
        columns(
            client
                .simple_query("SELECT * FROM t WHERE id = 1")
                .await
                .unwrap()
        ),
        ["id", "a", "b"]
    );
    assert_eq!(
        columns(
            client
                .simple_query("SELECT * FROM t ORDER BY id")
                .await
                .unwrap()
        ),
        ["id", "a", "b"]
    );
    // A statement the client prepared has told it its columns: like
    // PostgreSQL, pgaccel refuses to change them under it.
    let error = client.query(&prepared, &[]).await.unwrap_err();
    assert_eq!(crate::support::sqlstate(&error), "0A000");
    let row = client
        .query_one("SELECT b FROM t WHERE id = $1", &[&2i64])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 20);
}

/// Simple-protocol lookups whose texts differ only in their key literals
/// share one parameterized plan; each must still answer exactly what
/// PostgreSQL answers, through the index where the literal fits the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_protocol_lookups_with_new_literals_use_the_index() {
    simple_protocol_lookups("arrow").await;
}

/// The same, on a DuckDB file queried in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_protocol_lookups_in_a_duckdb_file_use_its_index() {
    simple_protocol_lookups("duckdb").await;
}

/// The same, on an SQLite file queried in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_protocol_lookups_in_an_sqlite_file_use_its_index() {
    simple_protocol_lookups("sqlite").await;
}

async fn simple_protocol_lookups(engine: &str) {
    let (source, server, _files) = setup(&format!("lookup_simple_{engine}"), engine).await;
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    let schema = source.name.as_str();
    let rows = |messages: Vec<tokio_postgres::SimpleQueryMessage>| {
        let mut rows: Vec<String> = messages
            .into_iter()
            .filter_map(|message| match message {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| format!("{:?}", row.get(i)))
                        .collect::<Vec<_>>()
                        .join("|"),
                ),
                _ => None,
            })
            .collect();
        rows.sort();
        rows
    };
    // (statement, whether the index answers it, whether its shape is new)
    let cases = [
        (
            "SELECT id, name, balance FROM accounts WHERE id = 42",
            true,
            true,
        ),
        (
            "SELECT id, name, balance FROM accounts WHERE id = 43",
            true,
            false,
        ),
        (
            "SELECT id, name, balance FROM accounts WHERE id = -1",
            true,
            false,
        ),
        (
            "SELECT id, name, balance FROM accounts WHERE id = '44'",
            true,
            false,
        ),
        (
            "SELECT name FROM accounts a WHERE a.id IN (1, 2, 2, 99999)",
            true,
            true,
        ),
        (
            "SELECT name FROM accounts WHERE id IN (3, 4, 5, 6)",
            true,
            true,
        ),
        (
            "SELECT name FROM accounts WHERE id = 5 AND balance > 6",
            true,
            true,
        ),
        (
            "SELECT name FROM accounts WHERE id = 4 AND balance > 6",
            true,
            false,
        ),
        (
            "SELECT kind FROM events WHERE tenant = 3 AND seq = 17",
            true,
            true,
        ),
        (
            "SELECT kind FROM events WHERE seq = 5 AND tenant = '4'",
            true,
            true,
        ),
        (
            "SELECT kind FROM events WHERE seq = 6 AND tenant = 4",
            true,
            false,
        ),
        ("SELECT v FROM k_int2 WHERE k = -7", true, true),
        ("SELECT v FROM k_int2 WHERE k = 40000", false, true),
        ("SELECT v FROM k_int4 WHERE k = 5000", true, true),
        ("SELECT v FROM k_text WHERE k = 'key-5'", true, true),
        ("SELECT v FROM k_text WHERE k = 'key-6'", true, false),
        ("SELECT v FROM k_date WHERE k = '2024-01-31'", false, true),
    ];
    for (sql, indexed, new_shape) in cases {
        let before = index_lookups(&server).await;
        let planned = server.runtime.statements_planned();
        let ours = rows(
            replica
                .simple_query(sql)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}")),
        );
        if indexed {
            assert!(
                index_lookups(&server).await > before,
                "not answered through the index: {sql}"
            );
        }
        if !new_shape {
            assert_eq!(
                server.runtime.statements_planned(),
                planned,
                "planned again: {sql}"
            );
        }
        let on_primary = sql
            .replace(" FROM ", &format!(" FROM {schema}."))
            .replace(" a WHERE", " AS a WHERE");
        let theirs = rows(primary.simple_query(&on_primary).await.unwrap());
        assert_eq!(ours, theirs, "{sql}");
    }
}

/// A prepared statement is planned at Parse only: executing it again with
/// new parameters plans nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_lookups_are_planned_once() {
    let (_source, server, _files) = setup("lookup_prepared", "arrow").await;
    let replica = server.client().await;
    let statement = replica
        .prepare("SELECT name FROM accounts WHERE id = $1")
        .await
        .unwrap();
    let planned = server.runtime.statements_planned();
    for id in 1..=20i64 {
        let row = replica.query_one(&statement, &[&id]).await.unwrap();
        assert_eq!(row.get::<_, String>(0), format!("account {id}"));
    }
    assert_eq!(server.runtime.statements_planned(), planned);
}
