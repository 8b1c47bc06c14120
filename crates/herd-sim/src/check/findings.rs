//! The analyzers: each reads translated policies and raises findings, named by a code of
//! the one table of messages ([`super::messages::MESSAGES`]). As istio's
//! `pkg/config/analysis`, each analyzer declares its name, a one-line description, what it
//! reads and the codes it raises; `herd check --list` prints them.
//!
//! A finding is raised once per cause: findings of one code, one file and one message (the
//! message names the cause, never the policy) become one, listing every place it applies to
//! ([`Finding::places`]): `no-budget` once for a gRPC channel's missing `retryThrottling`,
//! `unbounded-max-retries` once per `DestinationRule` (or once for the routes no rule covers).
use herd::RuleName;

use super::{Finding, Severity, System, Translation, finding, ms};
use crate::figure;

/// A spread below this fraction of the pause does not separate clients that failed together.
const SMALL_JITTER: f64 = 0.1;
/// `max_retries` at or above this is no limit in practice.
const UNBOUNDED_RETRIES: f64 = 1_000_000.0;
/// Methods that are not idempotent (RFC 9110, section 9.2.2).
const NON_IDEMPOTENT: [&str; 3] = ["POST", "PATCH", "CONNECT"];

/// One analyzer: what it looks at and the codes it raises.
#[derive(Clone, Copy, Debug)]
pub struct Analyzer {
    /// Its name (`backoff`).
    pub name: &'static str,
    /// What it checks, in one line.
    pub description: &'static str,
    /// What of a translation it reads.
    pub inputs: &'static str,
    /// The codes it raises (each in [`super::messages::MESSAGES`]).
    pub codes: &'static [&'static str],
    /// Only when the files are one call path (`--call-path`).
    pub call_path_only: bool,
    run: fn(&[Translation], &mut Vec<Finding>),
}

/// Every analyzer, in the order they run.
pub const ANALYZERS: &[Analyzer] = &[
    Analyzer {
        name: "backoff",
        description: "the pauses between attempts: random enough that clients that failed together come back apart",
        inputs: "backoff (rule, base, cap, multiplier, jitter), attempts, hedging",
        codes: &[
            "no-jitter",
            "no-backoff-under-budget",
            "jitter-too-small",
            "jitter-lost-at-cap",
        ],
        call_path_only: false,
        run: |configs, out| configs.iter().for_each(|t| jitter(t, out)),
    },
    Analyzer {
        name: "timeouts",
        description: "the per-try and whole-call timeouts against the attempts",
        inputs: "per-try timeout, timeout, attempts, system",
        codes: &[
            "per-try-not-below-timeout",
            "timeout-below-attempts",
            "no-per-try-timeout",
        ],
        call_path_only: false,
        run: |configs, out| configs.iter().for_each(|t| timeouts(t, out)),
    },
    Analyzer {
        name: "conditions",
        description: "what is retried: statuses a retry cannot cure, methods a retry may run twice",
        inputs: "retried conditions, HTTP methods of the route, system",
        codes: &[
            "no-retry-on",
            "retries-deadline",
            "retries-unauthenticated",
            "retries-non-idempotent",
        ],
        call_path_only: false,
        run: |configs, out| configs.iter().for_each(|t| conditions(t, out)),
    },
    Analyzer {
        name: "budget",
        description: "what bounds the load retries add: a budget, a throttle, a circuit breaker",
        inputs: "throttle or budget, hedging, attempts",
        codes: &[
            "no-budget",
            "hedging-without-throttling",
            "unbounded-max-retries",
            "budget-floor",
        ],
        call_path_only: false,
        run: |configs, out| configs.iter().for_each(|t| budget(t, out)),
    },
    Analyzer {
        name: "layers",
        description: "retries at more than one hop of one call path",
        inputs: "every retrying policy, in call order (files, or Kubernetes objects within one)",
        codes: &["multiple-layers"],
        call_path_only: true,
        run: |configs, out| out.extend(layers(configs)),
    },
];

