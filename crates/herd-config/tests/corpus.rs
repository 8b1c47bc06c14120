//! The corpus of real configurations in `scenarios/configs/real/` (their sources in its
//! README): every file is read, none refused, and several policies per system are checked by
//! hand against that system's own semantics.
use std::path::{Path, PathBuf};
use std::time::Duration;

use herd::RuleName;
use herd_config::{Input, Report, Severity, System, Translation};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/configs/real")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.file_name().is_some_and(|n| n != "README.md") {
            out.push(p);
        }
    }
}

/// The report of one corpus file (`system/name`), its system detected from its text.
fn read(name: &str) -> Report {
    let path = corpus_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    herd_config::read(&[Input::new(name, text)]).unwrap_or_else(|e| panic!("{name} refused: {e}"))
}

fn by<'a>(r: &'a Report, name: &str) -> &'a Translation {
    r.configs
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no policy {name:?} in {:?}", names(r)))
}

fn names(r: &Report) -> Vec<&str> {
    r.configs.iter().map(|t| t.name.as_str()).collect()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn every_real_file_is_read_and_none_is_refused() {
    let mut all = Vec::new();
    files(&corpus_dir(), &mut all);
    assert!(all.len() >= 25, "{} files", all.len());
    let root = corpus_dir();
    for path in &all {
        let name = path
            .strip_prefix(&root)
            .expect("inside")
            .to_string_lossy()
            .into_owned();
        let r = read(&name);
        let system = r.configs.first().map(|t| t.system);
        eprintln!(
            "{name}: {:?} {} policies, {} retrying; findings {:?}; notes {:?}",
            system,
            r.configs.len(),
            r.retry_policies().count(),
            r.findings.iter().map(|f| f.code).collect::<Vec<_>>(),
            r.notes
                .iter()
                .map(|n| n.message.as_str())
                .collect::<Vec<_>>()
        );
        // Never silent: a file without a retry policy says what was looked at.
        if r.retry_policies().count() == 0 {
            assert!(
                r.notes
                    .iter()
                    .any(|n| n.line == 0 && n.message.starts_with("no retry policy")),
                "{name}: {:?}",
                r.notes
            );
        }
    }
}

/// Envoy in lowerCamelCase (Envoy Gateway's translator output): route_components.proto
/// semantics, `numRetries` n is n + 1 attempts, `retryBackOff.baseInterval` with a maximum of
/// ten times it, no route `timeout` means Envoy's 15 s, a cluster not in the file Envoy's
/// `max_retries` 3.
#[test]
fn envoy_in_both_protobuf_spellings() {
    let r = read("envoy/envoy-gateway-retry.routes.yaml");
    let first = by(&r, "first-route");
    assert_eq!(first.system, System::Envoy);
    assert_eq!(first.max_attempts, Some(4));
    assert_eq!(
        (first.backoff.rule, first.backoff.base, first.backoff.cap),
        (RuleName::Full, ms(200), ms(2000))
    );
    assert_eq!(first.timeout, Some(ms(15_000)));
    assert!(first.retry_on.contains(&"500".to_owned()));
    assert_eq!(
        first.throttle.as_ref().and_then(|t| t.param("max_retries")),
        Some(3.0)
    );
    let defaults = by(&r, "second-route-defaults");
    assert_eq!(defaults.max_attempts, Some(3));
    assert_eq!(
        (defaults.backoff.base, defaults.backoff.cap),
        (ms(25), ms(250))
    );
    let triggers = by(&r, "third-route-only-triggers");
    assert_eq!(triggers.max_attempts, Some(6));
    assert_eq!(
        triggers.retry_on,
        ["reset", "reset-before-request", "connect-failure"]
    );
    // Kuma's MeshRetry: a listener with an inline routeConfig, perTryTimeout and both
    // intervals set.
    let r = read("envoy/kuma-meshretry-grpc.listeners.golden.yaml");
    let t = &r.configs[0];
    assert_eq!(t.max_attempts, Some(12));
    assert_eq!(t.per_try_timeout, Some(ms(12_000)));
    assert_eq!((t.backoff.base, t.backoff.cap), (ms(13_000), ms(14_000)));
    // Unmodelled retry settings are listed, not dropped.
    let r = read("envoy/kuma-meshretry-http.listeners.golden.yaml");
    for field in [
        "rate_limited_retry_back_off",
        "retriable_request_headers",
        "host_selection_retry_max_attempts",
    ] {
        assert!(
            r.ignored.iter().any(|i| i.field.ends_with(field)),
            "{field}: {:?}",
            r.ignored
        );
    }
    // ESPv2's bootstrap: staticResources, a 7 s route timeout, one retry.
    let r = read("envoy/espv2-sidecar-backend-envoy-config.json");
    assert!(r.configs.iter().all(|t| t.max_attempts == Some(2)));
    assert!(r.configs.iter().any(|t| t.timeout == Some(ms(7_500))));
    // An istioctl routes dump in snake_case inside `@type` wrappers: Istio's default policy,
    // `timeout: 0s` disabling the route timeout.
    let r = read("envoy/istioctl-routes-configdump.json");
    let t = &r.configs[0];
    assert_eq!((t.max_attempts, t.timeout), (Some(3), None));
    assert!(t.retry_on.contains(&"retriable-status-codes".to_owned()));
    // Clusters alone (Envoy Gateway's CDS output) and a bootstrap without retries: read, and
    // the report says what was looked at.
    for name in [
        "envoy/envoy-gateway-retry.clusters.yaml",
        "envoy/envoy-demo.yaml",
        "envoy/egctl-from-gateway-api-to-xds.all.json",
    ] {
        let r = read(name);
        assert_eq!(r.retry_policies().count(), 0, "{name}");
        assert!(
            r.notes.iter().any(|n| n.message.contains("virtual host")),
            "{name}: {:?}",
            r.notes
        );
    }
}

/// gRPC: gRFC A6 and grpc-go's service_config.go; GAPIC inputs without `maxAttempts` are an
/// error finding each, and the file's other method configs are read.
#[test]
fn grpc_service_configs_and_gapic_inputs() {
    let r = read("grpc/grpc-java-test_retry_service_config.json");
    let t = by(&r, "SimpleService1/*");
    assert_eq!(t.max_attempts, Some(3));
    assert_eq!(
        (
            t.backoff.rule,
            t.backoff.base,
            t.backoff.cap,
            t.backoff.multiplier
        ),
        (RuleName::GrpcRetry, ms(2100), ms(2200), 3.0)
    );
    let throttle = t.throttle.as_ref().expect("retryThrottling");
    assert_eq!(
        (throttle.param("max_tokens"), throttle.param("token_ratio")),
        (Some(10.0), Some(0.1))
    );
    assert_eq!(by(&r, "SimpleService2/*").max_attempts, Some(1));
    let r = read("grpc/googleapis-pubsub_grpc_service_config.json");
    let t = r.retry_policies().next().expect("a retry policy");
    assert_eq!((t.max_attempts, t.timeout), (Some(5), Some(ms(60_000))));
    assert_eq!(
        (t.backoff.base, t.backoff.cap, t.backoff.multiplier),
        (ms(100), ms(60_000), 1.3)
    );
    // datamanager: one retryPolicy without maxAttempts.
    let r = read("grpc/googleapis-datamanager_grpc_service_config.json");
    assert!(r.configs.is_empty());
    let f = &r.findings[0];
    assert_eq!(
        (f.code, f.severity, f.line),
        ("invalid-entry", Severity::Error, 23)
    );
    assert!(
        f.message.contains("grpc-go ignores this retryPolicy"),
        "{}",
        f.message
    );
    assert!(f.message.contains("GAPIC clients"), "{}", f.message);
    assert!(f.message.contains("120000 ms"), "{}", f.message);
    // speech: the method config with only a timeout is read beside the rejected one.
    let r = read("grpc/googleapis-speech_grpc_service_config.json");
    assert_eq!(r.configs.len(), 1);
    assert_eq!(
        r.findings
            .iter()
            .filter(|f| f.code == "invalid-entry")
            .count(),
        1
    );
}

/// Istio: retry.go's default policy where a route has no `retries`, and a DestinationRule
/// alone bounding it with its `maxRetries` (cluster_traffic_policy.go).
#[test]
fn istio_routes_and_destination_rules() {
    let r = read("istio/gateway-http.golden.yaml");
    let vs = "istio-system~gateway~istio-autogenerated-k8s-gateway~default~retry.domain.example";
    let explicit = by(&r, &format!("{vs}/default.http-retry-request.0"));
    assert_eq!(explicit.max_attempts, Some(4));
    assert_eq!(
        (explicit.backoff.base, explicit.backoff.cap),
        (ms(3), ms(30))
    );
    assert!(
        explicit
            .retry_on
            .contains(&"retriable-status-codes".to_owned())
    );
    let default = by(&r, &format!("{vs}/default.http-retry-request.2"));
    assert_eq!((default.max_attempts, default.timeout), (Some(3), None));
    assert!(default.defaults.contains(&"retries.attempts"));
    let r = read("istio/testdata-destination-rule-all.yaml");
    let t = by(
        &r,
        "DestinationRule destall (routes to destall.default.svc.cluster.local)",
    );
    assert_eq!(t.max_attempts, Some(3));
    assert_eq!(
        t.throttle.as_ref().and_then(|t| t.param("max_retries")),
        Some(4.0)
    );
    assert_eq!(t.line_of("connectionPool.http.maxRetries"), 39);
    // Bookinfo's rules set no maxRetries: Istio's 2^32 - 1.
    let r = read("istio/bookinfo-destination-rule-all.yaml");
    assert_eq!(r.configs.len(), 4);
    assert!(
        r.configs
            .iter()
            .all(|t| t.throttle.as_ref().and_then(|t| t.param("max_retries"))
                == Some(4_294_967_295.0))
    );
}

/// Linkerd: a ServiceProfile's budget, and 2.16's annotations.
#[test]
fn linkerd_profiles_and_annotations() {
    let r = read("linkerd/emojivoto-web-service-profile-with-retry-budget.yml");
    let t = by(&r, "web-svc.emojivoto.svc.cluster.local/GET /api/list");
    assert_eq!(t.max_attempts, None);
    let budget = t.throttle.as_ref().expect("budget");
    assert_eq!(
        (
            budget.param("retry_ratio"),
            budget.param("min_retries_per_second"),
            budget.param("ttl_s")
        ),
        (Some(0.001), Some(10.0), Some(10.0))
    );
    assert_eq!(t.timeout, Some(ms(10_000)), "the route timeout's default");
    let r = read("linkerd/linkerd-2.16-retries-annotations.yaml");
    let http = by(&r, "HTTPRoute schlep-default");
    assert_eq!(
        (http.max_attempts, http.per_try_timeout),
        (Some(3), Some(ms(300)))
    );
    assert_eq!(http.retry_on, ["5xx"]);
    let grpc = by(&r, "GRPCRoute schlep-default");
    assert_eq!(
        (grpc.max_attempts, grpc.per_try_timeout),
        (Some(3), Some(ms(400)))
    );
}

/// AWS: 74 sections; the two profiles with invalid retry settings are findings, the others
/// translated with the SDKs' defaults.
#[test]
fn aws_profiles_one_bad_profile_is_a_finding() {
    let r = read("aws/aws-sdk-go-v2-shared_config");
    let bad: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.code == "invalid-entry")
        .collect();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad.iter().all(|f| {
        f.message
            .contains("the SDK fails when this profile is used")
    }));
    assert!(
        r.configs
            .iter()
            .all(|t| !t.name.starts_with("retrywithinvalid"))
    );
    let standard = by(&r, "retrywithstandard");
    assert_eq!(
        (
            standard.max_attempts,
            standard.throttle.as_ref().map(|t| t.kind)
        ),
        (Some(5), Some("aws-standard-2026"))
    );
    let adaptive = by(&r, "retrywithadaptive");
    assert_eq!(
        (
            adaptive.max_attempts,
            adaptive.throttle.as_ref().map(|t| t.kind)
        ),
        (Some(4), Some("aws-adaptive"))
    );
    let unset = by(&r, "retryunset");
    assert_eq!(
        (unset.max_attempts, unset.backoff.base, unset.backoff.cap),
        (Some(3), ms(50), ms(20_000))
    );
    // A profile written twice is one profile.
    assert_eq!(
        r.configs
            .iter()
            .filter(|t| t.name == "DoNotNormalize")
            .count(),
        1
    );
    assert!(
        r.ignored
            .iter()
            .any(|i| i.field == "[sso-session sso-session-success-dev]")
    );
}

