//! Exact long-run figures for graphs with budgets, from the stationary distribution of the
//! budgets' token counts.
//!
//! Why: a budgeted edge's bucket carries state from one call to the next, so a caller's
//! successive retries of the same service meet *correlated* budget states (a retry follows a
//! failure, and a failure is likelier when the bucket below is empty). The simple formula,
//! `min(D, β)` retries per call, treats every call as meeting an independent, average bucket
//! and is off by up to about 0.7 % where a budgeted edge sits below a caller that retries.
//!
//! How: the world's state is the vector of every budgeted edge's tokens, counted in whole
//! units (`β = m / den` of a token per first attempt, so a deposit is `m` units and a retry
//! costs `den`). For each service and each state of the buckets *in its own subtree* (its
//! calls and everything below them; other buckets cannot change while it runs) we compute,
//! once and on demand, the sparse joint law of how one execution ends (answer, end state)
//! and the expected requests and failures it causes below it, composing calls and retry
//! loops exactly as the Monte Carlo runs them. One entry request is then a sparse Markov
//! chain on the states reachable from the empty buckets; the long-run figures are the
//! expected counts under its stationary distribution, solved by state reduction (Grassmann–Taksar–Heyman) within the band its moves span, or,
//! when that band is too wide, by Gauss–Seidel sweeps until the residual `‖πP − π‖₁` is
//! below [`RESIDUAL`].
//!
//! **Buckets that never bind.** An uncapped bucket whose edge, with the bucket removed,
//! asks for at most `β` retries per first attempt gains tokens for ever (or, at exactly `β`,
//! is empty a vanishing share of the time): in the long run it refuses nothing, so it is
//! computed as no budget. That is checked, not assumed: every such bucket's retry ratio is
//! read from the final chain, and a bucket over `β` is put back. The buckets that remain
//! drain when full, so their tokens stay near empty with a geometric tail.
//!
//! **Truncation.** Those buckets are still uncapped, so their tokens are truncated at a cap
//! (a deposit beyond it is lost). The chain counts the lost deposits; a cap is doubled while
//! its bucket loses any (more than 10⁻¹⁵ per entry request) and the figures moved by more
//! than [`TOLERANCE`] at the last doubling. A chain that loses no deposit at its caps is the
//! untruncated chain on its support, and the figures are exact to the solver's residual.
//! The reported truncation error is the largest move at the last doubling (0 when no deposit
//! was lost). A graph whose chain passes [`MAX_STATES`] states or [`MAX_WORK`] steps of work
//! is not computed here (the caller then estimates it by Monte Carlo).
use std::collections::HashMap as StdHashMap;
use std::hash::{BuildHasherDefault, DefaultHasher};

/// A hash map whose order is the same in every process: the chain's sums run in map order,
/// and with std's per-process random keys the last digits of a figure changed from one run
/// of `herd amplify` to the next. SipHash with fixed keys keeps every run bit-identical.
type HashMap<K, V> = StdHashMap<K, V, BuildHasherDefault<DefaultHasher>>;
use std::rc::Rc;

use super::checked::Graph;
use super::odds::{AnswerOdds, Options};

/// Figures are accepted when doubling the caps moves none by more than this.
pub(crate) const TOLERANCE: f64 = 1e-9;
/// The stationary law is accepted when `‖πP − π‖₁` is below this.
pub(crate) const RESIDUAL: f64 = 1e-12;
/// The most joint budget states of the entry's chain.
pub(crate) const MAX_STATES: usize = 200_000;
/// The most work (probability entries composed, plus solver steps) one computation may do,
/// over all its chains: a few seconds in a release build.
const MAX_WORK: u64 = 1_000_000_000;
/// The most counts held in memory by the per-service memo (8 bytes each).
const MAX_MEMO_COUNTS: usize = 20_000_000;
/// The most budgeted edges (each bucket's units take 16 bits of a 128-bit state).
const MAX_BUCKETS: usize = 8;
const BITS: usize = 16;
const FIELD: u128 = (1 << BITS) - 1;
/// The largest cap of a bucket, in units.
const MAX_CAP: u64 = FIELD as u64;
/// The largest denominator a budget's fraction may have (`budget_percent` with up to one
/// decimal after the point).
const MAX_DENOMINATOR: u64 = 1_000;
/// A lost deposit rate below this counts as none.
const NO_LOSS: f64 = 1e-15;

