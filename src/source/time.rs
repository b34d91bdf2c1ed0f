//! Time bounds on a source read: `refresh_data_window` (and, later, the
//! append high-water mark) become a predicate on the dataset's
//! `time_column`, written for the column's `time_format` so that the source
//! can evaluate it.

use chrono::{DateTime, Utc};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::logical_expr::{Expr, col, lit};
use datafusion::prelude::cast;

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
            TimeFormat::Timestamp => (column, self.timestamp(None)),
            TimeFormat::Timestamptz => (column, self.timestamp(Some("UTC"))),
            TimeFormat::Iso8601 => (
                cast(
                    column,
                    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
                ),
                self.timestamp(Some("UTC")),
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
    /// without a time zone, an instant for one with.
    fn timestamp(&self, zone: Option<&str>) -> Expr {
        lit(ScalarValue::TimestampMicrosecond(
            Some(self.after.timestamp_micros()),
            zone.map(Into::into),
        ))
    }

    fn nanos(&self) -> Result<i64, String> {
        self.after
            .timestamp_nanos_opt()
            .ok_or_else(|| format!("{} is out of the unix_nanos range", self.after))
    }
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
