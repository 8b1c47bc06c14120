//! Ctrl-C for commands that run many independent runs (`storm`, `sweep`, `hedge`,
//! `lab storm`, `lab hedge`):
//! the first Ctrl-C asks the command to start no further run (a lab also drops the one
//! under way; the simulator finishes it, a second or so) and print what finished,
//! marked interrupted (as `lab chain` does); a second one ends the process at once, with
//! the shell's usual 130.
use herd_sim::Cancel;

/// Set once Ctrl-C has been pressed.
#[derive(Clone, Debug)]
pub(crate) struct Interrupt(Cancel);

impl Interrupt {
    /// Starts watching for Ctrl-C on a thread of its own (the runs keep every core).
    pub(crate) fn watch() -> Self {
        let flag = Cancel::new();
        let set = flag.clone();
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
                    set.cancel();
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
        self.0.is_cancelled()
    }

    /// The flag Ctrl-C sets, for a simulator call that reads it (`Sweep::run`).
    pub(crate) fn flag(&self) -> &Cancel {
        &self.0
    }
}
