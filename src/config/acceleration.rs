//! The `acceleration:` block of a dataset: engine and storage, refresh mode and schedule,
//! retries, jitter, zero-results behaviour, retention and snapshots. Every cross-key rule
//! between these keys lives here; rules that need dataset keys (`time_column`) or the
//! top-level `snapshots:` block get them through `Context`.

use std::path::PathBuf;
use std::time::Duration;

use super::policy::{self, Retention, RetryPolicy};
use super::raw::{RawAcceleration, RawParams, Scalar, StringList};
use super::refresh_sql::RefreshSql;
use super::schedule::{CronSchedule, Schedule};
use super::values::{Values, yaml_enum};

/// How often a `refresh_mode: snapshot` dataset polls its snapshot store when no
/// `refresh_check_interval` is given (seeds/snapshot-refresh-mode: "defaults to 1m").
const SNAPSHOT_POLL_DEFAULT: Duration = Duration::from_secs(60);

/// The validated acceleration settings of one dataset.
#[derive(Debug, Clone)]
pub struct Acceleration {
    /// `false` leaves the dataset federated: every query goes to the source.
    pub enabled: bool,
    pub engine: Engine,
    pub mode: Mode,
    /// `params.duckdb_file`/`params.sqlite_file`; `None` lets the engine pick its path.
    pub engine_file: Option<PathBuf>,
    /// `params.duckdb_memory_limit`: the most memory DuckDB uses for the
    /// acceleration file (its buffer cache, sorts, index builds) before it
    /// spills to disk; `None` leaves DuckDB's own default (80% of RAM).
    pub duckdb_memory_limit: Option<u64>,
    /// Columns that identify a row; lets refreshes upsert and lookups use an index.
    pub primary_key: Vec<String>,
    /// Columns a full refresh sorts the in-memory batches by (`engine:
    /// arrow`), so that a filter on them skips the batches whose range of
    /// values it cannot match; empty: rows stay in the order read.
    pub sort_by: Vec<String>,
    pub refresh_mode: RefreshMode,
    /// `None`: refresh only at startup and on demand.
    pub schedule: Option<Schedule>,
    /// Which rows and columns a refresh loads; its FROM is checked against
    /// the dataset name where the dataset is parsed.
    pub refresh_sql: Option<RefreshSql>,
    pub refresh_data_window: Option<Duration>,
    pub refresh_append_overlap: Option<Duration>,
    pub refresh_on_startup: RefreshOnStartup,
    pub retry: RetryPolicy,
    /// The largest random offset added to or subtracted from each scheduled refresh;
    /// `None` when jitter is disabled.
    pub jitter: Option<Duration>,
    pub on_zero_results: ZeroResults,
    pub on_schema_change: OnSchemaChange,
    pub retention: Retention,
    pub snapshots: SnapshotMode,
    /// Overrides the top-level snapshot location for this dataset (a writer's folder).
    pub snapshots_location: Option<String>,
    /// `refresh_mode: caching`: how long fetched rows answer queries.
    pub caching: Caching,
}

/// How a `refresh_mode: caching` dataset keeps what queries fetched, from
/// the `caching_*` keys of `acceleration.params`.
#[derive(Debug, Clone, PartialEq)]
pub struct Caching {
    /// `caching_ttl`: rows fetched this recently answer without asking the
    /// source (default 30s).
    pub ttl: Duration,
    /// `caching_stale_while_revalidate_ttl`: for this long after the TTL,
    /// the cached rows still answer while they are fetched again in the
    /// background (default 0: an expired entry is fetched before answering).
    pub stale_while_revalidate: Duration,
    /// `caching_stale_if_error: enabled`: when the source fails, answer with
    /// the expired rows rather than the error.
    pub stale_if_error: bool,
    /// `caching_max_keys`: the most filter combinations kept; the least
    /// recently used goes first.
    pub max_keys: usize,
    /// `caching_max_size`: the most bytes of rows kept.
    pub max_bytes: u64,
}

