//! The one place where errors become PostgreSQL errors with real SQLSTATE
//! codes, so clients and ORMs can react to them as they would to PostgreSQL.

use std::error::Error;

use datafusion::arrow::error::ArrowError;
use datafusion::common::SchemaError;
use datafusion::error::DataFusionError;

use super::error::PgError;
use super::table::QueryError;

pub const SYNTAX_ERROR: &str = "42601";
pub const UNDEFINED_TABLE: &str = "42P01";
pub const UNDEFINED_COLUMN: &str = "42703";
pub const UNDEFINED_FUNCTION: &str = "42883";
pub const READ_ONLY_TRANSACTION: &str = "25006";
pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
pub const NOT_IN_PREREQUISITE_STATE: &str = "55000";
pub const DIVISION_BY_ZERO: &str = "22012";
pub const NUMERIC_OUT_OF_RANGE: &str = "22003";
pub const INVALID_ARGUMENT_FOR_LOGARITHM: &str = "2201E";
pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
pub const DATETIME_FIELD_OVERFLOW: &str = "22008";
pub const INVALID_DATETIME_FORMAT: &str = "22007";
pub const UNDEFINED_OBJECT: &str = "42704";
pub const OUT_OF_MEMORY: &str = "53200";
pub const INTERNAL_ERROR: &str = "XX000";
pub const INVALID_PARAMETER_VALUE: &str = "22023";
pub const CANT_CHANGE_RUNTIME_PARAM: &str = "55P02";
pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
pub const PROTOCOL_VIOLATION: &str = "08P01";
pub const CONNECTION_FAILURE: &str = "08006";
pub const IN_FAILED_SQL_TRANSACTION: &str = "25P02";
pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
pub const INVALID_CURSOR_NAME: &str = "34000";
pub const DUPLICATE_CURSOR: &str = "42P03";
pub const DUPLICATE_PREPARED_STATEMENT: &str = "42P05";
pub const UNDEFINED_PREPARED_STATEMENT: &str = "26000";
pub const INVALID_SAVEPOINT: &str = "3B001";
pub const QUERY_CANCELED: &str = "57014";
pub const ADMIN_SHUTDOWN: &str = "57P01";
pub const INDETERMINATE_DATATYPE: &str = "42P18";
pub const NULL_VALUE_NOT_ALLOWED: &str = "22004";
pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = NOT_IN_PREREQUISITE_STATE;
pub const CARDINALITY_VIOLATION: &str = "21000";
pub const CHECK_VIOLATION: &str = "23514";
pub const INVALID_REGULAR_EXPRESSION: &str = "2201B";
pub const IDLE_IN_TRANSACTION_TIMEOUT: &str = "25P03";
pub const IDLE_SESSION_TIMEOUT: &str = "57P05";
pub const INVALID_AUTHORIZATION: &str = "28000";
pub const INVALID_PASSWORD: &str = "28P01";
pub const INVALID_CATALOG_NAME: &str = "3D000";
pub const UNDEFINED_SCHEMA: &str = "3F000";

/// An `ERROR` with `code` and `message`.
pub fn error(code: &str, message: impl Into<String>) -> PgError {
    PgError::new(code, message)
}

/// What a connection gets when shutdown ends it, as from PostgreSQL's fast
/// shutdown.
pub fn admin_shutdown() -> PgError {
    error(
        ADMIN_SHUTDOWN,
        "terminating connection due to administrator command",
    )
    .into_fatal()
}

/// The error PostgreSQL gives for a write on a hot standby.
pub fn read_only(command: &str) -> PgError {
    error(
        READ_ONLY_TRANSACTION,
        format!("cannot execute {command} in a read-only transaction"),
    )
}

