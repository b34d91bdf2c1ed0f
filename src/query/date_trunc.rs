//! `date_trunc(unit, value [, zone])` as PostgreSQL's `timestamp_trunc`,
//! `timestamptz_trunc` and `interval_trunc`: a timestamp is truncated on its
//! own clock; a timestamptz (and a date, which PostgreSQL reads as one at
//! midnight) on the session zone's clock, or the zone given, keeping the
//! offset it had for units below a day; an interval field by field.
//! Microseconds throughout, so year 1 and 9999 truncate as any other.
//!
//! DataFusion's `date_trunc` truncates a timestamptz in UTC, turns a date
//! into a timestamp, and overflows before 1677.

use std::sync::Arc;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, IntervalMonthDayNanoBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::settings::zone::SessionZone;
use super::{PgError, SessionInfo, sqlstate};

pub fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(DateTrunc {
        signature: Signature::user_defined(Volatility::Stable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DateTrunc {
    signature: Signature,
}

/// The units PostgreSQL truncates to, finest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
}

impl Unit {
    /// PostgreSQL's spellings (`DecodeUnits`), case-insensitive.
    fn parse(text: &str) -> Option<Unit> {
        Some(match text.trim().to_lowercase().as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => {
                Unit::Microseconds
            }
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => {
                Unit::Milliseconds
            }
            "second" | "seconds" | "s" | "sec" | "secs" => Unit::Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Unit::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Hour,
            "day" | "days" | "d" => Unit::Day,
            "week" | "weeks" | "w" => Unit::Week,
            "month" | "months" | "mon" | "mons" => Unit::Month,
            "quarter" | "qtr" => Unit::Quarter,
            "year" | "years" | "y" | "yr" | "yrs" => Unit::Year,
            "decade" | "decades" | "dec" | "decs" => Unit::Decade,
            "century" | "centuries" | "c" | "cent" => Unit::Century,
            "millennium" | "millennia" | "mil" | "mils" => Unit::Millennium,
            _ => return None,
        })
    }
}

fn unit_error(unit: &str, type_name: &str) -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("unit \"{unit}\" not recognized for type {type_name}"),
    )))
}

fn out_of_range() -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        "timestamp out of range",
    )))
}

/// PostgreSQL's year arithmetic for the units above a year: year 1 is the
/// first of its decade's... century's and millennium's count.
fn truncate_year(year: i32, unit: Unit) -> i32 {
    match unit {
        Unit::Decade if year > 0 => year / 10 * 10,
        Unit::Decade => -((8 - (year - 1)) / 10) * 10,
        Unit::Century if year > 0 => (year + 99) / 100 * 100 - 99,
        Unit::Century => -((99 - (year - 1)) / 100) * 100 - 99,
        Unit::Millennium if year > 0 => (year + 999) / 1000 * 1000 - 999,
        Unit::Millennium => -((999 - (year - 1)) / 1000) * 1000 - 999,
        _ => year,
    }
}

/// Wall-clock microseconds truncated to `unit`.
fn truncate_local(micros: i64, unit: Unit) -> Option<i64> {
    let moment: NaiveDateTime = chrono::DateTime::from_timestamp_micros(micros)?.naive_utc();
    let date = moment.date();
    let day = |date: NaiveDate| Some(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_micros());
    let time = moment.time();
    let within_day = i64::from(time.num_seconds_from_midnight()) * 1_000_000
        + i64::from(time.nanosecond() / 1_000);
    let midnight = micros - within_day;
    let step = |size: i64| Some(midnight + within_day - within_day.rem_euclid(size));
    match unit {
        Unit::Microseconds => Some(micros),
        Unit::Milliseconds => step(1_000),
        Unit::Second => step(1_000_000),
        Unit::Minute => step(60_000_000),
        Unit::Hour => step(3_600_000_000),
        Unit::Day => Some(midnight),
        Unit::Week => {
            day(date - chrono::Days::new(u64::from(date.weekday().num_days_from_monday())))
        }
        Unit::Month => day(date.with_day(1)?),
        Unit::Quarter => day(NaiveDate::from_ymd_opt(
            date.year(),
            (date.month() - 1) / 3 * 3 + 1,
            1,
        )?),
        Unit::Year | Unit::Decade | Unit::Century | Unit::Millennium => {
            // chrono counts 1 BC as year 0, PostgreSQL as -1.
            let year = date.year();
            let pg_year = if year <= 0 { year - 1 } else { year };
            let truncated = truncate_year(pg_year, unit);
            let chrono_year = if truncated < 0 {
                truncated + 1
            } else {
                truncated
            };
            day(NaiveDate::from_ymd_opt(chrono_year, 1, 1)?)
        }
    }
}

