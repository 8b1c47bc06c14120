//! gRPC service config (JSON): `methodConfig[]` with `retryPolicy` or `hedgingPolicy` and
//! `timeout`, and the channel's `retryThrottling`.
//!
//! Read as grpc/grpc-proto `grpc/service_config/service_config.proto` and gRFC A6
//! (grpc/proposal `A6-client-retries.md`) define it:
//! - `maxAttempts` must be greater than 1; values above 5 are treated as 5 (A6, "Maximum
//!   Number of Retries"; grpc-go `service_config.go` clamps the same way);
//! - `initialBackoff`, `maxBackoff` are protobuf Duration strings (`"0.1s"`), both > 0;
//!   `backoffMultiplier` > 0; `retryableStatusCodes` non-empty;
//! - retry n waits `min(initialBackoff · backoffMultiplier^(n−1), maxBackoff) · random(0.8,
//!   1.2)` in today's implementations ([`GrpcRetries::Jitter20`], the default): A6 as revised
//!   in 2024 (grpc/proposal#452), gRPC core's retry filter (grpcio 1.85.3 measured),
//!   grpc-go >= 1.70.0 (`stream.go`, `csAttempt.shouldRetry`, grpc/grpc-go#7869) and
//!   grpc-java since grpc/grpc-java#12639: herd's `grpc-retry` rule with jitter 0.2;
//! - A6's original text, `random(0, min(…))`, is what grpc-go before 1.70.0
//!   (`grpcrand.Int63n(cur)`; Debian's 1.33), grpc-java before grpc/grpc-java#11858 and
//!   grpc-js do ([`GrpcRetries::Uniform`]): herd's `full` rule when the multiplier is 2,
//!   else `grpc-retry` with jitter 1 over half the base and cap, the same distribution
//!   (`(half · m^(n−1) ∧ half cap) · 2u`);
//! - `hedgingPolicy.maxAttempts` is clamped to 5 too; `hedgingDelay` unset sends every copy at
//!   once;
//! - `retryThrottling`: `maxTokens` in (0, 1000], `tokenRatio` > 0; retries and hedges stop
//!   while tokens ≤ `maxTokens / 2` (A6, "Throttling Retry Attempts and Hedged RPCs").
//!
//! A policy that breaks these rules makes the whole service config invalid in gRPC: grpc-go's
//! `parseServiceConfig` (service_config.go) returns an error and the channel keeps its previous
//! config (or none: no retries at all). herd reports it as an `invalid-entry` error and reads
//! the other method configs. A `retryPolicy` without `maxAttempts` is common in googleapis'
//! `*_grpc_service_config.json`: those files are inputs to the GAPIC generators, whose clients
//! retry with that backoff until the method's `timeout` and never look at `maxAttempts`
//! (gapic-generator-python `gapic/schema/wrappers.py`, `Method.retry`, and the generated
//! `retries.Retry(…, deadline=timeout)`; gapic-generator-java's `RetrySettings` with
//! `totalTimeout` and no attempt limit).
use std::time::Duration;

use herd::RuleName;

/// The ± jitter of gRPC's retry backoff: grpc-go `stream.go` multiplies by
/// `0.8 + 0.4*rand.Float64()`; gRPC core's retry filter sets `BackOff` jitter 0.2.
const GRPC_RETRY_JITTER: f64 = 0.2;

use super::tree::{Node, Reader, Units, get, line_of, load_json, map_of};
use super::{
    Backoff, CheckError, Generation, GrpcRetries, Hedging, Severity, Throttle, Translated,
    Translation, finding,
};

/// gRFC A6: "values greater than 5 are treated as 5".
pub(crate) const MAX_ATTEMPTS_CLAMP: u32 = 5;

// gRPC status codes by number.
use super::GRPC_STATUS_CODES as STATUS;

/// What grpc-go does with a service config holding an invalid entry.
const REJECTS: &str = "grpc-go rejects the whole service config (service_config.go, parseServiceConfig): the channel keeps its previous config, or none, and no call is retried";

/// What grpc-go does with an invalid `retryPolicy`: `convertRetryPolicy` logs "ignoring retry
/// policy … due to illegal configuration" and returns none, keeping the method config
/// (measured with Debian's grpc-go 1.33 in herd-sim's `check_grpc_go` test).
const IGNORES_RETRY: &str = "grpc-go ignores this retryPolicy with a warning and keeps the rest of the config (service_config.go, convertRetryPolicy): the method's calls are not retried";

