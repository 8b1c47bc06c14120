//! A mesh: services, who calls whom, and which configuration file governs each call. Its
//! edges take their attempts (and ratio budgets) from the translated policies, and the
//! result is the service graph of `herd amplify` (docs/amplify.md): the requests each
//! service receives per entry request when the failing services fail, and the advice.
//!
//! The advice is the what-if's fix ([`whatif::fix`], what the what-if simulates beside the
//! policies as set) of the path to the failure, counted on the graph: on that path each call
//! takes its policy's attempts after the fix, and off it a call into a failing service keeps
//! its own and every other call makes one attempt. It never proposes a count the policies do
//! not have (`herd amplify`'s advice, on graphs without policies, gives every kept call the
//! graph's largest), so the counts it prints are those of the fix the what-if runs.
//!
//! ```toml
//! entry = "frontend"
//! [[service]]
//! name = "frontend"
//! calls = [{ to = "checkout", config = "mesh-frontend.yaml" }]
//! [[service]]
//! name = "checkout"
//! fails = true
//! ```
//!
//! A call names its `config` file (relative to the mesh file) and, when that file holds more
//! than one retrying policy, the `policy` (a policy's name, or the object before its `/`);
//! a call without `config` does not retry.
use serde::Deserialize;

use super::storm::layers;
use super::whatif::{self, FixChange};
use super::{CheckError, Finding, Translation};
use crate::graph::{self, Amplification, Graph, MAX_ATTEMPTS, Prediction};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MeshFile {
    entry: String,
    #[serde(rename = "service", default)]
    services: Vec<MeshService>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MeshService {
    name: String,
    #[serde(default)]
    fails: bool,
    #[serde(default)]
    calls: Vec<MeshCall>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MeshCall {
    to: String,
    config: Option<String>,
    policy: Option<String>,
}

/// A checked mesh file.
#[derive(Debug)]
pub struct Mesh {
    file: String,
    mesh: MeshFile,
}

/// One call of the mesh and the policy that governs it.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshEdge {
    /// The caller.
    pub from: String,
    /// The callee.
    pub to: String,
    /// The governing policy, if any.
    pub policy: Option<Translation>,
    /// Attempts per call in the graph (a budget-bound policy gets the graph's most, 100,
    /// with its budget).
    pub attempts: u32,
    /// The edge's ratio budget, in percent of calls (0: none).
    pub budget_percent: f64,
}

/// Where the mesh's retries belong: the what-if's fix of the path to the failure, counted.
#[derive(Clone, Debug)]
pub struct MeshAdvice {
    /// The calls that keep retrying, as `(caller, callee, attempts)`, services by index.
    pub retry_on: Vec<(usize, usize, u32)>,
    /// The advised graph.
    pub graph: Graph,
    /// Its expected counts.
    pub prediction: Prediction,
    /// The fix's changes on the path, in the systems' own terms (the what-if's).
    pub changes: Vec<FixChange>,
}

/// What a mesh does when its failing services fail.
#[derive(Clone, Debug)]
pub struct MeshReport {
    /// The service graph.
    pub graph: Graph,
    /// Its calls, in file order.
    pub edges: Vec<MeshEdge>,
    /// Requests per service per entry request.
    pub prediction: Prediction,
    /// Amplification at each failing service.
    pub amplification: Vec<Amplification>,
    /// Which calls alone should retry, and the counts then.
    pub advice: MeshAdvice,
    /// The retrying policies on the first path from the entry to a failing service, caller
    /// first: the layers [`storm::compare_layers`](super::storm::compare_layers) runs.
    pub path: Vec<Translation>,
    /// `multiple-layers` on that path.
    pub findings: Vec<Finding>,
}

impl Mesh {
    /// Parses a mesh file named `file`.
    ///
    /// # Errors
    ///
    /// A field that is missing, unknown or of the wrong type, with its line.
    pub fn from_toml(file: &str, text: &str) -> Result<Self, CheckError> {
        let mesh: MeshFile = toml::from_str(text).map_err(|e| {
            // As graph files count lines (graph/file.rs): newlines before the span, plus one.
            let line = e.span().map_or(0, |s| {
                text[..s.start.min(text.len())].matches('\n').count() + 1
            });
            CheckError::new(file, line, "", e.message().trim().replace('\n', " "))
        })?;
        Ok(Self {
            file: file.to_owned(),
            mesh,
        })
    }

    /// The configuration files the calls name, each once, as written.
    #[must_use]
    pub fn configs(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for call in self.mesh.services.iter().flat_map(|s| &s.calls) {
            if let Some(c) = call.config.as_deref()
                && !out.contains(&c)
            {
                out.push(c);
            }
        }
        out
    }

    /// The mesh with each call's policy: `policies(config)` gives the translations of a
    /// configuration file named as the mesh writes it.
    ///
    /// # Errors
    ///
    /// A call whose file holds no retry policy, or several without `policy` naming one; a
    /// graph `herd amplify` would refuse (a cycle, an unknown service), naming the mesh file.
    pub fn amplify<'a>(
        &self,
        policies: impl Fn(&str) -> &'a [Translation],
    ) -> Result<MeshReport, CheckError> {
        let bad = |message: String| CheckError::new(&self.file, 0, "", message);
        let mut edges = Vec::new();
        for s in &self.mesh.services {
            for c in &s.calls {
                let policy = match c.config.as_deref() {
                    None => None,
                    Some(config) => {
                        Some(pick(policies(config), c.policy.as_deref()).ok_or_else(|| {
                            bad(format!(
                                "{} → {}: {config} holds no retry policy{}",
                                s.name,
                                c.to,
                                c.policy.as_ref().map_or(
                                    " (or several: name one with policy = …)".to_owned(),
                                    |p| { format!(" named {p:?}") }
                                )
                            ))
                        })?)
                    }
                };
                let (attempts, budget_percent) = in_graph(policy);
                edges.push(MeshEdge {
                    from: s.name.clone(),
                    to: c.to.clone(),
                    policy: policy.cloned(),
                    attempts,
                    budget_percent,
                });
            }
        }
        let counts = |per_edge: &[(u32, f64)]| -> Result<(Graph, Prediction), CheckError> {
            let graph =
                Graph::from_toml(&self.graph_text(per_edge)).map_err(|e| bad(e.to_string()))?;
            let prediction = graph::predict(&graph, graph::Options::default())
                .map_err(|e| bad(e.to_string()))?;
            Ok((graph, prediction))
        };
        let configured: Vec<(u32, f64)> = edges
            .iter()
            .map(|e| (e.attempts, e.budget_percent))
            .collect();
        let (graph, prediction) = counts(&configured)?;
        let amplification = graph::amplification(&graph, &prediction, graph::Options::default())
            .map_err(|e| bad(e.to_string()))?;
        let path = path_to_failure(&self.mesh, &edges);
        let (advised, changes) = advised(&self.mesh, &edges, &path);
        let (advised_graph, advised_prediction) = counts(&advised)?;
        let index = |name: &str| graph.index_of(name).unwrap_or(0);
        let retry_on = edges
            .iter()
            .zip(&advised)
            .filter(|(_, (a, _))| *a > 1)
            .map(|(e, (a, _))| (index(&e.from), index(&e.to), *a))
            .collect();
        let findings = super::findings::layers(&path);
        Ok(MeshReport {
            graph,
            edges,
            prediction,
            amplification,
            advice: MeshAdvice {
                retry_on,
                graph: advised_graph,
                prediction: advised_prediction,
                changes,
            },
            path,
            findings,
        })
    }

    /// The graph file of `herd amplify` for the mesh, each call (in file order) with its
    /// attempts and ratio budget.
    fn graph_text(&self, per_edge: &[(u32, f64)]) -> String {
        let mut text = format!("entry = {}\n", toml_string(&self.mesh.entry));
        let mut per_edge = per_edge.iter();
        for s in &self.mesh.services {
            let calls: Vec<String> = s
                .calls
                .iter()
                .zip(per_edge.by_ref())
                .map(|(c, (attempts, budget_percent))| {
                    format!(
                        "{{ to = {}, attempts = {attempts}, budget_percent = {budget_percent} }}",
                        toml_string(&c.to)
                    )
                })
                .collect();
            text.push_str(&format!(
                "[[service]]\nname = {}\nfails = {}\ncalls = [{}]\n",
                toml_string(&s.name),
                s.fails,
                calls.join(", ")
            ));
        }
        text
    }
}

