//! Change data capture from the real PostgreSQL's logical decoding
//! (`wal_level = logical`, set by tests/cdc/setup.sh).

use std::process::Command;
use std::sync::Arc;

use pgaccel::source::pgoutput::{self, Datum, Lsn, Message, Old};

use crate::support::{
    Endpoint, MYSQL_URL, MysqlDatabase, Process, SOURCE_DSN, Server, SourceSchema, connect,
    counter, eventually, logs, simple_rows, text_rows,
};

/// A publication and a logical replication slot of one test, dropped at the
/// end (also when the test panics): a slot left behind would hold WAL.
struct Slot {
    name: String,
    publication: String,
}

impl Slot {
    async fn create(source: &SourceSchema, tables: &str) -> Slot {
        let wal_level: String = source
            .client
            .query_one("SHOW wal_level", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            wal_level, "logical",
            "the CDC tests need wal_level = logical: run tests/cdc/setup.sh"
        );
        let slot = Slot {
            name: format!("{}_slot", source.name),
            publication: format!("{}_pub", source.name),
        };
        source
            .execute(&format!(
                "CREATE PUBLICATION {} FOR TABLE {tables}",
                slot.publication
            ))
            .await;
        source
            .client
            .execute(
                "SELECT pg_create_logical_replication_slot($1, 'pgoutput')",
                &[&slot.name],
            )
            .await
            .expect("a logical replication slot");
        slot
    }

    /// The messages decoded since the last call, with their LSNs.
    async fn changes(&self, source: &SourceSchema) -> Vec<(Lsn, Message)> {
        source
            .client
            .query(
                "SELECT lsn::text, data FROM pg_logical_slot_get_binary_changes($1, NULL, NULL, 'proto_version', '1', 'publication_names', $2)",
                &[&self.name, &self.publication],
            )
            .await
            .expect("the slot's changes")
            .iter()
            .map(|row| {
                let lsn: String = row.get(0);
                let data: Vec<u8> = row.get(1);
                let message = pgoutput::decode(&data)
                    .unwrap_or_else(|e| panic!("{e}: {data:?}"));
                (lsn.parse().unwrap(), message)
            })
            .collect()
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // Synchronous on purpose: runs even while a failed test unwinds.
        let _ = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-q", "-c"])
            .arg(format!(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{}'; DROP PUBLICATION IF EXISTS {}",
                self.name, self.publication
            ))
            .output();
    }
}

fn text(value: &str) -> Datum {
    Datum::Text(value.as_bytes().to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgoutput_messages_of_the_real_postgres_decode() {
    let source = SourceSchema::create("pgoutput").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, name text, big text)")
        .await;
    let slot = Slot::create(&source, &format!("{}.t", source.name)).await;
    // A value large enough to be stored out of line: an update that does
    // not touch it sends it as unchanged.
    // One transaction each (a multi-statement query would be one).
    for statement in [
        "INSERT INTO {schema}.t SELECT 1, 'a', string_agg(md5(g::text), '') FROM generate_series(1, 3000) g",
        "INSERT INTO {schema}.t VALUES (3, NULL, 'small')",
        "UPDATE {schema}.t SET name = 'b' WHERE id = 1",
        "UPDATE {schema}.t SET id = 2 WHERE id = 1",
        "DELETE FROM {schema}.t WHERE id = 3",
        "BEGIN; INSERT INTO {schema}.t VALUES (4, 'd', 'x'); INSERT INTO {schema}.t VALUES (5, 'e', 'y'); COMMIT",
        "TRUNCATE {schema}.t",
    ] {
        source.execute(statement).await;
    }
    let changes = slot.changes(&source).await;
    let messages: Vec<&Message> = changes.iter().map(|(_, m)| m).collect();

    // Seven transactions, each between Begin and Commit, in commit order.
    let begins = messages
        .iter()
        .filter(|m| matches!(m, Message::Begin { .. }))
        .count();
    assert_eq!(begins, 7, "{messages:#?}");
    let mut last_commit = Lsn(0);
    for (lsn, message) in &changes {
        if let Message::Commit { end_lsn, .. } = message {
            assert!(*end_lsn > last_commit && *lsn <= *end_lsn);
            last_commit = *end_lsn;
        }
    }

    let Some(Message::Relation(relation)) = messages
        .iter()
        .find(|m| matches!(m, Message::Relation(_)))
        .copied()
    else {
        panic!("no relation message: {messages:#?}")
    };
    assert_eq!(relation.namespace, source.name);
    assert_eq!(relation.name, "t");
    assert_eq!(relation.replica_identity, b'd');
    let columns: Vec<(&str, bool, u32)> = relation
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.key, c.type_oid))
        .collect();
    assert_eq!(
        columns,
        [("id", true, 23), ("name", false, 25), ("big", false, 25)]
    );

    let data: Vec<&Message> = messages
        .iter()
        .filter(|m| {
            !matches!(
                m,
                Message::Begin { .. } | Message::Commit { .. } | Message::Relation(_)
            )
        })
        .copied()
        .collect();
    let Message::Insert { new, .. } = data[0] else {
        panic!("{:?}", data[0])
    };
    assert_eq!(new.0[..2], [text("1"), text("a")]);
    assert!(matches!(&new.0[2], Datum::Text(big) if big.len() == 96_000));
    assert_eq!(
        data[1],
        &Message::Insert {
            relation: relation.oid,
            new: pgoutput::Tuple(vec![text("3"), Datum::Null, text("small")]),
        }
    );
    // The key did not change: no old tuple; the TOASTed value is unchanged.
    assert_eq!(
        data[2],
        &Message::Update {
            relation: relation.oid,
            old: None,
            new: pgoutput::Tuple(vec![text("1"), text("b"), Datum::Unchanged]),
        }
    );
    // The key changed: the old key comes first.
    let Message::Update {
        old: Some(Old::Key(old)),
        new,
        ..
    } = data[3]
    else {
        panic!("{:?}", data[3])
    };
    assert_eq!(old.0[0], text("1"));
    assert_eq!(new.0[..2], [text("2"), text("b")]);
    assert_eq!(
        data[4],
        &Message::Delete {
            relation: relation.oid,
            old: Old::Key(pgoutput::Tuple(vec![text("3"), Datum::Null, Datum::Null])),
        }
    );
    assert!(matches!(data[5], Message::Insert { new, .. } if new.0[0] == text("4")));
    assert!(matches!(data[6], Message::Insert { new, .. } if new.0[0] == text("5")));
    assert_eq!(
        data[7],
        &Message::Truncate {
            relations: vec![relation.oid],
            cascade: false,
            restart_identity: false,
        }
    );
    assert_eq!(data.len(), 8);

    // Nothing is decoded twice: the slot has moved on.
    assert!(slot.changes(&source).await.is_empty());
}

