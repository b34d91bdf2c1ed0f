//! One client's conversation after startup: the simple and extended query
//! protocols over a [`Session`], in PostgreSQL's terms — named statements
//! and portals, row limits and `PortalSuspended`, skipping to `Sync` after
//! an error, notices and ParameterStatus before `ReadyForQuery`, `COPY`
//! out, cancel requests and `statement_timeout` (57014).
//!
//! The session decides what a statement means; this file only speaks the
//! protocol.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::common::metadata::ScalarAndMetadata;
use datafusion::common::{ParamValues, ScalarValue};
use futures::{FutureExt, SinkExt};
use pgwire::api::Type;
use pgwire::error::ErrorInfo;
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::data::{NoData, ParameterDescription, RowDescription};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    PortalSuspended, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{
    CommandComplete, EmptyQueryResponse, NoticeResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::startup::ParameterStatus;
use tokio::time::Instant;

use super::cancel::QueryCancel;
use super::connection::Connection;
use super::copy::{self, CopyFraming};
use super::encode::RowEncoding;
use super::params;
use crate::metrics;
use crate::query::cursor::RowSource;
use crate::query::statement::{Command, CopyFormat, CopyOptions, Motion};
use crate::query::{
    Notice, Outcome, PgError, Prepared, Session, SimpleQuery, TransactionStatus as Status,
    display_name, sqlstate,
};

/// The FATAL error a client gets for a statement that panicked.
fn panicked(panic: &Box<dyn std::any::Any + Send>) -> PgError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".to_owned());
    tracing::error!("a statement panicked: {what}");
    PgError::new(sqlstate::INTERNAL_ERROR, format!("internal error: {what}")).into_fatal()
}

/// Why a step stopped: the client gets an error, or the connection is gone.
pub enum Failure {
    Client(PgError),
    Io(io::Error),
}

impl From<PgError> for Failure {
    fn from(error: PgError) -> Self {
        Failure::Client(error)
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Failure::Io(error)
    }
}

impl From<pgwire::error::PgWireError> for Failure {
    fn from(error: pgwire::error::PgWireError) -> Self {
        let info = ErrorInfo::from(error);
        Failure::Client(PgError::new(&info.code, info.message))
    }
}

type Step<T> = Result<T, Failure>;

/// A row encoding with the result formats and schema it was made for.
type CachedEncoding = (Vec<i16>, SchemaRef, Arc<RowEncoding>);

/// A statement prepared by Parse.
struct NamedStatement {
    sql: String,
    /// `None` for an empty query string.
    prepared: Option<Prepared>,
    /// Parameter types as the client declared them in Parse.
    declared: Vec<Option<Type>>,
    /// Parameter types as reported in ParameterDescription.
    reported: Vec<Type>,
    /// The row encoding of the last execution, reused while the formats,
    /// the result schema and the session's output settings stay the same.
    encoding: Mutex<Option<CachedEncoding>>,
}

/// A portal made by Bind.
struct Portal {
    statement: Arc<NamedStatement>,
    params: Option<ParamValues>,
    formats: Vec<i16>,
    run: PortalRun,
}

enum PortalRun {
    NotStarted,
    Rows {
        source: RowSource,
        encoding: Arc<RowEncoding>,
        verb: &'static str,
    },
    Finished,
}

/// The protocol state of one connection.
pub struct Backend {
    pub connection: Connection,
    session: Session,
    statements: HashMap<String, Arc<NamedStatement>>,
    portals: HashMap<String, Portal>,
    /// After an error in an extended-protocol message, everything up to the
    /// next Sync is skipped.
    skip_until_sync: bool,
    cancel: Arc<QueryCancel>,
    /// A FATAL error was sent: the connection ends.
    ended: bool,
}

