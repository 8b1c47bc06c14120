//! Envoy (YAML or JSON): every `virtual_hosts[].routes[]` found anywhere in the file (a
//! `RouteConfiguration`, a listener's `route_config`, a bootstrap's `static_resources`), with
//! its `retry_policy` (a route's replaces its virtual host's), its `timeout`, and the
//! circuit breakers of the cluster it routes to.
//!
//! Defaults, from Envoy's own definitions:
//! - `num_retries` 1 (api/envoy/config/route/v3/route_components.proto, `RetryPolicy`);
//! - `retry_back_off.base_interval` 25 ms (source/common/router/retry_state_impl.cc,
//!   runtime `upstream.base_retry_backoff_ms`), `max_interval` 10 × base
//!   (route_components.proto, `RetryBackOff.max_interval`);
//! - retry n waits `random() % min(base · 2^(n−1), max)` milliseconds
//!   (source/common/common/backoff_strategy.cc, `JitteredExponentialBackOffStrategy`): herd's
//!   `full` rule. The docs still say `[0, (2^N − 1) · base)`, the formula of Envoy before
//!   1.15; the code wins;
//! - route `timeout` 15 s, `0s` disables it; `per_try_timeout` unset means the route timeout
//!   (route_components.proto, `RouteAction.timeout`, `RetryPolicy.per_try_timeout`);
//! - the cluster's `circuit_breakers` `max_retries` 3, or a `retry_budget` with
//!   `budget_percent` 20 and `min_retry_concurrency` 3
//!   (api/envoy/config/cluster/v3/circuit_breaker.proto).
use std::time::Duration;

use herd::RuleName;

use super::tree::{Node, Reader, Units, Value, get, line_of, load_json, load_yaml};
use super::{Backoff, CheckError, System, Throttle, Translated, Translation};

/// route_components.proto `RetryPolicy.num_retries`: "defaults to 1".
const NUM_RETRIES: u32 = 1;
/// retry_state_impl.cc: `upstream.base_retry_backoff_ms`, 25 ms.
const BASE_INTERVAL: Duration = Duration::from_millis(25);
/// route_components.proto `RetryBackOff.max_interval`: "default is 10 times the base_interval".
const MAX_INTERVAL_TIMES_BASE: u32 = 10;
/// route_components.proto `RouteAction.timeout`: "defaults to 15 seconds".
const ROUTE_TIMEOUT: Duration = Duration::from_secs(15);
/// circuit_breaker.proto `Thresholds.max_retries`: "defaults to 3".
const MAX_RETRIES: f64 = 3.0;
/// circuit_breaker.proto `RetryBudget.budget_percent`: "defaults to 20%".
const BUDGET_PERCENT: f64 = 20.0;
/// circuit_breaker.proto `RetryBudget.min_retry_concurrency`: "defaults to 3".
const MIN_RETRY_CONCURRENCY: f64 = 3.0;

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let docs = if text.trim_start().starts_with('{') {
        vec![load_json(&r.file, text)?]
    } else {
        load_yaml(&r.file, text)?
    };
    let mut clusters = Vec::new();
    let mut vhosts = Vec::new();
    for doc in &docs {
        collect(doc, "", &mut clusters, &mut vhosts);
    }
    let mut throttles = Vec::new();
    for (path, node) in clusters {
        throttles.push(cluster(r, node, &path)?);
    }
    let mut out = Translated::default();
    for (path, vh) in vhosts {
        virtual_host(r, vh, &path, &throttles, &mut out.configs)?;
    }
    Ok(out)
}

