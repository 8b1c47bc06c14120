//! How a figure is printed for a person: one precision policy for every table.
//!
//! A table that picks its own decimals prints the same quantity three ways in three commands
//! (`29.63`, `29.6`, `30`). Every person-facing table and verdict line of the simulator, the
//! lab and the CLI prints its figures through this module instead, and the page's `fig`
//! function in `crates/herd-lab/assets/app.js` applies the same rules. JSON and CSV are for
//! programs and keep full precision; values a person typed (a pause of 100 ms, a capacity)
//! are echoed as given.
//!
//! The rules (`docs/cli.md`, "Numbers"):
//!
//! - **Integers print as integers**, whatever their size: counts, and times or rates that
//!   happen to be whole (`2000`, `12`, not `12.0`).
//! - **Other values keep three significant figures**, never dropping an integer digit
//!   (`29.6`, `0.125`, `786`, `12346`), and without trailing zeros (`1.5`, not `1.50`).
//!   A quantity that spans orders of magnitude (a time from 0.01 s to an hour, requests per
//!   client from 1 to 10^4) thus keeps its relative precision; fixed decimals would print
//!   `0.0` for the one and meaningless digits for the other.
//! - **No scientific notation for |x| in [10⁻³, 10⁹)**; outside it, three significant
//!   figures in exponent form (`2.5e-5`, `1.23e10`).
//! - **No `-0`**: a value that rounds to zero prints as `0`.
//! - **A percentage short of 100 never prints as 100**, nor one above 0 as 0: it gains
//!   decimals until it differs (`99.96`, not `100`).
//! - **A mean with an interval prints to the interval's precision**: the interval rounds to
//!   one significant figure, and that digit fixes the decimals of both (`29.6 ± 0.1`,
//!   `36 ± 2`, `2000.0 ± 0.3`); an asymmetric interval uses its half-width the same way.
//!   A half-width below a billionth of the mean is rounding noise: the mean prints alone.
//! - **A tie rounds to even**, as IEEE 754 and Rust's formatting do (`120.5` → `120`).
//!
//! The kind of a quantity (seconds, milliseconds, percent, per-client ratio, count) picks
//! the unit and the percentage rule; the digits follow the same rules for every kind.
//!
//! # Examples
//!
//! ```
//! use herd_sim::figure::{self, Kind};
//!
//! assert_eq!(figure::number(2000.0), "2000");
//! assert_eq!(figure::number(29.63), "29.6");
//! assert_eq!(figure::number(785.5), "786");
//! assert_eq!(figure::number(0.0004), "4e-4");
//! assert_eq!(figure::number(-0.0), "0");
//! assert_eq!(figure::with_unit(13.9, Kind::Seconds), "13.9 s");
//! assert_eq!(figure::with_unit(99.96, Kind::Percent), "99.96 %");
//! assert_eq!(figure::mean_pm(29.634, 0.12), "29.6 ± 0.1");
//! assert_eq!(figure::mean_pm(36.4, 2.3), "36 ± 2");
//! ```

/// Significant figures of a value without an interval.
pub const SIGNIFICANT: usize = 3;

/// The kind of a quantity: its unit, and whether the percentage rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// A time in seconds (`s`).
    Seconds,
    /// A time in milliseconds (`ms`).
    Millis,
    /// A share out of 100 (`%`): never rounded to 0 or 100 unless it is.
    Percent,
    /// A ratio without a unit: requests per client, a factor.
    Ratio,
    /// How many of something; a mean of counts is a ratio.
    Count,
}

impl Kind {
    /// The unit printed after the figure, empty for a ratio or a count.
    #[must_use]
    pub fn unit(self) -> &'static str {
        match self {
            Kind::Seconds => "s",
            Kind::Millis => "ms",
            Kind::Percent => "%",
            Kind::Ratio | Kind::Count => "",
        }
    }
}

/// `x` by the rules above, without a unit.
///
/// # Examples
///
/// ```
/// use herd_sim::figure::number;
///
/// assert_eq!(number(12.0), "12");
/// assert_eq!(number(1e12), "1000000000000");
/// assert_eq!(number(9.3), "9.3");
/// assert_eq!(number(1.5), "1.5");
/// assert_eq!(number(0.1234), "0.123");
/// assert_eq!(number(12345.6), "12346");
/// assert_eq!(number(9.996), "10");
/// assert_eq!(number(0.001), "0.001");
/// assert_eq!(number(2.5e-5), "2.5e-5");
/// assert_eq!(number(1.234e10 + 0.5), "1.23e10");
/// assert_eq!(number(-0.25), "-0.25");
/// ```
#[must_use]
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return non_finite(x);
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    // Integers exactly, up to 2^53 (where every integer is a float).
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        return format!("{x:.0}");
    }
    let exponent = exponent_after_rounding(x, SIGNIFICANT);
    if !(-3..9).contains(&exponent) {
        return scientific(x);
    }
    let decimals = (SIGNIFICANT as i32 - 1 - exponent).max(0) as usize;
    no_negative_zero(trim_zeros(format!("{x:.decimals$}")))
}

