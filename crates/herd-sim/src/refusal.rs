//! How many of a step's arrivals a window's work budget serves, in exact arithmetic.
//!
//! A window with `B` of its budget left meets `A` arrivals. Accepting each costs the refusal
//! cost `r`; serving one costs the remaining `1 − r`. The server serves the largest `s ≤ A`
//! with `s + r·(A − s) ≤ B`, which is `clamp(floor((B − r·A) / (1 − r)), 0, A)`.
//!
//! Why not `f64`: at exact boundaries the quotient is a whole number that floating point
//! lands just below, and `floor` then serves one client too few (`B = 50`, `r = 0.1`,
//! `A = 77`: `(50 − 7.7) / 0.9` is `46.999…` in `f64`, exactly 47 in fact). So `r` is read as
//! the decimal the scenario wrote (at most nine digits after the point, `r = n / 10^k`), the
//! budget is counted in units of `1/10^k`, and the comparison is in integers.
//!
//! A budget that is not a whole number of units (a warm-up ramp's fraction of the capacity)
//! is floored to units once, when the window opens. That changes no answer: with `b` the
//! exact budget in units, `s·(10^k − n) + n·A ≤ b` holds exactly when it holds for `⌊b⌋`,
//! since the left side is an integer.
//!
//! # Examples
//!
//! ```
//! use herd_sim::refusal::{RefusalCost, WindowBudget};
//!
//! let cost = RefusalCost::new(0.1).unwrap();
//! let mut budget = WindowBudget::full(50, cost);
//! assert_eq!(budget.serve(77), 47); // 47 + 0.1 · 30 = 50 exactly
//! assert_eq!(budget.serve(1), 0);
//! assert!(RefusalCost::new(0.123_456_789_1).is_err()); // ten decimals
//! ```
use std::fmt;

/// The most digits after the decimal point a refusal cost may have.
pub const MAX_DECIMALS: u32 = 9;

/// A refusal's share of an answer's work, `0 <= r < 1`, held exactly as `parts / whole`
/// with `whole` a power of ten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefusalCost {
    parts: u64,
    whole: u64,
}

/// Why a number is not a refusal cost. Its message names the problem, not the field.
#[derive(Clone, Debug, PartialEq)]
pub struct InvalidRefusalCost(String);

impl fmt::Display for InvalidRefusalCost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidRefusalCost {}

impl RefusalCost {
    /// No cost: a refusal is free.
    pub const FREE: Self = Self { parts: 0, whole: 1 };

    /// The decimal that `r` was written as (its shortest round-trip form, so `0.1` is one
    /// tenth, not the binary fraction nearest to it).
    ///
    /// # Errors
    ///
    /// When `r` is not finite, is outside `[0, 1)`, or needs more than [`MAX_DECIMALS`]
    /// digits after the point.
    pub fn new(r: f64) -> Result<Self, InvalidRefusalCost> {
        if !r.is_finite() || !(0.0..1.0).contains(&r) {
            return Err(InvalidRefusalCost(format!(
                "must be at least 0 and below 1, got {r}"
            )));
        }
        let Some((parts, k)) = crate::fields::exact_decimal(r, MAX_DECIMALS) else {
            return Err(InvalidRefusalCost(format!(
                "must be a decimal with at most {MAX_DECIMALS} digits after the point, got {r}"
            )));
        };
        // Below 1, so `parts < 10^k <= 10^9`.
        let parts = parts as u64;
        let whole = 10u64.pow(k);
        Ok(Self { parts, whole })
    }

    /// The cost as a float, for reports.
    pub fn as_f64(self) -> f64 {
        self.parts as f64 / self.whole as f64
    }

    /// `(numerator, denominator)`: the cost is exactly `numerator / denominator`.
    pub fn ratio(self) -> (u64, u64) {
        (self.parts, self.whole)
    }
}

/// The largest `s ≤ arrivals` with `s + r·(arrivals − s) ≤ budget`, where `budget` is
/// counted in units of `1 / denominator` of the cost (`r = n / d`: `s·(d − n) + n·A ≤ b`).
/// Zero when even refusing everyone overdraws the budget.
pub fn served(budget_units: i128, cost: RefusalCost, arrivals: u64) -> u64 {
    let (n, d) = (i128::from(cost.parts), i128::from(cost.whole));
    let a = i128::from(arrivals);
    let room = budget_units - n * a;
    if room <= 0 {
        return 0;
    }
    // d > n, so the divisor is positive.
    let s = room / (d - n);
    u64::try_from(s.min(a)).unwrap_or(arrivals)
}

