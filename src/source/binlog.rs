//! The MySQL/MariaDB row binlog, read through mysql_async's binlog stream:
//! the checks that say what to change on a server whose binlog cannot be
//! streamed, the server's current position, and one table's row changes
//! grouped by committed transaction, in commit order. `refresh_mode:
//! changes` on MySQL sources applies them (see `refresh::changes`).

use std::fmt;
use std::str::FromStr;

use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::common::ScalarValue;
use futures::StreamExt;
use mysql_async::binlog::events::{EventData, RowsEventData};
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStream, BinlogStreamRequest, Conn, Value};

use super::SourceError;
use super::change::{Row, RowChange, SourceTransaction, StreamEvent};

/// The server error of a statement it does not know (`ER_PARSE_ERROR`).
const PARSE_ERROR: u16 = 1064;

/// A position in the binlog: the file and the byte offset in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BinlogPosition {
    pub file: String,
    pub offset: u64,
}

impl fmt::Display for BinlogPosition {
    /// `pgaccel-binlog.000001:4567`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.offset)
    }
}

impl FromStr for BinlogPosition {
    type Err = String;

    fn from_str(text: &str) -> Result<BinlogPosition, String> {
        let (file, offset) = text
            .rsplit_once(':')
            .ok_or_else(|| format!("'{text}' is not a binlog position (file:offset)"))?;
        let offset = offset
            .parse()
            .map_err(|_| format!("'{text}' is not a binlog position (file:offset)"))?;
        Ok(BinlogPosition {
            file: file.to_owned(),
            offset,
        })
    }
}

/// One row change, with the row's values in the table's column order.
#[derive(Debug, Clone, PartialEq)]
pub enum BinlogChange {
    Insert(Vec<Value>),
    Update {
        before: Vec<Value>,
        after: Vec<Value>,
    },
    Delete(Vec<Value>),
}

/// What [`BinlogReader::next`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum BinlogEvent {
    /// A committed transaction that changed the table.
    Transaction(BinlogTransaction),
    /// A transaction that did not change the table ended here.
    Passed(BinlogPosition),
    /// `TRUNCATE` of the table, ending here.
    Truncated {
        end: BinlogPosition,
        commit_unix_seconds: u32,
    },
    /// A statement that changes the table's definition (`ALTER`, `DROP`,
    /// `RENAME`, `CREATE`), as the binlog holds it.
    Redefined(String),
}

/// One committed transaction's changes of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct BinlogTransaction {
    /// Where the binlog continues after its commit.
    pub end: BinlogPosition,
    /// The commit time, in seconds since the Unix epoch (the binlog's
    /// resolution).
    pub commit_unix_seconds: u32,
    pub changes: Vec<BinlogChange>,
}

fn refused(dataset: &str, message: String) -> SourceError {
    SourceError::Unsupported {
        dataset: dataset.to_owned(),
        message,
    }
}

fn failed(dataset: &str, error: impl fmt::Display) -> SourceError {
    SourceError::Read {
        dataset: dataset.to_owned(),
        message: format!("the binlog: {error}"),
    }
}

/// Checks that the server writes a binlog pgaccel can apply: on, row-based,
/// with full row images, readable by this user. Each refusal says what to
/// change.
pub async fn check(conn: &mut Conn, dataset: &str) -> Result<(), SourceError> {
    let settings: Option<(i64, String, String)> = conn
        .query_first("SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image")
        .await
        .map_err(|e| failed(dataset, e))?;
    let Some((log_bin, format, image)) = settings else {
        return Err(failed(dataset, "the server did not say how it logs"));
    };
    if log_bin != 1 {
        return Err(refused(
            dataset,
            "refresh_mode: changes reads the source's binlog, which is off: start the server with log_bin (and binlog_format = ROW, server_id set)".to_owned(),
        ));
    }
    if !format.eq_ignore_ascii_case("ROW") {
        return Err(refused(
            dataset,
            format!(
                "refresh_mode: changes needs the row binlog, but binlog_format is {format}: set binlog_format = ROW on the source (SET GLOBAL binlog_format = 'ROW' and in its configuration)"
            ),
        ));
    }
    if !image.eq_ignore_ascii_case("FULL") {
        return Err(refused(
            dataset,
            format!(
                "refresh_mode: changes needs whole rows in the binlog, but binlog_row_image is {image}: set binlog_row_image = FULL on the source"
            ),
        ));
    }
    current_position(conn, dataset).await.map(|_| ())
}

