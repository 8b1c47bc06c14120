//! Retry rules: how long to pause after the k-th failure.
//!
//! A [`Rule`] is validated configuration; it holds no mutable state, so one rule can drive
//! millions of clients. The little state a schedule needs (the failure count, and the previous
//! pause for `decorrelated`-style rules) lives in a [`RuleState`] that the caller owns. That
//! split is what lets the storm simulator keep a few bytes per client and call
//! [`Rule::pause`] synchronously, step by step, with *the same code* a production client runs
//! through [`Rule::schedule`], an `Iterator<Item = Duration>`.
//!
//! With `g(k) = min(cap, base · 2^(k−1))`, computed without overflow for any k:
//!
//! | rule | pause after the k-th failure |
//! |---|---|
//! | `immediate` | zero (the caller retries at once; the simulator rounds up to one step) |
//! | `constant` | a fixed `pause` |
//! | `exponential` | `g(k)`, no jitter |
//! | `full` | uniform in `[0, g(k)]` |
//! | `equal` | `g(k)/2 + uniform[0, g(k)/2]` |
//! | `decorrelated` | `min(cap, uniform[base, 3 · previous])`, previous starting at `base` |
//! | `grpc` | `min(cap, current · (1 + uniform[−jitter, jitter]))`, then `current = min(cap, current · multiplier)`, starting at `base` |
//! | `decorrelated-v2` | Polly's decorrelated jitter V2: `(f(k−1+u) − f(k−2+u′)) · base / 1.4` with `f(t) = 2^t · tanh(√(4t))`, capped |
//! | `grpc-retry` | gRPC's retry backoff: `c · uniform[1 − jitter, 1 + jitter)` with `c = min(cap, base · multiplier^(k−1))`; not capped after the jitter |
//! | `randomized` | Resilience4j's exponential random backoff: `min(cap, w · uniform[1 − jitter, 1 + jitter))` with `w = base`, then `⌊w · multiplier⌋` (not capped) |
//!
//! Why jitter at all? Clients that fail together and wait the same time knock together again;
//! a recovering server meets the whole herd at once. Jitter spreads the herd out over the
//! pause. [Choosing a rule](crate::guide::choosing_a_rule) walks through the trade-offs.
//!
//! Pauses are computed in integer nanoseconds (floats only where the formula needs them), so
//! that the same seed gives the same pauses on every platform and in the Python port.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use herd::{Rule, rng::SplitMix64};
//!
//! let rule = Rule::full(Duration::from_millis(100), Duration::from_secs(20))?;
//! for (k, pause) in rule.schedule(SplitMix64::new(1)).take(5).enumerate() {
//!     // full jitter: never more than base · 2^k, never more than the cap
//!     assert!(pause <= Duration::from_millis(100 << k));
//! }
//! # Ok::<(), herd::InvalidRule>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::rng::{Rng, ThreadRng};

mod systems;

#[cfg(feature = "sim")]
const NANOS_PER_MS: f64 = 1_000_000.0;

/// The names of the rules, as spelled on the command line, in scenario files and in JSON.
///
/// Parse one with [`str::parse`] and print it with `Display`; more rules may be added.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum RuleName {
    /// Retry at once.
    Immediate,
    /// A fixed pause.
    Constant,
    /// Doubling pauses, no jitter.
    Exponential,
    /// Exponential with full jitter.
    Full,
    /// Exponential with equal jitter.
    Equal,
    /// AWS decorrelated jitter.
    Decorrelated,
    /// gRPC connection backoff: a multiplier and ± jitter.
    Grpc,
    /// Polly's decorrelated jitter V2.
    DecorrelatedV2,
    /// gRPC's retry backoff (grpc-go, gRPC core): a multiplier, capped, then ± jitter.
    GrpcRetry,
    /// Resilience4j's exponential random backoff: a multiplier, ± jitter, then capped.
    Randomized,
}

/// Every rule, in the order used by tables.
const ALL_RULES: [RuleName; 10] = [
    RuleName::Immediate,
    RuleName::Constant,
    RuleName::Exponential,
    RuleName::Full,
    RuleName::Equal,
    RuleName::Decorrelated,
    RuleName::Grpc,
    RuleName::DecorrelatedV2,
    RuleName::GrpcRetry,
    RuleName::Randomized,
];

impl RuleName {
    crate::sim_pub! {
        /// Every rule, in the order used by tables.
        pub const ALL: [RuleName; 10] = ALL_RULES;
    }

    crate::sim_pub! {
        /// The six classic rules (what `herd storm` runs by default): the first six of
        /// [`ALL`](Self::ALL), before the gRPC rule and decorrelated v2.
        pub const CLASSIC: [RuleName; 6] = {
            let [a, b, c, d, e, f, ..] = ALL_RULES;
            [a, b, c, d, e, f]
        };
    }

