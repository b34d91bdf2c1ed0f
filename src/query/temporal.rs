//! PostgreSQL's types for date and timestamp arithmetic where DataFusion's
//! differ: `date - date` is an `integer` count of days, `date ± interval` a
//! `timestamp`, and `timestamp - timestamp` an interval of days and time
//! (`justify_hours`), never a count of hours. `justify_hours`,
//! `justify_days` and `justify_interval` are PostgreSQL's.

use std::sync::Arc;

use super::functions::columnar as finish;
use super::settings::zone::SessionZone;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// `EXTRACT(field FROM value)`, as [`Extract`] computes it.
pub const EXTRACT_FUNCTION: &str = "pgaccel_extract";

/// `value AT TIME ZONE zone`, as [`AtTimeZone`] computes it.
pub const AT_TIME_ZONE_FUNCTION: &str = "pgaccel_at_time_zone";

const NANOS_PER_DAY: i64 = 86_400_000_000_000;
const MICROS_PER_MINUTE: i64 = 60_000_000;
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

/// PostgreSQL's `extract(field FROM value)`: a `numeric`, with the
/// fraction of a second where the field has one (`second` and `epoch` to
/// the microsecond, `milliseconds` to the microsecond), computed exactly
/// from the value; the other fields are DataFusion's `date_part`, as whole
/// numbers.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Extract {
    signature: Signature,
    date_part: Arc<ScalarUDF>,
}

/// The scale of `extract(field FROM <a value of data_type>)`.
fn extract_scale(field: &str, data_type: &DataType) -> i8 {
    match (field, data_type) {
        (_, DataType::Date32) => 0,
        ("second" | "epoch", _) => 6,
        ("milliseconds", _) => 3,
        _ => 0,
    }
}

/// `field` of a value `micros` microseconds after (or, for an interval,
/// long), as digits at [`extract_scale`]; `None` for a field computed by
/// `date_part`.
fn exact_field(field: &str, micros: i64, interval: Option<(i32, i32)>) -> Option<i128> {
    match field {
        "second" | "milliseconds" | "microseconds" => Some(i128::from(match interval {
            Some(_) => micros % MICROS_PER_MINUTE,
            None => micros.rem_euclid(MICROS_PER_MINUTE),
        })),
        "epoch" => Some(match interval {
            // A year is 365.25 days, a month 30, as PostgreSQL counts.
            Some((months, days)) => {
                i128::from(micros)
                    + i128::from(days) * 86_400_000_000
                    + i128::from(months / 12) * 31_557_600_000_000
                    + i128::from(months % 12) * 2_592_000_000_000
            }
            None => i128::from(micros),
        }),
        _ => None,
    }
}

/// PostgreSQL's decade, century or millennium of an (astronomical) year:
/// the 21st century runs from 2001 to 2100, and before year 1 the counts
/// run backwards from -1.
fn year_count(field: &str, year: i64) -> i64 {
    match field {
        "decade" if year >= 0 => year / 10,
        "decade" => -((8 - (year - 1)) / 10),
        "century" if year > 0 => (year + 99) / 100,
        "century" => -((99 - (year - 1)) / 100),
        _ if year > 0 => (year + 999) / 1000,
        _ => -((999 - (year - 1)) / 1000),
    }
}

