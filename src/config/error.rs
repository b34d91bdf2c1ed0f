//! Configuration errors: one `ConfigError` per problem, each naming the dataset (when
//! there is one) and the dotted YAML key, and `ConfigErrors` to hand all of them back at
//! once. `Report` is the collector the validators push into; it never stops at the
//! first problem. Nothing here may format a secret's value.

use std::fmt;

/// One problem with the configuration, phrased for the person editing the YAML file.
#[derive(Debug, Clone)]
pub struct ConfigError {
    /// The dataset's name as written, so the user can find the entry; `None` for
    /// `runtime` and `snapshots` keys.
    pub dataset: Option<String>,
    /// Dotted YAML path inside the dataset (or from the root), e.g. `acceleration.refresh_mode`.
    pub key: String,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl ConfigError {
    pub fn new(dataset: Option<&str>, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            dataset: dataset.map(str::to_string),
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(dataset) = &self.dataset {
            write!(f, "dataset '{dataset}': ")?;
        }
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Every problem found in one configuration, in file order.
#[derive(Debug, Clone)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// Collects errors for one scope (a dataset, or the root) so validators can keep going.
pub(crate) struct Report<'a> {
    dataset: Option<String>,
    errors: &'a mut Vec<ConfigError>,
}

impl<'a> Report<'a> {
    pub fn new(dataset: Option<String>, errors: &'a mut Vec<ConfigError>) -> Self {
        Self { dataset, errors }
    }

    pub fn error(&mut self, key: impl Into<String>, message: impl Into<String>) {
        let error = ConfigError::new(self.dataset.as_deref(), key, message);
        self.errors.push(error);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_dataset_and_key() {
        let error = ConfigError::new(Some("orders"), "acceleration.refresh_mode", "bad");
        assert_eq!(
            error.to_string(),
            "dataset 'orders': acceleration.refresh_mode: bad"
        );
        let error = ConfigError::new(None, "runtime.pg.listen", "bad");
        assert_eq!(error.to_string(), "runtime.pg.listen: bad");
    }

    #[test]
    fn errors_print_one_per_line() {
        let errors = ConfigErrors(vec![
            ConfigError::new(None, "a", "x"),
            ConfigError::new(None, "b", "y"),
        ]);
        assert_eq!(errors.to_string(), "a: x\nb: y");
    }
}
