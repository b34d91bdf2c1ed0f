//! Turning raw `Scalar`s into typed values for one scope (a dataset or the root): text
//! with `${...}` substitution, booleans, durations, ports, counts and the closed enums.
//! Each conversion reports a bad value under its key and returns `None`, so callers keep
//! validating and fall back to defaults only for values that were absent.

use std::time::Duration;

use super::duration::parse_duration;
use super::error::Report;
use super::raw::Scalar;
use super::secret::{Lookup, Secret, substitute};

/// A closed set of YAML spellings; implemented by `yaml_enum!`.
pub(crate) trait YamlEnum: Sized + Copy + 'static {
    const ALL: &'static [Self];
    fn as_str(&self) -> &'static str;
}

/// Declares a `Copy` enum whose variants each have one YAML spelling, with `as_str` and
/// the `YamlEnum` list used to parse it and to list the valid values in errors.
macro_rules! yaml_enum {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($(#[$vmeta])* $variant,)+ }

        impl $name {
            /// The spelling used in `pgaccel.yaml`.
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $text,)+ }
            }
        }

        impl $crate::config::values::YamlEnum for $name {
            const ALL: &'static [Self] = &[$($name::$variant,)+];
            fn as_str(&self) -> &'static str {
                $name::as_str(self)
            }
        }
    };
}
pub(crate) use yaml_enum;

/// Reads values for one scope and records what is wrong with them.
pub(crate) struct Values<'r, 'e> {
    pub report: &'r mut Report<'e>,
    lookup: Lookup<'r>,
}

impl<'r, 'e> Values<'r, 'e> {
    pub fn new(report: &'r mut Report<'e>, lookup: Lookup<'r>) -> Self {
        Self { report, lookup }
    }

    pub fn error(&mut self, key: &str, message: impl Into<String>) {
        self.report.error(key, message);
    }

    /// A variable of the environment pgaccel runs in (tests inject theirs).
    pub fn env(&self, name: &str) -> Option<String> {
        (self.lookup)(name)
    }

    /// Text after `${secrets:..}`/`${env:..}` substitution; numbers and booleans as text.
    pub fn text(&mut self, key: &str, value: &Option<Scalar>) -> Option<String> {
        match value.as_ref()? {
            Scalar::Text(text) => match substitute(text, self.lookup) {
                Ok(text) => Some(text),
                Err(message) => {
                    self.error(key, message);
                    None
                }
            },
            other => Some(other.written()),
        }
    }

    /// Like `text`, but an empty value is an error (`what` names what is expected).
    pub fn non_empty(&mut self, key: &str, value: &Option<Scalar>, what: &str) -> Option<String> {
        let text = self.text(key, value)?;
        if text.trim().is_empty() {
            self.error(key, format!("must not be empty; give {what}"));
            return None;
        }
        Some(text)
    }

    pub fn secret(&mut self, key: &str, value: &Option<Scalar>) -> Option<Secret> {
        self.text(key, value).map(Secret::new)
    }

    /// `true`/`false` (also as strings, which environment overrides produce).
    pub fn flag(&mut self, key: &str, value: &Option<Scalar>, default: bool) -> bool {
        let Some(raw) = value else { return default };
        let parsed = match raw {
            Scalar::Bool(b) => Some(*b),
            Scalar::Text(_) => match self.text(key, value) {
                None => return default,
                Some(text) => match text.trim() {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ => None,
                },
            },
            _ => None,
        };
        parsed.unwrap_or_else(|| {
            let shown = raw.written();
            self.error(
                key,
                format!("invalid value '{shown}'; valid values are true, false"),
            );
            default
        })
    }

    /// A duration such as `10m`; zero is rejected unless `allow_zero`.
    pub fn duration(
        &mut self,
        key: &str,
        value: &Option<Scalar>,
        allow_zero: bool,
    ) -> Option<Duration> {
        let text = self.text(key, value)?;
        match parse_duration(text.trim()) {
            Ok(duration) if duration.is_zero() && !allow_zero => {
                self.error(
                    key,
                    "must be longer than zero; use a duration such as 30s, 10m, 1h",
                );
                None
            }
            Ok(duration) => Some(duration),
            Err(_) => {
                let shown = value.as_ref().map(Scalar::written).unwrap_or_default();
                self.error(
                    key,
                    parse_duration(&shown)
                        .err()
                        .unwrap_or_else(|| format!("invalid duration '{shown}'")),
                );
                None
            }
        }
    }

