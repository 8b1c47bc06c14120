//! Enough file descriptors for the storm, checked before it starts.
//!
//! Every client holds a socket, and the server holds the other end of it: a storm of N
//! clients needs about 2·N descriptors. Past the process's soft `RLIMIT_NOFILE`, `connect`
//! and `accept` fail, attempts are lost on the wire, and the figures describe another storm.
//! So the lab raises the soft limit when the hard limit allows, and otherwise refuses before
//! starting, saying how many descriptors it needs.
use super::LabStormError;

/// Descriptors the process needs besides the sockets: the runtime, stdio, the listener.
pub const SPARE_DESCRIPTORS: u64 = 64;

/// Descriptors a storm of `clients` clients needs: one socket per client on each side.
#[must_use]
pub fn needed(clients: u64) -> u64 {
    clients.saturating_mul(2).saturating_add(SPARE_DESCRIPTORS)
}

/// What the check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descriptors {
    /// The soft limit was already enough.
    Enough {
        /// The soft limit.
        soft: u64,
    },
    /// The soft limit was raised, up to the hard limit.
    Raised {
        /// The soft limit before.
        from: u64,
        /// The soft limit now.
        to: u64,
    },
}

/// Makes sure the process may open `needed` descriptors, raising the soft limit if it must.
///
/// # Errors
///
/// [`LabStormError::Input`] when the hard limit is below `needed` (or the limit cannot be
/// raised), saying how many descriptors the run needs and how to raise the limit.
pub fn ensure(needed: u64, clients: u64) -> Result<Descriptors, LabStormError> {
    ensure_for(needed, &format!("{clients} clients"), "use fewer --clients")
}

/// As [`ensure`], for any run: `who` needs the descriptors (`"200 clients"`), and `fewer`
/// says how to need fewer (`"use fewer --clients"`).
///
/// # Errors
///
/// As [`ensure`].
pub fn ensure_for(needed: u64, who: &str, fewer: &str) -> Result<Descriptors, LabStormError> {
    #[cfg(unix)]
    {
        use rlimit::Resource;
        let (soft, hard) = Resource::NOFILE
            .get()
            .map_err(|e| LabStormError::Run(format!("reading the descriptor limit: {e}")))?;
        if soft >= needed {
            return Ok(Descriptors::Enough { soft });
        }
        let refuse = |why: String| {
            LabStormError::Input(format!(
                "{who} need about {needed} file descriptors, and {why}; raise the limit \
                 (`ulimit -n {needed}` in this shell, or the hard limit in \
                 /etc/security/limits.conf) or {fewer}"
            ))
        };
        if hard < needed {
            return Err(refuse(format!("the limit is {soft} (hard limit {hard})")));
        }
        let to = hard.min(needed.max(soft).saturating_mul(2)).max(needed);
        Resource::NOFILE
            .set(to, hard)
            .map_err(|e| refuse(format!("raising the limit from {soft} failed: {e}")))?;
        Ok(Descriptors::Raised { from: soft, to })
    }
    #[cfg(not(unix))]
    {
        let _ = (needed, who, fewer);
        Ok(Descriptors::Enough { soft: u64::MAX })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_per_client_and_some_spare() {
        assert_eq!(needed(200), 464);
        assert_eq!(needed(u64::MAX), u64::MAX);
    }

    #[test]
    fn a_small_need_is_met() {
        assert!(ensure(8, 1).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn more_than_the_hard_limit_is_refused_with_the_number() {
        let (_, hard) = rlimit::Resource::NOFILE.get().unwrap();
        if hard == rlimit::INFINITY {
            return;
        }
        let err = ensure(hard + 1, 1).unwrap_err().to_string();
        assert!(err.contains(&format!("need about {}", hard + 1)), "{err}");
        assert!(err.contains("ulimit -n"), "{err}");
    }
}
