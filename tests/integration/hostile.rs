//! Hostile input on the PostgreSQL port: malformed messages at the byte
//! level, and arbitrary SQL text and parameters (proptest). No input may end
//! the server, or end a connection without saying why.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use crate::raw::{RawClient, Reply};
use crate::support::{Server, SourceSchema};

async fn server() -> (SourceSchema, Server) {
    let source = SourceSchema::create("hostile").await;
    source
        .execute(
            "CREATE TABLE {schema}.t (id int PRIMARY KEY, name text, amount numeric(10,2), at timestamptz);
             INSERT INTO {schema}.t SELECT i, 'n' || i, i * 1.5, '2024-01-01'::timestamptz + i * interval '1 hour'
             FROM generate_series(1, 50) i",
        )
        .await;
    let yaml = format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0 }}\ndatasets:\n{}",
        source.dataset("t", "t", "")
    );
    let server = Server::start_with_config(&yaml).await;
    server.wait_ready().await;
    (source, server)
}

async fn raw(server: &Server) -> RawClient {
    RawClient::connect(
        server.pg.port(),
        &[("user", "tester"), ("database", "test")],
    )
    .await
    .0
}

/// The first error among `replies`: (SQLSTATE, message).
fn first_error(replies: &[Reply]) -> Option<(String, String)> {
    replies.iter().find_map(|reply| match reply {
        Reply::Error { code, message } => Some((code.clone(), message.clone())),
        _ => None,
    })
}

/// The server still answers on a new connection.
async fn still_serving(server: &Server) {
    let client = server.client().await;
    let count: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_end_their_connection_with_08p01_and_nothing_else() {
    let (_source, server) = server().await;
    let header = |kind: u8, length: i32| {
        let mut bytes = vec![kind];
        bytes.extend_from_slice(&length.to_be_bytes());
        bytes
    };
    // A Query whose length does not count its own four bytes is read as
    // an empty query (pgwire's reading; PostgreSQL refuses it), and the
    // connection goes on in step.
    let mut client = raw(&server).await;
    client.send_bytes(&header(b'Q', 2)).await;
    let replies = client.until_ready().await;
    assert_eq!(replies.first(), Some(&Reply::Other('I')), "{replies:?}");
    let replies = client.query("SELECT 2").await;
    assert!(
        replies.contains(&Reply::Row(vec![Some("2".to_owned())])),
        "{replies:?}"
    );

    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a negative length", header(b'Q', -5)),
        ("an unknown message type", {
            let mut bytes = header(b'!', 8);
            bytes.extend_from_slice(b"junk");
            bytes
        }),
        ("a Bind whose counts run past its end", {
            let mut body = b"\0\0".to_vec();
            body.extend_from_slice(&0i16.to_be_bytes());
            body.extend_from_slice(&i16::MAX.to_be_bytes());
            let mut bytes = header(b'B', body.len() as i32 + 4);
            bytes.extend_from_slice(&body);
            bytes
        }),
    ];
    for (what, bytes) in cases {
        let mut client = raw(&server).await;
        client.send_bytes(&bytes).await;
        match client.reply().await {
            Reply::Error { code, message } => assert_eq!(code, "08P01", "{what}: {message}"),
            other => panic!("{what}: expected an error, got {other:?}"),
        }
        assert!(client.closed().await, "{what}: the connection is closed");
    }
    // A message cut short by a client that goes away.
    let mut client = raw(&server).await;
    let mut bytes = header(b'Q', 100);
    bytes.extend_from_slice(b"SELECT");
    client.send_bytes(&bytes).await;
    drop(client);
    still_serving(&server).await;
}

/// As PostgreSQL: 22021, nothing runs, and the connection goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_text_that_is_not_utf8_is_refused_with_22021() {
    let (_source, server) = server().await;
    let mut client = raw(&server).await;
    let body = b"SELECT '\xff\xfe'\0";
    client.send(b'Q', body).await;
    let replies = client.until_ready().await;
    let (code, message) = first_error(&replies).expect("an error");
    assert_eq!(code, "22021");
    assert_eq!(message, "invalid byte sequence for encoding \"UTF8\"");
    assert!(
        !replies
            .iter()
            .any(|reply| matches!(reply, Reply::Description(_) | Reply::Row(_))),
        "{replies:?}"
    );

    let mut parse = b"\0SELECT 'caf\xe9'\0".to_vec();
    parse.extend_from_slice(&0i16.to_be_bytes());
    client.send(b'P', &parse).await;
    client.bind("", "", &[]).await;
    client.execute("", 0).await;
    let replies = client.sync().await;
    assert_eq!(first_error(&replies).expect("an error").0, "22021");
    // Text that is UTF-8, U+FFFD included, runs.
    let replies = client.query("SELECT 'caf\u{e9} \u{fffd}'").await;
    assert!(
        replies.contains(&Reply::Row(vec![Some("caf\u{e9} \u{fffd}".to_owned())])),
        "{replies:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bind_with_the_wrong_parameter_count_is_an_error_and_the_connection_goes_on() {
    let (_source, server) = server().await;
    let mut client = raw(&server).await;
    client.parse("", "SELECT $1::int + 1").await;
    client.bind("", "", &[]).await;
    let replies = client.sync().await;
    let (code, message) = first_error(&replies).expect("an error");
    assert_eq!(code, "08P01");
    assert_eq!(
        message,
        "bind message supplies 0 parameters, but prepared statement \"\" requires 1"
    );
    client.parse("", "SELECT $1::int + 1").await;
    client.bind("", "", &[Some("1"), Some("2")]).await;
    let replies = client.sync().await;
    assert_eq!(first_error(&replies).expect("an error").0, "08P01");
    let replies = client.query("SELECT 41 + 1").await;
    assert!(
        replies.contains(&Reply::Row(vec![Some("42".to_owned())])),
        "{replies:?}"
    );
}