    /// An integer in `min..=max`; `what` describes it in the error ("a TCP port").
    pub fn integer(
        &mut self,
        key: &str,
        value: &Option<Scalar>,
        min: u64,
        max: u64,
        what: &str,
    ) -> Option<u64> {
        let text = self.text(key, value)?;
        match text.trim().parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                let shown = value.as_ref().map(Scalar::written).unwrap_or_default();
                self.error(key, format!("invalid value '{shown}'; expected {what}, a whole number from {min} to {max}"));
                None
            }
        }
    }

    /// A size such as `512MB` or `2GB`, in bytes; at least `min`.
    pub fn bytes(&mut self, key: &str, value: &Option<Scalar>, min: u64) -> Option<u64> {
        let text = self.text(key, value)?;
        match parse_bytes(text.trim()) {
            Some(n) if n >= min => Some(n),
            _ => {
                let shown = value.as_ref().map(Scalar::written).unwrap_or_default();
                self.error(
                    key,
                    format!("invalid size '{shown}'; expected a size of at least {min} bytes such as 512MB or 4GB (units B, kB, MB, GB, TB)"),
                );
                None
            }
        }
    }

    /// A TCP port (`pg_port`, `mysql_tcp_port`).
    pub fn port(&mut self, key: &str, value: &Option<Scalar>) -> Option<u16> {
        let n = self.integer(key, value, 1, u64::from(u16::MAX), "a TCP port")?;
        u16::try_from(n).ok()
    }

    /// One of the spellings of `E`.
    pub fn choice<E: YamlEnum>(&mut self, key: &str, value: &Option<Scalar>) -> Option<E> {
        let text = self.text(key, value)?;
        let found = E::ALL.iter().find(|v| v.as_str() == text.trim()).copied();
        if found.is_none() {
            let valid: Vec<&str> = E::ALL.iter().map(YamlEnum::as_str).collect();
            let shown = value.as_ref().map(Scalar::written).unwrap_or_default();
            self.error(
                key,
                format!(
                    "invalid value '{shown}'; valid values are {}",
                    valid.join(", ")
                ),
            );
        }
        found
    }
}

/// `text` as a number of bytes: digits, then an optional unit. As in
/// PostgreSQL's own memory settings (`work_mem = 4MB`), units are powers of
/// 1024 however they are spelled (`MB` and `MiB` alike); a small parser of
/// our own, because the size crates read `MB` as 10^6.
pub(crate) fn parse_bytes(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "kb" | "kib" | "k" => 10,
        "mb" | "mib" | "m" => 20,
        "gb" | "gib" | "g" => 30,
        "tb" | "tib" | "t" => 40,
        _ => return None,
    };
    number.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::ConfigError;

    #[test]
    fn sizes_count_in_powers_of_1024() {
        assert_eq!(parse_bytes("1048576"), Some(1 << 20));
        assert_eq!(parse_bytes("512MB"), Some(512 << 20));
        assert_eq!(parse_bytes("2 GiB"), Some(2 << 30));
        assert_eq!(parse_bytes("64kB"), Some(64 << 10));
        assert_eq!(parse_bytes("1TB"), Some(1 << 40));
        assert_eq!(parse_bytes("1.5GB"), None);
        assert_eq!(parse_bytes("MB"), None);
        assert_eq!(parse_bytes("4 bananas"), None);
        assert_eq!(parse_bytes("99999999999999TB"), None);
    }

    yaml_enum! {
        pub enum Colour {
            Red => "red",
            LightBlue => "light_blue",
        }
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn check<T>(f: impl FnOnce(&mut Values<'_, '_>) -> T) -> (T, Vec<ConfigError>) {
        let mut errors = Vec::new();
        let mut report = Report::new(Some("d".into()), &mut errors);
        let mut values = Values::new(&mut report, &no_env);
        let out = f(&mut values);
        (out, errors)
    }

    fn text(s: &str) -> Option<Scalar> {
        Some(Scalar::Text(s.into()))
    }

    #[test]
    fn choice_lists_valid_values() {
        let (found, errors) = check(|v| v.choice::<Colour>("colour", &text("light_blue")));
        assert_eq!(found, Some(Colour::LightBlue));
        assert!(errors.is_empty());
        let (found, errors) = check(|v| v.choice::<Colour>("colour", &text("blue")));
        assert_eq!(found, None);
        assert_eq!(
            errors[0].message,
            "invalid value 'blue'; valid values are red, light_blue"
        );
    }

    #[test]
    fn ports_accept_numbers_and_strings() {
        assert_eq!(
            check(|v| v.port("p", &Some(Scalar::Int(5432)))).0,
            Some(5432)
        );
        assert_eq!(check(|v| v.port("p", &text("3306"))).0, Some(3306));
        let (port, errors) = check(|v| v.port("p", &Some(Scalar::Int(70000))));
        assert_eq!(port, None);
        assert!(errors[0].message.contains("'70000'"));
    }

    #[test]
    fn zero_durations_are_rejected_unless_allowed() {
        assert!(check(|v| v.duration("d", &text("0s"), false)).1.len() == 1);
        assert_eq!(
            check(|v| v.duration("d", &text("0s"), true)).0,
            Some(Duration::ZERO)
        );
        let (_, errors) = check(|v| v.duration("d", &text("10 minutes"), false));
        assert!(
            errors[0]
                .message
                .starts_with("invalid duration '10 minutes'")
        );
    }

    #[test]
    fn flags_accept_strings_from_the_environment() {
        assert!(!check(|v| v.flag("f", &text("false"), true)).0);
        let (_, errors) = check(|v| v.flag("f", &text("yes"), true));
        assert!(errors[0].message.contains("valid values are true, false"));
    }
}
