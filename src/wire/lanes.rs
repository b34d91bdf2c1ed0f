//! The threads that connections live on.
//!
//! Each lane is a thread running a single-threaded tokio runtime with its
//! own socket poller, and a connection stays on one lane for its life. A
//! point lookup is then read, answered and written by the thread that its
//! socket woke, with no hand-off between threads. On the process's
//! work-stealing runtime every such message woke a second thread that
//! came looking for work, and the wake-ups, not the lookups, were where
//! the time went.
//!
//! Work that spreads over cores still goes to the query runtime: every
//! poll of a connection enters that runtime's context, so the partitions
//! DataFusion spawns, timers and source connections are scheduled there.
//! Only what the connection's own task computes between two awaits (the
//! parse, the plan, a key lookup, the encoding of the rows) runs on the
//! lane.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;
use tracing::warn;

type Serve = Box<dyn FnOnce(tokio::net::TcpStream) -> BoxedConnection + Send>;
type BoxedConnection = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The lanes, to which accepted sockets are handed in turn.
pub(super) struct Lanes {
    lanes: Vec<mpsc::UnboundedSender<(std::net::TcpStream, Serve)>>,
    next: usize,
}

impl Lanes {
    /// Starts `count` lanes whose connections schedule their other work
    /// on `query`. A lane ends once the [`Lanes`] are dropped and its last
    /// connection has ended.
    pub(super) fn start(count: usize, query: Handle) -> io::Result<Lanes> {
        let mut lanes = Vec::with_capacity(count);
        for lane in 0..count {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (sender, receiver) = mpsc::unbounded_channel();
            let query = query.clone();
            // A name under the query threads' prefix: the lanes serve
            // queries, and are reniced with the query threads.
            std::thread::Builder::new()
                .name(format!("{}-{lane}", crate::threads::QUERY_THREADS))
                // As the query runtime's threads: planning recurses deeply.
                .stack_size(16 * 1024 * 1024)
                .spawn(move || {
                    crate::threads::mark_lane();
                    runtime.block_on(run_lane(receiver, query));
                })?;
            lanes.push(sender);
        }
        Ok(Lanes { lanes, next: 0 })
    }

    /// Serves `socket` on the next lane with `serve`. The socket is handed
    /// over as a std socket: a tokio socket belongs to the poller of the
    /// runtime that registered it.
    pub(super) fn serve<F, C>(&mut self, socket: tokio::net::TcpStream, serve: F)
    where
        F: FnOnce(tokio::net::TcpStream) -> C + Send + 'static,
        C: Future<Output = ()> + Send + 'static,
    {
        let socket = match socket.into_std() {
            Ok(socket) => socket,
            Err(error) => {
                warn!("handing a connection to its thread failed: {error}");
                return;
            }
        };
        let serve: Serve = Box::new(move |socket| Box::pin(serve(socket)));
        let lane = self.next % self.lanes.len();
        self.next = self.next.wrapping_add(1);
        if self.lanes[lane].send((socket, serve)).is_err() {
            warn!(
                lane,
                "a connection thread has ended; the connection is closed"
            );
        }
    }
}

async fn run_lane(
    mut receiver: mpsc::UnboundedReceiver<(std::net::TcpStream, Serve)>,
    query: Handle,
) {
    let connections = TaskTracker::new();
    while let Some((socket, serve)) = receiver.recv().await {
        // Registered here, with this lane's poller.
        match tokio::net::TcpStream::from_std(socket) {
            Ok(socket) => {
                connections.spawn(InContext {
                    handle: query.clone(),
                    future: serve(socket),
                });
            }
            Err(error) => warn!("registering a connection's socket failed: {error}"),
        }
    }
    connections.close();
    connections.wait().await;
}

/// A future polled inside another runtime's context: what it spawns, and
/// the timers it sets, belong to that runtime.
struct InContext {
    handle: Handle,
    future: BoxedConnection,
}

impl Future for InContext {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let _entered = this.handle.enter();
        this.future.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_runs_on_a_lane_and_spawns_on_the_query_runtime() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mut lanes = Lanes::start(2, Handle::current()).unwrap();
        let client = tokio::spawn(tokio::net::TcpStream::connect(address));
        let (socket, _) = listener.accept().await.unwrap();
        let (sender, answer) = tokio::sync::oneshot::channel();
        lanes.serve(socket, move |socket| async move {
            let lane = std::thread::current().name().map(str::to_owned);
            let on_lane = crate::threads::on_lane();
            // Spawned from the lane: runs on the query runtime's threads.
            let spawned = tokio::spawn(async { crate::threads::on_lane() })
                .await
                .unwrap();
            let peer = socket.peer_addr().is_ok();
            let _ = sender.send((lane, on_lane, spawned, peer));
        });
        let (lane, on_lane, spawned, peer) = answer.await.unwrap();
        client.await.unwrap().unwrap();
        let lane = lane.unwrap();
        assert!(
            lane.starts_with(crate::threads::QUERY_THREADS),
            "the lane's thread name: {lane}"
        );
        assert!(on_lane, "the connection runs on a lane");
        assert!(!spawned, "what it spawns runs on the query runtime");
        assert!(peer, "the socket works on the lane");
    }
}
