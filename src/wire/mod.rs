//! The PostgreSQL wire protocol front end: accepts connections, runs the
//! startup handshake (trust authentication for now), and hands statements to
//! [`session::QueryService`].
//!
//! The wire layer knows nothing of refresh: it plans against the shared
//! DataFusion session and reports errors with real SQLSTATE codes.

mod cancel;
mod connection;
mod encode;
mod numeric;
mod session;
pub mod sqlstate;
mod statement;
mod text;

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{
    ClientInfo, ConnectionHandle, ConnectionManager, NoopHandler, PidSecretKeyGenerator,
    RandomPidSecretKeyGenerator,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use cancel::{CancelRequests, Cancellations};
pub use session::QueryService;

/// The PostgreSQL version pgaccel presents itself as, everywhere: the
/// startup `server_version`, `SHOW server_version` and `version()`.
pub const SERVER_VERSION: &str = "16.6 (pgaccel 0.1.0)";
pub const SERVER_VERSION_NUM: &str = "160006";

/// What `version()` returns.
pub fn version_string() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} on {}-linux, compiled by rustc, 64-bit",
        std::env::consts::ARCH
    )
}

/// Serves connections from `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    service: Arc<QueryService>,
    max_connections: usize,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let handlers = Arc::new(Handlers::new(service));
    let slots = Arc::new(Semaphore::new(max_connections));
    loop {
        let (socket, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    warn!("accepting a connection failed: {error}");
                    continue;
                }
            },
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            warn!(%peer, max_connections, "connection refused: too many clients");
            tracker.spawn(refuse_connection(socket));
            continue;
        };
        let _ = socket.set_nodelay(true);
        let handlers = Arc::clone(&handlers);
        let shutdown = shutdown.clone();
        tracker.spawn(async move {
            tokio::select! {
                _ = shutdown.cancelled() => {}
                result = connection::run(socket, peer, handlers) => {
                    if let Err(error) = result {
                        debug!(%peer, "connection ended: {error}");
                    }
                }
            }
            drop(permit);
        });
    }
}

/// Answers a connection over `max_connections` as PostgreSQL does: FATAL
/// 53300 "sorry, too many clients already", then close.
async fn refuse_connection(mut socket: tokio::net::TcpStream) {
    use pgwire::messages::Message;
    use pgwire::messages::response::ErrorResponse;
    use tokio::io::AsyncWriteExt;

    let info = ErrorInfo::new(
        "FATAL".to_owned(),
        "53300".to_owned(),
        "sorry, too many clients already".to_owned(),
    );
    let mut buffer = bytes::BytesMut::new();
    if ErrorResponse::from(info).encode(&mut buffer).is_ok() {
        let _ = socket.write_all(&buffer).await;
    }
    let _ = socket.shutdown().await;
}

struct Handlers {
    service: Arc<QueryService>,
    startup: Arc<Startup>,
    cancel: Arc<CancelRequests>,
    copy: Arc<NoopHandler>,
}

impl Handlers {
    fn new(service: Arc<QueryService>) -> Self {
        let connections = Arc::new(ConnectionManager::new());
        let cancellations = Arc::new(Cancellations::default());
        Handlers {
            service,
            startup: Arc::new(Startup {
                connections: Arc::clone(&connections),
                cancellations: Arc::clone(&cancellations),
                keys: RandomPidSecretKeyGenerator::default(),
            }),
            cancel: Arc::new(CancelRequests {
                manager: connections,
                cancellations,
            }),
            copy: Arc::new(NoopHandler),
        }
    }
}

/// Trust authentication: every startup is accepted. Registers the connection
/// for cancel requests and reports pgaccel as a read-only hot standby.
struct Startup {
    connections: Arc<ConnectionManager>,
    cancellations: Arc<Cancellations>,
    keys: RandomPidSecretKeyGenerator,
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let PgWireFrontendMessage::Startup(ref startup) = message else {
            return Ok(());
        };
        protocol_negotiation(client, startup).await?;
        save_startup_parameters_to_metadata(client, startup);
        let (pid, secret) = self.keys.generate(client);
        let (handle, guard) = self.connections.register(pid, secret.clone());
        let (query_cancel, registration) = self.cancellations.register(pid, &secret);
        client.session_extensions().insert(query_cancel);
        client.session_extensions().insert(registration);
        client.set_pid_and_secret_key(pid, secret);
        client
            .session_extensions()
            .insert::<Arc<ConnectionHandle>>(handle);
        client.session_extensions().insert(guard);
        finish_authentication(client, &ServerParameters).await
    }
}

struct ServerParameters;

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let mut parameters: HashMap<String, String> = [
            ("server_version", SERVER_VERSION),
            ("server_encoding", "UTF8"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("IntervalStyle", "postgres"),
            ("TimeZone", "UTC"),
            ("integer_datetimes", "on"),
            ("standard_conforming_strings", "on"),
            ("in_hot_standby", "on"),
            ("default_transaction_read_only", "on"),
            ("is_superuser", "off"),
            ("search_path", "\"$user\", public"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        if let Some(name) = client.metadata().get("application_name") {
            parameters.insert("application_name".to_owned(), name.clone());
        }
        if let Some(user) = client.metadata().get("user") {
            parameters.insert("session_authorization".to_owned(), user.clone());
        }
        Some(parameters)
    }
}
