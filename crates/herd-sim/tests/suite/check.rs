//! `herd_sim::check`: every shipped example parses, every documented default is applied value
//! by value, findings land on the right line, and bad input names the file, line and field.
use std::time::Duration;

use herd::RuleName;
use herd_sim::check::{
    self, AwsRetries, CheckError, CheckOptions, Generation, GrpcRetries, Input, Report, Severity,
    System, Translation,
};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn run(file: &str, text: &str) -> Report {
    check::check(&[Input::new(file, text)]).unwrap_or_else(|e| panic!("{e}"))
}

fn one(file: &str, text: &str) -> Translation {
    let mut r = run(file, text);
    assert_eq!(r.configs.len(), 1, "{:?}", r.configs);
    r.configs.remove(0)
}

fn error(file: &str, text: &str) -> CheckError {
    check::check(&[Input::new(file, text)]).expect_err("bad input")
}

/// The `invalid-entry` finding of a file holding one entry its system rejects: the file is
/// read, not refused.
fn rejected(file: &str, text: &str) -> check::Finding {
    let r = run(file, text);
    let bad: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.code == "invalid-entry")
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", r.findings);
    assert_eq!(bad[0].severity, Severity::Error);
    bad[0].clone()
}

fn codes(r: &Report) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.code).collect()
}

fn shipped(name: &str) -> (String, String) {
    let path = format!(
        "{}/../../scenarios/configs/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    (format!("scenarios/configs/{name}"), text)
}

#[test]
fn every_shipped_example_parses_to_its_system() {
    let cases = [
        ("grpc-service-config.json", System::Grpc, 2),
        ("grpc-hedging.json", System::Grpc, 1),
        ("envoy-route.yaml", System::Envoy, 2),
        ("envoy-bootstrap.yaml", System::Envoy, 1),
        ("istio-dump.yaml", System::Istio, 3),
        ("mesh-frontend.yaml", System::Istio, 1),
        ("mesh-checkout.yaml", System::Istio, 1),
        ("mesh-payments.yaml", System::Istio, 1),
        ("linkerd-serviceprofile.yaml", System::Linkerd, 3),
        ("linkerd-annotations.yaml", System::Linkerd, 1),
        ("aws-config", System::Aws, 4),
        ("resilience4j-application.yml", System::Resilience4j, 3),
        ("resilience4j-edi.yml", System::Resilience4j, 1),
    ];
    for (name, system, policies) in cases {
        let (file, text) = shipped(name);
        assert_eq!(check::detect(&file, &text).unwrap(), system, "{name}");
        let r = run(&file, &text);
        assert_eq!(r.configs.len(), policies, "{name}");
        assert!(r.configs.iter().all(|t| t.system == system), "{name}");
    }
}

// gRPC: gRFC A6 and service_config.proto.

const GRPC: &str = r#"{
  "methodConfig": [{
    "name": [{"service": "a.A", "method": "M"}],
    "timeout": "1.5s",
    "retryPolicy": {
      "maxAttempts": 9,
      "initialBackoff": "0.1s",
      "maxBackoff": "2s",
      "backoffMultiplier": 2,
      "retryableStatusCodes": [14, "deadline_exceeded"]
    }
  }],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1234}
}"#;

#[test]
fn grpc_clamps_attempts_to_five_and_reads_durations_and_codes() {
    let r = run("svc.json", GRPC);
    let t = &r.configs[0];
    assert_eq!(t.name, "a.A/M");
    assert_eq!(t.max_attempts, Some(5));
    assert_eq!(t.timeout, Some(ms(1500)));
    assert_eq!(t.backoff.rule, RuleName::GrpcRetry);
    assert_eq!((t.backoff.base, t.backoff.cap), (ms(100), ms(2000)));
    assert_eq!(
        (t.backoff.multiplier, t.backoff.jitter),
        (2.0, 0.2),
        "grpc-go: min(initial · m^(n−1), max) · [0.8, 1.2)"
    );
    assert_eq!(t.retry_on, ["UNAVAILABLE", "DEADLINE_EXCEEDED"]);
    let th = t.throttle.as_ref().expect("throttle");
    assert_eq!(th.kind, "grpc");
    assert_eq!(th.param("max_tokens"), Some(10.0));
    // A6: at most three decimals of tokenRatio count.
    assert_eq!(th.param("token_ratio"), Some(0.123));
    let clamp = r
        .findings
        .iter()
        .find(|f| f.code == "clamped")
        .expect("clamped");
    assert_eq!(clamp.line, 6);
    assert!(codes(&r).contains(&"retries-deadline"));
    assert!(!codes(&r).contains(&"no-budget"));
}

