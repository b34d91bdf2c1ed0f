//! Operand types settled the PostgreSQL way before DataFusion's type
//! coercion:
//!
//! - string literals compared with a boolean or an array are read as a
//!   value of that type, as PostgreSQL reads an untyped literal
//!   (`indisprimary = 'f'`, `polroles = '{0}'`). DataFusion types the
//!   literal as text and cannot compare, so such a literal is replaced by
//!   the value it spells;
//! - a float operand with a numeric one computes in `float8`
//!   (`c_float8 = 0.1`, `f * 1.5`): PostgreSQL converts the numeric, where
//!   DataFusion would convert the float to a decimal, which overflows for
//!   large doubles and compares differently;
//! - a jsonb compared with text (a parameter, a literal) compares with the
//!   text read as jsonb, so `{"a":1}` equals the stored `{"a": 1}`;
//! - intervals compare by their whole span, a month as 30 days
//!   (`'1 mon' = '30 days'`), not field by field.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, lit};
use datafusion::optimizer::AnalyzerRule;

use super::settings::catalog::parse_bool;
use super::system::rows::array_items;

#[derive(Debug, Default)]
pub struct UnknownLiterals;

impl AnalyzerRule for UnknownLiterals {
    /// Rewritten expressions keep their names (an aggregate's `FILTER`
    /// is part of its column's name, which the projection above reads).
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        super::numeric::rewrite_expressions(plan, rewrite)
    }

    fn name(&self) -> &str {
        "pgaccel_unknown_literals"
    }
}

fn rewrite(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    // `x BETWEEN 'a' AND 'b'`, `x IN ('a', 'b')`: each literal read as x's
    // type, as in a comparison.
    let as_type_of = |value: &Expr, literal: &Expr| {
        let text = text_literal(literal)?;
        let data_type = value.get_type(schema).ok()?;
        special_moment(text, &data_type).or_else(|| spelled(text, &data_type).map(lit))
    };
    match &expr {
        Expr::Between(between)
            if as_type_of(&between.expr, &between.low).is_some()
                || as_type_of(&between.expr, &between.high).is_some() =>
        {
            let mut between = between.clone();
            for bound in [&mut between.low, &mut between.high] {
                if let Some(typed) = as_type_of(&between.expr, bound) {
                    **bound = typed;
                }
            }
            return Ok(Transformed::yes(Expr::Between(between)));
        }
        Expr::InList(in_list)
            if in_list
                .list
                .iter()
                .any(|item| as_type_of(&in_list.expr, item).is_some()) =>
        {
            let mut in_list = in_list.clone();
            for item in &mut in_list.list {
                if let Some(typed) = as_type_of(&in_list.expr, item) {
                    *item = typed;
                }
            }
            return Ok(Transformed::yes(Expr::InList(in_list)));
        }
        _ => {}
    }
    if let Some(in_float) = float_branches(&expr, schema) {
        return Ok(Transformed::yes(in_float));
    }
    if let Expr::ScalarFunction(function) = &expr {
        return Ok(
            typed_like(function, schema).map_or_else(|| Transformed::no(expr), Transformed::yes)
        );
    }
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
    if let Some(compared) = jsonb_comparison(left, op, right, schema) {
        return Ok(Transformed::yes(compared));
    }
    if let Some(spans) = interval_spans(left, op, right, schema) {
        return Ok(Transformed::yes(spans));
    }
    // Timestamps of two units compare in microseconds (PostgreSQL's),
    // which reach year 1; nanoseconds end in 1677.
    if let (
        Ok(DataType::Timestamp(left_unit, left_zone)),
        Ok(DataType::Timestamp(right_unit, right_zone)),
    ) = (left.get_type(schema), right.get_type(schema))
        && left_unit != right_unit
    {
        use datafusion::arrow::datatypes::TimeUnit;
        let micros =
            |expr: &Expr, unit: TimeUnit, zone: Option<std::sync::Arc<str>>| -> Result<Box<Expr>> {
                Ok(Box::new(if unit == TimeUnit::Nanosecond {
                    expr.clone()
                        .cast_to(&DataType::Timestamp(TimeUnit::Microsecond, zone), schema)?
                } else {
                    expr.clone()
                }))
            };
        return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
            micros(left, left_unit, left_zone)?,
            *op,
            micros(right, right_unit, right_zone)?,
        ))));
    }
    if let Some(in_float) = float_with_numeric(left, right, schema) {
        let (left, right) = in_float;
        return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(left),
            *op,
            Box::new(right),
        ))));
    }
    use datafusion::logical_expr::Operator::{
        Eq, Gt, GtEq, IsDistinctFrom, IsNotDistinctFrom, Lt, LtEq, NotEq,
    };
    if !matches!(
        op,
        Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom
    ) {
        return Ok(Transformed::no(expr));
    }
    let typed = |text_side: &Expr, other: &Expr| -> Option<Expr> {
        let text = text_literal(text_side)?;
        let data_type = other.get_type(schema).ok()?;
        special_moment(text, &data_type).or_else(|| Some(lit(spelled(text, &data_type)?)))
    };
    if let Some(literal) = typed(right, left) {
        return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
            left.clone(),
            *op,
            Box::new(literal),
        ))));
    }
    if let Some(literal) = typed(left, right) {
        return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(literal),
            *op,
            right.clone(),
        ))));
    }
    Ok(Transformed::no(expr))
}

