//! One session's run-time settings: every setting PostgreSQL 16 has (see
//! [`catalog`]), pgaccel's own server values, and what the client changed
//! with `SET`, `SET LOCAL`, `set_config()` or its startup packet.
//!
//! A setting either takes effect in pgaccel ([`takes_effect`]: the time
//! zone, date and interval styles, float digits, search path, statement
//! timeout, ...) or is accepted and kept, so `SHOW` returns it, with a
//! NOTICE saying it changes nothing here. Values are validated with
//! PostgreSQL's errors either way. Transactions save and restore the whole
//! state ([`Snapshot`]), so a rolled-back `SET` is undone, as in PostgreSQL.

pub mod catalog;
pub mod datestyle;
pub mod zone;

use std::collections::BTreeMap;
use std::sync::Arc;

use catalog::{Context, Definition};
pub use datestyle::DateStyle;
pub use zone::SessionZone;

use super::error::{Notice, PgError};
use super::sqlstate;

/// The settings PostgreSQL 16 reports to the client in ParameterStatus
/// whenever they change (`GUC_REPORT`).
pub const REPORTED: [&str; 14] = [
    "application_name",
    "client_encoding",
    "DateStyle",
    "default_transaction_read_only",
    "in_hot_standby",
    "integer_datetimes",
    "IntervalStyle",
    "is_superuser",
    "scram_iterations",
    "server_encoding",
    "server_version",
    "session_authorization",
    "standard_conforming_strings",
    "TimeZone",
];

/// Settings whose value changes what pgaccel does. Any other setting is
/// accepted and kept, with a NOTICE that it has no effect here.
pub fn takes_effect(name: &str) -> bool {
    matches!(
        name,
        "timezone"
            | "datestyle"
            | "intervalstyle"
            | "extra_float_digits"
            | "search_path"
            | "statement_timeout"
            | "application_name"
            | "client_encoding"
            | "bytea_output"
            | "client_min_messages"
            | "idle_in_transaction_session_timeout"
            | "idle_session_timeout"
            | "transaction_isolation"
            | "default_transaction_isolation"
            | "transaction_deferrable"
            | "default_transaction_deferrable"
            | "standard_conforming_strings"
    )
}

/// Values that belong to this pgaccel rather than to PostgreSQL's defaults.
#[derive(Debug, Clone, Default)]
pub struct ServerValues {
    values: BTreeMap<String, String>,
}

impl ServerValues {
    /// pgaccel's values for a server listening on `port`.
    pub fn new(port: u16, max_connections: usize) -> Self {
        let fixed = [
            ("server_version", crate::query::SERVER_VERSION.to_owned()),
            (
                "server_version_num",
                crate::query::SERVER_VERSION_NUM.to_owned(),
            ),
            ("port", port.to_string()),
            ("max_connections", max_connections.to_string()),
            ("listen_addresses", "localhost".to_owned()),
            ("timezone", "UTC".to_owned()),
            ("log_timezone", "UTC".to_owned()),
            ("client_encoding", "UTF8".to_owned()),
            ("server_encoding", "UTF8".to_owned()),
            ("lc_messages", "C.UTF-8".to_owned()),
            ("lc_monetary", "C.UTF-8".to_owned()),
            ("lc_numeric", "C.UTF-8".to_owned()),
            ("lc_time", "C.UTF-8".to_owned()),
            ("in_hot_standby", "on".to_owned()),
            ("hot_standby", "on".to_owned()),
            ("default_transaction_read_only", "on".to_owned()),
            ("transaction_read_only", "on".to_owned()),
            ("is_superuser", "off".to_owned()),
            ("wal_level", "replica".to_owned()),
            (
                "default_text_search_config",
                "pg_catalog.english".to_owned(),
            ),
        ];
        ServerValues {
            values: fixed
                .into_iter()
                .map(|(name, value)| (name.to_owned(), value))
                .collect(),
        }
    }

