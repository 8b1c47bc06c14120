//! The law of a refused client's next wait, in whole steps, derived from the rule's own code.
//!
//! The agent engine asks [`Rule::pause`] for one pause per refused client and rounds it up to
//! whole steps (at least one). For a cohort of `n` identical clients the cohort engine needs
//! the *distribution* of that rounded pause, so that it can split `n` multinomially. A [`Law`]
//! is that distribution: a list of outcomes `(wait in steps, next memory word)` with their
//! probabilities. It is derived per rule, from the same [`Rule`] value the agent engine uses:
//!
//! - `immediate`, `constant`, `exponential`: one outcome, the pause [`Rule::pause`] returns
//!   (these draw nothing from the generator).
//! - `full`, `equal`: [`Rule::pause`] draws `range_inclusive(lo, g)`, an exactly uniform
//!   integer (Lemire's unbiased method), with `g = g(k)` taken from an `exponential` rule with
//!   the same base and cap (so the overflow-free `g` is herd's, not a copy). `full` is uniform
//!   on `0..=g`, `equal` on `g − ⌊g/2⌋..=g`; counting the integers of each step gives the law
//!   exactly.
//! - `grpc`: the pause is a non-decreasing function of the one 53-bit float the rule draws
//!   (every floating-point operation in it is monotone). The law is found by binary search over
//!   the 2^53 possible draws, calling [`Rule::pause`] with an injected generator that returns
//!   a chosen word: exact. Its memory (the current backoff) does not depend on the draw.
//! - `grpc-retry` and `randomized`: as `grpc`, one 53-bit float decides the pause,
//!   monotonically, and the memory (the current backoff, the next interval) does not depend
//!   on it: the same binary search, exact.
//! - `decorrelated`: the pause is uniform on `base..=max(base, 3 · previous)`, capped, and the
//!   next pause depends on this one *in the rule's unit*: in whole steps (`pauses = "steps"`)
//!   cells are one step wide while `[base, cap]` spans at most 2000 steps (199 in the default
//!   scenario), so the memory is kept exactly; what follows is about continuous pauses, whose
//!   memory is in *nanoseconds*. Keeping every client's nanoseconds
//!   would make each client its own cohort, so the memory is **quantized**: a pause below the
//!   cap that falls in memory cell `c` (cells of an eighth of a step, or wider so that
//!   `[base, cap]` spans at most 2000 cells) is remembered as one representative value of the
//!   cell (its logarithmic-mean point, see `Laws::representative`), and a pause equal to the
//!   cap is remembered exactly. The wait is drawn exactly given the remembered value; what is
//!   approximated is the next pause's range `3 · previous`, off by less than three cell
//!   widths. `tests/cohort_agreement.rs` measures this approximation against the agent
//!   engine: over 2000 seeds of the default scenario with continuous pauses, requests per
//!   client 11.260 (agent)
//!   against 11.259 (cohort), all served by 27.34 s against 27.29 s, both within two
//!   standard errors. (With cells of a quarter step, requests per client came out 0.06 %
//!   high, two standard errors at 2000 seeds: hence the eighth.)
//! - `decorrelated-v2`: like `grpc`, one 53-bit float `u` decides the pause, monotonically,
//!   but the memory it leaves, `f(k − 1 + u)`, depends on `u`. The draws are cut into 64 cells
//!   of `u`; a client is remembered by its cell (as the memory the rule computes at the
//!   cell's middle draw) and its exact failure count. Waits are exact given the remembered
//!   memory; the remembered formula value is off by at most 0.6 % (half a cell of `2^u`).
//!   From the failure count at which every pause is the cap whatever the memory (16 with
//!   the defaults), the memory no longer matters and those cohorts merge.
use std::collections::HashMap;

use herd::rng::Rng;
use herd::{Rule, RuleName, RuleParams, RuleState};

use crate::error::ScenarioError;
use crate::fields::ceil_div;
use crate::storm::failure::pause_steps;
use crate::storm::plan::PlannedRule;

/// The most steps a jittered rule's pauses may span: a law has one outcome per step.
pub(crate) const MAX_PAUSE_STEPS: u64 = 200_000;

