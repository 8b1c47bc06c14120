//! One test per reading rule, each on small files holding entries that must be read or
//! flagged and entries that must not.
use std::time::Duration;

use herd_config::{Input, Report, Severity, System};

fn read(file: &str, text: &str) -> Report {
    herd_config::read(&[Input::new(file, text)]).unwrap_or_else(|e| panic!("{e}"))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn codes(r: &Report) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.code).collect()
}

const ENVOY_SNAKE: &str = "virtual_hosts:
- name: api
  domains: ['*']
  routes:
  - name: orders
    match: {prefix: /orders}
    route:
      cluster: orders
      timeout: 2s
      retry_policy:
        retry_on: 5xx,reset
        num_retries: 4
        per_try_timeout: 0.5s
        retry_back_off: {base_interval: 0.1s, max_interval: 0.8s}
  - name: plain
    match: {prefix: /}
    route: {cluster: orders}
";

const ENVOY_CAMEL: &str = r#"{"virtualHosts": [{"name": "api", "domains": ["*"], "routes": [
  {"name": "orders", "match": {"prefix": "/orders"}, "route": {"cluster": "orders", "timeout": "2s",
    "retryPolicy": {"retryOn": "5xx,reset", "numRetries": 4, "perTryTimeout": "0.5s",
      "retryBackOff": {"baseInterval": "0.1s", "maxInterval": "0.8s"}}}},
  {"name": "plain", "match": {"prefix": "/"}, "route": {"cluster": "orders"}}]}]}"#;

#[test]
fn envoy_reads_both_protobuf_spellings_alike() {
    let snake = read("r.yaml", ENVOY_SNAKE);
    let camel = read("r.json", ENVOY_CAMEL);
    assert_eq!(
        snake.configs.len(),
        1,
        "the route without a retry policy is no policy"
    );
    assert_eq!(camel.configs.len(), 1);
    let (a, b) = (&snake.configs[0], &camel.configs[0]);
    assert_eq!(b.system, System::Envoy);
    assert_eq!(
        (b.max_attempts, b.per_try_timeout, b.timeout),
        (Some(5), Some(ms(500)), Some(ms(2000)))
    );
    assert_eq!((b.backoff.base, b.backoff.cap), (ms(100), ms(800)));
    assert_eq!(
        (
            a.max_attempts,
            a.per_try_timeout,
            a.timeout,
            a.backoff,
            &a.retry_on
        ),
        (
            b.max_attempts,
            b.per_try_timeout,
            b.timeout,
            b.backoff,
            &b.retry_on
        )
    );
}

#[test]
fn envoy_reads_dumps_with_type_wrappers_and_their_clusters() {
    // An admin config dump: routes and clusters inside `@type` wrappers, camelCase.
    let dump = r#"{"configs": [
 {"@type": "type.googleapis.com/envoy.admin.v3.ClustersConfigDump",
  "dynamicActiveClusters": [{"cluster": {"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
    "name": "orders", "circuitBreakers": {"thresholds": [{"maxRetries": 7}]}}},
   {"cluster": {"name": "other", "circuitBreakers": {"thresholds": [{"retryBudget": {"budgetPercent": {"value": 30}}}]}}}]},
 {"@type": "type.googleapis.com/envoy.admin.v3.RoutesConfigDump",
  "dynamicRouteConfigs": [{"routeConfig": {"@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
    "virtualHosts": [{"name": "a", "routes": [
      {"name": "to-orders", "route": {"cluster": "orders", "retryPolicy": {"retryOn": "5xx", "numRetries": 2}}},
      {"name": "to-other", "route": {"cluster": "other", "retryPolicy": {"retryOn": "5xx"}}}]}]}}]}]}"#;
    let r = read("dump.json", dump);
    let orders = r
        .configs
        .iter()
        .find(|t| t.name == "to-orders")
        .expect("to-orders");
    assert_eq!(orders.max_attempts, Some(3));
    assert_eq!(
        orders
            .throttle
            .as_ref()
            .and_then(|t| t.param("max_retries")),
        Some(7.0)
    );
    let other = r
        .configs
        .iter()
        .find(|t| t.name == "to-other")
        .expect("to-other");
    let budget = other.throttle.as_ref().expect("budget");
    assert_eq!(
        (budget.kind, budget.param("budget_percent")),
        ("envoy-budget", Some(30.0))
    );
    // `istioctl proxy-config routes -o json`: a list of route configurations.
    let list = format!("[{}]", ENVOY_CAMEL);
    assert_eq!(read("routes.json", &list).configs.len(), 1);
}

