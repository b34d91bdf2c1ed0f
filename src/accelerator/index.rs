//! The primary-key index of an acceleration: key → the rows holding it.
//!
//! Invariant: an index is built from exactly the batches of the
//! [`super::TableData`] it belongs to, before that version is published, and
//! never changes afterwards. Every write path keeps it so by building a new
//! version: a full refresh indexes its batches, an append copies the index of
//! the version it extends and forgets or adds the rows it changed.
//!
//! So that an append costs what it changes, not what the table holds, the
//! index is a shared base table plus the rows indexed since (`delta`) and the
//! base rows removed since (`removed`). Copying it copies only those two; they
//! are folded into a new base once they grow past a fraction of it, which
//! keeps the cost per changed row constant on average.
//!
//! Keys are hashed column by column with DataFusion's vectorized hashing,
//! which handles every column type and composite keys alike. The table stores
//! only each row's hash and location (16 bytes a row, no allocation per key);
//! a lookup compares the key columns of every candidate with its hash, so a
//! hash collision can never return a wrong row.

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::common::hash_utils::{RandomState, create_hashes};
use datafusion::common::{DataFusionError, ScalarValue};
use std::sync::Arc;

use hashbrown::{HashSet, HashTable};

/// Where a row lives: the batch's position in load order and the row in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowRef {
    pub batch: u32,
    pub row: u32,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    hash: u64,
    at: RowRef,
}

#[derive(Debug, Clone)]
pub struct PrimaryKeyIndex {
    /// Key columns, by position in the table schema.
    columns: Vec<usize>,
    types: Vec<DataType>,
    hasher: RandomState,
    /// Every row with a non-NULL key as of the last fold; a key the data
    /// repeats (a declared key it does not honour) has several entries and
    /// lookups return them all. Shared by the versions that extend it.
    base: Arc<HashTable<Entry>>,
    /// Rows indexed since the last fold.
    delta: HashTable<Entry>,
    /// Rows of `base` that are gone since the last fold.
    removed: HashSet<RowRef>,
}

/// Changes are folded into the base once they number more than this
/// fraction of it (and at least [`FOLD_AT_LEAST`]).
const FOLD_FRACTION: usize = 8;
const FOLD_AT_LEAST: usize = 4096;

impl PrimaryKeyIndex {
    pub fn new(schema: &SchemaRef, columns: Vec<usize>, rows: usize) -> Result<Self, ArrowError> {
        let types: Vec<DataType> = columns
            .iter()
            .map(|c| schema.field(*c).data_type().clone())
            .collect();
        Ok(PrimaryKeyIndex {
            columns,
            types,
            hasher: RandomState::with_seed(0x7067_6163),
            base: Arc::new(HashTable::new()),
            delta: HashTable::with_capacity(rows),
            removed: HashSet::new(),
        })
    }

    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    fn key_columns(&self, batch: &RecordBatch) -> Vec<ArrayRef> {
        self.columns
            .iter()
            .map(|c| batch.column(*c).clone())
            .collect()
    }

    /// Indexes the rows of the `batch_number`-th batch.
    pub fn insert_batch(
        &mut self,
        batch_number: u32,
        batch: &RecordBatch,
    ) -> Result<(), ArrowError> {
        let keys = self.key_columns(batch);
        let hashes = self.hashes(&keys, batch.num_rows())?;
        for (row, hash) in hashes.into_iter().enumerate() {
            // A NULL key matches no equality lookup, so it is not indexed.
            if keys.iter().any(|key| key.is_null(row)) {
                continue;
            }
            let at = RowRef {
                batch: batch_number,
                row: row as u32,
            };
            self.delta
                .insert_unique(hash, Entry { hash, at }, |entry| entry.hash);
        }
        Ok(())
    }

    /// Forgets the rows of the `batch_number`-th batch, which must be the
    /// batch that was indexed under that number.
    pub fn remove_batch(
        &mut self,
        batch_number: u32,
        batch: &RecordBatch,
    ) -> Result<(), ArrowError> {
        let keys = self.key_columns(batch);
        let hashes = self.hashes(&keys, batch.num_rows())?;
        for (row, hash) in hashes.into_iter().enumerate() {
            let at = RowRef {
                batch: batch_number,
                row: row as u32,
            };
            // The batch's rows are all in the base (never rewritten since the
            // last fold) or all in the delta.
            match self.delta.find_entry(hash, |entry| entry.at == at) {
                Ok(entry) => {
                    entry.remove();
                }
                Err(_) => {
                    self.removed.insert(at);
                }
            }
        }
        Ok(())
    }

