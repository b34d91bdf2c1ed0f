//! `runtime.query.unsupported: source`: a read-only query pgaccel refuses as
//! not supported (SQLSTATE 0A000) is answered by the PostgreSQL source of
//! the datasets it reads, so that PostgreSQL itself gives PostgreSQL's
//! answer.
//!
//! A query is forwarded only when all of this holds: it is one `SELECT`
//! (no data-modifying CTE, no `SELECT INTO`); every table it names is a
//! dataset of the same PostgreSQL source (same connection parameters); and
//! every such dataset mirrors its whole source table (no `refresh_sql`,
//! `refresh_data_window` or retention, which would make the source hold
//! rows the acceleration does not). Dataset names are mapped back to the
//! source's tables, keeping the names the query refers to them by. It runs
//! in a read-only transaction under the session's `TimeZone`, `DateStyle`,
//! `IntervalStyle`, `extra_float_digits` and `bytea_output`, so values
//! print as the session would print them; rows come back as PostgreSQL's
//! text, typed with the source's type OIDs.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::sql::sqlparser::ast::{
    CastKind, Expr, Ident, ObjectName, ObjectNamePart, SetExpr, Statement, TableAlias, TableFactor,
    Value, ValueWithSpan, Visit, VisitMut, Visitor, VisitorMut,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_table_providers::sql::db_connection_pool::postgrespool::PostgresConnectionPool;
use futures::StreamExt;
use tokio_postgres::SimpleQueryMessage;
use tokio_postgres::types::Type;

use super::cursor::RowSource;
use super::error::PgError;
use super::resolve::{NameScope, normalized, resolve_names};
use super::settings::Settings;
use super::sqlstate;
use crate::accelerator::PG_TYPE_METADATA;
use crate::config::{PostgresParams, SourceParams, SourceRef, Unsupported};
use crate::dataset::Registry;

/// A result column answered by the source: the PostgreSQL type OID its
/// text values have.
pub const FORWARDED_OID_METADATA: &str = "pgaccel.forwarded_oid";

/// Rows per batch read from the source.
const BATCH_ROWS: usize = 4096;

/// The session settings a forwarded query runs under, so that the source
/// prints values as the session would.
const CARRIED_SETTINGS: [&str; 5] = [
    "TimeZone",
    "DateStyle",
    "IntervalStyle",
    "extra_float_digits",
    "bytea_output",
];

/// Forwards refused queries to their PostgreSQL source (one connection pool
/// per source, made on first use).
pub struct Forwarder {
    mode: Unsupported,
    pools: tokio::sync::Mutex<HashMap<String, Arc<PostgresConnectionPool>>>,
}

/// A refused statement the source answers.
#[derive(Debug)]
pub struct ForwardedQuery {
    /// The statement as the source runs it: source table names, and `$n`
    /// placeholders, which [`ForwardedQuery::run`] replaces by literals.
    statement: Statement,
    pool: Arc<PostgresConnectionPool>,
    /// The parameter types the source inferred.
    pub parameters: Vec<Type>,
    /// The result columns: text, typed by [`FORWARDED_OID_METADATA`].
    schema: SchemaRef,
    /// Why pgaccel refused it.
    pub refusal: String,
}

impl std::fmt::Debug for Forwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Forwarder")
            .field("mode", &self.mode)
            .finish()
    }
}

