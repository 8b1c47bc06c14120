//! The what-if against closed forms. Each statistical comparison is a z-test against the
//! exact law's own standard error; a test's comparisons share a false-failure rate of at most
//! 10⁻⁶ (Bonferroni: |z| ≤ 5.3 for each of up to four, P(|Z| > 5.3) = 1.2 · 10⁻⁷), from fixed
//! seeds.
use super::*;
use crate::check::{Input, check};

/// The largest |z| a comparison may reach (see the module docs).
const Z: f64 = 5.3;

const ISTIO_DEFAULT: &str = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: inner}\nspec:\n  hosts: [db]\n  http:\n  - route:\n    - destination: {host: db}\n";
const ISTIO_FOUR: &str = "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: outer}\nspec:\n  hosts: [api]\n  http:\n  - route:\n    - destination: {host: api}\n    retries:\n      attempts: 3\n";

fn one(file: &str, text: &str) -> Translation {
    check(&[Input::new(file, text)]).unwrap().configs.remove(0)
}

/// `run_fault` with the default limits and no cancelling, which must succeed.
fn fault(path: &[&Translation], fault: Fault, options: &WhatIfOptions) -> FaultRun {
    run_fault(path, fault, options, &Limits::default(), &Cancel::new()).unwrap()
}

/// `run_fault` as [`fault`], which must fail.
fn fault_err(path: &[&Translation], fault: Fault, options: &WhatIfOptions) -> ScenarioError {
    run_fault(path, fault, options, &Limits::default(), &Cancel::new()).unwrap_err()
}

fn short() -> WhatIfOptions {
    WhatIfOptions {
        before_s: 2.0,
        after_s: 3.0,
        ..WhatIfOptions::default()
    }
}

/// The requests of `trace` that arrive in the fault with their whole `window` of attempts
/// before the run ends (more than 200 of them, enough to test).
fn whole_windows<'t>(
    trace: &'t run::Trace,
    plan: &run::Plan,
    window: u64,
) -> Vec<&'t run::Request> {
    let whole: Vec<_> = trace
        .requests
        .iter()
        .filter(|r| r.arrival_ns >= plan.start_ns && r.arrival_ns + window < plan.end_ns)
        .collect();
    assert!(whole.len() > 200, "{}", whole.len());
    whole
}

/// An inner call's law in a brownout of `p` with `a` attempts: (attempts, served, probability).
fn inner_law(p: f64, a: u32) -> Vec<(u32, bool, f64)> {
    let mut out = Vec::new();
    for k in 1..=a {
        out.push((k, true, p.powi(k as i32 - 1) * (1.0 - p)));
    }
    out.push((a, false, p.powi(a as i32)));
    out
}

/// Mean and variance of the attempts at the bottom, and the probability of success, for
/// hops of `attempts` (caller first), each retrying the one below until it succeeds.
fn layered_law(p: f64, attempts: &[u32]) -> (f64, f64, f64) {
    let mut law = inner_law(p, *attempts.last().unwrap());
    for &a in attempts.iter().rev().skip(1) {
        // Outer attempts are inner calls, repeated while they fail, at most `a`.
        let mut next: Vec<(u32, bool, f64)> = Vec::new();
        let mut frontier = vec![(0u32, 1.0)];
        for k in 1..=a {
            let mut failed = Vec::new();
            for &(sum, prob) in &frontier {
                for &(n, ok, q) in &law {
                    if ok || k == a {
                        next.push((sum + n, ok, prob * q));
                    } else {
                        failed.push((sum + n, prob * q));
                    }
                }
            }
            frontier = failed;
        }
        law = next;
    }
    let mean: f64 = law.iter().map(|&(n, _, q)| f64::from(n) * q).sum();
    let second: f64 = law.iter().map(|&(n, _, q)| f64::from(n).powi(2) * q).sum();
    let served: f64 = law.iter().filter(|l| l.1).map(|l| l.2).sum();
    (mean, second - mean * mean, served)
}

fn within(what: &str, got: f64, want: f64, se: f64) {
    assert!(
        (got - want).abs() <= Z * se,
        "{what}: {got} against {want} (standard error {se}, z = {})",
        (got - want) / se
    );
}

