//! The contention model of Marc Brooker's "Exponential Backoff And Jitter" (AWS Architecture
//! Blog, 2015): N clients each update one row once with optimistic concurrency.
//!
//! # Why
//!
//! The storm model asks what retries do to a server's *capacity*; this one asks what they do
//! to *contention*. Every client that loses a race must read and write again, so clients that
//! retry together keep colliding: the work (write calls) grows with the square of N when they
//! retry at once, and jitter is what spreads them out. The article's figures compare the
//! rules by total calls and by completion time for N = 10 to 190; this model reproduces that
//! experiment with herd's own rules ([`herd::Rule::pause`]) and generator.
//!
//! # The model, event by event
//!
//! Continuous time in nanoseconds; every network hop takes a delay `max(0, N(mean, sd))`
//! (10 ms and 2 ms by default) drawn afresh. One row holds a version number, starting at 0.
//! Each of the N clients, at t = 0:
//!
//! 1. sends a **read**; it reaches the row after one delay, and the row's version *at that
//!    moment* is the client's read version;
//! 2. the answer takes one delay back; the client then sends its **write** ("set the row if
//!    its version is still the one I read"), which takes one delay to arrive;
//! 3. at the write's arrival the database counts a **write call**; the write commits (the
//!    version goes up by one) if no other write committed since this client's read arrived,
//!    otherwise it is rejected;
//! 4. the answer takes one delay back. On success the client is done; on rejection it draws
//!    a pause with the rule and sends a new read after one more delay plus the pause (1).
//!
//! Events at the same nanosecond are handled in the order they were scheduled. The run's
//! **completion time** is the time the last client learns that its write committed; its
//! **work** is the number of write calls. Pauses are not rounded (there are no steps here).
//!
//! The random draws, all from one [`SplitMix64`] seeded by the run's seed: one delay per hop
//! as it is scheduled (a rejected client draws the delay, then the pause). A delay is a
//! standard normal `z` from Marsaglia and Tsang's ziggurat (`crate::ziggurat`, one word of the
//! generator for about 98.8 % of draws), `delay = max(0, mean + sd · z)`, rounded to the
//! nanosecond.
//!
//! One difference from the article's simulator: its exponential pause after the k-th
//! rejection is `base · 2^k` (first pause 2 · base); herd's rules use `base · 2^(k−1)` (first
//! pause = base), as everywhere in herd. With `base` 5 ms the curves keep their order and
//! shape. `retry.convention = "brooker-2015"` ([`Convention::Brooker2015`]) follows the
//! article's code instead: `exponential`, `equal` and `full` run with `base` doubled (capped
//! at `cap`), `decorrelated` unchanged, and a negative delay is folded (`abs`) rather than
//! truncated.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::contention::{Contention, ContentionPoint, ContentionScenario};
//! use herd_sim::{Limits, Watch};
//!
//! let model = Contention::new(&ContentionScenario::default(), &Limits::default())?;
//! let mean = |rule| -> Result<ContentionPoint, herd_sim::ScenarioError> {
//!     let runs = (1..=5)
//!         .map(|seed| model.run(rule, seed, 50, Watch::none()))
//!         .collect::<Result<Vec<_>, _>>()?;
//!     Ok(ContentionPoint::mean(&runs).expect("five runs"))
//! };
//! let (full, none) = (mean(RuleName::Full)?, mean(RuleName::Immediate)?);
//! assert!(full.calls < none.calls, "jitter saves work");
//! # Ok::<(), herd_sim::ScenarioError>(())
//! ```
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;

use herd::rng::SplitMix64;
use herd::{Rule, RuleName, RuleParams, RuleState};
use serde::Serialize;

use crate::error::ScenarioError;
use crate::fields;
use crate::limits::Limits;
use crate::watch::{LOOK_EVERY, Watch};

mod model;
mod report;
mod scenario;

pub use report::ContentionReport;
pub use scenario::{ContentionClients, ContentionRetry, ContentionScenario, Convention, Network};

/// The most clients one run may have.
pub const MAX_CLIENTS: u64 = 1_000_000;
/// The most runs averaged per point.
pub const MAX_RUNS: u32 = 100_000;
/// A run that makes more write calls than this is stopped with an error.
pub const MAX_CALLS: u64 = 50_000_000;

