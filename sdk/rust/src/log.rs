//! Structured logging into the host's `tracing`, tagged with the agent and the task.
//!
//! ```no_run
//! use aiphost_sdk::log;
//!
//! log::info("planning the trip");
//! log::with_fields(log::Level::Debug, "parsed input", &[("destination", "Beijing")]);
//! ```
//!
//! Outside a component (in native unit tests of a partner) the messages go to the running
//! [`MockHost`](crate::testing::MockHost), which records them, and to standard error (which the
//! test harness shows for a failing test).

use std::fmt;

/// How important a log message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Very detailed tracing.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that the partner can handle.
    Warn,
    /// Something failed.
    Error,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        })
    }
}

/// Logs `message` at trace level.
pub fn trace(message: &str) {
    with_fields(Level::Trace, message, &[]);
}

/// Logs `message` at debug level.
pub fn debug(message: &str) {
    with_fields(Level::Debug, message, &[]);
}

/// Logs `message` at info level.
pub fn info(message: &str) {
    with_fields(Level::Info, message, &[]);
}

/// Logs `message` at warn level.
pub fn warn(message: &str) {
    with_fields(Level::Warn, message, &[]);
}

/// Logs `message` at error level.
pub fn error(message: &str) {
    with_fields(Level::Error, message, &[]);
}

/// Logs `message` at `level` with structured `fields` (key, value).
pub fn with_fields(level: Level, message: &str, fields: &[(&str, &str)]) {
    #[cfg(target_arch = "wasm32")]
    {
        use crate::bindings::aiphost::partner::log as wit_log;
        let level = match level {
            Level::Trace => wit_log::Level::Trace,
            Level::Debug => wit_log::Level::Debug,
            Level::Info => wit_log::Level::Info,
            Level::Warn => wit_log::Level::Warn,
            Level::Error => wit_log::Level::Error,
        };
        let fields: Vec<(String, String)> = fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        wit_log::log(level, message, &fields);
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::log(level, message, fields);
        let mut line = format!("{level} {message}");
        for (k, v) in fields {
            line.push_str(&format!(" {k}={v:?}"));
        }
        eprintln!("{line}");
    }
}
