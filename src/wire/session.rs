//! The query handler shared by every connection: parses statements, answers
//! the hooks of [`super::statement`], plans the rest with DataFusion and
//! streams the results in the formats the client asked for.

use std::fmt::Debug;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ParamValues;
use datafusion::common::metadata::ScalarAndMetadata;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion_pg_catalog::sql::PostgresCompatibilityParser;
use futures::{Sink, StreamExt, stream};
use lru::LruCache;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, QueryResponse, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;

use super::cancel::{QueryCancel, cancellable};
use super::encode::{self, RowEncoding};
use super::sqlstate;
use super::statement::{Command, classify, default_setting};
use crate::metrics;
use crate::query::{DirectPlan, parameterize, plan_is_current};

/// A statement prepared by Parse: a DataFusion plan or a hook command.
#[derive(Debug, Clone)]
pub enum Prepared {
    Plan {
        plan: LogicalPlan,
        /// Set when the statement has a direct answer (a primary-key lookup,
        /// a select list without a table) that needs no planning at execution.
        direct: Option<Arc<Direct>>,
        /// Parameter types as DataFusion inferred them, by position.
        data_types: Vec<Option<DataType>>,
        /// Parameter types reported in ParameterDescription (never OID 0).
        wire_types: Vec<Type>,
    },
    Command(Command),
}

/// A direct answer with its row encodings, both made when the statement is
/// prepared.
#[derive(Debug)]
pub struct Direct {
    plan: DirectPlan,
    text: RowEncoding,
    binary: RowEncoding,
}

impl Direct {
    fn new(plan: DirectPlan) -> PgWireResult<Direct> {
        Ok(Direct {
            text: RowEncoding::new(plan.schema(), &Format::UnifiedText)?,
            binary: RowEncoding::new(plan.schema(), &Format::UnifiedBinary)?,
            plan,
        })
    }
}

/// The handler behind every connection.
pub struct QueryService {
    ctx: SessionContext,
    parser: Arc<StatementParser>,
}

impl QueryService {
    pub fn new(ctx: SessionContext) -> Self {
        QueryService {
            parser: Arc::new(StatementParser {
                ctx: ctx.clone(),
                sql: PostgresCompatibilityParser::new(),
                cache: Mutex::new(LruCache::new(
                    NonZeroUsize::new(CACHED_STATEMENTS).expect("a positive capacity"),
                )),
                shapes: Mutex::new(LruCache::new(
                    NonZeroUsize::new(CACHED_STATEMENTS).expect("a positive capacity"),
                )),
                planned: AtomicU64::new(0),
            }),
            ctx,
        }
    }

    /// Statements parsed and planned so far (see [`crate::runtime::Runtime::statements_planned`]).
    pub fn statements_planned(&self) -> u64 {
        self.parser.planned.load(Ordering::Relaxed)
    }
}

/// Statements planned before, by their exact text, so that a statement a
/// client sends again (simple protocol, or an unnamed Parse) is not parsed
/// and planned again. Bounded; the least recently used plan goes first.
const CACHED_STATEMENTS: usize = 1024;

pub struct StatementParser {
    ctx: SessionContext,
    sql: PostgresCompatibilityParser,
    cache: Mutex<LruCache<String, Prepared>>,
    /// Simple-protocol lookups by their text with the key literals replaced
    /// by parameters (see [`crate::query::parameterize`]); `None` for a
    /// shape that is not a lookup, so it is not planned again.
    shapes: Mutex<LruCache<String, Option<Prepared>>>,
    planned: AtomicU64,
}

/// A query string's single statement, ready to run.
struct SimpleStatement {
    prepared: Prepared,
    /// The key literals taken out of a parameterized lookup.
    params: Option<ParamValues>,
}

