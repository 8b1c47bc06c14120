//! The *Your config* scene's what-if: each retrying policy of a pasted configuration through
//! a brownout, an overload and an outage of its backend, as set beside the fix the findings
//! derive, exactly as `herd check` runs a file (`herd_sim::check::whatif::compare`, the same
//! options, the same seed). The runs are `herd check --format json`'s `runs`, field for field,
//! each with the load at the backend over time for the chart.
//!
//! Nothing here simulates: this module bounds the request, calls the what-if, and shapes the
//! answer.
//!
//! # Limits
//!
//! The work is known before anything runs, from the text and the knobs alone: the policies
//! (at most [`MAX_WHATIF_POLICIES`] retrying ones, else 400), each fault's simulated time
//! (`before_s + fault + after_s`, at most [`MAX_WHATIF_RUN_S`] per run; the outage's length is
//! derived from the policy's retry window before it runs) and the new requests all runs start
//! (`rps ×` that time, summed over faults, policies and both sides, at most
//! [`MAX_WHATIF_REQUESTS`]). A run's attempts are capped too ([`MAX_WHATIF_ATTEMPTS`]: a
//! run past it stops with a 400). Each refusal names the limit and the policy's line.
use herd_sim::check::whatif::{self, Fault, FaultComparison, Figures, FixChange, WhatIfOptions};
use herd_sim::check::{Report, System, Translation};
use herd_sim::{Cancel, Limits, ScenarioError};
use serde::{Deserialize, Serialize};

use super::check::{FILE, check_text, format_system, read};
use super::error::ApiError;

/// Most retrying policies one what-if request runs (each three faults, as set and fixed).
pub const MAX_WHATIF_POLICIES: usize = 6;
/// Most simulated seconds of one fault's run (normal traffic, the fault, and after it).
pub const MAX_WHATIF_RUN_S: f64 = 1_800.0;
/// Most new requests one what-if request may simulate, over every policy, fault and side:
/// under three seconds of one core in a debug build (3 million new requests of a policy of
/// five attempts, capacity 10 000/s, took 2.1 s), well within the page's 10 s per run; a
/// policy at the defaults is about 300 000.
pub const MAX_WHATIF_REQUESTS: f64 = 4_000_000.0;
/// Most attempts one fault's run may make at the backend; past it the run stops with a 400.
pub const MAX_WHATIF_ATTEMPTS: u64 = 10_000_000;
/// Most points of each load series sent for a chart: past it, bins of 100 ms are merged,
/// keeping the busiest (as `herd check --chart` draws them).
pub const MAX_LOAD_POINTS: usize = 600;
/// Largest `capacity_rps` the page offers (the what-if's own range goes higher; the request
/// cap binds long before).
pub const MAX_WHATIF_CAPACITY_RPS: f64 = 100_000.0;

/// The width of a load bin, in seconds (`FaultRun::load`'s 100 ms).
const BIN_S: f64 = 0.1;

/// What the page sends: the pasted text and the what-if's knobs, named as `herd check`'s
/// flags (`capacity_rps` is `--capacity-rps`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhatIfRequest {
    /// The configuration's text (at most [`super::check::MAX_CHECK_TEXT_BYTES`]).
    pub text: String,
    /// `auto` (the default) or a system's name, as [`super::check::CheckRequest::format`].
    #[serde(default = "default_format")]
    pub format: String,
    /// The runs' seed, as `--seed`.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// New requests per second, as `--rps` (absent or `null`: half of `capacity_rps`).
    #[serde(default)]
    pub rps: Option<f64>,
    /// The backend's capacity, answers per second, as `--capacity-rps`.
    #[serde(default = "default_capacity_rps")]
    pub capacity_rps: f64,
    /// The brownout's share of failing attempts, 0 to 1, as `--brownout`.
    #[serde(default = "default_brownout")]
    pub brownout: f64,
}

fn default_format() -> String {
    "auto".to_owned()
}
fn default_seed() -> u64 {
    WhatIfOptions::default().seed
}
fn default_capacity_rps() -> f64 {
    WhatIfOptions::default().capacity_rps
}
fn default_brownout() -> f64 {
    WhatIfOptions::default().brownout
}