impl Default for Caching {
    fn default() -> Self {
        Caching {
            ttl: Duration::from_secs(30),
            stale_while_revalidate: Duration::ZERO,
            stale_if_error: false,
            max_keys: 10_000,
            max_bytes: 256 * 1024 * 1024,
        }
    }
}

yaml_enum! {
    /// Where accelerated rows are kept.
    pub enum Engine {
        Arrow => "arrow",
        Duckdb => "duckdb",
        Sqlite => "sqlite",
    }
}

yaml_enum! {
    /// Whether the engine keeps data in memory or in a file, and what to do with an
    /// existing file.
    pub enum Mode {
        Memory => "memory",
        File => "file",
        FileCreate => "file_create",
        FileUpdate => "file_update",
    }
}

yaml_enum! {
    /// How a refresh brings the acceleration up to date.
    pub enum RefreshMode {
        Full => "full",
        Append => "append",
        Changes => "changes",
        Caching => "caching",
        Snapshot => "snapshot",
        /// Load once; never refresh (on demand neither).
        Disabled => "disabled",
    }
}

yaml_enum! {
    pub enum RefreshOnStartup {
        /// Keep the schedule across restarts; refresh at once only if it is overdue.
        Auto => "auto",
        /// Refresh on every start.
        Always => "always",
    }
}

yaml_enum! {
    /// What a query that finds no accelerated rows returns.
    pub enum ZeroResults {
        ReturnEmpty => "return_empty",
        UseSource => "use_source",
    }
}

yaml_enum! {
    /// What a refresh does when the source's columns differ from the
    /// acceleration's.
    pub enum OnSchemaChange {
        /// The refresh fails with an error naming the columns, and the last
        /// good data keeps being served (the default).
        Block => "block",
        /// The acceleration is loaded again with the source's columns.
        Rebuild => "rebuild",
    }
}

yaml_enum! {
    /// Whether this dataset restores from and/or publishes acceleration snapshots.
    pub enum SnapshotMode {
        Disabled => "disabled",
        Enabled => "enabled",
        BootstrapOnly => "bootstrap_only",
        CreateOnly => "create_only",
    }
}

/// Where file accelerations go when `params.duckdb_file`/`sqlite_file` is not
/// given: `<folder>/<dataset>.<engine>.db`, relative to the working directory.
pub const DEFAULT_FILE_FOLDER: &str = ".pgaccel/data";

impl Acceleration {
    /// The acceleration file of dataset `name`: `None` unless the engine is
    /// duckdb or sqlite with a file mode.
    pub fn file_path(&self, name: &str) -> Option<PathBuf> {
        if !self.keeps_file() {
            return None;
        }
        Some(self.engine_file.clone().unwrap_or_else(|| {
            PathBuf::from(DEFAULT_FILE_FOLDER).join(format!("{name}.{}.db", self.engine.as_str()))
        }))
    }
}

impl Acceleration {
    /// Why a file acceleration is read into memory to be queried instead of
    /// being queried in place; `None` for one queried in place (`engine:
    /// duckdb | sqlite` with a file mode, refreshed in full, by appends, by
    /// changes or not at all) and for memory accelerations. `caching` and
    /// `snapshot` keep the rows they serve in memory.
    pub fn in_memory_reason(&self) -> Option<String> {
        if !self.keeps_file() {
            return None;
        }
        if !matches!(
            self.refresh_mode,
            RefreshMode::Full | RefreshMode::Append | RefreshMode::Changes | RefreshMode::Disabled
        ) {
            return Some(format!("refresh_mode: {}", self.refresh_mode.as_str()));
        }
        None
    }

    /// Whether queries read the acceleration file in place (see
    /// [`Acceleration::in_memory_reason`]).
    pub fn in_place(&self) -> bool {
        self.keeps_file() && self.in_memory_reason().is_none()
    }

    /// Whether the acceleration is kept in a file (a file engine with a
    /// file mode).
    fn keeps_file(&self) -> bool {
        self.enabled && self.engine != Engine::Arrow && self.mode != Mode::Memory
    }
}

