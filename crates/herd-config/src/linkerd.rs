//! Linkerd: `ServiceProfile` routes (`isRetryable`, `timeout`) under the profile's
//! `retryBudget`, and the 2.16+ `retry.linkerd.io/*` and `timeout.linkerd.io/*`
//! annotations on a `Service`, `HTTPRoute` or `GRPCRoute`.
//!
//! - `ServiceProfile`: retries are bounded by the budget, not by a count; the proxy retries
//!   at once, without backoff. Without `retryBudget` the destination controller sends
//!   `retryRatio` 0.2, `minRetriesPerSecond` 10, `ttl` 10 s (linkerd/linkerd2
//!   controller/api/destination/profile_translator.go, `defaultRetryBudget`). A route's
//!   `timeout` (covering its retries) defaults to 10 s (linkerd/website, reference
//!   "Service Profiles").
//! - Annotations (linkerd/website content/2.16/reference/retries.md): retries are on when
//!   `retry.linkerd.io/http` or `retry.linkerd.io/grpc` names conditions;
//!   `retry.linkerd.io/limit` retries (default 1), `retry.linkerd.io/timeout` per attempt;
//!   `timeout.linkerd.io/request` for the whole request. These retries have no budget; they
//!   cannot be combined with a `ServiceProfile`.
use std::time::Duration;

use herd::RuleName;

use super::istio::ignore_object;
use super::kube::{self, Object};
use super::tree::{Node, Reader, Units, Value, get, line_of};
use super::{Backoff, CheckError, System, Throttle, Translated, Translation};

/// profile_translator.go `defaultRetryBudget`.
const RETRY_RATIO: f64 = 0.2;
const MIN_RETRIES_PER_SECOND: f64 = 10.0;
const TTL: Duration = Duration::from_secs(10);
/// Service Profiles reference: a route's timeout "defaults to 10 seconds".
const ROUTE_TIMEOUT: Duration = Duration::from_secs(10);
/// retries.md: `retry.linkerd.io/limit` "defaults to 1".
const ANNOTATION_LIMIT: u32 = 1;

const RETRY_PREFIX: &str = "retry.linkerd.io/";
const TIMEOUT_PREFIX: &str = "timeout.linkerd.io/";

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let docs = kube::documents(r, text)?;
    let objects = kube::objects(r, &docs)?;
    let mut out = Translated::default();
    for o in &objects {
        if o.kind == "ServiceProfile" && o.api_version.starts_with("linkerd.io/") {
            service_profile(r, o, &mut out.configs)?;
        } else if let Some(t) = annotations(r, o)? {
            out.configs.push(t);
        } else {
            ignore_object(r, o);
        }
    }
    Ok(out)
}

fn translation(r: &Reader, line: usize, name: String) -> Translation {
    Translation {
        file: r.file.clone(),
        line,
        system: System::Linkerd,
        name,
        max_attempts: None,
        per_try_timeout: None,
        timeout: None,
        // The proxy retries at once: no backoff.
        backoff: Backoff {
            rule: RuleName::Immediate,
            base: Duration::ZERO,
            cap: Duration::ZERO,
            multiplier: 1.0,
            jitter: 0.0,
        },
        retry_on: Vec::new(),
        methods: Vec::new(),
        throttle: None,
        hedging: None,
        defaults: Vec::new(),
        field_lines: Vec::new(),
        generation: None,
    }
}

