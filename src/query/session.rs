//! One client's session: its own DataFusion state (settings, time zone and
//! the functions that answer for it), its transaction block, its cursors,
//! and the notices and setting changes owed to the client. The wire layer
//! hands it statements and writes out what it returns ([`Outcome`]); it
//! knows nothing of the protocol.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::{ArcSwap, ArcSwapOption};
use chrono::Utc;
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ParamValues;
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::physical_plan::execute_stream;
use datafusion::sql::sqlparser::ast::{Query, Statement};
use futures::StreamExt;

use super::activity::{ActivityHandle, Backend};
use super::cursor::{Cursor, RowSource};
use super::engine::{CursorRow, Engine, Identity, SessionInfo};
use super::error::{Notice, NoticeLevel, PgError};
use super::planner::{PlanContext, PlannedQuery, Prepared, SimpleStatement};
use super::resolve::NameScope;
use super::settings::{Output, Scope, Settings, Snapshot};
use super::statement::{Command, CopyFrom, CopyOptions, Declare, Motion, TransactionModes};
use super::table::Pins;
use super::{CATALOG, functions, sqlstate};
use crate::metrics;

/// The transaction status reported in ReadyForQuery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStatus {
    Idle,
    InBlock,
    Failed,
}

/// What a statement produced.
pub enum Outcome {
    /// Rows, with the command tag's verb (`SELECT`, `FETCH`, `SHOW`);
    /// `binary` for a binary cursor's rows.
    Rows {
        source: RowSource,
        verb: &'static str,
        binary: bool,
    },
    /// Rows already counted, with the full command tag (`FETCH 5`).
    Fetched {
        source: RowSource,
        tag: String,
        binary: bool,
    },
    /// A command's tag (`BEGIN`, `SET`, `MOVE 3`).
    Done(String),
    /// `COPY ... TO STDOUT`.
    Copy {
        source: RowSource,
        options: CopyOptions,
    },
    /// `DEALLOCATE name` / `DEALLOCATE ALL` (`None`): the wire layer's
    /// prepared statements.
    Deallocate(Option<String>),
    /// `DISCARD ALL`: the session was reset; the wire layer drops its
    /// prepared statements and portals too.
    DiscardAll,
}

/// A simple-protocol query string, prepared.
pub enum SimpleQuery {
    One(SimpleStatement),
    /// Several statements, each prepared just before it runs (an earlier
    /// one may change what a later one means: `SET search_path`).
    Many(Vec<String>),
}

struct Block {
    failed: bool,
    /// A statement other than transaction control ran in it.
    queried: bool,
    savepoints: Vec<(String, Snapshot)>,
    /// The settings to restore on ROLLBACK.
    begin: Snapshot,
    pins: Arc<Pins>,
}

/// One client's session.
pub struct Session {
    engine: Arc<Engine>,
    state: SessionState,
    info: SessionInfo,
    settings: Settings,
    /// Identifies the names statements resolve against (database and
    /// search path) and the time zone they are planned in, for the shared
    /// plan cache.
    scope_key: String,
    search_path: Vec<String>,
    output: Arc<Output>,
    block: Option<Block>,
    cursors: BTreeMap<String, Cursor>,
    /// Reported settings as the client last heard them.
    reported: BTreeMap<&'static str, String>,
    /// The settings' generation when `reported` was last brought up to date.
    reported_generation: u64,
    notices: Vec<Notice>,
    activity: ActivityHandle,
    /// The statement running ended a transaction block, which counted the
    /// transaction already.
    ended_block: bool,
    /// When the statement in flight began executing: `query_duration_ms`
    /// runs from here to its last row sent (or its error).
    statement_started: Option<std::time::Instant>,
    /// When the client's latest Query or Execute message arrived: PostgreSQL's
    /// `statement_timestamp()`, shared by every statement of a
    /// multi-statement Query, and `now()` of a transaction it starts.
    received: chrono::DateTime<Utc>,
}

impl Session {
    /// A session for `identity`, with the settings of its startup packet.
    pub fn new(
        engine: Arc<Engine>,
        identity: Identity,
        startup: &[(String, String)],
    ) -> Result<Session, PgError> {
        let parameters = startup.iter().cloned().collect();
        let settings = Self::startup_settings(&engine, &parameters)?;
        let schemas = engine
            .base
            .catalog_list()
            .catalog(CATALOG)
            .map(|catalog| catalog.schema_names())
            .unwrap_or_default();
        let identity = Arc::new(identity);
        let info = SessionInfo {
            identity: Arc::clone(&identity),
            settings: Arc::new(ArcSwap::from_pointee(settings.clone())),
            pins: Arc::new(ArcSwapOption::empty()),
            set_requests: Arc::new(Mutex::new(Vec::new())),
            started: engine.started,
            schemas: Arc::new(schemas),
            cursors: Arc::new(Mutex::new(Vec::new())),
        };
        let mut state = SessionStateBuilder::new_from_existing(engine.base.clone())
            .with_runtime_env(memory_limited(&engine)?)
            .build();
        state
            .config_mut()
            .options_mut()
            .extensions
            .insert(info.clone());
        let activity = engine.activity.register(Backend {
            pid: identity.pid,
            user: identity.user.clone(),
            database: identity.database.clone(),
            application_name: settings.get("application_name").unwrap_or_default(),
            client: identity.client,
            backend_start: identity.started,
            xact_start: None,
            query_start: None,
            state_change: Utc::now(),
            state: "idle",
            query: String::new(),
        });
        let mut session = Session {
            engine,
            state,
            info,
            settings,
            scope_key: String::new(),
            search_path: Vec::new(),
            output: Arc::new(Output::default()),
            block: None,
            cursors: BTreeMap::new(),
            reported: BTreeMap::new(),
            reported_generation: 0,
            notices: Vec::new(),
            activity,
            ended_block: false,
            statement_started: None,
            received: Utc::now(),
        };
        session.settings_changed();
        session.reported = session.settings.reported().into_iter().collect();
        session.reported_generation = session.settings.generation();
        Ok(session)
    }

