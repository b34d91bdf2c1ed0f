//! The catalog rows of the server and the session: the database the client
//! connected to (`pg_database`), roles (`pg_roles`, `pg_user`, `pg_authid`),
//! the session's settings (`pg_settings`), every connection's activity
//! (`pg_stat_activity`, `pg_stat_ssl`), locks (pgaccel takes none), time
//! zones, and the session's cursors.

use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{
    DataType, Field, IntervalMonthDayNano, IntervalUnit, Schema, SchemaRef, TimeUnit,
};
use datafusion::common::{Result, ScalarValue};
use datafusion_pg_catalog::pg_catalog::oid_field::{kind, oid_field};

use super::System;
use super::oids;
use super::rows::{ArrayColumn, Rows, flag, int, list, text};
use crate::accelerator::PG_TYPE_METADATA;
use crate::query::activity::Activity;
use crate::query::engine::SessionInfo;
use crate::query::settings::catalog::{self, Kind};
use crate::query::settings::zone::iso_offset;

fn timestamptz_field(name: &str) -> Field {
    Field::new(
        name,
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        true,
    )
}

fn timestamp(at: DateTime<Utc>) -> ScalarValue {
    ScalarValue::TimestampMicrosecond(Some(at.timestamp_micros()), Some("UTC".into()))
}

fn inet_field(name: &str) -> Field {
    Field::new(name, DataType::Utf8, true)
        .with_metadata([(PG_TYPE_METADATA.to_owned(), "inet".to_owned())].into())
}

pub fn databases(_system: &System, session: Option<&SessionInfo>) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        oid_field("oid", kind::OID, false),
        Field::new("datname", DataType::Utf8, false),
        oid_field("datdba", kind::OID, false),
        Field::new("encoding", DataType::Int32, false),
        Field::new("datlocprovider", DataType::Utf8, false),
        Field::new("datistemplate", DataType::Boolean, false),
        Field::new("datallowconn", DataType::Boolean, false),
        Field::new("datconnlimit", DataType::Int32, false),
        Field::new("datfrozenxid", DataType::Utf8, false),
        Field::new("datminmxid", DataType::Utf8, false),
        oid_field("dattablespace", kind::OID, false),
        Field::new("datcollate", DataType::Utf8, false),
        Field::new("datctype", DataType::Utf8, false),
        Field::new("daticulocale", DataType::Utf8, true),
        Field::new("daticurules", DataType::Utf8, true),
        Field::new("datcollversion", DataType::Utf8, true),
        ArrayColumn::TextArray("_aclitem").field("datacl"),
    ]));
    let mut rows = Rows::new(schema);
    if let Some(session) = session {
        let name = &session.identity.database;
        rows.push(&[
            ("oid", int(oids::database(name))),
            ("datname", text(name)),
            ("datdba", int(oids::BOOTSTRAP_SUPERUSER)),
            ("encoding", int(6)),
            ("datlocprovider", text("c")),
            ("datallowconn", flag(true)),
            ("datconnlimit", int(-1)),
            ("datfrozenxid", text("0")),
            ("datminmxid", text("1")),
            ("dattablespace", int(oids::DEFAULT_TABLESPACE)),
            ("datcollate", text("C.UTF-8")),
            ("datctype", text("C.UTF-8")),
        ]);
    }
    rows.finish()
}

/// A login role: the connected user, or the owner of everything.
struct Role {
    name: String,
    superuser: bool,
}

fn login_roles(session: Option<&SessionInfo>) -> Vec<Role> {
    let mut roles = vec![Role {
        name: "postgres".to_owned(),
        superuser: true,
    }];
    if let Some(session) = session
        && session.identity.user != "postgres"
    {
        roles.push(Role {
            name: session.identity.user.clone(),
            superuser: false,
        });
    }
    roles
}

