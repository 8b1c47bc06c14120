//! The agent engine beside a plain Python reference simulation, in one run (issue 5, part 5).
//!
//! For each of the six rules of the design brief, on the default scenario (2000 clients) and
//! scaled up (100 000 clients, capacity scaled in proportion), this runs
//! `tools/reference_storm.py` once (an event heap in Python; it reports its own compute time,
//! interpreter start-up excluded) and herd's agent engine several times (the median), and
//! prints a Markdown table with the ratio.
//!
//!     cargo bench -p herd-sim --bench reference
//!     HERD_REFERENCE_CLIENTS=2000 cargo bench -p herd-sim --bench reference   # quicker
//!
//! Without `python3` on the PATH it says so and measures only the engine.
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use herd::RuleName;
use herd_sim::{Limits, Scenario, Simulation};

/// The reference's figures for one run.
struct Reference {
    compute_s: f64,
    requests: u64,
}

fn reference(script: &PathBuf, rule: RuleName, clients: u64) -> Result<Reference, String> {
    let out = Command::new("python3")
        .arg(script)
        .args([
            "--rule",
            rule.as_str(),
            "--clients",
            &clients.to_string(),
            "--json",
        ])
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("reference output: {e}"))?;
    Ok(Reference {
        compute_s: v["compute_s"].as_f64().ok_or("no compute_s")?,
        requests: v["requests"].as_u64().ok_or("no requests")?,
    })
}

/// The default scenario with `clients` clients and the capacity scaled like the reference's
/// (`max(1, round(50 · clients / 2000))`).
fn scenario(clients: u64) -> Scenario {
    let mut s = Scenario::default();
    s.clients.count = clients;
    s.server.capacity = ((50 * clients) as f64 / 2000.0).round().max(1.0) as u64;
    s
}

/// The median time of `run` over at least 5 runs and about a second (at most 51 runs).
fn median(mut run: impl FnMut()) -> Duration {
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < 5 || (started.elapsed() < Duration::from_secs(1) && times.len() < 51) {
        let t = Instant::now();
        run();
        times.push(t.elapsed());
    }
    times.sort();
    times[times.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; this binary takes no arguments of its own.
    let sizes: Vec<u64> = std::env::var("HERD_REFERENCE_CLIENTS")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![2000, 100_000]);
    let script: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "tools",
        "reference_storm.py",
    ]
    .iter()
    .collect();
    println!("| clients | rule | requests | Python reference | herd agent engine | ratio |");
    println!("|---:|---|---:|---:|---:|---:|");
    for &clients in &sizes {
        let sim = match Simulation::new(&scenario(clients), &Limits::default()) {
            Ok(sim) => sim,
            Err(e) => {
                eprintln!("{clients} clients: {e}");
                continue;
            }
        };
        for rule in RuleName::CLASSIC {
            let mut requests = 0;
            let engine = median(|| {
                let r = sim.run(rule, 1).expect("the default scenario runs");
                requests = r.requests;
            });
            let (python, ratio, agree) = match reference(&script, rule, clients) {
                Ok(p) => (
                    format!("{:.3} s", p.compute_s),
                    format!("{:.0}×", p.compute_s / engine.as_secs_f64()),
                    if p.requests == requests {
                        ""
                    } else {
                        " (reference differs)"
                    },
                ),
                Err(e) => {
                    eprintln!("reference, {rule}, {clients} clients: {e}");
                    ("-".to_owned(), "-".to_owned(), "")
                }
            };
            println!(
                "| {clients} | {rule} | {requests}{agree} | {python} | {:.3} ms | {ratio} |",
                engine.as_secs_f64() * 1e3
            );
        }
    }
}
