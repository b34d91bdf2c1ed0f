//! Statement hooks: what a session answers itself before anything is planned
//! — transaction control, `SET` / `SHOW` / `RESET`, cursors, `COPY ... TO
//! STDOUT` — and the refusals: every write or DDL with SQLSTATE 25006, as a
//! hot standby does, and any other statement pgaccel does not know with
//! 0A000 naming it.

use datafusion::sql::sqlparser::ast::{
    CloseCursor, ContextModifier, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource,
    CopyTarget, DeclareType, DiscardObject, Expr, FetchDirection, Ident, Query, Reset, Set,
    Statement, TransactionAccessMode, TransactionIsolationLevel, TransactionMode, UnaryOperator,
    Value,
};

use super::error::PgError;
use super::settings::{self, Scope, SessionZone};
use super::sqlstate;

/// What a session does with one parsed statement.
#[derive(Debug, Clone)]
pub enum Command {
    /// Planned and executed by DataFusion.
    Query,
    Begin(TransactionModes),
    /// `COMMIT` / `END`.
    Commit,
    /// `ROLLBACK` / `ABORT`.
    Rollback,
    RollbackTo(String),
    Savepoint(String),
    Release(String),
    /// `SET name = value`; `None` is `DEFAULT`.
    Set {
        name: String,
        value: Option<String>,
        scope: Scope,
    },
    /// `SET TRANSACTION ...`, or `SET SESSION CHARACTERISTICS AS
    /// TRANSACTION ...` when `session`.
    SetTransaction {
        modes: TransactionModes,
        session: bool,
    },
    /// `RESET name`; `None` is `RESET ALL`.
    Reset(Option<String>),
    /// `SHOW name` (lowercase); `all` for `SHOW ALL`.
    Show(String),
    /// `DISCARD ...`, with its command tag.
    Discard(&'static str),
    Declare(Box<Declare>),
    Fetch {
        cursor: String,
        motion: Motion,
        /// `MOVE`: position only, return no rows.
        move_only: bool,
    },
    /// `CLOSE name`; `None` is `CLOSE ALL`.
    Close(Option<String>),
    Copy(Box<CopyTo>),
    /// `DEALLOCATE name`; `None` is `DEALLOCATE ALL`.
    Deallocate(Option<String>),
    /// `UNLISTEN`: accepted, there is nothing to stop listening to.
    Unlisten,
    /// A write or DDL, refused with 25006; the command name PostgreSQL
    /// uses, and the table a write names.
    ReadOnly {
        command: String,
        table: Option<String>,
    },
    /// A statement pgaccel does not run, refused with 0A000.
    Unsupported {
        command: String,
    },
}

/// `BEGIN` / `SET TRANSACTION` characteristics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransactionModes {
    pub isolation: Option<&'static str>,
    pub read_only: Option<bool>,
}

/// `DECLARE name [BINARY] [NO] [SCROLL] CURSOR [WITH HOLD] FOR query`.
#[derive(Debug, Clone)]
pub struct Declare {
    pub name: String,
    pub query: Query,
    pub binary: bool,
    /// `Some(true)` SCROLL, `Some(false)` NO SCROLL, `None` unspecified.
    pub scroll: Option<bool>,
    pub hold: bool,
}

/// Where a `FETCH` or `MOVE` goes, in PostgreSQL's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Motion {
    /// `NEXT`, `FORWARD n`, `n`; `None` is `ALL`.
    Forward(Option<u64>),
    /// `PRIOR`, `BACKWARD n`; `None` is `BACKWARD ALL`.
    Backward(Option<u64>),
    /// `ABSOLUTE n`, `FIRST` (1), `LAST` (-1).
    Absolute(i64),
    /// `RELATIVE n`.
    Relative(i64),
}

/// `COPY (query) TO STDOUT` / `COPY table [(columns)] TO STDOUT`.
#[derive(Debug, Clone)]
pub struct CopyTo {
    pub source: CopyFrom,
    pub options: CopyOptions,
}

#[derive(Debug, Clone)]
pub enum CopyFrom {
    Query(Box<Query>),
    Table { name: String, columns: Vec<String> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    Binary,
}

/// The options of `COPY ... TO`, with PostgreSQL's defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub header: bool,
    pub delimiter: char,
    pub null: String,
    pub quote: char,
    pub escape: char,
    /// Columns always quoted in CSV (`FORCE_QUOTE`); `None` when all are.
    pub force_quote: Option<Vec<String>>,
    /// `FORCE_QUOTE *` given.
    pub force_quote_all: bool,
}