/// The stationary figures: per service, expected requests and how its answers end.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stationary {
    pub(crate) receives: Vec<f64>,
    pub(crate) answers: Vec<AnswerOdds>,
    /// The largest change of a figure at the last doubling of the caps (0 when the caps lost
    /// no deposit).
    pub(crate) truncation_error: f64,
    pub(crate) states: usize,
}

/// Why the exact computation was not done.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Skipped {
    /// A budget is not a fraction with a small denominator.
    Fraction(f64),
    /// More budgeted edges than the state can hold.
    TooManyBudgets(usize),
    /// The chain grew past [`MAX_STATES`], the work past [`MAX_WORK`], or a cap past its
    /// largest value, before the figures settled.
    TooManyStates { states: usize, last_change: f64 },
    /// The solver's residual did not fall below [`RESIDUAL`] within the work allowed.
    NotConverged { residual: f64 },
}

/// `β = percent / 100` as `(m, den)` with the smallest denominator that reads back.
pub(crate) fn fraction(percent: f64) -> Option<(u64, u64)> {
    let beta = percent / 100.0;
    (1..=MAX_DENOMINATOR).find_map(|d| {
        let m = (beta * d as f64).round();
        ((m / d as f64 - beta).abs() <= 1e-12 * beta.max(1.0) && m >= 1.0).then_some((m as u64, d))
    })
}

/// Tokens of every bucket, 16 bits each.
type State = u128;

fn units(x: State, b: usize) -> u64 {
    ((x >> (BITS * b)) & FIELD) as u64
}

fn with_units(x: State, b: usize, u: u64) -> State {
    (x & !(FIELD << (BITS * b))) | (State::from(u) << (BITS * b))
}

/// A budgeted edge: where it lives, and its deposit and price in units.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    service: usize,
    call: usize,
    deposit: u64,
    price: u64,
}

const OK: usize = 0;
const MARKED: usize = 1;
const UNMARKED: usize = 2;

/// The answer of an execution whose calls ended `a` and `b`.
fn combine(a: usize, b: usize) -> usize {
    if a == MARKED || b == MARKED {
        MARKED
    } else if a == UNMARKED || b == UNMARKED {
        UNMARKED
    } else {
        OK
    }
}

/// How one execution (or one call) from one start state ends, and what it costs.
#[derive(Debug)]
struct Transfer {
    /// End states with the probability of each answer (ok, marked, unmarked).
    ends: Vec<(State, [f64; 3])>,
    /// Expected counts: per service requests received, marked and unmarked failed answers
    /// (`3 · services`), then per bucket first attempts, retries and lost deposits.
    counts: Vec<f64>,
}

/// The computation ran out of room.
#[derive(Debug)]
struct Over;

fn add_scaled(to: &mut [f64], from: &[f64], scale: f64) {
    for (t, &f) in to.iter_mut().zip(from) {
        *t += scale * f;
    }
}

struct Space<'g> {
    graph: &'g Graph,
    options: Options,
    buckets: &'g [Bucket],
    /// Per bucket: whether it is modelled (false: it never binds, computed as no budget).
    kept: Vec<bool>,
    caps: Vec<u64>,
    /// Per service, per call: the bucket of that edge.
    edge_bucket: Vec<Vec<Option<usize>>>,
    /// Per service: the state bits of the kept buckets its execution can change.
    masks: Vec<State>,
    memo: Vec<HashMap<State, Rc<Transfer>>>,
    memo_counts: usize,
    width: usize,
    work: u64,
}

