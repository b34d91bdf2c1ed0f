//! `interval * number`, `number * interval` and `interval / number` as
//! PostgreSQL's `interval_mul` and `interval_div` compute them: the factor
//! is a double; the fraction of a month flows into days (a month of 30
//! days) and the fraction of a day into the time, each rounded to the
//! microsecond. DataFusion has no such operators.
//!
//! `avg(interval)` too, which DataFusion lacks: as `interval_accum` and
//! `interval_avg`, the months, days and microseconds are summed apart and
//! the sum divided by the count with `interval_div`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, IntervalMonthDayNanoBuilder};
use datafusion::arrow::datatypes::{
    DataType, Field, FieldRef, Float64Type, Int32Type, Int64Type, IntervalMonthDayNano,
    IntervalMonthDayNanoType, IntervalUnit,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Expr, ExprSchemable, LogicalPlan,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
    WindowFunctionDefinition,
};
use datafusion::optimizer::AnalyzerRule;
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
    scale_parts(
        span.months,
        span.days,
        span.nanoseconds as f64 / 1_000.0,
        factor,
        divide,
    )
}

/// [`scale`] of an interval given as months, days and microseconds.
fn scale_parts(
    span_months: i32,
    span_days: i32,
    span_micros: f64,
    factor: f64,
    divide: bool,
) -> Result<IntervalMonthDayNano> {
    let apply = |value: f64| {
        if divide {
            value / factor
        } else {
            value * factor
        }
    };
    let months_exact = apply(f64::from(span_months));
    let days_exact = apply(f64::from(span_days));
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
    let micros = (apply(span_micros) + seconds_remainder * 1_000_000.0).round_ties_even();
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
        // timestamp ± time, time + timestamp: the time is an interval
        // (PostgreSQL casts time to interval implicitly). A date is its
        // midnight, in microseconds (DataFusion's own date + time is in
        // nanoseconds, which end before 1678).
        let timestamp_of = |e: &Expr| -> Result<Option<Expr>> {
            Ok(match e.get_type(schema) {
                Ok(DataType::Timestamp(..)) => Some(e.clone()),
                Ok(DataType::Date32) => Some(e.clone().cast_to(
                    &DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, None),
                    schema,
                )?),
                _ => None,
            })
        };
        let is_time = |e: &Expr| {
            matches!(
                e.get_type(schema),
                Ok(DataType::Time32(_) | DataType::Time64(_))
            )
        };
        let as_interval = |time: &Expr| -> Result<Expr> {
            Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
                super::pg_types::interval_udf(),
                vec![time.clone().cast_to(&DataType::Utf8, schema)?],
            )))
        };
        match expr.op {
            BinaryOperator::Plus | BinaryOperator::Minus if is_time(&expr.right) => {
                if let Some(timestamp) = timestamp_of(&expr.left)? {
                    let interval = as_interval(&expr.right)?;
                    return Ok(PlannerResult::Planned(if expr.op == BinaryOperator::Plus {
                        timestamp + interval
                    } else {
                        timestamp - interval
                    }));
                }
            }
            BinaryOperator::Plus if is_time(&expr.left) => {
                if let Some(timestamp) = timestamp_of(&expr.right)? {
                    return Ok(PlannerResult::Planned(timestamp + as_interval(&expr.left)?));
                }
            }
            _ => {}
        }
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

const AVERAGE: &str = "pgaccel_interval_avg";

fn interval_type() -> DataType {
    DataType::Interval(IntervalUnit::MonthDayNano)
}

/// The aggregate behind `avg(interval)`.
fn average() -> AggregateUDF {
    AggregateUDF::new_from_impl(IntervalAverage {
        signature: Signature::exact(vec![interval_type()], Volatility::Immutable),
    })
}

