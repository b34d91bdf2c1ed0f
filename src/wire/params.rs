//! Bind parameters, text or binary, into DataFusion values.
//!
//! A parameter is read as the type the client declared in Parse (or, when
//! it declared none, the type pgaccel inferred and reported), then cast to
//! the type the plan expects. Binary values follow PostgreSQL's send/recv
//! formats (postgres-protocol decodes the fiddly ones); text values follow
//! its input syntax, with bytea's `\x` hex and escape forms and array
//! literals (`{1,2,3}`) read here, since a plain cast would take them as
//! characters.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{Duration, NaiveDate, NaiveDateTime, NaiveTime};
use datafusion::arrow::datatypes::{DataType, Field, IntervalMonthDayNano, TimeUnit};
use datafusion::common::ScalarValue;
use pgwire::api::Type;
use postgres_protocol::types as pg;

use crate::query::{PgError, sqlstate, text};

/// Microseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;
/// Days from 1970-01-01 to 2000-01-01.
const EPOCH_OFFSET_DAYS: i32 = 10_957;

/// One parameter's value, read as `pg_type` and cast to `target`.
pub fn decode(
    value: Option<&Bytes>,
    binary: bool,
    pg_type: &Type,
    target: Option<&DataType>,
) -> Result<ScalarValue, PgError> {
    let natural = match value {
        None => ScalarValue::Null,
        Some(bytes) if binary => binary_value(bytes, pg_type)?,
        Some(bytes) => text_value(bytes, pg_type, target)?,
    };
    let Some(target) = target else {
        return Ok(natural);
    };
    if natural.data_type() == *target {
        return Ok(natural);
    }
    if natural.is_null() {
        return ScalarValue::try_from(target).map_err(|e| invalid(pg_type, &e.to_string()));
    }
    natural
        .cast_to(target)
        .map_err(|e| invalid(pg_type, &e.to_string()))
}

/// `sql` with some `$n` cast to the type the client declared for it, as
/// PostgreSQL types a parameter by its declaration: a date or timestamp the
/// engine inferred as another type than a date, timestamp or text (a value
/// of the declared type could not be cast to it: `$1 - interval '1 day'`
/// reads as an interval), and a boolean, integer, float, date or timestamp
/// the engine has no type for (`SELECT $1`, which would be text). `None`
/// when there is none.
pub fn with_declared_types(
    sql: &str,
    declared: &[Option<Type>],
    inferred: &[Option<DataType>],
) -> Option<String> {
    let cast = |position: usize| -> Option<&'static str> {
        let declared = declared.get(position)?.as_ref()?;
        let temporal = [Type::TIMESTAMPTZ, Type::TIMESTAMP, Type::DATE].contains(declared);
        let name = match declared {
            t if *t == Type::TIMESTAMPTZ => "timestamptz",
            t if *t == Type::TIMESTAMP => "timestamp",
            t if *t == Type::DATE => "date",
            t if *t == Type::BOOL => "boolean",
            t if *t == Type::INT2 => "smallint",
            t if *t == Type::INT4 => "integer",
            t if *t == Type::INT8 => "bigint",
            t if *t == Type::FLOAT4 => "real",
            t if *t == Type::FLOAT8 => "double precision",
            _ => return None,
        };
        let cast = match inferred.get(position).cloned().flatten() {
            None => true,
            Some(data_type) => {
                temporal
                    && !matches!(
                        data_type,
                        DataType::Timestamp(..)
                            | DataType::Date32
                            | DataType::Date64
                            | DataType::Utf8
                            | DataType::Utf8View
                            | DataType::LargeUtf8
                    )
            }
        };
        cast.then_some(name)
    };
    if !(0..declared.len()).any(|position| cast(position).is_some()) {
        return None;
    }
    rewrite_placeholders(sql, |position| {
        cast(position).map(|name| format!("${}::{name}", position + 1))
    })
}

/// `sql` with `$n` written as the literal `literals` has for its position
/// (0-based). `None` when the text does not tokenize.
pub fn with_literals(sql: &str, literals: &HashMap<usize, String>) -> Option<String> {
    rewrite_placeholders(sql, |position| literals.get(&position).cloned())
}

/// A `numeric` parameter's value as a literal pgaccel reads back as a
/// numeric with the same digits and scale (`(1.50::numeric)`: a bare `10`
/// would be an integer); `None` for any other value.
pub fn numeric_literal(value: &ScalarValue) -> Option<String> {
    match value {
        ScalarValue::Decimal128(Some(_), _, _) => Some(format!("({value}::numeric)")),
        _ => None,
    }
}

