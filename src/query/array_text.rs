//! An array written as text and cast to an array type (`'{1,2}'::int[]`,
//! `CAST('{a,"b,c",NULL}' AS text[])`), read as PostgreSQL's `array_in`
//! reads it: quoted elements keep their commas, blanks and backslash
//! escapes, and an unquoted `NULL` is a NULL element. The text becomes an
//! `ARRAY[...]` of its elements before planning, since the engine casts no
//! text to a list.
//!
//! Text of more than one dimension (`'{{1,2},{3,4}}'`), or that is not an
//! array literal at all, is left as written: the cast then fails as it
//! would have, rather than giving a flattened array.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Array, ArrayElemTypeDef, CastKind, DataType, Expr, Statement, Value, VisitMut, VisitorMut,
};
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;

/// The statement rewrite (see the module documentation).
#[derive(Debug)]
pub struct ArrayTextLiterals;

impl SqlStatementRewriteRule for ArrayTextLiterals {
    fn rewrite(&self, mut statement: Statement) -> Statement {
        let _ = statement.visit(&mut Visitor);
        statement
    }
}

struct Visitor;

impl VisitorMut for Visitor {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr: value,
            data_type: DataType::Array(element),
            ..
        } = expr
            && let Expr::Value(literal) = value.as_ref()
            && let Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text) =
                &literal.value
            && let Some(array) = array_of(text, element)
        {
            **value = array;
        }
        ControlFlow::Continue(())
    }
}

/// The `ARRAY[...]` that `text` spells for an array of `element`; `None`
/// when it is not a one-dimensional array literal.
fn array_of(text: &str, element: &ArrayElemTypeDef) -> Option<Expr> {
    let element_type = match element {
        ArrayElemTypeDef::AngleBracket(data_type)
        | ArrayElemTypeDef::SquareBracket(data_type, _)
        | ArrayElemTypeDef::Parenthesis(data_type) => data_type.as_ref(),
        ArrayElemTypeDef::None => return None,
    };
    if depth(text) != 1 {
        return None;
    }
    let elements = super::json::array_literal(text).ok()?;
    let numbers = number_kind(element_type);
    let elem = elements
        .into_iter()
        .map(|element| {
            Expr::value(match element {
                None => Value::Null,
                Some(number) if numbers.is_some_and(|integers| is_number(&number, integers)) => {
                    Value::Number(number, false)
                }
                Some(text) => Value::SingleQuotedString(text),
            })
        })
        .collect();
    Some(Expr::Array(Array { elem, named: true }))
}

/// How deeply the braces of `text` nest, outside quoted elements.
fn depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut quoted, mut escaped) = (false, false);
    for c in text.chars() {
        match (escaped, quoted, c) {
            (true, ..) => escaped = false,
            (false, _, '\\') => escaped = true,
            (false, _, '"') => quoted = !quoted,
            (false, false, '{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, false, '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// For an element type that is a number, whether it is an integer type;
/// `None` for any other type (whose elements stay text, cast by the
/// engine as `'x'::type` is).
fn number_kind(element_type: &DataType) -> Option<bool> {
    match element_type {
        DataType::Int(_)
        | DataType::Integer(_)
        | DataType::Int2(_)
        | DataType::Int4(_)
        | DataType::Int8(_)
        | DataType::SmallInt(_)
        | DataType::BigInt(_) => Some(true),
        DataType::Numeric(_)
        | DataType::Decimal(_)
        | DataType::Real
        | DataType::Float4
        | DataType::Float8
        | DataType::Double(_)
        | DataType::DoublePrecision => Some(false),
        _ => None,
    }
}

/// Whether `text` is written as a number (`-1`, `2.5`, `1e3`; only
/// digits for an integer type), which the element is then read as, as an
/// `ARRAY[...]` of numbers is. Anything else stays text, so that the cast
/// refuses `'{2.5}'::int[]` as PostgreSQL does rather than round it.
fn is_number(text: &str, integers: bool) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if integers {
        return !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit());
    }
    unsigned.bytes().any(|b| b.is_ascii_digit())
        && unsigned
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_digit() || b == b'.')
        && unsigned
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && text.parse::<f64>().is_ok()
}

#[cfg(test)]
mod tests {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    use super::*;

    fn rewritten(sql: &str) -> String {
        let statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        ArrayTextLiterals.rewrite(statement).to_string()
    }

    #[test]
    fn array_text_is_read_as_array_in_reads_it() {
        assert_eq!(
            rewritten(r#"SELECT '{a, NULL,"NULL","b,c", " x "}'::TEXT[]"#),
            "SELECT ARRAY['a', NULL, 'NULL', 'b,c', ' x ']::TEXT[]"
        );
        assert_eq!(
            rewritten("SELECT CAST('{1, -2,NULL, 2.5}' AS INT[])"),
            "SELECT CAST(ARRAY[1, -2, NULL, '2.5'] AS INT[])"
        );
        assert_eq!(
            rewritten("SELECT '{1.50,-2,1e3}'::NUMERIC[]"),
            "SELECT ARRAY[1.50, -2, 1e3]::NUMERIC[]"
        );
        assert_eq!(
            rewritten("SELECT '{2024-01-01}'::DATE[]"),
            "SELECT ARRAY['2024-01-01']::DATE[]"
        );
        assert_eq!(rewritten("SELECT '{}'::INT[]"), "SELECT ARRAY[]::INT[]");
        // Two dimensions, or no array literal: left as written.
        for sql in ["SELECT '{{1,2},{3,4}}'::INT[]", "SELECT '{1,2'::INT[]"] {
            assert_eq!(rewritten(sql), sql);
        }
    }
}