/// The `avg` a query is planned with: DataFusion's, which also takes an
/// interval. DataFusion types an aggregate while it reads the SQL, where
/// its own `avg` would refuse an interval before any rewrite could see it;
/// [`IntervalAverages`] then puts DataFusion's `avg` back, or the
/// interval one, before anything runs.
pub fn planning_average() -> AggregateUDF {
    let inner = datafusion::functions_aggregate::average::avg_udaf();
    let mut types = match &inner.signature().type_signature {
        TypeSignature::OneOf(types) => types.clone(),
        other => vec![other.clone()],
    };
    types.push(TypeSignature::Exact(vec![interval_type()]));
    AggregateUDF::new_from_impl(PlanningAverage {
        signature: Signature::one_of(types, inner.signature().volatility),
        inner,
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PlanningAverage {
    inner: Arc<AggregateUDF>,
    signature: Signature,
}

impl AggregateUDFImpl for PlanningAverage {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types {
            [DataType::Interval(_)] => Ok(interval_type()),
            _ => self.inner.return_type(arg_types),
        }
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Err(DataFusionError::Internal(
            "avg() is replaced before it runs".to_owned(),
        ))
    }
}

/// Replaces [`planning_average`] by DataFusion's `avg`, or by the interval
/// average for an interval, as the first analyzer rule.
#[derive(Debug)]
pub struct IntervalAverages;

impl AnalyzerRule for IntervalAverages {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let planned = |func: &AggregateUDF| func.inner().is::<PlanningAverage>();
        // Most plans (every point lookup) have no `avg`: they are left
        // without rebuilding each node's schema.
        let mut found = false;
        plan.apply_with_subqueries(|node| {
            node.apply_expressions(|expr| {
                expr.apply(|e| {
                    found |= match e {
                        Expr::AggregateFunction(function) => planned(&function.func),
                        Expr::WindowFunction(window) => matches!(
                            &window.fun,
                            WindowFunctionDefinition::AggregateUDF(func) if planned(func)
                        ),
                        _ => false,
                    };
                    Ok(if found {
                        TreeNodeRecursion::Stop
                    } else {
                        TreeNodeRecursion::Continue
                    })
                })
            })
        })?;
        if !found {
            return Ok(plan);
        }
        let average = Arc::new(average());
        let replacement = |args: &[Expr], schema: &DFSchema| match args {
            [arg] if matches!(arg.get_type(schema), Ok(DataType::Interval(_))) => {
                Arc::clone(&average)
            }
            _ => datafusion::functions_aggregate::average::avg_udaf(),
        };
        super::numeric::rewrite_expressions(plan, |expr, schema| {
            let function = match &expr {
                Expr::AggregateFunction(function) => Some((&function.func, &function.params.args)),
                Expr::WindowFunction(window) => match &window.fun {
                    WindowFunctionDefinition::AggregateUDF(func) => {
                        Some((func, &window.params.args))
                    }
                    _ => None,
                },
                _ => None,
            };
            let Some((func, args)) = function else {
                return Ok(Transformed::no(expr));
            };
            if !planned(func) {
                return Ok(Transformed::no(expr));
            }
            let func = replacement(args, schema);
            Ok(Transformed::yes(match expr {
                Expr::AggregateFunction(mut function) => {
                    function.func = func;
                    Expr::AggregateFunction(function)
                }
                Expr::WindowFunction(mut window) => {
                    window.fun = WindowFunctionDefinition::AggregateUDF(func);
                    Expr::WindowFunction(window)
                }
                other => other,
            }))
        })
    }

    fn name(&self) -> &str {
        "pgaccel_interval_averages"
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalAverage {
    signature: Signature,
}

impl AggregateUDFImpl for IntervalAverage {
    fn name(&self) -> &str {
        AVERAGE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(interval_type())
    }

    fn state_fields(&self, _args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new("months", DataType::Int32, true)),
            Arc::new(Field::new("days", DataType::Int32, true)),
            Arc::new(Field::new("micros", DataType::Int64, true)),
            Arc::new(Field::new("count", DataType::Int64, true)),
        ])
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::<IntervalSum>::default())
    }
}

/// `interval_accum`'s state: the sum, kept as `interval_pl` adds (each
/// field overflowing is 22008), and the count.
#[derive(Debug, Default)]
struct IntervalSum {
    months: i32,
    days: i32,
    micros: i64,
    count: i64,
}

impl IntervalSum {
    /// Adds a sum of `count` intervals, `months`, `days` and `micros`.
    fn add(&mut self, months: i32, days: i32, micros: i64, count: i64) -> Result<()> {
        self.months = self.months.checked_add(months).ok_or_else(out_of_range)?;
        self.days = self.days.checked_add(days).ok_or_else(out_of_range)?;
        self.micros = self.micros.checked_add(micros).ok_or_else(out_of_range)?;
        self.count += count;
        Ok(())
    }

    fn each(values: &ArrayRef, mut f: impl FnMut(i32, i32, i64) -> Result<()>) -> Result<()> {
        let spans = values.as_primitive::<IntervalMonthDayNanoType>();
        for span in spans.iter().flatten() {
            f(span.months, span.days, span.nanoseconds / 1_000)?;
        }
        Ok(())
    }
}

impl Accumulator for IntervalSum {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        Self::each(&values[0], |months, days, micros| {
            self.add(months, days, micros, 1)
        })
    }

    /// A row leaving a sliding window frame (`interval_accum_inv`).
    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        Self::each(&values[0], |months, days, micros| {
            let negated = |v: i32| v.checked_neg().ok_or_else(out_of_range);
            self.add(
                negated(months)?,
                negated(days)?,
                micros.checked_neg().ok_or_else(out_of_range)?,
                -1,
            )
        })
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let months = states[0].as_primitive::<Int32Type>();
        let days = states[1].as_primitive::<Int32Type>();
        let micros = states[2].as_primitive::<Int64Type>();
        let counts = states[3].as_primitive::<Int64Type>();
        for row in 0..counts.len() {
            if counts.is_valid(row) && counts.value(row) > 0 {
                self.add(
                    months.value(row),
                    days.value(row),
                    micros.value(row),
                    counts.value(row),
                )?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::Int32(Some(self.months)),
            ScalarValue::Int32(Some(self.days)),
            ScalarValue::Int64(Some(self.micros)),
            ScalarValue::Int64(Some(self.count)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.count == 0 {
            return Ok(ScalarValue::IntervalMonthDayNano(None));
        }
        let average = scale_parts(
            self.months,
            self.days,
            self.micros as f64,
            self.count as f64,
            true,
        )?;
        Ok(ScalarValue::IntervalMonthDayNano(Some(average)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
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
