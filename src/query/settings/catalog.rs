//! The definitions of PostgreSQL 16's run-time settings, read once from
//! `pg16.tsv` (name, boot value, unit, type, context, category, enum values,
//! range, description, as `pg_settings` lists them), and the parsing of a
//! value for one of them into its stored form, with PostgreSQL's errors.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::query::error::PgError;
use crate::query::sqlstate;

/// The type of a setting, with what its values may be.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Bool,
    Integer { min: i64, max: i64 },
    Real { min: f64, max: f64 },
    Text,
    Enum(Vec<&'static str>),
}

impl Kind {
    /// The `vartype` column of `pg_settings`.
    pub fn vartype(&self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Integer { .. } => "integer",
            Kind::Real { .. } => "real",
            Kind::Text => "string",
            Kind::Enum(_) => "enum",
        }
    }
}

/// When a setting may be changed (`pg_settings.context`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Internal,
    Postmaster,
    Sighup,
    SuperuserBackend,
    Backend,
    Superuser,
    User,
}

impl Context {
    fn parse(text: &str) -> Context {
        match text {
            "internal" => Context::Internal,
            "postmaster" => Context::Postmaster,
            "sighup" => Context::Sighup,
            "superuser-backend" => Context::SuperuserBackend,
            "backend" => Context::Backend,
            "superuser" => Context::Superuser,
            _ => Context::User,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Context::Internal => "internal",
            Context::Postmaster => "postmaster",
            Context::Sighup => "sighup",
            Context::SuperuserBackend => "superuser-backend",
            Context::Backend => "backend",
            Context::Superuser => "superuser",
            Context::User => "user",
        }
    }
}

/// The unit a numeric setting is kept in: a memory or time quantity and
/// how many of the smallest unit (bytes, microseconds) it is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    None,
    Memory(i64),
    Time(i64),
}

const MEMORY_UNITS: [(&str, i64); 5] = [
    ("TB", 1 << 40),
    ("GB", 1 << 30),
    ("MB", 1 << 20),
    ("kB", 1 << 10),
    ("B", 1),
];

const TIME_UNITS: [(&str, i64); 6] = [
    ("d", 86_400_000_000),
    ("h", 3_600_000_000),
    ("min", 60_000_000),
    ("s", 1_000_000),
    ("ms", 1_000),
    ("us", 1),
];

impl Unit {
    fn parse(text: &str) -> Unit {
        match text {
            "" => Unit::None,
            "8kB" => Unit::Memory(8192),
            "16MB" => Unit::Memory(16 << 20),
            "B" => Unit::Memory(1),
            "kB" => Unit::Memory(1024),
            "MB" => Unit::Memory(1 << 20),
            "ms" => Unit::Time(1_000),
            "s" => Unit::Time(1_000_000),
            "min" => Unit::Time(60_000_000),
            "us" => Unit::Time(1),
            _ => Unit::None,
        }
    }

    fn table(self) -> &'static [(&'static str, i64)] {
        match self {
            Unit::None => &[],
            Unit::Memory(_) => &MEMORY_UNITS,
            Unit::Time(_) => &TIME_UNITS,
        }
    }

    fn base(self) -> i64 {
        match self {
            Unit::None => 1,
            Unit::Memory(base) | Unit::Time(base) => base,
        }
    }

    fn hint(self) -> Option<&'static str> {
        match self {
            Unit::None => None,
            Unit::Memory(_) => Some(
                "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".",
            ),
            Unit::Time(_) => Some(
                "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".",
            ),
        }
    }
}

/// One setting's definition.
#[derive(Debug)]
pub struct Definition {
    /// The name as PostgreSQL spells it (`DateStyle`, `work_mem`).
    pub name: &'static str,
    /// The value in its stored form (numbers in the setting's unit).
    pub boot: &'static str,
    /// The unit as `pg_settings.unit` shows it (`8kB`, `ms`, empty).
    pub unit_text: &'static str,
    pub unit: Unit,
    pub kind: Kind,
    pub context: Context,
    pub category: &'static str,
    pub description: &'static str,
    pub min_text: &'static str,
    pub max_text: &'static str,
}

struct Catalog {
    definitions: Vec<Definition>,
    by_name: HashMap<String, usize>,
}

static CATALOG: LazyLock<Catalog> = LazyLock::new(|| {
    let definitions: Vec<Definition> = include_str!("pg16.tsv")
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(definition)
        .collect();
    let by_name = definitions
        .iter()
        .enumerate()
        .map(|(index, definition)| (definition.name.to_lowercase(), index))
        .collect();
    Catalog {
        definitions,
        by_name,
    }
});

