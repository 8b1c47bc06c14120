//! The *Your config* scene: a pasted retry configuration (gRPC, Envoy, Istio, Linkerd, AWS or
//! Resilience4j), read by `herd_sim::check` exactly as `herd check` reads a file: its
//! translation into herd's terms (each field marked set or default), its findings, and the
//! default storm run with each policy's semantics beside the suggested fix. The same text's
//! what-if (three faults on steady traffic) is [`super::whatif`]'s, which reads it through
//! `read`.
//!
//! Nothing here translates: the reading, the defaults, the findings and the fix are
//! `herd_sim::check`'s; this module only bounds the request and shapes the answer.
//!
//! The storm is the default one with the page's three knobs, as `herd check`'s flags set
//! them: `clients` (`--clients`), `capacity` per 100 ms window (`--capacity-rps` / 10) and
//! `outage_s` (`--outage-s`), each checked against the page's ranges and then, as a whole
//! scenario, against the simulator's [`Limits`]; an error names the knob, so the page marks
//! that field.
//!
//! The work is bounded before anything runs: the text is at most [`MAX_CHECK_TEXT_BYTES`]
//! (the route's body at most [`MAX_CHECK_BODY_BYTES`], room for JSON escapes); at most
//! [`MAX_CHECK_STORMS`] policies are run in the storm (the answer says how many were not);
//! and a waiting client makes at most one attempt per step, so `clients · min(attempts,
//! steps to its deadline)` bounds each run's attempts: a config whose runs could exceed
//! [`MAX_STORM_ATTEMPTS`] in all is refused with a 400 naming the policy's line.
use herd_sim::check::storm::{self as check_storm, StormComparison, StormOutcome};
use herd_sim::check::{self, Finding, Input, Report, System, Translation};
use herd_sim::{Cancel, Limits, RunResult, Scenario, ScenarioError};
use serde::{Deserialize, Serialize};

use super::error::ApiError;
use super::limits::{MAX_CAPACITY, MAX_OUTAGE_S, MAX_STORM_ATTEMPTS, MAX_STORM_CLIENTS};
use super::rules::in_range;

/// Largest pasted configuration, in bytes.
pub const MAX_CHECK_TEXT_BYTES: usize = 64 * 1024;
/// Largest request body of `POST /api/check`: the text, JSON-escaped, and the other fields.
pub const MAX_CHECK_BODY_BYTES: usize = 4 * MAX_CHECK_TEXT_BYTES;
/// Most policies of one configuration run in the storm (each twice: as configured, fixed).
pub const MAX_CHECK_STORMS: usize = 6;
/// Most windows of each run sent for the chart (60 s of the default scenario).
pub const MAX_CHART_WINDOWS: usize = 600;

/// The name findings and errors give the pasted text.
pub(crate) const FILE: &str = "config";

/// The shipped examples (`scenarios/configs/`), as the page's buttons load them:
/// `(name, label, text)`.
pub const EXAMPLES: [(&str, &str, &str); 6] = [
    (
        "grpc-service-config.json",
        "gRPC service config",
        include_str!("../../../../scenarios/configs/grpc-service-config.json"),
    ),
    (
        "envoy-route.yaml",
        "Envoy route",
        include_str!("../../../../scenarios/configs/envoy-route.yaml"),
    ),
    (
        "istio-dump.yaml",
        "Istio VirtualService",
        include_str!("../../../../scenarios/configs/istio-dump.yaml"),
    ),
    (
        "linkerd-serviceprofile.yaml",
        "Linkerd ServiceProfile",
        include_str!("../../../../scenarios/configs/linkerd-serviceprofile.yaml"),
    ),
    (
        "aws-config",
        "AWS shared config",
        include_str!("../../../../scenarios/configs/aws-config"),
    ),
    (
        "resilience4j-application.yml",
        "Resilience4j application.yml",
        include_str!("../../../../scenarios/configs/resilience4j-application.yml"),
    ),
];

/// One shipped example, as `GET /api/check/examples` lists it.
#[derive(Clone, Debug, Serialize)]
pub struct CheckExample {
    /// Its file name under `scenarios/configs/`.
    pub name: &'static str,
    /// What the page's button says.
    pub label: &'static str,
    /// The file's text.
    pub text: &'static str,
}

/// The shipped examples.
#[must_use]
pub fn examples() -> Vec<CheckExample> {
    EXAMPLES
        .iter()
        .map(|&(name, label, text)| CheckExample { name, label, text })
        .collect()
}

