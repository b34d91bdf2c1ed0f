//! PostgreSQL's text output for the types whose text form pgwire's default
//! formatting does not match, under the session's settings: floating point
//! (shortest round-trip digits with `extra_float_digits` > 0, else `%g` with
//! 15 or 6 digits plus `extra_float_digits`; `Infinity`, `NaN`), dates and
//! timestamps in every `DateStyle`, timestamps with time zone in the
//! session's `TimeZone`, times (fractional seconds without trailing zeros)
//! and intervals in every `IntervalStyle`.
//!
//! Written by hand because no crate reproduces PostgreSQL's output rules, and
//! psql users compare results character by character.

use std::fmt::Write;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Float32Type, Float64Type};

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use crate::query::settings::datestyle::{Order, Style};
use crate::query::settings::zone::iso_offset;
use crate::query::settings::{DateStyle, IntervalStyle, Output, SessionZone};
use crate::query::{PgError, sqlstate};

/// PostgreSQL's text form of a value whose printing depends on the
/// session's settings.
///
/// `vector`: the list is an `int2vector` or `oidvector`, printed with
/// spaces.
pub fn value_text(
    array: &ArrayRef,
    row: usize,
    output: &Output,
    vector: bool,
) -> Result<Option<String>, PgError> {
    if array.is_null(row) {
        return Ok(None);
    }
    let unsupported = || {
        PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("cannot print a value of type {}", array.data_type()),
        )
    };
    let text = match array.data_type() {
        DataType::Float32 => float_with_digits(
            f64::from(array.as_primitive::<Float32Type>().value(row)),
            true,
            output.extra_float_digits,
        ),
        DataType::Float64 => float_with_digits(
            array.as_primitive::<Float64Type>().value(row),
            false,
            output.extra_float_digits,
        ),
        DataType::Timestamp(_, tz) => {
            let at = temporal::timestamp(array, row).ok_or_else(unsupported)?;
            if tz.is_some() {
                timestamptz(at, &output.zone, output.date_style)
            } else {
                timestamp_styled(at, output.date_style, None)
            }
        }
        DataType::Time32(_) | DataType::Time64(_) => {
            time(temporal::time(array, row).ok_or_else(unsupported)?)
        }
        DataType::Date32 if infinite_date(array, row).is_some() => {
            infinite_date(array, row).unwrap_or_default().to_owned()
        }
        DataType::Date32 | DataType::Date64 => date(
            temporal::date(array, row).ok_or_else(unsupported)?,
            output.date_style,
        ),
        DataType::Interval(_) => {
            let (months, days, micros) = temporal::interval(array, row).ok_or_else(unsupported)?;
            interval(months, days, micros, output.interval_style)
        }
        DataType::List(_) => {
            let values = array.as_list::<i32>().value(row);
            if !vector && prints_by_settings(values.data_type()) {
                let items = (0..values.len())
                    .map(|index| {
                        Ok(match value_text(&values, index, output, false)? {
                            Some(item) => quote_array_item(&item),
                            None => "NULL".to_owned(),
                        })
                    })
                    .collect::<Result<Vec<_>, PgError>>()?;
                format!("{{{}}}", items.join(","))
            } else {
                list(&values, vector)
            }
        }
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => {
            let bytes = temporal::bytes(array, row).ok_or_else(unsupported)?;
            if output.bytea_hex {
                let mut out = String::with_capacity(2 + bytes.len() * 2);
                out.push_str("\\x");
                for byte in bytes {
                    out.push_str(&format!("{byte:02x}"));
                }
                out
            } else {
                bytea_escape(bytes)
            }
        }
        _ => return Err(unsupported()),
    };
    Ok(Some(text))
}

/// Whether values of `data_type` print by the session's settings (and
/// PostgreSQL's own spellings, such as `Infinity`), so that an array of
/// them prints its elements through [`value_text`] too.
pub fn prints_by_settings(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Float32
            | DataType::Float64
            | DataType::Timestamp(..)
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Date32
            | DataType::Date64
            | DataType::Interval(_)
    )
}

/// The `date` PostgreSQL calls `infinity`, after every other date. Arrow
/// has no such date: pgaccel keeps it as the greatest `Date32`, which no
/// calendar date reaches, so it also compares and sorts as PostgreSQL's.
pub const DATE_INFINITY: i32 = i32::MAX;
/// `-infinity`, before every other date, kept as the least `Date32`.
pub const DATE_NEG_INFINITY: i32 = i32::MIN;

