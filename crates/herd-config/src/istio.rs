//! Istio: `VirtualService` `spec.http[]` (`retries`, `timeout`, `match`, `route`) and
//! `DestinationRule` `trafficPolicy.connectionPool.http.maxRetries`, in any number of
//! documents or a `kind: List`.
//!
//! Read as istiod translates them to Envoy:
//! - no `retries` block: istio/istio pilot/pkg/networking/core/route/retry/retry.go
//!   `DefaultPolicy()`: 2 retries on `connect-failure,refused-stream,unavailable,cancelled,
//!   retriable-status-codes` with no status code listed (so a plain HTTP 503 is *not*
//!   retried by default, although the docs have said so; the code wins);
//! - `attempts: 0` (or below) disables retries (`ConvertPolicy`); numbers in `retryOn` become
//!   retriable status codes and add `retriable-status-codes`;
//! - `retries.backoff` sets Envoy's `base_interval` (max 10 × base, Envoy's default); without
//!   it Envoy's 25 ms / 250 ms apply (see the Envoy translator);
//! - no `timeout`: no route timeout at all (pilot/pkg/networking/core/route/route.go sets
//!   `0s`, disabling Envoy's 15 s);
//! - `connectionPool.http.maxRetries` unset or 0: 2³² − 1 concurrent retries
//!   (pilot/pkg/networking/core/cluster_traffic_policy.go,
//!   `getDefaultCircuitBreakerThresholds`: `MaxRetries: math.MaxUint32`; `applyConnectionPool`
//!   copies `maxRetries` only `if settings.Http.MaxRetries > 0`), lifting Envoy's 3;
//! - a `DestinationRule` with no `VirtualService` route to its host in the file still governs
//!   retries: every route to that host, including those istiod builds without any
//!   `VirtualService`, carries retry.go's default policy (2 retries), bounded by the rule's
//!   `maxRetries`. herd translates it as such a route.
//!
//! One route or rule that istiod would reject is an `invalid-entry` finding and the others are
//! read (`istioctl analyze` reports per resource too). `retries` misspelt (`retrys`) is a
//! `misspelt-key` warning: the Kubernetes API server prunes an unknown field of the CRD and the
//! route silently gets the default policy.
use std::collections::{HashMap, HashSet};
use std::time::Duration;

use herd::RuleName;

use super::kube::{self, Object};
use super::tree::{Node, Reader, Units, Value, get, line_of, map_of, str_of};
use super::{Backoff, CheckError, Throttle, Translated, Translation};

/// retry.go `defaultPolicy()`: `NumRetries: 2`.
const DEFAULT_RETRIES: u32 = 2;
/// retry.go `defaultPolicy()`: `RetryOn`.
const DEFAULT_RETRY_ON: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";
/// cluster_traffic_policy.go: `MaxRetries: math.MaxUint32`.
pub(crate) const DEFAULT_MAX_RETRIES: f64 = 4_294_967_295.0;
/// Envoy's `base_interval` (source/common/router/retry_state_impl.cc).
const ENVOY_BASE: Duration = Duration::from_millis(25);

/// Kinds of the `networking.istio.io` group that carry no retries.
const OTHER_KINDS: [&str; 7] = [
    "Gateway",
    "ServiceEntry",
    "Sidecar",
    "EnvoyFilter",
    "WorkloadEntry",
    "WorkloadGroup",
    "ProxyConfig",
];

/// The fields of a VirtualService's `HTTPRoute`.
const HTTP_ROUTE: [&str; 17] = [
    "name",
    "match",
    "route",
    "redirect",
    "directResponse",
    "delegate",
    "rewrite",
    "timeout",
    "retries",
    "fault",
    "mirror",
    "mirrors",
    "mirrorPercentage",
    "mirror_percent",
    "mirrorPercent",
    "corsPolicy",
    "headers",
];

