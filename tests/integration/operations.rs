//! What operators deploy and watch: the Dockerfile, the Kubernetes and
//! Compose files, the Grafana dashboard, the logs, the query metrics and
//! the progress of a refresh.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

use crate::cdc::{StreamObjects, changes_dataset};
use crate::support::{
    Process, Relay, Server, SourceSchema, eventually, installed_clients_dir, outcome,
    set_up_clients,
};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// A linter `tests/clients/setup.sh` installs.
fn linter(name: &str) -> PathBuf {
    installed_clients_dir().join("deploy-lint/bin").join(name)
}

fn run(program: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    outcome(&output)
}

/// `pgaccel check` of `config`, with `env` added to its environment.
fn check(config: &Path, env: &[(String, String)]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_pgaccel"))
        .args(["check", "--config"])
        .arg(config)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("the pgaccel binary runs");
    outcome(&output)
}

fn yaml_documents(path: &Path) -> Vec<Yaml> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(yaml: &Yaml) -> Vec<String> {
    yaml.as_vec()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dockerfile_passes_hadolint_and_its_default_config_serves_the_quickstart() {
    set_up_clients().await;
    let (ok, out) = run(
        &linter("hadolint"),
        &["--config", ".hadolint.yaml", "Dockerfile"],
    );
    assert!(ok, "hadolint Dockerfile:\n{out}");

    let dockerfile = std::fs::read_to_string(repo("Dockerfile")).unwrap();
    let runtime = dockerfile.split("\nFROM ").last().expect("a runtime stage");
    let user = runtime
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("USER "))
        .expect("the runtime stage names its user");
    assert!(
        !["root", "0", "0:0"].contains(&user.trim()),
        "the image runs as {user}"
    );
    assert!(
        runtime.contains("ENTRYPOINT [\"pgaccel\"]")
            && runtime.contains("CMD [\"run\", \"--config\", \"/etc/pgaccel/pgaccel.yaml\"]"),
        "{runtime}"
    );
    // What the runtime stage copies from the build context exists.
    for line in runtime.lines().filter(|line| line.starts_with("COPY ")) {
        if line.contains("--from=") {
            continue;
        }
        let source = line.split_whitespace().nth(1).unwrap();
        assert!(repo(source).exists(), "{line}: {source} is missing");
    }

    // The image's own configuration, with the image's paths mapped to this
    // checkout and loopback ports: it loads and answers.
    let config = std::fs::read_to_string(repo("deploy/docker/pgaccel.yaml")).unwrap();
    let folder = tempfile::tempdir().unwrap();
    let quickstart = repo("testdata/quickstart");
    let server = Process::start_config(
        folder.path(),
        |pg, http| {
            config
                .replace(
                    "/usr/share/pgaccel/quickstart",
                    quickstart.to_str().unwrap(),
                )
                .replace("0.0.0.0:15432", &format!("127.0.0.1:{pg}"))
                .replace("0.0.0.0:8090", &format!("127.0.0.1:{http}"))
        },
        &[],
    );
    server.wait_ready().await;
    let client = server.client().await;
    let trips: i64 = client
        .query_one("SELECT count(*) FROM trips", &[])
        .await
        .unwrap()
        .get(0);
    assert!(trips > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_manifests_validate_and_wire_the_probes_configs_and_secrets() {
    set_up_clients().await;
    let dir = repo("deploy/kubernetes");
    let kustomization = &yaml_documents(&dir.join("kustomization.yaml"))[0];
    let resources = strings(&kustomization["resources"]);
    assert!(!resources.is_empty());
    let mut args = vec!["--strict".to_owned()];
    args.extend(
        resources
            .iter()
            .map(|file| dir.join(file).to_str().unwrap().to_owned()),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, out) = run(&linter("kubernetes-validate"), &args);
    assert!(ok, "kubernetes-validate:\n{out}");

    let documents: Vec<Yaml> = resources
        .iter()
        .flat_map(|file| yaml_documents(&dir.join(file)))
        .collect();
    let of_kind = |kind: &str| -> Vec<&Yaml> {
        documents
            .iter()
            .filter(|doc| doc["kind"].as_str() == Some(kind))
            .collect()
    };
    // The credentials the configurations read, from the Secret.
    let secret = of_kind("Secret");
    assert_eq!(secret.len(), 1);
    let secret_name = secret[0]["metadata"]["name"].as_str().unwrap();
    let credentials: Vec<(String, String)> = secret[0]["stringData"]
        .as_hash()
        .expect("the Secret's stringData")
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().into(), v.as_str().unwrap().into()))
        .collect();

    // Every configuration of the ConfigMap passes `pgaccel check`.
    let generator = &kustomization["configMapGenerator"][0];
    let config_map = generator["name"].as_str().unwrap();
    let files = strings(&generator["files"]);
    assert_eq!(files.len(), 2, "a writer and a replica configuration");
    for file in &files {
        let (ok, out) = check(&dir.join(file), &credentials);
        assert!(ok, "pgaccel check {file}:\n{out}");
    }

    let deployments = of_kind("Deployment");
    assert_eq!(deployments.len(), 2, "the writer and the replicas");
    let service = of_kind("Service");
    assert_eq!(service.len(), 1);
    for deployment in deployments {
        let name = deployment["metadata"]["name"].as_str().unwrap();
        let pod = &deployment["spec"]["template"];
        // The Service reaches every pod.
        for (key, value) in service[0]["spec"]["selector"].as_hash().unwrap() {
            assert_eq!(
                &pod["metadata"]["labels"][key.as_str().unwrap()],
                value,
                "{name}: the Service selects {key:?}"
            );
        }
        assert_eq!(
            pod["spec"]["securityContext"]["runAsNonRoot"].as_bool(),
            Some(true),
            "{name}"
        );
        let container = &pod["spec"]["containers"][0];
        assert_eq!(
            container["readinessProbe"]["httpGet"]["path"].as_str(),
            Some("/v1/ready"),
            "{name}"
        );
        assert_eq!(
            container["livenessProbe"]["httpGet"]["path"].as_str(),
            Some("/health"),
            "{name}"
        );
        // It runs one of the ConfigMap's configurations, mounted from it.
        let args = strings(&container["args"]);
        let config = args
            .iter()
            .skip_while(|arg| *arg != "--config")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no --config in {args:?}"));
        let file = config
            .strip_prefix("/etc/pgaccel/")
            .unwrap_or_else(|| panic!("{name}: {config}"));
        assert!(
            files.iter().any(|f| f.ends_with(&format!("/{file}"))),
            "{name}: {file} is not in the ConfigMap ({files:?})"
        );
        let volumes = pod["spec"]["volumes"].as_vec().unwrap();
        assert!(
            volumes
                .iter()
                .any(|v| v["configMap"]["name"].as_str() == Some(config_map)),
            "{name}: mounts the ConfigMap"
        );
        // Its secret variables come from the Secret, which has them.
        for variable in container["env"].as_vec().unwrap() {
            let reference = &variable["valueFrom"]["secretKeyRef"];
            if reference.is_badvalue() {
                continue;
            }
            assert_eq!(reference["name"].as_str(), Some(secret_name), "{name}");
            let key = reference["key"].as_str().unwrap();
            assert!(
                credentials.iter().any(|(k, _)| k == key),
                "{name}: the Secret has no {key}"
            );
        }
    }
}