/// `f`'s amplification and goodput each [`within`] the exact law of a brownout of `p` through
/// hops of `attempts` (caller first). Goodput's standard error is at least 1/n, for a law
/// that serves nearly every request.
fn meets_layered_law(f: &Figures, p: f64, attempts: &[u32]) {
    let n = f.requests as f64;
    let (mean, var, served) = layered_law(p, attempts);
    within("amplification", f.amplification, mean, (var / n).sqrt());
    within(
        "goodput",
        f.goodput,
        served,
        (served * (1.0 - served) / n).sqrt().max(1.0 / n),
    );
}

#[test]
fn the_closed_forms_are_what_the_laws_say() {
    let (mean, _, served) = layered_law(0.3, &[3]);
    assert!((mean - 1.39).abs() < 1e-12 && (served - 0.973).abs() < 1e-12);
    let q: f64 = 0.3f64.powi(3);
    let (mean, _, _) = layered_law(0.3, &[4, 3]);
    assert!((mean - 1.39 * (1.0 + q + q * q + q * q * q)).abs() < 1e-12);
}

/// Istio's defaults (three attempts, `unavailable` retried), brownout p = 0.3: amplification
/// 1 + p + p² = 1.39, goodput 1 − p³ = 0.973.
#[test]
fn istio_defaults_in_a_brownout_meet_the_closed_form() {
    let t = one("vs.yaml", ISTIO_DEFAULT);
    assert_eq!(t.max_attempts, Some(3));
    let run = fault(&[&t], Fault::Brownout, &short());
    let n = run.figures.requests as f64;
    assert!(n > 25_000.0, "{n} requests in 60 s at 500 a second");
    meets_layered_law(&run.figures, 0.3, &[3]);
    assert!(run.notes.is_empty(), "{:?}", run.notes);
}

/// Two hops, four attempts above three: in the brownout the bottom meets
/// (1 + p + p²)(1 + q + q² + q³) attempts a request, q = p³, from the layered simulation.
#[test]
fn two_hops_in_a_brownout_meet_the_closed_form() {
    let outer = one("outer.yaml", ISTIO_FOUR);
    let inner = one("inner.yaml", ISTIO_DEFAULT);
    assert_eq!((outer.max_attempts, inner.max_attempts), (Some(4), Some(3)));
    let run = fault(&[&outer, &inner], Fault::Brownout, &short());
    meets_layered_law(&run.figures, 0.3, &[4, 3]);
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("passes the failure up unchanged")),
        "{:?}",
        run.notes
    );
}

/// A service that turns its upstream's failure into a 500: the hop above does not retry it,
/// and the bottom sees the single hop's law.
#[test]
fn a_hop_that_answers_500_stops_the_layers_above_from_retrying() {
    let outer = one("outer.yaml", ISTIO_FOUR);
    let inner = one("inner.yaml", ISTIO_DEFAULT);
    let options = WhatIfOptions {
        gives_up_as_500: true,
        ..short()
    };
    let run = fault(&[&outer, &inner], Fault::Brownout, &options);
    meets_layered_law(&run.figures, 0.3, &[3]);
}

/// Two hops in the outage: every request whose whole call falls in it sends the bottom
/// 4 × 3 = 12 attempts, and fails; none sends more. Exact: nothing is drawn but the pauses.
#[test]
fn two_hops_send_the_bottom_twelve_attempts_a_request_in_the_outage() {
    let outer = one("outer.yaml", ISTIO_FOUR);
    let inner = one("inner.yaml", ISTIO_DEFAULT);
    let path = [&outer, &inner];
    let options = short();
    let (plan, hops, fault_s) =
        prepare(&path, Fault::Outage, &options, &Limits::default()).unwrap();
    // Inner: 3 attempts of 10 ms and pauses of at most 25 and 50 ms; outer: 4 of those and
    // pauses of at most 25, 50 and 100 ms: 595 ms, the outage twice that.
    let window = window_ns(&hops, plan.latency_ns);
    assert_eq!(window, 595_000_000);
    assert!((fault_s - 1.19).abs() < 1e-9, "{fault_s}");
    let trace = run::run(&plan, &hops, 1, &mut Watch::none()).unwrap();
    let whole = whole_windows(&trace, &plan, window);
    assert!(whole.iter().all(|r| r.attempts == 12 && !r.ok));
    assert!(trace.requests.iter().all(|r| r.attempts <= 12));
    // Every request that failed sent all twelve.
    assert!(
        trace
            .requests
            .iter()
            .filter(|r| !r.ok)
            .all(|r| r.attempts == 12)
    );
    let run = fault(&path, Fault::Outage, &options);
    assert!(run.figures.amplification <= 12.0 && run.figures.amplification > 6.0);
    assert_eq!(run.figures.recovered_s, Some(0.0), "{:?}", run.figures);
}

