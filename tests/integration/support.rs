//! Test harness: a PostgreSQL schema of the test's own on the real server,
//! and an in-process pgaccel bound to free ports.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pgaccel::runtime::Runtime;
use serde_json::Value;
use tokio_postgres::{Client, NoTls};

pub const SOURCE_DSN: &str = "host=127.0.0.1 port=5432 user=postgres dbname=test";

/// A schema on the real PostgreSQL, unique to one test, dropped at the end
/// (also when the test panics).
pub struct SourceSchema {
    pub name: String,
    pub client: Client,
}

impl SourceSchema {
    pub async fn create(prefix: &str) -> SourceSchema {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "pgaccel_{prefix}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let client = connect(SOURCE_DSN).await;
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"
            ))
            .await
            .expect("create the test schema");
        SourceSchema { name, client }
    }

    /// A connection to the source PostgreSQL that reads this schema's
    /// tables by their bare names, to compare answers with.
    pub async fn connect_in(&self) -> Client {
        connect(&format!(
            "{SOURCE_DSN} options='-c search_path={}'",
            self.name
        ))
        .await
    }

    pub async fn execute(&self, sql: &str) {
        let sql = sql.replace("{schema}", &self.name);
        self.client
            .batch_execute(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// Dataset entries serving `tables` of this schema under their own
    /// schema-qualified names (`<schema>.<table>`).
    pub fn served_datasets(&self, tables: &[&str]) -> String {
        tables
            .iter()
            .map(|table| self.dataset(table, &format!("{}.{table}", self.name), ""))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A dataset entry reading `table` of this schema.
    pub fn dataset(&self, table: &str, name: &str, acceleration: &str) -> String {
        format!(
            "  - from: postgres:{schema}.{table}\n    name: {name}\n    params: {{ pg_host: 127.0.0.1, pg_port: 5432, pg_db: test, pg_user: postgres, pg_sslmode: disable }}\n{acceleration}",
            schema = self.name
        )
    }
}

impl Drop for SourceSchema {
    fn drop(&mut self) {
        // Synchronous on purpose: runs even while a failed test unwinds.
        let _ = Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                "test",
                "-q",
                "-c",
            ])
            .arg(format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name))
            .output();
    }
}

pub async fn connect(dsn: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(dsn, NoTls)
        .await
        .unwrap_or_else(|e| panic!("connect to {dsn}: {e}"));
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// How long a starting pgaccel may take to be ready.
const READY_LIMIT: Duration = Duration::from_secs(60);
/// A pgaccel running in this process.
pub struct Server {
    pub runtime: Runtime,
    endpoint: Endpoint,
}

impl Server {
    /// Starts pgaccel with `datasets` (YAML list entries) on free ports.
    pub async fn start(datasets: &str) -> Server {
        let yaml = format!(
            "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0 }}\ndatasets:\n{datasets}"
        );
        Server::start_with_config(&yaml).await
    }

    /// Starts pgaccel with a whole configuration file's text.
    pub async fn start_with_config(yaml: &str) -> Server {
        capture_logs();
        let config = pgaccel::config::from_yaml_str(yaml).unwrap_or_else(|e| panic!("{yaml}\n{e}"));
        let runtime = Runtime::start(config).await.expect("pgaccel starts");
        let endpoint = Endpoint::new(runtime.pg_addr(), runtime.http_addr());
        Server { runtime, endpoint }
    }
}

impl std::ops::Deref for Server {
    type Target = Endpoint;

    fn deref(&self) -> &Endpoint {
        &self.endpoint
    }
}

/// A free TCP port on 127.0.0.1 (free when this returns), never one this
/// test binary was handed before: the kernel may give a port it just freed
/// to the next `bind(0)`, so two processes started side by side could
/// otherwise be told to listen on the same port.
pub fn free_port() -> u16 {
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap();
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !handed_out.contains(&port) {
            handed_out.push(port);
            return port;
        }
    }
}

