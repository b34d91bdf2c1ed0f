//! Builds a running pgaccel from a validated [`Config`]: the dataset
//! registry, the refresh loops (on their own `refresh-worker` threads), the
//! query session, the wire server and the admin API. Owns shutdown: one
//! [`CancellationToken`] tells every task to stop, one [`TaskTracker`] waits
//! for them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::config::{
    BootstrapOnFailure, Config, ConfigError, ConfigErrors, RefreshMode, SnapshotMode, SourceParams,
};
use crate::dataset::{Dataset, Registry};
use crate::{admin_api, metrics, query, refresh, snapshot, threads, wire};

/// How long shutdown waits, after `runtime.shutdown_timeout`, for
/// connections whose statements were ended and for refreshes to wind down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("{0}")]
    Config(#[from] ConfigErrors),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot build the query engine: {0}")]
    Query(#[from] datafusion::error::DataFusionError),
    #[error("cannot start the refresh-worker threads: {0}")]
    RefreshThreads(std::io::Error),
    /// TLS or authentication of the PostgreSQL listener cannot be set up
    /// (the message names the key and file).
    #[error("{0}")]
    Security(String),
}

/// Whether `listener` accepts connections from this machine only.
fn pg_addr_is_loopback(listener: &tokio::net::TcpListener) -> bool {
    listener
        .local_addr()
        .is_ok_and(|address| address.ip().is_loopback())
}

/// A running pgaccel.
pub struct Runtime {
    pg_addr: SocketAddr,
    http_addr: SocketAddr,
    registry: Arc<Registry>,
    engine: Arc<query::Engine>,
    shutdown: CancellationToken,
    /// `runtime.shutdown_timeout`: what running statements get at shutdown.
    shutdown_timeout: Duration,
    tracker: TaskTracker,
    /// Refresh work runs here, apart from the query threads, so that a bulk
    /// load cannot starve queries. `None` with `dedicated_thread_pool: disabled`.
    refresh_runtime: Option<tokio::runtime::Runtime>,
    /// `refresh_mode: changes` datasets run here (see [`changes_runtime`]).
    changes_runtime: Option<tokio::runtime::Runtime>,
}

impl Runtime {
    /// Starts everything; returns once both listeners are bound. Datasets
    /// load in the background.
    pub async fn start(config: Config) -> Result<Runtime, StartError> {
        let refused = config.unsupported();
        if !refused.is_empty() {
            return Err(ConfigErrors(refused).into());
        }
        metrics::handle();
        let mut snapshots = snapshot_setups(&config)?;
        let datasets: Vec<Arc<Dataset>> = config
            .datasets
            .iter()
            .cloned()
            .map(|dataset| Arc::new(Dataset::new(dataset)))
            .collect();
        let queue = snapshot::queue::plan(config.snapshots.as_ref(), &datasets, &mut snapshots)
            .map_err(|message| {
                ConfigErrors(vec![ConfigError {
                    dataset: None,
                    key: "snapshots.params.s3_queue_url".to_owned(),
                    message,
                }])
            })?;
        let security = wire::Security::load(&config.runtime.pg).map_err(StartError::Security)?;
        let api_access =
            admin_api::Access::load(&config.runtime.http).map_err(StartError::Security)?;
        let registry = Arc::new(Registry::new(datasets));
        let pg_listener = bind(config.runtime.pg.listen).await?;
        if security.auth.is_none() && !pg_addr_is_loopback(&pg_listener) {
            warn!(listen = %config.runtime.pg.listen, "the PostgreSQL port is reachable beyond this machine and trusts every client: configure runtime.pg.auth");
        }
        let pg_addr = pg_listener
            .local_addr()
            .map_err(|source| StartError::Bind {
                address: config.runtime.pg.listen,
                source,
            })?;
        let server =
            query::settings::ServerValues::new(pg_addr.port(), config.runtime.pg.max_connections)
                .with_statement_timeout(config.runtime.statement_timeout);
        let engine = query::engine(
            &registry,
            server,
            config.runtime.unsupported,
            config.runtime.query_memory_limit,
        )?;
        // Accelerations are split into as many partitions as a query uses.
        let partitions = engine.target_partitions();
        let http_listener = bind(config.runtime.http.listen).await?;
        let changes_runtime = changes_runtime(config.runtime.dedicated_thread_pool, &registry)?;
        let runtime = Runtime {
            pg_addr,
            http_addr: http_listener
                .local_addr()
                .map_err(|source| StartError::Bind {
                    address: config.runtime.http.listen,
                    source,
                })?,
            registry,
            engine,
            shutdown: CancellationToken::new(),
            shutdown_timeout: config.runtime.shutdown_timeout,
            tracker: TaskTracker::new(),
            refresh_runtime: refresh_runtime(config.runtime.dedicated_thread_pool)?,
            changes_runtime,
        };
        runtime.start_refresh_loops(partitions, snapshots);
        let configs: Vec<_> = runtime
            .registry
            .iter()
            .map(|dataset| dataset.config.clone())
            .collect();
        runtime.tracker.spawn(async move {
            crate::source::slots::clean_up(&configs).await;
        });
        if let Some((sqs, watches)) = queue {
            let listener = snapshot::queue::listen(sqs, watches, runtime.shutdown.clone());
            runtime.tracker.spawn(listener);
        }
        runtime.tracker.spawn(wire::serve(
            pg_listener,
            Arc::clone(&runtime.engine),
            wire::Limits {
                max_connections: config.runtime.pg.max_connections,
                connection_threads: config.runtime.pg.connection_threads,
            },
            security,
            wire::Drain {
                token: runtime.shutdown.clone(),
                timeout: config.runtime.shutdown_timeout,
            },
            runtime.tracker.clone(),
        ));
        let (registry, shutdown) = (Arc::clone(&runtime.registry), runtime.shutdown.clone());
        runtime.tracker.spawn(async move {
            let served = admin_api::serve(http_listener, registry, api_access, shutdown).await;
            if let Err(error) = served {
                warn!("the admin API stopped: {error}");
            }
        });
        info!(pg = %runtime.pg_addr, http = %runtime.http_addr, "pgaccel is listening");
        Ok(runtime)
    }

    fn start_refresh_loops(
        &self,
        partitions: usize,
        mut snapshots: HashMap<String, snapshot::Setup>,
    ) {
        for dataset in self.registry.iter() {
            let accelerated = dataset.config.acceleration.enabled;
            let dataset_streams = dataset.config.acceleration.refresh_mode == RefreshMode::Changes;
            let (dataset, setup) = (Arc::clone(dataset), snapshots.remove(&dataset.name()));
            let shutdown = self.shutdown.clone();
            let task = async move {
                if accelerated {
                    refresh::run(dataset, partitions, setup, shutdown).await;
                } else {
                    refresh::federate(dataset, shutdown).await;
                }
            };
            let runtime = match (&self.changes_runtime, dataset_streams) {
                (Some(changes_runtime), true) => Some(changes_runtime),
                _ => self.refresh_runtime.as_ref(),
            };
            match runtime {
                Some(refresh_runtime) => {
                    // Tracked from the query runtime so shutdown can await it.
                    let handle = refresh_runtime.spawn(task);
                    self.tracker.spawn(async move {
                        let _ = handle.await;
                    });
                }
                None => {
                    self.tracker.spawn(task);
                }
            }
        }
    }

    /// The bound pgwire address (useful when configured with port 0).
    pub fn pg_addr(&self) -> SocketAddr {
        self.pg_addr
    }

    /// The bound HTTP address.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// How many statements the wire server has planned since start: with
    /// the plan caches working, repeated statements do not add to it.
    pub fn statements_planned(&self) -> u64 {
        self.engine.statements_planned()
    }

    /// Stops accepting, tells every task to stop, and waits for them (at most
    /// ten seconds).
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        self.tracker.close();
        let grace = self.shutdown_timeout + SHUTDOWN_GRACE;
        if tokio::time::timeout(grace, self.tracker.wait())
            .await
            .is_err()
        {
            warn!("tasks still running after {grace:?}; stopping anyway");
        }
        for runtime in [self.refresh_runtime.take(), self.changes_runtime.take()]
            .into_iter()
            .flatten()
        {
            runtime.shutdown_background();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shutdown.cancel();
        // Dropping a runtime from async code panics; these are left to
        // wind down on their own threads.
        for runtime in [self.refresh_runtime.take(), self.changes_runtime.take()]
            .into_iter()
            .flatten()
        {
            runtime.shutdown_background();
        }
    }
}

/// Opens the snapshot location of every dataset that uses snapshots: its
/// `acceleration.snapshots_location`, or the top-level `snapshots.location`
/// (with the top-level `params` either way). A location that cannot be
/// opened is a configuration error naming the dataset and key.
fn snapshot_setups(config: &Config) -> Result<HashMap<String, snapshot::Setup>, ConfigErrors> {
    let store = config.snapshots.as_ref().filter(|store| store.enabled);
    let params = store.map(|store| store.params.clone()).unwrap_or_default();
    let on_failure = store.map_or(BootstrapOnFailure::Warn, |store| {
        store.bootstrap_on_failure_behavior
    });
    let mut setups = HashMap::new();
    let mut errors = Vec::new();
    for dataset in &config.datasets {
        let acceleration = &dataset.acceleration;
        if !acceleration.enabled || acceleration.snapshots == SnapshotMode::Disabled {
            continue;
        }
        let (url, key) = match (&acceleration.snapshots_location, store) {
            (Some(url), _) => (url.clone(), "acceleration.snapshots_location"),
            (None, Some(store)) => (store.location.clone(), "snapshots.location"),
            (None, None) => continue,
        };
        // A `file_format: snapshot` dataset reaches its location with its
        // own params.
        let params = match &dataset.params {
            SourceParams::Snapshot { params, .. } => params,
            _ => &params,
        };
        match snapshot::Location::open(&url, params) {
            Ok(location) => {
                setups.insert(
                    dataset.name.to_string(),
                    snapshot::Setup {
                        location,
                        on_failure,
                        notified: None,
                    },
                );
            }
            Err(message) => errors.push(ConfigError {
                dataset: Some(dataset.name.to_string()),
                key: key.to_owned(),
                message,
            }),
        }
    }
    if errors.is_empty() {
        Ok(setups)
    } else {
        Err(ConfigErrors(errors))
    }
}

async fn bind(address: SocketAddr) -> Result<TcpListener, StartError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| StartError::Bind { address, source })
}

