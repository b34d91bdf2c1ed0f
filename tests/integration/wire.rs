//! The wire protocol as clients see it: SQLSTATE codes, a connection that
//! survives errors, prepared statements with typed parameters, session
//! statements, and psql's catalog commands.

use tokio_postgres::types::Type;

use crate::support::{Server, SourceSchema, psql, sqlstate};

async fn server_with_items(prefix: &str) -> (SourceSchema, Server) {
    let source = SourceSchema::create(prefix).await;
    source
        .execute(
            "CREATE TABLE {schema}.items (id bigint PRIMARY KEY, name varchar(40) NOT NULL, price float8, added timestamptz);
             INSERT INTO {schema}.items SELECT g, 'item ' || g, g * 1.5, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour' FROM generate_series(1, 100) g;",
        )
        .await;
    let server = Server::start(&source.dataset("items", "items", "")).await;
    server.wait_ready().await;
    (source, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_postgres_sqlstates_and_the_connection_stays_usable() {
    let (_source, server) = server_with_items("errors").await;
    let client = server.client().await;
    let cases = [
        ("SELECT * FROM no_such_table", "42P01"),
        ("SELECT no_such_column FROM items", "42703"),
        ("SELEC 1", "42601"),
        ("INSERT INTO items VALUES (1000, 'x', 1, now())", "25006"),
        ("UPDATE items SET price = 0", "25006"),
        ("DELETE FROM items", "25006"),
        ("TRUNCATE items", "25006"),
        ("CREATE TABLE t2 (a int)", "25006"),
        ("DROP TABLE items", "25006"),
        ("SELECT 1 / 0", "22012"),
    ];
    for (sql, expected) in cases {
        let error = client.simple_query(sql).await.unwrap_err();
        assert_eq!(
            sqlstate(&error),
            expected,
            "simple protocol: {sql}: {error}"
        );
        let error = client.query(sql, &[]).await.unwrap_err();
        assert_eq!(
            sqlstate(&error),
            expected,
            "extended protocol: {sql}: {error}"
        );
        let count: i64 = client
            .query_one("SELECT count(*) FROM items", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(count, 100, "connection unusable after {sql}");
    }
    let error = client
        .query("INSERT INTO items VALUES (1000, 'x', 1, now())", &[])
        .await
        .unwrap_err();
    assert_eq!(
        error.as_db_error().unwrap().message(),
        "cannot execute INSERT in a read-only transaction"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_bind_typed_parameters() {
    let (source, server) = server_with_items("prepared").await;
    let client = server.client().await;
    let statement = client
        .prepare("SELECT id, name, price FROM items WHERE id = $1 AND price > $2")
        .await
        .unwrap();
    assert_eq!(statement.params(), &[Type::INT8, Type::FLOAT8]);
    assert_eq!(statement.columns()[1].type_(), &Type::VARCHAR);
    for id in [1i64, 50, 100] {
        let row = client.query_one(&statement, &[&id, &0.0f64]).await.unwrap();
        assert_eq!(row.get::<_, i64>(0), id);
        assert_eq!(row.get::<_, String>(1), format!("item {id}"));
        assert_eq!(row.get::<_, f64>(2), id as f64 * 1.5);
    }
    assert!(
        client
            .query(&statement, &[&7i64, &100.0f64])
            .await
            .unwrap()
            .is_empty()
    );
    let names: Vec<String> = client
        .query(
            "SELECT name FROM items WHERE name LIKE $1 ORDER BY id LIMIT 2",
            &[&"item 1%"],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(names, ["item 1", "item 10"]);

    // A parameter used both alone and in an operation with another one
    // (`$2` untyped on its own): typed as PostgreSQL types them, and
    // answering as it does.
    let range = "SELECT count(*), max(id) FROM items WHERE id >= $1 AND id < $1 + $2";
    let statement = client.prepare(range).await.unwrap();
    assert_eq!(statement.params(), &[Type::INT8, Type::INT8]);
    let postgres = source.connect_in().await;
    let expected = postgres.prepare(range).await.unwrap();
    assert_eq!(expected.params(), statement.params());
    for (from, span) in [(1i64, 10i64), (95, 20), (200, 5)] {
        let ours = client.query_one(&statement, &[&from, &span]).await.unwrap();
        let theirs = postgres
            .query_one(&expected, &[&from, &span])
            .await
            .unwrap();
        assert_eq!(ours.get::<_, i64>(0), theirs.get::<_, i64>(0));
        assert_eq!(
            ours.get::<_, Option<i64>>(1),
            theirs.get::<_, Option<i64>>(1)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_statements_behave_like_a_hot_standby() {
    let (_source, server) = server_with_items("session").await;
    let mut client = server.client().await;
    client
        .batch_execute("BEGIN; SET application_name = 'tests'; COMMIT")
        .await
        .unwrap();
    let read_only = client
        .simple_query("SHOW transaction_read_only")
        .await
        .unwrap();
    let value = match &read_only[1] {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).unwrap().to_owned(),
        other => panic!("{other:?}"),
    };
    assert_eq!(value, "on");
    let version: String = client
        .query_one("SELECT version()", &[])
        .await
        .unwrap()
        .get(0);
    let shown = client.simple_query("SHOW server_version").await.unwrap();
    let server_version = match &shown[1] {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).unwrap().to_owned(),
        other => panic!("{other:?}"),
    };
    assert!(
        version.starts_with(&format!("PostgreSQL {server_version}")),
        "{version} vs {server_version}"
    );
    // Transactions are accepted; reads inside them work.
    let transaction = client
        .build_transaction()
        .read_only(true)
        .start()
        .await
        .unwrap();
    let count: i64 = transaction
        .query_one("SELECT count(*) FROM items", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 100);
    transaction.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_lists_tables_and_columns() {
    let (_source, server) = server_with_items("psql").await;
    let port = server.runtime.pg_addr().port();
    let (ok, tables) = psql(port, "\\dt");
    assert!(ok, "{tables}");
    assert!(
        tables
            .lines()
            .any(|line| line.starts_with("public|items|table")),
        "{tables}"
    );
    let (ok, columns) = psql(port, "\\d items");
    assert!(ok, "{columns}");
    for expected in [
        "id|bigint",
        "price|double precision",
        "added|timestamp with time zone",
    ] {
        assert!(
            columns.contains(expected),
            "{expected} missing from:\n{columns}"
        );
    }
    let (ok, out) = psql(port, "SELECT count(*), max(price) FROM items");
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "100|150");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_have_postgres_types_names_and_overflow_errors() {
    let (_source, server) = server_with_items("semantics").await;
    let client = server.client().await;
    let row = client
        .query_one("SELECT 1, count(*), sum(id), max(name), 2147483648, id FROM items GROUP BY id ORDER BY id LIMIT 1", &[])
        .await
        .unwrap();
    let names: Vec<&str> = row.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["?column?", "count", "sum", "max", "?column?", "id"]);
    assert_eq!(row.get::<_, i32>(0), 1);
    assert_eq!(row.get::<_, i64>(1), 1);
    assert_eq!(row.get::<_, i64>(4), 2_147_483_648);
    for (sql, message) in [
        ("SELECT 2147483647 + 1", "integer out of range"),
        ("SELECT 40000::int2", "smallint out of range"),
        (
            "SELECT id * 9223372036854775807 FROM items WHERE id = 2",
            "bigint out of range",
        ),
    ] {
        let error = client.query(sql, &[]).await.unwrap_err();
        let db = error.as_db_error().unwrap();
        assert_eq!(
            (db.code().code(), db.message()),
            ("22003", message),
            "{sql}"
        );
    }
    let grouped: Vec<(String, i64)> = client
        .query(
            "SELECT left(name, 6), count(*) FROM items GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 2",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        grouped,
        [("item 1".to_owned(), 12), ("item 2".to_owned(), 11)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_are_refused_with_53300() {
    let source = SourceSchema::create("limit").await;
    source
        .execute("CREATE TABLE {schema}.t (id int); INSERT INTO {schema}.t VALUES (1);")
        .await;
    let config = format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0, max_connections: 2 }}\n  http: {{ listen: 127.0.0.1:0 }}\ndatasets:\n{}",
        source.dataset("t", "t", "")
    );
    let server = Server::start_with_config(&config).await;
    server.wait_ready().await;
    let first = server.client().await;
    let _second = server.client().await;
    let error = tokio_postgres::connect(&server.dsn(), tokio_postgres::NoTls)
        .await
        .err()
        .expect("third connection refused");
    assert_eq!(sqlstate(&error), "53300");
    drop(first);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let third = server.client().await;
    assert_eq!(
        third
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap()
            .get::<_, i64>(0),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn portals_return_rows_in_batches_of_the_requested_size() {
    let (_source, server) = server_with_items("portal").await;
    let mut client = server.client().await;
    let transaction = client.transaction().await.unwrap();
    let statement = transaction
        .prepare("SELECT id FROM items WHERE id <= $1 ORDER BY id")
        .await
        .unwrap();
    let portal = transaction.bind(&statement, &[&25i64]).await.unwrap();
    let mut sizes = Vec::new();
    let mut ids = Vec::new();
    loop {
        let rows = transaction.query_portal(&portal, 10).await.unwrap();
        if rows.is_empty() {
            break;
        }
        sizes.push(rows.len());
        ids.extend(rows.iter().map(|row| row.get::<_, i64>(0)));
    }
    assert_eq!(sizes, [10, 10, 5]);
    assert_eq!(ids, (1..=25).collect::<Vec<i64>>());
    transaction.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_stops_a_running_query() {
    let (_source, server) = server_with_items("cancel").await;
    let client = std::sync::Arc::new(server.client().await);
    let token = client.cancel_token();
    let running = tokio::spawn({
        let client = std::sync::Arc::clone(&client);
        async move {
            client
                .query(
                    "SELECT count(*) FROM generate_series(1, 5000000000) AS t(x) WHERE x % 7 = 3",
                    &[],
                )
                .await
        }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    token.cancel_query(tokio_postgres::NoTls).await.unwrap();
    let error = tokio::time::timeout(std::time::Duration::from_secs(10), running)
        .await
        .expect("the query stops soon after the cancel request")
        .unwrap()
        .unwrap_err();
    assert_eq!(sqlstate(&error), "57014");
    let count: i64 = client
        .query_one("SELECT count(*) FROM items", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 100);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn select_lists_without_a_table_answer_like_postgres() {
    let (_source, server) = server_with_items("constant").await;
    let replica = server.client().await;
    let primary = crate::support::connect(crate::support::SOURCE_DSN).await;
    for sql in [
        "SELECT 1",
        "SELECT 1 AS one, 'a' || 'b', 2.5 * 2, true AND false, NULL::int, upper('x'), 7 % 3",
        "SELECT (-32768)::int2, 2147483648, 2.5e3::float8, 0.1::float4",
    ] {
        let rendered = |messages: Vec<tokio_postgres::SimpleQueryMessage>| {
            messages
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                        (0..row.len())
                            .map(|i| format!("{}={:?}", row.columns()[i].name(), row.get(i)))
                            .collect::<Vec<_>>(),
                    ),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        // Twice: the second answer comes from the cached statement.
        for _ in 0..2 {
            let ours = rendered(replica.simple_query(sql).await.unwrap());
            let theirs = rendered(primary.simple_query(sql).await.unwrap());
            assert_eq!(ours, theirs, "{sql}");
        }
        let ours = replica.query(sql, &[]).await.unwrap();
        let theirs = primary.query(sql, &[]).await.unwrap();
        let types = |rows: &[tokio_postgres::Row]| {
            rows[0]
                .columns()
                .iter()
                .map(|c| c.type_().clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(types(&ours), types(&theirs), "{sql}");
    }
}

/// A raw protocol client: pgaccel holds its output until the client has to
/// wait for it, so the answers to Parse/Bind/Execute must arrive at a Flush
/// without any Sync, and an SSL request is refused with one byte.
#[tokio::test]
async fn output_is_delivered_at_flush_and_sync() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (_source, server) = server_with_items("flush").await;
    let mut socket = tokio::net::TcpStream::connect(server.runtime.pg_addr())
        .await
        .unwrap();
    socket
        .write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])
        .await
        .unwrap();
    let mut answer = [0u8; 1];
    socket.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"N", "SSL is refused");

    let mut startup = Vec::new();
    startup.extend_from_slice(&196608u32.to_be_bytes());
    startup.extend_from_slice(b"user\0tester\0database\0test\0\0");
    let mut packet = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
    packet.extend_from_slice(&startup);
    socket.write_all(&packet).await.unwrap();
    read_until(&mut socket, b'Z').await;

    let message = |tag: u8, body: &[u8]| {
        let mut bytes = vec![tag];
        bytes.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        bytes.extend_from_slice(body);
        bytes
    };
    let mut pipeline = message(b'P', b"\0SELECT 41 + 1\0\0\0");
    pipeline.extend(message(b'B', b"\0\0\0\0\0\0\0\0"));
    pipeline.extend(message(b'E', b"\0\0\0\0\0"));
    pipeline.extend(message(b'H', b""));
    socket.write_all(&pipeline).await.unwrap();
    let tags = read_until(&mut socket, b'C').await;
    assert_eq!(
        tags, b"12DC",
        "ParseComplete, BindComplete, DataRow, CommandComplete"
    );

    socket.write_all(&message(b'S', b"")).await.unwrap();
    assert_eq!(read_until(&mut socket, b'Z').await, b"Z");
}

/// Reads backend messages up to and including one tagged `last` (failing
/// after five seconds) and returns their tags.
async fn read_until(socket: &mut tokio::net::TcpStream, last: u8) -> Vec<u8> {
    use tokio::io::AsyncReadExt;

    let read = async {
        let mut tags = Vec::new();
        loop {
            let mut header = [0u8; 5];
            socket.read_exact(&mut header).await.unwrap();
            let length = u32::from_be_bytes(header[1..].try_into().unwrap()) as usize;
            let mut body = vec![0u8; length - 4];
            socket.read_exact(&mut body).await.unwrap();
            assert_ne!(header[0], b'E', "error: {}", String::from_utf8_lossy(&body));
            if !matches!(header[0], b'R' | b'S' | b'K') {
                tags.push(header[0]);
            }
            if header[0] == last {
                return tags;
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .unwrap_or_else(|_| panic!("no '{}' message within 5 s", last as char))
}

/// A text parameter compared with a `character(n)` column is read as
/// `character`, as PostgreSQL reads an untyped parameter there: trailing
/// spaces do not count, in `=`, `<>` and `IN`, prepared or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_parameters_compare_with_character_columns_as_postgres_does() {
    let source = SourceSchema::create("wire_bpchar").await;
    source
        .execute(
            "CREATE TABLE {schema}.codes (id int PRIMARY KEY, code char(8));
             INSERT INTO {schema}.codes VALUES (1, 'ab'), (2, 'ab  '), (3, 'abc'), (4, NULL);",
        )
        .await;
    let server = Server::start(&source.dataset("codes", "codes", "")).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let primary = source.connect_in().await;
    let queries = [
        "SELECT count(*) FROM codes WHERE code = $1",
        "SELECT count(*) FROM codes WHERE code <> $1",
        "SELECT count(*) FROM codes WHERE code IN ($1, 'zz')",
    ];
    for sql in queries {
        for value in ["ab", "ab   ", "abc ", "x"] {
            let ours: i64 = replica.query_one(sql, &[&value]).await.unwrap().get(0);
            let theirs: i64 = primary.query_one(sql, &[&value]).await.unwrap().get(0);
            assert_eq!(ours, theirs, "{sql} with {value:?}");
        }
    }
}

/// A parameter the client declares `timestamptz` keeps that type where the
/// engine alone would infer another (`$1 - interval '1 day'` reads as an
/// interval), and answers as PostgreSQL does; one with no other type than
/// its declaration has that type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_timestamp_parameters_keep_their_type_in_arithmetic() {
    let (source, server) = server_with_items("wire_declared").await;
    let replica = server.client().await;
    let primary = source.connect_in().await;
    let sql = "SELECT count(*) FROM items WHERE added > $1 - interval '1 day'";
    let ours = replica
        .prepare_typed(sql, &[Type::TIMESTAMPTZ])
        .await
        .unwrap();
    let theirs = primary
        .prepare_typed(sql, &[Type::TIMESTAMPTZ])
        .await
        .unwrap();
    assert_eq!(ours.params(), &[Type::TIMESTAMPTZ]);
    // 2026-01-03 00:00:00 UTC: the items added after 2026-01-02.
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_767_398_400);
    let ours: i64 = replica.query_one(&ours, &[&at]).await.unwrap().get(0);
    let theirs: i64 = primary.query_one(&theirs, &[&at]).await.unwrap().get(0);
    assert_eq!(ours, theirs);
    assert!(ours > 0 && ours < 100, "{ours}");

    // A parameter that only stands in the select list is of its declared
    // type, not text.
    let sql = "SELECT $1, $2, $3";
    let types = [Type::INT8, Type::BOOL, Type::FLOAT8];
    let ours = replica.prepare_typed(sql, &types).await.unwrap();
    let theirs = primary.prepare_typed(sql, &types).await.unwrap();
    let columns = |statement: &tokio_postgres::Statement| -> Vec<Type> {
        statement
            .columns()
            .iter()
            .map(|c| c.type_().clone())
            .collect()
    };
    assert_eq!(columns(&ours), columns(&theirs));
    let row = replica
        .query_one(&ours, &[&7i64, &true, &2.5f64])
        .await
        .unwrap();
    assert_eq!(
        (
            row.get::<_, i64>(0),
            row.get::<_, bool>(1),
            row.get::<_, f64>(2)
        ),
        (7, true, 2.5)
    );
}
