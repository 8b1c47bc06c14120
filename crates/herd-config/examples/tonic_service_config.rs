//! A tonic client that runs exactly the retries of a gRPC service config file, through the
//! herd library: tonic reads no service config, so herd-config reads it and the translation
//! builds the library's policy (attempts after gRPC's clamp to 5, gRPC's retry backoff with
//! its ±20 % jitter, the `retryThrottling` bucket) and the retryable status codes, which the
//! library's tower layer applies in gRPC mode.
//!
//! It starts a gRPC health server on 127.0.0.1 (an ephemeral port) that answers its first
//! `k` calls with UNAVAILABLE, then serves, and calls it once through the layer.
//!
//! Run: `cargo run -p herd-config --example tonic_service_config -- [CONFIG.json] [k]`
//! (default: `examples/health-service-config.json`, k = 2).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use herd::asynchronous::{Sleeper, TokioClock, TokioSleep};
use herd::clock::Clock;
use herd::layer::{GrpcCode, GrpcCodes, RetryLayer};
use herd_config::{Input, System, Translation};
use tonic::body::Body;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Server, server::TcpIncoming};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;
use tower::Layer;

/// The service and method the client calls (gRPC's health check).
pub const SERVICE: &str = "grpc.health.v1.Health";
/// The method.
pub const METHOD: &str = "Check";

/// What one call through a service config's retries did.
#[derive(Debug)]
pub struct Run {
    /// The translation of the config's policy for the method called.
    pub translation: Translation,
    /// Calls the server received: the client's attempts.
    pub attempts: usize,
    /// The pauses the client asked for before each retry, in order.
    pub pauses: Vec<Duration>,
    /// The call's final status (`Ok` when it succeeded).
    pub status: tonic::Code,
}

/// The policy the service config gives `service/method`, as gRPC chooses it (gRFC A6 and the
/// service config doc): the exact method's, else the service's, else the default (`*`).
///
/// # Errors
///
/// When the config has no policy for the method.
pub fn translation_for(
    configs: &[Translation],
    service: &str,
    method: &str,
) -> Result<Translation, String> {
    let exact = format!("{service}/{method}");
    let whole = format!("{service}/*");
    [exact.as_str(), whole.as_str(), "*"]
        .into_iter()
        .find_map(|want| {
            configs
                .iter()
                .find(|t| t.name.split(',').any(|n| n == want))
        })
        .cloned()
        .ok_or_else(|| format!("the service config has no policy for {exact}"))
}

/// Reads the gRPC service config at `path`, starts a health server on loopback that fails
/// its first `failures` calls with `code`, and makes one health check through the library's
/// tower layer running the config's policy, on `clock` and `sleeper`.
///
/// # Errors
///
/// A config that cannot be read or built, or a transport failure.
pub async fn run<C: Clock, S>(
    path: &str,
    failures: usize,
    code: tonic::Code,
    clock: C,
    sleeper: S,
) -> Result<Run, Box<dyn std::error::Error>>
where
    S: Sleeper + Clone + Send + Sync + 'static,
    S::Sleep: Send,
{
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut input = Input::new(path, text);
    input.system = Some(System::Grpc);
    let report = herd_config::read(&[input])?;
    let translation = translation_for(&report.configs, SERVICE, METHOD)?;

    // The library's own policy and retryable codes, as the translation builds them.
    let policy = translation.retry_policy_with(clock)?.build()?;
    let mut codes = GrpcCodes::none();
    for c in translation
        .retryable()
        .ok_or("no retryable codes")?
        .grpc_codes()
    {
        codes = codes.with(GrpcCode::new(c)?);
    }
    let pauses = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&pauses);
    let layer = RetryLayer::new(policy)
        .sleeper(sleeper)
        .buffer_body(64 * 1024, Body::new)
        .grpc(codes, 4 * 1024 * 1024)
        .on_retry(move |r| seen.lock().expect("pauses").push(r.pause));

    // tonic's own server interceptor counts every call and answers the first `failures`
    // with `code`, before the health service sees them.
    let (_reporter, health) = tonic_health::server::health_reporter();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let service = InterceptedService::new(health, move |request| {
        if counted.fetch_add(1, Ordering::SeqCst) < failures {
            return Err(tonic::Status::new(code, "not yet"));
        }
        Ok(request)
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(
        Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpIncoming::from(listener)),
    );
    let channel = Channel::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let mut client = HealthClient::new(layer.layer(channel));
    let status = match client
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
    {
        Ok(_) => tonic::Code::Ok,
        Err(status) => status.code(),
    };
    server.abort();
    let pauses = pauses.lock().expect("pauses").clone();
    Ok(Run {
        translation,
        attempts: calls.load(Ordering::SeqCst),
        pauses,
        status,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/health-service-config.json"
        )
        .to_owned()
    });
    let failures = match args.next() {
        Some(k) => k.parse().map_err(|e| format!("k: {e}"))?,
        None => 2,
    };
    let run = run(
        &path,
        failures,
        tonic::Code::Unavailable,
        TokioClock::new(),
        TokioSleep,
    )
    .await?;
    let t = &run.translation;
    println!(
        "{}: {} attempts allowed, {} rule from {:?} to {:?}",
        t.name,
        t.max_attempts.unwrap_or(u32::MAX),
        t.backoff.rule,
        t.backoff.base,
        t.backoff.cap
    );
    println!(
        "server saw {} attempts; pauses {:?}; final status {:?}",
        run.attempts, run.pauses, run.status
    );
    Ok(())
}
