//! A subquery inside an aggregate's argument or `FILTER`
//! (`count(*) FILTER (WHERE EXISTS (SELECT ...))`,
//! `sum(CASE WHEN x > (SELECT avg(x) ...) THEN 1 END)`): computed in a
//! projection below the aggregate, whose column the aggregate reads.
//!
//! DataFusion turns subqueries into joins only where they stand in a filter
//! or a projection; one left inside an aggregate reaches the physical
//! planner, which cannot run it.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Aggregate, Expr, LogicalPlan, Projection};

/// How the projected subqueries are named (followed by a number).
const PROJECTED: &str = "__pgaccel_aggregated_subquery_";

fn is_subquery(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
    )
}

/// Moves every subquery of every aggregate's expressions in `plan` below it
/// (see the module comment).
pub fn subqueries_below_aggregates(plan: LogicalPlan) -> Result<LogicalPlan> {
    Ok(plan
        .transform_up_with_subqueries(|node| {
            let LogicalPlan::Aggregate(aggregate) = &node else {
                return Ok(Transformed::no(node));
            };
            let mut found: Vec<Expr> = Vec::new();
            for expr in &aggregate.aggr_expr {
                expr.apply(|e| {
                    if !is_subquery(e) {
                        return Ok(TreeNodeRecursion::Continue);
                    }
                    if !found.contains(e) {
                        found.push(e.clone());
                    }
                    Ok(TreeNodeRecursion::Jump)
                })?;
            }
            if found.is_empty() {
                return Ok(Transformed::no(node));
            }
            let names = NamePreserver::new(&node);
            let LogicalPlan::Aggregate(aggregate) = node else {
                unreachable!("matched above");
            };
            let projected: Vec<String> = (0..found.len())
                .map(|i| format!("{PROJECTED}{i}"))
                .collect();
            let mut exprs: Vec<Expr> = aggregate
                .input
                .schema()
                .columns()
                .into_iter()
                .map(Expr::Column)
                .collect();
            exprs.extend(
                found
                    .iter()
                    .zip(&projected)
                    .map(|(subquery, name)| subquery.clone().alias(name)),
            );
            let input = Arc::new(LogicalPlan::Projection(Projection::try_new(
                exprs,
                aggregate.input,
            )?));
            let aggr_expr = aggregate
                .aggr_expr
                .into_iter()
                .map(|expr| {
                    let saved = names.save(&expr);
                    let read = expr
                        .transform_down(|e| match found.iter().position(|f| *f == e) {
                            Some(index) => Ok(Transformed::new(
                                Expr::Column(projected[index].as_str().into()),
                                true,
                                TreeNodeRecursion::Jump,
                            )),
                            None => Ok(Transformed::no(e)),
                        })?
                        .data;
                    Ok(saved.restore(read))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Transformed::yes(LogicalPlan::Aggregate(
                Aggregate::try_new(input, aggregate.group_expr, aggr_expr)?,
            )))
        })?
        .data)
}