/// Maps a DataFusion error to the SQLSTATE PostgreSQL would use.
pub fn from_datafusion(error: DataFusionError) -> PgError {
    if let Some(pg_error) = find_in_chain::<PgError>(&error) {
        return pg_error.clone();
    }
    if let Some(query_error) = find_in_chain::<QueryError>(&error) {
        let code = match query_error {
            QueryError::OutOfRange { .. } => NUMERIC_OUT_OF_RANGE,
            QueryError::Loading { .. } => NOT_IN_PREREQUISITE_STATE,
            QueryError::Unavailable { .. } => UNDEFINED_TABLE,
            QueryError::SchemaChanged { .. } => FEATURE_NOT_SUPPORTED,
        };
        return self::error(code, query_error.to_string());
    }
    let root = error.find_root();
    let code = code_of(root);
    // The engine's own words, for whoever reads the log at debug level
    // (the client gets PostgreSQL's).
    tracing::debug!(sqlstate = code, error = %root, "query failed in the engine");
    if let DataFusionError::ResourcesExhausted(why) = root {
        // PostgreSQL's words, with what DataFusion knows of who held what.
        return self::error(OUT_OF_MEMORY, "out of memory").with_detail(format!(
            "The query needs more memory than runtime.query.memory_limit allows: {why}"
        ));
    }
    if let Some(overflow) = numeric_field_overflow(&root.message()) {
        return overflow;
    }
    if let Some((_, rest)) = root.message().split_once("Cannot cast string '")
        && let Some((text, target)) = rest.split_once("' to value of Decimal")
        && !target.is_empty()
    {
        return numeric_input_error(text);
    }
    if code == UNDEFINED_FUNCTION
        && let Some(name) = missing_builtin(&root.message())
    {
        return self::error(
            FEATURE_NOT_SUPPORTED,
            format!("function {name}() is not supported"),
        );
    }
    // A PostgreSQL function in FROM that pgaccel answers elsewhere (in the
    // select list) but not as this FROM item (over another item's columns).
    if code == UNDEFINED_FUNCTION
        && let Some(name) = missing_table_function(&root.message())
    {
        return self::error(
            FEATURE_NOT_SUPPORTED,
            format!("{name}() is not supported as this FROM item"),
        )
        .with_hint(format!("call {name}() in the select list"));
    }
    self::error(code, postgres_message(root, code))
}

/// A value cast to a `numeric(p, s)` it does not fit, which Arrow reports
/// as `1070 is too large to store in a Decimal128 of precision 3. Max is
/// 999`: PostgreSQL's `22003` with its detail.
fn numeric_field_overflow(message: &str) -> Option<PgError> {
    let (_, rest) = message.split_once("is too large to store in a Decimal128 of precision ")?;
    let (precision, rest) = rest.split_once(". Max is ")?;
    let precision: u32 = precision.trim().parse().ok()?;
    let max = rest.split_whitespace().next()?;
    let scale = max.split_once('.').map_or(0, |(_, fraction)| {
        fraction.trim_end_matches('.').len() as u32
    });
    let digits = precision.checked_sub(scale)?;
    let bound = if digits == 0 {
        "1".to_owned()
    } else {
        format!("10^{digits}")
    };
    Some(
        error(NUMERIC_OUT_OF_RANGE, "numeric field overflow").with_detail(format!(
            "A field with precision {precision}, scale {scale} must round to an absolute value less than {bound}."
        )),
    )
}

/// How DataFusion's physical planner says it met a subquery left in the
/// plan (pinned by a test).
const UNPLANNED_SUBQUERY: &str = "Physical plan does not support logical expression";

/// PostgreSQL's built-in function names, one per line after the comments.
const POSTGRES_FUNCTIONS: &str = include_str!("pg_functions.txt");

/// The function DataFusion did not find (`Invalid function 'to_number'`),
/// when PostgreSQL has one of that name: pgaccel lacks a feature, where
/// PostgreSQL's 42883 would say the function does not exist.
fn missing_builtin(message: &str) -> Option<&str> {
    postgres_function_after(message, "Invalid function '")
}

/// The name quoted after `prefix` in `message`, when PostgreSQL has a
/// function of that name.
fn postgres_function_after<'m>(message: &'m str, prefix: &str) -> Option<&'m str> {
    let rest = message.split_once(prefix)?.1;
    let name = rest.split('\'').next()?;
    POSTGRES_FUNCTIONS
        .lines()
        .filter(|line| !line.starts_with('#'))
        .any(|known| known == name)
        .then_some(name)
}

/// The function of DataFusion's "table function 'jsonb_array_elements' not
/// found", when PostgreSQL has one of that name.
fn missing_table_function(message: &str) -> Option<&str> {
    postgres_function_after(message, "table function '")
}

