//! Real retry configurations, read as their owners define them and translated into herd's
//! terms.
//!
//! A service owner's retries live in a gRPC service config, an Envoy route, an Istio
//! `VirtualService`, a Linkerd `ServiceProfile` or annotation, an AWS shared config file or a
//! Spring Boot `application.yml` for Resilience4j, each with defaults that its users rarely
//! see (Istio retries twice when no `retries` block exists; Envoy caps its backoff at ten
//! times a 25 ms base; gRPC treats `maxAttempts` above 5 as 5). [`read`] reads such files and
//! returns, for each retry policy found, a [`Translation`] (attempts after the system's own
//! clamps, the rule and its parameters, timeouts, retryable conditions, the budget or
//! throttle, and which values came from the system's defaults), with the [`Finding`]s the
//! readers themselves raise (a clamped value, a policy the system rejects), each with the
//! file and line at fault and the fix. The simulator's `herd check` adds its analyzers and
//! the storm above these readers.
//!
//! A translation then builds the library's own types ([`Translation::retry_policy`],
//! [`Translation::throttle`], [`Translation::hedge_policy`], [`Translation::retryable`]), so
//! a Rust service can run exactly the retries its gRPC service config or Envoy route
//! describes: the same attempts, rule, timeouts and throttle, through `herd`'s loops or its
//! tower layer.
//!
//! Every default is applied by the translator of its system, with the source file that
//! defines it cited beside the code (`docs/check.md` lists them all). Each reader takes every
//! spelling its system's loader accepts (Envoy's two protobuf JSON names, Spring Boot's
//! relaxed, dotted and `.properties` keys, a leading byte-order mark). A key a translator does
//! not read is listed in [`Report::ignored`], never dropped silently, and a misspelt retry
//! setting is a `misspelt-key` warning; an entry its system rejects (a method config, a
//! profile, a route) is an `invalid-entry` error finding saying what the system does, and the
//! rest of the file is read; a file with no retry policy has a [`Note`] saying what was looked
//! at. Only a file that cannot be parsed, or whose system cannot be told, is a [`CheckError`]
//! naming the file, the line and the field.
//!
//! # Examples
//!
//! ```
//! use herd_config::{Input, System};
//!
//! let text = r#"{"methodConfig": [{"name": [{"service": "echo.Echo"}],
//!   "retryPolicy": {"maxAttempts": 8, "initialBackoff": "0.1s", "maxBackoff": "1s",
//!   "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
//! let report = herd_config::read(&[Input::new("svc.json", text)])?;
//! let t = &report.configs[0];
//! assert_eq!(t.system, System::Grpc);
//! assert_eq!(t.max_attempts, Some(5)); // gRPC treats maxAttempts above 5 as 5
//! assert!(report.findings.iter().any(|f| f.code == "clamped"));
//! # Ok::<(), herd_config::CheckError>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

use std::fmt;
use std::time::Duration;

use herd::RuleName;

mod aws;
mod depth;
mod detect;
mod envoy;
mod grpc;
mod istio;
mod kube;
mod linkerd;
mod policy;
mod resilience4j;
mod tree;

pub use detect::detect;
pub use policy::{BuildError, LibraryThrottle, Retryable};
pub use tree::strip_bom;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guide, `docs/check.md`: what each system's fields mean, every default with its source,
/// the findings and the storm (compiled with the crate's docs).
#[doc = include_str!("../../../docs/check.md")]
pub mod guide {}

/// The systems whose configurations herd reads.
///
/// Exhaustive on purpose: the analyzers above these readers (`herd_sim::check`) match on the
/// system to name its fields, and a new system must be a compile error there, not a silent
/// default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum System {
    /// A gRPC service config (JSON).
    Grpc,
    /// Envoy: a route configuration, a listener or a bootstrap (YAML or JSON).
    Envoy,
    /// Istio `VirtualService` and `DestinationRule` (YAML, several documents allowed).
    Istio,
    /// Linkerd `ServiceProfile` and the 2.16+ `retry.linkerd.io/*` annotations.
    Linkerd,
    /// An AWS SDK shared config file (`~/.aws/config`).
    Aws,
    /// Resilience4j, configured through a Spring Boot `application.yml`.
    Resilience4j,
}

