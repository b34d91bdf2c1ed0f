//! Differential test: every query of `sql/differential/*.sql` runs on the
//! real PostgreSQL and on pgaccel serving the same tables (the fixture,
//! `sql/differential/fixture.sql`), with the simple protocol (values as
//! text, column names) and the extended protocol (column names, type OIDs,
//! values in binary). An error must be the same SQLSTATE. The expected
//! answer is always what PostgreSQL returned in this run.
//!
//! `sql/differential/known_differences.txt` lists the queries that still
//! differ; the test fails when an unlisted query differs and when a listed
//! one has started to match.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio_postgres::{Client, SimpleQueryMessage};

use crate::support::{Raw, SOURCE_DSN, Server, SourceSchema, connect, sqlstate};

pub const TABLES: &[&str] = &[
    "nums",
    "texts",
    "times",
    "customers",
    "orders",
    "docs",
    "date_dim",
    "item",
    "store",
    "store_sales",
    "web_sales",
];

pub fn corpus_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/differential"))
}

/// One query of the corpus, known by `file:line`.
pub struct Case {
    pub id: String,
    pub sql: String,
}

/// The corpus: each query ends with `;` at the end of a line; `--` lines
/// between queries are comments.
pub fn corpus() -> Vec<Case> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("sql/differential")
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| {
            path.extension().is_some_and(|e| e == "sql")
                && path.file_name().is_some_and(|n| n != "fixture.sql")
        })
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut sql = String::new();
        let mut start = 0;
        for (index, line) in text.lines().enumerate() {
            if sql.is_empty() && (line.trim().is_empty() || line.trim_start().starts_with("--")) {
                continue;
            }
            if sql.is_empty() {
                start = index + 1;
            }
            sql.push_str(line);
            sql.push('\n');
            if line.trim_end().ends_with(';') {
                cases.push(Case {
                    id: format!("{name}:{start}"),
                    sql: std::mem::take(&mut sql),
                });
            }
        }
        assert!(sql.trim().is_empty(), "{name}: a query without its `;`");
    }
    cases
}

/// The listed differences: `file:line` to what differs.
pub fn known_differences() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(corpus_dir().join("known_differences.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (id, why) = line.split_once('#').unwrap_or((line, ""));
            (id.trim().to_owned(), why.trim().to_owned())
        })
        .collect()
}

/// What one server answered, in a form compared as a whole.
#[derive(Debug, PartialEq)]
pub enum Answer {
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
    Error(String),
}

pub async fn simple(client: &Client, sql: &str) -> Answer {
    match client.simple_query(sql).await {
        Err(error) => Answer::Error(sqlstate(&error)),
        Ok(messages) => {
            let mut columns = Vec::new();
            let mut rows = Vec::new();
            for message in messages {
                match message {
                    SimpleQueryMessage::RowDescription(description) => {
                        columns = description.iter().map(|c| c.name().to_owned()).collect();
                    }
                    SimpleQueryMessage::Row(row) => rows.push(
                        (0..row.len())
                            .map(|i| row.get(i).map(str::to_owned))
                            .collect(),
                    ),
                    _ => {}
                }
            }
            Answer::Rows { columns, rows }
        }
    }
}

/// The extended protocol: column names with their type OIDs, and each
/// value's binary form in hex.
pub async fn extended(client: &Client, sql: &str) -> Answer {
    let statement = match client.prepare(sql.trim().trim_end_matches(';')).await {
        Ok(statement) => statement,
        Err(error) => return Answer::Error(sqlstate(&error)),
    };
    let columns = statement
        .columns()
        .iter()
        .map(|c| format!("{}:{}", c.name(), c.type_().oid()))
        .collect();
    match client.query(&statement, &[]).await {
        Err(error) => Answer::Error(sqlstate(&error)),
        Ok(rows) => Answer::Rows {
            columns,
            rows: rows
                .iter()
                .map(|row| {
                    (0..row.len())
                        .map(|i| {
                            row.get::<_, Option<Raw>>(i).map(|raw| {
                                raw.0.iter().map(|b| format!("{b:02x}")).collect::<String>()
                            })
                        })
                        .collect()
                })
                .collect(),
        },
    }
}

