//! PostgreSQL's types for date and timestamp arithmetic where DataFusion's
//! differ: `date - date` is an `integer` count of days, `date ± interval` a
//! `timestamp`, and `timestamp - timestamp` an interval of days and time
//! (`justify_hours`), never a count of hours. `justify_hours`,
//! `justify_days` and `justify_interval` are PostgreSQL's.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

const NANOS_PER_DAY: i64 = 86_400_000_000_000;
const DAYS_PER_MONTH: i32 = 30;

/// Which of PostgreSQL's `justify_*` functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Justify {
    /// Whole days of the time part into days.
    Hours,
    /// Whole 30-day months of the days into months.
    Days,
    /// Both, with one sign throughout.
    Interval,
}

impl Justify {
    fn name(self) -> &'static str {
        match self {
            Justify::Hours => "justify_hours",
            Justify::Days => "justify_days",
            Justify::Interval => "justify_interval",
        }
    }

    /// PostgreSQL's `interval_justify_hours`, `interval_justify_days` and
    /// `interval_justify_interval` (integer division truncates toward zero,
    /// as C's does).
    fn apply(self, value: IntervalMonthDayNano) -> IntervalMonthDayNano {
        let IntervalMonthDayNano {
            mut months,
            mut days,
            mut nanoseconds,
        } = value;
        let hours = |days: &mut i32, nanoseconds: &mut i64| {
            *days += (*nanoseconds / NANOS_PER_DAY) as i32;
            *nanoseconds %= NANOS_PER_DAY;
        };
        let fix_time_sign = |days: &mut i32, nanoseconds: &mut i64| {
            if *days > 0 && *nanoseconds < 0 {
                *nanoseconds += NANOS_PER_DAY;
                *days -= 1;
            } else if *days < 0 && *nanoseconds > 0 {
                *nanoseconds -= NANOS_PER_DAY;
                *days += 1;
            }
        };
        match self {
            Justify::Hours => {
                hours(&mut days, &mut nanoseconds);
                fix_time_sign(&mut days, &mut nanoseconds);
            }
            Justify::Days => {
                months += days / DAYS_PER_MONTH;
                days %= DAYS_PER_MONTH;
                if months > 0 && days < 0 {
                    days += DAYS_PER_MONTH;
                    months -= 1;
                } else if months < 0 && days > 0 {
                    days -= DAYS_PER_MONTH;
                    months += 1;
                }
            }
            Justify::Interval => {
                if (days > 0 && nanoseconds > 0) || (days < 0 && nanoseconds < 0) {
                    months += days / DAYS_PER_MONTH;
                    days %= DAYS_PER_MONTH;
                }
                hours(&mut days, &mut nanoseconds);
                months += days / DAYS_PER_MONTH;
                days %= DAYS_PER_MONTH;
                if months > 0 && (days < 0 || (days == 0 && nanoseconds < 0)) {
                    days += DAYS_PER_MONTH;
                    months -= 1;
                } else if months < 0 && (days > 0 || (days == 0 && nanoseconds > 0)) {
                    days -= DAYS_PER_MONTH;
                    months += 1;
                }
                fix_time_sign(&mut days, &mut nanoseconds);
            }
        }
        IntervalMonthDayNano {
            months,
            days,
            nanoseconds,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JustifyFunction {
    justify: Justify,
    signature: Signature,
}

impl ScalarUDFImpl for JustifyFunction {
    fn name(&self) -> &str {
        self.justify.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let array = args.args[0].to_array(args.number_rows.max(1))?;
        let array = datafusion::arrow::compute::cast(
            &array,
            &DataType::Interval(IntervalUnit::MonthDayNano),
        )?;
        let justified: IntervalMonthDayNanoArray = array
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .map(|value| value.map(|value| self.justify.apply(value)))
            .collect();
        let justified: ArrayRef = Arc::new(justified);
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &justified, 0,
            )?))
        } else {
            Ok(ColumnarValue::Array(justified))
        }
    }
}

