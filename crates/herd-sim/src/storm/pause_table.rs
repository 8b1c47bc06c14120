//! A rule's pause in whole steps, as the agent engine draws it for each refused client.
//!
//! [`InSteps`] asks the library's rule ([`herd::Rule::pause_nanos`]) and converts its
//! nanoseconds to steps ([`PauseSteps`]). [`GrpcSteps`] gives the very same steps for
//! `grpc` without the rule's floating-point formula: for a given failure count, `grpc`'s
//! pause draws one word `w` from the generator and uses only its top 53 bits `x = w >> 11`
//! (as `u = x · 2^-53`), and every operation after that (`current · (1 + jitter · (2u − 1))`
//! with a non-negative jitter and backoff, the truncation to an integer, the cap, the
//! rounding up to steps) never decreases as `x` grows. So the pause in steps is a step
//! function of `x`, and the table holds, for each failure count, where it steps up: the
//! thresholds are found by bisection over `x`, asking the rule itself (through
//! [`Fixed`]), so the table gives the rule's own result by construction. A draw is then one
//! word from the generator, a multiply that guesses how many thresholds lie below `x`
//! (they are almost evenly spaced, as the formula is linear in `u`), and two compares that
//! correct the guess by one either way; the table is checked, when built, to be within one
//! everywhere, and a rule whose table would not be (or is too large) keeps [`InSteps`].
//!
//! A loop over many refused clients takes its pauser through [`Pauser::specialised`]:
//! [`InSteps`] then hands it a copy of itself compiled for its rule alone ([`Only`]: the
//! seven rules from `immediate` to `grpc` in `RuleName`'s order), so that the loop holds one
//! branch of [`Rule::pause_nanos`] with the rule's parameters in registers, instead of a
//! jump to the branch of the rule at hand for every client.
use herd::rng::{Rng, SplitMix64};
use herd::{Rule, RuleName, RuleState};

use crate::storm::failure::PauseSteps;
use crate::storm::record::Replayed;

/// A rule's pause in whole steps after a failure (at least one step).
pub(crate) trait Pauser {
    /// The pause in steps after a failure from `state` (updated), drawn from `rng`: the
    /// same value and the same draws as [`InSteps::steps`].
    fn steps(&self, state: &mut RuleState, rng: &mut SplitMix64) -> u64;

    /// Hands `job` this pauser, or one compiled for its rule alone: a loop over many
    /// clients then holds that rule's formula only, not a branch to every rule's.
    #[inline(always)]
    fn specialised(&self, job: impl WithPauser)
    where
        Self: Sized,
    {
        job.run(self);
    }
}

/// Work that draws pauses from a [`Pauser`] it is handed.
pub(crate) trait WithPauser {
    fn run<P: Pauser>(self, pauser: &P);
}

impl<P: Pauser> Pauser for &P {
    #[inline(always)]
    fn steps(&self, state: &mut RuleState, rng: &mut SplitMix64) -> u64 {
        (**self).steps(state, rng)
    }
}

/// The library's rule, its pause converted to steps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InSteps<'r> {
    pub(crate) rule: &'r Rule,
    pub(crate) to_steps: PauseSteps,
}

impl Pauser for InSteps<'_> {
    #[inline(always)]
    fn steps(&self, state: &mut RuleState, rng: &mut SplitMix64) -> u64 {
        self.to_steps.of(self.rule.pause_nanos(state, rng))
    }

    #[inline(always)]
    fn specialised(&self, job: impl WithPauser) {
        specialise(self, job);
    }
}

/// The rules that get a loop of their own, each with the number [`Only`] knows it by: one
/// list, from which both the dispatch and the check in [`Only::steps`] are written.
/// `decorrelated-v2`, `grpc-retry` and `randomized` measured the same either way, so they
/// keep the general pauser, as does a rule added later until listed here.
macro_rules! specialised_rules {
    ($($name:ident = $k:literal),* $(,)?) => {
        /// The number [`Only`] knows `name` by (0: none).
        const fn code(name: RuleName) -> u8 {
            match name {
                $(RuleName::$name => $k,)*
                _ => 0,
            }
        }

        /// Hands `job` the pauser compiled for `in_steps`'s rule, or `in_steps` itself.
        #[inline(always)]
        fn specialise(in_steps: &InSteps<'_>, job: impl WithPauser) {
            let (rule, to_steps) = (*in_steps.rule, in_steps.to_steps);
            match rule.name() {
                $(RuleName::$name => job.run(&Only::<$k> { rule, to_steps }),)*
                _ => job.run(in_steps),
            }
        }
    };
}

specialised_rules!(
    Immediate = 1,
    Constant = 2,
    Exponential = 3,
    Full = 4,
    Equal = 5,
    Decorrelated = 6,
    Grpc = 7,
);

