//! Caps on the size of a run, so that an absurd scenario is refused up front instead of
//! exhausting the machine, and so that a server (the interactive page) can bound the work
//! one request may cause.
use std::fs;

use crate::error::ScenarioError;

/// The largest run a [`Simulation`](crate::Simulation) accepts.
///
/// [`Limits::default`] is [`Limits::machine`]: as many clients as fit in the memory the
/// machine has available. A web API should use [`Limits::interactive`] or tighter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most clients in one run (the burst plus open-loop arrivals). Never above `u32::MAX - 1`.
    pub max_clients: u64,
    /// Most time steps in the horizon. Never above `u32::MAX`.
    pub max_steps: u64,
    /// Most bytes the run's state may need (clients, calendar, per-window series).
    pub max_bytes: u64,
    /// Most attempts one run may simulate, all clients together, before it is stopped with an
    /// error (not `clients.max_attempts`, the attempts one client makes before it gives up).
    /// Each model counts its own unit of work against it: the storm's cohort engine, whose
    /// clients cost nothing, counts the random words it draws.
    pub max_run_attempts: u64,
}

/// Bytes assumed when the available memory cannot be read.
const FALLBACK_BYTES: u64 = 4 << 30;

impl Limits {
    /// The engine's hard ceilings, with memory as available on this machine.
    #[must_use]
    pub fn machine() -> Self {
        Self {
            max_bytes: available_memory().unwrap_or(FALLBACK_BYTES),
            ..Self::unlimited()
        }
    }

    /// Only the engine's hard ceilings (client ids and step numbers fit in `u32`).
    #[must_use]
    pub const fn unlimited() -> Self {
        Self {
            max_clients: u32::MAX as u64 - 1,
            max_steps: u32::MAX as u64,
            max_bytes: u64::MAX,
            max_run_attempts: u64::MAX,
        }
    }

    /// A size fit for answering a web request in well under a second.
    #[must_use]
    pub const fn interactive() -> Self {
        Self {
            max_clients: 200_000,
            max_steps: 10_000_000,
            max_bytes: 256 << 20,
            max_run_attempts: 50_000_000,
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::machine()
    }
}

/// The check an engine makes as a run goes: `used` units of its work (`what`: attempts,
/// random draws, cohorts waiting) against the most allowed, `most`. Past it, an error naming
/// `field`, the field whose change shrinks the run, with `advice` on how.
pub(crate) fn within(
    used: u64,
    most: u64,
    what: &str,
    field: &str,
    advice: &str,
) -> Result<(), ScenarioError> {
    if used > most {
        return Err(ScenarioError::field(
            field,
            format!("the run needs more than {most} {what}, the most allowed here ({advice})"),
        ));
    }
    Ok(())
}

/// `MemAvailable` from `/proc/meminfo`, in bytes (Linux only; `None` elsewhere).
fn available_memory() -> Option<u64> {
    let info = fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_limits_see_some_memory() {
        let limits = Limits::machine();
        assert!(limits.max_bytes >= 1 << 20);
        assert!(limits.max_clients < u64::from(u32::MAX));
    }
}
