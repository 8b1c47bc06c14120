//! The checks behind [`Graph::new`](super::Graph::new): names, numbers, cycles, reachability.

use std::collections::HashSet;

use super::error::GraphError;
use super::model::{MAX_ATTEMPTS, MAX_BUDGET_PERCENT, MAX_CALLS, MAX_SERVICES, Service};

/// Validates the services and returns a topological order (callers first).
pub(super) fn check(services: &[Service], entry: usize) -> Result<Vec<usize>, GraphError> {
    let err = |msg: String| Err(GraphError(msg));
    if services.is_empty() {
        return err("the graph has no service".to_owned());
    }
    if services.len() > MAX_SERVICES {
        return err(format!(
            "the graph has {} services; at most {MAX_SERVICES}",
            services.len()
        ));
    }
    if entry >= services.len() {
        return err(format!("entry index {entry} is not a service"));
    }
    let mut seen = HashSet::new();
    for s in services {
        if s.name.trim().is_empty() {
            return err("a service has an empty name".to_owned());
        }
        if !seen.insert(s.name.as_str()) {
            return err(format!("duplicate service name \"{}\"", s.name));
        }
        if s.calls.len() > MAX_CALLS {
            return err(format!(
                "service \"{}\" makes {} calls; at most {MAX_CALLS}",
                s.name,
                s.calls.len()
            ));
        }
        for c in &s.calls {
            let Some(callee) = services.get(c.to) else {
                return err(format!(
                    "service \"{}\" calls unknown service #{}",
                    s.name, c.to
                ));
            };
            let edge = format!("call {} → {}", s.name, callee.name);
            if !(1..=MAX_ATTEMPTS).contains(&c.attempts) {
                return err(format!(
                    "{edge}: attempts is {}; must be 1..={MAX_ATTEMPTS} (1 = no retry)",
                    c.attempts
                ));
            }
            if !(0.0..=1.0).contains(&c.failure_probability) {
                return err(format!(
                    "{edge}: failure_probability is {}; must be in [0, 1]",
                    c.failure_probability
                ));
            }
            if !(0.0..=MAX_BUDGET_PERCENT).contains(&c.budget_percent) {
                return err(format!(
                    "{edge}: budget_percent is {}; must be in [0, {MAX_BUDGET_PERCENT}] \
                     (0 = no budget)",
                    c.budget_percent
                ));
            }
        }
    }
    let order = topological_order(services)?;
    let reachable = reachable_from(services, entry);
    if let Some(lost) = (0..services.len()).find(|&i| !reachable[i]) {
        return err(format!(
            "service \"{}\" is not reachable from entry \"{}\"",
            services[lost].name, services[entry].name
        ));
    }
    Ok(order)
}

/// Depth-first search with three colours; a grey node met again closes a cycle, which is
/// reported along the path that found it: `a → b → a`.
fn topological_order(services: &[Service]) -> Result<Vec<usize>, GraphError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    let n = services.len();
    let mut colour = vec![Colour::White; n];
    let mut post = Vec::with_capacity(n);
    for root in 0..n {
        if colour[root] != Colour::White {
            continue;
        }
        // Explicit stack of (node, next call index) so deep graphs cannot overflow.
        let mut stack = vec![(root, 0usize)];
        colour[root] = Colour::Grey;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(call) = services[node].calls.get(*next) {
                *next += 1;
                match colour[call.to] {
                    Colour::White => {
                        colour[call.to] = Colour::Grey;
                        stack.push((call.to, 0));
                    }
                    Colour::Grey => {
                        let start = stack.iter().position(|&(s, _)| s == call.to).unwrap_or(0);
                        let mut path: Vec<&str> = stack[start..]
                            .iter()
                            .map(|&(s, _)| services[s].name.as_str())
                            .collect();
                        path.push(services[call.to].name.as_str());
                        return Err(GraphError(format!(
                            "the graph has a cycle: {}",
                            path.join(" → ")
                        )));
                    }
                    Colour::Black => {}
                }
            } else {
                colour[node] = Colour::Black;
                post.push(node);
                stack.pop();
            }
        }
    }
    post.reverse();
    Ok(post)
}

fn reachable_from(services: &[Service], entry: usize) -> Vec<bool> {
    let mut seen = vec![false; services.len()];
    let mut todo = vec![entry];
    seen[entry] = true;
    while let Some(s) = todo.pop() {
        for c in &services[s].calls {
            if !seen[c.to] {
                seen[c.to] = true;
                todo.push(c.to);
            }
        }
    }
    seen
}