#[test]
fn a_policy_that_does_not_retry_the_answer_shows_it() {
    let envoy = one(
        "route.yaml",
        "name: r\nvirtual_hosts:\n- name: v\n  domains: [\"*\"]\n  routes:\n  - match: {prefix: /}\n    route:\n      cluster: c\n      retry_policy:\n        retry_on: connect-failure\n        num_retries: 3\n",
    );
    let run = fault(&[&envoy], Fault::Brownout, &short());
    assert_eq!(run.figures.amplification, 1.0);
    let n = run.figures.requests as f64;
    within("goodput", run.figures.goodput, 0.7, (0.21 / n).sqrt());
    assert!(
        run.notes.iter().any(|n| n.contains("does not retry")),
        "{:?}",
        run.notes
    );
}

#[test]
fn a_run_is_the_same_from_the_same_seed() {
    let t = one("vs.yaml", ISTIO_DEFAULT);
    let options = WhatIfOptions {
        overload_s: 5.0,
        ..short()
    };
    let go = || fault(&[&t], Fault::Overload, &options);
    assert_eq!(go(), go());
}

#[test]
fn bad_options_are_refused_naming_the_field() {
    let t = one("vs.yaml", ISTIO_DEFAULT);
    for (options, field) in [
        (
            WhatIfOptions {
                rps: Some(-1.0),
                ..WhatIfOptions::default()
            },
            "rps",
        ),
        (
            WhatIfOptions {
                brownout: 1.5,
                ..WhatIfOptions::default()
            },
            "brownout",
        ),
        (
            WhatIfOptions {
                capacity_rps: f64::NAN,
                ..WhatIfOptions::default()
            },
            "capacity_rps",
        ),
        (
            WhatIfOptions {
                outage_s: Some(-3.0),
                ..WhatIfOptions::default()
            },
            "outage_s",
        ),
    ] {
        let err = fault_err(&[&t], Fault::Outage, &options);
        assert_eq!(err.field_name(), Some(field), "{err}");
    }
}

const GRPC_TIMEOUTS: &str = r#"{"methodConfig": [{"name": [{"service": "a.A"}], "timeout": "2s",
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.1s", "maxBackoff": "1s",
    "backoffMultiplier": 2, "perAttemptRecvTimeout": "0.3s",
    "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}}]}"#;

/// The metastable mechanism: per-attempt timeouts below the backend's queueing delay turn a
/// mild overload into answers nobody waits for, which the retries multiply; the load stays
/// above capacity after the fault and the service never recovers. gRPC's `retryThrottling`
/// (the fix the findings derive) breaks the loop. Exact for the seed: nothing statistical.
#[test]
fn retries_turn_a_mild_overload_into_a_collapse_that_the_fix_ends() {
    let t = one("svc.json", GRPC_TIMEOUTS);
    let f = fix(&[&t]);
    let codes: Vec<&str> = f.changes.iter().map(|c| c.code).collect();
    assert_eq!(codes, ["no-budget", "retries-deadline"]);
    assert!(
        f.changes[0]
            .snippet
            .contains("\"retryThrottling\": {\"maxTokens\": 10")
    );
    assert_eq!(f.path[0].throttle.as_ref().map(|th| th.kind), Some("grpc"));
    assert_eq!(f.path[0].retry_on, ["UNAVAILABLE"]);
    let options = WhatIfOptions {
        after_s: 20.0,
        ..short()
    };
    let go = |t: &Translation| fault(&[t], Fault::Overload, &options).figures;
    let (set, fixed) = (go(&t), go(&f.path[0]));
    assert_eq!(set.recovered_s, None, "{set:?}");
    assert!(set.peak_load > 2.0, "{set:?}");
    assert!(fixed.recovered_s.is_some_and(|r| r < 10.0), "{fixed:?}");
    assert!(fixed.amplification < 1.1, "{fixed:?}");
}

