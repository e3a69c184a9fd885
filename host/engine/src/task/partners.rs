//! What runs partners' code for the engine: the wasmtime [`Runtime`] in a host, a fake partner in
//! the engine's own tests (as the SDK's `MockHost` stands in for the host in partners' tests).

use crate::agent::Agent;
use aiphost_runtime::{Hold, Invocation, InvocationEnd, KvOwner, Reporter, Runtime};
use aiphost_store::Store;
use futures::future::BoxFuture;
use std::sync::Arc;

/// Runs one invocation of a partner's code.
pub trait PartnerRunner: Send + Sync + 'static {
    /// Run `invocation` of `agent`: its reports go to `reporter`, its key-value entries are
    /// `owner`'s in `store`, and `holds` (its turn, its tenant's permit) are released only once
    /// its instance is gone.
    fn run<'a>(
        &'a self,
        agent: &'a Agent,
        reporter: Arc<dyn Reporter>,
        store: Store,
        owner: KvOwner<'a>,
        invocation: Invocation,
        holds: Vec<Hold>,
    ) -> BoxFuture<'a, InvocationEnd>;
}

impl PartnerRunner for Runtime {
    fn run<'a>(
        &'a self,
        agent: &'a Agent,
        reporter: Arc<dyn Reporter>,
        store: Store,
        owner: KvOwner<'a>,
        invocation: Invocation,
        holds: Vec<Hold>,
    ) -> BoxFuture<'a, InvocationEnd> {
        Box::pin(async move {
            match &agent.code {
                Some(code) => {
                    self.invoke(code, reporter, store, owner, invocation, holds)
                        .await
                }
                None => InvocationEnd::Trapped(format!(
                    "partner {:?} has no compiled component",
                    agent.id()
                )),
            }
        })
    }
}
