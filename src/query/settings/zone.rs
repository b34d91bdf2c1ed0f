//! The session's `TimeZone`: an IANA zone (`Europe/Berlin`, any case) or a
//! fixed offset written POSIX-style (`<+02>-02`, `UTC+3`, `+02:00`), as
//! PostgreSQL accepts them.
//!
//! POSIX offsets count hours *west* of Greenwich, so `+02:00` is two hours
//! behind UTC, exactly as PostgreSQL reads it; `SET TIME ZONE 2` (a number,
//! ISO sign) arrives here already written as `<+02>-02`.

use std::collections::HashMap;
use std::sync::LazyLock;

use chrono::{NaiveDateTime, Offset, TimeZone};
use chrono_tz::{OffsetName, Tz};

/// A time zone a session can be set to.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionZone {
    Named(Tz),
    Fixed {
        /// Seconds east of UTC.
        east: i32,
        /// What `SQL` and `Postgres` DateStyles print after a time (may be
        /// empty, as PostgreSQL prints it for `+02:00`).
        abbreviation: String,
    },
}

static ZONES_BY_LOWERCASE: LazyLock<HashMap<String, Tz>> = LazyLock::new(|| {
    chrono_tz::TZ_VARIANTS
        .iter()
        .map(|zone| (zone.name().to_lowercase(), *zone))
        .collect()
});

impl SessionZone {
    pub const UTC: SessionZone = SessionZone::Named(Tz::UTC);

    /// The zone `text` names, with the spelling `SHOW TimeZone` gives it.
    pub fn parse(text: &str) -> Option<(SessionZone, String)> {
        let trimmed = text.trim();
        if let Some(zone) = ZONES_BY_LOWERCASE.get(&trimmed.to_lowercase()) {
            return Some((SessionZone::Named(*zone), zone.name().to_owned()));
        }
        // A number is hours east of UTC (`'-02'` is two hours west), as
        // PostgreSQL reads it before trying POSIX's west-positive offsets,
        // and is shown in POSIX form (`<-02>+02`).
        if let Ok(hours) = trimmed.parse::<f64>()
            && hours.is_finite()
            && hours.abs() < 168.0
        {
            let east = (hours * 3600.0).round() as i32;
            let spelled = Self::posix_for_east_seconds(east);
            if spelled != trimmed {
                return Self::parse(&spelled);
            }
        }
        let (abbreviation, offset) = posix(trimmed)?;
        Some((
            SessionZone::Fixed {
                east: -offset,
                abbreviation,
            },
            trimmed.to_owned(),
        ))
    }

    /// The zone `AT TIME ZONE` reads `text` as: an IANA name in any case,
    /// or a POSIX zone without daylight rules (its offset hours west of
    /// UTC: `'+05'` is UTC-5, unlike [`SessionZone::parse`]'s bare number).
    pub fn at_time_zone(text: &str) -> Option<SessionZone> {
        let trimmed = text.trim();
        if let Some(zone) = ZONES_BY_LOWERCASE.get(&trimmed.to_lowercase()) {
            return Some(SessionZone::Named(*zone));
        }
        let (abbreviation, offset) = posix(trimmed)?;
        Some(SessionZone::Fixed {
            east: -offset,
            abbreviation,
        })
    }

    /// The POSIX spelling of a zone `hours` east of UTC, as `SET TIME
    /// ZONE <number>` and `SET TIME ZONE INTERVAL ...` store it.
    pub fn posix_for_east_seconds(east: i32) -> String {
        let name = iso_offset(east);
        // PostgreSQL writes UTC itself as `<+00>-00`.
        let west = if east == 0 {
            "-00".to_owned()
        } else {
            iso_offset(-east)
        };
        format!("<{name}>{west}")
    }

    /// The offset (seconds east) and abbreviation in force at `utc`.
    pub fn offset_at(&self, utc: &NaiveDateTime) -> (i32, String) {
        match self {
            SessionZone::Named(zone) => {
                let offset = zone.offset_from_utc_datetime(utc);
                let abbreviation = offset
                    .abbreviation()
                    .map(str::to_owned)
                    .unwrap_or_else(|| iso_offset(offset.fix().local_minus_utc()));
                (offset.fix().local_minus_utc(), abbreviation)
            }
            SessionZone::Fixed { east, abbreviation } => (*east, abbreviation.clone()),
        }
    }

