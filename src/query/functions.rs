//! PostgreSQL's session and server functions, answered for the session the
//! query runs in ([`SessionInfo`], read at execution time, so one cached
//! plan serves every session): who is connected (`current_user`,
//! `current_database()`, `pg_backend_pid()`, `inet_server_addr()`), the
//! settings (`current_setting()`, `set_config()`), and the answers of a hot
//! standby (`pg_is_in_recovery()` is true, WAL position functions refuse as
//! during recovery).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use datafusion::arrow::array::{ArrayRef, new_null_array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::execution::FunctionRegistry;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};

use super::engine::SessionInfo;
use super::error::PgError;
use super::settings::Scope;
use super::sqlstate;
use crate::accelerator::PG_TYPE_METADATA;

/// What a session function computes from the session and its arguments.
type Body = fn(&SessionInfo, &[ScalarValue]) -> Result<ScalarValue, PgError>;

#[derive(Debug)]
struct SessionFunction {
    name: &'static str,
    signature: Signature,
    returns: DataType,
    /// The PostgreSQL type of a text result that is not `text` (`name`,
    /// `inet`, `void`), for the row description.
    pg_type: Option<&'static str>,
    body: Body,
}

// A function is known by its name: two with the same name are the same.
impl PartialEq for SessionFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for SessionFunction {}

impl std::hash::Hash for SessionFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl SessionFunction {
    fn pg(mut self, pg_type: &'static str) -> Self {
        self.pg_type = Some(pg_type);
        self
    }
}

impl ScalarUDFImpl for SessionFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.returns.clone())
    }

    fn return_field_from_args(&self, _args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = Field::new(self.name, self.returns.clone(), true);
        Ok(Arc::new(match self.pg_type {
            Some(pg_type) => {
                field.with_metadata([(PG_TYPE_METADATA.to_owned(), pg_type.to_owned())].into())
            }
            None => field,
        }))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let info = SessionInfo::of(&args.config_options).ok_or_else(|| {
            DataFusionError::Execution(format!("{}() runs only in a session", self.name))
        })?;
        let call = |values: &[ScalarValue]| {
            (self.body)(info, values)
                .map_err(|error| DataFusionError::External(Box::new(error)))
                .and_then(|value| value.cast_to(&self.returns))
        };
        let rows = args.args.iter().find_map(|arg| match arg {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        let Some(rows) = rows else {
            let values: Vec<ScalarValue> = args
                .args
                .iter()
                .map(|arg| match arg {
                    ColumnarValue::Scalar(value) => value.clone(),
                    ColumnarValue::Array(_) => unreachable!("no array argument"),
                })
                .collect();
            return call(&values).map(ColumnarValue::Scalar);
        };
        // Called once per row with the row's argument values.
        let mut results = Vec::with_capacity(rows);
        for row in 0..rows {
            let values = args
                .args
                .iter()
                .map(|arg| match arg {
                    ColumnarValue::Scalar(value) => Ok(value.clone()),
                    ColumnarValue::Array(array) => ScalarValue::try_from_array(array, row),
                })
                .collect::<Result<Vec<_>>>()?;
            results.push(call(&values)?);
        }
        if results.is_empty() {
            let empty: ArrayRef = new_null_array(&self.returns, 0);
            return Ok(ColumnarValue::Array(empty));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(results)?))
    }
}

/// `pgaccel_require(condition, sqlstate, message)`: true, or the error
/// `sqlstate` with `message` when the condition is false (a rewrite's
/// condition for answering as PostgreSQL would: a domain's check, an array
/// it can only read when empty).
pub const REQUIRE: &str = "pgaccel_require";

fn require(_: &SessionInfo, args: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    match args {
        [ScalarValue::Boolean(Some(false)), code, message] => {
            Err(PgError::new(&code.to_string(), message.to_string()))
        }
        _ => Ok(ScalarValue::Boolean(Some(true))),
    }
}

/// `regexp_split_to_array(text, pattern [, flags])`: the pieces of `text`
/// between matches of `pattern` (a text with no match is one piece).
/// `regexp_split_to_table()` is its `unnest()` (see `compat`). The pattern
/// is read by the `regex` crate, whose syntax covers what PostgreSQL's
/// advanced regular expressions are used for in practice (classes,
/// quantifiers, `\w`/`\s`/`\d`); flag `i` ignores case.
fn regexp_split(_: &SessionInfo, args: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    split_by_regex(args)
}

