//! Inner joins in an order chosen from the accelerated tables' statistics.
//!
//! DataFusion joins the tables of a query in the order its `FROM` clause
//! names them (it only turns each join's smaller side into the build side),
//! so `FROM customer, orders, lineitem, supplier, nation, region ...
//! WHERE r_name = 'ASIA'` joins all of a year's line items with their orders
//! and customers before the region's filter removes four fifths of them.
//! DataFusion has no join-order optimizer to enable, so this rule is one: a
//! left-deep order over each chain of inner joins whose every input
//! is an accelerated table (through filters, projections of plain columns and
//! aliases): the left-deep order of least estimated cost (see
//! [`best_order`]). Estimates come from each table's row count
//! and per-column distinct counts ([`TableProvider::statistics`]) and fixed
//! selectivities for filter shapes.
//!
//! Only inner joins are reordered, and a chain is left as written when any
//! input has no statistics, when its tables are not all connected by
//! equality conditions, or when a condition spans more than two of them
//! (the shorter chains inside it are still ordered on their own). The
//! result holds the same rows, and a projection on top gives back the chain's
//! own column order. `PGACCEL_JOIN_ORDER=off` keeps every join as written.
//!
//! [`TableProvider::statistics`]: datafusion::catalog::TableProvider::statistics

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::catalog::default_table_source::source_as_provider;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, JoinType, NullEquality, Result, Statistics};
use datafusion::logical_expr::expr::{Between, InList, Like};
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{
    BinaryExpr, Expr, Join, JoinConstraint, LogicalPlan, Operator, Projection, TableScan,
};
use datafusion::optimizer::{ApplyOrder, OptimizerConfig, OptimizerRule};

/// Fewer tables than this have no order to choose beyond DataFusion's
/// choice of build side.
const LEAST_TABLES: usize = 3;

/// More tables than this are joined as written: the orders tried grow as
/// 2^n.
const MOST_TABLES: usize = 12;

/// Build-side rows whose hash table stays in the processor's caches.
const CACHED_BUILD_ROWS: f64 = 16384.0;

/// Fraction of rows a filter is assumed to keep where no statistic says more.
const RANGE_SELECTIVITY: f64 = 1.0 / 3.0;
const BETWEEN_SELECTIVITY: f64 = 0.25;
const EQUALITY_SELECTIVITY: f64 = 0.1;
const PATTERN_SELECTIVITY: f64 = 0.1;
const OTHER_SELECTIVITY: f64 = 0.25;

#[derive(Debug)]
pub struct JoinOrder {
    on: bool,
}

impl JoinOrder {
    /// On unless `PGACCEL_JOIN_ORDER=off`.
    pub fn from_environment() -> Self {
        JoinOrder {
            on: std::env::var("PGACCEL_JOIN_ORDER").map_or(true, |value| value != "off"),
        }
    }

    #[cfg(test)]
    fn new(on: bool) -> Self {
        JoinOrder { on }
    }
}

impl OptimizerRule for JoinOrder {
    fn name(&self) -> &str {
        "pgaccel_join_order"
    }

    /// The rule walks the plan itself: a chain is taken whole from its
    /// topmost join, and its inputs are then ordered on their own.
    fn apply_order(&self) -> Option<ApplyOrder> {
        None
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        if !self.on {
            return Ok(Transformed::no(plan));
        }
        order_joins(plan)
    }
}

fn order_joins(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    plan.transform_down(|node| {
        let LogicalPlan::Join(join) = &node else {
            return Ok(Transformed::no(node));
        };
        if !is_plain_inner(join) {
            return Ok(Transformed::no(node));
        }
        match ordered(&node)? {
            Some(Ordered::Rebuilt(plan)) => {
                Ok(Transformed::new(plan, true, TreeNodeRecursion::Jump))
            }
            Some(Ordered::AsWritten(plan)) => {
                Ok(Transformed::new(plan, false, TreeNodeRecursion::Jump))
            }
            // Not a chain this rule orders: its inner chains may be.
            None => Ok(Transformed::no(node)),
        }
    })
}