/// What the page sends: the pasted text and, optionally, its system.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The configuration's text (at most [`MAX_CHECK_TEXT_BYTES`]).
    pub text: String,
    /// `auto` (the default: detected from the text) or a system's name (`grpc`, `envoy`,
    /// `istio`, `linkerd`, `aws`, `resilience4j`).
    #[serde(default = "default_format")]
    pub format: String,
    /// The storm's seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Clients in the storm's burst (1..=200 000), as `herd check --clients`.
    #[serde(default = "default_clients")]
    pub clients: u64,
    /// The server's answers per 100 ms window (1..=1 000 000), as `--capacity-rps` / 10.
    #[serde(default = "default_capacity")]
    pub capacity: u64,
    /// The outage `[0, outage_s)` in seconds (0..=600; 0 = none), as `--outage-s`.
    #[serde(default = "default_outage")]
    pub outage_s: f64,
}

fn default_clients() -> u64 {
    Scenario::default().clients.count
}
fn default_capacity() -> u64 {
    Scenario::default().server.capacity
}
fn default_outage() -> f64 {
    Scenario::default()
        .server
        .outages
        .first()
        .map_or(0.0, |o| o[1] - o[0])
}

fn default_format() -> String {
    "auto".to_owned()
}
fn default_seed() -> u64 {
    Scenario::default().seed
}

/// A value of the translation in the system's spelling, and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FieldSource {
    /// The field, as the system spells it.
    pub field: &'static str,
    /// `set` (written in the text) or `default` (the system's default applied).
    pub source: &'static str,
    /// The line it was set on (absent for a default).
    pub line: Option<usize>,
}

/// The backoff, in milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackoffView {
    /// herd's rule with the system's pauses.
    pub rule: &'static str,
    /// The first pause's scale.
    pub base_ms: f64,
    /// The largest pause.
    pub cap_ms: f64,
    /// Growth per failure.
    pub multiplier: f64,
    /// ± jitter fraction (1 for full jitter, 0 for none).
    pub jitter: f64,
}

/// A budget or throttle: its kind and parameters.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ThrottleView {
    /// `ratio`, `grpc`, `envoy-budget`, `envoy-max-retries`, `aws-standard`, `aws-adaptive`.
    pub kind: &'static str,
    /// `(name, value)` pairs.
    pub params: Vec<(&'static str, f64)>,
}

/// One retry policy in herd's terms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyView {
    /// Where the policy starts.
    pub line: usize,
    /// The method, route, profile or instance it governs.
    pub name: String,
    /// Attempts per call after the system's clamps; `null` when a budget bounds them.
    pub max_attempts: Option<u32>,
    /// The pauses.
    pub backoff: BackoffView,
    /// Each attempt's timeout.
    pub per_try_timeout_ms: Option<f64>,
    /// The whole call's timeout.
    pub timeout_ms: Option<f64>,
    /// What is retried.
    pub retry_on: Vec<String>,
    /// The budget or throttle.
    pub throttle: Option<ThrottleView>,
    /// Hedging copies and delay, if hedged.
    pub hedging: Option<(u32, f64)>,
    /// Each field read: set on a line, or the system's default.
    pub fields: Vec<FieldSource>,
    /// Whether the policy retries at all.
    pub retries: bool,
}

/// A finding, as `herd check --format json` prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FindingView {
    /// `info`, `warning` or `error`.
    pub severity: &'static str,
    /// Its stable name.
    pub code: &'static str,
    /// The line at fault.
    pub line: usize,
    /// What happens.
    pub message: String,
    /// What to change.
    pub fix: String,
}

/// One side of a storm comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutcomeView {
    /// Clients served by the horizon.
    pub served: u64,
    /// Clients that gave up.
    pub gave_up: u64,
    /// When the last client was served, if all were.
    pub all_served_s: Option<f64>,
    /// Attempts per client.
    pub requests_per_client: f64,
    /// Most attempts in one window after the outage.
    pub peak_after_outage: u64,
    /// Attempts per window from t = 0, for the chart (at most [`MAX_CHART_WINDOWS`]).
    pub arrivals: Vec<u64>,
}

/// One policy's storm beside its fix.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StormView {
    /// The policy's line.
    pub line: usize,
    /// The policy's name.
    pub name: String,
    /// As configured.
    pub config: OutcomeView,
    /// With the suggested fix.
    pub fix: OutcomeView,
    /// What the fix changes.
    pub fix_summary: String,
    /// What the storm could not express.
    pub notes: Vec<String>,
    /// A window's length in seconds, for the chart.
    pub window_s: f64,
    /// Answers per window.
    pub capacity: f64,
}

