//! Sessions as PostgreSQL clients know them: settings (`SHOW`, `SET`,
//! `RESET`, `current_setting()`, `set_config()`) validated with PostgreSQL's
//! errors and taking effect; ParameterStatus when a reported setting
//! changes; transaction blocks with savepoints, 25P02 after an error, the
//! status byte, and one acceleration version per transaction; cursors; `COPY
//! ... TO STDOUT`; who the client is. Outputs are compared with what the
//! real PostgreSQL prints for the same statements under the same settings.

use tokio_postgres::{Client, SimpleQueryMessage};

use crate::raw::{RawClient, Reply, error_code, status};
use crate::support::{
    SOURCE_DSN, Server, SourceSchema, assert_statement_timeout, connect, simple_rows, sqlstate,
};

const ITEMS: &str = "CREATE TABLE {schema}.items (id bigint PRIMARY KEY, name varchar(40) NOT NULL, price float8, day date, added timestamptz, span interval);
     INSERT INTO {schema}.items SELECT g, 'item ' || g, g * 1.1, date '2024-02-27' + g, timestamptz '2024-01-01 00:00:00+00' + g * interval '97 days 1 hour 3.5 seconds', g * interval '1 day 1 hour' - interval '1 month' FROM generate_series(1, 20) g;";

/// The source schema (whose name is also the served schema) and pgaccel.
async fn serve_items(prefix: &str) -> (SourceSchema, Server) {
    let source = SourceSchema::create(prefix).await;
    source.execute(ITEMS).await;
    let name = format!("{}.items", source.name);
    let server = Server::start(&source.dataset("items", &name, "")).await;
    server.wait_ready().await;
    (source, server)
}

/// Runs `statements` on a fresh connection to pgaccel and to PostgreSQL and
/// returns both text results, which must be equal.
async fn both(
    source: &SourceSchema,
    server: &Server,
    statements: &str,
) -> Vec<Vec<Option<String>>> {
    let sql = statements.replace("{schema}", &source.name);
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    let replica_rows = simple_rows(&replica, &sql).await;
    let primary_rows = simple_rows(&primary, &sql).await;
    assert_eq!(replica_rows, primary_rows, "{sql}");
    replica_rows
}

