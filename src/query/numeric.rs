//! PostgreSQL's `numeric` where its results depend on the value: the
//! quotient of a division and of `avg` is computed at the scale
//! PostgreSQL's `select_div_scale` picks (at least 16 significant digits,
//! never fewer decimals than an operand shows), rounded half away from zero,
//! and printed at that scale (PostgreSQL keeps a display scale with every
//! numeric value: `1::numeric / 3` is `0.33333333333333333333`, `avg` of 1
//! and 2 is `1.5000000000000000`).
//!
//! Arrow decimals have one scale per column, so such results are held as
//! `Decimal256(76, 40)` ([`DYNAMIC`]) with the exact value, and the display
//! scale of each value is computed beside it: within one expression from the
//! operands, across plan nodes by a companion column threaded up from the
//! aggregate or projection that computed the value ([`postgres_numerics`]).
//! A result whose display scale cannot be followed is refused with 0A000,
//! never printed at another scale.
//!
//! The arithmetic is written here because no crate does PostgreSQL's scale
//! selection; values are exact in 256-bit integers.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Decimal256Builder, Int32Builder, StringBuilder,
};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Decimal256Type, Field, FieldRef, Int8Type, Int16Type, Int32Type,
    Int64Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type, i256,
};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction, WindowFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{
    Accumulator, Aggregate, AggregateUDF, AggregateUDFImpl, BinaryExpr, Case, ColumnarValue, Expr,
    ExprSchemable, LogicalPlan, Operator, Projection, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, SubqueryAlias, TypeSignature, Volatility, Window, WindowFunctionDefinition, lit,
};

use super::PgError;
use super::sqlstate;
use crate::accelerator::PG_TYPE_METADATA;

mod functions;
mod to_float;
mod transcendental;

pub use functions::register;
use functions::*;

/// The Arrow type of a numeric whose display scale varies by value.
pub const DYNAMIC: DataType = DataType::Decimal256(76, DYNAMIC_SCALE as i8);
const DYNAMIC_SCALE: u32 = 40;

/// PostgreSQL's `NUMERIC_MIN_SIG_DIGITS`: a quotient has at least this many
/// significant digits.
const MIN_SIG_DIGITS: i32 = 16;
/// PostgreSQL's `NUMERIC_MAX_DISPLAY_SCALE`.
const MAX_DISPLAY_SCALE: i32 = 1000;

/// Functions PostgreSQL computes in numeric for a numeric argument, at a
/// scale of their own ([`transcendental`]); with a float among the
/// arguments they are the float functions.
const FLOAT_ONLY: [&str; 7] = ["exp", "ln", "log", "log10", "power", "pow", "sqrt"];
const DIVIDE: &str = "pgaccel_numeric_div";
const DIVIDE_SCALE: &str = "pgaccel_numeric_div_scale";
const MULTIPLY: &str = "pgaccel_numeric_mul";
const AVG: &str = "pgaccel_avg";
const AVG_SCALE: &str = "pgaccel_avg_scale";
const AVG_WITH_SCALE: &str = "pgaccel_avg_with_scale";
const TEXT: &str = "pgaccel_numeric_text";
const DISPLAY: &str = "pgaccel_numeric_display";
const TO_NUMERIC: &str = "pgaccel_to_numeric";
const TO_NUMERIC_SCALE: &str = "pgaccel_to_numeric_scale";
const FLOAT_ROUND: &str = "pgaccel_float_round";
/// The display scale of a column computed in another plan node, until
/// [`Threads::resolve_pending`] threads it up.
const PENDING: &str = "pgaccel_numeric_pending_scale";

/// Where a companion column's name starts; never a name a user writes.
const COMPANION: &str = "__pgaccel_scale_";

/// `what` refused as not supported, with no more said.
fn unsupported(what: &str) -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!("{what} is not supported"),
    )))
}

fn refused(what: &str) -> DataFusionError {
    DataFusionError::External(Box::new(
        PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("{what} is not supported: pgaccel cannot follow the scale PostgreSQL would print it with"),
        )
        .with_hint("round() the value to a number of decimals, or cast it to float8"),
    ))
}

fn out_of_range() -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::NUMERIC_OUT_OF_RANGE,
        "value overflows numeric format",
    )))
}

fn ten_to(power: u32) -> Option<i256> {
    i256::from_i128(10).checked_pow(power)
}

/// A numeric value: `digits × 10^-scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Number {
    digits: i256,
    scale: u32,
}

impl Number {
    /// The weight and first digit of the value in PostgreSQL's base-10000
    /// representation (both 0 for zero).
    fn weight_and_first_digit(self) -> (i32, i256) {
        if self.digits == i256::ZERO {
            return (0, i256::ZERO);
        }
        let magnitude = self.digits.wrapping_abs();
        let decimal_digits = magnitude.checked_ilog10().map_or(1, |log| log as i32 + 1);
        let exponent = decimal_digits - 1 - self.scale as i32;
        let weight = exponent.div_euclid(4);
        let shift = -(self.scale as i32) - 4 * weight;
        let first = if shift >= 0 {
            magnitude.wrapping_mul(ten_to(shift as u32).unwrap_or(i256::ONE))
        } else {
            magnitude.wrapping_div(ten_to(shift.unsigned_abs()).unwrap_or(i256::ONE))
        };
        (weight, first)
    }
}

/// `value::float8` (or `float4`, `target`) of a numeric `value`, converted
/// as PostgreSQL converts it (see [`to_float`]), for rules that add the
/// cast after this module's rewrite has run.
pub(crate) fn numeric_to_float(value: Expr, target: DataType) -> Expr {
    Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(to_float::function(target)),
        vec![value],
    ))
}

/// PostgreSQL's `select_div_scale`: the scale of `dividend / divisor` given
/// the operands and their display scales.
fn div_scale(dividend: Number, dividend_scale: i32, divisor: Number, divisor_scale: i32) -> i32 {
    let (weight1, first1) = dividend.weight_and_first_digit();
    let (weight2, first2) = divisor.weight_and_first_digit();
    let mut quotient_weight = weight1 - weight2;
    if first1 <= first2 {
        quotient_weight -= 1;
    }
    (MIN_SIG_DIGITS - quotient_weight * 4)
        .max(dividend_scale)
        .max(divisor_scale)
        .clamp(0, MAX_DISPLAY_SCALE)
}

/// `dividend / divisor` rounded half away from zero to `scale` decimals, as
/// digits at that scale; `None` when it does not fit.
fn divide(dividend: Number, divisor: Number, scale: u32) -> Option<i256> {
    // quotient × 10^scale = dividend.digits × 10^(scale + s2 - s1) / divisor.digits
    let shift = scale as i64 + divisor.scale as i64 - dividend.scale as i64;
    let (numerator, denominator) = if shift >= 0 {
        (
            dividend.digits.checked_mul(ten_to(shift as u32)?)?,
            divisor.digits,
        )
    } else {
        (
            dividend.digits,
            divisor
                .digits
                .checked_mul(ten_to(shift.unsigned_abs() as u32)?)?,
        )
    };
    let negative = numerator.is_negative() != denominator.is_negative();
    let (numerator, denominator) = (numerator.checked_abs()?, denominator.checked_abs()?);
    let quotient = numerator.checked_div(denominator)?;
    let remainder = numerator.checked_rem(denominator)?;
    let rounded = if remainder.checked_mul(i256::from_i128(2))? >= denominator {
        quotient.checked_add(i256::ONE)?
    } else {
        quotient
    };
    Some(if negative {
        rounded.checked_neg()?
    } else {
        rounded
    })
}

/// A numeric result at `scale` decimals, more than pgaccel keeps.
fn too_many_decimals(scale: u32) -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        format!(
            "a numeric result with {scale} decimal digits is not supported (pgaccel keeps at most {DYNAMIC_SCALE})"
        ),
    )))
}

/// Digits at `scale` as digits at [`DYNAMIC_SCALE`].
fn to_dynamic(digits: i256, scale: u32) -> Result<i256> {
    if scale > DYNAMIC_SCALE {
        return Err(too_many_decimals(scale));
    }
    let value = ten_to(DYNAMIC_SCALE - scale)
        .and_then(|factor| digits.checked_mul(factor))
        .ok_or_else(out_of_range)?;
    if value.wrapping_abs() >= ten_to(76).unwrap_or(i256::MAX) {
        return Err(out_of_range());
    }
    Ok(value)
}

/// PostgreSQL's text of `digits × 10^-scale` printed with `display` decimals.
fn text(digits: i256, scale: u32, display: u32) -> String {
    let digits = if display < scale {
        let divisor = Number {
            digits: ten_to(scale - display).unwrap_or(i256::ONE),
            scale: 0,
        };
        divide(Number { digits, scale: 0 }, divisor, 0).unwrap_or(digits)
    } else {
        digits
            .checked_mul(ten_to(display - scale).unwrap_or(i256::ONE))
            .unwrap_or(digits)
    };
    let negative = digits.is_negative();
    let magnitude = digits.wrapping_abs().to_string();
    let display = display as usize;
    let padded = format!("{magnitude:0>width$}", width = display + 1);
    let (integer, fraction) = padded.split_at(padded.len() - display);
    let sign = if negative { "-" } else { "" };
    if fraction.is_empty() {
        format!("{sign}{integer}")
    } else {
        format!("{sign}{integer}.{fraction}")
    }
}

