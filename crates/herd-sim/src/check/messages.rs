//! Every message `herd check` can report, in one table: its stable code, its level, what it
//! means with the remedy in one line, and the heading of `docs/check.md` that explains it.
//!
//! As istio's `pkg/config/analysis/msg` keeps one table of messages apart from the analyzers
//! that raise them, so that a code, its level and its page never drift apart: the analyzers
//! ([`super::findings::ANALYZERS`]) and the translators name a code from this table; `herd
//! check --list` prints it; `--format sarif` makes one rule of each entry; a suppression
//! (`# herd:ignore CODE`, `--ignore CODE`) names a code. A test checks that every code a
//! finding carries is here and has its heading in `docs/check.md`.
use super::Severity;

/// One kind of finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// The stable code (`no-jitter`): findings, suppressions and SARIF rules use it.
    pub code: &'static str,
    /// How serious a finding of this kind is.
    pub level: Severity,
    /// What it means and what to do, in one line (the finding's own message says where and
    /// with which values).
    pub help: &'static str,
}

impl Message {
    /// The anchor of the code's heading in `docs/check.md` (the code itself: each code has a
    /// heading `` ### `code` ``).
    #[must_use]
    pub const fn anchor(&self) -> &'static str {
        self.code
    }
}

/// The page whose headings explain each code.
pub const DOCS_PAGE: &str = "docs/check.md";

const fn m(code: &'static str, level: Severity, help: &'static str) -> Message {
    Message { code, level, help }
}

use Severity::{Error, Info, Warning};

/// Every message, grouped by the analyzer that raises it (the translators' last).
pub const MESSAGES: &[Message] = &[
    m(
        "no-jitter",
        Warning,
        "The pauses between attempts are not random: clients that fail together retry together. Draw each pause at random (full jitter).",
    ),
    m(
        "no-backoff-under-budget",
        Info,
        "Linkerd retries at once, with no pause; its retry budget bounds the load. Nothing to add in Linkerd; retry in the client with jitter if the budget is large.",
    ),
    m(
        "jitter-too-small",
        Warning,
        "The random spread is below 10 % of each pause: clients that failed together still arrive together. Spread pauses over at least half their length.",
    ),
    m(
        "jitter-lost-at-cap",
        Warning,
        "Resilience4j's randomized exponential wait grows past its maximum, after which every client waits exactly the maximum, together. Raise the maximum or lower maxAttempts.",
    ),
    m(
        "per-try-not-below-timeout",
        Warning,
        "The per-try timeout is not below the whole call's timeout: an attempt that times out is never retried. Set it to at most timeout / attempts.",
    ),
    m(
        "timeout-below-attempts",
        Info,
        "attempts × per-try timeout exceeds the whole call's timeout: the last attempts never run. Raise the timeout or lower the per-try timeout.",
    ),
    m(
        "no-per-try-timeout",
        Info,
        "Envoy or Istio retries with a route timeout but no per-try timeout: a hung attempt uses the whole timeout. Set a per-try timeout.",
    ),
    m(
        "retries-deadline",
        Warning,
        "A deadline or timeout status is retried: a retry meets the same slow server. Remove it from the retried conditions.",
    ),
    m(
        "retries-unauthenticated",
        Warning,
        "A request refused for its credentials (401, 403, UNAUTHENTICATED, PERMISSION_DENIED) is retried and refused again. Remove it from the retried conditions.",
    ),
    m(
        "retries-non-idempotent",
        Error,
        "A route matching POST, PATCH or CONNECT retries: a request the server did process runs twice. Disable retries there or make the handler idempotent.",
    ),
    m(
        "no-retry-on",
        Info,
        "An Envoy retry_policy names no retry_on condition: it retries nothing unless a request's x-envoy-retry-on header names one. Set retry_on or remove the policy.",
    ),
    m(
        "no-budget",
        Warning,
        "Nothing but a count bounds retries: in an outage every call is attempted the full count. Bound retries by a budget (about 10-20 % of requests).",
    ),
    m(
        "hedging-without-throttling",
        Warning,
        "gRPC hedging with no retryThrottling: when the server slows down, load multiplies. Add retryThrottling.",
    ),
    m(
        "unbounded-max-retries",
        Warning,
        "maxRetries (Envoy's circuit breaker on concurrent retries) is a million or more, Istio's default 2^32 - 1: it never limits retries. Set it to a few per caller, or a retry budget.",
    ),
    m(
        "budget-floor",
        Info,
        "A retry budget's floor (minRetriesPerSecond, min_retry_concurrency) dominates below some traffic: a quiet service may retry every request. Lower the floor.",
    ),
    m(
        "multiple-layers",
        Warning,
        "With --call-path: retries at more than one hop, so the bottom sees the attempts multiplied. Retry at one layer only.",
    ),
    m(
        "clamped",
        Warning,
        "A value the system silently lowers (gRPC's maxAttempts above 5): the file says more than the system does. Write the value the system uses.",
    ),
    m(
        "ignored-backoff",
        Warning,
        "A Resilience4j backoff option that Spring's binding drops: the instance waits as if it were not set. Use the option Resilience4j reads.",
    ),
    m(
        "ignored-field",
        Warning,
        "A Resilience4j option that Spring's binding drops in this combination. Move it where it is read.",
    ),
    m(
        "invalid-entry",
        Error,
        "One entry (a method config, route, profile or instance) the system refuses; the finding says what the system does with it (grpc-go rejects the whole service config, an AWS SDK fails when the profile is used). The other entries were read. Correct the entry.",
    ),
    m(
        "misspelt-key",
        Warning,
        "A key the system does not know, one or two letters from a retry setting it does: the system ignores it without a word and applies its default. Use the name the finding suggests.",
    ),
];

/// The message of `code`, if it is one of [`MESSAGES`].
#[must_use]
pub fn message(code: &str) -> Option<&'static Message> {
    MESSAGES.iter().find(|m| m.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_each_has_a_heading_in_the_guide() {
        let guide = include_str!("../../../../docs/check.md");
        for (i, m) in MESSAGES.iter().enumerate() {
            assert!(
                MESSAGES[..i].iter().all(|o| o.code != m.code),
                "{} twice",
                m.code
            );
            assert!(
                guide.contains(&format!("\n### `{}`\n", m.code)),
                "docs/check.md has no heading ### `{}`",
                m.code
            );
            assert!(
                !m.help.contains('\n') && m.help.ends_with('.'),
                "{}",
                m.code
            );
        }
    }
}
