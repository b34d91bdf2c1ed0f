//! One client connection: the message loop around pgwire's handlers, with
//! PostgreSQL's output buffering.
//!
//! pgwire's own loop writes every backend message to the socket as soon as a
//! handler sends it, so one extended-protocol round trip (ParseComplete,
//! BindComplete, RowDescription, DataRow, CommandComplete, ReadyForQuery)
//! costs six `write` calls and as many wake-ups of the client. PostgreSQL
//! buffers its output and sends it when the client has to wait for it: at
//! ReadyForQuery, at a Flush message, or when the buffer fills. pgwire has
//! no setting for that, so this loop drives pgwire's public
//! `process_message` itself over a [`CorkedStream`] that holds writes until
//! the loop says to deliver them.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::messages::response::{GssEncResponse, SslResponse};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, SslNegotiationMetaMessage};
use pgwire::tokio::server::{PgWireMessageServerCodec, process_error, process_message};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_util::codec::Framed;

use super::Handlers;
use super::session::Prepared;

/// A client that has not finished its startup in this time is dropped, as
/// PostgreSQL's `authentication_timeout` (default one minute) does.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Output held back while corked is written through once it reaches this
/// size, so a large result streams with bounded memory and backpressure.
const HIGH_WATER: usize = 64 * 1024;

type Connection = Framed<CorkedStream, PgWireMessageServerCodec<Prepared>>;

/// Serves one client until it disconnects, terminates or fails.
pub(super) async fn run(
    socket: TcpStream,
    peer: SocketAddr,
    handlers: Arc<Handlers>,
) -> io::Result<()> {
    let client = DefaultClient::new(peer, false);
    let mut connection = Framed::new(
        CorkedStream::new(socket),
        PgWireMessageServerCodec::new(client),
    );
    let startup_deadline = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_deadline);

    loop {
        let message = if in_startup(connection.state()) {
            tokio::select! {
                _ = &mut startup_deadline => return Ok(()),
                message = next_message(&mut connection) => message?,
            }
        } else {
            next_message(&mut connection).await?
        };
        let Some(message) = message else {
            return Ok(());
        };
        let deliver = match message {
            PgWireFrontendMessage::Terminate(_) => return Ok(()),
            PgWireFrontendMessage::SslNegotiation(negotiation) => {
                refuse_encryption(&mut connection, negotiation).await?;
                true
            }
            message => {
                // After these the client waits for an answer; after Parse,
                // Bind, Describe, Execute and Close it usually sends more.
                let deliver =
                    matches!(
                        message,
                        PgWireFrontendMessage::Sync(_)
                            | PgWireFrontendMessage::Query(_)
                            | PgWireFrontendMessage::Flush(_)
                    ) || !matches!(connection.state(), PgWireConnectionState::ReadyForQuery);
                let extended = match connection.state() {
                    PgWireConnectionState::CopyInProgress(extended) => extended,
                    _ => message.is_extended_query(),
                };
                let outcome = process_message(
                    message,
                    &mut connection,
                    Arc::clone(&handlers.startup),
                    Arc::clone(&handlers.service),
                    Arc::clone(&handlers.service),
                    Arc::clone(&handlers.copy),
                    Arc::clone(&handlers.cancel),
                )
                .await;
                if let Err(error) = outcome {
                    process_error(&mut connection, error, extended).await?;
                }
                deliver || !matches!(connection.state(), PgWireConnectionState::ReadyForQuery)
            }
        };
        if deliver {
            deliver_output(&mut connection).await?;
        }
    }
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
async fn deliver_output(connection: &mut Connection) -> io::Result<()> {
    connection.get_mut().corked = false;
    let flushed = SinkExt::<PgWireBackendMessage>::flush(connection).await;
    connection.get_mut().corked = true;
    flushed
}

/// A TCP stream whose writes are held in memory while `corked`, and written
/// in one go when the stream is flushed uncorked (or the held bytes reach
/// [`HIGH_WATER`]). Reads pass straight through.
pub(super) struct CorkedStream {
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