    /// For each row of `batch` (a batch of the indexed table's schema, not
    /// indexed itself), the indexed rows with the same key.
    pub fn matches<'a>(
        &self,
        batch: &RecordBatch,
        held: impl Fn(u32) -> &'a RecordBatch,
    ) -> Result<Vec<Vec<RowRef>>, ArrowError> {
        let keys = self.key_columns(batch);
        let hashes = self.hashes(&keys, batch.num_rows())?;
        let mut found = Vec::with_capacity(batch.num_rows());
        for (row, hash) in hashes.into_iter().enumerate() {
            let mut rows = Vec::new();
            if keys.iter().all(|key| key.is_valid(row)) {
                let mut wanted: Option<Vec<ScalarValue>> = None;
                for entry in self.candidates(hash) {
                    let wanted = match &wanted {
                        Some(wanted) => wanted,
                        None => wanted.insert(
                            keys.iter()
                                .map(|key| ScalarValue::try_from_array(key, row))
                                .collect::<Result<_, DataFusionError>>()
                                .map_err(to_arrow)?,
                        ),
                    };
                    if self.holds(held(entry.at.batch), entry.at.row, wanted)? {
                        rows.push(entry.at);
                    }
                }
            }
            found.push(rows);
        }
        Ok(found)
    }

    /// The rows whose key equals `key` (one value per key column, in key
    /// order), reading candidate rows through `batch`. Values of another type
    /// are cast to the column's type; one that cannot be represented in it
    /// matches nothing.
    pub fn lookup<'a>(
        &self,
        key: &[ScalarValue],
        batch: impl Fn(u32) -> &'a RecordBatch,
    ) -> Result<Vec<RowRef>, ArrowError> {
        let Some(probe) = self.probe(key)? else {
            return Ok(Vec::new());
        };
        let hash = self.hashes(&probe, 1)?[0];
        let wanted = probe
            .iter()
            .map(|array| ScalarValue::try_from_array(array, 0))
            .collect::<Result<Vec<_>, DataFusionError>>()
            .map_err(to_arrow)?;
        let mut found = Vec::new();
        for entry in self.candidates(hash) {
            if self.holds(batch(entry.at.batch), entry.at.row, &wanted)? {
                found.push(entry.at);
            }
        }
        Ok(found)
    }

    fn hashes(&self, keys: &[ArrayRef], rows: usize) -> Result<Vec<u64>, ArrowError> {
        let mut hashes = vec![0; rows];
        create_hashes(keys, &self.hasher, &mut hashes).map_err(to_arrow)?;
        Ok(hashes)
    }

    /// The key as one-row arrays of the key columns' types; `None` when a
    /// value is NULL or cannot be represented in its column's type.
    fn probe(&self, key: &[ScalarValue]) -> Result<Option<Vec<ArrayRef>>, ArrowError> {
        if key.len() != self.types.len() || key.iter().any(ScalarValue::is_null) {
            return Ok(None);
        }
        let mut arrays = Vec::with_capacity(key.len());
        for (value, data_type) in key.iter().zip(&self.types) {
            let array = value.to_array_of_size(1).map_err(to_arrow)?;
            if array.data_type() == data_type {
                arrays.push(array);
                continue;
            }
            match cast(&array, data_type) {
                Ok(cast) if !cast.is_null(0) => arrays.push(cast),
                _ => return Ok(None),
            }
        }
        Ok(Some(arrays))
    }

    /// Whether the row's key columns hold exactly `wanted`.
    fn holds(
        &self,
        batch: &RecordBatch,
        row: u32,
        wanted: &[ScalarValue],
    ) -> Result<bool, ArrowError> {
        for (column, value) in self.columns.iter().zip(wanted) {
            let stored = ScalarValue::try_from_array(batch.column(*column), row as usize)
                .map_err(to_arrow)?;
            if stored != *value {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The live entries with this hash, in the delta and the base.
    fn candidates(&self, hash: u64) -> impl Iterator<Item = &Entry> {
        self.delta
            .iter_hash(hash)
            .chain(
                self.base
                    .iter_hash(hash)
                    .filter(|entry| !self.removed.contains(&entry.at)),
            )
            .filter(move |entry| entry.hash == hash)
    }

    /// Folds the changes into a new base when they have grown large enough
    /// (a first build becomes the base as it is, without copying).
    pub fn fold_if_due(&mut self) {
        let changes = self.delta.len() + self.removed.len();
        if self.base.is_empty() && self.removed.is_empty() {
            // Sized for the rows expected: far fewer came, so give the
            // rest back.
            if self.delta.capacity() > 2 * self.delta.len().max(FOLD_AT_LEAST) {
                self.delta.shrink_to_fit(|entry| entry.hash);
            }
            self.base = Arc::new(std::mem::take(&mut self.delta));
            return;
        }
        if changes <= FOLD_AT_LEAST.max(self.base.len() / FOLD_FRACTION) {
            return;
        }
        let mut base = HashTable::with_capacity(self.base.len() + self.delta.len());
        let kept = self
            .base
            .iter()
            .filter(|entry| !self.removed.contains(&entry.at));
        for entry in kept.chain(self.delta.iter()) {
            base.insert_unique(entry.hash, *entry, |entry| entry.hash);
        }
        self.base = Arc::new(base);
        self.delta = HashTable::new();
        self.removed = HashSet::new();
    }

    /// Heap memory of the index (reported with the acceleration's size).
    pub fn bytes(&self) -> usize {
        self.base.allocation_size() + self.delta.allocation_size() + self.removed.allocation_size()
    }
}

fn to_arrow(error: DataFusionError) -> ArrowError {
    ArrowError::ComputeError(error.to_string())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]))
    }

    fn batch(schema: &SchemaRef, ids: Vec<i64>, names: Vec<&str>) -> RecordBatch {
        RecordBatch::try_new(
            Arc::clone(schema),
            vec![
                Arc::new(Int64Array::from(ids)),
                Arc::new(StringArray::from(names)),
            ],
        )
        .unwrap()
    }

    /// An index sized for the rows of the version it replaces keeps that
    /// size when they come, and gives most of it back when far fewer do.
    #[test]
    fn an_index_sized_for_more_rows_than_came_gives_the_rest_back() {
        let schema = schema();
        let ids: Vec<i64> = (0..20_000).collect();
        let names = vec!["n"; ids.len()];
        let full = batch(&schema, ids, names);
        let mut sized = PrimaryKeyIndex::new(&schema, vec![0], 20_000).unwrap();
        let reserved = sized.bytes();
        sized.insert_batch(0, &full).unwrap();
        sized.fold_if_due();
        assert_eq!(sized.bytes(), reserved, "no growth past the expected rows");

        let mut shrunk = PrimaryKeyIndex::new(&schema, vec![0], 1_000_000).unwrap();
        let few = batch(&schema, vec![1, 2], vec!["a", "b"]);
        shrunk.insert_batch(0, &few).unwrap();
        let before = shrunk.bytes();
        shrunk.fold_if_due();
        assert!(
            shrunk.bytes() * 100 < before,
            "{} of {before}",
            shrunk.bytes()
        );
        assert_eq!(
            shrunk
                .lookup(&[ScalarValue::Int64(Some(2))], |_| &few)
                .unwrap(),
            [RowRef { batch: 0, row: 1 }]
        );
    }

    #[test]
    fn finds_rows_by_single_and_composite_keys() {
        let schema = schema();
        let batches = [
            batch(&schema, vec![1, 2], vec!["a", "b"]),
            batch(&schema, vec![3], vec!["c"]),
        ];
        let mut by_id = PrimaryKeyIndex::new(&schema, vec![0], 3).unwrap();
        let mut by_both = PrimaryKeyIndex::new(&schema, vec![0, 1], 3).unwrap();
        for (number, b) in batches.iter().enumerate() {
            by_id.insert_batch(number as u32, b).unwrap();
            by_both.insert_batch(number as u32, b).unwrap();
        }
        let at = |n: u32| &batches[n as usize];
        assert_eq!(
            by_id.lookup(&[ScalarValue::Int64(Some(3))], at).unwrap(),
            [RowRef { batch: 1, row: 0 }]
        );
        // An int4 parameter against an int8 key.
        assert_eq!(
            by_id.lookup(&[ScalarValue::Int32(Some(2))], at).unwrap(),
            [RowRef { batch: 0, row: 1 }]
        );
        assert!(
            by_id
                .lookup(&[ScalarValue::Int64(Some(9))], at)
                .unwrap()
                .is_empty()
        );
        assert!(
            by_id
                .lookup(&[ScalarValue::Int64(None)], at)
                .unwrap()
                .is_empty()
        );
        let key = [
            ScalarValue::Int64(Some(2)),
            ScalarValue::Utf8(Some("b".into())),
        ];
        assert_eq!(
            by_both.lookup(&key, at).unwrap(),
            [RowRef { batch: 0, row: 1 }]
        );
        let wrong = [
            ScalarValue::Int64(Some(2)),
            ScalarValue::Utf8(Some("a".into())),
        ];
        assert!(by_both.lookup(&wrong, at).unwrap().is_empty());
        assert!(by_id.bytes() > 0);
    }

    #[test]
    fn repeated_keys_return_every_row() {
        let schema = schema();
        let only = batch(&schema, vec![7, 7, 8], vec!["a", "b", "c"]);
        let mut index = PrimaryKeyIndex::new(&schema, vec![0], 3).unwrap();
        index.insert_batch(0, &only).unwrap();
        assert_eq!(
            index
                .lookup(&[ScalarValue::Int64(Some(7))], |_| &only)
                .unwrap()
                .len(),
            2
        );
    }
}