impl System {
    /// Every system, in report order.
    pub const ALL: [System; 6] = [
        System::Grpc,
        System::Envoy,
        System::Istio,
        System::Linkerd,
        System::Aws,
        System::Resilience4j,
    ];

    /// The name as written on the command line and in JSON.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            System::Grpc => "grpc",
            System::Envoy => "envoy",
            System::Istio => "istio",
            System::Linkerd => "linkerd",
            System::Aws => "aws",
            System::Resilience4j => "resilience4j",
        }
    }

    /// The system named `s` (as [`as_str`](Self::as_str) spells it).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|x| x.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for System {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One file to check: its name (as reported) and its text.
#[derive(Clone, Debug)]
pub struct Input {
    /// The name findings and errors cite.
    pub file: String,
    /// The file's contents.
    pub text: String,
    /// The system, when the caller knows it; detected from the text otherwise.
    pub system: Option<System>,
}

impl Input {
    /// A file whose system is detected from its text.
    #[must_use]
    pub fn new(file: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            text: text.into(),
            system: None,
        }
    }
}

/// The backoff between attempts, as one of herd's rules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// The herd rule whose pauses are the system's.
    pub rule: RuleName,
    /// The first pause's scale (`base`).
    pub base: Duration,
    /// The largest pause (`cap`).
    pub cap: Duration,
    /// Growth per failure.
    pub multiplier: f64,
    /// For ± jitter (`grpc`, `grpc-retry`, `randomized`), the fraction; 1 for full jitter;
    /// 0 for none.
    pub jitter: f64,
}

impl Backoff {
    /// No pause at all: a retry goes out at once (Linkerd's proxy; a method without retries).
    pub(crate) const IMMEDIATE: Backoff = Backoff {
        rule: RuleName::Immediate,
        base: Duration::ZERO,
        cap: Duration::ZERO,
        multiplier: 1.0,
        jitter: 0.0,
    };

    /// Whether the rule spreads its pauses by a ± fraction ([`jitter`](Self::jitter)).
    #[must_use]
    pub fn is_plus_minus(&self) -> bool {
        matches!(
            self.rule,
            RuleName::Grpc | RuleName::GrpcRetry | RuleName::Randomized
        )
    }

    /// Whether the pauses are random at all: a jittered rule, and a ± rule with a jitter
    /// above 0 (Resilience4j's exponential backoff is `randomized` without jitter).
    #[must_use]
    pub fn is_random(&self) -> bool {
        self.rule.is_jittered() && !(self.is_plus_minus() && self.jitter == 0.0)
    }
}