/// Drops the slot and publication a `refresh_mode: changes` dataset made,
/// also when the test fails: the slot's stream is ended first (pgaccel may
/// still hold it while the test unwinds).
pub(crate) struct StreamObjects {
    slot: String,
    publication: String,
}

impl StreamObjects {
    pub(crate) fn of(source: &SourceSchema) -> StreamObjects {
        StreamObjects {
            slot: format!("{}_slot", source.name),
            publication: format!("{}_pub", source.name),
        }
    }

    /// The dataset's `params` entries naming them.
    fn params(&self) -> String {
        format!(
            "pg_replication_slot: {}, pg_publication: {}",
            self.slot, self.publication
        )
    }
}

impl Drop for StreamObjects {
    fn drop(&mut self) {
        let _ = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-q", "-c"])
            .arg(format!(
                "DO $$ BEGIN FOR i IN 1..100 LOOP BEGIN \
                   PERFORM pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active_pid IS NOT NULL; \
                   PERFORM pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{slot}'; \
                   EXIT; \
                 EXCEPTION WHEN object_in_use THEN PERFORM pg_sleep(0.05); END; END LOOP; END $$; \
                 DROP PUBLICATION IF EXISTS {publication}",
                slot = self.slot,
                publication = self.publication
            ))
            .output();
    }
}

/// A `refresh_mode: changes` dataset of table `t` of `source`.
pub(crate) fn changes_dataset(
    source: &SourceSchema,
    objects: &StreamObjects,
    name: &str,
    more: &str,
) -> String {
    format!(
        "  - from: postgres:{schema}.t\n    name: {name}\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: postgres, pg_sslmode: disable, {params} }}\n    acceleration:\n      refresh_mode: changes\n{more}",
        schema = source.name,
        params = objects.params()
    )
}

/// Waits until pgaccel answers `query` (over dataset `name`) exactly as
/// PostgreSQL answers it over the source table, as text.
async fn converges(server: &Endpoint, source: &SourceSchema, name: &str, query: &str) {
    let replica = server.client().await;
    let primary_query = query.replace("{table}", &format!("{}.t", source.name));
    let replica_query = query.replace("{table}", name);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let expected = simple_rows(&source.client, &primary_query).await;
        let found = replica.simple_query(&replica_query).await.map(text_rows);
        match found {
            Ok(found) if found == expected => return,
            found => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{replica_query}: pgaccel still answers {found:?}, PostgreSQL {expected:?}; status {}; log:\n{}",
                    server.dataset_status(name).await,
                    dataset_log(name)
                );
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `dataset_acceleration_changes_applied_total` of dataset `name` counts
/// inserts, updates, deletes and truncates.
async fn every_kind_of_change_is_counted(server: &Endpoint, name: &str) {
    for op in ["insert", "update", "delete", "truncate"] {
        let applied = counter(
            server,
            "dataset_acceleration_changes_applied_total",
            name,
            "op",
            op,
        )
        .await;
        assert!(applied > 0, "no {op} counted for {name}");
    }
}

/// The lines of the log that name dataset `name`.
fn dataset_log(name: &str) -> String {
    logs()
        .into_iter()
        .filter(|line| line.contains(name))
        .collect::<Vec<_>>()
        .join("\n")
}

const TYPED_TABLE: &str = "CREATE TABLE {schema}.t (
    id int8 PRIMARY KEY, name text, amount numeric(12,2), ratio float8, flag bool,
    day date, local timestamp, at timestamptz, raw bytea, tags int4[], doc jsonb,
    ref uuid, span interval, big text)";

const TYPED_DUMP: &str = "SELECT id, name, amount, ratio, flag, day, local, at, raw, tags, doc, ref, span, length(big) FROM {table} ORDER BY id";

/// The copy and every kind of change, each step compared with
/// PostgreSQL's own answer: inserts, updates (of a TOASTed row without
/// touching its large value, and of the key), deletes, a transaction of
/// several statements, a truncate. The status shows the applied position
/// and the metrics count the changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_mode_follows_every_kind_of_change() {
    let source = SourceSchema::create("changes").await;
    let objects = StreamObjects::of(&source);
    source.execute(TYPED_TABLE).await;
    source
        .execute(
            "INSERT INTO {schema}.t SELECT g, 'row ' || g, g * 1.25, g / 3.0, g % 2 = 0,
                 date '2024-01-01' + g, timestamp '2024-01-01 10:00:00.5' + g * interval '1 hour',
                 timestamptz '2024-01-01 10:00:00+02' + g * interval '1 minute', decode('00ff' || lpad(g::text, 4, '0'), 'hex'),
                 ARRAY[g, NULL, -g], jsonb_build_object('g', g, 'list', jsonb_build_array(1, 'two')),
                 md5(g::text)::uuid, make_interval(0, 1, 0, g, 4, 5, 6.5), NULL
             FROM generate_series(1, 50) g",
        )
        .await;
    let name = "followed";
    let server = Server::start(&changes_dataset(&source, &objects, name, "")).await;
    server
        .wait_for_status(name, |s| {
            s["status"] == "Ready" || s["error_message"].is_string()
        })
        .await;
    converges(&server, &source, name, TYPED_DUMP).await;
    let status = server
        .wait_for_status(name, |s| s["changes"]["position"].is_string())
        .await;
    assert_eq!(status["status"], "Ready", "{status}");
    // The stream is applied on its own default-priority threads.
    let threads: Vec<String> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim_end().to_owned())
        .collect();
    assert!(
        // Thread names are cut to 15 bytes.
        threads
            .iter()
            .any(|name| name.starts_with("cdc-apply-work")),
        "{threads:?}"
    );

    for step in [
        "INSERT INTO {schema}.t (id, name, big) SELECT 100, 'toasted', string_agg(md5(g::text), '') FROM generate_series(1, 3000) g",
        "INSERT INTO {schema}.t (id, name, amount, day, at, tags, doc, span) VALUES (101, 'odd values', -0.01, '0044-03-15 BC', '1969-12-31 23:59:59.999999-08', '{}', '\"text\"', '-1 year -2 days')",
        "UPDATE {schema}.t SET name = 'updated, big kept' WHERE id = 100",
        "UPDATE {schema}.t SET id = 1000, ratio = 'NaN' WHERE id = 1",
        "DELETE FROM {schema}.t WHERE id BETWEEN 10 AND 20",
        "BEGIN; INSERT INTO {schema}.t (id, name) VALUES (200, 'first'); UPDATE {schema}.t SET name = 'second' WHERE id = 200; UPDATE {schema}.t SET flag = NULL WHERE id < 5; DELETE FROM {schema}.t WHERE id = 2; COMMIT",
    ] {
        source.execute(step).await;
        converges(&server, &source, name, TYPED_DUMP).await;
    }
    source
        .execute("TRUNCATE {schema}.t; INSERT INTO {schema}.t (id, name) VALUES (7, 'after the truncate')")
        .await;
    converges(&server, &source, name, TYPED_DUMP).await;
    // A key lookup finds the row a change inserted (the index follows).
    let replica = server.client().await;
    let found = simple_rows(&replica, &format!("SELECT name FROM {name} WHERE id = 7")).await;
    assert_eq!(found, [[Some("after the truncate".to_owned())]]);

    let status = server.dataset_status(name).await;
    let position: String = status["changes"]["position"].as_str().unwrap().to_owned();
    let flushed: String = source
        .client
        .query_one(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1",
            &[&objects.slot],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!position.is_empty() && !flushed.is_empty(), "{status}");
    every_kind_of_change_is_counted(&server, name).await;
    server.runtime.shutdown().await;
}

