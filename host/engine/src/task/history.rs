//! What a task keeps of its past: the Leader commands that named it and the statuses it went
//! through, each bounded, the oldest dropped first.
//!
//! The `start` that created a task is stored in its record, which that start writes anyway; every
//! later command is stored as an entry of its own beside the record (see
//! [`aiphost_store::TaskWrite::history`]), so a command costs its own bytes once, not a rewrite of
//! everything before it. [`CommandLog`] keeps, for each command the task holds, the index of its
//! entry (0: the start, in the record), its size and whether it changed anything; it decides
//! what is dropped and remembers which entries are still to be written or deleted.
//!
//! The bounds (all in [`HistoryLimits`]):
//! - commands that changed nothing (a `get`, or a command ignored in the task's state, such as a
//!   `start` sent again) are kept only as the newest [`HistoryLimits::max_unchanging`];
//! - of all commands, at most [`HistoryLimits::max_commands`] and
//!   [`HistoryLimits::max_command_bytes`] are kept: the oldest go first, except the `start` that
//!   created the task and the newest command, which always stay;
//! - of the statuses, at most [`HistoryLimits::max_statuses`]: the oldest go first, except the
//!   first status (accepted or rejected) and the current one.

use aiphost_model::{LeaderCommand, TaskStatus};
use aiphost_store::Encoded;
use serde::{Deserialize, Serialize};

/// How much of its past a task keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Commands kept per task (the creating `start` and the newest always among them).
    pub max_commands: usize,
    /// Bytes of commands kept per task, as stored (the creating `start` and the newest command
    /// are kept even when they alone are larger).
    pub max_command_bytes: usize,
    /// Commands that changed nothing (gets, ignored commands) kept per task: the newest.
    pub max_unchanging: usize,
    /// Statuses kept per task (the first and the current always among them).
    pub max_statuses: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            max_commands: 256,
            max_command_bytes: 1024 * 1024,
            max_unchanging: 32,
            max_statuses: 256,
        }
    }
}

/// One stored history entry: a command, and whether it changed the task.
#[derive(Serialize, Deserialize)]
struct StoredCommand {
    command: LeaderCommand,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unchanging: bool,
}

/// What is known of one command the task holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    /// The index of its stored entry.
    index: u64,
    /// Its size as stored.
    bytes: usize,
    /// It changed nothing (a get, an ignored command).
    unchanging: bool,
}

/// History entries to write and to delete with the task's next write.
#[derive(Debug, Default, PartialEq)]
pub struct HistoryWrites {
    /// `(index, entry)` to store.
    pub put: Vec<(u64, Encoded)>,
    /// Indexes of entries to delete.
    pub dropped: Vec<u64>,
}

impl HistoryWrites {
    /// Whether there is nothing to store or delete.
    pub fn is_empty(&self) -> bool {
        self.put.is_empty() && self.dropped.is_empty()
    }
}

/// The bookkeeping of a task's command history, parallel to `Task::commands`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommandLog {
    entries: Vec<Entry>,
    /// Entries recorded but not yet handed to the store.
    put: Vec<(u64, Encoded)>,
    /// Stored entries dropped since the last write.
    dropped: Vec<u64>,
}

/// A stored history entry that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("history entry {index}: {reason}")]
pub struct UnreadableEntry {
    /// The index of the entry.
    pub index: u64,
    /// Why it does not parse.
    pub reason: String,
}

impl CommandLog {
    /// Append `command` to `commands` as entry `next` (then advanced), and drop what the limits
    /// no longer let the task keep.
    pub fn record(
        &mut self,
        commands: &mut Vec<LeaderCommand>,
        next: &mut u64,
        command: LeaderCommand,
        unchanging: bool,
        limits: &HistoryLimits,
    ) {
        let stored = StoredCommand {
            command,
            unchanging,
        };
        let encoded = encode(&stored);
        let index = *next;
        *next += 1;
        self.entries.push(Entry {
            index,
            bytes: encoded.as_ref().map_or(0, Encoded::len),
            unchanging,
        });
        // The creating start (index 0) is stored in the record itself.
        if index > 0
            && let Some(encoded) = encoded
        {
            self.put.push((index, encoded));
        }
        commands.push(stored.command);
        self.enforce(commands, limits);
    }

    /// Drop commands until the limits hold.
    fn enforce(&mut self, commands: &mut Vec<LeaderCommand>, limits: &HistoryLimits) {
        let unchanging = self.entries.iter().filter(|e| e.unchanging).count();
        let mut excess = unchanging.saturating_sub(limits.max_unchanging);
        // The newest is never dropped, so it is left out of the search.
        let mut i = 0;
        while excess > 0 && i + 1 < self.entries.len() {
            if self.entries[i].unchanging {
                self.remove(commands, i);
                excess -= 1;
            } else {
                i += 1;
            }
        }
        // Then the oldest of any kind, after the creating start (position 0), while more than it
        // and the newest are kept.
        while self.entries.len() > 2
            && (self.entries.len() > limits.max_commands.max(2)
                || self.bytes() > limits.max_command_bytes)
        {
            self.remove(commands, 1);
        }
    }

