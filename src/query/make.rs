//! `make_timestamp(year, month, day, hour, min, sec)` and `make_time(hour,
//! min, sec)`: the timestamp or time of those fields, seconds with a
//! fraction (to the microsecond), as PostgreSQL builds them; impossible
//! fields are 22008. (`make_date` is DataFusion's, which gives PostgreSQL's
//! answer; DataFusion's `make_time` takes whole seconds only.)

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Time64MicrosecondBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::{PgError, sqlstate};

pub fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(MakeTimestamp {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MakeTimestamp {
    signature: Signature,
}

impl ScalarUDFImpl for MakeTimestamp {
    fn name(&self) -> &str {
        "make_timestamp"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 6 {
            return Err(DataFusionError::Plan(
                "function make_timestamp() takes year, month, day, hour, min and sec".to_owned(),
            ));
        }
        let mut types = vec![DataType::Int64; 5];
        types.push(DataType::Float64);
        Ok(types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Timestamp(TimeUnit::Microsecond, None))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let rows = arrays.first().map_or(0, |a| a.len());
        let mut out = TimestampMicrosecondBuilder::with_capacity(rows);
        for row in 0..rows {
            if arrays.iter().any(|array| array.is_null(row)) {
                out.append_null();
                continue;
            }
            let field = |index: usize| arrays[index].as_primitive::<Int64Type>().value(row);
            let seconds = arrays[5].as_primitive::<Float64Type>().value(row);
            out.append_value(micros(
                [field(0), field(1), field(2), field(3), field(4)],
                seconds,
            )?);
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

fn out_of_range(fields: [i64; 5], seconds: f64) -> DataFusionError {
    let [year, month, day, hour, minute] = fields;
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        format!(
            "date field value out of range: {year}-{month:02}-{day:02} {hour:02}:{minute:02}:{seconds}"
        ),
    )))
}

/// Microseconds since 1970 of the fields; year 0 does not exist and a
/// negative year is BC (-1 is 1 BC).
fn micros(fields: [i64; 5], seconds: f64) -> Result<i64> {
    let [year, month, day, hour, minute] = fields;
    let error = || out_of_range(fields, seconds);
    let year = match year {
        0 => return Err(error()),
        y if y < 0 => y + 1,
        y => y,
    };
    let date = i32::try_from(year)
        .ok()
        .zip(u32::try_from(month).ok())
        .zip(u32::try_from(day).ok())
        .and_then(|((y, m), d)| chrono::NaiveDate::from_ymd_opt(y, m, d))
        .ok_or_else(error)?;
    if !(0..24).contains(&hour) || !(0..60).contains(&minute) || !(0.0..60.0).contains(&seconds) {
        return Err(error());
    }
    let whole = seconds.trunc() as u32;
    let fraction = ((seconds - seconds.trunc()) * 1e6).round() as u32;
    let time = chrono::NaiveTime::from_hms_micro_opt(hour as u32, minute as u32, whole, fraction)
        .ok_or_else(error)?;
    Ok(date.and_time(time).and_utc().timestamp_micros())
}

pub fn time_function() -> ScalarUDF {
    ScalarUDF::new_from_impl(MakeTime {
        signature: Signature::user_defined(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MakeTime {
    signature: Signature,
}

/// Microseconds since midnight of the fields, as PostgreSQL's `make_time`
/// checks them (24:00:00 itself is a time).
fn time_micros(hour: i64, minute: i64, seconds: f64) -> Result<i64> {
    let valid =
        (0..24).contains(&hour) && (0..60).contains(&minute) && (0.0..60.0).contains(&seconds)
            || (hour == 24 && minute == 0 && seconds == 0.0);
    if !valid {
        return Err(DataFusionError::External(Box::new(PgError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("time field value out of range: {hour:02}:{minute:02}:{seconds:02}"),
        ))));
    }
    Ok((hour * 3600 + minute * 60) * 1_000_000 + (seconds * 1e6).round_ties_even() as i64)
}

impl ScalarUDFImpl for MakeTime {
    fn name(&self) -> &str {
        "make_time"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 3 {
            return Err(DataFusionError::Plan(
                "function make_time() takes hour, min and sec".to_owned(),
            ));
        }
        Ok(vec![DataType::Int64, DataType::Int64, DataType::Float64])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Time64(TimeUnit::Microsecond))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let rows = arrays.first().map_or(0, |a| a.len());
        let mut out = Time64MicrosecondBuilder::with_capacity(rows);
        for row in 0..rows {
            if arrays.iter().any(|array| array.is_null(row)) {
                out.append_null();
                continue;
            }
            let field = |index: usize| arrays[index].as_primitive::<Int64Type>().value(row);
            let seconds = arrays[2].as_primitive::<Float64Type>().value(row);
            out.append_value(time_micros(field(0), field(1), seconds)?);
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}
