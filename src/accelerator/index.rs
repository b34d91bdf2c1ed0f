//! The primary-key index of an acceleration: key → the row holding it.
//!
//! Invariant: an index is built from exactly the batches of the
//! [`super::TableData`] it belongs to, before that version is published, and
//! never changes afterwards. Every write path keeps it so by building a new
//! version (full refresh today; append/upsert and retention deletes must
//! rebuild or extend the index of the version they publish).
//!
//! Keys are encoded with Arrow's row format, which handles every column type
//! and composite keys alike and compares by bytes.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::ScalarValue;

/// Where a row lives: the batch's position in load order and the row in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowRef {
    pub batch: u32,
    pub row: u32,
}

#[derive(Debug)]
pub struct PrimaryKeyIndex {
    /// Key columns, by position in the table schema.
    columns: Vec<usize>,
    types: Vec<DataType>,
    converter: RowConverter,
    rows: HashMap<Box<[u8]>, RowRef>,
    /// Further rows of keys that occur more than once (a declared key the
    /// data does not honour): lookups still return every matching row.
    repeated: HashMap<Box<[u8]>, Vec<RowRef>>,
}

impl PrimaryKeyIndex {
    pub fn new(schema: &SchemaRef, columns: Vec<usize>) -> Result<Self, ArrowError> {
        let types: Vec<DataType> = columns
            .iter()
            .map(|c| schema.field(*c).data_type().clone())
            .collect();
        let converter = RowConverter::new(types.iter().cloned().map(SortField::new).collect())?;
        Ok(PrimaryKeyIndex {
            columns,
            types,
            converter,
            rows: HashMap::new(),
            repeated: HashMap::new(),
        })
    }

    pub fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Indexes the rows of the `batch_number`-th batch.
    pub fn insert_batch(
        &mut self,
        batch_number: u32,
        batch: &RecordBatch,
    ) -> Result<(), ArrowError> {
        let keys: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|c| batch.column(*c).clone())
            .collect();
        let encoded = self.converter.convert_columns(&keys)?;
        for row in 0..batch.num_rows() {
            // A NULL key matches no equality lookup, so it is not indexed.
            if keys.iter().any(|key| key.is_null(row)) {
                continue;
            }
            let location = RowRef {
                batch: batch_number,
                row: row as u32,
            };
            let key: Box<[u8]> = encoded.row(row).as_ref().into();
            if let Some(existing) = self.rows.get(&key) {
                let first = *existing;
                self.repeated
                    .entry(key)
                    .or_insert_with(|| vec![first])
                    .push(location);
            } else {
                self.rows.insert(key, location);
            }
        }
        Ok(())
    }

    /// The rows whose key equals `key` (one value per key column, in key
    /// order). Values of another type are cast to the column's type; a value
    /// that cannot be represented in it matches nothing.
    pub fn lookup(&self, key: &[ScalarValue]) -> Result<Vec<RowRef>, ArrowError> {
        if key.len() != self.types.len() || key.iter().any(ScalarValue::is_null) {
            return Ok(Vec::new());
        }
        let mut arrays = Vec::with_capacity(key.len());
        for (value, data_type) in key.iter().zip(&self.types) {
            let array = value
                .to_array_of_size(1)
                .map_err(|e| ArrowError::ComputeError(e.to_string()))?;
            let array = if array.data_type() == data_type {
                array
            } else {
                match cast(&array, data_type) {
                    Ok(cast) if !cast.is_null(0) => cast,
                    _ => return Ok(Vec::new()),
                }
            };
            arrays.push(array);
        }
        let encoded = self.converter.convert_columns(&arrays)?;
        let probe = encoded.row(0);
        let bytes: &[u8] = probe.as_ref();
        if let Some(all) = self.repeated.get(bytes) {
            return Ok(all.clone());
        }
        Ok(self.rows.get(bytes).copied().into_iter().collect())
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use datafusion::arrow::array::{Int32Array, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Schema};

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
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let mut by_id = PrimaryKeyIndex::new(&schema, vec![0]).unwrap();
        let mut by_both = PrimaryKeyIndex::new(&schema, vec![0, 1]).unwrap();
        for (number, b) in [
            batch(&schema, vec![1, 2], vec!["a", "b"]),
            batch(&schema, vec![3], vec!["c"]),
        ]
        .iter()
        .enumerate()
        {
            by_id.insert_batch(number as u32, b).unwrap();
            by_both.insert_batch(number as u32, b).unwrap();
        }
        assert_eq!(
            by_id.lookup(&[ScalarValue::Int64(Some(3))]).unwrap(),
            [RowRef { batch: 1, row: 0 }]
        );
        // An int4 parameter against an int8 key.
        let found = by_id.lookup(&[ScalarValue::Int32(Some(2))]).unwrap();
        assert_eq!(found, [RowRef { batch: 0, row: 1 }]);
        assert!(
            by_id
                .lookup(&[ScalarValue::Int64(Some(9))])
                .unwrap()
                .is_empty()
        );
        assert!(
            by_id
                .lookup(&[ScalarValue::Int64(None)])
                .unwrap()
                .is_empty()
        );
        let key = [
            ScalarValue::Int64(Some(2)),
            ScalarValue::Utf8(Some("b".into())),
        ];
        assert_eq!(by_both.lookup(&key).unwrap(), [RowRef { batch: 0, row: 1 }]);
        let wrong = [
            ScalarValue::Int64(Some(2)),
            ScalarValue::Utf8(Some("a".into())),
        ];
        assert!(by_both.lookup(&wrong).unwrap().is_empty());
        let _ = Int32Array::from(vec![1]);
    }

    #[test]
    fn repeated_keys_return_every_row() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("name", DataType::Utf8, false),
        ]));
        let mut index = PrimaryKeyIndex::new(&schema, vec![0]).unwrap();
        index
            .insert_batch(0, &batch(&schema, vec![7, 7, 8], vec!["a", "b", "c"]))
            .unwrap();
        assert_eq!(
            index.lookup(&[ScalarValue::Int64(Some(7))]).unwrap().len(),
            2
        );
    }
}
