//! Change data capture from the real PostgreSQL's logical decoding
//! (`wal_level = logical`, set by tests/cdc/setup.sh).

use std::process::Command;

use pgaccel::source::pgoutput::{self, Datum, Lsn, Message, Old};

use crate::support::SourceSchema;

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