fn refresh_runtime(dedicated: bool) -> Result<Option<tokio::runtime::Runtime>, StartError> {
    if !dedicated {
        return Ok(None);
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("refresh-worker")
        .thread_stack_size(16 * 1024 * 1024)
        .on_thread_start(|| {
            // A bulk refresh yields to queries on a saturated host.
            let _ = threads::set_current_nice(threads::REFRESH_NICE);
        })
        .enable_all()
        .build()
        .map(Some)
        .map_err(StartError::RefreshThreads)
}

/// The `cdc-apply-worker` runtime, when any dataset streams changes and
/// refresh has threads of its own: the apply of changes runs at the default
/// priority, while the query threads are lowered to nice 5.
fn changes_runtime(
    dedicated: bool,
    datasets: &Registry,
) -> Result<Option<tokio::runtime::Runtime>, StartError> {
    let streams = datasets.iter().any(|dataset| {
        dataset.config.acceleration.enabled
            && dataset.config.acceleration.refresh_mode == RefreshMode::Changes
    });
    if !dedicated || !streams {
        return Ok(None);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("cdc-apply-worker")
        .thread_stack_size(16 * 1024 * 1024)
        .on_thread_start(|| {
            // Created from a thread that may already be lowered.
            let _ = threads::set_current_nice(0);
        })
        .enable_all()
        .build()
        .map_err(StartError::RefreshThreads)?;
    let lowered =
        threads::renice_threads(threads::QUERY_THREADS, threads::QUERY_NICE_WHILE_STREAMING);
    info!(
        threads = lowered,
        "a dataset streams changes: query threads run at nice {}, change apply at 0",
        threads::QUERY_NICE_WHILE_STREAMING
    );
    Ok(Some(built))
}
