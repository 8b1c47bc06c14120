//! The interactive page (`herd serve`): pick a rule and watch the load.
//!
//! One page (HTML, CSS and JavaScript embedded in the binary) with six scenes: *Storm*, *Six
//! clients*, *Dots*, *Layers*, *Hedging* and *Your config*. The page computes nothing itself: every number it shows
//! comes from this JSON API, which calls `herd-sim` and `herd`, so the page and the command
//! line can never disagree.
//!
//! | route | answers |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /api/rules` | the rules and the API's limits |
//! | `POST /api/storm` | [`storm::StormRequest`] → [`storm::StormAnswer`] |
//! | `POST /api/six` | [`six::SixRequest`] → [`six::SixTimeline`] |
//! | `POST /api/dots` | [`dots::DotsRequest`] → [`dots::Dots`] |
//! | `POST /api/layers` | [`layers::LayersRequest`] → [`layers::Layers`] |
//! | `POST /api/hedge` | [`hedge::HedgeRequest`] → [`hedge::HedgeAnswer`] |
//! | `POST /api/check` | [`check::CheckRequest`] → [`check::CheckAnswer`] |
//! | `POST /api/check/whatif` | [`whatif::WhatIfRequest`] → [`whatif::WhatIfAnswer`]: the pasted text's three faults, as set beside the fix |
//! | `GET /api/check/examples` | the shipped configurations ([`check::examples`]) |
//! | `GET /api/models` | every model the simulator's registry holds ([`models::ModelInfo`]) |
//! | `POST /api/model` | [`models::ModelRequest`] → [`models::ModelAnswer`]: any model's scenario, one variant, one seed |
//!
//! The API is meant for one person's browser, but it is still a server: it validates every
//! parameter (a 400 names the field), caps the work one request may ask for before it takes
//! a simulation slot, limits body sizes (413) and the time a body may take to arrive (408),
//! limits the simulations running at once (503 with `Retry-After`), and runs them on the
//! blocking pool so the page stays responsive; a simulation whose client left, or that ran
//! past [`ServeLimits::max_run_time`], is cancelled (docs/page-and-lab.md lists the limits). The command binds to loopback unless
//! told otherwise, and then answers only requests addressed to loopback (a guard against DNS
//! rebinding).
use std::future::Future;
use std::io;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use herd::RuleName;
use herd_sim::Cancel;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::net::TcpListener;

mod assets;
pub mod check;
pub mod dots;
mod error;
pub mod hedge;
mod host;
pub mod layers;
mod limits;
mod listen;
pub mod models;
mod rules;
pub mod six;
pub mod storm;
pub mod whatif;

pub use error::{ApiError, ApiJson};
pub use limits::{
    MAX_CAPACITY, MAX_DOT_CLIENTS, MAX_DOT_FAILURES, MAX_HEDGE_COPIES, MAX_HEDGE_DELAY_MS,
    MAX_HEDGE_FAN_OUT, MAX_HEDGE_REQUESTS, MAX_HEDGE_UTILISATION, MAX_LAYER_ATTEMPTS, MAX_LAYERS,
    MAX_OUTAGE_S, MAX_STORM_ATTEMPTS, MAX_STORM_CLIENTS, MIN_HEDGE_REQUESTS, ServeLimits,
};

pub use listen::SHUTDOWN_GRACE;

use limits::Gate;

#[derive(Clone, Debug)]
struct AppState {
    gate: Gate,
    body_read_timeout: Duration,
}

/// The page and its API.
pub fn router(limits: ServeLimits) -> Router {
    let state = AppState {
        gate: Gate::new(limits.max_concurrent, limits.max_run_time),
        body_read_timeout: limits.body_read_timeout,
    };
    let api = Router::new()
        .route("/rules", get(rules_info))
        .route("/storm", post(scene::<storm::StormRequest>))
        .route("/six", post(scene::<six::SixRequest>))
        .route("/dots", post(scene::<dots::DotsRequest>))
        .route("/layers", post(scene::<layers::LayersRequest>))
        .route("/hedge", post(scene::<hedge::HedgeRequest>))
        // A pasted configuration may be larger than the other scenes' knobs.
        .route(
            "/check",
            post(scene::<check::CheckRequest>)
                .layer(DefaultBodyLimit::max(check::MAX_CHECK_BODY_BYTES)),
        )
        .route(
            "/check/whatif",
            post(scene::<whatif::WhatIfRequest>)
                .layer(DefaultBodyLimit::max(check::MAX_CHECK_BODY_BYTES)),
        )
        .route("/check/examples", get(|| async { Json(check::examples()) }))
        .route("/models", get(|| async { Json(models::models()) }))
        .route("/model", post(scene::<models::ModelRequest>))
        .fallback(|| async { ApiError::not_found("no such API route") })
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .with_state(state);
    let app = Router::new()
        .route("/", get(assets::index))
        .route("/app.js", get(assets::app_js))
        .route("/app.css", get(assets::app_css))
        .route("/favicon.svg", get(assets::favicon))
        .nest("/api", api);
    if limits.any_host {
        app
    } else {
        app.layer(axum::middleware::from_fn(host::loopback_only))
    }
}

