//! PostgreSQL constructs that catalog queries use and DataFusion does not
//! plan, rewritten into equivalents it does, before planning:
//!
//! - system columns of catalog rows (`xmin`, `ctid`, `tableoid`);
//! - `oid::regclass` (and `regtype`, `regnamespace`, `regproc`, `regrole`)
//!   printed as names, and `'name'::regproc` compared with the catalog's
//!   function-name columns;
//! - `"char"`, `name`, `xid` casts;
//! - `LIKE ... ESCAPE` with another escape character than `\`;
//! - `x = ANY($1)` with the parameter an array;
//! - `ARRAY(subquery)`, `generate_subscripts()`, pgjdbc's
//!   `information_schema._pg_expandarray()`;
//! - `int2vector`/`oidvector` subscripts, which start at 0;
//! - scalar subqueries, which must give at most one row (21000 otherwise),
//!   through an aggregate that checks it (DataFusion also requires
//!   correlated ones to be aggregated).
//!
//! Each rewrite keeps PostgreSQL's result; a query that does not use these
//! constructs is left as it is.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    AccessExpr, ArrayElemTypeDef, BinaryOperator, CastKind, DataType, Expr, Function,
    FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident, ObjectName,
    ObjectNamePart, Query, Select, SelectItem, SetExpr, Statement, Subscript, TableAlias,
    TableAliasColumnDef, TableFactor, Value, ValueWithSpan, VisitMut, VisitorMut,
};

/// The aggregate scalar subqueries are wrapped in (see the module doc).
pub const SINGLE_VALUE: &str = "pgaccel_single_value";

/// Catalog columns of the vector types, whose subscripts start at 0.
const VECTOR_COLUMNS: &[&str] = &[
    "indkey",
    "indclass",
    "indcollation",
    "indoption",
    "proargtypes",
    "stxkeys",
    "tgattr",
    "partattrs",
];

const SYSTEM_COLUMNS: &[&str] = &["xmin", "xmax", "cmin", "cmax", "ctid", "tableoid"];

/// Rewrites `statement` as the module doc says.
pub fn apply_postgres_compatibility(statement: &mut Statement) {
    let _ = statement.visit(&mut Compatibility::default());
}

#[derive(Default)]
struct Compatibility {
    /// Per select being visited: its FROM aliases (and table names) and the
    /// catalog relation each names.
    relations: Vec<HashMap<String, String>>,
    /// Per select being visited: its output column names.
    outputs: Vec<Vec<String>>,
}

impl VisitorMut for Compatibility {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        expand_pg_expandarray(select);
        let mut relations = HashMap::new();
        for table in &select.from {
            for factor in std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation)) {
                if let TableFactor::Table { name, alias, args: None, .. } = factor {
                    let relation = last_part(name).to_lowercase();
                    relations.insert(relation.clone(), relation.clone());
                    if let Some(alias) = alias {
                        relations.insert(alias.name.value.to_lowercase(), relation);
                    }
                }
            }
        }
        self.relations.push(relations);
        self.outputs.push(
            select
                .projection
                .iter()
                .filter_map(|item| match item {
                    SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
                    _ => None,
                })
                .collect(),
        );
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        name_unnest_column(factor);
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, _select: &mut Select) -> ControlFlow<()> {
        self.relations.pop();
        self.outputs.pop();
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(replacement) = self.rewrite(expr) {
            *expr = replacement;
        }
        ControlFlow::Continue(())
    }
}