impl StatementParser {
    /// The plan of `sql` if it was planned before and every table it reads
    /// still has the schema it was planned with.
    fn cached(&self, sql: &str) -> Option<Prepared> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        match cache.get(sql)? {
            Prepared::Plan { plan, .. } if !plan_is_current(plan) => {
                cache.pop(sql);
                None
            }
            prepared => Some(prepared.clone()),
        }
    }

    /// Keeps the plan of a query statement (session commands are cheap and
    /// depend on the connection, so they are not kept).
    fn remember(&self, sql: &str, prepared: &Prepared) {
        if matches!(prepared, Prepared::Plan { .. }) {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.put(sql.to_owned(), prepared.clone());
        }
    }

    /// Parses and plans `sql` when it holds exactly one statement, through
    /// the cache. `Ok(None)` for zero or several statements.
    async fn prepare_single(&self, sql: &str) -> PgWireResult<Option<Prepared>> {
        if let Some(prepared) = self.cached(sql) {
            return Ok(Some(prepared));
        }
        let mut statements = self.parse(sql)?;
        if statements.len() != 1 {
            return Ok(None);
        }
        let prepared = self.prepare(statements.remove(0)).await?;
        self.remember(sql, &prepared);
        Ok(Some(prepared))
    }

    /// Like [`Self::prepare_single`], for the simple protocol: a point
    /// lookup whose text is new but whose shape is not is answered by the
    /// plan of that shape, with its key literals as parameter values.
    async fn prepare_simple(&self, sql: &str) -> PgWireResult<Option<SimpleStatement>> {
        if let Some(prepared) = self.cached(sql) {
            return Ok(Some(SimpleStatement {
                prepared,
                params: None,
            }));
        }
        if let Some(shaped) = self.shaped(sql).await {
            return Ok(Some(shaped));
        }
        let mut statements = self.parse(sql)?;
        if statements.len() != 1 {
            return Ok(None);
        }
        let prepared = self.prepare(statements.remove(0)).await?;
        self.remember(sql, &prepared);
        Ok(Some(SimpleStatement {
            prepared,
            params: None,
        }))
    }

    /// `sql` as a parameterized lookup, when it is one and every key literal
    /// converts exactly to its parameter's type.
    ///
    /// The shape is found with sqlparser alone: the PostgreSQL compatibility
    /// rewrites (catalog queries, array and collation syntax) cost more than
    /// the lookup itself, and they are applied to the parameterized text
    /// once, when the shape is first planned, exactly as to any statement.
    async fn shaped(&self, sql: &str) -> Option<SimpleStatement> {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).ok()?;
        let [statement] = statements.as_mut_slice() else {
            return None;
        };
        if !matches!(classify(statement), Command::Query) {
            return None;
        }
        let table = parameterize::single_table(statement)?;
        let key_columns = crate::query::key_columns(&self.ctx, &table.to_string()).await?;
        let shaped = parameterize::parameterize(statement, &key_columns)?;
        let prepared = match self.cached_shape(&shaped.text) {
            Some(prepared) => prepared?,
            None => {
                let prepared = match self.parse(&shaped.text) {
                    Ok(mut statements) if statements.len() == 1 => self
                        .prepare(statements.remove(0))
                        .await
                        .ok()
                        .filter(is_parameterized_lookup),
                    _ => None,
                };
                let mut shapes = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
                shapes.put(shaped.text, prepared.clone());
                prepared?
            }
        };
        let Prepared::Plan { data_types, .. } = &prepared else {
            return None;
        };
        let values = shaped
            .literals
            .iter()
            .zip(data_types)
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
    fn cached_shape(&self, text: &str) -> Option<Option<Prepared>> {
        let mut shapes = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        match shapes.get(text)? {
            Some(Prepared::Plan { plan, .. }) if !plan_is_current(plan) => {
                shapes.pop(text);
                None
            }
            prepared => Some(prepared.clone()),
        }
    }

    fn parse(&self, sql: &str) -> PgWireResult<Vec<Statement>> {
        self.sql
            .parse(sql)
            .map_err(|e| sqlstate::syntax(&e.to_string()))
    }

    async fn plan(&self, statement: Statement) -> PgWireResult<(LogicalPlan, SessionState)> {
        let state = self.ctx.state();
        let plan = state
            .statement_to_plan(DfStatement::Statement(Box::new(statement)))
            .await
            .map_err(sqlstate::from_datafusion)?;
        match &plan {
            LogicalPlan::Dml(dml) => Err(sqlstate::read_only(&dml.op.to_string().to_uppercase())),
            LogicalPlan::Ddl(ddl) => Err(sqlstate::read_only(&ddl.name().to_uppercase())),
            LogicalPlan::Copy(_) => Err(sqlstate::read_only("COPY")),
            _ => Ok((plan, state)),
        }
    }

    async fn prepare(&self, mut statement: Statement) -> PgWireResult<Prepared> {
        match classify(&statement) {
            Command::Query => {
                self.planned.fetch_add(1, Ordering::Relaxed);
                metrics::statement_planned();
                crate::query::apply_postgres_names(&mut statement);
                crate::query::apply_postgres_literal_types(&mut statement);
                let (plan, state) = self.plan(statement).await?;
                let direct = match DirectPlan::try_new(&plan, &state) {
                    Some(direct) => Some(Arc::new(Direct::new(direct)?)),
                    None => None,
                };
                let data_types = parameter_types(&plan)?;
                let wire_types = data_types
                    .iter()
                    .map(|data_type| match data_type {
                        Some(data_type) => arrow_pg::datatypes::into_pg_type(data_type),
                        None => Ok(Type::TEXT),
                    })
                    .collect::<PgWireResult<Vec<_>>>()?;
                Ok(Prepared::Plan {
                    plan,
                    direct,
                    data_types,
                    wire_types,
                })
            }
            Command::ReadOnly { command } => Err(sqlstate::read_only(&command)),
            command => Ok(Prepared::Command(command)),
        }
    }
}