    /// The settings of a startup packet's parameters (user, database,
    /// `options` and settings), validated as PostgreSQL validates them.
    pub fn startup_settings(
        engine: &Engine,
        parameters: &std::collections::HashMap<String, String>,
    ) -> Result<Settings, PgError> {
        let mut settings = Settings::new(Arc::clone(&engine.server));
        settings.apply_startup(parameters.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        if let Some(user) = parameters.get("user") {
            settings.set_session_authorization(user);
        }
        Ok(settings)
    }

    pub fn identity(&self) -> &Identity {
        &self.info.identity
    }

    /// The settings reported at startup, in ParameterStatus.
    pub fn reported_settings(&self) -> &BTreeMap<&'static str, String> {
        &self.reported
    }

    pub fn status(&self) -> TransactionStatus {
        match &self.block {
            None => TransactionStatus::Idle,
            Some(block) if block.failed => TransactionStatus::Failed,
            Some(_) => TransactionStatus::InBlock,
        }
    }

    /// How values are printed for this session.
    pub fn output(&self) -> Arc<Output> {
        Arc::clone(&self.output)
    }

    /// `statement_timeout`, when set.
    pub fn statement_timeout(&self) -> Option<Duration> {
        positive_millis(self.settings.integer("statement_timeout"))
    }

    /// How long the session may wait for the client's next statement:
    /// `idle_in_transaction_session_timeout` inside a block,
    /// `idle_session_timeout` outside; with the error that ends it.
    pub fn idle_timeout(&self) -> Option<(Duration, PgError)> {
        if self.block.is_some() {
            let timeout =
                positive_millis(self.settings.integer("idle_in_transaction_session_timeout"))?;
            Some((
                timeout,
                PgError::new(
                    sqlstate::IDLE_IN_TRANSACTION_TIMEOUT,
                    "terminating connection due to idle-in-transaction timeout",
                )
                .into_fatal(),
            ))
        } else {
            let timeout = positive_millis(self.settings.integer("idle_session_timeout"))?;
            Some((
                timeout,
                PgError::new(
                    sqlstate::IDLE_SESSION_TIMEOUT,
                    "terminating connection due to idle-session timeout",
                )
                .into_fatal(),
            ))
        }
    }