impl ScalarUDFImpl for Extract {
    fn name(&self) -> &str {
        EXTRACT_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        let field = match args.scalar_arguments.first().copied().flatten() {
            Some(ScalarValue::Utf8(Some(field))) => field.clone(),
            _ => String::new(),
        };
        let scale = extract_scale(&field, args.arg_fields[1].data_type());
        Ok(Arc::new(datafusion::arrow::datatypes::Field::new(
            EXTRACT_FUNCTION,
            DataType::Decimal128(38, scale),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::Decimal128Builder;
        let output = args.return_field.data_type().clone();
        let DataType::Decimal128(_, scale) = output else {
            return datafusion::common::internal_err!("extract returns a decimal");
        };
        let field = match &args.args[0] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(field))) => field.clone(),
            _ => return datafusion::common::plan_err!("extract needs a constant field"),
        };
        let scalar = matches!(args.args[1], ColumnarValue::Scalar(_));
        let rows = args.number_rows.max(1);
        let values = args.args[1].to_array(rows)?;
        let exact = matches!(
            field.as_str(),
            "second" | "milliseconds" | "microseconds" | "epoch"
        );
        let mut out = Decimal128Builder::with_capacity(values.len());
        match values.data_type() {
            DataType::Date32 if exact && field != "epoch" => {
                return Err(datafusion::error::DataFusionError::External(Box::new(
                    super::PgError::new(
                        super::sqlstate::FEATURE_NOT_SUPPORTED,
                        format!("unit \"{field}\" not supported for type date"),
                    ),
                )));
            }
            DataType::Date32 if exact => {
                for day in values.as_primitive::<datafusion::arrow::datatypes::Date32Type>() {
                    out.append_option(day.map(|day| i128::from(day) * 86_400));
                }
            }
            // The Julian day: 1970-01-01 is day 2440588.
            DataType::Date32 if field == "julian" => {
                for day in values.as_primitive::<datafusion::arrow::datatypes::Date32Type>() {
                    out.append_option(day.map(|day| i128::from(day) + 2_440_588));
                }
            }
            _ if field == "julian" => {
                return Err(datafusion::error::DataFusionError::External(Box::new(
                    super::PgError::new(
                        super::sqlstate::FEATURE_NOT_SUPPORTED,
                        "extract(julian ...) of a timestamp is not supported: extract it from the timestamp's date",
                    ),
                )));
            }
            DataType::Timestamp(..) if exact => {
                let micros = datafusion::arrow::compute::cast(
                    &values,
                    &DataType::Timestamp(TimeUnit::Microsecond, None),
                )?;
                let micros = datafusion::arrow::compute::cast(&micros, &DataType::Int64)?;
                for value in micros.as_primitive::<datafusion::arrow::datatypes::Int64Type>() {
                    out.append_option(value.and_then(|m| exact_field(&field, m, None)));
                }
            }
            DataType::Interval(_) if exact => {
                let intervals = datafusion::arrow::compute::cast(
                    &values,
                    &DataType::Interval(IntervalUnit::MonthDayNano),
                )?;
                for value in intervals.as_primitive::<IntervalMonthDayNanoType>() {
                    out.append_option(value.and_then(|v| {
                        exact_field(&field, v.nanoseconds / 1000, Some((v.months, v.days)))
                    }));
                }
            }
            _ => {
                // A whole-number field: DataFusion's `date_part`; decade,
                // century and millennium are counted from its year.
                let by_year = matches!(field.as_str(), "decade" | "century" | "millennium");
                let part = if by_year { "year" } else { field.as_str() };
                let field_value = ScalarValue::Utf8(Some(part.to_owned()));
                let return_field = self.date_part.return_field_from_args(
                    datafusion::logical_expr::ReturnFieldArgs {
                        arg_fields: &args.arg_fields,
                        scalar_arguments: &[Some(&field_value), None],
                    },
                )?;
                let parts = self.date_part.invoke_with_args(ScalarFunctionArgs {
                    args: vec![
                        ColumnarValue::Scalar(field_value.clone()),
                        ColumnarValue::Array(Arc::clone(&values)),
                    ],
                    arg_fields: args.arg_fields.clone(),
                    number_rows: values.len(),
                    return_field,
                    config_options: Arc::clone(&args.config_options),
                })?;
                let mut parts = parts.to_array(values.len())?;
                if by_year {
                    let years = datafusion::arrow::compute::cast(&parts, &DataType::Int64)?;
                    let counted: datafusion::arrow::array::Int64Array = years
                        .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
                        .iter()
                        .map(|year| year.map(|year| year_count(&field, year)))
                        .collect();
                    parts = Arc::new(counted);
                }
                let decimals = datafusion::arrow::compute::cast(&parts, &output)?;
                return finish(decimals, scalar);
            }
        }
        let array: ArrayRef = Arc::new(out.finish().with_precision_and_scale(38, scale)?);
        finish(array, scalar)
    }
}

