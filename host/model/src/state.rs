//! The AIP task state machine (spec 4.2), as pure functions over the 19-row transition table.
//!
//! Three things move a task: a Leader command, a report from the partner, and the expiry of an
//! awaiting timer. Each function answers with the transition (and the table row that allows it) or
//! says why nothing happens. The engine applies the answer; nothing here does I/O.

use crate::{CommandKind, TaskState};

/// A row of the spec's transition table, by its number.
pub type Row = u8;

/// What a Leader command does to a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandEffect {
    /// A new task: the partner must decide between accepted and rejected (rows 1/2).
    Decide,
    /// The task moves to this state (and the partner hears of it).
    Transition(TaskState, Row),
    /// The command does not apply in this state: the current task is returned unchanged.
    Ignored,
    /// `get`: the task is read, nothing changes.
    Read,
    /// There is no such task.
    NotFound,
}

/// The effect of `command` on a task currently in `current` (`None`: no such task).
pub fn on_command(current: Option<TaskState>, command: CommandKind) -> CommandEffect {
    use CommandEffect::*;
    use TaskState::*;
    match (current, command) {
        (None, CommandKind::Start) => Decide,
        (None, _) => NotFound,
        (Some(_), CommandKind::Get) => Read,
        (Some(AwaitingInput), CommandKind::Continue) => Transition(Working, 9),
        (Some(AwaitingCompletion), CommandKind::Continue) => Transition(Working, 13),
        (Some(AwaitingCompletion), CommandKind::Complete) => Transition(Completed, 12),
        (Some(Accepted), CommandKind::Cancel) => Transition(Canceled, 4),
        (Some(Working), CommandKind::Cancel) => Transition(Canceled, 8),
        (Some(AwaitingInput), CommandKind::Cancel) => Transition(Canceled, 10),
        (Some(AwaitingCompletion), CommandKind::Cancel) => Transition(Canceled, 14),
        // Start on an existing task, continue/complete where they do not apply, anything on a
        // terminal task (rows 16-19), and re-stream (which moves nothing).
        (Some(_), _) => Ignored,
    }
}

/// Why a partner's report was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReportRefused {
    /// The task has ended, in this state.
    #[error("the task has ended ({0}); nothing can change it")]
    Ended(TaskState),
    /// No row of the table lets the partner make this move.
    #[error("a partner cannot move a task from {from} to {to}{hint}")]
    NotAllowed {
        /// The state the task is in, as text (or a note that it is new).
        from: String,
        /// The state the partner asked for.
        to: TaskState,
        /// What to do instead, starting `: ` so it can follow the message; empty when there is no hint.
        hint: &'static str,
    },
}

/// The row that lets the partner move a task from `current` to `target`.
pub fn on_partner_report(
    current: Option<TaskState>,
    target: TaskState,
) -> Result<Row, ReportRefused> {
    use TaskState::*;
    match (current, target) {
        (None, Accepted) => Ok(1),
        (None, Rejected) => Ok(2),
        (Some(Accepted), Working) => Ok(3),
        (Some(Working), AwaitingCompletion) => Ok(5),
        (Some(Working), AwaitingInput) => Ok(6),
        (Some(Working), Failed) => Ok(7),
        (Some(s), _) if s.is_terminal() => Err(ReportRefused::Ended(s)),
        (from, to) => Err(ReportRefused::NotAllowed {
            from: from.map_or("no state (a new task)".to_string(), |s| s.to_string()),
            to,
            hint: match (from, to) {
                (None, _) => ": a new task is first accepted or rejected",
                (Some(Accepted), _) => ": an accepted task first goes to working",
                (Some(AwaitingInput | AwaitingCompletion), _) => {
                    ": the task waits for the Leader; return from this invocation"
                }
                (_, Completed | Canceled) => ": only the Leader completes or cancels a task",
                _ => "",
            },
        }),
    }
}

/// The transition when an awaiting timer runs out, if the task is still waiting.
pub fn on_timeout(current: TaskState) -> Option<(TaskState, Row)> {
    match current {
        TaskState::AwaitingInput => Some((TaskState::Canceled, 11)),
        TaskState::AwaitingCompletion => Some((TaskState::Completed, 15)),
        _ => None,
    }
}

