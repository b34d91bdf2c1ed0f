//! `runtime.query.unsupported: source`: a query pgaccel refuses (0A000) is
//! answered by the PostgreSQL source of its datasets, exactly as the source
//! answers it; never when a dataset holds only part of its source table,
//! and never a write.

use chrono::{DateTime, Utc};
use tokio_postgres::types::Type;

use crate::support::{SOURCE_DSN, Server, SourceSchema, connect, simple_rows, sqlstate};

const ORDERS: &str = "CREATE TABLE {schema}.orders (
        id int PRIMARY KEY, placed timestamptz, amount numeric(10,2), note text);
    INSERT INTO {schema}.orders VALUES
        (1, '2024-03-10 01:30:00+00', 10.50, 'a'),
        (2, '2024-03-10 12:00:00+00', 20.00, NULL),
        (3, '2024-03-11 08:15:30.25+00', 20.00, 'c'),
        (4, NULL, 5.25, 'd')";

/// A query pgaccel refuses: `WITH TIES` after an `OFFSET` (pgaccel answers
/// `WITH TIES` alone).
const WITH_TIES: &str = "SELECT id, placed, amount / 3 AS third FROM orders ORDER BY amount DESC OFFSET 0 ROWS FETCH FIRST 1 ROWS WITH TIES";

async fn forwarded_total(server: &Server) -> f64 {
    let (_, metrics) = server.get("/metrics").await;
    metrics
        .lines()
        .find_map(|line| {
            line.strip_prefix("query_forwarded_total{reason=\"feature_not_supported\"} ")
        })
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

#[tokio::test]
async fn a_refused_query_is_answered_by_its_postgresql_source() {
    let source = SourceSchema::create("forward").await;
    source.execute(ORDERS).await;
    let datasets = [
        source.dataset("orders", "orders", ""),
        source.dataset(
            "orders",
            "eu_orders",
            "    acceleration:\n      refresh_sql: SELECT * FROM eu_orders WHERE id < 3\n",
        ),
    ]
    .join("\n");
    let server = Server::start_with_config(&format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0 }}\n  query: {{ unsupported: source }}\ndatasets:\n{datasets}"
    ))
    .await;
    server.wait_ready().await;
    let direct = connect(SOURCE_DSN).await;
    let on_source = |sql: &str| sql.replace("FROM orders", &format!("FROM {}.orders", source.name));

    // Simple protocol, under the session's time zone: the source's text.
    let client = server.client().await;
    client
        .batch_execute("SET TimeZone = 'Asia/Tokyo'")
        .await
        .unwrap();
    direct
        .batch_execute("SET TimeZone = 'Asia/Tokyo'")
        .await
        .unwrap();
    let before = forwarded_total(&server).await;
    let expected = simple_rows(&direct, &on_source(WITH_TIES)).await;
    assert_eq!(expected.len(), 2, "{expected:?}");
    assert_eq!(simple_rows(&client, WITH_TIES).await, expected);
    // The counter is the test process's, which other tests' servers
    // (the differential corpus's refusals) may count into meanwhile: this
    // query adds one at least. The answer above is the source's, which
    // pgaccel alone would have refused.
    let after = forwarded_total(&server).await;
    assert!(after >= before + 1.0, "{before} -> {after}");

    // Extended protocol: the source's parameter and column types, and
    // binary values (tokio-postgres asks for binary).
    let sql = "SELECT id, placed, note FROM orders WHERE id > $1 ORDER BY amount DESC OFFSET 0 ROWS FETCH FIRST 1 ROWS WITH TIES";
    let statement = client.prepare(sql).await.unwrap();
    assert_eq!(statement.params(), [Type::INT4]);
    let types: Vec<Type> = statement
        .columns()
        .iter()
        .map(|c| c.type_().clone())
        .collect();
    assert_eq!(types, [Type::INT4, Type::TIMESTAMPTZ, Type::TEXT]);
    let limit = 1i32;
    let rows = client.query(&statement, &[&limit]).await.unwrap();
    let expected = direct.query(&on_source(sql), &[&limit]).await.unwrap();
    let read = |rows: &[tokio_postgres::Row]| {
        rows.iter()
            .map(|row| {
                (
                    row.get::<_, i32>(0),
                    row.get::<_, Option<DateTime<Utc>>>(1),
                    row.get::<_, Option<String>>(2),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(read(&rows), read(&expected));
    assert_eq!(
        read(&rows).len(),
        2,
        "ties of amount 20.00 are both returned"
    );

    // A dataset holding part of its source table is never forwarded: the
    // source would answer with rows the acceleration does not hold.
    let error = client
        .simple_query(
            "SELECT id FROM eu_orders ORDER BY amount OFFSET 0 ROWS FETCH FIRST 1 ROWS WITH TIES",
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "0A000", "{error:?}");

    // Nor a query that writes: the source keeps its rows.
    let error = client
        .simple_query("WITH gone AS (DELETE FROM orders RETURNING id) SELECT * FROM gone")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&error), "0A000", "{error:?}");
    let count = direct
        .query_one(&format!("SELECT count(*) FROM {}.orders", source.name), &[])
        .await
        .unwrap();
    assert_eq!(count.get::<_, i64>(0), 4);

    // A query pgaccel answers itself is never forwarded: it counts the
    // accelerated rows, not a row the source gained since.
    source
        .execute("INSERT INTO {schema}.orders VALUES (5, now(), 1.00, 'late')")
        .await;
    let rows = simple_rows(&client, "SELECT count(*) FROM orders").await;
    assert_eq!(rows, [[Some("4".to_owned())]]);
}
