//! The async loop on tokio: a flaky async operation retried with full jitter, each attempt
//! told how much time is left, and hooks on each retry and on giving up.
//!
//! Run: `cargo run -p herd --example tokio`

#[path = "common/mod.rs"]
mod common;

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use herd::asynchronous::TokioClock;
use herd::classify;

async fn fetch(calls: &AtomicU32) -> io::Result<u32> {
    match calls.fetch_add(1, Ordering::SeqCst) {
        0 => Err(io::ErrorKind::ConnectionReset.into()),
        n => Ok(n * 10),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy = common::quick_policy(4, Duration::from_secs(2))?
        .clock(TokioClock::new())
        .build()?;
    let calls = AtomicU32::new(0);
    let answer = policy
        .call(|attempt| {
            println!("attempt {} ({:?} left)", attempt.number, attempt.remaining);
            fetch(&calls)
        })
        .classify(classify::io_error)
        .on_retry(
            |event: &herd::outcome::RetryEvent<'_, io::Error>| match event.error {
                Some(error) => println!("retrying after {:?}: {error}", event.pause),
                None => println!("retrying after {:?}: the attempt timed out", event.pause),
            },
        )
        .run_async()
        .await?;
    println!("got {} after {} attempts", answer.value, answer.attempts);
    assert_eq!(answer.value, 10);
    Ok(())
}
