//! Run a partner natively against a mock host, for unit tests (`cargo test` on the machine's own
//! target: no wasm, no aiphost).
//!
//! The mock keeps what the real host keeps between invocations (each task's state and products,
//! the task and agent key-value entries), applies the AIP state machine to the partner's reports
//! the way the host does, records what the partner logs, and serves the config values you give it.
//!
//! ```
//! use aiphost_sdk::testing::MockHost;
//! use aiphost_sdk::{DataItem, Outcome, Partner, Product, State, Task};
//!
//! struct Greeter;
//!
//! impl Partner for Greeter {
//!     fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
//!         let Some(name) = input.iter().find_map(DataItem::as_text) else {
//!             let _ = task.kv().set_json("asked", &true);
//!             return Outcome::ask("Whom should I greet?");
//!         };
//!         let greeting = aiphost_sdk::config::get("GREETING").unwrap_or_else(|_| "Hello".into());
//!         aiphost_sdk::log::info("greeting");
//!         Outcome::Done(vec![
//!             Product::new("greeting").with_item(DataItem::text(format!("{greeting}, {name}!"))),
//!         ])
//!     }
//! }
//!
//! let mut host = MockHost::<Greeter>::new().with_config("GREETING", "Hi");
//! let turn = host.start(vec![]);
//! assert_eq!(turn.state, Some(State::AwaitingInput));
//! assert_eq!(turn.text(), "Whom should I greet?");
//! assert_eq!(host.task_kv(&turn.task_id).get_json::<bool>("asked"), Ok(Some(true)));
//!
//! let turn = host.continue_(&turn.task_id, vec![DataItem::text("Ada")]);
//! assert_eq!(turn.state, Some(State::AwaitingCompletion));
//! let greeting = turn.product("greeting").expect("a greeting");
//! assert_eq!(greeting.data_items[0].as_text(), Some("Hi, Ada!"));
//! assert_eq!(turn.logs[0].message, "greeting");
//!
//! let turn = host.complete(&turn.task_id);
//! assert_eq!(turn.state, Some(State::Completed));
//! ```
//!
//! Each command runs one invocation, as the host would: [`start`](MockHost::start) (decide, then
//! work), [`continue_`](MockHost::continue_), [`complete`](MockHost::complete) and
//! [`cancel`](MockHost::cancel) (the clean-up hooks), and [`timeout`](MockHost::timeout) (an
//! awaiting timer running out). An invocation that ends with an error (an [`Outcome::Abort`], or a
//! report the SDK could not make) fails the task the way the host does; the error is on the
//! [`Turn`]. A panic in the partner is not caught: it fails the test, as it would trap the
//! component. To call [`Partner::decide`] or [`Partner::work`] directly and look at the
//! [`Decision`](crate::Decision) or [`Outcome`] itself, use [`MockHost::with_task`].
//!
//! Every report is checked as the host checks it (the state it needs, the sizes and formats of
//! product ids, deltas, tool arguments and outputs, forms and failure codes, the 4096 activity
//! events per task) and refused with the host's [`ReportError`]; the mock does not validate a
//! form's schema against the JSON Schema meta-schema, nor an answer against the schema. Accepted
//! reports are on the [`Turn`] ([`Turn::reports`], in order; [`Turn::said`] and
//! [`Turn::thought`] join the streamed text), and so are the [`Form`] the task awaits, the
//! [`Failure`] it ended with and a plain reply. [`MockHost::answer_form`] answers a form as a
//! door would, [`MockHost::cancel_after`] lets the Leader cancel while the partner works, and
//! [`MockHost::with_activity_limit`] lowers the activity cap.
//!
//! While the mock runs the partner, [`config::get`](crate::config::get) and [`log`](crate::log)
//! go to it (per thread, so tests may run in parallel); outside, on a native target, there is no
//! config value (`NotGranted`) and log lines go to standard error.
//!
//! [`Outcome`]: crate::Outcome
//! [`Outcome::Abort`]: crate::Outcome::Abort

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::bindings::aiphost::partner::kv as wit_kv;
use crate::bindings::aiphost::partner::types as wit;
use crate::config::ConfigError;
use crate::form::{Form, KIND_KEY};
use crate::item::{DataItem, DataKind, Product};
use crate::kv::Kv;
use crate::log::Level;
use crate::partner::Partner;
use crate::report::{Channel, Failure, ToolOutput, Usage};
use crate::task::{EndReason, Host, ReportError, State, Task};

/// One message the partner logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// The level.
    pub level: Level,
    /// The message.
    pub message: String,
    /// The structured fields (key, value), in the order given.
    pub fields: Vec<(String, String)>,
    /// The task whose invocation logged it (`None` outside one).
    pub task_id: Option<String>,
}

/// One report the partner (or the SDK for it) made, and the host accepted.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// A status change.
    Status {
        /// The new state.
        state: State,
        /// The items that came with it (a question, a reason, a message).
        items: Vec<DataItem>,
    },
    /// A product chunk ([`Task::emit_chunk`], or a product of an [`Outcome`](crate::Outcome)
    /// emitted whole).
    Chunk {
        /// The (part of the) product.
        product: Product,
        /// Whether the items were appended to the product with the same id.
        append: bool,
        /// Whether the product is whole.
        last: bool,
    },
    /// Streamed text ([`Task::say`], [`Task::think`], [`Task::stream_text`], or the SDK closing a
    /// streamed product).
    Text {
        /// The product the text extends.
        product: String,
        /// Which of its texts.
        channel: Channel,
        /// The delta (empty when the delta only closes the product).
        text: String,
        /// Whether the product is whole.
        last: bool,
    },
    /// A tool call ([`Task::tool_call`]).
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool.
        name: String,
        /// The arguments.
        arguments: Map<String, Value>,
    },
    /// A tool call's outcome ([`Task::tool_result`]).
    ToolResult {
        /// The call id.
        call_id: String,
        /// What the tool gave back.
        output: ToolOutput,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// Token usage ([`Task::usage`]).
    Usage(Usage),
    /// A form the task now awaits an answer to (the task moved to `awaiting-input`).
    Ask(Form),
    /// A failure with a code (the task moved to `failed`).
    Fail(Failure),
    /// A plain reply to a start: no task.
    Reply(Vec<DataItem>),
}

/// A compact form for assertions: `status awaiting-input [text:Why?]`,
/// `chunk answer append=false last=true [text:HI, data:{"n":1}]`,
/// `text answer/answer last=false "Hel"`, `tool-call c1 lookup {"q":"x"}`,
/// `tool-result c1 error=false json:{"found":1}`, `usage model=m input=3 output=5`,
/// `ask trip "Trip" []`, `fail RATE_LIMITED retryable=true "busy"`, `reply [text:hi]`.
impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Report::Status { state, items } => write!(f, "status {state} {}", describe(items)),
            Report::Chunk {
                product,
                append,
                last,
            } => write!(
                f,
                "chunk {} append={append} last={last} {}",
                product.id,
                describe(&product.data_items)
            ),
            Report::Text {
                product,
                channel,
                text,
                last,
            } => write!(f, "text {product}/{channel} last={last} {text:?}"),
            Report::ToolCall {
                call_id,
                name,
                arguments,
            } => write!(
                f,
                "tool-call {call_id} {name} {}",
                Value::Object(arguments.clone())
            ),
            Report::ToolResult {
                call_id,
                output,
                is_error,
            } => write!(f, "tool-result {call_id} error={is_error} {output}"),
            Report::Usage(usage) => {
                f.write_str("usage")?;
                if let Some(model) = &usage.model {
                    write!(f, " model={model}")?;
                }
                let counts = [
                    ("input", usage.input_tokens),
                    ("output", usage.output_tokens),
                    ("reasoning", usage.reasoning_tokens),
                ];
                for (name, count) in counts {
                    if let Some(count) = count {
                        write!(f, " {name}={count}")?;
                    }
                }
                Ok(())
            }
            Report::Ask(form) => write!(
                f,
                "ask {} {:?} {}",
                form.request_id,
                form.title,
                describe(&form.items)
            ),
            Report::Fail(failure) => write!(
                f,
                "fail {} retryable={} {:?}",
                failure.code, failure.retryable, failure.message
            ),
            Report::Reply(items) => write!(f, "reply {}", describe(items)),
        }
    }
}

