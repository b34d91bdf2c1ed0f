//! What a source's error says about trying again, read from the typed
//! errors of the drivers (`tokio_postgres` SQLSTATEs, MySQL server error
//! codes, TLS and I/O errors), never from the words of a message.
//!
//! The table providers pass the errors of a read's statement and stream
//! on as text only, so a failed read is classified by a probe: the same
//! table asked again on a connection of pgaccel's own (see
//! [`super::Source::classify_read`]).

use std::error::Error;

use datafusion_table_providers::sql::db_connection_pool::{mysqlpool, postgrespool};
use tokio_postgres::error::SqlState;

/// How a failure of a source is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Credentials, TLS or a database that does not exist: the
    /// configuration is wrong, and no retry fixes it.
    Rejected,
    /// The source refuses the statement itself (no privilege, no such
    /// table or column, SQL it cannot run): retrying asks the same.
    Refused,
    /// Anything else (a connection lost or refused, a server shutting down
    /// or restarting, out of resources, a timeout): worth retrying.
    Transient,
}

/// The class of the first typed error in `error`'s chain of causes;
/// `None` when the chain holds no error a driver typed.
pub fn of(error: &(dyn Error + 'static)) -> Option<Class> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(class) = of_one(error) {
            return Some(class);
        }
        next = error.source();
    }
    None
}

