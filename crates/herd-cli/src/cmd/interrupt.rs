//! Ctrl-C for commands that run many independent runs (`storm`, `lab storm`, `lab hedge`):
//! the first Ctrl-C asks the command to start no further run (a lab also drops the one
//! under way; the simulator finishes it, a second or so) and print what finished,
//! marked interrupted (as `lab chain` does); a second one ends the process at once, with
//! the shell's usual 130.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once Ctrl-C has been pressed.
#[derive(Clone, Debug)]
pub(crate) struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Starts watching for Ctrl-C on a thread of its own (the runs keep every core).
    pub(crate) fn watch() -> Self {
        let flag = Arc::new(AtomicBool::new(false));
        let set = Arc::clone(&flag);
        let _ = std::thread::Builder::new()
            .name("ctrl-c".to_owned())
            .spawn(move || {
                let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                runtime.block_on(async {
                    if tokio::signal::ctrl_c().await.is_err() {
                        return;
                    }
                    set.store(true, Ordering::Release);
                    eprintln!("interrupted: printing what finished (Ctrl-C again to stop at once)");
                    if tokio::signal::ctrl_c().await.is_ok() {
                        std::process::exit(130);
                    }
                });
            });
        Self(flag)
    }

    /// Whether Ctrl-C has been pressed.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}
