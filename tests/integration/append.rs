//! `refresh_mode: append` against a real PostgreSQL and real files: rows are
//! inserted, updated and back-dated in the source between refreshes, and the
//! accelerated contents are asserted exactly.

use std::path::Path;
use std::time::{Duration, SystemTime};

use tokio_postgres::Client;

use crate::support::{Relay, Server, SourceSchema};

/// Every row of `sql`'s single text-castable column, in order.
async fn texts(client: &Client, sql: &str) -> Vec<String> {
    client
        .query(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|row| row.get(0))
        .collect()
}

async fn ids(client: &Client, dataset: &str) -> Vec<i32> {
    client
        .query(
            &format!("SELECT CAST(id AS INT) FROM {dataset} ORDER BY id"),
            &[],
        )
        .await
        .unwrap_or_else(|e| panic!("{dataset}: {e}"))
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// Inserts rows `(id, at)` into `{schema}.e`, writing `at` in every format.
fn insert(rows: &str) -> String {
    format!(
        "INSERT INTO {{schema}}.e
         SELECT id, (at AT TIME ZONE 'UTC'), at,
                extract(epoch FROM at)::bigint,
                (extract(epoch FROM at) * 1000)::bigint,
                (extract(epoch FROM at) * 1000000)::bigint * 1000,
                to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),
                (at AT TIME ZONE 'UTC')::date
         FROM (VALUES {rows}) AS rows(id, at)"
    )
}

#[tokio::test]
async fn append_reads_rows_newer_than_the_newest_held_for_every_time_format() {
    let source = SourceSchema::create("append").await;
    // No primary key: a row read again must be recognised as held.
    source
        .execute(&format!(
            "CREATE TABLE {{schema}}.e (id int, ts timestamp, tstz timestamptz,
                 secs bigint, millis bigint, nanos bigint, iso text, day date);
             {}",
            insert("(1, now() - interval '3 hours'), (2, now() - interval '2 hours')")
        ))
        .await;
    let formats = [
        ("a_ts", "ts", None),
        ("a_ts_named", "ts", Some("timestamp")),
        ("a_tstz", "tstz", Some("timestamptz")),
        ("a_secs", "secs", Some("unix_seconds")),
        ("a_millis", "millis", Some("unix_millis")),
        ("a_nanos", "nanos", Some("unix_nanos")),
        ("a_iso", "iso", Some("iso8601")),
        ("a_day", "day", Some("date")),
    ];
    let datasets: String = formats
        .iter()
        .map(|(name, column, format)| {
            let mut entry = source.dataset("e", name, "");
            entry.push_str(&format!("    time_column: {column}\n"));
            if let Some(format) = format {
                entry.push_str(&format!("    time_format: {format}\n"));
            }
            entry.push_str("    acceleration:\n      refresh_mode: append\n");
            entry
        })
        .collect();
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;
    for (name, _, _) in formats {
        assert_eq!(ids(&replica, name).await, [1, 2], "{name}");
    }
    // Row 3 is newer than everything held; row 4 is back-dated three days,
    // before the newest held row, so an append does not see it.
    source
        .execute(&format!(
            "{}; {}",
            insert("(3, now() - interval '1 hour')"),
            insert("(4, now() - interval '3 days')")
        ))
        .await;
    for (name, _, _) in formats {
        server.refresh(name).await;
        // The date column re-reads the whole newest held day (row 2's, and
        // row 1's on most days): none of them may be duplicated.
        assert_eq!(ids(&replica, name).await, [1, 2, 3], "{name}");
    }
    // A refresh with nothing new changes nothing.
    for (name, _, _) in formats {
        server.refresh(name).await;
        assert_eq!(ids(&replica, name).await, [1, 2, 3], "{name}");
    }
}

#[tokio::test]
async fn the_overlap_is_read_again_without_duplicating_a_row() {
    let source = SourceSchema::create("append_overlap").await;
    source
        .execute(
            "CREATE TABLE {schema}.ev (id int, at timestamptz);
             INSERT INTO {schema}.ev VALUES (1, now() - interval '30 minutes'),
                                            (2, now() - interval '20 minutes')",
        )
        .await;
    let mut entry = source.dataset("ev", "ev", "");
    entry.push_str(
        "    time_column: at\n    acceleration:\n      refresh_mode: append\n      refresh_append_overlap: 1h\n",
    );
    let server = Server::start(&entry).await;
    server.wait_ready().await;
    let replica = server.client().await;
    assert_eq!(ids(&replica, "ev").await, [1, 2]);
    // Row 3 arrives late, inside the overlap; row 5 is in the source twice
    // (no key says the copies are one row), and both copies are kept; row 6
    // arrives later than the overlap reaches and is not seen.
    source
        .execute(
            "INSERT INTO {schema}.ev VALUES (3, now() - interval '40 minutes'),
                                            (5, now() - interval '10 minutes'),
                                            (5, now() - interval '10 minutes'),
                                            (6, now() - interval '3 hours')",
        )
        .await;
    server.refresh("ev").await;
    assert_eq!(ids(&replica, "ev").await, [1, 2, 3, 5, 5]);
    server.refresh("ev").await;
    assert_eq!(ids(&replica, "ev").await, [1, 2, 3, 5, 5]);
    // A third copy of row 5 is one new row.
    source
        .execute("INSERT INTO {schema}.ev SELECT * FROM {schema}.ev WHERE id = 5 LIMIT 1")
        .await;
    server.refresh("ev").await;
    assert_eq!(ids(&replica, "ev").await, [1, 2, 3, 5, 5, 5]);
}

