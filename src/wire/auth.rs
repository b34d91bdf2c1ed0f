//! Password authentication on the PostgreSQL port (`runtime.pg.auth`):
//! SCRAM-SHA-256 (with SCRAM-SHA-256-PLUS channel binding over TLS), MD5
//! and clear-text passwords, checked against the configured users, each
//! given by password or by a stored SCRAM verifier.
//!
//! A wrong password and an unknown user get the same FATAL 28P01, and an
//! unknown user goes through a complete SCRAM exchange with a made-up salt
//! that is the same at every attempt, so nothing tells whether a user exists.

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::scram::{ITERATIONS, Verifier};
use crate::config::{AuthConfig, AuthMethod, Secret};

/// The users allowed in and how they prove who they are.
pub struct Auth {
    pub method: AuthMethod,
    pub allow_cleartext_without_tls: bool,
    users: HashMap<String, Account>,
    /// Keys the made-up salts of unknown users.
    mock_key: [u8; 32],
    /// The `tls-server-end-point` hash of the listener's certificate, when
    /// SCRAM-SHA-256-PLUS is offered (over TLS).
    pub certificate_hash: Option<Vec<u8>>,
}

impl std::fmt::Debug for Auth {
    /// The method and the user names: never a password, a verifier or the
    /// key of the made-up salts.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut users: Vec<&str> = self.users.keys().map(String::as_str).collect();
        users.sort_unstable();
        f.debug_struct("Auth")
            .field("method", &self.method)
            .field("users", &users)
            .field("channel_binding", &self.certificate_hash.is_some())
            .finish_non_exhaustive()
    }
}

struct Account {
    /// The password itself, when configured as one (MD5 needs it).
    password: Option<Secret>,
    verifier: Verifier,
}

impl Auth {
    /// The user table of `config`; `cert_pem` is the TLS certificate chain
    /// when the listener has one (channel binding is offered then).
    pub fn new(config: &AuthConfig, cert_pem: Option<&[u8]>) -> Result<Auth, String> {
        let mut users = HashMap::new();
        for user in &config.users {
            let secret = user.password.expose();
            let account = if Verifier::is_verifier(secret) {
                let verifier = Verifier::parse(secret)
                    .map_err(|e| format!("runtime.pg.auth.users: user '{}': {e}", user.name))?;
                Account {
                    password: None,
                    verifier,
                }
            } else {
                let salt: [u8; 16] = rand::random();
                Account {
                    password: Some(user.password.clone()),
                    verifier: Verifier::from_password(secret, &salt, ITERATIONS),
                }
            };
            users.insert(user.name.clone(), account);
        }
        let certificate_hash = match cert_pem {
            Some(pem) => {
                let hash = super::scram::certificate_hash(pem).map_err(|e| {
                    format!("runtime.pg.tls.cert: cannot be used for SCRAM channel binding: {e}")
                })?;
                if hash.is_none() && config.method == AuthMethod::ScramSha256 {
                    tracing::warn!(
                        "runtime.pg.tls.cert is signed with an algorithm that has no hash for channel binding (such as Ed25519); SCRAM-SHA-256-PLUS is not offered"
                    );
                }
                hash
            }
            None => None,
        };
        Ok(Auth {
            method: config.method,
            allow_cleartext_without_tls: config.allow_cleartext_without_tls,
            users,
            mock_key: rand::random(),
            certificate_hash,
        })
    }

    /// What `user`'s SCRAM proof is checked against: a made-up verifier no
    /// proof matches when there is no such user.
    pub fn verifier(&self, user: &str) -> Verifier {
        match self.users.get(user) {
            Some(account) => account.verifier.clone(),
            None => {
                let seed = Sha256::new()
                    .chain_update(self.mock_key)
                    .chain_update(user.as_bytes())
                    .finalize();
                Verifier::unmatchable(&seed)
            }
        }
    }

    /// Whether `password` (sent in clear text) is `user`'s.
    pub fn cleartext_matches(&self, user: &str, password: &[u8]) -> bool {
        match self.users.get(user) {
            Some(Account {
                password: Some(secret),
                ..
            }) => bool::from(secret.expose().as_bytes().ct_eq(password)),
            Some(Account { verifier, .. }) => std::str::from_utf8(password)
                .is_ok_and(|password| verifier.matches_password(password)),
            None => false,
        }
    }

    /// Whether `response` is the MD5 answer of `user` to `salt`.
    pub fn md5_matches(&self, user: &str, salt: &[u8; 4], response: &[u8]) -> bool {
        match self.users.get(user) {
            Some(Account {
                password: Some(secret),
                ..
            }) => {
                let expected =
                    pgwire::api::auth::md5pass::hash_md5_password(user, secret.expose(), salt);
                bool::from(expected.as_bytes().ct_eq(response))
            }
            _ => false,
        }
    }
}
