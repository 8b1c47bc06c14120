//! What a failed attempt leads to: the one step both storm engines take after a refusal.
//!
//! The agent engine ([`engine`](crate::storm::engine)) calls it once per refused client, the cohort
//! engine ([`cohort`](crate::storm::cohort)) once per count of clients that drew the same pause, so
//! the two cannot drift: agreement between them is then a test of the samplers alone. The
//! order is the model's (docs/model.md, "After a failed attempt"):
//!
//! 1. a client that has made `max_attempts` attempts gives up ([`AfterFailure::out_of_attempts`]);
//! 2. otherwise the rule draws a pause, in whole steps (`pauses = "steps"`) or in nanoseconds
//!    rounded up to whole steps, at least one ([`pause_steps`]; the cohort engine draws the
//!    same pause from its law). Either way the pause reaches step 3 in whole steps, so the
//!    server's delay below is handled alike in both modes;
//! 3. when the server refused the attempt while up with a `Retry-After`, the library's
//!    [`herd::server_delay::decide`] turns pause and delay into the wait, exactly as the
//!    retry loops do: `max(pause, Retry-After)` plus a jitter uniform on `0..=10 %` of that,
//!    or a give-up ([`GiveUp::ServerDelay`]) when the delay is longer than
//!    `max_server_delay_s` or does not end before the deadline ([`AfterFailure::wait`],
//!    the only place the server's delay is applied; the cohort engine splits a count over the
//!    same outcomes with [`AfterFailure::split_wait`]). Without a `Retry-After` (an outage, or
//!    `retry_after_s = 0`) the wait is the pause and nothing is drawn;
//! 4. with `[clients.latency]`, the retry reaches the server a delay later: drawn right after
//!    the wait, in whole steps ([`AfterFailure::latency`]; the cohort engine splits a count
//!    over the same delay's law, `crate::storm::attempt_latency`);
//! 5. the next attempt is due at `step + timeout + wait + delay`; past the client's deadline
//!    it gives up, then the retry budget may deny it (a give-up too), then past the horizon it
//!    is still waiting at the end ([`AfterFailure::fate`], given `wait + delay`).
//!
//! # Steps as nanoseconds
//!
//! `decide` does exact integer arithmetic on nanoseconds. The simulator passes its lengths in
//! whole steps as `Duration::from_nanos(steps)` — one nanosecond standing for one step — so
//! the library's rule applies unchanged to step counts and its wait comes back in whole steps:
//! the jitter is `range_inclusive(0, floor(base / 10))` steps. The time left is the client's
//! deadline less the steps since its first attempt and the timeout. The longest delay honoured
//! is `clients.max_server_delay_s` rounded up to whole steps like every length (so a
//! `Retry-After` is compared with it in whole steps), or [`Duration::MAX`] when it is 0. Both
//! of `decide`'s stops, too long and past the deadline, are a [`GiveUp::ServerDelay`], as both
//! are the library's `StopReason::ServerDelay`.
use std::time::Duration;

use herd::rng::Rng;
use herd::server_delay::{self, ServerDelay, ServerDelayLimits, ServerStop, ServerWait};

use crate::fields::ceil_div;
use crate::sample;
use crate::storm::plan::{Plan, PlannedRule};
use crate::storm::server::Verdict;
use crate::storm::trace::GiveUp;

/// A pause of `pause_ns` of the rule's nanoseconds in whole steps, `per_step` of them making
/// one step: rounded up, and at least one step. With `pauses = "steps"` the rule's unit is
/// the step (`per_step` = 1) and this is `max(1, pause)`; otherwise `per_step` is the step in
/// nanoseconds.
///
/// `per_step` = 1 (whole steps, the default scenario's mode) skips the division: a u64
/// division costs tens of cycles, more than drawing the pause itself.
#[inline(always)]
pub(crate) const fn pause_steps(pause_ns: u64, per_step: u64) -> u64 {
    if per_step == 1 {
        return if pause_ns == 0 { 1 } else { pause_ns };
    }
    let steps = ceil_div(pause_ns, per_step);
    if steps == 0 { 1 } else { steps }
}