/// A budget or throttle on retries, named as the simulator's throttles are.
#[derive(Clone, Debug, PartialEq)]
pub struct Throttle {
    /// `ratio`, `grpc`, `envoy-budget`, `envoy-max-retries`, `aws-standard`, `aws-adaptive`.
    pub kind: &'static str,
    /// Its parameters, in snake case after the system's own fields.
    pub params: Vec<(&'static str, f64)>,
}

impl Throttle {
    /// The parameter `name`, if present.
    #[must_use]
    pub fn param(&self, name: &str) -> Option<f64> {
        self.params
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// gRPC's hedging: copies sent without waiting for a failure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hedging {
    /// Copies in all, the first included, after the clamp to 5.
    pub max_attempts: u32,
    /// Delay between copies (zero: all at once).
    pub delay: Duration,
}

/// One retry policy of one file, in herd's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct Translation {
    /// The file it came from.
    pub file: String,
    /// The line where the policy (or the object that implies it) starts.
    pub line: usize,
    /// The system whose semantics apply.
    pub system: System,
    /// The method, route, profile or instance it governs.
    pub name: String,
    /// Attempts per call, the first included, after the system's own clamps; `None` when
    /// a budget, not a count, bounds them (Linkerd's `ServiceProfile`).
    pub max_attempts: Option<u32>,
    /// Each attempt's timeout, if any.
    pub per_try_timeout: Option<Duration>,
    /// The whole call's timeout (covering every attempt), if any.
    pub timeout: Option<Duration>,
    /// The pauses between attempts.
    pub backoff: Backoff,
    /// What is retried (status codes, conditions, exception classes), as the file spells it.
    pub retry_on: Vec<String>,
    /// HTTP methods the policy is known to apply to (from a route's match); empty if any.
    pub methods: Vec<String>,
    /// The budget or throttle, if any.
    pub throttle: Option<Throttle>,
    /// Hedging, if configured instead of retries.
    pub hedging: Option<Hedging>,
    /// The fields (in the system's spelling) whose values came from its defaults.
    pub defaults: Vec<&'static str>,
    /// Lines of the fields that were set, for findings.
    pub field_lines: Vec<(&'static str, usize)>,
    /// Which clients' behaviour the translation describes, where the system's clients
    /// differ by version (AWS SDKs, gRPC implementations); `None` where they do not.
    pub generation: Option<Generation>,
}

impl Translation {
    /// The line of `field` when it was set, else the policy's line.
    #[must_use]
    pub fn line_of(&self, field: &str) -> usize {
        self.field_lines
            .iter()
            .find(|(f, _)| *f == field)
            .map_or(self.line, |(_, l)| *l)
    }

    /// Whether the policy retries at all.
    #[must_use]
    pub fn retries(&self) -> bool {
        self.max_attempts.is_none_or(|a| a > 1) || self.hedging.is_some()
    }
}

/// A generation of a system's clients: the versions whose retry behaviour a translation
/// describes, where the implementations of one system differ.
///
/// AWS's SDKs changed their standard mode in 2026 (the "retries 2.1" specification: a 50 ms
/// base for transient errors, a retry costing 14 tokens, standard as the default mode);
/// gRPC's implementations moved from A6's original `random(0, x)` to `x · random(0.8, 1.2)`
/// after A6 was revised in 2024. `docs/check.md` lists the sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Generation {
    /// The AWS SDKs' 2026 retry behaviour (the default).
    Aws2026,
    /// The AWS SDKs before the 2026 change (`--aws-retries classic`).
    AwsClassic,
    /// gRPC's retry backoff with ±20 % jitter after the cap (the default).
    GrpcJitter20,
    /// gRPC's retry backoff drawn uniformly from `[0, x)` (A6's original text).
    GrpcUniform,
}

impl Generation {
    /// The name as written in JSON: `aws-2026`, `aws-classic`, `grpc-jitter-20`,
    /// `grpc-uniform`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Generation::Aws2026 => "aws-2026",
            Generation::AwsClassic => "aws-classic",
            Generation::GrpcJitter20 => "grpc-jitter-20",
            Generation::GrpcUniform => "grpc-uniform",
        }
    }

    /// The client versions whose behaviour this generation is.
    #[must_use]
    pub const fn clients(self) -> &'static str {
        match self {
            Generation::Aws2026 => {
                "botocore >= 1.44.0 (its default); with AWS_NEW_RETRIES_2026=true: botocore 1.43 \
                 (1.43.127 measured), aws-sdk-java-v2 >= 2.44.0, aws-sdk-js-v3 >= 3.1048.0, \
                 AWSSDK.Core >= 4.0.4.0, aws-sdk-rust (smithy-rs RetrySpec::v2_1), aws-sdk-go-v2"
            }
            Generation::AwsClassic => {
                "botocore < 1.44.0, and the other AWS SDKs without AWS_NEW_RETRIES_2026=true"
            }
            Generation::GrpcJitter20 => {
                "gRPC core (grpcio, grpc C++, Ruby, PHP) since 2024, grpc-go >= 1.70.0, \
                 grpc-java since 2026 (0.8 to 1.2)"
            }
            Generation::GrpcUniform => {
                "grpc-go < 1.70.0 (Debian's 1.33), grpc-java before 2025, grpc-js (Node) to date"
            }
        }
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which AWS SDK generation [`read_with`] translates AWS shared config files for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AwsRetries {
    /// Today's SDKs: botocore >= 1.44.0 and the SDKs' 2026 retry behaviour
    /// ([`Generation::Aws2026`]).
    #[default]
    V2026,
    /// The SDKs before the 2026 change: botocore 1.43 and earlier
    /// ([`Generation::AwsClassic`]).
    Classic,
}

