//! How far the refresh in flight has read its source: rows, bytes and rate,
//! for `GET /v1/datasets?status=true` and `pgaccel refresh --wait`.

use std::sync::Mutex;
use std::time::Instant;

use chrono::{DateTime, Utc};
use datafusion::arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

/// The read in flight of one dataset, if any.
#[derive(Debug, Default)]
pub struct ReadProgress {
    reading: Mutex<Option<Reading>>,
}

#[derive(Debug)]
struct Reading {
    /// Tells a read from the one that replaced it, so that the first one's
    /// end does not clear the second's progress.
    generation: u64,
    started: Instant,
    started_at: DateTime<Utc>,
    rows: u64,
    bytes: u64,
}

/// What a read has done so far, as the status reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgressReport {
    pub started_at: DateTime<Utc>,
    pub elapsed_ms: u64,
    /// Rows read from the source so far.
    pub rows: u64,
    /// Arrow memory of those rows.
    pub bytes: u64,
    pub rows_per_second: f64,
    pub bytes_per_second: f64,
}

/// Ends its read when dropped (completed, failed or cancelled alike).
pub struct ReadGuard<'a> {
    progress: &'a ReadProgress,
    generation: u64,
}

impl ReadProgress {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Reading>> {
        // Every update is a plain field store: a panic cannot leave it torn.
        self.reading.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A read of the source starts; it is reported until the guard drops.
    pub fn begin(&self) -> ReadGuard<'_> {
        let mut reading = self.lock();
        let generation = reading.as_ref().map_or(0, |r| r.generation + 1);
        *reading = Some(Reading {
            generation,
            started: Instant::now(),
            started_at: Utc::now(),
            rows: 0,
            bytes: 0,
        });
        ReadGuard {
            progress: self,
            generation,
        }
    }

    /// `batch` was read.
    pub fn add(&self, batch: &RecordBatch) {
        if let Some(reading) = self.lock().as_mut() {
            reading.rows += batch.num_rows() as u64;
            reading.bytes += batch.get_array_memory_size() as u64;
        }
    }

    /// The read in flight, if any.
    pub fn report(&self) -> Option<ProgressReport> {
        let reading = self.lock();
        let reading = reading.as_ref()?;
        let elapsed = reading.started.elapsed();
        let seconds = elapsed.as_secs_f64().max(1e-3);
        Some(ProgressReport {
            started_at: reading.started_at,
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            rows: reading.rows,
            bytes: reading.bytes,
            rows_per_second: (reading.rows as f64 / seconds).round(),
            bytes_per_second: (reading.bytes as f64 / seconds).round(),
        })
    }
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        let mut reading = self.progress.lock();
        if reading
            .as_ref()
            .is_some_and(|r| r.generation == self.generation)
        {
            *reading = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Int32Array;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(rows: i32) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int32, false)]));
        RecordBatch::try_new(
            schema,
            vec![Arc::new(Int32Array::from_iter_values(0..rows))],
        )
        .unwrap()
    }

    #[test]
    fn a_read_reports_its_rows_and_bytes_until_it_ends() {
        let progress = ReadProgress::default();
        assert_eq!(progress.report(), None);
        let guard = progress.begin();
        progress.add(&batch(10));
        progress.add(&batch(5));
        let report = progress.report().expect("a read is in flight");
        assert_eq!(report.rows, 15);
        assert!(report.bytes >= 15 * 4, "{report:?}");
        drop(guard);
        assert_eq!(progress.report(), None);
    }

    #[test]
    fn the_end_of_a_replaced_read_leaves_the_new_one_reported() {
        let progress = ReadProgress::default();
        let first = progress.begin();
        progress.add(&batch(10));
        let second = progress.begin();
        progress.add(&batch(3));
        drop(first);
        assert_eq!(progress.report().map(|r| r.rows), Some(3));
        drop(second);
        assert_eq!(progress.report(), None);
    }
}
