//! Progress for long work, drawn on stderr only when it is a terminal: a pipe or a test
//! sees nothing. A spinner for work of unknown length (`lab storm`, `lab chain`), a bar for
//! work counted in units (`storm`, `sweep`, `hedge`) that appears once the work has taken half a
//! second.
use std::io::{self, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A spinner with a message and the elapsed time, ticking on its own until finished.
pub(crate) fn spinner(message: String) -> ProgressBar {
    if !io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(message);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

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
