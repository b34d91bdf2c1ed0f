//! PostgreSQL types that pgaccel keeps in other Arrow types, and the
//! functions that give them (and `LIKE`) PostgreSQL's behaviour:
//!
//! - `uuid` is kept as its canonical text (lower case, hyphenated);
//!   [`UUID_FUNCTION`] reads any spelling PostgreSQL accepts
//!   (`'A0EEBC99...'::uuid`, braces, no hyphens) into it, so text
//!   comparison is uuid comparison.
//! - `bytea` text input (`'\xdeadbeef'::bytea`, the escape form) decodes
//!   to the bytes it spells ([`BYTEA_FUNCTION`]); a plain cast would keep
//!   the characters.
//! - `interval` compares as PostgreSQL compares it, by its whole span with
//!   a month of 30 days (`'1 mon' = '30 days'`): [`INTERVAL_SPAN_FUNCTION`]
//!   gives that span in microseconds, where Arrow compares the months,
//!   days and nanoseconds fields one by one.
//! - `interval` text input in PostgreSQL's syntax (`'1 day 02:03:04'`,
//!   ISO 8601, SQL standard) through [`INTERVAL_FUNCTION`] and
//!   [`super::interval`]; arrow's parser knows only its own unit list.
//! - `varchar(n)` and `char(n)` casts cut the text to n characters
//!   ([`VARCHAR_FUNCTION`], [`BPCHAR_FUNCTION`]); a `char(n)` value is kept
//!   without its trailing spaces (which PostgreSQL drops when it is used as
//!   text) and printed padded to n.
//! - `LIKE pattern ESCAPE 'c'`: DataFusion knows only `\` as the escape
//!   character; [`LIKE_PATTERN_FUNCTION`] spells the pattern with it.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Decimal128Builder, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, IntervalUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::{PgError, sqlstate};
use crate::accelerator::PG_TYPE_METADATA;

pub const UUID_FUNCTION: &str = "pgaccel_uuid";
pub const INTERVAL_SPAN_FUNCTION: &str = "pgaccel_interval_span";
pub const BYTEA_FUNCTION: &str = "pgaccel_bytea";
pub const LIKE_PATTERN_FUNCTION: &str = "pgaccel_like_pattern";
pub const INTERVAL_FUNCTION: &str = "pgaccel_interval";
pub const VARCHAR_FUNCTION: &str = "pgaccel_varchar";
pub const BPCHAR_FUNCTION: &str = "pgaccel_bpchar";

/// The functions of this module, for registration.
pub fn functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        Arc::new(ScalarUDF::new_from_impl(UuidFunction::default())),
        Arc::new(ScalarUDF::new_from_impl(IntervalSpan::default())),
        Arc::new(ScalarUDF::new_from_impl(ByteaFunction::default())),
        Arc::new(ScalarUDF::new_from_impl(LikePattern::default())),
        Arc::new(ScalarUDF::new_from_impl(IntervalFunction::default())),
        Arc::new(ScalarUDF::new_from_impl(CharacterCast::new(false))),
        Arc::new(ScalarUDF::new_from_impl(CharacterCast::new(true))),
    ]
}

/// `x::varchar(n)` and `x::char(n)`: `pgaccel_varchar(x, n)`,
/// `pgaccel_bpchar(x, n)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CharacterCast {
    signature: Signature,
    /// `char(n)`: trailing spaces dropped, printed padded.
    bpchar: bool,
}

impl CharacterCast {
    fn new(bpchar: bool) -> Self {
        CharacterCast {
            signature: Signature::user_defined(Volatility::Immutable),
            bpchar,
        }
    }
}

