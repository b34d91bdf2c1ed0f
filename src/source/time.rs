//! Time bounds on a source read: `refresh_data_window` and the append
//! high-water mark become a predicate on the dataset's `time_column`, written
//! for the column's `time_format` so that the source can evaluate it; and the
//! reverse, the instants an accelerated time column holds.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array};
use datafusion::arrow::compute::{CastOptions, cast, cast_with_options};
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit};
use datafusion::arrow::error::ArrowError;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::{Expr, col, lit};

use crate::config::TimeFormat;

/// Rows whose `column` is after `after` (or at it, when `inclusive`).
#[derive(Debug, Clone)]
pub struct TimeBound {
    pub column: String,
    pub format: Option<TimeFormat>,
    pub after: DateTime<Utc>,
    pub inclusive: bool,
}

impl TimeBound {
    /// The predicate over a source whose columns are `schema`; the error
    /// names the column and says what is wrong.
    pub fn predicate(&self, schema: &DFSchema) -> Result<Expr, String> {
        let (_, field) = schema
            .qualified_field_with_unqualified_name(&self.column)
            .map_err(|_| {
                format!(
                    "time_column '{}' is not a column of the source",
                    self.column
                )
            })?;
        let format = match self.format {
            Some(format) => format,
            None => default_format(field.data_type()).ok_or_else(|| {
                format!(
                    "time_column '{}' has type {}, which needs a time_format",
                    self.column,
                    field.data_type()
                )
            })?,
        };
        let column = col(datafusion::common::Column::new_unqualified(&self.column));
        let (column, bound) = match format {
            TimeFormat::Timestamp => (column, self.timestamp(field.data_type(), None)),
            TimeFormat::Timestamptz => (column, self.timestamp(field.data_type(), Some("UTC"))),
            TimeFormat::Iso8601 => (
                datafusion::prelude::cast(
                    column,
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                ),
                self.timestamp(&DataType::Null, Some("UTC")),
            ),
            TimeFormat::UnixSeconds => (column, lit(self.after.timestamp())),
            TimeFormat::UnixMillis => (column, lit(self.after.timestamp_millis())),
            TimeFormat::UnixNanos => (column, lit(self.nanos()?)),
            // A date holds every instant of its day: the day of the bound is
            // included whole.
            TimeFormat::Date => {
                let day = self.after.date_naive();
                let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).expect("a valid date");
                let days = i32::try_from((day - epoch).num_days())
                    .map_err(|_| format!("{day} is out of the date range"))?;
                return Ok(column.gt_eq(lit(ScalarValue::Date32(Some(days)))));
            }
        };
        Ok(if self.inclusive {
            column.gt_eq(bound)
        } else {
            column.gt(bound)
        })
    }

    /// The bound as a timestamp literal: UTC wall-clock time for a column
    /// without a time zone, an instant for one with. A timestamp column gets
    /// a literal of its own unit and zone, so that the comparison is exact
    /// and needs no cast of the column; anything else gets microseconds.
    fn timestamp(&self, column_type: &DataType, zone: Option<&str>) -> Expr {
        let after = &self.after;
        let value = match column_type {
            DataType::Timestamp(unit, zone) => match unit {
                TimeUnit::Second => {
                    ScalarValue::TimestampSecond(Some(after.timestamp()), zone.clone())
                }
                TimeUnit::Millisecond => {
                    ScalarValue::TimestampMillisecond(Some(after.timestamp_millis()), zone.clone())
                }
                TimeUnit::Microsecond => {
                    ScalarValue::TimestampMicrosecond(Some(after.timestamp_micros()), zone.clone())
                }
                TimeUnit::Nanosecond => match after.timestamp_nanos_opt() {
                    Some(nanos) => ScalarValue::TimestampNanosecond(Some(nanos), zone.clone()),
                    None => ScalarValue::TimestampMicrosecond(
                        Some(after.timestamp_micros()),
                        zone.clone(),
                    ),
                },
            },
            _ => ScalarValue::TimestampMicrosecond(
                Some(after.timestamp_micros()),
                zone.map(Into::into),
            ),
        };
        lit(value)
    }

    fn nanos(&self) -> Result<i64, String> {
        self.after
            .timestamp_nanos_opt()
            .ok_or_else(|| format!("{} is out of the unix_nanos range", self.after))
    }
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The instants `array` (a time column of format `format`) holds, as
/// microseconds since the Unix epoch (UTC wall-clock time for a column
/// without a time zone), rounded down; NULL where the value is NULL or is
/// not a time. Used to find the newest row of an acceleration and to compare
/// versions of a row, never to filter what clients see.
pub fn instants(array: &ArrayRef, format: Option<TimeFormat>) -> Result<Int64Array, ArrowError> {
    let micros = |array: &ArrayRef, zone: Option<Arc<str>>| -> Result<Int64Array, ArrowError> {
        let as_micros = cast_with_options(
            array,
            &DataType::Timestamp(TimeUnit::Microsecond, zone),
            &CastOptions {
                safe: true,
                ..Default::default()
            },
        )?;
        Ok(cast(&as_micros, &DataType::Int64)?
            .as_primitive::<Int64Type>()
            .clone())
    };
    match array.data_type() {
        DataType::Timestamp(_, zone) => micros(array, zone.clone()),
        DataType::Date32 | DataType::Date64 => micros(array, None),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            micros(array, Some("UTC".into()))
        }
        data_type if data_type.is_integer() => {
            let values = cast(array, &DataType::Int64)?;
            let values = values.as_primitive::<Int64Type>();
            Ok(match format {
                Some(TimeFormat::UnixMillis) => values.unary_opt(|v| v.checked_mul(1_000)),
                Some(TimeFormat::UnixNanos) => values.unary(|v| v.div_euclid(1_000)),
                // A day number (time_format: date on an integer column).
                Some(TimeFormat::Date) => values.unary_opt(|v| v.checked_mul(MICROS_PER_DAY)),
                _ => values.unary_opt(|v| v.checked_mul(1_000_000)),
            })
        }
        other => Err(ArrowError::InvalidArgumentError(format!(
            "a time column of type {other} holds no instants"
        ))),
    }
}

