//! Integer literals typed as PostgreSQL types them: a literal that fits in
//! 32 bits is `int4` (`SELECT 1` returns an `int4` column, which drivers
//! decode as a 32-bit integer), a larger one `int8`. DataFusion reads every
//! integer literal as `int8`, so such literals are wrapped in a cast to `int4`
//! before planning.
//!
//! A numeric literal beyond what DataFusion's decimal holds (`1e300`, as
//! drivers print large doubles) is read as `float8`: the nearest value
//! pgaccel can compute with, where PostgreSQL's numeric would hold it
//! exactly.
//!
//! Positional references are left alone: `ORDER BY 1`, `GROUP BY 1` and
//! `LIMIT`/`OFFSET` must stay plain numbers, in the outer query and in every
//! subquery. Every other literal is typed the same way wherever it appears,
//! so an expression repeated in the select list and in `GROUP BY` or `ORDER
//! BY` (`CASE WHEN x > 100 THEN 'a' END`, as BI tools write it) stays
//! identical and still matches.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, GroupByExpr, LimitClause, NamedWindowDefinition, NamedWindowExpr,
    OrderByKind, Query, Select, Statement, UnaryOperator, Value, VisitMut, VisitorMut,
    WindowFrameBound, WindowSpec, WindowType,
};

/// Types the integer literals of a query statement as PostgreSQL would.
pub fn apply_postgres_literal_types(statement: &mut Statement) {
    match statement {
        Statement::Query(query) => {
            let _ = query.visit(&mut IntegerLiterals::default());
        }
        Statement::Explain { statement, .. } => apply_postgres_literal_types(statement),
        _ => {}
    }
}

#[derive(Default)]
struct IntegerLiterals {
    /// LIMIT clauses set aside while a query's other parts are visited,
    /// restored after.
    limits: Vec<Option<LimitClause>>,
}

/// Marks the positional references of `exprs` (bare integers) so the
/// visitor leaves them alone: the `long` flag of a number literal, which
/// PostgreSQL syntax never sets, is borrowed for the visit.
fn mark_positions<'a>(exprs: impl Iterator<Item = &'a mut Expr>, marked: bool) {
    for expr in exprs {
        if let Expr::Value(value) = expr
            && let Value::Number(_, long) = &mut value.value
        {
            *long = marked;
        }
    }
}

fn order_by_exprs(query: &mut Query) -> impl Iterator<Item = &mut Expr> {
    query
        .order_by
        .iter_mut()
        .flat_map(|order_by| match &mut order_by.kind {
            OrderByKind::Expressions(exprs) => exprs.iter_mut().map(|e| &mut e.expr).collect(),
            OrderByKind::All(_) => Vec::new(),
        })
}

fn group_by_exprs(select: &mut Select) -> impl Iterator<Item = &mut Expr> {
    match &mut select.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs.iter_mut(),
        GroupByExpr::All(_) => [].iter_mut(),
    }
}

/// The offsets of a window frame (`ROWS BETWEEN 2 PRECEDING AND 1
/// FOLLOWING`), which DataFusion reads only as plain numbers.
fn frame_offsets(expr: &mut Expr) -> Vec<&mut Expr> {
    let Expr::Function(function) = expr else {
        return Vec::new();
    };
    let Some(WindowType::WindowSpec(spec)) = &mut function.over else {
        return Vec::new();
    };
    spec_offsets(spec)
}

/// The frame offsets of the windows a select names (`WINDOW w AS (ORDER
/// BY k ROWS 1 PRECEDING)`).
fn named_window_offsets(select: &mut Select) -> impl Iterator<Item = &mut Expr> {
    select
        .named_window
        .iter_mut()
        .flat_map(|NamedWindowDefinition(_, window)| match window {
            NamedWindowExpr::WindowSpec(spec) => spec_offsets(spec),
            NamedWindowExpr::NamedWindow(_) => Vec::new(),
        })
}

/// The offsets of `spec`'s frame.
pub(super) fn spec_offsets(spec: &mut WindowSpec) -> Vec<&mut Expr> {
    let Some(frame) = &mut spec.window_frame else {
        return Vec::new();
    };
    std::iter::once(&mut frame.start_bound)
        .chain(frame.end_bound.as_mut())
        .filter_map(|bound| match bound {
            WindowFrameBound::Preceding(Some(offset))
            | WindowFrameBound::Following(Some(offset)) => Some(offset.as_mut()),
            _ => None,
        })
        .collect()
}

