//! The typed reports a partner makes while it talks to people: streamed text, tool activity,
//! token usage and failures with a code (`aiphost:partner@0.2.0`).

use std::fmt;

use serde_json::{Map, Value};

use crate::bindings::aiphost::partner::types as wit;

/// The product [`Task::say`](crate::Task::say) streams the answer into.
pub const ANSWER_PRODUCT: &str = "answer";
/// The product [`Task::think`](crate::Task::think) streams the reasoning into.
pub const REASONING_PRODUCT: &str = "reasoning";

/// Which text of a product a streamed delta extends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Channel {
    /// What the partner answers (a chat UI shows it as the reply).
    Answer,
    /// What the partner thinks on the way (a chat UI may fold it away).
    Reasoning,
}

impl Channel {
    /// The channel's name: `"answer"` or `"reasoning"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Answer => "answer",
            Channel::Reasoning => "reasoning",
        }
    }

    pub(crate) fn to_wit(self) -> wit::TextChannel {
        match self {
            Channel::Answer => wit::TextChannel::Answer,
            Channel::Reasoning => wit::TextChannel::Reasoning,
        }
    }

    pub(crate) fn from_wit(channel: wit::TextChannel) -> Self {
        match channel {
            wit::TextChannel::Answer => Channel::Answer,
            wit::TextChannel::Reasoning => Channel::Reasoning,
        }
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool gave back, for [`Task::tool_result`](crate::Task::tool_result).
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutput {
    /// Any JSON value.
    Json(Value),
    /// Plain text.
    Text(String),
}

impl ToolOutput {
    pub(crate) fn into_wit(self) -> wit::ToolOutput {
        match self {
            ToolOutput::Json(value) => wit::ToolOutput::Json(value.to_string()),
            ToolOutput::Text(text) => wit::ToolOutput::Text(text),
        }
    }
}

impl fmt::Display for ToolOutput {
    /// `json:{"found":1}` or `text:...`, as the mock host's reports show it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolOutput::Json(value) => write!(f, "json:{value}"),
            ToolOutput::Text(text) => write!(f, "text:{text}"),
        }
    }
}

/// Token counts of the model calls behind an invocation, for [`Task::usage`](crate::Task::usage);
/// every field is optional.
///
/// ```
/// use aiphost_sdk::Usage;
///
/// let usage = Usage {
///     model: Some("small-1".into()),
///     input_tokens: Some(120),
///     output_tokens: Some(48),
///     ..Usage::default()
/// };
/// assert_eq!(usage.reasoning_tokens, None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// The model's name.
    pub model: Option<String>,
    /// Tokens read.
    pub input_tokens: Option<u64>,
    /// Tokens written.
    pub output_tokens: Option<u64>,
    /// Tokens spent reasoning.
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    pub(crate) fn into_wit(self) -> wit::Usage {
        wit::Usage {
            model: self.model,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_tokens,
        }
    }

    pub(crate) fn from_wit(usage: &wit::Usage) -> Self {
        Usage {
            model: usage.model.clone(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            reasoning_tokens: usage.reasoning_tokens,
        }
    }
}

/// A failure with a code a client can act on, for
/// [`Outcome::FailWith`](crate::Outcome::FailWith).
///
/// ```
/// use aiphost_sdk::Failure;
/// use aiphost_sdk::serde_json::json;
///
/// let busy = Failure::new("RATE_LIMITED", "the model is busy; try again in a minute")
///     .retryable()
///     .with_detail(json!({"retryAfterSeconds": 60}));
/// assert!(busy.retryable);
/// ```
///
/// The host checks it: a code of 1-64 bytes of `A-Z 0-9 _`, a message of at most 4 KiB, a detail
/// of at most 16 KiB.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// What went wrong, for programs: 1-64 bytes of `A-Z 0-9 _`, e.g. `RATE_LIMITED`.
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
    /// Whether trying the same request again may succeed.
    pub retryable: bool,
    /// More detail, as a JSON object.
    pub detail: Option<Map<String, Value>>,
}

impl Failure {
    /// A failure that is not retryable and has no detail.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Failure {
            code: code.into(),
            message: message.into(),
            retryable: false,
            detail: None,
        }
    }

    /// Marks the failure retryable.
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }

    /// Sets the detail. A JSON object is used as it is; any other value `v` becomes
    /// `{"value": v}`, because the detail is always an object.
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = Some(match detail {
            Value::Object(map) => map,
            other => Map::from_iter([("value".to_owned(), other)]),
        });
        self
    }

    pub(crate) fn into_wit(self) -> wit::Failure {
        wit::Failure {
            code: self.code,
            message: self.message,
            retryable: self.retryable,
            detail: self.detail.map(|d| Value::Object(d).to_string()),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn conversions() {
        let failure = Failure::new("X", "m").with_detail(json!(3)).into_wit();
        assert_eq!(failure.detail.as_deref(), Some(r#"{"value":3}"#));
        assert!(!failure.retryable);
        assert!(matches!(
            ToolOutput::Json(json!([1])).into_wit(),
            wit::ToolOutput::Json(j) if j == "[1]"
        ));
        assert_eq!(ToolOutput::Text("t".into()).to_string(), "text:t");
        for channel in [Channel::Answer, Channel::Reasoning] {
            assert_eq!(Channel::from_wit(channel.to_wit()), channel);
        }
        let usage = Usage {
            output_tokens: Some(3),
            ..Usage::default()
        };
        assert_eq!(Usage::from_wit(&usage.clone().into_wit()), usage);
    }
}
