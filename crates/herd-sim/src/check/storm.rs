//! A translated policy in the storm model (docs/model.md), beside its suggested fix.
//!
//! The storm gives each of its clients one call that meets the outage; a policy sets how
//! those calls retry: `clients.max_attempts` from the attempts, the rule and its `base_ms` /
//! `cap_ms` / `pause_ms` from the backoff, `clients.deadline_s` from the whole call's
//! timeout, and `retry.budget_percent` from a ratio budget (Linkerd's `retryRatio`). Pauses
//! are drawn in nanoseconds (`pauses = "continuous"`), with a 10 ms step when the policy's
//! pauses are shorter than the scenario's step.
//!
//! What the storm model cannot express is said, never dropped: each [`StormComparison`] carries
//! `notes` such as "throttle not simulated: envoy-max-retries …" or a per-try timeout that
//! cannot fire. The backoff is never a stand-in: each system's rule (`grpc-retry`,
//! `randomized`, `full`, …) runs with its own multiplier and jitter (`retry.multiplier`,
//! `retry.jitter`), drawn by the library's code.
use std::time::Duration;

use herd::RuleName;

use super::{Backoff, Throttle, Translation, ms};
use crate::throttle::ThrottleTable;
use crate::{Cancel, Limits, Pauses, RunResult, Scenario, ScenarioError, Simulation, Watch};

/// The figures `herd check` reports for one side of a comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StormOutcome {
    /// Clients served by the horizon.
    pub served: u64,
    /// Clients that gave up (attempts, deadline or budget).
    pub gave_up: u64,
    /// When the last client was served, if every client was.
    pub all_served_s: Option<f64>,
    /// Attempts per client.
    pub requests_per_client: f64,
    /// The most attempts in one window after the outage.
    pub peak_after_outage: u64,
}

impl From<&RunResult> for StormOutcome {
    fn from(r: &RunResult) -> Self {
        Self {
            served: r.served,
            gave_up: r.gave_up,
            all_served_s: r.all_served_s,
            requests_per_client: r.requests_per_client,
            peak_after_outage: r.peak_after_outage,
        }
    }
}

/// One policy's storm beside its suggested fix.
#[derive(Clone, Debug, PartialEq)]
pub struct StormComparison {
    /// The policy's file.
    pub file: String,
    /// The policy's name.
    pub name: String,
    /// The storm with the policy as configured.
    pub config: StormOutcome,
    /// The storm with the suggested fix.
    pub fix: StormOutcome,
    /// What the fix changes, in words.
    pub fix_summary: String,
    /// What the storm could not express, and the approximations it made.
    pub notes: Vec<String>,
    /// The scenario the policy ran in (the fix's differs at most in its rule and budget).
    pub scenario: Scenario,
    /// The two runs whole, for charts: as configured, then the fix.
    pub runs: [RunResult; 2],
}

/// The fix herd suggests for a policy's storm: full jitter where the pauses have none (or
/// too little), with the policy's own base and cap. Budgets are findings, not part of this
/// fix: in the storm a denied retry is a give-up, so a budget trades served clients for a
/// lighter load, a choice the owner makes (`herd storm` with `retry.budget_percent` shows it).
#[must_use]
pub fn suggested_fix(t: &Translation) -> (Translation, String) {
    let mut fixed = t.clone();
    let b = t.backoff;
    let weak = !b.is_random() || (b.is_plus_minus() && b.jitter < 0.1);
    if !(weak && t.retries() && t.hedging.is_none()) {
        return (fixed, "none: the pauses are already jittered".to_owned());
    }
    let base = if b.base.is_zero() {
        Duration::from_millis(100)
    } else {
        b.base
    };
    fixed.backoff = Backoff {
        rule: RuleName::Full,
        base,
        cap: b.cap.max(base),
        multiplier: 2.0,
        jitter: 1.0,
    };
    let summary = format!(
        "full jitter from {} ms, capped at {} ms",
        ms(base),
        ms(fixed.backoff.cap)
    );
    (fixed, summary)
}

/// What the storm reads of a translation, as a key: two policies with equal keys run the very
/// same storm and fix (only their file, line and name differ), so a file of ten thousand
/// identical routes is simulated once. Every field [`scenario_for`] and [`suggested_fix`]
/// read is in it.
#[must_use]
pub fn storm_key(t: &Translation) -> String {
    format!(
        "{:?}",
        (
            t.max_attempts,
            t.per_try_timeout,
            t.timeout,
            t.backoff,
            &t.throttle,
            t.hedging,
        )
    )
}