impl Forwarder {
    pub fn new(mode: Unsupported) -> Self {
        Forwarder {
            mode,
            pools: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// Whether `error` is a refusal this forwarder may answer instead.
    pub fn takes(&self, error: &PgError) -> bool {
        self.mode == Unsupported::Source && error.code == sqlstate::FEATURE_NOT_SUPPORTED
    }

    /// The source's plan for `sql`, which pgaccel refused with `refusal`;
    /// `None` when the query cannot be forwarded (the refusal stands). A
    /// statement the source itself rejects fails with the source's error.
    pub async fn prepare(
        &self,
        sql: &str,
        scope: &NameScope<'_>,
        registry: &Registry,
        refusal: &PgError,
    ) -> Result<Option<Arc<ForwardedQuery>>, PgError> {
        let Some((statement, params)) = forwardable(sql, scope, registry) else {
            tracing::debug!(refusal = %refusal.message, "refused query not forwardable");
            return Ok(None);
        };
        let pool = self.pool(&params).await?;
        let text = statement.to_string();
        let connection = pool
            .connect_direct()
            .await
            .map_err(|e| forward_failed(&e.to_string()))?;
        let prepared = connection.conn.prepare(&text).await.map_err(source_error)?;
        let fields: Vec<Field> = prepared
            .columns()
            .iter()
            .map(|column| {
                let pg_type = column.type_();
                Field::new(column.name(), DataType::Utf8, true).with_metadata(
                    [
                        (FORWARDED_OID_METADATA.to_owned(), pg_type.oid().to_string()),
                        (PG_TYPE_METADATA.to_owned(), pg_type.name().to_owned()),
                    ]
                    .into(),
                )
            })
            .collect();
        Ok(Some(Arc::new(ForwardedQuery {
            statement,
            pool,
            parameters: prepared.params().to_vec(),
            schema: Arc::new(Schema::new(fields)),
            refusal: refusal.message.clone(),
        })))
    }

    async fn pool(&self, params: &PostgresParams) -> Result<Arc<PostgresConnectionPool>, PgError> {
        let key = source_key(params);
        let mut pools = self.pools.lock().await;
        if let Some(pool) = pools.get(&key) {
            return Ok(Arc::clone(pool));
        }
        let pool = Arc::new(
            crate::source::postgres_pool(params)
                .await
                .map_err(|e| forward_failed(&e.to_string()))?,
        );
        pools.insert(key, Arc::clone(&pool));
        Ok(pool)
    }
}

impl ForwardedQuery {
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// Runs the query at the source with `params` (as text), under the
    /// session's output settings, in a read-only transaction.
    pub async fn run(
        &self,
        params: Option<&ParamValues>,
        settings: &Settings,
    ) -> Result<RowSource, PgError> {
        let mut statement = self.statement.clone();
        let values = parameter_texts(params)?;
        if values.len() != self.parameters.len() {
            return Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!(
                    "the statement takes {} parameters, {} were bound",
                    self.parameters.len(),
                    values.len()
                ),
            ));
        }
        inline_parameters(&mut statement, &values, &self.parameters);
        let mut script = String::from("SET LOCAL transaction_read_only = on; ");
        for name in CARRIED_SETTINGS {
            if let Ok(value) = settings.get(name) {
                script.push_str(&format!("SET LOCAL {name} = {}; ", literal(&value)));
            }
        }
        script.push_str(&statement.to_string());
        let connection = self
            .pool
            .connect_direct()
            .await
            .map_err(|e| forward_failed(&e.to_string()))?;
        let messages = connection
            .conn
            .simple_query_raw(&script)
            .await
            .map_err(source_error)?;
        let schema = self.schema();
        let columns = schema.fields().len();
        // The pooled connection lives as long as the stream reading from it.
        let state = (connection, Box::pin(messages), Arc::clone(&schema), false);
        let batches = futures::stream::unfold(
            state,
            move |(connection, mut messages, schema, done)| async move {
                if done {
                    return None;
                }
                let mut builders: Vec<StringBuilder> =
                    (0..columns).map(|_| StringBuilder::new()).collect();
                let mut rows = 0;
                let mut finished = false;
                while rows < BATCH_ROWS {
                    match messages.next().await {
                        Some(Ok(SimpleQueryMessage::Row(row))) => {
                            for (index, builder) in builders.iter_mut().enumerate() {
                                builder.append_option(row.get(index));
                            }
                            rows += 1;
                        }
                        Some(Ok(_)) => {}
                        Some(Err(error)) => {
                            return Some((
                                Err(source_error(error)),
                                (connection, messages, schema, true),
                            ));
                        }
                        None => {
                            finished = true;
                            break;
                        }
                    }
                }
                if rows == 0 && finished {
                    return None;
                }
                let arrays: Vec<ArrayRef> = builders
                    .iter_mut()
                    .map(|builder| Arc::new(builder.finish()) as ArrayRef)
                    .collect();
                let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)
                    .map_err(|e| PgError::new(sqlstate::INTERNAL_ERROR, e.to_string()));
                Some((batch, (connection, messages, schema, finished)))
            },
        );
        Ok(RowSource::new(schema, Box::pin(batches)))
    }
}

/// The statement with dataset names mapped to their source's tables, and
/// the source they all come from; `None` if it cannot be forwarded.
fn forwardable(
    sql: &str,
    scope: &NameScope<'_>,
    registry: &Registry,
) -> Option<(Statement, PostgresParams)> {
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
    if statements.len() != 1 {
        return None;
    }
    let mut statement = statements.pop()?;
    let Statement::Query(query) = &statement else {
        return None;
    };
    if matches!(*query.body, SetExpr::Select(ref select) if select.into.is_some())
        || !query.locks.is_empty()
    {
        return None;
    }
    // A data-modifying CTE is a statement inside the query.
    let mut nested = 0;
    let _ = statement.visit(&mut StatementCounter(&mut nested));
    if nested != 1 {
        return None;
    }
    resolve_names(&mut statement, scope).ok()?;
    let mut mapper = SourceMapper {
        registry,
        source: None,
    };
    if VisitMut::visit(&mut statement, &mut mapper).is_break() {
        return None;
    }
    Some((statement, mapper.source?))
}

struct StatementCounter<'a>(&'a mut usize);

impl Visitor for StatementCounter<'_> {
    type Break = ();

    fn pre_visit_statement(&mut self, _statement: &Statement) -> ControlFlow<()> {
        *self.0 += 1;
        ControlFlow::Continue(())
    }
}

/// Replaces each dataset by its source table, checking that they all come
/// from one PostgreSQL source and mirror it whole.
struct SourceMapper<'a> {
    registry: &'a Registry,
    source: Option<PostgresParams>,
}

