//! `retention_sql`: which rows a retention check evicts from the
//! acceleration. Only `DELETE FROM <dataset> WHERE <predicate>` is accepted:
//! the predicate is evaluated over the accelerated rows (and its inverse
//! sent to the source by the zero-results fallback), so anything that is not
//! a plain predicate over the dataset is refused with a message naming it.

use std::fmt;

use datafusion::sql::sqlparser::ast::{FromTable, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use super::DatasetName;
use super::refresh_sql::{dataset_table, names};

const SHAPE: &str = "DELETE FROM <dataset> WHERE <predicate>";

/// A validated `retention_sql`.
#[derive(Clone, PartialEq, Eq)]
pub struct RetentionSql {
    text: String,
    /// The table named in FROM, as written (one or two parts, normalized).
    table: Vec<String>,
    /// The WHERE predicate as SQL text.
    predicate: String,
}

impl RetentionSql {
    /// Parses and checks the shape of `text`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<RetentionSql, String> {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, text)
            .map_err(|error| format!("is not valid SQL ({error}); expected {SHAPE}"))?;
        let statement = match statements.len() {
            1 => statements.remove(0),
            _ => return Err(format!("must be exactly one statement: {SHAPE}")),
        };
        let Statement::Delete(delete) = statement else {
            return Err(format!("must be a DELETE statement: {SHAPE}"));
        };
        if delete.using.is_some() || !delete.tables.is_empty() {
            return Err(format!("cannot use USING or other tables: {SHAPE}"));
        }
        if delete.returning.is_some() || !delete.order_by.is_empty() || delete.limit.is_some() {
            return Err(format!("cannot use RETURNING, ORDER BY or LIMIT: {SHAPE}"));
        }
        let FromTable::WithFromKeyword(from) = &delete.from else {
            return Err(format!("must name the dataset after FROM: {SHAPE}"));
        };
        let [from] = from.as_slice() else {
            return Err(format!(
                "must delete from exactly one table, the dataset: {SHAPE}"
            ));
        };
        let table = dataset_table(from, "must name the dataset", SHAPE)?;
        let Some(predicate) = delete.selection else {
            return Err(format!(
                "needs a WHERE predicate (a DELETE without one would evict every row): {SHAPE}"
            ));
        };
        Ok(RetentionSql {
            text: text.trim().to_owned(),
            table,
            predicate: predicate.to_string(),
        })
    }

    /// Whether FROM names `dataset` (as `RefreshSql::reads`).
    pub fn deletes_from(&self, dataset: &DatasetName) -> bool {
        names(&self.table, dataset)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The WHERE predicate: the rows a check evicts.
    pub fn predicate(&self) -> &str {
        &self.predicate
    }
}

impl fmt::Debug for RetentionSql {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_a_delete_with_a_predicate() {
        let sql = RetentionSql::parse("DELETE FROM orders WHERE deleted_at IS NOT NULL").unwrap();
        assert_eq!(sql.predicate(), "deleted_at IS NOT NULL");
        let name = DatasetName::parse("orders").unwrap();
        assert!(sql.deletes_from(&name));
        let other = RetentionSql::parse("DELETE FROM customers WHERE true").unwrap();
        assert!(!other.deletes_from(&name));
    }

    #[test]
    fn refuses_anything_else_saying_what() {
        for (sql, expected) in [
            ("SELECT * FROM orders", "must be a DELETE statement"),
            ("DELETE FROM orders", "needs a WHERE predicate"),
            (
                "DELETE FROM orders USING x WHERE orders.id = x.id",
                "cannot use USING",
            ),
            (
                "DELETE FROM orders WHERE a = 1 RETURNING id",
                "cannot use RETURNING",
            ),
            (
                "DELETE FROM orders o WHERE o.a = 1",
                "cannot alias the dataset",
            ),
            (
                "DELETE FROM orders WHERE a = 1; DELETE FROM orders WHERE b = 1",
                "exactly one statement",
            ),
            ("DELETE FROM orders WHERE", "is not valid SQL"),
        ] {
            let error = RetentionSql::parse(sql).unwrap_err();
            assert!(error.contains(expected), "{sql}: {error}");
        }
    }
}