/// The states the host walks a task through when its partner fails (trap, deadline, limit) in
/// `current`, using only rows of the table: a new task is rejected (it never started), an accepted
/// one goes through working (the partner was running) to failed, a working one fails. A task that
/// rests or has ended stays as the partner left it.
pub fn host_failure_path(current: Option<TaskState>) -> &'static [TaskState] {
    match current {
        None => &[TaskState::Rejected],
        Some(TaskState::Accepted) => &[TaskState::Working, TaskState::Failed],
        Some(TaskState::Working) => &[TaskState::Failed],
        Some(_) => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CommandEffect::*;
    use TaskState::*;

    const COMMANDS: [CommandKind; 6] = [
        CommandKind::Start,
        CommandKind::Continue,
        CommandKind::Complete,
        CommandKind::Cancel,
        CommandKind::Get,
        CommandKind::ReStream,
    ];

    /// The spec's table, row by row: (row, from, trigger, to). `None` as trigger: the partner or a
    /// timer moves the task, no command.
    #[test]
    fn every_row_of_the_table() {
        assert_eq!(on_command(None, CommandKind::Start), Decide);
        assert_eq!(on_partner_report(None, Accepted), Ok(1));
        assert_eq!(on_partner_report(None, Rejected), Ok(2));
        assert_eq!(on_partner_report(Some(Accepted), Working), Ok(3));
        assert_eq!(
            on_command(Some(Accepted), CommandKind::Cancel),
            Transition(Canceled, 4)
        );
        assert_eq!(on_partner_report(Some(Working), AwaitingCompletion), Ok(5));
        assert_eq!(on_partner_report(Some(Working), AwaitingInput), Ok(6));
        assert_eq!(on_partner_report(Some(Working), Failed), Ok(7));
        assert_eq!(
            on_command(Some(Working), CommandKind::Cancel),
            Transition(Canceled, 8)
        );
        assert_eq!(
            on_command(Some(AwaitingInput), CommandKind::Continue),
            Transition(Working, 9)
        );
        assert_eq!(
            on_command(Some(AwaitingInput), CommandKind::Cancel),
            Transition(Canceled, 10)
        );
        assert_eq!(on_timeout(AwaitingInput), Some((Canceled, 11)));
        assert_eq!(
            on_command(Some(AwaitingCompletion), CommandKind::Complete),
            Transition(Completed, 12)
        );
        assert_eq!(
            on_command(Some(AwaitingCompletion), CommandKind::Continue),
            Transition(Working, 13)
        );
        assert_eq!(
            on_command(Some(AwaitingCompletion), CommandKind::Cancel),
            Transition(Canceled, 14)
        );
        assert_eq!(on_timeout(AwaitingCompletion), Some((Completed, 15)));
        // Rows 16-19: terminal states accept nothing.
        for terminal in [Completed, Canceled, Failed, Rejected] {
            for cmd in COMMANDS {
                let expected = if cmd == CommandKind::Get {
                    Read
                } else {
                    Ignored
                };
                assert_eq!(
                    on_command(Some(terminal), cmd),
                    expected,
                    "{terminal} {cmd}"
                );
            }
            for target in TaskState::ALL {
                assert_eq!(
                    on_partner_report(Some(terminal), target),
                    Err(ReportRefused::Ended(terminal))
                );
            }
            assert_eq!(on_timeout(terminal), None);
        }
    }

    /// Everything the table does not list is ignored (commands) or refused (reports).
    #[test]
    fn nothing_outside_the_table() {
        let mut command_transitions = 0;
        for from in std::iter::once(None).chain(TaskState::ALL.map(Some)) {
            for cmd in COMMANDS {
                match on_command(from, cmd) {
                    Transition(to, row) => {
                        command_transitions += 1;
                        assert!((4..=14).contains(&row), "{from:?} {cmd} -> {to} row {row}");
                    }
                    Decide => assert_eq!((from, cmd), (None, CommandKind::Start)),
                    NotFound => assert_eq!(from, None),
                    Read => assert_eq!(cmd, CommandKind::Get),
                    Ignored => {}
                }
            }
        }
        assert_eq!(command_transitions, 7, "rows 4, 8, 9, 10, 12, 13, 14");

        let mut allowed = 0;
        for from in std::iter::once(None).chain(TaskState::ALL.map(Some)) {
            for to in TaskState::ALL {
                if on_partner_report(from, to).is_ok() {
                    allowed += 1;
                }
            }
        }
        assert_eq!(allowed, 6, "rows 1, 2, 3, 5, 6, 7");
        // Start on an existing task is ignored in every state.
        for s in TaskState::ALL {
            assert_eq!(on_command(Some(s), CommandKind::Start), Ignored);
        }
        // A partner cannot complete or cancel, and cannot skip working.
        assert!(on_partner_report(Some(AwaitingCompletion), Completed).is_err());
        assert!(on_partner_report(Some(Working), Canceled).is_err());
        assert!(on_partner_report(Some(Accepted), AwaitingCompletion).is_err());
        assert!(on_partner_report(None, Working).is_err());
        for s in [Accepted, Working] {
            assert_eq!(on_timeout(s), None);
        }
    }

    #[test]
    fn host_failures_follow_table_rows() {
        for (from, path) in [
            (None, vec![Rejected]),
            (Some(Accepted), vec![Working, Failed]),
            (Some(Working), vec![Failed]),
            (Some(AwaitingInput), vec![]),
            (Some(Completed), vec![]),
        ] {
            assert_eq!(host_failure_path(from), path.as_slice());
            let mut at = from;
            for step in host_failure_path(from) {
                assert!(on_partner_report(at, *step).is_ok(), "{at:?} -> {step}");
                at = Some(*step);
            }
        }
    }
}
