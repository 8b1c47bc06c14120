//! The progress bar of long commands (`herd storm`, `herd sweep`): drawn on stderr, only on a
//! terminal, and only once the work has taken half a second.
use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Draws a bar of `total` units with `template` (indicatif's) until `finished`, asking
/// `update` every 100 ms for the position and a message.
pub(crate) fn draw(
    total: u64,
    template: &str,
    finished: &AtomicBool,
    update: impl Fn() -> (u64, String),
) {
    let started = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !finished.load(Ordering::Acquire) {
        std::thread::park_timeout(Duration::from_millis(100));
        if bar.is_none()
            && started.elapsed() > Duration::from_millis(500)
            && io::stderr().is_terminal()
        {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(template) {
                b.set_style(style.progress_chars("=> "));
            }
            bar = Some(b);
        }
        if let Some(b) = &bar {
            let (position, message) = update();
            b.set_position(position);
            if !message.is_empty() {
                b.set_message(message);
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
}
