//! `refresh_sql`: which rows and columns of the source a refresh loads.
//!
//! Only `SELECT <column names or *> FROM <dataset> [WHERE <predicate>]` is
//! accepted. The column list and the predicate are applied to the source
//! table (the predicate runs in the source database where it can), never
//! to a query over other tables, so anything else is refused with a message
//! that names what is not allowed.

use std::fmt;

use datafusion::sql::sqlparser::ast::{
    Expr, GroupByExpr, Ident, SelectItem, SetExpr, Statement, TableFactor, TableWithJoins,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::DatasetName;

const SHAPE: &str = "SELECT <column names or *> FROM <dataset> [WHERE ...]";

/// A validated `refresh_sql`.
#[derive(Clone, PartialEq, Eq)]
pub struct RefreshSql {
    text: String,
    /// The table named in FROM, as written (one or two parts, normalized).
    table: Vec<String>,
    /// The selected columns; `None` for `*`.
    columns: Option<Vec<String>>,
    /// The WHERE predicate as SQL text.
    filter: Option<String>,
}

impl RefreshSql {
    /// Parses and checks the shape of `text`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<RefreshSql, String> {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, text)
            .map_err(|error| format!("is not valid SQL ({error}); expected {SHAPE}"))?;
        let statement = match statements.len() {
            1 => statements.remove(0),
            _ => return Err(format!("must be exactly one statement: {SHAPE}")),
        };
        let Statement::Query(query) = statement else {
            return Err(format!("must be a SELECT statement: {SHAPE}"));
        };
        if query.with.is_some() {
            return Err(format!("cannot use WITH: {SHAPE}"));
        }
        if query.order_by.is_some() || query.limit_clause.is_some() || query.fetch.is_some() {
            return Err(format!("cannot use ORDER BY, LIMIT or FETCH: {SHAPE}"));
        }
        let SetExpr::Select(select) = *query.body else {
            return Err(format!(
                "must be a single SELECT (no UNION, VALUES or subquery): {SHAPE}"
            ));
        };
        let grouped =
            !matches!(&select.group_by, GroupByExpr::Expressions(exprs, _) if exprs.is_empty());
        if select.distinct.is_some() || grouped || select.having.is_some() {
            return Err(format!("cannot use DISTINCT, GROUP BY or HAVING: {SHAPE}"));
        }
        let [from] = select.from.as_slice() else {
            return Err(format!("must read exactly one table, the dataset: {SHAPE}"));
        };
        let table = dataset_table(from, "must read the dataset by name", SHAPE)?;
        let columns = match select.projection.as_slice() {
            [SelectItem::Wildcard(_)] => None,
            items => Some(
                items
                    .iter()
                    .map(column_name)
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(RefreshSql {
            text: text.trim().to_owned(),
            table,
            columns,
            filter: select.selection.as_ref().map(ToString::to_string),
        })
    }

    /// Whether FROM names `dataset` (`orders` or `shop.orders` for the
    /// dataset `shop.orders`; `orders` or `public.orders` for `orders`).
    pub fn reads(&self, dataset: &DatasetName) -> bool {
        names(&self.table, dataset)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The selected column names; `None` for `*`.
    pub fn columns(&self) -> Option<&[String]> {
        self.columns.as_deref()
    }

    /// The WHERE predicate as SQL.
    pub fn filter(&self) -> Option<&str> {
        self.filter.as_deref()
    }
}

impl fmt::Debug for RefreshSql {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RefreshSql").field(&self.text).finish()
    }
}

fn column_name(item: &SelectItem) -> Result<String, String> {
    match item {
        SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Ok(normalized(ident)),
        SelectItem::ExprWithAlias { alias, .. } => Err(format!(
            "selects only column names; aliases such as `{alias}` are not supported: {SHAPE}"
        )),
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
            Err(format!("selects either * alone or column names: {SHAPE}"))
        }
        other => Err(format!(
            "selects only column names; `{other}` is an expression: {SHAPE}"
        )),
    }
}

/// PostgreSQL's identifier rule: unquoted names fold to lower case.
/// The table `from` names (one or two parts, normalized), refusing joins,
/// aliases and anything but a table name (`by_name` says what is expected);
/// `shape` is the accepted statement.
pub(super) fn dataset_table(
    from: &TableWithJoins,
    by_name: &str,
    shape: &str,
) -> Result<Vec<String>, String> {
    if !from.joins.is_empty() {
        return Err(format!("cannot join other tables: {shape}"));
    }
    match &from.relation {
        TableFactor::Table {
            name,
            alias: None,
            args: None,
            ..
        } => name
            .0
            .iter()
            .map(|part| part.as_ident().map(normalized))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("{by_name}: {shape}")),
        TableFactor::Table { alias: Some(_), .. } => {
            Err(format!("cannot alias the dataset: {shape}"))
        }
        _ => Err(format!("{by_name}: {shape}")),
    }
}

/// Whether `table` (`orders` or `shop.orders`) names `dataset`; a
/// one-part name is the dataset's table in any schema.
pub(super) fn names(table: &[String], dataset: &DatasetName) -> bool {
    match table {
        [table] => *table == dataset.table,
        [schema, table] => *schema == dataset.schema && *table == dataset.table,
        _ => false,
    }
}

pub(crate) fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_columns_or_star_and_a_predicate() {
        let sql = RefreshSql::parse(
            "SELECT city, \"State\" FROM shop.Orders WHERE city = 'Bellevue' AND n > 1",
        )
        .unwrap();
        assert_eq!(
            sql.columns(),
            Some(&["city".to_owned(), "State".to_owned()][..])
        );
        assert_eq!(sql.filter(), Some("city = 'Bellevue' AND n > 1"));
        assert!(sql.reads(&DatasetName::parse("shop.orders").unwrap()));
        assert!(!sql.reads(&DatasetName::parse("orders").unwrap()));
        let star = RefreshSql::parse("select * from orders").unwrap();
        assert_eq!(star.columns(), None);
        assert_eq!(star.filter(), None);
        assert!(star.reads(&DatasetName::parse("orders").unwrap()));
    }

    #[test]
    fn refuses_everything_else_saying_what() {
        for (sql, says) in [
            ("SELECT city AS c FROM t", "aliases"),
            ("SELECT upper(city) FROM t", "expression"),
            ("SELECT *, city FROM t", "* alone"),
            ("SELECT * FROM t JOIN u ON t.id = u.id", "join"),
            ("SELECT * FROM t, u", "exactly one table"),
            ("SELECT * FROM t x", "alias"),
            ("SELECT * FROM (SELECT 1) s", "by name"),
            ("SELECT * FROM t ORDER BY id", "ORDER BY"),
            ("SELECT * FROM t LIMIT 5", "LIMIT"),
            ("SELECT DISTINCT city FROM t", "DISTINCT"),
            ("SELECT * FROM t UNION SELECT * FROM t", "single SELECT"),
            ("WITH x AS (SELECT 1) SELECT * FROM t", "WITH"),
            ("DELETE FROM t", "SELECT"),
            ("SELECT * FROM t; SELECT * FROM t", "one statement"),
            ("SELECT * FROM", "not valid SQL"),
        ] {
            let error = RefreshSql::parse(sql).unwrap_err();
            assert!(error.contains(says), "{sql}: {error}");
        }
    }
}