#[test]
fn grpc_rejects_what_grpc_rejects_naming_the_field() {
    let f = rejected(
        "svc.json",
        &GRPC.replace("\"maxAttempts\": 9", "\"maxAttempts\": 1"),
    );
    assert!(
        f.message
            .starts_with("methodConfig[0].retryPolicy.maxAttempts: "),
        "{f:?}"
    );
    assert!(f.message.contains("grpc-go ignores this retryPolicy"));
    assert_eq!(f.line, 6);
    let f = rejected("svc.json", &GRPC.replace("\"0.1s\"", "\"100ms\""));
    assert!(
        f.message
            .starts_with("methodConfig[0].retryPolicy.initialBackoff: ")
    );
    let f = rejected(
        "svc.json",
        &GRPC.replace("[14, \"deadline_exceeded\"]", "[]"),
    );
    assert!(
        f.message
            .starts_with("methodConfig[0].retryPolicy.retryableStatusCodes: ")
    );
    let f = rejected("svc.json", &GRPC.replace("14,", "99,"));
    assert!(f.message.contains("not a gRPC status code"), "{f:?}");
    let e = error("svc.json", "{\"methodConfig\": [}");
    assert_eq!((e.line, e.field.as_str()), (1, ""));
}

#[test]
fn grpc_hedging_without_throttling_is_a_finding() {
    let (file, text) = shipped("grpc-hedging.json");
    let r = run(&file, &text);
    let t = &r.configs[0];
    let h = t.hedging.expect("hedging");
    assert_eq!((h.max_attempts, h.delay), (3, ms(50)));
    assert!(codes(&r).contains(&"hedging-without-throttling"));
}

// Envoy: route_components.proto, circuit_breaker.proto, backoff_strategy.cc.

#[test]
fn envoy_defaults_value_by_value() {
    let t = one(
        "route.yaml",
        "virtual_hosts:\n- name: vh\n  routes:\n  - match: {prefix: /}\n    route:\n      cluster: c\n      retry_policy:\n        retry_on: 5xx\n",
    );
    assert_eq!(t.max_attempts, Some(2), "num_retries defaults to 1");
    assert_eq!(t.backoff.rule, RuleName::Full);
    assert_eq!(t.backoff.base, ms(25), "base_interval 25 ms");
    assert_eq!(t.backoff.cap, ms(250), "max_interval 10 × base");
    assert_eq!(t.timeout, Some(ms(15_000)), "route timeout 15 s");
    assert_eq!(t.per_try_timeout, None, "per_try_timeout: the route's");
    let th = t.throttle.as_ref().expect("circuit breaker");
    assert_eq!(
        (th.kind, th.param("max_retries")),
        ("envoy-max-retries", Some(3.0))
    );
    for d in [
        "num_retries",
        "per_try_timeout",
        "retry_back_off.base_interval",
        "retry_back_off.max_interval",
        "timeout",
        "circuit_breakers.max_retries",
    ] {
        assert!(t.defaults.contains(&d), "{d}: {:?}", t.defaults);
    }
}

#[test]
fn envoy_max_interval_follows_a_set_base_and_a_zero_timeout_disables() {
    let t = one(
        "route.yaml",
        "virtual_hosts:\n- name: vh\n  routes:\n  - match: {prefix: /}\n    route:\n      cluster: c\n      timeout: 0s\n      retry_policy:\n        retry_back_off: {base_interval: 0.1s}\n",
    );
    assert_eq!(t.backoff.cap, ms(1000));
    assert_eq!(t.timeout, None);
    // No retry_on: no condition to retry on.
    assert_eq!(t.max_attempts, Some(1));
    assert!(t.defaults.contains(&"retry_on"));
}