/// `timestamptz_trunc_internal`: truncated on `zone`'s clock; for a day
/// and above the offset is the one in force at the result, below a day the
/// value's own.
fn truncate_instant(utc: i64, unit: Unit, zone: &SessionZone) -> Option<i64> {
    let local = super::temporal::session_to_local(zone, utc)?;
    let truncated = truncate_local(local, unit)?;
    if unit >= Unit::Day {
        super::temporal::session_from_local(zone, truncated)
    } else {
        truncated.checked_sub(local - utc)
    }
}

/// `interval_trunc`: every field finer than `unit` zeroed; weeks refused
/// as PostgreSQL refuses them.
fn truncate_interval(value: IntervalMonthDayNano, unit: Unit) -> Option<IntervalMonthDayNano> {
    let IntervalMonthDayNano {
        months,
        days,
        nanoseconds,
    } = value;
    let time = |size: i64| nanoseconds - nanoseconds % size;
    Some(match unit {
        Unit::Week => return None,
        Unit::Microseconds => IntervalMonthDayNano::new(months, days, time(1_000)),
        Unit::Milliseconds => IntervalMonthDayNano::new(months, days, time(1_000_000)),
        Unit::Second => IntervalMonthDayNano::new(months, days, time(1_000_000_000)),
        Unit::Minute => IntervalMonthDayNano::new(months, days, time(60_000_000_000)),
        Unit::Hour => IntervalMonthDayNano::new(months, days, time(3_600_000_000_000)),
        Unit::Day => IntervalMonthDayNano::new(months, days, 0),
        Unit::Month => IntervalMonthDayNano::new(months, 0, 0),
        Unit::Quarter => IntervalMonthDayNano::new(months / 12 * 12 + months % 12 / 3 * 3, 0, 0),
        Unit::Year => IntervalMonthDayNano::new(months / 12 * 12, 0, 0),
        Unit::Decade => IntervalMonthDayNano::new(months / 120 * 120, 0, 0),
        Unit::Century => IntervalMonthDayNano::new(months / 1200 * 1200, 0, 0),
        Unit::Millennium => IntervalMonthDayNano::new(months / 12000 * 12000, 0, 0),
    })
}

use super::functions::timestamptz;

