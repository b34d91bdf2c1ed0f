//! PostgreSQL syntax the SQL parser does not read, tried after it fails:
//! the postfix operators `x ISNULL` and `x NOTNULL`, and
//! `x [NOT] BETWEEN SYMMETRIC a AND b`.
//!
//! The statement's tokens are edited and parsed again: `ISNULL` becomes
//! `IS NULL` and `NOTNULL` `IS NOT NULL`; `SYMMETRIC` (and the default
//! `ASYMMETRIC`) becomes blanks, and each `BETWEEN` it followed is found
//! again in the tree by where its operands stand in the text, then made
//! `(x BETWEEN a AND b) OR (x BETWEEN b AND a)`, PostgreSQL's own
//! definition (which keeps its NULL rules, unlike `least`/`greatest`).
//! A `SYMMETRIC` that cannot be placed in the tree gives up, so the
//! statement fails with its syntax error rather than be read otherwise.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Spanned, Statement, UnaryOperator};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};

/// Whether `sql` may hold the postfix `ISNULL` or `NOTNULL`, which the
/// parser would read as a column's name (`SELECT x ISNULL` names `x`).
pub(super) fn has_postfix_null(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    lower.contains("isnull") || lower.contains("notnull")
}

/// `sql`'s statements read with the variants above; `None` where it has
/// none of them, or still does not parse.
pub(super) fn reparse(sql: &str) -> Option<Vec<Statement>> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .ok()?;
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(sql.match_indices('\n').map(|(at, _)| at + 1))
        .collect();
    // A token's place in `sql` as a byte offset.
    let offset = |location: Location| -> Option<usize> {
        let line_start = *line_starts.get(usize::try_from(location.line).ok()?.checked_sub(1)?)?;
        let column = usize::try_from(location.column).ok()?.checked_sub(1)?;
        Some(match sql[line_start..].char_indices().nth(column) {
            Some((at, _)) => line_start + at,
            None => sql.len(),
        })
    };
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    let word = |i: usize, text: &str| matches!(&tokens[i].token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(text));
    let mut edited = String::with_capacity(sql.len() + 16);
    let mut copied = 0;
    // Where (in `edited`) the first operand after each `SYMMETRIC` starts.
    let mut symmetric_at = Vec::new();
    let mut pending_symmetric = false;
    for (position, &i) in significant.iter().enumerate() {
        let previous = position.checked_sub(1).map(|p| significant[p]);
        let next = significant.get(position + 1).copied();
        let start = offset(tokens[i].span.start)?;
        let end = offset(tokens[i].span.end)?;
        if pending_symmetric {
            edited.push_str(&sql[copied..start]);
            copied = start;
            symmetric_at.push(edited.len());
            pending_symmetric = false;
        }
        // After a value, not a name's qualifier or `AS`, and not a call.
        let postfix = previous.is_some_and(|p| tokens[p].token != Token::Period && !word(p, "as"))
            && next.is_none_or(|n| tokens[n].token != Token::LParen);
        let replacement = if postfix && word(i, "isnull") {
            Some(" IS NULL ".to_owned())
        } else if postfix && word(i, "notnull") {
            Some(" IS NOT NULL ".to_owned())
        } else if previous.is_some_and(|p| word(p, "between"))
            && (word(i, "symmetric") || word(i, "asymmetric"))
        {
            pending_symmetric = word(i, "symmetric");
            Some(" ".repeat(end - start))
        } else {
            None
        };
        if let Some(replacement) = replacement {
            edited.push_str(&sql[copied..start]);
            edited.push_str(&replacement);
            copied = end;
        }
    }
    if copied == 0 {
        return None;
    }
    edited.push_str(&sql[copied..]);
    let mut statements = Parser::parse_sql(&dialect, &edited).ok()?;
    let mut markers: Vec<(u64, u64)> = symmetric_at
        .into_iter()
        .map(|at| location_of(&edited, at))
        .collect();
    for statement in &mut statements {
        let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(statement, |expr| {
            symmetric(expr, &mut markers);
            ControlFlow::<()>::Continue(())
        });
    }
    markers.is_empty().then_some(statements)
}