impl<'g> Space<'g> {
    fn new(
        graph: &'g Graph,
        options: Options,
        buckets: &'g [Bucket],
        kept: Vec<bool>,
        caps: Vec<u64>,
        work: u64,
    ) -> Self {
        let services = graph.services();
        let mut edge_bucket: Vec<Vec<Option<usize>>> =
            services.iter().map(|s| vec![None; s.calls.len()]).collect();
        for (b, bucket) in buckets.iter().enumerate() {
            edge_bucket[bucket.service][bucket.call] = Some(b);
        }
        let mut masks = vec![0; services.len()];
        for &s in graph.topological_order().iter().rev() {
            if services[s].fails {
                continue;
            }
            let mut m = 0;
            for (i, c) in services[s].calls.iter().enumerate() {
                m |= masks[c.to];
                if let Some(b) = edge_bucket[s][i].filter(|&b| kept[b]) {
                    m |= FIELD << (BITS * b);
                }
            }
            masks[s] = m;
        }
        Self {
            graph,
            options,
            buckets,
            kept,
            caps,
            edge_bucket,
            masks,
            memo: vec![HashMap::default(); services.len()],
            memo_counts: 0,
            width: 3 * services.len() + 3 * buckets.len(),
            work,
        }
    }

    fn spend(&mut self, work: usize) -> Result<(), Over> {
        self.work += work as u64;
        if self.work > MAX_WORK {
            Err(Over)
        } else {
            Ok(())
        }
    }

    /// One execution of service `s` from state `x` (only `s`'s own bits set).
    fn execute(&mut self, s: usize, x: State) -> Result<Rc<Transfer>, Over> {
        if let Some(t) = self.memo[s].get(&x) {
            return Ok(Rc::clone(t));
        }
        let services_n = self.graph.services().len();
        let service = &self.graph.services()[s];
        let mut counts = vec![0.0; self.width];
        counts[s] = 1.0;
        let ends = if service.fails {
            counts[2 * services_n + s] = 1.0;
            vec![(x, [0.0, 0.0, 1.0])]
        } else {
            let mut dist: Vec<(State, [f64; 3])> = vec![(x, [1.0, 0.0, 0.0])];
            for i in 0..service.calls.len() {
                let mut next: HashMap<State, [f64; 3]> = HashMap::default();
                for (y, odds) in dist {
                    let t = self.call(s, i, y)?;
                    add_scaled(&mut counts, &t.counts, odds.iter().sum());
                    self.spend(t.ends.len() + self.width)?;
                    for (z, e) in &t.ends {
                        let slot = next.entry(*z).or_insert([0.0; 3]);
                        for (a, &pa) in odds.iter().enumerate() {
                            for (b, &pb) in e.iter().enumerate() {
                                slot[combine(a, b)] += pa * pb;
                            }
                        }
                    }
                }
                dist = next.into_iter().collect();
            }
            let (marked, unmarked) = dist.iter().fold((0.0, 0.0), |(m, u), (_, e)| {
                (m + e[MARKED], u + e[UNMARKED])
            });
            counts[services_n + s] += marked;
            counts[2 * services_n + s] += unmarked;
            dist
        };
        self.memo_counts += self.width + 4 * ends.len();
        if self.memo_counts > MAX_MEMO_COUNTS {
            return Err(Over);
        }
        let t = Rc::new(Transfer { ends, counts });
        self.memo[s].insert(x, Rc::clone(&t));
        Ok(t)
    }