/// What grpc-go does with the entry whose error is `e`.
fn what_grpc_go_does(e: &CheckError) -> &'static str {
    if e.field.contains(".retryPolicy") {
        IGNORES_RETRY
    } else {
        REJECTS
    }
}

pub(crate) fn translate(
    r: &mut Reader,
    text: &str,
    retries: GrpcRetries,
) -> Result<Translated, CheckError> {
    let root = load_json(&r.file, text)?;
    let top = r.fields(
        &root,
        "",
        &[
            "methodConfig",
            "retryThrottling",
            "loadBalancingConfig",
            "loadBalancingPolicy",
            "healthCheckConfig",
        ],
    )?;
    let throttle = match get(top, "retryThrottling").map(|node| throttling(r, node)) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            r.reject(e, REJECTS);
            None
        }
        None => None,
    };
    let mut out = Translated::default();
    let configs = match get(top, "methodConfig") {
        Some(c) => r.entries(c, "methodConfig", REJECTS),
        None => &[],
    };
    for (i, mc) in configs.iter().enumerate() {
        let path = format!("methodConfig[{i}]");
        match method_config(r, mc, &path, throttle.clone(), retries, &mut out.findings) {
            Ok(t) => out.configs.push(t),
            Err(e) if e.field.ends_with("retryPolicy.maxAttempts") && e.message == "required" => {
                let timeout = map_of(Some(mc))
                    .and_then(|m| get(m, "timeout"))
                    .and_then(|n| r.duration(n, "timeout", Units::Proto).ok())
                    .map_or_else(
                        || "the call's deadline".to_owned(),
                        |d| format!("the method's timeout, {} ms", d.as_millis()),
                    );
                r.reject(
                    e,
                    &format!("{IGNORES_RETRY}. GAPIC clients generated from this file ignore maxAttempts and retry with this backoff until {timeout}"),
                );
            }
            Err(e) => {
                let what = what_grpc_go_does(&e);
                r.reject(e, what);
            }
        }
    }
    out.looked_at = format!(
        "{} methodConfig entr{}, none with a valid retryPolicy or hedgingPolicy",
        configs.len(),
        if configs.len() == 1 { "y" } else { "ies" }
    );
    Ok(out)
}

fn throttling(r: &mut Reader, node: &Node) -> Result<Throttle, CheckError> {
    let m = r.fields(node, "retryThrottling", &["maxTokens", "tokenRatio"])?;
    let need = |key: &str| {
        get(m, key).ok_or_else(|| r.bad(node.line, &format!("retryThrottling.{key}"), "required"))
    };
    let max_tokens = r.number(need("maxTokens")?, "retryThrottling.maxTokens", 0.0, 1000.0)?;
    if max_tokens <= 0.0 {
        return Err(r.bad(node.line, "retryThrottling.maxTokens", "must be above 0"));
    }
    let ratio = r.number(
        need("tokenRatio")?,
        "retryThrottling.tokenRatio",
        0.0,
        f64::MAX,
    )?;
    if ratio <= 0.0 {
        return Err(r.bad(node.line, "retryThrottling.tokenRatio", "must be above 0"));
    }
    // A6: "tokenRatio … up to 3 decimal places"; more are truncated.
    let ratio = (ratio * 1000.0).trunc() / 1000.0;
    Ok(Throttle {
        kind: "grpc",
        params: vec![("max_tokens", max_tokens), ("token_ratio", ratio)],
    })
}

fn method_config(
    r: &mut Reader,
    node: &Node,
    path: &str,
    throttle: Option<Throttle>,
    retries: GrpcRetries,
    findings: &mut Vec<super::Finding>,
) -> Result<Translation, CheckError> {
    let m = r.fields(
        node,
        path,
        &[
            "name",
            "timeout",
            "retryPolicy",
            "hedgingPolicy",
            "waitForReady",
            "maxRequestMessageBytes",
            "maxResponseMessageBytes",
        ],
    )?;
    let name = names(r, m, path)?;
    let mut t = r.translation(node.line, name, Backoff::IMMEDIATE);
    t.throttle = throttle;
    t.generation = Some(match retries {
        GrpcRetries::Uniform => Generation::GrpcUniform,
        _ => Generation::GrpcJitter20,
    });
    if let Some(n) = get(m, "timeout") {
        t.timeout = Some(r.duration(n, &format!("{path}.timeout"), Units::Proto)?);
        t.field_lines.push(("timeout", n.line));
    }
    if let (Some(_), Some(_)) = (get(m, "retryPolicy"), get(m, "hedgingPolicy")) {
        return Err(r.bad(
            node.line,
            path,
            "retryPolicy and hedgingPolicy are mutually exclusive",
        ));
    }
    if let Some(rp) = get(m, "retryPolicy") {
        retry_policy(r, (rp, &format!("{path}.retryPolicy")), &mut t, findings)?;
        uniform_if(&mut t, retries);
    }
    if let Some(hp) = get(m, "hedgingPolicy") {
        hedging_policy(r, (hp, &format!("{path}.hedgingPolicy")), &mut t, findings)?;
    }
    if t.throttle.is_none() {
        t.defaults.push("retryThrottling");
    }
    Ok(t)
}

