//! Sums, differences and products of `numeric` values (Arrow's
//! `Decimal128`) without checking every row for overflow, where the
//! batch's largest magnitudes show that no row can overflow.
//!
//! Arrow's kernels check each row's 128-bit product or sum for overflow,
//! which costs far more than the arithmetic: TPC-H Q1 spent about a third
//! of its time there (`l_extendedprice * (1 - l_discount) * (1 + l_tax)`
//! over six million rows). [`FastDecimals`] runs after DataFusion's
//! physical optimizer and replaces each such operator in filters,
//! projections and aggregate arguments with a [`DecimalArithmetic`]. It
//! bounds each operand by its largest magnitude in the batch; when the
//! bounds' result fits in 128 bits, no row's can overflow and the batch is
//! computed without checks (with one 64-bit multiplication a row where the
//! operands fit in 64 bits). Otherwise the batch goes to Arrow's checked
//! kernel, which raises the same error as before (22003). The answer and
//! its type are Arrow's either way.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Datum, PrimitiveArray};
use datafusion::arrow::buffer::{NullBuffer, ScalarBuffer};
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::{DataType, Decimal128Type, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, Operator};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::BinaryExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::aggregates::AggregateExec;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::ProjectionExec;

/// The physical optimizer rule (see the module comment).
#[derive(Debug, Default)]
pub struct FastDecimals;

impl PhysicalOptimizerRule for FastDecimals {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if let Some(filter) = node.downcast_ref::<FilterExec>() {
                let predicate = fast(Arc::clone(filter.predicate()), &filter.input().schema())?;
                if !predicate.transformed {
                    return Ok(Transformed::no(node));
                }
                let rebuilt = FilterExecBuilder::from(filter)
                    .with_predicate(predicate.data)
                    .build()?;
                return Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn ExecutionPlan>));
            }
            if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
                return super::lazy_conditions::map_projection(&node, projection, fast);
            }
            if let Some(aggregate) = node.downcast_ref::<AggregateExec>() {
                let schema = aggregate.input_schema();
                let mut changed = false;
                let mut functions: Vec<Arc<AggregateFunctionExpr>> =
                    Vec::with_capacity(aggregate.aggr_expr().len());
                for function in aggregate.aggr_expr() {
                    let mut args = Vec::new();
                    let mut rewritten = false;
                    for arg in function.expressions() {
                        let arg = fast(arg, &schema)?;
                        rewritten |= arg.transformed;
                        args.push(arg.data);
                    }
                    let order_by = function
                        .order_bys()
                        .iter()
                        .map(|sort| Arc::clone(&sort.expr))
                        .collect();
                    match function.with_new_expressions(args, order_by) {
                        Some(new) if rewritten => {
                            changed = true;
                            functions.push(Arc::new(new));
                        }
                        _ => functions.push(Arc::clone(function)),
                    }
                }
                if !changed {
                    return Ok(Transformed::no(node));
                }
                let rebuilt = aggregate.with_new_aggr_exprs(functions);
                return Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn ExecutionPlan>));
            }
            Ok(Transformed::no(node))
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "pgaccel_fast_decimals"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `expr`, over rows of `schema`, with every `+`, `-` and `*` of two
/// `Decimal128` operands made a [`DecimalArithmetic`].
fn fast(
    expr: Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    expr.transform_up(|node| {
        let Some(binary) = node.downcast_ref::<BinaryExpr>() else {
            return Ok(Transformed::no(node));
        };
        let (Ok(left), Ok(right)) = (
            binary.left().data_type(schema),
            binary.right().data_type(schema),
        ) else {
            return Ok(Transformed::no(node));
        };
        let Some(arithmetic) = DecimalArithmetic::new(
            Arc::clone(binary.left()),
            *binary.op(),
            Arc::clone(binary.right()),
            &left,
            &right,
        ) else {
            return Ok(Transformed::no(node));
        };
        // The plan above was typed by DataFusion's reckoning, which must
        // agree with the kernel's.
        if binary.data_type(schema).ok() != arithmetic.data_type(schema).ok() {
            return Ok(Transformed::no(node));
        }
        Ok(Transformed::yes(
            Arc::new(arithmetic) as Arc<dyn PhysicalExpr>
        ))
    })
}

/// `left op right` of two `Decimal128` values, with Arrow's type and
/// answer (see the module comment).
#[derive(Debug, Eq)]
pub struct DecimalArithmetic {
    left: Arc<dyn PhysicalExpr>,
    op: Operator,
    right: Arc<dyn PhysicalExpr>,
    /// What each side is multiplied by to bring it to the result's scale
    /// (for `+` and `-`; 1 for `*`).
    factors: (i128, i128),
    precision: u8,
    scale: i8,
}