/// The settings the runs used, as `herd check --format json`'s `whatif`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIfSettings {
    /// New requests per second.
    pub rps: f64,
    /// The backend's capacity, answers per second.
    pub capacity_rps: f64,
    /// The brownout's share of failing attempts.
    pub brownout: f64,
    /// The overload's capacity as a share of the offered load.
    pub overload: f64,
    /// What the failing backend answers.
    pub failure_status: String,
    /// The seed.
    pub seed: u64,
}

/// The load at the backend over one fault's run, for the chart.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadView {
    /// Each point's width in seconds (100 ms, or more when bins were merged).
    pub bin_s: f64,
    /// Attempts per second at the backend as set, the busiest bin of each point.
    pub as_set: Vec<f64>,
    /// The same with the fix.
    pub fix: Vec<f64>,
}

/// One policy in one fault, as set beside the fix: `herd check --format json`'s run, with
/// the policy's line, the fault's start and the load over time besides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIfRunView {
    /// The file (`config`, the pasted text).
    pub file: &'static str,
    /// The policy's name.
    pub policy: String,
    /// The policy's line.
    pub line: usize,
    /// The fault (`brownout`, `overload`, `outage`).
    pub scenario: Fault,
    /// When the fault started, seconds from the run's start.
    pub start_s: f64,
    /// How long it lasted, in seconds.
    pub fault_s: f64,
    /// The figures as set.
    pub as_set: Figures,
    /// The figures with the fix.
    pub fix: Figures,
    /// The fix's changes, each with the snippet to paste.
    pub fix_changes: Vec<FixChange>,
    /// Why the fix is the policy as set, when it is.
    pub no_fix: Option<String>,
    /// Why this fault runs the same as set and with the fix, when it does.
    pub same_because: Option<String>,
    /// What the run could not express.
    pub notes: Vec<String>,
    /// The load at the backend over time.
    pub load: LoadView,
}

/// The work the request asked for, as counted before it ran.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIfWork {
    /// Retrying policies run.
    pub policies: usize,
    /// New requests simulated over every run.
    pub requests: f64,
    /// The longest run, in simulated seconds.
    pub longest_run_s: f64,
}

/// The what-if's answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIfAnswer {
    /// The system whose semantics applied.
    pub system: &'static str,
    /// Whether it was detected from the text.
    pub detected: bool,
    /// The settings the runs used.
    pub whatif: WhatIfSettings,
    /// Per retrying policy, its three faults in order.
    pub runs: Vec<WhatIfRunView>,
    /// The work counted before the runs.
    pub work: WhatIfWork,
}

/// A what-if error naming the request's parameter, which is the field's own name.
fn option_error(e: &ScenarioError) -> ApiError {
    if e.is_cancelled() {
        return ApiError::busy(e.to_string());
    }
    match e.field_name() {
        Some(f) if !f.contains('.') && f != "policy" => {
            ApiError::bad_request(format!("{f}: {}", e.message()))
        }
        _ => ApiError::bad_request(e.to_string()),
    }
}

fn policy_error(t: &Translation, e: &ScenarioError) -> ApiError {
    if e.is_cancelled() {
        return ApiError::busy(e.to_string());
    }
    ApiError::bad_request(format!(
        "text: line {}: {} (the what-if): {e}",
        t.line, t.name
    ))
}

impl WhatIfRequest {
    /// The what-if's options from the knobs, each checked against the page's range and then
    /// by the what-if itself.
    ///
    /// # Errors
    ///
    /// A 400 naming `capacity_rps`, `rps` or `brownout`.
    pub fn options(&self) -> Result<WhatIfOptions, ApiError> {
        if !(self.capacity_rps.is_finite() && self.capacity_rps <= MAX_WHATIF_CAPACITY_RPS) {
            return Err(ApiError::bad_request(format!(
                "capacity_rps: must be above 0 and at most {MAX_WHATIF_CAPACITY_RPS} on the page, got {}",
                self.capacity_rps
            )));
        }
        let mut o = WhatIfOptions::default();
        o.capacity_rps = self.capacity_rps;
        o.rps = self.rps;
        o.brownout = self.brownout;
        o.seed = self.seed;
        o.check().map_err(|e| option_error(&e))?;
        Ok(o)
    }

