//! A qualified name is a table's column before it is a field of a column:
//! in `FROM nums t WHERE EXISTS (SELECT 1 FROM texts s WHERE s.id = t.id)`
//! PostgreSQL reads `t.id` as the enclosing query's table `t`, even when
//! `texts` has a column named `t`. DataFusion looks for a field `id` in that
//! column first, and fails.
//!
//! A field of a column that has none (anything but a struct or a map) is
//! planned here as a marker that fails with PostgreSQL's "missing
//! FROM-clause entry" (42P01), naming the qualifier. When some FROM of the
//! statement names that table, the statement is planned again with the
//! table given a name no column has ([`rename_table`]), so only the table
//! matches; else the error is the answer, as PostgreSQL's would be.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{Result, TableReference};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult};
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::{
    Expr as SqlExpr, Ident, ObjectName, ObjectNamePart, Query, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, Statement, TableAlias, TableFactor, VisitMut,
    VisitorMut,
};

use super::PgError;
use super::sqlstate;

/// Plans `column.field` over a column without fields as [`Qualifier`].
#[derive(Debug)]
pub struct TableQualifiers;

impl ExprPlanner for TableQualifiers {
    fn plan_compound_identifier(
        &self,
        field: &Field,
        _qualifier: Option<&TableReference>,
        _nested_names: &[String],
    ) -> Result<PlannerResult<Vec<Expr>>> {
        if matches!(field.data_type(), DataType::Struct(_) | DataType::Map(..)) {
            return Ok(PlannerResult::Original(Vec::new()));
        }
        let marker = ScalarUDF::new_from_impl(Qualifier {
            table: field.name().clone(),
            signature: Signature::nullary(Volatility::Immutable),
        });
        Ok(PlannerResult::Planned(Expr::ScalarFunction(
            ScalarFunction::new_udf(Arc::new(marker), Vec::new()),
        )))
    }
}

/// A qualifier that names no table of the query it is in: typing it fails
/// with [`missing_table`]'s error.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Qualifier {
    table: String,
    signature: Signature,
}

impl ScalarUDFImpl for Qualifier {
    fn name(&self) -> &str {
        QUALIFIER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Err(datafusion::error::DataFusionError::External(Box::new(
            missing_table(&self.table),
        )))
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Err(datafusion::error::DataFusionError::External(Box::new(
            missing_table(&self.table),
        )))
    }
}

/// The error of the first [`Qualifier`] in `plan`: DataFusion types some
/// expressions only when the plan is optimized.
pub fn check(plan: &LogicalPlan) -> Result<(), PgError> {
    let mut missing = None;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| match e {
                Expr::ScalarFunction(function) if function.name() == QUALIFIER => {
                    missing = function
                        .func
                        .inner()
                        .downcast_ref::<Qualifier>()
                        .map(|qualifier| missing_table(&qualifier.table));
                    Ok(TreeNodeRecursion::Stop)
                }
                _ => Ok(TreeNodeRecursion::Continue),
            })
        })
    });
    missing.map_or(Ok(()), Err)
}

const QUALIFIER: &str = "pgaccel_table_qualifier";

const MISSING: &str = "missing FROM-clause entry for table \"";

/// PostgreSQL's error for a qualifier that names no table in scope.
fn missing_table(table: &str) -> PgError {
    PgError::new(sqlstate::UNDEFINED_TABLE, format!("{MISSING}{table}\""))
}

/// The table `error` says is missing, when it is [`missing_table`]'s.
pub fn missing_table_name(error: &PgError) -> Option<&str> {
    if error.code != sqlstate::UNDEFINED_TABLE {
        return None;
    }
    error.message.strip_prefix(MISSING)?.strip_suffix('"')
}

/// Gives every table `table` names in `statement` (`FROM nums t`,
/// `FROM t`) a name no column has, and every qualified name and `t.*`
/// that start with `table` that name; whether any FROM named `table`.
pub fn rename_table(statement: &mut Statement, table: &str) -> bool {
    let mut renaming = Renaming {
        table,
        renamed: Ident::with_quote('"', format!("{table} (pgaccel)")),
        found: false,
    };
    let _ = statement.visit(&mut renaming);
    renaming.found
}