/// `x` as a percentage (`x` out of 100, without the `%`): [`number`], except that a value
/// strictly between 0 and 100 never prints as either.
///
/// # Examples
///
/// ```
/// use herd_sim::figure::percent;
///
/// assert_eq!(percent(12.34), "12.3");
/// assert_eq!(percent(99.96), "99.96");
/// assert_eq!(percent(99.9996), "99.9996");
/// assert_eq!(percent(100.0), "100");
/// ```
#[must_use]
pub fn percent(x: f64) -> String {
    let text = number(x);
    if !(x > 0.0 && x < 100.0) || text != "100" {
        return text;
    }
    (1..=12)
        .map(|d| trim_zeros(format!("{x:.d$}")))
        .find(|t| t != "100")
        .unwrap_or(text)
}

/// A difference: [`number`] with a `+` before a positive value (`+1.5`, `-0.25`, `0`).
///
/// # Examples
///
/// ```
/// use herd_sim::figure::signed;
///
/// assert_eq!(signed(1.25), "+1.25");
/// assert_eq!(signed(-3.0), "-3");
/// assert_eq!(signed(0.0), "0");
/// ```
#[must_use]
pub fn signed(x: f64) -> String {
    let text = number(x);
    if x > 0.0 { format!("+{text}") } else { text }
}

/// `x` by its kind, without a unit: [`percent`] for a percentage, [`number`] otherwise.
#[must_use]
pub fn bare(x: f64, kind: Kind) -> String {
    match kind {
        Kind::Percent => percent(x),
        _ => number(x),
    }
}

/// `x` by its kind, then its unit after a space (`13.9 s`, `2.5 ms`, `12 %`, `120`).
///
/// # Examples
///
/// ```
/// use herd_sim::figure::{Kind, with_unit};
///
/// assert_eq!(with_unit(0.125, Kind::Seconds), "0.125 s");
/// assert_eq!(with_unit(2.54, Kind::Millis), "2.54 ms");
/// assert_eq!(with_unit(27.5, Kind::Ratio), "27.5");
/// ```
#[must_use]
pub fn with_unit(x: f64, kind: Kind) -> String {
    let text = bare(x, kind);
    match kind.unit() {
        "" => text,
        unit => format!("{text} {unit}"),
    }
}

/// `mean ± half`, both to the decimals of the interval's first significant figure; the
/// mean alone by [`number`] when the half-width is zero, not a number, or at most a
/// billionth of the mean (the rounding noise of runs that all gave the same figure).
///
/// # Examples
///
/// ```
/// use herd_sim::figure::mean_pm;
///
/// assert_eq!(mean_pm(29.634, 0.12), "29.6 ± 0.1");
/// assert_eq!(mean_pm(2000.0, 0.3), "2000.0 ± 0.3");
/// assert_eq!(mean_pm(127.0, 34.0), "127 ± 30");
/// assert_eq!(mean_pm(9.96, 0.96), "10 ± 1");
/// assert_eq!(mean_pm(-0.01, 0.3), "0.0 ± 0.3");
/// assert_eq!(mean_pm(12.5, 0.0), "12.5");
/// assert_eq!(mean_pm(600.0, 1e-12), "600");
/// ```
#[must_use]
pub fn mean_pm(mean: f64, half: f64) -> String {
    match mean_and_half(mean, half) {
        (m, Some(h)) => format!("{m} ± {h}"),
        (m, None) => m,
    }
}

/// [`mean_pm`]'s two parts, for a table that puts them in two columns; the half-width is
/// `None` where [`mean_pm`] prints the mean alone.
///
/// # Examples
///
/// ```
/// use herd_sim::figure::mean_and_half;
///
/// assert_eq!(mean_and_half(2.99871, 0.0042), ("2.999".to_owned(), Some("0.004".to_owned())));
/// assert_eq!(mean_and_half(3.0, 0.0), ("3".to_owned(), None));
/// ```
#[must_use]
pub fn mean_and_half(mean: f64, half: f64) -> (String, Option<String>) {
    match Precision::of(half, mean) {
        Some(p) => (p.fixed(mean), Some(p.fixed(p.interval))),
        None => (number(mean), None),
    }
}

/// `mean (lo–hi)` for an interval that is not symmetric (a proportion's, one clipped at
/// zero): all three to the decimals of its half-width's first significant figure.
///
/// # Examples
///
/// ```
/// use herd_sim::figure::mean_range;
///
/// assert_eq!(mean_range(0.27, 0.11, 0.47), "0.3 (0.1–0.5)");
/// assert_eq!(mean_range(3.0, 0.0, 6.2), "3 (0–6)");
/// assert_eq!(mean_range(4.0, 4.0, 4.0), "4");
/// ```
#[must_use]
pub fn mean_range(mean: f64, lo: f64, hi: f64) -> String {
    match Precision::of((hi - lo) / 2.0, mean) {
        Some(p) => format!("{} ({}–{})", p.fixed(mean), p.fixed(lo), p.fixed(hi)),
        None => number(mean),
    }
}