pub fn roles(system: &System, name: &str, session: Option<&SessionInfo>) -> Result<RecordBatch> {
    match name {
        "pg_user" => users(session),
        "pg_authid" => {
            let shipped = predefined_roles(system)?;
            let mut rows = Rows::new(shipped.schema());
            push_roles(&mut rows, session, None);
            concat(&shipped, rows.finish()?)
        }
        _ => {
            let schema = Arc::new(Schema::new(vec![
                Field::new("rolname", DataType::Utf8, false),
                Field::new("rolsuper", DataType::Boolean, false),
                Field::new("rolinherit", DataType::Boolean, false),
                Field::new("rolcreaterole", DataType::Boolean, false),
                Field::new("rolcreatedb", DataType::Boolean, false),
                Field::new("rolcanlogin", DataType::Boolean, false),
                Field::new("rolreplication", DataType::Boolean, false),
                Field::new("rolconnlimit", DataType::Int32, false),
                Field::new("rolpassword", DataType::Utf8, true),
                timestamptz_field("rolvaliduntil"),
                Field::new("rolbypassrls", DataType::Boolean, false),
                ArrayColumn::TextArray("_text").field("rolconfig"),
                oid_field("oid", kind::OID, false),
            ]));
            let mut rows = Rows::new(schema);
            push_roles(&mut rows, session, Some("********"));
            let shipped = predefined_roles(system)?;
            // The predefined roles (pg_read_all_data, ...) as PostgreSQL has them.
            for row in 0..shipped.num_rows() {
                let value = |column: &str| {
                    ScalarValue::try_from_array(
                        shipped.column_by_name(column).expect("a column"),
                        row,
                    )
                    .unwrap_or(ScalarValue::Null)
                };
                rows.push(&[
                    ("rolname", value("rolname")),
                    ("rolsuper", value("rolsuper")),
                    ("rolinherit", value("rolinherit")),
                    ("rolcanlogin", value("rolcanlogin")),
                    ("rolconnlimit", value("rolconnlimit")),
                    ("oid", value("oid")),
                ]);
            }
            rows.finish()
        }
    }
}

/// PostgreSQL's predefined roles (`pg_monitor`, ...) from the shipped
/// `pg_authid`, without its bootstrap superuser, which [`login_roles`] lists
/// as pgaccel's own `postgres`.
fn predefined_roles(system: &System) -> Result<RecordBatch> {
    let shipped = system.shipped("pg_authid").expect("pg_authid is shipped");
    let oids = shipped.column_by_name("oid").expect("pg_authid has oids");
    let superuser = ScalarValue::Int32(Some(oids::BOOTSTRAP_SUPERUSER))
        .cast_to(oids.data_type())?
        .to_scalar()?;
    let keep = datafusion::arrow::compute::kernels::cmp::neq(oids, &superuser)?;
    Ok(datafusion::arrow::compute::filter_record_batch(
        shipped, &keep,
    )?)
}

fn push_roles(rows: &mut Rows, session: Option<&SessionInfo>, password: Option<&str>) {
    for role in login_roles(session) {
        rows.push(&[
            ("oid", int(oids::role(&role.name))),
            ("rolname", text(&role.name)),
            ("rolsuper", flag(role.superuser)),
            ("rolinherit", flag(true)),
            ("rolcreaterole", flag(role.superuser)),
            ("rolcreatedb", flag(role.superuser)),
            ("rolcanlogin", flag(true)),
            ("rolreplication", flag(role.superuser)),
            ("rolbypassrls", flag(role.superuser)),
            ("rolconnlimit", int(-1)),
            (
                "rolpassword",
                password.map_or(ScalarValue::Utf8(None), text),
            ),
        ]);
    }
}

fn users(session: Option<&SessionInfo>) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("usename", DataType::Utf8, false),
        oid_field("usesysid", kind::OID, false),
        Field::new("usecreatedb", DataType::Boolean, false),
        Field::new("usesuper", DataType::Boolean, false),
        Field::new("userepl", DataType::Boolean, false),
        Field::new("usebypassrls", DataType::Boolean, false),
        Field::new("passwd", DataType::Utf8, true),
        timestamptz_field("valuntil"),
        ArrayColumn::TextArray("_text").field("useconfig"),
    ]));
    let mut rows = Rows::new(schema);
    for role in login_roles(session) {
        rows.push(&[
            ("usename", text(&role.name)),
            ("usesysid", int(oids::role(&role.name))),
            ("usecreatedb", flag(role.superuser)),
            ("usesuper", flag(role.superuser)),
            ("userepl", flag(role.superuser)),
            ("usebypassrls", flag(role.superuser)),
            ("passwd", text("********")),
        ]);
    }
    rows.finish()
}