#[test]
fn envoy_route_policy_replaces_the_virtual_hosts_and_the_cluster_budget_applies() {
    let (file, text) = shipped("envoy-route.yaml");
    let r = run(&file, &text);
    let catalog = &r.configs[0];
    assert_eq!(
        catalog.max_attempts,
        Some(4),
        "the virtual host's num_retries 3"
    );
    assert_eq!(catalog.line, 8);
    let payments = &r.configs[1];
    assert_eq!(payments.max_attempts, Some(3));
    assert_eq!(payments.retry_on, ["5xx", "retriable-status-codes", "409"]);
    assert_eq!(payments.methods, ["POST"]);
    assert!(codes(&r).contains(&"retries-non-idempotent"));
    assert!(codes(&r).contains(&"per-try-not-below-timeout"));

    let (file, text) = shipped("envoy-bootstrap.yaml");
    let t = one(&file, &text);
    let th = t.throttle.as_ref().expect("budget");
    assert_eq!(th.kind, "envoy-budget");
    assert_eq!(th.param("budget_percent"), Some(25.0));
    assert_eq!(th.param("min_retry_concurrency"), Some(5.0));
    assert_eq!(t.backoff.base, ms(50));
    assert_eq!(t.backoff.cap, ms(500));
}

#[test]
fn envoy_retry_budget_defaults_are_20_percent_and_3() {
    let t = one(
        "b.yaml",
        "static_resources:\n  clusters:\n  - name: c\n    circuit_breakers:\n      thresholds:\n      - retry_budget: {}\n  listeners:\n  - route_config:\n      virtual_hosts:\n      - name: v\n        routes:\n        - route: {cluster: c, retry_policy: {num_retries: 2, retry_on: 5xx}}\n",
    );
    let th = t.throttle.as_ref().expect("budget");
    assert_eq!(th.param("budget_percent"), Some(20.0));
    assert_eq!(th.param("min_retry_concurrency"), Some(3.0));
}

// Istio: retry.go DefaultPolicy, ConvertPolicy; cluster_traffic_policy.go.

#[test]
fn istio_without_retries_gets_the_default_policy_and_unbounded_max_retries() {
    let (file, text) = shipped("mesh-frontend.yaml");
    let r = run(&file, &text);
    let t = &r.configs[0];
    assert_eq!(t.max_attempts, Some(3), "2 retries");
    assert_eq!(
        t.retry_on,
        [
            "connect-failure",
            "refused-stream",
            "unavailable",
            "cancelled",
            "retriable-status-codes"
        ]
    );
    assert_eq!(t.timeout, None, "Istio disables the route timeout");
    assert_eq!((t.backoff.base, t.backoff.cap), (ms(25), ms(250)));
    let th = t.throttle.as_ref().expect("max retries");
    assert_eq!(th.param("max_retries"), Some(4_294_967_295.0));
    assert!(t.defaults.contains(&"retries.attempts"));
    assert!(codes(&r).contains(&"unbounded-max-retries"));
}

#[test]
fn istio_attempts_zero_disables_and_numbers_become_status_codes() {
    let vs = |retries: &str| {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: a}}\nspec:\n  http:\n  - retries: {retries}\n    route:\n    - destination: {{host: a}}\n"
        )
    };
    let t = one("vs.yaml", &vs("{attempts: 0}"));
    assert_eq!(t.max_attempts, Some(1));
    assert!(!t.retries());
    let t = one(
        "vs.yaml",
        &vs("{attempts: 2, retryOn: \"503,reset\", backoff: 100ms}"),
    );
    assert_eq!(t.max_attempts, Some(3));
    assert_eq!(t.retry_on, ["503", "reset", "retriable-status-codes"]);
    assert_eq!((t.backoff.base, t.backoff.cap), (ms(100), ms(1000)));
}

#[test]
fn istio_lists_multiple_documents_and_matches_the_destination_rule() {
    let (file, text) = shipped("istio-dump.yaml");
    let r = run(&file, &text);
    let names: Vec<_> = r.configs.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["reviews/http[0]", "ratings/write", "ratings/read"]);
    assert_eq!(
        r.configs[1].throttle.as_ref().unwrap().param("max_retries"),
        Some(5.0)
    );
    assert_eq!(r.configs[2].per_try_timeout, Some(ms(1000)));
    // The Gateway is listed, not dropped.
    assert!(
        r.ignored.iter().any(|i| i.field.contains("Gateway")),
        "{:?}",
        r.ignored
    );
    let two_docs = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\nspec: {http: [{route: []}]}\n---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: b}\nspec: {http: [{route: []}]}\n";
    let r = run("two.yaml", two_docs);
    assert_eq!(r.configs.len(), 2);
    assert_eq!(r.configs[1].line, 9);
}