fn describe(items: &[DataItem]) -> String {
    let parts: Vec<String> = items
        .iter()
        .map(|item| match &item.kind {
            DataKind::Text(t) => format!("text:{t}"),
            DataKind::Data(d) => format!("data:{}", Value::Object(d.clone())),
            DataKind::File(f) => format!("file:{}", f.name.as_deref().unwrap_or("")),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// What one invocation left behind.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    /// The task.
    pub task_id: String,
    /// The task's state after the invocation (and after the host failed it, if it did).
    pub state: Option<State>,
    /// The items of the task's latest status (a question, a rejection or failure reason, the
    /// message of a [`Failure`], the items asked with a [`Form`], ...).
    pub status_items: Vec<DataItem>,
    /// The form the task awaits an answer to, if it was asked with one
    /// ([`Outcome::Form`](crate::Outcome::Form)); answer it with [`MockHost::answer_form`].
    pub form: Option<Form>,
    /// The failure the task ended with, if it failed with a code
    /// ([`Outcome::FailWith`](crate::Outcome::FailWith)).
    pub failure: Option<Failure>,
    /// The plain reply, if the partner answered the start with one
    /// ([`Decision::Reply`](crate::Decision::Reply)); then there is no task (`state` is `None`).
    pub reply: Option<Vec<DataItem>>,
    /// The task's products, in the order they were first emitted, as the Leader would get them
    /// (chunks applied).
    pub products: Vec<Product>,
    /// The error the invocation ended with, or `None`.
    pub error: Option<String>,
    /// The reports accepted during the invocation, in order.
    pub reports: Vec<Report>,
    /// The messages logged during the invocation.
    pub logs: Vec<LogRecord>,
}

impl Turn {
    /// The text items of the latest status, joined by newlines.
    pub fn text(&self) -> String {
        let texts: Vec<&str> = self
            .status_items
            .iter()
            .filter_map(DataItem::as_text)
            .collect();
        texts.join("\n")
    }

    /// The product `id`, if the task has one.
    pub fn product(&self, id: &str) -> Option<&Product> {
        self.products.iter().find(|p| p.id == id)
    }

    /// The answer text streamed during the invocation (every [`Channel::Answer`] delta, of any
    /// product, in order).
    pub fn said(&self) -> String {
        self.streamed(Channel::Answer)
    }

    /// The reasoning text streamed during the invocation (every [`Channel::Reasoning`] delta).
    pub fn thought(&self) -> String {
        self.streamed(Channel::Reasoning)
    }

    fn streamed(&self, wanted: Channel) -> String {
        self.reports
            .iter()
            .filter_map(|report| match report {
                Report::Text { channel, text, .. } if *channel == wanted => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// How a new task starts: everything but its input, for [`MockHost::start_with`].
#[derive(Clone, Debug)]
pub struct Start {
    /// The task id; `None` numbers it (`task-1`, `task-2`, ...).
    pub task_id: Option<String>,
    /// The command's `commandParams`.
    pub params: Map<String, Value>,
    /// The session (default `session-test`).
    pub session_id: Option<String>,
    /// The Leader's AIC (default none).
    pub leader_id: Option<String>,
    /// The Leader's `maxProductsBytes` (default none: no limit).
    pub max_products_bytes: Option<u64>,
}

impl Default for Start {
    fn default() -> Self {
        Start {
            task_id: None,
            params: Map::new(),
            session_id: Some("session-test".into()),
            leader_id: None,
            max_products_bytes: None,
        }
    }
}

/// A task the mock keeps.
#[derive(Default)]
struct TaskRecord {
    state: Option<State>,
    status_items: Vec<DataItem>,
    products: Vec<Product>,
    history: Vec<State>,
    session_id: Option<String>,
    leader_id: Option<String>,
    max_products_bytes: Option<u64>,
    /// The form the task awaits an answer to.
    form: Option<Form>,
    /// The failure it ended with, if it failed with a code.
    failure: Option<Failure>,
    /// The plain reply the start was answered with: then there is no task.
    reply: Option<Vec<DataItem>>,
    /// Activity events so far (deltas, tool calls and results, usage), against the cap.
    activity: u64,
}

impl TaskRecord {
    fn products_bytes(&self) -> u64 {
        self.products.iter().map(Product::content_bytes).sum()
    }

    fn moved(&mut self, state: State, items: Vec<DataItem>) {
        self.state = Some(state);
        self.status_items = items;
        self.history.push(state);
        self.form = None;
        self.failure = None;
    }

    /// Refuses a report on a task that is over: final, or answered with a plain reply.
    fn not_over(&self) -> Result<(), ReportError> {
        match self.state {
            Some(s) if s.is_final() => Err(ReportError::TaskEnded),
            _ if self.reply.is_some() => Err(ReportError::TaskEnded),
            _ => Ok(()),
        }
    }
}

/// The host's limits on what a partner reports (`wit/partner.wit`), which the mock enforces too.
mod limits {
    /// Product ids: 1-256 bytes.
    pub const PRODUCT_ID: usize = 256;
    /// One streamed delta.
    pub const DELTA_TEXT: usize = 64 * 1024;
    /// Tool call ids, tool names and form request ids: 1-128 bytes.
    pub const ID: usize = 128;
    /// Tool arguments (JSON object text).
    pub const ARGUMENTS: usize = 64 * 1024;
    /// Tool output.
    pub const TOOL_OUTPUT: usize = 256 * 1024;
    /// Form titles: 1-256 bytes.
    pub const TITLE: usize = 256;
    /// Form descriptions.
    pub const DESCRIPTION: usize = 4 * 1024;
    /// Form schemas (JSON text).
    pub const SCHEMA: usize = 64 * 1024;
    /// How deeply a schema may nest.
    pub const SCHEMA_DEPTH: usize = 32;
    /// Failure codes: 1-64 bytes.
    pub const CODE: usize = 64;
    /// Failure messages.
    pub const MESSAGE: usize = 4 * 1024;
    /// Failure details (JSON object text).
    pub const DETAIL: usize = 16 * 1024;
    /// Activity events per task (deltas, tool calls and results, usage).
    pub const ACTIVITY_EVENTS: u64 = 4096;
}

/// Refuses `what` unless it has 1 to `max` bytes.
fn check_len(what: &str, value: &str, max: usize) -> Result<(), ReportError> {
    if value.is_empty() || value.len() > max {
        return Err(ReportError::InvalidData(format!(
            "{what} must have 1 to {max} bytes, not {}",
            value.len()
        )));
    }
    Ok(())
}

/// Refuses `what` over `max` bytes (empty is fine).
fn check_max(what: &str, value: &str, max: usize) -> Result<(), ReportError> {
    if value.len() > max {
        return Err(ReportError::InvalidData(format!(
            "{what} has {} bytes, over the limit of {max}",
            value.len()
        )));
    }
    Ok(())
}

/// Parses JSON text the partner sent where the contract wants an object.
fn json_object(what: &str, json: &str) -> Result<Map<String, Value>, ReportError> {
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ReportError::InvalidData(format!(
            "{what} must be a JSON object"
        ))),
        Err(e) => Err(ReportError::InvalidData(format!(
            "{what} is not valid JSON: {e}"
        ))),
    }
}

/// How deeply `value` nests: 0 for a scalar, 1 for an object or array of scalars.
fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether `value` holds a `$ref` that is not local (`#...`): the host resolves none.
fn has_remote_ref(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(key, v)| {
            (key == "$ref" && v.as_str().is_some_and(|r| !r.starts_with('#'))) || has_remote_ref(v)
        }),
        Value::Array(items) => items.iter().any(has_remote_ref),
        _ => false,
    }
}

/// The host's checks of a form, short of validating the schema against the JSON Schema
/// meta-schema (which the mock does not do).
fn check_form(request: &wit::InputRequest) -> Result<Value, ReportError> {
    check_len("the request id", &request.request_id, limits::ID)?;
    if let Some(c) = request
        .request_id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ReportError::InvalidData(format!(
            "the request id may hold A-Z a-z 0-9 . _ - only, not {c:?}"
        )));
    }
    check_len("the form title", &request.title, limits::TITLE)?;
    if let Some(description) = &request.description {
        check_max("the form description", description, limits::DESCRIPTION)?;
    }
    // The size first: a huge schema is refused without parsing it.
    check_max("the form schema", &request.schema, limits::SCHEMA)?;
    let schema = json_object("the form schema", &request.schema)?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(ReportError::InvalidData(
            r#"the form schema must describe an object ("type": "object" at the top)"#.into(),
        ));
    }
    let schema = Value::Object(schema);
    if depth(&schema) > limits::SCHEMA_DEPTH {
        return Err(ReportError::InvalidData(format!(
            "the form schema nests deeper than {} levels",
            limits::SCHEMA_DEPTH
        )));
    }
    if has_remote_ref(&schema) {
        return Err(ReportError::InvalidData(
            "the form schema has a $ref that is not local (#...)".into(),
        ));
    }
    Ok(schema)
}

