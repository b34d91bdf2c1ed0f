//! The PostgreSQL wire protocol front end: accepts connections, runs the
//! startup handshake (trust or password authentication), then speaks the simple
//! and extended query protocols for one [`Session`] per connection
//! ([`backend`]), and encodes results ([`encode`], [`copy`]).
//!
//! The wire layer knows nothing of refresh or of what statements mean: the
//! query layer answers them and reports errors with real SQLSTATE codes.

mod auth;
mod backend;
mod cancel;
mod connection;
mod copy;
mod encode;
mod forwarded;
mod lanes;
mod numeric;
mod params;
pub mod scram;
mod text_check;
pub(crate) mod tls;

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::{
    ServerParameterProvider, StartupHandler, finish_authentication, protocol_negotiation,
    save_startup_parameters_to_metadata,
};
use pgwire::api::{
    ClientInfo, PgWireConnectionState, PidSecretKeyGenerator, RandomPidSecretKeyGenerator,
};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use crate::config::AuthMethod;
use crate::query::settings::Settings;
use crate::query::{Engine, PgError, Session};
use cancel::{CancelRequests, Cancellations};

/// Serves connections from `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    engine: Arc<Engine>,
    limits: Limits,
    security: Security,
    drain: Drain,
    tracker: TaskTracker,
) {
    let shutdown = drain.token.clone();
    let handlers = Arc::new(Handlers::new(engine, security, drain));
    let max_connections = limits.max_connections;
    let slots = Arc::new(Semaphore::new(max_connections));
    let mut lanes = match limits.connection_threads {
        0 => None,
        threads => match lanes::Lanes::start(threads, tokio::runtime::Handle::current()) {
            Ok(lanes) => Some(lanes),
            Err(error) => {
                warn!(
                    "connection threads could not start, connections are served on the query threads: {error}"
                );
                None
            }
        },
    };
    loop {
        let (socket, peer) = tokio::select! {
            // No connection is accepted once shutdown began.
            biased;
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
            crate::metrics::connection_refused();
            tracker.spawn(refuse_connection(socket));
            continue;
        };
        let _ = socket.set_nodelay(true);
        let handlers = Arc::clone(&handlers);
        let open = crate::metrics::OpenConnection::new();
        // Tracked from here, so that shutdown waits for a connection still
        // on its way to its thread.
        let tracked = tracker.token();
        let serve = move |socket| async move {
            let _tracked = tracked;
            let _open = open;
            // At shutdown the connection itself ends, once its statement
            // has finished or `drain.timeout` has passed.
            if let Err(error) = connection::run(socket, peer, handlers).await {
                debug!(%peer, "connection ended: {error}");
            }
            drop(permit);
        };
        match lanes.as_mut() {
            Some(lanes) => lanes.serve(socket, serve),
            None => drop(tokio::spawn(serve(socket))),
        }
    }
}

/// How many connections are served, and on how many threads.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    /// 0: on the query runtime's threads.
    pub connection_threads: usize,
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

/// How connections end at shutdown: when `token` fires, an idle connection
/// ends at once with FATAL 57P01, and a running statement may finish within
/// `timeout` before it is ended the same way.
#[derive(Debug, Clone)]
pub struct Drain {
    pub token: CancellationToken,
    pub timeout: std::time::Duration,
}

struct Handlers {
    engine: Arc<Engine>,
    startup: Arc<Startup>,
    cancel: Arc<CancelRequests>,
    security: Security,
    drain: Drain,
}

impl Handlers {
    fn new(engine: Arc<Engine>, security: Security, drain: Drain) -> Self {
        let cancellations = Arc::new(Cancellations::default());
        Handlers {
            startup: Arc::new(Startup {
                engine: Arc::clone(&engine),
                cancellations: Arc::clone(&cancellations),
                keys: RandomPidSecretKeyGenerator::default(),
                auth: security.auth.clone(),
            }),
            cancel: Arc::new(CancelRequests { cancellations }),
            engine,
            security,
            drain,
        }
    }
}

