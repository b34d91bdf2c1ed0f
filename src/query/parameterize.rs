//! Simple-protocol point lookups that differ only in their key values share
//! one plan.
//!
//! A client on the simple protocol (psql, many ORMs' "raw" paths, pgbench
//! `-M simple`) sends `SELECT ... FROM orders WHERE o_orderkey = 42`, then
//! `... = 43`: every text is new, so a cache keyed by text never hits and
//! each lookup is parsed and planned from scratch, which costs far more than
//! the lookup. Here the literals that pin the table's primary key are
//! replaced by `$n` parameters; the statement in that form is planned once,
//! and each execution binds the literals as parameter values.
//!
//! Only literals whose value converts exactly to the key column's type are
//! bound this way (an integer literal to an integer column, a quoted string
//! to a text or integer column, as PostgreSQL reads an untyped literal);
//! anything else keeps the ordinary path, so the answer is the same either
//! way.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, ObjectName, SetExpr, Statement, TableFactor, UnaryOperator, Value,
    visit_expressions,
};

use crate::config::normalized_identifier;

/// A query statement with its key literals replaced by parameters.
#[derive(Debug)]
pub struct Parameterized {
    /// The SQL text of the statement with `$1`, `$2`, ... in place of the
    /// literals: statements that differ only in those literals share it.
    pub text: String,
    /// The literals taken out, in parameter order.
    pub literals: Vec<Literal>,
}

/// A literal taken out of a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// An integer literal, with its sign.
    Integer(String),
    /// A quoted string: an untyped literal in PostgreSQL's terms.
    Text(String),
}

impl Literal {
    /// The literal as a value of `data_type`, when it is exactly one;
    /// `None` when the statement must take the ordinary path instead.
    pub fn to_value(&self, data_type: &DataType) -> Option<ScalarValue> {
        let text = match self {
            Literal::Integer(text) => text,
            Literal::Text(text) => {
                match data_type {
                    DataType::Utf8 => return Some(ScalarValue::Utf8(Some(text.clone()))),
                    DataType::LargeUtf8 => {
                        return Some(ScalarValue::LargeUtf8(Some(text.clone())));
                    }
                    DataType::Utf8View => return Some(ScalarValue::Utf8View(Some(text.clone()))),
                    _ => {}
                }
                text
            }
        };
        Some(match data_type {
            DataType::Int8 => ScalarValue::Int8(Some(text.parse().ok()?)),
            DataType::Int16 => ScalarValue::Int16(Some(text.parse().ok()?)),
            DataType::Int32 => ScalarValue::Int32(Some(text.parse().ok()?)),
            DataType::Int64 => ScalarValue::Int64(Some(text.parse().ok()?)),
            DataType::UInt8 => ScalarValue::UInt8(Some(text.parse().ok()?)),
            DataType::UInt16 => ScalarValue::UInt16(Some(text.parse().ok()?)),
            DataType::UInt32 => ScalarValue::UInt32(Some(text.parse().ok()?)),
            DataType::UInt64 => ScalarValue::UInt64(Some(text.parse().ok()?)),
            _ => return None,
        })
    }
}

/// The one table a `SELECT ... FROM <table> [WHERE ...]` statement reads;
/// `None` for joins, several tables, subqueries in FROM, set operations and
/// CTEs.
pub fn single_table(statement: &Statement) -> Option<&ObjectName> {
    let Statement::Query(query) = statement else {
        return None;
    };
    if query.with.is_some() {
        return None;
    }
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let [from] = select.from.as_slice() else {
        return None;
    };
    if !from.joins.is_empty() {
        return None;
    }
    match &from.relation {
        TableFactor::Table {
            name, args: None, ..
        } => Some(name),
        _ => None,
    }
}

/// Replaces the literals that pin `key_columns` in the top-level conjuncts
/// of the WHERE clause (`key = 42`, `42 = key`, `key IN (1, 2)`) by
/// parameters. `None` when there is none, or when the statement already has
/// parameters.
pub fn parameterize(statement: &Statement, key_columns: &[String]) -> Option<Parameterized> {
    single_table(statement)?;
    let has_parameters = visit_expressions(statement, |expr| match expr {
        Expr::Value(value) if matches!(value.value, Value::Placeholder(_)) => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    if has_parameters.is_break() {
        return None;
    }
    let mut statement = statement.clone();
    let Statement::Query(query) = &mut statement else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    let mut literals = Vec::new();
    replace_key_literals(select.selection.as_mut()?, key_columns, &mut literals);
    if literals.is_empty() {
        return None;
    }
    Some(Parameterized {
        text: statement.to_string(),
        literals,
    })
}

fn replace_key_literals(expr: &mut Expr, key_columns: &[String], literals: &mut Vec<Literal>) {
    match expr {
        Expr::Nested(inner) => replace_key_literals(inner, key_columns, literals),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            replace_key_literals(left, key_columns, literals);
            replace_key_literals(right, key_columns, literals);
        }
        Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } => {
            if is_key_column(left, key_columns) {
                replace_literal(right, literals);
            } else if is_key_column(right, key_columns) {
                replace_literal(left, literals);
            }
        }
        Expr::InList {
            expr,
            list,
            negated: false,
        } if is_key_column(expr, key_columns)
            && list.iter().all(|item| literal(item).is_some()) =>
        {
            for item in list {
                replace_literal(item, literals);
            }
        }
        _ => {}
    }
}