/// A syntax error in `sql` in PostgreSQL's words (`syntax error at or near
/// "selec"`), with the position of the token at fault.
pub fn syntax(sql: &str, parser_message: &str) -> PgError {
    error(SYNTAX_ERROR, syntax_message(parser_message)).at(syntax_position(sql, parser_message))
}

/// The character position (from 1) that sqlparser's `at Line: l, Column: c`
/// names in `sql`; the end of input is one past the last character.
fn syntax_position(sql: &str, parser_message: &str) -> Option<usize> {
    if parser_message.contains("found: EOF") {
        return Some(sql.chars().count() + 1);
    }
    let (_, at) = parser_message.rsplit_once("at Line: ")?;
    let (line, column) = at.split_once(", Column: ")?;
    let line: usize = line.trim().parse().ok()?;
    let column: usize = column
        .trim()
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    let before: usize = sql
        .split_inclusive('\n')
        .take(line.checked_sub(1)?)
        .map(|text| text.chars().count())
        .sum();
    Some(before + column)
}

fn syntax_message(parser_message: &str) -> String {
    let Some((_, found)) = parser_message.split_once("found: ") else {
        return format!("syntax error: {parser_message}");
    };
    let token = found.split(" at Line").next().unwrap_or(found).trim();
    if token == "EOF" {
        "syntax error at end of input".to_owned()
    } else {
        format!("syntax error at or near \"{token}\"")
    }
}

/// PostgreSQL's wording for the errors clients most often match on; the
/// engine's own message otherwise.
fn postgres_message(error: &DataFusionError, code: &str) -> String {
    let message = error.message().into_owned();
    if let Some((domain_code, words)) = math_domain(&message)
        && domain_code == code
    {
        return words.to_owned();
    }
    match (error, code) {
        (DataFusionError::SchemaError(schema_error, _), UNDEFINED_COLUMN) => {
            match schema_error.as_ref() {
                SchemaError::FieldNotFound { field, .. } => {
                    format!("column \"{}\" does not exist", field.name)
                }
                _ => message,
            }
        }
        (_, UNDEFINED_TABLE) => {
            let quoted = message.split('\'').nth(1).unwrap_or_default();
            let table = quoted.rsplit('.').next().unwrap_or(quoted);
            format!("relation \"{table}\" does not exist")
        }
        (_, DIVISION_BY_ZERO) => "division by zero".to_owned(),
        (_, INVALID_TEXT_REPRESENTATION) if number_input(&message).is_some() => {
            number_input(&message).unwrap_or(message)
        }
        (DataFusionError::ArrowError(..), CHARACTER_NOT_IN_REPERTOIRE) => {
            "invalid byte sequence for encoding \"UTF8\"".to_owned()
        }
        // A subquery the optimizer could not turn into a join: correlated
        // other than by equality with the enclosing query's columns.
        (DataFusionError::NotImplemented(_), FEATURE_NOT_SUPPORTED)
            if message.starts_with(UNPLANNED_SUBQUERY) =>
        {
            "this correlated subquery is not supported: a subquery is answered when it is \
             correlated by equalities with the enclosing query's columns"
                .to_owned()
        }
        // The refusal itself, without the coercion failure around it.
        (_, FEATURE_NOT_SUPPORTED) if message.to_lowercase().contains(NOT_IMPLEMENTED) => {
            let at =
                message.to_lowercase().find(NOT_IMPLEMENTED).unwrap_or(0) + NOT_IMPLEMENTED.len();
            let refusal = &message[at..];
            refusal
                .split(". No function matches")
                .next()
                .unwrap_or(refusal)
                .to_owned()
        }
        // A function's own "function f(bigint) does not exist" (or
        // "operator does not exist: ..."), without the coercion failure
        // DataFusion wraps it in.
        (_, UNDEFINED_FUNCTION) if message.contains(COERCION_FAILED) => {
            let inner = message
                .split_once(COERCION_FAILED)
                .map_or(message.as_str(), |(_, inner)| inner);
            let inner = inner.split(". No function matches").next().unwrap_or(inner);
            let inner = inner
                .rsplit_once("ERROR 42883: ")
                .or_else(|| inner.rsplit_once("Error during planning: "))
                .map_or(inner, |(_, words)| words);
            if inner.contains("does not exist") {
                inner.to_owned()
            } else {
                message
            }
        }
        (DataFusionError::ArrowError(arrow, _), NUMERIC_OUT_OF_RANGE) => match arrow.as_ref() {
            ArrowError::CastError(cast) => match out_of_range_type(cast) {
                Some(type_name) => format!("{type_name} out of range"),
                None => message,
            },
            ArrowError::ComputeError(compute) => match overflow_type(compute) {
                Some(type_name) => format!("{type_name} out of range"),
                None => message,
            },
            ArrowError::ArithmeticOverflow(overflow) => match division_overflow_type(overflow) {
                Some(type_name) => format!("{type_name} out of range"),
                None => message,
            },
            _ => message,
        },
        (DataFusionError::SQL(..), _) => syntax_message(&message),
        (
            DataFusionError::ArrowError(arrow, _),
            DATETIME_FIELD_OVERFLOW | INVALID_DATETIME_FORMAT | INVALID_PARAMETER_VALUE,
        ) => match arrow.as_ref() {
            ArrowError::CastError(cast) | ArrowError::ParseError(cast) => {
                datetime_input(cast).map_or(message, |(_, text)| text)
            }
            _ => message,
        },
        _ => message,
    }
}