    /// One call on edge `(s, i)` from state `y` (`s`'s bits), retries included, as the
    /// Monte Carlo runs it.
    fn call(&mut self, s: usize, i: usize, y: State) -> Result<Transfer, Over> {
        let services_n = self.graph.services().len();
        let call = &self.graph.services()[s].calls[i];
        let (callee, k, p) = (call.to, call.attempts, call.failure_probability);
        let edge = self.edge_bucket[s][i];
        let kept = edge.filter(|&b| self.kept[b]);
        let column = |b: usize, what: usize| 3 * services_n + 3 * b + what;
        let mut counts = vec![0.0; self.width];
        if let Some(b) = edge {
            counts[column(b, 0)] = 1.0;
        }
        let mut start = y;
        if let Some(b) = kept {
            let after = units(y, b) + self.buckets[b].deposit;
            if after > self.caps[b] {
                counts[column(b, 2)] = 1.0;
            }
            start = with_units(y, b, after.min(self.caps[b]));
        }
        let mask = self.masks[callee];
        let mut current: Vec<(State, f64)> = vec![(start, 1.0)];
        let mut ends: HashMap<State, [f64; 3]> = HashMap::default();
        for attempt in 1..=k {
            let mut retry: HashMap<State, f64> = HashMap::default();
            for &(z, q) in &current {
                if attempt > 1
                    && let Some(b) = edge
                {
                    counts[column(b, 1)] += q;
                }
                let t = self.execute(callee, z & mask)?;
                add_scaled(&mut counts, &t.counts, q);
                self.spend(t.ends.len() + self.width)?;
                for (z2, e) in &t.ends {
                    let lifted = (z & !mask) | z2;
                    let any: f64 = e.iter().sum();
                    if e[OK] > 0.0 && p < 1.0 {
                        ends.entry(lifted).or_insert([0.0; 3])[OK] += q * (1.0 - p) * e[OK];
                    }
                    let mut again = q * ((1.0 - p) * e[UNMARKED] + p * any);
                    if e[MARKED] > 0.0 && p < 1.0 {
                        let m = q * (1.0 - p) * e[MARKED];
                        if self.options.layer_aware {
                            ends.entry(lifted).or_insert([0.0; 3])[MARKED] += m;
                        } else {
                            again += m;
                        }
                    }
                    if again > 0.0 {
                        *retry.entry(lifted).or_insert(0.0) += again;
                    }
                }
            }
            // A layer that was allowed to retry marks the failure it gives up on.
            let gave_up = if self.options.layer_aware && k >= 2 {
                MARKED
            } else {
                UNMARKED
            };
            current = Vec::with_capacity(retry.len());
            for (z, q) in retry {
                let allowed = match kept {
                    _ if attempt == k => None,
                    None => Some(z),
                    Some(b) => {
                        let price = self.buckets[b].price;
                        let u = units(z, b);
                        (u >= price).then(|| with_units(z, b, u - price))
                    }
                };
                match allowed {
                    Some(next) => current.push((next, q)),
                    None => ends.entry(z).or_insert([0.0; 3])[gave_up] += q,
                }
            }
            if current.is_empty() {
                break;
            }
        }
        Ok(Transfer {
            ends: ends.into_iter().collect(),
            counts,
        })
    }

    /// Expected counts per entry request under the stationary law, the law itself (by state)
    /// and the state count. `warm` is a previous law to start the solver from.
    fn solve(&mut self, warm: &HashMap<State, f64>) -> Result<Solved, Skipped> {
        let too_many = |states| Skipped::TooManyStates {
            states,
            last_change: f64::INFINITY,
        };
        let entry = self.graph.entry();
        let mut index: HashMap<State, usize> = HashMap::default();
        let mut states: Vec<State> = vec![0];
        index.insert(0, 0);
        let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
        let mut counts: Vec<Rc<Transfer>> = Vec::new();
        let mut at = 0;
        while at < states.len() {
            let t = self
                .execute(entry, states[at])
                .map_err(|Over| too_many(states.len()))?;
            let mut row = Vec::with_capacity(t.ends.len());
            for (z, e) in &t.ends {
                let next = states.len();
                let j = *index.entry(*z).or_insert(next);
                if j == next {
                    states.push(*z);
                    if states.len() > MAX_STATES {
                        return Err(too_many(states.len()));
                    }
                }
                row.push((j, e.iter().sum::<f64>()));
            }
            // Rows sum to 1 but for rounding; the solver needs them to sum to 1.
            let total: f64 = row.iter().map(|&(_, p)| p).sum();
            row.iter_mut().for_each(|(_, p)| *p /= total);
            rows.push(row);
            counts.push(t);
            at += 1;
        }
        // Order the states by their tokens, the bucket with the largest cap most significant,
        // so that the chain's moves stay near the diagonal.
        let mut fields: Vec<usize> = (0..self.caps.len()).filter(|&b| self.kept[b]).collect();
        fields.sort_by_key(|&b| self.caps[b]);
        let key = |x: State| {
            fields
                .iter()
                .fold(0u128, |k, &b| (k << BITS) | State::from(units(x, b) as u16))
        };
        let mut by_tokens: Vec<usize> = (0..states.len()).collect();
        by_tokens.sort_by_key(|&i| key(states[i]));
        let mut rank = vec![0; states.len()];
        for (r, &i) in by_tokens.iter().enumerate() {
            rank[i] = r;
        }
        let sorted_rows: Vec<Vec<(usize, f64)>> = by_tokens
            .iter()
            .map(|&i| rows[i].iter().map(|&(j, p)| (rank[j], p)).collect())
            .collect();
        let start: Vec<f64> = by_tokens
            .iter()
            .map(|&i| warm.get(&states[i]).copied().unwrap_or(0.0))
            .collect();
        let pi = match self.reduce(&sorted_rows) {
            Some(pi) => pi,
            None => self.stationary(&sorted_rows, start)?,
        };
        let mut figures = vec![0.0; self.width];
        let mut law =
            HashMap::with_capacity_and_hasher(states.len(), BuildHasherDefault::default());
        for (&i, &w) in by_tokens.iter().zip(&pi) {
            add_scaled(&mut figures, &counts[i].counts, w);
            law.insert(states[i], w);
        }
        Ok(Solved {
            figures,
            law,
            states: states.len(),
        })
    }

