//! Fixes the system can express, derived from the findings: for each warning a setting
//! cures, the change in the system's own terms, applied to the translation (so the what-if
//! runs it) and shown as the snippet to paste. A warning no setting of that system cures
//! proposes nothing: herd never proposes a change the system cannot make.
//!
//! | finding | system | change |
//! |---|---|---|
//! | `no-budget` | Envoy | the cluster's `circuit_breakers.thresholds[].retry_budget` at Envoy's own defaults, 20 % and 3 (`api/envoy/config/cluster/v3/circuit_breaker.proto`) |
//! | `no-budget`, `hedging-without-throttling` | gRPC | `retryThrottling` `maxTokens` 10, `tokenRatio` 0.1 (gRFC A6's example) |
//! | `no-budget` | AWS (legacy mode) | `retry_mode = standard`: the SDK's retry quota, 500 tokens at 5 a retry (botocore `retries/standard.py`) |
//! | `unbounded-max-retries` | Istio, Envoy | `connectionPool.http.maxRetries` (Istio's `DestinationRule`) or `max_retries` 3, Envoy's own default |
//! | `no-jitter`, `jitter-too-small` | Resilience4j | `enableRandomizedWait: true`, `randomizedWaitFactor: 0.5` |
//! | `retries-deadline` | gRPC, Envoy, Istio | the deadline's status removed from the retried conditions |
//! | `retries-non-idempotent` | every system | retries off on that route, as for `multiple-layers` |
//! | `per-try-not-below-timeout` | Envoy, Istio, gRPC, Linkerd | a per-try timeout of the whole timeout over the attempts |
//! | `no-budget`, `no-jitter` | Linkerd's annotations (2.16 on) | `retry.linkerd.io/limit: "1"`, Linkerd's default: its route annotations have no budget or backoff, the limit is what bounds the load |
//! | `multiple-layers` | every system | retries off at every hop but the last: Istio `attempts: 0`, Envoy `num_retries: 0`, gRPC no `retryPolicy`, Linkerd `isRetryable: false` or `retry.linkerd.io/limit: "0"`, AWS `max_attempts = 1`, Resilience4j `maxAttempts: 1` |
use serde::Serialize;

use herd::RuleName;

use super::answer::{Answer, FailureStatus};
use super::faults::Fault;
use super::figures::Figures;
use crate::check::{Severity, System, Throttle, Translation};

/// One change of a fix, in the system's own terms.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct FixChange {
    /// The finding it cures.
    pub code: &'static str,
    /// The policy's file.
    pub file: String,
    /// The policy's line.
    pub line: usize,
    /// The policy's name.
    pub policy: String,
    /// What changes, in words.
    pub change: String,
    /// The snippet to paste (YAML, JSON or INI, as the file is written).
    pub snippet: String,
}

/// A call path's fix: the translations as changed, the changes, and, when there is none,
/// why.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// The path with every change applied, caller first.
    pub path: Vec<Translation>,
    /// The changes, in path order.
    pub changes: Vec<FixChange>,
    /// Why nothing changes, when nothing does.
    pub none_because: Option<String>,
}

fn change(t: &Translation, code: &'static str, change: String, snippet: String) -> FixChange {
    FixChange {
        code,
        file: t.file.clone(),
        line: t.line,
        policy: t.name.clone(),
        change,
        snippet,
    }
}

/// The warnings and errors of `t` alone, by code.
fn codes(t: &Translation) -> Vec<&'static str> {
    crate::check::findings::analyze(std::slice::from_ref(t), false)
        .into_iter()
        .filter(|f| f.severity >= Severity::Warning)
        .map(|f| f.code)
        .collect()
}

/// Whether `t` is a policy of Linkerd's retry annotations (an `HTTPRoute`, `GRPCRoute` or
/// `Service`), not a `ServiceProfile`'s route.
fn linkerd_annotations(t: &Translation) -> bool {
    t.system == System::Linkerd && !t.name.starts_with("ServiceProfile") && t.throttle.is_none()
}

