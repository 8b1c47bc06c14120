//! The storm's server (docs/model.md): down during outages, otherwise a work budget per window.
//!
//! At a step with `A` arrivals and `B` of the window's budget left, the server first pays for
//! accepting them all, then serves `s = clamp(floor((B − r·A) / (1 − r)), 0, A)` of them, and
//! the budget drops by `s + r·(A − s)` (an answer costs 1, a refusal `r`), all in exact
//! arithmetic (see [`crate::refusal`]). Arrivals at earlier
//! steps of a window meet a fuller budget, so they come first. With `collapse_above = T` a
//! step with more than `T` arrivals serves none of them (the refusals are still paid for).
//!
//! Warm-up: after an outage ends at step `e`, window `w` (ending at step `e_w`) gets
//! `capacity · min(1, (e_w − e) · step / warmup)`: the ramp sampled at the window's end, so
//! the first window after the outage already serves a little.
use crate::refusal::WindowBudget;
use crate::storm::plan::Plan;

/// What the server does with one step's arrivals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Inside an outage: every attempt fails.
    Down,
    /// More arrivals than `collapse_above`: none is served.
    Collapsed,
    /// Up: serves this many, refuses the rest.
    Serve(u64),
}

#[derive(Debug)]
pub(crate) struct ServerState<'p> {
    plan: &'p Plan,
    window: u64,
    budget: WindowBudget,
    /// The first outage that has not ended by the current step.
    outage: usize,
}

impl<'p> ServerState<'p> {
    pub(crate) fn new(plan: &'p Plan) -> Self {
        Self {
            plan,
            window: u64::MAX,
            budget: WindowBudget::full(0, plan.refusal_cost),
            outage: 0,
        }
    }

    /// Whether step `step` is inside an outage. Steps must not go backwards.
    pub(crate) fn is_down(&mut self, step: u64) -> bool {
        let outages = &self.plan.outages;
        while self.outage < outages.len() && outages[self.outage].1 <= step {
            self.outage += 1;
        }
        self.outage < outages.len() && outages[self.outage].0 <= step
    }

    /// The work budget of window `w`.
    pub(crate) fn capacity_of(&self, w: u64) -> WindowBudget {
        let plan = self.plan;
        let full = WindowBudget::full(plan.capacity, plan.refusal_cost);
        if plan.warmup_ns == 0 {
            return full;
        }
        let end = w.saturating_add(1).saturating_mul(plan.steps_per_window);
        let ended = plan.outages.partition_point(|o| o.1 <= end);
        if ended == 0 {
            return full;
        }
        let since = (end - plan.outages[ended - 1].1).saturating_mul(plan.step_ns);
        WindowBudget::ramped(plan.capacity, plan.refusal_cost, since, plan.warmup_ns)
    }

    /// `arrivals` knock at `step`: the verdict, and the budget paid.
    pub(crate) fn arrive(&mut self, step: u64, arrivals: u64) -> Verdict {
        if self.is_down(step) {
            return Verdict::Down;
        }
        let w = step / self.plan.steps_per_window;
        if w != self.window {
            self.window = w;
            self.budget = self.capacity_of(w);
        }
        if self.plan.collapse_above.is_some_and(|t| arrivals > t) {
            self.budget.refuse_all(arrivals);
            return Verdict::Collapsed;
        }
        Verdict::Serve(self.budget.serve(arrivals))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::storm::scenario::Scenario;

    fn plan(edit: impl FnOnce(&mut Scenario)) -> Plan {
        let mut s = Scenario::default();
        edit(&mut s);
        Plan::new(&s, &Limits::unlimited()).unwrap()
    }

    /// What a server of the default scenario with `edit` made answers to each `(step,
    /// arrivals)` in turn.
    fn verdicts(edit: impl FnOnce(&mut Scenario), arrivals: &[(u64, u64)]) -> Vec<Verdict> {
        let p = plan(edit);
        let mut server = ServerState::new(&p);
        arrivals
            .iter()
            .map(|&(step, n)| server.arrive(step, n))
            .collect()
    }

    #[test]
    fn serves_min_of_arrivals_and_budget_without_refusal_cost() {
        // Down before the outage ends; then window 34 = steps 102..105.
        let arrivals = [(99, 10), (102, 30), (103, 30), (104, 30), (105, 70)];
        assert_eq!(
            verdicts(|s| s.window_ms = 300.0, &arrivals),
            [
                Verdict::Down,
                Verdict::Serve(30),
                Verdict::Serve(20),
                Verdict::Serve(0),
                Verdict::Serve(50)
            ]
        );
    }

    #[test]
    fn refusals_eat_the_budget() {
        // (50 − 0.1·2000) / 0.9 < 0; then (50 − 0.1·100) / 0.9 = 44.4 → 44, budget
        // 50 − 44 − 5.6 = 0.4.
        let served = verdicts(|s| s.server.refusal_cost = 0.1, &[(100, 2000), (101, 100)]);
        assert_eq!(served, [Verdict::Serve(0), Verdict::Serve(44)]);
    }

    /// Regression: the float formula served 46 here; `47 + 0.1 · 30 = 50` exactly.
    #[test]
    fn exact_boundary_serves_the_last_client() {
        let served = verdicts(|s| s.server.refusal_cost = 0.1, &[(100, 77)]);
        assert_eq!(served, [Verdict::Serve(47)]);
    }

    #[test]
    fn collapse_serves_none() {
        let served = verdicts(|s| s.server.collapse_above = 10, &[(100, 11), (101, 10)]);
        assert_eq!(served, [Verdict::Collapsed, Verdict::Serve(10)]);
    }

    #[test]
    fn warmup_ramps_linearly() {
        let p = plan(|s| s.server.warmup_s = 1.0);
        let server = ServerState::new(&p);
        let left = |w| server.capacity_of(w).left();
        assert_eq!(left(5), 50.0); // before the outage ends... no outage ended yet
        assert_eq!(left(100), 5.0); // window ending 0.1 s after the end
        assert_eq!(left(104), 25.0);
        assert_eq!(left(109), 50.0);
        assert_eq!(left(500), 50.0);
    }
}
