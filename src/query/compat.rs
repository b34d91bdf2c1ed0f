//! PostgreSQL constructs that catalog queries use and DataFusion does not
//! plan, rewritten into equivalents it does, before planning:
//!
//! - system columns of catalog rows (`xmin`, `ctid`, `tableoid`);
//! - `oid::regclass` (and `regtype`, `regnamespace`, `regproc`, `regrole`)
//!   printed as names, and `'name'::regproc` compared with the catalog's
//!   function-name columns;
//! - `"char"`, `name`, `xid` casts, and `uuid` and `bytea` ones (see
//!   [`super::pg_types`]), `json`/`jsonb` ones ([`super::json`]), and
//!   `interval` ones and literals, read in
//!   PostgreSQL's interval syntax;
//! - `LIKE ... ESCAPE` with another escape character than `\`;
//! - `ARRAY(subquery)`, `generate_subscripts()`, pgjdbc's
//!   `information_schema._pg_expandarray()`;
//! - `int2vector`/`oidvector` subscripts, which start at 0;
//! - scalar subqueries, which must give at most one row (21000 otherwise),
//!   through an aggregate that checks it (DataFusion also requires
//!   correlated ones to be aggregated);
//! - `EXISTS (subquery)` in a select list, as a count of its rows
//!   (DataFusion plans `EXISTS` only in filters);
//! - `generate_series()` in a select list, whose rows are the query's;
//! - `substring(text FROM pattern)`, the regular-expression form;
//! - `row_to_json(alias)` of a derived table whose columns are named;
//! - `SELECT DISTINCT ON (k) ..., (subquery) ...`, as DISTINCT ON over a
//!   derived table that computes the subqueries;
//! - `CROSS JOIN f(t.x) AS v`, a function of one value over another FROM
//!   item's columns, as `f(t.x)` wherever `v` is read;
//! - `FROM t CROSS JOIN unnest(t.a) [WITH ORDINALITY] u(x, n)`, a lateral
//!   unnest of a table's array, as `unnest()` in a select list over `t`;
//! - `JOIN LATERAL (... ORDER BY ... LIMIT n)`, the first rows of a
//!   subquery per outer row, as a join on numbered rows
//!   ([`super::lateral_limit`]);
//! - row constructors compared, or tested with `IN`, field by field
//!   ([`super::row_values`]);
//! - the recursive walk from a type down its domains' base types
//!   (asyncpg's type introspection), correlated with the outer row, as
//!   a lookup of the same walk in the catalog's types.
//!
//! Each rewrite keeps PostgreSQL's result; a query that does not use these
//! constructs is left as it is.

use std::collections::HashMap;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    AccessExpr, BinaryOperator, CastKind, DataType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, Ident, ObjectName, ObjectNamePart, OrderByKind, Query,
    Select, SelectItem, SetExpr, SetOperator, SetQuantifier, Statement, Subscript, TableAlias,
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

/// Catalog columns of type `regproc` (kept as function names), which tools
/// cast to `oid` to join with `pg_proc`.
const REGPROC_COLUMNS: &[&str] = &[
    "amhandler",
    "aggfnoid",
    "aggtransfn",
    "aggfinalfn",
    "typinput",
    "typoutput",
    "typreceive",
    "typsend",
    "typmodin",
    "typmodout",
    "typanalyze",
    "typsubscript",
    "oprcode",
    "oprrest",
    "oprjoin",
    "prosupport",
    "castfunc",
    "lanplcallfoid",
];

/// Rewrites `statement` as the module doc says.
pub fn apply_postgres_compatibility(statement: &mut Statement) {
    super::outer_using::qualify_outer_using_columns(statement);
    print_reg_outputs(statement);
    any_for_some(statement);
    let _ = statement.visit(&mut Compatibility::default());
}

/// `x = SOME(array)` as `x = ANY(array)`, which it means: the `SOME`
/// spelling is the mark [`filtering_any`] leaves on the conjuncts of a
/// WHERE clause, so a `SOME` of the query's own must not carry it.
fn any_for_some(statement: &mut Statement) {
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(statement, |expr| {
        if let Expr::AnyOp { is_some, .. } = expr {
            *is_some = false;
        }
        ControlFlow::<()>::Continue(())
    });
}

/// `SELECT c.oid::regclass, 'pg_class'::regclass`: a `reg*` value in the
/// result prints as the name PostgreSQL prints (`pg_class`,
/// `myschema.orders`); elsewhere (compared, joined) it stays the OID.
fn print_reg_outputs(statement: &mut Statement) {
    let Statement::Query(query) = statement else {
        return;
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    for item in &mut select.projection {
        let (SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. }) = item else {
            continue;
        };
        if let Expr::Cast { data_type, .. } = &*expr
            && let Some(function) = custom_type(data_type).as_deref().and_then(name_function)
        {
            *expr = call(function, vec![expr.clone()]);
        }
    }
}

/// The aliases (and unaliased table names) of every FROM in `statement`,
/// lower case.
pub fn relation_aliases(statement: &Statement) -> Vec<String> {
    use datafusion::sql::sqlparser::ast::Visit;
    struct Aliases(Vec<String>);
    impl datafusion::sql::sqlparser::ast::Visitor for Aliases {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
            self.0.extend(factor_name(factor));
            ControlFlow::Continue(())
        }
    }
    let mut aliases = Aliases(Vec::new());
    let _ = statement.visit(&mut aliases);
    aliases.0
}

#[derive(Default)]
struct Compatibility {
    /// Per select being visited: its FROM aliases (and table names) and the
    /// catalog relation each names.
    relations: Vec<HashMap<String, String>>,
    /// Per select being visited: its output column names.
    outputs: Vec<Vec<String>>,
    /// Per select being visited: the derived tables of its FROM whose
    /// column names are all known, by alias.
    derived: Vec<HashMap<String, Vec<Ident>>>,
    /// `SELECT *` items marked for [`super::using_joins`] so far.
    using_wildcards: usize,
}

impl VisitorMut for Compatibility {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        fetch_with_ties(query);
        fetch_as_limit(query);
        name_cte_union_columns(query);
        self.using_wildcards += mark_using_wildcard(query, self.using_wildcards);
        lateral_scalar_functions(query);
        super::lateral_aggregate::lateral_aggregates(query);
        distinct_on_over_subqueries(query);
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        if let Some(selection) = &mut select.selection {
            filtering_any(selection);
        }
        super::lateral_limit::top_rows_per_outer_row(select);
        grouping_set_positions(select);
        string_aggs_as_arrays(select);
        super::row_values::row_in_subqueries(select);
        expand_pg_expandarray(select);
        unnest_into_relation(select);
        select_list_set_functions(select);
        let mut relations = HashMap::new();
        let mut derived = HashMap::new();
        for table in &select.from {
            for factor in
                std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation))
            {
                if let TableFactor::Derived {
                    subquery,
                    alias: Some(alias),
                    ..
                } = factor
                    && let Some(columns) = derived_columns(subquery, alias)
                {
                    derived.insert(alias.name.value.to_lowercase(), columns);
                }
                if let TableFactor::Table {
                    name,
                    alias,
                    args: None,
                    ..
                } = factor
                {
                    let relation = last_part(name).to_lowercase();
                    relations.insert(relation.clone(), relation.clone());
                    if let Some(alias) = alias {
                        relations.insert(alias.name.value.to_lowercase(), relation);
                    }
                }
            }
        }
        self.relations.push(relations);
        self.derived.push(derived);
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
        name_series_column(factor);
        name_unnest_column(factor);
        ControlFlow::Continue(())
    }

    fn post_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        interval_named_window_offsets(select);
        self.relations.pop();
        self.outputs.pop();
        self.derived.pop();
        ControlFlow::Continue(())
    }

    /// Rewritten before the subquery inside is visited as a scalar one.
    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let replacement = match expr {
            Expr::AnyOp {
                left,
                compare_op,
                right,
                is_some,
            } => quantified_subquery(left, compare_op, right, false).or_else(|| {
                (*compare_op == BinaryOperator::Eq && !*is_some).then(|| any_equal(left, right))?
            }),
            Expr::AllOp {
                left,
                compare_op,
                right,
            } => quantified_subquery(left, compare_op, right, true).or_else(|| {
                (*compare_op == BinaryOperator::NotEq)
                    .then(|| any_equal(left, right))?
                    .map(|any| Expr::UnaryOp {
                        op: datafusion::sql::sqlparser::ast::UnaryOperator::Not,
                        expr: Box::new(Expr::Nested(Box::new(any))),
                    })
            }),
            _ => None,
        };
        if let Some(replacement) = replacement {
            *expr = replacement;
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        interval_frame_offsets(expr);
        if let Some(replacement) = self.rewrite(expr) {
            *expr = replacement;
        }
        ControlFlow::Continue(())
    }
}

