//! String literals compared with a boolean or an array, read as a value of
//! that type, as PostgreSQL reads an untyped literal (`indisprimary = 'f'`,
//! `polroles = '{0}'`). DataFusion types the literal as text and cannot
//! compare, so before type coercion such a literal is replaced by the
//! value it spells.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::utils::merge_schema;
use datafusion::logical_expr::{BinaryExpr, Expr, ExprSchemable, LogicalPlan, lit};
use datafusion::optimizer::AnalyzerRule;

use super::settings::catalog::parse_bool;
use super::system::rows::array_items;

#[derive(Debug, Default)]
pub struct UnknownLiterals;

impl AnalyzerRule for UnknownLiterals {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(|node| {
            let schema = merge_schema(&node.inputs());
            node.map_expressions(|expr| expr.transform_up(|e| rewrite(e, &schema)))
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "pgaccel_unknown_literals"
    }
}

fn rewrite(expr: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &expr else {
        return Ok(Transformed::no(expr));
    };
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
        Some(lit(spelled(text, &data_type)?))
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
        _ => None,
    }
}
