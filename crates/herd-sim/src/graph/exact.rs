//! Exact expected counts per entry request (see the module docs of [`graph`](super) for the
//! model and `docs/amplify.md` for the derivation).

use super::checked::Graph;
use super::error::GraphError;
use super::model::Call;
use super::odds::{AnswerOdds, Options};
use super::stationary::{self, Skipped};

/// What one call on an edge costs and returns, in expectation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CallFigures {
    /// Expected attempts (requests the callee receives) per call.
    pub attempts: f64,
    /// How the call ends, after its retries.
    pub outcome: AnswerOdds,
}

/// How exact a [`Prediction`] is.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Exactness {
    /// No budget: the closed form, exact.
    Exact,
    /// Budgets: the stationary law of the buckets' tokens, exact but for truncating the
    /// uncapped buckets, which moved no figure by more than `truncation_error`.
    Stationary {
        /// Joint budget states in the chain.
        states: usize,
        /// The largest change of a figure when the token caps were last doubled.
        truncation_error: f64,
    },
    /// Budgets the exact computation could not take: the long-run-limit formula, which
    /// treats every call as meeting an independent, average bucket. Its error is not known
    /// here (up to about 0.7 % on the graphs we measured): biased, so a caller should show a
    /// Monte Carlo estimate instead, as `herd amplify` does.
    Approximate {
        /// Why the exact computation was skipped.
        why: String,
    },
}

/// Expected figures per entry request.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Expected requests each service receives, indexed like [`Graph::services`].
    pub receives: Vec<f64>,
    /// How one execution of each service answers.
    pub answers: Vec<AnswerOdds>,
    /// Per service, per call (in file order): expected attempts and outcome of one call,
    /// by the closed form (for budgeted edges, the long-run-limit formula).
    pub calls: Vec<Vec<CallFigures>>,
    /// Whether `receives` and `answers` are exact.
    pub exactness: Exactness,
}

impl Prediction {
    /// Expected requests to all services together per entry request.
    #[must_use]
    pub fn total(&self) -> f64 {
        self.receives.iter().sum()
    }
}

/// One call on edge `call`, given how one execution of the callee answers.
///
/// Per attempt: lost on the way back with `p` (unmarked); otherwise the callee's answer. An
/// attempt is followed by another while the attempt failed, it was not a marked failure that
/// the caller respects, fewer than `attempts` were made, and the budget allows. With `U` the
/// chance that an attempt fails in a retryable way, the unbudgeted expected retries are
/// `D = U + U² + … + U^(k−1)`; a budget of β retries per first attempt caps them at
/// `min(D, β)` (the long-run limit of a token bucket). Each attempt made succeeds with `S`
/// independently of whether it was made, so `P(ok) = S · (1 + retries)`.
#[must_use]
pub fn call_figures(call: &Call, callee: AnswerOdds, options: Options) -> CallFigures {
    let p = call.failure_probability;
    let ok = (1.0 - p) * callee.ok;
    let (stop_marked, retryable) = if options.layer_aware {
        (
            (1.0 - p) * callee.marked,
            (p + (1.0 - p) * callee.unmarked).clamp(0.0, 1.0),
        )
    } else {
        (0.0, (1.0 - ok).clamp(0.0, 1.0))
    };
    // D = U + U² + … + U^(k−1), summed term by term (k ≤ 100): exact for U = 1 too.
    let mut demand = 0.0;
    let mut term = 1.0;
    for _ in 1..call.attempts {
        term *= retryable;
        demand += term;
    }
    let retries = if call.budget_percent > 0.0 {
        demand.min(call.budget_percent / 100.0)
    } else {
        demand
    };
    let attempts = 1.0 + retries;
    let ok_end = (ok * attempts).clamp(0.0, 1.0);
    let marked_stop = (stop_marked * attempts).clamp(0.0, 1.0 - ok_end);
    let gave_up = (1.0 - ok_end - marked_stop).max(0.0);
    // A layer that was allowed to retry (k ≥ 2) marks the failure it gives up on; with k = 1
    // nothing was retried and the failure goes up unmarked.
    let outcome = if options.layer_aware && call.attempts >= 2 {
        AnswerOdds {
            ok: ok_end,
            marked: marked_stop + gave_up,
            unmarked: 0.0,
        }
    } else {
        AnswerOdds {
            ok: ok_end,
            marked: marked_stop,
            unmarked: gave_up,
        }
    };
    CallFigures { attempts, outcome }
}

