//! Resilience4j retries in a Spring Boot `application.yml`: `resilience4j.retry.instances.*`
//! and `resilience4j.retry.configs.*`, with Spring's relaxed names (`maxAttempts`,
//! `max-attempts`).
//!
//! Read as resilience4j/resilience4j builds them
//! (resilience4j-framework-common/…/retry/configuration/CommonRetryConfigurationProperties.java,
//! `createRetryConfig` and `configureRetryIntervalFunction`):
//! - an instance takes the fields it leaves unset from its `baseConfig`, or from
//!   `configs.default` when that exists;
//! - `maxAttempts` 3 and `waitDuration` 500 ms by default (resilience4j-retry RetryConfig.java,
//!   `DEFAULT_MAX_ATTEMPTS`, `DEFAULT_WAIT_DURATION`); `maxAttempts: 0` is ignored;
//! - the backoff options apply only when `waitDuration` is set: otherwise the wait stays a
//!   fixed 500 ms whatever `enableExponentialBackoff` says;
//! - exponential and randomized: `ofExponentialRandomBackoff`, whose
//!   `exponentialMaxWaitDuration` is used only when `exponentialBackoffMultiplier` *and*
//!   `randomizedWaitFactor` are both set; exponential alone uses the maximum only with a
//!   multiplier; the default multiplier is 1.5 and the default randomization factor 0.5
//!   (resilience4j-core IntervalFunction.java, `DEFAULT_MULTIPLIER`,
//!   `DEFAULT_RANDOMIZATION_FACTOR`);
//! - randomized: `random in [(1 − f) · i, (1 + f) · i)` around the interval i (never capped,
//!   each step `(long) (i · multiplier)`), then the maximum: herd's `randomized` rule, the
//!   same arithmetic in nanoseconds (crates/herd/src/rule/systems.rs); exponential without
//!   randomization is `randomized` with jitter 0 (`exponential` when the multiplier is 2),
//!   randomized without exponential is `randomized` with multiplier 1.
use std::time::Duration;

use herd::RuleName;

use super::tree::{Node, Reader, Units, Value, get, load_yaml};
use super::{Backoff, CheckError, Finding, Severity, System, Translated, Translation, finding};

/// RetryConfig.java `DEFAULT_MAX_ATTEMPTS`.
const MAX_ATTEMPTS: u32 = 3;
/// RetryConfig.java `DEFAULT_WAIT_DURATION` (500 ms).
const WAIT: Duration = Duration::from_millis(500);
/// IntervalFunction.java `DEFAULT_MULTIPLIER`.
const MULTIPLIER: f64 = 1.5;
/// IntervalFunction.java `DEFAULT_RANDOMIZATION_FACTOR`.
const RANDOMIZATION: f64 = 0.5;

/// The keys of one instance or config, by their relaxed name.
const KEYS: [&str; 14] = [
    "maxattempts",
    "waitduration",
    "enableexponentialbackoff",
    "exponentialbackoffmultiplier",
    "exponentialmaxwaitduration",
    "enablerandomizedwait",
    "randomizedwaitfactor",
    "retryexceptions",
    "ignoreexceptions",
    "baseconfig",
    "retryexceptionpredicate",
    "resultpredicate",
    "eventconsumerbuffersize",
    "failaftermaxattempts",
];