/// A jsonb compared with a value that is not jsonb: the value read as
/// jsonb.
fn jsonb_comparison(
    left: &Expr,
    op: &datafusion::logical_expr::Operator,
    right: &Expr,
    schema: &DFSchema,
) -> Option<Expr> {
    use datafusion::logical_expr::Operator::{Eq, IsDistinctFrom, IsNotDistinctFrom, NotEq};
    if !matches!(op, Eq | NotEq | IsDistinctFrom | IsNotDistinctFrom) {
        return None;
    }
    let is_jsonb = |e: &Expr| {
        e.to_field(schema).is_ok_and(|(_, field)| {
            field
                .metadata()
                .get(crate::accelerator::PG_TYPE_METADATA)
                .is_some_and(|t| t == "jsonb")
        })
    };
    let read = |e: &Expr| {
        Box::new(Expr::ScalarFunction(
            datafusion::logical_expr::expr::ScalarFunction::new_udf(
                super::json::jsonb_input(),
                vec![e.clone()],
            ),
        ))
    };
    match (is_jsonb(left), is_jsonb(right)) {
        (true, false) => Some(Expr::BinaryExpr(BinaryExpr::new(
            Box::new(left.clone()),
            *op,
            read(right),
        ))),
        (false, true) => Some(Expr::BinaryExpr(BinaryExpr::new(
            read(left),
            *op,
            Box::new(right.clone()),
        ))),
        _ => None,
    }
}

/// A comparison of two intervals as a comparison of their spans.
fn interval_spans(
    left: &Expr,
    op: &datafusion::logical_expr::Operator,
    right: &Expr,
    schema: &DFSchema,
) -> Option<Expr> {
    use datafusion::logical_expr::Operator::{
        Eq, Gt, GtEq, IsDistinctFrom, IsNotDistinctFrom, Lt, LtEq, NotEq,
    };
    if !matches!(
        op,
        Eq | NotEq | Lt | LtEq | Gt | GtEq | IsDistinctFrom | IsNotDistinctFrom
    ) {
        return None;
    }
    let is_interval = |e: &Expr| matches!(e.get_type(schema), Ok(DataType::Interval(_)));
    if !is_interval(left) || !is_interval(right) {
        return None;
    }
    let span = |e: &Expr| {
        Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            std::sync::Arc::new(datafusion::logical_expr::ScalarUDF::new_from_impl(
                super::pg_types::IntervalSpan::default(),
            )),
            vec![e.clone()],
        ))
    };
    Some(Expr::BinaryExpr(BinaryExpr::new(
        Box::new(span(left)),
        *op,
        Box::new(span(right)),
    )))
}

/// `pgaccel_array_like(array, 'text')` and `pgaccel_element_like(array,
/// 'text')`: an untyped literal given to an array function where PostgreSQL
/// reads it as a value of the array's type (`array_cat(scores, '{7}')`) or
/// of its element type (`array_remove(scores, '7')`). The compatibility
/// rewrites wrap such literals (DataFusion would refuse the text while
/// planning), and this rule replaces the call by the value once the array's
/// type is known.
fn typed_like(
    function: &datafusion::logical_expr::expr::ScalarFunction,
    schema: &DFSchema,
) -> Option<Expr> {
    let element = match function.name() {
        ARRAY_LIKE => false,
        ELEMENT_LIKE => true,
        _ => return None,
    };
    let [model, text] = function.args.as_slice() else {
        return None;
    };
    let value = like(text_literal(text)?, &model.get_type(schema).ok()?, element).ok()?;
    Some(lit(value))
}

