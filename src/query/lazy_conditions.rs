//! `a AND b` and `a OR b` that read `b` only on the rows `a` leaves open,
//! where `b` can fail. PostgreSQL evaluates a condition row by row and
//! skips the right side of `AND` where the left is false (of `OR` where it
//! is true), so a guard such as `qty <> 0 AND amount / qty > 2` never
//! divides by zero. DataFusion evaluates both sides over a whole batch
//! unless the left side settles most rows, so such a guard failed with
//! 22012 on a batch where the guard held for more than a fifth of the rows.
//!
//! [`LazyConditions`] runs after DataFusion's physical optimizer and, in
//! the conditions of filters and the expressions of projections, replaces
//! each `AND`/`OR` whose right side may raise an error (arithmetic, casts
//! that can fail, functions) with a [`LazyBoolean`], which evaluates the
//! right side on the rows still undecided only. Conditions made only of
//! columns, literals, comparisons and the like keep DataFusion's
//! evaluation, and so its speed.
//!
//! The other way round, a filter whose conditions are all comparisons of
//! fixed-width columns with constants (TPC-H Q6's date, discount and
//! quantity ranges) becomes an [`EagerConjunction`], which compares every
//! row and combines the answers bit by bit. DataFusion instead copies the
//! rows the conditions so far leave open into a new batch for each further
//! condition once fewer than a fifth remain, and scatters the answers back:
//! in Q6 that copying took over half of the query's time, where a
//! comparison of a whole column costs about a nanosecond a row. Such
//! comparisons cannot fail, so evaluating them on every row changes no
//! answer and raises no error. Where a filter has other conditions beside
//! two or more such comparisons, and none of them can fail, they follow
//! the comparisons' eager conjunction and see only the rows it leaves open.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::kernels::boolean::{and_kleene, or_kleene};
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, Operator};
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, LikeExpr,
    Literal, NotExpr,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::ProjectionExec;

/// The physical optimizer rule (see the module comment).
#[derive(Debug, Default)]
pub struct LazyConditions;

impl PhysicalOptimizerRule for LazyConditions {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            if let Some(filter) = node.downcast_ref::<FilterExec>() {
                let schema = filter.input().schema();
                let ordered = in_cost_order(filter.predicate(), &schema);
                let reordered = ordered.is_some();
                let predicate = lazy(
                    ordered.unwrap_or_else(|| Arc::clone(filter.predicate())),
                    &schema,
                )?
                .transform_data(|predicate| eager(predicate, &schema))?;
                if !predicate.transformed && !reordered {
                    return Ok(Transformed::no(node));
                }
                let rebuilt = FilterExecBuilder::from(filter)
                    .with_predicate(predicate.data)
                    .build()?;
                return Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn ExecutionPlan>));
            }
            if let Some(projection) = node.downcast_ref::<ProjectionExec>() {
                return map_projection(&node, projection, lazy);
            }
            Ok(Transformed::no(node))
        })
        .map(|transformed| transformed.data)
    }

    fn name(&self) -> &str {
        "pgaccel_lazy_conditions"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `node`, a `projection`, with `f` applied to each of its expressions
/// (over the rows of its input); itself where `f` changes none.
pub(super) fn map_projection(
    node: &Arc<dyn ExecutionPlan>,
    projection: &ProjectionExec,
    f: impl Fn(Arc<dyn PhysicalExpr>, &Schema) -> Result<Transformed<Arc<dyn PhysicalExpr>>>,
) -> Result<Transformed<Arc<dyn ExecutionPlan>>> {
    let schema = projection.input().schema();
    let mut changed = false;
    let mut exprs = Vec::with_capacity(projection.expr().len());
    for expr in projection.expr() {
        let rewritten = f(Arc::clone(&expr.expr), &schema)?;
        changed |= rewritten.transformed;
        let mut expr = expr.clone();
        expr.expr = rewritten.data;
        exprs.push(expr);
    }
    if !changed {
        return Ok(Transformed::no(Arc::clone(node)));
    }
    // The output fields keep their annotations (PostgreSQL types), which
    // the expressions alone do not carry.
    let rebuilt = ProjectionExec::try_new_with_schema_metadata(
        exprs,
        Arc::clone(projection.input()),
        projection.schema().as_ref(),
    )?;
    Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn ExecutionPlan>))
}