fn split_by_regex(args: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    let text = |value: Option<&ScalarValue>| match value {
        Some(ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v)) => {
            v.clone()
        }
        _ => None,
    };
    let (Some(input), Some(pattern)) = (text(args.first()), text(args.get(1))) else {
        return Ok(ScalarValue::new_null_list(DataType::Utf8, true, 1));
    };
    let flags = text(args.get(2)).unwrap_or_default();
    if let Some(flag) = flags.chars().find(|c| *c != 'i') {
        return Err(PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("invalid regular expression option: \"{flag}\""),
        ));
    }
    let regex = regex::RegexBuilder::new(&pattern)
        .case_insensitive(flags.contains('i'))
        .build()
        .map_err(|e| {
            PgError::new(
                sqlstate::INVALID_REGULAR_EXPRESSION,
                format!("invalid regular expression: {e}"),
            )
        })?;
    let pieces: Vec<ScalarValue> = regex
        .split(&input)
        .map(|piece| ScalarValue::Utf8(Some(piece.to_owned())))
        .collect();
    Ok(ScalarValue::List(ScalarValue::new_list_nullable(
        &pieces,
        &DataType::Utf8,
    )))
}

fn function(
    name: &'static str,
    arguments: Vec<TypeSignature>,
    returns: DataType,
    volatility: Volatility,
    body: Body,
) -> SessionFunction {
    let signature = match arguments.len() {
        1 => Signature::new(arguments.into_iter().next().expect("one"), volatility),
        _ => Signature::one_of(arguments, volatility),
    };
    SessionFunction {
        name,
        signature,
        returns,
        pg_type: None,
        body,
    }
}

fn none() -> Vec<TypeSignature> {
    vec![TypeSignature::Nullary]
}