/// [`InSteps`] for a rule known when compiled (`code(rule.name()) == K`), by value: the
/// compiler then keeps its one branch of [`Rule::pause_nanos`] and its parameters in
/// registers.
#[derive(Clone, Copy, Debug)]
struct Only<const K: u8> {
    rule: Rule,
    to_steps: PauseSteps,
}

impl<const K: u8> Pauser for Only<K> {
    #[inline(always)]
    fn steps(&self, state: &mut RuleState, rng: &mut SplitMix64) -> u64 {
        if code(self.rule.name()) != K {
            unreachable!("a pauser built for one rule was given another");
        }
        self.to_steps.of(self.rule.pause_nanos(state, rng))
    }
}

/// Not a generator: answers every word with `x << 11`, so that `next_f64` is `x · 2^-53`,
/// and counts the words asked for.
struct Fixed {
    x: u64,
    draws: u32,
}

impl Rng for Fixed {
    fn next_u64(&mut self) -> u64 {
        self.draws += 1;
        self.x << 11
    }
}

/// The top of `x`'s range: 53 bits.
const X_END: u64 = 1 << 53;

/// One failure count's law in [`GrpcSteps`].
#[derive(Clone, Debug)]
struct Row {
    /// The pause in steps at `x = 0`.
    lowest: u64,
    /// The thresholds in order, between a 0 before (at most every `x`) and a `u64::MAX`
    /// after them: `n` thresholds in `n + 2` entries.
    edges: Box<[u64]>,
    /// The first threshold, and the multiplier that spreads the others: the guess is
    /// `1 + ((x − first) · slope) >> 64` thresholds at most `x` (or 0 below the first).
    first: u64,
    slope: u64,
    /// The memory word after this failure.
    word_after: u64,
}

impl Row {
    /// How many thresholds.
    #[inline(always)]
    fn n(&self) -> usize {
        self.edges.len() - 2
    }

    /// The guessed number of thresholds at most `x`, in `0..=n`.
    #[inline(always)]
    fn guess(&self, x: u64) -> usize {
        if x < self.first {
            return 0;
        }
        // Below 2^53 (`x` is), so the increment cannot overflow.
        let beyond = ((u128::from(x - self.first) * u128::from(self.slope)) >> 64) as usize;
        (1 + beyond).min(self.n())
    }

    /// The number of thresholds at most `x`: the guess, then one step up or down.
    #[inline(always)]
    fn count(&self, x: u64) -> usize {
        let mut count = self.guess(x);
        count += usize::from(self.edges[count + 1] <= x);
        count -= usize::from(self.edges[count] > x);
        count
    }
}

/// `grpc`'s pause in steps per failure count, from thresholds on the generator's word (see
/// the module docs). Built only for a rule whose memory word is replayed from the failure
/// count ([`Replayed`]).
#[derive(Clone, Debug)]
pub(crate) struct GrpcSteps {
    /// One row per failure count; the last serves every larger count.
    rows: Vec<Row>,
    /// A copy of the last row, so that the lookup past the end has no path that panics.
    last: Row,
}

impl GrpcSteps {
    /// The most thresholds kept in all; a rule with more keeps [`InSteps`].
    const MOST_EDGES: u64 = 4096;