/// Dataset-level facts the acceleration rules depend on.
pub(crate) struct Context {
    pub time_column: bool,
    pub time_partition_column: bool,
    /// The top-level `snapshots:` block is present and enabled.
    pub snapshot_store: bool,
    /// ... and names an `s3_queue_url`.
    pub snapshot_queue: bool,
}

/// Dotted key of an acceleration field.
pub(super) fn key(field: &str) -> String {
    format!("acceleration.{field}")
}

/// Validates the block; absent blocks behave as `acceleration: {}`.
pub(crate) fn parse(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    ctx: &Context,
) -> Acceleration {
    let engine = parse_engine(values, raw);
    let mode = values
        .choice(&key("mode"), &raw.mode)
        .unwrap_or(Mode::Memory);
    check_engine_mode(values, engine, mode);
    let refresh_mode = values
        .choice(&key("refresh_mode"), &raw.refresh_mode)
        .unwrap_or(RefreshMode::Full);
    let schedule = parse_schedule(values, raw, refresh_mode);
    let snapshots = values
        .choice(&key("snapshots"), &raw.snapshots)
        .unwrap_or(SnapshotMode::Disabled);
    let snapshots_location = parse_snapshots_location(values, raw, snapshots, ctx);
    check_snapshot_mode(values, refresh_mode, engine, snapshots);
    if ctx.snapshot_queue
        && refresh_mode == RefreshMode::Snapshot
        && let Some(location) = snapshots_location.as_deref()
        && !location.starts_with("s3://")
    {
        let message = format!(
            "snapshots.params.s3_queue_url carries S3 event notifications, which this location ('{location}') does not send; use an s3:// location or leave s3_queue_url out"
        );
        values.error(&key("snapshots_location"), message);
    }
    check_append(values, refresh_mode, ctx);
    Acceleration {
        enabled: values.flag(&key("enabled"), &raw.enabled, true),
        engine,
        mode,
        engine_file: parse_engine_file(values, raw.params.as_ref(), engine, mode),
        duckdb_memory_limit: parse_duckdb_memory_limit(values, raw.params.as_ref(), engine, mode),
        caching: parse_caching(values, raw.params.as_ref(), refresh_mode),
        primary_key: parse_columns(values, "primary_key", raw.primary_key.as_ref()),
        sort_by: parse_sort_by(values, raw, engine, refresh_mode),
        refresh_mode,
        refresh_sql: parse_refresh_sql(values, raw),
        refresh_data_window: parse_data_window(values, raw, ctx),
        refresh_append_overlap: parse_append_overlap(values, raw, refresh_mode),
        refresh_on_startup: values
            .choice(&key("refresh_on_startup"), &raw.refresh_on_startup)
            .unwrap_or(RefreshOnStartup::Auto),
        retry: policy::parse_retry(values, raw),
        jitter: policy::resolve_jitter(values, raw, schedule.as_ref()),
        on_zero_results: values
            .choice(&key("on_zero_results"), &raw.on_zero_results)
            .unwrap_or(ZeroResults::ReturnEmpty),
        on_schema_change: values
            .choice(&key("on_schema_change"), &raw.on_schema_change)
            .unwrap_or(OnSchemaChange::Block),
        retention: policy::parse_retention(values, raw, ctx),
        schedule,
        snapshots,
        snapshots_location,
    }
}

fn parse_refresh_sql(values: &mut Values<'_, '_>, raw: &RawAcceleration) -> Option<RefreshSql> {
    let text = policy::parse_statement(values, "refresh_sql", &raw.refresh_sql, &["SELECT"])?;
    RefreshSql::parse(&text)
        .map_err(|message| values.error(&key("refresh_sql"), message))
        .ok()
}

/// Append refreshes compare against the newest `time_column` (or partition) value.
fn check_append(values: &mut Values<'_, '_>, refresh_mode: RefreshMode, ctx: &Context) {
    if refresh_mode == RefreshMode::Append && !ctx.time_column && !ctx.time_partition_column {
        let message = "refresh_mode: append needs time_column (or time_partition_column) on the dataset to find new rows";
        values.error(&key("refresh_mode"), message);
    }
}