impl PartialEq for DecimalArithmetic {
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op
            && self.left.eq(&other.left)
            && self.right.eq(&other.right)
            && (self.factors, self.precision, self.scale)
                == (other.factors, other.precision, other.scale)
    }
}

impl Hash for DecimalArithmetic {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.left.hash(state);
        self.op.hash(state);
        self.right.hash(state);
        (self.factors, self.precision, self.scale).hash(state);
    }
}

impl fmt::Display for DecimalArithmetic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Operands that are operations themselves are parenthesized, so
        // that a plan reads `a * (1 - b)` as it computes.
        let side = |f: &mut fmt::Formatter<'_>, side: &Arc<dyn PhysicalExpr>| {
            if side.is::<DecimalArithmetic>() || side.is::<BinaryExpr>() {
                write!(f, "({side})")
            } else {
                write!(f, "{side}")
            }
        };
        side(f, &self.left)?;
        write!(f, " {} ", self.op)?;
        side(f, &self.right)
    }
}

/// One side of an operation: a batch's values, or one value for all rows.
enum Operand<'a> {
    Values(&'a PrimitiveArray<Decimal128Type>),
    Scalar(i128),
}

impl<'a> Operand<'a> {
    /// `value` as an operand; `None` for a NULL or a value of another type.
    fn of(value: &'a ColumnarValue) -> Option<Self> {
        match value {
            ColumnarValue::Array(array) => array
                .as_primitive_opt::<Decimal128Type>()
                .map(Operand::Values),
            ColumnarValue::Scalar(ScalarValue::Decimal128(Some(value), ..)) => {
                Some(Operand::Scalar(*value))
            }
            ColumnarValue::Scalar(_) => None,
        }
    }

    /// The largest magnitude of the operand's values (null slots included,
    /// which only makes the bound larger).
    fn bound(&self) -> u128 {
        match self {
            Operand::Values(array) => array
                .values()
                .iter()
                .fold(0u128, |bound, value| bound.max(value.unsigned_abs())),
            Operand::Scalar(value) => value.unsigned_abs(),
        }
    }

    fn nulls(&self) -> Option<&NullBuffer> {
        match self {
            Operand::Values(array) => array.nulls(),
            Operand::Scalar(_) => None,
        }
    }
}

impl DecimalArithmetic {
    /// `left op right` for operands of types `left_type` and `right_type`;
    /// `None` unless both are `Decimal128` and `op` is `+`, `-` or `*`
    /// with a result type Arrow has.
    fn new(
        left: Arc<dyn PhysicalExpr>,
        op: Operator,
        right: Arc<dyn PhysicalExpr>,
        left_type: &DataType,
        right_type: &DataType,
    ) -> Option<Self> {
        let (&DataType::Decimal128(p1, s1), &DataType::Decimal128(p2, s2)) =
            (left_type, right_type)
        else {
            return None;
        };
        const MAX_PRECISION: u8 = 38;
        // The result types are those of Arrow's decimal kernels.
        let (factors, precision, scale) = match op {
            Operator::Plus | Operator::Minus => {
                let scale = s1.max(s2);
                let integer_digits =
                    (i16::from(p1) - i16::from(s1)).max(i16::from(p2) - i16::from(s2));
                let precision =
                    (i16::from(scale) + integer_digits + 1).clamp(0, MAX_PRECISION.into());
                let factor = |s: i8| 10i128.checked_pow(u32::try_from(scale - s).ok()?);
                ((factor(s1)?, factor(s2)?), precision as u8, scale)
            }
            Operator::Multiply => {
                let scale = s1.checked_add(s2)?;
                if scale > MAX_PRECISION as i8 {
                    return None;
                }
                ((1, 1), (p1 + p2 + 1).min(MAX_PRECISION), scale)
            }
            _ => return None,
        };
        Some(Self {
            left,
            op,
            right,
            factors,
            precision,
            scale,
        })
    }

