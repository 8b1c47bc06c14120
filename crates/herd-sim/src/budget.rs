//! Retry budgets inside the simulation: the library's own `herd::budget::RetryBudget`,
//! driven by a `FakeClock` set to each step's time.
//!
//! Every first attempt deposits `budget_percent / 100` of a retry, every retry withdraws one;
//! deposits count for [`BUDGET_WINDOW`] and there is no reserve (`min_per_sec = 0`), so the
//! budget is exactly a share of the first attempts. A retry it denies is a give-up.
//!
//! The agent engine drives the library's budget itself ([`SimBudget`]); the cohort engine,
//! whose deposits and withdrawals come by the million, keeps the same balance in the same
//! integers ([`BudgetLedger`], checked against the library on random histories). Both let
//! the budget choose among a step's retries the same way: a uniformly random subset of those
//! that ask ([`choose_admitted`] in the agent engine, a multivariate hypergeometric split of
//! the counts in the cohort engine; docs/model.md, "Retry budgets").
use std::time::Duration;

use herd::budget::{BudgetConfig, RetryBudget};
use herd::clock::FakeClock;

use crate::error::ScenarioError;

/// How long a first attempt's deposit in the retry budget counts (Finagle's and tower's 10 s),
/// in the storm and the latency models alike.
pub const BUDGET_WINDOW: Duration = Duration::from_secs(10);

/// The library's budget of `percent` over [`BUDGET_WINDOW`], no reserve, on a fake clock
/// that the caller sets to simulated time.
pub(crate) fn on_fake_clock(
    percent: f64,
) -> Result<(RetryBudget<FakeClock>, FakeClock), herd::budget::InvalidBudget> {
    let clock = FakeClock::new();
    let config = BudgetConfig::default()
        .percent(percent)
        .min_per_sec(0)
        .window(BUDGET_WINDOW);
    Ok((RetryBudget::new(config, clock.clone())?, clock))
}

/// The library's retry budget on simulated time.
pub(crate) struct SimBudget {
    clock: FakeClock,
    budget: RetryBudget<FakeClock>,
}

impl SimBudget {
    /// `None` when the scenario has no budget (`budget_percent = 0`).
    pub(crate) fn new(percent: f64) -> Result<Option<Self>, ScenarioError> {
        if percent <= 0.0 {
            return Ok(None);
        }
        let (budget, clock) = on_fake_clock(percent)
            .map_err(|e| ScenarioError::field("retry.budget_percent", e.to_string()))?;
        Ok(Some(Self { clock, budget }))
    }

    /// Sets the budget's clock to the start of `step`, each step `step_ns` long.
    pub(crate) fn at(&self, step: u64, step_ns: u64) {
        self.clock
            .set(Duration::from_nanos(step.saturating_mul(step_ns)));
    }

    /// A first attempt.
    #[inline]
    pub(crate) fn deposit(&self) {
        self.budget.deposit();
    }

    /// A retry: whether the budget allows it.
    #[inline]
    pub(crate) fn withdraw(&self) -> bool {
        self.budget.withdraw()
    }
}

/// One retry in the library's fixed-point units: `herd::budget::RetryBudget` counts a
/// deposit at `percent` as `round(percent · 10^4)` units and a retry as `10^6`.
const RETRY_UNITS: i128 = 1_000_000;

/// The library's budget, kept as a ledger of whole units so that many clients deposit and
/// withdraw in one operation: the cohort engine's budget.
///
/// It is `herd::budget::RetryBudget` with `min_per_sec = 0` and a window of
/// [`BUDGET_WINDOW`], in the same integers: ten slots of a second each, a deposit of
/// `round(budget_percent · 10^4)` units per first attempt in the slot of its time, a retry of
/// `10^6` units taken from the current slot only when the slots still live hold at least that
/// much. Nothing is rounded: `deposit(n)` is `n` deposits and `admit(n)` is `n` withdrawals
/// in a row (the first `admit(n)` of them succeed, the rest fail and change nothing), which the
/// tests below check against the library on random sequences. Amounts are `i128`, so a
/// trillion clients at 1000 % cannot overflow.
#[derive(Clone, Debug)]
pub(crate) struct BudgetLedger {
    slots: [i128; LEDGER_SLOTS],
    /// The generation (time / slot length) of the current slot.
    generation: u64,
    deposit: i128,
    /// A slot's length (the library's window / [`LEDGER_SLOTS`]).
    slot_ns: u64,
    /// `min_per_sec` retries a second over the window, in units, on top of the slots.
    reserve: i128,
}

