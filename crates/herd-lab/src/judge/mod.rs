//! Measured against predicted: every lab's verdict, judged here.
//!
//! The three labs compare a real measurement with herd's own figure for it, and each answers
//! with one [`Judgement`]: a [`Verdict`] (the same four words in every lab), the tolerance it
//! used, in words, and the figures outside it. How each tolerance is built is in its module:
//! [`chain()`] (exact counts, or the sampling error of a random graph), [`storm()`] (a relative
//! tolerance, or the simulated seeds' range) and [`hedge()`] (the simulated seeds' spread).
use serde::Serialize;

mod chain;
mod hedge;
mod storm;

pub use chain::{ChainJudgement, chain};
pub use hedge::{K as HEDGE_STANDARD_ERRORS, hedge};
pub use storm::{SLACK_WINDOWS as STORM_SLACK_WINDOWS, TOLERANCE as STORM_TOLERANCE, storm};

/// The outcome of one run of a lab, the same four words for the chain, the storm and the hedge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every figure within the tolerance.
    Agrees,
    /// Some figure outside it.
    Differs,
    /// The run did not measure what it set out to (attempts lost on the wire: the measured
    /// storm is another one), so it is not compared.
    NotComparable,
    /// Too few samples to judge a random figure (a random graph's chain with too few views).
    TooSmall,
}

impl Verdict {
    /// The verdict's name, as JSON spells it (`agrees`, `differs`, `not_comparable`,
    /// `too_small`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Agrees => "agrees",
            Self::Differs => "differs",
            Self::NotComparable => "not_comparable",
            Self::TooSmall => "too_small",
        }
    }
}

/// The verdict and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// The tolerance, in words.
    pub tolerance: String,
    /// The figures outside it, or why the run is not comparable.
    pub reasons: Vec<String>,
}

impl Judgement {
    /// A comparable run's judgement: it agrees when no figure fell outside the tolerance
    /// (`reasons` is empty), and differs otherwise.
    #[must_use]
    pub fn from_reasons(tolerance: String, reasons: Vec<String>) -> Self {
        Self {
            verdict: if reasons.is_empty() {
                Verdict::Agrees
            } else {
                Verdict::Differs
            },
            tolerance,
            reasons,
        }
    }

    /// One line for people: `verdict: …`.
    #[must_use]
    pub fn line(&self) -> String {
        let head = match self.verdict {
            Verdict::Agrees => "verdict: measured agrees with simulated",
            Verdict::Differs => "verdict: MEASURED DIFFERS from simulated",
            Verdict::NotComparable => "verdict: NOT COMPARABLE",
            Verdict::TooSmall => "verdict: too few samples to judge",
        };
        if self.reasons.is_empty() {
            format!("{head} ({})", self.tolerance)
        } else {
            format!("{head} ({}): {}", self.tolerance, self.reasons.join("; "))
        }
    }
}
