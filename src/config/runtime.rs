//! The `runtime:` block (PostgreSQL listener, TLS, auth, HTTP admin API, readiness,
//! thread pools) and the top-level `snapshots:` store. Defaults bind to localhost only,
//! so a fresh install is not reachable from the network.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::raw::{RawAuth, RawHttp, RawPg, RawRuntime, RawSnapshots, RawTls, Scalar};
use super::secret::Secret;
use super::values::{Values, yaml_enum};

const PG_LISTEN_DEFAULT: &str = "127.0.0.1:15432";
const HTTP_LISTEN_DEFAULT: &str = "127.0.0.1:8090";
const MAX_CONNECTIONS_DEFAULT: usize = 500;
/// Under Kubernetes' default grace period of 30 s.
const SHUTDOWN_TIMEOUT_DEFAULT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    pub pg: PgConfig,
    pub http: HttpConfig,
    pub ready_state: RuntimeReadyState,
    /// Refresh work on its own tokio runtime (`true`, the default) so bulk loads cannot
    /// starve queries; `params.dedicated_thread_pool: disabled` shares the query runtime.
    pub dedicated_thread_pool: bool,
    /// What happens to a query pgaccel refuses as not supported (0A000).
    pub unsupported: Unsupported,
    /// The memory a connection's query may hold in joins, sorts and
    /// aggregations (`runtime.query.memory_limit`); beyond it sorts and
    /// aggregations spill to disk and other operators fail with 53200.
    pub query_memory_limit: usize,
    /// `statement_timeout` of sessions that set none
    /// (`runtime.query.statement_timeout`); zero is none.
    pub statement_timeout: Duration,
    /// At shutdown, how long running statements may go on before they are
    /// ended with 57P01 (`runtime.shutdown_timeout`).
    pub shutdown_timeout: Duration,
}

/// The PostgreSQL wire listener.
#[derive(Debug, Clone)]
pub struct PgConfig {
    pub listen: SocketAddr,
    pub tls: Option<TlsConfig>,
    /// Connections beyond this are refused with SQLSTATE 53300.
    pub max_connections: usize,
    /// The threads connections are served on, each connection on one of
    /// them for its life (`runtime.pg.connection_threads`; the default is
    /// one per core). 0 serves them on the query threads instead.
    pub connection_threads: usize,
    /// `None`: trust, any user may connect without a password.
    pub auth: Option<AuthConfig>,
}

#[derive(Debug, Clone)]
pub struct TlsConfig {
    /// Where it was configured (`runtime.pg.tls`, `runtime.http.tls`), for
    /// errors.
    pub setting: &'static str,
    /// The server certificate chain (PEM, the server's own certificate first).
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Refuse clients that do not negotiate TLS.
    pub required: bool,
    pub min_version: TlsVersion,
}

#[derive(Debug, Clone)]
pub struct AuthConfig {
    pub method: AuthMethod,
    pub users: Vec<UserConfig>,
    /// `method: password` over connections without TLS.
    pub allow_cleartext_without_tls: bool,
}

#[derive(Debug, Clone)]
pub struct UserConfig {
    pub name: String,
    pub password: Secret,
}

/// The HTTP admin API listener.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub listen: SocketAddr,
    /// When set, every `/v1` route (and `/metrics` unless `metrics_public`)
    /// needs it as a bearer token or `X-API-Key`.
    pub api_key: Option<Secret>,
    pub metrics_public: bool,
    /// HTTPS only when set (`required` is implied).
    pub tls: Option<TlsConfig>,
}

/// Where acceleration snapshots are published and read.
#[derive(Debug, Clone)]
pub struct SnapshotStore {
    pub enabled: bool,
    pub location: String,
    pub bootstrap_on_failure_behavior: BootstrapOnFailure,
    /// Object-store settings (credentials, region); all treated as secrets.
    pub params: BTreeMap<String, Secret>,
}

yaml_enum! {
    pub enum AuthMethod {
        ScramSha256 => "scram-sha-256",
        Md5 => "md5",
        /// The password in clear text (TLS only, unless allowed).
        Password => "password",
        /// No password: every user the client names is let in.
        Trust => "trust",
    }
}

yaml_enum! {
    /// The oldest TLS version the listener accepts.
    pub enum TlsVersion {
        Tls12 => "1.2",
        Tls13 => "1.3",
    }
}

