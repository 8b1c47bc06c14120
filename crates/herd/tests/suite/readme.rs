//! The repository README's library snippet is the crate README's quick start, which compiles
//! and runs as the crate's first doctest; this keeps the two from drifting.

#[test]
fn the_repository_readme_shows_the_tested_quick_start() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let Ok(root) = std::fs::read_to_string(root) else {
        // Outside the repository (the packaged crate), there is nothing to compare.
        return;
    };
    let krate = include_str!("../../README.md");
    let start = krate.find("```rust\n").expect("a rust block");
    let end = start + 8 + krate[start + 8..].find("```\n").expect("its end");
    let snippet: String = krate[start..end]
        .lines()
        .filter(|line| !line.starts_with("# "))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(
        root.contains(&snippet),
        "README.md's library snippet differs from crates/herd/README.md's quick start:\n{snippet}"
    );
}