/// `infinity` or `-infinity` when the `Date32` at `row` is one of them.
pub fn infinite_date(array: &ArrayRef, row: usize) -> Option<&'static str> {
    match array
        .as_primitive_opt::<datafusion::arrow::datatypes::Date32Type>()?
        .value(row)
    {
        DATE_INFINITY => Some("infinity"),
        DATE_NEG_INFINITY => Some("-infinity"),
        _ => None,
    }
}

pub mod temporal {
    //! Arrow temporal values as chrono values.

    use std::sync::Arc;

    use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::*;

    pub fn timestamp(array: &Arc<dyn Array>, row: usize) -> Option<NaiveDateTime> {
        match array.data_type() {
            DataType::Timestamp(TimeUnit::Second, _) => array
                .as_primitive::<TimestampSecondType>()
                .value_as_datetime(row),
            DataType::Timestamp(TimeUnit::Millisecond, _) => array
                .as_primitive::<TimestampMillisecondType>()
                .value_as_datetime(row),
            DataType::Timestamp(TimeUnit::Microsecond, _) => array
                .as_primitive::<TimestampMicrosecondType>()
                .value_as_datetime(row),
            DataType::Timestamp(TimeUnit::Nanosecond, _) => array
                .as_primitive::<TimestampNanosecondType>()
                .value_as_datetime(row),
            _ => None,
        }
    }

    pub fn date(array: &Arc<dyn Array>, row: usize) -> Option<NaiveDate> {
        match array.data_type() {
            DataType::Date32 => array.as_primitive::<Date32Type>().value_as_date(row),
            DataType::Date64 => array.as_primitive::<Date64Type>().value_as_date(row),
            _ => None,
        }
    }

    /// Months, days and microseconds of an interval value.
    pub fn interval(array: &Arc<dyn Array>, row: usize) -> Option<(i32, i32, i64)> {
        Some(match array.data_type() {
            DataType::Interval(IntervalUnit::MonthDayNano) => {
                let value = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
                (value.months, value.days, value.nanoseconds / 1000)
            }
            DataType::Interval(IntervalUnit::DayTime) => {
                let value = array.as_primitive::<IntervalDayTimeType>().value(row);
                (0, value.days, i64::from(value.milliseconds) * 1000)
            }
            DataType::Interval(IntervalUnit::YearMonth) => (
                array.as_primitive::<IntervalYearMonthType>().value(row),
                0,
                0,
            ),
            _ => return None,
        })
    }

    pub fn bytes(array: &Arc<dyn Array>, row: usize) -> Option<&[u8]> {
        match array.data_type() {
            DataType::Binary => Some(array.as_binary::<i32>().value(row)),
            DataType::LargeBinary => Some(array.as_binary::<i64>().value(row)),
            DataType::BinaryView => Some(array.as_binary_view().value(row)),
            _ => None,
        }
    }

    pub fn time(array: &Arc<dyn Array>, row: usize) -> Option<NaiveTime> {
        match array.data_type() {
            DataType::Time32(TimeUnit::Second) => {
                array.as_primitive::<Time32SecondType>().value_as_time(row)
            }
            DataType::Time32(TimeUnit::Millisecond) => array
                .as_primitive::<Time32MillisecondType>()
                .value_as_time(row),
            DataType::Time64(TimeUnit::Microsecond) => array
                .as_primitive::<Time64MicrosecondType>()
                .value_as_time(row),
            DataType::Time64(TimeUnit::Nanosecond) => array
                .as_primitive::<Time64NanosecondType>()
                .value_as_time(row),
            _ => None,
        }
    }
}

/// PostgreSQL's `float8out`/`float4out` under `extra_float_digits`.
pub fn float_with_digits(value: f64, single_precision: bool, extra_digits: i64) -> String {
    if extra_digits > 0 || value.is_nan() || value.is_infinite() {
        return float(value, single_precision);
    }
    let base = if single_precision { 6 } else { 15 };
    let precision = (base + extra_digits).max(1) as usize;
    format_g(value, precision)
}

/// C's `%.*g`: `precision` significant digits, scientific notation when
/// the exponent is below -4 or at least `precision`, trailing zeros dropped.
fn format_g(value: f64, precision: usize) -> String {
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let scientific = format!("{:.*e}", precision - 1, value);
    let (mantissa, exponent) = scientific.split_once('e').expect("an exponent");
    let exponent: i32 = exponent.parse().expect("an integer exponent");
    if exponent < -4 || exponent >= precision as i32 {
        let mantissa = trim_fraction(mantissa);
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        trim_fraction(&format!("{value:.decimals$}")).to_owned()
    }
}