/// pgaccel as a process of its own (the built binary), so that it can be
/// killed, or run beside others as separate machines would.
pub struct Process {
    child: std::process::Child,
    endpoint: Endpoint,
    /// Its log, printed when a test fails while it runs.
    log: std::path::PathBuf,
    /// The memory cgroup confining it; dropped after the process is
    /// killed, so that it can be removed.
    cgroup: Option<MemoryCgroup>,
}

/// A memory cgroup of its own for one process: the limit a container
/// runtime or Kubernetes puts on a service. Removed when dropped, once the
/// process has exited.
pub struct MemoryCgroup {
    dir: std::path::PathBuf,
    /// The file holding the peak usage.
    peak_file: &'static str,
}

impl MemoryCgroup {
    /// Confines process `pid` to `bytes` of memory; `None` where this
    /// machine lets no test create a memory cgroup (no writable cgroup v1
    /// memory hierarchy, nor a cgroup v2 one with the memory controller).
    pub fn confine(pid: u32, bytes: u64) -> Option<MemoryCgroup> {
        let v1 = std::path::Path::new("/sys/fs/cgroup/memory");
        let (root, limit_file, peak_file) = if v1.join("cgroup.procs").exists() {
            (
                v1.to_owned(),
                "memory.limit_in_bytes",
                "memory.max_usage_in_bytes",
            )
        } else if std::fs::read_to_string("/sys/fs/cgroup/cgroup.subtree_control")
            .is_ok_and(|controllers| controllers.contains("memory"))
        {
            ("/sys/fs/cgroup".into(), "memory.max", "memory.peak")
        } else {
            return None;
        };
        let dir = root.join(format!("pgaccel-test-{pid}"));
        std::fs::create_dir(&dir).ok()?;
        let cgroup = MemoryCgroup { dir, peak_file };
        std::fs::write(cgroup.dir.join(limit_file), bytes.to_string()).ok()?;
        std::fs::write(cgroup.dir.join("cgroup.procs"), pid.to_string()).ok()?;
        Some(cgroup)
    }
}