/// Whether Bind sent parameter `index` in binary, by its format codes (none:
/// all text; one: all in that format; else one each).
pub fn is_binary(formats: &[i16], index: usize) -> bool {
    match formats {
        [] => false,
        [one] => *one == 1,
        many => many.get(index) == Some(&1),
    }
}

/// `sql` with each `$n` for which `write` has text (by 0-based position)
/// replaced by that text; every other character stays as the client wrote
/// it. The tokenizer tells placeholders from `$1` inside strings, comments
/// and dollar quotes; the text is spliced at their positions, since the
/// tokens printed back would lose how strings were escaped (`'O''Brien'`,
/// `E'\n'`).
fn rewrite_placeholders(sql: &str, write: impl Fn(usize) -> Option<String>) -> Option<String> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize_with_location()
        .ok()?;
    // The byte offset of a line and column (both from 1, columns in
    // characters, as the tokenizer counts them).
    let offset = |location: Location| -> Option<usize> {
        let line = usize::try_from(location.line).ok()?.checked_sub(1)?;
        let line_start: usize = sql.split_inclusive('\n').take(line).map(str::len).sum();
        let rest = sql.get(line_start..)?;
        let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
        Some(
            line_start
                + rest
                    .char_indices()
                    .nth(column)
                    .map_or(rest.len(), |(i, _)| i),
        )
    };
    let mut rewritten = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    for token in tokens {
        let Token::Placeholder(placeholder) = &token.token else {
            continue;
        };
        let Some(text) = placeholder
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| write(n.checked_sub(1)?))
        else {
            continue;
        };
        let (start, end) = (offset(token.span.start)?, offset(token.span.end)?);
        rewritten.push_str(sql.get(copied..start)?);
        rewritten.push_str(&text);
        copied = end;
    }
    rewritten.push_str(sql.get(copied..)?);
    Some(rewritten)
}

fn invalid(pg_type: &Type, detail: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!(
            "invalid input for a parameter of type {}: {detail}",
            pg_type.name()
        ),
    )
}

fn binary_value(bytes: &[u8], pg_type: &Type) -> Result<ScalarValue, PgError> {
    let fail = |e: Box<dyn std::error::Error + Sync + Send>| invalid(pg_type, &e.to_string());
    let fixed = |n: usize| -> Result<&[u8], PgError> {
        (bytes.len() == n)
            .then_some(bytes)
            .ok_or_else(|| invalid(pg_type, &format!("expected {n} bytes, got {}", bytes.len())))
    };
    Ok(match *pg_type {
        Type::BOOL => ScalarValue::Boolean(Some(pg::bool_from_sql(bytes).map_err(fail)?)),
        Type::INT2 => {
            ScalarValue::Int16(Some(i16::from_be_bytes(fixed(2)?.try_into().expect("2"))))
        }
        Type::INT4 => {
            ScalarValue::Int32(Some(i32::from_be_bytes(fixed(4)?.try_into().expect("4"))))
        }
        Type::INT8 => {
            ScalarValue::Int64(Some(i64::from_be_bytes(fixed(8)?.try_into().expect("8"))))
        }
        Type::OID => ScalarValue::UInt32(Some(pg::oid_from_sql(bytes).map_err(fail)?)),
        Type::FLOAT4 => {
            ScalarValue::Float32(Some(f32::from_be_bytes(fixed(4)?.try_into().expect("4"))))
        }
        Type::FLOAT8 => {
            ScalarValue::Float64(Some(f64::from_be_bytes(fixed(8)?.try_into().expect("8"))))
        }
        Type::NUMERIC => numeric(bytes).ok_or_else(|| invalid(pg_type, "malformed numeric"))?,
        Type::BYTEA => ScalarValue::Binary(Some(bytes.to_vec())),
        Type::UUID => ScalarValue::Utf8(Some(
            uuid::Uuid::from_bytes(pg::uuid_from_sql(bytes).map_err(fail)?).to_string(),
        )),
        Type::JSONB => match bytes.split_first() {
            Some((1, json)) => ScalarValue::Utf8(Some(utf8(json, pg_type)?)),
            _ => return Err(invalid(pg_type, "unsupported jsonb version")),
        },
        Type::DATE => ScalarValue::Date32(Some(match pg::date_from_sql(bytes).map_err(fail)? {
            // `infinity` and `-infinity` are kept as themselves.
            days @ (text::DATE_INFINITY | text::DATE_NEG_INFINITY) => days,
            days => days + EPOCH_OFFSET_DAYS,
        })),
        Type::TIME => ScalarValue::Time64Microsecond(Some(pg::time_from_sql(bytes).map_err(fail)?)),
        Type::TIMESTAMP => ScalarValue::TimestampMicrosecond(
            Some(pg::timestamp_from_sql(bytes).map_err(fail)? + EPOCH_OFFSET_MICROS),
            None,
        ),
        Type::TIMESTAMPTZ => ScalarValue::TimestampMicrosecond(
            Some(pg::timestamp_from_sql(bytes).map_err(fail)? + EPOCH_OFFSET_MICROS),
            Some("UTC".into()),
        ),
        Type::INTERVAL => {
            let raw = fixed(16)?;
            let micros = i64::from_be_bytes(raw[..8].try_into().expect("8"));
            let days = i32::from_be_bytes(raw[8..12].try_into().expect("4"));
            let months = i32::from_be_bytes(raw[12..].try_into().expect("4"));
            ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
                months,
                days,
                micros * 1000,
            )))
        }
        Type::INET | Type::CIDR => {
            let inet = pg::inet_from_sql(bytes).map_err(fail)?;
            let full = if inet.addr().is_ipv4() { 32 } else { 128 };
            let text = if inet.netmask() == full && *pg_type == Type::INET {
                inet.addr().to_string()
            } else {
                format!("{}/{}", inet.addr(), inet.netmask())
            };
            ScalarValue::Utf8(Some(text))
        }
        // Kept as the text PostgreSQL prints (see `source::postgres`).
        Type::MACADDR | Type::MACADDR8 => ScalarValue::Utf8(Some(
            bytes
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect::<Vec<_>>()
                .join(":"),
        )),
        Type::TIMETZ => {
            let raw = fixed(12)?;
            let micros = i64::from_be_bytes(raw[..8].try_into().expect("8"));
            // Seconds west of UTC, as PostgreSQL keeps the zone.
            let west = i32::from_be_bytes(raw[8..].try_into().expect("4"));
            ScalarValue::Utf8(Some(timetz_text(micros, west)))
        }
        ref array if element_type(array).is_some() => binary_array(bytes, pg_type)?,
        _ => ScalarValue::Utf8(Some(utf8(bytes, pg_type)?)),
    })
}