/// The functions the rewrite calls, looked up once per plan.
struct Functions {
    divide: Arc<ScalarUDF>,
    multiply: Arc<ScalarUDF>,
    divide_scale: Arc<ScalarUDF>,
    text: Arc<ScalarUDF>,
    display: Arc<ScalarUDF>,
    first_value: Arc<AggregateUDF>,
    avg: Arc<AggregateUDF>,
    avg_scale: Arc<AggregateUDF>,
    avg_with_scale: Arc<AggregateUDF>,
    max: Arc<AggregateUDF>,
    /// `max`/`min` of floats with NaN above every number.
    float_max: Arc<AggregateUDF>,
    /// The float aggregates of [`super::float_sums`], by kind.
    float_sums: Vec<(super::float_sums::Kind, Arc<AggregateUDF>)>,
    /// The registered `log10` (PostgreSQL's, from [`super::math`]).
    log10: Arc<ScalarUDF>,
    /// `corr`, `covar_*` and `regr_*` of [`super::float_regression`].
    regressions: Vec<(super::float_regression::Kind, Arc<AggregateUDF>)>,
    float_min: Arc<AggregateUDF>,
    rounding: Vec<(Rounding, Arc<ScalarUDF>)>,
    float_round: Arc<ScalarUDF>,
    to_numeric_scale: Arc<ScalarUDF>,
    pending: Arc<ScalarUDF>,
    /// Scalar subqueries given a scale twin so far (each threads its
    /// companions under names of its own).
    subqueries: std::cell::Cell<usize>,
    spreads: Vec<(&'static str, Arc<AggregateUDF>)>,
}

impl Functions {
    fn new(state: &datafusion::execution::context::SessionState) -> Result<Self> {
        let scalar = |name: &str| {
            state
                .scalar_functions()
                .get(name)
                .cloned()
                .ok_or_else(|| DataFusionError::Internal(format!("{name} is not registered")))
        };
        let aggregate = |name: &str| {
            state
                .aggregate_functions()
                .get(name)
                .cloned()
                .ok_or_else(|| DataFusionError::Internal(format!("{name} is not registered")))
        };
        Ok(Functions {
            divide: scalar(DIVIDE)?,
            multiply: scalar(MULTIPLY)?,
            divide_scale: scalar(DIVIDE_SCALE)?,
            text: scalar(TEXT)?,
            display: scalar(DISPLAY)?,
            first_value: aggregate("first_value")?,
            avg: aggregate(AVG)?,
            avg_scale: aggregate(AVG_SCALE)?,
            avg_with_scale: aggregate(AVG_WITH_SCALE)?,
            max: aggregate("max")?,
            float_max: aggregate(super::float_extremes::MAX)?,
            float_sums: super::float_sums::Kind::ALL
                .into_iter()
                .map(|kind| Ok((kind, aggregate(kind.name())?)))
                .collect::<Result<_>>()?,
            log10: scalar("log10")?,
            regressions: super::float_regression::Kind::ALL
                .into_iter()
                .map(|kind| Ok((kind, aggregate(&kind.name())?)))
                .collect::<Result<_>>()?,
            float_min: aggregate(super::float_extremes::MIN)?,
            rounding: ROUNDINGS
                .into_iter()
                .map(|rounding| Ok((rounding, scalar(rounding.name())?)))
                .collect::<Result<_>>()?,
            float_round: scalar(FLOAT_ROUND)?,
            to_numeric_scale: scalar(TO_NUMERIC_SCALE)?,
            pending: scalar(PENDING)?,
            subqueries: std::cell::Cell::new(0),
            spreads: SPREADS
                .into_iter()
                .flat_map(|spread| [spread.name(false), spread.name(true)])
                .map(|name| Ok((name, aggregate(name)?)))
                .collect::<Result<_>>()?,
        })
    }
}

/// Whether `name` is one of the aggregates `avg` of an exact number is
/// planned as (see [`average_of_sum`]).
pub(crate) fn is_exact_average(name: &str) -> bool {
    matches!(name, AVG | AVG_SCALE | AVG_WITH_SCALE)
}

/// `avg` of an exact number as the aggregate named `name` returns it
/// (the value, its display scale, or both), computed from the values' exact
/// `sum` (a decimal at `scale`, the display scale of every value, or NULL
/// over no values) and their `count`: PostgreSQL's `avg` is that division
/// at [`div_scale`]. `None` when `name` is no average of pgaccel's.
pub(crate) fn average_of_sum(name: &str, sum: Expr, count: Expr, scale: i32) -> Option<Expr> {
    let divide = |scale_only| {
        Expr::ScalarFunction(ScalarFunction::new_udf(
            functions::divide_udf(scale_only),
            vec![sum.clone(), count.clone(), lit(scale), lit(0i32)],
        ))
    };
    match name {
        AVG => Some(divide(false)),
        AVG_SCALE => Some(divide(true)),
        // Cast to the aggregate's own struct type: `named_struct` would
        // give its fields nullability of their own.
        AVG_WITH_SCALE => Some(datafusion::logical_expr::cast(
            datafusion::functions::core::expr_fn::named_struct(vec![
                lit(AVERAGE_VALUE),
                divide(false),
                lit(AVERAGE_SCALE),
                divide(true),
            ]),
            DataType::Struct(average_fields()),
        )),
        _ => None,
    }
}

/// Plans PostgreSQL's numeric rules into `plan`: numeric division and
/// `avg` of exact numbers computed as PostgreSQL computes them, and every
/// result column whose display scale varies by value printed at that scale.
pub fn postgres_numerics(
    plan: LogicalPlan,
    state: &datafusion::execution::context::SessionState,
) -> Result<LogicalPlan> {
    let functions = Functions::new(state)?;
    let plan = rewrite_expressions(plan, |e, schema| functions.rewrite(e, schema))?;
    let mut threads = Threads {
        functions: &functions,
        scope: 0,
        next: 0,
    };
    let plan = threads.resolve_pending(plan)?;
    refuse_mixed_scale_unions(&plan)?;
    refuse_mixed_scale_arrays(&plan)?;
    threads.display(plan)
}

/// A numeric value keeps its own scale through `UNION` in PostgreSQL
/// (`SELECT 0.38::numeric(12,2) UNION ALL SELECT 1.5::numeric(38,10)`
/// prints `0.38` and `1.5000000000`); a union column whose branches are
/// numerics of different scales (or numerics and integers) would print
/// every value at one scale, so it is refused.
fn refuse_mixed_scale_unions(plan: &LogicalPlan) -> Result<()> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut mixed = None;
    let summed = summed_values(plan);
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Union(union) = node {
            for column in 0..union.schema.fields().len() {
                let scales: Vec<Option<i8>> = union
                    .inputs
                    .iter()
                    .filter_map(|input| {
                        // `NULL::numeric` has no scale to print.
                        if null_constant(input, column) {
                            return None;
                        }
                        let data_type = input.schema().fields().get(column)?.data_type().clone();
                        match data_type {
                            DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale) => {
                                Some(Some(scale))
                            }
                            t if t.is_integer() => Some(Some(0)),
                            DataType::Null => None,
                            _ => Some(None),
                        }
                    })
                    .collect();
                let decimal = union.inputs.iter().any(|input| {
                    input
                        .schema()
                        .fields()
                        .get(column)
                        .is_some_and(|f| is_decimal(f.data_type()))
                });
                if decimal
                    && scales.iter().all(Option::is_some)
                    && scales.windows(2).any(|pair| pair[0] != pair[1])
                {
                    mixed = Some("a UNION of numerics of different scales");
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
        }
        if let LogicalPlan::Values(values) = node
            && !summed.contains(&std::ptr::from_ref(values))
            && mixed_scale_values(values)
        {
            mixed = Some("a VALUES list of numerics of different scales");
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    match mixed {
        Some(what) => Err(refused(what)),
        None => Ok(()),
    }
}

/// An element keeps its own scale in a PostgreSQL array (`ARRAY[1.50, 2]`
/// prints `{1.50,2}`), where an Arrow list has one scale for all: an
/// `ARRAY[...]` in the select list whose elements are numerics of
/// different scales (or numerics and integers), or numerics whose scale
/// varies by value, would print every element at one scale, so it is
/// refused. An array only compared or searched (`x = ANY(ARRAY[1.5, 2])`,
/// `width_bucket(x, ARRAY[1, 2.5])`) prints nothing and stays.
fn refuse_mixed_scale_arrays(plan: &LogicalPlan) -> Result<()> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    let mut mixed = false;
    plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Projection(projection) = node
            && projection
                .expr
                .iter()
                .any(|expr| mixed_scale_array(expr, projection.input.schema()))
        {
            mixed = true;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    match mixed {
        true => Err(refused("an ARRAY of numerics of different scales")),
        false => Ok(()),
    }
}

/// Whether the array `expr` computes is, or is built from, an
/// `ARRAY[...]` of numerics of different scales: followed down through
/// the parts of `expr` that are arrays themselves (`array_append(ARRAY[
/// 1.5, 2], 3)`), not into a comparison or a function of another type.
fn mixed_scale_array(expr: &Expr, schema: &DFSchema) -> bool {
    use datafusion::common::tree_node::TreeNodeRecursion;
    if let Expr::ScalarFunction(function) = expr
        && function.name() == "make_array"
        && mixed_scales(function.args.iter(), schema)
    {
        return true;
    }
    // Not into a part known to be something else than an array (an
    // `ARRAY[...]` of a column and a literal has no type until the
    // analyzer coerces its elements).
    if expr.get_type(schema).is_ok_and(|t| {
        !matches!(
            t,
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
        )
    }) {
        return false;
    }
    let mut mixed = false;
    let _ = expr.apply_children(|child| {
        mixed = mixed_scale_array(child, schema);
        Ok(match mixed {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    });
    mixed
}

/// The `VALUES` lists of `plan` read only by `sum`, `avg` and `count`
/// without grouping by a numeric: their results' scale is the largest of
/// the rows', as in PostgreSQL, whatever scale each row had.
fn summed_values(plan: &LogicalPlan) -> Vec<*const datafusion::logical_expr::Values> {
    let mut summed = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Aggregate(aggregate) = node
            && aggregate.aggr_expr.iter().all(|expr| {
                matches!(expr.clone().unalias(), Expr::AggregateFunction(function)
                if matches!(function.func.name(), "sum" | "avg" | AVG | AVG_WITH_SCALE | "count")
                    && function.params.args.iter().all(|arg| {
                        matches!(arg, Expr::Column(_) | Expr::Literal(..))
                    }))
            })
            && aggregate.group_expr.iter().all(|expr| {
                expr.get_type(aggregate.input.schema())
                    .is_ok_and(|t| !is_decimal(&t))
            })
        {
            let mut input = aggregate.input.as_ref();
            loop {
                match input {
                    LogicalPlan::SubqueryAlias(alias) => input = &alias.input,
                    LogicalPlan::Projection(projection)
                        if projection
                            .expr
                            .iter()
                            .all(|e| matches!(e.clone().unalias(), Expr::Column(_))) =>
                    {
                        input = &projection.input;
                    }
                    LogicalPlan::Values(values) => {
                        summed.push(std::ptr::from_ref(values));
                        break;
                    }
                    _ => break,
                }
            }
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    // A list read elsewhere too (a CTE read twice) is not only summed.
    let mut everywhere = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Values(values) = node {
            everywhere.push(std::ptr::from_ref(values));
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    let count = |list: &[*const datafusion::logical_expr::Values], values| {
        list.iter().filter(|&&other| other == values).count()
    };
    summed
        .iter()
        .copied()
        .filter(|&values| count(&summed, values) == count(&everywhere, values))
        .collect()
}

/// Whether a numeric column of a `VALUES` list has rows of different
/// scales (`VALUES (1.5), (3)`): PostgreSQL prints each at its own
/// (`1.5`, `3`), where the column has one. A row's scale is its value's
/// before the cast to the column's type that the list adds.
fn mixed_scale_values(values: &datafusion::logical_expr::Values) -> bool {
    let empty = datafusion::common::DFSchema::empty();
    values
        .schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, field)| is_decimal(field.data_type()))
        .any(|(column, field)| {
            let scales: Vec<i8> = values
                .values
                .iter()
                .filter_map(|row| {
                    let mut expr = row.get(column)?;
                    if let Expr::Cast(cast) = expr
                        && cast.field.data_type() == field.data_type()
                    {
                        expr = &cast.expr;
                    }
                    match expr.get_type(&empty).ok()? {
                        DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale) => {
                            Some(scale)
                        }
                        t if t.is_integer() => Some(0),
                        _ => None,
                    }
                })
                .collect();
            scales.windows(2).any(|pair| pair[0] != pair[1])
        })
}

/// Whether column `column` of `plan` is a NULL constant (`SELECT
/// NULL::numeric`), through casts.
fn null_constant(plan: &LogicalPlan, column: usize) -> bool {
    let LogicalPlan::Projection(projection) = plan else {
        return false;
    };
    let Some(mut expr) = projection.expr.get(column) else {
        return false;
    };
    loop {
        match expr {
            Expr::Alias(alias) => expr = &alias.expr,
            Expr::Cast(cast) => expr = &cast.expr,
            Expr::TryCast(cast) => expr = &cast.expr,
            Expr::Literal(value, _) => return value.is_null(),
            _ => return false,
        }
    }
}

/// Every expression of `plan` (subqueries included) rewritten bottom-up by
/// `rewrite`, given the schema its node reads; output names are kept, and
/// each node's schema is derived again, since a type changed below changes
/// the columns every node above reads.
pub(super) fn rewrite_expressions(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &DFSchema) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    Ok(plan
        .transform_up_with_subqueries(|node| {
            let schema = merge_schema(&node.inputs());
            let names = NamePreserver::new(&node);
            // A grouping set cannot be aliased: its keys are renamed back
            // above the aggregate instead.
            let grouping_sets = match &node {
                LogicalPlan::Aggregate(aggregate)
                    if aggregate
                        .group_expr
                        .iter()
                        .any(|e| matches!(e, Expr::GroupingSet(_))) =>
                {
                    Some(Arc::clone(&aggregate.schema))
                }
                _ => None,
            };
            let rewritten = node.map_expressions(|expr| {
                if matches!(expr, Expr::GroupingSet(_)) {
                    return expr.transform_up(|e| rewrite(e, &schema));
                }
                let saved = names.save(&expr);
                let rewritten = expr.transform_up(|e| rewrite(e, &schema))?;
                Ok(rewritten.update_data(|e| saved.restore(e)))
            })?;
            let rewritten = rewritten.map_data(recompute_schema)?;
            match grouping_sets {
                Some(original) if rewritten.transformed => {
                    rewritten.map_data(|node| renamed(node, &original))
                }
                _ => Ok(rewritten),
            }
        })?
        .data)
}

/// `node` under a projection giving its columns the names (and
/// qualifiers) of `original`, where they differ.
fn renamed(node: LogicalPlan, original: &DFSchema) -> Result<LogicalPlan> {
    let same = node.schema().fields().len() == original.fields().len()
        && node
            .schema()
            .iter()
            .zip(original.iter())
            .all(|((q1, f1), (q2, f2))| q1 == q2 && f1.name() == f2.name());
    if same {
        return Ok(node);
    }
    let exprs = node
        .schema()
        .iter()
        .zip(original.iter())
        .map(
            |((qualifier, field), (original_qualifier, original_field))| {
                Expr::Column(Column::from((qualifier, field)))
                    .alias_qualified(original_qualifier.cloned(), original_field.name())
            },
        )
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(node),
    )?))
}