/// Finds `clusters[]` and `virtual_hosts[]` anywhere in the tree.
fn collect<'a>(
    node: &'a Node,
    path: &str,
    clusters: &mut Vec<(String, &'a Node)>,
    vhosts: &mut Vec<(String, &'a Node)>,
) {
    match &node.value {
        Value::Map(entries) => {
            for (key, _, child) in entries {
                let p = super::tree::join(path, key);
                match (key.as_str(), &child.value) {
                    ("clusters", Value::Seq(items)) => clusters.extend(
                        items
                            .iter()
                            .enumerate()
                            .map(|(i, c)| (format!("{p}[{i}]"), c)),
                    ),
                    ("virtual_hosts", Value::Seq(items)) => vhosts.extend(
                        items
                            .iter()
                            .enumerate()
                            .map(|(i, v)| (format!("{p}[{i}]"), v)),
                    ),
                    _ => collect(child, &p, clusters, vhosts),
                }
            }
        }
        Value::Seq(items) => {
            for (i, child) in items.iter().enumerate() {
                collect(child, &format!("{path}[{i}]"), clusters, vhosts);
            }
        }
        _ => {}
    }
}

/// A cluster's name and the throttle its circuit breakers (DEFAULT priority) put on retries.
fn cluster(
    r: &mut Reader,
    node: &Node,
    path: &str,
) -> Result<(String, Throttle, bool), CheckError> {
    let m = r.map(node, path)?;
    let name = get(m, "name")
        .map(|n| r.text(n, &format!("{path}.name")))
        .transpose()?;
    let mut throttle = Throttle {
        kind: "envoy-max-retries",
        params: vec![("max_retries", MAX_RETRIES)],
    };
    let mut set = false;
    if let Some(cb) = get(m, "circuit_breakers") {
        let cbp = format!("{path}.circuit_breakers");
        let cbm = r.map(cb, &cbp)?;
        r.ignore_unknown(cb, &cbp, &["thresholds", "per_host_thresholds"]);
        for (i, th) in get(cbm, "thresholds")
            .map(|t| r.seq(t, &format!("{cbp}.thresholds")))
            .transpose()?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let tp = format!("{cbp}.thresholds[{i}]");
            let tm = r.map(th, &tp)?;
            r.ignore_unknown(
                th,
                &tp,
                &[
                    "priority",
                    "max_connections",
                    "max_pending_requests",
                    "max_requests",
                    "max_retries",
                    "retry_budget",
                    "track_remaining",
                    "max_connection_pools",
                ],
            );
            let priority = get(tm, "priority")
                .map(|p| r.text(p, &format!("{tp}.priority")))
                .transpose()?;
            if priority.as_deref().is_some_and(|p| p != "DEFAULT") {
                continue;
            }
            if let Some(budget) = get(tm, "retry_budget") {
                let bp = format!("{tp}.retry_budget");
                let bm = r.map(budget, &bp)?;
                r.ignore_unknown(budget, &bp, &["budget_percent", "min_retry_concurrency"]);
                let percent = match get(bm, "budget_percent") {
                    Some(p) => wrapped(r, p, &format!("{bp}.budget_percent"), 0.0, 100.0)?,
                    None => BUDGET_PERCENT,
                };
                let min = match get(bm, "min_retry_concurrency") {
                    Some(p) => wrapped(
                        r,
                        p,
                        &format!("{bp}.min_retry_concurrency"),
                        0.0,
                        4_294_967_295.0,
                    )?,
                    None => MIN_RETRY_CONCURRENCY,
                };
                throttle = Throttle {
                    kind: "envoy-budget",
                    params: vec![("budget_percent", percent), ("min_retry_concurrency", min)],
                };
                set = true;
            } else if let Some(mr) = get(tm, "max_retries") {
                throttle.params = vec![(
                    "max_retries",
                    wrapped(r, mr, &format!("{tp}.max_retries"), 0.0, 4_294_967_295.0)?,
                )];
                set = true;
            }
        }
    }
    Ok((name.unwrap_or_default(), throttle, set))
}

/// A protobuf wrapper (`{value: 20}`) or a bare number.
fn wrapped(r: &Reader, node: &Node, field: &str, lo: f64, hi: f64) -> Result<f64, CheckError> {
    match &node.value {
        Value::Map(entries) => match get(entries, "value") {
            Some(v) => r.number(v, field, lo, hi),
            None => Err(r.bad(node.line, field, "expected {value: N}")),
        },
        _ => r.number(node, field, lo, hi),
    }
}