    /// Reads the text and counts the work, before anything runs (and before a simulation
    /// slot is taken: a request past a limit is refused even when the server is busy).
    /// The system, whether it was detected, the options, and the report.
    ///
    /// # Errors
    ///
    /// A 400 naming `text` (with the line at fault), `format`, `capacity_rps`, `rps` or
    /// `brownout`, or the limit the work would pass.
    pub fn check(&self) -> Result<(System, bool, WhatIfOptions, Report), ApiError> {
        check_text(&self.text)?;
        let named = format_system(&self.format)?;
        let options = self.options()?;
        let (system, report) = read(&self.text, named)?;
        work(&retrying(&report)?, &options)?;
        Ok((system, named.is_none(), options, report))
    }

    /// Reads the text, bounds the work, and runs each retrying policy's three faults beside
    /// its fix (CPU work: call it off the executor), stopped when `cancel` is set.
    ///
    /// # Errors
    ///
    /// As [`WhatIfRequest::check`]; a 400 for a run past [`MAX_WHATIF_ATTEMPTS`]; a 503 when
    /// cancelled.
    pub fn run(&self, cancel: &Cancel) -> Result<WhatIfAnswer, ApiError> {
        let (system, detected, options, report) = self.check()?;
        let retrying = retrying(&report)?;
        let work = work(&retrying, &options)?;
        let limits = Limits {
            max_run_attempts: MAX_WHATIF_ATTEMPTS,
            ..Limits::interactive()
        };
        let mut runs = Vec::new();
        for t in retrying {
            let c = whatif::compare(&[t], &options, &limits, cancel)
                .map_err(|e| policy_error(t, &e))?;
            runs.extend(c.faults.iter().map(|f| WhatIfRunView {
                file: FILE,
                policy: t.name.clone(),
                line: t.line,
                scenario: f.fault,
                start_s: f.start_s,
                fault_s: f.fault_s,
                as_set: f.as_set.clone(),
                fix: f.fix.clone(),
                fix_changes: c.fix_changes.clone(),
                no_fix: c.no_fix.clone(),
                same_because: f.same_because.clone(),
                notes: f.notes.clone(),
                load: load_view(f),
            }));
        }
        Ok(WhatIfAnswer {
            system: system.as_str(),
            detected,
            whatif: WhatIfSettings {
                rps: options.offered_rps(),
                capacity_rps: options.capacity_rps,
                brownout: options.brownout,
                overload: options.overload,
                failure_status: options.failure_status.to_string(),
                seed: options.seed,
            },
            runs,
            work,
        })
    }
}

/// The retrying policies, at most [`MAX_WHATIF_POLICIES`] of them.
fn retrying(report: &Report) -> Result<Vec<&Translation>, ApiError> {
    let retrying: Vec<&Translation> = report.configs.iter().filter(|t| t.retries()).collect();
    if retrying.len() > MAX_WHATIF_POLICIES {
        return Err(ApiError::bad_request(format!(
            "text: {} retrying policies, more than the page's what-if runs \
             (whatif_policies: {MAX_WHATIF_POLICIES}); paste fewer, or run `herd check` on the \
             command line",
            retrying.len()
        )));
    }
    Ok(retrying)
}