/// SQL-ish text: fragments of real statements in any order, or any text.
fn sql() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("SELECT"),
        Just("FROM t"),
        Just("WHERE"),
        Just("id"),
        Just("name"),
        Just("amount"),
        Just("at"),
        Just("$1"),
        Just("$2"),
        Just("::int"),
        Just("::text"),
        Just("::numeric"),
        Just("("),
        Just(")"),
        Just(","),
        Just("'"),
        Just("\""),
        Just(";"),
        Just("="),
        Just("+"),
        Just("/"),
        Just("*"),
        Just("||"),
        Just("NULL"),
        Just("1"),
        Just("0"),
        Just("-2147483648"),
        Just("1e308"),
        Just("'2024-13-45'"),
        Just("count(*)"),
        Just("GROUP BY"),
        Just("ORDER BY"),
        Just("LIMIT"),
        Just("JOIN t u ON"),
        Just("UNION"),
        Just("WITH x AS"),
        Just("BEGIN"),
        Just("COMMIT"),
        Just("ROLLBACK"),
        Just("SET"),
        Just("SHOW"),
        Just("DECLARE c CURSOR FOR"),
        Just("FETCH"),
        Just("COPY"),
        Just("pg_catalog.pg_class"),
        Just("now()"),
        Just("ARRAY[1,2]"),
        Just("[1]"),
        Just("CASE WHEN"),
        Just("THEN"),
        Just("END"),
        Just("\\"),
        Just("E'\\x'"),
    ];
    prop_oneof![
        prop::collection::vec(fragment, 0..16).prop_map(|parts| parts.join(" ")),
        ".{0,120}",
    ]
}

fn parameters() -> impl Strategy<Value = Vec<Option<String>>> {
    prop::collection::vec(
        prop_oneof![
            Just(None),
            ".{0,12}".prop_map(Some),
            Just(Some("12".to_owned()))
        ],
        0..4,
    )
}

/// Whatever the text and parameters, every statement ends in an answer or
/// an error with a SQLSTATE, and the connection keeps serving.
#[test]
fn arbitrary_sql_and_parameters_never_end_a_connection() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (_source, server) = runtime.block_on(server());
    let mut client = runtime.block_on(raw(&server));
    runtime.block_on(client.query("SET statement_timeout = '5s'"));
    // One connection for every case (the runner takes a `Fn`).
    let client = tokio::sync::Mutex::new(client);
    let cases = std::env::var("PGACCEL_PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(300);
    // The same cases on every run, so that CI is repeatable; a longer run
    // with other cases: PGACCEL_PROPTEST_CASES and PGACCEL_PROPTEST_SEED
    // (scripts/fuzz.sh).
    let seed: u64 = std::env::var("PGACCEL_PROPTEST_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(16);
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = proptest::test_runner::TestRng::from_seed(
        proptest::test_runner::RngAlgorithm::ChaCha,
        &seed_bytes,
    );
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, rng);
    let outcome = runner.run(&(sql(), parameters()), |(sql, params)| {
        // A NUL ends the text in the protocol's strings.
        let sql = sql.replace('\0', "");
        runtime.block_on(async {
            let mut client = client.lock().await;
            let simple = client.query(&sql).await;
            check(&simple, &sql)?;
            client.parse("", &sql).await;
            let params: Vec<Option<&str>> = params.iter().map(Option::as_deref).collect();
            client.bind("", "", &params).await;
            client.execute("", 0).await;
            let extended = client.sync().await;
            check(&extended, &sql)?;
            // Out of any block the statements may have opened.
            let reset = client.query("ROLLBACK").await;
            check(&reset, "ROLLBACK")?;
            let alive = client.query("SELECT 1").await;
            prop_assert!(
                alive.contains(&Reply::Row(vec![Some("1".to_owned())])),
                "after {sql:?}: {alive:?}"
            );
            Ok(())
        })
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    runtime.block_on(still_serving(&server));
}

/// Every error has a SQLSTATE of five characters, and none is an internal
/// error (XX000), which would mean a panic or a bug rather than bad input.
fn check(replies: &[Reply], sql: &str) -> Result<(), TestCaseError> {
    for reply in replies {
        if let Reply::Error { code, message } = reply {
            prop_assert_eq!(code.len(), 5, "{:?}: {}", sql, message);
            prop_assert!(code != "XX000", "{:?}: XX000 {}", sql, message);
        }
    }
    Ok(())
}