    fn plan_context(&self) -> PlanContext<'_> {
        PlanContext {
            state: &self.state,
            scope_key: &self.scope_key,
            names: NameScope {
                database: &self.info.identity.database,
                search_path: &self.search_path,
                user: &self.info.identity.user,
                catalog: self.catalog(),
            },
        }
    }

    fn catalog(&self) -> &dyn datafusion::catalog::CatalogProvider {
        // The catalog is registered before any session exists.
        self.engine.catalog.as_ref()
    }

    /// Prepares the one statement of `sql` (a Parse message); `None` for an
    /// empty string.
    pub async fn prepare(&mut self, sql: &str) -> Result<Option<Prepared>, PgError> {
        let prepared = self
            .engine
            .planner
            .prepare_single(&self.plan_context(), sql)
            .await;
        let prepared = match prepared {
            Err(refusal) => Some(self.forward(sql, refusal).await?),
            Ok(prepared) => prepared,
        };
        if prepared.is_some() {
            return Ok(prepared);
        }
        match super::statement::split_statements(sql).len() {
            0 => Ok(None),
            _ => Err(PgError::new(
                sqlstate::SYNTAX_ERROR,
                "cannot insert multiple commands into a prepared statement",
            )),
        }
    }

    /// Prepares a simple-protocol query string.
    pub async fn prepare_simple(&mut self, sql: &str) -> Result<SimpleQuery, PgError> {
        let prepared = self
            .engine
            .planner
            .prepare_simple(&self.plan_context(), sql)
            .await;
        match prepared {
            Ok(Some(one)) => return Ok(SimpleQuery::One(one)),
            Ok(None) => {}
            Err(refusal) => {
                return Ok(SimpleQuery::One(SimpleStatement {
                    prepared: self.forward(sql, refusal).await?,
                    params: None,
                }));
            }
        }
        // As PostgreSQL does, a syntax error anywhere stops the whole string
        // before any of it runs.
        let pieces = super::statement::split_statements(sql);
        for piece in &pieces {
            self.engine.planner.check_syntax(piece)?;
        }
        Ok(SimpleQuery::Many(
            pieces.into_iter().map(str::to_owned).collect(),
        ))
    }

    /// Prepares one statement of a multi-statement query string.
    pub async fn prepare_piece(&mut self, sql: &str) -> Result<SimpleStatement, PgError> {
        let prepared = self
            .engine
            .planner
            .prepare_simple(&self.plan_context(), sql)
            .await;
        let prepared = match prepared {
            Err(refusal) => Some(SimpleStatement {
                prepared: self.forward(sql, refusal).await?,
                params: None,
            }),
            Ok(prepared) => prepared,
        };
        prepared.ok_or_else(|| {
            PgError::new(
                sqlstate::SYNTAX_ERROR,
                format!("cannot run \"{sql}\" as one statement"),
            )
        })
    }

    /// `refusal`'s statement, answered by its PostgreSQL source when
    /// `runtime.query.unsupported: source` allows it; else `refusal`.
    async fn forward(&mut self, sql: &str, refusal: PgError) -> Result<Prepared, PgError> {
        let forwarder = &self.engine.forwarder;
        if !forwarder.takes(&refusal) {
            return Err(refusal);
        }
        let context = self.plan_context();
        match forwarder
            .prepare(sql, &context.names, &self.engine.registry, &refusal)
            .await?
        {
            Some(query) => {
                tracing::info!(refusal = %refusal.message, "query forwarded to its source");
                metrics::query_forwarded("feature_not_supported");
                Ok(Prepared::Forwarded(query))
            }
            None => Err(refusal),
        }
    }

    /// Refuses a statement in a failed transaction block, as PostgreSQL does
    /// until the block ends.
    pub fn admit(&self, prepared: &Prepared) -> Result<(), PgError> {
        let failed = self.block.as_ref().is_some_and(|block| block.failed);
        if failed
            && !prepared
                .command()
                .is_some_and(Command::ends_failed_transaction)
        {
            return Err(PgError::new(
                sqlstate::IN_FAILED_SQL_TRANSACTION,
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        Ok(())
    }

    /// A Query or Execute message arrived: the statements it runs start now.
    pub fn message_received(&mut self) {
        self.received = Utc::now();
    }

    /// `now()` from here to the end of the transaction: when the message
    /// that starts it arrived, as in PostgreSQL.
    fn mark_transaction_start(&mut self) {
        self.state.mark_start_execution();
        self.state.execution_props_mut().query_execution_start_time = Some(self.received);
    }

    /// Marks the start of a statement: `now()` is the statement's start
    /// outside a block and the block's start inside one, as in PostgreSQL;
    /// and `pg_stat_activity` shows it.
    pub fn begin_statement(&mut self, sql: &str) {
        self.statement_started = Some(std::time::Instant::now());
        let now = Utc::now();
        let in_block = self.block.is_some();
        if !in_block {
            self.mark_transaction_start();
        }
        self.activity.update(|backend| {
            backend.state = "active";
            backend.query = sql.to_owned();
            backend.query_start = Some(now);
            backend.state_change = now;
            if !in_block || backend.xact_start.is_none() {
                backend.xact_start = Some(now);
            }
        });
    }

    /// A statement failed: a transaction block it ran in is now failed.
    pub fn statement_failed(&mut self) {
        if let Some(started) = self.statement_started.take() {
            metrics::statement_ended(started.elapsed(), false);
        }
        match &mut self.block {
            Some(block) => block.failed = true,
            None if !self.ended_block => self.activity.transaction_ended(false),
            None => {}
        }
        self.ended_block = false;
        self.info
            .set_requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.update_activity_state();
    }

    /// A statement completed: applies what its `set_config()` calls asked.
    pub fn statement_done(&mut self) {
        if let Some(started) = self.statement_started.take() {
            metrics::statement_ended(started.elapsed(), true);
        }
        let requests: Vec<(String, String, bool)> = self
            .info
            .set_requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        for (name, value, local) in requests {
            let scope = if local { Scope::Local } else { Scope::Session };
            if let Ok(notices) = self.set(&name, Some(&value), scope) {
                self.notices.extend(notices);
            }
        }
        if self.block.is_none() && !self.ended_block {
            self.activity.transaction_ended(true);
        }
        self.ended_block = false;
        self.update_activity_state();
    }

    fn update_activity_state(&self) {
        let state = match self.status() {
            TransactionStatus::Idle => "idle",
            TransactionStatus::InBlock => "idle in transaction",
            TransactionStatus::Failed => "idle in transaction (aborted)",
        };
        let idle = self.block.is_none();
        let application_name = self.settings.get("application_name").unwrap_or_default();
        self.activity.update(|backend| {
            backend.state = state;
            backend.state_change = Utc::now();
            backend.application_name = application_name;
            if idle {
                backend.xact_start = None;
            }
        });
    }

    /// Notices owed to the client, those below `client_min_messages` left out.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        let minimum = match self.settings.get("client_min_messages").as_deref() {
            Ok("warning" | "error") => NoticeLevel::Warning,
            _ => NoticeLevel::Notice,
        };
        let mut notices = std::mem::take(&mut self.notices);
        notices.retain(|notice| notice.level >= minimum);
        notices
    }

    /// Reported settings whose value changed since the client last heard.
    pub fn parameter_changes(&mut self) -> Vec<(&'static str, String)> {
        let mut changes = Vec::new();
        if self.settings.generation() == self.reported_generation {
            return changes;
        }
        self.reported_generation = self.settings.generation();
        for (name, value) in self.settings.reported() {
            if self.reported.get(name) != Some(&value) {
                self.reported.insert(name, value.clone());
                changes.push((name, value));
            }
        }
        changes
    }

    /// Runs a prepared statement.
    pub async fn execute(
        &mut self,
        prepared: &Prepared,
        params: Option<&ParamValues>,
    ) -> Result<Outcome, PgError> {
        match prepared {
            Prepared::Query(query) => Ok(Outcome::Rows {
                source: self.run_query(query, params).await?,
                verb: "SELECT",
                binary: false,
            }),
            Prepared::Command(command) => Box::pin(self.run_command(command)).await,
            Prepared::Forwarded(query) => Ok(Outcome::Rows {
                source: query.run(params, &self.info.settings()).await?,
                verb: "SELECT",
                binary: false,
            }),
        }
    }

    /// The versions a statement reads: its transaction's, or its own.
    fn statement_pins(&mut self) -> Arc<Pins> {
        match &mut self.block {
            Some(block) => {
                block.queried = true;
                Arc::clone(&block.pins)
            }
            None => Arc::new(Pins::default()),
        }
    }

    async fn run_query(
        &mut self,
        query: &PlannedQuery,
        params: Option<&ParamValues>,
    ) -> Result<RowSource, PgError> {
        let pins = self.statement_pins();
        if let Some(direct) = &query.direct
            && let Some(batch) = direct
                .execute(params, Some(&pins))
                .map_err(sqlstate::from_datafusion)?
        {
            if direct.is_lookup() {
                metrics::index_lookup();
            }
            return Ok(RowSource::from_batches(query.schema(), vec![batch]));
        }
        let seconds = functions::sleep_seconds(&query.plan);
        if seconds > 0.0 {
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
        }
        let plan = match params {
            Some(params) => query
                .plan
                .clone()
                .replace_params_with_values(params)
                .map_err(sqlstate::from_datafusion)?,
            None => query.plan.clone(),
        };
        self.info.pins.store(Some(pins));
        let physical = Box::pin(self.state.create_physical_plan(&plan)).await;
        self.info.pins.store(None);
        let physical = in_one_ordered_stream(physical.map_err(sqlstate::from_datafusion)?);
        // The described schema: the same columns, with where they come from.
        let schema = if query.schema.fields().len() == physical.schema().fields().len() {
            query.schema()
        } else {
            physical.schema()
        };
        let stream = match union_branches(&physical) {
            Some(partitions) => in_branch_order(physical, partitions, self.state.task_ctx()),
            None => execute_stream(physical, self.state.task_ctx()),
        }
        .map_err(sqlstate::from_datafusion)?
        .map(|batch| batch.map_err(sqlstate::from_datafusion));
        Ok(RowSource::new(schema, Box::pin(stream)))
    }

    async fn run_command(&mut self, command: &Command) -> Result<Outcome, PgError> {
        if let Some(error) = command.refusal() {
            return Err(self.explain_refusal(command, error));
        }
        let outcome = self.command_outcome(command).await;
        self.publish_cursors();
        outcome
    }

    /// A write to a dataset that follows snapshots says so: its rows change
    /// only when its writer publishes a newer snapshot.
    fn explain_refusal(&self, command: &Command, error: PgError) -> PgError {
        let Command::ReadOnly {
            table: Some(table), ..
        } = command
        else {
            return error;
        };
        let name = table.replace('"', "");
        // A dataset named without a schema lands in `public`.
        let bare = |name: &str| name.strip_prefix("public.").map(str::to_owned);
        let registry = &self.engine.registry;
        let dataset = [
            Some(name.clone()),
            Some(name.to_lowercase()),
            bare(&name),
            bare(&name.to_lowercase()),
        ]
        .into_iter()
        .flatten()
        .find_map(|candidate| registry.get(&candidate));
        match dataset {
            Some(dataset)
                if dataset.config.acceleration.refresh_mode
                    == crate::config::RefreshMode::Snapshot =>
            {
                error.with_detail(format!(
                    "Dataset '{}' is driven by snapshots (refresh_mode: snapshot): its rows change only when its writer publishes a newer snapshot.",
                    dataset.name()
                ))
            }
            _ => error,
        }
    }

    /// Shows the open cursors in `pg_cursors`.
    fn publish_cursors(&self) {
        let rows = self
            .cursors
            .values()
            .map(|cursor| CursorRow {
                name: cursor.name.clone(),
                statement: cursor.statement.clone(),
                holdable: cursor.hold,
                binary: cursor.binary,
                scrollable: cursor.scroll,
                created: cursor.created,
            })
            .collect();
        *self.info.cursors.lock().unwrap_or_else(|e| e.into_inner()) = rows;
    }

    async fn command_outcome(&mut self, command: &Command) -> Result<Outcome, PgError> {
        Ok(match command {
            Command::Query => unreachable!("queries are planned, not run as commands"),
            Command::Begin(modes) => self.begin(modes)?,
            Command::Commit => self.commit(),
            Command::Rollback => self.rollback(),
            Command::RollbackTo(name) => self.rollback_to(name)?,
            Command::Savepoint(name) => self.savepoint(name)?,
            Command::Release(name) => self.release(name)?,
            Command::Set { name, value, scope } => {
                self.set_command(name, value.as_deref(), *scope)?
            }
            Command::SetTransaction { modes, session } => self.set_transaction(modes, *session)?,
            Command::Reset(name) => {
                match name {
                    Some(name) => {
                        self.set(name, None, Scope::Session)?;
                    }
                    None => {
                        self.settings.reset_all();
                        self.settings_changed();
                    }
                }
                Outcome::Done("RESET".to_owned())
            }
            Command::Show(name) => self.show(name)?,
            Command::Discard(tag) => self.discard(tag)?,
            Command::Declare(declare) => self.declare(declare).await?,
            Command::Fetch {
                cursor,
                motion,
                move_only,
            } => self.fetch(cursor, *motion, *move_only).await?,
            Command::Close(name) => self.close(name.as_deref())?,
            Command::Copy(copy) => {
                let query = copy_query(&copy.source)?;
                let source = self.run_carried_query(query).await?;
                check_force_quote(&copy.options, source.schema())?;
                Outcome::Copy {
                    source,
                    options: copy.options.clone(),
                }
            }
            Command::Deallocate(name) => Outcome::Deallocate(name.clone()),
            Command::Unlisten => Outcome::Done("UNLISTEN".to_owned()),
            Command::ReadOnly { .. } | Command::Unsupported { .. } => {
                unreachable!("refused above")
            }
        })
    }

    /// Plans and runs a query a command carries.
    async fn run_carried_query(&mut self, query: Query) -> Result<RowSource, PgError> {
        let planned = self
            .engine
            .planner
            .plan_query(&self.plan_context(), Statement::Query(Box::new(query)))
            .await?;
        self.run_query(&planned, None).await
    }

    fn begin(&mut self, modes: &TransactionModes) -> Result<Outcome, PgError> {
        if self.block.is_some() {
            self.notices.push(Notice::warning(
                sqlstate::ACTIVE_SQL_TRANSACTION,
                "there is already a transaction in progress",
            ));
            return Ok(Outcome::Done("BEGIN".to_owned()));
        }
        self.block = Some(Block {
            failed: false,
            queried: false,
            savepoints: Vec::new(),
            begin: self.settings.snapshot(),
            pins: Arc::new(Pins::default()),
        });
        self.apply_modes(modes, Scope::Local)?;
        self.mark_transaction_start();
        self.activity
            .update(|backend| backend.xact_start = Some(Utc::now()));
        Ok(Outcome::Done("BEGIN".to_owned()))
    }

    fn apply_modes(&mut self, modes: &TransactionModes, scope: Scope) -> Result<(), PgError> {
        let prefix = if scope == Scope::Session {
            "default_"
        } else {
            ""
        };
        if let Some(isolation) = modes.isolation {
            self.set(
                &format!("{prefix}transaction_isolation"),
                Some(isolation),
                scope,
            )?;
        }
        // Read-write is accepted and changes nothing: every transaction on
        // a read replica is read-only, and writes inside it still get 25006.
        Ok(())
    }

    fn commit(&mut self) -> Outcome {
        let Some(block) = self.block.take() else {
            self.no_transaction_warning();
            return Outcome::Done("COMMIT".to_owned());
        };
        if block.failed {
            self.end_block(block, false);
            return Outcome::Done("ROLLBACK".to_owned());
        }
        self.end_block(block, true);
        Outcome::Done("COMMIT".to_owned())
    }

    fn rollback(&mut self) -> Outcome {
        match self.block.take() {
            Some(block) => self.end_block(block, false),
            None => self.no_transaction_warning(),
        }
        Outcome::Done("ROLLBACK".to_owned())
    }

    fn no_transaction_warning(&mut self) {
        self.notices.push(Notice::warning(
            sqlstate::NO_ACTIVE_SQL_TRANSACTION,
            "there is no transaction in progress",
        ));
    }

    fn end_block(&mut self, block: Block, committed: bool) {
        self.activity.transaction_ended(committed);
        self.ended_block = true;
        if committed {
            self.settings.end_transaction();
            // Holdable cursors outlive the transaction; the rest close.
            self.cursors.retain(|_, cursor| cursor.hold);
            for cursor in self.cursors.values_mut() {
                cursor.savepoint_depth = 0;
                cursor.in_block = false;
            }
        } else {
            self.settings.restore(block.begin);
            self.cursors.retain(|_, cursor| !cursor.in_block);
        }
        self.settings_changed();
    }

    fn block_for(&mut self, command: &str) -> Result<&mut Block, PgError> {
        self.block.as_mut().ok_or_else(|| {
            PgError::new(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                format!("{command} can only be used in transaction blocks"),
            )
        })
    }

    fn savepoint(&mut self, name: &str) -> Result<Outcome, PgError> {
        let snapshot = self.settings.snapshot();
        let block = self.block_for("SAVEPOINT")?;
        block.savepoints.push((name.to_owned(), snapshot));
        Ok(Outcome::Done("SAVEPOINT".to_owned()))
    }

    fn find_savepoint(block: &Block, name: &str) -> Result<usize, PgError> {
        block
            .savepoints
            .iter()
            .rposition(|(saved, _)| saved == name)
            .ok_or_else(|| {
                PgError::new(
                    sqlstate::INVALID_SAVEPOINT,
                    format!("savepoint \"{name}\" does not exist"),
                )
            })
    }

    fn release(&mut self, name: &str) -> Result<Outcome, PgError> {
        let block = self.block_for("RELEASE SAVEPOINT")?;
        let index = Self::find_savepoint(block, name)?;
        block.savepoints.truncate(index);
        Ok(Outcome::Done("RELEASE".to_owned()))
    }

    fn rollback_to(&mut self, name: &str) -> Result<Outcome, PgError> {
        let block = self.block_for("ROLLBACK TO SAVEPOINT")?;
        let index = Self::find_savepoint(block, name)?;
        block.savepoints.truncate(index + 1);
        block.failed = false;
        let snapshot = block.savepoints[index].1.clone();
        self.settings.restore(snapshot);
        // Cursors declared after the savepoint are gone with it.
        self.cursors
            .retain(|_, cursor| !cursor.in_block || cursor.savepoint_depth <= index);
        self.settings_changed();
        Ok(Outcome::Done("ROLLBACK".to_owned()))
    }

    fn set_command(
        &mut self,
        name: &str,
        value: Option<&str>,
        scope: Scope,
    ) -> Result<Outcome, PgError> {
        let key = name.to_lowercase();
        if scope == Scope::Local && self.block.is_none() {
            self.notices.push(Notice::warning(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                "SET LOCAL can only be used in transaction blocks",
            ));
            return Ok(Outcome::Done("SET".to_owned()));
        }
        if matches!(
            key.as_str(),
            "transaction_isolation" | "transaction_deferrable"
        ) {
            let Some(block) = &self.block else {
                self.notices.push(Notice::warning(
                    sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                    "SET TRANSACTION can only be used in transaction blocks",
                ));
                return Ok(Outcome::Done("SET".to_owned()));
            };
            if block.queried {
                return Err(PgError::new(
                    sqlstate::ACTIVE_SQL_TRANSACTION,
                    "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                ));
            }
            self.set(name, value, Scope::Local)?;
            return Ok(Outcome::Done("SET".to_owned()));
        }
        let notices = self.set(name, value, scope)?;
        self.notices.extend(notices);
        Ok(Outcome::Done("SET".to_owned()))
    }

    fn set_transaction(
        &mut self,
        modes: &TransactionModes,
        session: bool,
    ) -> Result<Outcome, PgError> {
        if session {
            self.apply_modes(modes, Scope::Session)?;
            return Ok(Outcome::Done("SET".to_owned()));
        }
        match &self.block {
            None => self.notices.push(Notice::warning(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                "SET TRANSACTION can only be used in transaction blocks",
            )),
            Some(block) if block.queried && modes.isolation.is_some() => {
                return Err(PgError::new(
                    sqlstate::ACTIVE_SQL_TRANSACTION,
                    "SET TRANSACTION ISOLATION LEVEL must be called before any query",
                ));
            }
            Some(_) => self.apply_modes(modes, Scope::Local)?,
        }
        Ok(Outcome::Done("SET".to_owned()))
    }

    /// Changes a setting and brings everything that depends on it up to
    /// date.
    fn set(
        &mut self,
        name: &str,
        value: Option<&str>,
        scope: Scope,
    ) -> Result<Vec<Notice>, PgError> {
        let notices = self.settings.set(name, value, scope)?;
        self.settings_changed();
        Ok(notices)
    }

    fn settings_changed(&mut self) {
        self.info.settings.store(Arc::new(self.settings.clone()));
        let output = self.settings.output();
        let zone = Some(output.zone.engine_name());
        let zone_changed = self.state.config().options().execution.time_zone != zone;
        if zone_changed {
            self.state.config_mut().options_mut().execution.time_zone = zone;
        }
        // The functions of a statement read the options current when it runs.
        self.state.execution_props_mut().config_options =
            Some(Arc::clone(self.state.config().options()));
        if *self.output != output {
            self.output = Arc::new(output);
        }
        // A plan depends on the time zone too: a timestamp read as a
        // timestamptz, or a timestamptz as a date, is read on the session
        // zone's clock when the statement is planned.
        let search_path = self.settings.search_path();
        if search_path != self.search_path || zone_changed || self.scope_key.is_empty() {
            self.scope_key = format!(
                "{}\u{0}{}\u{0}{}\u{0}{}",
                self.info.identity.database,
                self.info.identity.user,
                search_path.join(","),
                self.state
                    .config()
                    .options()
                    .execution
                    .time_zone
                    .as_deref()
                    .unwrap_or_default()
            );
            self.search_path = search_path;
        }
    }

    fn show(&self, name: &str) -> Result<Outcome, PgError> {
        let (schema, columns): (SchemaRef, Vec<Vec<String>>) = if name == "all" {
            let rows = self.settings.show_all();
            let schema = text_schema(&["name", "setting", "description"]);
            let mut columns = vec![Vec::new(), Vec::new(), Vec::new()];
            for (name, value, description) in rows {
                columns[0].push(name);
                columns[1].push(value);
                columns[2].push(description);
            }
            (schema, columns)
        } else {
            let (column, value) = self.settings.show(name)?;
            (text_schema(&[column.as_str()]), vec![vec![value]])
        };
        let arrays = columns
            .into_iter()
            .map(|values| Arc::new(StringArray::from(values)) as _)
            .collect();
        let batch = RecordBatch::try_new(Arc::clone(&schema), arrays)
            .map_err(|e| PgError::new(sqlstate::INTERNAL_ERROR, e.to_string()))?;
        Ok(Outcome::Rows {
            source: RowSource::from_batches(schema, vec![batch]),
            verb: "SHOW",
            binary: false,
        })
    }

    fn discard(&mut self, tag: &str) -> Result<Outcome, PgError> {
        if tag != "DISCARD ALL" {
            return Ok(Outcome::Done(tag.to_owned()));
        }
        if self.block.is_some() {
            return Err(PgError::new(
                sqlstate::ACTIVE_SQL_TRANSACTION,
                "DISCARD ALL cannot run inside a transaction block",
            ));
        }
        self.settings.reset_all();
        self.settings_changed();
        self.cursors.clear();
        Ok(Outcome::DiscardAll)
    }

    async fn declare(&mut self, declare: &Declare) -> Result<Outcome, PgError> {
        if !declare.hold && self.block.is_none() {
            return Err(PgError::new(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        if self.cursors.contains_key(&declare.name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_CURSOR,
                format!("cursor \"{}\" already exists", declare.name),
            ));
        }
        let source = self.run_carried_query(declare.query.clone()).await?;
        let depth = self
            .block
            .as_ref()
            .map_or(0, |block| block.savepoints.len());
        let mut cursor = Cursor::new(
            declare.name.clone(),
            format!("DECLARE {} CURSOR FOR {}", declare.name, declare.query),
            source,
            declare.binary,
            declare.scroll == Some(true),
            declare.hold,
            depth,
        );
        cursor.in_block = self.block.is_some();
        self.cursors.insert(declare.name.clone(), cursor);
        Ok(Outcome::Done("DECLARE CURSOR".to_owned()))
    }

    async fn fetch(
        &mut self,
        name: &str,
        motion: Motion,
        move_only: bool,
    ) -> Result<Outcome, PgError> {
        let cursor = self.cursors.get_mut(name).ok_or_else(|| {
            PgError::new(
                sqlstate::INVALID_CURSOR_NAME,
                format!("cursor \"{name}\" does not exist"),
            )
        })?;
        let (batches, count) = cursor.fetch(motion, !move_only).await?;
        if move_only {
            return Ok(Outcome::Done(format!("MOVE {count}")));
        }
        Ok(Outcome::Fetched {
            source: RowSource::from_batches(Arc::clone(cursor.schema()), batches),
            tag: format!("FETCH {count}"),
            binary: cursor.binary,
        })
    }

    fn close(&mut self, name: Option<&str>) -> Result<Outcome, PgError> {
        let Some(name) = name else {
            self.cursors.clear();
            return Ok(Outcome::Done("CLOSE CURSOR ALL".to_owned()));
        };
        self.cursors.remove(name).ok_or_else(|| {
            PgError::new(
                sqlstate::INVALID_CURSOR_NAME,
                format!("cursor \"{name}\" does not exist"),
            )
        })?;
        Ok(Outcome::Done("CLOSE CURSOR".to_owned()))
    }

    /// The columns a prepared statement returns, for Describe; `None` for
    /// a statement that returns no rows.
    pub fn describe(&self, prepared: &Prepared) -> Option<SchemaRef> {
        match prepared {
            Prepared::Query(query) => Some(query.schema()),
            Prepared::Forwarded(query) => Some(query.schema()),
            Prepared::Command(command) => match command.as_ref() {
                Command::Show(name) if name == "all" => {
                    Some(text_schema(&["name", "setting", "description"]))
                }
                Command::Show(name) => {
                    let (column, _) = self.settings.show(name).ok()?;
                    Some(text_schema(&[column.as_str()]))
                }
                Command::Fetch {
                    cursor,
                    move_only: false,
                    ..
                } => self.cursors.get(cursor).map(|c| Arc::clone(c.schema())),
                _ => None,
            },
        }
    }

    /// The open cursors, for `pg_cursors`.
    /// Whether a cursor of this name was declared (and not closed).
    pub fn has_cursor(&self, name: &str) -> bool {
        self.cursors.contains_key(name)
    }

    pub fn cursors(&self) -> impl Iterator<Item = &Cursor> {
        self.cursors.values()
    }
}

/// The engine's runtime with a memory pool of the connection's own, so that
/// one connection's large join fails with 53200 (or its sort spills to disk)
/// without taking the memory of the others. A connection runs one query at
/// a time, so this is the limit of each query.
fn memory_limited(
    engine: &Engine,
) -> Result<Arc<datafusion::execution::runtime_env::RuntimeEnv>, PgError> {
    use datafusion::execution::memory_pool::{GreedyMemoryPool, TrackConsumersPool};
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    // The largest consumers are named in the error.
    let pool = TrackConsumersPool::new(
        GreedyMemoryPool::new(engine.memory_limit),
        std::num::NonZeroUsize::new(3).unwrap_or(std::num::NonZeroUsize::MIN),
    );
    RuntimeEnvBuilder::from_runtime_env(engine.base.runtime_env())
        .with_memory_pool(Arc::new(pool))
        .build_arc()
        .map_err(sqlstate::from_datafusion)
}

fn positive_millis(millis: i64) -> Option<Duration> {
    (millis > 0).then(|| Duration::from_millis(millis as u64))
}

fn text_schema(names: &[&str]) -> SchemaRef {
    Arc::new(Schema::new(
        names
            .iter()
            .map(|name| Field::new(*name, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    ))
}

/// `COPY table (columns) TO` as the query it stands for.
fn copy_query(source: &CopyFrom) -> Result<Query, PgError> {
    let sql = match source {
        CopyFrom::Query(query) => return Ok(query.as_ref().clone()),
        CopyFrom::Table { name, columns } if columns.is_empty() => {
            format!("SELECT * FROM {name}")
        }
        CopyFrom::Table { name, columns } => {
            let columns: Vec<String> = columns
                .iter()
                .map(|c| super::statement::quote_identifier(c))
                .collect();
            format!("SELECT {} FROM {name}", columns.join(", "))
        }
    };
    let mut statements = datafusion::sql::sqlparser::parser::Parser::parse_sql(
        &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
        &sql,
    )
    .map_err(|e| sqlstate::syntax(&sql, &e.to_string()))?;
    match statements.pop() {
        Some(Statement::Query(query)) => Ok(*query),
        _ => Err(PgError::new(
            sqlstate::SYNTAX_ERROR,
            "COPY needs a table or a query",
        )),
    }
}

/// `FORCE_QUOTE` names columns of the result.
fn check_force_quote(options: &CopyOptions, schema: &SchemaRef) -> Result<(), PgError> {
    for column in options.force_quote.iter().flatten() {
        if schema.field_with_name(column).is_err() {
            return Err(PgError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{column}\" does not exist"),
            ));
        }
    }
    Ok(())
}

/// The output partitions of `plan` when it is a `UNION ALL` (under
/// projections) whose rows come from more than one partition.
fn union_branches(plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> Option<usize> {
    use datafusion::physical_plan::ExecutionPlanProperties;
    use datafusion::physical_plan::projection::ProjectionExec;
    use datafusion::physical_plan::union::UnionExec;
    let mut node = plan;
    while let Some(projection) = node.downcast_ref::<ProjectionExec>() {
        node = projection.input();
    }
    let partitions = plan.output_partitioning().partition_count();
    (node.downcast_ref::<UnionExec>().is_some() && partitions > 1).then_some(partitions)
}

/// A `UNION ALL` without `ORDER BY` read branch after branch, as
/// PostgreSQL's Append gives it (a report's total row, its last branch,
/// comes last); DataFusion would interleave the branches' partitions as
/// they finish. Every partition runs at once into a buffer of a few
/// batches, and the buffers are read in the partitions' order (a union's
/// are its branches' in turn). A partition stops when its rows are no
/// longer wanted.
fn in_branch_order(
    plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    partitions: usize,
    context: Arc<datafusion::execution::TaskContext>,
) -> datafusion::common::Result<datafusion::execution::SendableRecordBatchStream> {
    use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
    const BUFFERED_BATCHES: usize = 2;
    let schema = plan.schema();
    let mut receivers = Vec::with_capacity(partitions);
    for partition in 0..partitions {
        let mut stream = plan.execute(partition, Arc::clone(&context))?;
        let (sender, receiver) = tokio::sync::mpsc::channel(BUFFERED_BATCHES);
        tokio::spawn(async move {
            while let Some(batch) = stream.next().await {
                let failed = batch.is_err();
                if sender.send(batch).await.is_err() || failed {
                    break;
                }
            }
        });
        receivers.push(receiver);
    }
    let batches = futures::stream::iter(receivers)
        .flat_map(|mut receiver| futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)));
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, batches)))
}