    /// The zone as DataFusion's `execution.time_zone` takes it.
    pub fn engine_name(&self) -> String {
        match self {
            SessionZone::Named(zone) => zone.name().to_owned(),
            SessionZone::Fixed { east, .. } => {
                let sign = if *east < 0 { '-' } else { '+' };
                let seconds = east.unsigned_abs();
                format!("{sign}{:02}:{:02}", seconds / 3600, seconds % 3600 / 60)
            }
        }
    }
}

/// `+02`, `-05:30`: an offset as ISO output prints it after a timestamp.
pub fn iso_offset(east: i32) -> String {
    let sign = if east < 0 { '-' } else { '+' };
    let seconds = east.unsigned_abs();
    let (hours, minutes, rest) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    match (minutes, rest) {
        (0, 0) => format!("{sign}{hours:02}"),
        (_, 0) => format!("{sign}{hours:02}:{minutes:02}"),
        _ => format!("{sign}{hours:02}:{minutes:02}:{rest:02}"),
    }
}

/// A POSIX zone without daylight rules: `[abbreviation]offset`, the offset
/// in seconds west. The abbreviation is letters (three or more) or `<...>`.
fn posix(text: &str) -> Option<(String, i32)> {
    let (abbreviation, rest) = if let Some(inner) = text.strip_prefix('<') {
        let (name, rest) = inner.split_once('>')?;
        (name.to_owned(), rest)
    } else {
        let letters = text
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(text.len());
        if letters != 0 && letters < 3 {
            return None;
        }
        (text[..letters].to_owned(), &text[letters..])
    };
    Some((abbreviation, posix_offset(rest)?))
}

/// `[+-]hh[:mm[:ss]]` in seconds.
fn posix_offset(text: &str) -> Option<i32> {
    let (sign, digits) = match text.as_bytes().first()? {
        b'-' => (-1, &text[1..]),
        b'+' => (1, &text[1..]),
        _ => (1, text),
    };
    let mut parts = digits.split(':');
    let hours: i32 = parts.next()?.parse().ok()?;
    let minutes: i32 = parts.next().map_or(Some(0), |m| m.parse().ok())?;
    let seconds: i32 = parts.next().map_or(Some(0), |s| s.parse().ok())?;
    if parts.next().is_some() || hours > 167 || minutes > 59 || seconds > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60 + seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_zones_match_any_case() {
        let (zone, name) = SessionZone::parse("europe/berlin").unwrap();
        assert_eq!(name, "Europe/Berlin");
        let winter = NaiveDateTime::parse_from_str("2024-01-15 12:00", "%Y-%m-%d %H:%M").unwrap();
        let summer = NaiveDateTime::parse_from_str("2024-07-15 12:00", "%Y-%m-%d %H:%M").unwrap();
        assert_eq!(zone.offset_at(&winter), (3600, "CET".to_owned()));
        assert_eq!(zone.offset_at(&summer), (7200, "CEST".to_owned()));
        assert_eq!(SessionZone::parse("UTC").unwrap().1, "UTC");
        assert!(SessionZone::parse("Mars/Base").is_none());
    }

    #[test]
    fn posix_offsets_count_west() {
        let (zone, name) = SessionZone::parse("+02:00").unwrap();
        assert_eq!(name, "+02:00");
        assert_eq!(
            zone,
            SessionZone::Fixed {
                east: -7200,
                abbreviation: String::new()
            }
        );
        let spelled = SessionZone::posix_for_east_seconds(2 * 3600);
        assert_eq!(spelled, "<+02>-02");
        let (zone, _) = SessionZone::parse(&spelled).unwrap();
        assert_eq!(
            zone,
            SessionZone::Fixed {
                east: 7200,
                abbreviation: "+02".to_owned()
            }
        );
        assert_eq!(zone.engine_name(), "+02:00");
        assert_eq!(iso_offset(-(5 * 3600 + 1800)), "-05:30");
    }

    #[test]
    fn a_number_is_hours_east() {
        let (zone, name) = SessionZone::parse("-02").unwrap();
        assert_eq!(name, "<-02>+02");
        assert_eq!(
            zone,
            SessionZone::Fixed {
                east: -7200,
                abbreviation: "-02".to_owned()
            }
        );
        let (zone, name) = SessionZone::parse("5.5").unwrap();
        assert_eq!(name, "<+05:30>-05:30");
        assert_eq!(zone.engine_name(), "+05:30");
        assert_eq!(SessionZone::parse("0").unwrap().1, "<+00>-00");
    }
}