/// A `timetz` as PostgreSQL prints it: `12:34:56.5+02`, `01:02:03-09:30`.
fn timetz_text(micros: i64, west: i32) -> String {
    let (seconds, fraction) = (micros / 1_000_000, micros % 1_000_000);
    let mut text = format!(
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if fraction != 0 {
        text.push_str(format!(".{fraction:06}").trim_end_matches('0'));
    }
    let east = -west;
    let (sign, offset) = if east < 0 { ('-', -east) } else { ('+', east) };
    text.push_str(&format!("{sign}{:02}", offset / 3600));
    if offset % 3600 != 0 {
        text.push_str(&format!(":{:02}", offset / 60 % 60));
    }
    if offset % 60 != 0 {
        text.push_str(&format!(":{:02}", offset % 60));
    }
    text
}

/// pgaccel's arrays have one dimension: a parameter with more is refused
/// rather than flattened.
fn multidimensional(type_name: &str) -> PgError {
    PgError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "multidimensional arrays are not supported: a parameter of type {type_name} must have one dimension"
        ),
    )
}

fn utf8(bytes: &[u8], pg_type: &Type) -> Result<String, PgError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| {
        PgError::new(
            sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
            format!(
                "invalid byte sequence for encoding \"UTF8\" in a {} parameter",
                pg_type.name()
            ),
        )
    })
}

/// The element type of an array type pgaccel reads.
fn element_type(array: &Type) -> Option<Type> {
    Some(match *array {
        Type::BOOL_ARRAY => Type::BOOL,
        Type::INT2_ARRAY => Type::INT2,
        Type::INT4_ARRAY => Type::INT4,
        Type::INT8_ARRAY => Type::INT8,
        Type::FLOAT4_ARRAY => Type::FLOAT4,
        Type::FLOAT8_ARRAY => Type::FLOAT8,
        Type::NUMERIC_ARRAY => Type::NUMERIC,
        Type::TEXT_ARRAY => Type::TEXT,
        Type::VARCHAR_ARRAY => Type::VARCHAR,
        Type::BPCHAR_ARRAY => Type::BPCHAR,
        Type::UUID_ARRAY => Type::UUID,
        Type::DATE_ARRAY => Type::DATE,
        Type::TIMESTAMP_ARRAY => Type::TIMESTAMP,
        Type::TIMESTAMPTZ_ARRAY => Type::TIMESTAMPTZ,
        Type::BYTEA_ARRAY => Type::BYTEA,
        Type::JSONB_ARRAY => Type::JSONB,
        Type::JSON_ARRAY => Type::JSON,
        Type::OID_ARRAY => Type::OID,
        Type::NAME_ARRAY => Type::NAME,
        Type::CHAR_ARRAY => Type::CHAR,
        Type::TIME_ARRAY => Type::TIME,
        Type::INTERVAL_ARRAY => Type::INTERVAL,
        _ => return None,
    })
}

