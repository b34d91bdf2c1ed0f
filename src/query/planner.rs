//! Statement preparation, shared by every connection: parse (with the
//! PostgreSQL compatibility rewrites), classify ([`super::statement`]),
//! resolve table names for the session, apply PostgreSQL's naming and
//! literal typing, plan with DataFusion, and recognise statements with a
//! direct answer ([`DirectPlan`]).
//!
//! Plans are cached by their text within a name scope (database and
//! `search_path`), so a statement a client sends again is not parsed and
//! planned again; simple-protocol lookups that differ only in their key
//! literals share one plan ([`super::parameterize`]). Everything here runs
//! without a socket, so it is unit-tested directly.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ParamValues;
use datafusion::common::metadata::ScalarAndMetadata;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{Expr, Statement, Value, visit_expressions};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use datafusion_pg_catalog::sql::rules::SqlStatementRewriteRule;
use lru::LruCache;

use super::error::PgError;
use super::forward::ForwardedQuery;
use super::resolve::{NameScope, resolve_names};
use super::statement::{Command, classify, cursor_command, split_statements};
use super::{DirectPlan, parameterize, plan_is_current, sqlstate};
use crate::metrics;

/// Statements planned before, by their exact text; bounded, the least
/// recently used plan goes first.
const CACHED_STATEMENTS: usize = 1024;

/// The most parameters a statement can have: Bind counts them in 16 bits.
pub const MAX_PARAMETERS: usize = 65535;

/// A prepared statement.
#[derive(Debug, Clone)]
pub enum Prepared {
    Query(Arc<PlannedQuery>),
    Command(Arc<Command>),
    /// A query pgaccel refuses, answered by its PostgreSQL source.
    Forwarded(Arc<ForwardedQuery>),
}

/// A query statement planned by DataFusion.
#[derive(Debug)]
pub struct PlannedQuery {
    pub plan: LogicalPlan,
    /// Set when the statement has a direct answer (a primary-key lookup, a
    /// select list without a table) that needs no planning at execution.
    pub direct: Option<DirectPlan>,
    /// Parameter types as DataFusion inferred them, by position.
    pub parameters: Vec<Option<DataType>>,
    /// PostgreSQL type names parameters are cast to in the statement
    /// (`$1::oid[]`), by position: reported as written where the Arrow type
    /// would name another PostgreSQL type.
    pub parameter_casts: Vec<Option<String>>,
    /// The result columns, each marked with the dataset column it comes
    /// from where it passes one through (for the row description).
    pub schema: SchemaRef,
}

impl PlannedQuery {
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

impl Prepared {
    pub fn command(&self) -> Option<&Command> {
        match self {
            Prepared::Command(command) => Some(command),
            Prepared::Query(_) | Prepared::Forwarded(_) => None,
        }
    }
}

/// A simple-protocol statement ready to run.
pub struct SimpleStatement {
    pub prepared: Prepared,
    /// The key literals taken out of a parameterized lookup.
    pub params: Option<ParamValues>,
}

/// What a statement is planned against: the session's state and names.
pub struct PlanContext<'a> {
    pub state: &'a SessionState,
    /// Identifies `names` for the caches: statements planned under another
    /// database or search path are not reused.
    pub scope_key: &'a str,
    pub names: NameScope<'a>,
}

/// The shared planner.
pub struct Planner {
    compatibility: PostgresCompatibilityParser,
    /// The crate's statement rewrites pgaccel applies (see [`rewrite_rules`]).
    rules: Vec<Arc<dyn SqlStatementRewriteRule>>,
    cache: Mutex<LruCache<String, Prepared>>,
    /// Simple-protocol lookups by their text with the key literals replaced
    /// by parameters; `None` for a shape that is not a lookup.
    shapes: Mutex<LruCache<String, Option<Prepared>>>,
    planned: AtomicU64,
}

/// datafusion-pg-catalog's statement rewrites that keep PostgreSQL's
/// answer. Its `RemoveSubqueryFromProjection` is left out: it answers a
/// correlated subquery in a select list with NULL and cuts an uncorrelated
/// one to its first row, where PostgreSQL computes the value or fails with
/// 21000 ([`super::compat`] makes both plannable instead).
fn rewrite_rules() -> Vec<Arc<dyn SqlStatementRewriteRule>> {
    use datafusion_pg_catalog::sql::rules::*;
    vec![
        Arc::new(AliasDuplicatedProjectionRewrite),
        Arc::new(ResolveUnqualifiedIdentifier),
        Arc::new(RewriteArrayAnyAllOperation),
        Arc::new(PrependUnqualifiedPgTableName),
        Arc::new(StripCallableQualifier),
        // In place of the catalog crate's `FixArrayLiteral`, which splits
        // the text at every comma and reads `NULL` as a value.
        Arc::new(super::array_text::ArrayTextLiterals),
        Arc::new(CurrentUserVariableToSessionUserFunctionCall),
        Arc::new(StripCollate),
        Arc::new(RewritePgCatalogOperator),
        Arc::new(RewriteRegCastToSubquery::new()),
        Arc::new(FixVersionColumnName),
    ]
}

impl Default for Planner {
    fn default() -> Self {
        let capacity = NonZeroUsize::new(CACHED_STATEMENTS).expect("a positive capacity");
        Planner {
            compatibility: PostgresCompatibilityParser::new(),
            rules: rewrite_rules(),
            cache: Mutex::new(LruCache::new(capacity)),
            shapes: Mutex::new(LruCache::new(capacity)),
            planned: AtomicU64::new(0),
        }
    }
}

fn cache_key(context: &PlanContext<'_>, sql: &str) -> String {
    let mut key = String::with_capacity(context.scope_key.len() + sql.len() + 1);
    key.push_str(context.scope_key);
    key.push('\u{0}');
    key.push_str(sql);
    key
}

impl Planner {
    /// Statements parsed and planned so far.
    pub fn statements_planned(&self) -> u64 {
        self.planned.load(Ordering::Relaxed)
    }