fn names(r: &Reader, m: &[(String, usize, Node)], path: &str) -> Result<String, CheckError> {
    let Some(list) = get(m, "name") else {
        return Ok("*".to_owned());
    };
    let mut out = Vec::new();
    for n in r.seq(list, &format!("{path}.name"))? {
        let e = r.map(n, &format!("{path}.name"))?;
        let service = get(e, "service")
            .map(|s| r.text(s, "service"))
            .transpose()?;
        let method = get(e, "method").map(|s| r.text(s, "method")).transpose()?;
        out.push(match (service.as_deref(), method.as_deref()) {
            (None | Some(""), _) => "*".to_owned(),
            (Some(s), None | Some("")) => format!("{s}/*"),
            (Some(s), Some(m)) => format!("{s}/{m}"),
        });
    }
    Ok(if out.is_empty() {
        "*".to_owned()
    } else {
        out.join(",")
    })
}

/// `maxAttempts`: required, > 1, clamped to 5 with a finding.
fn attempts(
    r: &Reader,
    m: &[(String, usize, Node)],
    line: usize,
    path: &str,
    t: &Translation,
    findings: &mut Vec<super::Finding>,
) -> Result<u32, CheckError> {
    let field = format!("{path}.maxAttempts");
    let node = get(m, "maxAttempts").ok_or_else(|| r.bad(line, &field, "required"))?;
    let n = r.int(node, &field, 2, i64::from(u32::MAX))?;
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    if n > MAX_ATTEMPTS_CLAMP {
        let mut f = finding(
            t,
            Severity::Warning,
            "clamped",
            "maxAttempts",
            format!(
                "maxAttempts {n} is treated as {MAX_ATTEMPTS_CLAMP} by gRPC (gRFC A6): the calls make at most {MAX_ATTEMPTS_CLAMP} attempts"
            ),
            format!(
                "write maxAttempts: {MAX_ATTEMPTS_CLAMP} (or fewer) so the file says what gRPC does"
            ),
        );
        f.line = node.line;
        findings.push(f);
    }
    Ok(n.min(MAX_ATTEMPTS_CLAMP))
}

fn codes(r: &Reader, node: &Node, field: &str) -> Result<Vec<String>, CheckError> {
    let mut out = Vec::new();
    for c in r.seq(node, field)? {
        let code = match &c.value {
            super::tree::Value::Int(i) => usize::try_from(*i)
                .ok()
                .and_then(|i| STATUS.get(i))
                .map(|s| (*s).to_owned()),
            _ => {
                let s = r.text(c, field)?.to_ascii_uppercase();
                STATUS.contains(&s.as_str()).then_some(s)
            }
        };
        out.push(code.ok_or_else(|| r.bad(c.line, field, "not a gRPC status code"))?);
    }
    if out.is_empty() {
        return Err(r.bad(node.line, field, "must not be empty"));
    }
    Ok(out)
}

/// A policy block of a method config (`retryPolicy`, `hedgingPolicy`): its entries, with the
/// keys outside `fields` listed as ignored and the lines of those set recorded in `t`.
fn block<'a>(
    r: &mut Reader,
    node: &'a Node,
    path: &str,
    fields: &[&'static str],
    t: &mut Translation,
) -> Result<&'a [(String, usize, Node)], CheckError> {
    let m = r.fields(node, path, fields)?;
    t.line = node.line;
    t.field_lines
        .extend(fields.iter().filter_map(|k| line_of(m, k).map(|l| (*k, l))));
    Ok(m)
}

