//! The MCP door's command-line flags. `aiphost serve` flattens them into its own and hands them
//! back here ([`McpFlags::apply`]): a door owns its flags.

use super::config::{DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_SESSIONS, McpConfig};
use crate::units;
use clap::Args;
use std::time::Duration;

/// The longest call timeout taken: a day (a call is an HTTP request held open).
const MAX_CALL_TIMEOUT_MS: u64 = 86_400_000;

/// The MCP door's flags; unset ones leave [`McpConfig::default`]'s values.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "MCP door")]
pub struct McpFlags {
    #[arg(
        long = "mcp-allow-origin",
        value_name = "ORIGIN",
        help = "A browser origin (scheme://host[:port], or `null`) whose pages may call the MCP door; repeat for more. A request carrying any other Origin header is refused with 403, as the MCP transport spec asks; requests without one (MCP clients that are programs) pass [default: none]"
    )]
    mcp_allow_origin: Vec<String>,
    #[arg(long, value_parser = call_timeout, value_name = "DURATION", help = format!("The longest a synchronous MCP tools/call waits for its task before it answers isError STILL_WORKING with the task's id (the task goes on; read it with AIP get or A2A GetTask); a duration such as 5m, a bare number in ms [default: {}s]", DEFAULT_CALL_TIMEOUT.as_secs()))]
    mcp_call_timeout: Option<u64>,
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000), value_name = "N", help = format!("The most MCP sessions (clients of protocol revision 2025-11-25, which open one with initialize; 2026-07-28 clients are stateless) open at once; an initialize beyond them is answered 503 with Retry-After. A session closes after five idle minutes [default: {DEFAULT_MAX_SESSIONS}]"))]
    mcp_max_sessions: Option<u32>,
}

impl McpFlags {
    /// `config` with every given flag applied.
    pub fn apply(&self, config: &mut McpConfig) {
        config
            .allow_origins
            .extend(self.mcp_allow_origin.iter().map(|o| o.trim().to_string()));
        if let Some(ms) = self.mcp_call_timeout {
            config.call_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = self.mcp_max_sessions {
            config.max_sessions = n as usize;
        }
    }
}

/// A call timeout: 1 ms to a day.
fn call_timeout(text: &str) -> Result<u64, String> {
    let ms = units::millis(text)?;
    if ms == 0 || ms > MAX_CALL_TIMEOUT_MS {
        return Err("must be from 1 ms to 1 day".into());
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_set_the_origins_and_the_call_timeout() {
        assert_eq!(call_timeout("2s"), Ok(2000));
        assert_eq!(call_timeout("250"), Ok(250));
        assert!(call_timeout("0").is_err());
        assert!(call_timeout("2d").is_err());
        let flags = McpFlags {
            mcp_allow_origin: vec!["https://app.example".into(), "null".into()],
            mcp_call_timeout: Some(1500),
            mcp_max_sessions: Some(7),
        };
        let mut config = McpConfig::default();
        assert_eq!(config.call_timeout, Duration::from_secs(300));
        flags.apply(&mut config);
        assert_eq!(config.allow_origins, ["https://app.example", "null"]);
        assert_eq!(config.call_timeout, Duration::from_millis(1500));
        assert_eq!(config.max_sessions, 7);
    }
}