/// A call's attempts and ratio budget (percent of calls) in the graph, from its policy: a
/// budget-bound policy gets the graph's most attempts, with its budget.
fn in_graph(policy: Option<&Translation>) -> (u32, f64) {
    let budget_percent = policy
        .and_then(|t| t.throttle.as_ref())
        .filter(|th| th.kind == "ratio")
        .and_then(|th| th.param("retry_ratio"))
        .map_or(0.0, |r| (r * 100.0).min(graph::MAX_BUDGET_PERCENT));
    let attempts = policy
        .map_or(1, |t| t.max_attempts.unwrap_or(MAX_ATTEMPTS))
        .clamp(1, MAX_ATTEMPTS);
    (attempts, budget_percent)
}

/// The advice, each call's attempts and budget, and the fix's changes: the what-if's fix of
/// `path` (the policies on the path to the failure, caller first) on the calls those
/// policies govern; off the path, a call into a failing service keeps its own, every other
/// call makes one attempt.
fn advised(
    mesh: &MeshFile,
    edges: &[MeshEdge],
    path: &[Translation],
) -> (Vec<(u32, f64)>, Vec<FixChange>) {
    let refs: Vec<&Translation> = path.iter().collect();
    let fix = whatif::fix(&refs);
    let same =
        |a: &Translation, b: &Translation| (&a.file, a.line, &a.name) == (&b.file, b.line, &b.name);
    let fails = |name: &str| mesh.services.iter().any(|s| s.name == name && s.fails);
    let per_edge = edges
        .iter()
        .map(|e| {
            let on_path = e
                .policy
                .as_ref()
                .and_then(|t| path.iter().position(|p| same(p, t)).map(|i| &fix.path[i]));
            match on_path {
                Some(fixed) => in_graph(Some(fixed)),
                None if fails(&e.to) => (e.attempts, e.budget_percent),
                None => (1, e.budget_percent),
            }
        })
        .collect();
    (per_edge, fix.changes)
}