impl VisitorMut for SourceMapper<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name,
            args: None,
            alias,
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let parts: Vec<String> = name
            .0
            .iter()
            .filter_map(|part| match part {
                ObjectNamePart::Identifier(ident) => Some(normalized(ident)),
                _ => None,
            })
            .collect();
        let (schema, table) = match parts.as_slice() {
            // A CTE's name: the query's own.
            [_] => return ControlFlow::Continue(()),
            [schema, table] | [_, schema, table] => (schema, table),
            _ => return ControlFlow::Break(()),
        };
        // Not a dataset (a catalog table, say): the source's would differ.
        let Some(dataset) = self
            .registry
            .iter()
            .find(|d| d.config.name.schema == *schema && d.config.name.table == *table)
        else {
            return ControlFlow::Break(());
        };
        let config = &dataset.config;
        let (
            SourceRef::Postgres {
                schema: source_schema,
                table: source_table,
            },
            SourceParams::Postgres(params),
        ) = (&config.from, &config.params)
        else {
            return ControlFlow::Break(());
        };
        let acceleration = &config.acceleration;
        if dataset.refresh_sql().is_some()
            || acceleration.refresh_data_window.is_some()
            || acceleration.retention.period.is_some()
            || acceleration.retention.sql.is_some()
        {
            return ControlFlow::Break(());
        }
        match &self.source {
            Some(known) if source_key(known) != source_key(params) => {
                return ControlFlow::Break(());
            }
            Some(_) => {}
            None => self.source = Some(params.clone()),
        }
        let mut source_name = Vec::new();
        if let Some(source_schema) = source_schema {
            source_name.push(ObjectNamePart::Identifier(Ident::with_quote(
                '"',
                source_schema,
            )));
        }
        source_name.push(ObjectNamePart::Identifier(Ident::with_quote(
            '"',
            source_table,
        )));
        *name = ObjectName(source_name);
        // References to the table by its dataset name keep working.
        if alias.is_none() {
            *alias = Some(TableAlias {
                explicit: true,
                name: Ident::with_quote('"', table),
                columns: Vec::new(),
                at: None,
            });
        }
        ControlFlow::Continue(())
    }
}

/// Identifies a source: queries over datasets with equal keys may join at
/// that source.
fn source_key(params: &PostgresParams) -> String {
    match &params.connection_string {
        Some(string) => string.expose().to_owned(),
        None => format!(
            "{}:{}/{}?user={}",
            params.host, params.port, params.db, params.user
        ),
    }
}

/// The bound parameters as PostgreSQL text input (`None` for NULL).
fn parameter_texts(params: Option<&ParamValues>) -> Result<Vec<Option<String>>, PgError> {
    let Some(ParamValues::List(values)) = params else {
        return Ok(Vec::new());
    };
    values
        .iter()
        .map(|value| match &value.value {
            value if value.is_null() => Ok(None),
            ScalarValue::Utf8(Some(text)) | ScalarValue::LargeUtf8(Some(text)) => {
                Ok(Some(text.clone()))
            }
            ScalarValue::Binary(Some(bytes)) | ScalarValue::LargeBinary(Some(bytes)) => {
                Ok(Some(format!(
                    "\\x{}",
                    bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
                )))
            }
            other => Ok(Some(other.to_string())),
        })
        .collect()
}

/// Replaces `$n` by `CAST('text' AS type)`, which is how PostgreSQL reads a
/// text parameter of that type.
fn inline_parameters(statement: &mut Statement, values: &[Option<String>], types: &[Type]) {
    let _ = VisitMut::visit(statement, &mut Inliner { values, types });
}

struct Inliner<'a> {
    values: &'a [Option<String>],
    types: &'a [Type],
}

impl VisitorMut for Inliner<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(placeholder),
            ..
        }) = expr
        else {
            return ControlFlow::Continue(());
        };
        let Some(index) = placeholder
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| n.checked_sub(1))
        else {
            return ControlFlow::Continue(());
        };
        let (Some(value), Some(pg_type)) = (self.values.get(index), self.types.get(index)) else {
            return ControlFlow::Continue(());
        };
        let value = match value {
            Some(text) => Value::SingleQuotedString(text.clone()),
            None => Value::Null,
        };
        let type_name = format!("{}.{}", quote(pg_type.schema()), quote(pg_type.name()));
        *expr = Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(Expr::value(value)),
            data_type: datafusion::sql::sqlparser::ast::DataType::Custom(
                ObjectName(vec![ObjectNamePart::Identifier(Ident::new(type_name))]),
                Vec::new(),
            ),
            array: false,
            format: None,
        };
        ControlFlow::Continue(())
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A string literal (standard-conforming: only `'` is special).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The source's own error, with its SQLSTATE and message, as PostgreSQL
/// would have sent it; a connection failure is 08006.
fn source_error(error: tokio_postgres::Error) -> PgError {
    match error.as_db_error() {
        Some(db) => PgError::new(db.code().code(), db.message().to_owned()),
        None => forward_failed(&error.to_string()),
    }
}

fn forward_failed(message: &str) -> PgError {
    PgError::new(
        sqlstate::CONNECTION_FAILURE,
        format!("the source of a forwarded query failed: {message}"),
    )
}
