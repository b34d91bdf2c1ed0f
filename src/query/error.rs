//! [`PgError`]: an error as a PostgreSQL client receives it (severity,
//! SQLSTATE, message, detail, hint), and [`Notice`] for the messages that do
//! not end a statement.
//!
//! The query layer speaks in these; the wire layer only writes them out.

use std::fmt;

/// An error that ends the statement (`ERROR`) or the connection (`FATAL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgError {
    pub fatal: bool,
    pub code: String,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// Where in the statement's text the error is, in characters from 1
    /// (the `P` field clients point at).
    pub position: Option<usize>,
}

impl PgError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        PgError {
            fatal: false,
            code: code.to_owned(),
            message: message.into(),
            detail: None,
            hint: None,
            position: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn at(mut self, position: Option<usize>) -> Self {
        self.position = position;
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The same error ending the connection.
    pub fn into_fatal(mut self) -> Self {
        self.fatal = true;
        self
    }

    pub fn severity(&self) -> &'static str {
        if self.fatal { "FATAL" } else { "ERROR" }
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.severity(), self.code, self.message)
    }
}

impl std::error::Error for PgError {}

/// How loud a [`Notice`] is; clients filter on it with `client_min_messages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoticeLevel {
    Notice,
    Warning,
}

impl NoticeLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            NoticeLevel::Notice => "NOTICE",
            NoticeLevel::Warning => "WARNING",
        }
    }
}

/// A message sent to the client beside a statement's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub level: NoticeLevel,
    pub code: &'static str,
    pub message: String,
}

impl Notice {
    pub fn info(code: &'static str, message: impl Into<String>) -> Self {
        Notice {
            level: NoticeLevel::Notice,
            code,
            message: message.into(),
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Notice {
            level: NoticeLevel::Warning,
            code,
            message: message.into(),
        }
    }
}
