//! Integer arithmetic that fails on overflow, as PostgreSQL's does
//! (`integer out of range`, SQLSTATE 22003). DataFusion's `+`, `-` and `*`
//! wrap around silently, which would make the replica answer differently from
//! its primary, so after type coercion every integer `+`, `-` and `*`, and
//! unary `-`, is replaced by a checked function over Arrow's
//! overflow-checking kernels.

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::error::ArrowError;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use super::QueryError;

/// The analyzer rule that swaps wrapping integer arithmetic for checked,
/// and float arithmetic for PostgreSQL's (which fails where a finite
/// operation overflows to infinity or underflows to zero, or divides by
/// zero, instead of answering `Infinity` or `NaN`).
#[derive(Debug)]
pub struct CheckedIntegerArithmetic {
    add: Arc<ScalarUDF>,
    subtract: Arc<ScalarUDF>,
    multiply: Arc<ScalarUDF>,
    float: [Arc<ScalarUDF>; 4],
}

impl Default for CheckedIntegerArithmetic {
    fn default() -> Self {
        let udf = |op| Arc::new(ScalarUDF::from(CheckedInteger::new(op)));
        let float = |op| {
            Arc::new(ScalarUDF::from(CheckedFloat {
                op,
                signature: Signature::any(2, Volatility::Immutable),
            }))
        };
        CheckedIntegerArithmetic {
            add: udf(IntegerOp::Add),
            subtract: udf(IntegerOp::Subtract),
            multiply: udf(IntegerOp::Multiply),
            float: [
                float(Operator::Plus),
                float(Operator::Minus),
                float(Operator::Multiply),
                float(Operator::Divide),
            ],
        }
    }
}

impl AnalyzerRule for CheckedIntegerArithmetic {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let schema = merge_schema(&node.inputs());
            let names = NamePreserver::new(&node);
            node.map_expressions(|expr| {
                let saved = names.save(&expr);
                let rewritten = expr.transform_up(|e| self.rewrite(e, &schema))?;
                Ok(rewritten.update_data(|e| saved.restore(e)))
            })
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "pgaccel_checked_integer_arithmetic"
    }
}

impl CheckedIntegerArithmetic {
    fn rewrite(&self, expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        // `-x` is `0 - x`, which overflows for the type's least value.
        if let Expr::Negative(inner) = &expr
            && let Ok(data_type) = inner.get_type(schema)
            && integer_name(&data_type).is_some()
        {
            let zero = Expr::Literal(ScalarValue::new_zero(&data_type)?, None);
            let call =
                ScalarFunction::new_udf(Arc::clone(&self.subtract), vec![zero, (**inner).clone()]);
            return Ok(Transformed::yes(Expr::ScalarFunction(call)));
        }
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
            return Ok(Transformed::no(expr));
        };
        // Types that cannot be computed here (a scan's own filters) are left
        // to DataFusion unchanged.
        let (Ok(left_type), Ok(right_type)) = (left.get_type(schema), right.get_type(schema))
        else {
            return Ok(Transformed::no(expr));
        };
        if left_type == right_type && matches!(left_type, DataType::Float32 | DataType::Float64) {
            let udf = match op {
                Operator::Plus => &self.float[0],
                Operator::Minus => &self.float[1],
                Operator::Multiply => &self.float[2],
                Operator::Divide => &self.float[3],
                _ => return Ok(Transformed::no(expr)),
            };
            let call =
                ScalarFunction::new_udf(Arc::clone(udf), vec![(**left).clone(), (**right).clone()]);
            return Ok(Transformed::yes(Expr::ScalarFunction(call)));
        }
        let udf = match op {
            Operator::Plus => &self.add,
            Operator::Minus => &self.subtract,
            Operator::Multiply => &self.multiply,
            _ => return Ok(Transformed::no(expr)),
        };
        if left_type != right_type || integer_name(&left_type).is_none() {
            return Ok(Transformed::no(expr));
        }
        let call =
            ScalarFunction::new_udf(Arc::clone(udf), vec![(**left).clone(), (**right).clone()]);
        Ok(Transformed::yes(Expr::ScalarFunction(call)))
    }
}