/// `base` run with `t`'s semantics: the scenario, the rule, and what could not be expressed.
///
/// # Errors
///
/// A field of the resulting scenario out of the storm's range (a pause beyond its limits),
/// naming the field.
pub fn scenario_for(
    t: &Translation,
    base: &Scenario,
) -> Result<(Scenario, RuleName, Vec<String>), ScenarioError> {
    let mut s = base.clone();
    let mut notes = Vec::new();
    s.pauses = Pauses::Continuous;
    s.clients.max_attempts = t.max_attempts.unwrap_or(0);
    if let Some(timeout) = t.timeout {
        s.clients.deadline_s = timeout.as_secs_f64().min(s.horizon_s);
    }
    attempt_timeouts(t, base, &mut s, &mut notes);
    if let Some(h) = t.hedging {
        notes.push(format!(
            "hedging simulated as retries every {} ms: in an outage every copy fails, as a retry would",
            ms(h.delay)
        ));
    }
    let b = t.backoff;
    // The rule runs with the system's own multiplier and jitter (the doubling rules ignore
    // them): the storm draws the very pauses the system would.
    let rule = b.rule;
    s.retry.multiplier = b.multiplier;
    s.retry.jitter = b.jitter;
    let base_ms = duration_ms(b.base).max(1e-6);
    s.retry.rules = vec![rule];
    s.retry.base_ms = base_ms;
    s.retry.cap_ms = duration_ms(b.cap).max(base_ms);
    s.retry.pause_ms = base_ms;
    if !b.base.is_zero() && base_ms < s.step_ms {
        // A finer step changes nothing else only when no threshold is counted per step.
        if s.server.collapse_above == 0 && s.window_ms % 10.0 == 0.0 && s.step_ms > 10.0 {
            s.step_ms = 10.0;
            notes.push(format!(
                "step refined to 10 ms for pauses from {} ms",
                ms(b.base)
            ));
        } else {
            notes.push(format!(
                "pauses from {} ms are rounded up to the scenario's {} ms step",
                ms(b.base),
                s.step_ms
            ));
        }
    }
    s.retry.budget_percent = 0.0;
    if let Some(th) = &t.throttle {
        match throttle_table(th) {
            Ok(table) => s.retry.throttle = Some(table),
            Err(why) => notes.push(format!(
                "throttle not simulated: {} ({why}); the storm runs without it",
                th.kind
            )),
        }
    }
    Ok((s, rule, notes))
}

/// The fields of a storm scenario that the policy under check sets: [`scenario_for`] writes
/// them from the translation (the attempts, the whole call's timeout, the rule and its
/// parameters, the budget or throttle, the pauses in nanoseconds).
pub const POLICY_FIELDS: [&str; 11] = [
    "pauses",
    "clients.max_attempts",
    "clients.deadline_s",
    "retry.rules",
    "retry.base_ms",
    "retry.cap_ms",
    "retry.pause_ms",
    "retry.multiplier",
    "retry.jitter",
    "retry.budget_percent",
    "retry.throttle",
];

/// The [`POLICY_FIELDS`] `scenario` sets away from the default storm's values, in that
/// list's order. Such a scenario asks for a policy of its own (a rule, attempts, a budget),
/// which the policy under check would replace: the storm would not be the file's, so
/// `herd check` refuses it. The default storm's values ask for nothing (`scenarios/default.toml`
/// spells them all out).
///
/// # Examples
///
/// ```
/// use herd_sim::check::storm::policy_fields_set;
/// use herd_sim::{Limits, Scenario};
///
/// let read = |text| Scenario::from_toml_str(text, &Limits::default(), |_| {});
/// let edi = read("[retry]\nrules = [\"exponential\"]\nbase_ms = 1000\n")?;
/// assert_eq!(policy_fields_set(&edi), ["retry.rules", "retry.base_ms"]);
/// let mesh = read("[clients]\ncount = 0\narrivals_per_s = 400\n")?;
/// assert!(policy_fields_set(&mesh).is_empty());
/// # Ok::<(), herd_sim::ScenarioError>(())
/// ```
#[must_use]
pub fn policy_fields_set(scenario: &Scenario) -> Vec<&'static str> {
    let d = Scenario::default();
    let (c, r) = (&scenario.clients, &scenario.retry);
    let differs = [
        scenario.pauses != d.pauses,
        c.max_attempts != d.clients.max_attempts,
        c.deadline_s != d.clients.deadline_s,
        r.rules != d.retry.rules,
        r.base_ms != d.retry.base_ms,
        r.cap_ms != d.retry.cap_ms,
        r.pause_ms != d.retry.pause_ms,
        r.multiplier != d.retry.multiplier,
        r.jitter != d.retry.jitter,
        r.budget_percent != d.retry.budget_percent,
        r.throttle != d.retry.throttle,
    ];
    POLICY_FIELDS
        .into_iter()
        .zip(differs)
        .filter_map(|(field, differs)| differs.then_some(field))
        .collect()
}