impl Compatibility {
    fn rewrite(&self, expr: &Expr) -> Option<Expr> {
        if let Some(fields) = super::row_values::rewrite(expr) {
            return Some(fields);
        }
        match expr {
            // PostgreSQL's prefix operators `|/` (square root), `||/` (cube
            // root), `@` (absolute value) and `~` (bitwise not), which
            // DataFusion does not plan.
            Expr::UnaryOp { op, expr: operand } => {
                use datafusion::sql::sqlparser::ast::UnaryOperator;
                let operand = (**operand).clone();
                match op {
                    // Both are defined for double precision only.
                    UnaryOperator::PGSquareRoot => Some(call("sqrt", vec![double(operand)])),
                    UnaryOperator::PGCubeRoot => Some(call("cbrt", vec![double(operand)])),
                    UnaryOperator::PGAbs => Some(call("abs", vec![operand])),
                    UnaryOperator::BitwiseNot => Some(Expr::Nested(Box::new(Expr::BinaryOp {
                        left: Box::new(Expr::Nested(Box::new(operand))),
                        op: BinaryOperator::PGBitwiseXor,
                        // A smallint stays one (`~x` is of x's type).
                        right: Box::new(cast_to(number("-1"), DataType::SmallInt(None))),
                    }))),
                    _ => None,
                }
            }
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
                any: true,
                negated,
                expr: value,
                pattern,
                escape_char,
            } => like_any(*negated, value, pattern, escape_char.as_ref(), false),
            Expr::ILike {
                any: true,
                negated,
                expr: value,
                pattern,
                escape_char,
            } => like_any(*negated, value, pattern, escape_char.as_ref(), true),
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
            Expr::Function(function) => {
                let dotall = regex_function_dotall(function);
                let function = dotall.as_ref().unwrap_or(function);
                self.row_to_json(function)
                    .map(|row| match &row {
                        // `json_agg(t)`: the aggregate as any other.
                        Expr::Function(aggregate) => function_call(aggregate).unwrap_or(row),
                        _ => row,
                    })
                    .or_else(|| function_call(function))
                    .or_else(|| dotall.clone().map(Expr::Function))
            }
            // `(a, b) OVERLAPS (c, d)` (see `super::overlaps`).
            Expr::BinaryOp {
                left,
                op: BinaryOperator::Overlaps,
                right,
            } => match (left.as_ref(), right.as_ref()) {
                (Expr::Tuple(first), Expr::Tuple(second))
                    if first.len() == 2 && second.len() == 2 =>
                {
                    Some(call(
                        super::overlaps::NAME,
                        first.iter().chain(second).cloned().collect(),
                    ))
                }
                _ => None,
            },
            // `a ^@ b` is `starts_with(a, b)`.
            Expr::BinaryOp {
                left,
                op: BinaryOperator::PGStartsWith,
                right,
            } => Some(call(
                "starts_with",
                vec![(**left).clone(), (**right).clone()],
            )),
            Expr::BinaryOp { left, op, right }
                if matches!(
                    op,
                    BinaryOperator::PGRegexMatch
                        | BinaryOperator::PGRegexIMatch
                        | BinaryOperator::PGRegexNotMatch
                        | BinaryOperator::PGRegexNotIMatch
                ) && !is_dotall(right) =>
            {
                Some(Expr::BinaryOp {
                    left: left.clone(),
                    op: op.clone(),
                    right: Box::new(dotall_pattern(right)),
                })
            }
            Expr::Substring {
                expr: text,
                substring_from: Some(pattern),
                substring_for: None,
                ..
            } if is_string_literal(pattern) => Some(regexp_substring(text, pattern)),
            Expr::BinaryOp { left, op, right }
                if matches!(op, BinaryOperator::Eq | BinaryOperator::NotEq) =>
            {
                regproc_comparison(left, op, right)
            }
            Expr::CompoundFieldAccess { root, access_chain } => field_access(root, access_chain),
            Expr::SimilarTo {
                negated,
                expr: value,
                pattern,
                escape_char,
            } => similar_to(*negated, value, pattern, escape_char.as_ref()),
            // `U&'d\0061t'`: the parser has decoded the escapes already.
            Expr::Value(value) => match &value.value {
                Value::UnicodeStringLiteral(text) => Some(string(text)),
                _ => None,
            },
            // `date 'infinity'`.
            Expr::TypedString(typed)
                if typed.data_type == DataType::Date
                    && let Value::SingleQuotedString(text) = &typed.value.value
                    && let Some(day) = infinite_date(text) =>
            {
                Some(day)
            }
            // `date 'today'`, `timestamp 'epoch'`.
            Expr::TypedString(typed)
                if let Value::SingleQuotedString(text) = &typed.value.value
                    && let Some(moment) = special_moment(text, &typed.data_type) =>
            {
                Some(moment)
            }
            // `numeric '1.50'` is `'1.50'::numeric`, which keeps the
            // literal's scale (the engine's typed literal takes its default).
            Expr::TypedString(typed)
                if matches!(
                    typed.data_type,
                    DataType::Numeric(_) | DataType::Decimal(_) | DataType::Dec(_)
                ) && let Value::SingleQuotedString(text) = &typed.value.value =>
            {
                let literal = string(text);
                cast(&literal, &typed.data_type, &CastKind::DoubleColon).or(Some(Expr::Cast {
                    kind: CastKind::DoubleColon,
                    expr: Box::new(literal),
                    data_type: typed.data_type.clone(),
                    array: false,
                    format: None,
                }))
            }
            // `timestamp 'infinity'`: refused as `'infinity'::timestamp` is.
            Expr::TypedString(typed)
                if matches!(typed.data_type, DataType::Timestamp(..))
                    && let Value::SingleQuotedString(text) = &typed.value.value
                    && invalid_literal(&string(text), &typed.data_type).is_some() =>
            {
                cast(&string(text), &typed.data_type, &CastKind::Cast)
            }
            Expr::TypedString(typed) if matches!(typed.data_type, DataType::Timestamp(None, _)) => {
                let DataType::Timestamp(None, zone) = typed.data_type else {
                    return None;
                };
                let mut typed = typed.clone();
                typed.data_type = DataType::Timestamp(Some(6), zone);
                if let Value::SingleQuotedString(text) = &mut typed.value.value
                    && let Some(full) = with_seconds(text)
                {
                    *text = full;
                }
                Some(Expr::TypedString(typed))
            }
            Expr::AtTimeZone {
                timestamp,
                time_zone,
            } => Some(call(
                super::temporal::AT_TIME_ZONE_FUNCTION,
                vec![(**timestamp).clone(), (**time_zone).clone()],
            )),
            // PostgreSQL's `extract` is a numeric (`date_part` a float8).
            Expr::Extract { field, expr, .. } => Some(call(
                super::temporal::EXTRACT_FUNCTION,
                vec![string(&field.to_string().to_lowercase()), (**expr).clone()],
            )),
            Expr::Subquery(query) => domain_base_type(query).or_else(|| scalar_subquery(query)),
            // `INTERVAL '1 day 02:03:04'`, in PostgreSQL's syntax.
            Expr::Interval(interval)
                if interval.leading_field.is_none()
                    && interval.last_field.is_none()
                    && interval.fractional_seconds_precision.is_none()
                    && is_string_literal(&interval.value) =>
            {
                Some(call(
                    super::pg_types::INTERVAL_FUNCTION,
                    vec![(*interval.value).clone()],
                ))
            }
            _ => None,
        }
    }

    /// `row_to_json(t)` (and the other functions of a whole row, see
    /// [`super::row_json`]) of a derived table `t` of this select whose
    /// column names are known.
    fn row_to_json(&self, function: &Function) -> Option<Expr> {
        let alias = super::row_json::whole_row_alias(function)?;
        let columns = self.derived.last()?.get(&alias.value.to_lowercase())?;
        Some(super::row_json::with_row_object(function, &alias, columns))
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
                if self
                    .outputs
                    .last()
                    .is_some_and(|outputs| outputs.contains(&name))
                {
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

/// Whether a FROM item joins with `USING` or `NATURAL` (or holds a
/// derived table whose `SELECT *` does), where `*` lists columns in
/// PostgreSQL's own order (see [`super::using_joins`]).
pub(super) fn lists_using_columns(
    from: &[datafusion::sql::sqlparser::ast::TableWithJoins],
) -> bool {
    use datafusion::sql::sqlparser::ast::{JoinConstraint, JoinOperator};
    fn factor(relation: &TableFactor) -> bool {
        match relation {
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => lists_using_columns(std::slice::from_ref(table_with_joins)),
            TableFactor::Derived { subquery, .. } => using_wildcard(subquery),
            _ => false,
        }
    }
    from.iter().any(|table| {
        factor(&table.relation)
            || table.joins.iter().any(|join| {
                let constraint = match &join.join_operator {
                    JoinOperator::Join(c)
                    | JoinOperator::Inner(c)
                    | JoinOperator::Left(c)
                    | JoinOperator::LeftOuter(c)
                    | JoinOperator::Right(c)
                    | JoinOperator::RightOuter(c)
                    | JoinOperator::FullOuter(c) => Some(c),
                    _ => None,
                };
                matches!(
                    constraint,
                    Some(JoinConstraint::Using(_) | JoinConstraint::Natural)
                ) || factor(&join.relation)
            })
    })
}

/// Whether `query` is a `SELECT *` over a join [`lists_using_columns`].
fn using_wildcard(query: &Query) -> bool {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return false;
    };
    matches!(select.projection.as_slice(), [SelectItem::Wildcard(_)])
        && lists_using_columns(&select.from)
}

/// Marks a `SELECT *` that [`using_wildcard`] finds with a last select item
/// for [`super::using_joins`], named apart from the `earlier` ones (a
/// derived table's marker is among the columns of the `*` above it); its
/// value says whether ORDER BY names a column position, which the new
/// order would move. The count of markers added (0 or 1).
fn mark_using_wildcard(query: &mut Query, earlier: usize) -> usize {
    if !using_wildcard(query) {
        return 0;
    }
    order_by_join_columns(query);
    let positional = order_by_items(query)
        .iter()
        .any(|expr| matches!(expr, Expr::Value(v) if matches!(v.value, Value::Number(..))));
    let SetExpr::Select(select) = query.body.as_mut() else {
        return 0;
    };
    select.projection.push(SelectItem::ExprWithAlias {
        expr: string(if positional {
            super::using_joins::POSITIONAL
        } else {
            ""
        }),
        alias: Ident::new(format!("{}{earlier}", super::using_joins::MARKER)),
    });
    1
}

/// `ORDER BY 1` over `SELECT * FROM a JOIN b USING (k)`: the positions of
/// the join columns, which `*` lists first, as the columns themselves (the
/// value PostgreSQL gives each), for a select of one such join.
fn order_by_join_columns(query: &mut Query) {
    use datafusion::sql::sqlparser::ast::{JoinConstraint, JoinOperator, ObjectNamePart};
    let SetExpr::Select(select) = query.body.as_ref() else {
        return;
    };
    let [table] = select.from.as_slice() else {
        return;
    };
    let [join] = table.joins.as_slice() else {
        return;
    };
    // The join's columns by their bare names, which name the value
    // PostgreSQL gives them (see `super::outer_using`).
    let keys: Vec<Expr> = match &join.join_operator {
        JoinOperator::Join(JoinConstraint::Using(columns))
        | JoinOperator::Inner(JoinConstraint::Using(columns))
        | JoinOperator::Left(JoinConstraint::Using(columns))
        | JoinOperator::LeftOuter(JoinConstraint::Using(columns))
        | JoinOperator::Right(JoinConstraint::Using(columns))
        | JoinOperator::RightOuter(JoinConstraint::Using(columns))
        | JoinOperator::FullOuter(JoinConstraint::Using(columns)) => columns
            .iter()
            .filter_map(|column| match column.0.last() {
                Some(ObjectNamePart::Identifier(key)) => Some(Expr::Identifier(key.clone())),
                _ => None,
            })
            .collect(),
        _ => return,
    };
    let Some(OrderByKind::Expressions(items)) =
        query.order_by.as_mut().map(|order_by| &mut order_by.kind)
    else {
        return;
    };
    for item in items {
        if let Expr::Value(v) = &item.expr
            && let Value::Number(position, _) = &v.value
            && let Ok(position) = position.parse::<usize>()
            && let Some(key) = position.checked_sub(1).and_then(|index| keys.get(index))
        {
            item.expr = key.clone();
        }
    }
}

fn order_by_items(query: &Query) -> Vec<Expr> {
    match query.order_by.as_ref().map(|order_by| &order_by.kind) {
        Some(OrderByKind::Expressions(exprs)) => exprs.iter().map(|e| e.expr.clone()).collect(),
        _ => Vec::new(),
    }
}

/// `WITH r(a, b) AS (SELECT 1, 1 UNION ALL SELECT a + 1, a + 1 FROM r)`:
/// the column list names the columns, so each branch's unnamed items are
/// named by it (DataFusion refuses a branch that computes the same
/// expression twice, `a + 1` and `a + 1`, as two columns of one name).
/// Only for a union without ORDER BY, whose items are named by the list
/// alone.
fn name_cte_union_columns(query: &mut Query) {
    fn name_items(body: &mut SetExpr, names: &[Ident]) {
        match body {
            SetExpr::Select(select) => {
                if select.projection.len() != names.len() {
                    return;
                }
                for (item, name) in select.projection.iter_mut().zip(names) {
                    if let SelectItem::UnnamedExpr(expr) = item {
                        *item = SelectItem::ExprWithAlias {
                            expr: expr.clone(),
                            alias: name.clone(),
                        };
                    }
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                name_items(left, names);
                name_items(right, names);
            }
            _ => {}
        }
    }
    let Some(with) = &mut query.with else {
        return;
    };
    for cte in &mut with.cte_tables {
        if cte.alias.columns.is_empty()
            || cte.query.order_by.is_some()
            || !matches!(cte.query.body.as_ref(), SetExpr::SetOperation { .. })
        {
            continue;
        }
        let names: Vec<Ident> = cte.alias.columns.iter().map(|c| c.name.clone()).collect();
        name_items(&mut cte.query.body, &names);
    }
}

/// `RANGE BETWEEN interval '1 day' PRECEDING ...`: DataFusion takes a frame
/// offset only as an `INTERVAL` literal in its own units, so the interval
/// (read as PostgreSQL reads it, see [`super::pg_types::INTERVAL_FUNCTION`])
/// is spelled in months, days and nanoseconds.
fn interval_frame_offsets(expr: &mut Expr) {
    use datafusion::sql::sqlparser::ast::WindowType;
    let Expr::Function(function) = expr else {
        return;
    };
    let Some(WindowType::WindowSpec(spec)) = &mut function.over else {
        return;
    };
    interval_spec_offsets(spec);
}

/// [`interval_frame_offsets`] of the windows a select names.
fn interval_named_window_offsets(select: &mut Select) {
    use datafusion::sql::sqlparser::ast::{NamedWindowDefinition, NamedWindowExpr};
    for NamedWindowDefinition(_, window) in &mut select.named_window {
        if let NamedWindowExpr::WindowSpec(spec) = window {
            interval_spec_offsets(spec);
        }
    }
}

fn interval_spec_offsets(spec: &mut datafusion::sql::sqlparser::ast::WindowSpec) {
    use datafusion::sql::sqlparser::ast::Interval;
    for offset in super::literals::spec_offsets(spec) {
        let Expr::Function(call) = &*offset else {
            continue;
        };
        if function_name(call) != super::pg_types::INTERVAL_FUNCTION {
            continue;
        }
        let text = match arguments(call).as_slice() {
            [Expr::Value(value)] => match &value.value {
                Value::SingleQuotedString(text) => text.clone(),
                _ => continue,
            },
            _ => continue,
        };
        let Ok(interval) = super::interval::parse_interval(&text) else {
            continue;
        };
        *offset = Expr::Interval(Interval {
            value: Box::new(string(&format!(
                "{} months {} days {} nanoseconds",
                interval.months, interval.days, interval.nanoseconds
            ))),
            leading_field: None,
            leading_precision: None,
            last_field: None,
            fractional_seconds_precision: None,
        });
    }
}

/// PostgreSQL reads a time without seconds (`2024-03-09 12:00+00`); Arrow's
/// parser wants them: `2024-03-09 12:00:00+00`. `None` when the text has
/// them already or is not a date and time.
pub(crate) fn with_seconds(text: &str) -> Option<String> {
    let (date, rest) = text.split_at_checked(10)?;
    let date_shaped = date.bytes().enumerate().all(|(i, b)| match i {
        4 | 7 => b == b'-',
        _ => b.is_ascii_digit(),
    });
    let separator = rest.chars().next()?;
    if !date_shaped || !matches!(separator, ' ' | 'T') {
        return None;
    }
    let time = &rest[1..];
    let colon = time.find(':')?;
    let (hours, after_hours) = time.split_at(colon);
    let minutes = after_hours.get(1..3)?;
    let after = &after_hours[3..];
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    if !digits(hours) || hours.len() > 2 || !digits(minutes) {
        return None;
    }
    if after.starts_with(|c: char| c == ':' || c == '.' || c.is_ascii_digit()) {
        return None;
    }
    Some(format!("{date}{separator}{hours}:{minutes}:00{after}"))
}

/// `FROM generate_series(1, 5) AS n`: PostgreSQL names the column of a
/// one-column function by a bare alias, as `AS n(n)` does. `WITH
/// ORDINALITY` calls the series function that adds the `ordinality` column.
/// Only for constant arguments: a series over other values (Grafana's
/// search path query) keeps the form its stand-in recognises.
fn name_series_column(factor: &mut TableFactor) {
    let TableFactor::Table {
        name,
        alias,
        args: Some(args),
        with_ordinality,
        ..
    } = factor
    else {
        return;
    };
    if !last_part(name).eq_ignore_ascii_case("generate_series") {
        return;
    }
    let constant = |argument: &Expr| {
        let inner = match argument {
            Expr::UnaryOp { expr, .. } => expr.as_ref(),
            other => other,
        };
        matches!(
            inner,
            Expr::Value(_) | Expr::TypedString { .. } | Expr::Interval(_) | Expr::Cast { .. }
        )
    };
    let arguments = table_arguments(args);
    if arguments.len() != args.args.len() || !arguments.iter().all(constant) {
        return;
    }
    let bare = alias.as_mut().filter(|alias| alias.columns.is_empty());
    if *with_ordinality {
        *name = ObjectName::from(vec![Ident::new(super::series::ORDINALITY_FUNCTION)]);
        *with_ordinality = false;
        if let Some(alias) = bare {
            alias.columns = vec![
                TableAliasColumnDef::from_name(alias.name.value.clone()),
                TableAliasColumnDef::from_name("ordinality"),
            ];
        }
    } else if let Some(alias) = bare {
        alias.columns = vec![TableAliasColumnDef::from_name(alias.name.value.clone())];
    }
}

/// `FROM unnest(a)` names its column `unnest`, and `FROM unnest(a) AS x`
/// names it `x`, as PostgreSQL does for a function returning one column.
/// `pg_catalog.unnest(a)` is the same function.
fn name_unnest_column(factor: &mut TableFactor) {
    scalar_function_as_table(factor);
    if let TableFactor::Table {
        name,
        alias,
        args: Some(args),
        with_ordinality: false,
        ..
    } = factor
        && last_part(name).eq_ignore_ascii_case("unnest")
    {
        let array_exprs = table_arguments(args);
        *factor = TableFactor::UNNEST {
            alias: alias.take(),
            array_exprs,
            with_offset: false,
            with_offset_alias: None,
            with_ordinality: false,
        };
    }
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

/// A set-returning function of one argument in FROM that pgaccel answers
/// as `unnest()`s in a select list (`unnest(array)` and the JSON set
/// functions): its name (lower case), argument, alias and ordinality.
fn set_call(factor: &TableFactor) -> Option<(String, Expr, Option<TableAlias>, bool)> {
    match factor {
        TableFactor::UNNEST {
            alias,
            array_exprs,
            with_ordinality,
            with_offset: false,
            ..
        } if array_exprs.len() == 1 => Some((
            "unnest".to_owned(),
            array_exprs[0].clone(),
            alias.clone(),
            *with_ordinality,
        )),
        TableFactor::Table {
            name,
            alias,
            args: Some(datafusion::sql::sqlparser::ast::TableFunctionArgs { args, .. }),
            with_ordinality,
            ..
        }
        // `CROSS JOIN LATERAL f(t.x)`.
        | TableFactor::Function {
            name,
            alias,
            args,
            with_ordinality,
            ..
        } => {
            let function = last_part(name).to_lowercase();
            if function != "unnest" && !json_set_function(&function) {
                return None;
            }
            match args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(argument))] => Some((
                    function,
                    argument.clone(),
                    alias.clone(),
                    *with_ordinality,
                )),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The columns a set-returning function of [`set_call`] gives in FROM.
struct SetColumns {
    /// Each column's values, as a select-list expression whose rows go in
    /// step with the others', and its name.
    columns: Vec<(Expr, Ident)>,
    /// The 1-based position of each row, for `WITH ORDINALITY`.
    ordinality: Expr,
    /// Whether the alias alone (`SELECT e FROM jsonb_array_elements(...)
    /// e`) reads the first column, as for a function of one column.
    bare_alias: bool,
}

impl SetColumns {
    /// The name of the position column: the alias's next column, or
    /// `ordinality`.
    fn ordinality_name(&self, alias: Option<&TableAlias>) -> Ident {
        alias
            .and_then(|alias| alias.columns.get(self.columns.len()))
            .map_or_else(|| Ident::new("ordinality"), |c| c.name.clone())
    }

    /// The names of the columns, with the position's with `ordinality`.
    fn names(&self, ordinality: bool, alias: Option<&TableAlias>) -> Vec<Ident> {
        self.columns
            .iter()
            .map(|(_, name)| name.clone())
            .chain(ordinality.then(|| self.ordinality_name(alias)))
            .collect()
    }

    /// The select list giving these columns (and, with `ordinality`, the
    /// position).
    fn select_items(&self, ordinality: bool, alias: Option<&TableAlias>) -> String {
        let mut items: Vec<String> = self
            .columns
            .iter()
            .map(|(values, name)| format!("{values} AS {name}"))
            .collect();
        if ordinality {
            items.push(format!(
                "{} AS {}",
                self.ordinality,
                self.ordinality_name(alias)
            ));
        }
        items.join(", ")
    }
}

/// The columns of `function(argument)` in FROM, named as PostgreSQL names
/// them: `unnest` and `json_object_keys` by the alias (or their own name),
/// the JSON element functions `value`, the `json_each` family `key` and
/// `value`; names the alias lists come first. With `keep_empty` (a `LEFT
/// JOIN LATERAL ... ON true`), an argument giving no rows gives one row of
/// NULLs.
fn set_columns(
    function: &str,
    argument: &Expr,
    alias: Option<&TableAlias>,
    keep_empty: bool,
) -> Option<SetColumns> {
    let listed = |index: usize| {
        alias
            .and_then(|alias| alias.columns.get(index))
            .map(|c| c.name.clone())
    };
    let by_alias = |own: &str| {
        listed(0)
            .unwrap_or_else(|| alias.map_or_else(|| Ident::new(own), |alias| alias.name.clone()))
    };
    let bare_alias = alias.is_some_and(|alias| alias.columns.is_empty());
    let kind = if function.starts_with("jsonb") {
        "jsonb"
    } else {
        "json"
    };
    let as_text = function.ends_with("_text");
    let members = |part: &str| {
        call(
            super::json::MEMBERS,
            vec![argument.clone(), string(function), string(part)],
        )
    };
    let unnest = |list: Expr| {
        let list = if keep_empty {
            call(super::outer_unnest::OR_NULL_ELEMENT, vec![list])
        } else {
            list
        };
        call("unnest", vec![list])
    };
    // An unnested document keeps no type of its own.
    let typed = |values: Expr| {
        if as_text {
            values
        } else {
            call(&format!("pgaccel_{kind}"), vec![values])
        }
    };
    let (columns, rows, bare_alias) = match function {
        "unnest" => (
            vec![(unnest(argument.clone()), by_alias("unnest"))],
            argument.clone(),
            bare_alias,
        ),
        "json_object_keys" | "jsonb_object_keys" => (
            vec![(unnest(members("keys")), by_alias(function))],
            members("keys"),
            bare_alias,
        ),
        name if json_elements_function(name) => {
            let elements = call(
                super::json::ELEMENTS,
                vec![
                    argument.clone(),
                    string(kind),
                    Expr::value(Value::Boolean(as_text)),
                ],
            );
            (
                vec![(
                    typed(unnest(elements.clone())),
                    listed(0).unwrap_or_else(|| Ident::new("value")),
                )],
                elements,
                bare_alias,
            )
        }
        "json_each" | "jsonb_each" | "json_each_text" | "jsonb_each_text" => (
            vec![
                (
                    unnest(members("keys")),
                    listed(0).unwrap_or_else(|| Ident::new("key")),
                ),
                (
                    typed(unnest(members(if as_text { "text" } else { "values" }))),
                    listed(1).unwrap_or_else(|| Ident::new("value")),
                ),
            ],
            members("keys"),
            // The alias alone is the row (a composite value).
            false,
        ),
        _ => return None,
    };
    let positions = parse_expr(&format!(
        "range(CAST(1 AS BIGINT), CAST(cardinality({rows}) AS BIGINT) + 1)"
    ))?;
    Some(SetColumns {
        columns,
        ordinality: unnest(positions),
        bare_alias,
    })
}

/// `FROM t ... CROSS JOIN unnest(t.a) WITH ORDINALITY AS u(x, n)` (or
/// `FROM t, unnest(a) u`, or `jsonb_array_elements(t.j -> 'k') e`,
/// `jsonb_each(t.j)` and the other functions of [`set_call`]): each row of
/// `t` once per element, which DataFusion cannot join laterally. `t`
/// becomes `(SELECT *, unnest(t.a) AS x, unnest(range(1,
/// cardinality(t.a) + 1)) AS n FROM t) AS t`, the same rows (select-list
/// unnests of equal length go in step), and `u.x` becomes `t.x`. Only for
/// a table, CTE or subquery `t` named by the argument's qualifier and an
/// inner join (or a left one `ON true`),
/// and when the select list's `*` keeps PostgreSQL's column order; `t.*`
/// excludes the new columns.
/// A FROM item a lateral set function's rows can be added to: a table (or
/// a CTE) or an aliased subquery, not itself lateral.
fn plain_relation(factor: &TableFactor) -> bool {
    matches!(
        factor,
        TableFactor::Table { args: None, .. }
            | TableFactor::Derived {
                lateral: false,
                alias: Some(_),
                ..
            }
    )
}

/// `GROUP BY ROLLUP (1, 2)`, `CUBE (1)`, `GROUPING SETS ((1, 2), ())`: a
/// position names an expression of the select list there too, as
/// PostgreSQL reads it; DataFusion reads positions only as plain `GROUP
/// BY` items. Left alone after a `*` in the select list.
fn grouping_set_positions(select: &mut Select) {
    let datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, _) = &mut select.group_by
    else {
        return;
    };
    let mut items = Vec::with_capacity(select.projection.len());
    for item in &select.projection {
        match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                items.push(expr.clone());
            }
            _ => return,
        }
    }
    let position = |expr: &Expr| match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(digits, _) => digits
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=items.len()).contains(n)),
            _ => None,
        },
        _ => None,
    };
    for expr in exprs.iter_mut() {
        if let Expr::Rollup(sets) | Expr::Cube(sets) | Expr::GroupingSets(sets) = expr {
            for item in sets.iter_mut().flatten() {
                if let Some(n) = position(item) {
                    *item = items[n - 1].clone();
                }
            }
        }
    }
}

