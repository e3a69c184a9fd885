//! The task an invocation is about, and the reports a partner makes on it.

use std::fmt;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::bindings::aiphost::partner::kv as wit_kv;
use crate::bindings::aiphost::partner::types as wit;
use crate::item::{DataItem, Product, parse_object};
use crate::kv::Kv;

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

/// Why the host refused a report (a status change or a product chunk).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportError {
    /// The state machine does not allow this change from the current state.
    InvalidTransition(String),
    /// The task already ended (completed, canceled, failed or rejected).
    TaskEnded,
    /// The products would exceed the task's `maxProductsBytes` (the number the host gave); the host
    /// has failed the task.
    ProductsTooLarge(u64),
    /// A DataItem is malformed.
    InvalidData(String),
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
        }
    }

    fn from_wit(err: wit::ReportError) -> Self {
        match err {
            wit::ReportError::InvalidTransition(m) => ReportError::InvalidTransition(m),
            wit::ReportError::TaskEnded => ReportError::TaskEnded,
            wit::ReportError::ProductsTooLarge(n) => ReportError::ProductsTooLarge(n),
            wit::ReportError::InvalidData(m) => ReportError::InvalidData(m),
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
            ReportError::InvalidData(m) => write!(f, "invalid data item: {m}"),
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
        crate::bindings::aiphost::partner::task::set_status(state, items)
    }

    fn emit_product_chunk(&self, chunk: &wit::ProductChunk) -> Result<(), wit::ReportError> {
        crate::bindings::aiphost::partner::task::emit_product_chunk(chunk)
    }

    fn current_state(&self) -> Option<wit::TaskState> {
        crate::bindings::aiphost::partner::task::current_state()
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
        let chunk = wit::ProductChunk {
            product: product.into_wit(),
            append,
            last_chunk: last,
        };
        self.host
            .emit_product_chunk(&chunk)
            .map_err(ReportError::from_wit)
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
        self.host
            .set_status(state.to_wit(), &items)
            .map_err(ReportError::from_wit)
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