/// PostgreSQL's `AT TIME ZONE`: a `timestamptz` becomes the wall-clock
/// `timestamp` in the zone; a `timestamp` is read as wall-clock time in the
/// zone and becomes a `timestamptz`. A wall-clock time that a daylight-saving
/// change skips is read with the offset before the change, one it repeats
/// with the offset after it, as PostgreSQL reads them. Zones are IANA names
/// (`Europe/Paris`, `UTC`), POSIX offsets (see [`zone`]) or intervals.
#[derive(Debug, PartialEq, Eq, Hash)]
struct AtTimeZone {
    signature: Signature,
}

/// The zone `AT TIME ZONE` names: an IANA zone (in any case), or a POSIX
/// offset read as POSIX reads it, hours west of UTC (`'+05'` is five hours
/// west, `'UTC+3'`, `'<+02>-02'`), as PostgreSQL reads it there (unlike
/// `SET TIME ZONE`, which reads a bare number as hours east). Other names
/// (PostgreSQL's abbreviations such as `PDT`) are refused.
fn zone(name: &str) -> Result<SessionZone> {
    SessionZone::at_time_zone(name).ok_or_else(|| {
        datafusion::error::DataFusionError::External(Box::new(super::PgError::new(
            super::sqlstate::FEATURE_NOT_SUPPORTED,
            format!(
                "time zone \"{name}\" is not supported: name an IANA time zone or a POSIX offset"
            ),
        )))
    })
}

/// `INTERVAL '+02:00'` as a zone: its time, east of UTC.
fn interval_zone(
    interval: datafusion::arrow::datatypes::IntervalMonthDayNano,
) -> Result<SessionZone> {
    if interval.months != 0 || interval.days != 0 {
        return Err(datafusion::error::DataFusionError::External(Box::new(
            super::PgError::new(
                super::sqlstate::INVALID_PARAMETER_VALUE,
                "interval time zone must not include months or days",
            ),
        )));
    }
    let east = i32::try_from(interval.nanoseconds / 1_000_000_000).map_err(|_| {
        datafusion::error::DataFusionError::External(Box::new(super::PgError::new(
            super::sqlstate::INVALID_PARAMETER_VALUE,
            "interval time zone out of range",
        )))
    })?;
    Ok(SessionZone::Fixed {
        east,
        abbreviation: String::new(),
    })
}

/// The UTC instant (microseconds) of wall-clock `local` (microseconds) in
/// `zone`.
pub(super) fn from_local(zone: chrono_tz::Tz, local: i64) -> Option<i64> {
    use chrono::{LocalResult, Offset, TimeZone};
    let naive = chrono::DateTime::from_timestamp_micros(local)?.naive_utc();
    let offset = match zone.offset_from_local_datetime(&naive) {
        LocalResult::Single(offset) => offset.fix(),
        // Repeated: the offset after the change.
        LocalResult::Ambiguous(_, after) => after.fix(),
        // Skipped: the offset in effect before the change.
        LocalResult::None => zone
            .offset_from_utc_datetime(&(naive - chrono::Duration::hours(24)))
            .fix(),
    };
    Some(local - i64::from(offset.local_minus_utc()) * 1_000_000)
}

/// Wall-clock microseconds in `zone` of the UTC instant `utc`.
pub(super) fn to_local(zone: chrono_tz::Tz, utc: i64) -> Option<i64> {
    use chrono::{Offset, TimeZone};
    let instant = chrono::DateTime::from_timestamp_micros(utc)?.naive_utc();
    let offset = zone.offset_from_utc_datetime(&instant).fix();
    Some(utc + i64::from(offset.local_minus_utc()) * 1_000_000)
}

