//! Where a dataset's rows come from: the `from` reference (`postgres:[schema.]table`,
//! `mysql:[db.]table`, `duckdb:table`, `sqlite:table`, `file:path`, `http(s)://url`) and
//! the `params` each source kind accepts, with their defaults. Parameters of another
//! source kind are errors, never ignored.

use std::path::{Path, PathBuf};

use super::raw::{RawParams, Scalar};
use super::secret::Secret;
use super::values::{Values, yaml_enum};

/// The table a dataset reads, by source kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    Postgres {
        schema: Option<String>,
        table: String,
    },
    Mysql {
        database: Option<String>,
        table: String,
    },
    Duckdb {
        table: String,
    },
    Sqlite {
        table: String,
    },
    File {
        path: PathBuf,
    },
    Http {
        url: String,
    },
}

impl SourceRef {
    /// The source kind as it appears before the `:` in `from`.
    pub fn kind(&self) -> &'static str {
        match self {
            SourceRef::Postgres { .. } => "postgres",
            SourceRef::Mysql { .. } => "mysql",
            SourceRef::Duckdb { .. } => "duckdb",
            SourceRef::Sqlite { .. } => "sqlite",
            SourceRef::File { .. } => "file",
            SourceRef::Http { .. } => "http",
        }
    }

    /// The `params` keys this source kind accepts.
    fn allowed_params(&self) -> &'static [&'static str] {
        match self {
            SourceRef::Postgres { .. } => &[
                "pg_host",
                "pg_port",
                "pg_db",
                "pg_user",
                "pg_pass",
                "pg_sslmode",
                "pg_connection_string",
            ],
            SourceRef::Mysql { .. } => &[
                "mysql_host",
                "mysql_tcp_port",
                "mysql_db",
                "mysql_user",
                "mysql_pass",
                "mysql_sslmode",
                "mysql_connection_string",
            ],
            SourceRef::Duckdb { .. } => &["duckdb_open"],
            SourceRef::Sqlite { .. } => &["sqlite_file"],
            SourceRef::File { .. } => &["file_format"],
            SourceRef::Http { .. } => &[],
        }
    }
}

/// Connection settings for the source, by kind.
#[derive(Debug, Clone)]
pub enum SourceParams {
    Postgres(PostgresParams),
    Mysql(MysqlParams),
    Duckdb { open: PathBuf },
    Sqlite { file: PathBuf },
    File { format: FileFormat },
    Http,
}

/// `pg_*` parameters. With `pg_connection_string` the other keys are rejected (the string
/// carries them), and `db`/`user` are left empty.
#[derive(Debug, Clone)]
pub struct PostgresParams {
    pub host: String,
    pub port: u16,
    pub db: String,
    pub user: String,
    pub pass: Option<Secret>,
    pub sslmode: SslMode,
    pub connection_string: Option<Secret>,
}

/// `mysql_*` parameters; same rules as `PostgresParams`, but the database is optional
/// because `from: mysql:db.table` may name it.
#[derive(Debug, Clone)]
pub struct MysqlParams {
    pub host: String,
    pub port: u16,
    pub db: Option<String>,
    pub user: String,
    pub pass: Option<Secret>,
    pub sslmode: SslMode,
    pub connection_string: Option<Secret>,
}

yaml_enum! {
    /// TLS toward the source (libpq's names, also used for MySQL).
    pub enum SslMode {
        Disable => "disable",
        Prefer => "prefer",
        Require => "require",
        VerifyCa => "verify-ca",
        VerifyFull => "verify-full",
    }
}

yaml_enum! {
    /// How a `file:` source is read.
    pub enum FileFormat {
        Parquet => "parquet",
        Csv => "csv",
        Json => "json",
        /// A published acceleration snapshot location (see seeds/snapshot-refresh-mode).
        Snapshot => "snapshot",
    }
}

const FROM_PREFIXES: &str = "postgres:, mysql:, duckdb:, sqlite:, file:, http://, https://";

/// Parses `from`; the error lists the valid prefixes or the expected shape.
pub(crate) fn parse_from(text: &str) -> Result<SourceRef, String> {
    let text = text.trim();
    if text.starts_with("http://") || text.starts_with("https://") {
        return Ok(SourceRef::Http {
            url: text.to_string(),
        });
    }
    let Some((kind, rest)) = text.split_once(':') else {
        return Err(format!(
            "invalid source '{text}'; it must start with one of {FROM_PREFIXES}"
        ));
    };
    match kind {
        "postgres" => qualified(rest, "postgres:[schema.]table")
            .map(|(schema, table)| SourceRef::Postgres { schema, table }),
        "mysql" => qualified(rest, "mysql:[database.]table")
            .map(|(database, table)| SourceRef::Mysql { database, table }),
        "duckdb" => single(rest, "duckdb:table").map(|table| SourceRef::Duckdb { table }),
        "sqlite" => single(rest, "sqlite:table").map(|table| SourceRef::Sqlite { table }),
        "file" => file_path(rest).map(|path| SourceRef::File { path }),
        _ => Err(format!(
            "unknown source kind '{kind}:'; valid prefixes are {FROM_PREFIXES}"
        )),
    }
}