const ARRAY_LIKE: &str = "pgaccel_array_like";
const ELEMENT_LIKE: &str = "pgaccel_element_like";

/// The value `text` spells as a value of the array type `model` or, with
/// `element`, of its element type.
fn like(text: &str, model: &DataType, element: bool) -> Result<ScalarValue> {
    let invalid = || {
        datafusion::error::DataFusionError::External(Box::new(super::PgError::new(
            super::sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("malformed array literal: \"{text}\""),
        )))
    };
    match (model, element) {
        (DataType::List(item), true) => {
            ScalarValue::Utf8(Some(text.to_owned())).cast_to(item.data_type())
        }
        (DataType::List(_), false) => spelled(text, model).ok_or_else(invalid),
        _ => Ok(ScalarValue::Utf8(Some(text.to_owned()))),
    }
}

/// The function [`typed_like`] folds, for the rows it is not folded in.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TypedLike {
    element: bool,
    signature: datafusion::logical_expr::Signature,
}

impl datafusion::logical_expr::ScalarUDFImpl for TypedLike {
    fn name(&self) -> &str {
        if self.element {
            ELEMENT_LIKE
        } else {
            ARRAY_LIKE
        }
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(match (arg_types.first(), self.element) {
            (Some(DataType::List(item)), true) => item.data_type().clone(),
            (Some(model @ DataType::List(_)), false) => model.clone(),
            _ => DataType::Utf8,
        })
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use datafusion::logical_expr::ColumnarValue;
        let model = args.arg_fields[0].data_type();
        let value = match &args.args[1] {
            ColumnarValue::Scalar(scalar) if scalar.is_null() => {
                ScalarValue::try_from(self.return_type(std::slice::from_ref(model))?)?
            }
            ColumnarValue::Scalar(scalar) => like(&scalar.to_string(), model, self.element)?,
            ColumnarValue::Array(_) => {
                return Err(datafusion::error::DataFusionError::Plan(format!(
                    "{} takes a literal",
                    self.name()
                )));
            }
        };
        Ok(ColumnarValue::Scalar(value))
    }
}

/// [`TypedLike`]'s two functions.
pub fn functions() -> Vec<std::sync::Arc<datafusion::logical_expr::ScalarUDF>> {
    [false, true]
        .map(|element| {
            std::sync::Arc::new(datafusion::logical_expr::ScalarUDF::new_from_impl(
                TypedLike {
                    element,
                    signature: datafusion::logical_expr::Signature::any(
                        2,
                        datafusion::logical_expr::Volatility::Immutable,
                    ),
                },
            ))
        })
        .into()
}

/// `function(args)` with its untyped literal arguments wrapped for
/// [`typed_like`]: `arrays` says which arguments are arrays (the rest are
/// elements); `None` when no argument is such a literal.
pub fn wrap_array_literals(
    args: &[datafusion::sql::sqlparser::ast::Expr],
    arrays: &[bool],
) -> Option<Vec<datafusion::sql::sqlparser::ast::Expr>> {
    use datafusion::sql::sqlparser::ast::{Expr as SqlExpr, Value};
    let is_text = |arg: &SqlExpr| matches!(arg, SqlExpr::Value(value) if matches!(value.value, Value::SingleQuotedString(_)));
    // The first argument that is an array and not a literal gives the type.
    let model = args
        .iter()
        .zip(arrays)
        .find(|(arg, is_array)| **is_array && !is_text(arg))?
        .0;
    if !args.iter().any(is_text) {
        return None;
    }
    Some(
        args.iter()
            .enumerate()
            .map(|(index, arg)| {
                if !is_text(arg) {
                    return arg.clone();
                }
                let array = arrays.get(index).copied().unwrap_or(false);
                super::compat::call(
                    if array { ARRAY_LIKE } else { ELEMENT_LIKE },
                    vec![model.clone(), arg.clone()],
                )
            })
            .collect(),
    )
}