pub fn classify(statement: &Statement) -> Result<Command, PgError> {
    Ok(match statement {
        Statement::Query(_) | Statement::Explain { .. } | Statement::ExplainTable { .. } => {
            Command::Query
        }
        Statement::StartTransaction { modes, .. } => Command::Begin(transaction_modes(modes)),
        Statement::Commit { .. } => Command::Commit,
        Statement::Rollback {
            savepoint: Some(name),
            ..
        } => Command::RollbackTo(name.value.clone()),
        Statement::Rollback { .. } => Command::Rollback,
        Statement::Savepoint { name } => Command::Savepoint(name.value.clone()),
        Statement::ReleaseSavepoint { name } => Command::Release(name.value.clone()),
        Statement::Set(set) => classify_set(set)?,
        Statement::ShowVariable { variable } => Command::Show(show_name(variable)),
        Statement::Reset(reset) => Command::Reset(match &reset.reset {
            Reset::ALL => None,
            Reset::ConfigurationParameter(name) => Some(name.to_string().to_lowercase()),
        }),
        Statement::Discard { object_type } => Command::Discard(match object_type {
            DiscardObject::ALL => "DISCARD ALL",
            DiscardObject::PLANS => "DISCARD PLANS",
            DiscardObject::SEQUENCES => "DISCARD SEQUENCES",
            DiscardObject::TEMP => "DISCARD TEMP",
        }),
        Statement::Declare { stmts } => classify_declare(stmts)?,
        Statement::Fetch {
            name, direction, ..
        } => Command::Fetch {
            cursor: name.value.clone(),
            motion: motion(direction)?,
            move_only: false,
        },
        Statement::Close { cursor } => Command::Close(match cursor {
            CloseCursor::All => None,
            CloseCursor::Specific { name } => Some(name.value.clone()),
        }),
        Statement::Copy {
            source,
            to,
            target,
            options,
            legacy_options,
            ..
        } => classify_copy(source, *to, target, options, legacy_options)?,
        Statement::Deallocate { name, .. } => Command::Deallocate(
            (!name.value.eq_ignore_ascii_case("all") || name.quote_style.is_some())
                .then(|| name.value.clone()),
        ),
        Statement::UNLISTEN { .. } => Command::Unlisten,
        other => refusal(other),
    })
}

/// The command for a statement pgaccel does not answer: 25006 for writes
/// and DDL, 0A000 for the rest.
fn refusal(statement: &Statement) -> Command {
    let command = command_name(statement);
    let writes = matches!(
        statement,
        Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Merge(_)
            | Statement::Truncate(_)
            | Statement::Grant(_)
            | Statement::Revoke(_)
            | Statement::Comment { .. }
            | Statement::Analyze(_)
            | Statement::Vacuum(_)
            | Statement::Lock(_)
            | Statement::LISTEN { .. }
            | Statement::NOTIFY { .. }
            | Statement::Call(_)
    ) || command.starts_with("CREATE ")
        || command.starts_with("ALTER ")
        || command.starts_with("DROP ")
        || command.starts_with("REFRESH ");
    if writes {
        Command::ReadOnly {
            command,
            table: written_table(statement),
        }
    } else {
        Command::Unsupported { command }
    }
}

/// The table an INSERT, UPDATE, DELETE or TRUNCATE writes, as written.
fn written_table(statement: &Statement) -> Option<String> {
    use datafusion::sql::sqlparser::ast::{FromTable, TableFactor, TableObject};
    let relation = |factor: &TableFactor| match factor {
        TableFactor::Table { name, .. } => Some(name.to_string()),
        _ => None,
    };
    match statement {
        Statement::Insert(insert) => match &insert.table {
            TableObject::TableName(name) => Some(name.to_string()),
            _ => None,
        },
        Statement::Update(update) => relation(&update.table.relation),
        Statement::Delete(delete) => match &delete.from {
            FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => {
                relation(&tables.first()?.relation)
            }
        },
        Statement::Truncate(truncate) => Some(truncate.table_names.first()?.name.to_string()),
        _ => None,
    }
}

fn show_name(variable: &[Ident]) -> String {
    let words: Vec<String> = variable.iter().map(|w| w.value.to_lowercase()).collect();
    match words.join(" ").as_str() {
        "time zone" => "timezone".to_owned(),
        "transaction isolation level" => "transaction_isolation".to_owned(),
        "session authorization" => "session_authorization".to_owned(),
        _ => variable
            .iter()
            .map(|w| w.value.to_lowercase())
            .collect::<Vec<_>>()
            .join("."),
    }
}