/// The session settings both sides of every comparison run under.
fn session_setup(schema: &str) -> String {
    format!("SET search_path = {schema}; SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'")
}

/// A connection set up for comparisons: to PostgreSQL (`dsn` of the
/// source) or to a pgaccel serving the fixture.
pub async fn session(dsn: &str, schema: &str) -> Client {
    let client = connect(dsn).await;
    client.batch_execute(&session_setup(schema)).await.unwrap();
    client
}

/// The fixture loaded into a schema of its own on PostgreSQL, served by a
/// pgaccel (with `runtime` lines added to its `runtime:` block), and a
/// connection to each.
pub async fn served_fixture(prefix: &str, runtime: &str) -> (SourceSchema, Server, Client, Client) {
    let source = SourceSchema::create(prefix).await;
    let fixture = std::fs::read_to_string(corpus_dir().join("fixture.sql")).unwrap();
    source.execute(&fixture).await;
    let server = serve(&source, runtime).await;
    let primary = session(SOURCE_DSN, &source.name).await;
    let replica = session(&server.dsn(), &source.name).await;
    (source, server, primary, replica)
}

async fn serve(source: &SourceSchema, runtime: &str) -> Server {
    let server = Server::start_with_config(&format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0 }}\n{runtime}datasets:\n{}",
        source.served_datasets(TABLES)
    ))
    .await;
    server.wait_ready().await;
    server
}