/// The `justify_*` functions, under their PostgreSQL names.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [Justify::Hours, Justify::Days, Justify::Interval]
        .into_iter()
        .map(|justify| {
            Arc::new(ScalarUDF::new_from_impl(JustifyFunction {
                justify,
                // Any interval or duration (what DataFusion gives for the
                // difference of two timestamps with a zone).
                signature: Signature::any(1, Volatility::Immutable),
            }))
        })
        .collect()
}

/// Plans PostgreSQL's result types for date and timestamp arithmetic into
/// `plan` (see the module documentation).
pub fn postgres_temporal(plan: LogicalPlan) -> Result<LogicalPlan> {
    let justify_hours = functions().remove(0);
    Ok(plan
        .transform_up_with_subqueries(|node| {
            let schema = merge_schema(&node.inputs());
            let names = NamePreserver::new(&node);
            let rewritten = node.map_expressions(|expr| {
                let saved = names.save(&expr);
                let rewritten = expr.transform_up(|e| rewrite(e, &schema, &justify_hours))?;
                Ok(rewritten.update_data(|e| saved.restore(e)))
            })?;
            rewritten.map_data(super::numeric::recompute_schema)
        })?
        .data)
}

fn rewrite(
    expr: Expr,
    schema: &DFSchema,
    justify_hours: &Arc<ScalarUDF>,
) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if !matches!(op, Operator::Plus | Operator::Minus) {
        return Ok(Transformed::no(expr));
    }
    let (Ok(left_type), Ok(right_type)) = (left.get_type(schema), right.get_type(schema)) else {
        return Ok(Transformed::no(expr));
    };
    let timestamp = DataType::Timestamp(TimeUnit::Microsecond, None);
    let interval = |t: &DataType| matches!(t, DataType::Interval(_));
    Ok(match (&left_type, op, &right_type) {
        // date - date: an integer count of days.
        (DataType::Date32, Operator::Minus, DataType::Date32) => {
            Transformed::yes(expr.clone().cast_to(&DataType::Int32, schema)?)
        }
        // date ± interval, interval + date: a timestamp.
        (DataType::Date32, _, r) if interval(r) => Transformed::yes(Expr::BinaryExpr(BinaryExpr {
            left: Box::new((**left).clone().cast_to(&timestamp, schema)?),
            op: *op,
            right: right.clone(),
        })),
        (l, Operator::Plus, DataType::Date32) if interval(l) => {
            Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                left: left.clone(),
                op: *op,
                right: Box::new((**right).clone().cast_to(&timestamp, schema)?),
            }))
        }
        // timestamp - timestamp: days and time.
        (DataType::Timestamp(..), Operator::Minus, DataType::Timestamp(..)) => {
            Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::clone(justify_hours),
                vec![expr.clone()],
            )))
        }
        _ => Transformed::no(expr),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: i64 = 3_600_000_000_000;

    fn interval(months: i32, days: i32, hours: i64) -> IntervalMonthDayNano {
        IntervalMonthDayNano {
            months,
            days,
            nanoseconds: hours * HOUR,
        }
    }

    #[test]
    fn justify_as_postgres() {
        // PostgreSQL 15: justify_hours('50 hours') = '2 days 02:00:00',
        // justify_days('40 days') = '1 mon 10 days',
        // justify_interval('1 mon -1 day') = '29 days',
        // justify_hours('-1 day 5 hours')... as below.
        assert_eq!(Justify::Hours.apply(interval(0, 0, 50)), interval(0, 2, 2));
        assert_eq!(
            Justify::Hours.apply(interval(0, 0, -50)),
            interval(0, -2, -2)
        );
        assert_eq!(Justify::Hours.apply(interval(0, 1, -5)), interval(0, 0, 19));
        assert_eq!(Justify::Days.apply(interval(0, 40, 0)), interval(1, 10, 0));
        assert_eq!(
            Justify::Days.apply(interval(1, -40, 0)),
            interval(0, -10, 0)
        );
        assert_eq!(
            Justify::Interval.apply(interval(1, -1, 0)),
            interval(0, 29, 0)
        );
        assert_eq!(
            Justify::Interval.apply(interval(0, 29, 25)),
            interval(1, 0, 1)
        );
    }
}