/// [`pause_steps`] for the pauses of one rule, with the division by the step replaced by a
/// multiply and a shift (the agent engine converts every pause of a rule drawn in
/// nanoseconds, `grpc` among them, and a `u64` division cost more than the draw).
///
/// For a pause `p ≥ 1`, `max(1, ceil(p / d)) = floor((p − 1) / d) + 1`, and for `p = 0` the
/// same formula gives 1. `floor(x / d)` is `floor(x · m / 2^k)` with `m = ceil(2^k / d)` for
/// every `x ≤ X` once `X · d < 2^k`: writing `m · d = 2^k + e` with `0 ≤ e < d`,
/// `x · m / 2^k = x / d + x · e / (d · 2^k)`, and the second term is below `1 / d`, too
/// little to carry `x / d` past the next integer. `k` is at least 64, so the quotient is the
/// high word of a 64 × 64-bit product shifted right, and `m < 2^64` as long as `X < 2^62`
/// (a rule's longest pause in nanoseconds: 146 years). A longer pause falls back to the
/// division, so the result is `pause_steps`'s for every input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PauseSteps {
    per_step: u64,
    /// The largest `p − 1` the multiply is exact for (0 when it is not used).
    most: u64,
    magic: u64,
    /// `k − 64`.
    shift: u32,
}

impl PauseSteps {
    /// The conversion for pauses of at most `max_pause_ns` (the rule's longest; longer ones
    /// are still converted exactly, by division), `per_step` of the rule's nanoseconds a step.
    pub(crate) fn new(per_step: u64, max_pause_ns: u64) -> Self {
        let most = max_pause_ns.saturating_sub(1);
        let plain = Self {
            per_step,
            most: 0,
            magic: 0,
            shift: 0,
        };
        if per_step <= 1 || most >= 1 << 62 {
            return plain;
        }
        let bits = |v: u64| 64 - v.leading_zeros();
        let k = (bits(most) + bits(per_step)).max(64);
        let magic = (1u128 << k).div_ceil(u128::from(per_step));
        match u64::try_from(magic) {
            Ok(magic) => Self {
                per_step,
                most,
                magic,
                shift: k - 64,
            },
            Err(_) => plain,
        }
    }

    /// `pause_steps(pause_ns, per_step)`.
    #[inline(always)]
    pub(crate) fn of(&self, pause_ns: u64) -> u64 {
        if self.per_step == 1 {
            return if pause_ns == 0 { 1 } else { pause_ns };
        }
        let x = pause_ns.saturating_sub(1);
        if x > self.most {
            return pause_steps(pause_ns, self.per_step);
        }
        let high = ((u128::from(x) * u128::from(self.magic)) >> 64) as u64;
        (high >> self.shift) + 1
    }
}

/// The limits the simulator's clients honour server delays under: the longest delay
/// `clients.max_server_delay_s` in steps (none when 0), the library's default jitter (10 %).
fn limits(plan: &Plan) -> ServerDelayLimits {
    let jitter = f64::from(ServerDelayLimits::default().jitter_ppm()) / 1e6;
    let longest = plan
        .max_server_delay_steps
        .map_or(Duration::MAX, as_duration);
    ServerDelayLimits::new(longest, jitter).expect("the default jitter is in [0, 1]")
}

/// A length in steps as the nanoseconds `decide` computes with (see the module docs).
#[inline]
const fn as_duration(steps: u64) -> Duration {
    Duration::from_nanos(steps)
}

/// A wait `decide` returned, back in steps.
#[inline]
fn as_steps(wait: Duration) -> u64 {
    // The inputs are step counts below 2^64 and the result saturates there.
    u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX)
}