/// Spring's relaxed binding: case, `-` and `_` do not matter.
fn relaxed(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// One instance's (or config's) fields, with their lines.
#[derive(Clone, Default)]
struct Props<'a> {
    fields: Vec<(String, usize, &'a Node, String)>,
}

impl<'a> Props<'a> {
    fn get(&self, key: &str) -> Option<(&'a Node, &str)> {
        self.fields
            .iter()
            .find(|(k, _, _, _)| k == key)
            .map(|(_, _, n, p)| (*n, p.as_str()))
    }

    /// `self` with the fields it lacks taken from `base`.
    fn merged(&self, base: &Props<'a>) -> Props<'a> {
        let mut out = self.clone();
        for f in &base.fields {
            if self.get(&f.0).is_none() {
                out.fields.push(f.clone());
            }
        }
        out
    }
}

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let docs = load_yaml(&r.file, text)?;
    let mut out = Translated::default();
    for doc in &docs {
        let Value::Map(top) = &doc.value else {
            continue;
        };
        let Some(r4j) = top
            .iter()
            .find(|(k, _, _)| k == "resilience4j")
            .map(|(_, _, n)| n)
        else {
            continue;
        };
        let r4j_map = r.map(r4j, "resilience4j")?;
        let Some(retry) = get(r4j_map, "retry") else {
            continue;
        };
        let retry_map = r.map(retry, "resilience4j.retry")?;
        r.ignore_unknown(
            retry,
            "resilience4j.retry",
            &[
                "configs",
                "instances",
                "retryAspectOrder",
                "retry-aspect-order",
                "metrics",
            ],
        );
        let configs = section(r, get(retry_map, "configs"), "resilience4j.retry.configs")?;
        let instances = section(
            r,
            get(retry_map, "instances"),
            "resilience4j.retry.instances",
        )?;
        let default = configs
            .iter()
            .find(|(n, _, _)| n == "default")
            .map(|(_, _, p)| p.clone());
        let targets = if instances.is_empty() {
            &configs
        } else {
            &instances
        };
        for (name, line, props) in targets {
            let merged = match props.get("baseconfig") {
                Some((node, path)) => {
                    let base_name = r.text(node, path)?;
                    let base = configs
                        .iter()
                        .find(|(n, _, _)| *n == base_name)
                        .ok_or_else(|| {
                            r.bad(
                                node.line,
                                path,
                                format!(
                                    "no config named {base_name:?} under resilience4j.retry.configs"
                                ),
                            )
                        })?;
                    props.merged(&base.2)
                }
                None if name != "default" => default
                    .as_ref()
                    .map_or_else(|| props.clone(), |d| props.merged(d)),
                None => props.clone(),
            };
            out.configs
                .push(instance(r, name, *line, &merged, &mut out.findings)?);
        }
    }
    Ok(out)
}

fn section<'a>(
    r: &mut Reader,
    node: Option<&'a Node>,
    path: &str,
) -> Result<Vec<(String, usize, Props<'a>)>, CheckError> {
    let Some(node) = node else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (name, line, props) in r.map(node, path)? {
        let p = format!("{path}.{name}");
        let mut fields = Vec::new();
        for (key, kline, value) in r.map(props, &p)? {
            let k = relaxed(key);
            if KEYS.contains(&k.as_str()) {
                fields.push((k, *kline, value, format!("{p}.{key}")));
            } else {
                r.ignored.push(super::Ignored {
                    file: r.file.clone(),
                    line: *kline,
                    field: format!("{p}.{key}"),
                });
            }
        }
        out.push((name.clone(), *line, Props { fields }));
    }
    Ok(out)
}