#[tokio::test]
async fn with_a_primary_key_the_newest_version_of_a_row_replaces_the_held_one() {
    let source = SourceSchema::create("append_upsert").await;
    // The key is configured, not declared: the source may hold several
    // versions of a row, and the newest by updated_at must win.
    source
        .execute(
            "CREATE TABLE {schema}.o (id int, v text, updated_at timestamptz);
             INSERT INTO {schema}.o VALUES (1, 'a', now() - interval '50 minutes'),
                                           (2, 'b', now() - interval '40 minutes')",
        )
        .await;
    let mut entry = source.dataset("o", "o", "");
    entry.push_str(
        "    time_column: updated_at\n    acceleration:\n      refresh_mode: append\n      refresh_append_overlap: 1h\n      primary_key: id\n",
    );
    let server = Server::start(&entry).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let contents = "SELECT id || '=' || v FROM o ORDER BY id";
    assert_eq!(texts(&replica, contents).await, ["1=a", "2=b"]);
    source
        .execute(
            "UPDATE {schema}.o SET v = 'a2', updated_at = now() - interval '10 minutes' WHERE id = 1;
             INSERT INTO {schema}.o VALUES (3, 'c', now() - interval '5 minutes'),
                                           (2, 'b-older', now() - interval '45 minutes'),
                                           (4, 'd-old', now() - interval '2 minutes'),
                                           (4, 'd', now() - interval '1 minute')",
        )
        .await;
    server.refresh("o").await;
    let expected = ["1=a2", "2=b", "3=c", "4=d"];
    assert_eq!(texts(&replica, contents).await, expected);
    // The primary-key index follows: point lookups find the new versions.
    let lookup = replica
        .prepare("SELECT v FROM o WHERE id = $1")
        .await
        .unwrap();
    for (id, v) in [(1, "a2"), (2, "b"), (3, "c"), (4, "d")] {
        let rows = replica.query(&lookup, &[&id]).await.unwrap();
        let found: Vec<String> = rows.iter().map(|row| row.get(0)).collect();
        assert_eq!(found, [v], "id {id}");
    }
    server.refresh("o").await;
    assert_eq!(texts(&replica, contents).await, expected);
    // An update that keeps its time (inside the overlap) still replaces.
    source
        .execute("UPDATE {schema}.o SET v = 'c2' WHERE id = 3")
        .await;
    server.refresh("o").await;
    assert_eq!(
        texts(&replica, contents).await,
        ["1=a2", "2=b", "3=c2", "4=d"]
    );
    let rows = replica.query(&lookup, &[&3i32]).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, String>(0), "c2");
}

#[tokio::test]
async fn the_first_append_load_is_windowed() {
    let source = SourceSchema::create("append_window").await;
    source
        .execute(
            "CREATE TABLE {schema}.w (id int PRIMARY KEY, at timestamptz);
             INSERT INTO {schema}.w VALUES (1, now() - interval '3 days'),
                                           (2, now() - interval '1 hour')",
        )
        .await;
    let mut entry = source.dataset("w", "w", "");
    entry.push_str(
        "    time_column: at\n    acceleration:\n      refresh_mode: append\n      refresh_data_window: 1d\n",
    );
    let server = Server::start(&entry).await;
    server.wait_ready().await;
    let replica = server.client().await;
    assert_eq!(ids(&replica, "w").await, [2]);
    source
        .execute("INSERT INTO {schema}.w VALUES (3, now())")
        .await;
    server.refresh("w").await;
    assert_eq!(ids(&replica, "w").await, [2, 3]);
}

#[tokio::test]
async fn the_partition_column_prunes_the_source_query() {
    // In memory, and in files queried in place.
    for engine in ["arrow", "duckdb", "sqlite"] {
        partition_column_prunes(engine).await;
    }
}