/// Which gRPC implementations' retry backoff [`read_with`] translates service configs for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrpcRetries {
    /// `min(b · m^(n−1), cap) · U[0.8, 1.2)`: gRPC core, newer grpc-go and grpc-java
    /// ([`Generation::GrpcJitter20`]).
    #[default]
    Jitter20,
    /// `U[0, min(b · m^(n−1), cap))`: A6's original text, grpc-go before 1.70.0, grpc-js
    /// ([`Generation::GrpcUniform`]).
    Uniform,
}

/// gRPC's status codes, by number (grpc/grpc `doc/statuscodes.md`): the names a service
/// config's `retryableStatusCodes` may use, and what a number there means.
pub const GRPC_STATUS_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Likely to hurt in an outage.
    Warning,
    /// Wrong: the configuration does something its author cannot have meant.
    Error,
}

impl Severity {
    /// `info`, `warning` or `error`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// The severity named `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [Severity::Info, Severity::Warning, Severity::Error]
            .into_iter()
            .find(|x| x.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something a configuration does that its owner should know, with the fix.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    /// How serious it is.
    pub severity: Severity,
    /// A stable name (`no-jitter`, `clamped`, …), listed in `docs/check.md`.
    pub code: &'static str,
    /// The file at fault.
    pub file: String,
    /// The line at fault (the first of [`places`](Self::places)).
    pub line: usize,
    /// What happens.
    pub message: String,
    /// What to change.
    pub fix: String,
    /// Every place the cause applies to (a finding is raised once per cause: one channel's
    /// missing throttle covers each of its methods), in line order.
    pub places: Vec<Place>,
}

/// One place a finding applies to: a policy, by its line and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The policy's line (or the field's).
    pub line: usize,
    /// The method, route, profile or instance.
    pub name: String,
}

/// A key that no translator reads: listed, never silently dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    /// The file.
    pub file: String,
    /// The key's line.
    pub line: usize,
    /// The key's path (`spec.http[0].mirror`).
    pub field: String,
}

/// Something a reader saw that is neither a policy nor a fault: a route whose retries are
/// disabled (`attempts: 0`, `num_retries: 0`), and, for a file that holds no retry policy, what
/// was looked at and why nothing matched (line 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// The file.
    pub file: String,
    /// The line (0 for the whole file).
    pub line: usize,
    /// What was seen.
    pub message: String,
}

/// What [`read`] found in a set of files.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Every policy found, in file order, those that do not retry included (a method config
    /// with a timeout only, a disabled route), since a hop without retries still matters on a
    /// call path; [`retry_policies`](Self::retry_policies) counts those that retry.
    pub configs: Vec<Translation>,
    /// What they do that their owners should know, in file and line order.
    pub findings: Vec<Finding>,
    /// Keys read by no translator.
    pub ignored: Vec<Ignored>,
    /// Disabled routes, and why a file gave no retry policy.
    pub notes: Vec<Note>,
}

impl Report {
    /// The policies that retry (or hedge): what "N retry policies" counts.
    pub fn retry_policies(&self) -> impl Iterator<Item = &Translation> {
        self.configs.iter().filter(|t| t.retries())
    }
}

