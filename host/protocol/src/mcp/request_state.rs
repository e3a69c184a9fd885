//! The `requestState` of an MRTR round (spec 2026-07-28 `basic/patterns/mrtr.mdx`): what the
//! door needs to take up a call again when the client retries it with its answer — the task,
//! the key of the form it asked, the tool that was called, and how many wrong answers the call
//! has had so far. It is base64url (no padding) of compact JSON `{"t", "k", "n", "w"}`.
//!
//! It is **not sealed**: the client echoes it and could change it. So nothing in it is trusted
//! beyond what the caller could do anyway — the door reads the task in the caller's own
//! namespace, checks it was started by this tool and awaits this very key (a forged state can at
//! most continue another task the same caller could continue over AIP), and a forged `w` only
//! gives more tries at a form the engine checks every time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};

/// The longest `requestState` this door reads (its own are far shorter: ids and a tool name).
const MAX_ENCODED: usize = 2048;

/// Where an MRTR call stands between two rounds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestState {
    /// The task the call runs.
    #[serde(rename = "t")]
    pub task: String,
    /// The key of the form asked (`inputRequests`' key, [`super::elicitation::key`]).
    #[serde(rename = "k")]
    pub key: String,
    /// The tool called (the retry must call the same).
    #[serde(rename = "n")]
    pub tool: String,
    /// Wrong answers given so far in this call.
    #[serde(rename = "w", default)]
    pub wrong: u32,
}

/// A `requestState` this door did not write (or one the client changed past reading).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("requestState is not one this MCP door issued: {0}")]
pub struct BadRequestState(pub String);

impl RequestState {
    /// The state as the opaque string sent to the client.
    pub fn encode(&self) -> String {
        // Serialising plain strings and a number cannot fail.
        let json = serde_json::to_vec(self).unwrap_or_default();
        URL_SAFE_NO_PAD.encode(json)
    }

    /// The state a client echoed.
    pub fn decode(text: &str) -> Result<RequestState, BadRequestState> {
        if text.len() > MAX_ENCODED {
            return Err(BadRequestState(format!(
                "{} characters, more than the {MAX_ENCODED} this door writes",
                text.len()
            )));
        }
        let bytes = URL_SAFE_NO_PAD
            .decode(text.trim_end_matches('='))
            .map_err(|e| BadRequestState(format!("not base64url: {e}")))?;
        serde_json::from_slice(&bytes).map_err(|e| BadRequestState(format!("not its JSON: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_round_trips_as_base64url_json() {
        let state = RequestState {
            task: "task-1".into(),
            key: "trip.1700000000123".into(),
            tool: "concierge".into(),
            wrong: 2,
        };
        let text = state.encode();
        assert!(
            text.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{text}"
        );
        assert_eq!(RequestState::decode(&text), Ok(state));
        let json = URL_SAFE_NO_PAD.decode(&text).unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&json).unwrap(),
            serde_json::json!({"t": "task-1", "k": "trip.1700000000123", "n": "concierge", "w": 2})
        );
    }

    #[test]
    fn a_missing_count_is_zero_and_anything_else_is_refused() {
        let text = URL_SAFE_NO_PAD.encode(br#"{"t":"x","k":"y","n":"z"}"#);
        assert_eq!(RequestState::decode(&text).map(|s| s.wrong), Ok(0));
        assert!(RequestState::decode("not base64!").is_err());
        assert!(RequestState::decode(&URL_SAFE_NO_PAD.encode(b"[1]")).is_err());
        assert!(RequestState::decode(&URL_SAFE_NO_PAD.encode(br#"{"t":"x"}"#)).is_err());
        assert!(RequestState::decode(&"A".repeat(MAX_ENCODED + 1)).is_err());
    }
}
