//! TLS and password authentication on the PostgreSQL port, with psql,
//! tokio-postgres and the client libraries of `tests/clients/`, against
//! certificates of a test CA made here.

use std::path::PathBuf;
use std::process::Command;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::NoTls;

use crate::support::{
    Endpoint, Server, SourceSchema, clients_dir, run_script_with, set_up_clients, sqlstate,
};

/// A test CA and a server certificate it signed for 127.0.0.1 and
/// localhost, written as PEM files into a folder of their own.
struct Certificates {
    folder: tempfile::TempDir,
}

impl Certificates {
    fn new() -> Certificates {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let folder = tempfile::tempdir().expect("a temporary folder");
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "pgaccel test CA");
        let ca_cert = ca.self_signed(&ca_key).expect("the CA certificate");
        let server_key = KeyPair::generate().expect("a server key");
        let mut server =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                .expect("server parameters");
        server
            .distinguished_name
            .push(DnType::CommonName, "pgaccel test server");
        let issuer = Issuer::from_params(&ca, &ca_key);
        let server_cert = server
            .signed_by(&server_key, &issuer)
            .expect("the server certificate");
        let write = |name: &str, text: String| {
            std::fs::write(folder.path().join(name), text).expect("a PEM file");
        };
        write("ca.pem", ca_cert.pem());
        // The chain: the server's certificate, then its issuer's.
        write(
            "server.pem",
            format!("{}{}", server_cert.pem(), ca_cert.pem()),
        );
        write("server.key", server_key.serialize_pem());
        Certificates { folder }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.folder.path().join(name)
    }

    fn tls(&self, required: bool) -> String {
        format!(
            "tls: {{ cert: '{}', key: '{}', required: {required} }}",
            self.path("server.pem").display(),
            self.path("server.key").display()
        )
    }
}

/// A pgaccel serving table `t` (one row) with `pg` as its `runtime.pg` block
/// entries (besides `listen`).
async fn serve(prefix: &str, pg: &str) -> (SourceSchema, Server) {
    let source = SourceSchema::create(prefix).await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (42)")
        .await;
    let yaml = format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0, {pg} }}\n  http: {{ listen: 127.0.0.1:0 }}\ndatasets:\n{}",
        source.served_datasets(&["t"])
    );
    let server = Server::start_with_config(&yaml).await;
    server.wait_ready().await;
    (source, server)
}

const SCRAM_USERS: &str = "auth: { method: scram-sha-256, users: [{ name: app, password: 'pa ss' }, { name: other, password: x }] }";

/// Runs psql with a libpq connection string; returns whether it succeeded
/// and what it printed.
fn psql(conninfo: &str, command: &str) -> (bool, String) {
    let output = Command::new("psql")
        .args(["-X", "-A", "-t", "-d", conninfo, "-c", command])
        .env_remove("PGPASSWORD")
        .output()
        .expect("psql runs");
    crate::support::outcome(&output)
}

