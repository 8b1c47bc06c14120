//! What the failing backend answers, and which answers each system's retry conditions retry.
//!
//! The faults answer with the system's "unavailable" answer unless `--failure-status` names
//! another: an HTTP 503 or, for gRPC traffic, the status `UNAVAILABLE` (Envoy answers a gRPC
//! request's local 503 with `grpc-status: 14`, `source/common/http/utility.cc`,
//! `sendLocalReply`), a throttling error for the AWS SDKs. A policy that retries neither
//! shows it: its users meet every failure.
//!
//! Which conditions retry what, as the systems define them:
//! - Envoy and Istio (the router filter's `x-envoy-retry-on`,
//!   `source/common/router/retry_state_impl.cc`): `5xx` any 5xx status and a timed-out or
//!   reset attempt; `gateway-error` 502, 503, 504 and a timed-out attempt; `reset` a
//!   timed-out attempt; `retriable-status-codes` the codes listed; the gRPC conditions
//!   (`unavailable`, `cancelled`, `deadline-exceeded`, `internal`, `resource-exhausted`) the
//!   `grpc-status` of that name;
//! - gRPC: `retryableStatusCodes` (an HTTP status reaches a gRPC client as the code of the
//!   gRPC spec's `doc/http-grpc-status-mapping.md`: 429, 502, 503, 504 are `UNAVAILABLE`);
//!   a per-attempt timeout is retried when `CANCELLED` or `DEADLINE_EXCEEDED` is listed;
//! - Linkerd: `5xx`, `gateway-error`, codes and ranges in `retry.linkerd.io/http`, gRPC
//!   names in `retry.linkerd.io/grpc`; a `ServiceProfile`'s retryable route retries what its
//!   response classes call failures, 5xx by default;
//! - AWS SDKs (botocore `retryhandler.py`, standard mode): throttling errors, 429, 500, 502,
//!   503, 504 and connection errors and timeouts (transient errors);
//! - Resilience4j: every exception unless `retryExceptions` lists classes; the HTTP client's
//!   exception for a status is taken to be among them (herd cannot see the classpath).
use std::fmt;

use crate::check::System;

/// The status the failing backend answers with (`--failure-status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum FailureStatus {
    /// The system's "unavailable" answer: HTTP 503, or gRPC `UNAVAILABLE` for gRPC traffic.
    #[default]
    Unavailable,
    /// An HTTP status, 500–599 or 429.
    Http(u16),
    /// A gRPC status, by its name (`UNAVAILABLE`, `RESOURCE_EXHAUSTED`, …).
    Grpc(&'static str),
}

// gRPC's status codes in number order.
use herd_config::GRPC_STATUS_CODES as GRPC;

impl FailureStatus {
    /// `unavailable`, an HTTP status (429 or 500–599), or a gRPC status name other than `OK`.
    ///
    /// # Errors
    ///
    /// What is wrong with `s`, in one line.
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("unavailable") {
            return Ok(Self::Unavailable);
        }
        if let Ok(code) = s.parse::<u16>() {
            return if code == 429 || (500..=599).contains(&code) {
                Ok(Self::Http(code))
            } else {
                Err(format!(
                    "{code} is not a failure a backend answers under load (429 or 500-599)"
                ))
            };
        }
        let upper = s.to_ascii_uppercase().replace('-', "_");
        GRPC.iter()
            .skip(1)
            .find(|g| **g == upper)
            .map(|g| Self::Grpc(g))
            .ok_or_else(|| {
                format!("`{s}` is neither `unavailable`, an HTTP status nor a gRPC status name")
            })
    }

    fn retried_by(self, system: System, retry_on: &[String]) -> bool {
        match self {
            Self::Unavailable => {
                Self::Http(503).retried_by(system, retry_on)
                    || Self::Grpc("UNAVAILABLE").retried_by(system, retry_on)
            }
            Self::Http(code) => http_retried(code, system, retry_on),
            Self::Grpc(name) => grpc_retried(name, system, retry_on),
        }
    }
}

impl fmt::Display for FailureStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unavailable => f.write_str("unavailable (HTTP 503 / gRPC UNAVAILABLE)"),
            Self::Http(c) => write!(f, "HTTP {c}"),
            Self::Grpc(n) => write!(f, "gRPC {n}"),
        }
    }
}

fn has(retry_on: &[String], word: &str) -> bool {
    retry_on.iter().any(|c| c.trim().eq_ignore_ascii_case(word))
}

/// Whether `retry_on` names `code`, alone or in a Linkerd range `a-b`.
fn names_code(retry_on: &[String], code: u16) -> bool {
    retry_on.iter().any(|c| {
        let c = c.trim();
        match c.split_once('-') {
            Some((a, b)) => match (a.trim().parse::<u16>(), b.trim().parse::<u16>()) {
                (Ok(a), Ok(b)) => (a..=b).contains(&code),
                _ => false,
            },
            None => c.parse::<u16>() == Ok(code),
        }
    })
}

