//! Append refresh cost against table size (DESIGN.md §8): an append must cost
//! what it adds, not what the acceleration already holds.
//!
//! For each table size it creates `ev_<rows>` in PostgreSQL (127.0.0.1:5432,
//! database `test`, schema `pgaccel_bench_append`), with a primary key, and
//! `evn_<rows>`, the same rows without one. It starts the pgaccel binary
//! with both accelerated in `refresh_mode: append` (time column `at`, indexed
//! at the source), then, in each round, inserts the same number of new rows
//! into every table and triggers one append refresh of each dataset.
//!
//! Each time is pgaccel's own refresh duration (the growth of
//! `dataset_acceleration_refresh_duration_ms_sum`), so polling does not blur
//! it. Figures, all from the same run:
//!
//! | figure | value | baseline |
//! |---|---|---|
//! | append of N new rows, at each size | median of the rounds | the same append at the smallest size |
//! | initial full load, at each size | one load | the append at that size |
//!
//! ```text
//! cargo build --release
//! cargo bench --bench append -- [--sizes 100000,1000000,4000000] [--new-rows 10000] [--rounds 5]
//! ```

#[allow(dead_code)] // the bench uses part of the TPC-H bench's server guard
#[path = "tpch/server.rs"]
mod server;

use std::process::ExitCode;

use clap::Parser;
use tokio_postgres::{Client, NoTls};

use server::Pgaccel;

type Result<T, E = Box<dyn std::error::Error + Send + Sync>> = std::result::Result<T, E>;

const SCHEMA: &str = "pgaccel_bench_append";
const DURATION_SUM: &str = "dataset_acceleration_refresh_duration_ms_sum";

#[derive(Parser)]
#[command(about = "Append refresh cost against table size")]
struct Args {
    /// Table sizes in rows, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100000,1000000,4000000")]
    sizes: Vec<u64>,
    /// Rows inserted before each append.
    #[arg(long, default_value_t = 10_000)]
    new_rows: u64,
    /// Appends measured per dataset (the median is reported).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    #[command(flatten)]
    common: server::Common,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("append bench failed: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    let binary = server::locate_binary(args.common.pgaccel.as_deref())?;
    let (admin, connection) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port=5432 user={} dbname=test",
            args.common.pg_user
        ),
        NoTls,
    )
    .await?;
    tokio::spawn(connection);
    load(&admin, &args.sizes).await?;
    let datasets: String = args
        .sizes
        .iter()
        .flat_map(|size| [format!("ev_{size}"), format!("evn_{size}")])
        .map(|table| {
            format!(
                "  - from: postgres:{SCHEMA}.{table}\n    name: {table}\n    params: {{ pg_host: 127.0.0.1, \
                 pg_port: 5432, pg_db: test, pg_user: {user}, pg_sslmode: disable }}\n    time_column: at\n    \
                 acceleration:\n      refresh_mode: append\n      refresh_append_overlap: 1s\n",
                user = args.common.pg_user
            )
        })
        .collect();
    eprintln!("starting pgaccel (initial full loads)...");
    let pgaccel = Pgaccel::start_with(&binary, &datasets).await?;
    let mut rows = Vec::new();
    for &size in &args.sizes {
        for table in [format!("ev_{size}"), format!("evn_{size}")] {
            let full = refresh_total(&pgaccel, &table).await?;
            let mut appends = Vec::with_capacity(args.rounds);
            for _ in 0..args.rounds {
                insert_new(&admin, &table, args.new_rows).await?;
                let before = refresh_total(&pgaccel, &table).await?;
                pgaccel.refresh(&table).await?;
                appends.push(refresh_total(&pgaccel, &table).await? - before);
            }
            appends.sort_by(f64::total_cmp);
            rows.push((size, table, full, appends[appends.len() / 2]));
        }
    }
    print(&rows, args.new_rows);
    eprintln!(
        "schema {SCHEMA} kept; drop it with: psql -h 127.0.0.1 -U postgres -d test -c 'DROP SCHEMA {SCHEMA} CASCADE'"
    );
    Ok(())
}

/// Creates the tables of every size: `size` rows over the last 30 days.
async fn load(client: &Client, sizes: &[u64]) -> Result<()> {
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; CREATE SCHEMA {SCHEMA}"
        ))
        .await?;
    for size in sizes {
        eprintln!("loading {size} rows...");
        client
            .batch_execute(&format!(
                "CREATE TABLE {SCHEMA}.ev_{size} (id bigint PRIMARY KEY, at timestamptz NOT NULL,
                     kind int NOT NULL, payload text NOT NULL);
                 INSERT INTO {SCHEMA}.ev_{size}
                 SELECT i, now() - interval '30 days' * (1 - i::float8 / {size}), i % 17,
                        md5(i::text)
                 FROM generate_series(1, {size}) AS i;
                 CREATE INDEX ON {SCHEMA}.ev_{size} (at);
                 CREATE TABLE {SCHEMA}.evn_{size} AS SELECT * FROM {SCHEMA}.ev_{size};
                 CREATE INDEX ON {SCHEMA}.evn_{size} (at);
                 ANALYZE {SCHEMA}.ev_{size}; ANALYZE {SCHEMA}.evn_{size};"
            ))
            .await?;
    }
    Ok(())
}

/// Inserts `rows` rows newer than every row of `table`.
async fn insert_new(client: &Client, table: &str, rows: u64) -> Result<()> {
    client
        .batch_execute(&format!(
            "INSERT INTO {SCHEMA}.{table}
             SELECT m.id + i, clock_timestamp(), i % 17, md5((m.id + i)::text)
             FROM (SELECT max(id) AS id FROM {SCHEMA}.{table}) AS m, generate_series(1, {rows}) AS i"
        ))
        .await?;
    Ok(())
}

/// Milliseconds `table` has spent in refreshes so far, by pgaccel's metric.
async fn refresh_total(pgaccel: &Pgaccel, table: &str) -> Result<f64> {
    pgaccel
        .metric(DURATION_SUM, table)
        .await?
        .ok_or_else(|| format!("{DURATION_SUM} is not reported for {table}").into())
}

fn print(rows: &[(u64, String, f64, f64)], new_rows: u64) {
    println!("append of {new_rows} new rows: pgaccel's refresh time, median of the rounds");
    println!(
        "| dataset | rows held | append ms | vs same append at the smallest size | initial full load ms | full load / append |"
    );
    println!("|---|---|---|---|---|---|");
    for (size, table, full, append) in rows {
        let keyed = table.starts_with("ev_");
        let smallest = rows
            .iter()
            .find(|(_, t, _, _)| t.starts_with("ev_") == keyed)
            .map_or(*append, |row| row.3);
        println!(
            "| {table} ({}) | {size} | {append:.1} | {:.2}x | {full:.0} | {:.1}x |",
            if keyed { "primary key" } else { "no key" },
            append / smallest,
            full / append,
        );
    }
}
