//! Finding the figure markers in a Markdown file: what each runs, what it expects, and the
//! text it annotates (the prose or table that must quote the same figures).
//!
//! A marker is an HTML comment, invisible when the Markdown is rendered:
//!
//! - `<!-- figure: herd ARGS => PATH = VALUE; PATH = VALUE -->` runs `herd ARGS` (which must
//!   print JSON), reads each `PATH` of it (see `json_path.rs`), prints it as the docs do (as
//!   many decimals as `VALUE` has) and compares; `VALUE` must also appear in the text the
//!   marker annotates, so that changing the figure in the prose fails as surely as changing
//!   it in the marker;
//!   (`PATH = MEAN ± HALF` reads an interval's `.mean` and `.half`;
//!   `PATH is VALUE` instead checks a figure the prose states in words: "serves nobody");
//! - `<!-- figure: herd ARGS -->` standing before a fenced block: every line of the block is a
//!   line of what `herd ARGS` printed, in order (a pasted excerpt of its output); a first line
//!   `$ herd ARGS` shows the command and must be the marker's; indentation and the width of
//!   runs of spaces (a table's padding) are not compared, and a line `…` stands for lines left
//!   out.
//!
//! `figure slow:` instead of `figure:` marks a figure too dear for every test run (the test
//! lists it; `tools/doc-figures` runs it). The text a marker annotates is the paragraph it
//! sits in or, when it stands alone, the block right after it (a table, a list, a paragraph).

/// One marker.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Where it is: `file:line` of the comment's start.
    pub place: String,
    /// Whether it is too dear to run on every test run.
    pub slow: bool,
    /// The arguments of `herd`.
    pub args: Vec<String>,
    /// What the output must show.
    pub expect: Expect,
    /// The text the figures must appear in, markers removed.
    pub scope: String,
}

/// What a marker expects of the output.
#[derive(Debug, Clone)]
pub enum Expect {
    /// Values read from the JSON output.
    Values(Vec<Check>),
    /// Lines of a fenced block, each a line of the output, in order.
    Lines(Vec<String>),
}

/// One value read from the JSON output.
#[derive(Debug, Clone)]
pub struct Check {
    /// The path into the JSON.
    pub path: String,
    /// What the value is multiplied by before printing (`*100` for a percentage, `/60` for
    /// minutes).
    pub scale: f64,
    /// The value as the docs print it.
    pub value: String,
    /// Whether the value must appear in the annotated text (`=`), or is stated there in
    /// words (`is`).
    pub quoted: bool,
}

const OPEN: &str = "<!-- figure";
const CLOSE: &str = "-->";

/// Every marker of `text`, the Markdown file `file`.
pub fn markers(file: &str, text: &str) -> Result<Vec<Figure>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut figures = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find(OPEN).map(|i| from + i) {
        let end = text[at..]
            .find(CLOSE)
            .map(|i| at + i)
            .ok_or_else(|| format!("{file}: a figure marker is never closed"))?;
        let first = text[..at].matches('\n').count();
        let last = text[..end].matches('\n').count();
        let place = format!("{file}:{}", first + 1);
        let body = &text[at + OPEN.len()..end];
        let (slow, body) = if let Some(rest) = body.strip_prefix(" slow:") {
            (true, rest)
        } else if let Some(rest) = body.strip_prefix(':') {
            (false, rest)
        } else {
            return Err(format!(
                "{place}: a marker starts `figure:` or `figure slow:`"
            ));
        };
        let body = body.split_whitespace().collect::<Vec<_>>().join(" ");
        let (command, checks) = match body.split_once(" => ") {
            Some((c, k)) => (c, Some(k)),
            None => (body.as_str(), None),
        };
        let args: Vec<String> = match command.strip_prefix("herd ") {
            Some(rest) => rest.split(' ').map(str::to_owned).collect(),
            None => return Err(format!("{place}: the command must start `herd `")),
        };
        let expect = match checks {
            Some(checks) => Expect::Values(parse_checks(&place, checks)?),
            None => Expect::Lines(fenced_block_after(&place, &lines, last)?),
        };
        let scope = scope(&lines, first, last);
        figures.push(Figure {
            place,
            slow,
            args,
            expect,
            scope,
        });
        from = end + CLOSE.len();
    }
    Ok(figures)
}