/// The storm the policies ran in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckStorm {
    /// Clients in the burst.
    pub clients: u64,
    /// The outage, `[start_s, end_s)`.
    pub outages: Vec<[f64; 2]>,
    /// The seed.
    pub seed: u64,
    /// Each retrying policy's comparison, at most [`MAX_CHECK_STORMS`].
    pub runs: Vec<StormView>,
    /// Retrying policies not run (past [`MAX_CHECK_STORMS`]).
    pub not_run: usize,
}

/// The scene's answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckAnswer {
    /// The system whose semantics applied.
    pub system: &'static str,
    /// Whether it was detected from the text (not named by `format`).
    pub detected: bool,
    /// Every retry policy found.
    pub policies: Vec<PolicyView>,
    /// The findings, in line order.
    pub findings: Vec<FindingView>,
    /// Keys no translator reads: `(line, field)`.
    pub ignored: Vec<(usize, String)>,
    /// The storm beside the fix.
    pub storm: CheckStorm,
}

impl CheckRequest {
    /// Checks what is cheap to check: the text's size, the storm's knobs against the page's
    /// ranges, and the format's name.
    ///
    /// # Errors
    ///
    /// A 400 naming `text`, `clients`, `capacity`, `outage_s` or `format`.
    pub fn check(&self) -> Result<Option<System>, ApiError> {
        check_text(&self.text)?;
        in_range("clients", self.clients, 1, MAX_STORM_CLIENTS)?;
        in_range("capacity", self.capacity, 1, MAX_CAPACITY)?;
        if !self.outage_s.is_finite() {
            return Err(ApiError::bad_request("outage_s must be a finite number"));
        }
        in_range("outage_s", self.outage_s, 0.0, MAX_OUTAGE_S)?;
        format_system(&self.format)
    }

    /// Reads the text through `herd_sim::check`, bounds the storm's work, and runs each
    /// retrying policy beside its fix (CPU work: call it off the executor), the storms stopped
    /// when `cancel` is set (the client left, the server is stopping, or the page's time
    /// limit passed).
    ///
    /// # Errors
    ///
    /// A 400 naming `format` or `text` (with the line at fault in the pasted text), or when
    /// the storm would exceed the page's work cap; a 503 when cancelled (nobody reads it).
    pub fn run(&self, cancel: &Cancel) -> Result<CheckAnswer, ApiError> {
        let named = self.check()?;
        let (system, report) = read(&self.text, named)?;
        let base = self.scenario()?;
        let storm = storms(&report, &base, cancel)?;
        Ok(CheckAnswer {
            system: system.as_str(),
            detected: named.is_none(),
            policies: report.configs.iter().map(policy_view).collect(),
            findings: report.findings.iter().map(finding_view).collect(),
            ignored: report
                .ignored
                .iter()
                .map(|i| (i.line, i.field.clone()))
                .collect(),
            storm,
        })
    }
}

impl CheckRequest {
    /// The default storm with the page's knobs, checked as a whole against the simulator's
    /// interactive [`Limits`]; a field at fault is named as the page names it.
    ///
    /// # Errors
    ///
    /// A 400 naming `clients`, `capacity`, `outage_s` or `seed`.
    pub fn scenario(&self) -> Result<Scenario, ApiError> {
        let d = Scenario::default();
        let s = Scenario {
            seed: self.seed,
            clients: herd_sim::Clients {
                count: self.clients,
                ..d.clients
            },
            server: herd_sim::Server {
                capacity: self.capacity,
                outages: if self.outage_s > 0.0 {
                    vec![[0.0, self.outage_s]]
                } else {
                    Vec::new()
                },
                ..d.server
            },
            ..d
        };
        herd_sim::Simulation::new(&s, &Limits::interactive())
            .map_err(super::storm::scenario_error)?;
        Ok(s)
    }
}

/// Checks the pasted text's size, and that there is one.
///
/// # Errors
///
/// A 400 naming `text`.
pub(crate) fn check_text(text: &str) -> Result<(), ApiError> {
    if text.len() > MAX_CHECK_TEXT_BYTES {
        return Err(ApiError::bad_request(format!(
            "text: {} bytes, more than the page reads ({MAX_CHECK_TEXT_BYTES})",
            text.len()
        )));
    }
    if text.trim().is_empty() {
        return Err(ApiError::bad_request(
            "text: empty; paste a retry configuration",
        ));
    }
    Ok(())
}

