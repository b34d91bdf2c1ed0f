//! `age(a, b)`: PostgreSQL's symbolic difference of two timestamps in
//! years, months and days (`age('2025-01-01', '2024-02-29 12:00')` is
//! `10 mons 1 day 12:00:00`), field by field with borrows from the month
//! of the earlier argument, as PostgreSQL's `timestamp_age` does; a
//! timestamptz's fields are read in the session's `TimeZone`. The
//! one-argument form `age(x)` is `age(current_date, x)`: today's midnight
//! on the session's clock, as a timestamp or a timestamptz as `x` is (the
//! planner writes it so, see [`against_today`]).
//! `age(xid)`, which catalog browsers ask: every catalog row was written by
//! one frozen transaction, so its age is 0.

use std::sync::Arc;

use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, IntervalMonthDayNanoBuilder};
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, IntervalUnit, TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::engine::SessionInfo;
use super::settings::zone::SessionZone;

pub fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(Age {
        signature: Signature::user_defined(Volatility::Stable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Age {
    signature: Signature,
}

impl ScalarUDFImpl for Age {
    fn name(&self) -> &str {
        "age"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let temporal = |t: &DataType| {
            matches!(
                t,
                DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 | DataType::Null
            )
        };
        match arg_types {
            // A transaction id, however the catalog column holds it.
            [xid] if !temporal(xid) || *xid == DataType::Null => Ok(vec![xid.clone()]),
            // Written as age(current_date, x) before it runs.
            [t] => Ok(vec![DataType::Timestamp(
                TimeUnit::Microsecond,
                matches!(t, DataType::Timestamp(_, Some(_))).then(|| "UTC".into()),
            )]),
            [a, b] if temporal(a) && temporal(b) => {
                let zoned = [a, b]
                    .iter()
                    .any(|t| matches!(t, DataType::Timestamp(_, Some(_))));
                let target =
                    DataType::Timestamp(TimeUnit::Microsecond, zoned.then(|| "UTC".into()));
                Ok(vec![target.clone(), target])
            }
            _ => Err(super::json::no_such_function("age", arg_types)),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let temporal = |t: &DataType| {
            matches!(
                t,
                DataType::Timestamp(..) | DataType::Date32 | DataType::Date64
            )
        };
        Ok(match arg_types {
            [t] if !temporal(t) => DataType::Int32,
            _ => DataType::Interval(IntervalUnit::MonthDayNano),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let zone = SessionInfo::of(&args.config_options)
            .map(|info| info.settings().time_zone())
            .unwrap_or(SessionZone::UTC);
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        if let [xids] = arrays.as_slice() {
            let ages: datafusion::arrow::array::Int32Array = (0..xids.len())
                .map(|row| (!xids.is_null(row)).then_some(0))
                .collect();
            return super::functions::columnar(Arc::new(ages) as ArrayRef, scalar);
        }
        let [left, right] = arrays.as_slice() else {
            return Err(DataFusionError::Internal("age takes two arguments".into()));
        };
        let zoned = matches!(left.data_type(), DataType::Timestamp(_, Some(_)));
        let local = |array: &ArrayRef, row: usize| -> Option<NaiveDateTime> {
            let micros = array.as_primitive::<TimestampMicrosecondType>().value(row);
            let utc = chrono::DateTime::from_timestamp_micros(micros)?.naive_utc();
            Some(if zoned {
                utc + chrono::Duration::seconds(i64::from(zone.offset_at(&utc).0))
            } else {
                utc
            })
        };
        let mut out = IntervalMonthDayNanoBuilder::with_capacity(left.len());
        for row in 0..left.len() {
            if left.is_null(row) || right.is_null(row) {
                out.append_null();
                continue;
            }
            match (local(left, row), local(right, row)) {
                (Some(a), Some(b)) => out.append_value(age(a, b)),
                _ => out.append_null(),
            }
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

/// `age(x)` of a date or a timestamp as `age(current_date, x)`, with
/// today's midnight of the session's clock as a timestamp, or as a
/// timestamptz when `x` is one; `None` for any other call (`age(xid)`).
pub fn against_today(
    function: &datafusion::logical_expr::expr::ScalarFunction,
    schema: &datafusion::common::DFSchema,
) -> Option<datafusion::logical_expr::Expr> {
    use datafusion::logical_expr::{Cast, Expr, ExprSchemable};
    let [arg] = function.args.as_slice() else {
        return None;
    };
    if function.name() != "age" {
        return None;
    }
    let zone = match arg.get_type(schema).ok()? {
        DataType::Timestamp(_, zone) => zone.map(|_| "UTC".into()),
        DataType::Date32 | DataType::Date64 => None,
        _ => return None,
    };
    // A timestamptz from a date is midnight on the session's clock
    // (`ZonedCasts` reads the cast so).
    let today = Expr::Cast(Cast::new(
        Box::new(datafusion::functions::datetime::expr_fn::current_date()),
        DataType::Timestamp(TimeUnit::Microsecond, zone),
    ));
    Some(Expr::ScalarFunction(
        datafusion::logical_expr::expr::ScalarFunction::new_udf(
            Arc::clone(&function.func),
            vec![today, arg.clone()],
        ),
    ))
}

fn days_in_month(year: i32, month: u32) -> i64 {
    let next = if month == 12 {
        chrono::NaiveDate::from_ymd_opt(year + 1, 1, 1)
    } else {
        chrono::NaiveDate::from_ymd_opt(year, month + 1, 1)
    };
    let first = chrono::NaiveDate::from_ymd_opt(year, month, 1);
    match (first, next) {
        (Some(first), Some(next)) => (next - first).num_days(),
        _ => 30,
    }
}

/// `a - b` as PostgreSQL's `age(a, b)`.
fn age(a: NaiveDateTime, b: NaiveDateTime) -> IntervalMonthDayNano {
    let fields = |t: &NaiveDateTime| {
        [
            i64::from(t.nanosecond() / 1000),
            i64::from(t.second()),
            i64::from(t.minute()),
            i64::from(t.hour()),
            i64::from(t.day()),
            i64::from(t.month()),
            i64::from(t.year()),
        ]
    };
    let (fa, fb) = (fields(&a), fields(&b));
    let negative = a < b;
    let mut d: Vec<i64> = fa.iter().zip(fb.iter()).map(|(x, y)| x - y).collect();
    if negative {
        d.iter_mut().for_each(|v| *v = -*v);
    }
    // Borrow into each negative field from the next larger one.
    for (index, unit) in [(0, 1_000_000), (1, 60), (2, 60), (3, 24)] {
        while d[index] < 0 {
            d[index] += unit;
            d[index + 1] -= 1;
        }
    }
    // A day borrows the length of the month of the earlier timestamp.
    let earlier = if negative { &a } else { &b };
    while d[4] < 0 {
        d[4] += days_in_month(earlier.year(), earlier.month());
        d[5] -= 1;
    }
    while d[5] < 0 {
        d[5] += 12;
        d[6] -= 1;
    }
    if negative {
        d.iter_mut().for_each(|v| *v = -*v);
    }
    let micros = ((d[3] * 60 + d[2]) * 60 + d[1]) * 1_000_000 + d[0];
    IntervalMonthDayNano::new(
        i32::try_from(d[6] * 12 + d[5]).unwrap_or(i32::MAX),
        i32::try_from(d[4]).unwrap_or(i32::MAX),
        micros * 1000,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn symbolic_differences_as_postgresql_computes_them() {
        // PostgreSQL 15: age('2025-01-01', '2024-02-29 12:34:56') is
        // 10 mons 11:25:04, age('2024-02-29', '2025-01-01') -10 mons -1 days,
        // age('2024-03-31', '2024-02-29') 1 mon 2 days.
        assert_eq!(
            age(at("2025-01-01 00:00:00"), at("2024-02-29 12:34:56")),
            IntervalMonthDayNano::new(10, 0, (11 * 3600 + 25 * 60 + 4) * 1_000_000_000)
        );
        assert_eq!(
            age(at("2024-02-29 00:00:00"), at("2025-01-01 00:00:00")),
            IntervalMonthDayNano::new(-10, -1, 0)
        );
        assert_eq!(
            age(at("2024-03-31 00:00:00"), at("2024-02-29 00:00:00")),
            IntervalMonthDayNano::new(1, 2, 0)
        );
    }
}
