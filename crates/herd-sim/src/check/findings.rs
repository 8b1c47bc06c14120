//! What a translated policy does that its owner should know, each with the fix; and retries
//! at several layers, judged across every policy given.
//!
//! Codes (docs/check.md has the reasoning behind each):
//! `no-jitter`, `jitter-too-small`, `timeout-below-attempts`, `per-try-not-below-timeout`,
//! `no-per-try-timeout`, `retries-deadline`, `retries-unauthenticated`,
//! `retries-non-idempotent`, `no-budget`, `budget-floor`, `hedging-without-throttling`,
//! `unbounded-max-retries`, `multiple-layers`, `no-retry-on`, `jitter-lost-at-cap`; the
//! translators add `clamped`,
//! `ignored-backoff` and `ignored-field`.
use herd::RuleName;

use super::{Finding, Severity, System, Translation, finding, ms};
use crate::figure;

/// A spread below this fraction of the pause does not separate clients that failed together.
const SMALL_JITTER: f64 = 0.1;
/// `max_retries` at or above this is no limit in practice.
const UNBOUNDED_RETRIES: f64 = 1_000_000.0;
/// Methods that are not idempotent (RFC 9110, section 9.2.2).
const NON_IDEMPOTENT: [&str; 3] = ["POST", "PATCH", "CONNECT"];

/// The findings of one policy alone.
pub(crate) fn of(t: &Translation) -> Vec<Finding> {
    let mut out = Vec::new();
    if t.system == System::Envoy && t.defaults.contains(&"retry_on") {
        out.push(finding(
            t,
            Severity::Info,
            "no-retry-on",
            "retry_on",
            "retry_policy names no retry_on condition: Envoy retries only requests whose x-envoy-retry-on header names one".to_owned(),
            "set retry_on (for example connect-failure,refused-stream,unavailable) or remove the policy".to_owned(),
        ));
    }
    if !t.retries() {
        timeouts(t, &mut out);
        return out;
    }
    jitter(t, &mut out);
    timeouts(t, &mut out);
    conditions(t, &mut out);
    budget(t, &mut out);
    out
}

fn jitter(t: &Translation, out: &mut Vec<Finding>) {
    if t.hedging.is_some() {
        return;
    }
    let b = &t.backoff;
    if !b.is_random() {
        let what = match b.rule {
            RuleName::Immediate => "retries at once, with no pause".to_owned(),
            RuleName::Constant => format!("waits exactly {} ms before every retry", ms(b.base)),
            _ => format!(
                "waits {} ms, then ×{} each time, without jitter",
                ms(b.base),
                b.multiplier
            ),
        };
        let (sev, fix) = match t.system {
            System::Resilience4j => (
                Severity::Warning,
                "set enableRandomizedWait: true (randomizedWaitFactor 0.5 or more), with enableExponentialBackoff".to_owned(),
            ),
            System::Linkerd if t.throttle.is_some() => (
                Severity::Info,
                "the retry budget bounds the load; Linkerd has no backoff to add".to_owned(),
            ),
            System::Linkerd => (
                Severity::Warning,
                "Linkerd retries have no backoff: lower retry.linkerd.io/limit, or retry in the client with jitter".to_owned(),
            ),
            _ => (
                Severity::Warning,
                "draw each pause at random over [0, base · 2^(n−1)] (full jitter)".to_owned(),
            ),
        };
        out.push(finding(
            t,
            sev,
            "no-jitter",
            "waitduration",
            format!("{} {what}: clients that fail together retry together, and meet a recovering server all at once", t.name),
            fix,
        ));
    } else if b.is_plus_minus() && b.jitter < SMALL_JITTER {
        out.push(finding(
            t,
            Severity::Warning,
            "jitter-too-small",
            "randomizedwaitfactor",
            format!(
                "the random spread is ±{} % of each pause ({} ms on the first {} ms): clients that failed together still arrive within a moment of each other",
                figure::percent(b.jitter * 100.0),
                ms(b.base.mul_f64(b.jitter * 2.0)),
                ms(b.base)
            ),
            "spread pauses over at least half their length (randomizedWaitFactor 0.5), or use full jitter".to_owned(),
        ));
    } else if let Some(retry) = jitter_lost_at(t) {
        out.push(finding(
            t,
            Severity::Warning,
            "jitter-lost-at-cap",
            "exponentialmaxwaitduration",
            format!(
                "from retry {retry} on, every pause is exactly {} ms: Resilience4j never caps the growing interval, so once interval · (1 − {}) passes the maximum the random spread lies wholly above it and every client waits the maximum, together",
                ms(t.backoff.cap),
                t.backoff.jitter
            ),
            "raise exponentialMaxWaitDuration above the intervals the attempts reach, or lower maxAttempts; or wrap the retry in full jitter".to_owned(),
        ));
    }
}