    /// Solves `π P = π`, `Σ π = 1` exactly by state reduction (the Grassmann–Taksar–Heyman
    /// algorithm, which subtracts nothing and so loses no precision) within the band the
    /// chain's moves span, when that costs less than the work left; `None` when it would
    /// cost more or the states do not all communicate.
    fn reduce(&mut self, rows: &[Vec<(usize, f64)>]) -> Option<Vec<f64>> {
        let n = rows.len();
        let (mut below, mut above) = (0, 0);
        for (i, row) in rows.iter().enumerate() {
            for &(j, _) in row {
                below = below.max(i.saturating_sub(j));
                above = above.max(j.saturating_sub(i));
            }
        }
        let width = below + above + 1;
        let cost = n.checked_mul(below.max(1))?.checked_mul(above.max(1))?;
        // Too costly: leave the work to the iterative solver, without spending any.
        let work = cost.checked_add(n.checked_mul(width)?)?;
        if n * width > MAX_MEMO_COUNTS || self.work + work as u64 > MAX_WORK {
            return None;
        }
        self.spend(work).ok()?;
        let at = |i: usize, j: usize| i * width + j + below - i;
        let mut a = vec![0.0; n * width];
        for (i, row) in rows.iter().enumerate() {
            for &(j, p) in row {
                a[at(i, j)] += p;
            }
        }
        let mut out = vec![0.0; n];
        for k in (1..n).rev() {
            let low = k.saturating_sub(below);
            let rate: f64 = (low..k).map(|j| a[at(k, j)]).sum();
            if rate <= 0.0 {
                return None;
            }
            out[k] = rate;
            for i in k.saturating_sub(above)..k {
                let f = a[at(i, k)] / rate;
                if f == 0.0 {
                    continue;
                }
                for j in low..k {
                    a[at(i, j)] += f * a[at(k, j)];
                }
            }
        }
        let mut pi = vec![0.0; n];
        pi[0] = 1.0;
        for k in 1..n {
            pi[k] = (k.saturating_sub(above)..k)
                .map(|i| pi[i] * a[at(i, k)])
                .sum::<f64>()
                / out[k];
        }
        let total: f64 = pi.iter().sum();
        pi.iter_mut().for_each(|x| *x /= total);
        Some(pi)
    }