pub fn settings(session: Option<&SessionInfo>) -> Result<RecordBatch> {
    let text_field = |name: &str| Field::new(name, DataType::Utf8, true);
    let schema = Arc::new(Schema::new(vec![
        text_field("name"),
        text_field("setting"),
        text_field("unit"),
        text_field("category"),
        text_field("short_desc"),
        text_field("extra_desc"),
        text_field("context"),
        text_field("vartype"),
        text_field("source"),
        text_field("min_val"),
        text_field("max_val"),
        ArrayColumn::TextArray("_text").field("enumvals"),
        text_field("boot_val"),
        text_field("reset_val"),
        text_field("sourcefile"),
        Field::new("sourceline", DataType::Int32, true),
        Field::new("pending_restart", DataType::Boolean, true),
    ]));
    let mut rows = Rows::new(schema);
    let settings = session.map(SessionInfo::settings);
    for definition in catalog::all() {
        let value = settings
            .as_ref()
            .and_then(|s| s.get(definition.name).ok())
            .unwrap_or_else(|| definition.boot.to_owned());
        let optional = |value: &str| {
            if value.is_empty() {
                ScalarValue::Utf8(None)
            } else {
                text(value)
            }
        };
        let enumvals = match &definition.kind {
            Kind::Enum(values) => list(values.iter().map(|v| text(*v)).collect(), &DataType::Utf8),
            _ => ScalarValue::try_from(
                &ArrayColumn::TextArray("_text")
                    .field("x")
                    .data_type()
                    .clone(),
            )?,
        };
        let source = if value == definition.boot {
            "default"
        } else {
            "session"
        };
        rows.push(&[
            ("name", text(definition.name)),
            ("setting", text(&value)),
            ("unit", optional(definition.unit_text)),
            ("category", text(definition.category)),
            ("short_desc", text(definition.description)),
            ("context", text(definition.context.as_str())),
            ("vartype", text(definition.kind.vartype())),
            ("source", text(source)),
            ("min_val", optional(definition.min_text)),
            ("max_val", optional(definition.max_text)),
            ("enumvals", enumvals),
            ("boot_val", text(definition.boot)),
            ("reset_val", text(&value)),
            ("pending_restart", flag(false)),
        ]);
    }
    rows.finish()
}

fn activity_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        oid_field("datid", kind::OID, true),
        Field::new("datname", DataType::Utf8, true),
        Field::new("pid", DataType::Int32, true),
        Field::new("leader_pid", DataType::Int32, true),
        oid_field("usesysid", kind::OID, true),
        Field::new("usename", DataType::Utf8, true),
        Field::new("application_name", DataType::Utf8, true),
        inet_field("client_addr"),
        Field::new("client_hostname", DataType::Utf8, true),
        Field::new("client_port", DataType::Int32, true),
        timestamptz_field("backend_start"),
        timestamptz_field("xact_start"),
        timestamptz_field("query_start"),
        timestamptz_field("state_change"),
        Field::new("wait_event_type", DataType::Utf8, true),
        Field::new("wait_event", DataType::Utf8, true),
        Field::new("state", DataType::Utf8, true),
        Field::new("backend_xid", DataType::Utf8, true),
        Field::new("backend_xmin", DataType::Utf8, true),
        Field::new("query_id", DataType::Int64, true),
        Field::new("query", DataType::Utf8, true),
        Field::new("backend_type", DataType::Utf8, true),
    ]))
}

pub fn activity(activity: &Activity) -> Result<RecordBatch> {
    let mut rows = Rows::new(activity_schema());
    let optional = |at: Option<DateTime<Utc>>| {
        at.map_or(
            ScalarValue::TimestampMicrosecond(None, Some("UTC".into())),
            timestamp,
        )
    };
    for backend in activity.snapshot() {
        rows.push(&[
            ("datid", int(oids::database(&backend.database))),
            ("datname", text(&backend.database)),
            ("pid", int(backend.pid)),
            ("usesysid", int(oids::role(&backend.user))),
            ("usename", text(&backend.user)),
            ("application_name", text(&backend.application_name)),
            ("client_addr", text(backend.client.ip().to_string())),
            ("client_port", int(i32::from(backend.client.port()))),
            ("backend_start", timestamp(backend.backend_start)),
            ("xact_start", optional(backend.xact_start)),
            ("query_start", optional(backend.query_start)),
            ("state_change", timestamp(backend.state_change)),
            ("state", text(backend.state)),
            ("query", text(&backend.query)),
            ("backend_type", text("client backend")),
        ]);
    }
    rows.finish()
}

