//! The trait a partner implements, and what its methods return.

use crate::form::Form;
use crate::item::{DataItem, Product};
use crate::report::Failure;
use crate::task::{EndReason, ReportError, Task};

/// An AIP partner. Implement it on a unit struct and register it with [`export!`](crate::export).
///
/// The SDK turns each host event into calls of these functions and reports the states they imply:
///
/// | event | what the SDK does |
/// | --- | --- |
/// | start | [`decide`](Self::decide); on accept it reports `accepted`, `working`, then calls [`work`](Self::work) and applies the [`Outcome`]; a [`Decision::Reply`] answers with no task |
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
    /// Answer at once with these items and create no task (a greeting, a quick fact): the Leader
    /// gets a plain message where its protocol has one (an A2A `Message`), otherwise a task that
    /// is completed at once with the items as its product (AIP). [`Partner::work`] does not run.
    Reply(Vec<DataItem>),
}

impl Decision {
    /// `Decision::Reject` with any string-like reason.
    pub fn reject(reason: impl Into<String>) -> Self {
        Decision::Reject(reason.into())
    }

    /// `Decision::Reply` with a single text.
    pub fn reply(text: impl Into<String>) -> Self {
        Decision::Reply(vec![DataItem::text(text)])
    }
}

/// What [`Partner::work`] says happens next.
///
/// Every outcome but `Abort` rests or ends the task. Before it reports the resting state
/// (`awaiting-input` or `awaiting-completion`) the SDK closes each product streamed without `last`
/// with an empty delta that has it. Once a report of this invocation was answered with an error
/// that [`ends_task`](ReportError::ends_task) (the Leader canceled the task meanwhile, say), the
/// SDK reports nothing more and the outcome is ignored.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The partner needs more from the Leader: the SDK reports `awaiting-input` with these items
    /// (typically a text question, perhaps a data item saying what is missing). The Leader's
    /// answer arrives as a continue, in a later invocation.
    NeedInput(Vec<DataItem>),
    /// The partner needs structured input: the SDK reports `awaiting-input` with the form (a JSON
    /// Schema of an object). The answer arrives on the next continue; read it with
    /// [`form_answer`](crate::form_answer).
    Form(Form),
    /// The work is done: the SDK emits each product whole (replacing any earlier product with the
    /// same id), closes the text streamed with [`Task::say`] / [`Task::think`] /
    /// [`Task::stream_text`], and reports `awaiting-completion`. Products already streamed with
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
    /// The work failed with a code a client can act on (and whether retrying may help): the task
    /// moves to `failed` with it.
    FailWith(Failure),
    /// Give up without a report of its own: the invocation returns an error with this reason and
    /// the host fails the task with it. Prefer [`Fail`](Self::Fail); this one is for when
    /// reporting itself went wrong (a report of the partner's own was refused, say). If the host
    /// has said the task is over, the SDK returns quietly instead.
    Abort(String),
}

impl From<ReportError> for Outcome {
    /// Gives up after a refused report: `Abort` with the error's text. Quiet when the task is
    /// over, so `return err.into();` fits every refusal:
    ///
    /// ```
    /// # use aiphost_sdk::{Outcome, Task};
    /// fn stream(task: &mut Task, words: &[&str]) -> Outcome {
    ///     for word in words {
    ///         if let Err(err) = task.say(word) {
    ///             return err.into();
    ///         }
    ///     }
    ///     Outcome::Done(vec![])
    /// }
    /// ```
    fn from(err: ReportError) -> Self {
        Outcome::Abort(err.to_string())
    }
}

impl Outcome {
    /// `Outcome::NeedInput` with a single text question.
    pub fn ask(question: impl Into<String>) -> Self {
        Outcome::NeedInput(vec![DataItem::text(question)])
    }

    /// `Outcome::Form`: ask with this form.
    pub fn ask_form(form: Form) -> Self {
        Outcome::Form(form)
    }

    /// `Outcome::Fail` with any string-like reason.
    pub fn fail(reason: impl Into<String>) -> Self {
        Outcome::Fail(reason.into())
    }

    /// `Outcome::FailWith` a failure that is not retryable and has no detail (see [`Failure`]
    /// for those): `code` is 1-64 bytes of `A-Z 0-9 _`, e.g. `"QUOTA_EXCEEDED"`.
    pub fn fail_with(code: impl Into<String>, message: impl Into<String>) -> Self {
        Outcome::FailWith(Failure::new(code, message))
    }
}
