//! PostgreSQL's array containment and overlap operators: `a @> b` (every
//! element of `b` is in `a`), `a <@ b` (`b @> a`) and `a && b` (some
//! element is in both), as scalar functions.
//!
//! DataFusion's `array_has_all` and `array_has_any` count a NULL element
//! as equal to another NULL; PostgreSQL compares elements with `=`, so a
//! NULL element matches nothing (`ARRAY[1, NULL] @> ARRAY[NULL]` is
//! false). Elements are compared in Arrow's row format, which orders and
//! equates values of one type as their type does. Both operands must have
//! one element type, as PostgreSQL's `anyarray` requires.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanBuilder, GenericListArray};
use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::{DFSchema, Result, plan_err};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::BinaryOperator;

const CONTAINS: &str = "pgaccel_array_contains";
const OVERLAPS: &str = "pgaccel_array_overlaps";

/// Plans `@>`, `<@` and `&&` between two arrays (an untyped literal has
/// been read as the other operand's array type by
/// [`super::unknown_literals::ArrayLiterals`], which runs first).
#[derive(Debug, Default)]
pub struct ArrayOperators;

impl ExprPlanner for ArrayOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let list = |side: &Expr| {
            matches!(
                side.get_type(schema),
                Ok(DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..))
            )
        };
        if !list(&expr.left) || !list(&expr.right) {
            return Ok(PlannerResult::Original(expr));
        }
        let (function, args) = match expr.op {
            BinaryOperator::AtArrow => (CONTAINS, vec![expr.left, expr.right]),
            BinaryOperator::ArrowAt => (CONTAINS, vec![expr.right, expr.left]),
            BinaryOperator::PGOverlap => (OVERLAPS, vec![expr.left, expr.right]),
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let udf = Arc::new(ScalarUDF::new_from_impl(ArrayMatch {
            overlap: function == OVERLAPS,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(udf, args),
        )))
    }
}

/// `CONTAINS(a, b)` is `a @> b`; `OVERLAPS(a, b)` is `a && b`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayMatch {
    overlap: bool,
    signature: Signature,
}

/// The element type of a list type.
fn element(data_type: &DataType) -> Option<&DataType> {
    match data_type {
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            Some(item.data_type())
        }
        _ => None,
    }
}

impl ScalarUDFImpl for ArrayMatch {
    fn name(&self) -> &str {
        if self.overlap { OVERLAPS } else { CONTAINS }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    /// Both to a list of one element type; an empty literal (`'{}'`) has
    /// no element type of its own and takes the other's.
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [left, right] = arg_types else {
            return plan_err!("{} takes two arrays", self.name());
        };
        let (Some(a), Some(b)) = (element(left), element(right)) else {
            return plan_err!("{} takes two arrays", self.name());
        };
        // PostgreSQL's operators take two arrays of one type: `integer[] @>
        // bigint[]` does not exist. Text types are one here (Arrow keeps
        // `varchar` as text).
        let string =
            |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
        let common = match (a, b) {
            (DataType::Null, other) | (other, DataType::Null) => Some(other.clone()),
            (a, b) if a == b => Some(a.clone()),
            (a, b) if string(a) && string(b) => Some(DataType::Utf8),
            // `numeric` whatever its precision and scale.
            (DataType::Decimal128(..), DataType::Decimal128(..)) => {
                datafusion::logical_expr::type_coercion::binary::comparison_coercion(a, b)
            }
            _ => None,
        };
        let Some(common) = common.filter(|common| !common.is_nested()) else {
            let operator = if self.overlap { "&&" } else { "@>" };
            return Err(datafusion::common::DataFusionError::External(Box::new(
                super::PgError::new(
                    super::sqlstate::UNDEFINED_FUNCTION,
                    format!(
                        "operator does not exist: {}[] {operator} {}[]",
                        super::json::pg_type_name(a),
                        super::json::pg_type_name(b)
                    ),
                ),
            )));
        };
        let list = DataType::List(Arc::new(Field::new_list_field(common, true)));
        Ok(vec![list.clone(), list])
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let left = arrays[0].as_list::<i32>();
        let right = arrays[1].as_list::<i32>();
        let answers = matches(left, right, self.overlap)?;
        super::functions::columnar(Arc::new(answers) as ArrayRef, scalar)
    }
}

/// Row by row: whether every element of `right` is in `left` (or with
/// `overlap`, whether some is); NULL when either array is.
fn matches(
    left: &GenericListArray<i32>,
    right: &GenericListArray<i32>,
    overlap: bool,
) -> Result<datafusion::arrow::array::BooleanArray> {
    let converter = RowConverter::new(vec![SortField::new(left.value_type())])?;
    let left_rows = converter.convert_columns(&[Arc::clone(left.values())])?;
    let right_rows = converter.convert_columns(&[Arc::clone(right.values())])?;
    let left_values = left.values();
    let right_values = right.values();
    let mut out = BooleanBuilder::with_capacity(left.len());
    let mut have = HashSet::new();
    for row in 0..left.len() {
        if left.is_null(row) || right.is_null(row) {
            out.append_null();
            continue;
        }
        have.clear();
        let offsets = left.value_offsets();
        for at in offsets[row] as usize..offsets[row + 1] as usize {
            if left_values.is_valid(at) {
                have.insert(left_rows.row(at));
            }
        }
        let offsets = right.value_offsets();
        let mut wanted = (offsets[row] as usize..offsets[row + 1] as usize)
            .map(|at| right_values.is_valid(at) && have.contains(&right_rows.row(at)));
        out.append_value(if overlap {
            wanted.any(|found| found)
        } else {
            wanted.all(|found| found)
        });
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::ListArray;
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;

    fn lists(rows: Vec<Option<Vec<Option<i32>>>>) -> ListArray {
        ListArray::from_iter_primitive::<Int32Type, _, _>(rows)
    }

    #[test]
    fn null_elements_match_nothing() {
        let left = lists(vec![
            Some(vec![Some(1), None]),
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(1)]),
            None,
            Some(vec![]),
        ]);
        let right = lists(vec![
            Some(vec![None]),
            Some(vec![Some(2), Some(2)]),
            Some(vec![]),
            Some(vec![Some(1)]),
            Some(vec![]),
        ]);
        let contains = matches(&left, &right, false).unwrap();
        let got: Vec<Option<bool>> = contains.iter().collect();
        assert_eq!(
            got,
            vec![Some(false), Some(true), Some(true), None, Some(true)]
        );
        let overlaps = matches(&left, &right, true).unwrap();
        let got: Vec<Option<bool>> = overlaps.iter().collect();
        assert_eq!(
            got,
            vec![Some(false), Some(true), Some(false), None, Some(false)]
        );
    }
}
