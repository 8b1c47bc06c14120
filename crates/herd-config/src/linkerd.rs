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

use super::istio::ignore_object;
use super::kube::{self, Object};
use super::tree::{Node, Reader, Units, Value, get, line_of, str_of};
use super::{Backoff, CheckError, Throttle, Translated, Translation};

/// profile_translator.go `defaultRetryBudget`.
const RETRY_RATIO: f64 = 0.2;
const MIN_RETRIES_PER_SECOND: f64 = 10.0;
const TTL: Duration = Duration::from_secs(10);
/// Service Profiles reference: a route's timeout "defaults to 10 seconds".
const ROUTE_TIMEOUT: Duration = Duration::from_secs(10);
/// retries.md: `retry.linkerd.io/limit` "defaults to 1".
const ANNOTATION_LIMIT: u32 = 1;

/// What Linkerd does with a resource it cannot read.
const REJECTS: &str = "the API server rejects this resource (its CRD schema) or Linkerd's controller skips it, and its routes keep Linkerd's defaults";

const RETRY_PREFIX: &str = "retry.linkerd.io/";
const TIMEOUT_PREFIX: &str = "timeout.linkerd.io/";

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let docs = kube::documents(r, text)?;
    let objects = kube::objects(r, &docs)?;
    let mut out = Translated::default();
    for o in &objects {
        if o.kind == "ServiceProfile" && o.api_version.starts_with("linkerd.io/") {
            if let Err(e) = service_profile(r, o, &mut out.configs) {
                r.reject(e, REJECTS);
            }
        } else {
            match annotations(r, o) {
                Ok(Some(t)) => out.configs.push(t),
                Ok(None) => ignore_object(r, o),
                Err(e) => r.reject(e, REJECTS),
            }
        }
    }
    out.looked_at = format!(
        "{} object(s), no ServiceProfile route with isRetryable: true and no retry.linkerd.io annotation naming a condition",
        objects.len()
    );
    Ok(out)
}

/// A Linkerd policy: the proxy retries at once, without backoff.
fn translation(r: &Reader, line: usize, name: String) -> Translation {
    let mut t = r.translation(line, name, Backoff::IMMEDIATE);
    t.max_attempts = None;
    t
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
            let bm = r.fields(b, &bp, &["retryRatio", "minRetriesPerSecond", "ttl"])?;
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
        let rm = r.fields(
            route,
            &rp,
            &[
                "name",
                "condition",
                "responseClasses",
                "isRetryable",
                "timeout",
            ],
        )?;
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
        r.route_timeout(&mut t, (rm, &rp), Units::Go, (Some(ROUTE_TIMEOUT), false))?;
        if let Some(Node {
            value: Value::Map(cond),
            ..
        }) = get(rm, "condition")
            && let Some(method) = get(cond, "method")
            // Every gRPC call is a POST: the method says nothing about idempotency there.
            && !get(cond, "pathRegex").is_some_and(|p| matches!(&p.value, Value::Str(p) if grpc_path(p)))
        {
            let method = r.text(method, "condition.method")?;
            // A gRPC call is always a POST: a route on `/package.Service/Method` (what
            // `linkerd profile --proto` writes) is a gRPC method, whose idempotence the
            // method, not the verb, decides.
            let grpc = method.eq_ignore_ascii_case("POST")
                && str_of(get(cond, "pathRegex")).is_some_and(is_grpc_path);
            if !grpc {
                t.methods.push(method);
            }
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
    // Other annotations that look like retry settings (a proxy's connect timeout) are not
    // read: listed.
    for (key, line, _) in ann {
        if !(key.starts_with(RETRY_PREFIX) || key.starts_with(TIMEOUT_PREFIX))
            && super::tree::looks_like_retry(key)
        {
            r.ignore(
                *line,
                kube::at(&o.path, &format!("metadata.annotations.{key}")),
            );
        }
    }
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

/// `/emojivoto\.v1\.EmojiService/ListAll`: a service name with a dot, then one method name.
fn is_grpc_path(regex: &str) -> bool {
    let path = regex.replace("\\.", ".");
    let Some((service, method)) = path
        .trim_start_matches('^')
        .trim_start_matches('/')
        .split_once('/')
    else {
        return false;
    };
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    service.contains('.') && service.split('.').all(word) && word(method.trim_end_matches('$'))
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

/// A route of a gRPC method, as `linkerd profile --proto` writes it:
/// `/emojivoto\.v1\.EmojiService/ListAll` (a dotted service, then the method).
fn grpc_path(path_regex: &str) -> bool {
    let unescaped = path_regex.replace("\\.", ".");
    let mut parts = unescaped
        .trim_start_matches('^')
        .trim_end_matches('$')
        .split('/');
    let word = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    matches!(
        (parts.next(), parts.next(), parts.next(), parts.next()),
        (Some(""), Some(service), Some(method), None)
            if service.contains('.') && service.split('.').all(word) && word(method)
    )
}
