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

const TABLES: &[&str] = &["nums", "texts", "times", "customers", "orders"];

fn corpus_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/sql/differential"))
}

/// One query of the corpus, known by `file:line`.
struct Case {
    id: String,
    sql: String,
}

/// The corpus: each query ends with `;` at the end of a line; `--` lines
/// between queries are comments.
fn corpus() -> Vec<Case> {
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
fn known_differences() -> BTreeMap<String, String> {
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
enum Answer {
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
    },
    Error(String),
}

async fn simple(client: &Client, sql: &str) -> Answer {
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
async fn extended(client: &Client, sql: &str) -> Answer {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_query_answers_as_postgres_answers() {
    let source = SourceSchema::create("differential").await;
    let fixture = std::fs::read_to_string(corpus_dir().join("fixture.sql")).unwrap();
    source.execute(&fixture).await;
    let server = Server::start(&source.served_datasets(TABLES)).await;
    server.wait_ready().await;

    let setup = format!(
        "SET search_path = {}; SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'",
        source.name
    );
    let primary = connect(SOURCE_DSN).await;
    primary.batch_execute(&setup).await.unwrap();
    let replica = server.client().await;
    replica.batch_execute(&setup).await.unwrap();

    let cases = corpus();
    assert!(cases.len() >= 200, "{} queries in the corpus", cases.len());
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
        for (protocol, expected, got) in [
            (
                "simple",
                simple(&primary, &case.sql).await,
                simple(&replica, &case.sql).await,
            ),
            (
                "extended",
                extended(&primary, &case.sql).await,
                extended(&replica, &case.sql).await,
            ),
        ] {
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
    assert!(
        differ.is_empty() && now_match.is_empty() && unknown.is_empty(),
        "{} queries differ from PostgreSQL:\n{}\n\nlisted but now answer as PostgreSQL (remove them from known_differences.txt): {now_match:?}\nlisted but not in the corpus: {unknown:?}",
        differ.len(),
        differ.join("\n")
    );
}