/// A checked contention scenario, ready to run any rule with any seed and client count.
#[derive(Clone, Debug)]
pub struct Contention {
    scenario: ContentionScenario,
    params: RuleParams,
    /// The parameters of `exponential`, `equal` and `full`: `params`, with `base` doubled
    /// under [`Convention::Brooker2015`].
    doubling_params: RuleParams,
    mean_ms: f64,
    sd_ms: f64,
    max_calls: u64,
}

/// The metrics of a contention run for `herd sweep`, in report order.
pub const METRICS: &[&str] = &["calls", "calls_per_client", "completion_ms"];

impl ContentionRun {
    /// The figures `herd sweep` aggregates, named as in [`METRICS`].
    #[must_use]
    pub fn metrics(&self) -> crate::model::Metrics {
        let mut m = crate::model::Metrics::new();
        m.set("calls", Some(self.calls as f64));
        m.set(
            "calls_per_client",
            Some(self.calls as f64 / self.clients as f64),
        );
        m.set("completion_ms", Some(self.completion_ms));
        m
    }
}

/// One run: one rule, one seed, one client count.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContentionRun {
    /// The rule.
    #[serde(serialize_with = "crate::rule_serde::one::serialize")]
    pub rule: RuleName,
    /// The seed.
    pub seed: u64,
    /// Clients.
    pub clients: u64,
    /// Write calls (the work).
    pub calls: u64,
    /// When the last client learned that its write committed, in milliseconds.
    pub completion_ms: f64,
}

/// A rule at one client count, averaged over the scenario's runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContentionPoint {
    /// The rule.
    #[serde(serialize_with = "crate::rule_serde::one::serialize")]
    pub rule: RuleName,
    /// Clients.
    pub clients: u64,
    /// Runs averaged.
    pub runs: u32,
    /// Mean write calls per run.
    pub calls: f64,
    /// Mean write calls per client.
    pub calls_per_client: f64,
    /// Mean completion time, in milliseconds.
    pub completion_ms: f64,
}

impl ContentionPoint {
    /// The mean of `runs`, all of one rule at one client count, summed in the order given
    /// (seed order, so that the mean does not depend on the number of threads); `None` for
    /// no runs.
    #[must_use]
    pub fn mean(runs: &[ContentionRun]) -> Option<Self> {
        let first = runs.first()?;
        let (mut calls, mut completion) = (0.0, 0.0);
        for run in runs {
            calls += run.calls as f64;
            completion += run.completion_ms;
        }
        let count = runs.len() as f64;
        let calls = calls / count;
        Some(Self {
            rule: first.rule,
            clients: first.clients,
            runs: u32::try_from(runs.len()).unwrap_or(u32::MAX),
            calls,
            calls_per_client: if first.clients == 0 {
                0.0
            } else {
                calls / first.clients as f64
            },
            completion_ms: completion / count,
        })
    }
}

/// What one hop of the protocol is doing when its event fires, as a small number so that
/// the event loop can step every hop with the same few instructions (the hops of successive
/// events are in no predictable order, and a `match` on them mispredicts most events).
mod hop {
    /// The read reaches the row.
    pub(super) const READ_ARRIVES: u8 = 0;
    /// The read's answer reaches the client, which sends its write.
    pub(super) const READ_ANSWERED: u8 = 1;
    /// The write reaches the row.
    pub(super) const WRITE_ARRIVES: u8 = 2;
    /// The write's answer (rejected) reaches the client, which pauses and reads again.
    pub(super) const REJECTED: u8 = 3;
    /// The write's answer (committed) reaches the client, which is done.
    pub(super) const COMMITTED: u8 = 4;
    /// The hop after each of the first four; after [`WRITE_ARRIVES`], add 1 if the write
    /// committed.
    pub(super) const NEXT: [u8; 4] = [READ_ANSWERED, WRITE_ARRIVES, REJECTED, READ_ARRIVES];
}