impl Compatibility {
    fn rewrite(&self, expr: &Expr) -> Option<Expr> {
        match expr {
            Expr::Identifier(ident) => self.system_column(None, ident),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [qualifier, column] => self.system_column(Some(qualifier), column),
                _ => None,
            },
            Expr::Cast {
                expr: inner,
                data_type,
                kind,
                ..
            } => cast(inner, data_type, kind),
            Expr::Like {
                negated,
                any,
                expr: value,
                pattern,
                escape_char: Some(escape),
            } => like(*negated, *any, value, pattern, escape, false),
            Expr::ILike {
                negated,
                any,
                expr: value,
                pattern,
                escape_char: Some(escape),
            } => like(*negated, *any, value, pattern, escape, true),
            Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } if is_placeholder(right) => {
                let mut rewritten = expr.clone();
                if let Expr::AnyOp { right, .. } | Expr::AllOp { right, .. } = &mut rewritten {
                    **right = cast_to(
                        (**right).clone(),
                        DataType::Array(ArrayElemTypeDef::SquareBracket(Box::new(DataType::Text), None)),
                    );
                }
                Some(rewritten)
            }
            Expr::Function(function) => function_call(function),
            Expr::CompoundFieldAccess { root, access_chain } => field_access(root, access_chain),
            Expr::Subquery(query) => single_value(query),
            _ => None,
        }
    }

    /// `xmin` and friends: pgaccel's catalog rows were all written by one
    /// frozen transaction, at item 1 of page 0.
    fn system_column(&self, qualifier: Option<&Ident>, column: &Ident) -> Option<Expr> {
        let name = column.value.to_lowercase();
        if column.quote_style.is_some() || !SYSTEM_COLUMNS.contains(&name.as_str()) {
            return None;
        }
        let relations = self.relations.last()?;
        let relation = match qualifier {
            Some(qualifier) => relations.get(&qualifier.value.to_lowercase())?.clone(),
            None => {
                // A bare name that the select list defines is that column.
                if self.outputs.last().is_some_and(|outputs| outputs.contains(&name)) {
                    return None;
                }
                relations.values().find(|r| r.starts_with("pg_"))?.clone()
            }
        };
        if !relation.starts_with("pg_") {
            return None;
        }
        Some(match name.as_str() {
            "ctid" => string("(0,1)"),
            "tableoid" => number(&super::system::oids::catalog_relation(&relation).to_string()),
            _ => cast_to(number("1"), DataType::BigInt(None)),
        })
    }
}

/// `FROM unnest(a)` names its column `unnest`, and `FROM unnest(a) AS x`
/// names it `x`, as PostgreSQL does for a function returning one column.
fn name_unnest_column(factor: &mut TableFactor) {
    let TableFactor::UNNEST {
        alias, array_exprs, ..
    } = factor
    else {
        return;
    };
    if array_exprs.len() != 1 {
        return;
    }
    let alias = alias.get_or_insert_with(|| TableAlias {
        explicit: true,
        name: Ident::new("unnest"),
        columns: Vec::new(),
        at: None,
    });
    if alias.columns.is_empty() {
        alias.columns = vec![TableAliasColumnDef::from_name(alias.name.value.clone())];
    }
}

fn last_part(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(ident)) => ident.value.clone(),
        _ => String::new(),
    }
}

fn string(text: &str) -> Expr {
    Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(text.to_owned())))
}

fn number(text: &str) -> Expr {
    Expr::Value(ValueWithSpan::from(Value::Number(text.to_owned(), false)))
}

fn cast_to(expr: Expr, data_type: DataType) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type,
        array: false,
        format: None,
    }
}

fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|arg| FunctionArg::Unnamed(FunctionArgExpr::Expr(arg)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

fn is_placeholder(expr: &Expr) -> bool {
    matches!(expr, Expr::Value(value) if matches!(value.value, Value::Placeholder(_)))
}

fn is_string_literal(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Value(value) if matches!(value.value, Value::SingleQuotedString(_) | Value::EscapedStringLiteral(_))
    )
}

/// The name of a custom type (`"char"`, `pg_catalog.name`), lower case.
fn custom_type(data_type: &DataType) -> Option<String> {
    match data_type {
        DataType::Custom(name, _) => Some(last_part(name).to_lowercase()),
        DataType::Regclass => Some("regclass".to_owned()),
        _ => None,
    }
}

/// The function printing an OID of a `reg*` type as its name.
fn name_function(reg_type: &str) -> Option<&'static str> {
    Some(match reg_type {
        "regclass" => "pgaccel_regclass_name",
        "regtype" => "pgaccel_regtype_name",
        "regnamespace" => "pgaccel_regnamespace_name",
        "regproc" | "regprocedure" => "pgaccel_regproc_name",
        "regrole" => "pgaccel_regrole_name",
        _ => return None,
    })
}

fn is_text_type(data_type: &DataType) -> bool {
    match data_type {
        DataType::Text | DataType::Varchar(_) | DataType::CharacterVarying(_) => true,
        other => matches!(custom_type(other).as_deref(), Some("text" | "name" | "varchar")),
    }
}