yaml_enum! {
    /// When `/v1/ready` turns 200.
    pub enum RuntimeReadyState {
        /// Once every dataset has loaded (or has been ready once).
        OnLoad => "on_load",
        /// As soon as every dataset is registered.
        OnRegistration => "on_registration",
    }
}

yaml_enum! {
    /// What a dataset does when restoring its startup snapshot fails.
    pub enum BootstrapOnFailure {
        Warn => "warn",
        Retry => "retry",
        Fallback => "fallback",
    }
}

yaml_enum! {
    /// `runtime.query.unsupported`: what a query pgaccel cannot answer as
    /// PostgreSQL would (SQLSTATE 0A000) gets.
    pub enum Unsupported {
        /// The client gets the 0A000 error.
        Error => "error",
        /// A read-only query over datasets of one PostgreSQL source is
        /// answered by that source instead (see `query::forward`).
        Source => "source",
    }
}

yaml_enum! {
    pub enum ThreadPool {
        Enabled => "enabled",
        Disabled => "disabled",
    }
}

/// Validates `runtime:`; an absent block gives all defaults.
pub(crate) fn parse_runtime(values: &mut Values<'_, '_>, raw: &RawRuntime) -> RuntimeConfig {
    let pool = raw.params.as_ref().and_then(|p| {
        values.choice(
            "runtime.params.dedicated_thread_pool",
            &p.dedicated_thread_pool,
        )
    });
    RuntimeConfig {
        pg: parse_pg(values, raw.pg.as_ref().unwrap_or(&RawPg::default())),
        http: parse_http(values, raw.http.as_ref().unwrap_or(&RawHttp::default())),
        ready_state: values
            .choice("runtime.ready_state", &raw.ready_state)
            .unwrap_or(RuntimeReadyState::OnLoad),
        dedicated_thread_pool: pool != Some(ThreadPool::Disabled),
        unsupported: raw
            .query
            .as_ref()
            .and_then(|q| values.choice("runtime.query.unsupported", &q.unsupported))
            .unwrap_or(Unsupported::Error),
        query_memory_limit: raw
            .query
            .as_ref()
            .and_then(|q| values.bytes("runtime.query.memory_limit", &q.memory_limit, 1 << 20))
            .and_then(|bytes| usize::try_from(bytes).ok())
            .unwrap_or_else(default_query_memory_limit),
        statement_timeout: raw
            .query
            .as_ref()
            .and_then(|q| {
                values.duration(
                    "runtime.query.statement_timeout",
                    &q.statement_timeout,
                    true,
                )
            })
            .unwrap_or(Duration::ZERO),
        shutdown_timeout: values
            .duration("runtime.shutdown_timeout", &raw.shutdown_timeout, true)
            .unwrap_or(SHUTDOWN_TIMEOUT_DEFAULT),
    }
}

/// A quarter of the memory this process may use (the cgroup's limit where
/// one is set, else the machine's), so that a few connections' large
/// queries cannot take the memory the accelerations live in.
fn default_query_memory_limit() -> usize {
    let machine = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok());
    let total = match (machine, cgroup) {
        (Some(machine), Some(cgroup)) => machine.min(cgroup),
        (machine, cgroup) => machine.or(cgroup).unwrap_or(8 << 30),
    };
    usize::try_from(total / 4).unwrap_or(usize::MAX)
}

fn parse_pg(values: &mut Values<'_, '_>, raw: &RawPg) -> PgConfig {
    let max = values.integer(
        "runtime.pg.max_connections",
        &raw.max_connections,
        1,
        u64::from(u32::MAX),
        "a connection limit",
    );
    let threads = values.integer(
        "runtime.pg.connection_threads",
        &raw.connection_threads,
        0,
        1024,
        "a number of threads",
    );
    PgConfig {
        listen: parse_listen(values, "runtime.pg.listen", &raw.listen, PG_LISTEN_DEFAULT),
        tls: raw
            .tls
            .as_ref()
            .map(|tls| parse_tls(values, tls, "runtime.pg.tls")),
        max_connections: max.map_or(MAX_CONNECTIONS_DEFAULT, |n| n as usize),
        connection_threads: threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            |n| n as usize,
        ),
        auth: raw
            .auth
            .as_ref()
            .map(|auth| parse_auth(values, auth, raw.tls.is_some())),
    }
}

