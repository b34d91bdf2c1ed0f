//! When a dataset refreshes: a fixed interval or a cron expression, never both. The cron
//! text is kept beside the parsed form so status output and errors can show what the
//! user wrote.

use std::fmt;
use std::time::Duration;

/// A refresh schedule; `refresh_check_interval` and `refresh_cron` are exclusive, so one
/// enum makes "both" impossible to express.
#[derive(Debug, Clone)]
pub enum Schedule {
    Interval(Duration),
    Cron(CronSchedule),
}

/// A parsed cron expression (5 fields, or 6 with seconds first) and its original text.
#[derive(Clone)]
pub struct CronSchedule {
    /// Boxed: a parsed pattern is ~250 bytes, and most schedules are intervals.
    cron: Box<croner::Cron>,
    text: String,
}

impl CronSchedule {
    /// Parses `text`; the error is croner's reason, for the user.
    pub fn parse(text: &str) -> Result<Self, String> {
        let cron = croner::Cron::new(text)
            .with_seconds_optional()
            .parse()
            .map_err(|error| error.to_string().trim_end_matches('.').to_string())?;
        Ok(Self {
            cron: Box::new(cron),
            text: text.to_string(),
        })
    }

    pub fn cron(&self) -> &croner::Cron {
        &self.cron
    }

    /// The expression as written in the configuration.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Debug for CronSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CronSchedule").field(&self.text).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_five_and_six_fields() {
        assert_eq!(
            CronSchedule::parse("0 12 * * 1-5").unwrap().as_str(),
            "0 12 * * 1-5"
        );
        assert!(CronSchedule::parse("*/10 * * * * *").is_ok());
    }

    #[test]
    fn rejects_bad_expressions_with_a_reason() {
        let error = CronSchedule::parse("61 * * * *").unwrap_err();
        assert!(!error.is_empty());
        assert!(CronSchedule::parse("every day").is_err());
        assert!(CronSchedule::parse("").is_err());
    }
}