/// Istio's defaults at two hops: the fix retries at the bottom hop only (`attempts: 0`
/// above) and bounds its retries in flight; the bottom then meets at most three attempts a
/// request in the outage instead of twelve.
#[test]
fn the_layers_fix_retries_at_the_bottom_only() {
    let outer = one("outer.yaml", ISTIO_FOUR);
    let inner = one("inner.yaml", ISTIO_DEFAULT);
    let options = WhatIfOptions {
        brownout_s: 5.0,
        overload_s: 5.0,
        ..short()
    };
    let c = compare(
        &[&outer, &inner],
        &options,
        &Limits::default(),
        &Cancel::new(),
    )
    .unwrap();
    let first = &c.fix_changes[0];
    assert_eq!(
        (first.code, first.policy.as_str()),
        ("multiple-layers", "outer/http[0]")
    );
    assert_eq!(first.snippet, "retries:\n  attempts: 0\n");
    assert!(
        c.fix_changes
            .iter()
            .any(|f| f.code == "unbounded-max-retries" && f.snippet.contains("maxRetries: 3"))
    );
    assert_eq!(c.no_fix, None);
    let outage = &c.faults[2];
    assert!(outage.as_set.amplification > 6.0, "{outage:?}");
    assert!(outage.fix.amplification <= 3.0, "{outage:?}");
    assert!(c.faults.iter().any(|f| f.as_set != f.fix));
}

#[test]
fn nothing_to_fix_says_why_and_runs_once() {
    let aws = one("config", "[default]\nretry_mode = standard\n");
    let options = WhatIfOptions {
        brownout_s: 2.0,
        overload_s: 2.0,
        ..short()
    };
    let c = compare(&[&aws], &options, &Limits::default(), &Cancel::new()).unwrap();
    assert!(c.fix_changes.is_empty());
    assert_eq!(c.no_fix.as_deref(), Some("no warning: nothing to fix"));
    assert!(c.faults.iter().all(|f| f.as_set == f.fix));
    // Linkerd's annotations warn of no backoff and no budget, neither of which Linkerd can
    // set: nothing is proposed, and that is said.
    let linkerd = one(
        "deploy.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  annotations:\n    retry.linkerd.io/http: 5xx\n",
    );
    let f = fix(&[&linkerd]);
    assert!(f.changes.is_empty(), "{:?}", f.changes);
    assert!(
        f.none_because
            .as_deref()
            .is_some_and(|w| w.starts_with("no setting of linkerd cures")),
        "{:?}",
        f.none_because
    );
}

/// Three hops of Istio's defaults: 3 × 3 × 3 = 27 attempts at the bottom for a request whose
/// whole call falls in the outage (the walkthrough in docs/check.md).
#[test]
fn three_hops_send_the_bottom_twenty_seven_attempts_a_request_in_the_outage() {
    let hops: Vec<Translation> = ["a", "b", "c"]
        .iter()
        .map(|n| one(&format!("{n}.yaml"), ISTIO_DEFAULT))
        .collect();
    let path: Vec<&Translation> = hops.iter().collect();
    let (plan, hops, _) = prepare(&path, Fault::Outage, &short(), &Limits::default()).unwrap();
    let window = window_ns(&hops, plan.latency_ns);
    let trace = run::run(&plan, &hops, 1, &mut Watch::none()).unwrap();
    let whole = whole_windows(&trace, &plan, window);
    assert!(whole.iter().all(|r| r.attempts == 27 && !r.ok));
}

/// The cures the findings name themselves: retries off on a route of POSTs, and a per-try
/// timeout below the whole one.
#[test]
fn non_idempotent_retries_and_a_per_try_timeout_at_the_whole_get_their_cures() {
    let post = one(
        "vs.yaml",
        "apiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: w}\nspec:\n  hosts: [w]\n  http:\n  - match:\n    - method: {exact: POST}\n    route:\n    - destination: {host: w}\n",
    );
    let f = fix(&[&post]);
    assert_eq!(f.changes[0].code, "retries-non-idempotent");
    assert_eq!(f.changes[0].snippet, "retries:\n  attempts: 0\n");
    assert_eq!(f.path[0].max_attempts, Some(1));
    let envoy = one(
        "route.yaml",
        "name: r\nvirtual_hosts:\n- name: v\n  domains: [\"*\"]\n  routes:\n  - match: {prefix: /}\n    route:\n      cluster: c\n      timeout: 1s\n      retry_policy:\n        retry_on: 5xx\n        num_retries: 2\n        per_try_timeout: 2s\n",
    );
    let f = fix(&[&envoy]);
    let c = f
        .changes
        .iter()
        .find(|c| c.code == "per-try-not-below-timeout")
        .expect("the per-try cure");
    assert!(
        c.snippet.contains("per_try_timeout: 0.333333333s"),
        "{}",
        c.snippet
    );
    assert_eq!(
        f.path[0].per_try_timeout,
        Some(std::time::Duration::from_nanos(333_333_333))
    );
}

