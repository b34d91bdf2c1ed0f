//! Point lookups and per-statement overhead, pgaccel against PostgreSQL, with
//! pgbench as the client, every figure with its baseline from the same run.
//!
//! It reuses the TPC-H `orders` table of the tpch bench (1.5M rows at scale
//! factor 1, loaded into PostgreSQL if missing), starts pgaccel on it, and runs
//! pgbench with `SELECT * FROM orders WHERE o_orderkey = :key` over existing
//! keys, in `-M prepared` and `-M simple`, with 1, 4 and 32 clients, against
//! both; then `SELECT 1` on one client for the bare round trip. It prints TPS,
//! mean and p99 latency (from pgbench's per-transaction log), the ratios and
//! the targets (lookups at 4 and 32 clients: at least 2x PostgreSQL's TPS
//! prepared and 1.5x simple, p99 at or below PostgreSQL's; `SELECT 1` at least
//! as fast). Each
//! workload runs `--rounds` times on each server, alternating, and the
//! medians are compared, which keeps a noisy machine's swings out of the ratio.
//!
//! With `--engine duckdb` or `--engine sqlite`, pgaccel keeps `orders` in a
//! file of that engine queried in place (lookups go through the file's key
//! index), and the figures are reported without targets; it also times a
//! few grouped aggregates over the file against PostgreSQL (median of twice
//! `--rounds` runs), computed by the file's engine where pgaccel hands them
//! to it.
//!
//! ```text
//! cargo build --release
//! cargo bench --bench lookups -- [--sf 1] [--seconds 5] [--rounds 3] [--engine arrow] [--pgaccel PATH]
//! ```

// Shared with the tpch bench; see the note there on `#[path]`.
#[path = "tpch/load.rs"]
#[allow(dead_code)]
mod load;
#[allow(dead_code)] // each bench uses part of the shared report
#[path = "tpch/report.rs"]
mod report;
#[path = "tpch/server.rs"]
#[allow(dead_code)]
mod server;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use tokio_postgres::NoTls;

use report::{Kind, Report, Target, Value};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// TPC-H order keys are sparse: the i-th order (from 0) has key
/// (i / 8) * 32 + i % 8 + 1, so every lookup hits an existing row.
const LOOKUP_SCRIPT: &str = "\\set i random(0, :orders - 1)\n\\set key (:i / 8) * 32 + :i % 8 + 1\nSELECT * FROM orders WHERE o_orderkey = :key;\n";
const SELECT_ONE_SCRIPT: &str = "SELECT 1;\n";

#[derive(Parser)]
#[command(about = "Point lookups through pgaccel against PostgreSQL, with pgbench")]
struct Args {
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Seconds per pgbench run.
    #[arg(long, default_value_t = 5)]
    seconds: u32,
    /// Runs of each workload on each server, alternating between them so
    /// that both see the same machine; the medians are reported.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Where pgaccel keeps `orders`: `arrow` (in memory), or a `duckdb` or
    /// `sqlite` file queried in place.
    #[arg(long, default_value = "arrow")]
    engine: String,
    #[command(flatten)]
    common: server::Common,
}

/// One pgbench run's figures.
struct Run {
    tps: f64,
    mean_ms: f64,
    p99_ms: f64,
}

