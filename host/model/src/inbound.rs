//! A Leader command as a door hands it to the engine: the command, whose namespace it acts in,
//! what its door asks where protocols differ, and what the door remembers of its wire form.

use super::field::InvalidField;
use super::task::HistoryFilter;
use super::values::LeaderCommand;
use super::wire_form::WireForm;

/// A Leader command read from a request, with what its door knows of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Inbound {
    /// The wire form a task this command starts keeps for its notices (AIP: the dialect the
    /// command came in); `None`: the door renders nothing later from it.
    pub form: Option<WireForm>,
    /// The command itself.
    pub command: LeaderCommand,
    /// The authenticated Leader whose task namespace the command acts in (`None`: the shared
    /// namespace of an open partner). Set by the transport, never read from the wire.
    pub owner: Option<String>,
    /// How the door that read it wants it carried out where protocols differ. Set by the
    /// transport, never read from the wire.
    pub policy: CommandPolicy,
    /// Which parts of the histories the command asks for if it reads them (a `get`), as its
    /// door read them from its parameters, or what was wrong with them. The engine says that
    /// only when the command does read (a `get` of a task that exists), as it always has.
    pub history: Result<HistoryFilter, InvalidField>,
}

/// What a door asks of the engine where its protocol's rules differ from AIP's. The default is
/// AIP's behaviour.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandPolicy {
    /// A task this command starts is completed by the host as soon as its partner has a result:
    /// the awaiting-completion status is stored and followed by `completed` in the same change,
    /// as if its Leader had sent `complete` at once (the partner hears the completion as usual).
    /// For protocols without a state in which the client reviews a result (A2A).
    pub complete_on_result: bool,
    /// Ended tasks are immutable and a command names its session truly: a command that does not
    /// apply to an ended task is refused (-32002 for a cancel, -32004 otherwise) instead of being
    /// recorded and answered with the task, and a continue whose `sessionId` is not its task's
    /// is refused (-32602). Nothing is stored for a refused command.
    pub strict: bool,
    /// Answer a start or continue as soon as the task exists (its partner has decided), not when
    /// it rests: the client follows it otherwise (A2A's `returnImmediately`). The task's own
    /// response timeout is left as it is for later commands.
    pub answer_at_once: bool,
}

impl Inbound {
    /// The command's `senderId` and the authenticated Leader, when the command says it comes
    /// from another Leader than the one authenticated: a credential authenticates one AIC, and a
    /// Leader cannot act under another's name (an empty `senderId` is taken as the authenticated
    /// Leader's). Whoever admits commands refuses such a one.
    pub fn foreign_sender(&self) -> Option<(&str, &str)> {
        let sender = &self.command.sender_id;
        match &self.owner {
            Some(leader) if !sender.is_empty() && sender != leader => Some((sender, leader)),
            _ => None,
        }
    }
}