/// pgaccel's `timestamptz`: UTC microseconds.
pub(super) fn timestamptz() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// Registers every session function in `state`, replacing any of the same
/// name.
pub fn register(state: &mut SessionState) -> Result<()> {
    let text = DataType::Utf8;
    let functions = [
        function(
            "current_user",
            none(),
            text.clone(),
            Volatility::Stable,
            user,
        )
        .pg("name"),
        function(
            "session_user",
            none(),
            text.clone(),
            Volatility::Stable,
            user,
        )
        .pg("name"),
        function("user", none(), text.clone(), Volatility::Stable, user).pg("name"),
        function(
            "current_role",
            none(),
            text.clone(),
            Volatility::Stable,
            user,
        )
        .pg("name"),
        function(
            REQUIRE,
            vec![TypeSignature::Exact(vec![
                DataType::Boolean,
                DataType::Utf8,
                DataType::Utf8,
            ])],
            DataType::Boolean,
            Volatility::Immutable,
            require,
        ),
        function(
            "regexp_split_to_array",
            vec![
                TypeSignature::Exact(vec![DataType::Utf8, DataType::Utf8]),
                TypeSignature::Exact(vec![DataType::Utf8, DataType::Utf8, DataType::Utf8]),
            ],
            DataType::new_list(DataType::Utf8, true),
            Volatility::Immutable,
            regexp_split,
        ),
        function(
            "current_database",
            none(),
            text.clone(),
            Volatility::Stable,
            database,
        )
        .pg("name"),
        function(
            "current_catalog",
            none(),
            text.clone(),
            Volatility::Stable,
            database,
        )
        .pg("name"),
        function(
            "current_schema",
            none(),
            text.clone(),
            Volatility::Stable,
            current_schema,
        )
        .pg("name"),
        function(
            "current_schemas",
            vec![TypeSignature::Any(1)],
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            Volatility::Stable,
            current_schemas,
        ),
        function(
            "pg_backend_pid",
            none(),
            DataType::Int32,
            Volatility::Stable,
            backend_pid,
        ),
        function(
            "inet_server_addr",
            none(),
            text.clone(),
            Volatility::Stable,
            server_addr,
        )
        .pg("inet"),
        function(
            "inet_server_port",
            none(),
            DataType::Int32,
            Volatility::Stable,
            server_port,
        ),
        function(
            "inet_client_addr",
            none(),
            text.clone(),
            Volatility::Stable,
            client_addr,
        )
        .pg("inet"),
        function(
            "inet_client_port",
            none(),
            DataType::Int32,
            Volatility::Stable,
            client_port,
        ),
        function(
            "current_setting",
            vec![TypeSignature::Any(1), TypeSignature::Any(2)],
            text.clone(),
            Volatility::Stable,
            current_setting,
        ),
        function(
            "set_config",
            vec![TypeSignature::Any(3)],
            text.clone(),
            Volatility::Volatile,
            set_config,
        ),
        function(
            "pg_is_in_recovery",
            none(),
            DataType::Boolean,
            Volatility::Stable,
            |_, _| Ok(ScalarValue::Boolean(Some(true))),
        ),
        function(
            "pg_is_wal_replay_paused",
            none(),
            DataType::Boolean,
            Volatility::Stable,
            |_, _| Ok(ScalarValue::Boolean(Some(false))),
        ),
        function(
            "pg_postmaster_start_time",
            none(),
            timestamptz(),
            Volatility::Stable,
            started,
        ),
        // Read each time it is called (per batch of rows, where PostgreSQL
        // reads it per row), unlike `now()`, which holds still for a
        // statement or a transaction.
        function(
            "clock_timestamp",
            none(),
            timestamptz(),
            Volatility::Volatile,
            |_, _| {
                Ok(ScalarValue::TimestampMicrosecond(
                    Some(chrono::Utc::now().timestamp_micros()),
                    Some("UTC".into()),
                ))
            },
        ),
        function(
            "pg_conf_load_time",
            none(),
            timestamptz(),
            Volatility::Stable,
            started,
        ),
        function(
            "txid_current",
            none(),
            DataType::Int64,
            Volatility::Volatile,
            transaction_id,
        ),
        function(
            "pg_current_xact_id",
            none(),
            DataType::Int64,
            Volatility::Volatile,
            transaction_id,
        ),
        function(
            "txid_current_if_assigned",
            none(),
            DataType::Int64,
            Volatility::Stable,
            |_, _| Ok(ScalarValue::Int64(None)),
        ),
        function(
            "pg_current_xact_id_if_assigned",
            none(),
            DataType::Int64,
            Volatility::Stable,
            |_, _| Ok(ScalarValue::Int64(None)),
        ),
        function(
            "pg_current_wal_lsn",
            none(),
            text.clone(),
            Volatility::Volatile,
            during_recovery,
        ),
        function(
            "pg_current_wal_insert_lsn",
            none(),
            text.clone(),
            Volatility::Volatile,
            during_recovery,
        ),
        function(
            "pg_current_wal_flush_lsn",
            none(),
            text.clone(),
            Volatility::Volatile,
            during_recovery,
        ),
        function(
            "pg_last_wal_receive_lsn",
            none(),
            text.clone(),
            Volatility::Volatile,
            |_, _| Ok(ScalarValue::Utf8(None)),
        ),
        function(
            "pg_last_wal_replay_lsn",
            none(),
            text.clone(),
            Volatility::Volatile,
            |_, _| Ok(ScalarValue::Utf8(None)),
        ),
        function(
            "pg_last_xact_replay_timestamp",
            none(),
            timestamptz(),
            Volatility::Volatile,
            |_, _| Ok(ScalarValue::Utf8(None)),
        ),
        function(
            "version",
            none(),
            text.clone(),
            Volatility::Stable,
            |_, _| Ok(ScalarValue::Utf8(Some(super::version_string()))),
        ),
        function(
            "pg_sleep",
            vec![TypeSignature::Any(1)],
            text,
            Volatility::Volatile,
            // The session sleeps before the statement runs (see
            // `sleep_seconds`), where a cancel request or statement_timeout
            // can interrupt it; the value is void, printed empty.
            |_, _| Ok(ScalarValue::Utf8(Some(String::new()))),
        )
        .pg("void"),
    ];
    for function in functions {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(function)))?;
    }
    Ok(())
}

fn user(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(ScalarValue::Utf8(Some(info.identity.user.clone())))
}

fn database(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(ScalarValue::Utf8(Some(info.identity.database.clone())))
}

/// The schemas of `search_path` that exist, `$user` resolved.
fn schemas(info: &SessionInfo) -> Vec<String> {
    info.settings()
        .search_path()
        .into_iter()
        .map(|schema| {
            if schema == "$user" {
                info.identity.user.clone()
            } else {
                schema
            }
        })
        .filter(|schema| info.schemas.contains(schema))
        .collect()
}

fn current_schema(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(ScalarValue::Utf8(schemas(info).into_iter().next()))
}

fn current_schemas(info: &SessionInfo, args: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    let implicit = matches!(args.first(), Some(ScalarValue::Boolean(Some(true))));
    let mut names = Vec::new();
    if implicit {
        names.push("pg_catalog".to_owned());
    }
    names.extend(schemas(info));
    let values: Vec<ScalarValue> = names
        .into_iter()
        .map(|name| ScalarValue::Utf8(Some(name)))
        .collect();
    Ok(ScalarValue::List(ScalarValue::new_list_nullable(
        &values,
        &DataType::Utf8,
    )))
}

fn backend_pid(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(ScalarValue::Int32(Some(info.identity.pid)))
}

fn address(addr: &SocketAddr) -> ScalarValue {
    ScalarValue::Utf8(Some(addr.ip().to_string()))
}