/// `node` with its schema derived again from its inputs and expressions
/// (DataFusion's `recompute_schema` keeps a union's own).
pub(super) fn recompute_schema(node: LogicalPlan) -> Result<LogicalPlan> {
    match node {
        LogicalPlan::Union(union) => Ok(LogicalPlan::Union(
            datafusion::logical_expr::Union::try_new_with_loose_types(union.inputs)?,
        )),
        other => other.recompute_schema(),
    }
}

/// Whether one side is a `real` and the other an integer or numeric.
fn real_with_exact(left: &Expr, right: &Expr, schema: &DFSchema) -> bool {
    let (Ok(left), Ok(right)) = (left.get_type(schema), right.get_type(schema)) else {
        return false;
    };
    let exact = |t: &DataType| is_exact_number(t) || t.is_integer();
    (left == DataType::Float32 && exact(&right)) || (right == DataType::Float32 && exact(&left))
}

impl Functions {
    fn rewrite(&self, expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
        match &expr {
            // `real` with an integer or a numeric is computed in double
            // precision (PostgreSQL resolves `float4 + int4` as float8).
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if matches!(
                    op,
                    Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide
                ) && real_with_exact(left, right, schema) =>
            {
                Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: Box::new((**left).clone().cast_to(&DataType::Float64, schema)?),
                    op: *op,
                    right: Box::new((**right).clone().cast_to(&DataType::Float64, schema)?),
                })))
            }
            // `float BETWEEN numeric AND numeric` compares in double
            // precision, as PostgreSQL resolves `float8 >= numeric`
            // (DataFusion would cast the floats to a decimal, which fails
            // on the large ones, infinities and NaN).
            Expr::Between(between)
                if matches!(
                    between.expr.get_type(schema),
                    Ok(DataType::Float32 | DataType::Float64)
                ) && [&between.low, &between.high].iter().any(|bound| {
                    bound
                        .get_type(schema)
                        .is_ok_and(|t| is_exact_number(&t) || t.is_integer())
                }) =>
            {
                let float = |expr: &Expr| -> Result<Box<Expr>> {
                    Ok(Box::new(match expr.get_type(schema)? {
                        DataType::Float64 | DataType::Null => expr.clone(),
                        _ => expr.clone().cast_to(&DataType::Float64, schema)?,
                    }))
                };
                let mut between = between.clone();
                between.expr = float(&between.expr)?;
                between.low = float(&between.low)?;
                between.high = float(&between.high)?;
                Ok(Transformed::yes(Expr::Between(between)))
            }
            // A [`DYNAMIC`] value compared with, added to or subtracted
            // from a numeric of so many integer digits (a `::numeric` cast,
            // `round()`) that no decimal type DataFusion has holds both:
            // both are [`DYNAMIC`].
            Expr::BinaryExpr(BinaryExpr { left, op, right })
                if (super::pg_types::is_comparison(*op)
                    || matches!(op, Operator::Plus | Operator::Minus | Operator::Modulo))
                    && beyond_dynamic(left, right, schema) =>
            {
                Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr {
                    left: Box::new(as_dynamic((**left).clone(), schema)?),
                    op: *op,
                    right: Box::new(as_dynamic((**right).clone(), schema)?),
                })))
            }
            // A product with a value whose scale varies by row: exact at
            // the sum of the two display scales, as PostgreSQL multiplies.
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Multiply,
                right,
            }) => {
                let (Ok(left_type), Ok(right_type)) =
                    (left.get_type(schema), right.get_type(schema))
                else {
                    return Ok(Transformed::no(expr));
                };
                let dynamic = matches!(left_type, DataType::Decimal256(..))
                    || matches!(right_type, DataType::Decimal256(..));
                if !is_exact_number(&left_type) || !is_exact_number(&right_type) {
                    return Ok(Transformed::no(expr));
                }
                // A product with a literal 0 and a decimal: DataFusion's
                // simplifier would replace `x * 0` by the 0, dropping the
                // product's scale (`(2.25 - id) * 0` is `0.00`).
                if !dynamic
                    && (is_decimal(&left_type) || is_decimal(&right_type))
                    && (zero_literal(left) || zero_literal(right))
                {
                    return self.with_scales(
                        &self.multiply,
                        left,
                        right,
                        schema,
                        "this product of numerics",
                    );
                }
                if !dynamic {
                    if !wide_product(left, right, schema) {
                        return Ok(Transformed::no(expr));
                    }
                    // Both scales are static: multiplied in 256 bits, at
                    // the sum of the two scales.
                    let wide = |operand: &Expr, data_type: &DataType| {
                        let scale = match data_type {
                            DataType::Decimal128(_, scale) => *scale,
                            _ => 0,
                        };
                        operand
                            .clone()
                            .cast_to(&DataType::Decimal256(76, scale), schema)
                    };
                    return Ok(Transformed::yes(
                        wide(left, &left_type)? * wide(right, &right_type)?,
                    ));
                }
                self.with_scales(
                    &self.multiply,
                    left,
                    right,
                    schema,
                    "this product of numerics",
                )
            }
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Divide,
                right,
            }) => {
                let (Ok(left_type), Ok(right_type)) =
                    (left.get_type(schema), right.get_type(schema))
                else {
                    return Ok(Transformed::no(expr));
                };
                let numeric = (is_decimal(&left_type) || is_decimal(&right_type))
                    && is_exact_number(&left_type)
                    && is_exact_number(&right_type);
                if !numeric {
                    return Ok(Transformed::no(expr));
                }
                self.with_scales(
                    &self.divide,
                    left,
                    right,
                    schema,
                    "this division of numerics",
                )
            }
            // PostgreSQL sums bigints as numeric: never an overflow.
            Expr::AggregateFunction(aggregate)
                if aggregate.func.name() == "sum"
                    && bigint_argument(&aggregate.params.args, schema) =>
            {
                let mut aggregate = aggregate.clone();
                aggregate.params.args = as_numeric(&aggregate.params.args, schema)?;
                Ok(Transformed::yes(Expr::AggregateFunction(aggregate)))
            }
            // ... in a window too.
            Expr::WindowFunction(window)
                if matches!(&window.fun, WindowFunctionDefinition::AggregateUDF(f) if f.name() == "sum")
                    && bigint_argument(&window.params.args, schema) =>
            {
                let mut window = window.clone();
                window.params.args = as_numeric(&window.params.args, schema)?;
                Ok(Transformed::yes(Expr::WindowFunction(window)))
            }
            // A CASE or coalesce() whose values are numerics of different
            // scales (or numerics and integers): PostgreSQL prints each
            // value at its own branch's scale (`coalesce(amount, 0)` is `0`
            // where amount is NULL), so the values are computed as
            // [`DYNAMIC`] and [`Self::scale_of`] follows the branch taken.
            Expr::Case(case)
                if mixed_scales(
                    case.when_then_expr
                        .iter()
                        .map(|(_, then)| then.as_ref())
                        .chain(case.else_expr.as_deref()),
                    schema,
                ) =>
            {
                let mut case = case.clone();
                for (_, then) in &mut case.when_then_expr {
                    **then = as_dynamic((**then).clone(), schema)?;
                }
                if let Some(otherwise) = &mut case.else_expr {
                    **otherwise = as_dynamic((**otherwise).clone(), schema)?;
                }
                Ok(Transformed::yes(Expr::Case(case)))
            }
            Expr::ScalarFunction(function)
                if function.name() == "coalesce"
                    && function.args.len() > 1
                    && mixed_scales(function.args.iter(), schema) =>
            {
                let mut args = function.args.clone();
                let last = args.pop().expect("more than one argument");
                let mut when_then_expr = Vec::with_capacity(args.len());
                for arg in args {
                    when_then_expr.push((
                        Box::new(arg.clone().is_not_null()),
                        Box::new(as_dynamic(arg, schema)?),
                    ));
                }
                Ok(Transformed::yes(Expr::Case(Case {
                    expr: None,
                    when_then_expr,
                    else_expr: Some(Box::new(as_dynamic(last, schema)?)),
                })))
            }
            // greatest()/least() of numerics of different scales (or
            // numerics and integers): PostgreSQL returns the first
            // argument equal to the extreme, printed at its own scale
            // (`greatest(1, 2.5, 3)` is `3`), so the arguments are
            // [`DYNAMIC`] and a CASE picks that argument.
            Expr::ScalarFunction(function)
                if matches!(function.name(), "greatest" | "least")
                    && function.args.len() > 1
                    && mixed_scales(function.args.iter(), schema) =>
            {
                let args = function
                    .args
                    .iter()
                    .map(|arg| as_dynamic(arg.clone(), schema))
                    .collect::<Result<Vec<_>>>()?;
                let mut extreme = function.clone();
                extreme.args = args.clone();
                let extreme = Expr::ScalarFunction(extreme);
                let when_then_expr = args
                    .into_iter()
                    .map(|arg| (Box::new(arg.clone().eq(extreme.clone())), Box::new(arg)))
                    .collect();
                Ok(Transformed::yes(Expr::Case(Case {
                    expr: None,
                    when_then_expr,
                    else_expr: None,
                })))
            }
            // `scale(numeric)`: the value's display scale.
            Expr::ScalarFunction(function)
                if function.name() == "scale"
                    && function.args.len() == 1
                    && function.args[0]
                        .get_type(schema)
                        .is_ok_and(|t| is_exact_number(&t) || t.is_null()) =>
            {
                let value = function.args[0].clone();
                let scale = self
                    .scale_of(&value, schema, &mut |c| Some(self.pending(c)))
                    .ok_or_else(|| refused("this scale() of a numeric"))?;
                Ok(Transformed::yes(Expr::Case(Case {
                    expr: None,
                    when_then_expr: vec![(Box::new(value.is_not_null()), Box::new(scale))],
                    else_expr: None,
                })))
            }
            // lead()/lag() with a default: the default keeps its own scale
            // in PostgreSQL (`lead(amount, 1, 0)` prints `0`).
            Expr::WindowFunction(window)
                if matches!(
                    &window.fun,
                    WindowFunctionDefinition::WindowUDF(udf) if matches!(udf.name(), "lead" | "lag")
                ) && window.params.args.len() == 3
                    && mixed_scales(
                        [&window.params.args[0], &window.params.args[2]].into_iter(),
                        schema,
                    ) =>
            {
                // Each value keeps its own scale: the default's where it
                // is taken (`lag(amount, 1, 0)` prints `0`).
                let mut window = window.clone();
                for position in [0, 2] {
                    window.params.args[position] =
                        as_dynamic(window.params.args[position].clone(), schema)?;
                }
                Ok(Transformed::yes(Expr::WindowFunction(window)))
            }
            // `sign(numeric)` is a numeric -1, 0 or 1.
            Expr::ScalarFunction(function)
                if function.name() == "signum"
                    && function.args.len() == 1
                    && function.args[0]
                        .get_type(schema)
                        .is_ok_and(|t| is_decimal(&t)) =>
            {
                let x = function.args[0].clone();
                let one = |n: i128| Expr::Literal(ScalarValue::Decimal128(Some(n), 1, 0), None);
                Ok(Transformed::yes(Expr::Case(Case {
                    expr: None,
                    when_then_expr: vec![
                        (Box::new(x.clone().gt(lit(0i32))), Box::new(one(1))),
                        (Box::new(x.clone().lt(lit(0i32))), Box::new(one(-1))),
                        (Box::new(x.is_not_null()), Box::new(one(0))),
                    ],
                    else_expr: None,
                })))
            }
            // `gcd` and `lcm` of `smallint`s and `integer`s are `integer`s.
            Expr::ScalarFunction(function)
                if matches!(function.name(), "gcd" | "lcm")
                    && function.args.iter().all(|a| {
                        a.get_type(schema)
                            .is_ok_and(|t| matches!(t, DataType::Int16 | DataType::Int32))
                    }) =>
            {
                Ok(Transformed::yes(expr.cast_to(&DataType::Int32, schema)?))
            }
            // Functions PostgreSQL types `integer` whose DataFusion
            // counterparts count in unsigned integers, typed where they are
            // computed (so `max(cardinality(a))` is an integer too).
            Expr::ScalarFunction(function)
                if super::planner::INT4_RESULTS.contains(&function.name())
                    && expr.get_type(schema).is_ok_and(|t| t.is_unsigned_integer()) =>
            {
                Ok(Transformed::yes(expr.cast_to(&DataType::Int32, schema)?))
            }
            // PostgreSQL counts matches and positions in `integer`s.
            Expr::ScalarFunction(function)
                if matches!(function.name(), "regexp_count" | "regexp_instr")
                    && expr.get_type(schema).is_ok_and(|t| t == DataType::Int64) =>
            {
                Ok(Transformed::yes(expr.cast_to(&DataType::Int32, schema)?))
            }
            // `nullif(a, b)` has `a`'s type (`nullif(smallint_col, 0)` is a
            // smallint, where DataFusion widens it to `b`'s).
            Expr::ScalarFunction(function) if function.name() == "nullif" => {
                let (Some(Ok(first)), Ok(result)) = (
                    function.args.first().map(|a| a.get_type(schema)),
                    expr.get_type(schema),
                ) else {
                    return Ok(Transformed::no(expr));
                };
                if first == result || !first.is_integer() {
                    return Ok(Transformed::no(expr));
                }
                Ok(Transformed::yes(expr.cast_to(&first, schema)?))
            }
            // `factorial` is a numeric.
            Expr::ScalarFunction(function) if function.name() == "factorial" => Ok(
                Transformed::yes(expr.cast_to(&DataType::Decimal128(38, 0), schema)?),
            ),
            // `log(x)` of a double is `log10(x)` (DataFusion divides
            // natural logarithms, one unit in the last place away).
            Expr::ScalarFunction(function)
                if function.name() == "log"
                    && function.args.len() == 1
                    && self.float_argument(&function.args, schema) =>
            {
                Ok(Transformed::yes(Expr::ScalarFunction(
                    ScalarFunction::new_udf(Arc::clone(&self.log10), function.args.clone()),
                )))
            }
            // With a float among the arguments PostgreSQL resolves these to
            // their double precision form: numerics are cast to it.
            Expr::ScalarFunction(function)
                if FLOAT_ONLY.contains(&function.name())
                    && function.args.iter().any(|arg| {
                        arg.get_type(schema)
                            .is_ok_and(|t| matches!(t, DataType::Float32 | DataType::Float64))
                    })
                    && function
                        .args
                        .iter()
                        .any(|arg| arg.get_type(schema).is_ok_and(|t| is_decimal(&t))) =>
            {
                let mut function = function.clone();
                function.args = function
                    .args
                    .into_iter()
                    .map(|arg| match arg.get_type(schema) {
                        Ok(t) if is_decimal(&t) => arg.cast_to(&DataType::Float64, schema),
                        _ => Ok(arg),
                    })
                    .collect::<Result<_>>()?;
                Ok(Transformed::yes(Expr::ScalarFunction(function)))
            }
            // `sqrt`, `exp`, `ln`, `log` and `power` of exact numbers (one a
            // numeric) are computed in numeric, as PostgreSQL does, at its
            // result scale; DataFusion computes them in float8. `log(b, x)`
            // has only a numeric form, so integers take it too.
            Expr::ScalarFunction(function)
                if transcendental::Kind::of(function.name(), function.args.len()).is_some()
                    && function
                        .args
                        .iter()
                        .all(|arg| arg.get_type(schema).is_ok_and(|t| is_exact_number(&t)))
                    && (function
                        .args
                        .iter()
                        .any(|arg| arg.get_type(schema).is_ok_and(|t| is_decimal(&t)))
                        || (function.name() == "log" && function.args.len() == 2)) =>
            {
                let kind = transcendental::Kind::of(function.name(), function.args.len())
                    .ok_or_else(|| DataFusionError::Internal("numeric function".into()))?;
                let mut args = function.args.clone();
                for argument in &function.args {
                    let scale = self
                        .scale_of(argument, schema, &mut |c| Some(self.pending(c)))
                        .ok_or_else(|| {
                            refused(&format!("this {}() of numerics", function.name()))
                        })?;
                    args.push(scale);
                }
                Ok(Transformed::yes(Expr::ScalarFunction(
                    ScalarFunction::new_udf(transcendental::udf(kind, false), args),
                )))
            }
            // PostgreSQL computes these of a numeric in numeric, to a scale
            // of its own; DataFusion in float8.
            Expr::ScalarFunction(function)
                if FLOAT_ONLY.contains(&function.name())
                    && function
                        .args
                        .iter()
                        .any(|arg| arg.get_type(schema).is_ok_and(|t| is_decimal(&t))) =>
            {
                Err(DataFusionError::NotImplemented(format!(
                    "{}() of a numeric is not supported; cast its argument to double precision",
                    function.name()
                )))
            }
            // A numeric whose scale varies, in JSON: the number as printed.
            Expr::ScalarFunction(function)
                if matches!(function.name(), "to_json" | "to_jsonb")
                    && function.args.iter().any(|arg| {
                        matches!(arg.get_type(schema), Ok(DataType::Decimal256(..)))
                    }) =>
            {
                let mut function = function.clone();
                for arg in &mut function.args {
                    if !matches!(arg.get_type(schema), Ok(DataType::Decimal256(..))) {
                        continue;
                    }
                    let Some(scale) = self.scale_of(arg, schema, &mut |c| Some(self.pending(c)))
                    else {
                        return Err(refused("this numeric in JSON"));
                    };
                    let text = Expr::ScalarFunction(ScalarFunction::new_udf(
                        Arc::clone(&self.text),
                        vec![arg.clone(), scale],
                    ));
                    let json = Field::new("json", DataType::Utf8, true)
                        .with_metadata([(PG_TYPE_METADATA.to_owned(), "json".to_owned())].into());
                    *arg = Expr::Cast(datafusion::logical_expr::expr::Cast::new_from_field(
                        Box::new(text),
                        Arc::new(json),
                    ));
                }
                Ok(Transformed::yes(Expr::ScalarFunction(function)))
            }
            // An array cannot hold numerics of varying scales.
            Expr::AggregateFunction(aggregate)
                if aggregate.func.name() == "array_agg"
                    && matches!(
                        aggregate
                            .params
                            .args
                            .first()
                            .map(|arg| arg.get_type(schema)),
                        Some(Ok(DataType::Decimal256(..)))
                    ) =>
            {
                Err(refused(
                    "array_agg() of numerics computed with varying scales",
                ))
            }
            Expr::ScalarFunction(function) => {
                let Some(rounding) = Rounding::of(function.name()) else {
                    return Ok(Transformed::no(expr));
                };
                let Some(Ok(data_type)) = function.args.first().map(|a| a.get_type(schema)) else {
                    return Ok(Transformed::no(expr));
                };
                // A constant count of places stays a literal (`1` arrives
                // as `CAST(1 AS INT)`), so the result's scale is known
                // from the start of planning to its end.
                let mut function = function.clone();
                if let Some(Expr::Cast(cast)) = function.args.get(1)
                    && let Expr::Literal(value, _) = cast.expr.as_ref()
                    && let Ok(value) = value.cast_to(cast.field.data_type())
                {
                    function.args[1] = Expr::Literal(value, None);
                }
                // `round(int, n)` is `round(numeric, n)` in PostgreSQL.
                let (data_type, args) = if data_type.is_integer() && function.args.len() == 2 {
                    let mut args = function.args.clone();
                    args[0] = args[0]
                        .clone()
                        .cast_to(&DataType::Decimal128(38, 0), schema)?;
                    (DataType::Decimal128(38, 0), args)
                } else {
                    (data_type, function.args.clone())
                };
                if is_decimal(&data_type) {
                    let udf = self
                        .rounding
                        .iter()
                        .find(|(r, _)| *r == rounding)
                        .map(|(_, udf)| Arc::clone(udf))
                        .ok_or_else(|| DataFusionError::Internal("rounding".into()))?;
                    return Ok(Transformed::yes(Expr::ScalarFunction(
                        ScalarFunction::new_udf(udf, args),
                    )));
                }
                if rounding == Rounding::Round
                    && function.args.len() == 1
                    && data_type.is_floating()
                {
                    return Ok(Transformed::yes(Expr::ScalarFunction(
                        ScalarFunction::new_udf(
                            Arc::clone(&self.float_round),
                            function.args.clone(),
                        ),
                    )));
                }
                Ok(Transformed::no(expr))
            }
            // Casts to an integer round (numeric: half away from zero,
            // float: half to even) where DataFusion truncates.
            Expr::Cast(cast) if cast.field.data_type().is_integer() => {
                let Ok(from) = cast.expr.get_type(schema) else {
                    return Ok(Transformed::no(expr));
                };
                let rounded = if is_decimal(&from) {
                    let udf = Arc::clone(&self.rounding[0].1);
                    ScalarFunction::new_udf(udf, vec![(*cast.expr).clone()])
                } else if from.is_floating() {
                    ScalarFunction::new_udf(
                        Arc::clone(&self.float_round),
                        vec![(*cast.expr).clone()],
                    )
                } else {
                    return Ok(Transformed::no(expr));
                };
                Ok(Transformed::yes(Expr::Cast(
                    datafusion::logical_expr::expr::Cast::new_from_field(
                        Box::new(Expr::ScalarFunction(rounded)),
                        Arc::clone(&cast.field),
                    ),
                )))
            }
            // To a float: the nearest to the exact value.
            Expr::Cast(cast)
                if matches!(
                    cast.field.data_type(),
                    DataType::Float64 | DataType::Float32
                ) && cast.expr.get_type(schema).is_ok_and(|t| is_decimal(&t)) =>
            {
                let udf = to_float::function(cast.field.data_type().clone());
                Ok(Transformed::yes(Expr::ScalarFunction(
                    ScalarFunction::new_udf(Arc::new(udf), vec![(*cast.expr).clone()]),
                )))
            }
            // A numeric whose scale varies, as text: printed at its scale.
            Expr::Cast(cast)
                if matches!(
                    cast.field.data_type(),
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                ) && matches!(cast.expr.get_type(schema), Ok(DataType::Decimal256(..))) =>
            {
                let Some(scale) = self.scale_of(&cast.expr, schema, &mut |c| Some(self.pending(c)))
                else {
                    return Err(refused("this cast of a numeric to text"));
                };
                let text = Expr::ScalarFunction(ScalarFunction::new_udf(
                    Arc::clone(&self.text),
                    vec![(*cast.expr).clone(), scale],
                ));
                Ok(Transformed::yes(Expr::Cast(
                    datafusion::logical_expr::expr::Cast::new_from_field(
                        Box::new(text),
                        Arc::clone(&cast.field),
                    ),
                )))
            }
            Expr::AggregateFunction(aggregate)
                if Spread::of(aggregate.func.name()).is_some()
                    && aggregate.params.args.len() == 1
                    && !self.float_argument(&aggregate.params.args, schema) =>
            {
                let Ok(data_type) = aggregate.params.args[0].get_type(schema) else {
                    return Ok(Transformed::no(expr));
                };
                if !is_exact_number(&data_type) {
                    return Ok(Transformed::no(expr));
                }
                if matches!(data_type, DataType::Decimal256(..)) {
                    return Err(refused("stddev() or variance() of a computed numeric"));
                }
                let spread = Spread::of(aggregate.func.name()).unwrap_or(Spread::VarianceSample);
                let func = self.spread(spread, false)?;
                Ok(Transformed::yes(Expr::AggregateFunction(
                    AggregateFunction {
                        func,
                        params: aggregate.params.clone(),
                    },
                )))
            }
            // max()/min() of floats with NaN above every number; sum(),
            // avg() and the variances adding one value after another, as
            // PostgreSQL does.
            Expr::AggregateFunction(aggregate)
                if self.float_argument(&aggregate.params.args, schema)
                    && self
                        .float_aggregate(aggregate.func.name(), aggregate.params.distinct)
                        .is_some() =>
            {
                let func = self
                    .float_aggregate(aggregate.func.name(), aggregate.params.distinct)
                    .ok_or_else(|| DataFusionError::Internal("float aggregate".into()))?;
                Ok(Transformed::yes(Expr::AggregateFunction(
                    AggregateFunction {
                        func: Arc::clone(func),
                        params: aggregate.params.clone(),
                    },
                )))
            }
            // corr(), covar_*() and regr_*() of any numbers, in double
            // precision one row after another, as PostgreSQL does.
            Expr::AggregateFunction(aggregate)
                if !aggregate.params.distinct
                    && aggregate.params.args.len() == 2
                    && super::float_regression::Kind::of(aggregate.func.name()).is_some() =>
            {
                let kind = super::float_regression::Kind::of(aggregate.func.name());
                let Some((_, func)) = self.regressions.iter().find(|(k, _)| Some(*k) == kind)
                else {
                    return Ok(Transformed::no(expr));
                };
                let mut params = aggregate.params.clone();
                params.args = params
                    .args
                    .into_iter()
                    .map(|arg| match arg.get_type(schema) {
                        Ok(DataType::Float64) => Ok(arg),
                        _ => arg.cast_to(&DataType::Float64, schema),
                    })
                    .collect::<Result<_>>()?;
                Ok(Transformed::yes(Expr::AggregateFunction(
                    AggregateFunction {
                        func: Arc::clone(func),
                        params,
                    },
                )))
            }
            // The same aggregates as window functions: over a sliding frame
            // the sums are taken afresh for each row, as in PostgreSQL
            // (max()/min() of floats over one are refused while running).
            Expr::WindowFunction(window) if self.window_aggregate(window, schema).is_some() => {
                let Some((func, args)) = self.window_aggregate(window, schema) else {
                    return Ok(Transformed::no(expr));
                };
                let mut window = window.as_ref().clone();
                window.fun = WindowFunctionDefinition::AggregateUDF(func);
                window.params.args = args?;
                Ok(Transformed::yes(Expr::WindowFunction(Box::new(window))))
            }
            Expr::AggregateFunction(aggregate) if aggregate.func.name() == "avg" => {
                let Some(argument) = aggregate.params.args.first() else {
                    return Ok(Transformed::no(expr));
                };
                let Some(args) = self.average_args(argument, schema)? else {
                    return Ok(Transformed::no(expr));
                };
                let mut params = aggregate.params.clone();
                params.args = args;
                Ok(Transformed::yes(Expr::AggregateFunction(
                    AggregateFunction {
                        func: Arc::clone(&self.avg),
                        params,
                    },
                )))
            }
            Expr::WindowFunction(window) if window.fun.name() == "avg" => {
                let Some(argument) = window.params.args.first() else {
                    return Ok(Transformed::no(expr));
                };
                let Some(args) = self.average_args(argument, schema)? else {
                    return Ok(Transformed::no(expr));
                };
                let mut window = window.as_ref().clone();
                window.fun = WindowFunctionDefinition::AggregateUDF(Arc::clone(&self.avg));
                window.params.args = args;
                Ok(Transformed::yes(Expr::WindowFunction(Box::new(window))))
            }
            _ => Ok(Transformed::no(expr)),
        }
    }

    /// Whether an aggregate's one argument is a `real` or `double precision`.
    /// `udf(left, right, display scale of left, display scale of right)`;
    /// `what` is refused when a scale cannot be followed.
    fn with_scales(
        &self,
        udf: &Arc<ScalarUDF>,
        left: &Expr,
        right: &Expr,
        schema: &DFSchema,
        what: &str,
    ) -> Result<Transformed<Expr>> {
        let (Some(left_scale), Some(right_scale)) = (
            self.scale_of(left, schema, &mut |c| Some(self.pending(c))),
            self.scale_of(right, schema, &mut |c| Some(self.pending(c))),
        ) else {
            return Err(refused(what));
        };
        Ok(Transformed::yes(Expr::ScalarFunction(
            ScalarFunction::new_udf(
                Arc::clone(udf),
                vec![left.clone(), right.clone(), left_scale, right_scale],
            ),
        )))
    }

    /// pgaccel's aggregate over floats for DataFusion's `name` (`DISTINCT`
    /// sums and averages stay DataFusion's).
    fn float_aggregate(&self, name: &str, distinct: bool) -> Option<&Arc<AggregateUDF>> {
        match name {
            "max" => Some(&self.float_max),
            "min" => Some(&self.float_min),
            _ if distinct => None,
            _ => {
                let kind = super::float_sums::Kind::of(name)?;
                self.float_sums
                    .iter()
                    .find(|(k, _)| *k == kind)
                    .map(|(_, udaf)| udaf)
            }
        }
    }

    /// pgaccel's aggregate (and its arguments) for a window function that
    /// is one of DataFusion's float or regression aggregates.
    fn window_aggregate(
        &self,
        window: &datafusion::logical_expr::expr::WindowFunction,
        schema: &DFSchema,
    ) -> Option<(Arc<AggregateUDF>, Result<Vec<Expr>>)> {
        let WindowFunctionDefinition::AggregateUDF(udaf) = &window.fun else {
            return None;
        };
        let args = &window.params.args;
        if window.params.distinct {
            return None;
        }
        if self.float_argument(args, schema) {
            let func = self.float_aggregate(udaf.name(), false)?;
            return Some((Arc::clone(func), Ok(args.clone())));
        }
        let kind = super::float_regression::Kind::of(udaf.name())?;
        let (_, func) = self.regressions.iter().find(|(k, _)| *k == kind)?;
        let args = args
            .iter()
            .map(|arg| match arg.get_type(schema) {
                Ok(DataType::Float64) => Ok(arg.clone()),
                _ => arg.clone().cast_to(&DataType::Float64, schema),
            })
            .collect();
        Some((Arc::clone(func), args))
    }

    fn float_argument(&self, args: &[Expr], schema: &DFSchema) -> bool {
        matches!(args, [argument] if argument
            .get_type(schema)
            .is_ok_and(|t| matches!(t, DataType::Float32 | DataType::Float64)))
    }

    /// The aggregate computing `spread` (or its display scale).
    fn spread(&self, spread: Spread, scale_only: bool) -> Result<Arc<AggregateUDF>> {
        let name = spread.name(scale_only);
        self.spreads
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, udaf)| Arc::clone(udaf))
            .ok_or_else(|| DataFusionError::Internal(format!("{name} is not registered")))
    }

    /// The display scale of `column`, computed in another plan node: left
    /// for [`Threads::resolve_pending`].
    fn pending(&self, column: &Column) -> Expr {
        Expr::ScalarFunction(ScalarFunction::new_udf(
            Arc::clone(&self.pending),
            vec![Expr::Column(column.clone())],
        ))
    }

    /// The arguments of [`AVG`] for `avg(argument)`: `None` when the
    /// argument is not an exact number (a float's average stays
    /// DataFusion's).
    fn average_args(&self, argument: &Expr, schema: &DFSchema) -> Result<Option<Vec<Expr>>> {
        let Ok(data_type) = argument.get_type(schema) else {
            return Ok(None);
        };
        if !is_exact_number(&data_type) {
            return Ok(None);
        }
        if !matches!(data_type, DataType::Decimal256(..)) {
            return Ok(Some(vec![argument.clone()]));
        }
        match self.scale_of(argument, schema, &mut |c| Some(self.pending(c))) {
            Some(scale) => Ok(Some(vec![argument.clone(), scale])),
            None => Err(refused("this avg() of numerics")),
        }
    }

    /// The display scale of a scalar subquery's value: a twin of the
    /// subquery that returns its value's scale instead (both are planned,
    /// as joins where the subquery is correlated).
    fn subquery_scale(&self, subquery: &datafusion::logical_expr::Subquery) -> Option<Expr> {
        let plan = subquery.subquery.as_ref().clone();
        let (qualifier, field) = plan.schema().qualified_field(0);
        let column = Column::from((qualifier, field));
        let scope = self.subqueries.get() + 1;
        self.subqueries.set(scope);
        let mut threads = Threads {
            functions: self,
            scope,
            next: 0,
        };
        let (threaded, scale) = threads.thread(plan, &column).ok()??;
        let twin = Projection::try_new(vec![scale.alias("scale")], Arc::new(threaded)).ok()?;
        Some(Expr::ScalarSubquery(datafusion::logical_expr::Subquery {
            subquery: Arc::new(LogicalPlan::Projection(twin)),
            outer_ref_columns: subquery.outer_ref_columns.clone(),
            spans: subquery.spans.clone(),
        }))
    }

    /// The display scale of `expr`'s value, as an expression over the same
    /// input; a column of [`DYNAMIC`] type asks `column` for its companion.
    fn scale_of(
        &self,
        expr: &Expr,
        schema: &DFSchema,
        column: &mut dyn FnMut(&Column) -> Option<Expr>,
    ) -> Option<Expr> {
        let static_scale = |data_type: &DataType| match data_type {
            DataType::Decimal128(_, scale) => Some(lit(i32::from(*scale).max(0))),
            t if t.is_integer() => Some(lit(0i32)),
            _ => None,
        };
        match expr {
            Expr::Alias(alias) => self.scale_of(&alias.expr, schema, column),
            Expr::Literal(value, _) if value.is_null() => Some(lit(0i32)),
            Expr::Literal(value, _) => match value.data_type() {
                DataType::Decimal256(_, scale) => Some(lit(i32::from(scale).max(0))),
                other => static_scale(&other),
            },
            Expr::Column(c) => {
                let data_type = datafusion::common::ExprSchema::field_from_column(schema, c)
                    .ok()?
                    .data_type()
                    .clone();
                match data_type {
                    DataType::Decimal256(..) => column(c),
                    other => static_scale(&other),
                }
            }
            Expr::Cast(cast) => self.cast_scale(&cast.expr, cast.field.data_type(), schema, column),
            Expr::TryCast(cast) => {
                self.cast_scale(&cast.expr, cast.field.data_type(), schema, column)
            }
            Expr::Negative(inner) => self.scale_of(inner, schema, column),
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let left = self.scale_of(left, schema, column)?;
                let right = self.scale_of(right, schema, column)?;
                match op {
                    Operator::Plus | Operator::Minus | Operator::Modulo => {
                        Some(greater(left, right))
                    }
                    Operator::Multiply => Some(left + right),
                    _ => None,
                }
            }
            Expr::ScalarFunction(function) if function.name() == DIVIDE => {
                Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                    Arc::clone(&self.divide_scale),
                    function.args.clone(),
                )))
            }
            Expr::ScalarFunction(function) if function.name() == MULTIPLY => {
                Some(function.args.get(2)?.clone() + function.args.get(3)?.clone())
            }
            Expr::ScalarFunction(function) if function.name() == PENDING => Some(expr.clone()),
            Expr::ScalarSubquery(subquery) => self.subquery_scale(subquery),
            Expr::ScalarFunction(function)
                if transcendental::Kind::named(function.name()).is_some() =>
            {
                let kind = transcendental::Kind::named(function.name())?;
                Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                    transcendental::udf(kind, true),
                    function.args.clone(),
                )))
            }
            Expr::ScalarFunction(function) if function.name() == TO_NUMERIC => {
                let argument = function.args.first()?;
                if is_exact_number(&argument.get_type(schema).ok()?) {
                    self.scale_of(argument, schema, column)
                } else {
                    Some(Expr::ScalarFunction(ScalarFunction::new_udf(
                        Arc::clone(&self.to_numeric_scale),
                        function.args.clone(),
                    )))
                }
            }
            Expr::ScalarFunction(function)
                if self
                    .rounding
                    .iter()
                    .any(|(r, _)| r.name() == function.name()) =>
            {
                match function.args.get(1) {
                    None => Some(lit(0i32)),
                    Some(places) => {
                        let places = places.clone().cast_to(&DataType::Int32, schema).ok()?;
                        Some(greater(places, lit(0i32)))
                    }
                }
            }
            Expr::ScalarFunction(function)
                if matches!(function.name(), "abs" | super::cast_labels::LABEL) =>
            {
                self.scale_of(function.args.first()?, schema, column)
            }
            Expr::Case(case) => {
                let mut when_then = Vec::with_capacity(case.when_then_expr.len());
                for (when, then) in &case.when_then_expr {
                    when_then.push((when.clone(), Box::new(self.scale_of(then, schema, column)?)));
                }
                let otherwise = match &case.else_expr {
                    Some(other) => Some(Box::new(self.scale_of(other, schema, column)?)),
                    None => None,
                };
                Some(Expr::Case(Case {
                    expr: case.expr.clone(),
                    when_then_expr: when_then,
                    else_expr: otherwise,
                }))
            }
            _ => {
                // A value of another type: its scale is its type's.
                let data_type = expr.get_type(schema).ok()?;
                match data_type {
                    DataType::Decimal256(..) => None,
                    other => static_scale(&other),
                }
            }
        }
    }

    fn cast_scale(
        &self,
        inner: &Expr,
        target: &DataType,
        schema: &DFSchema,
        column: &mut dyn FnMut(&Column) -> Option<Expr>,
    ) -> Option<Expr> {
        let from = inner.get_type(schema).ok()?;
        match target {
            // Widening to 256 bits for arithmetic keeps the value and its
            // display scale.
            DataType::Decimal256(..) if is_exact_number(&from) => {
                self.scale_of(inner, schema, column)
            }
            DataType::Decimal128(_, scale) => Some(lit(i32::from(*scale).max(0))),
            t if t.is_integer() => Some(lit(0i32)),
            _ => None,
        }
    }
}

