//! Envoy (YAML or JSON): every `virtual_hosts[].routes[]` found anywhere in the file (a
//! `RouteConfiguration` or a list of them, a listener's `route_config`, a bootstrap's
//! `static_resources`, an admin or xDS dump's `configs[].dynamic_route_configs[].route_config`
//! inside `@type` wrappers, `istioctl proxy-config routes -o json`), with its `retry_policy` (a
//! route's replaces its virtual host's), its `timeout`, and the circuit breakers of the cluster
//! it routes to (any object in the file with `name` and `circuit_breakers`: a bootstrap's
//! `clusters`, a dump's `dynamic_active_clusters[].cluster`, a list of clusters).
//!
//! Field names are read in both protobuf JSON spellings, as Envoy's loader takes them
//! (source/common/protobuf/utility.cc, `MessageUtil::loadFromJson` through protobuf's
//! `JsonStringToMessage`, which accepts a field's lowerCamelCase `json_name` and its original
//! name): `retryPolicy` and `retry_policy`, `numRetries` and `num_retries`. Control planes
//! (Envoy Gateway, Kuma, ESPv2) emit the first, Envoy's own examples the second.
//!
//! One route, virtual host or cluster that Envoy would reject is an `invalid-entry` finding;
//! the others are read.
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
use std::collections::HashMap;
use std::time::Duration;

use herd::RuleName;

use super::tree::{
    Node, Reader, Units, Value, get, line_of, load_json, load_yaml, looks_like_retry, map_of,
    str_of, to_proto_field_names,
};
use super::{Backoff, CheckError, Throttle, Translated, Translation};

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

/// The fields of a `VirtualHost` besides [`HEADERS_AND_FILTERS`].
const VIRTUAL_HOST: [&str; 9] = [
    "name",
    "domains",
    "routes",
    "retry_policy",
    "require_tls",
    "cors",
    "virtual_clusters",
    "rate_limits",
    "metadata",
];

/// The fields of a `Route` besides [`HEADERS_AND_FILTERS`].
const ROUTE: [&str; 7] = [
    "name",
    "match",
    "route",
    "redirect",
    "direct_response",
    "decorator",
    "metadata",
];

/// Fields a virtual host and a route share, none about retries.
const HEADERS_AND_FILTERS: [&str; 5] = [
    "request_headers_to_add",
    "response_headers_to_add",
    "request_headers_to_remove",
    "response_headers_to_remove",
    "typed_per_filter_config",
];

/// The fields of a `RetryPolicy` that herd reads.
const RETRY_POLICY: [&str; 5] = [
    "retry_on",
    "num_retries",
    "per_try_timeout",
    "retriable_status_codes",
    "retry_back_off",
];

/// Each cluster's throttle on retries, by name, and whether its circuit breakers set it.
type Clusters = HashMap<String, (Throttle, bool)>;

/// What Envoy does with a configuration holding an entry it cannot load.
const REJECTS: &str = "Envoy rejects the whole resource that holds it (the route table, listener or bootstrap) when it is loaded";

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let trimmed = text.trim_start();
    let mut docs = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        vec![load_json(&r.file, text)?]
    } else {
        load_yaml(&r.file, text)?
    };
    docs.iter_mut().for_each(to_proto_field_names);
    let mut clusters = Vec::new();
    let mut vhosts = Vec::new();
    for doc in &docs {
        collect(r, doc, "", &mut clusters, &mut vhosts);
    }
    let mut throttles = Clusters::new();
    for (path, node) in clusters {
        match cluster(r, node, &path) {
            // The first cluster of a name is the one a route reaches.
            Ok((name, throttle, set)) => {
                throttles.entry(name).or_insert((throttle, set));
            }
            Err(e) => r.reject(e, REJECTS),
        }
    }
    let mut out = Translated::default();
    let mut routes = 0;
    for (path, vh) in &vhosts {
        routes += virtual_host(r, vh, path, &throttles, &mut out.configs);
    }
    out.looked_at = format!(
        "{} virtual host(s) with {routes} route(s) and {} cluster(s) with circuit breakers; no route has a retry_policy (on the route or its virtual host) that retries, and Envoy retries only when one does or a request's x-envoy-retry-on header asks",
        vhosts.len(),
        throttles.len()
    );
    Ok(out)
}

