//! PostgreSQL's math functions that DataFusion lacks:
//!
//! - `div(a, b)`: the numeric quotient truncated toward zero (scale 0);
//!   integers are read as numerics, as PostgreSQL casts them.
//! - `width_bucket(operand, low, high, count)`: the bucket of `operand`
//!   among `count` equal buckets from `low` to `high` (0 below, count + 1
//!   above; either direction), exact for numerics and as PostgreSQL's
//!   float8 arithmetic for doubles.
//! - `power(x, y)` of doubles with PostgreSQL's errors (2201F for a zero
//!   to a negative power and a negative number to a fractional one, where
//!   DataFusion returns infinity and NaN; 22003 for an overflow) and its
//!   infinities; numerics stay numerics for [`super::numeric`].
//! - `to_hex(n)` of an `integer` in its 32 bits (`ffffffff` for -1) and of
//!   a `bigint` in its 64, where DataFusion widens every integer to 64.
//! - `cbrt(x)` of a double by the C library's `cbrt`, as PostgreSQL
//!   computes it (Rust's own rounds some values one unit in the last place
//!   away: `cbrt(2)` prints `1.2599210498948732` there,
//!   `1.2599210498948734` in PostgreSQL).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal128Builder, Int32Builder, StringArray,
};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Float64Type, Int32Type, Int64Type, i256,
};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::{PgError, sqlstate};

pub fn functions() -> Vec<Arc<ScalarUDF>> {
    [
        Arc::new(ScalarUDF::new_from_impl(Div {
            signature: Signature::user_defined(Volatility::Immutable),
        })),
        Arc::new(ScalarUDF::new_from_impl(WidthBucket {
            signature: Signature::user_defined(Volatility::Immutable),
        })),
        Arc::new(ScalarUDF::new_from_impl(ToHex {
            signature: Signature::user_defined(Volatility::Immutable),
        })),
        Arc::new(ScalarUDF::new_from_impl(Power {
            signature: Signature::user_defined(Volatility::Immutable),
            aliases: vec!["pow".to_owned()],
        })),
    ]
    .into_iter()
    .chain(FLOAT_FUNCTIONS.into_iter().map(|(name, eval)| {
        Arc::new(ScalarUDF::new_from_impl(FloatFunction {
            name,
            eval,
            signature: Signature::user_defined(Volatility::Immutable),
        }))
    }))
    .collect()
}

/// `to_hex(integer)` and `to_hex(bigint)`: the two's complement of the
/// argument's own width.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToHex {
    signature: Signature,
}

