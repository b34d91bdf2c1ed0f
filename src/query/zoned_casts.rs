//! `timestamptz` values read on the session's clock, as PostgreSQL reads
//! them under `SET TimeZone` (pgjdbc, for one, sets it to the JVM's zone):
//!
//! - a `timestamptz` cast to `timestamp`, `date` or `time` (`placed::date`,
//!   also the casts DataFusion adds itself) is the wall-clock time in the
//!   session zone;
//! - a `timestamp`, `date` or text without an offset read as a
//!   `timestamptz` (`placed >= date '2024-01-02'`, `placed >=
//!   '2024-01-02'`) is wall-clock time in the session zone;
//! - `extract()`/`date_part()` of a `timestamptz` count its fields on that
//!   clock (`epoch` excepted, which counts seconds since 1970 in UTC);
//! - `timestamptz ± interval` adds months and days on that clock.
//!
//! Values keep their instant in Arrow's `Timestamp(_, Some("UTC"))`, whose
//! casts to and from wall-clock types use UTC's clock: such casts become
//! [`WallClock`] conversions, which read the session zone when the
//! statement runs (as `date_trunc()` does), with PostgreSQL's reading of a
//! wall-clock time that a daylight-saving change skips or repeats; text is
//! read with its own offset, or without one on the session clock. A
//! statement is planned in its session's zone
//! (DataFusion's `execution.time_zone`), and the plan cache keeps plans of
//! different zones apart (see `Session`). In a UTC session nothing changes.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, TimestampMicrosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{ScalarFunction, TryCast};
use datafusion::logical_expr::{
    BinaryExpr, Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use super::SessionInfo;
use super::settings::zone::SessionZone;

#[derive(Debug, Default)]
pub struct ZonedCasts;

impl AnalyzerRule for ZonedCasts {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let Some(zone) = config
            .execution
            .time_zone
            .as_deref()
            .filter(|zone| !is_utc(zone))
        else {
            return Ok(plan);
        };
        let zone: Arc<str> = Arc::from(zone);
        super::numeric::rewrite_expressions(plan, |expr, schema| {
            match on_session_clock(&expr, schema, &zone) {
                Some(rewritten) => Ok(Transformed::yes(rewritten)),
                None => rewrite(expr, schema),
            }
        })
    }

    fn name(&self) -> &str {
        "pgaccel_zoned_casts"
    }
}

fn is_utc(zone: &str) -> bool {
    matches!(zone, "UTC" | "+00:00" | "Etc/UTC" | "Z")
}

/// A wall-clock type: what a `timestamptz` is read as on a clock.
fn wall_clock(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Timestamp(_, None)
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
    )
}

/// What is read as wall-clock time when it becomes a `timestamptz`.
fn read_on_clock(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Timestamp(_, None)
            | DataType::Date32
            | DataType::Date64
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
    )
}

/// `value` (a `timestamptz`) as the session zone's wall clock, a
/// `timestamp` in microseconds.
fn local(value: Expr) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::new_from_impl(WallClock::new(true))),
        vec![value],
    ))
}

/// `value` (a `timestamp`, a `date` or text) read as wall-clock time in
/// the session zone: a `timestamptz` in microseconds.
fn instant(value: Expr) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::new_from_impl(WallClock::new(false))),
        vec![value],
    ))
}

/// `value` cast to `to` unless it has that type already.
fn cast_to(value: Expr, from: &DataType, to: &DataType) -> Expr {
    if from == to {
        value
    } else {
        Expr::Cast(Cast::new(Box::new(value), to.clone()))
    }
}

/// `value` cast to `to` as PostgreSQL casts it in the session zone, when
/// that differs from the engine's cast; `None` when it does not.
fn zoned_cast(value: &Expr, to: &DataType, schema: &DFSchema) -> Option<Expr> {
    let from = value.get_type(schema).ok()?;
    let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
    let utc = DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")));
    match (&from, to) {
        (DataType::Timestamp(_, Some(_)), to) if wall_clock(to) => {
            Some(cast_to(local(value.clone()), &micros, to))
        }
        (from, DataType::Timestamp(_, Some(_))) if read_on_clock(from) => {
            Some(cast_to(instant(value.clone()), &utc, to))
        }
        _ => None,
    }
}

