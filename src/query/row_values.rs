//! Row constructors compared as PostgreSQL compares them, rewritten before
//! planning into comparisons of their fields:
//!
//! - `(a, b) = (c, d)` is `a = c AND b = d`, `<>` the `OR` of `<>`s (NULL
//!   where no pair decides, as in PostgreSQL);
//! - `(a, b) < (c, d)` compares left to right, the first pair that is not
//!   equal deciding: `a < c OR (a = c AND b < d)` (the same NULLs as
//!   PostgreSQL's, which stops at the first pair that is unequal or NULL);
//! - `(a, b) IS [NOT] DISTINCT FROM (c, d)` field by field;
//! - `(a, b) [NOT] IN ((1, 2), (3, 4))` as the `OR` of row equalities;
//! - `(a, b) [NOT] IN (SELECT x, y ...)` where it is a condition of a
//!   `WHERE` (there NULL and false both drop the row) as `[NOT] EXISTS`
//!   over the subquery's rows: "the latest order per customer",
//!   `WHERE (customer_id, placed) IN (SELECT customer_id, max(placed) ...)`.
//!
//! `ROW(a, b)` is the same row as `(a, b)`. DataFusion compares row
//! constructors as structs, whose NULL fields compare as values, and does
//! not plan a row `IN` a subquery: one elsewhere than in a `WHERE` is
//! refused (0A000).

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Select, UnaryOperator,
    Value,
};

/// A row comparison or `IN` list of `expr`'s own, as comparisons of
/// fields; `None` for any other expression.
pub(super) fn rewrite(expr: &Expr) -> Option<Expr> {
    match expr {
        Expr::BinaryOp { left, op, right } => {
            let (Some(left), Some(right)) = (row_fields(left), row_fields(right)) else {
                return None;
            };
            compare(&left, op, &right)
        }
        Expr::IsDistinctFrom(left, right) | Expr::IsNotDistinctFrom(left, right) => {
            let (Some(left), Some(right)) = (row_fields(left), row_fields(right)) else {
                return None;
            };
            if left.len() != right.len() || left.is_empty() {
                return None;
            }
            let distinct = matches!(expr, Expr::IsDistinctFrom(..));
            let pairs = left.iter().zip(&right).map(|(l, r)| {
                let (l, r) = (Box::new(l.clone()), Box::new(r.clone()));
                if distinct {
                    Expr::IsDistinctFrom(l, r)
                } else {
                    Expr::IsNotDistinctFrom(l, r)
                }
            });
            let op = if distinct {
                BinaryOperator::Or
            } else {
                BinaryOperator::And
            };
            combine(pairs, op)
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => {
            let fields = row_fields(expr)?;
            let rows = list
                .iter()
                .map(|row| compare(&fields, &BinaryOperator::Eq, &row_fields(row)?))
                .collect::<Option<Vec<_>>>()?;
            let any = combine(rows, BinaryOperator::Or)?;
            Some(if *negated {
                Expr::UnaryOp {
                    op: UnaryOperator::Not,
                    expr: Box::new(any),
                }
            } else {
                any
            })
        }
        // One of `WHERE`'s conditions is rewritten before this is reached.
        Expr::InSubquery { expr, .. } if row_fields(expr).is_some() => Some(super::compat::call(
            super::functions::REQUIRE,
            vec![
                Expr::value(Value::Boolean(false)),
                Expr::value(Value::SingleQuotedString(
                    super::sqlstate::FEATURE_NOT_SUPPORTED.to_owned(),
                )),
                Expr::value(Value::SingleQuotedString(
                    "a row IN (subquery) is supported only as a condition of WHERE".to_owned(),
                )),
            ],
        )),
        _ => None,
    }
}

/// The fields of a row constructor, `(a, b)` or `ROW(a, b)`.
fn row_fields(expr: &Expr) -> Option<Vec<Expr>> {
    match unnested(expr) {
        Expr::Tuple(fields) => Some(fields.clone()),
        Expr::Function(function)
            if function.name.to_string().eq_ignore_ascii_case("row")
                && function.filter.is_none()
                && function.over.is_none() =>
        {
            let FunctionArguments::List(list) = &function.args else {
                return None;
            };
            list.args
                .iter()
                .map(|arg| match arg {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(field)) => Some(field.clone()),
                    _ => None,
                })
                .collect()
        }
        _ => None,
    }
}

/// `select`'s `WHERE` with each condition `(a, b) [NOT] IN (subquery)` as
/// `[NOT] EXISTS` over the subquery's rows.
pub(super) fn row_in_subqueries(select: &mut Select) {
    let Some(selection) = &select.selection else {
        return;
    };
    let mut conditions = Vec::new();
    super::compat::conjuncts(selection.clone(), &mut conditions);
    let mut changed = false;
    for condition in &mut conditions {
        if let Some(exists) = as_exists(condition) {
            *condition = exists;
            changed = true;
        }
    }
    if changed {
        select.selection = super::compat::conjunction(conditions);
    }
}

