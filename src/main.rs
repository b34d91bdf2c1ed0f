//! The `pgaccel` command: run the server, check a configuration, trigger a
//! refresh, list datasets.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use pgaccel::admin_api::DatasetInfo;
use pgaccel::config;
use pgaccel::dataset::DatasetStatus;
use pgaccel::runtime::Runtime;
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    name = "pgaccel",
    version,
    about = "A PostgreSQL-wire read replica that answers from local accelerations"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How log lines are written (to standard error): `text`, coloured only
    /// on a terminal, or `json`, one object per line for a log collector.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "PGACCEL_LOG_FORMAT")]
    log_format: LogFormat,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Logs at `RUST_LOG`'s levels (default `info`) to standard error.
fn init_logging(format: LogFormat) {
    use std::io::IsTerminal;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .init(),
    }
}

#[derive(Subcommand)]
enum Command {
    /// Load the datasets and serve them over the PostgreSQL wire protocol.
    Run {
        #[arg(short, long, default_value = "pgaccel.yaml")]
        config: PathBuf,
    },
    /// Validate a configuration file and print every problem found.
    Check {
        #[arg(short, long, default_value = "pgaccel.yaml")]
        config: PathBuf,
    },
    /// Trigger an on-demand refresh of a dataset on a running pgaccel.
    Refresh {
        name: String,
        /// Wait for the refresh to complete, showing its progress; fail if
        /// it fails.
        #[arg(long)]
        wait: bool,
        /// With `--wait`: give up after this long (`90s`, `10m`, `2h`).
        #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
        timeout: std::time::Duration,
        #[command(flatten)]
        api: Api,
    },
    /// List the datasets of a running pgaccel with their status.
    Datasets {
        #[command(flatten)]
        api: Api,
    },
}

/// How the commands that talk to a running pgaccel reach its HTTP API.
#[derive(clap::Args)]
struct Api {
    #[arg(
        long = "api",
        default_value = "http://127.0.0.1:8090",
        env = "PGACCEL_API"
    )]
    url: String,
    /// The API key (`runtime.http.api_key`); else read from `--config`.
    #[arg(long, env = "PGACCEL_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// A configuration file to read `runtime.http.api_key` from.
    #[arg(short, long)]
    config: Option<PathBuf>,
    /// A CA certificate (PEM) to trust for an `https://` API whose
    /// certificate the system's roots do not vouch for.
    #[arg(long, env = "PGACCEL_API_CA")]
    api_ca: Option<PathBuf>,
}

impl Api {
    /// Why a request failed, with its causes (reqwest's own message leaves
    /// out, say, which certificate check failed).
    fn unreachable(&self, error: &reqwest::Error) -> String {
        let mut message = format!("cannot reach {}: {error}", self.url);
        let mut cause = std::error::Error::source(error);
        while let Some(inner) = cause {
            message.push_str(&format!(": {inner}"));
            cause = inner.source();
        }
        message
    }