/// What istiod does with a resource it cannot translate.
const REJECTS: &str = "the API server or istiod rejects this resource (istioctl analyze reports it) and its routes keep Istio's defaults";

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let docs = kube::documents(r, text)?;
    let objects = kube::objects(r, &docs)?;
    let mut limits = Vec::new();
    for o in &objects {
        if is_istio(o) && o.kind == "DestinationRule" {
            match destination_rule(r, o) {
                Ok(limit) => limits.push(limit),
                Err(e) => r.reject(e, REJECTS),
            }
        }
    }
    let mut by_host = Limits::new();
    for limit in &limits {
        by_host.entry(short(&limit.host)).or_insert(limit);
    }
    let mut out = Translated::default();
    let mut routes = 0;
    let mut routed = HashSet::new();
    for o in &objects {
        if !is_istio(o) {
            ignore_object(r, o);
            continue;
        }
        match o.kind.as_str() {
            "VirtualService" => {
                routes += virtual_service(r, o, &by_host, &mut out.configs, &mut routed);
            }
            "DestinationRule" => {}
            k if OTHER_KINDS.contains(&k) => ignore_object(r, o),
            k => r.reject(
                r.bad(
                    o.node.line,
                    &kube::at(&o.path, "kind"),
                    format!("unknown kind {k} in networking.istio.io (expected VirtualService or DestinationRule)"),
                ),
                REJECTS,
            ),
        }
    }
    // A rule whose host no route of the file reaches: the default policy of every route to it.
    for limit in &limits {
        if !routed.contains(short(&limit.host)) {
            out.configs.push(rule_alone(r, limit));
        }
    }
    out.looked_at = format!(
        "{} object(s): {} DestinationRule(s), {routes} http route(s) of VirtualServices",
        objects.len(),
        limits.len()
    );
    Ok(out)
}

/// The rules by the short name of their host (the first rule of a host wins).
type Limits<'a> = HashMap<&'a str, &'a Limit>;

/// A `DestinationRule`: where it is, its host and the `maxRetries` it sets.
pub(crate) struct Limit {
    name: String,
    line: usize,
    host: String,
    max_retries: f64,
    max_retries_line: Option<usize>,
}

/// The routes to a rule's host that no `VirtualService` of the file describes: retry.go's
/// default policy under the rule's `maxRetries`.
fn rule_alone(r: &Reader, limit: &Limit) -> Translation {
    let mut t = default_policy(
        r,
        limit.line,
        format!("DestinationRule {} (routes to {})", limit.name, limit.host),
    );
    t.defaults.push("timeout");
    t.defaults.extend([
        "retries.attempts",
        "retries.retryOn",
        "retries.perTryTimeout",
    ]);
    throttle(&mut t, Some(limit));
    t
}

/// retry.go's `DefaultPolicy()` in herd's terms, for a route at `line`.
fn default_policy(r: &Reader, line: usize, name: String) -> Translation {
    let mut t = r.translation(
        line,
        name,
        Backoff {
            rule: RuleName::Full,
            base: ENVOY_BASE,
            cap: ENVOY_BASE * 10,
            multiplier: 2.0,
            jitter: 1.0,
        },
    );
    t.max_attempts = Some(DEFAULT_RETRIES + 1);
    t.retry_on = super::envoy::split_list(DEFAULT_RETRY_ON);
    t.defaults.push("retries.backoff");
    t
}

/// The `maxRetries` bound of the rule for the route's host, or Istio's default.
fn throttle(t: &mut Translation, limit: Option<&Limit>) {
    let (max_retries, line) = limit.map_or((DEFAULT_MAX_RETRIES, None), |l| {
        (l.max_retries, l.max_retries_line)
    });
    match line {
        Some(l) => t.field_lines.push(("connectionPool.http.maxRetries", l)),
        None => t.defaults.push("connectionPool.http.maxRetries"),
    }
    t.throttle = Some(Throttle {
        kind: "envoy-max-retries",
        params: vec![("max_retries", max_retries)],
    });
}

fn is_istio(o: &Object<'_>) -> bool {
    o.api_version.starts_with("networking.istio.io/")
}

/// An object with no retries, listed whole as ignored.
pub(crate) fn ignore_object(r: &mut Reader, o: &Object<'_>) {
    r.ignored.push(super::Ignored {
        file: r.file.clone(),
        line: o.node.line,
        field: format!(
            "{} (kind {} {})",
            kube::at(&o.path, "kind"),
            o.api_version,
            o.kind
        ),
    });
}

