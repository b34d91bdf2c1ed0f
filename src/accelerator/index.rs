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
//! which handles every column type and composite keys alike. The index
//! stores only each row's hash (32 bits of it) and location, 12 bytes a row
//! and no allocation per key; a lookup compares the key columns of every
//! candidate with its hash, so a hash collision can never return a wrong
//! row.
//!
//! The base is an array sorted by hash with a directory on the hash's top
//! bits, not a hash table: a hash table keeps a quarter to a half of its
//! slots empty, which for a table of a few million rows is more memory than
//! the rows' own entries. A lookup reads the directory, then binary-searches
//! a run of about [`PER_BUCKET`] entries.

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
    hash: u32,
    at: RowRef,
}

/// The hash an index keeps of a key: the top half of DataFusion's.
fn short(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// The 32 bits kept spread over 64 for the hash table of the delta, which
/// picks slots by the low bits and tags them with the top ones.
fn spread(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Entries per directory slot of a sorted base, on average.
const PER_BUCKET: usize = 32;

/// Entries sorted by hash, with `starts[p]` the first entry whose hash's
/// top `bits` bits are `p` or more (and one more slot: the length).
#[derive(Debug, Clone, Default)]
struct Sorted {
    entries: Vec<Entry>,
    starts: Vec<usize>,
    bits: u32,
}

impl Sorted {
    fn new(mut entries: Vec<Entry>) -> Sorted {
        entries.sort_unstable_by_key(|entry| entry.hash);
        let bits = match entries.len() / PER_BUCKET {
            0 => 0,
            buckets => buckets.ilog2().min(24),
        };
        let mut starts = Vec::with_capacity((1 << bits) + 1);
        let mut at = 0;
        for prefix in 0..1u64 << bits {
            while at < entries.len() && Self::prefix_of(entries[at].hash, bits) < prefix {
                at += 1;
            }
            starts.push(at);
        }
        starts.push(entries.len());
        Sorted {
            entries,
            starts,
            bits,
        }
    }

    fn prefix_of(hash: u32, bits: u32) -> u64 {
        u64::from(hash) >> (32 - bits)
    }

    /// The entries with this hash.
    fn with_hash(&self, hash: u32) -> &[Entry] {
        if self.entries.is_empty() {
            return &[];
        }
        let prefix = Self::prefix_of(hash, self.bits) as usize;
        let bucket = &self.entries[self.starts[prefix]..self.starts[prefix + 1]];
        let from = bucket.partition_point(|entry| entry.hash < hash);
        let to = bucket.partition_point(|entry| entry.hash <= hash);
        &bucket[from..to]
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
            + self.starts.capacity() * std::mem::size_of::<usize>()
    }
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
    base: Arc<Sorted>,
    /// Rows of a first build, before its fold makes them the base: kept
    /// in an array, so that building costs no more than the base will.
    building: Vec<Entry>,
    /// Rows indexed since the last fold, once there is a base.
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
            base: Arc::new(Sorted::default()),
            building: Vec::with_capacity(rows),
            delta: HashTable::new(),
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
            let entry = Entry {
                hash: short(hash),
                at: RowRef {
                    batch: batch_number,
                    row: row as u32,
                },
            };
            if self.base.is_empty() && self.removed.is_empty() && self.delta.is_empty() {
                self.building.push(entry);
            } else {
                self.delta
                    .insert_unique(spread(entry.hash), entry, |entry| spread(entry.hash));
            }
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
        // The batch's rows are all in the base (never rewritten since the
        // last fold), all in the delta, or all in a first build.
        if !self.building.is_empty() {
            let before = self.building.len();
            self.building.retain(|entry| entry.at.batch != batch_number);
            if self.building.len() < before {
                return Ok(());
            }
        }
        let keys = self.key_columns(batch);
        let hashes = self.hashes(&keys, batch.num_rows())?;
        for (row, hash) in hashes.into_iter().enumerate() {
            let at = RowRef {
                batch: batch_number,
                row: row as u32,
            };
            match self
                .delta
                .find_entry(spread(short(hash)), |entry| entry.at == at)
            {
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
                for entry in self.candidates(short(hash)) {
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
        let hash = short(self.hashes(&probe, 1)?[0]);
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

    /// The live entries with this hash, in the delta and the base (and a
    /// first build not yet folded, read through: no lookup reaches an index
    /// before its version is published, and publishing folds it).
    fn candidates(&self, hash: u32) -> impl Iterator<Item = &Entry> {
        self.delta
            .iter_hash(spread(hash))
            .chain(
                self.base
                    .with_hash(hash)
                    .iter()
                    .filter(|entry| !self.removed.contains(&entry.at)),
            )
            .chain(self.building.iter())
            .filter(move |entry| entry.hash == hash)
    }

    /// Folds the changes into a new base when they have grown large enough
    /// (a first build becomes the base as it is, sorted in place).
    pub fn fold_if_due(&mut self) {
        if self.base.is_empty() && self.removed.is_empty() {
            let mut entries = std::mem::take(&mut self.building);
            entries.extend(self.delta.drain());
            // Sized for the rows expected: far fewer came, so give the
            // rest back.
            if entries.capacity() > 2 * entries.len().max(FOLD_AT_LEAST) {
                entries.shrink_to_fit();
            }
            self.base = Arc::new(Sorted::new(entries));
            return;
        }
        let changes = self.delta.len() + self.removed.len() + self.building.len();
        if changes <= FOLD_AT_LEAST.max(self.base.len() / FOLD_FRACTION) {
            return;
        }
        let mut entries =
            Vec::with_capacity(self.base.len() + self.delta.len() + self.building.len());
        let kept = self
            .base
            .entries
            .iter()
            .filter(|entry| !self.removed.contains(&entry.at));
        entries.extend(kept.chain(self.delta.iter()).chain(self.building.iter()));
        self.base = Arc::new(Sorted::new(entries));
        self.building = Vec::new();
        self.delta = HashTable::new();
        self.removed = HashSet::new();
    }

    /// Heap memory of the index (reported with the acceleration's size).
    pub fn bytes(&self) -> usize {
        self.base.bytes()
            + self.building.capacity() * std::mem::size_of::<Entry>()
            + self.delta.allocation_size()
            + self.removed.allocation_size()
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
        // The entries stay where they were built; the directory is a
        // word per PER_BUCKET of them.
        let directory = (20_000 / PER_BUCKET).next_power_of_two() * std::mem::size_of::<usize>();
        assert!(
            sized.bytes() <= reserved + directory,
            "no growth past the expected rows: {} of {reserved}",
            sized.bytes()
        );
        assert_eq!(reserved, 20_000 * 12, "12 bytes a row");

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

    /// Every key of a large base is found, before and after changes that
    /// stay in the delta and changes that fold into a new base.
    #[test]
    fn keys_are_found_through_the_directory_and_after_folds() {
        let schema = schema();
        let rows = 50_000;
        let batches: Vec<RecordBatch> = (0..10)
            .map(|part| {
                let ids: Vec<i64> = (part * 5_000..(part + 1) * 5_000).collect();
                let names = vec!["n"; ids.len()];
                batch(&schema, ids, names)
            })
            .collect();
        let mut index = PrimaryKeyIndex::new(&schema, vec![0], rows as usize).unwrap();
        for (number, b) in batches.iter().enumerate() {
            index.insert_batch(number as u32, b).unwrap();
        }
        index.fold_if_due();
        assert!(
            index.base.bits > 8,
            "a directory of {} bits",
            index.base.bits
        );
        let mut held = batches.clone();
        let found = |index: &PrimaryKeyIndex, held: &[RecordBatch], id: i64| {
            index
                .lookup(&[ScalarValue::Int64(Some(id))], |n| &held[n as usize])
                .unwrap()
        };
        for id in (0..rows).step_by(7) {
            let at = found(&index, &held, id);
            assert_eq!(
                at,
                [RowRef {
                    batch: (id / 5_000) as u32,
                    row: (id % 5_000) as u32
                }]
            );
        }
        assert!(found(&index, &held, rows).is_empty());
        // A small change stays in the delta; batch 1 is replaced by
        // fewer rows with new ids.
        index.remove_batch(1, &held[1]).unwrap();
        held[1] = batch(&schema, vec![rows, rows + 1], vec!["a", "b"]);
        index.insert_batch(1, &held[1]).unwrap();
        index.fold_if_due();
        assert!(!index.removed.is_empty(), "not folded yet");
        assert!(found(&index, &held, 5_500).is_empty());
        assert_eq!(
            found(&index, &held, rows + 1),
            [RowRef { batch: 1, row: 1 }]
        );
        assert_eq!(found(&index, &held, 10_001), [RowRef { batch: 2, row: 1 }]);
        // A large change folds.
        for number in [2, 3] {
            index.remove_batch(number, &held[number as usize]).unwrap();
        }
        index.fold_if_due();
        assert!(index.removed.is_empty() && index.delta.is_empty(), "folded");
        assert_eq!(index.base.len(), 35_002);
        assert!(found(&index, &held, 15_000).is_empty());
        assert_eq!(found(&index, &held, rows), [RowRef { batch: 1, row: 0 }]);
        assert_eq!(
            found(&index, &held, 49_999),
            [RowRef {
                batch: 9,
                row: 4_999
            }]
        );
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
