//! The measurements themselves, each run the same way against pgaccel and against
//! PostgreSQL: analytic query latency, prepared point-lookup throughput, and the
//! binary COPY read rate that bounds any refresh.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use crate::Result;

/// TPC-H Q1 with the delta of 90 days already applied to the date, so that neither
/// side's interval arithmetic is being measured or compared.
pub const Q1: &str = "SELECT l_returnflag, l_linestatus,
       sum(l_quantity) AS sum_qty,
       sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty,
       avg(l_extendedprice) AS avg_price,
       avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus
ORDER BY l_returnflag, l_linestatus";

/// TPC-H Q6 with literal bounds.
pub const Q6: &str = "SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= DATE '1994-01-01'
  AND l_shipdate < DATE '1995-01-01'
  AND l_discount BETWEEN 0.05 AND 0.07
  AND l_quantity < 24";

pub const POINT_LOOKUP: &str = "SELECT * FROM orders WHERE o_orderkey = $1";

/// An aggregate over a range of `orders` keys starting at an existing key:
/// about a tenth of the table at scale factor 1.
pub const RANGE_AGGREGATE: &str = "SELECT o_orderstatus, count(*), sum(o_totalprice) \
     FROM orders WHERE o_orderkey >= $1 AND o_orderkey < $1 + 600000 GROUP BY o_orderstatus";

/// Where a client connects: PostgreSQL itself (with the bench schema on the search
/// path, so the same SQL text works on both sides) or pgaccel's wire port.
#[derive(Clone)]
pub struct Endpoint {
    conninfo: String,
    search_path: Option<String>,
}

impl Endpoint {
    pub fn postgres(user: &str, schema: &str) -> Endpoint {
        Endpoint {
            conninfo: format!("host=127.0.0.1 port=5432 user={user} dbname=test"),
            search_path: Some(schema.to_owned()),
        }
    }

    pub fn pgaccel(user: &str, port: u16) -> Endpoint {
        Endpoint {
            conninfo: format!("host=127.0.0.1 port={port} user={user} dbname=test"),
            search_path: None,
        }
    }

    pub async fn connect(&self) -> Result<Client> {
        let (client, connection) = tokio_postgres::connect(&self.conninfo, NoTls).await?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                eprintln!("connection error: {e}");
            }
        });
        if let Some(schema) = &self.search_path {
            client
                .batch_execute(&format!("SET search_path TO {schema}"))
                .await?;
        }
        Ok(client)
    }
}

/// One query's timing and the rows of its last run (as text, for comparison).
pub struct QueryRun {
    pub median: Duration,
    pub rows: Vec<Vec<Option<String>>>,
}

/// Runs `sql` once to warm up, then `runs` times; the median of the timed runs.
pub async fn time_query(client: &Client, sql: &str, runs: usize) -> Result<QueryRun> {
    let mut rows = simple_rows(client, sql).await?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        rows = simple_rows(client, sql).await?;
        times.push(started.elapsed());
    }
    times.sort();
    Ok(QueryRun {
        median: times[times.len() / 2],
        rows,
    })
}

async fn simple_rows(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
    let messages = client.simple_query(sql).await?;
    Ok(messages
        .iter()
        .filter_map(|message| match message {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .collect())
}

/// Reads up to `limit` random existing order keys (TPC-H keys are sparse).
pub async fn sample_order_keys(client: &Client, limit: i64) -> Result<Vec<i64>> {
    let rows = client
        .query(
            "SELECT o_orderkey FROM orders ORDER BY random() LIMIT $1",
            &[&limit],
        )
        .await?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// Throughput and latency of prepared point lookups.
pub struct Lookups {
    pub per_second: f64,
    pub mean_latency: Duration,
}

/// `tasks` clients, each on its own connection, run the prepared point lookup on
/// random keys for `duration`.
pub async fn point_lookups(
    endpoint: &Endpoint,
    keys: Arc<Vec<i64>>,
    tasks: usize,
    duration: Duration,
) -> Result<Lookups> {
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..tasks)
        .map(|_| tokio::spawn(lookup_worker(endpoint.clone(), Arc::clone(&keys), deadline)))
        .collect();
    let (mut count, mut busy) = (0u64, Duration::ZERO);
    for worker in workers {
        let (n, time) = worker.await??;
        count += n;
        busy += time;
    }
    if count == 0 {
        return Err("no point lookup completed".into());
    }
    Ok(Lookups {
        per_second: count as f64 / started.elapsed().as_secs_f64(),
        mean_latency: busy / u32::try_from(count)?,
    })
}

/// One client's loop: lookups done and the time spent in them.
async fn lookup_worker(
    endpoint: Endpoint,
    keys: Arc<Vec<i64>>,
    deadline: Instant,
) -> Result<(u64, Duration)> {
    let client = endpoint.connect().await?;
    let statement = client.prepare(POINT_LOOKUP).await?;
    let mut rng = SmallRng::from_os_rng();
    let (mut count, mut busy) = (0u64, Duration::ZERO);
    while Instant::now() < deadline {
        let key = keys.choose(&mut rng).ok_or("no order keys to look up")?;
        let started = Instant::now();
        let rows = client.query(&statement, &[key]).await?;
        busy += started.elapsed();
        if rows.len() != 1 {
            return Err(format!("lookup of o_orderkey {key} returned {} rows", rows.len()).into());
        }
        count += 1;
    }
    Ok((count, busy))
}

/// Median and 99th percentile of a set of latencies.
pub struct Percentiles {
    pub p50: Duration,
    pub p99: Duration,
}

/// One connection's prepared `sql` (one bigint parameter, an order key),
/// back to back on random keys until `stop` resolves: the latency of each,
/// summarized. Any failed query fails the measurement.
pub async fn latencies(
    endpoint: &Endpoint,
    sql: &str,
    keys: Arc<Vec<i64>>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Percentiles> {
    let client = endpoint.connect().await?;
    let statement = client.prepare(sql).await?;
    let mut rng = SmallRng::from_os_rng();
    let mut samples = Vec::new();
    tokio::pin!(stop);
    loop {
        let key = keys.choose(&mut rng).ok_or("no order keys to look up")?;
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 1] = [key];
        let started = Instant::now();
        tokio::select! {
            _ = &mut stop => break,
            rows = client.query(&statement, &params) => {
                rows?;
                samples.push(started.elapsed());
            }
        }
    }
    if samples.is_empty() {
        return Err(format!("no query completed: {sql}").into());
    }
    samples.sort_unstable();
    Ok(Percentiles {
        p50: samples[samples.len() / 2],
        p99: samples[samples.len() * 99 / 100],
    })
}

/// PostgreSQL's own bulk read of `table` in binary COPY format, all bytes consumed:
/// the ceiling for a full refresh from this source. Returns the elapsed time.
pub async fn copy_out(client: &Client, table: &str) -> Result<Duration> {
    use futures::TryStreamExt;
    let started = Instant::now();
    let stream = client
        .copy_out(&format!(
            "COPY (SELECT * FROM {table}) TO STDOUT (FORMAT binary)"
        ))
        .await?;
    let bytes = stream
        .try_fold(
            0usize,
            |total, chunk| async move { Ok(total + chunk.len()) },
        )
        .await?;
    let elapsed = started.elapsed();
    if bytes == 0 {
        return Err(format!("COPY of {table} returned no bytes").into());
    }
    Ok(elapsed)
}