    /// Parses one statement's text. `ABORT`, which the parser does not
    /// know, is read as the `ROLLBACK` it mirrors, and `RESET TIME ZONE` as
    /// `RESET timezone`.
    pub fn parse(&self, sql: &str) -> Result<Vec<Statement>, PgError> {
        // `SELECT x ISNULL` parses, as `x` named `isnull`: PostgreSQL's
        // postfix operators are read first.
        if super::syntax_variants::has_postfix_null(sql)
            && let Some(statements) = super::syntax_variants::reparse(sql)
        {
            return Ok(statements);
        }
        match Parser::parse_sql(&PostgreSqlDialect {}, sql) {
            Ok(statements) => Ok(statements),
            Err(error) => {
                let trimmed = sql.trim_start();
                let words: Vec<String> = trimmed
                    .trim_end_matches(|c: char| c == ';' || c.is_whitespace())
                    .split_whitespace()
                    .map(str::to_lowercase)
                    .collect();
                let aborts = trimmed
                    .get(..5)
                    .is_some_and(|start| start.eq_ignore_ascii_case("abort"))
                    && !trimmed[5..].starts_with(|c: char| c.is_alphanumeric());
                let stand_in = if aborts {
                    Some(format!("ROLLBACK{}", &trimmed[5..]))
                } else if words == ["reset", "time", "zone"] {
                    Some("RESET timezone".to_owned())
                } else if words == ["reset", "session", "authorization"] {
                    Some("RESET session_authorization".to_owned())
                } else if words.first().is_some_and(|w| w == "copy") {
                    force_quote_all(trimmed)
                } else {
                    None
                };
                if let Some(stand_in) = stand_in
                    && let Ok(statements) = Parser::parse_sql(&PostgreSqlDialect {}, &stand_in)
                {
                    return Ok(statements);
                }
                if let Some(statements) = super::syntax_variants::reparse(sql) {
                    return Ok(statements);
                }
                Err(sqlstate::syntax(sql, &error.to_string()))
            }
        }
    }

    /// Checks the syntax of one statement's text without planning it.
    pub fn check_syntax(&self, sql: &str) -> Result<(), PgError> {
        match cursor_command(sql) {
            Some(command) => command.map(|_| ()),
            None => self.parse(sql).map(|_| ()),
        }
    }

    /// Prepares one statement of `sql` through the cache; `None` when the
    /// text holds zero or several statements.
    pub async fn prepare_single(
        &self,
        context: &PlanContext<'_>,
        sql: &str,
    ) -> Result<Option<Prepared>, PgError> {
        let key = cache_key(context, sql);
        if let Some(prepared) = self.cached(&key) {
            return Ok(Some(prepared));
        }
        let [sql] = split_statements(sql)[..] else {
            return Ok(None);
        };
        if let Some(command) = cursor_command(sql) {
            return Ok(Some(Prepared::Command(Arc::new(command?))));
        }
        let mut statements = self.parse(sql)?;
        if statements.len() != 1 {
            return Ok(None);
        }
        let prepared = self
            .prepare(context, statements.remove(0), Some(sql))
            .await?;
        self.remember(key, &prepared);
        Ok(Some(prepared))
    }

    /// Like [`Self::prepare_single`], for the simple protocol: a point lookup
    /// whose text is new but whose shape is not is answered by the plan of
    /// that shape, with its key literals as parameter values.
    pub async fn prepare_simple(
        &self,
        context: &PlanContext<'_>,
        sql: &str,
    ) -> Result<Option<SimpleStatement>, PgError> {
        let key = cache_key(context, sql);
        if let Some(prepared) = self.cached(&key) {
            return Ok(Some(SimpleStatement {
                prepared,
                params: None,
            }));
        }
        if let Some(shaped) = self.shaped(context, sql).await {
            return Ok(Some(shaped));
        }
        let [sql] = split_statements(sql)[..] else {
            return Ok(None);
        };
        if let Some(command) = cursor_command(sql) {
            return Ok(Some(SimpleStatement {
                prepared: Prepared::Command(Arc::new(command?)),
                params: None,
            }));
        }
        let mut statements = self.parse(sql)?;
        if statements.len() != 1 {
            return Ok(None);
        }
        let prepared = self
            .prepare(context, statements.remove(0), Some(sql))
            .await?;
        self.remember(key, &prepared);
        Ok(Some(SimpleStatement {
            prepared,
            params: None,
        }))
    }

