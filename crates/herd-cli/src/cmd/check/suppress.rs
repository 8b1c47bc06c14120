//! Suppressions: a finding its owner has judged and accepted, named by its code, in the file
//! itself or on the command line.
//!
//! - A comment `# herd:ignore CODE[,CODE…]` on the finding's line or the line above (YAML,
//!   `.properties`, INI; `;` comments too); JSON has no comments, so `--ignore` serves there.
//! - A Kubernetes annotation `herd.dev/ignore: "CODE[,CODE…]"` on an object suppresses those
//!   codes for the whole object, as `galley.istio.io/analyze-suppress` does for `istioctl
//!   analyze`.
//! - `--ignore CODE` (repeatable, or a comma list) everywhere.
//!
//! A place of a finding that is suppressed is dropped; a finding all of whose places are
//! suppressed is dropped and counted.
use herd_sim::check::Finding;

const COMMENT_MARK: &str = "herd:ignore";
const ANNOTATION: &str = "herd.dev/ignore:";

/// A file's text, split once into what suppression looks at: its lines, where each object
/// (a YAML document or list item) starts, and which lines carry the annotation. A finding's
/// every place is looked up here, so a file of many policies is scanned once, not once per
/// place.
struct Index<'a> {
    lines: Vec<&'a str>,
    /// Lines (0-based) that start an object: `---` or `- ` at the left margin.
    starts: Vec<usize>,
    /// Lines (0-based) that hold the annotation.
    annotated: Vec<usize>,
    /// Lines (0-based) that hold a comment with the mark.
    marked: Vec<usize>,
}

impl<'a> Index<'a> {
    fn new(text: &'a str) -> Self {
        let lines: Vec<&str> = text.lines().collect();
        let starts = (0..lines.len())
            .filter(|&i| lines[i].starts_with("---") || lines[i].starts_with("- "))
            .collect();
        let annotated = (0..lines.len())
            .filter(|&i| lines[i].contains(ANNOTATION))
            .collect();
        let marked = (0..lines.len())
            .filter(|&i| {
                let l = lines[i];
                (l.contains('#') || l.contains(';')) && l.contains(COMMENT_MARK)
            })
            .collect();
        Index {
            lines,
            starts,
            annotated,
            marked,
        }
    }

    /// Whether `code` is suppressed at `line` (1-based).
    fn suppressed(&self, line: usize, code: &str) -> bool {
        if line == 0 {
            return false;
        }
        let lines = &self.lines;
        let named = |l: &str, mark: &str| {
            l.find(mark).is_some_and(|at| {
                l[at + mark.len()..]
                    .split([',', ' ', '\t', '"', '\''])
                    .filter(|w| !w.is_empty())
                    .take_while(|w| !w.starts_with('#'))
                    .any(|w| w == code)
            })
        };
        let at = line - 1;
        let comment =
            |i: usize| self.marked.binary_search(&i).is_ok() && named(lines[i], COMMENT_MARK);
        if comment(at) || (at > 0 && comment(at - 1)) {
            return true;
        }
        // The object the line belongs to: from the document's or list item's start to the next.
        let last = at.min(lines.len().saturating_sub(1));
        let begin = match self.starts.partition_point(|&s| s <= last) {
            0 => 0,
            n => self.starts[n - 1],
        };
        let end = self
            .starts
            .get(self.starts.partition_point(|&s| s <= at))
            .copied()
            .unwrap_or(lines.len())
            .max(begin);
        let from = self.annotated.partition_point(|&i| i < begin);
        self.annotated[from..]
            .iter()
            .take_while(|&&i| i < end)
            .any(|&i| named(lines[i], ANNOTATION))
    }
}

/// Whether `code` is suppressed at `line` (1-based) of `text`.
#[cfg(test)]
fn suppressed(text: &str, line: usize, code: &str) -> bool {
    Index::new(text).suppressed(line, code)
}

/// `findings` without what `text_of(file)` or `ignore` suppresses; and how many findings were
/// dropped whole.
pub(super) fn apply<'a>(
    findings: Vec<Finding>,
    text_of: impl Fn(&str) -> Option<&'a str>,
    ignore: &[String],
) -> (Vec<Finding>, usize) {
    let mut dropped = 0;
    let mut out = Vec::with_capacity(findings.len());
    let mut indexes: std::collections::HashMap<String, Index<'a>> = Default::default();
    for mut f in findings {
        if ignore.iter().any(|c| c == f.code) {
            dropped += 1;
            continue;
        }
        let Some(text) = text_of(&f.file) else {
            out.push(f);
            continue;
        };
        let index = indexes
            .entry(f.file.clone())
            .or_insert_with(|| Index::new(text));
        if f.places.is_empty() {
            if index.suppressed(f.line, f.code) {
                dropped += 1;
            } else {
                out.push(f);
            }
            continue;
        }
        let whole = index.suppressed(f.line, f.code);
        f.places
            .retain(|p| !whole && !index.suppressed(p.line, f.code));
        if f.places.is_empty() {
            dropped += 1;
        } else {
            if whole {
                f.line = f.places[0].line;
            }
            out.push(f);
        }
    }
    (out, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_on_or_above_the_line_and_an_annotation_on_the_object_suppress() {
        let text = "a: 1 # herd:ignore no-budget\n# herd:ignore no-jitter, clamped\nb: 2\nc: 3\n";
        assert!(suppressed(text, 1, "no-budget"));
        assert!(!suppressed(text, 1, "no-jitter"));
        assert!(suppressed(text, 3, "no-jitter"));
        assert!(suppressed(text, 3, "clamped"));
        assert!(!suppressed(text, 4, "no-jitter"));
        let k8s = "kind: VirtualService\nmetadata:\n  annotations:\n    herd.dev/ignore: \"no-per-try-timeout,unbounded-max-retries\"\nspec:\n  http: []\n---\nkind: VirtualService\nspec: {}\n";
        assert!(suppressed(k8s, 6, "unbounded-max-retries"));
        assert!(suppressed(k8s, 6, "no-per-try-timeout"));
        assert!(!suppressed(k8s, 6, "no-budget"));
        assert!(
            !suppressed(k8s, 9, "unbounded-max-retries"),
            "another object"
        );
    }
}