impl MemoryCgroup {
    /// The most memory the cgroup's processes held (with the page cache
    /// charged to them), in bytes.
    pub fn peak(&self) -> Option<u64> {
        std::fs::read_to_string(self.dir.join(self.peak_file))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl Process {
    /// Starts `pgaccel run` in `folder` with `top` (top-level blocks other
    /// than `runtime`) and `datasets` (YAML list entries) on free ports;
    /// its log goes to `folder/pgaccel.log`.
    pub fn start(folder: &std::path::Path, top: &str, datasets: &str) -> Process {
        Process::start_with_env(folder, top, datasets, &[])
    }

    /// [`Process::start`] with `env` added to its environment.
    pub fn start_with_env(
        folder: &std::path::Path,
        top: &str,
        datasets: &str,
        env: &[(&str, &str)],
    ) -> Process {
        Process::start_with_runtime(folder, "", top, datasets, env)
    }

    /// [`Process::start_with_env`] with `runtime` (indented `runtime:`
    /// entries besides the listeners) added.
    pub fn start_with_runtime(
        folder: &std::path::Path,
        runtime: &str,
        top: &str,
        datasets: &str,
        env: &[(&str, &str)],
    ) -> Process {
        Process::start_config(
            folder,
            |pg, http| {
                format!(
                    "runtime:\n  pg: {{ listen: 127.0.0.1:{pg} }}\n  http: {{ listen: 127.0.0.1:{http} }}\n{runtime}{top}datasets:\n{datasets}"
                )
            },
            env,
        )
    }

    /// Starts `pgaccel run` in `folder` with the whole configuration that
    /// `config` writes for the PostgreSQL and HTTP ports it is given.
    pub fn start_config(
        folder: &std::path::Path,
        config: impl FnOnce(u16, u16) -> String,
        env: &[(&str, &str)],
    ) -> Process {
        Process::start_limited(folder, config, env, None)
    }

    /// [`Process::start_config`], the process confined to `memory_limit`
    /// bytes of memory where this machine lets a test create a memory
    /// cgroup (see [`MemoryCgroup`]).
    pub fn start_limited(
        folder: &std::path::Path,
        config: impl FnOnce(u16, u16) -> String,
        env: &[(&str, &str)],
        memory_limit: Option<u64>,
    ) -> Process {
        let (pg, http) = (free_port(), free_port());
        let path = folder.join("pgaccel.yaml");
        std::fs::write(&path, config(pg, http)).unwrap();
        let log_path = folder.join("pgaccel.log");
        let log = std::fs::File::create(&log_path).unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_pgaccel"));
        command
            .args(["run", "--config"])
            .arg(&path)
            .envs(env.iter().copied())
            .current_dir(folder)
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = command.spawn().expect("start pgaccel");
        let cgroup = memory_limit.and_then(|bytes| MemoryCgroup::confine(child.id(), bytes));
        let endpoint = Endpoint::new(([127, 0, 0, 1], pg).into(), ([127, 0, 0, 1], http).into());
        Process {
            child,
            endpoint,
            log: log_path,
            cgroup,
        }
    }

    /// The memory cgroup confining the process, if it runs in one.
    pub fn cgroup(&self) -> Option<&MemoryCgroup> {
        self.cgroup.as_ref()
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().is_ok_and(|status| status.is_none())
    }

    /// A field of the process's `/proc/<pid>/status` in bytes (`VmHWM`,
    /// the peak resident memory; `VmData`, the data segment).
    pub fn memory(&self, field: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("the process runs");
        let line = status
            .lines()
            .find(|line| line.starts_with(&format!("{field}:")))
            .unwrap_or_else(|| panic!("no {field} in {status}"));
        let kilobytes: u64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .expect("a size in kB");
        kilobytes * 1024
    }

    /// Sends SIGTERM, as a service manager stopping it would.
    pub fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(sent.success(), "SIGTERM was not delivered");
    }

    /// Waits up to 60 s for the process to exit; its status.
    pub async fn exited(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self
                .child
                .try_wait()
                .expect("the process can be waited for")
            {
                return status;
            }
            assert!(Instant::now() < deadline, "pgaccel did not exit within 60s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Stops it with SIGKILL: no shutdown code runs.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Process {
    /// Waits until `/v1/ready` answers 200; one that does not in time fails
    /// with the datasets' status and the process's log.
    pub async fn wait_ready(&self) {
        if !self.endpoint.ready_within(READY_LIMIT).await {
            let (_, status) = self.get("/v1/datasets?status=true").await;
            panic!(
                "pgaccel not ready within {READY_LIMIT:?}; datasets: {status}; log:\n{}",
                self.log_text()
            );
        }
    }

    /// Its log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            eprintln!(
                "the log of pgaccel ({}), last lines:\n{tail}",
                self.log.display()
            );
        }
    }
}

impl std::ops::Deref for Process {
    type Target = Endpoint;

    fn deref(&self) -> &Endpoint {
        &self.endpoint
    }
}

/// How a test reaches a pgaccel: its PostgreSQL port and its HTTP API.
pub struct Endpoint {
    pub pg: std::net::SocketAddr,
    pub http_addr: std::net::SocketAddr,
    pub http: reqwest::Client,
}

impl Endpoint {
    fn new(pg: std::net::SocketAddr, http_addr: std::net::SocketAddr) -> Endpoint {
        Endpoint {
            pg,
            http_addr,
            http: reqwest::Client::new(),
        }
    }

