//! TPC-H benchmark of pgaccel against PostgreSQL, every figure with its baseline
//! measured in the same run (DESIGN.md §8).
//!
//! It generates TPC-H `orders` and `lineitem` with `tpchgen`, loads them into
//! PostgreSQL (127.0.0.1:5432, database `test`) in schema `pgaccel_bench_sf<N>`,
//! starts the pgaccel binary on free ports with both tables accelerated, and measures:
//!
//! | figure | pgaccel | baseline | target |
//! |---|---|---|---|
//! | TPC-H Q1, Q6 (median of 5 after 1 warm-up, simple query protocol) | over its wire port | same SQL on PostgreSQL | ≥ 20x faster |
//! | point lookups by `o_orderkey` (prepared, 4 connections, 10 s) | lookups/s, mean latency | same on PostgreSQL | report |
//! | full refresh of `lineitem` (HTTP trigger until `last_refresh` moves) | rows/s | `COPY (SELECT ...) TO STDOUT (FORMAT binary)` rows/s | ≥ 1.0x |
//! | memory, steady | RSS after load − RSS of a pgaccel with no datasets | `dataset_acceleration_bytes` from `/metrics` | ≤ 1.2x |
//! | memory during a refresh | highest RSS while `lineitem` is refreshed − RSS of a pgaccel with no datasets | the same Arrow bytes | ≤ 2x |
//! | refresh isolation: lookup p50/p99 and range-aggregate p99, each on its own connection, during a full refresh of `lineitem` | latency during the refresh | the same, idle, just before | ≤ 1.3x as long |
//! | the source's share: lookup and range-aggregate p99 while the bench reads PostgreSQL's binary COPY of `lineitem`, no refresh | latency during that read | the same, idle | report |
//!
//! Run it (the bench drives a release build of pgaccel, which it does not build):
//!
//! ```text
//! cargo build --release
//! cargo bench --bench tpch -- [--sf 1] [--pgaccel PATH] [--skip-load] [--baseline-only]
//! ```
//!
//! `--sf 0.1` makes a quick run; `--skip-load` reuses the schema of an earlier run when
//! its row counts match; `--baseline-only` measures the PostgreSQL side alone. The
//! schema is kept for reruns; the bench prints how to drop it.

// The root of a bench target resolves modules beside itself; these live in benches/tpch/
// so that cargo does not mistake them for bench targets of their own.
#[path = "tpch/load.rs"]
mod load;
#[path = "tpch/measure.rs"]
mod measure;
#[allow(dead_code)] // each bench uses part of the shared report
#[path = "tpch/report.rs"]
mod report;
#[path = "tpch/server.rs"]
mod server;

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

use load::RowCounts;
use measure::{Endpoint, Lookups, Q1, Q6, QueryRun};
use report::{Kind, Report, Target, Value, millis};
use server::{Pgaccel, Source};

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

const QUERY_RUNS: usize = 5;
const LOOKUP_TASKS: usize = 4;
const LOOKUP_DURATION: Duration = Duration::from_secs(10);
const LOOKUP_KEYS: i64 = 100_000;
/// How long idle lookup latency is sampled before the refresh it is compared with.
const ISOLATION_IDLE: Duration = Duration::from_secs(5);

#[derive(Parser)]
#[command(about = "TPC-H benchmark of pgaccel against PostgreSQL")]
struct Args {
    /// TPC-H scale factor (1 = 6M lineitem rows; 0.1 for a quick run).
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Reuse the existing schema when its row counts match instead of reloading it.
    #[arg(long)]
    skip_load: bool,
    /// Measure only the PostgreSQL side (no pgaccel binary needed).
    #[arg(long)]
    baseline_only: bool,
    #[command(flatten)]
    common: server::Common,
}

/// The PostgreSQL side of every figure.
struct Baseline {
    q1: QueryRun,
    q6: QueryRun,
    lookups: Lookups,
    copy: Duration,
}

