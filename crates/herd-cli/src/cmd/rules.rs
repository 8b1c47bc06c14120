//! `herd rules`: the pauses that independent clients draw after failures 1..K.
use std::io::{self, BufWriter, Write};

use clap::Args;
use herd::rng::SplitMix64;
use herd::rule::{format_ms, millis};
use herd::{RuleName, RuleParams, RuleState};

use crate::error::{CliError, CliResult};

/// The most pauses one invocation may print (samples × failures).
const MAX_VALUES: u64 = 1_000_000_000;

/// Print the pauses (in milliseconds) that N independent clients draw after failures 1..K
///
/// One line per client, its K pauses separated by spaces. Clients draw one after another from
/// one SplitMix64 generator seeded with --seed (see docs/rng.md), so the output is the same on
/// every machine; tools/herd_rules.py reproduces it bit for bit.
///
/// With g(k) = min(cap, base · 2^(k−1)), the pause after the k-th failure is:
///
///   immediate        0 (retry at once)
///   constant         pause
///   exponential      g(k)
///   full             uniform in [0, g(k)]
///   equal            g(k)/2 + uniform[0, g(k)/2]
///   decorrelated     min(cap, uniform[base, 3 · previous]), previous starting at base
///   grpc             min(cap, current · (1 + uniform[−jitter, jitter])), then
///                    current = min(cap, current · multiplier), starting at base
///   decorrelated-v2  Polly's V2: (f(t) − f(t′)) · base / 1.4 with f(t) = 2^t · tanh(√(4t)),
///                    t = k − 1 + uniform[0, 1), t′ the previous t; capped
///   grpc-retry       gRPC's retry backoff (grpc-go): c · uniform[1 − jitter, 1 + jitter),
///                    c = min(cap, base · multiplier^(k−1)); not capped again
///   randomized       Resilience4j's exponential random backoff: min(cap, w · uniform[1 −
///                    jitter, 1 + jitter)), w = base then ⌊w · multiplier⌋, uncapped
#[derive(Debug, Args)]
#[command(verbatim_doc_comment, allow_negative_numbers = true)]
pub(crate) struct RulesArgs {
    /// The rule: immediate, constant, exponential, full, equal, decorrelated, grpc,
    /// decorrelated-v2, grpc-retry, randomized.
    #[arg(long, value_name = "R", value_parser = parse_rule)]
    rule: RuleName,
    /// First pause of the exponential family, in milliseconds.
    #[arg(long, default_value_t = 100.0, value_name = "MS")]
    base_ms: f64,
    /// Largest pause, in milliseconds.
    #[arg(long, default_value_t = 20_000.0, value_name = "MS")]
    cap_ms: f64,
    /// The pause of `constant`, in milliseconds.
    #[arg(long, default_value_t = 1_000.0, value_name = "MS")]
    pause_ms: f64,
    /// Growth per failure for `grpc` (at least 1), `grpc-retry` and `randomized` (above 0).
    #[arg(long, default_value_t = 1.6, value_name = "X")]
    multiplier: f64,
    /// ± jitter fraction for `grpc`, `grpc-retry` and `randomized`, in [0, 1].
    #[arg(long, default_value_t = 0.2, value_name = "F")]
    jitter: f64,
    /// K: the number of failures (pauses per client).
    #[arg(long, default_value_t = 10, value_name = "K")]
    failures: u32,
    /// N: the number of independent clients (lines).
    #[arg(long, default_value_t = 1, value_name = "N")]
    samples: u64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1, value_name = "S")]
    seed: u64,
}

fn parse_rule(s: &str) -> Result<RuleName, String> {
    s.parse()
        .map_err(|e: herd::rule::UnknownRule| e.to_string())
}

impl RulesArgs {
    fn params(&self) -> CliResult<RuleParams> {
        let input = |e: herd::InvalidRule| CliError::input(e);
        Ok(RuleParams::default()
            .base(millis("--base-ms", self.base_ms).map_err(input)?)
            .cap(millis("--cap-ms", self.cap_ms).map_err(input)?)
            .pause(millis("--pause-ms", self.pause_ms).map_err(input)?)
            .multiplier(self.multiplier)
            .jitter(self.jitter))
    }
}

pub(crate) fn run(args: &RulesArgs) -> CliResult {
    let params = args.params()?;
    let rule = args
        .rule
        .build(&params)
        .map_err(|e| CliError::input(format!("{e} (rule {})", args.rule)))?;
    if args.failures == 0 {
        return Err(CliError::input("--failures must be at least 1"));
    }
    if args.samples == 0 {
        return Err(CliError::input("--samples must be at least 1"));
    }
    if u64::from(args.failures).saturating_mul(args.samples) > MAX_VALUES {
        return Err(CliError::input(format!(
            "--samples × --failures is {}; at most {MAX_VALUES} pauses per run",
            u128::from(args.failures) * u128::from(args.samples)
        )));
    }

    let mut rng = SplitMix64::new(args.seed);
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut line = String::with_capacity(16 * args.failures as usize);
    for _ in 0..args.samples {
        line.clear();
        let mut state = RuleState::default();
        for k in 0..args.failures {
            if k > 0 {
                line.push(' ');
            }
            line.push_str(&format_ms(rule.pause(&mut state, &mut rng)));
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}