/// `engine`, defaulting to arrow. The seeds' other file engines are refused
/// by name, pointing at the ones pgaccel has.
fn parse_engine(values: &mut Values<'_, '_>, raw: &RawAcceleration) -> Engine {
    let written = raw.engine.as_ref().map(|engine| engine.written());
    if let Some(other @ ("cayenne" | "turso")) = written.as_deref().map(str::trim) {
        values.error(
            &key("engine"),
            format!(
                "pgaccel has no {other} engine; its file engines are duckdb and sqlite (with mode: file), and arrow keeps the data in memory"
            ),
        );
        // Checked on as a file engine, so that the mode is not reported too.
        return Engine::Duckdb;
    }
    values
        .choice(&key("engine"), &raw.engine)
        .unwrap_or(Engine::Arrow)
}

fn check_engine_mode(values: &mut Values<'_, '_>, engine: Engine, mode: Mode) {
    if engine == Engine::Arrow && mode != Mode::Memory {
        let message = format!(
            "mode '{}' needs engine duckdb or sqlite; the arrow engine only supports mode memory",
            mode.as_str()
        );
        values.error(&key("mode"), message);
    }
}

/// The `acceleration.params` of `refresh_mode: caching`.
const CACHING_PARAMS: [&str; 5] = [
    "caching_ttl",
    "caching_stale_while_revalidate_ttl",
    "caching_stale_if_error",
    "caching_max_keys",
    "caching_max_size",
];

/// The `caching_*` keys of `acceleration.params`; each is refused with
/// another refresh mode, which would silently ignore it.
fn parse_caching(
    values: &mut Values<'_, '_>,
    params: Option<&RawParams>,
    refresh_mode: RefreshMode,
) -> Caching {
    let mut caching = Caching::default();
    let get = |name: &str| params.and_then(|params| params.get(name)).cloned();
    for name in CACHING_PARAMS {
        if get(name).is_some() && refresh_mode != RefreshMode::Caching {
            values.error(
                &key(&format!("params.{name}")),
                format!(
                    "only applies to refresh_mode: caching (refresh_mode is {})",
                    refresh_mode.as_str()
                ),
            );
        }
    }
    if let Some(ttl) = values.duration(&key("params.caching_ttl"), &get("caching_ttl"), false) {
        caching.ttl = ttl;
    }
    if let Some(window) = values.duration(
        &key("params.caching_stale_while_revalidate_ttl"),
        &get("caching_stale_while_revalidate_ttl"),
        true,
    ) {
        caching.stale_while_revalidate = window;
    }
    if let Some(text) = values.text(
        &key("params.caching_stale_if_error"),
        &get("caching_stale_if_error"),
    ) {
        match text.trim() {
            "enabled" => caching.stale_if_error = true,
            "disabled" => caching.stale_if_error = false,
            other => values.error(
                &key("params.caching_stale_if_error"),
                format!("invalid value '{other}'; valid values are enabled, disabled"),
            ),
        }
    }
    if let Some(keys) = values.integer(
        &key("params.caching_max_keys"),
        &get("caching_max_keys"),
        1,
        100_000_000,
        "a number of cache keys",
    ) {
        caching.max_keys = keys as usize;
    }
    if let Some(bytes) = values.bytes(&key("params.caching_max_size"), &get("caching_max_size"), 1)
    {
        caching.max_bytes = bytes;
    }
    caching
}

/// `acceleration.params`: only `duckdb_file`/`sqlite_file`, each with its engine and a file mode.
fn parse_engine_file(
    values: &mut Values<'_, '_>,
    params: Option<&RawParams>,
    engine: Engine,
    mode: Mode,
) -> Option<PathBuf> {
    let mut file = None;
    for (name, value) in params.into_iter().flatten() {
        let param_key = key(&format!("params.{name}"));
        let wanted = match name.as_str() {
            "duckdb_file" => Engine::Duckdb,
            "sqlite_file" => Engine::Sqlite,
            "duckdb_memory_limit" => continue,
            _ if CACHING_PARAMS.contains(&name.as_str()) => continue,
            _ => {
                values.error(
                    &param_key,
                    format!(
                        "unknown parameter '{name}'; valid parameters are duckdb_file, sqlite_file, duckdb_memory_limit, {}",
                        CACHING_PARAMS.join(", ")
                    ),
                );
                continue;
            }
        };
        if engine != wanted {
            values.error(
                &param_key,
                format!(
                    "only valid with engine: {} (engine is {})",
                    wanted.as_str(),
                    engine.as_str()
                ),
            );
        } else if mode == Mode::Memory {
            values.error(
                &param_key,
                "only valid with mode file, file_create or file_update (mode is memory)",
            );
        }
        file = values
            .non_empty(&param_key, &Some(value.clone()), "a file path")
            .map(PathBuf::from);
    }
    file
}

