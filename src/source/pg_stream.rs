//! `refresh_mode: changes` on a PostgreSQL table: the table's changes as
//! PostgreSQL's logical decoding streams them (the `pgoutput` plugin, over
//! a replication connection), turned into rows of the acceleration's
//! columns, one source transaction at a time, in commit order.
//!
//! The replication protocol is spoken by the `pgwire-replication` crate
//! (tokio-postgres has no replication mode); it hands over the `pgoutput`
//! messages, which [`super::pgoutput`] decodes. pgaccel owns:
//! - the checks that say what to change on the source when streaming
//!   cannot work (`wal_level`, the role's `REPLICATION` attribute, a table
//!   whose updates would not say which row they change);
//! - the publication and the slot, named by `params.pg_publication` and
//!   `params.pg_replication_slot` (by default `pgaccel_<dataset>`);
//! - the consistent start: the slot is created with an exported snapshot,
//!   and the initial copy reads the table in that very snapshot, so every
//!   change committed after it streams and none before it does.

use std::collections::HashMap;
use std::str::FromStr;

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, SchemaRef, TimeUnit};
use datafusion::common::ScalarValue;
use pgwire_replication::{ReplicationClient, ReplicationConfig, ReplicationEvent};
use tracing::{info, warn};

pub use super::change::{Row, RowChange};
use super::pgoutput::{self, Datum, Lsn, Message, Old, Relation, Tuple};
use super::postgres::{postgres_pool, quote_ident};
use super::{PostgresSource, SourceError};

/// A transaction of the PostgreSQL stream, ending at its commit's LSN.
pub type SourceTransaction = super::change::SourceTransaction<Lsn>;
/// What [`ChangeStream::next`] found.
pub type StreamEvent = super::change::StreamEvent<Lsn>;
use crate::config::{PostgresParams, SslMode};

/// The slot and the publication of a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    pub slot: String,
    pub publication: String,
}

impl Names {
    /// The configured names, or `pgaccel_<dataset>` (lower-cased, other
    /// characters than letters and digits as `_`, at most 63 bytes).
    pub fn of(dataset: &str, params: &PostgresParams) -> Names {
        let derived: String = format!("pgaccel_{dataset}")
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '_' => c,
                'A'..='Z' => c.to_ascii_lowercase(),
                _ => '_',
            })
            .take(63)
            .collect();
        Names {
            slot: params
                .replication_slot
                .clone()
                .unwrap_or_else(|| derived.clone()),
            publication: params.publication.clone().unwrap_or(derived),
        }
    }
}

/// What the checks found about the source.
#[derive(Debug)]
pub struct Prepared {
    /// The slot as it exists on the source; `None` when it does not.
    pub slot: Option<SlotState>,
    schema: String,
    table: String,
    /// Each column's type OID, to tell a type change in the stream.
    column_types: HashMap<String, u32>,
}

#[derive(Debug, Clone)]
pub struct SlotState {
    pub active_pid: Option<i32>,
    pub confirmed_flush: Option<Lsn>,
}

/// A connection of its own to the source, for the checks and the slot's
/// upkeep.
async fn connect(
    dataset: &str,
    params: &PostgresParams,
) -> Result<datafusion_table_providers::postgres::conn::PostgresConnection, SourceError> {
    let pool = postgres_pool(params)
        .await
        .map_err(|e| SourceError::connect_failed(dataset, &*e))?;
    pool.connect_direct()
        .await
        .map_err(|e| SourceError::connect_failed(dataset, &e))
}

/// A query of the checks or the slot's upkeep that failed.
fn query_failed(dataset: &str, error: &tokio_postgres::Error) -> SourceError {
    SourceError::Query {
        dataset: dataset.to_owned(),
        message: super::with_causes(error),
    }
}

fn rejected(dataset: &str, message: String) -> SourceError {
    SourceError::Unsupported {
        dataset: dataset.to_owned(),
        message,
    }
}