fn classify_set(set: &Set) -> Result<Command, PgError> {
    Ok(match set {
        Set::SingleAssignment {
            scope,
            variable,
            values,
            ..
        } => {
            let name = variable.to_string().to_lowercase();
            let scope = match scope {
                Some(ContextModifier::Local) => Scope::Local,
                _ => Scope::Session,
            };
            Command::Set {
                value: setting_value(&name, values)?,
                name,
                scope,
            }
        }
        Set::SetTimeZone { local, value } => Command::Set {
            name: "timezone".to_owned(),
            value: time_zone_value(value)?,
            scope: if *local { Scope::Local } else { Scope::Session },
        },
        Set::SetNames { charset_name, .. } => Command::Set {
            name: "client_encoding".to_owned(),
            value: Some(charset_name.value.clone()),
            scope: Scope::Session,
        },
        Set::SetNamesDefault {} => Command::Set {
            name: "client_encoding".to_owned(),
            value: None,
            scope: Scope::Session,
        },
        Set::SetTransaction { modes, session, .. } => Command::SetTransaction {
            modes: transaction_modes(modes),
            session: *session,
        },
        Set::SetRole { .. } => Command::Unsupported {
            command: "SET ROLE".to_owned(),
        },
        Set::SetSessionAuthorization(_) => Command::Unsupported {
            command: "SET SESSION AUTHORIZATION".to_owned(),
        },
        other => Command::Unsupported {
            command: other.to_string(),
        },
    })
}

/// The text of a `SET` value list as PostgreSQL stores it; `None` for
/// `DEFAULT`.
fn setting_value(name: &str, values: &[Expr]) -> Result<Option<String>, PgError> {
    if let [Expr::Identifier(ident)] = values
        && ident.quote_style.is_none()
        && ident.value.eq_ignore_ascii_case("default")
    {
        return Ok(None);
    }
    if values.len() > 1 && !settings::is_list(name) {
        return Err(PgError::new(
            sqlstate::SYNTAX_ERROR,
            format!("SET {name} takes only one argument"),
        ));
    }
    let quote = settings::is_list(name) && settings::quotes_elements(name);
    let words = values
        .iter()
        .map(|value| value_word(value, quote))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(words.join(", ")))
}

fn value_word(value: &Expr, quote: bool) -> Result<String, PgError> {
    Ok(match value {
        Expr::Identifier(ident) => match (&ident.quote_style, quote) {
            (Some(_), true) => quote_identifier(&ident.value),
            (Some(_), false) => ident.value.clone(),
            (None, _) => ident.value.to_lowercase(),
        },
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) if quote => quote_identifier(text),
            Value::SingleQuotedString(text) => text.clone(),
            Value::Number(number, _) => number.clone(),
            Value::Boolean(on) => on.to_string(),
            other => other.to_string(),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => format!("-{}", value_word(expr, quote)?),
        Expr::CompoundIdentifier(parts) => parts
            .iter()
            .map(|part| part.value.clone())
            .collect::<Vec<_>>()
            .join("."),
        other => {
            return Err(PgError::new(
                sqlstate::SYNTAX_ERROR,
                format!("syntax error at or near \"{other}\""),
            ));
        }
    })
}

/// `"$user"`, `public`: an identifier quoted only when it must be.
pub fn quote_identifier(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// `SET TIME ZONE` takes a name, a number of hours (east), an interval,
/// `LOCAL` or `DEFAULT`.
fn time_zone_value(value: &Expr) -> Result<Option<String>, PgError> {
    let hours = |text: &str| -> Result<Option<String>, PgError> {
        let hours: f64 = text.parse().map_err(|_| invalid_zone(text))?;
        Ok(Some(SessionZone::posix_for_east_seconds(
            (hours * 3600.0).round() as i32,
        )))
    };
    match value {
        Expr::Identifier(ident)
            if ident.quote_style.is_none()
                && (ident.value.eq_ignore_ascii_case("local")
                    || ident.value.eq_ignore_ascii_case("default")) =>
        {
            Ok(None)
        }
        Expr::Value(v) => match &v.value {
            Value::Number(number, _) => hours(number),
            Value::SingleQuotedString(text) => Ok(Some(text.clone())),
            other => Err(invalid_zone(&other.to_string())),
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(number, _) => hours(&format!("-{number}")),
                other => Err(invalid_zone(&other.to_string())),
            },
            other => Err(invalid_zone(&other.to_string())),
        },
        Expr::Interval(interval) => {
            let text = match interval.value.as_ref() {
                Expr::Value(v) => match &v.value {
                    Value::SingleQuotedString(text) => text.clone(),
                    other => other.to_string(),
                },
                other => other.to_string(),
            };
            let east = interval_seconds(&text).ok_or_else(|| invalid_zone(&text))?;
            Ok(Some(SessionZone::posix_for_east_seconds(east)))
        }
        Expr::Identifier(ident) => Ok(Some(ident.value.clone())),
        other => Err(invalid_zone(&other.to_string())),
    }
}

