//! What the engine tells whoever watches it ([`Observer`]): the host turns it into its metrics,
//! per partner. The engine names no metrics crate; every method has a default that does
//! nothing, and [`Unobserved`] is an observer that hears nothing (tests, tools).

use aiphost_runtime::InvocationEnd;
use std::time::Duration;

/// How an invocation ended, as the metrics label it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvocationOutcome {
    /// `handle` returned `ok`.
    Ok,
    /// `handle` returned `err`.
    Failed,
    /// The partner trapped or broke a limit (memory, stack, fuel).
    Trap,
    /// It ran past its deadline and was stopped.
    Deadline,
    /// It was stopped by a cancel of its task.
    Aborted,
}

impl InvocationOutcome {
    /// Every outcome, in label order.
    pub const ALL: [InvocationOutcome; 5] = [
        InvocationOutcome::Ok,
        InvocationOutcome::Failed,
        InvocationOutcome::Trap,
        InvocationOutcome::Deadline,
        InvocationOutcome::Aborted,
    ];

    /// The outcome of an invocation that ended with `end` (`None`: aborted).
    pub fn of(end: Option<&InvocationEnd>) -> Self {
        match end {
            Some(InvocationEnd::Returned) => InvocationOutcome::Ok,
            Some(InvocationEnd::PartnerError(_)) => InvocationOutcome::Failed,
            Some(InvocationEnd::Trapped(_)) => InvocationOutcome::Trap,
            Some(InvocationEnd::DeadlineExceeded(_)) => InvocationOutcome::Deadline,
            None => InvocationOutcome::Aborted,
        }
    }

    /// Its label value.
    pub fn as_str(self) -> &'static str {
        match self {
            InvocationOutcome::Ok => "ok",
            InvocationOutcome::Failed => "failed",
            InvocationOutcome::Trap => "trap",
            InvocationOutcome::Deadline => "deadline",
            InvocationOutcome::Aborted => "aborted",
        }
    }
}

/// Told what the engine does, partner by partner (`agent`: the partner's id). Called on the
/// engine's paths (a command's, an invocation's): an implementation must be quick and must not
/// block or wait.
pub trait Observer: Send + Sync {
    /// A Leader command reached the partner's admission.
    fn command(&self, agent: &str) {
        let _ = agent;
    }

    /// A task state change was stored (a task's creation included).
    fn transition(&self, agent: &str) {
        let _ = agent;
    }

    /// An awaiting timer ran out.
    fn timeout(&self, agent: &str) {
        let _ = agent;
    }

    /// `n` task events were appended to the log.
    fn events(&self, agent: &str, n: u64) {
        let _ = (agent, n);
    }

    /// An invocation that ran for `took` (from its turn on, waiting for its turn not counted)
    /// ended with `outcome`.
    fn invocation(&self, agent: &str, outcome: InvocationOutcome, took: Duration) {
        let _ = (agent, outcome, took);
    }

    /// An invocation's failure (trap, deadline, limit, an error) failed its task.
    fn invocation_failed_task(&self, agent: &str) {
        let _ = agent;
    }

    /// A task whose stored state could not be read was failed and set aside.
    fn set_aside(&self, agent: &str) {
        let _ = agent;
    }
}

/// An observer that hears nothing.
pub struct Unobserved;

impl Observer for Unobserved {}
