//! `DateStyle`: the output style (ISO, SQL, Postgres, German) and the field
//! order (MDY, DMY, YMD), parsed as PostgreSQL parses them.

use crate::query::error::PgError;
use crate::query::sqlstate;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Iso,
    Sql,
    Postgres,
    German,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Mdy,
    Dmy,
    Ymd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateStyle {
    pub style: Style,
    pub order: Order,
}

impl Default for DateStyle {
    fn default() -> Self {
        DateStyle {
            style: Style::Iso,
            order: Order::Mdy,
        }
    }
}

impl DateStyle {
    /// Applies `text` (`'SQL, DMY'`, `german`, `euro`, ...) over `current`,
    /// which keeps whatever `text` does not mention.
    pub fn parse(text: &str, current: DateStyle) -> Result<DateStyle, PgError> {
        let invalid = |detail: String| {
            PgError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("invalid value for parameter \"DateStyle\": \"{text}\""),
            )
            .with_detail(detail)
        };
        let mut style: Option<Style> = None;
        let mut order: Option<Order> = None;
        for word in text
            .split([',', ' '])
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            let lower = word.to_lowercase();
            let (new_style, new_order) = match lower.as_str() {
                "iso" => (Some(Style::Iso), None),
                "sql" => (Some(Style::Sql), None),
                "postgres" => (Some(Style::Postgres), None),
                "german" => (Some(Style::German), None),
                "ymd" => (None, Some(Order::Ymd)),
                "dmy" | "euro" | "european" => (None, Some(Order::Dmy)),
                "mdy" | "us" | "noneuro" | "noneuropean" => (None, Some(Order::Mdy)),
                "default" => (Some(Style::Iso), Some(Order::Mdy)),
                _ => return Err(invalid(format!("Unrecognized key word: \"{word}\"."))),
            };
            let conflict = (new_style.is_some() && style.is_some() && new_style != style)
                || (new_order.is_some() && order.is_some() && new_order != order);
            if conflict {
                return Err(invalid(
                    "Conflicting \"datestyle\" specifications.".to_owned(),
                ));
            }
            style = new_style.or(style);
            order = new_order.or(order);
        }
        let style = style.unwrap_or(current.style);
        // German alone means day-month-year.
        let order = order.unwrap_or(if style == Style::German && style != current.style {
            Order::Dmy
        } else {
            current.order
        });
        Ok(DateStyle { style, order })
    }

    /// The canonical spelling `SHOW DateStyle` prints.
    pub fn spelled(self) -> String {
        let style = match self.style {
            Style::Iso => "ISO",
            Style::Sql => "SQL",
            Style::Postgres => "Postgres",
            Style::German => "German",
        };
        let order = match self.order {
            Order::Mdy => "MDY",
            Order::Dmy => "DMY",
            Order::Ymd => "YMD",
        };
        format!("{style}, {order}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_postgres() {
        let iso = DateStyle::default();
        assert_eq!(
            DateStyle::parse("german", iso).unwrap().spelled(),
            "German, DMY"
        );
        assert_eq!(
            DateStyle::parse("sql, dmy", iso).unwrap().spelled(),
            "SQL, DMY"
        );
        assert_eq!(DateStyle::parse("YMD", iso).unwrap().spelled(), "ISO, YMD");
        let error = DateStyle::parse("foo", iso).unwrap_err();
        assert_eq!(
            error.detail.as_deref(),
            Some("Unrecognized key word: \"foo\".")
        );
        assert!(DateStyle::parse("iso, sql", iso).is_err());
    }
}