/// The failure count from which `decorrelated-v2` pauses the cap whatever its draw and its
/// (quantized) memory: the smallest `k` at which the smallest pause, `u = 0` after the largest
/// remembered memory (the middle of the last cell at `k − 1`), is the cap. Later counts only
/// widen the gap `f(k − 1 + u) − f(k − 2 + u′)`. `u32::MAX` if not reached by 2048 (where
/// `f` has long overflowed to infinity, which the rule maps to the cap).
fn v2_all_cap_from(rule: &Rule, cap: u64) -> u32 {
    let per_cell = (1u64 << 53) / V2_CELLS;
    let last_middle = ((V2_CELLS - 1) * per_cell + per_cell / 2) << 11;
    (1..2048u32)
        .find(|&k| {
            let mut before = RuleState::from_parts(k - 1, 0);
            rule.pause(&mut before, &mut Fixed(last_middle));
            let mut state = RuleState::from_parts(k, before.memory());
            rule.pause_nanos(&mut state, &mut Fixed(0)) >= cap
        })
        .unwrap_or(u32::MAX)
}

/// Cohorts of up to this many refused clients may be drawn client by client
/// ([`Laws::draws_each`]).
pub(crate) const DRAW_EACH_UP_TO: u64 = 32;

/// Cells of the one draw of `decorrelated-v2` (a power of two, so cells are whole draws).
const V2_CELLS: u64 = 64;

/// Memory cells per step for `decorrelated`...
const CELLS_PER_STEP: u64 = 8;
/// ...unless that makes more than this many cells over `[base, cap]`: then wider cells.
const MAX_MEMORY_CELLS: u64 = 2000;

/// The distribution of one cohort's next wait.
#[derive(Clone, Debug, Default)]
pub(crate) struct Law {
    /// `(wait in steps ≥ 1, memory word after the failure)`, one per outcome.
    pub(crate) outcomes: Vec<(u64, u64)>,
    /// Probability of each outcome (summing to 1).
    pub(crate) probs: Vec<f64>,
    /// `tail[i] = probs[i] + probs[i+1] + …`.
    pub(crate) tail: Vec<f64>,
    /// `cdf[i] = probs[0] + … + probs[i]`.
    pub(crate) cdf: Vec<f64>,
}

impl Law {
    /// Builds a law from outcomes weighted by integer counts (or any non-negative weights).
    pub(crate) fn from_weights(weighted: Vec<((u64, u64), f64)>) -> Self {
        let mut law = Law::default();
        law.refill(&weighted);
        law
    }

    /// Makes this the law of `weighted`, as [`Law::from_weights`] does, in the vectors it
    /// already has (a law rebuilt at every step allocates nothing).
    pub(crate) fn refill(&mut self, weighted: &[((u64, u64), f64)]) {
        let total: f64 = weighted.iter().map(|(_, w)| w).sum();
        self.outcomes.clear();
        self.probs.clear();
        for &(outcome, w) in weighted {
            if w > 0.0 {
                self.outcomes.push(outcome);
                self.probs.push(w / total);
            }
        }
        let m = self.probs.len();
        self.tail.clear();
        self.tail.resize(m, 0.0);
        let mut acc = 0.0;
        for i in (0..m).rev() {
            acc += self.probs[i];
            self.tail[i] = acc;
        }
        self.cdf.clear();
        let mut acc = 0.0;
        for &p in &self.probs {
            acc += p;
            self.cdf.push(acc);
        }
        if let Some(last) = self.cdf.last_mut() {
            *last = 1.0;
        }
    }

    fn certain(wait: u64, memory: u64) -> Self {
        Self::from_weights(vec![((wait, memory), 1.0)])
    }
}

/// A generator that returns one chosen word: evaluates a rule's pause at a chosen draw. Only
/// for rules that draw nothing or one float (`next_f64` never rejects a word); an integer draw
/// could reject the word and ask again forever.
struct Fixed(u64);

impl Rng for Fixed {
    fn next_u64(&mut self) -> u64 {
        self.0
    }
}