/// How long a failed attempt lasts in the storm: a scenario whose failures are known only
/// after `server.timeout_s` (a server that hangs rather than refuses) meets the client's own
/// timeouts, so an attempt ends at the earliest of the server's wait, the per-try timeout and
/// the whole call's timeout. In a scenario whose failures are refused at once
/// (`server.timeout_s` 0, the default storm) no timeout can fire, and the note says so.
fn attempt_timeouts(t: &Translation, base: &Scenario, s: &mut Scenario, notes: &mut Vec<String>) {
    let hang = base.server.timeout_s;
    let client = match (t.per_try_timeout, t.timeout) {
        (Some(p), Some(w)) => Some(p.min(w)),
        (p, w) => p.or(w),
    };
    match (client, hang > 0.0) {
        (Some(limit), true) if limit.as_secs_f64() < hang => {
            s.server.timeout_s = limit.as_secs_f64();
            notes.push(format!(
                "{} ({} ms) simulated: a failed attempt ends after {} ms, not the server's {} s",
                if t.per_try_timeout.is_some_and(|p| p == limit) {
                    "per-try timeout"
                } else {
                    "timeout"
                },
                ms(limit),
                ms(limit),
                hang
            ));
        }
        (Some(limit), true) => notes.push(format!(
            "timeout ({} ms) simulated: it never fires, the server's failures are known after {hang} s",
            ms(limit)
        )),
        (_, false) => {
            if let Some(p) = t.per_try_timeout {
                notes.push(format!(
                    "per-try timeout ({} ms) never fires here: the storm's failed attempts are refused at once (a scenario with server.timeout_s, failures known only after a wait, lets it fire)",
                    ms(p)
                ));
            }
        }
        (None, true) => {}
    }
}

/// The storm's `[retry.throttle]` for a configuration's throttle: each system's own
/// settings under the storm's names, checked as a scenario file's table is.
pub(crate) fn throttle_table(th: &Throttle) -> Result<ThrottleTable, String> {
    let whole = |name: &str| -> Result<Option<u32>, String> {
        th.param(name)
            .map(|v| {
                if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                    Ok(v as u32)
                } else {
                    Err(format!("{name} {v} is not a whole number the storm takes"))
                }
            })
            .transpose()
    };
    let mut table = ThrottleTable {
        kind: th.kind.to_owned(),
        ..ThrottleTable::default()
    };
    match th.kind {
        "ratio" => {
            table.retry_ratio = th.param("retry_ratio");
            table.min_retries_per_second = whole("min_retries_per_second")?;
            table.ttl_s = th.param("ttl_s");
        }
        "grpc" => {
            table.max_tokens = th.param("max_tokens");
            table.token_ratio = th.param("token_ratio");
        }
        "envoy-budget" => {
            table.budget_percent = th.param("budget_percent");
            table.min_retry_concurrency = whole("min_retry_concurrency")?;
        }
        "envoy-max-retries" => table.max_retries = whole("max_retries")?,
        "aws-standard" | "aws-standard-2026" => {
            // The storm's attempts do not time out, so `timeout_retry_cost` never applies;
            // its refusals are transient errors (a 503), so neither does
            // `throttling_retry_cost`.
            table.capacity = whole("initial_tokens")?;
            table.retry_cost = whole("retry_cost")?;
            table.no_retry_increment = whole("success_reward")?;
        }
        // The rate limiter's constants are the SDK's own, which the storm's kind applies.
        "aws-adaptive" => {}
        other => return Err(format!("the storm has no `{other}` throttle")),
    }
    table.check().map_err(|e| e.to_string())?;
    Ok(table)
}