fn trim_fraction(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// PostgreSQL's `float8out`/`float4out` with the default
/// `extra_float_digits = 1` (shortest exact representation).
pub fn float(value: f64, single_precision: bool) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    // `{:e}` gives the shortest digits that read back to the same value.
    let scientific = if single_precision {
        format!("{:e}", value as f32)
    } else {
        format!("{value:e}")
    };
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("`{:e}` always has an exponent");
    let exponent: i32 = exponent.parse().expect("`{:e}` exponent is an integer");
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let fixed_limit = if single_precision { 6 } else { 15 };
    let body = if exponent < -4 || exponent >= fixed_limit {
        exponential(&digits, exponent)
    } else {
        fixed(&digits, exponent)
    };
    if negative { format!("-{body}") } else { body }
}

fn exponential(digits: &str, exponent: i32) -> String {
    let mut out = digits[..1].to_owned();
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    let _ = write!(out, "e{sign}{:02}", exponent.abs());
    out
}

fn fixed(digits: &str, exponent: i32) -> String {
    if exponent < 0 {
        let zeros = "0".repeat((-exponent - 1) as usize);
        return format!("0.{zeros}{digits}");
    }
    let integer_len = exponent as usize + 1;
    if digits.len() <= integer_len {
        format!("{digits}{}", "0".repeat(integer_len - digits.len()))
    } else {
        format!("{}.{}", &digits[..integer_len], &digits[integer_len..])
    }
}

/// `HH:MM:SS[.ffffff]` with trailing zeros of the fraction removed.
pub fn time(value: NaiveTime) -> String {
    let mut out = value.format("%H:%M:%S").to_string();
    push_fraction(&mut out, value.nanosecond());
    out
}

/// A year as PostgreSQL prints it: at least four digits, and years before 1
/// as `BC` years (year 0 is 1 BC).
fn year(date: &impl Datelike) -> (String, bool) {
    let year = date.year();
    if year <= 0 {
        (format!("{:04}", 1 - year), true)
    } else {
        (format!("{year:04}"), false)
    }
}

/// A date in `style`.
pub fn date(value: NaiveDate, style: DateStyle) -> String {
    let (year, bc) = year(&value);
    let (m, d) = (value.month(), value.day());
    let mut out = match (style.style, style.order) {
        (Style::Iso, _) => format!("{year}-{m:02}-{d:02}"),
        (Style::Sql, Order::Dmy) => format!("{d:02}/{m:02}/{year}"),
        (Style::Sql, _) => format!("{m:02}/{d:02}/{year}"),
        (Style::Postgres, Order::Dmy) => format!("{d:02}-{m:02}-{year}"),
        (Style::Postgres, _) => format!("{m:02}-{d:02}-{year}"),
        (Style::German, _) => format!("{d:02}.{m:02}.{year}"),
    };
    if bc {
        out.push_str(" BC");
    }
    out
}

/// A timestamp in `style`; `zone` is the offset and abbreviation to print
/// for a timestamp with time zone.
pub fn timestamp_styled(
    value: NaiveDateTime,
    style: DateStyle,
    zone: Option<(i32, &str)>,
) -> String {
    let (year, bc) = year(&value);
    let mut clock = value.format("%H:%M:%S").to_string();
    push_fraction(&mut clock, value.nanosecond());
    let (m, d) = (value.month(), value.day());
    let mut out = match (style.style, style.order) {
        (Style::Iso, _) => format!("{year}-{m:02}-{d:02} {clock}"),
        (Style::Sql, Order::Dmy) => format!("{d:02}/{m:02}/{year} {clock}"),
        (Style::Sql, _) => format!("{m:02}/{d:02}/{year} {clock}"),
        (Style::German, _) => format!("{d:02}.{m:02}.{year} {clock}"),
        (Style::Postgres, order) => {
            let weekday = value.format("%a");
            let month = value.format("%b");
            match order {
                Order::Dmy => format!("{weekday} {d:02} {month} {clock} {year}"),
                _ => format!("{weekday} {month} {d:02} {clock} {year}"),
            }
        }
    };
    if let Some((offset, abbreviation)) = zone {
        match style.style {
            Style::Iso => out.push_str(&iso_offset(offset)),
            _ => {
                out.push(' ');
                out.push_str(abbreviation);
            }
        }
    }
    if bc {
        out.push_str(" BC");
    }
    out
}

