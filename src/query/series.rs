//! `generate_series(start, stop [, step])` in FROM as PostgreSQL's table
//! function: series of integers (`integer` when every argument is, else
//! `bigint`), of numerics (at the larger scale of start and step), of
//! timestamps and of timestamptz with an interval step (each value the one
//! before plus the step, months and days counted on the session zone's
//! wall clock for timestamptz; dates are read as timestamptz at midnight, as
//! PostgreSQL casts them); the column is named `generate_series`, and
//! `WITH ORDINALITY` adds the 1-based row number as `ordinality`.
//!
//! DataFusion's own series names its column `value`, types integer series
//! `bigint`, has no numeric or timestamptz series, and turns dates into
//! timestamps without a zone.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;

use async_trait::async_trait;
use chrono::{Days, Months, NaiveDateTime};
use datafusion::arrow::array::{
    ArrayRef, Decimal128Builder, Int32Builder, Int64Builder, RecordBatch,
    TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{
    DataType, Field, IntervalMonthDayNano, Schema, SchemaRef, TimeUnit,
};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::memory::{LazyBatchGenerator, LazyMemoryExec};

use super::settings::zone::SessionZone;
use super::{PgError, SessionInfo, sqlstate};

/// The name `WITH ORDINALITY` calls are rewritten to (see `compat`).
pub const ORDINALITY_FUNCTION: &str = "pgaccel_generate_series_ordinality";

/// Registers `generate_series` (replacing DataFusion's) and its
/// `WITH ORDINALITY` form.
pub fn register(state: &mut datafusion::execution::SessionState) {
    state.register_udtf(
        "generate_series",
        Arc::new(GenerateSeries { ordinality: false }),
    );
    state.register_udtf(
        ORDINALITY_FUNCTION,
        Arc::new(GenerateSeries { ordinality: true }),
    );
}

#[derive(Debug)]
struct GenerateSeries {
    ordinality: bool,
}

fn error(code: &'static str, message: impl Into<String>) -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(code, message.into())))
}

fn no_function(arguments: &[ScalarValue]) -> DataFusionError {
    let types: Vec<String> = arguments
        .iter()
        .map(|value| super::json::pg_type_name(&value.data_type()).to_string())
        .collect();
    error(
        sqlstate::UNDEFINED_FUNCTION,
        format!(
            "function generate_series({}) does not exist",
            types.join(", ")
        ),
    )
}

/// What a series counts in.
#[derive(Debug, Clone)]
enum Kind {
    Integer {
        int4: bool,
    },
    /// Counted in digits `factor` times finer than the `scale` shown.
    Numeric {
        scale: i8,
        factor: i128,
    },
    Time {
        zone: Option<SessionZone>,
    },
}

/// Where a series starts, stops and how it steps, `None` for a NULL
/// argument (no rows).
#[derive(Debug, Clone)]
enum Bounds {
    /// Integers, and numerics as digits at the series' scale.
    Exact { start: i128, stop: i128, step: i128 },
    /// Microseconds (UTC instants for timestamptz).
    Time {
        start: i64,
        stop: i64,
        step: IntervalMonthDayNano,
    },
}

impl TableFunctionImpl for GenerateSeries {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let mut values = Vec::with_capacity(args.exprs().len());
        for expr in args.exprs() {
            match expr {
                Expr::Literal(value, _) => values.push(value.clone()),
                _ => {
                    return Err(error(
                        sqlstate::FEATURE_NOT_SUPPORTED,
                        "generate_series() over values of other tables (LATERAL) is not supported: its arguments must be constants",
                    ));
                }
            }
        }
        if !(2..=3).contains(&values.len()) {
            return Err(no_function(&values));
        }
        let zone = SessionInfo::of(args.session().config_options())
            .map(|info| info.settings().time_zone())
            .unwrap_or(SessionZone::UTC);
        let (kind, bounds) = resolve(&values, zone)?;
        let value_type = match &kind {
            Kind::Integer { int4: true } => DataType::Int32,
            Kind::Integer { int4: false } => DataType::Int64,
            Kind::Numeric { scale, .. } => DataType::Decimal128(38, *scale),
            Kind::Time { zone: None } => DataType::Timestamp(TimeUnit::Microsecond, None),
            Kind::Time { zone: Some(_) } => {
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            }
        };
        let mut fields = vec![Field::new("generate_series", value_type, false)];
        if self.ordinality {
            fields.push(Field::new("ordinality", DataType::Int64, false));
        }
        Ok(Arc::new(SeriesTable {
            schema: Arc::new(Schema::new(fields)),
            kind,
            bounds,
        }))
    }
}