fn cast(inner: &Expr, data_type: &DataType, kind: &CastKind) -> Option<Expr> {
    let target = custom_type(data_type);
    match target.as_deref() {
        // `"char"` and `name` hold text; `xid` a transaction number.
        Some("char" | "name" | "pg_node_tree" | "aclitem") => {
            return Some(Expr::Cast {
                kind: kind.clone(),
                expr: Box::new(inner.clone()),
                data_type: DataType::Text,
                array: false,
                format: None,
            });
        }
        Some("xid" | "xid8" | "cid") => {
            return Some(cast_to(inner.clone(), DataType::BigInt(None)));
        }
        // The catalog keeps function references (`typinput`) as names.
        Some("regproc" | "regprocedure") if is_string_literal(inner) => {
            let Expr::Value(value) = inner else { return None };
            let text = match &value.value {
                Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text) => text,
                _ => return None,
            };
            let name = text.split('(').next().unwrap_or(text);
            let name = name.rsplit('.').next().unwrap_or(name).trim_matches('"');
            return Some(string(name));
        }
        _ => {}
    }
    // `oid::regclass::text`: the name, as PostgreSQL prints a regclass.
    if is_text_type(data_type)
        && let Expr::Cast {
            expr: oid,
            data_type: reg_type,
            ..
        } = inner
        && !is_string_literal(oid)
        && let Some(function) = custom_type(reg_type).as_deref().and_then(name_function)
    {
        return Some(call(function, vec![(**oid).clone()]));
    }
    None
}

/// `LIKE ... ESCAPE 'c'`: DataFusion only knows `\` as the escape, so the
/// pattern's literals are rewritten to use it.
fn like(
    negated: bool,
    any: bool,
    value: &Expr,
    pattern: &Expr,
    escape: &ValueWithSpan,
    case_insensitive: bool,
) -> Option<Expr> {
    let escape = match &escape.value {
        Value::SingleQuotedString(text) => text.chars().next(),
        _ => None,
    }?;
    if escape == '\\' {
        return None;
    }
    let mut pattern = pattern.clone();
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(&mut pattern, |expr| {
        if let Expr::Value(value) = expr
            && let Value::SingleQuotedString(text) = &mut value.value
        {
            *text = text.replace('\\', "\\\\").replace(escape, "\\");
        }
        ControlFlow::<()>::Continue(())
    });
    let (value, pattern) = (Box::new(value.clone()), Box::new(pattern));
    Some(if case_insensitive {
        Expr::ILike {
            negated,
            any,
            expr: value,
            pattern,
            escape_char: None,
        }
    } else {
        Expr::Like {
            negated,
            any,
            expr: value,
            pattern,
            escape_char: None,
        }
    })
}

fn function_name(function: &Function) -> String {
    last_part(&function.name).to_lowercase()
}