/// `+03:00`, `-05:30`, `3 hours`: seconds east for `SET TIME ZONE INTERVAL`.
fn interval_seconds(text: &str) -> Option<i32> {
    let text = text.trim();
    let (sign, rest) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    if let Some((hours, minutes)) = rest.split_once(':') {
        let hours: i32 = hours.trim().parse().ok()?;
        let minutes: i32 = minutes.split(':').next()?.trim().parse().ok()?;
        return Some(sign * (hours * 3600 + minutes * 60));
    }
    let number = rest.split_whitespace().next()?.parse::<f64>().ok()?;
    Some(sign * (number * 3600.0).round() as i32)
}

fn invalid_zone(text: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"TimeZone\": \"{text}\""),
    )
}

fn transaction_modes(modes: &[TransactionMode]) -> TransactionModes {
    let mut result = TransactionModes::default();
    for mode in modes {
        match mode {
            TransactionMode::AccessMode(TransactionAccessMode::ReadOnly) => {
                result.read_only = Some(true)
            }
            TransactionMode::AccessMode(TransactionAccessMode::ReadWrite) => {
                result.read_only = Some(false)
            }
            TransactionMode::IsolationLevel(level) => {
                result.isolation = Some(match level {
                    TransactionIsolationLevel::ReadUncommitted => "read uncommitted",
                    TransactionIsolationLevel::ReadCommitted => "read committed",
                    TransactionIsolationLevel::RepeatableRead
                    | TransactionIsolationLevel::Snapshot => "repeatable read",
                    TransactionIsolationLevel::Serializable => "serializable",
                })
            }
        }
    }
    result
}

fn classify_declare(
    declarations: &[datafusion::sql::sqlparser::ast::Declare],
) -> Result<Command, PgError> {
    let [declaration] = declarations else {
        return Err(unsupported_declare());
    };
    let (Some(DeclareType::Cursor), Some(query), [name]) = (
        &declaration.declare_type,
        &declaration.for_query,
        declaration.names.as_slice(),
    ) else {
        return Err(unsupported_declare());
    };
    Ok(Command::Declare(Box::new(Declare {
        name: name.value.clone(),
        query: query.as_ref().clone(),
        binary: declaration.binary == Some(true),
        scroll: declaration.scroll,
        hold: declaration.hold == Some(true),
    })))
}

fn unsupported_declare() -> PgError {
    PgError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        "pgaccel supports DECLARE only for one cursor over a query",
    )
}

fn motion(direction: &FetchDirection) -> Result<Motion, PgError> {
    let count = |value: &dyn std::fmt::Display| -> Result<i64, PgError> {
        value.to_string().parse::<i64>().map_err(|_| {
            PgError::new(
                sqlstate::SYNTAX_ERROR,
                format!("syntax error at or near \"{value}\""),
            )
        })
    };
    let signed = |n: i64| {
        if n < 0 {
            Motion::Backward(Some(n.unsigned_abs()))
        } else {
            Motion::Forward(Some(n as u64))
        }
    };
    Ok(match direction {
        FetchDirection::Count { limit } => signed(count(limit)?),
        FetchDirection::Next => Motion::Forward(Some(1)),
        FetchDirection::Prior => Motion::Backward(Some(1)),
        FetchDirection::First => Motion::Absolute(1),
        FetchDirection::Last => Motion::Absolute(-1),
        FetchDirection::Absolute { limit } => Motion::Absolute(count(limit)?),
        FetchDirection::Relative { limit } => Motion::Relative(count(limit)?),
        FetchDirection::All | FetchDirection::ForwardAll => Motion::Forward(None),
        FetchDirection::Forward { limit: None } => Motion::Forward(Some(1)),
        FetchDirection::Forward { limit: Some(limit) } => signed(count(limit)?),
        FetchDirection::BackwardAll => Motion::Backward(None),
        FetchDirection::Backward { limit: None } => Motion::Backward(Some(1)),
        FetchDirection::Backward { limit: Some(limit) } => match count(limit)? {
            n if n < 0 => Motion::Forward(Some(n.unsigned_abs())),
            n => Motion::Backward(Some(n as u64)),
        },
    })
}

