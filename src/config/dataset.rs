//! One `datasets:` entry, validated: the name clients query, the source reference and
//! its parameters, time columns, readiness and the acceleration block. Rules that span
//! datasets (unique names) live in `validate.rs`.

use std::fmt;

use super::acceleration::{self, Acceleration};
use super::params::{self, SourceParams};
use super::raw::{RawAcceleration, RawDataset, RawParams, Scalar};
use super::source::{self, SourceRef};
use super::values::{Values, yaml_enum};

/// A validated dataset.
#[derive(Debug, Clone)]
pub struct DatasetConfig {
    pub name: DatasetName,
    pub from: SourceRef,
    /// `from` as written (after `${...}` substitution), for status output and the API.
    pub from_raw: String,
    pub params: SourceParams,
    /// Orders rows in time: append refreshes, data windows and retention compare it.
    pub time_column: Option<String>,
    pub time_format: Option<TimeFormat>,
    /// A coarser time column (e.g. a day) used to prune partitions.
    pub time_partition_column: Option<String>,
    pub time_partition_format: Option<TimeFormat>,
    pub ready_state: ReadyState,
    pub acceleration: Acceleration,
    /// What the dataset holds, for people: clients see it as the table's
    /// comment (`obj_description`, psql's `\d+`), before the source's own.
    pub description: Option<String>,
}

/// The table clients query: `orders` lands in schema `public`, `shop.orders` in `shop`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DatasetName {
    pub schema: String,
    pub table: String,
}

const DEFAULT_SCHEMA: &str = "public";

impl DatasetName {
    /// Parses `table` or `schema.table`; each part is a plain SQL identifier.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split('.').collect();
        let (schema, table) = match parts.as_slice() {
            [table] => (DEFAULT_SCHEMA, *table),
            [schema, table] => (*schema, *table),
            _ => return Err(format!("invalid name '{text}'; use table or schema.table")),
        };
        for part in [schema, table] {
            if !is_identifier(part) {
                return Err(format!(
                    "invalid name '{text}'; each part must start with a letter or _ and contain only letters, digits and _"
                ));
            }
        }
        Ok(Self {
            schema: schema.to_string(),
            table: table.to_string(),
        })
    }

    /// Lower-cased `schema.table`, for case-insensitive uniqueness.
    pub(crate) fn folded(&self) -> String {
        format!(
            "{}.{}",
            self.schema.to_lowercase(),
            self.table.to_lowercase()
        )
    }
}

fn is_identifier(part: &str) -> bool {
    let mut chars = part.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl fmt::Display for DatasetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.schema == DEFAULT_SCHEMA {
            write!(f, "{}", self.table)
        } else {
            write!(f, "{}.{}", self.schema, self.table)
        }
    }
}

yaml_enum! {
    /// How a time column's values are read.
    pub enum TimeFormat {
        Timestamp => "timestamp",
        Timestamptz => "timestamptz",
        UnixSeconds => "unix_seconds",
        UnixMillis => "unix_millis",
        UnixNanos => "unix_nanos",
        Iso8601 => "iso8601",
        Date => "date",
    }
}

yaml_enum! {
    /// When the dataset counts as ready for `/v1/ready`.
    pub enum ReadyState {
        /// After the first load finished.
        OnLoad => "on_load",
        /// As soon as it is registered; queries go to the source until loaded.
        OnRegistration => "on_registration",
        /// Once the source's schema is resolved (which proves access to the source).
        OnSchemaResolved => "on_schema_resolved",
    }
}

yaml_enum! {
    /// What clients may do with the dataset.
    pub enum Access {
        Read => "read",
        ReadWrite => "read_write",
    }
}

/// What a dataset entry takes from the rest of the configuration.
pub(crate) struct Defaults {
    /// The top-level `snapshots:` block is present and enabled.
    pub snapshot_store: bool,
    /// ... and names an `s3_queue_url`.
    pub snapshot_queue: bool,
    /// `runtime.ready_state`, the default of every dataset's `ready_state`.
    pub ready_state: ReadyState,
}