fn binary_array(bytes: &[u8], pg_type: &Type) -> Result<ScalarValue, PgError> {
    let fail = |e: Box<dyn std::error::Error + Sync + Send>| invalid(pg_type, &e.to_string());
    let element = element_type(pg_type).expect("an array type");
    let array = pg::array_from_sql(bytes).map_err(fail)?;
    let dimensions =
        fallible_iterator::FallibleIterator::count(array.dimensions()).map_err(fail)?;
    if dimensions > 1 {
        return Err(multidimensional(pg_type.name()));
    }
    let mut values = Vec::new();
    let mut items = array.values();
    while let Some(item) = fallible_iterator::FallibleIterator::next(&mut items).map_err(fail)? {
        values.push(match item {
            Some(item) => binary_value(item, &element)?,
            None => ScalarValue::Null,
        });
    }
    list(values, &element)
}

fn list(values: Vec<ScalarValue>, element: &Type) -> Result<ScalarValue, PgError> {
    let data_type = values
        .iter()
        .find(|v| !v.is_null())
        .map(ScalarValue::data_type)
        .unwrap_or(natural_type(element));
    let values = values
        .into_iter()
        .map(|v| {
            if v.is_null() {
                ScalarValue::try_from(&data_type)
            } else {
                Ok(v)
            }
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(element, &e.to_string()))?;
    Ok(ScalarValue::List(ScalarValue::new_list_nullable(
        &values, &data_type,
    )))
}

/// The value type a PostgreSQL type's values are read into.
fn natural_type(pg_type: &Type) -> DataType {
    match *pg_type {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 => DataType::Int64,
        Type::OID => DataType::UInt32,
        Type::FLOAT4 => DataType::Float32,
        Type::FLOAT8 => DataType::Float64,
        Type::BYTEA => DataType::Binary,
        Type::DATE => DataType::Date32,
        Type::TIMESTAMP => DataType::Timestamp(TimeUnit::Microsecond, None),
        Type::TIMESTAMPTZ => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Type::TIME => DataType::Time64(TimeUnit::Microsecond),
        Type::INTERVAL => {
            DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano)
        }
        _ => DataType::Utf8,
    }
}

/// A binary `numeric`: digit count, weight, sign, scale, base-10000 digits.
fn numeric(bytes: &[u8]) -> Option<ScalarValue> {
    let word = |i: usize| -> Option<i16> {
        Some(i16::from_be_bytes(bytes.get(i..i + 2)?.try_into().ok()?))
    };
    let count = usize::try_from(word(0)?).ok()?;
    let weight = i32::from(word(2)?);
    let sign = word(4)? as u16;
    let scale = usize::try_from(word(6)?).ok()?;
    match sign {
        0xC000 => return Some(ScalarValue::Float64(Some(f64::NAN))),
        0xD000 => return Some(ScalarValue::Float64(Some(f64::INFINITY))),
        0xF000 => return Some(ScalarValue::Float64(Some(f64::NEG_INFINITY))),
        _ => {}
    }
    let digits = (0..count)
        .map(|i| word(8 + 2 * i))
        .collect::<Option<Vec<i16>>>()?;
    // The integer part: groups 0..=weight; the fraction: the rest.
    let mut integer = String::new();
    for group in 0..=weight.max(-1) {
        let digit = digits.get(group as usize).copied().unwrap_or(0);
        if integer.is_empty() {
            if digit != 0 {
                integer.push_str(&digit.to_string());
            }
        } else {
            integer.push_str(&format!("{digit:04}"));
        }
    }
    if integer.is_empty() {
        integer.push('0');
    }
    let mut fraction = String::new();
    for position in (weight + 1)..(weight + 1 + scale.div_ceil(4) as i32 + 1) {
        let digit = if position < 0 {
            0
        } else {
            digits.get(position as usize).copied().unwrap_or(0)
        };
        fraction.push_str(&format!("{digit:04}"));
    }
    fraction.truncate(scale);
    let sign = if sign == 0x4000 { "-" } else { "" };
    let text = if scale > 0 {
        format!("{sign}{integer}.{fraction}")
    } else {
        format!("{sign}{integer}")
    };
    decimal_text(&text)
}