    pub fn dsn(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=tester dbname=test",
            self.pg.port()
        )
    }

    pub async fn client(&self) -> Client {
        connect(&self.dsn()).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.http_addr)
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        let response = self
            .http
            .get(self.url(path))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        (
            response.status().as_u16(),
            response.text().await.unwrap_or_default(),
        )
    }

    pub async fn post(&self, path: &str) -> (u16, Value) {
        let response = self.http.post(self.url(path)).send().await.expect("POST");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// The `GET /v1/datasets?status=true` entry of `name`.
    pub async fn dataset_status(&self, name: &str) -> Value {
        let (_, body) = self.get("/v1/datasets?status=true").await;
        let list: Vec<Value> = serde_json::from_str(&body).expect("datasets JSON");
        list.into_iter()
            .find(|entry| entry["name"] == name)
            .unwrap_or_else(|| panic!("dataset {name} missing from {body}"))
    }

    /// Polls the status of dataset `name` until `done` holds (at most 60 s)
    /// and returns that status.
    pub async fn wait_for_status(&self, name: &str, mut done: impl FnMut(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status = self.dataset_status(name).await;
            if done(&status) {
                return status;
            }
            assert!(Instant::now() < deadline, "{name}: still {status}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `/v1/ready` answers 200.
    pub async fn wait_ready(&self) {
        assert!(
            self.ready_within(READY_LIMIT).await,
            "pgaccel not ready within {READY_LIMIT:?}"
        );
    }

    /// Whether `/v1/ready` answers 200 within `limit`.
    pub async fn ready_within(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        // A process may not be listening yet: no answer is "not ready".
        while !self
            .http
            .get(self.url("/v1/ready"))
            .send()
            .await
            .is_ok_and(|response| response.status() == 200)
        {
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        true
    }

    /// Triggers a refresh over HTTP and waits until it has completed.
    pub async fn refresh(&self, name: &str) {
        let before = self.dataset_status(name).await["last_refresh"].clone();
        let (status, body) = self
            .post(&format!("/v1/datasets/{name}/acceleration/refresh"))
            .await;
        assert_eq!(status, 201, "{body}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let current = self.dataset_status(name).await;
            if current["last_refresh"] != before && current["status"] == "Ready" {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "refresh of {name} did not complete: {current}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The rows of a simple-protocol result, each value as its text (NULL as
/// `None`).
pub fn text_rows(messages: Vec<tokio_postgres::SimpleQueryMessage>) -> Vec<Vec<Option<String>>> {
    messages
        .into_iter()
        .filter_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// Runs `sql` over the simple protocol and returns its rows as text.
pub async fn simple_rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    let messages = client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}: {:?}", e.as_db_error().map(|d| d.message())));
    text_rows(messages)
}

/// Runs psql against `port` and returns its unaligned, tuples-only output.
pub fn psql(port: u16, command: &str) -> (bool, String) {
    let output = Command::new("psql")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "tester",
            "-d",
            "test",
            "-X",
            "-A",
            "-t",
            "-c",
        ])
        .arg(command)
        .output()
        .expect("psql runs");
    outcome(&output)
}

/// Whether a command succeeded, and what it printed (stdout, then stderr).
pub fn outcome(output: &std::process::Output) -> (bool, String) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// The SQLSTATE of a failed statement.
/// Asserts that a 30 s sleep on `client` ends with the statement timeout's
/// 57014 and PostgreSQL's message.
pub async fn assert_statement_timeout(client: &Client) {
    let error = client
        .simple_query("SELECT pg_sleep(30)")
        .await
        .expect_err("the sleep outlives the statement timeout");
    assert_eq!(sqlstate(&error), "57014", "{error}");
    assert_eq!(
        error.as_db_error().unwrap().message(),
        "canceling statement due to statement timeout"
    );
}

pub fn sqlstate(error: &tokio_postgres::Error) -> String {
    error
        .as_db_error()
        .map(|db| db.code().code().to_owned())
        .unwrap_or_else(|| panic!("not a server error: {error}"))
}

/// A TCP relay in front of the local PostgreSQL, for tests that need the
/// network between pgaccel and its source to misbehave. With `stall_after`,
/// the first connection that has carried that many bytes from the server
/// stops carrying them (it stays open, silent), as a connection the network
/// stopped carrying would; later connections are relayed normally.
pub struct Relay {
    pub port: u16,
    pub connections: Arc<AtomicUsize>,
    /// Every byte the clients sent, in arrival order.
    sent: Arc<std::sync::Mutex<Vec<u8>>>,
    /// While set, the relay closes every connection it accepts at once.
    down: Arc<AtomicBool>,
    /// The connections being relayed, to cut them.
    live: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
    /// Cleared once a connection has gone silent (with `stall_after`).
    armed: Arc<AtomicBool>,
}

impl Relay {
    /// A relay to the local PostgreSQL.
    pub async fn start(stall_after: Option<usize>) -> Relay {
        Relay::start_to(5432, stall_after).await
    }

    /// A relay to the local server listening on `upstream`.
    pub async fn start_to(upstream: u16, stall_after: Option<usize>) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(std::sync::Mutex::new(Vec::new()));
        let down = Arc::new(AtomicBool::new(false));
        let live = Arc::new(std::sync::Mutex::new(Vec::new()));
        let armed = Arc::new(AtomicBool::new(stall_after.is_some()));
        let stall_armed = Arc::clone(&armed);
        let (counter, recorded, is_down, tasks) = (
            Arc::clone(&connections),
            Arc::clone(&sent),
            Arc::clone(&down),
            Arc::clone(&live),
        );
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                if is_down.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await
                else {
                    continue;
                };
                let armed = Arc::clone(&armed);
                let task = tokio::spawn(relay(
                    client,
                    server,
                    stall_after.unwrap_or(usize::MAX),
                    armed,
                    Arc::clone(&recorded),
                ));
                tasks.lock().unwrap().push(task.abort_handle());
            }
        });
        Relay {
            port,
            connections,
            sent,
            down,
            live,
            armed: stall_armed,
        }
    }

    /// Whether a connection has gone silent (only with `stall_after`).
    pub fn has_stalled(&self) -> bool {
        !self.armed.load(Ordering::SeqCst)
    }

    /// Cuts every relayed connection and refuses new ones until
    /// [`Relay::restore`]: the source is unreachable.
    pub fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        for task in self.live.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    /// Relays new connections again.
    pub fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }

    /// What the clients sent so far, as text (SQL is readable in it).
    pub fn sent_text(&self) -> String {
        String::from_utf8_lossy(&self.sent.lock().unwrap()).into_owned()
    }

    /// Forgets what was sent so far.
    pub fn clear_sent(&self) {
        self.sent.lock().unwrap().clear();
    }
}

