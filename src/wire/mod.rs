//! The PostgreSQL wire protocol front end: accepts connections, runs the
//! startup handshake (trust authentication for now), then speaks the simple
//! and extended query protocols for one [`Session`] per connection
//! ([`backend`]), and encodes results ([`encode`], [`copy`]).
//!
//! The wire layer knows nothing of refresh or of what statements mean: the
//! query layer answers them and reports errors with real SQLSTATE codes.

mod backend;
mod cancel;
mod connection;
mod copy;
mod encode;
mod forwarded;
mod numeric;
mod params;

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{ClientInfo, PidSecretKeyGenerator, RandomPidSecretKeyGenerator};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::query::settings::Settings;
use crate::query::{Engine, PgError, Session};
use cancel::{CancelRequests, Cancellations};

/// Serves connections from `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    engine: Arc<Engine>,
    max_connections: usize,
    shutdown: CancellationToken,
    tracker: TaskTracker,
) {
    let handlers = Arc::new(Handlers::new(engine));
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
    engine: Arc<Engine>,
    startup: Arc<Startup>,
    cancel: Arc<CancelRequests>,
}

impl Handlers {
    fn new(engine: Arc<Engine>) -> Self {
        let cancellations = Arc::new(Cancellations::default());
        Handlers {
            startup: Arc::new(Startup {
                engine: Arc::clone(&engine),
                cancellations: Arc::clone(&cancellations),
                keys: RandomPidSecretKeyGenerator::default(),
            }),
            cancel: Arc::new(CancelRequests { cancellations }),
            engine,
        }
    }
}

/// `error` as pgwire reports an error of the client's making.
fn user_error(error: PgError) -> PgWireError {
    PgWireError::UserError(Box::new(backend::error_info(&error)))
}

/// Trust authentication: every startup is accepted whose settings are
/// valid. Registers the connection for cancel requests and reports the
/// session's settings (pgaccel presents itself as a read-only hot standby).
struct Startup {
    engine: Arc<Engine>,
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
        let settings = Session::startup_settings(&self.engine, client.metadata())
            .map_err(|error| user_error(error.into_fatal()))?;
        let (pid, secret) = self.keys.generate(client);
        let (query_cancel, registration) = self.cancellations.register(pid, &secret);
        client.session_extensions().insert(query_cancel);
        client.session_extensions().insert(registration);
        client.set_pid_and_secret_key(pid, secret);
        finish_authentication(client, &ServerParameters(settings)).await
    }
}

/// The settings reported at startup.
struct ServerParameters(Settings);

impl ServerParameterProvider for ServerParameters {
    fn server_parameters<C>(&self, _client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        Some(
            self.0
                .reported()
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        )
    }
}
