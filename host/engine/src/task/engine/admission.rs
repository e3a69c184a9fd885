//! What a command must pass before it reaches its task, whatever door it came through: its
//! sender (a v2 `senderId` must be the authenticated Leader) and its content types (every data
//! item of a start or continue must be one some skill of the partner accepts).

use crate::agent::Agent;
use aiphost_protocol::{CommandKind, ErrorCode, Inbound, RpcError};
use serde_json::json;

/// Refuse `inbound` for `agent` if it may not reach a task.
pub(super) fn admit(agent: &Agent, inbound: &Inbound) -> Result<(), RpcError> {
    inbound.check_sender()?;
    content_types(agent, inbound)
}

/// -32005 when a start or continue carries an item none of the partner's skills accepts.
fn content_types(agent: &Agent, inbound: &Inbound) -> Result<(), RpcError> {
    if !matches!(
        inbound.command.command,
        CommandKind::Start | CommandKind::Continue
    ) {
        return Ok(());
    }
    for (i, item) in inbound.command.data_items.iter().enumerate() {
        let mime = item.mime_type();
        if !agent.manifest.accepts(mime) {
            return Err(RpcError::new(
                ErrorCode::ContentTypeNotSupported,
                json!({
                    "dataItem": format!("dataItems[{i}]"),
                    "mimeType": mime,
                    "accepted": agent.manifest.input_modes(),
                }),
            ));
        }
    }
    Ok(())
}