fn instance(
    r: &Reader,
    name: &str,
    line: usize,
    p: &Props<'_>,
    findings: &mut Vec<Finding>,
) -> Result<Translation, CheckError> {
    let mut t = Translation {
        file: r.file.clone(),
        line,
        system: System::Resilience4j,
        name: name.to_owned(),
        max_attempts: Some(MAX_ATTEMPTS),
        per_try_timeout: None,
        timeout: None,
        backoff: Backoff {
            rule: RuleName::Constant,
            base: WAIT,
            cap: WAIT,
            multiplier: 1.0,
            jitter: 0.0,
        },
        retry_on: Vec::new(),
        methods: Vec::new(),
        throttle: None,
        hedging: None,
        defaults: Vec::new(),
        generation: None,
        field_lines: p
            .fields
            .iter()
            .filter_map(|(k, l, _, _)| KEYS.iter().find(|x| *x == k).map(|x| (*x, *l)))
            .collect(),
    };
    let flag = |key: &str| -> Result<bool, CheckError> {
        p.get(key).map_or(Ok(false), |(n, path)| r.boolean(n, path))
    };
    match p.get("maxattempts") {
        Some((n, path)) => {
            let v = r.int(n, path, 0, i64::from(i32::MAX))?;
            if v == 0 {
                t.defaults.push("maxAttempts");
            } else {
                t.max_attempts = Some(u32::try_from(v).unwrap_or(u32::MAX));
            }
        }
        None => t.defaults.push("maxAttempts"),
    }
    for key in ["retryexceptions"] {
        if let Some((n, path)) = p.get(key) {
            for e in r.seq(n, path)? {
                t.retry_on.push(r.text(e, path)?);
            }
        }
    }
    let exponential = flag("enableexponentialbackoff")?;
    let randomized = flag("enablerandomizedwait")?;
    let Some((wait_node, wait_path)) = p.get("waitduration") else {
        t.defaults.push("waitDuration");
        if exponential || randomized {
            findings.push(finding(
                &t,
                Severity::Warning,
                "ignored-backoff",
                if exponential { "enableexponentialbackoff" } else { "enablerandomizedwait" },
                "enableExponentialBackoff / enableRandomizedWait apply only when waitDuration is set: every retry waits a fixed 500 ms".to_owned(),
                "set waitDuration (the first pause) beside the backoff options".to_owned(),
            ));
        }
        return Ok(t);
    };
    let wait = r.duration(wait_node, wait_path, Units::Spring)?;
    let multiplier = p
        .get("exponentialbackoffmultiplier")
        .map(|(n, path)| r.number(n, path, f64::MIN_POSITIVE, 1e6))
        .transpose()?;
    let factor = p
        .get("randomizedwaitfactor")
        .map(|(n, path)| r.number(n, path, 0.0, 1.0))
        .transpose()?;
    let max_wait = p
        .get("exponentialmaxwaitduration")
        .map(|(n, path)| r.duration(n, path, Units::Spring))
        .transpose()?;
    let attempts = t.max_attempts.unwrap_or(MAX_ATTEMPTS);
    // The largest interval an uncapped schedule reaches before the last attempt.
    let reached = |m: f64| -> Duration {
        let k = attempts.saturating_sub(2).min(60);
        Duration::from_secs_f64((wait.as_secs_f64() * m.powi(k as i32)).min(1e9))
    };
    if multiplier.is_none() && exponential {
        t.defaults.push("exponentialBackoffMultiplier");
    }
    if factor.is_none() && randomized {
        t.defaults.push("randomizedWaitFactor");
    }
    let m = multiplier.unwrap_or(MULTIPLIER);
    let f = factor.unwrap_or(RANDOMIZATION);
    // Which options CommonRetryConfigurationProperties passes on to IntervalFunction.
    let cap_used = match (exponential, randomized) {
        (true, true) => multiplier.is_some() && factor.is_some(),
        (true, false) => multiplier.is_some(),
        _ => false,
    };
    if let (Some(_), false, true) = (max_wait, cap_used, exponential) {
        findings.push(finding(
            &t,
            Severity::Warning,
            "ignored-field",
            "exponentialmaxwaitduration",
            format!(
                "exponentialMaxWaitDuration is ignored: Resilience4j uses it only with exponentialBackoffMultiplier{} also set, so the pauses grow without a cap",
                if randomized { " and randomizedWaitFactor" } else { "" }
            ),
            "set exponentialBackoffMultiplier (and randomizedWaitFactor when enableRandomizedWait is on) explicitly".to_owned(),
        ));
    }
    let cap = |m: f64, spread: f64| match (cap_used, max_wait) {
        (true, Some(c)) => c.max(wait),
        _ => reached(m).mul_f64(1.0 + spread).max(wait),
    };
    t.backoff = match (exponential, randomized) {
        (true, true) => Backoff {
            rule: RuleName::Randomized,
            base: wait,
            cap: cap(m, f),
            multiplier: m,
            jitter: f,
        },
        (true, false) => Backoff {
            // ⌊w · 2⌋ from a whole w doubles exactly: herd's `exponential`.
            rule: if m == 2.0 {
                RuleName::Exponential
            } else {
                RuleName::Randomized
            },
            base: wait,
            cap: cap(m, 0.0),
            multiplier: m,
            jitter: 0.0,
        },
        (false, true) => Backoff {
            rule: RuleName::Randomized,
            base: wait,
            cap: wait.mul_f64(1.0 + f),
            multiplier: 1.0,
            jitter: f,
        },
        (false, false) => Backoff {
            rule: if wait.is_zero() {
                RuleName::Immediate
            } else {
                RuleName::Constant
            },
            base: wait,
            cap: wait,
            multiplier: 1.0,
            jitter: 0.0,
        },
    };
    Ok(t)
}