/// Finds, anywhere in the tree, every `virtual_hosts[]` and every cluster with circuit
/// breakers (an object with `circuit_breakers`); any other key that looks like retry
/// configuration (a cluster's `connect_timeout`, a connection manager's `request_timeout`) is
/// listed as ignored.
fn collect<'a>(
    r: &mut Reader,
    node: &'a Node,
    path: &str,
    clusters: &mut Vec<(String, &'a Node)>,
    vhosts: &mut Vec<(String, &'a Node)>,
) {
    match &node.value {
        Value::Map(entries) => {
            if get(entries, "circuit_breakers").is_some() {
                clusters.push((path.to_owned(), node));
            }
            for (key, line, child) in entries {
                let p = super::tree::join(path, key);
                match (key.as_str(), &child.value) {
                    ("virtual_hosts", Value::Seq(items)) => vhosts.extend(
                        items
                            .iter()
                            .enumerate()
                            .map(|(i, v)| (format!("{p}[{i}]"), v)),
                    ),
                    // Read by `cluster`.
                    ("circuit_breakers", _) => {}
                    (k, _) if looks_like_retry(k) => r.ignore(*line, p),
                    _ => collect(r, child, &p, clusters, vhosts),
                }
            }
        }
        Value::Seq(items) => {
            for (i, child) in items.iter().enumerate() {
                collect(r, child, &format!("{path}[{i}]"), clusters, vhosts);
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
        let cbm = r.fields(cb, &cbp, &["thresholds", "per_host_thresholds"])?;
        for (i, th) in get(cbm, "thresholds")
            .map(|t| r.seq(t, &format!("{cbp}.thresholds")))
            .transpose()?
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let tp = format!("{cbp}.thresholds[{i}]");
            let tm = r.fields(
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
            )?;
            let priority = get(tm, "priority")
                .map(|p| r.text(p, &format!("{tp}.priority")))
                .transpose()?;
            if priority.as_deref().is_some_and(|p| p != "DEFAULT") {
                continue;
            }
            if let Some(budget) = get(tm, "retry_budget") {
                let bp = format!("{tp}.retry_budget");
                let bm = r.fields(budget, &bp, &["budget_percent", "min_retry_concurrency"])?;
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

/// The routes of one virtual host, each translated or, if Envoy would reject it, a finding;
/// returns how many routes it has.
fn virtual_host(
    r: &mut Reader,
    node: &Node,
    path: &str,
    clusters: &Clusters,
    out: &mut Vec<Translation>,
) -> usize {
    let Some(m) = map_of(Some(node)) else {
        r.reject(r.bad(node.line, path, "expected a mapping"), REJECTS);
        return 0;
    };
    r.ignore_unknown(
        node,
        path,
        &[&VIRTUAL_HOST[..], &HEADERS_AND_FILTERS].concat(),
    );
    let vh_name = str_of(get(m, "name")).unwrap_or_default().to_owned();
    let vh_policy = get(m, "retry_policy").map(|p| (p, format!("{path}.retry_policy")));
    let Some(routes) = get(m, "routes") else {
        return 0;
    };
    let routes = r.entries(routes, &format!("{path}.routes"), REJECTS);
    for (i, route) in routes.iter().enumerate() {
        let rp = format!("{path}.routes[{i}]");
        let t = self::route(r, route, &rp, &vh_name, i, vh_policy.as_ref(), clusters);
        if let Some(t) = t.transpose() {
            r.keep(t, out, REJECTS);
        }
    }
    routes.len()
}

/// One route with the retry policy that applies to it (its own, else its virtual host's).
fn route(
    r: &mut Reader,
    route: &Node,
    rp: &str,
    vh_name: &str,
    i: usize,
    vh_policy: Option<&(&Node, String)>,
    clusters: &Clusters,
) -> Result<Option<Translation>, CheckError> {
    let rm = r.fields(route, rp, &[&ROUTE[..], &HEADERS_AND_FILTERS].concat())?;
    let Some(action) = get(rm, "route") else {
        return Ok(None);
    };
    let ap = format!("{rp}.route");
    let am = r.fields_unread(
        action,
        &ap,
        &[
            "cluster",
            "weighted_clusters",
            "cluster_header",
            "cluster_specifier_plugin",
            "timeout",
            "retry_policy",
            "prefix_rewrite",
            "regex_rewrite",
            "path_rewrite_policy",
            "host_rewrite_literal",
            "host_rewrite_header",
            "auto_host_rewrite",
            "hash_policy",
            "upgrade_configs",
            "request_mirror_policies",
            "priority",
            "rate_limits",
            "cors",
        ],
        &[
            "idle_timeout",
            "max_stream_duration",
            "max_grpc_timeout",
            "grpc_timeout_offset",
            "retry_policy_typed_config",
            "hedge_policy",
            "internal_redirect_policy",
        ],
    )?;
    let (policy, policy_path) = match get(am, "retry_policy") {
        Some(p) => (p, format!("{ap}.retry_policy")),
        None => match vh_policy {
            Some((p, path)) => (*p, path.clone()),
            None => return Ok(None),
        },
    };
    let name = match get(rm, "name") {
        Some(n) => r.text(n, "name")?,
        None => format!("{vh_name}/routes[{i}]"),
    };
    let mut t = retry_policy(r, policy, &policy_path, name)?;
    r.route_timeout(&mut t, (am, &ap), Units::Proto, (Some(ROUTE_TIMEOUT), true))?;
    t.methods = methods(get(rm, "match"));
    let cluster_name = str_of(get(am, "cluster"));
    match cluster_name.and_then(|n| clusters.get(n)) {
        Some((throttle, set)) => {
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
    if t.max_attempts == Some(1) && !t.defaults.contains(&"retry_on") {
        r.note(
            t.line_of("num_retries"),
            format!(
                "route {}: num_retries 0, retries disabled (not counted as a retry policy)",
                t.name
            ),
        );
    }
    Ok(Some(t))
}

/// `:method` header matches of a route's `match`.
fn methods(m: Option<&Node>) -> Vec<String> {
    let Some(Value::Seq(headers)) = map_of(m).and_then(|e| get(e, "headers")).map(|h| &h.value)
    else {
        return Vec::new();
    };
    headers
        .iter()
        .filter_map(|h| {
            let e = map_of(Some(h))?;
            if str_of(get(e, "name")) != Some(":method") {
                return None;
            }
            str_of(get(e, "exact_match"))
                .or_else(|| str_of(get(e, "string_match")))
                .or_else(|| str_of(map_of(get(e, "string_match")).and_then(|sm| get(sm, "exact"))))
                .map(str::to_owned)
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
    let m = r.fields_unread(
        node,
        path,
        &RETRY_POLICY,
        &[
            "per_try_idle_timeout",
            "rate_limited_retry_back_off",
            "retry_host_predicate",
            "host_selection_retry_max_attempts",
            "retriable_headers",
            "retriable_request_headers",
            "retry_priority",
            "retry_options_predicates",
        ],
    )?;
    let mut t = r.translation(
        node.line,
        name,
        Backoff {
            rule: RuleName::Full,
            base: BASE_INTERVAL,
            cap: BASE_INTERVAL * MAX_INTERVAL_TIMES_BASE,
            multiplier: 2.0,
            jitter: 1.0,
        },
    );
    t.max_attempts = Some(NUM_RETRIES + 1);
    for key in RETRY_POLICY {
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
            let bm = r.fields(b, &bp, &["base_interval", "max_interval"])?;
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
