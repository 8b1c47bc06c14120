//! The cost of the retry machinery when nothing goes wrong, side by side in one binary:
//!
//! - `first_attempt_success`: a call that succeeds on its first attempt, made directly, through
//!   herd's blocking loop (a policy built once and reused, as in a service) on the system clock
//!   and on a fake clock (the loop's own cost, without the one monotonic clock read that
//!   starts the deadline), through herd's loop with a budget and a breaker, and through
//!   backon's blocking `retry` (which has no deadline, so reads no clock).
//! - `budget`: one `deposit` + `withdraw` pair (a request and a retry check) on a shared ratio budget, on a fake and on the system clock, and
//!   from two threads at once (a second thread hammers the same budget while the first is
//!   measured); one `allows_retry` + `record_success` on gRPC throttling.
//!
//!   tower's `TpsBudget` (its `retry` feature) does the same pair, from one and two threads.
//! - `clock`: one read of the system and of the fake clock (the floor under a deadline).
//!
//! Run: `cargo bench -p herd --bench retry -- --warm-up-time 1 --measurement-time 2`
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use backon::BlockingRetryable as _;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use herd::Rule;
use herd::breaker::{BreakerConfig, CircuitBreaker};
use herd::budget::{BudgetConfig, GrpcThrottle, GrpcThrottleConfig, RetryBudget};
use herd::clock::{FakeClock, SystemClock};
use herd::policy::RetryPolicy;

#[inline(never)]
fn operation(x: u64) -> Result<u64, std::io::Error> {
    Ok(x.wrapping_mul(3))
}

/// Every variant hands criterion the same `Option<u64>` (what a caller keeps), so that none
/// pays for copying a larger `Result` into `black_box`.
fn first_attempt_success(c: &mut Criterion) {
    let mut group = c.benchmark_group("first_attempt_success");
    let rule = Rule::full(Duration::from_millis(100), Duration::from_secs(20)).expect("valid");

    group.bench_function("direct", |b| b.iter(|| operation(black_box(7)).ok()));

    // Three attempts within 10 s, as the other settings below are added to it.
    let base = RetryPolicy::builder(rule)
        .max_attempts(3)
        .deadline(Duration::from_secs(10));
    let first_on_system_clock = |policy: &RetryPolicy| {
        policy
            .call(|_| operation(black_box(7)))
            .run()
            .ok()
            .map(|s| s.value)
    };

    let policy = base.clone().build().expect("valid");
    group.bench_function("herd/blocking", |b| {
        b.iter(|| first_on_system_clock(&policy))
    });

    let fake = FakeClock::new();
    let on_fake_clock = base.clone().clock(fake.clone()).build().expect("valid");
    group.bench_function("herd/blocking/fake-clock", |b| {
        b.iter(|| {
            on_fake_clock
                .call(|_| operation(black_box(7)))
                .run_with(&fake)
                .ok()
                .map(|s| s.value)
        })
    });

    let budget = RetryBudget::new(BudgetConfig::default(), SystemClock::new()).expect("valid");
    let breaker = CircuitBreaker::new(BreakerConfig::default(), SystemClock::new()).expect("valid");
    let guarded = base.budget(budget).breaker(breaker).build().expect("valid");
    group.bench_function("herd/blocking+budget+breaker", |b| {
        b.iter(|| first_on_system_clock(&guarded))
    });

    let builder = backon::ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(20))
        .with_jitter()
        .with_max_times(2);
    group.bench_function("backon/blocking", |b| {
        b.iter(|| (|| operation(black_box(7))).retry(builder).call().ok())
    });
    group.finish();
}

/// Benches `pair` on `shared` while a second thread runs it in a loop on a clone of the same
/// handle, so both threads hit one budget.
fn with_a_second_thread<T, P>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    shared: T,
    pair: P,
) where
    T: Clone + Send + 'static,
    P: Fn(&T) -> bool + Copy + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let other = {
        let shared = shared.clone();
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                black_box(pair(&shared));
            }
        })
    };
    group.bench_function(name, |b| b.iter(|| black_box(pair(&shared))));
    stop.store(true, Ordering::Relaxed);
    other.join().expect("the second thread does not panic");
}

fn budget(c: &mut Criterion) {
    let mut group = c.benchmark_group("budget");
    let config = BudgetConfig::default()
        .percent(10.0)
        .min_per_sec(10)
        .window(Duration::from_secs(10));

    let fake = RetryBudget::new(config, FakeClock::new()).expect("valid");
    group.bench_function("deposit+withdraw/fake-clock/1-thread", |b| {
        b.iter(|| {
            fake.deposit();
            black_box(fake.withdraw())
        })
    });

    let system = RetryBudget::new(config, SystemClock::new()).expect("valid");
    group.bench_function("deposit+withdraw/system-clock/1-thread", |b| {
        b.iter(|| {
            system.deposit();
            black_box(system.withdraw())
        })
    });

    let shared = RetryBudget::new(config, SystemClock::new()).expect("valid");
    with_a_second_thread(
        &mut group,
        "deposit+withdraw/system-clock/2-threads",
        shared,
        |b| {
            b.deposit();
            b.withdraw()
        },
    );

    // tower's budget (feature `retry`): the same request + retry-check pair.
    {
        use tower::retry::budget::{Budget as _, TpsBudget};
        let tps = TpsBudget::new(Duration::from_secs(10), 10, 0.1);
        group.bench_function("tower-TpsBudget/deposit+withdraw/1-thread", |b| {
            b.iter(|| {
                tps.deposit();
                black_box(tps.withdraw())
            })
        });
        let tps = Arc::new(TpsBudget::new(Duration::from_secs(10), 10, 0.1));
        with_a_second_thread(
            &mut group,
            "tower-TpsBudget/deposit+withdraw/2-threads",
            tps,
            |b| {
                b.deposit();
                b.withdraw()
            },
        );
    }

    let throttle = GrpcThrottle::new(GrpcThrottleConfig::default()).expect("valid");
    group.bench_function("grpc-throttle/1-thread", |b| {
        b.iter(|| {
            throttle.record_success();
            black_box(throttle.allows_retry())
        })
    });
    group.finish();
}

/// What one clock read costs here: the floor under anything that measures a deadline.
fn clock(c: &mut Criterion) {
    use herd::clock::Clock as _;
    let mut group = c.benchmark_group("clock");
    let system = SystemClock::new();
    group.bench_function("system/now", |b| b.iter(|| black_box(system.now())));
    let fake = FakeClock::new();
    group.bench_function("fake/now", |b| b.iter(|| black_box(fake.now())));
    group.finish();
}

criterion_group!(benches, first_attempt_success, budget, clock);
criterion_main!(benches);
