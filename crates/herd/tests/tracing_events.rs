//! The loop's `tracing` events, in a test binary of their own: tracing caches each callsite's
//! interest process-wide, and in the shared suite binary the many other tests that reach the
//! same callsites with no collector raced this test's collector (the give-up event was lost
//! there about one run in two).
#![cfg(feature = "tracing")]

use herd::Rule;
use herd::clock::{Clock, FakeClock};
use herd::policy::{PolicyBuilder, RetryPolicy};

fn policy_of<C: Clock>(
    rule: Rule,
    attempts: u32,
    clock: C,
    limit: impl FnOnce(PolicyBuilder<C>) -> PolicyBuilder<C>,
) -> RetryPolicy<C> {
    limit(
        RetryPolicy::builder(rule)
            .max_attempts(attempts)
            .clock(clock),
    )
    .build()
    .unwrap()
}

use std::sync::{Arc, Mutex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<String>>>);

struct Message(String);
impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "reason" {
            self.0.push_str(&format!(" reason={value}"));
        }
    }
}

impl Subscriber for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        self.0.lock().unwrap().push(message.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn retries_and_give_ups_emit_events() {
    let collect = Collect::default();
    let clock = FakeClock::new();
    let policy = policy_of(Rule::immediate(), 3, clock.clone(), |p| p);
    tracing::subscriber::with_default(collect.clone(), || {
        let _ = policy.call(|_| Err::<(), _>(())).run_with(&clock);
    });
    let events = collect.0.lock().unwrap().clone();
    assert_eq!(
        events,
        ["retrying", "retrying", "gave up reason=attempts"],
        "{events:?}"
    );
}