impl Backend {
    pub fn new(connection: Connection, session: Session, cancel: Arc<QueryCancel>) -> Self {
        Backend {
            connection,
            session,
            statements: HashMap::new(),
            portals: HashMap::new(),
            skip_until_sync: false,
            cancel,
            ended: false,
        }
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    async fn send(&mut self, message: PgWireBackendMessage) -> io::Result<()> {
        self.connection.feed(message).await
    }

    async fn send_error(&mut self, error: &PgError) -> io::Result<()> {
        metrics::query_failed(&error.code);
        self.ended |= error.fatal;
        self.send_notices().await?;
        self.send(PgWireBackendMessage::ErrorResponse(
            error_info(error).into(),
        ))
        .await
    }

    async fn send_notices(&mut self) -> io::Result<()> {
        for notice in self.session.take_notices() {
            self.send(PgWireBackendMessage::NoticeResponse(notice_response(
                &notice,
            )))
            .await?;
        }
        Ok(())
    }

    /// Notices, changed settings and ReadyForQuery with the transaction
    /// status.
    pub async fn ready_for_query(&mut self) -> io::Result<()> {
        self.send_notices().await?;
        for (name, value) in self.session.parameter_changes() {
            self.send(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                name.to_owned(),
                value,
            )))
            .await?;
        }
        let status = match self.session.status() {
            Status::Idle => TransactionStatus::Idle,
            Status::InBlock => TransactionStatus::Transaction,
            Status::Failed => TransactionStatus::Error,
        };
        self.send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
            status,
        )))
        .await
    }

    /// Runs `step` until it ends, a cancel request arrives, or
    /// `statement_timeout` passes, as PostgreSQL interrupts a statement.
    async fn interruptible<T>(
        cancel: &QueryCancel,
        timeout: Option<std::time::Duration>,
        step: impl Future<Output = Step<T>>,
    ) -> Step<T> {
        let token = cancel.start();
        let deadline = timeout.map(|timeout| Instant::now() + timeout);
        tokio::select! {
            biased;
            // A statement that panics ends its connection with FATAL XX000
            // (its session may be half-changed); the others go on.
            result = std::panic::AssertUnwindSafe(step).catch_unwind() => {
                result.unwrap_or_else(|panic| Err(Failure::Client(panicked(&panic))))
            }
            _ = token.cancelled() => Err(Failure::Client(if cancel.terminating() {
                sqlstate::admin_shutdown()
            } else {
                PgError::new(sqlstate::QUERY_CANCELED, "canceling statement due to user request")
            })),
            _ = sleep_until(deadline) => Err(Failure::Client(PgError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to statement timeout",
            ))),
        }
    }

    /// A simple-protocol query string: each statement in turn, stopping at
    /// the first error, then ReadyForQuery.
    pub async fn simple_query(&mut self, sql: &str) -> io::Result<()> {
        if sql
            .trim_matches(|c: char| c == ';' || c.is_whitespace())
            .is_empty()
        {
            self.send(PgWireBackendMessage::EmptyQueryResponse(
                EmptyQueryResponse::new(),
            ))
            .await?;
            return self.ready_for_query().await;
        }
        let timeout = self.session.statement_timeout();
        let cancel = Arc::clone(&self.cancel);
        let result = Self::interruptible(&cancel, timeout, Box::pin(self.run_simple(sql))).await;
        match result {
            Ok(()) => {}
            Err(Failure::Client(error)) => {
                self.session.statement_failed();
                self.send_error(&error).await?;
                if error.fatal {
                    // The connection ends here.
                    return Ok(());
                }
            }
            Err(Failure::Io(error)) => return Err(error),
        }
        self.ready_for_query().await
    }

    /// The handle that ends this connection's statements.
    pub fn cancel(&self) -> Arc<QueryCancel> {
        Arc::clone(&self.cancel)
    }

    /// Whether a FATAL error was sent (shutdown's 57P01, a statement that
    /// panicked): the connection ends.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Whether shutdown ends this connection's statements.
    pub fn terminating(&self) -> bool {
        self.cancel.terminating()
    }

    async fn run_simple(&mut self, sql: &str) -> Step<()> {
        self.session.message_received();
        match self.session.prepare_simple(sql).await? {
            SimpleQuery::One(one) => {
                self.session.admit(&one.prepared)?;
                self.run_simple_statement(sql, &one.prepared, one.params.as_ref())
                    .await
            }
            SimpleQuery::Many(pieces) => {
                for piece in pieces {
                    let one = self.session.prepare_piece(&piece).await?;
                    self.session.admit(&one.prepared)?;
                    self.run_simple_statement(&piece, &one.prepared, one.params.as_ref())
                        .await?;
                }
                Ok(())
            }
        }
    }

    async fn run_simple_statement(
        &mut self,
        sql: &str,
        prepared: &Prepared,
        params: Option<&ParamValues>,
    ) -> Step<()> {
        self.session.begin_statement(sql);
        let outcome = match self.portal_fetch(prepared).await {
            Some(outcome) => outcome,
            None => Box::pin(self.session.execute(prepared, params))
                .await
                .map_err(Into::into),
        };
        self.send_notices().await?;
        match outcome? {
            Outcome::Rows {
                mut source,
                verb,
                binary,
            } => {
                let formats = if binary { vec![1] } else { Vec::new() };
                let encoding = RowEncoding::new(source.schema(), &formats, self.session.output())?;
                self.send_row_description(&encoding).await?;
                let sent = self.send_rows(&mut source, &encoding, 0).await?.0;
                self.complete(&tag(verb, sent)).await?;
            }
            Outcome::Fetched {
                mut source,
                tag,
                binary,
            } => {
                let formats = if binary { vec![1] } else { Vec::new() };
                let encoding = RowEncoding::new(source.schema(), &formats, self.session.output())?;
                self.send_row_description(&encoding).await?;
                self.send_rows(&mut source, &encoding, 0).await?;
                self.complete(&tag).await?;
            }
            other => self.finish_outcome(other).await?,
        }
        self.session.statement_done();
        Ok(())
    }

    /// Outcomes without rows to stream in a result set.
    async fn finish_outcome(&mut self, outcome: Outcome) -> Step<()> {
        let tag = match outcome {
            Outcome::Rows { .. } | Outcome::Fetched { .. } => {
                unreachable!("rows are streamed by the caller")
            }
            Outcome::Done(tag) => tag,
            Outcome::Copy { source, options } => self.copy_out(source, &options).await?,
            Outcome::Deallocate(Some(name)) => {
                if self.statements.remove(&name).is_none() {
                    return Err(PgError::new(
                        sqlstate::UNDEFINED_PREPARED_STATEMENT,
                        format!("prepared statement \"{name}\" does not exist"),
                    )
                    .into());
                }
                "DEALLOCATE".to_owned()
            }
            Outcome::Deallocate(None) => {
                self.statements.clear();
                "DEALLOCATE ALL".to_owned()
            }
            Outcome::DiscardAll => {
                self.statements.clear();
                self.portals.clear();
                "DISCARD ALL".to_owned()
            }
        };
        self.complete(&tag).await
    }

    async fn complete(&mut self, tag: &str) -> Step<()> {
        self.send(PgWireBackendMessage::CommandComplete(CommandComplete::new(
            tag.to_owned(),
        )))
        .await?;
        Ok(())
    }

    async fn send_row_description(&mut self, encoding: &RowEncoding) -> io::Result<()> {
        let description = RowDescription::new(encoding.fields().iter().map(Into::into).collect());
        self.send(PgWireBackendMessage::RowDescription(description))
            .await
    }

    /// Sends rows of `source`, at most `limit` (0: all); returns how many,
    /// and whether the limit stopped it before the end.
    async fn send_rows(
        &mut self,
        source: &mut RowSource,
        encoding: &RowEncoding,
        limit: usize,
    ) -> Step<(usize, bool)> {
        let mut sent = 0;
        loop {
            let budget = if limit == 0 { usize::MAX } else { limit - sent };
            if budget == 0 {
                return Ok((sent, true));
            }
            let Some(batch) = source.next(budget).await else {
                return Ok((sent, false));
            };
            for row in encoding.rows(&batch?)? {
                self.send(PgWireBackendMessage::DataRow(row)).await?;
                sent += 1;
            }
        }
    }

    /// `COPY ... TO STDOUT`: CopyOutResponse, one CopyData per row, CopyDone;
    /// returns the command tag.
    async fn copy_out(&mut self, mut source: RowSource, options: &CopyOptions) -> Step<String> {
        let binary = options.format == CopyFormat::Binary;
        let columns: Vec<String> = source
            .schema()
            .fields()
            .iter()
            .map(|f| display_name(f.name()).to_owned())
            .collect();
        let format = i16::from(binary);
        let encoding = RowEncoding::new(source.schema(), &[format], self.session.output())?;
        let framing = CopyFraming::new(options, &columns);
        self.send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            i8::from(binary),
            columns.len() as i16,
            vec![format; columns.len()],
        )))
        .await?;
        // The binary header goes out with the first row (or the trailer),
        // in one message, as PostgreSQL sends it: some clients read a
        // message without a row as a truncated one.
        let mut header = binary.then(copy::binary_header);
        let mut with_header = |data: Bytes| match header.take() {
            Some(header) => [header, data].concat().into(),
            None => data,
        };
        if let Some(header) = framing.header(&columns) {
            self.copy_data(header).await?;
        }
        let mut rows = 0usize;
        while let Some(batch) = source.next(usize::MAX).await {
            for row in encoding.rows(&batch?)? {
                self.copy_data(with_header(framing.row(&row))).await?;
                rows += 1;
            }
        }
        if binary {
            self.copy_data(with_header(copy::binary_trailer())).await?;
        }
        self.send(PgWireBackendMessage::CopyDone(CopyDone::new()))
            .await?;
        Ok(format!("COPY {rows}"))
    }

    async fn copy_data(&mut self, data: Bytes) -> io::Result<()> {
        self.send(PgWireBackendMessage::CopyData(CopyData::new(data)))
            .await
    }

    /// Runs an extended-protocol step; an error is reported and everything
    /// up to the next Sync skipped.
    /// A Query refused before it runs (its text is not UTF-8): the error,
    /// then ReadyForQuery.
    pub async fn refuse_query(&mut self, error: &PgError) -> io::Result<()> {
        self.session.statement_failed();
        self.send_error(error).await?;
        self.ready_for_query().await
    }

    /// An extended-protocol message refused before it runs: the error, and
    /// the rest of the batch is skipped up to Sync.
    pub async fn refuse_extended(&mut self, error: &PgError) -> io::Result<()> {
        if self.skip_until_sync {
            return Ok(());
        }
        self.skip_until_sync = true;
        self.session.statement_failed();
        self.send_error(error).await
    }

    pub async fn extended(&mut self, message: Extended) -> io::Result<()> {
        if self.skip_until_sync {
            return Ok(());
        }
        let result = match message {
            Extended::Parse(parse) => self.parse(parse).await,
            Extended::Bind(bind) => self.bind(bind).await,
            Extended::Describe(describe) => self.describe(describe).await,
            Extended::Execute(execute) => {
                let timeout = self.session.statement_timeout();
                let cancel = Arc::clone(&self.cancel);
                Self::interruptible(&cancel, timeout, Box::pin(self.execute(execute))).await
            }
            Extended::Close(close) => self.close(close).await,
        };
        match result {
            Ok(()) => Ok(()),
            Err(Failure::Client(error)) => {
                self.skip_until_sync = true;
                self.session.statement_failed();
                self.send_error(&error).await
            }
            Err(Failure::Io(error)) => Err(error),
        }
    }

    /// Sync: the end of an extended-protocol batch.
    pub async fn sync(&mut self) -> io::Result<()> {
        self.skip_until_sync = false;
        // Portals live until the transaction ends; outside a block, that is
        // now.
        if self.session.status() == Status::Idle {
            self.portals.clear();
        }
        self.ready_for_query().await
    }

    async fn parse(&mut self, parse: Parse) -> Step<()> {
        let name = parse.name.unwrap_or_default();
        if !name.is_empty() && self.statements.contains_key(&name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_PREPARED_STATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            )
            .into());
        }
        if parse.type_oids.len() > crate::query::planner::MAX_PARAMETERS {
            return Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                "a statement takes at most 65535 parameters",
            )
            .into());
        }
        let declared: Vec<Option<Type>> = parse
            .type_oids
            .iter()
            .map(|oid| (*oid != 0).then(|| Type::from_oid(*oid).unwrap_or(Type::UNKNOWN)))
            .collect();
        let mut sql = parse.query;
        let mut prepared = self.session.prepare(&sql).await?;
        // A parameter the engine typed otherwise than the client declared it
        // (`$1 - interval '1 day'` with a timestamp reads as an interval;
        // `SELECT $1` as text): planned again with the parameter cast to its
        // declared type, as PostgreSQL types it (see
        // `params::with_declared_types`).
        if let Some(Prepared::Query(query)) = &prepared
            && let Some(typed) = params::with_declared_types(&sql, &declared, &query.parameters)
            && let Ok(again) = self.session.prepare(&typed).await
        {
            prepared = again;
            sql = typed;
        }
        if let Some(prepared) = &prepared {
            self.session.admit(prepared)?;
        }
        let (inferred, casts) = match &prepared {
            Some(Prepared::Query(query)) => {
                (query.parameters.clone(), query.parameter_casts.clone())
            }
            _ => (Vec::new(), Vec::new()),
        };
        let reported = match &prepared {
            // The source's own parameter types, unless the client declared one.
            Some(Prepared::Forwarded(query)) => query
                .parameters
                .iter()
                .enumerate()
                .map(|(index, source)| {
                    declared
                        .get(index)
                        .cloned()
                        .flatten()
                        .unwrap_or_else(|| source.clone())
                })
                .collect(),
            _ => params::reported_types(&declared, &casts, &inferred),
        };
        let statement = NamedStatement {
            sql,
            prepared,
            declared,
            reported,
            encoding: Mutex::new(None),
        };
        self.statements.insert(name, Arc::new(statement));
        self.send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    async fn bind(&mut self, bind: Bind) -> Step<()> {
        let statement_name = bind.statement_name.unwrap_or_default();
        let portal_name = bind.portal_name.unwrap_or_default();
        let statement = self
            .statements
            .get(&statement_name)
            .cloned()
            .ok_or_else(|| {
                PgError::new(
                    sqlstate::UNDEFINED_PREPARED_STATEMENT,
                    format!("prepared statement \"{statement_name}\" does not exist"),
                )
            })?;
        if !portal_name.is_empty() && self.portals.contains_key(&portal_name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_CURSOR,
                format!("portal \"{portal_name}\" already exists"),
            )
            .into());
        }
        if let Some(prepared) = &statement.prepared {
            self.session.admit(prepared)?;
        }
        let statement = match self
            .with_numeric_literals(&statement, &bind.parameter_format_codes, &bind.parameters)
            .await?
        {
            Some(written) => written,
            None => statement,
        };
        let params = bind_parameters(&statement, &bind.parameter_format_codes, &bind.parameters)?;
        self.portals.insert(
            portal_name,
            Portal {
                statement,
                params,
                formats: bind.result_column_format_codes,
                run: PortalRun::NotStarted,
            },
        );
        self.send(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    /// `statement` planned again for one Bind, when a `numeric` value would
    /// be cast to another type than its own: the engine reads `$1 + 1` as an
    /// integer and `amount * $1` with `amount`'s scale, where PostgreSQL
    /// keeps an unconstrained numeric's own digits and scale. Each such value
    /// is written into the text as a literal of its scale, which the engine
    /// types as PostgreSQL types that value. A parameter counts when the
    /// client declared it `numeric` (and the engine expects another type or
    /// none), or declared nothing and the engine expects a decimal of
    /// another scale. `None` when no value needs it.
    async fn with_numeric_literals(
        &mut self,
        statement: &NamedStatement,
        formats: &[i16],
        values: &[Option<Bytes>],
    ) -> Result<Option<Arc<NamedStatement>>, PgError> {
        // A statement the engine could not plan (`$1 + $2`, no type for
        // either) is planned again too: with the values written in, it may.
        let inferred = match &statement.prepared {
            Some(Prepared::Query(query)) => Some(&query.parameters),
            Some(Prepared::Forwarded(_)) => None,
            _ => return Ok(None),
        };
        let mut literals = HashMap::new();
        for (index, value) in values.iter().enumerate() {
            let Some(value) = value else { continue };
            let target = inferred.and_then(|inferred| inferred.get(index).cloned().flatten());
            let numeric = match statement.declared.get(index).cloned().flatten() {
                Some(declared) => declared == Type::NUMERIC,
                None => matches!(target, Some(DataType::Decimal128(..))),
            };
            if !numeric {
                continue;
            }
            let binary = params::is_binary(formats, index);
            let natural = params::decode(Some(value), binary, &Type::NUMERIC, None)?;
            if target.is_none_or(|target| natural.data_type() != target)
                && let Some(literal) = params::numeric_literal(&natural)
            {
                literals.insert(index, literal);
            }
        }
        if literals.is_empty() {
            return Ok(None);
        }
        let Some(sql) = params::with_literals(&statement.sql, &literals) else {
            return Ok(None);
        };
        let prepared = self.session.prepare(&sql).await?;
        if let Some(prepared) = &prepared {
            self.session.admit(prepared)?;
        }
        // Still sent to the source: as the client wrote it, with its values.
        if inferred.is_none() && !matches!(prepared, Some(Prepared::Query(_))) {
            return Ok(None);
        }
        Ok(Some(Arc::new(NamedStatement {
            sql,
            prepared,
            declared: statement.declared.clone(),
            reported: statement.reported.clone(),
            encoding: Mutex::new(None),
        })))
    }

    async fn describe(&mut self, describe: Describe) -> Step<()> {
        let name = describe.name.unwrap_or_default();
        match describe.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                let statement = self.statements.get(&name).cloned().ok_or_else(|| {
                    PgError::new(
                        sqlstate::UNDEFINED_PREPARED_STATEMENT,
                        format!("prepared statement \"{name}\" does not exist"),
                    )
                })?;
                let types = statement.reported.iter().map(Type::oid).collect();
                self.send(PgWireBackendMessage::ParameterDescription(
                    ParameterDescription::new(types),
                ))
                .await?;
                self.describe_rows(statement.prepared.as_ref(), &[]).await
            }
            TARGET_TYPE_BYTE_PORTAL => {
                let portal = self
                    .portals
                    .get(&name)
                    .ok_or_else(|| portal_missing(&name))?;
                let (prepared, formats) =
                    (portal.statement.prepared.clone(), portal.formats.clone());
                self.describe_rows(prepared.as_ref(), &formats).await
            }
            other => Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!("invalid DESCRIBE message subtype {other}"),
            )
            .into()),
        }
    }

    async fn describe_rows(&mut self, prepared: Option<&Prepared>, formats: &[i16]) -> Step<()> {
        match prepared.and_then(|prepared| self.session.describe(prepared)) {
            Some(schema) => {
                let encoding = RowEncoding::new(&schema, formats, self.session.output())?;
                self.send_row_description(&encoding).await?;
            }
            None => {
                self.send(PgWireBackendMessage::NoData(NoData::new()))
                    .await?
            }
        }
        Ok(())
    }

    async fn execute(&mut self, execute: Execute) -> Step<()> {
        let name = execute.name.unwrap_or_default();
        let limit = usize::try_from(execute.max_rows.max(0)).unwrap_or(0);
        let mut portal = self
            .portals
            .remove(&name)
            .ok_or_else(|| portal_missing(&name))?;
        let result = self.execute_portal(&mut portal, limit).await;
        self.portals.insert(name, portal);
        result
    }

    async fn execute_portal(&mut self, portal: &mut Portal, limit: usize) -> Step<()> {
        if let PortalRun::NotStarted = portal.run {
            let Some(prepared) = portal.statement.prepared.clone() else {
                self.send(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
                return Ok(());
            };
            self.session.admit(&prepared)?;
            self.session.message_received();
            self.session.begin_statement(&portal.statement.sql);
            let outcome = match self.portal_fetch(&prepared).await {
                Some(outcome) => outcome,
                None => Box::pin(self.session.execute(&prepared, portal.params.as_ref()))
                    .await
                    .map_err(Into::into),
            };
            self.send_notices().await?;
            portal.run = match outcome? {
                Outcome::Rows { source, verb, .. } => PortalRun::Rows {
                    encoding: self.encoding_for(portal, source.schema())?,
                    source,
                    verb,
                },
                Outcome::Fetched {
                    mut source, tag, ..
                } => {
                    let encoding = self.encoding_for(portal, source.schema())?;
                    self.send_rows(&mut source, &encoding, 0).await?;
                    self.complete(&tag).await?;
                    self.session.statement_done();
                    return Ok(());
                }
                other => {
                    self.finish_outcome(other).await?;
                    self.session.statement_done();
                    return Ok(());
                }
            };
        }
        let PortalRun::Rows {
            source,
            encoding,
            verb,
        } = &mut portal.run
        else {
            // A portal run to completion has nothing more to give.
            return Ok(());
        };
        let encoding = Arc::clone(encoding);
        let verb = *verb;
        let (count, suspended) = self.send_rows(source, &encoding, limit).await?;
        if suspended {
            self.send(PgWireBackendMessage::PortalSuspended(PortalSuspended::new()))
                .await?;
        } else {
            self.complete(&tag(verb, count)).await?;
            self.session.statement_done();
            portal.run = PortalRun::Finished;
        }
        Ok(())
    }

    /// `FETCH`/`MOVE` naming a protocol portal rather than a declared cursor
    /// (the two share one namespace in PostgreSQL; asyncpg moves its
    /// cursors with `MOVE`): the portal's rows, forward only. `None` for
    /// any other statement.
    async fn portal_fetch(&mut self, prepared: &Prepared) -> Option<Step<Outcome>> {
        let Prepared::Command(command) = prepared else {
            return None;
        };
        let Command::Fetch {
            cursor,
            motion,
            move_only,
        } = command.as_ref()
        else {
            return None;
        };
        if self.session.has_cursor(cursor) || !self.portals.contains_key(cursor) {
            return None;
        }
        let mut portal = self.portals.remove(cursor)?;
        let result = self.fetch_portal(&mut portal, *motion, *move_only).await;
        self.portals.insert(cursor.clone(), portal);
        Some(result)
    }

    async fn fetch_portal(
        &mut self,
        portal: &mut Portal,
        motion: Motion,
        move_only: bool,
    ) -> Step<Outcome> {
        let count = match motion {
            Motion::Forward(count) => count,
            Motion::Relative(n) if n >= 0 => Some(n.unsigned_abs()),
            _ => {
                return Err(PgError::new(
                    sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    "cursor can only scan forward",
                )
                .with_hint("Declare it with SCROLL option to enable backward scan.")
                .into());
            }
        };
        if let PortalRun::NotStarted = portal.run {
            let prepared = portal.statement.prepared.clone().ok_or_else(|| {
                PgError::new(sqlstate::INVALID_CURSOR_NAME, "portal has no query")
            })?;
            match Box::pin(self.session.execute(&prepared, portal.params.as_ref())).await? {
                Outcome::Rows { source, verb, .. } => {
                    portal.run = PortalRun::Rows {
                        encoding: self.encoding_for(portal, source.schema())?,
                        source,
                        verb,
                    };
                }
                _ => {
                    return Err(PgError::new(
                        sqlstate::INVALID_CURSOR_NAME,
                        "portal does not return rows",
                    )
                    .into());
                }
            }
        }
        let (batches, schema) = match &mut portal.run {
            PortalRun::Rows { source, .. } => {
                (source.take(count).await?, Arc::clone(source.schema()))
            }
            _ => (Vec::new(), Arc::new(Schema::empty())),
        };
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        Ok(if move_only {
            Outcome::Done(format!("MOVE {rows}"))
        } else {
            Outcome::Fetched {
                source: RowSource::from_batches(schema, batches),
                tag: format!("FETCH {rows}"),
                binary: false,
            }
        })
    }

    /// The row encoding for `portal`'s results, reused from the statement's
    /// last execution when nothing it depends on changed.
    fn encoding_for(&self, portal: &Portal, schema: &SchemaRef) -> Step<Arc<RowEncoding>> {
        let output = self.session.output();
        let mut cached = portal
            .statement
            .encoding
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((formats, cached_schema, encoding)) = cached.as_ref()
            && *formats == portal.formats
            && Arc::ptr_eq(cached_schema, schema)
            && encoding.prints_as(&output)
        {
            return Ok(Arc::clone(encoding));
        }
        let encoding = Arc::new(RowEncoding::new(schema, &portal.formats, output)?);
        *cached = Some((
            portal.formats.clone(),
            Arc::clone(schema),
            Arc::clone(&encoding),
        ));
        Ok(encoding)
    }

    async fn close(&mut self, close: Close) -> Step<()> {
        let name = close.name.unwrap_or_default();
        match close.target_type {
            TARGET_TYPE_BYTE_STATEMENT => {
                self.statements.remove(&name);
            }
            TARGET_TYPE_BYTE_PORTAL => {
                self.portals.remove(&name);
            }
            _ => {}
        }
        self.send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
    }
}