fn of_one(error: &(dyn Error + 'static)) -> Option<Class> {
    // The pools' own errors for a configuration they refuse; those with a
    // driver's error as their cause are classified by it.
    if let Some(error) = error.downcast_ref::<mysqlpool::Error>() {
        // The pool replaces the server's 1045 and 1049 by these.
        return matches!(
            error,
            mysqlpool::Error::InvalidUsernameOrPassword
                | mysqlpool::Error::UnknownMySQLDatabase { .. }
                | mysqlpool::Error::InvalidConnectionString { .. }
                | mysqlpool::Error::InvalidParameterError { .. }
                | mysqlpool::Error::InvalidRootCertPathError { .. }
        )
        .then_some(Class::Rejected);
    }
    if let Some(error) = error.downcast_ref::<postgrespool::Error>() {
        return matches!(
            error,
            postgrespool::Error::InvalidParameterError { .. }
                | postgrespool::Error::InvalidIntegerParameterError { .. }
                | postgrespool::Error::InvalidRootCertPathError { .. }
                | postgrespool::Error::FailedToReadCertError { .. }
                | postgrespool::Error::FailedToLoadCertError { .. }
                | postgrespool::Error::FailedToBuildTlsConnectorError { .. }
        )
        .then_some(Class::Rejected);
    }
    if let Some(error) = error.downcast_ref::<tokio_postgres::Error>() {
        return match error.code() {
            Some(code) => Some(postgres(code)),
            // Without a SQLSTATE the client failed: its cause (I/O, TLS)
            // tells which way, and a closed connection has none.
            None if error.source().is_none() => Some(Class::Transient),
            None => None,
        };
    }
    if let Some(error) = error.downcast_ref::<tokio_postgres::error::DbError>() {
        return Some(postgres(error.code()));
    }
    if let Some(error) = error.downcast_ref::<mysql_async::ServerError>() {
        return Some(mysql(error.code));
    }
    if let Some(error) = error.downcast_ref::<mysql_async::Error>() {
        return match error {
            mysql_async::Error::Server(error) => Some(mysql(error.code)),
            mysql_async::Error::Url(_) | mysql_async::Error::Io(mysql_async::IoError::Tls(_)) => {
                Some(Class::Rejected)
            }
            mysql_async::Error::Io(mysql_async::IoError::Io(_)) | mysql_async::Error::Driver(_) => {
                Some(Class::Transient)
            }
            mysql_async::Error::Other(_) => None,
        };
    }
    if error.downcast_ref::<native_tls::Error>().is_some()
        || error.downcast_ref::<rustls::Error>().is_some()
    {
        return Some(Class::Rejected);
    }
    if let Some(error) = error.downcast_ref::<std::io::Error>() {
        // The error an I/O error wraps decides (a TLS library reports a
        // rejected certificate so); else it is worth retrying.
        let wrapped = error
            .get_ref()
            .and_then(|inner| of(inner as &(dyn Error + 'static)));
        return Some(wrapped.unwrap_or(Class::Transient));
    }
    None
}

/// The class of a PostgreSQL SQLSTATE.
pub fn postgres(code: &SqlState) -> Class {
    let code = code.code();
    match &code[..2] {
        // Invalid authorization; a database that does not exist.
        "28" => Class::Rejected,
        _ if code == SqlState::INVALID_CATALOG_NAME.code() => Class::Rejected,
        // Syntax or access rule (privilege, undefined table or column),
        // feature not supported, data exceptions, integrity constraints,
        // WITH CHECK OPTION: the statement fails the same way again.
        "42" | "0A" | "22" | "23" | "44" => Class::Refused,
        // Connection exceptions, resources, operator intervention (a
        // server shutting down or restarting, a cancelled statement),
        // serialization failures, system errors: worth retrying.
        _ => Class::Transient,
    }
}

/// The class of a MySQL or MariaDB server error code.
pub fn mysql(code: u16) -> Class {
    match code {
        // ER_DBACCESS_DENIED_ERROR, ER_ACCESS_DENIED_ERROR, ER_BAD_DB_ERROR,
        // ER_ACCESS_DENIED_NO_PASSWORD_ERROR, ER_NOT_SUPPORTED_AUTH_MODE.
        1044 | 1045 | 1049 | 1698 | 1251 => Class::Rejected,
        // ER_BAD_FIELD_ERROR, ER_PARSE_ERROR, ER_UNKNOWN_TABLE,
        // ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR,
        // ER_NO_SUCH_TABLE, ER_SPECIFIC_ACCESS_DENIED_ERROR, ER_WRONG_VALUE.
        1054 | 1064 | 1109 | 1142 | 1143 | 1146 | 1227 | 1525 => Class::Refused,
        // Too many connections, lock wait timeout, deadlock, server
        // shutdown, lost connection, and the rest.
        _ => Class::Transient,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_codes_are_classified_by_their_class() {
        assert_eq!(postgres(&SqlState::INVALID_PASSWORD), Class::Rejected);
        assert_eq!(
            postgres(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION),
            Class::Rejected
        );
        assert_eq!(postgres(&SqlState::INVALID_CATALOG_NAME), Class::Rejected);
        assert_eq!(postgres(&SqlState::INSUFFICIENT_PRIVILEGE), Class::Refused);
        assert_eq!(postgres(&SqlState::UNDEFINED_TABLE), Class::Refused);
        assert_eq!(postgres(&SqlState::UNDEFINED_COLUMN), Class::Refused);
        assert_eq!(postgres(&SqlState::SYNTAX_ERROR), Class::Refused);
        assert_eq!(postgres(&SqlState::ADMIN_SHUTDOWN), Class::Transient);
        assert_eq!(postgres(&SqlState::CANNOT_CONNECT_NOW), Class::Transient);
        assert_eq!(postgres(&SqlState::CONNECTION_FAILURE), Class::Transient);
        assert_eq!(postgres(&SqlState::TOO_MANY_CONNECTIONS), Class::Transient);
        assert_eq!(
            postgres(&SqlState::T_R_SERIALIZATION_FAILURE),
            Class::Transient
        );
    }

    #[test]
    fn mysql_codes_and_io_errors_are_classified() {
        assert_eq!(mysql(1045), Class::Rejected);
        assert_eq!(mysql(1049), Class::Rejected);
        assert_eq!(mysql(1142), Class::Refused);
        assert_eq!(mysql(1146), Class::Refused);
        assert_eq!(mysql(1054), Class::Refused);
        assert_eq!(mysql(1040), Class::Transient);
        assert_eq!(mysql(1213), Class::Transient);
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(of(&refused), Some(Class::Transient));
        let server = mysql_async::Error::Server(mysql_async::ServerError {
            code: 1146,
            message: "Table 'test.t' doesn't exist".into(),
            state: "42S02".into(),
        });
        assert_eq!(of(&server), Some(Class::Refused));
        // The pool's stand-in for the server's 1045.
        let denied = mysqlpool::Error::InvalidUsernameOrPassword;
        assert_eq!(of(&denied), Some(Class::Rejected));
        // A message that reads like a refusal is not typed: unclassified.
        let text = std::io::Error::other("permission denied");
        assert_eq!(of(&*Box::<dyn Error>::from("permission denied")), None);
        assert_eq!(of(&text), Some(Class::Transient));
    }
}
