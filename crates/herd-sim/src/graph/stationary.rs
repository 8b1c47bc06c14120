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
//! costs `den`). For each service we build, for every start state `x`, the joint law of how
//! one execution ends (answer, end state) and the expected requests and failures it causes
//! below it, composing calls and retry loops exactly as the Monte Carlo runs them. One entry
//! request is then a Markov chain on the states; the long-run figures are the expected counts
//! under its stationary distribution, found by solving `π P = π` on the states reachable
//! from the empty buckets.
//!
//! The only approximation: a bucket is uncapped, so its tokens are truncated at a cap (a
//! deposit beyond it is lost). The cap is doubled until the figures move by less than
//! [`TOLERANCE`]; the last move is reported as the truncation error. A graph whose states
//! would exceed [`MAX_STATES`] keeps the simple formula, labelled approximate.
use super::exact::{AnswerOdds, Options};
use super::model::Graph;

/// Figures are accepted when doubling the caps moves none by more than this.
pub(crate) const TOLERANCE: f64 = 1e-9;
/// The most joint budget states the exact computation handles.
pub(crate) const MAX_STATES: usize = 600;
/// The most arithmetic the exact computation may do (about a second in a release build).
const MAX_WORK: f64 = 3e9;
/// The largest denominator a budget's fraction may have (`budget_percent` with up to one
/// decimal after the point).
const MAX_DENOMINATOR: u64 = 1_000;

/// The stationary figures: per service, expected requests and how its answers end.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stationary {
    pub(crate) receives: Vec<f64>,
    pub(crate) answers: Vec<AnswerOdds>,
    /// The largest change of a figure at the last doubling of the caps.
    pub(crate) truncation_error: f64,
    pub(crate) states: usize,
}

/// Why the exact computation was not done.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Skipped {
    /// A budget is not a fraction with a small denominator.
    Fraction(f64),
    /// The joint state space grew past [`MAX_STATES`] (or the work past [`MAX_WORK`])
    /// before the figures settled.
    TooManyStates { states: usize, last_change: f64 },
}

/// A budgeted edge: where it lives, and its deposit and price in units.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    service: usize,
    call: usize,
    deposit: usize,
    price: usize,
}

/// `β = percent / 100` as `(m, den)` with the smallest denominator that reads back.
pub(crate) fn fraction(percent: f64) -> Option<(u64, u64)> {
    let beta = percent / 100.0;
    (1..=MAX_DENOMINATOR).find_map(|d| {
        let m = (beta * d as f64).round();
        ((m / d as f64 - beta).abs() <= 1e-12 * beta.max(1.0) && m >= 1.0).then_some((m as u64, d))
    })
}

/// Dense square matrices over the states, row-major.
#[derive(Clone, Debug)]
struct Mat {
    n: usize,
    v: Vec<f64>,
}

impl Mat {
    fn zero(n: usize) -> Self {
        Self {
            n,
            v: vec![0.0; n * n],
        }
    }
    fn identity(n: usize) -> Self {
        let mut m = Self::zero(n);
        for i in 0..n {
            m.v[i * n + i] = 1.0;
        }
        m
    }
    fn mul(&self, o: &Mat) -> Mat {
        let n = self.n;
        let mut r = Mat::zero(n);
        for i in 0..n {
            for k in 0..n {
                let a = self.v[i * n + k];
                if a == 0.0 {
                    continue;
                }
                let (row, src) = (&mut r.v[i * n..(i + 1) * n], &o.v[k * n..(k + 1) * n]);
                for (x, &b) in row.iter_mut().zip(src) {
                    *x += a * b;
                }
            }
        }
        r
    }
    fn add(&mut self, o: &Mat, scale: f64) {
        for (x, &y) in self.v.iter_mut().zip(&o.v) {
            *x += scale * y;
        }
    }
    /// `self · c` for an `n × w` matrix `c`.
    fn mul_counts(&self, c: &[f64], w: usize) -> Vec<f64> {
        let n = self.n;
        let mut r = vec![0.0; n * w];
        for i in 0..n {
            for k in 0..n {
                let a = self.v[i * n + k];
                if a == 0.0 {
                    continue;
                }
                for j in 0..w {
                    r[i * w + j] += a * c[k * w + j];
                }
            }
        }
        r
    }
}

/// How one execution (or one call) from each start state ends, and what it costs.
#[derive(Clone, Debug)]
struct Transfer {
    /// Indexed by answer: ok, marked, unmarked.
    ends: [Mat; 3],
    /// Per start state, `3 · services` expected counts: requests received, marked and
    /// unmarked failed answers, per service.
    counts: Vec<f64>,
}

const OK: usize = 0;
const MARKED: usize = 1;
const UNMARKED: usize = 2;

struct Space<'g> {
    graph: &'g Graph,
    options: Options,
    buckets: Vec<Bucket>,
    /// Units per bucket are `0..=caps[b]`.
    caps: Vec<usize>,
    n: usize,
    width: usize,
}

