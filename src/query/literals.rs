//! Integer literals typed as PostgreSQL types them: a literal that fits in
//! 32 bits is `int4` (`SELECT 1` returns an `int4` column, which drivers
//! decode as a 32-bit integer), a larger one `int8`. DataFusion reads every
//! integer literal as `int8`, so such literals are wrapped in a cast to `int4`
//! before planning.
//!
//! Positional references are left alone: `ORDER BY 1`, `GROUP BY 1` and
//! `LIMIT`/`OFFSET` must stay plain numbers, in the outer query and in every
//! subquery.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, GroupByExpr, LimitClause, OrderBy, Query, Select, Statement, Value,
    VisitMut, VisitorMut,
};

/// Types the integer literals of a query statement as PostgreSQL would.
pub fn apply_postgres_literal_types(statement: &mut Statement) {
    if let Statement::Query(query) = statement {
        let _ = query.visit(&mut IntegerLiterals::default());
    }
}

#[derive(Default)]
struct IntegerLiterals {
    /// ORDER BY and LIMIT clauses set aside while a query's other parts are
    /// visited, restored after.
    query_clauses: Vec<(Option<OrderBy>, Option<LimitClause>)>,
    /// GROUP BY clauses set aside the same way.
    group_by: Vec<GroupByExpr>,
}

impl VisitorMut for IntegerLiterals {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.query_clauses
            .push((query.order_by.take(), query.limit_clause.take()));
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some((order_by, limit)) = self.query_clauses.pop() {
            query.order_by = order_by;
            query.limit_clause = limit;
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        let empty = GroupByExpr::Expressions(Vec::new(), Vec::new());
        self.group_by
            .push(std::mem::replace(&mut select.group_by, empty));
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        if let Some(group_by) = self.group_by.pop() {
            select.group_by = group_by;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Value(value) = expr
            && let Value::Number(text, false) = &value.value
            && text.parse::<i32>().is_ok()
        {
            *expr = Expr::Cast {
                kind: CastKind::Cast,
                expr: Box::new(expr.clone()),
                data_type: DataType::Int(None),
                array: false,
                format: None,
            };
        }
        ControlFlow::Continue(())
    }
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
            rewrite("SELECT a FROM t WHERE b = 7"),
            "SELECT a FROM t WHERE b = CAST(7 AS INT)"
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