/// [`from_local`] in a session zone (a fixed offset or a named zone).
pub(super) fn session_from_local(zone: &SessionZone, local: i64) -> Option<i64> {
    match zone {
        SessionZone::Named(tz) => from_local(*tz, local),
        SessionZone::Fixed { east, .. } => local.checked_sub(i64::from(*east) * 1_000_000),
    }
}

/// [`to_local`] in a session zone.
pub(super) fn session_to_local(zone: &SessionZone, utc: i64) -> Option<i64> {
    match zone {
        SessionZone::Named(tz) => to_local(*tz, utc),
        SessionZone::Fixed { east, .. } => utc.checked_add(i64::from(*east) * 1_000_000),
    }
}

/// The zone a `date_trunc()` or `AT TIME ZONE` argument names.
pub(super) fn named_zone(text: &str) -> Result<SessionZone> {
    SessionZone::parse(text)
        .map(|(zone, _)| zone)
        .ok_or_else(|| {
            datafusion::error::DataFusionError::External(Box::new(super::PgError::new(
                super::sqlstate::INVALID_PARAMETER_VALUE,
                format!("time zone \"{text}\" not recognized"),
            )))
        })
}

impl ScalarUDFImpl for AtTimeZone {
    fn name(&self) -> &str {
        AT_TIME_ZONE_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match &arg_types[0] {
            DataType::Timestamp(_, Some(_)) => DataType::Timestamp(TimeUnit::Microsecond, None),
            _ => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::array::TimestampMicrosecondArray;
        use datafusion::arrow::datatypes::TimestampMicrosecondType;
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let values = Arc::clone(&arrays[0]);
        let with_zone = matches!(values.data_type(), DataType::Timestamp(_, Some(_)));
        // A date or text is read as a timestamp first, as PostgreSQL does.
        let values = datafusion::arrow::compute::cast(
            &values,
            &DataType::Timestamp(TimeUnit::Microsecond, None),
        )?;
        let values = values.as_primitive::<TimestampMicrosecondType>();
        let mut out = Vec::with_capacity(values.len());
        let zone_at: Box<dyn Fn(usize) -> Result<Option<SessionZone>>> = match arrays[1].data_type()
        {
            DataType::Interval(_) => {
                let intervals = datafusion::arrow::compute::cast(
                    &arrays[1],
                    &DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano),
                )?;
                Box::new(move |row| {
                    let intervals = intervals
                        .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>();
                    intervals
                        .is_valid(row)
                        .then(|| interval_zone(intervals.value(row)))
                        .transpose()
                })
            }
            _ => {
                let zones = datafusion::arrow::compute::cast(&arrays[1], &DataType::Utf8)?;
                let last: std::cell::RefCell<Option<(String, SessionZone)>> =
                    std::cell::RefCell::new(None);
                Box::new(move |row| {
                    let zones = zones.as_string::<i32>();
                    if zones.is_null(row) {
                        return Ok(None);
                    }
                    let name = zones.value(row);
                    let mut last = last.borrow_mut();
                    if let Some((cached, zone)) = last.as_ref()
                        && cached == name
                    {
                        return Ok(Some(zone.clone()));
                    }
                    let zone = zone(name)?;
                    *last = Some((name.to_owned(), zone.clone()));
                    Ok(Some(zone))
                })
            }
        };
        for (row, value) in values.iter().enumerate() {
            let (Some(value), Some(zone)) = (value, zone_at(row)?) else {
                out.push(None);
                continue;
            };
            out.push(if with_zone {
                session_to_local(&zone, value)
            } else {
                session_from_local(&zone, value)
            });
        }
        let array = TimestampMicrosecondArray::from(out);
        let array: ArrayRef = if with_zone {
            Arc::new(array)
        } else {
            Arc::new(array.with_timezone("UTC"))
        };
        finish(array, scalar)
    }
}

