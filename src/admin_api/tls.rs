//! HTTPS for the admin API: an axum listener whose connections have
//! finished their TLS handshake. Handshakes run on tasks of their own, with
//! a deadline, so a client that never finishes one holds up no other.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;
use tokio_util::sync::CancellationToken;
use tracing::debug;

/// How long a client has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Listener {
    local: SocketAddr,
    ready: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl Listener {
    /// Accepts on `tcp` until `shutdown` fires.
    pub fn new(
        tcp: TcpListener,
        acceptor: TlsAcceptor,
        shutdown: CancellationToken,
    ) -> std::io::Result<Listener> {
        let local = tcp.local_addr()?;
        let (sender, ready) = mpsc::channel(64);
        tokio::spawn(async move {
            loop {
                let (stream, peer) = tokio::select! {
                    () = shutdown.cancelled() => return,
                    accepted = tcp.accept() => match accepted {
                        Ok(accepted) => accepted,
                        Err(error) => {
                            // Out of file descriptors and the like: wait
                            // rather than spin.
                            debug!("admin API accept failed: {error}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    },
                };
                let (acceptor, sender) = (acceptor.clone(), sender.clone());
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            let _ = sender.send((stream, peer)).await;
                        }
                        Ok(Err(error)) => debug!(%peer, "admin API TLS handshake failed: {error}"),
                        Err(_) => debug!(%peer, "admin API TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Listener { local, ready })
    }
}

impl axum::serve::Listener for Listener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.ready.recv().await {
            Some(accepted) => accepted,
            // The accepting task ends only at shutdown, when axum stops
            // asking for connections.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.local)
    }
}
