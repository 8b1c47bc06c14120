//! The storm's shortcut flags (`--clients`, `--capacity-rps`, `--outage-s`,
//! `--refusal-cost`, `--latency-ms`), one definition for `herd storm` and `herd sweep`: each
//! overrides one field of a storm scenario, with the same range check whoever calls it.
use clap::Args;
use herd_sim::Scenario;

use crate::error::{CliError, CliResult};

/// What a person sizing a real system changes first.
#[derive(Debug, Default, Args)]
pub(crate) struct StormFlags {
    /// Clients in the burst (overrides `clients.count`).
    #[arg(long, value_name = "N")]
    pub(crate) clients: Option<u64>,
    /// The server's capacity in answers per second (overrides `server.capacity`, which is per
    /// window: R × window_ms / 1000 must be a whole number, at least 1).
    #[arg(long, value_name = "R")]
    pub(crate) capacity_rps: Option<f64>,
    /// One outage from t = 0 lasting S seconds (0: none), instead of the scenario's outages.
    #[arg(long, value_name = "S")]
    pub(crate) outage_s: Option<f64>,
    /// A refusal's share of an answer's work, 0 <= R < 1 (overrides `server.refusal_cost`).
    #[arg(long, value_name = "R")]
    pub(crate) refusal_cost: Option<f64>,
    /// Network noise: each retry reaches the server a delay later, MEAN or MEAN,SD in
    /// milliseconds (overrides `clients.latency.mean_ms` and `sd_ms`; SD defaults to 0, a
    /// constant delay; the law stays the scenario's, normal unless it says lognormal).
    #[arg(long, value_name = "MEAN[,SD]", allow_hyphen_values = true)]
    pub(crate) latency_ms: Option<String>,
}

impl StormFlags {
    /// Whether any flag is given.
    pub(crate) fn any(&self) -> bool {
        self.clients.is_some()
            || self.capacity_rps.is_some()
            || self.outage_s.is_some()
            || self.refusal_cost.is_some()
            || self.latency_ms.is_some()
    }

    /// The names of the flags given, for an error that says which do not apply.
    pub(crate) fn given(&self) -> Vec<&'static str> {
        [
            ("--clients", self.clients.is_some()),
            ("--capacity-rps", self.capacity_rps.is_some()),
            ("--outage-s", self.outage_s.is_some()),
            ("--refusal-cost", self.refusal_cost.is_some()),
            ("--latency-ms", self.latency_ms.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, set)| set.then_some(flag))
        .collect()
    }

    /// Applies every flag given to `s` (`--clients` last, so that a caller scaling the
    /// capacity with the clients sees the scenario's own count before it). The scenario as a
    /// whole is checked afterwards by whoever runs it, naming the field.
    ///
    /// # Errors
    ///
    /// A value out of its range, naming the flag.
    pub(crate) fn apply(&self, s: &mut Scenario) -> CliResult {
        if let Some(r) = self.refusal_cost {
            s.server.refusal_cost = super::args::check_half_open("refusal_cost", r, 0.0, 1.0)?;
        }
        if let Some(text) = &self.latency_ms {
            let (mean, sd) = latency_ms(text)?;
            s.clients.latency.mean_ms = mean;
            s.clients.latency.sd_ms = sd;
        }
        if let Some(rps) = self.capacity_rps {
            let per_window = rps * s.window_ms / 1000.0;
            if !per_window.is_finite() || per_window < 1.0 || per_window.fract() != 0.0 {
                return Err(CliError::input(format!(
                    "capacity_rps must give a whole number of at least 1 answer per {} ms \
                     window, got {rps} (--capacity-rps)",
                    s.window_ms
                )));
            }
            s.server.capacity = per_window as u64;
        }
        if let Some(outage) = self.outage_s {
            let outage = super::args::check_closed("outage_s", outage, 0.0, s.horizon_s)?;
            s.server.outages = if outage > 0.0 {
                vec![[0.0, outage]]
            } else {
                Vec::new()
            };
        }
        if let Some(n) = self.clients {
            if n == 0 {
                return Err(CliError::input(
                    "clients must be at least 1, got 0 (--clients)",
                ));
            }
            s.clients.count = n;
        }
        Ok(())
    }
}

/// `--latency-ms MEAN[,SD]`: two numbers of milliseconds in `[0, 10^12]`, SD 0 when left out.
fn latency_ms(text: &str) -> CliResult<(f64, f64)> {
    let bad = || {
        CliError::input(format!(
            "latency_ms must be MEAN or MEAN,SD in milliseconds, got {text:?} (--latency-ms)"
        ))
    };
    let mut numbers = text.split(',').map(|p| p.trim().parse::<f64>());
    let mean = numbers.next().ok_or_else(bad)?.map_err(|_| bad())?;
    let sd = match numbers.next() {
        None => 0.0,
        Some(sd) => sd.map_err(|_| bad())?,
    };
    if numbers.next().is_some() {
        return Err(bad());
    }
    let check = |v: f64| super::args::check_closed("latency_ms", v, 0.0, 1e12);
    Ok((check(mean)?, check(sd)?))
}
