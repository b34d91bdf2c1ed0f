//! Where a dataset's rows come from: the `from` reference (`postgres:[schema.]table`,
//! `mysql:[db.]table`, `duckdb:table`, `sqlite:table`, `file:path`,
//! `s3://bucket/prefix/`, `http(s)://url`) and which `params` keys each source kind
//! owns. The parameters themselves are in `params.rs`.

use std::path::PathBuf;

use super::runtime::S3_KEYS;

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
    /// An S3 prefix (`s3://bucket/prefix/`): today a location of published
    /// snapshots (`file_format: snapshot`).
    S3 {
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
            SourceRef::S3 { .. } => "s3",
        }
    }

    /// The `params` keys this source kind accepts.
    pub(super) fn allowed_params(&self) -> &'static [&'static str] {
        match self {
            SourceRef::Postgres { .. } => &[
                "pg_host",
                "pg_port",
                "pg_db",
                "pg_user",
                "pg_pass",
                "pg_sslmode",
                "pg_sslrootcert",
                "pg_connection_string",
                "pg_replication_slot",
                "pg_publication",
                "drop_slot_on_remove",
            ],
            SourceRef::Mysql { .. } => &[
                "mysql_host",
                "mysql_tcp_port",
                "mysql_db",
                "mysql_user",
                "mysql_pass",
                "mysql_sslmode",
                "mysql_sslrootcert",
                "mysql_connection_string",
                "mysql_server_id",
            ],
            SourceRef::Duckdb { .. } => &["duckdb_open"],
            SourceRef::Sqlite { .. } => &["sqlite_file"],
            SourceRef::File { .. } => &["file_format"],
            SourceRef::Http { .. } => &[
                "allowed_request_paths",
                "request_query_filters",
                "max_request_query_length",
            ],
            SourceRef::S3 { .. } => &S3_PARAMS,
        }
    }
}

/// The `params` of an `s3://` source: its format and how to reach it.
const S3_PARAMS: [&str; 7] = [
    "file_format",
    S3_KEYS[0],
    S3_KEYS[1],
    S3_KEYS[2],
    S3_KEYS[3],
    S3_KEYS[4],
    S3_KEYS[5],
];

const FROM_PREFIXES: &str = "postgres:, mysql:, duckdb:, sqlite:, file:, s3://, http://, https://";

/// Parses `from`; the error lists the valid prefixes or the expected shape.
pub(crate) fn parse_from(text: &str) -> Result<SourceRef, String> {
    let text = text.trim();
    if text.starts_with("http://") || text.starts_with("https://") {
        return Ok(SourceRef::Http {
            url: text.to_string(),
        });
    }
    if let Some(rest) = text.strip_prefix("s3://") {
        if rest.split('/').next().is_none_or(str::is_empty) {
            return Err(format!(
                "invalid source '{text}'; expected s3://bucket/prefix/"
            ));
        }
        return Ok(SourceRef::S3 {
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