/// A `DestinationRule`'s host and its `maxRetries` (set, or Istio's default).
fn destination_rule(r: &mut Reader, o: &Object<'_>) -> Result<Limit, CheckError> {
    let (s, sp) = kube::spec(
        r,
        o,
        &[
            "host",
            "trafficPolicy",
            "subsets",
            "exportTo",
            "workloadSelector",
        ],
    )?;
    let host = get(s, "host")
        .map(|h| r.text(h, "spec.host"))
        .transpose()?
        .unwrap_or_default();
    let mut limit = Limit {
        name: o.name.clone(),
        line: o.node.line,
        host,
        max_retries: DEFAULT_MAX_RETRIES,
        max_retries_line: None,
    };
    if let Some(tp) = get(s, "trafficPolicy") {
        let tpp = format!("{sp}.trafficPolicy");
        let tpm = r.fields_unread(
            tp,
            &tpp,
            &[
                "loadBalancer",
                "connectionPool",
                "outlierDetection",
                "tls",
                "portLevelSettings",
                "tunnel",
                "proxyProtocol",
            ],
            &["retryBudget"],
        )?;
        // Settings herd does not model that may hold timeouts or a port's own `maxRetries`.
        for key in ["outlierDetection", "portLevelSettings", "tunnel"] {
            if let Some(n) = get(tpm, key) {
                r.ignore_retry_like(n, &format!("{tpp}.{key}"));
            }
        }
        if let Some(cp) = get(tpm, "connectionPool") {
            let cpp = format!("{tpp}.connectionPool");
            let cpm = r.fields(cp, &cpp, &["tcp", "http"])?;
            if let Some(tcp) = get(cpm, "tcp") {
                r.ignore_retry_like(tcp, &format!("{cpp}.tcp"));
            }
            if let Some(http) = get(cpm, "http") {
                let hp = format!("{cpp}.http");
                let hm = r.fields_unread(
                    http,
                    &hp,
                    &[
                        "http1MaxPendingRequests",
                        "http2MaxRequests",
                        "maxRequestsPerConnection",
                        "maxRetries",
                        "h2UpgradePolicy",
                        "useClientProtocol",
                        "maxConcurrentStreams",
                    ],
                    &["idleTimeout"],
                )?;
                if let Some(n) = get(hm, "maxRetries") {
                    let v = r.int(n, &format!("{hp}.maxRetries"), 0, i64::from(i32::MAX))?;
                    // cluster_traffic_policy.go: `if settings.Http.MaxRetries > 0`; 0 keeps
                    // the default.
                    if v > 0 {
                        limit.max_retries = v as f64;
                        limit.max_retries_line = Some(n.line);
                    }
                }
            }
        }
    }
    Ok(limit)
}

/// The http routes of one `VirtualService`, each translated or, if istiod would reject it,
/// a finding; returns how many there are.
fn virtual_service(
    r: &mut Reader,
    o: &Object<'_>,
    limits: &Limits<'_>,
    out: &mut Vec<Translation>,
    routed: &mut HashSet<String>,
) -> usize {
    let (s, sp) = match kube::spec(
        r,
        o,
        &["hosts", "gateways", "http", "tcp", "tls", "exportTo"],
    ) {
        Ok(spec) => spec,
        Err(e) => {
            r.reject(e, REJECTS);
            return 0;
        }
    };
    let Some(http) = get(s, "http") else {
        return 0;
    };
    let routes = r.entries(http, &format!("{sp}.http"), REJECTS);
    for (i, route) in routes.iter().enumerate() {
        let rp = format!("{sp}.http[{i}]");
        match http_route(r, route, &rp, &o.name, i, limits) {
            Ok((t, hosts)) => {
                out.push(t);
                routed.extend(hosts.iter().map(|h| short(h).to_owned()));
            }
            Err(e) => r.reject(e, REJECTS),
        }
    }
    routes.len()
}

