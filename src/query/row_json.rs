//! `row_to_json(t)`, `to_json[b](t)` and `json[b]_agg(t)` where `t` names a
//! table of the FROM clause: the whole row as a JSON object. pgaccel has no composite types,
//! so the call is written out, before planning, as the table's columns
//! (read from the catalog) paired with their names for
//! `pgaccel_row_to_json`, which writes them as PostgreSQL writes a row:
//!
//! ```sql
//! SELECT row_to_json(c) FROM shop.customers c
//! -- becomes
//! SELECT pgaccel_row_to_json('id', c.id, 'name', c.name, ...) FROM shop.customers c
//! ```
//!
//! A derived table's columns are known from its select list and are
//! handled with the other compatibility rewrites.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::execution::context::SessionState;
use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    Select, Statement, TableFactor, VisitMut, VisitorMut,
};

use super::compat::{arguments, call, function_name, string};

/// Rewrites every `row_to_json(t)` of a table `t` in `statement`, as the
/// module doc says; a table the catalog does not know is left for the
/// planner's own error.
pub(super) async fn rows_to_json(state: &SessionState, statement: &mut Statement) {
    let mut wanted = Rows {
        scopes: Vec::new(),
        columns: HashMap::new(),
        rewrite: false,
    };
    let _ = statement.visit(&mut wanted);
    if wanted.columns.is_empty() {
        return;
    }
    for (table, columns) in &mut wanted.columns {
        if let Some(names) = super::column_names_in(state, table).await {
            *columns = names;
        }
    }
    wanted.rewrite = true;
    let _ = statement.visit(&mut wanted);
}

/// Finds (first pass) and rewrites (second pass) the calls.
struct Rows {
    /// Per select being visited: its FROM tables by alias (or name).
    scopes: Vec<HashMap<String, String>>,
    /// The tables named by a call, with their columns once read.
    columns: HashMap<String, Vec<String>>,
    rewrite: bool,
}

impl Rows {
    /// The table `alias` names, innermost select first.
    fn table(&self, alias: &Ident) -> Option<&String> {
        let alias = alias.value.to_lowercase();
        self.scopes.iter().rev().find_map(|scope| scope.get(&alias))
    }
}

/// The function names whose argument may be a whole row.
const ROW_FUNCTIONS: [&str; 5] = [
    "row_to_json",
    "to_json",
    "to_jsonb",
    "json_agg",
    "jsonb_agg",
];

/// The alias `function` takes as a whole row (`row_to_json(t)`,
/// `json_agg(t ORDER BY ...)`), when it is one of [`ROW_FUNCTIONS`].
pub(super) fn whole_row_alias(function: &Function) -> Option<Ident> {
    if !ROW_FUNCTIONS.contains(&function_name(function).as_str()) {
        return None;
    }
    match arguments(function).as_slice() {
        [Expr::Identifier(alias)] => Some(alias.clone()),
        _ => None,
    }
}

/// `function` (see [`whole_row_alias`]) with the row `alias` given as the
/// name, value pairs of its `columns`.
pub(super) fn with_row_object(function: &Function, alias: &Ident, columns: &[Ident]) -> Expr {
    let pairs = columns
        .iter()
        .flat_map(|column| {
            [
                string(&column.value),
                Expr::CompoundIdentifier(vec![alias.clone(), column.clone()]),
            ]
        })
        .collect();
    let object = call("pgaccel_row_to_json", pairs);
    let as_jsonb = |object| Expr::Cast {
        kind: CastKind::DoubleColon,
        expr: Box::new(object),
        data_type: DataType::JSONB,
        array: false,
        format: None,
    };
    match function_name(function).as_str() {
        "to_jsonb" => as_jsonb(object),
        // An aggregate keeps its ORDER BY and FILTER: only the argument
        // changes.
        name @ ("json_agg" | "jsonb_agg") => {
            let mut function = function.clone();
            if let FunctionArguments::List(list) = &mut function.args {
                let row = if name == "jsonb_agg" {
                    as_jsonb(object)
                } else {
                    object
                };
                list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(row))];
            }
            Expr::Function(function)
        }
        _ => object,
    }
}

impl VisitorMut for Rows {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        let mut scope = HashMap::new();
        for table in &select.from {
            for factor in
                std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation))
            {
                if let TableFactor::Table {
                    name,
                    alias,
                    args: None,
                    ..
                } = factor
                {
                    let table = name.to_string();
                    let known_as = alias.as_ref().map_or_else(
                        || {
                            name.0
                                .last()
                                .and_then(|part| part.as_ident())
                                .map_or_else(String::new, |ident| ident.value.to_lowercase())
                        },
                        |alias| alias.name.value.to_lowercase(),
                    );
                    scope.insert(known_as, table);
                }
            }
        }
        self.scopes.push(scope);
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, _select: &mut Select) -> ControlFlow<()> {
        self.scopes.pop();
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Function(function) = expr else {
            return ControlFlow::Continue(());
        };
        let Some(alias) = whole_row_alias(function) else {
            return ControlFlow::Continue(());
        };
        let Some(table) = self.table(&alias).cloned() else {
            return ControlFlow::Continue(());
        };
        if !self.rewrite {
            self.columns.entry(table).or_default();
            return ControlFlow::Continue(());
        }
        // A column of the same name is what the name means, as in
        // PostgreSQL (`to_json(status) FROM status`).
        let Some(columns) = self.columns.get(&table).filter(|columns| {
            !columns.is_empty()
                && !columns
                    .iter()
                    .any(|column| column.eq_ignore_ascii_case(&alias.value))
        }) else {
            return ControlFlow::Continue(());
        };
        let columns: Vec<Ident> = columns
            .iter()
            .map(|column| Ident::with_quote('"', column))
            .collect();
        *expr = with_row_object(function, &alias, &columns);
        ControlFlow::Continue(())
    }
}