/// The instant `micros` (as [`instants`] gives it).
pub fn instant(micros: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros(micros)
}

/// The format a column's type implies when `time_format` is not given.
fn default_format(data_type: &DataType) -> Option<TimeFormat> {
    Some(match data_type {
        DataType::Timestamp(_, None) => TimeFormat::Timestamp,
        DataType::Timestamp(_, Some(_)) => TimeFormat::Timestamptz,
        DataType::Date32 | DataType::Date64 => TimeFormat::Date,
        DataType::Int32 | DataType::Int64 | DataType::UInt32 | DataType::UInt64 => {
            TimeFormat::UnixSeconds
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => TimeFormat::Iso8601,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Date32Array, StringArray, TimestampNanosecondArray};

    #[test]
    fn instants_are_microseconds_for_every_time_format() {
        // 2026-01-02T03:04:05.000006007Z
        let nanos = 1_767_323_045_000_006_007i64;
        let micros = nanos / 1_000;
        let check = |array: ArrayRef, format: Option<TimeFormat>, expected: Option<i64>| {
            let got = instants(&array, format).unwrap();
            assert_eq!(got.iter().next().unwrap(), expected, "{array:?} {format:?}");
        };
        check(
            Arc::new(TimestampNanosecondArray::from(vec![nanos])),
            None,
            Some(micros),
        );
        check(
            Arc::new(Int64Array::from(vec![nanos])),
            Some(TimeFormat::UnixNanos),
            Some(micros),
        );
        check(
            Arc::new(Int64Array::from(vec![nanos / 1_000_000])),
            Some(TimeFormat::UnixMillis),
            Some(nanos / 1_000_000 * 1_000),
        );
        check(
            Arc::new(Int64Array::from(vec![nanos / 1_000_000_000])),
            None,
            Some(nanos / 1_000_000_000 * 1_000_000),
        );
        check(
            Arc::new(StringArray::from(vec!["2026-01-02T03:04:05.000006Z"])),
            Some(TimeFormat::Iso8601),
            Some(micros),
        );
        check(
            Arc::new(StringArray::from(vec!["not a time"])),
            Some(TimeFormat::Iso8601),
            None,
        );
        let day = (nanos / 86_400_000_000_000) as i32;
        check(
            Arc::new(Date32Array::from(vec![day])),
            Some(TimeFormat::Date),
            Some(i64::from(day) * MICROS_PER_DAY),
        );
        assert_eq!(instant(micros).unwrap().timestamp_micros(), micros);
    }
}
