//! Drawing pauses: every herd rule, side by side with the exponential-with-jitter backoffs of
//! the `backon` and `backoff` crates, in one binary so the comparison is one run.
//!
//! Each iteration draws the first ten pauses of a fresh schedule (base 100 ms, cap 20 s), the
//! shape of a real retry loop; divide by ten for the cost of one pause.
//!
//! Every row sums the pauses as `u64` nanoseconds (a `Duration` sum costs a mispredicted carry
//! branch per add, ~3 ns, which would measure the harness, not the library), and the `floor`
//! row is the least any jittered rule can do: one SplitMix64 step and one multiply per pause.
//!
//! Run: `cargo bench -p herd --bench rules`
use std::hint::black_box;
use std::time::Duration;

use backoff::backoff::Backoff as _;
use criterion::{Criterion, criterion_group, criterion_main};
use herd::rng::{Rng as _, SplitMix64, ThreadRng};
use herd::{RuleName, RuleParams, RuleState};

const PAUSES: usize = 10;

fn rules(c: &mut Criterion) {
    let mut group = c.benchmark_group("ten_pauses");
    let params = RuleParams::default();
    for name in RuleName::ALL {
        let rule = name.build(&params).expect("default parameters are valid");
        let mut rng = SplitMix64::new(1);
        group.bench_function(format!("herd/{name}"), |b| {
            b.iter(|| {
                let mut state = RuleState::default();
                let mut total = 0u64;
                for _ in 0..PAUSES {
                    total = total.wrapping_add(rule.pause_nanos(&mut state, &mut rng));
                }
                black_box(total)
            })
        });
    }

    // The same `full` pauses through the `Duration` API, converted back to nanoseconds.
    let full = RuleName::Full.build(&params).expect("valid");
    let mut rng = SplitMix64::new(1);
    group.bench_function("herd/full-duration", |b| {
        b.iter(|| {
            let mut state = RuleState::default();
            let mut total = 0u64;
            for _ in 0..PAUSES {
                total = total.wrapping_add(nanos(full.pause(&mut state, &mut rng)));
            }
            black_box(total)
        })
    });

    // The floor: one SplitMix64 step and a multiply (a uniform pause in [0, cap)).
    let mut rng = SplitMix64::new(1);
    let cap = black_box(20_000_000_000u64);
    group.bench_function("floor/splitmix-multiply", |b| {
        b.iter(|| {
            let mut total = 0u64;
            for _ in 0..PAUSES {
                let pause = ((u128::from(rng.next_u64()) * u128::from(cap)) >> 64) as u64;
                total = total.wrapping_add(pause);
            }
            black_box(total)
        })
    });

    group.bench_function("herd/full-thread-rng", |b| {
        b.iter(|| {
            let mut total = 0u64;
            for pause in full.schedule(ThreadRng).take(PAUSES) {
                total = total.wrapping_add(nanos(pause));
            }
            black_box(total)
        })
    });

    group.bench_function("backon/exponential-jitter", |b| {
        use backon::BackoffBuilder as _;
        let builder = backon::ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(100))
            .with_max_delay(Duration::from_secs(20))
            .with_jitter()
            .without_max_times();
        b.iter(|| {
            let mut total = 0u64;
            for pause in builder.build().take(PAUSES) {
                total = total.wrapping_add(nanos(pause));
            }
            black_box(total)
        })
    });

    group.bench_function("backoff/exponential-randomized", |b| {
        b.iter(|| {
            let mut backoff = backoff::ExponentialBackoff {
                initial_interval: Duration::from_millis(100),
                max_interval: Duration::from_secs(20),
                multiplier: 2.0,
                randomization_factor: 0.5,
                max_elapsed_time: None,
                ..backoff::ExponentialBackoff::default()
            };
            let mut total = 0u64;
            for _ in 0..PAUSES {
                total = total.wrapping_add(nanos(backoff.next_backoff().unwrap_or_default()));
            }
            black_box(total)
        })
    });
    group.finish();
}

/// A pause in nanoseconds, as every row sums them.
#[inline(always)]
fn nanos(d: Duration) -> u64 {
    d.as_nanos() as u64
}

criterion_group!(benches, rules);
criterion_main!(benches);