/// `params.duckdb_memory_limit`: a size, only with a DuckDB file.
fn parse_duckdb_memory_limit(
    values: &mut Values<'_, '_>,
    params: Option<&RawParams>,
    engine: Engine,
    mode: Mode,
) -> Option<u64> {
    let value = params?.get("duckdb_memory_limit")?;
    let param_key = key("params.duckdb_memory_limit");
    if engine != Engine::Duckdb || mode == Mode::Memory {
        values.error(
            &param_key,
            format!(
                "only valid with engine: duckdb and a file mode (engine is {}, mode is {})",
                engine.as_str(),
                mode.as_str()
            ),
        );
        return None;
    }
    values.bytes(&param_key, &Some(value.clone()), 1 << 20)
}

/// `sort_by`: orders the batches of an in-memory (arrow) acceleration; a
/// file keeps rows in the order its engine writes them, and `caching`
/// keeps results as they were fetched.
fn parse_sort_by(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    engine: Engine,
    refresh_mode: RefreshMode,
) -> Vec<String> {
    let columns = parse_columns(values, "sort_by", raw.sort_by.as_ref());
    if columns.is_empty() {
        return columns;
    }
    let refused = if engine != Engine::Arrow {
        Some(format!(
            "sorts the in-memory batches of engine: arrow; engine {} keeps rows in the order it writes them, so leave sort_by out or use engine: arrow",
            engine.as_str()
        ))
    } else if refresh_mode == RefreshMode::Caching {
        Some(
            "has nothing to sort with refresh_mode: caching, which keeps each query's rows as fetched; leave sort_by out"
                .to_owned(),
        )
    } else {
        None
    };
    match refused {
        Some(message) => {
            values.error(&key("sort_by"), message);
            Vec::new()
        }
        None => columns,
    }
}

/// `id`, `"a, b"` or `[a, b]` → column names (`field`: `primary_key` or
/// `sort_by`).
fn parse_columns(
    values: &mut Values<'_, '_>,
    field: &str,
    raw: Option<&StringList>,
) -> Vec<String> {
    let items: Vec<String> = match raw {
        None => return Vec::new(),
        Some(StringList::One(text)) => text.split(',').map(str::to_string).collect(),
        Some(StringList::Many(items)) => items.clone(),
    };
    let mut columns: Vec<String> = Vec::new();
    for item in items {
        let column = values
            .text(&key(field), &Some(Scalar::Text(item)))
            .unwrap_or_default();
        let column = column.trim().to_string();
        if column.is_empty() || columns.contains(&column) {
            let problem = if column.is_empty() {
                "an empty column name".to_string()
            } else {
                format!("column '{column}' twice")
            };
            values.error(
                &key(field),
                format!("lists {problem}; give distinct column names, e.g. id or \"a, b\""),
            );
            continue;
        }
        columns.push(column);
    }
    columns
}