/// Validates one entry. Returns `None` only when `name` or `from` could not
/// be read.
pub(crate) fn parse(
    values: &mut Values<'_, '_>,
    raw: &RawDataset,
    defaults: &Defaults,
) -> Option<DatasetConfig> {
    let snapshot_store = defaults.snapshot_store;
    let name = parse_name(values, raw);
    let (from_raw, from) = parse_source(values, raw);
    let no_params = RawParams::default();
    // `refresh_mode: snapshot` never contacts the source: its connection
    // parameters may be left out.
    let connects = !raw.acceleration.as_ref().is_some_and(|a| {
        matches!(&a.refresh_mode, Some(Scalar::Text(mode)) if mode.trim().eq_ignore_ascii_case("snapshot"))
    });
    let params = from.as_ref().map(|from| {
        params::parse_params(
            values,
            from,
            raw.params.as_ref().unwrap_or(&no_params),
            connects,
        )
    });
    let (time_column, time_format) = parse_time_column(values, raw, "time_column", "time_format");
    let (partition, partition_format) = parse_time_column(
        values,
        raw,
        "time_partition_column",
        "time_partition_format",
    );
    let context = acceleration::Context {
        time_column: time_column.is_some(),
        time_partition_column: partition.is_some(),
        snapshot_store,
        snapshot_queue: defaults.snapshot_queue,
    };
    let reader = match &params {
        Some(SourceParams::Snapshot { location, .. }) => Some(location.clone()),
        _ => None,
    };
    let ready_state = values.choice("ready_state", &raw.ready_state);
    if values.choice("access", &raw.access) == Some(Access::ReadWrite) {
        values.error(
            "access",
            "access: read_write is not available: pgaccel is a read replica, and writes go to the source itself; use access: read (the default) or leave it out",
        );
    }
    let no_acceleration = RawAcceleration::default();
    let raw_acceleration = raw.acceleration.as_ref().unwrap_or(&no_acceleration);
    let acceleration = match reader {
        Some(location) => {
            let raw = snapshot_reader(values, raw_acceleration, location);
            acceleration::parse(values, &raw, &context)
        }
        None => acceleration::parse(values, raw_acceleration, &context),
    };
    if let (Some(name), Some(sql)) = (&name, &acceleration.refresh_sql)
        && !sql.reads(name)
    {
        let message = format!(
            "must read the dataset itself (FROM {}), not another table",
            name.table
        );
        values.error("acceleration.refresh_sql", message);
    }
    if let (Some(name), Some(sql)) = (&name, &acceleration.retention.sql)
        && !sql.deletes_from(name)
    {
        let message = format!(
            "must delete from the dataset itself (DELETE FROM {} WHERE ...), not another table",
            name.table
        );
        values.error("acceleration.retention_sql", message);
    }
    // An append compares its time column, so the acceleration must hold it.
    if acceleration.refresh_mode == acceleration::RefreshMode::Append
        && let Some(columns) = acceleration
            .refresh_sql
            .as_ref()
            .and_then(|sql| sql.columns())
        && let Some(column) = time_column.as_ref().or(partition.as_ref())
        && !columns.contains(column)
    {
        let message = format!(
            "must select '{column}': refresh_mode: append finds new rows by comparing it with the newest one loaded"
        );
        values.error("acceleration.refresh_sql", message);
    }
    if acceleration.refresh_mode == acceleration::RefreshMode::Changes {
        check_changes(values, from.as_ref(), &acceleration);
    }
    if acceleration.refresh_mode == acceleration::RefreshMode::Caching {
        check_caching(values, &acceleration);
    }
    Some(DatasetConfig {
        name: name?,
        from: from?,
        from_raw: from_raw?,
        params: params?,
        time_column,
        time_format,
        time_partition_column: partition,
        time_partition_format: partition_format,
        ready_state: ready_state.unwrap_or(defaults.ready_state),
        acceleration,
        description: values.text("description", &raw.description),
    })
}

/// `refresh_mode: caching` keeps, in memory, the rows each query's filters
/// fetched: nothing is loaded ahead of the queries, so the keys that choose
/// what a refresh loads have nothing to act on.
fn check_caching(values: &mut Values<'_, '_>, acceleration: &acceleration::Acceleration) {
    if acceleration.mode != acceleration::Mode::Memory {
        values.error(
            "acceleration.mode",
            "refresh_mode: caching keeps its cache in memory in this version: use mode: memory (the default)",
        );
    }
    if acceleration.refresh_sql.is_some() {
        values.error(
            "acceleration.refresh_sql",
            "does not apply to refresh_mode: caching, which fetches the rows each query's filters select",
        );
    }
    if acceleration.refresh_data_window.is_some() {
        values.error(
            "acceleration.refresh_data_window",
            "does not apply to refresh_mode: caching, which fetches the rows each query's filters select",
        );
    }
}