#[test]
fn the_compose_service_runs_a_configuration_that_checks() {
    let compose = &yaml_documents(&repo("docker-compose.yml"))[0];
    let service = &compose["services"]["pgaccel"];
    assert_eq!(service["build"].as_str(), Some("."));
    assert!(
        !service["depends_on"]["postgres"].is_badvalue(),
        "pgaccel starts after the compose file's PostgreSQL"
    );
    let mount = strings(&service["volumes"])
        .into_iter()
        .find(|volume| volume.contains(":/etc/pgaccel/pgaccel.yaml"))
        .expect("a configuration mounted at /etc/pgaccel/pgaccel.yaml");
    let config = repo(mount.split(':').next().unwrap());
    let env: Vec<(String, String)> = service["environment"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().into(), v.as_str().unwrap().into()))
        .collect();
    let (ok, out) = check(&config, &env);
    assert!(ok, "pgaccel check {}:\n{out}", config.display());
}

/// The metric names a PromQL expression reads.
fn metric_names(expression: &str) -> BTreeSet<String> {
    const KEYWORDS: [&str; 6] = ["by", "without", "on", "ignoring", "bool", "offset"];
    let mut names = BTreeSet::new();
    // Label matchers, ranges and grouping lists name no metric.
    let mut text = String::new();
    let mut depth = 0;
    for c in expression.chars() {
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => depth -= 1,
            _ if depth == 0 => text.push(c),
            _ => {}
        }
    }
    let grouping = regex::Regex::new(r"\b(by|without|on|ignoring)\s*\([^)]*\)").unwrap();
    let text = grouping.replace_all(&text, " ");
    let identifier = regex::Regex::new(r"[A-Za-z_:][A-Za-z0-9_:]*").unwrap();
    for found in identifier.find_iter(&text) {
        let after = text[found.end()..].trim_start();
        let word = found.as_str();
        if after.starts_with('(') || KEYWORDS.contains(&word) {
            continue;
        }
        names.insert(word.to_owned());
    }
    names
}