async fn value(client: &Client, sql: &str) -> String {
    simple_rows(client, sql).await[0][0]
        .clone()
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_answers_every_setting_with_postgres_spelling() {
    let (_source, server) = serve_items("show").await;
    let client = server.client().await;
    assert_eq!(
        value(&client, "SHOW TRANSACTION ISOLATION LEVEL").await,
        "read committed"
    );
    assert_eq!(value(&client, "SHOW TIME ZONE").await, "UTC");
    assert_eq!(value(&client, "SHOW transaction_read_only").await, "on");
    assert_eq!(value(&client, "SHOW in_hot_standby").await, "on");
    assert_eq!(value(&client, "SHOW work_mem").await, "4MB");
    assert_eq!(value(&client, "SHOW server_version_num").await, "160006");
    let messages = client.simple_query("SHOW TIME ZONE").await.unwrap();
    let SimpleQueryMessage::RowDescription(columns) = &messages[0] else {
        panic!("{messages:?}")
    };
    assert_eq!(columns[0].name(), "TimeZone");
    let all = simple_rows(&client, "SHOW ALL").await;
    assert!(all.len() > 350, "{} settings", all.len());
    assert!(
        all.iter()
            .any(|row| row[0].as_deref() == Some("DateStyle")
                && row[1].as_deref() == Some("ISO, MDY"))
    );
    let error = client
        .simple_query("SHOW no_such_setting")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "42704");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_validates_like_postgres_and_says_what_has_no_effect() {
    let (source, server) = serve_items("set").await;
    let primary = connect(SOURCE_DSN).await;
    let replica = server.client().await;
    for sql in [
        "SET statement_timeout = 'abc'",
        "SET statement_timeout = -1",
        "SET intervalstyle = 'foo'",
        "SET enable_seqscan = 'maybe'",
        "SET datestyle = 'foo'",
        "SET TIME ZONE 'Mars/Base'",
        "SET shared_buffers = '1GB'",
        "SET server_version = '1'",
        "SET no_such_setting = 1",
    ] {
        let expected = primary.simple_query(sql).await.unwrap_err();
        let got = replica.simple_query(sql).await.unwrap_err();
        assert_eq!(sqlstate(&got), sqlstate(&expected), "{sql}");
        assert_eq!(
            got.as_db_error().unwrap().message(),
            expected.as_db_error().unwrap().message(),
            "{sql}"
        );
    }
    // Custom settings, set_config() and current_setting() agree.
    both(
        &source,
        &server,
        "SET myapp.tenant = 'acme'; SELECT current_setting('myapp.tenant'), set_config('myapp.other', 'x', false), current_setting('no.such', true) IS NULL; SHOW myapp.other",
    )
    .await;
    // A setting pgaccel keeps but ignores says so.
    let (mut raw, _) = RawClient::connect(server.runtime.pg_addr().port(), &[("user", "u")]).await;
    let replies = raw.query("SET work_mem = '64MB'").await;
    assert!(
        replies.contains(&Reply::Notice {
            code: "00000".into(),
            message: "parameter \"work_mem\" is accepted but has no effect in pgaccel".into()
        }),
        "{replies:?}"
    );
    let replies = raw.query("SET statement_timeout = '5s'").await;
    assert!(
        !replies.iter().any(|r| matches!(r, Reply::Notice { .. })),
        "{replies:?}"
    );
    assert_eq!(
        raw.query("SHOW statement_timeout").await[1],
        Reply::Row(vec![Some("5s".into())])
    );
    raw.query("RESET statement_timeout").await;
    assert_eq!(
        raw.query("SHOW statement_timeout").await[1],
        Reply::Row(vec![Some("0".into())])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_zone_date_style_interval_style_and_float_digits_print_like_postgres() {
    let (source, server) = serve_items("styles").await;
    let select = "SELECT id, price, day, added, span FROM {schema}.items ORDER BY id";
    for settings in [
        "SET TIME ZONE 'Europe/Berlin'",
        "SET TIME ZONE 'America/New_York'; SET DateStyle = 'SQL, DMY'",
        "SET TIME ZONE 'Asia/Kolkata'; SET DateStyle = 'Postgres, MDY'",
        "SET DateStyle = 'German'; SET TIME ZONE 2",
        "SET IntervalStyle = 'iso_8601'",
        "SET IntervalStyle = 'postgres_verbose'",
        "SET extra_float_digits = 0",
        "SET extra_float_digits = -3",
        "SET TIME ZONE INTERVAL '-03:30' HOUR TO MINUTE; SET DateStyle = 'ISO, YMD'",
    ] {
        both(&source, &server, &format!("{settings}; {select}")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_settings_send_parameter_status_when_they_change() {
    let (_source, server) = serve_items("status").await;
    let port = server.runtime.pg_addr().port();
    let (mut raw, startup) = RawClient::connect(
        port,
        &[
            ("user", "alice"),
            ("database", "sales"),
            ("application_name", "report"),
            ("DateStyle", "ISO, DMY"),
        ],
    )
    .await;
    for expected in [
        ("application_name", "report"),
        ("DateStyle", "ISO, DMY"),
        ("in_hot_standby", "on"),
        ("default_transaction_read_only", "on"),
        ("session_authorization", "alice"),
        ("server_version", "16.6 (pgaccel 0.1.0)"),
        ("TimeZone", "UTC"),
    ] {
        let reply = Reply::ParameterStatus(expected.0.into(), expected.1.into());
        assert!(startup.contains(&reply), "{expected:?} in {startup:?}");
    }
    let replies = raw
        .query("SET application_name = 'nightly'; SET TIME ZONE 'Europe/Paris'")
        .await;
    let statuses: Vec<&Reply> = replies
        .iter()
        .filter(|r| matches!(r, Reply::ParameterStatus(..)))
        .collect();
    assert_eq!(
        statuses,
        [
            &Reply::ParameterStatus("application_name".into(), "nightly".into()),
            &Reply::ParameterStatus("TimeZone".into(), "Europe/Paris".into()),
        ]
    );
    // A rolled-back SET is undone, and reported again.
    let replies = raw
        .query("BEGIN; SET application_name = 'tmp'; ROLLBACK")
        .await;
    assert!(!replies.contains(&Reply::ParameterStatus(
        "application_name".into(),
        "tmp".into()
    )));
    assert_eq!(
        raw.query("SHOW application_name").await[1],
        Reply::Row(vec![Some("nightly".into())])
    );
    // A startup setting PostgreSQL would refuse ends the connection.
    let (_, refused) =
        RawClient::connect(port, &[("user", "bob"), ("TimeZone", "Mars/Base")]).await;
    assert_eq!(
        error_code(&refused).as_deref(),
        Some("22023"),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_in_a_block_fail_every_statement_with_25p02_until_rollback() {
    let (source, server) = serve_items("blocks").await;
    let (mut raw, _) = RawClient::connect(server.runtime.pg_addr().port(), &[("user", "u")]).await;
    assert_eq!(status(&raw.query("BEGIN").await), 'T');
    let replies = raw.query("SELECT 1/0").await;
    assert_eq!(error_code(&replies).as_deref(), Some("22012"));
    assert_eq!(status(&replies), 'E');
    let select = format!("SELECT count(*) FROM {}.items", source.name);
    let replies = raw.query(&select).await;
    assert_eq!(
        error_code(&replies).as_deref(),
        Some("25P02"),
        "{replies:?}"
    );
    assert_eq!(status(&replies), 'E');
    // COMMIT of a failed block rolls back.
    let replies = raw.query("COMMIT").await;
    assert!(
        replies.contains(&Reply::Complete("ROLLBACK".into())),
        "{replies:?}"
    );
    assert_eq!(status(&replies), 'I');
    // A savepoint recovers the block.
    raw.query("BEGIN; SAVEPOINT a").await;
    assert_eq!(status(&raw.query("SELECT 1/0").await), 'E');
    let replies = raw.query("ROLLBACK TO SAVEPOINT a").await;
    assert_eq!(status(&replies), 'T');
    let replies = raw.query(&select).await;
    assert!(
        replies.contains(&Reply::Row(vec![Some("20".into())])),
        "{replies:?}"
    );
    assert!(
        replies.contains(&Reply::Complete("RELEASE".into()))
            || status(&raw.query("RELEASE a").await) == 'T'
    );
    assert_eq!(status(&raw.query("COMMIT").await), 'I');
    // The extended protocol: an error skips to Sync, and the block stays failed.
    raw.query("BEGIN").await;
    raw.parse("", "SELECT 1/0").await;
    raw.bind("", "", &[]).await;
    raw.execute("", 0).await;
    let replies = raw.sync().await;
    assert_eq!(
        (error_code(&replies).as_deref(), status(&replies)),
        (Some("22012"), 'E')
    );
    raw.parse("", "SELECT 1").await;
    let replies = raw.sync().await;
    assert_eq!(error_code(&replies).as_deref(), Some("25P02"));
    assert_eq!(status(&raw.query("ROLLBACK").await), 'I');
    // Read-write blocks open (pools ask for them); writes in them are refused.
    let client = server.client().await;
    client.batch_execute("BEGIN READ WRITE").await.unwrap();
    let error = client
        .simple_query(&format!("DELETE FROM {}.items", source.name))
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "25006");
    client.batch_execute("ROLLBACK").await.unwrap();
    // Outside a block: the warnings PostgreSQL gives, no error.
    let replies = raw.query("COMMIT").await;
    assert!(replies.contains(&Reply::Notice {
        code: "25P01".into(),
        message: "there is no transaction in progress".into()
    }));
}

/// `now()` holds still for a transaction and starts with the message that
/// opened it, on pgaccel as on PostgreSQL: the statements of one Query share
/// it, a block keeps it across messages (simple and extended), and the next
/// transaction reads a later one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn now_is_the_start_of_the_transaction() {
    let (_source, server) = serve_items("now").await;
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    for (who, client) in [("pgaccel", &replica), ("PostgreSQL", &primary)] {
        let rows = simple_rows(
            client,
            "BEGIN; SELECT now()::text; SELECT pg_sleep(0.05)::text; SELECT now()::text; \
             COMMIT; SELECT now()::text",
        )
        .await;
        let times: Vec<_> = [&rows[0], &rows[2], &rows[3]]
            .map(|row| row[0].clone().expect("now() is not NULL"))
            .to_vec();
        assert!(
            times.iter().all(|time| *time == times[0]),
            "{who}: one Query, one now(): {times:?}"
        );
        let now = client.prepare("SELECT now()::text").await.unwrap();
        let read = async || -> String { client.query_one(&now, &[]).await.unwrap().get(0) };
        client.batch_execute("BEGIN").await.unwrap();
        let first = read().await;
        client.batch_execute("SELECT pg_sleep(0.05)").await.unwrap();
        let second = read().await;
        client.batch_execute("COMMIT").await.unwrap();
        let after = read().await;
        assert_eq!(first, second, "{who}: now() within a block");
        assert!(
            after > first,
            "{who}: the next transaction: {after} after {first}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_reads_one_version_across_a_refresh() {
    let (source, server) = serve_items("snapshot").await;
    let name = format!("{}.items", source.name);
    let mut client = server.client().await;
    let count_sql = format!("SELECT count(*) FROM {name}");
    let lookup = client
        .prepare(&format!("SELECT name FROM {name} WHERE id = $1"))
        .await
        .unwrap();
    let transaction = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .start()
        .await
        .unwrap();
    let before: i64 = transaction
        .query_one(count_sql.as_str(), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(before, 20);
    source
        .execute("INSERT INTO {schema}.items VALUES (21, 'late', 1, '2024-01-01', now(), '1 day'); UPDATE {schema}.items SET name = 'renamed' WHERE id = 1")
        .await;
    server.refresh(&name).await;
    let during: i64 = transaction
        .query_one(count_sql.as_str(), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(during, 20, "the block reads the version it started with");
    let old_name: String = transaction
        .query_one(&lookup, &[&1i64])
        .await
        .unwrap()
        .get(0);
    assert_eq!(old_name, "item 1", "lookups too");
    transaction.commit().await.unwrap();
    let after: i64 = client
        .query_one(count_sql.as_str(), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(after, 21);
    let new_name: String = client.query_one(&lookup, &[&1i64]).await.unwrap().get(0);
    assert_eq!(new_name, "renamed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_move_like_postgres_cursors() {
    let (source, server) = serve_items("cursors").await;
    let script = "BEGIN;
        DECLARE c SCROLL CURSOR FOR SELECT id, name FROM {schema}.items ORDER BY id;
        FETCH 3 FROM c; FETCH BACKWARD 2 FROM c; FETCH ABSOLUTE -1 FROM c; FETCH NEXT FROM c;
        FETCH PRIOR FROM c; MOVE BACKWARD 5 IN c; FETCH RELATIVE 2 FROM c; FETCH FIRST FROM c;
        FETCH FORWARD ALL FROM c; FETCH BACKWARD ALL FROM c; CLOSE c;
        DECLARE h CURSOR WITH HOLD FOR SELECT id FROM {schema}.items WHERE id > 15 ORDER BY id;
        COMMIT;
        FETCH 2 FROM h; FETCH ALL FROM h; CLOSE h";
    let rows = both(&source, &server, script).await;
    assert!(rows.len() > 20);
    let client = server.client().await;
    let error = client
        .simple_query(&format!(
            "DECLARE d CURSOR FOR SELECT 1 FROM {}.items",
            source.name
        ))
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "25P01");
    client
        .batch_execute(&format!(
            "BEGIN; DECLARE f NO SCROLL CURSOR FOR SELECT id FROM {}.items",
            source.name
        ))
        .await
        .unwrap();
    client.simple_query("FETCH 2 FROM f").await.unwrap();
    let error = client
        .simple_query("FETCH BACKWARD 1 FROM f")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "55000");
    client.batch_execute("ROLLBACK").await.unwrap();
    let error = client.simple_query("FETCH 1 FROM f").await.unwrap_err();
    assert_eq!(sqlstate(&error), "34000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_to_stdout_writes_the_bytes_postgres_writes() {
    let (source, server) = serve_items("copy").await;
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    for copy in [
        "COPY (SELECT id, name, price, day, added FROM {schema}.items ORDER BY id) TO STDOUT",
        "COPY (SELECT id, name, price FROM {schema}.items ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER, FORCE_QUOTE (name))",
        "COPY (SELECT id, name || ', \"quoted\"' AS name, NULL::text AS empty FROM {schema}.items ORDER BY id) TO STDOUT (FORMAT csv, DELIMITER ';', NULL 'NIL', QUOTE '''')",
        "COPY (SELECT id, name, price, day, added FROM {schema}.items ORDER BY id) TO STDOUT (FORMAT binary)",
        "COPY {schema}.items (id, name) TO STDOUT",
        "COPY (SELECT id, name, NULL::int AS none FROM {schema}.items ORDER BY id) TO STDOUT WITH (FORMAT csv, ESCAPE '\\', FORCE_QUOTE *, NULL 'N')",
        "COPY (SELECT id, name FROM {schema}.items ORDER BY id) TO STDOUT CSV HEADER FORCE QUOTE *",
    ] {
        let copy = copy.replace("{schema}", &source.name);
        let expected = copy_bytes(&primary, &copy).await;
        let got = copy_bytes(&replica, &copy).await;
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected),
            "{copy}"
        );
        assert_eq!(got, expected, "{copy}");
    }
    let error = replica
        .simple_query(&format!("COPY {}.items FROM STDIN", source.name))
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "25006");
}

async fn copy_bytes(client: &Client, sql: &str) -> Vec<u8> {
    use futures::TryStreamExt;
    let stream = client
        .copy_out(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let chunks: Vec<bytes::Bytes> = stream.try_collect().await.unwrap();
    chunks.concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_functions_answer_for_the_connection() {
    let (source, server) = serve_items("identity").await;
    let dsn = format!(
        "host=127.0.0.1 port={} user=alice dbname=sales application_name=probe",
        server.runtime.pg_addr().port()
    );
    let client = connect(&dsn).await;
    let row = &simple_rows(
        &client,
        "SELECT current_database(), current_user, session_user, current_catalog, pg_is_in_recovery(), current_setting('application_name'), inet_server_port() > 0, pg_backend_pid() > 0, txid_current_if_assigned() IS NULL",
    )
    .await[0];
    let expected = [
        "sales", "alice", "alice", "sales", "t", "probe", "t", "t", "t",
    ];
    assert_eq!(
        row.iter()
            .map(|v| v.as_deref().unwrap_or("NULL"))
            .collect::<Vec<_>>(),
        expected
    );
    let version = value(&client, "SELECT version()").await;
    assert!(version.starts_with(&format!(
        "PostgreSQL {}",
        value(&client, "SHOW server_version").await
    )));
    let error = client
        .simple_query("SELECT pg_current_wal_lsn()")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "55000");
    // The database the client connected to names the catalog.
    let count = value(
        &client,
        &format!("SELECT count(*) FROM sales.{}.items", source.name),
    )
    .await;
    assert_eq!(count, "20");
    let error = client
        .simple_query(&format!("SELECT count(*) FROM other.{}.items", source.name))
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "0A000");
    // search_path decides where an unqualified name is found.
    let error = client
        .simple_query("SELECT count(*) FROM items")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "42P01");
    client
        .batch_execute(&format!("SET search_path = {}, public", source.name))
        .await
        .unwrap();
    assert_eq!(value(&client, "SELECT count(*) FROM items").await, "20");
    assert_eq!(value(&client, "SELECT current_schema()").await, source.name);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_and_pg_sleep_end_with_57014() {
    let (_source, server) = serve_items("timeout").await;
    let client = server.client().await;
    client
        .batch_execute("SET statement_timeout = '200ms'")
        .await
        .unwrap();
    assert_statement_timeout(&client).await;
    client
        .batch_execute("RESET statement_timeout")
        .await
        .unwrap();
    assert_eq!(value(&client, "SELECT pg_sleep(0.01)").await, "");
    // A cancel request interrupts a sleep too.
    let cancel = client.cancel_token();
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        cancel.cancel_query(tokio_postgres::NoTls).await.unwrap();
    });
    let error = client
        .simple_query("SELECT pg_sleep(30)")
        .await
        .unwrap_err();
    assert_eq!(
        error.as_db_error().unwrap().message(),
        "canceling statement due to user request"
    );
    canceller.await.unwrap();
    assert_eq!(value(&client, "SELECT 1").await, "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_layer_defects_stay_fixed() {
    let (source, server) = serve_items("defects").await;
    let (mut raw, _) = RawClient::connect(server.runtime.pg_addr().port(), &[("user", "u")]).await;
    // A parameter number no Bind could carry is refused, not allocated for.
    raw.parse("", "SELECT $4000000000").await;
    let replies = raw.sync().await;
    assert_eq!(
        error_code(&replies).as_deref(),
        Some("42P18"),
        "{replies:?}"
    );
    assert_eq!(
        raw.query("SELECT 1").await[1],
        Reply::Row(vec![Some("1".into())])
    );
    // A statement pgaccel does not run is 0A000, not a write refusal.
    let replies = raw.query("SET ROLE admin").await;
    assert_eq!(
        error_code(&replies).as_deref(),
        Some("0A000"),
        "{replies:?}"
    );
    // An expression repeated in GROUP BY and ORDER BY, as BI tools write it.
    both(
        &source,
        &server,
        "SELECT CASE WHEN price > 10 THEN 'big' ELSE 'small' END AS size, count(*) FROM {schema}.items GROUP BY CASE WHEN price > 10 THEN 'big' ELSE 'small' END ORDER BY CASE WHEN price > 10 THEN 'big' ELSE 'small' END",
    )
    .await;
    // Portals with a row limit are suspended and resumed.
    raw.parse(
        "s",
        &format!("SELECT id FROM {}.items ORDER BY id", source.name),
    )
    .await;
    raw.query("BEGIN").await;
    raw.bind("p", "s", &[]).await;
    raw.execute("p", 3).await;
    let replies = raw.sync().await;
    assert_eq!(
        replies
            .iter()
            .filter(|r| matches!(r, Reply::Row(_)))
            .count(),
        3
    );
    assert!(replies.contains(&Reply::Suspended), "{replies:?}");
    raw.execute("p", 0).await;
    let replies = raw.sync().await;
    assert_eq!(
        replies
            .iter()
            .filter(|r| matches!(r, Reply::Row(_)))
            .count(),
        17
    );
    assert!(
        replies.contains(&Reply::Complete("SELECT 17".into())),
        "{replies:?}"
    );
    raw.query("COMMIT").await;
}

/// `reg*` values print as PostgreSQL prints them (the name, schema-qualified
/// off the search path), the primary key's index is a relation `::regclass`
/// finds, and `pg_depend` ties that index to its constraint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reg_values_print_names_and_pk_indexes_are_relations() {
    let (source, server) = serve_items("regnames").await;
    let rows = both(
        &source,
        &server,
        "SELECT '{schema}.items'::regclass, 'pg_class'::regclass, '{schema}.items_pkey'::regclass, \
         23::regtype, 'pg_catalog'::regnamespace",
    )
    .await;
    assert_eq!(
        rows[0][0].as_deref(),
        Some(format!("{}.items", source.name).as_str())
    );
    both(
        &source,
        &server,
        "SELECT d.deptype, d.refobjid = con.oid FROM pg_depend d \
         JOIN pg_constraint con ON con.conname = 'items_pkey' \
           AND con.connamespace = '{schema}'::regnamespace \
         WHERE d.objid = '{schema}.items_pkey'::regclass AND d.classid = 'pg_class'::regclass",
    )
    .await;
}