/// What is left of one window's work budget, exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowBudget {
    /// In units of `1 / cost.whole`; negative once refusals overdraw it.
    units: i128,
    cost: RefusalCost,
}

impl WindowBudget {
    /// A fresh window with `capacity` answers' worth of work.
    pub fn full(capacity: u64, cost: RefusalCost) -> Self {
        Self {
            units: i128::from(capacity) * i128::from(cost.whole),
            cost,
        }
    }

    /// A window with `capacity · num / den` of work (a warm-up ramp), `num <= den`,
    /// floored to whole units (which changes no answer, see the module docs).
    pub fn ramped(capacity: u64, cost: RefusalCost, num: u64, den: u64) -> Self {
        if den == 0 || num >= den {
            return Self::full(capacity, cost);
        }
        // floor(x · num / den) without overflow: x = q·den + m.
        let x = u128::from(capacity) * u128::from(cost.whole);
        let (den, num) = (u128::from(den), u128::from(num));
        let units = (x / den) * num + (x % den) * num / den;
        Self {
            units: i128::try_from(units).unwrap_or(i128::MAX),
            cost,
        }
    }

    /// `arrivals` knock: serves as many as the budget allows and pays for all of them.
    pub fn serve(&mut self, arrivals: u64) -> u64 {
        let s = served(self.units, self.cost, arrivals);
        let (n, d) = (i128::from(self.cost.parts), i128::from(self.cost.whole));
        self.units -= i128::from(s) * (d - n) + n * i128::from(arrivals);
        s
    }

    /// `arrivals` are all refused (the server collapsed): they still cost `r` each.
    pub fn refuse_all(&mut self, arrivals: u64) {
        self.units -= i128::from(self.cost.parts) * i128::from(arrivals);
    }

    /// What is left, in answers, for reports.
    pub fn left(&self) -> f64 {
        self.units as f64 / self.cost.whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_decimal_that_was_written() {
        assert_eq!(RefusalCost::new(0.1).unwrap().ratio(), (1, 10));
        assert_eq!(RefusalCost::new(0.0).unwrap().ratio(), (0, 1));
        assert_eq!(RefusalCost::new(0.05).unwrap().ratio(), (5, 100));
        assert_eq!(RefusalCost::new(1e-9).unwrap().ratio(), (1, 1_000_000_000));
        assert_eq!(
            RefusalCost::new(0.999_999_999).unwrap().ratio(),
            (999_999_999, 1_000_000_000)
        );
    }

    #[test]
    fn rejects_what_it_cannot_hold_exactly() {
        let e = RefusalCost::new(1.0 / 3.0).unwrap_err().to_string();
        assert!(e.contains("at most 9 digits after the point"), "{e}");
        for bad in [1.0, -0.1, f64::NAN, f64::INFINITY] {
            assert!(RefusalCost::new(bad).is_err(), "{bad}");
        }
    }

    /// The boundary the float formula missed: `(50 − 0.1·77) / 0.9` is 47 exactly.
    #[test]
    fn exact_boundary_serves_the_last_client() {
        let cost = RefusalCost::new(0.1).unwrap();
        let mut b = WindowBudget::full(50, cost);
        assert_eq!(b.serve(77), 47);
        assert_eq!(b.left(), 0.0);
        // The float formula, as the engines had it: one short.
        let r = 0.1_f64;
        assert_eq!(((50.0 - r * 77.0) / (1.0 - r)).floor(), 46.0);
    }

    #[test]
    fn ramps_floor_to_units_without_overflow() {
        let cost = RefusalCost::new(0.1).unwrap();
        assert_eq!(WindowBudget::ramped(50, cost, 1, 10).left(), 5.0);
        assert_eq!(WindowBudget::ramped(50, cost, 1, 3).units, 166);
        let big = WindowBudget::ramped(u64::MAX, cost, u64::MAX - 1, u64::MAX);
        assert!(big.units > 0);
    }
}
