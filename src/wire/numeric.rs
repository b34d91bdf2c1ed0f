//! `numeric` values from Arrow decimals, in PostgreSQL's text and binary
//! forms, keeping the column's scale (PostgreSQL prints `0.0000` for a zero
//! in `numeric(14,4)`).
//!
//! Written by hand: rust_decimal (what arrow-pg uses) holds only 28 digits,
//! fewer than `Decimal128(38, s)`, and drops the scale of zero.

use bytes::{BufMut, BytesMut};

/// The decimal digits of `|value|` split at `scale`: (integer, fraction).
fn split(value: i128, scale: i8) -> (String, String) {
    let digits = value.unsigned_abs().to_string();
    if scale <= 0 {
        let zeros = "0".repeat(scale.unsigned_abs() as usize);
        return (format!("{digits}{zeros}"), String::new());
    }
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (integer, fraction) = padded.split_at(padded.len() - scale);
    (integer.to_owned(), fraction.to_owned())
}

/// PostgreSQL's text output of a numeric.
pub fn text(value: i128, scale: i8) -> String {
    let (integer, fraction) = split(value, scale);
    let sign = if value < 0 { "-" } else { "" };
    if fraction.is_empty() {
        format!("{sign}{integer}")
    } else {
        format!("{sign}{integer}.{fraction}")
    }
}

/// PostgreSQL's text of a numeric that is no number: `NaN`, `Infinity`,
/// `-Infinity`.
pub fn special_text(float: f64) -> &'static str {
    match float {
        f64::INFINITY => "Infinity",
        f64::NEG_INFINITY => "-Infinity",
        _ => "NaN",
    }
}

/// PostgreSQL's binary `numeric` of [`special_text`]'s values: no digits,
/// and the sign word says which.
pub fn binary_special(float: f64, out: &mut BytesMut) {
    let sign: u16 = match float {
        f64::INFINITY => 0xD000,
        f64::NEG_INFINITY => 0xF000,
        _ => 0xC000,
    };
    out.put_i16(0); // digits
    out.put_i16(0); // weight
    out.put_u16(sign);
    out.put_i16(0); // display scale
}

/// PostgreSQL's binary `numeric`: digit count, weight, sign, display scale,
/// then base-10000 digits without leading or trailing zero groups.
pub fn binary(value: i128, scale: i8, out: &mut BytesMut) {
    let (integer, fraction) = split(value, scale);
    binary_digits(value < 0, &integer, &fraction, out);
}

/// [`binary`] of a numeric's text (`-12.50`), keeping the scale it shows.
pub fn binary_text(text: &str, out: &mut BytesMut) {
    if let Some(special) = match text {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    } {
        return binary_special(special, out);
    }
    let (negative, magnitude) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (integer, fraction) = magnitude.split_once('.').unwrap_or((magnitude, ""));
    binary_digits(negative, integer, fraction, out);
}

/// The binary form of `±integer.fraction`, given as decimal digits; the
/// display scale is the fraction's length.
fn binary_digits(negative: bool, integer: &str, fraction: &str, out: &mut BytesMut) {
    let scale = fraction.len();
    let integer = integer.trim_start_matches('0');
    let mut groups: Vec<i16> = Vec::new();
    let lead = integer.len() % 4;
    let integer_padded = format!(
        "{}{integer}",
        "0".repeat(if lead == 0 { 0 } else { 4 - lead })
    );
    let integer_groups = integer_padded.len() / 4;
    let fraction_padded = format!("{fraction}{}", "0".repeat((4 - fraction.len() % 4) % 4));
    for chunk in integer_padded
        .as_bytes()
        .chunks(4)
        .chain(fraction_padded.as_bytes().chunks(4))
    {
        groups.push(
            std::str::from_utf8(chunk)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0),
        );
    }
    let mut weight = integer_groups as i16 - 1;
    // Leading zero groups only occur in the fraction (the integer was trimmed).
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let sign: u16 = if negative && !groups.is_empty() {
        0x4000
    } else {
        0
    };
    out.put_i16(groups.len() as i16);
    out.put_i16(weight);
    out.put_u16(sign);
    out.put_i16(i16::try_from(scale).unwrap_or(i16::MAX));
    for group in groups {
        out.put_i16(group);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(value: i128, scale: i8) -> Vec<u8> {
        let mut out = BytesMut::new();
        binary(value, scale, &mut out);
        out.to_vec()
    }

    #[test]
    fn binary_of_text_matches_binary_of_digits() {
        for (value, scale, text) in [
            (0, 4, "0.0000"),
            (-1, 4, "-0.0001"),
            (123_456_781_234, 4, "12345678.1234"),
            (42, 0, "42"),
        ] {
            let mut out = BytesMut::new();
            binary_text(text, &mut out);
            assert_eq!(out.to_vec(), encoded(value, scale), "{text}");
        }
        let mut out = BytesMut::new();
        binary_text("0.33333333333333333333333333333333333333333333", &mut out);
        // 44 decimals: eleven base-10000 groups, display scale 44.
        assert_eq!(&out[..8], [0, 11, 0xff, 0xff, 0, 0, 0, 44]);
    }

    #[test]
    fn text_keeps_the_scale() {
        assert_eq!(text(0, 4), "0.0000");
        assert_eq!(text(123_456_781_234, 4), "12345678.1234");
        assert_eq!(text(-1, 4), "-0.0001");
        assert_eq!(text(1050, 2), "10.50");
        assert_eq!(text(42, 0), "42");
    }

    #[test]
    fn specials_match_postgres() {
        // SELECT 'NaN'::numeric, 'Infinity'::numeric, '-Infinity'::numeric
        // sent in binary by PostgreSQL.
        for (float, sign, text) in [
            (f64::NAN, [0xC0, 0], "NaN"),
            (f64::INFINITY, [0xD0, 0], "Infinity"),
            (f64::NEG_INFINITY, [0xF0, 0], "-Infinity"),
        ] {
            let mut out = BytesMut::new();
            binary_special(float, &mut out);
            assert_eq!(out.to_vec(), [0, 0, 0, 0, sign[0], sign[1], 0, 0]);
            assert_eq!(special_text(float), text);
        }
    }

    #[test]
    fn binary_matches_postgres() {
        // SELECT '12345678.1234'::numeric(14,4) sent in binary by PostgreSQL.
        assert_eq!(
            encoded(123_456_781_234, 4),
            [0, 3, 0, 1, 0, 0, 0, 4, 4, 210, 22, 46, 4, 210]
        );
        // 0::numeric(14,4): no digits, scale 4.
        assert_eq!(encoded(0, 4), [0, 0, 0, 0, 0, 0, 0, 4]);
        // -0.0001: one digit (1) at weight -1, negative.
        assert_eq!(encoded(-1, 4), [0, 1, 255, 255, 0x40, 0, 0, 4, 0, 1]);
        // 10000: one digit (1) at weight 1.
        assert_eq!(encoded(10000, 0), [0, 1, 0, 1, 0, 0, 0, 0, 0, 1]);
    }
}
