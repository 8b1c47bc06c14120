//! A plain second simulation of the service-graph model, written from docs/amplify.md and
//! sharing no code with herd's Monte Carlo (only the graph's parsed fields and herd's
//! generator): one entry request at a time, each call's attempts in a loop, every budget a
//! bucket of whole hundredths of a token (a first attempt deposits `budget_percent` of them,
//! a retry needs 100), uncapped and empty at the start.

use herd::rng::{Rng, SplitMix64};
use herd_sim::graph::Graph;

/// Batches of the batch-means standard error (requests share the buckets, so they are not
/// independent; batches of thousands of requests nearly are).
pub const BATCHES: u64 = 50;

/// How an answer comes back.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    Ok,
    /// Failed, marked "retries exhausted" (only with layer-aware callers).
    Marked,
    Unmarked,
}

struct World<'g> {
    graph: &'g Graph,
    layer_aware: bool,
    rng: SplitMix64,
    /// Per service, per call: the bucket's hundredths of a token, if the edge has a budget.
    buckets: Vec<Vec<Option<u64>>>,
    received: Vec<u64>,
}

impl World<'_> {
    fn execute(&mut self, s: usize) -> Answer {
        self.received[s] += 1;
        let service = &self.graph.services()[s];
        if service.fails {
            return Answer::Unmarked;
        }
        let mut answer = Answer::Ok;
        for i in 0..service.calls.len() {
            answer = match (answer, self.call(s, i)) {
                (Answer::Marked, _) | (_, Answer::Marked) => Answer::Marked,
                (Answer::Unmarked, _) | (_, Answer::Unmarked) => Answer::Unmarked,
                _ => Answer::Ok,
            };
        }
        answer
    }

    fn call(&mut self, s: usize, i: usize) -> Answer {
        let call = &self.graph.services()[s].calls[i];
        let (to, attempts, p) = (call.to, call.attempts, call.failure_probability);
        let deposit = call.budget_percent as u64;
        if let Some(tokens) = self.buckets[s][i].as_mut() {
            *tokens += deposit;
        }
        for attempt in 1..=attempts {
            if attempt > 1
                && let Some(tokens) = self.buckets[s][i].as_mut()
            {
                if *tokens < 100 {
                    break;
                }
                *tokens -= 100;
            }
            let answer = self.execute(to);
            let lost = self.rng.next_f64() < p;
            match answer {
                _ if lost => {}
                Answer::Ok => return Answer::Ok,
                Answer::Marked if self.layer_aware => return Answer::Marked,
                _ => {}
            }
        }
        // A layer that was allowed to retry marks the failure it gives up on.
        if self.layer_aware && attempts >= 2 {
            Answer::Marked
        } else {
            Answer::Unmarked
        }
    }
}

/// Per service: the mean requests per entry request over `requests` entry requests (after
/// as many again to let the buckets settle) and its batch-means standard error.
pub fn simulate(graph: &Graph, layer_aware: bool, requests: u64, seed: u64) -> Vec<(f64, f64)> {
    let services = graph.services();
    assert!(
        services
            .iter()
            .flat_map(|s| &s.calls)
            .all(|c| c.budget_percent.fract() == 0.0),
        "the reference takes whole percents"
    );
    let mut world = World {
        graph,
        layer_aware,
        rng: SplitMix64::derive(seed, 0x7265_6665),
        buckets: services
            .iter()
            .map(|s| {
                s.calls
                    .iter()
                    .map(|c| (c.budget_percent > 0.0).then_some(0))
                    .collect()
            })
            .collect(),
        received: vec![0; services.len()],
    };
    for _ in 0..requests {
        world.execute(graph.entry());
    }
    let per_batch = requests / BATCHES;
    let mut batches = vec![vec![0.0; services.len()]; BATCHES as usize];
    for batch in &mut batches {
        world.received.iter_mut().for_each(|r| *r = 0);
        for _ in 0..per_batch {
            world.execute(graph.entry());
        }
        for (b, &r) in batch.iter_mut().zip(&world.received) {
            *b = r as f64 / per_batch as f64;
        }
    }
    let n = BATCHES as f64;
    (0..services.len())
        .map(|s| {
            let mean = batches.iter().map(|b| b[s]).sum::<f64>() / n;
            let var = batches.iter().map(|b| (b[s] - mean).powi(2)).sum::<f64>() / (n - 1.0);
            (mean, (var / n).sqrt())
        })
        .collect()
}
