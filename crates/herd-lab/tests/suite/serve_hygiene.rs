//! The page's server against clients that misbehave: a half-sent request is cut off at the
//! header deadline, it cannot hold shutdown (Ctrl-C) for ever, and connections beyond the
//! limit wait instead of piling up. Before, `axum::serve` kept a half-sent request open for
//! as long as the client liked, and graceful shutdown waited for it.
//!
//! Raw TCP on 127.0.0.1 with ephemeral ports; every wait is bounded.
use std::time::Duration;

use herd_lab::serve::{SHUTDOWN_GRACE, ServeLimits};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

const HALF: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n";
const WHOLE: &[u8] = b"GET /api/rules HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

use crate::support;

use support::PageServer;

/// Reads until the server closes the connection; what it sent.
async fn read_to_close(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let mut got = Vec::new();
    timeout(within, stream.read_to_end(&mut got))
        .await
        .ok()?
        .ok()?;
    Some(String::from_utf8_lossy(&got).into_owned())
}

/// The default limits but for how long a request's head may take to arrive.
fn header_deadline(header_read_timeout: Duration) -> ServeLimits {
    ServeLimits {
        header_read_timeout,
        ..ServeLimits::default()
    }
}

/// A page server with `limits`, and a connection on which half a request was sent.
async fn half_sent(limits: ServeLimits) -> (PageServer, TcpStream) {
    let server = PageServer::start(limits).await;
    let mut half = TcpStream::connect(server.addr).await.expect("connect");
    half.write_all(HALF).await.expect("send half");
    (server, half)
}

/// The answer to a whole request on a connection of its own.
async fn whole_answer(server: &PageServer) -> String {
    let mut whole = TcpStream::connect(server.addr).await.expect("connect");
    whole.write_all(WHOLE).await.expect("send");
    read_to_close(&mut whole, Duration::from_secs(10))
        .await
        .expect("answer")
}

#[tokio::test]
async fn a_half_sent_request_is_closed_at_the_header_deadline() {
    let (server, mut half) = half_sent(header_deadline(Duration::from_millis(300))).await;
    let started = Instant::now();
    let answer = read_to_close(&mut half, Duration::from_secs(10))
        .await
        .expect("the server closes the connection");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // The server still answers everyone else.
    let answer = whole_answer(&server).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn a_half_sent_request_cannot_hold_shutdown() {
    let (server, mut half) = half_sent(header_deadline(Duration::from_secs(600))).await;
    // Let the server accept it before asking it to stop.
    whole_answer(&server).await;

    let ended = timeout(SHUTDOWN_GRACE + Duration::from_secs(3), server.shut_down())
        .await
        .expect("shutdown is not held by the half-sent request");
    ended.expect("task").expect("serve");
    assert_eq!(
        read_to_close(&mut half, Duration::from_secs(5))
            .await
            .as_deref(),
        Some(""),
        "the half-sent connection is dropped"
    );
}

#[tokio::test]
async fn connections_beyond_the_limit_wait_for_a_free_one() {
    let (server, half) = half_sent(ServeLimits {
        max_connections: 1,
        ..header_deadline(Duration::from_secs(600))
    })
    .await;
    let mut second = TcpStream::connect(server.addr)
        .await
        .expect("connect (backlog)");
    second.write_all(WHOLE).await.expect("send");
    let mut buf = [0u8; 1];
    let early = timeout(Duration::from_millis(300), second.read(&mut buf)).await;
    assert!(early.is_err(), "served beyond the limit of one connection");
    drop(half);
    let answer = read_to_close(&mut second, Duration::from_secs(10))
        .await
        .expect("answered once the first connection closed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
