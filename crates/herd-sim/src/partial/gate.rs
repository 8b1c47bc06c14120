//! What decides whether a failed call retries: Brooker's token bucket and breaker as his code
//! has them, or a throttle a real system ships, as the library's own type on the run's
//! [`FakeClock`].
use std::time::Duration;

use herd::budget::RetryPermit;
use herd::clock::FakeClock;
use herd::rng::Rng;
use herd::throttle::{AwsErrorKind, AwsRequestKind, EnvoyActiveRequest};

use super::scenario::Deposit;
use crate::throttle::LibraryThrottle as Lib;
use crate::throttle::{LibraryThrottle, ThrottleSpec};

/// A strategy's gate, checked: what one client (or, shared, all clients) keeps.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum GateSpec {
    /// No gate: `max_attempts` alone.
    None,
    /// Brooker's token bucket.
    Bucket {
        size: f64,
        per_call: f64,
        deposit: Deposit,
    },
    /// Brooker's breaker: no retry while `failures · 10^k > ratio · calls`, the ratio
    /// `ratio / 10^k` as written.
    Breaker { ratio: u128, k: u32 },
    /// A throttle of the library.
    Throttle(ThrottleSpec),
}

/// What a gate says of a call's first attempt.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum First {
    Send,
    /// Refused locally: the call fails without an attempt.
    Refuse,
    /// Sent after this wait (the AWS rate limiter).
    Delay(Duration),
}

/// What a gate says of a retry.
#[derive(Debug)]
pub(crate) enum Retry {
    Deny,
    /// Go, holding `permit` (AWS quota, Envoy) until the retry is answered, after `delay`
    /// (the AWS rate limiter).
    Go {
        permit: Option<RetryPermit>,
        delay: Duration,
    },
}

impl Retry {
    fn go() -> Self {
        Retry::Go {
            permit: None,
            delay: Duration::ZERO,
        }
    }

    fn when(ok: bool) -> Self {
        if ok { Self::go() } else { Retry::Deny }
    }
}

/// One gate's state in a run.
pub(crate) enum Gate {
    None,
    /// Brooker's `AdaptiveRetryStrategy`, in `f64` as his Python has it: `bucket > 1.0` with
    /// tokens added in steps of 0.1 decides at exactly one token by the same rounding his
    /// code meets.
    Bucket {
        tokens: f64,
        size: f64,
        per_call: f64,
        deposit: Deposit,
    },
    /// Brooker's `CircuitBreakerRetryStrategy`: calls and failed attempts since the start.
    Breaker {
        calls: u128,
        failures: u128,
        ratio: u128,
        scale: u128,
    },
    /// A throttle of the library.
    Throttle(LibraryThrottle),
}

impl Gate {
    /// A fresh gate on `clock` (settings already checked).
    pub(crate) fn new(spec: &GateSpec, clock: &FakeClock) -> Self {
        match spec {
            GateSpec::None => Gate::None,
            GateSpec::Bucket {
                size,
                per_call,
                deposit,
            } => Gate::Bucket {
                tokens: *size,
                size: *size,
                per_call: *per_call,
                deposit: *deposit,
            },
            GateSpec::Breaker { ratio, k } => Gate::Breaker {
                calls: 0,
                failures: 0,
                ratio: *ratio,
                scale: 10u128.pow(*k),
            },
            GateSpec::Throttle(t) => Gate::Throttle(LibraryThrottle::new(t, clock)),
        }
    }

    fn add_tokens(&mut self, when: Deposit) {
        if let Gate::Bucket {
            tokens,
            size,
            per_call,
            deposit,
        } = self
            && *deposit == when
        {
            // `self.bucket = min(self.bucket + self.bucket_fill_rate, self.bucket_size)`
            *tokens = (*tokens + *per_call).min(*size);
        }
    }

    /// A call starts: Brooker's bucket (in his code's reading) and breaker count it; the
    /// throttles that gate first attempts decide.
    pub(crate) fn call_start<R: Rng + ?Sized>(&mut self, rng: &mut R) -> First {
        self.add_tokens(Deposit::CallStart);
        let send = |ok: bool| if ok { First::Send } else { First::Refuse };
        match self {
            Gate::Breaker { calls, .. } => {
                *calls += 1;
                First::Send
            }
            Gate::Throttle(Lib::Sre(t)) => send(t.admit_with(rng)),
            Gate::Throttle(Lib::Admission(t)) => send(t.admit_with(rng)),
            Gate::Throttle(Lib::AwsAdaptive(t)) => {
                match t.acquire(AwsRequestKind::InitialRequest) {
                    Ok(()) => First::Send,
                    Err(wait) => First::Delay(wait),
                }
            }
            Gate::Throttle(Lib::Ratio(b)) => {
                b.deposit();
                First::Send
            }
            _ => First::Send,
        }
    }

    /// An attempt is sent: Envoy counts it as an active request while the guard lives.
    pub(crate) fn sent(&self) -> Option<EnvoyActiveRequest> {
        match self {
            Gate::Throttle(Lib::Envoy(limit)) => Some(limit.start_request()),
            _ => None,
        }
    }

