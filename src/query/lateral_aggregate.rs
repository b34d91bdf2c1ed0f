//! `FROM c, LATERAL (SELECT count(*) AS n FROM o WHERE o.k = c.id AND o.at
//! < c.since) s`: a lateral subquery that aggregates without `GROUP BY`
//! gives exactly one row for each outer row, so it is the same as one
//! scalar subquery per column it lists. DataFusion plans a lateral join only
//! when every condition that reads the outer row is an equality; such a
//! subquery with any other condition (`<`, `IS NOT DISTINCT FROM`, ...) is
//! rewritten, before planning, into those scalar subqueries, which it plans
//! whatever the condition:
//!
//! ```sql
//! SELECT c.id, (SELECT count(*) FROM o WHERE o.k = c.id AND o.at < c.since) AS n FROM c
//! ```
//!
//! The subquery may be joined by a comma, `CROSS JOIN LATERAL`, or `[LEFT]
//! JOIN LATERAL ... ON true`: with one row for every outer row they are
//! all the same. The rewrite applies only where it is exact: no `HAVING`,
//! `DISTINCT`, window, `LIMIT` or set operation in the subquery; every
//! column it lists has a name; the enclosing select reads its columns by
//! name or with `alias.*` (not a bare `*`), and not from nested subqueries.
//! Anything else is left as it was.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, FunctionArguments, GroupByExpr, Ident, JoinConstraint, JoinOperator, ObjectName,
    OrderByKind, Query, Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr, TableFactor,
    Value, visit_expressions, visit_expressions_mut,
};

use super::compat::{
    aggregates, conjuncts, is_correlation, lists_using_columns, plain_select, references,
    relation_names,
};

/// Rewrites the lateral single-row aggregates of `query`'s select, as the
/// module doc says.
pub(super) fn lateral_aggregates(query: &mut Query) {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    while let Some((columns, at)) = next_rewrite(select) {
        if !replace_references(select, query.order_by.as_mut(), &columns) {
            return;
        }
        match at {
            Place::Item(index) => {
                select.from.remove(index);
            }
            Place::Join(table, join) => {
                select.from[table].joins.remove(join);
            }
        }
    }
}

/// Where a lateral subquery sits in the FROM clause.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// `FROM c, LATERAL (...) s`: the FROM item at this index.
    Item(usize),
    /// `FROM c JOIN LATERAL (...) s ON true`: join `.1` of FROM item `.0`.
    Join(usize, usize),
}

/// A lateral subquery's columns, each as the scalar subquery that computes
/// it.
struct Columns {
    alias: String,
    columns: Vec<(String, Expr)>,
}

impl Columns {
    fn get(&self, name: &str) -> Option<&Expr> {
        self.columns
            .iter()
            .find(|(column, _)| column == name)
            .map(|(_, expr)| expr)
    }
}

/// The first lateral subquery of `select`'s FROM that the rewrite applies
/// to, read as scalar subqueries.
fn next_rewrite(select: &Select) -> Option<(Columns, Place)> {
    for (index, table) in select.from.iter().enumerate() {
        if index > 0
            && table.joins.is_empty()
            && let Some(columns) = single_row(&table.relation)
        {
            return Some((columns, Place::Item(index)));
        }
        for (at, join) in table.joins.iter().enumerate() {
            let joined_for_every_row = match &join.join_operator {
                JoinOperator::CrossJoin(JoinConstraint::None) => true,
                JoinOperator::Join(JoinConstraint::On(on))
                | JoinOperator::Inner(JoinConstraint::On(on))
                | JoinOperator::Left(JoinConstraint::On(on))
                | JoinOperator::LeftOuter(JoinConstraint::On(on)) => {
                    matches!(on, Expr::Value(v) if v.value == Value::Boolean(true))
                }
                _ => false,
            };
            if joined_for_every_row && let Some(columns) = single_row(&join.relation) {
                return Some((columns, Place::Join(index, at)));
            }
        }
    }
    None
}