    /// `statement_timeout` for every session that does not set its own
    /// (`runtime.query.statement_timeout`, as in postgresql.conf); zero is
    /// none.
    pub fn with_statement_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.values.insert(
            "statement_timeout".to_owned(),
            timeout.as_millis().to_string(),
        );
        self
    }
}

/// The values a transaction or savepoint restores when rolled back.
#[derive(Debug, Clone)]
pub struct Snapshot {
    session: BTreeMap<String, String>,
    local: BTreeMap<String, String>,
}

/// One session's settings.
#[derive(Debug, Clone)]
pub struct Settings {
    server: Arc<ServerValues>,
    /// Values set for the session, by lowercase name (custom `a.b`
    /// placeholders too).
    session: BTreeMap<String, String>,
    /// `SET LOCAL` values, dropped when the transaction ends.
    local: BTreeMap<String, String>,
    /// Counts the changes to `session` and `local`, so that what is derived
    /// from them is worked out again only when one may have changed.
    generation: u64,
}

/// How a `SET` should be applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Session,
    /// `SET LOCAL` / `set_config(..., true)`: until the transaction ends.
    Local,
}

impl Settings {
    pub fn new(server: Arc<ServerValues>) -> Self {
        Settings {
            server,
            session: BTreeMap::new(),
            local: BTreeMap::new(),
            generation: 0,
        }
    }

    /// A number that changes whenever a value may have changed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The value of `name` in its stored form; `42704` for a setting that
    /// does not exist (a custom `a.b` one included, until it is set).
    pub fn get(&self, name: &str) -> Result<String, PgError> {
        let key = lowercase(name);
        let key = key.as_ref();
        if let Some(value) = self.local.get(key).or_else(|| self.session.get(key)) {
            return Ok(value.clone());
        }
        // Outside a transaction the transaction's characteristics are the
        // defaults for the next one.
        if let Some(default) = key.strip_prefix("transaction_")
            && matches!(default, "isolation" | "deferrable")
        {
            return self.get(&format!("default_{key}"));
        }
        if let Some(value) = self.server.values.get(key) {
            return Ok(value.clone());
        }
        catalog::lookup(key)
            .map(|definition| definition.boot.to_owned())
            .ok_or_else(|| unrecognized(name))
    }

    /// `SHOW name`: the column name PostgreSQL gives it and the value with
    /// its unit.
    pub fn show(&self, name: &str) -> Result<(String, String), PgError> {
        let value = self.get(name)?;
        Ok(match catalog::lookup(name) {
            Some(definition) => (definition.name.to_owned(), definition.display(&value)),
            None => (name.to_lowercase(), value),
        })
    }

    /// `SHOW ALL`: name, value and description of every setting, custom
    /// ones included.
    pub fn show_all(&self) -> Vec<(String, String, String)> {
        let mut rows: Vec<(String, String, String)> = catalog::all()
            .iter()
            .map(|definition| {
                let value = self.get(definition.name).unwrap_or_default();
                (
                    definition.name.to_owned(),
                    definition.display(&value),
                    definition.description.to_owned(),
                )
            })
            .collect();
        for (name, value) in self.session.iter().chain(&self.local) {
            if catalog::lookup(name).is_none() && !rows.iter().any(|row| &row.0 == name) {
                rows.push((name.clone(), value.clone(), String::new()));
            }
        }
        rows.sort_by_key(|row| row.0.to_lowercase());
        rows
    }

    /// `SET name = value` (`None`: `DEFAULT`). Returns the notices to send.
    pub fn set(
        &mut self,
        name: &str,
        value: Option<&str>,
        scope: Scope,
    ) -> Result<Vec<Notice>, PgError> {
        self.generation += 1;
        let key = name.to_lowercase();
        let Some(definition) = catalog::lookup(&key) else {
            return self.set_custom(name, &key, value, scope);
        };
        check_context(definition)?;
        let stored = match value {
            Some(value) => self.validate(definition, name, value)?,
            None => None,
        };
        let map = match scope {
            Scope::Session => {
                // A session value replaces any transaction-local one.
                self.local.remove(&key);
                &mut self.session
            }
            Scope::Local => &mut self.local,
        };
        match stored {
            Some(stored) => map.insert(key.clone(), stored),
            None => map.remove(&key),
        };
        Ok(notices_for(definition, &key, value))
    }