    /// An attempt was answered: `success`, whether it was a `retry`, and the permit its retry
    /// held (returned here: a successful AWS retry gives its cost back).
    pub(crate) fn answered(&mut self, success: bool, retry: bool, permit: Option<RetryPermit>) {
        if success {
            self.add_tokens(Deposit::Success);
        }
        match self {
            Gate::Breaker { failures, .. } if !success => *failures += 1,
            Gate::Throttle(Lib::Sre(t)) => t.record_response(success),
            Gate::Throttle(Lib::Admission(t)) => t.record(success),
            Gate::Throttle(Lib::AwsAdaptive(t)) => t.update(!success),
            Gate::Throttle(Lib::Grpc(t)) if success => t.record_success(),
            Gate::Throttle(Lib::Grpc(t)) => t.record_failure(),
            Gate::Throttle(Lib::Aws(q)) if success && !retry => q.record_first_attempt_success(),
            _ => {}
        }
        if let Some(p) = permit
            && success
        {
            p.succeeded();
        }
    }

    /// A failed call that may still make an attempt asks to retry.
    pub(crate) fn retry<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Retry {
        match self {
            Gate::None => Retry::go(),
            Gate::Bucket { tokens, .. } => {
                // `if self.bucket > 1.0: self.bucket -= 1.0; return True`
                if *tokens > 1.0 {
                    *tokens -= 1.0;
                    Retry::go()
                } else {
                    Retry::Deny
                }
            }
            Gate::Breaker {
                calls,
                failures,
                ratio,
                scale,
            } => {
                // `(failures / calls) > max_rate`, in integers.
                Retry::when(*failures * *scale <= *ratio * *calls)
            }
            Gate::Throttle(Lib::Sre(t)) => Retry::when(t.admit_with(rng)),
            Gate::Throttle(Lib::Admission(t)) => Retry::when(t.admit_with(rng)),
            Gate::Throttle(Lib::AwsAdaptive(t)) => Retry::Go {
                permit: None,
                delay: t.acquire(AwsRequestKind::Retry).err().unwrap_or_default(),
            },
            Gate::Throttle(Lib::Grpc(t)) => Retry::when(t.allows_retry()),
            Gate::Throttle(Lib::Ratio(b)) => Retry::when(b.withdraw()),
            Gate::Throttle(Lib::Aws(q)) => match q.acquire(AwsErrorKind::Transient) {
                Some(p) => Retry::Go {
                    permit: Some(p),
                    delay: Duration::ZERO,
                },
                None => Retry::Deny,
            },
            Gate::Throttle(Lib::Envoy(limit)) => match limit.acquire_retry() {
                Some(p) => Retry::Go {
                    permit: Some(p),
                    delay: Duration::ZERO,
                },
                None => Retry::Deny,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rng() -> herd::rng::SplitMix64 {
        herd::rng::SplitMix64::new(1)
    }

    fn allowed(gate: &mut Gate) -> bool {
        matches!(gate.retry(&mut rng()), Retry::Go { .. })
    }

    #[test]
    fn brookers_bucket_pays_while_it_holds_more_than_one_token() {
        let spec = GateSpec::Bucket {
            size: 5.0,
            per_call: 0.1,
            deposit: Deposit::CallStart,
        };
        let mut g = Gate::new(&spec, &FakeClock::new());
        // Full at 5: four retries (5 → 1), then 1.0 > 1.0 fails.
        assert!((0..4).all(|_| allowed(&mut g)));
        assert!(!allowed(&mut g));
        // Ten calls add a token, in f64 as his Python does: from `b = 1.0`, ten times
        // `b = min(b + 0.1, 5)` gives 2.000000000000001 in Python too, so two retries go
        // where exact tenths would allow one.
        for _ in 0..10 {
            assert_eq!(g.call_start(&mut rng()), First::Send);
        }
        assert!(allowed(&mut g));
        assert!(allowed(&mut g));
        assert!(!allowed(&mut g));
        // The cap: a full bucket stays at 5.
        let mut full = Gate::new(&spec, &FakeClock::new());
        full.call_start(&mut rng());
        let Gate::Bucket { tokens, .. } = full else {
            panic!("a bucket")
        };
        assert_eq!(tokens, 5.0);
    }

    #[test]
    fn the_essays_bucket_fills_only_on_success() {
        let spec = GateSpec::Bucket {
            size: 1.5,
            per_call: 0.5,
            deposit: Deposit::Success,
        };
        let mut g = Gate::new(&spec, &FakeClock::new());
        assert!(allowed(&mut g));
        g.call_start(&mut rng());
        g.answered(false, false, None);
        assert!(
            !allowed(&mut g),
            "0.5 tokens: a start and a failure add nothing"
        );
        g.answered(true, false, None);
        g.answered(true, false, None);
        assert!(allowed(&mut g), "two successes: 1.5 tokens");
    }

    #[test]
    fn brookers_breaker_retries_at_exactly_its_ratio_and_not_above() {
        let mut g = Gate::new(&GateSpec::Breaker { ratio: 1, k: 1 }, &FakeClock::new());
        for _ in 0..10 {
            g.call_start(&mut rng());
        }
        g.answered(false, false, None);
        assert!(allowed(&mut g), "1 / 10 is not above 0.1");
        g.answered(false, true, None);
        assert!(!allowed(&mut g), "2 / 10 is");
        g.answered(true, true, None);
        g.call_start(&mut rng());
        assert!(
            !allowed(&mut g),
            "successes do not count; 2 / 11 still above"
        );
    }
}