/// The first `T` among `error` and its causes.
fn find_in_chain<T: Error + 'static>(error: &DataFusionError) -> Option<&T> {
    let mut current: Option<&(dyn Error + 'static)> = Some(error);
    while let Some(candidate) = current {
        if let Some(found) = candidate.downcast_ref::<T>() {
            return Some(found);
        }
        if let Some(DataFusionError::External(inner)) = candidate.downcast_ref::<DataFusionError>()
            && let Some(found) = inner.downcast_ref::<T>()
        {
            return Some(found);
        }
        current = candidate.source();
    }
    None
}

fn code_of(error: &DataFusionError) -> &'static str {
    match error {
        DataFusionError::SQL(..) => SYNTAX_ERROR,
        DataFusionError::SchemaError(schema_error, _) => match schema_error.as_ref() {
            SchemaError::FieldNotFound { .. } => UNDEFINED_COLUMN,
            _ => SYNTAX_ERROR,
        },
        DataFusionError::ArrowError(arrow_error, _) => arrow_code(arrow_error),
        DataFusionError::NotImplemented(_) => FEATURE_NOT_SUPPORTED,
        DataFusionError::ResourcesExhausted(_) => OUT_OF_MEMORY,
        DataFusionError::Plan(message) => plan_code(message),
        DataFusionError::Execution(message) => execution_code(message),
        _ => INTERNAL_ERROR,
    }
}

/// PostgreSQL's code and words for an argument outside a math function's
/// domain, from DataFusion's message for it.
fn math_domain(message: &str) -> Option<(&'static str, &'static str)> {
    const DOMAINS: [(&str, &str); 1] = [("2201F", "cannot take square root of a negative number")];
    DOMAINS
        .into_iter()
        .find(|(_, words)| message.contains(words))
}

fn arrow_code(error: &ArrowError) -> &'static str {
    match error {
        ArrowError::ComputeError(message) if math_domain(message).is_some() => {
            math_domain(message).map_or(INTERNAL_ERROR, |(code, _)| code)
        }
        ArrowError::DivideByZero => DIVISION_BY_ZERO,
        // Bytes read as text (`convert_from(bytes, 'UTF8')`).
        ArrowError::InvalidArgumentError(message) if message.contains("non UTF-8 data") => {
            CHARACTER_NOT_IN_REPERTOIRE
        }
        ArrowError::ArithmeticOverflow(_) => NUMERIC_OUT_OF_RANGE,
        ArrowError::CastError(message) if out_of_range_type(message).is_some() => {
            NUMERIC_OUT_OF_RANGE
        }
        ArrowError::CastError(message) | ArrowError::ParseError(message)
            if datetime_input(message).is_some() =>
        {
            datetime_input(message).map_or(INVALID_TEXT_REPRESENTATION, |(code, _)| code)
        }
        ArrowError::CastError(_) | ArrowError::ParseError(_) => INVALID_TEXT_REPRESENTATION,
        ArrowError::ComputeError(message) if overflow_type(message).is_some() => {
            NUMERIC_OUT_OF_RANGE
        }
        _ => INTERNAL_ERROR,
    }
}