fn http_retried(code: u16, system: System, retry_on: &[String]) -> bool {
    let server = (500..=599).contains(&code);
    let gateway = (502..=504).contains(&code);
    match system {
        System::Envoy | System::Istio => {
            (server && has(retry_on, "5xx"))
                || (gateway && has(retry_on, "gateway-error"))
                || names_code(retry_on, code)
        }
        System::Linkerd => {
            (server && has(retry_on, "5xx"))
                || (gateway && has(retry_on, "gateway-error"))
                || names_code(retry_on, code)
                || (server && retry_on.iter().any(|c| c.starts_with("responseClasses")))
        }
        System::Grpc => grpc_retried(http_to_grpc(code), system, retry_on),
        System::Aws => code == 429 || matches!(code, 500 | 502 | 503 | 504),
        _ => true,
    }
}

/// gRPC's `doc/http-grpc-status-mapping.md`, for the codes a backend fails with.
fn http_to_grpc(code: u16) -> &'static str {
    match code {
        429 | 502 | 503 | 504 => "UNAVAILABLE",
        _ => "UNKNOWN",
    }
}

fn grpc_retried(name: &str, system: System, retry_on: &[String]) -> bool {
    match system {
        System::Grpc => has(retry_on, name),
        System::Envoy | System::Istio | System::Linkerd => {
            has(retry_on, &name.to_ascii_lowercase().replace('_', "-"))
        }
        System::Aws => matches!(name, "UNAVAILABLE" | "RESOURCE_EXHAUSTED"),
        _ => true,
    }
}

/// How an attempt failed, as the hop above it sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The backend's failure, or a hop below that gave up and passed it up unchanged
    /// (Envoy returns the upstream's last answer).
    Failure(FailureStatus),
    /// A per-try or whole-call timeout fired (Envoy's 504, gRPC's `DEADLINE_EXCEEDED`).
    Timeout,
    /// A hop below gave up and answered a status nobody retries (a service that turns its
    /// upstream's failure into a 500).
    Internal,
}

impl Answer {
    pub(crate) fn retried_by(self, system: System, retry_on: &[String]) -> bool {
        match self {
            Answer::Internal => false,
            Answer::Failure(s) => s.retried_by(system, retry_on),
            Answer::Timeout => match system {
                System::Envoy | System::Istio => {
                    has(retry_on, "5xx") || has(retry_on, "gateway-error") || has(retry_on, "reset")
                }
                System::Grpc => has(retry_on, "CANCELLED") || has(retry_on, "DEADLINE_EXCEEDED"),
                System::Linkerd => !retry_on.is_empty(),
                _ => true,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(words: &str) -> Vec<String> {
        words.split(',').map(str::to_owned).collect()
    }

    #[test]
    fn each_system_retries_what_its_conditions_name() {
        let istio_default =
            on("connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes");
        let u = FailureStatus::Unavailable;
        assert!(Answer::Failure(u).retried_by(System::Istio, &istio_default));
        assert!(
            !Answer::Failure(FailureStatus::Http(503)).retried_by(System::Istio, &istio_default)
        );
        assert!(Answer::Failure(FailureStatus::Http(503)).retried_by(System::Envoy, &on("5xx")));
        assert!(
            !Answer::Failure(FailureStatus::Http(500))
                .retried_by(System::Envoy, &on("gateway-error"))
        );
        assert!(Answer::Failure(u).retried_by(System::Grpc, &on("UNAVAILABLE")));
        assert!(!Answer::Failure(u).retried_by(System::Grpc, &on("DEADLINE_EXCEEDED")));
        assert!(
            Answer::Failure(FailureStatus::Http(503)).retried_by(System::Linkerd, &on("500-504"))
        );
        assert!(!Answer::Internal.retried_by(System::Envoy, &on("5xx")));
        assert!(!Answer::Timeout.retried_by(System::Istio, &istio_default));
        assert!(Answer::Timeout.retried_by(System::Envoy, &on("gateway-error")));
    }

    #[test]
    fn failure_status_is_read_or_refused_in_one_line() {
        assert_eq!(FailureStatus::parse("503"), Ok(FailureStatus::Http(503)));
        assert_eq!(
            FailureStatus::parse("resource-exhausted"),
            Ok(FailureStatus::Grpc("RESOURCE_EXHAUSTED"))
        );
        assert!(FailureStatus::parse("200").unwrap_err().contains("200"));
        assert!(FailureStatus::parse("OK").is_err());
    }
}