/// `refresh_mode: changes` applies the source's own change stream to the
/// whole table: it needs a source that has one, and a `refresh_sql` may
/// choose columns but not filter rows (a change cannot be tested against a
/// filter the source evaluates), as the seeds say.
fn check_changes(
    values: &mut Values<'_, '_>,
    from: Option<&SourceRef>,
    acceleration: &acceleration::Acceleration,
) {
    if let Some(from) = from
        && !matches!(from, SourceRef::Postgres { .. } | SourceRef::Mysql { .. })
    {
        let message = format!(
            "refresh_mode: changes streams the changes of a PostgreSQL table (logical decoding) or a MySQL/MariaDB table (the row binlog); the {} source has no change stream: use refresh_mode: full or append",
            from.kind()
        );
        values.error("acceleration.refresh_mode", message);
    }
    if acceleration
        .refresh_sql
        .as_ref()
        .is_some_and(|sql| sql.filter().is_some())
    {
        values.error(
            "acceleration.refresh_sql",
            "with refresh_mode: changes, refresh_sql can only choose the columns, not filter rows: remove the WHERE clause",
        );
    }
    if acceleration.refresh_data_window.is_some() {
        values.error(
            "acceleration.refresh_data_window",
            "does not apply to refresh_mode: changes, which keeps every row of the table; use retention to drop old rows",
        );
    }
}

/// `from` as written (after substitution) and parsed.
fn parse_source(
    values: &mut Values<'_, '_>,
    raw: &RawDataset,
) -> (Option<String>, Option<SourceRef>) {
    if raw.from.is_none() {
        let message =
            "missing; give a source such as postgres:public.orders or file:data/orders.parquet";
        values.error("from", message);
        return (None, None);
    }
    let Some(text) = values.non_empty("from", &raw.from, "a source such as postgres:public.orders")
    else {
        return (None, None);
    };
    match source::parse_from(&text) {
        Ok(source) => (Some(text), Some(source)),
        Err(message) => {
            values.error("from", message);
            (Some(text), None)
        }
    }
}

fn parse_name(values: &mut Values<'_, '_>, raw: &RawDataset) -> Option<DatasetName> {
    if raw.name.is_none() {
        values.error(
            "name",
            "missing; give the table name clients query, e.g. orders or shop.orders",
        );
        return None;
    }
    let text = values.text("name", &raw.name)?;
    DatasetName::parse(text.trim())
        .map_err(|message| values.error("name", message))
        .ok()
}

/// The acceleration of a `file_format: snapshot` dataset: it serves the
/// snapshots published at `location` with `refresh_mode: snapshot`, so it
/// names no engine, mode or snapshot settings (the file is kept in the
/// engine each snapshot was written by). Only the poll interval and the
/// keys that do not change that may be given.
fn snapshot_reader(
    values: &mut Values<'_, '_>,
    given: &RawAcceleration,
    location: String,
) -> RawAcceleration {
    let fixed = [
        ("engine", given.engine.is_some()),
        ("mode", given.mode.is_some()),
        ("snapshots", given.snapshots.is_some()),
        ("snapshots_location", given.snapshots_location.is_some()),
        (
            "refresh_mode",
            given
                .refresh_mode
                .as_ref()
                .is_some_and(|mode| mode.written().trim() != "snapshot"),
        ),
        (
            "enabled",
            given
                .enabled
                .as_ref()
                .is_some_and(|enabled| enabled.written().trim() != "true"),
        ),
    ];
    for (key, set) in fixed {
        if set {
            values.error(
                &format!("acceleration.{key}"),
                format!(
                    "a dataset with params.file_format: snapshot serves the snapshots published at its 'from' location; leave acceleration.{key} out"
                ),
            );
        }
    }
    let text = |value: &str| Some(Scalar::Text(value.to_owned()));
    RawAcceleration {
        enabled: text("true"),
        engine: text("duckdb"),
        mode: text("file"),
        refresh_mode: text("snapshot"),
        snapshots: text("bootstrap_only"),
        snapshots_location: Some(Scalar::Text(location)),
        ..given.clone()
    }
}