    fn remove(&mut self, commands: &mut Vec<LeaderCommand>, at: usize) {
        let entry = self.entries.remove(at);
        if at < commands.len() {
            commands.remove(at);
        }
        match self.put.iter().position(|(i, _)| *i == entry.index) {
            // Never written: nothing to delete.
            Some(p) => {
                self.put.remove(p);
            }
            None => self.dropped.push(entry.index),
        }
    }

    /// The index after the newest entry kept (0 for none).
    pub fn next_index(&self) -> u64 {
        self.entries.last().map_or(0, |e| e.index + 1)
    }

    /// Bytes of the commands kept.
    pub fn bytes(&self) -> usize {
        self.entries.iter().map(|e| e.bytes).sum()
    }

    /// Whether entries wait to be written or deleted.
    pub fn has_writes(&self) -> bool {
        !self.put.is_empty() || !self.dropped.is_empty()
    }

    /// What the next write of the task must store and delete (and forget it here).
    pub fn take_writes(&mut self) -> HistoryWrites {
        HistoryWrites {
            put: std::mem::take(&mut self.put),
            dropped: std::mem::take(&mut self.dropped),
        }
    }

    /// The commands of a stored task: `start`, the one its record holds, and the stored
    /// `entries` (`(index, entry)`, in index order), with their log. The index after the last
    /// entry is the lowest the next command may take (a command that changed nothing is stored
    /// without rewriting the record that counts them).
    pub fn restore(
        start: Option<LeaderCommand>,
        entries: Vec<(u64, Encoded)>,
    ) -> Result<(Self, Vec<LeaderCommand>), UnreadableEntry> {
        let mut log = CommandLog::default();
        let mut commands = Vec::with_capacity(1 + entries.len());
        if let Some(command) = start {
            let stored = StoredCommand {
                command,
                unchanging: false,
            };
            log.entries.push(Entry {
                index: 0,
                bytes: encode(&stored).map_or(0, |e| e.len()),
                unchanging: false,
            });
            commands.push(stored.command);
        }
        for (index, bytes) in entries {
            let stored: StoredCommand = bytes.decode().map_err(|e| UnreadableEntry {
                index,
                reason: e.to_string(),
            })?;
            log.entries.push(Entry {
                index,
                bytes: bytes.len(),
                unchanging: stored.unchanging,
            });
            commands.push(stored.command);
        }
        Ok((log, commands))
    }

    /// The log of commands a record stored inline, as records did before histories had entries
    /// of their own: each after the first (the start, which stays in the record) gets an entry,
    /// written with the task's next write. Returns the next index.
    pub fn adopt_inline(commands: &[LeaderCommand]) -> (Self, u64) {
        let mut log = CommandLog::default();
        for (index, command) in (0u64..).zip(commands) {
            let stored = StoredCommand {
                command: command.clone(),
                unchanging: command.command == aiphost_model::CommandKind::Get,
            };
            let encoded = encode(&stored);
            log.entries.push(Entry {
                index,
                bytes: encoded.as_ref().map_or(0, Encoded::len),
                unchanging: stored.unchanging,
            });
            if index > 0
                && let Some(encoded) = encoded
            {
                log.put.push((index, encoded));
            }
        }
        (log, commands.len() as u64)
    }
}

/// A command as its history entry is stored (`None`, logged, in the impossible case that plain
/// data read from JSON does not encode).
fn encode(stored: &StoredCommand) -> Option<Encoded> {
    Encoded::of(stored)
        .map_err(|e| tracing::error!(error = %e, "a history entry could not be encoded"))
        .ok()
}

