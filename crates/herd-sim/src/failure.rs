//! What a failed attempt leads to: the one step both storm engines take after a refusal.
//!
//! The agent engine ([`engine`](crate::engine)) calls it once per refused client, the cohort
//! engine ([`cohort`](crate::cohort)) once per count of clients that drew the same wait, so
//! the two cannot drift: agreement between them is then a test of the samplers alone. The
//! order is the model's (docs/model.md, "After a failed attempt"):
//!
//! 1. a client that has made `max_attempts` attempts gives up ([`AfterFailure::out_of_attempts`]);
//! 2. otherwise the rule draws a pause, rounded up to whole steps, at least one
//!    ([`pause_steps`]; the cohort engine draws the same rounded wait from its law);
//! 3. the server's delay raises it: the wait is `max(pause, Retry-After)` when the server
//!    refused the attempt while up, the pause alone during an outage ([`AfterFailure::wait`],
//!    the only place the server's delay is applied);
//! 4. the next attempt is due at `step + timeout + wait`; past the client's deadline it gives
//!    up, then the retry budget may deny it (a give-up too), then past the horizon it is
//!    still waiting at the end ([`AfterFailure::fate`]).
use crate::fields::ceil_div;
use crate::plan::Plan;
use crate::server::Verdict;
use crate::trace::GiveUp;

/// A pause of `pause_ns` nanoseconds in whole steps: rounded up, and at least one step.
#[inline]
pub(crate) const fn pause_steps(pause_ns: u64, step_ns: u64) -> u64 {
    let steps = ceil_div(pause_ns, step_ns);
    if steps == 0 { 1 } else { steps }
}

/// Where a refused client that did not run out of attempts goes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    /// It stops: its deadline or the retry budget.
    GiveUp(GiveUp),
    /// Its next attempt would come at or after the horizon: still waiting at the end.
    BeyondHorizon,
    /// It knocks again at this step.
    Due(u64),
}

/// The failure step for the refusals of one step: the plan, the step and the server's delay.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AfterFailure<'p> {
    plan: &'p Plan,
    step: u64,
    /// The server's delay in steps: its `Retry-After` when it refused while up, else 0.
    server_delay: u64,
}

impl<'p> AfterFailure<'p> {
    /// The step for the refusals of `step`, where the server gave `verdict`.
    #[inline]
    pub(crate) fn new(plan: &'p Plan, step: u64, verdict: Verdict) -> Self {
        // A server in an outage sends no answer, so no Retry-After; a refusal, even in
        // collapse, carries it.
        let server_delay = match verdict {
            Verdict::Down => 0,
            Verdict::Collapsed | Verdict::Serve(_) => plan.retry_after_steps,
        };
        Self {
            plan,
            step,
            server_delay,
        }
    }

    /// Whether a client that had failed `failures` times before this attempt has now made
    /// `max_attempts` attempts and gives up (never when `max_attempts` is 0, no limit).
    #[inline]
    pub(crate) fn out_of_attempts(&self, failures: u32) -> bool {
        self.plan.max_attempts > 0 && failures.saturating_add(1) >= self.plan.max_attempts
    }

    /// The wait in steps before the next attempt, given the rule's pause in steps: the one
    /// place the server's delay is applied (today `max(pause, Retry-After)`, no jitter).
    #[inline]
    pub(crate) fn wait(&self, pause_steps: u64) -> u64 {
        pause_steps.max(self.server_delay)
    }

    /// Where a client goes whose rule paused `pause_steps` (see [`pause_steps`]), first
    /// attempting at step `first` (only read under a deadline). `budget_allows` is asked only
    /// when the deadline leaves the retry possible, and withdraws from the retry budget.
    #[inline]
    pub(crate) fn fate(
        &self,
        pause_steps: u64,
        first: u32,
        budget_allows: impl FnOnce() -> bool,
    ) -> Fate {
        let plan = self.plan;
        let next = self.step + plan.timeout_steps + self.wait(pause_steps);
        if plan
            .deadline_steps
            .is_some_and(|d| next - u64::from(first) >= d)
        {
            return Fate::GiveUp(GiveUp::Deadline);
        }
        if !budget_allows() {
            return Fate::GiveUp(GiveUp::Budget);
        }
        if next >= plan.steps {
            Fate::BeyondHorizon
        } else {
            Fate::Due(next)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::scenario::Scenario;

    fn plan(text: &str) -> Plan {
        let scenario = Scenario::from_toml_str(text).unwrap();
        Plan::new(&scenario, &Limits::default()).unwrap()
    }

    #[test]
    fn rounding_is_up_and_at_least_one_step() {
        assert_eq!(ceil_div(10, 5), 2);
        assert_eq!(ceil_div(11, 5), 3);
        assert_eq!(pause_steps(0, 100), 1);
        assert_eq!(pause_steps(100, 100), 1);
        assert_eq!(pause_steps(101, 100), 2);
    }

    #[test]
    fn retry_after_raises_the_pause_only_when_the_server_answered() {
        // 100 ms steps: Retry-After 1 s is 10 steps.
        let p = plan("[server]\nretry_after_s = 1\n");
        let up = AfterFailure::new(&p, 5, Verdict::Serve(0));
        assert_eq!(up.wait(3), 10);
        assert_eq!(up.wait(12), 12);
        let collapsed = AfterFailure::new(&p, 5, Verdict::Collapsed);
        assert_eq!(collapsed.wait(3), 10);
        let down = AfterFailure::new(&p, 5, Verdict::Down);
        assert_eq!(down.wait(3), 3);
        assert_eq!(up.fate(3, 0, || true), Fate::Due(15));
    }

    #[test]
    fn deadline_then_budget_then_horizon() {
        // Deadline 1 s = 10 steps; horizon 60 s = 600 steps; timeout 0.
        let p = plan("horizon_s = 60\n[clients]\ndeadline_s = 1\nmax_attempts = 3\n");
        let f = AfterFailure::new(&p, 590, Verdict::Serve(0));
        // Due at 595, first at 586: 9 steps, inside the deadline.
        assert_eq!(f.fate(5, 586, || true), Fate::Due(595));
        // First at 585: 10 steps, past it; the budget is not asked.
        let mut asked = false;
        let fate = f.fate(5, 585, || {
            asked = true;
            true
        });
        assert_eq!((fate, asked), (Fate::GiveUp(GiveUp::Deadline), false));
        assert_eq!(f.fate(5, 590, || false), Fate::GiveUp(GiveUp::Budget));
        assert_eq!(f.fate(10, 595, || true), Fate::BeyondHorizon);
        assert!(!f.out_of_attempts(1));
        assert!(f.out_of_attempts(2));
        let unlimited = plan("[clients]\nmax_attempts = 0\n");
        assert!(!AfterFailure::new(&unlimited, 0, Verdict::Down).out_of_attempts(u32::MAX));
    }
}