impl Space<'_> {
    fn units(&self, state: usize, b: usize) -> usize {
        let mut s = state;
        for (i, cap) in self.caps.iter().enumerate() {
            if i == b {
                return s % (cap + 1);
            }
            s /= cap + 1;
        }
        unreachable!("bucket index in range")
    }
    fn stride(&self, b: usize) -> usize {
        self.caps[..b].iter().map(|c| c + 1).product()
    }
    fn bucket_of(&self, service: usize, call: usize) -> Option<usize> {
        self.buckets
            .iter()
            .position(|b| b.service == service && b.call == call)
    }

    fn execute(&self, s: usize, done: &[Option<Transfer>]) -> Transfer {
        let (n, w) = (self.n, self.width);
        let services = self.graph.services();
        let services_n = services.len();
        let mut counts = vec![0.0; n * w];
        for x in 0..n {
            counts[x * w + s] = 1.0;
        }
        if services[s].fails {
            for x in 0..n {
                counts[x * w + 2 * services_n + s] = 1.0;
            }
            return Transfer {
                ends: [Mat::zero(n), Mat::zero(n), Mat::identity(n)],
                counts,
            };
        }
        let mut acc = [Mat::identity(n), Mat::zero(n), Mat::zero(n)];
        for (i, call) in services[s].calls.iter().enumerate() {
            let callee = done[call.to].as_ref().expect("callees first");
            let t = self.call(s, i, callee);
            let reach = {
                let mut all = acc[OK].clone();
                all.add(&acc[MARKED], 1.0);
                all.add(&acc[UNMARKED], 1.0);
                all
            };
            for (c, add) in counts.iter_mut().zip(reach.mul_counts(&t.counts, w)) {
                *c += add;
            }
            let mut next = [Mat::zero(n), Mat::zero(n), Mat::zero(n)];
            for (a, from) in acc.iter().enumerate() {
                for (b, end) in t.ends.iter().enumerate() {
                    let to = if a == MARKED || b == MARKED {
                        MARKED
                    } else if a == UNMARKED || b == UNMARKED {
                        UNMARKED
                    } else {
                        OK
                    };
                    next[to].add(&from.mul(end), 1.0);
                }
            }
            acc = next;
        }
        for x in 0..n {
            let row = |m: &Mat| m.v[x * n..(x + 1) * n].iter().sum::<f64>();
            counts[x * w + services_n + s] += row(&acc[MARKED]);
            counts[x * w + 2 * services_n + s] += row(&acc[UNMARKED]);
        }
        Transfer { ends: acc, counts }
    }

    /// One call on edge `(s, i)`, retries included, as the Monte Carlo runs it.
    fn call(&self, s: usize, i: usize, callee: &Transfer) -> Transfer {
        let (n, w) = (self.n, self.width);
        let call = &self.graph.services()[s].calls[i];
        let bucket = self.bucket_of(s, i);
        // Deposit, then withdraw per allowed retry; `allow` keeps the states that hold a token.
        let (mut before, allow, deny) = match bucket {
            None => (Mat::identity(n), Mat::identity(n), Mat::zero(n)),
            Some(b) => {
                let (cap, stride) = (self.caps[b], self.stride(b));
                let Bucket { deposit, price, .. } = self.buckets[b];
                let (mut dep, mut allow, mut deny) = (Mat::zero(n), Mat::zero(n), Mat::zero(n));
                for x in 0..n {
                    let u = self.units(x, b);
                    let after = (u + deposit).min(cap);
                    dep.v[x * n + x - u * stride + after * stride] = 1.0;
                    if u >= price {
                        allow.v[x * n + x - price * stride] = 1.0;
                    } else {
                        deny.v[x * n + x] = 1.0;
                    }
                }
                (dep, allow, deny)
            }
        };
        let p = call.failure_probability;
        let mut callee_any = callee.ends[OK].clone();
        callee_any.add(&callee.ends[MARKED], 1.0);
        callee_any.add(&callee.ends[UNMARKED], 1.0);
        let mut ok = Mat::zero(n);
        let mut stopped_marked = Mat::zero(n);
        let mut gave_up = Mat::zero(n);
        let mut counts = vec![0.0; n * w];
        for attempt in 1..=call.attempts {
            for (c, add) in counts.iter_mut().zip(before.mul_counts(&callee.counts, w)) {
                *c += add;
            }
            ok.add(&before.mul(&callee.ends[OK]), 1.0 - p);
            let marked = before.mul(&callee.ends[MARKED]);
            let mut retryable = before.mul(&callee.ends[UNMARKED]);
            for v in &mut retryable.v {
                *v *= 1.0 - p;
            }
            retryable.add(&before.mul(&callee_any), p);
            if self.options.layer_aware {
                stopped_marked.add(&marked, 1.0 - p);
            } else {
                retryable.add(&marked, 1.0 - p);
            }
            if attempt == call.attempts {
                gave_up.add(&retryable, 1.0);
                break;
            }
            gave_up.add(&retryable.mul(&deny), 1.0);
            before = retryable.mul(&allow);
        }
        let marks = self.options.layer_aware && call.attempts >= 2;
        let (mut marked, unmarked) = if marks {
            (gave_up, Mat::zero(n))
        } else {
            (Mat::zero(n), gave_up)
        };
        marked.add(&stopped_marked, 1.0);
        Transfer {
            ends: [ok, marked, unmarked],
            counts,
        }
    }

    /// Expected counts per entry request under the stationary law, and the state count.
    fn solve(&self) -> (Vec<f64>, usize) {
        let services = self.graph.services();
        let mut done: Vec<Option<Transfer>> = vec![None; services.len()];
        for &s in self.graph.topological_order().iter().rev() {
            done[s] = Some(self.execute(s, &done));
        }
        let entry = done[self.graph.entry()].take().expect("entry computed");
        let n = self.n;
        let mut step = entry.ends[OK].clone();
        step.add(&entry.ends[MARKED], 1.0);
        step.add(&entry.ends[UNMARKED], 1.0);
        // States reachable from the empty buckets (state 0).
        let mut seen = vec![false; n];
        let mut order = vec![0];
        seen[0] = true;
        let mut at = 0;
        while at < order.len() {
            let x = order[at];
            at += 1;
            for (y, seen_y) in seen.iter_mut().enumerate() {
                if !*seen_y && step.v[x * n + y] > 0.0 {
                    *seen_y = true;
                    order.push(y);
                }
            }
        }
        let pi = stationary(&step, &order);
        let w = self.width;
        let mut figures = vec![0.0; w];
        for (k, &x) in order.iter().enumerate() {
            for (f, &c) in figures.iter_mut().zip(&entry.counts[x * w..(x + 1) * w]) {
                *f += pi[k] * c;
            }
        }
        (figures, order.len())
    }
}

