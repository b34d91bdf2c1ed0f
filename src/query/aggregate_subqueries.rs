//! A subquery inside an aggregate's argument or `FILTER`
//! (`count(*) FILTER (WHERE EXISTS (SELECT ...))`,
//! `sum(CASE WHEN x > (SELECT avg(x) ...) THEN 1 END)`) or a grouping key
//! (`GROUP BY x IN (SELECT ...)`): computed in a projection below the
//! aggregate, whose column the aggregate reads.
//!
//! DataFusion turns subqueries into joins only where they stand in a filter
//! or a projection; one left inside an aggregate reaches the physical
//! planner, which cannot run it. An `IN (subquery)` DataFusion answers only
//! in a filter: in a projection it becomes a join here too.

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
            let keys = aggregate
                .group_expr
                .iter()
                .filter(|key| !matches!(key, Expr::GroupingSet(_)));
            for expr in aggregate.aggr_expr.iter().chain(keys) {
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
            let read_projected = |exprs: Vec<Expr>| {
                exprs
                    .into_iter()
                    .map(|expr| {
                        if matches!(expr, Expr::GroupingSet(_)) {
                            return Ok(expr);
                        }
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
                    .collect::<Result<Vec<_>>>()
            };
            Ok(Transformed::yes(LogicalPlan::Aggregate(
                Aggregate::try_new(
                    input,
                    read_projected(aggregate.group_expr)?,
                    read_projected(aggregate.aggr_expr)?,
                )?,
            )))
        })?
        .data)
}

/// `x IN (SELECT y FROM s ...)` in a select list (or, moved there, in an
/// aggregate), not correlated: a left join of the rows with s's distinct
/// values of y, beside a count of s's rows and of its non-NULL values, so
/// that the answer follows SQL's NULLs: true on a match; false when s is
/// empty; NULL when x is NULL or s has a NULL; false otherwise.
///
/// DataFusion answers `IN (subquery)` only as a condition of a filter.
pub fn in_subqueries_in_projections(plan: LogicalPlan) -> Result<LogicalPlan> {
    use datafusion::functions_aggregate::expr_fn::count;
    use datafusion::logical_expr::expr::InSubquery;
    use datafusion::logical_expr::{JoinType, LogicalPlanBuilder, col, lit, not, when};

    let mut joined = 0usize;
    Ok(plan
        .transform_up_with_subqueries(|node| {
            let LogicalPlan::Projection(projection) = &node else {
                return Ok(Transformed::no(node));
            };
            let mut found: Vec<Expr> = Vec::new();
            for expr in &projection.expr {
                expr.apply(|e| {
                    if let Expr::InSubquery(in_subquery) = e
                        && in_subquery.subquery.outer_ref_columns.is_empty()
                        && in_subquery.subquery.subquery.schema().fields().len() == 1
                        && !found.contains(e)
                    {
                        found.push(e.clone());
                    }
                    Ok(TreeNodeRecursion::Continue)
                })?;
            }
            if found.is_empty() {
                return Ok(Transformed::no(node));
            }
            let names = NamePreserver::new(&node);
            let LogicalPlan::Projection(projection) = node else {
                unreachable!("matched above");
            };
            let mut input = LogicalPlanBuilder::from(Arc::unwrap_or_clone(projection.input));
            let mut answers = Vec::with_capacity(found.len());
            for in_subquery in &found {
                let Expr::InSubquery(InSubquery {
                    expr,
                    subquery,
                    negated,
                }) = in_subquery
                else {
                    unreachable!("only IN subqueries are found");
                };
                let n = joined;
                joined += 1;
                let (value, mark, rows, values) = (
                    format!("__pgaccel_in_value_{n}"),
                    format!("__pgaccel_in_mark_{n}"),
                    format!("__pgaccel_in_rows_{n}"),
                    format!("__pgaccel_in_values_{n}"),
                );
                let inner = subquery.subquery.as_ref().clone();
                let only = Expr::Column(inner.schema().qualified_field(0).into());
                let inner = LogicalPlanBuilder::from(inner)
                    .project(vec![only.alias(&value)])?
                    .alias(format!("__pgaccel_in_{n}"))?
                    .build()?;
                let distinct = LogicalPlanBuilder::from(inner.clone())
                    .aggregate(vec![col(&value)], Vec::<Expr>::new())?
                    .project(vec![col(&value), lit(true).alias(&mark)])?
                    .build()?;
                let counts = LogicalPlanBuilder::from(inner)
                    .aggregate(
                        Vec::<Expr>::new(),
                        vec![
                            count(lit(1)).alias(&rows),
                            count(col(&value)).alias(&values),
                        ],
                    )?
                    .build()?;
                input = input
                    .join_on(
                        distinct,
                        JoinType::Left,
                        vec![expr.as_ref().clone().eq(col(&value))],
                    )?
                    .cross_join(counts)?;
                let answer = when(col(&mark).is_not_null(), lit(true))
                    .when(col(&rows).eq(lit(0i64)), lit(false))
                    .when(
                        expr.as_ref()
                            .clone()
                            .is_null()
                            .or(col(&values).lt(col(&rows))),
                        lit(datafusion::common::ScalarValue::Boolean(None)),
                    )
                    .otherwise(lit(false))?;
                answers.push(if *negated { not(answer) } else { answer });
            }
            let input = Arc::new(input.build()?);
            let exprs = projection
                .expr
                .into_iter()
                .map(|expr| {
                    let saved = names.save(&expr);
                    let answered = expr
                        .transform_down(|e| match found.iter().position(|f| *f == e) {
                            Some(index) => Ok(Transformed::new(
                                answers[index].clone(),
                                true,
                                TreeNodeRecursion::Jump,
                            )),
                            None => Ok(Transformed::no(e)),
                        })?
                        .data;
                    Ok(saved.restore(answered))
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Transformed::yes(LogicalPlan::Projection(
                Projection::try_new(exprs, input)?,
            )))
        })?
        .data)
}
