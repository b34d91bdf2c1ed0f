//! The change stream `refresh_mode: changes` follows, whichever source it
//! comes from: PostgreSQL logical decoding ([`pg_stream`]) or the
//! MySQL/MariaDB row binlog ([`binlog`]). Each is checked, copied in a
//! snapshot that meets the stream exactly, resumed from a stored position,
//! and read as committed transactions of the table; [`super::changes`]
//! applies them the same way for both.

use std::fmt;

use datafusion::arrow::datatypes::SchemaRef;
use tracing::{info, warn};

use super::RefreshError;
use crate::config::{MysqlParams, PostgresParams, SourceParams, SourceRef};
use crate::source::binlog::{self, BinlogPosition, TableStream};
use crate::source::change::{SourceTransaction, StreamEvent};
use crate::source::pg_stream::{self, ChangeStream, Names, NewSlot, SlotMonitor};
use crate::source::pgoutput::Lsn;
use crate::source::{MysqlSource, Source, SourceError};

/// Where a change stream stands.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Position {
    Wal(Lsn),
    Binlog(BinlogPosition),
}

impl fmt::Display for Position {
    /// The LSN (`16/B374D848`) or the binlog file and offset
    /// (`binlog.000012:4567`), as status shows it and the checkpoint keeps it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Wal(lsn) => lsn.fmt(f),
            Position::Binlog(position) => position.fmt(f),
        }
    }
}

/// The source of a dataset's changes.
#[derive(Clone)]
pub enum Feed {
    Postgres {
        params: PostgresParams,
        schema: String,
        table: String,
        names: Names,
    },
    Mysql {
        params: MysqlParams,
        database: Option<String>,
        table: String,
        server_id: u32,
    },
}

/// What the checks of the source found.
pub enum Checked {
    Postgres(pg_stream::Prepared),
    Mysql(binlog::Prepared),
}

/// A copy's consistent start: what must live until the stream starts
/// after it.
pub enum Start {
    /// The new slot, whose snapshot the copy reads.
    Postgres(NewSlot),
    /// The binlog position the copy's snapshot ends at.
    Mysql(BinlogPosition),
}

impl Start {
    pub fn position(&self) -> Position {
        match self {
            Start::Postgres(slot) => Position::Wal(slot.consistent_point),
            Start::Mysql(position) => Position::Binlog(position.clone()),
        }
    }
}

/// A running change stream.
pub enum Stream {
    Postgres(ChangeStream),
    Mysql(TableStream),
}

impl Stream {
    /// The next committed transaction of the table, or where the source
    /// stands between them. Cancel-safe.
    pub async fn next(&mut self) -> Result<StreamEvent<Position>, SourceError> {
        Ok(match self {
            Stream::Postgres(stream) => match stream.next().await? {
                StreamEvent::Transaction(t) => StreamEvent::Transaction(t.at(Position::Wal)),
                StreamEvent::Idle(at) => StreamEvent::Idle(Position::Wal(at)),
            },
            Stream::Mysql(stream) => match stream.next().await? {
                StreamEvent::Transaction(t) => StreamEvent::Transaction(t.at(Position::Binlog)),
                StreamEvent::Idle(at) => StreamEvent::Idle(Position::Binlog(at)),
            },
        })
    }

    /// Tells the source that everything up to `at` is applied durably (a
    /// PostgreSQL slot then releases the WAL before it; the binlog keeps
    /// no state for its readers).
    pub fn confirm(&mut self, at: &Position) {
        if let (Stream::Postgres(stream), Position::Wal(lsn)) = (self, at) {
            stream.confirm(*lsn);
        }
    }
}

/// A transaction of either stream.
pub type Transaction = SourceTransaction<Position>;

impl Feed {
    /// The feed of a dataset's source; `None` for a source with no change
    /// stream.
    pub fn of(dataset: &str, from: &SourceRef, params: &SourceParams) -> Option<Feed> {
        Some(match (from, params) {
            (SourceRef::Postgres { schema, table }, SourceParams::Postgres(params)) => {
                Feed::Postgres {
                    names: Names::of(dataset, params),
                    params: params.clone(),
                    schema: schema.clone().unwrap_or_else(|| "public".to_owned()),
                    table: table.clone(),
                }
            }
            (SourceRef::Mysql { database, table }, SourceParams::Mysql(params)) => Feed::Mysql {
                server_id: binlog::server_id(dataset, params.server_id),
                params: params.clone(),
                database: database.clone(),
                table: table.clone(),
            },
            _ => return None,
        })
    }

    /// The table, as messages name it.
    pub fn table_name(&self) -> String {
        match self {
            Feed::Postgres { schema, table, .. } => format!("{schema}.{table}"),
            Feed::Mysql {
                database: Some(database),
                table,
                ..
            } => format!("{database}.{table}"),
            Feed::Mysql { table, .. } => table.clone(),
        }
    }

    /// Checks that the source can stream the table's changes; each refusal
    /// says what to change on the source.
    pub async fn prepare(&self, dataset: &str) -> Result<Checked, SourceError> {
        match self {
            Feed::Postgres {
                params,
                schema,
                table,
                names,
            } => pg_stream::prepare(dataset, params, schema, table, names)
                .await
                .map(Checked::Postgres),
            Feed::Mysql {
                params,
                database,
                table,
                ..
            } => {
                let mut conn = MysqlSource::connect_one(dataset, params).await?;
                let prepared =
                    binlog::prepare(&mut conn, dataset, database.as_deref(), table).await;
                let _ = conn.disconnect().await;
                prepared.map(Checked::Mysql)
            }
        }
    }