fn arguments(function: &Function) -> Vec<Expr> {
    match &function.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|arg| match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether `expr` is one of the catalog's vector columns.
fn is_vector(expr: &Expr) -> bool {
    let name = match expr {
        Expr::Identifier(ident) => &ident.value,
        Expr::CompoundIdentifier(parts) => match parts.last() {
            Some(ident) => &ident.value,
            None => return false,
        },
        _ => return false,
    };
    VECTOR_COLUMNS.contains(&name.to_lowercase().as_str())
}

/// `unnest(range(from, from + cardinality(array)))`: the subscripts of a
/// one-dimensional array.
fn subscripts(array: Expr, from: i64) -> Expr {
    let bigint = |expr| cast_to(expr, DataType::BigInt(None));
    let start = bigint(number(&from.to_string()));
    let end = Expr::BinaryOp {
        left: Box::new(bigint(number(&from.to_string()))),
        op: BinaryOperator::Plus,
        right: Box::new(bigint(call("cardinality", vec![array]))),
    };
    call("unnest", vec![call("range", vec![start, end])])
}

fn function_call(function: &Function) -> Option<Expr> {
    match function_name(function).as_str() {
        "array" => {
            let FunctionArguments::Subquery(query) = &function.args else {
                return None;
            };
            array_of_subquery(query)
        }
        "generate_subscripts" => {
            let array = arguments(function).into_iter().next()?;
            let from = if is_vector(&array) { 0 } else { 1 };
            Some(subscripts(array, from))
        }
        _ => None,
    }
}

/// `ARRAY(SELECT e FROM ... [ORDER BY ...])` as the aggregated subquery
/// `(SELECT array_agg(e [ORDER BY ...]) FROM ...)`.
fn array_of_subquery(query: &Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let [item] = select.projection.as_slice() else {
        return None;
    };
    let element = match item {
        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => expr.clone(),
        _ => return None,
    };
    if query.limit_clause.is_some() || select.distinct.is_some() {
        return None;
    }
    let order_by = match &query.order_by {
        Some(order_by) => match &order_by.kind {
            datafusion::sql::sqlparser::ast::OrderByKind::Expressions(exprs) => exprs.clone(),
            _ => return None,
        },
        None => Vec::new(),
    };
    let mut aggregate = call("array_agg", vec![element]);
    if let Expr::Function(function) = &mut aggregate
        && let FunctionArguments::List(list) = &mut function.args
        && !order_by.is_empty()
    {
        list.clauses
            .push(datafusion::sql::sqlparser::ast::FunctionArgumentClause::OrderBy(order_by));
    }
    let mut rewritten = query.clone();
    rewritten.order_by = None;
    if let SetExpr::Select(select) = rewritten.body.as_mut() {
        select.projection = vec![SelectItem::UnnamedExpr(aggregate)];
    }
    Some(Expr::Subquery(Box::new(rewritten)))
}

/// `(information_schema._pg_expandarray(a)).x` / `.n`, and `(alias).x` of
/// an expanded alias (see [`expand_pg_expandarray`]); vector subscripts.
fn field_access(root: &Expr, chain: &[AccessExpr]) -> Option<Expr> {
    // `indkey[i]` or `x.indkey[i]`: the column is the root or the last
    // field before the subscript.
    if let Some((AccessExpr::Subscript(Subscript::Index { index }), path)) = chain.split_last() {
        let column = match path.last() {
            Some(AccessExpr::Dot(field)) => field,
            None => root,
            _ => return None,
        };
        if !is_vector(column) {
            return None;
        }
        let shifted = Expr::BinaryOp {
            left: Box::new(Expr::Nested(Box::new(index.clone()))),
            op: BinaryOperator::Plus,
            right: Box::new(number("1")),
        };
        let mut access_chain = path.to_vec();
        access_chain.push(AccessExpr::Subscript(Subscript::Index { index: shifted }));
        return Some(Expr::CompoundFieldAccess {
            root: Box::new(root.clone()),
            access_chain,
        });
    }
    let [AccessExpr::Dot(Expr::Identifier(field))] = chain else {
        return None;
    };
    let field = field.value.to_lowercase();
    if !matches!(field.as_str(), "x" | "n") {
        return None;
    }
    let Expr::Nested(inner) = root else {
        return None;
    };
    match inner.as_ref() {
        Expr::Function(function) if function_name(function) == "_pg_expandarray" => {
            let array = arguments(function).into_iter().next()?;
            Some(expanded(array, &field))
        }
        Expr::Identifier(alias) => Some(Expr::Identifier(Ident::new(format!(
            "{}__{field}",
            alias.value.to_lowercase()
        )))),
        Expr::CompoundIdentifier(parts) => {
            let (alias, qualifiers) = parts.split_last()?;
            let mut parts = qualifiers.to_vec();
            parts.push(Ident::new(format!("{}__{field}", alias.value.to_lowercase())));
            Some(Expr::CompoundIdentifier(parts))
        }
        _ => None,
    }
}

/// The element (`x`) or its 1-based position (`n`) of each row
/// `_pg_expandarray` produces.
fn expanded(array: Expr, field: &str) -> Expr {
    if field == "x" {
        call("unnest", vec![array])
    } else {
        subscripts(array, 1)
    }
}

/// `information_schema._pg_expandarray(a) AS keys` in a select list: two
/// columns, `keys__x` and `keys__n`, that `(keys).x` and `(keys).n` read.
fn expand_pg_expandarray(select: &mut Select) {
    let mut projection = Vec::with_capacity(select.projection.len());
    for item in std::mem::take(&mut select.projection) {
        if let SelectItem::ExprWithAlias {
            expr: Expr::Function(function),
            alias,
        } = &item
            && function_name(function) == "_pg_expandarray"
            && let Some(array) = arguments(function).into_iter().next()
        {
            let name = alias.value.to_lowercase();
            for field in ["x", "n"] {
                projection.push(SelectItem::ExprWithAlias {
                    expr: expanded(array.clone(), field),
                    alias: Ident::new(format!("{name}__{field}")),
                });
            }
            continue;
        }
        projection.push(item);
    }
    select.projection = projection;
}

/// A scalar subquery's value through [`SINGLE_VALUE`], which fails with
/// 21000 when the subquery gives more than one row, as PostgreSQL does.
fn single_value(query: &Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let [item] = select.projection.as_slice() else {
        return None;
    };
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(expr) => (expr, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
        _ => return None,
    };
    let grouped = !matches!(
        &select.group_by,
        datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, _) if exprs.is_empty()
    );
    if grouped
        || select.having.is_some()
        || select.distinct.is_some()
        || query.limit_clause.is_some()
        || query.order_by.is_some()
        || query.with.is_some()
        || select.from.is_empty()
        || aggregates(expr)
    {
        return None;
    }
    let wrapped = call(SINGLE_VALUE, vec![expr.clone()]);
    let mut rewritten = query.clone();
    if let SetExpr::Select(select) = rewritten.body.as_mut() {
        select.projection = vec![match alias {
            Some(alias) => SelectItem::ExprWithAlias {
                expr: wrapped,
                alias: alias.clone(),
            },
            None => SelectItem::UnnamedExpr(wrapped),
        }];
    }
    Some(Expr::Subquery(Box::new(rewritten)))
}

