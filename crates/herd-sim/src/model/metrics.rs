//! What one run of any model reports: named figures in the model's order.

/// Named figures of one run, in a fixed order; `None` where the figure did not happen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics {
    entries: Vec<(&'static str, Option<f64>)>,
}

impl Metrics {
    /// No metrics yet.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends (or replaces) a metric.
    pub fn set(&mut self, name: &'static str, value: Option<f64>) {
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = value,
            None => self.entries.push((name, value)),
        }
    }

    /// The metric's value: `None` for an unknown name, `Some(None)` when it did not happen.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<Option<f64>> {
        self.entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, v)| v)
    }

    /// The metrics in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, Option<f64>)> + '_ {
        self.entries.iter().copied()
    }

    /// How many metrics there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