/// `sql`'s answers from PostgreSQL and from pgaccel, on each protocol.
pub async fn answers(
    primary: &Client,
    replica: &Client,
    sql: &str,
) -> [(&'static str, Answer, Answer); 2] {
    [
        (
            "simple",
            simple(primary, sql).await,
            simple(replica, sql).await,
        ),
        (
            "extended",
            extended(primary, sql).await,
            extended(replica, sql).await,
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_query_answers_as_postgres_answers() {
    let (source, _server, primary, replica) = served_fixture("differential", "").await;

    let cases = corpus();
    assert!(cases.len() >= 200, "{} queries in the corpus", cases.len());
    // The corpus runs with the fixture's schema on the search path: a
    // `{schema}.table` line would fail alike on both sides and test nothing.
    let qualified: Vec<&str> = cases
        .iter()
        .filter(|case| case.sql.contains("{schema}"))
        .map(|case| case.id.as_str())
        .collect();
    assert!(
        qualified.is_empty(),
        "corpus lines naming {{schema}} (name tables unqualified): {qualified:?}"
    );
    let known = known_differences();
    let mut differ = Vec::new();
    let mut now_match = Vec::new();
    // Listed as refused: pgaccel must refuse them with 0A000 on both
    // protocols, where PostgreSQL answers.
    let mut not_refused = Vec::new();
    // Every difference, listed or not, for whoever works on them.
    let mut report = String::new();
    for case in &cases {
        let mut why = Vec::new();
        let refused = known
            .get(&case.id)
            .is_some_and(|why| why.starts_with("refused"));
        for (protocol, expected, got) in answers(&primary, &replica, &case.sql).await {
            if refused && got != Answer::Error("0A000".to_owned()) {
                not_refused.push(format!("{} ({protocol}): {got:?}", case.id));
            }
            if expected != got {
                why.push(format!(
                    "{protocol}: PostgreSQL {expected:?}\n      pgaccel    {got:?}"
                ));
            }
        }
        if !why.is_empty() {
            report.push_str(&format!(
                "{}: {}\n    {}\n",
                case.id,
                case.sql.trim(),
                why.join("\n    ")
            ));
        }
        // A failed statement inside neither connection's transaction: both
        // are in autocommit, so nothing carries over.
        match (why.is_empty(), known.contains_key(&case.id)) {
            (false, false) => differ.push(format!(
                "{}: {}\n    {}",
                case.id,
                case.sql.trim(),
                why.join("\n    ")
            )),
            (true, true) => now_match.push(case.id.clone()),
            _ => {}
        }
    }
    let unknown: Vec<&String> = known
        .keys()
        .filter(|id| !cases.iter().any(|case| &case.id == *id))
        .collect();
    let report_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("differential.txt");
    std::fs::write(&report_path, &report).unwrap();
    println!(
        "differential corpus: {} queries, {} listed as differing (every difference: {})",
        cases.len(),
        known.len(),
        report_path.display()
    );
    assert!(
        not_refused.is_empty(),
        "listed as refused but not refused with 0A000: {not_refused:#?}"
    );

    // With `runtime.query.unsupported: source`, the source answers every
    // refused query that reads a table: the answer must be PostgreSQL's.
    let forwarding = serve(&source, "  query: { unsupported: source }\n").await;
    let forwarded = session(&forwarding.dsn(), &source.name).await;
    let mut not_forwarded = Vec::new();
    for case in cases.iter().filter(|case| {
        known
            .get(&case.id)
            .is_some_and(|why| why.starts_with("refused"))
    }) {
        // A query refused only while it runs stays refused (forwarding
        // happens when a statement is planned).
        let forwardable = TABLES
            .iter()
            .any(|table| case.sql.contains(&format!("FROM {table}")))
            && !known[&case.id].contains("while running");
        for (protocol, expected, got) in answers(&primary, &forwarded, &case.sql).await {
            let refused_again = !forwardable && got == Answer::Error("0A000".to_owned());
            if expected != got && !refused_again {
                not_forwarded.push(format!(
                    "{} ({protocol}): PostgreSQL {expected:?}\n      forwarded {got:?}",
                    case.id
                ));
            }
        }
    }
    assert!(
        not_forwarded.is_empty(),
        "refused queries the source should have answered: {not_forwarded:#?}"
    );
    assert!(
        differ.is_empty() && now_match.is_empty() && unknown.is_empty(),
        "{} queries differ from PostgreSQL:\n{}\n\nlisted but now answer as PostgreSQL (remove them from known_differences.txt): {now_match:?}\nlisted but not in the corpus: {unknown:?}",
        differ.len(),
        differ.join("\n")
    );
}

/// Under a session `TimeZone` other than UTC (pgjdbc sets the JVM's zone),
/// a `timestamptz` is read on the session's clock: cast to a date or a
/// time, compared with a date or with text, its fields extracted. Each
/// query of `sql/differential/zoned/session_zones.sql` runs under several
/// zones on both servers, the same text planned again in each zone, so a
/// plan cached in one zone must not answer in another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timestamptz_reads_the_session_clock() {
    let (_source, _server, primary, replica) = served_fixture("zoned", "").await;
    let text = std::fs::read_to_string(corpus_dir().join("zoned/session_zones.sql")).unwrap();
    let queries: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.trim_start().starts_with("--"))
        .collect();
    assert!(queries.len() >= 15, "{} zoned queries", queries.len());
    let mut differ = Vec::new();
    for zone in [
        "Asia/Tokyo",
        "UTC",
        "America/New_York",
        "Asia/Kolkata",
        "-02",
    ] {
        for client in [&primary, &replica] {
            client
                .batch_execute(&format!("SET TimeZone = '{zone}'"))
                .await
                .unwrap();
        }
        for sql in &queries {
            for (protocol, expected, got) in answers(&primary, &replica, sql).await {
                if expected != got {
                    differ.push(format!(
                        "{zone} ({protocol}): {sql}\n    PostgreSQL {expected:?}\n    pgaccel    {got:?}"
                    ));
                }
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} answers differ from PostgreSQL's:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// What a client sees of a failed statement: SQLSTATE, message, position.
async fn failure(client: &Client, sql: &str) -> (String, String, Option<u32>) {
    let error = client.simple_query(sql).await.expect_err(sql);
    let db = error.as_db_error().expect("a server error");
    let position = match db.position() {
        Some(tokio_postgres::error::ErrorPosition::Original(at)) => Some(*at),
        _ => None,
    };
    (
        db.code().code().to_owned(),
        db.message().to_owned(),
        position,
    )
}

#[tokio::test]
async fn syntax_errors_point_where_postgres_points() {
    let source = SourceSchema::create("syntax").await;
    let server = Server::start(&source.served_datasets(&[])).await;
    let primary = connect(SOURCE_DSN).await;
    let replica = server.client().await;
    for sql in [
        "SELEC 1",
        "SELECT 1 +",
        "SELECT 1 FROM",
        "SELECT id FROM orders WHERE",
        "SELECT 1,\n  2 3",
        "SELECT 'héllo wörld' x y",
        "SELECT (1",
    ] {
        assert_eq!(
            failure(&replica, sql).await,
            failure(&primary, sql).await,
            "{sql}"
        );
    }
}

/// The tables of the fixture the MySQL run copies to MariaDB, with the
/// MariaDB column types that hold the same values, and the PostgreSQL
/// expression that prints one row as a MariaDB `VALUES` tuple.
const MYSQL_TABLES: &[(&str, &str, &str)] = &[
    (
        "customers",
        "id INT PRIMARY KEY, name TEXT NOT NULL, region TEXT, since DATE",
        "format('(%s, %L, %L, %L)', id, name, region, since)",
    ),
    (
        "orders",
        "id INT PRIMARY KEY, customer_id INT, amount DECIMAL(12,2), qty INT, status TEXT, placed TIMESTAMP(6) NULL",
        "format('(%s, %s, %s, %s, %L, %L)', id, customer_id, amount, qty, status, to_char(placed AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'))",
    ),
];

/// Whether `sql` reads only tables of [`MYSQL_TABLES`].
fn reads_only_mysql_tables(sql: &str) -> bool {
    let words: Vec<&str> = sql
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    let mysql = |word: &&str| MYSQL_TABLES.iter().any(|(table, _, _)| table == word);
    words.iter().any(mysql)
        && !words
            .iter()
            .any(|word| TABLES.contains(word) && !mysql(word))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_queries_over_a_mysql_source_answer_as_postgres_answers() {
    let source = SourceSchema::create("differential_mysql").await;
    let fixture = std::fs::read_to_string(corpus_dir().join("fixture.sql")).unwrap();
    source.execute(&fixture).await;
    let primary = connect(SOURCE_DSN).await;
    let mysql = crate::support::MysqlDatabase::create("differential").await;
    let mut datasets = Vec::new();
    for (table, columns, row) in MYSQL_TABLES {
        let values: String = primary
            .query_one(
                &format!(
                    "SELECT string_agg({row}, ', ' ORDER BY id) FROM {}.{table}",
                    source.name
                ),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        mysql
            .execute(&format!(
                "SET time_zone = '+00:00'; CREATE TABLE {{db}}.{table} ({columns}); INSERT INTO {{db}}.{table} VALUES {values}"
            ))
            .await;
        datasets.push(mysql.dataset(table, &format!("{}.{table}", source.name), ""));
    }
    let server = Server::start(&datasets.join("\n")).await;
    server.wait_ready().await;
    primary
        .batch_execute(&session_setup(&source.name))
        .await
        .unwrap();
    let replica = session(&server.dsn(), &source.name).await;

    // The queries over those tables that answer as PostgreSQL does when
    // the tables come from PostgreSQL must answer the same from MariaDB.
    let known = known_differences();
    let corpus = corpus();
    let cases: Vec<&Case> = corpus
        .iter()
        .filter(|case| reads_only_mysql_tables(&case.sql) && !known.contains_key(&case.id))
        .collect();
    assert!(
        cases.len() >= 100,
        "{} queries over the MySQL tables",
        cases.len()
    );
    let mut differ = Vec::new();
    for case in &cases {
        for (protocol, expected, got) in answers(&primary, &replica, &case.sql).await {
            if expected != got {
                differ.push(format!(
                    "{} ({protocol}): {}\n      PostgreSQL {expected:?}\n      pgaccel    {got:?}",
                    case.id,
                    case.sql.trim()
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} answers over the MySQL source differ from PostgreSQL:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