/// A file that cannot be read as its system's configuration: one line naming the file, the
/// line and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    /// The file.
    pub file: String,
    /// The line (1-based; 0 when the whole file is at fault).
    pub line: usize,
    /// The field's path, empty when the problem is not one field's.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl CheckError {
    /// The error at `line` (0: the whole file) of `file`, in `field` (empty: no one field).
    #[must_use]
    pub fn new(file: &str, line: usize, field: &str, message: impl Into<String>) -> Self {
        Self {
            file: file.to_owned(),
            line,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if self.field.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for CheckError {}

/// What one translator returns for one file.
#[derive(Debug, Default)]
pub(crate) struct Translated {
    pub(crate) configs: Vec<Translation>,
    pub(crate) findings: Vec<Finding>,
    /// What the translator looked at (`2 virtual hosts with 5 routes`), said when the file
    /// yields no retry policy.
    pub(crate) looked_at: String,
}

/// Reads every input and translates its retry policies, with the findings the readers
/// themselves raise, in file order.
///
/// # Errors
///
/// The first input that is malformed (not JSON, YAML, INI or properties) or of no known
/// system, as a [`CheckError`]; an entry out of range is a finding instead.
pub fn read(inputs: &[Input]) -> Result<Report, CheckError> {
    read_with(inputs, ReadOptions::default())
}

/// Which client generations [`read_with`] reads files for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Which AWS SDK generation AWS shared config files are read for.
    pub aws_retries: AwsRetries,
    /// Which gRPC implementations' backoff service configs are read for.
    pub grpc_retries: GrpcRetries,
}

impl ReadOptions {
    /// These options with `aws_retries` set.
    #[must_use]
    pub const fn with_aws_retries(mut self, aws_retries: AwsRetries) -> Self {
        self.aws_retries = aws_retries;
        self
    }

    /// These options with `grpc_retries` set.
    #[must_use]
    pub const fn with_grpc_retries(mut self, grpc_retries: GrpcRetries) -> Self {
        self.grpc_retries = grpc_retries;
        self
    }
}

/// [`read`], for the client generations `options` name.
///
/// # Errors
///
/// As [`read`].
pub fn read_with(inputs: &[Input], options: ReadOptions) -> Result<Report, CheckError> {
    let mut report = Report::default();
    for input in inputs {
        depth::check_depth(&input.file, &input.text)?;
        let text = tree::strip_bom(&input.text);
        let system = match input.system {
            Some(s) => s,
            None => detect(&input.file, text)?,
        };
        let mut reader = tree::Reader::new(&input.file, system);
        let translated = match system {
            System::Grpc => grpc::translate(&mut reader, text, options.grpc_retries)?,
            System::Envoy => envoy::translate(&mut reader, text)?,
            System::Istio => istio::translate(&mut reader, text)?,
            System::Linkerd => linkerd::translate(&mut reader, text)?,
            System::Aws => aws::translate(&mut reader, text, options.aws_retries)?,
            System::Resilience4j => resilience4j::translate(&mut reader, text)?,
        };
        if !translated.configs.iter().any(Translation::retries) {
            let looked_at = if translated.looked_at.is_empty() {
                format!("read as {system}")
            } else {
                translated.looked_at
            };
            reader.note(0, format!("no retry policy: {looked_at}"));
        }
        report.configs.extend(translated.configs);
        report.findings.extend(translated.findings);
        report.findings.extend(reader.findings);
        report.ignored.extend(reader.ignored);
        report.notes.extend(reader.notes);
    }
    Ok(report)
}

/// The finding `code` for `t` at the line of `field`.
#[must_use]
pub fn finding(
    t: &Translation,
    severity: Severity,
    code: &'static str,
    field: &str,
    message: String,
    fix: String,
) -> Finding {
    let line = t.line_of(field);
    Finding {
        severity,
        code,
        file: t.file.clone(),
        line,
        message,
        fix,
        places: vec![Place {
            line,
            name: t.name.clone(),
        }],
    }
}