    /// The name as written in files and on the command line.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            RuleName::Immediate => "immediate",
            RuleName::Constant => "constant",
            RuleName::Exponential => "exponential",
            RuleName::Full => "full",
            RuleName::Equal => "equal",
            RuleName::Decorrelated => "decorrelated",
            RuleName::Grpc => "grpc",
            RuleName::DecorrelatedV2 => "decorrelated-v2",
            RuleName::GrpcRetry => "grpc-retry",
            RuleName::Randomized => "randomized",
        }
    }

    /// Whether the rule draws random numbers.
    #[must_use]
    pub const fn is_jittered(self) -> bool {
        !matches!(
            self,
            RuleName::Immediate | RuleName::Constant | RuleName::Exponential
        )
    }

    crate::sim_pub! {
        /// Builds the rule from a full parameter set, taking the parameters this rule uses.
        ///
        /// # Errors
        ///
        /// The parameter the rule uses that is out of range, see [`InvalidRule`].
        pub fn build(self, params: &RuleParams) -> Result<Rule, InvalidRule> {
            match self {
                RuleName::Immediate => Ok(Rule::immediate()),
                RuleName::Constant => Rule::constant(params.pause),
                RuleName::Exponential => Rule::exponential(params.base, params.cap),
                RuleName::Full => Rule::full(params.base, params.cap),
                RuleName::Equal => Rule::equal(params.base, params.cap),
                RuleName::Decorrelated => Rule::decorrelated(params.base, params.cap),
                RuleName::Grpc => {
                    Rule::grpc(params.base, params.multiplier, params.jitter, params.cap)
                }
                RuleName::DecorrelatedV2 => Rule::decorrelated_v2(params.base, params.cap),
                RuleName::GrpcRetry => {
                    Rule::grpc_retry(params.base, params.multiplier, params.jitter, params.cap)
                }
                RuleName::Randomized => {
                    Rule::randomized(params.base, params.multiplier, params.jitter, params.cap)
                }
            }
        }
    }
}

impl fmt::Display for RuleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RuleName {
    type Err = UnknownRule;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL_RULES
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownRule(s.to_owned()))
    }
}

/// A rule name that is not one of [`RuleName`]'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownRule(String);

impl UnknownRule {
    /// The name given.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UnknownRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown rule `{}` (expected one of: ", self.0)?;
        for (i, r) in ALL_RULES.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(r.as_str())?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownRule {}

/// Every parameter any rule takes; a rule built from a [`RuleName`] picks the ones it uses.
///
/// The defaults are the classic ones: `base` 100 ms, `cap` 20 s, `pause` 1 s, and gRPC's
/// multiplier 1.6 with ±20 % jitter. Start from [`RuleParams::default`] and change fields
/// with the setters (the struct may gain fields).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use herd::RuleParams;
///
/// let params = RuleParams::default().base(Duration::from_millis(50)).multiplier(2.0);
/// assert_eq!((params.base, params.cap), (Duration::from_millis(50), Duration::from_secs(20)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RuleParams {
    /// First pause of the exponential family (`base`).
    pub base: Duration,
    /// Largest pause (`cap`).
    pub cap: Duration,
    /// The pause of `constant`.
    pub pause: Duration,
    /// Growth per failure for `grpc` (at least 1), `grpc-retry` and `randomized` (above 0).
    pub multiplier: f64,
    /// ± fraction for `grpc`, `grpc-retry` and `randomized`, in `[0, 1]`.
    pub jitter: f64,
}

impl Default for RuleParams {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(20),
            pause: Duration::from_secs(1),
            multiplier: 1.6,
            jitter: 0.2,
        }
    }
}

impl RuleParams {
    crate::breaker::setters! {
        base: Duration,
        cap: Duration,
        pause: Duration,
        multiplier: f64,
        jitter: f64,
    }
}

/// Why a rule could not be built. Each variant names the offending parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum InvalidRule {
    /// `base` must be longer than zero.
    ZeroBase,
    /// `pause` (of `constant`) must be longer than zero; use `immediate` for no pause.
    ZeroPause,
    /// `cap` must be at least `base`.
    CapBelowBase {
        /// The base given.
        base: Duration,
        /// The cap given.
        cap: Duration,
    },
    /// `multiplier` must be a finite number, at least 1 (above 0 for `grpc-retry` and
    /// `randomized`, whose systems accept a shrinking backoff).
    Multiplier(f64),
    /// `jitter` must be a fraction in `[0, 1]`.
    Jitter(f64),
    /// A duration in milliseconds that is negative, NaN, infinite or too large (from
    /// [`millis`], feature `sim`).
    #[cfg(feature = "sim")]
    #[cfg_attr(docsrs, doc(cfg(feature = "sim")))]
    Millis {
        /// The field, as the user spelled it (`base_ms`, `--cap-ms`, …).
        field: &'static str,
        /// The value given.
        value: f64,
    },
}

impl fmt::Display for InvalidRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidRule::ZeroBase => f.write_str("base must be longer than zero"),
            InvalidRule::ZeroPause => f.write_str(
                "pause must be longer than zero (use the `immediate` rule to retry at once)",
            ),
            InvalidRule::CapBelowBase { base, cap } => write!(
                f,
                "cap ({} ms) must be at least base ({} ms)",
                format_ms(*cap),
                format_ms(*base)
            ),
            InvalidRule::Multiplier(m) => {
                write!(
                    f,
                    "multiplier must be a finite number >= 1 (> 0 for grpc-retry and randomized), got {m}"
                )
            }
            InvalidRule::Jitter(j) => write!(f, "jitter must be a fraction in [0, 1], got {j}"),
            #[cfg(feature = "sim")]
            InvalidRule::Millis { field, value } => write!(
                f,
                "{field} must be a finite number of milliseconds between 0 and 10^12, got {value}"
            ),
        }
    }
}

impl std::error::Error for InvalidRule {}

/// Converts a user-supplied number of milliseconds into a [`Duration`], exactly to the
/// nanosecond where the input allows, rejecting negative, NaN, infinite and absurd values.
/// (For the simulator's scenario files and the `herd` command's flags: feature `sim`.)
///
/// # Errors
///
/// [`InvalidRule::Millis`] naming `field`.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(herd::rule::millis("base_ms", 2.5)?, Duration::from_micros(2500));
/// assert!(herd::rule::millis("base_ms", -1.0).is_err());
/// # Ok::<(), herd::InvalidRule>(())
/// ```
#[cfg(feature = "sim")]
#[cfg_attr(docsrs, doc(cfg(feature = "sim")))]
pub fn millis(field: &'static str, ms: f64) -> Result<Duration, InvalidRule> {
    // 10^12 ms is about 31 years: plenty for a pause, and far from u64 nanosecond overflow.
    if !ms.is_finite() || !(0.0..=1e12).contains(&ms) {
        return Err(InvalidRule::Millis { field, value: ms });
    }
    Ok(Duration::from_nanos((ms * NANOS_PER_MS).round() as u64))
}

