//! Full refresh from MySQL/MariaDB against the plainest client read of the
//! same table, in one run.
//!
//! It generates TPC-H `lineitem` with `tpchgen` and loads it into MariaDB
//! (127.0.0.1:3306, user root, database `pgaccel_bench_sf<N>`), then times,
//! `--rounds` times each, alternating:
//!
//! - **baseline**: `mysql --quick --batch -e 'SELECT * FROM lineitem'`, every
//!   byte of its output read through a pipe: the server's rows streamed to a
//!   client with no buffering, which no refresh can beat by much;
//! - **pgaccel**: an on-demand full refresh of the same table as an
//!   in-memory dataset (`from: mysql:lineitem`), from the trigger until the
//!   new rows are served.
//!
//! It reports rows per second of both and their ratio (target: at least
//! 0.9x), and pgaccel's RSS at its highest during the refreshes against the
//! acceleration's Arrow size.
//!
//! ```text
//! cargo build --release
//! cargo bench --bench mysql_refresh -- [--sf 1] [--rounds 3] [--skip-load] [--json FILE]
//! ```

#[allow(dead_code)] // the TPC-H generator serves several benches
#[path = "tpch/load.rs"]
mod load;
#[allow(dead_code)] // each bench uses part of the shared report
#[path = "tpch/report.rs"]
mod report;
#[allow(dead_code)] // the bench uses part of the TPC-H bench's server guard
#[path = "tpch/server.rs"]
mod server;

use std::io::{Read, Write};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;

use report::{Kind, Report, Target, Value};
use server::Pgaccel;

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

/// The bench's PostgreSQL `lineitem`, in MySQL's words, with its key
/// declared up front (InnoDB stores rows in key order).
fn lineitem_ddl() -> String {
    let columns = load::LINEITEM_DDL
        .replace("numeric(", "decimal(")
        .trim_end()
        .strip_suffix(')')
        .unwrap_or_default()
        .to_owned();
    format!("{columns},\n    PRIMARY KEY (l_orderkey, l_linenumber))")
}

/// How often pgaccel's RSS is sampled during a refresh.
const RSS_EVERY: Duration = Duration::from_millis(20);

#[derive(Parser)]
#[command(about = "Full refresh from MariaDB against `mysql --quick` of the same table")]
struct Args {
    /// TPC-H scale factor (1 = 6M lineitem rows).
    #[arg(long, default_value_t = 1.0)]
    sf: f64,
    /// Reads measured on each side (the median is reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Reuse the database of an earlier run when it is complete.
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
            eprintln!("mysql_refresh bench failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    if !args.sf.is_finite() || args.sf <= 0.0 {
        return Err(format!("--sf must be positive, got {}", args.sf).into());
    }
    let binary = server::locate_binary(args.common.pgaccel.as_deref())?;
    let database = format!("pgaccel_bench_sf{}", args.sf).replace('.', "_");
    let rows = prepare(&database, args.sf, args.skip_load).await?;
    println!("lineitem: {rows} rows in MariaDB database {database}");

    println!("starting pgaccel (initial load from MariaDB) ...");
    let dataset = format!(
        "  - from: mysql:lineitem\n    name: lineitem\n    params: {{ mysql_host: 127.0.0.1, mysql_tcp_port: 3306, mysql_db: {database}, mysql_user: root, mysql_sslmode: disabled }}\n"
    );
    let started = Instant::now();
    let pgaccel = Pgaccel::start_with(&binary, &dataset).await?;
    println!(
        "  ready in {:.1} s (for information)",
        started.elapsed().as_secs_f64()
    );

    let (mut ours, mut theirs, mut peak) = (Vec::new(), Vec::new(), 0u64);
    for round in 1..=args.rounds.max(1) {
        let client = mysql_quick(&database)?;
        let (refresh, round_peak) = refresh_sampling_rss(&pgaccel).await?;
        peak = peak.max(round_peak);
        println!(
            "round {round}: mysql --quick {:.2} s ({:.0} MB of text), pgaccel refresh {:.2} s",
            client.took.as_secs_f64(),
            client.bytes as f64 / 1e6,
            refresh.as_secs_f64()
        );
        theirs.push(client.took.as_secs_f64());
        ours.push(refresh.as_secs_f64());
    }
    let per_second = |seconds: Vec<f64>| rows as f64 / median(seconds);

    let mut figures = Report::default();
    figures.add(
        "MariaDB lineitem full refresh vs mysql --quick",
        Kind::PerSecond("rows"),
        Value::Got(per_second(ours)),
        Value::Got(per_second(theirs)),
        Target::AtLeast(0.9),
    );
    let arrow = match pgaccel
        .metric("dataset_acceleration_bytes", "lineitem")
        .await?
    {
        Some(bytes) => Value::Got(bytes),
        None => Value::NotAvailable("/metrics has no dataset_acceleration_bytes for lineitem"),
    };
    figures.add(
        "MariaDB refresh: peak RSS vs Arrow bytes",
        Kind::Bytes,
        Value::Got(peak as f64),
        arrow,
        Target::Report,
    );
    figures.note(format!(
        "MariaDB refresh: median of {} rounds over {rows} rows; peak RSS is the whole process's",
        args.rounds.max(1)
    ));
    figures.print();
    figures.write_json(args.common.json.as_deref(), "mysql_refresh")?;
    drop(pgaccel);
    println!(
        "\nThe database is kept for reruns (--skip-load). Drop it with:\n  mysql -h 127.0.0.1 -u root -e 'DROP DATABASE {database}'"
    );
    Ok(())
}

