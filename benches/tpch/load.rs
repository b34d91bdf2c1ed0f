//! Generates TPC-H `orders` and `lineitem` with `tpchgen` and loads them into a
//! PostgreSQL schema of their own through `COPY ... FROM STDIN`. A finished load is
//! marked by a comment on the schema, so `--skip-load` can tell a complete schema
//! from one a crashed run left half-filled.

use std::fmt::Write as _;
use std::io::Cursor;
use std::pin::pin;
use std::time::{Duration, Instant};

use futures::SinkExt;
use tokio::sync::mpsc;
use tokio_postgres::Client;
use tpchgen::generators::{LineItem, LineItemGenerator, Order, OrderGenerator};

use crate::Result;

/// Rows per table, as loaded in PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowCounts {
    pub orders: u64,
    pub lineitem: u64,
}

/// What `prepare` did, for the report.
pub struct Loaded {
    pub rows: RowCounts,
    /// `None` when an existing schema was reused.
    pub load_time: Option<Duration>,
}

/// Size of one COPY chunk: large enough to keep the protocol overhead negligible,
/// small enough that generation and ingest overlap.
const CHUNK_BYTES: usize = 1 << 20;

const ORDERS_DDL: &str = "CREATE TABLE orders (
    o_orderkey      bigint        NOT NULL,
    o_custkey       bigint        NOT NULL,
    o_orderstatus   char(1)       NOT NULL,
    o_totalprice    numeric(15,2) NOT NULL,
    o_orderdate     date          NOT NULL,
    o_orderpriority char(15)      NOT NULL,
    o_clerk         char(15)      NOT NULL,
    o_shippriority  integer       NOT NULL,
    o_comment       varchar(79)   NOT NULL)";

pub const LINEITEM_DDL: &str = "CREATE TABLE lineitem (
    l_orderkey      bigint        NOT NULL,
    l_partkey       bigint        NOT NULL,
    l_suppkey       bigint        NOT NULL,
    l_linenumber    integer       NOT NULL,
    l_quantity      numeric(15,2) NOT NULL,
    l_extendedprice numeric(15,2) NOT NULL,
    l_discount      numeric(15,2) NOT NULL,
    l_tax           numeric(15,2) NOT NULL,
    l_returnflag    char(1)       NOT NULL,
    l_linestatus    char(1)       NOT NULL,
    l_shipdate      date          NOT NULL,
    l_commitdate    date          NOT NULL,
    l_receiptdate   date          NOT NULL,
    l_shipinstruct  char(25)      NOT NULL,
    l_shipmode      char(10)      NOT NULL,
    l_comment       varchar(44)   NOT NULL)";

/// Makes sure `schema` holds the TPC-H tables at scale factor `sf`: reuses it when
/// `skip_load` is set and its row counts match the completion mark, else (re)loads it.
pub async fn prepare(client: &Client, schema: &str, sf: f64, skip_load: bool) -> Result<Loaded> {
    if skip_load {
        match reusable_counts(client, schema, sf).await? {
            Some(rows) => {
                println!("reusing schema {schema} (--skip-load): row counts match");
                return Ok(Loaded {
                    rows,
                    load_time: None,
                });
            }
            None => println!("schema {schema} is missing or incomplete: loading it"),
        }
    }
    let started = Instant::now();
    let rows = load(client, schema, sf).await?;
    Ok(Loaded {
        rows,
        load_time: Some(started.elapsed()),
    })
}

/// The row counts of a completely loaded schema, or `None` if it must be loaded.
async fn reusable_counts(client: &Client, schema: &str, sf: f64) -> Result<Option<RowCounts>> {
    let mark = client
        .query_opt(
            "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
            &[&schema],
        )
        .await?
        .and_then(|row| row.get::<_, Option<String>>(0));
    let Some(expected) = mark.as_deref().and_then(parse_mark) else {
        return Ok(None);
    };
    if expected.orders != expected_orders(sf) {
        return Ok(None);
    }
    let actual = count_rows(client, schema).await?;
    Ok((actual == expected).then_some(actual))
}

async fn load(client: &Client, schema: &str, sf: f64) -> Result<RowCounts> {
    println!("loading TPC-H sf {sf} into schema {schema} ...");
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
             SET search_path TO {schema}; {ORDERS_DDL}; {LINEITEM_DDL};"
        ))
        .await?;
    copy_generated(client, "orders", move |tx| send_orders(sf, tx)).await?;
    copy_generated(client, "lineitem", move |tx| send_lineitems(sf, tx)).await?;
    // Keys are added after the data: one index build is far cheaper than
    // maintaining the index row by row during COPY.
    client
        .batch_execute(
            "ALTER TABLE orders ADD PRIMARY KEY (o_orderkey);
             ALTER TABLE lineitem ADD PRIMARY KEY (l_orderkey, l_linenumber);
             ANALYZE orders; ANALYZE lineitem;",
        )
        .await?;
    let rows = count_rows(client, schema).await?;
    client
        .batch_execute(&format!(
            "COMMENT ON SCHEMA {schema} IS '{}'",
            format_mark(rows)
        ))
        .await?;
    Ok(rows)
}

