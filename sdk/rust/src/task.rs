//! The task an invocation is about, and the reports a partner makes on it.

use std::cell::Cell;
use std::fmt;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::bindings::aiphost::partner::kv as wit_kv;
use crate::bindings::aiphost::partner::task as wit_task;
use crate::bindings::aiphost::partner::types as wit;
use crate::form::Form;
use crate::item::{DataItem, Product, parse_object};
use crate::kv::Kv;
use crate::report::{ANSWER_PRODUCT, Channel, Failure, REASONING_PRODUCT, ToolOutput, Usage};

/// The AIP task states (spec section 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// The partner took the task on.
    Accepted,
    /// The partner is working on it.
    Working,
    /// The partner needs more input from the Leader.
    AwaitingInput,
    /// The products are ready; the Leader should complete the task (or continue it).
    AwaitingCompletion,
    /// The Leader completed the task (final).
    Completed,
    /// The task was canceled (final).
    Canceled,
    /// The task failed (final).
    Failed,
    /// The partner rejected the task (final).
    Rejected,
}

impl State {
    /// Whether the state is final (completed, canceled, failed or rejected).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            State::Completed | State::Canceled | State::Failed | State::Rejected
        )
    }

    /// The state's AIP name, e.g. `"awaiting-input"`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Accepted => "accepted",
            State::Working => "working",
            State::AwaitingInput => "awaiting-input",
            State::AwaitingCompletion => "awaiting-completion",
            State::Completed => "completed",
            State::Canceled => "canceled",
            State::Failed => "failed",
            State::Rejected => "rejected",
        }
    }

    pub(crate) fn to_wit(self) -> wit::TaskState {
        match self {
            State::Accepted => wit::TaskState::Accepted,
            State::Working => wit::TaskState::Working,
            State::AwaitingInput => wit::TaskState::AwaitingInput,
            State::AwaitingCompletion => wit::TaskState::AwaitingCompletion,
            State::Completed => wit::TaskState::Completed,
            State::Canceled => wit::TaskState::Canceled,
            State::Failed => wit::TaskState::Failed,
            State::Rejected => wit::TaskState::Rejected,
        }
    }

    pub(crate) fn from_wit(state: wit::TaskState) -> Self {
        match state {
            wit::TaskState::Accepted => State::Accepted,
            wit::TaskState::Working => State::Working,
            wit::TaskState::AwaitingInput => State::AwaitingInput,
            wit::TaskState::AwaitingCompletion => State::AwaitingCompletion,
            wit::TaskState::Completed => State::Completed,
            wit::TaskState::Canceled => State::Canceled,
            wit::TaskState::Failed => State::Failed,
            wit::TaskState::Rejected => State::Rejected,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a task reached [`Partner::completed`](crate::Partner::completed) or
/// [`Partner::canceled`](crate::Partner::canceled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// The Leader sent the command.
    Leader,
    /// The awaiting-input or awaiting-completion timeout ran out.
    Timeout,
}

impl EndReason {
    pub(crate) fn to_wit(self) -> wit::EndReason {
        match self {
            EndReason::Leader => wit::EndReason::Leader,
            EndReason::Timeout => wit::EndReason::Timeout,
        }
    }

    fn from_wit(reason: wit::EndReason) -> Self {
        match reason {
            wit::EndReason::Leader => EndReason::Leader,
            wit::EndReason::Timeout => EndReason::Timeout,
        }
    }
}

/// Why the host refused a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportError {
    /// The state machine does not allow this change from the current state.
    InvalidTransition(String),
    /// The task already ended (completed, canceled, failed or rejected).
    TaskEnded,
    /// The products would exceed the task's `maxProductsBytes` (the number the host gave); the host
    /// has failed the task.
    ProductsTooLarge(u64),
    /// A DataItem or another part of the report is malformed (a product id with control
    /// characters, tool arguments that are not a JSON object, a schema that is not one of an
    /// object, a failure code that is not `A-Z 0-9 _`, ...); the message says what.
    InvalidData(String),
    /// A per-task cap on activity (streamed deltas, tool calls and results, usage reports) is
    /// used up; the task is unchanged. The message names the cap.
    LimitReached(String),
}

impl ReportError {
    /// Whether the task is over after this error ([`TaskEnded`](Self::TaskEnded) or
    /// [`ProductsTooLarge`](Self::ProductsTooLarge)): nothing more can be reported.
    pub fn ends_task(&self) -> bool {
        matches!(
            self,
            ReportError::TaskEnded | ReportError::ProductsTooLarge(_)
        )
    }