    /// The values of `left op right` for every row, where no row can
    /// overflow; `None` where one might.
    fn unchecked(&self, left: &Operand, right: &Operand) -> Option<ScalarBuffer<i128>> {
        let (left_bound, right_bound) = (left.bound(), right.bound());
        let (left_factor, right_factor) = self.factors;
        let narrow = |bound: u128| bound <= i64::MAX as u128;
        match self.op {
            Operator::Multiply => {
                let bound = left_bound.checked_mul(right_bound)?;
                if bound > i128::MAX as u128 {
                    return None;
                }
                if narrow(left_bound) && narrow(right_bound) {
                    // One 64-by-64-bit multiplication a row.
                    Some(apply(left, right, |a, b| {
                        i128::from(a as i64) * i128::from(b as i64)
                    }))
                } else {
                    Some(apply(left, right, i128::wrapping_mul))
                }
            }
            Operator::Plus | Operator::Minus => {
                let left_scaled = left_bound.checked_mul(left_factor as u128)?;
                let right_scaled = right_bound.checked_mul(right_factor as u128)?;
                let bound = left_scaled.checked_add(right_scaled)?;
                if bound > i128::MAX as u128 {
                    return None;
                }
                let minus = self.op == Operator::Minus;
                if narrow(bound) {
                    let (lf, rf) = (left_factor as i64, right_factor as i64);
                    Some(if minus {
                        apply(left, right, |a, b| {
                            i128::from(a as i64 * lf - b as i64 * rf)
                        })
                    } else {
                        apply(left, right, |a, b| {
                            i128::from(a as i64 * lf + b as i64 * rf)
                        })
                    })
                } else if minus {
                    Some(apply(left, right, |a, b| {
                        a * left_factor - b * right_factor
                    }))
                } else {
                    Some(apply(left, right, |a, b| {
                        a * left_factor + b * right_factor
                    }))
                }
            }
            _ => None,
        }
    }
}

/// `f` of each row's two values; not for two scalars.
fn apply(left: &Operand, right: &Operand, f: impl Fn(i128, i128) -> i128) -> ScalarBuffer<i128> {
    match (left, right) {
        (Operand::Values(l), Operand::Values(r)) => l
            .values()
            .iter()
            .zip(r.values().iter())
            .map(|(&a, &b)| f(a, b))
            .collect(),
        (Operand::Values(l), Operand::Scalar(b)) => l.values().iter().map(|&a| f(a, *b)).collect(),
        (Operand::Scalar(a), Operand::Values(r)) => r.values().iter().map(|&b| f(*a, b)).collect(),
        (Operand::Scalar(a), Operand::Scalar(b)) => std::iter::once(f(*a, *b)).collect(),
    }
}