fn unnest_into_relation(select: &mut Select) {
    use datafusion::sql::sqlparser::ast::{Join, JoinConstraint, JoinOperator};
    // `FROM t, unnest(t.a) u` is `FROM t CROSS JOIN unnest(t.a) u`.
    let mut at = 1;
    while at < select.from.len() {
        if select.from[at].joins.is_empty() && set_call(&select.from[at].relation).is_some() {
            let item = select.from.remove(at);
            select.from[at - 1].joins.push(Join {
                relation: item.relation,
                global: false,
                join_operator: JoinOperator::CrossJoin(JoinConstraint::None),
            });
        } else {
            at += 1;
        }
    }
    let star = select
        .projection
        .iter()
        .any(|item| matches!(item, SelectItem::Wildcard(_)));
    let qualified_stars: Vec<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::QualifiedWildcard(
                datafusion::sql::sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                _,
            ) => Some(last_part(name).to_lowercase()),
            _ => None,
        })
        .collect();
    let mut renamed: Vec<(String, Ident)> = Vec::new();
    let mut bare: Vec<(String, Ident, Ident)> = Vec::new();
    let mut excluded: Vec<(String, Vec<ObjectName>)> = Vec::new();
    // The columns added to each table so far.
    let mut added: Vec<(String, String)> = Vec::new();
    // `e.*` of a function's alias: its columns, now the table's.
    let mut own_stars: Vec<(String, Ident, Vec<Ident>)> = Vec::new();
    for table in &mut select.from {
        let mut index = 0;
        while index < table.joins.len() {
            let join = &table.joins[index];
            let on_true = |constraint: &JoinConstraint| {
                matches!(constraint, JoinConstraint::On(Expr::Value(value))
                    if matches!(value.value, Value::Boolean(true)))
            };
            // An inner join keeps the rows the function gives; a left one
            // (`LEFT JOIN LATERAL ... ON true`) also an outer row it gives
            // none for.
            let keep_empty = match &join.join_operator {
                JoinOperator::CrossJoin(JoinConstraint::None) => Some(false),
                JoinOperator::Inner(constraint) | JoinOperator::Join(constraint)
                    if on_true(constraint) =>
                {
                    Some(false)
                }
                JoinOperator::Left(constraint) | JoinOperator::LeftOuter(constraint)
                    if on_true(constraint) =>
                {
                    Some(true)
                }
                _ => None,
            };
            let Some(((function, argument, alias, ordinality), keep_empty)) =
                set_call(&join.relation).zip(keep_empty)
            else {
                index += 1;
                continue;
            };
            // The table the argument reads: the one its qualifier names
            // (also within an expression, `ARRAY[t.a, t.b]`), or for an
            // unqualified column the only one before it.
            let qualifier = match &argument {
                Expr::CompoundIdentifier(parts) if parts.len() == 2 => parts[0].clone(),
                other if !matches!(other, Expr::Identifier(_)) => match single_qualifier(other) {
                    Some(qualifier) => qualifier,
                    // `jsonb_array_elements(j -> 'arr')` right after the
                    // only table: its unqualified columns are that table's.
                    None if index == 0 && unqualified_only(other) => {
                        match factor_name(&table.relation) {
                            Some(name) if plain_relation(&table.relation) => Ident::new(name),
                            _ => {
                                index += 1;
                                continue;
                            }
                        }
                    }
                    None => {
                        index += 1;
                        continue;
                    }
                },
                Expr::Identifier(_) if index == 0 => match factor_name(&table.relation) {
                    Some(name) if plain_relation(&table.relation) => Ident::new(name),
                    _ => {
                        index += 1;
                        continue;
                    }
                },
                _ => {
                    index += 1;
                    continue;
                }
            };
            let target_name = qualifier.value.to_lowercase();
            let position = std::iter::once(&table.relation)
                .chain(table.joins[..index].iter().map(|j| &j.relation))
                .position(|factor| {
                    plain_relation(factor) && factor_name(factor).as_deref() == Some(&target_name)
                });
            // `SELECT *` lists the new columns where the table's end: right
            // only when the function comes right after it.
            let keeps_order = !star || position == Some(index);
            let Some(columns) = set_columns(&function, &argument, alias.as_ref(), keep_empty)
                .filter(|_| keeps_order)
            else {
                index += 1;
                continue;
            };
            // Two functions over one table must name their columns apart
            // (`a.value` and `b.value` would be one column of `t`).
            let names = columns.names(ordinality, alias.as_ref());
            if names
                .iter()
                .any(|name| added.contains(&(target_name.clone(), name.value.to_lowercase())))
            {
                index += 1;
                continue;
            }
            let Some(target) = std::iter::once(&mut table.relation)
                .chain(table.joins[..index].iter_mut().map(|j| &mut j.relation))
                .nth(position.unwrap_or(usize::MAX))
            else {
                index += 1;
                continue;
            };
            let sql = format!(
                "SELECT *, {} FROM {target}",
                columns.select_items(ordinality, alias.as_ref())
            );
            let Ok(subquery) = datafusion::sql::sqlparser::parser::Parser::new(
                &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
            )
            .try_with_sql(&sql)
            .and_then(|mut parser| parser.parse_query()) else {
                index += 1;
                continue;
            };
            *target = TableFactor::Derived {
                lateral: false,
                subquery,
                alias: Some(TableAlias {
                    explicit: true,
                    name: qualifier.clone(),
                    columns: Vec::new(),
                    at: None,
                }),
                sample: None,
            };
            added.extend(
                names
                    .iter()
                    .map(|name| (target_name.clone(), name.value.to_lowercase())),
            );
            // `t.*` is still the table's own columns.
            if qualified_stars.contains(&target_name) {
                let names = names
                    .iter()
                    .map(|name| ObjectName::from(vec![name.clone()]));
                match excluded.iter_mut().find(|(table, _)| *table == target_name) {
                    Some((_, columns)) => columns.extend(names),
                    None => excluded.push((target_name.clone(), names.collect())),
                }
            }
            if let Some(alias) = &alias {
                let alias_name = alias.name.value.to_lowercase();
                own_stars.push((alias_name.clone(), qualifier.clone(), names.clone()));
                if columns.bare_alias && function != "unnest" {
                    bare.push((
                        alias_name.clone(),
                        qualifier.clone(),
                        columns.columns[0].1.clone(),
                    ));
                }
                renamed.push((alias_name, qualifier));
            }
            table.joins.remove(index);
        }
    }
    for item in &mut select.projection {
        if let SelectItem::QualifiedWildcard(
            datafusion::sql::sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(name),
            options,
        ) = item
            && options.opt_exclude.is_none()
            && let Some((_, columns)) = excluded
                .iter()
                .find(|(table, _)| *table == last_part(name).to_lowercase())
        {
            options.opt_exclude =
                Some(datafusion::sql::sqlparser::ast::ExcludeSelectItem::Multiple(columns.clone()));
        }
    }
    let mut items = Vec::with_capacity(select.projection.len());
    for item in select.projection.drain(..) {
        let star = match &item {
            SelectItem::QualifiedWildcard(
                datafusion::sql::sqlparser::ast::SelectItemQualifiedWildcardKind::ObjectName(name),
                _,
            ) => own_stars
                .iter()
                .find(|(alias, _, _)| *alias == last_part(name).to_lowercase()),
            _ => None,
        };
        match star {
            Some((_, qualifier, names)) => {
                items.extend(names.iter().map(|name| SelectItem::ExprWithAlias {
                    expr: Expr::CompoundIdentifier(vec![qualifier.clone(), name.clone()]),
                    alias: name.clone(),
                }))
            }
            None => items.push(item),
        }
    }
    select.projection = items;
    if renamed.is_empty() {
        return;
    }
    // The alias alone in the select list names its column, as in
    // PostgreSQL (`SELECT e` is column `e`, not `value`).
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(Expr::Identifier(ident)) = item
            && bare
                .iter()
                .any(|(alias, _, _)| *alias == ident.value.to_lowercase())
        {
            *item = SelectItem::ExprWithAlias {
                expr: Expr::Identifier(ident.clone()),
                alias: ident.clone(),
            };
        }
    }
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(select, |expr| {
        match expr {
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {
                if let Some((_, qualifier)) = renamed
                    .iter()
                    .find(|(alias, _)| *alias == parts[0].value.to_lowercase())
                {
                    parts[0] = qualifier.clone();
                }
            }
            // The alias alone of a one-column JSON function is its value.
            Expr::Identifier(ident) => {
                if let Some((_, qualifier, column)) = bare
                    .iter()
                    .find(|(alias, _, _)| *alias == ident.value.to_lowercase())
                {
                    *expr = Expr::CompoundIdentifier(vec![qualifier.clone(), column.clone()]);
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
}

/// Whether `name` is one of the functions that return a JSON array's
/// elements, one row each.
fn json_elements_function(name: &str) -> bool {
    matches!(
        name,
        "json_array_elements"
            | "jsonb_array_elements"
            | "json_array_elements_text"
            | "jsonb_array_elements_text"
    )
}

/// Whether `name` is a set-returning JSON function pgaccel answers in FROM:
/// the element functions, the `json_each` family and `json_object_keys`.
fn json_set_function(name: &str) -> bool {
    json_elements_function(name)
        || matches!(
            name,
            "json_each"
                | "jsonb_each"
                | "json_each_text"
                | "jsonb_each_text"
                | "json_object_keys"
                | "jsonb_object_keys"
        )
}

/// Whether `expr` reads any column.
fn references_columns(expr: &Expr) -> bool {
    datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| {
        if matches!(e, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// The one table qualifier every column `expr` reads names, if there is
/// one and every column is qualified.
/// Whether `expr` reads columns, all of them unqualified.
fn unqualified_only(expr: &Expr) -> bool {
    let mut unqualified = false;
    let qualified = datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| match e {
        Expr::CompoundIdentifier(_) | Expr::Subquery(_) | Expr::Exists { .. } => {
            ControlFlow::Break(())
        }
        Expr::Identifier(_) => {
            unqualified = true;
            ControlFlow::Continue(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break();
    unqualified && !qualified
}

fn single_qualifier(expr: &Expr) -> Option<Ident> {
    let mut qualifiers: Vec<Ident> = Vec::new();
    let mut unqualified = false;
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| {
        match e {
            Expr::CompoundIdentifier(parts)
                if parts.len() == 2
                    && !qualifiers
                        .iter()
                        .any(|q| q.value.eq_ignore_ascii_case(&parts[0].value)) =>
            {
                qualifiers.push(parts[0].clone());
            }
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => {}
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) => unqualified = true,
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    match (qualifiers.as_slice(), unqualified) {
        ([qualifier], false) => Some(qualifier.clone()),
        _ => None,
    }
}

/// `FROM t CROSS JOIN pg_indexam_has_property(t.am, 'can_order') AS v`: a
/// function returning one value, called on the columns of another FROM
/// item (a lateral call DataFusion cannot join). The join is dropped and
/// `v` (or `v.v`) in the select stands for the call itself, which gives the
/// same rows: one value per row of `t`.
fn lateral_scalar_functions(query: &mut Query) {
    use datafusion::sql::sqlparser::ast::{JoinConstraint, JoinOperator};
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    let mut calls: Vec<(String, Expr)> = Vec::new();
    for table in &mut select.from {
        table.joins.retain(|join| {
            let cross = matches!(
                join.join_operator,
                JoinOperator::CrossJoin(JoinConstraint::None)
            );
            !(cross && lateral_values(&join.relation, &mut calls))
        });
    }
    select
        .from
        .retain(|table| !(table.joins.is_empty() && lateral_values(&table.relation, &mut calls)));
    if calls.is_empty() {
        return;
    }
    // The whole query: its ORDER BY reads them too.
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(query, |expr| {
        let name = match expr {
            Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
            Expr::CompoundIdentifier(parts) if parts.len() == 2 => Some(format!(
                "{}.{}",
                parts[0].value.to_lowercase(),
                parts[1].value.to_lowercase()
            )),
            _ => None,
        };
        if let Some((_, replacement)) =
            name.and_then(|name| calls.iter().find(|(alias, _)| *alias == name))
        {
            *expr = replacement.clone();
        }
        ControlFlow::<()>::Continue(())
    });
}

/// `SELECT DISTINCT ON (k) a AS x, (correlated subquery) AS y FROM ... ORDER
/// BY o`: DataFusion decorrelates subqueries in a projection but not under
/// DISTINCT ON. The select moves into a derived table that also computes
/// `k` and `o` as hidden columns, and DISTINCT ON and ORDER BY read those:
/// `SELECT DISTINCT ON (k') x, y FROM (SELECT a AS x, (...) AS y, k AS k',
/// o AS o' FROM ...) ORDER BY o'`, the same rows in the same order.
fn distinct_on_over_subqueries(query: &mut Query) {
    use datafusion::sql::sqlparser::ast::{Distinct, OrderBy, TableWithJoins};
    let SetExpr::Select(select) = query.body.as_ref() else {
        return;
    };
    let Some(Distinct::On(keys)) = &select.distinct else {
        return;
    };
    let mut names = Vec::new();
    let mut has_subquery = false;
    for item in &select.projection {
        // Each output column's name: its alias, or the column it reads.
        let (expr, name) = match item {
            SelectItem::ExprWithAlias { expr, alias } => (expr, alias.clone()),
            SelectItem::UnnamedExpr(expr @ Expr::Identifier(ident)) => (expr, ident.clone()),
            SelectItem::UnnamedExpr(expr @ Expr::CompoundIdentifier(parts)) => (
                expr,
                parts
                    .last()
                    .cloned()
                    .unwrap_or_else(|| Ident::new("?column?")),
            ),
            _ => return,
        };
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| {
            has_subquery |= matches!(e, Expr::Subquery(_) | Expr::Exists { .. });
            ControlFlow::<()>::Continue(())
        });
        names.push(name);
    }
    // Two outputs of one name could not both be read from the derived table.
    let mut unique: Vec<String> = names.iter().map(|n| n.value.to_lowercase()).collect();
    unique.sort();
    unique.dedup();
    if unique.len() != names.len() {
        return;
    }
    let orders = match &query.order_by {
        Some(OrderBy {
            kind: OrderByKind::Expressions(orders),
            ..
        }) => orders.clone(),
        Some(_) => return,
        None => Vec::new(),
    };
    if !has_subquery {
        return;
    }
    let mut inner = select.as_ref().clone();
    inner.distinct = None;
    // A key or order that names an output column reads it; any other is
    // computed as a hidden column.
    let mut hidden: Vec<(Expr, Ident)> = Vec::new();
    let mut column_for = |expr: &Expr, inner: &mut Select| -> Expr {
        if let Expr::Identifier(ident) = expr
            && names
                .iter()
                .any(|name| name.value.eq_ignore_ascii_case(&ident.value))
        {
            return expr.clone();
        }
        // The same expression (a key that is also the order) is one column.
        if let Some((_, name)) = hidden.iter().find(|(e, _)| e == expr) {
            return Expr::Identifier(name.clone());
        }
        let name = Ident::new(format!("pgaccel_hidden_{}", hidden.len() + 1));
        hidden.push((expr.clone(), name.clone()));
        inner.projection.push(SelectItem::ExprWithAlias {
            expr: expr.clone(),
            alias: name.clone(),
        });
        Expr::Identifier(name)
    };
    let outer_keys: Vec<Expr> = keys.iter().map(|k| column_for(k, &mut inner)).collect();
    let outer_orders: Vec<_> = orders
        .iter()
        .map(|order| {
            let mut order = order.clone();
            order.expr = column_for(&order.expr, &mut inner);
            order
        })
        .collect();
    let derived = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(Query {
            with: None,
            body: Box::new(SetExpr::Select(Box::new(inner))),
            order_by: None,
            limit_clause: None,
            fetch: None,
            locks: Vec::new(),
            for_clause: None,
            settings: None,
            format_clause: None,
            pipe_operators: Vec::new(),
        }),
        alias: Some(TableAlias {
            explicit: true,
            name: Ident::new("pgaccel_distinct_on"),
            columns: Vec::new(),
            at: None,
        }),
        sample: None,
    };
    let mut outer = select.as_ref().clone();
    outer.projection = names
        .into_iter()
        .map(|name| SelectItem::UnnamedExpr(Expr::Identifier(name)))
        .collect();
    outer.distinct = Some(Distinct::On(outer_keys));
    outer.from = vec![TableWithJoins {
        relation: derived,
        joins: Vec::new(),
    }];
    outer.selection = None;
    outer.group_by =
        datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(Vec::new(), Vec::new());
    outer.having = None;
    outer.named_window = Vec::new();
    outer.qualify = None;
    *query.body = SetExpr::Select(Box::new(outer));
    if let Some(order_by) = &mut query.order_by {
        order_by.kind = OrderByKind::Expressions(outer_orders);
    }
}

/// For [`lateral_scalar_functions`]: when `factor` is a one-row function
/// call over other FROM items' columns, the expression each of its column
/// names stands for (added to `calls`), and true.
///
/// `pg_partition_ancestors(r) [WITH ORDINALITY] AS a(relid, depth)` is one
/// row too: pgaccel has no partitions, so a relation's only ancestor is
/// itself, at depth 1.
fn lateral_values(factor: &TableFactor, calls: &mut Vec<(String, Expr)>) -> bool {
    let TableFactor::Table {
        name,
        alias: Some(alias),
        args: Some(args),
        with_ordinality,
        ..
    } = factor
    else {
        return false;
    };
    let function = last_part(name).to_lowercase();
    let arguments: Vec<Expr> = table_arguments(args);
    let reads_columns = arguments.iter().any(|argument| {
        let mut found = false;
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(argument, |e| {
            found |= matches!(e, Expr::CompoundIdentifier(_) | Expr::Identifier(_));
            ControlFlow::<()>::Continue(())
        });
        found
    });
    if !reads_columns || arguments.len() != args.args.len() {
        return false;
    }
    let values: Vec<Expr> = match (function.as_str(), arguments.as_slice()) {
        ("pg_partition_ancestors", [relation]) if *with_ordinality => {
            vec![
                relation.clone(),
                cast_to(number("1"), DataType::BigInt(None)),
            ]
        }
        ("pg_partition_ancestors", [relation]) => vec![relation.clone()],
        // Set-returning: one row per element, not one value.
        _ if json_set_function(&function) => return false,
        _ if TABLE_FUNCTIONS.contains(&function.as_str()) || *with_ordinality => return false,
        _ => vec![call(&function, arguments)],
    };
    let alias_name = alias.name.value.to_lowercase();
    for (index, value) in values.into_iter().enumerate() {
        let column = alias.columns.get(index).map_or_else(
            || {
                if index == 0 {
                    alias_name.clone()
                } else {
                    "ordinality".to_owned()
                }
            },
            |c| c.name.value.to_lowercase(),
        );
        // `a.relid` and `relid`; `a` alone is the first column's value.
        calls.push((format!("{alias_name}.{column}"), value.clone()));
        calls.push((column, value.clone()));
        if index == 0 {
            calls.push((alias_name.clone(), value));
        }
    }
    true
}

/// The positional arguments of a function called in FROM.
fn table_arguments(args: &datafusion::sql::sqlparser::ast::TableFunctionArgs) -> Vec<Expr> {
    args.args
        .iter()
        .filter_map(|arg| match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => Some(expr.clone()),
            _ => None,
        })
        .collect()
}

/// Functions DataFusion calls in FROM itself.
const TABLE_FUNCTIONS: &[&str] = &[
    "unnest",
    "generate_series",
    super::series::ORDINALITY_FUNCTION,
    "range",
    "pg_show_all_settings",
    "pg_partition_ancestors",
    "pg_available_extension_versions",
    "pg_available_extensions",
    "pg_get_keywords",
];

/// A function that returns one value, in FROM (`FROM string_to_array(...)
/// AS s`): a one-row relation whose column is named by the alias, as in
/// PostgreSQL. The JSON set functions over constants, and `unnest()` with
/// `WITH ORDINALITY`, become the select list of their columns (see
/// [`set_columns`]); over another FROM item's columns (a lateral call,
/// which [`unnest_into_relation`] did not answer) they are left to be
/// refused.
fn scalar_function_as_table(factor: &mut TableFactor) {
    if let Some((function, argument, alias, ordinality)) = set_call(factor)
        && (function != "unnest" || ordinality)
    {
        if references_columns(&argument) {
            return;
        }
        let alias = alias.unwrap_or_else(|| TableAlias {
            explicit: true,
            name: Ident::new(function.clone()),
            columns: Vec::new(),
            at: None,
        });
        let Some(columns) = set_columns(&function, &argument, Some(&alias), false) else {
            return;
        };
        let items = columns.select_items(ordinality, Some(&alias));
        if let Some(subquery) = parse_query(&format!("SELECT {items}")) {
            *factor = TableFactor::Derived {
                lateral: false,
                subquery,
                alias: Some(TableAlias {
                    columns: Vec::new(),
                    ..alias
                }),
                sample: None,
            };
        }
        return;
    }
    let TableFactor::Table {
        name,
        alias,
        args: Some(args),
        with_ordinality: false,
        ..
    } = factor
    else {
        return;
    };
    let function = last_part(name).to_lowercase();
    if TABLE_FUNCTIONS.contains(&function.as_str()) || json_set_function(&function) {
        return;
    }
    let alias = alias.clone().unwrap_or_else(|| TableAlias {
        explicit: true,
        name: Ident::new(function.clone()),
        columns: Vec::new(),
        at: None,
    });
    let column = alias
        .columns
        .first()
        .map_or_else(|| alias.name.clone(), |c| c.name.clone());
    let sql = format!(
        "SELECT {} AS {column}",
        call(&function, table_arguments(args))
    );
    if let Some(subquery) = parse_query(&sql) {
        *factor = TableFactor::Derived {
            lateral: false,
            subquery,
            alias: Some(TableAlias {
                columns: Vec::new(),
                ..alias
            }),
            sample: None,
        };
    }
}

/// `sql`, one query, parsed as PostgreSQL.
fn parse_query(sql: &str) -> Option<Box<Query>> {
    let mut statements = datafusion::sql::sqlparser::parser::Parser::parse_sql(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
        sql,
    )
    .ok()?;
    match statements.pop() {
        Some(Statement::Query(query)) if statements.is_empty() => Some(query),
        _ => None,
    }
}

fn last_part(name: &ObjectName) -> String {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(ident)) => ident.value.clone(),
        _ => String::new(),
    }
}

pub(super) fn string(text: &str) -> Expr {
    Expr::Value(ValueWithSpan::from(Value::SingleQuotedString(
        text.to_owned(),
    )))
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

/// `x [NOT] LIKE ANY (ARRAY[p1, p2])` (or `ILIKE`): `x LIKE p1 OR x LIKE
/// p2`, the same three-valued answer, for DataFusion, which plans no
/// `LIKE ANY`.
fn like_any(
    negated: bool,
    value: &Expr,
    patterns: &Expr,
    escape_char: Option<&ValueWithSpan>,
    insensitive: bool,
) -> Option<Expr> {
    let mut patterns = patterns;
    while let Expr::Nested(inner) = patterns {
        patterns = inner;
    }
    let Expr::Array(array) = patterns else {
        return None;
    };
    array
        .elem
        .iter()
        .map(|pattern| {
            let (expr, pattern) = (Box::new(value.clone()), Box::new(pattern.clone()));
            let escape_char = escape_char.cloned();
            let test = if insensitive {
                Expr::ILike {
                    negated,
                    any: false,
                    expr,
                    pattern,
                    escape_char,
                }
            } else {
                Expr::Like {
                    negated,
                    any: false,
                    expr,
                    pattern,
                    escape_char,
                }
            };
            Expr::Nested(Box::new(test))
        })
        .reduce(|all, next| Expr::BinaryOp {
            left: Box::new(all),
            op: BinaryOperator::Or,
            right: Box::new(next),
        })
        .map(|any| Expr::Nested(Box::new(any)))
}

/// The expression `sql` spells, as PostgreSQL's dialect parses it.
/// PostgreSQL's special date and time inputs as a `date`, `timestamp` or
/// `timestamptz`: `'today'`, `'tomorrow'`, `'yesterday'` (midnight on the
/// session's clock), `'now'` and `'epoch'`. `None` for any other text or
/// type (`'infinity'` is dealt with apart).
fn special_moment(text: &str, data_type: &DataType) -> Option<Expr> {
    use datafusion::sql::sqlparser::ast::TimezoneInfo;
    let zoned = match data_type {
        DataType::Date => None,
        DataType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => Some(false),
        DataType::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => Some(true),
        _ => return None,
    };
    let day = |offset: &str| format!("CAST(current_date{offset} AS DATE)");
    let sql = match text.trim().to_ascii_lowercase().as_str() {
        "today" => day(""),
        "tomorrow" => day(" + 1"),
        "yesterday" => day(" - 1"),
        "now" => match zoned {
            None => day(""),
            Some(false) => "CAST(now() AS TIMESTAMP)".to_owned(),
            Some(true) => "now()".to_owned(),
        },
        "epoch" => match zoned {
            None => "DATE '1970-01-01'".to_owned(),
            Some(false) => "TIMESTAMP '1970-01-01 00:00:00'".to_owned(),
            Some(true) => "CAST('1970-01-01 00:00:00+00' AS TIMESTAMPTZ)".to_owned(),
        },
        _ => return None,
    };
    let sql = match zoned {
        Some(true) if sql.starts_with("CAST(current_date") => format!("CAST({sql} AS TIMESTAMPTZ)"),
        Some(false) if sql.starts_with("CAST(current_date") => format!("CAST({sql} AS TIMESTAMP)"),
        _ => sql,
    };
    parse_expr(&sql)
}

pub(super) fn parse_expr(sql: &str) -> Option<Expr> {
    datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
    )
    .try_with_sql(sql)
    .and_then(|mut parser| parser.parse_expr())
    .ok()
}

/// `expr::double precision`.
fn double(expr: Expr) -> Expr {
    Expr::Cast {
        kind: CastKind::DoubleColon,
        expr: Box::new(Expr::Nested(Box::new(expr))),
        data_type: DataType::DoublePrecision,
        array: false,
        format: None,
    }
}

pub(super) fn call(name: &str, args: Vec<Expr>) -> Expr {
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

/// A domain a cast names (the catalog's are `information_schema`'s:
/// `cardinal_number`, `sql_identifier`, ...): its name, its base type,
/// which its values have, and its check on a value, if any.
type DomainCheck = fn(Expr) -> Expr;

fn domain_base(data_type: &DataType) -> Option<(String, DataType, Option<DomainCheck>)> {
    use datafusion::sql::sqlparser::ast::ArrayElemTypeDef;
    match data_type {
        DataType::Custom(name, modifiers) if modifiers.is_empty() => {
            let domain = last_part(name).to_lowercase();
            let (base, check): (DataType, Option<DomainCheck>) = match domain.as_str() {
                "cardinal_number" => (
                    DataType::Integer(None),
                    Some(|value| Expr::BinaryOp {
                        left: Box::new(value),
                        op: BinaryOperator::GtEq,
                        right: Box::new(number("0")),
                    }),
                ),
                "character_data" => (DataType::Varchar(None), None),
                "sql_identifier" => (DataType::Text, None),
                // `time_stamp` (timestamptz rounded to hundredths) is left
                // to DataFusion, which refuses it.
                "yes_or_no" => (
                    DataType::Varchar(Some(
                        datafusion::sql::sqlparser::ast::CharacterLength::IntegerLength {
                            length: 3,
                            unit: None,
                        },
                    )),
                    Some(|value| Expr::InList {
                        expr: Box::new(value),
                        list: vec![string("YES"), string("NO")],
                        negated: false,
                    }),
                ),
                _ => return None,
            };
            Some((domain, base, check))
        }
        // Arrays of a domain without a check are arrays of its base type;
        // the others are left to DataFusion, which refuses them.
        DataType::Array(ArrayElemTypeDef::SquareBracket(element, size)) => {
            let (domain, base, check) = domain_base(element)?;
            check.is_none().then(|| {
                (
                    domain,
                    DataType::Array(ArrayElemTypeDef::SquareBracket(Box::new(base), *size)),
                    None,
                )
            })
        }
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
        other => matches!(
            custom_type(other).as_deref(),
            Some("text" | "name" | "varchar")
        ),
    }
}

fn cast(inner: &Expr, data_type: &DataType, kind: &CastKind) -> Option<Expr> {
    use datafusion::sql::sqlparser::ast::ExactNumberInfo;
    if let Some((code, message)) = invalid_literal(inner, data_type) {
        let failed = Expr::Value(Value::Boolean(false).into());
        // A value the engine cannot read at all (an infinite timestamp) is
        // not left for it to fold while planning: a NULL of the type stands
        // in behind the error.
        let value = if code == super::sqlstate::FEATURE_NOT_SUPPORTED {
            Expr::Value(Value::Null.into())
        } else {
            inner.clone()
        };
        return Some(case_when(
            require(failed, code, &message),
            Expr::Cast {
                kind: kind.clone(),
                expr: Box::new(value),
                data_type: data_type.clone(),
                array: false,
                format: None,
            },
            None,
        ));
    }
    // `'infinity'::date`.
    if *data_type == DataType::Date
        && let Expr::Value(value) = inner
        && let Value::SingleQuotedString(text) = &value.value
        && let Some(day) = infinite_date(text)
    {
        return Some(day);
    }
    if let Expr::Value(value) = inner
        && let Value::SingleQuotedString(text) = &value.value
        && let Some(moment) = special_moment(text, data_type)
    {
        return Some(moment);
    }
    // `$1::numeric`: the parameter keeps its own scale, as an unconstrained
    // numeric does (a cast would give every value DataFusion's default).
    if matches!(
        data_type,
        DataType::Numeric(ExactNumberInfo::None) | DataType::Decimal(ExactNumberInfo::None)
    ) && matches!(inner, Expr::Value(value) if matches!(value.value, Value::Placeholder(_)))
    {
        return Some(inner.clone());
    }
    // `timestamp` without a precision is PostgreSQL's microseconds (which
    // reach 4713 BC), not DataFusion's nanoseconds (1677 to 2262).
    if let DataType::Timestamp(None, zone) = data_type {
        let inner = match inner {
            Expr::Value(value) => match &value.value {
                Value::SingleQuotedString(text) => {
                    with_seconds(text).map_or_else(|| inner.clone(), |full| string(&full))
                }
                _ => inner.clone(),
            },
            _ => inner.clone(),
        };
        return Some(Expr::Cast {
            kind: kind.clone(),
            expr: Box::new(inner),
            data_type: DataType::Timestamp(Some(6), *zone),
            array: false,
            format: None,
        });
    }
    // `NULL::numeric` keeps a numeric type beside other values
    // (`coalesce(NULL::numeric, 1)` is the numeric `1`), with no scale of
    // its own.
    if matches!(
        data_type,
        DataType::Numeric(ExactNumberInfo::None) | DataType::Decimal(ExactNumberInfo::None)
    ) && matches!(inner, Expr::Value(value) if matches!(value.value, Value::Null))
    {
        return Some(cast_to(
            inner.clone(),
            DataType::Numeric(ExactNumberInfo::PrecisionAndScale(38, 0)),
        ));
    }
    // Any other value cast to an unconstrained numeric keeps the display
    // scale PostgreSQL gives it (`1::numeric` is `1`, not `1.0000000000`).
    if matches!(
        data_type,
        DataType::Numeric(ExactNumberInfo::None) | DataType::Decimal(ExactNumberInfo::None)
    ) {
        return Some(call("pgaccel_to_numeric", vec![inner.clone()]));
    }
    if let Some((domain, base, check)) = domain_base(data_type) {
        let value = cast(inner, &base, kind).unwrap_or_else(|| Expr::Cast {
            kind: kind.clone(),
            expr: Box::new(inner.clone()),
            data_type: base,
            array: false,
            format: None,
        });
        let Some(check) = check else {
            return Some(value);
        };
        // The domain's check, on the value as cast: PostgreSQL's error
        // when it fails, NULL passes.
        let condition = require(
            check(value.clone()),
            "23514",
            &format!(
                "value for domain information_schema.{domain} violates check constraint \"{domain}_check\""
            ),
        );
        return Some(case_when(condition, value, None));
    }
    if let Some((function, length)) = character_length(data_type) {
        // The length as text: a constant through literal typing.
        return Some(call(
            function,
            vec![inner.clone(), string(&length.to_string())],
        ));
    }
    match data_type {
        DataType::Uuid => return Some(call(super::pg_types::UUID_FUNCTION, vec![inner.clone()])),
        DataType::Bytea => {
            return Some(call(super::pg_types::BYTEA_FUNCTION, vec![inner.clone()]));
        }
        DataType::JSON => return Some(call("pgaccel_json", vec![inner.clone()])),
        DataType::JSONB => return Some(call("pgaccel_jsonb", vec![inner.clone()])),
        DataType::Interval { .. } if !matches!(inner, Expr::Interval(_)) => {
            return Some(call(
                super::pg_types::INTERVAL_FUNCTION,
                vec![inner.clone()],
            ));
        }
        _ => {}
    }
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
            let Expr::Value(value) = inner else {
                return None;
            };
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
    // A regproc column as an OID: the function of that name.
    if matches!(
        data_type,
        DataType::Int(_) | DataType::Integer(_) | DataType::BigInt(_)
    ) || target.as_deref() == Some("oid")
    {
        let column = match inner {
            Expr::Identifier(ident) => Some(ident),
            Expr::CompoundIdentifier(parts) => parts.last(),
            _ => None,
        };
        if column.is_some_and(|c| REGPROC_COLUMNS.contains(&c.value.to_lowercase().as_str())) {
            return Some(call("pgaccel_regproc_oid", vec![inner.clone()]));
        }
    }
    // `'pg_class'::regclass`: the relation's OID along the search path
    // (pg_catalog first), 42P01 when there is none.
    if is_string_literal(inner) {
        match target.as_deref() {
            Some("regclass") => return Some(call("pgaccel_regclass_in", vec![inner.clone()])),
            Some("regnamespace") => {
                return Some(call("pgaccel_regnamespace_in", vec![inner.clone()]));
            }
            _ => {}
        }
    }
    // `format('%I.%I', s, t)::regclass`: the relation that text names.
    if target.as_deref() == Some("regclass")
        && matches!(
            inner,
            Expr::Function(_)
                | Expr::BinaryOp {
                    op: BinaryOperator::StringConcat,
                    ..
                }
        )
    {
        return Some(call("to_regclass", vec![inner.clone()]));
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

/// A regproc column (a function name in pgaccel's catalog) compared with an
/// OID column: the function's OID is compared.
fn regproc_comparison(left: &Expr, op: &BinaryOperator, right: &Expr) -> Option<Expr> {
    let is_regproc = |expr: &Expr| match expr {
        Expr::Identifier(ident) => REGPROC_COLUMNS.contains(&ident.value.to_lowercase().as_str()),
        Expr::CompoundIdentifier(parts) => parts
            .last()
            .is_some_and(|ident| REGPROC_COLUMNS.contains(&ident.value.to_lowercase().as_str())),
        _ => false,
    };
    let is_column = |expr: &Expr| matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
    let oid_of = |expr: &Expr| call("pgaccel_regproc_oid", vec![expr.clone()]);
    let (left, right) = if is_regproc(left) && is_column(right) && !is_regproc(right) {
        (oid_of(left), right.clone())
    } else if is_regproc(right) && is_column(left) && !is_regproc(left) {
        (left.clone(), oid_of(right))
    } else {
        return None;
    };
    Some(Expr::BinaryOp {
        left: Box::new(left),
        op: op.clone(),
        right: Box::new(right),
    })
}

/// `LIKE ... ESCAPE 'c'`: DataFusion only knows `\` as the escape, so the
/// pattern (a literal, a parameter or any expression) is respelled with it
/// when the query runs.
fn like(
    negated: bool,
    any: bool,
    value: &Expr,
    pattern: &Expr,
    escape: &ValueWithSpan,
    case_insensitive: bool,
) -> Option<Expr> {
    let escape = match &escape.value {
        Value::SingleQuotedString(text) => text.clone(),
        _ => return None,
    };
    if escape == "\\" {
        return None;
    }
    let pattern = call(
        super::pg_types::LIKE_PATTERN_FUNCTION,
        vec![pattern.clone(), string(&escape)],
    );
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

pub(super) fn function_name(function: &Function) -> String {
    last_part(&function.name).to_lowercase()
}

/// The arguments of `function`, with untyped literals wrapped to be read as
/// the array's type (see [`super::unknown_literals::wrap_array_literals`]).
fn array_arguments(function: &Function, arrays: &[bool]) -> Vec<Expr> {
    let args = arguments(function);
    super::unknown_literals::wrap_array_literals(&args, arrays).unwrap_or(args)
}

pub(super) fn arguments(function: &Function) -> Vec<Expr> {
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

/// `'infinity'` or `'-infinity'` read as a date: the day pgaccel keeps
/// each as (see [`super::text::DATE_INFINITY`]), which prints, compares
/// and sorts as PostgreSQL's.
fn infinite_date(text: &str) -> Option<Expr> {
    let day = match text.trim().to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => super::text::DATE_INFINITY,
        "-infinity" => super::text::DATE_NEG_INFINITY,
        _ => return None,
    };
    let day = call(
        "arrow_cast",
        vec![number(&day.to_string()), string("Int32")],
    );
    Some(call("arrow_cast", vec![day, string("Date32")]))
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`, its
/// arguments by position or by name (`days => 3`), each 0 when left out:
/// the sum of each argument times its unit, which is the interval
/// PostgreSQL makes (months, days and microseconds kept apart; NULL when
/// any argument is). `None` for a name it does not take.
fn make_interval(function: &Function) -> Option<Expr> {
    const PARTS: [(&str, &str); 7] = [
        ("years", "1 year"),
        ("months", "1 month"),
        ("weeks", "7 days"),
        ("days", "1 day"),
        ("hours", "1 hour"),
        ("mins", "1 minute"),
        ("secs", "1 second"),
    ];
    let mut values: [Option<Expr>; 7] = Default::default();
    match &function.args {
        FunctionArguments::None => {}
        FunctionArguments::List(list) => {
            for (position, arg) in list.args.iter().enumerate() {
                let (slot, value) = match arg {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(value)) => (position, value),
                    FunctionArg::Named {
                        name,
                        arg: FunctionArgExpr::Expr(value),
                        ..
                    }
                    | FunctionArg::ExprNamed {
                        name: Expr::Identifier(name),
                        arg: FunctionArgExpr::Expr(value),
                        ..
                    } => (
                        PARTS
                            .iter()
                            .position(|(part, _)| name.value.eq_ignore_ascii_case(part))?,
                        value,
                    ),
                    _ => return None,
                };
                *values.get_mut(slot)? = Some(value.clone());
            }
        }
        FunctionArguments::Subquery(_) => return None,
    }
    let interval = |text: &str| call(super::pg_types::INTERVAL_FUNCTION, vec![string(text)]);
    let sum = values
        .into_iter()
        .zip(PARTS)
        .filter_map(|(value, (_, unit))| {
            Some(Expr::BinaryOp {
                left: Box::new(Expr::Nested(Box::new(value?))),
                op: BinaryOperator::Multiply,
                right: Box::new(interval(unit)),
            })
        })
        .fold(interval("0"), |sum, part| Expr::BinaryOp {
            left: Box::new(sum),
            op: BinaryOperator::Plus,
            right: Box::new(part),
        });
    Some(Expr::Nested(Box::new(sum)))
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
    // PostgreSQL's subscripts are `integer`s.
    cast_to(
        call("unnest", vec![call("range", vec![start, end])]),
        DataType::Int(None),
    )
}

fn function_call(function: &Function) -> Option<Expr> {
    match function_name(function).as_str() {
        "array" => {
            let FunctionArguments::Subquery(query) = &function.args else {
                return None;
            };
            if let Some(walk) = role_memberships(query) {
                return Some(walk);
            }
            // Elements mapped with a prefix or suffix are answered for any
            // array; other reads of an outer array only where it is empty.
            if let SetExpr::Select(select) = query.body.as_ref()
                && let Some(mapped) = concat_each(query, select)
            {
                return Some(mapped);
            }
            empty_outer_unnest(query).or_else(|| array_of_subquery(query))
        }
        // A set-returning function: the pieces, one row each.
        "regexp_split_to_table" => Some(call(
            "unnest",
            vec![call("regexp_split_to_array", arguments(function))],
        )),
        // `LOCALTIMESTAMP` and `LOCALTIME`: the session clock's reading now.
        "localtimestamp" | "localtime" if matches!(function.args, FunctionArguments::None) => {
            use datafusion::sql::sqlparser::ast::TimezoneInfo;
            let local = if function_name(function) == "localtime" {
                DataType::Time(None, TimezoneInfo::None)
            } else {
                DataType::Timestamp(None, TimezoneInfo::None)
            };
            Some(cast_to(call("now", Vec::new()), local))
        }
        // `array_to_json(a)` is `to_json(a)` (an array's JSON is the same);
        // the pretty form (a second argument true) is not.
        "array_to_json"
            if match arguments(function).as_slice() {
                [_] => true,
                [_, pretty] => {
                    matches!(pretty, Expr::Value(value) if value.value == Value::Boolean(false))
                }
                _ => false,
            } =>
        {
            Some(call("to_json", arguments(function)[..1].to_vec()))
        }
        // `transaction_timestamp()` is `now()`; `statement_timestamp()` the
        // statement's start, which `now()` gives here.
        "transaction_timestamp" | "statement_timestamp" => Some(call("now", Vec::new())),
        // A version 4 UUID for each row, as `uuid`.
        "gen_random_uuid" if matches!(&function.args, FunctionArguments::List(list) if list.args.is_empty()) => {
            Some(call(
                super::pg_types::UUID_FUNCTION,
                vec![call("uuid", Vec::new())],
            ))
        }
        "string_to_table" => Some(call(
            "unnest",
            vec![call("string_to_array", arguments(function))],
        )),
        // Every match's captures (`g`), or the first's; no row without one.
        "regexp_matches" => Some(call(
            "unnest",
            vec![call(super::regex::MATCHES, arguments(function))],
        )),
        "generate_subscripts" => {
            let array = arguments(function).into_iter().next()?;
            let from = if is_vector(&array) { 0 } else { 1 };
            Some(subscripts(array, from))
        }
        // `mod(a, b)` is `a % b` (the remainder takes the dividend's sign in
        // both); `sign` is DataFusion's `signum` (a numeric keeps its type,
        // see [`super::numeric`]).
        "mod" => match <[Expr; 2]>::try_from(arguments(function)) {
            Ok([a, b]) => Some(Expr::Nested(Box::new(Expr::BinaryOp {
                left: Box::new(Expr::Nested(Box::new(a))),
                op: BinaryOperator::Modulo,
                right: Box::new(Expr::Nested(Box::new(b))),
            }))),
            Err(_) => None,
        },
        "sign" => Some(call("signum", arguments(function))),
        "make_interval" => make_interval(function),
        // `timezone(zone, value)` is `value AT TIME ZONE zone`.
        "timezone" => {
            let [zone, value] = <[Expr; 2]>::try_from(arguments(function)).ok()?;
            Some(call(
                super::temporal::AT_TIME_ZONE_FUNCTION,
                vec![value, zone],
            ))
        }
        // `integer[]` in PostgreSQL, unsigned in DataFusion (named by its
        // other name inside, which this rewrite leaves alone).
        "array_positions" => Some(cast_to(
            call("list_positions", arguments(function)),
            DataType::Array(
                datafusion::sql::sqlparser::ast::ArrayElemTypeDef::SquareBracket(
                    Box::new(DataType::Int(None)),
                    None,
                ),
            ),
        )),
        // Text and its UTF-8 bytes: pgaccel's only encoding (a text is
        // UTF-8 in Arrow; another encoding is left to be refused).
        "convert_to" | "convert_from" => {
            let [value, encoding] = <[Expr; 2]>::try_from(arguments(function)).ok()?;
            let Expr::Value(v) = &encoding else {
                return None;
            };
            let Value::SingleQuotedString(encoding) = &v.value else {
                return None;
            };
            if !matches!(
                encoding.to_uppercase().replace(['-', '_'], "").as_str(),
                "UTF8" | "UNICODE"
            ) {
                return None;
            }
            Some(if function_name(function) == "convert_to" {
                cast_to(value, DataType::Bytea)
            } else {
                // The bytes as text, not the `\x...` form a cast prints.
                call("arrow_cast", vec![value, string("Utf8")])
            })
        }
        // The elements of a JSON array, or the keys of an object, one row
        // each: the one column these functions give in FROM.
        name if json_elements_function(name) || name.ends_with("_object_keys") => {
            let [document] = <[Expr; 1]>::try_from(arguments(function)).ok()?;
            let columns = set_columns(name, &document, None, false)?;
            columns.columns.into_iter().next().map(|(values, _)| values)
        }
        // `num_nulls(a, b, ...)` and `num_nonnulls(...)`: integer counts.
        "num_nulls" | "num_nonnulls" => {
            let nulls = function_name(function) == "num_nulls";
            let counted = arguments(function)
                .into_iter()
                .map(|arg| {
                    let test = if nulls {
                        Expr::IsNull(Box::new(arg))
                    } else {
                        Expr::IsNotNull(Box::new(arg))
                    };
                    format!("(CASE WHEN {test} THEN 1 ELSE 0 END)")
                })
                .collect::<Vec<_>>();
            if counted.is_empty() {
                return None;
            }
            parse_expr(&format!("CAST({} AS integer)", counted.join(" + ")))
        }
        "array_agg" | "string_agg" => distinct_in_order(function),
        // `json_agg(x ...)` as the JSON array of `array_agg(to_json(x) ...)`,
        // with the same ORDER BY, FILTER and window. (With DISTINCT it is
        // left to be refused: the values would be told apart as JSON text.)
        name @ ("json_agg" | "jsonb_agg") => {
            use datafusion::sql::sqlparser::ast::DuplicateTreatment;
            let jsonb = name == "jsonb_agg";
            let mut values = function.clone();
            values.name = ObjectName::from(vec![Ident::new("array_agg")]);
            let FunctionArguments::List(list) = &mut values.args else {
                return None;
            };
            if list.duplicate_treatment == Some(DuplicateTreatment::Distinct) {
                return None;
            }
            let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(value))) = list.args.first_mut()
            else {
                return None;
            };
            *value = if jsonb {
                call("to_jsonb", vec![value.clone()])
            } else {
                call(
                    super::json::AGGREGATED_ELEMENT,
                    vec![call("to_json", vec![value.clone()]), value.clone()],
                )
            };
            let array = if jsonb {
                super::json::AGGREGATED_JSONB
            } else {
                super::json::AGGREGATED_JSON
            };
            Some(call(array, vec![Expr::Function(values)]))
        }
        // `json_object_agg(k, v ...)` as the object of the members
        // `array_agg(pgaccel_json_object_member(to_json(k), to_json(v)) ...)`,
        // with the same ORDER BY, FILTER and window (DISTINCT is left to
        // be refused, as for json_agg).
        name @ ("json_object_agg" | "jsonb_object_agg") => {
            use datafusion::sql::sqlparser::ast::DuplicateTreatment;
            let jsonb = name == "jsonb_object_agg";
            let mut members = function.clone();
            members.name = ObjectName::from(vec![Ident::new("array_agg")]);
            let FunctionArguments::List(list) = &mut members.args else {
                return None;
            };
            if list.duplicate_treatment == Some(DuplicateTreatment::Distinct) {
                return None;
            }
            let [
                FunctionArg::Unnamed(FunctionArgExpr::Expr(key)),
                FunctionArg::Unnamed(FunctionArgExpr::Expr(value)),
            ] = list.args.as_slice()
            else {
                return None;
            };
            // The key as JSON, as PostgreSQL writes it (a timestamp in ISO
            // 8601), read as text by the member function.
            let member = call(
                super::json::OBJECT_MEMBER,
                vec![
                    call("to_json", vec![key.clone()]),
                    call(
                        if jsonb { "to_jsonb" } else { "to_json" },
                        vec![value.clone()],
                    ),
                ],
            );
            list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(member))];
            let object = if jsonb {
                super::json::JSONB_OBJECT_AGG
            } else {
                super::json::JSON_OBJECT_AGG
            };
            Some(call(object, vec![Expr::Function(members)]))
        }
        // PostgreSQL removes and replaces every matching element;
        // DataFusion's functions of these names only the first.
        // Removing NULL removes the NULL elements: PostgreSQL compares
        // with `IS NOT DISTINCT FROM`.
        "array_remove" => match array_arguments(function, &[true, false]).as_slice() {
            [array, Expr::Value(value)] if value.value == Value::Null => {
                Some(call("array_compact", vec![array.clone()]))
            }
            [array, element] => Some(case_when(
                Expr::IsNull(Box::new(element.clone())),
                call("array_compact", vec![array.clone()]),
                Some(call(
                    "array_remove_all",
                    vec![array.clone(), element.clone()],
                )),
            )),
            _ => None,
        },
        "array_replace" => Some(call(
            "array_replace_all",
            array_arguments(function, &[true, false, false]),
        )),
        // Untyped literals read as the array's type or its element's.
        "array_cat" | "array_concat" | "array_append" | "array_position" | "array_prepend" => {
            let arrays: &[bool] = match function_name(function).as_str() {
                "array_append" | "array_position" => &[true, false],
                "array_prepend" => &[false, true],
                _ => &[true; 8],
            };
            let args = super::unknown_literals::wrap_array_literals(&arguments(function), arrays)?;
            Some(call(&function_name(function), args))
        }
        // An empty array has no dimensions: NULL, where DataFusion counts 0.
        "array_length" => Some(call(
            "nullif",
            vec![
                cast_to(Expr::Function(function.clone()), DataType::Int(None)),
                number("0"),
            ],
        )),
        _ => None,
    }
}

/// The column names of a derived table, when each is known without
/// planning: from the alias's column list, or from each select item's
/// alias or column name.
fn derived_columns(subquery: &Query, alias: &TableAlias) -> Option<Vec<Ident>> {
    if !alias.columns.is_empty() {
        return Some(alias.columns.iter().map(|c| c.name.clone()).collect());
    }
    let SetExpr::Select(select) = subquery.body.as_ref() else {
        return None;
    };
    select
        .projection
        .iter()
        .map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.clone()),
            SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Some(ident.clone()),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => parts.last().cloned(),
            _ => None,
        })
        .collect()
}

/// `substring(text FROM 'pattern')`: the part of `text` the regular
/// expression matches, or its first parenthesized group when it has one.
fn regexp_substring(text: &Expr, pattern: &Expr) -> Expr {
    call(
        "array_element",
        vec![
            call("regexp_match", vec![text.clone(), dotall_pattern(pattern)]),
            number("1"),
        ],
    )
}

/// What PostgreSQL's regular expressions do by default and the engine's
/// (Rust's `regex`) do only with the `s` flag: `.` and `[^x]` match a
/// newline too (`E'a\nb' ~ 'a.b'` holds). `^` and `$` match at the ends of
/// the text only, in both.
const DOTALL: &str = "(?s)";

/// Whether `pattern` already begins with [`DOTALL`].
fn is_dotall(pattern: &Expr) -> bool {
    matches!(pattern, Expr::Value(value)
        if matches!(&value.value, Value::SingleQuotedString(text) if text.starts_with(DOTALL)))
}

/// `pattern` read as PostgreSQL reads a regular expression: a literal
/// with [`DOTALL`] before it, any other value `'(?s)' || (pattern)` (NULL
/// stays NULL).
fn dotall_pattern(pattern: &Expr) -> Expr {
    match pattern {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) if !text.starts_with(DOTALL) => {
                string(&format!("{DOTALL}{text}"))
            }
            _ => pattern.clone(),
        },
        other => Expr::Nested(Box::new(Expr::BinaryOp {
            left: Box::new(string(DOTALL)),
            op: BinaryOperator::StringConcat,
            right: Box::new(Expr::Nested(Box::new(other.clone()))),
        })),
    }
}

/// A call of a regular-expression function whose pattern (the second
/// argument) is not yet read as PostgreSQL reads it: the call with
/// [`dotall_pattern`].
fn regex_function_dotall(function: &Function) -> Option<Function> {
    if !matches!(
        function_name(function).as_str(),
        "regexp_replace"
            | "regexp_match"
            | "regexp_matches"
            | "regexp_like"
            | "regexp_count"
            | "regexp_instr"
            | "regexp_substr"
            | "regexp_split_to_array"
            | "regexp_split_to_table"
    ) {
        return None;
    }
    let replace = function_name(function) == "regexp_replace";
    let mut function = function.clone();
    let FunctionArguments::List(list) = &mut function.args else {
        return None;
    };
    let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(pattern))) = list.args.get_mut(1) else {
        return None;
    };
    if is_dotall(pattern) {
        return None;
    }
    *pattern = dotall_pattern(pattern);
    if replace
        && let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))) =
            list.args.get_mut(2)
        && let Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text) =
            &mut value.value
    {
        *text = engine_replacement(text);
    }
    Some(function)
}

/// A `regexp_replace()` replacement in PostgreSQL's syntax (`\1`..`\9` a
/// group, `\&` the whole match, `\\` a backslash, anything else as
/// written) in the engine's: `${1}`, `${0}`, and `$$` for a `$`. The
/// engine also reads a backslash before digits as a group, so a literal
/// backslash is followed by a reference to no group (which adds nothing).
fn engine_replacement(text: &str) -> String {
    const BACKSLASH: &str = "\\${pgaccel_none}";
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' => out.push_str("$$"),
            '\\' => match chars.peek() {
                Some(digit @ '1'..='9') => {
                    out.push_str(&format!("${{{digit}}}"));
                    chars.next();
                }
                Some('&') => {
                    out.push_str("${0}");
                    chars.next();
                }
                Some('\\') => {
                    out.push_str(BACKSLASH);
                    chars.next();
                }
                _ => out.push_str(BACKSLASH),
            },
            other => out.push(other),
        }
    }
    out
}

/// Select-list constructs DataFusion plans elsewhere only:
/// `generate_series()` gives the query's rows (as `unnest` of its list), and
/// `EXISTS (subquery)` becomes a count of the subquery's rows.
fn select_list_set_functions(select: &mut Select) {
    for item in &mut select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(expr) => (expr, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias)),
            _ => continue,
        };
        if let Some(unnested) = series_rows(expr) {
            *item = SelectItem::ExprWithAlias {
                expr: unnested,
                alias: alias
                    .cloned()
                    .unwrap_or_else(|| Ident::new("generate_series")),
            };
            continue;
        }
        // A series inside an expression (`generate_series(1, 3) + 1`,
        // `d + generate_series(0, 6)`): its rows too.
        let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(expr, |e| {
            if let Some(unnested) = series_rows(e) {
                *e = Expr::Nested(Box::new(unnested));
            }
            ControlFlow::<()>::Continue(())
        });
        let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(expr, |e| {
            if let Expr::Exists { subquery, negated } = e
                && let Some(count) = count_of_rows(subquery)
            {
                *e = Expr::BinaryOp {
                    left: Box::new(call("coalesce", vec![count, number("0")])),
                    op: if *negated {
                        BinaryOperator::Eq
                    } else {
                        BinaryOperator::Gt
                    },
                    right: Box::new(number("0")),
                };
            }
            ControlFlow::<()>::Continue(())
        });
    }
}

/// `generate_series(...)` as the rows of its list (`unnest`); a series of
/// `integer` literals is `integer` (DataFusion's is `bigint`).
fn series_rows(expr: &Expr) -> Option<Expr> {
    let Expr::Function(function) = expr else {
        return None;
    };
    if function_name(function) != "generate_series"
        || !matches!(function.args, FunctionArguments::List(_))
    {
        return None;
    }
    let int4 = arguments(function).iter().all(|argument| {
        let literal = match argument {
            Expr::UnaryOp { expr, .. } => expr.as_ref(),
            other => other,
        };
        matches!(literal, Expr::Value(v)
            if matches!(&v.value, Value::Number(n, _) if n.parse::<i32>().is_ok()))
    });
    let unnested = call("unnest", vec![expr.clone()]);
    Some(if int4 {
        cast_to(unnested, DataType::Int(None))
    } else {
        unnested
    })
}

/// `(SELECT count(*) FROM ... WHERE ...)` for a plain `SELECT ... FROM ...
/// WHERE ... [ORDER BY] [LIMIT]`, whose rows (not values) are what counts.
fn count_of_rows(query: &Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let grouped = !matches!(
        &select.group_by,
        datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, _) if exprs.is_empty()
    );
    if grouped
        || select.having.is_some()
        || select.distinct.is_some()
        || query.with.is_some()
        || select.from.is_empty()
        || select.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                aggregates(expr)
            }
            _ => false,
        })
    {
        return None;
    }
    let mut counted = query.clone();
    counted.order_by = None;
    counted.limit_clause = None;
    if let SetExpr::Select(select) = counted.body.as_mut() {
        select.projection = vec![SelectItem::UnnamedExpr(call("count", vec![number("1")]))];
    }
    Some(Expr::Subquery(Box::new(counted)))
}

/// `ARRAY(SELECT e FROM ... [ORDER BY ...])` as the aggregated subquery
/// `(SELECT array_agg(e [ORDER BY ...]) FROM ...)`.
/// `condition`, or the error `code` with `message` when it is false.
fn require(condition: Expr, code: &str, message: &str) -> Expr {
    call(
        super::functions::REQUIRE,
        vec![condition, string(code), string(message)],
    )
}

/// `ARRAY(SELECT ... FROM unnest(o.a) ...)`, over an array of the outer
/// row, which DataFusion cannot run per row: answered (`{}`) where the
/// array is NULL or empty, as the catalog's arrays of that kind mostly are
/// (`conexclop`, extension versions); an error (0A000) for a row whose
/// array has elements, never a wrong answer.
fn empty_outer_unnest(query: &Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let [from] = select.from.as_slice() else {
        return None;
    };
    let TableFactor::UNNEST { array_exprs, .. } = &from.relation else {
        return None;
    };
    let [array] = array_exprs.as_slice() else {
        return None;
    };
    let outer = matches!(array, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
    if !from.joins.is_empty() || !outer {
        return None;
    }
    let [SelectItem::UnnamedExpr(element) | SelectItem::ExprWithAlias { expr: element, .. }] =
        select.projection.as_slice()
    else {
        return None;
    };
    let element_type = match element {
        Expr::Cast { data_type, .. } => data_type.clone(),
        _ => DataType::Text,
    };
    let empty = cast_to(
        call("make_array", Vec::new()),
        DataType::Array(
            datafusion::sql::sqlparser::ast::ArrayElemTypeDef::SquareBracket(
                Box::new(element_type),
                None,
            ),
        ),
    );
    let is_empty = Expr::BinaryOp {
        left: Box::new(call(
            "coalesce",
            vec![call("cardinality", vec![array.clone()]), number("0")],
        )),
        op: BinaryOperator::Eq,
        right: Box::new(number("0")),
    };
    let condition = require(
        is_empty,
        "0A000",
        "ARRAY(SELECT ... FROM unnest(array)) over a non-empty array of the outer query is not supported",
    );
    Some(case_when(condition, empty, None))
}

fn array_of_subquery(query: &Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    if let Some(mapped) = concat_each(query, select) {
        return Some(mapped);
    }
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
    // No row gives an empty array, not the aggregate's NULL.
    Some(call(
        "coalesce",
        vec![
            Expr::Subquery(Box::new(rewritten)),
            call("make_array", Vec::new()),
        ],
    ))
}

/// `ARRAY(SELECT 'p' || x || 's' FROM unnest(a) x)`: each element with a
/// prefix or suffix, as one function (a correlated unnest is only planned
/// at the top of a select list).
fn concat_each(query: &Query, select: &Select) -> Option<Expr> {
    let [from] = select.from.as_slice() else {
        return None;
    };
    let (array, element) = match &from.relation {
        TableFactor::UNNEST {
            alias: Some(alias),
            array_exprs,
            with_ordinality: false,
            ..
        } if array_exprs.len() == 1 && from.joins.is_empty() => {
            let element = alias.columns.first().map_or(&alias.name, |c| &c.name);
            (array_exprs[0].clone(), element.value.to_lowercase())
        }
        _ => return None,
    };
    if select.selection.is_some() || query.order_by.is_some() || query.limit_clause.is_some() {
        return None;
    }
    let [SelectItem::UnnamedExpr(item) | SelectItem::ExprWithAlias { expr: item, .. }] =
        select.projection.as_slice()
    else {
        return None;
    };
    let literal = |expr: &Expr| match expr {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) => Some(text.clone()),
            _ => None,
        },
        _ => None,
    };
    let is_element =
        |expr: &Expr| matches!(expr, Expr::Identifier(i) if i.value.to_lowercase() == element);
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::StringConcat,
        right,
    } = item
    else {
        return None;
    };
    let (prefix, suffix) = if is_element(right) {
        (literal(left)?, String::new())
    } else if is_element(left) {
        (String::new(), literal(right)?)
    } else {
        return None;
    };
    Some(call(
        "pgaccel_concat_each",
        vec![array, string(&prefix), string(&suffix)],
    ))
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
            parts.push(Ident::new(format!(
                "{}__{field}",
                alias.value.to_lowercase()
            )));
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

/// A scalar subquery DataFusion can decorrelate: an aggregate's `LIMIT`
/// dropped (it gives one row anyway), conditions on the outer row alone
/// moved out of it (`CASE WHEN outer_condition THEN (subquery) END`), and
/// its value checked to be a single row ([`single_value`]).
fn scalar_subquery(query: &Query) -> Option<Expr> {
    let mut rewritten = query.clone();
    let mut changed = first_row(&mut rewritten);
    if let SetExpr::Select(select) = rewritten.body.as_ref()
        && rewritten.limit_clause.is_some()
        && single_aggregate_row(select)
        && limits_to_one_or_more(&rewritten)
    {
        rewritten.limit_clause = None;
        changed = true;
    }
    let (guard, substituted) = move_outer_conditions(&mut rewritten);
    changed |= substituted || guard.is_some();
    let empty = guard.as_ref().and_then(|_| empty_value(&rewritten));
    let value = match split_outer_value(&rewritten).or_else(|| single_value(&rewritten)) {
        Some(value) => value,
        None if changed => Expr::Subquery(Box::new(rewritten)),
        None => return None,
    };
    Some(match (guard, empty) {
        (Some(condition), Some(empty)) => case_when(condition, value, Some(empty)),
        _ => value,
    })
}

/// The function answering [`role_memberships`]'s walk.
pub const ROLE_MEMBERSHIPS: &str = "pgaccel_role_memberships";

/// `ARRAY(WITH RECURSIVE r AS (SELECT oid, rolname FROM pg_roles WHERE oid =
/// <outer> UNION ALL SELECT m.roleid, ... FROM r JOIN pg_auth_members m ...)
/// SELECT rolname FROM r)` (pgAdmin on connect): the names of a role and of
/// every role it is a member of. DataFusion cannot run a recursive query
/// once per outer row; [`ROLE_MEMBERSHIPS`] follows `pg_auth_members` the
/// same way.
fn role_memberships(query: &Query) -> Option<Expr> {
    let walk = RecursiveWalk::of(query)?;
    let follows_memberships = walk.step.from.iter().any(|table| {
        std::iter::once(&table.relation)
            .chain(table.joins.iter().map(|j| &j.relation))
            .any(|factor| {
                matches!(factor, TableFactor::Table { name, .. }
                    if last_part(name).eq_ignore_ascii_case("pg_auth_members"))
            })
    });
    let reads_names = matches!(
        walk.last.projection.as_slice(),
        [SelectItem::UnnamedExpr(e)] if column_name(e).as_deref() == Some("rolname")
    );
    (matches!(walk.table.as_str(), "pg_roles" | "pg_authid")
        && follows_memberships
        && reads_names
        && walk.last.selection.is_none())
    .then(|| call(ROLE_MEMBERSHIPS, vec![walk.outer.clone()]))
}

/// A recursive walk through one catalog table, starting from the row of
/// an OID of the outer query: `(WITH RECURSIVE w AS (SELECT ... FROM table
/// WHERE table.oid = <outer> UNION ALL <step>) SELECT ... FROM w ...)`.
struct RecursiveWalk<'a> {
    /// The table the walk starts in, lower case.
    table: String,
    anchor: &'a Select,
    step: &'a Select,
    /// `<outer>`: references the outer query only.
    outer: &'a Expr,
    /// The select reading the walk (from it alone).
    last: &'a Select,
}

impl<'a> RecursiveWalk<'a> {
    fn of(query: &'a Query) -> Option<RecursiveWalk<'a>> {
        let with = query.with.as_ref().filter(|with| with.recursive)?;
        let [cte] = with.cte_tables.as_slice() else {
            return None;
        };
        let SetExpr::SetOperation {
            op: SetOperator::Union,
            set_quantifier: SetQuantifier::All,
            left,
            right,
        } = cte.query.body.as_ref()
        else {
            return None;
        };
        let (SetExpr::Select(anchor), SetExpr::Select(step), SetExpr::Select(last)) =
            (left.as_ref(), right.as_ref(), query.body.as_ref())
        else {
            return None;
        };
        let [from] = anchor.from.as_slice() else {
            return None;
        };
        let TableFactor::Table { name, .. } = &from.relation else {
            return None;
        };
        let Some(Expr::BinaryOp {
            left: key,
            op: BinaryOperator::Eq,
            right: outer,
        }) = &anchor.selection
        else {
            return None;
        };
        let outer_refs = references(outer, &relation_names(anchor));
        let starts_at_outer_oid = column_name(key).as_deref() == Some("oid")
            && outer_refs.outer
            && !outer_refs.inner
            && !outer_refs.unknown;
        let reads_walk = relation_names(last) == [cte.alias.name.value.to_lowercase()];
        (from.joins.is_empty() && starts_at_outer_oid && reads_walk).then(|| RecursiveWalk {
            table: last_part(name).to_lowercase(),
            anchor,
            step,
            outer,
            last,
        })
    }
}

/// The function answering [`domain_base_type`]'s walk.
pub const DOMAIN_BASE_TYPE: &str = "pgaccel_domain_base_type";

/// `(WITH RECURSIVE b(oid, depth) AS (SELECT t2.typbasetype, 0 FROM pg_type
/// t2 WHERE t2.oid = <outer> UNION ALL SELECT ... FROM pg_type t2, b WHERE
/// ...) SELECT oid FROM b ORDER BY depth DESC LIMIT 1)`: the last base type
/// of a chain of domains, starting from the outer row's type. DataFusion
/// cannot run a recursive query once per outer row, so the walk becomes
/// [`DOMAIN_BASE_TYPE`] of `<outer>`, which follows `typbasetype` in the
/// catalog's own types the same way.
fn domain_base_type(query: &Query) -> Option<Expr> {
    let walk = RecursiveWalk::of(query)?;
    let first_column_is_base = matches!(
        walk.anchor.projection.first(),
        Some(SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. })
            if column_name(e).as_deref() == Some("typbasetype")
    );
    // The outer query reads the deepest row of the walk.
    let deepest = query.order_by.as_ref().is_some_and(|order| {
        matches!(&order.kind, OrderByKind::Expressions(exprs)
            if exprs.len() == 1 && exprs[0].options.asc == Some(false))
    }) && query
        .limit_clause
        .as_ref()
        .is_some_and(|limit| limit.to_string().trim() == "LIMIT 1");
    (walk.table == "pg_type" && first_column_is_base && deepest)
        .then(|| call(DOMAIN_BASE_TYPE, vec![walk.outer.clone()]))
}

/// The column an identifier names, lower case.
fn column_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Identifier(ident) => Some(ident.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.to_lowercase()),
        _ => None,
    }
}

/// `(SELECT e FROM ... WHERE ... ORDER BY k LIMIT 1)`, the first row's
/// value, which DataFusion cannot decorrelate: as the aggregate
/// `first_value(e ORDER BY k)` over the same rows, which it can (NULL when
/// there is no row, as the subquery gives). True when rewritten.
fn first_row(query: &mut Query) -> bool {
    let limited_to_one = query
        .limit_clause
        .as_ref()
        .is_some_and(|limit| limit.to_string().trim() == "LIMIT 1");
    let SetExpr::Select(select) = query.body.as_mut() else {
        return false;
    };
    let [SelectItem::UnnamedExpr(value) | SelectItem::ExprWithAlias { expr: value, .. }] =
        select.projection.as_slice()
    else {
        return false;
    };
    let ungrouped = matches!(
        &select.group_by,
        datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, _) if exprs.is_empty()
    );
    if !limited_to_one
        || !ungrouped
        || select.having.is_some()
        || select.distinct.is_some()
        || aggregates(value)
    {
        return false;
    }
    let alias = match &select.projection[0] {
        SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
        _ => None,
    };
    let mut keys = Vec::new();
    if let Some(order) = &query.order_by {
        let OrderByKind::Expressions(exprs) = &order.kind else {
            return false;
        };
        for key in exprs {
            // `ORDER BY 1` and `ORDER BY alias` name the value itself.
            let by_value = match &key.expr {
                Expr::Value(v) => matches!(&v.value, Value::Number(n, _) if n == "1"),
                Expr::Identifier(ident) => alias.as_deref() == Some(&ident.value.to_lowercase()),
                _ => false,
            };
            let mut key = key.clone();
            if by_value {
                key.expr = value.clone();
            }
            keys.push(key.to_string());
        }
    }
    let order = if keys.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", keys.join(", "))
    };
    let Ok(first) = datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
    )
    .try_with_sql(&format!("first_value({value}{order})"))
    .and_then(|mut parser| parser.parse_expr()) else {
        return false;
    };
    select.projection = vec![SelectItem::UnnamedExpr(first)];
    query.order_by = None;
    query.limit_clause = None;
    true
}