/// The line and column (from 1) of byte `at` of `text`.
fn location_of(text: &str, at: usize) -> (u64, u64) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |n| n + 1)..]
        .chars()
        .count()
        + 1;
    (line as u64, column as u64)
}

/// `expr` made symmetric where it is a `BETWEEN` whose `SYMMETRIC` stood
/// at one of `markers` (between the end of its tested value and the start
/// of its low bound), which is then taken off `markers`.
fn symmetric(expr: &mut Expr, markers: &mut Vec<(u64, u64)>) {
    let Expr::Between {
        expr: value,
        negated,
        low,
        high,
    } = expr
    else {
        return;
    };
    let (value_end, low_start) = (value.span().end, low.span().start);
    if value_end.line == 0 || low_start.line == 0 {
        return;
    }
    let Some(index) = markers.iter().position(|&marker| {
        (value_end.line, value_end.column) <= marker && marker <= (low_start.line, low_start.column)
    }) else {
        return;
    };
    markers.remove(index);
    let between = |low: &Expr, high: &Expr| {
        Expr::Nested(Box::new(Expr::Between {
            expr: value.clone(),
            negated: false,
            low: Box::new(low.clone()),
            high: Box::new(high.clone()),
        }))
    };
    let either = Expr::Nested(Box::new(Expr::BinaryOp {
        left: Box::new(between(low, high)),
        op: BinaryOperator::Or,
        right: Box::new(between(high, low)),
    }));
    *expr = if *negated {
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr: Box::new(either),
        }
    } else {
        either
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> Option<String> {
        reparse(sql).map(|statements| {
            statements
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    #[test]
    fn postfix_null_tests_read_as_is_null() {
        assert_eq!(
            read("SELECT a ISNULL, b notnull FROM t WHERE isnull(c)").as_deref(),
            Some("SELECT a IS NULL, b IS NOT NULL FROM t WHERE isnull(c)")
        );
        // Quoted, after AS or qualified, it is a name.
        assert_eq!(
            read(r#"SELECT "isnull", a AS isnull, t.notnull FROM t"#),
            None
        );
        // Otherwise the parser would take it for one.
        assert!(has_postfix_null("SELECT 'a' ISNULL"));
        assert_eq!(
            read("SELECT 'a' ISNULL").as_deref(),
            Some("SELECT 'a' IS NULL")
        );
    }

    #[test]
    fn between_symmetric_is_either_order() {
        assert_eq!(
            read("SELECT x FROM t WHERE x BETWEEN SYMMETRIC 10 AND 1").as_deref(),
            Some("SELECT x FROM t WHERE ((x BETWEEN 10 AND 1) OR (x BETWEEN 1 AND 10))")
        );
        assert_eq!(
            read("SELECT x NOT BETWEEN SYMMETRIC\n  y + 1 AND (SELECT 2), 'SYMMETRIC' FROM t")
                .as_deref(),
            Some(
                "SELECT NOT ((x BETWEEN y + 1 AND (SELECT 2)) OR (x BETWEEN (SELECT 2) AND y + 1)), 'SYMMETRIC' FROM t"
            )
        );
        // The default, spelled out, changes nothing.
        assert_eq!(
            read("SELECT 2 BETWEEN ASYMMETRIC 3 AND 1").as_deref(),
            Some("SELECT 2 BETWEEN 3 AND 1")
        );
        // Nested: only the inner one is symmetric.
        assert_eq!(
            read("SELECT (a BETWEEN SYMMETRIC b AND c) BETWEEN d AND e").as_deref(),
            Some("SELECT (((a BETWEEN b AND c) OR (a BETWEEN c AND b))) BETWEEN d AND e")
        );
    }
}