crate::sim_pub! {
    /// Formats a duration as milliseconds: an integer when whole, otherwise up to six decimals
    /// with trailing zeros removed (nanosecond precision). This is `herd rules`' output format,
    /// and the one of [`InvalidRule`]'s messages.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::rule::format_ms;
    /// assert_eq!(format_ms(Duration::from_millis(100)), "100");
    /// assert_eq!(format_ms(Duration::from_nanos(1_234_500)), "1.2345");
    /// ```
    #[must_use]
    pub fn format_ms(d: Duration) -> String {
        let nanos = d.as_nanos();
        let whole = nanos / 1_000_000;
        let frac = nanos % 1_000_000;
        if frac == 0 {
            whole.to_string()
        } else {
            let digits = format!("{frac:06}");
            format!("{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

/// A validated retry rule. Cheap to copy; holds no per-client state.
///
/// Build one with a constructor ([`Rule::full`], …); draw pauses with
/// [`Rule::pause`] (you own the [`RuleState`]) or iterate a [`Rule::schedule`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    kind: Kind,
    /// Opt-in spread below the cap, in millionths of the cap (0: none, the default).
    below_cap_ppm: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Immediate,
    Constant {
        pause: u64,
    },
    Exponential(Doubling),
    Full(Doubling),
    Equal(Doubling),
    Decorrelated {
        base: u64,
        cap: u64,
    },
    Grpc {
        base: u64,
        cap: u64,
        multiplier: f64,
        jitter: f64,
    },
    DecorrelatedV2 {
        base: u64,
        cap: u64,
    },
    GrpcRetry {
        base: u64,
        cap: u64,
        /// The largest pause: `cap · (1 + jitter)` as the pause's own arithmetic rounds it.
        top: u64,
        multiplier: f64,
        jitter: f64,
    },
    Randomized {
        base: u64,
        cap: u64,
        multiplier: f64,
        jitter: f64,
    },
}

/// The state one client's schedule carries between failures: the number of failures so far and
/// one word of memory (the previous pause for `decorrelated`, the current backoff for `grpc` and `grpc-retry`,
/// the previous formula value for `decorrelated-v2`, the next interval for `randomized`).
///
/// `RuleState::default()` is the state before the first failure.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuleState {
    failures: u32,
    memory: u64,
}

impl RuleState {
    /// Failures recorded so far (saturating at `u32::MAX`).
    #[must_use]
    pub const fn failures(&self) -> u32 {
        self.failures
    }

    /// The rule's word of memory; meaningful only when [`Rule::uses_memory`] is true.
    #[must_use]
    pub const fn memory(&self) -> u64 {
        self.memory
    }

    crate::sim_pub! {
        /// Rebuilds a state from its parts, for callers (like the simulator) that store the
        /// failure count and the memory word separately to save space.
        #[must_use]
        pub const fn from_parts(failures: u32, memory: u64) -> Self {
            Self { failures, memory }
        }
    }
}

/// `min(cap, base · 2^(k−1))` for k ≥ 1 without overflow, for any k: the specification
/// of `g(k)`, which [`Doubling`] computes with its doublings counted once.
#[cfg(test)]
fn grow(base: u64, cap: u64, k: u32) -> u64 {
    let shift = k.saturating_sub(1);
    if shift >= 64 || base > (cap >> shift) {
        cap
    } else {
        base << shift
    }
}

/// `g(k)` of one rule, with the count of doublings before the cap worked out once:
/// [`grow`] shifts and compares at every pause, this compares the failure count with a
/// constant (a third of a `full` pause's cost beyond drawing its word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Doubling {
    base: u64,
    cap: u64,
    /// The least `s` for which `grow` gives `cap` with `k − 1 = s` (and so for every larger
    /// `s`, as `cap >> s` only shrinks): below it, `base << s` is at most `cap`.
    doublings: u32,
}

impl Doubling {
    const fn new(base: u64, cap: u64) -> Self {
        let mut doublings = 0;
        while doublings < 64 && base <= cap >> doublings {
            doublings += 1;
        }
        Self {
            base,
            cap,
            doublings,
        }
    }

    /// `grow(base, cap, k)` for the `k`-th failure, given `k − 1` (`previous_failures`; at
    /// `u32::MAX` failures `k − 1` is `u32::MAX − 1`, past every doubling either way).
    #[inline(always)]
    const fn after(&self, previous_failures: u32) -> u64 {
        if previous_failures < self.doublings {
            self.base << previous_failures
        } else {
            self.cap
        }
    }
}

/// `x as f64`, through `i64` when `small` says `x < 2^62`: the same value (both conversions
/// round the same integer to nearest), in one instruction.
#[inline(always)]
fn to_f64(x: u64, small: bool) -> f64 {
    if small { x as i64 as f64 } else { x as f64 }
}

/// `x as u64` for a non-negative `x`, through `i64` when `small` says that the result is
/// then capped below 2^62: below 2^63 both truncate alike, and from 2^63 on both give at
/// least 2^63 − 1, which the cap brings down to the cap alike.
#[inline(always)]
fn to_u64(x: f64, small: bool) -> u64 {
    if small { x as i64 as u64 } else { x as u64 }
}

fn nanos(d: Duration) -> u64 {
    // Durations beyond u64 nanoseconds (584 years) saturate.
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn check_base_cap(base: Duration, cap: Duration) -> Result<(u64, u64), InvalidRule> {
    if base.is_zero() {
        return Err(InvalidRule::ZeroBase);
    }
    if cap < base {
        return Err(InvalidRule::CapBelowBase { base, cap });
    }
    Ok((nanos(base), nanos(cap)))
}

const PPM: u32 = 1_000_000;

/// Polly's scaling so that median pauses fall near base, 2·base, 4·base, …
const POLLY_SCALE: f64 = 1.0 / 1.4;
/// Polly's smoothing factor for the first pause.
const POLLY_P: f64 = 4.0;

impl Rule {
    /// Retry at once.
    #[must_use]
    pub const fn immediate() -> Self {
        Self::of(Kind::Immediate)
    }

    /// A rule of `kind`, with no spread below the cap (what every constructor builds).
    const fn of(kind: Kind) -> Self {
        Self {
            kind,
            below_cap_ppm: 0,
        }
    }

    /// The same pause after every failure.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroPause`] for a zero pause.
    pub fn constant(pause: Duration) -> Result<Self, InvalidRule> {
        if pause.is_zero() {
            return Err(InvalidRule::ZeroPause);
        }
        Ok(Self::of(Kind::Constant {
            pause: nanos(pause),
        }))
    }

    /// A capped rule with `base` and `cap` checked: `kind` of them in nanoseconds, with no
    /// spread below the cap.
    fn capped(
        base: Duration,
        cap: Duration,
        kind: fn(u64, u64) -> Kind,
    ) -> Result<Self, InvalidRule> {
        let (base, cap) = check_base_cap(base, cap)?;
        Ok(Self::of(kind(base, cap)))
    }

    /// `g(k) = min(cap, base · 2^(k−1))`, no jitter.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`], [`InvalidRule::CapBelowBase`].
    pub fn exponential(base: Duration, cap: Duration) -> Result<Self, InvalidRule> {
        Self::capped(base, cap, |base, cap| {
            Kind::Exponential(Doubling::new(base, cap))
        })
    }

    /// Full jitter: uniform in `[0, g(k)]`.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`], [`InvalidRule::CapBelowBase`].
    pub fn full(base: Duration, cap: Duration) -> Result<Self, InvalidRule> {
        Self::capped(base, cap, |base, cap| Kind::Full(Doubling::new(base, cap)))
    }

    /// Equal jitter: `g(k)/2 + uniform[0, g(k)/2]`.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`], [`InvalidRule::CapBelowBase`].
    pub fn equal(base: Duration, cap: Duration) -> Result<Self, InvalidRule> {
        Self::capped(base, cap, |base, cap| Kind::Equal(Doubling::new(base, cap)))
    }

    /// Decorrelated jitter: `min(cap, uniform[base, 3 · previous])`, previous starting at
    /// `base`.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`], [`InvalidRule::CapBelowBase`].
    pub fn decorrelated(base: Duration, cap: Duration) -> Result<Self, InvalidRule> {
        Self::capped(base, cap, |base, cap| Kind::Decorrelated { base, cap })
    }

    /// gRPC connection backoff: the current backoff (starting at `base_delay`) with ±
    /// `jitter`, capped at `max_delay`, then multiplied by `multiplier` (capped) for next time.
    /// The parameters carry the names of gRPC's connection-backoff spec, whose defaults are
    /// base delay 1 s, multiplier 1.6, jitter 0.2, max delay 120 s.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`] (`base_delay`), [`InvalidRule::CapBelowBase`]
    /// (`max_delay`), [`InvalidRule::Multiplier`] (below 1, or not finite: the connection
    /// backoff only grows), [`InvalidRule::Jitter`] (outside `[0, 1]`).
    pub fn grpc(
        base_delay: Duration,
        multiplier: f64,
        jitter: f64,
        max_delay: Duration,
    ) -> Result<Self, InvalidRule> {
        Self::multiplied(RuleName::Grpc, base_delay, multiplier, jitter, max_delay)
    }

    /// Polly's decorrelated jitter V2 (George Polevoy's formula): smooth, jittered, with median
    /// pauses near `base`, `2·base`, `4·base`, … and no clustering; capped.
    ///
    /// This is the only rule that uses transcendental functions (`exp2`, `tanh`), so its last
    /// bits follow the platform's libm (the Python port calls the same libm functions).
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`], [`InvalidRule::CapBelowBase`].
    pub fn decorrelated_v2(base: Duration, cap: Duration) -> Result<Self, InvalidRule> {
        Self::capped(base, cap, |base, cap| Kind::DecorrelatedV2 { base, cap })
    }

    /// gRPC's retry backoff, as grpc-go and gRPC core compute it: after the k-th failure,
    /// `c · uniform[1 − jitter, 1 + jitter)` with
    /// `c = min(max_backoff, initial_backoff · backoff_multiplier^(k−1))`; the jittered pause
    /// may exceed `max_backoff` by the jitter. The parameters carry the names of the service
    /// config's `retryPolicy` fields; gRPC's own jitter is 0.2. See the `systems` module docs
    /// for the sources (and gRPC Java's different rule).
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`] (`initial_backoff`), [`InvalidRule::CapBelowBase`]
    /// (`max_backoff`), [`InvalidRule::Multiplier`] (`backoff_multiplier` must be finite and
    /// above 0), [`InvalidRule::Jitter`] (outside `[0, 1]`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{Rule, rng::SplitMix64};
    ///
    /// // initialBackoff 0.1 s, maxBackoff 1 s, backoffMultiplier 1.6
    /// let rule = Rule::grpc_retry(Duration::from_millis(100), 1.6, 0.2, Duration::from_secs(1))?;
    /// let pauses: Vec<Duration> = rule.schedule(SplitMix64::new(3)).take(8).collect();
    /// assert!(pauses[0] >= Duration::from_millis(80) && pauses[0] < Duration::from_millis(120));
    /// assert!(pauses[7] >= Duration::from_millis(800) && pauses[7] < Duration::from_millis(1200));
    /// # Ok::<(), herd::InvalidRule>(())
    /// ```
    pub fn grpc_retry(
        initial_backoff: Duration,
        backoff_multiplier: f64,
        jitter: f64,
        max_backoff: Duration,
    ) -> Result<Self, InvalidRule> {
        Self::multiplied(
            RuleName::GrpcRetry,
            initial_backoff,
            backoff_multiplier,
            jitter,
            max_backoff,
        )
    }

    /// Resilience4j's exponential random backoff (`IntervalFunction.ofExponentialRandomBackoff`
    /// with a maximum): the interval `w` starts at `wait_duration` and becomes
    /// `⌊w · multiplier⌋` after each failure, uncapped; the pause is
    /// `min(max_wait_duration, w · uniform[1 − f, 1 + f))` with `f` the
    /// `randomized_wait_factor`, truncated. With the factor 0 it is `ofExponentialBackoff`
    /// with a maximum; with `multiplier` 1, `ofRandomized`. The parameters carry
    /// Resilience4j's names (`waitDuration`, `exponentialBackoffMultiplier`,
    /// `randomizedWaitFactor`, `exponentialMaxWaitDuration`). Resilience4j counts whole
    /// milliseconds, herd nanoseconds.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::ZeroBase`] (`wait_duration`), [`InvalidRule::CapBelowBase`]
    /// (`max_wait_duration`), [`InvalidRule::Multiplier`] (finite and above 0; below 1 the
    /// interval shrinks, as Resilience4j allows), [`InvalidRule::Jitter`]
    /// (`randomized_wait_factor` outside `[0, 1]`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{Rule, rng::SplitMix64};
    ///
    /// // waitDuration 1 s, ×2, randomizedWaitFactor 0.5, exponentialMaxWaitDuration 30 s
    /// let rule = Rule::randomized(Duration::from_secs(1), 2.0, 0.5, Duration::from_secs(30))?;
    /// let pauses: Vec<Duration> = rule.schedule(SplitMix64::new(3)).take(8).collect();
    /// assert!(pauses[1] >= Duration::from_secs(1) && pauses[1] < Duration::from_secs(3));
    /// // 64 s · [0.5, 1.5) is never below the 30 s cap: the jitter is gone.
    /// assert_eq!(pauses[7], Duration::from_secs(30));
    /// # Ok::<(), herd::InvalidRule>(())
    /// ```
    pub fn randomized(
        wait_duration: Duration,
        multiplier: f64,
        randomized_wait_factor: f64,
        max_wait_duration: Duration,
    ) -> Result<Self, InvalidRule> {
        Self::multiplied(
            RuleName::Randomized,
            wait_duration,
            multiplier,
            randomized_wait_factor,
            max_wait_duration,
        )
    }

    /// `name`, one of the rules with a multiplier and a jitter (`grpc`, `grpc-retry`,
    /// `randomized`), with `base`, `cap`, `multiplier` and `jitter` checked.
    fn multiplied(
        name: RuleName,
        base: Duration,
        multiplier: f64,
        jitter: f64,
        cap: Duration,
    ) -> Result<Self, InvalidRule> {
        let (base, cap) = check_base_cap(base, cap)?;
        // gRPC's connection backoff only grows; the systems' rules accept a multiplier below 1.
        if name == RuleName::Grpc && multiplier < 1.0 {
            return Err(InvalidRule::Multiplier(multiplier));
        }
        systems::check(multiplier, jitter)?;
        Ok(Self::of(match name {
            RuleName::Grpc => Kind::Grpc {
                base,
                cap,
                multiplier,
                jitter,
            },
            RuleName::GrpcRetry => Kind::GrpcRetry {
                base,
                cap,
                top: systems::grpc_retry_top(cap, jitter),
                multiplier,
                jitter,
            },
            RuleName::Randomized => Kind::Randomized {
                base,
                cap,
                multiplier,
                jitter,
            },
            other => unreachable!("{other} has no multiplier"),
        }))
    }

    /// The rule's name.
    #[must_use]
    pub const fn name(&self) -> RuleName {
        match self.kind {
            Kind::Immediate => RuleName::Immediate,
            Kind::Constant { .. } => RuleName::Constant,
            Kind::Exponential(_) => RuleName::Exponential,
            Kind::Full(_) => RuleName::Full,
            Kind::Equal(_) => RuleName::Equal,
            Kind::Decorrelated { .. } => RuleName::Decorrelated,
            Kind::Grpc { .. } => RuleName::Grpc,
            Kind::DecorrelatedV2 { .. } => RuleName::DecorrelatedV2,
            Kind::GrpcRetry { .. } => RuleName::GrpcRetry,
            Kind::Randomized { .. } => RuleName::Randomized,
        }
    }

    /// The largest pause this rule can ever give.
    #[must_use]
    pub fn max_pause(&self) -> Duration {
        Duration::from_nanos(self.max_pause_nanos())
    }

    /// Whether the rule keeps a word of memory between failures ([`RuleState::memory`]).
    /// When false, the failure count alone determines the distribution of the next pause.
    #[must_use]
    pub const fn uses_memory(&self) -> bool {
        matches!(
            self.kind,
            Kind::Decorrelated { .. }
                | Kind::Grpc { .. }
                | Kind::DecorrelatedV2 { .. }
                | Kind::GrpcRetry { .. }
                | Kind::Randomized { .. }
        )
    }

    /// Records one more failure in `state` and returns the pause to wait before the next
    /// attempt. Deterministic rules draw nothing from `rng`.
    ///
    /// Never panics and never overflows: at any failure count (up to and past `u32::MAX`) the
    /// pause is at most [`max_pause`](Rule::max_pause).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{Rule, RuleState, rng::SplitMix64};
    ///
    /// let rule = Rule::exponential(Duration::from_millis(100), Duration::from_secs(20))?;
    /// let mut state = RuleState::default();
    /// let mut rng = SplitMix64::new(1);
    /// let pauses: Vec<_> = (0..4).map(|_| rule.pause(&mut state, &mut rng).as_millis()).collect();
    /// assert_eq!(pauses, [100, 200, 400, 800]);
    /// # Ok::<(), herd::InvalidRule>(())
    /// ```
    #[inline]
    pub fn pause<R: Rng + ?Sized>(&self, state: &mut RuleState, rng: &mut R) -> Duration {
        Duration::from_nanos(self.pause_nanos(state, rng))
    }

    /// [`pause`](Rule::pause) in whole nanoseconds: the same pause from the same state and
    /// generator, without the [`Duration`] round trip. This is the path for hot loops (the
    /// simulator's engines draw hundreds of millions of pauses a second); it is inlined into
    /// its caller, so a caller that holds one rule pays the rule's `match` once per pause as a
    /// well-predicted branch, and a caller whose rule is known at compile time not at all.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{Rule, RuleState, rng::SplitMix64};
    ///
    /// let rule = Rule::full(Duration::from_millis(100), Duration::from_secs(20))?;
    /// let (mut a, mut b) = (RuleState::default(), RuleState::default());
    /// let (mut r1, mut r2) = (SplitMix64::new(9), SplitMix64::new(9));
    /// for _ in 0..10 {
    ///     let nanos = rule.pause_nanos(&mut a, &mut r1);
    ///     assert_eq!(Duration::from_nanos(nanos), rule.pause(&mut b, &mut r2));
    /// }
    /// # Ok::<(), herd::InvalidRule>(())
    /// ```
    #[inline(always)]
    pub fn pause_nanos<R: Rng + ?Sized>(&self, state: &mut RuleState, rng: &mut R) -> u64 {
        let previous_failures = state.failures;
        state.failures = state.failures.saturating_add(1);
        let k = state.failures;
        let nanos = match self.kind {
            Kind::Immediate => 0,
            Kind::Constant { pause } => pause,
            Kind::Exponential(g) => g.after(previous_failures),
            Kind::Full(g) => rng.range_inclusive(0, g.after(previous_failures)),
            Kind::Equal(g) => {
                let g = g.after(previous_failures);
                let half = g / 2;
                (g - half) + rng.range_inclusive(0, half)
            }
            Kind::Decorrelated { base, cap } => {
                let previous = if previous_failures == 0 {
                    base
                } else {
                    state.memory
                };
                let drawn = rng.range_inclusive(base, previous.saturating_mul(3).max(base));
                let pause = drawn.min(cap);
                state.memory = pause;
                pause
            }
            Kind::Grpc {
                base,
                cap,
                multiplier,
                jitter,
            } => {
                let current = if previous_failures == 0 {
                    base
                } else {
                    state.memory
                };
                let u = rng.next_f64();
                // `current` is at most `cap`; below 2^62 the conversions go through `i64`
                // (one instruction each way, where `u64`'s take five to ten) with the same
                // results: see `to_f64` and `to_u64`.
                let small = cap < 1 << 62;
                let current = to_f64(current, small);
                let jittered = current * (1.0 + jitter * (2.0 * u - 1.0));
                state.memory = to_u64(current * multiplier, small).min(cap);
                to_u64(jittered, small).min(cap)
            }
            Kind::DecorrelatedV2 { base, cap } => {
                let previous = if previous_failures == 0 {
                    0.0
                } else {
                    f64::from_bits(state.memory)
                };
                let t = f64::from(k - 1) + rng.next_f64();
                // exp2, not powf(2, t): LLVM may rewrite one into the other, and the Python port
                // must call the same libm function.
                let next = t.exp2() * (POLLY_P * t).sqrt().tanh();
                state.memory = next.to_bits();
                if next.is_infinite() {
                    cap
                } else {
                    let value = (next - previous) * POLLY_SCALE * base as f64;
                    // `as` saturates (and maps NaN to 0), so no overflow is possible.
                    (value.max(0.0) as u64).min(cap)
                }
            }
            Kind::GrpcRetry {
                // In the order of the formula: min(cap, base · multiplier^(k−1)), then jittered.
                base,
                multiplier,
                cap,
                jitter,
                ..
            } => {
                let current = if previous_failures == 0 {
                    base as f64
                } else {
                    f64::from_bits(state.memory)
                };
                let (pause, next) = systems::grpc_retry(current, cap, multiplier, jitter, rng);
                state.memory = next.to_bits();
                pause
            }
            Kind::Randomized {
                base,
                cap,
                multiplier,
                jitter,
            } => {
                let interval = if previous_failures == 0 {
                    base
                } else {
                    state.memory
                };
                let (pause, next) = systems::randomized(interval, cap, multiplier, jitter, rng);
                state.memory = next;
                pause
            }
        };
        if self.below_cap_ppm > 0 && nanos > 0 && nanos == self.max_pause_nanos() {
            // Opt-in only: existing rules draw exactly what they always drew.
            let spread = u128::from(nanos) * u128::from(self.below_cap_ppm) / u128::from(PPM);
            let spread = u64::try_from(spread).unwrap_or(u64::MAX);
            return nanos - rng.range_inclusive(0, spread);
        }
        nanos
    }

    /// Spreads pauses that reach the cap over `[cap · (1 − fraction), cap]`, uniformly.
    ///
    /// Once a rule's pauses reach its cap, clients cluster at the cap: about two thirds of
    /// `decorrelated`'s pauses and all of `decorrelated-v2`'s and `exponential`'s sit exactly
    /// at it, so a herd that failed together keeps returning together every `cap`. This
    /// option (off by default, as backon's jitter is opt-in) draws one more value from the
    /// generator for a pause at the cap, and only then; a rule without it gives exactly the
    /// pauses it always gave. The rule's memory (`decorrelated`'s previous pause) keeps the
    /// unspread value, so the schedule's growth is unchanged.
    ///
    /// # Errors
    ///
    /// [`InvalidRule::Jitter`] unless `fraction` is in `[0, 1]`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{Rule, rng::SplitMix64};
    ///
    /// let rule = Rule::exponential(Duration::from_secs(1), Duration::from_secs(8))?
    ///     .spread_below_cap(0.25)?;
    /// let pauses: Vec<Duration> = rule.schedule(SplitMix64::new(1)).skip(3).take(50).collect();
    /// assert!(pauses.iter().all(|p| *p >= Duration::from_secs(6) && *p <= Duration::from_secs(8)));
    /// assert!(pauses.iter().any(|p| *p < Duration::from_secs(8)));
    /// # Ok::<(), herd::InvalidRule>(())
    /// ```
    pub fn spread_below_cap(mut self, fraction: f64) -> Result<Self, InvalidRule> {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(InvalidRule::Jitter(fraction));
        }
        self.below_cap_ppm = (fraction * f64::from(PPM)).round() as u32;
        Ok(self)
    }

    /// [`max_pause`](Rule::max_pause) in whole nanoseconds.
    #[inline]
    #[must_use]
    pub const fn max_pause_nanos(&self) -> u64 {
        match self.kind {
            Kind::Immediate => 0,
            Kind::Constant { pause } => pause,
            Kind::Exponential(Doubling { cap, .. })
            | Kind::Full(Doubling { cap, .. })
            | Kind::Equal(Doubling { cap, .. })
            | Kind::Decorrelated { cap, .. }
            | Kind::Grpc { cap, .. }
            | Kind::DecorrelatedV2 { cap, .. }
            | Kind::Randomized { cap, .. } => cap,
            Kind::GrpcRetry { top, .. } => top,
        }
    }

    /// An endless schedule of pauses drawn with `rng`, starting before the first failure.
    /// Bound it with [`Iterator::take`] (or let a retry policy stop it).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use herd::{Rule, rng::SplitMix64};
    ///
    /// let rule = Rule::decorrelated(Duration::from_millis(100), Duration::from_secs(5))?;
    /// let pauses: Vec<Duration> = rule.schedule(SplitMix64::new(42)).take(8).collect();
    /// assert!(pauses.iter().all(|p| *p >= Duration::from_millis(100) && *p <= Duration::from_secs(5)));
    /// # Ok::<(), herd::InvalidRule>(())
    /// ```
    #[must_use]
    pub fn schedule<R: Rng>(self, rng: R) -> Schedule<R> {
        Schedule {
            rule: self,
            state: RuleState::default(),
            rng,
        }
    }

    /// A schedule drawing from the fast thread-local generator (for production use).
    #[must_use]
    pub fn schedule_thread_rng(self) -> Schedule<ThreadRng> {
        self.schedule(ThreadRng)
    }
}