/// `x op ANY (subquery)` and `x op ALL (subquery)` with PostgreSQL's
/// three-valued answer: `= ANY` is `IN`, `<> ALL` is `NOT IN`; the other
/// comparisons compare with the subquery's least or greatest value, and
/// count its rows and NULLs for the cases the comparison alone does not
/// settle (no rows: ANY is false and ALL true; a NULL on either side and
/// no deciding value: NULL).
/// The `x = ANY(array)` conjuncts of a WHERE clause, where a NULL drops
/// the row as false does: marked (with the `SOME` spelling, which means
/// the same) so that [`any_equal`] leaves them to the engine's plain
/// membership test, which filters and prunes as before.
fn filtering_any(expr: &mut Expr) {
    match expr {
        Expr::Nested(inner) => filtering_any(inner),
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            filtering_any(left);
            filtering_any(right);
        }
        Expr::AnyOp {
            compare_op: BinaryOperator::Eq,
            is_some,
            ..
        } => *is_some = true,
        _ => {}
    }
}

/// `x = ANY(array)` with PostgreSQL's NULLs: true when an element equals
/// `x`, else NULL when `x` or an element is NULL, else false (and false
/// for an empty array, NULL for a NULL one); `x <> ALL(array)` is its
/// negation. The engine's membership test ignores NULLs. `None` for a
/// subquery, and for an array written as a string, which the catalog
/// rewrites read.
fn any_equal(left: &Expr, right: &Expr) -> Option<Expr> {
    let mut array = right;
    while let Expr::Nested(inner) = array {
        array = inner;
    }
    if matches!(array, Expr::Subquery(_))
        || matches!(array, Expr::Value(value) if matches!(value.value, Value::SingleQuotedString(_)))
    {
        return None;
    }
    let array = Expr::Nested(Box::new(array.clone()));
    let cardinality = |of: Expr| call("cardinality", vec![of]);
    let null = || Expr::Value(Value::Null.into());
    use datafusion::sql::sqlparser::ast::CaseWhen;
    use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
    Some(Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![
            CaseWhen {
                condition: Expr::IsNull(Box::new(array.clone())),
                result: null(),
            },
            CaseWhen {
                condition: Expr::BinaryOp {
                    left: Box::new(cardinality(array.clone())),
                    op: BinaryOperator::Eq,
                    right: Box::new(number("0")),
                },
                result: Expr::Value(Value::Boolean(false).into()),
            },
            CaseWhen {
                condition: call("array_has", vec![array.clone(), left.clone()]),
                result: Expr::Value(Value::Boolean(true).into()),
            },
            CaseWhen {
                condition: Expr::BinaryOp {
                    left: Box::new(Expr::IsNull(Box::new(left.clone()))),
                    op: BinaryOperator::Or,
                    right: Box::new(Expr::BinaryOp {
                        left: Box::new(cardinality(call("array_compact", vec![array.clone()]))),
                        op: BinaryOperator::Lt,
                        right: Box::new(cardinality(array)),
                    }),
                },
                result: null(),
            },
        ],
        else_result: Some(Box::new(Expr::Value(Value::Boolean(false).into()))),
    })
}