fn duration_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs `t` and its suggested fix in the storm `base`, with `seed`, each run stopped once
/// `cancel` is set (a server whose client left; see [`Watch::until`]).
///
/// # Errors
///
/// A scenario the storm refuses (out of range, or beyond `limits`), naming the field; an
/// error for which [`ScenarioError::is_cancelled`] holds when the flag stopped a run.
pub fn compare(
    t: &Translation,
    base: &Scenario,
    limits: &Limits,
    seed: u64,
    cancel: &Cancel,
) -> Result<StormComparison, ScenarioError> {
    let (fixed, fix_summary) = suggested_fix(t);
    let run = |t: &Translation| -> Result<(RunResult, Scenario, Vec<String>), ScenarioError> {
        let (s, rule, notes) = scenario_for(t, base)?;
        let result = Simulation::new(&s, limits)?.run(rule, seed, Watch::until(cancel))?;
        Ok((result, s, notes))
    };
    let (config, scenario, notes) = run(t)?;
    let (fix, _, _) = run(&fixed)?;
    Ok(StormComparison {
        file: t.file.clone(),
        name: t.name.clone(),
        config: StormOutcome::from(&config),
        fix: StormOutcome::from(&fix),
        fix_summary,
        notes,
        scenario,
        runs: [config, fix],
    })
}

pub use super::layers::layers;