/// The digits of an exact number at `scale`, `None` for a value of another
/// type.
fn exact(value: &ScalarValue, scale: i8) -> Option<Option<i128>> {
    let scaled = |digits: i128, from: i8| -> Option<i128> {
        let shift = u32::try_from(scale - from).ok()?;
        digits.checked_mul(10i128.checked_pow(shift)?)
    };
    Some(match value {
        ScalarValue::Null => None,
        ScalarValue::Int8(v) => v.and_then(|v| scaled(v.into(), 0)),
        ScalarValue::Int16(v) => v.and_then(|v| scaled(v.into(), 0)),
        ScalarValue::Int32(v) => v.and_then(|v| scaled(v.into(), 0)),
        ScalarValue::Int64(v) => v.and_then(|v| scaled(v.into(), 0)),
        ScalarValue::Decimal128(v, _, s) => v.and_then(|v| scaled(v, *s)),
        _ => return None,
    })
}

/// Microseconds of a date or timestamp argument (dates and timestamptz in
/// `zone`), `None` for a value of another type.
fn instant(value: &ScalarValue, zone: Option<&SessionZone>) -> Option<Option<i64>> {
    let micros = |v: i64, unit: &TimeUnit| match unit {
        TimeUnit::Second => v.checked_mul(1_000_000),
        TimeUnit::Millisecond => v.checked_mul(1_000),
        TimeUnit::Microsecond => Some(v),
        TimeUnit::Nanosecond => Some(v.div_euclid(1_000)),
    };
    let timestamp = |value: &ScalarValue| -> Option<Option<(i64, TimeUnit)>> {
        Some(match value {
            ScalarValue::TimestampSecond(v, _) => v.map(|v| (v, TimeUnit::Second)),
            ScalarValue::TimestampMillisecond(v, _) => v.map(|v| (v, TimeUnit::Millisecond)),
            ScalarValue::TimestampMicrosecond(v, _) => v.map(|v| (v, TimeUnit::Microsecond)),
            ScalarValue::TimestampNanosecond(v, _) => v.map(|v| (v, TimeUnit::Nanosecond)),
            _ => return None,
        })
    };
    Some(match value {
        ScalarValue::Null => None,
        ScalarValue::Date32(days) => days.and_then(|days| {
            let local = i64::from(days).checked_mul(86_400_000_000)?;
            match zone {
                Some(zone) => super::temporal::session_from_local(zone, local),
                None => Some(local),
            }
        }),
        other => timestamp(other)?.and_then(|(v, unit)| micros(v, &unit)),
    })
}

