//! What the AIP door asks of whoever answers its `group` method: join a partner to the group an
//! invitation names. The AIP door owns the interface and names no group door; the server wires
//! it to the group door's memberships.

use crate::agent::Agent;
use crate::protocol::RpcError;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::Arc;

/// Answers `group` invitations.
pub trait GroupInvitations: Send + Sync {
    /// Answer an invitation (`params`) for `agent` from `leader` (the authenticated Leader,
    /// `None` for an open partner): the reply both dialects expect, or why not.
    fn join<'a>(
        &'a self,
        agent: &'a Arc<Agent>,
        leader: Option<&'a str>,
        params: &'a Value,
    ) -> BoxFuture<'a, Result<Value, RpcError>>;
}