/// Not a generator: stands in for one so that the cohort engine can ask `decide` what a
/// given value of its one uniform draw leads to. `decide` draws exactly one
/// `range_inclusive(0, spread)` (its documented contract); this records `spread` and answers
/// `pick` (at most `spread`).
struct Probe {
    pick: u64,
    spread: Option<u64>,
}

impl Rng for Probe {
    fn next_u64(&mut self) -> u64 {
        unreachable!("decide draws only through range_inclusive")
    }

    fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(self.spread.is_none(), "decide draws once");
        self.spread = Some(hi - lo);
        lo + self.pick.min(hi - lo)
    }
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
    /// The server's `Retry-After` in steps when it refused while up with one, else `None`.
    retry_after: Option<u64>,
    limits: ServerDelayLimits,
}

impl<'p> AfterFailure<'p> {
    /// The step for the refusals of `step`, where the server gave `verdict`.
    #[inline]
    pub(crate) fn new(plan: &'p Plan, step: u64, verdict: Verdict) -> Self {
        // A server in an outage sends no answer, so no Retry-After; a refusal, even in
        // collapse, carries it.
        let retry_after = match verdict {
            Verdict::Down => None,
            Verdict::Collapsed | Verdict::Serve(_) => {
                (plan.retry_after_steps > 0).then_some(plan.retry_after_steps)
            }
        };
        Self {
            plan,
            step,
            retry_after,
            limits: limits(plan),
        }
    }

    /// Whether a client that had failed `failures` times before this attempt has now made
    /// `max_attempts` attempts and gives up (never when `max_attempts` is 0, no limit).
    #[inline]
    pub(crate) fn out_of_attempts(&self, failures: u32) -> bool {
        self.plan.max_attempts > 0 && failures.saturating_add(1) >= self.plan.max_attempts
    }

    /// Whether the server gave a `Retry-After` with these refusals: only then does
    /// [`wait`](Self::wait) draw from the generator.
    #[inline]
    pub(crate) fn has_server_delay(&self) -> bool {
        self.retry_after.is_some()
    }

    /// The longest wait in steps after which a client that first attempted at `first` may
    /// still attempt before its deadline (`decide`'s `left`), or `None` without a deadline.
    fn left(&self, first: u32) -> Option<Duration> {
        let deadline = self.plan.deadline_steps?;
        let spent = (self.step - u64::from(first)).saturating_add(self.plan.timeout_steps);
        Some(as_duration(deadline.saturating_sub(spent)))
    }

    /// The library's decision for a pause of `pause_steps`, drawing from `rng`.
    fn decide<R: Rng + ?Sized>(
        &self,
        retry_after: u64,
        pause_steps: u64,
        first: u32,
        rng: &mut R,
    ) -> Result<u64, GiveUp> {
        match decide_in_steps(
            pause_steps,
            retry_after,
            self.left(first),
            &self.limits,
            rng,
        ) {
            ServerWait::Wait(w) => Ok(as_steps(w)),
            ServerWait::Stop(ServerStop::TooLong | ServerStop::PastDeadline) => {
                Err(GiveUp::ServerDelay)
            }
            // The simulator's servers send only `Retry-After`, never a gRPC "do not retry".
            other => unreachable!("no Retry-After stops with {other:?}"),
        }
    }

    /// The wait in steps before the next attempt of a client whose rule paused `pause_steps`
    /// and that first attempted at `first` (only read under a deadline), or the give-up the
    /// server's delay leads to.
    ///
    /// Without a `Retry-After` the wait is the pause and nothing is drawn. With one, it is
    /// [`herd::server_delay::decide`]'s, the very rule of the library's retry loops, drawing
    /// its jitter from `rng` (one `range_inclusive`), and a delay that does not end before the
    /// deadline is a [`GiveUp::Deadline`].
    #[inline]
    pub(crate) fn wait<R: Rng + ?Sized>(
        &self,
        pause_steps: u64,
        first: u32,
        rng: &mut R,
    ) -> Result<u64, GiveUp> {
        match self.retry_after {
            None => Ok(pause_steps),
            Some(retry_after) => self.decide(retry_after, pause_steps, first, rng),
        }
    }

