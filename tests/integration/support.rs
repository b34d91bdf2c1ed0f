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

/// A pgaccel running in this process.
pub struct Server {
    pub runtime: Runtime,
    pub http: reqwest::Client,
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
        Server {
            runtime,
            http: reqwest::Client::new(),
        }
    }

    pub fn dsn(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=tester dbname=test",
            self.runtime.pg_addr().port()
        )
    }

    pub async fn client(&self) -> Client {
        connect(&self.dsn()).await
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.runtime.http_addr())
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        let response = self.http.get(self.url(path)).send().await.expect("GET");
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
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.get("/v1/ready").await.0 != 200 {
            assert!(Instant::now() < deadline, "pgaccel not ready within 60s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
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
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

/// The SQLSTATE of a failed statement.
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