fn server_addr(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(address(&info.identity.server))
}

fn server_port(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(ScalarValue::Int32(Some(i32::from(
        info.identity.server.port(),
    ))))
}

fn client_addr(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(address(&info.identity.client))
}

fn client_port(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(ScalarValue::Int32(Some(i32::from(
        info.identity.client.port(),
    ))))
}

fn text_argument(value: Option<&ScalarValue>) -> Option<String> {
    match value? {
        ScalarValue::Utf8(text) | ScalarValue::LargeUtf8(text) | ScalarValue::Utf8View(text) => {
            text.clone()
        }
        ScalarValue::Null => None,
        other => Some(other.to_string()),
    }
}

fn bool_argument(value: Option<&ScalarValue>) -> bool {
    match value {
        Some(ScalarValue::Boolean(Some(on))) => *on,
        Some(other) => text_argument(Some(other))
            .and_then(|text| super::settings::catalog::parse_bool(&text))
            .unwrap_or(false),
        None => false,
    }
}

fn current_setting(info: &SessionInfo, args: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    let Some(name) = text_argument(args.first()) else {
        return Ok(ScalarValue::Utf8(None));
    };
    let missing_ok = bool_argument(args.get(1));
    match info.settings().show(&name) {
        Ok((_, value)) => Ok(ScalarValue::Utf8(Some(value))),
        Err(_) if missing_ok => Ok(ScalarValue::Utf8(None)),
        Err(error) => Err(error),
    }
}

/// Validates the change now and returns the new value; the session applies
/// it when the statement ends.
fn set_config(info: &SessionInfo, args: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    let name = text_argument(args.first()).ok_or_else(|| {
        PgError::new(
            sqlstate::NULL_VALUE_NOT_ALLOWED,
            "SET requires parameter name",
        )
    })?;
    let value = text_argument(args.get(1));
    let local = bool_argument(args.get(2));
    let mut settings = (*info.settings()).clone();
    let scope = if local { Scope::Local } else { Scope::Session };
    settings.set(&name, value.as_deref(), scope)?;
    let shown = settings.show(&name)?.1;
    info.set_requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((name, value.unwrap_or_default(), local));
    Ok(ScalarValue::Utf8(Some(shown)))
}

fn started(info: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Ok(ScalarValue::TimestampMicrosecond(
        Some(info.started.timestamp_micros()),
        Some("UTC".into()),
    ))
}

/// pgaccel assigns no transaction ids; tools that read one (to compare with
/// `xmin` of catalog rows, which is 1) get an increasing number.
fn transaction_id(_: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    static NEXT: AtomicI64 = AtomicI64::new(1000);
    Ok(ScalarValue::Int64(Some(
        NEXT.fetch_add(1, Ordering::Relaxed),
    )))
}

fn during_recovery(_: &SessionInfo, _: &[ScalarValue]) -> Result<ScalarValue, PgError> {
    Err(PgError::new(
        sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
        "recovery is in progress",
    )
    .with_hint("WAL control functions cannot be executed during recovery."))
}

/// The seconds the `pg_sleep()` calls of `plan` ask for, summed. The session
/// waits them out before running the statement, where a cancel request or
/// `statement_timeout` interrupts the wait as PostgreSQL's would.
pub fn sleep_seconds(plan: &datafusion::logical_expr::LogicalPlan) -> f64 {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::logical_expr::Expr;

    let mut total = 0.0;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::ScalarFunction(call) = e
                    && call.name() == "pg_sleep"
                    && let Some(seconds) = call.args.first().and_then(constant_seconds)
                {
                    total += seconds.max(0.0);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    total
}

fn constant_seconds(expr: &datafusion::logical_expr::Expr) -> Option<f64> {
    use datafusion::logical_expr::Expr;
    match expr {
        Expr::Literal(value, _) => match value.cast_to(&DataType::Float64).ok()? {
            ScalarValue::Float64(seconds) => seconds,
            _ => None,
        },
        Expr::Cast(cast) => constant_seconds(&cast.expr),
        Expr::TryCast(cast) => constant_seconds(&cast.expr),
        _ => None,
    }
}

/// [`super::compat::SINGLE_VALUE`]: the value of a scalar subquery's only
/// row (NULL for none), failing with 21000 for a second row, as PostgreSQL
/// fails such a subquery.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SingleValue {
    signature: Signature,
}

impl datafusion::logical_expr::AggregateUDFImpl for SingleValue {
    fn name(&self) -> &str {
        super::compat::SINGLE_VALUE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(arg_types.first().cloned().unwrap_or(DataType::Null))
    }