/// The position the server's binlog is at now.
pub async fn current_position(
    conn: &mut Conn,
    dataset: &str,
) -> Result<BinlogPosition, SourceError> {
    let asked: Result<Option<mysql_async::Row>, _> = conn.query_first("SHOW MASTER STATUS").await;
    let status = match asked {
        // MySQL 8.4 renamed the statement.
        Err(mysql_async::Error::Server(e)) if e.code == PARSE_ERROR => {
            conn.query_first("SHOW BINARY LOG STATUS").await
        }
        other => other,
    };
    let status = status.map_err(|e| {
        refused(
            dataset,
            format!(
                "cannot read the source's binlog position ({e}): run GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO the user on the source"
            ),
        )
    })?;
    let row = status.ok_or_else(|| {
        refused(
            dataset,
            "the source has no binlog position: start it with log_bin".to_owned(),
        )
    })?;
    let file: Option<String> = row.get(0);
    let offset: Option<u64> = row.get(1);
    match (file, offset) {
        (Some(file), Some(offset)) => Ok(BinlogPosition { file, offset }),
        _ => Err(failed(dataset, "SHOW MASTER STATUS answered no position")),
    }
}

/// Whether the server still keeps binlog file `file` (it was not purged).
pub async fn has_file(conn: &mut Conn, dataset: &str, file: &str) -> Result<bool, SourceError> {
    let logs: Vec<mysql_async::Row> = conn.query("SHOW BINARY LOGS").await.map_err(|e| {
        refused(
            dataset,
            format!("cannot list the source's binlog files ({e}): run GRANT REPLICATION CLIENT ON *.* TO the user on the source"),
        )
    })?;
    Ok(logs
        .iter()
        .any(|row| row.get::<String, _>(0).as_deref() == Some(file)))
}

/// One table's committed changes from the binlog.
pub struct BinlogReader {
    dataset: String,
    stream: BinlogStream,
    database: String,
    table: String,
    /// The binlog file being read.
    file: String,
    /// The transaction being received.
    current: Option<BinlogTransaction>,
}

impl BinlogReader {
    /// Reads from `from` on `conn`, which becomes the stream's. `server_id`
    /// must differ from every other replica's of the server.
    pub async fn open(
        dataset: &str,
        conn: Conn,
        server_id: u32,
        from: &BinlogPosition,
        database: &str,
        table: &str,
    ) -> Result<BinlogReader, SourceError> {
        let mut conn = conn;
        // The server then sends a heartbeat each second while it has nothing
        // else to send, which tells where the binlog stands (and that the
        // connection is alive).
        // (MySQL 8.0.26 and later read the second name.)
        conn.query_drop(
            "SET @master_heartbeat_period = 1000000000, @source_heartbeat_period = 1000000000",
        )
        .await
        .map_err(|e| failed(dataset, e))?;
        let request = BinlogStreamRequest::new(server_id)
            .with_filename(from.file.as_bytes())
            .with_pos(from.offset);
        let stream = conn
            .get_binlog_stream(request)
            .await
            .map_err(|e| failed(dataset, e))?;
        Ok(BinlogReader {
            dataset: dataset.to_owned(),
            stream,
            database: database.to_owned(),
            table: table.to_owned(),
            file: from.file.clone(),
            current: None,
        })
    }