/// Retries at every layer of one call path against retries at the bottom layer only, in the
/// storm: the bottom service meets each caller's call `a₁ × a₂ × …` times (the layers' most
/// attempts multiplied), drawn with the bottom layer's pauses; the fix keeps the bottom
/// layer's own attempts, jittered and budgeted. `None` with fewer than two layers.
///
/// This is an approximation, said in the notes: nested retries also wait for the inner
/// layers' whole sequences and timeouts, which the one-client storm does not model.
///
/// # Errors
///
/// As [`compare`].
pub fn compare_layers(
    configs: &[Translation],
    base: &Scenario,
    limits: &Limits,
    seed: u64,
    cancel: &Cancel,
) -> Result<Option<StormComparison>, ScenarioError> {
    let layers = layers(configs);
    let Some(bottom) = layers
        .last()
        .and_then(|l| l.iter().max_by_key(|t| t.max_attempts))
    else {
        return Ok(None);
    };
    if layers.len() < 2 {
        return Ok(None);
    }
    let per_layer: Vec<Option<u32>> = layers
        .iter()
        .map(|l| l.iter().map(|t| t.max_attempts).max().flatten())
        .collect();
    let product = per_layer
        .iter()
        .try_fold(1u32, |acc, a| a.map(|a| acc.saturating_mul(a)));
    let mut all = (*bottom).clone();
    // Each caller retries its whole call, so the bottom sees the attempts multiplied.
    all.name = format!("all {} layers", layers.len());
    all.file = format!("{} files or objects", layers.len());
    all.max_attempts = product;
    all.throttle = None;
    all.timeout = None;
    all.per_try_timeout = None;
    let mut c = compare(&all, base, limits, seed, cancel)?;
    // The fix: the bottom layer alone retries, jittered and budgeted.
    let (fixed, _) = suggested_fix(bottom);
    let (s, rule, _) = scenario_for(&fixed, base)?;
    let fix = Simulation::new(&s, limits)?.run(rule, seed, crate::Watch::none())?;
    c.fix = StormOutcome::from(&fix);
    c.runs[1] = fix;
    c.fix_summary = format!(
        "retries at the bottom layer only ({} attempts); {}",
        bottom
            .max_attempts
            .map_or("budget-bound".to_owned(), |a| a.to_string()),
        suggested_fix(bottom).1
    );
    c.notes.push(format!(
        "layers multiplied: {} attempts at the bottom; the outer layers' pauses and timeouts are not simulated",
        per_layer
            .iter()
            .map(|a| a.map_or("budget-bound".to_owned(), |a| a.to_string()))
            .collect::<Vec<_>>()
            .join(" × ")
    ));
    Ok(Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Input, check};

    fn one(file: &str, text: &str) -> Translation {
        check(&[Input::new(file, text)]).unwrap().configs.remove(0)
    }

    #[test]
    fn every_system_s_throttle_reaches_the_storm_with_its_own_settings() {
        // Linkerd's budget, floor included: the storm's `ratio` throttle is the library's
        // RetryBudget with its reserve.
        let linkerd = one(
            "sp.yaml",
            "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: a}\nspec:\n  routes:\n  - name: r\n    isRetryable: true\n",
        );
        let (s, rule, notes) = scenario_for(&linkerd, &Scenario::default()).unwrap();
        let th = s.retry.throttle.as_ref().expect("the budget is simulated");
        assert_eq!(
            (
                th.kind.as_str(),
                th.retry_ratio,
                th.min_retries_per_second,
                th.ttl_s
            ),
            ("ratio", Some(0.2), Some(10), Some(10.0))
        );
        assert_eq!(s.retry.budget_percent, 0.0);
        assert_eq!(rule, RuleName::Immediate);
        assert_eq!(s.clients.max_attempts, 0);
        assert_eq!(s.clients.deadline_s, 10.0);
        assert!(
            !notes.iter().any(|n| n.contains("not simulated: ratio")),
            "{notes:?}"
        );

        // The AWS SDKs' standard mode (2026): its retry quota, 500 tokens at 14 a retry.
        let aws = one("config", "[default]\nretry_mode = standard\n");
        let (s, _, notes) = scenario_for(&aws, &Scenario::default()).unwrap();
        let th = s.retry.throttle.as_ref().expect("the quota is simulated");
        assert_eq!(
            (
                th.kind.as_str(),
                th.capacity,
                th.retry_cost,
                th.no_retry_increment
            ),
            ("aws-standard-2026", Some(500), Some(14), Some(1))
        );
        assert_eq!(s.clients.max_attempts, 3);
        assert!(
            !notes
                .iter()
                .any(|n| n.starts_with("throttle not simulated")),
            "{notes:?}"
        );
    }

    /// The fields `herd check` refuses in a `--scenario` are the policy's: whatever a scenario
    /// sets them to, the storm runs the translation's values.
    #[test]
    fn every_policy_field_is_the_policy_s_to_set() {
        // A budget-bound Linkerd route: a whole-call timeout and a throttle as well.
        let linkerd = one(
            "sp.yaml",
            "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata: {name: a}\nspec:\n  routes:\n  - name: r\n    isRetryable: true\n",
        );
        let mut own = Scenario {
            pauses: Pauses::Continuous,
            ..Scenario::default()
        };
        own.clients.max_attempts = 7;
        own.clients.deadline_s = 3.0;
        own.retry = crate::storm::Retry {
            rules: vec![RuleName::Constant],
            base_ms: 5.0,
            cap_ms: 50.0,
            pause_ms: 7.0,
            multiplier: 3.0,
            jitter: 0.5,
            budget_percent: 10.0,
            throttle: Some(ThrottleTable {
                kind: "grpc".to_owned(),
                max_tokens: Some(10.0),
                token_ratio: Some(0.1),
                ..ThrottleTable::default()
            }),
        };
        assert_eq!(policy_fields_set(&own), POLICY_FIELDS);
        assert!(policy_fields_set(&Scenario::default()).is_empty());
        let policy = |s: &Scenario| {
            (
                s.pauses,
                s.clients.max_attempts,
                s.clients.deadline_s,
                s.retry.clone(),
            )
        };
        let (from_own, _, _) = scenario_for(&linkerd, &own).unwrap();
        let (from_default, _, _) = scenario_for(&linkerd, &Scenario::default()).unwrap();
        assert_eq!(policy(&from_own), policy(&from_default));
    }

    #[test]
    fn a_throttle_changes_what_the_storm_does() {
        // Envoy's default circuit breaker (3 retries in flight) against 2000 clients that all
        // fail together: most retries are refused, so the storm sends far fewer requests than
        // the same route without the breaker.
        let envoy = one(
            "route.yaml",
            "name: r\nvirtual_hosts:\n- name: v\n  domains: [\"*\"]\n  retry_policy:\n    retry_on: 5xx\n    num_retries: 3\n  routes:\n  - match: {prefix: /}\n    route: {cluster: c}\n",
        );
        assert_eq!(
            envoy.throttle.as_ref().map(|t| t.kind),
            Some("envoy-max-retries")
        );
        let with = compare(
            &envoy,
            &Scenario::default(),
            &Limits::default(),
            1,
            &Cancel::new(),
        )
        .unwrap();
        let mut without = envoy.clone();
        without.throttle = None;
        let without = compare(
            &without,
            &Scenario::default(),
            &Limits::default(),
            1,
            &Cancel::new(),
        )
        .unwrap();
        assert!(
            with.config.requests_per_client < without.config.requests_per_client,
            "{:?} against {:?}",
            with.config,
            without.config
        );
    }

    const GRPC_1_6: &str = r#"{"methodConfig": [{"name": [{"service": "a.A"}],
        "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.5s", "maxBackoff": "8s",
        "backoffMultiplier": 1.6, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

    #[test]
    fn the_storm_runs_grpc_s_own_multiplier_and_jitter() {
        let t = one("svc.json", GRPC_1_6);
        let (s, rule, notes) = scenario_for(&t, &Scenario::default()).unwrap();
        assert_eq!(rule, RuleName::GrpcRetry);
        assert_eq!((s.retry.multiplier, s.retry.jitter), (1.6, 0.2));
        assert!(notes.is_empty(), "no stand-in, nothing unsaid: {notes:?}");
        // The storm's pauses are the library's: each client's first retry comes 0.4–0.6 s
        // after its first attempt, its second 0.64–0.96 s after that, as grpc-go draws them
        // (rounded up to the 100 ms step). `full` ×2 would draw 0–0.5 s, then 0–1 s.
        let sim = Simulation::new(&s, &Limits::default()).unwrap();
        let (_, trace) = sim.trace(rule, 3).unwrap();
        let mut by_client: std::collections::HashMap<u32, Vec<f64>> = Default::default();
        for e in &trace.events {
            by_client.entry(e.client).or_default().push(e.t_s);
        }
        let mut checked = 0;
        for times in by_client.values().filter(|t| t.len() >= 3) {
            let (d1, d2) = (times[1] - times[0], times[2] - times[1]);
            assert!((0.4 - 1e-9..=0.6 + 1e-9).contains(&d1), "{times:?}");
            assert!((0.7 - 1e-9..=1.0 + 1e-9).contains(&d2), "{times:?}");
            checked += 1;
        }
        assert!(checked > 1000, "{checked}");
    }

    /// A server that hangs for 5 s on every failure, and a route whose per-try timeout is
    /// 250 ms: the attempts end at the client's timeout, not the server's.
    #[test]
    fn a_per_try_timeout_fires_when_failures_hang() {
        let route = "name: r\nvirtual_hosts:\n- name: v\n  domains: [\"*\"]\n  routes:\n  - match: {prefix: /}\n    route:\n      cluster: c\n      timeout: 30s\n      retry_policy:\n        retry_on: 5xx\n        num_retries: 2\n        per_try_timeout: 0.25s\n";
        let mut envoy = one("route.yaml", route);
        envoy.throttle = None;
        let hanging = Scenario {
            server: crate::Server {
                timeout_s: 5.0,
                ..crate::Server::default()
            },
            ..Scenario::default()
        };
        let (s, _, notes) = scenario_for(&envoy, &hanging).unwrap();
        assert_eq!(s.server.timeout_s, 0.25);
        assert!(
            notes[0].starts_with("per-try timeout (250 ms) simulated"),
            "{notes:?}"
        );
        // The default storm refuses at once: the timeout cannot fire, and the note says so.
        let (s, _, notes) = scenario_for(&envoy, &Scenario::default()).unwrap();
        assert_eq!(s.server.timeout_s, 0.0);
        assert!(notes[0].contains("never fires"), "{notes:?}");
        // In the hanging storm, three attempts 250 ms apart (plus ≤ 75 ms pauses) all fall
        // in the 10 s outage and fail; waiting 5 s for each, the third comes after it.
        let with = compare(&envoy, &hanging, &Limits::default(), 1, &Cancel::new()).unwrap();
        let mut without = envoy.clone();
        without.per_try_timeout = None;
        let without = compare(&without, &hanging, &Limits::default(), 1, &Cancel::new()).unwrap();
        assert_eq!(with.config.served, 0, "{:?}", with.config);
        assert!(without.config.served > 0, "{:?}", without.config);
    }

    /// Resilience4j, 1 s ×2 ±50 %, capped at 30 s, 9 attempts: the seventh retry's interval
    /// is 64 s, whose spread [32 s, 96 s) lies above the cap, so every client waits exactly
    /// 30 s from then on: a finding, and in the storm the clients arrive together again.
    #[test]
    fn resilience4j_loses_its_jitter_at_the_cap() {
        let r4j = one(
            "application.yml",
            "resilience4j:\n  retry:\n    instances:\n      partner:\n        maxAttempts: 9\n        waitDuration: 1s\n        enableExponentialBackoff: true\n        exponentialBackoffMultiplier: 2\n        enableRandomizedWait: true\n        randomizedWaitFactor: 0.5\n        exponentialMaxWaitDuration: 30s\n",
        );
        assert_eq!(r4j.backoff.rule, RuleName::Randomized);
        let report = crate::check::check(&[Input::new(
            "application.yml",
            "resilience4j:\n  retry:\n    instances:\n      partner:\n        maxAttempts: 9\n        waitDuration: 1s\n        enableExponentialBackoff: true\n        exponentialBackoffMultiplier: 2\n        enableRandomizedWait: true\n        randomizedWaitFactor: 0.5\n        exponentialMaxWaitDuration: 30s\n",
        )])
        .unwrap();
        let lost = report
            .findings
            .iter()
            .find(|f| f.code == "jitter-lost-at-cap")
            .expect("the finding");
        assert!(
            lost.message.starts_with("from retry 7 on"),
            "{}",
            lost.message
        );
        // Seven attempts (six retries) stop before it: no finding.
        let report = crate::check::check(&[Input::new(
            "application.yml",
            "resilience4j:\n  retry:\n    instances:\n      partner:\n        maxAttempts: 7\n        waitDuration: 1s\n        enableExponentialBackoff: true\n        exponentialBackoffMultiplier: 2\n        enableRandomizedWait: true\n        randomizedWaitFactor: 0.5\n        exponentialMaxWaitDuration: 30s\n",
        )])
        .unwrap();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.code != "jitter-lost-at-cap")
        );
        // The storm draws it: in a long outage every client's last two pauses are exactly
        // the 30 s cap.
        let scenario = Scenario {
            server: crate::Server {
                outages: vec![[0.0, 600.0]],
                ..crate::Server::default()
            },
            ..Scenario::default()
        };
        let (s, rule, _) = scenario_for(&r4j, &scenario).unwrap();
        let (_, trace) = Simulation::new(&s, &Limits::default())
            .unwrap()
            .trace(rule, 1)
            .unwrap();
        let mut by_client: std::collections::HashMap<u32, Vec<u64>> = Default::default();
        for e in &trace.events {
            by_client.entry(e.client).or_default().push(e.step);
        }
        for steps in by_client.values() {
            assert_eq!(steps.len(), 9);
            assert_eq!(steps[8] - steps[7], 300, "30 s of 100 ms steps: {steps:?}");
            assert_eq!(steps[7] - steps[6], 300, "{steps:?}");
        }
    }

    #[test]
    fn the_fix_jitters_and_budgets_what_had_neither() {
        let r4j = one(
            "application.yml",
            "resilience4j:\n  retry:\n    instances:\n      partner:\n        maxAttempts: 5\n        waitDuration: 1s\n        enableExponentialBackoff: true\n        exponentialBackoffMultiplier: 2\n        exponentialMaxWaitDuration: 30s\n",
        );
        assert_eq!(r4j.backoff.rule, RuleName::Exponential);
        let (fixed, summary) = suggested_fix(&r4j);
        assert_eq!(fixed.backoff.rule, RuleName::Full);
        assert_eq!(fixed.backoff.cap, Duration::from_secs(30));
        assert_eq!(fixed.throttle, None);
        assert!(summary.contains("full jitter"), "{summary}");
        let c = compare(
            &r4j,
            &Scenario::default(),
            &Limits::default(),
            1,
            &Cancel::new(),
        )
        .unwrap();
        // Five attempts of doubling pauses end inside the 10 s outage either way; jitter
        // moves the last ones apart, and no client makes more than five.
        assert_eq!(c.config.requests_per_client, 5.0);
        assert!(c.fix.requests_per_client <= 5.0, "{c:?}");
    }
}
