//! The YAML as written: serde structs that mirror `pgaccel.yaml` key for key and reject
//! unknown keys. Leaf values stay `Scalar`s (string, number or boolean) so that every
//! value is checked by the validators, which can report all bad values instead of the
//! first one serde trips on. Nothing here applies defaults or cross-key rules.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

use super::error::Report;

/// A leaf value: YAML gives strings, numbers and booleans; environment overrides give
/// strings. Validators convert it to the real type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl Scalar {
    /// The value as the user wrote it (before `${...}` substitution), for error messages.
    pub fn written(&self) -> String {
        match self {
            Scalar::Text(text) => text.clone(),
            Scalar::Int(n) => n.to_string(),
            Scalar::Float(x) => x.to_string(),
            Scalar::Bool(b) => b.to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl Visitor<'_> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, number or boolean")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Text(v.to_string()))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or_else(|_| Scalar::Text(v.to_string()), Scalar::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
}

/// `primary_key: id`, `primary_key: "a, b"` or `primary_key: [a, b]`.
#[derive(Debug, Clone)]
pub(crate) enum StringList {
    One(String),
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for StringList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StringListVisitor)
    }
}

struct StringListVisitor;

impl<'de> Visitor<'de> for StringListVisitor {
    type Value = StringList;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a column name, a comma-separated list of columns or a YAML list of columns")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<StringList, E> {
        Ok(StringList::One(v.to_string()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StringList, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<String>()? {
            items.push(item);
        }
        Ok(StringList::Many(items))
    }
}

/// Key/value parameters (`params:` blocks); which keys are allowed depends on the source
/// kind or engine, so they are checked by the validators rather than by serde.
pub(crate) type RawParams = BTreeMap<String, Scalar>;

/// The top level of the file. Sections stay untyped here so that each is deserialized on
/// its own and one broken section does not hide another's errors.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRoot {
    pub runtime: Option<Value>,
    pub snapshots: Option<Value>,
    pub datasets: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRuntime {
    pub pg: Option<RawPg>,
    pub http: Option<RawHttp>,
    pub ready_state: Option<Scalar>,
    pub params: Option<RawRuntimeParams>,
    pub query: Option<RawQuery>,
    pub shutdown_timeout: Option<Scalar>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQuery {
    pub unsupported: Option<Scalar>,
    pub memory_limit: Option<Scalar>,
    pub statement_timeout: Option<Scalar>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPg {
    pub listen: Option<Scalar>,
    pub tls: Option<RawTls>,
    pub max_connections: Option<Scalar>,
    pub connection_threads: Option<Scalar>,
    pub auth: Option<RawAuth>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTls {
    pub cert: Option<Scalar>,
    pub key: Option<Scalar>,
    pub required: Option<Scalar>,
    pub min_version: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuth {
    pub method: Option<Scalar>,
    pub users: Option<Vec<RawUser>>,
    pub allow_cleartext_without_tls: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawUser {
    pub name: Option<Scalar>,
    pub password: Option<Scalar>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHttp {
    pub listen: Option<Scalar>,
    pub api_key: Option<Scalar>,
    pub metrics_public: Option<Scalar>,
    pub tls: Option<RawTls>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRuntimeParams {
    pub dedicated_thread_pool: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSnapshots {
    pub enabled: Option<Scalar>,
    pub location: Option<Scalar>,
    pub bootstrap_on_failure_behavior: Option<Scalar>,
    pub params: Option<RawParams>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDataset {
    pub from: Option<Scalar>,
    pub name: Option<Scalar>,
    pub description: Option<Scalar>,
    pub params: Option<RawParams>,
    pub time_column: Option<Scalar>,
    pub time_format: Option<Scalar>,
    pub time_partition_column: Option<Scalar>,
    pub time_partition_format: Option<Scalar>,
    pub ready_state: Option<Scalar>,
    pub access: Option<Scalar>,
    pub acceleration: Option<RawAcceleration>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAcceleration {
    pub enabled: Option<Scalar>,
    pub engine: Option<Scalar>,
    pub mode: Option<Scalar>,
    pub params: Option<RawParams>,
    pub primary_key: Option<StringList>,
    pub sort_by: Option<StringList>,
    pub refresh_mode: Option<Scalar>,
    pub refresh_check_interval: Option<Scalar>,
    pub refresh_cron: Option<Scalar>,
    pub refresh_sql: Option<Scalar>,
    pub refresh_data_window: Option<Scalar>,
    pub refresh_append_overlap: Option<Scalar>,
    pub refresh_on_startup: Option<Scalar>,
    pub refresh_retry_enabled: Option<Scalar>,
    pub refresh_retry_max_attempts: Option<Scalar>,
    pub refresh_jitter_enabled: Option<Scalar>,
    pub refresh_jitter_max: Option<Scalar>,
    pub on_zero_results: Option<Scalar>,
    pub on_schema_change: Option<Scalar>,
    pub retention_check_enabled: Option<Scalar>,
    pub retention_check_interval: Option<Scalar>,
    pub retention_period: Option<Scalar>,
    pub retention_sql: Option<Scalar>,
    pub snapshots: Option<Scalar>,
    pub snapshots_location: Option<Scalar>,
}

/// How many unknown keys one section may report before giving up; a file that is not a
/// pgaccel configuration at all should not produce hundreds of lines.
const MAX_UNKNOWN_KEYS: usize = 25;

/// Deserializes one section, reporting every unknown key (each is removed and the
/// section retried) and the first structural error under `prefix` (e.g. `runtime`).
pub(crate) fn section<T: DeserializeOwned>(
    mut value: Value,
    prefix: &str,
    report: &mut Report<'_>,
) -> Option<T> {
    for _ in 0..MAX_UNKNOWN_KEYS {
        let error = match serde_path_to_error::deserialize::<_, T>(value.clone()) {
            Ok(parsed) => return Some(parsed),
            Err(error) => error,
        };
        let segments = segments(error.path());
        let message = error.into_inner().to_string();
        match unknown_field(&message) {
            Some((field, valid)) => {
                // serde_path_to_error's path may or may not end with the unknown key itself.
                let parent = match segments.split_last() {
                    Some((last, parent)) if *last == field => parent.to_vec(),
                    _ => segments,
                };
                let mut full = parent.clone();
                full.push(field.clone());
                report.error(
                    join(prefix, &full),
                    format!("unknown key '{field}'; {valid}"),
                );
                if !remove(&mut value, &parent, &field) {
                    return None;
                }
            }
            None => {
                report.error(join(prefix, &segments), readable(message));
                return None;
            }
        }
    }
    None
}

/// The path of an error as dotted-key segments (`users[1]` becomes `users`, `1`).
fn segments(path: &serde_path_to_error::Path) -> Vec<String> {
    path.iter()
        .filter_map(|segment| match segment {
            serde_path_to_error::Segment::Map { key } => Some(key.clone()),
            serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
            serde_path_to_error::Segment::Enum { variant } => Some(variant.clone()),
            serde_path_to_error::Segment::Unknown => None,
        })
        .collect()
}

/// Joins segments to a dotted key, list indexes as `[n]`.
pub(crate) fn join(prefix: &str, segments: &[String]) -> String {
    let mut key = prefix.to_string();
    for segment in segments {
        if segment.parse::<usize>().is_ok() {
            key.push_str(&format!("[{segment}]"));
        } else {
            if !key.is_empty() {
                key.push('.');
            }
            key.push_str(segment);
        }
    }
    key
}

/// serde names our raw struct types in type errors; users know them as mappings.
fn readable(message: String) -> String {
    match message.find(", expected struct Raw") {
        Some(end) => format!("{}, expected a mapping of keys", &message[..end]),
        None => message,
    }
}

/// Recognises serde's "unknown field `x`, expected one of `a`, `b`" and returns the field
/// and a readable list of valid keys.
fn unknown_field(message: &str) -> Option<(String, String)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, tail) = rest.split_once('`')?;
    let valid = tail.trim_start_matches(", ").replace('`', "");
    let valid = match valid.strip_prefix("expected one of ") {
        Some(list) => format!("valid keys here are {list}"),
        None => match valid.strip_prefix("expected ") {
            Some(one) => format!("the only valid key here is {one}"),
            None => "no keys are valid here".to_string(),
        },
    };
    Some((field.to_string(), valid))
}

/// Removes `field` from the mapping at `path` inside `value`; false if it is not there.
fn remove(value: &mut Value, path: &[String], field: &str) -> bool {
    let mut current = value;
    for segment in path {
        let next = match current {
            Value::Object(map) => map.get_mut(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get_mut(i)),
            _ => None,
        };
        match next {
            Some(next) => current = next,
            None => return false,
        }
    }
    current
        .as_object_mut()
        .is_some_and(|map| map.remove(field).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::ConfigError;
    use serde_json::json;

    #[test]
    fn reports_every_unknown_key_with_its_path() {
        let mut errors: Vec<ConfigError> = Vec::new();
        let value =
            json!({"from": "postgres:t", "nme": "x", "acceleration": {"refresh_mod": "full"}});
        let mut report = Report::new(Some("x".into()), &mut errors);
        let parsed = section::<RawDataset>(value, "", &mut report);
        assert!(parsed.is_some());
        let keys: Vec<_> = errors.iter().map(|e| e.key.as_str()).collect();
        assert!(keys.contains(&"nme"), "{keys:?}");
        assert!(keys.contains(&"acceleration.refresh_mod"), "{keys:?}");
        assert!(
            errors[0].message.contains("valid keys here are"),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn structural_errors_name_the_key() {
        let mut errors = Vec::new();
        let value = json!({"acceleration": {"engine": {"nested": 1}}});
        let mut report = Report::new(None, &mut errors);
        assert!(section::<RawDataset>(value, "", &mut report).is_none());
        assert_eq!(errors[0].key, "acceleration.engine");

        let mut errors = Vec::new();
        let value = json!({"acceleration": "full"});
        let mut report = Report::new(None, &mut errors);
        assert!(section::<RawDataset>(value, "", &mut report).is_none());
        assert_eq!(errors[0].key, "acceleration");
        assert!(
            errors[0].message.ends_with("expected a mapping of keys"),
            "{}",
            errors[0].message
        );
    }

    #[test]
    fn join_formats_indexes() {
        let segments = vec![
            "pg".to_string(),
            "auth".into(),
            "users".into(),
            "1".into(),
            "name".into(),
        ];
        assert_eq!(join("runtime", &segments), "runtime.pg.auth.users[1].name");
    }
}