    fn set_custom(
        &mut self,
        name: &str,
        key: &str,
        value: Option<&str>,
        scope: Scope,
    ) -> Result<Vec<Notice>, PgError> {
        // PostgreSQL keeps any two-part name as a placeholder for an
        // extension's setting; a one-part name must exist.
        if !key.contains('.') {
            return Err(unrecognized(name));
        }
        let map = match scope {
            Scope::Session => &mut self.session,
            Scope::Local => &mut self.local,
        };
        map.insert(key.to_owned(), value.unwrap_or_default().to_owned());
        Ok(Vec::new())
    }

    /// The stored form of `value` for `definition`, after the checks
    /// PostgreSQL makes; `None` stores nothing (the default applies).
    fn validate(
        &self,
        definition: &Definition,
        written: &str,
        value: &str,
    ) -> Result<Option<String>, PgError> {
        let key = definition.name.to_lowercase();
        let stored = match key.as_str() {
            "timezone" => match SessionZone::parse(value) {
                Some((_, spelled)) => spelled,
                None => return Err(definition.invalid(value)),
            },
            "datestyle" => DateStyle::parse(value, self.date_style())?.spelled(),
            "client_encoding" => client_encoding(definition, value)?,
            "application_name" => printable_name(value),
            "standard_conforming_strings" => {
                let stored = definition.parse_as(written, value)?;
                if stored == "off" {
                    return Err(PgError::new(
                        sqlstate::FEATURE_NOT_SUPPORTED,
                        "pgaccel supports only standard_conforming_strings = on",
                    ));
                }
                stored
            }
            "transaction_read_only" | "default_transaction_read_only" => {
                // Every transaction on a read replica is read-only; asking for
                // read-write is accepted (pools do) and changes nothing.
                definition.parse_as(written, value)?;
                return Ok(None);
            }
            _ => definition.parse_as(written, value)?,
        };
        Ok(Some(stored))
    }

    /// `RESET ALL`: every session value back to its default.
    pub fn reset_all(&mut self) {
        self.generation += 1;
        self.session.clear();
        self.local.clear();
    }

    /// `session_authorization`: the user the client connected as.
    pub fn set_session_authorization(&mut self, user: &str) {
        self.generation += 1;
        self.session
            .insert("session_authorization".to_owned(), user.to_owned());
    }

    /// Applies the settings of a startup packet (and its `options`).
    pub fn apply_startup<'a>(
        &mut self,
        parameters: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Result<(), PgError> {
        for (name, value) in parameters {
            match name {
                "user" | "database" | "replication" => {}
                "options" => {
                    for (name, value) in command_line_options(value)? {
                        self.set_at_startup(&name, &value)?;
                    }
                }
                name => self.set_at_startup(name, value)?,
            }
        }
        Ok(())
    }

    fn set_at_startup(&mut self, name: &str, value: &str) -> Result<(), PgError> {
        self.generation += 1;
        let key = name.to_lowercase();
        match catalog::lookup(&key) {
            // Backend settings may be given at connection start only.
            Some(definition) if matches!(definition.context, Context::Backend) => {
                let stored = definition.parse(value)?;
                self.session.insert(key, stored);
                Ok(())
            }
            _ => self.set(name, Some(value), Scope::Session).map(|_| ()),
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            session: self.session.clone(),
            local: self.local.clone(),
        }
    }

    pub fn restore(&mut self, snapshot: Snapshot) {
        self.generation += 1;
        self.session = snapshot.session;
        self.local = snapshot.local;
    }

    /// Ends a transaction that committed: `SET LOCAL` values are dropped.
    pub fn end_transaction(&mut self) {
        if !self.local.is_empty() {
            self.generation += 1;
            self.local.clear();
        }
    }

