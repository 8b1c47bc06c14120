//! AWS SDK shared config file (`~/.aws/config`): each `[default]` or `[profile NAME]`
//! section's `retry_mode` and `max_attempts`, read for one generation of the SDKs
//! ([`AwsRetries`]; `docs/check.md` lists the versions and sources).
//!
//! **2026** (the default: botocore >= 1.44.0, and every SDK with `AWS_NEW_RETRIES_2026=true`;
//! boto/botocore `botocore/retries/standard.py`, `quota.py`, `configprovider.py`; smithy-rs
//! `RetrySpec::v2_1`; aws-sdk-go-v2 `aws/retry`):
//! - a profile with no `retry_mode` is `standard` (botocore 1.44 `configprovider.py`:
//!   `'retry_mode': (..., 'standard', None)`);
//! - `standard`: 3 attempts (`DEFAULT_MAX_ATTEMPTS`); retry n waits `U[0, 1) · min(0.05 s ·
//!   2^(n−1), 20 s)` after a transient error (`_DEFAULT_BACKOFF_CONFIG
//!   ['non_throttling_base_scale']`, `_MAX_BACKOFF`), the same with a 1 s base after a
//!   throttling error (`throttling_base_scale`): herd's `full` rule with base 50 ms and cap
//!   20 s; a retry quota of 500 tokens (`quota.RetryQuota.INITIAL_CAPACITY`), a retry costing
//!   14 (`RetryQuotaChecker._RETRY_COST`), 5 after throttling (`_THROTTLING_RETRY_COST`), no
//!   separate timeout cost, 1 back per first-attempt success (`_NO_RETRY_INCREMENT`): the
//!   library's `aws-standard-2026` quota (`AwsRetryQuotaConfig::standard_2026`);
//! - DynamoDB and DynamoDB Streams differ (`_SERVICE_MAX_ATTEMPTS`, `_SERVICE_BACKOFF_CONFIG`):
//!   4 attempts and a 25 ms base; a profile names no service, so the translation is the
//!   other services' and `docs/check.md` gives DynamoDB's values.
//!
//! **classic** (`--aws-retries classic`: botocore < 1.44.0 and the SDKs without the 2026
//! flag; smithy-rs `RetryConfig::standard()`, aws-smithy-runtime `token_bucket.rs`):
//! - a profile with no `retry_mode` is `legacy` (botocore 1.43 `configprovider.py`:
//!   `_DEFAULT_RETRY_MODE = 'legacy'`; Java v2 and C++ too, while smithy-rs, aws-sdk-go-v2
//!   and JS v3 default to standard);
//! - `standard`: 3 attempts; retry n waits `U[0, 1) · min(2^(n−1) s, 20 s)` whatever the
//!   error; a quota of 500 tokens, 5 a retry, 10 after a timeout, 1 back per first-attempt
//!   success (the library's `aws-standard`).
//!
//! In both, `adaptive` is `standard` plus the client rate limiter (client_rate_limiter.rs),
//! and `legacy` is botocore's (boto/botocore `botocore/data/_retry.json` `__default__`,
//! unchanged in 1.44: 5 attempts, `rand · 2^(n−1)` seconds, no cap, no quota). Other SDKs'
//! legacy modes differ (Java v2: 4 attempts; C++: 11).
//!
//! A profile whose `retry_mode` or `max_attempts` is invalid is an `invalid-entry` finding and
//! the others are read: the SDKs fail only when that profile is used (botocore
//! `botocore/config.py` raises `InvalidRetryModeError` / `InvalidMaxRetryAttemptsError` when a
//! client is made with it; aws-sdk-go-v2 `config/shared_config.go` returns the parse error when
//! that profile is loaded). Keys are matched without regard to case, as both SDKs lower-case
//! them; a profile written twice is one profile, the later value winning.
use std::collections::HashMap;
use std::time::Duration;

use herd::RuleName;

use super::tree::Reader;
use super::{
    AwsRetries, Backoff, CheckError, Generation, System, Throttle, Translated, Translation,
};

/// botocore `standard.py` `DEFAULT_MAX_ATTEMPTS` (both generations); smithy-rs
/// `RetryConfig::standard()`.
const STANDARD_ATTEMPTS: u32 = 3;
/// Classic: every retry's scale is 1 s (botocore 1.43 `standard.py`: `rand(0, 1) * min(2 **
/// attempt, MAX_BACKOFF)`; smithy-rs retry.rs "the default duration of 1 second").
const CLASSIC_BASE: Duration = Duration::from_secs(1);
/// 2026: a transient error's scale (botocore 1.44 `standard.py`
/// `_DEFAULT_BACKOFF_CONFIG['non_throttling_base_scale']` 0.05; smithy-rs `RetrySpec::v2_1`
/// `DEFAULT_BASE_DELAY_MS`).
const BASE_2026: Duration = Duration::from_millis(50);
/// standard.py `_MAX_BACKOFF` / smithy-rs `MAX_BACKOFF`: 20 s, applied before the jitter.
const MAX_BACKOFF: Duration = Duration::from_secs(20);
/// _retry.json `__default__.max_attempts`.
const LEGACY_ATTEMPTS: u32 = 5;
/// _retry.json `__default__.delay`: `"base": "rand"`, growth 2: `rand · 2^(n−1)` s.
const LEGACY_BASE: Duration = Duration::from_secs(1);
/// Classic quota: botocore 1.43 `quota.py` / `standard.py` `RetryQuotaChecker`, smithy-rs
/// token_bucket.rs.
const CLASSIC_QUOTA: [(&str, f64); 5] = [
    ("initial_tokens", 500.0),
    ("retry_cost", 5.0),
    ("timeout_retry_cost", 10.0),
    ("throttling_retry_cost", 5.0),
    ("success_reward", 1.0),
];
/// 2026 quota: botocore 1.44 `RetryQuotaChecker` `_RETRY_COST` 14, `_THROTTLING_RETRY_COST`
/// 5, no timeout cost.
const QUOTA_2026: [(&str, f64); 4] = [
    ("initial_tokens", 500.0),
    ("retry_cost", 14.0),
    ("throttling_retry_cost", 5.0),
    ("success_reward", 1.0),
];