    /// The next committed transaction that changed the table, or where a
    /// transaction of other tables ended, or a statement of the table's own.
    /// Cancel-safe: a transaction partly received is kept for the next call.
    pub async fn next(&mut self) -> Result<BinlogEvent, SourceError> {
        loop {
            let event = self
                .stream
                .next()
                .await
                .ok_or_else(|| SourceError::Connect {
                    dataset: self.dataset.clone(),
                    message: "the source ended the binlog stream".to_owned(),
                })?
                .map_err(|e| failed(&self.dataset, e))?;
            let header = event.header();
            let data = event.read_data().map_err(|e| failed(&self.dataset, e))?;
            let here = |file: &str| BinlogPosition {
                file: file.to_owned(),
                offset: u64::from(header.log_pos()),
            };
            match data {
                Some(EventData::RotateEvent(rotate)) => {
                    let name = rotate.name();
                    // The rotate event a stream starts with (at offset 0)
                    // comes before the server says that it checksums its
                    // events, so its name may end in the 4 checksum bytes:
                    // it names the file asked for.
                    if !(header.log_pos() == 0 && name.starts_with(self.file.as_str())) {
                        self.file = name.into_owned();
                    }
                }
                Some(EventData::QueryEvent(query)) => {
                    let text = query.query();
                    if text.eq_ignore_ascii_case("BEGIN") {
                        self.current = Some(BinlogTransaction {
                            end: here(&self.file),
                            commit_unix_seconds: header.timestamp(),
                            changes: Vec::new(),
                        });
                    } else if text.eq_ignore_ascii_case("COMMIT") {
                        return Ok(self.finish(here(&self.file), header.timestamp()));
                    } else {
                        let default = query.schema();
                        match statement_of(&text, &default, &self.database, &self.table) {
                            Some(Statement::Truncate) => {
                                return Ok(BinlogEvent::Truncated {
                                    end: here(&self.file),
                                    commit_unix_seconds: header.timestamp(),
                                });
                            }
                            Some(Statement::Redefine) => {
                                return Ok(BinlogEvent::Redefined(text.into_owned()));
                            }
                            // DDL of other tables commits by itself.
                            None if self.current.is_none() => {
                                return Ok(BinlogEvent::Passed(here(&self.file)));
                            }
                            None => {}
                        }
                    }
                }
                Some(EventData::XidEvent(_)) => {
                    return Ok(self.finish(here(&self.file), header.timestamp()));
                }
                Some(EventData::HeartbeatEvent) if self.current.is_none() => {
                    return Ok(BinlogEvent::Passed(here(&self.file)));
                }
                Some(EventData::RowsEvent(rows)) => self.take(&rows)?,
                _ => {}
            }
        }
    }

    /// Ends the transaction in flight.
    fn finish(&mut self, end: BinlogPosition, seconds: u32) -> BinlogEvent {
        match self.current.take() {
            Some(mut transaction) if !transaction.changes.is_empty() => {
                transaction.end = end;
                transaction.commit_unix_seconds = seconds;
                BinlogEvent::Transaction(transaction)
            }
            _ => BinlogEvent::Passed(end),
        }
    }

    /// Adds the changes of one rows event of the table to the transaction
    /// in flight.
    fn take(&mut self, rows: &RowsEventData<'_>) -> Result<(), SourceError> {
        let Some(map) = self.stream.get_tme(rows.table_id()) else {
            return Err(failed(
                &self.dataset,
                "a rows event came before its table map",
            ));
        };
        if map.database_name() != self.database || map.table_name() != self.table {
            return Ok(());
        }
        let values = |row: Option<mysql_async::binlog::row::BinlogRow>| {
            row.map(|row| {
                row.unwrap()
                    .into_iter()
                    .map(Value::try_from)
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()
        };
        let mut changes = Vec::new();
        for row in rows.rows(map) {
            let (before, after) = row.map_err(|e| failed(&self.dataset, e))?;
            let before = values(before).map_err(|e| failed(&self.dataset, e))?;
            let after = values(after).map_err(|e| failed(&self.dataset, e))?;
            changes.push(match (before, after) {
                (None, Some(after)) => BinlogChange::Insert(after),
                (Some(before), Some(after)) => BinlogChange::Update { before, after },
                (Some(before), None) => BinlogChange::Delete(before),
                (None, None) => continue,
            });
        }
        self.current
            .get_or_insert_with(|| BinlogTransaction {
                end: BinlogPosition {
                    file: String::new(),
                    offset: 0,
                },
                commit_unix_seconds: 0,
                changes: Vec::new(),
            })
            .changes
            .extend(changes);
        Ok(())
    }

    /// Ends the stream's connection.
    pub async fn close(self) {
        let _ = self.stream.close().await;
    }
}

/// What a statement of the binlog does to the table.
#[derive(Debug, PartialEq, Eq)]
enum Statement {
    Truncate,
    Redefine,
}

/// Whether `text` (run with `default` as its current database) truncates
/// or redefines `database.table`. A statement naming the table among
/// others (`RENAME TABLE a TO t`, `DROP TABLE x, t`) counts: the stream
/// stops rather than guess.
fn statement_of(text: &str, default: &str, database: &str, table: &str) -> Option<Statement> {
    let words: Vec<String> = text
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')'))
        .filter(|word| !word.is_empty())
        .map(|word| word.replace('`', ""))
        .collect();
    let first = words.first()?.to_ascii_lowercase();
    let kind = match first.as_str() {
        "truncate" => Statement::Truncate,
        "alter" | "drop" | "rename" | "create" => Statement::Redefine,
        _ => return None,
    };
    let names_table = words.iter().skip(1).any(|word| match word.split_once('.') {
        Some((db, name)) => db == database && name == table,
        None => default == database && word == table,
    });
    names_table.then_some(kind)
}