fn is_parameterized_lookup(prepared: &Prepared) -> bool {
    matches!(
        prepared,
        Prepared::Plan { direct: Some(direct), data_types, .. }
            if direct.plan.is_lookup() && data_types.iter().all(Option::is_some)
    )
}

/// Parameter types in `$1, $2, ...` order.
fn parameter_types(plan: &LogicalPlan) -> PgWireResult<Vec<Option<DataType>>> {
    let types = plan
        .get_parameter_types()
        .map_err(sqlstate::from_datafusion)?;
    let mut ordered: Vec<(usize, Option<DataType>)> = types
        .into_iter()
        .filter_map(|(id, data_type)| {
            let position = id.trim_start_matches('$').parse::<usize>().ok()?;
            Some((position, data_type))
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

#[async_trait]
impl QueryParser for StatementParser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        if let Some(prepared) = self.prepare_single(sql).await? {
            return Ok(Some(prepared));
        }
        match self.parse(sql)?.len() {
            0 => Ok(None),
            _ => Err(sqlstate::error(
                sqlstate::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            )),
        }
    }

    fn get_parameter_types(&self, statement: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(match statement {
            Prepared::Plan { wire_types, .. } => wire_types.clone(),
            Prepared::Command(_) => Vec::new(),
        })
    }

    fn get_result_schema(
        &self,
        statement: &Prepared,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let format = format.unwrap_or(&Format::UnifiedText);
        match statement {
            Prepared::Plan { plan, .. } => encode::fields(plan.schema().as_arrow(), format),
            Prepared::Command(Command::Show { name }) => encode::fields(&show_schema(name), format),
            Prepared::Command(_) => Ok(Vec::new()),
        }
    }
}

fn show_schema(name: &str) -> Schema {
    Schema::new(vec![Field::new(name, DataType::Utf8, false)])
}

impl QueryService {
    async fn execute_plan<C: ClientInfo>(
        &self,
        client: &C,
        plan: LogicalPlan,
        format: &Format,
    ) -> PgWireResult<Response> {
        let cancel = client
            .session_extensions()
            .get::<Arc<QueryCancel>>()
            .map(|cancel| cancel.start());
        let started = Instant::now();
        let frame = self
            .ctx
            .execute_logical_plan(plan)
            .await
            .map_err(sqlstate::from_datafusion)?;
        let encoding = RowEncoding::new(frame.schema().as_arrow(), format)?;
        let fields = Arc::clone(encoding.fields());
        let batches = frame
            .execute_stream()
            .await
            .map_err(sqlstate::from_datafusion)?;
        metrics::query_executed(started.elapsed());
        let rows = batches
            .map(move |batch| match batch {
                Ok(batch) => match encoding.rows(&batch) {
                    Ok(rows) => stream::iter(rows.into_iter().map(Ok).collect::<Vec<_>>()),
                    Err(error) => stream::iter(vec![Err(error)]),
                },
                Err(error) => stream::iter(vec![Err(sqlstate::from_datafusion(error))]),
            })
            .flatten();
        Ok(match cancel {
            Some(token) => Response::Query(QueryResponse::new(fields, cancellable(rows, token))),
            None => Response::Query(QueryResponse::new(fields, rows)),
        })
    }

    fn execute_command<C: ClientInfo>(
        &self,
        client: &mut C,
        command: &Command,
        format: &Format,
    ) -> PgWireResult<Response> {
        Ok(match command {
            Command::Begin => Response::TransactionStart(Tag::new("BEGIN")),
            Command::Commit => Response::TransactionEnd(Tag::new("COMMIT")),
            Command::Rollback => Response::TransactionEnd(Tag::new("ROLLBACK")),
            Command::Set { name, value } => {
                client.metadata_mut().insert(name.clone(), value.clone());
                Response::Execution(Tag::new("SET"))
            }
            Command::Show { name } => self.show(client, name, format)?,
            Command::Accepted { tag } => Response::Execution(Tag::new(tag)),
            Command::ReadOnly { command } => return Err(sqlstate::read_only(command)),
            Command::Query => unreachable!("queries are planned, not executed as commands"),
        })
    }

    fn show<C: ClientInfo>(
        &self,
        client: &C,
        name: &str,
        format: &Format,
    ) -> PgWireResult<Response> {
        let value = client
            .metadata()
            .get(name)
            .cloned()
            .or_else(|| default_setting(name).map(str::to_owned))
            .ok_or_else(|| {
                sqlstate::error(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("unrecognized configuration parameter \"{name}\""),
                )
            })?;
        let schema = Arc::new(show_schema(name));
        let encoding = RowEncoding::new(&schema, format)?;
        let batch = datafusion::arrow::record_batch::RecordBatch::try_new(
            schema,
            vec![Arc::new(datafusion::arrow::array::StringArray::from(vec![
                value,
            ]))],
        )
        .map_err(|e| sqlstate::error(sqlstate::INTERNAL_ERROR, e.to_string()))?;
        let rows = encoding.rows(&batch)?;
        Ok(Response::Query(QueryResponse::new(
            Arc::clone(encoding.fields()),
            stream::iter(rows.into_iter().map(Ok)),
        )))
    }

    /// Answers a statement directly; `None` when it must be planned.
    fn execute_direct(
        &self,
        direct: &Direct,
        params: Option<&ParamValues>,
        format: &Format,
    ) -> PgWireResult<Option<Response>> {
        let started = Instant::now();
        let Some(batch) = direct
            .plan
            .execute(params)
            .map_err(sqlstate::from_datafusion)?
        else {
            return Ok(None);
        };
        let individual;
        let encoding = match format {
            Format::UnifiedText => &direct.text,
            Format::UnifiedBinary => &direct.binary,
            Format::Individual(_) => {
                individual = RowEncoding::new(batch.schema_ref(), format)?;
                &individual
            }
        };
        let rows = encoding.rows(&batch)?;
        if direct.plan.is_lookup() {
            metrics::index_lookup(started.elapsed());
        } else {
            metrics::query_executed(started.elapsed());
        }
        let rows = stream::iter(rows.into_iter().map(Ok));
        Ok(Some(Response::Query(QueryResponse::new(
            Arc::clone(encoding.fields()),
            rows,
        ))))
    }

    async fn run_simple<C: ClientInfo>(
        &self,
        client: &mut C,
        statement: Statement,
    ) -> PgWireResult<Response> {
        let prepared = self.parser.prepare(statement).await?;
        self.run_prepared(client, prepared).await
    }

    /// Runs the single statement of a simple-protocol query string `sql`.
    async fn run_single<C: ClientInfo>(
        &self,
        client: &mut C,
        sql: &str,
        single: SimpleStatement,
    ) -> PgWireResult<Response> {
        let SimpleStatement { prepared, params } = single;
        let Some(params) = params else {
            return self.run_prepared(client, prepared).await;
        };
        if let Prepared::Plan {
            direct: Some(direct),
            ..
        } = &prepared
            && let Some(response) =
                self.execute_direct(direct, Some(&params), &Format::UnifiedText)?
        {
            return Ok(response);
        }
        // The table changed under the parameterized plan: plan the statement
        // as written.
        let statement = self.parser.parse(sql)?.remove(0);
        self.run_simple(client, statement).await
    }

    async fn run_prepared<C: ClientInfo>(
        &self,
        client: &mut C,
        prepared: Prepared,
    ) -> PgWireResult<Response> {
        match prepared {
            Prepared::Plan { plan, direct, .. } => {
                let format = &Format::UnifiedText;
                if let Some(direct) = direct
                    && let Some(response) = self.execute_direct(&direct, None, format)?
                {
                    return Ok(response);
                }
                self.execute_plan(client, plan, format).await
            }
            Prepared::Command(command) => {
                self.execute_command(client, &command, &Format::UnifiedText)
            }
        }
    }
}

fn record_failure(error: &PgWireError) {
    if let PgWireError::UserError(info) = error {
        metrics::query_failed(&info.code);
    }
}

#[async_trait]
impl SimpleQueryHandler for QueryService {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let single = self
            .parser
            .prepare_simple(query)
            .await
            .inspect_err(record_failure)?;
        if let Some(single) = single {
            let response = self
                .run_single(client, query, single)
                .await
                .unwrap_or_else(|error| {
                    record_failure(&error);
                    Response::Error(Box::new(error.into()))
                });
            return Ok(vec![response]);
        }
        let statements = self.parser.parse(query).inspect_err(record_failure)?;
        let mut responses = Vec::with_capacity(statements.len());
        for statement in statements {
            match self.run_simple(client, statement).await {
                Ok(response) => responses.push(response),
                Err(error) => {
                    // Later statements of the string are not run, as in
                    // PostgreSQL; earlier results are still sent.
                    record_failure(&error);
                    responses.push(Response::Error(Box::new(error.into())));
                    break;
                }
            }
        }
        Ok(responses)
    }
}