/// The policy a call names, or the file's only retrying policy (its first, when none retries).
fn pick<'a>(policies: &'a [Translation], name: Option<&str>) -> Option<&'a Translation> {
    match name {
        Some(n) => policies
            .iter()
            .find(|t| t.name == n || t.name.split('/').next() == Some(n)),
        None => {
            let retrying: Vec<_> = policies.iter().filter(|t| t.retries()).collect();
            match retrying.as_slice() {
                [one] => Some(*one),
                [] => policies.first(),
                _ => None,
            }
        }
    }
}

/// The retrying policies on the first path (depth first, in file order) from the entry to a
/// failing service.
fn path_to_failure(mesh: &MeshFile, edges: &[MeshEdge]) -> Vec<Translation> {
    fn walk<'a>(
        at: &str,
        mesh: &MeshFile,
        edges: &'a [MeshEdge],
        path: &mut Vec<&'a MeshEdge>,
    ) -> bool {
        if mesh.services.iter().any(|s| s.name == at && s.fails) {
            return true;
        }
        for e in edges.iter().filter(|e| e.from == at) {
            if path.len() > mesh.services.len() {
                return false;
            }
            path.push(e);
            if walk(&e.to, mesh, edges, path) {
                return true;
            }
            path.pop();
        }
        false
    }
    let mut path = Vec::new();
    walk(&mesh.entry, mesh, edges, &mut path);
    let policies: Vec<Translation> = path.iter().filter_map(|e| e.policy.clone()).collect();
    // One policy per layer, in path order.
    layers(&policies)
        .into_iter()
        .filter_map(|l| l.first().map(|t| (*t).clone()))
        .collect()
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}
