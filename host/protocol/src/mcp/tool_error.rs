//! A tool execution error (the spec's `isError: true` result): what an MCP client's model reads
//! and can correct itself by, as opposed to a JSON-RPC error, which only its program sees.

use crate::error_object::error_object;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// `isError`, the text `CODE: message`, and `{"error": {code, message, …facts}}` as
/// `structuredContent` (the same error object as the chat doors' refusals).
pub fn tool_error(code: &str, facts: Value) -> CallToolResult {
    let error = error_object(code, facts);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or(code)
        .to_string();
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("{code}: {message}"))]);
    result.structured_content = Some(json!({ "error": error }));
    result
}
