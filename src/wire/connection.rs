//! One client connection: the startup handshake through pgwire's handlers,
//! then the message loop over a [`Backend`], with PostgreSQL's output
//! buffering and idle timeouts.
//!
//! pgwire's own loop writes every backend message to the socket as soon as a
//! handler sends it, so one extended-protocol round trip (ParseComplete,
//! BindComplete, RowDescription, DataRow, CommandComplete, ReadyForQuery)
//! costs six `write` calls and as many wake-ups of the client. PostgreSQL
//! buffers its output and sends it when the client has to wait for it: at
//! ReadyForQuery, at a Flush message, or when the buffer fills. So this loop
//! reads the messages itself and writes through a [`CorkedStream`] that
//! holds writes until the loop says to deliver them.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use chrono::Utc;
use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::{ClientInfo, DefaultClient, NoopHandler, PgWireConnectionState};
use pgwire::messages::response::{GssEncResponse, SslResponse};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, SslNegotiationMetaMessage};
use pgwire::tokio::server::{PgWireMessageServerCodec, process_error, process_message};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

use super::Handlers;
use super::backend::{Backend, Extended, error_info};
use super::cancel::QueryCancel;
use crate::query::{Identity, PgError, Session, sqlstate};

/// A client that has not finished its startup in this time is dropped, as
/// PostgreSQL's `authentication_timeout` (default one minute) does.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Output held back while corked is written through once it reaches this
/// size, so a large result streams with bounded memory and backpressure.
const HIGH_WATER: usize = 64 * 1024;

/// A client connection: pgwire's codec over the corked socket. The codec's
/// statement type is unused: pgaccel keeps its own statements.
pub type Connection = Framed<CorkedStream, PgWireMessageServerCodec<String>>;

/// Serves one client until it disconnects, terminates or fails.
pub(super) async fn run(
    socket: TcpStream,
    peer: SocketAddr,
    handlers: Arc<Handlers>,
) -> io::Result<()> {
    let server = socket.local_addr()?;
    let client = DefaultClient::new(peer, false);
    let mut connection = Framed::new(
        CorkedStream::new(socket),
        PgWireMessageServerCodec::new(client),
    );
    if !start(&mut connection, &handlers).await? {
        return Ok(());
    }
    let Some(mut backend) = backend(connection, &handlers, peer, server).await? else {
        return Ok(());
    };
    serve(&mut backend).await
}

/// The startup handshake, through pgwire's handlers; `false` when the
/// connection ended (a cancel request, a client that went away or timed
/// out, a refused startup).
async fn start(connection: &mut Connection, handlers: &Arc<Handlers>) -> io::Result<bool> {
    let deadline = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(deadline);
    while in_startup(connection.state()) {
        let message = tokio::select! {
            _ = &mut deadline => return Ok(false),
            message = next_message(connection) => message?,
        };
        let Some(message) = message else {
            return Ok(false);
        };
        match message {
            PgWireFrontendMessage::Terminate(_) => return Ok(false),
            PgWireFrontendMessage::SslNegotiation(negotiation) => {
                refuse_encryption(connection, negotiation).await?;
            }
            message => {
                let outcome = process_message(
                    message,
                    connection,
                    Arc::clone(&handlers.startup),
                    Arc::new(NoopHandler),
                    Arc::new(NoopHandler),
                    Arc::new(NoopHandler),
                    Arc::clone(&handlers.cancel),
                )
                .await;
                if let Err(error) = outcome {
                    process_error(connection, error, false).await?;
                    return Ok(false);
                }
            }
        }
        deliver_output(connection).await?;
    }
    Ok(true)
}

/// The session for a connection that completed its startup.
async fn backend(
    mut connection: Connection,
    handlers: &Arc<Handlers>,
    peer: SocketAddr,
    server: SocketAddr,
) -> io::Result<Option<Backend>> {
    let metadata = connection.metadata().clone();
    let user = metadata.get("user").cloned().unwrap_or_default();
    let identity = Identity {
        database: metadata
            .get("database")
            .cloned()
            .unwrap_or_else(|| user.clone()),
        user,
        pid: connection.pid_and_secret_key().0,
        client: peer,
        server,
        started: Utc::now(),
    };
    let cancel = connection
        .session_extensions()
        .get::<Arc<QueryCancel>>()
        .map(|cancel| Arc::clone(&*cancel))
        .unwrap_or_default();
    let startup: Vec<(String, String)> = metadata.into_iter().collect();
    match Session::new(Arc::clone(&handlers.engine), identity, &startup) {
        Ok(session) => Ok(Some(Backend::new(connection, session, cancel))),
        Err(error) => {
            // Validated at startup already; a failure here still ends the
            // connection the way PostgreSQL reports it.
            let error = error.into_fatal();
            connection
                .send(PgWireBackendMessage::ErrorResponse(
                    error_info(&error).into(),
                ))
                .await?;
            Ok(None)
        }
    }
}