    /// Splits `count` clients that drew the same pause (and first attempted at `first`) over
    /// the waits [`wait`](Self::wait) gives them, calling `emit(n, wait)` for each part, in
    /// the law of `count` independent calls of `wait`.
    ///
    /// The wait's only randomness is `decide`'s one uniform draw of the jitter from
    /// `0..=spread`, so the counts per value are multinomial with equal cell probabilities:
    /// drawn as a chain of binomials, the value each cell leads to asked of `decide` itself.
    /// A few clients (up to [`DRAW_EACH_UP_TO`]) call `wait` one by one instead.
    pub(crate) fn split_wait<R: Rng + ?Sized>(
        &self,
        count: u64,
        pause_steps: u64,
        first: u32,
        rng: &mut R,
        mut emit: impl FnMut(u64, Result<u64, GiveUp>),
    ) {
        let Some(retry_after) = self.retry_after else {
            emit(count, Ok(pause_steps));
            return;
        };
        if count <= DRAW_EACH_UP_TO {
            for _ in 0..count {
                emit(1, self.decide(retry_after, pause_steps, first, rng));
            }
            return;
        }
        let mut probe = Probe {
            pick: 0,
            spread: None,
        };
        let lowest = self.decide(retry_after, pause_steps, first, &mut probe);
        let Some(spread) = probe.spread else {
            // Stopped before drawing: every client alike.
            emit(count, lowest);
            return;
        };
        let wait_of = |pick: u64| {
            let mut probe = Probe { pick, spread: None };
            self.decide(retry_after, pause_steps, first, &mut probe)
        };
        // The wait grows with the draw (`min(base + extra, cut)`), so from the first cell
        // that reaches the highest wait (the deadline's cut) on, every cell gives it: those
        // cells are one.
        let highest = wait_of(spread);
        let mut left = count;
        let mut cell = 0u64;
        while left > 0 {
            let wait = wait_of(cell);
            let cells_left = spread - cell + 1;
            let n = if cells_left == 1 || wait == highest {
                left
            } else {
                sample::binomial(rng, left, 1.0 / cells_left as f64)
            };
            if n > 0 {
                emit(n, wait);
                left -= n;
            }
            cell += 1;
        }
    }

    /// The delay in steps with which a retry reaches the server (0 without
    /// `[clients.latency]`), drawn from `rng` right after the wait unless it is constant
    /// (see `crate::storm::attempt_latency`). The retry is due `wait + delay` after the timeout.
    #[inline]
    pub(crate) fn latency<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        // Tested here, inline: `map_or` was a call per refused client, 4 % of a
        // `decorrelated` storm without a latency.
        match &self.plan.latency {
            None => 0,
            Some(l) => l.draw(rng),
        }
    }

    /// Where a client goes that waits `wait` steps (see [`wait`](Self::wait)), first
    /// attempting at step `first` (only read under a deadline). `budget_allows` is asked only
    /// when the deadline leaves the retry possible, and withdraws from the retry budget.
    #[inline]
    pub(crate) fn fate(&self, wait: u64, first: u32, budget_allows: impl FnOnce() -> bool) -> Fate {
        let plan = self.plan;
        let next = self.step + plan.timeout_steps + wait;
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

    /// The longest wait in steps after a pause of at most `max_pause_steps`, plus the typical
    /// longest latency: the calendar's ring (a deadline only cuts waits shorter; a longer
    /// latency still works, beyond the ring).
    /// The longest wait in steps, as the calendars size their rings: the timeout, the
    /// rule's longest pause and what the server and the latency add (or the horizon).
    pub(crate) fn max_wait(plan: &Plan, rule: &PlannedRule) -> u64 {
        let max_pause_steps = pause_steps(rule.rule.max_pause_nanos(), rule.per_step);
        plan.timeout_steps
            .saturating_add(Self::longest_wait(plan, max_pause_steps))
            .min(plan.steps)
    }

    pub(crate) fn longest_wait(plan: &Plan, max_pause_steps: u64) -> u64 {
        let latency = plan.latency.as_ref().map_or(0, |l| l.typical_longest());
        Self::longest_server_wait(plan, max_pause_steps).saturating_add(latency)
    }

    fn longest_server_wait(plan: &Plan, max_pause_steps: u64) -> u64 {
        if plan.retry_after_steps == 0 {
            return max_pause_steps;
        }
        let mut probe = Probe {
            pick: u64::MAX,
            spread: None,
        };
        match decide_in_steps(
            max_pause_steps,
            plan.retry_after_steps,
            None,
            &limits(plan),
            &mut probe,
        ) {
            ServerWait::Wait(w) => as_steps(w),
            _ => max_pause_steps,
        }
    }
}

