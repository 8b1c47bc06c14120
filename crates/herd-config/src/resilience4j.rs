//! Resilience4j retries in a Spring Boot `application.yml` or `application.properties`:
//! `resilience4j.retry.instances.*` (or the deprecated `backends.*`) and
//! `resilience4j.retry.configs.*`, read as Spring Boot binds them: nested and dotted keys alike
//! (`resilience4j.retry:` as one key, `resilience4j.retry.instances.a.maxAttempts=3`), relaxed
//! names (`maxAttempts`, `max-attempts`, `max_attempts`, `MAXATTEMPTS`), lists as YAML
//! sequences, `a, b` or `retryExceptions[0]`, and `---` (or `#---`) documents activated by
//! `spring.config.activate.on-profile`, each profile's policies named `NAME [profile P]` when
//! the profile changes them (spring-boot `OriginTrackedYamlLoader`,
//! `OriginTrackedPropertiesLoader`, `ConfigurationPropertyName`).
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
use std::collections::HashMap;
use std::time::Duration;

use herd::RuleName;

use super::tree::{Node, Reader, Units, Value, load_yaml};
use super::{Backoff, CheckError, Finding, Severity, Translated, Translation, finding};

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

/// The keys of one instance or config as their documentation writes them, for the
/// "did you mean" of a misspelt key.
const NAMES: [&str; 14] = [
    "maxAttempts",
    "waitDuration",
    "enableExponentialBackoff",
    "exponentialBackoffMultiplier",
    "exponentialMaxWaitDuration",
    "enableRandomizedWait",
    "randomizedWaitFactor",
    "retryExceptions",
    "ignoreExceptions",
    "baseConfig",
    "retryExceptionPredicate",
    "resultPredicate",
    "eventConsumerBufferSize",
    "failAfterMaxAttempts",
];

/// What Resilience4j does with an instance it cannot bind.
const FAILS: &str = "Spring Boot fails to bind resilience4j.retry at start-up (or Resilience4j when the instance is first used); the other instances are unaffected";

/// Spring's relaxed binding: case, `-` and `_` do not matter
/// (spring-boot `ConfigurationPropertyName`, "relaxed binding" in the reference).
fn relaxed(key: &str) -> String {
    super::tree::squash(key)
}

/// One instance's (or config's) fields, with their lines: relaxed key, line, value, path.
#[derive(Clone, Default, PartialEq)]
struct Props {
    fields: Vec<(String, usize, Node, String)>,
}

impl Props {
    fn get(&self, key: &str) -> Option<(&Node, &str)> {
        self.fields
            .iter()
            .find(|(k, _, _, _)| k == key)
            .map(|(_, _, n, p)| (n, p.as_str()))
    }

    /// Sets `key`, replacing an earlier value (a later document or profile wins).
    fn set(&mut self, key: String, line: usize, value: Node, path: String) {
        self.fields.retain(|(k, _, _, _)| *k != key);
        self.fields.push((key, line, value, path));
    }

    /// `self` with the fields it lacks taken from `base`.
    fn merged(&self, base: &Props) -> Props {
        let mut out = self.clone();
        for f in &base.fields {
            if self.get(&f.0).is_none() {
                out.fields.push(f.clone());
            }
        }
        out
    }
}

/// One property of a file: its key split at dots as written, its line, its value (a scalar
/// or a list). A YAML file's nested and dotted keys both end up here
/// (`resilience4j.retry:` then `instances:` is `resilience4j.retry.instances`), as Spring Boot
/// flattens them (`OriginTrackedYamlLoader`), and so does a `.properties` file.
#[derive(Clone, Debug)]
struct Prop {
    key: Vec<String>,
    line: usize,
    value: Node,
}

