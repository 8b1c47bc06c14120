//! Rules in scenario files and reports, by name (`full`, `decorrelated`, …): herd's core has
//! no serde, so the simulator's types point their rule fields here with `#[serde(with = …)]`
//! or `serialize_with`.
use herd::RuleName;
use serde::{Deserialize, Deserializer, Serializer};

/// One rule, as its name.
pub(crate) mod one {
    use super::{Deserialize, Deserializer, RuleName, Serializer};

    pub(crate) fn serialize<S: Serializer>(rule: &RuleName, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(rule.as_str())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RuleName, D::Error> {
        let name = String::deserialize(d)?;
        name.parse::<RuleName>().map_err(serde::de::Error::custom)
    }
}

/// A list of rules, as a list of names.
pub(crate) mod list {
    use super::{Deserialize, Deserializer, RuleName, Serializer};

    pub(crate) fn serialize<S: Serializer>(rules: &[RuleName], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(rules.iter().map(|r| r.as_str()))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<RuleName>, D::Error> {
        let names = Vec::<String>::deserialize(d)?;
        names
            .iter()
            .map(|n| n.parse::<RuleName>().map_err(serde::de::Error::custom))
            .collect()
    }
}