/// An endless iterator of pauses: the rule, its state and a generator. See [`Rule::schedule`].
#[derive(Clone, Debug)]
pub struct Schedule<R> {
    rule: Rule,
    state: RuleState,
    rng: R,
}

impl<R> Schedule<R> {
    /// The rule being followed.
    #[must_use]
    pub const fn rule(&self) -> &Rule {
        &self.rule
    }

    /// Failures recorded so far.
    #[must_use]
    pub const fn failures(&self) -> u32 {
        self.state.failures
    }
}

impl<R: Rng> Iterator for Schedule<R> {
    type Item = Duration;

    #[inline]
    fn next(&mut self) -> Option<Duration> {
        Some(self.rule.pause(&mut self.state, &mut self.rng))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn grow_saturates_at_cap_for_huge_k() {
        assert_eq!(grow(100, 20_000, 1), 100);
        assert_eq!(grow(100, 20_000, 8), 12_800);
        assert_eq!(grow(100, 20_000, 9), 20_000);
        assert_eq!(grow(100, 20_000, 1_000_000_000), 20_000);
        assert_eq!(grow(100, 20_000, u32::MAX), 20_000);
        assert_eq!(grow(1, u64::MAX, 64), 1 << 63);
        assert_eq!(grow(1, u64::MAX, 65), u64::MAX);
        assert_eq!(grow(3, u64::MAX, 64), u64::MAX);
    }

    /// The doublings counted once give `grow`'s value at every failure count, for bases and
    /// caps from equal to 2^64 apart.
    #[test]
    fn doubling_is_grow() {
        let mut rng = SplitMix64::new(2);
        let mut pairs = vec![
            (1, 1),
            (1, u64::MAX),
            (3, u64::MAX),
            (100, 20_000),
            (7, 7 << 63),
        ];
        for _ in 0..2000 {
            let base = rng.next_u64() >> rng.range_inclusive(0, 63);
            let cap = base.saturating_add(rng.next_u64() >> rng.range_inclusive(0, 63));
            pairs.push((base.max(1), cap.max(1).max(base)));
        }
        for (base, cap) in pairs {
            let d = Doubling::new(base, cap);
            for k in (1..=70).chain([1_000, u32::MAX - 1, u32::MAX]) {
                let previous = k - 1;
                assert_eq!(d.after(previous), grow(base, cap, k), "{base}, {cap}, {k}");
            }
        }
    }

    #[test]
    fn exponential_reaches_cap_and_stays() {
        let rule = Rule::exponential(ms(100), ms(20_000)).unwrap();
        let pauses: Vec<_> = rule
            .schedule(SplitMix64::new(0))
            .take(12)
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(
            pauses,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 20000, 20000, 20000, 20000
            ]
        );
    }

