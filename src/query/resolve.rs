//! Table names as a PostgreSQL session resolves them: an unqualified name is
//! looked up along `search_path` (with `pg_catalog` first, as PostgreSQL
//! does), and a three-part name may name the database the client connected
//! to. The statement is rewritten with the schema found, before planning.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::catalog::CatalogProvider;
use datafusion::sql::sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Query, Statement, TableFactor, VisitMut, VisitorMut,
};

use super::error::PgError;
use super::sqlstate;

/// What names resolve against for one session.
pub struct NameScope<'a> {
    /// The database the client connected to (served as pgaccel's catalog).
    pub database: &'a str,
    /// `search_path`, unquoted, `$user` as written.
    pub search_path: &'a [String],
    pub user: &'a str,
    pub catalog: &'a dyn CatalogProvider,
}

impl NameScope<'_> {
    /// The schemas an unqualified name is looked up in, in order.
    fn schemas(&self) -> Vec<String> {
        let mut schemas = Vec::with_capacity(self.search_path.len() + 1);
        if !self.search_path.iter().any(|s| s == "pg_catalog") {
            schemas.push("pg_catalog".to_owned());
        }
        for schema in self.search_path {
            let schema = if schema == "$user" {
                self.user.to_owned()
            } else {
                schema.clone()
            };
            if self.catalog.schema(&schema).is_some() && !schemas.contains(&schema) {
                schemas.push(schema);
            }
        }
        schemas
    }

    /// The schema holding `table` first along the path.
    fn schema_of(&self, schemas: &[String], table: &str) -> Option<String> {
        schemas
            .iter()
            .find(|schema| {
                self.catalog
                    .schema(schema)
                    .is_some_and(|provider| provider.table_exist(table))
            })
            .cloned()
    }
}

/// Qualifies the table names of `statement` as `scope` resolves them.
pub fn resolve_names(statement: &mut Statement, scope: &NameScope<'_>) -> Result<(), PgError> {
    let mut resolver = Resolver {
        scope,
        schemas: scope.schemas(),
        ctes: Vec::new(),
    };
    match statement.visit(&mut resolver) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(error) => Err(error),
    }
}

struct Resolver<'a, 'b> {
    scope: &'a NameScope<'b>,
    schemas: Vec<String>,
    /// The CTE names visible at each query level: they are not tables.
    ctes: Vec<HashSet<String>>,
}

impl VisitorMut for Resolver<'_, '_> {
    type Break = PgError;

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<PgError> {
        let names = query
            .with
            .iter()
            .flat_map(|with| &with.cte_tables)
            .map(|cte| normalized(&cte.alias.name))
            .collect();
        self.ctes.push(names);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<PgError> {
        self.ctes.pop();
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<PgError> {
        if let TableFactor::Table {
            name, args: None, ..
        } = factor
            && let Err(error) = self.qualify(name)
        {
            return ControlFlow::Break(error);
        }
        ControlFlow::Continue(())
    }
}

impl Resolver<'_, '_> {
    fn qualify(&self, name: &mut ObjectName) -> Result<(), PgError> {
        let parts: Vec<Ident> = name
            .0
            .iter()
            .filter_map(|part| match part {
                ObjectNamePart::Identifier(ident) => Some(ident.clone()),
                _ => None,
            })
            .collect();
        match parts.as_slice() {
            [table] => {
                let table_name = normalized(table);
                if self.ctes.iter().any(|names| names.contains(&table_name)) {
                    return Ok(());
                }
                if let Some(schema) = self.scope.schema_of(&self.schemas, &table_name) {
                    name.0 = vec![
                        ObjectNamePart::Identifier(Ident::with_quote('"', schema)),
                        ObjectNamePart::Identifier(table.clone()),
                    ];
                }
                Ok(())
            }
            [database, schema, table] => {
                let database_name = normalized(database);
                if database_name != self.scope.database && database_name != super::CATALOG {
                    return Err(PgError::new(
                        sqlstate::FEATURE_NOT_SUPPORTED,
                        format!("cross-database references are not implemented: {name}"),
                    ));
                }
                name.0 = vec![
                    ObjectNamePart::Identifier(Ident::with_quote('"', super::CATALOG)),
                    ObjectNamePart::Identifier(schema.clone()),
                    ObjectNamePart::Identifier(table.clone()),
                ];
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// An identifier as PostgreSQL folds it: lowercase unless quoted.
pub(super) fn normalized(ident: &Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}