async fn relay(
    client: tokio::net::TcpStream,
    server: tokio::net::TcpStream,
    stall_after: usize,
    armed: Arc<AtomicBool>,
    sent: Arc<std::sync::Mutex<Vec<u8>>>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let upstream = tokio::spawn(async move {
        let mut buffer = vec![0u8; 64 * 1024];
        while let Ok(read) = client_read.read(&mut buffer).await {
            if read == 0 {
                break;
            }
            sent.lock().unwrap().extend_from_slice(&buffer[..read]);
            if server_write.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
    });
    let mut carried = 0usize;
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(read) = server_read.read(&mut buffer).await {
        if read == 0 || client_write.write_all(&buffer[..read]).await.is_err() {
            break;
        }
        carried += read;
        if carried >= stall_after && armed.swap(false, Ordering::SeqCst) {
            // Silent from now on, but open, until the client gives up.
            let _ = upstream.await;
            return;
        }
    }
    upstream.abort();
}

/// Everything pgaccel logged in this test process, one formatted line per
/// event (with the thread it ran on), captured from the first call on.
/// Tests run in parallel in one process: filter by the test's own dataset
/// names.
pub fn logs() -> Vec<String> {
    let text = String::from_utf8_lossy(&log_buffer().lock().unwrap()).into_owned();
    text.lines().map(str::to_owned).collect()
}

fn log_buffer() -> &'static Arc<std::sync::Mutex<Vec<u8>>> {
    static BUFFER: std::sync::OnceLock<Arc<std::sync::Mutex<Vec<u8>>>> = std::sync::OnceLock::new();
    BUFFER.get_or_init(|| {
        let buffer = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&buffer);
        let _ = tracing_subscriber::fmt()
            .with_env_filter("info")
            .with_ansi(false)
            .with_thread_names(true)
            .with_writer(move || LogWriter(Arc::clone(&sink)))
            .try_init();
        buffer
    })
}

/// Starts capturing logs (see [`logs`]) before anything worth capturing.
pub fn capture_logs() {
    log_buffer();
}