/// A key split at its dots, a bracketed map key (`instances[backend.a]`) kept whole.
fn split_key(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in key.chars() {
        match c {
            '[' if depth == 0 => {
                depth = 1;
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                current.push('[');
            }
            ']' if depth == 1 => {
                depth = 0;
                current.push(']');
                out.push(std::mem::take(&mut current));
            }
            '.' if depth == 0 => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    // `[backend.a]` is the map key `backend.a`; `[0]` stays an index.
    out.into_iter()
        .map(
            |s| match s.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
                Some(inner) if !inner.bytes().all(|b| b.is_ascii_digit()) => inner.to_owned(),
                _ => s,
            },
        )
        .collect()
}

fn flatten(node: &Node, prefix: &[String], out: &mut Vec<Prop>) {
    let Value::Map(entries) = &node.value else {
        return;
    };
    for (key, line, child) in entries {
        let mut k = prefix.to_vec();
        k.extend(split_key(key));
        match &child.value {
            Value::Map(e) if !e.is_empty() => flatten(child, &k, out),
            _ => out.push(Prop {
                key: k,
                line: *line,
                value: child.clone(),
            }),
        }
    }
}

/// A `.properties` file's documents (split at `#---` or `!---` lines, as Spring Boot reads
/// them: `OriginTrackedPropertiesLoader`): `key=value`, `key: value` or `key value`, with `#`
/// and `!` comments and `\` line continuations.
fn properties(text: &str) -> Vec<Vec<Prop>> {
    let mut docs = vec![Vec::new()];
    let mut lines = text.lines().enumerate();
    while let Some((i, raw)) = lines.next() {
        let trimmed = raw.trim_start();
        if trimmed == "#---" || trimmed == "!---" {
            docs.push(Vec::new());
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
            continue;
        }
        let mut logical = trimmed.to_owned();
        while logical.ends_with('\\') && !logical.ends_with("\\\\") {
            logical.pop();
            match lines.next() {
                Some((_, next)) => logical.push_str(next.trim_start()),
                None => break,
            }
        }
        let split = logical.find(['=', ':', ' ', '\t']).unwrap_or(logical.len());
        let key = logical[..split].trim_end();
        let rest = logical[split..].trim_start();
        let value = rest
            .strip_prefix(['=', ':'])
            .unwrap_or(rest)
            .trim()
            .to_owned();
        if let Some(doc) = docs.last_mut() {
            doc.push(Prop {
                key: split_key(key),
                line: i + 1,
                value: Node {
                    line: i + 1,
                    value: Value::Str(value),
                },
            });
        }
    }
    docs
}

/// The profile a document is for (`spring.config.activate.on-profile`, or the older
/// `spring.profiles`), if any.
fn profile_of(doc: &[Prop]) -> Option<String> {
    doc.iter().find_map(|p| {
        let k: Vec<String> = p.key.iter().map(|s| relaxed(s)).collect();
        let is = k == ["spring", "config", "activate", "onprofile"] || k == ["spring", "profiles"];
        match (&p.value.value, is) {
            (Value::Str(s), true) => Some(s.clone()),
            _ => None,
        }
    })
}

pub(crate) fn translate(r: &mut Reader, text: &str) -> Result<Translated, CheckError> {
    let yaml = if r.file.ends_with(".properties") {
        None
    } else {
        match load_yaml(&r.file, text) {
            Ok(docs)
                if docs
                    .iter()
                    .all(|d| matches!(d.value, Value::Map(_) | Value::Null)) =>
            {
                Some(docs)
            }
            Ok(_) => None,
            Err(e) if !text.contains('=') => return Err(e),
            Err(_) => None,
        }
    };
    let docs: Vec<Vec<Prop>> = match yaml {
        Some(docs) => docs
            .iter()
            .map(|d| {
                let mut out = Vec::new();
                flatten(d, &[], &mut out);
                out
            })
            .collect(),
        None => properties(text),
    };
    // The retry properties of each document, with its profile.
    let mut base: Vec<&Prop> = Vec::new();
    let mut profiles: Vec<(String, Vec<&Prop>)> = Vec::new();
    for doc in &docs {
        // Other properties that look like retry settings (a TimeLimiter's `timeoutDuration`,
        // Spring Cloud's own retries) are not read: listed.
        for p in doc {
            let under_retry = p.key.len() >= 2
                && relaxed(&p.key[0]) == "resilience4j"
                && relaxed(&p.key[1]) == "retry";
            if !under_retry && p.key.iter().any(|k| super::tree::looks_like_retry(k)) {
                r.ignore(p.line, p.key.join("."));
            }
        }
        let retry: Vec<&Prop> = doc
            .iter()
            .filter(|p| {
                p.key.len() >= 2
                    && relaxed(&p.key[0]) == "resilience4j"
                    && relaxed(&p.key[1]) == "retry"
            })
            .collect();
        list_unknown(r, &retry);
        match profile_of(doc) {
            None => base.extend(retry),
            Some(name) => match profiles.iter_mut().find(|(n, _)| *n == name) {
                Some((_, props)) => props.extend(retry),
                None => profiles.push((name, retry)),
            },
        }
    }
    let mut out = Translated::default();
    let plain = targets(r, &base);
    for (name, line, props) in &plain {
        let t = instance(r, name, *line, props, &mut out.findings);
        r.keep(t, &mut out.configs, FAILS);
    }
    let plain_by_name: HashMap<&str, &Props> =
        plain.iter().map(|(n, _, p)| (n.as_str(), p)).collect();
    for (profile, props) in &profiles {
        let all: Vec<&Prop> = base.iter().chain(props.iter()).copied().collect();
        for (name, line, merged) in targets(r, &all) {
            if plain_by_name.get(name.as_str()) == Some(&&merged) {
                continue;
            }
            let named = format!("{name} [profile {profile}]");
            let t = instance(r, &named, line, &merged, &mut out.findings);
            r.keep(t, &mut out.configs, FAILS);
        }
    }
    out.looked_at = format!(
        "{} retry propert(ies) under resilience4j.retry in {} document(s); no instance or config that retries",
        base.len() + profiles.iter().map(|(_, p)| p.len()).sum::<usize>(),
        docs.len()
    );
    Ok(out)
}

/// The section (`configs` or `instances`), instance name, field (relaxed) and the field's
/// list index, of a property under `resilience4j.retry`.
fn place(p: &Prop) -> Option<(&'static str, &str, String, Option<usize>)> {
    let section = match relaxed(p.key.get(2)?).as_str() {
        "configs" => "configs",
        // `backends` is the deprecated name of `instances` (CommonRetryConfigurationProperties
        // `getBackends`), still in Resilience4j's own test configuration.
        "instances" | "backends" => "instances",
        _ => return None,
    };
    let name = p.key.get(3)?;
    // An instance written `x: {}` has no field.
    let mut field: String = p.key[4..].iter().map(|s| relaxed(s)).collect();
    let mut index = None;
    if let Some(open) = field.find('[')
        && let Some(i) = field[open + 1..]
            .strip_suffix(']')
            .and_then(|i| i.parse().ok())
    {
        index = Some(i);
        field.truncate(open);
    }
    Some((section, name.as_str(), field, index))
}

/// Lists the retry properties no translator reads, with a warning for a misspelt field.
fn list_unknown(r: &mut Reader, props: &[&Prop]) {
    for p in props {
        let path = p.key.join(".");
        match place(p) {
            Some((_, _, field, _)) if field.is_empty() || KEYS.contains(&field.as_str()) => {}
            Some((_, _, _, _)) => {
                let field = p.key[4..].join(".");
                r.misspelt(&field, p.line, &p.key[..4].join("."), &NAMES);
                r.ignore(p.line, path);
            }
            None if matches!(
                p.key.get(2).map(|k| relaxed(k)).as_deref(),
                Some("retryaspectorder" | "metrics" | "tags")
            ) => {}
            None => {
                if let Some(k) = p.key.get(2) {
                    r.misspelt(k, p.line, "resilience4j.retry", &["configs", "instances"]);
                }
                r.ignore(p.line, path);
            }
        }
    }
}

/// The policies the properties describe: every instance (or, with none, every config), each
/// merged with its `baseConfig` or `configs.default`, later properties winning.
fn targets(r: &mut Reader, props: &[&Prop]) -> Vec<(String, usize, Props)> {
    let mut configs: Vec<(String, usize, Props)> = Vec::new();
    let mut instances: Vec<(String, usize, Props)> = Vec::new();
    let mut at_of: HashMap<(&str, String), usize> = HashMap::new();
    for p in props {
        let Some((section, name, field, index)) = place(p) else {
            continue;
        };
        let list = if section == "configs" {
            &mut configs
        } else {
            &mut instances
        };
        let at = *at_of.entry((section, name.to_owned())).or_insert_with(|| {
            list.push((name.to_owned(), p.line, Props::default()));
            list.len() - 1
        });
        let props = &mut list[at].2;
        let path = p.key.join(".");
        // An instance exists once any of its keys is written, unknown ones included: Spring
        // ignores unknown fields (`ignoreUnknownFields`), Resilience4j then applies defaults.
        if field.is_empty() || !KEYS.contains(&field.as_str()) {
            continue;
        }
        match index {
            // `retryExceptions[0]=…`: one item of a list.
            Some(i) => {
                let mut items = match props.get(&field).map(|(n, _)| &n.value) {
                    Some(Value::Seq(items)) => items.clone(),
                    _ => Vec::new(),
                };
                if items.len() <= i {
                    items.resize(
                        i + 1,
                        Node {
                            line: p.line,
                            value: Value::Null,
                        },
                    );
                }
                items[i] = p.value.clone();
                let node = Node {
                    line: p.line,
                    value: Value::Seq(items),
                };
                props.set(field, p.line, node, path);
            }
            None => props.set(field, p.line, p.value.clone(), path),
        }
    }
    let default = configs
        .iter()
        .find(|(n, _, _)| n == "default")
        .map(|(_, _, p)| p.clone());
    let targets = if instances.is_empty() {
        &configs
    } else {
        &instances
    };
    let mut out = Vec::new();
    for (name, line, props) in targets {
        let merged = match props.get("baseconfig") {
            Some((node, path)) => {
                let base_name = match r.text(node, path) {
                    Ok(n) => n,
                    Err(e) => {
                        r.reject(e, FAILS);
                        continue;
                    }
                };
                match configs.iter().find(|(n, _, _)| *n == base_name) {
                    Some(base) => props.merged(&base.2),
                    None => {
                        let e = r.bad(
                            node.line,
                            path,
                            format!(
                                "no config named {base_name:?} under resilience4j.retry.configs"
                            ),
                        );
                        r.reject(e, FAILS);
                        continue;
                    }
                }
            }
            None if name != "default" => default
                .as_ref()
                .map_or_else(|| props.clone(), |d| props.merged(d)),
            None => props.clone(),
        };
        out.push((name.clone(), *line, merged));
    }
    out
}

fn instance(
    r: &Reader,
    name: &str,
    line: usize,
    p: &Props,
    findings: &mut Vec<Finding>,
) -> Result<Translation, CheckError> {
    let mut t = r.translation(
        line,
        name.to_owned(),
        Backoff {
            rule: RuleName::Constant,
            base: WAIT,
            cap: WAIT,
            multiplier: 1.0,
            jitter: 0.0,
        },
    );
    t.max_attempts = Some(MAX_ATTEMPTS);
    t.field_lines = p
        .fields
        .iter()
        .filter_map(|(k, l, _, _)| KEYS.iter().find(|x| *x == k).map(|x| (*x, *l)))
        .collect();
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
    if let Some((n, path)) = p.get("retryexceptions") {
        match &n.value {
            // A `.properties` list: `a, b`.
            Value::Str(s) => t.retry_on.extend(super::envoy::split_list(s)),
            _ => {
                for e in r.seq(n, path)? {
                    t.retry_on.push(r.text(e, path)?);
                }
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