/// A stream over a copy sorted by `sort_by`: the copy's rows are sorted,
/// and every change finds the rows it replaces or removes through the key
/// index built after the sort; range filters answer as PostgreSQL does
/// while changes move rows out of their sorted place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sorted_copy_follows_every_change() {
    let source = SourceSchema::create("changes_sorted").await;
    let objects = StreamObjects::of(&source);
    source
        .execute(
            "CREATE TABLE {schema}.t (id int8 PRIMARY KEY, day date, v text);
             INSERT INTO {schema}.t SELECT g, date '2024-01-01' + (g * 7919) % 366, 'v' || g
             FROM generate_series(1, 30000) g ORDER BY md5(g::text)",
        )
        .await;
    let name = "sorted_stream";
    let server = Server::start(&changes_dataset(
        &source,
        &objects,
        name,
        "      sort_by: day\n",
    ))
    .await;
    server
        .wait_for_status(name, |s| {
            s["status"] == "Ready" || s["error_message"].is_string()
        })
        .await;
    let queries = [
        "SELECT count(*), sum(id), min(v) FROM {table} WHERE day >= date '2024-03-01' AND day < date '2024-03-08'",
        "SELECT count(*), sum(id) FROM {table} WHERE day > date '2024-12-20'",
        "SELECT id, day, v FROM {table} WHERE id IN (1, 7919, 15000, 29999, 30001) ORDER BY id",
        "SELECT count(*), sum(id) FROM {table}",
    ];
    for query in queries {
        converges(&server, &source, name, query).await;
    }
    for step in [
        "UPDATE {schema}.t SET day = date '2024-03-03' WHERE id % 100 = 1",
        "UPDATE {schema}.t SET day = date '2024-12-31', v = 'moved' WHERE day = date '2024-03-02'",
        "DELETE FROM {schema}.t WHERE id % 7 = 0",
        "INSERT INTO {schema}.t SELECT g, date '2024-03-05', 'new' FROM generate_series(30001, 30500) g",
    ] {
        source.execute(step).await;
        for query in queries {
            converges(&server, &source, name, query).await;
        }
    }
    let replica = server.client().await;
    let found = simple_rows(&replica, &format!("SELECT v FROM {name} WHERE id = 30001")).await;
    assert_eq!(found, [[Some("new".to_owned())]]);
    server.runtime.shutdown().await;
}