/// `smallint << n` and `smallint >> n` in `plan`, which PostgreSQL
/// computes as a C int shifted and cut back to 16 bits (`32767::int2 << 1`
/// is -2, typed smallint); DataFusion widens the smallint to the count's
/// integer type and keeps it there. Run before type coercion (which fixes
/// the types the plan's schema announces): the shift is done on 32 bits and
/// the low 16 sign-extended, `((v & 65535) # 32768) - 32768`, which cannot
/// overflow.
pub fn smallint_shifts(plan: LogicalPlan) -> Result<LogicalPlan> {
    super::numeric::rewrite_expressions(plan, |expr, schema| {
        let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
            return Ok(Transformed::no(expr));
        };
        if !matches!(op, Operator::BitwiseShiftLeft | Operator::BitwiseShiftRight)
            || left.get_type(schema).ok() != Some(DataType::Int16)
        {
            return Ok(Transformed::no(expr));
        }
        let int = |e: &Expr| {
            Expr::Cast(datafusion::logical_expr::Cast::new(
                Box::new(e.clone()),
                DataType::Int32,
            ))
        };
        let literal = |value: i32| Expr::Literal(ScalarValue::Int32(Some(value)), None);
        let binary = |l: Expr, op: Operator, r: Expr| {
            Expr::BinaryExpr(BinaryExpr::new(Box::new(l), op, Box::new(r)))
        };
        let shifted = binary(int(left), *op, int(right));
        let low_bits = binary(shifted, Operator::BitwiseAnd, literal(0xFFFF));
        let signed = binary(
            binary(low_bits, Operator::BitwiseXor, literal(0x8000)),
            Operator::Minus,
            literal(0x8000),
        );
        Ok(Transformed::yes(Expr::Cast(
            datafusion::logical_expr::Cast::new(Box::new(signed), DataType::Int16),
        )))
    })
}