/// Resilience4j: dotted top-level keys, `backends`, `baseConfig`, and a `.properties` file.
#[test]
fn resilience4j_dotted_keys_and_properties() {
    let r = read("resilience4j/resilience4j-spring-boot3-demo-application.yml");
    let a = by(&r, "backendA");
    assert_eq!(
        (a.max_attempts, a.backoff.rule, a.backoff.base),
        (Some(3), RuleName::Constant, ms(100))
    );
    assert_eq!(a.retry_on.len(), 3);
    let r = read("resilience4j/resilience4j-spring-boot3-test-application.yaml");
    let shared = by(&r, "retryBackendA");
    assert_eq!(
        (shared.max_attempts, shared.backoff.base),
        (Some(4), ms(100))
    );
    let c = by(&r, "retryBackendC");
    assert_eq!(
        (
            c.max_attempts,
            c.backoff.rule,
            c.backoff.base,
            c.backoff.cap
        ),
        (Some(3), RuleName::Exponential, ms(100), ms(222))
    );
    let r = read("resilience4j/resilience4j-commons-configuration-resilience.properties");
    let a = by(&r, "backendA");
    assert_eq!(
        (a.max_attempts, a.backoff.rule, a.backoff.base),
        (Some(3), RuleName::Constant, ms(10_000))
    );
    assert_eq!(
        a.retry_on,
        [
            "java.util.concurrent.TimeoutException",
            "java.io.IOException"
        ]
    );
    let b = by(&r, "backendB");
    // configs.default's waitDuration PT10S, its own multiplier 2 and maximum PT10S.
    assert_eq!(
        (
            b.max_attempts,
            b.backoff.rule,
            b.backoff.base,
            b.backoff.cap
        ),
        (Some(5), RuleName::Exponential, ms(10_000), ms(10_000))
    );
}