    pub(crate) fn into_wit(self) -> wit::ReportError {
        match self {
            ReportError::InvalidTransition(m) => wit::ReportError::InvalidTransition(m),
            ReportError::TaskEnded => wit::ReportError::TaskEnded,
            ReportError::ProductsTooLarge(n) => wit::ReportError::ProductsTooLarge(n),
            ReportError::InvalidData(m) => wit::ReportError::InvalidData(m),
            ReportError::LimitReached(m) => wit::ReportError::LimitReached(m),
        }
    }

    fn from_wit(err: wit::ReportError) -> Self {
        match err {
            wit::ReportError::InvalidTransition(m) => ReportError::InvalidTransition(m),
            wit::ReportError::TaskEnded => ReportError::TaskEnded,
            wit::ReportError::ProductsTooLarge(n) => ReportError::ProductsTooLarge(n),
            wit::ReportError::InvalidData(m) => ReportError::InvalidData(m),
            wit::ReportError::LimitReached(m) => ReportError::LimitReached(m),
        }
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::InvalidTransition(m) => write!(f, "invalid state transition: {m}"),
            ReportError::TaskEnded => f.write_str("the task has already ended"),
            ReportError::ProductsTooLarge(n) => {
                write!(f, "the products would exceed maxProductsBytes ({n})")
            }
            ReportError::InvalidData(m) => write!(f, "invalid data: {m}"),
            ReportError::LimitReached(m) => write!(f, "an activity limit is reached: {m}"),
        }
    }
}

impl std::error::Error for ReportError {}

/// The host imports, behind a trait so that partners run natively on the mock host
/// ([`crate::testing`]).
pub(crate) trait Host {
    fn set_status(
        &self,
        state: wit::TaskState,
        items: &[wit::DataItem],
    ) -> Result<(), wit::ReportError>;
    fn emit_product_chunk(&self, chunk: &wit::ProductChunk) -> Result<(), wit::ReportError>;
    fn current_state(&self) -> Option<wit::TaskState>;
    fn stream_text(&self, delta: &wit::TextDelta) -> Result<(), wit::ReportError>;
    fn report_tool_call(&self, call: &wit::ToolCall) -> Result<(), wit::ReportError>;
    fn report_tool_result(&self, outcome: &wit::ToolResult) -> Result<(), wit::ReportError>;
    fn report_usage(&self, usage: &wit::Usage) -> Result<(), wit::ReportError>;
    fn ask(
        &self,
        request: &wit::InputRequest,
        items: &[wit::DataItem],
    ) -> Result<(), wit::ReportError>;
    fn fail(&self, failure: &wit::Failure) -> Result<(), wit::ReportError>;
    fn reply(&self, items: &[wit::DataItem]) -> Result<(), wit::ReportError>;
    fn kv_get(&self, scope: wit_kv::Scope, key: &str) -> Result<Option<Vec<u8>>, wit_kv::KvError>;
    fn kv_set(&self, scope: wit_kv::Scope, key: &str, value: &[u8]) -> Result<(), wit_kv::KvError>;
    fn kv_delete(&self, scope: wit_kv::Scope, key: &str) -> Result<(), wit_kv::KvError>;
}

/// The real host: the component's imports.
pub(crate) struct WitHost;

impl Host for WitHost {
    fn set_status(
        &self,
        state: wit::TaskState,
        items: &[wit::DataItem],
    ) -> Result<(), wit::ReportError> {
        wit_task::set_status(state, items)
    }

    fn emit_product_chunk(&self, chunk: &wit::ProductChunk) -> Result<(), wit::ReportError> {
        wit_task::emit_product_chunk(chunk)
    }

    fn current_state(&self) -> Option<wit::TaskState> {
        wit_task::current_state()
    }

    fn stream_text(&self, delta: &wit::TextDelta) -> Result<(), wit::ReportError> {
        wit_task::stream_text(delta)
    }

    fn report_tool_call(&self, call: &wit::ToolCall) -> Result<(), wit::ReportError> {
        wit_task::report_tool_call(call)
    }

    fn report_tool_result(&self, outcome: &wit::ToolResult) -> Result<(), wit::ReportError> {
        wit_task::report_tool_result(outcome)
    }

    fn report_usage(&self, usage: &wit::Usage) -> Result<(), wit::ReportError> {
        wit_task::report_usage(usage)
    }