fn replace_literal(expr: &mut Expr, literals: &mut Vec<Literal>) {
    if let Some(value) = literal(expr) {
        literals.push(value);
        let placeholder = Value::Placeholder(format!("${}", literals.len()));
        *expr = Expr::Value(placeholder.with_empty_span());
    }
}

fn literal(expr: &Expr) -> Option<Literal> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(text, false) if is_integer(text) => Some(Literal::Integer(text.clone())),
            Value::SingleQuotedString(text) => Some(Literal::Text(text.clone())),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Literal::Integer(text) if !text.starts_with('-') => {
                Some(Literal::Integer(format!("-{text}")))
            }
            _ => None,
        },
        _ => None,
    }
}

fn is_integer(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// Whether `expr` names one of `key_columns` (`key` or `alias.key`), with
/// PostgreSQL's identifier rules: unquoted names fold to lower case.
fn is_key_column(expr: &Expr, key_columns: &[String]) -> bool {
    let ident = match expr {
        Expr::Identifier(ident) => ident,
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(ident) => ident,
            None => return false,
        },
        _ => return false,
    };
    let name = normalized_identifier(ident);
    key_columns.contains(&name)
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn parse(sql: &str) -> Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0)
    }

    fn keys(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn key_literals_become_parameters_and_the_rest_stays() {
        let shaped = parameterize(
            &parse("SELECT * FROM t AS x WHERE x.id = -42 AND (name = 'a' AND 'k' = Code) AND v = 7 LIMIT 1"),
            &keys(&["id", "code"]),
        )
        .unwrap();
        assert_eq!(
            shaped.text,
            "SELECT * FROM t AS x WHERE x.id = $1 AND (name = 'a' AND $2 = Code) AND v = 7 LIMIT 1"
        );
        assert_eq!(
            shaped.literals,
            vec![Literal::Integer("-42".into()), Literal::Text("k".into())]
        );
        let other = parameterize(
            &parse("SELECT * FROM t AS x WHERE x.id = 43 AND (name = 'a' AND 'z' = Code) AND v = 7 LIMIT 1"),
            &keys(&["id", "code"]),
        )
        .unwrap();
        assert_eq!(other.text, shaped.text, "one shape for both");
    }

    #[test]
    fn in_lists_of_literals_are_parameterized_whole() {
        let shaped = parameterize(
            &parse("SELECT a FROM t WHERE id IN (1, 2, 3)"),
            &keys(&["id"]),
        )
        .unwrap();
        assert_eq!(shaped.text, "SELECT a FROM t WHERE id IN ($1, $2, $3)");
        assert!(
            parameterize(
                &parse("SELECT a FROM t WHERE id IN (1, 2 + 1)"),
                &keys(&["id"])
            )
            .is_none()
        );
    }

    #[test]
    fn other_statements_are_left_alone() {
        for sql in [
            "SELECT * FROM t WHERE id = $1",
            "SELECT * FROM t WHERE id = 1.5",
            "SELECT * FROM t WHERE id = NULL",
            "SELECT * FROM t WHERE id = 1 OR id = 2",
            "SELECT * FROM t WHERE \"ID\" = 1",
            "SELECT * FROM t JOIN u ON t.id = u.id WHERE t.id = 1",
            "SELECT * FROM t, u WHERE id = 1",
            "WITH c AS (SELECT 1) SELECT * FROM t WHERE id = 1",
            "SELECT * FROM t WHERE id = 1 UNION SELECT * FROM t WHERE id = 2",
            "SELECT * FROM t WHERE other = 1",
        ] {
            assert!(parameterize(&parse(sql), &keys(&["id"])).is_none(), "{sql}");
        }
    }

    #[test]
    fn literals_convert_only_when_exact() {
        let integer = Literal::Integer("42".into());
        assert_eq!(
            integer.to_value(&DataType::Int64),
            Some(ScalarValue::Int64(Some(42)))
        );
        assert_eq!(integer.to_value(&DataType::Utf8), None);
        assert_eq!(integer.to_value(&DataType::Float64), None);
        assert_eq!(
            Literal::Integer("300".into()).to_value(&DataType::Int8),
            None
        );
        assert_eq!(
            Literal::Text("7".into()).to_value(&DataType::Int32),
            Some(ScalarValue::Int32(Some(7)))
        );
        assert_eq!(Literal::Text("x".into()).to_value(&DataType::Int32), None);
        assert_eq!(
            Literal::Text("x".into()).to_value(&DataType::Utf8),
            Some(ScalarValue::Utf8(Some("x".into())))
        );
        assert_eq!(
            Literal::Text("2024-01-01".into()).to_value(&DataType::Date32),
            None
        );
    }
}