#[test]
fn metric_names_are_found_in_promql() {
    assert_eq!(
        metric_names(
            "histogram_quantile(0.95, sum by (dataset, le) (rate(a_bucket{instance=~\"$i\"}[$__rate_interval])))"
        ),
        BTreeSet::from(["a_bucket".to_owned()])
    );
    assert_eq!(
        metric_names("time() * 1000 - max by (d) (b{x=\"y\"})"),
        BTreeSet::from(["b".to_owned()])
    );
    assert_eq!(
        metric_names("label_values(c, instance)"),
        BTreeSet::from(["c".to_owned(), "instance".to_owned()])
    );
}

/// Every expression of the dashboard: panel targets and variable queries.
fn dashboard_expressions(dashboard: &Value) -> Vec<String> {
    let mut expressions = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            expressions.push(target["expr"].as_str().unwrap().to_owned());
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(query) = variable["query"]["query"].as_str() {
            // label_values(metric, label): the metric.
            let inner = query
                .strip_prefix("label_values(")
                .and_then(|rest| rest.split(',').next())
                .unwrap_or(query);
            expressions.push(inner.to_owned());
        }
    }
    expressions
}

/// The Grafana dashboard reads only series the binary exports: each metric
/// its panels and variables name is in `/metrics` of a pgaccel that served
/// queries and followed a change stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grafana_dashboard_reads_only_metrics_pgaccel_exports() {
    let text = std::fs::read_to_string(repo("deploy/grafana/pgaccel.json")).unwrap();
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().unwrap();
    let ids: BTreeSet<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "panel ids are unique");
    for panel in panels {
        let grid = &panel["gridPos"];
        assert!(
            grid["x"].as_u64().unwrap() + grid["w"].as_u64().unwrap() <= 24,
            "{panel}"
        );
        if panel["type"] != "row" {
            assert_eq!(panel["datasource"]["uid"], "${datasource}", "{panel}");
        }
    }
    let wanted: BTreeSet<String> = dashboard_expressions(&dashboard)
        .iter()
        .flat_map(|expression| metric_names(expression))
        .collect();
    assert!(wanted.len() >= 15, "{wanted:?}");

    // A pgaccel that refreshed, followed changes, answered and refused
    // queries, in a process of its own.
    let source = SourceSchema::create("ops_dash").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY, v text); INSERT INTO {schema}.t VALUES (1, 'a'), (2, 'b');")
        .await;
    let objects = StreamObjects::of(&source);
    let folder = tempfile::tempdir().unwrap();
    let server = Process::start(
        folder.path(),
        "",
        &changes_dataset(&source, &objects, "dash", ""),
    );
    server.wait_ready().await;
    let client = server.client().await;
    source
        .execute("INSERT INTO {schema}.t VALUES (3, 'c')")
        .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let rows = client
            .query_one("SELECT count(*) FROM dash", &[])
            .await
            .unwrap()
            .get::<_, i64>(0);
        if rows == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "the insert was not applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    client
        .query_one("SELECT v FROM dash WHERE id = $1", &[&1i32])
        .await
        .unwrap();
    let error = client.simple_query("SELECT 1 / 0").await.unwrap_err();
    assert_eq!(error.code().map(|c| c.code()), Some("22012"));

    let (_, exported) = server.get("/metrics").await;
    let exported: BTreeSet<String> = exported
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| line.split(['{', ' ']).next().unwrap_or_default().to_owned())
        .collect();
    let missing: Vec<&String> = wanted
        .iter()
        .filter(|name| *name != "instance" && !exported.contains(*name))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard reads {missing:?}, which pgaccel does not export; it exports {exported:?}"
    );
}