impl Contention {
    /// Checks `scenario`.
    ///
    /// # Errors
    ///
    /// A [`ScenarioError`] naming the field that is out of range.
    pub fn new(scenario: &ContentionScenario, limits: &Limits) -> Result<Self, ScenarioError> {
        fields::model(scenario.model.as_deref(), "contention")?;
        check_clients("clients.count", scenario.clients.count, limits)?;
        if scenario.runs == 0 || scenario.runs > MAX_RUNS {
            return Err(ScenarioError::field(
                "runs",
                format!("must be between 1 and {MAX_RUNS}, got {}", scenario.runs),
            ));
        }
        let n = &scenario.network;
        let mean_ms = fields::number_in("network.delay_mean_ms", n.delay_mean_ms, 0.0, 1e9)?;
        let sd_ms = fields::number_in("network.delay_sd_ms", n.delay_sd_ms, 0.0, 1e9)?;
        let r = &scenario.retry;
        if r.rules.is_empty() {
            return Err(ScenarioError::field(
                "retry.rules",
                "must name at least one rule",
            ));
        }
        let params = fields::rule_params(r.base_ms, r.cap_ms, r.pause_ms)?;
        let doubling_params = match r.convention {
            Convention::Herd => params,
            // min(cap, 2^k · base) = min(cap, 2^(k−1) · min(cap, 2 · base)) for every k ≥ 1.
            Convention::Brooker2015 => params.base(params.base.saturating_mul(2).min(params.cap)),
        };
        let model = Self {
            scenario: scenario.clone(),
            params,
            doubling_params,
            mean_ms,
            sd_ms,
            max_calls: MAX_CALLS.min(limits.max_run_attempts),
        };
        for &rule in &r.rules {
            model.rule(rule)?;
        }
        Ok(model)
    }

    /// `name` built with the scenario's parameters under its convention.
    fn rule(&self, name: RuleName) -> Result<Rule, ScenarioError> {
        let params = match name {
            RuleName::Exponential | RuleName::Full | RuleName::Equal => &self.doubling_params,
            _ => &self.params,
        };
        fields::rule_of(name, params)
    }

    /// The scenario as given.
    #[must_use]
    pub fn scenario(&self) -> &ContentionScenario {
        &self.scenario
    }

    /// The scenario's rules, in its order.
    #[must_use]
    pub fn rules(&self) -> Vec<RuleName> {
        self.scenario.retry.rules.clone()
    }

    /// Runs `rule` with `clients` clients and the generator seeded by `seed`, followed by
    /// `watch` (told the share of clients done, and its flag read, about every 65 536
    /// events). The same inputs give the same run, bit for bit, whatever watches.
    ///
    /// # Errors
    ///
    /// The rule cannot be built, `clients` is out of range, the run makes more than
    /// [`MAX_CALLS`] write calls, or the watch's flag stopped it
    /// ([`ScenarioError::is_cancelled`]).
    pub fn run(
        &self,
        rule: RuleName,
        seed: u64,
        clients: u64,
        mut watch: Watch<'_>,
    ) -> Result<ContentionRun, ScenarioError> {
        check_clients("clients.count", clients, &Limits::unlimited())?;
        let built = self.rule(rule)?;
        watch.check()?;
        let (calls, completion_ns) = self.simulate(&built, seed, clients as usize, &mut watch)?;
        watch.report(1.0);
        Ok(ContentionRun {
            rule,
            seed,
            clients,
            calls,
            completion_ms: completion_ns as f64 / 1e6,
        })
    }

    /// One hop's delay in nanoseconds (the ziggurat, see the module docs).
    #[inline]
    fn delay(&self, rng: &mut SplitMix64) -> u64 {
        let z = crate::ziggurat::standard_normal(rng);
        let ms = self.mean_ms + self.sd_ms * z;
        let ms = match self.scenario.retry.convention {
            Convention::Herd => ms.max(0.0),
            Convention::Brooker2015 => ms.abs(),
        };
        round_ns(ms * 1e6)
    }

    /// The event loop; returns (write calls, completion time in ns).
    ///
    /// A client has at most one event pending (each event schedules the client's next), so
    /// the queue holds one key per waiting client: the event's time in the high bits, then
    /// its order of scheduling, then the client, and the client's next hop beside it in
    /// `hops`. Ordering the keys orders the events by time, then by order of scheduling,
    /// exactly the tuples' order; and since no two keys are equal, any heap holding the same
    /// keys hands them out in the same sequence.
    ///
    /// The keys are 64 bits wide while the time and the order fit in the bits the clients
    /// leave ([`Narrow`]): about 9 % less CPU in Brooker's sweep than 128-bit keys. The first
    /// event whose key does not fit moves every pending key into a heap of 128-bit keys,
    /// which always fit, and the run goes on there: the same events in the same order.
    fn simulate(
        &self,
        rule: &Rule,
        seed: u64,
        clients: usize,
        watch: &mut Watch<'_>,
    ) -> Result<(u64, u64), ScenarioError> {
        let narrow = Narrow::for_clients(clients);
        let (calls, last, _) = self.simulate_narrowed(rule, seed, clients, narrow, watch)?;
        Ok((calls, last))
    }