/// A time column and its format; the format alone is an error.
fn parse_time_column(
    values: &mut Values<'_, '_>,
    raw: &RawDataset,
    column_key: &str,
    format_key: &str,
) -> (Option<String>, Option<TimeFormat>) {
    let (column, format) = if column_key == "time_column" {
        (&raw.time_column, &raw.time_format)
    } else {
        (&raw.time_partition_column, &raw.time_partition_format)
    };
    let column = values.non_empty(column_key, column, "a column name");
    let format = values.choice(format_key, format);
    if format.is_some() && column.is_none() {
        values.error(
            format_key,
            format!("{format_key} needs {column_key}, which says which column it describes"),
        );
    }
    (column, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_ready_state_is_every_datasets_default() {
        let config = crate::config::from_yaml_str(
            "runtime:\n  ready_state: on_registration\ndatasets:\n  - from: postgres:public.a\n    name: a\n    params: { pg_db: test, pg_user: postgres }\n  - from: postgres:public.b\n    name: b\n    params: { pg_db: test, pg_user: postgres }\n    ready_state: on_load\n",
        )
        .unwrap();
        assert!(
            config.unsupported().is_empty(),
            "{:?}",
            config.unsupported()
        );
        let states: Vec<_> = config.datasets.iter().map(|d| d.ready_state).collect();
        assert_eq!(states, [ReadyState::OnRegistration, ReadyState::OnLoad]);
    }

    #[test]
    fn a_snapshot_location_dataset_names_no_engine_or_refresh_mode() {
        let entry = |extra: &str| {
            format!(
                "datasets:\n  - from: s3://bucket/snapshots/\n    name: a\n    params: {{ file_format: snapshot, s3_region: eu-west-1 }}\n{extra}"
            )
        };
        let config = crate::config::from_yaml_str(&entry("")).unwrap();
        assert!(
            config.unsupported().is_empty(),
            "{:?}",
            config.unsupported()
        );
        let dataset = &config.datasets[0];
        assert_eq!(
            dataset.acceleration.refresh_mode,
            acceleration::RefreshMode::Snapshot
        );
        assert_eq!(
            dataset.acceleration.snapshots_location.as_deref(),
            Some("s3://bucket/snapshots/")
        );
        let SourceParams::Snapshot { params, .. } = &dataset.params else {
            panic!("{:?}", dataset.params);
        };
        assert_eq!(params["s3_region"].expose(), "eu-west-1");
        let errors = crate::config::from_yaml_str(&entry(
            "    acceleration:\n      engine: sqlite\n      refresh_mode: full\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(
            errors.contains("acceleration.engine") && errors.contains("acceleration.refresh_mode"),
            "{errors}"
        );
        // Data files from s3:// keep the keys that reach them.
        let config = crate::config::from_yaml_str(
            "datasets:\n  - from: s3://bucket/data/\n    name: a\n    params: { file_format: json, s3_region: eu-west-1, allow_http: true }\n",
        )
        .unwrap();
        assert!(
            config.unsupported().is_empty(),
            "{:?}",
            config.unsupported()
        );
        let SourceParams::File { format, store } = &config.datasets[0].params else {
            panic!("{:?}", config.datasets[0].params);
        };
        assert_eq!(*format, super::super::FileFormat::Json);
        assert_eq!(store["s3_region"].expose(), "eu-west-1");
        assert_eq!(store["allow_http"].expose(), "true");
    }

    #[test]
    fn access_is_read_only() {
        let entry = |access: &str| {
            format!(
                "datasets:\n  - from: postgres:public.a\n    name: a\n    params: {{ pg_db: test, pg_user: postgres }}\n    access: {access}\n"
            )
        };
        assert!(crate::config::from_yaml_str(&entry("read")).is_ok());
        let errors = crate::config::from_yaml_str(&entry("read_write"))
            .unwrap_err()
            .to_string();
        assert!(
            errors.contains("dataset 'a': access:") && errors.contains("pgaccel is a read replica"),
            "{errors}"
        );
    }

    #[test]
    fn names_default_to_public() {
        let name = DatasetName::parse("orders").unwrap();
        assert_eq!(
            (name.schema.as_str(), name.table.as_str()),
            ("public", "orders")
        );
        assert_eq!(name.to_string(), "orders");
        let name = DatasetName::parse("shop.orders").unwrap();
        assert_eq!(name.schema, "shop");
        assert_eq!(name.to_string(), "shop.orders");
        assert_eq!(
            DatasetName::parse("Shop.Orders").unwrap().folded(),
            "shop.orders"
        );
    }

    #[test]
    fn bad_names_are_rejected() {
        for text in [
            "",
            "a.b.c",
            "1orders",
            "my-orders",
            "shop.",
            ".orders",
            "or ders",
        ] {
            assert!(DatasetName::parse(text).is_err(), "{text}");
        }
    }
}