impl ScalarUDFImpl for CharacterCast {
    fn name(&self) -> &str {
        if self.bpchar {
            BPCHAR_FUNCTION
        } else {
            VARCHAR_FUNCTION
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [_, _] => Ok(vec![DataType::Utf8, DataType::Utf8]),
            _ => Err(DataFusionError::Internal(format!(
                "{}() takes a value and a length",
                self.name()
            ))),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        let length = match args.scalar_arguments.get(1).copied().flatten() {
            Some(datafusion::common::ScalarValue::Utf8(Some(length))) => {
                length.parse::<i64>().unwrap_or(0)
            }
            _ => {
                return Err(DataFusionError::Internal(format!(
                    "{}() needs a constant length",
                    self.name()
                )));
            }
        };
        let pg_type = if self.bpchar { "bpchar" } else { "varchar" };
        Ok(Arc::new(
            Field::new(self.name(), DataType::Utf8, true).with_metadata(
                [
                    (PG_TYPE_METADATA.to_owned(), pg_type.to_owned()),
                    (
                        crate::accelerator::TYPMOD_METADATA.to_owned(),
                        (length + 4).to_string(),
                    ),
                ]
                .into(),
            ),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let [values, lengths] = arrays.as_slice() else {
            return Err(DataFusionError::Internal("two arguments".to_owned()));
        };
        let values = values.as_string::<i32>();
        let lengths = lengths.as_string::<i32>();
        let mut out = StringBuilder::with_capacity(values.len(), values.len() * 8);
        for row in 0..values.len() {
            if values.is_null(row) || lengths.is_null(row) {
                out.append_null();
                continue;
            }
            let value = values.value(row);
            let length: usize = lengths.value(row).parse().unwrap_or(0);
            let cut = match value.char_indices().nth(length) {
                Some((at, _)) => &value[..at],
                None => value,
            };
            out.append_value(if self.bpchar {
                cut.trim_end_matches(' ')
            } else {
                cut
            });
        }
        super::functions::columnar(Arc::new(out.finish()), scalar)
    }
}

/// Runs `each` over the rows of a one-argument call, keeping a scalar
/// argument scalar.
fn map_rows(
    args: ScalarFunctionArgs,
    each: impl Fn(&ArrayRef) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    let [value] = args.args.as_slice() else {
        return Err(DataFusionError::Internal(
            "a function of one argument got another number".to_owned(),
        ));
    };
    match value {
        ColumnarValue::Scalar(scalar) => {
            let result = each(&scalar.to_array()?)?;
            Ok(ColumnarValue::Scalar(
                datafusion::common::ScalarValue::try_from_array(&result, 0)?,
            ))
        }
        ColumnarValue::Array(array) => Ok(ColumnarValue::Array(each(array)?)),
    }
}

/// `text::uuid`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct UuidFunction {
    signature: Signature,
}

impl Default for UuidFunction {
    fn default() -> Self {
        UuidFunction {
            signature: Signature::string(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for UuidFunction {
    fn name(&self) -> &str {
        UUID_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs<'_>) -> Result<FieldRef> {
        Ok(Arc::new(
            Field::new(UUID_FUNCTION, DataType::Utf8, true)
                .with_metadata([(PG_TYPE_METADATA.to_owned(), "uuid".to_owned())].into()),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_rows(args, |array| {
            let text = datafusion::arrow::compute::cast(array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let mut out = StringBuilder::with_capacity(text.len(), text.len() * 36);
            for value in text.iter() {
                match value {
                    None => out.append_null(),
                    Some(value) => out.append_value(canonical_uuid(value)?),
                }
            }
            Ok(Arc::new(out.finish()))
        })
    }
}

/// A uuid in any spelling PostgreSQL's `uuid_in` reads, as its canonical
/// text.
pub fn canonical_uuid(text: &str) -> Result<String> {
    let invalid = || {
        DataFusionError::External(Box::new(PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type uuid: \"{text}\""),
        )))
    };
    // PostgreSQL: optional braces around 32 hex digits, with a hyphen
    // allowed after any group of four.
    let inner = match text.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}').ok_or_else(invalid)?,
        None => text,
    };
    let mut digits = String::with_capacity(32);
    let mut since_hyphen = 0;
    for c in inner.chars() {
        if c == '-' {
            if since_hyphen == 0 || since_hyphen % 4 != 0 || digits.len() == 32 {
                return Err(invalid());
            }
            since_hyphen = 0;
            continue;
        }
        if !c.is_ascii_hexdigit() || digits.len() == 32 {
            return Err(invalid());
        }
        digits.push(c.to_ascii_lowercase());
        since_hyphen += 1;
    }
    if digits.len() != 32 || inner.ends_with('-') {
        return Err(invalid());
    }
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &digits[..8],
        &digits[8..12],
        &digits[12..16],
        &digits[16..20],
        &digits[20..]
    ))
}

/// bytea's text input: `\x` followed by pairs of hex digits (whitespace
/// between pairs allowed), or the escape format (`\\` for a backslash,
/// `\ooo` an octal byte, other characters as themselves).
pub fn bytea_input(text: &str) -> Option<Vec<u8>> {
    if let Some(hex) = text
        .strip_prefix("\\x")
        .or_else(|| text.strip_prefix("\\X"))
    {
        let digits: Vec<u8> = hex.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        if !digits.len().is_multiple_of(2) {
            return None;
        }
        let nibble = |b: u8| (b as char).to_digit(16);
        return digits
            .chunks(2)
            .map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8))
            .collect();
    }
    escaped_bytes(text)
}

/// bytea's escape format: `\\` for a backslash, `\ooo` an octal byte,
/// other characters as themselves (also `decode(text, 'escape')`).
pub fn escaped_bytes(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
        } else if bytes.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            let octal = bytes.get(i + 1..i + 4)?;
            if !matches!(octal, [b'0'..=b'3', b'0'..=b'7', b'0'..=b'7']) {
                return None;
            }
            out.push((octal[0] - b'0') * 64 + (octal[1] - b'0') * 8 + (octal[2] - b'0'));
            i += 4;
        }
    }
    Some(out)
}