/// An inner join whose conditions are equalities that never match nulls.
fn is_plain_inner(join: &Join) -> bool {
    join.join_type == JoinType::Inner
        && join.join_constraint == JoinConstraint::On
        && join.null_equality == NullEquality::NullEqualsNothing
        && !join.null_aware
}

enum Ordered {
    /// The chain in the chosen order, under a projection to its columns.
    Rebuilt(LogicalPlan),
    /// The chain was already in the chosen order.
    AsWritten(LogicalPlan),
}

/// The inputs of a chain of inner joins and its conditions.
#[derive(Default)]
struct Chain {
    inputs: Vec<LogicalPlan>,
    on: Vec<(Expr, Expr)>,
    filters: Vec<Expr>,
    /// Each join's right input is a single table.
    left_deep: bool,
}

fn flatten(plan: &LogicalPlan, chain: &mut Chain) {
    match plan {
        LogicalPlan::Join(join) if is_plain_inner(join) => {
            flatten(&join.left, chain);
            let before = chain.inputs.len();
            flatten(&join.right, chain);
            if chain.inputs.len() - before > 1 {
                chain.left_deep = false;
            }
            chain.on.extend(join.on.iter().cloned());
            if let Some(filter) = &join.filter {
                chain
                    .filters
                    .extend(split_conjunction(filter).into_iter().cloned());
            }
        }
        // The column pruning DataFusion puts between joins: the projection
        // on top of the ordered chain keeps only the chain's own columns.
        LogicalPlan::Projection(projection)
            if matches!(projection.input.as_ref(), LogicalPlan::Join(join) if is_plain_inner(join))
                && projection
                    .expr
                    .iter()
                    .all(|expr| matches!(expr, Expr::Column(_))) =>
        {
            flatten(&projection.input, chain);
        }
        other => chain.inputs.push(other.clone()),
    }
}

/// An equality between a column (or expression) of one input and one of
/// another.
struct Edge {
    inputs: [usize; 2],
    exprs: [Expr; 2],
    /// Each side's distinct values, capped at its input's estimated rows.
    distinct: [f64; 2],
}

/// `root`'s chain in the chosen order, or `None` where the rule leaves the
/// chain to DataFusion.
fn ordered(root: &LogicalPlan) -> Result<Option<Ordered>> {
    let mut chain = Chain {
        left_deep: true,
        ..Chain::default()
    };
    flatten(root, &mut chain);
    let count = chain.inputs.len();
    if count < LEAST_TABLES
        || chain
            .on
            .iter()
            .flat_map(|(left, right)| [left, right])
            .chain(&chain.filters)
            .any(refers_outside)
    {
        return Ok(None);
    }
    let Some(rows) = chain
        .inputs
        .iter()
        .map(estimated_rows)
        .collect::<Option<Vec<f64>>>()
    else {
        return Ok(None);
    };
    let Some(edges) = edges(&chain, &rows) else {
        return Ok(None);
    };
    let Some(filters) = chain
        .filters
        .iter()
        .map(|filter| Some((inputs_of(filter, &chain.inputs)?, filter.clone())))
        .collect::<Option<Vec<(BTreeSet<usize>, Expr)>>>()
    else {
        return Ok(None);
    };
    let Some(order) = best_order(&rows, &edges) else {
        return Ok(None);
    };
    // The inputs' own joins are ordered first.
    let mut changed = false;
    let mut inputs = Vec::with_capacity(count);
    for input in chain.inputs {
        let input = order_joins(input)?;
        changed |= input.transformed;
        inputs.push(input.data);
    }
    if !changed && chain.left_deep && order.iter().copied().eq(0..count) {
        return Ok(Some(Ordered::AsWritten(root.clone())));
    }
    match rebuild(root, inputs, &order, &edges, filters) {
        Ok(plan) => Ok(Some(Ordered::Rebuilt(plan))),
        // A chain whose inputs cannot be joined in another order (such as
        // two inputs with a column of the same name) stays as written.
        Err(_) => Ok(None),
    }
}

