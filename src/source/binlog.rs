//! The MySQL/MariaDB row binlog, read through mysql_async's binlog stream:
//! the checks that say what to change on a server whose binlog cannot be
//! streamed, the server's current position, and one table's row changes
//! grouped by committed transaction, in commit order. `refresh_mode:
//! changes` on MySQL sources applies them (see `refresh::changes`).

use std::fmt;
use std::str::FromStr;

use futures::StreamExt;
use mysql_async::binlog::events::{EventData, RowsEventData};
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStream, BinlogStreamRequest, Conn, Value};

use super::SourceError;

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
    let status: Option<mysql_async::Row> = conn.query_first("SHOW MASTER STATUS").await.map_err(|e| {
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

    /// The next committed transaction that changed the table (transactions
    /// of other tables are passed over). Cancel-safe: a transaction partly
    /// received is kept for the next call.
    pub async fn next(&mut self) -> Result<BinlogTransaction, SourceError> {
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
            let commit = |file: &str| BinlogPosition {
                file: file.to_owned(),
                offset: u64::from(header.log_pos()),
            };
            match data {
                Some(EventData::RotateEvent(rotate)) => {
                    self.file = rotate.name().into_owned();
                }
                Some(EventData::QueryEvent(query)) => {
                    let text = query.query();
                    if text.eq_ignore_ascii_case("BEGIN") {
                        self.current = Some(BinlogTransaction {
                            end: commit(&self.file),
                            commit_unix_seconds: header.timestamp(),
                            changes: Vec::new(),
                        });
                    } else if text.eq_ignore_ascii_case("COMMIT")
                        && let Some(found) = self.finish(commit(&self.file), header.timestamp())
                    {
                        return Ok(found);
                    }
                }
                Some(EventData::XidEvent(_)) => {
                    if let Some(found) = self.finish(commit(&self.file), header.timestamp()) {
                        return Ok(found);
                    }
                }
                Some(EventData::RowsEvent(rows)) => self.take(&rows)?,
                _ => {}
            }
        }
    }

    /// Ends the transaction in flight; returns it when it changed the table.
    fn finish(&mut self, end: BinlogPosition, seconds: u32) -> Option<BinlogTransaction> {
        let mut transaction = self.current.take()?;
        if transaction.changes.is_empty() {
            return None;
        }
        transaction.end = end;
        transaction.commit_unix_seconds = seconds;
        Some(transaction)
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
}