/// Slots of the library's window.
const LEDGER_SLOTS: usize = 10;

impl BudgetLedger {
    /// `None` when the scenario has no budget (`budget_percent = 0`).
    pub(crate) fn new(percent: f64) -> Result<Option<Self>, ScenarioError> {
        // The library validates the percentage: build one to get its error.
        if SimBudget::new(percent)?.is_none() {
            return Ok(None);
        }
        let config = BudgetConfig::default()
            .percent(percent)
            .min_per_sec(0)
            .window(BUDGET_WINDOW);
        Ok(Some(Self::of(config)))
    }

    /// The ledger of the library's budget with `config` (checked by the caller against
    /// `RetryBudget::new`), with its reserve: `min_per_sec · window` retries, computed as the
    /// library does (`u128`, saturated at `i64::MAX / 4`).
    pub(crate) fn of(config: BudgetConfig) -> Self {
        let window_ns = u64::try_from(config.window.as_nanos()).unwrap_or(u64::MAX);
        let reserve = u128::from(config.min_per_sec) * u128::from(window_ns) * RETRY_UNITS as u128
            / 1_000_000_000;
        let reserve = i64::try_from(reserve)
            .unwrap_or(i64::MAX / 4)
            .min(i64::MAX / 4);
        Self {
            slots: [0; LEDGER_SLOTS],
            generation: 0,
            deposit: (config.percent * 10_000.0).round() as i128,
            slot_ns: (window_ns / LEDGER_SLOTS as u64).max(1),
            reserve: i128::from(reserve),
        }
    }

    /// Moves to `nanos` of simulated time.
    pub(crate) fn at_time(&mut self, nanos: u64) {
        self.at_nanos(nanos);
    }

    /// Moves to the start of `step` (each `step_ns` long): the slots time has left behind
    /// are emptied.
    pub(crate) fn at(&mut self, step: u64, step_ns: u64) {
        self.at_nanos(step.saturating_mul(step_ns));
    }

    fn at_nanos(&mut self, nanos: u64) {
        let target = nanos / self.slot_ns;
        if target <= self.generation {
            return;
        }
        let skipped = (target - self.generation).min(LEDGER_SLOTS as u64);
        for back in 0..skipped {
            self.slots[((target - back) % LEDGER_SLOTS as u64) as usize] = 0;
        }
        self.generation = target;
    }

    fn current(&mut self) -> &mut i128 {
        &mut self.slots[(self.generation % LEDGER_SLOTS as u64) as usize]
    }

    /// `n` first attempts.
    pub(crate) fn deposit(&mut self, n: u64) {
        let amount = self.deposit * i128::from(n);
        *self.current() += amount;
    }

    /// `n` retries ask, one after another: how many the budget allows (and takes).
    pub(crate) fn admit(&mut self, n: u64) -> u64 {
        let balance: i128 = self.reserve + self.slots.iter().sum::<i128>();
        let available = if balance >= RETRY_UNITS {
            balance / RETRY_UNITS
        } else {
            0
        };
        let admitted = u64::try_from(available).map_or(n, |a| a.min(n));
        *self.current() -= i128::from(admitted) * RETRY_UNITS;
        admitted
    }
}

