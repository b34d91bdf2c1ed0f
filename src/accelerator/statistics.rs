//! Column statistics of one published version, for DataFusion's estimates:
//! exact null counts, minimum and maximum, and approximate distinct counts
//! of integer, date and time columns.
//!
//! Without them DataFusion knows only row counts. It then estimates the
//! rows out of a join as the smaller input's, picks the wrong side of a
//! hash join to build (a million-row intermediate instead of a 25-row
//! `nation`), and guesses every filter at a fifth of its input. With them,
//! join outputs follow the keys' distinct counts and range filters follow
//! the columns' ranges.
//!
//! They are computed once per version, after it is published, on a
//! low-priority thread, so neither the refresh nor the queries wait for
//! them; a query planned before they are ready is planned without them.
//! A revision by a change stream or an append keeps its predecessor's, as
//! estimates, until its rows have drifted by a tenth.
//! The minimum, maximum and distinct counts come from DataFusion's own
//! `min`, `max` and `approx_distinct` accumulators. The range is marked
//! inexact all the same: it only steers estimates, and DataFusion answers
//! `min()` and `max()` from exact statistics without reading the rows,
//! which would bypass pgaccel's own ordering of values such as NaN.

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue};
use datafusion::error::Result;
use datafusion::functions_aggregate::approx_distinct::approx_distinct_udaf;
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::physical_expr::expressions::Column;

/// Whether column statistics are computed and used: always, unless the
/// environment sets `PGACCEL_COLUMN_STATISTICS=off`, which exists to
/// measure what they change (plans and times with and without them).
pub fn enabled() -> bool {
    static ENABLED: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        std::env::var("PGACCEL_COLUMN_STATISTICS").map_or(true, |value| value != "off")
    });
    *ENABLED
}

/// The statistics of one version.
#[derive(Debug)]
pub struct TableStatistics {
    /// In schema order.
    pub columns: Vec<ColumnStatistics>,
    /// The rows they were computed over.
    pub rows: usize,
}

impl TableStatistics {
    /// These statistics as estimates for a revision of the rows they were
    /// computed over: the null counts are no longer exact.
    pub fn estimated(&self) -> TableStatistics {
        TableStatistics {
            columns: self
                .columns
                .iter()
                .map(|column| {
                    let mut column = column.clone();
                    column.null_count = column.null_count.to_inexact();
                    column
                })
                .collect(),
            rows: self.rows,
        }
    }
}

/// Each column's statistics over `batches`, in schema order. A statistic
/// DataFusion cannot compute for a column's type is left unknown.
pub fn compute(schema: &Schema, batches: &[RecordBatch]) -> Vec<ColumnStatistics> {
    (0..schema.fields().len())
        .map(|index| {
            let columns: Vec<&ArrayRef> = batches.iter().map(|batch| batch.column(index)).collect();
            column(schema.field(index), &columns)
        })
        .collect()
}

fn column(field: &Field, columns: &[&ArrayRef]) -> ColumnStatistics {
    let nulls: usize = columns.iter().map(|array| array.null_count()).sum();
    let mut statistics = ColumnStatistics::new_unknown();
    statistics.null_count = Precision::Exact(nulls);
    if matches!(
        field.data_type(),
        DataType::Boolean | DataType::Null | DataType::List(_) | DataType::Struct(_)
    ) {
        return statistics;
    }
    let value = |accumulator: Result<Box<dyn Accumulator>>| {
        let mut accumulator = accumulator.ok()?;
        for array in columns {
            accumulator.update_batch(&[Arc::clone(array)]).ok()?;
        }
        accumulator.evaluate().ok().filter(|value| !value.is_null())
    };
    let data_type = field.data_type();
    if let Some(min) =
        value(MinAccumulator::try_new(data_type).map(|a| Box::new(a) as Box<dyn Accumulator>))
    {
        statistics.min_value = Precision::Inexact(min);
    }
    if let Some(max) =
        value(MaxAccumulator::try_new(data_type).map(|a| Box::new(a) as Box<dyn Accumulator>))
    {
        statistics.max_value = Precision::Inexact(max);
    }
    // Join keys are integers, dates and times; hashing every string of a
    // wide text column would cost more than the estimate is worth.
    let fixed_width = data_type.is_integer() || data_type.is_temporal();
    if fixed_width && let Some(ScalarValue::UInt64(Some(distinct))) = value(approx_distinct(field))
    {
        statistics.distinct_count = Precision::Inexact(distinct as usize);
    }
    statistics
}

/// An `approx_distinct` accumulator over a column of `field`'s type.
fn approx_distinct(field: &Field) -> Result<Box<dyn Accumulator>> {
    let field = Arc::new(field.clone().with_name("value"));
    let schema = Schema::new(vec![Arc::clone(&field)]);
    let input: Arc<dyn datafusion::physical_expr::PhysicalExpr> = Arc::new(Column::new("value", 0));
    approx_distinct_udaf().accumulator(AccumulatorArgs {
        return_field: Arc::new(Field::new("approx_distinct", DataType::UInt64, false)),
        schema: &schema,
        ignore_nulls: false,
        order_bys: &[],
        is_reversed: false,
        name: "approx_distinct(value)",
        is_distinct: false,
        exprs: &[input],
        expr_fields: &[field],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Int64Array, StringArray};

    #[test]
    fn nulls_range_and_distinct_values_of_each_column() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, true),
        ]));
        let batch = |ids: Vec<Option<i64>>, names: Vec<Option<&str>>| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(Int64Array::from(ids)),
                    Arc::new(StringArray::from(names)),
                ],
            )
            .unwrap()
        };
        let batches = [
            batch(
                vec![Some(5), None, Some(-3)],
                vec![Some("b"), Some("a"), None],
            ),
            batch(
                vec![Some(5), Some(40), Some(7)],
                vec![Some("b"), Some("zz"), None],
            ),
        ];
        let statistics = compute(&schema, &batches);
        assert_eq!(statistics[0].null_count, Precision::Exact(1));
        assert_eq!(
            statistics[0].min_value,
            Precision::Inexact(ScalarValue::Int64(Some(-3)))
        );
        assert_eq!(
            statistics[0].max_value,
            Precision::Inexact(ScalarValue::Int64(Some(40)))
        );
        assert_eq!(statistics[0].distinct_count, Precision::Inexact(4));
        assert_eq!(statistics[1].null_count, Precision::Exact(2));
        assert_eq!(
            statistics[1].min_value,
            Precision::Inexact(ScalarValue::Utf8(Some("a".to_owned())))
        );
        assert_eq!(
            statistics[1].max_value,
            Precision::Inexact(ScalarValue::Utf8(Some("zz".to_owned())))
        );
        assert_eq!(
            statistics[1].distinct_count,
            Precision::Absent,
            "text is not counted"
        );
    }

    #[test]
    fn an_all_null_column_has_no_range() {
        let schema = Schema::new(vec![Field::new("id", DataType::Int64, true)]);
        let batch = RecordBatch::try_new(
            Arc::new(schema.clone()),
            vec![Arc::new(Int64Array::from(vec![None, None]))],
        )
        .unwrap();
        let statistics = compute(&schema, &[batch]);
        assert_eq!(statistics[0].null_count, Precision::Exact(2));
        assert_eq!(statistics[0].min_value, Precision::Absent);
        assert_eq!(statistics[0].max_value, Precision::Absent);
    }
}