#[test]
fn istio_unknown_kind_and_unknown_fields() {
    let f = rejected(
        "vs.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualSerivce\nmetadata: {name: a}\n",
    );
    assert!(f.message.contains("unknown kind VirtualSerivce"), "{f:?}");
    let r = run(
        "vs.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\nspec:\n  http:\n  - retries: {attempts: 2, perTryTimeOut: 1s}\n",
    );
    let ignored: Vec<_> = r
        .ignored
        .iter()
        .map(|i| (i.line, i.field.as_str()))
        .collect();
    assert_eq!(ignored, [(6, "spec.http[0].retries.perTryTimeOut")]);
}

// Linkerd: profile_translator.go defaultRetryBudget; retries.md.

#[test]
fn linkerd_budget_and_annotation_defaults() {
    let t = one(
        "sp.yaml",
        "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: web}\nspec:\n  routes:\n  - name: get\n    isRetryable: true\n",
    );
    assert_eq!(t.max_attempts, None, "bounded by the budget, not a count");
    let th = t.throttle.as_ref().expect("budget");
    assert_eq!(th.kind, "ratio");
    assert_eq!(th.param("retry_ratio"), Some(0.2));
    assert_eq!(th.param("min_retries_per_second"), Some(10.0));
    assert_eq!(th.param("ttl_s"), Some(10.0));
    assert_eq!(t.timeout, Some(ms(10_000)));
    assert_eq!(t.backoff.rule, RuleName::Immediate);

    let t = one(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  annotations:\n    retry.linkerd.io/http: 5xx\n",
    );
    assert_eq!(
        t.max_attempts,
        Some(2),
        "retry.linkerd.io/limit defaults to 1"
    );
    assert!(t.defaults.contains(&"retry.linkerd.io/limit"));
    let (file, text) = shipped("linkerd-serviceprofile.yaml");
    let r = run(&file, &text);
    assert_eq!(r.configs[2].max_attempts, Some(1), "not retryable");
    assert!(codes(&r).contains(&"retries-non-idempotent"));
    assert!(codes(&r).contains(&"budget-floor"));
}

// AWS: botocore 1.44 / 1.43 retries/standard.py, quota.py, _retry.json; smithy-rs.

#[test]
fn aws_modes_and_defaults() {
    let (file, text) = shipped("aws-config");
    let r = run(&file, &text);
    let by = |name: &str| r.configs.iter().find(|t| t.name == name).expect(name);
    // Today's SDKs (botocore >= 1.44.0): standard by default, a 50 ms base, 14 tokens a retry.
    let d = by("default");
    assert_eq!(d.generation, Some(Generation::Aws2026));
    assert_eq!(d.max_attempts, Some(3));
    assert_eq!(
        (d.backoff.rule, d.backoff.base, d.backoff.cap),
        (RuleName::Full, ms(50), ms(20_000))
    );
    let th = d.throttle.as_ref().unwrap();
    assert_eq!(th.kind, "aws-standard-2026");
    assert_eq!(
        [
            "initial_tokens",
            "retry_cost",
            "throttling_retry_cost",
            "timeout_retry_cost"
        ]
        .map(|k| th.param(k)),
        [Some(500.0), Some(14.0), Some(5.0), None]
    );
    assert!(d.defaults.contains(&"retry_mode") && d.defaults.contains(&"max_attempts"));
    assert_eq!(by("prod").max_attempts, Some(5));
    let batch = by("batch").throttle.as_ref().unwrap();
    assert_eq!(
        (batch.kind, batch.param("retry_cost")),
        ("aws-adaptive", Some(14.0))
    );
    let legacy = by("old-cli");
    assert_eq!(legacy.max_attempts, Some(5));
    assert_eq!(
        (legacy.backoff.base, legacy.backoff.cap),
        (ms(1000), ms(8000))
    );
    assert!(legacy.throttle.is_none());

    // `--aws-retries classic` (botocore 1.43): legacy by default, a 1 s base, 5 tokens.
    let options = CheckOptions::default().with_aws_retries(AwsRetries::Classic);
    let c = check::check_with(&[Input::new(&file, &text)], options).unwrap();
    let by = |name: &str| c.configs.iter().find(|t| t.name == name).expect(name);
    let d = by("default");
    assert_eq!(d.generation, Some(Generation::AwsClassic));
    assert_eq!((d.max_attempts, d.throttle.as_ref()), (Some(5), None));
    assert!(d.defaults.contains(&"retry_mode"));
    let prod = by("prod");
    assert_eq!(
        (prod.backoff.base, prod.backoff.cap),
        (ms(1000), ms(20_000))
    );
    let th = prod.throttle.as_ref().unwrap();
    assert_eq!(th.kind, "aws-standard");
    assert_eq!(
        ["retry_cost", "timeout_retry_cost"].map(|k| th.param(k)),
        [Some(5.0), Some(10.0)]
    );
    assert!(
        r.ignored
            .iter()
            .any(|i| i.field == "[default].region" && i.line == 4)
    );
    let f = rejected("config", "[default]\nretry_mode = fast\n");
    assert_eq!(f.line, 2);
    assert!(f.message.starts_with("[default].retry_mode: "), "{f:?}");
    assert!(
        f.message
            .contains("the SDK fails when this profile is used")
    );
    let f = rejected("config", "[profile p]\nmax_attempts = 0\n");
    assert_eq!(f.line, 2);
    assert!(f.message.starts_with("[profile p].max_attempts: "), "{f:?}");
}