/// `retryPolicy`'s fields (gRFC A6; `perAttemptRecvTimeout` from gRFC A76).
const RETRY_POLICY: [&str; 6] = [
    "maxAttempts",
    "initialBackoff",
    "maxBackoff",
    "backoffMultiplier",
    "retryableStatusCodes",
    "perAttemptRecvTimeout",
];

fn retry_policy(
    r: &mut Reader,
    (node, path): (&Node, &str),
    t: &mut Translation,
    findings: &mut Vec<super::Finding>,
) -> Result<(), CheckError> {
    let m = block(r, node, path, &RETRY_POLICY, t)?;
    t.max_attempts = Some(attempts(r, m, node.line, path, t, findings)?);
    let required = |key: &str| {
        get(m, key).ok_or_else(|| r.bad(node.line, &format!("{path}.{key}"), "required"))
    };
    let positive = |key: &str| -> Result<Duration, CheckError> {
        let field = format!("{path}.{key}");
        let d = r.duration(required(key)?, &field, Units::Proto)?;
        if d.is_zero() {
            return Err(r.bad(node.line, &field, "must be above 0"));
        }
        Ok(d)
    };
    let base = positive("initialBackoff")?;
    let cap = positive("maxBackoff")?;
    let multiplier = r.number(
        required("backoffMultiplier")?,
        &format!("{path}.backoffMultiplier"),
        0.0,
        1e6,
    )?;
    if multiplier <= 0.0 {
        return Err(r.bad(
            node.line,
            &format!("{path}.backoffMultiplier"),
            "must be above 0",
        ));
    }
    t.retry_on = codes(
        r,
        required("retryableStatusCodes")?,
        &format!("{path}.retryableStatusCodes"),
    )?;
    if let Some(n) = get(m, "perAttemptRecvTimeout") {
        t.per_try_timeout =
            Some(r.duration(n, &format!("{path}.perAttemptRecvTimeout"), Units::Proto)?);
    }
    // grpc-go stream.go: `cur := min(InitialBackoff·fact, MaxBackoff); cur *= 0.8 + 0.4·rand`.
    t.backoff = Backoff {
        rule: RuleName::GrpcRetry,
        base,
        cap: cap.max(base),
        multiplier,
        jitter: GRPC_RETRY_JITTER,
    };
    Ok(())
}

/// With [`GrpcRetries::Uniform`], the retry backoff as A6's original text draws it:
/// `U[0, min(b · m^(n−1), cap))`.
fn uniform_if(t: &mut Translation, retries: GrpcRetries) {
    if retries != GrpcRetries::Uniform {
        return;
    }
    let b = t.backoff;
    t.backoff = if b.multiplier == 2.0 {
        // grpc-go < 1.70 `stream.go`: `dur = time.Duration(grpcrand.Int63n(int64(cur)))`.
        Backoff {
            rule: RuleName::Full,
            jitter: 1.0,
            ..b
        }
    } else {
        // `grpc-retry` draws `c · 2u` with jitter 1: over half the base and cap, `U[0, c)`.
        let half = |d: Duration| (d / 2).max(Duration::from_nanos(1));
        Backoff {
            base: half(b.base),
            cap: half(b.cap),
            jitter: 1.0,
            ..b
        }
    };
}

fn hedging_policy(
    r: &mut Reader,
    (node, path): (&Node, &str),
    t: &mut Translation,
    findings: &mut Vec<super::Finding>,
) -> Result<(), CheckError> {
    let m = block(
        r,
        node,
        path,
        &["maxAttempts", "hedgingDelay", "nonFatalStatusCodes"],
        t,
    )?;
    let copies = attempts(r, m, node.line, path, t, findings)?;
    let delay = match get(m, "hedgingDelay") {
        Some(n) => r.duration(n, &format!("{path}.hedgingDelay"), Units::Proto)?,
        None => {
            t.defaults.push("hedgingDelay");
            Duration::ZERO
        }
    };
    if let Some(n) = get(m, "nonFatalStatusCodes") {
        t.retry_on = codes(r, n, &format!("{path}.nonFatalStatusCodes"))?;
    }
    t.max_attempts = Some(copies);
    t.hedging = Some(Hedging {
        max_attempts: copies,
        delay,
    });
    // Hedges go out on a timer, not after a failure: a constant pause of the hedging delay.
    t.backoff = Backoff {
        rule: if delay.is_zero() {
            RuleName::Immediate
        } else {
            RuleName::Constant
        },
        base: delay,
        cap: delay,
        multiplier: 1.0,
        jitter: 0.0,
    };
    Ok(())
}