/// The host's checks of a failure.
fn check_failure(failure: &wit::Failure) -> Result<Option<Map<String, Value>>, ReportError> {
    check_len("the failure code", &failure.code, limits::CODE)?;
    if let Some(c) = failure
        .code
        .chars()
        .find(|c| !(c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_'))
    {
        return Err(ReportError::InvalidData(format!(
            "the failure code may hold A-Z 0-9 _ only, not {c:?}"
        )));
    }
    check_max("the failure message", &failure.message, limits::MESSAGE)?;
    match &failure.detail {
        Some(detail) => {
            check_max("the failure detail", detail, limits::DETAIL)?;
            json_object("the failure detail", detail).map(Some)
        }
        None => Ok(None),
    }
}

/// Everything the mock holds; shared with the [`Host`] the tasks see.
#[derive(Default)]
struct World {
    tasks: BTreeMap<String, TaskRecord>,
    task_kv: BTreeMap<String, BTreeMap<String, Vec<u8>>>,
    agent_kv: BTreeMap<String, Vec<u8>>,
    config: BTreeMap<String, Option<String>>,
    kv_value_limit: Option<usize>,
    refusals: Vec<(State, ReportError)>,
    /// After this many more accepted reports the Leader cancels the task reported on.
    cancel_after: Option<usize>,
    /// Activity events allowed per task (`None`: the host's 4096).
    activity_limit: Option<u64>,
    logs: Vec<LogRecord>,
    reports: Vec<Report>,
    next_id: u64,
}

impl World {
    fn task(&mut self, task_id: &str) -> &mut TaskRecord {
        self.tasks.entry(task_id.to_owned()).or_default()
    }

    /// Keeps an accepted report, and lets the Leader cancel the task when
    /// [`MockHost::cancel_after`] says so.
    fn record(&mut self, task_id: &str, report: Report) {
        self.reports.push(report);
        if let Some(left) = self.cancel_after.take() {
            if left > 1 {
                self.cancel_after = Some(left - 1);
            } else {
                let task = self.task(task_id);
                if !task.state.is_some_and(State::is_final) {
                    task.moved(State::Canceled, Vec::new());
                }
            }
        }
    }

    /// A refusal [`MockHost::refuse_next`] set up for a change to `to`, if any (used once).
    fn refusal(&mut self, to: State) -> Result<(), ReportError> {
        match self.refusals.iter().position(|(s, _)| *s == to) {
            Some(i) => Err(self.refusals.remove(i).1),
            None => Ok(()),
        }
    }

    /// A partner's status report, checked against the AIP state machine (spec 4.2).
    fn set_status(
        &mut self,
        task_id: &str,
        to: State,
        items: Vec<DataItem>,
    ) -> Result<(), ReportError> {
        self.refusal(to)?;
        let task = self.task(task_id);
        task.not_over()?;
        use State::*;
        match (task.state, to) {
            (None, Accepted | Rejected)
            | (Some(Accepted), Working)
            | (Some(Working), AwaitingCompletion | AwaitingInput | Failed) => {}
            (from, to) => {
                return Err(ReportError::InvalidTransition(format!(
                    "a partner cannot move a task from {} to {to}",
                    from.map_or("no state (a new task)", State::as_str)
                )));
            }
        }
        task.moved(to, items.clone());
        self.record(task_id, Report::Status { state: to, items });
        Ok(())
    }

    /// Refuses a report that only a working task may make (`what`), when it is not working.
    fn working(&mut self, task_id: &str, what: &str) -> Result<(), ReportError> {
        let task = self.task(task_id);
        task.not_over()?;
        match task.state {
            Some(State::Working) => Ok(()),
            state => Err(ReportError::InvalidTransition(format!(
                "{what} while the task is working, not while it is {}",
                state.map_or("new (not yet accepted)", State::as_str)
            ))),
        }
    }

    /// Counts one activity event of task `task_id`, or refuses it over the cap.
    fn count_activity(&mut self, task_id: &str) -> Result<(), ReportError> {
        let limit = self.activity_limit.unwrap_or(limits::ACTIVITY_EVENTS);
        let task = self.task(task_id);
        if task.activity >= limit {
            return Err(ReportError::LimitReached(format!(
                "at most {limit} activity events (streamed text, tool calls and results, usage) per task"
            )));
        }
        task.activity += 1;
        Ok(())
    }

    /// Fails the task and refuses the report when its products would exceed `maxProductsBytes`,
    /// the way the host does.
    fn fits(&mut self, task_id: &str, total: u64) -> Result<(), ReportError> {
        if let Some(limit) = self.task(task_id).max_products_bytes
            && total > limit
        {
            let reason =
                format!("the products would reach {total} bytes, over maxProductsBytes of {limit}");
            self.fail(task_id, &reason);
            return Err(ReportError::ProductsTooLarge(total));
        }
        Ok(())
    }

    /// A product chunk, applied the way the host applies it (and refused where it refuses it).
    fn emit(
        &mut self,
        task_id: &str,
        product: Product,
        append: bool,
        last: bool,
    ) -> Result<(), ReportError> {
        let task = self.task(task_id);
        task.not_over()?;
        match task.state {
            Some(State::Accepted | State::Working) => {}
            None => {
                return Err(ReportError::InvalidTransition(
                    "accept the task before emitting products".into(),
                ));
            }
            Some(s) => {
                return Err(ReportError::InvalidTransition(format!(
                    "products are emitted while the task is working, not while it is {s}"
                )));
            }
        }
        let existing = task.products.iter().position(|p| p.id == product.id);
        let old = existing.map_or(0, |i| task.products[i].content_bytes());
        let new = if append {
            old + product.content_bytes()
        } else {
            product.content_bytes()
        };
        let total = task.products_bytes() - old + new;
        self.fits(task_id, total)?;
        let task = self.task(task_id);
        let report = Report::Chunk {
            product: product.clone(),
            append,
            last,
        };
        match existing {
            Some(i) if append => {
                let p = &mut task.products[i];
                p.data_items.extend(product.data_items);
                if product.name.is_some() {
                    p.name = product.name;
                }
                if product.description.is_some() {
                    p.description = product.description;
                }
            }
            Some(i) => task.products[i] = product,
            None => task.products.push(product),
        }
        self.record(task_id, report);
        Ok(())
    }

    /// Streamed text: checked, counted and applied the way the host does. The text extends the
    /// product's last item when that is the text of the same channel (metadata
    /// `{"aiphost.kind": "answer" | "reasoning"}`), or starts such an item.
    fn stream_text(&mut self, task_id: &str, delta: &wit::TextDelta) -> Result<(), ReportError> {
        let channel = Channel::from_wit(delta.channel);
        let task = self.task(task_id);
        task.not_over()?;
        match task.state {
            Some(State::Working) => {}
            // The host moves an accepted task to working first.
            Some(State::Accepted) => {
                task.moved(State::Working, Vec::new());
                let report = Report::Status {
                    state: State::Working,
                    items: Vec::new(),
                };
                self.record(task_id, report);
            }
            state => {
                return Err(ReportError::InvalidTransition(format!(
                    "text is streamed while the task is accepted or working, not while it is {}",
                    state.map_or("new (not yet accepted)", State::as_str)
                )));
            }
        }
        check_len("the product id", &delta.product_id, limits::PRODUCT_ID)?;
        if delta.product_id.chars().any(char::is_control) {
            return Err(ReportError::InvalidData(
                "the product id has control characters".into(),
            ));
        }
        check_max("the streamed text", &delta.text, limits::DELTA_TEXT)?;
        if delta.text.is_empty() && !delta.last {
            return Err(ReportError::InvalidData(
                "an empty delta must close the product (last)".into(),
            ));
        }
        self.count_activity(task_id)?;
        let total = self.task(task_id).products_bytes() + delta.text.len() as u64;
        self.fits(task_id, total)?;
        let task = self.task(task_id);
        let kind = format!("{channel}");
        let i = match task.products.iter().position(|p| p.id == delta.product_id) {
            Some(i) => i,
            None => {
                task.products.push(Product::new(delta.product_id.clone()));
                task.products.len() - 1
            }
        };
        let product = &mut task.products[i];
        if !delta.text.is_empty() {
            let extends = product.data_items.last_mut().filter(|item| {
                item.metadata
                    .as_ref()
                    .and_then(|m| m.get(KIND_KEY))
                    .and_then(Value::as_str)
                    == Some(kind.as_str())
            });
            match extends.map(|item| &mut item.kind) {
                Some(DataKind::Text(text)) => text.push_str(&delta.text),
                _ => product.data_items.push(
                    DataItem::text(delta.text.clone())
                        .with_metadata(Map::from_iter([(KIND_KEY.to_owned(), kind.into())])),
                ),
            }
        }
        let report = Report::Text {
            product: delta.product_id.clone(),
            channel,
            text: delta.text.clone(),
            last: delta.last,
        };
        self.record(task_id, report);
        Ok(())
    }

    fn tool_call(&mut self, task_id: &str, call: &wit::ToolCall) -> Result<(), ReportError> {
        self.working(task_id, "tools are called")?;
        check_len("the call id", &call.call_id, limits::ID)?;
        check_len("the tool name", &call.name, limits::ID)?;
        check_max("the tool arguments", &call.arguments, limits::ARGUMENTS)?;
        let arguments = json_object("the tool arguments", &call.arguments)?;
        self.count_activity(task_id)?;
        let report = Report::ToolCall {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            arguments,
        };
        self.record(task_id, report);
        Ok(())
    }

    fn tool_result(&mut self, task_id: &str, result: &wit::ToolResult) -> Result<(), ReportError> {
        self.working(task_id, "tool results are reported")?;
        check_len("the call id", &result.call_id, limits::ID)?;
        let output = match &result.output {
            wit::ToolOutput::Json(json) => {
                check_max("the tool output", json, limits::TOOL_OUTPUT)?;
                let value = serde_json::from_str(json).map_err(|e| {
                    ReportError::InvalidData(format!("the tool output is not valid JSON: {e}"))
                })?;
                ToolOutput::Json(value)
            }
            wit::ToolOutput::Text(text) => {
                check_max("the tool output", text, limits::TOOL_OUTPUT)?;
                ToolOutput::Text(text.clone())
            }
        };
        self.count_activity(task_id)?;
        let report = Report::ToolResult {
            call_id: result.call_id.clone(),
            output,
            is_error: result.is_error,
        };
        self.record(task_id, report);
        Ok(())
    }

    fn usage(&mut self, task_id: &str, usage: &wit::Usage) -> Result<(), ReportError> {
        self.working(task_id, "usage is reported")?;
        self.count_activity(task_id)?;
        self.record(task_id, Report::Usage(Usage::from_wit(usage)));
        Ok(())
    }

    fn ask(
        &mut self,
        task_id: &str,
        request: &wit::InputRequest,
        items: Vec<DataItem>,
    ) -> Result<(), ReportError> {
        self.refusal(State::AwaitingInput)?;
        self.working(task_id, "a form is asked")?;
        let schema = check_form(request)?;
        let form = Form {
            request_id: request.request_id.clone(),
            title: request.title.clone(),
            description: request.description.clone(),
            schema,
            items: items.clone(),
        };
        let task = self.task(task_id);
        task.moved(State::AwaitingInput, items);
        task.form = Some(form.clone());
        self.record(task_id, Report::Ask(form));
        Ok(())
    }

    fn fail_with(&mut self, task_id: &str, failure: &wit::Failure) -> Result<(), ReportError> {
        self.refusal(State::Failed)?;
        self.working(task_id, "a task is failed with a code")?;
        let detail = check_failure(failure)?;
        let failure = Failure {
            code: failure.code.clone(),
            message: failure.message.clone(),
            retryable: failure.retryable,
            detail,
        };
        let task = self.task(task_id);
        task.moved(State::Failed, vec![DataItem::text(failure.message.clone())]);
        task.failure = Some(failure.clone());
        self.record(task_id, Report::Fail(failure));
        Ok(())
    }

    fn reply(&mut self, task_id: &str, items: Vec<DataItem>) -> Result<(), ReportError> {
        let task = self.task(task_id);
        task.not_over()?;
        if task.state.is_some() || !task.history.is_empty() {
            return Err(ReportError::InvalidTransition(
                "a plain reply answers a start, before the task is accepted or rejected".into(),
            ));
        }
        task.reply = Some(items.clone());
        self.record(task_id, Report::Reply(items));
        Ok(())
    }

    /// The host fails a task that has not ended, the way it does when an invocation errs.
    fn fail(&mut self, task_id: &str, reason: &str) {
        let task = self.task(task_id);
        if task.reply.is_some() {
            return;
        }
        let path: &[State] = match task.state {
            None => &[State::Rejected],
            Some(State::Accepted) => &[State::Working, State::Failed],
            Some(State::Working) => &[State::Failed],
            Some(_) => &[],
        };
        for &step in path {
            let items = if matches!(step, State::Failed | State::Rejected) {
                vec![DataItem::text(reason)]
            } else {
                Vec::new()
            };
            task.moved(step, items);
        }
    }

    fn kv(&mut self, task_id: &str, scope: wit_kv::Scope) -> &mut BTreeMap<String, Vec<u8>> {
        match scope {
            wit_kv::Scope::Task => self.task_kv.entry(task_id.to_owned()).or_default(),
            wit_kv::Scope::Agent => &mut self.agent_kv,
        }
    }
}

/// What a [`Task`] of the mock talks to: the mock's state, for one task.
struct Bound {
    world: Rc<RefCell<World>>,
    task_id: String,
}

impl Host for Bound {
    fn set_status(
        &self,
        state: wit::TaskState,
        items: &[wit::DataItem],
    ) -> Result<(), wit::ReportError> {
        let items = items_from_wit(items)?;
        self.world
            .borrow_mut()
            .set_status(&self.task_id, State::from_wit(state), items)
            .map_err(ReportError::into_wit)
    }

    fn emit_product_chunk(&self, chunk: &wit::ProductChunk) -> Result<(), wit::ReportError> {
        let p = &chunk.product;
        let data_items = items_from_wit(&p.data_items)?;
        let product = Product {
            id: p.id.clone(),
            name: p.name.clone(),
            description: p.description.clone(),
            data_items,
        };
        self.world
            .borrow_mut()
            .emit(&self.task_id, product, chunk.append, chunk.last_chunk)
            .map_err(ReportError::into_wit)
    }

    fn current_state(&self) -> Option<wit::TaskState> {
        let world = self.world.borrow();
        let state = world.tasks.get(&self.task_id).and_then(|t| t.state);
        state.map(State::to_wit)
    }

    fn stream_text(&self, delta: &wit::TextDelta) -> Result<(), wit::ReportError> {
        let mut world = self.world.borrow_mut();
        world
            .stream_text(&self.task_id, delta)
            .map_err(ReportError::into_wit)
    }

    fn report_tool_call(&self, call: &wit::ToolCall) -> Result<(), wit::ReportError> {
        let mut world = self.world.borrow_mut();
        world
            .tool_call(&self.task_id, call)
            .map_err(ReportError::into_wit)
    }

    fn report_tool_result(&self, outcome: &wit::ToolResult) -> Result<(), wit::ReportError> {
        let mut world = self.world.borrow_mut();
        world
            .tool_result(&self.task_id, outcome)
            .map_err(ReportError::into_wit)
    }

    fn report_usage(&self, usage: &wit::Usage) -> Result<(), wit::ReportError> {
        let mut world = self.world.borrow_mut();
        world
            .usage(&self.task_id, usage)
            .map_err(ReportError::into_wit)
    }

    fn ask(
        &self,
        request: &wit::InputRequest,
        items: &[wit::DataItem],
    ) -> Result<(), wit::ReportError> {
        let items = items_from_wit(items)?;
        let mut world = self.world.borrow_mut();
        world
            .ask(&self.task_id, request, items)
            .map_err(ReportError::into_wit)
    }

    fn fail(&self, failure: &wit::Failure) -> Result<(), wit::ReportError> {
        let mut world = self.world.borrow_mut();
        world
            .fail_with(&self.task_id, failure)
            .map_err(ReportError::into_wit)
    }

    fn reply(&self, items: &[wit::DataItem]) -> Result<(), wit::ReportError> {
        let items = items_from_wit(items)?;
        let mut world = self.world.borrow_mut();
        world
            .reply(&self.task_id, items)
            .map_err(ReportError::into_wit)
    }

    fn kv_get(&self, scope: wit_kv::Scope, key: &str) -> Result<Option<Vec<u8>>, wit_kv::KvError> {
        let mut world = self.world.borrow_mut();
        Ok(world.kv(&self.task_id, scope).get(key).cloned())
    }

    fn kv_set(&self, scope: wit_kv::Scope, key: &str, value: &[u8]) -> Result<(), wit_kv::KvError> {
        let mut world = self.world.borrow_mut();
        if let Some(limit) = world.kv_value_limit
            && value.len() > limit
        {
            return Err(wit_kv::KvError::TooLarge(format!(
                "the value is {} bytes, over the limit of {limit}",
                value.len()
            )));
        }
        world
            .kv(&self.task_id, scope)
            .insert(key.to_owned(), value.to_vec());
        Ok(())
    }

    fn kv_delete(&self, scope: wit_kv::Scope, key: &str) -> Result<(), wit_kv::KvError> {
        let mut world = self.world.borrow_mut();
        world.kv(&self.task_id, scope).remove(key);
        Ok(())
    }
}

/// DataItems as the partner sent them; malformed ones are refused as the host refuses them.
fn items_from_wit(items: &[wit::DataItem]) -> Result<Vec<DataItem>, wit::ReportError> {
    items
        .iter()
        .cloned()
        .map(DataItem::from_wit)
        .collect::<Result<Vec<_>, _>>()
        .map_err(wit::ReportError::InvalidData)
}

thread_local! {
    /// The mock running a partner on this thread, and the task it runs it for: where
    /// `config::get` and `log` go natively.
    static CURRENT: RefCell<Option<(Rc<RefCell<World>>, String)>> = const { RefCell::new(None) };
}

/// Installs a mock as this thread's current host until dropped (also when the partner panics).
struct Installed(Option<(Rc<RefCell<World>>, String)>);

impl Installed {
    fn new(world: &Rc<RefCell<World>>, task_id: &str) -> Self {
        let previous = CURRENT.with(|c| c.replace(Some((world.clone(), task_id.to_owned()))));
        Installed(previous)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

/// Records a log line with the current mock; false when there is none.
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) fn log(level: Level, message: &str, fields: &[(&str, &str)]) -> bool {
    CURRENT.with(|c| match &*c.borrow() {
        Some((world, task_id)) => {
            world.borrow_mut().logs.push(LogRecord {
                level,
                message: message.to_owned(),
                fields: fields
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                task_id: Some(task_id.clone()),
            });
            true
        }
        None => false,
    })
}

/// Config value `name` from the current mock (`NotGranted` when there is none).
#[cfg_attr(target_arch = "wasm32", allow(dead_code))]
pub(crate) fn config(name: &str) -> Result<String, ConfigError> {
    CURRENT.with(|c| match &*c.borrow() {
        Some((world, _)) => match world.borrow().config.get(name) {
            Some(Some(value)) => Ok(value.clone()),
            Some(None) => Err(ConfigError::NotSet),
            None => Err(ConfigError::NotGranted),
        },
        None => Err(ConfigError::NotGranted),
    })
}

/// What the invocation is for.
enum Event {
    Start,
    Continue,
    Complete(EndReason),
    Cancel(EndReason),
}

/// A host in memory for partner `P`. See the [module documentation](self).
///
/// The commands panic when a Leader could not send them (continuing a task that is not waiting,
/// completing one that is not awaiting completion, a task id that does not exist): that is a
/// mistake in the test, not something for the partner to handle.
pub struct MockHost<P: Partner> {
    world: Rc<RefCell<World>>,
    partner: PhantomData<fn() -> P>,
}

impl<P: Partner> Default for MockHost<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: Partner> fmt::Debug for MockHost<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let world = self.world.borrow();
        f.debug_struct("MockHost")
            .field("tasks", &world.tasks.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl<P: Partner> MockHost<P> {
    /// A host with no tasks, no key-value entries, no config values and no limits.
    pub fn new() -> Self {
        MockHost {
            world: Rc::new(RefCell::new(World::default())),
            partner: PhantomData,
        }
    }

    /// Config value `name` is set to `value` (and the manifest asks for it).
    pub fn with_config(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.world
            .borrow_mut()
            .config
            .insert(name.into(), Some(value.into()));
        self
    }

    /// The manifest asks for config value `name`, but the tenant has not set it
    /// ([`ConfigError::NotSet`]); names neither set nor granted are
    /// [`ConfigError::NotGranted`].
    pub fn with_granted(self, name: impl Into<String>) -> Self {
        self.world
            .borrow_mut()
            .config
            .entry(name.into())
            .or_insert(None);
        self
    }

    /// Key-value values over `bytes` are refused with [`KvError::TooLarge`](crate::KvError), as
    /// the host's own limit would refuse them.
    pub fn with_kv_value_limit(self, bytes: usize) -> Self {
        self.world.borrow_mut().kv_value_limit = Some(bytes);
        self
    }

    /// Allows `events` activity events per task (streamed deltas, tool calls and results, usage)
    /// instead of the host's 4096; over it, reports get [`ReportError::LimitReached`]. To test
    /// how a partner copes with the cap without making thousands of reports.
    pub fn with_activity_limit(self, events: u64) -> Self {
        self.world.borrow_mut().activity_limit = Some(events);
        self
    }

    /// The host refuses the next report of a change to `state` with `error` (once), whatever the
    /// state machine says: to test how a partner copes with a refusal. Asking with a form counts
    /// as a change to `awaiting-input`, failing with a code as one to `failed`.
    pub fn refuse_next(&self, state: State, error: ReportError) {
        self.world.borrow_mut().refusals.push((state, error));
    }

    /// The Leader cancels the task the partner reports on right after the host accepts the next
    /// `reports` reports (counted from now, across invocations): to test how a partner stops when
    /// a cancel arrives while it works. Its next report gets [`ReportError::TaskEnded`], and the
    /// SDK stops quietly.
    ///
    /// # Panics
    ///
    /// If `reports` is 0.
    pub fn cancel_after(&self, reports: usize) {
        assert!(
            reports > 0,
            "cancel_after needs at least one report to wait for"
        );
        self.world.borrow_mut().cancel_after = Some(reports);
    }

    /// A new task with `input` and default [`Start`] options: decide, then work.
    pub fn start(&mut self, input: Vec<DataItem>) -> Turn {
        self.start_with(input, Start::default())
    }

    /// A new task with `input` and these options: decide, then work.
    ///
    /// # Panics
    ///
    /// If a task with the id exists already.
    pub fn start_with(&mut self, input: Vec<DataItem>, start: Start) -> Turn {
        let task_id = {
            let mut world = self.world.borrow_mut();
            let task_id = match start.task_id {
                Some(id) => id,
                None => loop {
                    world.next_id += 1;
                    let id = format!("task-{}", world.next_id);
                    if !world.tasks.contains_key(&id) {
                        break id;
                    }
                },
            };
            assert!(
                !world.tasks.contains_key(&task_id),
                "task {task_id} exists already"
            );
            world.tasks.insert(
                task_id.clone(),
                TaskRecord {
                    session_id: start.session_id,
                    leader_id: start.leader_id,
                    max_products_bytes: start.max_products_bytes,
                    ..TaskRecord::default()
                },
            );
            task_id
        };
        self.invoke(&task_id, Event::Start, input, start.params)
    }

    /// New input for a task awaiting input or completion: the host moves it back to `working`,
    /// and the partner works.
    ///
    /// # Panics
    ///
    /// If there is no such task, or it is not awaiting input or completion.
    pub fn continue_(&mut self, task_id: &str, input: Vec<DataItem>) -> Turn {
        self.continue_with(task_id, input, Map::new())
    }

    /// Like [`continue_`](Self::continue_), with `commandParams`.
    ///
    /// # Panics
    ///
    /// As [`continue_`](Self::continue_).
    pub fn continue_with(
        &mut self,
        task_id: &str,
        input: Vec<DataItem>,
        params: Map<String, Value>,
    ) -> Turn {
        self.leader_moves(
            task_id,
            &[State::AwaitingInput, State::AwaitingCompletion],
            State::Working,
        );
        self.invoke(task_id, Event::Continue, input, params)
    }

    /// The Leader answers the form task `task_id` awaits with `values` (a JSON object): the
    /// host tags them as the answer to the form's request id
    /// ([`DataItem::input_answer`]) and continues the task with them, as a door does.
    ///
    /// The mock does not check the values against the form's schema (the host does, and refuses
    /// a wrong answer without invoking the partner).
    ///
    /// # Panics
    ///
    /// If there is no such task, or it is not awaiting an answer to a form.
    pub fn answer_form(&mut self, task_id: &str, values: Value) -> Turn {
        let form = {
            let world = self.world.borrow();
            world.tasks.get(task_id).and_then(|t| t.form.clone())
        };
        let Some(form) = form else {
            panic!("task {task_id} is not awaiting an answer to a form");
        };
        self.continue_(
            task_id,
            vec![DataItem::input_answer(form.request_id, values)],
        )
    }

    /// The Leader completes a task awaiting completion; the partner hears of it
    /// ([`Partner::completed`] with [`EndReason::Leader`]).
    ///
    /// # Panics
    ///
    /// If there is no such task, or it is not awaiting completion.
    pub fn complete(&mut self, task_id: &str) -> Turn {
        self.leader_moves(task_id, &[State::AwaitingCompletion], State::Completed);
        self.invoke(
            task_id,
            Event::Complete(EndReason::Leader),
            Vec::new(),
            Map::new(),
        )
    }

    /// The Leader cancels a task that has not ended; the partner hears of it
    /// ([`Partner::canceled`] with [`EndReason::Leader`]).
    ///
    /// # Panics
    ///
    /// If there is no such task, or it has ended.
    pub fn cancel(&mut self, task_id: &str) -> Turn {
        let waiting = [
            State::Accepted,
            State::Working,
            State::AwaitingInput,
            State::AwaitingCompletion,
        ];
        self.leader_moves(task_id, &waiting, State::Canceled);
        self.invoke(
            task_id,
            Event::Cancel(EndReason::Leader),
            Vec::new(),
            Map::new(),
        )
    }

    /// The awaiting timer runs out: a task awaiting input is canceled, one awaiting completion is
    /// completed; the partner hears of it with [`EndReason::Timeout`].
    ///
    /// # Panics
    ///
    /// If there is no such task, or it is not awaiting input or completion.
    pub fn timeout(&mut self, task_id: &str) -> Turn {
        let event = if self.state(task_id) == Some(State::AwaitingInput) {
            self.leader_moves(task_id, &[State::AwaitingInput], State::Canceled);
            Event::Cancel(EndReason::Timeout)
        } else {
            self.leader_moves(task_id, &[State::AwaitingCompletion], State::Completed);
            Event::Complete(EndReason::Timeout)
        };
        self.invoke(task_id, event, Vec::new(), Map::new())
    }

    /// Runs `f` on task `task_id` as an invocation would see it (created if new: then
    /// [`Task::is_start`] holds), with this host answering its reports, key-value operations,
    /// config and log calls. For calling [`Partner::decide`] or [`Partner::work`] directly:
    ///
    /// ```
    /// # use aiphost_sdk::{DataItem, Decision, Outcome, Partner, Task};
    /// # use aiphost_sdk::testing::MockHost;
    /// struct Picky;
    /// impl Partner for Picky {
    ///     fn decide(_task: &Task, input: &[DataItem]) -> Decision {
    ///         if input.is_empty() { Decision::reject("nothing to do") } else { Decision::Accept }
    ///     }
    ///     fn work(_task: &mut Task, _input: Vec<DataItem>) -> Outcome { Outcome::Done(vec![]) }
    /// }
    ///
    /// let host = MockHost::<Picky>::new();
    /// let decision = host.with_task("t-1", |task| Picky::decide(task, &[]));
    /// assert_eq!(decision, Decision::reject("nothing to do"));
    /// ```
    pub fn with_task<R>(&self, task_id: &str, f: impl FnOnce(&mut Task) -> R) -> R {
        self.with_task_params(task_id, Map::new(), f)
    }

    /// Like [`with_task`](Self::with_task), with `commandParams`.
    pub fn with_task_params<R>(
        &self,
        task_id: &str,
        params: Map<String, Value>,
        f: impl FnOnce(&mut Task) -> R,
    ) -> R {
        let invocation = {
            let mut world = self.world.borrow_mut();
            let event = if world.task(task_id).state.is_none() {
                wit::Event::Start
            } else {
                wit::Event::Continue
            };
            self.invocation(&world, task_id, event, Vec::new(), &params)
        };
        let _installed = Installed::new(&self.world, task_id);
        let host = Rc::new(Bound {
            world: self.world.clone(),
            task_id: task_id.to_owned(),
        });
        match Task::from_invocation(invocation, host) {
            Ok((_, _, mut task)) => f(&mut task),
            // The mock builds the invocation from a map and SDK items: nothing to refuse.
            Err(e) => unreachable!("the mock built a malformed invocation: {e}"),
        }
    }

    /// Puts task `task_id` in `state` directly, outside the state machine and without telling
    /// the partner: to set up a test (a task that the Leader canceled while the partner worked,
    /// say).
    pub fn set_state(&self, task_id: &str, state: Option<State>) {
        self.world.borrow_mut().task(task_id).state = state;
    }

    /// Task `task_id`'s state (`None`: no such task, or not yet accepted or rejected).
    pub fn state(&self, task_id: &str) -> Option<State> {
        self.world.borrow().tasks.get(task_id).and_then(|t| t.state)
    }

    /// Every state task `task_id` went through, in order (the Leader's moves included).
    pub fn history(&self, task_id: &str) -> Vec<State> {
        self.world
            .borrow()
            .tasks
            .get(task_id)
            .map(|t| t.history.clone())
            .unwrap_or_default()
    }

    /// Task `task_id`'s products, chunks applied.
    pub fn products(&self, task_id: &str) -> Vec<Product> {
        self.world
            .borrow()
            .tasks
            .get(task_id)
            .map(|t| t.products.clone())
            .unwrap_or_default()
    }

    /// Every message logged, across invocations.
    pub fn logs(&self) -> Vec<LogRecord> {
        self.world.borrow().logs.clone()
    }

    /// Task `task_id`'s key-value entries, to read or seed (the task need not exist yet).
    pub fn task_kv(&self, task_id: &str) -> Kv {
        Kv::new(self.bound(task_id), wit_kv::Scope::Task)
    }

    /// The key-value entries shared by all tasks of the partner, to read or seed.
    pub fn agent_kv(&self) -> Kv {
        Kv::new(self.bound(""), wit_kv::Scope::Agent)
    }

    /// All of task `task_id`'s key-value entries, by key.
    pub fn task_kv_entries(&self, task_id: &str) -> BTreeMap<String, Vec<u8>> {
        let world = self.world.borrow();
        world.task_kv.get(task_id).cloned().unwrap_or_default()
    }

    /// All of the agent's shared key-value entries, by key.
    pub fn agent_kv_entries(&self) -> BTreeMap<String, Vec<u8>> {
        self.world.borrow().agent_kv.clone()
    }

    /// Config value `name` as the partner would get it.
    pub fn config(&self, name: &str) -> Result<String, ConfigError> {
        let _installed = Installed::new(&self.world, "");
        config(name)
    }

    /// The names of the tasks the host has (not the starts answered with a plain reply: those
    /// leave no task).
    pub fn task_ids(&self) -> BTreeSet<String> {
        let world = self.world.borrow();
        let tasks = world.tasks.iter();
        tasks
            .filter(|(_, t)| t.reply.is_none())
            .map(|(id, _)| id.clone())
            .collect()
    }

    pub(crate) fn bound(&self, task_id: &str) -> Rc<dyn Host> {
        Rc::new(Bound {
            world: self.world.clone(),
            task_id: task_id.to_owned(),
        })
    }

    /// A Leader command moves the task (not a partner report: no state machine check beyond
    /// `from`).
    fn leader_moves(&self, task_id: &str, from: &[State], to: State) {
        let mut world = self.world.borrow_mut();
        let Some(task) = world.tasks.get_mut(task_id) else {
            panic!("no task {task_id}");
        };
        match task.state {
            Some(s) if from.contains(&s) => task.moved(to, Vec::new()),
            other => panic!(
                "a Leader cannot move task {task_id} to {to} from {}",
                other.map_or("no state", State::as_str)
            ),
        }
    }

    fn invocation(
        &self,
        world: &World,
        task_id: &str,
        event: wit::Event,
        input: Vec<DataItem>,
        params: &Map<String, Value>,
    ) -> wit::Invocation {
        let task = world.tasks.get(task_id);
        wit::Invocation {
            event,
            task_id: task_id.to_owned(),
            session_id: task.and_then(|t| t.session_id.clone()),
            leader_id: task.and_then(|t| t.leader_id.clone()),
            state: task.and_then(|t| t.state).map(State::to_wit),
            data_items: input.into_iter().map(DataItem::into_wit).collect(),
            max_products_bytes: task.and_then(|t| t.max_products_bytes),
            products_bytes: task.map_or(0, TaskRecord::products_bytes),
            command_params: Value::Object(params.clone()).to_string(),
        }
    }

    fn invoke(
        &mut self,
        task_id: &str,
        event: Event,
        input: Vec<DataItem>,
        params: Map<String, Value>,
    ) -> Turn {
        let (invocation, reports_from, logs_from) = {
            let world = self.world.borrow();
            let event = match event {
                Event::Start => wit::Event::Start,
                Event::Continue => wit::Event::Continue,
                Event::Complete(r) => wit::Event::Complete(r.to_wit()),
                Event::Cancel(r) => wit::Event::Cancel(r.to_wit()),
            };
            let invocation = self.invocation(&world, task_id, event, input, &params);
            (invocation, world.reports.len(), world.logs.len())
        };
        let result = {
            let _installed = Installed::new(&self.world, task_id);
            crate::runtime::run_with::<P>(invocation, self.bound(task_id))
        };
        let mut world = self.world.borrow_mut();
        if let Err(reason) = &result {
            world.fail(task_id, reason);
        }
        let reports = world.reports[reports_from..].to_vec();
        let logs = world.logs[logs_from..].to_vec();
        let task = world.task(task_id);
        Turn {
            task_id: task_id.to_owned(),
            state: task.state,
            status_items: task.status_items.clone(),
            form: task.form.clone(),
            failure: task.failure.clone(),
            reply: task.reply.clone(),
            products: task.products.clone(),
            error: result.err(),
            reports,
            logs,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::ConfigError;
    use crate::{Decision, KvError, Outcome};

    /// Streams its input word by word, logs, reads config, and counts starts in the agent KV.
    struct Streamer;
    impl Partner for Streamer {
        fn decide(_task: &Task, input: &[DataItem]) -> Decision {
            match input.first().and_then(DataItem::as_text) {
                Some(_) => Decision::Accept,
                None => Decision::reject("no text"),
            }
        }

        fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
            let text = input.first().and_then(DataItem::as_text).unwrap_or("");
            let starts: u32 = task.agent_kv().get_json("starts").unwrap().unwrap_or(0);
            task.agent_kv().set_json("starts", &(starts + 1)).unwrap();
            let sep = crate::config::get("SEP");
            crate::log::with_fields(
                crate::log::Level::Debug,
                "config",
                &[("sep", &format!("{sep:?}"))],
            );
            for word in text.split(' ') {
                if let Err(e) = task.emit_chunk(
                    Product::new("words").with_item(DataItem::text(word)),
                    true,
                    false,
                ) {
                    return Outcome::Abort(e.to_string());
                }
            }
            crate::log::warn("done streaming");
            Outcome::Reply {
                products: Vec::new(),
                message: vec![DataItem::text(sep.unwrap_or_else(|e| e.to_string()))],
            }
        }
    }

    #[test]
    fn chunks_logs_config_and_agent_kv() {
        let mut host = MockHost::<Streamer>::new().with_config("SEP", "/");
        let turn = host.start(vec![DataItem::text("a b")]);
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert_eq!(turn.text(), "/");
        let words = turn.product("words").expect("the streamed product");
        let texts: Vec<_> = words
            .data_items
            .iter()
            .filter_map(DataItem::as_text)
            .collect();
        assert_eq!(texts, ["a", "b"]);
        assert_eq!(
            turn.reports
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "status accepted []",
                "status working []",
                "chunk words append=true last=false [text:a]",
                "chunk words append=true last=false [text:b]",
                "status awaiting-completion [text:/]",
            ]
        );
        assert_eq!(
            turn.logs,
            [
                LogRecord {
                    level: Level::Debug,
                    message: "config".into(),
                    fields: vec![("sep".into(), r#"Ok("/")"#.into())],
                    task_id: Some(turn.task_id.clone()),
                },
                LogRecord {
                    level: Level::Warn,
                    message: "done streaming".into(),
                    fields: Vec::new(),
                    task_id: Some(turn.task_id.clone()),
                },
            ]
        );
        assert_eq!(host.products(&turn.task_id), turn.products);

        // A second task shares the agent KV, not the task KV.
        let second = host.start(vec![DataItem::text("c")]);
        assert_eq!(second.task_id, "task-2");
        assert_eq!(host.agent_kv().get_json::<u32>("starts"), Ok(Some(2)));
        assert_eq!(host.logs().len(), 4);
        assert_eq!(
            host.task_ids().into_iter().collect::<Vec<_>>(),
            ["task-1", "task-2"]
        );
    }

    #[test]
    fn config_granted_unset_and_not_granted() {
        let host = MockHost::<Streamer>::new()
            .with_config("A", "1")
            .with_granted("B");
        assert_eq!(host.config("A"), Ok("1".into()));
        assert_eq!(host.config("B"), Err(ConfigError::NotSet));
        assert_eq!(host.config("C"), Err(ConfigError::NotGranted));
        // No mock running: nothing is granted.
        assert_eq!(crate::config::get("A"), Err(ConfigError::NotGranted));
        let mut host = MockHost::<Streamer>::new();
        let turn = host.start(vec![DataItem::text("x")]);
        assert_eq!(turn.text(), ConfigError::NotGranted.to_string());
    }

    #[test]
    fn the_state_machine_refuses_what_the_host_refuses() {
        let host = MockHost::<Streamer>::new();
        host.with_task("t", |task| {
            assert!(task.is_start());
            assert_eq!(
                task.emit_chunk(Product::new("p"), false, true),
                Err(ReportError::InvalidTransition(
                    "accept the task before emitting products".into()
                ))
            );
            assert!(matches!(
                task.set_status(State::Working, vec![]),
                Err(ReportError::InvalidTransition(m)) if m.contains("no state (a new task) to working")
            ));
            task.set_status(State::Accepted, vec![]).unwrap();
            task.set_status(State::Working, vec![]).unwrap();
            task.set_status(State::AwaitingInput, vec![]).unwrap();
            assert!(matches!(
                task.emit_chunk(Product::new("p"), false, true),
                Err(ReportError::InvalidTransition(m)) if m.contains("not while it is awaiting-input")
            ));
        });
        host.set_state("t", Some(State::Canceled));
        host.with_task("t", |task| {
            assert!(task.is_continue());
            assert_eq!(task.state(), Some(State::Canceled));
            assert_eq!(
                task.set_status(State::Failed, vec![]),
                Err(ReportError::TaskEnded)
            );
        });
        assert_eq!(
            host.history("t"),
            [State::Accepted, State::Working, State::AwaitingInput]
        );
    }

    #[test]
    fn direct_calls_and_seeded_kv() {
        let host = MockHost::<Streamer>::new().with_kv_value_limit(4);
        host.task_kv("t").set("k", b"v").unwrap();
        assert_eq!(
            host.task_kv("t").set("k", b"too long"),
            Err(KvError::TooLarge(
                "the value is 8 bytes, over the limit of 4".into()
            ))
        );
        let (decision, seen) = host.with_task("t", |task| {
            (Streamer::decide(task, &[]), task.kv().get("k").unwrap())
        });
        assert_eq!(decision, Decision::reject("no text"));
        assert_eq!(seen, Some(b"v".to_vec()));
        let mut params = Map::new();
        params.insert("n".into(), json!(1));
        let n = host.with_task_params("t", params, |task| task.params()["n"].clone());
        assert_eq!(n, 1);
        assert_eq!(host.task_kv_entries("t").len(), 1);
    }

    #[test]
    fn timeouts_and_leader_commands() {
        struct Asker;
        impl Partner for Asker {
            fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
                if input.is_empty() {
                    Outcome::ask("more?")
                } else {
                    Outcome::Done(vec![Product::new(task.id()).with_items(input)])
                }
            }
            fn completed(task: &Task, reason: EndReason) {
                crate::log::info(&format!("completed {reason:?} in {:?}", task.state()));
            }
            fn canceled(_task: &Task, reason: EndReason) {
                crate::log::info(&format!("canceled {reason:?}"));
            }
        }
        let mut host = MockHost::<Asker>::new();
        let asked = host.start(vec![]).task_id;
        let done = host.start(vec![DataItem::text("x")]).task_id;
        let working = host.start(vec![]).task_id;
        assert_eq!(host.timeout(&asked).logs[0].message, "canceled Timeout");
        assert_eq!(
            host.timeout(&done).logs[0].message,
            "completed Timeout in Some(Completed)"
        );
        assert_eq!(host.cancel(&working).logs[0].message, "canceled Leader");
        assert_eq!(host.state(&asked), Some(State::Canceled));
        assert_eq!(host.state(&done), Some(State::Completed));
        assert_eq!(
            host.history(&working),
            [
                State::Accepted,
                State::Working,
                State::AwaitingInput,
                State::Canceled
            ]
        );
    }

    #[test]
    #[should_panic(expected = "a Leader cannot move task task-1 to working from rejected")]
    fn continuing_an_ended_task_is_a_mistake_in_the_test() {
        let mut host = MockHost::<Streamer>::new();
        let turn = host.start(vec![]);
        host.continue_(&turn.task_id, vec![]);
    }

    #[test]
    #[should_panic(expected = "task t exists already")]
    fn a_task_id_is_used_once() {
        let mut host = MockHost::<Streamer>::new();
        let start = || Start {
            task_id: Some("t".into()),
            ..Start::default()
        };
        host.start_with(vec![], start());
        host.start_with(vec![], start());
    }

    /// A task of `host` that is working, to make reports on directly.
    fn working(host: &MockHost<Streamer>, task_id: &str) {
        host.with_task(task_id, |task| {
            task.set_status(State::Accepted, vec![]).unwrap();
            task.set_status(State::Working, vec![]).unwrap();
        });
    }

    fn invalid(result: Result<(), ReportError>, wanted: &str) {
        match result {
            Err(ReportError::InvalidData(m)) => assert!(m.contains(wanted), "{m}"),
            other => panic!("expected invalid-data ({wanted}), got {other:?}"),
        }
    }

    #[test]
    fn streamed_text_is_checked_like_the_host_checks_it() {
        let host = MockHost::<Streamer>::new();
        host.with_task("t", |task| {
            assert!(matches!(
                task.say("x"),
                Err(ReportError::InvalidTransition(m)) if m.contains("new (not yet accepted)")
            ));
            task.set_status(State::Accepted, vec![]).unwrap();
            // The host moves an accepted task to working first.
            task.say("x").unwrap();
            assert_eq!(task.state(), Some(State::Working));
            invalid(task.stream_text("", Channel::Answer, "x", false), "1 to 256");
            let long = "p".repeat(257);
            invalid(task.stream_text(&long, Channel::Answer, "x", false), "1 to 256");
            invalid(task.stream_text("a\nb", Channel::Answer, "x", false), "control");
            let big = "x".repeat(64 * 1024 + 1);
            invalid(task.stream_text("p", Channel::Answer, &big, false), "over the limit");
            invalid(task.stream_text("p", Channel::Answer, "", false), "empty delta");
            // The channels of one product: each delta extends the last text of its channel.
            for (channel, text) in [
                (Channel::Reasoning, "r1"),
                (Channel::Reasoning, "r2"),
                (Channel::Answer, "a1"),
                (Channel::Reasoning, "r3"),
            ] {
                task.stream_text("mixed", channel, text, false).unwrap();
            }
            task.stream_text("mixed", Channel::Answer, "", true).unwrap();
            task.set_status(State::AwaitingInput, vec![]).unwrap();
            assert!(matches!(
                task.think("x"),
                Err(ReportError::InvalidTransition(m)) if m.contains("not while it is awaiting-input")
            ));
        });
        let mixed = host.products("t").into_iter().find(|p| p.id == "mixed");
        let texts: Vec<_> = mixed
            .expect("the mixed product")
            .data_items
            .iter()
            .filter_map(|i| i.as_text().map(str::to_owned))
            .collect();
        assert_eq!(texts, ["r1r2", "a1", "r3"]);
        assert_eq!(
            host.history("t"),
            [State::Accepted, State::Working, State::AwaitingInput]
        );
        host.set_state("t", Some(State::Canceled));
        host.with_task("t", |task| {
            assert_eq!(task.say("late"), Err(ReportError::TaskEnded));
        });
    }

    #[test]
    fn streamed_text_counts_against_max_products_bytes() {
        struct Talker;
        impl Partner for Talker {
            fn work(task: &mut Task, _input: Vec<DataItem>) -> Outcome {
                for word in ["four", "five!"] {
                    if let Err(e) = task.say(word) {
                        return e.into();
                    }
                }
                Outcome::Done(vec![])
            }
        }
        let mut host = MockHost::<Talker>::new();
        let start = Start {
            max_products_bytes: Some(8),
            ..Start::default()
        };
        let turn = host.start_with(vec![], start);
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::Failed));
        assert_eq!(
            turn.text(),
            "the products would reach 9 bytes, over maxProductsBytes of 8"
        );
        assert_eq!(turn.said(), "four");
    }

    #[test]
    fn tool_activity_and_usage_need_a_working_task_and_valid_json() {
        let host = MockHost::<Streamer>::new();
        host.with_task("t", |task| {
            task.set_status(State::Accepted, vec![]).unwrap();
            assert!(matches!(
                task.tool_call("c", "n", &json!({})),
                Err(ReportError::InvalidTransition(m)) if m.contains("not while it is accepted")
            ));
            assert!(matches!(
                task.usage(Usage::default()),
                Err(ReportError::InvalidTransition(_))
            ));
        });
        working(&host, "w");
        host.with_task("w", |task| {
            invalid(
                task.tool_call("c", "n", &json!([1])),
                "must be a JSON object",
            );
            invalid(task.tool_call("", "n", &json!({})), "call id");
            invalid(
                task.tool_call("c", &"n".repeat(129), &json!({})),
                "tool name",
            );
            let big = json!({"x": "y".repeat(64 * 1024)});
            invalid(task.tool_call("c", "n", &big), "tool arguments");
            let huge = ToolOutput::Text("z".repeat(256 * 1024 + 1));
            invalid(task.tool_result("c", huge, false), "tool output");
            task.tool_call("c", "n", &json!({"a": 1})).unwrap();
            task.tool_result("c", ToolOutput::Text("oops".into()), true)
                .unwrap();
        });
        // What a hostile component could send, and the SDK never does.
        let bound = host.bound("w");
        let not_json = wit::ToolCall {
            call_id: "c".into(),
            name: "n".into(),
            arguments: "{oops".into(),
        };
        assert!(matches!(
            bound.report_tool_call(&not_json),
            Err(wit::ReportError::InvalidData(m)) if m.contains("not valid JSON")
        ));
        let not_json = wit::ToolResult {
            call_id: "c".into(),
            output: wit::ToolOutput::Json("nope".into()),
            is_error: false,
        };
        assert!(matches!(
            bound.report_tool_result(&not_json),
            Err(wit::ReportError::InvalidData(m)) if m.contains("not valid JSON")
        ));
        let reports: Vec<String> = host.world.borrow().reports[3..]
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            reports,
            [
                r#"tool-call c n {"a":1}"#,
                "tool-result c error=true text:oops"
            ]
        );
    }

    #[test]
    fn forms_are_checked_like_the_host_checks_them() {
        let host = MockHost::<Streamer>::new();
        let object = || json!({"type": "object"});
        host.with_task("t", |task| {
            task.set_status(State::Accepted, vec![]).unwrap();
            assert!(matches!(
                task.ask(Form::new("f", "T", object())),
                Err(ReportError::InvalidTransition(_))
            ));
        });
        working(&host, "w");
        host.with_task("w", |task| {
            let mut ask = |form: Form| task.ask(form);
            invalid(ask(Form::new("", "T", object())), "request id");
            invalid(ask(Form::new("a b", "T", object())), "not ' '");
            invalid(ask(Form::new("f", "", object())), "title");
            let description = "d".repeat(4097);
            invalid(ask(Form::new("f", "T", object()).described(description)), "description");
            invalid(ask(Form::new("f", "T", json!({"type": "string"}))), "describe an object");
            invalid(ask(Form::new("f", "T", json!([]))), "must be a JSON object");
            let mut deep = json!({});
            for _ in 0..40 {
                deep = json!({"not": deep});
            }
            let deep = json!({"type": "object", "properties": {"x": deep}});
            invalid(ask(Form::new("f", "T", deep)), "nests deeper");
            let remote = json!({"type": "object", "$ref": "https://x/s.json"});
            invalid(ask(Form::new("f", "T", remote)), "not local");
            let big = json!({"type": "object", "description": "x".repeat(64 * 1024)});
            invalid(ask(Form::new("f", "T", big)), "form schema");
            let local = json!({"type": "object", "$defs": {"a": {}}, "properties": {"a": {"$ref": "#/$defs/a"}}});
            ask(Form::new("f.1_-", "T", local).with_item(DataItem::text("q")))
                .unwrap();
        });
        assert_eq!(host.state("w"), Some(State::AwaitingInput));
        let world = host.world.borrow();
        let task = &world.tasks["w"];
        assert_eq!(task.form.as_ref().unwrap().request_id, "f.1_-");
        assert_eq!(task.status_items, [DataItem::text("q")]);
    }

    #[test]
    fn failures_are_checked_like_the_host_checks_them() {
        let host = MockHost::<Streamer>::new();
        working(&host, "w");
        host.with_task("w", |task| {
            invalid(task.fail(Failure::new("", "m")), "failure code");
            invalid(task.fail(Failure::new("lower", "m")), "not 'l'");
            invalid(task.fail(Failure::new("X".repeat(65), "m")), "failure code");
            invalid(
                task.fail(Failure::new("X", "m".repeat(4097))),
                "failure message",
            );
            let detail = json!({"d": "x".repeat(16 * 1024)});
            invalid(
                task.fail(Failure::new("X", "m").with_detail(detail)),
                "failure detail",
            );
            task.fail(Failure::new("E_1", "boom")).unwrap();
            assert_eq!(task.say("after"), Err(ReportError::TaskEnded));
        });
        assert_eq!(host.state("w"), Some(State::Failed));
    }

    #[test]
    fn a_reply_only_answers_a_start() {
        let host = MockHost::<Streamer>::new();
        working(&host, "w");
        host.with_task("w", |task| {
            assert!(matches!(
                task.reply(vec![DataItem::text("late")]),
                Err(ReportError::InvalidTransition(m)) if m.contains("answers a start")
            ));
        });
        host.with_task("r", |task| {
            task.reply(vec![DataItem::text("hi")]).unwrap();
            // Afterwards there is no task to report on.
            assert_eq!(
                task.set_status(State::Accepted, vec![]),
                Err(ReportError::TaskEnded)
            );
            assert_eq!(task.say("x"), Err(ReportError::TaskEnded));
            assert_eq!(
                task.reply(vec![DataItem::text("again")]),
                Err(ReportError::TaskEnded)
            );
        });
        assert_eq!(host.task_ids().into_iter().collect::<Vec<_>>(), ["w"]);
    }

    #[test]
    #[should_panic(expected = "task t is not awaiting an answer to a form")]
    fn answering_a_form_that_was_not_asked_is_a_mistake_in_the_test() {
        let mut host = MockHost::<Streamer>::new();
        host.with_task("t", |task| {
            task.set_status(State::Accepted, vec![]).unwrap();
            task.set_status(State::Working, vec![]).unwrap();
            task.set_status(State::AwaitingInput, vec![]).unwrap();
        });
        host.answer_form("t", json!({}));
    }
}
