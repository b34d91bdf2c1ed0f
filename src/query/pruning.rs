//! Skips the batches of an in-memory version that a scan's filters cannot
//! match, judged by each batch's range of values in the filtered columns
//! (`accelerator::ColumnRanges`) with DataFusion's pruning predicate,
//! the same reasoning it applies to Parquet row groups.
//!
//! The filters still run over the batches that are kept (the table reports
//! them as `Inexact`), so pruning only decides how much is read, never
//! what a query answers.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, RecordBatch, UInt64Array};
use datafusion::catalog::Session;
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::utils::conjunction;
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;

use crate::accelerator::{ColumnRanges, TableData};

/// `data`'s partitions without the batches `filters` cannot match, counted
/// in `query_batches_skipped` for `dataset`; `None` when every batch may
/// match (or the filters say nothing of ranges).
pub fn kept_partitions(
    dataset: &str,
    data: &TableData,
    state: &dyn Session,
    filters: &[Expr],
) -> Option<Vec<Vec<RecordBatch>>> {
    if data.batch_count() < 2 {
        return None;
    }
    let predicate = conjunction(filters.iter().cloned())?;
    let schema = DFSchema::try_from(Arc::clone(data.schema())).ok()?;
    // A filter that cannot be planned here (a parameter not bound yet)
    // prunes nothing.
    let physical = state.create_physical_expr(predicate, &schema).ok()?;
    let pruning = PruningPredicateBuilder::new()
        .with_file_schema(Arc::clone(data.schema()))
        .build(physical)?;
    let kept = pruning.prune(&BatchRanges { data }).ok()?;
    let skipped = kept.iter().filter(|keep| !**keep).count();
    if skipped == 0 {
        return None;
    }
    crate::metrics::batches_skipped(dataset, skipped);
    // Batch `number` is the `number / p`-th of partition `number % p`.
    let count = data.partitions().len();
    Some(
        data.partitions()
            .iter()
            .enumerate()
            .map(|(partition, batches)| {
                batches
                    .iter()
                    .enumerate()
                    .filter(|(position, _)| kept[position * count + partition])
                    .map(|(_, batch)| batch.clone())
                    .collect()
            })
            .collect(),
    )
}

/// A version's batches as pruning containers, in load order.
struct BatchRanges<'a> {
    data: &'a TableData,
}

impl BatchRanges<'_> {
    fn ranges(&self, column: &Column) -> Option<Arc<ColumnRanges>> {
        let position = self.data.schema().index_of(column.name()).ok()?;
        self.data.column_ranges(position)
    }
}

impl PruningStatistics for BatchRanges<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.ranges(column).map(|ranges| Arc::clone(&ranges.min))
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.ranges(column).map(|ranges| Arc::clone(&ranges.max))
    }

    fn num_containers(&self) -> usize {
        self.data.batch_count()
    }

    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        self.ranges(column).map(|ranges| Arc::clone(&ranges.nulls))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let rows: UInt64Array = (0..self.data.batch_count() as u32)
            .map(|number| Some(self.data.batch(number).num_rows() as u64))
            .collect();
        Some(Arc::new(rows))
    }

    #[allow(clippy::mutable_key_type)] // the trait's own signature
    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}