impl Run {
    /// Each figure's median over `runs` (not empty).
    fn median(runs: Vec<Run>) -> Run {
        let median = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        Run {
            tps: median(runs.iter().map(|run| run.tps).collect()),
            mean_ms: median(runs.iter().map(|run| run.mean_ms).collect()),
            p99_ms: median(runs.iter().map(|run| run.p99_ms).collect()),
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lookups bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    let binary = server::locate_binary(args.common.pgaccel.as_deref())?;
    let schema = format!("pgaccel_bench_sf{}", args.sf).replace('.', "_");
    let dsn = format!(
        "host=127.0.0.1 port=5432 user={} dbname=test",
        args.common.pg_user
    );
    let (admin, connection) = tokio_postgres::connect(&dsn, NoTls).await?;
    tokio::spawn(connection);
    let rows = load::prepare(&admin, &schema, args.sf, true).await?.rows;
    println!("orders: {} rows in schema {schema}", rows.orders);
    println!("starting pgaccel (initial load) ...");
    let source = server::Source {
        schema: &schema,
        user: &args.common.pg_user,
    };
    let files = tempfile::tempdir()?;
    let pgaccel = match args.engine.as_str() {
        "arrow" => server::Pgaccel::start(&binary, Some(&source)).await?,
        engine @ ("duckdb" | "sqlite") => {
            let file = files.path().join("orders.db");
            let dataset = file_dataset(&source, "orders", engine, &file);
            server::Pgaccel::start_with(&binary, &dataset).await?
        }
        other => return Err(format!("--engine {other}: expected arrow, duckdb or sqlite").into()),
    };
    pgaccel.wait_statistics().await?;
    let in_file = args.engine != "arrow";
    let label = |name: &str| match in_file {
        true => format!("{name} ({} file)", args.engine),
        false => name.to_owned(),
    };
    let dir = tempfile::tempdir()?;
    let lookup = write_script(dir.path(), "lookup.sql", LOOKUP_SCRIPT)?;
    let select_one = write_script(dir.path(), "select1.sql", SELECT_ONE_SCRIPT)?;

    let postgres = Server {
        port: 5432,
        search_path: Some(schema.as_str()),
        user: &args.common.pg_user,
    };
    let accelerated = Server {
        port: pgaccel.pg_port,
        search_path: None,
        user: &args.common.pg_user,
    };
    let mut figures = Report::default();
    for (name, script, mode, clients, tps_target) in [
        ("lookup, prepared, 1 client", &lookup, "prepared", 1, None),
        (
            "lookup, prepared, 4 clients",
            &lookup,
            "prepared",
            4,
            Some(2.0),
        ),
        (
            "lookup, prepared, 32 clients",
            &lookup,
            "prepared",
            32,
            Some(2.0),
        ),
        ("lookup, simple, 1 client", &lookup, "simple", 1, None),
        ("lookup, simple, 4 clients", &lookup, "simple", 4, Some(1.5)),
        (
            "lookup, simple, 32 clients",
            &lookup,
            "simple",
            32,
            Some(1.5),
        ),
        (
            "SELECT 1, prepared, 1 client",
            &select_one,
            "prepared",
            1,
            None,
        ),
        ("SELECT 1, simple, 1 client", &select_one, "simple", 1, None),
    ] {
        let name = label(name);
        let tps_target = tps_target.filter(|_| !in_file);
        let bench = Pgbench {
            script,
            mode,
            clients,
            seconds: args.seconds,
            orders: rows.orders,
            log_dir: dir.path(),
        };
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..args.rounds.max(1) {
            ours.push(bench.run(&accelerated)?);
            theirs.push(bench.run(&postgres)?);
        }
        let ratios: Vec<f64> = ours
            .iter()
            .zip(&theirs)
            .map(|(ours, theirs)| ours.tps / theirs.tps)
            .collect();
        let (ours, theirs) = (Run::median(ours), Run::median(theirs));
        let spread = |values: &[f64]| {
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(0.0, f64::max);
            format!("{min:.2}x-{max:.2}x")
        };
        println!(
            "{name}: TPS {:.0} vs {:.0} (per round {}), mean {:.3} ms vs {:.3} ms, p99 {:.3} ms vs {:.3} ms",
            ours.tps,
            theirs.tps,
            spread(&ratios),
            ours.mean_ms,
            theirs.mean_ms,
            ours.p99_ms,
            theirs.p99_ms
        );
        let is_lookup = tps_target.is_some();
        figures.add(
            &format!("{name}: TPS"),
            Kind::PerSecond("tx"),
            Value::Got(ours.tps),
            Value::Got(theirs.tps),
            tps_target.map_or(Target::Report, Target::AtLeast),
        );
        // The round trip of one client is its mean latency.
        let (figure, ours_ms, theirs_ms) = if clients == 1 {
            ("mean latency", ours.mean_ms, theirs.mean_ms)
        } else {
            ("p99 latency", ours.p99_ms, theirs.p99_ms)
        };
        let latency_target = if !in_file && (is_lookup || name.starts_with("SELECT 1")) {
            Target::AtLeast(1.0)
        } else {
            Target::Report
        };
        figures.add(
            &format!("{name}: {figure}"),
            Kind::Millis,
            Value::Got(ours_ms),
            Value::Got(theirs_ms),
            latency_target,
        );
    }
    if in_file {
        aggregates(&mut figures, &admin, &schema, pgaccel.pg_port, &args).await?;
    }
    figures.print();
    let report_name = match in_file {
        true => format!("lookups_{}", args.engine),
        false => "lookups".to_owned(),
    };
    figures.write_json(args.common.json.as_deref(), &report_name)?;
    drop(pgaccel);
    Ok(())
}

/// Aggregates over `orders` in a file queried in place (computed by the
/// file's engine where it answers as pgaccel does), each pgaccel's median
/// time of `--rounds` runs (after one warm-up) against PostgreSQL's.
async fn aggregates(
    figures: &mut Report,
    postgres: &tokio_postgres::Client,
    schema: &str,
    port: u16,
    args: &Args,
) -> Result<()> {
    let dsn = format!(
        "host=127.0.0.1 port={port} user={} dbname=test",
        args.common.pg_user
    );
    let (pgaccel, connection) = tokio_postgres::connect(&dsn, NoTls).await?;
    tokio::spawn(connection);
    let queries = [
        (
            "count by status",
            "SELECT o_orderstatus, count(*), min(o_orderkey), max(o_clerk) FROM orders GROUP BY o_orderstatus ORDER BY 1",
        ),
        (
            "filtered count by priority",
            "SELECT o_orderpriority, count(*), sum(o_shippriority) FROM orders WHERE o_custkey < 50000 GROUP BY o_orderpriority ORDER BY 1",
        ),
        (
            "revenue by status (decimal sum)",
            "SELECT o_orderstatus, sum(o_totalprice), max(o_orderdate) FROM orders GROUP BY o_orderstatus ORDER BY 1",
        ),
        (
            "averages by priority (avg, decimal arithmetic)",
            "SELECT o_orderpriority, avg(o_totalprice), sum(o_totalprice * 0.9), avg(o_shippriority) FROM orders GROUP BY o_orderpriority ORDER BY 1",
        ),
    ];
    for (name, sql) in queries {
        let theirs_sql = sql.replace(" orders", &format!(" {schema}.orders"));
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        let ours_rows = pgaccel.simple_query(sql).await?.len();
        let theirs_rows = postgres.simple_query(&theirs_sql).await?.len();
        if ours_rows != theirs_rows {
            return Err(format!("{name}: {ours_rows} messages vs {theirs_rows}").into());
        }
        for _ in 0..args.rounds.max(1) * 2 {
            let start = std::time::Instant::now();
            pgaccel.simple_query(sql).await?;
            ours.push(start.elapsed().as_secs_f64() * 1000.0);
            let start = std::time::Instant::now();
            postgres.simple_query(&theirs_sql).await?;
            theirs.push(start.elapsed().as_secs_f64() * 1000.0);
        }
        let median = |mut values: Vec<f64>| {
            values.sort_by(f64::total_cmp);
            values[values.len() / 2]
        };
        let (ours, theirs) = (median(ours), median(theirs));
        let plan = pgaccel.simple_query(&format!("EXPLAIN {sql}")).await?;
        let in_file = plan.iter().any(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => {
                (0..row.len()).any(|i| row.get(i).is_some_and(|t| t.contains("aggregate=SELECT")))
            }
            _ => false,
        });
        let computed = if in_file { "in the file" } else { "by pgaccel" };
        println!(
            "{name} ({} file, computed {computed}): {ours:.1} ms vs {theirs:.1} ms",
            args.engine
        );
        figures.add(
            &format!(
                "aggregate, {name} ({} file, computed {computed})",
                args.engine
            ),
            Kind::Millis,
            Value::Got(ours),
            Value::Got(theirs),
            Target::Report,
        );
    }
    Ok(())
}

/// The dataset `table` of `source` kept in `file` by `engine` (`duckdb`
/// or `sqlite`), queried in place.
fn file_dataset(source: &server::Source<'_>, table: &str, engine: &str, file: &Path) -> String {
    format!(
        "  - from: postgres:{schema}.{table}\n    name: {table}\n    params: {{ pg_host: 127.0.0.1, \
         pg_port: 5432, pg_db: test, pg_user: {user}, pg_sslmode: disable }}\n    acceleration:\n      \
         engine: {engine}\n      mode: file\n      params: {{ {engine}_file: '{file}' }}\n",
        schema = source.schema,
        user = source.user,
        file = file.display(),
    )
}

fn write_script(dir: &Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text)?;
    Ok(path)
}

