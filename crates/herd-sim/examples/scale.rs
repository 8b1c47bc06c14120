//! The default scenario scaled to N clients (capacity scaled alike, 50 per 2000 clients), one
//! run per rule, with attempts per second. Used for docs/BENCHMARKS.md:
//!
//!     cargo run --release -p herd-sim --example scale -- 10000000 full
//!     /usr/bin/time -v target/release/examples/scale 10000000 full
use std::time::Instant;

use herd::RuleName;
use herd_sim::{Limits, Scenario, Simulation};

/// The default scenario with `clients` clients and capacity scaled in proportion.
fn scaled(clients: u64) -> Scenario {
    let mut s = Scenario::default();
    s.clients.count = clients;
    s.server.capacity = (50 * clients / 2000).max(1);
    s
}

fn main() {
    let mut args = std::env::args().skip(1);
    let clients: u64 = match args.next().map(|a| a.parse()) {
        None => 1_000_000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("error: CLIENTS must be a whole number: {e}");
            std::process::exit(2);
        }
    };
    let rules: Vec<RuleName> = match args.map(|a| a.parse()).collect::<Result<Vec<_>, _>>() {
        Ok(r) if r.is_empty() => RuleName::CLASSIC.to_vec(),
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let sim = match Simulation::new(&scaled(clients), &Limits::default()) {
        Ok(sim) => sim,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "{:<14} {:>14} {:>10} {:>16} {:>10}",
        "rule", "attempts", "seconds", "attempts/s", "all served"
    );
    for rule in rules {
        let started = Instant::now();
        let r = match sim.run(rule, 1) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        };
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{:<14} {:>14} {:>10.3} {:>16.0} {:>10}",
            rule.as_str(),
            r.requests,
            secs,
            r.requests as f64 / secs,
            r.all_served_s.map_or("—".to_owned(), |s| format!("{s} s"))
        );
    }
}