    /// A request to `path` carrying the API key, if there is one.
    fn request(
        &self,
        method: reqwest::Method,
        path: &str,
    ) -> Result<reqwest::RequestBuilder, String> {
        let url = format!("{}{path}", self.url.trim_end_matches('/'));
        let key = match (&self.api_key, &self.config) {
            (Some(key), _) => Some(key.clone()),
            (None, Some(path)) => config::load(path)
                .map_err(|errors| format!("{}:\n{errors}", path.display()))?
                .runtime
                .http
                .api_key
                .map(|key| key.expose().to_owned()),
            (None, None) => None,
        };
        let mut client = reqwest::Client::builder();
        if let Some(ca) = &self.api_ca {
            let pem = std::fs::read(ca).map_err(|e| format!("--api-ca {}: {e}", ca.display()))?;
            let certificate = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| format!("--api-ca {}: {e}", ca.display()))?;
            client = client.add_root_certificate(certificate);
        }
        let client = client
            .build()
            .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
        let request = client.request(method, url);
        Ok(match key {
            Some(key) => request.bearer_auth(key),
            None => request,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    // DataFusion plans with deep recursion (nested subqueries, long
    // catalog queries from BI tools); 2 MiB, tokio's default, is not always
    // enough, and the space is only reserved, not used.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(pgaccel::threads::QUERY_THREADS)
        .thread_stack_size(16 * 1024 * 1024)
        .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Command::Run { config } => run(config).await,
            Command::Check { config } => check(config),
            Command::Refresh {
                name,
                wait,
                timeout,
                api,
            } => refresh(&api, &name, wait.then_some(timeout)).await,
            Command::Datasets { api } => datasets(&api).await,
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(path: PathBuf) -> Result<(), String> {
    let config = config::load(&path).map_err(|errors| format!("{}:\n{errors}", path.display()))?;
    let runtime = Runtime::start(config)
        .await
        .map_err(|error| error.to_string())?;
    println!(
        "pgaccel is serving PostgreSQL on {} and HTTP on {}",
        runtime.pg_addr(),
        runtime.http_addr()
    );
    wait_for_signal().await;
    tracing::info!("shutting down");
    runtime.shutdown().await;
    Ok(())
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

fn check(path: PathBuf) -> Result<(), String> {
    let config = config::load(&path).map_err(|errors| format!("{}:\n{errors}", path.display()))?;
    let refused = config.unsupported();
    if !refused.is_empty() {
        let lines: Vec<String> = refused.iter().map(ToString::to_string).collect();
        return Err(format!("{}:\n{}", path.display(), lines.join("\n")));
    }
    println!(
        "{}: ok ({} datasets)",
        path.display(),
        config.datasets.len()
    );
    Ok(())
}

async fn refresh(api: &Api, name: &str, wait: Option<Duration>) -> Result<(), String> {
    // What the status said before the request: the refresh it starts is the
    // one whose attempt is newer.
    let before = match wait {
        Some(_) => Some(dataset_info(api, name).await?),
        None => None,
    };
    let response = api
        .request(
            reqwest::Method::POST,
            &format!("/v1/datasets/{name}/acceleration/refresh"),
        )?
        .send()
        .await
        .map_err(|e| api.unreachable(&e))?;
    let status = response.status();
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    let message = body["message"].as_str().unwrap_or_default().to_owned();
    if !status.is_success() {
        return Err(format!("refresh of '{name}' refused ({status}): {message}"));
    }
    println!("{message}");
    match (wait, before) {
        (Some(timeout), Some(before)) => wait_for_refresh(api, name, &before, timeout).await,
        _ => Ok(()),
    }
}

/// The status of dataset `name` on the running pgaccel.
async fn dataset_info(api: &Api, name: &str) -> Result<DatasetInfo, String> {
    list_datasets(api)
        .await?
        .into_iter()
        .find(|dataset| dataset.name == name)
        .ok_or_else(|| format!("dataset '{name}' not found"))
}

/// Follows the refresh requested after `before` until it completes, fails
/// for good (no retry pending) or `timeout` passes, with a progress bar of
/// the rows read (against the rows served before, when there are some).
async fn wait_for_refresh(
    api: &Api,
    name: &str,
    before: &DatasetInfo,
    timeout: Duration,
) -> Result<(), String> {
    let started = std::time::Instant::now();
    // A full read reads about as many rows as are served; any other mode
    // reads what changed, so only its rows and rate are shown.
    let expected = before
        .rows
        .filter(|rows| *rows > 0 && before.refresh_mode.as_deref() == Some("full"));
    let bar = match expected {
        Some(rows) => ProgressBar::new(rows as u64).with_style(
            ProgressStyle::with_template(
                "{spinner} {prefix} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} rows ({per_sec}) {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template(
                "{spinner} {prefix} [{elapsed_precise}] {human_pos} rows ({per_sec}) {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    bar.set_prefix(name.to_owned());
    bar.enable_steady_tick(Duration::from_millis(120));
    loop {
        let now = dataset_info(api, name).await?;
        let attempted = now.last_refresh_attempt != before.last_refresh_attempt;
        if let Some(progress) = &now.refresh_progress {
            bar.set_position(progress.rows);
            bar.set_message(format!(
                "{} read, {}/s",
                indicatif::HumanBytes(progress.bytes),
                indicatif::HumanBytes(progress.bytes_per_second as u64)
            ));
        } else if let Some(phase) = &now.refresh_phase {
            bar.set_message(phase.clone());
        }
        if now.refresh_phase.is_none() {
            if now.last_refresh.is_some() && now.last_refresh != before.last_refresh {
                bar.finish_and_clear();
                println!(
                    "Dataset '{name}' refreshed in {:.1}s: {} rows.",
                    started.elapsed().as_secs_f64(),
                    now.rows.unwrap_or_default()
                );
                return Ok(());
            }
            if attempted && now.status == Some(DatasetStatus::Error) {
                match &now.next_retry {
                    Some(at) => bar.set_message(format!("failed; retrying at {at}")),
                    None => {
                        bar.abandon();
                        return Err(format!(
                            "refresh of '{name}' failed: {}",
                            now.error_message.unwrap_or_default()
                        ));
                    }
                }
            }
        }
        if started.elapsed() >= timeout {
            bar.abandon();
            return Err(format!(
                "refresh of '{name}' did not complete within {}",
                humantime::format_duration(timeout)
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn list_datasets(api: &Api) -> Result<Vec<DatasetInfo>, String> {
    let url = format!("{}/v1/datasets?status=true", api.url.trim_end_matches('/'));
    let response = api
        .request(reqwest::Method::GET, "/v1/datasets?status=true")?
        .send()
        .await
        .map_err(|e| api.unreachable(&e))?;
    if !response.status().is_success() {
        return Err(format!("{url} answered {}", response.status()));
    }
    response
        .json()
        .await
        .map_err(|e| format!("unexpected answer from {url}: {e}"))
}

async fn datasets(api: &Api) -> Result<(), String> {
    let list = list_datasets(api).await?;
    println!(
        "{:<24} {:<12} {:>12} {:<28} {:<28} ERROR",
        "NAME", "STATUS", "ROWS", "LAST_REFRESH", "NEXT_REFRESH"
    );
    for dataset in list {
        let status = dataset.status.map(|s| format!("{s:?}")).unwrap_or_default();
        println!(
            "{:<24} {:<12} {:>12} {:<28} {:<28} {}",
            dataset.name,
            status,
            dataset
                .rows
                .map(|r| r.to_string())
                .unwrap_or_else(|| "-".into()),
            dataset.last_refresh.unwrap_or_else(|| "-".into()),
            dataset.next_refresh.unwrap_or_else(|| "-".into()),
            dataset.error_message.unwrap_or_default(),
        );
    }
    Ok(())
}

/// jemalloc instead of the system allocator: the query path allocates many
/// small, short-lived objects from several threads, where glibc's arenas
/// contend. Measured with `cargo bench --bench lookups` (prepared lookups,
/// 4 clients): 1.22x PostgreSQL's rate with jemalloc against 1.01x with
/// glibc; TPC-H Q1/Q6 times were the same with either.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read when it starts: a background thread gives
/// freed pages back to the system after the decay time (10 s) even when
/// the process allocates nothing more. Without it, pages freed while idle
/// stay resident: a refresh sorted by `sort_by` frees a whole unsorted copy
/// of the table at once, and left lineitem (1014 MB of Arrow) at 1951 MiB
/// RSS against 1273 MiB with the thread. `MALLOC_CONF`-style overrides stay
/// possible through `_RJEM_MALLOC_CONF`, read after this.
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: Option<&'static std::ffi::c_char> =
    Some(unsafe { &*c"background_thread:true".as_ptr() });