/// Whether the product of `left` and `right` is computed exactly beyond
/// the 38 digits of DataFusion's 128-bit decimals: when an operand may hold
/// 38 digits (a `numeric(38, s)` column, or one read from an unconstrained
/// numeric) and the product more. Products of narrower declared numerics
/// (`price * (1 - discount)`) stay 128-bit, which their values never fill in
/// practice; one that did would fail with 22003, never print another value.
fn wide_product(left: &Expr, right: &Expr, schema: &DFSchema) -> bool {
    const DECIMAL128_DIGITS: u32 = 38;
    match (digits_bound(left, schema), digits_bound(right, schema)) {
        (Some(left), Some(right)) => {
            left.max(right) >= DECIMAL128_DIGITS && left + right > DECIMAL128_DIGITS
        }
        _ => false,
    }
}

/// The most significant digits a value of exact-number `expr` can have, as
/// its columns' declared types bound it (DataFusion's own decimal types
/// stop at 38 digits, which hides a product that needs more).
fn digits_bound(expr: &Expr, schema: &DFSchema) -> Option<u32> {
    Some(match expr {
        Expr::Alias(alias) => digits_bound(&alias.expr, schema)?,
        Expr::Negative(inner) => digits_bound(inner, schema)?,
        Expr::ScalarFunction(function)
            if matches!(function.name(), "abs" | super::cast_labels::LABEL) =>
        {
            digits_bound(function.args.first()?, schema)?
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (left_digits, right_digits) =
                (digits_bound(left, schema)?, digits_bound(right, schema)?);
            match op {
                Operator::Multiply => left_digits + right_digits,
                Operator::Plus | Operator::Minus => {
                    let scale = |e: &Expr| match e.get_type(schema) {
                        Ok(DataType::Decimal128(_, scale)) => scale.max(0) as u32,
                        _ => 0,
                    };
                    let (left_scale, right_scale) = (scale(left), scale(right));
                    (left_digits.saturating_sub(left_scale))
                        .max(right_digits.saturating_sub(right_scale))
                        + left_scale.max(right_scale)
                        + 1
                }
                _ => type_digits(&expr.get_type(schema).ok()?)?,
            }
        }
        Expr::Literal(value, _) if value.data_type().is_integer() => {
            let digits = value.cast_to(&DataType::Decimal128(38, 0)).ok()?;
            match digits {
                ScalarValue::Decimal128(Some(n), ..) => {
                    n.unsigned_abs().checked_ilog10().unwrap_or(0) + 1
                }
                _ => return None,
            }
        }
        _ => type_digits(&expr.get_type(schema).ok()?)?,
    })
}