/// PostgreSQL's name of an integer type, as used in its overflow message.
fn integer_name(data_type: &DataType) -> Option<&'static str> {
    match data_type {
        DataType::Int16 => Some("smallint"),
        DataType::Int32 => Some("integer"),
        DataType::Int64 => Some("bigint"),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum IntegerOp {
    Add,
    Subtract,
    Multiply,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedInteger {
    op: IntegerOp,
    signature: Signature,
}

impl CheckedInteger {
    fn new(op: IntegerOp) -> Self {
        CheckedInteger {
            op,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    fn apply(
        &self,
        left: &ArrayRef,
        right: &ArrayRef,
    ) -> std::result::Result<ArrayRef, ArrowError> {
        match self.op {
            IntegerOp::Add => numeric::add(left, right),
            IntegerOp::Subtract => numeric::sub(left, right),
            IntegerOp::Multiply => numeric::mul(left, right),
        }
    }
}

impl ScalarUDFImpl for CheckedInteger {
    fn name(&self) -> &str {
        match self.op {
            IntegerOp::Add => "pgaccel_checked_add",
            IntegerOp::Subtract => "pgaccel_checked_subtract",
            IntegerOp::Multiply => "pgaccel_checked_multiply",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    /// NULL only for a NULL operand (an overflow is an error), as the
    /// operator it replaces: the plan's schema, computed before this rule
    /// ran, says the same.
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        Ok(nullable_if_any(self.name(), &args))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, all_scalar) = super::functions::argument_arrays(&args)?;
        let data_type = arrays[0].data_type().clone();
        let result = self
            .apply(&arrays[0], &arrays[1])
            .map_err(|error| match error {
                ArrowError::ArithmeticOverflow(_) => {
                    DataFusionError::External(Box::new(QueryError::OutOfRange {
                        type_name: integer_name(&data_type).unwrap_or("integer"),
                    }))
                }
                other => DataFusionError::ArrowError(Box::new(other), None),
            })?;
        super::functions::columnar(result, all_scalar)
    }
}

/// PostgreSQL's float `+ - * /`: IEEE arithmetic that fails where finite
/// operands give an infinite result (22003 "value out of range: overflow"),
/// nonzero operands a zero product or quotient (underflow), or a divisor is
/// zero (22012).
#[derive(Debug, PartialEq, Eq, Hash)]
struct CheckedFloat {
    op: Operator,
    signature: Signature,
}

/// Why a float operation fails in PostgreSQL, if it does.
fn float_failure(
    op: Operator,
    a: f64,
    b: f64,
    result: f64,
) -> Option<(&'static str, &'static str)> {
    const RANGE: &str = "22003";
    if op == Operator::Divide && b == 0.0 && !a.is_nan() {
        return Some(("22012", "division by zero"));
    }
    if result.is_infinite() && a.is_finite() && b.is_finite() {
        return Some((RANGE, "value out of range: overflow"));
    }
    let underflow = match op {
        Operator::Multiply => result == 0.0 && a != 0.0 && b != 0.0,
        Operator::Divide => result == 0.0 && a != 0.0 && !b.is_infinite(),
        _ => false,
    };
    underflow.then_some((RANGE, "value out of range: underflow"))
}

impl ScalarUDFImpl for CheckedFloat {
    fn name(&self) -> &str {
        match self.op {
            Operator::Plus => "pgaccel_float_add",
            Operator::Minus => "pgaccel_float_subtract",
            Operator::Multiply => "pgaccel_float_multiply",
            _ => "pgaccel_float_divide",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types[0].clone())
    }

    /// NULL only for a NULL operand (an overflow is an error), as the
    /// operator it replaces: the plan's schema, computed before this rule
    /// ran, says the same.
    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        Ok(nullable_if_any(self.name(), &args))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::{Array, AsArray, Float64Array};
        use datafusion::arrow::datatypes::Float64Type;
        let (arrays, all_scalar) = super::functions::argument_arrays(&args)?;
        let data_type = arrays[0].data_type().clone();
        let left = datafusion::arrow::compute::cast(&arrays[0], &DataType::Float64)?;
        let right = datafusion::arrow::compute::cast(&arrays[1], &DataType::Float64)?;
        let (left, right) = (
            left.as_primitive::<Float64Type>(),
            right.as_primitive::<Float64Type>(),
        );
        let narrow = data_type == DataType::Float32;
        let mut out = Vec::with_capacity(left.len());
        for row in 0..left.len() {
            if left.is_null(row) || right.is_null(row) {
                out.push(None);
                continue;
            }
            let (a, b) = (left.value(row), right.value(row));
            let result = match self.op {
                Operator::Plus => a + b,
                Operator::Minus => a - b,
                Operator::Multiply => a * b,
                _ => a / b,
            };
            // A real's result is checked as a real.
            let result = if narrow {
                f64::from(result as f32)
            } else {
                result
            };
            if let Some((code, message)) = float_failure(self.op, a, b, result) {
                return Err(DataFusionError::External(Box::new(super::PgError::new(
                    code, message,
                ))));
            }
            out.push(Some(result));
        }
        let result: ArrayRef = Arc::new(Float64Array::from(out));
        let result = datafusion::arrow::compute::cast(&result, &data_type)?;
        super::functions::columnar(result, all_scalar)
    }
}

/// The result field of an operator over `args`: nullable when an operand is.
fn nullable_if_any(
    name: &str,
    args: &datafusion::logical_expr::ReturnFieldArgs,
) -> datafusion::arrow::datatypes::FieldRef {
    let nullable = args.arg_fields.iter().any(|field| field.is_nullable());
    Arc::new(datafusion::arrow::datatypes::Field::new(
        name,
        args.arg_fields[0].data_type().clone(),
        nullable,
    ))
}