/// Whether `expr` computes an aggregate (or a window function), so its
/// subquery already gives one row per group.
fn aggregates(expr: &Expr) -> bool {
    const AGGREGATES: &[&str] = &[
        "count", "sum", "min", "max", "avg", "array_agg", "string_agg", "bool_and", "bool_or",
        "every", "json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg", "stddev",
        "variance", "bit_and", "bit_or", "first_value", "last_value",
    ];
    let found = datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| match e {
        Expr::Function(function)
            if function.over.is_some()
                || AGGREGATES.contains(&function_name(function).as_str())
                || function_name(function) == SINGLE_VALUE =>
        {
            ControlFlow::Break(())
        }
        Expr::Subquery(_) | Expr::Exists { .. } => ControlFlow::Continue(()),
        _ => ControlFlow::Continue(()),
    });
    found.is_break()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewrite(sql: &str) -> String {
        let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap().remove(0);
        apply_postgres_compatibility(&mut statement);
        statement.to_string()
    }

    #[test]
    fn catalog_constructs_become_plannable() {
        assert_eq!(
            rewrite("SELECT n.xmin, n.nspname FROM pg_catalog.pg_namespace n"),
            "SELECT CAST(1 AS BIGINT), n.nspname FROM pg_catalog.pg_namespace n"
        );
        assert_eq!(
            rewrite("SELECT min(x) AS xmin FROM t ORDER BY xmin"),
            "SELECT min(x) AS xmin FROM t ORDER BY xmin"
        );
        assert_eq!(
            rewrite("SELECT typinput = 'pg_catalog.array_in'::regproc FROM pg_type"),
            "SELECT typinput = 'array_in' FROM pg_type"
        );
        assert_eq!(
            rewrite("SELECT c.oid::regclass::text FROM pg_class c"),
            "SELECT pgaccel_regclass_name(c.oid) FROM pg_class c"
        );
        assert_eq!(
            rewrite("SELECT 1 WHERE n NOT LIKE 'pg/_' || '%' ESCAPE '/'"),
            "SELECT 1 WHERE n NOT LIKE 'pg\\_' || '%'"
        );
        assert_eq!(
            rewrite("SELECT 1 FROM c WHERE relkind = ANY($1)"),
            "SELECT 1 FROM c WHERE relkind = ANY(CAST($1 AS TEXT[]))"
        );
        assert_eq!(
            rewrite("SELECT i.indkey[k - 1] FROM pg_index i"),
            "SELECT i.indkey[(k - 1) + 1] FROM pg_index i"
        );
        assert_eq!(
            rewrite("SELECT generate_subscripts(conkey, 1) FROM pg_constraint"),
            "SELECT unnest(range(CAST(1 AS BIGINT), CAST(1 AS BIGINT) + CAST(cardinality(conkey) AS BIGINT))) FROM pg_constraint"
        );
    }

    #[test]
    fn scalar_subqueries_must_give_one_row() {
        assert_eq!(
            rewrite("SELECT (SELECT typname FROM pg_type t WHERE t.oid = a.atttypid) FROM a"),
            "SELECT (SELECT pgaccel_single_value(typname) FROM pg_type t WHERE t.oid = a.atttypid) FROM a"
        );
        assert_eq!(
            rewrite("SELECT (SELECT max(v) FROM u) FROM a"),
            "SELECT (SELECT max(v) FROM u) FROM a"
        );
        assert_eq!(
            rewrite("SELECT ARRAY(SELECT r FROM m WHERE m.x = a.x ORDER BY r) FROM a"),
            "SELECT (SELECT array_agg(r ORDER BY r) FROM m WHERE m.x = a.x) FROM a"
        );
    }
}