/// A column of the source table, in the binlog's order of values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlColumn {
    pub name: String,
    /// `DATA_TYPE`, lower case (`int`, `varchar`, `enum`).
    pub data_type: String,
    /// `COLUMN_TYPE` (`int(10) unsigned`, `enum('a','b')`).
    pub column_type: String,
}

/// What [`prepare`] found about the source table.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub database: String,
    pub table: String,
    /// In the table's column order, which is the order of a row's values.
    pub columns: Vec<MysqlColumn>,
}

/// Checks the server's binlog ([`check`]) and reads the table's columns.
pub async fn prepare(
    conn: &mut Conn,
    dataset: &str,
    database: Option<&str>,
    table: &str,
) -> Result<Prepared, SourceError> {
    check(conn, dataset).await?;
    let database = match database {
        Some(database) => Some(database.to_owned()),
        None => conn
            .query_first::<Option<String>, _>("SELECT DATABASE()")
            .await
            .map_err(|e| failed(dataset, e))?
            .flatten(),
    };
    let database = database.ok_or_else(|| {
        refused(
            dataset,
            format!("the source table '{table}' names no database and the connection has none: write from: mysql:<database>.{table}, or set params.mysql_db"),
        )
    })?;
    let rows: Vec<(String, String, String)> = conn
        .exec(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
            (&database, table),
        )
        .await
        .map_err(|e| failed(dataset, e))?;
    if rows.is_empty() {
        return Err(SourceError::Schema {
            dataset: dataset.to_owned(),
            message: format!("table {database}.{table} does not exist"),
        });
    }
    let columns = rows
        .into_iter()
        .map(|(name, data_type, column_type)| MysqlColumn {
            name,
            data_type: data_type.to_ascii_lowercase(),
            column_type: column_type.to_ascii_lowercase(),
        })
        .collect();
    Ok(Prepared {
        database,
        table: table.to_owned(),
        columns,
    })
}

/// Starts a consistent-snapshot transaction on `conn` and returns the
/// binlog position it sees the database at: every transaction committed
/// before it is in the snapshot, every later one in the binlog after it.
/// MariaDB tells that position for the transaction itself
/// (`binlog_snapshot_file`); MySQL does not, so the tables are locked for
/// writes for as long as it takes to start the transaction and read the
/// position (as `mysqldump --single-transaction --source-data` does; it
/// needs the RELOAD privilege).
pub async fn start_snapshot(conn: &mut Conn, dataset: &str) -> Result<BinlogPosition, SourceError> {
    let version: Option<String> = conn
        .query_first("SELECT VERSION()")
        .await
        .map_err(|e| failed(dataset, e))?;
    let mariadb = version.is_some_and(|v| v.to_ascii_lowercase().contains("mariadb"));
    let begin = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY";
    conn.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .await
        .map_err(|e| failed(dataset, e))?;
    if mariadb {
        conn.query_drop(begin)
            .await
            .map_err(|e| failed(dataset, e))?;
        let status: Vec<(String, String)> = conn
            .query("SHOW STATUS LIKE 'binlog_snapshot_%'")
            .await
            .map_err(|e| failed(dataset, e))?;
        let get = |name: &str| {
            status
                .iter()
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.clone())
        };
        return match (get("binlog_snapshot_file"), get("binlog_snapshot_position")) {
            (Some(file), Some(offset)) if !file.is_empty() => Ok(BinlogPosition {
                file,
                offset: offset.parse().map_err(|e| failed(dataset, e))?,
            }),
            _ => Err(failed(
                dataset,
                "the server did not say where its binlog stands for the snapshot",
            )),
        };
    }
    conn.query_drop("FLUSH TABLES WITH READ LOCK").await.map_err(|e| {
        refused(
            dataset,
            format!("cannot take the consistent start of the copy ({e}): run GRANT RELOAD ON *.* TO the user on the source"),
        )
    })?;
    let started = async {
        conn.query_drop(begin)
            .await
            .map_err(|e| failed(dataset, e))?;
        current_position(conn, dataset).await
    }
    .await;
    let unlocked = conn
        .query_drop("UNLOCK TABLES")
        .await
        .map_err(|e| failed(dataset, e));
    let position = started?;
    unlocked?;
    Ok(position)
}

