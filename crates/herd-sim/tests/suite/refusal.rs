//! Refusal cost in exact arithmetic, checked by brute force against a rational count that
//! shares nothing with the engine's formula.
//!
//! Regression: the engines computed `floor((B − r·A) / (1 − r))` in `f64`, which is one short
//! whenever the quotient is a whole number that floating point lands just below (`B = 50`,
//! `r = 0.1`, `A = 77` served 46; 47 is exact).
use herd::RuleName;
use herd_sim::refusal::{RefusalCost, WindowBudget};
use herd_sim::{Engine, Limits, Scenario, Simulation};

/// An exact rational `num / den`, `den > 0`.
#[derive(Clone, Copy, Debug)]
struct Q {
    num: i128,
    den: i128,
}

impl Q {
    fn int(n: i128) -> Self {
        Q { num: n, den: 1 }
    }
    fn add(self, o: Q) -> Q {
        let (num, den) = (self.num * o.den + o.num * self.den, self.den * o.den);
        let g = gcd(num.abs(), den).max(1);
        Q {
            num: num / g,
            den: den / g,
        }
    }
    fn sub(self, o: Q) -> Q {
        self.add(Q {
            num: -o.num,
            den: o.den,
        })
    }
    fn mul_int(self, k: i128) -> Q {
        Q {
            num: self.num * k,
            den: self.den,
        }
    }
    fn le(self, o: Q) -> bool {
        self.num * o.den <= o.num * self.den
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The largest `s` in `0..=a` with `s + r·(a − s) <= b`, by counting down from `a`; `None`
/// when even `s = 0` overdraws (the server then serves 0).
fn by_counting(b: Q, r: Q, a: i128) -> i128 {
    (0..=a)
        .rev()
        .find(|&s| Q::int(s).add(r.mul_int(a - s)).le(b))
        .unwrap_or(0)
}

/// The engines' old float expression.
fn old_float(b: f64, r: f64, a: f64) -> f64 {
    ((b - r * a) / (1.0 - r)).floor().clamp(0.0, a)
}

/// Refusal costs with one, two and three decimals, every B in 0..=120, A in 0..=200.
#[test]
fn one_window_matches_counting_and_the_float_formula_did_not() {
    let mut cases = 0;
    let mut float_wrong = 0;
    for (num, den) in [
        (1, 10),
        (5, 100),
        (25, 100),
        (3, 10),
        (5, 10),
        (9, 10),
        (125, 1000),
    ] {
        let r_float = num as f64 / den as f64;
        let cost = RefusalCost::new(r_float).unwrap();
        assert_eq!(cost.ratio(), (num as u64, den as u64));
        let r = Q { num, den };
        for b in 0..=120 {
            for a in 0..=200 {
                let want = by_counting(Q::int(b), r, a);
                let got = WindowBudget::full(b as u64, cost).serve(a as u64);
                assert_eq!(got as i128, want, "B = {b}, r = {num}/{den}, A = {a}");
                cases += 1;
                if old_float(b as f64, r_float, a as f64) as i128 != want {
                    float_wrong += 1;
                }
            }
        }
    }
    assert!(cases > 100_000);
    // The old code was wrong somewhere in this grid (and never in the other direction).
    assert!(float_wrong > 0, "the float formula was never wrong?");
    assert!(
        old_float(50.0, 0.1, 77.0) == 46.0
            && by_counting(Q::int(50), Q { num: 1, den: 10 }, 77) == 47
    );
}

/// Several steps of one window, each meeting what the last one left, tracked as a rational.
#[test]
fn successive_steps_carry_the_exact_remainder() {
    for (num, den) in [(1, 10), (7, 100), (1, 8)] {
        let r_float = num as f64 / den as f64;
        let Ok(cost) = RefusalCost::new(r_float) else {
            continue;
        };
        let r = Q { num, den };
        let mut x = 12345_u64;
        for b0 in [10_u64, 50, 97] {
            let mut exact = Q::int(i128::from(b0));
            let mut budget = WindowBudget::full(b0, cost);
            for _ in 0..40 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let a = (x >> 58) as i128; // 0..=63
                let s = by_counting(exact, r, a);
                exact = exact.sub(Q::int(s).add(r.mul_int(a - s)));
                assert_eq!(
                    budget.serve(a as u64) as i128,
                    s,
                    "B0 = {b0}, r = {num}/{den}"
                );
            }
        }
    }
}

/// The engines serve the exact count: 77 clients knock at once on a window of 50 with
/// refusals costing a tenth, and 47 are served.
#[test]
fn both_engines_serve_forty_seven_of_seventy_seven() {
    let mut s = Scenario::default();
    s.clients.count = 77;
    s.server.outages.clear();
    s.server.refusal_cost = 0.1;
    s.horizon_s = 1.0;
    s.retry.rules = vec![RuleName::Constant];
    for engine in [Engine::Agent, Engine::Cohort] {
        let sim = Simulation::with_engine(&s, &Limits::default(), engine).unwrap();
        let run = sim
            .run(RuleName::Constant, 1, herd_sim::Watch::none())
            .unwrap();
        assert_eq!(run.series.served[0], 47, "{engine:?}");
    }
}

#[test]
fn a_cost_that_is_not_a_short_decimal_is_named() {
    let mut s = Scenario::default();
    s.server.refusal_cost = 1.0 / 3.0;
    let err = Simulation::new(&s, &Limits::unlimited()).unwrap_err();
    assert_eq!(err.field_name(), Some("server.refusal_cost"));
    assert!(err.to_string().contains("at most 9 digits"), "{err}");
}
