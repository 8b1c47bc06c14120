//! A configuration file as a tree whose every node knows its line, read from YAML (every
//! document of a stream) or JSON, and the typed reads the translators share: numbers, strings,
//! durations in each system's spelling, and the list of keys a translator did not read.
//!
//! YAML is read with `saphyr` (`MarkedYamlOwned`): it keeps the span of every node, reads
//! multi-document streams, refuses duplicate keys, and bounds alias expansion (so a "billion
//! laughs" file is an error, not an exhausted machine). JSON is first checked by `serde_json`
//! (whose errors name the line and column) and then read by the same YAML loader, of which
//! JSON is a subset, so that its nodes carry lines too.
use std::time::Duration;

use saphyr::{LoadableYamlNode, MarkedYamlOwned, ScalarOwned, YamlDataOwned};

use super::{Backoff, CheckError, Finding, Ignored, Note, Severity, System, Translation};

/// A node of a configuration file and the line (1-based) where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) line: usize,
    pub(crate) value: Value,
}

/// What a node holds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Keys in file order, each with its own line.
    Map(Vec<(String, usize, Node)>),
}

/// Every document of a YAML stream (an empty file has none).
pub(crate) fn load_yaml(file: &str, text: &str) -> Result<Vec<Node>, CheckError> {
    let docs = MarkedYamlOwned::load_from_str(text).map_err(|e| {
        CheckError::new(
            file,
            e.marker().line(),
            "",
            format!("malformed YAML: {}", e.info()),
        )
    })?;
    docs.iter().map(|d| convert(file, d)).collect()
}

/// A JSON document.
pub(crate) fn load_json(file: &str, text: &str) -> Result<Node, CheckError> {
    if let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
        return Err(CheckError::new(
            file,
            e.line(),
            "",
            format!("malformed JSON: {e}"),
        ));
    }
    let mut docs = load_yaml(file, text)?;
    Ok(docs.pop().unwrap_or(Node {
        line: 1,
        value: Value::Null,
    }))
}

fn convert(file: &str, node: &MarkedYamlOwned) -> Result<Node, CheckError> {
    let line = node.span.start.line().max(1);
    let value = match &node.data {
        YamlDataOwned::Value(s) => scalar(s),
        YamlDataOwned::Representation(text, _, _) => Value::Str(text.clone()),
        YamlDataOwned::Sequence(items) => Value::Seq(
            items
                .iter()
                .map(|n| convert(file, n))
                .collect::<Result<_, _>>()?,
        ),
        YamlDataOwned::Mapping(map) => {
            let mut out = Vec::with_capacity(map.len());
            for (k, v) in map {
                let key = match convert(file, k)?.value {
                    Value::Str(s) => s,
                    Value::Int(i) => i.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => {
                        return Err(CheckError::new(
                            file,
                            k.span.start.line(),
                            "",
                            "a mapping key must be a plain string",
                        ));
                    }
                };
                out.push((key, k.span.start.line().max(1), convert(file, v)?));
            }
            Value::Map(out)
        }
        YamlDataOwned::Tagged(_, inner) => return convert(file, inner),
        YamlDataOwned::Alias(_) | YamlDataOwned::BadValue => {
            return Err(CheckError::new(
                file,
                line,
                "",
                "a value that cannot be read (an unknown alias or a malformed scalar)",
            ));
        }
    };
    Ok(Node { line, value })
}

fn scalar(s: &ScalarOwned) -> Value {
    match s {
        ScalarOwned::Null => Value::Null,
        ScalarOwned::Boolean(b) => Value::Bool(*b),
        ScalarOwned::Integer(i) => Value::Int(*i),
        ScalarOwned::FloatingPoint(f) => Value::Float(f.into_inner()),
        ScalarOwned::String(s) => Value::Str(s.clone()),
    }
}

/// How a system spells a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Units {
    /// protobuf's JSON mapping: decimal seconds with an `s` (`"0.025s"`); Envoy's YAML also
    /// takes `{seconds, nanos}`.
    Proto,
    /// Go's `time.ParseDuration` (Istio, Linkerd): `"100ms"`, `"1m30s"`.
    Go,
    /// Spring Boot's `Duration` conversion (Resilience4j): a bare number is milliseconds,
    /// else `500ms`, `10s`, `1m`, … or ISO-8601 (`PT0.5S`).
    Spring,
}

