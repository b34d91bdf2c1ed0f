//! `duckdb:` sources: a real DuckDB database file read through pgaccel, with
//! its column types (checked against the text PostgreSQL gives the same
//! values), full refreshes and appends.

use std::path::Path;

use crate::support::{Server, SourceSchema, simple_rows};

fn execute(file: &Path, sql: &str) {
    let connection = duckdb::Connection::open(file).unwrap();
    connection
        .execute_batch(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[tokio::test]
async fn a_duckdb_table_is_accelerated_with_its_types_and_refreshed() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("shop.duckdb");
    // The same values in DuckDB and PostgreSQL: pgaccel must answer with
    // PostgreSQL's text for each.
    let values = "(1, 'one', 'bpchar', 1.5::DOUBLE, 2.25::REAL, 12345.67, 7::SMALLINT, 9000000000, true,
                   DATE '2024-02-29', TIME '12:34:56.5', TIMESTAMP '2024-01-02 03:04:05.123456',
                   TIMESTAMPTZ '2024-01-02 03:04:05+00', '\\xCA\\xFE'::BLOB),
                  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)";
    execute(
        &file,
        &format!(
            "CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR, code VARCHAR, price DOUBLE, weight REAL,
                 total DECIMAL(10, 2), small SMALLINT, big BIGINT, flag BOOLEAN, day DATE, tm TIME,
                 local TIMESTAMP, ts TIMESTAMPTZ, data BLOB);
             INSERT INTO items VALUES {values};"
        ),
    );
    let source = SourceSchema::create("duckdb_types").await;
    source
        .execute(
            "CREATE TABLE {schema}.items (id int PRIMARY KEY, name text, code text, price float8, weight float4,
                 total numeric(10, 2), small int2, big int8, flag bool, day date, tm time,
                 local timestamp, ts timestamptz, data bytea);
             INSERT INTO {schema}.items VALUES (1, 'one', 'bpchar', 1.5, 2.25, 12345.67, 7, 9000000000, true,
                   '2024-02-29', '12:34:56.5', '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05+00',
                   '\\xCAFE'),
                  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        )
        .await;
    let datasets = format!(
        "  - from: duckdb:items\n    name: duck_items\n    params: {{ duckdb_open: '{file}' }}\n",
        file = file.display()
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;
    source
        .client
        .batch_execute("SET TimeZone = 'UTC'")
        .await
        .unwrap();
    replica.batch_execute("SET TimeZone = 'UTC'").await.unwrap();
    let columns =
        "id, name, code, price, weight, total, small, big, flag, day, tm, local, ts, data";
    let from_replica = simple_rows(
        &replica,
        &format!("SELECT {columns} FROM duck_items ORDER BY id"),
    )
    .await;
    let from_postgres = simple_rows(
        &source.client,
        &format!("SELECT {columns} FROM {}.items ORDER BY id", source.name),
    )
    .await;
    assert_eq!(from_replica, from_postgres);
    // The DuckDB primary key is the lookup key.
    let found = replica
        .query("SELECT name FROM duck_items WHERE id = $1", &[&1i32])
        .await
        .unwrap();
    assert_eq!(found[0].get::<_, String>(0), "one");
    execute(
        &file,
        "UPDATE items SET name = 'uno' WHERE id = 1; DELETE FROM items WHERE id = 2;",
    );
    server.refresh("duck_items").await;
    let names = simple_rows(&replica, "SELECT name FROM duck_items ORDER BY id").await;
    assert_eq!(names, vec![vec![Some("uno".to_owned())]]);
}

#[tokio::test]
async fn a_duckdb_table_is_appended_to() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("events.duckdb");
    execute(
        &file,
        "CREATE TABLE events (id INTEGER PRIMARY KEY, v VARCHAR, ts TIMESTAMP);
         INSERT INTO events VALUES (1, 'a', TIMESTAMP '2024-01-01 00:00:00'), (2, 'b', TIMESTAMP '2024-01-02 00:00:00');",
    );
    let datasets = format!(
        "  - from: duckdb:events\n    name: duck_events\n    params: {{ duckdb_open: '{file}' }}\n    time_column: ts\n    acceleration:\n      refresh_mode: append\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{accel}' }}\n",
        file = file.display(),
        accel = folder.path().join("accel.duckdb").display(),
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    // A new row, a changed row with a newer time, and a back-dated row
    // (older than the newest held: not read by an append).
    execute(
        &file,
        "INSERT INTO events VALUES (3, 'c', TIMESTAMP '2024-01-03 00:00:00'), (4, 'old', TIMESTAMP '2023-01-01 00:00:00');
         UPDATE events SET v = 'a2', ts = TIMESTAMP '2024-01-04 00:00:00' WHERE id = 1;",
    );
    server.refresh("duck_events").await;
    let replica = server.client().await;
    let rows = simple_rows(&replica, "SELECT id, v FROM duck_events ORDER BY id").await;
    let rows: Vec<String> = rows
        .into_iter()
        .map(|row| {
            format!(
                "{}={}",
                row[0].as_deref().unwrap(),
                row[1].as_deref().unwrap()
            )
        })
        .collect();
    assert_eq!(rows, ["1=a2", "2=b", "3=c"]);
}

#[tokio::test]
async fn a_duckdb_interval_column_is_refused_by_name() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("spans.duckdb");
    execute(
        &file,
        "CREATE TABLE spans (id INTEGER, span INTERVAL); INSERT INTO spans VALUES (1, NULL);",
    );
    let datasets = format!(
        "  - from: duckdb:spans\n    name: duck_spans\n    params: {{ duckdb_open: '{file}' }}\n  \
           - from: duckdb:spans\n    name: duck_ids\n    params: {{ duckdb_open: '{file}' }}\n    acceleration:\n      refresh_sql: SELECT id FROM duck_ids\n",
        file = file.display()
    );
    let server = Server::start(&datasets).await;
    let status = server
        .wait_for_status("duck_spans", |s| s["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains("column 'span' is a DuckDB INTERVAL"),
        "{message}"
    );
    // Without the column, the table loads.
    server
        .wait_for_status("duck_ids", |s| s["status"] == "Ready")
        .await;
}