    #[test]
    fn late_failures_give_cap_without_panicking() {
        let mut rng = SplitMix64::new(5);
        for name in RuleName::ALL {
            let rule = name.build(&RuleParams::default()).unwrap();
            let mut state = RuleState::from_parts(u32::MAX - 2, 0);
            for _ in 0..5 {
                let p = rule.pause(&mut state, &mut rng);
                assert!(p <= rule.max_pause(), "{name}: {p:?}");
            }
            assert_eq!(state.failures(), u32::MAX);
        }
        let exp = Rule::exponential(ms(100), ms(20_000)).unwrap();
        let mut state = RuleState::from_parts(999_999_999, 0);
        assert_eq!(exp.pause(&mut state, &mut rng), ms(20_000));
    }

    /// The engines draw through `pause_nanos`; the API through `pause`. Both must give the
    /// same pause, state and generator for every rule, with and without the spread below the
    /// cap, at every failure count a run reaches.
    #[test]
    fn pause_nanos_is_pause_in_nanoseconds() {
        for name in RuleName::ALL {
            let plain = name.build(&RuleParams::default()).unwrap();
            for rule in [plain, plain.spread_below_cap(0.25).unwrap()] {
                let (mut a, mut b) = (RuleState::default(), RuleState::default());
                let (mut ra, mut rb) = (SplitMix64::new(17), SplitMix64::new(17));
                for _ in 0..2000 {
                    let nanos = rule.pause_nanos(&mut a, &mut ra);
                    assert_eq!(Duration::from_nanos(nanos), rule.pause(&mut b, &mut rb));
                    assert_eq!((a, &ra), (b, &rb), "{name}");
                }
                assert_eq!(rule.max_pause_nanos(), nanos(rule.max_pause()));
            }
        }
    }