/// Of `asking` retries in the order the step met them, the budget admits `admitted`: moves a
/// uniformly random `admitted`-subset to the front (a partial Fisher–Yates shuffle with the
/// world's generator, over whichever of the admitted or the denied are fewer). No draw when
/// all or none are admitted, so a budget that never has to choose draws nothing.
pub(crate) fn choose_admitted<T, R: herd::rng::Rng + ?Sized>(
    asking: &mut [T],
    admitted: usize,
    rng: &mut R,
) {
    let n = asking.len();
    if admitted == 0 || admitted >= n {
        return;
    }
    // Shuffling the denied to the back is the same law as the admitted to the front.
    if admitted <= n - admitted {
        for i in 0..admitted {
            let j = i + rng.below((n - i) as u64) as usize;
            asking.swap(i, j);
        }
    } else {
        for i in (admitted..n).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            asking.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd::rng::{Rng, SplitMix64};

    /// The ledger is the library's budget: random sequences of time steps, deposits and
    /// withdrawals give the same answers, withdrawal by withdrawal.
    #[test]
    fn the_ledger_is_the_library_budget() {
        let mut rng = SplitMix64::new(5);
        for case in 0..200u64 {
            let percent = [0.5, 1.0, 7.25, 10.0, 33.3333, 100.0, 1000.0][(case % 7) as usize];
            let library = SimBudget::new(percent).unwrap().unwrap();
            let mut ledger = BudgetLedger::new(percent).unwrap().unwrap();
            let mut nanos = 0u64;
            for _ in 0..300 {
                // Steps of up to 3 s, sometimes none: slots expire one by one and in jumps.
                nanos += rng.below(4) * rng.below(1_000_000_001);
                library.clock.set(Duration::from_nanos(nanos));
                ledger.at_nanos(nanos);
                let deposits = rng.below(40);
                for _ in 0..deposits {
                    library.deposit();
                }
                ledger.deposit(deposits);
                let asking = rng.below(12);
                let by_library = (0..asking).filter(|_| library.withdraw()).count() as u64;
                assert_eq!(ledger.admit(asking), by_library, "case {case}, {percent} %");
            }
        }
    }

    /// With a reserve and another window (the `ratio` throttle's Linkerd defaults and
    /// others), the ledger is still the library's budget, withdrawal by withdrawal.
    #[test]
    fn the_ledger_with_a_reserve_is_the_library_budget() {
        let mut rng = SplitMix64::new(8);
        for case in 0..120u64 {
            let config = BudgetConfig::default()
                .percent([0.0, 5.0, 20.0, 150.0][(case % 4) as usize])
                .min_per_sec([0, 1, 10, 1000][(case / 4 % 4) as usize])
                .window(Duration::from_millis(
                    [1, 700, 10_000, 60_000][(case / 16 % 4) as usize],
                ));
            let clock = FakeClock::new();
            let library = RetryBudget::new(config, clock.clone()).unwrap();
            let mut ledger = BudgetLedger::of(config);
            let mut nanos = 0u64;
            for _ in 0..200 {
                nanos += rng.below(4) * rng.below(3_000_000_001);
                clock.set(Duration::from_nanos(nanos));
                ledger.at_time(nanos);
                let deposits = rng.below(30);
                for _ in 0..deposits {
                    library.deposit();
                }
                ledger.deposit(deposits);
                let asking = rng.below(40);
                let by_library = (0..asking).filter(|_| library.withdraw()).count() as u64;
                assert_eq!(ledger.admit(asking), by_library, "case {case}: {config:?}");
            }
        }
    }

    #[test]
    fn the_ledger_counts_a_trillion_clients() {
        let mut ledger = BudgetLedger::new(1000.0).unwrap().unwrap();
        ledger.deposit(1_000_000_000_000);
        assert_eq!(ledger.admit(u64::MAX), 10_000_000_000_000);
        assert_eq!(ledger.admit(1), 0);
        assert!(BudgetLedger::new(0.0).unwrap().is_none());
        assert!(BudgetLedger::new(2000.0).is_err());
    }

    /// Every subset of the admitted size comes out equally often.
    #[test]
    fn the_admitted_are_a_uniform_subset() {
        let mut rng = SplitMix64::new(9);
        for admitted in [1usize, 2, 4] {
            let mut seen = std::collections::BTreeMap::new();
            let trials = 60_000u32;
            for _ in 0..trials {
                let mut asking = [0u8, 1, 2, 3, 4];
                choose_admitted(&mut asking, admitted, &mut rng);
                let mut front = asking[..admitted].to_vec();
                front.sort_unstable();
                *seen.entry(front).or_insert(0u32) += 1;
            }
            // C(5, k) subsets, each with probability 1 / C(5, k).
            let subsets = seen.len() as f64;
            assert_eq!(subsets, [5.0, 10.0, 10.0, 5.0][admitted - 1]);
            let p = 1.0 / subsets;
            let se = (p * (1.0 - p) / f64::from(trials)).sqrt();
            // False failure ≤ 10⁻⁶: Bonferroni over the 25 subsets of the three cases
            // (5.6 standard errors, normal tails).
            for (subset, &n) in &seen {
                let q = f64::from(n) / f64::from(trials);
                assert!(
                    (q - p).abs() < 5.6 * se,
                    "{admitted}: {subset:?} {q} vs {p}"
                );
            }
        }
    }
}
