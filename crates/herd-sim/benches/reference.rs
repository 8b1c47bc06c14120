//! The agent engine beside a plain Python reference simulation, in one run.
//!
//! For each classic rule (`RuleName::CLASSIC`), on the default scenario (2000 clients) and
//! scaled up (100 000 clients, capacity scaled in proportion), this runs
//! `tools/reference_storm.py` (an event heap in Python; it reports its own compute time,
//! interpreter start-up excluded; the median of three runs when a run is shorter than 2 s,
//! else one run) and herd's agent and cohort engines several times each (the median), and
//! prints a Markdown table with the ratios. A second table times the cohort
//! engine alone from 2000 to 10^9 clients: its cost should not grow with the clients.
//!
//!     cargo bench -p herd-sim --bench reference
//!     HERD_REFERENCE_CLIENTS=2000 cargo bench -p herd-sim --bench reference   # quicker
//!
//! Without `python3` on the PATH it says so and measures only the engine.
use herd_sim::Watch;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use herd::RuleName;
use herd_sim::{Engine, Limits, Scenario, Simulation};

/// The reference's figures for one run.
struct Reference {
    compute_s: f64,
    requests: u64,
}

/// The reference's median over three runs when one run is short (under 2 s), else one run:
/// a single short Python run moves by up to 2× on a shared machine.
fn reference(script: &PathBuf, rule: RuleName, clients: u64) -> Result<Reference, String> {
    let first = reference_once(script, rule, clients)?;
    if first.compute_s >= 2.0 {
        return Ok(first);
    }
    let mut runs = vec![
        first,
        reference_once(script, rule, clients)?,
        reference_once(script, rule, clients)?,
    ];
    runs.sort_by(|a, b| a.compute_s.total_cmp(&b.compute_s));
    Ok(runs.swap_remove(1))
}

fn reference_once(script: &PathBuf, rule: RuleName, clients: u64) -> Result<Reference, String> {
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

/// Times `engine` on `scenario`, or says why it cannot run it.
fn time_engine(
    scenario: &Scenario,
    engine: Engine,
    rule: RuleName,
) -> Result<(Duration, u64), String> {
    let sim =
        Simulation::with_engine(scenario, &Limits::default(), engine).map_err(|e| e.to_string())?;
    sim.run(rule, 1, Watch::none()).map_err(|e| e.to_string())?;
    let mut requests = 0;
    let time = median(|| {
        requests = sim
            .run(rule, 1, Watch::none())
            .map(|r| r.requests)
            .unwrap_or(0);
    });
    Ok((time, requests))
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
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
    println!(
        "| clients | rule | requests | Python reference | agent engine | ratio | cohort engine | ratio |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for &clients in &sizes {
        for rule in RuleName::CLASSIC {
            let (agent, requests) = match time_engine(&scenario(clients), Engine::Agent, rule) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("agent engine, {rule}, {clients} clients: {e}");
                    continue;
                }
            };
            let cohort = time_engine(&scenario(clients), Engine::Cohort, rule);
            let python = reference(&script, rule, clients);
            if let Err(e) = &python {
                eprintln!("reference, {rule}, {clients} clients: {e}");
            }
            let ratio = |d: Duration| match &python {
                Ok(p) => format!("{:.0}×", p.compute_s / d.as_secs_f64()),
                Err(_) => "-".to_owned(),
            };
            let agree = match &python {
                Ok(p) if p.requests != requests => " (reference differs)",
                _ => "",
            };
            let (cohort_time, cohort_ratio) = match &cohort {
                Ok((d, _)) => (ms(*d), ratio(*d)),
                Err(_) => ("not supported".to_owned(), "-".to_owned()),
            };
            println!(
                "| {clients} | {rule} | {requests}{agree} | {} | {} | {} | {cohort_time} | {cohort_ratio} |",
                python
                    .as_ref()
                    .map_or_else(|_| "-".to_owned(), |p| format!("{:.3} s", p.compute_s)),
                ms(agent),
                ratio(agent),
            );
        }
    }

    println!();
    println!("| cohort engine | 2000 clients | 10^5 | 10^7 | 10^9 |");
    println!("|---|---:|---:|---:|---:|");
    for rule in RuleName::CLASSIC {
        let mut row = format!("| {rule} |");
        for clients in [2000, 100_000, 10_000_000, 1_000_000_000] {
            match time_engine(&scenario(clients), Engine::Cohort, rule) {
                Ok((d, _)) => row.push_str(&format!(" {} |", ms(d))),
                Err(e) => {
                    eprintln!("cohort engine, {rule}, {clients} clients: {e}");
                    row.push_str(" - |");
                }
            }
        }
        println!("{row}");
    }
}