/// `[qualifier.]table`, both parts non-empty.
fn qualified(rest: &str, shape: &str) -> Result<(Option<String>, String), String> {
    let parts: Vec<&str> = rest.split('.').collect();
    match parts.as_slice() {
        [table] if !table.is_empty() => Ok((None, table.to_string())),
        [schema, table] if !schema.is_empty() && !table.is_empty() => {
            Ok((Some(schema.to_string()), table.to_string()))
        }
        _ => Err(format!(
            "invalid table reference '{rest}'; expected {shape}"
        )),
    }
}

fn single(rest: &str, shape: &str) -> Result<String, String> {
    if rest.is_empty() {
        return Err(format!("missing table name; expected {shape}"));
    }
    Ok(rest.to_string())
}

/// `file:./data/x.parquet`, `file:/abs/x.csv` or `file:///abs/x.csv`.
fn file_path(rest: &str) -> Result<PathBuf, String> {
    let path = rest.strip_prefix("//").unwrap_or(rest);
    if path.is_empty() {
        return Err("missing path; expected file:path/to/data.parquet".to_string());
    }
    Ok(PathBuf::from(path))
}

/// Checks `params` against the source kind and applies defaults.
pub(crate) fn parse_params(
    values: &mut Values<'_, '_>,
    source: &SourceRef,
    params: &RawParams,
) -> SourceParams {
    reject_foreign_params(values, source, params);
    let get = |key: &str| params.get(key).cloned();
    match source {
        SourceRef::Postgres { .. } => SourceParams::Postgres(postgres(values, &get)),
        SourceRef::Mysql { .. } => SourceParams::Mysql(mysql(values, &get)),
        SourceRef::Duckdb { .. } => SourceParams::Duckdb {
            open: required_path(
                values,
                "duckdb_open",
                &get("duckdb_open"),
                "the DuckDB database file to read",
            ),
        },
        SourceRef::Sqlite { .. } => SourceParams::Sqlite {
            file: required_path(
                values,
                "sqlite_file",
                &get("sqlite_file"),
                "the SQLite database file to read",
            ),
        },
        SourceRef::File { path } => SourceParams::File {
            format: file_format(values, path, &get("file_format")),
        },
        SourceRef::Http { .. } => SourceParams::Http,
    }
}

fn reject_foreign_params(values: &mut Values<'_, '_>, source: &SourceRef, params: &RawParams) {
    let allowed = source.allowed_params();
    for key in params.keys().filter(|key| !allowed.contains(&key.as_str())) {
        let valid = if allowed.is_empty() {
            "none".to_string()
        } else {
            allowed.join(", ")
        };
        let hint = if matches!(key.as_str(), "duckdb_file" | "sqlite_file") {
            " (acceleration files go in acceleration.params)"
        } else {
            ""
        };
        let message = format!(
            "'{key}' is not a parameter of {} sources{hint}; valid parameters are {valid}",
            source.kind()
        );
        values.error(&format!("params.{key}"), message);
    }
}

type Get<'a> = dyn Fn(&str) -> Option<Scalar> + 'a;

/// Connection fields shared by PostgreSQL and MySQL, keyed by the kind's prefix.
struct Connection {
    host: String,
    port: u16,
    db: Option<String>,
    user: Option<String>,
    pass: Option<Secret>,
    sslmode: SslMode,
    connection_string: Option<Secret>,
}

fn connection(
    values: &mut Values<'_, '_>,
    get: &Get<'_>,
    prefix: &str,
    port_key: &str,
    default_port: u16,
) -> Connection {
    let key = |name: &str| format!("params.{prefix}_{name}");
    let string_key = format!("{prefix}_connection_string");
    let connection_string = values.secret(&format!("params.{string_key}"), &get(&string_key));
    if connection_string.is_some() {
        for name in ["host", "db", "user", "pass", "sslmode"]
            .iter()
            .map(|n| format!("{prefix}_{n}"))
            .chain([port_key.to_string()])
        {
            if get(&name).is_some() {
                let message = format!(
                    "cannot be combined with {string_key}; put it in the connection string or remove {string_key}"
                );
                values.error(&format!("params.{name}"), message);
            }
        }
    }
    Connection {
        host: values
            .non_empty(
                &key("host"),
                &get(&format!("{prefix}_host")),
                "a host name or address",
            )
            .unwrap_or_else(|| "127.0.0.1".into()),
        port: values
            .port(&format!("params.{port_key}"), &get(port_key))
            .unwrap_or(default_port),
        db: values.non_empty(&key("db"), &get(&format!("{prefix}_db")), "a database name"),
        user: values.non_empty(&key("user"), &get(&format!("{prefix}_user")), "a user name"),
        pass: values.secret(&key("pass"), &get(&format!("{prefix}_pass"))),
        sslmode: values
            .choice(&key("sslmode"), &get(&format!("{prefix}_sslmode")))
            .unwrap_or(SslMode::Prefer),
        connection_string,
    }
}