/// An on-demand refresh of lineitem, timed, and the highest RSS of pgaccel
/// while it ran.
async fn refresh_sampling_rss(pgaccel: &Pgaccel) -> Result<(Duration, u64)> {
    let done = tokio_util::sync::CancellationToken::new();
    let sampler = async {
        let mut peak = 0;
        while !done.is_cancelled() {
            peak = peak.max(server::resident_bytes(pgaccel.pid())?);
            tokio::time::sleep(RSS_EVERY).await;
        }
        Result::<u64>::Ok(peak)
    };
    let refresh = async {
        let took = pgaccel.refresh("lineitem").await;
        done.cancel();
        took
    };
    let (peak, took) = tokio::join!(sampler, refresh);
    Ok((took?, peak?))
}

/// What the mysql client read.
struct ClientRead {
    took: Duration,
    bytes: u64,
}

/// `mysql --quick --batch` reading the whole table, its output drained
/// through a pipe.
fn mysql_quick(database: &str) -> Result<ClientRead> {
    let started = Instant::now();
    let mut child = Command::new("mysql")
        .args([
            "--quick",
            "--batch",
            "-h",
            "127.0.0.1",
            "-u",
            "root",
            database,
        ])
        .args(["-e", "SELECT * FROM lineitem"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the mysql client: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout from mysql")?;
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = stdout.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
    }
    let output = child.wait_with_output()?;
    let took = started.elapsed();
    if !output.status.success() {
        return Err(format!(
            "mysql --quick failed: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(ClientRead { took, bytes })
}

/// Runs `sql` with the mysql client (in `database`, if given) and returns
/// its batch output.
fn mysql(database: Option<&str>, sql: &str, local_infile: bool) -> Result<String> {
    let mut command = Command::new("mysql");
    command.args([
        "--batch",
        "--skip-column-names",
        "-h",
        "127.0.0.1",
        "-u",
        "root",
    ]);
    if local_infile {
        command.arg("--local-infile=1");
    }
    command.args(database).args(["-e", sql]);
    let output = command
        .output()
        .map_err(|e| format!("cannot run the mysql client: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "mysql failed on `{sql}`: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

/// The row count of a complete `lineitem` in `database`, loading it first
/// unless `skip_load` finds it complete (its comment records the scale
/// factor and row count once the load is done).
async fn prepare(database: &str, sf: f64, skip_load: bool) -> Result<u64> {
    let mark = |rows: u64| format!("pgaccel bench: complete sf={sf} lineitem={rows}");
    if skip_load {
        let comment = mysql(
            None,
            &format!(
                "SELECT table_comment FROM information_schema.tables \
                 WHERE table_schema = '{database}' AND table_name = 'lineitem'"
            ),
            false,
        )?;
        let counted = mysql(Some(database), "SELECT count(*) FROM lineitem", false);
        if let Ok(counted) = counted
            && let Ok(rows) = counted.trim().parse::<u64>()
            && comment.trim() == mark(rows)
        {
            println!("reusing database {database} (--skip-load)");
            return Ok(rows);
        }
        println!("database {database} is missing or incomplete: loading it");
    }
    println!("loading TPC-H lineitem sf {sf} into MariaDB database {database} ...");
    let started = Instant::now();
    mysql(
        None,
        &format!("DROP DATABASE IF EXISTS {database}; CREATE DATABASE {database}"),
        false,
    )?;
    mysql(Some(database), &lineitem_ddl(), false)?;
    // The generator writes tab-separated lines, LOAD DATA's default format.
    let folder = tempfile::tempdir()?;
    let path = folder.path().join("lineitem.tsv");
    let (sender, mut chunks) = tokio::sync::mpsc::channel(4);
    let producer = tokio::task::spawn_blocking(move || load::send_lineitems(sf, sender));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
    while let Some(chunk) = chunks.recv().await {
        file.write_all(&chunk)?;
    }
    producer.await?;
    file.flush()?;
    drop(file);
    mysql(
        Some(database),
        &format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE lineitem",
            path.display()
        ),
        true,
    )?;
    let rows: u64 = mysql(Some(database), "SELECT count(*) FROM lineitem", false)?
        .trim()
        .parse()?;
    mysql(
        Some(database),
        &format!("ALTER TABLE lineitem COMMENT = '{}'", mark(rows)),
        false,
    )?;
    println!("  {rows} rows in {:.1} s", started.elapsed().as_secs_f64());
    Ok(rows)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
