//! A subquery inside an aggregate's argument or `FILTER`
//! (`count(*) FILTER (WHERE EXISTS (SELECT ...))`,
//! `sum(CASE WHEN x > (SELECT avg(x) ...) THEN 1 END)`) or a grouping key
//! (`GROUP BY x IN (SELECT ...)`): computed in a projection below the
//! aggregate, whose column the aggregate reads.
//!
//! DataFusion turns subqueries into joins only where they stand in a filter
//! or a projection; one left inside an aggregate reaches the physical
//! planner, which cannot run it. An `IN (subquery)` DataFusion answers only
//! in a filter, and an aggregate correlated by an inequality not at all:
//! both become joins here too.

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

/// A scalar subquery that aggregates the rows an inequality with the outer
/// row picks, `(SELECT count(*) FROM s WHERE s.t < o.t)`, in a select list
/// or a filter: DataFusion turns a correlated subquery into a join only
/// where the outer row is read in equalities. Here the outer row's distinct
/// correlated values are joined with s on the subquery's condition,
/// aggregated per value, and joined back to the rows by that value (NULLs
/// equal); a count of no rows is 0, any other aggregate of none is NULL.
///
/// Only for a subquery that is one aggregate (with no GROUP BY) of a
/// filtered input, whose outer references are in that filter alone and
/// name columns of the node's own input.
pub fn correlated_aggregates_as_joins(plan: LogicalPlan) -> Result<LogicalPlan> {
    let mut joined = 0usize;
    Ok(plan
        .transform_up_with_subqueries(|node| {
            let (exprs, input) = match &node {
                LogicalPlan::Projection(projection) => {
                    (projection.expr.clone(), Arc::clone(&projection.input))
                }
                LogicalPlan::Filter(filter) => {
                    (vec![filter.predicate.clone()], Arc::clone(&filter.input))
                }
                _ => return Ok(Transformed::no(node)),
            };
            let mut found: Vec<(Expr, Correlated)> = Vec::new();
            for expr in &exprs {
                expr.apply(|e| {
                    if let Expr::ScalarSubquery(subquery) = e
                        && !found.iter().any(|(f, _)| f == e)
                        && let Some(correlated) = Correlated::of(subquery, &input)
                    {
                        found.push((e.clone(), correlated));
                    }
                    Ok(TreeNodeRecursion::Continue)
                })?;
            }
            if found.is_empty() {
                return Ok(Transformed::no(node));
            }
            let mut rows = Arc::unwrap_or_clone(Arc::clone(&input));
            let mut values = Vec::with_capacity(found.len());
            for (_, correlated) in &found {
                let (plan, value) = correlated.joined(rows, joined)?;
                joined += 1;
                rows = plan;
                values.push(value);
            }
            let answered = |expr: Expr| {
                expr.transform_down(|e| match found.iter().position(|(f, _)| *f == e) {
                    Some(index) => Ok(Transformed::new(
                        values[index].clone(),
                        true,
                        TreeNodeRecursion::Jump,
                    )),
                    None => Ok(Transformed::no(e)),
                })
                .map(|transformed| transformed.data)
            };
            let rows = Arc::new(rows);
            let names = NamePreserver::new(&node);
            Ok(Transformed::yes(match node {
                LogicalPlan::Projection(projection) => {
                    let exprs = projection
                        .expr
                        .into_iter()
                        .map(|expr| {
                            let saved = names.save(&expr);
                            Ok(saved.restore(answered(expr)?))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    LogicalPlan::Projection(Projection::try_new(exprs, rows)?)
                }
                LogicalPlan::Filter(filter) => {
                    // The rows keep the filter's input columns alone.
                    let columns: Vec<Expr> = input
                        .schema()
                        .columns()
                        .into_iter()
                        .map(Expr::Column)
                        .collect();
                    datafusion::logical_expr::LogicalPlanBuilder::from(Arc::unwrap_or_clone(rows))
                        .filter(answered(filter.predicate)?)?
                        .project(columns)?
                        .build()?
                }
                other => other,
            }))
        })?
        .data)
}

/// A subquery [`correlated_aggregates_as_joins`] answers.
struct Correlated {
    /// The subquery's value over its aggregate's output, and whether it is
    /// a count (0 over no rows).
    value: Expr,
    counts: bool,
    aggregate: datafusion::logical_expr::Aggregate,
    predicate: Expr,
    filtered: Arc<LogicalPlan>,
    /// The outer columns the filter reads.
    outer: Vec<datafusion::common::Column>,
}

impl Correlated {
    fn of(
        subquery: &datafusion::logical_expr::Subquery,
        input: &LogicalPlan,
    ) -> Option<Correlated> {
        use datafusion::logical_expr::Operator;
        if subquery.outer_ref_columns.is_empty() {
            return None;
        }
        let mut top = subquery.subquery.as_ref();
        let mut value = None;
        if let LogicalPlan::Projection(projection) = top {
            let [expr] = projection.expr.as_slice() else {
                return None;
            };
            value = Some(expr.clone());
            top = projection.input.as_ref();
        }
        let LogicalPlan::Aggregate(aggregate) = top else {
            return None;
        };
        let [aggregated] = aggregate.aggr_expr.as_slice() else {
            return None;
        };
        if !aggregate.group_expr.is_empty() {
            return None;
        }
        let LogicalPlan::Filter(filter) = aggregate.input.as_ref() else {
            return None;
        };
        // The value: the aggregate itself (maybe renamed or cast).
        let output = Expr::Column(aggregate.schema.qualified_field(0).into());
        let value = value.unwrap_or_else(|| output.clone());
        let mut read = &value;
        loop {
            match read {
                Expr::Alias(alias) => read = &alias.expr,
                Expr::Cast(cast) => read = &cast.expr,
                _ => break,
            }
        }
        if *read != output {
            return None;
        }
        let mut inner = aggregated;
        while let Expr::Alias(alias) = inner {
            inner = &alias.expr;
        }
        let Expr::AggregateFunction(function) = inner else {
            return None;
        };
        let counts = function.func.name() == "count";
        let outer_elsewhere = value.contains_outer() || aggregated.contains_outer();
        if outer_elsewhere {
            return None;
        }
        // Left to DataFusion where it reads the outer row in equalities
        // alone.
        let conjuncts = datafusion::logical_expr::utils::split_conjunction(&filter.predicate);
        let unequal = conjuncts.iter().any(|conjunct| {
            conjunct.contains_outer()
                && !matches!(conjunct, Expr::BinaryExpr(b) if b.op == Operator::Eq)
        });
        if !unequal {
            return None;
        }
        let mut outer = Vec::new();
        filter
            .predicate
            .apply(|e| {
                if let Expr::OuterReferenceColumn(_, column) = e
                    && !outer.contains(column)
                {
                    outer.push(column.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
            .ok()?;
        if !outer.iter().all(|column| input.schema().has_column(column)) {
            return None;
        }
        Some(Correlated {
            value,
            counts,
            aggregate: aggregate.clone(),
            predicate: filter.predicate.clone(),
            filtered: Arc::clone(&filter.input),
            outer,
        })
    }

    /// `rows` left-joined with the subquery's value per distinct outer
    /// value, and the expression that reads that value.
    fn joined(&self, rows: LogicalPlan, n: usize) -> Result<(LogicalPlan, Expr)> {
        use datafusion::common::NullEquality;
        use datafusion::logical_expr::{JoinType, LogicalPlanBuilder, col, lit};
        let key = |i: usize| format!("__pgaccel_outer_{n}_{i}");
        let value_name = format!("__pgaccel_correlated_{n}");
        let distinct = LogicalPlanBuilder::from(rows.clone())
            .project(
                self.outer
                    .iter()
                    .enumerate()
                    .map(|(i, column)| Expr::Column(column.clone()).alias(key(i))),
            )?
            .distinct()?
            .build()?;
        let predicate = self
            .predicate
            .clone()
            .transform_up(|e| match &e {
                Expr::OuterReferenceColumn(_, column) => {
                    let index = self.outer.iter().position(|c| c == column);
                    Ok(match index {
                        Some(i) => Transformed::yes(col(key(i))),
                        None => Transformed::no(e),
                    })
                }
                _ => Ok(Transformed::no(e)),
            })?
            .data;
        let keys: Vec<Expr> = (0..self.outer.len()).map(|i| col(key(i))).collect();
        let per_value = LogicalPlanBuilder::from(distinct)
            .join_on(
                Arc::unwrap_or_clone(Arc::clone(&self.filtered)),
                JoinType::Inner,
                vec![predicate],
            )?
            .aggregate(keys.clone(), self.aggregate.aggr_expr.clone())?
            .build()?;
        // The aggregate's column, under the name the value reads it by.
        let aggregated = Expr::Column(per_value.schema().qualified_field(keys.len()).into());
        let output_name = self.aggregate.schema.field(0).name().clone();
        let value = self
            .value
            .clone()
            .transform_up(|e| match &e {
                Expr::Column(column) if column.name == output_name => {
                    Ok(Transformed::yes(aggregated.clone()))
                }
                _ => Ok(Transformed::no(e)),
            })?
            .data;
        let mut exprs = keys.clone();
        exprs.push(value.alias(&value_name));
        let per_value = LogicalPlanBuilder::from(per_value)
            .project(exprs)?
            .alias(format!("__pgaccel_correlated_{n}"))?
            .build()?;
        let joined = LogicalPlanBuilder::from(rows)
            .join_detailed(
                per_value,
                JoinType::Left,
                (
                    self.outer.clone(),
                    (0..self.outer.len())
                        .map(|i| datafusion::common::Column::from_name(key(i)))
                        .collect::<Vec<_>>(),
                ),
                None,
                NullEquality::NullEqualsNull,
            )?
            .build()?;
        let read = col(&value_name);
        let read = if self.counts {
            datafusion::functions::expr_fn::coalesce(vec![read, lit(0i64)])
        } else {
            read
        };
        Ok((joined, read))
    }
}