    /// [`Self::simulate`] with 64-bit keys laid out by `narrow` at first (`None`: 128-bit
    /// keys from the start); also says which widths the run used.
    fn simulate_narrowed(
        &self,
        rule: &Rule,
        seed: u64,
        clients: usize,
        narrow: Option<Narrow>,
        watch: &mut Watch<'_>,
    ) -> Result<(u64, u64, Widths), ScenarioError> {
        debug_assert!(clients as u64 <= MAX_CLIENTS && MAX_CLIENTS < 1 << CLIENT_BITS);
        let mut rng = SplitMix64::new(seed);
        // The events not yet queued, as (time, order, client): at first each client's read,
        // client c's the c-th scheduled.
        let mut pending: Vec<(u64, u64, u32)> = (0..clients)
            .map(|c| (self.delay(&mut rng), c as u64, c as u32))
            .collect();
        let mut run = RunState {
            rng,
            hops: vec![hop::READ_ARRIVES; clients],
            read_version: vec![0; clients],
            states: vec![RuleState::default(); clients],
            version: 0,
            order: clients as u64,
            calls: 0,
            last: 0,
            events_seen: 0,
            done: 0,
        };
        let mut widths = Widths::Wide;
        if let Some(narrow) = narrow {
            let packed: Option<Vec<Reverse<u64>>> = pending
                .iter()
                .map(|&(at, order, c)| narrow.key(at, order, c).map(Reverse))
                .collect();
            if let Some(packed) = packed {
                let mut events = BinaryHeap::from(packed);
                let Some(next) = self.events(rule, &mut run, &mut events, narrow, watch)? else {
                    return Ok((run.calls, run.last, Widths::Narrow));
                };
                pending = events
                    .into_iter()
                    .map(|Reverse(key)| narrow.fields(key))
                    .collect();
                pending.push(next);
                widths = Widths::Both;
            }
        }
        let wide: Vec<Reverse<u128>> = pending
            .iter()
            .map(|&(at, order, c)| Reverse(key_of(at, order, c)))
            .collect();
        let mut events = BinaryHeap::from(wide);
        let rest = self.events(rule, &mut run, &mut events, Wide, watch)?;
        debug_assert!(rest.is_none(), "every event fits a 128-bit key");
        Ok((run.calls, run.last, widths))
    }

    /// Runs events from `events` until none is left (`None`) or until an event's successor
    /// does not fit a key of `layout`: that event is then handled and removed, and its
    /// successor, (time, order, client), returned for a wider queue.
    ///
    /// Each event but a client's last schedules the client's next: the new key replaces the
    /// earliest in place (one sift down, where a pop and a push take two passes).
    #[inline]
    fn events<K: Ord + Copy, L: Layout<K>>(
        &self,
        rule: &Rule,
        run: &mut RunState,
        events: &mut BinaryHeap<Reverse<K>>,
        layout: L,
        watch: &mut Watch<'_>,
    ) -> Result<Option<(u64, u64, u32)>, ScenarioError> {
        // The counters in locals for the loop (registers), written back when it ends.
        let RunState {
            rng,
            hops,
            read_version,
            states,
            ..
        } = run;
        let (mut version, mut order, mut calls, mut last) =
            (run.version, run.order, run.calls, run.last);
        let (mut events_seen, mut done) = (run.events_seen, run.done);
        let mut next = None;
        while let Some(mut earliest) = events.peek_mut() {
            events_seen += 1;
            if events_seen.is_multiple_of(LOOK_EVERY) {
                watch.check()?;
                watch.report(done as f64 / hops.len() as f64);
            }
            let Reverse(key) = *earliest;
            let (now, c) = layout.time_and_client(key);
            last = now;
            let ci = c as usize;
            let current = hops[ci];
            if current == hop::COMMITTED {
                PeekMut::pop(earliest);
                done += 1;
                continue;
            }
            // Every other hop draws a delay; only the write's arrival counts a call and
            // moves the version, only the read's arrival reads it, only a rejection pauses.
            let write = current == hop::WRITE_ARRIVES;
            calls += u64::from(write);
            if calls > self.max_calls {
                return Err(ScenarioError::field(
                    "clients.count",
                    format!("the run exceeds {} write calls", self.max_calls),
                ));
            }
            let read = if current == hop::READ_ARRIVES {
                version
            } else {
                read_version[ci]
            };
            read_version[ci] = read;
            let committed = write & (read == version);
            version += u64::from(committed);
            let mut at = now.saturating_add(self.delay(rng));
            if current == hop::REJECTED {
                at = at.saturating_add(rule.pause_nanos(&mut states[ci], rng));
            }
            let hop = hop::NEXT[usize::from(current & 3)] + u8::from(committed);
            hops[ci] = hop;
            let scheduled = order;
            order += 1;
            if let Some(key) = layout.key(at, scheduled, c) {
                *earliest = Reverse(key);
            } else {
                PeekMut::pop(earliest);
                next = Some((at, scheduled, c));
                break;
            }
        }
        (run.version, run.order, run.calls, run.last) = (version, order, calls, last);
        (run.events_seen, run.done) = (events_seen, done);
        Ok(next)
    }
}

