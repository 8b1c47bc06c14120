//! How deep a file may nest before it is read: deep enough for any configuration, shallow
//! enough that reading it cannot exhaust the stack.
//!
//! A YAML block nests one level per step of indentation (a space, or a `- ` that opens a
//! sequence on the same line), so the indentation bounds the block depth; flow nesting
//! (`[[[…]]]`, `{{…}}`) is bounded by the parsers themselves (`saphyr` refuses more than 255
//! levels, `serde_json` more than 128). A file indented deeper than [`MAX_INDENT`] columns is
//! refused naming its line, before the parser builds a tree the translators would walk
//! recursively: a 10,000-deep file is an error, never a crash or a misreading.
use super::CheckError;

/// The deepest indentation read, in columns (spaces, tabs and `- ` sequence marks).
pub(crate) const MAX_INDENT: usize = 256;

/// Refuses `text` when a line is indented deeper than [`MAX_INDENT`].
///
/// # Errors
///
/// The first such line, named.
pub(crate) fn check_depth(file: &str, text: &str) -> Result<(), CheckError> {
    for (i, line) in text.lines().enumerate() {
        let depth = indent(line);
        if depth > MAX_INDENT {
            return Err(CheckError::new(
                file,
                i + 1,
                "",
                format!(
                    "nested {depth} columns deep, deeper than herd reads ({MAX_INDENT}); no retry configuration nests so deep"
                ),
            ));
        }
    }
    Ok(())
}

/// The columns of a line's indentation, `- ` marks included.
fn indent(line: &str) -> usize {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => i += 1,
            b'-' if matches!(b.get(i + 1), Some(b' ' | b'\t')) => i += 2,
            _ => break,
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indentation_counts_spaces_and_sequence_marks() {
        assert_eq!(indent("a: 1"), 0);
        assert_eq!(indent("    a: 1"), 4);
        assert_eq!(indent("  - - a"), 6);
        assert_eq!(indent("---"), 0);
        assert_eq!(indent("-5"), 0);
    }

    #[test]
    fn a_deep_file_is_refused_naming_its_line() {
        let deep = format!("a: 1\n{}x\n", "- ".repeat(10_000));
        let err = check_depth("f.yaml", &deep).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        assert!(check_depth("f.yaml", "a:\n  b:\n    - c\n").is_ok());
    }
}