fn conninfo(server: &Server, rest: &str) -> String {
    format!(
        "host=127.0.0.1 port={} dbname=test {rest}",
        server.pg.port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_verifies_the_server_and_logs_in_with_scram_and_channel_binding() {
    let certificates = Certificates::new();
    let (source, server) = serve(
        "tls_scram",
        &format!("{}, {SCRAM_USERS}", certificates.tls(true)),
    )
    .await;
    let ca = certificates.path("ca.pem");
    let verified = format!(
        "sslmode=verify-full sslrootcert={} channel_binding=require",
        ca.display()
    );
    let (ok, out) = psql(
        &conninfo(&server, &format!("user=app password='pa ss' {verified}")),
        &format!("SELECT id FROM {}.t", source.name),
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "42");

    // By name as well as by address.
    let (ok, out) = psql(
        &format!(
            "host=localhost port={} dbname=test user=app password='pa ss' {verified}",
            server.pg.port()
        ),
        "SELECT 1",
    );
    assert!(ok, "{out}");

    // A certificate from another CA is not trusted.
    let other = Certificates::new();
    let (ok, out) = psql(
        &conninfo(
            &server,
            &format!(
                "user=app password='pa ss' sslmode=verify-full sslrootcert={}",
                other.path("ca.pem").display()
            ),
        ),
        "SELECT 1",
    );
    assert!(!ok);
    // OpenSSL words it one way or the other, depending on the key types.
    assert!(
        out.contains("certificate verify failed") || out.contains("SSL error"),
        "{out}"
    );
}

/// `pg_auth_failures_total{method="scram-sha-256"}` (process-wide: other
/// tests may add to it meanwhile, never take from it).
async fn scram_failures(server: &Endpoint) -> u64 {
    let (_, text) = server.get("/metrics").await;
    text.lines()
        .filter(|line| line.starts_with("pg_auth_failures_total{method=\"scram-sha-256\"}"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_and_an_unknown_user_fail_alike_and_are_counted() {
    let (_source, server) = serve("auth_fail", SCRAM_USERS).await;
    let before = scram_failures(&server).await;
    let mut messages = Vec::new();
    for (user, password) in [("app", "wrong"), ("nobody", "pa ss")] {
        let error = tokio_postgres::connect(
            &format!(
                "host=127.0.0.1 port={} user={user} password='{password}' dbname=test",
                server.pg.port()
            ),
            NoTls,
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("{user} logged in with a wrong password"));
        assert_eq!(sqlstate(&error), "28P01", "{error}");
        let db = error.as_db_error().expect("a server error");
        assert_eq!(db.severity(), "FATAL");
        messages.push(db.message().replace(user, "USER"));
    }
    assert_eq!(
        messages[0], messages[1],
        "an unknown user must look like a wrong password"
    );
    assert_eq!(
        messages[0],
        "password authentication failed for user \"USER\""
    );
    let after = scram_failures(&server).await;
    assert!(after >= before + 2, "failures counted: {before} -> {after}");

    // The right password over plain text (TLS is not configured): SCRAM
    // without channel binding.
    let (client, connection) = tokio_postgres::connect(
        &format!(
            "host=127.0.0.1 port={} user=app password='pa ss' dbname=test",
            server.pg.port()
        ),
        NoTls,
    )
    .await
    .expect("app logs in");
    tokio::spawn(connection);
    let row = client.query_one("SELECT current_user", &[]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "app");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_tls_refuses_plain_text_and_optional_tls_allows_it() {
    let certificates = Certificates::new();
    let (_source, required) = serve("tls_required", &certificates.tls(true)).await;
    let (ok, out) = psql(&conninfo(&required, "user=app sslmode=disable"), "SELECT 1");
    assert!(!ok);
    assert!(out.contains("accepts TLS connections only"), "{out}");
    let error = tokio_postgres::connect(&conninfo(&required, "user=app"), NoTls)
        .await
        .err()
        .expect("a plain-text startup is refused");
    assert_eq!(sqlstate(&error), "28000");
    let (ok, out) = psql(&conninfo(&required, "user=app sslmode=require"), "SELECT 1");
    assert!(ok, "{out}");

    let (_source, optional) = serve("tls_optional", &certificates.tls(false)).await;
    for mode in ["disable", "require"] {
        let (ok, out) = psql(
            &conninfo(&optional, &format!("user=app sslmode={mode}")),
            "SELECT 1",
        );
        assert!(ok, "sslmode={mode}: {out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn md5_and_cleartext_passwords() {
    let (_source, md5) = serve(
        "auth_md5",
        "auth: { method: md5, users: [{ name: app, password: s3cret }] }",
    )
    .await;
    let login = |server: &Server, password: &str| {
        let dsn = format!(
            "host=127.0.0.1 port={} user=app password={password} dbname=test",
            server.pg.port()
        );
        async move { tokio_postgres::connect(&dsn, NoTls).await.map(|_| ()) }
    };
    login(&md5, "s3cret").await.expect("md5 login");
    let error = login(&md5, "nope").await.unwrap_err();
    assert_eq!(sqlstate(&error), "28P01");

    // Clear text needs TLS, or an explicit opt-in.
    let refused = pgaccel::config::from_yaml_str(
        "runtime:\n  pg: { auth: { method: password, users: [{ name: app, password: x }] } }\ndatasets: []\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        refused.contains("runtime.pg.auth.method")
            && refused.contains("allow_cleartext_without_tls"),
        "{refused}"
    );
    let (_source, cleartext) = serve(
        "auth_cleartext",
        "auth: { method: password, allow_cleartext_without_tls: true, users: [{ name: app, password: s3cret }] }",
    )
    .await;
    login(&cleartext, "s3cret").await.expect("cleartext login");
    let error = login(&cleartext, "nope").await.unwrap_err();
    assert_eq!(sqlstate(&error), "28P01");

    // With TLS configured but not required, a plain-text client is not
    // asked for its password in clear text.
    let certificates = Certificates::new();
    let (_source, tls) = serve(
        "auth_cleartext_tls",
        &format!(
            "{}, auth: {{ method: password, users: [{{ name: app, password: s3cret }}] }}",
            certificates.tls(false)
        ),
    )
    .await;
    let error = login(&tls, "s3cret").await.unwrap_err();
    assert_eq!(sqlstate(&error), "28000", "{error}");
    let (ok, out) = psql(
        &conninfo(&tls, "user=app password=s3cret sslmode=require"),
        "SELECT 1",
    );
    assert!(ok, "{out}");
}

/// The SCRAM verifier the real PostgreSQL stores for a role created with
/// `password`, as `pg_authid.rolpassword` shows it.
async fn postgres_verifier(source: &SourceSchema, password: &str) -> String {
    let role = format!("{}_role", source.name);
    source
        .execute(&format!(
            "SET password_encryption = 'scram-sha-256'; DROP ROLE IF EXISTS {role}; CREATE ROLE {role} PASSWORD '{password}'"
        ))
        .await;
    let row = source
        .client
        .query_one(
            "SELECT rolpassword FROM pg_authid WHERE rolname = $1",
            &[&role],
        )
        .await
        .expect("the role's verifier");
    source.execute(&format!("DROP ROLE {role}")).await;
    row.get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_given_by_a_stored_scram_verifier_logs_in() {
    let holder = SourceSchema::create("verifier").await;
    let verifier = postgres_verifier(&holder, "pa ss").await;
    assert!(verifier.starts_with("SCRAM-SHA-256$4096:"), "{verifier}");
    let certificates = Certificates::new();
    let (source, server) = serve(
        "auth_verifier",
        &format!(
            "{}, auth: {{ users: [{{ name: app, password: '{verifier}' }}] }}",
            certificates.tls(false)
        ),
    )
    .await;
    // Over TLS with channel binding, and over plain text.
    let ca = certificates.path("ca.pem");
    let (ok, out) = psql(
        &conninfo(
            &server,
            &format!(
                "user=app password='pa ss' sslmode=verify-full sslrootcert={} channel_binding=require",
                ca.display()
            ),
        ),
        &format!("SELECT id FROM {}.t", source.name),
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "42");
    let (ok, out) = psql(
        &conninfo(&server, "user=app password='pa ss' sslmode=disable"),
        "SELECT current_user",
    );
    assert!(ok, "{out}");
    assert_eq!(out.trim(), "app");
    let error = tokio_postgres::connect(&conninfo(&server, "user=app password=pass"), NoTls)
        .await
        .err()
        .expect("a wrong password is refused");
    assert_eq!(sqlstate(&error), "28P01", "{error}");

    // The verifier itself is no password.
    let (ok, out) = psql(
        &conninfo(
            &server,
            &format!("user=app password='{verifier}' sslmode=disable"),
        ),
        "SELECT 1",
    );
    assert!(!ok);
    assert!(out.contains("password authentication failed"), "{out}");

    // The clear-text method checks a password against the verifier too.
    let (_source, cleartext) = serve(
        "auth_verifier_cleartext",
        &format!(
            "auth: {{ method: password, allow_cleartext_without_tls: true, users: [{{ name: app, password: '{verifier}' }}] }}"
        ),
    )
    .await;
    let (ok, out) = psql(
        &conninfo(&cleartext, "user=app password='pa ss'"),
        "SELECT 1",
    );
    assert!(ok, "{out}");
    let (ok, out) = psql(&conninfo(&cleartext, "user=app password=pass"), "SELECT 1");
    assert!(!ok);
    assert!(out.contains("password authentication failed"), "{out}");

    // MD5 cannot be checked against a verifier, and a malformed one is
    // refused, each naming the user's entry.
    for (method, password, expected) in [
        ("md5", verifier.as_str(), "cannot check an MD5 answer"),
        (
            "scram-sha-256",
            "SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA",
            "StoredKey",
        ),
    ] {
        let refused = pgaccel::config::from_yaml_str(&format!(
            "runtime:\n  pg: {{ auth: {{ method: {method}, users: [{{ name: app, password: '{password}' }}] }} }}\ndatasets: []\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            refused.contains("runtime.pg.auth.users[0].password") && refused.contains(expected),
            "{refused}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_that_cannot_be_loaded_stops_startup() {
    let certificates = Certificates::new();
    let missing = certificates.path("missing.pem");
    let garbage = certificates.path("garbage.pem");
    std::fs::write(&garbage, "not a certificate\n").unwrap();
    for (cert, key, expected) in [
        (
            missing.as_path(),
            certificates.path("server.key"),
            "runtime.pg.tls.cert",
        ),
        (
            garbage.as_path(),
            certificates.path("server.key"),
            "runtime.pg.tls.cert",
        ),
        (
            certificates.path("server.pem").as_path(),
            garbage.clone(),
            "runtime.pg.tls.key",
        ),
    ] {
        let yaml = format!(
            "runtime:\n  pg: {{ listen: 127.0.0.1:0, tls: {{ cert: '{}', key: '{}' }} }}\n  http: {{ listen: 127.0.0.1:0 }}\ndatasets: []\n",
            cert.display(),
            key.display()
        );
        let config = pgaccel::config::from_yaml_str(&yaml).unwrap();
        let error = match pgaccel::runtime::Runtime::start(config).await {
            Ok(_) => panic!("started with an unusable {expected}"),
            Err(error) => error.to_string(),
        };
        let file = if expected.ends_with("cert") {
            cert
        } else {
            key.as_path()
        };
        assert!(
            error.starts_with(expected) && error.contains(&file.display().to_string()),
            "{error}"
        );
    }
}

/// The raw exchange after an SSLRequest: `S`, or `N` for GSSENCRequest; bytes
/// pipelined after the SSLRequest are refused before any handshake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssl_and_gss_requests_on_the_wire() {
    let certificates = Certificates::new();
    let (_source, server) = serve("tls_wire", &certificates.tls(false)).await;
    let request = |code: u32| {
        let mut bytes = 8u32.to_be_bytes().to_vec();
        bytes.extend_from_slice(&code.to_be_bytes());
        bytes
    };
    const SSL: u32 = 80_877_103;
    const GSS: u32 = 80_877_104;

    let mut socket = tokio::net::TcpStream::connect(server.pg).await.unwrap();
    socket.write_all(&request(GSS)).await.unwrap();
    let mut answer = [0u8; 1];
    socket.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"N");
    socket.write_all(&request(SSL)).await.unwrap();
    socket.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"S");

    // A startup message sent right behind the SSLRequest, unencrypted.
    let mut socket = tokio::net::TcpStream::connect(server.pg).await.unwrap();
    let mut pipelined = request(SSL);
    let startup = b"\x00\x03\x00\x00user\x00app\x00\x00";
    pipelined.extend_from_slice(&(startup.len() as u32 + 4).to_be_bytes());
    pipelined.extend_from_slice(startup);
    socket.write_all(&pipelined).await.unwrap();
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        socket.read_to_end(&mut reply),
    )
    .await
    .expect("the server closes the connection");
    assert_eq!(reply.first(), Some(&b'E'), "{reply:?}");
    let text = String::from_utf8_lossy(&reply);
    assert!(
        text.contains("08P01") && text.contains("unencrypted data after SSL request"),
        "{text}"
    );
}

/// psycopg 3, node-postgres and pgjdbc run their checks over TLS (the
/// certificate verified) with SCRAM, as each does by default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_libraries_log_in_with_scram_over_verified_tls() {
    set_up_clients().await;
    let certificates = Certificates::new();
    let source = SourceSchema::create("tls_clients").await;
    let fixture = std::fs::read_to_string(clients_dir().join("fixture.sql")).expect("fixture.sql");
    source.execute(&fixture).await;
    let yaml = format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0, {}, {SCRAM_USERS} }}\n  http: {{ listen: 127.0.0.1:0 }}\ndatasets:\n{}",
        certificates.tls(true),
        source.served_datasets(&["all_types", "orders"])
    );
    let server = Server::start_with_config(&yaml).await;
    server.wait_ready().await;
    let dsn = format!(
        "host=127.0.0.1 port={} user=app password='pa ss' dbname=test sslmode=verify-full sslrootcert={}",
        server.pg.port(),
        certificates.path("ca.pem").display()
    );
    let (passed, log) = run_script_with(
        "run.sh",
        &["psycopg3", "node", "jdbc"],
        &[
            ("CLIENT_DSN", dsn),
            ("CLIENT_SCHEMA", source.name.clone()),
            ("CLIENT_TARGET", "pgaccel".to_owned()),
        ],
    )
    .await;
    assert!(passed, "the client checks fail over TLS with SCRAM:\n{log}");
    for check in ["psycopg3", "node", "jdbc"] {
        assert!(
            log.contains(&format!("PASS {check}:")),
            "{check} did not pass:\n{log}"
        );
    }
}

/// `runtime.http.tls`: the admin API speaks HTTPS only, with the configured
/// certificate, and the commands reach it given the CA (`--api-ca`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_speaks_https_and_the_commands_verify_it() {
    const KEY: &str = "api-k3y";
    let certificates = Certificates::new();
    let yaml = format!(
        "runtime:\n  pg: {{ listen: 127.0.0.1:0 }}\n  http: {{ listen: 127.0.0.1:0, api_key: {KEY}, {} }}\ndatasets: []\n",
        certificates.tls(true)
    );
    let server = Server::start_with_config(&yaml).await;
    let port = server.runtime.http_addr().port();
    let ca = certificates.path("ca.pem");
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&std::fs::read(&ca).unwrap()).unwrap())
        .build()
        .unwrap();
    let health = client
        .get(format!("https://localhost:{port}/health"))
        .send()
        .await
        .expect("HTTPS answers");
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.text().await.unwrap(), "ok");
    let listed = client
        .get(format!("https://127.0.0.1:{port}/v1/datasets"))
        .bearer_auth(KEY)
        .send()
        .await
        .expect("HTTPS answers");
    assert_eq!(listed.status().as_u16(), 200);
    assert_eq!(listed.text().await.unwrap(), "[]");

    // Plain HTTP gets no HTTP answer.
    let mut plain = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    plain
        .write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        plain.read_to_end(&mut answer),
    )
    .await
    .expect("the connection is closed");
    assert!(
        !answer.starts_with(b"HTTP/"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    let api = format!("https://localhost:{port}");
    let ca_path = ca.to_str().unwrap().to_owned();
    let (verified, unverified) = tokio::task::spawn_blocking(move || {
        let run = |args: &[&str]| {
            let output = Command::new(env!("CARGO_BIN_EXE_pgaccel"))
                .args(args)
                .env("PGACCEL_API_KEY", KEY)
                .env_remove("PGACCEL_API_CA")
                .output()
                .expect("the pgaccel binary runs");
            crate::support::outcome(&output)
        };
        (
            run(&["datasets", "--api", &api, "--api-ca", &ca_path]),
            run(&["datasets", "--api", &api]),
        )
    })
    .await
    .unwrap();
    assert!(
        verified.0 && verified.1.starts_with("NAME"),
        "{}",
        verified.1
    );
    assert!(!unverified.0, "{}", unverified.1);
    assert!(unverified.1.contains("certificate"), "{}", unverified.1);
}

#[test]
fn http_tls_cannot_be_made_optional() {
    let yaml =
        "runtime:\n  http: { tls: { cert: a.pem, key: a.key, required: false } }\ndatasets: []\n";
    let error = pgaccel::config::from_yaml_str(yaml)
        .unwrap_err()
        .to_string();
    assert!(error.contains("runtime.http.tls.required"), "{error}");
}

/// The CA that signed the local PostgreSQL's and MariaDB's certificates
/// (`tests/tls/setup.sh`, which `.ci/run` runs).
fn source_ca() -> PathBuf {
    let dir = std::env::var_os("PGACCEL_TLS_DIR").map_or_else(
        || PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/pgaccel-tls"),
        PathBuf::from,
    );
    let ca = dir.join("ca.pem");
    assert!(
        ca.exists(),
        "{} is missing: run tests/tls/setup.sh to serve TLS on the local PostgreSQL and MariaDB",
        ca.display()
    );
    ca
}

/// Waits until dataset `name` is Ready or in Error; returns the status.
async fn settled(server: &Server, name: &str) -> serde_json::Value {
    server
        .wait_for_status(name, |status| {
            status["status"] == "Ready" || status["status"] == "Error"
        })
        .await
}

/// `pg_sslmode` / `mysql_sslmode` with a root certificate, against the
/// local servers' certificate for `localhost` signed by the test CA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_are_read_over_verified_tls() {
    let ca = source_ca();
    let other_ca = Certificates::new();
    let source = SourceSchema::create("source_tls").await;
    source
        .execute("CREATE TABLE {schema}.t (id int PRIMARY KEY); INSERT INTO {schema}.t VALUES (7)")
        .await;
    let mysql = crate::support::MysqlDatabase::create("source_tls").await;
    // A user that may log in over TLS only: a dataset reading as it proves
    // that the connection was encrypted.
    let user = format!("pgaccel_tls_{}", std::process::id());
    mysql
        .execute(&format!(
            "CREATE TABLE {{db}}.t (id int PRIMARY KEY); INSERT INTO {{db}}.t VALUES (9);
             DROP USER IF EXISTS '{user}'@'%'; CREATE USER '{user}'@'%' REQUIRE SSL;
             GRANT SELECT ON {{db}}.* TO '{user}'@'%'"
        ))
        .await;
    let pg = |name: &str, params: &str| {
        format!(
            "  - from: postgres:{schema}.t\n    name: {name}\n    params: {{ pg_port: 5432, pg_db: test, pg_user: postgres, {params} }}\n    acceleration: {{ refresh_retry_enabled: false }}\n",
            schema = source.name
        )
    };
    let my = |name: &str, params: &str| {
        format!(
            "  - from: mysql:{db}.t\n    name: {name}\n    params: {{ mysql_tcp_port: 3306, mysql_user: {user}, {params} }}\n    acceleration: {{ refresh_retry_enabled: false }}\n",
            db = mysql.name
        )
    };
    let (ca, other) = (ca.display().to_string(), other_ca.path("ca.pem"));
    let other = other.display().to_string();
    let missing = other_ca.path("missing.pem").display().to_string();
    let datasets = [
        pg("pg_full", &format!("pg_host: localhost, pg_sslmode: verify-full, pg_sslrootcert: '{ca}'")),
        pg("pg_ca", &format!("pg_host: 127.0.0.1, pg_sslmode: verify-ca, pg_sslrootcert: '{ca}'")),
        pg("pg_wrong_host", &format!("pg_host: 127.0.0.1, pg_sslmode: verify-full, pg_sslrootcert: '{ca}'")),
        pg("pg_wrong_ca", &format!("pg_host: localhost, pg_sslmode: verify-full, pg_sslrootcert: '{other}'")),
        pg("pg_missing_ca", &format!("pg_host: localhost, pg_sslmode: verify-full, pg_sslrootcert: '{missing}'")),
        my("my_required", "mysql_host: 127.0.0.1, mysql_sslmode: required"),
        my("my_identity", &format!("mysql_host: localhost, mysql_sslmode: verify_identity, mysql_sslrootcert: '{ca}'")),
        my("my_wrong_ca", &format!("mysql_host: localhost, mysql_sslmode: verify_identity, mysql_sslrootcert: '{other}'")),
        my("my_plain", "mysql_host: 127.0.0.1, mysql_sslmode: disabled"),
    ]
    .concat();
    let server = Server::start(&datasets).await;
    let client = server.client().await;
    for (name, expected) in [
        ("pg_full", 7),
        ("pg_ca", 7),
        ("my_required", 9),
        ("my_identity", 9),
    ] {
        let status = settled(&server, name).await;
        assert_eq!(status["status"], "Ready", "{name}: {status}");
        let row = client
            .query_one(&format!("SELECT id FROM {name}"), &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i32>(0), expected, "{name}");
    }
    for (name, expected) in [
        ("pg_wrong_host", "certificate"),
        ("pg_wrong_ca", "certificate"),
        ("pg_missing_ca", "params.pg_sslrootcert"),
        ("my_wrong_ca", "certificate"),
        ("my_plain", "Authentication failed"),
    ] {
        let status = settled(&server, name).await;
        assert_eq!(status["status"], "Error", "{name}: {status}");
        let message = status["error_message"].as_str().unwrap_or_default();
        assert!(
            message.to_lowercase().contains(&expected.to_lowercase()),
            "{name}: {message}"
        );
    }
    mysql.execute(&format!("DROP USER '{user}'@'%'")).await;
}