/// The codes the translators raise themselves, while reading (listed with the analyzers).
pub const TRANSLATOR_CODES: &[&str] = &[
    "clamped",
    "ignored-backoff",
    "ignored-field",
    "invalid-entry",
    "misspelt-key",
];

/// The findings of every analyzer over `configs` (the call-path ones when `call_path`), each
/// once per cause.
pub(crate) fn analyze(configs: &[Translation], call_path: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    for a in ANALYZERS.iter().filter(|a| call_path || !a.call_path_only) {
        (a.run)(configs, &mut out);
    }
    out
}

/// Findings of one code, file, message and fix merged into one listing every place, in the
/// order first met.
pub(crate) fn once_per_cause(findings: Vec<Finding>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::with_capacity(findings.len());
    let mut index = std::collections::HashMap::new();
    for f in findings {
        let key = (f.code, f.file.clone(), f.message.clone(), f.fix.clone());
        match index.get(&key) {
            Some(&i) => {
                let first: &mut Finding = &mut out[i];
                for p in f.places {
                    if !first.places.contains(&p) {
                        first.places.push(p);
                    }
                }
            }
            None => {
                index.insert(key, out.len());
                out.push(f);
            }
        }
    }
    for f in &mut out {
        f.places.sort_by_key(|p| p.line);
    }
    out
}

