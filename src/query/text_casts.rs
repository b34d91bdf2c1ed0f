//! Casts to text print as PostgreSQL prints: `ts::text`, `'at ' || ts`,
//! `f::text` follow the session's `DateStyle`, `TimeZone`, `IntervalStyle`
//! and `extra_float_digits`, exactly as the same value in a result column
//! ([`super::text`]). DataFusion's own casts print ISO 8601 with a `T`, UTC
//! offsets as `Z`, and floats in Rust's notation.
//!
//! An analyzer rule, after type coercion (which adds the implicit casts),
//! replaces each such cast by [`TEXT_FUNCTION`]; a renamed expression keeps
//! its name, so the plan above it still finds it.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    Cast, ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

use super::engine::SessionInfo;
use super::settings::Output;
use super::text::value_text;

/// The function a cast to text becomes.
pub const TEXT_FUNCTION: &str = "pgaccel_text";

/// Whether DataFusion's cast of `data_type` to text differs from
/// PostgreSQL's output.
fn printed_differently(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Float32
            | DataType::Float64
            | DataType::Timestamp(..)
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Interval(_)
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::List(_)
    )
}

#[derive(Debug, Default)]
pub struct TextCasts;

impl AnalyzerRule for TextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        let function = Arc::new(ScalarUDF::new_from_impl(TextFunction::new()));
        plan.transform_up_with_subqueries(|node| {
            let schema = datafusion::logical_expr::utils::merge_schema(&node.inputs());
            let names = NamePreserver::new(&node);
            node.map_expressions(|expr| {
                let name = names.save(&expr);
                let rewritten = expr.transform_up(|e| {
                    let Expr::Cast(Cast { expr: inner, field }) = &e else {
                        return Ok(Transformed::no(e));
                    };
                    let data_type = field.data_type();
                    if !matches!(
                        data_type,
                        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8
                    ) {
                        return Ok(Transformed::no(e));
                    }
                    let Ok(from) = inner.get_type(&schema) else {
                        return Ok(Transformed::no(e));
                    };
                    if !printed_differently(&from) {
                        return Ok(Transformed::no(e));
                    }
                    let printed = Expr::ScalarFunction(ScalarFunction::new_udf(
                        Arc::clone(&function),
                        vec![(**inner).clone()],
                    ));
                    Ok(Transformed::yes(match data_type {
                        DataType::Utf8 => printed,
                        other => Expr::Cast(Cast::new(Box::new(printed), other.clone())),
                    }))
                })?;
                Ok(rewritten.update_data(|e| name.restore(e)))
            })
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "pgaccel_text_casts"
    }
}

/// A value's text under the session's output settings.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextFunction {
    signature: Signature,
}

impl TextFunction {
    fn new() -> Self {
        TextFunction {
            signature: Signature::any(1, Volatility::Stable),
        }
    }
}

impl ScalarUDFImpl for TextFunction {
    fn name(&self) -> &str {
        TEXT_FUNCTION
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let output = SessionInfo::of(&args.config_options)
            .map(|info| info.settings().output())
            .unwrap_or_default();
        let rows = args.number_rows;
        let [value] = args.args.as_slice() else {
            return Err(DataFusionError::Internal(format!(
                "{TEXT_FUNCTION} takes one argument"
            )));
        };
        let scalar = matches!(value, ColumnarValue::Scalar(_));
        let array = value.to_array(if scalar { 1 } else { rows })?;
        let printed = print(&array, &output)?;
        Ok(if scalar {
            ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(
                &printed, 0,
            )?)
        } else {
            ColumnarValue::Array(printed)
        })
    }
}

fn print(array: &ArrayRef, output: &Output) -> Result<ArrayRef> {
    let mut builder = StringBuilder::with_capacity(array.len(), array.len() * 16);
    for row in 0..array.len() {
        let text = value_text(array, row, output, false)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        builder.append_option(text);
    }
    Ok(Arc::new(builder.finish()))
}
