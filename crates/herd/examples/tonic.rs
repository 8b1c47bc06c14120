//! A tonic client through the layer in gRPC mode, against a gRPC health server it starts on
//! 127.0.0.1 whose first answer is UNAVAILABLE (a trailers-only answer with a 5 ms pushback).
//! The layer buffers the request (tonic's body cannot be cloned) and reads each answer's
//! `grpc-status` before deciding.
//!
//! Run: `cargo run -p herd --example tonic --features tower`

#[path = "common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use herd::asynchronous::TokioClock;
use herd::layer::{GrpcCodes, RetryLayer};
use tonic::body::Body;
use tonic::metadata::MetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Server, server::TcpIncoming};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::Layer;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The health service behind tonic's own server interceptor, which answers the first
    // call UNAVAILABLE with a 5 ms pushback.
    let (_reporter, health) = tonic_health::server::health_reporter();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let service = InterceptedService::new(health, move |request| {
        if counted.fetch_add(1, Ordering::SeqCst) == 0 {
            let mut status = tonic::Status::unavailable("warming up");
            status
                .metadata_mut()
                .insert("grpc-retry-pushback-ms", MetadataValue::from_static("5"));
            return Err(status);
        }
        Ok(request)
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(
        Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );

    let policy = common::quick_policy(3, Duration::from_secs(5))?
        .clock(TokioClock::new())
        .build()?;
    let channel = Channel::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let layer = RetryLayer::new(policy)
        .buffer_body(64 * 1024, Body::new)
        .grpc(GrpcCodes::default(), 4 * 1024 * 1024);
    let mut client = HealthClient::new(layer.layer(channel));
    let answer = client
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await?;
    println!(
        "{:?} after {} calls",
        answer.get_ref().status(),
        calls.load(Ordering::SeqCst)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    Ok(())
}
