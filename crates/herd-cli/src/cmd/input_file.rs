//! Reading a scenario, graph or configuration file: the one place every command reads its
//! input, so that every command refuses the same things up front, before reading a byte: a
//! path that is not a regular file (`/dev/zero`, a pipe, a folder) and a file over its cap
//! ([`MAX_INPUT_BYTES`], or `herd check`'s own). Standard input, which has no size to check
//! first, is read up to one byte past the cap.
//!
//! The shipped scenarios are a few hundred bytes; the largest graph a run can use (a few
//! thousand services) is well under a megabyte. Before this cap, `herd storm /dev/zero` read
//! until memory ran out, and a 43 MB graph took 3.4 GB before its error.
use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::{CliError, CliResult};

/// The largest input file a command reads: 4 MiB.
pub(crate) const MAX_INPUT_BYTES: u64 = 4 << 20;

/// The text of the `what` file (`scenario`, `graph`) at `path`, at most [`MAX_INPUT_BYTES`].
///
/// # Errors
///
/// As [`read_capped`].
pub(crate) fn read_input(path: &Path, what: &str) -> CliResult<String> {
    read_capped(path, what, MAX_INPUT_BYTES, "")
}

/// The text of the `what` file at `path`, at most `max` bytes; `raise` names the flag that
/// raises the cap (empty when none does), for the message.
///
/// # Errors
///
/// Bad input naming the path: it cannot be opened, is not a regular file, is larger than
/// `max`, or is not UTF-8.
pub(crate) fn read_capped(path: &Path, what: &str, max: u64, raise: &str) -> CliResult<String> {
    let shown = path.display();
    let fail = |why: String| CliError::input(format!("cannot read {what} {shown}: {why}"));
    let file = File::open(path).map_err(|e| fail(e.to_string()))?;
    let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".to_owned()));
    }
    if meta.len() > max {
        return Err(fail(format!(
            "{} bytes, more than the {max} an input file may have{}",
            meta.len(),
            raise_hint(raise)
        )));
    }
    // The file may grow between the check and the read: read no more than the cap allows.
    let capacity = usize::try_from(meta.len()).unwrap_or(0);
    read_at_most(file, max, capacity, raise).map_err(fail)
}

/// Standard input's text, at most `max` bytes (a pipe has no size to check first: the read
/// stops one byte past the cap).
///
/// # Errors
///
/// Bad input: more than `max` bytes, not UTF-8, or a failed read.
pub(crate) fn read_stdin(what: &str, max: u64, raise: &str) -> CliResult<String> {
    read_at_most(std::io::stdin().lock(), max, 0, raise)
        .map_err(|why| CliError::input(format!("cannot read {what} from standard input: {why}")))
}

fn raise_hint(raise: &str) -> String {
    if raise.is_empty() {
        String::new()
    } else {
        format!(" (raise the cap with {raise})")
    }
}

fn read_at_most(
    source: impl Read,
    max: u64,
    capacity: usize,
    raise: &str,
) -> Result<String, String> {
    let mut bytes = Vec::with_capacity(capacity);
    source
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!(
            "more than the {max} bytes an input file may have{}",
            raise_hint(raise)
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_and_a_folder_are_refused_before_reading() {
        let err = read_input(Path::new("/dev/zero"), "scenario").unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot read scenario /dev/zero: not a regular file"
        );
        let err = read_input(Path::new("/"), "graph").unwrap_err();
        assert!(err.to_string().ends_with("not a regular file"), "{err}");
    }

    #[test]
    fn a_file_over_the_cap_is_refused_and_one_at_it_read() {
        let dir = std::env::temp_dir().join(format!("herd-input-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let big = dir.join("big.toml");
        let file = File::create(&big).expect("create");
        file.set_len(MAX_INPUT_BYTES + 1).expect("grow");
        let err = read_input(&big, "scenario").unwrap_err();
        assert!(
            err.to_string().ends_with(&format!(
                "{} bytes, more than the 4194304 an input file may have",
                MAX_INPUT_BYTES + 1
            )),
            "{err}"
        );
        let at_cap = dir.join("at-cap.toml");
        std::fs::write(&at_cap, " ".repeat(MAX_INPUT_BYTES as usize)).expect("write");
        assert_eq!(
            read_input(&at_cap, "scenario").expect("read").len() as u64,
            MAX_INPUT_BYTES
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