/// The pgaccel side; each figure fails on its own.
struct Accelerated {
    q1: Result<QueryRun>,
    q6: Result<QueryRun>,
    lookups: Result<Lookups>,
    refresh: Result<Duration>,
    memory: Result<Memory>,
    isolation: Result<Isolation>,
}

/// Point-lookup and range-aggregate latency, each on one connection, while
/// idle and while lineitem is fully refreshed: how well refresh work is kept
/// off the query threads; and the highest RSS during that refresh.
struct Isolation {
    idle: Latencies,
    /// While PostgreSQL's own binary COPY of lineitem is read and
    /// discarded, with no refresh: what sharing the CPU with the source
    /// costs on a machine that runs both, which no refresh can go below.
    during_copy: Latencies,
    during_refresh: Latencies,
    peak_rss: u64,
}

struct Latencies {
    lookups: measure::Percentiles,
    aggregates: measure::Percentiles,
}

/// How often RSS is sampled during a refresh.
const RSS_EVERY: Duration = Duration::from_millis(20);

struct Memory {
    /// RSS of a pgaccel with no datasets.
    empty_rss: f64,
    /// RSS after the initial load minus `empty_rss`.
    rss_delta: f64,
    /// What pgaccel reports as the Arrow size of both tables, if it does.
    arrow_bytes: Option<f64>,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tpch bench failed: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    if !args.sf.is_finite() || args.sf <= 0.0 {
        return Err(format!("--sf must be positive, got {}", args.sf).into());
    }
    // Before the load, which can take minutes: a missing binary should fail fast.
    let binary = if args.baseline_only {
        None
    } else {
        Some(server::locate_binary(args.common.pgaccel.as_deref())?)
    };
    let schema = schema_name(args.sf);
    let postgres = Endpoint::postgres(&args.common.pg_user, &schema);
    let admin = postgres.connect().await?;
    let loaded = load::prepare(&admin, &schema, args.sf, args.skip_load).await?;
    let rows = loaded.rows;
    println!(
        "\nTPC-H sf {}: orders {} rows, lineitem {} rows in schema {schema}",
        args.sf, rows.orders, rows.lineitem
    );
    if let Some(load_time) = loaded.load_time {
        println!(
            "generated and loaded into PostgreSQL in {:.1} s",
            load_time.as_secs_f64()
        );
    }

    let keys = Arc::new(measure::sample_order_keys(&admin, LOOKUP_KEYS).await?);
    let source = Source {
        schema: &schema,
        user: &args.common.pg_user,
    };
    let report = measure_all(binary.as_deref(), &source, &postgres, &admin, keys, rows).await?;
    report.print();
    report.write_json(args.common.json.as_deref(), "tpch")?;
    println!(
        "\nThe schema is kept for reruns (--skip-load). Drop it with:\n  \
         psql -h 127.0.0.1 -U {} -d test -c 'DROP SCHEMA {schema} CASCADE'",
        args.common.pg_user
    );
    if report.has_failures() {
        return Err("some figures could not be measured (see the notes above)".into());
    }
    Ok(())
}

/// Every figure on both sides; PostgreSQL first, while no pgaccel competes for the CPU.
async fn measure_all(
    binary: Option<&Path>,
    source: &Source<'_>,
    postgres: &Endpoint,
    admin: &tokio_postgres::Client,
    keys: Arc<Vec<i64>>,
    rows: RowCounts,
) -> Result<Report> {
    let mut report = Report::default();
    let Some(binary) = binary else {
        let baseline = measure_baseline(postgres, admin, keys).await?;
        add_rows(&mut report, None, &baseline, rows.lineitem);
        return Ok(report);
    };
    // The empty pgaccel runs first, alone, so nothing else skews its RSS.
    let empty_rss = empty_rss(binary).await;
    let baseline = measure_baseline(postgres, admin, Arc::clone(&keys)).await?;
    let accelerated = measure_pgaccel(binary, source, keys, empty_rss, rows).await;
    match &accelerated {
        Ok(accelerated) => compare_results(&mut report, accelerated, &baseline),
        Err(e) => report.note(format!("pgaccel did not start: {e}")),
    }
    let accelerated = accelerated.map_err(|e| e.to_string());
    add_rows(&mut report, Some(&accelerated), &baseline, rows.lineitem);
    Ok(report)
}

