//! What a team running herd sees: the `tracing` span and events of a call through the layer
//! and the middleware (against axum on 127.0.0.1), and error types whose `Display` does not
//! repeat their `source()`.
#![cfg(all(feature = "reqwest", feature = "tracing"))]

use crate::support;

use support::Recorder;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use bytes::Bytes;
use herd::Rule;
use herd::asynchronous::TokioClock;
use herd::hedge::{HedgeDelay, HedgePolicy};
use herd::layer::RetryLayer;
use herd::middleware::RetryMiddleware;
use herd::policy::RetryPolicy;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tower::{Layer, ServiceExt};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event or span, with its fields as text.
#[derive(Clone, Debug)]
struct Seen {
    level: Level,
    name: String,
    fields: BTreeMap<String, String>,
}

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Collects herd's events and spans (target `herd`), as a layer over tracing-subscriber's
/// registry (which keeps track of the current span).
#[derive(Clone, Default)]
struct Collect {
    events: Arc<Mutex<Vec<Seen>>>,
    spans: Arc<Mutex<BTreeMap<u64, Seen>>>,
}

impl Collect {
    fn events(&self, message: &str) -> Vec<Seen> {
        let events = self.events.lock().unwrap();
        events
            .iter()
            .filter(|e| e.fields.get("message").is_some_and(|m| m == message))
            .cloned()
            .collect()
    }
    fn spans(&self) -> Vec<Seen> {
        self.spans.lock().unwrap().values().cloned().collect()
    }
    /// Sets this collector as the thread's subscriber until the guard is dropped.
    ///
    /// The interest cache is rebuilt once it is set: in one test binary, another thread can
    /// register one of herd's callsites while no collector lives (tracing then caches "never"
    /// for it) in a race with this one's registration.
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        use tracing_subscriber::layer::SubscriberExt;
        let guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()));
        tracing::callsite::rebuild_interest_cache();
        guard
    }
}

impl<S: Subscriber> tracing_subscriber::Layer<S> for Collect {
    fn enabled(
        &self,
        metadata: &Metadata<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        metadata.target() == "herd"
    }
    fn on_new_span(
        &self,
        attributes: &Attributes<'_>,
        id: &Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut fields = BTreeMap::new();
        attributes.record(&mut Fields(&mut fields));
        self.spans.lock().unwrap().insert(
            id.into_u64(),
            Seen {
                level: *attributes.metadata().level(),
                name: attributes.metadata().name().to_owned(),
                fields,
            },
        );
    }
    fn on_record(
        &self,
        span: &Id,
        values: &Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some(seen) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Fields(&mut seen.fields));
        }
    }
    fn on_event(&self, event: &Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.events.lock().unwrap().push(Seen {
            level: *event.metadata().level(),
            name: event.metadata().name().to_owned(),
            fields,
        });
    }
}

/// An axum server answering the `n`th request (from 0) with `respond(n)`.
async fn server(respond: fn(usize) -> Response) -> SocketAddr {
    let hits = Arc::new(AtomicUsize::new(0));
    let app = Router::new()
        .route(
            "/items",
            any(move |State(hits): State<Arc<AtomicUsize>>| async move {
                respond(hits.fetch_add(1, Ordering::SeqCst))
            }),
        )
        .with_state(hits);
    support::http::serve(app).await
}

fn three_attempts() -> RetryPolicy<TokioClock> {
    RetryPolicy::builder(Rule::constant(Duration::from_millis(10)).unwrap())
        .max_attempts(3)
        .clock(TokioClock::new())
        .build()
        .unwrap()
}