/// A UTC instant printed in the session's time zone.
pub fn timestamptz(utc: NaiveDateTime, zone: &SessionZone, style: DateStyle) -> String {
    let (offset, abbreviation) = zone.offset_at(&utc);
    let local = utc + chrono::Duration::seconds(i64::from(offset));
    timestamp_styled(local, style, Some((offset, &abbreviation)))
}

/// An interval of `months`, `days` and `micros` in `style`.
pub fn interval(months: i32, days: i32, micros: i64, style: IntervalStyle) -> String {
    match style {
        IntervalStyle::Iso8601 => interval_iso(months, days, micros),
        IntervalStyle::SqlStandard => interval_sql(months, days, micros),
        IntervalStyle::PostgresVerbose => interval_verbose(months, days, micros),
        IntervalStyle::Postgres => interval_postgres(months, days, micros),
    }
}

fn clock(micros: i64) -> String {
    let abs = micros.unsigned_abs();
    let (hours, rest) = (abs / 3_600_000_000, abs % 3_600_000_000);
    let (minutes, rest) = (rest / 60_000_000, rest % 60_000_000);
    let mut out = format!("{hours:02}:{minutes:02}:{:02}", rest / 1_000_000);
    push_fraction(&mut out, ((rest % 1_000_000) * 1000) as u32);
    out
}

/// `1 year 2 mons 3 days 04:05:06`, PostgreSQL's default: a field after a
/// negative one carries an explicit `+` when positive.
fn interval_postgres(months: i32, days: i32, micros: i64) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut negative_seen = false;
    let mut field = |value: i64, unit: &str, plural: &str, parts: &mut Vec<String>| {
        if value == 0 {
            return;
        }
        // A positive field right after a negative one gets an explicit `+`.
        let sign = if value > 0 && negative_seen { "+" } else { "" };
        negative_seen = value < 0;
        let name = if value == 1 { unit } else { plural };
        parts.push(format!("{sign}{value} {name}"));
    };
    field(i64::from(months / 12), "year", "years", &mut parts);
    field(i64::from(months % 12), "mon", "mons", &mut parts);
    field(i64::from(days), "day", "days", &mut parts);
    if micros != 0 || parts.is_empty() {
        let sign = if micros < 0 {
            "-"
        } else if negative_seen {
            "+"
        } else {
            ""
        };
        parts.push(format!("{sign}{}", clock(micros)));
    }
    parts.join(" ")
}

fn interval_verbose(months: i32, days: i32, micros: i64) -> String {
    // A leading negative field prints the whole interval negated, with `ago`.
    let leading_negative = [i64::from(months), i64::from(days), micros]
        .into_iter()
        .find(|v| *v != 0)
        .is_some_and(|v| v < 0);
    let (months, days, micros) = if leading_negative {
        (-months, -days, -micros)
    } else {
        (months, days, micros)
    };
    let mut parts: Vec<String> = Vec::new();
    let mut push = |value: i64, unit: &str| {
        if value != 0 {
            let plural = if value == 1 { "" } else { "s" };
            parts.push(format!("{value} {unit}{plural}"));
        }
    };
    push(i64::from(months / 12), "year");
    push(i64::from(months % 12), "mon");
    push(i64::from(days), "day");
    push(micros / 3_600_000_000, "hour");
    push(micros % 3_600_000_000 / 60_000_000, "min");
    let seconds = micros % 60_000_000;
    if seconds != 0 {
        let mut text = (seconds.abs() / 1_000_000).to_string();
        push_fraction(&mut text, ((seconds.abs() % 1_000_000) * 1000) as u32);
        let sign = if seconds < 0 { "-" } else { "" };
        let plural = if seconds == 1_000_000 { "" } else { "s" };
        parts.push(format!("{sign}{text} sec{plural}"));
    }
    if parts.is_empty() {
        return "@ 0".to_owned();
    }
    let ago = if leading_negative { " ago" } else { "" };
    format!("@ {}{ago}", parts.join(" "))
}

/// `h:mm:ss[.ffffff]` without a sign, hours not padded.
fn sql_clock(micros: i64) -> String {
    let text = clock(micros);
    match text.strip_prefix('0') {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest.to_owned(),
        _ => text,
    }
}