/// `predicate`'s conditions (the operands of its top-level `AND`s) in the
/// order PostgreSQL evaluates a scan's conditions: cheapest first, as its
/// planner orders them by cost (each operator or function call costing
/// the same), in their written order where they cost alike. It matters
/// only where one may fail: whether the query fails then depends on what
/// was evaluated before. `None` where nothing moves.
fn in_cost_order(
    predicate: &Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Option<Arc<dyn PhysicalExpr>> {
    let conditions = datafusion::physical_expr::split_conjunction(predicate);
    if conditions.len() < 2 || !conditions.iter().any(|c| may_fail(c, schema)) {
        return None;
    }
    let mut ranked: Vec<(usize, usize, Arc<dyn PhysicalExpr>)> = conditions
        .into_iter()
        .enumerate()
        .map(|(index, condition)| (cost(condition), index, Arc::clone(condition)))
        .collect();
    ranked.sort_by_key(|(cost, index, _)| (*cost, *index));
    if ranked
        .iter()
        .enumerate()
        .all(|(position, (_, index, _))| position == *index)
    {
        return None;
    }
    Some(datafusion::physical_expr::conjunction(
        ranked.into_iter().map(|(_, _, condition)| condition),
    ))
}

/// The operators and function calls of `expr`: PostgreSQL's cost of a
/// condition where every one costs one `cpu_operator_cost` (its built-in
/// operators and functions do). Boolean logic and NULL tests are free.
fn cost(expr: &Arc<dyn PhysicalExpr>) -> usize {
    let any = expr.as_ref();
    let own = usize::from(
        any.downcast_ref::<BinaryExpr>()
            .is_some_and(|binary| !matches!(binary.op(), Operator::And | Operator::Or))
            || any.is::<ScalarFunctionExpr>()
            || any.is::<LikeExpr>()
            || any.is::<InListExpr>(),
    );
    own + expr.children().into_iter().map(cost).sum::<usize>()
}

/// `predicate` with its cheap comparisons as one [`EagerConjunction`],
/// where it has two or more conditions joined by `AND` that are cheap
/// comparisons. Where it also has others (TPC-H Q12's `l_shipmode IN
/// (...)` beside four date comparisons), they follow it, evaluated by
/// DataFusion's `AND` on the rows the comparisons leave open; that moves
/// them after the comparisons, so it is done only where none of them can
/// fail (where one can, which rows it sees decides whether the query
/// fails, and the order stays PostgreSQL's).
fn eager(
    predicate: Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    let conditions = datafusion::physical_expr::split_conjunction(&predicate);
    let (cheap, others): (Vec<_>, Vec<_>) = conditions
        .into_iter()
        .partition(|c| cheap_comparison(c, schema));
    if cheap.len() < 2 || others.iter().any(|c| may_fail(c, schema)) {
        return Ok(Transformed::no(predicate));
    }
    let eager = Arc::new(EagerConjunction {
        conditions: cheap.into_iter().map(Arc::clone).collect(),
    }) as Arc<dyn PhysicalExpr>;
    Ok(Transformed::yes(datafusion::physical_expr::conjunction(
        std::iter::once(eager).chain(others.into_iter().map(Arc::clone)),
    )))
}

/// A comparison of a fixed-width column (or a widening cast of one) with a
/// constant or another such column, or a NULL test of such a column: a
/// vectorized kernel that costs about a nanosecond a row and cannot fail.
fn cheap_comparison(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> bool {
    let fixed_width = |expr: &Arc<dyn PhysicalExpr>| {
        let any = expr.as_ref();
        let column = any.is::<Column>()
            || any
                .downcast_ref::<CastExpr>()
                .is_some_and(|cast| cast.expr().as_ref().is::<Column>() && widening(cast, schema));
        (column || any.is::<Literal>())
            && expr.data_type(schema).is_ok_and(|t| {
                t.is_primitive() || matches!(t, DataType::Boolean | DataType::Decimal128(..))
            })
    };
    let any = expr.as_ref();
    if let Some(binary) = any.downcast_ref::<BinaryExpr>() {
        return super::pg_types::is_comparison(*binary.op())
            && fixed_width(binary.left())
            && fixed_width(binary.right())
            && !(binary.left().as_ref().is::<Literal>()
                && binary.right().as_ref().is::<Literal>());
    }
    if let Some(test) = any.downcast_ref::<IsNullExpr>() {
        return fixed_width(test.arg());
    }
    if let Some(test) = any.downcast_ref::<IsNotNullExpr>() {
        return fixed_width(test.arg());
    }
    false
}

/// `c1 AND c2 AND ...` with every condition evaluated on every row and the
/// answers combined with SQL's three-valued `AND` (see the module comment).
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct EagerConjunction {
    conditions: Vec<Arc<dyn PhysicalExpr>>,
}

impl fmt::Display for EagerConjunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, condition) in self.conditions.iter().enumerate() {
            if i > 0 {
                write!(f, " AND ")?;
            }
            write!(f, "{condition}")?;
        }
        Ok(())
    }
}