/// PostgreSQL's words for text Arrow could not read as a number or a
/// boolean ("Cannot cast string '2.5' to value of Int32 type").
/// PostgreSQL's answer to text that is not a `numeric`: `22P02`, except
/// for the values `numeric` has in PostgreSQL and not here (`NaN`,
/// `Infinity`, `-Infinity`), which are refused (`0A000`).
pub fn numeric_input_error(text: &str) -> PgError {
    let special = text.trim().trim_start_matches(['+', '-']).to_lowercase();
    if matches!(special.as_str(), "nan" | "infinity" | "inf") {
        return error(
            FEATURE_NOT_SUPPORTED,
            format!("the numeric value \"{}\" is not supported", text.trim()),
        );
    }
    error(
        INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type numeric: \"{text}\""),
    )
}

fn number_input(message: &str) -> Option<String> {
    let (_, rest) = message.split_once("Cannot cast string '")?;
    let (value, rest) = rest.split_once("' to value of ")?;
    let type_name = match rest.split_whitespace().next()? {
        "Int16" => "smallint",
        "Int32" => "integer",
        "Int64" => "bigint",
        "Float32" => "real",
        "Float64" => "double precision",
        "Boolean" => "boolean",
        other if other.starts_with("Decimal") => "numeric",
        _ => return None,
    };
    Some(format!(
        "invalid input syntax for type {type_name}: \"{value}\""
    ))
}

/// PostgreSQL's code and message for text Arrow could not read as a date
/// or timestamp ("Cannot cast string '2024-13-01' to value of Date32
/// type", "Error parsing timestamp from 'x': ..."): a value made of date
/// and time digits has a field out of range (22008), anything else is not
/// a date at all (22007).
fn datetime_input(message: &str) -> Option<(&'static str, String)> {
    // A zone name Arrow does not know: `Invalid timezone "Mars/Olympus"`.
    if let Some((_, rest)) = message.split_once("Invalid timezone \"") {
        let zone = rest.split('"').next()?;
        return Some((
            INVALID_PARAMETER_VALUE,
            format!("time zone \"{}\" not recognized", zone.to_lowercase()),
        ));
    }
    let type_name = if message.contains("Date32") || message.contains("Date64") {
        "date"
    } else if message.contains("Timestamp") || message.contains("timestamp") {
        "timestamp"
    } else {
        return None;
    };
    let value = message.split('\'').nth(1)?;
    let numeric_fields = !value.trim().is_empty()
        && value
            .trim()
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | ':' | '.' | ' ' | '+' | 'T'));
    Some(if numeric_fields {
        (
            DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{value}\""),
        )
    } else {
        (
            INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type {type_name}: \"{value}\""),
        )
    })
}

/// The PostgreSQL type named by an Arrow kernel's "Int32Array overflow on
/// abs(-2147483648)" error.
fn overflow_type(message: &str) -> Option<&'static str> {
    let (array, _) = message.split_once("Array overflow")?;
    match array.rsplit(' ').next()?.trim() {
        "Int16" => Some("smallint"),
        "Int32" => Some("integer"),
        "Int64" => Some("bigint"),
        _ => None,
    }
}

/// The type whose smallest value an Arrow "Overflow happened on: MIN / -1"
/// divides: the one overflow Arrow reports without naming a type.
fn division_overflow_type(message: &str) -> Option<&'static str> {
    let operation = message.rsplit("Overflow happened on: ").next()?;
    let dividend = operation.split(' ').next()?.parse::<i64>().ok()?;
    match dividend {
        dividend if dividend == i64::from(i16::MIN) => Some("smallint"),
        dividend if dividend == i64::from(i32::MIN) => Some("integer"),
        i64::MIN => Some("bigint"),
        _ => None,
    }
}