    /// Solves `π P = π`, `Σ π = 1` for the chain whose row `i` is `rows[i]` by symmetric
    /// Gauss–Seidel sweeps (forward, then backward) from `start` (uniform where it is all
    /// zero), until `‖πP − π‖₁ ≤ RESIDUAL`.
    fn stationary(
        &mut self,
        rows: &[Vec<(usize, f64)>],
        start: Vec<f64>,
    ) -> Result<Vec<f64>, Skipped> {
        let n = rows.len();
        let mut into: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
        let mut stay = vec![0.0; n];
        for (i, row) in rows.iter().enumerate() {
            for &(j, p) in row {
                if i == j {
                    stay[j] += p;
                } else {
                    into[j].push((i, p));
                }
            }
        }
        let edges: usize = rows.iter().map(Vec::len).sum();
        let mut pi = start;
        if pi.iter().sum::<f64>() <= 0.0 {
            pi = vec![1.0 / n as f64; n];
        }
        let update = |pi: &mut [f64], j: usize| {
            // A state that (but for rounding) never leaves keeps its share.
            if stay[j] < 1.0 - 1e-12 {
                let inflow: f64 = into[j].iter().map(|&(i, p)| pi[i] * p).sum();
                pi[j] = inflow / (1.0 - stay[j]);
            }
        };
        let mut residual = f64::INFINITY;
        while self.spend(3 * edges + 3 * n).is_ok() {
            for j in 0..n {
                update(&mut pi, j);
            }
            for j in (0..n).rev() {
                update(&mut pi, j);
            }
            let total: f64 = pi.iter().sum();
            if !(total > 0.0 && total.is_finite()) {
                break;
            }
            pi.iter_mut().for_each(|x| *x /= total);
            residual = (0..n)
                .map(|j| {
                    let inflow: f64 = into[j].iter().map(|&(i, p)| pi[i] * p).sum();
                    (inflow + stay[j] * pi[j] - pi[j]).abs()
                })
                .sum();
            if residual <= RESIDUAL {
                return Ok(pi);
            }
        }
        Err(Skipped::NotConverged { residual })
    }
}

/// A solved chain: the expected counts, the stationary law by state, and its size.
struct Solved {
    figures: Vec<f64>,
    law: HashMap<State, f64>,
    states: usize,
}

/// The stationary figures of a graph with budgets, or why they were not computed.
pub(crate) fn compute(graph: &Graph, options: Options) -> Result<Stationary, Skipped> {
    let mut buckets = Vec::new();
    for (s, service) in graph.services().iter().enumerate() {
        for (i, c) in service.calls.iter().enumerate() {
            if c.budget_percent > 0.0 {
                let (m, den) =
                    fraction(c.budget_percent).ok_or(Skipped::Fraction(c.budget_percent))?;
                buckets.push(Bucket {
                    service: s,
                    call: i,
                    deposit: m,
                    price: den,
                });
            }
        }
    }
    if buckets.len() > MAX_BUCKETS {
        return Err(Skipped::TooManyBudgets(buckets.len()));
    }
    let services_n = graph.services().len();
    // Deepest buckets first: whether one binds depends on the buckets below it.
    let depth: Vec<usize> = {
        let mut at = vec![0; services_n];
        for (k, &s) in graph.topological_order().iter().enumerate() {
            at[s] = k;
        }
        at
    };
    let mut order: Vec<usize> = (0..buckets.len()).collect();
    order.sort_by_key(|&b| std::cmp::Reverse(depth[buckets[b].service]));
    // Start with every bucket unlimited; keep a bucket whose edge then asks for more than β.
    let mut kept = vec![false; buckets.len()];
    let mut work = 0;
    let mut settled: HashMap<Vec<bool>, (Vec<f64>, usize, f64)> = HashMap::default();
    let mut figures_for = |kept: &[bool]| -> Result<(Vec<f64>, usize, f64), Skipped> {
        if let Some(done) = settled.get(kept) {
            return Ok(done.clone());
        }
        let done = settle(graph, options, &buckets, kept, &mut work)?;
        settled.insert(kept.to_vec(), done.clone());
        Ok(done)
    };
    for &b in &order {
        let (figures, _, _) = figures_for(&kept)?;
        kept[b] = binds(&figures, services_n, &buckets, b);
    }
    loop {
        let (figures, states, change) = figures_for(&kept)?;
        let put_back: Vec<usize> = (0..buckets.len())
            .filter(|&b| !kept[b] && binds(&figures, services_n, &buckets, b))
            .collect();
        if put_back.is_empty() {
            return Ok(finish(&figures, services_n, change, states));
        }
        for b in put_back {
            kept[b] = true;
        }
    }
}