/// The first retry (1-based) whose `randomized` pause is the cap whatever the draw, within the
/// policy's attempts: Resilience4j's interval `w` grows without a cap, and the pause is
/// `min(cap, w · uniform[1 − f, 1 + f))`.
fn jitter_lost_at(t: &Translation) -> Option<u32> {
    let b = &t.backoff;
    if b.rule != RuleName::Randomized || b.jitter <= 0.0 || b.multiplier <= 1.0 {
        return None;
    }
    let retries = t.max_attempts?.saturating_sub(1).min(64);
    let cap = b.cap.as_secs_f64();
    let mut w = b.base.as_secs_f64();
    for retry in 1..=retries {
        if w * (1.0 - b.jitter) >= cap {
            return Some(retry);
        }
        w *= b.multiplier;
    }
    None
}

fn timeouts(t: &Translation, out: &mut Vec<Finding>) {
    let attempts = t.max_attempts.unwrap_or(1);
    match (t.per_try_timeout, t.timeout) {
        (Some(per_try), Some(total)) if per_try >= total && attempts > 1 => out.push(finding(
            t,
            Severity::Warning,
            "per-try-not-below-timeout",
            "perTryTimeout",
            format!(
                "the per-try timeout ({} ms) is not below the whole request's ({} ms): an attempt that times out uses the whole budget and is never retried",
                ms(per_try),
                ms(total)
            ),
            format!("set the per-try timeout to at most timeout / attempts ({} ms)", ms(total / attempts)),
        )),
        (Some(per_try), Some(total)) if attempts > 1 && per_try.saturating_mul(attempts) > total => {
            let fit = (total.as_nanos() / per_try.as_nanos().max(1)).max(1);
            out.push(finding(
                t,
                Severity::Info,
                "timeout-below-attempts",
                "timeout",
                format!(
                    "{attempts} attempts of up to {} ms need {} ms, but the whole request times out after {} ms: only {fit} slow attempt(s) fit",
                    ms(per_try),
                    ms(per_try.saturating_mul(attempts)),
                    ms(total)
                ),
                format!(
                    "raise the timeout to {} ms or lower the per-try timeout to {} ms",
                    ms(per_try.saturating_mul(attempts)),
                    ms(total / attempts)
                ),
            ));
        }
        (None, Some(total))
            if attempts > 1 && matches!(t.system, System::Envoy | System::Istio) =>
        {
            out.push(finding(
                t,
                Severity::Info,
                "no-per-try-timeout",
                "perTryTimeout",
                format!("no per-try timeout: a hung attempt uses the whole {} ms timeout and is never retried", ms(total)),
                format!("set a per-try timeout of at most {} ms", ms(total / attempts)),
            ));
        }
        _ => {}
    }
}

/// The field that lists what `t` retries, in its system's spelling.
fn conditions_field(t: &Translation) -> &'static str {
    match t.system {
        System::Grpc => "retryableStatusCodes",
        System::Envoy => "retry_on",
        System::Istio => "retryOn",
        System::Linkerd => "retry.linkerd.io/http",
        System::Aws => "retry_mode",
        System::Resilience4j => "retryexceptions",
    }
}

fn conditions(t: &Translation, out: &mut Vec<Finding>) {
    let field = conditions_field(t);
    let has = |words: &[&str]| {
        t.retry_on
            .iter()
            .find(|c| words.iter().any(|w| c.eq_ignore_ascii_case(w)))
            .cloned()
    };
    if let Some(c) = has(&["DEADLINE_EXCEEDED", "deadline-exceeded"]) {
        out.push(finding(
            t,
            Severity::Warning,
            "retries-deadline",
            field,
            format!("{c} is retried: the deadline is the caller's, so a retry sends work that nobody waits for, exactly when the server is slow"),
            format!("remove {c} from the retried conditions"),
        ));
    }
    if let Some(c) = has(&["401", "403", "UNAUTHENTICATED", "PERMISSION_DENIED"]) {
        out.push(finding(
            t,
            Severity::Warning,
            "retries-unauthenticated",
            field,
            format!("{c} is retried: a request refused for its credentials is refused again"),
            format!("remove {c} from the retried conditions"),
        ));
    }
    if let Some(m) = t
        .methods
        .iter()
        .find(|m| NON_IDEMPOTENT.iter().any(|n| m.eq_ignore_ascii_case(n)))
    {
        out.push(finding(
            t,
            Severity::Error,
            "retries-non-idempotent",
            "retries",
            format!("{m} requests are retried: a retry of a request the server did process runs it twice"),
            format!("disable retries for {m} (or make the handler idempotent with an idempotency key)"),
        ));
    }
}