/// `timestamp - timestamp` as PostgreSQL's `timestamp_mi`: the difference
/// in microseconds, whole days of it as days (`justify_hours`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Difference {
    signature: Signature,
}

/// Microseconds since 1970 of each value of a timestamp array, whatever
/// its unit (UTC for one with a zone).
fn micros(array: &ArrayRef) -> Result<ArrayRef> {
    let zone = match array.data_type() {
        DataType::Timestamp(_, zone) => zone.clone(),
        _ => None,
    };
    let micros =
        datafusion::arrow::compute::cast(array, &DataType::Timestamp(TimeUnit::Microsecond, zone))?;
    Ok(datafusion::arrow::compute::cast(&micros, &DataType::Int64)?)
}

impl ScalarUDFImpl for Difference {
    fn name(&self) -> &str {
        "pgaccel_timestamp_difference"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use datafusion::arrow::datatypes::Int64Type;
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let left = micros(&arrays[0])?;
        let right = micros(&arrays[1])?;
        let differences: IntervalMonthDayNanoArray = left
            .as_primitive::<Int64Type>()
            .iter()
            .zip(right.as_primitive::<Int64Type>().iter())
            .map(|(a, b)| {
                let micros = a?.checked_sub(b?)?;
                Some(Justify::Hours.apply(IntervalMonthDayNano {
                    months: 0,
                    days: i32::try_from(micros / 86_400_000_000).ok()?,
                    nanoseconds: (micros % 86_400_000_000) * 1000,
                }))
            })
            .collect();
        finish(Arc::new(differences), scalar)
    }
}

/// `isfinite(date | timestamp | interval)`: false only for a date that is
/// `infinity` or `-infinity` (a timestamp or an interval pgaccel holds is
/// always finite: it has no infinite ones), NULL for NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IsFinite {
    signature: Signature,
}

