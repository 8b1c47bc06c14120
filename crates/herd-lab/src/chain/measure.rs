//! What the lab measured, and how it compares with the prediction.

use herd_sim::graph::Prediction;

/// Requests one service received during a drive.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// The service.
    pub name: String,
    /// Requests received in all.
    pub received: u64,
    /// Mean per entry request.
    pub per_view: f64,
    /// Standard error of that mean.
    pub std_error: f64,
}

/// The result of a drive.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Entry requests asked for.
    pub views_requested: u64,
    /// Entry requests completed.
    pub views: u64,
    /// Entry requests whose answer was not 2xx.
    pub failed_views: u64,
    /// Stopped early (Ctrl-C).
    pub interrupted: bool,
    names: Vec<String>,
    sum: Vec<u64>,
    sum_sq: Vec<f64>,
}

/// Fewest entry requests from which a graph with random failures is judged: with fewer, a
/// standard error computed from the sample says little (from one view it is zero), so a
/// difference would be reported as significant when it is only noise.
pub const MIN_VIEWS_TO_JUDGE: u64 = 30;

/// Measured beside predicted for one service.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The service.
    pub name: String,
    /// Predicted requests per entry request.
    pub predicted: f64,
    /// Measured requests per entry request.
    pub measured: f64,
    /// Standard error of the measurement.
    pub std_error: f64,
    /// Whether they agree: exactly (to 1e-9) for deterministic graphs, otherwise within
    /// `5 · std_error + slack · (1 + predicted)`.
    pub agrees: bool,
}

impl Measurement {
    pub(crate) fn new(names: Vec<String>, views_requested: u64) -> Self {
        let n = names.len();
        Self {
            views_requested,
            views: 0,
            failed_views: 0,
            interrupted: false,
            names,
            sum: vec![0; n],
            sum_sq: vec![0.0; n],
        }
    }

    pub(crate) fn record(&mut self, before: &[u64], after: &[u64], ok: bool) {
        self.views += 1;
        if !ok {
            self.failed_views += 1;
        }
        for (i, (b, a)) in before.iter().zip(after).enumerate() {
            let d = a.saturating_sub(*b);
            self.sum[i] += d;
            self.sum_sq[i] += (d as f64) * (d as f64);
        }
    }

    /// Requests each service received in all, indexed like the graph's services.
    #[must_use]
    pub fn received(&self) -> Vec<u64> {
        self.sum.clone()
    }

    /// Per service: totals, mean per view and its standard error.
    #[must_use]
    pub fn services(&self) -> Vec<Measured> {
        let n = self.views.max(1) as f64;
        self.names
            .iter()
            .zip(self.sum.iter().zip(&self.sum_sq))
            .map(|(name, (&s, &sq))| {
                let mean = s as f64 / n;
                let variance = if self.views > 1 {
                    ((sq - s as f64 * mean) / (n - 1.0)).max(0.0)
                } else {
                    0.0
                };
                Measured {
                    name: name.clone(),
                    received: s,
                    per_view: mean,
                    std_error: (variance / n).sqrt(),
                }
            })
            .collect()
    }

    /// Whether the sample is too small to compare with a prediction: a random graph with
    /// fewer than [`MIN_VIEWS_TO_JUDGE`] completed views. A deterministic graph is judged
    /// from one view.
    #[must_use]
    pub fn too_small_to_judge(&self, deterministic: bool) -> bool {
        !deterministic && self.views < MIN_VIEWS_TO_JUDGE
    }

    /// Sets the measurement beside the prediction, service by service.
    #[must_use]
    pub fn compare(
        &self,
        prediction: &Prediction,
        deterministic: bool,
        slack: f64,
    ) -> Vec<Comparison> {
        self.services()
            .into_iter()
            .zip(&prediction.receives)
            .map(|(m, &predicted)| {
                let diff = (m.per_view - predicted).abs();
                let agrees = if deterministic {
                    diff <= 1e-9 * (1.0 + predicted)
                } else {
                    diff <= 5.0 * m.std_error + slack * (1.0 + predicted)
                };
                Comparison {
                    name: m.name,
                    predicted,
                    measured: m.per_view,
                    std_error: m.std_error,
                    agrees,
                }
            })
            .collect()
    }
}
