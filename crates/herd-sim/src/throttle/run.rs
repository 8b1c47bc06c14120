//! One run's throttle: the library's type on a fake clock set to each step, fed by the
//! agent engine (docs/model.md, "Throttles of real systems").
use std::time::Duration;

use herd::budget::RetryPermit;
use herd::clock::FakeClock;
use herd::rng::Rng;
use herd::throttle::{AwsErrorKind, AwsRequestKind, EnvoyActiveRequest, EnvoyRetryLimit};

use super::ThrottleSpec;
use super::library::LibraryThrottle as Kind;

impl ThrottleSpec {
    /// The library's type as a [`Budget`](herd::budget::Budget) on `clock`, as a Rust client
    /// plugs it into a hedge or a retry policy (settings already checked), and Envoy's limit
    /// itself, whose active requests the caller counts.
    pub(crate) fn budget(
        &self,
        clock: &FakeClock,
    ) -> (
        std::sync::Arc<dyn herd::budget::Budget>,
        Option<EnvoyRetryLimit>,
    ) {
        Kind::new(self, clock).into_budget()
    }
}

/// What a throttle says of a new client's first attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FirstAttempt {
    Send,
    /// Refused locally: the client gives up.
    Refuse,
    /// Sent this many steps later.
    Delay(u64),
}

/// One run's throttle on simulated time.
pub(crate) struct SimThrottle {
    clock: FakeClock,
    step_ns: u64,
    kind: Kind,
    /// The permits of the retries admitted and not yet answered (AWS quota, Envoy), all alike.
    held: Vec<RetryPermit>,
    /// The step's active requests (Envoy).
    active: Vec<EnvoyActiveRequest>,
}

impl SimThrottle {
    /// A fresh throttle for one run (settings already checked).
    pub(crate) fn new(spec: &ThrottleSpec, step_ns: u64) -> Self {
        let clock = FakeClock::new();
        let kind = Kind::new(spec, &clock);
        Self {
            clock,
            step_ns,
            kind,
            held: Vec::new(),
            active: Vec::new(),
        }
    }

    /// Moves to `step` with `arrivals` attempts under way (Envoy's active requests).
    pub(crate) fn at(&mut self, step: u64) {
        self.clock
            .set(Duration::from_nanos(step.saturating_mul(self.step_ns)));
        self.active.clear();
    }

    fn steps(&self, wait: Duration) -> u64 {
        let ns = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
        ns.div_ceil(self.step_ns).max(1)
    }

    /// A new client's first attempt.
    pub(crate) fn first_attempt<R: Rng + ?Sized>(&self, rng: &mut R) -> FirstAttempt {
        let send = |ok: bool| {
            if ok {
                FirstAttempt::Send
            } else {
                FirstAttempt::Refuse
            }
        };
        match &self.kind {
            Kind::Sre(t) => send(t.admit_with(rng)),
            Kind::Admission(t) => send(t.admit_with(rng)),
            Kind::AwsAdaptive(t) => match t.acquire(AwsRequestKind::InitialRequest) {
                Ok(()) => FirstAttempt::Send,
                Err(wait) => FirstAttempt::Delay(self.steps(wait)),
            },
            Kind::Ratio(b) => {
                b.deposit();
                FirstAttempt::Send
            }
            Kind::Aws(_) | Kind::Envoy(_) | Kind::Grpc(_) => FirstAttempt::Send,
        }
    }

    /// `arrivals` attempts reach the server this step.
    pub(crate) fn arriving(&mut self, arrivals: u64) {
        if let Kind::Envoy(limit) = &self.kind {
            self.active
                .extend((0..arrivals).map(|_| limit.start_request()));
        }
    }

    /// An attempt was answered: `served`, and whether it was a retry.
    pub(crate) fn answered(&mut self, served: bool, retry: bool) {
        match &self.kind {
            Kind::Sre(t) => t.record_response(served),
            Kind::Admission(t) => t.record(served),
            Kind::AwsAdaptive(t) => t.update(!served),
            Kind::Grpc(t) => {
                if served {
                    t.record_success();
                } else {
                    t.record_failure();
                }
            }
            Kind::Aws(q) => {
                if retry {
                    if let Some(permit) = self.held.pop()
                        && served
                    {
                        permit.succeeded();
                    }
                } else if served {
                    q.record_first_attempt_success();
                }
            }
            Kind::Envoy(_) => {
                if retry {
                    self.held.pop();
                }
            }
            Kind::Ratio(_) => {}
        }
    }

    /// The extra steps a retry waits for the rate limiter (`aws-adaptive`; 0 for the rest).
    pub(crate) fn retry_delay(&self) -> u64 {
        match &self.kind {
            Kind::AwsAdaptive(t) => match t.acquire(AwsRequestKind::Retry) {
                Ok(()) => 0,
                Err(wait) => self.steps(wait),
            },
            _ => 0,
        }
    }

    /// Of `asking` retries, moves those the throttle admits to the front and answers how
    /// many: each asks in turn with its own draw (SRE, admission control), or the first `m`
    /// asks succeed and a uniformly random `m` of them go on (the counting kinds, as the retry
    /// budget does).
    pub(crate) fn admit<T, R: Rng + ?Sized>(&mut self, asking: &mut [T], rng: &mut R) -> usize {
        let independent = |asking: &mut [T], rng: &mut R, admit: &mut dyn FnMut(&mut R) -> bool| {
            let mut front = 0;
            for i in 0..asking.len() {
                if admit(rng) {
                    asking.swap(front, i);
                    front += 1;
                }
            }
            front
        };
        let n = asking.len();
        let admitted = match &self.kind {
            Kind::Sre(t) => return independent(asking, rng, &mut |rng| t.admit_with(rng)),
            Kind::Admission(t) => return independent(asking, rng, &mut |rng| t.admit_with(rng)),
            Kind::AwsAdaptive(_) => n,
            Kind::Grpc(t) => {
                if t.allows_retry() {
                    n
                } else {
                    0
                }
            }
            Kind::Ratio(b) => (0..n).take_while(|_| b.withdraw()).count(),
            Kind::Aws(q) => {
                let before = self.held.len();
                while self.held.len() - before < n {
                    match q.acquire(AwsErrorKind::Transient) {
                        Some(p) => self.held.push(p),
                        None => break,
                    }
                }
                self.held.len() - before
            }
            Kind::Envoy(limit) => {
                let before = self.held.len();
                while self.held.len() - before < n {
                    match limit.acquire_retry() {
                        Some(p) => self.held.push(p),
                        None => break,
                    }
                }
                self.held.len() - before
            }
        };
        crate::budget::choose_admitted(asking, admitted, rng);
        admitted
    }

    /// Whether first attempts must pass [`first_attempt`](Self::first_attempt) one by one.
    pub(crate) fn gates_first_attempts(&self) -> bool {
        !matches!(self.kind, Kind::Aws(_) | Kind::Envoy(_) | Kind::Grpc(_))
    }
}
