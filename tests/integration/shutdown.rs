//! Graceful shutdown of the built binary: SIGTERM stops new connections,
//! lets running statements finish within `runtime.shutdown_timeout`, ends
//! the rest with FATAL 57P01, and exits 0.

use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls};

use crate::support::{Process, SourceSchema, eventually};

/// A connection whose connection task's outcome is kept: a FATAL sent
/// while it is idle ends that task with the server's error.
async fn watched(process: &Process) -> (Client, JoinHandle<Result<(), tokio_postgres::Error>>) {
    let (client, connection) = tokio_postgres::connect(&process.dsn(), NoTls)
        .await
        .expect("connect to pgaccel");
    (client, tokio::spawn(connection))
}

/// Whether a statement containing `text` is running (`pg_stat_activity`).
async fn running(observer: &Client, text: &str) -> bool {
    observer
        .query(
            "SELECT query FROM pg_stat_activity WHERE state = 'active'",
            &[],
        )
        .await
        .map(|rows| {
            rows.iter()
                .any(|row| row.get::<_, String>(0).contains(text))
        })
        .unwrap_or(false)
}

fn served(source: &SourceSchema) -> String {
    source.served_datasets(&["t"])
}

async fn source() -> SourceSchema {
    let source = SourceSchema::create("shutdown").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (1)")
        .await;
    source
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_running_statements_finish_and_ends_idle_connections() {
    let folder = tempfile::tempdir().unwrap();
    let source = source().await;
    let mut process = Process::start_with_runtime(
        folder.path(),
        "  shutdown_timeout: 60s\n",
        "",
        &served(&source),
        &[],
    );
    process.wait_ready().await;
    let (busy, _busy_task) = watched(&process).await;
    let (_idle, idle_task) = watched(&process).await;
    let observer = process.client().await;
    let statement = tokio::spawn(async move {
        busy.query_one("SELECT pg_sleep(2), 'finished'", &[])
            .await
            .map(|row| row.get::<_, String>(1))
    });
    eventually("the statement runs", || running(&observer, "pg_sleep(2)")).await;
    process.terminate();

    // The idle connection is told why it ends.
    let ended = tokio::time::timeout(Duration::from_secs(30), idle_task)
        .await
        .expect("the idle connection ends")
        .unwrap();
    let error = ended.expect_err("FATAL 57P01");
    let db = error.as_db_error().unwrap_or_else(|| panic!("{error}"));
    assert_eq!(db.code().code(), "57P01");
    assert_eq!(
        db.message(),
        "terminating connection due to administrator command"
    );
    // New connections are no longer accepted.
    let refused = tokio_postgres::connect(&process.dsn(), NoTls)
        .await
        .err()
        .expect("a connection after SIGTERM is refused");
    let io = std::error::Error::source(&refused)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .unwrap_or_else(|| panic!("{refused}"));
    // Refused once the listener is closed; reset when it was still queued
    // in the listener's backlog as the listener closed.
    assert!(
        matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
        ),
        "{io}"
    );
    // The running statement finishes with its answer.
    assert_eq!(statement.await.unwrap().unwrap(), "finished");
    assert!(process.exited().await.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_still_running_after_the_shutdown_timeout_ends_with_57p01() {
    let folder = tempfile::tempdir().unwrap();
    let source = source().await;
    let mut process = Process::start_with_runtime(
        folder.path(),
        "  shutdown_timeout: 1s\n",
        "",
        &served(&source),
        &[],
    );
    process.wait_ready().await;
    let (busy, _busy_task) = watched(&process).await;
    let observer = process.client().await;
    let statement =
        tokio::spawn(async move { busy.query_one("SELECT pg_sleep(600)", &[]).await.map(drop) });
    eventually("the statement runs", || running(&observer, "pg_sleep(600)")).await;
    process.terminate();
    let error = tokio::time::timeout(Duration::from_secs(30), statement)
        .await
        .expect("the statement is ended")
        .unwrap()
        .expect_err("57P01");
    let db = error.as_db_error().unwrap_or_else(|| panic!("{error}"));
    assert_eq!(db.code().code(), "57P01");
    assert_eq!(db.severity(), "FATAL");
    assert!(process.exited().await.success());
}