/// The laws of one rule, built on demand and cached by `(failures, memory)`.
#[derive(Debug)]
pub(crate) struct Laws {
    name: RuleName,
    rule: Rule,
    base: u64,
    cap: u64,
    step_ns: u64,
    /// Memory cell width for `decorrelated`.
    cell_ns: u64,
    /// `exponential` with the same base and cap: the source of `g(k)` for `full` and `equal`.
    growth: Option<Rule>,
    /// From this failure count on, the law no longer depends on the count.
    saturated_at: u32,
    cache: HashMap<(u32, u64), Law>,
    /// Outcomes held in `cache`, to bound its memory.
    cached_outcomes: usize,
}

/// The cache of laws is dropped when it holds more outcomes than this (fine steps with a long
/// cap and many memory cells); laws are rebuilt on demand.
const MAX_CACHED_OUTCOMES: usize = 4_000_000;

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Laws {
    /// The laws of a rule as the plan built it: in whole steps (`per_step` = 1, so every
    /// "nanosecond" below is a step and the laws count whole steps exactly; `decorrelated`'s
    /// memory cells are then one step wide, exact, while `cap − base` spans at most
    /// [`MAX_MEMORY_CELLS`] steps) or in nanoseconds.
    ///
    /// # Errors
    ///
    /// As [`Laws::new`].
    pub(crate) fn of(name: RuleName, planned: &PlannedRule) -> Result<Self, ScenarioError> {
        Self::new(name, planned.rule, &planned.params, planned.per_step)
    }

    /// The laws of `rule` (named `name`, built from `params`) for steps of `step_ns` of the
    /// rule's nanoseconds.
    ///
    /// # Errors
    ///
    /// `retry.cap_ms` if a jittered rule's pauses span more than [`MAX_PAUSE_STEPS`] steps
    /// (every law would have that many outcomes); `retry.base_ms` if the growth rule cannot
    /// be built (it can whenever `rule` was).
    pub(crate) fn new(
        name: RuleName,
        rule: Rule,
        params: &RuleParams,
        step_ns: u64,
    ) -> Result<Self, ScenarioError> {
        let (base, cap) = (nanos(params.base), nanos(params.cap));
        let span = ceil_div(nanos(rule.max_pause()), step_ns);
        if name.is_jittered() && span > MAX_PAUSE_STEPS {
            return Err(ScenarioError::field(
                "retry.cap_ms",
                format!(
                    "rule {name} pauses up to {span} steps; the cohort engine splits a cohort over at most {MAX_PAUSE_STEPS} (use a longer step_ms or the agent engine)"
                ),
            ));
        }
        let growth = match name {
            RuleName::Exponential | RuleName::Full | RuleName::Equal => {
                Some(Rule::exponential(params.base, params.cap).map_err(|e| {
                    ScenarioError::field("retry.base_ms", format!("{e} (rule {name})"))
                })?)
            }
            _ => None,
        };
        let saturated_at = match (name, growth) {
            (RuleName::Immediate | RuleName::Constant, _) => 0,
            (RuleName::DecorrelatedV2, _) => v2_all_cap_from(&rule, cap),
            (_, Some(g)) => {
                // The first k whose next pause g(k + 1) is the cap; 64 doublings always reach it.
                let mut k = 0u32;
                while k < 70
                    && g.pause(&mut RuleState::from_parts(k, 0), &mut Fixed(0)) < g.max_pause()
                {
                    k += 1;
                }
                k
            }
            // decorrelated, grpc, grpc-retry and randomized depend on the count only through
            // "first failure or not" (the rest is in their memory).
            _ => 1,
        };
        let cell_ns = (step_ns / CELLS_PER_STEP)
            .max((cap - base).div_ceil(MAX_MEMORY_CELLS))
            .max(1);
        Ok(Self {
            name,
            rule,
            base,
            cap,
            step_ns,
            cell_ns,
            growth,
            saturated_at,
            cache: HashMap::new(),
            cached_outcomes: 0,
        })
    }

    /// The failure count a cohort is filed under: beyond [`Laws::saturated_at`] every count
    /// has the same law, so they merge, unless `max_attempts` needs the exact count.
    pub(crate) fn file_failures(&self, failures: u32, max_attempts: u32) -> u32 {
        if max_attempts > 0 {
            failures
        } else {
            failures.min(self.saturated_at)
        }
    }

    /// The memory word a cohort is filed under, when it is not the one its law gave:
    /// `decorrelated-v2` from [`Laws::saturated_at`] failures on pauses the cap whatever its
    /// memory, so the memory is dropped (0) and those cohorts merge.
    pub(crate) fn file_memory(&self, failures: u32) -> Option<u64> {
        (self.name == RuleName::DecorrelatedV2 && failures >= self.saturated_at).then_some(0)
    }

    /// Whether a small cohort in this state is better drawn client by client than through
    /// its law: `decorrelated-v2`'s laws cost a binary search (of `powf` and `tanh`
    /// evaluations) per wait and cell, thousands of pause evaluations with fine steps, while a
    /// client costs two; once the law is built, it is used.
    pub(crate) fn draws_each(&self, failures: u32, memory: u64) -> bool {
        self.name == RuleName::DecorrelatedV2
            && !self.cache.contains_key(&self.key(failures, memory))
    }

    /// One client's `(wait, memory)`, drawn by [`Rule::pause`] with one word from `rng`: the
    /// same law as [`Laws::get`]'s (the wait of the drawn pause, and the memory remembered for
    /// the draw's cell). For `decorrelated-v2` only (see [`Fixed`]).
    pub(crate) fn draw_one<R: Rng + ?Sized>(
        &self,
        failures: u32,
        memory: u64,
        rng: &mut R,
    ) -> (u64, u64) {
        let per_cell = (1u64 << 53) / V2_CELLS;
        let word = rng.next_u64();
        let mut state = RuleState::from_parts(failures, memory);
        let wait = self.wait_of(self.rule.pause_nanos(&mut state, &mut Fixed(word)));
        let cell = (word >> 11) / per_cell;
        let mut middle = RuleState::from_parts(failures, memory);
        self.rule.pause(
            &mut middle,
            &mut Fixed((cell * per_cell + per_cell / 2) << 11),
        );
        (wait, middle.memory())
    }

    fn key(&self, failures: u32, memory: u64) -> (u32, u64) {
        (failures.min(self.saturated_at.max(1)), memory)
    }

    /// The law of the wait after the next failure of a client with `failures` failures so far
    /// and memory word `memory`.
    pub(crate) fn get(&mut self, failures: u32, memory: u64) -> &Law {
        let key = self.key(failures, memory);
        if !self.cache.contains_key(&key) {
            let law = self.derive(failures, memory);
            if self.cached_outcomes + law.outcomes.len() > MAX_CACHED_OUTCOMES {
                self.cache.clear();
                self.cached_outcomes = 0;
            }
            self.cached_outcomes += law.outcomes.len();
            self.cache.insert(key, law);
        }
        &self.cache[&key]
    }

    fn wait_of(&self, pause_ns: u64) -> u64 {
        pause_steps(pause_ns, self.step_ns)
    }

    fn derive(&self, failures: u32, memory: u64) -> Law {
        let mut state = RuleState::from_parts(failures, memory);
        match self.name {
            RuleName::Immediate | RuleName::Constant | RuleName::Exponential => {
                let pause = self.rule.pause_nanos(&mut state, &mut Fixed(0));
                Law::certain(self.wait_of(pause), 0)
            }
            RuleName::Full | RuleName::Equal => {
                let g = self.growth.map_or(self.cap, |r| {
                    r.pause_nanos(&mut RuleState::from_parts(failures, 0), &mut Fixed(0))
                });
                let lo = if self.name == RuleName::Full {
                    0
                } else {
                    g - g / 2
                };
                Law::from_weights(self.uniform_waits(lo, g))
            }
            RuleName::Grpc | RuleName::GrpcRetry | RuleName::Randomized => {
                self.grpc(failures, memory)
            }
            RuleName::Decorrelated => self.decorrelated(failures, memory),
            RuleName::DecorrelatedV2 => self.decorrelated_v2(failures, memory),
            // herd's `RuleName` may grow; a rule gets its law here in the same change.
            other => unreachable!("no cohort law for rule {other}"),
        }
    }

    /// Integers uniform on `lo..=hi`, grouped by wait: `(wait, count)` as weights.
    fn uniform_waits(&self, lo: u64, hi: u64) -> Vec<((u64, u64), f64)> {
        let s = self.step_ns;
        let mut out = Vec::new();
        let mut j = self.wait_of(lo);
        loop {
            // Pauses with wait j: 0..=s for j = 1, else (j−1)·s + 1 ..= j·s.
            let from = if j == 1 { 0 } else { (j - 1) * s + 1 };
            let to = j.saturating_mul(s);
            let (a, b) = (from.max(lo), to.min(hi));
            if a <= b {
                out.push(((j, 0), (b - a) as f64 + 1.0));
            }
            if to >= hi {
                break;
            }
            j += 1;
        }
        out
    }

    /// The wait (in steps) and the new memory after `failures` failures with `memory`, when
    /// the rule's one 53-bit draw is `m` (for the rules that draw one float).
    fn at_draw(&self, failures: u32, memory: u64, m: u64) -> (u64, u64) {
        let mut state = RuleState::from_parts(failures, memory);
        let pause = self.rule.pause_nanos(&mut state, &mut Fixed(m << 11));
        (self.wait_of(pause), state.memory())
    }

    fn grpc(&self, failures: u32, memory: u64) -> Law {
        const WORDS: u64 = 1 << 53;
        let eval = |m: u64| self.at_draw(failures, memory, m);
        let (first_wait, next_memory) = eval(0);
        let (last_wait, _) = eval(WORDS - 1);
        let mut weighted = Vec::new();
        // `start` = the first draw whose wait is at least j.
        let mut start = 0u64;
        for j in first_wait..=last_wait {
            let end = if j == last_wait {
                WORDS
            } else {
                // The first draw with wait > j.
                first_past(start, WORDS - 1, j, |m| eval(m).0)
            };
            weighted.push(((j, next_memory), (end - start) as f64));
            start = end;
        }
        Law::from_weights(weighted)
    }

    /// `decorrelated-v2` after `failures` failures with memory `memory`: the rule draws one
    /// 53-bit float `u`, its new memory is `f(failures + u)` and its pause grows with `u`. The
    /// draws are cut into [`V2_CELLS`] cells of `u`, each remembered as the memory the rule
    /// computes at the cell's middle draw; within a cell the waits are found by binary search
    /// over the draws, calling [`Rule::pause`] with each chosen word. Exact given the
    /// remembered memory.
    fn decorrelated_v2(&self, failures: u32, memory: u64) -> Law {
        const WORDS: u64 = 1 << 53;
        let per_cell = WORDS / V2_CELLS;
        let eval = |m: u64| self.at_draw(failures, memory, m);
        let mut weighted = Vec::new();
        for c in 0..V2_CELLS {
            let (lo, end) = (c * per_cell, (c + 1) * per_cell);
            let remembered = eval(lo + per_cell / 2).1;
            let last = eval(end - 1).0;
            let (mut start, mut wait) = (lo, eval(lo).0);
            while wait < last {
                // The first draw in (start, end − 1] whose wait exceeds `wait`.
                let a = first_past(start + 1, end - 1, wait, |m| eval(m).0);
                weighted.push(((wait, remembered), (a - start) as f64));
                start = a;
                wait = eval(a).0;
            }
            weighted.push(((wait, remembered), (end - start) as f64));
        }
        Law::from_weights(weighted)
    }

    /// The memory cell of a pause below the cap: `c` covers `((c − 1)·cell, c·cell]`.
    fn cell_of(&self, pause: u64) -> u64 {
        ceil_div(pause, self.cell_ns)
    }

    /// What a pause in cell `c` is remembered as: the `p` within the cell's part of
    /// `[base, cap)` whose next range `3p − base` is the *logarithmic mean* of the cell's
    /// extremes. If the previous pause were uniform on the cell, the next pause's probability
    /// of falling below any `x < 3 · from` would then be exactly right, since it is
    /// proportional to the mean of `1 / (3p − base)`; the plain midpoint would bias every next
    /// pause upwards (Jensen), by about a quarter of a percent of requests at one cell per step.
    fn representative(&self, c: u64) -> u64 {
        let from = ((c - 1) * self.cell_ns + 1).max(self.base);
        let to = (c * self.cell_ns).min(self.cap - 1).max(from);
        let base = self.base as f64;
        let (l1, l2) = (3.0 * from as f64 - base, 3.0 * to as f64 - base);
        if to == from || l1 <= 0.0 {
            return from + (to - from) / 2;
        }
        let log_mean = (l2 - l1) / (l2 / l1).ln();
        (((log_mean + base) / 3.0).round() as u64).clamp(from, to)
    }

    fn decorrelated(&self, failures: u32, memory: u64) -> Law {
        let top = self.nested_top(failures, memory).unwrap_or(self.base);
        Law::from_weights(self.nested_pieces(self.base - 1, top))
    }

    /// For rules whose pause is uniform on `base..=top` (then capped), `top`; `None` for the
    /// others. Such laws are *nested*: given that a pause on `base..=top` fell at or below
    /// some `t < top`, it is uniform on `base..=t`, the law of a client whose top is `t`. The
    /// engine uses this to split all cohorts due at a step at once (`split_nested`), at a cost
    /// of O(pieces + cohorts) instead of O(pieces × cohorts). Only `decorrelated` today.
    pub(crate) fn nested_top(&self, failures: u32, memory: u64) -> Option<u64> {
        (self.name == RuleName::Decorrelated).then(|| {
            let previous = if failures == 0 { self.base } else { memory };
            previous.saturating_mul(3).max(self.base)
        })
    }

    /// The lowest pause of a nested law (`base`).
    pub(crate) fn nested_bottom(&self) -> u64 {
        self.base
    }

    /// The outcomes of a pause uniform on `above + 1..=top` (then capped), weighted by the
    /// number of integers leading to each: pieces that share both a wait and a memory cell,
    /// and the cap.
    pub(crate) fn nested_pieces(&self, above: u64, top: u64) -> Vec<((u64, u64), f64)> {
        let mut weighted = Vec::new();
        self.nested_pieces_into(above, top, &mut weighted);
        weighted
    }

    /// [`Laws::nested_pieces`], written into `weighted` (cleared first).
    pub(crate) fn nested_pieces_into(
        &self,
        above: u64,
        top: u64,
        weighted: &mut Vec<((u64, u64), f64)>,
    ) {
        weighted.clear();
        let below_cap = top.min(self.cap - 1);
        let mut from = above + 1;
        while from <= below_cap {
            let c = self.cell_of(from);
            let wait = self.wait_of(from);
            let to = (c * self.cell_ns)
                .min(wait.saturating_mul(self.step_ns))
                .min(below_cap);
            weighted.push(((wait, self.representative(c)), (to - from) as f64 + 1.0));
            from = to + 1;
        }
        if top >= self.cap {
            let from = (above + 1).max(self.cap);
            weighted.push((
                (self.wait_of(self.cap), self.cap),
                (top - from) as f64 + 1.0,
            ));
        }
    }
}