/// Both operands as `float8` when one is a float and the other numeric.
fn float_with_numeric(left: &Expr, right: &Expr, schema: &DFSchema) -> Option<(Expr, Expr)> {
    let is_float = |t: &DataType| matches!(t, DataType::Float32 | DataType::Float64);
    let is_numeric =
        |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
    let (l, r) = (left.get_type(schema).ok()?, right.get_type(schema).ok()?);
    if !(is_float(&l) && is_numeric(&r) || is_numeric(&l) && is_float(&r)) {
        return None;
    }
    let float8 = |expr: &Expr, t: &DataType| {
        if *t == DataType::Float64 {
            expr.clone()
        } else if is_numeric(t) {
            super::numeric::numeric_to_float(expr.clone(), DataType::Float64)
        } else {
            expr.clone()
                .cast_to(&DataType::Float64, schema)
                .unwrap_or_else(|_| expr.clone())
        }
    };
    Some((float8(left, &l), float8(right, &r)))
}

/// `coalesce(n, f)`, `greatest(...)`, `least(...)` and `CASE ... THEN n
/// ELSE f END` over a float and a numeric: PostgreSQL resolves them to
/// `float8` (and prints `1.5`), where DataFusion makes a decimal of them
/// (`1.500000000000000`, or an overflow for a large double). The numerics
/// are cast to `float8`.
fn float_branches(expr: &Expr, schema: &DFSchema) -> Option<Expr> {
    let is_float = |t: &DataType| matches!(t, DataType::Float32 | DataType::Float64);
    let is_numeric =
        |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
    // The float type they resolve to: float8 if one is, else float4.
    let mixed = |values: &[&Expr]| {
        let types: Vec<DataType> = values
            .iter()
            .filter_map(|value| value.get_type(schema).ok())
            .collect();
        (types.iter().any(is_float) && types.iter().any(is_numeric)).then(|| {
            if types.contains(&DataType::Float64) {
                DataType::Float64
            } else {
                DataType::Float32
            }
        })
    };
    let to_float = |value: Expr, target: &DataType| match value.get_type(schema) {
        Ok(t) if is_numeric(&t) => super::numeric::numeric_to_float(value, target.clone()),
        _ => value,
    };
    match expr {
        Expr::ScalarFunction(function)
            if matches!(function.name(), "coalesce" | "greatest" | "least" | "nvl") =>
        {
            let target = mixed(&function.args.iter().collect::<Vec<_>>())?;
            let mut function = function.clone();
            function.args = function
                .args
                .into_iter()
                .map(|arg| to_float(arg, &target))
                .collect();
            Some(Expr::ScalarFunction(function))
        }
        Expr::Case(case) => {
            let branches: Vec<&Expr> = case
                .when_then_expr
                .iter()
                .map(|(_, then)| then.as_ref())
                .chain(case.else_expr.as_deref())
                .collect();
            let target = mixed(&branches)?;
            let mut case = case.clone();
            for (_, then) in &mut case.when_then_expr {
                **then = to_float((**then).clone(), &target);
            }
            if let Some(otherwise) = &mut case.else_expr {
                **otherwise = to_float((**otherwise).clone(), &target);
            }
            Some(Expr::Case(case))
        }
        _ => None,
    }
}

fn text_literal(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Literal(
            ScalarValue::Utf8(Some(text))
            | ScalarValue::Utf8View(Some(text))
            | ScalarValue::LargeUtf8(Some(text)),
            _,
        ) => Some(text),
        _ => None,
    }
}

/// `d < 'today'`, `ts >= 'yesterday'`, `t < 'now'`, `t > 'epoch'`: the
/// special date and time inputs compared with a date or a timestamp, read
/// when the statement runs (midnight on the session's clock for the days).
fn special_moment(text: &str, data_type: &DataType) -> Option<Expr> {
    use datafusion::arrow::datatypes::IntervalDayTime;
    use datafusion::functions::datetime::expr_fn::{current_date, now};
    use datafusion::logical_expr::Cast;
    if !matches!(data_type, DataType::Date32 | DataType::Timestamp(..)) {
        return None;
    }
    let cast = |expr: Expr| Expr::Cast(Cast::new(Box::new(expr), data_type.clone()));
    let day = |offset: i32| {
        cast(
            current_date()
                + lit(ScalarValue::IntervalDayTime(Some(IntervalDayTime::new(
                    offset, 0,
                )))),
        )
    };
    Some(match text.trim().to_ascii_lowercase().as_str() {
        "today" => day(0),
        "tomorrow" => day(1),
        "yesterday" => day(-1),
        "now" => cast(now()),
        // 1970-01-01, midnight UTC for a timestamptz whatever the session's
        // zone.
        "epoch" => cast(lit(match data_type {
            DataType::Date32 => ScalarValue::Date32(Some(0)),
            DataType::Timestamp(_, None) => ScalarValue::TimestampMicrosecond(Some(0), None),
            _ => ScalarValue::TimestampMicrosecond(Some(0), Some("UTC".into())),
        })),
        _ => return None,
    })
}