fn classify_copy(
    source: &CopySource,
    to: bool,
    target: &CopyTarget,
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> Result<Command, PgError> {
    if !to {
        return Ok(Command::ReadOnly {
            command: "COPY FROM".to_owned(),
            table: match source {
                CopySource::Table { table_name, .. } => Some(table_name.to_string()),
                CopySource::Query(_) => None,
            },
        });
    }
    if !matches!(target, CopyTarget::Stdout) {
        return Err(PgError::new(
            sqlstate::INSUFFICIENT_PRIVILEGE,
            "must be superuser or have privileges of the pg_write_server_files role to COPY to a file",
        )
        .with_hint("Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone."));
    }
    let source = match source {
        CopySource::Query(query) => CopyFrom::Query(query.clone()),
        CopySource::Table {
            table_name,
            columns,
        } => CopyFrom::Table {
            name: table_name.to_string(),
            columns: columns.iter().map(|c| c.value.clone()).collect(),
        },
    };
    Ok(Command::Copy(Box::new(CopyTo {
        source,
        options: copy_options(options, legacy)?,
    })))
}

fn copy_options(
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> Result<CopyOptions, PgError> {
    let mut format = CopyFormat::Text;
    let mut header = false;
    let mut delimiter = None;
    let mut null = None;
    let mut quote = None;
    let mut escape = None;
    let mut force_quote: Option<Vec<String>> = None;
    let mut force_quote_all = false;
    for option in options {
        match option {
            CopyOption::Format(name) => {
                format = match name.value.to_lowercase().as_str() {
                    "text" => CopyFormat::Text,
                    "csv" => CopyFormat::Csv,
                    "binary" => CopyFormat::Binary,
                    other => {
                        return Err(PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            format!("COPY format \"{other}\" not recognized"),
                        ));
                    }
                }
            }
            CopyOption::Header(on) => header = *on,
            CopyOption::Delimiter(c) => delimiter = Some(*c),
            CopyOption::Null(text) => null = Some(text.clone()),
            CopyOption::Quote(c) => quote = Some(*c),
            CopyOption::Escape(c) => escape = Some(*c),
            CopyOption::ForceQuote(columns) => {
                force_quote = Some(columns.iter().map(|c| c.value.clone()).collect())
            }
            CopyOption::Freeze(_) | CopyOption::Encoding(_) => {}
            CopyOption::ForceNotNull(_) | CopyOption::ForceNull(_) => {
                return Err(PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    "COPY force not null and force null available only in COPY FROM",
                ));
            }
        }
    }
    for option in legacy {
        match option {
            CopyLegacyOption::Binary => format = CopyFormat::Binary,
            CopyLegacyOption::Delimiter(c) => delimiter = Some(*c),
            CopyLegacyOption::Null(text) => null = Some(text.clone()),
            CopyLegacyOption::Header => header = true,
            CopyLegacyOption::Csv(csv) => {
                format = CopyFormat::Csv;
                for option in csv {
                    match option {
                        CopyLegacyCsvOption::Header => header = true,
                        CopyLegacyCsvOption::Quote(c) => quote = Some(*c),
                        CopyLegacyCsvOption::Escape(c) => escape = Some(*c),
                        CopyLegacyCsvOption::ForceQuote(columns) => {
                            force_quote = Some(columns.iter().map(|c| c.value.clone()).collect())
                        }
                        CopyLegacyCsvOption::ForceNotNull(_) => {}
                    }
                }
            }
            other => {
                return Err(PgError::new(
                    sqlstate::SYNTAX_ERROR,
                    format!("option \"{other}\" not recognized"),
                ));
            }
        }
    }
    if force_quote
        .as_ref()
        .is_some_and(|c| c.iter().any(|c| c == "*"))
    {
        force_quote = None;
        force_quote_all = true;
    }
    let csv = format == CopyFormat::Csv;
    if format == CopyFormat::Binary && (delimiter.is_some() || null.is_some() || header) {
        return Err(PgError::new(
            sqlstate::SYNTAX_ERROR,
            "cannot specify DELIMITER, NULL or HEADER in BINARY mode",
        ));
    }
    if !csv && (quote.is_some() || escape.is_some() || force_quote.is_some() || force_quote_all) {
        return Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "COPY quote, escape and force quote are available only in CSV mode",
        ));
    }
    let quote = quote.unwrap_or('"');
    Ok(CopyOptions {
        format,
        header,
        delimiter: delimiter.unwrap_or(if csv { ',' } else { '\t' }),
        null: null.unwrap_or_else(|| if csv { String::new() } else { "\\N".to_owned() }),
        quote,
        escape: escape.unwrap_or(quote),
        force_quote,
        force_quote_all,
    })
}

/// The command name PostgreSQL reports for a refused statement
/// ("cannot execute INSERT in a read-only transaction").
fn command_name(statement: &Statement) -> String {
    let command = match statement {
        Statement::Insert(_) => "INSERT",
        Statement::Update(_) => "UPDATE",
        Statement::Delete(_) => "DELETE",
        Statement::Merge(_) => "MERGE",
        Statement::Truncate(_) => "TRUNCATE TABLE",
        Statement::CreateTable(_) => "CREATE TABLE",
        Statement::CreateView(_) => "CREATE VIEW",
        Statement::CreateIndex(_) => "CREATE INDEX",
        Statement::CreateSchema { .. } => "CREATE SCHEMA",
        Statement::AlterTable(_) => "ALTER TABLE",
        Statement::Grant(_) => "GRANT",
        Statement::Revoke(_) => "REVOKE",
        Statement::Comment { .. } => "COMMENT",
        Statement::Analyze(_) => "ANALYZE",
        Statement::Vacuum(_) => "VACUUM",
        Statement::Lock(_) => "LOCK TABLE",
        Statement::LISTEN { .. } => "LISTEN",
        Statement::NOTIFY { .. } => "NOTIFY",
        Statement::Call(_) => "CALL",
        Statement::Prepare { .. } => "PREPARE",
        Statement::Execute { .. } => "EXECUTE",
        Statement::Drop { object_type, .. } => {
            return format!("DROP {}", object_type.to_string().to_uppercase());
        }
        other => {
            // PostgreSQL names commands by their leading keywords (CREATE
            // FUNCTION, ALTER ROLE, ...).
            let text = other.to_string();
            let words: Vec<&str> = text.split_whitespace().take(2).collect();
            let two_words = words.first().is_some_and(|w| {
                matches!(
                    w.to_uppercase().as_str(),
                    "CREATE" | "ALTER" | "DROP" | "REFRESH"
                )
            });
            let take = if two_words { 2 } else { 1 };
            return words[..take.min(words.len())].join(" ").to_uppercase();
        }
    };
    command.to_owned()
}