/// The system `format` names: `None` for `auto` (detect it from the text).
///
/// # Errors
///
/// A 400 naming `format`.
pub(crate) fn format_system(format: &str) -> Result<Option<System>, ApiError> {
    if format.eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    System::parse(format).map(Some).ok_or_else(|| {
        let names: Vec<&str> = System::ALL.iter().map(|s| s.as_str()).collect();
        ApiError::bad_request(format!(
            "format: unknown system {format:?}; expected auto or one of {}",
            names.join(", ")
        ))
    })
}

/// Reads `text` through `herd_sim::check` as `herd check` reads a file: as the `named`
/// system, or the one detected from it. The system and the report.
///
/// # Errors
///
/// A 400 naming `format` (no system detected) or `text` (with the line at fault).
pub(crate) fn read(text: &str, named: Option<System>) -> Result<(System, Report), ApiError> {
    let system = match named {
        Some(s) => s,
        None => check::detect(FILE, text).map_err(|e| config_error(&e, true))?,
    };
    let mut input = Input::new(FILE, text.to_owned());
    input.system = Some(system);
    let report = check::check(&[input]).map_err(|e| config_error(&e, false))?;
    Ok((system, report))
}

/// A `CheckError` of the pasted text, naming `text` and its line; for a text of no known
/// system, `format` (the page's picker names it).
fn config_error(e: &check::CheckError, undetected: bool) -> ApiError {
    if undetected {
        return ApiError::bad_request(
            "format: cannot tell which system this configures; pick it (grpc, envoy, istio, \
             linkerd, aws, resilience4j)",
        );
    }
    let mut message = String::from("text");
    if e.line > 0 {
        message.push_str(&format!(": line {}", e.line));
    }
    if !e.field.is_empty() {
        message.push_str(&format!(": {}", e.field));
    }
    message.push_str(&format!(": {}", e.message));
    ApiError::bad_request(message)
}

/// Attempts a run of `t` in `base` may make at most, before it runs: each client makes at
/// most one attempt per step, and at most its attempts (or steps to its deadline).
fn attempts_bound(t: &Translation, base: &Scenario) -> Result<u64, ScenarioError> {
    let (s, _, _) = check_storm::scenario_for(t, base)?;
    let until_s = if s.clients.deadline_s > 0.0 {
        s.clients.deadline_s.min(s.horizon_s)
    } else {
        s.horizon_s
    };
    let steps = (until_s * 1000.0 / s.step_ms).ceil() as u64 + 1;
    let per_client = match s.clients.max_attempts {
        0 => steps,
        a => u64::from(a).min(steps),
    };
    Ok(s.clients.count.saturating_mul(per_client))
}

fn storm_error(t: &Translation, e: &ScenarioError) -> ApiError {
    if e.is_cancelled() {
        return ApiError::busy(e.to_string());
    }
    ApiError::bad_request(format!(
        "text: line {}: {} (the storm): {e}",
        t.line, t.name
    ))
}

