//! Statement hooks: what the wire layer answers itself before anything is
//! planned — transaction control (accepted as no-ops on a read-only replica),
//! `SET` / `SHOW`, `DISCARD`, and the rejection of every write or DDL with
//! SQLSTATE 25006, as a hot standby does.

use datafusion::sql::sqlparser::ast::{Set, Statement};

/// What the wire layer does with one parsed statement.
#[derive(Debug, Clone)]
pub enum Command {
    /// Planned and executed by DataFusion.
    Query,
    Begin,
    Commit,
    Rollback,
    /// `SET name = value` (per connection).
    Set {
        name: String,
        value: String,
    },
    /// `SHOW name`.
    Show {
        name: String,
    },
    /// Other session statements that need no work here (`DISCARD`, `RESET`,
    /// `SET TRANSACTION ...`, savepoints); the tag to answer with.
    Accepted {
        tag: &'static str,
    },
    /// A write or DDL, refused with 25006; the command name PostgreSQL uses.
    ReadOnly {
        command: String,
    },
}

pub fn classify(statement: &Statement) -> Command {
    match statement {
        Statement::Query(_) | Statement::Explain { .. } | Statement::ExplainTable { .. } => {
            Command::Query
        }
        Statement::StartTransaction { .. } => Command::Begin,
        Statement::Commit { .. } => Command::Commit,
        Statement::Rollback { .. } => Command::Rollback,
        Statement::Set(set) => classify_set(set),
        Statement::ShowVariable { variable } => Command::Show {
            name: variable
                .iter()
                .map(|ident| ident.value.to_lowercase())
                .collect::<Vec<_>>()
                .join(" "),
        },
        Statement::Discard { .. } => Command::Accepted { tag: "DISCARD ALL" },
        Statement::Reset(_) => Command::Accepted { tag: "RESET" },
        Statement::Savepoint { .. } => Command::Accepted { tag: "SAVEPOINT" },
        Statement::ReleaseSavepoint { .. } => Command::Accepted { tag: "RELEASE" },
        other => Command::ReadOnly {
            command: command_name(other),
        },
    }
}

fn classify_set(set: &Set) -> Command {
    match set {
        Set::SingleAssignment {
            variable, values, ..
        } => Command::Set {
            name: variable.to_string().to_lowercase(),
            value: values
                .iter()
                .map(|value| value.to_string().trim_matches('\'').to_owned())
                .collect::<Vec<_>>()
                .join(", "),
        },
        Set::SetTimeZone { value, .. } => Command::Set {
            name: "timezone".to_owned(),
            value: value.to_string().trim_matches('\'').to_owned(),
        },
        _ => Command::Accepted { tag: "SET" },
    }
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
        Statement::Copy { .. } => "COPY FROM",
        Statement::Drop { object_type, .. } => {
            return format!("DROP {}", object_type.to_string().to_uppercase());
        }
        other => {
            // Fall back to the statement's leading keywords, as PostgreSQL
            // names commands by them (CREATE FUNCTION, ALTER ROLE, ...).
            let text = other.to_string();
            return text
                .split_whitespace()
                .take(2)
                .collect::<Vec<_>>()
                .join(" ")
                .to_uppercase();
        }
    };
    command.to_owned()
}

/// Defaults reported by `SHOW` for settings a client has not `SET`.
pub fn default_setting(name: &str) -> Option<&'static str> {
    Some(match name {
        "server_version" => super::SERVER_VERSION,
        "server_version_num" => super::SERVER_VERSION_NUM,
        "server_encoding" | "client_encoding" => "UTF8",
        "standard_conforming_strings" => "on",
        "timezone" => "UTC",
        "datestyle" => "ISO, MDY",
        "intervalstyle" => "postgres",
        "search_path" => "\"$user\", public",
        "transaction_isolation" | "default_transaction_isolation" => "read committed",
        "transaction_read_only" | "default_transaction_read_only" | "in_hot_standby" => "on",
        "integer_datetimes" => "on",
        "max_identifier_length" => "63",
        "is_superuser" => "off",
        "application_name" => "",
        "statement_timeout" | "lock_timeout" | "idle_in_transaction_session_timeout" => "0",
        "extra_float_digits" => "1",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn classify_sql(sql: &str) -> Command {
        let statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        classify(&statements[0])
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
        ] {
            match classify_sql(sql) {
                Command::ReadOnly { command } => assert_eq!(command, expected, "{sql}"),
                other => panic!("{sql}: {other:?}"),
            }
        }
    }

    #[test]
    fn session_statements_are_answered_here() {
        assert!(matches!(classify_sql("BEGIN"), Command::Begin));
        assert!(matches!(classify_sql("COMMIT"), Command::Commit));
        assert!(matches!(classify_sql("SELECT 1"), Command::Query));
        match classify_sql("SET application_name = 'psql'") {
            Command::Set { name, value } => assert_eq!(
                (name.as_str(), value.as_str()),
                ("application_name", "psql")
            ),
            other => panic!("{other:?}"),
        }
        match classify_sql("SHOW server_version") {
            Command::Show { name } => assert_eq!(name, "server_version"),
            other => panic!("{other:?}"),
        }
    }
}