/// Whether `expr` holds a subquery or a column of an enclosing query: the
/// join it sits on is where it was checked and decorrelated, so the chain
/// keeps its order.
fn refers_outside(expr: &Expr) -> bool {
    expr.exists(|expr| {
        Ok(matches!(
            expr,
            Expr::ScalarSubquery(_)
                | Expr::Exists(_)
                | Expr::InSubquery(_)
                | Expr::SetComparison(_)
                | Expr::OuterReferenceColumn(..)
        ))
    })
    .unwrap_or(true)
}

/// The equalities of `chain` between two of its inputs; `None` when one
/// side of a condition is not within a single input.
fn edges(chain: &Chain, rows: &[f64]) -> Option<Vec<Edge>> {
    chain
        .on
        .iter()
        .map(|(left, right)| {
            let left_input = single_input(left, &chain.inputs)?;
            let right_input = single_input(right, &chain.inputs)?;
            if left_input == right_input {
                return None;
            }
            let distinct = |expr: &Expr, input: usize| {
                let rows = rows[input];
                plain_column(expr)
                    .and_then(|column| distinct_values(&chain.inputs[input], &column.name))
                    .map_or(rows, |distinct| distinct.min(rows))
                    .max(1.0)
            };
            Some(Edge {
                inputs: [left_input, right_input],
                distinct: [distinct(left, left_input), distinct(right, right_input)],
                exprs: [left.clone(), right.clone()],
            })
        })
        .collect()
}

/// The one input all of `expr`'s columns come from.
fn single_input(expr: &Expr, inputs: &[LogicalPlan]) -> Option<usize> {
    let found = inputs_of(expr, inputs)?;
    match (found.len(), found.first()) {
        (1, Some(&input)) => Some(input),
        _ => None,
    }
}

/// The inputs `expr`'s columns come from; `None` when one is in none.
fn inputs_of(expr: &Expr, inputs: &[LogicalPlan]) -> Option<BTreeSet<usize>> {
    let mut found = BTreeSet::new();
    for column in expr.column_refs() {
        let input = inputs
            .iter()
            .position(|input| input.schema().has_column(column))?;
        found.insert(input);
    }
    Some(found)
}

/// The left-deep order of least estimated cost (every order is tried, by
/// dynamic programming over the sets of inputs); `None` when the inputs are
/// not all connected by equalities or are too many to try.
///
/// A join costs its output rows plus its larger input's rows, each weighed
/// by [`probe_weight`] of the smaller input the hash table is built from:
/// probing a table that fits in the processor's caches is several times
/// cheaper than probing one that does not. Measured on TPC-H (SF 1), this
/// ranks Q5's and Q7's orders (filtered nations and their suppliers before
/// lineitem) and Q8's and Q9's (the filtered part before lineitem) as their
/// timings do; the output rows alone do not.
fn best_order(rows: &[f64], edges: &[Edge]) -> Option<Vec<usize>> {
    let count = rows.len();
    if count > MOST_TABLES {
        return None;
    }
    // The selectivity between each two inputs: the conditions between the
    // same two inputs are one condition on their combined key, whose
    // distinct values on each side are at most that side's rows.
    let mut distinct = vec![vec![1.0_f64; count]; count];
    let mut connected = vec![false; count * count];
    for edge in edges {
        let [a, b] = edge.inputs;
        distinct[a][b] *= edge.distinct[0];
        distinct[b][a] *= edge.distinct[1];
        connected[a * count + b] = true;
        connected[b * count + a] = true;
    }
    let selectivity = |a: usize, b: usize| {
        1.0 / distinct[a][b]
            .min(rows[a])
            .max(distinct[b][a].min(rows[b]))
            .max(1.0)
    };
    let all = (1usize << count) - 1;
    let members = |set: usize| (0..count).filter(move |input| set & (1 << input) != 0);
    let estimated: Vec<f64> = (0..=all)
        .map(|set| {
            let mut result: f64 = members(set).map(|input| rows[input]).product();
            for a in members(set) {
                for b in members(set).filter(|&b| b > a && connected[a * count + b]) {
                    result *= selectivity(a, b);
                }
            }
            result.max(1.0)
        })
        .collect();
    // The cheapest cost of joining each set, and the input joined last.
    let mut best: Vec<Option<(f64, usize)>> = vec![None; all + 1];
    for input in 0..count {
        best[1 << input] = Some((0.0, input));
    }
    // A set's subsets are smaller numbers, so they are settled first.
    for set in 1..=all {
        if set.count_ones() < 2 {
            continue;
        }
        for last in members(set) {
            let rest = set & !(1 << last);
            let Some((rest_cost, _)) = best[rest] else {
                continue;
            };
            if !members(rest).any(|input| connected[input * count + last]) {
                continue;
            }
            let (left, right) = (estimated[rest], rows[last]);
            let cost = rest_cost + left.max(right) * probe_weight(left.min(right)) + estimated[set];
            if best[set].is_none_or(|(best_cost, _)| cost < best_cost) {
                best[set] = Some((cost, last));
            }
        }
    }
    let mut order = Vec::with_capacity(count);
    let mut set = all;
    while set != 0 {
        let (_, last) = best[set]?;
        order.push(last);
        set &= !(1 << last);
    }
    order.reverse();
    Some(order)
}

