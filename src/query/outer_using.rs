//! The join column of `a RIGHT JOIN b USING (k)` is `b.k`, and of `a FULL
//! JOIN b USING (k)` `COALESCE(a.k, b.k)`: an unmatched row of `b` has its
//! key there. DataFusion reads an unqualified `k` as `a.k`, which is NULL on
//! those rows, so before planning every unqualified `k` of the select (its
//! list, `WHERE`, `GROUP BY`, `HAVING` and the query's `ORDER BY`, not its
//! subqueries) is written as PostgreSQL reads it. (`SELECT *` over such a
//! join is listed by [`super::using_joins`].) Handled for a FROM of one such
//! join between two named relations, the form queries write.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, JoinConstraint, JoinOperator, ObjectNamePart, OrderByKind, Query,
    Select, SelectItem, SetExpr, Statement, TableFactor, VisitMut, VisitorMut,
};

/// Rewrites the join columns of every outer `USING` join in `statement`.
pub fn qualify_outer_using_columns(statement: &mut Statement) {
    struct Queries;
    impl VisitorMut for Queries {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            rewrite_query(query);
            ControlFlow::Continue(())
        }
    }
    let _ = statement.visit(&mut Queries);
}

fn rewrite_query(query: &mut Query) {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    // `SELECT *` lists the join columns in `super::using_joins`, which
    // reads the select as written.
    if select.projection.iter().any(|item| {
        matches!(
            item,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    }) {
        return;
    }
    let Some(keys) = outer_using_keys(select) else {
        return;
    };
    let replace = |expr: &mut Expr| replace_keys(expr, &keys);
    for item in &mut select.projection {
        match item {
            // A bare key keeps its name.
            SelectItem::UnnamedExpr(Expr::Identifier(ident)) => {
                if let Some((_, value)) = keys.iter().find(|(key, _)| same(key, ident)) {
                    *item = SelectItem::ExprWithAlias {
                        expr: value.clone(),
                        alias: ident.clone(),
                    };
                }
            }
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => replace(expr),
            _ => {}
        }
    }
    if let Some(selection) = &mut select.selection {
        replace(selection);
    }
    if let GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
        exprs.iter_mut().for_each(replace);
    }
    if let Some(having) = &mut select.having {
        replace(having);
    }
    // A bare name in ORDER BY is an output column first (the key kept
    // bare above is one, under its own name).
    let outputs: Vec<Ident> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.clone()),
            SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Some(ident.clone()),
            _ => None,
        })
        .collect();
    if let Some(order_by) = &mut query.order_by
        && let OrderByKind::Expressions(exprs) = &mut order_by.kind
    {
        for order in exprs {
            if let Expr::Identifier(ident) = &order.expr
                && outputs.iter().any(|output| same(output, ident))
            {
                continue;
            }
            replace(&mut order.expr);
        }
    }
}

/// Each join column of the select's one outer `USING` join, with the value
/// PostgreSQL gives it.
fn outer_using_keys(select: &Select) -> Option<Vec<(Ident, Expr)>> {
    let [table] = select.from.as_slice() else {
        return None;
    };
    let [join] = table.joins.as_slice() else {
        return None;
    };
    let (columns, full) = match &join.join_operator {
        JoinOperator::Right(JoinConstraint::Using(columns))
        | JoinOperator::RightOuter(JoinConstraint::Using(columns)) => (columns, false),
        JoinOperator::FullOuter(JoinConstraint::Using(columns)) => (columns, true),
        _ => return None,
    };
    let (left, right) = (
        relation_name(&table.relation)?,
        relation_name(&join.relation)?,
    );
    columns
        .iter()
        .map(|column| {
            let ObjectNamePart::Identifier(key) = column.0.last()? else {
                return None;
            };
            let side =
                |relation: &Ident| Expr::CompoundIdentifier(vec![relation.clone(), key.clone()]);
            let value = if full {
                super::compat::call("coalesce", vec![side(&left), side(&right)])
            } else {
                side(&right)
            };
            Some((key.clone(), value))
        })
        .collect()
}

/// The name a relation's columns are qualified with.
fn relation_name(factor: &TableFactor) -> Option<Ident> {
    match factor {
        TableFactor::Table {
            alias: Some(alias), ..
        }
        | TableFactor::Derived {
            alias: Some(alias), ..
        } => Some(alias.name.clone()),
        TableFactor::Table { name, .. } => match name.0.last()? {
            ObjectNamePart::Identifier(ident) => Some(ident.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `ident` names `key` (unquoted names fold case).
fn same(key: &Ident, ident: &Ident) -> bool {
    if key.quote_style.is_none() && ident.quote_style.is_none() {
        key.value.eq_ignore_ascii_case(&ident.value)
    } else {
        key.value == ident.value
    }
}

/// Replaces the unqualified join columns in `expr`, outside subqueries.
fn replace_keys(expr: &mut Expr, keys: &[(Ident, Expr)]) {
    struct Keys<'a> {
        keys: &'a [(Ident, Expr)],
        subqueries: usize,
    }
    impl VisitorMut for Keys<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            self.subqueries += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
            self.subqueries -= 1;
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
            if self.subqueries == 0
                && let Expr::Identifier(ident) = expr
                && let Some((_, value)) = self.keys.iter().find(|(key, _)| same(key, ident))
            {
                *expr = value.clone();
            }
            ControlFlow::Continue(())
        }
    }
    let _ = expr.visit(&mut Keys {
        keys,
        subqueries: 0,
    });
}
