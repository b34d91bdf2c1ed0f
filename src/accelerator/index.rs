//! The primary-key index of an acceleration: key → the rows holding it.
//!
//! Invariant: an index is built from exactly the batches of the
//! [`super::TableData`] it belongs to, before that version is published, and
//! never changes afterwards. Every write path keeps it so by building a new
//! version (full refresh today; append/upsert and retention deletes must
//! rebuild or extend the index of the version they publish).
//!
//! Keys are encoded with Arrow's row format, which handles every column type
//! and composite keys alike. The table stores only each row's hash and
//! location (16 bytes a row, no allocation per key); a lookup verifies the
//! candidates of its hash against the stored rows, so a hash collision can
//! never return a wrong row.

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::ScalarValue;
use hashbrown::{DefaultHashBuilder, HashTable};
use std::hash::BuildHasher;

/// Where a row lives: the batch's position in load order and the row in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRef {
    pub batch: u32,
    pub row: u32,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    hash: u64,
    at: RowRef,
}

#[derive(Debug)]
pub struct PrimaryKeyIndex {
    /// Key columns, by position in the table schema.
    columns: Vec<usize>,
    types: Vec<DataType>,
    converter: RowConverter,
    hasher: DefaultHashBuilder,
    /// Every row with a non-NULL key; a key the data repeats (a declared key
    /// it does not honour) has several entries and lookups return them all.
    entries: HashTable<Entry>,
}

impl PrimaryKeyIndex {
    pub fn new(schema: &SchemaRef, columns: Vec<usize>, rows: usize) -> Result<Self, ArrowError> {
        let types: Vec<DataType> = columns
            .iter()
            .map(|c| schema.field(*c).data_type().clone())
            .collect();
        let converter = RowConverter::new(types.iter().cloned().map(SortField::new).collect())?;
        Ok(PrimaryKeyIndex {
            columns,
            types,
            converter,
            hasher: DefaultHashBuilder::default(),
            entries: HashTable::with_capacity(rows),
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
        let encoded = self.converter.convert_columns(&keys)?;
        for row in 0..batch.num_rows() {
            // A NULL key matches no equality lookup, so it is not indexed.
            if keys.iter().any(|key| key.is_null(row)) {
                continue;
            }
            let hash = self.hasher.hash_one(encoded.row(row).as_ref());
            let at = RowRef {
                batch: batch_number,
                row: row as u32,
            };
            self.entries
                .insert_unique(hash, Entry { hash, at }, |entry| entry.hash);
        }
        Ok(())
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
        let Some(probe) = self.encode_probe(key)? else {
            return Ok(Vec::new());
        };
        let hash = self.hasher.hash_one(probe.as_slice());
        let mut found = Vec::new();
        for entry in self.entries.iter_hash(hash) {
            if entry.hash == hash && self.key_bytes(batch(entry.at.batch), entry.at.row)? == probe {
                found.push(entry.at);
            }
        }
        Ok(found)
    }

    fn encode_probe(&self, key: &[ScalarValue]) -> Result<Option<Vec<u8>>, ArrowError> {
        if key.len() != self.types.len() || key.iter().any(ScalarValue::is_null) {
            return Ok(None);
        }
        let mut arrays = Vec::with_capacity(key.len());
        for (value, data_type) in key.iter().zip(&self.types) {
            let array = value
                .to_array_of_size(1)
                .map_err(|e| ArrowError::ComputeError(e.to_string()))?;
            if array.data_type() == data_type {
                arrays.push(array);
                continue;
            }
            match cast(&array, data_type) {
                Ok(cast) if !cast.is_null(0) => arrays.push(cast),
                _ => return Ok(None),
            }
        }
        let encoded = self.converter.convert_columns(&arrays)?;
        Ok(Some(encoded.row(0).as_ref().to_vec()))
    }

    fn key_bytes(&self, batch: &RecordBatch, row: u32) -> Result<Vec<u8>, ArrowError> {
        let keys: Vec<ArrayRef> = self
            .key_columns(batch)
            .iter()
            .map(|key| key.slice(row as usize, 1))
            .collect();
        let encoded = self.converter.convert_columns(&keys)?;
        Ok(encoded.row(0).as_ref().to_vec())
    }

    /// Heap memory of the index (reported with the acceleration's size).
    pub fn bytes(&self) -> usize {
        self.entries.allocation_size()
    }
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