/// One GET of `/items` through the layer over hyper-util's client, events collected.
async fn through_layer(respond: fn(usize) -> Response) -> (Collect, SocketAddr) {
    let addr = server(respond).await;
    let collect = Collect::default();
    let _guard = collect.install();
    let svc = RetryLayer::new(three_attempts())
        .sleeper(Recorder::default())
        .layer(Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>());
    let request = http::Request::get(format!("http://{addr}/items"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let _ = svc.oneshot(request).await.unwrap();
    (collect, addr)
}

/// Regression: the retry event said only the attempt and the pause, not what failed nor for
/// which request, and no span carried the call.
#[tokio::test]
async fn a_retry_names_the_status_the_method_and_the_target_in_a_span_per_call() {
    let (collect, addr) = through_layer(|n| {
        if n == 0 {
            (StatusCode::SERVICE_UNAVAILABLE, "busy").into_response()
        } else {
            (StatusCode::OK, "done").into_response()
        }
    })
    .await;
    let uri = format!("http://{addr}/items");
    let retrying = collect.events("retrying");
    assert_eq!(retrying.len(), 1, "{retrying:?}");
    let fields = &retrying[0].fields;
    assert_eq!(retrying[0].level, Level::DEBUG);
    assert_eq!(fields["failure"], "503 Service Unavailable");
    assert_eq!(fields["method"], "GET");
    assert_eq!(fields["uri"], uri);
    let spans = collect.spans();
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(spans[0].name, "retry");
    assert_eq!(
        (&*spans[0].fields["method"], &*spans[0].fields["uri"]),
        ("GET", &*uri)
    );
    assert_eq!(spans[0].fields["attempts"], "2");
}

/// Regression: a 404 on the first attempt logged "gave up" at INFO, as loud as an outage.
#[tokio::test]
async fn a_first_attempt_that_is_permanent_gives_up_at_debug() {
    let (collect, _) = through_layer(|_| (StatusCode::NOT_FOUND, "no").into_response()).await;
    let gave_up = collect.events("gave up");
    assert_eq!(gave_up.len(), 1);
    assert_eq!(gave_up[0].level, Level::DEBUG);
    assert_eq!(gave_up[0].fields["reason"], "permanent");

    let (collect, _) = through_layer(|_| (StatusCode::BAD_GATEWAY, "down").into_response()).await;
    let gave_up = collect.events("gave up");
    assert_eq!(gave_up.len(), 1);
    assert_eq!(gave_up[0].level, Level::INFO);
    assert_eq!(gave_up[0].fields["reason"], "attempts");
    assert_eq!(gave_up[0].fields["failure"], "502 Bad Gateway");
}

/// The middleware's retry event names the error's kind and message, with its causes.
#[tokio::test]
async fn a_retried_error_is_named_by_kind_and_message_in_the_middleware() {
    let addr = support::http::closed_port();
    let collect = Collect::default();
    let _guard = collect.install();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(RetryMiddleware::new(three_attempts()).sleeper(Recorder::default()))
        .build();
    let error = support::http::get_fails(&client, format!("http://{addr}/items")).await;
    let retrying = collect.events("retrying");
    assert_eq!(retrying.len(), 2, "{retrying:?}");
    let fields = &retrying[0].fields;
    assert_eq!(fields["error_kind"], "ConnectionRefused");
    assert!(
        fields["failure"].contains("error sending request"),
        "{fields:?}"
    );
    assert_eq!(fields["uri"], format!("http://{addr}/items"));
    assert_eq!(fields["method"], "GET");
    assert_eq!(collect.spans()[0].fields["attempts"], "3");
    // The error says what happened once: its own line, then each cause.
    assert_said_once(&error);
}

/// Each line of `error`'s report (its `Display`, then each source's) adds something: no
/// line contains the next one.
fn assert_said_once(error: &(dyn std::error::Error + 'static)) {
    let mut lines = vec![error.to_string()];
    let mut source = error.source();
    while let Some(e) = source {
        lines.push(e.to_string());
        source = e.source();
    }
    for pair in lines.windows(2) {
        assert!(
            pair[1].is_empty() || !pair[0].contains(&pair[1]),
            "{:?} repeats its source {:?}",
            pair[0],
            pair[1]
        );
    }
}

/// Regression: `GaveUp`, `RetryError` and `HedgeError` printed their source in `Display` too,
/// so a report (anyhow, eyre) printed the cause twice.
#[tokio::test(start_paused = true)]
async fn errors_do_not_repeat_their_source() {
    let boom = || std::io::Error::other("boom");
    // The layer's error (wrapped on request; by default the inner error passes through).
    let svc = RetryLayer::new(three_attempts())
        .wrap_errors(true)
        .sleeper(Recorder::default())
        .layer(tower::service_fn(|_: http::Request<String>| async move {
            Err::<http::Response<String>, _>(std::io::Error::other("boom"))
        }));
    let error = svc
        .oneshot(http::Request::new(String::new()))
        .await
        .unwrap_err();
    assert_said_once(&*error);
    assert!(format!("{error:#}").ends_with(": boom"), "{error:#}");
    // The loop's error.
    let error = three_attempts()
        .call(|_| async move { Err::<(), _>(boom()) })
        .run_async()
        .await
        .unwrap_err();
    assert_said_once(&error);
    // The hedge's error.
    let hedge = HedgePolicy::builder(HedgeDelay::fixed(Duration::from_millis(1)))
        .clock(TokioClock::new())
        .build()
        .unwrap();
    let error = hedge
        .hedge(|_| async move { Err::<(), _>(boom()) })
        .run_async()
        .await
        .unwrap_err();
    assert_said_once(&error);
    assert!(format!("{error:#}").ends_with(": boom"), "{error:#}");
}