#[async_trait]
impl ExtendedQueryHandler for QueryService {
    type Statement = Prepared;
    type QueryParser = StatementParser;

    fn query_parser(&self) -> Arc<StatementParser> {
        Arc::clone(&self.parser)
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let format = &portal.result_column_format;
        let outcome = match &portal.statement.statement {
            Prepared::Plan {
                plan,
                direct,
                data_types,
                wire_types,
            } => {
                let params = bind_parameters(portal, data_types, wire_types)?;
                if let Some(direct) = direct
                    && let Some(response) = self.execute_direct(direct, Some(&params), format)?
                {
                    return Ok(response);
                }
                let plan = plan
                    .clone()
                    .replace_params_with_values(&params)
                    .map_err(sqlstate::from_datafusion)?;
                self.execute_plan(client, plan, format).await
            }
            Prepared::Command(command) => self.execute_command(client, command, format),
        };
        outcome.inspect_err(record_failure)
    }
}

fn bind_parameters(
    portal: &Portal<Prepared>,
    data_types: &[Option<DataType>],
    wire_types: &[Type],
) -> PgWireResult<ParamValues> {
    let inferred: Vec<Option<&DataType>> = data_types.iter().map(Option::as_ref).collect();
    let server: Vec<Option<&Type>> = wire_types.iter().map(Some).collect();
    arrow_pg::datatypes::df::deserialize_parameters_with_server_types(portal, &inferred, &server)
}
