//! The tonic example against its service config: a loopback gRPC server fails its first `k`
//! calls, and the client (the library's tower layer running the translation's policy) must
//! make exactly the attempts gRPC's retry rules allow (gRFC A6: `maxAttempts` clamped to 5,
//! only `retryableStatusCodes` retried, no retry once `retryThrottling` holds half its
//! tokens or fewer), each pause within gRPC's retry backoff bounds for its retry number.
//! The client sleeps on the library's fake clock: nothing waits in real time.

#[path = "../examples/tonic_service_config.rs"]
#[allow(dead_code)]
mod example;

use std::time::Duration;

use herd::clock::{Clock, FakeClock};

/// One service config, written to a file for the example to read.
fn config_file(name: &str, json: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, json).unwrap();
    path.to_str().unwrap().to_owned()
}

/// A service config with one method config for the health service.
fn health_config(
    max_attempts: u32,
    base: &str,
    cap: &str,
    multiplier: f64,
    codes: &str,
    tokens: f64,
) -> String {
    format!(
        r#"{{"methodConfig": [
          {{"name": [{{"service": "other.Service"}}],
            "retryPolicy": {{"maxAttempts": 2, "initialBackoff": "9s", "maxBackoff": "9s",
              "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}}},
          {{"name": [{{"service": "grpc.health.v1.Health", "method": "Check"}}],
            "retryPolicy": {{"maxAttempts": {max_attempts}, "initialBackoff": "{base}",
              "maxBackoff": "{cap}", "backoffMultiplier": {multiplier},
              "retryableStatusCodes": [{codes}]}}}}],
          "retryThrottling": {{"maxTokens": {tokens}, "tokenRatio": 0.1}}}}"#
    )
}

/// The attempts gRFC A6 allows a call whose first `k` attempts fail with a status that is
/// (or is not) retryable: stop after a success, a non-retryable status, `max_attempts`
/// attempts, or when a failure leaves the throttle at half its tokens or fewer.
fn expected_attempts(max_attempts: u32, k: usize, retryable: bool, max_tokens: f64) -> usize {
    let mut tokens = max_tokens;
    let mut attempts = 0;
    loop {
        attempts += 1;
        if attempts > k || !retryable {
            return attempts;
        }
        tokens -= 1.0;
        if attempts == max_attempts as usize || tokens <= max_tokens / 2.0 {
            return attempts;
        }
    }
}

/// Runs the example on `json` with `k` failures of `code`, and checks the attempts against
/// `attempts` and every pause against the translation's backoff.
async fn check(name: &str, json: &str, k: usize, code: tonic::Code, attempts: usize) {
    let path = config_file(name, json);
    let clock = FakeClock::new();
    let start = clock.now();
    let run = example::run(&path, k, code, clock.clone(), clock.clone())
        .await
        .unwrap();
    assert_eq!(run.attempts, attempts, "{name}: {run:?}");
    assert_eq!(run.pauses.len(), attempts - 1, "{name}: {run:?}");
    let want = if attempts > k { tonic::Code::Ok } else { code };
    assert_eq!(run.status, want, "{name}");
    // Retry n waits min(cap, base · multiplier^(n−1)) · uniform[0.8, 1.2) (grpc-go
    // stream.go; gRPC core's retry filter).
    let b = run.translation.backoff;
    for (i, pause) in run.pauses.iter().enumerate() {
        let c = (b.base.as_secs_f64() * b.multiplier.powi(i as i32)).min(b.cap.as_secs_f64());
        let (lo, hi) = (c * 0.8, c * 1.2);
        let p = pause.as_secs_f64();
        assert!(
            p >= lo - 1e-9 && p < hi,
            "{name}: retry {} paused {pause:?}, outside [{lo}, {hi}) s",
            i + 1
        );
    }
    // The client slept on the fake clock only, and for exactly the pauses it asked for.
    assert_eq!(
        clock.now() - start,
        run.pauses.iter().sum::<Duration>(),
        "{name}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn succeeds_after_k_failures_within_max_attempts() {
    let json = health_config(4, "0.1s", "1s", 2.0, r#""UNAVAILABLE""#, 10.0);
    let want = expected_attempts(4, 2, true, 10.0);
    assert_eq!(want, 3);
    check("k2.json", &json, 2, tonic::Code::Unavailable, want).await;
}

#[tokio::test(flavor = "current_thread")]
async fn gives_up_after_max_attempts() {
    let json = health_config(4, "0.1s", "1s", 2.0, r#""UNAVAILABLE""#, 10.0);
    let want = expected_attempts(4, 9, true, 10.0);
    assert_eq!(want, 4);
    check("k9.json", &json, 9, tonic::Code::Unavailable, want).await;
}

#[tokio::test(flavor = "current_thread")]
async fn max_attempts_above_five_is_five() {
    let json = health_config(
        8,
        "0.05s",
        "0.3s",
        1.5,
        r#""RESOURCE_EXHAUSTED", "UNAVAILABLE""#,
        100.0,
    );
    let want = expected_attempts(5, 9, true, 100.0);
    assert_eq!(want, 5);
    check(
        "clamped.json",
        &json,
        9,
        tonic::Code::ResourceExhausted,
        want,
    )
    .await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_status_not_listed_is_not_retried() {
    let json = health_config(4, "0.1s", "1s", 2.0, r#""UNAVAILABLE""#, 10.0);
    let want = expected_attempts(4, 3, false, 10.0);
    assert_eq!(want, 1);
    check("internal.json", &json, 3, tonic::Code::Internal, want).await;
}

#[tokio::test(flavor = "current_thread")]
async fn retry_throttling_stops_retries_at_half_the_tokens() {
    let json = health_config(5, "0.1s", "1s", 2.0, r#""UNAVAILABLE""#, 4.0);
    let want = expected_attempts(5, 9, true, 4.0);
    assert_eq!(want, 2);
    check("throttled.json", &json, 9, tonic::Code::Unavailable, want).await;
}

#[tokio::test(flavor = "current_thread")]
async fn the_bundled_config_runs() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/health-service-config.json"
    );
    let json = std::fs::read_to_string(path).unwrap();
    check("bundled.json", &json, 2, tonic::Code::Unavailable, 3).await;
}
