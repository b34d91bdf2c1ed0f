//! `interval * number`, `number * interval` and `interval / number` as
//! PostgreSQL's `interval_mul` and `interval_div` compute them: the factor
//! is a double; the fraction of a month flows into days (a month of 30
//! days) and the fraction of a day into the time, each rounded to the
//! microsecond. DataFusion has no such operators.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, IntervalMonthDayNanoBuilder};
use datafusion::arrow::datatypes::{
    DataType, Float64Type, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit,
};
use datafusion::common::{DFSchema, DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::BinaryOperator;

use super::{PgError, sqlstate};

const SECONDS_PER_DAY: f64 = 86_400.0;
const DAYS_PER_MONTH: f64 = 30.0;

/// PostgreSQL's `TSROUND`: to the microsecond.
fn ts_round(value: f64) -> f64 {
    (value * 1_000_000.0).round_ties_even() / 1_000_000.0
}

fn out_of_range() -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        "interval out of range",
    )))
}

/// `interval_mul` (and `interval_div`, which divides where this multiplies:
/// `divide` is true).
fn scale(span: IntervalMonthDayNano, factor: f64, divide: bool) -> Result<IntervalMonthDayNano> {
    let apply = |value: f64| {
        if divide {
            value / factor
        } else {
            value * factor
        }
    };
    let months_exact = apply(f64::from(span.months));
    let days_exact = apply(f64::from(span.days));
    if !months_exact.is_finite()
        || !days_exact.is_finite()
        || months_exact.abs() > f64::from(i32::MAX)
        || days_exact.abs() > f64::from(i32::MAX)
    {
        return Err(out_of_range());
    }
    let months = months_exact as i32;
    let mut days = days_exact as i32;
    let month_remainder_days = ts_round((months_exact - f64::from(months)) * DAYS_PER_MONTH);
    let mut seconds_remainder = ts_round(
        (days_exact - f64::from(days) + month_remainder_days - month_remainder_days.trunc())
            * SECONDS_PER_DAY,
    );
    if seconds_remainder.abs() >= SECONDS_PER_DAY {
        let whole = (seconds_remainder / SECONDS_PER_DAY).trunc();
        days += whole as i32;
        seconds_remainder -= whole * SECONDS_PER_DAY;
    }
    days = days
        .checked_add(month_remainder_days as i32)
        .ok_or_else(out_of_range)?;
    let micros = (apply(span.nanoseconds as f64 / 1_000.0) + seconds_remainder * 1_000_000.0)
        .round_ties_even();
    if !micros.is_finite() || micros.abs() >= i64::MAX as f64 / 1_000.0 {
        return Err(out_of_range());
    }
    Ok(IntervalMonthDayNano::new(
        months,
        days,
        micros as i64 * 1_000,
    ))
}

pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [false, true]
        .map(|divide| {
            Arc::new(ScalarUDF::new_from_impl(IntervalScale {
                divide,
                signature: Signature::exact(
                    vec![
                        DataType::Interval(IntervalUnit::MonthDayNano),
                        DataType::Float64,
                    ],
                    Volatility::Immutable,
                ),
            }))
        })
        .into()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalScale {
    divide: bool,
    signature: Signature,
}

impl ScalarUDFImpl for IntervalScale {
    fn name(&self) -> &str {
        if self.divide {
            "pgaccel_interval_div"
        } else {
            "pgaccel_interval_mul"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let spans = arrays[0].as_primitive::<IntervalMonthDayNanoType>();
        let factors = arrays[1].as_primitive::<Float64Type>();
        let mut out = IntervalMonthDayNanoBuilder::with_capacity(spans.len());
        for row in 0..spans.len() {
            if spans.is_null(row) || factors.is_null(row) {
                out.append_null();
                continue;
            }
            let factor = factors.value(row);
            if self.divide && factor == 0.0 {
                return Err(DataFusionError::External(Box::new(PgError::new(
                    sqlstate::DIVISION_BY_ZERO,
                    "division by zero",
                ))));
            }
            out.append_value(scale(spans.value(row), factor, self.divide)?);
        }
        super::functions::columnar(Arc::new(out.finish()), scalar)
    }
}

/// Plans the operators while the SQL is read: DataFusion's type checks
/// would refuse them before any later rewrite could.
#[derive(Debug)]
pub struct IntervalOperators;

impl ExprPlanner for IntervalOperators {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let is_interval = |e: &Expr| matches!(e.get_type(schema), Ok(DataType::Interval(_)));
        let is_number = |e: &Expr| {
            e.get_type(schema).is_ok_and(|t| {
                t.is_numeric() || matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))
            })
        };
        let (divide, span, factor) = match expr.op {
            BinaryOperator::Multiply if is_interval(&expr.left) && is_number(&expr.right) => {
                (false, &expr.left, &expr.right)
            }
            BinaryOperator::Multiply if is_number(&expr.left) && is_interval(&expr.right) => {
                (false, &expr.right, &expr.left)
            }
            BinaryOperator::Divide if is_interval(&expr.left) && is_number(&expr.right) => {
                (true, &expr.left, &expr.right)
            }
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let udf = functions()
            .into_iter()
            .nth(usize::from(divide))
            .ok_or_else(|| DataFusionError::Internal("interval operators".into()))?;
        let span = span
            .clone()
            .cast_to(&DataType::Interval(IntervalUnit::MonthDayNano), schema)?;
        let factor = factor.clone().cast_to(&DataType::Float64, schema)?;
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(udf, vec![span, factor]),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(months: i32, days: i32, seconds: f64) -> IntervalMonthDayNano {
        IntervalMonthDayNano::new(months, days, (seconds * 1e9) as i64)
    }

    #[test]
    fn fractions_cascade_as_postgres() {
        // '1 day' * 3 = 3 days; '1 hour' / 2 = 00:30:00.
        assert_eq!(
            scale(interval(0, 1, 0.0), 3.0, false).unwrap(),
            interval(0, 3, 0.0)
        );
        assert_eq!(
            scale(interval(0, 0, 3600.0), 2.0, true).unwrap(),
            interval(0, 0, 1800.0)
        );
        // '1 mon' * 1.5 = 1 mon 15 days; '1 day' * 1.5 = 1 day 12:00:00.
        assert_eq!(
            scale(interval(1, 0, 0.0), 1.5, false).unwrap(),
            interval(1, 15, 0.0)
        );
        assert_eq!(
            scale(interval(0, 1, 0.0), 1.5, false).unwrap(),
            interval(0, 1, 43_200.0)
        );
        // '-3 days' / 2 = -1 days -12:00:00.
        assert_eq!(
            scale(interval(0, -3, 0.0), 2.0, true).unwrap(),
            interval(0, -1, -43_200.0)
        );
    }
}