/// `factor` as scalar subqueries, when it is a lateral subquery that
/// aggregates without grouping and reads the outer row other than by
/// equalities.
fn single_row(factor: &TableFactor) -> Option<Columns> {
    let TableFactor::Derived {
        lateral: true,
        subquery,
        alias: Some(alias),
        sample: None,
    } = factor
    else {
        return None;
    };
    if subquery.with.is_some()
        || subquery.limit_clause.is_some()
        || subquery.fetch.is_some()
        || !subquery.locks.is_empty()
    {
        return None;
    }
    let SetExpr::Select(inner) = subquery.body.as_ref() else {
        return None;
    };
    let ungrouped = matches!(&inner.group_by, GroupByExpr::Expressions(exprs, modifiers)
        if exprs.is_empty() && modifiers.is_empty());
    if !ungrouped || inner.having.is_some() || !plain_select(inner) {
        return None;
    }
    // One row whatever matches: an aggregate, and no window.
    let mut outputs = Vec::new();
    let mut aggregated = false;
    for (at, item) in inner.projection.iter().enumerate() {
        let (name, expr) = match item {
            SelectItem::UnnamedExpr(expr) => (implicit_name(expr)?, expr),
            SelectItem::ExprWithAlias { expr, alias } => (alias.value.to_lowercase(), expr),
            _ => return None,
        };
        if windowed(expr) {
            return None;
        }
        aggregated |= aggregates(expr);
        let name = alias
            .columns
            .get(at)
            .map_or(name, |column| column.name.value.to_lowercase());
        outputs.push((name, expr.clone(), item.clone()));
    }
    if !aggregated || alias.columns.len() > outputs.len() {
        return None;
    }
    if !needs_rewrite(inner) {
        return None;
    }
    let columns = outputs
        .into_iter()
        .map(|(name, _, item)| {
            let mut one = subquery.as_ref().clone();
            if let SetExpr::Select(select) = one.body.as_mut() {
                select.projection = vec![match item {
                    SelectItem::ExprWithAlias { expr, .. } => SelectItem::UnnamedExpr(expr),
                    other => other,
                }];
            }
            (name, Expr::Subquery(Box::new(one)))
        })
        .collect();
    Some(Columns {
        alias: alias.name.value.to_lowercase(),
        columns,
    })
}

/// Whether DataFusion would refuse the lateral subquery: some condition
/// reads the outer row other than as `inner = outer` in the WHERE clause.
/// What it cannot tell (nested subqueries) is left alone.
fn needs_rewrite(inner: &Select) -> bool {
    let names = relation_names(inner);
    let mut outer_elsewhere = false;
    let mut unknown = false;
    let mut check = |expr: &Expr| {
        let found = references(expr, &names);
        outer_elsewhere |= found.outer;
        unknown |= found.unknown;
    };
    for item in &inner.projection {
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
            check(expr);
        }
    }
    for table in &inner.from {
        for factor in
            std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation))
        {
            if !matches!(factor, TableFactor::Table { args: None, .. }) {
                return false;
            }
        }
        for join in &table.joins {
            let _ = visit_expressions(&join.join_operator, |expr| {
                check(expr);
                ControlFlow::<()>::Continue(())
            });
        }
    }
    let mut all = Vec::new();
    if let Some(selection) = &inner.selection {
        conjuncts(selection.clone(), &mut all);
    }
    for condition in &all {
        let found = references(condition, &names);
        unknown |= found.unknown;
        if found.outer && !is_correlation(condition, &names) {
            outer_elsewhere = true;
        }
    }
    outer_elsewhere && !unknown
}

/// The name PostgreSQL gives an unnamed column: a column's own name or a
/// function's; `None` for anything it would call `?column?`.
fn implicit_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.to_lowercase()),
        Expr::Function(function) if matches!(function.args, FunctionArguments::List(_)) => function
            .name
            .0
            .last()?
            .as_ident()
            .map(|i| i.value.to_lowercase()),
        Expr::Cast { expr, .. } | Expr::Nested(expr) => implicit_name(expr),
        _ => None,
    }
}

