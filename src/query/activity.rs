//! What every connection is doing, for `pg_stat_activity`: one entry per
//! connection, updated as its statements start and end, removed when it
//! closes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

/// One connection's row of `pg_stat_activity`.
#[derive(Debug, Clone)]
pub struct Backend {
    pub pid: i32,
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub client: SocketAddr,
    pub backend_start: DateTime<Utc>,
    pub xact_start: Option<DateTime<Utc>>,
    pub query_start: Option<DateTime<Utc>>,
    pub state_change: DateTime<Utc>,
    /// `active`, `idle`, `idle in transaction`, `idle in transaction (aborted)`.
    pub state: &'static str,
    /// The statement running, or the last one.
    pub query: String,
}

/// Every connection's entry, and the transactions each database has seen.
#[derive(Debug, Default)]
pub struct Activity {
    backends: Mutex<BTreeMap<i32, Backend>>,
    transactions: Mutex<BTreeMap<String, Transactions>>,
}

/// A database's ended transactions since pgaccel started, for
/// `pg_stat_database`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Transactions {
    pub committed: i64,
    pub rolled_back: i64,
}

impl Activity {
    /// Adds a connection; dropping the returned handle removes it.
    pub fn register(self: &Arc<Self>, backend: Backend) -> ActivityHandle {
        let pid = backend.pid;
        self.lock().insert(pid, backend);
        ActivityHandle {
            pid,
            activity: Arc::clone(self),
        }
    }

    /// Every connection's entry, by pid.
    pub fn snapshot(&self) -> Vec<Backend> {
        self.lock().values().cloned().collect()
    }

    /// The ended transactions of each database that has had one.
    pub fn transactions(&self) -> BTreeMap<String, Transactions> {
        self.transactions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<i32, Backend>> {
        self.backends.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection's entry; updates go through it.
#[derive(Debug)]
pub struct ActivityHandle {
    pid: i32,
    activity: Arc<Activity>,
}

impl ActivityHandle {
    pub fn update(&self, change: impl FnOnce(&mut Backend)) {
        if let Some(backend) = self.activity.lock().get_mut(&self.pid) {
            change(backend);
        }
    }
}

impl ActivityHandle {
    /// Counts a transaction of this connection's database as ended.
    pub fn transaction_ended(&self, committed: bool) {
        let Some(database) = self
            .activity
            .lock()
            .get(&self.pid)
            .map(|b| b.database.clone())
        else {
            return;
        };
        let mut transactions = self
            .activity
            .transactions
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let entry = transactions.entry(database).or_default();
        if committed {
            entry.committed += 1;
        } else {
            entry.rolled_back += 1;
        }
    }
}

impl Drop for ActivityHandle {
    fn drop(&mut self) {
        self.activity.lock().remove(&self.pid);
    }
}
