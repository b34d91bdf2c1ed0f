//! Duration values (`10s`, `5m`, `1h30m`, `30d`): the accepted spelling and the error text
//! shared by every duration key.

use std::time::Duration;

/// Units a configuration may use. humantime accepts more spellings (`10 minutes`,
/// `2 fortnights`); pgaccel keeps to the compact ones so files stay uniform and a typo
/// such as `10 mins` is caught rather than guessed.
const UNITS: &[&str] = &["ms", "s", "m", "h", "d", "w"];

/// Parses a compact duration: one or more `<number><unit>` parts, no spaces.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    if !is_compact(text) {
        return Err(invalid(text));
    }
    humantime::parse_duration(text).map_err(|_| invalid(text))
}

fn invalid(text: &str) -> String {
    format!(
        "invalid duration '{text}'; use a number and a unit such as 30s, 10m, 1h, 1d (units: ms, s, m, h, d, w)"
    )
}

/// True when `text` is a sequence of `<digits><unit>` parts with known units.
fn is_compact(text: &str) -> bool {
    let mut rest = text;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let letters = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        if !UNITS.contains(&&rest[..letters]) {
            return false;
        }
        rest = &rest[letters..];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_compact_durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86_400));
        assert_eq!(
            parse_duration("30d").unwrap(),
            Duration::from_secs(30 * 86_400)
        );
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
    }

    #[test]
    fn rejects_other_spellings() {
        for text in [
            "10 minutes",
            "10",
            "m",
            "",
            "1h 30m",
            "10mins",
            "-1s",
            "1.5h",
        ] {
            let error = parse_duration(text).unwrap_err();
            assert!(error.contains("use a number and a unit"), "{text}: {error}");
        }
    }
}