/// The extended-protocol messages that can fail and make the rest of the
/// batch wait for Sync.
pub enum Extended {
    Parse(Parse),
    Bind(Bind),
    Describe(Describe),
    Execute(Execute),
    Close(Close),
}

fn tag(verb: &str, rows: usize) -> String {
    match verb {
        "SHOW" => verb.to_owned(),
        _ => format!("{verb} {rows}"),
    }
}

fn portal_missing(name: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_CURSOR_NAME,
        format!("portal \"{name}\" does not exist"),
    )
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Decodes Bind's parameter values for `statement`.
fn bind_parameters(
    statement: &NamedStatement,
    formats: &[i16],
    values: &[Option<Bytes>],
) -> Result<Option<ParamValues>, PgError> {
    let expected = statement.reported.len();
    if values.len() != expected {
        return Err(PgError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {} parameters, but prepared statement \"\" requires {expected}",
                values.len()
            ),
        ));
    }
    let query = match &statement.prepared {
        Some(Prepared::Query(query)) => Some(query),
        // Read as their own type: the source gets them as text.
        Some(Prepared::Forwarded(_)) => None,
        _ => return Ok(None),
    };
    let decoded = values
        .iter()
        .enumerate()
        .map(|(index, value)| {
            let binary = params::is_binary(formats, index);
            let pg_type = statement
                .declared
                .get(index)
                .cloned()
                .flatten()
                .unwrap_or_else(|| statement.reported[index].clone());
            if query.is_none() && !binary {
                // The client's own text: the source reads it as PostgreSQL does.
                let text = value
                    .as_ref()
                    .map(|bytes| String::from_utf8_lossy(bytes).into_owned());
                return Ok(ScalarAndMetadata::from(ScalarValue::Utf8(text)));
            }
            let target = query.and_then(|query| query.parameters.get(index)?.as_ref());
            params::decode(value.as_ref(), binary, &pg_type, target).map(ScalarAndMetadata::from)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(ParamValues::List(decoded)))
}

/// PostgreSQL's error fields for `error`.
pub fn error_info(error: &PgError) -> ErrorInfo {
    let mut info = ErrorInfo::new(
        error.severity().to_owned(),
        error.code.clone(),
        error.message.clone(),
    );
    info.severity_nonlocalized = Some(error.severity().to_owned());
    info.detail = error.detail.clone();
    info.hint = error.hint.clone();
    info.position = error.position.map(|position| position.to_string());
    info
}

fn notice_response(notice: &Notice) -> NoticeResponse {
    let mut info = ErrorInfo::new(
        notice.level.as_str().to_owned(),
        notice.code.to_owned(),
        notice.message.clone(),
    );
    info.severity_nonlocalized = Some(notice.level.as_str().to_owned());
    info.into()
}
