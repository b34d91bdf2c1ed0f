//! Many connections under load while a full refresh runs: pgaccel against
//! PostgreSQL with the same clients and workload, in one run.
//!
//! It creates a table in PostgreSQL (127.0.0.1:5432, database `test`,
//! schema `pgaccel_bench_load`, `--rows` rows), starts pgaccel (the release
//! build) with it as an in-memory dataset, then opens `--connections`
//! connections that each run a mixed read workload for `--seconds`:
//!
//! - 80% point lookups by primary key (`WHERE id = $1`);
//! - 15% aggregates over a range of a tenth of the table (`GROUP BY grp`);
//! - 5% large results (1000 whole rows).
//!
//! Against pgaccel, the dataset is refreshed in full again and again for the
//! whole run. The same clients then run the same workload against
//! PostgreSQL directly (with at most `max_connections` less a reserve, if
//! that is lower; the report says so). It prints queries per second, p50 and
//! p99 of each kind, errors, and pgaccel's resident memory sampled each
//! second (first, highest, last), and exits non-zero if any pgaccel query
//! failed.
//!
//! ```text
//! cargo build --release
//! cargo bench --bench load -- [--connections 500] [--seconds 60] [--rows 1000000]
//! ```

#[allow(dead_code)] // the bench uses part of the TPC-H bench's server guard
#[path = "tpch/server.rs"]
mod server;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use rand::{Rng, SeedableRng};
use tokio_postgres::{Client, NoTls};

use server::Pgaccel;

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

const SCHEMA: &str = "pgaccel_bench_load";
/// Connections PostgreSQL keeps for others (superuser reserve, this bench's
/// own admin connection).
const PG_RESERVE: usize = 10;

#[derive(Parser)]
#[command(about = "Many connections with a mixed workload during a full refresh")]
struct Args {
    #[arg(long, default_value_t = 500)]
    connections: usize,
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    #[arg(long, default_value_t = 1_000_000)]
    rows: i64,
    #[command(flatten)]
    common: server::Common,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Lookup,
    Aggregate,
    Large,
}

const KINDS: [Kind; 3] = [Kind::Lookup, Kind::Aggregate, Kind::Large];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Lookup => "lookup",
            Kind::Aggregate => "aggregate",
            Kind::Large => "1000 rows",
        }
    }

    fn sql(self) -> &'static str {
        match self {
            Kind::Lookup => "SELECT * FROM items WHERE id = $1",
            Kind::Aggregate => {
                "SELECT grp, count(*), sum(amount) FROM items WHERE id >= $1 AND id < $1 + $2 GROUP BY grp"
            }
            Kind::Large => "SELECT * FROM items WHERE id >= $1 AND id < $1 + 1000",
        }
    }

    fn pick(rng: &mut impl Rng) -> Kind {
        match rng.random_range(0..100) {
            0..80 => Kind::Lookup,
            80..95 => Kind::Aggregate,
            _ => Kind::Large,
        }
    }
}

/// What the clients of one run measured.
#[derive(Default)]
struct Measured {
    /// Latencies in microseconds, per kind (in [`KINDS`] order).
    latencies: [Vec<u32>; 3],
    errors: Vec<String>,
    elapsed: Duration,
}

impl Measured {
    fn queries(&self) -> usize {
        self.latencies.iter().map(Vec::len).sum()
    }

    fn qps(&self) -> f64 {
        self.queries() as f64 / self.elapsed.as_secs_f64()
    }