fn definition(line: &'static str) -> Option<Definition> {
    let fields: Vec<&'static str> = line.split('\t').collect();
    let [
        name,
        boot,
        unit,
        vartype,
        context,
        category,
        enums,
        min,
        max,
        description,
    ] = fields.as_slice()
    else {
        return None;
    };
    let kind = match *vartype {
        "bool" => Kind::Bool,
        "integer" => Kind::Integer {
            min: min.parse().ok()?,
            max: max.parse().ok()?,
        },
        "real" => Kind::Real {
            min: min.parse().ok()?,
            max: max.parse().ok()?,
        },
        "enum" => Kind::Enum(enums.split(',').collect()),
        _ => Kind::Text,
    };
    Some(Definition {
        name,
        boot,
        unit_text: unit,
        unit: Unit::parse(unit),
        kind,
        context: Context::parse(context),
        category,
        description,
        min_text: min,
        max_text: max,
    })
}

/// The definition of `name` (any case), if PostgreSQL 16 has the setting.
pub fn lookup(name: &str) -> Option<&'static Definition> {
    let catalog = &*CATALOG;
    catalog
        .by_name
        .get(super::lowercase(name).as_ref())
        .map(|&index| &catalog.definitions[index])
}

/// Every definition, in `SHOW ALL` order.
pub fn all() -> &'static [Definition] {
    &CATALOG.definitions
}

impl Definition {
    /// Parses `value` (a client's text) into the stored form.
    pub fn parse(&self, value: &str) -> Result<String, PgError> {
        self.parse_as(self.name, value)
    }

    /// Like [`Self::parse`], with errors naming the setting as the client
    /// wrote it (PostgreSQL's wording for booleans, numbers and enums).
    pub fn parse_as(&self, written: &str, value: &str) -> Result<String, PgError> {
        match &self.kind {
            Kind::Bool => parse_bool(value)
                .map(|on| if on { "on" } else { "off" }.to_owned())
                .ok_or_else(|| {
                    PgError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("parameter \"{written}\" requires a Boolean value"),
                    )
                }),
            Kind::Integer { min, max } => {
                let number = self.parse_quantity(written, value)?;
                let rounded = number.round();
                if rounded < *min as f64 || rounded > *max as f64 {
                    return Err(self.out_of_range(written, &format_number(rounded), min, max));
                }
                Ok((rounded as i64).to_string())
            }
            Kind::Real { min, max } => {
                let number = self.parse_quantity(written, value)?;
                if number < *min || number > *max {
                    return Err(self.out_of_range(written, &format_number(number), min, max));
                }
                Ok(format_number(number))
            }
            Kind::Enum(values) => values
                .iter()
                .find(|candidate| candidate.eq_ignore_ascii_case(value.trim()))
                .map(|found| (*found).to_owned())
                .ok_or_else(|| {
                    invalid(written, value)
                        .with_hint(format!("Available values: {}.", values.join(", ")))
                }),
            Kind::Text => Ok(value.to_owned()),
        }
    }

    /// `invalid value for parameter "x": "v"` (22023).
    pub fn invalid(&self, value: &str) -> PgError {
        invalid(self.name, value)
    }

    fn out_of_range(
        &self,
        written: &str,
        value: &str,
        min: &impl ToString,
        max: &impl ToString,
    ) -> PgError {
        let unit = match self.unit_text {
            "" => String::new(),
            unit => format!(" {unit}"),
        };
        PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!(
                "{value}{unit} is outside the valid range for parameter \"{written}\" ({} .. {})",
                min.to_string(),
                max.to_string()
            ),
        )
    }

    /// A number with an optional unit, in the setting's own unit.
    fn parse_quantity(&self, written: &str, value: &str) -> Result<f64, PgError> {
        let text = value.trim();
        // The longest prefix that is a number; the rest is its unit.
        let (number, unit) = (1..=text.len())
            .rev()
            .filter(|&end| text.is_char_boundary(end))
            .find_map(|end| {
                let number = text[..end].trim().parse::<f64>().ok()?;
                Some((number, &text[end..]))
            })
            .ok_or_else(|| invalid(written, value))?;
        if !number.is_finite() {
            return Err(invalid(written, value));
        }
        let unit = unit.trim();
        if unit.is_empty() {
            return Ok(number);
        }
        let factor = self
            .unit
            .table()
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, factor)| *factor)
            .ok_or_else(|| {
                let error = invalid(written, value);
                match self.unit.hint() {
                    Some(hint) => error.with_hint(hint),
                    None => error,
                }
            })?;
        Ok(number * factor as f64 / self.unit.base() as f64)
    }

    /// The stored value as `SHOW` prints it: numbers in the largest unit
    /// that divides them exactly (`128MB`, `5s`, `1500us`).
    pub fn display(&self, stored: &str) -> String {
        if self.unit == Unit::None {
            return stored.to_owned();
        }
        let Ok(number) = stored.parse::<f64>() else {
            return stored.to_owned();
        };
        if number == 0.0 || number == -1.0 {
            return format_number(number);
        }
        let smallest = number * self.unit.base() as f64;
        for (name, factor) in self.unit.table() {
            let scaled = smallest / *factor as f64;
            if scaled.fract() == 0.0 && scaled.abs() >= 1.0 {
                return format!("{}{name}", format_number(scaled));
            }
        }
        format_number(number)
    }
}