/// The server id a dataset reads the binlog as: `params.mysql_server_id`,
/// or one derived from the dataset name, in a range replicas seldom use.
pub fn server_id(dataset: &str, configured: Option<u32>) -> u32 {
    configured.unwrap_or_else(|| {
        // FNV-1a: stable across runs and builds, unlike std's hasher.
        let hash = dataset.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
            (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
        });
        0x4000_0000 | (hash & 0x3fff_ffff)
    })
}

/// The table's changes in the acceleration's columns and types.
pub struct TableStream {
    dataset: String,
    reader: BinlogReader,
    target: SchemaRef,
    /// For each acceleration column, its position in a row's values and
    /// the source column.
    columns: Vec<(usize, MysqlColumn)>,
    /// How many values a row of the table has.
    width: usize,
    /// Transactions ending at or before it were applied already.
    applied: BinlogPosition,
}

impl TableStream {
    /// Follows the table's changes after `from`: `target` is the
    /// acceleration's schema, whose columns must all be in `prepared`.
    pub async fn open(
        dataset: &str,
        conn: Conn,
        server_id: u32,
        from: BinlogPosition,
        target: SchemaRef,
        prepared: &Prepared,
    ) -> Result<TableStream, SourceError> {
        let columns = target
            .fields()
            .iter()
            .map(|field| {
                prepared
                    .columns
                    .iter()
                    .position(|column| column.name == *field.name())
                    .map(|at| (at, prepared.columns[at].clone()))
                    .ok_or_else(|| SourceError::Schema {
                        dataset: dataset.to_owned(),
                        message: format!(
                            "column \"{}\" of the acceleration is no longer in {}.{}: a refresh (POST /v1/datasets/{dataset}/acceleration/refresh) copies the table again",
                            field.name(),
                            prepared.database,
                            prepared.table
                        ),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let reader = BinlogReader::open(
            dataset,
            conn,
            server_id,
            &from,
            &prepared.database,
            &prepared.table,
        )
        .await?;
        Ok(TableStream {
            dataset: dataset.to_owned(),
            reader,
            target,
            columns,
            width: prepared.columns.len(),
            applied: from,
        })
    }

    /// The next committed transaction of the table, or where the binlog
    /// stands between them. Cancel-safe.
    pub async fn next(&mut self) -> Result<StreamEvent<BinlogPosition>, SourceError> {
        let schema_error = |message: String| SourceError::Schema {
            dataset: self.dataset.clone(),
            message: format!(
                "the source table changed while its changes streamed: {message}. The dataset keeps serving its last state; a refresh (POST /v1/datasets/{}/acceleration/refresh) copies the table again",
                self.dataset
            ),
        };
        loop {
            let transaction = match self.reader.next().await? {
                BinlogEvent::Passed(at) => return Ok(StreamEvent::Idle(at)),
                BinlogEvent::Redefined(statement) => return Err(schema_error(statement)),
                BinlogEvent::Truncated {
                    end,
                    commit_unix_seconds,
                } => SourceTransaction {
                    end,
                    commit_unix_micros: i64::from(commit_unix_seconds) * 1_000_000,
                    changes: vec![RowChange::Truncate],
                },
                BinlogEvent::Transaction(transaction) => {
                    let mut changes = Vec::with_capacity(transaction.changes.len());
                    for change in transaction.changes {
                        changes.push(match change {
                            BinlogChange::Insert(after) => RowChange::Insert(self.row(after)?),
                            BinlogChange::Update { before, after } => RowChange::Update {
                                old: Some(self.row(before)?),
                                new: self.row(after)?,
                            },
                            BinlogChange::Delete(before) => RowChange::Delete(self.row(before)?),
                        });
                    }
                    SourceTransaction {
                        end: transaction.end,
                        commit_unix_micros: i64::from(transaction.commit_unix_seconds) * 1_000_000,
                        changes,
                    }
                }
            };
            // Already applied before a restart: not again.
            if transaction.end <= self.applied {
                continue;
            }
            self.applied = transaction.end.clone();
            return Ok(StreamEvent::Transaction(transaction));
        }
    }

    /// One row's values as the acceleration's columns.
    fn row(&self, mut values: Vec<Value>) -> Result<Row, SourceError> {
        if values.len() != self.width {
            return Err(SourceError::Schema {
                dataset: self.dataset.clone(),
                message: format!(
                    "a row of the source table has {} columns where it had {} when the stream started: a refresh (POST /v1/datasets/{}/acceleration/refresh) copies the table again",
                    values.len(),
                    self.width,
                    self.dataset
                ),
            });
        }
        self.columns
            .iter()
            .zip(self.target.fields())
            .map(|((at, column), field)| {
                let value = std::mem::replace(&mut values[*at], Value::NULL);
                to_scalar(value, column, field)
                    .map(Some)
                    .map_err(|message| SourceError::Read {
                        dataset: self.dataset.clone(),
                        message: format!("column \"{}\": {message}", column.name),
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Row)
    }

    pub async fn close(self) {
        self.reader.close().await;
    }
}

/// The bits of an integer column's type.
fn integer_bits(data_type: &str) -> Option<u32> {
    Some(match data_type {
        "tinyint" => 8,
        "smallint" => 16,
        "mediumint" => 24,
        "int" | "integer" => 32,
        "bigint" => 64,
        _ => return None,
    })
}

/// The quoted values of an `enum(...)` or `set(...)` column type.
fn listed_values(column_type: &str) -> Vec<String> {
    let Some(inner) = column_type
        .split_once('(')
        .and_then(|(_, rest)| rest.rsplit_once(')'))
        .map(|(inner, _)| inner)
    else {
        return Vec::new();
    };
    let mut values = Vec::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\'' if chars.peek() == Some(&'\'') => {
                    chars.next();
                    value.push('\'');
                }
                '\'' => break,
                '\\' => {
                    if let Some(next) = chars.next() {
                        value.push(next);
                    }
                }
                other => value.push(other),
            }
        }
        values.push(value);
    }
    values
}

/// A value of the binlog as a value of `field`'s type, exactly as a full
/// refresh of the same row stores it; a value that type cannot hold is an
/// error that names it.
pub fn to_scalar(value: Value, column: &MysqlColumn, field: &Field) -> Result<ScalarValue, String> {
    let target = field.data_type();
    let text = |bytes: Vec<u8>| {
        String::from_utf8(bytes).map_err(|_| "the binlog sent text that is not UTF-8".to_owned())
    };
    let natural = match value {
        Value::NULL => return ScalarValue::try_from(target).map_err(|e| e.to_string()),
        Value::Int(n) => match (column.data_type.as_str(), integer_bits(&column.data_type)) {
            ("enum", _) => {
                let values = listed_values(&column.column_type);
                let name = match n {
                    0 => String::new(),
                    n => values
                        .get(usize::try_from(n - 1).unwrap_or(usize::MAX))
                        .cloned()
                        .ok_or_else(|| {
                            format!("enum value number {n} is not in {}", column.column_type)
                        })?,
                };
                ScalarValue::Utf8(Some(name))
            }
            ("timestamp", _) => timestamp(n.saturating_mul(1_000_000), target),
            (_, Some(bits)) if n < 0 && column.column_type.contains("unsigned") => {
                let mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1_u64 << bits) - 1
                };
                ScalarValue::UInt64(Some(n as u64 & mask))
            }
            _ => ScalarValue::Int64(Some(n)),
        },
        Value::UInt(n) => ScalarValue::UInt64(Some(n)),
        Value::Float(f) => ScalarValue::Float32(Some(f)),
        Value::Double(f) => ScalarValue::Float64(Some(f)),
        Value::Date(year, month, day, hour, minute, second, micros) => {
            let date = chrono::NaiveDate::from_ymd_opt(year.into(), month.into(), day.into())
                .ok_or_else(|| {
                    format!("{year:04}-{month:02}-{day:02} is not a date PostgreSQL can hold")
                })?;
            if column.data_type == "date" {
                ScalarValue::Date32(Some(
                    (date - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("epoch")).num_days()
                        as i32,
                ))
            } else {
                let at = date
                    .and_hms_micro_opt(hour.into(), minute.into(), second.into(), micros)
                    .ok_or("not a time of day")?;
                timestamp(at.and_utc().timestamp_micros(), target)
            }
        }
        Value::Time(negative, days, hours, minutes, seconds, micros) => {
            let total = ((u64::from(days) * 24 + u64::from(hours)) * 3600
                + u64::from(minutes) * 60
                + u64::from(seconds))
                * 1_000_000
                + u64::from(micros);
            if negative || total >= 86_400_000_000 {
                return Err(format!(
                    "TIME value {}{}:{minutes:02}:{seconds:02} is outside a time of day, which is all PostgreSQL's time holds",
                    if negative { "-" } else { "" },
                    u64::from(days) * 24 + u64::from(hours)
                ));
            }
            ScalarValue::Time64Microsecond(Some(total as i64))
        }
        Value::Bytes(bytes) => match target {
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => ScalarValue::Binary(Some(bytes)),
            _ => match column.data_type.as_str() {
                "timestamp" => {
                    let text = text(bytes)?;
                    let (seconds, fraction) = text.split_once('.').unwrap_or((&text, ""));
                    let seconds: i64 = seconds
                        .parse()
                        .map_err(|_| format!("'{text}' is not a timestamp"))?;
                    let micros: i64 = format!("{fraction:0<6}")[..6]
                        .parse()
                        .map_err(|_| format!("'{text}' is not a timestamp"))?;
                    timestamp(seconds * 1_000_000 + micros, target)
                }
                "bit" => {
                    if bytes.len() > 8 {
                        return Err("a BIT value wider than 64 bits".to_owned());
                    }
                    ScalarValue::UInt64(Some(
                        bytes.iter().fold(0_u64, |n, b| (n << 8) | u64::from(*b)),
                    ))
                }
                "set" => {
                    let names = listed_values(&column.column_type);
                    let mask = bytes
                        .iter()
                        .rev()
                        .fold(0_u64, |n, b| (n << 8) | u64::from(*b));
                    let chosen: Vec<&str> = names
                        .iter()
                        .enumerate()
                        .filter(|(bit, _)| *bit < 64 && mask & (1 << bit) != 0)
                        .map(|(_, name)| name.as_str())
                        .collect();
                    ScalarValue::Utf8(Some(chosen.join(",")))
                }
                "year" => {
                    let year: i64 = text(bytes)?.parse().map_err(|_| "not a year".to_owned())?;
                    // The binlog counts years from 1900; the zero year is 0000.
                    ScalarValue::Int64(Some(if year == 1900 { 0 } else { year }))
                }
                "json" => ScalarValue::Utf8(Some(mysql_json(&text(bytes)?)?)),
                _ => ScalarValue::Utf8(Some(text(bytes)?)),
            },
        },
    };
    if natural.data_type() == *target {
        return Ok(natural);
    }
    natural
        .cast_to(target)
        .map_err(|e| format!("{natural} does not fit {target}: {e}"))
}

/// An instant or wall-clock time in microseconds as `target`'s timestamp
/// (same time zone, so no conversion happens).
fn timestamp(micros: i64, target: &DataType) -> ScalarValue {
    let zone = match target {
        DataType::Timestamp(_, zone) => zone.clone(),
        _ => None,
    };
    ScalarValue::TimestampMicrosecond(Some(micros), zone)
}

/// A JSON document as MySQL prints it (`{"a": 1, "b": [1, 2]}`, keys
/// ordered by length, then bytes), which is how a full refresh reads it:
/// the binlog holds MySQL's binary form, not the text.
fn mysql_json(text: &str) -> Result<String, String> {
    fn write(value: &serde_json::Value, out: &mut String) {
        match value {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&serde_json::Value::String(key.clone()).to_string());
                    out.push_str(": ");
                    write(&map[key], out);
                }
                out.push('}');
            }
            serde_json::Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("the binlog sent JSON that does not parse: {e}"))?;
    let mut out = String::new();
    write(&value, &mut out);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_through_their_text() {
        let position: BinlogPosition = "pgaccel-binlog.000012:4567".parse().unwrap();
        assert_eq!(position.file, "pgaccel-binlog.000012");
        assert_eq!(position.offset, 4567);
        assert_eq!(position.to_string(), "pgaccel-binlog.000012:4567");
        assert!("no-offset".parse::<BinlogPosition>().is_err());
        let later = BinlogPosition {
            file: "pgaccel-binlog.000013".into(),
            offset: 4,
        };
        assert!(later > position, "positions order by file, then offset");
    }