fn quantified_subquery(
    left: &Expr,
    op: &datafusion::sql::sqlparser::ast::BinaryOperator,
    right: &Expr,
    all: bool,
) -> Option<Expr> {
    use datafusion::sql::sqlparser::ast::BinaryOperator;
    let mut right = right;
    while let Expr::Nested(inner) = right {
        right = inner;
    }
    let Expr::Subquery(subquery) = right else {
        return None;
    };
    match (op, all) {
        (BinaryOperator::Eq, false) | (BinaryOperator::NotEq, true) => {
            return Some(Expr::InSubquery {
                expr: Box::new(left.clone()),
                subquery: subquery.clone(),
                negated: all,
            });
        }
        _ => {}
    }
    let over = |aggregate: &str| {
        format!("(SELECT {aggregate} FROM ({subquery}) AS pgaccel_quantified(pgaccel_value))")
    };
    let x = format!("({left})");
    let count = over("count(*)");
    let nulls = format!(
        "({x} IS NULL OR {} > 0)",
        over("count(*) - count(pgaccel_value)")
    );
    let (least, greatest) = (over("min(pgaccel_value)"), over("max(pgaccel_value)"));
    let sql = match (op, all) {
        // Some value satisfies the comparison: the extreme one does.
        (BinaryOperator::Gt | BinaryOperator::GtEq, false) => format!(
            "CASE WHEN {x} {op} {least} THEN true WHEN {count} = 0 THEN false WHEN {nulls} THEN NULL ELSE false END"
        ),
        (BinaryOperator::Lt | BinaryOperator::LtEq, false) => format!(
            "CASE WHEN {x} {op} {greatest} THEN true WHEN {count} = 0 THEN false WHEN {nulls} THEN NULL ELSE false END"
        ),
        (BinaryOperator::NotEq, false) => format!(
            "CASE WHEN {count} = 0 THEN false WHEN {x} <> {least} OR {x} <> {greatest} THEN true WHEN {nulls} THEN NULL ELSE false END"
        ),
        // Some value fails the comparison: the extreme one does.
        (BinaryOperator::Gt | BinaryOperator::GtEq, true) => format!(
            "CASE WHEN {count} = 0 THEN true WHEN NOT ({x} {op} {greatest}) THEN false WHEN {nulls} THEN NULL ELSE true END"
        ),
        (BinaryOperator::Lt | BinaryOperator::LtEq, true) => format!(
            "CASE WHEN {count} = 0 THEN true WHEN NOT ({x} {op} {least}) THEN false WHEN {nulls} THEN NULL ELSE true END"
        ),
        (BinaryOperator::Eq, true) => format!(
            "CASE WHEN {count} = 0 THEN true WHEN {x} <> {least} OR {x} <> {greatest} THEN false WHEN {nulls} THEN NULL ELSE true END"
        ),
        _ => return None,
    };
    datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
    )
    .try_with_sql(&sql)
    .and_then(|mut parser| parser.parse_expr())
    .ok()
}