/// What a translator reads one file with: the file's name and system, the keys it ignored,
/// the findings of reading (a misspelt key, an entry the system rejects) and the notes (a
/// route whose retries are disabled, why a file holds no policy).
#[derive(Debug)]
pub(crate) struct Reader {
    pub(crate) file: String,
    pub(crate) system: System,
    pub(crate) ignored: Vec<Ignored>,
    pub(crate) findings: Vec<Finding>,
    pub(crate) notes: Vec<Note>,
}

impl Reader {
    pub(crate) fn new(file: &str, system: System) -> Self {
        Self {
            file: file.to_owned(),
            system,
            ignored: Vec::new(),
            findings: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A policy of this file at `line` that makes one attempt, with no timeout, throttle or
    /// condition yet: what each translator starts from.
    pub(crate) fn translation(&self, line: usize, name: String, backoff: Backoff) -> Translation {
        Translation {
            file: self.file.clone(),
            line,
            system: self.system,
            name,
            max_attempts: Some(1),
            per_try_timeout: None,
            timeout: None,
            backoff,
            retry_on: Vec::new(),
            methods: Vec::new(),
            throttle: None,
            hedging: None,
            defaults: Vec::new(),
            field_lines: Vec::new(),
            generation: None,
        }
    }

    /// The translation of one entry, kept, or the entry's error as an `invalid-entry`
    /// finding saying `what_the_system_does`.
    pub(crate) fn keep(
        &mut self,
        entry: Result<Translation, CheckError>,
        out: &mut Vec<Translation>,
        what_the_system_does: &str,
    ) {
        match entry {
            Ok(t) => out.push(t),
            Err(e) => self.reject(e, what_the_system_does),
        }
    }

    /// The items of a list of entries (routes, method configs); a value that is not a list is
    /// an `invalid-entry` finding and no items.
    pub(crate) fn entries<'a>(
        &mut self,
        node: &'a Node,
        field: &str,
        what_the_system_does: &str,
    ) -> &'a [Node] {
        match self.seq(node, field) {
            Ok(items) => items,
            Err(e) => {
                self.reject(e, what_the_system_does);
                &[]
            }
        }
    }

    /// The `timeout` of a route (its entries, at `route_path`) into `t`: as written, `0`
    /// disabling it where `zero_disables`; absent, the system's `default`, listed among the
    /// defaults.
    pub(crate) fn route_timeout(
        &self,
        t: &mut Translation,
        (route, route_path): (&[(String, usize, Node)], &str),
        units: Units,
        (default, zero_disables): (Option<Duration>, bool),
    ) -> Result<(), CheckError> {
        match get(route, "timeout") {
            Some(n) => {
                let d = self.duration(n, &format!("{route_path}.timeout"), units)?;
                t.timeout = (!(zero_disables && d.is_zero())).then_some(d);
                t.field_lines.push(("timeout", n.line));
            }
            None => {
                t.timeout = default;
                t.defaults.push("timeout");
            }
        }
        Ok(())
    }

    /// Lists, as ignored, every key under `node` (at `path`) that looks like retry
    /// configuration: what a reader passes over without reading it (a `connect_timeout`, a
    /// port's own `connectionPool`).
    pub(crate) fn ignore_retry_like(&mut self, node: &Node, path: &str) {
        match &node.value {
            Value::Map(entries) => {
                for (key, line, child) in entries {
                    let p = join(path, key);
                    if looks_like_retry(key) {
                        self.ignore(*line, p);
                    } else {
                        self.ignore_retry_like(child, &p);
                    }
                }
            }
            Value::Seq(items) => {
                for (i, child) in items.iter().enumerate() {
                    self.ignore_retry_like(child, &format!("{path}[{i}]"));
                }
            }
            _ => {}
        }
    }

    /// Lists `path` (at `line`) as ignored.
    pub(crate) fn ignore(&mut self, line: usize, path: String) {
        self.ignored.push(Ignored {
            file: self.file.clone(),
            line,
            field: path,
        });
    }

    /// Notes something the reader saw that is not a policy (a disabled route).
    pub(crate) fn note(&mut self, line: usize, message: impl Into<String>) {
        self.notes.push(Note {
            file: self.file.clone(),
            line,
            message: message.into(),
        });
    }

