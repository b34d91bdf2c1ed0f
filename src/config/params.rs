//! The `params` of a dataset's source: which keys each source kind accepts, their
//! defaults (PostgreSQL 127.0.0.1:5432, MySQL 127.0.0.1:3306, sslmode prefer) and their
//! secrets. Parameters of another source kind are errors, never ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::raw::{RawParams, Scalar};
use super::secret::Secret;
use super::source::SourceRef;
use super::values::{Values, yaml_enum};

/// Connection settings for the source, by kind.
#[derive(Debug, Clone)]
pub enum SourceParams {
    Postgres(PostgresParams),
    Mysql(MysqlParams),
    Duckdb {
        open: PathBuf,
    },
    Sqlite {
        file: PathBuf,
    },
    /// Parquet, CSV or JSON files; for an `s3://` source, the
    /// object-store keys (`s3_*`, `allow_http`) that reach them.
    File {
        format: FileFormat,
        store: BTreeMap<String, Secret>,
    },
    Http(HttpParams),
    /// `file_format: snapshot`: the dataset serves the snapshots published
    /// at `location` (the `from` folder or S3 prefix), reached with the
    /// object-store keys of `params`.
    Snapshot {
        location: String,
        params: BTreeMap<String, Secret>,
    },
}

/// The `params` of an `http://` or `https://` source: which requests
/// queries may make of the API.
#[derive(Debug, Clone, PartialEq)]
pub struct HttpParams {
    /// `allowed_request_paths`: the paths a query may ask for (a trailing
    /// `*` allows every path that starts with what precedes it); empty:
    /// any path.
    pub allowed_paths: Vec<String>,
    /// `request_query_filters: enabled`: queries may set the request's query
    /// string (`WHERE request_query = 'q=rust'`).
    pub query_filters: bool,
    /// `max_request_query_length`: the longest query string allowed.
    pub max_query_length: usize,
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
    /// CA certificates (PEM) the server's certificate is verified against
    /// (`verify-ca`, `verify-full`); else the system's roots.
    pub sslrootcert: Option<PathBuf>,
    pub connection_string: Option<Secret>,
    /// `refresh_mode: changes`: the logical replication slot and the
    /// publication the changes stream through; `None` takes the default
    /// derived from the dataset's name (`pgaccel_<dataset>`).
    pub replication_slot: Option<String>,
    pub publication: Option<String>,
    /// Whether removing the dataset from the configuration drops its slot.
    pub drop_slot_on_remove: bool,
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
    /// As for PostgreSQL (`verify_ca`, `verify_identity`).
    pub sslrootcert: Option<PathBuf>,
    pub connection_string: Option<Secret>,
    /// The server id pgaccel reads the binlog as (`refresh_mode: changes`):
    /// unique among the source's replicas; derived from the dataset name
    /// when not set.
    pub server_id: Option<u32>,
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

/// Checks `params` against the source kind and applies defaults. With
/// `connects` false (`refresh_mode: snapshot`, which never contacts its
/// source) no connection parameter is required.
pub(crate) fn parse_params(
    values: &mut Values<'_, '_>,
    source: &SourceRef,
    params: &RawParams,
    connects: bool,
) -> SourceParams {
    reject_foreign_params(values, source, params);
    let get = |key: &str| params.get(key).cloned();
    match source {
        SourceRef::Postgres { .. } => {
            SourceParams::Postgres(parse_postgres(values, &get, connects))
        }
        SourceRef::Mysql { .. } => SourceParams::Mysql(parse_mysql(values, &get, connects)),
        SourceRef::Duckdb { .. } => SourceParams::Duckdb {
            open: parse_required_path(
                values,
                "duckdb_open",
                &get("duckdb_open"),
                "the DuckDB database file to read",
                connects,
            ),
        },
        SourceRef::Sqlite { .. } => SourceParams::Sqlite {
            file: parse_required_path(
                values,
                "sqlite_file",
                &get("sqlite_file"),
                "the SQLite database file to read",
                connects,
            ),
        },
        SourceRef::File { path } => match parse_file_format(values, path, &get("file_format")) {
            FileFormat::Snapshot => SourceParams::Snapshot {
                location: path.display().to_string(),
                params: BTreeMap::new(),
            },
            format => SourceParams::File {
                format,
                store: BTreeMap::new(),
            },
        },
        SourceRef::S3 { url } => {
            let format = parse_file_format(values, Path::new(url), &get("file_format"));
            let store = params
                .keys()
                .filter(|key| key.starts_with("s3_") || *key == "allow_http")
                .filter_map(|key| {
                    let (name, value) = (format!("params.{key}"), get(key));
                    super::runtime::check_s3_param(values, &name, key, &value);
                    Some((key.clone(), values.secret(&name, &value)?))
                })
                .collect();
            match format {
                FileFormat::Snapshot => SourceParams::Snapshot {
                    location: url.clone(),
                    params: store,
                },
                format => SourceParams::File { format, store },
            }
        }
        SourceRef::Http { .. } => SourceParams::Http(parse_http(values, &get)),
    }
}

fn parse_http(values: &mut Values<'_, '_>, get: &Get<'_>) -> HttpParams {
    let allowed_paths = values
        .text(
            "params.allowed_request_paths",
            &get("allowed_request_paths"),
        )
        .map(|text| {
            text.split(',')
                .map(str::trim)
                .filter(|path| !path.is_empty())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for path in &allowed_paths {
        if !path.starts_with('/') {
            values.error(
                "params.allowed_request_paths",
                format!("'{path}' is not a path: each allowed path starts with '/'"),
            );
        }
    }
    let query_filters = match values
        .text(
            "params.request_query_filters",
            &get("request_query_filters"),
        )
        .as_deref()
        .map(str::trim)
    {
        None | Some("disabled") => false,
        Some("enabled") => true,
        Some(other) => {
            values.error(
                "params.request_query_filters",
                format!("invalid value '{other}'; valid values are enabled, disabled"),
            );
            false
        }
    };
    let max_query_length = values
        .integer(
            "params.max_request_query_length",
            &get("max_request_query_length"),
            1,
            65_536,
            "a length in bytes",
        )
        .unwrap_or(1024) as usize;
    HttpParams {
        allowed_paths,
        query_filters,
        max_query_length,
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
        let hint = match key.as_str() {
            "duckdb_file" | "sqlite_file" => " (acceleration files go in acceleration.params)",
            // The seed: such a dataset checks every refresh_check_interval.
            "s3_queue_url" => {
                " (a dataset that reads snapshots with file_format: snapshot checks for new ones every refresh_check_interval; reloading on notifications is for refresh_mode: snapshot datasets, through the top-level snapshots.params)"
            }
            _ => "",
        };
        let message = format!(
            "'{key}' is not a parameter of {} sources{hint}; valid parameters are {valid}",
            source.kind()
        );
        values.error(&format!("params.{key}"), message);
    }
}

type Get<'a> = dyn Fn(&str) -> Option<Scalar> + 'a;

/// The environment variable each connection key falls back to: libpq's
/// and the mysql client's own.
const STANDARD_ENV: [(&str, &str); 10] = [
    ("pg_host", "PGHOST"),
    ("pg_port", "PGPORT"),
    ("pg_db", "PGDATABASE"),
    ("pg_user", "PGUSER"),
    ("pg_pass", "PGPASSWORD"),
    ("pg_sslmode", "PGSSLMODE"),
    ("pg_sslrootcert", "PGSSLROOTCERT"),
    ("mysql_host", "MYSQL_HOST"),
    ("mysql_tcp_port", "MYSQL_TCP_PORT"),
    ("mysql_pass", "MYSQL_PWD"),
];

/// Connection fields shared by PostgreSQL and MySQL, keyed by the kind's prefix.
struct Connection {
    host: String,
    port: u16,
    db: Option<String>,
    user: Option<String>,
    pass: Option<Secret>,
    sslmode: SslMode,
    sslrootcert: Option<PathBuf>,
    connection_string: Option<Secret>,
}

fn parse_connection(
    values: &mut Values<'_, '_>,
    get: &Get<'_>,
    prefix: &str,
    port_key: &str,
    default_port: u16,
) -> Connection {
    let key = |name: &str| format!("params.{prefix}_{name}");
    let string_key = format!("{prefix}_connection_string");
    let connection_string = values.secret(&format!("params.{string_key}"), &get(&string_key));
    // Without a connection string, a key left out takes the client
    // libraries' standard variable (PGHOST, MYSQL_TCP_PORT, ...), as psql
    // and mysql do.
    let standard: BTreeMap<&str, Scalar> = if connection_string.is_none() {
        STANDARD_ENV
            .iter()
            .filter(|(param, _)| param.starts_with(prefix))
            .filter_map(|(param, var)| {
                let value = values.env(var).filter(|value| !value.is_empty())?;
                Some((*param, Scalar::Text(value)))
            })
            .collect()
    } else {
        BTreeMap::new()
    };
    let given_user = get(&format!("{prefix}_user"))
        .or_else(|| standard.get(format!("{prefix}_user").as_str()).cloned());
    // Then the clients' own defaults: the login name for the user (psql
    // and mysql both), and for PostgreSQL the user for the database.
    let login = || {
        (connection_string.is_none())
            .then(|| {
                values
                    .env("USER")
                    .or_else(|| values.env("LOGNAME"))
                    .filter(|name| !name.is_empty())
                    // The account the process runs as, as libpq finds it.
                    .or_else(|| whoami::username().ok())
            })
            .flatten()
            .filter(|name| !name.is_empty())
            .map(Scalar::Text)
    };
    let user = given_user.or_else(login);
    let defaults_to_user = |name: &str| {
        name == format!("{prefix}_user")
            || (prefix == "pg" && name == "pg_db" && connection_string.is_none())
    };
    let get = |name: &str| {
        get(name)
            .or_else(|| standard.get(name).cloned())
            .or_else(|| user.clone().filter(|_| defaults_to_user(name)))
    };
    if connection_string.is_some() {
        for name in ["host", "db", "user", "pass", "sslmode", "sslrootcert"]
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
            .choice(
                &key("sslmode"),
                &sslmode_spelling(prefix, get(&format!("{prefix}_sslmode"))),
            )
            .unwrap_or(SslMode::Prefer),
        sslrootcert: values
            .non_empty(
                &key("sslrootcert"),
                &get(&format!("{prefix}_sslrootcert")),
                "the path of a CA certificate file (PEM)",
            )
            .map(PathBuf::from),
        connection_string,
    }
}

/// MySQL users write `disabled`, `preferred` and `required` (MySQL's own
/// `--ssl-mode` names); they mean libpq's `disable`, `prefer` and `require`.
fn sslmode_spelling(prefix: &str, value: Option<Scalar>) -> Option<Scalar> {
    match (prefix, value) {
        ("mysql", Some(Scalar::Text(text))) => {
            let libpq = match text.trim().to_ascii_lowercase().as_str() {
                "disabled" => "disable",
                "preferred" => "prefer",
                "required" => "require",
                "verify_ca" => "verify-ca",
                "verify_identity" => "verify-full",
                _ => return Some(Scalar::Text(text)),
            };
            Some(Scalar::Text(libpq.to_owned()))
        }
        (_, value) => value,
    }
}

/// Reports a required connection field that is absent when there is no
/// connection string (and the dataset `connects` to its source).
fn require(
    values: &mut Values<'_, '_>,
    conn: &Connection,
    field: &Option<String>,
    key: &str,
    what: &str,
    connects: bool,
) {
    if connects && field.is_none() && conn.connection_string.is_none() {
        let prefix = key.split('_').next().unwrap_or_default();
        let message = match STANDARD_ENV.iter().find(|(param, _)| *param == key) {
            Some((_, var)) => format!(
                "missing {what}; set {key} or {prefix}_connection_string (or {var} in the environment)"
            ),
            None => format!("missing {what}; set {key} or {prefix}_connection_string"),
        };
        values.error(&format!("params.{key}"), message);
    }
}

fn parse_postgres(values: &mut Values<'_, '_>, get: &Get<'_>, connects: bool) -> PostgresParams {
    let conn = parse_connection(values, get, "pg", "pg_port", 5432);
    require(
        values,
        &conn,
        &conn.db,
        "pg_db",
        "the database to read from",
        connects,
    );
    require(
        values,
        &conn,
        &conn.user,
        "pg_user",
        "the user to connect as",
        connects,
    );
    PostgresParams {
        host: conn.host,
        port: conn.port,
        db: conn.db.unwrap_or_default(),
        user: conn.user.unwrap_or_default(),
        pass: conn.pass,
        sslmode: conn.sslmode,
        sslrootcert: conn.sslrootcert,
        connection_string: conn.connection_string,
        replication_slot: replication_name(values, "pg_replication_slot", get),
        publication: replication_name(values, "pg_publication", get),
        drop_slot_on_remove: values.flag(
            "params.drop_slot_on_remove",
            &get("drop_slot_on_remove"),
            false,
        ),
    }
}

/// A slot or publication name: PostgreSQL allows lower-case letters,
/// digits and underscores in slot names, at most 63 bytes; the same rule
/// keeps publication names free of quoting.
fn replication_name(values: &mut Values<'_, '_>, key: &str, get: &Get<'_>) -> Option<String> {
    let name = values.non_empty(&format!("params.{key}"), &get(key), "a name")?;
    let valid = name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !valid {
        values.error(
            &format!("params.{key}"),
            format!("'{name}' is not a valid name: use at most 63 lower-case letters, digits and underscores"),
        );
        return None;
    }
    Some(name)
}

fn parse_mysql(values: &mut Values<'_, '_>, get: &Get<'_>, connects: bool) -> MysqlParams {
    let conn = parse_connection(values, get, "mysql", "mysql_tcp_port", 3306);
    require(
        values,
        &conn,
        &conn.user,
        "mysql_user",
        "the user to connect as",
        connects,
    );
    MysqlParams {
        host: conn.host,
        port: conn.port,
        db: conn.db,
        user: conn.user.unwrap_or_default(),
        pass: conn.pass,
        sslmode: conn.sslmode,
        sslrootcert: conn.sslrootcert,
        connection_string: conn.connection_string,
        server_id: values
            .integer(
                "params.mysql_server_id",
                &get("mysql_server_id"),
                1,
                u64::from(u32::MAX),
                "a replication server id",
            )
            .map(|id| id as u32),
    }
}

fn parse_required_path(
    values: &mut Values<'_, '_>,
    name: &str,
    value: &Option<Scalar>,
    what: &str,
    connects: bool,
) -> PathBuf {
    let key = format!("params.{name}");
    if value.is_none() && connects {
        values.error(&key, format!("missing {what}; set params.{name}"));
    }
    values
        .non_empty(&key, value, what)
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// `file_format`, or the file's extension when it is not given.
fn parse_file_format(
    values: &mut Values<'_, '_>,
    path: &Path,
    value: &Option<Scalar>,
) -> FileFormat {
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
    use crate::config::error::{ConfigError, Report};

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn params(source: &str, pairs: &[(&str, Scalar)]) -> (SourceParams, Vec<ConfigError>) {
        params_in(&no_env, source, pairs)
    }

    /// [`params`] in the environment `env`.
    fn params_in(
        env: crate::config::secret::Lookup<'_>,
        source: &str,
        pairs: &[(&str, Scalar)],
    ) -> (SourceParams, Vec<ConfigError>) {
        let raw: RawParams = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let mut errors = Vec::new();
        let mut report = Report::new(Some("d".into()), &mut errors);
        let mut values = Values::new(&mut report, env);
        let parsed = parse_params(
            &mut values,
            &crate::config::source::parse_from(source).unwrap(),
            &raw,
            true,
        );
        (parsed, errors)
    }

    fn text(s: &str) -> Scalar {
        Scalar::Text(s.into())
    }

    #[test]
    fn postgres_defaults() {
        let (parsed, errors) = params(
            "postgres:t",
            &[("pg_db", text("test")), ("pg_user", text("root"))],
        );
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Postgres(pg) = parsed else {
            panic!("postgres")
        };
        assert_eq!(
            (pg.host.as_str(), pg.port, pg.sslmode),
            ("127.0.0.1", 5432, SslMode::Prefer)
        );
    }

    #[test]
    fn connection_keys_left_out_take_the_standard_environment() {
        let env = |name: &str| {
            [
                ("PGHOST", "db.internal"),
                ("PGPORT", "6432"),
                ("PGDATABASE", "shop"),
                ("PGUSER", "app"),
                ("PGPASSWORD", "secret"),
                ("MYSQL_TCP_PORT", "3307"),
                ("MYSQL_PWD", "my"),
            ]
            .iter()
            .find(|(var, _)| *var == name)
            .map(|(_, value)| value.to_string())
        };
        let parse = |source: &str, pairs: &[(&str, Scalar)]| params_in(&env, source, pairs);
        let (parsed, errors) = parse("postgres:t", &[("pg_db", text("given"))]);
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Postgres(pg) = parsed else {
            panic!("postgres")
        };
        // What the configuration gives wins over the environment.
        assert_eq!(
            (pg.host.as_str(), pg.port, pg.db.as_str(), pg.user.as_str()),
            ("db.internal", 6432, "given", "app")
        );
        assert_eq!(pg.pass.as_ref().map(Secret::expose), Some("secret"));
        // A connection string takes nothing from the environment.
        let (parsed, errors) = parse(
            "postgres:t",
            &[("pg_connection_string", text("host=h dbname=d user=u"))],
        );
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Postgres(pg) = parsed else {
            panic!("postgres")
        };
        assert_eq!((pg.host.as_str(), pg.port), ("127.0.0.1", 5432));
        let (parsed, errors) = parse("mysql:t", &[("mysql_user", text("root"))]);
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Mysql(my) = parsed else {
            panic!("mysql")
        };
        assert_eq!(my.port, 3307);
        assert_eq!(my.pass.as_ref().map(Secret::expose), Some("my"));
        // Then libpq's defaults: the database is the user's name, the user
        // the login name; mysql's user is the login name too.
        let (parsed, errors) = params("postgres:t", &[("pg_user", text("u"))]);
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Postgres(pg) = parsed else {
            panic!("postgres")
        };
        assert_eq!((pg.db.as_str(), pg.user.as_str()), ("u", "u"));
        let login = |name: &str| (name == "LOGNAME").then(|| "operator".to_owned());
        let (parsed, errors) = params_in(&login, "postgres:t", &[]);
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Postgres(pg) = parsed else {
            panic!("postgres")
        };
        assert_eq!((pg.db.as_str(), pg.user.as_str()), ("operator", "operator"));
        let (parsed, errors) = params_in(&login, "mysql:t", &[]);
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Mysql(my) = parsed else {
            panic!("mysql")
        };
        assert_eq!((my.user.as_str(), my.db), ("operator", None));
    }

    #[test]
    fn mysql_port_may_be_a_string() {
        let (parsed, errors) = params(
            "mysql:t",
            &[
                ("mysql_user", text("root")),
                ("mysql_tcp_port", text("3307")),
            ],
        );
        assert!(errors.is_empty(), "{errors:?}");
        let SourceParams::Mysql(my) = parsed else {
            panic!("mysql")
        };
        assert_eq!((my.port, my.db), (3307, None));
    }

    #[test]
    fn mysql_sslmode_takes_mysql_spellings_too() {
        for (written, meant) in [
            ("disabled", SslMode::Disable),
            ("preferred", SslMode::Prefer),
            ("required", SslMode::Require),
            ("disable", SslMode::Disable),
        ] {
            let (parsed, errors) = params(
                "mysql:t",
                &[
                    ("mysql_user", text("root")),
                    ("mysql_sslmode", text(written)),
                ],
            );
            assert!(errors.is_empty(), "{written}: {errors:?}");
            let SourceParams::Mysql(my) = parsed else {
                panic!("mysql")
            };
            assert_eq!(my.sslmode, meant, "{written}");
        }
        let (_, errors) = params(
            "postgres:t",
            &[
                ("pg_db", text("d")),
                ("pg_user", text("u")),
                ("pg_sslmode", text("disabled")),
            ],
        );
        assert_eq!(errors[0].key, "params.pg_sslmode", "{errors:?}");
    }

    #[test]
    fn params_of_another_source_are_errors() {
        let (_, errors) = params(
            "mysql:t",
            &[("mysql_user", text("root")), ("pg_host", text("h"))],
        );
        assert_eq!(errors[0].key, "params.pg_host");
        assert!(
            errors[0]
                .message
                .contains("not a parameter of mysql sources")
        );
    }

    #[test]
    fn file_format_comes_from_the_extension() {
        let (parsed, _) = params("file:x.CSV", &[]);
        assert!(matches!(
            parsed,
            SourceParams::File {
                format: FileFormat::Csv,
                ..
            }
        ));
        let (parsed, _) = params("file:x.dat", &[("file_format", text("parquet"))]);
        assert!(matches!(
            parsed,
            SourceParams::File {
                format: FileFormat::Parquet,
                ..
            }
        ));
    }
}
