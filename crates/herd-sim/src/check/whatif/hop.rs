//! One hop's retry loop, from a translated policy: the library's rule, the attempts, the
//! per-try and whole-call timeouts, the throttle as the library's own type, and which of the
//! failing backend's answers the policy retries.
use std::time::Duration;

use herd::{Rule, RuleParams};

use super::answer::Answer;
use crate::check::{System, Translation};
use crate::error::ScenarioError;
use crate::partial::gate::GateSpec;

/// The most attempts one hop makes when no count bounds them (a budget-bound Linkerd
/// `ServiceProfile`): its budget and timeout end the call long before.
const UNBOUNDED: u32 = 1000;

/// One hop's retry loop, checked and ready to run.
#[derive(Clone, Debug)]
pub(crate) struct Hop {
    pub(crate) system: System,
    /// Attempts per call, the first included.
    pub(crate) max_attempts: u32,
    pub(crate) rule: Rule,
    pub(crate) per_try_ns: Option<u64>,
    pub(crate) timeout_ns: Option<u64>,
    pub(crate) gate: GateSpec,
    /// The policy's retry conditions, as the file spells them.
    retry_on: Vec<String>,
    /// What the simulation could not express, said.
    pub(crate) notes: Vec<String>,
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Hop {
    /// The hop `t` describes.
    ///
    /// # Errors
    ///
    /// A backoff the library's rule refuses, naming the policy.
    pub(crate) fn of(t: &Translation) -> Result<Self, ScenarioError> {
        let mut notes = Vec::new();
        let b = t.backoff;
        let mut params = RuleParams::default();
        params.base = b.base.max(Duration::from_nanos(1));
        params.cap = b.cap.max(params.base);
        params.pause = params.base;
        params.multiplier = b.multiplier;
        params.jitter = b.jitter;
        let rule = b.rule.build(&params).map_err(|e| {
            ScenarioError::field(
                "policy",
                format!("{}:{} {}: backoff {}: {e}", t.file, t.line, t.name, b.rule),
            )
        })?;
        let mut max_attempts = t.max_attempts.unwrap_or(UNBOUNDED).max(1);
        if let Some(h) = t.hedging {
            notes.push(format!(
                "hedging run as retries: a failed copy is followed by the next ({} ms apart at most)",
                herd::rule::format_ms(h.delay)
            ));
            max_attempts = h.max_attempts.max(1);
        }
        let gate = match &t.throttle {
            None => GateSpec::None,
            Some(th) => match crate::check::storm::throttle_table(th)
                .and_then(|table| table.check().map_err(|e| e.to_string()))
            {
                Ok(spec) => GateSpec::Throttle(spec),
                Err(why) => {
                    notes.push(format!(
                        "throttle not simulated: {} ({why}); the run goes without it",
                        th.kind
                    ));
                    GateSpec::None
                }
            },
        };
        Ok(Self {
            system: t.system,
            max_attempts,
            rule,
            per_try_ns: t.per_try_timeout.map(nanos).filter(|n| *n > 0),
            timeout_ns: t.timeout.map(nanos).filter(|n| *n > 0),
            gate,
            retry_on: t.retry_on.clone(),
            notes,
        })
    }

    /// Whether this hop retries `answer` from the hop (or the backend) below.
    pub(crate) fn retries(&self, answer: Answer) -> bool {
        answer.retried_by(self.system, &self.retry_on)
    }

    /// The longest a whole call of this hop takes when every attempt fails after
    /// `attempt_ns` (the hop below's own window): its pauses at their largest, each attempt
    /// cut at the per-try timeout, the whole cut at the call's timeout.
    pub(crate) fn window_ns(&self, attempt_ns: u64) -> u64 {
        let attempt = self.per_try_ns.map_or(attempt_ns, |p| p.min(attempt_ns));
        let attempts = self.max_attempts.min(64);
        let mut total = attempt.saturating_mul(u64::from(attempts));
        let mut state = herd::RuleState::default();
        for _ in 1..attempts {
            // The top of every jitter's range: a generator that always draws its largest value.
            total = total.saturating_add(self.rule.pause_nanos(&mut state, &mut Top));
        }
        self.timeout_ns.map_or(total, |t| t.min(total))
    }
}

/// A generator that always draws its largest value: the top of every jitter's range.
struct Top;

impl herd::rng::Rng for Top {
    fn next_u64(&mut self) -> u64 {
        u64::MAX
    }
}