/// Memory flat in the run's length: call and attempt slots are recycled once settled, so a
/// run twice as long (the same outage, twice the steady traffic after it) holds no more of
/// them at once. Before, a run kept a slot for every call and attempt it ever made.
#[test]
fn live_slots_do_not_grow_with_the_run() {
    let t = one("vs.yaml", ISTIO_DEFAULT);
    let trace = |after_s: f64| {
        let options = WhatIfOptions { after_s, ..short() };
        let (plan, hops, _) = prepare(&[&t], Fault::Outage, &options, &Limits::default()).unwrap();
        run::run(
            &plan,
            &hops,
            options.seed,
            &mut Watch::until(&Cancel::new()),
        )
        .unwrap()
    };
    let (short_run, long_run) = (trace(10.0), trace(20.0));
    assert!(long_run.requests.len() > short_run.requests.len() * 3 / 2);
    assert_eq!(short_run.slots, long_run.slots);
    assert!(
        short_run.slots < short_run.requests.len() / 10,
        "{}",
        short_run.slots
    );
}

/// Linkerd's route annotations have no budget and no backoff: their fix is the one setting
/// that bounds the load, `retry.linkerd.io/limit` back to Linkerd's default of 1, and the
/// simulation runs it (two attempts a request in the outage instead of three).
#[test]
fn linkerd_annotations_are_fixed_by_their_limit() {
    let route = one(
        "route.yaml",
        "kind: HTTPRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata:\n  name: r\n  annotations:\n    retry.linkerd.io/http: 5xx\n    retry.linkerd.io/limit: \"2\"\nspec:\n  parentRefs:\n  - {name: s, kind: Service, group: core, port: 80}\n",
    );
    assert_eq!(route.max_attempts, Some(3));
    let f = fix(&[&route]);
    assert_eq!(f.changes.len(), 1, "{:?}", f.changes);
    assert_eq!(f.changes[0].code, "no-budget");
    assert!(
        f.changes[0]
            .snippet
            .contains("retry.linkerd.io/limit: \"1\""),
        "{}",
        f.changes[0].snippet
    );
    assert_eq!(f.path[0].max_attempts, Some(2));
    let options = WhatIfOptions {
        brownout_s: 2.0,
        overload_s: 2.0,
        ..short()
    };
    let c = compare(&[&route], &options, &Limits::default(), &Cancel::new()).unwrap();
    let outage = &c.faults[2];
    assert!(
        (outage.as_set.amplification - 3.0).abs() < 0.05,
        "{outage:?}"
    );
    assert!((outage.fix.amplification - 2.0).abs() < 0.05, "{outage:?}");
    assert_eq!(outage.same_because, None);
}

/// A fault in which as set and fix run the same says why: here the policy retries only
/// gRPC's `INTERNAL`, so no request of the outage (all `UNAVAILABLE`) is retried.
#[test]
fn a_fault_the_fix_does_not_change_says_why() {
    let route = one(
        "route.yaml",
        "kind: GRPCRoute\napiVersion: gateway.networking.k8s.io/v1\nmetadata:\n  name: g\n  annotations:\n    retry.linkerd.io/grpc: internal\n    retry.linkerd.io/limit: \"2\"\nspec:\n  parentRefs:\n  - {name: s, kind: Service, group: core, port: 80}\n",
    );
    let options = WhatIfOptions {
        brownout_s: 2.0,
        overload_s: 2.0,
        ..short()
    };
    let c = compare(&[&route], &options, &Limits::default(), &Cancel::new()).unwrap();
    assert!(!c.fix_changes.is_empty());
    for f in &c.faults {
        assert_eq!(f.same_because.is_some(), f.as_set == f.fix, "{f:?}");
    }
    let why = c.faults[2]
        .same_because
        .as_deref()
        .expect("the outage's reason");
    assert!(
        why.starts_with("no request was retried") && why.contains("internal"),
        "{why}"
    );
}
