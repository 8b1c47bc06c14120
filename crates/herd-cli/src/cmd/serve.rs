//! `herd serve`: the interactive page on loopback.
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use herd_lab::serve::{self, ServeLimits};

use super::args::check_closed;
use crate::error::{CliError, CliResult};

/// Serve the interactive page: pick a rule and watch the load.
///
/// Six scenes (Storm, Six clients, Dots, Layers, Hedging, Your config), every number
/// computed by the simulator through a JSON API under /api. The page is embedded in the
/// binary and works offline.
/// Stop with Ctrl-C.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 7878, value_name = "P")]
    port: u16,
    /// Address or host name to bind (127.0.0.1, ::1, localhost, …). The default keeps the
    /// page on this machine; anything else exposes an unauthenticated simulator to the
    /// network.
    #[arg(long, default_value = "127.0.0.1", value_name = "HOST")]
    host: String,
    /// Open the page in the default browser; a failure to open is only a note.
    #[arg(long)]
    open: bool,
    /// Simulations that may run at once (1 to 1024); more requests get 503 until one
    /// finishes.
    #[arg(long, default_value_t = ServeLimits::default().max_concurrent, value_name = "N")]
    max_concurrent: usize,
}

pub(crate) fn run(args: &ServeArgs) -> CliResult {
    check_closed("max_concurrent", args.max_concurrent, 1, MAX_CONCURRENT)?;
    let addr = resolve(&args.host, args.port)?;
    let loopback = addr.ip().is_loopback();
    if !loopback {
        eprintln!(
            "warning: binding {} exposes the page and its API beyond this machine",
            addr.ip()
        );
    }
    let limits = ServeLimits {
        max_concurrent: args.max_concurrent,
        // On another address the page is reached by other names; on loopback, refuse them.
        any_host: !loopback,
        ..ServeLimits::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let local = listener.local_addr().context("reading the bound address")?;
        let url = format!("http://{local}/");
        println!("herd serve: {url}  (Ctrl-C to stop)");
        if args.open {
            open_browser(&url);
        }
        serve::serve(listener, limits, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .context("serving the page")?;
        Ok::<(), CliError>(())
    });
    // Requests still open were dropped at the end of the grace, and their simulations
    // cancelled; one that cannot stop (a storm, bounded to a second or two) is not waited
    // for beyond this.
    runtime.shutdown_timeout(EXIT_GRACE);
    served
}

/// Most simulations `--max-concurrent` may allow: far more than the cores of any machine.
const MAX_CONCURRENT: usize = 1024;

/// How long the command waits, after the server stopped, for simulations to notice their
/// cancellation before it exits anyway.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The address to bind: `--host` as an address, or a name resolved (loopback first, so that
/// `localhost` binds 127.0.0.1 or ::1 rather than whatever the resolver lists first).
fn resolve(host: &str, port: u16) -> CliResult<SocketAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let mut addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| CliError::input(format!("host {host:?} does not resolve: {e} (--host)")))?
        .collect();
    addrs.sort_by_key(|a| (!a.ip().is_loopback(), a.is_ipv6()));
    addrs
        .first()
        .copied()
        .ok_or_else(|| CliError::input(format!("host {host:?} has no address (--host)")))
}

/// Best effort, on every desktop (the `open` crate knows each system's opener): a machine
/// without one prints a note and keeps serving.
fn open_browser(url: &str) {
    if let Err(e) = open::that_detached(url) {
        eprintln!("note: could not open a browser ({e}); open {url} yourself");
    }
}
