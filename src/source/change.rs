//! The changes of a table as a source's change stream delivers them
//! (`refresh_mode: changes`), whatever the source: rows in the
//! acceleration's columns and types, grouped by committed transaction,
//! each with the stream position it ends at (a PostgreSQL LSN, a MySQL
//! binlog file and offset).

use datafusion::common::ScalarValue;

/// One row in the acceleration's column order: `None` for a value the
/// change did not send (a TOASTed value an update left unchanged, which
/// keeps the row's current one).
#[derive(Debug, Clone, PartialEq)]
pub struct Row(pub Vec<Option<ScalarValue>>);

/// One change of a row, with its values converted to the acceleration's
/// types.
#[derive(Debug, Clone, PartialEq)]
pub enum RowChange {
    Insert(Row),
    /// `old` holds at least the key columns when the key changed (all
    /// columns with `REPLICA IDENTITY FULL` or a full row image); `None`
    /// when it did not.
    Update {
        old: Option<Row>,
        new: Row,
    },
    /// The row's key columns (or all of them).
    Delete(Row),
    Truncate,
}

/// One committed source transaction's changes of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTransaction<P> {
    /// Where the stream continues after its commit: once applied, the
    /// stream resumes there.
    pub end: P,
    /// The commit time, in microseconds since the Unix epoch.
    pub commit_unix_micros: i64,
    pub changes: Vec<RowChange>,
}

impl<P> SourceTransaction<P> {
    /// The same transaction with its position told as `position` says.
    pub fn at<Q>(self, position: impl FnOnce(P) -> Q) -> SourceTransaction<Q> {
        SourceTransaction {
            end: position(self.end),
            commit_unix_micros: self.commit_unix_micros,
            changes: self.changes,
        }
    }
}

/// What a change stream found next.
#[derive(Debug)]
pub enum StreamEvent<P> {
    Transaction(SourceTransaction<P>),
    /// The source is at this position with no transaction of the table in
    /// flight: everything before it that concerns the table was delivered.
    Idle(P),
}