fn parse_checks(place: &str, checks: &str) -> Result<Vec<Check>, String> {
    let mut parsed = Vec::new();
    for check in checks.split(';') {
        let check = parse_check(place, check)?;
        // `PATH = MEAN ± HALF`: an interval's mean and half-width, as the docs print them.
        match check.value.split_once(" ± ") {
            Some((mean, half)) => {
                for (part, value) in [("mean", mean), ("half", half)] {
                    parsed.push(Check {
                        path: format!("{}.{part}", check.path),
                        value: value.to_owned(),
                        ..check.clone()
                    });
                }
            }
            None => parsed.push(check),
        }
    }
    Ok(parsed)
}

fn parse_check(place: &str, check: &str) -> Result<Check, String> {
    {
        {
            let check = check.trim();
            let (path, value, quoted) = match check.rsplit_once(" = ") {
                Some((p, v)) => (p, v, true),
                None => match check.rsplit_once(" is ") {
                    Some((p, v)) => (p, v, false),
                    None => return Err(format!("{place}: `{check}` is not `PATH = VALUE`")),
                },
            };
            let (path, scale) = match path.rfind(['*', '/']) {
                Some(i) if !path[i..].contains(']') => {
                    let k: f64 = path[i + 1..]
                        .parse()
                        .map_err(|_| format!("{place}: bad scale in `{path}`"))?;
                    (&path[..i], if &path[i..=i] == "*" { k } else { 1.0 / k })
                }
                _ => (path, 1.0),
            };
            Ok(Check {
                path: path.to_owned(),
                scale,
                value: value.trim().to_owned(),
                quoted,
            })
        }
    }
}

/// The lines of the fenced block that starts on the first non-blank line after `last`.
fn fenced_block_after(place: &str, lines: &[&str], last: usize) -> Result<Vec<String>, String> {
    let start = (last + 1..lines.len())
        .find(|&i| !lines[i].trim().is_empty())
        .filter(|&i| lines[i].starts_with("```"))
        .ok_or_else(|| format!("{place}: a marker without `=>` stands before a fenced block"))?;
    let body: Vec<String> = lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with("```"))
        .map(|l| l.trim_end().to_owned())
        .collect();
    if body.is_empty() {
        return Err(format!(
            "{place}: the fenced block after the marker is empty"
        ));
    }
    Ok(body)
}

/// The paragraph of lines `first..=last`, markers removed; when nothing else is in it, the
/// block after it.
fn scope(lines: &[&str], first: usize, last: usize) -> String {
    let blank = |i: usize| lines[i].trim().is_empty();
    let mut top = first;
    while top > 0 && !blank(top - 1) {
        top -= 1;
    }
    let mut bottom = last;
    while bottom + 1 < lines.len() && !blank(bottom + 1) {
        bottom += 1;
    }
    let own = without_markers(&lines[top..=bottom].join("\n"));
    if !own.trim().is_empty() {
        return own;
    }
    let Some(start) = (bottom + 1..lines.len()).find(|&i| !blank(i)) else {
        return String::new();
    };
    let end = if lines[start].starts_with("```") {
        (start + 1..lines.len())
            .find(|&i| lines[i].starts_with("```"))
            .unwrap_or(lines.len() - 1)
    } else {
        (start..lines.len())
            .take_while(|&i| !blank(i))
            .last()
            .unwrap_or(start)
    };
    without_markers(&lines[start..=end].join("\n"))
}

fn without_markers(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(OPEN) {
        out.push_str(&rest[..at]);
        rest = rest[at..]
            .find(CLOSE)
            .map_or("", |i| &rest[at + i + CLOSE.len()..]);
    }
    out.push_str(rest);
    out
}
