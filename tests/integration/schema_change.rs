//! `on_schema_change`: what a refresh does when the source's columns no
//! longer match the acceleration's.

use crate::support::{Server, SourceSchema, simple_rows};

/// The column names of `SELECT * FROM name`.
async fn columns(server: &Server, name: &str) -> Vec<String> {
    let client = server.client().await;
    let statement = client
        .prepare(&format!("SELECT * FROM {name}"))
        .await
        .unwrap();
    statement
        .columns()
        .iter()
        .map(|column| column.name().to_owned())
        .collect()
}

async fn count(server: &Server, name: &str) -> String {
    let rows = simple_rows(
        &server.client().await,
        &format!("SELECT count(*) FROM {name}"),
    )
    .await;
    rows[0][0].clone().unwrap()
}

/// Starts a refresh and waits until it has failed with the column change.
async fn refresh_is_blocked(server: &Server, name: &str) {
    let (status, body) = server
        .post(&format!("/v1/datasets/{name}/acceleration/refresh"))
        .await;
    assert_eq!(status, 201, "{body}");
    let status = server
        .wait_for_status(name, |status| {
            status["error_message"]
                .as_str()
                .is_some_and(|message| message.contains("has other columns"))
        })
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains(&format!("The source of dataset '{name}' has other columns than its acceleration: column \"a\" changed type from Utf8 to Int64, column \"b\" (Int32) was added"))
            && message.contains("on_schema_change: rebuild"),
        "{message}"
    );
}

/// `on_schema_change: block`, the default: a refresh that finds other
/// columns fails with an error naming them, and the last good data keeps
/// being served, whether the refresh is full or an append, in memory or
/// from a file after a restart. `rebuild` loads the new columns.
#[tokio::test]
async fn a_changed_source_schema_blocks_the_refresh_by_default() {
    let source = SourceSchema::create("schema_block").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, a text, at timestamptz NOT NULL DEFAULT now()); INSERT INTO {schema}.t (id, a) SELECT g, g::text FROM generate_series(1, 10) g")
        .await;
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("t.duckdb");
    let file_entry = source.dataset(
        "t",
        "file_t",
        &format!(
            "    acceleration:\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{}' }}\n",
            file.display()
        ),
    );
    let datasets = [
        source.dataset("t", "full_t", ""),
        source.dataset(
            "t",
            "append_t",
            "    time_column: at\n    acceleration:\n      refresh_mode: append\n",
        ),
        source.dataset(
            "t",
            "rebuilt_t",
            "    acceleration:\n      on_schema_change: rebuild\n",
        ),
        file_entry.clone(),
    ]
    .concat();
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    // A column added, another retyped, and rows the blocked refreshes miss.
    source
        .execute("ALTER TABLE {schema}.t ADD COLUMN b int; ALTER TABLE {schema}.t ALTER COLUMN a TYPE bigint USING a::bigint; INSERT INTO {schema}.t (id, a, b) SELECT g, g, g FROM generate_series(11, 15) g")
        .await;
    for name in ["full_t", "append_t", "file_t"] {
        refresh_is_blocked(&server, name).await;
        assert_eq!(columns(&server, name).await, ["id", "a", "at"], "{name}");
        assert_eq!(count(&server, name).await, "10", "{name}");
    }
    let metrics = server.get("/metrics").await.1;
    assert!(
        metrics.contains(
            "dataset_acceleration_refresh_errors{dataset=\"full_t\",reason=\"schema_change\"} 1"
        ),
        "{metrics}"
    );
    server.refresh("rebuilt_t").await;
    assert_eq!(columns(&server, "rebuilt_t").await, ["id", "a", "at", "b"]);
    assert_eq!(count(&server, "rebuilt_t").await, "15");
    server.runtime.shutdown().await;

    // After a restart the file's rows are served, and their columns still
    // block a refresh.
    let server = Server::start(&file_entry).await;
    server.wait_ready().await;
    assert_eq!(count(&server, "file_t").await, "10");
    refresh_is_blocked(&server, "file_t").await;
    assert_eq!(columns(&server, "file_t").await, ["id", "a", "at"]);
    server.runtime.shutdown().await;
}