/// The most significant digits a value of `data_type` has.
fn type_digits(data_type: &DataType) -> Option<u32> {
    Some(match data_type {
        DataType::Decimal128(precision, _) => u32::from(*precision),
        DataType::Int8 | DataType::UInt8 => 3,
        DataType::Int16 | DataType::UInt16 => 5,
        DataType::Int32 | DataType::UInt32 => 10,
        DataType::Int64 => 19,
        DataType::UInt64 => 20,
        _ => return None,
    })
}

/// Whether exact-number `values` (NULLs aside) include a numeric and do not
/// all have one static scale.
fn mixed_scales<'a>(values: impl Iterator<Item = &'a Expr>, schema: &DFSchema) -> bool {
    let mut scales = Vec::new();
    let mut decimal = false;
    for value in values {
        match value.get_type(schema) {
            Ok(DataType::Null) => {}
            Ok(DataType::Decimal128(_, scale)) => {
                decimal = true;
                scales.push(Some(scale.max(0)));
            }
            Ok(DataType::Decimal256(..)) => {
                decimal = true;
                scales.push(None);
            }
            Ok(t) if t.is_integer() => scales.push(Some(0)),
            _ => return false,
        }
    }
    decimal && (scales.contains(&None) || scales.windows(2).any(|pair| pair[0] != pair[1]))
}