fn http_route(
    r: &mut Reader,
    route: &Node,
    rp: &str,
    vs_name: &str,
    index: usize,
    limits: &Limits<'_>,
) -> Result<(Translation, Vec<String>), CheckError> {
    let rm = r.fields(route, rp, &HTTP_ROUTE)?;
    let name = match get(rm, "name") {
        Some(n) => format!("{vs_name}/{}", r.text(n, "name")?),
        None => format!("{vs_name}/http[{index}]"),
    };
    let mut t = default_policy(r, route.line, name);
    t.methods = methods(r, get(rm, "match"))?;
    r.route_timeout(&mut t, (rm, rp), Units::Go, (None, true))?;
    match get(rm, "retries") {
        None => t.defaults.extend([
            "retries.attempts",
            "retries.retryOn",
            "retries.perTryTimeout",
        ]),
        Some(retries) => {
            let pp = format!("{rp}.retries");
            let pm = r.fields_unread(
                retries,
                &pp,
                &["attempts", "perTryTimeout", "retryOn", "backoff"],
                &["retryRemoteLocalities", "retryIgnorePreviousHosts"],
            )?;
            t.line = retries.line;
            for key in ["attempts", "perTryTimeout", "retryOn", "backoff"] {
                if let Some(l) = line_of(pm, key) {
                    t.field_lines.push((key, l));
                }
            }
            // retry.go ConvertPolicy: attempts <= 0 returns no policy (no retries); the
            // proto's default for a present block without `attempts` is 0 as well.
            let attempts = match get(pm, "attempts") {
                Some(n) => r.int(
                    n,
                    &format!("{pp}.attempts"),
                    i64::from(i32::MIN),
                    i64::from(i32::MAX),
                )?,
                None => 0,
            };
            t.max_attempts = Some(u32::try_from(attempts.max(0)).unwrap_or(0) + 1);
            if attempts <= 0 {
                r.note(
                    retries.line,
                    format!("route {}: retries.attempts {attempts}, retries disabled (not counted as a retry policy)", t.name),
                );
            }
            if let Some(n) = get(pm, "retryOn") {
                let text = r.text(n, &format!("{pp}.retryOn"))?;
                let mut parts = super::envoy::split_list(&text);
                if parts.iter().any(|p| p.parse::<u16>().is_ok())
                    && !parts.iter().any(|p| p == "retriable-status-codes")
                {
                    parts.push("retriable-status-codes".to_owned());
                }
                t.retry_on = parts;
            } else {
                t.defaults.push("retries.retryOn");
            }
            match get(pm, "perTryTimeout") {
                Some(n) => {
                    t.per_try_timeout =
                        Some(r.duration(n, &format!("{pp}.perTryTimeout"), Units::Go)?)
                }
                None => t.defaults.push("retries.perTryTimeout"),
            }
            if let Some(n) = get(pm, "backoff") {
                let base = r.duration(n, &format!("{pp}.backoff"), Units::Go)?;
                if base.is_zero() {
                    return Err(r.bad(n.line, &format!("{pp}.backoff"), "must be above 0"));
                }
                t.backoff.base = base;
                t.backoff.cap = base * 10;
                t.defaults.retain(|d| *d != "retries.backoff");
            }
        }
    }
    let hosts = destination_hosts(get(rm, "route"));
    let limit = hosts.iter().find_map(|h| limits.get(short(h)).copied());
    throttle(&mut t, limit);
    Ok((t, hosts))
}

/// A host's short name: `reviews` matches `reviews.prod.svc.cluster.local` and the reverse.
fn short(host: &str) -> &str {
    host.split('.').next().unwrap_or(host)
}

/// The hosts of a route's `route[].destination`.
fn destination_hosts(route: Option<&Node>) -> Vec<String> {
    let Some(Value::Seq(items)) = route.map(|n| &n.value) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|d| {
            let dest = map_of(get(map_of(Some(d))?, "destination"));
            str_of(get(dest?, "host")).map(str::to_owned)
        })
        .collect()
}

/// `match[].method.exact` values.
fn methods(r: &Reader, node: Option<&Node>) -> Result<Vec<String>, CheckError> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for m in r.seq(node, "match")? {
        if let Value::Map(e) = &m.value
            && let Some(Node {
                value: Value::Map(method),
                ..
            }) = get(e, "method")
            && let Some(exact) = get(method, "exact")
        {
            out.push(r.text(exact, "match.method.exact")?);
        }
    }
    Ok(out)
}
