//! Password authentication on the PostgreSQL port (`runtime.pg.auth`):
//! SCRAM-SHA-256 (with SCRAM-SHA-256-PLUS channel binding over TLS), MD5
//! and clear-text passwords, checked against the configured users.
//!
//! pgwire's SCRAM state machine does the protocol; which methods are
//! offered, the user table, and the failure a client sees are pgaccel's: a
//! wrong password and an unknown user get the same FATAL 28P01, and an
//! unknown user goes through a complete SCRAM exchange with a made-up salt
//! that is the same at every attempt, so nothing tells whether a user exists.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use pgwire::api::auth::sasl::scram::{ScramAuth, gen_salted_password};
use pgwire::api::auth::{AuthSource, LoginInfo, Password};
use pgwire::error::PgWireResult;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::config::{AuthConfig, AuthMethod, Secret};

/// The iteration count of the SCRAM verifiers (PostgreSQL's default).
const SCRAM_ITERATIONS: usize = 4096;

/// The users allowed in and how they prove who they are.
#[derive(Debug)]
pub struct Auth {
    pub method: AuthMethod,
    pub allow_cleartext_without_tls: bool,
    accounts: Arc<Accounts>,
    /// SCRAM without channel binding, for connections without TLS.
    pub scram: ScramAuth,
    /// SCRAM that also offers SCRAM-SHA-256-PLUS, for TLS connections.
    pub scram_plus: Option<ScramAuth>,
}

#[derive(Debug)]
struct Accounts {
    users: HashMap<String, Account>,
    /// Keys the made-up salts of unknown users.
    mock_key: [u8; 32],
}

#[derive(Debug)]
struct Account {
    password: Secret,
    salt: [u8; 16],
    /// SaltedPassword of RFC 5802, computed once at startup.
    salted: Vec<u8>,
}

impl Auth {
    /// The user table of `config`; `cert_pem` is the TLS certificate chain
    /// when the listener has one (channel binding is offered then).
    pub fn new(config: &AuthConfig, cert_pem: Option<&[u8]>) -> Result<Auth, String> {
        let users = config
            .users
            .iter()
            .map(|user| {
                let salt: [u8; 16] = rand::random();
                let salted = gen_salted_password(user.password.expose(), &salt, SCRAM_ITERATIONS);
                let account = Account {
                    password: user.password.clone(),
                    salt,
                    salted,
                };
                (user.name.clone(), account)
            })
            .collect();
        let accounts = Arc::new(Accounts {
            users,
            mock_key: rand::random(),
        });
        let scram = || {
            let mut scram = ScramAuth::new(Arc::new(Verifiers(Arc::clone(&accounts))));
            scram.set_iterations(SCRAM_ITERATIONS);
            scram
        };
        let scram_plus = match cert_pem {
            Some(pem) => {
                let mut plus = scram();
                plus.configure_certificate(pem).map_err(|e| {
                    format!("runtime.pg.tls.cert: cannot be used for SCRAM channel binding: {e}")
                })?;
                Some(plus)
            }
            None => None,
        };
        Ok(Auth {
            method: config.method,
            allow_cleartext_without_tls: config.allow_cleartext_without_tls,
            scram: scram(),
            scram_plus,
            accounts,
        })
    }

    /// Whether `password` (sent in clear text) is `user`'s.
    pub fn cleartext_matches(&self, user: &str, password: &[u8]) -> bool {
        match self.accounts.users.get(user) {
            Some(account) => bool::from(account.password.expose().as_bytes().ct_eq(password)),
            None => false,
        }
    }

    /// Whether `response` is the MD5 answer of `user` to `salt`.
    pub fn md5_matches(&self, user: &str, salt: &[u8; 4], response: &[u8]) -> bool {
        match self.accounts.users.get(user) {
            Some(account) => {
                let expected = pgwire::api::auth::md5pass::hash_md5_password(
                    user,
                    account.password.expose(),
                    salt,
                );
                bool::from(expected.as_bytes().ct_eq(response))
            }
            None => false,
        }
    }
}

/// The SCRAM verifiers pgwire asks for by login.
#[derive(Debug)]
struct Verifiers(Arc<Accounts>);

#[async_trait]
impl AuthSource for Verifiers {
    async fn get_password(&self, login: &LoginInfo) -> PgWireResult<Password> {
        let user = login.user().unwrap_or_default();
        Ok(match self.0.users.get(user) {
            Some(account) => Password::new(Some(account.salt.to_vec()), account.salted.clone()),
            None => {
                // A salt derived from the name, so that it is the same at
                // every attempt as a real user's is; the password is one
                // no proof can match.
                let digest = Sha256::new()
                    .chain_update(self.0.mock_key)
                    .chain_update(user.as_bytes())
                    .finalize();
                let unmatchable: [u8; 32] = rand::random();
                Password::new(Some(digest[..16].to_vec()), unmatchable.to_vec())
            }
        })
    }
}
