//! The crate's layout: the pieces every model shares import no model, and no two top-level
//! modules import each other, directly or through others (no import cycle).
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// What every model shares.
const SHARED: &[&str] = &[
    "budget",
    "watch",
    "error",
    "fields",
    "limits",
    "located",
    "rule_serde",
    "sample",
    "throttle",
    "ziggurat",
];

/// The models, the trait they implement (`model`), the list of them (`registry`), and what
/// runs them.
const MODELS: &[&str] = &[
    "storm",
    "metastable",
    "contention",
    "latency",
    "graph",
    "check",
    "sweep",
    "model",
    "registry",
];

/// Every file of a top-level module (a file, or a folder).
fn files(src: &Path, module: &str) -> Vec<String> {
    let file = src.join(format!("{module}.rs"));
    if file.exists() {
        return vec![fs::read_to_string(file).unwrap()];
    }
    let mut out = Vec::new();
    let mut stack = vec![src.join(module)];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(fs::read_to_string(path).unwrap());
            }
        }
    }
    out
}

/// The top-level modules a module's code names as `crate::name`, tests and comments left out.
fn imports(texts: &[String], modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for text in texts {
        let code: String = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or(text)
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                group
                    .split('}')
                    .next()
                    .unwrap_or("")
                    .split(',')
                    .map(|p| p.trim().split("::").next().unwrap_or(""))
                    .collect()
            } else {
                vec![
                    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or(""),
                ]
            };
            out.extend(
                names
                    .into_iter()
                    .filter(|n| modules.contains(*n))
                    .map(str::to_owned),
            );
        }
    }
    out
}

#[test]
fn shared_pieces_import_no_model_and_modules_import_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules: BTreeSet<String> = SHARED
        .iter()
        .chain(MODELS)
        .map(|m| (*m).to_owned())
        .collect();
    let graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| {
            let mut deps = imports(&files(&src, m), &modules);
            deps.remove(m);
            (m.clone(), deps)
        })
        .collect();
    for shared in SHARED {
        let models: Vec<&String> = graph[*shared]
            .iter()
            .filter(|d| MODELS.contains(&d.as_str()))
            .collect();
        assert!(models.is_empty(), "{shared} imports {models:?}");
    }
    // Depth-first search for a cycle.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(m) {
            return;
        }
        if let Some(i) = path.iter().position(|p| p == m) {
            panic!("import cycle: {} → {m}", path[i..].join(" → "));
        }
        path.push(m.to_owned());
        for d in &graph[m] {
            visit(d, graph, path, done);
        }
        path.pop();
        done.insert(m.to_owned());
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}

/// The readers of real configurations live in `herd-config` (which depends on the library
/// alone); `check` keeps the analyzers and the storm above them, and reads through
/// `herd_config`, never a reader of its own.
#[test]
fn readers_live_in_herd_config() {
    let check = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/check");
    for system in ["grpc", "envoy", "istio", "linkerd", "aws", "resilience4j"] {
        let file = check.join(format!("{system}.rs"));
        assert!(
            !file.exists(),
            "{} belongs in crates/herd-config/src/",
            file.display()
        );
    }
    let mod_rs = fs::read_to_string(check.join("mod.rs")).unwrap();
    assert!(
        mod_rs.contains("herd_config::read(") || mod_rs.contains("herd_config::read_with("),
        "check reads through herd_config"
    );
}