impl VisitorMut for IntegerLiterals {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.limits.push(query.limit_clause.take());
        mark_positions(order_by_exprs(query), true);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(limit) = self.limits.pop() {
            query.limit_clause = limit;
        }
        mark_positions(order_by_exprs(query), false);
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        mark_positions(group_by_exprs(select), true);
        mark_positions(named_window_offsets(select), true);
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        mark_positions(group_by_exprs(select), false);
        mark_positions(named_window_offsets(select), false);
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        mark_positions(frame_offsets(expr).into_iter(), true);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        mark_positions(frame_offsets(expr).into_iter(), false);
        // `-2147483648`: PostgreSQL reads the sign with the digits, so the
        // smallest integer is an `int4`, though its digits alone are not.
        if let Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: operand,
        } = expr
            && let Expr::Value(value) = operand.as_ref()
            && let Value::Number(text, false) = &value.value
            && text.parse::<i32>().is_err()
            && format!("-{text}").parse::<i32>().is_ok()
        {
            *expr = Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(expr.clone()),
                data_type: DataType::Int(None),
                array: false,
                format: None,
            };
            return ControlFlow::Continue(());
        }
        let Expr::Value(value) = expr else {
            return ControlFlow::Continue(());
        };
        let Value::Number(text, false) = &value.value else {
            return ControlFlow::Continue(());
        };
        // `1e5`, `2.5e-3`: written out, so that the engine's decimal has
        // PostgreSQL's scale and never a negative one.
        if let Some(plain) = without_exponent(text) {
            value.value = Value::Number(plain, false);
            return ControlFlow::Continue(());
        }
        let (operand, data_type) = if text.parse::<i32>().is_ok() {
            (expr.clone(), DataType::Int(None))
        } else if beyond_decimal(text) {
            (
                Expr::Value(Value::SingleQuotedString(text.clone()).into()),
                DataType::DoublePrecision,
            )
        } else {
            return ControlFlow::Continue(());
        };
        *expr = Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(operand),
            data_type,
            array: false,
            format: None,
        };
        ControlFlow::Continue(())
    }
}

/// A number with an exponent that a decimal holds, written without it as
/// PostgreSQL reads it: the mantissa's digits at scale `max(0, decimals -
/// exponent)`, with a point so that it stays a numeric (`1e5` is
/// `100000.`, `1.50e-3` is `0.00150`). `None` for anything else.
fn without_exponent(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let (mantissa, exponent) = lower.split_once('e')?;
    let exponent = exponent.parse::<i64>().ok()?;
    if beyond_decimal(text) {
        return None;
    }
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if !(whole.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    // Where the point falls in `digits`.
    let point = whole.len() as i64 + exponent;
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}.", "0".repeat(point as usize - digits.len()))
    } else {
        let (integer, decimals) = digits.split_at(point as usize);
        format!("{integer}.{decimals}")
    };
    let integer = plain.split('.').next().unwrap_or_default();
    let trimmed = integer.trim_start_matches('0');
    let integer = if trimmed.is_empty() { "0" } else { trimmed };
    Some(format!(
        "{integer}.{}",
        plain.split_once('.').map_or("", |(_, d)| d)
    ))
}

/// Whether the number `text` (`1e300`, `2.5E-200`) has more digits before
/// or after the point than a 38-digit decimal holds.
fn beyond_decimal(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((mantissa, exponent)) => match exponent.parse::<i64>() {
            Ok(exponent) => (mantissa, exponent),
            Err(_) => return false,
        },
        None => (lower.as_str(), 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let whole = whole.trim_start_matches('0');
    let integer_digits = whole.len() as i64 + exponent;
    let scale = fraction.len() as i64 - exponent;
    integer_digits > 38 || scale > 38
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewrite(sql: &str) -> String {
        let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        apply_postgres_literal_types(&mut statement);
        statement.to_string()
    }

    #[test]
    fn small_integers_become_int4() {
        assert_eq!(
            rewrite("SELECT 1, 2147483648, 1.5"),
            "SELECT CAST(1 AS INT), 2147483648, 1.5"
        );
        assert_eq!(
            rewrite("SELECT -2147483648, -2147483649"),
            "SELECT CAST(-2147483648 AS INT), -2147483649"
        );
        assert_eq!(
            rewrite("SELECT a FROM t WHERE b = 7"),
            "SELECT a FROM t WHERE b = CAST(7 AS INT)"
        );
    }

    #[test]
    fn numbers_beyond_decimal_become_float8() {
        assert_eq!(
            rewrite("SELECT 1e300, 1.5e-200, 1e10, 0.000001"),
            "SELECT CAST('1e300' AS DOUBLE PRECISION), CAST('1.5e-200' AS DOUBLE PRECISION), 10000000000., 0.000001"
        );
    }

    #[test]
    fn exponents_are_written_out_at_postgres_scale() {
        assert_eq!(
            rewrite("SELECT 1e5, 2.5E3, 1.50e-3, 12.5e1, 0e0, 007e-1, .5e1"),
            "SELECT 100000., 2500., 0.00150, 125., 0., 0.7, 5."
        );
    }

    #[test]
    fn repeated_expressions_stay_identical() {
        let sql = "SELECT CASE WHEN x > 100 THEN 'a' END, count(*) FROM t GROUP BY CASE WHEN x > 100 THEN 'a' END ORDER BY CASE WHEN x > 100 THEN 'a' END";
        let rewritten = rewrite(sql);
        let case = "CASE WHEN x > CAST(100 AS INT) THEN 'a' END";
        assert_eq!(rewritten.matches(case).count(), 3, "{rewritten}");
    }

    #[test]
    fn window_frame_offsets_stay_numbers() {
        assert_eq!(
            rewrite(
                "SELECT sum(x) OVER (ORDER BY y ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM t"
            ),
            "SELECT sum(x) OVER (ORDER BY y ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) FROM t"
        );
    }

    #[test]
    fn positional_references_stay_numbers() {
        assert_eq!(
            rewrite("SELECT a, count(*) FROM t GROUP BY 1 ORDER BY 2 DESC LIMIT 5 OFFSET 1"),
            "SELECT a, count(*) FROM t GROUP BY 1 ORDER BY 2 DESC LIMIT 5 OFFSET 1"
        );
        assert_eq!(
            rewrite("SELECT (SELECT b FROM u ORDER BY 1 LIMIT 1) FROM t"),
            "SELECT (SELECT b FROM u ORDER BY 1 LIMIT 1) FROM t"
        );
    }
}
