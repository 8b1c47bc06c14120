//! The accept loop: a bounded number of connections, each with a deadline for its request
//! headers, and a shutdown that cannot be held up.
//!
//! `axum::serve` keeps a connection for as long as its client likes: a client that sends half
//! a request and waits holds a task, a socket, and (through graceful shutdown) Ctrl-C, for
//! ever. Here every connection takes a permit from a semaphore (so at most
//! [`ServeLimits::max_connections`] are open; more wait in the kernel's backlog), hyper closes a
//! connection whose headers do not arrive within [`ServeLimits::header_read_timeout`], and at
//! shutdown idle connections close at once and busy ones get [`SHUTDOWN_GRACE`] to finish
//! before they are dropped (a dropped request cancels its simulation). A request body has
//! its own deadline ([`ServeLimits::body_read_timeout`], in the handler), so a body sent a
//! byte at a time cannot hold a connection either.
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::ServeLimits;

/// How long open connections may finish their work after shutdown is asked for.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Accepts and serves connections on `listener` until `shutdown` completes.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(
        limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
    ));
    let mut connections = JoinSet::new();
    let (stopping_tx, stopping_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors, or a connection reset before it was accepted: the
                // listener itself is fine; pause a moment rather than spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let header_timeout = limits.header_read_timeout;
        let mut stopping = stopping_rx.clone();
        connections.spawn(async move {
            let _permit = permit;
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = stopping.wait_for(|&stop| stop) => {}
            }
            // An idle keep-alive connection closes now; one mid-request finishes it (within
            // the grace, after which it is dropped).
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
        // Reap finished connections so the set does not grow with the server's age.
        while connections.try_join_next().is_some() {}
    }
    drop(listener);
    let _ = stopping_tx.send(true);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
    Ok(())
}