/// The PostgreSQL type named by an Arrow "can't cast value ... to type T"
/// error for an integer that does not fit.
fn out_of_range_type(message: &str) -> Option<&'static str> {
    // "Can't cast value 1e30 to type Int64" (from a float), "value of
    // 123456789013 is out of range Int32" (from a decimal).
    let target = if message.contains("Can't cast value") {
        message.rsplit("to type ").next()?
    } else if message.starts_with("value of ") {
        message.rsplit("is out of range ").next()?
    } else {
        return None;
    };
    match target.trim() {
        "Int16" => Some("smallint"),
        "Int32" => Some("integer"),
        "Int64" => Some("bigint"),
        _ => None,
    }
}

fn plan_code(message: &str) -> &'static str {
    let lower = message.to_lowercase();
    if lower.starts_with("table '") && lower.contains("not found") {
        UNDEFINED_TABLE
    } else if lower.contains(NOT_IMPLEMENTED) {
        // A function's own refusal, wrapped by DataFusion's type coercion.
        FEATURE_NOT_SUPPORTED
    } else if lower.contains("invalid function")
        || (lower.starts_with("table function '") && lower.ends_with("not found"))
        || lower.contains("no function matches")
        // An operator with no form for its operands' types (PostgreSQL's
        // "operator does not exist").
        || lower.starts_with("unary operator")
        || lower.contains("cannot coerce arithmetic expression")
        || lower.contains("cannot infer common argument type for comparison")
    {
        UNDEFINED_FUNCTION
    } else if lower.contains("unsupported") {
        FEATURE_NOT_SUPPORTED
    } else {
        SYNTAX_ERROR
    }
}

/// How DataFusion says a function's own argument coercion failed.
const COERCION_FAILED: &str = "user-defined coercion failed with: ";

/// How DataFusion prints a `NotImplemented` error it wraps into another.
const NOT_IMPLEMENTED: &str = "this feature is not implemented: ";