/// At most this many clients of a count [`AfterFailure::split_wait`] draws one by one.
pub(crate) const DRAW_EACH_UP_TO: u64 = 8;

/// [`herd::server_delay::decide`] on lengths in steps: a pause of `pause_steps`, a
/// `Retry-After` of `retry_after` steps, `left` steps left (see the module docs).
fn decide_in_steps<R: Rng + ?Sized>(
    pause_steps: u64,
    retry_after: u64,
    left: Option<Duration>,
    limits: &ServerDelayLimits,
    rng: &mut R,
) -> ServerWait {
    let delay = ServerDelay::RetryAfter(as_duration(retry_after));
    server_delay::decide(as_duration(pause_steps), delay, left, limits, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::storm::scenario::Scenario;
    use herd::rng::SplitMix64;
    use std::collections::BTreeMap;

    fn plan(text: &str) -> Plan {
        let scenario = Scenario::from_toml_str(text, &crate::Limits::default(), |_| {}).unwrap();
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

    /// The multiply-and-shift conversion is `pause_steps` for every pause: at the edges of
    /// each step, at the longest pause, past it (the division's fallback), and at random,
    /// for steps from 2 ns to beyond 2^32 ns and longest pauses up to and past 2^62.
    #[test]
    fn pause_steps_by_multiplication_is_pause_steps() {
        let mut rng = SplitMix64::new(3);
        let steps = [
            2u64,
            3,
            7,
            1_000,
            100_000_000,
            1 << 32,
            (1 << 33) + 1,
            u64::MAX / 3,
        ];
        let longest = [
            0u64,
            1,
            2,
            999,
            20_000_000_000,
            (1 << 62) - 1,
            1 << 62,
            u64::MAX,
        ];
        for &d in &steps {
            for &max in &longest {
                let fast = PauseSteps::new(d, max);
                let check = |p: u64| assert_eq!(fast.of(p), pause_steps(p, d), "{p} / {d}, {max}");
                for q in [0u64, 1, 2, 5, max / d, max / d + 1] {
                    let at = q.saturating_mul(d);
                    for p in [at.saturating_sub(1), at, at.saturating_add(1)] {
                        check(p);
                    }
                }
                for p in [
                    0,
                    1,
                    max.saturating_sub(1),
                    max,
                    max.saturating_add(1),
                    u64::MAX,
                ] {
                    check(p);
                }
                for _ in 0..2_000 {
                    check(rng.range_inclusive(0, max));
                    check(rng.next_u64() >> rng.range_inclusive(0, 63));
                }
            }
        }
        assert_eq!(PauseSteps::new(1, 50).of(0), 1);
        assert_eq!(PauseSteps::new(1, 50).of(7), 7);
    }

    #[test]
    fn retry_after_raises_the_pause_only_when_the_server_answered() {
        // 100 ms steps: Retry-After 1 s is 10 steps, so waits are 10 or 11 (10 % of 10).
        let p = plan("[server]\nretry_after_s = 1\n");
        let mut rng = SplitMix64::new(1);
        let up = AfterFailure::new(&p, 5, Verdict::Serve(0));
        for _ in 0..100 {
            assert!((10..=11).contains(&up.wait(3, 0, &mut rng).unwrap()));
            assert!((12..=13).contains(&up.wait(12, 0, &mut rng).unwrap()));
        }
        let collapsed = AfterFailure::new(&p, 5, Verdict::Collapsed);
        assert!(collapsed.has_server_delay());
        assert!((10..=11).contains(&collapsed.wait(3, 0, &mut rng).unwrap()));
        // In an outage: the pause, and nothing drawn.
        let down = AfterFailure::new(&p, 5, Verdict::Down);
        let before = rng.clone();
        assert_eq!(down.wait(3, 0, &mut rng), Ok(3));
        assert_eq!(rng, before);
        assert_eq!(up.fate(10, 0, || true), Fate::Due(15));
    }

    /// Regression: the wait used to be exactly `max(pause, Retry-After)`, so every client
    /// refused in a step with the same pause came back in the same step, in lockstep.
    #[test]
    fn retry_after_waits_are_within_ten_percent_and_spread() {
        // 10 ms steps, Retry-After 5 s = 500 steps: waits in 500..=550.
        let p = plan("step_ms = 10\nwindow_ms = 10\n[server]\nretry_after_s = 5\n");
        let after = AfterFailure::new(&p, 0, Verdict::Serve(0));
        let mut rng = SplitMix64::new(7);
        let mut seen = BTreeMap::new();
        for _ in 0..10_000 {
            let w = after.wait(1, 0, &mut rng).unwrap();
            assert!((500..=550).contains(&w), "{w}");
            *seen.entry(w).or_insert(0u32) += 1;
        }
        assert_eq!(seen.len(), 51, "every value of the jitter occurs");
        // A pause longer than the delay is the floor instead.
        for _ in 0..1000 {
            let w = after.wait(800, 0, &mut rng).unwrap();
            assert!((800..=880).contains(&w), "{w}");
        }
    }

    /// The simulator's wait is the library's: the same inputs, in steps as nanoseconds, and
    /// the same generator give the same wait as calling `herd::server_delay::decide`.
    #[test]
    fn the_wait_is_the_library_decision() {
        let p = plan(
            "step_ms = 10\nwindow_ms = 10\n[server]\nretry_after_s = 2\n[clients]\ndeadline_s = 4\n",
        );
        let after = AfterFailure::new(&p, 100, Verdict::Serve(0));
        let limits = ServerDelayLimits::new(Duration::MAX, 0.1).unwrap();
        let mut ours = SplitMix64::new(11);
        let mut theirs = ours.clone();
        for (pause, first) in [
            (1, 100),
            (150, 90),
            (300, 100),
            (250, 60),
            (380, 100),
            (7, 0),
        ] {
            // Deadline 400 steps; spent: 100 − first, no timeout.
            let left = Duration::from_nanos(400u64.saturating_sub(100 - u64::from(first)));
            let want = match server_delay::decide(
                Duration::from_nanos(pause),
                ServerDelay::RetryAfter(Duration::from_nanos(200)),
                Some(left),
                &limits,
                &mut theirs,
            ) {
                ServerWait::Wait(w) => Ok(w.as_nanos() as u64),
                _ => Err(GiveUp::ServerDelay),
            };
            assert_eq!(
                after.wait(pause, first, &mut ours),
                want,
                "pause {pause}, first {first}"
            );
            assert_eq!(ours, theirs);
        }
        // (380, 100) is cut at 399 steps, the last before the deadline. At step 250, 150
        // steps are left to a client that first attempted at 0: 200 steps do not end before
        // the deadline, a give-up.
        let late = AfterFailure::new(&p, 250, Verdict::Serve(0));
        assert_eq!(late.wait(7, 0, &mut ours), Err(GiveUp::ServerDelay));
    }

    #[test]
    fn split_wait_has_the_law_of_one_by_one() {
        let p = plan(
            "step_ms = 10\nwindow_ms = 10\n[server]\nretry_after_s = 1\n[clients]\ndeadline_s = 2\n",
        );
        // At step 50, first 0: 150 steps left, so waits of 100 + 0..=10, and pauses of 145
        // give 145 + 0..=14 cut at 149.
        let after = AfterFailure::new(&p, 50, Verdict::Serve(0));
        for pause in [3u64, 145, 150] {
            let mut rng = SplitMix64::new(pause);
            let mut one = BTreeMap::new();
            let mut split = BTreeMap::new();
            let (reps, count) = (400u64, 1000u64);
            for _ in 0..reps {
                for _ in 0..count {
                    *one.entry(after.wait(pause, 0, &mut rng).ok())
                        .or_insert(0u64) += 1;
                }
                let mut total = 0;
                after.split_wait(count, pause, 0, &mut rng, |n, w| {
                    *split.entry(w.ok()).or_insert(0u64) += n;
                    total += n;
                });
                assert_eq!(total, count);
            }
            assert_eq!(
                one.keys().collect::<Vec<_>>(),
                split.keys().collect::<Vec<_>>()
            );
            let trials = (reps * count) as f64;
            for (w, &n) in &one {
                let p = n as f64 / trials;
                let se = (p * (1.0 - p) / trials).sqrt() * std::f64::consts::SQRT_2;
                let q = split[w] as f64 / trials;
                // False failure ≤ 10⁻⁶: Bonferroni over at most 1000 waits (6.1 standard
                // errors, normal tails; 5 failed one seed in 10⁴ or so).
                assert!(
                    (p - q).abs() <= 6.1 * se + 1e-12,
                    "pause {pause}, {w:?}: {p} vs {q}"
                );
            }
        }
        // Past the deadline nothing is drawn, and the whole count gives up.
        let late = AfterFailure::new(&p, 180, Verdict::Serve(0));
        let mut rng = SplitMix64::new(1);
        let before = rng.clone();
        let mut parts = Vec::new();
        late.split_wait(1000, 3, 0, &mut rng, |n, w| parts.push((n, w)));
        assert_eq!(parts, [(1000, Err(GiveUp::ServerDelay))]);
        assert_eq!(rng, before);
    }

    #[test]
    fn a_retry_after_longer_than_the_clients_accept_is_a_give_up() {
        // 100 ms steps: Retry-After 2 s is 20 steps; max_server_delay_s 1.95 s rounds up to 20.
        let honoured = plan("[server]\nretry_after_s = 2\n[clients]\nmax_server_delay_s = 1.95\n");
        let mut rng = SplitMix64::new(1);
        let after = AfterFailure::new(&honoured, 0, Verdict::Serve(0));
        assert!((20..=22).contains(&after.wait(1, 0, &mut rng).unwrap()));
        let refused = plan("[server]\nretry_after_s = 2\n[clients]\nmax_server_delay_s = 1.9\n");
        let after = AfterFailure::new(&refused, 0, Verdict::Serve(0));
        let before = rng.clone();
        assert_eq!(after.wait(1, 0, &mut rng), Err(GiveUp::ServerDelay));
        assert_eq!(rng, before, "a stop draws nothing");
        // No Retry-After in an outage, so nothing to refuse.
        let down = AfterFailure::new(&refused, 0, Verdict::Down);
        assert_eq!(down.wait(1, 0, &mut rng), Ok(1));
        // The calendar still holds the longest pause.
        assert_eq!(AfterFailure::longest_wait(&refused, 5), 5);
    }

    #[test]
    fn the_calendar_holds_the_longest_jittered_wait() {
        let p = plan("[server]\nretry_after_s = 2\n");
        // 20 steps and 10 %: 22.
        assert_eq!(AfterFailure::longest_wait(&p, 5), 22);
        assert_eq!(AfterFailure::longest_wait(&p, 40), 44);
        assert_eq!(AfterFailure::longest_wait(&plan(""), 40), 40);
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