impl ScalarUDFImpl for DateTrunc {
    fn name(&self) -> &str {
        "date_trunc"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let value = match arg_types.get(1) {
            Some(DataType::Timestamp(_, None)) => DataType::Timestamp(TimeUnit::Microsecond, None),
            Some(DataType::Timestamp(_, Some(_)) | DataType::Date32 | DataType::Date64) => {
                timestamptz()
            }
            Some(DataType::Interval(_)) => DataType::Interval(IntervalUnit::MonthDayNano),
            // An untyped literal is read as timestamptz, as PostgreSQL
            // resolves `date_trunc('day', '2024-01-01 10:00')`.
            Some(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null) => {
                timestamptz()
            }
            _ => {
                return Err(super::json::no_such_function("date_trunc", arg_types));
            }
        };
        match arg_types.len() {
            2 => Ok(vec![DataType::Utf8, value]),
            3 if value == timestamptz() => Ok(vec![DataType::Utf8, value, DataType::Utf8]),
            _ => Err(DataFusionError::Plan(
                "function date_trunc() takes a unit, a value and for a timestamptz a time zone"
                    .to_owned(),
            )),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match arg_types.get(1) {
            Some(DataType::Timestamp(_, None)) => DataType::Timestamp(TimeUnit::Microsecond, None),
            Some(DataType::Interval(_)) => DataType::Interval(IntervalUnit::MonthDayNano),
            _ => timestamptz(),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let session_zone = SessionInfo::of(&args.config_options)
            .map(|info| info.settings().time_zone())
            .unwrap_or(SessionZone::UTC);
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let units = arrays[0].as_string::<i32>();
        let values = &arrays[1];
        let zones = arrays.get(2).map(|zones| zones.as_string::<i32>());
        let rows = values.len();
        let unit_of = |row: usize, type_name: &str| {
            let text = units.value(row);
            Unit::parse(text).ok_or_else(|| unit_error(text, type_name))
        };
        let array: ArrayRef = match values.data_type() {
            DataType::Interval(_) => {
                let values = values.as_primitive::<IntervalMonthDayNanoType>();
                let mut out = IntervalMonthDayNanoBuilder::with_capacity(rows);
                for row in 0..rows {
                    if values.is_null(row) || units.is_null(row) {
                        out.append_null();
                        continue;
                    }
                    let unit = unit_of(row, "interval")?;
                    match truncate_interval(values.value(row), unit) {
                        Some(value) => out.append_value(value),
                        None => {
                            return Err(DataFusionError::External(Box::new(PgError::new(
                                sqlstate::FEATURE_NOT_SUPPORTED,
                                format!(
                                    "unit \"{}\" not supported for type interval",
                                    units.value(row)
                                ),
                            ))));
                        }
                    }
                }
                Arc::new(out.finish())
            }
            DataType::Timestamp(_, zoned) => {
                let zoned = zoned.is_some();
                let values = values.as_primitive::<TimestampMicrosecondType>();
                let mut out = TimestampMicrosecondBuilder::with_capacity(rows);
                for row in 0..rows {
                    if values.is_null(row)
                        || units.is_null(row)
                        || zones.is_some_and(|zones| zones.is_null(row))
                    {
                        out.append_null();
                        continue;
                    }
                    let value = values.value(row);
                    let truncated = if zoned {
                        let unit = unit_of(row, "timestamp with time zone")?;
                        let zone = match zones {
                            Some(zones) => super::temporal::named_zone(zones.value(row))?,
                            None => session_zone.clone(),
                        };
                        truncate_instant(value, unit, &zone)
                    } else {
                        truncate_local(value, unit_of(row, "timestamp without time zone")?)
                    };
                    out.append_value(truncated.ok_or_else(out_of_range)?);
                }
                let out = out.finish();
                Arc::new(if zoned { out.with_timezone("UTC") } else { out })
            }
            other => {
                return Err(DataFusionError::Internal(format!(
                    "date_trunc() of {other} was not coerced"
                )));
            }
        };
        super::functions::columnar(array, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> i64 {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
            .unwrap()
            .and_utc()
            .timestamp_micros()
    }

    #[test]
    fn units_truncate_as_postgres() {
        let value = at("2024-08-17 13:45:12.345678");
        let cases = [
            (Unit::Milliseconds, "2024-08-17 13:45:12.345"),
            (Unit::Second, "2024-08-17 13:45:12.0"),
            (Unit::Hour, "2024-08-17 13:00:00.0"),
            (Unit::Week, "2024-08-12 00:00:00.0"),
            (Unit::Quarter, "2024-07-01 00:00:00.0"),
            (Unit::Decade, "2020-01-01 00:00:00.0"),
            (Unit::Century, "2001-01-01 00:00:00.0"),
            (Unit::Millennium, "2001-01-01 00:00:00.0"),
        ];
        for (unit, expected) in cases {
            assert_eq!(truncate_local(value, unit), Some(at(expected)), "{unit:?}");
        }
        assert_eq!(
            truncate_local(at("2000-06-01 00:00:00.0"), Unit::Century),
            Some(at("1901-01-01 00:00:00.0"))
        );
        assert_eq!(
            truncate_local(at("0001-03-04 05:06:07.0"), Unit::Month),
            Some(at("0001-03-01 00:00:00.0"))
        );
        assert_eq!(
            truncate_local(at("1969-12-31 23:59:59.5"), Unit::Second),
            Some(at("1969-12-31 23:59:59.0"))
        );
    }

    #[test]
    fn timestamptz_truncates_on_the_zone_clock() {
        let zone = SessionZone::Named(chrono_tz::America::New_York);
        // 2024-03-10 07:30 UTC is 03:30 EDT, after the spring-forward gap:
        // midnight that day was EST (-05).
        assert_eq!(
            truncate_instant(at("2024-03-10 07:30:00.0"), Unit::Day, &zone),
            Some(at("2024-03-10 05:00:00.0"))
        );
        assert_eq!(
            truncate_instant(at("2024-03-10 07:30:00.0"), Unit::Hour, &zone),
            Some(at("2024-03-10 07:00:00.0"))
        );
    }

    #[test]
    fn intervals_truncate_field_by_field() {
        let value = IntervalMonthDayNano::new(14, 3, 3_723_000_000_000);
        assert_eq!(
            truncate_interval(value, Unit::Hour),
            Some(IntervalMonthDayNano::new(14, 3, 3_600_000_000_000))
        );
        assert_eq!(
            truncate_interval(value, Unit::Year),
            Some(IntervalMonthDayNano::new(12, 0, 0))
        );
        assert_eq!(truncate_interval(value, Unit::Week), None);
    }
}
