//! Why a retry policy could not be built: the one error of the policy's builder and of
//! [`ServerDelayLimits::new`](crate::server_delay::ServerDelayLimits::new), kept apart from both
//! so that each builds on it (public as `herd::policy::InvalidPolicy`).

use std::fmt;

/// Why a policy could not be built. Each variant names the field.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum InvalidPolicy {
    /// `max_attempts` must be at least 1.
    MaxAttempts,
    /// `deadline` must be longer than zero.
    Deadline,
    /// `attempt_timeout` must be longer than zero.
    AttemptTimeout,
    /// `server_delay_jitter` must be a fraction in `[0, 1]`.
    ServerDelayJitter(f64),
}

impl fmt::Display for InvalidPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidPolicy::MaxAttempts => f.write_str("max_attempts must be at least 1"),
            InvalidPolicy::Deadline => f.write_str("deadline must be longer than zero"),
            InvalidPolicy::AttemptTimeout => {
                f.write_str("attempt_timeout must be longer than zero")
            }
            InvalidPolicy::ServerDelayJitter(j) => {
                write!(
                    f,
                    "server_delay_jitter must be a fraction in [0, 1], got {j}"
                )
            }
        }
    }
}

impl std::error::Error for InvalidPolicy {}