/// A half-width at most this share of the mean is rounding noise, not an interval.
const NOISE: f64 = 1e-9;

/// The decimals an interval allows, and the interval rounded to one significant figure.
struct Precision {
    decimals: usize,
    interval: f64,
}

impl Precision {
    /// `None` for a half-width that is zero, negative or not finite, or below a billionth
    /// of the mean (the rounding noise of runs that all gave the same figure).
    fn of(half: f64, mean: f64) -> Option<Self> {
        if !(half.is_finite() && half > 0.0) || half <= mean.abs() * NOISE {
            return None;
        }
        let exponent = exponent_after_rounding(half, 1);
        let decimals = (-exponent).clamp(0, 15) as usize;
        let scale = 10f64.powi(exponent);
        Some(Self {
            decimals,
            interval: (half / scale).round() * scale,
        })
    }

    fn fixed(&self, x: f64) -> String {
        if !x.is_finite() {
            return non_finite(x);
        }
        let d = self.decimals;
        no_negative_zero(format!("{x:.d$}"))
    }
}

/// The decimal exponent of `x` once rounded to `significant` figures (`9.996` to 3 is
/// `10.0`: exponent 1).
fn exponent_after_rounding(x: f64, significant: usize) -> i32 {
    let d = significant.saturating_sub(1);
    let text = format!("{x:.d$e}");
    text.rsplit_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0)
}

/// Three significant figures in exponent form, trailing zeros dropped (`1.2e10`).
fn scientific(x: f64) -> String {
    let d = SIGNIFICANT - 1;
    let text = format!("{x:.d$e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) => format!("{}e{exponent}", trim_zeros(mantissa.to_owned())),
        None => text,
    }
}

fn non_finite(x: f64) -> String {
    if x.is_nan() {
        "NaN".to_owned()
    } else if x > 0.0 {
        "∞".to_owned()
    } else {
        "-∞".to_owned()
    }
}

/// `1.500` → `1.5`, `2.000` → `2`; a text without a point unchanged.
fn trim_zeros(mut text: String) -> String {
    if text.contains('.') {
        let kept = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(kept);
    }
    text
}

/// `-0`, `-0.0`… → without the sign.
fn no_negative_zero(text: String) -> String {
    match text.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_owned(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_figures_across_magnitudes() {
        for (x, text) in [
            (0.001_234_5, "0.00123"),
            (0.012_345, "0.0123"),
            (0.123_45, "0.123"),
            (1.2345, "1.23"),
            (12.345, "12.3"),
            (123.45, "123"),
            (1234.6, "1235"),
            (999_999_999.5, "1e9"),
            (0.000_999_9, "0.001"),
            (0.000_999_4, "9.99e-4"),
        ] {
            assert_eq!(number(x), text, "{x}");
        }
    }

    #[test]
    fn no_negative_zero_and_no_trailing_point() {
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(-1e-300), "-1e-300");
        assert_eq!(number(2.0004), "2");
        assert_eq!(no_negative_zero("-0.00".to_owned()), "0.00");
        assert_eq!(mean_pm(-0.04, 0.2), "0.0 ± 0.2");
    }

    #[test]
    fn integers_stay_whole_and_never_go_scientific() {
        assert_eq!(number(1e9), "1000000000");
        assert_eq!(number(-42.0), "-42");
        assert_eq!(number(9_007_199_254_740_992.0), "9.01e15");
    }

    #[test]
    fn percent_never_rounds_to_its_ends() {
        assert_eq!(percent(99.95), "99.95");
        assert_eq!(percent(99.5), "99.5");
        assert_eq!(percent(0.0004), "4e-4");
        assert_eq!(percent(50.0), "50");
        assert_eq!(with_unit(99.96, Kind::Percent), "99.96 %");
    }

    #[test]
    fn interval_fixes_the_decimals_of_both() {
        assert_eq!(mean_pm(23.14, 0.05), "23.14 ± 0.05");
        assert_eq!(mean_pm(88.0, 3.2), "88 ± 3");
        assert_eq!(mean_pm(144.2, 2.6), "144 ± 3");
        assert_eq!(mean_pm(1.0, f64::NAN), "1");
        assert_eq!(mean_pm(0.5, 0.0996), "0.5 ± 0.1");
        assert_eq!(mean_range(0.5, 0.45, 0.55), "0.50 (0.45–0.55)");
    }

    #[test]
    fn not_finite_values_are_named() {
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "∞");
        assert_eq!(mean_pm(f64::NEG_INFINITY, 1.0), "-∞");
    }
}
