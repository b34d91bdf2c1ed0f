//! Values of a query the source answered (`query::forward`) arrive as
//! PostgreSQL's text. A client that asks for a column in binary gets the
//! binary form of the same value, for the types written here; for any
//! other type it is told to ask for text (0A000), never sent a guess.

use bytes::{BufMut, BytesMut};
use chrono::{NaiveDate, NaiveDateTime};
use pgwire::api::Type;
use postgres_types::Kind;

use super::numeric;
use crate::query::{PgError, sqlstate};

/// The day number of 2000-01-01, PostgreSQL's epoch, counting 0001-01-01
/// as day 1 (chrono's `num_days_from_ce`).
const EPOCH_DAYS_FROM_CE: i64 = 730_120;

/// The binary form of `text`, a value of `pg_type` as PostgreSQL printed it
/// (under `DateStyle` ISO for dates and timestamps).
pub fn binary(pg_type: &Type, text: &str) -> Result<BytesMut, PgError> {
    let invalid = || {
        PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!(
                "binary output of type {} is not supported for a query answered by the source; request text format",
                pg_type.name()
            ),
        )
    };
    if let Kind::Array(element) = pg_type.kind() {
        return array(element, text)?.ok_or_else(invalid);
    }
    let mut out = BytesMut::new();
    match *pg_type {
        Type::BOOL => out.put_u8(u8::from(text == "t" || text == "true")),
        Type::INT2 => out.put_i16(text.parse().map_err(|_| invalid())?),
        Type::INT4 => out.put_i32(text.parse().map_err(|_| invalid())?),
        Type::INT8 => out.put_i64(text.parse().map_err(|_| invalid())?),
        Type::OID => out.put_u32(text.parse().map_err(|_| invalid())?),
        Type::FLOAT4 => out.put_f32(float(text).ok_or_else(invalid)? as f32),
        Type::FLOAT8 => out.put_f64(float(text).ok_or_else(invalid)?),
        Type::NUMERIC => numeric::binary_text(text, &mut out),
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML
        | Type::CHAR => out.put_slice(text.as_bytes()),
        Type::JSONB => {
            out.put_u8(1);
            out.put_slice(text.as_bytes());
        }
        Type::UUID => {
            let uuid = uuid::Uuid::parse_str(text).map_err(|_| invalid())?;
            out.put_slice(uuid.as_bytes());
        }
        Type::BYTEA => {
            let hex = text.strip_prefix("\\x").ok_or_else(invalid)?;
            out.put_slice(&decode_hex(hex).ok_or_else(invalid)?);
        }
        Type::DATE => out.put_i32(date_days(text).ok_or_else(invalid)?),
        Type::TIMESTAMP => out.put_i64(timestamp_micros(text, false).ok_or_else(invalid)?),
        Type::TIMESTAMPTZ => out.put_i64(timestamp_micros(text, true).ok_or_else(invalid)?),
        _ => return Err(invalid()),
    }
    Ok(out)
}