/// `CASE WHEN condition THEN result [ELSE otherwise] END`.
fn case_when(condition: Expr, result: Expr, otherwise: Option<Expr>) -> Expr {
    use datafusion::sql::sqlparser::ast::helpers::attached_token::AttachedToken;
    Expr::Case {
        case_token: AttachedToken::empty(),
        end_token: AttachedToken::empty(),
        operand: None,
        conditions: vec![datafusion::sql::sqlparser::ast::CaseWhen { condition, result }],
        else_result: otherwise.map(Box::new),
    }
}

/// A subquery whose value is computed from the outer row as well as its
/// own, `(SELECT f(s.x, o.y) FROM s WHERE ...)`, which DataFusion does not
/// decorrelate: as `f` of one subquery per column of its own
/// (`(SELECT s.x FROM s WHERE ...)`, each checked to give one row), when
/// the subquery has a row at all.
fn split_outer_value(query: &Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let [SelectItem::UnnamedExpr(value) | SelectItem::ExprWithAlias { expr: value, .. }] =
        select.projection.as_slice()
    else {
        return None;
    };
    let inner = relation_names(select);
    let found = references(value, &inner);
    if !found.outer
        || found.unknown
        || aggregates(value)
        || select.distinct.is_some()
        || select.having.is_some()
        || query.with.is_some()
        || query.limit_clause.is_some()
        || !matches!(
            &select.group_by,
            datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, _) if exprs.is_empty()
        )
    {
        return None;
    }
    let with_projection = |projection: Expr| {
        let mut each = query.clone();
        each.order_by = None;
        if let SetExpr::Select(select) = each.body.as_mut() {
            select.projection = vec![SelectItem::UnnamedExpr(projection)];
        }
        Expr::Subquery(Box::new(each))
    };
    let mut split = value.clone();
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(&mut split, |e| {
        let own = match e {
            Expr::Identifier(_) => true,
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                inner.contains(&parts[parts.len() - 2].value.to_lowercase())
            }
            _ => false,
        };
        if own {
            *e = with_projection(call(SINGLE_VALUE, vec![e.clone()]));
        }
        ControlFlow::<()>::Continue(())
    });
    let rows = with_projection(call("count", vec![number("1")]));
    Some(case_when(
        Expr::BinaryOp {
            left: Box::new(call("coalesce", vec![rows, number("0")])),
            op: BinaryOperator::Gt,
            right: Box::new(number("0")),
        },
        Expr::Nested(Box::new(split)),
        None,
    ))
}