impl PhysicalExpr for DecimalArithmetic {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(DataType::Decimal128(self.precision, self.scale))
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        Ok(self.left.nullable(input_schema)? || self.right.nullable(input_schema)?)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let left = self.left.evaluate(batch)?;
        let right = self.right.evaluate(batch)?;
        let arrays =
            matches!(left, ColumnarValue::Array(_)) || matches!(right, ColumnarValue::Array(_));
        if let (true, Some(l), Some(r)) = (arrays, Operand::of(&left), Operand::of(&right))
            && let Some(values) = self.unchecked(&l, &r)
        {
            let nulls = NullBuffer::union(l.nulls(), r.nulls());
            let array = PrimitiveArray::<Decimal128Type>::new(values, nulls)
                .with_precision_and_scale(self.precision, self.scale)?;
            return Ok(ColumnarValue::Array(Arc::new(array)));
        }
        // Arrow's checked kernel: the same answer, or its overflow error.
        let datum = |value: ColumnarValue| -> Result<Box<dyn Datum>> {
            Ok(match value {
                ColumnarValue::Array(array) => Box::new(array),
                ColumnarValue::Scalar(scalar) => Box::new(scalar.to_scalar()?),
            })
        };
        let scalars = !arrays;
        let (left, right) = (datum(left)?, datum(right)?);
        let kernel = match self.op {
            Operator::Plus => numeric::add,
            Operator::Minus => numeric::sub,
            _ => numeric::mul,
        };
        let array: ArrayRef = kernel(left.as_ref(), right.as_ref())?;
        Ok(if scalars {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&array, 0)?)
        } else {
            ColumnarValue::Array(array)
        })
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.left, &self.right]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        let [left, right] = super::lazy_conditions::two_sides(children)?;
        Ok(Arc::new(DecimalArithmetic {
            left,
            op: self.op,
            right,
            factors: self.factors,
            precision: self.precision,
            scale: self.scale,
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.left.fmt_sql(f)?;
        write!(f, " {} ", self.op)?;
        self.right.fmt_sql(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Decimal128Array;
    use datafusion::arrow::datatypes::Field;
    use datafusion::physical_expr::expressions::{Literal, binary, col};

    fn decimals(values: Vec<Option<i128>>, precision: u8, scale: i8) -> ArrayRef {
        Arc::new(
            Decimal128Array::from(values)
                .with_precision_and_scale(precision, scale)
                .unwrap(),
        )
    }

    /// Each operator over `a` and `b`, and over each with a literal,
    /// evaluated by DataFusion's `BinaryExpr` and by [`DecimalArithmetic`]:
    /// the same array, or both an error.
    fn agree(a: ArrayRef, b: ArrayRef, literal: ScalarValue) -> usize {
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", a.data_type().clone(), true),
            Field::new("b", b.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![a, b]).unwrap();
        let literal = || Arc::new(Literal::new(literal.clone())) as Arc<dyn PhysicalExpr>;
        let mut fast_batches = 0;
        for op in [Operator::Plus, Operator::Minus, Operator::Multiply] {
            let pairs = [
                (col("a", &schema).unwrap(), col("b", &schema).unwrap()),
                (col("a", &schema).unwrap(), literal()),
                (literal(), col("b", &schema).unwrap()),
            ];
            for (left, right) in pairs {
                let reference = binary(Arc::clone(&left), op, Arc::clone(&right), &schema).unwrap();
                let rewritten = fast(Arc::clone(&reference), &schema).unwrap();
                assert!(rewritten.transformed, "{reference} was not rewritten");
                let expected = reference.evaluate(&batch).and_then(|v| v.into_array(3));
                let actual = rewritten
                    .data
                    .evaluate(&batch)
                    .and_then(|v| v.into_array(3));
                match (expected, actual) {
                    (Ok(expected), Ok(actual)) => {
                        assert_eq!(expected.as_ref(), actual.as_ref(), "{reference}");
                        assert_eq!(
                            reference.data_type(&schema).unwrap(),
                            rewritten.data.data_type(&schema).unwrap()
                        );
                        fast_batches += 1;
                    }
                    (Err(expected), Err(actual)) => {
                        assert_eq!(expected.to_string(), actual.to_string(), "{reference}");
                    }
                    (expected, actual) => {
                        panic!("{reference}: {expected:?} against {actual:?}")
                    }
                }
            }
        }
        fast_batches
    }

    #[test]
    fn answers_as_arrows_checked_kernels_do() {
        // Prices and discounts, as in TPC-H: every row in 64 bits.
        let answered = agree(
            decimals(vec![Some(10_494_950), None, Some(-3_212)], 15, 2),
            decimals(vec![Some(7), Some(10), None], 15, 2),
            ScalarValue::Decimal128(Some(1), 20, 0),
        );
        assert_eq!(answered, 9);
        // Values beyond 64 bits, still far from overflowing.
        let big = 10i128.pow(25);
        let answered = agree(
            decimals(vec![Some(big), Some(-big), Some(1)], 30, 4),
            decimals(vec![Some(3), Some(10i128.pow(12) + 7), Some(-9)], 30, 1),
            ScalarValue::Decimal128(Some(-12_345), 20, 3),
        );
        assert_eq!(answered, 9);
        // Products that overflow 128 bits: the same error as Arrow's.
        let huge = 10i128.pow(37);
        let answered = agree(
            decimals(vec![Some(huge), Some(2), None], 38, 0),
            decimals(vec![Some(huge), Some(3), Some(4)], 38, 0),
            ScalarValue::Decimal128(Some(huge), 38, 0),
        );
        // The two products with `huge` on both sides overflow; the sums
        // and the differences do not.
        assert_eq!(answered, 6);
    }

    #[test]
    fn a_bound_that_might_overflow_goes_to_the_checked_kernel() {
        let huge = 10i128.pow(20);
        let operation = DecimalArithmetic::new(
            Arc::new(Literal::new(ScalarValue::Decimal128(Some(1), 38, 0))),
            Operator::Multiply,
            Arc::new(Literal::new(ScalarValue::Decimal128(Some(1), 38, 0))),
            &DataType::Decimal128(38, 0),
            &DataType::Decimal128(38, 0),
        )
        .unwrap();
        // 10^20 * 10^20 overflows: no unchecked answer for the batch, even
        // where only one row holds the large value.
        let left = Decimal128Array::from(vec![huge, 1, 2]);
        let right = Decimal128Array::from(vec![1, huge, 3]);
        assert!(
            operation
                .unchecked(&Operand::Values(&left), &Operand::Values(&right))
                .is_none()
        );
        let small = Decimal128Array::from(vec![5, 6, 7]);
        let values = operation
            .unchecked(&Operand::Values(&left), &Operand::Values(&small))
            .unwrap();
        assert_eq!(values.to_vec(), vec![5 * huge, 6, 14]);
    }
}