    fn ask(
        &self,
        request: &wit::InputRequest,
        items: &[wit::DataItem],
    ) -> Result<(), wit::ReportError> {
        wit_task::ask(request, items)
    }

    fn fail(&self, failure: &wit::Failure) -> Result<(), wit::ReportError> {
        wit_task::fail(failure)
    }

    fn reply(&self, items: &[wit::DataItem]) -> Result<(), wit::ReportError> {
        wit_task::reply(items)
    }

    fn kv_get(&self, scope: wit_kv::Scope, key: &str) -> Result<Option<Vec<u8>>, wit_kv::KvError> {
        wit_kv::get(scope, key)
    }

    fn kv_set(&self, scope: wit_kv::Scope, key: &str, value: &[u8]) -> Result<(), wit_kv::KvError> {
        wit_kv::set(scope, key, value)
    }

    fn kv_delete(&self, scope: wit_kv::Scope, key: &str) -> Result<(), wit_kv::KvError> {
        wit_kv::delete(scope, key)
    }
}

/// What an invocation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Start,
    Continue,
    Complete(EndReason),
    Cancel(EndReason),
}

/// The task the current invocation is about: what the host told the partner about it, and the
/// reports the partner can make on it.
///
/// A `Task` lives for one invocation. Anything the partner must remember for the next one (a
/// multi-turn conversation, say) goes into [`Task::kv`].
pub struct Task {
    id: String,
    session_id: Option<String>,
    leader_id: Option<String>,
    event: Event,
    initial_state: Option<State>,
    max_products_bytes: Option<u64>,
    products_bytes: u64,
    params: Map<String, Value>,
    host: Rc<dyn Host>,
    /// The products streamed with `last = false` and not yet closed, in the order first streamed,
    /// with the channel of their latest delta: the SDK closes them when the work is done.
    open: Vec<(String, Channel)>,
    /// The host said the task is over (a report returned an error that
    /// [`ends_task`](ReportError::ends_task)): the SDK reports nothing more.
    ended: Cell<bool>,
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.id)
            .field("session_id", &self.session_id)
            .field("leader_id", &self.leader_id)
            .field("event", &self.event)
            .field("initial_state", &self.initial_state)
            .field("max_products_bytes", &self.max_products_bytes)
            .field("products_bytes", &self.products_bytes)
            .field("params", &self.params)
            .field("open", &self.open)
            .field("ended", &self.ended.get())
            .finish_non_exhaustive()
    }
}

impl Task {
    /// Splits an invocation into its event, its input and the task.
    pub(crate) fn from_invocation(
        invocation: wit::Invocation,
        host: Rc<dyn Host>,
    ) -> Result<(Event, Vec<DataItem>, Task), String> {
        let event = match invocation.event {
            wit::Event::Start => Event::Start,
            wit::Event::Continue => Event::Continue,
            wit::Event::Complete(r) => Event::Complete(EndReason::from_wit(r)),
            wit::Event::Cancel(r) => Event::Cancel(EndReason::from_wit(r)),
        };
        let input = invocation
            .data_items
            .into_iter()
            .map(DataItem::from_wit)
            .collect::<Result<Vec<_>, _>>()?;
        let params = if invocation.command_params.trim().is_empty() {
            Map::new()
        } else {
            parse_object(&invocation.command_params, "commandParams")?
        };
        let task = Task {
            id: invocation.task_id,
            session_id: invocation.session_id,
            leader_id: invocation.leader_id,
            event,
            initial_state: invocation.state.map(State::from_wit),
            max_products_bytes: invocation.max_products_bytes,
            products_bytes: invocation.products_bytes,
            params,
            host,
            open: Vec::new(),
            ended: Cell::new(false),
        };
        Ok((event, input, task))
    }

    /// The task id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session the task belongs to, if the Leader gave one.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The Leader's identity (its AIC), if it gave one.
    pub fn leader_id(&self) -> Option<&str> {
        self.leader_id.as_deref()
    }

    /// Whether this invocation starts the task.
    pub fn is_start(&self) -> bool {
        self.event == Event::Start
    }

    /// Whether this invocation continues the task with new input.
    pub fn is_continue(&self) -> bool {
        self.event == Event::Continue
    }

    /// The state the task was in when this invocation began (see [`Task::state`] for now);
    /// `None` for a new task that is not yet accepted or rejected.
    pub fn initial_state(&self) -> Option<State> {
        self.initial_state
    }

    /// The task's state right now, asked of the host (a cancel from the Leader can end the task
    /// while the partner works); `None` while a new task is not yet accepted or rejected.
    pub fn state(&self) -> Option<State> {
        self.host.current_state().map(State::from_wit)
    }