    /// The reported settings and their current values.
    pub fn reported(&self) -> Vec<(&'static str, String)> {
        REPORTED
            .iter()
            .map(|name| (*name, self.show(name).map(|(_, v)| v).unwrap_or_default()))
            .collect()
    }

    pub fn time_zone(&self) -> SessionZone {
        self.get("timezone")
            .ok()
            .and_then(|text| SessionZone::parse(&text))
            .map_or(SessionZone::UTC, |(zone, _)| zone)
    }

    pub fn date_style(&self) -> DateStyle {
        self.get("datestyle")
            .ok()
            .and_then(|text| DateStyle::parse(&text, DateStyle::default()).ok())
            .unwrap_or_default()
    }

    /// An integer setting (`extra_float_digits`, timeouts in ms).
    pub fn integer(&self, name: &str) -> i64 {
        self.get(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or_default()
    }

    /// The schemas of `search_path`, in order, unquoted (`$user` kept as
    /// written).
    pub fn search_path(&self) -> Vec<String> {
        split_list(&self.get("search_path").unwrap_or_default())
    }
}

/// How `IntervalStyle` prints intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalStyle {
    Postgres,
    PostgresVerbose,
    SqlStandard,
    Iso8601,
}

/// The settings that change how values are printed in text.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub zone: SessionZone,
    pub date_style: DateStyle,
    pub interval_style: IntervalStyle,
    pub extra_float_digits: i64,
    /// `bytea_output = hex` (else `escape`).
    pub bytea_hex: bool,
}

impl Default for Output {
    fn default() -> Self {
        Output {
            zone: SessionZone::UTC,
            date_style: DateStyle::default(),
            interval_style: IntervalStyle::Postgres,
            extra_float_digits: 1,
            bytea_hex: true,
        }
    }
}

impl Settings {
    /// How this session prints values.
    pub fn output(&self) -> Output {
        let interval_style = match self.get("intervalstyle").unwrap_or_default().as_str() {
            "postgres_verbose" => IntervalStyle::PostgresVerbose,
            "sql_standard" => IntervalStyle::SqlStandard,
            "iso_8601" => IntervalStyle::Iso8601,
            _ => IntervalStyle::Postgres,
        };
        Output {
            zone: self.time_zone(),
            date_style: self.date_style(),
            interval_style,
            extra_float_digits: self.integer("extra_float_digits"),
            bytea_hex: self.get("bytea_output").is_ok_and(|v| v == "hex"),
        }
    }
}

/// `name` in lower case, copied only when it is not already: settings are
/// looked up by name on every statement.
pub(super) fn lowercase(name: &str) -> std::borrow::Cow<'_, str> {
    if name.bytes().any(|byte| byte.is_ascii_uppercase()) || !name.is_ascii() {
        std::borrow::Cow::Owned(name.to_lowercase())
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// `unrecognized configuration parameter "x"` (42704).
pub fn unrecognized(name: &str) -> PgError {
    PgError::new(
        sqlstate::UNDEFINED_OBJECT,
        format!("unrecognized configuration parameter \"{name}\""),
    )
}

/// PostgreSQL's errors for a setting that cannot be changed in a session.
fn check_context(definition: &Definition) -> Result<(), PgError> {
    let name = definition.name;
    let (code, message) = match definition.context {
        Context::User => return Ok(()),
        Context::Internal => (
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be changed"),
        ),
        Context::Postmaster => (
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be changed without restarting the server"),
        ),
        Context::Sighup => (
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be changed now"),
        ),
        Context::Backend | Context::SuperuserBackend => (
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be set after connection start"),
        ),
        Context::Superuser => (
            sqlstate::INSUFFICIENT_PRIVILEGE,
            format!("permission denied to set parameter \"{name}\""),
        ),
    };
    Err(PgError::new(code, message))
}

fn notices_for(definition: &Definition, key: &str, value: Option<&str>) -> Vec<Notice> {
    if takes_effect(key) {
        return Vec::new();
    }
    if matches!(
        key,
        "transaction_read_only" | "default_transaction_read_only"
    ) && value.and_then(catalog::parse_bool) == Some(false)
    {
        return vec![Notice::info(
            "00000",
            format!(
                "parameter \"{}\" stays on: pgaccel is a read replica, so every transaction is read-only",
                definition.name
            ),
        )];
    }
    vec![Notice::info(
        "00000",
        format!(
            "parameter \"{}\" is accepted but has no effect in pgaccel",
            definition.name
        ),
    )]
}

/// pgaccel writes UTF-8 only; other encodings PostgreSQL knows are refused
/// rather than sent wrongly.
fn client_encoding(definition: &Definition, value: &str) -> Result<String, PgError> {
    let normalized: String = value
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_uppercase();
    const OTHERS: [&str; 16] = [
        "SQLASCII", "LATIN1", "LATIN2", "LATIN9", "WIN1252", "WIN1251", "WIN1250", "EUCJP",
        "EUCKR", "EUCCN", "SJIS", "BIG5", "GBK", "KOI8R", "ISO88591", "UHC",
    ];
    match normalized.as_str() {
        "UTF8" | "UNICODE" => Ok("UTF8".to_owned()),
        other if OTHERS.contains(&other) => Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("pgaccel sends UTF8 only; client_encoding \"{value}\" is not supported"),
        )),
        _ => Err(definition.invalid(value)),
    }
}