/// The widths of key a run used.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Widths {
    /// 64 bits to the end.
    Narrow,
    /// 64 bits, then 128.
    Both,
    /// 128 bits from the start.
    Wide,
}

/// What a run carries from event to event, whichever width its keys have.
struct RunState {
    rng: SplitMix64,
    /// Each client's next hop.
    hops: Vec<u8>,
    /// The version each client read last.
    read_version: Vec<u64>,
    states: Vec<RuleState>,
    /// The row's version.
    version: u64,
    /// The order of scheduling of the next event.
    order: u64,
    calls: u64,
    /// The time of the last event handled.
    last: u64,
    events_seen: u64,
    /// Clients that learned that their write committed.
    done: usize,
}

/// How an event's (time, order, client) is packed into an ordered key of type `K`.
trait Layout<K>: Copy {
    /// The key, or `None` when a field does not fit.
    fn key(self, at: u64, order: u64, client: u32) -> Option<K>;
    /// The time and the client of `key`.
    fn time_and_client(self, key: K) -> (u64, u32);
}

/// 128-bit keys ([`key_of`]): every event fits.
#[derive(Clone, Copy)]
struct Wide;

impl Layout<u128> for Wide {
    #[inline]
    fn key(self, at: u64, order: u64, client: u32) -> Option<u128> {
        Some(key_of(at, order, client))
    }
    #[inline]
    fn time_and_client(self, key: u128) -> (u64, u32) {
        (
            (key >> 64) as u64,
            (key as u64 & ((1 << CLIENT_BITS) - 1)) as u32,
        )
    }
}

/// 64-bit keys: the time in the high `64 − order_bits − client_bits` bits, then the order of
/// scheduling in `order_bits`, then the client in `client_bits`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Narrow {
    order_bits: u32,
    client_bits: u32,
}

impl Narrow {
    /// Times below 2^38 ns (about 275 s), and in the bits the clients leave beside them the
    /// order; `None` when that leaves fewer than 10 bits (more than 2^16 clients), where a
    /// run would soon need wide keys anyway.
    fn for_clients(clients: usize) -> Option<Self> {
        let client_bits = (usize::BITS - clients.saturating_sub(1).leading_zeros()).max(1);
        let order_bits = (64 - client_bits).checked_sub(38)?;
        (order_bits >= 10).then_some(Self {
            order_bits,
            client_bits,
        })
    }

    /// (time, order, client) of `key`.
    #[inline]
    fn fields(self, key: u64) -> (u64, u64, u32) {
        (
            key >> (self.order_bits + self.client_bits),
            (key >> self.client_bits) & ((1 << self.order_bits) - 1),
            (key & ((1 << self.client_bits) - 1)) as u32,
        )
    }
}

impl Layout<u64> for Narrow {
    #[inline]
    fn key(self, at: u64, order: u64, client: u32) -> Option<u64> {
        let low = self.order_bits + self.client_bits;
        (at >> (64 - low) == 0 && order >> self.order_bits == 0)
            .then(|| (at << low) | (order << self.client_bits) | u64::from(client))
    }
    #[inline]
    fn time_and_client(self, key: u64) -> (u64, u32) {
        let (at, _, client) = self.fields(key);
        (at, client)
    }
}

/// Bits of a 128-bit event key that hold the client (`MAX_CLIENTS` < 2^20).
const CLIENT_BITS: u32 = 20;

/// The 128-bit key of an event at `at` ns, scheduled `order`-th, for `client`. At most 4
/// events per write call and [`MAX_CALLS`] calls: `order` stays far below 2^44.
#[inline]
fn key_of(at: u64, order: u64, client: u32) -> u128 {
    (u128::from(at) << 64) | u128::from((order << CLIENT_BITS) | u64::from(client))
}

