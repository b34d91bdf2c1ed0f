//! Each stored batch's range of values in a column: its minimum, maximum
//! and NULL count. A scan of an in-memory version skips the batches whose
//! ranges a filter cannot match (see `query::table`), which pays when rows
//! are clustered by the filtered column: appended in time order, or sorted
//! by `acceleration.sort_by` at each full refresh.
//!
//! A column's ranges are computed the first time a filter needs them and
//! kept with the version, which never changes; min and max kernels read
//! a column once.

use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;

/// One column's minimum, maximum and NULL count in each batch of a version,
/// in load order. A batch holding only NULLs has NULL as its minimum and
/// maximum, which prunes nothing.
#[derive(Debug)]
pub struct ColumnRanges {
    pub min: ArrayRef,
    pub max: ArrayRef,
    /// `UInt64`.
    pub nulls: ArrayRef,
}

/// The ranges of a version's columns, each computed once, on first use.
#[derive(Debug, Clone)]
pub struct Ranges {
    columns: Vec<OnceLock<Option<Arc<ColumnRanges>>>>,
}

impl Ranges {
    pub fn new(columns: usize) -> Self {
        Ranges {
            columns: (0..columns).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The ranges of column `column` over `batches` (every batch of the
    /// version, in load order); `None` for a type whose ranges are not kept.
    pub fn column<'a>(
        &self,
        column: usize,
        data_type: &DataType,
        batches: impl Iterator<Item = &'a RecordBatch>,
    ) -> Option<Arc<ColumnRanges>> {
        self.columns
            .get(column)?
            .get_or_init(|| {
                has_ranges(data_type)
                    .then(|| compute(column, data_type, batches).ok())
                    .flatten()
                    .map(Arc::new)
            })
            .clone()
    }
}

/// Types whose minimum and maximum order values as the filters DataFusion
/// evaluates on them do (text by its bytes, as DataFusion compares it).
/// Floats are left out: NaN sorts above every number in one and is
/// unordered in the other. A column's ranges are only computed when a
/// filter compares it with a value, so text columns cost nothing unless
/// such a filter names them.
fn has_ranges(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
    )
}

fn compute<'a>(
    column: usize,
    data_type: &DataType,
    batches: impl Iterator<Item = &'a RecordBatch>,
) -> Result<ColumnRanges> {
    let mut mins = Vec::new();
    let mut maxes = Vec::new();
    let mut nulls = Vec::new();
    for batch in batches {
        let values = [Arc::clone(batch.column(column))];
        let mut min = MinAccumulator::try_new(data_type)?;
        min.update_batch(&values)?;
        mins.push(min.evaluate()?);
        let mut max = MaxAccumulator::try_new(data_type)?;
        max.update_batch(&values)?;
        maxes.push(max.evaluate()?);
        nulls.push(values[0].null_count() as u64);
    }
    let array = |values: Vec<ScalarValue>| -> Result<ArrayRef> {
        if values.is_empty() {
            return Ok(datafusion::arrow::array::new_empty_array(data_type));
        }
        ScalarValue::iter_to_array(values)
    };
    Ok(ColumnRanges {
        min: array(mins)?,
        max: array(maxes)?,
        nulls: Arc::new(UInt64Array::from(nulls)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use datafusion::arrow::array::{Array, Float64Array, Int64Array};
    use datafusion::arrow::datatypes::{Field, Schema};

    fn batch(values: Vec<Option<i64>>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("n", DataType::Int64, true),
            Field::new("f", DataType::Float64, true),
        ]));
        let floats = Float64Array::from(vec![1.0; values.len()]);
        RecordBatch::try_new(
            schema,
            vec![Arc::new(Int64Array::from(values)), Arc::new(floats)],
        )
        .unwrap()
    }

    #[test]
    fn each_batch_has_its_range_and_null_count() {
        let batches = [
            batch(vec![Some(5), Some(-2), None]),
            batch(vec![None, None]),
            batch(vec![Some(7)]),
        ];
        let ranges = Ranges::new(2);
        let column = ranges
            .column(0, &DataType::Int64, batches.iter())
            .expect("integers have ranges");
        let min = column.min.as_any().downcast_ref::<Int64Array>().unwrap();
        let max = column.max.as_any().downcast_ref::<Int64Array>().unwrap();
        let nulls = column.nulls.as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(min.iter().collect::<Vec<_>>(), [Some(-2), None, Some(7)]);
        assert_eq!(max.iter().collect::<Vec<_>>(), [Some(5), None, Some(7)]);
        assert_eq!(nulls.values().to_vec(), [1, 2, 0]);
        // Kept: a second call does not read the batches.
        let again = ranges
            .column(0, &DataType::Int64, std::iter::empty())
            .unwrap();
        assert!(Arc::ptr_eq(&column, &again));
        assert!(
            ranges
                .column(1, &DataType::Float64, batches.iter())
                .is_none(),
            "floats have no kept ranges"
        );
        assert!(has_ranges(&DataType::Date32));
        assert!(has_ranges(&DataType::Utf8View));
        assert!(!has_ranges(&DataType::Boolean));
    }
}