// Resilience4j: CommonRetryConfigurationProperties, RetryConfig, IntervalFunction.

#[test]
fn resilience4j_defaults_merging_and_relaxed_names() {
    let t = one(
        "a.yml",
        "resilience4j:\n  retry:\n    instances:\n      x: {}\n",
    );
    assert_eq!(t.max_attempts, Some(3));
    assert_eq!(
        (t.backoff.rule, t.backoff.base),
        (RuleName::Constant, ms(500))
    );
    let (file, text) = shipped("resilience4j-application.yml");
    let r = run(&file, &text);
    let by = |name: &str| r.configs.iter().find(|t| t.name == name).expect(name);
    let inventory = by("inventory");
    assert_eq!(inventory.backoff.base, ms(200), "from baseConfig default");
    assert_eq!(inventory.retry_on.len(), 2);
    let pricing = by("pricing");
    assert_eq!(pricing.max_attempts, Some(6), "max-attempts, kebab case");
    assert_eq!(
        (pricing.backoff.rule, pricing.backoff.cap),
        (RuleName::Exponential, ms(5000))
    );
    let shipping = by("shipping");
    // No multiplier or factor set: IntervalFunction's 1.5 and 0.5; no cap: the largest
    // pause reached, 200 ms · 1.5² · (1 + 0.5).
    assert_eq!(shipping.backoff.rule, RuleName::Randomized);
    assert_eq!(
        (shipping.backoff.multiplier, shipping.backoff.jitter),
        (1.5, 0.5)
    );
    assert_eq!(shipping.backoff.cap, ms(675));
    assert!(codes(&r).contains(&"no-jitter"));
}

#[test]
fn resilience4j_options_it_silently_ignores_are_findings() {
    let r = run(
        "a.yml",
        "resilience4j:\n  retry:\n    instances:\n      x:\n        enableExponentialBackoff: true\n",
    );
    assert_eq!(r.configs[0].backoff.rule, RuleName::Constant);
    assert_eq!(r.configs[0].backoff.base, ms(500));
    assert!(codes(&r).contains(&"ignored-backoff"));
    let r = run(
        "a.yml",
        "resilience4j:\n  retry:\n    instances:\n      x:\n        waitDuration: 1s\n        maxAttempts: 4\n        enableExponentialBackoff: true\n        enableRandomizedWait: true\n        exponentialBackoffMultiplier: 2\n        exponentialMaxWaitDuration: 3s\n",
    );
    let f = r
        .findings
        .iter()
        .find(|f| f.code == "ignored-field")
        .expect("ignored-field");
    assert_eq!(f.line, 10);
    // The maximum is ignored: the cap is the largest pause reached, 1 s · 2² · 1.5.
    assert_eq!(r.configs[0].backoff.cap, ms(6000));
    let (file, text) = shipped("resilience4j-edi.yml");
    let t = one(&file, &text);
    assert_eq!(t.max_attempts, Some(5));
    assert_eq!(
        (t.backoff.base, t.backoff.cap, t.backoff.multiplier),
        (ms(1000), ms(30_000), 2.0)
    );
}

