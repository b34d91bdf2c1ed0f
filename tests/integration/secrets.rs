//! Secrets never leave pgaccel: distinctive passwords, connection strings
//! and keys are looked for in every output a person or a tool reads (logs at
//! debug level, errors, `/v1/datasets`, metrics, `Debug` output and
//! `pgaccel check`).

use std::process::Command;

use crate::support::{Process, SourceSchema};

const PG_PASS: &str = "Pg-S3cret-Q9v";
const CONNECTION_PASS: &str = "ConnStr-S3cret-X1";
const MYSQL_PASS: &str = "My-S3cret-Z2";
const APP_PASS: &str = "App-S3cret-W3";
const API_KEY: &str = "Api-S3cret-K5";
const SECRETS: [&str; 5] = [PG_PASS, CONNECTION_PASS, MYSQL_PASS, APP_PASS, API_KEY];

fn assert_clean(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(
            !text.contains(secret),
            "{what} shows the secret {secret}:\n{text}"
        );
    }
}

/// The configuration, with the secrets written in (`literal`) or read from
/// the environment.
fn config(source: &SourceSchema, pg: u16, http: u16, literal: bool) -> String {
    let value = |name: &str, secret: &str| {
        if literal {
            format!("'{secret}'")
        } else {
            format!("'${{secrets:{name}}}'")
        }
    };
    let url = if literal {
        format!("'postgresql://postgres:{CONNECTION_PASS}@127.0.0.1:1/test'")
    } else {
        "'${env:BROKEN_URL}'".to_owned()
    };
    format!(
        "runtime:
  pg: {{ listen: 127.0.0.1:{pg}, auth: {{ users: [{{ name: app, password: {app} }}] }} }}
  http: {{ listen: 127.0.0.1:{http}, api_key: {api} }}
datasets:
  - from: postgres:{schema}.t
    name: good
    params: {{ pg_host: 127.0.0.1, pg_db: test, pg_user: postgres, pg_pass: {pg_pass}, pg_sslmode: disable }}
  - from: postgres:{schema}.t
    name: broken_pg
    params: {{ pg_connection_string: {url} }}
    acceleration: {{ refresh_retry_enabled: false }}
  - from: mysql:test.t
    name: broken_my
    params: {{ mysql_host: 127.0.0.1, mysql_tcp_port: 1, mysql_user: root, mysql_pass: {my_pass} }}
    acceleration: {{ refresh_retry_enabled: false }}
",
        schema = source.name,
        app = value("APP_PASS", APP_PASS),
        api = value("API_KEY", API_KEY),
        pg_pass = value("PG_PASS", PG_PASS),
        my_pass = value("MY_PASS", MYSQL_PASS),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_appear_in_no_log_error_status_metric_or_check_output() {
    let folder = tempfile::tempdir().unwrap();
    let source = SourceSchema::create("secrets").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (5)")
        .await;
    let broken_url = format!("postgresql://postgres:{CONNECTION_PASS}@127.0.0.1:1/test");
    let env = [
        ("RUST_LOG", "debug"),
        ("PGACCEL_SECRET_PG_PASS", PG_PASS),
        ("PGACCEL_SECRET_MY_PASS", MYSQL_PASS),
        ("PGACCEL_SECRET_APP_PASS", APP_PASS),
        ("PGACCEL_SECRET_API_KEY", API_KEY),
        ("BROKEN_URL", broken_url.as_str()),
    ];
    let process = Process::start_config(
        folder.path(),
        |pg, http| config(&source, pg, http, false),
        &env,
    );
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let request = http.get(process.url(path)).bearer_auth(API_KEY);
        async move {
            match request.send().await {
                Ok(response) => Some(response.text().await.unwrap_or_default()),
                Err(_) => None,
            }
        }
    };
    // Every dataset settles: `good` loads, the others fail to connect.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(body) = get("/v1/datasets?status=true").await {
            let list: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap_or_default();
            let settled = list.len() == 3
                && list
                    .iter()
                    .all(|entry| entry["status"] == "Ready" || entry["status"] == "Error");
            if settled {
                assert!(
                    body.contains("\"Ready\"") && body.contains("\"Error\""),
                    "{body}"
                );
                break body;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "datasets did not settle"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_clean("/v1/datasets", &status);
    assert_clean("/metrics", &get("/metrics").await.unwrap());

    // Logging in, rightly and wrongly, and the errors queries get.
    let dsn = |password: &str| {
        format!(
            "host=127.0.0.1 port={} user=app dbname=test password={password}",
            process.pg.port()
        )
    };
    let (client, connection) = tokio_postgres::connect(&dsn(APP_PASS), tokio_postgres::NoTls)
        .await
        .expect("app logs in");
    tokio::spawn(connection);
    let id: i32 = client
        .query_one("SELECT id FROM good", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(id, 5);
    let mut errors = String::new();
    for table in ["broken_pg", "broken_my"] {
        let error = client
            .query(&format!("SELECT * FROM {table}"), &[])
            .await
            .unwrap_err();
        errors.push_str(&format!("{error:?}\n"));
    }
    let refused = tokio_postgres::connect(&dsn("Wrong-Guess-V4"), tokio_postgres::NoTls)
        .await
        .err()
        .expect("a wrong password is refused");
    errors.push_str(&format!("{refused:?}\n"));
    assert_clean("errors sent to clients", &errors);

    // `pgaccel check` on the same file, with the same environment.
    let checked = Command::new(env!("CARGO_BIN_EXE_pgaccel"))
        .args(["check", "--config"])
        .arg(folder.path().join("pgaccel.yaml"))
        .envs(env.iter().copied())
        .output()
        .expect("pgaccel check runs");
    let (checked, check_output) = crate::support::outcome(&checked);
    assert!(checked, "{check_output}");
    assert_clean("pgaccel check", &check_output);

    // The configuration's Debug output, with the secrets written in.
    let written = config(&source, 1, 2, true);
    let parsed = pgaccel::config::from_yaml_str(&written).expect("the configuration is valid");
    assert_clean("the configuration's Debug output", &format!("{parsed:?}"));
    // And an invalid one: errors name keys, never values.
    let invalid = written.replace("pg_sslmode: disable", "pg_sslmode: sometimes");
    let error = pgaccel::config::from_yaml_str(&invalid).unwrap_err();
    assert!(error.to_string().contains("pg_sslmode"), "{error}");
    assert_clean("configuration errors", &format!("{error}\n{error:?}"));

    // Last, the log: everything above was logged at debug level.
    drop(process);
    let log = std::fs::read_to_string(folder.path().join("pgaccel.log")).unwrap();
    assert!(log.contains("DEBUG"), "the log is at debug level");
    assert_clean("the log", &log);
}