    #[test]
    fn statements_that_truncate_or_redefine_the_table_are_told_apart() {
        let of = |text| statement_of(text, "shop", "shop", "orders");
        assert_eq!(of("TRUNCATE TABLE `orders`"), Some(Statement::Truncate));
        assert_eq!(of("truncate shop.orders"), Some(Statement::Truncate));
        assert_eq!(
            of("ALTER TABLE orders ADD COLUMN x INT"),
            Some(Statement::Redefine)
        );
        assert_eq!(
            of("DROP TABLE `other`, `orders` /* generated by server */"),
            Some(Statement::Redefine)
        );
        assert_eq!(of("ALTER TABLE orders_old ADD COLUMN x INT"), None);
        assert_eq!(of("TRUNCATE TABLE elsewhere.orders"), None);
        assert_eq!(
            statement_of("TRUNCATE orders", "other", "shop", "orders"),
            None
        );
        assert_eq!(of("INSERT INTO orders VALUES (1)"), None);
    }

    fn column(data_type: &str, column_type: &str) -> MysqlColumn {
        MysqlColumn {
            name: "c".into(),
            data_type: data_type.into(),
            column_type: column_type.into(),
        }
    }

    #[test]
    fn binlog_values_become_the_columns_types() {
        let field = |data_type: DataType| Field::new("c", data_type, true);
        let unsigned = to_scalar(
            Value::Int(-1),
            &column("int", "int(10) unsigned"),
            &field(DataType::UInt32),
        );
        assert_eq!(unsigned.unwrap(), ScalarValue::UInt32(Some(u32::MAX)));
        let status = column("enum", "enum('new','it''s','done')");
        assert_eq!(
            to_scalar(Value::Int(2), &status, &field(DataType::Utf8)).unwrap(),
            ScalarValue::Utf8(Some("it's".into()))
        );
        let tags = column("set", "set('a','b','c')");
        assert_eq!(
            to_scalar(Value::Bytes(vec![0b101]), &tags, &field(DataType::Utf8)).unwrap(),
            ScalarValue::Utf8(Some("a,c".into()))
        );
        let utc = DataType::Timestamp(
            datafusion::arrow::datatypes::TimeUnit::Microsecond,
            Some("UTC".into()),
        );
        assert_eq!(
            to_scalar(
                Value::Bytes(b"86400.5".to_vec()),
                &column("timestamp", "timestamp(1)"),
                &field(utc)
            )
            .unwrap(),
            ScalarValue::TimestampMicrosecond(Some(86_400_500_000), Some("UTC".into()))
        );
        assert_eq!(
            to_scalar(
                Value::Bytes(b"-12.50".to_vec()),
                &column("decimal", "decimal(8,2)"),
                &field(DataType::Decimal128(8, 2))
            )
            .unwrap(),
            ScalarValue::Decimal128(Some(-1250), 8, 2)
        );
        assert_eq!(
            to_scalar(
                Value::Date(2024, 2, 29, 0, 0, 0, 0),
                &column("date", "date"),
                &field(DataType::Date32)
            )
            .unwrap(),
            ScalarValue::Date32(Some(19782))
        );
        let late = to_scalar(
            Value::Time(false, 1, 2, 0, 0, 0),
            &column("time", "time"),
            &field(DataType::Time64(
                datafusion::arrow::datatypes::TimeUnit::Microsecond,
            )),
        );
        assert!(late.unwrap_err().contains("26:00:00"));
        assert_eq!(
            mysql_json(r#"{"bb":[1,2],"a":{"x":"y"}}"#).unwrap(),
            r#"{"a": {"x": "y"}, "bb": [1, 2]}"#
        );
        assert_eq!(
            listed_values("enum('a,b','c\\'d')"),
            vec!["a,b".to_owned(), "c'd".to_owned()]
        );
    }
}