/// `pgaccel_bench_sf1`, `pgaccel_bench_sf0_1`, ...
fn schema_name(sf: f64) -> String {
    format!("pgaccel_bench_sf{sf}").replace('.', "_")
}

async fn measure_baseline(
    postgres: &Endpoint,
    admin: &tokio_postgres::Client,
    keys: Arc<Vec<i64>>,
) -> Result<Baseline> {
    println!("measuring PostgreSQL ...");
    Ok(Baseline {
        q1: measure::time_query(admin, Q1, QUERY_RUNS).await?,
        q6: measure::time_query(admin, Q6, QUERY_RUNS).await?,
        lookups: measure::point_lookups(postgres, keys, LOOKUP_TASKS, LOOKUP_DURATION).await?,
        copy: measure::copy_out(admin, "lineitem").await?,
    })
}

/// RSS of a pgaccel with no datasets: what the process costs before any acceleration.
async fn empty_rss(binary: &Path) -> Result<f64> {
    let server = Pgaccel::start(binary, None).await?;
    Ok(server::resident_bytes(server.pid())? as f64)
}

async fn measure_pgaccel(
    binary: &Path,
    source: &Source<'_>,
    keys: Arc<Vec<i64>>,
    empty_rss: Result<f64>,
    rows: RowCounts,
) -> Result<Accelerated> {
    println!("starting pgaccel (initial load) ...");
    let started = Instant::now();
    let server = Pgaccel::start(binary, Some(source)).await?;
    let initial = started.elapsed();
    let loaded_rows = (rows.orders + rows.lineitem) as f64;
    println!(
        "pgaccel ready {:.1} s after start (initial load, for information: {:.0} rows/s over lineitem + orders)",
        initial.as_secs_f64(),
        loaded_rows / initial.as_secs_f64()
    );
    // Memory first, before queries allocate anything of their own.
    let memory = measure_memory(&server, empty_rss).await;
    server.wait_statistics().await?;
    let endpoint = Endpoint::pgaccel(source.user, server.pg_port);
    println!("measuring pgaccel ...");
    Ok(Accelerated {
        q1: time_on(&endpoint, Q1).await,
        q6: time_on(&endpoint, Q6).await,
        lookups: measure::point_lookups(
            &endpoint,
            Arc::clone(&keys),
            LOOKUP_TASKS,
            LOOKUP_DURATION,
        )
        .await,
        refresh: server.refresh("lineitem").await,
        isolation: measure_isolation(&server, &endpoint, source, keys).await,
        memory,
    })
}

/// Lookup and aggregate latencies for `ISOLATION_IDLE`, then during a full
/// refresh of lineitem, on the same connection setup, with RSS sampled
/// during the refresh.
async fn measure_isolation(
    server: &Pgaccel,
    endpoint: &Endpoint,
    source: &Source<'_>,
    keys: Arc<Vec<i64>>,
) -> Result<Isolation> {
    let idle = latencies(endpoint, &keys, tokio::time::sleep(ISOLATION_IDLE)).await?;
    let reader = Endpoint::postgres(source.user, source.schema)
        .connect()
        .await?;
    let copied = tokio_util::sync::CancellationToken::new();
    let copy = async {
        let outcome = measure::copy_out(&reader, "lineitem").await;
        copied.cancel();
        outcome
    };
    let (during_copy, copy) = tokio::join!(
        latencies(endpoint, &keys, copied.clone().cancelled_owned()),
        copy
    );
    copy?;
    let refreshed = tokio_util::sync::CancellationToken::new();
    let sampler = latencies(endpoint, &keys, refreshed.clone().cancelled_owned());
    let peak_rss = async {
        let mut peak = 0;
        while !refreshed.is_cancelled() {
            peak = peak.max(server::resident_bytes(server.pid())?);
            tokio::time::sleep(RSS_EVERY).await;
        }
        Result::<u64>::Ok(peak)
    };
    let refresh = async {
        let outcome = server.refresh("lineitem").await;
        refreshed.cancel();
        outcome
    };
    let (during_refresh, peak_rss, refresh) = tokio::join!(sampler, peak_rss, refresh);
    refresh?;
    Ok(Isolation {
        idle,
        during_copy: during_copy?,
        during_refresh: during_refresh?,
        peak_rss: peak_rss?,
    })
}