    /// The plan of `key` if it was planned before and every table it reads
    /// still has the schema it was planned with.
    fn cached(&self, key: &str) -> Option<Prepared> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        match cache.get(key)? {
            Prepared::Query(query) if !plan_is_current(&query.plan) => {
                cache.pop(key);
                None
            }
            prepared => Some(prepared.clone()),
        }
    }

    /// Keeps the plan of a query statement (session commands are cheap and
    /// depend on the connection, so they are not kept).
    fn remember(&self, key: String, prepared: &Prepared) {
        if matches!(prepared, Prepared::Query(_)) {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.put(key, prepared.clone());
        }
    }

    /// `sql` as a parameterized lookup, when it is one and every key literal
    /// converts exactly to its parameter's type.
    ///
    /// The shape is found with sqlparser alone: the PostgreSQL compatibility
    /// rewrites (catalog queries, array and collation syntax) cost more than
    /// the lookup itself, and they are applied to the parameterized text
    /// once, when the shape is first planned, exactly as to any statement.
    async fn shaped(&self, context: &PlanContext<'_>, sql: &str) -> Option<SimpleStatement> {
        if super::syntax_variants::has_postfix_null(sql) {
            return None;
        }
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
        let [statement] = statements.as_mut_slice() else {
            return None;
        };
        if !matches!(classify(statement), Ok(Command::Query)) {
            return None;
        }
        resolve_names(statement, &context.names).ok()?;
        let table = parameterize::single_table(statement)?;
        let key_columns = super::key_columns_in(context.state, &table.to_string()).await?;
        let shaped = parameterize::parameterize(statement, &key_columns)?;
        let shape_key = cache_key(context, &shaped.text);
        let prepared = match self.cached_shape(&shape_key) {
            Some(prepared) => prepared?,
            None => {
                let prepared = match self.parse(&shaped.text) {
                    Ok(mut statements) if statements.len() == 1 => self
                        .prepare(context, statements.remove(0), None)
                        .await
                        .ok()
                        .filter(is_parameterized_lookup),
                    _ => None,
                };
                let mut shapes = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
                shapes.put(shape_key, prepared.clone());
                prepared?
            }
        };
        let Prepared::Query(query) = &prepared else {
            return None;
        };
        let values = shaped
            .literals
            .iter()
            .zip(&query.parameters)
            .map(|(literal, data_type)| literal.to_value(data_type.as_ref()?))
            .map(|value| value.map(ScalarAndMetadata::from))
            .collect::<Option<Vec<_>>>()?;
        Some(SimpleStatement {
            params: Some(ParamValues::List(values)),
            prepared,
        })
    }

    /// `Some(None)` for a shape known not to be a lookup; `None` for one
    /// not seen yet (or whose tables changed since).
    fn cached_shape(&self, key: &str) -> Option<Option<Prepared>> {
        let mut shapes = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        match shapes.get(key)? {
            Some(Prepared::Query(query)) if !plan_is_current(&query.plan) => {
                shapes.pop(key);
                None
            }
            prepared => Some(prepared.clone()),
        }
    }

    /// Prepares one parsed statement (no cache); `source` is its text.
    pub async fn prepare(
        &self,
        context: &PlanContext<'_>,
        mut statement: Statement,
        source: Option<&str>,
    ) -> Result<Prepared, PgError> {
        check_parameter_numbers(&statement)?;
        let command = classify(&statement)?;
        if !matches!(command, Command::Query) {
            return Ok(Prepared::Command(Arc::new(command)));
        }
        self.planned.fetch_add(1, Ordering::Relaxed);
        metrics::statement_planned();
        resolve_names(&mut statement, &context.names)?;
        let casts = parameter_casts(&statement);
        // Named from the statement as written, before the compatibility
        // rewrites change how functions are spelled.
        // A tool query the compatibility parser stands in for is planned as
        // its stand-in straight away: some fail only when they run.
        if let Some(substitute) = source.and_then(|sql| self.substitute(context, sql, false)) {
            return self.plan_statement(context, substitute, &casts).await;
        }
        super::apply_postgres_names(&mut statement);
        let relations = super::compat::relation_aliases(&statement);
        super::row_json::rows_to_json(context.state, &mut statement).await;
        super::compat::apply_postgres_compatibility(&mut statement);
        let mut statement = self.rewrite(statement);
        let mut planned = self
            .plan_statement(context, statement.clone(), &casts)
            .await;
        // A qualifier that DataFusion read as a column of a subquery's table
        // where PostgreSQL reads an enclosing query's table: once per table.
        let mut renamed = Vec::new();
        while let Err(error) = &planned
            && let Some(table) = super::table_qualifiers::missing_table_name(error)
            && !renamed.iter().any(|done: &String| done == table)
            && super::table_qualifiers::rename_table(&mut statement, table)
        {
            renamed.push(table.to_owned());
            planned = self
                .plan_statement(context, statement.clone(), &casts)
                .await;
        }
        match planned {
            Err(error) => match source.and_then(|sql| self.substitute(context, sql, true)) {
                Some(substitute) => self.plan_statement(context, substitute, &casts).await,
                None => Err(whole_row_reference(error, &relations)),
            },
            planned => planned,
        }
    }

    async fn plan_statement(
        &self,
        context: &PlanContext<'_>,
        mut statement: Statement,
        casts: &[Option<String>],
    ) -> Result<Prepared, PgError> {
        super::apply_postgres_literal_types(&mut statement);
        // Boxed: DataFusion's SQL planner takes a deep stack of its own.
        let plan = Box::pin(plan(context.state, statement)).await?;
        let mut query = planned(plan, context.state)?;
        query.parameter_casts = column_parameter_types(&query.plan, casts);
        query.schema = numeric_parameters_described(&query.plan, &query.schema, casts);
        Ok(Prepared::Query(Arc::new(query)))
    }

    /// The stand-in the compatibility parser has for a catalog query that
    /// DataFusion cannot plan (psql's and pgcli's queries over row policies,
    /// publications, extended statistics: pgaccel has none, and the
    /// stand-in returns no rows with the columns the tool reads).
    ///
    /// Grafana's search-path query gets its stand-in only when it cannot be
    /// planned (`last_resort`): the stand-in drops the search path, which
    /// `current_setting()` answers.
    fn substitute(
        &self,
        context: &PlanContext<'_>,
        sql: &str,
        last_resort: bool,
    ) -> Option<Statement> {
        if !last_resort && sql.contains("current_setting('search_path')") {
            return None;
        }
        let original = self.parse(sql).ok()?;
        // The substitutes' parser reads `x ISNULL` as a name too: it is
        // given the statement as parsed here.
        let parsed;
        let sql = if super::syntax_variants::has_postfix_null(sql) && original.len() == 1 {
            parsed = original[0].to_string();
            parsed.as_str()
        } else {
            sql
        };
        let mut substituted = self.compatibility.parse(sql).ok()?;
        if substituted.len() != 1 || original.len() != 1 {
            return None;
        }
        let mut statement = substituted.remove(0);
        if statement.to_string() == self.compatibility.rewrite(original[0].clone()).to_string() {
            return None;
        }
        resolve_names(&mut statement, &context.names).ok()?;
        super::apply_postgres_names(&mut statement);
        super::compat::apply_postgres_compatibility(&mut statement);
        Some(statement)
    }

    fn rewrite(&self, mut statement: Statement) -> Statement {
        for rule in &self.rules {
            statement = rule.rewrite(statement);
        }
        statement
    }

    /// Plans a query that a command carries (`DECLARE`, `COPY (query)`).
    pub async fn plan_query(
        &self,
        context: &PlanContext<'_>,
        statement: Statement,
    ) -> Result<Arc<PlannedQuery>, PgError> {
        match self.prepare(context, statement, None).await? {
            Prepared::Query(query) => Ok(query),
            Prepared::Command(_) | Prepared::Forwarded(_) => Err(PgError::new(
                sqlstate::SYNTAX_ERROR,
                "a query was expected here",
            )),
        }
    }
}