/// Reports a required connection field that is absent when there is no connection string.
fn require(
    values: &mut Values<'_, '_>,
    conn: &Connection,
    field: &Option<String>,
    key: &str,
    what: &str,
) {
    if field.is_none() && conn.connection_string.is_none() {
        let prefix = key.split('_').next().unwrap_or_default();
        let message = format!("missing {what}; set {key} or {prefix}_connection_string");
        values.error(&format!("params.{key}"), message);
    }
}

fn postgres(values: &mut Values<'_, '_>, get: &Get<'_>) -> PostgresParams {
    let conn = connection(values, get, "pg", "pg_port", 5432);
    require(
        values,
        &conn,
        &conn.db,
        "pg_db",
        "the database to read from",
    );
    require(
        values,
        &conn,
        &conn.user,
        "pg_user",
        "the user to connect as",
    );
    PostgresParams {
        host: conn.host,
        port: conn.port,
        db: conn.db.unwrap_or_default(),
        user: conn.user.unwrap_or_default(),
        pass: conn.pass,
        sslmode: conn.sslmode,
        connection_string: conn.connection_string,
    }
}

fn mysql(values: &mut Values<'_, '_>, get: &Get<'_>) -> MysqlParams {
    let conn = connection(values, get, "mysql", "mysql_tcp_port", 3306);
    require(
        values,
        &conn,
        &conn.user,
        "mysql_user",
        "the user to connect as",
    );
    MysqlParams {
        host: conn.host,
        port: conn.port,
        db: conn.db,
        user: conn.user.unwrap_or_default(),
        pass: conn.pass,
        sslmode: conn.sslmode,
        connection_string: conn.connection_string,
    }
}

fn required_path(
    values: &mut Values<'_, '_>,
    name: &str,
    value: &Option<Scalar>,
    what: &str,
) -> PathBuf {
    let key = format!("params.{name}");
    if value.is_none() {
        values.error(&key, format!("missing {what}; set params.{name}"));
    }
    values
        .non_empty(&key, value, what)
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// `file_format`, or the file's extension when it is not given.
fn file_format(values: &mut Values<'_, '_>, path: &Path, value: &Option<Scalar>) -> FileFormat {
    if value.is_some() {
        return values
            .choice("params.file_format", value)
            .unwrap_or(FileFormat::Parquet);
    }
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("parquet") => FileFormat::Parquet,
        Some("csv") => FileFormat::Csv,
        Some("json" | "jsonl" | "ndjson") => FileFormat::Json,
        _ => {
            let message = format!(
                "cannot tell the format of '{}' from its extension; set params.file_format to parquet, csv, json or snapshot",
                path.display()
            );
            values.error("params.file_format", message);
            FileFormat::Parquet
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_source_kind() {
        assert_eq!(
            parse_from("postgres:public.orders").unwrap(),
            SourceRef::Postgres {
                schema: Some("public".into()),
                table: "orders".into()
            }
        );
        assert_eq!(
            parse_from("postgres:orders").unwrap(),
            SourceRef::Postgres {
                schema: None,
                table: "orders".into()
            }
        );
        assert_eq!(
            parse_from("mysql:test.t").unwrap(),
            SourceRef::Mysql {
                database: Some("test".into()),
                table: "t".into()
            }
        );
        assert_eq!(
            parse_from("duckdb:logs").unwrap(),
            SourceRef::Duckdb {
                table: "logs".into()
            }
        );
        assert_eq!(
            parse_from("sqlite:logs").unwrap(),
            SourceRef::Sqlite {
                table: "logs".into()
            }
        );
        assert_eq!(
            parse_from("file:data/x.parquet").unwrap(),
            SourceRef::File {
                path: "data/x.parquet".into()
            }
        );
        assert_eq!(
            parse_from("file:///abs/x.csv").unwrap(),
            SourceRef::File {
                path: "/abs/x.csv".into()
            }
        );
        assert_eq!(
            parse_from("https://x.io/a.csv").unwrap(),
            SourceRef::Http {
                url: "https://x.io/a.csv".into()
            }
        );
    }

    #[test]
    fn bad_references_say_what_is_valid() {
        assert!(
            parse_from("databricks:x")
                .unwrap_err()
                .contains("postgres:, mysql:")
        );
        assert!(
            parse_from("orders")
                .unwrap_err()
                .contains("must start with one of")
        );
        assert!(
            parse_from("postgres:a.b.c")
                .unwrap_err()
                .contains("postgres:[schema.]table")
        );
        assert!(parse_from("postgres:").is_err());
        assert!(parse_from("file:").is_err());
    }
}