fn budget(t: &Translation, out: &mut Vec<Finding>) {
    match &t.throttle {
        None if t.hedging.is_some() => out.push(finding(
            t,
            Severity::Warning,
            "hedging-without-throttling",
            "hedgingPolicy",
            format!(
                "hedging sends up to {} copies of every call with no retryThrottling: when the server slows down, load multiplies",
                t.hedging.map_or(0, |h| h.max_attempts)
            ),
            "add retryThrottling (for example maxTokens 10, tokenRatio 0.1)".to_owned(),
        )),
        None => out.push(finding(
            t,
            Severity::Warning,
            "no-budget",
            "maxAttempts",
            format!(
                "no retry budget: in an outage every call is attempted {} times",
                t.max_attempts.map_or("without limit".to_owned(), |a| a.to_string())
            ),
            "bound retries by a budget (about 10–20 % of requests) rather than by a count alone".to_owned(),
        )),
        Some(th) => {
            if th.kind == "envoy-max-retries"
                && th.param("max_retries").is_some_and(|m| m >= UNBOUNDED_RETRIES)
            {
                out.push(finding(
                    t,
                    Severity::Warning,
                    "unbounded-max-retries",
                    "connectionPool.http.maxRetries",
                    format!(
                        "maxRetries is {} ({}): the circuit breaker never limits concurrent retries",
                        th.param("max_retries").unwrap_or_default(),
                        if t.defaults.contains(&"connectionPool.http.maxRetries") {
                            "Istio's default"
                        } else {
                            "as set"
                        }
                    ),
                    "set a DestinationRule trafficPolicy.connectionPool.http.maxRetries (a few per caller), or a retry budget".to_owned(),
                ));
            }
            if let (Some(ratio), Some(floor)) =
                (th.param("retry_ratio"), th.param("min_retries_per_second"))
                && floor > 0.0
                && ratio > 0.0
            {
                out.push(finding(
                    t,
                    Severity::Info,
                    "budget-floor",
                    "retryBudget",
                    format!(
                        "below {} requests per second the floor of {floor} retries per second, not the {} % ratio, bounds retries: a quiet service may retry every request",
                        figure::number(floor / ratio),
                        figure::percent(ratio * 100.0)
                    ),
                    "lower minRetriesPerSecond to what the smallest caller can afford".to_owned(),
                ));
            }
            if let (Some(pct), Some(min)) =
                (th.param("budget_percent"), th.param("min_retry_concurrency"))
                && pct > 0.0
            {
                out.push(finding(
                    t,
                    Severity::Info,
                    "budget-floor",
                    "retry_budget",
                    format!(
                        "below {} active requests the floor of {min} concurrent retries, not {pct} %, bounds retries",
                        figure::number(min * 100.0 / pct)
                    ),
                    "lower min_retry_concurrency if the cluster sees little traffic".to_owned(),
                ));
            }
        }
    }
}

/// A layer: one file, or one Kubernetes object (a `VirtualService`, a profile) of a file.
pub(crate) fn layer_of(t: &Translation) -> String {
    match t.system {
        System::Istio | System::Linkerd => {
            let object = t.name.split('/').next().unwrap_or(&t.name);
            format!("{} {object}", t.file)
        }
        _ => t.file.clone(),
    }
}

/// Retries at more than one layer of one call path: a finding on each retrying layer.
pub(crate) fn layers(configs: &[Translation]) -> Vec<Finding> {
    let layers = super::storm::layers(configs);
    if layers.len() < 2 {
        return Vec::new();
    }
    let most: Vec<Option<u32>> = layers
        .iter()
        .map(|ts| ts.iter().map(|t| t.max_attempts).max().flatten())
        .collect();
    let attempts: Vec<String> = most
        .iter()
        .map(|a| a.map_or("budget-bound".to_owned(), |a| a.to_string()))
        .collect();
    let product: Option<u64> = most.iter().map(|a| a.map(u64::from)).product();
    let total = product.map_or("an unbounded number of".to_owned(), |p| p.to_string());
    layers
        .iter()
        .map(|ts| {
            finding(
                ts[0],
                Severity::Warning,
                "multiple-layers",
                "retries",
                format!(
                    "retries at {} layers of one call path (attempts {}): a failure at the bottom is attempted {total} times",
                    layers.len(),
                    attempts.join(" × "),
                ),
                "retry at one layer only, the one just above the failing service (SRE book, \"Handling Overload\"); set attempts to 1 (Istio: retries.attempts: 0) elsewhere".to_owned(),
            )
        })
        .collect()
}