/// PostgreSQL keeps application names to 63 bytes of printable ASCII,
/// replacing anything else with `?`.
fn printable_name(value: &str) -> String {
    let mut out: String = value
        .chars()
        .map(|c| if (' '..='~').contains(&c) { c } else { '?' })
        .collect();
    out.truncate(63);
    out
}

/// `-c name=value` and `--name=value` words of the startup `options`.
fn command_line_options(options: &str) -> Result<Vec<(String, String)>, PgError> {
    let words = split_options(options);
    let mut settings = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        let assignment = if word == "-c" {
            words.next().unwrap_or_default()
        } else if let Some(rest) = word.strip_prefix("-c") {
            rest.to_owned()
        } else if let Some(rest) = word.strip_prefix("--") {
            rest.to_owned()
        } else {
            return Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!("invalid command-line argument for server process: {word}"),
            ));
        };
        let Some((name, value)) = assignment.split_once('=') else {
            return Err(PgError::new(
                sqlstate::SYNTAX_ERROR,
                format!("-c {assignment} requires a value"),
            ));
        };
        settings.push((name.replace('-', "_"), value.to_owned()));
    }
    Ok(settings)
}

/// Splits `options` at unescaped spaces (`\ ` is a space inside a word).
fn split_options(options: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' | '\t' if !current.is_empty() => words.push(std::mem::take(&mut current)),
            ' ' | '\t' => {}
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// The elements of a list setting (`"$user", public`), unquoted.
pub fn split_list(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => items.push(std::mem::take(&mut current)),
            c if c.is_whitespace() && !quoted => {}
            c if quoted => current.push(c),
            c => current.extend(c.to_lowercase()),
        }
    }
    items.push(current);
    items.retain(|item| !item.is_empty());
    items
}

/// Whether `SET name` takes a list of values (`SET search_path = a, b`).
pub fn is_list(name: &str) -> bool {
    matches!(
        name.to_lowercase().as_str(),
        "search_path"
            | "datestyle"
            | "temp_tablespaces"
            | "session_preload_libraries"
            | "local_preload_libraries"
    )
}

