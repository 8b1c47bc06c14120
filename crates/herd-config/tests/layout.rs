//! The crate's place in the workspace: it depends on the library alone (no simulator, no
//! lab, no CLI), so dependencies keep pointing one way (cli → lab → sim → config → herd),
//! and each system's reader is one file named after it.
use std::fs;
use std::path::Path;

use herd_config::System;

/// The `[dependencies]` table of this crate's manifest: the names it lists.
fn dependencies() -> Vec<String> {
    let manifest =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap();
    let mut in_table = false;
    let mut out = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_table = line == "[dependencies]";
        } else if in_table && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap_or("").trim();
            out.push(name.to_owned());
        }
    }
    out
}

#[test]
fn depends_on_the_library_alone() {
    let deps = dependencies();
    assert!(deps.iter().any(|d| d == "herd"), "{deps:?}");
    for other in ["herd-sim", "herd-lab", "herd-cli"] {
        assert!(
            !deps.iter().any(|d| d == other),
            "herd-config depends on {other}"
        );
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = fs::read_to_string(&path).unwrap();
        // Code only: the docs may say what sits above the crate.
        let code: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect();
        for name in ["herd_sim", "herd_lab", "herd_cli"] {
            assert!(
                !code.contains(&format!("{name}::")),
                "{} names {name}",
                path.display()
            );
        }
    }
}

#[test]
fn one_reader_file_per_system() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for system in System::ALL {
        let file = src.join(format!("{}.rs", system.as_str()));
        assert!(file.exists(), "no reader {}", file.display());
    }
}
