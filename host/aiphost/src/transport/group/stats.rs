//! The group door's counters, for `/metrics`.

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

/// Counters for `/metrics`.
#[derive(Default)]
pub struct GroupStats {
    /// Commands from group queues handed to the task engine (duplicates not counted).
    pub commands: AtomicU64,
    /// Outbox messages (task results, answers to `get`) published and confirmed by the broker.
    pub published: AtomicU64,
    /// Commands found already applied, and acknowledged without running them again.
    pub duplicates: AtomicU64,
    /// Times a serving link broke (the member then reconnects).
    pub reconnects: AtomicU64,
    /// Commands the engine refused, by JSON-RPC error code: group mode has no channel to answer
    /// an error on, so this (and the log) is where a refusal shows.
    refused: Mutex<std::collections::BTreeMap<i64, u64>>,
}

impl GroupStats {
    /// Count a command refused with `code`.
    pub fn refused(&self, code: i64) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        *refused.entry(code).or_default() += 1;
    }

    /// Refused commands by code.
    pub fn refusals(&self) -> Vec<(i64, u64)> {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.iter().map(|(&code, &n)| (code, n)).collect()
    }
}
