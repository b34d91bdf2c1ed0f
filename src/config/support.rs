//! What this version of pgaccel does not implement yet. The configuration may be valid,
//! but startup refuses it rather than silently behaving differently. Every key and
//! source the seeds describe is implemented today, so nothing is refused; a feature
//! that lands partly adds its refusal here, naming dataset and key.

use super::Config;
use super::error::ConfigError;

/// Every key whose behaviour is not implemented yet, naming dataset and key.
pub(crate) fn unsupported(_config: &Config) -> Vec<ConfigError> {
    Vec::new()
}
