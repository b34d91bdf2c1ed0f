//! `LEFT JOIN LATERAL (SELECT ... FROM o WHERE o.k = c.id ORDER BY x LIMIT
//! n) s ON true`: the first `n` rows of a subquery for each outer row (the
//! latest order of each customer). DataFusion plans a lateral subquery only
//! when it aggregates, so this one is rewritten, before planning, into a
//! plain derived table that numbers the rows of each key in the subquery's
//! order, joined on the key and the number:
//!
//! ```sql
//! LEFT JOIN (SELECT ..., o.k AS pgaccel_lateral_key_1,
//!                   row_number() OVER (PARTITION BY o.k ORDER BY x) AS pgaccel_lateral_row
//!            FROM o) s
//!   ON s.pgaccel_lateral_key_1 = c.id AND s.pgaccel_lateral_row <= n
//! ```
//!
//! The same rows: for each outer row the join keeps the subquery's rows
//! whose key equals the outer value, and of those the first `n` in order
//! (rows that tie in the order may be picked differently, as PostgreSQL's
//! own pick among them is arbitrary). The conditions on the subquery's own
//! rows stay inside it; an outer join still gives the outer row once with
//! NULLs when none match.
//!
//! A grouped subquery (the top category of each customer) also groups by
//! the key, so its groups are those of each outer value, and numbers them.
//!
//! The rewrite applies only where it is exact: the outer row is named only
//! in equalities of the subquery's `WHERE` (each `inner = outer`) and in
//! conditions on the outer row alone (which join as they are); the
//! subquery reads plain tables, uses no window or `DISTINCT`, aggregates
//! only under a plain `GROUP BY` (an ungrouped aggregate gives a row even
//! where nothing matches); its `LIMIT`/`OFFSET` are integers, and the
//! enclosing select lists no bare `*` (which would show the numbering
//! columns; `alias.*` is listed out). Anything else is left for DataFusion,
//! which refuses it as before.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Ident, JoinConstraint, JoinOperator, LimitClause, OrderByKind, Query,
    Select, SelectItem, SelectItemQualifiedWildcardKind, SetExpr, TableAlias, TableAliasColumnDef,
    TableFactor, Value,
};

use super::compat::{aggregates, conjunction, conjuncts, is_correlation, references};

const KEY: &str = "pgaccel_lateral_key_";
const ROW: &str = "pgaccel_lateral_row";
const ALIAS: &str = "pgaccel_lateral";