/// Rows written while the table is being copied (at the start, and again
/// for an on-demand refresh while the stream goes on) are all there once
/// the writer stops: each copy and the stream meet with nothing lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_written_during_the_copy_are_not_lost() {
    let source = SourceSchema::create("changes_copy").await;
    let objects = StreamObjects::of(&source);
    source
        .execute("CREATE TABLE {schema}.t (id int8 PRIMARY KEY, n int8 NOT NULL)")
        .await;
    source
        .execute("INSERT INTO {schema}.t SELECT g, 0 FROM generate_series(1, 200000) g")
        .await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = Arc::clone(&stop);
        let schema = source.name.clone();
        tokio::spawn(async move {
            let client = connect(SOURCE_DSN).await;
            let mut next = 1_000_000i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                client
                    .batch_execute(&format!(
                        "INSERT INTO {schema}.t VALUES ({next}, 1); UPDATE {schema}.t SET n = n + 1 WHERE id = {}",
                        next % 200_000 + 1
                    ))
                    .await
                    .unwrap();
                next += 1;
            }
            next - 1_000_000
        })
    };
    let name = "copied_while_written";
    let server = Server::start(&changes_dataset(&source, &objects, name, "")).await;
    server.wait_ready().await;
    // An on-demand refresh copies the table again while the writer goes
    // on and the stream keeps applying; what it applies meanwhile is
    // replayed on the new copy.
    let (status, body) = server
        .post(&format!("/v1/datasets/{name}/acceleration/refresh"))
        .await;
    assert_eq!(status, 201, "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !logs()
        .iter()
        .any(|line| line.contains(name) && line.contains("copied the table again"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the copy taken while streaming did not replace the served rows: {}\n{}",
            server.dataset_status(name).await,
            dataset_log(name)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.await.unwrap();
    assert!(written > 0, "the writer wrote nothing");
    converges(
        &server,
        &source,
        name,
        "SELECT count(*), sum(id), sum(n), count(*) FILTER (WHERE n > 0) FROM {table}",
    )
    .await;
    server.runtime.shutdown().await;
}

/// A file acceleration keeps its stream position: after a restart it
/// serves its rows and resumes the slot where it stopped, applying what
/// was committed meanwhile, without copying the table again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_acceleration_resumes_its_stream_after_a_restart() {
    for engine in ["duckdb", "sqlite"] {
        let source = SourceSchema::create(&format!("changes_resume_{engine}")).await;
        let objects = StreamObjects::of(&source);
        source
            .execute("CREATE TABLE {schema}.t (id int8 PRIMARY KEY, name text)")
            .await;
        source
            .execute("INSERT INTO {schema}.t SELECT g, 'row ' || g FROM generate_series(1, 100) g")
            .await;
        let folder = tempfile::tempdir().unwrap();
        let file = folder.path().join(format!("t.{engine}.db"));
        let name = format!("resumed_{engine}");
        let config = changes_dataset(
            &source,
            &objects,
            &name,
            &format!(
                "      engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{}' }}\n",
                file.display()
            ),
        );
        let dump = "SELECT id, name FROM {table} ORDER BY id";
        let server = Server::start(&config).await;
        server.wait_ready().await;
        source
            .execute("UPDATE {schema}.t SET name = 'before the restart' WHERE id <= 10")
            .await;
        converges(&server, &source, &name, dump).await;
        server.runtime.shutdown().await;

        source
            .execute("DELETE FROM {schema}.t WHERE id > 90; INSERT INTO {schema}.t VALUES (500, 'while down'); UPDATE {schema}.t SET name = 'while down' WHERE id = 1")
            .await;
        let copies_before = copies(&name);
        let server = Server::start(&config).await;
        server.wait_ready().await;
        converges(&server, &source, &name, dump).await;
        assert_eq!(
            copies(&name),
            copies_before,
            "{engine}: the restart copied the table again instead of resuming"
        );
        assert!(
            logs().iter().any(|line| line.contains(&name)
                && line.contains("in place, and resuming its change stream")),
            "{engine}: no resume of the file in place in the log"
        );
        source
            .execute("INSERT INTO {schema}.t VALUES (501, 'after the restart')")
            .await;
        converges(&server, &source, &name, dump).await;
        // An on-demand refresh copies the table into the file again; the
        // stream goes on from the new copy.
        source
            .execute("UPDATE {schema}.t SET name = 'before the copy' WHERE id = 2")
            .await;
        // Applied changes move the last refresh time too: the copy is
        // waited for by its log line.
        server.refresh(&name).await;
        eventually("the table was copied again", || async {
            copies(&name) == copies_before + 1
        })
        .await;
        source
            .execute("INSERT INTO {schema}.t VALUES (502, 'after the copy')")
            .await;
        converges(&server, &source, &name, dump).await;
        server.runtime.shutdown().await;
    }
}

/// How many times dataset `name` copied its table, by the log.
fn copies(name: &str) -> usize {
    logs()
        .iter()
        .filter(|line| {
            line.contains(name)
                && line.contains("copied the table in a snapshot at a known stream position")
        })
        .count()
}

/// What stops a stream is reported with what to change: a table without a
/// replica identity, a role that may not replicate, a column added to the
/// table while it streams (the dataset keeps serving its last state).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_stops_a_stream_is_reported_with_the_fix() {
    let source = SourceSchema::create("changes_refused").await;
    let objects = StreamObjects::of(&source);
    source
        .execute("CREATE TABLE {schema}.t (id int8, name text)")
        .await;
    let name = "keyless";
    let server = Server::start(&changes_dataset(&source, &objects, name, "")).await;
    let status = server
        .wait_for_status(name, |s| s["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(message.contains("REPLICA IDENTITY FULL"), "{message}");
    server.runtime.shutdown().await;

    let role = format!("{}_reader", source.name);
    source
        .execute(&format!(
            "CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {{schema}} TO {role}; ALTER TABLE {{schema}}.t ADD PRIMARY KEY (id); GRANT SELECT ON {{schema}}.t TO {role}"
        ))
        .await;
    let entry = changes_dataset(&source, &objects, "unprivileged", "")
        .replace("pg_user: postgres", &format!("pg_user: {role}"));
    let server = Server::start(&entry).await;
    let status = server
        .wait_for_status("unprivileged", |s| s["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap().to_owned();
    server.runtime.shutdown().await;
    source
        .execute(&format!("REVOKE ALL ON SCHEMA {{schema}} FROM {role}; REVOKE ALL ON {{schema}}.t FROM {role}; DROP ROLE {role}"))
        .await;
    assert!(
        message.contains(&format!("ALTER ROLE \"{role}\" REPLICATION")),
        "{message}"
    );

    source
        .execute("INSERT INTO {schema}.t VALUES (1, 'one')")
        .await;
    let name = "reshaped";
    let server = Server::start(&changes_dataset(&source, &objects, name, "")).await;
    server.wait_ready().await;
    converges(&server, &source, name, "SELECT * FROM {table} ORDER BY id").await;
    source
        .execute("ALTER TABLE {schema}.t ADD COLUMN extra int; INSERT INTO {schema}.t VALUES (2, 'two', 2)")
        .await;
    let status = server
        .wait_for_status(name, |s| s["status"] == "Error")
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(message.contains("column \"extra\" was added"), "{message}");
    // Still served, as it was.
    let replica = server.client().await;
    assert_eq!(
        simple_rows(&replica, &format!("SELECT id, name FROM {name}")).await,
        [[Some("1".to_owned()), Some("one".to_owned())]]
    );
    server.runtime.shutdown().await;
}

/// A dataset removed from the configuration: its slot is dropped at the
/// next start with `drop_slot_on_remove: true`, and left (named in a
/// warning) without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_dataset_drops_its_slot_only_when_asked() {
    let source = SourceSchema::create("changes_removed").await;
    let dropped = StreamObjects {
        slot: format!("{}_dropped", source.name),
        publication: format!("{}_pub_dropped", source.name),
    };
    let left = StreamObjects {
        slot: format!("{}_left", source.name),
        publication: format!("{}_pub_left", source.name),
    };
    source
        .execute("CREATE TABLE {schema}.t (id int8 PRIMARY KEY); CREATE TABLE {schema}.u (id int8 PRIMARY KEY)")
        .await;
    let entry = |table: &str, name: &str, objects: &StreamObjects, extra: &str| {
        format!(
            "  - from: postgres:{schema}.{table}\n    name: {name}\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: postgres, pg_sslmode: disable, {params}{extra} }}\n    acceleration:\n      refresh_mode: changes\n",
            schema = source.name,
            params = objects.params()
        )
    };
    let folder = tempfile::tempdir().unwrap();
    let both = format!(
        "{}{}",
        entry(
            "t",
            "dropped_on_remove",
            &dropped,
            ", drop_slot_on_remove: true"
        ),
        entry("u", "left_on_remove", &left, "")
    );
    let process = Process::start(folder.path(), "", &both);
    process.wait_ready().await;
    for name in ["dropped_on_remove", "left_on_remove"] {
        process
            .wait_for_status(name, |s| s["changes"]["position"].is_string())
            .await;
    }
    process.terminate();
    drop(process);

    let slot_exists = |slot: String| {
        let client = &source.client;
        async move {
            client
                .query_opt(
                    "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1",
                    &[&slot],
                )
                .await
                .unwrap()
                .is_some()
        }
    };
    assert!(slot_exists(dropped.slot.clone()).await && slot_exists(left.slot.clone()).await);
    // Only a full-refresh dataset of the same source remains.
    let remaining = source.dataset("t", "still_here", "");
    let process = Process::start(folder.path(), "", &remaining);
    process.wait_ready().await;
    eventually("the removed dataset's slot is dropped", || {
        let slot = dropped.slot.clone();
        let exists = slot_exists(slot);
        async move { !exists.await }
    })
    .await;
    assert!(
        slot_exists(left.slot.clone()).await,
        "a slot without drop_slot_on_remove is kept"
    );
    eventually("a warning names the slot left behind", || {
        let found = process.log_text().contains(&left.slot)
            && process.log_text().contains("is left on the source");
        async move { found }
    })
    .await;
}

/// The stream survives its connection: when the source ends it (here the
/// walsender is terminated), pgaccel reconnects and resumes the slot from
/// the last applied position, applying what was committed meanwhile once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_stream_resumes_where_it_stopped() {
    let source = SourceSchema::create("changes_lost").await;
    let objects = StreamObjects::of(&source);
    source
        .execute("CREATE TABLE {schema}.t (id int8 PRIMARY KEY, n int8 NOT NULL); INSERT INTO {schema}.t SELECT g, 0 FROM generate_series(1, 100) g")
        .await;
    let name = "lost_stream";
    let server = Server::start(&changes_dataset(&source, &objects, name, "")).await;
    server.wait_ready().await;
    let dump = "SELECT count(*), sum(n) FROM {table}";
    source
        .execute("UPDATE {schema}.t SET n = n + 1 WHERE id <= 50")
        .await;
    converges(&server, &source, name, dump).await;
    let ended: i64 = source
        .client
        .query_one(
            "SELECT count(pg_terminate_backend(active_pid)) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL",
            &[&objects.slot],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(ended, 1, "the stream's connection was not found");
    // Committed while no stream runs: applied once the stream resumes.
    source
        .execute("UPDATE {schema}.t SET n = n + 10 WHERE id > 50; INSERT INTO {schema}.t VALUES (1000, 7)")
        .await;
    converges(&server, &source, name, dump).await;
    assert_eq!(
        copies(name),
        1,
        "the lost stream was resumed, not copied again"
    );
    server.runtime.shutdown().await;
}

/// A table without a primary key streams with `REPLICA IDENTITY FULL` and
/// the key given as `acceleration.primary_key`; without that key the
/// dataset says what to set, and drops the slot it made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_without_a_primary_key_streams_by_the_configured_key() {
    let source = SourceSchema::create("changes_full_identity").await;
    let objects = StreamObjects::of(&source);
    source
        .execute("CREATE TABLE {schema}.t (code text NOT NULL, n int8); ALTER TABLE {schema}.t REPLICA IDENTITY FULL; INSERT INTO {schema}.t VALUES ('a', 1), ('b', 2)")
        .await;
    let name = "keyed_by_config";
    let server = Server::start(&changes_dataset(
        &source,
        &objects,
        name,
        "      primary_key: code\n",
    ))
    .await;
    server.wait_ready().await;
    let dump = "SELECT code, n FROM {table} ORDER BY code";
    for step in [
        "UPDATE {schema}.t SET n = 20 WHERE code = 'b'",
        "UPDATE {schema}.t SET code = 'c' WHERE code = 'a'",
        "DELETE FROM {schema}.t WHERE code = 'b'; INSERT INTO {schema}.t VALUES ('d', NULL)",
    ] {
        source.execute(step).await;
        converges(&server, &source, name, dump).await;
    }
    server.runtime.shutdown().await;

    let name = "keyless_full_identity";
    let server = Server::start(&changes_dataset(&source, &objects, name, "")).await;
    let status = server
        .wait_for_status(name, |s| s["error_message"].is_string())
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains("has no primary key") && message.contains("acceleration.primary_key"),
        "{message}"
    );
    // The slot made for the copy does not stay behind to keep WAL.
    eventually("the failed copy's slot is dropped", || {
        let slot = objects.slot.clone();
        let client = &source.client;
        async move {
            client
                .query_opt(
                    "SELECT 1 FROM pg_replication_slots WHERE slot_name = $1",
                    &[&slot],
                )
                .await
                .unwrap()
                .is_none()
        }
    })
    .await;
    server.runtime.shutdown().await;
}

/// An existing publication of several tables: pgaccel uses it as it is,
/// applies the changes of its own table and passes over the others'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_publication_streams_only_the_datasets_table() {
    let source = SourceSchema::create("changes_shared").await;
    let objects = StreamObjects::of(&source);
    source
        .execute(&format!(
            "CREATE TABLE {{schema}}.t (id int8 PRIMARY KEY, name text);
             CREATE TABLE {{schema}}.other (id int8 PRIMARY KEY, name text);
             CREATE PUBLICATION {} FOR TABLE {{schema}}.other, {{schema}}.t;
             INSERT INTO {{schema}}.t VALUES (1, 'one')",
            objects.publication
        ))
        .await;
    let name = "shared_publication";
    let server = Server::start(&changes_dataset(&source, &objects, name, "")).await;
    server.wait_ready().await;
    let dump = "SELECT id, name FROM {table} ORDER BY id";
    for step in [
        "INSERT INTO {schema}.other VALUES (1, 'elsewhere'); INSERT INTO {schema}.t VALUES (2, 'two')",
        "BEGIN; INSERT INTO {schema}.other VALUES (2, 'elsewhere'); UPDATE {schema}.other SET name = 'x'; COMMIT",
        "DELETE FROM {schema}.other; UPDATE {schema}.t SET name = 'uno' WHERE id = 1",
        "TRUNCATE {schema}.other",
        "INSERT INTO {schema}.t VALUES (3, 'after the others')",
    ] {
        source.execute(step).await;
        converges(&server, &source, name, dump).await;
    }
    let status = server.dataset_status(name).await;
    assert_eq!(status["status"], "Ready", "{status}");
    server.runtime.shutdown().await;
}