#[test]
fn a_byte_order_mark_is_read_by_detection_and_every_reader() {
    let files = [
        (
            "svc.json",
            r#"{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#,
        ),
        ("r.yaml", ENVOY_SNAKE),
        ("r.json", ENVOY_CAMEL),
        (
            "vs.yaml",
            "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\nspec:\n  http:\n  - route: [{destination: {host: a}}]\n",
        ),
        (
            "sp.yaml",
            "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: a}\nspec:\n  routes:\n  - name: r\n    isRetryable: true\n",
        ),
        ("config", "[default]\nretry_mode = standard\n"),
        (
            "application.yml",
            "resilience4j.retry:\n  instances:\n    a: {maxAttempts: 4}\n",
        ),
        (
            "application.properties",
            "resilience4j.retry.instances.a.max-attempts=4\n",
        ),
    ];
    for (file, text) in files {
        let plain = read(file, text);
        let bom = read(file, &format!("\u{feff}{text}"));
        assert_eq!(plain.configs.len(), 1, "{file}");
        assert_eq!(plain, bom, "{file}");
    }
}

#[test]
fn a_misspelt_retry_setting_is_a_warning_naming_the_setting() {
    let vs = "apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: a}
spec:
  http:
  - name: typo
    retrys: {attempts: 5}
    route: [{destination: {host: a}}]
  - name: fine
    retries: {attempts: 1, perTryTimout: 1s, retryRemoteLocalities: true}
    mirror: {host: b}
    route: [{destination: {host: a}}]
";
    let r = read("vs.yaml", vs);
    let warnings: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.code == "misspelt-key")
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(
        (warnings[0].line, warnings[0].severity),
        (7, Severity::Warning)
    );
    assert_eq!(warnings[0].fix, "did you mean `retries`?");
    assert_eq!(
        (warnings[1].line, warnings[1].fix.as_str()),
        (10, "did you mean `perTryTimeout`?")
    );
    // The misspelt route gets Istio's default policy, as istiod gives it.
    assert_eq!(r.configs[0].max_attempts, Some(3));
    // A real but unmodelled retry field is listed, not taken for a misspelling; `mirror` is
    // not a retry setting at all.
    assert!(
        r.ignored
            .iter()
            .any(|i| i.field.ends_with("retries.retryRemoteLocalities"))
    );
    // Envoy in camelCase: `perTryTimout` inside retryPolicy.
    let r = read(
        "r.json",
        &ENVOY_CAMEL.replace("perTryTimeout", "perTryTimout"),
    );
    assert_eq!(codes(&r), ["misspelt-key"]);
    assert_eq!(r.findings[0].fix, "did you mean `per_try_timeout`?");
    // gRPC: a misspelt top-level key that is no retry setting is listed, not warned about.
    let r = read(
        "svc.json",
        r#"{"loadBalacingConfig": [], "methodConfig": []}"#,
    );
    assert!(codes(&r).is_empty(), "{:?}", r.findings);
    assert!(r.ignored.iter().any(|i| i.field == "loadBalacingConfig"));
}