/// The message loop after startup.
async fn serve(backend: &mut Backend) -> io::Result<()> {
    loop {
        let idle = backend.session().idle_timeout();
        let message = match idle {
            Some((timeout, error)) => tokio::select! {
                message = next_message(&mut backend.connection) => message?,
                _ = tokio::time::sleep(timeout) => {
                    return end_with(&mut backend.connection, &error).await;
                }
            },
            None => next_message(&mut backend.connection).await?,
        };
        let Some(message) = message else {
            return Ok(());
        };
        let deliver = match message {
            PgWireFrontendMessage::Terminate(_) => return Ok(()),
            PgWireFrontendMessage::Query(query) => {
                backend.simple_query(&query.query).await?;
                true
            }
            PgWireFrontendMessage::Parse(parse) => {
                backend.extended(Extended::Parse(parse)).await?;
                false
            }
            PgWireFrontendMessage::Bind(bind) => {
                backend.extended(Extended::Bind(bind)).await?;
                false
            }
            PgWireFrontendMessage::Describe(describe) => {
                backend.extended(Extended::Describe(describe)).await?;
                false
            }
            PgWireFrontendMessage::Execute(execute) => {
                backend.extended(Extended::Execute(execute)).await?;
                false
            }
            PgWireFrontendMessage::Close(close) => {
                backend.extended(Extended::Close(close)).await?;
                false
            }
            PgWireFrontendMessage::Sync(_) => {
                backend.sync().await?;
                true
            }
            PgWireFrontendMessage::Flush(_) => true,
            // Left over from a COPY FROM that was refused: ignored, as
            // PostgreSQL ignores them outside COPY.
            PgWireFrontendMessage::CopyData(_)
            | PgWireFrontendMessage::CopyDone(_)
            | PgWireFrontendMessage::CopyFail(_) => false,
            other => {
                let error = PgError::new(
                    sqlstate::PROTOCOL_VIOLATION,
                    format!("unexpected message from the client: {other:?}"),
                )
                .into_fatal();
                return end_with(&mut backend.connection, &error).await;
            }
        };
        if deliver {
            deliver_output(&mut backend.connection).await?;
        }
    }
}

/// Sends a FATAL error and ends the connection.
async fn end_with(connection: &mut Connection, error: &PgError) -> io::Result<()> {
    connection
        .feed(PgWireBackendMessage::ErrorResponse(
            error_info(error).into(),
        ))
        .await?;
    deliver_output(connection).await
}

fn in_startup(state: PgWireConnectionState) -> bool {
    matches!(
        state,
        PgWireConnectionState::AwaitingSslRequest
            | PgWireConnectionState::AwaitingStartup
            | PgWireConnectionState::AuthenticationInProgress
    )
}

/// The next message from the client. Held output is delivered before the
/// loop would wait for the client, so a client that pipelines without a Sync
/// or Flush still gets its answers rather than waiting forever.
async fn next_message(connection: &mut Connection) -> io::Result<Option<PgWireFrontendMessage>> {
    let next = if connection.get_ref().has_held_output() {
        match connection.next().now_or_never() {
            Some(next) => next,
            None => {
                deliver_output(connection).await?;
                connection.next().await
            }
        }
    } else {
        connection.next().await
    };
    match next {
        None => Ok(None),
        Some(Ok(message)) => Ok(Some(message)),
        Some(Err(error)) => Err(io::Error::new(io::ErrorKind::InvalidData, error)),
    }
}

/// pgaccel does not offer TLS or GSS encryption yet: both are refused with
/// the one-byte answer, and the client goes on in plain text.
async fn refuse_encryption(
    connection: &mut Connection,
    negotiation: SslNegotiationMetaMessage,
) -> io::Result<()> {
    match negotiation {
        SslNegotiationMetaMessage::PostgresSsl(_) => {
            connection
                .feed(PgWireBackendMessage::SslResponse(SslResponse::Refuse))
                .await
        }
        SslNegotiationMetaMessage::PostgresGss(_) => {
            connection
                .feed(PgWireBackendMessage::GssEncResponse(GssEncResponse::Refuse))
                .await
        }
        // Neither: the first message is a startup or cancel request, which
        // the codec decodes once it knows no negotiation comes first.
        SslNegotiationMetaMessage::None => {
            connection.set_state(PgWireConnectionState::AwaitingStartup);
            Ok(())
        }
    }
}

/// Writes everything held back to the socket.
pub async fn deliver_output(connection: &mut Connection) -> io::Result<()> {
    connection.get_mut().corked = false;
    let flushed = SinkExt::<PgWireBackendMessage>::flush(connection).await;
    connection.get_mut().corked = true;
    flushed
}

/// A TCP stream whose writes are held in memory while `corked`, and written
/// in one go when the stream is flushed uncorked (or the held bytes reach
/// [`HIGH_WATER`]). Reads pass straight through.
pub struct CorkedStream {
    inner: TcpStream,
    held: BytesMut,
    corked: bool,
}

impl CorkedStream {
    fn new(inner: TcpStream) -> Self {
        CorkedStream {
            inner,
            held: BytesMut::with_capacity(8 * 1024),
            corked: true,
        }
    }

    fn has_held_output(&self) -> bool {
        !self.held.is_empty()
    }

    fn poll_write_held(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.held))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.held.advance(written);
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for CorkedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for CorkedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.held.len() >= HIGH_WATER {
            ready!(this.poll_write_held(cx))?;
        }
        this.held.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.corked {
            return Poll::Ready(Ok(()));
        }
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_write_held(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}