/// `invalid value for parameter "x": "v"` (22023), `x` as written.
fn invalid(name: &str, value: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"{name}\": \"{value}\""),
    )
}

/// PostgreSQL's `parse_bool`: on/off, true/false, yes/no, 1/0 and their
/// unambiguous prefixes.
pub fn parse_bool(value: &str) -> Option<bool> {
    let value = value.trim().to_lowercase();
    if value.is_empty() {
        return None;
    }
    let matches = |word: &str| word.starts_with(&value);
    match value.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        "on" => Some(true),
        "of" | "o" => None,
        _ if value.len() >= 2 && matches("off") => Some(false),
        _ if matches("true") || matches("yes") => Some(true),
        _ if matches("false") || matches("no") => Some(false),
        _ => None,
    }
}

/// A number as PostgreSQL prints a setting: integers without a fraction,
/// others with up to six significant digits (`%g`).
fn format_number(number: f64) -> String {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        format!("{}", number as i64)
    } else {
        let text = format!("{number:.6}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_has_postgres_16_settings() {
        assert!(all().len() > 350);
        assert_eq!(lookup("datestyle").unwrap().name, "DateStyle");
        assert_eq!(lookup("TIMEZONE").unwrap().name, "TimeZone");
        assert!(lookup("scram_iterations").is_some());
        assert!(lookup("force_parallel_mode").is_none());
        assert_eq!(lookup("statement_timeout").unwrap().context, Context::User);
    }

    #[test]
    fn values_parse_and_show_with_units() {
        let timeout = lookup("statement_timeout").unwrap();
        assert_eq!(timeout.parse("5s").unwrap(), "5000");
        assert_eq!(timeout.display("5000"), "5s");
        assert_eq!(timeout.parse("1.5").unwrap(), "2");
        assert_eq!(timeout.display("0"), "0");
        assert_eq!(timeout.parse("90min").unwrap(), "5400000");
        assert_eq!(timeout.display("5400000"), "90min");
        let error = timeout.parse("abc").unwrap_err();
        assert_eq!(error.code, "22023");
        assert_eq!(
            error.message,
            "invalid value for parameter \"statement_timeout\": \"abc\""
        );
        let error = timeout.parse("-1").unwrap_err();
        assert_eq!(
            error.message,
            "-1 ms is outside the valid range for parameter \"statement_timeout\" (0 .. 2147483647)"
        );
        assert!(timeout.parse("5 parsecs").unwrap_err().hint.is_some());
        let work_mem = lookup("work_mem").unwrap();
        assert_eq!(work_mem.parse("64MB").unwrap(), "65536");
        assert_eq!(work_mem.display("65536"), "64MB");
        assert_eq!(lookup("shared_buffers").unwrap().display("16384"), "128MB");
        let delay = lookup("vacuum_cost_delay").unwrap();
        assert_eq!(delay.display(&delay.parse("1.5ms").unwrap()), "1500us");
    }

    #[test]
    fn booleans_and_enums_follow_postgres() {
        let seqscan = lookup("enable_seqscan").unwrap();
        for (text, stored) in [("yes", "off"), ("TRUE", "on"), ("0", "off"), ("of", "")] {
            let parsed = seqscan.parse(text);
            if stored.is_empty() {
                assert_eq!(
                    parsed.unwrap_err().message,
                    "parameter \"enable_seqscan\" requires a Boolean value"
                );
            } else if text == "yes" {
                assert_eq!(parsed.unwrap(), "on");
            } else {
                assert_eq!(parsed.unwrap(), stored);
            }
        }
        let style = lookup("intervalstyle").unwrap();
        assert_eq!(style.parse("ISO_8601").unwrap(), "iso_8601");
        let error = style.parse("foo").unwrap_err();
        assert_eq!(
            error.hint.as_deref(),
            Some("Available values: postgres, postgres_verbose, sql_standard, iso_8601.")
        );
    }
}
