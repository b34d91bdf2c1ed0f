//! SCRAM-SHA-256 on the server side (RFC 5802 and RFC 7677), with
//! `tls-server-end-point` channel binding (RFC 5929) for
//! SCRAM-SHA-256-PLUS, as PostgreSQL speaks it.
//!
//! Written here rather than taken from pgwire: pgwire's exchange needs each
//! user's salted password, and a stored verifier (the
//! `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>` text that
//! PostgreSQL keeps in `pg_authid`) holds only StoredKey and ServerKey. A
//! proof can be checked with those two alone, so every user, whether
//! configured by password or by verifier, goes through this one exchange,
//! and the proof is compared in constant time. The primitives (PBKDF2,
//! HMAC, SHA-256, SASLprep) are ring's and pgwire's.

use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::{digest, hmac};
use subtle::ConstantTimeEq;

/// The iteration count of verifiers made from passwords (PostgreSQL's
/// default `scram_iterations`).
pub const ITERATIONS: u32 = 4096;

const PREFIX: &str = "SCRAM-SHA-256$";

/// What the server keeps of a password: enough to check a proof and to
/// prove itself, not enough to log in elsewhere.
#[derive(Clone)]
pub struct Verifier {
    iterations: u32,
    salt: Vec<u8>,
    stored_key: [u8; 32],
    server_key: [u8; 32],
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Verifier")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// The verifier of `password` with `salt` (SASLprep applied first, as
    /// PostgreSQL and its clients do).
    pub fn from_password(password: &str, salt: &[u8], iterations: u32) -> Verifier {
        let salted = pgwire::api::auth::sasl::scram::gen_salted_password(
            password,
            salt,
            iterations as usize,
        );
        let client_key = mac(&salted, b"Client Key");
        Verifier {
            iterations,
            salt: salt.to_vec(),
            stored_key: sha256(&client_key),
            server_key: mac(&salted, b"Server Key"),
        }
    }

    /// A verifier no proof matches, with a salt made from `seed`: what an
    /// unknown user is challenged with, the same at every attempt.
    pub fn unmatchable(seed: &[u8]) -> Verifier {
        Verifier {
            iterations: ITERATIONS,
            salt: sha256(seed)[..16].to_vec(),
            stored_key: rand::random(),
            server_key: rand::random(),
        }
    }

    /// Whether `text` has the form of a stored verifier (then it is never
    /// taken for a password, as in PostgreSQL's `CREATE ROLE … PASSWORD`).
    pub fn is_verifier(text: &str) -> bool {
        text.starts_with(PREFIX)
    }

    /// PostgreSQL's text form,
    /// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
    pub fn parse(text: &str) -> Result<Verifier, String> {
        const SHAPE: &str =
            "expected SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey> (base64)";
        let body = text
            .strip_prefix(PREFIX)
            .ok_or_else(|| format!("not a SCRAM-SHA-256 verifier; {SHAPE}"))?;
        let (params, keys) = body.split_once('$').ok_or_else(|| SHAPE.to_owned())?;
        let (iterations, salt) = params.split_once(':').ok_or_else(|| SHAPE.to_owned())?;
        let (stored_key, server_key) = keys.split_once(':').ok_or_else(|| SHAPE.to_owned())?;
        let iterations: u32 =
            iterations.parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                format!("iteration count '{iterations}' is not a positive number")
            })?;
        let salt = STANDARD
            .decode(salt)
            .map_err(|_| "the salt is not valid base64".to_owned())?;
        if salt.is_empty() {
            return Err("the salt is empty".to_owned());
        }
        let key = |text: &str, name: &str| -> Result<[u8; 32], String> {
            STANDARD
                .decode(text)
                .ok()
                .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
                .ok_or_else(|| format!("{name} is not 32 bytes of base64"))
        };
        Ok(Verifier {
            iterations,
            salt,
            stored_key: key(stored_key, "StoredKey")?,
            server_key: key(server_key, "ServerKey")?,
        })
    }

    /// Whether `password`, sent in clear text, is the one this verifier was
    /// made from.
    pub fn matches_password(&self, password: &str) -> bool {
        let candidate = Verifier::from_password(password, &self.salt, self.iterations);
        candidate.stored_key.ct_eq(&self.stored_key).into()
    }
}

impl fmt::Display for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{PREFIX}{}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(self.stored_key),
            STANDARD.encode(self.server_key)
        )
    }
}

/// Why an exchange stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum ScramError {
    /// A message that does not follow the protocol (SQLSTATE 08P01).
    Malformed(String),
    /// The proof does not match: a wrong password or an unknown user.
    Failed,
}

fn malformed(what: impl Into<String>) -> ScramError {
    ScramError::Malformed(what.into())
}

