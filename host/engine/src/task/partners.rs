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
            // A partner still compiling at start-up is waited for (the doors refuse new work
            // for it until it is ready; this is the host's own work, such as a group command).
            match agent.code.get().await {
                Ok(code) => {
                    self.invoke(&code, reporter, store, owner, invocation, holds)
                        .await
                }
                Err(reason) => {
                    InvocationEnd::Trapped(format!("partner {:?} cannot run: {reason}", agent.id()))
                }
            }
        })
    }
}
