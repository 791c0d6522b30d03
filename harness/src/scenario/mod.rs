//! Scenario files: format, checks, redaction and the runner.

pub mod check;
pub mod format;
pub mod redact;
pub mod run;

pub use format::{FormatError, Scenario};
