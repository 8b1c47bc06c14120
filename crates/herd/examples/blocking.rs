//! The blocking loop, std only: read a file that is briefly unavailable, retrying only
//! transient I/O errors, with a deadline over attempts and pauses.
//!
//! Run: `cargo run -p herd --example blocking`

#[path = "common/mod.rs"]
mod common;

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use herd::classify;

/// Fails twice with an interrupted read, then answers.
fn read_config(failures_left: &AtomicU32) -> io::Result<String> {
    if failures_left
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
    {
        return Err(io::ErrorKind::Interrupted.into());
    }
    Ok("port = 8080".to_owned())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy = common::quick_policy(5, Duration::from_secs(2))?.build()?;
    let failures_left = AtomicU32::new(2);
    let read = policy
        .call(|_attempt| read_config(&failures_left))
        .classify(classify::io_error)
        .run()?;
    println!("read {:?} after {} attempts", read.value, read.attempts);
    assert_eq!(read.attempts, 3);
    Ok(())
}
