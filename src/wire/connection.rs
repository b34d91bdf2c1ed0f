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
use tracing::debug;

use super::backend::{Backend, Extended, error_info};
use super::cancel::QueryCancel;
use super::text_check::TextCheck;
use super::{Handlers, Login};
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
    let shutdown = handlers.drain.token.clone();
    // A connection still in its startup at shutdown is dropped.
    let backend = tokio::select! {
        () = shutdown.cancelled() => return Ok(()),
        backend = open(socket, peer, &handlers) => backend?,
    };
    let Some(mut backend) = backend else {
        return Ok(());
    };
    serve(&mut backend, &handlers.drain).await
}

/// TLS, startup and authentication, up to a session; `None` when the
/// connection ended before.
async fn open(
    socket: TcpStream,
    peer: SocketAddr,
    handlers: &Arc<Handlers>,
) -> io::Result<Option<Backend>> {
    let server = socket.local_addr()?;
    let deadline = tokio::time::Instant::now() + STARTUP_TIMEOUT;
    let mut client = DefaultClient::new(peer, false);
    let direct_tls = match &handlers.security.tls {
        Some(tls) => starts_tls_handshake(&socket, deadline)
            .await?
            .then_some(tls),
        None => None,
    };
    let transport = match direct_tls {
        // A client with `sslnegotiation=direct` starts the TLS handshake
        // at once, without an SSLRequest.
        Some(tls) => {
            let Some(stream) = accept_tls(tls, socket, deadline).await else {
                return Ok(None);
            };
            if stream.get_ref().1.alpn_protocol() != Some(super::tls::POSTGRESQL_ALPN) {
                debug!(%peer, "direct TLS connection without the postgresql ALPN protocol refused");
                return Ok(None);
            }
            client.is_secure = true;
            Transport::Tls(Box::new(stream))
        }
        None => Transport::Plain(socket),
    };
    let mut connection = Framed::new(
        CorkedStream::new(transport),
        PgWireMessageServerCodec::new(client),
    );
    if connection.codec().client_info.is_secure {
        connection.set_state(PgWireConnectionState::AwaitingStartup);
    }
    if !start(&mut connection, handlers, deadline).await? {
        return Ok(None);
    }
    backend(connection, handlers, peer, server).await
}

/// Whether the client's first byte opens a TLS handshake (a TLS record of
/// type handshake, 0x16, where a PostgreSQL message would have a length).
async fn starts_tls_handshake(
    socket: &TcpStream,
    deadline: tokio::time::Instant,
) -> io::Result<bool> {
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(deadline, socket.peek(&mut first)).await {
        Ok(peeked) => Ok(peeked? == 1 && first[0] == 0x16),
        Err(_) => Ok(false),
    }
}

/// The TLS handshake; `None` when it failed or did not finish in time.
async fn accept_tls(
    tls: &super::tls::Tls,
    socket: TcpStream,
    deadline: tokio::time::Instant,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let peer = socket.peer_addr().ok();
    match tokio::time::timeout_at(deadline, tls.acceptor.accept(socket)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(error)) => {
            debug!(?peer, "TLS handshake failed: {error}");
            None
        }
        Err(_) => None,
    }
}

