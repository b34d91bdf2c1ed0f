//! PostgreSQL's regular-expression functions that DataFusion lacks:
//!
//! * `regexp_matches(text, pattern [, flags])`, a set of `text[]`: planned
//!   (see `compat`) as the `unnest()` of `pgaccel_regexp_matches(...)`, the
//!   list of every match's captures (or its whole text, for a pattern
//!   without groups); the first match only, unless the flags have `g`.
//! * `regexp_substr(text, pattern [, start [, n [, flags [, group]]]])`:
//!   the `n`th match at or after character `start`, or its `group`th
//!   parenthesized part.
//!
//! Patterns are Rust `regex` patterns, as for DataFusion's own regular
//! expression functions, read with `.` matching a newline as PostgreSQL
//! reads them (the compatibility rewrite adds `(?s)`). The flags are
//! PostgreSQL's `i` (ignore case), `c` (respect case) and, for
//! `regexp_matches`, `g`; another letter PostgreSQL knows is refused
//! (`0A000`), and one it does not is its error (`22023`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, ListBuilder, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use regex::Regex;

use super::error::PgError;
use super::sqlstate;

pub const MATCHES: &str = "pgaccel_regexp_matches";
pub const SUBSTR: &str = "regexp_substr";

/// The functions of this module.
pub fn udfs() -> Vec<Arc<ScalarUDF>> {
    vec![
        Arc::new(ScalarUDF::new_from_impl(RegexFunction {
            substr: false,
            signature: Signature::user_defined(Volatility::Immutable),
        })),
        Arc::new(ScalarUDF::new_from_impl(RegexFunction {
            substr: true,
            signature: Signature::user_defined(Volatility::Immutable),
        })),
    ]
}

fn external(error: PgError) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct RegexFunction {
    substr: bool,
    signature: Signature,
}

impl ScalarUDFImpl for RegexFunction {
    fn name(&self) -> &str {
        if self.substr { SUBSTR } else { MATCHES }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.substr {
            DataType::Utf8
        } else {
            DataType::List(Arc::new(Field::new_list_field(
                DataType::new_list(DataType::Utf8, true),
                true,
            )))
        })
    }

    /// Texts, and for `regexp_substr` the integers `start`, `n` and
    /// `group` (arguments 3, 4 and 6) and the flags (argument 5).
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let most = if self.substr { 6 } else { 3 };
        let integer = |index: usize| self.substr && matches!(index, 2 | 3 | 5);
        let fits = (2..=most).contains(&arg_types.len())
            && arg_types.iter().enumerate().all(|(index, t)| {
                t.is_null()
                    || if integer(index) {
                        t.is_integer()
                    } else {
                        matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
                    }
            });
        if !fits {
            let name = if self.substr {
                "regexp_substr"
            } else {
                "regexp_matches"
            };
            return Err(super::json::no_such_function(name, arg_types));
        }
        Ok((0..arg_types.len())
            .map(|index| {
                if integer(index) {
                    DataType::Int64
                } else {
                    DataType::Utf8
                }
            })
            .collect())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let texts = |index: usize| -> Result<Option<ArrayRef>> {
            arrays
                .get(index)
                .map(|array| cast(array, &DataType::Utf8))
                .transpose()
                .map_err(DataFusionError::from)
        };
        let integers = |index: usize| -> Result<Option<ArrayRef>> {
            arrays
                .get(index)
                .map(|array| cast(array, &DataType::Int64))
                .transpose()
                .map_err(DataFusionError::from)
        };
        let strings = texts(0)?.expect("two arguments at least");
        let patterns = texts(1)?.expect("two arguments at least");
        let flags_at = if self.substr { 4 } else { 2 };
        let flags = texts(flags_at)?;
        let rows = strings.len();
        let strings = strings.as_string::<i32>();
        let patterns = patterns.as_string::<i32>();
        let flags = flags.as_ref().map(|flags| flags.as_string::<i32>());
        let mut compiled = Compiled::default();
        let answer: ArrayRef = if self.substr {
            let starts = integers(2)?;
            let counts = integers(3)?;
            let groups = integers(5)?;
            let value = |array: &Option<ArrayRef>, row: usize, default: i64| match array {
                None => Some(default),
                Some(array) => {
                    let array: &Int64Array = array.as_primitive();
                    array.is_valid(row).then(|| array.value(row))
                }
            };
            let mut out = StringBuilder::with_capacity(rows, 0);
            for row in 0..rows {
                let flag = match flags {
                    None => Some(""),
                    Some(flags) => flags.is_valid(row).then(|| flags.value(row)),
                };
                let (Some(text), Some(pattern), Some(flag), Some(start), Some(n), Some(group)) = (
                    strings.is_valid(row).then(|| strings.value(row)),
                    patterns.is_valid(row).then(|| patterns.value(row)),
                    flag,
                    value(&starts, row, 1),
                    value(&counts, row, 1),
                    value(&groups, row, 0),
                ) else {
                    out.append_null();
                    continue;
                };
                let (regex, _) = compiled.get(pattern, flag, false)?;
                out.append_option(substr(regex, text, start, n, group).map_err(external)?);
            }
            Arc::new(out.finish())
        } else {
            let mut out = ListBuilder::new(ListBuilder::new(StringBuilder::new()));
            for row in 0..rows {
                let flag = match flags {
                    None => Some(""),
                    Some(flags) => flags.is_valid(row).then(|| flags.value(row)),
                };
                let (Some(text), Some(pattern), Some(flag)) = (
                    strings.is_valid(row).then(|| strings.value(row)),
                    patterns.is_valid(row).then(|| patterns.value(row)),
                    flag,
                ) else {
                    out.append(false);
                    continue;
                };
                let (regex, global) = compiled.get(pattern, flag, true)?;
                for captures in regex.captures_iter(text) {
                    let parts = out.values();
                    if captures.len() == 1 {
                        parts
                            .values()
                            .append_option(captures.get(0).map(|m| m.as_str()));
                    } else {
                        for group in captures.iter().skip(1) {
                            parts.values().append_option(group.map(|m| m.as_str()));
                        }
                    }
                    parts.append(true);
                    if !global {
                        break;
                    }
                }
                out.append(true);
            }
            Arc::new(out.finish())
        };
        super::functions::columnar(answer, scalar)
    }
}

