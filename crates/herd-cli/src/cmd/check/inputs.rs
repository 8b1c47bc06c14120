//! What `herd check` reads: files, `-` (standard input) and folders, each through the capped
//! reader. A folder is walked as a repository: `.gitignore`d and hidden paths are left out
//! (the `ignore` crate, as ripgrep walks), files whose type no system uses are skipped, and
//! so are files that show no system's marks; `--verbose` lists what was skipped and why.
use std::path::{Path, PathBuf};

use herd_sim::check::{self, Input, System};

use crate::cmd::input_file::{read_capped, read_stdin};
use crate::error::{CliError, CliResult};

/// The name standard input is reported under.
pub(super) const STDIN_NAME: &str = "<stdin>";

/// File name endings a retry configuration is written in: JSON (gRPC, Envoy), YAML (Envoy,
/// Istio, Linkerd, Spring), `.properties` (Spring), INI (AWS).
const CONFIG_EXTENSIONS: [&str; 8] = [
    "json",
    "yaml",
    "yml",
    "properties",
    "ini",
    "cfg",
    "conf",
    "config",
];

/// The files to check, and the paths a folder's walk skipped with the reason.
#[derive(Debug, Default)]
pub(super) struct Gathered {
    pub(super) inputs: Vec<Input>,
    pub(super) skipped: Vec<Skipped>,
}

/// A path a folder's walk did not check.
#[derive(Debug)]
pub(super) struct Skipped {
    pub(super) path: String,
    pub(super) why: String,
    /// A configuration file that could not be read (over the cap, not UTF-8), said even
    /// without `--verbose`.
    pub(super) unread: bool,
}

/// Reads every path given: a file (at most `max` bytes), `-`, or a folder walked.
///
/// # Errors
///
/// Bad input naming the path: a file or `-` that cannot be read or is over the cap; a folder
/// that cannot be walked.
pub(super) fn gather(paths: &[PathBuf], system: Option<System>, max: u64) -> CliResult<Gathered> {
    let mut out = Gathered::default();
    for path in paths {
        if path.as_os_str() == "-" {
            let text = read_stdin("configuration", max, RAISE)?;
            push(&mut out, STDIN_NAME.to_owned(), text, system);
        } else if path.is_dir() {
            walk(path, system, max, &mut out)?;
        } else {
            let text = read_capped(path, "configuration", max, RAISE)?;
            push(&mut out, path.display().to_string(), text, system);
        }
    }
    Ok(out)
}

/// The flag that raises the cap, for messages.
const RAISE: &str = "--max-file-mib";

fn push(out: &mut Gathered, file: String, mut text: String, system: Option<System>) {
    // A byte-order mark is no part of the text: JSON parsers refuse it, and the systems'
    // marks are looked for after it.
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    let mut input = Input::new(file, text);
    input.system = system;
    out.inputs.push(input);
}

fn walk(dir: &Path, system: Option<System>, max: u64, out: &mut Gathered) -> CliResult<()> {
    let walker = ignore::WalkBuilder::new(dir)
        // .gitignore applies in a checkout that is not (or not yet) a git repository too.
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(std::cmp::Ord::cmp)
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| CliError::input(format!("{}: {e}", dir.display())))?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        // `herd check .` names `scenarios/x.yaml`, not `./scenarios/x.yaml`.
        let shown = path.strip_prefix(".").unwrap_or(path).display().to_string();
        let typed = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| CONFIG_EXTENSIONS.iter().any(|c| e.eq_ignore_ascii_case(c)))
            // The AWS SDKs' shared config file has no extension (`config`, `aws-config`).
            || (path.extension().is_none()
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with("config")));
        if !typed {
            out.skipped.push(Skipped {
                path: shown,
                why: "not a type of file retry configurations are written in".to_owned(),
                unread: false,
            });
            continue;
        }
        let text = match read_capped(path, "configuration", max, RAISE) {
            Ok(text) => text,
            Err(e) => {
                out.skipped.push(Skipped {
                    path: shown,
                    why: e.to_string(),
                    unread: true,
                });
                continue;
            }
        };
        let bare = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if system.is_none() && check::detect(&shown, bare).is_err() {
            out.skipped.push(Skipped {
                path: shown,
                why: "no retry configuration (no system's marks)".to_owned(),
                unread: false,
            });
            continue;
        }
        push(out, shown, text, system);
    }
    Ok(())
}