/// Add `status` to `history`, dropping the oldest after the first while there are more than
/// `max` (at least the first and the newest stay).
pub fn record_status(history: &mut Vec<TaskStatus>, status: TaskStatus, max: usize) {
    history.push(status);
    let keep = max.max(2);
    if history.len() > keep {
        history.drain(1..=history.len() - keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::{CommandKind, DataItem, TaskState, Timestamp};

    fn command(kind: CommandKind, id: &str, text_bytes: usize) -> LeaderCommand {
        LeaderCommand {
            id: id.into(),
            sent_at: Timestamp::now(),
            sender_id: "leader".into(),
            command: kind,
            params: Default::default(),
            data_items: vec![DataItem::text("x".repeat(text_bytes))],
            task_id: Some("t".into()),
            session_id: None,
            group_id: None,
            mentions: None,
        }
    }

    struct Task {
        log: CommandLog,
        commands: Vec<LeaderCommand>,
        next: u64,
        stored: std::collections::BTreeMap<u64, Encoded>,
    }

    impl Task {
        fn new() -> Self {
            Task {
                log: CommandLog::default(),
                commands: Vec::new(),
                next: 0,
                stored: Default::default(),
            }
        }

        fn record(&mut self, cmd: LeaderCommand, unchanging: bool, limits: &HistoryLimits) {
            self.log
                .record(&mut self.commands, &mut self.next, cmd, unchanging, limits);
        }

        /// Apply the log's writes to `stored`, as the store would.
        fn write(&mut self) {
            let writes = self.log.take_writes();
            for index in writes.dropped {
                assert!(
                    self.stored.remove(&index).is_some(),
                    "dropped {index} twice"
                );
            }
            for (index, bytes) in writes.put {
                assert!(self.stored.insert(index, bytes).is_none());
            }
        }

        fn ids(&self) -> Vec<String> {
            self.commands.iter().map(|c| c.id.clone()).collect()
        }
    }

    #[test]
    fn unchanging_commands_keep_only_the_newest() {
        let limits = HistoryLimits {
            max_unchanging: 3,
            ..HistoryLimits::default()
        };
        let mut t = Task::new();
        t.record(command(CommandKind::Start, "s", 1), false, &limits);
        for i in 0..10 {
            t.record(
                command(CommandKind::Start, &format!("again-{i}"), 1),
                true,
                &limits,
            );
            if i % 3 == 0 {
                t.write();
            }
        }
        t.record(command(CommandKind::Continue, "c", 1), false, &limits);
        t.write();
        assert_eq!(t.ids(), ["s", "again-7", "again-8", "again-9", "c"]);
        // What is stored is exactly what is kept, and reads back the same.
        let (log, commands) = CommandLog::restore(
            Some(t.commands[0].clone()),
            t.stored.clone().into_iter().collect(),
        )
        .unwrap();
        assert_eq!(commands, t.commands);
        assert_eq!(log.entries, t.log.entries);
    }

    #[test]
    fn counts_and_bytes_drop_the_oldest_but_never_the_start_or_the_newest() {
        let limits = HistoryLimits {
            max_commands: 4,
            max_command_bytes: 10_000,
            ..HistoryLimits::default()
        };
        let mut t = Task::new();
        t.record(command(CommandKind::Start, "s", 1), false, &limits);
        for i in 0..6 {
            t.record(
                command(CommandKind::Continue, &format!("c{i}"), 1),
                false,
                &limits,
            );
            t.write();
        }
        assert_eq!(t.ids(), ["s", "c3", "c4", "c5"]);
        // Bytes: each 4 KB command pushes older ones out; one larger than the limit stays alone
        // with the start.
        t.record(command(CommandKind::Continue, "big1", 4000), false, &limits);
        t.record(command(CommandKind::Continue, "big2", 4000), false, &limits);
        assert!(t.log.bytes() <= 10_000, "{}", t.log.bytes());
        assert_eq!(t.ids(), ["s", "c5", "big1", "big2"]);
        t.record(
            command(CommandKind::Continue, "huge", 50_000),
            false,
            &limits,
        );
        t.write();
        assert_eq!(t.ids(), ["s", "huge"]);
        assert_eq!(t.stored.len(), 1, "the start is in the record");
        let (_, commands) = CommandLog::restore(
            Some(t.commands[0].clone()),
            t.stored.clone().into_iter().collect(),
        )
        .unwrap();
        assert_eq!(commands, t.commands);
    }

    #[test]
    fn inline_histories_are_adopted_and_written_out() {
        let inline = vec![
            command(CommandKind::Start, "s", 1),
            command(CommandKind::Get, "g", 1),
        ];
        let (mut log, next) = CommandLog::adopt_inline(&inline);
        assert_eq!(next, 2);
        let writes = log.take_writes();
        assert_eq!(writes.put.len(), 1, "the start stays in the record");
        let (restored, commands) =
            CommandLog::restore(Some(inline[0].clone()), writes.put).unwrap();
        assert_eq!(commands, inline);
        assert!(restored.entries[1].unchanging);
        let not_a_command = Encoded::of(&"not a command").unwrap();
        assert!(CommandLog::restore(None, vec![(1, not_a_command)]).is_err());
    }

    #[test]
    fn statuses_keep_the_first_and_the_newest() {
        let mut history = Vec::new();
        for state in [
            TaskState::Accepted,
            TaskState::Working,
            TaskState::AwaitingInput,
            TaskState::Working,
            TaskState::AwaitingCompletion,
        ] {
            record_status(&mut history, TaskStatus::now(state, vec![]), 3);
        }
        let states: Vec<_> = history.iter().map(|s| s.state).collect();
        assert_eq!(
            states,
            [
                TaskState::Accepted,
                TaskState::Working,
                TaskState::AwaitingCompletion
            ]
        );
    }
}
