//! Runs pgaccel as a child process for the bench: writes its YAML config, starts it on
//! free ports, waits for readiness, and talks to its HTTP admin API (refresh, status,
//! metrics). The child is killed when its `Pgaccel` guard drops, also on error paths.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::Result;

/// How long a start (initial load) or a refresh may take before the bench gives up.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long a pgaccel with no datasets may take to become ready.
const EMPTY_START_TIMEOUT: Duration = Duration::from_secs(120);
const POLL_EVERY: Duration = Duration::from_millis(100);

/// The options every bench takes.
#[derive(clap::Args, Debug)]
pub struct Common {
    /// The pgaccel binary (default: the release build in CARGO_TARGET_DIR or ./target).
    #[arg(long)]
    pub pgaccel: Option<PathBuf>,
    /// PostgreSQL user, for the bench and for pgaccel's source params.
    #[arg(long, default_value = "postgres")]
    pub pg_user: String,
    /// Also write the figures as JSON to this file (read by `cargo bench --bench report`).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// How pgaccel reaches the PostgreSQL that holds the TPC-H schema.
pub struct Source<'a> {
    pub schema: &'a str,
    pub user: &'a str,
}

/// A running pgaccel; dropping it kills the process.
pub struct Pgaccel {
    child: Child,
    pub pg_port: u16,
    http: String,
    client: reqwest::Client,
    /// Holds the config and the log; removed with the guard.
    dir: TempDir,
}

/// The binary to run: `--pgaccel PATH`, else the one built with this bench (in the
/// same profile's folder), else the release build in `$CARGO_TARGET_DIR`, else
/// `./target/release/pgaccel`.
pub fn locate_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return if path.is_file() {
            Ok(path.to_path_buf())
        } else {
            Err(format!("--pgaccel {}: no such file", path.display()).into())
        };
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    // A bench runs as `<target>/<profile>/deps/<bench>-<hash>`.
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("pgaccel")));
    beside
        .into_iter()
        .chain([
            target.join("release/pgaccel"),
            PathBuf::from("target/release/pgaccel"),
        ])
        .find(|path| path.is_file())
        .ok_or_else(|| {
            format!(
                "no pgaccel binary at {}/release/pgaccel or ./target/release/pgaccel: \
                 run `cargo build --release` first, pass --pgaccel PATH, or use --baseline-only",
                target.display()
            )
            .into()
        })
}

impl Pgaccel {
    /// Starts `binary` with the given datasets (none for a memory baseline) and waits
    /// until `GET /v1/ready` answers 200.
    pub async fn start(binary: &Path, source: Option<&Source<'_>>) -> Result<Pgaccel> {
        let datasets = match source {
            None => String::new(),
            Some(source) => tpch_datasets(source),
        };
        Pgaccel::start_with(binary, &datasets).await
    }

    /// Starts `binary` with `datasets` (YAML list entries; empty for none)
    /// and waits until `GET /v1/ready` answers 200.
    pub async fn start_with(binary: &Path, datasets: &str) -> Result<Pgaccel> {
        Pgaccel::start_with_config(binary, "", datasets).await
    }

    /// Starts `binary` with `top` (top-level YAML such as a `snapshots:`
    /// block, or nothing) and `datasets`, and waits until it is ready.
    pub async fn start_with_config(binary: &Path, top: &str, datasets: &str) -> Result<Pgaccel> {
        let dir = tempfile::Builder::new()
            .prefix("pgaccel-bench-")
            .tempdir()?;
        let (pg_port, http_port) = (free_port()?, free_port()?);
        let config = dir.path().join("pgaccel.yaml");
        std::fs::write(&config, config_yaml(pg_port, http_port, top, datasets))?;
        let log = File::create(dir.path().join("pgaccel.log"))?;
        let child = Command::new(binary)
            .args(["run", "-c"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut server = Pgaccel {
            child,
            pg_port,
            http: format!("http://127.0.0.1:{http_port}"),
            client: reqwest::Client::new(),
            dir,
        };
        server
            .wait_ready(if datasets.is_empty() {
                EMPTY_START_TIMEOUT
            } else {
                LOAD_TIMEOUT
            })
            .await?;
        Ok(server)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    async fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Err(format!(
                    "pgaccel exited during startup ({status}); its log:\n{}",
                    self.log_tail()
                )
                .into());
            }
            let ready = self.client.get(self.url("/v1/ready")).send().await;
            if ready.is_ok_and(|r| r.status() == reqwest::StatusCode::OK) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "pgaccel not ready after {timeout:?}; its log:\n{}",
                    self.log_tail()
                )
                .into());
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Triggers an on-demand refresh of `dataset` and waits until its `last_refresh`
    /// moves; returns the time from the trigger to the observed change.
    pub async fn refresh(&self, dataset: &str) -> Result<Duration> {
        let before = self.last_refresh(dataset).await?;
        let started = Instant::now();
        let url = self.url(&format!("/v1/datasets/{dataset}/acceleration/refresh"));
        let response = self.client.post(url).send().await?;
        if response.status() != reqwest::StatusCode::CREATED {
            return Err(format!(
                "refresh trigger answered {}: {}",
                response.status(),
                response.text().await?
            )
            .into());
        }
        // Done when a new last_refresh shows and the dataset is no longer refreshing.
        while self
            .last_refresh(dataset)
            .await?
            .is_none_or(|now| Some(&now) == before.as_ref())
        {
            if started.elapsed() > LOAD_TIMEOUT {
                return Err(format!("{dataset} refresh not done after {LOAD_TIMEOUT:?}").into());
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        Ok(started.elapsed())
    }

    /// `last_refresh` of `dataset` from `GET /v1/datasets?status=true`, `None` while it
    /// is refreshing; fails if the dataset reports an error, so that a failed refresh
    /// is not mistaken for a slow one.
    async fn last_refresh(&self, dataset: &str) -> Result<Option<String>> {
        let entry = self.dataset_status(dataset).await?;
        if entry["status"]
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("error"))
        {
            return Err(format!("{dataset} is in error: {}", entry["error_message"]).into());
        }
        if entry["status"]
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("refreshing"))
        {
            return Ok(None);
        }
        Ok(entry["last_refresh"].as_str().map(str::to_owned))
    }