/// Rewrites each lateral top-`n` subquery in `select`'s FROM as the module
/// doc says.
pub(super) fn top_rows_per_outer_row(select: &mut Select) {
    if select
        .projection
        .iter()
        .any(|item| matches!(item, SelectItem::Wildcard(_)))
    {
        return;
    }
    // `s.*` lists the subquery's columns by name, without the added ones.
    let expanded: Vec<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                Some(name.to_string().to_lowercase())
            }
            _ => None,
        })
        .collect();
    let mut filters = Vec::new();
    let mut listed: Vec<(String, Vec<Expr>)> = Vec::new();
    for (at, table) in select.from.iter_mut().enumerate() {
        // `FROM c, LATERAL (...) s`: an inner join, whose conditions go to
        // the WHERE clause.
        if at > 0
            && table.joins.is_empty()
            && let Some(rewrite) = numbered(&table.relation, &expanded)
        {
            table.relation = rewrite.derived;
            filters.extend(rewrite.conditions);
            listed.extend(rewrite.columns);
        }
        for join in &mut table.joins {
            let on = match &join.join_operator {
                JoinOperator::CrossJoin(JoinConstraint::None) => None,
                JoinOperator::Join(JoinConstraint::On(on))
                | JoinOperator::Inner(JoinConstraint::On(on))
                | JoinOperator::Left(JoinConstraint::On(on))
                | JoinOperator::LeftOuter(JoinConstraint::On(on)) => Some(on.clone()),
                _ => continue,
            };
            let Some(rewrite) = numbered(&join.relation, &expanded) else {
                continue;
            };
            let mut conditions = rewrite.conditions;
            if let Some(on) = on
                && !matches!(&on, Expr::Value(v) if v.value == Value::Boolean(true))
            {
                conditions.insert(0, on);
            }
            let Some(on) = conjunction(conditions) else {
                continue;
            };
            join.relation = rewrite.derived;
            listed.extend(rewrite.columns);
            join.join_operator = match &join.join_operator {
                JoinOperator::Left(_) => JoinOperator::Left(JoinConstraint::On(on)),
                JoinOperator::LeftOuter(_) => JoinOperator::LeftOuter(JoinConstraint::On(on)),
                _ => JoinOperator::Inner(JoinConstraint::On(on)),
            };
        }
    }
    if !listed.is_empty() {
        select.projection = std::mem::take(&mut select.projection)
            .into_iter()
            .flat_map(|item| {
                let columns = match &item {
                    SelectItem::QualifiedWildcard(
                        SelectItemQualifiedWildcardKind::ObjectName(name),
                        _,
                    ) => {
                        let name = name.to_string().to_lowercase();
                        listed.iter().find(|(alias, _)| *alias == name)
                    }
                    _ => None,
                };
                match columns {
                    Some((_, columns)) => columns
                        .iter()
                        .cloned()
                        .map(SelectItem::UnnamedExpr)
                        .collect(),
                    None => vec![item],
                }
            })
            .collect();
    }
    if filters.is_empty() {
        return;
    }
    filters.splice(0..0, select.selection.take());
    select.selection = conjunction(filters);
}

/// A lateral subquery rewritten by [`numbered`].
struct Rewrite {
    derived: TableFactor,
    /// What joins it to the outer row.
    conditions: Vec<Expr>,
    /// Its alias and its columns, when the enclosing select reads `alias.*`.
    columns: Option<(String, Vec<Expr>)>,
}

