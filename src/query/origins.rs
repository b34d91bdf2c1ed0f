//! Where a result column comes from: for a column that is a dataset's
//! column passed through (projections, filters, sorts, limits, aliases and
//! joins keep it), the dataset's table OID and attribute number. The row
//! description carries them, as PostgreSQL's does, so drivers can tell the
//! base table of a result column (JDBC `getBaseTableName`, node-postgres'
//! `tableID`/`columnID`).

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::default_table_source::source_as_provider;
use datafusion::common::Column;
use datafusion::logical_expr::{Expr, JoinType, LogicalPlan};

use super::table::AcceleratedTable;
use super::zero_results::ZeroResultsTable;

/// Field metadata keys of a result column's origin.
pub const TABLE_OID_METADATA: &str = "pgaccel.table_oid";
pub const ATTNUM_METADATA: &str = "pgaccel.attnum";

/// The plan's output schema, each column that comes straight from a dataset
/// marked with its table OID and attribute number.
pub fn described_schema(plan: &LogicalPlan) -> SchemaRef {
    let schema = plan.schema().as_arrow();
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(index, field)| match origin(plan, index) {
            Some((table, attnum)) => {
                let mut metadata = field.metadata().clone();
                metadata.insert(TABLE_OID_METADATA.to_owned(), table.to_string());
                metadata.insert(ATTNUM_METADATA.to_owned(), attnum.to_string());
                field.as_ref().clone().with_metadata(metadata)
            }
            None => field.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// (table OID, attribute number) of output column `index` of `plan`.
fn origin(plan: &LogicalPlan, index: usize) -> Option<(i32, i16)> {
    match plan {
        LogicalPlan::Projection(projection) => {
            let column = passed_column(projection.expr.get(index)?)?;
            let input_index = projection.input.schema().index_of_column(column).ok()?;
            origin(&projection.input, input_index)
        }
        LogicalPlan::Filter(filter) => origin(&filter.input, index),
        LogicalPlan::Sort(sort) => origin(&sort.input, index),
        LogicalPlan::Limit(limit) => origin(&limit.input, index),
        LogicalPlan::SubqueryAlias(alias) => origin(&alias.input, index),
        LogicalPlan::Repartition(repartition) => origin(&repartition.input, index),
        LogicalPlan::Join(join) => {
            let left = join.left.schema().fields().len();
            match join.join_type {
                JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => {
                    origin(&join.left, index)
                }
                JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => {
                    origin(&join.right, index)
                }
                _ if index < left => origin(&join.left, index),
                _ => origin(&join.right, index - left),
            }
        }
        LogicalPlan::TableScan(scan) => {
            let provider = source_as_provider(&scan.source).ok()?;
            let accelerated = match provider.downcast_ref::<AcceleratedTable>() {
                Some(table) => table,
                None => provider.downcast_ref::<ZeroResultsTable>()?.accelerated()?,
            };
            let field = match &scan.projection {
                Some(projection) => *projection.get(index)?,
                None => index,
            };
            let (schema, table) = accelerated.served_name()?;
            Some((
                super::system::oids::relation(&schema, &table),
                i16::try_from(field + 1).ok()?,
            ))
        }
        _ => None,
    }
}

/// The column an expression passes through unchanged (possibly renamed).
fn passed_column(expr: &Expr) -> Option<&Column> {
    match expr {
        Expr::Column(column) => Some(column),
        Expr::Alias(alias) => passed_column(&alias.expr),
        _ => None,
    }
}
