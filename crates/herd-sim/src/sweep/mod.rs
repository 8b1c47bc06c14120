//! Sweeps: every combination of some scenario fields, every rule, many seeds, in parallel.
//!
//! A sweep starts from a scenario tree (a file, or the default scenario), fills in every field
//! the model knows ([`registry::complete`]), and applies one value of each [`Axis`] to get a
//! *cell*. Each cell is checked as a whole scenario, so all of the model's validation applies
//! and an error names the `--set` and the field. Cells are the product of the axes, the first
//! axis varying slowest.
//!
//! Every cell runs every rule with the same seeds `S..S+K-1`, on all cores. That makes a
//! sweep reproducible, not paired: a cell's parameters change which draws its runs consume,
//! so two cells' runs with one seed share no draws after the first that differs, and the
//! intervals are per cell, not on differences. The output order is fixed by the grid, never
//! by thread timing, so a sweep is reproducible bit for bit. Each (cell, rule) is summarised
//! per metric by its mean and a 95 % interval ([`Stats`]: Wilson's for a proportion such as
//! `recovered`, Student's t otherwise), over the runs where the metric happened, with their
//! count.
//!
//! # Examples
//!
//! ```
//! use herd::RuleName;
//! use herd_sim::sweep::{Axis, Sweep};
//! use herd_sim::{Cancel, Limits};
//!
//! let base: toml::Value = toml::from_str("horizon_s = 120\n[clients]\ncount = 200\n").unwrap();
//! let axes: Vec<Axis> = vec!["server.capacity=10,20".parse()?];
//! let sweep = Sweep::new(&base, axes, Some(&[RuleName::Full]), None, 3, &Limits::default())?;
//! let rows = sweep.run(&|| {}, &Cancel::new())?; // no progress bar, no Ctrl-C
//! assert_eq!(rows.len(), 2); // two cells × one rule
//! let all = rows[0].metric("all_served_s").unwrap();
//! assert_eq!(all.defined, 3);
//! # Ok::<(), herd_sim::sweep::SweepError>(())
//! ```
use std::fmt;

use herd::RuleName;
use rayon::prelude::*;
use toml::Value;

use crate::error::ScenarioError;
use crate::limits::Limits;
use std::sync::Arc;

use crate::model::{AnyModel, Metrics, Variant};
use crate::registry;
use crate::watch::{Cancel, Watch};

mod grid;
mod stats;
mod tree;

pub use grid::{Axis, MAX_AXIS_VALUES, show};
pub use stats::{Interval, PROPORTIONS, Stats, t975};

use grid::Target;

/// The most cells in one sweep.
pub const MAX_CELLS: usize = 100_000;
/// The most runs (cells × rules × seeds) in one sweep.
pub const MAX_RUNS: u64 = 1_000_000;

/// Why a sweep cannot be set up or run: one line naming the flag, the cell and the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepError(String);