/// Where pgbench connects.
struct Server<'a> {
    port: u16,
    /// PostgreSQL finds `orders` in the bench schema; pgaccel serves it in `public`.
    search_path: Option<&'a str>,
    user: &'a str,
}

struct Pgbench<'a> {
    script: &'a Path,
    mode: &'a str,
    clients: u32,
    seconds: u32,
    orders: u64,
    log_dir: &'a Path,
}

impl Pgbench<'_> {
    fn run(&self, target: &Server) -> Result<Run> {
        let prefix = self.log_dir.join(format!("log_{}", target.port));
        clear_logs(self.log_dir)?;
        let mut command = Command::new("pgbench");
        command
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &target.port.to_string(),
                "-U",
                target.user,
                "-n",
            ])
            .args([
                "-M",
                self.mode,
                "-c",
                &self.clients.to_string(),
                "-j",
                &self.clients.min(2).to_string(),
            ])
            .args([
                "-T",
                &self.seconds.to_string(),
                "-D",
                &format!("orders={}", self.orders),
            ])
            .arg("-l")
            .arg(format!("--log-prefix={}", prefix.display()))
            .arg("-f")
            .arg(self.script)
            .arg("test");
        if let Some(search_path) = target.search_path {
            command.env("PGOPTIONS", format!("-c search_path={search_path}"));
        }
        let output = command
            .output()
            .map_err(|e| format!("cannot run pgbench: {e}"))?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            return Err(format!(
                "pgbench failed: {}{}",
                text,
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        let mut latencies = read_latencies(self.log_dir)?;
        latencies.sort_unstable();
        let p99 = latencies
            .get(latencies.len() * 99 / 100)
            .copied()
            .unwrap_or(0) as f64
            / 1e3;
        Ok(Run {
            tps: figure(&text, "tps = ")?,
            mean_ms: figure(&text, "latency average = ")?,
            p99_ms: p99,
        })
    }
}

fn figure(output: &str, label: &str) -> Result<f64> {
    output
        .lines()
        .find_map(|line| line.trim().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .ok_or_else(|| format!("no `{label}` in pgbench output:\n{output}").into())
}

fn clear_logs(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("log_"))
        {
            std::fs::remove_file(path)?;
        }
    }
    Ok(())
}

/// Per-transaction latencies (µs) from pgbench's logs: the third field.
fn read_latencies(dir: &Path) -> Result<Vec<u64>> {
    let mut latencies = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if !path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with("log_"))
        {
            continue;
        }
        for line in std::fs::read_to_string(&path)?.lines() {
            if let Some(latency) = line.split_whitespace().nth(2).and_then(|v| v.parse().ok()) {
                latencies.push(latency);
            }
        }
    }
    Ok(latencies)
}