fn rewrite(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let rewritten = match &expr {
        // The conversions' own casts are already on the right clock.
        Expr::Cast(cast) if !is_conversion(&cast.expr) => {
            zoned_cast(&cast.expr, cast.field.data_type(), schema)
        }
        Expr::TryCast(TryCast { expr: value, field }) => {
            zoned_cast(value, field.data_type(), schema)
        }
        // Fields of a `timestamptz`, but its epoch, on the session clock.
        Expr::ScalarFunction(function)
            if matches!(
                function.name(),
                "date_part" | "datepart" | super::temporal::EXTRACT_FUNCTION
            ) =>
        {
            match function.args.as_slice() {
                [Expr::Literal(ScalarValue::Utf8(Some(field)), _), value]
                    if !field.eq_ignore_ascii_case("epoch")
                        && !field.to_lowercase().starts_with("timezone") =>
                {
                    match value.get_type(schema) {
                        Ok(DataType::Timestamp(_, Some(_))) => {
                            Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                                Arc::clone(&function.func),
                                vec![function.args[0].clone(), local(value.clone())],
                            )))
                        }
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    };
    Ok(match rewritten {
        Some(rewritten) => Transformed::yes(rewritten),
        None => Transformed::no(expr),
    })
}

/// `timestamptz ± interval`: PostgreSQL adds the months and days on the
/// session clock (`+ interval '1 day'` across a daylight-saving change
/// keeps the time of day) and the time in absolute terms, as the engine
/// does in the zone a value's type names. The value is relabelled with the
/// session zone for the sum (which changes no instant), and the sum with
/// the value's own zone again.
fn on_session_clock(expr: &Expr, schema: &DFSchema, zone: &Arc<str>) -> Option<Expr> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = expr else {
        return None;
    };
    if !matches!(op, Operator::Plus | Operator::Minus) {
        return None;
    }
    let relabel = |value: &Expr, to: DataType| Expr::Cast(Cast::new(Box::new(value.clone()), to));
    let (left_type, right_type) = (left.get_type(schema).ok()?, right.get_type(schema).ok()?);
    let (instant, interval_first) = match (&left_type, &right_type) {
        (DataType::Timestamp(_, Some(_)), DataType::Interval(_)) => (&left_type, false),
        (DataType::Interval(_), DataType::Timestamp(_, Some(_))) if *op == Operator::Plus => {
            (&right_type, true)
        }
        _ => return None,
    };
    let DataType::Timestamp(unit, Some(tz)) = instant else {
        return None;
    };
    if **tz == **zone {
        return None;
    }
    let on_clock = DataType::Timestamp(*unit, Some(Arc::clone(zone)));
    let (left, right) = if interval_first {
        ((**left).clone(), relabel(right, on_clock))
    } else {
        (relabel(left, on_clock), (**right).clone())
    };
    Some(relabel(
        &Expr::BinaryExpr(BinaryExpr::new(Box::new(left), *op, Box::new(right))),
        instant.clone(),
    ))
}

/// Whether `expr` is one of [`WallClock`]'s conversions.
fn is_conversion(expr: &Expr) -> bool {
    matches!(expr, Expr::ScalarFunction(function)
        if matches!(function.name(), TO_WALL_CLOCK | FROM_WALL_CLOCK))
}

const TO_WALL_CLOCK: &str = "pgaccel_wall_clock";
const FROM_WALL_CLOCK: &str = "pgaccel_from_wall_clock";

/// An instant as the session zone's wall clock (`to_local`), or a wall-clock
/// time (or a date, at midnight) as the instant it is in the session zone.
#[derive(Debug, PartialEq, Eq, Hash)]
struct WallClock {
    to_local: bool,
    signature: Signature,
}

impl WallClock {
    fn new(to_local: bool) -> Self {
        WallClock {
            to_local,
            signature: Signature::any(1, Volatility::Stable),
        }
    }
}

impl ScalarUDFImpl for WallClock {
    fn name(&self) -> &str {
        if self.to_local {
            TO_WALL_CLOCK
        } else {
            FROM_WALL_CLOCK
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.to_local {
            DataType::Timestamp(TimeUnit::Microsecond, None)
        } else {
            DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")))
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let zone = SessionInfo::of(&args.config_options)
            .map(|info| info.settings().time_zone())
            .unwrap_or(SessionZone::UTC);
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        if !self.to_local && arrays[0].data_type().is_string() {
            return super::functions::columnar(text_instants(&arrays[0], &zone)?, scalar);
        }
        // The value's microseconds as they are: UTC for an instant, the
        // clock's reading for a wall-clock time (a date at midnight).
        let micros = cast(
            &cast(
                &arrays[0],
                &DataType::Timestamp(TimeUnit::Microsecond, None),
            )?,
            &DataType::Int64,
        )?;
        let converted: TimestampMicrosecondArray = micros
            .as_primitive::<Int64Type>()
            .iter()
            .map(|value| {
                value.and_then(|value| {
                    if self.to_local {
                        super::temporal::session_to_local(&zone, value)
                    } else {
                        super::temporal::session_from_local(&zone, value)
                    }
                })
            })
            .collect();
        let converted: ArrayRef = if self.to_local {
            Arc::new(converted)
        } else {
            Arc::new(converted.with_timezone("UTC"))
        };
        super::functions::columnar(converted, scalar)
    }
}

/// Text read as a `timestamptz`: with its own offset or zone as written,
/// without one as wall-clock time in `zone` (the engine's parser reads it
/// so, but refuses a time a daylight-saving change skips, which PostgreSQL
/// reads with the offset before the change).
fn text_instants(texts: &ArrayRef, zone: &SessionZone) -> Result<ArrayRef> {
    use datafusion::arrow::compute::{CastOptions, cast_with_options};
    let instant = DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from(zone.engine_name())));
    let lenient = CastOptions {
        safe: true,
        ..Default::default()
    };
    let parsed = cast_with_options(texts, &instant, &lenient)?;
    let parsed = parsed.as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>();
    let mut out = Vec::with_capacity(texts.len());
    for row in 0..texts.len() {
        if parsed.is_valid(row) || texts.is_null(row) {
            out.push(parsed.is_valid(row).then(|| parsed.value(row)));
            continue;
        }
        // Not read in the zone: as a wall-clock time, or the parser's error.
        let text = texts.slice(row, 1);
        let wall = cast(&text, &DataType::Timestamp(TimeUnit::Microsecond, None))
            .or_else(|_| cast(&text, &instant))?;
        let wall = cast(&wall, &DataType::Int64)?;
        let wall = wall.as_primitive::<Int64Type>();
        out.push(
            wall.is_valid(0)
                .then(|| super::temporal::session_from_local(zone, wall.value(0)))
                .flatten(),
        );
    }
    Ok(Arc::new(
        TimestampMicrosecondArray::from(out).with_timezone("UTC"),
    ))
}