/// `pg_stat_database`: per database, its connections and the transactions
/// pgaccel ended since it started; block and tuple counters stay 0, as
/// nothing reads PostgreSQL blocks here.
pub fn database_statistics(
    activity: &Activity,
    session: Option<&SessionInfo>,
    started: DateTime<Utc>,
) -> Result<RecordBatch> {
    const COUNTERS: &[&str] = &[
        "xact_commit",
        "xact_rollback",
        "blks_read",
        "blks_hit",
        "tup_returned",
        "tup_fetched",
        "tup_inserted",
        "tup_updated",
        "tup_deleted",
        "conflicts",
        "temp_files",
        "temp_bytes",
        "deadlocks",
        "checksum_failures",
        "sessions",
        "sessions_abandoned",
        "sessions_fatal",
        "sessions_killed",
    ];
    const TIMES: &[&str] = &[
        "blk_read_time",
        "blk_write_time",
        "session_time",
        "active_time",
        "idle_in_transaction_time",
    ];
    let mut fields = vec![
        oid_field("datid", kind::OID, true),
        Field::new("datname", DataType::Utf8, true),
        Field::new("numbackends", DataType::Int32, true),
    ];
    fields.extend(
        COUNTERS[..COUNTERS.len() - 4]
            .iter()
            .map(|name| Field::new(*name, DataType::Int64, true)),
    );
    fields.push(timestamptz_field("checksum_last_failure"));
    fields.extend(
        TIMES
            .iter()
            .map(|name| Field::new(*name, DataType::Float64, true)),
    );
    fields.extend(
        COUNTERS[COUNTERS.len() - 4..]
            .iter()
            .map(|name| Field::new(*name, DataType::Int64, true)),
    );
    fields.push(timestamptz_field("stats_reset"));
    let mut rows = Rows::new(Arc::new(Schema::new(fields)));
    let backends = activity.snapshot();
    let transactions = activity.transactions();
    let mut databases: std::collections::BTreeSet<String> = transactions.keys().cloned().collect();
    databases.extend(backends.iter().map(|b| b.database.clone()));
    databases.extend(session.map(|s| s.identity.database.clone()));
    for database in databases {
        let ended = transactions.get(&database).copied().unwrap_or_default();
        let connected = backends.iter().filter(|b| b.database == database).count();
        let mut values = vec![
            ("datid", int(oids::database(&database))),
            ("datname", text(&database)),
            (
                "numbackends",
                int(i32::try_from(connected).unwrap_or(i32::MAX)),
            ),
            ("stats_reset", timestamp(started)),
        ];
        for counter in COUNTERS {
            let value = match *counter {
                "xact_commit" => ended.committed,
                "xact_rollback" => ended.rolled_back,
                _ => 0,
            };
            values.push((counter, ScalarValue::Int64(Some(value))));
        }
        for time in TIMES {
            values.push((time, ScalarValue::Float64(Some(0.0))));
        }
        rows.push(&values);
    }
    rows.finish()
}

pub fn ssl(activity: &Activity) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("pid", DataType::Int32, true),
        Field::new("ssl", DataType::Boolean, true),
        Field::new("version", DataType::Utf8, true),
        Field::new("cipher", DataType::Utf8, true),
        Field::new("bits", DataType::Int32, true),
        Field::new("client_dn", DataType::Utf8, true),
        Field::new("client_serial", DataType::Decimal128(38, 0), true),
        Field::new("issuer_dn", DataType::Utf8, true),
    ]));
    let mut rows = Rows::new(schema);
    for backend in activity.snapshot() {
        rows.push(&[("pid", int(backend.pid)), ("ssl", flag(false))]);
    }
    rows.finish()
}

pub fn locks() -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("locktype", DataType::Utf8, true),
        oid_field("database", kind::OID, true),
        oid_field("relation", kind::OID, true),
        Field::new("page", DataType::Int32, true),
        Field::new("tuple", DataType::Int16, true),
        Field::new("virtualxid", DataType::Utf8, true),
        Field::new("transactionid", DataType::Utf8, true),
        oid_field("classid", kind::OID, true),
        oid_field("objid", kind::OID, true),
        Field::new("objsubid", DataType::Int16, true),
        Field::new("virtualtransaction", DataType::Utf8, true),
        Field::new("pid", DataType::Int32, true),
        Field::new("mode", DataType::Utf8, true),
        Field::new("granted", DataType::Boolean, true),
        Field::new("fastpath", DataType::Boolean, true),
        timestamptz_field("waitstart"),
    ]));
    // pgaccel takes no locks: reads never wait for one another.
    Rows::new(schema).finish()
}

fn interval_field(name: &str) -> Field {
    Field::new(name, DataType::Interval(IntervalUnit::MonthDayNano), true)
}