/// How the client asked to bind the exchange to the TLS channel.
enum Binding {
    /// `n`: the client does not support channel binding.
    Unsupported,
    /// `y`: it does, but thinks the server does not.
    NotOffered,
    /// `p=tls-server-end-point`.
    EndPoint,
}

/// The exchange after the server's first message, waiting for the
/// client's final one.
pub struct Pending {
    verifier: Verifier,
    /// base64 of the GS2 header and, with channel binding, the server
    /// certificate's hash: what the client's `c=` must be.
    channel_binding: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

/// Answers the client's first message for `mechanism` (`SCRAM-SHA-256` or
/// `SCRAM-SHA-256-PLUS`). `certificate_hash` is the TLS certificate's hash
/// when this connection offered SCRAM-SHA-256-PLUS.
pub fn server_first(
    verifier: Verifier,
    mechanism: &str,
    client_first: &[u8],
    certificate_hash: Option<&[u8]>,
) -> Result<(String, Pending), ScramError> {
    let text = std::str::from_utf8(client_first)
        .map_err(|_| malformed("the client's first SCRAM message is not UTF-8"))?;
    let (flag, rest) = text
        .split_once(',')
        .ok_or_else(|| malformed("the client's first SCRAM message has no GS2 header"))?;
    let binding = match flag {
        "n" => Binding::Unsupported,
        "y" => Binding::NotOffered,
        "p=tls-server-end-point" => Binding::EndPoint,
        other if other.starts_with("p=") => {
            return Err(malformed(format!(
                "unsupported SCRAM channel-binding type \"{}\"",
                &other[2..]
            )));
        }
        _ => return Err(malformed("the SCRAM GS2 header is not n, y or p=…")),
    };
    let plus = mechanism == "SCRAM-SHA-256-PLUS";
    match (&binding, plus) {
        (Binding::EndPoint, false) => {
            return Err(malformed(
                "the client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data",
            ));
        }
        (Binding::Unsupported | Binding::NotOffered, true) => {
            return Err(malformed(
                "the client selected SCRAM-SHA-256-PLUS, but the SCRAM message does not include channel binding data",
            ));
        }
        (Binding::EndPoint, true) if certificate_hash.is_none() => {
            return Err(malformed(
                "SCRAM-SHA-256-PLUS is only offered over TLS with a certificate",
            ));
        }
        // A client that supports binding but believes the server does
        // not, while it was offered: something between them removed it.
        (Binding::NotOffered, false) if certificate_hash.is_some() => {
            return Err(malformed(
                "SCRAM channel binding negotiation error: the client supports channel binding and thinks the server does not, but this server offered it",
            ));
        }
        _ => {}
    }
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or_else(|| malformed("the client's first SCRAM message has no GS2 header"))?;
    if !authzid.is_empty() {
        return Err(malformed(
            "client uses an authorization identity, which is not supported",
        ));
    }
    let header = &text[..text.len() - bare.len()];
    let mut fields = bare.split(',');
    match fields.next() {
        Some(user) if user.starts_with("n=") => {}
        Some(extension) if extension.starts_with("m=") => {
            return Err(malformed("SCRAM mandatory extensions are not supported"));
        }
        _ => return Err(malformed("the client's first SCRAM message has no n=")),
    }
    let client_nonce = fields
        .next()
        .and_then(|field| field.strip_prefix("r="))
        .filter(|nonce| !nonce.is_empty() && nonce.bytes().all(|b| (0x21..=0x7e).contains(&b)))
        .ok_or_else(|| malformed("the client's first SCRAM message has no valid r= nonce"))?;

    let nonce = format!(
        "{client_nonce}{}",
        STANDARD.encode(rand::random::<[u8; 18]>())
    );
    let server_first = format!(
        "r={nonce},s={},i={}",
        STANDARD.encode(&verifier.salt),
        verifier.iterations
    );
    let mut binding_input = header.as_bytes().to_vec();
    if let (Binding::EndPoint, Some(hash)) = (&binding, certificate_hash) {
        binding_input.extend_from_slice(hash);
    }
    let pending = Pending {
        verifier,
        channel_binding: STANDARD.encode(binding_input),
        client_first_bare: bare.to_owned(),
        server_first: server_first.clone(),
        nonce,
    };
    Ok((server_first, pending))
}

impl Pending {
    /// Checks the client's final message; on success, the server's final
    /// message (its own proof).
    pub fn server_final(self, client_final: &[u8]) -> Result<String, ScramError> {
        let text = std::str::from_utf8(client_final)
            .map_err(|_| malformed("the client's final SCRAM message is not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or_else(|| malformed("the client's final SCRAM message has no proof"))?;
        let mut fields = without_proof.split(',');
        let channel_binding = fields
            .next()
            .and_then(|field| field.strip_prefix("c="))
            .ok_or_else(|| malformed("the client's final SCRAM message has no c="))?;
        if channel_binding != self.channel_binding {
            return Err(malformed(
                "SCRAM channel binding check failed: the client's c= does not match",
            ));
        }
        let nonce = fields
            .next()
            .and_then(|field| field.strip_prefix("r="))
            .ok_or_else(|| malformed("the client's final SCRAM message has no r="))?;
        if nonce != self.nonce {
            return Err(malformed(
                "the nonce of the client's final SCRAM message does not match",
            ));
        }
        let proof = STANDARD
            .decode(proof)
            .ok()
            .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
            .ok_or_else(|| malformed("the SCRAM client proof is not 32 bytes of base64"))?;

        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare, self.server_first
        );
        let signature = mac(&self.verifier.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(signature).map(|(p, s)| p ^ s).collect();
        if !bool::from(sha256(&client_key).ct_eq(&self.verifier.stored_key)) {
            return Err(ScramError::Failed);
        }
        let server_signature = mac(&self.verifier.server_key, auth_message.as_bytes());
        Ok(format!("v={}", STANDARD.encode(server_signature)))
    }
}

/// The `tls-server-end-point` hash of the first certificate of a PEM chain:
/// SHA-256 for certificates signed with MD5, SHA-1 or SHA-256, otherwise
/// the signature's own hash. `None` when the signature has no hash to use
/// (Ed25519): channel binding is then not offered, as in PostgreSQL.
pub fn certificate_hash(chain_pem: &[u8]) -> Result<Option<Vec<u8>>, String> {
    use x509_certificate::{CapturedX509Certificate, SignatureAlgorithm};
    let chain = CapturedX509Certificate::from_pem_multiple(chain_pem)
        .map_err(|e| format!("cannot read the certificate: {e}"))?;
    let first = chain
        .first()
        .ok_or_else(|| "no certificate in the file".to_owned())?;
    let algorithm = match first.signature_algorithm() {
        Some(
            SignatureAlgorithm::RsaSha1
            | SignatureAlgorithm::RsaSha256
            | SignatureAlgorithm::EcdsaSha256,
        ) => &digest::SHA256,
        Some(SignatureAlgorithm::RsaSha384 | SignatureAlgorithm::EcdsaSha384) => &digest::SHA384,
        Some(SignatureAlgorithm::RsaSha512) => &digest::SHA512,
        _ => return Ok(None),
    };
    Ok(Some(
        digest::digest(algorithm, first.constructed_data())
            .as_ref()
            .to_vec(),
    ))
}

fn mac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    hmac::sign(&key, message)
        .as_ref()
        .try_into()
        .expect("HMAC-SHA-256 is 32 bytes")
}

fn sha256(data: &[u8]) -> [u8; 32] {
    digest::digest(&digest::SHA256, data)
        .as_ref()
        .try_into()
        .expect("SHA-256 is 32 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's side of the exchange, as RFC 5802 computes it.
    fn client_proof(
        password: &str,
        header: &str,
        bare: &str,
        server_first: &str,
        binding_data: &[u8],
    ) -> (String, [u8; 32]) {
        let fields: std::collections::HashMap<&str, &str> = server_first
            .split(',')
            .filter_map(|field| field.split_once('='))
            .collect();
        let salt = STANDARD.decode(fields["s"]).unwrap();
        let iterations: u32 = fields["i"].parse().unwrap();
        let salted = pgwire::api::auth::sasl::scram::gen_salted_password(
            password,
            &salt,
            iterations as usize,
        );
        let client_key = mac(&salted, b"Client Key");
        let mut input = header.as_bytes().to_vec();
        input.extend_from_slice(binding_data);
        let without_proof = format!("c={},r={}", STANDARD.encode(input), fields["r"]);
        let auth_message = format!("{bare},{server_first},{without_proof}");
        let signature = mac(&sha256(&client_key), auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_signature = mac(&mac(&salted, b"Server Key"), auth_message.as_bytes());
        (
            format!("{without_proof},p={}", STANDARD.encode(proof)),
            server_signature,
        )
    }

    fn log_in(verifier: &Verifier, password: &str) -> Result<String, ScramError> {
        let bare = "n=,r=clientnonce";
        let (first, pending) = server_first(
            verifier.clone(),
            "SCRAM-SHA-256",
            format!("n,,{bare}").as_bytes(),
            None,
        )?;
        assert!(first.starts_with("r=clientnonce"), "{first}");
        let (last, expected) = client_proof(password, "n,,", bare, &first, &[]);
        let answer = pending.server_final(last.as_bytes())?;
        assert_eq!(answer, format!("v={}", STANDARD.encode(expected)));
        Ok(answer)
    }

    #[test]
    fn a_password_verifier_accepts_its_password_only() {
        let verifier = Verifier::from_password("pa ss", b"0123456789abcdef", ITERATIONS);
        log_in(&verifier, "pa ss").expect("the right password");
        assert_eq!(log_in(&verifier, "pa sss"), Err(ScramError::Failed));
        assert!(verifier.matches_password("pa ss"));
        assert!(!verifier.matches_password("pass"));
        // An unknown user's made-up verifier matches nothing, and its salt
        // is the same at every attempt.
        let unknown = Verifier::unmatchable(b"nobody");
        assert_eq!(log_in(&unknown, ""), Err(ScramError::Failed));
        assert_eq!(unknown.salt, Verifier::unmatchable(b"nobody").salt);
    }

    #[test]
    fn a_verifier_round_trips_through_its_text_form() {
        let verifier = Verifier::from_password("secret", b"salty", 10_000);
        let text = verifier.to_string();
        assert!(Verifier::is_verifier(&text));
        let parsed = Verifier::parse(&text).unwrap();
        assert_eq!(parsed.to_string(), text);
        log_in(&parsed, "secret").expect("the parsed verifier");
        for (bad, reason) in [
            ("SCRAM-SHA-256$4096:c2FsdA==", "expected"),
            ("SCRAM-SHA-256$x:c2FsdA==$AAAA:AAAA", "iteration count 'x'"),
            ("SCRAM-SHA-256$0:c2FsdA==$AAAA:AAAA", "iteration count '0'"),
            ("SCRAM-SHA-256$4096:!!$AAAA:AAAA", "salt"),
            ("SCRAM-SHA-256$4096:c2FsdA==$AAAA:AAAA", "StoredKey"),
            ("md5abc", "not a SCRAM-SHA-256 verifier"),
        ] {
            let error = Verifier::parse(bad).unwrap_err();
            assert!(error.contains(reason), "{bad}: {error}");
        }
    }

    #[test]
    fn channel_binding_is_checked_against_the_certificate() {
        let verifier = Verifier::from_password("pw", b"salt-salt", ITERATIONS);
        let hash = [7u8; 32];
        let header = "p=tls-server-end-point,,";
        let bare = "n=,r=abc";
        let first = format!("{header}{bare}");
        let start = || {
            server_first(
                verifier.clone(),
                "SCRAM-SHA-256-PLUS",
                first.as_bytes(),
                Some(&hash),
            )
            .unwrap()
        };
        let (server, pending) = start();
        let (last, _) = client_proof("pw", header, bare, &server, &hash);
        pending
            .server_final(last.as_bytes())
            .expect("bound to the right certificate");

        let (server, pending) = start();
        let (last, _) = client_proof("pw", header, bare, &server, &[8u8; 32]);
        assert!(matches!(
            pending.server_final(last.as_bytes()),
            Err(ScramError::Malformed(m)) if m.contains("channel binding check failed")
        ));

        // Downgrades and mismatched mechanisms are refused.
        let refused = |mechanism: &str, message: &str, hash: Option<&[u8]>| match server_first(
            verifier.clone(),
            mechanism,
            message.as_bytes(),
            hash,
        ) {
            Err(ScramError::Malformed(m)) => m,
            other => panic!("{mechanism} {message}: {:?}", other.map(|(s, _)| s)),
        };
        assert!(refused("SCRAM-SHA-256", "y,,n=,r=a", Some(&hash)).contains("negotiation"));
        assert!(refused("SCRAM-SHA-256", &first, Some(&hash)).contains("without channel binding"));
        assert!(
            refused("SCRAM-SHA-256-PLUS", "n,,n=,r=a", Some(&hash)).contains("does not include")
        );
        assert!(refused("SCRAM-SHA-256-PLUS", &first, None).contains("only offered over TLS"));
        assert!(refused("SCRAM-SHA-256", "p=tls-unique,,n=,r=a", None).contains("tls-unique"));
        assert!(refused("SCRAM-SHA-256", "n,a=admin,n=,r=a", None).contains("authorization"));
        assert!(refused("SCRAM-SHA-256", "n,,m=x,n=,r=a", None).contains("mandatory"));
        assert!(refused("SCRAM-SHA-256", "n,,n=,r=", None).contains("nonce"));
        // `y` is fine when binding was not offered (no TLS).
        server_first(verifier.clone(), "SCRAM-SHA-256", b"y,,n=,r=a", None).expect("y without TLS");
    }

    #[test]
    fn a_final_message_with_another_nonce_is_refused() {
        let verifier = Verifier::from_password("pw", b"salt-salt", ITERATIONS);
        let (_, pending) = server_first(verifier, "SCRAM-SHA-256", b"n,,n=,r=abc", None).unwrap();
        let forged = format!("c=biws,r=abcXYZ,p={}", STANDARD.encode([0u8; 32]));
        assert!(matches!(
            pending.server_final(forged.as_bytes()),
            Err(ScramError::Malformed(m)) if m.contains("nonce")
        ));
    }
}