/// Whether `args` is one bigint.
fn bigint_argument(args: &[Expr], schema: &DFSchema) -> bool {
    matches!(args, [arg] if matches!(arg.get_type(schema), Ok(DataType::Int64 | DataType::UInt64)))
}

/// `args` cast to a numeric of no decimals.
fn as_numeric(args: &[Expr], schema: &DFSchema) -> Result<Vec<Expr>> {
    args.iter()
        .map(|arg| arg.clone().cast_to(&DataType::Decimal128(38, 0), schema))
        .collect()
}

/// The name under which `exprs` already compute `expr`, if they do.
fn alias_of(exprs: &[Expr], expr: &Expr) -> Option<String> {
    exprs.iter().find_map(|e| match e {
        Expr::Alias(alias) if *alias.expr == *expr => Some(alias.name.clone()),
        _ => None,
    })
}

/// Whether one of `left` and `right` is a [`DYNAMIC`] numeric and the
/// other a decimal whose integer digits and [`DYNAMIC`]'s scale together
/// exceed 76 digits, the most a decimal type holds.
fn beyond_dynamic(left: &Expr, right: &Expr, schema: &DFSchema) -> bool {
    let (Ok(left), Ok(right)) = (left.get_type(schema), right.get_type(schema)) else {
        return false;
    };
    let wide = |t: &DataType| {
        matches!(t, DataType::Decimal128(precision, scale)
            if i32::from(*precision) - i32::from(*scale) + DYNAMIC_SCALE as i32 > 76)
    };
    let dynamic = |t: &DataType| matches!(t, DataType::Decimal256(..));
    (dynamic(&left) && wide(&right)) || (dynamic(&right) && wide(&left))
}

/// `value` as a [`DYNAMIC`] numeric (a NULL stays untyped).
fn as_dynamic(value: Expr, schema: &DFSchema) -> Result<Expr> {
    match value.get_type(schema)? {
        DataType::Null => Ok(value),
        t if t == DYNAMIC => Ok(value),
        _ => value.cast_to(&DYNAMIC, schema),
    }
}

/// Whether `expr` is the number 0, written as a literal (under casts).
fn zero_literal(expr: &Expr) -> bool {
    match expr {
        Expr::Literal(value, _) => matches!(
            value.cast_to(&DataType::Float64),
            Ok(ScalarValue::Float64(Some(zero))) if zero == 0.0
        ),
        Expr::Cast(cast) => zero_literal(&cast.expr),
        Expr::TryCast(cast) => zero_literal(&cast.expr),
        Expr::Negative(inner) => zero_literal(inner),
        Expr::Alias(alias) => zero_literal(&alias.expr),
        _ => false,
    }
}

/// `CASE WHEN a >= b THEN a ELSE b END` over two scales.
fn greater(left: Expr, right: Expr) -> Expr {
    Expr::Case(Case {
        expr: None,
        when_then_expr: vec![(Box::new(left.clone().gt_eq(right.clone())), Box::new(left))],
        else_expr: Some(Box::new(right)),
    })
}

/// Threads the display scale of [`DYNAMIC`] result columns up from where
/// they are computed.
struct Threads<'a> {
    functions: &'a Functions,
    /// 0 for the query; a scalar subquery's scale twin has its own, so that
    /// its companion columns keep their names apart from the query's once
    /// the subquery becomes a join.
    scope: usize,
    next: usize,
}

/// One half of a `pgaccel_avg_with_scale` pair.
fn average_field(pair: Expr, name: &str) -> Expr {
    datafusion::functions::core::expr_fn::get_field(pair, name)
}

/// The pair whose value half `expr` is, as [`Threads::thread`] writes it
/// above an aggregate.
fn average_pair(expr: &Expr) -> Option<Expr> {
    let mut inner = expr;
    while let Expr::Alias(alias) = inner {
        inner = &alias.expr;
    }
    let Expr::ScalarFunction(function) = inner else {
        return None;
    };
    match function.args.as_slice() {
        [
            pair @ Expr::Column(_),
            Expr::Literal(ScalarValue::Utf8(Some(name)), _),
        ] if function.func.name() == "get_field" && name == AVERAGE_VALUE => Some(pair.clone()),
        _ => None,
    }
}

