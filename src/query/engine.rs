//! The query engine shared by every connection ([`Engine`]: the DataFusion
//! state every session starts from, the planner and its caches, the server's
//! settings) and what each session carries into DataFusion ([`SessionInfo`]:
//! who is connected, the session's settings, the versions its transaction
//! reads), which the session functions and the accelerated tables read at
//! execution time.

use std::any::Any;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use arc_swap::{ArcSwap, ArcSwapOption};
use chrono::{DateTime, Utc};
use datafusion::catalog::CatalogProvider;
use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::context::SessionState;

use super::activity::Activity;
use super::forward::Forwarder;
use super::planner::Planner;
use super::settings::{ServerValues, Settings};
use super::table::Pins;
use crate::dataset::Registry;

/// Who a session is: what the client connected as and where from.
#[derive(Debug, Clone)]
pub struct Identity {
    pub user: String,
    /// The database named in the startup packet, served as pgaccel's catalog.
    pub database: String,
    pub pid: i32,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub started: DateTime<Utc>,
}

/// The engine shared by every connection.
pub struct Engine {
    /// The state every session's own state is cloned from.
    pub(super) base: SessionState,
    pub(super) planner: Planner,
    pub(super) server: Arc<ServerValues>,
    pub(super) registry: Arc<Registry>,
    /// When pgaccel started (`pg_postmaster_start_time()`).
    pub started: DateTime<Utc>,
    /// Every connection's current activity (`pg_stat_activity`).
    pub activity: Arc<Activity>,
    /// The catalog that holds every dataset, `pg_catalog` and
    /// `information_schema`.
    pub(super) catalog: Arc<dyn CatalogProvider>,
    /// Answers refused queries from their source, when configured to.
    pub(super) forwarder: Forwarder,
    /// What each connection's queries may hold in memory.
    pub(super) memory_limit: usize,
}

impl Engine {
    pub(super) fn new(
        base: SessionState,
        catalog: Arc<dyn CatalogProvider>,
        registry: Arc<Registry>,
        server: ServerValues,
        activity: Arc<Activity>,
        forwarder: Forwarder,
        memory_limit: usize,
    ) -> Engine {
        Engine {
            base,
            planner: Planner::default(),
            server: Arc::new(server),
            registry,
            started: Utc::now(),
            activity,
            catalog,
            forwarder,
            memory_limit,
        }
    }

    /// Statements parsed and planned so far (repeated statements reuse their
    /// plans and do not add to it).
    pub fn statements_planned(&self) -> u64 {
        self.planner.statements_planned()
    }

    /// How many partitions a query runs on.
    pub fn target_partitions(&self) -> usize {
        self.base.config().target_partitions()
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}

/// What DataFusion carries for one session, read by the session functions
/// (`current_user`, `current_setting()`, ...) and the accelerated tables at
/// execution time. Shared plans stay valid for every session because they
/// hold no session value themselves.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub identity: Arc<Identity>,
    /// The session's settings as of the statement running.
    pub settings: Arc<ArcSwap<Settings>>,
    /// The acceleration versions the running statement (or the whole
    /// transaction) reads.
    pub pins: Arc<ArcSwapOption<Pins>>,
    /// `set_config()` calls made by the running statement, applied by the
    /// session when it ends: (name, value, is_local).
    pub set_requests: Arc<Mutex<Vec<(String, String, bool)>>>,
    /// When pgaccel started (`pg_postmaster_start_time()`).
    pub started: DateTime<Utc>,
    /// The schemas of the catalog, for `current_schema()`.
    pub schemas: Arc<Vec<String>>,
    /// The session's open cursors, for `pg_cursors`.
    pub cursors: Arc<Mutex<Vec<CursorRow>>>,
}

/// One row of `pg_cursors`.
#[derive(Debug, Clone)]
pub struct CursorRow {
    pub name: String,
    pub statement: String,
    pub holdable: bool,
    pub binary: bool,
    pub scrollable: bool,
    pub created: DateTime<Utc>,
}

impl SessionInfo {
    /// The `SessionInfo` of the session a query runs in, if any.
    pub fn of(options: &datafusion::config::ConfigOptions) -> Option<&SessionInfo> {
        options.extensions.get::<SessionInfo>()
    }

    pub fn settings(&self) -> Arc<Settings> {
        self.settings.load_full()
    }
}

impl ExtensionOptions for SessionInfo {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, _value: &str) -> Result<()> {
        Err(DataFusionError::Configuration(format!(
            "pgaccel.{key} is not a setting"
        )))
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        Vec::new()
    }
}

impl ConfigExtension for SessionInfo {
    const PREFIX: &'static str = "pgaccel";
}
