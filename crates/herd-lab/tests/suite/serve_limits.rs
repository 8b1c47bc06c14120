//! The page's server against requests that would hold it: a simulation that would never
//! end is refused before it takes a slot, a body sent a byte at a time is cut off at its
//! deadline, a simulation past the time limit or whose client left is cancelled and its slot
//! given back, and shutdown ends within its grace while a simulation runs. Before, one
//! `{"utilisation": 1e-300}` held a slot for ever, and 64 trickling bodies kept the page
//! unreachable for as long as they trickled.
//!
//! Raw TCP and a JSON client on 127.0.0.1 with ephemeral ports; every wait is bounded.
use std::time::Duration;

use herd_lab::serve::{SHUTDOWN_GRACE, ServeLimits};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, sleep, timeout};

use crate::support;

use support::PageServer;

const RULES: &[u8] = b"GET /api/rules HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

/// A hedging request that takes seconds of one core in a debug build: the page's most
/// copies at fan-out 10.
fn heavy_hedge() -> Value {
    json!({ "fan_out": 10, "requests": herd_lab::serve::hedge::affordable(10) })
}

/// A storm at the page's work cap: every client retrying at once against one answer a
/// window, the horizon cut to what the cap allows: over half a second of one core in a
/// debug build, more than the 300 ms these tests give a cancelled run to let go.
fn heavy_storm() -> Value {
    json!({ "rule": "immediate", "clients": 200_000, "outage_s": 1, "capacity": 1 })
}

/// Reads until the server closes the connection; what it sent.
async fn read_to_close(stream: &mut TcpStream, within: Duration) -> Option<String> {
    let mut got = Vec::new();
    timeout(within, stream.read_to_end(&mut got))
        .await
        .ok()?
        .ok()?;
    Some(String::from_utf8_lossy(&got).into_owned())
}

/// A connection that sent a request's head and the first byte of a 100-byte body.
async fn trickler(server: &PageServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    stream
        .write_all(
            b"POST /api/dots HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{",
        )
        .await
        .expect("send the head");
    stream
}

