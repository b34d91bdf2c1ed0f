//! Result column names as PostgreSQL gives them. DataFusion names an
//! unaliased expression after its text (`count(*)`, `Int64(1)`), PostgreSQL
//! after its function or type (`count`, `?column?`); clients and ORMs read
//! columns by name, so the top-level select list is aliased the PostgreSQL way
//! before planning.
//!
//! Follows PostgreSQL's `FigureColname` for the expressions clients commonly
//! send. PostgreSQL allows repeated result names (`SELECT 1, 2` gives two
//! `?column?`); DataFusion does not, so a repeated name gets a hidden suffix
//! that [`display_name`] removes when the row description is written.

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Ident, Query, SelectItem, SetExpr, Statement,
};

/// Marks the start of the suffix that keeps repeated names unique.
const HIDDEN_SUFFIX: &str = "\u{1}pgaccel#";

/// The name a client sees for a result column.
pub fn display_name(name: &str) -> &str {
    name.split_once(HIDDEN_SUFFIX)
        .map_or(name, |(shown, _)| shown)
}

/// Aliases the unaliased items of the outermost select list, and of every
/// CTE and derived table whose columns the query does not name itself
/// (`WITH w AS (SELECT count(1) ...) SELECT ... ORDER BY count` reads
/// PostgreSQL's name of that column).
pub fn apply_postgres_names(statement: &mut Statement) {
    use datafusion::sql::sqlparser::ast::{TableFactor, VisitMut, VisitorMut};
    use std::ops::ControlFlow;

    struct Inner;
    impl VisitorMut for Inner {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            if let Some(with) = &mut query.with {
                for cte in &mut with.cte_tables {
                    if cte.alias.columns.is_empty() {
                        name_query(&mut cte.query);
                    }
                }
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Derived {
                subquery, alias, ..
            } = factor
                && alias.as_ref().is_none_or(|alias| alias.columns.is_empty())
            {
                name_query(subquery);
            }
            ControlFlow::Continue(())
        }
    }

    if let Statement::Query(query) = statement {
        let _ = query.visit(&mut Inner);
        name_query(query);
    }
}

fn name_query(query: &mut Query) {
    if let Some(select) = leftmost_select(&mut query.body) {
        name_items(&mut select.projection);
    }
}

fn leftmost_select(body: &mut SetExpr) -> Option<&mut datafusion::sql::sqlparser::ast::Select> {
    match body {
        SetExpr::Select(select) => Some(select),
        SetExpr::Query(query) => leftmost_select(&mut query.body),
        SetExpr::SetOperation { left, .. } => leftmost_select(left),
        _ => None,
    }
}

fn name_items(items: &mut [SelectItem]) {
    // Beside a `*`, a column may come twice (`SELECT n.oid, n.*`).
    let wildcard = items.iter().any(|item| {
        matches!(
            item,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    });
    // A plain column listed again (`SELECT id, id`): the later ones get
    // the hidden suffix too.
    let plain: Vec<Option<String>> = items
        .iter()
        .map(|item| match item {
            SelectItem::UnnamedExpr(expr) if !needs_alias(expr) => explicit_name(item),
            _ => None,
        })
        .collect();
    let figured: Vec<Option<String>> = items
        .iter()
        .enumerate()
        .map(|(index, item)| match item {
            SelectItem::UnnamedExpr(expr) if needs_alias(expr) || wildcard => {
                Some(figure(expr).unwrap_or_else(|| "?column?".into()))
            }
            SelectItem::UnnamedExpr(_)
                if plain[index].is_some() && plain[..index].contains(&plain[index]) =>
            {
                plain[index].clone()
            }
            _ => None,
        })
        .collect();
    let taken: Vec<String> = items.iter().filter_map(explicit_name).collect();
    // An alias given twice (`SELECT 1 AS x, 2 AS x`): the later ones get
    // the hidden suffix, as PostgreSQL allows repeated names.
    let mut seen: Vec<String> = Vec::new();
    for (index, item) in items.iter_mut().enumerate() {
        if let SelectItem::ExprWithAlias { alias, .. } = item {
            let name = if alias.quote_style.is_some() {
                alias.value.clone()
            } else {
                alias.value.to_lowercase()
            };
            if seen.contains(&name) {
                *alias = Ident::with_quote('"', format!("{name}{HIDDEN_SUFFIX}{index}"));
            } else {
                seen.push(name);
            }
        }
    }
    for (index, item) in items.iter_mut().enumerate() {
        let Some(name) = &figured[index] else {
            continue;
        };
        // A name taken from a column inside an expression (`c.oid::regclass`
        // is named `oid`) is kept apart from that column, which the query
        // may also sort or group by.
        let from_column = matches!(
            item,
            SelectItem::UnnamedExpr(Expr::Cast { .. } | Expr::Case { .. } | Expr::Nested(_))
        );
        let repeats = from_column
            || wildcard
            || figured
                .iter()
                .flatten()
                .filter(|other| *other == name)
                .count()
                > 1
            || taken.iter().any(|other| other == name);
        let alias = if repeats {
            format!("{name}{HIDDEN_SUFFIX}{index}")
        } else {
            name.clone()
        };
        if let SelectItem::UnnamedExpr(expr) = item {
            *item = SelectItem::ExprWithAlias {
                expr: expr.clone(),
                alias: Ident::with_quote('"', alias),
            };
        }
    }
}

/// Names already fixed: aliases and plain column references.
fn explicit_name(item: &SelectItem) -> Option<String> {
    match item {
        SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
        SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Some(ident.value.to_lowercase()),
        SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
            parts.last().map(|p| p.value.to_lowercase())
        }
        _ => None,
    }
}

