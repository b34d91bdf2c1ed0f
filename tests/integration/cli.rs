//! The `pgaccel` command line: `check` reports every configuration problem,
//! `refresh` and `datasets` talk to a running server.

use std::process::Command;

use crate::support::{Server, SourceSchema};

fn pgaccel(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_pgaccel"))
        .args(args)
        .output()
        .expect("the pgaccel binary runs");
    crate::support::outcome(&output)
}

fn fixture(path: &str) -> String {
    format!("{}/testdata/config/{path}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn check_accepts_the_quickstart_and_rejects_bad_files_with_every_message() {
    let quickstart = format!("{}/pgaccel.yaml", env!("CARGO_MANIFEST_DIR"));
    let (ok, out) = pgaccel(&["check", "-c", &quickstart]);
    assert!(ok, "{out}");

    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        bad.path(),
        "datasets:\n  - from: postgres:public.a\n    name: a\n    acceleration:\n      refresh_mode: fulll\n  - from: postgres:public.b\n    name: b\n    acceleration:\n      refresh_check_interval: 10 minutes\n",
    )
    .unwrap();
    let (ok, out) = pgaccel(&["check", "-c", bad.path().to_str().unwrap()]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("dataset 'a'") && out.contains("acceleration.refresh_mode"),
        "{out}"
    );
    assert!(
        out.contains("dataset 'b'") && out.contains("acceleration.refresh_check_interval"),
        "{out}"
    );
}

#[test]
fn check_names_the_key_of_each_invalid_fixture() {
    for name in [
        "cron-and-interval.yaml",
        "data-window-without-time-column.yaml",
        "unknown-key.yaml",
        "bad-duration.yaml",
    ] {
        let path = fixture(&format!("invalid/{name}"));
        let text = std::fs::read_to_string(&path).unwrap();
        let expected = text
            .lines()
            .next()
            .unwrap()
            .trim_start_matches("# expect:")
            .trim()
            .to_owned();
        let (ok, out) = pgaccel(&["check", "-c", &path]);
        assert!(!ok, "{name}: {out}");
        assert!(
            out.contains(&expected),
            "{name}: expected {expected:?} in {out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_and_datasets_commands_talk_to_a_running_server() {
    let source = SourceSchema::create("cli").await;
    source
        .execute("CREATE TABLE {schema}.t (id int); INSERT INTO {schema}.t VALUES (1), (2);")
        .await;
    let server = Server::start(&source.dataset("t", "t", "")).await;
    server.wait_ready().await;
    let api = format!("http://{}", server.runtime.http_addr());
    let (ok, out) = tokio::task::spawn_blocking({
        let api = api.clone();
        move || pgaccel(&["refresh", "t", "--api", &api])
    })
    .await
    .unwrap();
    assert!(ok, "{out}");
    assert!(out.contains("Dataset refresh triggered for t."), "{out}");
    let (ok, out) = tokio::task::spawn_blocking(move || pgaccel(&["datasets", "--api", &api]))
        .await
        .unwrap();
    assert!(ok, "{out}");
    let line = out
        .lines()
        .find(|line| line.starts_with("t "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("Ready") || line.contains("Refreshing"),
        "{line}"
    );
}

/// `runtime.http.api_key` guards every `/v1` route and `/metrics` (unless
/// `metrics_public`), by `Authorization: Bearer` or `X-API-Key`; `/health`
/// and `/v1/ready` (the probes) stay open; `pgaccel refresh`/`datasets` send the key from
/// `PGACCEL_API_KEY` or from the configuration file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_key_guards_the_api_and_the_commands_send_it() {
    const KEY: &str = "k3y-0f-the-admin-api";
    let config = |extra: &str| {
        format!(
            "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0, api_key: {KEY}{extra} }}\ndatasets: []\n"
        )
    };
    let server = Server::start_with_config(&config("")).await;
    let http = reqwest::Client::new();
    let status = |request: reqwest::RequestBuilder| async move {
        request
            .send()
            .await
            .expect("the API answers")
            .status()
            .as_u16()
    };
    for path in ["/v1/datasets", "/metrics"] {
        let url = server.url(path);
        assert_eq!(status(http.get(&url)).await, 401, "{path} without a key");
        assert_eq!(
            status(http.get(&url).bearer_auth("k3y-0f-the-admin-apI")).await,
            401,
            "{path} with a wrong key"
        );
        assert_eq!(status(http.get(&url).bearer_auth(KEY)).await, 200, "{path}");
        assert_eq!(
            status(http.get(&url).header("X-API-Key", KEY)).await,
            200,
            "{path}"
        );
    }
    assert_eq!(
        status(http.post(server.url("/v1/datasets/x/acceleration/refresh"))).await,
        401
    );
    assert_eq!(status(http.get(server.url("/health"))).await, 200);
    assert_eq!(status(http.get(server.url("/v1/ready"))).await, 200);

    let public = Server::start_with_config(&config(", metrics_public: true")).await;
    assert_eq!(status(http.get(public.url("/metrics"))).await, 200);
    assert_eq!(status(http.get(public.url("/v1/datasets"))).await, 401);

    let api = format!("http://{}", server.runtime.http_addr());
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), config("")).unwrap();
    let path = file.path().to_str().unwrap().to_owned();
    let (refused, with_env, with_config) = tokio::task::spawn_blocking(move || {
        let run = |args: &[&str], key: Option<&str>| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_pgaccel"));
            command.args(args).env_remove("PGACCEL_API_KEY");
            if let Some(key) = key {
                command.env("PGACCEL_API_KEY", key);
            }
            let output = command.output().expect("the pgaccel binary runs");
            crate::support::outcome(&output)
        };
        (
            run(&["datasets", "--api", &api], None),
            run(&["datasets", "--api", &api], Some(KEY)),
            run(&["datasets", "--api", &api, "-c", &path], None),
        )
    })
    .await
    .unwrap();
    assert!(!refused.0 && refused.1.contains("401"), "{}", refused.1);
    assert!(
        with_env.0 && with_env.1.starts_with("NAME"),
        "{}",
        with_env.1
    );
    assert!(
        with_config.0 && with_config.1.starts_with("NAME"),
        "{}",
        with_config.1
    );
}