/// Whether bucket `b`, computed as unlimited in `figures`, is asked for more than its ratio.
fn binds(figures: &[f64], services_n: usize, buckets: &[Bucket], b: usize) -> bool {
    let first = figures[3 * services_n + 3 * b];
    let retries = figures[3 * services_n + 3 * b + 1];
    let Bucket { deposit, price, .. } = buckets[b];
    // retries / first > deposit / price, compared without division.
    retries * price as f64 > first * deposit as f64 * (1.0 + 1e-12)
}

/// The figures with the `kept` buckets modelled, their caps doubled until the truncation no
/// longer matters: `(figures, states, truncation error)`.
fn settle(
    graph: &Graph,
    options: Options,
    buckets: &[Bucket],
    kept: &[bool],
    work: &mut u64,
) -> Result<(Vec<f64>, usize, f64), Skipped> {
    let services_n = graph.services().len();
    // Start each cap at one token plus one deposit.
    let mut caps: Vec<u64> = buckets.iter().map(|b| b.price + b.deposit).collect();
    let mut last: Option<Vec<f64>> = None;
    let mut last_change = f64::INFINITY;
    let mut warm = HashMap::default();
    loop {
        let mut space = Space::new(graph, options, buckets, kept.to_vec(), caps.clone(), *work);
        let solved = space.solve(&warm);
        *work = space.work;
        let Solved {
            figures,
            law,
            states,
        } = solved.map_err(|e| match e {
            Skipped::TooManyStates { states, .. } => Skipped::TooManyStates {
                states,
                last_change,
            },
            other => other,
        })?;
        let losing: Vec<usize> = (0..buckets.len())
            .filter(|&b| kept[b] && figures[3 * services_n + 3 * b + 2] > NO_LOSS)
            .collect();
        if losing.is_empty() {
            // No deposit was lost at a cap: the truncated chain is the chain itself.
            return Ok((figures, states, 0.0));
        }
        if let Some(prev) = &last {
            last_change = prev[..3 * services_n]
                .iter()
                .zip(&figures)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            if last_change <= TOLERANCE {
                return Ok((figures, states, last_change));
            }
        }
        last = Some(figures);
        warm = law;
        for b in losing {
            caps[b] *= 2;
            if caps[b] > MAX_CAP {
                return Err(Skipped::TooManyStates {
                    states,
                    last_change,
                });
            }
        }
    }
}

fn finish(figures: &[f64], services_n: usize, change: f64, states: usize) -> Stationary {
    let receives = figures[..services_n].to_vec();
    let answers = (0..services_n)
        .map(|s| {
            let r = receives[s];
            if r <= 0.0 {
                return AnswerOdds::OK;
            }
            let marked = (figures[services_n + s] / r).clamp(0.0, 1.0);
            let unmarked = (figures[2 * services_n + s] / r).clamp(0.0, 1.0);
            AnswerOdds {
                ok: (1.0 - marked - unmarked).max(0.0),
                marked,
                unmarked,
            }
        })
        .collect();
    Stationary {
        receives,
        answers,
        truncation_error: change,
        states,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_read_as_small_fractions() {
        assert_eq!(fraction(10.0), Some((1, 10)));
        assert_eq!(fraction(20.0), Some((1, 5)));
        assert_eq!(fraction(150.0), Some((3, 2)));
        assert_eq!(fraction(12.5), Some((1, 8)));
        assert_eq!(fraction(0.012_345_67), None);
    }

    #[test]
    fn states_pack_sixteen_bits_per_bucket() {
        let x = with_units(with_units(0, 0, 7), 3, 65_535);
        assert_eq!((units(x, 0), units(x, 1), units(x, 3)), (7, 0, 65_535));
        assert_eq!(units(with_units(x, 3, 2), 3), 2);
    }
}