/// The global binlog settings of the shared MariaDB, which the binlog
/// checks read: the test that changes them for a moment holds this for
/// writing, the other binlog tests hold it for reading.
fn binlog_settings() -> &'static tokio::sync::RwLock<()> {
    static SETTINGS: std::sync::OnceLock<tokio::sync::RwLock<()>> = std::sync::OnceLock::new();
    SETTINGS.get_or_init(|| tokio::sync::RwLock::new(()))
}

/// The MariaDB row binlog of one table, read from a position taken before
/// its changes: each committed transaction once, in commit order, with its
/// rows' values; other tables' transactions and rolled back ones are not
/// there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mariadb_row_binlog_of_a_table_reads_by_transaction() {
    let _settings = binlog_settings().read().await;
    use mysql_async::Value;
    use pgaccel::source::binlog::{self, BinlogChange, BinlogReader};

    let database = MysqlDatabase::create("binlog").await;
    database
        .execute("CREATE TABLE {db}.t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(10,2)); CREATE TABLE {db}.other (id INT PRIMARY KEY)")
        .await;
    let pool = mysql_async::Pool::new(MYSQL_URL);
    let mut conn = pool.get_conn().await.unwrap();
    binlog::check(&mut conn, "binlog_test").await.unwrap();
    let from = binlog::current_position(&mut conn, "binlog_test")
        .await
        .unwrap();
    drop(conn);
    for statement in [
        "INSERT INTO {db}.t VALUES (1, 'one', 1.50), (2, 'two', NULL)",
        "INSERT INTO {db}.other VALUES (1)",
        "UPDATE {db}.t SET id = 10, name = 'ten' WHERE id = 1",
        "BEGIN; DELETE FROM {db}.t WHERE id = 2; INSERT INTO {db}.other VALUES (2); COMMIT",
        "BEGIN; INSERT INTO {db}.t VALUES (3, 'rolled back', 0); ROLLBACK",
        "INSERT INTO {db}.t VALUES (4, 'last', -2.25)",
    ] {
        database.execute(statement).await;
    }
    let reader_conn = pool.get_conn().await.unwrap();
    let server_id = 1_000_000 + std::process::id();
    let mut reader = BinlogReader::open(
        "binlog_test",
        reader_conn,
        server_id,
        &from,
        &database.name,
        "t",
    )
    .await
    .unwrap();
    let mut transactions: Vec<binlog::BinlogTransaction> = Vec::new();
    while transactions.len() < 4 {
        let next = tokio::time::timeout(std::time::Duration::from_secs(30), reader.next())
            .await
            .expect("a transaction within 30 s")
            .unwrap();
        match next {
            binlog::BinlogEvent::Transaction(transaction) => transactions.push(transaction),
            // Transactions of the other table.
            binlog::BinlogEvent::Passed(_) => {}
            other => panic!("{other:?}"),
        }
    }
    reader.close().await;
    let text = |value: &Value| match value {
        Value::NULL => "NULL".to_owned(),
        Value::Bytes(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::Int(n) => n.to_string(),
        other => format!("{other:?}"),
    };
    let rows = |values: &[Value]| values.iter().map(text).collect::<Vec<_>>().join("|");
    let changes: Vec<Vec<String>> = transactions
        .iter()
        .map(|transaction| {
            transaction
                .changes
                .iter()
                .map(|change| match change {
                    BinlogChange::Insert(after) => format!("insert {}", rows(after)),
                    BinlogChange::Update { before, after } => {
                        format!("update {} -> {}", rows(before), rows(after))
                    }
                    BinlogChange::Delete(before) => format!("delete {}", rows(before)),
                })
                .collect()
        })
        .collect();
    assert_eq!(
        changes,
        [
            vec![
                "insert 1|one|1.50".to_owned(),
                "insert 2|two|NULL".to_owned()
            ],
            vec!["update 1|one|1.50 -> 10|ten|1.50".to_owned()],
            vec!["delete 2|two|NULL".to_owned()],
            vec!["insert 4|last|-2.25".to_owned()],
        ]
    );
    // Each ends later than the one before, and after where reading began.
    let mut last = from.clone();
    for transaction in &transactions {
        assert!(transaction.end > last, "{} after {last}", transaction.end);
        last = transaction.end.clone();
    }
    pool.disconnect().await.unwrap();
}