fn execution_code(message: &str) -> &'static str {
    let lower = message.to_lowercase();
    if lower.contains(NOT_IMPLEMENTED) {
        FEATURE_NOT_SUPPORTED
    } else if let Some((code, _)) = math_domain(message) {
        code
    } else if lower.contains("divide by zero") || lower.contains("division by zero") {
        DIVISION_BY_ZERO
    } else if lower.contains("overflow") {
        NUMERIC_OUT_OF_RANGE
    } else {
        INTERNAL_ERROR
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(error: PgError) -> String {
        error.code
    }

    #[test]
    fn a_numeric_too_wide_for_its_field_is_22003() {
        let overflow = numeric_field_overflow(
            "Invalid argument error: 1069.6 is too large to store in a Decimal128 of precision 4. Max is 999.9",
        )
        .unwrap();
        assert_eq!(overflow.code, NUMERIC_OUT_OF_RANGE);
        assert_eq!(overflow.message, "numeric field overflow");
        assert_eq!(
            overflow.detail.as_deref(),
            Some(
                "A field with precision 4, scale 1 must round to an absolute value less than 10^3."
            )
        );
        let fraction = numeric_field_overflow(
            "1.5 is too large to store in a Decimal128 of precision 2. Max is 0.99",
        )
        .unwrap();
        assert_eq!(
            fraction.detail.as_deref(),
            Some("A field with precision 2, scale 2 must round to an absolute value less than 1.")
        );
    }

    #[test]
    fn text_that_is_not_a_number_reads_as_postgresql_says() {
        let error = from_datafusion(DataFusionError::ArrowError(
            Box::new(ArrowError::CastError(
                "Cannot cast string '2.5' to value of Int32 type".to_owned(),
            )),
            None,
        ));
        assert_eq!(error.code, "22P02");
        assert_eq!(
            error.message,
            "invalid input syntax for type integer: \"2.5\""
        );
    }

    #[test]
    fn maps_common_errors() {
        let missing_table = DataFusionError::Plan("table 'pgaccel.public.nope' not found".into());
        assert_eq!(code(from_datafusion(missing_table)), UNDEFINED_TABLE);
        let divide = DataFusionError::ArrowError(Box::new(ArrowError::DivideByZero), None);
        assert_eq!(code(from_datafusion(divide)), DIVISION_BY_ZERO);
        let loading = DataFusionError::External(Box::new(QueryError::Loading {
            dataset: "orders".into(),
        }));
        let wrapped = DataFusionError::Context("planning".into(), Box::new(loading));
        assert_eq!(code(from_datafusion(wrapped)), NOT_IN_PREREQUISITE_STATE);
    }

    #[test]
    fn messages_use_postgres_wording() {
        let missing_table = DataFusionError::Plan("table 'pgaccel.public.nope' not found".into());
        assert_eq!(
            from_datafusion(missing_table).message,
            "relation \"nope\" does not exist"
        );
        assert_eq!(
            syntax_message(
                "sql parser error: Expected: an SQL statement, found: selec at Line: 1, Column: 1"
            ),
            "syntax error at or near \"selec\""
        );
    }

    /// The error DataFusion itself gives for `sql`, planned and run in a
    /// plain context: these pins fail when an upgrade changes a message
    /// the mapping reads.
    async fn engine_error(sql: &str) -> PgError {
        let ctx = datafusion::prelude::SessionContext::new();
        let result = match ctx.sql(sql).await {
            Ok(frame) => frame.collect().await.map(|_| ()),
            Err(error) => Err(error),
        };
        from_datafusion(result.expect_err(sql))
    }

    #[tokio::test]
    async fn invalid_dates_map_to_datetime_codes() {
        let range = engine_error("SELECT CAST(a AS DATE) FROM (VALUES ('2024-13-01')) t(a)").await;
        assert_eq!(range.code, DATETIME_FIELD_OVERFLOW);
        assert_eq!(
            range.message,
            "date/time field value out of range: \"2024-13-01\""
        );
        let syntax = engine_error("SELECT CAST(a AS DATE) FROM (VALUES ('abc')) t(a)").await;
        assert_eq!(syntax.code, INVALID_DATETIME_FORMAT);
        assert_eq!(
            syntax.message,
            "invalid input syntax for type date: \"abc\""
        );
        let stamp =
            engine_error("SELECT CAST(a AS TIMESTAMP) FROM (VALUES ('not a time')) t(a)").await;
        assert_eq!(stamp.code, INVALID_DATETIME_FORMAT);
    }

    #[tokio::test]
    async fn a_function_refusal_wrapped_by_coercion_stays_0a000() {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::logical_expr::{ScalarUDF, ScalarUDFImpl, Signature, Volatility};
        #[derive(Debug, PartialEq, Eq, Hash)]
        struct Refusing(Signature);
        impl ScalarUDFImpl for Refusing {
            fn name(&self) -> &str {
                "refusing"
            }
            fn signature(&self) -> &Signature {
                &self.0
            }
            fn coerce_types(&self, _: &[DataType]) -> datafusion::common::Result<Vec<DataType>> {
                Err(DataFusionError::NotImplemented("refusing() of this".into()))
            }
            fn return_type(&self, _: &[DataType]) -> datafusion::common::Result<DataType> {
                Ok(DataType::Utf8)
            }
            fn invoke_with_args(
                &self,
                _: datafusion::logical_expr::ScalarFunctionArgs,
            ) -> datafusion::common::Result<datafusion::logical_expr::ColumnarValue> {
                unreachable!()
            }
        }
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.register_udf(ScalarUDF::new_from_impl(Refusing(Signature::user_defined(
            Volatility::Immutable,
        ))));
        let error = match ctx.sql("SELECT refusing(1)").await {
            Ok(frame) => frame.collect().await.map(|_| ()),
            Err(error) => Err(error),
        };
        let error = from_datafusion(error.expect_err("refused"));
        assert_eq!(error.code, FEATURE_NOT_SUPPORTED);
        assert_eq!(error.message, "refusing() of this");
    }

    #[tokio::test]
    async fn engine_errors_map_to_postgres_codes() {
        let missing = engine_error("SELECT * FROM nope").await;
        assert_eq!(missing.code, UNDEFINED_TABLE);
        assert_eq!(missing.message, "relation \"nope\" does not exist");
        let column = engine_error("SELECT nope FROM (VALUES (1)) t(a)").await;
        assert_eq!(column.code, UNDEFINED_COLUMN);
        assert_eq!(column.message, "column \"nope\" does not exist");
        assert_eq!(
            engine_error("SELECT no_such_function(1)").await.code,
            UNDEFINED_FUNCTION
        );
        // No operator for these operand types.
        assert_eq!(
            engine_error("SELECT -('5'::text)").await.code,
            UNDEFINED_FUNCTION
        );
        let root = engine_error("SELECT sqrt(a) FROM (VALUES (-2.5)) t(a)").await;
        assert_eq!(root.code, "2201F");
        assert_eq!(root.message, "cannot take square root of a negative number");
        // A PostgreSQL function pgaccel lacks is a feature it lacks.
        let lacking = engine_error("SELECT to_ascii('x')").await;
        assert_eq!(lacking.code, FEATURE_NOT_SUPPORTED);
        assert_eq!(lacking.message, "function to_ascii() is not supported");
        let zero = engine_error("SELECT a / 0 FROM (VALUES (1)) t(a)").await;
        assert_eq!(zero.code, DIVISION_BY_ZERO);
        assert_eq!(zero.message, "division by zero");
        let range = engine_error("SELECT CAST(a AS INT) FROM (VALUES (3000000000)) t(a)").await;
        assert_eq!(range.code, NUMERIC_OUT_OF_RANGE);
        assert_eq!(range.message, "integer out of range");
        assert_eq!(
            engine_error("SELECT CAST(a AS INT) FROM (VALUES ('x')) t(a)")
                .await
                .code,
            INVALID_TEXT_REPRESENTATION
        );
        assert_eq!(engine_error("SELEC 1").await.code, SYNTAX_ERROR);
    }

    #[tokio::test]
    async fn subqueries_left_unplanned_are_refused_in_words() {
        // Pinned: DataFusion leaves a subquery correlated by `<` in the plan.
        let ctx = datafusion::prelude::SessionContext::new();
        ctx.sql("CREATE TABLE t AS VALUES (1), (2)")
            .await
            .expect("table");
        let result = match ctx
            .sql("SELECT (SELECT count(*) FROM t s WHERE s.column1 < t.column1) FROM t")
            .await
        {
            Ok(frame) => frame.collect().await.map(|_| ()),
            Err(error) => Err(error),
        };
        let refused = from_datafusion(result.expect_err("a subquery correlated by <"));
        assert_eq!(refused.code, FEATURE_NOT_SUPPORTED);
        assert!(
            refused
                .message
                .starts_with("this correlated subquery is not supported"),
            "{}",
            refused.message
        );
    }

    #[tokio::test]
    async fn dividing_the_smallest_integer_by_minus_one_names_its_type() {
        let ctx = datafusion::prelude::SessionContext::new();
        for (sql, words) in [
            (
                "SELECT CAST(-32768 AS SMALLINT) / CAST(-1 AS SMALLINT)",
                "smallint out of range",
            ),
            (
                "SELECT column1 / CAST(-1 AS INT) FROM (VALUES (CAST(-2147483648 AS INT)))",
                "integer out of range",
            ),
            (
                "SELECT (column1 - 1) / CAST(-1 AS BIGINT) \
                 FROM (VALUES (CAST(-9223372036854775807 AS BIGINT)))",
                "bigint out of range",
            ),
        ] {
            let result = match ctx.sql(sql).await {
                Ok(frame) => frame.collect().await.map(|_| ()),
                Err(error) => Err(error),
            };
            let pg = from_datafusion(result.expect_err(sql));
            assert_eq!(pg.code, NUMERIC_OUT_OF_RANGE, "{sql}");
            assert_eq!(pg.message, words, "{sql}");
        }
    }

    #[test]
    fn integer_kernel_overflow_is_out_of_range() {
        // Pinned: the message Arrow's abs() kernel gives for i32::MIN.
        let error = DataFusionError::ArrowError(
            Box::new(ArrowError::ComputeError(
                "Int32Array overflow on abs(-2147483648)".to_owned(),
            )),
            None,
        );
        let pg = from_datafusion(error);
        assert_eq!(pg.code, NUMERIC_OUT_OF_RANGE);
        assert_eq!(pg.message, "integer out of range");
    }
}