    /// Whether the stream can resume at `from` rather than copy the table
    /// again: the slot still exists (PostgreSQL), or the binlog file still
    /// does (MySQL). A slot another process streams from is an error.
    pub async fn can_resume(
        &self,
        dataset: &str,
        checked: &Checked,
        from: &Position,
    ) -> Result<bool, RefreshError> {
        match (self, checked, from) {
            (Feed::Postgres { names, .. }, Checked::Postgres(prepared), Position::Wal(_)) => {
                let Some(slot) = &prepared.slot else {
                    return Ok(false);
                };
                if let Some(pid) = slot.active_pid {
                    return Err(RefreshError::Source(SourceError::Unsupported {
                        dataset: dataset.to_owned(),
                        message: format!(
                            "replication slot '{}' is in use by another process (pid {pid}): give this dataset a slot of its own in params.pg_replication_slot",
                            names.slot
                        ),
                    }));
                }
                Ok(true)
            }
            (Feed::Mysql { params, .. }, Checked::Mysql(_), Position::Binlog(position)) => {
                let mut conn = MysqlSource::connect_one(dataset, params).await?;
                let kept = binlog::has_file(&mut conn, dataset, &position.file).await;
                let _ = conn.disconnect().await;
                let kept = kept?;
                if !kept {
                    warn!(dataset, %position, "the source no longer keeps the binlog file the acceleration stopped at (it was purged): copying the table again");
                }
                Ok(kept)
            }
            _ => Ok(false),
        }
    }

    /// Reads a position the checkpoint kept; `None` when it is not one of
    /// this source's.
    pub fn parse(&self, text: &str) -> Option<Position> {
        match self {
            Feed::Postgres { .. } => text.parse().ok().map(Position::Wal),
            Feed::Mysql { .. } => text.parse().ok().map(Position::Binlog),
        }
    }

    /// The stream after `from`, into rows of `target`.
    pub async fn resume(
        &self,
        dataset: &str,
        from: Position,
        target: SchemaRef,
        checked: &Checked,
        all_columns: bool,
    ) -> Result<Stream, SourceError> {
        match (self, checked, from) {
            (
                Feed::Postgres { params, names, .. },
                Checked::Postgres(prepared),
                Position::Wal(from),
            ) => pg_stream::resume(dataset, params, names, from, target, prepared, all_columns)
                .await
                .map(Stream::Postgres),
            (
                Feed::Mysql {
                    params, server_id, ..
                },
                Checked::Mysql(prepared),
                Position::Binlog(from),
            ) => {
                let conn = MysqlSource::connect_one(dataset, params).await?;
                info!(dataset, %from, "resuming the binlog stream");
                TableStream::open(dataset, conn, *server_id, from, target, prepared)
                    .await
                    .map(Stream::Mysql)
            }
            (_, _, from) => Err(SourceError::Read {
                dataset: dataset.to_owned(),
                message: format!("position {from} is not one of this source's"),
            }),
        }
    }

    /// A consistent start and the source to copy the table from in it.
    /// `aside`: a copy made while the stream goes on (PostgreSQL makes a
    /// temporary slot for it, and the dataset's own slot stays).
    pub async fn start_copy(
        &self,
        dataset: &str,
        aside: bool,
    ) -> Result<(Source, Start), SourceError> {
        match self {
            Feed::Postgres {
                params,
                schema,
                table,
                names,
            } => {
                let slot = match aside {
                    true => pg_stream::create_copy_slot(dataset, params, names).await?,
                    false => pg_stream::create_slot(dataset, params, names).await?,
                };
                match pg_stream::copy_source(dataset, params, schema, table, &slot).await {
                    Ok(source) => Ok((Source::Postgres(source), Start::Postgres(slot))),
                    Err(error) => {
                        self.abandon(dataset, Start::Postgres(slot), aside).await;
                        Err(error)
                    }
                }
            }
            Feed::Mysql {
                params,
                database,
                table,
                ..
            } => {
                let (source, position) = MysqlSource::connect_at_snapshot(
                    dataset.to_owned(),
                    params,
                    database.as_deref(),
                    table,
                )
                .await?;
                Ok((Source::Mysql(source), Start::Mysql(position)))
            }
        }
    }

    /// Gives up a start whose copy failed: its slot would only keep WAL
    /// meanwhile (the next attempt makes a new one).
    pub async fn abandon(&self, dataset: &str, start: Start, aside: bool) {
        if let (Feed::Postgres { params, names, .. }, Start::Postgres(slot)) = (self, start) {
            slot.close();
            if !aside && let Err(e) = pg_stream::drop_slot(dataset, params, &names.slot).await {
                warn!(
                    dataset,
                    "cannot drop the replication slot of the failed copy: {e}"
                );
            }
        }
    }

    /// Starts streaming what was committed after the copy's start.
    pub async fn start(
        &self,
        dataset: &str,
        start: Start,
        target: SchemaRef,
        checked: &Checked,
        all_columns: bool,
    ) -> Result<Stream, SourceError> {
        match (start, checked) {
            (Start::Postgres(slot), Checked::Postgres(prepared)) => slot
                .start(dataset, target, prepared, all_columns)
                .await
                .map(Stream::Postgres),
            (start, checked) => {
                self.resume(dataset, start.position(), target, checked, all_columns)
                    .await
            }
        }
    }

    /// Measures what the source keeps for the stream (a slot's WAL).
    pub async fn monitor(&self, dataset: &str) -> Option<SlotMonitor> {
        match self {
            Feed::Postgres { params, names, .. } => {
                SlotMonitor::connect(dataset, params, &names.slot)
                    .await
                    .ok()
            }
            Feed::Mysql { .. } => None,
        }
    }
}