fn windowed(expr: &Expr) -> bool {
    visit_expressions(expr, |e| match e {
        Expr::Function(function) if function.over.is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Reads every reference of the enclosing select to the lateral's columns
/// as their scalar subqueries; `false` (and nothing changed) where one
/// cannot be: a reference from a nested subquery or a join's condition, or
/// a `*` that [`star_by_relation`] cannot list.
fn replace_references(
    select: &mut Select,
    order_by: Option<&mut datafusion::sql::sqlparser::ast::OrderBy>,
    columns: &Columns,
) -> bool {
    let refers = |expr: &Expr| match expr {
        Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
            parts[0].value.to_lowercase() == columns.alias
        }
        Expr::Identifier(ident) => columns.get(&ident.value.to_lowercase()).is_some(),
        _ => false,
    };
    // Joins of the enclosing select and its nested subqueries must not name
    // the lateral.
    let mut nested_reads = false;
    for table in &select.from {
        for join in &table.joins {
            let _ = visit_expressions(&join.join_operator, |expr| {
                nested_reads |= refers(expr);
                ControlFlow::<()>::Continue(())
            });
        }
    }
    let mut bare_star = false;
    let mut look = |expr: &Expr| {
        let _ = visit_expressions(expr, |e| {
            if let Expr::Subquery(query)
            | Expr::Exists {
                subquery: query, ..
            }
            | Expr::InSubquery {
                subquery: query, ..
            } = e
            {
                let _ = visit_expressions(query.as_ref(), |inner| {
                    nested_reads |= refers(inner);
                    ControlFlow::<()>::Continue(())
                });
            }
            ControlFlow::<()>::Continue(())
        });
    };
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => look(expr),
            SelectItem::Wildcard(options) => bare_star |= options == &Default::default(),
            SelectItem::QualifiedWildcard(..) | SelectItem::ExprWithAliases { .. } => {}
        }
    }
    for expr in select.selection.iter().chain(select.having.iter()) {
        look(expr);
    }
    if let GroupByExpr::Expressions(exprs, _) = &select.group_by {
        exprs.iter().for_each(&mut look);
    }
    if let Some(order_by) = &order_by
        && let OrderByKind::Expressions(keys) = &order_by.kind
    {
        keys.iter().for_each(|key| look(&key.expr));
    }
    if nested_reads || (bare_star && !star_by_relation(select)) {
        return false;
    }

    let substitute = |expr: &mut Expr| {
        let _ = visit_expressions_mut(expr, |e| {
            let name = match e {
                Expr::CompoundIdentifier(parts)
                    if parts.len() == 2 && parts[0].value.to_lowercase() == columns.alias =>
                {
                    parts[1].value.to_lowercase()
                }
                Expr::Identifier(ident) => ident.value.to_lowercase(),
                _ => return ControlFlow::<()>::Continue(()),
            };
            if let Some(value) = columns.get(&name) {
                *e = value.clone();
            }
            ControlFlow::Continue(())
        });
    };
    let mut outputs = Vec::new();
    select.projection = std::mem::take(&mut select.projection)
        .into_iter()
        .flat_map(|item| match item {
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _)
                if name.to_string().to_lowercase() == columns.alias =>
            {
                columns
                    .columns
                    .iter()
                    .map(|(name, expr)| SelectItem::ExprWithAlias {
                        expr: expr.clone(),
                        alias: Ident::new(name),
                    })
                    .collect()
            }
            SelectItem::UnnamedExpr(mut expr) if refers(&expr) => {
                let name = match &expr {
                    Expr::CompoundIdentifier(parts) => parts[1].value.to_lowercase(),
                    Expr::Identifier(ident) => ident.value.to_lowercase(),
                    _ => unreachable!("refers() matched an identifier"),
                };
                substitute(&mut expr);
                vec![SelectItem::ExprWithAlias {
                    expr,
                    alias: Ident::new(name),
                }]
            }
            SelectItem::UnnamedExpr(mut expr) => {
                substitute(&mut expr);
                vec![SelectItem::UnnamedExpr(expr)]
            }
            SelectItem::ExprWithAlias { mut expr, alias } => {
                outputs.push(alias.value.to_lowercase());
                substitute(&mut expr);
                vec![SelectItem::ExprWithAlias { expr, alias }]
            }
            other => vec![other],
        })
        .collect();
    for expr in select.selection.iter_mut().chain(select.having.iter_mut()) {
        substitute(expr);
    }
    if let GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
        exprs.iter_mut().for_each(substitute);
    }
    if let Some(order_by) = order_by
        && let OrderByKind::Expressions(keys) = &mut order_by.kind
    {
        for key in keys {
            // `ORDER BY n` names an output column first.
            if let Expr::Identifier(ident) = &key.expr
                && outputs.contains(&ident.value.to_lowercase())
            {
                continue;
            }
            substitute(&mut key.expr);
        }
    }
    true
}

/// `SELECT *` as `a.*, b.*, ...`, one per FROM item in order, which lists
/// the same columns in the same order when every item has a name and no
/// join merges columns (`USING`, `NATURAL`); `false` otherwise, and nothing
/// changed.
fn star_by_relation(select: &mut Select) -> bool {
    let merges = lists_using_columns(&select.from);
    let names = relation_names(select);
    if merges || names.iter().any(String::is_empty) {
        return false;
    }
    select.projection = std::mem::take(&mut select.projection)
        .into_iter()
        .flat_map(|item| match item {
            SelectItem::Wildcard(options) if options == Default::default() => names
                .iter()
                .map(|name| {
                    SelectItem::QualifiedWildcard(
                        SelectItemQualifiedWildcardKind::ObjectName(ObjectName::from(vec![
                            Ident::new(name),
                        ])),
                        Default::default(),
                    )
                })
                .collect(),
            other => vec![other],
        })
        .collect();
    true
}
