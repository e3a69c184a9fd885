//! The trait a partner implements, and what its methods return.

use crate::item::{DataItem, Product};
use crate::task::{EndReason, Task};

/// An AIP partner. Implement it on a unit struct and register it with [`export!`](crate::export).
///
/// The SDK turns each host event into calls of these functions and reports the states they imply:
///
/// | event | what the SDK does |
/// | --- | --- |
/// | start | [`decide`](Self::decide); on accept it reports `accepted`, `working`, then calls [`work`](Self::work) and applies the [`Outcome`] |
/// | continue | the task is `working` again: calls [`work`](Self::work) and applies the [`Outcome`] |
/// | complete | calls [`completed`](Self::completed) (clean-up only: the task is final) |
/// | cancel | calls [`canceled`](Self::canceled) (clean-up only: the task is final) |
pub trait Partner {
    /// Decides on a new task: accept it, or reject it with a reason. `input` is what the start
    /// command carried (the same items reach [`work`](Self::work) next). Default: accept.
    fn decide(task: &Task, input: &[DataItem]) -> Decision {
        let _ = (task, input);
        Decision::Accept
    }

    /// Does the work: called after a start was accepted, and for every continue, with the
    /// command's input; the task is `working`. Return what happens next.
    fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome;

    /// The task was completed (by the Leader, or by the awaiting-completion timeout). Clean up
    /// here; reports are refused. Default: nothing.
    fn completed(task: &Task, reason: EndReason) {
        let _ = (task, reason);
    }

    /// The task was canceled (by the Leader, or by the awaiting-input timeout). Clean up here;
    /// reports are refused. Default: nothing.
    fn canceled(task: &Task, reason: EndReason) {
        let _ = (task, reason);
    }
}

/// What [`Partner::decide`] says about a new task.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Take the task on: the SDK reports `accepted`, then `working`, then calls
    /// [`Partner::work`].
    Accept,
    /// Refuse it: the SDK reports `rejected` with this reason as a text item.
    Reject(String),
}

impl Decision {
    /// `Decision::Reject` with any string-like reason.
    pub fn reject(reason: impl Into<String>) -> Self {
        Decision::Reject(reason.into())
    }
}

/// What [`Partner::work`] says happens next.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The partner needs more from the Leader: the SDK reports `awaiting-input` with these items
    /// (typically a text question, perhaps a data item saying what is missing). The Leader's
    /// answer arrives as a continue, in a later invocation.
    NeedInput(Vec<DataItem>),
    /// The work is done: the SDK emits each product whole (replacing any earlier product with the
    /// same id) and reports `awaiting-completion`. Products already streamed with
    /// [`Task::emit_chunk`] stay; return `Done(vec![])` if everything was streamed.
    Done(Vec<Product>),
    /// The work is done and the partner says something with its result: like
    /// [`Done`](Self::Done), with these items on the `awaiting-completion` status (an A2A client
    /// sees them as the task's status message).
    Reply {
        /// The products, emitted whole as for `Done`.
        products: Vec<Product>,
        /// What the partner says with the result, typically a text.
        message: Vec<DataItem>,
    },
    /// The work failed: the SDK reports `failed` with this reason as a text item.
    Fail(String),
    /// Give up without a report of its own: the invocation returns an error with this reason and
    /// the host fails the task with it. Prefer [`Fail`](Self::Fail); this one is for when
    /// reporting itself went wrong (a report of the partner's own was refused, say).
    Abort(String),
}

impl Outcome {
    /// `Outcome::NeedInput` with a single text question.
    pub fn ask(question: impl Into<String>) -> Self {
        Outcome::NeedInput(vec![DataItem::text(question)])
    }

    /// `Outcome::Fail` with any string-like reason.
    pub fn fail(reason: impl Into<String>) -> Self {
        Outcome::Fail(reason.into())
    }
}