fn offset_value(seconds: i32) -> ScalarValue {
    ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
        0,
        0,
        i64::from(seconds) * 1_000_000_000,
    )))
}

/// A zone's offset and abbreviation at `at`, and whether it is summer time
/// (the offset is above the zone's smaller offset of the year).
fn zone_at(zone: chrono_tz::Tz, at: DateTime<Utc>) -> (i32, String, bool) {
    use chrono::Offset;
    use chrono_tz::OffsetComponents;
    let offset = zone.offset_from_utc_datetime(&at.naive_utc());
    let abbreviation = chrono_tz::OffsetName::abbreviation(&offset)
        .map(str::to_owned)
        .unwrap_or_else(|| iso_offset(offset.fix().local_minus_utc()));
    let dst = !offset.dst_offset().is_zero();
    (offset.fix().local_minus_utc(), abbreviation, dst)
}

pub fn time_zone_names() -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("abbrev", DataType::Utf8, true),
        interval_field("utc_offset"),
        Field::new("is_dst", DataType::Boolean, true),
    ]));
    let mut rows = Rows::new(schema);
    let now = Utc::now();
    for zone in chrono_tz::TZ_VARIANTS {
        let (offset, abbreviation, dst) = zone_at(zone, now);
        rows.push(&[
            ("name", text(zone.name())),
            ("abbrev", text(abbreviation)),
            ("utc_offset", offset_value(offset)),
            ("is_dst", flag(dst)),
        ]);
    }
    rows.finish()
}

pub fn time_zone_abbreviations() -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("abbrev", DataType::Utf8, true),
        interval_field("utc_offset"),
        Field::new("is_dst", DataType::Boolean, true),
    ]));
    let year = Utc::now().year();
    let moments = [1, 7].map(|month| {
        Utc.from_utc_datetime(
            &NaiveDate::from_ymd_opt(year, month, 1)
                .and_then(|d| d.and_hms_opt(12, 0, 0))
                .expect("a valid date"),
        )
    });
    let mut seen = std::collections::BTreeMap::new();
    for zone in chrono_tz::TZ_VARIANTS {
        for at in moments {
            let (offset, abbreviation, dst) = zone_at(zone, at);
            // Numeric "abbreviations" (+03) are offsets, not names.
            if abbreviation.starts_with(['+', '-']) {
                continue;
            }
            seen.entry(abbreviation).or_insert((offset, dst));
        }
    }
    let mut rows = Rows::new(schema);
    for (abbreviation, (offset, dst)) in seen {
        rows.push(&[
            ("abbrev", text(abbreviation)),
            ("utc_offset", offset_value(offset)),
            ("is_dst", flag(dst)),
        ]);
    }
    rows.finish()
}

pub fn cursors(session: Option<&SessionInfo>) -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("statement", DataType::Utf8, true),
        Field::new("is_holdable", DataType::Boolean, true),
        Field::new("is_binary", DataType::Boolean, true),
        Field::new("is_scrollable", DataType::Boolean, true),
        timestamptz_field("creation_time"),
    ]));
    let mut rows = Rows::new(schema);
    if let Some(session) = session {
        let cursors = session
            .cursors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for cursor in cursors {
            rows.push(&[
                ("name", text(cursor.name)),
                ("statement", text(cursor.statement)),
                ("is_holdable", flag(cursor.holdable)),
                ("is_binary", flag(cursor.binary)),
                ("is_scrollable", flag(cursor.scrollable)),
                ("creation_time", timestamp(cursor.created)),
            ]);
        }
    }
    rows.finish()
}

/// `pg_prepared_statements`: the statements are the wire layer's; pgaccel
/// lists none here.
pub fn prepared_statements() -> Result<RecordBatch> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, true),
        Field::new("statement", DataType::Utf8, true),
        timestamptz_field("prepare_time"),
        ArrayColumn::TextArray("_regtype").field("parameter_types"),
        ArrayColumn::TextArray("_regtype").field("result_types"),
        Field::new("from_sql", DataType::Boolean, true),
        Field::new("generic_plans", DataType::Int64, true),
        Field::new("custom_plans", DataType::Int64, true),
    ]));
    Rows::new(schema).finish()
}

fn concat(first: &RecordBatch, second: RecordBatch) -> Result<RecordBatch> {
    Ok(datafusion::arrow::compute::concat_batches(
        &first.schema(),
        [first, &second],
    )?)
}