/// The cost of probing one row into a hash table built from `rows` rows:
/// 1 while the table fits in the caches, and half again for each doubling
/// beyond.
fn probe_weight(rows: f64) -> f64 {
    1.0 + 0.5 * (rows / CACHED_BUILD_ROWS).max(1.0).log2()
}

/// The chain joined left-deep in `order`, each join holding the equalities
/// between its new input and those before it and the filters whose inputs
/// are all joined by then, under a projection to `root`'s columns.
fn rebuild(
    root: &LogicalPlan,
    inputs: Vec<LogicalPlan>,
    order: &[usize],
    edges: &[Edge],
    mut filters: Vec<(BTreeSet<usize>, Expr)>,
) -> Result<LogicalPlan> {
    let mut inputs: Vec<Option<LogicalPlan>> = inputs.into_iter().map(Some).collect();
    let mut take = |input: usize| {
        inputs[input].take().ok_or_else(|| {
            datafusion::common::DataFusionError::Internal("input joined twice".into())
        })
    };
    let mut plan = take(order[0])?;
    let mut joined = BTreeSet::from([order[0]]);
    for &next in &order[1..] {
        let on: Vec<(Expr, Expr)> = edges
            .iter()
            .filter_map(|edge| match edge.inputs {
                [a, b] if b == next && joined.contains(&a) => {
                    Some((edge.exprs[0].clone(), edge.exprs[1].clone()))
                }
                [a, b] if a == next && joined.contains(&b) => {
                    Some((edge.exprs[1].clone(), edge.exprs[0].clone()))
                }
                _ => None,
            })
            .collect();
        joined.insert(next);
        let (ready, waiting): (Vec<_>, Vec<_>) = filters
            .into_iter()
            .partition(|(needs, _)| needs.is_subset(&joined));
        filters = waiting;
        let filter = conjunction(ready.into_iter().map(|(_, filter)| filter));
        plan = LogicalPlan::Join(Join::try_new(
            Arc::new(plan),
            Arc::new(take(next)?),
            on,
            filter,
            JoinType::Inner,
            JoinConstraint::On,
            NullEquality::NullEqualsNothing,
            false,
        )?);
    }
    let columns = root
        .schema()
        .columns()
        .into_iter()
        .map(Expr::Column)
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(
        columns,
        Arc::new(plan),
    )?))
}

/// The column `expr` is, through casts.
fn plain_column(expr: &Expr) -> Option<&Column> {
    match expr {
        Expr::Column(column) => Some(column),
        Expr::Cast(cast) => plain_column(&cast.expr),
        Expr::TryCast(cast) => plain_column(&cast.expr),
        _ => None,
    }
}

/// The statistics of the table `scan` reads, where its provider has them.
fn table_statistics(scan: &TableScan) -> Option<Statistics> {
    source_as_provider(&scan.source).ok()?.statistics()
}