    /// The Leader's `maxProductsBytes`, if it set one.
    pub fn max_products_bytes(&self) -> Option<u64> {
        self.max_products_bytes
    }

    /// Product bytes the task already held when this invocation began (they count against
    /// [`Task::max_products_bytes`]). Chunks emitted during this invocation are not added.
    pub fn products_bytes(&self) -> u64 {
        self.products_bytes
    }

    /// How many more product bytes `maxProductsBytes` allows, as of the start of this invocation;
    /// `None` when the Leader set no limit.
    pub fn products_bytes_left(&self) -> Option<u64> {
        self.max_products_bytes
            .map(|max| max.saturating_sub(self.products_bytes))
    }

    /// The command's `commandParams` (an empty map when there were none).
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// Streams (part of) a product now. With `append` the items are added to the product with the
    /// same id (or start it); without it the product is replaced. `last` says the product is whole.
    ///
    /// Products reach the Leader with the task's next status. An error
    /// [`ends_task`](ReportError::ends_task) when the task is over (for example when
    /// `maxProductsBytes` was exceeded and the host failed it): stop working then.
    pub fn emit_chunk(
        &mut self,
        product: Product,
        append: bool,
        last: bool,
    ) -> Result<(), ReportError> {
        let id = product.id.clone();
        let chunk = wit::ProductChunk {
            product: product.into_wit(),
            append,
            last_chunk: last,
        };
        self.checked(self.host.emit_product_chunk(&chunk))?;
        if last {
            self.open.retain(|(open, _)| *open != id);
        }
        Ok(())
    }

    /// Streams `text` into the reasoning (product [`REASONING_PRODUCT`], `"reasoning"`), as a
    /// model produces it: a chat UI shows it as thinking and may fold it away. An empty `text` is
    /// skipped.
    ///
    /// Call it as often as there is text; the SDK closes the product (an empty delta with `last`)
    /// when [`Partner::work`](crate::Partner::work) returns an outcome that rests the task. An
    /// error [`ends_task`](ReportError::ends_task) when the task is over (the Leader canceled it,
    /// say): stop working then, for example with `return err.into()`.
    pub fn think(&mut self, text: &str) -> Result<(), ReportError> {
        self.stream_some(REASONING_PRODUCT, Channel::Reasoning, text)
    }

    /// Streams `text` into the answer (product [`ANSWER_PRODUCT`], `"answer"`), as a model
    /// produces it: a chat UI shows the tokens as they come. An empty `text` is skipped. Closing
    /// and errors as for [`think`](Self::think).
    pub fn say(&mut self, text: &str) -> Result<(), ReportError> {
        self.stream_some(ANSWER_PRODUCT, Channel::Answer, text)
    }

    fn stream_some(
        &mut self,
        product: &str,
        channel: Channel,
        text: &str,
    ) -> Result<(), ReportError> {
        if text.is_empty() {
            return Ok(());
        }
        self.stream_text(product, channel, text, false)
    }

    /// Appends `text` to the `channel` text of product `product_id` (starting it if needed);
    /// `last` says the product is whole. [`think`](Self::think) and [`say`](Self::say) are this
    /// with the default products.
    ///
    /// The host allows it while the task is accepted or working; it refuses a product id that is
    /// empty, over 256 bytes or has control characters, a text over 64 KiB, and an empty text
    /// without `last` ([`ReportError::InvalidData`]). The text counts against
    /// `maxProductsBytes`, and each delta against the task's activity cap
    /// ([`ReportError::LimitReached`]). A product streamed without `last` is closed by the SDK
    /// when the work is done.
    pub fn stream_text(
        &mut self,
        product_id: &str,
        channel: Channel,
        text: &str,
        last: bool,
    ) -> Result<(), ReportError> {
        let delta = wit::TextDelta {
            product_id: product_id.to_owned(),
            channel: channel.to_wit(),
            text: text.to_owned(),
            last,
        };
        self.checked(self.host.stream_text(&delta))?;
        let open = self.open.iter().position(|(id, _)| id == product_id);
        match (open, last) {
            (Some(i), true) => {
                self.open.remove(i);
            }
            (Some(i), false) => self.open[i].1 = channel,
            (None, false) => self.open.push((product_id.to_owned(), channel)),
            (None, true) => {}
        }
        Ok(())
    }