/// Solves `π P = π`, `Σ π = 1` on the states `order` (closed under `P`) by Gaussian
/// elimination with partial pivoting; the last balance equation is replaced by the sum.
fn stationary(p: &Mat, order: &[usize]) -> Vec<f64> {
    let k = order.len();
    let n = p.n;
    // Row i of the system: Σ_j π_j (P[j][i] − δ_ij) = 0.
    let mut a = vec![0.0; k * (k + 1)];
    for (i, &si) in order.iter().enumerate() {
        for (j, &sj) in order.iter().enumerate() {
            a[i * (k + 1) + j] = p.v[sj * n + si] - if i == j { 1.0 } else { 0.0 };
        }
    }
    for j in 0..=k {
        a[(k - 1) * (k + 1) + j] = 1.0;
    }
    for col in 0..k {
        let pivot = (col..k)
            .max_by(|&x, &y| {
                a[x * (k + 1) + col]
                    .abs()
                    .total_cmp(&a[y * (k + 1) + col].abs())
            })
            .unwrap_or(col);
        for j in 0..=k {
            a.swap(col * (k + 1) + j, pivot * (k + 1) + j);
        }
        let d = a[col * (k + 1) + col];
        if d == 0.0 {
            continue;
        }
        for r in 0..k {
            if r != col {
                let f = a[r * (k + 1) + col] / d;
                if f != 0.0 {
                    for j in col..=k {
                        a[r * (k + 1) + j] -= f * a[col * (k + 1) + j];
                    }
                }
            }
        }
    }
    (0..k)
        .map(|i| {
            let d = a[i * (k + 1) + i];
            if d == 0.0 {
                0.0
            } else {
                a[i * (k + 1) + k] / d
            }
        })
        .collect()
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
                    deposit: m as usize,
                    price: den as usize,
                });
            }
        }
    }
    let services_n = graph.services().len();
    let width = 3 * services_n;
    // Start each cap at one token plus one deposit, then double.
    let mut caps: Vec<usize> = buckets.iter().map(|b| b.price + b.deposit).collect();
    let mut last: Option<Vec<f64>> = None;
    let mut last_change = f64::INFINITY;
    // About 5 matrix products per attempt on every edge, each n³ at worst.
    let attempts: f64 = graph.edges().map(|(_, c)| f64::from(c.attempts)).sum();
    loop {
        let n: usize = caps.iter().map(|c| c + 1).product();
        if n > MAX_STATES || 5.0 * attempts * (n as f64).powi(3) > MAX_WORK {
            return Err(Skipped::TooManyStates {
                states: n,
                last_change,
            });
        }
        let space = Space {
            graph,
            options,
            buckets: buckets.clone(),
            caps: caps.clone(),
            n,
            width,
        };
        let (figures, states) = space.solve();
        if let Some(prev) = &last {
            last_change = prev
                .iter()
                .zip(&figures)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            if last_change <= TOLERANCE {
                return Ok(finish(&figures, services_n, last_change, states));
            }
        }
        last = Some(figures);
        for c in &mut caps {
            *c *= 2;
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
}