/// `factor`, a lateral top-`n` subquery, as a numbered derived table, and
/// the conditions that join it to the outer row; `None` when it is not one
/// the rewrite keeps exact. `expanded` are the relations the enclosing
/// select reads with `alias.*`, whose columns must then be known by name.
fn numbered(factor: &TableFactor, expanded: &[String]) -> Option<Rewrite> {
    let TableFactor::Derived {
        lateral: true,
        subquery,
        alias,
        sample: None,
    } = factor
    else {
        return None;
    };
    let (first, count) = limits(subquery)?;
    let last = first.checked_add(count)?;
    if subquery.with.is_some() || subquery.fetch.is_some() || !subquery.locks.is_empty() {
        return None;
    }
    let SetExpr::Select(inner) = subquery.body.as_ref() else {
        return None;
    };
    // Grouped by plain expressions, or not at all. A grouped subquery
    // groups by the key too, one group per outer value; an aggregate
    // without GROUP BY gives a row even for an outer row nothing matches,
    // which a join cannot.
    let grouped = match &inner.group_by {
        datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, modifiers) => {
            let plain = exprs.iter().all(|e| {
                !matches!(
                    e,
                    Expr::Rollup(_) | Expr::Cube(_) | Expr::GroupingSets(_) | Expr::Tuple(_)
                )
            });
            if !modifiers.is_empty() || !plain {
                return None;
            }
            !exprs.is_empty()
        }
        datafusion::sql::sqlparser::ast::GroupByExpr::All(_) => return None,
    };
    if (!grouped && inner.having.is_some()) || !super::compat::plain_select(inner) {
        return None;
    }
    // Plain tables only: a nested subquery or function could read the
    // outer row where this cannot see it.
    for table in &inner.from {
        for factor in
            std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation))
        {
            if !matches!(factor, TableFactor::Table { args: None, .. }) {
                return None;
            }
        }
    }
    let names = super::compat::relation_names(inner);
    let outer_free = |expr: &Expr| {
        let found = references(expr, &names);
        !found.outer && !found.unknown && !windowed(expr)
    };
    // The select list: plain values, no aggregate or window, and no outer
    // column. A wildcard is `None`: it expands to columns of its own.
    let mut outputs: Vec<Option<(Option<String>, Expr)>> = Vec::new();
    for item in &inner.projection {
        let (alias, expr) = match item {
            SelectItem::UnnamedExpr(expr) => (None, expr),
            SelectItem::ExprWithAlias { expr, alias } => (Some(alias.value.to_lowercase()), expr),
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                outputs.push(None);
                continue;
            }
            _ => return None,
        };
        if !outer_free(expr) || (!grouped && aggregates(expr)) {
            return None;
        }
        outputs.push(Some((alias, expr.clone())));
    }
    let mut join_conditions = Vec::new();
    for table in &inner.from {
        for join in &table.joins {
            let _ = datafusion::sql::sqlparser::ast::visit_expressions(&join.join_operator, |e| {
                join_conditions.push(e.clone());
                ControlFlow::<()>::Continue(())
            });
        }
    }
    if !join_conditions.iter().all(outer_free) {
        return None;
    }
    // The WHERE: conditions on the subquery's rows stay; each `inner =
    // outer` becomes a key.
    let mut kept = Vec::new();
    let mut outer_only = Vec::new();
    let mut keys: Vec<(Expr, Expr)> = Vec::new();
    let mut all = Vec::new();
    if let Some(selection) = &inner.selection {
        conjuncts(selection.clone(), &mut all);
    }
    for condition in all {
        if outer_free(&condition) {
            kept.push(condition);
            continue;
        }
        // A condition on the outer row alone decides whether the subquery
        // has rows for it at all: it joins as it is.
        let found = references(&condition, &names);
        if !found.inner && !found.unknown && !windowed(&condition) {
            outer_only.push(condition);
            continue;
        }
        if !is_correlation(&condition, &names) || windowed(&condition) {
            return None;
        }
        let Expr::BinaryOp { left, right, .. } = condition else {
            return None;
        };
        if references(&left, &names).outer {
            keys.push((*right, *left));
        } else {
            keys.push((*left, *right));
        }
    }
    if keys.is_empty() {
        return None;
    }
    let name = alias
        .as_ref()
        .map_or(ALIAS.to_owned(), |alias| alias.name.value.to_lowercase());
    let listing = expanded.contains(&name);
    let mut visible = Vec::new();
    if listing {
        let named = alias.as_ref().map_or(&[][..], |alias| &alias.columns[..]);
        for (at, output) in outputs.iter().enumerate() {
            let column = match (named.get(at), output) {
                (Some(column), _) => column.name.clone(),
                (None, Some((Some(alias), _))) => Ident::new(alias),
                (None, Some((None, Expr::Identifier(ident)))) => ident.clone(),
                (None, Some((None, Expr::CompoundIdentifier(parts)))) => parts.last()?.clone(),
                _ => return None,
            };
            visible.push(column);
        }
    }
    // The window's order: the subquery's, with output positions and names
    // read as the values they stand for.
    let mut order = Vec::new();
    if let Some(order_by) = &subquery.order_by {
        let OrderByKind::Expressions(exprs) = &order_by.kind else {
            return None;
        };
        for key in exprs {
            if key.with_fill.is_some() {
                return None;
            }
            let mut key = key.clone();
            match &key.expr {
                Expr::Value(v) => {
                    let Value::Number(n, _) = &v.value else {
                        return None;
                    };
                    // Positions count a wildcard's columns, unknown here.
                    if outputs.iter().any(Option::is_none) {
                        return None;
                    }
                    let at = n.parse::<usize>().ok()?.checked_sub(1)?;
                    let (_, expr) = outputs.get(at)?.as_ref()?;
                    key.expr = expr.clone();
                }
                Expr::Identifier(ident) => {
                    let name = ident.value.to_lowercase();
                    if let Some((_, expr)) = outputs
                        .iter()
                        .flatten()
                        .find(|(alias, _)| alias.as_deref() == Some(name.as_str()))
                    {
                        key.expr = expr.clone();
                    }
                }
                _ => {}
            }
            if !outer_free(&key.expr) || (!grouped && aggregates(&key.expr)) {
                return None;
            }
            order.push(key.to_string());
        }
    }
    let partition: Vec<String> = keys.iter().map(|(inner, _)| inner.to_string()).collect();
    let order = if order.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", order.join(", "))
    };
    let row_number = datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
    )
    .try_with_sql(&format!(
        "row_number() OVER (PARTITION BY {}{order})",
        partition.join(", ")
    ))
    .and_then(|mut parser| parser.parse_expr())
    .ok()?;

    if inner
        .having
        .as_ref()
        .is_some_and(|having| !outer_free(having))
    {
        return None;
    }
    let mut inner = inner.as_ref().clone();
    inner.selection = conjunction(kept);
    if let datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, _) = &mut inner.group_by
        && grouped
    {
        exprs.extend(keys.iter().map(|(key, _)| key.clone()));
    }
    let mut hidden = Vec::new();
    for (at, (key, _)) in keys.iter().enumerate() {
        let name = Ident::new(format!("{KEY}{}", at + 1));
        inner.projection.push(SelectItem::ExprWithAlias {
            expr: key.clone(),
            alias: name.clone(),
        });
        hidden.push(name);
    }
    inner.projection.push(SelectItem::ExprWithAlias {
        expr: row_number,
        alias: Ident::new(ROW),
    });
    hidden.push(Ident::new(ROW));

    let mut alias = alias.clone().unwrap_or(TableAlias {
        explicit: true,
        name: Ident::new(ALIAS),
        columns: Vec::new(),
        at: None,
    });
    if !alias.columns.is_empty() {
        alias.columns.extend(
            hidden
                .iter()
                .map(|name| TableAliasColumnDef::from_name(name.value.clone())),
        );
    }
    let column = |name: &Ident| Expr::CompoundIdentifier(vec![alias.name.clone(), name.clone()]);
    let mut conditions: Vec<Expr> = keys
        .iter()
        .enumerate()
        .map(|(at, (_, outer))| Expr::BinaryOp {
            left: Box::new(column(&hidden[at])),
            op: BinaryOperator::Eq,
            right: Box::new(outer.clone()),
        })
        .collect();
    conditions.extend(outer_only);
    let row = column(&Ident::new(ROW));
    let number = |n: u64| Expr::Value(Value::Number(n.to_string(), false).into());
    conditions.push(Expr::BinaryOp {
        left: Box::new(row.clone()),
        op: BinaryOperator::LtEq,
        right: Box::new(number(last)),
    });
    if first > 0 {
        conditions.push(Expr::BinaryOp {
            left: Box::new(row),
            op: BinaryOperator::Gt,
            right: Box::new(number(first)),
        });
    }
    let subquery = Query {
        body: Box::new(SetExpr::Select(Box::new(inner))),
        order_by: None,
        limit_clause: None,
        ..subquery.as_ref().clone()
    };
    let columns = listing.then(|| (name, visible.iter().map(column).collect()));
    let derived = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(subquery),
        alias: Some(alias),
        sample: None,
    };
    Some(Rewrite {
        derived,
        conditions,
        columns,
    })
}

