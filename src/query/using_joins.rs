//! `SELECT *` over `JOIN ... USING (k)` and `NATURAL JOIN` as PostgreSQL
//! lists it: the join columns first, once each, then the left side's other
//! columns, then the right side's. A join column of a `LEFT JOIN` is the
//! left side's value, of a `RIGHT JOIN` the right side's, and of a `FULL
//! JOIN` the first of them that is not NULL.
//!
//! DataFusion lists the columns in their tables' order and keeps the right
//! side's join column, which is NULL on the unmatched rows of a `LEFT
//! JOIN`. The compatibility rewrite marks a `SELECT *` whose FROM holds such
//! a join ([`MARKER`], a last select item); this pass lists the marked
//! projection's columns again and drops the marker.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::common::{Column, Result, ScalarValue};
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, JoinConstraint, JoinType, LogicalPlan, Projection};

use super::{PgError, sqlstate};

/// How the select items that mark a `SELECT *` for this pass are named
/// (followed by a number); the value is [`POSITIONAL`] when the query orders
/// by a column position, which this pass would move (refused).
pub const MARKER: &str = "__pgaccel_using_wildcard_";
pub const POSITIONAL: &str = "positional";

fn is_marker(expr: Option<&Expr>) -> Option<&Expr> {
    match expr {
        Some(Expr::Alias(alias)) if alias.name.starts_with(MARKER) => Some(&alias.expr),
        _ => None,
    }
}

/// Lists the columns of every marked `SELECT *` as PostgreSQL does.
pub fn postgres_using_columns(plan: LogicalPlan) -> Result<LogicalPlan> {
    let mut marked = false;
    plan.apply_with_subqueries(|node| {
        marked = matches!(node, LogicalPlan::Projection(p) if is_marker(p.expr.last()).is_some());
        Ok(if marked {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    if !marked {
        return Ok(plan);
    }
    Ok(plan
        .transform_up_with_subqueries(|node| {
            let LogicalPlan::Projection(projection) = &node else {
                // The columns below may have moved.
                return super::numeric::recompute_schema(node).map(Transformed::yes);
            };
            let Some(marker) = is_marker(projection.expr.last()) else {
                return Ok(Transformed::no(node));
            };
            if matches!(marker, Expr::Literal(ScalarValue::Utf8(Some(value)), _) if value == POSITIONAL) {
                return Err(DataFusionError::External(Box::new(PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    "ORDER BY a column position over SELECT * of a join USING columns is not supported: order by the column's name",
                ))));
            }
            let input = Arc::clone(&projection.input);
            let listed: Vec<&Column> = projection
                .expr
                .iter()
                .filter_map(|expr| match expr {
                    Expr::Column(column) => Some(column),
                    _ => None,
                })
                .collect();
            let exprs = columns(&input, &listed)?;
            Ok(Transformed::yes(LogicalPlan::Projection(Projection::try_new(
                exprs, input,
            )?)))
        })?
        .data)
}

/// The columns `*` lists over `plan`, in PostgreSQL's order.
/// `listed` are the columns DataFusion's own `*` listed: a join column is
/// named as the side it kept, which the plan above reads.
fn columns(plan: &LogicalPlan, listed: &[&Column]) -> Result<Vec<Expr>> {
    match plan {
        LogicalPlan::Filter(filter) => columns(&filter.input, listed),
        LogicalPlan::Join(join) if join.join_constraint == JoinConstraint::Using => {
            let left = columns(&join.left, listed)?;
            let right = columns(&join.right, listed)?;
            let mut merged = Vec::with_capacity(join.on.len());
            let mut joined_names = Vec::with_capacity(join.on.len());
            for (left_key, right_key) in &join.on {
                let (Expr::Column(left_column), Expr::Column(right_column)) = (left_key, right_key)
                else {
                    return Err(DataFusionError::Internal(
                        "a USING join on expressions".to_owned(),
                    ));
                };
                let value = match join.join_type {
                    JoinType::Right => Expr::Column(right_column.clone()),
                    JoinType::Full => datafusion::functions::expr_fn::coalesce(vec![
                        Expr::Column(left_column.clone()),
                        Expr::Column(right_column.clone()),
                    ]),
                    _ => Expr::Column(left_column.clone()),
                };
                // Named (and qualified) as the column DataFusion kept, which
                // the plan above this one reads.
                let kept = if listed.contains(&left_column) {
                    left_column
                } else {
                    right_column
                };
                merged.push(value.alias_qualified(kept.relation.clone(), &kept.name));
                joined_names.push(left_column.name.clone());
            }
            let others = |side: Vec<Expr>| {
                side.into_iter().filter(|expr| {
                    let name = match expr {
                        Expr::Column(column) => &column.name,
                        Expr::Alias(alias) => &alias.name,
                        _ => return true,
                    };
                    !joined_names.contains(name)
                })
            };
            let mut exprs = merged.clone();
            exprs.extend(others(left).collect::<Vec<_>>());
            exprs.extend(others(right).collect::<Vec<_>>());
            Ok(exprs)
        }
        LogicalPlan::Join(join) => {
            let mut exprs = columns(&join.left, listed)?;
            exprs.extend(columns(&join.right, listed)?);
            Ok(exprs)
        }
        // Markers of derived tables below are not columns of `*`.
        other => Ok(other
            .schema()
            .iter()
            .filter(|(_, field)| !field.name().starts_with(MARKER))
            .map(|(qualifier, field)| Expr::Column(Column::from((qualifier, field))))
            .collect()),
    }
}
