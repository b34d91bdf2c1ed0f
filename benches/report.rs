//! Every performance figure of pgaccel against its baseline, in one run and
//! one table.
//!
//! It runs each bench below with `--json`, one after the other so that none
//! competes with another for the machine, and prints their figures as one
//! table of ratios with the absolute figures beside them; the same table is
//! written as JSON (`--json`) and, if asked, as Markdown for the README
//! (`--markdown`). `--from DIR` prints the table of an earlier run's JSON
//! files instead of measuring.
//!
//! The benches are run as the executables `cargo build --release --benches`
//! left beside this one, not through cargo: a cargo started from a bench
//! inherits the variables cargo sets for it, and those can make it rebuild
//! the release dependencies from scratch.
//!
//! | bench | what it compares |
//! |---|---|
//! | `tpch` | Q1/Q6, lookups, lineitem full refresh against binary COPY, memory steady and while refreshing, latency during a refresh against idle |
//! | `tpch22` | the 22 TPC-H queries against PostgreSQL and DuckDB in-process, answers compared |
//! | `lookups` | pgbench point lookups (prepared and simple, 1, 4 and 32 clients) and `SELECT 1` against PostgreSQL |
//! | `mysql_refresh` | a full refresh from MariaDB against `mysql --quick` |
//! | `cold_start` | a replica starting from a snapshot against a full refresh |
//!
//! A bench that fails shows as a note; the others still report, and the run
//! exits non-zero.
//!
//! ```text
//! cargo build --release --benches
//! cargo bench --bench report -- [--sf 1] [--rounds 3] [--json report.json] [--markdown report.md]
//! cargo bench --bench report -- --quick      # sf 0.1, one round: a check that everything runs
//! ```

#[allow(dead_code)] // each bench uses part of the shared report
#[path = "tpch/report.rs"]
mod report;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use clap::Parser;
use serde_json::{Value as Json, json};

use report::Table;

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// The benches, in the order they run and their sections appear.
const BENCHES: [(&str, &str); 5] = [
    (
        "tpch",
        "TPC-H Q1/Q6, refresh, memory, latency during a refresh",
    ),
    ("tpch22", "TPC-H, all 22 queries"),
    ("lookups", "point lookups and round trips (pgbench)"),
    ("mysql_refresh", "refresh from MariaDB"),
    ("cold_start", "replica cold start from a snapshot"),
];