    /// Reports that the partner calls tool `name` with `arguments` (a JSON object), as call
    /// `call_id` (1-128 bytes; [`tool_result`](Self::tool_result) names it again). Tool
    /// activity is shown to the Leader as it happens; it is not a product.
    ///
    /// The task must be working. The host refuses arguments that are not a JSON object or are over
    /// 64 KiB, and names of more than 128 bytes ([`ReportError::InvalidData`]).
    pub fn tool_call(
        &mut self,
        call_id: &str,
        name: &str,
        arguments: &Value,
    ) -> Result<(), ReportError> {
        let call = wit::ToolCall {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_string(),
        };
        self.checked(self.host.report_tool_call(&call))
    }

    /// Reports what tool call `call_id` gave back (`is_error`: the tool failed, and `output`
    /// says how). The task must be working; the output may have at most 256 KiB.
    pub fn tool_result(
        &mut self,
        call_id: &str,
        output: ToolOutput,
        is_error: bool,
    ) -> Result<(), ReportError> {
        let outcome = wit::ToolResult {
            call_id: call_id.to_owned(),
            output: output.into_wit(),
            is_error,
        };
        self.checked(self.host.report_tool_result(&outcome))
    }

    /// Reports the tokens the model calls behind this work used; shown where a door has a place
    /// for it. The task must be working.
    pub fn usage(&mut self, usage: Usage) -> Result<(), ReportError> {
        self.checked(self.host.report_usage(&usage.into_wit()))
    }

    /// Moves the task to `state` with explanatory `items`.
    ///
    /// This is the low-level escape hatch: the SDK already reports `accepted`, `working` and the
    /// state an [`Outcome`](crate::Outcome) or [`Decision`](crate::Decision) implies. The host
    /// refuses changes the AIP state machine does not allow, and leaves the task as it was.
    pub fn set_status(&mut self, state: State, items: Vec<DataItem>) -> Result<(), ReportError> {
        self.report_status(state, items)
    }

    pub(crate) fn report_status(
        &self,
        state: State,
        items: Vec<DataItem>,
    ) -> Result<(), ReportError> {
        let items: Vec<wit::DataItem> = items.into_iter().map(DataItem::into_wit).collect();
        self.checked(self.host.set_status(state.to_wit(), &items))
    }

    /// Asks with `form`: the task moves to `awaiting-input`.
    pub(crate) fn ask(&mut self, form: Form) -> Result<(), ReportError> {
        let (request, items) = form.into_wit();
        self.checked(self.host.ask(&request, &items))
    }

    /// Fails the task with a code.
    pub(crate) fn fail(&mut self, failure: Failure) -> Result<(), ReportError> {
        self.checked(self.host.fail(&failure.into_wit()))
    }

    /// Answers a start with a plain message and no task.
    pub(crate) fn reply(&mut self, items: Vec<DataItem>) -> Result<(), ReportError> {
        let items: Vec<wit::DataItem> = items.into_iter().map(DataItem::into_wit).collect();
        self.checked(self.host.reply(&items))
    }

    /// Closes every product streamed without `last` with an empty delta that has it, so that a
    /// client knows the text is whole before the task rests.
    ///
    /// A closing delta refused for the activity cap is skipped: the product stays open, but the
    /// work is done and failing the task over a missing end mark would lose it.
    pub(crate) fn close_streams(&mut self) -> Result<(), ReportError> {
        for (product, channel) in std::mem::take(&mut self.open) {
            match self.stream_text(&product, channel, "", true) {
                Ok(()) => {}
                Err(ReportError::LimitReached(cap)) => crate::log::with_fields(
                    crate::log::Level::Warn,
                    "a streamed product stays open: the activity cap is used up",
                    &[("product", &product), ("cap", &cap)],
                ),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether the host said the task is over in reply to a report of this invocation.
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.get()
    }

    /// Maps the host's answer to a report, noting when it says the task is over.
    fn checked(&self, answer: Result<(), wit::ReportError>) -> Result<(), ReportError> {
        let answer = answer.map_err(ReportError::from_wit);
        if let Err(e) = &answer
            && e.ends_task()
        {
            self.ended.set(true);
        }
        answer
    }

    /// The key-value entries of this task (kept by the host across invocations until the task's
    /// records go).
    pub fn kv(&self) -> Kv {
        Kv::new(self.host.clone(), wit_kv::Scope::Task)
    }

    /// The key-value entries shared by all tasks of this partner.
    pub fn agent_kv(&self) -> Kv {
        Kv::new(self.host.clone(), wit_kv::Scope::Agent)
    }
}
