//! Limits that keep one connection from harming the others:
//! `runtime.query.memory_limit`.

use crate::support::{Server, SourceSchema, assert_statement_timeout, sqlstate};

/// A join that needs more than the limit fails with 53200; the connection,
/// the process and every other connection go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_over_the_memory_limit_fails_with_53200_and_the_rest_go_on() {
    let source = SourceSchema::create("memory_limit").await;
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY, payload text);
             INSERT INTO {schema}.t SELECT i, repeat(md5(i::text), 2) FROM generate_series(1, 200000) i",
        )
        .await;
    let yaml = format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0 }}\n  query: {{ memory_limit: 4MB }}\ndatasets:\n{}",
        source.served_datasets(&["t"])
    );
    let server = Server::start_with_config(&yaml).await;
    server.wait_ready().await;
    let table = format!("{}.t", source.name);
    let client = server.client().await;
    // The hash table of the join's build side holds every payload: ~13 MB.
    let error = client
        .query(
            &format!("SELECT count(*) FROM {table} a JOIN {table} b ON a.payload = b.payload"),
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "53200", "{error:?}");
    let db = error.as_db_error().unwrap();
    assert_eq!(db.message(), "out of memory");
    assert!(
        db.detail()
            .unwrap_or_default()
            .contains("runtime.query.memory_limit"),
        "{db:?}"
    );
    // The same connection and another one still answer.
    let count: i64 = client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 200_000);
    let other = server.client().await;
    let found: i32 = other
        .query_one(&format!("SELECT id FROM {table} WHERE id = 77"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(found, 77);
}

#[test]
fn a_memory_limit_that_is_not_a_size_is_refused_naming_the_key() {
    let yaml = "runtime:\n  query: { memory_limit: lots }\ndatasets: []\n";
    let error = pgaccel::config::from_yaml_str(yaml)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("runtime.query.memory_limit") && error.contains("'lots'"),
        "{error}"
    );
}

/// A length prefix of 1 GB is refused as it arrives, never allocated; the
/// connection ends with FATAL 08P01 and the server goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_gigabyte_message_is_refused_with_08p01() {
    use crate::raw::{RawClient, Reply};
    let server = Server::start_with_config(
        "runtime:\n  pg: { listen: 127.0.0.1:0 }\n  http: { listen: 127.0.0.1:0 }\ndatasets: []\n",
    )
    .await;
    let (mut raw, _) = RawClient::connect(
        server.pg.port(),
        &[("user", "tester"), ("database", "test")],
    )
    .await;
    let mut message = vec![b'Q'];
    message.extend_from_slice(&(1i32 << 30).to_be_bytes());
    message.extend_from_slice(b"SELECT 1");
    raw.send_bytes(&message).await;
    match raw.reply().await {
        Reply::Error { code, message } => {
            assert_eq!(code, "08P01", "{message}");
            assert!(message.starts_with("invalid frontend message"), "{message}");
        }
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(raw.closed().await, "the connection is closed");
    let client = server.client().await;
    let one: i32 = client.query_one("SELECT 1", &[]).await.unwrap().get(0);
    assert_eq!(one, 1);
}

/// `runtime.query.statement_timeout` is every session's default, as in
/// postgresql.conf: SHOW shows it, a statement over it ends with 57014, and
/// a session may set its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configured_statement_timeout_is_the_default_of_every_session() {
    let server = Server::start_with_config(
        "runtime:\n  pg: { listen: 127.0.0.1:0 }\n  http: { listen: 127.0.0.1:0 }\n  query: { statement_timeout: 500ms }\ndatasets: []\n",
    )
    .await;
    let client = server.client().await;
    let shown: String = client
        .query_one("SHOW statement_timeout", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(shown, "500ms");
    assert_statement_timeout(&client).await;
    client
        .batch_execute("SET statement_timeout = 0")
        .await
        .unwrap();
    client.simple_query("SELECT pg_sleep(1)").await.unwrap();
    client
        .batch_execute("RESET statement_timeout")
        .await
        .unwrap();
    let shown: String = client
        .query_one("SHOW statement_timeout", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(shown, "500ms");
}
