//! The engine's partner runner with partners' log lines kept: the wasmtime runtime, each
//! invocation's code given a sink into its partner's log ([`super::sink::InvocationSink`]).

use super::PartnerLogs;
use super::sink::InvocationSink;
use crate::agent::Agent;
use crate::runtime::{Hold, Invocation, InvocationEnd, KvOwner, Reporter, Runtime};
use crate::store::Store;
use crate::task::PartnerRunner;
use futures::future::BoxFuture;
use std::sync::Arc;

/// Runs partners on `runtime`, their log lines into `logs`.
pub struct LoggingRunner {
    /// The runtime that runs them.
    pub runtime: Arc<Runtime>,
    /// Where their lines are kept.
    pub logs: Arc<PartnerLogs>,
}

impl PartnerRunner for LoggingRunner {
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
            // As the runtime's own runner: a partner still compiling is waited for.
            match agent.code.get().await {
                Ok(code) => {
                    let sink = InvocationSink::new(self.logs.of(agent), agent.version);
                    let code = code.logging_to(Arc::new(sink));
                    self.runtime
                        .invoke(&code, reporter, store, owner, invocation, holds)
                        .await
                }
                Err(reason) => {
                    InvocationEnd::Trapped(format!("partner {:?} cannot run: {reason}", agent.id()))
                }
            }
        })
    }
}