/// The work of `policies` under `options`, counted before any runs: each fault's simulated
/// time and the new requests it starts, as set and with the fix (one run when there is no
/// fix), as `whatif::compare` runs them.
fn work(policies: &[&Translation], options: &WhatIfOptions) -> Result<WhatIfWork, ApiError> {
    let mut requests = 0.0;
    let mut longest_run_s: f64 = 0.0;
    for &t in policies {
        let outage_s = whatif::outage_s(&[t], options).map_err(|e| policy_error(t, &e))?;
        let sides = if whatif::fix(&[t]).changes.is_empty() {
            1.0
        } else {
            2.0
        };
        for fault in Fault::ALL {
            let fault_s = match fault {
                Fault::Brownout => options.brownout_s,
                Fault::Overload => options.overload_s,
                _ => outage_s,
            };
            let run_s = options.before_s + fault_s + options.after_s;
            if run_s > MAX_WHATIF_RUN_S {
                return Err(ApiError::bad_request(format!(
                    "text: line {}: {}: its {fault} runs {run_s:.0} simulated seconds (an outage \
                     of twice its whole retry window), more than the page's limit \
                     (whatif_run_s: {MAX_WHATIF_RUN_S}); shorten its timeouts or pauses, or run \
                     `herd check` on the command line",
                    t.line, t.name
                )));
            }
            longest_run_s = longest_run_s.max(run_s);
            requests += sides * options.offered_rps() * run_s;
        }
        if requests > MAX_WHATIF_REQUESTS {
            return Err(ApiError::bad_request(format!(
                "rps: the what-if up to line {} ({}) would simulate about {requests:.0} new \
                 requests, more than the page's limit (whatif_requests: {MAX_WHATIF_REQUESTS}); \
                 ask for fewer requests a second, paste fewer policies, or run `herd check` on \
                 the command line",
                t.line, t.name
            )));
        }
    }
    Ok(WhatIfWork {
        policies: policies.len(),
        requests,
        longest_run_s,
    })
}

/// The load of `f` as set and fixed, bins merged (the busiest kept) to at most
/// [`MAX_LOAD_POINTS`] points, both sides alike.
fn load_view(f: &FaultComparison) -> LoadView {
    let [set, fix] = &f.load;
    let group = set.len().max(fix.len()).div_ceil(MAX_LOAD_POINTS).max(1);
    let merge = |load: &[f64]| -> Vec<f64> {
        load.chunks(group)
            .map(|c| c.iter().copied().fold(0.0, f64::max))
            .collect()
    };
    LoadView {
        bin_s: BIN_S * group as f64,
        as_set: merge(set),
        fix: merge(fix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd_sim::check::{self, Input};

    fn request(text: &str) -> WhatIfRequest {
        WhatIfRequest {
            text: text.to_owned(),
            format: default_format(),
            seed: default_seed(),
            rps: None,
            capacity_rps: default_capacity_rps(),
            brownout: default_brownout(),
        }
    }

    #[test]
    fn every_example_fits_the_limits() {
        for (name, _, text) in super::super::check::EXAMPLES {
            let report = check::check(&[Input::new(FILE, text)]).expect(name);
            let policies = retrying(&report).expect(name);
            let w = work(&policies, &request(text).options().unwrap()).expect(name);
            assert!(w.requests <= MAX_WHATIF_REQUESTS / 2.0, "{name}: {w:?}");
        }
    }

    #[test]
    fn merged_bins_keep_the_busiest() {
        let mut options = WhatIfOptions::default();
        options.brownout_s = 1.0;
        options.after_s = 1.0;
        options.before_s = 0.0;
        let text = super::super::check::EXAMPLES[0].2;
        let report = check::check(&[Input::new(FILE, text)]).unwrap();
        let t = report.configs.iter().find(|t| t.retries()).unwrap();
        let c = whatif::compare(&[t], &options, &Limits::default(), &Cancel::new()).unwrap();
        let mut f = c.faults[0].clone();
        // A long series: 1500 bins merge three to a point, each the busiest of its three.
        f.load = [
            (0..1500).map(f64::from).collect(),
            (0..1500).map(|i| f64::from(1500 - i)).collect(),
        ];
        let v = load_view(&f);
        assert_eq!(v.as_set.len(), 500);
        assert!((v.bin_s - 0.3).abs() < 1e-12);
        assert_eq!(v.as_set[0], 2.0);
        assert_eq!(v.fix[0], 1500.0);
    }
}