/// A numeric's text (`-12.340`) as a decimal of its own scale, as
/// PostgreSQL keeps an unconstrained numeric; `NaN` and infinities as
/// float8, which holds them.
fn decimal_text(text: &str) -> Option<ScalarValue> {
    let trimmed = text.trim();
    match trimmed.to_ascii_lowercase().as_str() {
        "nan" => return Some(ScalarValue::Float64(Some(f64::NAN))),
        "infinity" | "+infinity" => return Some(ScalarValue::Float64(Some(f64::INFINITY))),
        "-infinity" => return Some(ScalarValue::Float64(Some(f64::NEG_INFINITY))),
        _ => {}
    }
    // `1E+2`, `1.5e-3`: as PostgreSQL reads them, the scale is the
    // mantissa's decimals less the exponent (100, 0.0015).
    if let Some((mantissa, exponent)) = trimmed.split_once(['e', 'E']) {
        let mantissa = mantissa.strip_prefix('+').unwrap_or(mantissa);
        let unsigned = mantissa.strip_prefix('-').unwrap_or(mantissa);
        let (integer, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
        let power = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        let digits = |text: &str| text.bytes().all(|b| b.is_ascii_digit());
        if integer.len() + fraction.len() == 0
            || power.is_empty()
            || !(digits(integer) && digits(fraction) && digits(power))
        {
            return None;
        }
        // JSON numbers are printed as PostgreSQL prints a numeric too.
        let plain = crate::query::json::numeric_text(&format!("{mantissa}e{exponent}")).ok()?;
        return decimal_text(&plain);
    }
    let unsigned = trimmed.trim_start_matches(['-', '+']);
    let (integer, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if !(integer.chars().chain(fraction.chars())).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let integer = integer.trim_start_matches('0');
    let scale = fraction.len();
    let precision = (integer.len() + scale).clamp(1, 38) as u8;
    ScalarValue::Utf8(Some(trimmed.to_owned()))
        .cast_to(&DataType::Decimal128(
            precision.max(scale as u8),
            scale as i8,
        ))
        .ok()
}

fn text_value(
    bytes: &[u8],
    pg_type: &Type,
    target: Option<&DataType>,
) -> Result<ScalarValue, PgError> {
    let text = utf8(bytes, pg_type)?;
    // `2024-01-06 12:00`: a time without seconds, which PostgreSQL reads
    // and Arrow's timestamp parser does not.
    let timestamp = matches!(*pg_type, Type::TIMESTAMP | Type::TIMESTAMPTZ)
        || matches!(target, Some(DataType::Timestamp(..)));
    let text = match crate::query::with_seconds(&text) {
        Some(full) if timestamp => full,
        _ => text,
    };
    let wants_binary = matches!(
        target,
        Some(DataType::Binary | DataType::LargeBinary | DataType::BinaryView)
    );
    if *pg_type == Type::BYTEA || wants_binary {
        return crate::query::pg_types::bytea_input(&text)
            .map(|bytes| ScalarValue::Binary(Some(bytes)))
            .ok_or_else(|| {
                PgError::new(
                    sqlstate::INVALID_TEXT_REPRESENTATION,
                    "invalid input syntax for type bytea",
                )
            });
    }
    if *pg_type == Type::UUID {
        // Kept as its canonical text; clients may send `a0eebc99...` bare.
        return crate::query::pg_types::canonical_uuid(&text)
            .map(|text| ScalarValue::Utf8(Some(text)))
            .map_err(|_| {
                PgError::new(
                    sqlstate::INVALID_TEXT_REPRESENTATION,
                    format!("invalid input syntax for type uuid: \"{text}\""),
                )
            });
    }
    if *pg_type == Type::INTERVAL || matches!(target, Some(DataType::Interval(_))) {
        return crate::query::interval::parse_interval(&text)
            .map(|value| ScalarValue::IntervalMonthDayNano(Some(value)))
            .map_err(|e| PgError::new(e.sqlstate(), e.to_string()));
    }
    if let Some(element) = element_type(pg_type) {
        return text_array(&text, &element);
    }
    if let Some(DataType::List(field)) = target {
        return text_array(&text, &pg_type_of(field.data_type()));
    }
    Ok(match *pg_type {
        Type::NUMERIC if target.is_none() => {
            decimal_text(&text).ok_or_else(|| sqlstate::numeric_input_error(&text))?
        }
        Type::DATE if text.trim().eq_ignore_ascii_case("infinity") => {
            ScalarValue::Date32(Some(text::DATE_INFINITY))
        }
        Type::DATE if text.trim().eq_ignore_ascii_case("-infinity") => {
            ScalarValue::Date32(Some(text::DATE_NEG_INFINITY))
        }
        Type::DATE => NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
            .map(|date| ScalarValue::Date32(Some(days(date))))
            .unwrap_or(ScalarValue::Utf8(Some(text))),
        Type::TIME => NaiveTime::parse_from_str(text.trim(), "%H:%M:%S%.f")
            .map(|time| ScalarValue::Time64Microsecond(Some(micros_of_day(time))))
            .unwrap_or(ScalarValue::Utf8(Some(text))),
        Type::TIMESTAMP => NaiveDateTime::parse_from_str(text.trim(), "%Y-%m-%d %H:%M:%S%.f")
            .map(|at| {
                ScalarValue::TimestampMicrosecond(Some(at.and_utc().timestamp_micros()), None)
            })
            .unwrap_or(ScalarValue::Utf8(Some(text))),
        _ => ScalarValue::Utf8(Some(text)),
    })
}

fn days(date: NaiveDate) -> i32 {
    (date - NaiveDate::from_ymd_opt(1970, 1, 1).expect("a date")).num_days() as i32
}

fn micros_of_day(time: NaiveTime) -> i64 {
    (time - NaiveTime::MIN).num_microseconds().unwrap_or(0)
}

/// The PostgreSQL type for values of an Arrow type.
fn pg_type_of(data_type: &DataType) -> Type {
    arrow_pg::datatypes::into_pg_type(data_type).unwrap_or(Type::TEXT)
}

/// A one-dimensional array literal: `{1,2,NULL}`, `{"a b","c"}`.
fn text_array(text: &str, element: &Type) -> Result<ScalarValue, PgError> {
    let malformed = || {
        PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("malformed array literal: \"{text}\""),
        )
    };
    let inner = text
        .trim()
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .ok_or_else(malformed)?;
    let mut items: Vec<Option<String>> = Vec::new();
    let mut chars = inner.chars().peekable();
    while chars.peek().is_some() {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut item = String::new();
        let mut quoted = false;
        if chars.peek() == Some(&'"') {
            quoted = true;
            chars.next();
            loop {
                match chars.next().ok_or_else(malformed)? {
                    '\\' => item.push(chars.next().ok_or_else(malformed)?),
                    '"' => break,
                    c => item.push(c),
                }
            }
        } else if chars.peek() == Some(&'{') {
            return Err(multidimensional(&format!("{}[]", element.name())));
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                item.push(c);
                chars.next();
            }
            item = item.trim().to_owned();
        }
        items.push((quoted || !item.eq_ignore_ascii_case("null")).then_some(item));
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            Some(',') | None => {}
            Some(_) => return Err(malformed()),
        }
    }
    let natural = natural_type(element);
    let values = items
        .into_iter()
        .map(|item| match item {
            None => Ok(ScalarValue::Null),
            Some(item) => text_value(item.as_bytes(), element, Some(&natural)).and_then(|v| {
                v.cast_to(&natural)
                    .map_err(|e| invalid(element, &e.to_string()))
            }),
        })
        .collect::<Result<Vec<_>, _>>()?;
    list(values, element)
}