fn interval_sql(months: i32, days: i32, micros: i64) -> String {
    let negative = months < 0 || days < 0 || micros < 0;
    let positive = months > 0 || days > 0 || micros > 0;
    let year_month = months != 0;
    let day_time = days != 0 || micros != 0;
    if !negative && !positive {
        return "0".to_owned();
    }
    let standard = !(negative && positive || year_month && day_time);
    if !standard {
        let sign = |negative: bool| if negative { '-' } else { '+' };
        return format!(
            "{}{}-{} {}{} {}{}",
            sign(months < 0),
            months.abs() / 12,
            months.abs() % 12,
            sign(days < 0),
            days.abs(),
            sign(micros < 0),
            sql_clock(micros)
        );
    }
    // One sign for the whole value, in front.
    let prefix = if negative { "-" } else { "" };
    let (months, days) = (months.abs(), days.abs());
    if year_month {
        format!("{prefix}{}-{}", months / 12, months % 12)
    } else if days != 0 {
        format!("{prefix}{days} {}", sql_clock(micros))
    } else {
        format!("{prefix}{}", sql_clock(micros))
    }
}

fn interval_iso(months: i32, days: i32, micros: i64) -> String {
    if months == 0 && days == 0 && micros == 0 {
        return "PT0S".to_owned();
    }
    let mut out = String::from("P");
    let (years, months) = (months / 12, months % 12);
    for (value, unit) in [(years, 'Y'), (months, 'M'), (days, 'D')] {
        if value != 0 {
            let _ = write!(out, "{value}{unit}");
        }
    }
    if micros != 0 {
        out.push('T');
        let hours = micros / 3_600_000_000;
        let minutes = micros % 3_600_000_000 / 60_000_000;
        let seconds = micros % 60_000_000;
        if hours != 0 {
            let _ = write!(out, "{hours}H");
        }
        if minutes != 0 {
            let _ = write!(out, "{minutes}M");
        }
        if seconds != 0 {
            let sign = if seconds < 0 { "-" } else { "" };
            let mut text = (seconds.abs() / 1_000_000).to_string();
            push_fraction(&mut text, ((seconds.abs() % 1_000_000) * 1000) as u32);
            let _ = write!(out, "{sign}{text}S");
        }
    }
    out
}

/// A list as PostgreSQL prints an array (`{1,2,"a b"}`) or, for
/// `int2vector` and `oidvector`, space-separated (`1 2`).
pub fn list(values: &dyn datafusion::arrow::array::Array, vector: bool) -> String {
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    let options = FormatOptions::default().with_null("NULL");
    let Ok(formatter) = ArrayFormatter::try_new(values, &options) else {
        return String::new();
    };
    let items: Vec<String> = (0..values.len())
        .map(|index| {
            let item = formatter.value(index).to_string();
            if vector || values.is_null(index) {
                item
            } else {
                quote_array_item(&item)
            }
        })
        .collect();
    if vector {
        items.join(" ")
    } else {
        format!("{{{}}}", items.join(","))
    }
}

/// An array element quoted as `array_out` quotes it: when empty, `NULL`, or
/// holding a delimiter, brace, quote, backslash or blank.
fn quote_array_item(item: &str) -> String {
    let needs_quotes = item.is_empty()
        || item.eq_ignore_ascii_case("null")
        || item
            .chars()
            .any(|c| matches!(c, ',' | '{' | '}' | '"' | '\\') || c.is_whitespace());
    if needs_quotes {
        format!("\"{}\"", item.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        item.to_owned()
    }
}

/// bytea as `bytea_output = escape` prints it.
pub fn bytea_escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &byte in bytes {
        match byte {
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(byte as char),
            other => {
                let _ = write!(out, "\\{other:03o}");
            }
        }
    }
    out
}

