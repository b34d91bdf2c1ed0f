//! Every supported type, and NULL in each, reads back from pgaccel exactly as
//! PostgreSQL itself returns it: in binary (tokio-postgres' extended
//! protocol) and in text (the simple protocol, as psql reads it).

use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::support::{Raw, SOURCE_DSN, Server, SourceSchema, connect, text_rows};

const TABLE: &str = "CREATE TABLE {schema}.all_types (
    id int4 PRIMARY KEY, i2 int2, i8 int8, f4 float4, f8 float8, num numeric(14,4), t text, vc varchar(20),
    b bool, d date, ts timestamp, tstz timestamptz, u uuid, j json, jb jsonb, by bytea);
  INSERT INTO {schema}.all_types VALUES
    (1, 32767, 9223372036854775807, 1.5, 0.1, 12345678.1234, 'hello', 'world', true, '2024-02-29',
     '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789+02', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
     '{\"a\": [1, 2]}', '{\"b\": {\"c\": true}}', '\\xdeadbeef'),
    (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (3, -32768, -1, -3.25, 1e300, -0.0001, 'ünïcode ✓', '', false, '1970-01-01', '1999-12-31 23:59:59',
     '2000-01-01 00:00:00+00', '00000000-0000-0000-0000-000000000000', '[]', '[1, \"x\", null]', '\\x'),
    (4, 0, 0, 'NaN', '-Infinity', 0, 'line
break', 'x', true, '2262-04-11', '2000-01-01 00:00:00.000001', '1970-01-01 00:00:00+00',
     'ffffffff-ffff-ffff-ffff-ffffffffffff', '{}', '{}', '\\x00ff');";

const EXPECTED_TYPES: [Type; 16] = [
    Type::INT4,
    Type::INT2,
    Type::INT8,
    Type::FLOAT4,
    Type::FLOAT8,
    Type::NUMERIC,
    Type::TEXT,
    Type::VARCHAR,
    Type::BOOL,
    Type::DATE,
    Type::TIMESTAMP,
    Type::TIMESTAMPTZ,
    Type::UUID,
    Type::JSON,
    Type::JSONB,
    Type::BYTEA,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_round_trips_in_text_and_binary() {
    let source = SourceSchema::create("types").await;
    source.execute(TABLE).await;
    let server = Server::start(&source.dataset("all_types", "all_types", "")).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    let replica_sql = "SELECT * FROM all_types ORDER BY id";
    let primary_sql = format!("SELECT * FROM {}.all_types ORDER BY id", source.name);

    // Binary results, decoded into Rust values by tokio-postgres.
    let replica_rows = replica.query(replica_sql, &[]).await.unwrap();
    let primary_rows = primary.query(primary_sql.as_str(), &[]).await.unwrap();
    let types: Vec<Type> = replica_rows[0]
        .columns()
        .iter()
        .map(|c| c.type_().clone())
        .collect();
    assert_eq!(types, EXPECTED_TYPES);
    assert_eq!(replica_rows.len(), primary_rows.len());
    for (replica_row, primary_row) in replica_rows.iter().zip(&primary_rows) {
        assert_eq!(binary_values(replica_row), binary_values(primary_row));
    }

    // Text results, compared character by character.
    let replica_text = text_rows(replica.simple_query(replica_sql).await.unwrap());
    let primary_text = text_rows(primary.simple_query(&primary_sql).await.unwrap());
    assert_eq!(replica_text, primary_text);
}

/// Each column decoded with the Rust type tokio-postgres uses for it.
fn binary_values(row: &Row) -> Vec<String> {
    (0..row.len())
        .map(|i| match row.columns()[i].type_().clone() {
            Type::INT2 => format!("{:?}", row.get::<_, Option<i16>>(i)),
            Type::INT4 => format!("{:?}", row.get::<_, Option<i32>>(i)),
            Type::INT8 => format!("{:?}", row.get::<_, Option<i64>>(i)),
            Type::FLOAT4 => format!("{:?}", row.get::<_, Option<f32>>(i)),
            Type::FLOAT8 => format!("{:?}", row.get::<_, Option<f64>>(i)),
            Type::NUMERIC => format!("{:?}", row.get::<_, Option<Numeric>>(i)),
            Type::TEXT | Type::VARCHAR => format!("{:?}", row.get::<_, Option<String>>(i)),
            Type::BOOL => format!("{:?}", row.get::<_, Option<bool>>(i)),
            Type::DATE => format!("{:?}", row.get::<_, Option<chrono::NaiveDate>>(i)),
            Type::TIMESTAMP => format!("{:?}", row.get::<_, Option<chrono::NaiveDateTime>>(i)),
            Type::TIMESTAMPTZ => format!(
                "{:?}",
                row.get::<_, Option<chrono::DateTime<chrono::Utc>>>(i)
            ),
            Type::UUID => format!("{:?}", row.get::<_, Option<uuid::Uuid>>(i)),
            Type::JSON | Type::JSONB => format!("{:?}", row.get::<_, Option<serde_json::Value>>(i)),
            Type::BYTEA => format!("{:?}", row.get::<_, Option<Vec<u8>>>(i)),
            other => panic!("unexpected type {other}"),
        })
        .collect()
}

/// The raw binary form of a numeric, compared byte for byte.
#[derive(Debug, PartialEq)]
struct Numeric(Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for Numeric {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Numeric(raw.to_vec()))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// Network types and timetz, which pgaccel reads from PostgreSQL as
/// PostgreSQL prints them: the same text, and the same bytes in binary (inet
/// and cidr with their netmask and cidr flag, macaddr as six bytes, timetz
/// as microseconds and the zone west of UTC).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_types_read_back_as_postgres_sends_them() {
    let source = SourceSchema::create("nettypes").await;
    source
        .execute(
            "CREATE TABLE {schema}.hosts (id int4 PRIMARY KEY, addr inet, net cidr, mac macaddr, at timetz);
             INSERT INTO {schema}.hosts VALUES
               (1, '10.1.2.3/8', '10.0.0.0/8', '08:00:2b:01:02:03', '12:34:56.5+02'),
               (2, '::1', '2001:db8::/32', NULL, '00:00:00-09:30'),
               (3, '192.168.0.1', '192.168.0.0/24', 'ff-ff-ff-ff-ff-ff', NULL),
               (4, NULL, NULL, NULL, '23:59:59.999999+14');",
        )
        .await;
    let server = Server::start(&source.dataset("hosts", "hosts", "")).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    let replica_sql = "SELECT * FROM hosts ORDER BY id";
    let primary_sql = format!("SELECT * FROM {}.hosts ORDER BY id", source.name);

    let raw = |rows: Vec<Row>| -> Vec<RawRow> {
        rows.iter()
            .map(|row| {
                let types = row.columns().iter().map(|c| c.type_().clone()).collect();
                let values = (1..row.len())
                    .map(|i| row.get::<_, Option<Raw>>(i).map(|r| r.0))
                    .collect();
                (types, values)
            })
            .collect()
    };
    let replica_rows = raw(replica.query(replica_sql, &[]).await.unwrap());
    let primary_rows = raw(primary.query(primary_sql.as_str(), &[]).await.unwrap());
    assert_eq!(
        replica_rows[0].0,
        [
            Type::INT4,
            Type::INET,
            Type::CIDR,
            Type::MACADDR,
            Type::TIMETZ
        ]
    );
    assert_eq!(replica_rows, primary_rows);

    let replica_text = text_rows(replica.simple_query(replica_sql).await.unwrap());
    let primary_text = text_rows(primary.simple_query(&primary_sql).await.unwrap());
    assert_eq!(replica_text, primary_text);
    // `::1`, as PostgreSQL prints an inet (a cast to text would add /128).
    assert_eq!(replica_text[1][1].as_deref(), Some("::1"));
    let found = text_rows(
        replica
            .simple_query("SELECT id FROM hosts WHERE addr = '::1'")
            .await
            .unwrap(),
    );
    assert_eq!(found, [[Some("2".to_owned())]]);
}

/// A row's column types and each value's binary form (the key left out).
type RawRow = (Vec<Type>, Vec<Option<Vec<u8>>>);

/// Types the PostgreSQL reader has no Arrow conversion for (geometry, text
/// search, ranges, timetz, money, arrays of dates, ...) are read as the text
/// PostgreSQL prints for them, so the table loads and prints the same; a
/// `refresh_sql` filter on such a column compares that text in PostgreSQL.
/// Arrays the reader does convert load with NULL elements too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_types_read_as_postgres_prints_them() {
    let source = SourceSchema::create("oddtypes").await;
    source
        .execute(
            "CREATE TABLE {schema}.odd (id int4 PRIMARY KEY, doc tsvector, span int4range, at timetz,
               cost money, days date[], spot point, flags bit(3), addr inet,
               ints int4[], words text[], reals float8[]);
             INSERT INTO {schema}.odd VALUES
               (1, 'a fat cat', '[1,5)', '12:34:56+02', 12.5, '{2024-01-01,NULL}', '(1,2)', B'101', '::1',
                '{1,NULL,-3}', '{\"a b\",NULL,\"NULL\",\"q\\\"uote\",\"\"}', '{NaN,-Infinity,0.5}'),
               (2, '', 'empty', '00:00:00-11:30', -1, '{}', '(0,0)', B'000', '10.0.0.1/8', '{}', '{}', '{NULL}'),
               (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);",
        )
        .await;
    let datasets = [
        source.dataset("odd", "odd", ""),
        source.dataset(
            "odd",
            "odd_local",
            "    acceleration:\n      refresh_sql: SELECT id, addr FROM odd_local WHERE addr = '::1'\n",
        ),
    ]
    .join("\n");
    let server = Server::start(&datasets).await;
    server.wait_ready().await;
    let replica = server.client().await;
    let primary = connect(SOURCE_DSN).await;
    let replica_text = text_rows(
        replica
            .simple_query("SELECT * FROM odd ORDER BY id")
            .await
            .unwrap(),
    );
    let primary_text = text_rows(
        primary
            .simple_query(&format!("SELECT * FROM {}.odd ORDER BY id", source.name))
            .await
            .unwrap(),
    );
    assert_eq!(replica_text, primary_text);
    let filtered = text_rows(
        replica
            .simple_query("SELECT id, addr FROM odd_local")
            .await
            .unwrap(),
    );
    assert_eq!(filtered, [[Some("1".to_owned()), Some("::1".to_owned())]]);
}