/// Whether `select` is an aggregate without groups, which gives one row.
fn single_aggregate_row(select: &Select) -> bool {
    let ungrouped = matches!(
        &select.group_by,
        datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(exprs, _) if exprs.is_empty()
    );
    ungrouped
        && select.having.is_none()
        && !select.projection.is_empty()
        && select.projection.iter().all(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                aggregates(expr)
            }
            _ => false,
        })
}

/// The rank the rows of a `FETCH ... WITH TIES` query are kept by.
const TIES_RANK: &str = "__pgaccel_ties_rank";

/// `ORDER BY o FETCH FIRST n ROWS WITH TIES`, the first n rows and every
/// row that ties with the last of them: the rows whose `rank() OVER (ORDER
/// BY o)` is at most n, in that order, from the query as a derived table
/// with the rank beside its columns (`SELECT * EXCLUDE (rank)` above it).
/// The ordering is read in the select list's scope: a position or an
/// output name is the select item's expression. Left to be refused with
/// DISTINCT (the rank would count duplicates), OFFSET, or a set operation.
fn fetch_with_ties(query: &mut Query) {
    use datafusion::sql::sqlparser::ast::{ExcludeSelectItem, OrderByExpr};
    let Some(fetch) = &query.fetch else {
        return;
    };
    if !fetch.with_ties || fetch.percent || query.limit_clause.is_some() {
        return;
    }
    let count = fetch.quantity.clone().unwrap_or_else(|| number("1"));
    let SetExpr::Select(select) = query.body.as_ref() else {
        return;
    };
    if select.distinct.is_some() {
        return;
    }
    let Some(OrderByKind::Expressions(items)) = query.order_by.as_ref().map(|o| &o.kind) else {
        return;
    };
    let item_expr = |item: &SelectItem| match item {
        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
            Some(expr.clone())
        }
        _ => None,
    };
    let mut ordering = Vec::with_capacity(items.len());
    for item in items {
        let expr = match &item.expr {
            Expr::Value(v) if matches!(v.value, Value::Number(..)) => {
                let Value::Number(position, _) = &v.value else {
                    return;
                };
                let Some(expr) = position
                    .parse::<usize>()
                    .ok()
                    .and_then(|position| select.projection.get(position.checked_sub(1)?))
                    .and_then(item_expr)
                else {
                    return;
                };
                expr
            }
            Expr::Identifier(name) => select
                .projection
                .iter()
                .find_map(|item| match item {
                    SelectItem::ExprWithAlias { expr, alias }
                        if alias.value.eq_ignore_ascii_case(&name.value) =>
                    {
                        Some(expr.clone())
                    }
                    _ => None,
                })
                .unwrap_or_else(|| item.expr.clone()),
            other => other.clone(),
        };
        ordering.push(OrderByExpr {
            expr,
            ..item.clone()
        });
    }
    let ordering: Vec<String> = ordering.iter().map(ToString::to_string).collect();
    let Some(rank) = parse_expr(&format!("rank() OVER (ORDER BY {})", ordering.join(", "))) else {
        return;
    };
    let mut inner = select.as_ref().clone();
    inner.projection.push(SelectItem::ExprWithAlias {
        expr: rank,
        alias: Ident::new(TIES_RANK),
    });
    let mut inner_query = query.clone();
    inner_query.with = None;
    inner_query.order_by = None;
    inner_query.fetch = None;
    *inner_query.body = SetExpr::Select(Box::new(inner));
    let sql = format!(
        "SELECT * FROM ({inner_query}) AS __pgaccel_ties WHERE {TIES_RANK} <= {count} ORDER BY {TIES_RANK}"
    );
    let Ok(mut outer) = datafusion::sql::sqlparser::parser::Parser::new(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
    )
    .try_with_sql(&sql)
    .and_then(|mut parser| parser.parse_query()) else {
        return;
    };
    let SetExpr::Select(outer_select) = outer.body.as_mut() else {
        return;
    };
    let Some(SelectItem::Wildcard(options)) = outer_select.projection.first_mut() else {
        return;
    };
    options.opt_exclude = Some(ExcludeSelectItem::Single(ObjectName::from(vec![
        Ident::new(TIES_RANK),
    ])));
    query.body = outer.body;
    query.order_by = outer.order_by;
    query.fetch = None;
}

/// `FETCH FIRST n ROWS ONLY` (the SQL standard's LIMIT) as `LIMIT n`;
/// `n` defaults to 1. `WITH TIES` and `PERCENT` are left to be refused.
fn fetch_as_limit(query: &mut Query) {
    use datafusion::sql::sqlparser::ast::LimitClause;
    let Some(fetch) = &query.fetch else {
        return;
    };
    if fetch.with_ties || fetch.percent {
        return;
    }
    let count = fetch
        .quantity
        .clone()
        .unwrap_or_else(|| Expr::value(Value::Number("1".to_owned(), false)));
    let offset = match query.limit_clause.take() {
        Some(LimitClause::LimitOffset {
            limit: None,
            offset,
            limit_by,
        }) if limit_by.is_empty() => offset,
        None => None,
        other => {
            // LIMIT and FETCH together: PostgreSQL refuses it; so does
            // DataFusion, on the FETCH left in place.
            query.limit_clause = other;
            return;
        }
    };
    query.fetch = None;
    query.limit_clause = Some(LimitClause::LimitOffset {
        limit: Some(count),
        offset,
        limit_by: Vec::new(),
    });
}

fn limits_to_one_or_more(query: &Query) -> bool {
    use datafusion::sql::sqlparser::ast::LimitClause;
    match &query.limit_clause {
        Some(LimitClause::LimitOffset {
            limit: Some(Expr::Value(value)),
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => {
            matches!(&value.value, Value::Number(n, _) if n.parse::<u64>().is_ok_and(|n| n >= 1))
        }
        _ => false,
    }
}

/// What the subquery gives when its conditions select no row, if known:
/// 0 for `count()`, NULL for the other aggregates and for a plain value.
fn empty_value(query: &Query) -> Option<Expr> {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    let [item] = select.projection.as_slice() else {
        return None;
    };
    let (SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. }) = item else {
        return None;
    };
    let null = Expr::Value(ValueWithSpan::from(Value::Null));
    match expr {
        Expr::Function(function) if function.over.is_none() => {
            match function_name(function).as_str() {
                "count" => Some(number("0")),
                name if AGGREGATES.contains(&name) => Some(null),
                _ if !aggregates(expr) => Some(null),
                _ => None,
            }
        }
        _ if !aggregates(expr) && !single_aggregate_row(select) => Some(null),
        _ => None,
    }
}

/// The relations a select's FROM names (aliases, or table names), lower
/// case.
pub(super) fn relation_names(select: &Select) -> Vec<String> {
    let mut names = Vec::new();
    for table in &select.from {
        for factor in
            std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation))
        {
            names.push(factor_name(factor).unwrap_or_default());
        }
    }
    names
}

/// Whether `select` is a plain one over a FROM clause: no `DISTINCT`,
/// `QUALIFY`, named window, `TOP` or `INTO`, which the lateral rewrites do
/// not carry over.
pub(super) fn plain_select(select: &Select) -> bool {
    select.distinct.is_none()
        && select.qualify.is_none()
        && select.named_window.is_empty()
        && select.top.is_none()
        && select.into.is_none()
        && !select.from.is_empty()
}

/// The name a FROM item is known by (its alias, or its table's name),
/// lower case.
fn factor_name(factor: &TableFactor) -> Option<String> {
    match factor {
        TableFactor::Table {
            alias: Some(alias), ..
        }
        | TableFactor::Derived {
            alias: Some(alias), ..
        }
        | TableFactor::UNNEST {
            alias: Some(alias), ..
        }
        | TableFactor::Function {
            alias: Some(alias), ..
        } => Some(alias.name.value.to_lowercase()),
        TableFactor::Table { name, .. } => Some(last_part(name).to_lowercase()),
        _ => None,
    }
}

/// Which side of a subquery the column references of `expr` are on.
#[derive(Default)]
pub(super) struct References {
    pub(super) inner: bool,
    pub(super) outer: bool,
    /// A nested subquery, or anything else not classified.
    pub(super) unknown: bool,
}

pub(super) fn references(expr: &Expr, inner: &[String]) -> References {
    let mut found = References::default();
    let _ = datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| {
        match e {
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let qualifier = parts[parts.len() - 2].value.to_lowercase();
                if inner.contains(&qualifier) {
                    found.inner = true;
                } else {
                    found.outer = true;
                }
            }
            // Unqualified: taken as the subquery's own column.
            Expr::Identifier(_) => found.inner = true,
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                found.unknown = true;
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    found
}

pub(super) fn conjuncts(expr: Expr, into: &mut Vec<Expr>) {
    match expr {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(*left, into);
            conjuncts(*right, into);
        }
        Expr::Nested(inner)
            if matches!(
                inner.as_ref(),
                Expr::BinaryOp {
                    op: BinaryOperator::And,
                    ..
                }
            ) =>
        {
            conjuncts(*inner, into)
        }
        other => into.push(other),
    }
}

pub(super) fn conjunction(exprs: Vec<Expr>) -> Option<Expr> {
    let nested = |expr: Expr| match expr {
        Expr::BinaryOp {
            op: BinaryOperator::Or,
            ..
        } => Expr::Nested(Box::new(expr)),
        other => other,
    };
    exprs
        .into_iter()
        .map(nested)
        .reduce(|all, next| Expr::BinaryOp {
            left: Box::new(all),
            op: BinaryOperator::And,
            right: Box::new(next),
        })
}

/// DataFusion decorrelates an aggregated subquery only when each condition
/// naming the outer row is an equality with the subquery's own columns.
/// Others are made so: an outer column a condition equates with an inner
/// expression stands for it in the other conditions, and conditions on the
/// outer row alone are returned, to be tested outside the subquery. The
/// second value tells whether a condition was rewritten.
fn move_outer_conditions(query: &mut Query) -> (Option<Expr>, bool) {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return (None, false);
    };
    let Some(selection) = select.selection.take() else {
        return (None, false);
    };
    let inner = relation_names(select);
    let original = selection.clone();
    let mut all = Vec::new();
    conjuncts(selection, &mut all);
    // Outer column (as written) -> the inner expression it equals.
    let mut equated: HashMap<String, Expr> = HashMap::new();
    for condition in &all {
        if let Expr::BinaryOp {
            left,
            op: BinaryOperator::Eq,
            right,
        } = condition
        {
            for (mine, theirs) in [(left, right), (right, left)] {
                let (m, t) = (references(mine, &inner), references(theirs, &inner));
                if matches!(theirs.as_ref(), Expr::CompoundIdentifier(_))
                    && t.outer
                    && !t.inner
                    && m.inner
                    && !m.outer
                    && !m.unknown
                {
                    equated
                        .entry(theirs.to_string())
                        .or_insert_with(|| (**mine).clone());
                }
            }
        }
    }
    let mut substituted = false;
    let mut kept = Vec::new();
    let mut outer_only = Vec::new();
    for mut condition in all {
        let found = references(&condition, &inner);
        if found.outer && found.inner && !found.unknown && !is_correlation(&condition, &inner) {
            let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(&mut condition, |e| {
                if matches!(e, Expr::CompoundIdentifier(_))
                    && let Some(replacement) = equated.get(&e.to_string())
                {
                    *e = replacement.clone();
                    substituted = true;
                }
                ControlFlow::<()>::Continue(())
            });
        }
        let found = references(&condition, &inner);
        if found.outer && !found.inner && !found.unknown {
            outer_only.push(condition);
        } else {
            kept.push(condition);
        }
    }
    let movable = !outer_only.is_empty() && empty_value(query).is_some();
    let SetExpr::Select(select) = query.body.as_mut() else {
        unreachable!("checked above");
    };
    if !movable {
        select.selection = if substituted {
            kept.append(&mut outer_only);
            conjunction(kept)
        } else {
            Some(original)
        };
        return (None, substituted);
    }
    select.selection = conjunction(kept);
    (conjunction(outer_only), substituted)
}

/// Whether `condition` is an equality of an inner and an outer expression,
/// which DataFusion decorrelates as it is.
pub(super) fn is_correlation(condition: &Expr, inner: &[String]) -> bool {
    let Expr::BinaryOp {
        left,
        op: BinaryOperator::Eq,
        right,
    } = condition
    else {
        return false;
    };
    let (l, r) = (references(left, inner), references(right, inner));
    (l.inner && !l.outer && r.outer && !r.inner) || (l.outer && !l.inner && r.inner && !r.outer)
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

/// `string_agg(x, ',' ORDER BY k)` beside another `string_agg` ordered
/// otherwise (`string_agg(y, ',' ORDER BY y)`, or `DISTINCT y`, which sorts
/// by `y`): DataFusion sorts its input once for all of a select's ordered
/// `string_agg`s and refuses orders that conflict, where `array_agg` sorts
/// its own values. Each `string_agg` is then written as the `array_agg` of
/// its non-NULL values (so none gives NULL, as `string_agg` does) joined
/// by the separator:
///
/// ```sql
/// array_to_string(array_agg(x ORDER BY k) FILTER (WHERE x IS NOT NULL), ',')
/// ```
///
/// Only with a literal separator (a separator per row is not a join).
fn string_aggs_as_arrays(select: &mut Select) {
    use datafusion::sql::sqlparser::ast::{DuplicateTreatment, FunctionArgumentClause};
    // Called on `string_agg`s only.
    let ordering = |function: &Function| -> Option<String> {
        let FunctionArguments::List(list) = &function.args else {
            return None;
        };
        if function.over.is_some() {
            return None;
        }
        list.clauses
            .iter()
            .find_map(|clause| match clause {
                FunctionArgumentClause::OrderBy(keys) => Some(
                    keys.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                ),
                _ => None,
            })
            .or_else(|| {
                // `DISTINCT` sorts by the value (see [`distinct_in_order`]).
                (list.duplicate_treatment == Some(DuplicateTreatment::Distinct))
                    .then(|| list.args.first().map(ToString::to_string))
                    .flatten()
            })
    };
    let mut orders = std::collections::HashSet::new();
    let mut string_aggs = 0;
    let mut look = |expr: &Expr| {
        let _ = datafusion::sql::sqlparser::ast::visit_expressions(expr, |e| {
            if let Expr::Function(function) = e
                && function_name(function) == "string_agg"
                && let Some(order) = ordering(function)
            {
                string_aggs += 1;
                orders.insert(order);
            }
            ControlFlow::<()>::Continue(())
        });
    };
    for item in &select.projection {
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
            look(expr);
        }
    }
    if let Some(having) = &select.having {
        look(having);
    }
    if string_aggs == 0 || orders.len() < 2 {
        return;
    }
    let rewrite = |expr: &mut Expr| {
        let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(expr, |e| {
            if let Expr::Function(function) = e
                && function_name(function) == "string_agg"
                && ordering(function).is_some()
                && let FunctionArguments::List(list) = &function.args
                && let [
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(value)),
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(separator @ Expr::Value(_))),
                ] = list.args.as_slice()
            {
                let mut aggregate = function.clone();
                aggregate.name = ObjectName::from(vec![Ident::new("array_agg")]);
                // As text: a `character(n)` value without its padding, as
                // string_agg() reads it.
                let text = Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(value.clone()),
                    data_type: DataType::Text,
                    array: false,
                    format: None,
                };
                if let FunctionArguments::List(list) = &mut aggregate.args {
                    // `DISTINCT x ORDER BY x` orders by the argument as given.
                    for clause in &mut list.clauses {
                        if let FunctionArgumentClause::OrderBy(keys) = clause {
                            for key in keys.iter_mut().filter(|key| key.expr == *value) {
                                key.expr = text.clone();
                            }
                        }
                    }
                    list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(text))];
                }
                let present = Expr::IsNotNull(Box::new(value.clone()));
                aggregate.filter = Some(Box::new(match aggregate.filter.take() {
                    Some(filter) => Expr::BinaryOp {
                        left: Box::new(Expr::Nested(filter)),
                        op: BinaryOperator::And,
                        right: Box::new(present),
                    },
                    None => present,
                }));
                *e = call(
                    "array_to_string",
                    vec![Expr::Function(aggregate), separator.clone()],
                );
            }
            ControlFlow::<()>::Continue(())
        });
    };
    for item in &mut select.projection {
        if let SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } = item {
            rewrite(expr);
        }
    }
    if let Some(having) = &mut select.having {
        rewrite(having);
    }
}

/// `array_agg(DISTINCT x)` (or `string_agg`, `json_agg`) with an `ORDER BY
/// x`: PostgreSQL sorts the input to drop duplicates, so the values come
/// out in ascending order; DataFusion's come in hash order.
fn distinct_in_order(function: &Function) -> Option<Expr> {
    use datafusion::sql::sqlparser::ast::{
        DuplicateTreatment, FunctionArgumentClause, OrderByExpr, OrderByOptions,
    };
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    if function.over.is_some()
        || list.duplicate_treatment != Some(DuplicateTreatment::Distinct)
        || list
            .clauses
            .iter()
            .any(|clause| matches!(clause, FunctionArgumentClause::OrderBy(_)))
    {
        return None;
    }
    let Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(first))) = list.args.first() else {
        return None;
    };
    let mut function = function.clone();
    if let FunctionArguments::List(list) = &mut function.args {
        list.clauses
            .push(FunctionArgumentClause::OrderBy(vec![OrderByExpr {
                expr: first.clone(),
                options: OrderByOptions {
                    asc: Some(true),
                    nulls_first: Some(false),
                },
                with_fill: None,
            }]));
    }
    Some(Expr::Function(function))
}

/// The aggregate functions the subquery rewrites recognise. Over no rows,
/// `count` gives 0 and every other one NULL.
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "json_agg",
    "jsonb_agg",
    "json_object_agg",
    "jsonb_object_agg",
    "stddev",
    "variance",
    "bit_and",
    "bit_or",
    "first_value",
    "last_value",
];