/// The elements of a one-dimensional array as PostgreSQL prints it
/// (`{a,"b c",NULL}`), `None` for any other shape (several dimensions,
/// explicit bounds).
fn array_elements(text: &str) -> Option<Vec<Option<String>>> {
    let inner = text.strip_prefix('{')?.strip_suffix('}')?;
    let mut elements = Vec::new();
    if inner.is_empty() {
        return Some(elements);
    }
    let mut chars = inner.chars().peekable();
    loop {
        let element = if chars.peek() == Some(&'"') {
            chars.next();
            let mut value = String::new();
            loop {
                match chars.next()? {
                    '\\' => value.push(chars.next()?),
                    '"' => break,
                    c => value.push(c),
                }
            }
            Some(value)
        } else {
            let mut value = String::new();
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' || c == '"' {
                    return None;
                }
                value.push(c);
                chars.next();
            }
            (!value.eq_ignore_ascii_case("NULL")).then_some(value)
        };
        elements.push(element);
        match chars.next() {
            None => return Some(elements),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

/// The binary form of a one-dimensional array of a type written here:
/// dimensions, NULL flag, element type, then each element's binary form.
fn array(element: &Type, text: &str) -> Result<Option<BytesMut>, PgError> {
    let Some(elements) = array_elements(text) else {
        return Ok(None);
    };
    let mut out = BytesMut::new();
    out.put_i32(i32::from(!elements.is_empty()));
    out.put_i32(i32::from(elements.iter().any(Option::is_none)));
    out.put_u32(element.oid());
    if !elements.is_empty() {
        out.put_i32(i32::try_from(elements.len()).unwrap_or(i32::MAX));
        out.put_i32(1);
    }
    for value in &elements {
        match value {
            None => out.put_i32(-1),
            Some(value) => {
                let bytes = binary(element, value)?;
                out.put_i32(i32::try_from(bytes.len()).unwrap_or(i32::MAX));
                out.put_slice(&bytes);
            }
        }
    }
    Ok(Some(out))
}

/// A float as PostgreSQL prints it, `NaN` and `±Infinity` included.
fn float(text: &str) -> Option<f64> {
    match text {
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse().ok(),
    }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect()
}

/// Splits off PostgreSQL's ` BC` suffix: the year is 1 - written.
fn era(text: &str) -> (&str, bool) {
    match text.strip_suffix(" BC") {
        Some(rest) => (rest, true),
        None => (text, false),
    }
}

fn parse_date(text: &str, bc: bool) -> Option<NaiveDate> {
    let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    if bc {
        chrono::Datelike::with_year(&date, 1 - chrono::Datelike::year(&date))
    } else {
        Some(date)
    }
}

/// Days since 2000-01-01; `±infinity` as PostgreSQL sends them.
fn date_days(text: &str) -> Option<i32> {
    match text {
        "infinity" => return Some(i32::MAX),
        "-infinity" => return Some(i32::MIN),
        _ => {}
    }
    let (text, bc) = era(text);
    let date = parse_date(text, bc)?;
    i32::try_from(i64::from(chrono::Datelike::num_days_from_ce(&date)) - EPOCH_DAYS_FROM_CE).ok()
}

/// Microseconds since 2000-01-01 00:00 (UTC for timestamptz, whose text
/// ends with the offset it was printed in: `+09`, `-03:30`, `+05:53:28`).
fn timestamp_micros(text: &str, zoned: bool) -> Option<i64> {
    match text {
        "infinity" => return Some(i64::MAX),
        "-infinity" => return Some(i64::MIN),
        _ => {}
    }
    let (text, bc) = era(text);
    let (local, offset_seconds) = if zoned {
        let split = text.rfind(['+', '-']).filter(|at| *at > 10)?;
        let (local, zone) = text.split_at(split);
        let sign = if zone.starts_with('-') { -1 } else { 1 };
        let mut seconds = 0i64;
        for (part, unit) in zone[1..].split(':').zip([3600, 60, 1]) {
            seconds += part.parse::<i64>().ok()? * unit;
        }
        (local, sign * seconds)
    } else {
        (text, 0)
    };
    let (date, time) = local.split_once(' ')?;
    let date = parse_date(date, bc)?;
    let time = chrono::NaiveTime::parse_from_str(time, "%H:%M:%S%.f").ok()?;
    let epoch = NaiveDate::from_ymd_opt(2000, 1, 1)?.and_hms_opt(0, 0, 0)?;
    let micros = (NaiveDateTime::new(date, time) - epoch).num_microseconds()?;
    micros.checked_sub(offset_seconds * 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_of_one_dimension_in_binary() {
        assert_eq!(
            array_elements(r#"{a,"b c",NULL,"NULL","q\"x"}"#),
            Some(vec![
                Some("a".to_owned()),
                Some("b c".to_owned()),
                None,
                Some("NULL".to_owned()),
                Some("q\"x".to_owned()),
            ])
        );
        assert_eq!(array_elements("{}"), Some(vec![]));
        assert_eq!(array_elements("{{1,2},{3,4}}"), None);
        let bytes = array(&Type::INT4, "{7,NULL}").unwrap().unwrap();
        let expected: &[u8] = &[
            0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 7,
            255, 255, 255, 255,
        ];
        assert_eq!(&bytes[..], expected);
    }

    #[test]
    fn timestamps_and_dates_as_postgresql_sends_them() {
        assert_eq!(date_days("2000-01-02"), Some(1));
        assert_eq!(date_days("0001-01-01 BC"), Some(-730_485));
        assert_eq!(
            timestamp_micros("2000-01-01 00:00:01.5", false),
            Some(1_500_000)
        );
        assert_eq!(timestamp_micros("2000-01-01 09:00:00+09", true), Some(0));
        assert_eq!(timestamp_micros("1999-12-31 20:30:00-03:30", true), Some(0));
        assert_eq!(timestamp_micros("infinity", true), Some(i64::MAX));
    }

    #[test]
    fn other_types_ask_for_text() {
        let error = binary(&Type::INTERVAL, "1 day").unwrap_err();
        assert_eq!(error.code, sqlstate::FEATURE_NOT_SUPPORTED);
        assert!(error.message.contains("interval"), "{}", error.message);
    }
}
