//! AWS SDK shared config file (`~/.aws/config`): each `[default]` or `[profile NAME]`
//! section's `retry_mode` and `max_attempts`.
//!
//! - `standard` (the default of the newer SDKs: smithy-lang/smithy-rs
//!   rust-runtime/aws-smithy-types/src/retry.rs, `RetryConfig::default()`: standard mode, 3
//!   attempts, a 1 s backoff scale): retry n waits `U[0, 1) · min(2^(n−1) s, 20 s)`, herd's
//!   `full` rule with base 1 s and cap 20 s (aws-smithy-runtime
//!   src/client/retries/strategy/standard.rs, `MAX_BACKOFF`); a retry quota of 500 tokens, 5 a
//!   retry, 10 after a timeout, 1 back per first-attempt success (token_bucket.rs);
//! - `adaptive`: the same, plus the client rate limiter (client_rate_limiter.rs);
//! - `legacy`: differs by SDK; herd reads botocore's (boto/botocore
//!   botocore/data/_retry.json `__default__`: 5 attempts, `rand · 2^(n−1)` seconds, no cap,
//!   no quota). Other SDKs' legacy modes differ (Java v2: 4 attempts; C++: 11).
use std::time::Duration;

use herd::RuleName;

use super::tree::Reader;
use super::{Backoff, CheckError, System, Throttle, Translated, Translation};

/// retry.rs `RetryConfig::default()`: 3 attempts.
const STANDARD_ATTEMPTS: u32 = 3;
/// retry.rs: "the default duration of 1 second".
const BASE: Duration = Duration::from_secs(1);
/// standard.rs `MAX_BACKOFF`: 20 s.
const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// _retry.json `__default__.max_attempts`.
const LEGACY_ATTEMPTS: u32 = 5;
/// token_bucket.rs: the quota and its costs.
const QUOTA: [(&str, f64); 4] = [
    ("initial_tokens", 500.0),
    ("retry_cost", 5.0),
    ("timeout_retry_cost", 10.0),
    ("success_reward", 1.0),
];

struct Section {
    name: String,
    line: usize,
    entries: Vec<(String, String, usize)>,
}

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let mut sections: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[') {
            let name = header
                .strip_suffix(']')
                .ok_or_else(|| r.bad(line, "", "a section header must end with ]"))?;
            sections.push(Section {
                name: name.trim().to_owned(),
                line,
                entries: Vec::new(),
            });
            continue;
        }
        let Some(section) = sections.last_mut() else {
            return Err(r.bad(line, "", "a setting before any [section]"));
        };
        if raw.starts_with([' ', '\t']) {
            // A nested setting (`s3 =` followed by indented lines): not a retry setting.
            continue;
        }
        let (key, value) = trimmed
            .split_once('=')
            .ok_or_else(|| r.bad(line, "", "expected key = value"))?;
        section
            .entries
            .push((key.trim().to_owned(), value.trim().to_owned(), line));
    }
    let mut out = Translated::default();
    for s in &sections {
        let profile = match s.name.as_str() {
            "default" => Some("default".to_owned()),
            n => n.strip_prefix("profile ").map(|p| p.trim().to_owned()),
        };
        let Some(profile) = profile else {
            r.ignored.push(super::Ignored {
                file: r.file.clone(),
                line: s.line,
                field: format!("[{}]", s.name),
            });
            continue;
        };
        out.configs.push(profile_of(r, s, profile)?);
    }
    Ok(out)
}

fn profile_of(r: &mut Reader, s: &Section, profile: String) -> Result<Translation, CheckError> {
    let field = |k: &str| format!("[{}].{k}", s.name);
    let mut t = Translation {
        file: r.file.clone(),
        line: s.line,
        system: System::Aws,
        name: profile,
        max_attempts: None,
        per_try_timeout: None,
        timeout: None,
        backoff: Backoff {
            rule: RuleName::Full,
            base: BASE,
            cap: MAX_BACKOFF,
            multiplier: 2.0,
            jitter: 1.0,
        },
        retry_on: vec!["throttling".into(), "transient".into(), "5xx".into()],
        methods: Vec::new(),
        throttle: None,
        hedging: None,
        defaults: Vec::new(),
        field_lines: Vec::new(),
    };
    let mut mode = None;
    let mut attempts = None;
    for (key, value, line) in &s.entries {
        match key.as_str() {
            "retry_mode" => {
                t.field_lines.push(("retry_mode", *line));
                mode = Some(match value.to_ascii_lowercase().as_str() {
                    m @ ("legacy" | "standard" | "adaptive") => m.to_owned(),
                    _ => {
                        return Err(r.bad(
                            *line,
                            &field("retry_mode"),
                            format!("must be legacy, standard or adaptive, got {value:?}"),
                        ));
                    }
                });
            }
            "max_attempts" => {
                t.field_lines.push(("max_attempts", *line));
                let n = value
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| {
                        r.bad(
                            *line,
                            &field("max_attempts"),
                            format!("must be a whole number of at least 1, got {value:?}"),
                        )
                    })?;
                attempts = Some(n);
            }
            _ => r.ignored.push(super::Ignored {
                file: r.file.clone(),
                line: *line,
                field: field(key),
            }),
        }
    }
    if mode.is_none() {
        t.defaults.push("retry_mode");
    }
    let mode = mode.unwrap_or_else(|| "standard".to_owned());
    if attempts.is_none() {
        t.defaults.push("max_attempts");
    }
    if mode == "legacy" {
        let n = attempts.unwrap_or(LEGACY_ATTEMPTS);
        t.max_attempts = Some(n);
        // No cap in botocore: the largest pause is the last retry's window, 2^(n−2) s.
        let last = BASE.saturating_mul(1u32 << n.saturating_sub(2).min(30));
        t.backoff.cap = last.max(BASE);
    } else {
        t.max_attempts = Some(attempts.unwrap_or(STANDARD_ATTEMPTS));
        let mut params = QUOTA.to_vec();
        let kind = if mode == "adaptive" {
            params.push(("beta", 0.7));
            params.push(("scale_constant", 0.4));
            params.push(("min_fill_rate", 0.5));
            "aws-adaptive"
        } else {
            "aws-standard"
        };
        t.throttle = Some(Throttle { kind, params });
    }
    Ok(t)
}