/// How the listener protects its connections: TLS and password
/// authentication, each optional (no `auth`: every client is trusted).
#[derive(Debug, Clone, Default)]
pub struct Security {
    pub tls: Option<tls::Tls>,
    pub auth: Option<Arc<auth::Auth>>,
}

impl Security {
    /// Loads what `runtime.pg` configures; the error names the key and file
    /// at fault.
    pub fn load(config: &crate::config::PgConfig) -> Result<Security, String> {
        let tls = config.tls.as_ref().map(tls::load).transpose()?;
        let auth = match &config.auth {
            Some(auth) if auth.method != AuthMethod::Trust => Some(Arc::new(auth::Auth::new(
                auth,
                tls.as_ref().map(|tls| tls.cert_pem.as_slice()),
            )?)),
            _ => None,
        };
        Ok(Security { tls, auth })
    }
}

/// `error` as pgwire reports an error of the client's making.
fn user_error(error: PgError) -> PgWireError {
    PgWireError::UserError(Box::new(backend::error_info(&error)))
}

/// What every connection's startup shares: checks the startup settings,
/// registers the connection for cancel requests and reports the session's
/// settings (pgaccel presents itself as a read-only hot standby).
struct Startup {
    engine: Arc<Engine>,
    cancellations: Arc<Cancellations>,
    keys: RandomPidSecretKeyGenerator,
    auth: Option<Arc<auth::Auth>>,
}

/// One connection's startup: its authentication exchange in progress.
struct Login {
    shared: Arc<Startup>,
    stage: tokio::sync::Mutex<Stage>,
}

enum Stage {
    /// Before the startup message.
    Started,
    /// The password was asked for; the settings wait for it.
    Asked(Settings, Asked),
    Done,
}

enum Asked {
    Cleartext,
    Md5([u8; 4]),
    /// SASL mechanisms were offered; `plus` when SCRAM-SHA-256-PLUS was.
    ScramStart {
        plus: bool,
    },
    /// The server's first SCRAM message was sent.
    ScramFinal(Box<scram::Pending>),
}

impl Login {
    fn new(shared: Arc<Startup>) -> Self {
        Login {
            shared,
            stage: tokio::sync::Mutex::new(Stage::Started),
        }
    }

    /// Lets the client in: cancel registration, then the settings and
    /// ReadyForQuery.
    async fn complete<C>(&self, client: &mut C, settings: Settings) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (pid, secret) = self.shared.keys.generate(client);
        let (query_cancel, registration) = self.shared.cancellations.register(pid, &secret);
        client.session_extensions().insert(query_cancel);
        client.session_extensions().insert(registration);
        client.set_pid_and_secret_key(pid, secret);
        finish_authentication(client, &ServerParameters(settings)).await
    }
}

/// FATAL 28P01, the same for a wrong password and an unknown user.
fn authentication_failed(user: &str, method: AuthMethod) -> PgWireError {
    crate::metrics::auth_failed(method.as_str());
    user_error(
        PgError::new(
            crate::query::sqlstate::INVALID_PASSWORD,
            format!("password authentication failed for user \"{user}\""),
        )
        .into_fatal(),
    )
}

/// FATAL 08P01 for a SCRAM message that breaks the protocol.
fn scram_refused(message: String) -> PgWireError {
    user_error(PgError::new(crate::query::sqlstate::PROTOCOL_VIOLATION, message).into_fatal())
}

/// The error a client sees when its SCRAM exchange stops.
fn scram_failed(error: scram::ScramError, failed: impl Fn() -> PgWireError) -> PgWireError {
    match error {
        scram::ScramError::Malformed(message) => scram_refused(message),
        scram::ScramError::Failed => failed(),
    }
}

