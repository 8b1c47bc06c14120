//! The per-call cost of every throttle in `herd::throttle`, beside the ratio budget and gRPC
//! throttling, in one run.
//!
//! Each row is what a [`RetryPolicy`](herd::RetryPolicy) asks of its budget for a call that
//! succeeds plus one retry decision: `on_request`, `try_retry_permit` (the permit released as
//! a success, so that quotas and concurrency limits stay in a steady state), `on_success`,
//! through the `Budget` trait, single-threaded, on a fake clock (time standing still, so the
//! windowed throttles work in one bin). A ratio budget drains after its reserve (100 retries)
//! and then answers "no" from its check, as in the `retry` bench's budget rows.
//!
//! Run: `cargo bench -p herd --bench throttle -- --warm-up-time 1 --measurement-time 2`
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use herd::budget::{Budget, BudgetConfig, GrpcThrottle, GrpcThrottleConfig, RetryBudget};
use herd::clock::FakeClock;
use herd::throttle::{
    AdmissionControl, AdmissionControlConfig, AwsRateLimiter, AwsRetryQuota, AwsRetryQuotaConfig,
    EnvoyRetryBudgetConfig, EnvoyRetryLimit, EnvoyRetryLimitConfig, LinkerdRetryBudget,
    SreThrottle, SreThrottleConfig,
};

fn call_and_retry_check<B: Budget>(budget: &B) -> bool {
    budget.on_request();
    let retried = match budget.try_retry_permit() {
        Some(permit) => {
            permit.succeeded();
            true
        }
        None => false,
    };
    budget.on_success();
    retried
}

fn throttles(c: &mut Criterion) {
    let mut group = c.benchmark_group("throttle");
    let clock = FakeClock::new();
    let mut bench = |name: &str, budget: &dyn Fn() -> bool| {
        group.bench_function(name, |b| b.iter(|| black_box(budget())));
    };

    let ratio = RetryBudget::new(BudgetConfig::default(), clock.clone()).unwrap();
    bench("ratio (herd RetryBudget)", &|| call_and_retry_check(&ratio));
    let linkerd = LinkerdRetryBudget::default().build(clock.clone()).unwrap();
    bench("linkerd (ratio, Linkerd defaults)", &|| {
        call_and_retry_check(&linkerd)
    });
    let grpc = GrpcThrottle::new(GrpcThrottleConfig::default()).unwrap();
    bench("grpc retryThrottling", &|| call_and_retry_check(&grpc));

    let mut book = SreThrottleConfig::book();
    book.seed = Some(1);
    let sre = SreThrottle::new(book, clock.clone()).unwrap();
    bench("sre-adaptive (book)", &|| call_and_retry_check(&sre));
    let mut rls = SreThrottleConfig::grpc_rls();
    rls.seed = Some(1);
    let sre_grpc = SreThrottle::new(rls, clock.clone()).unwrap();
    bench("sre-adaptive (grpc-go)", &|| {
        call_and_retry_check(&sre_grpc)
    });

    let aws = AwsRetryQuota::new(AwsRetryQuotaConfig::standard()).unwrap();
    bench("aws-standard", &|| call_and_retry_check(&aws));
    let aws_2026 = AwsRetryQuota::new(AwsRetryQuotaConfig::standard_2026()).unwrap();
    bench("aws-standard-2026", &|| call_and_retry_check(&aws_2026));
    let adaptive = AwsRateLimiter::new(clock.clone());
    bench("aws-adaptive", &|| call_and_retry_check(&adaptive));

    let envoy_budget = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::budget(
        EnvoyRetryBudgetConfig::default(),
    ))
    .unwrap();
    let _active: Vec<_> = (0..25).map(|_| envoy_budget.start_request()).collect();
    bench("envoy-budget", &|| call_and_retry_check(&envoy_budget));
    let envoy_max = EnvoyRetryLimit::new(EnvoyRetryLimitConfig::default()).unwrap();
    bench("envoy-max-retries", &|| call_and_retry_check(&envoy_max));
    let mut admission_config = AdmissionControlConfig::default();
    admission_config.seed = Some(1);
    let admission = AdmissionControl::new(admission_config, clock.clone()).unwrap();
    bench("envoy-admission", &|| call_and_retry_check(&admission));
    group.finish();
}

criterion_group!(benches, throttles);
criterion_main!(benches);
