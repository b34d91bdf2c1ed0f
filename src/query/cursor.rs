//! Result rows as a session hands them out: [`RowSource`], the rows of one
//! statement, pulled in chunks of at most so many rows (a protocol portal's
//! `Execute` row limit, a `FETCH` count), and [`Cursor`], a `DECLARE`d
//! cursor that moves through them as PostgreSQL's do.
//!
//! A cursor declared `SCROLL` keeps the rows it has read, so it can move
//! backwards; any other cursor streams forward only and keeps nothing, as
//! PostgreSQL's do for plans that cannot run backwards.

use std::collections::VecDeque;
use std::pin::Pin;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{RecordBatch, UInt32Array};
use datafusion::arrow::compute::{concat_batches, take_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use futures::{Stream, StreamExt};

use super::error::PgError;
use super::sqlstate;
use super::statement::Motion;

type BatchStream = Pin<Box<dyn Stream<Item = Result<RecordBatch, PgError>> + Send>>;

/// The rows of one statement.
pub struct RowSource {
    schema: SchemaRef,
    stream: Option<BatchStream>,
    /// Rows read from the stream and not handed out yet.
    pending: VecDeque<RecordBatch>,
}

impl RowSource {
    pub fn new(schema: SchemaRef, stream: BatchStream) -> Self {
        RowSource {
            schema,
            stream: Some(stream),
            pending: VecDeque::new(),
        }
    }

    /// Rows already computed.
    pub fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        RowSource {
            schema,
            stream: None,
            pending: batches.into(),
        }
    }

    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The next rows, at most `limit` of them; `None` once all were handed
    /// out.
    pub async fn next(&mut self, limit: usize) -> Option<Result<RecordBatch, PgError>> {
        loop {
            if let Some(batch) = self.pending.pop_front() {
                if batch.num_rows() == 0 {
                    continue;
                }
                if batch.num_rows() > limit {
                    self.pending
                        .push_front(batch.slice(limit, batch.num_rows() - limit));
                    return Some(Ok(batch.slice(0, limit)));
                }
                return Some(Ok(batch));
            }
            let stream = self.stream.as_mut()?;
            match stream.next().await {
                Some(Ok(batch)) => self.pending.push_back(batch),
                Some(Err(error)) => {
                    self.stream = None;
                    return Some(Err(error));
                }
                None => {
                    self.stream = None;
                    return None;
                }
            }
        }
    }

    /// Up to `limit` rows (all with `None`) as batches.
    pub async fn take(&mut self, limit: Option<u64>) -> Result<Vec<RecordBatch>, PgError> {
        let mut remaining = limit.unwrap_or(u64::MAX);
        let mut batches = Vec::new();
        while remaining > 0 {
            let chunk = usize::try_from(remaining).unwrap_or(usize::MAX);
            match self.next(chunk).await {
                Some(batch) => {
                    let batch = batch?;
                    remaining -= batch.num_rows() as u64;
                    batches.push(batch);
                }
                None => break,
            }
        }
        Ok(batches)
    }
}

/// A cursor made by `DECLARE`.
pub struct Cursor {
    pub name: String,
    /// The `DECLARE` statement, as `pg_cursors` shows it.
    pub statement: String,
    pub binary: bool,
    pub scroll: bool,
    pub hold: bool,
    pub created: DateTime<Utc>,
    /// Savepoints open when it was declared: rolling back past them closes it.
    pub savepoint_depth: usize,
    /// Declared inside the current transaction block: a rollback closes it.
    pub in_block: bool,
    source: RowSource,
    /// Scroll cursors keep every row read, in order.
    kept: Option<Vec<RecordBatch>>,
    kept_rows: u64,
    /// PostgreSQL's cursor position: 0 before the first row, n on row n,
    /// past the end after the last.
    position: u64,
    /// The number of rows, once the end was reached.
    total: Option<u64>,
}