fn virtual_host(
    r: &mut Reader,
    node: &Node,
    path: &str,
    clusters: &[(String, Throttle, bool)],
    out: &mut Vec<Translation>,
) -> Result<(), CheckError> {
    let m = r.map(node, path)?;
    r.ignore_unknown(
        node,
        path,
        &[
            "name",
            "domains",
            "routes",
            "retry_policy",
            "require_tls",
            "request_headers_to_add",
            "response_headers_to_add",
            "typed_per_filter_config",
            "cors",
        ],
    );
    let vh_name = get(m, "name")
        .map(|n| r.text(n, "name"))
        .transpose()?
        .unwrap_or_default();
    let vh_policy = get(m, "retry_policy");
    let Some(routes) = get(m, "routes") else {
        return Ok(());
    };
    for (i, route) in r.seq(routes, &format!("{path}.routes"))?.iter().enumerate() {
        let rp = format!("{path}.routes[{i}]");
        let rm = r.map(route, &rp)?;
        r.ignore_unknown(
            route,
            &rp,
            &[
                "name",
                "match",
                "route",
                "redirect",
                "direct_response",
                "decorator",
                "request_headers_to_add",
                "response_headers_to_add",
                "typed_per_filter_config",
            ],
        );
        let Some(action) = get(rm, "route") else {
            continue;
        };
        let ap = format!("{rp}.route");
        let am = r.map(action, &ap)?;
        r.ignore_unknown(
            action,
            &ap,
            &[
                "cluster",
                "weighted_clusters",
                "cluster_header",
                "timeout",
                "idle_timeout",
                "retry_policy",
                "prefix_rewrite",
                "regex_rewrite",
                "host_rewrite_literal",
                "auto_host_rewrite",
                "hash_policy",
                "max_stream_duration",
            ],
        );
        let (policy, policy_path) = match get(am, "retry_policy") {
            Some(p) => (p, format!("{ap}.retry_policy")),
            None => match vh_policy {
                Some(p) => (p, format!("{path}.retry_policy")),
                None => continue,
            },
        };
        let name = get(rm, "name")
            .map(|n| r.text(n, "name"))
            .transpose()?
            .unwrap_or_else(|| format!("{vh_name}/routes[{i}]"));
        let mut t = retry_policy(r, policy, &policy_path, name)?;
        match get(am, "timeout") {
            Some(n) => {
                let d = r.duration(n, &format!("{ap}.timeout"), Units::Proto)?;
                t.timeout = (!d.is_zero()).then_some(d);
                t.field_lines.push(("timeout", n.line));
            }
            None => {
                t.timeout = Some(ROUTE_TIMEOUT);
                t.defaults.push("timeout");
            }
        }
        t.methods = methods(get(rm, "match"));
        let cluster_name = get(am, "cluster")
            .map(|c| r.text(c, "cluster"))
            .transpose()?;
        match clusters
            .iter()
            .find(|(n, _, _)| Some(n) == cluster_name.as_ref())
        {
            Some((_, throttle, set)) => {
                t.throttle = Some(throttle.clone());
                if !set {
                    t.defaults.push("circuit_breakers.max_retries");
                }
            }
            None => {
                t.throttle = Some(Throttle {
                    kind: "envoy-max-retries",
                    params: vec![("max_retries", MAX_RETRIES)],
                });
                t.defaults.push("circuit_breakers.max_retries");
            }
        }
        out.push(t);
    }
    Ok(())
}

/// `:method` header matches of a route's `match`.
fn methods(m: Option<&Node>) -> Vec<String> {
    let Some(Node {
        value: Value::Map(entries),
        ..
    }) = m
    else {
        return Vec::new();
    };
    let Some(Node {
        value: Value::Seq(headers),
        ..
    }) = get(entries, "headers")
    else {
        return Vec::new();
    };
    headers
        .iter()
        .filter_map(|h| match &h.value {
            Value::Map(e) if matches!(get(e, "name"), Some(Node { value: Value::Str(n), .. }) if n == ":method") => {
                ["exact_match", "string_match"].iter().find_map(|k| match get(e, k) {
                    Some(Node { value: Value::Str(s), .. }) => Some(s.clone()),
                    Some(Node { value: Value::Map(sm), .. }) => match get(sm, "exact") {
                        Some(Node { value: Value::Str(s), .. }) => Some(s.clone()),
                        _ => None,
                    },
                    _ => None,
                })
            }
            _ => None,
        })
        .collect()
}