fn planned(plan: LogicalPlan, state: &SessionState) -> Result<PlannedQuery, PgError> {
    // Analyzed once here for the direct answers and the described types;
    // executing plans it again with the optimizer.
    let analyzed = super::lookup::analyze(&plan, state);
    let direct = DirectPlan::try_new(&plan, analyzed.as_ref(), state);
    let parameters = parameter_types(&plan)?;
    let mut schema = super::origins::described_schema(&plan);
    if let Some(analyzed) = &analyzed {
        schema = with_analyzed_types(&schema, analyzed.schema().as_arrow());
    }
    Ok(PlannedQuery {
        schema,
        plan,
        direct,
        parameters,
        parameter_casts: Vec::new(),
    })
}

/// `described` with the types the analyzer gives its columns: DataFusion
/// types an expression such as `CASE WHEN .. THEN int2 ELSE int4 END` or
/// `int2 EXCEPT int4` only when type coercion runs, and the rows come in
/// the coerced types, so Describe must announce those.
fn with_analyzed_types(described: &SchemaRef, analyzed: &Schema) -> SchemaRef {
    if described.fields().len() != analyzed.fields().len() {
        return Arc::clone(described);
    }
    let fields: Vec<Field> = described
        .fields()
        .iter()
        .zip(analyzed.fields())
        .map(|(field, coerced)| {
            if field.data_type() == coerced.data_type() {
                field.as_ref().clone()
            } else {
                field
                    .as_ref()
                    .clone()
                    .with_data_type(coerced.data_type().clone())
                    .with_nullable(field.is_nullable() || coerced.is_nullable())
            }
        })
        .collect();
    Arc::new(Schema::new_with_metadata(
        fields,
        described.metadata().clone(),
    ))
}

/// `SELECT $1::numeric` leaves the parameter uncast, so the value keeps
/// its own scale (see [`super::compat`]); its column is described as the
/// numeric it is.
fn numeric_parameters_described(
    plan: &LogicalPlan,
    schema: &SchemaRef,
    casts: &[Option<String>],
) -> SchemaRef {
    let LogicalPlan::Projection(projection) = plan else {
        return Arc::clone(schema);
    };
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(index, field)| {
            let mut expr = projection.expr.get(index);
            while let Some(datafusion::logical_expr::Expr::Alias(alias)) = expr {
                expr = Some(alias.expr.as_ref());
            }
            let numeric = matches!(
                expr,
                Some(datafusion::logical_expr::Expr::Placeholder(placeholder))
                    if placeholder
                        .id
                        .strip_prefix('$')
                        .and_then(|n| n.parse::<usize>().ok())
                        .and_then(|n| casts.get(n.checked_sub(1)?).cloned().flatten())
                        .is_some_and(|cast| cast == "numeric" || cast == "decimal")
            );
            if numeric && *field.data_type() == DataType::Null {
                Arc::new(
                    field
                        .as_ref()
                        .clone()
                        .with_data_type(DataType::Decimal128(38, 10)),
                )
            } else {
                Arc::clone(field)
            }
        })
        .collect();
    Arc::new(datafusion::arrow::datatypes::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

/// The type each parameter is cast to where the statement casts it
/// (`$1::oid[]`), by position, lower case as written.
fn parameter_casts(statement: &Statement) -> Vec<Option<String>> {
    use datafusion::sql::sqlparser::ast::Expr as SqlExpr;
    let mut casts: Vec<Option<String>> = Vec::new();
    let _ = visit_expressions(statement, |expr| {
        if let SqlExpr::Cast {
            expr: inner,
            data_type,
            ..
        } = expr
            && let SqlExpr::Value(value) = inner.as_ref()
            && let Value::Placeholder(id) = &value.value
            && let Some(position) = id
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=MAX_PARAMETERS).contains(n))
        {
            if casts.len() < position {
                casts.resize(position, None);
            }
            casts[position - 1] = Some(data_type.to_string().to_lowercase());
        }
        ControlFlow::<()>::Continue(())
    });
    casts
}

/// `COPY ... (FORMAT csv, FORCE_QUOTE *)`, which the parser does not read,
/// with the `*` as a quoted column name, which the COPY options read as
/// every column (no result column can be named `*` there).
fn force_quote_all(sql: &str) -> Option<String> {
    let lower = sql.to_ascii_lowercase();
    for keyword in ["force_quote", "force quote"] {
        let Some(at) = lower.find(keyword) else {
            continue;
        };
        let after = at + keyword.len();
        let rest = &sql[after..];
        let star = rest.len() - rest.trim_start().len();
        if rest.trim_start().starts_with('*') {
            let star = after + star;
            // The option list takes a parenthesized list, the older
            // `CSV FORCE QUOTE` syntax a bare one.
            let columns = if keyword == "force_quote" {
                "(\"*\")"
            } else {
                "\"*\""
            };
            return Some(format!("{}{columns}{}", &sql[..star], &sql[star + 1..]));
        }
    }
    None
}

/// `SELECT t FROM orders t` names the whole row of `t`, a value of the
/// table's composite type, which pgaccel does not have: DataFusion's
/// "column does not exist" becomes a refusal that says so.
fn whole_row_reference(error: PgError, relations: &[String]) -> PgError {
    let missing = error
        .message
        .strip_prefix("column \"")
        .and_then(|rest| rest.strip_suffix("\" does not exist"));
    match missing {
        Some(name)
            if error.code == sqlstate::UNDEFINED_COLUMN && relations.iter().any(|r| r == name) =>
        {
            PgError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "whole-row references are not supported: \"{name}\" names a table, not a column"
                ),
            )
            .with_hint(format!(
                "select the columns of \"{name}\" ({name}.*), or row_to_json({name})"
            ))
        }
        _ => error,
    }
}

