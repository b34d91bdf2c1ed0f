//! PostgreSQL's text output for the types whose text form pgwire's default
//! formatting does not match: floating point (shortest round-trip digits,
//! exponent from 1e15 for float8 and 1e6 for float4, `Infinity`, `NaN`) and
//! timestamps and times (fractional seconds without trailing zeros).
//!
//! Written by hand because no crate reproduces PostgreSQL's output rules, and
//! psql users compare results character by character.

use std::fmt::Write;

use chrono::{NaiveDateTime, NaiveTime, Timelike};

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

/// `YYYY-MM-DD HH:MM:SS[.ffffff]`, PostgreSQL's ISO output.
pub fn timestamp(value: NaiveDateTime) -> String {
    let mut out = value.format("%Y-%m-%d %H:%M:%S").to_string();
    push_fraction(&mut out, value.nanosecond());
    out
}

/// A UTC timestamp with time zone as PostgreSQL prints it with
/// `TimeZone = UTC`: the timestamp followed by `+00`.
pub fn timestamptz_utc(value: NaiveDateTime) -> String {
    let mut out = timestamp(value);
    out.push_str("+00");
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
    fn timestamps_drop_trailing_zeros() {
        let at = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap();
        assert_eq!(
            timestamp(at("2024-02-29 12:34:56.789")),
            "2024-02-29 12:34:56.789"
        );
        assert_eq!(timestamp(at("1999-12-31 23:59:59")), "1999-12-31 23:59:59");
        assert_eq!(
            timestamp(at("2000-01-01 00:00:00.000001")),
            "2000-01-01 00:00:00.000001"
        );
        assert_eq!(
            timestamptz_utc(at("2000-01-01 00:00:00")),
            "2000-01-01 00:00:00+00"
        );
        assert_eq!(
            time(NaiveTime::from_hms_micro_opt(1, 2, 3, 450_000).unwrap()),
            "01:02:03.45"
        );
    }
}
