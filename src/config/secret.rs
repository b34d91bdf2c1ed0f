//! Secrets and `${secrets:NAME}` / `${env:NAME}` substitution. `Secret` hides its value
//! from `Debug` and `Display` so it cannot leak into logs or error messages; substitution
//! errors name the variable, never a value.

use std::fmt;

/// A value that must never be printed: passwords, connection strings, API keys.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The value itself, for handing to a driver; never log what this returns.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("********")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("********")
    }
}

/// Where substitution reads variables: the process environment in production, a map in
/// tests (so tests need not mutate the process environment).
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Reads the process environment; the production `Lookup`.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Replaces every `${secrets:NAME}` and `${env:NAME}` in `text`. The error is a message
/// for the user that names the variable and never contains a value.
pub(crate) fn substitute(text: &str, lookup: Lookup<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| "unterminated '${'; write ${secrets:NAME} or ${env:NAME}".to_string())?;
        out.push_str(&resolve(&after[..end], lookup)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Resolves the inside of one `${...}` reference.
fn resolve(reference: &str, lookup: Lookup<'_>) -> Result<String, String> {
    let (kind, name) = reference.split_once(':').unwrap_or((reference, ""));
    if !is_variable_name(name) {
        return Err(format!(
            "invalid reference '${{{reference}}}'; write ${{secrets:NAME}} or ${{env:NAME}} with NAME made of letters, digits and _"
        ));
    }
    match kind {
        "env" => lookup(name).ok_or_else(|| {
            format!("environment variable '{name}' is not set (referenced as ${{env:{name}}})")
        }),
        "secrets" => {
            let prefixed = format!("PGACCEL_SECRET_{name}");
            lookup(&prefixed).or_else(|| lookup(name)).ok_or_else(|| {
                format!(
                    "secret '{name}' is not set; set the environment variable {prefixed} or {name}"
                )
            })
        }
        _ => Err(format!(
            "unknown reference kind '{kind}' in '${{{reference}}}'; valid kinds are secrets, env"
        )),
    }
}

fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "PGACCEL_SECRET_PW" => Some("hunter2".into()),
            "PW" => Some("shadowed".into()),
            "PLAIN" => Some("plain".into()),
            "HOST" => Some("db.local".into()),
            _ => None,
        }
    }

    #[test]
    fn secret_is_redacted() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret}"), "********");
        assert_eq!(format!("{secret:?}"), "********");
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn substitutes_env_and_secrets() {
        assert_eq!(substitute("${secrets:PW}", &env).unwrap(), "hunter2");
        assert_eq!(substitute("${secrets:PLAIN}", &env).unwrap(), "plain");
        assert_eq!(
            substitute("host=${env:HOST} port=1", &env).unwrap(),
            "host=db.local port=1"
        );
        assert_eq!(substitute("no references", &env).unwrap(), "no references");
    }

    #[test]
    fn missing_variable_names_it() {
        let error = substitute("${secrets:NOPE}", &env).unwrap_err();
        assert!(error.contains("PGACCEL_SECRET_NOPE"), "{error}");
        let error = substitute("${env:NOPE}", &env).unwrap_err();
        assert!(error.contains("'NOPE'"), "{error}");
    }

    #[test]
    fn malformed_references_are_errors() {
        assert!(substitute("${secrets:PW", &env).is_err());
        assert!(substitute("${vault:PW}", &env).is_err());
        assert!(substitute("${env:}", &env).is_err());
    }
}
