//! The shell commands the docs show (`sh` and `bash` blocks of README.md and docs/*.md), as a
//! reader would copy them: continuation lines joined, comments and output redirections left
//! out. Only `herd …` commands are taken; `cargo …` and shell loops are the set-up's and the
//! benchmarks', which this test does not run.

/// One command: where it stands and its arguments after `herd`.
#[derive(Debug)]
pub struct Command {
    pub place: String,
    pub args: Vec<String>,
}

/// Every `herd` command in the shell blocks of `text` (the file `file`).
pub fn commands(file: &str, text: &str) -> Vec<Command> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if !in_block {
            in_block = matches!(trimmed, "```sh" | "```bash" | "```shell");
            continue;
        }
        if trimmed.starts_with("```") {
            in_block = false;
            pending = None;
            continue;
        }
        let code = strip_comment(trimmed);
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        let continued = code.ends_with('\\');
        joined.push_str(code.trim_end_matches('\\').trim());
        joined.push(' ');
        if continued {
            pending = Some((start, joined));
            continue;
        }
        let joined = joined.trim();
        if let Some(rest) = joined
            .strip_prefix("herd ")
            .or((joined == "herd").then_some(""))
        {
            let rest = rest.split(" > ").next().unwrap_or(rest);
            out.push(Command {
                place: format!("{file}:{start}"),
                args: rest.split_whitespace().map(str::to_owned).collect(),
            });
        }
    }
    out
}

/// The line without a trailing `# comment` (a `#` after white space).
fn strip_comment(line: &str) -> &str {
    match line.find(" #") {
        Some(at) => line[..at].trim_end(),
        None if line.starts_with('#') => "",
        None => line,
    }
}

/// The flags whose value sets how much work a command does, and the smaller value the test
/// runs it with: the test proves that a documented command runs, not its figures (those are
/// the figure markers' job, in a release build for the slow ones).
pub const SMALLER: &[(&str, &str)] = &[
    ("--runs", "1"),
    ("--requests", "500"),
    ("--simulate", "1000"),
    ("--clients", "200"),
];

/// Commands shown but not run here, by the start of their arguments, with the reason.
pub const SKIPPED: &[(&str, &str)] = &[
    (
        "lab ",
        "real loopback servers: crates/herd-cli/tests/serve_and_lab_storm.rs and the lab tests run them",
    ),
    ("check ~/.aws/config", "a file of the reader's machine"),
    (
        "check --call-path frontend.yaml",
        "placeholder file names; the next command is the same with shipped files",
    ),
    (
        "sweep --set clients.count=0 --set horizon_s=600",
        "135 runs of ten minutes of open-loop traffic, over a minute in a debug build even at \
         --runs 1; docs/BENCHMARKS.md times it in a release build",
    ),
];

/// The command's arguments with every work-setting flag cut to its smaller value.
pub fn smaller(args: &[String]) -> Vec<String> {
    // A shell loop's variable (`--seed $s`) takes the loop's first value.
    let mut out: Vec<String> = args
        .iter()
        .map(|a| {
            if a.starts_with('$') {
                "1".to_owned()
            } else {
                a.clone()
            }
        })
        .collect();
    for i in 0..out.len().saturating_sub(1) {
        if let Some((_, value)) = SMALLER.iter().find(|(flag, _)| out[i] == *flag) {
            out[i + 1] = (*value).to_owned();
        }
    }
    out
}