#[test]
fn grpc_one_method_config_without_max_attempts_is_a_finding_the_rest_is_read() {
    let text = r#"{"methodConfig": [
  {"name": [{"service": "a.A"}], "timeout": "30s",
   "retryPolicy": {"initialBackoff": "0.1s", "maxBackoff": "5s", "backoffMultiplier": 1.3, "retryableStatusCodes": ["UNAVAILABLE"]}},
  {"name": [{"service": "b.B"}],
   "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "5s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let r = read("svc.json", text);
    assert_eq!(r.configs.len(), 1);
    assert_eq!(
        (r.configs[0].name.as_str(), r.configs[0].max_attempts),
        ("b.B/*", Some(4))
    );
    assert_eq!(codes(&r), ["invalid-entry"]);
    let f = &r.findings[0];
    assert_eq!((f.severity, f.line), (Severity::Error, 3));
    assert!(f.message.contains("maxAttempts: required"), "{}", f.message);
    assert!(
        f.message.contains("until the method's timeout, 30000 ms"),
        "{}",
        f.message
    );
}

#[test]
fn aws_one_bad_profile_is_a_finding_the_others_are_read() {
    let text = "[default]\nretry_mode = standard\n\n[profile bad]\nretry_mode = sometimes\n\n[profile good]\nRetry_Mode = adaptive\nmax_attempts = 6\n\n[profile good]\nmax_attempts = 7\n";
    let r = read("config", text);
    let names: Vec<_> = r.configs.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["default", "good"]);
    let good = &r.configs[1];
    assert_eq!(
        good.max_attempts,
        Some(7),
        "the later value of a profile written twice wins"
    );
    assert_eq!(
        good.throttle.as_ref().map(|t| t.kind),
        Some("aws-adaptive"),
        "keys in any case"
    );
    assert_eq!(codes(&r), ["invalid-entry"]);
    assert_eq!(r.findings[0].line, 5);
}

#[test]
fn istio_a_destination_rule_alone_bounds_the_default_retries() {
    let dr = |name: &str, host: &str, max: u32| {
        format!(
            "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {{name: {name}}}\nspec:\n  host: {host}\n  trafficPolicy:\n    connectionPool:\n      http: {{maxRetries: {max}}}\n"
        )
    };
    let vs = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: routed}\nspec:\n  http:\n  - route: [{destination: {host: routed.ns.svc.cluster.local}}]\n";
    let text = [
        dr("alone", "alone", 5),
        dr("routed", "routed", 9),
        dr("zero", "zero", 0),
        vs.to_owned(),
    ]
    .join("---\n");
    let r = read("mesh.yaml", &text);
    let max = |name: &str| {
        let t = r
            .configs
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(t.max_attempts, Some(3), "{name}: retry.go's two retries");
        t.throttle.as_ref().and_then(|t| t.param("max_retries"))
    };
    assert_eq!(max("DestinationRule alone (routes to alone)"), Some(5.0));
    // maxRetries 0 keeps Istio's default (cluster_traffic_policy.go: `if MaxRetries > 0`).
    assert_eq!(
        max("DestinationRule zero (routes to zero)"),
        Some(4_294_967_295.0)
    );
    // A rule whose host a route of the file reaches bounds that route, and adds no policy.
    assert_eq!(max("routed/http[0]"), Some(9.0));
    assert_eq!(r.configs.len(), 3);
}

