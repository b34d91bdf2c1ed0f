//! `mysql:` sources against the real MariaDB: every column type a MariaDB
//! table commonly has, as a PostgreSQL client sees it through pgaccel, and the
//! full and append refresh modes.

use tokio_postgres::types::Type;

use crate::support::{MysqlDatabase, Server, simple_rows};

#[tokio::test]
async fn mariadb_types_arrive_as_the_postgresql_types_that_mean_the_same() {
    let db = MysqlDatabase::create("mysql_types").await;
    db.execute(
        "CREATE TABLE {db}.t (
             id int PRIMARY KEY,
             ti tinyint, tiu tinyint unsigned, si smallint, siu smallint unsigned,
             i int, iu int unsigned, bi bigint, biu bigint unsigned,
             dec_ decimal(12,3), f float, d double,
             vc varchar(20), ch char(3), tx text,
             dt date, dtm datetime, ts timestamp NULL, tm time,
             js json, bl blob, en enum('small','large'), b1 bit(1));
         SET time_zone = '+00:00';
         INSERT INTO {db}.t VALUES (
             1, -128, 255, -32768, 65535, -2147483648, 4294967295,
             -9223372036854775808, 18446744073709551615,
             123456789.125, 1.5, 2.25,
             'varchar', 'abc', 'some text',
             '2026-11-30', '2026-11-30 12:34:56', '2026-11-30 12:34:56', '23:59:58',
             '{\"a\": 1}', x'DEADBEEF', 'large', b'1');
         INSERT INTO {db}.t (id) VALUES (2);",
    )
    .await;
    let server = Server::start(&db.dataset("t", "t", "")).await;
    server.wait_ready().await;
    let status = server.dataset_status("t").await;
    assert_eq!(status["status"], "Ready", "{status}");
    let replica = server.client().await;

    let statement = replica
        .prepare("SELECT * FROM t ORDER BY id")
        .await
        .unwrap();
    let types: Vec<(String, Type)> = statement
        .columns()
        .iter()
        .map(|c| (c.name().to_owned(), c.type_().clone()))
        .collect();
    let expected_types = [
        ("id", Type::INT4),
        ("ti", Type::INT2),
        ("tiu", Type::INT2),
        ("si", Type::INT2),
        ("siu", Type::INT4),
        ("i", Type::INT4),
        ("iu", Type::INT8),
        ("bi", Type::INT8),
        ("biu", Type::NUMERIC),
        ("dec_", Type::NUMERIC),
        ("f", Type::FLOAT4),
        ("d", Type::FLOAT8),
        ("vc", Type::VARCHAR),
        ("ch", Type::BPCHAR),
        ("tx", Type::TEXT),
        ("dt", Type::DATE),
        ("dtm", Type::TIMESTAMP),
        ("ts", Type::TIMESTAMPTZ),
        ("tm", Type::TIME),
        ("bl", Type::BYTEA),
        ("en", Type::TEXT),
    ];
    for (name, expected) in expected_types {
        let found = types
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{name} in {types:?}"));
        assert_eq!(found.1, expected, "column {name}");
    }

    let values = simple_rows(
        &replica,
        "SELECT id, ti, tiu, si, siu, i, iu, bi, biu, dec_, f, d, vc, ch, tx, dt, dtm, ts, tm, \
         js, bl, en, b1 FROM t ORDER BY id",
    )
    .await;
    let expected: Vec<Option<&str>> = vec![
        Some("1"),
        Some("-128"),
        Some("255"),
        Some("-32768"),
        Some("65535"),
        Some("-2147483648"),
        Some("4294967295"),
        Some("-9223372036854775808"),
        Some("18446744073709551615"),
        Some("123456789.125"),
        Some("1.5"),
        Some("2.25"),
        Some("varchar"),
        Some("abc"),
        Some("some text"),
        Some("2026-11-30"),
        Some("2026-11-30 12:34:56"),
        Some("2026-11-30 12:34:56+00"),
        Some("23:59:58"),
        Some("{\"a\": 1}"),
        Some("\\xdeadbeef"),
        Some("large"),
        Some("1"),
    ];
    let first: Vec<Option<&str>> = values[0].iter().map(Option::as_deref).collect();
    assert_eq!(first, expected);
    // The row of NULLs: every column but the key is NULL.
    assert_eq!(values[1][0].as_deref(), Some("2"));
    assert!(
        values[1][1..].iter().all(Option::is_none),
        "{:?}",
        values[1]
    );

    // Filters and lookups on the MySQL primary key work like any other.
    let found = simple_rows(&replica, "SELECT tx FROM t WHERE id = 1").await;
    assert_eq!(found, vec![vec![Some("some text".to_owned())]]);
}

#[tokio::test]
async fn mysql_tables_refresh_in_full_and_in_append_mode() {
    let db = MysqlDatabase::create("mysql_modes").await;
    db.execute(
        "CREATE TABLE {db}.items (id int PRIMARY KEY, name varchar(20));
         INSERT INTO {db}.items VALUES (1, 'one'), (2, 'two');
         CREATE TABLE {db}.events (id int PRIMARY KEY, v varchar(20), updated_at datetime(6));
         INSERT INTO {db}.events VALUES (1, 'a', UTC_TIMESTAMP(6) - INTERVAL 2 HOUR),
                                        (2, 'b', UTC_TIMESTAMP(6) - INTERVAL 1 HOUR);",
    )
    .await;
    let datasets = format!(
        "{}{}",
        db.dataset("items", "items", ""),
        db.dataset(
            "events",
            "events",
            "    time_column: updated_at\n    acceleration:\n      refresh_mode: append\n      refresh_append_overlap: 10m\n"
        )
    );
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let items = "SELECT id::text || '=' || name FROM items ORDER BY id";
    let events = "SELECT id::text || '=' || v FROM events ORDER BY id";
    let texts = |rows: Vec<Vec<Option<String>>>| -> Vec<String> {
        rows.into_iter()
            .map(|row| row[0].clone().unwrap())
            .collect()
    };
    assert_eq!(
        texts(simple_rows(&replica, items).await),
        ["1=one", "2=two"]
    );
    assert_eq!(texts(simple_rows(&replica, events).await), ["1=a", "2=b"]);
    db.execute(
        "UPDATE {db}.items SET name = 'uno' WHERE id = 1; DELETE FROM {db}.items WHERE id = 2;
         INSERT INTO {db}.items VALUES (3, 'three');
         UPDATE {db}.events SET v = 'a2', updated_at = UTC_TIMESTAMP(6) WHERE id = 1;
         INSERT INTO {db}.events VALUES (3, 'c', UTC_TIMESTAMP(6)),
                                        (4, 'old', UTC_TIMESTAMP(6) - INTERVAL 1 DAY);",
    )
    .await;
    server.refresh("items").await;
    server.refresh("events").await;
    assert_eq!(
        texts(simple_rows(&replica, items).await),
        ["1=uno", "3=three"]
    );
    // The back-dated row 4 is older than the newest held row: not read.
    assert_eq!(
        texts(simple_rows(&replica, events).await),
        ["1=a2", "2=b", "3=c"]
    );
    server.refresh("events").await;
    assert_eq!(
        texts(simple_rows(&replica, events).await),
        ["1=a2", "2=b", "3=c"]
    );
}