fn push_fraction(out: &mut String, nanoseconds: u32) {
    // PostgreSQL keeps microseconds; leap-second nanoseconds fold into 59.
    let micros = (nanoseconds % 1_000_000_000) / 1_000;
    if micros == 0 {
        return;
    }
    let fraction = format!("{micros:06}");
    out.push('.');
    out.push_str(fraction.trim_end_matches('0'));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_postgres() {
        let cases: &[(f64, &str)] = &[
            (0.1, "0.1"),
            (1.5, "1.5"),
            (1e300, "1e+300"),
            (1e15, "1e+15"),
            (1e14, "100000000000000"),
            (123456.789, "123456.789"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
            (1.0 / 3.0, "0.3333333333333333"),
        ];
        for (value, expected) in cases {
            assert_eq!(float(*value, false), *expected, "{value}");
        }
        assert_eq!(float(f64::from(1.1f32), true), "1.1");
        assert_eq!(float(1e6, true), "1e+06");
        assert_eq!(float(100000.0, true), "100000");
        assert_eq!(float(-3.25, true), "-3.25");
    }

    #[test]
    fn floats_follow_extra_float_digits() {
        assert_eq!(float_with_digits(0.1, false, 0), "0.1");
        assert_eq!(float_with_digits(1.0 / 3.0, false, 0), "0.333333333333333");
        assert_eq!(float_with_digits(1e300, false, 0), "1e+300");
        assert_eq!(float_with_digits(123456.789, false, -10), "1.2346e+05");
        assert_eq!(float_with_digits(123456.789, false, -9), "123457");
        assert_eq!(float_with_digits(f64::from(1.1f32), true, 0), "1.1");
        assert_eq!(float_with_digits(0.1, false, 3), "0.1");
    }

    #[test]
    fn dates_and_timestamps_in_every_style() {
        use crate::query::settings::datestyle::{Order, Style};
        let at = NaiveDateTime::parse_from_str("2024-02-29 12:34:56.789", "%Y-%m-%d %H:%M:%S%.f")
            .unwrap();
        let style = |style, order| DateStyle { style, order };
        assert_eq!(date(at.date(), style(Style::Sql, Order::Dmy)), "29/02/2024");
        assert_eq!(
            date(at.date(), style(Style::German, Order::Dmy)),
            "29.02.2024"
        );
        assert_eq!(
            timestamp_styled(at, style(Style::Postgres, Order::Mdy), None),
            "Thu Feb 29 12:34:56.789 2024"
        );
        let berlin = SessionZone::parse("Europe/Berlin").unwrap().0;
        assert_eq!(
            timestamptz(at, &berlin, DateStyle::default()),
            "2024-02-29 13:34:56.789+01"
        );
        assert_eq!(
            timestamptz(at, &berlin, style(Style::Sql, Order::Mdy)),
            "02/29/2024 13:34:56.789 CET"
        );
        let bc = NaiveDate::from_ymd_opt(-43, 3, 15).unwrap();
        assert_eq!(date(bc, DateStyle::default()), "0044-03-15 BC");
    }

    #[test]
    fn intervals_in_every_style() {
        let day = 86_400_000_000i64;
        let micros = 2 * 3_600_000_000 + 3 * 60_000_000 + 4_000_000;
        assert_eq!(
            interval(0, 1, micros, IntervalStyle::Postgres),
            "1 day 02:03:04"
        );
        assert_eq!(
            interval(-1, 3, 0, IntervalStyle::Postgres),
            "-1 mons +3 days"
        );
        assert_eq!(interval(14, 0, 0, IntervalStyle::Postgres), "1 year 2 mons");
        assert_eq!(interval(0, 0, 0, IntervalStyle::Postgres), "00:00:00");
        assert_eq!(interval(0, 1, micros, IntervalStyle::Iso8601), "P1DT2H3M4S");
        assert_eq!(
            interval(0, 1, micros, IntervalStyle::SqlStandard),
            "1 2:03:04"
        );
        assert_eq!(
            interval(-1, 3, 0, IntervalStyle::SqlStandard),
            "-0-1 +3 +0:00:00"
        );
        assert_eq!(interval(14, 0, 0, IntervalStyle::SqlStandard), "1-2");
        assert_eq!(
            interval(-1, 3, 0, IntervalStyle::PostgresVerbose),
            "@ 1 mon -3 days ago"
        );
        assert_eq!(
            interval(0, -1, 0, IntervalStyle::PostgresVerbose),
            "@ 1 day ago"
        );
        assert_eq!(
            interval(0, 1, micros, IntervalStyle::PostgresVerbose),
            "@ 1 day 2 hours 3 mins 4 secs"
        );
        let _ = day;
    }

    #[test]
    fn timestamps_drop_trailing_zeros() {
        let at = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap();
        let iso = |s: &str| timestamp_styled(at(s), DateStyle::default(), None);
        assert_eq!(iso("2024-02-29 12:34:56.789"), "2024-02-29 12:34:56.789");
        assert_eq!(iso("1999-12-31 23:59:59"), "1999-12-31 23:59:59");
        assert_eq!(
            iso("2000-01-01 00:00:00.000001"),
            "2000-01-01 00:00:00.000001"
        );
        assert_eq!(
            timestamptz(
                at("2000-01-01 00:00:00"),
                &SessionZone::UTC,
                DateStyle::default()
            ),
            "2000-01-01 00:00:00+00"
        );
        assert_eq!(
            time(NaiveTime::from_hms_micro_opt(1, 2, 3, 450_000).unwrap()),
            "01:02:03.45"
        );
    }
}