/// `text::bytea`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ByteaFunction {
    signature: Signature,
}

impl Default for ByteaFunction {
    fn default() -> Self {
        ByteaFunction {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ByteaFunction {
    fn name(&self) -> &str {
        BYTEA_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_rows(args, |array| {
            if matches!(
                array.data_type(),
                DataType::Binary | DataType::LargeBinary | DataType::BinaryView
            ) {
                return Ok(datafusion::arrow::compute::cast(array, &DataType::Binary)?);
            }
            let text = datafusion::arrow::compute::cast(array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let mut out = datafusion::arrow::array::BinaryBuilder::with_capacity(text.len(), 0);
            for value in text.iter() {
                match value {
                    None => out.append_null(),
                    Some(value) => out.append_value(bytea_input(value).ok_or_else(|| {
                        DataFusionError::External(Box::new(PgError::new(
                            sqlstate::INVALID_TEXT_REPRESENTATION,
                            "invalid input syntax for type bytea",
                        )))
                    })?),
                }
            }
            Ok(Arc::new(out.finish()))
        })
    }
}

/// `pattern` with escape character `escape`, spelled with `\` as the
/// escape: an escaped character stays literal, a backslash that is not the
/// escape becomes a literal one. With no escape character (`ESCAPE ''`)
/// nothing is escaped.
pub fn like_pattern(pattern: &str, escape: Option<char>) -> Result<String, PgError> {
    let mut out = String::with_capacity(pattern.len() + 4);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            let escaped = chars.next().ok_or_else(|| {
                PgError::new("22025", "LIKE pattern must not end with escape character")
            })?;
            out.push('\\');
            out.push(escaped);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// `pgaccel_like_pattern(pattern, escape)`: see [`like_pattern`].
#[derive(Debug, PartialEq, Eq, Hash)]
struct LikePattern {
    signature: Signature,
}

impl Default for LikePattern {
    fn default() -> Self {
        LikePattern {
            signature: Signature::string(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for LikePattern {
    fn name(&self) -> &str {
        LIKE_PATTERN_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let text = |array: &ArrayRef| datafusion::arrow::compute::cast(array, &DataType::Utf8);
        let (patterns, escapes) = (text(&arrays[0])?, text(&arrays[1])?);
        let (patterns, escapes) = (patterns.as_string::<i32>(), escapes.as_string::<i32>());
        let mut out = StringBuilder::with_capacity(patterns.len(), 0);
        for row in 0..patterns.len() {
            if patterns.is_null(row) || escapes.is_null(row) {
                out.append_null();
                continue;
            }
            let escape = escapes.value(row);
            if escape.chars().count() > 1 {
                return Err(DataFusionError::External(Box::new(PgError::new(
                    "22025",
                    "invalid escape string",
                ))));
            }
            let pattern = like_pattern(patterns.value(row), escape.chars().next())
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            out.append_value(pattern);
        }
        let result: ArrayRef = Arc::new(out.finish());
        Ok(if scalar && rows <= 1 {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&result, 0)?)
        } else {
            ColumnarValue::Array(result)
        })
    }
}

/// [`INTERVAL_FUNCTION`], for plans that call it themselves.
pub(super) fn interval_udf() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(IntervalFunction::default()))
}

/// `text::interval`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalFunction {
    signature: Signature,
}

impl Default for IntervalFunction {
    fn default() -> Self {
        IntervalFunction {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for IntervalFunction {
    fn name(&self) -> &str {
        INTERVAL_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_rows(args, |array| {
            if let DataType::Interval(_) = array.data_type() {
                return Ok(datafusion::arrow::compute::cast(
                    array,
                    &DataType::Interval(IntervalUnit::MonthDayNano),
                )?);
            }
            let text = datafusion::arrow::compute::cast(array, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let mut out =
                datafusion::arrow::array::IntervalMonthDayNanoBuilder::with_capacity(text.len());
            for value in text.iter() {
                match value {
                    None => out.append_null(),
                    Some(value) => {
                        out.append_value(super::interval::parse_interval(value).map_err(|e| {
                            DataFusionError::External(Box::new(PgError::new(
                                e.sqlstate(),
                                e.to_string(),
                            )))
                        })?)
                    }
                }
            }
            Ok(Arc::new(out.finish()))
        })
    }
}

/// An interval's span in microseconds, a month counted as 30 days.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct IntervalSpan {
    signature: Signature,
}

impl Default for IntervalSpan {
    fn default() -> Self {
        IntervalSpan {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

const MICROS_PER_DAY: i128 = 86_400_000_000;

impl ScalarUDFImpl for IntervalSpan {
    fn name(&self) -> &str {
        INTERVAL_SPAN_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        map_rows(args, |array| {
            let span = |row: usize| -> Option<i128> {
                if array.is_null(row) {
                    return None;
                }
                Some(match array.data_type() {
                    DataType::Interval(IntervalUnit::MonthDayNano) => {
                        let v = array
                            .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>(
                            )
                            .value(row);
                        (i128::from(v.months) * 30 + i128::from(v.days)) * MICROS_PER_DAY
                            + i128::from(v.nanoseconds / 1000)
                    }
                    DataType::Interval(IntervalUnit::DayTime) => {
                        let v = array
                            .as_primitive::<datafusion::arrow::datatypes::IntervalDayTimeType>()
                            .value(row);
                        i128::from(v.days) * MICROS_PER_DAY + i128::from(v.milliseconds) * 1000
                    }
                    DataType::Interval(IntervalUnit::YearMonth) => {
                        let months = array
                            .as_primitive::<datafusion::arrow::datatypes::IntervalYearMonthType>()
                            .value(row);
                        i128::from(months) * 30 * MICROS_PER_DAY
                    }
                    _ => return None,
                })
            };
            let mut out = Decimal128Builder::with_capacity(array.len());
            for row in 0..array.len() {
                out.append_option(span(row));
            }
            Ok(Arc::new(out.finish().with_precision_and_scale(38, 0)?))
        })
    }
}

/// The type kept as text (varchar, bpchar, json, jsonb, uuid, name) every value
/// of `args` that is not an untyped literal has, if one.
fn common_text_type(
    args: &[datafusion::logical_expr::Expr],
    schema: &datafusion::common::DFSchema,
) -> Option<String> {
    use datafusion::logical_expr::{Expr, ExprSchemable};
    let mut common: Option<String> = None;
    for arg in args {
        if let Expr::Literal(
            datafusion::common::ScalarValue::Utf8(_) | datafusion::common::ScalarValue::Null,
            _,
        ) = arg
        {
            continue;
        }
        let (_, field) = arg.to_field(schema).ok()?;
        let pg_type = field.metadata().get(PG_TYPE_METADATA)?;
        if !matches!(
            pg_type.as_str(),
            "varchar" | "bpchar" | "json" | "jsonb" | "uuid" | "name"
        ) {
            return None;
        }
        match &common {
            Some(seen) if seen != pg_type => return None,
            _ => common = Some(pg_type.clone()),
        }
    }
    common
}

/// The values a CASE can give: its THEN results and its ELSE.
fn case_results(
    case: &datafusion::logical_expr::expr::Case,
) -> Vec<datafusion::logical_expr::Expr> {
    case.when_then_expr
        .iter()
        .map(|(_, then)| then.as_ref().clone())
        .chain(case.else_expr.as_deref().cloned())
        .collect()
}

/// A `character` value kept padded: typed bpchar with no width.
fn padded_character(
    expr: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> bool {
    use datafusion::logical_expr::ExprSchemable;
    expr.to_field(schema).is_ok_and(|(_, field)| {
        let metadata = field.metadata();
        metadata.get(PG_TYPE_METADATA).map(String::as_str) == Some("bpchar")
            && !metadata.contains_key(crate::accelerator::TYPMOD_METADATA)
    })
}

/// Whether `op` compares its operands.
pub(super) fn is_comparison(op: datafusion::logical_expr::Operator) -> bool {
    use datafusion::logical_expr::Operator;
    matches!(
        op,
        Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom
    )
}

/// Whether `expr` is a `character` value (of a width or none).
fn is_character(
    expr: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> bool {
    use datafusion::logical_expr::ExprSchemable;
    expr.to_field(schema).is_ok_and(|(_, field)| {
        field.metadata().get(PG_TYPE_METADATA).map(String::as_str) == Some("bpchar")
    })
}

/// Whether `expr`, compared with a `character` value, is read as one too:
/// an untyped string literal, a parameter or a varchar (PostgreSQL casts it to
/// `character`; text is compared as text instead).
fn character_comparand(
    expr: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> bool {
    use datafusion::logical_expr::{Expr, ExprSchemable};
    match expr {
        Expr::Literal(ScalarValue::Utf8(Some(_)) | ScalarValue::Utf8View(Some(_)), None) => true,
        // A parameter the client sends as text (`c = $1`).
        Expr::Placeholder(placeholder) => placeholder.field.as_ref().is_none_or(|field| {
            matches!(
                field.data_type(),
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
            )
        }),
        _ => expr.to_field(schema).is_ok_and(|(_, field)| {
            field.metadata().get(PG_TYPE_METADATA).map(String::as_str) == Some("varchar")
        }),
    }
}

/// A [`character_comparand`] as a `character` value holds it: without
/// trailing spaces (a literal is trimmed now). Any other value is kept.
fn without_trailing_spaces(
    expr: datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> datafusion::logical_expr::Expr {
    use datafusion::logical_expr::Expr;
    use datafusion::logical_expr::expr::ScalarFunction;
    match expr {
        Expr::Literal(ScalarValue::Utf8(Some(text)), None) => Expr::Literal(
            ScalarValue::Utf8(Some(text.trim_end_matches(' ').to_owned())),
            None,
        ),
        Expr::Literal(ScalarValue::Utf8View(Some(text)), None) => Expr::Literal(
            ScalarValue::Utf8View(Some(text.trim_end_matches(' ').to_owned())),
            None,
        ),
        other if character_comparand(&other, schema) || padded_character(&other, schema) => {
            Expr::ScalarFunction(ScalarFunction::new_udf(
                datafusion::functions::string::rtrim(),
                vec![other],
            ))
        }
        other => other,
    }
}

/// The width of a `character(n)` value, from its field.
fn character_width(
    expr: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> Option<i64> {
    use datafusion::logical_expr::ExprSchemable;
    let (_, field) = expr.to_field(schema).ok()?;
    let metadata = field.metadata();
    if metadata.get(PG_TYPE_METADATA).map(String::as_str) != Some("bpchar") {
        return None;
    }
    let typmod: i64 = metadata
        .get(crate::accelerator::TYPMOD_METADATA)?
        .parse()
        .ok()?;
    Some(typmod - 4).filter(|width| *width > 0)
}

/// PostgreSQL reads a `character(n)` value with its padding where it uses
/// the value as written: `concat()`, `concat_ws()` and `format()` print it
/// through its output function, and `LIKE` and regular expressions have
/// operators of their own for it. pgaccel keeps the value unpadded (as
/// text casts and comparisons read it), so there it is `rpad(value, n)`.
pub fn pad_characters(
    plan: datafusion::logical_expr::LogicalPlan,
) -> Result<datafusion::logical_expr::LogicalPlan> {
    use datafusion::common::tree_node::Transformed;
    use datafusion::logical_expr::expr::ScalarFunction;
    use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, Like, Operator, lit};
    let rpad = datafusion::functions::unicode::rpad();
    let rtrim = datafusion::functions::string::rtrim();
    let pad =
        |expr: Expr, schema: &datafusion::common::DFSchema| match character_width(&expr, schema) {
            Some(width) => Expr::ScalarFunction(ScalarFunction::new_udf(
                Arc::clone(&rpad),
                vec![expr, lit(width)],
            )),
            None => expr,
        };
    // A padded `character` value read as text: without its trailing spaces.
    let unpadded = |expr: Expr, schema: &datafusion::common::DFSchema| {
        if padded_character(&expr, schema) {
            Expr::ScalarFunction(ScalarFunction::new_udf(Arc::clone(&rtrim), vec![expr]))
        } else {
            expr
        }
    };
    super::numeric::rewrite_expressions(plan, |e, schema| {
        Ok(match e {
            Expr::ScalarFunction(mut function)
                if matches!(function.name(), "concat" | "concat_ws" | "format") =>
            {
                // concat_ws's separator and format's template
                // are text.
                let skip = usize::from(function.name() != "concat");
                let args = std::mem::take(&mut function.args);
                function.args = args
                    .into_iter()
                    .enumerate()
                    .map(|(i, arg)| if i < skip { arg } else { pad(arg, schema) })
                    .collect();
                Transformed::yes(Expr::ScalarFunction(function))
            }
            // `jsonb_col::text`, `uuid_col::text`: a text,
            // not the type the value had (a cast of the type
            // alone would keep it, as DataFusion's casts do).
            Expr::Cast(cast)
                if matches!(
                    cast.field.data_type(),
                    DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                ) && cast.field.name().is_empty()
                    && cast.expr.to_field(schema).is_ok_and(|(_, field)| {
                        field.metadata().contains_key(PG_TYPE_METADATA)
                    }) =>
            {
                let data_type = cast.field.data_type().clone();
                let value = if padded_character(&cast.expr, schema) {
                    Box::new(Expr::ScalarFunction(ScalarFunction::new_udf(
                        Arc::clone(&rtrim),
                        vec![*cast.expr],
                    )))
                } else {
                    cast.expr
                };
                Transformed::yes(Expr::Cast(datafusion::logical_expr::Cast::new_from_field(
                    value,
                    Arc::new(Field::new("text", data_type, true)),
                )))
            }
            // coalesce() of values of one type kept as text
            // (and untyped literals) is of that type; a
            // `character(n)` value keeps its padding there (its
            // stored form; the result has no width).
            Expr::ScalarFunction(mut function)
                if function.name() == "coalesce"
                    && common_text_type(&function.args, schema).is_some() =>
            {
                let pg_type = common_text_type(&function.args, schema).unwrap_or_default();
                if pg_type == "bpchar" {
                    let args = std::mem::take(&mut function.args);
                    function.args = args.into_iter().map(|arg| pad(arg, schema)).collect();
                }
                let expr = Expr::ScalarFunction(function);
                let data_type = expr.get_type(schema)?;
                let field = Field::new("coalesce", data_type, true)
                    .with_metadata([(PG_TYPE_METADATA.to_owned(), pg_type)].into());
                Transformed::yes(Expr::Cast(datafusion::logical_expr::Cast::new_from_field(
                    Box::new(expr),
                    Arc::new(field),
                )))
            }
            // A CASE whose results are `character` values (and untyped
            // literals) is a `character` value too: each keeps its padding
            // (the result has no width), as PostgreSQL prints it.
            Expr::Case(mut case)
                if common_text_type(&case_results(&case), schema).as_deref() == Some("bpchar") =>
            {
                for (_, then) in &mut case.when_then_expr {
                    let value = std::mem::replace(then.as_mut(), lit(ScalarValue::Null));
                    **then = pad(value, schema);
                }
                if let Some(otherwise) = &mut case.else_expr {
                    let value = std::mem::replace(otherwise.as_mut(), lit(ScalarValue::Null));
                    **otherwise = pad(value, schema);
                }
                let expr = Expr::Case(case);
                let data_type = expr.get_type(schema)?;
                let field = Field::new("case", data_type, true)
                    .with_metadata([(PG_TYPE_METADATA.to_owned(), "bpchar".to_owned())].into());
                Transformed::yes(Expr::Cast(datafusion::logical_expr::Cast::new_from_field(
                    Box::new(expr),
                    Arc::new(field),
                )))
            }
            // nullif() is of its first argument's type: a `character(n)`
            // value is printed padded (the comparison is `character`'s).
            Expr::ScalarFunction(mut function)
                if function.name() == "nullif"
                    && function
                        .args
                        .first()
                        .is_some_and(|arg| character_width(arg, schema).is_some()) =>
            {
                let metadata = function.args[0].to_field(schema)?.1.metadata().clone();
                // Compared as `character`: without trailing spaces.
                if let Some(other) = function.args.get_mut(1)
                    && character_comparand(other, schema)
                {
                    let value = std::mem::replace(other, lit(ScalarValue::Null));
                    *other = without_trailing_spaces(value, schema);
                }
                let expr = Expr::ScalarFunction(function);
                let data_type = expr.get_type(schema)?;
                let field = Field::new("nullif", data_type, true).with_metadata(metadata);
                Transformed::yes(Expr::Cast(datafusion::logical_expr::Cast::new_from_field(
                    Box::new(expr),
                    Arc::new(field),
                )))
            }
            // max()/min() of a `character(n)` column as a window function,
            // as the aggregate below.
            Expr::WindowFunction(mut window)
                if matches!(
                    &window.fun,
                    datafusion::logical_expr::WindowFunctionDefinition::AggregateUDF(func)
                        if matches!(func.name(), "max" | "min")
                ) && window
                    .params
                    .args
                    .first()
                    .is_some_and(|arg| character_width(arg, schema).is_some()) =>
            {
                if let datafusion::logical_expr::WindowFunctionDefinition::AggregateUDF(func) =
                    &window.fun
                {
                    window.fun = datafusion::logical_expr::WindowFunctionDefinition::AggregateUDF(
                        Arc::new(datafusion::logical_expr::AggregateUDF::new_from_impl(
                            CharacterExtreme {
                                inner: Arc::clone(func),
                            },
                        )),
                    );
                }
                Transformed::yes(Expr::WindowFunction(window))
            }
            // max()/min() of a `character(n)` column is one:
            // printed padded, typed bpchar.
            Expr::AggregateFunction(mut aggregate)
                if matches!(aggregate.func.name(), "max" | "min")
                    && aggregate
                        .params
                        .args
                        .first()
                        .is_some_and(|arg| character_width(arg, schema).is_some()) =>
            {
                aggregate.func = Arc::new(datafusion::logical_expr::AggregateUDF::new_from_impl(
                    CharacterExtreme {
                        inner: Arc::clone(&aggregate.func),
                    },
                ));
                Transformed::yes(Expr::AggregateFunction(aggregate))
            }
            // `character` compared with an untyped literal or a varchar
            // compares as `character`: the other side's trailing spaces do
            // not count either (`c = 'ab  '` holds for 'ab').
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if is_comparison(op)
                    && ((is_character(&left, schema) && character_comparand(&right, schema))
                        || (is_character(&right, schema)
                            && character_comparand(&left, schema))) =>
            {
                let trim = |e: Box<Expr>| Box::new(without_trailing_spaces(*e, schema));
                Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: trim(left),
                    op,
                    right: trim(right),
                }))
            }
            Expr::InList(mut list)
                if is_character(&list.expr, schema)
                    && list
                        .list
                        .iter()
                        .any(|item| character_comparand(item, schema)) =>
            {
                let items = std::mem::take(&mut list.list);
                list.list = items
                    .into_iter()
                    .map(|item| without_trailing_spaces(item, schema))
                    .collect();
                Transformed::yes(Expr::InList(list))
            }
            Expr::Between(mut between) if is_character(&between.expr, schema) => {
                between.low = Box::new(without_trailing_spaces(*between.low, schema));
                between.high = Box::new(without_trailing_spaces(*between.high, schema));
                Transformed::yes(Expr::Between(between))
            }
            // `octet_length()` of `character(n)` counts its padding, and
            // JSON and arrays hold the value as written.
            Expr::ScalarFunction(mut function)
                if matches!(
                    function.name(),
                    "octet_length"
                        | "to_json"
                        | "to_jsonb"
                        | "json_build_array"
                        | "jsonb_build_array"
                        | "json_build_object"
                        | "jsonb_build_object"
                ) && function
                    .args
                    .iter()
                    .any(|arg| character_width(arg, schema).is_some()) =>
            {
                let args = std::mem::take(&mut function.args);
                function.args = args.into_iter().map(|arg| pad(arg, schema)).collect();
                Transformed::yes(Expr::ScalarFunction(function))
            }
            // Arrays hold the value as written: array_agg(), and a
            // percentile_disc() of an array of fractions.
            Expr::AggregateFunction(mut aggregate)
                if (aggregate.func.name() == "array_agg"
                    || (aggregate.func.name() == "percentile_disc"
                        && aggregate.params.args.get(1).is_some_and(|fractions| {
                            fractions
                                .get_type(schema)
                                .is_ok_and(|t| matches!(t, DataType::List(_)))
                        })))
                    && aggregate
                        .params
                        .args
                        .first()
                        .is_some_and(|arg| character_width(arg, schema).is_some()) =>
            {
                let args = std::mem::take(&mut aggregate.params.args);
                let original = args.first().cloned();
                aggregate.params.args = args.into_iter().map(|arg| pad(arg, schema)).collect();
                // With DISTINCT, the order must be by the argument as given.
                if aggregate.params.distinct {
                    let padded = aggregate.params.args.first().cloned();
                    for sort in &mut aggregate.params.order_by {
                        if Some(&sort.expr) == original.as_ref()
                            && let Some(padded) = &padded
                        {
                            sort.expr = padded.clone();
                        }
                    }
                }
                Transformed::yes(Expr::AggregateFunction(aggregate))
            }
            Expr::Like(like) if character_width(&like.expr, schema).is_some() => {
                Transformed::yes(Expr::Like(Like {
                    expr: Box::new(pad(*like.expr, schema)),
                    ..like
                }))
            }
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if matches!(
                    op,
                    Operator::RegexMatch
                        | Operator::RegexIMatch
                        | Operator::RegexNotMatch
                        | Operator::RegexNotIMatch
                ) && character_width(&left, schema).is_some() =>
            {
                Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: Box::new(pad(*left, schema)),
                    op,
                    right,
                }))
            }
            // A padded `character` value (of no width, as
            // coalesce() gives) read as text drops its
            // trailing spaces, as PostgreSQL's conversion does; and
            // `character` comparisons ignore trailing spaces, so it is
            // compared without them too.
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if (op == Operator::StringConcat || is_comparison(op))
                    && (padded_character(&left, schema) || padded_character(&right, schema)) =>
            {
                let trim = |e: Box<Expr>| Box::new(unpadded(*e, schema));
                Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: trim(left),
                    op,
                    right: trim(right),
                }))
            }
            // A function of text given a padded `character` value reads it
            // as text, without its trailing spaces (PostgreSQL's implicit
            // cast); the functions above keep it, and `octet_length()`
            // counts it.
            Expr::ScalarFunction(mut function)
                if !matches!(
                    function.name(),
                    "concat"
                        | "concat_ws"
                        | "format"
                        | "coalesce"
                        | "nullif"
                        | "rtrim"
                        | "octet_length"
                ) && function
                    .args
                    .iter()
                    .any(|arg| padded_character(arg, schema)) =>
            {
                let args = std::mem::take(&mut function.args);
                function.args = args.into_iter().map(|arg| unpadded(arg, schema)).collect();
                Transformed::yes(Expr::ScalarFunction(function))
            }
            Expr::InList(mut list) if padded_character(&list.expr, schema) => {
                list.expr = Box::new(unpadded(*list.expr, schema));
                Transformed::yes(Expr::InList(list))
            }
            other => Transformed::no(other),
        })
    })
}

/// `max()`/`min()` whose result keeps its argument's type: the aggregate it
/// wraps, with the argument's field metadata on the result.
#[derive(Debug, PartialEq, Eq, Hash)]
struct CharacterExtreme {
    inner: Arc<datafusion::logical_expr::AggregateUDF>,
}

impl datafusion::logical_expr::AggregateUDFImpl for CharacterExtreme {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.inner().coerce_types(arg_types)
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        let data_type = self.return_type(
            &arg_fields
                .iter()
                .map(|field| field.data_type().clone())
                .collect::<Vec<_>>(),
        )?;
        let metadata = arg_fields
            .first()
            .map(|field| field.metadata().clone())
            .unwrap_or_default();
        Ok(Arc::new(
            Field::new(self.name(), data_type, true).with_metadata(metadata),
        ))
    }

    fn accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> Result<Box<dyn datafusion::logical_expr::Accumulator>> {
        self.inner.accumulator(args)
    }

    fn state_fields(
        &self,
        args: datafusion::logical_expr::function::StateFieldsArgs,
    ) -> Result<Vec<FieldRef>> {
        self.inner.state_fields(args)
    }

    fn groups_accumulator_supported(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> bool {
        self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> Result<Box<dyn datafusion::logical_expr::GroupsAccumulator>> {
        self.inner.create_groups_accumulator(args)
    }

    // As a window function over a frame that slides.
    fn create_sliding_accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> Result<Box<dyn datafusion::logical_expr::Accumulator>> {
        self.inner.inner().create_sliding_accumulator(args)
    }

    fn reverse_expr(&self) -> datafusion::logical_expr::ReversedUDAF {
        use datafusion::logical_expr::ReversedUDAF;
        match self.inner.inner().reverse_expr() {
            ReversedUDAF::Reversed(reversed) => ReversedUDAF::Reversed(Arc::new(
                datafusion::logical_expr::AggregateUDF::new_from_impl(CharacterExtreme {
                    inner: reversed,
                }),
            )),
            other => other,
        }
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.inner.inner().default_value(data_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytea_text_in_both_formats() {
        assert_eq!(
            bytea_input("\\xdeadbeef").unwrap(),
            vec![0xde, 0xad, 0xbe, 0xef]
        );
        assert_eq!(bytea_input("\\xDE AD").unwrap(), vec![0xde, 0xad]);
        assert_eq!(
            bytea_input("a\\\\b\\000\\377").unwrap(),
            b"a\\b\0\xff".to_vec()
        );
        assert_eq!(bytea_input("\\x0"), None);
        assert_eq!(bytea_input("\\xzz"), None);
        assert_eq!(bytea_input("\\400"), None);
        assert_eq!(bytea_input("\\+12"), None);
    }

    #[test]
    fn like_escapes_spell_with_backslash() {
        assert_eq!(like_pattern("pg/_%", Some('/')).unwrap(), "pg\\_%");
        assert_eq!(like_pattern("a//b", Some('/')).unwrap(), "a\\/b");
        assert_eq!(like_pattern("a\\b/%", Some('/')).unwrap(), "a\\\\b\\%");
        assert_eq!(like_pattern("a\\b", None).unwrap(), "a\\\\b");
        assert_eq!(like_pattern("ab/", Some('/')).unwrap_err().code, "22025");
    }

    #[test]
    fn uuids_read_as_postgres_reads_them() {
        let canonical = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for spelling in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}",
        ] {
            assert_eq!(canonical_uuid(spelling).unwrap(), canonical, "{spelling}");
        }
        for wrong in [
            "",
            "a0eebc99",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eeb-c99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ] {
            let error = canonical_uuid(wrong).unwrap_err().to_string();
            assert!(
                error.contains("invalid input syntax for type uuid"),
                "{wrong}: {error}"
            );
        }
    }
}