/// `FETCH` and `MOVE`, read here rather than by the SQL parser, which
/// knows neither `MOVE` nor negative counts (`FETCH RELATIVE -2`, `MOVE -5
/// IN c`, as psycopg2 scrolls). `None` for any other statement.
pub fn cursor_command(text: &str) -> Option<Result<Command, PgError>> {
    let words: Vec<&str> = text
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect();
    let move_only = match words.first()?.to_ascii_lowercase().as_str() {
        "fetch" => false,
        "move" => true,
        _ => return None,
    };
    Some(
        fetch_words(&words[1..]).map(|(motion, cursor)| Command::Fetch {
            cursor,
            motion,
            move_only,
        }),
    )
}

fn fetch_words(words: &[&str]) -> Result<(Motion, String), PgError> {
    let syntax = |near: &str| {
        PgError::new(
            sqlstate::SYNTAX_ERROR,
            format!("syntax error at or near \"{near}\""),
        )
    };
    let lower: Vec<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
    let count = |index: usize| -> Result<i64, PgError> {
        let word = words.get(index).ok_or_else(|| syntax("end of input"))?;
        word.parse::<i64>().map_err(|_| syntax(word))
    };
    let number = |word: &str| word.parse::<i64>().ok();
    let signed = |n: i64| {
        if n < 0 {
            Motion::Backward(Some(n.unsigned_abs()))
        } else {
            Motion::Forward(Some(n as u64))
        }
    };
    let (motion, used) = match lower.first().map(String::as_str) {
        Some("next") => (Motion::Forward(Some(1)), 1),
        Some("prior") => (Motion::Backward(Some(1)), 1),
        Some("first") => (Motion::Absolute(1), 1),
        Some("last") => (Motion::Absolute(-1), 1),
        Some("absolute") => (Motion::Absolute(count(1)?), 2),
        Some("relative") => (Motion::Relative(count(1)?), 2),
        Some("all") => (Motion::Forward(None), 1),
        Some("forward") => match lower.get(1).map(String::as_str) {
            Some("all") => (Motion::Forward(None), 2),
            Some(word) if number(word).is_some() => (signed(count(1)?), 2),
            _ => (Motion::Forward(Some(1)), 1),
        },
        Some("backward") => match lower.get(1).map(String::as_str) {
            Some("all") => (Motion::Backward(None), 2),
            Some(word) if number(word).is_some() => (signed(-count(1)?), 2),
            _ => (Motion::Backward(Some(1)), 1),
        },
        Some(word) if number(word).is_some() => (signed(count(0)?), 1),
        _ => (Motion::Forward(Some(1)), 0),
    };
    let rest = &words[used..];
    let is_from = |word: &str| matches!(word.to_ascii_lowercase().as_str(), "from" | "in");
    let name = match rest {
        [from, name] if is_from(from) => name,
        [from] if is_from(from) => return Err(syntax("end of input")),
        [name] => name,
        [] => return Err(syntax("end of input")),
        [_, extra, ..] => return Err(syntax(extra)),
    };
    let name = match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => name.to_lowercase(),
    };
    Ok((motion, name))
}

/// Splits a query string into its statements at the semicolons outside
/// quotes, dollar quotes and comments; pieces with nothing but blanks and
/// comments are left out.
pub fn split_statements(sql: &str) -> Vec<&str> {
    let bytes = sql.as_bytes();
    let mut pieces = Vec::new();
    let (mut start, mut i) = (0, 0);
    let mut content = false;
    while i < bytes.len() {
        let skipped = skip_quoted(sql, i);
        if skipped > i {
            content |= !matches!(bytes[i], b'-' | b'/');
            i = skipped;
            continue;
        }
        match bytes[i] {
            b';' => {
                if content {
                    pieces.push(sql[start..i].trim());
                }
                start = i + 1;
                content = false;
            }
            byte if !byte.is_ascii_whitespace() => content = true,
            _ => {}
        }
        i += 1;
    }
    if content {
        pieces.push(sql[start..].trim());
    }
    pieces
}