fn parse_http(values: &mut Values<'_, '_>, raw: &RawHttp) -> HttpConfig {
    HttpConfig {
        listen: parse_listen(
            values,
            "runtime.http.listen",
            &raw.listen,
            HTTP_LISTEN_DEFAULT,
        ),
        api_key: values
            .non_empty("runtime.http.api_key", &raw.api_key, "an API key")
            .map(Secret::new),
        metrics_public: values.flag("runtime.http.metrics_public", &raw.metrics_public, false),
        tls: raw.tls.as_ref().map(|raw| {
            let mut tls = parse_tls(values, raw, "runtime.http.tls");
            if raw.required.is_some() && !tls.required {
                values.error(
                    "runtime.http.tls.required",
                    "the HTTP listener speaks only HTTPS once tls is configured; remove required: false",
                );
            }
            tls.required = true;
            tls
        }),
    }
}

/// An `ip:port` socket address; port 0 asks the OS for a free port (tests).
fn parse_listen(
    values: &mut Values<'_, '_>,
    key: &str,
    raw: &Option<Scalar>,
    default: &str,
) -> SocketAddr {
    let fallback = || {
        default
            .parse()
            .unwrap_or(SocketAddr::from(([127, 0, 0, 1], 0)))
    };
    let Some(text) = values.text(key, raw) else {
        return fallback();
    };
    text.trim().parse().unwrap_or_else(|_| {
        let shown = raw.as_ref().map(Scalar::written).unwrap_or_default();
        let message = format!(
            "invalid address '{shown}'; use an IP address and port such as {default} or 0.0.0.0:{}",
            default.rsplit(':').next().unwrap_or("0")
        );
        values.error(key, message);
        fallback()
    })
}

fn parse_tls(values: &mut Values<'_, '_>, raw: &RawTls, setting: &'static str) -> TlsConfig {
    let mut path = |field: &str, value: &Option<Scalar>, what: &str| {
        let key = format!("{setting}.{field}");
        if value.is_none() {
            values.error(&key, format!("missing; give the path of {what} (PEM)"));
        }
        values
            .non_empty(&key, value, what)
            .map(PathBuf::from)
            .unwrap_or_default()
    };
    TlsConfig {
        setting,
        cert: path("cert", &raw.cert, "the server certificate chain"),
        key: path("key", &raw.key, "the server private key"),
        required: values.flag(&format!("{setting}.required"), &raw.required, false),
        min_version: values
            .choice(&format!("{setting}.min_version"), &raw.min_version)
            .unwrap_or(TlsVersion::Tls12),
    }
}

fn parse_auth(values: &mut Values<'_, '_>, raw: &RawAuth, tls: bool) -> AuthConfig {
    let method = values
        .choice("runtime.pg.auth.method", &raw.method)
        .unwrap_or(AuthMethod::ScramSha256);
    let allow_cleartext_without_tls = values.flag(
        "runtime.pg.auth.allow_cleartext_without_tls",
        &raw.allow_cleartext_without_tls,
        false,
    );
    if method == AuthMethod::Password && !tls && !allow_cleartext_without_tls {
        values.error("runtime.pg.auth.method", "`password` sends passwords in clear text, and runtime.pg.tls is not configured; configure TLS, use scram-sha-256, or set allow_cleartext_without_tls: true");
    }
    let raw_users = raw.users.as_deref().unwrap_or_default();
    if raw_users.is_empty() && method != AuthMethod::Trust {
        values.error("runtime.pg.auth.users", "no users; list at least one { name, password }, or use method: trust to let every client in");
    }
    let mut users: Vec<UserConfig> = Vec::new();
    for (i, user) in raw_users.iter().enumerate() {
        let prefix = format!("runtime.pg.auth.users[{i}]");
        let name = values.non_empty(&format!("{prefix}.name"), &user.name, "a user name");
        let password =
            values.non_empty(&format!("{prefix}.password"), &user.password, "a password");
        if user.name.is_none() || user.password.is_none() {
            values.error(&prefix, "each user needs name and password");
        }
        if let Some(name) = &name
            && users.iter().any(|u| &u.name == name)
        {
            values.error(
                &format!("{prefix}.name"),
                format!("user '{name}' is listed twice"),
            );
        }
        if let Some(password) = &password
            && crate::wire::scram::Verifier::is_verifier(password)
        {
            // Stored as PostgreSQL keeps it in pg_authid.rolpassword.
            if let Err(reason) = crate::wire::scram::Verifier::parse(password) {
                values.error(
                    &format!("{prefix}.password"),
                    format!("a malformed SCRAM verifier: {reason}"),
                );
            } else if method == AuthMethod::Md5 {
                values.error(
                    &format!("{prefix}.password"),
                    "a SCRAM verifier cannot check an MD5 answer; use method: scram-sha-256, or give this user's password itself",
                );
            }
        }
        if let (Some(name), Some(password)) = (name, password) {
            users.push(UserConfig {
                name,
                password: Secret::new(password),
            });
        }
    }
    AuthConfig {
        method,
        users,
        allow_cleartext_without_tls,
    }
}

