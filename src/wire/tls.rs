//! TLS on the listeners (`runtime.pg.tls`, `runtime.http.tls`): the server
//! certificate and key are loaded once at startup, and a failure to load
//! them stops startup with an error naming the key and the file; pgaccel
//! never falls back to plain text when TLS was configured.
//!
//! rustls runs with ring as its one crypto provider, installed explicitly
//! (a second provider in the tree would otherwise make the default builder
//! panic).

use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::crypto::ring;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config::{TlsConfig, TlsVersion};

/// The ALPN protocol name PostgreSQL clients offer (and require for a
/// direct TLS connection).
pub const POSTGRESQL_ALPN: &[u8] = b"postgresql";

/// What the listener needs to speak TLS.
#[derive(Clone)]
pub struct Tls {
    pub acceptor: TlsAcceptor,
    /// Plain-text startups are refused.
    pub required: bool,
    /// The certificate chain as read (PEM): SCRAM channel binding hashes the
    /// server's certificate.
    pub cert_pem: Arc<Vec<u8>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

/// Loads the certificate chain and key `config` names for the PostgreSQL
/// listener; the error names the configuration key and file at fault.
pub fn load(config: &TlsConfig) -> Result<Tls, String> {
    let (server, cert_pem) = server_config(config, POSTGRESQL_ALPN)?;
    Ok(Tls {
        acceptor: TlsAcceptor::from(server),
        required: config.required,
        cert_pem: Arc::new(cert_pem),
    })
}

/// The rustls server configuration of a listener, offering the one ALPN
/// protocol `alpn`; with the certificate chain as read (PEM).
pub fn server_config(
    config: &TlsConfig,
    alpn: &[u8],
) -> Result<(Arc<ServerConfig>, Vec<u8>), String> {
    let cert_key = format!("{}.cert", config.setting);
    let key_key = format!("{}.key", config.setting);
    let cert_pem = read(&config.cert, &cert_key)?;
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unusable(&cert_key, &config.cert, e))?;
    if chain.is_empty() {
        return Err(unusable(
            &cert_key,
            &config.cert,
            "it holds no CERTIFICATE block",
        ));
    }
    let key_pem = read(&config.key, &key_key)?;
    // PKCS#8, PKCS#1 (RSA) and SEC1 (EC) keys alike.
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        unusable(
            &key_key,
            &config.key,
            format!("{e} (a PKCS#8, PKCS#1 or SEC1 private key in PEM is expected)"),
        )
    })?;
    let versions: &[&rustls::SupportedProtocolVersion] = match config.min_version {
        TlsVersion::Tls12 => &[&rustls::version::TLS13, &rustls::version::TLS12],
        TlsVersion::Tls13 => &[&rustls::version::TLS13],
    };
    let mut server = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_protocol_versions(versions)
        .map_err(|e| format!("{}: {e}", config.setting))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            format!(
                "{}: the key {} does not fit the certificate {}: {e}",
                config.setting,
                config.key.display(),
                config.cert.display()
            )
        })?;
    server.alpn_protocols = vec![alpn.to_vec()];
    Ok((Arc::new(server), cert_pem))
}

fn read(path: &Path, key: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| unusable(key, path, e))
}

fn unusable(key: &str, path: &Path, why: impl std::fmt::Display) -> String {
    format!("{key}: cannot use {}: {why}", path.display())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::*;

    fn openssl(args: &[&str]) {
        let output = Command::new("openssl")
            .args(args)
            .output()
            .expect("openssl runs");
        assert!(
            output.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// A self-signed certificate for `key`, written beside it.
    fn certificate(key: &Path) -> std::path::PathBuf {
        let cert = key.with_extension("crt");
        openssl(&[
            "req",
            "-x509",
            "-new",
            "-key",
            key.to_str().unwrap(),
            "-subj",
            "/CN=localhost",
            "-days",
            "1",
            "-out",
            cert.to_str().unwrap(),
        ]);
        cert
    }

    fn config(cert: &Path, key: &Path) -> TlsConfig {
        TlsConfig {
            setting: "runtime.pg.tls",
            cert: cert.to_owned(),
            key: key.to_owned(),
            required: false,
            min_version: TlsVersion::Tls12,
        }
    }

    #[test]
    fn keys_load_in_pkcs8_pkcs1_and_sec1_form() {
        let folder = tempfile::tempdir().unwrap();
        let cases: [(&str, &[&str], &str); 3] = [
            (
                "rsa",
                &["genrsa", "-traditional", "-out", "{key}", "2048"],
                "BEGIN RSA PRIVATE KEY",
            ),
            (
                "ec",
                &[
                    "ecparam",
                    "-name",
                    "prime256v1",
                    "-genkey",
                    "-noout",
                    "-out",
                    "{key}",
                ],
                "BEGIN EC PRIVATE KEY",
            ),
            (
                "pkcs8",
                &["genpkey", "-algorithm", "ed25519", "-out", "{key}"],
                "BEGIN PRIVATE KEY",
            ),
        ];
        for (name, generate, form) in cases {
            let key = folder.path().join(format!("{name}.key"));
            let key_text = key.to_str().unwrap();
            let args: Vec<&str> = generate
                .iter()
                .map(|arg| if *arg == "{key}" { key_text } else { arg })
                .collect();
            openssl(&args);
            assert!(std::fs::read_to_string(&key).unwrap().contains(form));
            let cert = certificate(&key);
            let tls = load(&config(&cert, &key)).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!tls.required);
        }
    }

    #[test]
    fn errors_name_the_key_and_the_file() {
        let folder = tempfile::tempdir().unwrap();
        let key = folder.path().join("a.key");
        openssl(&[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            key.to_str().unwrap(),
        ]);
        let cert = certificate(&key);
        let other = folder.path().join("b.key");
        openssl(&[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            other.to_str().unwrap(),
        ]);

        let missing = folder.path().join("missing.crt");
        let error = load(&config(&missing, &key)).unwrap_err();
        assert!(
            error.starts_with(&format!(
                "runtime.pg.tls.cert: cannot use {}",
                missing.display()
            )),
            "{error}"
        );

        let error = load(&config(&cert, &cert)).unwrap_err();
        assert!(
            error.starts_with(&format!(
                "runtime.pg.tls.key: cannot use {}",
                cert.display()
            )),
            "{error}"
        );

        let error = load(&config(&key, &key)).unwrap_err();
        assert!(error.contains("no CERTIFICATE block"), "{error}");

        let error = load(&config(&cert, &other)).unwrap_err();
        assert!(error.contains("does not fit the certificate"), "{error}");
    }
}