fn service_profile(
    r: &mut Reader,
    o: &Object<'_>,
    out: &mut Vec<Translation>,
) -> Result<(), CheckError> {
    let (s, sp) = kube::spec(
        r,
        o,
        &["routes", "retryBudget", "dstOverrides", "opaquePorts"],
    )?;
    let mut budget_defaults = Vec::new();
    let mut budget_line = None;
    let (ratio, min, ttl) = match get(s, "retryBudget") {
        None => {
            budget_defaults.push("retryBudget");
            (RETRY_RATIO, MIN_RETRIES_PER_SECOND, TTL)
        }
        Some(b) => {
            budget_line = Some(b.line);
            let bp = format!("{sp}.retryBudget");
            let bm = r.map(b, &bp)?;
            r.ignore_unknown(b, &bp, &["retryRatio", "minRetriesPerSecond", "ttl"]);
            let need =
                |k: &str| get(bm, k).ok_or_else(|| r.bad(b.line, &format!("{bp}.{k}"), "required"));
            (
                r.number(
                    need("retryRatio")?,
                    &format!("{bp}.retryRatio"),
                    0.0,
                    1000.0,
                )?,
                r.number(
                    need("minRetriesPerSecond")?,
                    &format!("{bp}.minRetriesPerSecond"),
                    0.0,
                    4_294_967_295.0,
                )?,
                r.duration(need("ttl")?, &format!("{bp}.ttl"), Units::Go)?,
            )
        }
    };
    let Some(routes) = get(s, "routes") else {
        return Ok(());
    };
    for (i, route) in r.seq(routes, &format!("{sp}.routes"))?.iter().enumerate() {
        let rp = format!("{sp}.routes[{i}]");
        let rm = r.map(route, &rp)?;
        r.ignore_unknown(
            route,
            &rp,
            &[
                "name",
                "condition",
                "responseClasses",
                "isRetryable",
                "timeout",
            ],
        );
        let retryable = match get(rm, "isRetryable") {
            Some(n) => r.boolean(n, &format!("{rp}.isRetryable"))?,
            None => false,
        };
        let name = match get(rm, "name") {
            Some(n) => format!("{}/{}", o.name, r.text(n, "name")?),
            None => format!("{}/routes[{i}]", o.name),
        };
        let mut t = translation(r, route.line, name);
        if let Some(l) = line_of(rm, "isRetryable") {
            t.field_lines.push(("isRetryable", l));
        }
        if let Some(l) = budget_line {
            t.field_lines.push(("retryBudget", l));
        }
        t.defaults.extend(budget_defaults.iter().copied());
        match get(rm, "timeout") {
            Some(n) => {
                t.timeout = Some(r.duration(n, &format!("{rp}.timeout"), Units::Go)?);
                t.field_lines.push(("timeout", n.line));
            }
            None => {
                t.timeout = Some(ROUTE_TIMEOUT);
                t.defaults.push("timeout");
            }
        }
        if let Some(Node {
            value: Value::Map(cond),
            ..
        }) = get(rm, "condition")
            && let Some(method) = get(cond, "method")
        {
            t.methods.push(r.text(method, "condition.method")?);
        }
        if retryable {
            t.retry_on.push("responseClasses isFailure".to_owned());
            t.throttle = Some(Throttle {
                kind: "ratio",
                params: vec![
                    ("retry_ratio", ratio),
                    ("min_retries_per_second", min),
                    ("ttl_s", ttl.as_secs_f64()),
                ],
            });
        } else {
            t.max_attempts = Some(1);
            t.throttle = None;
            t.defaults.retain(|d| *d != "retryBudget");
        }
        out.push(t);
    }
    Ok(())
}

/// A `Service` or route whose annotations configure retries or timeouts, if any.
fn annotations(r: &mut Reader, o: &Object<'_>) -> Result<Option<Translation>, CheckError> {
    let Value::Map(m) = &o.node.value else {
        return Ok(None);
    };
    let Some(Node {
        value: Value::Map(md),
        ..
    }) = get(m, "metadata")
    else {
        return Ok(None);
    };
    let Some(Node {
        value: Value::Map(ann),
        line: ann_line,
    }) = get(md, "annotations")
    else {
        return Ok(None);
    };
    let ours: Vec<_> = ann
        .iter()
        .filter(|(k, _, _)| k.starts_with(RETRY_PREFIX) || k.starts_with(TIMEOUT_PREFIX))
        .collect();
    if ours.is_empty() {
        return Ok(None);
    }
    let path = kube::at(&o.path, "metadata.annotations");
    let mut t = translation(r, *ann_line, format!("{} {}", o.kind, o.name));
    t.max_attempts = Some(1);
    let mut limit = None;
    for (key, line, node) in ours {
        let field = format!("{path}.{key}");
        t.field_lines.push((static_key(key), *line));
        match key.as_str() {
            "retry.linkerd.io/http" | "retry.linkerd.io/grpc" => {
                t.retry_on
                    .extend(super::envoy::split_list(&r.text(node, &field)?));
            }
            "retry.linkerd.io/limit" => {
                limit = Some(
                    u32::try_from(r.int(node, &field, 0, i64::from(u32::MAX - 1))?).unwrap_or(0),
                );
            }
            "retry.linkerd.io/timeout" => {
                t.per_try_timeout = Some(r.duration(node, &field, Units::Go)?)
            }
            "timeout.linkerd.io/request" => {
                t.timeout = Some(r.duration(node, &field, Units::Go)?)
            }
            "timeout.linkerd.io/response" | "timeout.linkerd.io/idle" => {
                r.duration(node, &field, Units::Go)?;
            }
            _ => r.ignored.push(super::Ignored {
                file: r.file.clone(),
                line: *line,
                field,
            }),
        }
    }
    if !t.retry_on.is_empty() {
        if limit.is_none() {
            t.defaults.push("retry.linkerd.io/limit");
        }
        t.max_attempts = Some(limit.unwrap_or(ANNOTATION_LIMIT) + 1);
    }
    Ok(Some(t))
}

fn static_key(key: &str) -> &'static str {
    [
        "retry.linkerd.io/http",
        "retry.linkerd.io/grpc",
        "retry.linkerd.io/limit",
        "retry.linkerd.io/timeout",
        "timeout.linkerd.io/request",
        "timeout.linkerd.io/response",
        "timeout.linkerd.io/idle",
    ]
    .into_iter()
    .find(|k| *k == key)
    .unwrap_or("annotations")
}