struct LogWriter(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub const MYSQL_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// A database on the real MariaDB, unique to one test, dropped at the end
/// (also when the test panics).
pub struct MysqlDatabase {
    pub name: String,
    pool: mysql_async::Pool,
}

impl MysqlDatabase {
    pub async fn create(prefix: &str) -> MysqlDatabase {
        use mysql_async::prelude::Queryable;
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "pgaccel_{prefix}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let pool = mysql_async::Pool::new(MYSQL_URL);
        let mut conn = pool.get_conn().await.expect("connect to MariaDB");
        conn.query_drop(format!(
            "DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}"
        ))
        .await
        .expect("create the test database");
        MysqlDatabase { name, pool }
    }

    /// Runs `sql` (several statements allowed) with `{db}` replaced by the
    /// database's name.
    pub async fn execute(&self, sql: &str) {
        use mysql_async::prelude::Queryable;
        let sql = sql.replace("{db}", &self.name);
        let mut conn = self.pool.get_conn().await.expect("connect to MariaDB");
        conn.query_drop(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    /// A dataset entry reading `table` of this database through `port`.
    pub fn dataset_via(&self, port: u16, table: &str, name: &str, extra: &str) -> String {
        format!(
            "  - from: mysql:{db}.{table}\n    name: {name}\n    params: {{ mysql_host: 127.0.0.1, mysql_tcp_port: {port}, mysql_db: {db}, mysql_user: root }}\n{extra}",
            db = self.name
        )
    }

    /// A dataset entry reading `table` of this database.
    pub fn dataset(&self, table: &str, name: &str, extra: &str) -> String {
        self.dataset_via(3306, table, name, extra)
    }
}

impl Drop for MysqlDatabase {
    fn drop(&mut self) {
        // Synchronous on purpose: runs even while a failed test unwinds.
        let _ = Command::new("mariadb")
            .args(["-h", "127.0.0.1", "-P", "3306", "-u", "root", "-e"])
            .arg(format!("DROP DATABASE IF EXISTS {}", self.name))
            .output();
    }
}

/// A value's binary form, byte for byte, as the server sent it.
#[derive(Debug, PartialEq)]
pub struct Raw(pub Vec<u8>);

impl<'a> tokio_postgres::types::FromSql<'a> for Raw {
    fn from_sql(
        _: &tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }
}

/// Polls `check` every 50 ms until it holds; fails the test naming `what`
/// after 60 s.
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not within 60s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub fn clients_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients"))
}

/// Where `tests/clients/setup.sh` installs the clients.
pub fn installed_clients_dir() -> std::path::PathBuf {
    std::env::var_os("PGACCEL_CLIENTS_DIR").map_or_else(
        || {
            std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()))
                .join(".cache/pgaccel-clients")
        },
        std::path::PathBuf::from,
    )
}

/// Runs a script of `tests/clients` to the end, with a deadline; returns
/// whether it succeeded and what it printed.
pub async fn run_script(script: &str, env: &[(&str, String)]) -> (bool, String) {
    run_script_with(script, &[], env).await
}

/// [`run_script`] with arguments.
pub async fn run_script_with(
    script: &str,
    args: &[&str],
    env: &[(&str, String)],
) -> (bool, String) {
    let mut command = tokio::process::Command::new("bash");
    command
        .arg(clients_dir().join(script))
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(600), command.output())
        .await
        .unwrap_or_else(|_| panic!("{script} did not finish within 10 minutes"))
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    outcome(&output)
}

/// Installs the clients and moto_server once per test process (tests run
/// in parallel).
pub async fn set_up_clients() {
    static INSTALLED: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    INSTALLED
        .get_or_init(|| async {
            let (installed, log) = run_script("setup.sh", &[]).await;
            assert!(installed, "tests/clients/setup.sh failed:\n{log}");
        })
        .await;
}

