//! TPC-H's 22 queries over all 8 tables: pgaccel over its wire port against
//! PostgreSQL and against DuckDB in this process, all in one run, each answer
//! of pgaccel compared with PostgreSQL's.
//!
//! It generates the tables with `tpchgen`, loads them into PostgreSQL
//! (127.0.0.1:5432, database `test`, schema `pgaccel_bench22_sf<N>`) and into
//! an in-memory DuckDB, starts the pgaccel binary on free ports with the 8
//! tables accelerated, then times each query (median of `--runs` after one
//! warm-up, simple query protocol) on the three. A query PostgreSQL does not
//! finish within `--timeout` is reported as at least that long.
//!
//! ```text
//! cargo build --release
//! cargo bench --bench tpch22 -- [--sf 1] [--runs 3] [--timeout 300s] [--json tpch22.json] [--skip-load] [--sorted]
//! ```

#[path = "tpch/all_tables.rs"]
mod all_tables;
#[allow(dead_code)] // the bench times queries as the TPC-H bench does
#[path = "tpch/measure.rs"]
mod measure;
#[allow(dead_code)] // each bench uses part of the shared report
#[path = "tpch/report.rs"]
mod report;
#[allow(dead_code)] // the bench uses part of the TPC-H bench's server guard
#[path = "tpch/server.rs"]
mod server;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;
use tokio_postgres::{Client, NoTls};

use report::{Kind, Report, Target, Value};
use server::Pgaccel;

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

#[derive(Parser)]
#[command(about = "TPC-H's 22 queries: pgaccel against PostgreSQL and DuckDB")]
struct Args {
    /// TPC-H scale factor (1 = 6M lineitem rows).
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Timed runs per query, after one warm-up.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// A PostgreSQL query still running after this long is stopped and
    /// reported as at least this long.
    #[arg(long, default_value = "300s", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Reuse a complete schema of an earlier run.
    #[arg(long)]
    skip_load: bool,
    /// Accelerate `lineitem` and `orders` with `sort_by` on the dates the
    /// queries filter them by (`l_shipdate`, `o_orderdate`), so that date
    /// ranges skip batches.
    #[arg(long)]
    sorted: bool,
    #[command(flatten)]
    common: server::Common,
}

/// One query's figures, in milliseconds.
struct Timing {
    name: String,
    postgres: Measured,
    pgaccel: Measured,
    duckdb: Measured,
    /// pgaccel's rows equal PostgreSQL's, as text.
    identical: Option<bool>,
}

enum Measured {
    Millis(f64),
    /// Stopped at the timeout: at least this long.
    AtLeast(f64),
    Failed(String),
}

impl Measured {
    fn millis(&self) -> Option<f64> {
        match self {
            Measured::Millis(ms) | Measured::AtLeast(ms) => Some(*ms),
            Measured::Failed(_) => None,
        }
    }

    fn cell(&self) -> String {
        match self {
            Measured::Millis(ms) => format!("{ms:.1}"),
            Measured::AtLeast(ms) => format!("≥ {ms:.0}"),
            Measured::Failed(_) => "failed".to_owned(),
        }
    }

