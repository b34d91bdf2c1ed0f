//! Cancel requests: each connection registers a [`QueryCancel`] under its
//! backend key; a cancel request (which arrives on a connection of its own)
//! fires the token of the statement running, which stops it whether it is
//! planning, waiting or streaming rows, and the client gets 57014.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;
use tokio_util::sync::CancellationToken;

type Key = (i32, Bytes);

/// The cancellable statement of one connection.
#[derive(Debug, Default)]
pub struct QueryCancel {
    current: Mutex<CancellationToken>,
    /// Set at shutdown once `runtime.shutdown_timeout` has passed: the
    /// statement running (and any after it) ends with 57P01.
    terminating: AtomicBool,
}

impl QueryCancel {
    /// A token for the statement about to run; a cancel request fires it.
    pub fn start(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if self.terminating() {
            token.cancel();
        }
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = token.clone();
        token
    }

    /// Ends the statement running, and the connection, for shutdown.
    pub fn terminate(&self) {
        self.terminating.store(true, Ordering::SeqCst);
        self.cancel();
    }

    pub fn terminating(&self) -> bool {
        self.terminating.load(Ordering::SeqCst)
    }

    fn cancel(&self) {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancel();
    }
}

/// Every connection's [`QueryCancel`], by backend key.
#[derive(Debug, Default)]
pub struct Cancellations {
    connections: Mutex<HashMap<Key, Arc<QueryCancel>>>,
}

impl Cancellations {
    /// Registers a connection; dropping the returned guard unregisters it.
    pub fn register(
        self: &Arc<Self>,
        pid: i32,
        secret: &SecretKey,
    ) -> (Arc<QueryCancel>, Registration) {
        let key = (pid, secret.to_bytes());
        let cancel = Arc::new(QueryCancel::default());
        self.lock().insert(key.clone(), Arc::clone(&cancel));
        let registration = Registration {
            key,
            registry: Arc::clone(self),
        };
        (cancel, registration)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<QueryCancel>>> {
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Keeps a connection registered for cancel requests while it lives.
pub struct Registration {
    key: Key,
    registry: Arc<Cancellations>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.lock().remove(&self.key);
    }
}

/// Handles cancel requests.
pub struct CancelRequests {
    pub cancellations: Arc<Cancellations>,
}

#[async_trait]
impl CancelHandler for CancelRequests {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let key = (request.pid, request.secret_key.to_bytes());
        let cancel = self.cancellations.lock().get(&key).cloned();
        if let Some(cancel) = cancel {
            cancel.cancel();
        }
    }
}