/// Point lookups and range aggregates, each on a connection of its own,
/// until `stop`.
async fn latencies(
    endpoint: &Endpoint,
    keys: &Arc<Vec<i64>>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Latencies> {
    let stop = futures::FutureExt::shared(Box::pin(stop));
    let (lookups, aggregates) = tokio::join!(
        measure::latencies(
            endpoint,
            measure::POINT_LOOKUP,
            Arc::clone(keys),
            stop.clone()
        ),
        measure::latencies(endpoint, measure::RANGE_AGGREGATE, Arc::clone(keys), stop),
    );
    Ok(Latencies {
        lookups: lookups?,
        aggregates: aggregates?,
    })
}

async fn time_on(endpoint: &Endpoint, sql: &str) -> Result<QueryRun> {
    let client = endpoint.connect().await?;
    measure::time_query(&client, sql, QUERY_RUNS).await
}

async fn measure_memory(server: &Pgaccel, empty_rss: Result<f64>) -> Result<Memory> {
    let empty_rss = empty_rss
        .map_err(|e| format!("no RSS baseline (pgaccel with datasets: [] failed: {e})"))?;
    let loaded_rss = server::resident_bytes(server.pid())? as f64;
    Ok(Memory {
        empty_rss,
        rss_delta: loaded_rss - empty_rss,
        arrow_bytes: server.acceleration_bytes(&["lineitem", "orders"]).await?,
    })
}

/// Warns when pgaccel's answers differ from PostgreSQL's: a fast wrong answer is no result.
fn compare_results(report: &mut Report, accelerated: &Accelerated, baseline: &Baseline) {
    for (name, ours, theirs) in [
        ("Q1", &accelerated.q1, &baseline.q1),
        ("Q6", &accelerated.q6, &baseline.q6),
    ] {
        let Ok(ours) = ours else { continue };
        if ours.rows.len() != theirs.rows.len() {
            report.note(format!(
                "WARNING: {name} returned {} rows through pgaccel, {} from PostgreSQL",
                ours.rows.len(),
                theirs.rows.len()
            ));
        }
    }
    if let Ok(ours) = &accelerated.q6
        && ours.rows != baseline.q6.rows
    {
        report.note(format!(
            "WARNING: Q6 revenue differs: pgaccel {:?}, PostgreSQL {:?}",
            ours.rows, baseline.q6.rows
        ));
    }
}

fn add_rows(
    report: &mut Report,
    accelerated: Option<&Result<Accelerated, String>>,
    baseline: &Baseline,
    lineitem_rows: u64,
) {
    let per_sec = |d: &Duration| lineitem_rows as f64 / d.as_secs_f64();
    let median = |run: &QueryRun| millis(run.median);

    let q1 = ours(accelerated, |a| &a.q1, median);
    let base = Value::Got(median(&baseline.q1));
    report.add(
        "TPC-H Q1 median",
        Kind::Millis,
        q1,
        base,
        Target::AtLeast(20.0),
    );
    let q6 = ours(accelerated, |a| &a.q6, median);
    let base = Value::Got(median(&baseline.q6));
    report.add(
        "TPC-H Q6 median",
        Kind::Millis,
        q6,
        base,
        Target::AtLeast(20.0),
    );

    let rate = ours(accelerated, |a| &a.lookups, |l| l.per_second);
    let base = Value::Got(baseline.lookups.per_second);
    let kind = Kind::PerSecond("lookups");
    report.add("point lookups, 4 conns", kind, rate, base, Target::Report);
    let latency = ours(accelerated, |a| &a.lookups, |l| millis(l.mean_latency));
    let base = Value::Got(millis(baseline.lookups.mean_latency));
    report.add(
        "point lookup mean latency",
        Kind::Millis,
        latency,
        base,
        Target::Report,
    );

    type Pick = fn(&Latencies) -> Duration;
    for (figure, pick, target) in [
        (
            "lookup p50 during refresh vs idle",
            (|l: &Latencies| l.lookups.p50) as Pick,
            Target::Report,
        ),
        (
            "lookup p99 during refresh vs idle",
            |l| l.lookups.p99,
            Target::AtMost(1.3),
        ),
        (
            "aggregate p99 during refresh vs idle",
            |l| l.aggregates.p99,
            Target::AtMost(1.3),
        ),
    ] {
        let during = ours(
            accelerated,
            |a| &a.isolation,
            |i| millis(pick(&i.during_refresh)),
        );
        let idle = ours(accelerated, |a| &a.isolation, |i| millis(pick(&i.idle)));
        report.add(figure, Kind::MillisRelative, during, idle, target);
    }
    // The same latencies while only the source works (its COPY of
    // lineitem read by the bench, no refresh): on a machine that runs the
    // source too, the part of the figures above that is the source's.
    for (figure, pick) in [
        (
            "lookup p99 during the source's COPY alone vs idle",
            (|l: &Latencies| l.lookups.p99) as Pick,
        ),
        (
            "aggregate p99 during the source's COPY alone vs idle",
            |l| l.aggregates.p99,
        ),
    ] {
        let during = ours(
            accelerated,
            |a| &a.isolation,
            |i| millis(pick(&i.during_copy)),
        );
        let idle = ours(accelerated, |a| &a.isolation, |i| millis(pick(&i.idle)));
        report.add(figure, Kind::MillisRelative, during, idle, Target::Report);
    }

    let refresh = ours(accelerated, |a| &a.refresh, per_sec);
    let base = Value::Got(per_sec(&baseline.copy));
    let kind = Kind::PerSecond("rows");
    report.add(
        "lineitem full refresh vs COPY binary",
        kind,
        refresh,
        base,
        Target::AtLeast(1.0),
    );

    let arrow = match accelerated {
        Some(Ok(Accelerated {
            memory:
                Ok(Memory {
                    arrow_bytes: Some(bytes),
                    ..
                }),
            ..
        })) => Value::Got(*bytes),
        Some(Ok(Accelerated { memory: Ok(_), .. })) => Value::NotAvailable(
            "/metrics has no dataset_acceleration_bytes for lineitem and orders",
        ),
        _ => Value::Skipped,
    };
    let steady = ours(accelerated, |a| &a.memory, |m| m.rss_delta);
    let peak = match accelerated {
        Some(Ok(accelerated)) => match (&accelerated.memory, &accelerated.isolation) {
            (Ok(memory), Ok(isolation)) => Value::Got(isolation.peak_rss as f64 - memory.empty_rss),
            (Err(e), _) | (_, Err(e)) => Value::Failed(e.to_string()),
        },
        Some(Err(_)) => Value::NotRun,
        None => Value::Skipped,
    };
    report.add(
        "memory, steady: RSS delta vs Arrow bytes",
        Kind::Bytes,
        steady,
        arrow.clone(),
        Target::AtMost(1.2),
    );
    report.add(
        "memory, refreshing lineitem: peak RSS delta vs Arrow bytes",
        Kind::Bytes,
        peak,
        arrow,
        Target::AtMost(2.0),
    );
}

/// pgaccel's value for one figure: skipped without a binary, not run if pgaccel did
/// not start, else the figure or why it failed.
fn ours<T>(
    accelerated: Option<&Result<Accelerated, String>>,
    figure: impl Fn(&Accelerated) -> &Result<T>,
    value: impl Fn(&T) -> f64,
) -> Value {
    match accelerated {
        None => Value::Skipped,
        Some(Err(_)) => Value::NotRun,
        Some(Ok(accelerated)) => match figure(accelerated) {
            Ok(measured) => Value::Got(value(measured)),
            Err(e) => Value::Failed(e.to_string()),
        },
    }
}