    /// One entry the system itself rejects (or fails on when it is used): an error finding
    /// saying what the system does with it, so that the rest of the file is still read.
    pub(crate) fn reject(&mut self, e: CheckError, what_the_system_does: &str) {
        let field = if e.field.is_empty() {
            String::new()
        } else {
            format!("{}: ", e.field)
        };
        self.findings.push(Finding {
            severity: Severity::Error,
            code: "invalid-entry",
            file: self.file.clone(),
            line: e.line,
            message: format!("{field}{}; {what_the_system_does}", e.message),
            fix: "correct this entry; the others were read and are reported as usual".to_owned(),
            places: vec![crate::Place {
                line: e.line,
                name: e.field.clone(),
            }],
        });
    }

    /// Bad input at `line`, naming `field`.
    pub(crate) fn bad(&self, line: usize, field: &str, message: impl Into<String>) -> CheckError {
        CheckError::new(&self.file, line, field, message)
    }

    /// The entries of a mapping; anything else is bad input naming `field`.
    pub(crate) fn map<'a>(
        &self,
        node: &'a Node,
        field: &str,
    ) -> Result<&'a [(String, usize, Node)], CheckError> {
        match &node.value {
            Value::Map(entries) => Ok(entries),
            Value::Null => Ok(&[]),
            _ => Err(self.bad(node.line, field, "expected a mapping")),
        }
    }

    /// The entries of a mapping (`node`, at `path`), its keys outside `known` listed as
    /// ignored ([`ignore_unknown`](Self::ignore_unknown)); anything else is bad input naming
    /// `path`.
    pub(crate) fn fields<'a>(
        &mut self,
        node: &'a Node,
        path: &str,
        known: &[&str],
    ) -> Result<&'a [(String, usize, Node)], CheckError> {
        self.fields_unread(node, path, known, &[])
    }

    /// As [`fields`](Self::fields), where `unread` are listed as ignored without being taken
    /// for misspellings ([`ignore_unread`](Self::ignore_unread)).
    pub(crate) fn fields_unread<'a>(
        &mut self,
        node: &'a Node,
        path: &str,
        known: &[&str],
        unread: &[&str],
    ) -> Result<&'a [(String, usize, Node)], CheckError> {
        let entries = self.map(node, path)?;
        self.ignore_unread(node, path, known, unread);
        Ok(entries)
    }

    /// The items of a sequence; anything else is bad input naming `field`.
    pub(crate) fn seq<'a>(&self, node: &'a Node, field: &str) -> Result<&'a [Node], CheckError> {
        match &node.value {
            Value::Seq(items) => Ok(items),
            Value::Null => Ok(&[]),
            _ => Err(self.bad(node.line, field, "expected a list")),
        }
    }

    /// Lists, as ignored, every key of `node` (a mapping at `path`) not in `known`; a key
    /// that is a misspelling of a retry setting in `known` (`retrys`, `perTryTimout`) is also
    /// a warning naming the setting, since the system then applies its default in silence.
    pub(crate) fn ignore_unknown(&mut self, node: &Node, path: &str, known: &[&str]) {
        self.ignore_unread(node, path, known, &[]);
    }

    /// As [`ignore_unknown`](Self::ignore_unknown), where `unread` are the system's own
    /// fields that look like retry configuration but that herd does not model
    /// (`retry_host_predicate`, `retryRemoteLocalities`): listed as ignored, never taken for
    /// misspellings.
    pub(crate) fn ignore_unread(
        &mut self,
        node: &Node,
        path: &str,
        known: &[&str],
        unread: &[&str],
    ) {
        if let Value::Map(entries) = &node.value {
            for (key, line, _) in entries {
                if known.contains(&key.as_str()) {
                    continue;
                }
                if !unread.contains(&key.as_str()) {
                    self.misspelt(key, *line, path, known);
                }
                self.ignore(*line, join(path, key));
            }
        }
    }

    /// The `misspelt-key` warning when `key` (not in `known`) is close to a retry setting of
    /// `known`: a setting whose name looks like retry configuration, or any setting of a
    /// mapping that is itself a retry block (`path` looks like one).
    pub(crate) fn misspelt(&mut self, key: &str, line: usize, path: &str, known: &[&str]) {
        let Some(near) = nearest(key, known) else {
            return;
        };
        let block = path.rsplit(['.', ' ']).next().unwrap_or(path);
        if !(looks_like_retry(near) || looks_like_retry(block)) {
            return;
        }
        let system = self.system;
        self.findings.push(Finding {
            severity: Severity::Warning,
            code: "misspelt-key",
            file: self.file.clone(),
            line,
            message: format!(
                "`{key}` is not a field of {}: {system} ignores it and applies its default for `{near}`",
                if path.is_empty() { "the file's top level" } else { path }
            ),
            fix: format!("did you mean `{near}`?"),
            places: vec![crate::Place {
                line,
                name: key.to_owned(),
            }],
        });
    }

    /// A whole number in `[lo, hi]` (a string of digits is accepted, as protobuf's JSON
    /// mapping writes 64-bit integers).
    pub(crate) fn int(
        &self,
        node: &Node,
        field: &str,
        lo: i64,
        hi: i64,
    ) -> Result<i64, CheckError> {
        let n = match &node.value {
            Value::Int(i) => Some(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Some(*f as i64),
            Value::Str(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if (lo..=hi).contains(&n) => Ok(n),
            Some(n) => Err(self.bad(
                node.line,
                field,
                format!("must be a whole number in [{lo}, {hi}], got {n}"),
            )),
            None => Err(self.bad(node.line, field, "expected a whole number")),
        }
    }

    /// A finite number in `[lo, hi]`.
    pub(crate) fn number(
        &self,
        node: &Node,
        field: &str,
        lo: f64,
        hi: f64,
    ) -> Result<f64, CheckError> {
        let n = match &node.value {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Str(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if n.is_finite() && (lo..=hi).contains(&n) => Ok(n),
            Some(n) => Err(self.bad(
                node.line,
                field,
                format!("must be a number in [{lo}, {hi}], got {n}"),
            )),
            None => Err(self.bad(node.line, field, "expected a number")),
        }
    }

    /// A string (a number or a boolean is taken as written).
    pub(crate) fn text(&self, node: &Node, field: &str) -> Result<String, CheckError> {
        match &node.value {
            Value::Str(s) => Ok(s.clone()),
            Value::Int(i) => Ok(i.to_string()),
            Value::Float(f) => Ok(f.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            _ => Err(self.bad(node.line, field, "expected a string")),
        }
    }

    /// `true` or `false` (also as the strings Spring and Kubernetes annotations use).
    pub(crate) fn boolean(&self, node: &Node, field: &str) -> Result<bool, CheckError> {
        match &node.value {
            Value::Bool(b) => Ok(*b),
            Value::Str(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Value::Str(s) if s.eq_ignore_ascii_case("false") => Ok(false),
            _ => Err(self.bad(node.line, field, "expected true or false")),
        }
    }

    /// A duration in the system's spelling, at most 10^9 s.
    pub(crate) fn duration(
        &self,
        node: &Node,
        field: &str,
        units: Units,
    ) -> Result<Duration, CheckError> {
        let parsed = match (&node.value, units) {
            (Value::Str(s), _) => parse_duration(s.trim(), units),
            (Value::Int(i), Units::Spring) => u64::try_from(*i).ok().map(Duration::from_millis),
            (Value::Map(entries), Units::Proto) => proto_object(entries),
            _ => None,
        };
        let hint = match units {
            Units::Proto => "a duration such as \"0.25s\"",
            Units::Go => "a duration such as \"250ms\" or \"1m30s\"",
            Units::Spring => "a duration such as \"500ms\", \"10s\" or a number of milliseconds",
        };
        match parsed {
            Some(d) if d <= Duration::from_secs(1_000_000_000) => Ok(d),
            _ => Err(self.bad(node.line, field, format!("expected {hint}"))),
        }
    }
}

/// A file's text without the UTF-8 byte-order mark that some editors write at its start.
#[must_use]
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Whether a key looks like retry configuration: it names retries, a backoff, a timeout, a
/// budget or attempts, in any case or spelling (`retryOn`, `retry_back_off`, `perTryTimeout`,
/// `max-attempts`, `retryBudget`).
pub(crate) fn looks_like_retry(key: &str) -> bool {
    let k = squash(key);
    ["retr", "backoff", "timeout", "budget", "attempt", "hedg"]
        .iter()
        .any(|w| k.contains(w))
}

/// A key lowercased without `-` and `_`: the spellings one loader takes as the same name.
pub(crate) fn squash(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The name in `known` that `key` most likely misspells: the same name in another case or
/// separator style, or one within two edits (one for names of up to four letters).
pub(crate) fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let k = squash(key);
    let allowed = if k.chars().count() <= 4 { 1 } else { 2 };
    known
        .iter()
        .map(|n| (edit_distance(&k, &squash(n)), *n))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance: the fewest insertions, deletions and substitutions of characters that
/// turn `a` into `b`.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// protobuf's JSON mapping writes a field under its lowerCamelCase `json_name`
/// (`retryPolicy`) and parsers accept that or the original field name (`retry_policy`): the
/// field name of `key`, for keys with an upper-case letter (field names have none).
pub(crate) fn proto_field_name(key: &str) -> Option<String> {
    if !key.chars().any(|c| c.is_ascii_uppercase()) || key.starts_with('@') {
        return None;
    }
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// Rewrites every key of `node` written as a protobuf JSON name to its field name, so that a
/// reader of field names reads both spellings (Envoy's loader does:
/// source/common/protobuf/utility.cc parses with `JsonStringToMessage`, which takes both).
pub(crate) fn to_proto_field_names(node: &mut Node) {
    match &mut node.value {
        Value::Map(entries) => {
            for (key, _, child) in entries.iter_mut() {
                if let Some(name) = proto_field_name(key) {
                    *key = name;
                }
                to_proto_field_names(child);
            }
        }
        Value::Seq(items) => items.iter_mut().for_each(to_proto_field_names),
        _ => {}
    }
}

/// The text of a scalar node, if it is one: how a reader takes a name it only looks at.
pub(crate) fn str_of(node: Option<&Node>) -> Option<&str> {
    match node.map(|n| &n.value) {
        Some(Value::Str(s)) => Some(s),
        _ => None,
    }
}

/// The entries of a mapping node, if it is one.
pub(crate) fn map_of(node: Option<&Node>) -> Option<&[(String, usize, Node)]> {
    match node.map(|n| &n.value) {
        Some(Value::Map(e)) => Some(e),
        _ => None,
    }
}

/// `path.key`, or `key` at the top.
pub(crate) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The value under `key` of a mapping's entries.
pub(crate) fn get<'a>(entries: &'a [(String, usize, Node)], key: &str) -> Option<&'a Node> {
    entries.iter().find(|(k, _, _)| k == key).map(|(_, _, n)| n)
}

/// The line of `key` in a mapping's entries.
pub(crate) fn line_of(entries: &[(String, usize, Node)], key: &str) -> Option<usize> {
    entries
        .iter()
        .find(|(k, _, _)| k == key)
        .map(|(_, l, _)| *l)
}

fn proto_object(entries: &[(String, usize, Node)]) -> Option<Duration> {
    let mut seconds = 0u64;
    let mut nanos = 0u32;
    for (key, _, node) in entries {
        match (key.as_str(), &node.value) {
            ("seconds", Value::Int(s)) => seconds = u64::try_from(*s).ok()?,
            ("seconds", Value::Str(s)) => seconds = s.parse().ok()?,
            ("nanos", Value::Int(n)) => {
                nanos = u32::try_from(*n).ok().filter(|n| *n < 1_000_000_000)?
            }
            _ => return None,
        }
    }
    Some(Duration::new(seconds, nanos))
}

/// Parses a duration in the spelling of `units`; `None` when it is not one.
pub(crate) fn parse_duration(s: &str, units: Units) -> Option<Duration> {
    match units {
        Units::Proto => {
            let number = s.strip_suffix('s')?;
            decimal_nanos(number, 1_000_000_000)
        }
        Units::Go => compound(s),
        Units::Spring => {
            if let Some(iso) = s.strip_prefix("PT").or_else(|| s.strip_prefix("pt")) {
                return iso_time(iso);
            }
            if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
                return s.parse::<u64>().ok().map(Duration::from_millis);
            }
            let split = s.find(|c: char| !c.is_ascii_digit())?;
            let (number, unit) = s.split_at(split);
            decimal_nanos(number, unit_nanos(&unit.to_ascii_lowercase())?)
        }
    }
}

fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    })
}