    #[test]
    fn validation_names_the_problem() {
        assert_eq!(Rule::full(ms(0), ms(10)), Err(InvalidRule::ZeroBase));
        assert_eq!(
            Rule::equal(ms(100), ms(50)),
            Err(InvalidRule::CapBelowBase {
                base: ms(100),
                cap: ms(50)
            })
        );
        assert_eq!(Rule::constant(ms(0)), Err(InvalidRule::ZeroPause));
        assert!(matches!(
            Rule::grpc(ms(1), f64::NAN, 0.2, ms(10)),
            Err(InvalidRule::Multiplier(_))
        ));
        assert!(matches!(
            Rule::grpc(ms(1), 0.5, 0.2, ms(10)),
            Err(InvalidRule::Multiplier(_))
        ));
        assert!(matches!(
            Rule::grpc(ms(1), 1.6, 1.5, ms(10)),
            Err(InvalidRule::Jitter(_))
        ));
        assert!(millis("cap_ms", f64::NAN).is_err());
        assert!(millis("cap_ms", -0.5).is_err());
        assert!(millis("cap_ms", f64::INFINITY).is_err());
        let msg = Rule::equal(ms(100), ms(50)).unwrap_err().to_string();
        assert_eq!(msg, "cap (50 ms) must be at least base (100 ms)");
    }

