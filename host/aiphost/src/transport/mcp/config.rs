//! The MCP door's settings: which browser origins may call it, how long a synchronous
//! `tools/call` waits for its task before it answers that the task goes on, and how many
//! 2025-11-25 sessions may be open at once.

use std::time::Duration;

/// The longest a `tools/call` waits by default: five minutes (a tool call's answer is awaited
/// by a model; longer work belongs to a task the client reads later).
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The most 2025-11-25 sessions open at once by default (each is a few KiB in memory until it
/// has been idle five minutes).
pub const DEFAULT_MAX_SESSIONS: usize = 1024;

/// MCP door settings.
#[derive(Clone, Debug)]
pub struct McpConfig {
    /// The `Origin`s a request may carry (`null` by name); any other present `Origin` is 403.
    /// Empty: every request with an `Origin` (from a browser page) is refused.
    pub allow_origins: Vec<String>,
    /// The longest a `tools/call` waits for its task to rest before it answers `STILL_WORKING`
    /// with the task's id (the task is not canceled).
    pub call_timeout: Duration,
    /// The most 2025-11-25 sessions open at once; an `initialize` beyond them is 503.
    pub max_sessions: usize,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            allow_origins: Vec::new(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_sessions: DEFAULT_MAX_SESSIONS,
        }
    }
}

impl McpConfig {
    /// Whether a request carrying `origin` may pass: only a listed one (compared without
    /// regard to ASCII case, as scheme and host are; `null` only when `null` is listed).
    pub fn allows_origin(&self, origin: &str) -> bool {
        self.allow_origins
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin.trim()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_origins_pass() {
        let none = McpConfig::default();
        assert!(!none.allows_origin("https://app.example"));
        assert!(!none.allows_origin("null"));
        let some = McpConfig {
            allow_origins: vec!["https://app.example".into(), "null".into()],
            ..McpConfig::default()
        };
        assert!(some.allows_origin("https://app.example"));
        assert!(some.allows_origin("HTTPS://APP.EXAMPLE"));
        assert!(some.allows_origin("null"));
        assert!(!some.allows_origin("https://app.example:8443"));
        assert!(!some.allows_origin("https://evil.example"));
        assert!(!some.allows_origin(""));
    }
}