/// Go's `1h2m3.5s`: one or more decimal numbers, each with a unit.
fn compound(s: &str) -> Option<Duration> {
    if s == "0" {
        return Some(Duration::ZERO);
    }
    let mut rest = s;
    let mut total = 0u128;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, after) = rest.split_at(digits);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        total += decimal_nanos(number, unit_nanos(unit)?)?.as_nanos();
        rest = next;
    }
    u64::try_from(total).ok().map(Duration::from_nanos)
}

/// ISO-8601's time part after `PT`: `1H`, `2M`, `0.5S`, in that order.
fn iso_time(s: &str) -> Option<Duration> {
    let mut rest = s.to_ascii_uppercase();
    let mut total = 0u128;
    for (unit, nanos) in [
        ('H', 3_600_000_000_000u64),
        ('M', 60_000_000_000),
        ('S', 1_000_000_000),
    ] {
        if let Some(at) = rest.find(unit) {
            total += decimal_nanos(&rest[..at], nanos)?.as_nanos();
            rest = rest[at + 1..].to_owned();
        }
    }
    if !rest.is_empty() {
        return None;
    }
    u64::try_from(total).ok().map(Duration::from_nanos)
}

/// `number` (digits, at most one point, at most nine decimals) times `unit` nanoseconds,
/// exactly.
fn decimal_nanos(number: &str, unit: u64) -> Option<Duration> {
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
        || frac.len() > 9
    {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let scale = 10u128.pow(frac.len() as u32);
    let frac: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let nanos = whole.checked_mul(u128::from(unit))? + frac * u128::from(unit) / scale;
    u64::try_from(nanos).ok().map(Duration::from_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_each_system_spells_them() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("0.025s", Units::Proto), Some(ms(25)));
        assert_eq!(parse_duration("25ms", Units::Proto), None);
        assert_eq!(parse_duration("1m30s", Units::Go), Some(ms(90_000)));
        assert_eq!(parse_duration("100ms", Units::Go), Some(ms(100)));
        assert_eq!(parse_duration("1.5s", Units::Go), Some(ms(1500)));
        assert_eq!(parse_duration("10", Units::Go), None);
        assert_eq!(parse_duration("500", Units::Spring), Some(ms(500)));
        assert_eq!(parse_duration("30s", Units::Spring), Some(ms(30_000)));
        assert_eq!(parse_duration("PT0.5S", Units::Spring), Some(ms(500)));
        assert_eq!(parse_duration("PT1M", Units::Spring), Some(ms(60_000)));
        assert_eq!(parse_duration("1x", Units::Spring), None);
    }

    #[test]
    fn names_read_in_both_protobuf_spellings_and_misspellings_found() {
        assert_eq!(
            proto_field_name("retryBackOff").as_deref(),
            Some("retry_back_off")
        );
        assert_eq!(
            proto_field_name("numRetries").as_deref(),
            Some("num_retries")
        );
        assert_eq!(proto_field_name("num_retries"), None);
        assert_eq!(proto_field_name("@type"), None);
        assert_eq!(edit_distance("retrys", "retries"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            nearest("perTryTimout", &["perTryTimeout", "retryOn"]),
            Some("perTryTimeout")
        );
        assert_eq!(
            nearest("max-attempts", &["maxAttempts"]),
            Some("maxAttempts")
        );
        assert_eq!(nearest("mirror", &["retries", "timeout"]), None);
        assert!(looks_like_retry("retryRemoteLocalities"));
        assert!(looks_like_retry("retry_back_off") && looks_like_retry("perTryTimeout"));
        assert!(looks_like_retry("max-attempts") && looks_like_retry("retryBudget"));
        assert!(!looks_like_retry("loadBalancingConfig"));
        assert_eq!(strip_bom("\u{feff}a: 1"), "a: 1");
    }

    #[test]
    fn yaml_nodes_know_their_lines_in_every_document() {
        let docs = load_yaml("f", "a: 1\n---\nb:\n  c: x\n").unwrap();
        assert_eq!(docs.len(), 2);
        let Value::Map(entries) = &docs[1].value else {
            panic!("not a map")
        };
        assert_eq!(entries[0].1, 3);
        let Value::Map(inner) = &entries[0].2.value else {
            panic!("not a map")
        };
        assert_eq!(inner[0].1, 4);
    }

    #[test]
    fn malformed_input_names_the_line() {
        let err = load_yaml("f.yaml", "a: 1\nb: [\n").unwrap_err();
        assert_eq!(err.file, "f.yaml");
        assert!(err.line >= 2, "{err}");
        let err = load_json("f.json", "{\n \"a\": 1,\n}").unwrap_err();
        assert_eq!(err.line, 3, "{err}");
    }
}