/// Serves the page on `listener` until `shutdown` completes, with at most
/// [`ServeLimits::max_connections`] connections open and a deadline on request headers;
/// after `shutdown`, open connections get [`SHUTDOWN_GRACE`] and are then dropped.
///
/// # Errors
///
/// None today: a failed accept is retried. The `Result` leaves room for binding errors.
pub async fn serve(
    listener: TcpListener,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    listen::run(listener, router(limits), limits, shutdown).await
}

async fn rules_info() -> Json<Value> {
    Json(json!({
        "rules": RuleName::CLASSIC.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
        "limits": {
            "storm_clients": MAX_STORM_CLIENTS,
            "storm_attempts": MAX_STORM_ATTEMPTS,
            "outage_s": MAX_OUTAGE_S,
            "capacity": MAX_CAPACITY,
            "dot_clients": MAX_DOT_CLIENTS,
            "dot_failures": MAX_DOT_FAILURES,
            "layers": MAX_LAYERS,
            "layer_attempts": MAX_LAYER_ATTEMPTS,
            "hedge_copies": MAX_HEDGE_COPIES,
            "hedge_requests": [MIN_HEDGE_REQUESTS, MAX_HEDGE_REQUESTS],
            "hedge_fan_out": MAX_HEDGE_FAN_OUT,
            "hedge_delay_ms": MAX_HEDGE_DELAY_MS,
            "hedge_utilisation": MAX_HEDGE_UTILISATION,
            "whatif_policies": whatif::MAX_WHATIF_POLICIES,
            "whatif_requests": whatif::MAX_WHATIF_REQUESTS,
            "whatif_run_s": whatif::MAX_WHATIF_RUN_S,
            "whatif_attempts": whatif::MAX_WHATIF_ATTEMPTS,
            "whatif_capacity_rps": whatif::MAX_WHATIF_CAPACITY_RPS,
        },
        "hedge_policies": hedge::POLICIES.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
    }))
}

/// A scene's request, as the API answers it: checked cheaply before it takes a simulation
/// slot, then run on the blocking pool. One handler ([`scene`]) serves every scene, so no
/// scene can skip the cap on work or the slot.
pub(crate) trait Scene: DeserializeOwned + Send + 'static {
    /// The scene's answer.
    type Answer: Serialize + Send + 'static;

    /// Rejects bad parameters, and work past the cap, before a slot is taken (nothing by
    /// default: the scene's work is small whatever it is asked).
    fn precheck(&self) -> Result<(), ApiError> {
        Ok(())
    }

    /// Computes the answer (CPU work: called off the executor), stopping early when
    /// `cancel` is set (the answer is no longer wanted) if the scene's engine can.
    fn answer(&self, cancel: &Cancel) -> Result<Self::Answer, ApiError>;
}

/// `Scene` for a request whose method `$answer` checks it and computes the scene (given the
/// cancel flag when written `$answer(cancel)`, for a scene whose engine can stop), and whose
/// `$check`, when named, checks it cheaply first.
macro_rules! scene {
    ($request:ty => $answer_type:ty, $answer:ident $(, checked by $check:ident)?) => {
        scene!(@impl $request => $answer_type, |r, _c| r.$answer() $(, $check)?);
    };
    ($request:ty => $answer_type:ty, $answer:ident(cancel) $(, checked by $check:ident)?) => {
        scene!(@impl $request => $answer_type, |r, c| r.$answer(c) $(, $check)?);
    };
    (@impl $request:ty => $answer_type:ty, |$r:ident, $c:ident| $call:expr $(, $check:ident)?) => {
        impl Scene for $request {
            type Answer = $answer_type;

            $(fn precheck(&self) -> Result<(), ApiError> {
                self.$check().map(drop)
            })?

            fn answer(&self, $c: &Cancel) -> Result<$answer_type, ApiError> {
                let $r = self;
                $call
            }
        }
    };
}

scene!(storm::StormRequest => storm::StormAnswer, run(cancel), checked by check);
scene!(six::SixRequest => six::SixTimeline, run);
scene!(dots::DotsRequest => dots::Dots, compute);
scene!(layers::LayersRequest => layers::Layers, compute);
// The text's size and format; its storms' work is bounded when it is read, before any storm
// runs.
scene!(check::CheckRequest => check::CheckAnswer, run(cancel), checked by check);
// The text read and the runs' work counted (policies, simulated seconds, requests), before a
// slot is taken.
scene!(whatif::WhatIfRequest => whatif::WhatIfAnswer, run(cancel), checked by check);
// Everything but the run: the page's ranges, and the model's own check of the scenario,
// work estimate included.
scene!(hedge::HedgeRequest => hedge::HedgeAnswer, run(cancel), checked by model);
// The registry's check of the scenario against the page's limits (its work estimate
// included), and the variant.
scene!(models::ModelRequest => models::ModelAnswer, run(cancel), checked by check);

async fn scene<R: Scene>(
    State(state): State<AppState>,
    request: Request,
) -> Result<Json<R::Answer>, ApiError> {
    let read = tokio::time::timeout(
        state.body_read_timeout,
        ApiJson::<R>::from_request(request, &()),
    );
    let ApiJson(request) = read.await.map_err(|_| {
        ApiError::timed_out(format!(
            "request body not received within {} s",
            state.body_read_timeout.as_secs_f64()
        ))
    })??;
    request.precheck()?;
    let result = state.gate.run(move |cancel| request.answer(cancel)).await?;
    Ok(Json(result))
}
