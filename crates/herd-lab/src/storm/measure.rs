//! The storm's figures (docs/model.md) measured from the server's ledger of arrivals and answers
//! per step, with the simulator's definitions (`herd_sim::RunResult`).
use std::time::Duration;

use super::report::StormFigures;
use super::server::{Ledger, Rules};

/// What the real server measured.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StormMeasurement {
    pub(crate) figures: StormFigures,
    /// Arrivals per window, trailing empty windows left out.
    pub(crate) arrivals: Vec<u64>,
    /// Answers per window, as long as `arrivals`.
    pub(crate) served: Vec<u64>,
    /// The first window at or after the end of the last outage.
    pub(crate) first_window_after_outage: usize,
}

/// *Served at* is the step of a client's successful attempt; *half served by* the
/// `clients / 2`-th (0-based) served-at time; *all served by* the last one, only when everyone
/// was served; *peak after outage* the most arrivals in one window from the end of the last
/// outage on. `clients_served` and `gave_up` come from the clients' own ends.
pub(crate) fn measure(
    ledger: &Ledger,
    rules: &Rules,
    step: Duration,
    clients: u64,
    clients_served: u64,
    gave_up: u64,
) -> StormMeasurement {
    let spw = rules.steps_per_window.max(1);
    let step_ns = step.as_nanos();
    let seconds = |step: u64| (u128::from(step) * step_ns) as f64 / 1e9;
    let windows = |per_step: &[u64]| -> Vec<u64> {
        per_step
            .chunks(usize::try_from(spw).unwrap_or(1))
            .map(|c| c.iter().sum())
            .collect()
    };
    let half_index = clients / 2;
    let mut served_total = 0;
    let mut half_step = None;
    let mut last_served_step = None;
    for (step, &s) in (0u64..).zip(&ledger.served) {
        if s > 0 {
            if half_step.is_none() && served_total + s > half_index {
                half_step = Some(step);
            }
            served_total += s;
            last_served_step = Some(step);
        }
    }
    let requests: u64 = ledger.arrivals.iter().sum();
    let mut arrivals = windows(&ledger.arrivals);
    let mut served = windows(&ledger.served);
    let used = arrivals.iter().rposition(|&a| a > 0).map_or(0, |i| i + 1);
    arrivals.truncate(used);
    served.truncate(used);
    let after = rules
        .outages
        .last()
        .map_or(0, |&(_, end)| end)
        .div_ceil(spw);
    let first_window_after_outage = usize::try_from(after).unwrap_or(usize::MAX);
    let peak_after_outage = arrivals
        .get(first_window_after_outage..)
        .map_or(0, |tail| tail.iter().copied().max().unwrap_or(0));
    let figures = StormFigures {
        served: served_total,
        gave_up,
        waiting: clients.saturating_sub(clients_served + gave_up),
        requests,
        half_served_s: half_step.map(seconds),
        all_served_s: (served_total == clients)
            .then_some(last_served_step)
            .flatten()
            .map(seconds),
        requests_per_client: if clients == 0 {
            0.0
        } else {
            requests as f64 / clients as f64
        },
        peak_after_outage,
    };
    StormMeasurement {
        figures,
        arrivals,
        served,
        first_window_after_outage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(steps_per_window: u64) -> Rules {
        Rules {
            capacity: 2,
            refusal_cost: herd_sim::refusal::RefusalCost::FREE,
            collapse_above: None,
            outages: vec![(0, 2)],
            steps_per_window,
        }
    }

    /// 4 clients: down for steps 0–1, then 2 answers at step 2 and 2 at step 4.
    fn ledger() -> Ledger {
        Ledger {
            arrivals: vec![4, 0, 4, 0, 2, 0, 0],
            served: vec![0, 0, 2, 0, 2, 0, 0],
            worst_tick_lag: Duration::ZERO,
        }
    }

    #[test]
    fn spec_definitions_on_a_small_ledger() {
        let m = measure(&ledger(), &rules(1), Duration::from_millis(100), 4, 4, 0);
        // Served at 0.2, 0.2, 0.4, 0.4 s: element 2 (0-based) is 0.4 s.
        assert_eq!(m.figures.half_served_s, Some(0.4));
        assert_eq!(m.figures.all_served_s, Some(0.4));
        assert_eq!(m.figures.requests, 10);
        assert_eq!(m.figures.requests_per_client, 2.5);
        assert_eq!(m.figures.peak_after_outage, 4);
        assert_eq!(
            m.arrivals,
            [4, 0, 4, 0, 2],
            "trailing empty windows dropped"
        );
        assert_eq!(m.first_window_after_outage, 2);
    }

    #[test]
    fn windows_sum_their_steps_and_not_everyone_served_has_no_all_served() {
        let m = measure(&ledger(), &rules(2), Duration::from_millis(50), 5, 4, 0);
        assert_eq!(m.arrivals, [4, 4, 2]);
        assert_eq!(m.served, [0, 2, 2]);
        assert_eq!(m.figures.all_served_s, None);
        assert_eq!(m.figures.waiting, 1);
        assert_eq!(m.first_window_after_outage, 1);
    }
}