/// `x.round() as u64` for `0 ≤ x < 2^63` (a delay in nanoseconds: at most 10^18), without
/// libm's `round` call: the cast through `i64` truncates, and `x − trunc(x)` is exact.
#[inline]
fn round_ns(x: f64) -> u64 {
    let whole = x as i64;
    (whole + i64::from(x - whole as f64 >= 0.5)) as u64
}

fn check_clients(field: &str, clients: u64, limits: &Limits) -> Result<(), ScenarioError> {
    let max = MAX_CLIENTS.min(limits.max_clients);
    if clients == 0 || clients > max {
        return Err(ScenarioError::field(
            field,
            format!("must be between 1 and {max}, got {clients}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_keys_leave_the_time_38_bits_and_the_order_what_the_clients_leave() {
        let layout = |clients| Narrow::for_clients(clients).map(|n| (n.order_bits, n.client_bits));
        assert_eq!(layout(1), Some((25, 1)));
        assert_eq!(layout(2), Some((25, 1)));
        assert_eq!(layout(3), Some((24, 2)));
        assert_eq!(layout(190), Some((18, 8)));
        assert_eq!(layout(256), Some((18, 8)));
        assert_eq!(layout(257), Some((17, 9)));
        assert_eq!(layout(1 << 16), Some((10, 16)));
        assert_eq!(layout((1 << 16) + 1), None);
        let n = Narrow::for_clients(190).expect("fits");
        let (at, order, c) = ((1 << 38) - 1, (1 << 18) - 1, 189);
        let key = n.key(at, order, c).expect("the largest fields fit");
        assert_eq!(n.fields(key), (at, order, c));
        assert_eq!(n.time_and_client(key), (at, c));
        assert_eq!(n.key(1 << 38, 0, 0), None, "a time of 2^38 ns does not fit");
        assert_eq!(n.key(0, 1 << 18, 0), None, "the 2^18-th event does not fit");
        assert!(n.key(5, 7, 3) < n.key(5, 8, 0) && n.key(5, 8, 0) < n.key(6, 0, 0));
    }

    /// A run is the same, call for call and nanosecond for nanosecond, whether its keys are
    /// 128 bits from the start, 64 to the end, or 64 until one does not fit and 128 after:
    /// layouts with few bits for the order or the time force the move at every point of a
    /// run, from its first event on.
    #[test]
    fn a_run_is_the_same_whatever_width_its_keys_have() {
        let model = Contention::new(&ContentionScenario::default(), &Limits::default())
            .expect("the default scenario");
        let mut seen = Vec::new();
        for rule in [RuleName::Immediate, RuleName::Full, RuleName::Decorrelated] {
            let built = model.rule(rule).expect("rule");
            for clients in [1, 2, 7, 50] {
                let client_bits = Narrow::for_clients(clients).expect("fits").client_bits;
                for seed in 1..=3 {
                    let run = |narrow| {
                        model
                            .simulate_narrowed(&built, seed, clients, narrow, &mut Watch::none())
                            .expect("runs")
                    };
                    let (calls, last, widths) = run(None);
                    assert_eq!(widths, Widths::Wide);
                    // Orders of 2^3 .. 2^12 events, times of 2^24 .. 2^36 ns (16.8 ms to
                    // 69 s): the move happens before, during or after the run.
                    let layouts = (3..=12)
                        .map(|order_bits| Narrow {
                            order_bits,
                            client_bits,
                        })
                        .chain((24..=36).map(|time_bits| Narrow {
                            order_bits: 64 - client_bits - time_bits,
                            client_bits,
                        }))
                        .chain(Narrow::for_clients(clients));
                    for narrow in layouts {
                        let (c, l, w) = run(Some(narrow));
                        assert_eq!(
                            (c, l),
                            (calls, last),
                            "{rule:?}, {clients} clients, seed {seed}, {narrow:?} ({w:?})"
                        );
                        seen.push(w);
                    }
                }
            }
        }
        for w in [Widths::Narrow, Widths::Both, Widths::Wide] {
            assert!(seen.contains(&w), "no run ended {w:?}");
        }
    }
}

/// `docs/contention.md`, included so that its examples are compiled and run as doctests.
#[doc = include_str!("../../../../docs/contention.md")]
#[cfg(doctest)]
pub struct ContentionGuide;