impl Threads<'_> {
    /// Replaces every [`PENDING`] scale in a projection, aggregate, filter,
    /// sort or window by the scale threaded up from its input; refuses the
    /// plan if one cannot be.
    fn resolve_pending(&mut self, plan: LogicalPlan) -> Result<LogicalPlan> {
        let plan = plan
            .transform_up_with_subqueries(|node| {
                let passes_input_through = matches!(
                    node,
                    LogicalPlan::Filter(_) | LogicalPlan::Sort(_) | LogicalPlan::Window(_)
                );
                if !passes_input_through
                    && !matches!(node, LogicalPlan::Projection(_) | LogicalPlan::Aggregate(_))
                {
                    return Ok(Transformed::no(node));
                }
                let mut pending: Vec<Expr> = Vec::new();
                for expr in node.expressions() {
                    expr.apply(|e| {
                        if let Expr::ScalarFunction(f) = e
                            && f.name() == PENDING
                            && !pending.contains(e)
                        {
                            pending.push(e.clone());
                        }
                        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
                    })?;
                }
                if pending.is_empty() {
                    return Ok(Transformed::no(node));
                }
                let mut input = node.inputs()[0].clone();
                let mut resolved: Vec<(Expr, Expr)> = Vec::new();
                for call in pending {
                    let Expr::ScalarFunction(f) = &call else {
                        continue;
                    };
                    let Some(Expr::Column(column)) = f.args.first() else {
                        continue;
                    };
                    if let Some((threaded, scale)) = self.thread(input.clone(), column)? {
                        input = threaded;
                        resolved.push((call, scale));
                    }
                }
                let names = NamePreserver::new(&node);
                let exprs = node
                    .expressions()
                    .into_iter()
                    .map(|expr| {
                        let saved = names.save(&expr);
                        let replaced = expr.transform_up(|e| {
                            Ok(match resolved.iter().find(|(call, _)| *call == e) {
                                Some((_, scale)) => Transformed::yes(scale.clone()),
                                None => Transformed::no(e),
                            })
                        })?;
                        Ok(saved.restore(replaced.data))
                    })
                    .collect::<Result<Vec<_>>>()?;
                let output = Arc::clone(node.schema());
                let rewritten = node.with_new_exprs(exprs, vec![input])?;
                if !passes_input_through
                    || rewritten.schema().fields().len() == output.fields().len()
                {
                    return Ok(Transformed::yes(rewritten));
                }
                // The companions threaded through stay below: the node
                // keeps its own columns.
                let columns = output.columns().into_iter().map(Expr::Column).collect();
                Ok(Transformed::yes(LogicalPlan::Projection(
                    Projection::try_new(columns, Arc::new(rewritten))?,
                )))
            })?
            .data;
        let mut left = false;
        plan.apply_with_subqueries(|node| {
            node.apply_expressions(|expr| {
                expr.apply(|e| {
                    left |= matches!(e, Expr::ScalarFunction(f) if f.name() == PENDING);
                    Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
                })
            })
        })?;
        if left {
            return Err(refused("this use of a numeric computed in a subquery"));
        }
        Ok(plan)
    }

    fn fresh(&mut self) -> String {
        self.next += 1;
        match self.scope {
            0 => format!("{COMPANION}{}", self.next),
            scope => format!("{COMPANION}{scope}_{}", self.next),
        }
    }

    /// Prints every [`DYNAMIC`] column of the result at its display scale.
    fn display(&mut self, plan: LogicalPlan) -> Result<LogicalPlan> {
        let dynamic: Vec<usize> = plan
            .schema()
            .fields()
            .iter()
            .enumerate()
            .filter(|(_, field)| matches!(field.data_type(), DataType::Decimal256(..)))
            .map(|(index, _)| index)
            .collect();
        if dynamic.is_empty() {
            return Ok(plan);
        }
        let output = plan.schema().as_ref().clone();
        let mut scales = Vec::new();
        let mut plan = plan;
        for index in &dynamic {
            let (qualifier, field) = output.qualified_field(*index);
            let column = Column::from((qualifier, field));
            let Some((threaded, scale)) = self.thread(plan, &column)? else {
                return Err(refused(&format!(
                    "printing the numeric column \"{}\"",
                    super::display_name(field.name())
                )));
            };
            plan = threaded;
            scales.push(scale);
        }
        let plan = Arc::new(plan);
        let exprs = output
            .iter()
            .enumerate()
            .map(|(index, (qualifier, field))| {
                let column = Expr::Column(Column::from((qualifier, field)));
                match dynamic.iter().position(|i| *i == index) {
                    Some(at) => Expr::ScalarFunction(ScalarFunction::new_udf(
                        Arc::clone(&self.functions.display),
                        vec![column, scales[at].clone()],
                    ))
                    .alias_qualified(qualifier.cloned(), field.name()),
                    None => column,
                }
            })
            .collect();
        Ok(LogicalPlan::Projection(Projection::try_new(exprs, plan)?))
    }

    /// `plan` with `column`'s display scale available as an expression over
    /// its output; `None` when it cannot be followed.
    fn thread(
        &mut self,
        plan: LogicalPlan,
        column: &Column,
    ) -> Result<Option<(LogicalPlan, Expr)>> {
        let Ok(index) = plan.schema().index_of_column(column) else {
            return Ok(None);
        };
        match plan {
            LogicalPlan::Projection(projection) => {
                let expr = projection.expr[index].clone();
                let input = Arc::unwrap_or_clone(projection.input);
                let scale = match average_pair(&expr) {
                    // An average already taken apart above its aggregate:
                    // the scale is the pair's other half.
                    Some(pair) => Some((input, average_field(pair, AVERAGE_SCALE))),
                    None => self.scale_in(input, &expr)?,
                };
                let Some((input, scale)) = scale else {
                    return Ok(None);
                };
                let name = self.fresh();
                let mut exprs = projection.expr;
                exprs.push(scale.alias(&name));
                let plan = LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(input))?);
                Ok(Some((plan, Expr::Column(Column::from_name(name)))))
            }
            LogicalPlan::Aggregate(aggregate) => {
                // The aggregates follow the grouping columns, however many
                // the schema has (a key grouped twice is one column).
                let groups = aggregate.schema.fields().len() - aggregate.aggr_expr.len();
                if index < groups {
                    return self.group_key_scale(aggregate, index);
                }
                let Some(expr) = index
                    .checked_sub(groups)
                    .and_then(|at| aggregate.aggr_expr.get(at))
                    .cloned()
                else {
                    return Ok(None);
                };
                let mut inner = &expr;
                while let Expr::Alias(alias) = inner {
                    inner = &alias.expr;
                }
                let Expr::AggregateFunction(function) = inner else {
                    return Ok(None);
                };
                if function.func.name() == AVG {
                    // One aggregate computes the average and its scale; a
                    // projection above takes them apart.
                    let (pair, companion) = (self.fresh(), self.fresh());
                    let at = index - groups;
                    let output = Arc::clone(&aggregate.schema);
                    let mut aggr_expr = aggregate.aggr_expr;
                    aggr_expr[at] = Expr::AggregateFunction(AggregateFunction {
                        func: Arc::clone(&self.functions.avg_with_scale),
                        params: function.params.clone(),
                    })
                    .alias(&pair);
                    let inner = LogicalPlan::Aggregate(Aggregate::try_new(
                        aggregate.input,
                        aggregate.group_expr,
                        aggr_expr,
                    )?);
                    let pair = Expr::Column(Column::from_name(pair));
                    let field = |name| average_field(pair.clone(), name);
                    let exprs = output
                        .iter()
                        .enumerate()
                        .map(|(i, (qualifier, column))| {
                            if i == index {
                                field(AVERAGE_VALUE)
                                    .alias_qualified(qualifier.cloned(), column.name())
                            } else {
                                Expr::Column(Column::from((qualifier, column)))
                            }
                        })
                        .chain(std::iter::once(field(AVERAGE_SCALE).alias(&companion)))
                        .collect();
                    let plan =
                        LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(inner))?);
                    return Ok(Some((plan, Expr::Column(Column::from_name(companion)))));
                }
                let input = Arc::unwrap_or_clone(aggregate.input);
                let (input, companion) = match function.func.name() {
                    // A sum's scale is its terms' largest; a scalar
                    // subquery's, its one value's.
                    name @ ("sum" | super::compat::SINGLE_VALUE) => {
                        let Some(argument) = function.params.args.first() else {
                            return Ok(None);
                        };
                        let Some((input, scale)) = self.scale_in(input, argument)? else {
                            return Ok(None);
                        };
                        let mut params = function.params.clone();
                        params.args = vec![scale];
                        params.distinct = false;
                        (
                            input,
                            Expr::AggregateFunction(AggregateFunction {
                                func: if name == "sum" {
                                    Arc::clone(&self.functions.max)
                                } else {
                                    Arc::clone(&function.func)
                                },
                                params,
                            }),
                        )
                    }
                    name if self.functions.spreads.iter().any(|(n, _)| *n == name) => {
                        let spread = SPREADS
                            .into_iter()
                            .find(|spread| spread.name(false) == name)
                            .ok_or_else(|| DataFusionError::Internal(name.to_owned()))?;
                        (
                            input,
                            Expr::AggregateFunction(AggregateFunction {
                                func: self.functions.spread(spread, true)?,
                                params: function.params.clone(),
                            }),
                        )
                    }
                    // The scale of the value chosen: the first in the
                    // aggregate's own order.
                    name @ ("max" | "min") => {
                        let Some(argument) = function.params.args.first() else {
                            return Ok(None);
                        };
                        let Some((input, scale)) = self.scale_in(input, argument)? else {
                            return Ok(None);
                        };
                        let mut params = function.params.clone();
                        params.args = vec![scale];
                        params.distinct = false;
                        params.order_by = vec![datafusion::logical_expr::SortExpr::new(
                            argument.clone(),
                            name == "min",
                            false,
                        )];
                        (
                            input,
                            Expr::AggregateFunction(AggregateFunction {
                                func: Arc::clone(&self.functions.first_value),
                                params,
                            }),
                        )
                    }
                    _ => return Ok(None),
                };
                // A value read twice has one companion (see the window
                // case below).
                if let Some(name) = alias_of(&aggregate.aggr_expr, &companion) {
                    let plan = LogicalPlan::Aggregate(Aggregate::try_new(
                        Arc::new(input),
                        aggregate.group_expr,
                        aggregate.aggr_expr,
                    )?);
                    return Ok(Some((plan, Expr::Column(Column::from_name(name)))));
                }
                let name = self.fresh();
                let mut aggr_expr = aggregate.aggr_expr;
                aggr_expr.push(companion.alias(&name));
                let plan = LogicalPlan::Aggregate(Aggregate::try_new(
                    Arc::new(input),
                    aggregate.group_expr,
                    aggr_expr,
                )?);
                Ok(Some((plan, Expr::Column(Column::from_name(name)))))
            }
            LogicalPlan::Window(window) => {
                let inputs = window.input.schema().fields().len();
                if index < inputs {
                    let input_column = Column::from(window.input.schema().qualified_field(index));
                    let input = Arc::unwrap_or_clone(window.input);
                    let Some((input, scale)) = self.thread(input, &input_column)? else {
                        return Ok(None);
                    };
                    let plan =
                        LogicalPlan::Window(Window::try_new(window.window_expr, Arc::new(input))?);
                    return Ok(Some((plan, scale)));
                }
                let expr = window.window_expr[index - inputs].clone();
                let mut inner = &expr;
                while let Expr::Alias(alias) = inner {
                    inner = &alias.expr;
                }
                let Expr::WindowFunction(function) = inner else {
                    return Ok(None);
                };
                let mut window_input = window.input;
                let companion = match function.fun.name() {
                    AVG => Expr::WindowFunction(Box::new(WindowFunction {
                        fun: WindowFunctionDefinition::AggregateUDF(Arc::clone(
                            &self.functions.avg_scale,
                        )),
                        params: function.params.clone(),
                    })),
                    // A value picked from another row: that row's scale
                    // (or the default's), picked the same way.
                    "lag" | "lead" | "first_value" | "last_value" | "nth_value" => {
                        let mut input = Arc::unwrap_or_clone(window_input);
                        let mut params = function.params.clone();
                        for position in [0, 2] {
                            let Some(arg) = params.args.get(position).cloned() else {
                                continue;
                            };
                            let Some((threaded, scale)) = self.scale_in(input, &arg)? else {
                                return Ok(None);
                            };
                            input = threaded;
                            params.args[position] = scale;
                        }
                        window_input = Arc::new(input);
                        Expr::WindowFunction(Box::new(WindowFunction {
                            fun: function.fun.clone(),
                            params,
                        }))
                    }
                    _ => return Ok(None),
                };
                let window = Window::try_new(window.window_expr, window_input)?;
                // A window value read twice (`avg(x) OVER w, x - avg(x) OVER
                // w`) has one companion: the physical planner cannot
                // compute a window function twice under two names.
                if let Some(name) = alias_of(&window.window_expr, &companion) {
                    let plan = LogicalPlan::Window(window);
                    return Ok(Some((plan, Expr::Column(Column::from_name(name)))));
                }
                let name = self.fresh();
                let mut window_expr = window.window_expr;
                window_expr.push(companion.alias(&name));
                let plan = LogicalPlan::Window(Window::try_new(window_expr, window.input)?);
                Ok(Some((plan, Expr::Column(Column::from_name(name)))))
            }
            LogicalPlan::SubqueryAlias(alias) => {
                let input_column = Column::from(alias.input.schema().qualified_field(index));
                let input = Arc::unwrap_or_clone(alias.input);
                let Some((input, scale)) = self.thread(input, &input_column)? else {
                    return Ok(None);
                };
                let plan = LogicalPlan::SubqueryAlias(SubqueryAlias::try_new(
                    Arc::new(input),
                    alias.alias.clone(),
                )?);
                // The companion column takes the alias as its qualifier.
                let scale = match scale {
                    Expr::Column(c) => Expr::Column(Column::new(Some(alias.alias), c.name)),
                    other => other,
                };
                Ok(Some((plan, scale)))
            }
            // Each branch of a union keeps its values' own scales: each
            // gives its companion column (or its type's fixed scale), under
            // one name.
            LogicalPlan::Union(union) => {
                let name = self.fresh();
                let mut inputs = Vec::with_capacity(union.inputs.len());
                for input in union.inputs {
                    let input = Arc::unwrap_or_clone(input);
                    let fields = Arc::clone(input.schema());
                    let (qualifier, field) = fields.qualified_field(index);
                    let branch_column = Column::from((qualifier, field));
                    let (threaded, scale) = match self.thread(input.clone(), &branch_column)? {
                        Some(threaded) => threaded,
                        None => match field.data_type() {
                            DataType::Decimal128(_, scale) => (input, lit(i32::from(*scale))),
                            DataType::Null => (input, lit(0i32)),
                            t if t.is_integer() => (input, lit(0i32)),
                            _ => return Ok(None),
                        },
                    };
                    let exprs = fields
                        .iter()
                        .map(|(qualifier, field)| Expr::Column(Column::from((qualifier, field))))
                        .chain(std::iter::once(
                            datafusion::logical_expr::cast(scale, DataType::Int32).alias(&name),
                        ))
                        .collect();
                    inputs.push(Arc::new(LogicalPlan::Projection(Projection::try_new(
                        exprs,
                        Arc::new(threaded),
                    )?)));
                }
                let plan = LogicalPlan::Union(
                    datafusion::logical_expr::Union::try_new_with_loose_types(inputs)?,
                );
                Ok(Some((plan, Expr::Column(Column::from_name(name)))))
            }
            // `UNION` without `ALL` keeps one of equal values whatever
            // their scales, which a companion column would keep apart.
            LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(input))
                if matches!(input.as_ref(), LogicalPlan::Union(_)) =>
            {
                Ok(None)
            }
            LogicalPlan::Filter(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::Limit(_)
            | LogicalPlan::Distinct(datafusion::logical_expr::Distinct::All(_))
            | LogicalPlan::Join(_) => {
                let inputs: Vec<LogicalPlan> =
                    plan.inputs().into_iter().cloned().collect::<Vec<_>>();
                let Some(at) = inputs
                    .iter()
                    .position(|input| input.schema().index_of_column(column).is_ok())
                else {
                    return Ok(None);
                };
                let mut inputs = inputs;
                let input = inputs.remove(at);
                let Some((input, scale)) = self.thread(input, column)? else {
                    return Ok(None);
                };
                inputs.insert(at, input);
                let plan = plan.with_new_exprs(plan.expressions(), inputs)?;
                Ok(Some((plan, scale)))
            }
            _ => Ok(None),
        }
    }

    /// `input` with the display scale of `expr` (an expression over its
    /// output) available.
    /// The scale of grouping key `index` of `aggregate` (`GROUP BY
    /// floor(x / 125.0) * 125.0`): the key's own where it is fixed, else the
    /// largest among the group's rows (equal numerics are one group in
    /// PostgreSQL whatever their scales, and it prints the key of whichever
    /// row it met first).
    fn group_key_scale(
        &mut self,
        aggregate: Aggregate,
        index: usize,
    ) -> Result<Option<(LogicalPlan, Expr)>> {
        // The keys of ROLLUP, CUBE and GROUPING SETS come first, each once.
        let key = match aggregate.group_expr.as_slice() {
            [Expr::GroupingSet(set)] => set.distinct_expr().get(index).map(|key| (*key).clone()),
            keys if keys.len() == aggregate.schema.fields().len() - aggregate.aggr_expr.len() => {
                keys.get(index).cloned()
            }
            _ => None,
        };
        let Some(key) = key else {
            return Ok(None);
        };
        let input = Arc::unwrap_or_clone(aggregate.input);
        let Some((input, scale)) = self.scale_in(input, &key)? else {
            return Ok(None);
        };
        let mut aggr_expr = aggregate.aggr_expr;
        let scale = if let Expr::Literal(..) = scale {
            scale
        } else {
            let companion = Expr::AggregateFunction(AggregateFunction::new_udf(
                Arc::clone(&self.functions.max),
                vec![scale],
                false,
                None,
                vec![],
                None,
            ));
            let name = match alias_of(&aggr_expr, &companion) {
                Some(name) => name,
                None => {
                    let name = self.fresh();
                    aggr_expr.push(companion.alias(&name));
                    name
                }
            };
            Expr::Column(Column::from_name(name))
        };
        let plan = LogicalPlan::Aggregate(Aggregate::try_new(
            Arc::new(input),
            aggregate.group_expr,
            aggr_expr,
        )?);
        Ok(Some((plan, scale)))
    }

    fn scale_in(&mut self, input: LogicalPlan, expr: &Expr) -> Result<Option<(LogicalPlan, Expr)>> {
        let mut input = Some(input);
        let mut failed: Option<DataFusionError> = None;
        let schema = input
            .as_ref()
            .map(|plan| Arc::clone(plan.schema()))
            .unwrap_or_else(|| Arc::new(DFSchema::empty()));
        let functions = self.functions;
        let scale = functions.scale_of(expr, &schema, &mut |c: &Column| {
            let plan = input.take()?;
            let fallback = plan.clone();
            match self.thread(plan, c) {
                Ok(Some((threaded, scale))) => {
                    input = Some(threaded);
                    Some(scale)
                }
                Ok(None) => {
                    input = Some(fallback);
                    None
                }
                Err(error) => {
                    failed = Some(error);
                    input = Some(fallback);
                    None
                }
            }
        });
        if let Some(error) = failed {
            return Err(error);
        }
        Ok(scale.zip(input).map(|(scale, input)| (input, scale)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn number(text: &str) -> Number {
        let (integer, fraction) = text.split_once('.').unwrap_or((text, ""));
        Number {
            digits: i256::from_string(&format!("{integer}{fraction}")).unwrap(),
            scale: fraction.len() as u32,
        }
    }

    /// `a / b` as PostgreSQL prints it.
    fn quotient(a: &str, b: &str) -> String {
        let (a, b) = (number(a), number(b));
        let scale = div_scale(a, a.scale as i32, b, b.scale as i32);
        text(
            divide(a, b, scale as u32).unwrap(),
            scale as u32,
            scale as u32,
        )
    }

    #[test]
    fn division_scale_as_postgres_selects_it() {
        // Each expected value is PostgreSQL 15's `SELECT a::numeric / b`.
        assert_eq!(quotient("1", "3"), "0.33333333333333333333");
        assert_eq!(quotient("10", "4"), "2.5000000000000000");
        assert_eq!(quotient("3", "2"), "1.5000000000000000");
        assert_eq!(quotient("2", "2"), "1.00000000000000000000");
        assert_eq!(quotient("1.9", "1"), "1.90000000000000000000");
        assert_eq!(quotient("19", "10"), "1.9000000000000000");
        assert_eq!(quotient("100000", "3"), "33333.333333333333");
        assert_eq!(quotient("-2", "3"), "-0.66666666666666666667");
        assert_eq!(quotient("1", "8.00"), "0.12500000000000000000");
        assert_eq!(quotient("0", "5"), "0.00000000000000000000");
        assert_eq!(quotient("5.5", "0.25"), "22.0000000000000000");
    }

    fn shown(number: Option<Number>) -> String {
        let number = number.unwrap();
        text(number.digits, number.scale, number.scale)
    }

    #[test]
    fn numeric_input_keeps_the_scale_written() {
        // Each expected value is PostgreSQL 15's `SELECT 'x'::numeric`.
        assert_eq!(shown(parse_numeric(" 1.50 ")), "1.50");
        assert_eq!(shown(parse_numeric("1e3")), "1000");
        assert_eq!(shown(parse_numeric("-.5")), "-0.5");
        assert_eq!(shown(parse_numeric("5.")), "5");
        assert_eq!(shown(parse_numeric("+2.5E-2")), "0.025");
        assert!(parse_numeric("abc").is_none());
        assert!(parse_numeric(".").is_none());
        assert!(parse_numeric("1.2.3").is_none());
    }

    #[test]
    fn floats_convert_with_fifteen_digits() {
        // Each expected value is PostgreSQL 15's `SELECT x::float8::numeric`.
        assert_eq!(shown(float_numeric(0.1, FLOAT8_DIGITS)), "0.1");
        assert_eq!(
            shown(float_numeric(1e20, FLOAT8_DIGITS)),
            "100000000000000000000"
        );
        assert_eq!(shown(float_numeric(1.5e-5, FLOAT8_DIGITS)), "0.000015");
        assert_eq!(
            shown(float_numeric(123_456_789.123_456_79, FLOAT8_DIGITS)),
            "123456789.123457"
        );
        assert_eq!(shown(float_numeric(-2.5, FLOAT8_DIGITS)), "-2.5");
        assert!(float_numeric(f64::NAN, FLOAT8_DIGITS).is_none());
        // A float4 keeps 6 digits: `0.1::float4::numeric` is 0.1.
        assert_eq!(
            shown(float_numeric(f64::from(0.1f32), FLOAT4_DIGITS)),
            "0.1"
        );
        assert_eq!(
            shown(float_numeric(f64::from(123_456.79f32), FLOAT4_DIGITS)),
            "123457"
        );
    }

    #[test]
    fn rounding_modes_as_postgres() {
        // round/trunc/ceil/floor of -1.25 and 1.25 to one decimal.
        let cases = [
            (Rounding::Round, 125, 13),
            (Rounding::Round, -125, -13),
            (Rounding::Trunc, -125, -12),
            (Rounding::Ceil, -125, -12),
            (Rounding::Ceil, 125, 13),
            (Rounding::Floor, -125, -13),
            (Rounding::Floor, 125, 12),
        ];
        for (rounding, digits, expected) in cases {
            assert_eq!(
                rounding.apply(i256::from(digits), 1),
                Some(i256::from(expected)),
                "{rounding:?} {digits}"
            );
        }
    }

    #[test]
    fn square_roots_round_half_away_from_zero() {
        for (n, root) in [
            (0, 0),
            (1, 1),
            (2, 1),
            (3, 2),
            (16, 4),
            (20, 4),
            (21, 5),
            (99, 10),
        ] {
            assert_eq!(rounded_sqrt(i256::from(n)), Some(i256::from(root)), "{n}");
        }
        let big = i256::from_string("100000000000000000000000000000000000000000").unwrap();
        assert_eq!(
            rounded_sqrt(big),
            i256::from_string("316227766016837933200")
        );
        assert_eq!(rounded_sqrt(i256::from(-4)), None);
    }

    #[test]
    fn text_pads_and_rounds_to_the_display_scale() {
        assert_eq!(text(i256::from(15), 1, 3), "1.500");
        assert_eq!(text(i256::from(-5), 2, 2), "-0.05");
        assert_eq!(text(i256::from(125), 2, 1), "1.3");
        assert_eq!(text(i256::from(7), 0, 0), "7");
    }
}
