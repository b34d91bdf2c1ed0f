//! `INTERSECT ALL` and `EXCEPT ALL` as PostgreSQL computes them: a row that
//! appears m times on the left and n times on the right appears
//! min(m, n) times in `INTERSECT ALL` and max(m - n, 0) times in
//! `EXCEPT ALL`.
//!
//! DataFusion plans both as a semi (anti) join on every column, which keeps
//! all m copies of a row that matches at all (none for `EXCEPT ALL`). Each
//! side's rows are numbered within their group of equal rows first, and the
//! number joins too: the k-th copy on the left matches the k-th on the
//! right. The distinct forms (`INTERSECT`, `EXCEPT`), whose left side is
//! deduplicated, keep their answer (every left row is copy 1).

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, NullEquality, Result};
use datafusion::functions_window::expr_fn::row_number;
use datafusion::logical_expr::{Expr, ExprFunctionExt, JoinType, LogicalPlan, LogicalPlanBuilder};

const LEFT_COPY: &str = "__pgaccel_left_copy";
const RIGHT_COPY: &str = "__pgaccel_right_copy";

/// Rewrites every set-operation join of `plan` (see the module comment).
pub fn postgres_set_operations(plan: LogicalPlan) -> Result<LogicalPlan> {
    plan.transform_up(|node| {
        let LogicalPlan::Join(join) = &node else {
            return Ok(Transformed::no(node));
        };
        // Only the SQL planner's INTERSECT/EXCEPT join: semi or anti, on
        // every column, NULLs equal, nothing else.
        let set_operation = matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
            && join.null_equality == NullEquality::NullEqualsNull
            && join.filter.is_none()
            && join.on.len() == join.left.schema().fields().len();
        if !set_operation {
            return Ok(Transformed::no(node));
        }
        let (left_keys, right_keys): (Vec<Column>, Vec<Column>) = join
            .on
            .iter()
            .filter_map(|(left, right)| match (left, right) {
                (Expr::Column(left), Expr::Column(right)) => Some((left.clone(), right.clone())),
                _ => None,
            })
            .unzip();
        if left_keys.len() != join.on.len() {
            return Ok(Transformed::no(node));
        }
        let output: Vec<Expr> = join
            .left
            .schema()
            .columns()
            .into_iter()
            .map(Expr::Column)
            .collect();
        let left = numbered(Arc::clone(&join.left), &left_keys, LEFT_COPY)?;
        let right = numbered(Arc::clone(&join.right), &right_keys, RIGHT_COPY)?;
        let mut left_on = left_keys;
        left_on.push(Column::from_name(LEFT_COPY));
        let mut right_on = right_keys;
        right_on.push(Column::from_name(RIGHT_COPY));
        let rewritten = LogicalPlanBuilder::from(left)
            .join_detailed(
                right,
                join.join_type,
                (left_on, right_on),
                None,
                NullEquality::NullEqualsNull,
            )?
            .project(output)?
            .build()?;
        Ok(Transformed::yes(rewritten))
    })
    .map(|transformed| transformed.data)
}

/// `input` with each row's copy number among the rows equal to it.
fn numbered(input: Arc<LogicalPlan>, columns: &[Column], name: &str) -> Result<LogicalPlan> {
    let copy = row_number()
        .partition_by(columns.iter().cloned().map(Expr::Column).collect())
        .build()?
        .alias(name);
    LogicalPlanBuilder::from(input).window(vec![copy])?.build()
}