// Across files and bad input.

#[test]
fn three_hops_of_default_retries_multiply_to_27() {
    let inputs: Vec<_> = ["frontend", "checkout", "payments"]
        .iter()
        .map(|n| {
            let (f, t) = shipped(&format!("mesh-{n}.yaml"));
            Input::new(f, t)
        })
        .collect();
    let path = CheckOptions::default().with_call_path(true);
    let r = check::check_with(&inputs, path).unwrap();
    let layers: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.code == "multiple-layers")
        .collect();
    assert_eq!(layers.len(), 3);
    assert!(layers.iter().all(|f| f.severity == Severity::Warning));
    assert!(
        layers[0].message.contains("3 × 3 × 3"),
        "{}",
        layers[0].message
    );
    assert!(
        layers[0].message.contains("27 times"),
        "{}",
        layers[0].message
    );
    // Files checked together but not as one path: no layers.
    let apart = check::check(&inputs).unwrap();
    assert!(!codes(&apart).contains(&"multiple-layers"));
    // One file alone is one layer.
    let one = check::check_with(&inputs[..1], path).unwrap();
    assert!(!codes(&one).contains(&"multiple-layers"));
}

#[test]
fn bad_input_names_file_line_and_field() {
    let f = rejected(
        "x.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nspec:\n  http:\n  - timeout: soon\n",
    );
    assert_eq!((f.file.as_str(), f.line), ("x.yaml", 5));
    assert!(
        f.message.starts_with(
            "spec.http[0].timeout: expected a duration such as \"250ms\" or \"1m30s\""
        ),
        "{f:?}"
    );
    let e = error("x.yaml", "apiVersion: networking.istio.io/v1\nkind: [1,\n");
    assert_eq!(e.file, "x.yaml");
    assert!(e.line >= 2, "{e}");
    assert!(e.message.starts_with("malformed YAML"), "{e}");
    let e = error("x.txt", "hello: world\n");
    assert!(e.message.contains("cannot tell which system"), "{e}");
    let e = error("x.yaml", "apiVersion: linkerd.io/v1alpha2\nmetadata: {}\n");
    assert!(e.field.ends_with("kind"), "{e}");
}

#[test]
fn no_input_panics_truncated_or_mutated_examples() {
    // Every shipped example cut at every 5th character, and 200 single-character mutations
    // of each from a fixed seed: each is read or refused, never a panic.
    use herd::rng::{Rng, SplitMix64};
    const MARKS: &[u8] = b":-[]{}\"'&*!|>#\n 09.,";
    let mut rng = SplitMix64::new(22);
    let names = [
        "grpc-service-config.json",
        "grpc-hedging.json",
        "envoy-route.yaml",
        "envoy-bootstrap.yaml",
        "istio-dump.yaml",
        "linkerd-serviceprofile.yaml",
        "linkerd-annotations.yaml",
        "aws-config",
        "resilience4j-application.yml",
        "resilience4j-edi.yml",
    ];
    let mut refused = 0;
    for name in names {
        let (file, text) = shipped(name);
        let system = check::detect(&file, &text).unwrap();
        let mut attempt = |t: String| {
            let mut input = Input::new(file.clone(), t);
            input.system = Some(system);
            if check::check(&[input]).is_err() {
                refused += 1;
            }
        };
        for cut in (0..text.len())
            .step_by(5)
            .filter(|&i| text.is_char_boundary(i))
        {
            attempt(text[..cut].to_owned());
        }
        let bytes = text.as_bytes();
        for _ in 0..200 {
            let at = rng.range_inclusive(0, bytes.len() as u64 - 1) as usize;
            let mark = MARKS[rng.range_inclusive(0, MARKS.len() as u64 - 1) as usize];
            let mut mutated = bytes.to_vec();
            mutated[at] = mark;
            if let Ok(t) = String::from_utf8(mutated) {
                attempt(t);
            }
        }
    }
    assert!(
        refused > 100,
        "mutations should often be refused, got {refused}"
    );
}