/// The keys that reach an S3 location.
pub(super) const S3_KEYS: [&str; 6] = [
    "s3_auth",
    "s3_key",
    "s3_secret",
    "s3_region",
    "s3_endpoint",
    "allow_http",
];

yaml_enum! {
    /// How S3 credentials are found.
    pub enum S3Auth {
        /// `s3_key` and `s3_secret`.
        Key => "key",
        /// The default chain: environment, web identity, instance metadata.
        IamRole => "iam_role",
    }
}

/// Checks the values of the S3 keys that have a closed set of them.
pub(crate) fn check_s3_param(
    values: &mut Values<'_, '_>,
    key: &str,
    name: &str,
    value: &Option<Scalar>,
) {
    match name {
        "allow_http" => {
            values.flag(key, value, false);
        }
        "s3_auth" => {
            values.choice::<S3Auth>(key, value);
        }
        _ => {}
    }
}

/// What is wrong with a snapshot location, if anything: it must be an S3
/// prefix naming its bucket (`s3://bucket/prefix/`) or a folder (a path or
/// `file://`).
pub fn snapshot_location_error(url: &str) -> Option<String> {
    if let Some(rest) = url.strip_prefix("s3://") {
        return rest.split('/').next().is_none_or(str::is_empty).then(|| {
            format!("snapshot location '{url}' names no bucket; expected s3://bucket/prefix/")
        });
    }
    (url.contains("://") && !url.starts_with("file://")).then(|| {
        format!("snapshot location '{url}' is neither s3:// nor a folder (a path or file://)")
    })
}

/// A parsed `s3_queue_url`.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueUrl {
    pub url: String,
    /// `scheme://host[:port]/`, where the JSON protocol's requests go.
    pub endpoint: String,
    /// The region named by an AWS queue URL's host.
    pub region: Option<String>,
}

/// Parses and checks `url` as an SQS queue URL:
/// `https://sqs.<region>.amazonaws.com/<account>/<queue>` (or the legacy
/// `<region>.queue.amazonaws.com` host), or the same path on another host
/// for an SQS-compatible server. The message says what is wrong.
pub fn parse_queue_url(url: &str) -> Result<QueueUrl, String> {
    const SHAPE: &str = "expected an SQS queue URL such as https://sqs.us-east-1.amazonaws.com/123456789012/my-queue";
    let url = url.trim();
    if url.is_empty() {
        return Err(format!("is empty; {SHAPE}"));
    }
    if url.starts_with("arn:") {
        return Err(format!("'{url}' is an ARN, not a queue URL; {SHAPE}"));
    }
    let not_sqs = || format!("'{url}' is not an SQS queue URL; {SHAPE}");
    let (scheme, rest) = url.split_once("://").ok_or_else(not_sqs)?;
    if scheme != "https" && scheme != "http" {
        return Err(not_sqs());
    }
    let (host, path) = rest.split_once('/').ok_or_else(not_sqs)?;
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let [account, queue] = segments.as_slice() else {
        return Err(not_sqs());
    };
    let queue_name = queue.strip_suffix(".fifo").unwrap_or(queue);
    if host.is_empty()
        || account.is_empty()
        || !account.bytes().all(|b| b.is_ascii_digit())
        || queue_name.is_empty()
        || queue.len() > 80
        || !queue_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(not_sqs());
    }
    let hostname = host.split(':').next().unwrap_or(host).to_ascii_lowercase();
    let region = match hostname
        .strip_suffix(".amazonaws.com")
        .or_else(|| hostname.strip_suffix(".amazonaws.com.cn"))
    {
        Some(aws) => {
            let region = aws
                .strip_prefix("sqs.")
                .or_else(|| aws.strip_suffix(".queue"))
                .filter(|region| !region.is_empty() && !region.contains('.'))
                .ok_or_else(not_sqs)?;
            Some(region.to_owned())
        }
        None => None,
    };
    Ok(QueueUrl {
        url: url.to_owned(),
        endpoint: format!("{scheme}://{host}/"),
        region,
    })
}