async fn partition_column_prunes(engine: &str) {
    let source = SourceSchema::create(&format!("append_partition_{engine}")).await;
    source
        .execute(
            "CREATE TABLE {schema}.p (id int, created_at timestamptz, created_day date);
             INSERT INTO {schema}.p
             SELECT id, at, (at AT TIME ZONE 'UTC')::date
             FROM (VALUES (1, now() - interval '3 days'), (2, now() - interval '2 days'),
                          (3, now() - interval '1 minute')) AS rows(id, at)",
        )
        .await;
    let relay = Relay::start(None).await;
    let folder = tempfile::tempdir().unwrap();
    let storage = match engine {
        "arrow" => String::new(),
        _ => format!(
            "      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
            folder.path().join("p.db").display()
        ),
    };
    let entry = format!(
        "  - from: postgres:{schema}.p\n    name: p\n    params: {{ pg_host: 127.0.0.1, pg_port: {port}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    time_column: created_at\n    time_partition_column: created_day\n    time_partition_format: date\n    acceleration:\n      refresh_mode: append\n      refresh_append_overlap: 1h\n{storage}",
        schema = source.name,
        port = relay.port,
    );
    let server = Server::start(&entry).await;
    server.wait_ready().await;
    let replica = server.client().await;
    assert_eq!(ids(&replica, "p").await, [1, 2, 3], "{engine}");
    relay.clear_sent();
    source
        .execute("INSERT INTO {schema}.p VALUES (4, now(), (now() AT TIME ZONE 'UTC')::date)")
        .await;
    server.refresh("p").await;
    assert_eq!(ids(&replica, "p").await, [1, 2, 3, 4], "{engine}");
    // The newest partition of the rows older than the read (row 2's day)
    // bounds the partition column.
    let sent = relay.sent_text();
    let day: String = source
        .client
        .query_one(
            &format!(
                "SELECT created_day::text FROM {}.p WHERE id = 2",
                source.name
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        sent.contains("\"created_day\" >=") && sent.contains(&day),
        "{engine}: no partition bound on created_day >= {day} in what pgaccel sent: {sent}"
    );
    server.runtime.shutdown().await;
}

fn write_file(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

fn set_modified(path: &Path, at: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

#[tokio::test]
async fn a_folder_appends_only_new_and_modified_files_by_last_modified() {
    let folder = tempfile::tempdir().unwrap();
    let first = folder.path().join("a.csv");
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    write_file(&first, "id,v\n1,one\n2,two\n");
    set_modified(&first, an_hour_ago);
    let entry = format!(
        "  - from: file:{}\n    name: files\n    params: {{ file_format: csv }}\n    time_column: last_modified\n    acceleration:\n      refresh_mode: append\n",
        folder.path().display()
    );
    let server = Server::start(&entry).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let contents = "SELECT id || '=' || v FROM files ORDER BY id";
    assert_eq!(texts(&replica, contents).await, ["1=one", "2=two"]);
    let held_modified: Vec<String> = texts(
        &replica,
        "SELECT DISTINCT CAST(last_modified AS TEXT) FROM files",
    )
    .await;
    assert_eq!(held_modified.len(), 1, "{held_modified:?}");
    // A new file is read. The old one is rewritten but keeps its time: had
    // it been read again, row 9 would appear.
    write_file(&folder.path().join("b.csv"), "id,v\n3,three\n");
    write_file(&first, "id,v\n9,nine\n");
    set_modified(&first, an_hour_ago);
    server.refresh("files").await;
    assert_eq!(
        texts(&replica, contents).await,
        ["1=one", "2=two", "3=three"]
    );
    // Once modified, it is read again (appended: the rows it held stay).
    set_modified(&first, SystemTime::now());
    server.refresh("files").await;
    assert_eq!(
        texts(&replica, contents).await,
        ["1=one", "2=two", "3=three", "9=nine"]
    );
    server.refresh("files").await;
    assert_eq!(texts(&replica, contents).await.len(), 4);
}

#[tokio::test]
async fn a_last_modified_column_in_the_data_takes_precedence_over_file_times() {
    let folder = tempfile::tempdir().unwrap();
    write_file(
        &folder.path().join("a.csv"),
        "id,last_modified\n1,2026-01-02T00:00:00Z\n",
    );
    let entry = format!(
        "  - from: file:{}\n    name: own_times\n    params: {{ file_format: csv }}\n    time_column: last_modified\n    acceleration:\n      refresh_mode: append\n",
        folder.path().display()
    );
    let server = Server::start(&entry).await;
    server.wait_ready().await;
    let replica = server.client().await;
    assert_eq!(ids(&replica, "own_times").await, [1]);
    // A new file whose rows are older by their own column is not appended,
    // however new the file; a newer row is.
    write_file(
        &folder.path().join("b.csv"),
        "id,last_modified\n2,2025-06-01T00:00:00Z\n3,2026-02-01T00:00:00Z\n",
    );
    server.refresh("own_times").await;
    assert_eq!(ids(&replica, "own_times").await, [1, 3]);
}