/// `plan` as one stream in its order. DataFusion may spread the last
/// projections of a sorted query (printing numerics at their scales, say)
/// over round-robin partitions above the sort, where the order is lost:
/// those repartitions are taken out, and where several ordered streams
/// remain they are merged in their order.
fn in_one_ordered_stream(
    plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
    use datafusion::physical_plan::ExecutionPlanProperties;
    let plan = without_top_round_robin(plan);
    if plan.output_partitioning().partition_count() < 2 {
        return plan;
    }
    match plan.output_ordering().cloned() {
        Some(ordering) => Arc::new(
            datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec::new(
                ordering, plan,
            ),
        ),
        None => plan,
    }
}

/// `plan` without the round-robin repartitions among the projections at
/// its top.
fn without_top_round_robin(
    plan: Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> Arc<dyn datafusion::physical_plan::ExecutionPlan> {
    use datafusion::physical_plan::Partitioning;
    use datafusion::physical_plan::projection::ProjectionExec;
    use datafusion::physical_plan::repartition::RepartitionExec;
    if let Some(repartition) = plan.downcast_ref::<RepartitionExec>()
        && matches!(repartition.partitioning(), Partitioning::RoundRobinBatch(_))
    {
        return without_top_round_robin(Arc::clone(repartition.input()));
    }
    if plan.is::<ProjectionExec>()
        && let [child] = plan.children().as_slice()
    {
        let stripped = without_top_round_robin(Arc::clone(child));
        if !Arc::ptr_eq(&stripped, child) {
            return datafusion::physical_plan::execution_plan::replace_children_if_necessary(
                Arc::clone(&plan),
                vec![stripped],
            )
            .unwrap_or(plan);
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{AsArray, Int32Array};
    use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::datasource::memory::MemorySourceConfig;
    use datafusion::execution::TaskContext;
    use datafusion::physical_expr::expressions::col;
    use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
    use datafusion::physical_plan::projection::ProjectionExec;
    use datafusion::physical_plan::repartition::RepartitionExec;
    use datafusion::physical_plan::sorts::sort::SortExec;
    use datafusion::physical_plan::{ExecutionPlanProperties, Partitioning, collect};

    #[tokio::test]
    async fn a_sorted_plan_spread_over_partitions_at_its_top_comes_back_in_order() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        let batches: Vec<RecordBatch> = [vec![5, 3], vec![1, 4], vec![2, 6]]
            .into_iter()
            .map(|ids| {
                RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int32Array::from(ids))])
                    .unwrap()
            })
            .collect();
        let source =
            MemorySourceConfig::try_new_exec(&[batches], Arc::clone(&schema), None).unwrap();
        let id = col("id", &schema).unwrap();
        let ordering =
            LexOrdering::new(vec![PhysicalSortExpr::new_default(Arc::clone(&id))]).unwrap();
        let sorted = Arc::new(SortExec::new(ordering, source).with_fetch(None));
        // What DataFusion's optimizer may leave: the last projection spread
        // round-robin over partitions above the sort.
        let spread =
            Arc::new(RepartitionExec::try_new(sorted, Partitioning::RoundRobinBatch(2)).unwrap());
        let projection: Arc<dyn datafusion::physical_plan::ExecutionPlan> =
            Arc::new(ProjectionExec::try_new(vec![(id, "id".to_owned())], spread).unwrap());
        assert_eq!(projection.output_partitioning().partition_count(), 2);

        let plan = super::in_one_ordered_stream(projection);
        assert_eq!(plan.output_partitioning().partition_count(), 1);
        let ids: Vec<i32> = collect(plan, Arc::new(TaskContext::default()))
            .await
            .unwrap()
            .iter()
            .flat_map(|batch| {
                batch
                    .column(0)
                    .as_primitive::<Int32Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    }
}