#[async_trait]
impl StartupHandler for Login {
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
        let mut stage = self.stage.lock().await;
        match (std::mem::replace(&mut *stage, Stage::Done), message) {
            (Stage::Started, PgWireFrontendMessage::Startup(startup)) => {
                protocol_negotiation(client, &startup).await?;
                save_startup_parameters_to_metadata(client, &startup);
                let settings = Session::startup_settings(&self.shared.engine, client.metadata())
                    .map_err(|error| user_error(error.into_fatal()))?;
                let Some(auth) = &self.shared.auth else {
                    return self.complete(client, settings).await;
                };
                let (request, asked) = match auth.method {
                    AuthMethod::Trust => return self.complete(client, settings).await,
                    AuthMethod::Password => {
                        if !client.is_secure() && !auth.allow_cleartext_without_tls {
                            return Err(user_error(
                                PgError::new(
                                    crate::query::sqlstate::INVALID_AUTHORIZATION,
                                    "password authentication needs TLS on this server: connect with sslmode=require or stronger",
                                )
                                .into_fatal(),
                            ));
                        }
                        (Authentication::CleartextPassword, Asked::Cleartext)
                    }
                    AuthMethod::Md5 => {
                        let salt: [u8; 4] = rand::random();
                        (Authentication::MD5Password(salt.to_vec()), Asked::Md5(salt))
                    }
                    AuthMethod::ScramSha256 => {
                        let plus = client.is_secure() && auth.certificate_hash.is_some();
                        let mut mechanisms = vec!["SCRAM-SHA-256".to_owned()];
                        if plus {
                            mechanisms.push("SCRAM-SHA-256-PLUS".to_owned());
                        }
                        (Authentication::SASL(mechanisms), Asked::ScramStart { plus })
                    }
                };
                client.set_state(PgWireConnectionState::AuthenticationInProgress);
                client
                    .send(PgWireBackendMessage::Authentication(request))
                    .await?;
                *stage = Stage::Asked(settings, asked);
                Ok(())
            }
            (
                Stage::Asked(settings, asked),
                PgWireFrontendMessage::PasswordMessageFamily(answer),
            ) => {
                let auth = self.shared.auth.as_ref().expect("asked for a password");
                let user = client.metadata().get("user").cloned().unwrap_or_default();
                let failed = || authentication_failed(&user, auth.method);
                match asked {
                    Asked::Cleartext => {
                        let password = answer.into_password().map_err(|_| failed())?;
                        if !auth.cleartext_matches(&user, password.password.as_bytes()) {
                            return Err(failed());
                        }
                        self.complete(client, settings).await
                    }
                    Asked::Md5(salt) => {
                        let password = answer.into_password().map_err(|_| failed())?;
                        if !auth.md5_matches(&user, &salt, password.password.as_bytes()) {
                            return Err(failed());
                        }
                        self.complete(client, settings).await
                    }
                    Asked::ScramStart { plus } => {
                        let first = answer.into_sasl_initial_response()?;
                        let hash = auth.certificate_hash.as_deref().filter(|_| plus);
                        let offered = first.auth_method == "SCRAM-SHA-256"
                            || (plus && first.auth_method == "SCRAM-SHA-256-PLUS");
                        if !offered {
                            return Err(scram_refused(format!(
                                "the client selected an invalid SASL authentication mechanism \"{}\"",
                                first.auth_method
                            )));
                        }
                        let data = first.data.as_deref().unwrap_or_default();
                        let (server_first, pending) = scram::server_first(
                            auth.verifier(&user),
                            &first.auth_method,
                            data,
                            hash,
                        )
                        .map_err(|error| scram_failed(error, failed))?;
                        client
                            .send(PgWireBackendMessage::Authentication(
                                Authentication::SASLContinue(server_first.into()),
                            ))
                            .await?;
                        *stage = Stage::Asked(settings, Asked::ScramFinal(Box::new(pending)));
                        Ok(())
                    }
                    Asked::ScramFinal(pending) => {
                        let response = answer.into_sasl_response()?;
                        let server_final = pending
                            .server_final(&response.data)
                            .map_err(|error| scram_failed(error, failed))?;
                        client
                            .send(PgWireBackendMessage::Authentication(
                                Authentication::SASLFinal(server_final.into()),
                            ))
                            .await?;
                        self.complete(client, settings).await
                    }
                }
            }
            (Stage::Done, _) | (Stage::Started, _) | (Stage::Asked(..), _) => Err(user_error(
                PgError::new(
                    crate::query::sqlstate::PROTOCOL_VIOLATION,
                    "unexpected message during authentication",
                )
                .into_fatal(),
            )),
        }
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