impl ScalarUDFImpl for ToHex {
    fn name(&self) -> &str {
        "to_hex"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [
                DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::UInt8
                | DataType::UInt16,
            ] => Ok(vec![DataType::Int32]),
            [DataType::Int64 | DataType::UInt32 | DataType::UInt64 | DataType::Null] => {
                Ok(vec![DataType::Int64])
            }
            // Unknown-typed text reads as an integer, as PostgreSQL reads it.
            [DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8] => {
                Ok(vec![DataType::Int64])
            }
            _ => Err(DataFusionError::Plan(format!(
                "function to_hex({}) does not exist",
                arg_types
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let hex = |array: &ArrayRef| -> ArrayRef {
            let texts: StringArray = match array.data_type() {
                DataType::Int32 => array
                    .as_primitive::<Int32Type>()
                    .iter()
                    .map(|value| value.map(|value| format!("{:x}", value as u32)))
                    .collect(),
                _ => array
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|value| value.map(|value| format!("{:x}", value as u64)))
                    .collect(),
            };
            Arc::new(texts)
        };
        match &args.args[0] {
            ColumnarValue::Array(array) => Ok(ColumnarValue::Array(hex(array))),
            ColumnarValue::Scalar(scalar) => Ok(ColumnarValue::Scalar(
                ScalarValue::try_from_array(&hex(&scalar.to_array()?), 0)?,
            )),
        }
    }
}

// The C library's functions, which PostgreSQL's float8 functions call.
// Reached by glibc's `*f64` aliases of them: the plain names resolve to the
// Rust ports linked into the binary, and Rust computes some (asinh) by
// formulas of its own; both round some values one unit in the last place
// away from glibc (`cbrt(27)` is `3.0000000000000004` in PostgreSQL).
#[cfg(target_env = "gnu")]
mod c {
    unsafe extern "C" {
        pub safe fn sinf64(x: f64) -> f64;
        pub safe fn cosf64(x: f64) -> f64;
        pub safe fn tanf64(x: f64) -> f64;
        pub safe fn asinf64(x: f64) -> f64;
        pub safe fn acosf64(x: f64) -> f64;
        pub safe fn atanf64(x: f64) -> f64;
        pub safe fn sinhf64(x: f64) -> f64;
        pub safe fn coshf64(x: f64) -> f64;
        pub safe fn tanhf64(x: f64) -> f64;
        pub safe fn asinhf64(x: f64) -> f64;
        pub safe fn acoshf64(x: f64) -> f64;
        pub safe fn atanhf64(x: f64) -> f64;
        pub safe fn expf64(x: f64) -> f64;
        pub safe fn logf64(x: f64) -> f64;
        pub safe fn log10f64(x: f64) -> f64;
        pub safe fn cbrtf64(x: f64) -> f64;
    }
}

#[cfg(not(target_env = "gnu"))]
mod c {
    pub fn sinf64(x: f64) -> f64 {
        x.sin()
    }
    pub fn cosf64(x: f64) -> f64 {
        x.cos()
    }
    pub fn tanf64(x: f64) -> f64 {
        x.tan()
    }
    pub fn asinf64(x: f64) -> f64 {
        x.asin()
    }
    pub fn acosf64(x: f64) -> f64 {
        x.acos()
    }
    pub fn atanf64(x: f64) -> f64 {
        x.atan()
    }
    pub fn sinhf64(x: f64) -> f64 {
        x.sinh()
    }
    pub fn coshf64(x: f64) -> f64 {
        x.cosh()
    }
    pub fn tanhf64(x: f64) -> f64 {
        x.tanh()
    }
    pub fn asinhf64(x: f64) -> f64 {
        x.asinh()
    }
    pub fn acoshf64(x: f64) -> f64 {
        x.acosh()
    }
    pub fn atanhf64(x: f64) -> f64 {
        x.atanh()
    }
    pub fn expf64(x: f64) -> f64 {
        x.exp()
    }
    pub fn logf64(x: f64) -> f64 {
        x.ln()
    }
    pub fn log10f64(x: f64) -> f64 {
        x.log10()
    }
    pub fn cbrtf64(x: f64) -> f64 {
        x.cbrt()
    }
}

type FloatResult = std::result::Result<f64, PgError>;

/// A float function's evaluation of one value.
type FloatEval = fn(f64) -> FloatResult;

fn out_of_range_input() -> PgError {
    PgError::new(sqlstate::NUMERIC_OUT_OF_RANGE, "input is out of range")
}

/// PostgreSQL's `check_float8_val`: an infinity from finite input is an
/// overflow, a zero from non-zero input an underflow.
fn checked(value: f64, inf_is_valid: bool, zero_is_valid: bool) -> FloatResult {
    if value.is_infinite() && !inf_is_valid {
        return Err(PgError::new(
            sqlstate::NUMERIC_OUT_OF_RANGE,
            "value out of range: overflow",
        ));
    }
    if value == 0.0 && !zero_is_valid {
        return Err(PgError::new(
            sqlstate::NUMERIC_OUT_OF_RANGE,
            "value out of range: underflow",
        ));
    }
    Ok(value)
}

fn logarithm(x: f64, log: impl Fn(f64) -> f64) -> FloatResult {
    if x == 0.0 {
        return Err(PgError::new(
            sqlstate::INVALID_ARGUMENT_FOR_LOGARITHM,
            "cannot take logarithm of zero",
        ));
    }
    if x < 0.0 {
        return Err(PgError::new(
            sqlstate::INVALID_ARGUMENT_FOR_LOGARITHM,
            "cannot take logarithm of a negative number",
        ));
    }
    checked(log(x), x.is_infinite(), x == 1.0)
}

/// A trigonometric function: NaN stays NaN, an infinity is out of range.
fn trigonometric(x: f64, function: impl Fn(f64) -> f64) -> FloatResult {
    if x.is_nan() {
        return Ok(x);
    }
    if x.is_infinite() {
        return Err(out_of_range_input());
    }
    checked(function(x), false, true)
}

/// An inverse function defined from -1 to 1.
fn inverse(x: f64, function: impl Fn(f64) -> f64) -> FloatResult {
    if x.is_nan() {
        return Ok(x);
    }
    if !(-1.0..=1.0).contains(&x) {
        return Err(out_of_range_input());
    }
    checked(function(x), false, true)
}

/// PostgreSQL's `RADIANS_PER_DEGREE`.
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295;

/// PostgreSQL's float8 functions of one argument, with its checks.
const FLOAT_FUNCTIONS: [(&str, FloatEval); 19] = [
    ("sin", |x| trigonometric(x, |v| c::sinf64(v))),
    ("cos", |x| trigonometric(x, |v| c::cosf64(v))),
    ("tan", |x| {
        if x.is_nan() {
            return Ok(x);
        }
        if x.is_infinite() {
            return Err(out_of_range_input());
        }
        checked(c::tanf64(x), true, true)
    }),
    ("cot", |x| {
        if x.is_nan() {
            return Ok(x);
        }
        if x.is_infinite() {
            return Err(out_of_range_input());
        }
        Ok(1.0 / c::tanf64(x))
    }),
    ("asin", |x| inverse(x, |v| c::asinf64(v))),
    ("acos", |x| inverse(x, |v| c::acosf64(v))),
    ("atan", |x| {
        if x.is_nan() {
            return Ok(x);
        }
        checked(c::atanf64(x), false, true)
    }),
    ("sinh", |x| Ok(c::sinhf64(x))),
    ("cosh", |x| checked(c::coshf64(x), true, false)),
    ("tanh", |x| checked(c::tanhf64(x), false, true)),
    ("asinh", |x| Ok(c::asinhf64(x))),
    ("acosh", |x| {
        if x < 1.0 {
            return Err(out_of_range_input());
        }
        Ok(c::acoshf64(x))
    }),
    ("atanh", |x| {
        if !(-1.0..=1.0).contains(&x) && !x.is_nan() {
            return Err(out_of_range_input());
        }
        Ok(match x {
            -1.0 => f64::NEG_INFINITY,
            1.0 => f64::INFINITY,
            _ => c::atanhf64(x),
        })
    }),
    ("exp", |x| {
        if x.is_nan() {
            return Ok(x);
        }
        if x.is_infinite() {
            return Ok(if x > 0.0 { x } else { 0.0 });
        }
        checked(c::expf64(x), false, false)
    }),
    ("ln", |x| logarithm(x, |v| c::logf64(v))),
    ("log10", |x| logarithm(x, |v| c::log10f64(v))),
    ("cbrt", |x| {
        checked(c::cbrtf64(x), x.is_infinite(), x == 0.0)
    }),
    ("degrees", |x| {
        checked(x / RADIANS_PER_DEGREE, x.is_infinite(), x == 0.0)
    }),
    ("radians", |x| {
        checked(x * RADIANS_PER_DEGREE, x.is_infinite(), x == 0.0)
    }),
];

/// PostgreSQL's `dpow`.
fn power(x: f64, y: f64) -> FloatResult {
    const POWER: &str = "2201F";
    if x.is_nan() {
        return Ok(if y.is_nan() || y != 0.0 {
            f64::NAN
        } else {
            1.0
        });
    }
    if y.is_nan() {
        return Ok(if x != 1.0 { f64::NAN } else { 1.0 });
    }
    if x == 0.0 && y < 0.0 {
        return Err(PgError::new(
            POWER,
            "zero raised to a negative power is undefined",
        ));
    }
    if x < 0.0 && y.floor() != y {
        return Err(PgError::new(
            POWER,
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if y.is_infinite() {
        let magnitude = x.abs();
        return Ok(match (magnitude == 1.0, y > 0.0, magnitude > 1.0) {
            (true, ..) => 1.0,
            (false, true, true) | (false, false, false) => f64::INFINITY,
            _ => 0.0,
        });
    }
    if x.is_infinite() {
        let odd = (y / 2.0).floor() != y / 2.0;
        return Ok(match (y == 0.0, x > 0.0, y > 0.0) {
            (true, ..) => 1.0,
            (false, true, true) => x,
            (false, true, false) => 0.0,
            (false, false, true) => {
                if odd {
                    x
                } else {
                    -x
                }
            }
            (false, false, false) => {
                if odd {
                    -0.0
                } else {
                    0.0
                }
            }
        });
    }
    checked(x.powf(y), false, x == 0.0)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Power {
    signature: Signature,
    aliases: Vec<String>,
}

impl ScalarUDFImpl for Power {
    fn name(&self) -> &str {
        "power"
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [x, y] = arg_types else {
            return Err(DataFusionError::Plan(
                "function power() takes two numbers".to_owned(),
            ));
        };
        let exact = |t: &DataType| t.is_integer() || t.is_null() || is_decimal(t);
        // power(numeric, numeric) is computed in numeric (see the module doc).
        if (is_decimal(x) || is_decimal(y)) && exact(x) && exact(y) {
            return Ok(vec![x.clone(), y.clone()]);
        }
        // An untyped literal (`'NaN'`) is read as a double.
        let number = |t: &DataType| {
            t.is_numeric()
                || t.is_null()
                || matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
        };
        if number(x) && number(y) {
            return Ok(vec![DataType::Float64, DataType::Float64]);
        }
        Err(DataFusionError::Plan(
            "function power() takes two numbers".to_owned(),
        ))
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let x = datafusion::arrow::compute::cast(&arrays[0], &DataType::Float64)?;
        let y = datafusion::arrow::compute::cast(&arrays[1], &DataType::Float64)?;
        let (x, y) = (
            x.as_primitive::<Float64Type>(),
            y.as_primitive::<Float64Type>(),
        );
        let mut out = datafusion::arrow::array::Float64Builder::with_capacity(x.len());
        for (x, y) in x.iter().zip(y.iter()) {
            match x.zip(y) {
                Some((x, y)) => out
                    .append_value(power(x, y).map_err(|e| DataFusionError::External(Box::new(e)))?),
                None => out.append_null(),
            }
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

fn is_decimal(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Decimal128(..) | DataType::Decimal256(..)
    )
}

/// One of [`FLOAT_FUNCTIONS`]. A numeric argument keeps its type here so
/// that [`super::numeric`] can refuse the functions PostgreSQL computes in
/// numeric; integers become doubles.
#[derive(Debug)]
struct FloatFunction {
    name: &'static str,
    eval: FloatEval,
    signature: Signature,
}

/// Functions are told apart by name (each name has one evaluation).
impl PartialEq for FloatFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for FloatFunction {}

impl std::hash::Hash for FloatFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for FloatFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [decimal @ (DataType::Decimal128(..) | DataType::Decimal256(..))] => {
                Ok(vec![decimal.clone()])
            }
            [t] if t.is_numeric() || t.is_null() => Ok(vec![DataType::Float64]),
            _ => Err(DataFusionError::Plan(format!(
                "function {}() takes one number",
                self.name
            ))),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let values = datafusion::arrow::compute::cast(&arrays[0], &DataType::Float64)?;
        let values = values.as_primitive::<Float64Type>();
        let mut out = datafusion::arrow::array::Float64Builder::with_capacity(values.len());
        for value in values {
            match value {
                Some(value) => out.append_value(
                    (self.eval)(value).map_err(|e| DataFusionError::External(Box::new(e)))?,
                ),
                None => out.append_null(),
            }
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

fn pg_error(code: &'static str, message: &str) -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(code, message.to_owned())))
}

/// The numeric type an exact argument is read as (integers at scale 0).
fn as_numeric(data_type: &DataType) -> Option<DataType> {
    match data_type {
        DataType::Decimal128(p, s) => Some(DataType::Decimal128(*p, *s)),
        t if t.is_integer() || t.is_null() => Some(DataType::Decimal128(38, 0)),
        _ => None,
    }
}

fn scale_of(data_type: &DataType) -> i8 {
    match data_type {
        DataType::Decimal128(_, s) => *s,
        _ => 0,
    }
}

/// `value` (at `from` decimals) at `to` decimals, in 256 bits.
fn rescaled(value: i128, from: i8, to: i8) -> i256 {
    let shift = u32::try_from(i32::from(to) - i32::from(from)).unwrap_or(0);
    i256::from_i128(value) * i256::from_i128(10).wrapping_pow(shift)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Div {
    signature: Signature,
}

impl ScalarUDFImpl for Div {
    fn name(&self) -> &str {
        "div"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [a, b] => match (as_numeric(a), as_numeric(b)) {
                (Some(a), Some(b)) => Ok(vec![a, b]),
                _ => Err(DataFusionError::Plan(
                    "function div() takes two numerics".to_owned(),
                )),
            },
            _ => Err(DataFusionError::Plan(
                "function div() takes two numerics".to_owned(),
            )),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let (a_scale, b_scale) = (
            scale_of(arrays[0].data_type()),
            scale_of(arrays[1].data_type()),
        );
        let scale = a_scale.max(b_scale);
        let dividends = arrays[0].as_primitive::<Decimal128Type>();
        let divisors = arrays[1].as_primitive::<Decimal128Type>();
        let mut out = Decimal128Builder::with_capacity(dividends.len());
        for row in 0..dividends.len() {
            if dividends.is_null(row) || divisors.is_null(row) {
                out.append_null();
                continue;
            }
            let divisor = rescaled(divisors.value(row), b_scale, scale);
            if divisor == i256::ZERO {
                return Err(pg_error(sqlstate::DIVISION_BY_ZERO, "division by zero"));
            }
            // i256 division truncates toward zero, as div() does.
            let quotient = rescaled(dividends.value(row), a_scale, scale) / divisor;
            let quotient = quotient
                .to_i128()
                .filter(|q| q.unsigned_abs() < 10u128.pow(38))
                .ok_or_else(|| {
                    pg_error(
                        sqlstate::NUMERIC_OUT_OF_RANGE,
                        "value overflows numeric format",
                    )
                })?;
            out.append_value(quotient);
        }
        let array: ArrayRef = Arc::new(out.finish().with_precision_and_scale(38, 0)?);
        super::functions::columnar(array, scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct WidthBucket {
    signature: Signature,
}

fn bucket_error(message: &str) -> DataFusionError {
    pg_error("2201G", message)
}

/// PostgreSQL's `width_bucket_float8`.
fn float_bucket(operand: f64, low: f64, high: f64, count: i32) -> Result<i32> {
    if count <= 0 {
        return Err(bucket_error("count must be greater than zero"));
    }
    if operand.is_nan() || low.is_nan() || high.is_nan() {
        return Err(bucket_error(
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if low.is_infinite() || high.is_infinite() {
        return Err(bucket_error("lower and upper bounds must be finite"));
    }
    let overflow = || pg_error(sqlstate::NUMERIC_OUT_OF_RANGE, "integer out of range");
    let count_f = f64::from(count);
    let inside = |position: f64| {
        let bucket = (count_f * position).floor();
        let bucket = if bucket >= count_f {
            count_f - 1.0
        } else {
            bucket
        };
        bucket as i32 + 1
    };
    if low < high {
        if operand < low {
            Ok(0)
        } else if operand >= high {
            count.checked_add(1).ok_or_else(overflow)
        } else if (high - low).is_finite() {
            Ok(inside((operand - low) / (high - low)))
        } else {
            Ok(inside(
                (operand / 2.0 - low / 2.0) / (high / 2.0 - low / 2.0),
            ))
        }
    } else if low > high {
        if operand > low {
            Ok(0)
        } else if operand <= high {
            count.checked_add(1).ok_or_else(overflow)
        } else if (low - high).is_finite() {
            Ok(inside((low - operand) / (low - high)))
        } else {
            Ok(inside(
                (low / 2.0 - operand / 2.0) / (low / 2.0 - high / 2.0),
            ))
        }
    } else {
        Err(bucket_error("lower bound cannot equal upper bound"))
    }
}

/// PostgreSQL's `width_bucket_numeric`: exact, digits at one scale.
fn exact_bucket(operand: i256, low: i256, high: i256, count: i32) -> Result<i32> {
    if count <= 0 {
        return Err(bucket_error("count must be greater than zero"));
    }
    let overflow = || pg_error(sqlstate::NUMERIC_OUT_OF_RANGE, "integer out of range");
    let count_256 = i256::from(count);
    let inside = |offset: i256, span: i256| -> Result<i32> {
        // floor(offset × count / span) + 1, offset and span positive.
        let bucket = offset * count_256 / span;
        bucket
            .to_i128()
            .and_then(|b| i32::try_from(b + 1).ok())
            .ok_or_else(overflow)
    };
    if low < high {
        if operand < low {
            Ok(0)
        } else if operand >= high {
            count.checked_add(1).ok_or_else(overflow)
        } else {
            inside(operand - low, high - low)
        }
    } else if low > high {
        if operand > low {
            Ok(0)
        } else if operand <= high {
            count.checked_add(1).ok_or_else(overflow)
        } else {
            inside(low - operand, low - high)
        }
    } else {
        Err(bucket_error("lower bound cannot equal upper bound"))
    }
}

impl ScalarUDFImpl for WidthBucket {
    fn name(&self) -> &str {
        "width_bucket"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // `width_bucket(operand, thresholds)`: both of one comparable type.
        if let [operand, DataType::List(item) | DataType::LargeList(item)] = arg_types {
            let common = match (operand, item.data_type()) {
                (DataType::Null, other) | (other, DataType::Null) => Some(other.clone()),
                (a, b) if a == b => Some(a.clone()),
                (a, b) => {
                    datafusion::logical_expr::type_coercion::binary::comparison_coercion(a, b)
                }
            };
            return match common.filter(|common| !common.is_nested()) {
                Some(common) => Ok(vec![common.clone(), DataType::new_list(common, true)]),
                None => Err(DataFusionError::Plan(format!(
                    "function width_bucket({}, {}) does not exist",
                    super::json::pg_type_name(operand),
                    super::json::pg_type_name(&arg_types[1])
                ))),
            };
        }
        let [operand, low, high, count] = arg_types else {
            return Err(DataFusionError::Plan(
                "function width_bucket() takes an operand, two bounds and a count".to_owned(),
            ));
        };
        let bounds = [operand, low, high];
        let count = if count.is_integer() || count.is_null() {
            DataType::Int32
        } else {
            return Err(DataFusionError::Plan(
                "width_bucket()'s count must be an integer".to_owned(),
            ));
        };
        // All exact: PostgreSQL's numeric form; any double: its float8 form.
        let numeric: Option<Vec<DataType>> = bounds.iter().map(|t| as_numeric(t)).collect();
        Ok(match numeric {
            Some(_) => {
                let scale = bounds.iter().map(|t| scale_of(t)).max().unwrap_or(0);
                vec![DataType::Decimal128(38, scale); 3]
                    .into_iter()
                    .chain([count])
                    .collect()
            }
            None if bounds.iter().all(|t| t.is_numeric() || t.is_null()) => {
                vec![
                    DataType::Float64,
                    DataType::Float64,
                    DataType::Float64,
                    count,
                ]
            }
            None => {
                return Err(DataFusionError::Plan(
                    "function width_bucket() takes numbers".to_owned(),
                ));
            }
        })
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        if let [operands, thresholds] = arrays.as_slice() {
            let buckets = threshold_buckets(operands, thresholds.as_list::<i32>())?;
            return super::functions::columnar(Arc::new(buckets), scalar);
        }
        let counts = arrays[3].as_primitive::<Int32Type>();
        let rows = counts.len();
        let mut out = Int32Builder::with_capacity(rows);
        let exact = matches!(arrays[0].data_type(), DataType::Decimal128(..));
        for row in 0..rows {
            if arrays.iter().any(|array| array.is_null(row)) {
                out.append_null();
                continue;
            }
            let count = counts.value(row);
            let bucket = if exact {
                let value = |i: usize| {
                    i256::from_i128(arrays[i].as_primitive::<Decimal128Type>().value(row))
                };
                exact_bucket(value(0), value(1), value(2), count)?
            } else {
                let value = |i: usize| arrays[i].as_primitive::<Float64Type>().value(row);
                float_bucket(value(0), value(1), value(2), count)?
            };
            out.append_value(bucket);
        }
        super::functions::columnar(Arc::new(out.finish()), scalar)
    }
}

/// `width_bucket(operand, thresholds)`, row by row: how many of the
/// (ascending) thresholds are at most the operand, found by bisection as
/// PostgreSQL's `width_bucket_array` does; NULL for a NULL operand or
/// array, `22004` for a NULL threshold.
fn threshold_buckets(
    operands: &ArrayRef,
    thresholds: &datafusion::arrow::array::ListArray,
) -> Result<datafusion::arrow::array::Int32Array> {
    use datafusion::arrow::row::{RowConverter, SortField};
    let converter = RowConverter::new(vec![SortField::new(operands.data_type().clone())])?;
    let operand_rows = converter.convert_columns(std::slice::from_ref(operands))?;
    let values = thresholds.values();
    let threshold_rows = converter.convert_columns(std::slice::from_ref(values))?;
    let mut out = Int32Builder::with_capacity(operands.len());
    for row in 0..operands.len() {
        if operands.is_null(row) || thresholds.is_null(row) {
            out.append_null();
            continue;
        }
        let range =
            thresholds.value_offsets()[row] as usize..thresholds.value_offsets()[row + 1] as usize;
        if range.clone().any(|at| values.is_null(at)) {
            return Err(DataFusionError::External(Box::new(PgError::new(
                sqlstate::NULL_VALUE_NOT_ALLOWED,
                "thresholds array must not contain NULLs",
            ))));
        }
        let operand = operand_rows.row(row);
        let (mut low, mut high) = (range.start, range.end);
        while low < high {
            let middle = low + (high - low) / 2;
            if threshold_rows.row(middle) <= operand {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        out.append_value(i32::try_from(low - range.start).unwrap_or(i32::MAX));
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_counted_by_bisection() {
        let operands: ArrayRef = Arc::new(datafusion::arrow::array::Int32Array::from(vec![
            Some(5),
            Some(0),
            None,
            Some(9),
        ]));
        let thresholds =
            datafusion::arrow::array::ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
                Some(vec![Some(1), Some(3), Some(5), Some(7)]),
                Some(vec![Some(1), Some(2)]),
                Some(vec![Some(1)]),
                Some(vec![]),
            ]);
        let buckets: Vec<Option<i32>> = threshold_buckets(&operands, &thresholds)
            .unwrap()
            .iter()
            .collect();
        assert_eq!(buckets, vec![Some(3), Some(0), None, Some(0)]);
    }

    #[test]
    fn buckets_as_postgres() {
        assert_eq!(float_bucket(5.5, 0.0, 10.0, 4).unwrap(), 3);
        assert_eq!(float_bucket(-1.0, 0.0, 10.0, 4).unwrap(), 0);
        assert_eq!(float_bucket(10.0, 0.0, 10.0, 4).unwrap(), 5);
        assert_eq!(float_bucket(2.0, 10.0, 0.0, 4).unwrap(), 4);
        let n = |v: i128| i256::from_i128(v);
        // width_bucket(0.3, 0, 0.9, 3): exactly the second bucket's start.
        assert_eq!(exact_bucket(n(3), n(0), n(9), 3).unwrap(), 2);
        assert_eq!(
            exact_bucket(n(1), n(1), n(1), 3).unwrap_err().to_string(),
            bucket_error("lower bound cannot equal upper bound").to_string()
        );
    }
}