/// The index after a quoted string, quoted identifier, dollar-quoted string
/// or comment starting at `i`; `i` itself when none starts there.
fn skip_quoted(sql: &str, i: usize) -> usize {
    let bytes = sql.as_bytes();
    let find = |from: usize, pattern: &str| {
        sql[from..]
            .find(pattern)
            .map_or(bytes.len(), |at| from + at + pattern.len())
    };
    match bytes[i] {
        b'\'' => {
            let escapes = i > 0
                && matches!(bytes[i - 1], b'e' | b'E')
                && (i < 2 || !bytes[i - 2].is_ascii_alphanumeric());
            let mut j = i + 1;
            while j < bytes.len() {
                match bytes[j] {
                    b'\\' if escapes => j += 2,
                    b'\'' if bytes.get(j + 1) == Some(&b'\'') => j += 2,
                    b'\'' => return j + 1,
                    _ => j += 1,
                }
            }
            bytes.len()
        }
        b'"' => {
            let mut j = i + 1;
            while j < bytes.len() {
                if bytes[j] == b'"' {
                    if bytes.get(j + 1) == Some(&b'"') {
                        j += 2;
                        continue;
                    }
                    return j + 1;
                }
                j += 1;
            }
            bytes.len()
        }
        b'-' if bytes.get(i + 1) == Some(&b'-') => find(i, "\n"),
        b'/' if bytes.get(i + 1) == Some(&b'*') => find(i + 2, "*/"),
        b'$' => {
            let tag_end = sql[i + 1..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map(|at| i + 1 + at);
            match tag_end {
                Some(end)
                    if bytes[end] == b'$' && !bytes.get(i + 1).is_some_and(u8::is_ascii_digit) =>
                {
                    let tag = &sql[i..=end];
                    find(end + 1, tag)
                }
                _ => i,
            }
        }
        _ => i,
    }
}

impl Command {
    /// Whether the statement is allowed in a failed transaction block
    /// (everything else gets 25P02 until the block ends).
    pub fn ends_failed_transaction(&self) -> bool {
        matches!(
            self,
            Command::Commit | Command::Rollback | Command::RollbackTo(_)
        )
    }

    /// The error for a statement pgaccel refuses, if this is one.
    pub fn refusal(&self) -> Option<PgError> {
        match self {
            Command::ReadOnly { command, .. } => Some(sqlstate::read_only(command)),
            Command::Unsupported { command } => Some(PgError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "pgaccel does not support {command}: it is a read-only replica that answers queries"
                ),
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn classify_sql(sql: &str) -> Command {
        let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        classify(&statements[0]).unwrap()
    }

    #[test]
    fn writes_are_refused_with_their_command_name() {
        for (sql, expected) in [
            ("INSERT INTO t VALUES (1)", "INSERT"),
            ("UPDATE t SET a = 1", "UPDATE"),
            ("DELETE FROM t", "DELETE"),
            ("TRUNCATE t", "TRUNCATE TABLE"),
            ("CREATE TABLE x (a int)", "CREATE TABLE"),
            ("DROP TABLE t", "DROP TABLE"),
            ("COPY t FROM STDIN", "COPY FROM"),
            (
                "CREATE FUNCTION f() RETURNS int AS 'select 1' LANGUAGE sql",
                "CREATE FUNCTION",
            ),
        ] {
            match classify_sql(sql) {
                Command::ReadOnly { command, .. } => assert_eq!(command, expected, "{sql}"),
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn statements_pgaccel_does_not_know_are_0a000() {
        let command = classify_sql("SET ROLE admin");
        assert_eq!(command.refusal().unwrap().code, "0A000");
    }

    #[test]
    fn session_statements_are_answered_here() {
        assert!(matches!(classify_sql("BEGIN"), Command::Begin(_)));
        assert!(matches!(classify_sql("COMMIT"), Command::Commit));
        assert!(matches!(classify_sql("SELECT 1"), Command::Query));
        match classify_sql("BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE") {
            Command::Begin(modes) => {
                assert_eq!(modes.isolation, Some("serializable"));
                assert_eq!(modes.read_only, Some(false));
            }
            other => panic!("{other:?}"),
        }
        match classify_sql("SET application_name = 'psql'") {
            Command::Set { name, value, scope } => {
                assert_eq!(
                    (name.as_str(), value.as_deref()),
                    ("application_name", Some("psql"))
                );
                assert_eq!(scope, Scope::Session);
            }
            other => panic!("{other:?}"),
        }
        match classify_sql("SET LOCAL search_path = \"$user\", public, 'My Schema'") {
            Command::Set { value, scope, .. } => {
                assert_eq!(value.as_deref(), Some("\"$user\", public, \"My Schema\""));
                assert_eq!(scope, Scope::Local);
            }
            other => panic!("{other:?}"),
        }
        for (sql, expected) in [
            ("SHOW server_version", "server_version"),
            ("SHOW TIME ZONE", "timezone"),
            ("SHOW TRANSACTION ISOLATION LEVEL", "transaction_isolation"),
            ("SHOW ALL", "all"),
        ] {
            match classify_sql(sql) {
                Command::Show(name) => assert_eq!(name, expected, "{sql}"),
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn time_zones_in_every_form() {
        let zone = |sql: &str| match classify_sql(sql) {
            Command::Set { value, .. } => value,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            zone("SET TIME ZONE 'Europe/Berlin'").as_deref(),
            Some("Europe/Berlin")
        );
        assert_eq!(zone("SET TIME ZONE 2").as_deref(), Some("<+02>-02"));
        assert_eq!(zone("SET TIME ZONE -5").as_deref(), Some("<-05>+05"));
        assert_eq!(zone("SET TIME ZONE LOCAL"), None);
        assert_eq!(
            zone("SET TIME ZONE INTERVAL '+03:00' HOUR TO MINUTE").as_deref(),
            Some("<+03>-03")
        );
    }

    #[test]
    fn fetch_and_move_in_every_form() {
        let motion = |sql: &str| match cursor_command(sql).unwrap().unwrap() {
            Command::Fetch {
                cursor,
                motion,
                move_only,
            } => (cursor, motion, move_only),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            motion("FETCH 5 FROM c"),
            ("c".into(), Motion::Forward(Some(5)), false)
        );
        assert_eq!(
            motion("MOVE -5 IN \"C\""),
            ("C".into(), Motion::Backward(Some(5)), true)
        );
        assert_eq!(
            motion("fetch relative -2 from c;"),
            ("c".into(), Motion::Relative(-2), false)
        );
        assert_eq!(
            motion("FETCH BACKWARD ALL c"),
            ("c".into(), Motion::Backward(None), false)
        );
        assert_eq!(
            motion("FETCH FORWARD -3 FROM c").1,
            Motion::Backward(Some(3))
        );
        assert_eq!(motion("FETCH c").1, Motion::Forward(Some(1)));
        assert!(cursor_command("SELECT 1").is_none());
        assert_eq!(
            cursor_command("FETCH 1 FROM").unwrap().unwrap_err().code,
            "42601"
        );
    }

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        assert_eq!(
            split_statements(
                "SELECT ';'; SELECT $$a;b$$, E'it\\'s;' -- c;\n ; /* x; */ SELECT \"a;b\";;"
            ),
            [
                "SELECT ';'",
                "SELECT $$a;b$$, E'it\\'s;' -- c;",
                "/* x; */ SELECT \"a;b\""
            ]
        );
        assert!(split_statements(" ; -- only a comment").is_empty());
        assert_eq!(
            split_statements("SELECT $1; SELECT 2"),
            ["SELECT $1", "SELECT 2"]
        );
    }

    #[test]
    fn cursors_and_copy() {
        match classify_sql("DECLARE c SCROLL CURSOR WITH HOLD FOR SELECT 1") {
            Command::Declare(declare) => {
                assert_eq!(declare.name, "c");
                assert_eq!(declare.scroll, Some(true));
                assert!(declare.hold);
            }
            other => panic!("{other:?}"),
        }
        for (sql, expected) in [
            ("FETCH 5 FROM c", Motion::Forward(Some(5))),
            ("FETCH NEXT FROM c", Motion::Forward(Some(1))),
            ("FETCH BACKWARD 2 FROM c", Motion::Backward(Some(2))),
            ("FETCH ALL FROM c", Motion::Forward(None)),
            ("FETCH LAST FROM c", Motion::Absolute(-1)),
        ] {
            match classify_sql(sql) {
                Command::Fetch { motion, .. } => assert_eq!(motion, expected, "{sql}"),
                other => panic!("{sql}: {other:?}"),
            }
        }
        match classify_sql("COPY (SELECT 1) TO STDOUT WITH (FORMAT csv, HEADER, FORCE_QUOTE (a))") {
            Command::Copy(copy) => {
                assert_eq!(copy.options.format, CopyFormat::Csv);
                assert!(copy.options.header);
                assert_eq!(copy.options.delimiter, ',');
                assert_eq!(copy.options.force_quote, Some(vec!["a".to_owned()]));
            }
            other => panic!("{other:?}"),
        }
        match classify_sql("COPY t TO STDOUT") {
            Command::Copy(copy) => {
                assert_eq!(copy.options.format, CopyFormat::Text);
                assert_eq!(copy.options.null, "\\N");
            }
            other => panic!("{other:?}"),
        }
    }
}