/// The last pattern compiled, kept while the rows repeat it (a constant
/// pattern is compiled once a batch).
#[derive(Default)]
struct Compiled {
    key: Option<(String, String)>,
    regex: Option<(Regex, bool)>,
}

impl Compiled {
    /// The regex for `pattern` under `flags`, and whether the flags ask for
    /// every match (`g`, where `global_allowed`).
    fn get(&mut self, pattern: &str, flags: &str, global_allowed: bool) -> Result<(&Regex, bool)> {
        let key = (pattern.to_owned(), flags.to_owned());
        if self.key.as_ref() != Some(&key) {
            let mut ignore_case = false;
            let mut global = false;
            for flag in flags.chars() {
                match flag {
                    'i' => ignore_case = true,
                    'c' => ignore_case = false,
                    'g' if global_allowed => global = true,
                    'g' => {
                        return Err(external(PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            "regexp_substr() does not support the \"global\" option",
                        )));
                    }
                    'b' | 'e' | 'm' | 'n' | 'p' | 'q' | 's' | 't' | 'w' | 'x' => {
                        return Err(external(PgError::new(
                            sqlstate::FEATURE_NOT_SUPPORTED,
                            format!("the regular expression option \"{flag}\" is not supported"),
                        )));
                    }
                    other => {
                        return Err(external(PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            format!("invalid regular expression option: \"{other}\""),
                        )));
                    }
                }
            }
            let regex = regex::RegexBuilder::new(pattern)
                .case_insensitive(ignore_case)
                .build()
                .map_err(|error| {
                    external(PgError::new(
                        sqlstate::INVALID_REGULAR_EXPRESSION,
                        format!(
                            "invalid regular expression: {}",
                            error.to_string().lines().last().unwrap_or_default().trim()
                        ),
                    ))
                })?;
            self.regex = Some((regex, global));
            self.key = Some(key);
        }
        let (regex, global) = self.regex.as_ref().expect("compiled above");
        Ok((regex, *global))
    }
}

/// `regexp_substr`'s answer for one row: the `n`th match at or after
/// character `start` (from 1), or its `group`th part (0: the whole match).
fn substr<'t>(
    regex: &Regex,
    text: &'t str,
    start: i64,
    n: i64,
    group: i64,
) -> Result<Option<&'t str>, PgError> {
    let invalid = |name: &str, value: i64| {
        PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": {value}"),
        )
    };
    if start < 1 {
        return Err(invalid("start", start));
    }
    if n < 1 {
        return Err(invalid("n", n));
    }
    if group < 0 {
        return Err(invalid("subexpr", group));
    }
    let Some(from) = text
        .char_indices()
        .map(|(at, _)| at)
        .chain(std::iter::once(text.len()))
        .nth(usize::try_from(start - 1).unwrap_or(usize::MAX))
    else {
        return Ok(None);
    };
    let Some(captures) = regex
        .captures_iter(&text[from..])
        .nth(usize::try_from(n - 1).unwrap_or(usize::MAX))
    else {
        return Ok(None);
    };
    let group = usize::try_from(group).unwrap_or(usize::MAX);
    Ok(captures
        .get(group)
        .map(|m| &text[from + m.start()..from + m.end()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substr_counts_characters_and_matches() {
        let digits = Regex::new(r"\d+").unwrap();
        assert_eq!(
            substr(&digits, "abc123def456", 1, 2, 0).unwrap(),
            Some("456")
        );
        assert_eq!(substr(&digits, "é1é22", 3, 1, 0).unwrap(), Some("22"));
        assert_eq!(substr(&digits, "abc", 1, 1, 0).unwrap(), None);
        assert_eq!(substr(&digits, "a1", 9, 1, 0).unwrap(), None);
        let pairs = Regex::new(r"([a-z])(\d)").unwrap();
        assert_eq!(substr(&pairs, "abc123", 1, 1, 2).unwrap(), Some("1"));
        assert_eq!(substr(&pairs, "abc123", 1, 1, 3).unwrap(), None);
        assert_eq!(
            substr(&digits, "a1", 0, 1, 0).unwrap_err().code,
            sqlstate::INVALID_PARAMETER_VALUE
        );
    }
}