/// Rows `plan` is estimated to produce: a table's row count, reduced by
/// the filters over it.
fn estimated_rows(plan: &LogicalPlan) -> Option<f64> {
    match plan {
        LogicalPlan::TableScan(scan) => {
            let rows = *table_statistics(scan)?.num_rows.get_value()? as f64;
            Some(scan.fetch.map_or(rows, |fetch| rows.min(fetch as f64)))
        }
        LogicalPlan::Filter(filter) => {
            let rows = estimated_rows(&filter.input)?;
            Some((rows * selectivity(&filter.predicate, &filter.input)).max(1.0))
        }
        LogicalPlan::Projection(projection) => estimated_rows(&projection.input),
        LogicalPlan::SubqueryAlias(alias) => estimated_rows(&alias.input),
        _ => None,
    }
}

/// Distinct values of the column `name` of `plan`, from its table's
/// statistics.
fn distinct_values(plan: &LogicalPlan, name: &str) -> Option<f64> {
    match plan {
        LogicalPlan::TableScan(scan) => {
            let index = scan.source.schema().index_of(name).ok()?;
            let statistics = table_statistics(scan)?;
            let distinct = *statistics
                .column_statistics
                .get(index)?
                .distinct_count
                .get_value()?;
            Some(distinct as f64)
        }
        LogicalPlan::Filter(filter) => distinct_values(&filter.input, name),
        LogicalPlan::SubqueryAlias(alias) => distinct_values(&alias.input, name),
        LogicalPlan::Projection(projection) => {
            let position = projection
                .schema
                .fields()
                .iter()
                .position(|field| field.name() == name)?;
            match projection.expr.get(position)? {
                Expr::Column(column) => distinct_values(&projection.input, &column.name),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Fraction of `input`'s rows `predicate` is estimated to keep.
fn selectivity(predicate: &Expr, input: &LogicalPlan) -> f64 {
    split_conjunction(predicate)
        .into_iter()
        .map(|condition| condition_selectivity(condition, input))
        .product()
}

fn condition_selectivity(condition: &Expr, input: &LogicalPlan) -> f64 {
    let distinct =
        |expr: &Expr| plain_column(expr).and_then(|column| distinct_values(input, &column.name));
    match condition {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => selectivity(left, input) * selectivity(right, input),
            Operator::Or => (selectivity(left, input) + selectivity(right, input)).min(1.0),
            Operator::Eq => {
                let value_side = match (plain_column(left), plain_column(right)) {
                    (Some(_), None) => distinct(left),
                    (None, Some(_)) => distinct(right),
                    _ => None,
                };
                value_side.map_or(EQUALITY_SELECTIVITY, |distinct| 1.0 / distinct.max(1.0))
            }
            Operator::NotEq => 1.0 - EQUALITY_SELECTIVITY,
            Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => RANGE_SELECTIVITY,
            Operator::LikeMatch
            | Operator::ILikeMatch
            | Operator::RegexMatch
            | Operator::RegexIMatch => PATTERN_SELECTIVITY,
            _ => OTHER_SELECTIVITY,
        },
        Expr::Between(Between { negated, .. }) => match negated {
            false => BETWEEN_SELECTIVITY,
            true => 1.0 - BETWEEN_SELECTIVITY,
        },
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let kept = distinct(expr)
                .map_or(EQUALITY_SELECTIVITY * list.len() as f64, |distinct| {
                    list.len() as f64 / distinct.max(1.0)
                });
            match negated {
                false => kept.min(1.0),
                true => (1.0 - kept).max(EQUALITY_SELECTIVITY),
            }
        }
        Expr::Like(Like { negated, .. }) | Expr::SimilarTo(Like { negated, .. }) => match negated {
            false => PATTERN_SELECTIVITY,
            true => 1.0 - PATTERN_SELECTIVITY,
        },
        _ => OTHER_SELECTIVITY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
    use datafusion::arrow::util::pretty::pretty_format_batches;
    use datafusion::catalog::{Session, TableProvider};
    use datafusion::common::ColumnStatistics;
    use datafusion::common::stats::Precision;
    use datafusion::datasource::{MemTable, TableType};
    use datafusion::logical_expr::TableProviderFilterPushDown;
    use datafusion::physical_plan::ExecutionPlan;
    use datafusion::prelude::SessionContext;

    /// A memory table with the statistics of an accelerated one: its row
    /// count and each column's distinct count.
    #[derive(Debug)]
    struct Counted {
        table: MemTable,
        statistics: Statistics,
    }

    #[async_trait]
    impl TableProvider for Counted {
        fn schema(&self) -> SchemaRef {
            self.table.schema()
        }

        fn table_type(&self) -> TableType {
            TableType::Base
        }

        fn supports_filters_pushdown(
            &self,
            filters: &[&Expr],
        ) -> Result<Vec<TableProviderFilterPushDown>> {
            Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
        }

        async fn scan(
            &self,
            state: &dyn Session,
            projection: Option<&Vec<usize>>,
            filters: &[Expr],
            limit: Option<usize>,
        ) -> Result<Arc<dyn ExecutionPlan>> {
            self.table.scan(state, projection, filters, limit).await
        }

        fn statistics(&self) -> Option<Statistics> {
            Some(self.statistics.clone())
        }
    }

    /// Integer columns computed from the row number, and text columns
    /// naming the value, with each column's distinct count.
    fn table(rows: i64, columns: &[(&str, i64)], text: Option<&str>) -> (MemTable, Statistics) {
        let mut fields: Vec<Field> = columns
            .iter()
            .map(|(name, _)| Field::new(*name, DataType::Int64, false))
            .collect();
        let mut arrays: Vec<Arc<dyn datafusion::arrow::array::Array>> = columns
            .iter()
            .map(|(_, modulo)| {
                Arc::new(Int64Array::from_iter_values(
                    (0..rows).map(|row| row % modulo),
                )) as Arc<dyn datafusion::arrow::array::Array>
            })
            .collect();
        let mut distinct: Vec<usize> = columns
            .iter()
            .map(|(_, modulo)| rows.min(*modulo) as usize)
            .collect();
        if let Some(name) = text {
            fields.push(Field::new(name, DataType::Utf8, false));
            arrays.push(Arc::new(StringArray::from_iter_values(
                (0..rows).map(|row| format!("name {}", row % 5)),
            )));
            distinct.push(rows.min(5) as usize);
        }
        let schema = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(Arc::clone(&schema), arrays).unwrap();
        let mut statistics = Statistics::new_unknown(&schema);
        statistics.num_rows = Precision::Exact(rows as usize);
        statistics.column_statistics = distinct
            .into_iter()
            .map(|count| ColumnStatistics {
                distinct_count: Precision::Exact(count),
                ..ColumnStatistics::new_unknown()
            })
            .collect();
        (
            MemTable::try_new(schema, vec![vec![batch]]).unwrap(),
            statistics,
        )
    }

    /// Six tables shaped like TPC-H's, with `lineitem` the largest.
    fn context(join_order: bool, with_statistics: bool) -> SessionContext {
        let ctx = SessionContext::new();
        ctx.add_optimizer_rule(Arc::new(JoinOrder::new(join_order)));
        let tables = [
            ("region", table(5, &[("r_regionkey", 5)], Some("r_name"))),
            (
                "nation",
                table(
                    25,
                    &[("n_nationkey", 25), ("n_regionkey", 5)],
                    Some("n_name"),
                ),
            ),
            (
                "supplier",
                table(100, &[("s_suppkey", 100), ("s_nationkey", 25)], None),
            ),
            (
                "customer",
                table(300, &[("c_custkey", 300), ("c_nationkey", 25)], None),
            ),
            (
                "orders",
                table(1500, &[("o_orderkey", 1500), ("o_custkey", 300)], None),
            ),
            (
                "lineitem",
                table(
                    6000,
                    &[("l_orderkey", 1500), ("l_suppkey", 100), ("l_value", 97)],
                    None,
                ),
            ),
        ];
        for (name, (table, statistics)) in tables {
            let provider: Arc<dyn TableProvider> = match with_statistics || name != "supplier" {
                true => Arc::new(Counted { table, statistics }),
                false => Arc::new(table),
            };
            ctx.register_table(name, provider).unwrap();
        }
        ctx
    }

    const REGION_REVENUE: &str = "select n_name, sum(l_value) as revenue, count(*) as lines \
        from customer, orders, lineitem, supplier, nation, region \
        where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey \
          and c_nationkey = s_nationkey and s_nationkey = n_nationkey \
          and n_regionkey = r_regionkey and r_name = 'name 2' \
        group by n_name order by n_name";

    /// The tables of the first chain of inner joins in `sql`'s optimized
    /// plan, in the order they are joined.
    async fn join_order(ctx: &SessionContext, sql: &str) -> Vec<String> {
        let plan = ctx.sql(sql).await.unwrap().into_optimized_plan().unwrap();
        let mut order = Vec::new();
        plan.apply(|node| {
            if let LogicalPlan::Join(join) = node
                && is_plain_inner(join)
            {
                let mut chain = Chain::default();
                flatten(node, &mut chain);
                for input in &chain.inputs {
                    input.apply(|node| {
                        if let LogicalPlan::TableScan(scan) = node {
                            order.push(scan.table_name.table().to_owned());
                        }
                        Ok(TreeNodeRecursion::Continue)
                    })?;
                }
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        order
    }

    async fn answer(ctx: &SessionContext, sql: &str) -> String {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        pretty_format_batches(&batches).unwrap().to_string()
    }

    #[tokio::test]
    async fn filtered_dimensions_are_joined_before_the_largest_table() {
        let ordered = context(true, true);
        let written = context(false, true);
        assert_eq!(
            join_order(&written, REGION_REVENUE).await,
            [
                "customer", "orders", "lineitem", "supplier", "nation", "region"
            ]
        );
        // The region's filter leaves one row: region, its nations and their
        // suppliers come first; lineitem, the largest, comes once every
        // table it joins is in.
        let order = join_order(&ordered, REGION_REVENUE).await;
        assert_eq!(order[..3], ["region", "nation", "supplier"]);
        assert_eq!(order.len(), 6);
        let answer_ordered = answer(&ordered, REGION_REVENUE).await;
        assert_eq!(answer_ordered, answer(&written, REGION_REVENUE).await);
        assert!(answer_ordered.contains("name 2"), "{answer_ordered}");
    }

    #[tokio::test]
    async fn reordered_joins_keep_the_columns_and_rows_of_the_query() {
        let sql = "select * from lineitem, orders, customer, nation \
            where l_orderkey = o_orderkey and o_custkey = c_custkey \
              and c_nationkey = n_nationkey and n_name = 'name 1' and l_value < 3 \
              and l_value + o_orderkey > c_custkey \
            order by l_orderkey, l_suppkey, l_value, c_custkey";
        let ordered = context(true, true);
        let written = context(false, true);
        assert_eq!(
            join_order(&ordered, sql).await[..2],
            ["nation", "customer"],
            "the filtered nation and its customers first"
        );
        let got = answer(&ordered, sql).await;
        assert_eq!(got, answer(&written, sql).await);
        let header = got.lines().nth(1).unwrap();
        assert!(
            header.starts_with("| l_orderkey | l_suppkey | l_value | o_orderkey |"),
            "{header}"
        );
    }

    #[tokio::test]
    async fn a_table_without_statistics_leaves_the_chain_as_written() {
        let ctx = context(true, false);
        let order = join_order(&ctx, REGION_REVENUE).await;
        // `supplier` has none: the joins from it up stay as written, and
        // only the chain below it (customer, orders, lineitem) is ordered.
        assert_eq!(order[2..], ["lineitem", "supplier", "nation", "region"]);
        assert_eq!(
            BTreeSet::from([order[0].as_str(), order[1].as_str()]),
            BTreeSet::from(["customer", "orders"])
        );
        assert_eq!(
            answer(&ctx, REGION_REVENUE).await,
            answer(&context(false, false), REGION_REVENUE).await
        );
    }
}