/// The retrying policies' storms, bounded before any runs.
fn storms(report: &Report, base: &Scenario, cancel: &Cancel) -> Result<CheckStorm, ApiError> {
    let retrying: Vec<&Translation> = report.configs.iter().filter(|t| t.retries()).collect();
    let shown = &retrying[..retrying.len().min(MAX_CHECK_STORMS)];
    let mut total: u64 = 0;
    for t in shown {
        let (fixed, _) = check_storm::suggested_fix(t);
        let bound = attempts_bound(t, base)
            .and_then(|a| Ok(a.saturating_add(attempts_bound(&fixed, base)?)))
            .map_err(|e| storm_error(t, &e))?;
        total = total.saturating_add(bound);
        if total > MAX_STORM_ATTEMPTS {
            return Err(ApiError::bad_request(format!(
                "text: line {}: {}: the storms up to this policy could make {total} attempts, \
                 more than the page's cap of {MAX_STORM_ATTEMPTS}; give it fewer attempts or a \
                 timeout, fewer clients, or run `herd check` on the command line",
                t.line, t.name
            )));
        }
    }
    let limits = Limits {
        max_run_attempts: MAX_STORM_ATTEMPTS,
        ..Limits::interactive()
    };
    let runs = shown
        .iter()
        .map(|t| {
            check_storm::compare(t, base, &limits, base.seed, cancel)
                .map(|c| storm_view(t, &c))
                .map_err(|e| storm_error(t, &e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(CheckStorm {
        clients: base.clients.count,
        outages: base.server.outages.clone(),
        seed: base.seed,
        runs,
        not_run: retrying.len() - shown.len(),
    })
}

fn storm_view(t: &Translation, c: &StormComparison) -> StormView {
    // Both runs drawn to the same end: the later last attempt, a second after, within the cap.
    let window_s = c.runs[0].series.window_s;
    let last = c
        .runs
        .iter()
        .filter_map(|r| r.last_attempt_s)
        .fold(0.0_f64, f64::max);
    let windows = (((last + 1.0) / window_s).ceil() as usize).clamp(1, MAX_CHART_WINDOWS);
    StormView {
        line: t.line,
        name: c.name.clone(),
        config: outcome_view(&c.config, &c.runs[0], windows),
        fix: outcome_view(&c.fix, &c.runs[1], windows),
        fix_summary: c.fix_summary.clone(),
        notes: c.notes.clone(),
        window_s,
        capacity: c.runs[0].series.capacity,
    }
}

fn outcome_view(o: &StormOutcome, run: &RunResult, windows: usize) -> OutcomeView {
    OutcomeView {
        served: o.served,
        gave_up: o.gave_up,
        all_served_s: o.all_served_s,
        requests_per_client: o.requests_per_client,
        peak_after_outage: o.peak_after_outage,
        arrivals: run.series.arrivals.iter().copied().take(windows).collect(),
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn policy_view(t: &Translation) -> PolicyView {
    let mut fields: Vec<FieldSource> = t
        .field_lines
        .iter()
        .map(|&(field, line)| FieldSource {
            field,
            source: "set",
            line: Some(line),
        })
        .collect();
    fields.extend(t.defaults.iter().map(|&field| FieldSource {
        field,
        source: "default",
        line: None,
    }));
    PolicyView {
        line: t.line,
        name: t.name.clone(),
        max_attempts: t.max_attempts,
        backoff: BackoffView {
            rule: t.backoff.rule.as_str(),
            base_ms: ms(t.backoff.base),
            cap_ms: ms(t.backoff.cap),
            multiplier: t.backoff.multiplier,
            jitter: t.backoff.jitter,
        },
        per_try_timeout_ms: t.per_try_timeout.map(ms),
        timeout_ms: t.timeout.map(ms),
        retry_on: t.retry_on.clone(),
        throttle: t.throttle.as_ref().map(|th| ThrottleView {
            kind: th.kind,
            params: th.params.clone(),
        }),
        hedging: t.hedging.map(|h| (h.max_attempts, ms(h.delay))),
        fields,
        retries: t.retries(),
    }
}

fn finding_view(f: &Finding) -> FindingView {
    FindingView {
        severity: f.severity.as_str(),
        code: f.code,
        line: f.line,
        message: f.message.clone(),
        fix: f.fix.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_reads_and_retries() {
        for (name, _, text) in EXAMPLES {
            let request = CheckRequest {
                text: text.to_owned(),
                format: default_format(),
                seed: 1,
                clients: default_clients(),
                capacity: default_capacity(),
                outage_s: default_outage(),
            };
            let system = request.check().expect("cheap checks pass");
            assert_eq!(system, None, "{name}");
            let s = check::detect(FILE, text).expect(name);
            let report = check::check(&[Input::new(FILE, text)]).expect(name);
            assert!(
                report.configs.iter().any(Translation::retries),
                "{name} ({s}) has a retrying policy"
            );
            for t in report.configs.iter().filter(|t| t.retries()) {
                let bound = attempts_bound(t, &Scenario::default()).expect(name);
                assert!(
                    bound > 0 && bound <= MAX_STORM_ATTEMPTS / 2,
                    "{name}: {bound}"
                );
            }
        }
    }

    #[test]
    fn the_bound_is_clients_times_attempts_or_steps() {
        let text = r#"{"methodConfig": [{"name": [{"service": "a.A"}],
          "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
          "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
        let t = &check::check(&[Input::new(FILE, text)]).unwrap().configs[0];
        let bound = attempts_bound(t, &Scenario::default()).unwrap();
        assert_eq!(bound, 2000 * 4);
        let c = check_storm::compare(
            t,
            &Scenario::default(),
            &Limits::default(),
            1,
            &herd_sim::Cancel::new(),
        )
        .unwrap();
        assert!(c.runs.iter().all(|r| r.requests <= bound), "{:?}", c.config);
    }
}