/// `refresh_check_interval` xor `refresh_cron`.
fn parse_schedule(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    refresh_mode: RefreshMode,
) -> Option<Schedule> {
    let interval = values.duration(
        &key("refresh_check_interval"),
        &raw.refresh_check_interval,
        false,
    );
    let cron = values.text(&key("refresh_cron"), &raw.refresh_cron);
    if raw.refresh_check_interval.is_some() && raw.refresh_cron.is_some() {
        let message = "refresh_cron and refresh_check_interval are exclusive; keep one of them";
        values.error(&key("refresh_cron"), message);
        return None;
    }
    if refresh_mode == RefreshMode::Disabled {
        for (given, name) in [
            (&raw.refresh_check_interval, "refresh_check_interval"),
            (&raw.refresh_cron, "refresh_cron"),
        ] {
            if given.is_some() {
                let message = format!(
                    "refresh_mode: disabled loads the dataset once and never refreshes it; remove {name} or choose another refresh_mode"
                );
                values.error(&key(name), message);
            }
        }
        return None;
    }
    if let Some(text) = cron {
        return match CronSchedule::parse(text.trim()) {
            Ok(cron) => Some(Schedule::Cron(cron)),
            Err(reason) => {
                let message = format!(
                    "invalid cron expression '{text}': {reason}; use 5 fields (minute hour day month weekday) or 6 with seconds first"
                );
                values.error(&key("refresh_cron"), message);
                None
            }
        };
    }
    match (interval, refresh_mode) {
        (Some(interval), _) => Some(Schedule::Interval(interval)),
        (None, RefreshMode::Snapshot) if raw.refresh_check_interval.is_none() => {
            Some(Schedule::Interval(SNAPSHOT_POLL_DEFAULT))
        }
        (None, _) => None,
    }
}

fn parse_data_window(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    ctx: &Context,
) -> Option<Duration> {
    let window = values.duration(&key("refresh_data_window"), &raw.refresh_data_window, false);
    if raw.refresh_data_window.is_some() && !ctx.time_column {
        values.error(
            &key("refresh_data_window"),
            "needs time_column on the dataset (the column compared with now() - window)",
        );
    }
    window
}

fn parse_append_overlap(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    refresh_mode: RefreshMode,
) -> Option<Duration> {
    let overlap = values.duration(
        &key("refresh_append_overlap"),
        &raw.refresh_append_overlap,
        true,
    );
    if raw.refresh_append_overlap.is_some() && refresh_mode != RefreshMode::Append {
        let message = format!(
            "only applies to refresh_mode: append (refresh_mode is {})",
            refresh_mode.as_str()
        );
        values.error(&key("refresh_append_overlap"), message);
    }
    overlap
}

fn parse_snapshots_location(
    values: &mut Values<'_, '_>,
    raw: &RawAcceleration,
    snapshots: SnapshotMode,
    ctx: &Context,
) -> Option<String> {
    let location = values.non_empty(
        &key("snapshots_location"),
        &raw.snapshots_location,
        "a snapshot location such as s3://bucket/snapshots/",
    );
    if let Some(message) = location
        .as_deref()
        .and_then(super::runtime::snapshot_location_error)
    {
        values.error(&key("snapshots_location"), message);
    }
    if snapshots == SnapshotMode::Disabled && raw.snapshots_location.is_some() {
        values.error(&key("snapshots_location"), "has no effect while acceleration.snapshots is disabled; set snapshots: enabled, bootstrap_only or create_only");
    }
    if snapshots != SnapshotMode::Disabled
        && !ctx.snapshot_store
        && raw.snapshots_location.is_none()
    {
        let message = format!(
            "snapshots: {} needs the top-level snapshots block with enabled: true, or acceleration.snapshots_location",
            snapshots.as_str()
        );
        values.error(&key("snapshots"), message);
    }
    location
}