const MARIADB_TYPED_TABLE: &str = "CREATE TABLE {db}.t (
    id int PRIMARY KEY, ti tinyint, tiu tinyint unsigned, siu smallint unsigned,
    mi mediumint unsigned, iu int unsigned, bi bigint, biu bigint unsigned,
    dec_ decimal(12,3), f float, d double, vc varchar(20), ch char(3), tx text,
    dt date, dtm datetime(3), ts timestamp(6) NULL, tm time, js json, bl blob,
    en enum('small','it''s large'), st set('a','b','c'), b1 bit(5));
    SET time_zone = '+00:00';
    INSERT INTO {db}.t VALUES (1, -128, 255, 65535, 16777215, 4294967295, -9223372036854775808,
        18446744073709551615, 123456789.125, 1.5, 2.25, 'varchar', 'abc', 'some text',
        '2026-11-30', '2026-11-30 12:34:56.789', '2026-11-30 12:34:56.123456', '23:59:58',
        '{\"a\": 1}', x'DEADBEEF', 'it''s large', 'a,c', b'10101');
    INSERT INTO {db}.t (id) VALUES (2);
    INSERT INTO {db}.t (id, vc, dec_) SELECT seq, concat('row ', seq), seq * 1.5 FROM seq_3_to_40";

/// Waits until dataset `followed` answers `SELECT *` exactly as a full
/// refresh of the same table (dataset `reference`, refreshed now) does.
async fn same_as_a_full_refresh(server: &Endpoint, followed: &str) {
    server.refresh("reference").await;
    let replica = server.client().await;
    let dump = |name: &str| format!("SELECT * FROM {name} ORDER BY id");
    let expected = simple_rows(&replica, &dump("reference")).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = replica.simple_query(&dump(followed)).await.map(text_rows);
        match found {
            Ok(found) if found == expected => return,
            found => assert!(
                std::time::Instant::now() < deadline,
                "{followed} still answers {found:?}\nwhere a full refresh answers {expected:?}\nstatus {}\nlog:\n{}",
                server.dataset_status(followed).await,
                dataset_log(followed)
            ),
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `refresh_mode: changes` on a MariaDB table follows its row binlog: the
/// consistent copy, inserts, updates (also of the key), deletes, a
/// transaction of several statements, a truncate and an on-demand copy
/// while streaming, each step compared with a full refresh of the same table
/// (a change arrives in exactly the types a copy has, over 23 column types).
/// A DuckDB file keeps the binlog position: a restart resumes there without
/// copying again. A column added at the source stops the stream, and status
/// says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_mode_follows_the_mariadb_binlog() {
    let _settings = binlog_settings().read().await;
    let db = MysqlDatabase::create("binlog_follow").await;
    db.execute(MARIADB_TYPED_TABLE).await;
    let folder = tempfile::tempdir().unwrap();
    let name = format!("binlog_{}", std::process::id());
    let config = format!(
        "{}{}",
        db.dataset(
            "t",
            &name,
            &format!(
                "    acceleration:\n      refresh_mode: changes\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{}' }}\n",
                folder.path().join("t.db").display()
            ),
        ),
        db.dataset(
            "t",
            "reference",
            "    acceleration:\n      refresh_mode: full\n      refresh_check_interval: 1h\n"
        )
    );
    let server = Server::start(&config).await;
    let status = server
        .wait_for_status(&name, |s| {
            s["changes"]["position"].is_string() || s["error_message"].is_string()
        })
        .await;
    assert_eq!(
        status["status"],
        "Ready",
        "{status}\n{}",
        dataset_log(&name)
    );
    same_as_a_full_refresh(&server, &name).await;
    for step in [
        "SET time_zone = '+00:00'; INSERT INTO {db}.t VALUES (100, 127, 0, 0, 0, 0, 9223372036854775807, 0, -0.001, -1e-3, 1e300, 'ünïcode ☃', '', '', '1000-01-01', '1970-01-01 00:00:00', '1970-01-01 00:00:01', '00:00:00', '[1, \"two\"]', x'00', 'small', '', b'0')",
        "UPDATE {db}.t SET vc = 'updated', ts = NULL, st = 'b' WHERE id = 1",
        "UPDATE {db}.t SET id = 1000, dec_ = 99 WHERE id = 3",
        "DELETE FROM {db}.t WHERE id BETWEEN 10 AND 20",
        "BEGIN; INSERT INTO {db}.t (id, vc) VALUES (200, 'first'); UPDATE {db}.t SET vc = 'second' WHERE id = 200; DELETE FROM {db}.t WHERE id = 2; COMMIT",
        "BEGIN; INSERT INTO {db}.t (id, vc) VALUES (300, 'rolled back'); ROLLBACK; INSERT INTO {db}.t (id, vc) VALUES (301, 'kept')",
    ] {
        db.execute(step).await;
        same_as_a_full_refresh(&server, &name).await;
    }
    db.execute(
        "TRUNCATE TABLE {db}.t; INSERT INTO {db}.t (id, vc) VALUES (7, 'after the truncate')",
    )
    .await;
    same_as_a_full_refresh(&server, &name).await;
    // An on-demand refresh copies again while the stream goes on.
    server.refresh(&name).await;
    db.execute("INSERT INTO {db}.t (id, vc) VALUES (8, 'after a second copy')")
        .await;
    same_as_a_full_refresh(&server, &name).await;
    let status = server.dataset_status(&name).await;
    let position = status["changes"]["position"].as_str().unwrap_or_default();
    assert!(
        position.starts_with("pgaccel-binlog.") && position.contains(':'),
        "{status}"
    );
    every_kind_of_change_is_counted(&server, &name).await;
    server.runtime.shutdown().await;

    // Changes made while pgaccel is down are applied from the stored
    // position after a restart, without a new copy.
    db.execute("UPDATE {db}.t SET vc = 'while down' WHERE id = 7; INSERT INTO {db}.t (id, vc) VALUES (9, 'while down')")
        .await;
    let copies_before = copies(&name);
    let server = Server::start(&config).await;
    server.wait_ready().await;
    same_as_a_full_refresh(&server, &name).await;
    assert_eq!(
        copies(&name),
        copies_before,
        "the restart copied the table again; log:\n{}",
        dataset_log(&name)
    );

    // A column added at the source stops the stream; the dataset keeps
    // serving its last state and says why.
    db.execute("ALTER TABLE {db}.t ADD COLUMN extra int").await;
    let status = server
        .wait_for_status(&name, |s| s["error_message"].is_string())
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains("ADD COLUMN extra") && message.contains("copies the table again"),
        "{status}"
    );
    assert_eq!(
        simple_rows(
            &server.client().await,
            &format!("SELECT vc FROM {name} WHERE id = 9")
        )
        .await,
        [[Some("while down".to_owned())]]
    );
    server.runtime.shutdown().await;
}