    #[test]
    fn names_round_trip() {
        for name in RuleName::ALL {
            assert_eq!(name.as_str().parse::<RuleName>().unwrap(), name);
        }
        let err = "fancy".parse::<RuleName>().unwrap_err().to_string();
        assert!(err.contains("unknown rule `fancy`"), "{err}");
        assert!(err.contains("decorrelated-v2"), "{err}");
    }

    #[test]
    fn format_ms_trims() {
        assert_eq!(format_ms(Duration::ZERO), "0");
        assert_eq!(format_ms(Duration::from_nanos(1)), "0.000001");
        assert_eq!(format_ms(Duration::from_nanos(2_500_000)), "2.5");
    }

    #[test]
    fn grpc_grows_by_multiplier_and_jitters_within_fraction() {
        let rule = Rule::grpc(ms(1000), 1.6, 0.2, ms(120_000)).unwrap();
        let mut state = RuleState::default();
        let mut rng = SplitMix64::new(11);
        let mut current = 1000.0f64;
        for _ in 0..20 {
            let p = rule.pause(&mut state, &mut rng).as_secs_f64() * 1000.0;
            assert!(p >= current * 0.8 - 1e-6 && p <= (current * 1.2).min(120_000.0) + 1e-6);
            current = (current * 1.6).min(120_000.0);
        }
    }

    #[test]
    fn decorrelated_v2_medians_follow_pollys_formula() {
        let rule = Rule::decorrelated_v2(ms(1000), ms(1_000_000)).unwrap();
        let mut rng = SplitMix64::new(3);
        let mut firsts = Vec::new();
        let mut thirds = Vec::new();
        for _ in 0..4001 {
            let mut s = rule.schedule(&mut rng);
            firsts.push(s.next().unwrap().as_secs_f64());
            s.next();
            thirds.push(s.next().unwrap().as_secs_f64());
        }
        firsts.sort_by(f64::total_cmp);
        thirds.sort_by(f64::total_cmp);
        let (m1, m3) = (firsts[2000], thirds[2000]);
        assert!((0.7..1.4).contains(&m1), "median first pause {m1}");
        // f(2.5) − f(1.5) ≈ 2.86, scaled by 1/1.4: about 2 · base (Polly: "1, 2, 4, …").
        assert!((1.6..2.6).contains(&m3), "median third pause {m3}");
    }
}