/// A statement's duration runs until its last row reached the client: a
/// client that reads a large result slowly makes it long. An error raised
/// while rows stream is counted as a failed statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_metrics_cover_streaming_to_the_client_and_errors_while_streaming() {
    let folder = tempfile::tempdir().unwrap();
    let server = Process::start(folder.path(), "", "  []\n");
    server.wait_ready().await;
    let pg = server.pg;
    // The result (about 30 MB) is more than the sockets buffer, so pgaccel
    // waits on the client while it does not read.
    let pause = Duration::from_millis(1500);
    let rows = tokio::task::spawn_blocking(move || {
        slow_reader(
            pg,
            "SELECT n, 'padding' FROM generate_series(1, 1500000) AS g(n)",
            pause,
        )
    })
    .await
    .unwrap();
    assert_eq!(rows, 1_500_000);
    let client = server.client().await;
    let error = client
        .simple_query("SELECT 10 / (n - 300000) FROM generate_series(1, 400000) AS g(n)")
        .await
        .unwrap_err();
    assert_eq!(error.code().map(|c| c.code()), Some("22012"));

    let (_, metrics) = server.get("/metrics").await;
    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{metrics}"))
    };
    let slow = value("query_duration_ms_sum{outcome=\"ok\"}");
    assert!(
        slow >= pause.as_millis() as f64,
        "the slowly read statement took {slow} ms by query_duration_ms"
    );
    assert_eq!(value("query_executions{outcome=\"error\"}"), 1.0);
    assert_eq!(value("query_duration_ms_count{outcome=\"error\"}"), 1.0);
    assert_eq!(value("query_errors{class=\"22\"}"), 1.0);
    assert!(
        value("pg_connections") >= 1.0,
        "the client still connected is counted"
    );
}

/// Runs `sql` over a raw protocol connection that waits `pause` before it
/// reads the result; the number of rows read.
fn slow_reader(pg: std::net::SocketAddr, sql: &str, pause: Duration) -> usize {
    let mut socket = std::net::TcpStream::connect(pg).unwrap();
    let mut startup = Vec::new();
    startup.extend_from_slice(&196608i32.to_be_bytes());
    for part in ["user", "tester", "database", "test", ""] {
        startup.extend_from_slice(part.as_bytes());
        startup.push(0);
    }
    let mut message = ((startup.len() + 4) as i32).to_be_bytes().to_vec();
    message.extend_from_slice(&startup);
    socket.write_all(&message).unwrap();
    read_until_ready(&mut socket);
    let mut query = vec![b'Q'];
    query.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
    query.extend_from_slice(sql.as_bytes());
    query.push(0);
    socket.write_all(&query).unwrap();
    std::thread::sleep(pause);
    read_until_ready(&mut socket)
}

/// Reads messages up to ReadyForQuery; the DataRows among them. An
/// ErrorResponse fails the test.
fn read_until_ready(socket: &mut std::net::TcpStream) -> usize {
    let mut socket = std::io::BufReader::with_capacity(1 << 16, socket);
    let mut rows = 0;
    loop {
        let mut header = [0u8; 5];
        socket.read_exact(&mut header).unwrap();
        let length = i32::from_be_bytes(header[1..5].try_into().unwrap()) as usize - 4;
        let mut body = vec![0u8; length];
        socket.read_exact(&mut body).unwrap();
        match header[0] {
            b'D' => rows += 1,
            b'E' => panic!("error: {}", String::from_utf8_lossy(&body)),
            b'Z' => return rows,
            _ => {}
        }
    }
}