impl SweepError {
    pub(crate) fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SweepError {}

/// One point of the grid: a value of each axis, and the checked scenario.
#[derive(Clone, Debug)]
pub struct Cell {
    values: Vec<Value>,
    model: Arc<dyn AnyModel>,
}

impl Cell {
    /// The value of each axis, in axis order.
    #[must_use]
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The cell's model, ready to run.
    #[must_use]
    pub fn model(&self) -> &dyn AnyModel {
        &*self.model
    }
}

/// A checked sweep, ready to run.
#[derive(Clone, Debug)]
pub struct Sweep {
    base: Value,
    axes: Vec<Axis>,
    cells: Vec<Cell>,
    rules: Vec<Variant>,
    seeds: Vec<u64>,
    metrics: Vec<&'static str>,
    headline: Vec<&'static str>,
}

/// One (cell, rule) over its seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The cell's index in [`Sweep::cells`].
    pub cell: usize,
    /// The rule, or the model's own variant (a hedging policy).
    pub rule: Variant,
    /// Runs (seeds).
    pub runs: usize,
    /// Each metric of [`Sweep::metric_names`], in order.
    pub stats: Vec<(&'static str, Stats)>,
}

impl Row {
    /// The summary of one metric, by name.
    #[must_use]
    pub fn metric(&self, name: &str) -> Option<&Stats> {
        self.stats.iter().find(|(n, _)| *n == name).map(|(_, s)| s)
    }
}

fn label(axes: &[Axis], values: &[Value]) -> String {
    axes.iter()
        .zip(values)
        .map(|(a, v)| format!("{}={}", a.name(), show(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Names the `--set` at fault when the field in error is swept and its value fails alone;
/// otherwise the whole cell (values that contradict each other).
fn blame(
    full: &Value,
    axes: &[Axis],
    values: &[Value],
    err: &ScenarioError,
    limits: &Limits,
) -> SweepError {
    for (axis, v) in axes.iter().zip(values) {
        if err.field_name() != Some(axis.path().as_str()) {
            continue;
        }
        // The cell's throttle kind stays: the setting is checked against that kind.
        let mut tree = full.clone();
        let kinds = axes
            .iter()
            .zip(values)
            .filter(|(a, _)| a.is_throttle_kind());
        let kinds_ok = kinds
            .into_iter()
            .all(|(a, k)| apply(&mut tree, a, k).is_ok());
        if kinds_ok
            && apply(&mut tree, axis, v).is_ok()
            && registry::check(&tree, limits).err().as_ref() == Some(err)
        {
            return SweepError::new(format!("--set {}={}: {err}", axis.name(), show(v)));
        }
    }
    SweepError::new(format!("cell {}: {err}", label(axes, values)))
}

/// The value index on each axis of cell `index`, the first axis varying slowest.
fn picks(axes: &[Axis], index: usize) -> Vec<usize> {
    let mut rest = index;
    let mut picks = vec![0usize; axes.len()];
    for (k, axis) in axes.iter().enumerate().rev() {
        picks[k] = rest % axis.values().len();
        rest /= axis.values().len();
    }
    picks
}

fn apply(tree: &mut Value, axis: &Axis, v: &Value) -> Result<(), String> {
    let value = axis.tree_value(v)?;
    match &axis.target {
        Target::Path(keys) => tree::set(tree, keys, value),
        Target::OutageLength => {
            let keys = ["server".to_owned(), "outages".to_owned()];
            tree::set(tree, &keys, value)
        }
        Target::ThrottleKind => {
            let Value::Table(top) = tree else {
                return Err("the scenario is not a table".to_owned());
            };
            // A model whose `[retry]` is optional (the latency model's) gets one.
            let retry = top
                .entry("retry")
                .or_insert_with(|| Value::Table(toml::Table::new()));
            let Value::Table(retry) = retry else {
                return Err(format!(
                    "retry is not a table, so it has no {}",
                    grid::THROTTLE_TABLE
                ));
            };
            if value.as_table().is_some_and(toml::Table::is_empty) {
                retry.remove("throttle");
            } else {
                retry.insert("throttle".to_owned(), value);
            }
            Ok(())
        }
    }
}

/// Applies a cell's values: the throttle's kind first (it rewrites the table whose settings
/// other axes may set), then the rest in axis order.
fn apply_all(tree: &mut Value, axes: &[Axis], values: &[Value]) -> Result<(), String> {
    let pairs = || axes.iter().zip(values);
    for (axis, v) in pairs().filter(|(a, _)| a.is_throttle_kind()) {
        apply(tree, axis, v)?;
    }
    for (axis, v) in pairs().filter(|(a, _)| !a.is_throttle_kind()) {
        apply(tree, axis, v)?;
    }
    Ok(())
}

/// Whether an axis sets one of the throttle's settings (not its kind).
fn sets_throttle_setting(axis: &Axis) -> bool {
    !axis.is_throttle_kind()
        && axis
            .path()
            .strip_prefix(grid::THROTTLE_TABLE)
            .is_some_and(|rest| rest.starts_with('.'))
}

impl Sweep {
    /// Checks every value of every axis and every cell, and prepares each cell's model.
    ///
    /// `rules`: `None` for the scenario's own. `first_seed`: `None` for the scenario's `seed`
    /// (1 if it has none). `seeds`: runs per cell and rule, seeds `first..first + seeds`.
    ///
    /// # Errors
    ///
    /// An unknown path, a value of the wrong type or out of range (naming the `--set`), a
    /// cell whose values contradict each other (naming the cell), the same path swept twice,
    /// `seed` or `retry.rules` swept (use the seed and rule options), or a sweep larger than
    /// [`MAX_CELLS`] or [`MAX_RUNS`].
    pub fn new(
        base: &Value,
        mut axes: Vec<Axis>,
        rules: Option<&[RuleName]>,
        first_seed: Option<u64>,
        seeds: u64,
        limits: &Limits,
    ) -> Result<Self, SweepError> {
        if seeds == 0 {
            return Err(SweepError::new("--runs must be at least 1"));
        }
        let full = registry::complete(base).map_err(|e| SweepError::new(e.to_string()))?;
        for (i, axis) in axes.iter().enumerate() {
            let path = axis.path();
            match path.as_str() {
                "seed" => {
                    return Err(SweepError::new(format!(
                        "--set {axis}: sweep seeds with --seed and --runs"
                    )));
                }
                "retry.rules" => {
                    return Err(SweepError::new(format!(
                        "--set {axis}: choose rules with --rules"
                    )));
                }
                _ => {}
            }
            if axes[..i].iter().any(|a| a.path() == path) {
                return Err(SweepError::new(format!(
                    "--set {}: {path} is already swept",
                    axis.name()
                )));
            }
        }
        let kind_swept = axes.iter().any(Axis::is_throttle_kind);
        if let Some(axis) = axes.iter().find(|a| sets_throttle_setting(a))
            && !kind_swept
            && full.get("retry").and_then(|r| r.get("throttle")).is_none()
        {
            return Err(SweepError::new(format!(
                "--set {}: the scenario has no [retry.throttle]; choose one with --throttle \
                 KIND or --set {}=KIND",
                axis.name(),
                grid::THROTTLE_KIND
            )));
        }
        // Each value on its own for what does not depend on the others (the path, the type),
        // so that an error names the one `--set` at fault. A throttle's setting depends on the
        // kind swept beside it: its cells check it.
        for axis in axes
            .iter_mut()
            .filter(|a| !(kind_swept && sets_throttle_setting(a)))
        {
            let mut held = Vec::with_capacity(axis.values().len());
            for v in axis.values() {
                let at = |msg: String| {
                    SweepError::new(format!("--set {}={}: {msg}", axis.name(), show(v)))
                };
                let mut tree = full.clone();
                apply(&mut tree, axis, v).map_err(at)?;
                // Keep the value as the tree holds it (`1e3` → `1000` for an integer field).
                held.push(match &axis.target {
                    Target::Path(keys) => held_value(&tree, keys).unwrap_or_else(|| v.clone()),
                    Target::OutageLength | Target::ThrottleKind => v.clone(),
                });
            }
            *axis.values_mut() = held;
        }
        let cells_count = axes
            .iter()
            .try_fold(1usize, |n, a| n.checked_mul(a.values().len()))
            .filter(|&n| n <= MAX_CELLS)
            .ok_or_else(|| {
                SweepError::new(format!(
                    "the grid has more than {MAX_CELLS} cells; sweep fewer values with --set"
                ))
            })?;
        let mut cells = Vec::with_capacity(cells_count);
        for index in 0..cells_count {
            let picks = picks(&axes, index);
            let values: Vec<Value> = axes
                .iter()
                .zip(&picks)
                .map(|(a, &p)| a.values()[p].clone())
                .collect();
            let mut tree = full.clone();
            apply_all(&mut tree, &axes, &values)
                .map_err(|e| SweepError::new(format!("cell {}: {e}", label(&axes, &values))))?;
            let model = registry::check(&tree, limits)
                .map_err(|e| blame(&full, &axes, &values, &e, limits))?;
            cells.push(Cell {
                values,
                model: Arc::from(model),
            });
        }
        // The scenario's rules, from the first cell: the base itself may be too large to
        // run before the --set values make it smaller.
        let rules = match rules {
            Some(r) if !r.is_empty() => dedup(r),
            _ => cells
                .first()
                .map(|c| c.model.variants())
                .unwrap_or_default(),
        };
        let first = first_seed.unwrap_or_else(|| {
            full.get("seed")
                .and_then(Value::as_integer)
                .and_then(|s| u64::try_from(s).ok())
                .unwrap_or(1)
        });
        let runs = (cells.len() as u128) * (rules.len() as u128) * u128::from(seeds);
        if runs > u128::from(MAX_RUNS) {
            return Err(SweepError::new(format!(
                "{} cells × {} rules × {seeds} seeds = {runs} runs; at most {MAX_RUNS} (fewer --set values, --rules or --runs)",
                cells.len(),
                rules.len()
            )));
        }
        let seeds: Vec<u64> = (0..seeds).map(|k| first.wrapping_add(k)).collect();
        let (mut metrics, mut headline): (Vec<&'static str>, Vec<&'static str>) =
            Default::default();
        for cell in &cells {
            for &m in cell.model.metric_names() {
                if !metrics.contains(&m) {
                    metrics.push(m);
                }
            }
            for &m in cell.model.headline() {
                if !headline.contains(&m) {
                    headline.push(m);
                }
            }
        }
        Ok(Self {
            base: full,
            axes,
            cells,
            rules,
            seeds,
            metrics,
            headline,
        })
    }

    /// The base scenario with every field filled in, before any `--set`.
    #[must_use]
    pub fn base(&self) -> &Value {
        &self.base
    }

    /// The axes, in the order given.
    #[must_use]
    pub fn axes(&self) -> &[Axis] {
        &self.axes
    }

    /// The cells, the first axis varying slowest.
    #[must_use]
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// The rules (or the model's own variants) every cell runs.
    #[must_use]
    pub fn rules(&self) -> &[Variant] {
        &self.rules
    }

    /// The seeds every cell and rule runs.
    #[must_use]
    pub fn seeds(&self) -> &[u64] {
        &self.seeds
    }

    /// The metrics reported, in order (the union over the cells' models).
    #[must_use]
    pub fn metric_names(&self) -> &[&'static str] {
        &self.metrics
    }

    /// The metrics a table shows when the caller names none: the cells' models'
    /// [`Model::HEADLINE`](crate::model::Model::HEADLINE)s, in order.
    #[must_use]
    pub fn headline(&self) -> &[&'static str] {
        &self.headline
    }

    /// Runs in all: cells × rules × seeds.
    #[must_use]
    pub fn runs(&self) -> u64 {
        (self.cells.len() * self.rules.len() * self.seeds.len()) as u64
    }

    /// Client-runs in all: the sum over runs of the clients in each. A measure of the work.
    #[must_use]
    pub fn client_runs(&self) -> u128 {
        let per_cell = (self.rules.len() * self.seeds.len()) as u128;
        self.cells
            .iter()
            .map(|c| u128::from(c.model.cost()) * per_cell)
            .sum()
    }

    /// For each axis, the index of the cell's value among the axis's values.
    #[must_use]
    pub fn picks(&self, cell: usize) -> Vec<usize> {
        picks(&self.axes, cell)
    }

    /// A cell's values as `field=value, …`.
    #[must_use]
    pub fn label(&self, cell: usize) -> String {
        self.cells
            .get(cell)
            .map_or_else(String::new, |c| label(&self.axes, &c.values))
    }

    /// Runs every cell × rule × seed on all cores and summarises each (cell, rule), in the
    /// order cell-major, then rule. `done` is called after each run (for a progress bar).
    /// Once `cancel` is set (Ctrl-C), no further run starts and the runs under way finish:
    /// the rows returned are those whose every seed ran, so an interrupted sweep has fewer
    /// than [`Sweep::runs`] / seeds, each as it would be in the whole sweep.
    ///
    /// # Errors
    ///
    /// A run failed (a rule cannot be built from a cell's parameters, or a run exceeds its
    /// limits), naming the cell, rule and seed.
    pub fn run(&self, done: &(dyn Fn() + Sync), cancel: &Cancel) -> Result<Vec<Row>, SweepError> {
        let (r, k) = (self.rules.len(), self.seeds.len());
        let total = self.cells.len() * r * k;
        let metrics: Vec<Option<Metrics>> = (0..total)
            .into_par_iter()
            .map(|i| {
                if cancel.is_cancelled() {
                    return Ok(None);
                }
                let (cell, rule, seed) = (i / (r * k), &self.rules[(i / k) % r], self.seeds[i % k]);
                let result = self.cells[cell]
                    .model
                    .run(rule, seed, Watch::none())
                    .map_err(|e| {
                        SweepError::new(format!(
                            "cell {}, rule {rule}, seed {seed}: {e}",
                            self.label(cell)
                        ))
                    });
                done();
                result.map(Some)
            })
            .collect::<Result<_, _>>()?;
        Ok(metrics
            .chunks(k.max(1))
            .enumerate()
            .filter_map(|(i, runs)| {
                // A row is whole or left out.
                let runs: Vec<&Metrics> = runs.iter().map(Option::as_ref).collect::<Option<_>>()?;
                Some(Row {
                    cell: i / r,
                    rule: self.rules[i % r].clone(),
                    runs: runs.len(),
                    stats: self
                        .metrics
                        .iter()
                        .map(|&m| {
                            (
                                m,
                                Stats::of_metric(m, runs.iter().map(|x| x.get(m).flatten())),
                            )
                        })
                        .collect(),
                })
            })
            .collect())
    }
}

/// The value the tree holds at `keys`.
fn held_value(tree: &Value, keys: &[String]) -> Option<Value> {
    let mut node = tree;
    for key in keys {
        node = node.get(key)?;
    }
    Some(node.clone())
}

fn dedup(rules: &[RuleName]) -> Vec<Variant> {
    let mut out = Vec::with_capacity(rules.len());
    for &r in rules {
        let v = Variant::Rule(r);
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}
