//! Replica cold start: from an acceleration snapshot against a full refresh
//! from PostgreSQL, of the same table in the same run (issue: snapshots).
//!
//! It loads TPC-H (`lineitem`, `orders`) into PostgreSQL (127.0.0.1:5432,
//! database `test`, schema `pgaccel_bench_sf<N>`, shared with the TPC-H
//! bench), then alternates, for each round:
//!
//! 1. **baseline**: a pgaccel with `lineitem` in a DuckDB file that does not
//!    exist yet, loading it from PostgreSQL (a full refresh);
//! 2. **snapshot**: a replica with an empty folder, `refresh_mode: snapshot`
//!    and an unreachable source, restoring the snapshot a writer published
//!    beforehand to the snapshot location (a folder, or S3 with
//!    `--s3-endpoint`).
//!
//! The figure the target applies to is the time from spawning the process
//! to the first answer of `SELECT count(*) FROM lineitem` on its PostgreSQL
//! port. Beside it: the time to the answer of a query that reads every row
//! (asked right after; a replica may answer it from its file in place), and
//! the time until the rows are in memory. Bytes moved: the
//! loopback traffic during the start (PostgreSQL to pgaccel for the
//! baseline; S3 to pgaccel for an S3 location) and the snapshot bytes
//! pgaccel downloaded (`dataset_acceleration_snapshot_bytes`).
//!
//! ```text
//! cargo build --release
//! cargo bench --bench cold_start -- [--sf 1] [--rounds 3] [--s3-endpoint http://127.0.0.1:45999]
//! ```

#[allow(dead_code)] // the TPC-H loader serves both benches
#[path = "tpch/load.rs"]
mod load;
#[allow(dead_code)] // each bench uses part of the shared report
#[path = "tpch/report.rs"]
mod report;
#[allow(dead_code)] // the bench uses part of the TPC-H bench's server guard
#[path = "tpch/server.rs"]
mod server;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio_postgres::NoTls;

use report::{Kind, Report, Target, Value, millis};
use server::Pgaccel;

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// The target of the issue: a replica starts in at most a fifth of the time.
const TARGET_RATIO: f64 = 0.2;

