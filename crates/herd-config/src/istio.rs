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
//! - `connectionPool.http.maxRetries` unset: 2³² − 1 concurrent retries
//!   (pilot/pkg/networking/core/cluster_traffic_policy.go,
//!   `getDefaultCircuitBreakerThresholds`: `MaxRetries: math.MaxUint32`), lifting Envoy's 3.
use std::time::Duration;

use herd::RuleName;

use super::kube::{self, Object};
use super::tree::{Node, Reader, Units, Value, get, line_of};
use super::{Backoff, CheckError, System, Throttle, Translated, Translation};

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

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let docs = kube::documents(r, text)?;
    let objects = kube::objects(r, &docs)?;
    let mut limits = Vec::new();
    for o in &objects {
        if is_istio(o) && o.kind == "DestinationRule" {
            limits.push(destination_rule(r, o)?);
        }
    }
    let mut out = Translated::default();
    for o in &objects {
        if !is_istio(o) {
            ignore_object(r, o);
            continue;
        }
        match o.kind.as_str() {
            "VirtualService" => virtual_service(r, o, &limits, &mut out.configs)?,
            "DestinationRule" => {}
            k if OTHER_KINDS.contains(&k) => ignore_object(r, o),
            k => {
                return Err(r.bad(
                    o.node.line,
                    &kube::at(&o.path, "kind"),
                    format!("unknown kind {k} in networking.istio.io (expected VirtualService or DestinationRule)"),
                ));
            }
        }
    }
    Ok(out)
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
fn destination_rule(
    r: &mut Reader,
    o: &Object<'_>,
) -> Result<(String, f64, Option<usize>), CheckError> {
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
    let mut max = (DEFAULT_MAX_RETRIES, None);
    if let Some(tp) = get(s, "trafficPolicy") {
        let tpp = format!("{sp}.trafficPolicy");
        let tpm = r.map(tp, &tpp)?;
        r.ignore_unknown(
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
                "retryBudget",
            ],
        );
        if let Some(cp) = get(tpm, "connectionPool") {
            let cpp = format!("{tpp}.connectionPool");
            let cpm = r.map(cp, &cpp)?;
            r.ignore_unknown(cp, &cpp, &["tcp", "http"]);
            if let Some(http) = get(cpm, "http") {
                let hp = format!("{cpp}.http");
                let hm = r.map(http, &hp)?;
                r.ignore_unknown(
                    http,
                    &hp,
                    &[
                        "http1MaxPendingRequests",
                        "http2MaxRequests",
                        "maxRequestsPerConnection",
                        "maxRetries",
                        "idleTimeout",
                        "h2UpgradePolicy",
                        "useClientProtocol",
                        "maxConcurrentStreams",
                    ],
                );
                if let Some(n) = get(hm, "maxRetries") {
                    let v = r.int(n, &format!("{hp}.maxRetries"), 0, i64::from(i32::MAX))?;
                    max = (v as f64, Some(n.line));
                }
            }
        }
    }
    Ok((host, max.0, max.1))
}

fn virtual_service(
    r: &mut Reader,
    o: &Object<'_>,
    limits: &[(String, f64, Option<usize>)],
    out: &mut Vec<Translation>,
) -> Result<(), CheckError> {
    let (s, sp) = kube::spec(
        r,
        o,
        &["hosts", "gateways", "http", "tcp", "tls", "exportTo"],
    )?;
    let Some(http) = get(s, "http") else {
        return Ok(());
    };
    for (i, route) in r.seq(http, &format!("{sp}.http"))?.iter().enumerate() {
        let rp = format!("{sp}.http[{i}]");
        out.push(http_route(r, route, &rp, &o.name, i, limits)?);
    }
    Ok(())
}

fn http_route(
    r: &mut Reader,
    route: &Node,
    rp: &str,
    vs_name: &str,
    index: usize,
    limits: &[(String, f64, Option<usize>)],
) -> Result<Translation, CheckError> {
    let rm = r.map(route, rp)?;
    r.ignore_unknown(
        route,
        rp,
        &[
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
            "corsPolicy",
            "headers",
        ],
    );
    let name = match get(rm, "name") {
        Some(n) => format!("{vs_name}/{}", r.text(n, "name")?),
        None => format!("{vs_name}/http[{index}]"),
    };
    let mut t = Translation {
        file: r.file.clone(),
        line: route.line,
        system: System::Istio,
        name,
        max_attempts: Some(DEFAULT_RETRIES + 1),
        per_try_timeout: None,
        timeout: None,
        backoff: Backoff {
            rule: RuleName::Full,
            base: ENVOY_BASE,
            cap: ENVOY_BASE * 10,
            multiplier: 2.0,
            jitter: 1.0,
        },
        retry_on: super::envoy::split_list(DEFAULT_RETRY_ON),
        methods: methods(r, get(rm, "match"))?,
        throttle: None,
        hedging: None,
        defaults: vec!["retries.backoff"],
        field_lines: Vec::new(),
        generation: None,
    };
    match get(rm, "timeout") {
        Some(n) => {
            let d = r.duration(n, &format!("{rp}.timeout"), Units::Go)?;
            t.timeout = (!d.is_zero()).then_some(d);
            t.field_lines.push(("timeout", n.line));
        }
        None => t.defaults.push("timeout"),
    }
    match get(rm, "retries") {
        None => t.defaults.extend([
            "retries.attempts",
            "retries.retryOn",
            "retries.perTryTimeout",
        ]),
        Some(retries) => {
            let pp = format!("{rp}.retries");
            let pm = r.map(retries, &pp)?;
            r.ignore_unknown(
                retries,
                &pp,
                &[
                    "attempts",
                    "perTryTimeout",
                    "retryOn",
                    "retryRemoteLocalities",
                    "retryIgnorePreviousHosts",
                    "backoff",
                ],
            );
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
    let host = destination_host(get(rm, "route"));
    let (max_retries, line) = limits
        .iter()
        .find(|(h, _, _)| host.as_deref().is_some_and(|x| hosts_match(h, x)))
        .map_or((DEFAULT_MAX_RETRIES, None), |(_, v, l)| (*v, *l));
    if line.is_none() {
        t.defaults.push("connectionPool.http.maxRetries");
    }
    t.throttle = Some(Throttle {
        kind: "envoy-max-retries",
        params: vec![("max_retries", max_retries)],
    });
    Ok(t)
}

/// `reviews` matches `reviews.prod.svc.cluster.local` and the reverse.
fn hosts_match(a: &str, b: &str) -> bool {
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_owned();
    a == b || short(a) == short(b)
}

fn destination_host(route: Option<&Node>) -> Option<String> {
    let Value::Seq(items) = &route?.value else {
        return None;
    };
    items.iter().find_map(|d| match &d.value {
        Value::Map(e) => match get(e, "destination").map(|x| &x.value) {
            Some(Value::Map(dest)) => match get(dest, "host").map(|x| &x.value) {
                Some(Value::Str(h)) => Some(h.clone()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    })
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
