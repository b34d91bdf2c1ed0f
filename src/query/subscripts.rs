//! `array[i]` as PostgreSQL reads it: elements count from 1, and an index
//! below 1 (or past the end) is NULL. DataFusion counts a negative index
//! from the end (`tags[-1]` would be the last tag), and plans
//! `(array_agg(x ORDER BY y))[i]` as `nth_value(x, i)`, which fails for
//! pgaccel's `int4` literals and also counts from the end below 0.
//!
//! Both become `array_element(array, CASE WHEN i >= 1 THEN i END)`: the
//! aggregate is collected as an array and the element read from it.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawFieldAccessExpr};
use datafusion::logical_expr::{ExprSchemable, GetFieldAccess, lit, when};

#[derive(Debug)]
pub struct ArraySubscripts;

impl ExprPlanner for ArraySubscripts {
    fn plan_field_access(
        &self,
        expr: RawFieldAccessExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawFieldAccessExpr>> {
        let GetFieldAccess::ListIndex { key } = &expr.field_access else {
            return Ok(PlannerResult::Original(expr));
        };
        // Arrays only: a map's key is no position.
        let array = matches!(
            expr.expr.get_type(schema),
            Ok(DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..))
        );
        if !array {
            return Ok(PlannerResult::Original(expr));
        }
        let index = (**key).clone();
        let position = when(index.clone().gt_eq(lit(1i64)), index).end()?;
        Ok(PlannerResult::Planned(
            datafusion::functions_nested::expr_fn::array_element(expr.expr, position),
        ))
    }
}