/// The finding a lower `retry.linkerd.io/limit` answers for `t`, when one does: `no-budget`
/// or `no-jitter` on Linkerd's annotations with a limit above 1.
fn linkerd_limit_code(t: &Translation, codes: &[&'static str]) -> Option<&'static str> {
    if !linkerd_annotations(t) || t.max_attempts.is_none_or(|a| a <= 2) {
        return None;
    }
    ["no-budget", "no-jitter"]
        .into_iter()
        .find(|c| codes.contains(c))
}

/// Turns `t`'s retries off, in its system's terms.
fn no_retries(t: &mut Translation) -> (String, String) {
    t.max_attempts = Some(1);
    t.hedging = None;
    let (words, snippet) = match t.system {
        System::Istio => ("retries.attempts: 0", "retries:\n  attempts: 0\n"),
        System::Envoy => (
            "retry_policy.num_retries: 0",
            "retry_policy:\n  num_retries: 0\n",
        ),
        System::Grpc => (
            "no retryPolicy in this methodConfig",
            "(remove \"retryPolicy\" from the methodConfig)\n",
        ),
        System::Linkerd if t.name.starts_with("ServiceProfile") || t.throttle.is_some() => {
            ("isRetryable: false", "isRetryable: false\n")
        }
        System::Linkerd => (
            "retry.linkerd.io/limit: \"0\"",
            "retry.linkerd.io/limit: \"0\"\n",
        ),
        System::Aws => ("max_attempts = 1", "max_attempts = 1\n"),
        _ => ("maxAttempts: 1", "maxAttempts: 1\n"),
    };
    (format!("retries off here ({words})"), snippet.to_owned())
}

/// The fix of one policy alone, applied to `t`.
fn fix_one(t: &mut Translation, out: &mut Vec<FixChange>) {
    let codes = codes(t);
    let original = t.clone();
    let has = |c: &str| codes.contains(&c);
    // Retries off: nothing else of the policy matters.
    if has("retries-non-idempotent") {
        let (words, snippet) = no_retries(t);
        out.push(change(
            &original,
            "retries-non-idempotent",
            format!("{words}: the route's methods are not idempotent"),
            snippet,
        ));
        return;
    }
    if has("no-budget") || has("hedging-without-throttling") {
        let code = if has("no-budget") {
            "no-budget"
        } else {
            "hedging-without-throttling"
        };
        match t.system {
            System::Grpc => {
                t.throttle = Some(Throttle {
                    kind: "grpc",
                    params: vec![("max_tokens", 10.0), ("token_ratio", 0.1)],
                });
                out.push(change(
                    &original,
                    code,
                    "retryThrottling with 10 tokens, 0.1 back per success: retries stop while more than half the calls fail".to_owned(),
                    "\"retryThrottling\": {\"maxTokens\": 10, \"tokenRatio\": 0.1}\n".to_owned(),
                ));
            }
            System::Envoy => {
                t.throttle = Some(Throttle {
                    kind: "envoy-budget",
                    params: vec![("budget_percent", 20.0), ("min_retry_concurrency", 3.0)],
                });
                out.push(change(
                    &original,
                    code,
                    "a retry budget on the cluster: retries in flight at most 20 % of the active requests (at least 3)".to_owned(),
                    "circuit_breakers:\n  thresholds:\n  - retry_budget:\n      budget_percent: {value: 20}\n      min_retry_concurrency: 3\n".to_owned(),
                ));
            }
            System::Aws => {
                t.throttle = Some(Throttle {
                    kind: "aws-standard",
                    params: vec![
                        ("initial_tokens", 500.0),
                        ("retry_cost", 5.0),
                        ("timeout_retry_cost", 10.0),
                        ("success_reward", 1.0),
                    ],
                });
                out.push(change(
                    &original,
                    code,
                    "standard retry mode: the SDK's retry quota (500 tokens, 5 a retry)".to_owned(),
                    "retry_mode = standard\n".to_owned(),
                ));
            }
            // Istio and Resilience4j's Retry have no budget to set; Linkerd's annotations
            // neither, but their limit bounds the load (below).
            _ => {}
        }
    }
    // Linkerd's route annotations (2.16 on) have no budget and no backoff: the one setting
    // that bounds what a failing backend meets is `retry.linkerd.io/limit`, whose default
    // is 1 (linkerd.io/2/reference/retries). A `ServiceProfile` has its budget.
    if let Some(code) = linkerd_limit_code(t, &codes) {
        t.max_attempts = Some(2);
        out.push(change(
            &original,
            code,
            format!(
                "at most 1 retry a request, Linkerd's default (the limit was {}): the route's annotations have no budget or backoff, so the limit is what bounds the load",
                original.max_attempts.map_or(0, |a| a.saturating_sub(1))
            ),
            "metadata:\n  annotations:\n    retry.linkerd.io/limit: \"1\"\n".to_owned(),
        ));
    }
    if has("unbounded-max-retries") {
        t.throttle = Some(Throttle {
            kind: "envoy-max-retries",
            params: vec![("max_retries", 3.0)],
        });
        let snippet = if t.system == System::Istio {
            "# DestinationRule\nspec:\n  trafficPolicy:\n    connectionPool:\n      http:\n        maxRetries: 3\n"
        } else {
            "circuit_breakers:\n  thresholds:\n  - max_retries: 3\n"
        };
        out.push(change(
            &original,
            "unbounded-max-retries",
            "at most 3 retries in flight to the host (Envoy's own default)".to_owned(),
            snippet.to_owned(),
        ));
    }
    if t.system == System::Resilience4j && (has("no-jitter") || has("jitter-too-small")) {
        let code = if has("no-jitter") {
            "no-jitter"
        } else {
            "jitter-too-small"
        };
        let exponential = matches!(t.backoff.rule, RuleName::Exponential | RuleName::Randomized)
            && t.backoff.multiplier > 1.0;
        t.backoff.rule = RuleName::Randomized;
        t.backoff.jitter = 0.5;
        if !exponential {
            // `IntervalFunction.ofRandomized`: no growth and no cap, so the cap only has to
            // stay above the spread's top, 1.5 times the wait.
            t.backoff.multiplier = 1.0;
            t.backoff.cap = t.backoff.base * 2;
        }
        out.push(change(
            &original,
            code,
            "randomized waits, ±50 % of each pause".to_owned(),
            "enableRandomizedWait: true\nrandomizedWaitFactor: 0.5\n".to_owned(),
        ));
    }
    if has("per-try-not-below-timeout")
        && let (Some(total), Some(attempts)) = (t.timeout, t.max_attempts)
        && attempts > 1
    {
        let per_try = total / attempts;
        t.per_try_timeout = Some(per_try);
        let ms = herd::rule::format_ms(per_try);
        let snippet = match t.system {
            System::Istio => format!("retries:\n  perTryTimeout: {ms}ms\n"),
            System::Envoy => format!(
                "retry_policy:\n  per_try_timeout: {}s\n",
                per_try.as_secs_f64()
            ),
            System::Grpc => format!(
                "\"perAttemptRecvTimeout\": \"{}s\"\n",
                per_try.as_secs_f64()
            ),
            System::Linkerd => format!("retry.linkerd.io/timeout: {ms}ms\n"),
            _ => String::new(),
        };
        if !snippet.is_empty() {
            out.push(change(
                &original,
                "per-try-not-below-timeout",
                format!("a per-try timeout of timeout / attempts, {ms} ms, so a timed-out attempt is retried"),
                snippet,
            ));
        } else {
            t.per_try_timeout = original.per_try_timeout;
        }
    }
    if has("retries-deadline") {
        let before = t.retry_on.len();
        t.retry_on.retain(|c| {
            !c.eq_ignore_ascii_case("DEADLINE_EXCEEDED")
                && !c.eq_ignore_ascii_case("deadline-exceeded")
        });
        if t.retry_on.len() < before {
            let list = t.retry_on.join(if t.system == System::Grpc {
                "\", \""
            } else {
                ","
            });
            let snippet = if t.system == System::Grpc {
                format!("\"retryableStatusCodes\": [\"{list}\"]\n")
            } else {
                format!("retryOn: {list}\n")
            };
            out.push(change(
                &original,
                "retries-deadline",
                "the deadline's status no longer retried".to_owned(),
                snippet,
            ));
        }
    }
}

/// The fix of `path` (caller first): with several retrying hops, retries at the last one
/// only; then each remaining policy's own fix.
#[must_use]
pub fn fix(path: &[&Translation]) -> Fix {
    let mut fixed: Vec<Translation> = path.iter().map(|t| (*t).clone()).collect();
    let mut changes = Vec::new();
    let retrying = fixed.iter().filter(|t| t.retries()).count();
    if retrying > 1 {
        let last = fixed.iter().rposition(Translation::retries).unwrap_or(0);
        for t in fixed[..last].iter_mut().filter(|t| t.retries()) {
            let original = t.clone();
            let (words, snippet) = no_retries(t);
            changes.push(change(&original, "multiple-layers", words, snippet));
        }
    }
    for t in fixed.iter_mut().filter(|t| t.retries()) {
        fix_one(t, &mut changes);
    }
    let none_because = changes.is_empty().then(|| {
        let warnings: Vec<&str> = path.iter().flat_map(|t| codes(t)).collect();
        if warnings.is_empty() {
            "no warning: nothing to fix".to_owned()
        } else {
            let mut w = warnings;
            w.sort_unstable();
            w.dedup();
            let linkerd_at_one = path.iter().any(|t| {
                linkerd_annotations(t)
                    && t.max_attempts == Some(2)
                    && codes(t)
                        .iter()
                        .any(|c| matches!(*c, "no-budget" | "no-jitter"))
            });
            format!(
                "no setting of {} cures {}{}",
                path.iter()
                    .map(|t| t.system.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                w.join(", "),
                if linkerd_at_one {
                    " (Linkerd's retry annotations have no budget or backoff, and retry.linkerd.io/limit is already 1, its least short of no retries)"
                } else {
                    ""
                }
            )
        }
    });
    Fix {
        path: fixed,
        changes,
        none_because,
    }
}

/// Why the fix's figures are the path's in one fault, in a line: the reader sees as set = fix
/// and is told why. `changes` are the fix's (none: `none_because` says why); `set` the
/// figures as set in `fault`; the backend answered `status`, each answer `latency_ms` after
/// it started.
pub(super) fn why_same(
    path: &[&Translation],
    changes: &[FixChange],
    none_because: Option<&str>,
    fault: Fault,
    set: &Figures,
    status: FailureStatus,
    latency_ms: f64,
) -> String {
    if changes.is_empty() {
        return none_because.unwrap_or("no fix").to_owned();
    }
    let retrying = || path.iter().filter(|t| t.retries());
    // One policy is "it" (the same semantics elsewhere share its runs); a hop is named.
    let whose = |t: &Translation| {
        if path.len() == 1 {
            "its".to_owned()
        } else {
            format!("{}'s", t.name)
        }
    };
    let who = |t: &Translation| {
        if path.len() == 1 {
            "it".to_owned()
        } else {
            t.name.clone()
        }
    };
    // Every change is to the retries: a fault in which no request was retried shows none.
    if set.amplification <= 1.0 {
        let why = if let Some(t) = retrying().find(|t| {
            t.timeout
                .is_some_and(|d| d.as_secs_f64() * 1e3 < latency_ms)
        }) {
            format!(
                "{} whole-call timeout, {} ms, ends every call before the backend's first answer ({} ms)",
                whose(t),
                herd::rule::format_ms(t.timeout.unwrap_or_default()),
                crate::figure::number(latency_ms)
            )
        } else if let Some(t) =
            retrying().find(|t| !Answer::Failure(status).retried_by(t.system, &t.retry_on))
        {
            format!(
                "{} retries {}, not this fault's {status}",
                who(t),
                t.retry_on.join(", ")
            )
        } else {
            "every retry was stopped before it was sent".to_owned()
        };
        return format!("no request was retried: {why}; the fix changes only retries");
    }
    let mut whys: Vec<String> = Vec::new();
    for c in changes {
        let why = match c.code {
            "unbounded-max-retries" => {
                "never more than 3 retries were in flight at once, so the new limit never bound"
                    .to_owned()
            }
            "no-budget" | "hedging-without-throttling" if changes_limit(path, c) => {
                "no request needed a second retry, so a limit of 1 never bound".to_owned()
            }
            "no-budget" | "hedging-without-throttling" => {
                "the budget was never spent: every retry fitted within it".to_owned()
            }
            "retries-deadline" => format!(
                "the backend answers {status}, not DEADLINE_EXCEEDED: the change shows when calls fail by their deadline"
            ),
            "per-try-not-below-timeout" => {
                "no attempt outlasted the new per-try timeout".to_owned()
            }
            _ if fault == Fault::Outage && set.goodput <= 0.0 => {
                "the outage outlasts every retry: nothing a fix changes".to_owned()
            }
            _ => "the change binds on nothing this fault does".to_owned(),
        };
        if !whys.contains(&why) {
            whys.push(why);
        }
    }
    whys.join("; ")
}

/// Whether `c` is the lower `retry.linkerd.io/limit` (a limit, not a budget).
fn changes_limit(path: &[&Translation], c: &FixChange) -> bool {
    c.snippet.contains("retry.linkerd.io/limit")
        && path
            .iter()
            .any(|t| t.name == c.policy && t.system == System::Linkerd)
}