/// `snapshots.params.s3_queue_url` must be an SQS queue URL, and the
/// notifications it carries are S3's: the location must be `s3://`.
fn check_queue(values: &mut Values<'_, '_>, queue: &str, location: &str) {
    const KEY: &str = "snapshots.params.s3_queue_url";
    if let Err(message) = parse_queue_url(queue) {
        values.error(KEY, message);
    }
    if !location.is_empty() && !location.starts_with("s3://") {
        values.error(
            KEY,
            format!("S3 event notifications need an s3:// snapshot location, and snapshots.location is '{location}'"),
        );
    }
}

/// Validates the top-level `snapshots:` block.
pub(crate) fn parse_snapshots(values: &mut Values<'_, '_>, raw: &RawSnapshots) -> SnapshotStore {
    if raw.location.is_none() {
        values.error("snapshots.location", "missing; give where snapshots live, e.g. s3://bucket/snapshots/ or file:///var/lib/pgaccel/snapshots/");
    }
    let mut params = BTreeMap::new();
    for (name, value) in raw.params.iter().flatten() {
        let key = format!("snapshots.params.{name}");
        // The location's keys, and the queue of its event notifications.
        if !S3_KEYS.contains(&name.as_str()) && name != "s3_queue_url" {
            values.error(
                &key,
                format!(
                    "unknown key '{name}'; valid keys here are {}, s3_queue_url",
                    S3_KEYS.join(", ")
                ),
            );
            continue;
        }
        let value = Some(value.clone());
        check_s3_param(values, &key, name, &value);
        if let Some(secret) = values.secret(&key, &value) {
            params.insert(name.clone(), secret);
        }
    }
    let location = values
        .non_empty("snapshots.location", &raw.location, "a snapshot location")
        .inspect(|url| {
            if let Some(message) = snapshot_location_error(url) {
                values.error("snapshots.location", message);
            }
        })
        .unwrap_or_default();
    if let Some(queue) = params.get("s3_queue_url") {
        check_queue(values, queue.expose(), &location);
    }
    SnapshotStore {
        enabled: values.flag("snapshots.enabled", &raw.enabled, true),
        location,
        bootstrap_on_failure_behavior: values
            .choice(
                "snapshots.bootstrap_on_failure_behavior",
                &raw.bootstrap_on_failure_behavior,
            )
            .unwrap_or(BootstrapOnFailure::Warn),
        params,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_urls_are_checked() {
        let aws =
            parse_queue_url("https://sqs.us-east-1.amazonaws.com/123456789012/reader-1").unwrap();
        assert_eq!(aws.region.as_deref(), Some("us-east-1"));
        assert_eq!(aws.endpoint, "https://sqs.us-east-1.amazonaws.com/");
        let legacy =
            parse_queue_url("https://eu-west-1.queue.amazonaws.com/123456789012/r.fifo").unwrap();
        assert_eq!(legacy.region.as_deref(), Some("eu-west-1"));
        let local = parse_queue_url("http://127.0.0.1:45999/123456789012/reader").unwrap();
        assert_eq!(local.region, None);
        assert_eq!(local.endpoint, "http://127.0.0.1:45999/");
        for (url, expected) in [
            ("", "is empty"),
            ("  ", "is empty"),
            (
                "arn:aws:sqs:us-east-1:123456789012:reader",
                "is an ARN, not a queue URL",
            ),
            (
                "https://my-bucket.s3.amazonaws.com/123456789012/reader",
                "is not an SQS queue URL",
            ),
            (
                "https://sqs.us-east-1.amazonaws.com/reader",
                "is not an SQS queue URL",
            ),
            (
                "https://sqs.us-east-1.amazonaws.com/acct/reader",
                "is not an SQS queue URL",
            ),
            ("s3://bucket/123/reader", "is not an SQS queue URL"),
            (
                "https://sqs.us-east-1.amazonaws.com/1/bad name",
                "is not an SQS queue URL",
            ),
        ] {
            let message = parse_queue_url(url).unwrap_err();
            assert!(message.contains(expected), "{url}: {message}");
        }
    }

    #[test]
    fn snapshot_params_are_checked_by_name_and_value() {
        let with = |params: &str| {
            crate::config::from_yaml_str(&format!(
                "snapshots:\n  enabled: true\n  location: s3://b/snapshots/\n  params: {{ {params} }}\ndatasets: []\n"
            ))
        };
        let config = with("s3_auth: key, s3_key: k, s3_secret: s, allow_http: true").unwrap();
        assert!(config.unsupported().is_empty());
        let errors = with("s3_regionn: eu-west-1, s3_auth: password, allow_http: maybe")
            .unwrap_err()
            .to_string();
        for expected in [
            "snapshots.params.s3_regionn: unknown key 's3_regionn'; valid keys here are s3_auth",
            "snapshots.params.s3_auth: invalid value 'password'; valid values are key, iam_role",
            "snapshots.params.allow_http",
        ] {
            assert!(errors.contains(expected), "{expected} in {errors}");
        }
        let errors = crate::config::from_yaml_str(
            "snapshots:\n  location: ftp://b/snapshots/\ndatasets:\n  - from: postgres:public.a\n    name: a\n    params: { pg_db: test, pg_user: postgres }\n    acceleration:\n      engine: duckdb\n      mode: file\n      snapshots: enabled\n      snapshots_location: 's3:///x'\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            errors.contains("snapshots.location: snapshot location 'ftp://b/snapshots/' is neither")
                && errors.contains("dataset 'a': acceleration.snapshots_location: snapshot location 's3:///x' names no bucket"),
            "{errors}"
        );
    }

    /// The seed's validation of `s3_queue_url`: empty, an ARN, not an SQS
    /// URL, a location that is not s3:// (top-level or a dataset's own), a
    /// `file_format: snapshot` dataset; each error names s3_queue_url.
    #[test]
    fn queue_urls_are_validated_where_they_are_used() {
        let config = |location: &str, queue: &str, datasets: &str| {
            crate::config::from_yaml_str(&format!(
                "snapshots:\n  location: {location}\n  params: {{ s3_queue_url: '{queue}' }}\ndatasets:{datasets}\n"
            ))
        };
        const AWS: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/reader-1";
        let accepted = config("s3://b/snapshots/", AWS, " []").unwrap();
        assert!(
            accepted.unsupported().is_empty(),
            "{:?}",
            accepted.unsupported()
        );
        for (queue, expected) in [
            ("", "snapshots.params.s3_queue_url: is empty"),
            (
                "arn:aws:sqs:us-east-1:123456789012:reader-1",
                "snapshots.params.s3_queue_url: 'arn:aws:sqs:us-east-1:123456789012:reader-1' is an ARN",
            ),
            (
                "https://b.s3.amazonaws.com/x",
                "snapshots.params.s3_queue_url: 'https://b.s3.amazonaws.com/x' is not an SQS queue URL",
            ),
        ] {
            let errors = config("s3://b/snapshots/", queue, " []")
                .unwrap_err()
                .to_string();
            assert!(errors.contains(expected), "{expected} in {errors}");
        }
        let errors = config("/var/lib/snapshots", AWS, " []")
            .unwrap_err()
            .to_string();
        assert!(
            errors.contains("snapshots.params.s3_queue_url: S3 event notifications need an s3:// snapshot location"),
            "{errors}"
        );
        let replica = |location: &str| {
            format!(
                "\n  - from: postgres:public.t\n    name: t\n    acceleration:\n      engine: duckdb\n      mode: file\n      refresh_mode: snapshot\n      snapshots: bootstrap_only\n      snapshots_location: {location}"
            )
        };
        assert!(config("s3://b/snapshots/", AWS, &replica("s3://other/snaps/")).is_ok());
        let errors = config("s3://b/snapshots/", AWS, &replica("/var/lib/snaps"))
            .unwrap_err()
            .to_string();
        assert!(
            errors.contains("dataset 't': acceleration.snapshots_location: snapshots.params.s3_queue_url carries S3 event notifications"),
            "{errors}"
        );
        let reader = "\n  - from: s3://b/snapshots/\n    name: t\n    params: { file_format: snapshot, s3_queue_url: 'QUEUE' }";
        let errors =
            crate::config::from_yaml_str(&format!("datasets:{}\n", reader.replace("QUEUE", AWS)))
                .unwrap_err()
                .to_string();
        assert!(
            errors.contains("dataset 't': params.s3_queue_url: 's3_queue_url' is not a parameter of s3 sources (a dataset that reads snapshots with file_format: snapshot checks for new ones every refresh_check_interval"),
            "{errors}"
        );
    }
}