#[test]
fn disabled_routes_are_noted_not_counted() {
    let vs = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: a}\nspec:\n  http:\n  - name: off\n    retries: {attempts: 0}\n    route: [{destination: {host: a}}]\n  - name: on\n    route: [{destination: {host: a}}]\n";
    let r = read("vs.yaml", vs);
    assert_eq!(r.configs.len(), 2);
    assert_eq!(r.retry_policies().count(), 1);
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert_eq!(r.notes[0].line, 7);
    assert!(r.notes[0].message.contains("retries disabled"));
    let r = read(
        "r.yaml",
        &ENVOY_SNAKE.replace("num_retries: 4", "num_retries: 0"),
    );
    assert_eq!(r.retry_policies().count(), 0);
    assert!(
        r.notes.iter().any(|n| n.message.contains("num_retries 0")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_file_without_retry_policies_says_what_was_looked_at() {
    let r = read(
        "vs.yaml",
        "apiVersion: networking.istio.io/v1\nkind: Gateway\nmetadata: {name: g}\nspec: {}\n",
    );
    assert_eq!(r.notes.len(), 1);
    assert_eq!(r.notes[0].line, 0);
    assert!(
        r.notes[0]
            .message
            .starts_with("no retry policy: 1 object(s)"),
        "{}",
        r.notes[0].message
    );
    let r = read(
        "svc.json",
        r#"{"methodConfig": [{"name": [{}], "timeout": "1s"}]}"#,
    );
    assert!(
        r.notes[0].message.contains("1 methodConfig entry"),
        "{:?}",
        r.notes
    );
    // A file with a retry policy has no such note.
    assert!(read("r.yaml", ENVOY_SNAKE).notes.is_empty());
}

#[test]
fn spring_nested_dotted_relaxed_and_properties_keys_bind_alike() {
    let nested = "resilience4j:\n  retry:\n    instances:\n      a:\n        maxAttempts: 4\n        waitDuration: 200ms\n        retryExceptions: [java.io.IOException, java.net.ConnectException]\n";
    let dotted = "resilience4j.retry.instances.a:\n  max-attempts: 4\n  wait_duration: 200ms\n  retry-exceptions:\n    - java.io.IOException\n    - java.net.ConnectException\n";
    let flat = "resilience4j.retry.instances.a.MAXATTEMPTS: 4\nresilience4j.retry.instances.a.waitDuration: 200ms\nresilience4j.retry.instances.a.retryExceptions: [java.io.IOException, java.net.ConnectException]\n";
    let properties = "# a comment\nresilience4j.retry.instances.a.max-attempts=4\nresilience4j.retry.instances.a.wait-duration = 200ms\nresilience4j.retry.instances.a.retry-exceptions[0]=java.io.IOException\nresilience4j.retry.instances.a.retry-exceptions[1]=java.net.ConnectException\n";
    let commas = "resilience4j.retry.instances.a.maxAttempts: 4\nresilience4j.retry.instances.a.waitDuration: 200\nresilience4j.retry.instances.a.retryExceptions=java.io.IOException, java.net.ConnectException\n";
    let want = read("application.yml", nested).configs;
    assert_eq!(
        (
            want[0].max_attempts,
            want[0].backoff.base,
            want[0].retry_on.len()
        ),
        (Some(4), ms(200), 2)
    );
    for (file, text) in [
        ("application.yml", dotted),
        ("application.yaml", flat),
        ("application.properties", properties),
        ("application.properties", commas),
    ] {
        let got = read(file, text).configs;
        assert_eq!(got.len(), 1, "{file}: {text}");
        assert_eq!(
            (got[0].max_attempts, got[0].backoff, &got[0].retry_on),
            (want[0].max_attempts, want[0].backoff, &want[0].retry_on),
            "{text}"
        );
    }
    // A misspelt field is a warning; another module's keys are not read.
    let r = read(
        "application.yml",
        "resilience4j.retry.instances.a.maxAtempts: 9\nresilience4j.circuitbreaker.instances.a.maxAttempts: 9\n",
    );
    assert_eq!(r.configs[0].max_attempts, Some(3));
    assert_eq!(codes(&r), ["misspelt-key"]);
    assert_eq!(r.findings[0].fix, "did you mean `maxAttempts`?");
}

#[test]
fn spring_profiles_name_the_policies_they_change() {
    let text = "resilience4j.retry:\n  instances:\n    a: {maxAttempts: 2}\n    b: {maxAttempts: 2}\n---\nspring.config.activate.on-profile: prod\nresilience4j.retry.instances.a.maxAttempts: 5\n";
    let r = read("application.yml", text);
    let names: Vec<_> = r
        .configs
        .iter()
        .map(|t| (t.name.as_str(), t.max_attempts))
        .collect();
    assert_eq!(
        names,
        [
            ("a", Some(2)),
            ("b", Some(2)),
            ("a [profile prod]", Some(5))
        ]
    );
}

#[test]
fn linkerd_grpc_routes_are_no_http_posts() {
    let text = r#"apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata: {name: emoji}
spec:
  routes:
  - name: ListAll
    condition: {method: POST, pathRegex: /emojivoto\.v1\.EmojiService/ListAll}
    isRetryable: true
  - name: upload
    condition: {method: POST, pathRegex: /api/upload}
    isRetryable: true
"#;
    let r = read("sp.yaml", text);
    assert!(
        r.configs[0].methods.is_empty(),
        "{:?}",
        r.configs[0].methods
    );
    assert_eq!(r.configs[1].methods, ["POST"]);
}

#[test]
fn every_key_that_looks_like_retries_is_read_or_listed() {
    let ignored =
        |r: &Report| -> Vec<String> { r.ignored.iter().map(|i| i.field.clone()).collect() };
    // Envoy: a bootstrap's cluster and connection-manager timeouts; the read ones are not listed.
    let bootstrap = "static_resources:
  listeners:
  - filter_chains:
    - filters:
      - typed_config:
          request_timeout: 5s
          route_config:
            virtual_hosts:
            - name: a
              routes:
              - route: {cluster: c, retry_policy: {retry_on: 5xx}}
  clusters:
  - name: c
    connect_timeout: 1s
    circuit_breakers: {thresholds: [{max_retries: 5}]}
";
    let r = read("envoy.yaml", bootstrap);
    let got = ignored(&r);
    assert!(
        got.iter()
            .any(|f| f.ends_with("typed_config.request_timeout")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|f| f == "static_resources.clusters[0].connect_timeout"),
        "{got:?}"
    );
    assert!(
        !got.iter()
            .any(|f| f.contains("circuit_breakers") || f.contains("retry_policy")),
        "{got:?}"
    );
    assert_eq!(
        r.configs[0]
            .throttle
            .as_ref()
            .and_then(|t| t.param("max_retries")),
        Some(5.0)
    );
    // Istio: a DestinationRule's TCP connect timeout and a port's own maxRetries.
    let dr = "apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata: {name: d}
spec:
  host: d
  trafficPolicy:
    connectionPool:
      tcp: {connectTimeout: 2s, maxConnections: 10}
    portLevelSettings:
    - port: {number: 80}
      connectionPool: {http: {maxRetries: 3}}
";
    let got = ignored(&read("dr.yaml", dr));
    assert!(
        got.iter()
            .any(|f| f.ends_with("connectionPool.tcp.connectTimeout")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|f| f.ends_with("portLevelSettings[0].connectionPool.http.maxRetries")),
        "{got:?}"
    );
    assert!(
        !got.iter().any(|f| f.ends_with("maxConnections")),
        "{got:?}"
    );
    // Spring: a TimeLimiter's timeout is listed; a circuit breaker's window is not retry-like.
    let yml = "resilience4j:\n  retry.instances.a.maxAttempts: 2\n  timelimiter.instances.a.timeoutDuration: 2s\n  circuitbreaker.instances.a.slidingWindowSize: 10\n";
    let got = ignored(&read("application.yml", yml));
    assert_eq!(
        got,
        ["resilience4j.timelimiter.instances.a.timeoutDuration"]
    );
    // Linkerd: a proxy timeout annotation beside the retry ones.
    let svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  annotations:\n    retry.linkerd.io/http: 5xx\n    config.linkerd.io/proxy-outbound-connect-timeout: 1s\n";
    let got = ignored(&read("svc.yaml", svc));
    assert!(
        got.iter()
            .any(|f| f.ends_with("proxy-outbound-connect-timeout")),
        "{got:?}"
    );
}