/// Whether a list setting's elements are identifiers, quoted when they
/// need it (`"$user", public`), rather than plain words.
pub fn quotes_elements(name: &str) -> bool {
    !name.eq_ignore_ascii_case("datestyle")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings::new(Arc::new(ServerValues::new(15432, 100)))
    }

    #[test]
    fn show_uses_postgres_names_and_pgaccel_values() {
        let settings = settings();
        assert_eq!(
            settings.show("timezone").unwrap(),
            ("TimeZone".to_owned(), "UTC".to_owned())
        );
        assert_eq!(
            settings.show("transaction_isolation").unwrap().1,
            "read committed"
        );
        assert_eq!(
            settings.show("server_version").unwrap().1,
            crate::query::SERVER_VERSION
        );
        assert_eq!(settings.show("port").unwrap().1, "15432");
        assert_eq!(settings.get("nope").unwrap_err().code, "42704");
        assert!(settings.show_all().len() > 350);
    }

    #[test]
    fn the_generation_moves_with_every_change_and_only_then() {
        let mut settings = settings();
        let start = settings.generation();
        // A statement outside a transaction ends one with nothing local.
        settings.end_transaction();
        assert_eq!(settings.generation(), start);
        assert_eq!(settings.get("DateStyle").unwrap(), "ISO, MDY");
        settings
            .set("TimeZone", Some("Europe/Paris"), Scope::Local)
            .unwrap();
        let local = settings.generation();
        assert_ne!(local, start);
        assert_eq!(settings.get("TIMEZONE").unwrap(), "Europe/Paris");
        settings.end_transaction();
        assert_ne!(settings.generation(), local);
        assert_eq!(settings.get("timezone").unwrap(), "UTC");
        let before = settings.generation();
        settings.reset_all();
        assert_ne!(settings.generation(), before);
    }

    #[test]
    fn set_validates_and_notices() {
        let mut settings = settings();
        assert!(
            settings
                .set("TimeZone", Some("europe/berlin"), Scope::Session)
                .unwrap()
                .is_empty()
        );
        assert_eq!(settings.show("timezone").unwrap().1, "Europe/Berlin");
        let notices = settings
            .set("work_mem", Some("64MB"), Scope::Session)
            .unwrap();
        assert_eq!(
            notices[0].message,
            "parameter \"work_mem\" is accepted but has no effect in pgaccel"
        );
        assert_eq!(settings.show("work_mem").unwrap().1, "64MB");
        let error = settings
            .set("shared_buffers", Some("1GB"), Scope::Session)
            .unwrap_err();
        assert_eq!(error.code, "55P02");
        assert_eq!(
            settings
                .set("foo", Some("1"), Scope::Session)
                .unwrap_err()
                .code,
            "42704"
        );
        settings
            .set("my.setting", Some("x"), Scope::Session)
            .unwrap();
        assert_eq!(settings.get("my.setting").unwrap(), "x");
        let error = settings
            .set("TimeZone", Some("Mars/Base"), Scope::Session)
            .unwrap_err();
        assert_eq!(
            error.message,
            "invalid value for parameter \"TimeZone\": \"Mars/Base\""
        );
        assert_eq!(
            settings
                .set("log_statement", Some("all"), Scope::Session)
                .unwrap_err()
                .code,
            "42501"
        );
    }

    #[test]
    fn local_values_and_snapshots() {
        let mut settings = settings();
        let before = settings.snapshot();
        settings
            .set("search_path", Some("a, b"), Scope::Session)
            .unwrap();
        settings
            .set("statement_timeout", Some("5s"), Scope::Local)
            .unwrap();
        assert_eq!(settings.integer("statement_timeout"), 5000);
        assert_eq!(settings.search_path(), ["a", "b"]);
        settings.end_transaction();
        assert_eq!(settings.integer("statement_timeout"), 0);
        settings.restore(before);
        assert_eq!(settings.search_path(), ["$user", "public"]);
    }

    #[test]
    fn startup_options_are_applied() {
        let mut settings = settings();
        settings
            .apply_startup(
                [
                    ("user", "app"),
                    ("DateStyle", "ISO"),
                    ("options", "-c search_path=shop -c statement_timeout=1s"),
                ]
                .into_iter(),
            )
            .unwrap();
        assert_eq!(settings.search_path(), ["shop"]);
        assert_eq!(settings.integer("statement_timeout"), 1000);
        assert!(
            settings
                .apply_startup([("TimeZone", "nowhere")].into_iter())
                .is_err()
        );
    }
}
