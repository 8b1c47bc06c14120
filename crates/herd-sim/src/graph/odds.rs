//! What an answer can be (ok, failed with the "retries exhausted" mark, failed without it) and
//! how callers treat the mark: the plain types that the exact and the stationary computations
//! both build on.

/// How callers treat an answer marked "retries exhausted".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// A caller does not retry a failure whose answer came back marked exhausted (the callee
    /// already retried below and gave up). Off: every failure is retried, as every classic
    /// retry library does.
    pub layer_aware: bool,
}

/// The three ways an answer can come back, as probabilities that sum to 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnswerOdds {
    /// The answer succeeds.
    pub ok: f64,
    /// The answer fails and carries the "retries exhausted" mark.
    pub marked: f64,
    /// The answer fails without the mark.
    pub unmarked: f64,
}

impl AnswerOdds {
    /// An answer that always fails on its own (unmarked).
    pub const FAILS: AnswerOdds = AnswerOdds {
        ok: 0.0,
        marked: 0.0,
        unmarked: 1.0,
    };
    /// An answer that always succeeds.
    pub const OK: AnswerOdds = AnswerOdds {
        ok: 1.0,
        marked: 0.0,
        unmarked: 0.0,
    };

    /// Probability that the answer fails, marked or not.
    #[must_use]
    pub fn failure(&self) -> f64 {
        (self.marked + self.unmarked).clamp(0.0, 1.0)
    }
}