/// Whether `expr` computes an aggregate (or a window function), so its
/// subquery already gives one row per group.
pub(super) fn aggregates(expr: &Expr) -> bool {
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

/// `x SIMILAR TO 'pattern'` as the regular expression PostgreSQL matches
/// it with (its `similar_to_escape`): anchored at both ends, `%` any
/// text, `_` any character, groups not capturing, `.`, `^`, `$` literal,
/// bracket expressions as written.
fn similar_to(
    negated: bool,
    value: &Expr,
    pattern: &Expr,
    escape: Option<&datafusion::sql::sqlparser::ast::ValueWithSpan>,
) -> Option<Expr> {
    let Expr::Value(pattern) = pattern else {
        return None;
    };
    let Value::SingleQuotedString(pattern) = &pattern.value else {
        return None;
    };
    let escape = match escape.map(|value| &value.value) {
        None => Some('\\'),
        Some(Value::SingleQuotedString(text)) if text.is_empty() => None,
        Some(Value::SingleQuotedString(text)) if text.chars().count() == 1 => text.chars().next(),
        Some(_) => return None,
    };
    let mut regex = format!("{DOTALL}^(?:");
    let mut in_bracket = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            let next = chars.next()?;
            regex.push_str(&regex_escape(next));
            continue;
        }
        if in_bracket {
            regex.push(c);
            in_bracket = c != ']';
            continue;
        }
        match c {
            '[' => {
                in_bracket = true;
                regex.push(c);
            }
            '%' => regex.push_str(".*"),
            '_' => regex.push('.'),
            '(' => regex.push_str("(?:"),
            '.' | '^' | '$' | '\\' => regex.push_str(&regex_escape(c)),
            other => regex.push(other),
        }
    }
    regex.push_str(")$");
    Some(Expr::BinaryOp {
        left: Box::new(value.clone()),
        op: if negated {
            BinaryOperator::PGRegexNotMatch
        } else {
            BinaryOperator::PGRegexMatch
        },
        right: Box::new(string(&regex)),
    })
}

fn regex_escape(c: char) -> String {
    if c.is_alphanumeric() || c == ' ' {
        c.to_string()
    } else {
        format!("\\{c}")
    }
}

/// PostgreSQL's error for a text literal its input function rejects where
/// DataFusion's cast would give a value: a float out of range (`'1e400'`
/// is not `Infinity`), an array literal that is not one.
fn invalid_literal(inner: &Expr, data_type: &DataType) -> Option<(&'static str, String)> {
    let Expr::Value(value) = inner else {
        return None;
    };
    let (Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text)) = &value.value else {
        return None;
    };
    let trimmed = text.trim();
    let (type_name, limit) = match data_type {
        // A timestamp has no value pgaccel could keep `infinity` as (a date
        // does: see `infinite_date`).
        DataType::Timestamp(..)
            if matches!(
                trimmed.to_ascii_lowercase().as_str(),
                "infinity" | "+infinity" | "-infinity"
            ) =>
        {
            return Some((
                super::sqlstate::FEATURE_NOT_SUPPORTED,
                format!("the timestamp \"{trimmed}\" is not supported"),
            ));
        }
        DataType::Double(_) | DataType::DoublePrecision | DataType::Float8 => {
            ("double precision", f64::MAX)
        }
        DataType::Real | DataType::Float4 => ("real", f64::from(f32::MAX)),
        DataType::Array(_) => {
            let mut depth = 0i32;
            let mut quoted = false;
            let mut escaped = false;
            let mut balanced = trimmed.starts_with('{') && trimmed.ends_with('}');
            for c in trimmed.chars() {
                match (escaped, quoted, c) {
                    (true, ..) => escaped = false,
                    (false, _, '\\') => escaped = true,
                    (false, _, '"') => quoted = !quoted,
                    (false, false, '{') => depth += 1,
                    (false, false, '}') => {
                        depth -= 1;
                        balanced &= depth >= 0;
                    }
                    _ => {}
                }
            }
            if balanced && depth == 0 && !quoted {
                return None;
            }
            return Some((
                super::sqlstate::INVALID_TEXT_REPRESENTATION,
                format!("malformed array literal: \"{text}\""),
            ));
        }
        _ => return None,
    };
    let number: f64 = trimmed.parse().ok()?;
    let spelled_infinite = trimmed
        .trim_start_matches(['+', '-'])
        .eq_ignore_ascii_case("infinity")
        || trimmed
            .trim_start_matches(['+', '-'])
            .eq_ignore_ascii_case("inf");
    if number.is_finite() && number.abs() <= limit || spelled_infinite || number.is_nan() {
        return None;
    }
    Some((
        super::sqlstate::NUMERIC_OUT_OF_RANGE,
        format!("\"{text}\" is out of range for type {type_name}"),
    ))
}

/// The function and length of a cast to `varchar(n)` or `char(n)`
/// (`char` alone is `char(1)`).
fn character_length(data_type: &DataType) -> Option<(&'static str, u64)> {
    use datafusion::sql::sqlparser::ast::CharacterLength;
    let length = |length: &Option<CharacterLength>| match length {
        Some(CharacterLength::IntegerLength { length, .. }) => Some(*length),
        _ => None,
    };
    match data_type {
        DataType::Varchar(n) | DataType::CharacterVarying(n) | DataType::CharVarying(n) => {
            Some((super::pg_types::VARCHAR_FUNCTION, length(n)?))
        }
        DataType::Char(n) | DataType::Character(n) => Some((
            super::pg_types::BPCHAR_FUNCTION,
            length(n).or(if n.is_none() { Some(1) } else { None })?,
        )),
        _ => None,
    }
}

/// `sql` as the rewrites here leave it (for the tests of this module and
/// of the rewrites it calls).
#[cfg(test)]
pub(super) fn rewritten(sql: &str) -> String {
    let mut statement = datafusion::sql::sqlparser::parser::Parser::parse_sql(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
        sql,
    )
    .unwrap()
    .remove(0);
    apply_postgres_compatibility(&mut statement);
    statement.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rewrite(sql: &str) -> String {
        rewritten(sql)
    }

    #[test]
    fn make_interval_is_the_sum_of_its_parts() {
        assert_eq!(
            rewrite("SELECT make_interval(days => 3, hours => h) FROM t"),
            "SELECT (pgaccel_interval('0') + (3) * pgaccel_interval('1 day') + (h) * pgaccel_interval('1 hour')) FROM t"
        );
        assert_eq!(
            rewrite("SELECT make_interval(1, 2)"),
            "SELECT (pgaccel_interval('0') + (1) * pgaccel_interval('1 year') + (2) * pgaccel_interval('1 month'))"
        );
        assert_eq!(
            rewrite("SELECT make_interval(centuries => 1)"),
            "SELECT make_interval(centuries => 1)"
        );
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
            "SELECT 1 WHERE n NOT LIKE pgaccel_like_pattern('pg/_' || '%', '/')"
        );
        assert_eq!(
            rewrite("SELECT i.indkey[k - 1] FROM pg_index i"),
            "SELECT i.indkey[(k - 1) + 1] FROM pg_index i"
        );
        assert_eq!(
            rewrite("SELECT generate_subscripts(conkey, 1) FROM pg_constraint"),
            "SELECT CAST(unnest(range(CAST(1 AS BIGINT), CAST(1 AS BIGINT) + CAST(cardinality(conkey) AS BIGINT))) AS INT) FROM pg_constraint"
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
            "SELECT coalesce((SELECT array_agg(r ORDER BY r) FROM m WHERE m.x = a.x), make_array()) FROM a"
        );
    }

    #[test]
    fn correlated_subqueries_become_decorrelatable() {
        // A condition on the outer row alone is tested outside.
        assert_eq!(
            rewrite("SELECT (SELECT max(d.n) FROM d WHERE d.r = a.r AND a.has) FROM a"),
            "SELECT CASE WHEN a.has THEN (SELECT max(d.n) FROM d WHERE d.r = a.r) ELSE NULL END FROM a"
        );
        // An outer column equated with an inner one stands for it.
        assert_eq!(
            rewrite(
                "SELECT (SELECT count(*) FROM c, t WHERE c.oid = a.coll AND t.oid = a.typ AND a.coll <> t.coll) FROM a"
            ),
            "SELECT (SELECT count(*) FROM c, t WHERE c.oid = a.coll AND t.oid = a.typ AND c.oid <> t.coll) FROM a"
        );
        // A value computed from both rows: one subquery per inner column.
        assert_eq!(
            rewrite("SELECT (SELECT s.x + a.y FROM s WHERE s.k = a.k) FROM a"),
            "SELECT CASE WHEN coalesce((SELECT count(1) FROM s WHERE s.k = a.k), 0) > 0 THEN ((SELECT pgaccel_single_value(s.x) FROM s WHERE s.k = a.k) + a.y) END FROM a"
        );
        // An aggregate gives one row whatever its LIMIT.
        assert_eq!(
            rewrite("SELECT (SELECT count(1) FROM i WHERE i.r = a.oid LIMIT 1) FROM a"),
            "SELECT (SELECT count(1) FROM i WHERE i.r = a.oid) FROM a"
        );
        // EXISTS in a select list counts rows.
        assert_eq!(
            rewrite("SELECT EXISTS (SELECT 1 FROM c WHERE c.n = a.oid LIMIT 1) FROM a"),
            "SELECT coalesce((SELECT count(1) FROM c WHERE c.n = a.oid), 0) > 0 FROM a"
        );
        assert_eq!(
            rewrite("SELECT generate_series(1, 3), substring(x FROM 'a(b)')"),
            "SELECT CAST(unnest(generate_series(1, 3)) AS INT) AS generate_series, array_element(regexp_match(x, '(?s)a(b)'), 1)"
        );
    }

    #[test]
    fn domain_walks_and_domain_casts() {
        // asyncpg's walk down a domain's base types.
        assert_eq!(
            rewrite(
                "SELECT (CASE WHEN t.typtype = 'd' THEN (WITH RECURSIVE b(oid, depth) AS (\
                 SELECT t2.typbasetype AS oid, 0 AS depth FROM pg_type t2 WHERE t2.oid = t.oid \
                 UNION ALL SELECT t2.typbasetype, b.depth + 1 FROM pg_type t2, b \
                 WHERE b.oid = t2.oid AND t2.typbasetype != 0) \
                 SELECT oid FROM b ORDER BY depth DESC LIMIT 1) END) FROM pg_type t"
            ),
            "SELECT (CASE WHEN t.typtype = 'd' THEN pgaccel_domain_base_type(t.oid) END) FROM pg_type t"
        );
        // pgAdmin's walk up a role's memberships.
        assert_eq!(
            rewrite(
                "SELECT ARRAY(WITH RECURSIVE cte AS (SELECT pg_roles.oid, pg_roles.rolname FROM pg_roles \
                 WHERE pg_roles.oid = roles.oid UNION ALL SELECT m.roleid, pgr.rolname FROM cte cte_1 \
                 JOIN pg_auth_members m ON m.member = cte_1.oid JOIN pg_roles pgr ON pgr.oid = m.roleid) \
                 SELECT rolname FROM cte) FROM pg_roles roles"
            ),
            "SELECT pgaccel_role_memberships(roles.oid) FROM pg_roles roles"
        );
        // Another recursive query is left as it is.
        let recursive = "SELECT (WITH RECURSIVE b(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM b WHERE n < a.x) SELECT max(n) FROM b) FROM a";
        assert!(rewrite(recursive).contains("WITH RECURSIVE"));
        // Casts to a domain are casts to its base type, with its check.
        assert_eq!(
            rewrite("SELECT x::information_schema.cardinal_number"),
            "SELECT CASE WHEN pgaccel_require(x::INTEGER >= 0, '23514', 'value for domain information_schema.cardinal_number violates check constraint \"cardinal_number_check\"') THEN x::INTEGER END"
        );
        assert_eq!(
            rewrite("SELECT ARRAY['a']::information_schema.sql_identifier[]"),
            "SELECT ARRAY['a']::TEXT[]"
        );
    }

    #[test]
    fn relation_aliases_name_every_from() {
        let statement = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT t FROM s.orders t JOIN items ON true UNION SELECT 1 FROM (SELECT 1) AS d",
        )
        .unwrap()
        .remove(0);
        assert_eq!(relation_aliases(&statement), ["t", "items", "d"]);
    }

    #[test]
    fn times_without_seconds_get_them() {
        assert_eq!(
            with_seconds("2024-03-09 12:00+00").as_deref(),
            Some("2024-03-09 12:00:00+00")
        );
        assert_eq!(
            with_seconds("2024-03-09T7:05").as_deref(),
            Some("2024-03-09T7:05:00")
        );
        assert_eq!(with_seconds("2024-03-09 12:00:30+00"), None);
        assert_eq!(with_seconds("2024-03-09"), None);
    }

    #[test]
    fn series_columns_are_named_by_their_alias() {
        assert_eq!(
            rewrite("SELECT n FROM generate_series(1, 5) AS n"),
            "SELECT n FROM generate_series(1, 5) AS n (n)"
        );
        assert_eq!(
            rewrite("SELECT g.x FROM generate_series(1, 5000000000) AS g(x)"),
            "SELECT g.x FROM generate_series(1, 5000000000) AS g (x)"
        );
        assert_eq!(
            rewrite("SELECT * FROM generate_series(1, 3) WITH ORDINALITY AS t"),
            "SELECT * FROM pgaccel_generate_series_ordinality(1, 3) AS t (t, ordinality)"
        );
    }

    #[test]
    fn lateral_json_set_functions_move_into_their_table() {
        // Two columns that go in step, `e.key` read from the table.
        assert_eq!(
            rewrite("SELECT d.id, e.key FROM docs d, jsonb_each_text(d.j) e"),
            "SELECT d.id, d.key FROM (SELECT *, unnest(pgaccel_json_members(d.j, 'jsonb_each_text', 'keys')) AS key, unnest(pgaccel_json_members(d.j, 'jsonb_each_text', 'text')) AS value FROM docs d) AS d"
        );
        // The alias alone is the element, named as the alias; a left join
        // keeps a row without elements.
        assert_eq!(
            rewrite("SELECT e FROM docs d LEFT JOIN LATERAL jsonb_array_elements(d.j) e ON true"),
            "SELECT d.value AS e FROM (SELECT *, pgaccel_jsonb(unnest(pgaccel_or_null_element(pgaccel_json_elements(d.j, 'jsonb', false)))) AS value FROM docs d) AS d"
        );
        // `d.*` stays the table's columns.
        assert_eq!(
            rewrite("SELECT d.* FROM docs d, jsonb_object_keys(d.j) k"),
            "SELECT d.* EXCLUDE (k) FROM (SELECT *, unnest(pgaccel_json_members(d.j, 'jsonb_object_keys', 'keys')) AS k FROM docs d) AS d"
        );
        // `SELECT *` with the function apart from its table would list
        // its column elsewhere: left to be refused.
        assert_eq!(
            rewrite("SELECT * FROM docs d, customers c, jsonb_array_elements(d.j) e"),
            "SELECT * FROM docs d, customers c CROSS JOIN jsonb_array_elements(d.j) e"
        );
    }

    #[test]
    fn lateral_from_items_become_plannable() {
        // A lateral unnest with ordinality moves into its table.
        assert_eq!(
            rewrite(
                "SELECT i.indexrelid, k FROM pg_index i CROSS JOIN unnest(i.indkey) WITH ORDINALITY u(col, k) WHERE u.col > 0"
            ),
            "SELECT i.indexrelid, k FROM (SELECT *, unnest(i.indkey) AS col, unnest(range(CAST(1 AS BIGINT), CAST(cardinality(i.indkey) AS BIGINT) + 1)) AS k FROM pg_index i) AS i WHERE i.col > 0"
        );
        // A one-value function of another item's columns stands in for its alias.
        assert_eq!(
            rewrite(
                "SELECT can FROM pg_class c CROSS JOIN pg_indexam_has_property(c.relam, 'can_order') can"
            ),
            "SELECT pg_indexam_has_property(c.relam, 'can_order') FROM pg_class c"
        );
        // pgaccel has no partitions: a relation is its own only ancestor.
        assert_eq!(
            rewrite(
                "SELECT a.relid FROM pg_trigger u, pg_partition_ancestors(t.tgrelid) WITH ORDINALITY AS a(relid, depth) WHERE u.tgrelid = a.relid ORDER BY a.depth"
            ),
            "SELECT t.tgrelid FROM pg_trigger u WHERE u.tgrelid = t.tgrelid ORDER BY CAST(1 AS BIGINT)"
        );
    }

    #[test]
    fn first_rows_distinct_on_and_outer_arrays() {
        // The first row of a correlated subquery, as an aggregate.
        assert_eq!(
            rewrite(
                "SELECT (SELECT a.attname FROM pg_attribute a WHERE a.attrelid = c.oid ORDER BY a.attnum DESC LIMIT 1) FROM pg_class c"
            ),
            "SELECT (SELECT first_value(a.attname ORDER BY a.attnum DESC) FROM pg_attribute a WHERE a.attrelid = c.oid) FROM pg_class c"
        );
        // DISTINCT ON over a derived table that computes the subqueries.
        assert_eq!(
            rewrite(
                "SELECT DISTINCT ON (c.relkind) c.relkind, (SELECT count(*) FROM a WHERE a.r = c.oid) AS n FROM pg_class c ORDER BY c.relkind, c.relname"
            ),
            "SELECT DISTINCT ON (pgaccel_hidden_1) relkind, n FROM (SELECT c.relkind, (SELECT count(*) FROM a WHERE a.r = c.oid) AS n, c.relkind AS pgaccel_hidden_1, c.relname AS pgaccel_hidden_2 FROM pg_class c) AS pgaccel_distinct_on ORDER BY pgaccel_hidden_1, pgaccel_hidden_2"
        );
        // An outer array is read only where it is empty.
        let rewritten = rewrite("SELECT ARRAY(SELECT unnest::varchar FROM unnest(c.ops)) FROM c");
        assert!(
            rewritten.starts_with(
                "SELECT CASE WHEN pgaccel_require(coalesce(cardinality(c.ops), 0) = 0, '0A000', "
            ),
            "{rewritten}"
        );
        // No row is an empty array.
        assert_eq!(
            rewrite("SELECT ARRAY(SELECT x FROM t)"),
            "SELECT coalesce((SELECT array_agg(x) FROM t), make_array())"
        );
    }

    #[test]
    fn regexp_replacements_are_read_as_postgres_reads_them() {
        // Groups, the whole match, a backslash, a dollar, and a backslash
        // before anything else.
        assert_eq!(engine_replacement(r"<\1>"), "<${1}>");
        assert_eq!(engine_replacement(r"[\&]"), "[${0}]");
        assert_eq!(engine_replacement(r"\\\1"), r"\${pgaccel_none}${1}");
        assert_eq!(engine_replacement("$0"), "$$0");
        assert_eq!(engine_replacement(r"\x"), r"\${pgaccel_none}x");
        assert_eq!(engine_replacement(r"end\"), r"end\${pgaccel_none}");
        // `\10` is the first group and a zero.
        assert_eq!(engine_replacement(r"\10"), "${1}0");
    }
}