impl PhysicalExpr for EagerConjunction {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        for condition in &self.conditions {
            if condition.nullable(input_schema)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let rows = batch.num_rows();
        let mut answer: Option<BooleanArray> = None;
        for condition in &self.conditions {
            let value = condition.evaluate(batch)?.into_array(rows)?;
            let value = value.as_boolean();
            let combined = match answer {
                None => value.clone(),
                Some(so_far) => and_kleene(&so_far, value)?,
            };
            // Every row false: no further condition can change that.
            if combined.true_count() == 0 && combined.null_count() == 0 {
                return Ok(ColumnarValue::Array(Arc::new(combined)));
            }
            answer = Some(combined);
        }
        let answer = answer.unwrap_or_else(|| BooleanArray::from(vec![true; rows]));
        Ok(ColumnarValue::Array(Arc::new(answer)))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        self.conditions.iter().collect()
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(Arc::new(EagerConjunction {
            conditions: children,
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, condition) in self.conditions.iter().enumerate() {
            if i > 0 {
                write!(f, " AND ")?;
            }
            condition.fmt_sql(f)?;
        }
        Ok(())
    }
}

/// `expr`, over rows of `schema`, with every `AND`/`OR` whose right side
/// may fail made lazy.
fn lazy(
    expr: Arc<dyn PhysicalExpr>,
    schema: &Schema,
) -> Result<Transformed<Arc<dyn PhysicalExpr>>> {
    expr.transform_up(|node| {
        let Some(binary) = node.downcast_ref::<BinaryExpr>() else {
            return Ok(Transformed::no(node));
        };
        let op = *binary.op();
        if !matches!(op, Operator::And | Operator::Or) || !may_fail(binary.right(), schema) {
            return Ok(Transformed::no(node));
        }
        Ok(Transformed::yes(Arc::new(LazyBoolean {
            left: Arc::clone(binary.left()),
            op,
            right: Arc::clone(binary.right()),
        }) as Arc<dyn PhysicalExpr>))
    })
}

/// Whether evaluating `expr` on a row may raise an error: anything but
/// columns, literals, comparisons, boolean logic, pattern matches, lists
/// of such, casts that cannot fail and a few functions that cannot.
fn may_fail(expr: &Arc<dyn PhysicalExpr>, schema: &Schema) -> bool {
    let any = expr.as_ref();
    let safe_node = any.is::<Column>()
        || any.is::<Literal>()
        || any.is::<NotExpr>()
        || any.is::<IsNullExpr>()
        || any.is::<IsNotNullExpr>()
        || any.is::<LikeExpr>()
        || any.is::<InListExpr>()
        || any.is::<CaseExpr>()
        || any.is::<LazyBoolean>()
        || any.downcast_ref::<BinaryExpr>().is_some_and(|binary| {
            super::pg_types::is_comparison(*binary.op())
                || matches!(
                    binary.op(),
                    Operator::And
                        | Operator::Or
                        | Operator::LikeMatch
                        | Operator::ILikeMatch
                        | Operator::NotLikeMatch
                        | Operator::NotILikeMatch
                )
        })
        || any
            .downcast_ref::<CastExpr>()
            .is_some_and(|cast| widening(cast, schema))
        || any
            .downcast_ref::<ScalarFunctionExpr>()
            .is_some_and(|function| {
                matches!(
                    function.name(),
                    "rtrim"
                        | "ltrim"
                        | "btrim"
                        | "lower"
                        | "upper"
                        | "coalesce"
                        | "starts_with"
                        // The padding of a `character(n)` value (see
                        // `pg_types::pad_characters`).
                        | "rpad"
                        | "lpad"
                        | "length"
                        | "character_length"
                        | "char_length"
                        | "octet_length"
                        | "left"
                        | "right"
                        | "strpos"
                        | "date_part"
                )
            });
    !safe_node
        || expr
            .children()
            .into_iter()
            .any(|child| may_fail(child, schema))
}

/// A cast that gives every value of its input a value of its output: a
/// wider integer, a decimal with at least as many digits on each side of
/// the point, text as another text type, a date as a timestamp.
fn widening(cast: &CastExpr, schema: &Schema) -> bool {
    let Ok(from) = cast.expr().data_type(schema) else {
        return false;
    };
    widens(&from, cast.cast_type())
}

fn widens(from: &DataType, to: &DataType) -> bool {
    let integer_width = |t: &DataType| match t {
        DataType::Int8 => Some(1),
        DataType::Int16 => Some(2),
        DataType::Int32 => Some(4),
        DataType::Int64 => Some(8),
        _ => None,
    };
    let text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    match (from, to) {
        (a, b) if a == b => true,
        (a, b) if integer_width(a).is_some() && integer_width(b).is_some() => {
            integer_width(a) <= integer_width(b)
        }
        (a, DataType::Float64) if integer_width(a).is_some() => true,
        (DataType::Float32, DataType::Float64) => true,
        (
            DataType::Decimal128(p, s) | DataType::Decimal256(p, s),
            DataType::Decimal128(q, t) | DataType::Decimal256(q, t),
        ) => t >= s && i16::from(*q) - i16::from(*t) >= i16::from(*p) - i16::from(*s),
        (a, b) if text(a) && text(b) => true,
        (DataType::Date32, DataType::Timestamp(..)) => true,
        _ => false,
    }
}

/// The two children of an operator, as `with_new_children` receives them.
pub(super) fn two_sides(
    children: Vec<Arc<dyn PhysicalExpr>>,
) -> Result<[Arc<dyn PhysicalExpr>; 2]> {
    <[Arc<dyn PhysicalExpr>; 2]>::try_from(children).map_err(|_| {
        datafusion::error::DataFusionError::Internal("an operator takes two sides".into())
    })
}

/// `left AND right` or `left OR right`, with `right` evaluated only on the
/// rows whose answer `left` leaves open.
#[derive(Debug, Eq)]
pub struct LazyBoolean {
    left: Arc<dyn PhysicalExpr>,
    op: Operator,
    right: Arc<dyn PhysicalExpr>,
}

impl PartialEq for LazyBoolean {
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op && self.left.eq(&other.left) && self.right.eq(&other.right)
    }
}

impl Hash for LazyBoolean {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.left.hash(state);
        self.op.hash(state);
        self.right.hash(state);
    }
}