/// Expected requests per service per entry request, and how each answers.
///
/// # Examples
///
/// ```
/// use herd_sim::graph::{Graph, Options, predict};
/// let g = Graph::from_toml(r#"
///     entry = "bff"
///     [[service]]
///     name = "bff"
///     calls = [{ to = "search", attempts = 3 }]
///     [[service]]
///     name = "search"
///     calls = [{ to = "inventory", attempts = 3 }]
///     [[service]]
///     name = "inventory"
///     calls = [{ to = "stock-db", attempts = 3 }]
///     [[service]]
///     name = "stock-db"
///     fails = true
/// "#)?;
/// assert_eq!(predict(&g, Options::default())?.receives, [1.0, 3.0, 9.0, 27.0]);
/// let aware = Options { layer_aware: true };
/// assert_eq!(predict(&g, aware)?.receives, [1.0, 1.0, 1.0, 3.0]);
/// # Ok::<(), herd_sim::graph::GraphError>(())
/// ```
///
/// # Errors
///
/// A [`GraphError`] when a count does not fit in an `f64` (more than about 10^308 requests).
pub fn predict(graph: &Graph, options: Options) -> Result<Prediction, GraphError> {
    let services = graph.services();
    let n = services.len();
    let mut answers = vec![AnswerOdds::OK; n];
    let mut calls: Vec<Vec<CallFigures>> = vec![Vec::new(); n];
    // Callees first: walk the topological order backwards.
    for &s in graph.topological_order().iter().rev() {
        let service = &services[s];
        if service.fails {
            answers[s] = AnswerOdds::FAILS;
            calls[s] = service
                .calls
                .iter()
                .map(|_| CallFigures {
                    attempts: 0.0,
                    outcome: AnswerOdds::OK,
                })
                .collect();
            continue;
        }
        let figures: Vec<CallFigures> = service
            .calls
            .iter()
            .map(|c| call_figures(c, answers[c.to], options))
            .collect();
        // Calls of one execution are independent: all succeed, or some fail and none of the
        // failures is marked, or at least one failure is marked.
        let all_ok: f64 = figures.iter().map(|f| f.outcome.ok).product();
        let none_marked: f64 = figures
            .iter()
            .map(|f| f.outcome.ok + f.outcome.unmarked)
            .product();
        answers[s] = AnswerOdds {
            ok: all_ok,
            marked: (1.0 - none_marked).max(0.0),
            unmarked: (none_marked - all_ok).max(0.0),
        };
        calls[s] = figures;
    }
    let mut receives = vec![0.0; n];
    receives[graph.entry()] = 1.0;
    for &s in graph.topological_order() {
        if services[s].fails {
            continue;
        }
        for (c, f) in services[s].calls.iter().zip(&calls[s]) {
            receives[c.to] += receives[s] * f.attempts;
        }
    }
    if let Some(i) = receives.iter().position(|r| !r.is_finite()) {
        return Err(GraphError(format!(
            "service \"{}\" would receive more requests than a number can hold",
            services[i].name
        )));
    }
    let mut exactness = Exactness::Exact;
    if graph.edges().any(|(_, c)| c.budget_percent > 0.0) {
        match stationary::compute(graph, options) {
            Ok(st) => {
                receives = st.receives;
                answers = st.answers;
                exactness = Exactness::Stationary {
                    states: st.states,
                    truncation_error: st.truncation_error,
                };
            }
            Err(why) => {
                exactness = Exactness::Approximate {
                    why: match why {
                        Skipped::Fraction(p) => format!(
                            "budget_percent {p} is not a fraction with a denominator up to 1000"
                        ),
                        Skipped::TooManyBudgets(n) => {
                            format!("{n} budgeted edges; the exact computation takes at most 8")
                        }
                        Skipped::TooManyStates {
                            states,
                            last_change,
                        } => format!(
                            "the figures had not settled (last change {last_change:.1e}) \
                             when the budgets' chain needed {states} states or more work \
                             than its bound"
                        ),
                        Skipped::NotConverged { residual } => format!(
                            "the budgets' chain mixes too slowly (residual {residual:.1e} \
                             when the work ran out)"
                        ),
                    },
                };
            }
        }
    }
    if let Some(kind) = graph.throttle_kind() {
        // The figures above ignore the throttle: an upper bound on the calls (a throttle only
        // takes retries away), which bounds the Monte Carlo run that gives the figures.
        exactness = Exactness::Approximate {
            why: format!("a {kind} throttle ([retry.throttle]) has no closed form here"),
        };
    }
    Ok(Prediction {
        receives,
        answers,
        calls,
        exactness,
    })
}