/// The parameter types a statement reports: what the client declared, else
/// what was inferred, else `text` (never "unknown", which drivers reject).
pub fn reported_types(
    declared: &[Option<Type>],
    casts: &[Option<String>],
    inferred: &[Option<DataType>],
) -> Vec<Type> {
    let count = declared.len().max(inferred.len());
    (0..count)
        .map(|i| {
            declared
                .get(i)
                .cloned()
                .flatten()
                .or_else(|| casts.get(i).cloned().flatten().and_then(|t| cast_type(&t)))
                .or_else(|| inferred.get(i).cloned().flatten().map(|t| pg_type_of(&t)))
                .unwrap_or(Type::TEXT)
        })
        .collect()
}

/// The PostgreSQL types a cast names (`$1::oid[]`) that pgaccel computes in
/// an Arrow type of another PostgreSQL type (oid in int4, name in text).
fn cast_type(name: &str) -> Option<Type> {
    let name = name.trim_start_matches("pg_catalog.");
    Some(match name {
        "oid" => Type::OID,
        "oid[]" => Type::OID_ARRAY,
        "name" => Type::NAME,
        "name[]" => Type::NAME_ARRAY,
        "regclass" => Type::REGCLASS,
        "regtype" => Type::REGTYPE,
        "regproc" => Type::REGPROC,
        "\"char\"" => Type::CHAR,
        "uuid" => Type::UUID,
        "uuid[]" => Type::UUID_ARRAY,
        "json" => Type::JSON,
        "jsonb" => Type::JSONB,
        "xid" => Type::XID,
        "bytea" => Type::BYTEA,
        "interval" => Type::INTERVAL,
        "numeric" | "decimal" => Type::NUMERIC,
        _ => return None,
    })
}

#[allow(dead_code)]
fn field(data_type: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", data_type, true))
}