impl fmt::Display for LazyBoolean {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}) {} ({})", self.left, self.op, self.right)
    }
}

impl PhysicalExpr for LazyBoolean {
    fn data_type(&self, _input_schema: &Schema) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn nullable(&self, input_schema: &Schema) -> Result<bool> {
        Ok(self.left.nullable(input_schema)? || self.right.nullable(input_schema)?)
    }

    fn evaluate(&self, batch: &RecordBatch) -> Result<ColumnarValue> {
        let and = self.op == Operator::And;
        // The left side's value that settles the answer without the right.
        let settled = !and;
        let rows = batch.num_rows();
        let left = match self.left.evaluate(batch)? {
            ColumnarValue::Scalar(ScalarValue::Boolean(Some(value))) if value == settled => {
                return Ok(ColumnarValue::Scalar(ScalarValue::Boolean(Some(settled))));
            }
            ColumnarValue::Scalar(scalar) => scalar.to_array_of_size(rows)?,
            ColumnarValue::Array(array) => array,
        };
        let left = left.as_boolean();
        // Rows still open: every row but those whose left side settles it.
        let open: BooleanArray = left
            .iter()
            .map(|value| Some(value != Some(settled)))
            .collect();
        if open.true_count() == 0 {
            return Ok(ColumnarValue::Array(Arc::new(left.clone()) as ArrayRef));
        }
        let right = self
            .right
            .evaluate_selection(batch, &open)?
            .into_array(rows)?;
        let right = right.as_boolean();
        let combined = if and {
            and_kleene(left, right)?
        } else {
            or_kleene(left, right)?
        };
        Ok(ColumnarValue::Array(Arc::new(combined)))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![&self.left, &self.right]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        let [left, right] = two_sides(children)?;
        Ok(Arc::new(LazyBoolean {
            left,
            op: self.op,
            right,
        }))
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        self.left.fmt_sql(f)?;
        write!(f, ") {} (", self.op)?;
        self.right.fmt_sql(f)?;
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int32Array;
    use datafusion::arrow::datatypes::Field;
    use datafusion::physical_expr::expressions::{binary, col, lit};

    #[test]
    fn an_eager_conjunction_answers_as_the_and_it_replaces() {
        use datafusion::arrow::array::{Date32Array, Decimal128Array, StringArray};
        let schema = Arc::new(Schema::new(vec![
            Field::new("day", DataType::Date32, true),
            Field::new("rate", DataType::Decimal128(15, 2), true),
            Field::new("n", DataType::Int32, true),
            Field::new("t", DataType::Utf8, true),
        ]));
        let rows = 5000;
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(Date32Array::from_iter(
                    (0..rows).map(|i| (i % 11 != 0).then_some(i % 400)),
                )),
                Arc::new(
                    Decimal128Array::from_iter(
                        (0..rows).map(|i| (i % 7 != 0).then_some(i128::from(i % 10))),
                    )
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
                ),
                Arc::new(Int32Array::from_iter(
                    (0..rows).map(|i| (i % 13 != 0).then_some(i % 50)),
                )),
                Arc::new(StringArray::from_iter(
                    (0..rows).map(|i| Some(format!("{}", i % 3))),
                )),
            ],
        )
        .unwrap();
        let c = |name: &str| col(name, &schema).unwrap();
        let compare = |left, op, right| binary(left, op, right, &schema).unwrap();
        let and = |left, right| compare(left, Operator::And, right);
        let decimal = |v: i128| lit(ScalarValue::Decimal128(Some(v), 15, 2));
        // Q6's shape: a date range, a decimal range and an upper bound,
        // with NULLs in every column; then one that is false everywhere.
        let q6 = and(
            and(
                and(
                    compare(c("day"), Operator::GtEq, lit(ScalarValue::Date32(Some(30)))),
                    compare(c("day"), Operator::Lt, lit(ScalarValue::Date32(Some(90)))),
                ),
                and(
                    compare(c("rate"), Operator::GtEq, decimal(3)),
                    compare(c("rate"), Operator::LtEq, decimal(5)),
                ),
            ),
            compare(c("n"), Operator::Lt, lit(24i32)),
        );
        let never = and(
            compare(c("n"), Operator::Lt, lit(-1i32)),
            compare(c("rate"), Operator::Eq, decimal(3)),
        );
        for predicate in [q6, never] {
            let rewritten = eager(Arc::clone(&predicate), &schema).unwrap();
            assert!(rewritten.transformed, "{predicate}");
            assert!(rewritten.data.as_ref().is::<EagerConjunction>());
            let expected = predicate
                .evaluate(&batch)
                .unwrap()
                .into_array(rows as usize)
                .unwrap();
            let got = rewritten
                .data
                .evaluate(&batch)
                .unwrap()
                .into_array(rows as usize)
                .unwrap();
            assert_eq!(got.as_boolean(), expected.as_boolean(), "{predicate}");
        }
        // Q12's shape: a text condition among comparisons follows their
        // eager conjunction, and the answer is the same.
        let text_first = and(
            compare(c("t"), Operator::NotEq, lit("1")),
            and(
                compare(c("day"), Operator::Lt, lit(ScalarValue::Date32(Some(200)))),
                compare(c("n"), Operator::Gt, lit(5i32)),
            ),
        );
        let rewritten = eager(Arc::clone(&text_first), &schema).unwrap();
        assert!(rewritten.transformed);
        let and_node = rewritten.data.downcast_ref::<BinaryExpr>().unwrap();
        assert_eq!(*and_node.op(), Operator::And);
        assert!(and_node.left().as_ref().is::<EagerConjunction>());
        let evaluate = |predicate: &Arc<dyn PhysicalExpr>| {
            predicate
                .evaluate(&batch)
                .unwrap()
                .into_array(rows as usize)
                .unwrap()
        };
        assert_eq!(
            evaluate(&rewritten.data).as_boolean(),
            evaluate(&text_first).as_boolean()
        );
        // A single comparison, and comparisons beside a condition that may
        // fail (whose order decides which rows it sees), keep DataFusion's
        // AND.
        let divides = compare(
            compare(lit(100i32), Operator::Divide, c("n")),
            Operator::Gt,
            lit(1i32),
        );
        for predicate in [
            and(
                compare(c("t"), Operator::Eq, lit("1")),
                compare(c("n"), Operator::Lt, lit(24i32)),
            ),
            compare(c("n"), Operator::Lt, lit(24i32)),
            and(
                divides,
                and(
                    compare(c("n"), Operator::Lt, lit(24i32)),
                    compare(c("day"), Operator::Gt, lit(ScalarValue::Date32(Some(3)))),
                ),
            ),
        ] {
            assert!(!eager(predicate, &schema).unwrap().transformed);
        }
    }

    #[test]
    fn the_right_side_is_read_only_where_the_left_leaves_the_answer_open() {
        // x <> 0 AND 10 / x > 1, and x = 0 OR 10 / x > 1, on rows where
        // the guard holds for most rows but not all.
        let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, true)]));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int32Array::from(vec![
                Some(1),
                Some(0),
                Some(2),
                None,
                Some(20),
            ]))],
        )
        .unwrap();
        let x = col("x", &schema).unwrap();
        let guard = binary(Arc::clone(&x), Operator::NotEq, lit(0), &schema).unwrap();
        let zero = binary(Arc::clone(&x), Operator::Eq, lit(0), &schema).unwrap();
        let ratio = binary(
            binary(lit(10), Operator::Divide, Arc::clone(&x), &schema).unwrap(),
            Operator::Gt,
            lit(1),
            &schema,
        )
        .unwrap();
        let eager = binary(
            Arc::clone(&guard),
            Operator::And,
            Arc::clone(&ratio),
            &schema,
        )
        .unwrap();
        assert!(
            eager.evaluate(&batch).is_err(),
            "DataFusion divides every row"
        );
        // Each row's answer.
        let rows = |expr: Arc<dyn PhysicalExpr>| -> Vec<Option<bool>> {
            let answer = expr.evaluate(&batch).unwrap().into_array(5).unwrap();
            answer.as_boolean().iter().collect()
        };
        let and = lazy(eager, &schema).unwrap();
        assert!(and.transformed);
        assert_eq!(
            rows(and.data),
            vec![Some(true), Some(false), Some(true), None, Some(false)]
        );
        let or = lazy(
            binary(zero, Operator::Or, Arc::clone(&ratio), &schema).unwrap(),
            &schema,
        )
        .unwrap();
        assert_eq!(
            rows(or.data),
            vec![Some(true), Some(true), Some(true), None, Some(false)]
        );
        // PostgreSQL's order: the cheaper condition first, so that
        // `10 / x > 1 AND x <> 0` is guarded too, and a costlier one that
        // cannot fail stays behind one that can.
        let unguarded = binary(
            Arc::clone(&ratio),
            Operator::And,
            Arc::clone(&guard),
            &schema,
        )
        .unwrap();
        let ordered = in_cost_order(&unguarded, &schema).expect("reordered");
        assert_eq!(
            rows(lazy(ordered, &schema).unwrap().data),
            vec![Some(true), Some(false), Some(true), None, Some(false)]
        );
        // Comparisons alone keep DataFusion's evaluation.
        let plain = binary(
            guard,
            Operator::And,
            binary(x, Operator::Lt, lit(5), &schema).unwrap(),
            &schema,
        )
        .unwrap();
        assert!(!lazy(plain, &schema).unwrap().transformed);
    }
}