#[test]
fn alias_expansion_is_bounded() {
    // A "billion laughs" document: refused (or read) quickly, never expanded in full.
    let mut text = String::from(
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n",
    );
    for i in 1..9 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let started = std::time::Instant::now();
    text.push_str("metadata: {name: a}\nspec: {http: []}\n");
    let err = check::check(&[Input::new("bomb.yaml", text)]).expect_err("refused");
    assert!(err.message.starts_with("malformed YAML"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_mesh_gives_the_amplification_and_the_advice_of_its_policies() {
    use herd_sim::check::mesh::Mesh;
    let (_, text) = shipped("../check/mesh.toml");
    let mesh = Mesh::from_toml("mesh.toml", &text).unwrap();
    assert_eq!(
        mesh.configs(),
        [
            "../configs/mesh-frontend.yaml",
            "../configs/mesh-checkout.yaml",
            "../configs/mesh-payments.yaml"
        ]
    );
    let translated: Vec<(String, Vec<Translation>)> = mesh
        .configs()
        .iter()
        .map(|c| {
            let (file, text) = shipped(c);
            (c.to_string(), run(&file, &text).configs)
        })
        .collect();
    let m = mesh
        .amplify(|c| {
            translated
                .iter()
                .find(|(n, _)| n == c)
                .map_or(&[][..], |(_, ts)| ts.as_slice())
        })
        .unwrap();
    assert_eq!(m.prediction.receives, [1.0, 3.0, 9.0, 27.0]);
    assert_eq!(m.amplification[0].factor(), Some(27.0));
    assert_eq!(m.advice.prediction.receives, [1.0, 1.0, 1.0, 3.0]);
    assert_eq!(m.path.len(), 3);
    assert_eq!(
        m.findings
            .iter()
            .filter(|f| f.code == "multiple-layers")
            .count(),
        3
    );
    // A call to a file without a policy, and a bad field, name the mesh file.
    let err = mesh.amplify(|_| &[]).unwrap_err();
    assert!(err.message.contains("holds no retry policy"), "{err}");
    let err = Mesh::from_toml(
        "mesh.toml",
        "entry = \"a\"\n[[service]]\nname = \"a\"\ncals = []\n",
    )
    .unwrap_err();
    assert_eq!((err.file.as_str(), err.line), ("mesh.toml", 4), "{err}");
}

/// An Istio `VirtualService` for `host`, with `retries` (YAML under `retries:`) or Istio's
/// default policy.
fn virtual_service(host: &str, retries: Option<&str>) -> String {
    format!(
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {{name: {host}}}\nspec:\n  hosts: [{host}]\n  http:\n  - route:\n    - destination: {{host: {host}}}\n{}",
        retries.map_or(String::new(), |r| format!("    retries: {r}\n"))
    )
}

/// The mesh's advice is the what-if's fix of the path to the failure, counted: retries off
/// above, the policy's own attempts kept at the last retrying call. Before, it was `herd
/// amplify`'s (every call into the failing service with the graph's largest attempts), which
/// the what-if never ran: with four attempts at the frontend it advised four at the ledger,
/// where the fix keeps payments' three; and with no retries into the ledger it advised
/// retries there, where the fix keeps checkout's.
#[test]
fn the_mesh_advice_is_the_simulated_fix() {
    use herd_sim::check::mesh::Mesh;
    use herd_sim::check::whatif::{self, WhatIfOptions};
    use herd_sim::{Cancel, Limits};

    let files = [
        (
            "frontend.yaml",
            virtual_service("checkout", Some("{attempts: 3}")),
        ),
        ("checkout.yaml", virtual_service("payments", None)),
        ("payments.yaml", virtual_service("ledger", None)),
        (
            "payments-off.yaml",
            virtual_service("ledger", Some("{attempts: 0}")),
        ),
    ];
    let translated: Vec<(&str, Vec<Translation>)> = files
        .iter()
        .map(|(file, text)| (*file, run(file, text).configs))
        .collect();
    let mut options = WhatIfOptions::default();
    options.brownout_s = 2.0;
    options.overload_s = 2.0;
    options.after_s = 2.0;
    for (payments, ledger_attempts) in [("payments.yaml", 3.0), ("payments-off.yaml", 1.0)] {
        let mesh = Mesh::from_toml(
            "mesh.toml",
            &format!(
                "entry = \"frontend\"\n\
                 [[service]]\nname = \"frontend\"\ncalls = [{{ to = \"checkout\", config = \"frontend.yaml\" }}]\n\
                 [[service]]\nname = \"checkout\"\ncalls = [{{ to = \"payments\", config = \"checkout.yaml\" }}]\n\
                 [[service]]\nname = \"payments\"\ncalls = [{{ to = \"ledger\", config = \"{payments}\" }}]\n\
                 [[service]]\nname = \"ledger\"\nfails = true\n"
            ),
        )
        .unwrap();
        let m = mesh
            .amplify(|c| {
                translated
                    .iter()
                    .find(|(n, _)| *n == c)
                    .map_or(&[][..], |(_, ts)| ts.as_slice())
            })
            .unwrap();
        let path: Vec<&Translation> = m.path.iter().collect();
        // What the what-if runs as the fix of this path, hop by hop, caller first.
        let comparison =
            whatif::compare(&path, &options, &Limits::default(), &Cancel::new()).unwrap();
        let fix = whatif::fix(&path);
        assert_eq!(comparison.fix_changes, fix.changes, "{payments}");
        let attempts: Vec<u32> = fix
            .path
            .iter()
            .map(|t| t.max_attempts.expect("bounded"))
            .collect();
        // The requests each service receives per entry request when the ledger fails: each
        // call down the path multiplies by its attempts under the fix.
        let mut want = vec![1.0];
        for a in &attempts {
            want.push(want.last().unwrap() * f64::from(*a));
        }
        if want.len() < 4 {
            // The ledger's own call does not retry: payments passes each call on once.
            want.push(*want.last().unwrap() * ledger_attempts);
        }
        assert_eq!(
            m.advice.prediction.receives, want,
            "{payments}: fix {attempts:?}"
        );
        assert_eq!(
            want[3], 3.0,
            "{payments}: the kept call's own three attempts"
        );
    }
}

/// gRPC core and grpc-go >= 1.70 jitter ±20 % after the cap; grpc-go < 1.70 and grpc-js draw
/// `U[0, x)`, herd's `full` when the multiplier is 2 and `grpc-retry` with jitter 1 over half
/// the base and cap otherwise (the same distribution).
#[test]
fn grpc_generations_name_the_implementation_and_its_jitter() {
    let text = |m: f64| {
        format!(
            r#"{{"methodConfig": [{{"name": [{{"service": "s"}}], "retryPolicy": {{"maxAttempts": 3,
            "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": {m},
            "retryableStatusCodes": ["UNAVAILABLE"]}}}}]}}"#
        )
    };
    let read = |m: f64, g: GrpcRetries| {
        let options = CheckOptions::default().with_grpc_retries(g);
        check::check_with(&[Input::new("svc.json", text(m))], options)
            .unwrap()
            .configs
            .remove(0)
    };
    let t = read(2.0, GrpcRetries::default());
    assert_eq!(t.generation, Some(Generation::GrpcJitter20));
    assert_eq!(
        (t.backoff.rule, t.backoff.jitter),
        (RuleName::GrpcRetry, 0.2)
    );
    let t = read(2.0, GrpcRetries::Uniform);
    assert_eq!(t.generation, Some(Generation::GrpcUniform));
    assert_eq!(
        (t.backoff.rule, t.backoff.base, t.backoff.cap),
        (RuleName::Full, ms(100), ms(1000))
    );
    let t = read(1.5, GrpcRetries::Uniform);
    assert_eq!(
        (
            t.backoff.rule,
            t.backoff.base,
            t.backoff.cap,
            t.backoff.jitter
        ),
        (RuleName::GrpcRetry, ms(50), ms(500), 1.0)
    );
    // The rule's pauses fill [0, min(0.1 s · 1.5^(n−1), 1 s)): never above, nearly up to it.
    let b = t.backoff;
    let rule = herd::Rule::grpc_retry(b.base, b.multiplier, b.jitter, b.cap).unwrap();
    let mut top = [Duration::ZERO; 8];
    for seed in 0..2000 {
        for (n, p) in rule
            .schedule(herd::rng::SplitMix64::new(seed))
            .take(8)
            .enumerate()
        {
            let window = (100.0 * 1.5f64.powi(n as i32)).min(1000.0);
            assert!(p.as_secs_f64() * 1000.0 < window + 1e-6, "{n} {p:?}");
            top[n] = top[n].max(p);
        }
    }
    assert!(top[0] > ms(99) && top[7] > ms(990), "{top:?}");
}