fn resolve(values: &[ScalarValue], zone: SessionZone) -> Result<(Kind, Option<Bounds>)> {
    let type_of = |value: &ScalarValue| value.data_type();
    let integer = |t: &DataType| t.is_integer() || t.is_null();
    let time = |t: &DataType| {
        matches!(
            t,
            DataType::Date32 | DataType::Timestamp(..) | DataType::Null
        )
    };
    let (start, stop) = (&values[0], &values[1]);
    let step = values.get(2);
    let exact_bounds = |scale: i8| -> Result<Option<Bounds>> {
        let one = ScalarValue::Int32(Some(1));
        let step = step.unwrap_or(&one);
        let (Some(start), Some(stop), Some(step)) = (
            exact(start, scale).ok_or_else(|| no_function(values))?,
            exact(stop, scale).ok_or_else(|| no_function(values))?,
            exact(step, scale).ok_or_else(|| no_function(values))?,
        ) else {
            return Ok(None);
        };
        if step == 0 {
            return Err(zero_step());
        }
        Ok(Some(Bounds::Exact { start, stop, step }))
    };
    let types: Vec<DataType> = values.iter().map(type_of).collect();
    if types.iter().all(integer) {
        let int4 = types.iter().all(|t| {
            matches!(
                t,
                DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Null
            )
        });
        return Ok((Kind::Integer { int4 }, exact_bounds(0)?));
    }
    if types
        .iter()
        .all(|t| integer(t) || matches!(t, DataType::Decimal128(..)))
    {
        let scale_of = |value: Option<&ScalarValue>| match value.map(ScalarValue::data_type) {
            Some(DataType::Decimal128(_, scale)) => scale.max(0),
            _ => 0,
        };
        // Counted at the largest scale of the three; PostgreSQL prints
        // start + k × step at the larger scale of those two.
        let shown = scale_of(Some(start)).max(scale_of(step));
        // PostgreSQL returns the start as it is and each later value at
        // the larger scale: one column scale cannot print both.
        if scale_of(Some(start)) < shown {
            return Err(error(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "generate_series() of numerics whose start has fewer decimals than its step is not supported: write the start with as many decimals",
            ));
        }
        let scale = shown.max(scale_of(Some(stop)));
        let factor = 10i128.pow(u32::from(scale.abs_diff(shown)));
        return Ok((
            Kind::Numeric {
                scale: shown,
                factor,
            },
            exact_bounds(scale)?,
        ));
    }
    if types[..2].iter().all(time) && step.is_some() {
        // A timestamp without zone among the bounds picks PostgreSQL's
        // timestamp series; dates and timestamptz its timestamptz series.
        let plain = types[..2]
            .iter()
            .any(|t| matches!(t, DataType::Timestamp(_, None)));
        let zone = (!plain).then_some(zone);
        let step = match step {
            Some(ScalarValue::IntervalMonthDayNano(step)) => *step,
            Some(ScalarValue::Null) => None,
            _ => return Err(no_function(values)),
        };
        let start = instant(start, zone.as_ref()).ok_or_else(|| no_function(values))?;
        let stop = instant(stop, zone.as_ref()).ok_or_else(|| no_function(values))?;
        let (Some(start), Some(stop), Some(step)) = (start, stop, step) else {
            return Ok((Kind::Time { zone }, None));
        };
        if step == IntervalMonthDayNano::ZERO {
            return Err(zero_step());
        }
        return Ok((
            Kind::Time { zone },
            Some(Bounds::Time { start, stop, step }),
        ));
    }
    Err(no_function(values))
}

fn zero_step() -> DataFusionError {
    error(
        sqlstate::INVALID_PARAMETER_VALUE,
        "step size cannot equal zero",
    )
}

/// PostgreSQL's `timestamp_pl_interval` (and `timestamptz_pl_interval` in
/// `zone`): months first (a day past the month's end becomes its last
/// day), then days, on the wall clock; then the time, on the instant.
fn plus_interval(
    micros: i64,
    step: IntervalMonthDayNano,
    zone: Option<&SessionZone>,
) -> Option<i64> {
    let mut value = micros;
    if step.months != 0 || step.days != 0 {
        let local = match zone {
            Some(zone) => super::temporal::session_to_local(zone, value)?,
            None => value,
        };
        let mut moment: NaiveDateTime = chrono::DateTime::from_timestamp_micros(local)?.naive_utc();
        let months = Months::new(step.months.unsigned_abs());
        moment = if step.months >= 0 {
            moment.checked_add_months(months)?
        } else {
            moment.checked_sub_months(months)?
        };
        let days = Days::new(u64::from(step.days.unsigned_abs()));
        moment = if step.days >= 0 {
            moment.checked_add_days(days)?
        } else {
            moment.checked_sub_days(days)?
        };
        let local = moment.and_utc().timestamp_micros();
        value = match zone {
            Some(zone) => super::temporal::session_from_local(zone, local)?,
            None => local,
        };
    }
    value.checked_add(step.nanoseconds / 1_000)
}

#[derive(Debug)]
struct SeriesTable {
    schema: SchemaRef,
    kind: Kind,
    bounds: Option<Bounds>,
}

#[async_trait]
impl TableProvider for SeriesTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let generator = Generator {
            schema: Arc::clone(&self.schema),
            kind: self.kind.clone(),
            bounds: self.bounds.clone(),
            batch_size: state.config_options().execution.batch_size.get(),
            next: None,
            count: 0,
            done: self.bounds.is_none(),
        };
        let generator: Arc<RwLock<dyn LazyBatchGenerator>> = Arc::new(RwLock::new(generator));
        Ok(Arc::new(
            LazyMemoryExec::try_new(Arc::clone(&self.schema), vec![generator])?
                .with_projection(projection.cloned()),
        ))
    }
}

