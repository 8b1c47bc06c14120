//! Retry budgets inside the simulation: the library's own `herd::budget::RetryBudget`,
//! driven by a `FakeClock` set to each step's time.
//!
//! Every first attempt deposits `budget_percent / 100` of a retry, every retry withdraws one;
//! deposits count for [`BUDGET_WINDOW`] and there is no reserve (`min_per_sec = 0`), so the
//! budget is exactly a share of the first attempts. A retry it denies is a give-up.
use std::time::Duration;

use herd::budget::{BudgetConfig, RetryBudget};
use herd::clock::FakeClock;

use crate::error::ScenarioError;
use crate::plan::Plan;

/// How long a first attempt's deposit in the retry budget counts (Finagle's and tower's 10 s).
pub(crate) const BUDGET_WINDOW: Duration = Duration::from_secs(10);

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
        let clock = FakeClock::new();
        let config = BudgetConfig {
            percent,
            min_per_sec: 0,
            window: BUDGET_WINDOW,
        };
        let budget = RetryBudget::new(config, clock.clone())
            .map_err(|e| ScenarioError::field("retry.budget_percent", e.to_string()))?;
        Ok(Some(Self { clock, budget }))
    }

    /// Sets the budget's clock to the start of `step`.
    pub(crate) fn at(&self, plan: &Plan, step: u64) {
        self.clock
            .set(Duration::from_nanos(step.saturating_mul(plan.step_ns)));
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