/// The value `text` spells in `data_type`, for the types DataFusion does not
/// coerce text to itself.
fn spelled(text: &str, data_type: &DataType) -> Option<ScalarValue> {
    match data_type {
        DataType::Boolean => parse_bool(text).map(|b| ScalarValue::Boolean(Some(b))),
        DataType::List(element) => {
            let values = array_items(text)
                .into_iter()
                .map(|item| {
                    if item.eq_ignore_ascii_case("null") {
                        ScalarValue::try_from(element.data_type())
                    } else {
                        ScalarValue::Utf8(Some(item)).cast_to(element.data_type())
                    }
                })
                .collect::<Result<Vec<_>>>()
                .ok()?;
            Some(ScalarValue::List(ScalarValue::new_list_nullable(
                &values,
                element.data_type(),
            )))
        }
        // `ts > '2024-01-06 12:00'`: a time without seconds, which
        // PostgreSQL reads and Arrow's timestamp parser does not.
        DataType::Timestamp(..) => {
            super::compat::with_seconds(text).map(|full| ScalarValue::Utf8(Some(full)))
        }
        _ => None,
    }
}

/// `array_col = '{1,2,3}'` (or `@>`, `<@`, `&&`): the text is read as the array's type while the
/// SQL is planned, before DataFusion's type checks refuse a list compared
/// with text (the analyzer rule above comes too late for them).
#[derive(Debug)]
pub struct ArrayLiterals;

impl datafusion::logical_expr::planner::ExprPlanner for ArrayLiterals {
    fn plan_binary_op(
        &self,
        expr: datafusion::logical_expr::planner::RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<
        datafusion::logical_expr::planner::PlannerResult<
            datafusion::logical_expr::planner::RawBinaryExpr,
        >,
    > {
        use datafusion::logical_expr::planner::PlannerResult;
        use datafusion::sql::sqlparser::ast::BinaryOperator;
        let list = |e: &Expr| matches!(e.get_type(schema), Ok(DataType::List(_)));
        // `array || '{7}'`: the literal is an array of the same type (an
        // array concatenation), as PostgreSQL reads it.
        if matches!(expr.op, BinaryOperator::StringConcat) {
            let mut expr = expr;
            if list(&expr.left)
                && let Some(text) = text_literal(&expr.right)
                && let Some(value) = spelled(text, &expr.left.get_type(schema)?)
            {
                expr.right = lit(value);
            } else if list(&expr.right)
                && let Some(text) = text_literal(&expr.left)
                && let Some(value) = spelled(text, &expr.right.get_type(schema)?)
            {
                expr.left = lit(value);
            }
            return Ok(PlannerResult::Original(expr));
        }
        if !matches!(
            expr.op,
            BinaryOperator::Eq
                | BinaryOperator::NotEq
                | BinaryOperator::Lt
                | BinaryOperator::LtEq
                | BinaryOperator::Gt
                | BinaryOperator::GtEq
                | BinaryOperator::AtArrow
                | BinaryOperator::ArrowAt
                | BinaryOperator::PGOverlap
        ) {
            return Ok(PlannerResult::Original(expr));
        }
        let typed = |text_side: &Expr, other: &Expr| -> Option<Expr> {
            let text = text_literal(text_side)?;
            Some(lit(spelled(text, &other.get_type(schema).ok()?)?))
        };
        let mut expr = expr;
        if list(&expr.left)
            && let Some(literal) = typed(&expr.right, &expr.left)
        {
            expr.right = literal;
        } else if list(&expr.right)
            && let Some(literal) = typed(&expr.left, &expr.right)
        {
            expr.left = literal;
        }
        Ok(PlannerResult::Original(expr))
    }
}
