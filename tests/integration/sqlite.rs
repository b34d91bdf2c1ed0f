//! `sqlite:` sources: a real SQLite database file read through pgaccel, with
//! its column types, full refreshes and appends.

use std::path::Path;

use crate::support::{Server, simple_rows};

fn execute(file: &Path, sql: &str) {
    let connection = rusqlite::Connection::open(file).unwrap();
    connection
        .execute_batch(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[tokio::test]
async fn a_sqlite_table_is_accelerated_and_refreshed() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("shop.db");
    execute(
        &file,
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, data BLOB);
         INSERT INTO items VALUES (1, 'one', 1.5, x'CAFE'), (2, NULL, NULL, NULL);
         CREATE TABLE events (id INTEGER PRIMARY KEY, v TEXT, at INTEGER);
         INSERT INTO events VALUES (1, 'a', unixepoch() - 7200), (2, 'b', unixepoch() - 3600);",
    );
    let datasets = format!(
        "  - from: sqlite:items\n    name: items\n    params: {{ sqlite_file: {file} }}\n  \
           - from: sqlite:events\n    name: events\n    params: {{ sqlite_file: {file} }}\n    time_column: at\n    time_format: unix_seconds\n    acceleration:\n      refresh_mode: append\n",
        file = file.display()
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let all = "SELECT id, name, price, data FROM items ORDER BY id";
    assert_eq!(
        simple_rows(&replica, all).await,
        vec![
            vec![
                Some("1".to_owned()),
                Some("one".to_owned()),
                Some("1.5".to_owned()),
                Some("\\xcafe".to_owned())
            ],
            vec![Some("2".to_owned()), None, None, None],
        ]
    );
    // The SQLite primary key is the lookup key.
    let lookup = replica
        .prepare("SELECT name FROM items WHERE id = $1")
        .await
        .unwrap();
    let found = replica.query(&lookup, &[&1i64]).await.unwrap();
    assert_eq!(found[0].get::<_, String>(0), "one");
    execute(
        &file,
        "UPDATE items SET name = 'uno' WHERE id = 1; DELETE FROM items WHERE id = 2;
         INSERT INTO events VALUES (3, 'c', unixepoch()), (4, 'old', unixepoch() - 86400);",
    );
    server.refresh("items").await;
    server.refresh("events").await;
    let names = simple_rows(&replica, "SELECT name FROM items ORDER BY id").await;
    assert_eq!(names, vec![vec![Some("uno".to_owned())]]);
    let events = simple_rows(&replica, "SELECT v FROM events ORDER BY id").await;
    let events: Vec<String> = events
        .into_iter()
        .map(|row| row[0].clone().unwrap())
        .collect();
    assert_eq!(events, ["a", "b", "c"]);
}

#[tokio::test]
async fn a_missing_sqlite_file_is_an_error_naming_it() {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("absent.db");
    let datasets = format!(
        "  - from: sqlite:items\n    name: absent_items\n    params: {{ sqlite_file: {} }}\n",
        file.display()
    );
    let server = Server::start(&datasets).await;
    let status = server
        .wait_for_status("absent_items", |status| status["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap_or_default();
    assert!(message.contains("absent.db"), "{status}");
}
