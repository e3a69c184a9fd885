//! Where one invocation's log lines go: its partner's log (which numbers, keeps and sends them
//! to followers, or drops them over the rate), then `tracing` (target `partner`) for the lines
//! kept, with the partner's version, tenant, the Leader and its task id, and the fields as one
//! JSON object (`tracing` takes no field names made at run time).

use super::partner::PartnerLogState;
use super::record::{LogLevel, LogRecord};
use crate::runtime::log_sink::fields_json;
use crate::runtime::{LogSink, PartnerLog};
use std::sync::Arc;

/// The sink of one invocation of one version of a partner.
pub struct InvocationSink {
    log: Arc<PartnerLogState>,
    version: u64,
}

impl InvocationSink {
    /// Lines of `version` of a partner, into its `log`.
    pub fn new(log: Arc<PartnerLogState>, version: u64) -> Self {
        InvocationSink { log, version }
    }
}

impl LogSink for InvocationSink {
    fn log(&self, _agent: &str, task: &str, line: PartnerLog) {
        for record in self.log.log(self.version, task, line) {
            trace(&record);
        }
    }
}

impl Drop for InvocationSink {
    /// The invocation is over: the lines it had dropped at its end are marked now, not at some
    /// later line that may never come.
    fn drop(&mut self) {
        if let Some(marker) = self.log.mark_gap(self.version) {
            trace(&marker);
        }
    }
}

/// `record` to `tracing`.
fn trace(record: &LogRecord) {
    let agent = &*record.agent;
    let version = record.version;
    let tenant = record.tenant.as_deref();
    let leader = record.leader.as_deref();
    let task = record.task.as_deref();
    let fields = fields_json(&record.fields);
    let message = &record.message;
    match record.level {
        LogLevel::Trace => {
            tracing::trace!(target: "partner", agent, version, tenant, leader, task, fields, "{message}")
        }
        LogLevel::Debug => {
            tracing::debug!(target: "partner", agent, version, tenant, leader, task, fields, "{message}")
        }
        LogLevel::Info => {
            tracing::info!(target: "partner", agent, version, tenant, leader, task, fields, "{message}")
        }
        LogLevel::Warn => {
            tracing::warn!(target: "partner", agent, version, tenant, leader, task, fields, "{message}")
        }
        LogLevel::Error => {
            tracing::error!(target: "partner", agent, version, tenant, leader, task, fields, "{message}")
        }
    }
}
