//! Flags that mean the same thing in every subcommand, defined once so that they cannot
//! drift apart: `--rule`, `--runs`, `--format`, and the check that a number is in range.
//! docs/cli.md lists the conventions.
use clap::{Args, ValueEnum};
use herd::RuleName;

use crate::error::CliError;

/// One `--rule` value: a rule's name, or `all` / `classic` for a set of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RuleChoice(Vec<RuleName>);

/// Parses one `--rule` value (a comma list is split by clap before this sees it).
pub(crate) fn parse_rule_choice(s: &str) -> Result<RuleChoice, String> {
    match s.trim() {
        "all" => Ok(RuleChoice(RuleName::ALL.to_vec())),
        "classic" => Ok(RuleChoice(RuleName::CLASSIC.to_vec())),
        name => name
            .parse::<RuleName>()
            .map(|r| RuleChoice(vec![r]))
            .map_err(|e: herd::rule::UnknownRule| e.to_string()),
    }
}

/// `--rule R`: repeatable, a comma list accepted (`--rule full,equal`), `all` and `classic`
/// name sets. `--rules` is accepted as another spelling.
#[derive(Clone, Debug, Default, Args)]
pub(crate) struct RuleArgs {
    /// Rule to run: immediate, constant, exponential, full, equal, decorrelated, grpc,
    /// decorrelated-v2, grpc-retry, randomized, or `classic` (the first six) or `all`. Repeatable, or a comma list
    /// (--rule full,equal); defaults to the scenario's rules.
    #[arg(
        long = "rule",
        visible_alias = "rules",
        value_name = "R",
        value_delimiter = ',',
        value_parser = parse_rule_choice
    )]
    choices: Vec<RuleChoice>,
}

impl RuleArgs {
    /// The rules named, in order, each once; empty when none was given.
    pub(crate) fn rules(&self) -> Vec<RuleName> {
        let mut out: Vec<RuleName> = Vec::new();
        for rule in self.choices.iter().flat_map(|c| c.0.iter().copied()) {
            if !out.contains(&rule) {
                out.push(rule);
            }
        }
        out
    }

    /// The rules named, or `default` when none was.
    pub(crate) fn rules_or(&self, default: &[RuleName]) -> Vec<RuleName> {
        let rules = self.rules();
        if rules.is_empty() {
            default.to_vec()
        } else {
            rules
        }
    }
}

/// How a command without its own columns prints: the same three everywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// Aligned columns for people.
    Table,
    /// One JSON object for scripts.
    Json,
    /// Comma-separated values with a header line, one row per line of the table.
    Csv,
}

/// Bad input when `value` is outside `[lo, hi)`: one line naming the field, the range and
/// the flag (`refusal_cost must be in [0, 1), got -0.1 (--refusal-cost)`).
pub(crate) fn check_half_open(field: &str, value: f64, lo: f64, hi: f64) -> Result<f64, CliError> {
    if value.is_finite() && (lo..hi).contains(&value) {
        Ok(value)
    } else {
        Err(CliError::input(format!(
            "{field} must be in [{lo}, {hi}), got {value} (--{})",
            field.replace('_', "-")
        )))
    }
}

/// Bad input when `value` is outside `[lo, hi]` (see [`check_half_open`]).
pub(crate) fn check_closed<T>(field: &str, value: T, lo: T, hi: T) -> Result<T, CliError>
where
    T: PartialOrd + std::fmt::Display + Copy,
{
    if value >= lo && value <= hi {
        Ok(value)
    } else {
        Err(CliError::input(format!(
            "{field} must be in [{lo}, {hi}], got {value} (--{})",
            field.replace('_', "-")
        )))
    }
}

/// A `--seed` taken as a wide integer (so that `-1` is bad input naming the flag rather
/// than clap's own error) as the seed it stands for.
pub(crate) fn check_seed(seed: i128) -> Result<u64, CliError> {
    u64::try_from(seed).map_err(|_| {
        CliError::input(format!(
            "seed must be a whole number in [0, {}], got {seed} (--seed)",
            u64::MAX
        ))
    })
}

/// Quotes a CSV field when it needs it (RFC 4180): the simulator's, so that every CSV quotes
/// alike.
pub(crate) use herd_sim::model::csv_field;

/// Every subcommand, nested ones too, reads `-0.1` as a value rather than a flag.
pub(crate) fn allow_negative_numbers(cmd: clap::Command) -> clap::Command {
    cmd.allow_negative_numbers(true)
        .mut_subcommands(allow_negative_numbers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_names_parse() {
        assert_eq!(parse_rule_choice("classic").unwrap().0.len(), 6);
        assert_eq!(parse_rule_choice("full").unwrap().0, [RuleName::Full]);
        assert!(parse_rule_choice("fulll").is_err());
    }

    #[test]
    fn ranges_name_the_field() {
        let err = check_half_open("refusal_cost", -0.1, 0.0, 1.0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusal_cost must be in [0, 1), got -0.1 (--refusal-cost)"
        );
        assert!(check_half_open("refusal_cost", f64::NAN, 0.0, 1.0).is_err());
        assert!(check_closed("runs", 0u32, 1, 10).is_err());
    }
}