/// The S3- and SQS-compatible server of the tests: moto_server on
/// `PGACCEL_TEST_S3_PORT` (default 45999). `.ci/run` starts it; when
/// nothing answers there this starts it, detached, so that a plain `cargo
/// test` works too. It keeps running after the tests, like the databases.
pub async fn s3_endpoint() -> String {
    static ENDPOINT: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    ENDPOINT
        .get_or_init(|| async {
            let port: u16 = std::env::var("PGACCEL_TEST_S3_PORT")
                .ok()
                .and_then(|port| port.parse().ok())
                .unwrap_or(45999);
            let endpoint = format!("http://127.0.0.1:{port}");
            let answers = || async {
                reqwest::get(format!("{endpoint}/moto-api/"))
                    .await
                    .is_ok_and(|response| response.status().is_success())
            };
            if !answers().await {
                set_up_clients().await;
                let server = installed_clients_dir().join("moto/bin/moto_server");
                let log = std::fs::File::create(
                    std::env::temp_dir().join(format!("pgaccel-moto-{port}.log")),
                )
                .expect("moto_server log");
                // `setsid --fork` detaches it and returns at once: the server
                // outlives this test process, and nothing is left to reap.
                let started = std::process::Command::new("setsid")
                    .arg("--fork")
                    .arg(&server)
                    .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                    .stdin(std::process::Stdio::null())
                    .stdout(log.try_clone().unwrap())
                    .stderr(log)
                    .status()
                    .unwrap_or_else(|e| panic!("start {}: {e}", server.display()));
                assert!(started.success(), "start {}: {started}", server.display());
                eventually("moto_server answers", answers).await;
            }
            endpoint
        })
        .await
        .clone()
}

/// A bucket of its own on the test S3 server, named uniquely (moto keeps
/// buckets in memory until it stops).
/// Runs `tests/clients/sqs.py` with moto's Python (it has boto3); returns
/// what it printed.
async fn moto_python(args: &[&str]) -> String {
    let python = installed_clients_dir().join("moto/bin/python");
    let output = tokio::process::Command::new(&python)
        .arg(clients_dir().join("sqs.py"))
        .args(args)
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {}: {e}", python.display()));
    assert!(
        output.status.success(),
        "sqs.py {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

pub struct S3Bucket {
    pub endpoint: String,
    pub name: String,
}

static BUCKETS: AtomicUsize = AtomicUsize::new(0);

impl S3Bucket {
    pub async fn create(prefix: &str) -> S3Bucket {
        let endpoint = s3_endpoint().await;
        let name = format!(
            "{}-{}-{}",
            prefix.replace('_', "-"),
            std::process::id(),
            BUCKETS.fetch_add(1, Ordering::Relaxed)
        );
        // moto accepts unsigned requests: CreateBucket is a bare PUT.
        let response = reqwest::Client::new()
            .put(format!("{endpoint}/{name}"))
            .send()
            .await
            .expect("create bucket");
        assert!(
            response.status().is_success(),
            "create bucket {name}: {response:?}"
        );
        S3Bucket { endpoint, name }
    }

    /// Creates the SQS queue `queue` beside the bucket and sends every
    /// object notification of the bucket to it (no prefix filter, so that
    /// objects outside a location notify too); returns the queue URL.
    pub async fn notify_queue(&self, queue: &str) -> String {
        moto_python(&["notify", &self.endpoint, &self.name, queue]).await
    }

    /// How many messages the queue at `url` holds, visible or in flight.
    pub async fn queue_messages(&self, url: &str) -> u64 {
        moto_python(&["count", &self.endpoint, url])
            .await
            .parse()
            .expect("a message count")
    }

    /// The `params` keys that reach this bucket.
    pub fn params(&self) -> String {
        format!(
            "{{ s3_auth: key, s3_key: test, s3_secret: test, s3_region: us-east-1, s3_endpoint: '{}', allow_http: true }}",
            self.endpoint
        )
    }
}

/// The value of counter `metric` for dataset `name` with `label` = `value`.
pub async fn counter(server: &Endpoint, metric: &str, name: &str, label: &str, value: &str) -> u64 {
    let (_, text) = server.get("/metrics").await;
    text.lines()
        .filter(|line| line.starts_with(metric))
        .filter(|line| {
            line.contains(&format!("dataset=\"{name}\""))
                && line.contains(&format!("{label}=\"{value}\""))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}
