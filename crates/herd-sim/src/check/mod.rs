//! Real retry configurations, read as their owners define them, translated into herd's terms,
//! judged, and run in a storm.
//!
//! The readers live in `herd_config`: it reads a gRPC service config, an Envoy route, an
//! Istio `VirtualService`, a Linkerd `ServiceProfile` or annotation, an AWS shared config file
//! or a Spring Boot `application.yml` for Resilience4j into [`Translation`]s, applying each
//! system's own defaults and clamps. This module judges them: [`check`] reads the files
//! through `herd_config` and adds the analyzers' [`Finding`]s (each with the file and line at
//! fault and the fix), and [`storm`] runs the storm model with a translation's semantics
//! beside its suggested fix. The reader's types are re-exported here, so
//! `herd_sim::check::Translation` and `herd_config::Translation` are one type.
//!
//! # Examples
//!
//! ```
//! use herd_sim::check::{self, Input, System};
//!
//! let text = r#"{"methodConfig": [{"name": [{"service": "echo.Echo"}],
//!   "retryPolicy": {"maxAttempts": 8, "initialBackoff": "0.1s", "maxBackoff": "1s",
//!   "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
//! let report = check::check(&[Input::new("svc.json", text)])?;
//! let t = &report.configs[0];
//! assert_eq!(t.system, System::Grpc);
//! assert_eq!(t.max_attempts, Some(5)); // gRPC treats maxAttempts above 5 as 5
//! assert!(report.findings.iter().any(|f| f.code == "clamped"));
//! # Ok::<(), herd_sim::check::CheckError>(())
//! ```
use std::time::Duration;

use herd_config::finding;
pub use herd_config::{
    AwsRetries, Backoff, CheckError, Finding, Generation, GrpcRetries, Hedging, Ignored, Input,
    Note, Place, ReadOptions, Report, Severity, System, Throttle, Translation, detect, strip_bom,
};

pub mod findings;
mod layers;
pub mod mesh;
pub mod messages;
pub mod storm;
pub mod whatif;

/// The guide, `docs/check.md`: what each system's fields mean, every default with its source,
/// the findings and the storm (compiled with the crate's docs).
#[doc = include_str!("../../../../docs/check.md")]
pub mod guide {}

/// How [`check_with`] reads several files together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckOptions {
    /// The files, and within a file its Kubernetes objects, are the hops of one call path,
    /// caller first: retries at more than one of them are the `multiple-layers` finding, and
    /// [`storm::compare_layers`] runs them together. Off, files are independent.
    pub call_path: bool,
    /// Which client generations the files are read for (AWS SDKs, gRPC implementations).
    pub read: ReadOptions,
}

impl CheckOptions {
    /// These options with `aws_retries` set ([`ReadOptions::with_aws_retries`]).
    #[must_use]
    pub const fn with_aws_retries(mut self, aws_retries: AwsRetries) -> Self {
        self.read = self.read.with_aws_retries(aws_retries);
        self
    }

    /// These options with `grpc_retries` set ([`ReadOptions::with_grpc_retries`]).
    #[must_use]
    pub const fn with_grpc_retries(mut self, grpc_retries: GrpcRetries) -> Self {
        self.read = self.read.with_grpc_retries(grpc_retries);
        self
    }

    /// These options with `call_path` set.
    #[must_use]
    pub const fn with_call_path(mut self, call_path: bool) -> Self {
        self.call_path = call_path;
        self
    }
}

/// Reads every input, translates its retry policies and judges each alone: [`check_with`]
/// with the default [`CheckOptions`] (files independent).
///
/// # Errors
///
/// As [`check_with`].
pub fn check(inputs: &[Input]) -> Result<Report, CheckError> {
    check_with(inputs, CheckOptions::default())
}

/// Reads every input (`herd_config::read`), translates its retry policies and judges them,
/// alone and, as `options` say, as the hops of one call path.
///
/// # Errors
///
/// The first input that is malformed, of no known system, or out of range, as a
/// [`CheckError`].
pub fn check_with(inputs: &[Input], options: CheckOptions) -> Result<Report, CheckError> {
    let mut report = herd_config::read_with(inputs, options.read)?;
    report
        .findings
        .extend(findings::analyze(&report.configs, options.call_path));
    report.findings = findings::once_per_cause(std::mem::take(&mut report.findings));
    // Files in the order given (the caller first), then lines.
    let order = |file: &str| inputs.iter().position(|i| i.file == file);
    report
        .findings
        .sort_by(|a, b| (order(&a.file), a.line, a.code).cmp(&(order(&b.file), b.line, b.code)));
    report.findings.dedup();
    Ok(report)
}

/// Milliseconds of a duration, for messages.
pub(crate) fn ms(d: Duration) -> String {
    herd::rule::format_ms(d)
}