impl Cursor {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: String,
        statement: String,
        source: RowSource,
        binary: bool,
        scroll: bool,
        hold: bool,
        savepoint_depth: usize,
    ) -> Self {
        Cursor {
            name,
            statement,
            binary,
            scroll,
            hold,
            created: Utc::now(),
            savepoint_depth,
            in_block: false,
            source,
            kept: scroll.then(Vec::new),
            kept_rows: 0,
            position: 0,
            total: None,
        }
    }

    pub fn schema(&self) -> &SchemaRef {
        self.source.schema()
    }

    /// Moves as `motion` says and returns the rows passed over (none when
    /// `keep` is false, for `MOVE`) and how many there were.
    pub async fn fetch(
        &mut self,
        motion: Motion,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        match motion {
            Motion::Forward(count) => self.forward(count, keep).await,
            Motion::Backward(count) => {
                self.require_scroll()?;
                self.backward(count, keep)
            }
            Motion::Absolute(0) => {
                if self.position != 0 {
                    self.require_scroll()?;
                }
                self.position = 0;
                Ok((Vec::new(), 0))
            }
            Motion::Absolute(row) if row > 0 => self.row_at(row, keep).await,
            Motion::Absolute(row) => {
                let total = self.count_all().await?;
                self.row_at(total as i64 + 1 + row, keep).await
            }
            Motion::Relative(0) => {
                self.require_scroll()?;
                self.current_row(keep)
            }
            Motion::Relative(offset) => self.row_at(self.position as i64 + offset, keep).await,
        }
    }

    fn require_scroll(&self) -> Result<(), PgError> {
        if self.scroll {
            return Ok(());
        }
        Err(PgError::new(
            sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "cursor can only scan forward",
        )
        .with_hint("Declare it with SCROLL option to enable backward scan."))
    }

    fn past_end(&self) -> bool {
        self.total.is_some_and(|total| self.position > total)
    }

    async fn forward(
        &mut self,
        count: Option<u64>,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        let wanted = count.unwrap_or(u64::MAX);
        let mut rows = Vec::new();
        let mut got = 0;
        if self.past_end() {
            return Ok((rows, got));
        }
        // A scroll cursor that moved back reads its kept rows first.
        let from_kept = self.kept_rows.saturating_sub(self.position).min(wanted);
        if from_kept > 0 {
            if keep {
                rows.push(self.kept_slice(self.position, from_kept)?);
            }
            self.position += from_kept;
            got += from_kept;
        }
        while got < wanted {
            let chunk = usize::try_from(wanted - got).unwrap_or(usize::MAX);
            let Some(batch) = self.source.next(chunk).await else {
                // Ran off the end: the cursor is now after the last row.
                self.total = Some(self.position);
                self.position += 1;
                break;
            };
            let batch = batch?;
            let n = batch.num_rows() as u64;
            if let Some(kept) = &mut self.kept {
                kept.push(batch.clone());
                self.kept_rows += n;
            }
            self.position += n;
            got += n;
            if keep {
                rows.push(batch);
            }
        }
        Ok((rows, got))
    }

    fn backward(
        &mut self,
        count: Option<u64>,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        let wanted = count.unwrap_or(u64::MAX);
        let start = self.position;
        let got = start.saturating_sub(1).min(wanted);
        let rows = if keep && got > 0 {
            // Rows start-1, start-2, ... in that order.
            let forward = self.kept_slice(start - 1 - got, got)?;
            let reversed: UInt32Array = (0..got as u32).rev().collect();
            vec![take_record_batch(&forward, &reversed).map_err(internal)?]
        } else {
            Vec::new()
        };
        self.position = if got < wanted { 0 } else { start - got };
        Ok((rows, got))
    }

    /// Fetches row `target` alone (`ABSOLUTE`, `RELATIVE`): before the
    /// first row or past the last, nothing, and the cursor stays there.
    async fn row_at(
        &mut self,
        target: i64,
        keep: bool,
    ) -> Result<(Vec<RecordBatch>, u64), PgError> {
        if target < 1 {
            if self.position != 0 {
                self.require_scroll()?;
            }
            self.position = 0;
            return Ok((Vec::new(), 0));
        }
        let before = target as u64 - 1;
        if before < self.position {
            self.require_scroll()?;
            self.position = before;
        } else {
            self.forward(Some(before - self.position), false).await?;
        }
        self.forward(Some(1), keep).await
    }

    /// Reads everything (scroll cursors only) and returns the row count,
    /// leaving the cursor where it was.
    async fn count_all(&mut self) -> Result<u64, PgError> {
        self.require_scroll()?;
        if self.total.is_none() {
            let position = self.position;
            self.forward(None, false).await?;
            self.position = position;
        }
        Ok(self.total.unwrap_or(0))
    }

    fn current_row(&mut self, keep: bool) -> Result<(Vec<RecordBatch>, u64), PgError> {
        if self.position == 0 || self.position > self.kept_rows {
            return Ok((Vec::new(), 0));
        }
        let rows = if keep {
            vec![self.kept_slice(self.position - 1, 1)?]
        } else {
            Vec::new()
        };
        Ok((rows, 1))
    }

    /// `count` kept rows from row index `first` (0-based).
    fn kept_slice(&self, first: u64, count: u64) -> Result<RecordBatch, PgError> {
        let kept = self.kept.as_deref().unwrap_or_default();
        let mut slices = Vec::new();
        let mut offset = 0u64;
        let end = first + count;
        for batch in kept {
            let n = batch.num_rows() as u64;
            let (from, to) = (first.max(offset), end.min(offset + n));
            if from < to {
                slices.push(batch.slice((from - offset) as usize, (to - from) as usize));
            }
            offset += n;
        }
        concat_batches(self.source.schema(), &slices).map_err(internal)
    }
}

