//! A paused server starts nothing. Dean and Barroso's tied requests ("The Tail at Scale",
//! CACM 2013) cancel a copy's twin when a server *begins executing* it, and a paused process
//! (stopped by garbage collection, say) takes nothing from its queue; so a copy that reaches
//! an idle, paused server waits for the pause to end, and its twin on a running server
//! starts, and wins, at once.
use herd_sim::latency::draws::{ServerPauses, arrivals};
use herd_sim::latency::{
    Distribution, Hiccups, LatencyModel, LatencyScenario, PolicyKind, PolicySpec, Servers,
    ServiceTime, Traffic,
};

/// Two servers, so a tied request has one copy on each; one user request a second, so the
/// servers are nearly always idle; a constant 1 ms of service; each server paused 100 ms
/// about every 2 s, so one in 21 arrivals finds a given server paused.
fn scenario() -> LatencyScenario {
    LatencyScenario {
        requests: 20_000,
        warmup_requests: 0,
        traffic: Traffic {
            rate_per_s: 1.0,
            fan_out: 1,
        },
        servers: Servers { count: 2 },
        service: ServiceTime {
            distribution: Distribution::Constant,
            mean_ms: 1.0,
            sigma: 0.0,
        },
        hiccups: Hiccups {
            every_s: 2.0,
            pause_ms: 100.0,
        },
        policies: vec![PolicySpec {
            name: "tied".into(),
            kind: PolicyKind::Tied,
            ..PolicySpec::default()
        }],
        ..LatencyScenario::default()
    }
}

/// A tied request is slow (over 2 ms) only when both servers are paused at once, a pause
/// begins during its millisecond of service, or it queues behind another request. Were a
/// paused server to start its copy (frozen) and cancel the twin, one request in 21 would
/// wait for a pause instead: 950 of 20 000 per seed, where this allows 400.
///
/// The slow ones are counted, and bounded, from the public draws: each arrival that finds
/// both servers paused is slow; and with independent servers, 4.5 % paused each, the other
/// causes add about 0.4 % of 20 000, 80 requests: 400 is over ten standard deviations of a
/// Poisson count of 80 away (a chance far below 10⁻¹⁰ a seed, over five fixed seeds).
#[test]
fn a_tied_copy_on_a_paused_server_does_not_cancel_its_twin() {
    let s = scenario();
    let model = LatencyModel::new(&s).unwrap();
    for seed in 1..=5 {
        let (_, latencies) = model.run(0, seed, herd_sim::Watch::none()).unwrap();
        let slow = latencies.iter().filter(|&&l| l > 2_000_000).count();
        // Arrivals that find both servers paused, with more than 2 ms of the pause to go.
        let mut pauses = [
            ServerPauses::new(&s, seed, 0),
            ServerPauses::new(&s, seed, 1),
        ];
        let both_paused = arrivals(&s, seed)
            .filter(|&a| {
                pauses
                    .iter_mut()
                    .map(|p| p.paused_until(a).map_or(0, |end| end - a))
                    .min()
                    .unwrap()
                    > 2_000_000
            })
            .count();
        assert!(both_paused > 0, "seed {seed}: no arrival met two pauses");
        assert!(
            slow >= both_paused && slow <= 400,
            "seed {seed}: {slow} slow requests, {both_paused} arrivals found both servers paused"
        );
    }
}
