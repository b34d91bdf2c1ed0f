//! The real client libraries (psycopg 3, psycopg2, SQLAlchemy + pandas,
//! asyncpg, node-postgres, pgjdbc, pgbench) run the checks of
//! `tests/clients/` against PostgreSQL and against pgaccel serving the same
//! tables: each check must pass against both, so a check that PostgreSQL
//! itself fails is caught as a wrong check, not passed as pgaccel's.
//!
//! Multi-host connection strings with `target_session_attrs` (libpq through
//! psql and psycopg, pgjdbc's `targetServerType`) pick pgaccel as the
//! standby. node-postgres has no such setting.
//!
//! The clients are installed by `tests/clients/setup.sh` into a cache
//! folder outside the clone; the test runs it first (a second run only
//! checks stamps, about 2 s).

use std::path::PathBuf;
use std::time::Duration;

use tokio::process::Command;

use crate::support::{
    SOURCE_DSN, Server, SourceSchema, clients_dir, installed_clients_dir, run_script,
    set_up_clients,
};

fn checks_env(dsn: &str, schema: &str, target: &str) -> Vec<(&'static str, String)> {
    vec![
        ("CLIENT_DSN", dsn.to_owned()),
        ("CLIENT_SCHEMA", schema.to_owned()),
        ("CLIENT_TARGET", target.to_owned()),
    ]
}

fn python() -> PathBuf {
    installed_clients_dir().join("venv/bin/python")
}

/// What one client printed for `SELECT pg_is_in_recovery()` on the server
/// it chose ("t" or "f"), or its error.
async fn chosen(program: &std::path::Path, args: &[&str]) -> String {
    let output = tokio::time::timeout(
        Duration::from_secs(60),
        Command::new(program).args(args).kill_on_drop(true).output(),
    )
    .await
    .expect("the client finishes within a minute")
    .expect("the client runs");
    let printed = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() {
        printed
    } else {
        format!(
            "failed: {printed}{}",
            String::from_utf8_lossy(&output.stderr)
        )
    }
}

/// A multi-host connection naming PostgreSQL and pgaccel, in both orders:
/// `target_session_attrs` that ask for a standby or a read-only server
/// choose pgaccel (in recovery), those that ask for a primary or a
/// writable server skip it. pgaccel reports `in_hot_standby` and
/// `default_transaction_read_only`, and answers `pg_is_in_recovery()` and
/// `SHOW transaction_read_only` as a standby.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_session_attrs_choose_pgaccel_as_the_standby() {
    set_up_clients().await;
    let source = SourceSchema::create("targets").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY)")
        .await;
    let server = Server::start(&source.served_datasets(&["t"])).await;
    server.wait_ready().await;
    let pgaccel = server.runtime.pg_addr().port();
    let python = python();
    let jdbc_check = clients_dir().join("TargetServer.java");
    let jdbc_check = jdbc_check.to_str().expect("a UTF-8 path");
    let psycopg = "import psycopg, sys\n\
        with psycopg.connect(sys.argv[1]) as c:\n\
        \x20   print('t' if c.execute('SELECT pg_is_in_recovery()').fetchone()[0] else 'f')";
    let cases = [
        ("read-only", "secondary", "t"),
        ("standby", "secondary", "t"),
        ("prefer-standby", "preferSecondary", "t"),
        ("read-write", "primary", "f"),
        ("primary", "primary", "f"),
    ];
    for ports in [[5432, pgaccel], [pgaccel, 5432]] {
        for (attrs, server_type, expected) in cases {
            let libpq = format!(
                "host=127.0.0.1,127.0.0.1 port={},{} user=postgres dbname=test target_session_attrs={attrs}",
                ports[0], ports[1]
            );
            let jdbc = format!(
                "jdbc:postgresql://127.0.0.1:{},127.0.0.1:{}/test?user=postgres&targetServerType={server_type}",
                ports[0], ports[1]
            );
            let answers = [
                (
                    "psql",
                    chosen(
                        "psql".as_ref(),
                        &["-X", "-Atc", "SELECT pg_is_in_recovery()", &libpq],
                    )
                    .await,
                ),
                ("psycopg", chosen(&python, &["-c", psycopg, &libpq]).await),
                (
                    "pgjdbc",
                    chosen(
                        "java".as_ref(),
                        &["-cp", "/usr/share/java/postgresql.jar", jdbc_check, &jdbc],
                    )
                    .await,
                ),
            ];
            for (client, answer) in answers {
                assert_eq!(
                    answer, expected,
                    "{client} with {attrs}/{server_type} over ports {ports:?} (pgaccel is {pgaccel})"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_clients_pass_their_checks_against_postgres_and_pgaccel() {
    set_up_clients().await;

    let source = SourceSchema::create("clients").await;
    let fixture = std::fs::read_to_string(clients_dir().join("fixture.sql")).expect("fixture.sql");
    source.execute(&fixture).await;

    // The checks are right: PostgreSQL passes every one of them.
    let (passed, log) =
        run_script("run.sh", &checks_env(SOURCE_DSN, &source.name, "postgres")).await;
    assert!(
        passed,
        "the client checks fail against PostgreSQL itself:\n{log}"
    );

    let server = Server::start(&source.served_datasets(&["all_types", "orders"])).await;
    server.wait_ready().await;
    let (passed, log) = run_script(
        "run.sh",
        &checks_env(&server.dsn(), &source.name, "pgaccel"),
    )
    .await;
    assert!(passed, "the client checks fail against pgaccel:\n{log}");
    // Every check ran (Go is skipped where it is not installed).
    for check in [
        "psycopg3",
        "psycopg2",
        "sqlalchemy-psycopg2",
        "sqlalchemy-psycopg",
        "asyncpg",
        "node",
        "jdbc",
        "pgbench",
    ] {
        assert!(
            log.contains(&format!("PASS {check}:")),
            "{check} did not pass against pgaccel:\n{log}"
        );
    }
}