/// The first draw in `lo..=hi` whose wait exceeds `wait` (`hi` when none below it does), by
/// binary search: `wait_at` does not decrease with the draw.
fn first_past(mut lo: u64, mut hi: u64, wait: u64, wait_at: impl Fn(u64) -> u64) -> u64 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if wait_at(mid) > wait {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::rng::SplitMix64;
    use std::time::Duration;

    const STEP: u64 = 100_000_000;

    fn laws(name: RuleName, params: &RuleParams) -> Laws {
        let rule = name.build(params).unwrap();
        Laws::new(name, rule, params, STEP).unwrap()
    }

    /// Empirical law of (wait, memory) from `Rule::pause` itself, from one state.
    fn empirical(l: &Laws, failures: u32, memory: u64, draws: u32) -> HashMap<(u64, u64), u32> {
        let mut rng = SplitMix64::new(u64::from(failures) * 7919 + memory);
        let mut seen = HashMap::new();
        let per_cell = (1u64 << 53) / V2_CELLS;
        for _ in 0..draws {
            let mut state = RuleState::from_parts(failures, memory);
            // decorrelated-v2 draws one word (one float): record it to know its cell.
            let word = rng.next_u64();
            let pause = if l.name == RuleName::DecorrelatedV2 {
                l.rule.pause_nanos(&mut state, &mut Fixed(word))
            } else {
                l.rule.pause_nanos(&mut state, &mut rng)
            };
            let wait = l.wait_of(pause);
            let mem = match l.name {
                RuleName::DecorrelatedV2 => {
                    let cell = (word >> 11) / per_cell;
                    let mut mid = RuleState::from_parts(failures, memory);
                    let middle = (cell * per_cell + per_cell / 2) << 11;
                    l.rule.pause(&mut mid, &mut Fixed(middle));
                    mid.memory()
                }
                RuleName::Decorrelated if pause >= l.cap => l.cap,
                RuleName::Decorrelated => l.representative(l.cell_of(pause)),
                RuleName::Grpc | RuleName::GrpcRetry | RuleName::Randomized => state.memory(),
                _ => 0,
            };
            *seen.entry((wait, mem)).or_insert(0) += 1;
        }
        seen
    }

    /// `seen`, the outcomes of `draws` draws, follow `law`: none the law says is impossible,
    /// and every outcome's frequency within 6.5 standard errors (plus a hair): a false
    /// failure ≤ 10⁻⁶ over at most 10⁴ comparisons a run (Bonferroni, normal tails).
    fn follows(law: &Law, seen: &HashMap<(u64, u64), u32>, draws: u32, what: &str) {
        for outcome in seen.keys() {
            assert!(
                law.outcomes.contains(outcome),
                "{what}: {outcome:?} drawn but not in the law"
            );
        }
        for (o, p) in law.outcomes.iter().zip(&law.probs) {
            let f = f64::from(seen.get(o).copied().unwrap_or(0)) / f64::from(draws);
            let se = (p * (1.0 - p) / f64::from(draws)).sqrt();
            assert!((f - p).abs() <= 6.5 * se + 1e-6, "{what} {o:?}: {f} vs {p}");
        }
    }

    /// The derived law against 200 000 draws of `Rule::pause`: every outcome's frequency within
    /// 6.5 standard errors (plus a hair), and no outcome the law says is impossible.
    fn agrees(name: RuleName, params: &RuleParams, states: &[(u32, u64)]) {
        let mut l = laws(name, params);
        for &(failures, memory) in states {
            let draws = 200_000;
            let seen = empirical(&l, failures, memory, draws);
            follows(
                l.get(failures, memory),
                &seen,
                draws,
                &format!("{name} k={failures}"),
            );
        }
    }

    #[test]
    fn derived_laws_match_the_rules_own_draws() {
        let d = RuleParams::default();
        agrees(RuleName::Immediate, &d, &[(0, 0), (5, 0)]);
        agrees(RuleName::Constant, &d, &[(0, 0), (3, 0)]);
        agrees(RuleName::Exponential, &d, &[(0, 0), (4, 0), (40, 0)]);
        agrees(
            RuleName::Full,
            &d,
            &[(0, 0), (1, 0), (3, 0), (8, 0), (1000, 0)],
        );
        agrees(RuleName::Equal, &d, &[(0, 0), (2, 0), (7, 0), (9, 0)]);
        agrees(
            RuleName::Grpc,
            &d,
            &[
                (0, 0),
                (1, 160_000_000),
                (6, 1_677_721_600),
                (30, 20_000_000_000),
            ],
        );
        agrees(
            RuleName::Decorrelated,
            &d,
            &[
                (0, 0),
                (1, 150_000_000),
                (1, 2_050_000_000),
                (3, 9_000_000_000),
                (9, 20_000_000_000),
            ],
        );
        // grpc-retry's memory is the current backoff's bits, randomized's the next interval.
        let wide = RuleParams::default()
            .base(Duration::from_millis(250))
            .cap(Duration::from_millis(4000))
            .multiplier(1.3)
            .jitter(0.5);
        for params in [&d, &wide] {
            agrees(
                RuleName::GrpcRetry,
                params,
                &[(0, 0), (2, 900_000_000f64.to_bits()), (9, 4e9f64.to_bits())],
            );
            agrees(
                RuleName::Randomized,
                params,
                &[(0, 0), (3, 1_000_000_000), (8, 60_000_000_000)],
            );
        }
        let odd = RuleParams::default()
            .base(Duration::from_millis(37))
            .cap(Duration::from_millis(1234));
        agrees(RuleName::Full, &odd, &[(0, 0), (4, 0), (9, 0)]);
        agrees(RuleName::Equal, &odd, &[(1, 0), (5, 0)]);
        agrees(RuleName::Decorrelated, &odd, &[(0, 0), (1, 400_000_000)]);
        // decorrelated-v2's memory: Polly's f at the previous draw, f(k − 2 + u′).
        let f = |t: f64| (2f64.powf(t) * (4.0 * t).sqrt().tanh()).to_bits();
        agrees(
            RuleName::DecorrelatedV2,
            &d,
            &[
                (0, 0),
                (1, f(0.3)),
                (3, f(2.9)),
                (6, f(4.5)),
                (12, f(10.01)),
            ],
        );
    }

    #[test]
    fn drawing_each_client_follows_the_law() {
        let d = RuleParams::default();
        let mut l = laws(RuleName::DecorrelatedV2, &d);
        let f = |t: f64| (2f64.powf(t) * (4.0 * t).sqrt().tanh()).to_bits();
        for (failures, memory) in [(0u32, 0u64), (3, f(2.4)), (7, f(6.9))] {
            assert!(l.draws_each(failures, memory));
            let mut rng = SplitMix64::new(u64::from(failures));
            let draws = 100_000u32;
            let mut seen: HashMap<(u64, u64), u32> = HashMap::new();
            for _ in 0..draws {
                *seen
                    .entry(l.draw_one(failures, memory, &mut rng))
                    .or_default() += 1;
            }
            let law = l.get(failures, memory).clone();
            assert!(!l.draws_each(failures, memory), "built laws are used");
            follows(&law, &seen, draws, &format!("k={failures}"));
        }
    }

    #[test]
    fn counts_saturate_where_the_law_stops_changing() {
        let d = RuleParams::default();
        // 100 ms · 2^8 = 25.6 s > 20 s: the 9th failure's pause is the cap, from 8 failures on.
        assert_eq!(laws(RuleName::Full, &d).saturated_at, 8);
        assert_eq!(laws(RuleName::Constant, &d).saturated_at, 0);
        // decorrelated-v2: from 16 failures every pause is the cap, for every remembered
        // memory and draw, and it stays so.
        let mut v2 = laws(RuleName::DecorrelatedV2, &d);
        assert_eq!(v2.saturated_at, 16);
        assert_eq!(v2.file_memory(15), None);
        assert_eq!(v2.file_memory(16), Some(0));
        let cap_wait = v2.wait_of(v2.cap);
        for k in 16..80 {
            let mut before = RuleState::from_parts(k - 1, 0);
            for c in 0..V2_CELLS {
                let per_cell = (1u64 << 53) / V2_CELLS;
                v2.rule
                    .pause(&mut before, &mut Fixed((c * per_cell + per_cell / 2) << 11));
                let law = v2.get(k, before.memory()).clone();
                assert!(
                    law.outcomes.iter().all(|o| o.0 == cap_wait),
                    "k {k} cell {c}"
                );
                before = RuleState::from_parts(k - 1, 0);
            }
            assert!(
                v2.get(k, 0).outcomes.iter().all(|o| o.0 == cap_wait),
                "k {k}, memory dropped"
            );
        }
        assert_eq!(laws(RuleName::Decorrelated, &d).file_failures(12, 0), 1);
        assert_eq!(laws(RuleName::Full, &d).file_failures(12, 20), 12);
    }
}