fn internal(error: impl std::fmt::Display) -> PgError {
    PgError::new(sqlstate::INTERNAL_ERROR, error.to_string())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{AsArray, Int32Array};
    use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema};

    use super::*;

    fn cursor(rows: i32, scroll: bool) -> Cursor {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int32, false)]));
        let batches: Vec<RecordBatch> = (1..=rows)
            .collect::<Vec<_>>()
            .chunks(3)
            .map(|chunk| {
                RecordBatch::try_new(
                    Arc::clone(&schema),
                    vec![Arc::new(Int32Array::from(chunk.to_vec()))],
                )
                .unwrap()
            })
            .collect();
        let stream = futures::stream::iter(batches.into_iter().map(Ok)).boxed();
        Cursor::new(
            "c".into(),
            String::new(),
            RowSource::new(schema, stream),
            false,
            scroll,
            false,
            0,
        )
    }

    async fn values(cursor: &mut Cursor, motion: Motion) -> Vec<i32> {
        let (batches, count) = cursor.fetch(motion, true).await.unwrap();
        let values: Vec<i32> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec())
            .collect();
        assert_eq!(values.len() as u64, count);
        values
    }

    #[tokio::test]
    async fn moves_like_postgres_cursors() {
        let mut c = cursor(10, true);
        assert_eq!(values(&mut c, Motion::Forward(Some(4))).await, [1, 2, 3, 4]);
        assert_eq!(values(&mut c, Motion::Backward(Some(2))).await, [3, 2]);
        assert_eq!(values(&mut c, Motion::Forward(Some(1))).await, [3]);
        assert_eq!(values(&mut c, Motion::Absolute(-1)).await, [10]);
        assert_eq!(
            values(&mut c, Motion::Forward(None)).await,
            Vec::<i32>::new()
        );
        assert_eq!(values(&mut c, Motion::Backward(Some(1))).await, [10]);
        assert_eq!(values(&mut c, Motion::Absolute(2)).await, [2]);
        assert_eq!(values(&mut c, Motion::Relative(3)).await, [5]);
        assert_eq!(values(&mut c, Motion::Relative(0)).await, [5]);
        assert_eq!(values(&mut c, Motion::Relative(-2)).await, [3]);
        assert_eq!(values(&mut c, Motion::Backward(None)).await, [2, 1]);
        assert_eq!(
            values(&mut c, Motion::Forward(None)).await,
            (1..=10).collect::<Vec<_>>()
        );
        assert_eq!(
            values(&mut c, Motion::Absolute(20)).await,
            Vec::<i32>::new()
        );
    }

    #[tokio::test]
    async fn forward_only_cursors_refuse_to_go_back() {
        let mut c = cursor(5, false);
        assert_eq!(values(&mut c, Motion::Forward(Some(2))).await, [1, 2]);
        let error = c.fetch(Motion::Backward(Some(1)), true).await.unwrap_err();
        assert_eq!(error.code, "55000");
        assert_eq!(values(&mut c, Motion::Absolute(4)).await, [4]);
        assert_eq!(values(&mut c, Motion::Forward(None)).await, [5]);
    }
}