/// One `retry_policy` with Envoy's defaults.
pub(crate) fn retry_policy(
    r: &mut Reader,
    node: &Node,
    path: &str,
    name: String,
) -> Result<Translation, CheckError> {
    let m = r.map(node, path)?;
    r.ignore_unknown(
        node,
        path,
        &[
            "retry_on",
            "num_retries",
            "per_try_timeout",
            "per_try_idle_timeout",
            "retriable_status_codes",
            "retry_back_off",
            "rate_limited_retry_back_off",
            "retry_host_predicate",
            "host_selection_retry_max_attempts",
            "retriable_headers",
            "retriable_request_headers",
            "retry_priority",
        ],
    );
    let mut t = Translation {
        file: r.file.clone(),
        line: node.line,
        system: System::Envoy,
        name,
        max_attempts: Some(NUM_RETRIES + 1),
        per_try_timeout: None,
        timeout: None,
        backoff: Backoff {
            rule: RuleName::Full,
            base: BASE_INTERVAL,
            cap: BASE_INTERVAL * MAX_INTERVAL_TIMES_BASE,
            multiplier: 2.0,
            jitter: 1.0,
        },
        retry_on: Vec::new(),
        methods: Vec::new(),
        throttle: None,
        hedging: None,
        defaults: Vec::new(),
        field_lines: Vec::new(),
        generation: None,
    };
    for key in [
        "retry_on",
        "num_retries",
        "per_try_timeout",
        "retriable_status_codes",
        "retry_back_off",
    ] {
        if let Some(l) = line_of(m, key) {
            t.field_lines.push((key, l));
        }
    }
    match get(m, "num_retries") {
        Some(n) => {
            let v = wrapped(r, n, &format!("{path}.num_retries"), 0.0, 4_294_967_294.0)?;
            t.max_attempts = Some(v as u32 + 1);
        }
        None => t.defaults.push("num_retries"),
    }
    if let Some(n) = get(m, "retry_on") {
        t.retry_on = split_list(&r.text(n, &format!("{path}.retry_on"))?);
    }
    if t.retry_on.is_empty() {
        // No condition, no retry: only a request's own `x-envoy-retry-on` header could name
        // one (source/common/router/retry_state_impl.cc, `RetryStateImpl::create`).
        t.defaults.push("retry_on");
        t.max_attempts = Some(1);
    }
    if let Some(n) = get(m, "retriable_status_codes") {
        for c in r.seq(n, &format!("{path}.retriable_status_codes"))? {
            let code = r.int(c, &format!("{path}.retriable_status_codes"), 100, 599)?;
            t.retry_on.push(code.to_string());
        }
    }
    match get(m, "per_try_timeout") {
        Some(n) => {
            let d = r.duration(n, &format!("{path}.per_try_timeout"), Units::Proto)?;
            t.per_try_timeout = (!d.is_zero()).then_some(d);
        }
        None => t.defaults.push("per_try_timeout"),
    }
    match get(m, "retry_back_off") {
        Some(b) => {
            let bp = format!("{path}.retry_back_off");
            let bm = r.map(b, &bp)?;
            r.ignore_unknown(b, &bp, &["base_interval", "max_interval"]);
            let base = get(bm, "base_interval")
                .ok_or_else(|| r.bad(b.line, &format!("{bp}.base_interval"), "required"))?;
            let base = r.duration(base, &format!("{bp}.base_interval"), Units::Proto)?;
            if base.is_zero() {
                return Err(r.bad(b.line, &format!("{bp}.base_interval"), "must be above 0"));
            }
            let cap = match get(bm, "max_interval") {
                Some(c) => {
                    let cap = r.duration(c, &format!("{bp}.max_interval"), Units::Proto)?;
                    if cap < base {
                        return Err(r.bad(
                            c.line,
                            &format!("{bp}.max_interval"),
                            "must be at least base_interval",
                        ));
                    }
                    cap
                }
                None => {
                    t.defaults.push("retry_back_off.max_interval");
                    base * MAX_INTERVAL_TIMES_BASE
                }
            };
            t.backoff.base = base;
            t.backoff.cap = cap;
        }
        None => t.defaults.extend([
            "retry_back_off.base_interval",
            "retry_back_off.max_interval",
        ]),
    }
    Ok(t)
}

/// `a, b,c` as `[a, b, c]`.
pub(crate) fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}
