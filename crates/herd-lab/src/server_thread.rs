//! A lab's servers on a thread of their own, with their own runtime, so that the clients'
//! load cannot delay the servers' timers (and the other way round).
use std::future::Future;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// Starts a thread named `name` with a runtime of `workers` threads, and on it the future
/// `serve` makes from two channels: the sender on which it reports what it bound (or why it
/// could not), which this waits for, and the receiver that tells it to stop. Returns what
/// it bound and the [`Running`] thread. `whose` names the servers in errors ("the server's",
/// "the servers'").
///
/// # Errors
///
/// The runtime or the thread could not start, `serve` reported an error, or the thread
/// ended before reporting.
pub(crate) async fn spawn<A, F>(
    name: &str,
    workers: usize,
    whose: &'static str,
    serve: impl FnOnce(oneshot::Sender<Result<A, String>>, oneshot::Receiver<()>) -> F + Send + 'static,
) -> Result<(A, Running), String>
where
    A: Send + 'static,
    F: Future<Output = ()>,
{
    let (ready_tx, ready_rx) = oneshot::channel::<Result<A, String>>();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread_name = name.to_owned();
    let thread = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .thread_name(thread_name)
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("starting {whose} runtime: {e}")));
                    return;
                }
            };
            runtime.block_on(serve(ready_tx, stop_rx));
        })
        .map_err(|e| format!("starting {whose} thread: {e}"))?;
    match ready_rx.await {
        Ok(Ok(bound)) => Ok((
            bound,
            Running {
                stop: Some(stop_tx),
                thread: Some(thread),
            },
        )),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("{whose} thread ended early")),
    }
}

/// The servers' thread once they are up. Dropping it tells them to stop (an early return
/// leaves the thread waiting otherwise; it then ends alone); [`Running::join`] also waits
/// for it.
#[derive(Debug)]
pub(crate) struct Running {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Running {
    /// Tells the servers to stop; later calls do nothing.
    pub(crate) fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Stops the servers and waits for their thread to end, joining it off the executor.
    pub(crate) async fn join(mut self) {
        self.stop();
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}