/// A MariaDB user who may not read the binlog is refused at startup with
/// the GRANT that fixes it, in the dataset's status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mariadb_user_without_replication_rights_is_told_what_to_grant() {
    let _settings = binlog_settings().read().await;
    let db = MysqlDatabase::create("binlog_rights").await;
    let user = format!("{}_reader", db.name);
    db.execute(&format!(
        "CREATE TABLE {{db}}.t (id int PRIMARY KEY); DROP USER IF EXISTS '{user}'@'%'; CREATE USER '{user}'@'%'; GRANT SELECT ON {{db}}.* TO '{user}'@'%'"
    ))
    .await;
    let name = format!("rights_{}", std::process::id());
    let config = db
        .dataset(
            "t",
            &name,
            "    acceleration:\n      refresh_mode: changes\n",
        )
        .replace("mysql_user: root", &format!("mysql_user: {user}"));
    let server = Server::start(&config).await;
    let status = server
        .wait_for_status(&name, |s| s["error_message"].is_string())
        .await;
    db.execute(&format!("DROP USER '{user}'@'%'")).await;
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.*"),
        "{status}"
    );
    assert_eq!(status["status"], "Error", "{status}");
    server.runtime.shutdown().await;
}

/// Rows written to a MariaDB table while it is being copied (at the start,
/// and again for an on-demand refresh while the stream goes on) are all
/// there once the writer stops: the copy's snapshot and the binlog position
/// it starts at meet with nothing lost or applied twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_changes_written_during_the_copy_are_not_lost() {
    let _settings = binlog_settings().read().await;
    use mysql_async::prelude::Queryable;

    let db = MysqlDatabase::create("binlog_copy").await;
    db.execute("CREATE TABLE {db}.t (id bigint PRIMARY KEY, n bigint NOT NULL); INSERT INTO {db}.t SELECT seq, 0 FROM seq_1_to_200000")
        .await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pool = mysql_async::Pool::new(MYSQL_URL);
    let writer = {
        let stop = Arc::clone(&stop);
        let table = format!("{}.t", db.name);
        let pool = pool.clone();
        tokio::spawn(async move {
            let mut conn = pool.get_conn().await.unwrap();
            let mut next = 1_000_000i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                conn.query_drop(format!(
                    "INSERT INTO {table} VALUES ({next}, 1); UPDATE {table} SET n = n + 1 WHERE id = {}",
                    next % 200_000 + 1
                ))
                .await
                .unwrap();
                next += 1;
            }
            next - 1_000_000
        })
    };
    let name = format!("binlog_copied_{}", std::process::id());
    let server = Server::start(&db.dataset(
        "t",
        &name,
        "    acceleration:\n      refresh_mode: changes\n",
    ))
    .await;
    server.wait_ready().await;
    let (status, body) = server
        .post(&format!("/v1/datasets/{name}/acceleration/refresh"))
        .await;
    assert_eq!(status, 201, "{body}");
    eventually(
        "the copy taken while streaming replaced the served rows",
        || async {
            logs()
                .iter()
                .any(|line| line.contains(&name) && line.contains("copied the table again"))
        },
    )
    .await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.await.unwrap();
    assert!(written > 0, "the writer wrote nothing");
    let mut conn = pool.get_conn().await.unwrap();
    let expected: (String, String, String) = conn
        .query_first(format!(
            "SELECT CAST(count(*) AS CHAR), CAST(sum(id) AS CHAR), CAST(sum(n) AS CHAR) FROM {}.t",
            db.name
        ))
        .await
        .unwrap()
        .unwrap();
    drop(conn);
    pool.disconnect().await.unwrap();
    let expected = vec![vec![Some(expected.0), Some(expected.1), Some(expected.2)]];
    let replica = server.client().await;
    let query = format!("SELECT count(*), sum(id), sum(n) FROM {name}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = simple_rows(&replica, &query).await;
        if found == expected {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pgaccel answers {found:?}, MariaDB {expected:?}\n{}",
            dataset_log(&name)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    server.runtime.shutdown().await;
}

/// Retention and `on_zero_results: use_source` keep working on a streamed
/// dataset: rows older than the period are evicted while changes stream, a
/// query for them is answered by the source, and the file keeps its stream
/// position through each eviction, so a restart resumes without a copy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_and_zero_results_work_while_changes_stream() {
    let source = SourceSchema::create("changes_retention").await;
    let objects = StreamObjects::of(&source);
    source
        .execute("CREATE TABLE {schema}.t (id int8 PRIMARY KEY, at timestamptz NOT NULL, name text);
                  INSERT INTO {schema}.t SELECT g, now() - (CASE WHEN g <= 5 THEN 60 ELSE 1 END) * interval '1 day', 'row ' || g FROM generate_series(1, 15) g")
        .await;
    let folder = tempfile::tempdir().unwrap();
    let name = format!("kept_{}", std::process::id());
    let config = changes_dataset(
        &source,
        &objects,
        &name,
        &format!(
            "      engine: sqlite\n      mode: file\n      params: {{ sqlite_file: '{}' }}\n      on_zero_results: use_source\n      retention_check_enabled: true\n      retention_check_interval: 1s\n      retention_period: 30d\n",
            folder.path().join("t.sqlite").display()
        ),
    )
    .replace("    acceleration:\n", "    time_column: at\n    acceleration:\n");
    let server = Server::start(&config).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let count = format!("SELECT count(*) FROM {name}");
    eventually("retention evicted the old rows", || async {
        simple_rows(&replica, &count).await == [[Some("10".to_owned())]]
    })
    .await;
    // An empty result is asked of the source, with the inverse of the
    // retention policy applied: the evicted rows do not come back, and a
    // row the acceleration keeps is answered as the source has it.
    let fallbacks = || async {
        let (_, text) = server.get("/metrics").await;
        text.lines()
            .filter(|line| {
                line.starts_with("accelerated_zero_results_federated_fallback")
                    && line.contains(&format!("dataset=\"{name}\""))
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    let old = format!("SELECT id FROM {name} WHERE at < now() - interval '40 days'");
    assert!(simple_rows(&replica, &old).await.is_empty());
    assert_eq!(fallbacks().await, 1.0);
    let kept = format!("SELECT name FROM {name} WHERE id = 6");
    assert_eq!(
        simple_rows(&replica, &kept).await,
        [[Some("row 6".to_owned())]]
    );
    assert_eq!(
        fallbacks().await,
        1.0,
        "a row the acceleration holds is not asked of the source"
    );
    source
        .execute("INSERT INTO {schema}.t VALUES (16, now(), 'streamed')")
        .await;
    eventually("the insert streamed", || async {
        simple_rows(&replica, &count).await == [[Some("11".to_owned())]]
    })
    .await;
    // A row made old by a change is evicted by the next check, which
    // rewrites the file after the change: the position must survive it.
    source
        .execute("UPDATE {schema}.t SET at = now() - interval '60 days' WHERE id = 6")
        .await;
    eventually("the aged row was evicted", || async {
        simple_rows(&replica, &count).await == [[Some("10".to_owned())]]
    })
    .await;
    server.runtime.shutdown().await;

    source
        .execute("UPDATE {schema}.t SET name = 'while down' WHERE id = 16")
        .await;
    let copies_before = copies(&name);
    let server = Server::start(&config).await;
    server.wait_ready().await;
    converges(
        &server,
        &source,
        &name,
        "SELECT id, name FROM {table} WHERE at > now() - interval '30 days' ORDER BY id",
    )
    .await;
    assert_eq!(
        copies(&name),
        copies_before,
        "the restart copied the table again; log:\n{}",
        dataset_log(&name)
    );
    server.runtime.shutdown().await;
}

/// Resets the global binlog row image when dropped (also when the test
/// fails).
struct FullRowImage;

impl Drop for FullRowImage {
    fn drop(&mut self) {
        let _ = Command::new("mariadb")
            .args(["-h", "127.0.0.1", "-P", "3306", "-u", "root", "-e"])
            .arg("SET GLOBAL binlog_row_image = 'FULL'")
            .output();
    }
}

/// A MariaDB whose binlog does not carry whole rows is refused at startup
/// with the setting to change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binlog_without_whole_rows_is_refused_with_the_setting_to_change() {
    let _settings = binlog_settings().write().await;
    let db = MysqlDatabase::create("binlog_image").await;
    db.execute("CREATE TABLE {db}.t (id int PRIMARY KEY)").await;
    let _reset = FullRowImage;
    db.execute("SET GLOBAL binlog_row_image = 'MINIMAL'").await;
    let name = format!("image_{}", std::process::id());
    let server = Server::start(&db.dataset(
        "t",
        &name,
        "    acceleration:\n      refresh_mode: changes\n",
    ))
    .await;
    let status = server
        .wait_for_status(&name, |s| s["error_message"].is_string())
        .await;
    let message = status["error_message"].as_str().unwrap();
    assert!(
        message.contains("binlog_row_image is MINIMAL")
            && message.contains("set binlog_row_image = FULL"),
        "{status}"
    );
    server.runtime.shutdown().await;
}