/// Column references already carry the PostgreSQL name.
fn needs_alias(expr: &Expr) -> bool {
    !matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_))
}

/// PostgreSQL's name for an expression, `None` for `?column?`.
fn figure(expr: &Expr) -> Option<String> {
    figure_with_strength(expr).0
}

/// PostgreSQL's `FigureColname`: a name and how strongly the expression
/// claims it (2: a column or function; 1: a type or `case`; 0: none). A
/// cast keeps its operand's strong name, else takes the type's; a `CASE`
/// takes its `ELSE` result's strong name, else `case`.
fn figure_with_strength(expr: &Expr) -> (Option<String>, u8) {
    let strong = |name: &str| (Some(name.to_owned()), 2);
    match expr {
        Expr::Identifier(ident) => (Some(ident.value.to_lowercase()), 2),
        Expr::CompoundIdentifier(parts) => (parts.last().map(|p| p.value.to_lowercase()), 2),
        Expr::Function(function) => (
            function
                .name
                .0
                .last()
                .map(|part| part.to_string().to_lowercase()),
            2,
        ),
        Expr::Nested(inner) | Expr::Collate { expr: inner, .. } => figure_with_strength(inner),
        // An element of an array is named as the array (`(ARRAY[1, 2])[1]`
        // is `array`, `tags[1]` is `tags`).
        Expr::CompoundFieldAccess { root, access_chain }
            if access_chain.iter().all(|access| {
                matches!(
                    access,
                    datafusion::sql::sqlparser::ast::AccessExpr::Subscript(_)
                )
            }) =>
        {
            figure_with_strength(root)
        }
        Expr::Cast {
            kind: CastKind::Cast | CastKind::DoubleColon,
            expr,
            data_type,
            ..
        } => match figure_with_strength(expr) {
            (name, 2) => (name, 2),
            _ => (Some(type_name(data_type)), 1),
        },
        Expr::Cast { expr, .. } => figure_with_strength(expr),
        Expr::TypedString(typed) => (Some(type_name(&typed.data_type)), 1),
        Expr::Case { else_result, .. } => match else_result.as_deref().map(figure_with_strength) {
            Some((name, 2)) => (name, 2),
            _ => (Some("case".into()), 1),
        },
        Expr::Exists { .. } => strong("exists"),
        Expr::Array(_) => strong("array"),
        Expr::Subquery(query) => (subquery_name(query), 2),
        Expr::Extract { .. } => strong("extract"),
        Expr::AtTimeZone { .. } => strong("timezone"),
        // `(a, b) OVERLAPS (c, d)` calls the function `overlaps`.
        Expr::BinaryOp {
            op: datafusion::sql::sqlparser::ast::BinaryOperator::Overlaps,
            ..
        } => strong("overlaps"),
        // `substr(...)` is a function of its own name in PostgreSQL.
        Expr::Substring {
            shorthand: true, ..
        } => strong("substr"),
        Expr::Substring { .. } => strong("substring"),
        Expr::Position { .. } => strong("position"),
        Expr::Overlay { .. } => strong("overlay"),
        Expr::Trim { .. } => strong("btrim"),
        Expr::Ceil { .. } => strong("ceil"),
        Expr::Floor { .. } => strong("floor"),
        Expr::Interval(_) => strong("interval"),
        _ => (None, 0),
    }
}

