//! The lab chain: the requests each service received against `herd amplify`'s prediction.
//!
//! Each service's count is compared by [`crate::chain::agrees`]: exactly on a deterministic
//! graph (every edge fails always or never, no budget), within 4 standard errors on a graph
//! with random failures. A random graph drives fewer than
//! [`MIN_VIEWS_TO_JUDGE`](crate::chain::MIN_VIEWS_TO_JUDGE) views is too small to judge.
use herd_sim::figure;
use herd_sim::graph::Prediction;

use super::{Judgement, Verdict};
use crate::chain::{Comparison, Measurement};

/// One drive of the chain judged: the verdict, and the comparison service by service.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainJudgement {
    /// The verdict and why.
    pub judgement: Judgement,
    /// Measured beside predicted, per service, in the graph's order.
    pub services: Vec<Comparison>,
}

/// Judges one drive of the chain against `prediction`.
#[must_use]
pub fn chain(m: &Measurement, prediction: &Prediction, deterministic: bool) -> ChainJudgement {
    let services = m.compare(prediction, deterministic);
    let tolerance = if deterministic {
        "tolerance: exact counts (a deterministic graph)".to_owned()
    } else {
        "tolerance: within 4 standard errors of the prediction".to_owned()
    };
    if m.too_small_to_judge(deterministic) {
        return ChainJudgement {
            judgement: Judgement {
                verdict: Verdict::TooSmall,
                tolerance,
                reasons: vec![format!(
                    "{} views of a graph with random failures; it takes {} to judge",
                    m.views,
                    crate::chain::MIN_VIEWS_TO_JUDGE
                )],
            },
            services,
        };
    }
    let reasons = services
        .iter()
        .filter(|c| !c.agrees)
        .map(|c| {
            // The measured mean to the precision of its standard error (none: an exact count).
            format!(
                "{} received {} per view, predicted {}",
                c.name,
                figure::mean_pm(c.measured, c.std_error),
                figure::number(c.predicted)
            )
        })
        .collect();
    ChainJudgement {
        judgement: Judgement::from_reasons(tolerance, reasons),
        services,
    }
}