/// Checks that the table's changes can stream and creates the publication
/// when it is missing. Each refusal says what to change on the source.
pub async fn prepare(
    dataset: &str,
    params: &PostgresParams,
    schema: &str,
    table: &str,
    names: &Names,
) -> Result<Prepared, SourceError> {
    if matches!(
        params.sslmode,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
    ) {
        return Err(rejected(
            dataset,
            format!(
                "refresh_mode: changes streams over a connection without TLS in this version, and params.pg_sslmode is {}: use pg_sslmode: disable or prefer on a trusted network, or refresh_mode: full",
                params.sslmode.as_str()
            ),
        ));
    }
    let connection = connect(dataset, params).await?;
    let client = &connection.conn;
    let failed = |e: tokio_postgres::Error| query_failed(dataset, &e);
    let wal_level: String = client
        .query_one("SELECT current_setting('wal_level')", &[])
        .await
        .map_err(failed)?
        .get(0);
    if wal_level != "logical" {
        return Err(rejected(
            dataset,
            format!(
                "refresh_mode: changes reads the source's logical decoding, but its wal_level is '{wal_level}': run ALTER SYSTEM SET wal_level = logical on the source and restart it"
            ),
        ));
    }
    let role = client
        .query_one(
            "SELECT current_user::text, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await
        .map_err(failed)?;
    let (user, may_replicate): (String, bool) = (role.get(0), role.get(1));
    if !may_replicate {
        return Err(rejected(
            dataset,
            format!(
                "user '{user}' may not stream changes: run ALTER ROLE {} REPLICATION on the source (it also needs SELECT on the table)",
                quote_ident(&user)
            ),
        ));
    }
    let qualified = format!("{}.{}", quote_ident(schema), quote_ident(table));
    let identity = client
        .query_opt(
            "SELECT c.relreplident::text, EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) \
             FROM pg_class c WHERE c.oid = to_regclass($1)",
            &[&qualified],
        )
        .await
        .map_err(failed)?
        .ok_or_else(|| SourceError::Schema {
            dataset: dataset.to_owned(),
            message: format!("table {schema}.{table} does not exist"),
        })?;
    let (replident, has_key): (String, bool) = (identity.get(0), identity.get(1));
    match (replident.as_str(), has_key) {
        ("f" | "i", _) | ("d", true) => {}
        _ => {
            return Err(rejected(
                dataset,
                format!(
                    "table {schema}.{table} has no replica identity, so its updates and deletes do not say which row they change: add a primary key, or run ALTER TABLE {qualified} REPLICA IDENTITY FULL"
                ),
            ));
        }
    }
    let publication = client
        .query_opt(
            "SELECT pubinsert AND pubupdate AND pubdelete AND pubtruncate, \
             EXISTS (SELECT 1 FROM pg_publication_tables t WHERE t.pubname = p.pubname AND t.schemaname = $2 AND t.tablename = $3) \
             FROM pg_publication p WHERE p.pubname = $1",
            &[&names.publication, &schema, &table],
        )
        .await
        .map_err(failed)?;
    match publication {
        None => {
            let create = format!(
                "CREATE PUBLICATION {} FOR TABLE {qualified}",
                quote_ident(&names.publication)
            );
            client.batch_execute(&create).await.map_err(|e| {
                rejected(
                    dataset,
                    format!(
                        "cannot create publication '{}' ({}): run `{create}` on the source as the table's owner, or name an existing publication in params.pg_publication",
                        names.publication,
                        super::with_causes(&e)
                    ),
                )
            })?;
            info!(dataset, publication = %names.publication, "created the publication the table's changes stream through");
        }
        Some(row) => {
            let (every_operation, has_table): (bool, bool) = (row.get(0), row.get(1));
            if !has_table {
                return Err(rejected(
                    dataset,
                    format!(
                        "publication '{}' does not publish {schema}.{table}: run ALTER PUBLICATION {} ADD TABLE {qualified} on the source",
                        names.publication,
                        quote_ident(&names.publication)
                    ),
                ));
            }
            if !every_operation {
                return Err(rejected(
                    dataset,
                    format!(
                        "publication '{}' does not publish every kind of change: run ALTER PUBLICATION {} SET (publish = 'insert, update, delete, truncate') on the source",
                        names.publication,
                        quote_ident(&names.publication)
                    ),
                ));
            }
        }
    }
    let column_types = client
        .query(
            "SELECT attname::text, atttypid::int8 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped",
            &[&qualified],
        )
        .await
        .map_err(failed)?
        .iter()
        .map(|row| (row.get::<_, String>(0), row.get::<_, i64>(1) as u32))
        .collect();
    let slot = slot_when_free(client, &names.slot).await.map_err(failed)?;
    Ok(Prepared {
        slot,
        schema: schema.to_owned(),
        table: table.to_owned(),
        column_types,
    })
}

async fn slot_state(
    client: &tokio_postgres::Client,
    slot: &str,
) -> Result<Option<SlotState>, tokio_postgres::Error> {
    let row = client
        .query_opt(
            "SELECT active_pid, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1",
            &[&slot],
        )
        .await?;
    Ok(row.map(|row| SlotState {
        active_pid: row.get(0),
        confirmed_flush: row
            .get::<_, Option<String>>(1)
            .and_then(|lsn| Lsn::from_str(&lsn).ok()),
    }))
}

/// How long a slot still streaming to a connection that is going away
/// (this process's previous stream, a restart's predecessor) is waited for.
const SLOT_RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The slot's state, once no connection streams from it (or after
/// [`SLOT_RELEASE_WAIT`], with the connection that still does).
async fn slot_when_free(
    client: &tokio_postgres::Client,
    slot: &str,
) -> Result<Option<SlotState>, tokio_postgres::Error> {
    let deadline = tokio::time::Instant::now() + SLOT_RELEASE_WAIT;
    loop {
        let state = slot_state(client, slot).await?;
        let busy = state.as_ref().is_some_and(|s| s.active_pid.is_some());
        if !busy || tokio::time::Instant::now() >= deadline {
            return Ok(state);
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Drops the slot `names.slot` if it exists (the stream starts over from a
/// new copy). A slot another process streams from is not taken away.
pub async fn drop_slot(
    dataset: &str,
    params: &PostgresParams,
    slot: &str,
) -> Result<(), SourceError> {
    let connection = connect(dataset, params).await?;
    let client = &connection.conn;
    let state = slot_when_free(client, slot)
        .await
        .map_err(|e| query_failed(dataset, &e))?;
    match state {
        None => Ok(()),
        Some(SlotState {
            active_pid: Some(pid),
            ..
        }) => Err(rejected(
            dataset,
            format!(
                "replication slot '{slot}' is in use by another process (pid {pid}): give this dataset a slot of its own in params.pg_replication_slot"
            ),
        )),
        Some(_) => client
            .execute("SELECT pg_drop_replication_slot($1)", &[&slot])
            .await
            .map(|_| ())
            .map_err(|e| query_failed(dataset, &e)),
    }
}

/// Whether the slot exists on the source.
pub async fn slot_exists(
    dataset: &str,
    params: &PostgresParams,
    slot: &str,
) -> Result<bool, SourceError> {
    let connection = connect(dataset, params).await?;
    slot_state(&connection.conn, slot)
        .await
        .map(|state| state.is_some())
        .map_err(|e| query_failed(dataset, &e))
}

/// The replication connection's settings, from the dataset's parameters.
fn replication_config(
    dataset: &str,
    params: &PostgresParams,
    names: &Names,
) -> Result<ReplicationConfig, SourceError> {
    let mut config = ReplicationConfig::default();
    config.slot = names.slot.clone();
    config.publication = names.publication.as_str().into();
    config.application_name = Some(format!("pgaccel {dataset}"));
    match &params.connection_string {
        Some(text) => {
            let parsed = tokio_postgres::Config::from_str(text.expose())
                .map_err(|e| rejected(dataset, format!("params.pg_connection_string: {e}")))?;
            if let Some(tokio_postgres::config::Host::Tcp(host)) = parsed.get_hosts().first() {
                config.host = host.clone();
            }
            if let Some(port) = parsed.get_ports().first() {
                config.port = *port;
            }
            config.user = parsed.get_user().unwrap_or_default().to_owned();
            config.database = parsed.get_dbname().unwrap_or(&config.user).to_owned();
            config.password = parsed
                .get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default();
            if matches!(
                parsed.get_ssl_mode(),
                tokio_postgres::config::SslMode::Require
            ) {
                return Err(rejected(
                    dataset,
                    "refresh_mode: changes streams over a connection without TLS in this version, and params.pg_connection_string asks for sslmode=require or stricter: use sslmode=disable or prefer on a trusted network, or refresh_mode: full".to_owned(),
                ));
            }
        }
        None => {
            config.host = params.host.clone();
            config.port = params.port;
            config.user = params.user.clone();
            config.database = params.db.clone();
            config.password = params
                .pass
                .as_ref()
                .map(|p| p.expose().to_owned())
                .unwrap_or_default();
        }
    }
    Ok(config)
}

fn stream_failed(dataset: &str, error: pgwire_replication::PgWireError) -> SourceError {
    use pgwire_replication::PgWireError;
    let message = error.to_string();
    match error {
        PgWireError::Auth(_) | PgWireError::Tls(_) => SourceError::Rejected {
            dataset: dataset.to_owned(),
            message,
        },
        PgWireError::Io(_) | PgWireError::Task(_) => SourceError::Connect {
            dataset: dataset.to_owned(),
            message,
        },
        _ => SourceError::Read {
            dataset: dataset.to_owned(),
            message: format!("the change stream failed: {message}"),
        },
    }
}

/// A new slot, created with an exported snapshot, and the connection that
/// created it (which must stay idle until the copy imported the snapshot).
pub struct NewSlot {
    client: ReplicationClient,
    pub consistent_point: Lsn,
    pub snapshot: String,
}

/// Creates the slot `names.slot` (dropping one left by an earlier run) and
/// exports the snapshot it starts at.
pub async fn create_slot(
    dataset: &str,
    params: &PostgresParams,
    names: &Names,
) -> Result<NewSlot, SourceError> {
    drop_slot(dataset, params, &names.slot).await?;
    let slot = exporting_slot(dataset, params, names, "").await?;
    info!(dataset, slot = %names.slot, consistent_point = %slot.consistent_point, "created the replication slot");
    super::slots::record(dataset, params, &names.slot).await;
    Ok(slot)
}

/// A temporary slot, made only for the snapshot it exports: the table is
/// copied again in it while the dataset's own slot keeps streaming, and
/// the changes the stream applies after its consistent point are replayed
/// on the copy. The slot goes when its connection closes
/// ([`NewSlot::close`]).
pub async fn create_copy_slot(
    dataset: &str,
    params: &PostgresParams,
    names: &Names,
) -> Result<NewSlot, SourceError> {
    let copy = Names {
        slot: format!("{}_copy", &names.slot[..names.slot.len().min(58)]),
        publication: names.publication.clone(),
    };
    exporting_slot(dataset, params, &copy, "TEMPORARY ").await
}

/// Creates the slot `names.slot` (`kind`: empty, or `TEMPORARY `) on a new
/// replication connection that stays open, and waits, with the snapshot
/// the slot exported.
async fn exporting_slot(
    dataset: &str,
    params: &PostgresParams,
    names: &Names,
    kind: &str,
) -> Result<NewSlot, SourceError> {
    let config = replication_config(dataset, params, names)?;
    let mut client = ReplicationClient::connect_gated(config)
        .await
        .map_err(|e| stream_failed(dataset, e))?;
    let rows = client
        .simple_query(&format!(
            "CREATE_REPLICATION_SLOT {} {kind}LOGICAL pgoutput EXPORT_SNAPSHOT",
            quote_ident(&names.slot)
        ))
        .await
        .map_err(|e| stream_failed(dataset, e))?;
    let field = |index: usize| {
        rows.first()
            .and_then(|row| row.get(index).cloned().flatten())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .ok_or_else(|| SourceError::Read {
                dataset: dataset.to_owned(),
                message: "CREATE_REPLICATION_SLOT returned no slot".to_owned(),
            })
    };
    let consistent_point = Lsn::from_str(&field(1)?).map_err(|message| SourceError::Read {
        dataset: dataset.to_owned(),
        message,
    })?;
    Ok(NewSlot {
        client,
        consistent_point,
        snapshot: field(2)?,
    })
}

impl NewSlot {
    /// Ends the slot's connection (a temporary slot goes with it): the
    /// session, still waiting to start, ends once its client is dropped.
    pub fn close(self) {
        drop(self.client);
    }

    /// Starts streaming the changes committed after the snapshot; call once
    /// the copy has imported it.
    pub async fn start(
        mut self,
        dataset: &str,
        target: SchemaRef,
        prepared: &Prepared,
        all_columns: bool,
    ) -> Result<ChangeStream, SourceError> {
        self.client
            .start()
            .await
            .map_err(|e| stream_failed(dataset, e))?;
        Ok(ChangeStream::new(
            dataset,
            self.client,
            target,
            prepared,
            all_columns,
            self.consistent_point,
        ))
    }
}

/// Resumes streaming from the slot after `from`.
pub async fn resume(
    dataset: &str,
    params: &PostgresParams,
    names: &Names,
    from: Lsn,
    target: SchemaRef,
    prepared: &Prepared,
    all_columns: bool,
) -> Result<ChangeStream, SourceError> {
    let mut config = replication_config(dataset, params, names)?;
    config.start_lsn = pgwire_replication::Lsn(from.0);
    let client = ReplicationClient::connect(config)
        .await
        .map_err(|e| stream_failed(dataset, e))?;
    info!(dataset, slot = %names.slot, %from, "resuming the change stream");
    Ok(ChangeStream::new(
        dataset,
        client,
        target,
        prepared,
        all_columns,
        from,
    ))
}

/// Reads the copy of a table in the snapshot a new slot exported.
pub async fn copy_source(
    dataset: &str,
    params: &PostgresParams,
    schema: &str,
    table: &str,
    slot: &NewSlot,
) -> Result<PostgresSource, SourceError> {
    PostgresSource::connect_at_snapshot(dataset.to_owned(), params, schema, table, &slot.snapshot)
        .await
}

/// What a relation of the stream is to the dataset.
#[derive(Debug)]
enum Relevance {
    /// The dataset's table: for each acceleration column, its position in
    /// the relation's tuples.
    Ours(Vec<usize>),
    /// The dataset's table, whose columns changed as this says.
    Changed(String),
    /// Another table of the publication.
    Other,
}

/// A table's change stream.
pub struct ChangeStream {
    dataset: String,
    client: ReplicationClient,
    target: SchemaRef,
    /// The table's columns when the stream started, with their types.
    column_types: HashMap<String, u32>,
    schema: String,
    table: String,
    /// Whether the acceleration holds every column of the table (no
    /// column list in `refresh_sql`): a column added at the source is then
    /// a change of the schema.
    all_columns: bool,
    relations: HashMap<u32, Relevance>,
    /// The transaction being received.
    current: Option<SourceTransaction>,
    /// Transactions ending at or before it were applied already.
    applied: Lsn,
}

impl ChangeStream {
    fn new(
        dataset: &str,
        client: ReplicationClient,
        target: SchemaRef,
        prepared: &Prepared,
        all_columns: bool,
        applied: Lsn,
    ) -> ChangeStream {
        ChangeStream {
            dataset: dataset.to_owned(),
            client,
            target,
            column_types: prepared.column_types.clone(),
            schema: prepared.schema.clone(),
            table: prepared.table.clone(),
            all_columns,
            relations: HashMap::new(),
            current: None,
            applied,
        }
    }

    /// Tells the source that everything up to `lsn` is applied durably: the
    /// slot may release the WAL before it (sent with the next status
    /// update).
    pub fn confirm(&mut self, lsn: Lsn) {
        self.applied = self.applied.max(lsn);
        self.client
            .update_applied_lsn(pgwire_replication::Lsn(self.applied.0));
    }

    /// The next committed transaction, or the source's position while it
    /// has none in flight. Cancel-safe: a transaction partly received is
    /// kept for the next call.
    pub async fn next(&mut self) -> Result<StreamEvent, SourceError> {
        loop {
            let event = self
                .client
                .recv()
                .await
                .map_err(|e| stream_failed(&self.dataset, e))?
                .ok_or_else(|| SourceError::Connect {
                    dataset: self.dataset.clone(),
                    message: "the source ended the change stream".to_owned(),
                })?;
            match event {
                ReplicationEvent::Begin {
                    commit_time_micros, ..
                } => {
                    self.current = Some(SourceTransaction {
                        end: Lsn(0),
                        commit_unix_micros: commit_time_micros + POSTGRES_EPOCH_MICROS,
                        changes: Vec::new(),
                    });
                }
                ReplicationEvent::Commit { end_lsn, .. } => {
                    let Some(mut transaction) = self.current.take() else {
                        continue;
                    };
                    transaction.end = Lsn(end_lsn.0);
                    // Already applied before a restart: not again.
                    if transaction.end <= self.applied {
                        continue;
                    }
                    return Ok(StreamEvent::Transaction(transaction));
                }
                ReplicationEvent::XLogData { data, .. } => {
                    let message = pgoutput::decode(&data).map_err(|e| SourceError::Read {
                        dataset: self.dataset.clone(),
                        message: e.to_string(),
                    })?;
                    self.take(message)?;
                }
                ReplicationEvent::KeepAlive { wal_end, .. } if self.current.is_none() => {
                    return Ok(StreamEvent::Idle(Lsn(wal_end.0)));
                }
                _ => {}
            }
        }
    }

    /// Adds one decoded message to the transaction in flight.
    fn take(&mut self, message: Message) -> Result<(), SourceError> {
        let change = match message {
            Message::Relation(relation) => {
                let relevance = if relation.namespace == self.schema && relation.name == self.table
                {
                    match self.map(&relation) {
                        Ok(positions) => Relevance::Ours(positions),
                        Err(change) => Relevance::Changed(change),
                    }
                } else {
                    Relevance::Other
                };
                self.relations.insert(relation.oid, relevance);
                return Ok(());
            }
            Message::Insert { relation, .. }
            | Message::Update { relation, .. }
            | Message::Delete { relation, .. }
                if matches!(self.relations.get(&relation), Some(Relevance::Other)) =>
            {
                return Ok(());
            }
            Message::Insert { relation, new } => RowChange::Insert(self.row(relation, &new)?),
            Message::Update { relation, old, new } => RowChange::Update {
                old: old
                    .as_ref()
                    .map(|old| self.row(relation, old.tuple()))
                    .transpose()?,
                new: self.row(relation, &new)?,
            },
            Message::Delete { relation, old } => {
                let old = match &old {
                    Old::Key(tuple) | Old::Full(tuple) => tuple,
                };
                RowChange::Delete(self.row(relation, old)?)
            }
            Message::Truncate { relations, .. } => {
                let ours = |oid: &u32| {
                    matches!(
                        self.relations.get(oid),
                        Some(Relevance::Ours(_) | Relevance::Changed(_))
                    )
                };
                if !relations.iter().any(ours) {
                    return Ok(());
                }
                RowChange::Truncate
            }
            _ => return Ok(()),
        };
        if let Some(transaction) = &mut self.current {
            transaction.changes.push(change);
        }
        Ok(())
    }

    /// How the relation's columns map to the acceleration's; an error
    /// naming the column when the table's columns changed.
    fn map(&self, relation: &Relation) -> Result<Vec<usize>, String> {
        let mut positions = Vec::with_capacity(self.target.fields().len());
        for field in self.target.fields() {
            let Some(at) = relation
                .columns
                .iter()
                .position(|column| column.name == *field.name())
            else {
                return Err(format!(
                    "column \"{}\" was dropped or renamed",
                    field.name()
                ));
            };
            let column = &relation.columns[at];
            if let Some(&was) = self.column_types.get(&column.name)
                && was != column.type_oid
            {
                return Err(format!("column \"{}\" changed its type", column.name));
            }
            positions.push(at);
        }
        if self.all_columns
            && let Some(added) = relation
                .columns
                .iter()
                .find(|column| self.target.field_with_name(&column.name).is_err())
        {
            return Err(format!("column \"{}\" was added", added.name));
        }
        Ok(positions)
    }

    fn row(&self, relation: u32, tuple: &Tuple) -> Result<Row, SourceError> {
        let schema_error = |message: String| SourceError::Schema {
            dataset: self.dataset.clone(),
            message: format!(
                "the source table's columns changed while its changes streamed: {message}. The dataset keeps serving its last state; a refresh (POST /v1/datasets/{}/acceleration/refresh) copies the table again",
                self.dataset
            ),
        };
        let positions = match self.relations.get(&relation) {
            Some(Relevance::Ours(positions)) => positions,
            Some(Relevance::Changed(change)) => return Err(schema_error(change.clone())),
            Some(Relevance::Other) | None => {
                return Err(SourceError::Read {
                    dataset: self.dataset.clone(),
                    message: format!("a change of relation {relation} came before its definition"),
                });
            }
        };
        let mut values = Vec::with_capacity(positions.len());
        for (field, &at) in self.target.fields().iter().zip(positions) {
            let value = match tuple.0.get(at) {
                None | Some(Datum::Null) => Some(
                    ScalarValue::try_from(field.data_type())
                        .map_err(|e| schema_error(e.to_string()))?,
                ),
                Some(Datum::Unchanged) => None,
                Some(Datum::Text(bytes)) => {
                    let text = std::str::from_utf8(bytes).map_err(|_| SourceError::Read {
                        dataset: self.dataset.clone(),
                        message: format!("column \"{}\" sent text that is not UTF-8", field.name()),
                    })?;
                    Some(parse_text(text, field).map_err(|message| SourceError::Read {
                        dataset: self.dataset.clone(),
                        message: format!(
                            "column \"{}\": cannot read the value '{text}' the change stream sent: {message}",
                            field.name()
                        ),
                    })?)
                }
                Some(Datum::Binary(_)) => {
                    return Err(SourceError::Read {
                        dataset: self.dataset.clone(),
                        message: "the change stream sent a binary value; pgaccel asks for text"
                            .to_owned(),
                    });
                }
            };
            values.push(value);
        }
        Ok(Row(values))
    }
}

impl ChangeStream {
    /// Ends the stream and waits until its connection is closed, so the
    /// slot is free for the next one.
    pub async fn close(mut self) {
        let _ = self.client.shutdown().await;
    }
}

impl Drop for ChangeStream {
    fn drop(&mut self) {
        self.client.stop();
    }
}

/// 2000-01-01 (PostgreSQL's epoch) in microseconds since 1970-01-01.
const POSTGRES_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// A value as PostgreSQL's output function prints it (the form `pgoutput`
/// sends), as a value of the acceleration column `field`: the value a
/// copy of the table would hold. A form it cannot read exactly is an
/// error naming it, never a different value.
pub fn parse_text(text: &str, field: &Field) -> Result<ScalarValue, String> {
    let data_type = field.data_type();
    let value = match data_type {
        DataType::Utf8 => ScalarValue::Utf8(Some(text.to_owned())),
        DataType::LargeUtf8 => ScalarValue::LargeUtf8(Some(text.to_owned())),
        DataType::Utf8View => ScalarValue::Utf8View(Some(text.to_owned())),
        DataType::Boolean => match text {
            "t" => ScalarValue::Boolean(Some(true)),
            "f" => ScalarValue::Boolean(Some(false)),
            _ => return Err("not a boolean".to_owned()),
        },
        DataType::Binary | DataType::LargeBinary => {
            let hex = text
                .strip_prefix("\\x")
                .ok_or("not bytea's hex form (bytea_output = hex)")?;
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|at| {
                    hex.get(at..at + 2)
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                        .ok_or("not bytea's hex form")
                })
                .collect::<Result<Vec<u8>, _>>()?;
            match data_type {
                DataType::Binary => ScalarValue::Binary(Some(bytes)),
                _ => ScalarValue::LargeBinary(Some(bytes)),
            }
        }
        DataType::Float32 | DataType::Float64 => {
            let value = match text {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                _ if data_type == &DataType::Float32 => {
                    let value: f32 = text.parse().map_err(|_| "not a number")?;
                    return Ok(ScalarValue::Float32(Some(value)));
                }
                _ => text.parse().map_err(|_| "not a number")?,
            };
            match data_type {
                DataType::Float32 => ScalarValue::Float32(Some(value as f32)),
                _ => ScalarValue::Float64(Some(value)),
            }
        }
        DataType::Date32 => ScalarValue::Date32(Some(
            date(text)?.signed_duration_since(epoch()).num_days() as i32,
        )),
        DataType::Time64(TimeUnit::Microsecond) => {
            let time =
                NaiveTime::parse_from_str(text, "%H:%M:%S%.f").map_err(|_| "not a time of day")?;
            let since_midnight = time.signed_duration_since(NaiveTime::MIN);
            ScalarValue::Time64Microsecond(since_midnight.num_microseconds())
        }
        DataType::Timestamp(unit, zone) => {
            let micros = timestamp_micros(text, zone.is_some())?;
            let value = match unit {
                TimeUnit::Second => micros.div_euclid(1_000_000),
                TimeUnit::Millisecond => micros.div_euclid(1_000),
                TimeUnit::Microsecond => micros,
                TimeUnit::Nanosecond => micros
                    .checked_mul(1_000)
                    .ok_or("out of the nanosecond range")?,
            };
            let zone = zone.clone();
            match unit {
                TimeUnit::Second => ScalarValue::TimestampSecond(Some(value), zone),
                TimeUnit::Millisecond => ScalarValue::TimestampMillisecond(Some(value), zone),
                TimeUnit::Microsecond => ScalarValue::TimestampMicrosecond(Some(value), zone),
                TimeUnit::Nanosecond => ScalarValue::TimestampNanosecond(Some(value), zone),
            }
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => ScalarValue::IntervalMonthDayNano(Some(
            crate::query::interval::parse_interval(text).map_err(|e| e.to_string())?,
        )),
        DataType::List(element) | DataType::LargeList(element) => {
            let values = array_elements(text)?
                .into_iter()
                .map(|item| match item {
                    None => ScalarValue::try_from(element.data_type()).map_err(|e| e.to_string()),
                    Some(item) => parse_text(&item, element),
                })
                .collect::<Result<Vec<_>, _>>()?;
            match data_type {
                DataType::List(_) => ScalarValue::List(ScalarValue::new_list_from_iter(
                    values.into_iter(),
                    element.data_type(),
                    element.is_nullable(),
                )),
                _ => ScalarValue::LargeList(ScalarValue::new_large_list(
                    &values,
                    element.data_type(),
                )),
            }
        }
        DataType::Decimal128(..) | DataType::Decimal256(..) if text == "NaN" => {
            return Err("NaN has no decimal form".to_owned());
        }
        _ => ScalarValue::Utf8(Some(text.to_owned()))
            .cast_to(data_type)
            .map_err(|e| e.to_string())?,
    };
    if value.data_type() != *data_type {
        return value.cast_to(data_type).map_err(|e| e.to_string());
    }
    Ok(value)
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).expect("a valid date")
}

/// A date in the ISO form (`2024-02-29`, `0044-03-15 BC`).
fn date(text: &str) -> Result<NaiveDate, String> {
    let (text, before_christ) = match text.strip_suffix(" BC") {
        Some(text) => (text, true),
        None => (text, false),
    };
    if text == "infinity" || text == "-infinity" {
        return Err("infinite dates are not held".to_owned());
    }
    let parsed = NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|_| "not an ISO date (DateStyle ISO)".to_owned())?;
    if !before_christ {
        return Ok(parsed);
    }
    use chrono::Datelike;
    parsed
        .with_year(1 - parsed.year())
        .ok_or_else(|| "out of range".to_owned())
}

/// A timestamp in the ISO form, with a UTC offset (`+05:30`, `-08`) when
/// `zoned`, as microseconds since the Unix epoch (UTC for a zoned one).
fn timestamp_micros(text: &str, zoned: bool) -> Result<i64, String> {
    let (text, before_christ) = match text.strip_suffix(" BC") {
        Some(text) => (text, true),
        None => (text, false),
    };
    if text == "infinity" || text == "-infinity" {
        return Err("infinite timestamps are not held".to_owned());
    }
    let (local, offset_seconds) = if zoned {
        let time_at = text.find(' ').ok_or("not an ISO timestamp")? + 1;
        let sign_at = text[time_at..]
            .rfind(['+', '-'])
            .map(|at| at + time_at)
            .ok_or("no UTC offset")?;
        let sign = if &text[sign_at..=sign_at] == "-" {
            -1
        } else {
            1
        };
        let mut seconds = 0i64;
        for (part, scale) in text[sign_at + 1..].split(':').zip([3600, 60, 1]) {
            seconds += part.parse::<i64>().map_err(|_| "not a UTC offset")? * scale;
        }
        (&text[..sign_at], sign * seconds)
    } else {
        (text, 0)
    };
    let (day, time) = local.split_once(' ').ok_or("not an ISO timestamp")?;
    let day = date(day)?;
    let time =
        NaiveTime::parse_from_str(time, "%H:%M:%S%.f").map_err(|_| "not an ISO timestamp")?;
    let mut at = NaiveDateTime::new(day, time);
    if before_christ {
        use chrono::Datelike;
        at = at.with_year(1 - at.year()).ok_or("out of range")?;
    }
    let micros = at.and_utc().timestamp_micros();
    Ok(micros - offset_seconds * 1_000_000)
}

/// The elements of a one-dimensional array literal (`{1,NULL,"a b"}`);
/// `None` for NULL.
fn array_elements(text: &str) -> Result<Vec<Option<String>>, String> {
    let inner = text
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .ok_or("not an array literal")?;
    let mut elements = Vec::new();
    if inner.is_empty() {
        return Ok(elements);
    }
    let mut chars = inner.chars().peekable();
    loop {
        let mut item = String::new();
        let quoted = chars.peek() == Some(&'"');
        if quoted {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => item.push(chars.next().ok_or("unterminated array element")?),
                    Some('"') => break,
                    Some(c) => item.push(c),
                    None => return Err("unterminated array element".to_owned()),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' {
                    return Err("multidimensional arrays are not held".to_owned());
                }
                item.push(c);
                chars.next();
            }
        }
        elements.push(if !quoted && item.eq_ignore_ascii_case("NULL") {
            None
        } else {
            Some(item)
        });
        match chars.next() {
            Some(',') => continue,
            None => break,
            Some(c) => return Err(format!("unexpected '{c}' in the array literal")),
        }
    }
    Ok(elements)
}

/// Watches how much WAL the slot keeps on the source.
pub struct SlotMonitor {
    pool: datafusion_table_providers::sql::db_connection_pool::postgrespool::PostgresConnectionPool,
    slot: String,
}

impl SlotMonitor {
    pub async fn connect(
        dataset: &str,
        params: &PostgresParams,
        slot: &str,
    ) -> Result<SlotMonitor, SourceError> {
        let pool = postgres_pool(params)
            .await
            .map_err(|e| SourceError::connect_failed(dataset, &*e))?;
        Ok(SlotMonitor {
            pool,
            slot: slot.to_owned(),
        })
    }

    /// The bytes of WAL between the slot's restart point and the source's
    /// current position; `None` when the source cannot say now.
    pub async fn retained_bytes(&self) -> Option<i64> {
        let connection = self.pool.connect_direct().await.ok()?;
        let row = connection
            .conn
            .query_opt(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::int8 FROM pg_replication_slots WHERE slot_name = $1",
                &[&self.slot],
            )
            .await
            .ok()??;
        row.get(0)
    }
}

/// Logs a slot left behind by a dataset no longer configured to stream.
pub fn warn_slot_left(dataset: &str, slot: &str) {
    warn!(
        dataset,
        slot,
        "the replication slot '{slot}' of dataset '{dataset}', which is no longer configured to stream changes, is left on the source and keeps its WAL: drop it with SELECT pg_drop_replication_slot('{slot}'), or give a dataset params.drop_slot_on_remove: true to have its slot dropped when it is removed"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn field(data_type: DataType) -> Field {
        Field::new("c", data_type, true)
    }

    #[test]
    fn text_values_read_as_the_columns_types() {
        let cases: Vec<(DataType, &str, ScalarValue)> = vec![
            (DataType::Int32, "-42", ScalarValue::Int32(Some(-42))),
            (DataType::Boolean, "t", ScalarValue::Boolean(Some(true))),
            (
                DataType::Float64,
                "-Infinity",
                ScalarValue::Float64(Some(f64::NEG_INFINITY)),
            ),
            (
                DataType::Decimal128(12, 2),
                "-1234.50",
                ScalarValue::Decimal128(Some(-123_450), 12, 2),
            ),
            (
                DataType::Binary,
                "\\x00ff",
                ScalarValue::Binary(Some(vec![0, 255])),
            ),
            (DataType::Date32, "1970-01-02", ScalarValue::Date32(Some(1))),
            (
                DataType::Date32,
                "0001-12-31 BC",
                ScalarValue::Date32(Some(-719_163)),
            ),
            (
                DataType::Timestamp(TimeUnit::Microsecond, None),
                "1970-01-01 00:00:01.5",
                ScalarValue::TimestampMicrosecond(Some(1_500_000), None),
            ),
            (
                DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
                "1970-01-01 05:30:00+05:30",
                ScalarValue::TimestampMicrosecond(Some(0), Some(Arc::from("UTC"))),
            ),
            (
                DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
                "1969-12-31 16:00:00-08",
                ScalarValue::TimestampMicrosecond(Some(0), Some(Arc::from("UTC"))),
            ),
            (
                DataType::Time64(TimeUnit::Microsecond),
                "01:00:00.000001",
                ScalarValue::Time64Microsecond(Some(3_600_000_001)),
            ),
        ];
        for (data_type, text, expected) in cases {
            assert_eq!(
                parse_text(text, &field(data_type.clone())).unwrap(),
                expected,
                "{text} as {data_type}"
            );
        }
        let list = parse_text(
            "{1,NULL,3}",
            &field(DataType::List(Arc::new(Field::new_list_field(
                DataType::Int64,
                true,
            )))),
        )
        .unwrap();
        let expected = ScalarValue::List(ScalarValue::new_list_from_iter(
            [Some(1), None, Some(3)].into_iter().map(ScalarValue::Int64),
            &DataType::Int64,
            true,
        ));
        assert_eq!(list, expected);
        assert_eq!(
            array_elements(r#"{"a b","x\"y",NULL,"NULL"}"#).unwrap(),
            vec![
                Some("a b".to_owned()),
                Some("x\"y".to_owned()),
                None,
                Some("NULL".to_owned())
            ]
        );
    }

    #[test]
    fn values_without_an_exact_form_are_refused() {
        for (data_type, text) in [
            (DataType::Decimal128(10, 2), "NaN"),
            (DataType::Date32, "infinity"),
            (DataType::Boolean, "yes"),
            (DataType::Binary, "abc"),
        ] {
            assert!(
                parse_text(text, &field(data_type.clone())).is_err(),
                "{text} as {data_type}"
            );
        }
    }

    #[test]
    fn default_names_derive_from_the_dataset() {
        let params = PostgresParams {
            host: "h".into(),
            port: 5432,
            db: "d".into(),
            user: "u".into(),
            pass: None,
            sslmode: SslMode::Disable,
            sslrootcert: None,
            connection_string: None,
            replication_slot: None,
            publication: Some("mine".into()),
            drop_slot_on_remove: false,
        };
        let names = Names::of("Orders-2024", &params);
        assert_eq!(names.slot, "pgaccel_orders_2024");
        assert_eq!(names.publication, "mine");
    }
}