#[derive(Parser)]
#[command(about = "Every pgaccel benchmark in one run, as one table of ratios")]
struct Args {
    /// TPC-H scale factor for every bench.
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Rounds (or runs per query) of each bench that repeats its measurement.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Seconds per pgbench run.
    #[arg(long, default_value_t = 5)]
    seconds: u32,
    /// A PostgreSQL query of `tpch22` still running after this long is
    /// reported as at least this long.
    #[arg(long, default_value = "60s")]
    timeout: String,
    /// A quick check that every bench runs: sf 0.1, one round, 2 s per pgbench run.
    #[arg(long)]
    quick: bool,
    /// `tpch22` with `lineitem` and `orders` sorted by their dates
    /// (`acceleration.sort_by`).
    #[arg(long)]
    sorted: bool,
    /// Only these benches (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The combined figures as JSON.
    #[arg(long, default_value = "pgaccel-report.json")]
    json: PathBuf,
    /// Also write the table as Markdown.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Measure nothing: print the table of the `<bench>.json` files in this
    /// folder (as each bench writes them with `--json`).
    #[arg(long)]
    from: Option<PathBuf>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("report: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Whether every bench ran.
fn run(mut args: Args) -> Result<bool> {
    if args.quick {
        args.sf = 0.1;
        args.rounds = 1;
        args.seconds = 2;
    }
    for name in &args.only {
        if !BENCHES.iter().any(|(bench, _)| bench == name) {
            return Err(format!(
                "--only {name}: no such bench (the benches: {})",
                BENCHES.map(|(bench, _)| bench).join(", ")
            )
            .into());
        }
    }
    let folder = tempfile::Builder::new()
        .prefix("pgaccel-report-")
        .tempdir()?;
    let (figures_dir, executables) = match &args.from {
        Some(from) => (from.clone(), None),
        None => (folder.path().to_owned(), Some(std::env::current_exe()?)),
    };
    let started = Instant::now();
    let mut table = Table {
        sections: Vec::new(),
        notes: Vec::new(),
    };
    let mut benches = Vec::new();
    let mut all_ran = true;
    for (bench, title) in BENCHES {
        if !args.only.is_empty() && !args.only.iter().any(|name| name == bench) {
            continue;
        }
        let json_path = figures_dir.join(format!("{bench}.json"));
        let bench_started = Instant::now();
        let succeeded = match &executables {
            None => json_path.is_file(),
            Some(report) => {
                println!("\n===== {bench}: {title} =====");
                let executable = sibling(report, bench)?;
                let status = Command::new(&executable)
                    .args(bench_args(&args, bench))
                    .arg("--json")
                    .arg(&json_path)
                    .status()
                    .map_err(|e| format!("cannot run {}: {e}", executable.display()))?;
                if !status.success() {
                    table.notes.push(format!("{bench} failed ({status})"));
                }
                status.success()
            }
        };
        let seconds = bench_started.elapsed().as_secs_f64();
        // A bench that measured some figures and failed on others still
        // wrote them; show what there is.
        let figures = read_figures(&json_path);
        match &figures {
            Ok(figures) => {
                table.sections.push((title.to_owned(), cells(figures)?));
                for note in figures["notes"].as_array().into_iter().flatten() {
                    table
                        .notes
                        .push(format!("{bench}: {}", note.as_str().unwrap_or_default()));
                }
            }
            Err(e) => table.notes.push(format!("{bench}: no figures: {e}")),
        }
        all_ran &= succeeded;
        benches.push(json!({
            "bench": bench,
            "title": title,
            "succeeded": succeeded,
            "seconds": seconds,
            "figures": figures.unwrap_or(Json::Null),
        }));
    }
    println!(
        "\n===== every figure ({:.0} s in all) =====",
        started.elapsed().as_secs_f64()
    );
    table.print();
    let document = json!({
        "scale_factor": args.sf,
        "rounds": args.rounds,
        "machine": machine(),
        "benches": benches,
    });
    std::fs::write(&args.json, format!("{document:#}\n"))?;
    println!("\nwritten to {}", args.json.display());
    if let Some(path) = &args.markdown {
        std::fs::write(path, table.markdown())?;
        println!("written to {}", path.display());
    }
    Ok(all_ran)
}

/// The newest executable of `bench` that cargo built beside `report` (its
/// name is the bench's and a hash).
fn sibling(report: &Path, bench: &str) -> Result<PathBuf> {
    let folder = report.parent().ok_or("the report has no folder")?;
    let is_build = |name: &str| {
        name.strip_prefix(bench)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|hash| hash.len() == 16 && hash.chars().all(|c| c.is_ascii_hexdigit()))
    };
    let mut found: Vec<(std::time::SystemTime, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(folder)? {
        let entry = entry?;
        if entry.file_name().to_str().is_some_and(is_build) {
            found.push((entry.metadata()?.modified()?, entry.path()));
        }
    }
    found
        .into_iter()
        .max()
        .map(|(_, path)| path)
        .ok_or_else(|| {
            format!(
                "no build of bench {bench} in {}: run `cargo build --release --benches` first",
                folder.display()
            )
            .into()
        })
}

/// The arguments of `bench` for this run.
fn bench_args(args: &Args, bench: &str) -> Vec<String> {
    let sf = args.sf.to_string();
    let rounds = args.rounds.to_string();
    let mut out = vec!["--sf".to_owned(), sf];
    match bench {
        "tpch" => out.push("--skip-load".to_owned()),
        "tpch22" => {
            out.extend([
                "--skip-load".to_owned(),
                "--runs".to_owned(),
                rounds,
                "--timeout".to_owned(),
                args.timeout.clone(),
            ]);
            if args.sorted {
                out.push("--sorted".to_owned());
            }
        }
        "lookups" => out.extend([
            "--rounds".to_owned(),
            rounds,
            "--seconds".to_owned(),
            args.seconds.to_string(),
        ]),
        "mysql_refresh" | "cold_start" => {
            out.extend(["--skip-load".to_owned(), "--rounds".to_owned(), rounds])
        }
        _ => {}
    }
    out
}

fn read_figures(path: &Path) -> Result<Json> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

/// The printed cells of each row of a bench's figures.
fn cells(figures: &Json) -> Result<Vec<[String; 6]>> {
    figures["rows"]
        .as_array()
        .ok_or("figures without rows")?
        .iter()
        .map(|row| {
            let cells: Vec<String> = row["cells"]
                .as_array()
                .ok_or("a row without cells")?
                .iter()
                .map(|cell| cell.as_str().unwrap_or_default().to_owned())
                .collect();
            <[String; 6]>::try_from(cells).map_err(|_| "a row without 6 cells".into())
        })
        .collect()
}

/// What the figures were measured on.
fn machine() -> Json {
    let output = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let memory_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        });
    json!({
        "cores": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "memory_bytes": memory_kib.map(|kib| kib * 1024),
        "postgres": output("psql", &["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-At", "-c", "SELECT version()"]),
        "mariadb": output("mysql", &["-h", "127.0.0.1", "-u", "root", "--batch", "--skip-column-names", "-e", "SELECT version()"]),
        "commit": output("git", &["rev-parse", "HEAD"]),
        "measured_at": output("date", &["-u", "+%Y-%m-%dT%H:%M:%SZ"]),
    })
}