/// `refresh_mode: snapshot` consumes snapshots into a file-based engine (seeds).
fn check_snapshot_mode(
    values: &mut Values<'_, '_>,
    refresh_mode: RefreshMode,
    engine: Engine,
    snapshots: SnapshotMode,
) {
    if refresh_mode != RefreshMode::Snapshot {
        return;
    }
    if !matches!(
        snapshots,
        SnapshotMode::Enabled | SnapshotMode::BootstrapOnly
    ) {
        let message = format!(
            "refresh_mode: snapshot needs acceleration.snapshots: enabled or bootstrap_only (it is {})",
            snapshots.as_str()
        );
        values.error(&key("snapshots"), message);
    }
    if engine == Engine::Arrow {
        values.error(&key("engine"), "refresh_mode: snapshot needs a snapshot-capable file engine; valid engines are duckdb, sqlite");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::{ConfigError, Report};

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn parse_block(raw: RawAcceleration, time_column: bool) -> (Acceleration, Vec<ConfigError>) {
        let mut errors = Vec::new();
        let mut report = Report::new(Some("d".into()), &mut errors);
        let mut values = Values::new(&mut report, &no_env);
        let ctx = Context {
            time_column,
            time_partition_column: false,
            snapshot_store: false,
            snapshot_queue: false,
        };
        let acceleration = parse(&mut values, &raw, &ctx);
        (acceleration, errors)
    }

    fn text(s: &str) -> Option<Scalar> {
        Some(Scalar::Text(s.into()))
    }

    #[test]
    fn interval_or_cron_but_not_both() {
        let raw = RawAcceleration {
            refresh_check_interval: text("10m"),
            ..Default::default()
        };
        let (a, errors) = parse_block(raw, false);
        assert!(errors.is_empty());
        assert!(matches!(a.schedule, Some(Schedule::Interval(d)) if d == Duration::from_secs(600)));

        let raw = RawAcceleration {
            refresh_cron: text("0 12 * * 1-5"),
            ..Default::default()
        };
        let (a, _) = parse_block(raw, false);
        assert!(matches!(a.schedule, Some(Schedule::Cron(ref c)) if c.as_str() == "0 12 * * 1-5"));

        let raw = RawAcceleration {
            refresh_check_interval: text("10m"),
            refresh_cron: text("0 12 * * 1-5"),
            ..Default::default()
        };
        let (_, errors) = parse_block(raw, false);
        assert_eq!(errors[0].key, "acceleration.refresh_cron");
        assert!(errors[0].message.contains("exclusive"));
    }

    #[test]
    fn refresh_mode_disabled_has_no_schedule() {
        let raw = RawAcceleration {
            refresh_mode: text("disabled"),
            ..Default::default()
        };
        let (a, errors) = parse_block(raw, false);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            (a.refresh_mode, a.schedule.is_none()),
            (RefreshMode::Disabled, true)
        );
        let raw = RawAcceleration {
            refresh_mode: text("disabled"),
            refresh_check_interval: text("10m"),
            ..Default::default()
        };
        let (_, errors) = parse_block(raw, false);
        assert_eq!(errors[0].key, "acceleration.refresh_check_interval");
        assert!(errors[0].message.contains("never refreshes"), "{errors:?}");
    }

    /// Which file accelerations are queried in place, and the DuckDB
    /// memory limit, valid only for a DuckDB file.
    #[test]
    fn file_accelerations_refreshed_in_full_are_queried_in_place() {
        let block =
            |engine: &str, mode: &str, refresh_mode: &str, limit: Option<&str>| RawAcceleration {
                engine: text(engine),
                mode: text(mode),
                refresh_mode: text(refresh_mode),
                params: limit.map(|limit| {
                    RawParams::from([(
                        "duckdb_memory_limit".to_owned(),
                        Scalar::Text(limit.into()),
                    )])
                }),
                ..Default::default()
            };
        let (a, errors) = parse_block(block("duckdb", "file", "full", Some("256MB")), false);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(a.in_place());
        assert_eq!(a.duckdb_memory_limit, Some(256 << 20));
        let (a, _) = parse_block(block("sqlite", "file_create", "disabled", None), false);
        assert!(a.in_place());
        let (a, _) = parse_block(block("duckdb", "file", "append", None), true);
        assert!(a.in_place());
        let (a, _) = parse_block(block("duckdb", "file", "changes", None), true);
        assert!(a.in_place());
        let (a, _) = parse_block(block("sqlite", "file", "caching", None), true);
        assert!(!a.in_place());
        assert_eq!(
            a.in_memory_reason().as_deref(),
            Some("refresh_mode: caching")
        );
        let (a, _) = parse_block(block("arrow", "memory", "full", None), false);
        assert!(!a.in_place());
        assert_eq!(a.in_memory_reason(), None, "a memory acceleration");
        let (_, errors) = parse_block(block("sqlite", "file", "full", Some("1GB")), false);
        assert_eq!(errors[0].key, "acceleration.params.duckdb_memory_limit");
        assert!(
            errors[0].message.contains("only valid with engine: duckdb"),
            "{errors:?}"
        );
        let (_, errors) = parse_block(block("duckdb", "file", "full", Some("lots")), false);
        assert_eq!(errors[0].key, "acceleration.params.duckdb_memory_limit");
        assert!(
            errors[0].message.contains("invalid size 'lots'"),
            "{errors:?}"
        );
    }

    #[test]
    fn the_seeds_other_file_engines_are_refused_by_name() {
        for engine in ["cayenne", "turso"] {
            let raw = RawAcceleration {
                engine: text(engine),
                mode: text("file"),
                ..Default::default()
            };
            let (_, errors) = parse_block(raw, false);
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert_eq!(errors[0].key, "acceleration.engine");
            assert!(
                errors[0].message.contains(&format!("no {engine} engine"))
                    && errors[0].message.contains("duckdb and sqlite"),
                "{errors:?}"
            );
        }
    }

    #[test]
    fn snapshot_mode_polls_every_minute_by_default() {
        let raw = RawAcceleration {
            engine: text("duckdb"),
            mode: text("file"),
            refresh_mode: text("snapshot"),
            snapshots: text("bootstrap_only"),
            snapshots_location: text("s3://b/snapshots/"),
            ..Default::default()
        };
        let (a, errors) = parse_block(raw, false);
        assert!(errors.is_empty(), "{errors:?}");
        assert!(matches!(a.schedule, Some(Schedule::Interval(d)) if d == SNAPSHOT_POLL_DEFAULT));
    }

    #[test]
    fn sort_by_orders_the_arrow_engine_only() {
        let raw = |engine: &str, mode: &str, refresh_mode: &str| RawAcceleration {
            engine: text(engine),
            mode: text(mode),
            refresh_mode: text(refresh_mode),
            sort_by: Some(StringList::One("day, id".into())),
            ..Default::default()
        };
        let (a, errors) = parse_block(raw("arrow", "memory", "full"), false);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(a.sort_by, vec!["day", "id"]);
        let (a, errors) = parse_block(raw("duckdb", "file", "full"), false);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].key, "acceleration.sort_by");
        assert!(
            errors[0]
                .message
                .contains("engine duckdb keeps rows in the order"),
            "{errors:?}"
        );
        assert!(a.sort_by.is_empty());
        let (_, errors) = parse_block(raw("arrow", "memory", "caching"), false);
        assert_eq!(errors[0].key, "acceleration.sort_by");
        assert!(
            errors[0].message.contains("refresh_mode: caching"),
            "{errors:?}"
        );
        let twice = RawAcceleration {
            sort_by: Some(StringList::Many(vec!["day".into(), "day".into()])),
            ..Default::default()
        };
        let (_, errors) = parse_block(twice, false);
        assert_eq!(errors[0].key, "acceleration.sort_by");
        assert!(
            errors[0].message.contains("column 'day' twice"),
            "{errors:?}"
        );
    }

    #[test]
    fn primary_key_accepts_text_and_lists() {
        let raw = RawAcceleration {
            primary_key: Some(StringList::One("a, b".into())),
            ..Default::default()
        };
        assert_eq!(parse_block(raw, false).0.primary_key, vec!["a", "b"]);
        let list = StringList::Many(vec!["x".into(), "y".into()]);
        let raw = RawAcceleration {
            primary_key: Some(list),
            ..Default::default()
        };
        assert_eq!(parse_block(raw, false).0.primary_key, vec!["x", "y"]);
    }

    #[test]
    fn append_needs_a_time_column() {
        let raw = || RawAcceleration {
            refresh_mode: text("append"),
            ..Default::default()
        };
        assert_eq!(
            parse_block(raw(), false).1[0].key,
            "acceleration.refresh_mode"
        );
        assert!(parse_block(raw(), true).1.is_empty());
    }
}