impl ScalarUDFImpl for IsFinite {
    fn name(&self) -> &str {
        "isfinite"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [DataType::Date32 | DataType::Timestamp(..) | DataType::Interval(_)] => {
                Ok(arg_types.to_vec())
            }
            [DataType::Date64] => Ok(vec![DataType::Date32]),
            [DataType::Duration(unit)] => Ok(vec![DataType::Duration(*unit)]),
            _ => Err(datafusion::error::DataFusionError::Plan(format!(
                "function isfinite({}) does not exist",
                arg_types
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(args.number_rows)?;
        let finite: datafusion::arrow::array::BooleanArray = match values.data_type() {
            DataType::Date32 => values
                .as_primitive::<datafusion::arrow::datatypes::Date32Type>()
                .iter()
                .map(|day| {
                    day.map(|day| {
                        day != super::text::DATE_INFINITY && day != super::text::DATE_NEG_INFINITY
                    })
                })
                .collect(),
            _ => (0..values.len())
                .map(|row| (!values.is_null(row)).then_some(true))
                .collect(),
        };
        finish(Arc::new(finite), scalar)
    }
}

/// The `justify_*` functions, under their PostgreSQL names, and
/// [`EXTRACT_FUNCTION`].
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    let mut functions: Vec<Arc<ScalarUDF>> = [Justify::Hours, Justify::Days, Justify::Interval]
        .into_iter()
        .map(|justify| {
            Arc::new(ScalarUDF::new_from_impl(JustifyFunction {
                justify,
                // Any interval or duration (what DataFusion gives for the
                // difference of two timestamps with a zone).
                signature: Signature::any(1, Volatility::Immutable),
            }))
        })
        .collect();
    functions.push(Arc::new(ScalarUDF::new_from_impl(AtTimeZone {
        signature: Signature::any(2, Volatility::Immutable),
    })));
    functions.push(Arc::new(ScalarUDF::new_from_impl(IsFinite {
        signature: Signature::user_defined(Volatility::Immutable),
    })));
    functions.push(Arc::new(ScalarUDF::new_from_impl(Extract {
        signature: Signature::any(2, Volatility::Immutable),
        date_part: datafusion::functions::datetime::date_part(),
    })));
    functions
}

/// Plans PostgreSQL's result types for date and timestamp arithmetic into
/// `plan` (see the module documentation).
pub fn postgres_temporal(plan: LogicalPlan) -> Result<LogicalPlan> {
    let difference = Arc::new(ScalarUDF::new_from_impl(Difference {
        signature: Signature::any(2, Volatility::Immutable),
    }));
    super::numeric::rewrite_expressions(plan, |e, schema| rewrite(e, schema, &difference))
}

fn rewrite(
    expr: Expr,
    schema: &DFSchema,
    difference: &Arc<ScalarUDF>,
) -> Result<Transformed<Expr>> {
    if let Expr::ScalarFunction(function) = &expr
        && let Some(rewritten) = super::age::against_today(function, schema)
            .or_else(|| super::overlaps::interval_ends(function, schema))
    {
        return Ok(Transformed::yes(rewritten));
    }
    // `date_part()` is a float8 in PostgreSQL.
    if let Expr::ScalarFunction(function) = &expr
        && function.name() == "date_part"
        && expr.get_type(schema).is_ok_and(|t| t != DataType::Float64)
    {
        return Ok(Transformed::yes(expr.cast_to(&DataType::Float64, schema)?));
    }
    if let Expr::ScalarFunction(function) = &expr
        && matches!(function.name(), "to_timestamp" | "to_date")
    {
        // `to_timestamp(text, template)` and `to_date(text, template)` take
        // PostgreSQL's template patterns ([`super::from_char`]), DataFusion's
        // chrono's.
        if function.args.len() == 2 {
            let udf = super::from_char::function(function.name() == "to_date");
            return Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(Arc::new(udf), function.args.clone()),
            )));
        }
        if function.args.len() > 2 {
            // PostgreSQL has no such function (42883).
            return Err(datafusion::error::DataFusionError::Plan(format!(
                "No function matches {}() with {} arguments",
                function.name(),
                function.args.len()
            )));
        }
        // `to_timestamp(seconds)` is a timestamptz.
        if function.name() == "to_timestamp"
            && function
                .args
                .first()
                .and_then(|arg| arg.get_type(schema).ok())
                .is_some_and(|t| t.is_numeric())
        {
            let zoned = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
            return Ok(Transformed::yes(expr.cast_to(&zoned, schema)?));
        }
    }
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
        // timestamp - timestamp: days and time, over PostgreSQL's whole
        // range (DataFusion's nanosecond interval spans 292 years).
        (DataType::Timestamp(..), Operator::Minus, DataType::Timestamp(..)) => {
            Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::clone(difference),
                vec![(**left).clone(), (**right).clone()],
            )))
        }
        // timestamp - date, date - timestamp: the date is read as midnight.
        (DataType::Timestamp(_, None), Operator::Minus, DataType::Date32)
        | (DataType::Date32, Operator::Minus, DataType::Timestamp(_, None)) => {
            Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::clone(difference),
                vec![
                    (**left).clone().cast_to(&timestamp, schema)?,
                    (**right).clone().cast_to(&timestamp, schema)?,
                ],
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
    fn exact_fields_as_postgres() {
        // PostgreSQL 15: extract(epoch FROM interval '1 year 2 mons 3 days
        // 04:05:06.5') = 37015506.500000, extract(second FROM interval
        // '-1 min -2.25 sec') = -2.250000.
        let time = (4 * 3600 + 5 * 60 + 6) * 1_000_000 + 500_000;
        assert_eq!(
            exact_field("epoch", time, Some((14, 3))),
            Some(37_015_506_500_000)
        );
        assert_eq!(
            exact_field("second", -62_250_000, Some((0, 0))),
            Some(-2_250_000)
        );
        // Before 1970 the second of a timestamp is still 0 to 59.
        assert_eq!(exact_field("second", -1_000_000, None), Some(59_000_000));
        assert_eq!(exact_field("hour", 0, None), None);
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