    /// Waits until no dataset's column statistics are still being
    /// computed after its load: that thread competes with the measured
    /// queries for the cores (lookups ran at two thirds of their rate on 2
    /// cores while it did).
    #[allow(dead_code)] // used by the lookups and tpch benches, not by all
    pub async fn wait_statistics(&self) -> Result<()> {
        let deadline = Instant::now() + LOAD_TIMEOUT;
        while self.statistics_computing().await? {
            if Instant::now() > deadline {
                return Err(
                    format!("column statistics not computed after {LOAD_TIMEOUT:?}").into(),
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        Ok(())
    }

    /// Whether any dataset's column statistics are still being computed.
    #[allow(dead_code)] // used by wait_statistics
    async fn statistics_computing(&self) -> Result<bool> {
        Ok(self
            .all_status()
            .await?
            .as_array()
            .is_some_and(|all| all.iter().any(|d| d["column_statistics"] == "computing")))
    }

    /// The entry of `dataset` in `GET /v1/datasets?status=true`.
    pub async fn dataset_status(&self, dataset: &str) -> Result<Value> {
        let list = self.all_status().await?;
        list.as_array()
            .and_then(|all| all.iter().find(|d| d["name"] == dataset))
            .cloned()
            .ok_or_else(|| format!("/v1/datasets does not list {dataset}: {list}").into())
    }

    /// `GET /v1/datasets?status=true`.
    async fn all_status(&self) -> Result<Value> {
        Ok(self
            .client
            .get(self.url("/v1/datasets?status=true"))
            .send()
            .await?
            .json()
            .await?)
    }

    /// Sum of `dataset_acceleration_bytes` over `datasets` from `GET /metrics`, or
    /// `None` if any of them is not reported.
    pub async fn acceleration_bytes(&self, datasets: &[&str]) -> Result<Option<f64>> {
        let text = self.metrics().await?;
        Ok(datasets
            .iter()
            .map(|name| metric_value(&text, "dataset_acceleration_bytes", name))
            .sum())
    }

    /// The value of `metric{dataset="NAME"}` from `GET /metrics`, if reported.
    #[allow(dead_code)] // used by the append bench, not by tpch
    pub async fn metric(&self, metric: &str, dataset: &str) -> Result<Option<f64>> {
        Ok(metric_value(&self.metrics().await?, metric, dataset))
    }

    async fn metrics(&self) -> Result<String> {
        Ok(self
            .client
            .get(self.url("/metrics"))
            .send()
            .await?
            .text()
            .await?)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.http)
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("pgaccel.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        if lines.is_empty() {
            return "(empty)".to_owned();
        }
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for Pgaccel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago: bind port 0, read the port, release it.
fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn config_yaml(pg_port: u16, http_port: u16, top: &str, datasets: &str) -> String {
    let mut yaml = format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:{pg_port} }}\n  http: {{ listen: 127.0.0.1:{http_port} }}\n{top}"
    );
    if datasets.is_empty() {
        yaml.push_str("datasets: []\n");
    } else {
        yaml.push_str("datasets:\n");
        yaml.push_str(datasets);
    }
    yaml
}

/// `lineitem` and `orders`, fully refreshed.
fn tpch_datasets(source: &Source<'_>) -> String {
    ["lineitem", "orders"]
        .iter()
        .map(|table| {
            format!(
                "  - from: postgres:{schema}.{table}\n    name: {table}\n    params: {{ pg_host: 127.0.0.1, \
                 pg_port: 5432, pg_db: test, pg_user: {user}, pg_sslmode: disable }}\n",
                schema = source.schema,
                user = source.user,
            )
        })
        .collect()
}

/// The value of `metric{dataset="NAME"}` in Prometheus text, if present.
fn metric_value(text: &str, metric: &str, dataset: &str) -> Option<f64> {
    let label = format!("dataset=\"{dataset}\"");
    text.lines()
        .filter(|line| {
            line.strip_prefix(metric)
                .is_some_and(|rest| rest.starts_with('{'))
        })
        .find(|line| line.contains(&label))
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// Resident memory of process `pid` in bytes (VmRSS from /proc).
pub fn resident_bytes(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .ok_or("no VmRSS in /proc status")?;
    Ok(kib * 1024)
}