    fn json(&self) -> serde_json::Value {
        match self {
            Measured::Millis(ms) => json!(ms),
            Measured::AtLeast(ms) => json!({ "at_least": ms }),
            Measured::Failed(why) => json!({ "failed": why }),
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("tpch22: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    let binary = server::locate_binary(args.common.pgaccel.as_deref())?;
    let schema = format!("pgaccel_bench22_sf{}", args.sf).replace('.', "_");
    let admin = connect(&format!(
        "host=127.0.0.1 port=5432 user={} dbname=test",
        args.common.pg_user
    ))
    .await?;
    prepare_postgres(&admin, &schema, args.sf, args.skip_load).await?;
    println!("loading DuckDB (in memory) ...");
    let duckdb = load_duckdb(args.sf).await?;
    println!("starting pgaccel with the 8 tables ...");
    let started = Instant::now();
    let datasets: Vec<String> = all_tables::TABLES
        .iter()
        .map(|table| {
            let sort_by = match *table {
                "lineitem" if args.sorted => "    acceleration: { sort_by: l_shipdate }\n",
                "orders" if args.sorted => "    acceleration: { sort_by: o_orderdate }\n",
                _ => "",
            };
            format!(
                "  - from: postgres:{schema}.{table}\n    name: {table}\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: {}, pg_sslmode: disable }}\n{sort_by}",
                args.common.pg_user
            )
        })
        .collect();
    let pgaccel = Pgaccel::start_with(&binary, &datasets.join("")).await?;
    println!("  loaded in {:.1} s", started.elapsed().as_secs_f64());
    let replica = connect(&format!(
        "host=127.0.0.1 port={} user={} dbname=test",
        pgaccel.pg_port, args.common.pg_user
    ))
    .await?;
    admin
        .batch_execute(&format!(
            "SET search_path TO {schema}; SET statement_timeout = {}",
            args.timeout.as_millis()
        ))
        .await?;

    let mut timings = Vec::new();
    for (name, sql) in all_tables::queries() {
        let (postgres, expected) = time_postgres(&admin, &sql, args.runs, args.timeout).await;
        let (pgaccel_time, found) = match time_wire(&replica, &sql, args.runs).await {
            Ok((ms, rows)) => (Measured::Millis(ms), Some(rows)),
            Err(e) => (Measured::Failed(e.to_string()), None),
        };
        let identical = expected.zip(found).map(|(a, b)| a == b);
        let duckdb_time = match time_duckdb(&duckdb, &sql, args.runs).await {
            Ok(ms) => Measured::Millis(ms),
            Err(e) => Measured::Failed(e.to_string()),
        };
        println!(
            "{name}: PostgreSQL {} ms, pgaccel {} ms, DuckDB {} ms{}",
            postgres.cell(),
            pgaccel_time.cell(),
            duckdb_time.cell(),
            match identical {
                Some(false) => ", ANSWERS DIFFER",
                _ => "",
            }
        );
        timings.push(Timing {
            name,
            postgres,
            pgaccel: pgaccel_time,
            duckdb: duckdb_time,
            identical,
        });
    }
    print_results(&args, &timings)?;
    drop(pgaccel);
    Ok(())
}

async fn connect(conninfo: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(conninfo, NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Loads the schema unless `skip_load` finds it complete (its comment
/// records the scale factor once every table is in).
async fn prepare_postgres(admin: &Client, schema: &str, sf: f64, skip_load: bool) -> Result<()> {
    let mark = format!("tpch22 sf {sf} complete");
    if skip_load {
        let found: Option<String> = admin
            .query_opt(
                "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
                &[&schema],
            )
            .await?
            .and_then(|row| row.get(0));
        if found.as_deref() == Some(mark.as_str()) {
            println!("reusing schema {schema}");
            return Ok(());
        }
    }
    println!("loading TPC-H sf {sf} into PostgreSQL schema {schema} ...");
    let started = Instant::now();
    admin
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))
        .await?;
    all_tables::load(admin, schema, sf).await?;
    admin
        .batch_execute(&format!("COMMENT ON SCHEMA {schema} IS '{mark}'"))
        .await?;
    println!("  loaded in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// An in-memory DuckDB holding the 8 tables (through files of generated
/// rows, which DuckDB's COPY reads).
async fn load_duckdb(sf: f64) -> Result<duckdb::Connection> {
    let connection = duckdb::Connection::open_in_memory()?;
    connection.execute_batch(&all_tables::DDL.replace("{schema}.", ""))?;
    let folder = tempfile::tempdir()?;
    for table in all_tables::TABLES {
        let path = folder.path().join(format!("{table}.tbl"));
        let (sender, mut chunks) = tokio::sync::mpsc::channel(4);
        let producer = tokio::task::spawn_blocking(move || all_tables::generate(table, sf, sender));
        let mut file = std::fs::File::create(&path)?;
        while let Some(chunk) = chunks.recv().await {
            std::io::Write::write_all(&mut file, &chunk)?;
        }
        producer.await?;
        drop(file);
        connection.execute_batch(&format!(
            "COPY {table} FROM '{}' (DELIMITER '|', HEADER false)",
            path.display()
        ))?;
        std::fs::remove_file(&path)?;
    }
    Ok(connection)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The median time of `sql` over a wire connection in milliseconds, and
/// its rows.
async fn time_wire(
    client: &Client,
    sql: &str,
    runs: usize,
) -> Result<(f64, Vec<Vec<Option<String>>>)> {
    let run = measure::time_query(client, sql, runs).await?;
    Ok((run.median.as_secs_f64() * 1e3, run.rows))
}

/// [`time_wire`] on PostgreSQL, whose `statement_timeout` stops a query
/// at `timeout`: that query is not run again.
async fn time_postgres(
    client: &Client,
    sql: &str,
    runs: usize,
    timeout: Duration,
) -> (Measured, Option<Vec<Vec<Option<String>>>>) {
    match time_wire(client, sql, runs).await {
        Ok((ms, rows)) => (Measured::Millis(ms), Some(rows)),
        Err(error) => {
            let cancelled = error
                .downcast_ref::<tokio_postgres::Error>()
                .and_then(|e| e.code())
                .is_some_and(|code| code.code() == "57014");
            if cancelled {
                (Measured::AtLeast(timeout.as_secs_f64() * 1e3), None)
            } else {
                (Measured::Failed(error.to_string()), None)
            }
        }
    }
}

/// The median time of `sql` in DuckDB, rows fetched.
async fn time_duckdb(connection: &duckdb::Connection, sql: &str, runs: usize) -> Result<f64> {
    let run = || -> Result<usize> {
        let mut statement = connection.prepare(sql)?;
        let mut rows = statement.query([])?;
        let mut count = 0;
        while rows.next()?.is_some() {
            count += 1;
        }
        Ok(count)
    };
    run()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        run()?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(times))
}

/// The geometric mean of `ratios`.
fn geometric_mean(ratios: &[f64]) -> Option<f64> {
    (!ratios.is_empty())
        .then(|| (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp())
}

fn print_results(args: &Args, timings: &[Timing]) -> Result<()> {
    println!();
    println!(
        "TPC-H sf {}, median of {} runs after a warm-up; speedup = PostgreSQL time / time{}",
        args.sf,
        args.runs,
        if args.sorted {
            "; lineitem and orders sorted by their dates (sort_by)"
        } else {
            ""
        }
    );
    println!();
    println!(
        "| query | PostgreSQL ms | pgaccel ms | DuckDB ms | pgaccel speedup | DuckDB speedup | same answer |"
    );
    println!("|---|---|---|---|---|---|---|");
    let speedup = |ours: &Measured, theirs: &Measured| -> Option<f64> {
        Some(theirs.millis()? / ours.millis()?.max(1e-3))
    };
    let (mut ours, mut duck) = (Vec::new(), Vec::new());
    for timing in timings {
        let pgaccel = speedup(&timing.pgaccel, &timing.postgres);
        let duckdb = speedup(&timing.duckdb, &timing.postgres);
        ours.extend(pgaccel);
        duck.extend(duckdb);
        let shown = |ratio: Option<f64>| ratio.map_or("-".to_owned(), |r| format!("{r:.1}x"));
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            timing.name,
            timing.postgres.cell(),
            timing.pgaccel.cell(),
            timing.duckdb.cell(),
            shown(pgaccel),
            shown(duckdb),
            match timing.identical {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            }
        );
    }
    let (ours_mean, duck_mean) = (geometric_mean(&ours), geometric_mean(&duck));
    println!(
        "| geometric mean | | | | {} | {} | |",
        ours_mean.map_or("-".to_owned(), |r| format!("{r:.1}x")),
        duck_mean.map_or("-".to_owned(), |r| format!("{r:.1}x"))
    );
    for timing in timings {
        for (side, measured) in [
            ("PostgreSQL", &timing.postgres),
            ("pgaccel", &timing.pgaccel),
            ("DuckDB", &timing.duckdb),
        ] {
            if let Measured::Failed(why) = measured {
                println!("note: {} failed on {side}: {why}", timing.name);
            }
        }
    }
    let mut figures = figures(timings);
    figures.note(format!(
        "DuckDB in-process, on the same tables: geometric-mean speedup over PostgreSQL {}",
        duck_mean.map_or("-".to_owned(), |r| format!("{r:.1}x"))
    ));
    figures.print();
    if let Some(path) = &args.common.json {
        let mut document = figures.json("tpch22");
        document["scale_factor"] = json!(args.sf);
        document["runs"] = json!(args.runs);
        document["sorted"] = json!(args.sorted);
        document["queries"] = timings
            .iter()
            .map(|t| {
                json!({
                    "query": t.name,
                    "postgres_ms": t.postgres.json(),
                    "pgaccel_ms": t.pgaccel.json(),
                    "duckdb_ms": t.duckdb.json(),
                    "same_answer": t.identical,
                })
            })
            .collect();
        document["geometric_mean_speedup"] = json!({ "pgaccel": ours_mean, "duckdb": duck_mean });
        std::fs::write(path, format!("{document:#}\n"))?;
        println!("written to {}", path.display());
    }
    Ok(())
}

/// The figures against the targets: each query against PostgreSQL (Q1 and
/// Q6 at least 20x, every other at least as fast), and the geometric means
/// of the times against PostgreSQL (at least 15x) and against DuckDB.
fn figures(timings: &[Timing]) -> Report {
    let mut figures = Report::default();
    let value = |measured: &Measured| match measured {
        Measured::Millis(ms) => Value::Got(*ms),
        Measured::AtLeast(ms) => Value::AtLeast(*ms),
        Measured::Failed(why) => Value::Failed(why.clone()),
    };
    for timing in timings {
        let target = if matches!(timing.name.as_str(), "Q1" | "Q6") {
            Target::AtLeast(20.0)
        } else {
            Target::AtLeast(1.0)
        };
        figures.add(
            &format!("TPC-H {} vs PostgreSQL", timing.name),
            Kind::Millis,
            value(&timing.pgaccel),
            value(&timing.postgres),
            target,
        );
    }
    // The ratio of the geometric means of the times is the geometric mean of
    // the speedups, over the queries both sides finished.
    for (figure, baseline, target) in [
        (
            "geometric mean, 22 queries vs PostgreSQL",
            (|t: &Timing| &t.postgres) as fn(&Timing) -> &Measured,
            Target::AtLeast(15.0),
        ),
        (
            "geometric mean, 22 queries vs DuckDB in-process",
            |t: &Timing| &t.duckdb,
            Target::Report,
        ),
    ] {
        let pairs: Vec<(f64, f64, bool)> = timings
            .iter()
            .filter_map(|t| {
                let theirs = baseline(t);
                let bound = matches!(theirs, Measured::AtLeast(_));
                Some((t.pgaccel.millis()?, theirs.millis()?, bound))
            })
            .collect();
        let mean = |side: fn(&(f64, f64, bool)) -> f64| {
            (pairs.iter().map(|p| side(p).ln()).sum::<f64>() / pairs.len() as f64).exp()
        };
        let (ours, theirs) = if pairs.is_empty() {
            (
                Value::Failed("no query was measured on both sides".to_owned()),
                Value::Skipped,
            )
        } else if pairs.iter().any(|p| p.2) {
            (Value::Got(mean(|p| p.0)), Value::AtLeast(mean(|p| p.1)))
        } else {
            (Value::Got(mean(|p| p.0)), Value::Got(mean(|p| p.1)))
        };
        figures.add(figure, Kind::Millis, ours, theirs, target);
    }
    let compared: Vec<bool> = timings.iter().filter_map(|t| t.identical).collect();
    let differ: Vec<&str> = timings
        .iter()
        .filter(|t| t.identical == Some(false))
        .map(|t| t.name.as_str())
        .collect();
    figures.note(format!(
        "answers compared with PostgreSQL's: {} of 22, identical: {}{}",
        compared.len(),
        compared.iter().filter(|same| **same).count(),
        if differ.is_empty() {
            String::new()
        } else {
            format!(" (WARNING: {} differ)", differ.join(", "))
        }
    ));
    figures
}