fn subquery_name(query: &Query) -> Option<String> {
    let mut query = query.clone();
    let select = leftmost_select(&mut query.body)?;
    match select.projection.first()? {
        SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
        SelectItem::UnnamedExpr(expr) => figure(expr),
        _ => None,
    }
}

/// PostgreSQL's internal name of a type in a cast (`1::integer` → `int4`).
fn type_name(data_type: &DataType) -> String {
    use datafusion::sql::sqlparser::ast::ArrayElemTypeDef;
    // An array type is named by its element type (`'{1}'::int[]` is
    // `int4`), as PostgreSQL names it by its last name without bounds.
    if let DataType::Array(
        ArrayElemTypeDef::AngleBracket(element)
        | ArrayElemTypeDef::SquareBracket(element, _)
        | ArrayElemTypeDef::Parenthesis(element),
    ) = data_type
    {
        return type_name(element);
    }
    let text = data_type.to_string().to_lowercase();
    // A schema-qualified type (`pg_catalog.text`) names itself without it.
    let text = match text.split('(').next().unwrap_or(&text).rsplit_once('.') {
        Some((_, name)) => name.trim_matches('"').to_owned(),
        None => text,
    };
    let base = text.split('(').next().unwrap_or(&text).trim();
    match base {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "real" | "float4" => "float4",
        "double precision" | "float8" | "double" | "float" => "float8",
        "boolean" | "bool" => "bool",
        "character varying" | "varchar" => "varchar",
        "character" | "char" => "bpchar",
        "decimal" | "numeric" => "numeric",
        "timestamp with time zone" | "timestamptz" => "timestamptz",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "time" | "time without time zone" => "time",
        other => return other.to_owned(),
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn names(sql: &str) -> Vec<String> {
        let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        apply_postgres_names(&mut statement);
        let Statement::Query(mut query) = statement else {
            panic!()
        };
        leftmost_select(&mut query.body)
            .unwrap()
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => display_name(&alias.value).to_owned(),
                other => format!("<{other}>"),
            })
            .collect()
    }

    #[test]
    fn names_follow_postgres() {
        assert_eq!(
            names(
                "SELECT count(*), 1, 'a' || 'b', 1::integer, CAST(x AS text), max(y) AS m FROM t"
            ),
            ["count", "?column?", "?column?", "int4", "x", "m"]
        );
        assert_eq!(
            names(
                "SELECT CASE WHEN a THEN 1 END, (SELECT max(v) FROM u), date '2020-01-01' FROM t"
            ),
            ["case", "max", "date"]
        );
        assert_eq!(
            names(
                "SELECT CASE WHEN a THEN '' ELSE c.kind::pg_catalog.text END, n::pg_catalog.text, (CASE WHEN a THEN 1 END)::text FROM t"
            ),
            ["kind", "n", "text"]
        );
    }

    #[test]
    fn repeated_names_stay_unique_inside() {
        assert_eq!(
            names("SELECT count(*), count(a) FROM t"),
            ["count", "count"]
        );
        assert_eq!(names("SELECT 1, 2"), ["?column?", "?column?"]);
        assert_eq!(
            names("SELECT a, max(b) AS a2, sum(c) FROM t"),
            ["<a>", "a2", "sum"]
        );
        assert_eq!(
            names("SELECT a, max(b) AS sum, sum(c) FROM t"),
            ["<a>", "sum", "sum"]
        );
    }

    #[test]
    fn ctes_and_derived_tables_are_named_too() {
        let sql = "WITH w AS (SELECT count(1) FROM t), v(n) AS (SELECT count(1) FROM t) \
                   SELECT * FROM w, v, (SELECT max(x) FROM t) d";
        let mut statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        apply_postgres_names(&mut statement);
        assert_eq!(
            statement.to_string(),
            "WITH w AS (SELECT count(1) AS \"count\" FROM t), v (n) AS (SELECT count(1) FROM t) \
             SELECT * FROM w, v, (SELECT max(x) AS \"max\" FROM t) d"
        );
    }

    #[test]
    fn substr_is_named_substr() {
        assert_eq!(
            names("SELECT substr(t, 2), substring(t FROM 2)"),
            ["substr", "substring"]
        );
    }

    #[test]
    fn repeated_aliases_are_allowed() {
        assert_eq!(
            names("SELECT 1 AS one, 2 AS one, 3 AS \"One\""),
            ["one", "one", "One"]
        );
    }
}
