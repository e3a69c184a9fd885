//! What the AIP methods share: a command parsed in the caller's namespace, carried out by the
//! engine, and the task rendered in the caller's dialect (the engine's refusal in AIP's words).

use super::state::AipState;
use crate::agent::Agent;
use crate::aip_error;
use crate::model::Inbound;
use crate::protocol::RpcError;
use crate::protocol::aip::dialect::{self, Dialect, TaskOnWire};
use crate::task::{Reply, Subscribe};
use serde_json::Value;
use std::sync::Arc;

/// The Leader command in `params`, acting in `owner`'s task namespace (the authenticated Leader;
/// `None` for an open partner).
pub(super) fn parse_command_of(owner: Option<&str>, params: Value) -> Result<Inbound, RpcError> {
    let mut inbound = dialect::parse_command(params)?;
    inbound.owner = owner.map(str::to_string);
    Ok(inbound)
}

/// A command's answer: the task as the engine answered it, and how the caller reads it.
pub(super) struct TaskAnswer {
    reply: Reply,
    dialect: Dialect,
    agent: Arc<Agent>,
}

/// Serialized, the answer is the task in the caller's dialect, as the partner's reply
/// (`TaskOnWire`, which borrows it), written straight to bytes.
impl serde::Serialize for TaskAnswer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        TaskOnWire::new(
            &self.reply.task,
            self.dialect,
            self.agent.aic(),
            self.reply.history.as_ref(),
        )
        .serialize(serializer)
    }
}

/// Carry out a command and answer with the task in the caller's
/// dialect; `subscribe` for a `notification/start`.
pub(super) async fn command(
    app: &AipState,
    agent: &Arc<Agent>,
    inbound: Inbound,
    subscribe: Option<Subscribe>,
) -> Result<TaskAnswer, RpcError> {
    let dialect = Dialect::of(inbound.form.as_ref());
    let reply = app
        .engine
        .command(agent, inbound, subscribe)
        .await
        .map_err(aip_error::engine)?;
    Ok(TaskAnswer {
        reply,
        dialect,
        agent: agent.clone(),
    })
}