#[derive(Parser)]
#[command(about = "Replica cold start from a snapshot against a full refresh")]
struct Args {
    /// TPC-H scale factor.
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Starts measured on each side (the median is reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Keep snapshots on this S3-compatible endpoint (a bucket is created)
    /// instead of in a local folder.
    #[arg(long)]
    s3_endpoint: Option<String>,
    /// Reuse the TPC-H schema of an earlier run when its row counts match.
    #[arg(long)]
    skip_load: bool,
    #[command(flatten)]
    common: server::Common,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("cold-start bench failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One cold start, measured.
struct Start {
    /// Spawn to the first answer.
    took: Duration,
    /// Spawn to the answer of a query that reads every row, asked right
    /// after the first (a replica may still answer it from its file).
    scan: Duration,
    /// Spawn until the rows are in memory (`dataset_acceleration_bytes`).
    in_memory: Duration,
    /// The scanning query's answer, the same on both sides.
    sum: String,
    /// Loopback bytes received meanwhile.
    loopback: u64,
    /// Snapshot bytes pgaccel downloaded.
    downloaded: f64,
    rows: i64,
}

async fn run(args: Args) -> Result<()> {
    let binary = server::locate_binary(args.common.pgaccel.as_deref())?;
    let schema = format!("pgaccel_bench_sf{}", args.sf).replace('.', "_");
    let (admin, connection) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port=5432 user={} dbname=test",
            args.common.pg_user
        ),
        NoTls,
    )
    .await?;
    tokio::spawn(connection);
    let loaded = load::prepare(&admin, &schema, args.sf, args.skip_load).await?;
    let table_bytes: i64 = admin
        .query_one(&format!("SELECT pg_table_size('{schema}.lineitem')"), &[])
        .await?
        .get(0);
    println!(
        "TPC-H sf {}: lineitem {} rows, {:.0} MB in PostgreSQL",
        args.sf,
        loaded.rows.lineitem,
        table_bytes as f64 / 1e6
    );

    let work = tempfile::Builder::new()
        .prefix("pgaccel-cold-start-")
        .tempdir()?;
    let snapshots = match &args.s3_endpoint {
        Some(endpoint) => s3_block(endpoint).await?,
        None => format!(
            "snapshots:\n  enabled: true\n  location: 'file://{}'\n",
            work.path().join("snapshots").display()
        ),
    };
    let params = format!(
        "pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: {}, pg_sslmode: disable",
        args.common.pg_user
    );
    let entry = |file: &Path, params: &str, extra: &str| {
        format!(
            "  - from: postgres:{schema}.lineitem\n    name: lineitem\n    params: {{ {params} }}\n    acceleration:\n      engine: duckdb\n      mode: file\n      params: {{ duckdb_file: '{}' }}\n{extra}",
            file.display()
        )
    };

    // The writer publishes one snapshot of the loaded table.
    println!("publishing a snapshot of lineitem ...");
    {
        let writer = Pgaccel::start_with_config(
            &binary,
            &snapshots,
            &entry(
                &work.path().join("writer.db"),
                &params,
                "      snapshots: create_only\n",
            ),
        )
        .await?;
        let deadline = Instant::now() + Duration::from_secs(1800);
        while writer.dataset_status("lineitem").await?["snapshot"]["origin"] != "published" {
            if Instant::now() > deadline {
                return Err("the writer published no snapshot within 30 minutes".into());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    let unreachable = "pg_host: 127.0.0.1, pg_port: 1, pg_db: test, pg_user: nobody";
    let mut baseline = Vec::new();
    let mut replica = Vec::new();
    for round in 1..=args.rounds {
        let folder = work.path().join(format!("round{round}"));
        std::fs::create_dir_all(&folder)?;
        let full = cold_start(&binary, "", &entry(&folder.join("full.db"), &params, "")).await?;
        println!(
            "round {round}: full refresh {:.2} s, {} rows",
            full.took.as_secs_f64(),
            full.rows
        );
        let restored = cold_start(
            &binary,
            &snapshots,
            &entry(
                &folder.join("replica.db"),
                unreachable,
                "      refresh_mode: snapshot\n      snapshots: bootstrap_only\n",
            ),
        )
        .await?;
        println!(
            "round {round}: snapshot     {:.2} s, {} rows",
            restored.took.as_secs_f64(),
            restored.rows
        );
        println!(
            "round {round}: snapshot scan answered at {:.2} s, rows in memory at {:.2} s (full refresh: {:.2} s, {:.2} s)",
            restored.scan.as_secs_f64(),
            restored.in_memory.as_secs_f64(),
            full.scan.as_secs_f64(),
            full.in_memory.as_secs_f64()
        );
        if restored.sum != full.sum {
            return Err(format!(
                "the replica answers {} where the full refresh answers {}",
                restored.sum, full.sum
            )
            .into());
        }
        if restored.rows != full.rows {
            return Err(format!(
                "the replica serves {} rows where the full refresh loaded {}",
                restored.rows, full.rows
            )
            .into());
        }
        baseline.push(full);
        replica.push(restored);
    }
    let figures = figures(&baseline, &replica, table_bytes);
    figures.print();
    figures.write_json(args.common.json.as_deref(), "cold_start")?;
    Ok(())
}

/// Starts pgaccel with `top` and `datasets`, and times it to the first
/// answer of a count of `lineitem`.
async fn cold_start(binary: &Path, top: &str, datasets: &str) -> Result<Start> {
    let received = loopback_received()?;
    let started = Instant::now();
    let server = Pgaccel::start_with_config(binary, top, datasets).await?;
    let (client, connection) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user=postgres dbname=test",
            server.pg_port
        ),
        NoTls,
    )
    .await?;
    tokio::spawn(connection);
    let rows: i64 = client
        .query_one("SELECT count(*) FROM lineitem", &[])
        .await?
        .get(0);
    let took = started.elapsed();
    let sum: String = client
        .query_one(
            "SELECT sum(l_extendedprice * l_discount)::text FROM lineitem WHERE l_quantity < 24",
            &[],
        )
        .await?
        .get(0);
    let scan = started.elapsed();
    let deadline = Instant::now() + Duration::from_secs(600);
    while server
        .metric("dataset_acceleration_bytes", "lineitem")
        .await?
        .unwrap_or(0.0)
        <= 0.0
    {
        if Instant::now() > deadline {
            return Err("the rows were not in memory within 10 minutes".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let in_memory = started.elapsed();
    let loopback = loopback_received()?.saturating_sub(received);
    let downloaded = server
        .metric("dataset_acceleration_snapshot_bytes", "lineitem")
        .await?
        .unwrap_or(0.0);
    Ok(Start {
        took,
        scan,
        in_memory,
        sum,
        loopback,
        downloaded,
        rows,
    })
}

/// Bytes the loopback interface has received, from /proc/net/dev.
fn loopback_received() -> Result<u64> {
    let dev = std::fs::read_to_string("/proc/net/dev")?;
    dev.lines()
        .find_map(|line| line.trim_start().strip_prefix("lo:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|bytes| bytes.parse().ok())
        .ok_or_else(|| "no lo line in /proc/net/dev".into())
}

/// A snapshots block on a new bucket of the S3-compatible `endpoint`.
async fn s3_block(endpoint: &str) -> Result<String> {
    let bucket = format!("pgaccel-cold-start-{}", std::process::id());
    // An S3-compatible test server (moto) creates a bucket on a bare PUT.
    let response = reqwest::Client::new()
        .put(format!("{endpoint}/{bucket}"))
        .send()
        .await?;
    if !response.status().is_success() {
        return Err(format!("cannot create bucket {bucket}: {}", response.status()).into());
    }
    Ok(format!(
        "snapshots:\n  enabled: true\n  location: s3://{bucket}/snapshots/\n  params: {{ s3_auth: key, s3_key: test, s3_secret: test, s3_region: us-east-1, s3_endpoint: '{endpoint}', allow_http: true }}\n"
    ))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The medians of the rounds: each figure of a replica starting from the
/// snapshot against a pgaccel loading the table from PostgreSQL.
fn figures(baseline: &[Start], replica: &[Start], table_bytes: i64) -> Report {
    let mut figures = Report::default();
    let at = |starts: &[Start], of: fn(&Start) -> Duration| {
        Value::Got(median(starts.iter().map(|s| millis(of(s))).collect()))
    };
    for (figure, of, target) in [
        (
            "replica start to first answer: snapshot vs full refresh",
            (|s: &Start| s.took) as fn(&Start) -> Duration,
            Target::AtMost(TARGET_RATIO),
        ),
        (
            "replica start to a scan of every row answered",
            |s| s.scan,
            Target::Report,
        ),
        (
            "replica start to its rows in memory",
            |s| s.in_memory,
            Target::Report,
        ),
    ] {
        figures.add(
            figure,
            Kind::MillisRelative,
            at(replica, of),
            at(baseline, of),
            target,
        );
    }
    let bytes = |starts: &[Start], of: fn(&Start) -> f64| {
        Value::Got(median(starts.iter().map(of).collect()))
    };
    figures.add(
        "replica start: loopback bytes received",
        Kind::Bytes,
        bytes(replica, |s| s.loopback as f64),
        bytes(baseline, |s| s.loopback as f64),
        Target::Report,
    );
    figures.note(format!(
        "cold start: median of {} rounds; lineitem occupies {:.0} MB in PostgreSQL; the replica downloaded {:.0} MB of snapshot",
        baseline.len(),
        table_bytes as f64 / 1e6,
        median(replica.iter().map(|s| s.downloaded).collect()) / 1e6
    ));
    figures
}
