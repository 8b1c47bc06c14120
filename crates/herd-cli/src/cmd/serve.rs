//! `herd serve`: the interactive page on loopback.
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};

use anyhow::Context as _;
use clap::Args;
use herd_lab::serve::{self, ServeLimits};

use crate::error::{CliError, CliResult};

/// Serve the interactive page: pick a rule and watch the load.
///
/// Four scenes (Storm, Six clients, Dots, Layers), every number computed by the simulator
/// through a JSON API under /api. The page is embedded in the binary and works offline.
/// Stop with Ctrl-C.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 7878)]
    port: u16,
    /// Address to bind. The default, 127.0.0.1, keeps the page on this machine; anything
    /// else exposes an unauthenticated simulator to the network.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    host: IpAddr,
    /// Open the page in a browser (xdg-open); a failure to open is ignored.
    #[arg(long)]
    open: bool,
    /// Simulations that may run at once; more requests get 503 until one finishes.
    #[arg(long, default_value_t = ServeLimits::default().max_concurrent, value_name = "N")]
    max_concurrent: usize,
}

pub(crate) fn run(args: &ServeArgs) -> CliResult {
    if args.max_concurrent == 0 {
        return Err(CliError::input("--max-concurrent must be at least 1"));
    }
    if !args.host.is_loopback() {
        eprintln!(
            "warning: binding {} exposes the page and its API beyond this machine",
            args.host
        );
    }
    let limits = ServeLimits {
        max_concurrent: args.max_concurrent,
        // On another address the page is reached by other names; on loopback, refuse them.
        any_host: !args.host.is_loopback(),
        ..ServeLimits::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let addr = SocketAddr::new(args.host, args.port);
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
    })
}

/// Best effort: a machine without a desktop has no `xdg-open`, and that is fine.
fn open_browser(url: &str) {
    let spawned = Command::new("xdg-open")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    if spawned.is_err() {
        eprintln!("note: could not run xdg-open; open {url} yourself");
    }
}