fn as_exists(condition: &Expr) -> Option<Expr> {
    let Expr::InSubquery {
        expr,
        subquery,
        negated,
    } = condition
    else {
        return None;
    };
    let fields = row_fields(expr)?;
    let names: Vec<String> = (1..=fields.len())
        .map(|n| format!("pgaccel_row_{n}"))
        .collect();
    let matched = fields
        .iter()
        .zip(&names)
        .map(|(field, name)| format!("({field}) = pgaccel_rows.{name}"))
        .collect::<Vec<_>>()
        .join(" AND ");
    // NOT IN holds when every row of the subquery is unequal: none where
    // the comparison is true or NULL.
    let (not, condition) = if *negated {
        ("NOT ", format!("({matched}) IS NOT FALSE"))
    } else {
        ("", matched)
    };
    let sql = format!(
        "{not}EXISTS (SELECT 1 FROM ({subquery}) AS pgaccel_rows ({}) WHERE {condition})",
        names.join(", ")
    );
    super::compat::parse_expr(&sql)
}

fn unnested(expr: &Expr) -> &Expr {
    match expr {
        Expr::Nested(inner) => unnested(inner),
        other => other,
    }
}

fn pair(left: &Expr, op: BinaryOperator, right: &Expr) -> Expr {
    Expr::BinaryOp {
        left: Box::new(Expr::Nested(Box::new(left.clone()))),
        op,
        right: Box::new(Expr::Nested(Box::new(right.clone()))),
    }
}

/// `exprs` joined by `op` (`AND` or `OR`), each in parentheses.
fn combine(exprs: impl IntoIterator<Item = Expr>, op: BinaryOperator) -> Option<Expr> {
    exprs
        .into_iter()
        .map(|expr| Expr::Nested(Box::new(expr)))
        .reduce(|all, next| Expr::BinaryOp {
            left: Box::new(all),
            op: op.clone(),
            right: Box::new(next),
        })
        .map(|expr| Expr::Nested(Box::new(expr)))
}

/// `(left) op (right)` of rows of equal length as comparisons of fields.
fn compare(left: &[Expr], op: &BinaryOperator, right: &[Expr]) -> Option<Expr> {
    if left.len() != right.len() || left.is_empty() {
        return None;
    }
    let pairs = |op: BinaryOperator| {
        left.iter()
            .zip(right)
            .map(move |(l, r)| pair(l, op.clone(), r))
    };
    match op {
        BinaryOperator::Eq => combine(pairs(BinaryOperator::Eq), BinaryOperator::And),
        BinaryOperator::NotEq => combine(pairs(BinaryOperator::NotEq), BinaryOperator::Or),
        BinaryOperator::Lt | BinaryOperator::LtEq | BinaryOperator::Gt | BinaryOperator::GtEq => {
            let strict = match op {
                BinaryOperator::LtEq => BinaryOperator::Lt,
                BinaryOperator::GtEq => BinaryOperator::Gt,
                other => other.clone(),
            };
            // From the last pair back: l < r OR (l = r AND <the rest>).
            let last = left.len() - 1;
            let mut rest = pair(&left[last], op.clone(), &right[last]);
            for (l, r) in left[..last].iter().zip(&right[..last]).rev() {
                let tie = combine([pair(l, BinaryOperator::Eq, r), rest], BinaryOperator::And)?;
                rest = combine([pair(l, strict.clone(), r), tie], BinaryOperator::Or)?;
            }
            Some(rest)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewritten(sql: &str) -> String {
        let expr = Parser::new(&PostgreSqlDialect {})
            .try_with_sql(sql)
            .unwrap()
            .parse_expr()
            .unwrap();
        rewrite(&expr).map_or("unchanged".to_owned(), |e| e.to_string())
    }

    #[test]
    fn rows_compare_field_by_field() {
        assert_eq!(
            rewritten("(a, b) = (1, 2)"),
            "(((a) = (1)) AND ((b) = (2)))"
        );
        assert_eq!(
            rewritten("(a, b) <> (1, 2)"),
            "(((a) <> (1)) OR ((b) <> (2)))"
        );
        assert_eq!(
            rewritten("(a, b) <= (1, 2)"),
            "(((a) < (1)) OR ((((a) = (1)) AND ((b) <= (2)))))"
        );
        assert_eq!(
            rewritten("(a, b) IN ((1, 2), (3, 4))"),
            "(((((a) = (1)) AND ((b) = (2)))) OR ((((a) = (3)) AND ((b) = (4)))))"
        );
        assert_eq!(rewritten("(a, b) = (1, 2, 3)"), "unchanged");
        assert_eq!(rewritten("a IN (1, 2)"), "unchanged");
    }
}