/// Produces the series a batch at a time: a long series never sits in
/// memory whole.
#[derive(Debug, Clone)]
struct Generator {
    schema: SchemaRef,
    kind: Kind,
    bounds: Option<Bounds>,
    batch_size: usize,
    /// The next value (digits or microseconds), once started.
    next: Option<i128>,
    count: i64,
    done: bool,
}

impl fmt::Display for Generator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "generate_series: {:?}", self.bounds)
    }
}

impl Generator {
    /// The values of the next batch, as digits or microseconds.
    fn next_values(&mut self) -> Result<Vec<i128>> {
        let mut out = Vec::new();
        let Some(bounds) = &self.bounds else {
            return Ok(out);
        };
        while !self.done && out.len() < self.batch_size {
            match bounds {
                Bounds::Exact { start, stop, step } => {
                    let current = self.next.unwrap_or(*start);
                    if (*step > 0 && current > *stop) || (*step < 0 && current < *stop) {
                        self.done = true;
                        break;
                    }
                    out.push(current);
                    match current.checked_add(*step) {
                        Some(next) => self.next = Some(next),
                        None => self.done = true,
                    }
                }
                Bounds::Time { start, stop, step } => {
                    let current = self.next.map_or(*start, |n| n as i64);
                    let zone = match &self.kind {
                        Kind::Time { zone } => zone.as_ref(),
                        _ => None,
                    };
                    // PostgreSQL compares the step with a zero interval,
                    // a month counted as 30 days.
                    let length = (i128::from(step.months) * 30 + i128::from(step.days))
                        * 86_400_000_000_000
                        + i128::from(step.nanoseconds);
                    let forward = length > 0;
                    if (forward && current > *stop) || (!forward && current < *stop) {
                        self.done = true;
                        break;
                    }
                    out.push(i128::from(current));
                    match plus_interval(current, *step, zone) {
                        Some(next) if next != current => self.next = Some(i128::from(next)),
                        _ => self.done = true,
                    }
                }
            }
        }
        Ok(out)
    }
}

impl LazyBatchGenerator for Generator {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn generate_next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let values = self.next_values()?;
        if values.is_empty() {
            return Ok(None);
        }
        let column: ArrayRef = match &self.kind {
            Kind::Integer { int4: true } => {
                let mut b = Int32Builder::with_capacity(values.len());
                for v in &values {
                    b.append_value(*v as i32);
                }
                Arc::new(b.finish())
            }
            Kind::Integer { int4: false } => {
                let mut b = Int64Builder::with_capacity(values.len());
                for v in &values {
                    b.append_value(*v as i64);
                }
                Arc::new(b.finish())
            }
            Kind::Numeric { scale, factor } => {
                let mut b = Decimal128Builder::with_capacity(values.len());
                for v in &values {
                    b.append_value(*v / *factor);
                }
                Arc::new(b.finish().with_precision_and_scale(38, *scale)?)
            }
            Kind::Time { zone } => {
                let mut b = TimestampMicrosecondBuilder::with_capacity(values.len());
                for v in &values {
                    b.append_value(*v as i64);
                }
                let array = b.finish();
                Arc::new(match zone {
                    Some(_) => array.with_timezone("UTC"),
                    None => array,
                })
            }
        };
        let mut columns = vec![column];
        if self.schema.fields().len() == 2 {
            let first = self.count + 1;
            self.count += values.len() as i64;
            columns.push(Arc::new(
                datafusion::arrow::array::Int64Array::from_iter_values(first..=self.count),
            ));
        }
        Ok(Some(RecordBatch::try_new(
            Arc::clone(&self.schema),
            columns,
        )?))
    }

    fn reset_state(&self) -> Arc<RwLock<dyn LazyBatchGenerator>> {
        let mut fresh = self.clone();
        fresh.next = None;
        fresh.count = 0;
        fresh.done = self.bounds.is_none();
        Arc::new(RwLock::new(fresh))
    }
}
