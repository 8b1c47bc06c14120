//! A toy model that exists only for the workspace's tests (cargo feature `toy-model`, off by
//! default; no shipped build has it).
//!
//! It proves that a model is one folder and one line in
//! [`MODELS`](crate::registry::MODELS): with the feature on, `herd storm`, `herd sweep` and
//! the page's `/api/models` and `/api/model` run it, and no front end names it.
//!
//! A coin is flipped `flips` times with the world's generator ([`SplitMix64`] seeded by the
//! run's seed): the variant `fair` lands heads with probability ½, `biased` with probability
//! `bias` (heads when a uniform draw in `[0, 1)` is below it, so `bias = 0` never and
//! `bias = 1` always lands heads). Metrics: `heads`, the number of heads, and `longest_run`,
//! the longest run of consecutive heads.
//!
//! ```toml
//! model = "toy"
//! seed = 1      # the first seed of a comparison
//! flips = 1000  # 1 ..= 10 000 000, and at most the limits' attempts
//! bias = 0.5    # the biased coin's chance of heads, 0 ..= 1
//! ```
use herd::RuleName;
use herd::rng::{Rng, SplitMix64};
use serde::{Deserialize, Serialize};
use toml::Value;

use crate::error::ScenarioError;
use crate::limits::{self, Limits};
use crate::model::{self, Metrics, MetricsResult, Model, Variant};

/// Most flips in one run, whatever the limits.
const MAX_FLIPS: u64 = 10_000_000;
/// The variants, in order.
const VARIANTS: [&str; 2] = ["fair", "biased"];

/// The toy's scenario, as written in TOML.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
struct ToyScenario {
    /// `"toy"` (read by the dispatch; optional here).
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    seed: u64,
    flips: u64,
    bias: f64,
}

impl Default for ToyScenario {
    fn default() -> Self {
        Self {
            model: None,
            seed: 1,
            flips: 1000,
            bias: 0.5,
        }
    }
}

/// A checked toy scenario.
#[derive(Clone, Debug)]
pub(crate) struct Toy {
    scenario: ToyScenario,
}

impl Toy {
    fn new(scenario: ToyScenario, limits: &Limits) -> Result<Self, ScenarioError> {
        if !(1..=MAX_FLIPS).contains(&scenario.flips) {
            return Err(ScenarioError::field(
                "flips",
                format!("must be 1 to {MAX_FLIPS}, got {}", scenario.flips),
            ));
        }
        limits::within(
            scenario.flips,
            limits.max_run_attempts,
            "flips",
            "flips",
            "lower it",
        )?;
        if !(scenario.bias.is_finite() && (0.0..=1.0).contains(&scenario.bias)) {
            return Err(ScenarioError::field(
                "bias",
                format!("must be between 0 and 1, got {}", scenario.bias),
            ));
        }
        Ok(Self { scenario })
    }

    /// Flips the coin that lands heads with probability `p`: `(heads, longest run)`.
    fn flip(&self, p: f64, seed: u64) -> (u64, u64) {
        let mut rng = SplitMix64::new(seed);
        let (mut heads, mut run, mut longest) = (0, 0, 0);
        for _ in 0..self.scenario.flips {
            if rng.next_f64() < p {
                heads += 1;
                run += 1;
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        (heads, longest)
    }
}

impl Model for Toy {
    const NAME: &'static str = "toy";
    const ABOUT: &'static str = "a coin flipped with the world's generator (tests only)";
    const METRICS: &'static [&'static str] = &["heads", "longest_run"];

    fn check(tree: &Value, limits: &Limits) -> Result<Self, ScenarioError> {
        Toy::new(model::from_tree(tree, &[])?, limits)
    }

    fn sweepable(&self) -> Result<Value, ScenarioError> {
        model::to_tree(&self.scenario, Self::NAME)
    }

    /// None: the toy compares its two coins, see [`Model::variants`].
    fn rules(&self) -> Vec<RuleName> {
        Vec::new()
    }

    fn seed(&self) -> u64 {
        self.scenario.seed
    }

    fn cost(&self) -> u64 {
        self.scenario.flips
    }

    fn variants(&self) -> Vec<Variant> {
        VARIANTS.map(|v| Variant::Named(v.to_owned())).into()
    }

    fn run(&self, variant: &Variant, seed: u64, _: crate::Watch<'_>) -> MetricsResult {
        let p = match variant {
            Variant::Named(name) if name == VARIANTS[0] => 0.5,
            Variant::Named(name) if name == VARIANTS[1] => self.scenario.bias,
            other => {
                return Err(ScenarioError::general(format!(
                    "the toy model compares the coins {}, not \"{other}\"",
                    VARIANTS.join(" and ")
                )));
            }
        };
        let (heads, longest) = self.flip(p, seed);
        let mut metrics = Metrics::new();
        metrics.set("heads", Some(heads as f64));
        metrics.set("longest_run", Some(longest as f64));
        Ok(metrics)
    }
}