fn jitter(t: &Translation, out: &mut Vec<Finding>) {
    if !t.retries() || t.hedging.is_some() {
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
        let (sev, code, fix) = match t.system {
            System::Resilience4j => (
                Severity::Warning,
                "no-jitter",
                "set enableRandomizedWait: true (randomizedWaitFactor 0.5 or more), with enableExponentialBackoff".to_owned(),
            ),
            System::Linkerd if t.throttle.is_some() => (
                Severity::Info,
                "no-backoff-under-budget",
                "the retry budget bounds the load; Linkerd has no backoff to add".to_owned(),
            ),
            System::Linkerd => (
                Severity::Warning,
                "no-jitter",
                "Linkerd retries have no backoff: lower retry.linkerd.io/limit, or retry in the client with jitter".to_owned(),
            ),
            _ => (
                Severity::Warning,
                "no-jitter",
                "draw each pause at random over [0, base · 2^(n−1)] (full jitter)".to_owned(),
            ),
        };
        out.push(finding(
            t,
            sev,
            code,
            "waitduration",
            format!("the policy {what}: clients that fail together retry together, and meet a recovering server all at once"),
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
        return;
    }
    let field = conditions_field(t);
    let has = |words: &[&str]| {
        t.retry_on
            .iter()
            .find(|c| words.iter().any(|w| c.eq_ignore_ascii_case(w)))
            .cloned()
    };
    if let Some(c) = has(&["DEADLINE_EXCEEDED", "deadline-exceeded"]) {
        let message = match t.system {
            // gRFC A6: the client never retries past its own deadline; a DEADLINE_EXCEEDED it
            // may retry is a status the server sent (its own deadline, or a deeper call's).
            System::Grpc => format!(
                "{c} is retried: gRPC never retries past the caller's own deadline, so the {c} retried is the server's status (its deadline, or one it propagated, ran out): the retry meets the same slow server, adding load exactly when it is slow"
            ),
            System::Envoy | System::Istio => format!(
                "{c} is retried: it is the upstream's gRPC status (its own deadline ran out), not the route's timeout, which Envoy never retries past: the retry meets the same slow server, adding load exactly when it is slow"
            ),
            _ => format!(
                "{c} is retried: the deadline is the caller's, so a retry sends work that nobody waits for, exactly when the server is slow"
            ),
        };
        out.push(finding(
            t,
            Severity::Warning,
            "retries-deadline",
            field,
            message,
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
    if !t.retries() {
        return;
    }
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
        // gRPC's throttle is the channel's, one per service config: the cause is the file.
        None if t.system == System::Grpc => out.push(finding(
            t,
            Severity::Warning,
            "no-budget",
            "maxAttempts",
            "no retryThrottling in this service config: in an outage every retried call of the channel makes all its attempts".to_owned(),
            "add retryThrottling (for example maxTokens 10, tokenRatio 0.1): the channel then stops retrying when most calls fail".to_owned(),
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
                    // One finding per rule that sets it (its line names it), or one for the
                    // routes no rule covers.
                    if t.defaults.contains(&"connectionPool.http.maxRetries") {
                        format!(
                            "maxRetries is {} (Istio's default: no DestinationRule sets it for these routes' hosts): the circuit breaker never limits concurrent retries",
                            th.param("max_retries").unwrap_or_default()
                        )
                    } else {
                        format!(
                            "maxRetries is {} (as set at line {}): the circuit breaker never limits concurrent retries to that host",
                            th.param("max_retries").unwrap_or_default(),
                            t.line_of("connectionPool.http.maxRetries")
                        )
                    },
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

/// Retries at more than one layer of one call path: a finding on each retrying layer.
pub(crate) fn layers(configs: &[Translation]) -> Vec<Finding> {
    let layers = super::layers::layers(configs);
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

#[cfg(test)]
mod tests {
    use super::super::{CheckOptions, Input, check, check_with, messages};
    use super::*;

    /// The findings of `code` in `text`: (line, places' names).
    fn flagged(file: &str, text: &str, code: &str) -> Vec<(usize, Vec<String>)> {
        check(&[Input::new(file, text)])
            .unwrap_or_else(|e| panic!("{e}"))
            .findings
            .into_iter()
            .filter(|f| f.code == code)
            .map(|f| (f.line, f.places.into_iter().map(|p| p.name).collect()))
            .collect()
    }

    fn grpc(methods: &[(&str, &str)], throttling: bool) -> String {
        let configs: Vec<String> = methods
            .iter()
            .map(|(service, policy)| {
                format!(r#"{{"name": [{{"service": "{service}"}}], "retryPolicy": {policy}}}"#)
            })
            .collect();
        let throttle = if throttling {
            r#", "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}"#
        } else {
            ""
        };
        format!("{{\"methodConfig\": [{}]{throttle}}}", configs.join(",\n"))
    }

    const JITTERED: &str = r#"{"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;
    const DEADLINE: &str = r#"{"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}"#;

    #[test]
    fn every_code_an_analyzer_raises_is_in_the_table_of_messages() {
        for a in ANALYZERS {
            for code in a.codes {
                assert!(messages::message(code).is_some(), "{}: {code}", a.name);
            }
        }
        for code in TRANSLATOR_CODES {
            assert!(messages::message(code).is_some(), "{code}");
        }
    }

    /// budget: no-budget once per gRPC channel, listing its methods; none with a throttle.
    #[test]
    fn budget_no_budget_once_per_channel() {
        let text = grpc(
            &[("a.A", JITTERED), ("b.B", JITTERED), ("c.C", DEADLINE)],
            false,
        );
        let found = flagged("svc.json", &text, "no-budget");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, ["a.A/*", "b.B/*", "c.C/*"]);
        let text = grpc(&[("a.A", JITTERED), ("b.B", JITTERED)], true);
        assert!(flagged("svc.json", &text, "no-budget").is_empty());
    }

    /// budget: unbounded-max-retries once per DestinationRule, once for the routes none covers.
    #[test]
    fn budget_unbounded_max_retries_once_per_host() {
        let route = |vs: &str, host: &str| {
            format!(
                "---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: {vs}}}\nspec:\n  hosts: [{host}]\n  http:\n  - route:\n    - destination: {{host: {host}}}\n    retries: {{attempts: 3, perTryTimeout: 1s}}\n  - route:\n    - destination: {{host: {host}}}\n    retries: {{attempts: 2, perTryTimeout: 1s}}\n"
            )
        };
        let rule = |host: &str, max: &str| {
            format!(
                "---\napiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {{name: {host}}}\nspec:\n  host: {host}\n  trafficPolicy:\n    connectionPool:\n      http: {{maxRetries: {max}}}\n"
            )
        };
        let text = [
            route("a", "a"),
            route("b", "b"),
            route("c", "c"),
            route("d", "d"),
            rule("a", "2147483647"),
            rule("b", "1000000"),
            rule("c", "3"),
        ]
        .concat();
        let found = flagged("vs.yaml", &text, "unbounded-max-retries");
        // a's rule, b's rule, and d (no rule: Istio's default); never c (3).
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().all(|(_, p)| p.len() == 2), "{found:?}");
        assert!(
            found
                .iter()
                .all(|(_, p)| !p.iter().any(|n| n.starts_with("c/")))
        );
    }

    /// conditions: a retried DEADLINE_EXCEEDED is the server's status in gRPC; only the
    /// method that retries it is flagged.
    #[test]
    fn conditions_retries_deadline_says_what_grpc_does() {
        let text = grpc(&[("a.A", JITTERED), ("c.C", DEADLINE)], true);
        let report = check(&[Input::new("svc.json", text)]).unwrap();
        let f: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.code == "retries-deadline")
            .collect();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].places[0].name, "c.C/*");
        assert!(
            f[0].message
                .contains("never retries past the caller's own deadline")
        );
        assert!(f[0].message.contains("server's status"));
    }

    /// conditions: a Linkerd route of a gRPC method is a POST that must not be flagged; an
    /// HTTP POST route must.
    #[test]
    fn conditions_non_idempotent_never_for_grpc_routes() {
        let text = "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: emoji}\nspec:\n  routes:\n  - name: ListAll\n    condition: {method: POST, pathRegex: '/emojivoto\\.v1\\.EmojiService/ListAll'}\n    isRetryable: true\n  - name: POST /books\n    condition: {method: POST, pathRegex: /books}\n    isRetryable: true\n";
        let found = flagged("sp.yaml", text, "retries-non-idempotent");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, ["emoji/POST /books"]);
    }

    /// backoff: a constant pause is flagged, gRPC's ±20 % jitter is not; Linkerd's pause-less
    /// retries under a budget are their own info.
    #[test]
    fn backoff_flags_pauses_without_jitter_only() {
        let text = "[profile a]\nretry_mode = legacy\n";
        let jittered = grpc(&[("a.A", JITTERED)], true);
        assert!(flagged("svc.json", &jittered, "no-jitter").is_empty());
        assert!(flagged("svc.json", &jittered, "jitter-too-small").is_empty());
        let _ = text;
        let sp = "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: s}\nspec:\n  routes:\n  - name: r\n    condition: {method: GET, pathRegex: /x}\n    isRetryable: true\n";
        assert!(flagged("sp.yaml", sp, "no-jitter").is_empty());
        assert_eq!(flagged("sp.yaml", sp, "no-backoff-under-budget").len(), 1);
        let r4j = "resilience4j:\n  retry:\n    instances:\n      a:\n        maxAttempts: 3\n        waitDuration: 500ms\n";
        assert_eq!(flagged("app.yml", r4j, "no-jitter").len(), 1);
    }

    /// timeouts: a per-try timeout equal to the whole is flagged; one that fits is not.
    #[test]
    fn timeouts_flag_a_per_try_timeout_that_is_the_whole() {
        let vs = |per_try: &str| {
            format!(
                "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: v}}\nspec:\n  hosts: [a]\n  http:\n  - route:\n    - destination: {{host: a}}\n    timeout: 2s\n    retries: {{attempts: 3, perTryTimeout: {per_try}}}\n"
            )
        };
        assert_eq!(
            flagged("v.yaml", &vs("2s"), "per-try-not-below-timeout").len(),
            1
        );
        assert!(flagged("v.yaml", &vs("500ms"), "per-try-not-below-timeout").is_empty());
    }

    /// layers: only with the call path, once per retrying layer.
    #[test]
    fn layers_only_on_a_call_path() {
        let a = Input::new("a.json", grpc(&[("a.A", JITTERED)], true));
        let b = Input::new("b.json", grpc(&[("b.B", JITTERED)], true));
        let inputs = [a, b];
        let count = |call_path| {
            check_with(&inputs, CheckOptions::default().with_call_path(call_path))
                .unwrap()
                .findings
                .iter()
                .filter(|f| f.code == "multiple-layers")
                .count()
        };
        assert_eq!(count(false), 0);
        assert_eq!(count(true), 2);
    }
}