#[allow(dead_code)]
fn duration_micros(duration: Duration) -> i64 {
    duration.num_microseconds().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binary(pg_type: Type, bytes: &[u8], target: Option<DataType>) -> ScalarValue {
        decode(
            Some(&Bytes::copy_from_slice(bytes)),
            true,
            &pg_type,
            target.as_ref(),
        )
        .unwrap()
    }

    fn text(pg_type: Type, value: &str, target: Option<DataType>) -> ScalarValue {
        decode(
            Some(&Bytes::copy_from_slice(value.as_bytes())),
            false,
            &pg_type,
            target.as_ref(),
        )
        .unwrap()
    }

    #[test]
    fn infinite_dates_and_nan_numerics() {
        assert_eq!(
            binary(Type::DATE, &i32::MIN.to_be_bytes(), None),
            ScalarValue::Date32(Some(text::DATE_NEG_INFINITY))
        );
        assert_eq!(
            text(Type::DATE, "Infinity", None),
            ScalarValue::Date32(Some(text::DATE_INFINITY))
        );
        // 2000-01-01 is day 0 in PostgreSQL, day 10957 in Arrow.
        assert_eq!(
            binary(Type::DATE, &0i32.to_be_bytes(), None),
            ScalarValue::Date32(Some(10_957))
        );
        assert!(matches!(
            text(Type::NUMERIC, "NaN", None),
            ScalarValue::Float64(Some(nan)) if nan.is_nan()
        ));
    }

    #[test]
    fn timetz_and_macaddr_read_as_postgres_prints_them() {
        let mut bytes = (45_296_500_000i64).to_be_bytes().to_vec(); // 12:34:56.5
        bytes.extend_from_slice(&(-7200i32).to_be_bytes()); // 2 hours east
        assert_eq!(
            binary(Type::TIMETZ, &bytes, None),
            ScalarValue::Utf8(Some("12:34:56.5+02".into()))
        );
        assert_eq!(timetz_text(3_723_000_000, 34_200), "01:02:03-09:30");
        assert_eq!(
            binary(Type::MACADDR, &[8, 0, 0x2b, 1, 2, 3], None),
            ScalarValue::Utf8(Some("08:00:2b:01:02:03".into()))
        );
    }

    #[test]
    fn multidimensional_arrays_are_refused() {
        let refused = decode(
            Some(&Bytes::from_static(b"{{1,2},{3,4}}")),
            false,
            &Type::INT4_ARRAY,
            None,
        )
        .unwrap_err();
        assert_eq!(refused.code, sqlstate::FEATURE_NOT_SUPPORTED);
        assert!(refused.message.contains("int4[]"), "{}", refused.message);
        // Binary: 2 dimensions of 1 element each.
        let mut bytes = Vec::new();
        for word in [2i32, 0, 23, 1, 1, 1, 1, 4, 7] {
            bytes.extend_from_slice(&word.to_be_bytes());
        }
        let refused = decode(Some(&Bytes::from(bytes)), true, &Type::INT4_ARRAY, None).unwrap_err();
        assert_eq!(refused.code, sqlstate::FEATURE_NOT_SUPPORTED);
    }

    #[test]
    fn binary_uuid_becomes_its_text() {
        let id = uuid::Uuid::parse_str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
        assert_eq!(
            binary(Type::UUID, id.as_bytes(), Some(DataType::Utf8)),
            ScalarValue::Utf8(Some("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".into()))
        );
    }

    #[test]
    fn binary_numeric_keeps_its_digits() {
        // 1234567890.12: weight 2, scale 2, digits 12 3456 7890 1200.
        let mut bytes = Vec::new();
        for word in [4i16, 2, 0, 2, 12, 3456, 7890, 1200] {
            bytes.extend_from_slice(&word.to_be_bytes());
        }
        assert_eq!(
            binary(Type::NUMERIC, &bytes, Some(DataType::Decimal128(12, 2))),
            ScalarValue::Decimal128(Some(123456789012), 12, 2)
        );
        let mut small = Vec::new();
        // -0.01: one digit (100) at weight -1, scale 2, negative.
        for word in [1i16, -1, 0x4000u16 as i16, 2, 100] {
            small.extend_from_slice(&word.to_be_bytes());
        }
        assert_eq!(
            binary(Type::NUMERIC, &small, Some(DataType::Decimal128(12, 2))),
            ScalarValue::Decimal128(Some(-1), 12, 2)
        );
    }

    #[test]
    fn bytea_parameters_decode() {
        assert_eq!(
            text(Type::BYTEA, "\\x00ff", Some(DataType::Binary)),
            ScalarValue::Binary(Some(vec![0, 255]))
        );
    }

    #[test]
    fn array_literals() {
        let value = text(Type::INT4_ARRAY, "{1, 2,NULL}", None);
        let expected = ScalarValue::List(ScalarValue::new_list_nullable(
            &[
                ScalarValue::Int32(Some(1)),
                ScalarValue::Int32(Some(2)),
                ScalarValue::Int32(None),
            ],
            &DataType::Int32,
        ));
        assert_eq!(value, expected);
        let value = text(Type::TEXT_ARRAY, "{x,\"y z\"}", None);
        assert_eq!(value.to_string(), "[x, y z]");
    }

    #[test]
    fn a_timestamp_parameter_taken_for_an_interval_is_cast_to_its_declared_type() {
        let sql = "SELECT count(*) FROM t WHERE at > $1 - interval '1 day' AND n = $2 AND s = '$1'";
        let typed = with_declared_types(
            sql,
            &[Some(Type::TIMESTAMPTZ), Some(Type::INT4)],
            &[
                Some(DataType::Interval(
                    datafusion::arrow::datatypes::IntervalUnit::MonthDayNano,
                )),
                Some(DataType::Int32),
            ],
        );
        assert_eq!(
            typed.as_deref(),
            Some(
                "SELECT count(*) FROM t WHERE at > $1::timestamptz - interval '1 day' AND n = $2 AND s = '$1'"
            )
        );
        // Inferred as a timestamp already: nothing to do.
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert_eq!(
            with_declared_types(sql, &[Some(Type::TIMESTAMPTZ)], &[Some(utc)]),
            None
        );
        // A bare parameter takes its declared type; text stays untyped.
        assert_eq!(
            with_declared_types(
                "SELECT $1, $2, $3",
                &[Some(Type::INT8), Some(Type::TEXT), Some(Type::BOOL)],
                &[None, None, None]
            )
            .as_deref(),
            Some("SELECT $1::bigint, $2, $3::boolean")
        );
    }

    #[test]
    fn numeric_values_written_in_keep_their_digits_and_scale() {
        let value = |text: &str| decimal_text(text).expect("a numeric");
        assert_eq!(
            numeric_literal(&value("1.50")).as_deref(),
            Some("(1.50::numeric)")
        );
        assert_eq!(
            numeric_literal(&value("-0.010")).as_deref(),
            Some("(-0.010::numeric)")
        );
        assert_eq!(
            numeric_literal(&value("42")).as_deref(),
            Some("(42::numeric)")
        );
        assert_eq!(
            numeric_literal(&value("1E+2")).as_deref(),
            Some("(100::numeric)")
        );
        assert_eq!(
            numeric_literal(&value("-1.5e-3")).as_deref(),
            Some("(-0.0015::numeric)")
        );
        assert_eq!(
            numeric_literal(&value("2.50E1")).as_deref(),
            Some("(25.0::numeric)")
        );
        assert_eq!(numeric_literal(&ScalarValue::Float64(Some(f64::NAN))), None);
        assert_eq!(numeric_literal(&ScalarValue::Decimal128(None, 5, 2)), None);
        let literals = HashMap::from([(1, "(-0.5)".to_owned())]);
        assert_eq!(
            with_literals("SELECT $1 + $2, '$2' FROM t WHERE x > $2 -- $2", &literals).as_deref(),
            Some("SELECT $1 + (-0.5), '$2' FROM t WHERE x > (-0.5) -- $2")
        );
        // Strings come back as the client wrote them.
        let quoted = "SELECT 'O''Brien', E'a\\'b\\n', $$it's$$, \"a\"\"b\", 'ü'\n  FROM t WHERE x = $2 AND y = $2";
        assert_eq!(
            with_literals(quoted, &literals).as_deref(),
            Some(quoted.replace("$2", "(-0.5)").as_str())
        );
    }

    #[test]
    fn timestamps_in_text_without_seconds() {
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert_eq!(
            text(Type::UNKNOWN, "2000-01-01 00:01", Some(utc.clone())),
            ScalarValue::TimestampMicrosecond(Some(946_684_860_000_000), Some("UTC".into()))
        );
        assert_eq!(
            text(Type::TIMESTAMP, "2000-01-01 00:01", None),
            ScalarValue::TimestampMicrosecond(Some(946_684_860_000_000), None)
        );
    }

    #[test]
    fn timestamps_in_binary() {
        // 2000-01-01 00:00:01 is one second after PostgreSQL's epoch.
        let value = binary(Type::TIMESTAMPTZ, &1_000_000i64.to_be_bytes(), None);
        assert_eq!(
            value,
            ScalarValue::TimestampMicrosecond(Some(946_684_801_000_000), Some("UTC".into()))
        );
    }
}
