//! The `rpc` door: one command, answered with the task in the caller's dialect.

use super::command::{TaskAnswer, command, parse_command_of};
use super::state::AipState;
use crate::agent::Agent;
use crate::protocol::RpcError;
use serde_json::Value;
use std::sync::Arc;

/// The `rpc` method: carry out the command in `params` as the Leader `owner`.
pub(super) async fn rpc(
    app: &AipState,
    agent: &Arc<Agent>,
    owner: Option<&str>,
    params: Value,
) -> Result<TaskAnswer, RpcError> {
    let inbound = parse_command_of(owner, params)?;
    command(app, agent, inbound, None).await
}