struct Renaming<'a> {
    table: &'a str,
    renamed: Ident,
    found: bool,
}

impl Renaming<'_> {
    /// Whether `ident`, normalized as DataFusion does, is the table.
    fn names(&self, ident: &Ident) -> bool {
        match ident.quote_style {
            None => ident.value.to_lowercase() == self.table,
            Some(_) => ident.value == self.table,
        }
    }

    fn rename_wildcards(&self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                for item in &mut select.projection {
                    if let SelectItem::QualifiedWildcard(
                        SelectItemQualifiedWildcardKind::ObjectName(name),
                        _,
                    ) = item
                        && let [ObjectNamePart::Identifier(ident)] = name.0.as_slice()
                        && self.names(ident)
                    {
                        *name = ObjectName::from(vec![self.renamed.clone()]);
                    }
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.rename_wildcards(left);
                self.rename_wildcards(right);
            }
            SetExpr::Query(query) => self.rename_wildcards(&mut query.body),
            _ => {}
        }
    }
}

impl VisitorMut for Renaming<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.rename_wildcards(&mut query.body);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let alias = match factor {
            TableFactor::Table { alias, name, .. } => {
                if alias.is_none()
                    && let Some(ObjectNamePart::Identifier(last)) = name.0.last()
                    && self.names(last)
                {
                    *alias = Some(TableAlias {
                        explicit: true,
                        name: self.renamed.clone(),
                        columns: Vec::new(),
                        at: None,
                    });
                    self.found = true;
                    return ControlFlow::Continue(());
                }
                alias
            }
            TableFactor::Derived { alias, .. }
            | TableFactor::UNNEST { alias, .. }
            | TableFactor::Function { alias, .. }
            | TableFactor::TableFunction { alias, .. } => alias,
            _ => return ControlFlow::Continue(()),
        };
        if let Some(alias) = alias
            && self.names(&alias.name)
        {
            alias.name = self.renamed.clone();
            self.found = true;
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut SqlExpr) -> ControlFlow<()> {
        if let SqlExpr::CompoundIdentifier(parts) = expr {
            // `t.c`, and `schema.t.c` for a table named without an alias.
            let table = parts.len().checked_sub(2);
            if let Some(at) = table
                && parts.len() <= 3
                && self.names(&parts[at])
            {
                let column = parts[at + 1].clone();
                *parts = vec![self.renamed.clone(), column];
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn renamed(sql: &str, table: &str) -> (String, bool) {
        let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        let found = rename_table(&mut statement, table);
        (statement.to_string(), found)
    }

    #[test]
    fn a_table_and_its_qualified_names_are_renamed_together() {
        let (sql, found) = renamed(
            "SELECT t.id, T.*, s.t FROM nums t WHERE EXISTS (SELECT 1 FROM texts s WHERE s.id = t.id AND t = 'x')",
            "t",
        );
        assert!(found);
        assert_eq!(
            sql,
            "SELECT \"t (pgaccel)\".id, \"t (pgaccel)\".*, s.t FROM nums \"t (pgaccel)\" \
             WHERE EXISTS (SELECT 1 FROM texts s WHERE s.id = \"t (pgaccel)\".id AND t = 'x')"
        );
    }

    #[test]
    fn a_table_named_without_an_alias_gets_one() {
        let (sql, found) = renamed("SELECT dbg.t.a, t.b FROM dbg.t", "t");
        assert!(found);
        assert_eq!(
            sql,
            "SELECT \"t (pgaccel)\".a, \"t (pgaccel)\".b FROM dbg.t AS \"t (pgaccel)\""
        );
    }

    #[test]
    fn nothing_is_found_when_no_from_names_the_table() {
        let (_, found) = renamed("SELECT t.id FROM texts", "t");
        assert!(!found);
        let error = missing_table("t");
        assert_eq!(missing_table_name(&error), Some("t"));
        assert_eq!(error.code, sqlstate::UNDEFINED_TABLE);
    }
}