    /// The table for `rule` (whose words `replayed` holds) with its pauses converted by
    /// `to_steps`, or `None` when the rule is not `grpc`, draws other than one word per pause
    /// (its spread below the cap), or its table would be too large or not guess within one.
    pub(crate) fn of(rule: &Rule, to_steps: PauseSteps, replayed: &Replayed) -> Option<Self> {
        if rule.name() != RuleName::Grpc {
            return None;
        }
        let words = replayed.words();
        let mut rows = Vec::with_capacity(words.len());
        let mut kept = 0u64;
        for (k, &word) in words.iter().enumerate() {
            let state = RuleState::from_parts(u32::try_from(k).ok()?, word);
            let f = |x: u64| -> Option<u64> {
                let mut probe = Fixed { x, draws: 0 };
                let mut s = state;
                let steps = to_steps.of(rule.pause_nanos(&mut s, &mut probe));
                (probe.draws == 1).then_some(steps)
            };
            // One draw at both ends: the spread below the cap draws a second word only for
            // a pause at the cap, which the largest `x` reaches if any does.
            let lowest = f(0)?;
            let highest = f(X_END - 1)?;
            kept = kept.saturating_add(highest - lowest).saturating_add(2);
            if kept > Self::MOST_EDGES {
                return None;
            }
            let mut edges = vec![0];
            // The least `x` whose pause is at least `s`, for each `s` above the lowest.
            let mut from = 0;
            for s in lowest + 1..=highest {
                let (mut lo, mut hi) = (from, X_END - 1);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if f(mid)? >= s {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                edges.push(lo);
                from = lo;
            }
            let n = highest - lowest;
            edges.push(u64::MAX);
            let first = edges[1];
            let slope = if n >= 2 {
                let span = u128::from(edges[n as usize] - first);
                u64::try_from((u128::from(n - 1) << 64) / span.max(1)).ok()?
            } else {
                0
            };
            rows.push(Row {
                lowest,
                edges: edges.into_boxed_slice(),
                first,
                slope,
                word_after: words[(k + 1).min(words.len() - 1)],
            });
        }
        let last = rows.last()?.clone();
        let table = Self { rows, last };
        table.guesses_within_one().then_some(table)
    }

    /// Whether every row's guess is within one of the true count for every `x`: the count
    /// is `j` on `[edge j, edge j+1)` and the guess never decreases, so checking both ends
    /// of each such interval covers it.
    fn guesses_within_one(&self) -> bool {
        self.rows.iter().all(|row| {
            (0..=row.n()).all(|j| {
                let (lo, hi) = (row.edges[j], row.edges[j + 1].min(X_END));
                lo >= hi || [lo, hi - 1].iter().all(|&x| row.guess(x).abs_diff(j) <= 1)
            })
        })
    }
}

impl Pauser for GrpcSteps {
    #[inline(always)]
    fn steps(&self, state: &mut RuleState, rng: &mut SplitMix64) -> u64 {
        let failures = state.failures();
        let row = self.rows.get(failures as usize).unwrap_or(&self.last);
        *state = RuleState::from_parts(failures.saturating_add(1), row.word_after);
        let x = rng.next_u64() >> 11;
        row.lowest + row.count(x) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Every pause of the table is the rule's, draw for draw, over many clients' lives.
    #[test]
    fn grpc_steps_are_the_rules_own() {
        let rules = [
            (
                Rule::grpc(
                    Duration::from_millis(100),
                    1.6,
                    0.2,
                    Duration::from_secs(20),
                ),
                100_000_000,
            ),
            (
                Rule::grpc(Duration::from_millis(1), 1.3, 1.0, Duration::from_secs(2)),
                10_000_000,
            ),
            (
                Rule::grpc(
                    Duration::from_nanos(3),
                    1.01,
                    0.5,
                    Duration::from_nanos(700),
                ),
                7,
            ),
            (
                Rule::grpc(Duration::from_secs(1), 1.0, 0.0, Duration::from_secs(1)),
                1_000_000,
            ),
        ];
        for (rule, per_step) in rules {
            let rule = rule.unwrap();
            let to_steps = PauseSteps::new(per_step, rule.max_pause_nanos());
            let replayed = Replayed::of(&rule).unwrap();
            let table = GrpcSteps::of(&rule, to_steps, &replayed).expect("a table");
            let plain = InSteps {
                rule: &rule,
                to_steps,
            };
            let (mut a, mut b) = (SplitMix64::new(5), SplitMix64::new(5));
            for _ in 0..2000 {
                let (mut sa, mut sb) = (RuleState::default(), RuleState::default());
                for _ in 0..30 {
                    assert_eq!(table.steps(&mut sa, &mut a), plain.steps(&mut sb, &mut b));
                    assert_eq!(sa, sb);
                }
            }
        }
    }

    /// Records the pauses of 40 clients' first 30 failures, drawn from the pauser it is
    /// handed.
    struct Lives(Vec<(u64, RuleState)>, SplitMix64);

    impl WithPauser for &mut Lives {
        fn run<P: Pauser>(self, pauser: &P) {
            for _ in 0..40 {
                let mut state = RuleState::default();
                for _ in 0..30 {
                    let steps = pauser.steps(&mut state, &mut self.1);
                    self.0.push((steps, state));
                }
            }
        }
    }

    /// Every rule, handed to work as its specialised pauser, draws what the rule draws.
    #[test]
    fn specialised_pausers_are_the_rules_own() {
        for name in RuleName::ALL {
            let plain = name.build(&herd::RuleParams::default()).unwrap();
            for rule in [plain, plain.spread_below_cap(0.25).unwrap()] {
                let in_steps = InSteps {
                    rule: &rule,
                    to_steps: PauseSteps::new(1_000_000, rule.max_pause_nanos()),
                };
                let mut specialised = Lives(Vec::new(), SplitMix64::new(9));
                in_steps.specialised(&mut specialised);
                let mut general = Lives(Vec::new(), SplitMix64::new(9));
                (&mut general).run(&in_steps);
                assert_eq!(specialised.0, general.0, "{name}");
                assert_eq!(specialised.1, general.1, "{name}");
                assert_eq!(specialised.0.len(), 1200);
            }
        }
    }

    #[test]
    fn other_rules_and_a_spread_keep_the_rule() {
        let spread = Rule::grpc(
            Duration::from_millis(100),
            1.6,
            0.2,
            Duration::from_secs(20),
        )
        .unwrap()
        .spread_below_cap(0.1)
        .unwrap();
        let to_steps = PauseSteps::new(100_000_000, spread.max_pause_nanos());
        let replayed = Replayed::of(&spread).unwrap();
        assert!(GrpcSteps::of(&spread, to_steps, &replayed).is_none());
    }
}