    /// The value as it was: its PostgreSQL type (a `character(n)` keeps
    /// its width, printed padded) goes with it.
    fn return_field(
        &self,
        arg_fields: &[datafusion::arrow::datatypes::FieldRef],
    ) -> Result<datafusion::arrow::datatypes::FieldRef> {
        Ok(Arc::new(match arg_fields.first() {
            Some(field) => datafusion::arrow::datatypes::Field::new(
                self.name(),
                field.data_type().clone(),
                true,
            )
            .with_metadata(field.metadata().clone()),
            None => datafusion::arrow::datatypes::Field::new(self.name(), DataType::Null, true),
        }))
    }

    fn accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> Result<Box<dyn datafusion::logical_expr::Accumulator>> {
        Ok(Box::new(SingleValueAccumulator {
            rows: 0,
            value: ScalarValue::try_from(args.return_field.data_type())?,
        }))
    }

    fn state_fields(
        &self,
        args: datafusion::logical_expr::function::StateFieldsArgs,
    ) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new("rows", DataType::UInt64, false)),
            Arc::new(Field::new(
                "value",
                args.return_field.data_type().clone(),
                true,
            )),
        ])
    }
}

#[derive(Debug)]
struct SingleValueAccumulator {
    rows: u64,
    value: ScalarValue,
}

impl datafusion::logical_expr::Accumulator for SingleValueAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(column) = values.first() else {
            return Ok(());
        };
        if self.rows == 0 && !column.is_empty() {
            self.value = ScalarValue::try_from_array(column, 0)?;
        }
        self.rows += column.len() as u64;
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        use datafusion::arrow::array::AsArray;
        use datafusion::arrow::datatypes::UInt64Type;
        let rows = states[0].as_primitive::<UInt64Type>();
        for row in 0..rows.len() {
            let count = rows.value(row);
            if count > 0 && self.rows == 0 {
                self.value = ScalarValue::try_from_array(&states[1], row)?;
            }
            self.rows += count;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            ScalarValue::UInt64(Some(self.rows)),
            self.value.clone(),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.rows > 1 {
            return Err(DataFusionError::External(Box::new(PgError::new(
                sqlstate::CARDINALITY_VIOLATION,
                "more than one row returned by a subquery used as an expression",
            ))));
        }
        Ok(self.value.clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size()
    }
}

/// A scalar function's arguments as arrays of one length, and whether all
/// were scalars (so the result is one too: see [`columnar`]).
pub(crate) fn argument_arrays(
    args: &datafusion::logical_expr::ScalarFunctionArgs,
) -> Result<(Vec<ArrayRef>, bool)> {
    let scalar = args
        .args
        .iter()
        .all(|arg| matches!(arg, datafusion::logical_expr::ColumnarValue::Scalar(_)));
    // As long as the array arguments (one row when all are scalars).
    let arrays = datafusion::logical_expr::ColumnarValue::values_to_arrays(&args.args)?;
    Ok((arrays, scalar))
}

/// A scalar function's result: the array, or its one value when every
/// argument was a scalar.
pub(crate) fn columnar(
    array: ArrayRef,
    scalar: bool,
) -> Result<datafusion::logical_expr::ColumnarValue> {
    use datafusion::logical_expr::ColumnarValue;
    if scalar {
        Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &array, 0,
        )?))
    } else {
        Ok(ColumnarValue::Array(array))
    }
}

/// Registers the aggregates PostgreSQL's semantics need.
pub fn register_aggregates(state: &mut SessionState) -> Result<()> {
    let single = datafusion::logical_expr::AggregateUDF::new_from_impl(SingleValue {
        signature: Signature::any(1, Volatility::Immutable),
    });
    state.register_udaf(Arc::new(single))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(args: &[&str]) -> Result<String, String> {
        let args: Vec<ScalarValue> = args
            .iter()
            .map(|a| ScalarValue::Utf8(Some((*a).to_owned())))
            .collect();
        split_by_regex(&args)
            .map(|v| v.to_string())
            .map_err(|e| e.code)
    }

    #[test]
    fn regexp_split_as_postgres() {
        // Leading and trailing separators give empty pieces, as in PostgreSQL.
        assert_eq!(split(&[" a b,c ", "\\W+"]).unwrap(), "[, a, b, c, ]");
        assert_eq!(split(&["aXbxc", "x", "i"]).unwrap(), "[a, b, c]");
        assert_eq!(split(&["abc", "x"]).unwrap(), "[abc]");
        assert_eq!(split(&["a", "("]).unwrap_err(), "2201B");
        assert_eq!(split(&["a", "x", "g"]).unwrap_err(), "22023");
    }
}