    /// The `p`-th percentile latency of `kind`, in milliseconds.
    fn percentile(&mut self, kind: usize, p: f64) -> f64 {
        let values = &mut self.latencies[kind];
        if values.is_empty() {
            return f64::NAN;
        }
        values.sort_unstable();
        let at = ((values.len() - 1) as f64 * p).round() as usize;
        f64::from(values[at]) / 1000.0
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("load bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<bool> {
    let binary = server::locate_binary(args.common.pgaccel.as_deref())?;
    let dsn = format!(
        "host=127.0.0.1 port=5432 user={} dbname=test",
        args.common.pg_user
    );
    let admin = connect(&dsn).await?;
    load_table(&admin, args.rows).await?;
    let max_connections: usize = admin
        .query_one("SHOW max_connections", &[])
        .await?
        .get::<_, String>(0)
        .parse()?;
    let datasets = format!(
        "  - from: postgres:{SCHEMA}.items\n    name: items\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: {user}, pg_sslmode: disable }}\n    acceleration:\n      refresh_check_interval: 1h\n",
        user = args.common.pg_user
    );
    eprintln!("starting pgaccel and loading {} rows", args.rows);
    let pgaccel = Arc::new(Pgaccel::start_with(&binary, &datasets).await?);
    let replica_dsn = format!(
        "host=127.0.0.1 port={} user=bench dbname=test",
        pgaccel.pg_port
    );

    // pgaccel, refreshed in full over and over while the clients run.
    let stop = Arc::new(AtomicBool::new(false));
    let refresher = {
        let (pgaccel, stop) = (Arc::clone(&pgaccel), Arc::clone(&stop));
        tokio::spawn(async move {
            let mut refreshes = 0u32;
            while !stop.load(Ordering::SeqCst) {
                pgaccel.refresh("items").await?;
                refreshes += 1;
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(refreshes)
        })
    };
    let sampler = {
        let (pid, stop) = (pgaccel.pid(), Arc::clone(&stop));
        tokio::spawn(async move {
            let mut samples = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                samples.extend(rss_mib(pid));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            samples
        })
    };
    eprintln!(
        "pgaccel: {} connections for {} s",
        args.connections, args.seconds
    );
    let mut accelerated = workload(
        &replica_dsn,
        false,
        args.connections,
        args.seconds,
        args.rows,
    )
    .await?;
    stop.store(true, Ordering::SeqCst);
    let refreshes = refresher.await??;
    let rss = sampler.await?;
    drop(pgaccel);

    let pg_connections = args
        .connections
        .min(max_connections.saturating_sub(PG_RESERVE));
    eprintln!(
        "PostgreSQL: {pg_connections} connections for {} s",
        args.seconds
    );
    let mut direct = workload(&dsn, true, pg_connections, args.seconds, args.rows).await?;

    println!();
    println!(
        "| {} rows, {} s, {refreshes} full refreshes during the pgaccel run | pgaccel | PostgreSQL | ratio |",
        args.rows, args.seconds
    );
    println!("|---|---|---|---|");
    println!(
        "| connections | {} | {pg_connections}{} | |",
        args.connections,
        if pg_connections < args.connections {
            format!(" (max_connections = {max_connections})")
        } else {
            String::new()
        }
    );
    println!(
        "| queries per second | {:.0} | {:.0} | {:.2}x |",
        accelerated.qps(),
        direct.qps(),
        accelerated.qps() / direct.qps()
    );
    for (index, kind) in KINDS.iter().enumerate() {
        for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
            let (ours, theirs) = (
                accelerated.percentile(index, p),
                direct.percentile(index, p),
            );
            println!(
                "| {} {label} (ms) | {ours:.2} | {theirs:.2} | {:.2}x |",
                kind.name(),
                ours / theirs
            );
        }
    }
    println!(
        "| failed queries | {} | {} | |",
        accelerated.errors.len(),
        direct.errors.len()
    );
    if let (Some(first), Some(last)) = (rss.first(), rss.last()) {
        let highest = rss.iter().copied().fold(0.0, f64::max);
        println!(
            "| pgaccel RSS (MiB): first, highest, last of {} samples | {first:.0}, {highest:.0}, {last:.0} | | |",
            rss.len()
        );
    }
    for error in accelerated.errors.iter().take(5) {
        eprintln!("pgaccel query failed: {error}");
    }
    for error in direct.errors.iter().take(5) {
        eprintln!("PostgreSQL query failed: {error}");
    }
    Ok(accelerated.errors.is_empty())
}

async fn connect(dsn: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(dsn, NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// The table, created once per row count (kept for the next run).
async fn load_table(admin: &Client, rows: i64) -> Result<()> {
    let existing = admin
        .query_opt(&format!("SELECT count(*) FROM {SCHEMA}.items"), &[])
        .await
        .ok()
        .flatten()
        .map(|row| row.get::<_, i64>(0));
    if existing == Some(rows) {
        return Ok(());
    }
    eprintln!("creating {SCHEMA}.items with {rows} rows");
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA};
             CREATE TABLE {SCHEMA}.items (id bigint PRIMARY KEY, grp int NOT NULL,
                 amount numeric(12, 2) NOT NULL, name text NOT NULL, created timestamptz NOT NULL);
             INSERT INTO {SCHEMA}.items
             SELECT i, i % 100, (i % 10000) / 100.0, 'item ' || i,
                    timestamptz '2024-01-01' + i * interval '1 second'
             FROM generate_series(1, {rows}) AS i;
             ANALYZE {SCHEMA}.items"
        ))
        .await?;
    Ok(())
}

/// `connections` clients running the mixed workload for `seconds`.
/// On PostgreSQL (`direct`) the table is found through the search path.
async fn workload(
    dsn: &str,
    direct: bool,
    connections: usize,
    seconds: u64,
    rows: i64,
) -> Result<Measured> {
    let mut clients = Vec::with_capacity(connections);
    for _ in 0..connections {
        let client = connect(dsn).await?;
        if direct {
            client
                .batch_execute(&format!("SET search_path = {SCHEMA}"))
                .await?;
        }
        clients.push(client);
    }
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|client| tokio::spawn(client_loop(client, until, rows)))
        .collect();
    let mut measured = Measured::default();
    for task in tasks {
        let one = task.await?;
        for (all, some) in measured.latencies.iter_mut().zip(one.latencies) {
            all.extend(some);
        }
        measured.errors.extend(one.errors);
    }
    measured.elapsed = started.elapsed();
    Ok(measured)
}

async fn client_loop(client: Client, until: Instant, rows: i64) -> Measured {
    let mut measured = Measured::default();
    let mut statements = Vec::new();
    for kind in KINDS {
        match client.prepare(kind.sql()).await {
            Ok(statement) => statements.push(statement),
            Err(e) => {
                measured
                    .errors
                    .push(format!("prepare {}: {e}", kind.name()));
                return measured;
            }
        }
    }
    let mut rng = rand::rngs::StdRng::from_rng(&mut rand::rng());
    let span = (rows / 10).max(1);
    while Instant::now() < until {
        let kind = Kind::pick(&mut rng);
        let index = KINDS.iter().position(|k| *k == kind).unwrap_or(0);
        let started = Instant::now();
        let answered = match kind {
            Kind::Lookup => {
                let id: i64 = rng.random_range(1..=rows);
                client.query(&statements[index], &[&id]).await
            }
            Kind::Aggregate => {
                let from: i64 = rng.random_range(1..=rows);
                client.query(&statements[index], &[&from, &span]).await
            }
            Kind::Large => {
                let from: i64 = rng.random_range(1..=rows.saturating_sub(1000).max(1));
                client.query(&statements[index], &[&from]).await
            }
        };
        match answered {
            Ok(_) => measured.latencies[index].push(started.elapsed().as_micros() as u32),
            Err(e) => measured.errors.push(format!("{}: {e}", kind.name())),
        }
    }
    measured
}

/// The resident memory of process `pid` in MiB (Linux).
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}