/// What the SDKs do with a profile whose retry settings are invalid.
const FAILS: &str = "the SDK fails when this profile is used (botocore: InvalidRetryModeError or InvalidMaxRetryAttemptsError; aws-sdk-go-v2: an error loading the profile); the other profiles are unaffected";

struct Section {
    name: String,
    line: usize,
    entries: Vec<(String, String, usize)>,
}

pub(crate) fn translate(
    r: &mut Reader,
    text: &str,
    retries: AwsRetries,
) -> Result<Translated, CheckError> {
    let mut sections: Vec<Section> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut current = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[') {
            let name = header
                .strip_suffix(']')
                .ok_or_else(|| r.bad(line, "", "a section header must end with ]"))?
                .trim();
            // A section written twice is one section: the entries below extend it and later
            // values win.
            current = Some(*index.entry(name.to_owned()).or_insert_with(|| {
                sections.push(Section {
                    name: name.to_owned(),
                    line,
                    entries: Vec::new(),
                });
                sections.len() - 1
            }));
            continue;
        }
        let Some(section) = current.map(|at| &mut sections[at]) else {
            return Err(r.bad(line, "", "a setting before any [section]"));
        };
        if raw.starts_with([' ', '\t']) {
            // A nested setting (`s3 =` followed by indented lines): not a retry setting.
            continue;
        }
        let (key, value) = trimmed
            .split_once('=')
            .ok_or_else(|| r.bad(line, "", "expected key = value"))?;
        section.entries.push((
            key.trim().to_ascii_lowercase(),
            value.trim().to_owned(),
            line,
        ));
    }
    let mut out = Translated::default();
    let mut profiles = 0;
    for s in &sections {
        let profile = match s.name.as_str() {
            "default" => Some("default".to_owned()),
            n => n.strip_prefix("profile ").map(|p| p.trim().to_owned()),
        };
        let Some(profile) = profile else {
            r.ignore(s.line, format!("[{}]", s.name));
            continue;
        };
        profiles += 1;
        let t = profile_of(r, s, profile, retries);
        r.keep(t, &mut out.configs, FAILS);
    }
    out.looked_at = format!("{profiles} profile(s), none that retries");
    Ok(out)
}

fn profile_of(
    r: &mut Reader,
    s: &Section,
    profile: String,
    retries: AwsRetries,
) -> Result<Translation, CheckError> {
    let classic = retries == AwsRetries::Classic;
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
            base: if classic { CLASSIC_BASE } else { BASE_2026 },
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
        generation: Some(if classic {
            Generation::AwsClassic
        } else {
            Generation::Aws2026
        }),
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
            _ => {
                r.misspelt(
                    key,
                    *line,
                    &format!("[{}]", s.name),
                    &["retry_mode", "max_attempts"],
                );
                r.ignore(*line, field(key));
            }
        }
    }
    if mode.is_none() {
        t.defaults.push("retry_mode");
    }
    // The default mode: botocore 1.43 `_DEFAULT_RETRY_MODE = 'legacy'`, 1.44 `'standard'`.
    let mode = mode.unwrap_or_else(|| if classic { "legacy" } else { "standard" }.to_owned());
    if attempts.is_none() {
        t.defaults.push("max_attempts");
    }
    if mode == "legacy" {
        let n = attempts.unwrap_or(LEGACY_ATTEMPTS);
        t.max_attempts = Some(n);
        // No cap in botocore: the largest pause is the last retry's window, 2^(n−2) s.
        t.backoff.base = LEGACY_BASE;
        let last = LEGACY_BASE.saturating_mul(1u32 << n.saturating_sub(2).min(30));
        t.backoff.cap = last.max(LEGACY_BASE);
    } else {
        t.max_attempts = Some(attempts.unwrap_or(STANDARD_ATTEMPTS));
        let mut params = if classic {
            CLASSIC_QUOTA.to_vec()
        } else {
            QUOTA_2026.to_vec()
        };
        let kind = if mode == "adaptive" {
            params.push(("beta", 0.7));
            params.push(("scale_constant", 0.4));
            params.push(("min_fill_rate", 0.5));
            "aws-adaptive"
        } else if classic {
            "aws-standard"
        } else {
            "aws-standard-2026"
        };
        t.throttle = Some(Throttle { kind, params });
    }
    Ok(t)
}