/// Logs written to a file carry no colour codes; `--log-format json`
/// (`PGACCEL_LOG_FORMAT`) writes one JSON object per line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_are_plain_off_a_terminal_and_json_on_request() {
    let quickstart = repo("testdata/quickstart/zones.csv");
    let dataset = format!("  - from: file:{}\n    name: zones\n", quickstart.display());
    let plain_folder = tempfile::tempdir().unwrap();
    let plain = Process::start(plain_folder.path(), "", &dataset);
    plain.wait_ready().await;
    let text = plain.log_text();
    assert!(text.contains("zones"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );

    let json_folder = tempfile::tempdir().unwrap();
    let json = Process::start_with_env(
        json_folder.path(),
        "",
        &dataset,
        &[("PGACCEL_LOG_FORMAT", "json")],
    );
    json.wait_ready().await;
    let text = json.log_text();
    let mut events = 0;
    for line in text.lines() {
        // The one line the command prints itself, on standard output.
        if line.starts_with("pgaccel is serving") {
            continue;
        }
        let event: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}"));
        assert!(
            event["level"].is_string() && event["timestamp"].is_string(),
            "{line}"
        );
        if event["dataset"] == "zones" {
            events += 1;
        }
    }
    assert!(events > 0, "no event names the dataset:\n{text}");
}

/// While a refresh reads its source, the status shows the rows and bytes
/// read and their rate; `pgaccel refresh --wait` follows a refresh to its
/// end, and fails with the refresh's error when it fails for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_refresh_reports_its_progress_and_refresh_wait_follows_it() {
    let source = SourceSchema::create("ops_progress").await;
    source
        .execute("CREATE TABLE {schema}.t AS SELECT n AS id, repeat('x', 100) AS pad FROM generate_series(1, 100000) AS g(n)")
        .await;
    // The first read goes silent after 2 MB: the refresh stays in flight.
    let relay = Relay::start(Some(2 << 20)).await;
    let dataset = format!(
        "  - from: postgres:{schema}.t\n    name: t\n    params: {{ pg_host: 127.0.0.1, pg_port: {port}, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n    acceleration:\n      refresh_retry_enabled: false\n",
        schema = source.name,
        port = relay.port
    );
    let server = Server::start(&dataset).await;
    let status = server
        .wait_for_status("t", |status| {
            status["refresh_progress"]["rows"].as_u64() > Some(0)
        })
        .await;
    assert_eq!(status["refresh_phase"], "reading", "{status}");
    assert_eq!(status["refresh_mode"], "full", "{status}");
    let progress = &status["refresh_progress"];
    assert!(progress["rows"].as_u64() < Some(100_000), "{status}");
    assert!(progress["bytes"].as_u64() > Some(0), "{status}");
    assert!(progress["rows_per_second"].as_f64() > Some(0.0), "{status}");
    assert!(progress["started_at"].is_string(), "{status}");
    // The first rows can show before the relay has carried its 2 MB.
    eventually("the relay stalls the first read", || async {
        relay.has_stalled()
    })
    .await;

    // The requested refresh replaces the stalled one and completes.
    let api = format!("http://{}", server.runtime.http_addr());
    let wait = |api: String| {
        tokio::task::spawn_blocking(move || {
            let output = Command::new(env!("CARGO_BIN_EXE_pgaccel"))
                .args(["refresh", "t", "--wait", "--timeout", "60s", "--api", &api])
                .output()
                .expect("the pgaccel binary runs");
            outcome(&output)
        })
    };
    let (ok, out) = wait(api.clone()).await.unwrap();
    assert!(ok, "{out}");
    assert!(out.contains("Dataset 't' refreshed in"), "{out}");
    assert!(out.contains("100000 rows"), "{out}");
    let status = server.dataset_status("t").await;
    assert_eq!(status["status"], "Ready", "{status}");
    assert!(status["refresh_progress"].is_null(), "{status}");

    // With the source gone and no retries, the wait ends in the error.
    relay.cut();
    let (ok, out) = wait(api).await.unwrap();
    assert!(!ok, "{out}");
    assert!(out.contains("refresh of 't' failed:"), "{out}");
    let status = server.dataset_status("t").await;
    assert_eq!(status["status"], "Error", "{status}");
    assert_eq!(status["rows"], 100000, "the last good rows are served");
}