/// The PostgreSQL types parameters get from what they are compared with:
/// `$1` in `c_uuid = $1` is a uuid (and in `c_doc = $1` a jsonb) when the
/// column's Arrow type alone would name another type, as PostgreSQL infers
/// it from the column's declared type. Added to the types parameters are
/// cast to (`casts`), which win.
fn column_parameter_types(plan: &LogicalPlan, casts: &[Option<String>]) -> Vec<Option<String>> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::{Expr, ExprSchemable};
    let mut types = casts.to_vec();
    let _ = plan.apply_with_subqueries(|node| {
        let schema = datafusion::logical_expr::utils::merge_schema(&node.inputs());
        let _ = node.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::BinaryExpr(binary) = e {
                    for (placeholder, other) in
                        [(&binary.left, &binary.right), (&binary.right, &binary.left)]
                    {
                        let Expr::Placeholder(placeholder) = placeholder.as_ref() else {
                            continue;
                        };
                        let Some(position) = placeholder
                            .id
                            .strip_prefix('$')
                            .and_then(|n| n.parse::<usize>().ok())
                            .filter(|n| (1..=MAX_PARAMETERS).contains(n))
                        else {
                            continue;
                        };
                        let Some(pg_type) = other.to_field(&schema).ok().and_then(|(_, field)| {
                            field
                                .metadata()
                                .get(crate::accelerator::PG_TYPE_METADATA)
                                .filter(|t| matches!(t.as_str(), "uuid" | "json" | "jsonb"))
                                .cloned()
                        }) else {
                            continue;
                        };
                        if types.len() < position {
                            types.resize(position, None);
                        }
                        types[position - 1].get_or_insert(pg_type);
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        });
        Ok(TreeNodeRecursion::Continue)
    });
    types
}

/// [`plan_once`], again with its casts labelled where two of its
/// expressions were refused for sharing a name (see [`super::cast_labels`]).
async fn plan(state: &SessionState, statement: Statement) -> Result<LogicalPlan, PgError> {
    match plan_once(state, statement.clone()).await {
        Err(error) if super::cast_labels::names_collide(&error.message) => {
            plan_once(state, super::cast_labels::label_casts(statement)).await
        }
        // DataFusion's optimizer would refuse it later.
        Ok(plan) if super::cast_labels::groups_share_names(&plan) => {
            match plan_once(state, super::cast_labels::label_casts(statement)).await {
                Ok(labelled) => Ok(labelled),
                Err(_) => Ok(plan),
            }
        }
        planned => planned,
    }
}

async fn plan_once(state: &SessionState, statement: Statement) -> Result<LogicalPlan, PgError> {
    let plan = state
        .statement_to_plan(DfStatement::Statement(Box::new(statement)))
        .await
        .map_err(sqlstate::from_datafusion)?;
    super::table_qualifiers::check(&plan)?;
    match &plan {
        LogicalPlan::Dml(dml) => Err(sqlstate::read_only(&dml.op.to_string().to_uppercase())),
        LogicalPlan::Ddl(ddl) => Err(sqlstate::read_only(&ddl.name().to_uppercase())),
        LogicalPlan::Copy(_) => Err(sqlstate::read_only("COPY")),
        _ => {
            refuse_correlated_unnest(&plan)?;
            refuse_unequal_lateral_aggregates(&plan)?;
            super::subqueries::subqueries_below_aggregates(plan)
                .and_then(super::subqueries::in_subqueries_in_projections)
                .and_then(super::subqueries::correlated_aggregates_as_joins)
                .and_then(signed_windows)
                .and_then(super::array_types::annotate_arrays)
                .and_then(super::using_joins::postgres_using_columns)
                .and_then(super::pg_types::pad_characters)
                // After the padding: a padded `character` is matched
                // without its trailing spaces.
                .and_then(super::set_operations::postgres_set_operations)
                .and_then(super::temporal::postgres_temporal)
                .and_then(super::overflow::smallint_shifts)
                .and_then(|plan| super::numeric::postgres_numerics(plan, state))
                .and_then(refuse_recursive_numeric_casts)
                .and_then(super::set_operations::postgres_union_types)
                .and_then(super::set_operations::postgres_set_operation_types)
                .and_then(signed_outputs)
                .and_then(unknown_outputs_as_text)
                .map_err(sqlstate::from_datafusion)
                .and_then(refuse_nested_arrays)
        }
    }
}