/// The rows a subquery's `LIMIT n OFFSET m` keeps: `(m, n)`, when both are
/// integers written out.
fn limits(query: &Query) -> Option<(u64, u64)> {
    let Some(LimitClause::LimitOffset {
        limit: Some(limit),
        offset,
        limit_by,
    }) = &query.limit_clause
    else {
        return None;
    };
    if !limit_by.is_empty() {
        return None;
    }
    let integer = |expr: &Expr| match expr {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse::<u64>().ok(),
            _ => None,
        },
        _ => None,
    };
    let count = integer(limit)?;
    let first = match offset {
        Some(offset) => integer(&offset.value)?,
        None => 0,
    };
    Some((first, count))
}

/// Whether `expr` calls a window function.
fn windowed(expr: &Expr) -> bool {
    datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| match e {
        Expr::Function(function) if function.over.is_some() => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

#[cfg(test)]
mod tests {
    use super::super::compat::rewritten as rewrite;

    #[test]
    fn top_rows_join_on_the_key_and_the_row_number() {
        assert_eq!(
            rewrite(
                "SELECT c.id, x.amount FROM c LEFT JOIN LATERAL (SELECT amount FROM o \
                 WHERE o.cid = c.id AND o.paid ORDER BY amount DESC LIMIT 2) x ON true"
            ),
            "SELECT c.id, x.amount FROM c LEFT JOIN (SELECT amount, o.cid AS \
             pgaccel_lateral_key_1, row_number() OVER (PARTITION BY o.cid ORDER BY amount \
             DESC) AS pgaccel_lateral_row FROM o WHERE o.paid) x ON x.pgaccel_lateral_key_1 \
             = c.id AND x.pgaccel_lateral_row <= 2"
        );
        // The comma form is an inner join: its conditions filter; `x.*`
        // lists the subquery's own columns; OFFSET skips rows.
        assert_eq!(
            rewrite(
                "SELECT c.id, x.* FROM c, LATERAL (SELECT o.amount AS a FROM o \
                 WHERE c.id = o.cid AND c.region = 'n' ORDER BY 1 LIMIT 1 OFFSET 1) x"
            ),
            "SELECT c.id, x.a FROM c, (SELECT o.amount AS a, o.cid AS pgaccel_lateral_key_1, \
             row_number() OVER (PARTITION BY o.cid ORDER BY o.amount) AS pgaccel_lateral_row \
             FROM o) x WHERE x.pgaccel_lateral_key_1 = c.id AND c.region = 'n' AND \
             x.pgaccel_lateral_row <= 2 AND x.pgaccel_lateral_row > 1"
        );
        // A grouped subquery groups by the key too.
        assert_eq!(
            rewrite(
                "SELECT c.id, x.total FROM c CROSS JOIN LATERAL (SELECT sum(amount) AS total \
                 FROM o WHERE o.cid = c.id GROUP BY o.status ORDER BY 1 DESC LIMIT 1) x"
            ),
            "SELECT c.id, x.total FROM c INNER JOIN (SELECT sum(amount) AS total, o.cid AS \
             pgaccel_lateral_key_1, row_number() OVER (PARTITION BY o.cid ORDER BY sum(amount) \
             DESC) AS pgaccel_lateral_row FROM o GROUP BY o.status, o.cid) x ON \
             x.pgaccel_lateral_key_1 = c.id AND x.pgaccel_lateral_row <= 1"
        );
    }

    #[test]
    fn inexact_forms_are_left_alone() {
        for sql in [
            // The outer row in an inequality.
            "SELECT c.id, x.k FROM c LEFT JOIN LATERAL (SELECT o.id AS k FROM o \
             WHERE o.cid = c.id AND o.qty > c.n ORDER BY o.id LIMIT 1) x ON true",
            // An ungrouped aggregate gives a row even where nothing matches.
            "SELECT c.id, x.s FROM c LEFT JOIN LATERAL (SELECT sum(o.qty) AS s FROM o \
             WHERE o.cid = c.id LIMIT 1) x ON true",
            // `*` would show the numbering columns.
            "SELECT * FROM c LEFT JOIN LATERAL (SELECT o.id FROM o WHERE o.cid = c.id \
             LIMIT 1) x ON true",
            // The outer row in the select list.
            "SELECT x.v FROM c LEFT JOIN LATERAL (SELECT o.id + c.id AS v FROM o \
             WHERE o.cid = c.id LIMIT 1) x ON true",
            // Not a literal limit.
            "SELECT x.v FROM c LEFT JOIN LATERAL (SELECT o.id AS v FROM o \
             WHERE o.cid = c.id LIMIT c.n) x ON true",
        ] {
            assert!(rewrite(sql).contains("LATERAL"), "{sql}");
        }
    }
}