/// The startup handshake, through pgwire's handlers; `false` when the
/// connection ended (a cancel request, a client that went away or timed
/// out, a refused startup).
async fn start(
    connection: &mut Connection,
    handlers: &Arc<Handlers>,
    deadline: tokio::time::Instant,
) -> io::Result<bool> {
    let login = Arc::new(Login::new(Arc::clone(&handlers.startup)));
    while in_startup(connection.state()) {
        let message = tokio::select! {
            _ = tokio::time::sleep_until(deadline) => return Ok(false),
            message = next_message(connection) => message?,
        };
        let Some(message) = message else {
            return Ok(false);
        };
        match message {
            PgWireFrontendMessage::Terminate(_) => return Ok(false),
            PgWireFrontendMessage::SslNegotiation(negotiation) => {
                if !negotiate_encryption(connection, handlers, negotiation, deadline).await? {
                    return Ok(false);
                }
            }
            PgWireFrontendMessage::Startup(_)
                if !connection.codec().client_info.is_secure
                    && handlers
                        .security
                        .tls
                        .as_ref()
                        .is_some_and(|tls| tls.required) =>
            {
                let error = PgError::new(
                    sqlstate::INVALID_AUTHORIZATION,
                    "this server accepts TLS connections only (runtime.pg.tls.required): connect with sslmode=require or stronger",
                )
                .into_fatal();
                end_with(connection, &error).await?;
                return Ok(false);
            }
            message => {
                let outcome = process_message(
                    message,
                    connection,
                    Arc::clone(&login),
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
async fn serve(backend: &mut Backend, drain: &super::Drain) -> io::Result<()> {
    // At shutdown, a statement still running after `drain.timeout` is ended.
    let _terminator = {
        let (token, timeout, cancel) = (drain.token.clone(), drain.timeout, backend.cancel());
        tokio_util::task::AbortOnDropHandle::new(tokio::spawn(async move {
            token.cancelled().await;
            tokio::time::sleep(timeout).await;
            cancel.terminate();
        }))
    };
    let mut mid_batch = false;
    loop {
        if backend.ended() {
            return deliver_output(&mut backend.connection).await;
        }
        if backend.terminating() {
            return end_with(&mut backend.connection, &sqlstate::admin_shutdown()).await;
        }
        let idle = backend.session().idle_timeout();
        let idle_after = idle.as_ref().map(|(timeout, _)| *timeout);
        let message = tokio::select! {
            // At shutdown no new statement starts; an extended-protocol
            // batch under way runs to its Sync (within the timeout).
            biased;
            () = drain.token.cancelled(), if !mid_batch => {
                return end_with(&mut backend.connection, &sqlstate::admin_shutdown()).await;
            }
            () = past_timeout(drain), if mid_batch => {
                return end_with(&mut backend.connection, &sqlstate::admin_shutdown()).await;
            }
            message = next_message(&mut backend.connection) => match message {
                // A frame pgwire cannot decode (a length over its 1 GB
                // limit, a truncated body): said, then the connection ends.
                Err(error) if error.kind() == io::ErrorKind::InvalidData => {
                    let error = PgError::new(
                        sqlstate::PROTOCOL_VIOLATION,
                        format!("invalid frontend message: {error}"),
                    )
                    .into_fatal();
                    return end_with(&mut backend.connection, &error).await;
                }
                message => message?,
            },
            () = sleep_for(idle_after) => {
                let Some((_, error)) = idle else { continue };
                return end_with(&mut backend.connection, &error).await;
            }
        };
        let Some(message) = message else {
            return Ok(());
        };
        mid_batch = matches!(
            message,
            PgWireFrontendMessage::Parse(_)
                | PgWireFrontendMessage::Bind(_)
                | PgWireFrontendMessage::Describe(_)
                | PgWireFrontendMessage::Execute(_)
                | PgWireFrontendMessage::Close(_)
                | PgWireFrontendMessage::Flush(_)
        ) || (mid_batch
            && !matches!(
                message,
                PgWireFrontendMessage::Sync(_) | PgWireFrontendMessage::Query(_)
            ));
        let deliver = match message {
            PgWireFrontendMessage::Terminate(_) => return Ok(()),
            PgWireFrontendMessage::Query(query) => {
                if backend.connection.get_mut().text_was_utf8() {
                    backend.simple_query(&query.query).await?;
                } else {
                    backend.refuse_query(&not_utf8()).await?;
                }
                true
            }
            PgWireFrontendMessage::Parse(parse) => {
                if backend.connection.get_mut().text_was_utf8() {
                    backend.extended(Extended::Parse(parse)).await?;
                } else {
                    backend.refuse_extended(&not_utf8()).await?;
                }
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

/// PostgreSQL's error for statement text that is not UTF-8 (pgaccel's
/// only client encoding).
fn not_utf8() -> PgError {
    PgError::new(
        sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
        "invalid byte sequence for encoding \"UTF8\"",
    )
}

/// Fires `drain.timeout` after shutdown began.
async fn past_timeout(drain: &super::Drain) {
    drain.token.cancelled().await;
    tokio::time::sleep(drain.timeout).await;
}

/// Waits `duration`, or forever.
async fn sleep_for(duration: Option<Duration>) {
    match duration {
        Some(duration) => tokio::time::sleep(duration).await,
        None => std::future::pending().await,
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
        match decoded(connection).now_or_never() {
            Some(next) => next,
            None => {
                deliver_output(connection).await?;
                decoded(connection).await
            }
        }
    } else {
        decoded(connection).await
    };
    match next {
        None => Ok(None),
        Some(Ok(message)) => Ok(Some(message)),
        Some(Err(error)) => Err(io::Error::new(io::ErrorKind::InvalidData, error)),
    }
}

/// The next frame, decoded. pgwire's decoders index into the frame as the
/// client described it, and some malformed frames (counts that run past
/// the end) make them panic: such a frame is a decoding error like any
/// other, not the end of the connection task.
async fn decoded(
    connection: &mut Connection,
) -> Option<Result<PgWireFrontendMessage, pgwire::error::PgWireError>> {
    match std::panic::AssertUnwindSafe(connection.next())
        .catch_unwind()
        .await
    {
        Ok(next) => next,
        Err(_) => Some(Err(pgwire::error::PgWireError::IoError(io::Error::new(
            io::ErrorKind::InvalidData,
            "malformed message",
        )))),
    }
}

/// Answers an SSLRequest: `S` and the TLS handshake when the listener has
/// TLS, `N` otherwise (the client goes on in plain text or gives up); a
/// GSSENCRequest always gets `N`. `false` when the connection ends.
async fn negotiate_encryption(
    connection: &mut Connection,
    handlers: &Arc<Handlers>,
    negotiation: SslNegotiationMetaMessage,
    deadline: tokio::time::Instant,
) -> io::Result<bool> {
    match negotiation {
        SslNegotiationMetaMessage::PostgresSsl(_) => {
            let Some(tls) = &handlers.security.tls else {
                connection
                    .feed(PgWireBackendMessage::SslResponse(SslResponse::Refuse))
                    .await?;
                return Ok(true);
            };
            // Bytes sent after the SSLRequest, before the handshake, would
            // be taken as if they had come encrypted: refused.
            if !connection.read_buffer().is_empty() {
                let error = PgError::new(
                    sqlstate::PROTOCOL_VIOLATION,
                    "received unencrypted data after SSL request",
                )
                .into_fatal();
                end_with(connection, &error).await?;
                return Ok(false);
            }
            connection
                .feed(PgWireBackendMessage::SslResponse(SslResponse::Accept))
                .await?;
            deliver_output(connection).await?;
            let Transport::Plain(socket) =
                std::mem::replace(&mut connection.get_mut().inner, Transport::Closed)
            else {
                return Ok(false);
            };
            let Some(stream) = accept_tls(tls, socket, deadline).await else {
                return Ok(false);
            };
            connection.get_mut().inner = Transport::Tls(Box::new(stream));
            connection.codec_mut().client_info.is_secure = true;
            connection.set_state(PgWireConnectionState::AwaitingStartup);
            Ok(true)
        }
        SslNegotiationMetaMessage::PostgresGss(_) => {
            connection
                .feed(PgWireBackendMessage::GssEncResponse(GssEncResponse::Refuse))
                .await?;
            Ok(true)
        }
        // Neither: the first message is a startup or cancel request, which
        // the codec decodes once it knows no negotiation comes first.
        SslNegotiationMetaMessage::None => {
            connection.set_state(PgWireConnectionState::AwaitingStartup);
            Ok(true)
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

/// The client's socket, in plain text or inside TLS.
pub enum Transport {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    /// Between the SSLRequest and the end of the handshake.
    Closed,
}

impl Transport {
    fn closed() -> io::Error {
        io::Error::from(io::ErrorKind::NotConnected)
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_read(cx, buf),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
            Transport::Closed => Poll::Ready(Err(Transport::closed())),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_write(cx, buf),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
            Transport::Closed => Poll::Ready(Err(Transport::closed())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_flush(cx),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
            Transport::Closed => Poll::Ready(Err(Transport::closed())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Transport::Plain(socket) => Pin::new(socket).poll_shutdown(cx),
            Transport::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
            Transport::Closed => Poll::Ready(Ok(())),
        }
    }
}

/// A client stream whose writes are held in memory while `corked`, and
/// written in one go when the stream is flushed uncorked (or the held bytes
/// reach [`HIGH_WATER`]). Reads pass straight through.
pub struct CorkedStream {
    inner: Transport,
    held: BytesMut,
    corked: bool,
    /// Whether each statement's text arrived as UTF-8.
    text_check: TextCheck,
}

impl CorkedStream {
    fn new(inner: Transport) -> Self {
        CorkedStream {
            inner,
            held: BytesMut::with_capacity(8 * 1024),
            corked: true,
            text_check: TextCheck::default(),
        }
    }

    /// Whether the text of the Query or Parse message just received was
    /// UTF-8 (see [`TextCheck`]).
    fn text_was_utf8(&mut self) -> bool {
        self.text_check.next_verdict()
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
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        this.text_check.feed(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
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