/// `WITH RECURSIVE` whose recursive term computes a numeric column of
/// another precision or scale than its first term, a float, or an integer
/// where the first term's numeric has decimals: refused (0A000).
/// DataFusion casts such a column back to the first term's type, so
/// `s + 0.04` over `0.5` printed `0.5` on every row, where PostgreSQL keeps
/// an unconstrained numeric's digits and prints `0.5`, `0.54`, `0.58`, and
/// `f * (n + 1)` over `1::numeric` overflowed the first term's precision.
fn refuse_recursive_numeric_casts(plan: LogicalPlan) -> datafusion::error::Result<LogicalPlan> {
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::logical_expr::{Expr as LogicalExpr, ExprSchemable};
    let decimal = |data_type: &DataType| {
        matches!(
            data_type,
            DataType::Decimal128(..) | DataType::Decimal256(..)
        )
    };
    let mut refusal = None;
    plan.apply_with_subqueries(|node| {
        let LogicalPlan::RecursiveQuery(query) = node else {
            return Ok(TreeNodeRecursion::Continue);
        };
        let wanted = query.static_term.schema();
        let top = match query.recursive_term.as_ref() {
            LogicalPlan::Projection(projection) => Some(projection),
            _ => None,
        };
        for (index, field) in query.recursive_term.schema().fields().iter().enumerate() {
            let Some(wanted) = wanted.fields().get(index) else {
                break;
            };
            // The type the recursive term computes, before DataFusion's cast
            // to the first term's type.
            let computed = top
                .and_then(|projection| match projection.expr.get(index)?.clone().unalias() {
                    LogicalExpr::Cast(cast) => cast.expr.get_type(projection.input.schema()).ok(),
                    _ => None,
                })
                .unwrap_or_else(|| field.data_type().clone());
            // An integer the first term's scale would print with decimals
            // (`n` over `1.5` prints `2`, not `2.0`), or a float, which
            // PostgreSQL does not take for a numeric column, are refused too.
            let differs = match wanted.data_type() {
                DataType::Decimal128(_, scale) | DataType::Decimal256(_, scale) => {
                    computed != *wanted.data_type()
                        && (decimal(&computed)
                            || computed.is_floating()
                            || computed.is_integer() && *scale > 0)
                }
                _ => false,
            };
            if differs {
                refusal = Some(format!(
                    "recursive query \"{}\" column \"{}\": a numeric value whose precision or scale the recursive term changes is not supported",
                    query.name,
                    wanted.name(),
                ));
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    match refusal {
        Some(message) => Err(datafusion::error::DataFusionError::External(Box::new(
            PgError::new(sqlstate::FEATURE_NOT_SUPPORTED, message),
        ))),
        None => Ok(plan),
    }
}

/// An array of arrays (`ARRAY[[1, 2], [3, 4]]`) as a result column: the
/// wire encoding pgaccel uses has no form for PostgreSQL's
/// multidimensional arrays, so the query is refused while it is planned.
fn refuse_nested_arrays(plan: LogicalPlan) -> Result<LogicalPlan, PgError> {
    let nested = plan.schema().fields().iter().any(|field| {
        matches!(field.data_type(), DataType::List(inner) if matches!(inner.data_type(), DataType::List(_)))
    });
    if nested {
        return Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "arrays of more than one dimension are not supported as results",
        ));
    }
    Ok(plan)
}

/// Functions PostgreSQL types `integer` whose DataFusion counterparts
/// return an unsigned 64-bit integer.
pub(super) const INT4_RESULTS: &[&str] = &[
    "ntile",
    "cardinality",
    "array_length",
    "array_position",
    "array_ndims",
    "array_upper",
    "array_lower",
];

/// PostgreSQL resolves a result column of unknown type (`SELECT NULL`) as
/// `text`.
fn unknown_outputs_as_text(plan: LogicalPlan) -> datafusion::error::Result<LogicalPlan> {
    use datafusion::logical_expr::{Expr as LogicalExpr, LogicalPlanBuilder, cast};
    // A parameter's type is still unknown here: it gets the type its use or
    // its value gives it.
    if !plan
        .schema()
        .fields()
        .iter()
        .any(|field| field.data_type() == &DataType::Null)
        || !placeholder_types(&plan).is_empty()
    {
        return Ok(plan);
    }
    let exprs: Vec<LogicalExpr> = plan
        .schema()
        .iter()
        .map(|(qualifier, field)| {
            let column = LogicalExpr::Column(datafusion::common::Column::from((qualifier, field)));
            if field.data_type() == &DataType::Null {
                cast(column, DataType::Utf8).alias_qualified(qualifier.cloned(), field.name())
            } else {
                column
            }
        })
        .collect();
    LogicalPlanBuilder::from(plan).project(exprs)?.build()
}

fn unsigned(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
    )
}

/// The output name and function name of each window function `window`
/// computes.
fn window_functions(window: &datafusion::logical_expr::Window) -> Vec<(String, String)> {
    use datafusion::logical_expr::Expr as LogicalExpr;
    window
        .window_expr
        .iter()
        .filter_map(|expr| {
            let mut inner = expr;
            while let LogicalExpr::Alias(alias) = inner {
                inner = &alias.expr;
            }
            match inner {
                LogicalExpr::WindowFunction(function) => Some((
                    expr.schema_name().to_string(),
                    function.fun.name().to_owned(),
                )),
                _ => None,
            }
        })
        .collect()
}

/// PostgreSQL has no unsigned integers: a result column a function computes
/// unsigned (`row_number()`, `rank()`, `cardinality()`) is cast to the type
/// PostgreSQL gives the same expression (`bigint`, or `integer` for
/// [`INT4_RESULTS`]), so clients see its type and its binary form.
fn signed_outputs(plan: LogicalPlan) -> datafusion::error::Result<LogicalPlan> {
    use datafusion::common::tree_node::TreeNode;
    use datafusion::logical_expr::{Expr as LogicalExpr, LogicalPlanBuilder, cast};
    if !plan
        .schema()
        .fields()
        .iter()
        .any(|field| unsigned(field.data_type()))
    {
        return Ok(plan);
    }
    // The select list under any ORDER BY, LIMIT or DISTINCT: what each
    // output column computes.
    let mut top = &plan;
    while let LogicalPlan::Sort(_) | LogicalPlan::Limit(_) | LogicalPlan::Distinct(_) = top {
        top = top.inputs()[0];
    }
    // Window functions are computed below the select list, which reads
    // their results as columns: their output names, with the function.
    let mut windows: Vec<(String, String)> = Vec::new();
    let _ = top.apply(|node| {
        if let LogicalPlan::Window(window) = node {
            windows.extend(window_functions(window));
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    let computed: Vec<Option<String>> = match top {
        LogicalPlan::Projection(projection) => projection
            .expr
            .iter()
            .map(|expr| {
                let mut inner = expr;
                while let LogicalExpr::Alias(alias) = inner {
                    inner = &alias.expr;
                }
                match inner {
                    LogicalExpr::ScalarFunction(f) => Some(f.func.name().to_owned()),
                    LogicalExpr::WindowFunction(w) => Some(w.fun.name().to_owned()),
                    LogicalExpr::Column(column) => windows
                        .iter()
                        .find(|(name, _)| *name == column.name)
                        .map(|(_, function)| function.clone()),
                    _ => None,
                }
            })
            .collect(),
        _ => Vec::new(),
    };
    // The unsigned columns the tables read hold their own values.
    let mut scanned_unsigned = std::collections::HashSet::new();
    let _ = plan.apply(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            for field in scan.projected_schema.fields() {
                if unsigned(field.data_type()) {
                    scanned_unsigned.insert(field.name().clone());
                }
            }
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    let exprs = plan
        .schema()
        .iter()
        .enumerate()
        .map(|(index, (qualifier, field))| {
            let column = LogicalExpr::Column(datafusion::common::Column::from((qualifier, field)));
            if !unsigned(field.data_type()) {
                return column;
            }
            // A column read as it is (a MySQL `BIGINT UNSIGNED`) keeps the
            // numeric type that holds all its values; any other unsigned
            // value is a count or a row number computed below a subquery.
            let Some(function) = computed.get(index).and_then(Option::as_deref) else {
                if scanned_unsigned.contains(field.name()) {
                    return column;
                }
                return cast(column, DataType::Int64).alias(field.name());
            };
            let int4 = INT4_RESULTS.contains(&function);
            let signed = match field.data_type() {
                DataType::UInt8 => DataType::Int16,
                DataType::UInt16 => DataType::Int32,
                _ if int4 => DataType::Int32,
                _ => DataType::Int64,
            };
            cast(column, signed).alias(field.name())
        })
        .collect::<Vec<_>>();
    LogicalPlanBuilder::from(plan).project(exprs)?.build()
}

/// DataFusion plans `(SELECT count(*) FROM unnest(t.a))`, a subquery
/// unnesting a column of the outer query, as if the array were empty; such
/// a query is refused rather than answered wrong.
fn refuse_correlated_unnest(plan: &LogicalPlan) -> Result<(), PgError> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let mut correlated = false;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Unnest(unnest) = node {
            let _ = unnest.input.apply(|below| {
                below.apply_expressions(|expr| {
                    correlated |= expr.contains_outer();
                    Ok(TreeNodeRecursion::Continue)
                })
            });
        }
        Ok(if correlated {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    if correlated {
        return Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "unnest() of a column of the outer query inside a subquery is not supported; \
             unnest it in the outer query's select list instead",
        ));
    }
    Ok(())
}

/// A LATERAL subquery that aggregates and reads the outer row other than in
/// an equality (`o.at < c.since`): DataFusion fails on it while optimizing,
/// with a misleading "no field" error. An ungrouped one was already read as
/// scalar subqueries (see [`super::lateral_aggregate`]); the others are
/// refused here.
fn refuse_unequal_lateral_aggregates(plan: &LogicalPlan) -> Result<(), PgError> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::{BinaryExpr, Expr as LogicalExpr, Operator};
    let unequal = |predicate: &LogicalExpr| {
        datafusion::logical_expr::utils::split_conjunction(predicate)
            .into_iter()
            .any(|conjunct| {
                conjunct.contains_outer()
                    && !matches!(
                        conjunct,
                        LogicalExpr::BinaryExpr(BinaryExpr { op: Operator::Eq, left, right })
                            if left.contains_outer() != right.contains_outer()
                    )
            })
    };
    let mut refused = false;
    let _ = plan.apply(|node| {
        let LogicalPlan::Join(join) = node else {
            return Ok(TreeNodeRecursion::Continue);
        };
        for side in [join.left.as_ref(), join.right.as_ref()] {
            let mut lateral = side;
            while let LogicalPlan::SubqueryAlias(alias) = lateral {
                lateral = alias.input.as_ref();
            }
            let LogicalPlan::Subquery(subquery) = lateral else {
                continue;
            };
            let (mut aggregates, mut unequal_filter) = (false, false);
            let _ = subquery.subquery.apply(|below| {
                match below {
                    LogicalPlan::Aggregate(_) => aggregates = true,
                    LogicalPlan::Filter(filter) => unequal_filter |= unequal(&filter.predicate),
                    _ => {}
                }
                Ok(TreeNodeRecursion::Continue)
            });
            refused |= aggregates && unequal_filter;
        }
        Ok(if refused {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    if refused {
        return Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "a LATERAL subquery that aggregates is supported only when it is correlated by \
             equalities, or without GROUP BY; compute the value with a scalar subquery instead",
        ));
    }
    Ok(())
}

fn is_parameterized_lookup(prepared: &Prepared) -> bool {
    matches!(
        prepared,
        Prepared::Query(query)
            if query.direct.as_ref().is_some_and(DirectPlan::is_lookup)
                && query.parameters.iter().all(Option::is_some)
    )
}

/// Refuses `$n` beyond what Bind can carry, before anything is sized by it.
fn check_parameter_numbers(statement: &Statement) -> Result<(), PgError> {
    let found = visit_expressions(statement, |expr| {
        if let Expr::Value(value) = expr
            && let Value::Placeholder(name) = &value.value
            && let Some(number) = name.strip_prefix('$')
            && number
                .parse::<u64>()
                .map_or(true, |n| n == 0 || n > MAX_PARAMETERS as u64)
        {
            return ControlFlow::Break(name.clone());
        }
        ControlFlow::Continue(())
    });
    match found {
        ControlFlow::Break(name) => Err(PgError::new(
            sqlstate::INDETERMINATE_DATATYPE,
            format!(
                "parameter {name} is out of range: a statement takes parameters $1 to ${MAX_PARAMETERS}"
            ),
        )),
        ControlFlow::Continue(()) => Ok(()),
    }
}

/// Parameter types in `$1, $2, ...` order.
/// The types of parameters DataFusion leaves untyped, as PostgreSQL infers
/// them: the type a parameter is cast to (`$1::int8[]`), and in
/// `x = ANY($1)` (and the other `ANY`/`ALL` comparisons) an array of `x`'s
/// type, so a client's array text (`{1,2}`) is read as one.
fn array_parameter_types(plan: &LogicalPlan) -> Vec<(String, DataType)> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::{Expr, ExprSchemable, expr::ScalarFunction};
    let mut found = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        let schema = datafusion::logical_expr::utils::merge_schema(&node.inputs());
        let array_of = |placeholder: &Expr, other: &Expr| match placeholder {
            Expr::Placeholder(placeholder) => {
                let element = other.get_type(&schema).ok()?;
                let item = datafusion::arrow::datatypes::Field::new_list_field(element, true);
                Some((placeholder.id.clone(), DataType::List(Arc::new(item))))
            }
            _ => None,
        };
        let array_argument = |expr: &Expr| match expr {
            Expr::ScalarFunction(ScalarFunction { func, args })
                if matches!(func.name(), "array_min" | "array_max") && args.len() == 1 =>
            {
                Some(args[0].clone())
            }
            _ => None,
        };
        let _ = node.apply_expressions(|expr| {
            expr.apply(|e| {
                match e {
                    // `$1::int8`, `$1::oid[]`: the type cast to, as in
                    // PostgreSQL.
                    Expr::Cast(datafusion::logical_expr::Cast { expr, field })
                    | Expr::TryCast(datafusion::logical_expr::TryCast { expr, field }) => {
                        if let Expr::Placeholder(placeholder) = expr.as_ref() {
                            found.push((placeholder.id.clone(), field.data_type().clone()));
                        }
                    }
                    Expr::ScalarFunction(ScalarFunction { func, args })
                        if func.name() == "array_has" && args.len() == 2 =>
                    {
                        found.extend(array_of(&args[0], &args[1]));
                    }
                    Expr::BinaryExpr(binary) => {
                        if let Some(array) = array_argument(&binary.left) {
                            found.extend(array_of(&array, &binary.right));
                        }
                        if let Some(array) = array_argument(&binary.right) {
                            found.extend(array_of(&array, &binary.left));
                        }
                    }
                    _ => {}
                }
                Ok(TreeNodeRecursion::Continue)
            })
        });
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

/// The type DataFusion gave each placeholder, as PostgreSQL would settle
/// it: the first known type of its uses wins (DataFusion's own walk refuses
/// a parameter used twice when one use is typed and another is not, as
/// `$1` in `id >= $1 AND id < $1 + $2`), and a parameter with no type of
/// its own in an operation with a typed parameter takes that one's type
/// (`$2` there is `int8`, as PostgreSQL infers it).
fn placeholder_types(plan: &LogicalPlan) -> HashMap<String, Option<DataType>> {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::Expr;
    let known = |data_type: &DataType| !matches!(data_type, DataType::Null);
    let mut types: HashMap<String, Option<DataType>> = HashMap::new();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let _ = plan.apply_with_subqueries(|node| {
        let _ = node.apply_expressions(|expr| {
            expr.apply(|e| {
                match e {
                    Expr::Placeholder(placeholder) => {
                        let data_type = placeholder
                            .field
                            .as_ref()
                            .map(|field| field.data_type().clone())
                            .filter(known);
                        let slot = types.entry(placeholder.id.clone()).or_default();
                        if slot.is_none() {
                            *slot = data_type;
                        }
                    }
                    Expr::BinaryExpr(binary) => {
                        if let (Expr::Placeholder(left), Expr::Placeholder(right)) =
                            (binary.left.as_ref(), binary.right.as_ref())
                        {
                            pairs.push((left.id.clone(), right.id.clone()));
                        }
                    }
                    _ => {}
                }
                Ok(TreeNodeRecursion::Continue)
            })
        });
        Ok(TreeNodeRecursion::Continue)
    });
    // Spread known types along `$a op $b` until nothing changes.
    let mut changed = true;
    while changed {
        changed = false;
        for (left, right) in &pairs {
            for (from, to) in [(left, right), (right, left)] {
                if let Some(Some(data_type)) = types.get(from).cloned()
                    && let Some(slot @ None) = types.get_mut(to)
                {
                    *slot = Some(data_type);
                    changed = true;
                }
            }
        }
    }
    types
}

fn parameter_types(plan: &LogicalPlan) -> Result<Vec<Option<DataType>>, PgError> {
    let mut types = placeholder_types(plan);
    for (id, data_type) in array_parameter_types(plan) {
        if let Some(slot @ None) = types.get_mut(&id) {
            *slot = Some(data_type);
        }
    }
    let mut ordered: Vec<(usize, Option<DataType>)> = types
        .into_iter()
        .filter_map(|(id, data_type)| {
            let position = id.trim_start_matches('$').parse::<usize>().ok()?;
            (1..=MAX_PARAMETERS)
                .contains(&position)
                .then_some((position, data_type))
        })
        .collect();
    ordered.sort_by_key(|(position, _)| *position);
    let count = ordered.last().map_or(0, |(position, _)| *position);
    let mut result = vec![None; count];
    for (position, data_type) in ordered {
        result[position - 1] = data_type;
    }
    Ok(result)
}

/// A window function DataFusion computes unsigned (`row_number()`,
/// `rank()`, `ntile()`) typed as PostgreSQL types it (`bigint`; `ntile` is
/// `integer`) right where it is computed, so that a query reading it from a
/// subquery (`GROUP BY quartile`, `sum(rn)`) sees that type too. A
/// projection above each such window casts its columns; the nodes above
/// take the new types.
fn signed_windows(plan: LogicalPlan) -> datafusion::error::Result<LogicalPlan> {
    use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
    use datafusion::logical_expr::{Expr as LogicalExpr, Projection, cast};
    // DataFusion resolves `grouping()` only in the nodes right above its
    // aggregate, where a projection here would come between: left as is
    // (the select list's own columns are still typed at the top).
    let mut grouping_sets = false;
    plan.apply_with_subqueries(|node| {
        grouping_sets |= matches!(node, LogicalPlan::Aggregate(aggregate)
            if aggregate.group_expr.iter().any(|e| matches!(e, LogicalExpr::GroupingSet(_))));
        Ok(if grouping_sets {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    if grouping_sets {
        return Ok(plan);
    }
    let mut cast_any = false;
    plan.transform_up_with_subqueries(|node| {
        let LogicalPlan::Window(window) = &node else {
            if cast_any {
                return super::numeric::recompute_schema(node).map(Transformed::yes);
            }
            return Ok(Transformed::no(node));
        };
        let functions = window_functions(window);
        let schema = Arc::clone(node.schema());
        if !schema.fields().iter().any(|f| unsigned(f.data_type())) {
            return Ok(Transformed::no(node));
        }
        let exprs = schema
            .iter()
            .map(|(qualifier, field)| {
                let column = LogicalExpr::Column((qualifier, field).into());
                let function = functions
                    .iter()
                    .find(|(name, _)| name == field.name())
                    .map(|(_, function)| function.as_str());
                match function {
                    Some(function) if unsigned(field.data_type()) => {
                        let signed = if INT4_RESULTS.contains(&function) {
                            DataType::Int32
                        } else {
                            DataType::Int64
                        };
                        cast(column, signed).alias_qualified(qualifier.cloned(), field.name())
                    }
                    _ => column,
                }
            })
            .collect();
        cast_any = true;
        Ok(Transformed::yes(LogicalPlan::Projection(
            Projection::try_new(exprs, Arc::new(node))?,
        )))
    })
    .map(|transformed| transformed.data)
}