/// A raw POST of `body` to `/api/{path}`, left open.
async fn raw_post(server: &PageServer, path: &str, body: &Value) -> TcpStream {
    let body = body.to_string();
    let mut stream = TcpStream::connect(server.addr).await.expect("connect");
    let head = format!(
        "POST /api/{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(body.as_bytes()).await.expect("body");
    stream
}

/// Polls the cheap dots scene (which takes a simulation slot) until it answers `status`.
async fn until_dots_answer(server: &PageServer, status: u16, within: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if server.post("dots", &json!({ "rule": "full" })).await.0 == status {
            return true;
        }
        sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_hedge_run_that_would_never_end_is_refused_before_it_takes_a_slot() {
    // No slot at all: a 400 shows the check ran before the slot was asked for.
    let server = PageServer::start(ServeLimits {
        max_concurrent: 0,
        ..ServeLimits::default()
    })
    .await;
    for utilisation in ["1e-300", "1e-320", "1e-7"] {
        let body: Value =
            serde_json::from_str(&format!(r#"{{"utilisation": {utilisation}}}"#)).expect("json");
        let (status, answer) = server.post("hedge", &body).await;
        let message = answer["error"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{utilisation}: {answer}");
        assert!(message.starts_with("utilisation: "), "{message}");
        assert!(message.len() < 300, "one short line: {message}");
    }
    // A sound request still reaches the slot check.
    let (status, _) = server.post("hedge", &json!({})).await;
    assert_eq!(status, 503);
}

#[tokio::test]
async fn bodies_sent_a_byte_at_a_time_are_cut_off_and_the_page_stays_reachable() {
    let limits = ServeLimits {
        body_read_timeout: Duration::from_millis(300),
        ..ServeLimits::default()
    };
    let server = PageServer::start(limits).await;
    // Every connection the server allows, each holding a body it never finishes.
    let mut tricklers = Vec::new();
    for _ in 0..limits.max_connections {
        tricklers.push(trickler(&server).await);
    }
    let started = Instant::now();
    let mut next = TcpStream::connect(server.addr)
        .await
        .expect("connect (backlog)");
    next.write_all(RULES).await.expect("send");
    let answer = read_to_close(&mut next, Duration::from_secs(5))
        .await
        .expect("the page answers once the bodies' deadline has passed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let cut = read_to_close(&mut tricklers[0], Duration::from_secs(5))
        .await
        .expect("the trickling connection is closed");
    assert!(cut.starts_with("HTTP/1.1 408"), "{cut}");
}

#[tokio::test]
async fn a_simulation_past_the_time_limit_is_stopped_and_its_slot_given_back() {
    let server = PageServer::start(ServeLimits {
        max_concurrent: 1,
        max_run_time: Duration::from_millis(100),
        ..ServeLimits::default()
    })
    .await;
    let started = Instant::now();
    let (status, answer) = server.post("hedge", &heavy_hedge()).await;
    assert_eq!(status, 503, "{answer}");
    let message = answer["error"].as_str().unwrap_or_default();
    assert!(
        message.contains("longer than the page's limit of 0.1 s"),
        "{message}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        until_dots_answer(&server, 200, Duration::from_secs(2)).await,
        "the cancelled simulation gives its slot back"
    );
}

#[tokio::test]
async fn a_simulation_whose_client_left_is_cancelled() {
    let server = PageServer::start(ServeLimits {
        max_concurrent: 1,
        max_run_time: Duration::from_secs(600),
        ..ServeLimits::default()
    })
    .await;
    let client = raw_post(&server, "hedge", &heavy_hedge()).await;
    assert!(
        until_dots_answer(&server, 503, Duration::from_secs(5)).await,
        "the heavy simulation holds the only slot"
    );
    drop(client);
    assert!(
        until_dots_answer(&server, 200, Duration::from_secs(2)).await,
        "the slot is given back soon after its client left"
    );
}

#[tokio::test]
async fn shutdown_ends_within_its_grace_while_a_simulation_runs() {
    let server = PageServer::start(ServeLimits {
        max_concurrent: 1,
        max_run_time: Duration::from_secs(600),
        ..ServeLimits::default()
    })
    .await;
    let mut client = raw_post(&server, "hedge", &heavy_hedge()).await;
    assert!(until_dots_answer(&server, 503, Duration::from_secs(5)).await);
    let started = Instant::now();
    timeout(SHUTDOWN_GRACE + Duration::from_secs(2), server.shut_down())
        .await
        .expect("shutdown is not held by the simulation")
        .expect("task")
        .expect("serve");
    assert!(started.elapsed() <= SHUTDOWN_GRACE + Duration::from_secs(2));
    // The request was dropped with its connection.
    let mut rest = Vec::new();
    let _ = timeout(Duration::from_secs(2), client.read_to_end(&mut rest)).await;
}

/// Before: the error echoed a 10 KB rule name whole.
#[tokio::test]
async fn errors_quote_long_values_shortened() {
    let server = PageServer::start(ServeLimits::default()).await;
    let long = "x".repeat(10_000);
    let (status, answer) = server.post("storm", &json!({ "rule": long })).await;
    let message = answer["error"].as_str().unwrap_or_default();
    assert_eq!(status, 400, "{answer}");
    assert!(message.len() < 400, "{} bytes: {message}", message.len());
    assert!(message.contains("(10000 characters)"), "{message}");
}

#[tokio::test]
async fn a_storm_past_the_time_limit_is_stopped_and_its_slot_given_back() {
    // Before, the storm's engine had no cancel flag: the page answered 503 at the limit but
    // the run kept its slot until it ended, seconds later.
    let server = PageServer::start(ServeLimits {
        max_concurrent: 1,
        max_run_time: Duration::from_millis(100),
        ..ServeLimits::default()
    })
    .await;
    let (status, answer) = server.post("storm", &heavy_storm()).await;
    assert_eq!(status, 503, "{answer}");
    assert!(
        until_dots_answer(&server, 200, Duration::from_millis(300)).await,
        "the cancelled storm gives its slot back"
    );
}

#[tokio::test]
async fn a_storm_whose_client_left_is_cancelled() {
    let server = PageServer::start(ServeLimits {
        max_concurrent: 1,
        max_run_time: Duration::from_secs(600),
        ..ServeLimits::default()
    })
    .await;
    let client = raw_post(&server, "storm", &heavy_storm()).await;
    assert!(
        until_dots_answer(&server, 503, Duration::from_secs(5)).await,
        "the heavy storm holds the only slot"
    );
    drop(client);
    assert!(
        until_dots_answer(&server, 200, Duration::from_millis(300)).await,
        "the slot is given back soon after its client left"
    );
}

#[tokio::test]
async fn a_model_run_past_the_time_limit_is_stopped_and_its_slot_given_back() {
    // `/api/model` runs any model through the registry; the storm's engine reads the flag.
    let server = PageServer::start(ServeLimits {
        max_concurrent: 1,
        max_run_time: Duration::from_millis(100),
        ..ServeLimits::default()
    })
    .await;
    let storm = "[clients]\ncount = 200000\n[server]\ncapacity = 1\noutages = [[0, 1]]\n";
    let latency = "model = \"latency\"\nrequests = 100000\nwarmup_requests = 10000\n";
    for body in [
        json!({ "scenario": storm, "variant": "immediate" }),
        json!({ "scenario": latency, "variant": "tied" }),
    ] {
        let (status, answer) = server.post("model", &body).await;
        assert_eq!(status, 503, "{body}: {answer}");
        assert!(
            until_dots_answer(&server, 200, Duration::from_millis(300)).await,
            "the cancelled model run gives its slot back: {body}"
        );
    }
}