/// Streams the text-format chunks that `generate` produces on a blocking thread into
/// `COPY table FROM STDIN`, so that generation and ingest run side by side.
async fn copy_generated<F>(client: &Client, table: &str, generate: F) -> Result<()>
where
    F: FnOnce(mpsc::Sender<Vec<u8>>) + Send + 'static,
{
    let started = Instant::now();
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(4);
    let producer = tokio::task::spawn_blocking(move || generate(tx));
    let mut sink = pin!(
        client
            .copy_in::<_, Cursor<Vec<u8>>>(&format!("COPY {table} FROM STDIN"))
            .await?
    );
    while let Some(chunk) = rx.recv().await {
        sink.send(Cursor::new(chunk)).await?;
    }
    producer.await?;
    let rows = sink.as_mut().finish().await?;
    println!(
        "  {table}: {rows} rows in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn send_orders(sf: f64, tx: mpsc::Sender<Vec<u8>>) {
    send_chunks(OrderGenerator::new(sf, 1, 1).iter(), write_order, tx);
}

pub fn send_lineitems(sf: f64, tx: mpsc::Sender<Vec<u8>>) {
    send_chunks(LineItemGenerator::new(sf, 1, 1).iter(), write_lineitem, tx);
}

/// Formats rows into chunks of about `CHUNK_BYTES`; stops early if the receiver is gone
/// (the COPY failed and its error is reported there).
fn send_chunks<R>(
    rows: impl Iterator<Item = R>,
    write_row: fn(&mut String, &R),
    tx: mpsc::Sender<Vec<u8>>,
) {
    let mut chunk = String::with_capacity(CHUNK_BYTES + 1024);
    for row in rows {
        write_row(&mut chunk, &row);
        if chunk.len() >= CHUNK_BYTES {
            let full = std::mem::replace(&mut chunk, String::with_capacity(CHUNK_BYTES + 1024));
            if tx.blocking_send(full.into_bytes()).is_err() {
                return;
            }
        }
    }
    if !chunk.is_empty() {
        let _ = tx.blocking_send(chunk.into_bytes());
    }
}

// TPC-H text fields never contain tabs, newlines or backslashes (they come from fixed
// word lists), so COPY's text format needs no escaping here.

fn write_order(out: &mut String, o: &Order<'_>) {
    let _ = writeln!(
        out,
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        o.o_orderkey,
        o.o_custkey,
        o.o_orderstatus,
        o.o_totalprice,
        o.o_orderdate,
        o.o_orderpriority,
        o.o_clerk,
        o.o_shippriority,
        o.o_comment
    );
}

fn write_lineitem(out: &mut String, l: &LineItem<'_>) {
    let _ = writeln!(
        out,
        "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        l.l_orderkey,
        l.l_partkey,
        l.l_suppkey,
        l.l_linenumber,
        l.l_quantity,
        l.l_extendedprice,
        l.l_discount,
        l.l_tax,
        l.l_returnflag,
        l.l_linestatus,
        l.l_shipdate,
        l.l_commitdate,
        l.l_receiptdate,
        l.l_shipinstruct,
        l.l_shipmode,
        l.l_comment
    );
}

pub async fn count_rows(client: &Client, schema: &str) -> Result<RowCounts> {
    let row = client
        .query_one(
            &format!(
                "SELECT (SELECT count(*) FROM {schema}.orders), (SELECT count(*) FROM {schema}.lineitem)"
            ),
            &[],
        )
        .await?;
    Ok(RowCounts {
        orders: row.get::<_, i64>(0) as u64,
        lineitem: row.get::<_, i64>(1) as u64,
    })
}

pub fn expected_orders(sf: f64) -> u64 {
    OrderGenerator::calculate_row_count(sf, 1, 1) as u64
}

fn format_mark(rows: RowCounts) -> String {
    format!(
        "pgaccel bench: complete orders={} lineitem={}",
        rows.orders, rows.lineitem
    )
}

fn parse_mark(mark: &str) -> Option<RowCounts> {
    let rest = mark.strip_prefix("pgaccel bench: complete orders=")?;
    let (orders, lineitem) = rest.split_once(" lineitem=")?;
    Some(RowCounts {
        orders: orders.parse().ok()?,
        lineitem: lineitem.parse().ok()?,
    })
}
