//! The durable record of one task: the task itself plus what the host needs to run it (the wire
//! form of its notices, its limits, the pending deadline, the bytes its products hold).

use super::history::{self, CommandLog, HistoryLimits, HistoryWrites, UnreadableEntry};
use aiphost_model::activity;
use aiphost_model::{
    DataItem, InvalidField, JsonObject, LeaderCommand, ProductChunk, Task, TaskState, TaskStatus,
    WireForm,
};
use aiphost_net_policy::TargetPolicy;
use aiphost_store::{Encoded, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Host-wide defaults and caps for task limits; a Leader's `commandParams` override the defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskDefaults {
    /// How long a start or continue waits for the partner to rest before replying.
    pub response_timeout_ms: u64,
    /// How long a task waits in awaiting-input before it is canceled.
    pub awaiting_input_timeout_ms: u64,
    /// How long a task waits in awaiting-completion before it is completed.
    pub awaiting_completion_timeout_ms: u64,
    /// The most product bytes one task may hold, whatever the Leader asks.
    pub max_products_bytes: u64,
    /// The most events kept per task (older ones are dropped; a re-stream needing them fails).
    pub event_retention_count: u64,
    /// How long the events of an ended task are kept, in ms.
    pub event_retention_ms: u64,
    /// How long an ended task is kept at all, in ms (`None`: for ever); then it is deleted with
    /// everything kept for it, and a `get` answers as for a task never started.
    pub task_retention_ms: Option<u64>,
    /// What a task keeps of its commands and statuses.
    pub history: HistoryLimits,
    /// Tasks that have not ended that one Leader may have with one partner (all Leaders of an
    /// open partner share one count): bounds what a client can make a host store.
    pub max_live_tasks: u64,
    /// Invocations of one partner that run at once; more wait their turn (see
    /// [`super::shares`]).
    pub max_invocations_per_partner: u32,
    /// Where a notification config may point (the operator's `--webhook-allow-private`):
    /// checked when a config is made, whatever door it came through.
    pub webhook_targets: TargetPolicy,
    /// Activity events (text deltas, tool calls and results, usage) one task may have. A task
    /// gets at most half the event retention too, so its statuses and its activity can always be
    /// replayed ([`TaskDefaults::activity_events_cap`]).
    pub max_activity_events: u64,
    /// Bytes of tool arguments, tool outputs and usage one task may report (delta text counts
    /// against its products instead).
    pub max_activity_bytes: u64,
}

impl TaskDefaults {
    /// The activity events a task may have: [`TaskDefaults::max_activity_events`], within half
    /// the event retention (a task whose activity outgrew its retention could not be replayed).
    pub fn activity_events_cap(&self) -> u64 {
        self.max_activity_events
            .min(self.event_retention_count / 2)
            .max(1)
    }
}

impl Default for TaskDefaults {
    fn default() -> Self {
        TaskDefaults {
            response_timeout_ms: 25_000,
            awaiting_input_timeout_ms: 3_600_000,
            awaiting_completion_timeout_ms: 3_600_000,
            max_products_bytes: 16 * 1024 * 1024,
            event_retention_count: 10_000,
            event_retention_ms: 24 * 3_600_000,
            task_retention_ms: Some(7 * 24 * 3_600_000),
            history: HistoryLimits::default(),
            max_live_tasks: 10_000,
            max_invocations_per_partner: 8,
            webhook_targets: TargetPolicy::default(),
            max_activity_events: 4096,
            max_activity_bytes: 1024 * 1024,
        }
    }
}

/// The limits of one task, fixed at its start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskLimits {
    /// How long a start or continue waits for the partner to rest before replying, in ms.
    pub response_timeout_ms: u64,
    /// How long the task may wait in awaiting-input before it is canceled, in ms.
    pub awaiting_input_timeout_ms: u64,
    /// How long the task may wait in awaiting-completion before it is completed, in ms.
    pub awaiting_completion_timeout_ms: u64,
    /// What the Leader asked for (told to the partner), if anything.
    pub leader_max_products_bytes: Option<u64>,
    /// What the host enforces: the Leader's value capped by the host's.
    pub max_products_bytes: u64,
}

/// The longest `responseTimeout` a Leader may ask for.
const MAX_RESPONSE_TIMEOUT_MS: u64 = 600_000;
/// The longest awaiting timeout a Leader may ask for (30 days).
pub const MAX_AWAITING_TIMEOUT_MS: u64 = 30 * 24 * 3_600_000;

impl TaskLimits {
    /// Read a start command's `commandParams` (v1 names, and v2's `timeout` for the response).
    pub fn from_params(params: &JsonObject, defaults: &TaskDefaults) -> Result<Self, InvalidField> {
        let read = |names: &[&str], max: u64| -> Result<Option<u64>, InvalidField> {
            for name in names {
                match params.get(*name) {
                    None | Some(Value::Null) => continue,
                    Some(v) => {
                        let field = format!("commandParams.{name}");
                        let n = v.as_u64().ok_or_else(|| {
                            InvalidField::new(
                                &field,
                                "must be a non-negative whole number of milliseconds or bytes",
                            )
                        })?;
                        if n > max {
                            return Err(InvalidField::new(
                                &field,
                                format!("is {n}; at most {max} is allowed"),
                            ));
                        }
                        return Ok(Some(n));
                    }
                }
            }
            Ok(None)
        };
        let leader_max = read(&["maxProductsBytes"], u64::MAX)?;
        Ok(TaskLimits {
            response_timeout_ms: read(&["responseTimeout", "timeout"], MAX_RESPONSE_TIMEOUT_MS)?
                .unwrap_or(defaults.response_timeout_ms),
            awaiting_input_timeout_ms: read(&["awaitingInputTimeout"], MAX_AWAITING_TIMEOUT_MS)?
                .unwrap_or(defaults.awaiting_input_timeout_ms),
            awaiting_completion_timeout_ms: read(
                &["awaitingCompletionTimeout"],
                MAX_AWAITING_TIMEOUT_MS,
            )?
            .unwrap_or(defaults.awaiting_completion_timeout_ms),
            leader_max_products_bytes: leader_max,
            max_products_bytes: leader_max.map_or(defaults.max_products_bytes, |m| {
                m.min(defaults.max_products_bytes)
            }),
        })
    }
}

/// Activity a task's partner reported: events and bytes, each capped by [`TaskDefaults`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActivityUse {
    /// Text deltas, tool calls, tool results and usage reports.
    pub events: u64,
    /// Bytes of tool arguments, tool outputs and usage.
    pub bytes: u64,
}

impl ActivityUse {
    fn is_none(&self) -> bool {
        self.events == 0 && self.bytes == 0
    }
}

/// What is stored for each task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The task as Leaders see it (products without their DataItems, and only the creating
    /// command, in the stored form: see [`TaskRecord::encoded`]).
    pub task: Task,
    /// The wire form the door that started the task chose for what is said of it later, unasked
    /// (AIP: its Leader's dialect); stored as `dialect`, as when it was AIP's dialect itself.
    #[serde(rename = "dialect", default, skip_serializing_if = "Option::is_none")]
    pub form: Option<WireForm>,
    /// Its limits, fixed at its start.
    pub limits: TaskLimits,
    /// When the current awaiting state times out (Unix ms), if it is one.
    #[serde(default)]
    pub deadline_ms: Option<i64>,
    /// The content bytes its products hold now (kept within `limits.max_products_bytes`).
    #[serde(default)]
    pub products_bytes: u64,
    /// The seq of the task's newest event (0: none yet).
    #[serde(default)]
    pub last_event_seq: u64,
    /// Where its status changes are notified (a task started with `notification/start`).
    #[serde(default)]
    pub notify: Option<aiphost_model::notification::Subscription>,
    /// More configs its status changes go to: A2A push notification configs made for it while
    /// it lived (no more than the task may have configs, as those gone are dropped when one is
    /// added).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub push: Vec<aiphost_model::notification::Subscription>,
    /// The group membership its results are published to (a task started from a group).
    #[serde(default)]
    pub group: Option<String>,
    /// The published version of the partner it runs on (0: an operator's bundle).
    #[serde(default)]
    pub agent_version: u64,
    /// The index the next command's history entry gets. 0 with commands in `task.commands`: a
    /// record stored before commands had entries of their own.
    #[serde(default)]
    pub next_command: u64,
    /// What its partner has spent of its activity budget (contract 0.2.0 reports).
    #[serde(default, skip_serializing_if = "ActivityUse::is_none")]
    pub activity: ActivityUse,
    /// The bookkeeping of `task.commands` (rebuilt from the entries on load).
    #[serde(skip)]
    log: CommandLog,
    /// Loaded in the older form (every command inline): the record itself must be written
    /// again with the entries that take its commands out, not the entries alone.
    #[serde(skip)]
    adopted: bool,
}

impl TaskRecord {
    /// Every config its status changes are notified to.
    pub fn subscriptions(
        &self,
    ) -> impl Iterator<Item = &aiphost_model::notification::Subscription> {
        self.notify.iter().chain(&self.push)
    }

    /// A new task, decided by its partner: `status` is accepted or rejected.
    pub fn new(
        start: LeaderCommand,
        task_id: String,
        form: Option<WireForm>,
        limits: TaskLimits,
        status: TaskStatus,
        history: &HistoryLimits,
    ) -> Self {
        let task = Task {
            id: task_id,
            session_id: start.session_id.clone(),
            leader_id: (!start.sender_id.is_empty()).then(|| start.sender_id.clone()),
            group_id: start.group_id.clone(),
            status: status.clone(),
            products: Vec::new(),
            commands: Vec::new(),
            status_history: vec![status],
            completes_on_result: false,
            plain_reply: false,
        };
        let mut record = TaskRecord::fresh(task, form, limits, 0);
        record.record_command(start, false, history);
        record
    }

    /// A record of `task` as it comes into being: no deadline, products, events or configs yet.
    fn fresh(task: Task, form: Option<WireForm>, limits: TaskLimits, agent_version: u64) -> Self {
        TaskRecord {
            task,
            form,
            limits,
            deadline_ms: None,
            products_bytes: 0,
            last_event_seq: 0,
            notify: None,
            push: Vec::new(),
            group: None,
            agent_version,
            next_command: 0,
            activity: ActivityUse::default(),
            log: CommandLog::default(),
            adopted: false,
        }
    }

    /// The record that takes the place of one that could not be read (see
    /// `engine/slots.rs`): the task, failed now with `reason`, and nothing else of it (its
    /// session, commands and products are in the bytes set aside).
    /// `agent_version`: the partner's version serving now (commands to the task are answered
    /// on it).
    pub fn failed_unreadable(
        task_id: &str,
        leader: Option<&str>,
        agent_version: u64,
        reason: String,
    ) -> Self {
        let defaults = TaskDefaults::default();
        let status = TaskStatus::now(TaskState::Failed, vec![DataItem::text(reason)]);
        let task = Task {
            id: task_id.to_string(),
            session_id: None,
            leader_id: leader.map(str::to_string),
            group_id: None,
            status: status.clone(),
            products: Vec::new(),
            commands: Vec::new(),
            status_history: vec![status],
            completes_on_result: false,
            plain_reply: false,
        };
        let limits = TaskLimits {
            response_timeout_ms: defaults.response_timeout_ms,
            awaiting_input_timeout_ms: defaults.awaiting_input_timeout_ms,
            awaiting_completion_timeout_ms: defaults.awaiting_completion_timeout_ms,
            leader_max_products_bytes: None,
            max_products_bytes: defaults.max_products_bytes,
        };
        TaskRecord::fresh(task, None, limits, agent_version)
    }

    /// The task's current state.
    pub fn state(&self) -> TaskState {
        self.task.status.state
    }

    /// Enter `state` now, recording it in the history (which keeps at most `max_statuses`) and
    /// setting or clearing the deadline.
    pub fn enter(&mut self, state: TaskState, data_items: Vec<DataItem>, max_statuses: usize) {
        let status = TaskStatus::now(state, data_items);
        let now = status.state_changed_at;
        self.deadline_ms = match state {
            TaskState::AwaitingInput => Some(
                now.plus_millis(self.limits.awaiting_input_timeout_ms)
                    .unix_millis(),
            ),
            TaskState::AwaitingCompletion => Some(
                now.plus_millis(self.limits.awaiting_completion_timeout_ms)
                    .unix_millis(),
            ),
            _ => None,
        };
        history::record_status(&mut self.task.status_history, status.clone(), max_statuses);
        self.task.status = status;
    }

    /// Add a Leader command to the history; `unchanging`: it changed nothing (a get, or a
    /// command ignored in the task's state). The history stays within `limits`, the oldest
    /// entries dropped first (see [`super::history`]).
    pub fn record_command(
        &mut self,
        command: LeaderCommand,
        unchanging: bool,
        limits: &HistoryLimits,
    ) {
        self.log.record(
            &mut self.task.commands,
            &mut self.next_command,
            command,
            unchanging,
            limits,
        );
    }

    /// Whether history entries wait to be written.
    pub fn has_history_writes(&self) -> bool {
        self.log.has_writes() || self.adopted
    }

    /// Whether the record itself must be written with its next history entries (it was loaded
    /// in the older form, with every command inline).
    pub fn must_rewrite(&self) -> bool {
        self.adopted
    }

    /// The history entries the next write must store and delete.
    pub fn take_history_writes(&mut self) -> HistoryWrites {
        self.log.take_writes()
    }

    /// Refill the commands of a loaded record from its stored history entries (`(index,
    /// entry)` in order). A record stored with its commands inline keeps them, and they move to
    /// entries of their own with its next write.
    pub fn restore_history(&mut self, entries: Vec<(u64, Encoded)>) -> Result<(), UnreadableEntry> {
        if self.next_command == 0 && !self.task.commands.is_empty() {
            let (log, next) = CommandLog::adopt_inline(&self.task.commands);
            self.log = log;
            self.next_command = next;
            self.adopted = true;
            return Ok(());
        }
        let start = self.task.commands.first().cloned();
        let (log, commands) = CommandLog::restore(start, entries)?;
        // A command that changed nothing is stored without the record, whose count it passed.
        self.next_command = self.next_command.max(log.next_index());
        self.log = log;
        self.task.commands = commands;
        Ok(())
    }

    /// The record as stored: products keep their id, name and description; their DataItems are
    /// stored chunk by chunk beside it (so appending a chunk does not rewrite the product), and
    /// of the commands only the creating `start` is kept in it, the later ones being history
    /// entries of their own (so a command does not rewrite the ones before it).
    pub fn encoded(&mut self) -> Result<Encoded, StoreError> {
        let items: Vec<Vec<DataItem>> = self
            .task
            .products
            .iter_mut()
            .map(|p| std::mem::take(&mut p.data_items))
            .collect();
        let later = self
            .task
            .commands
            .split_off(self.task.commands.len().min(1));
        let bytes = Encoded::of(self);
        self.task.commands.extend(later);
        self.adopted = false;
        for (product, items) in self.task.products.iter_mut().zip(items) {
            product.data_items = items;
        }
        bytes
    }

    /// Refill the products of a loaded record from their stored chunks.
    pub fn restore_products<E>(
        &mut self,
        mut chunks_of: impl FnMut(&str) -> Result<Vec<Vec<DataItem>>, E>,
    ) -> Result<(), E> {
        for product in &mut self.task.products {
            // Text deltas were stored a chunk each; they merge back as `apply_chunk` merged them.
            product.data_items =
                activity::merge_text(chunks_of(&product.id)?.into_iter().flatten());
        }
        Ok(())
    }

    /// Apply a product chunk, unless the products would then exceed the task's limit; the error
    /// carries the total they would have reached.
    pub fn apply_chunk(&mut self, chunk: ProductChunk) -> Result<(), u64> {
        let products = &mut self.task.products;
        let existing = products.iter().position(|p| p.id == chunk.product.id);
        let added = chunk.product.content_bytes();
        // An appended chunk adds its bytes; only a replacing one needs the old product's
        // counted, which would otherwise walk every item of a product streamed in thousands of
        // chunks, once per chunk.
        let replaced = existing.filter(|_| !chunk.append);
        let total = match replaced {
            Some(i) => {
                self.products_bytes
                    .saturating_sub(products[i].content_bytes())
                    + added
            }
            None => self.products_bytes + added,
        };
        if total > self.limits.max_products_bytes {
            return Err(total);
        }
        match existing {
            Some(i) if chunk.append => {
                let p = &mut products[i];
                for item in chunk.product.data_items {
                    activity::push_merged(&mut p.data_items, item);
                }
                if chunk.product.name.is_some() {
                    p.name = chunk.product.name;
                }
                if chunk.product.description.is_some() {
                    p.description = chunk.product.description;
                }
            }
            Some(i) => products[i] = chunk.product,
            None => products.push(chunk.product),
        }
        self.products_bytes = total;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::{CommandKind, Product, Timestamp};
    use serde_json::json;

    fn start() -> LeaderCommand {
        LeaderCommand {
            id: "m1".into(),
            sent_at: Timestamp::now(),
            sender_id: "leader".into(),
            command: CommandKind::Start,
            params: Default::default(),
            data_items: vec![],
            task_id: Some("t".into()),
            session_id: Some("s".into()),
            group_id: None,
            mentions: None,
        }
    }

    fn record(max: u64) -> TaskRecord {
        let defaults = TaskDefaults {
            max_products_bytes: max,
            ..Default::default()
        };
        let limits = TaskLimits::from_params(&Default::default(), &defaults).unwrap();
        TaskRecord::new(
            start(),
            "t".into(),
            Some(WireForm::new("v1")),
            limits,
            TaskStatus::now(TaskState::Accepted, vec![]),
            &HistoryLimits::default(),
        )
    }

    fn chunk(id: &str, text: &str, append: bool) -> ProductChunk {
        ProductChunk {
            product: Product {
                id: id.into(),
                name: None,
                description: None,
                data_items: vec![DataItem::text(text)],
            },
            append,
            last_chunk: false,
        }
    }

    #[test]
    fn activity_stays_within_half_the_event_retention() {
        let mut defaults = TaskDefaults::default();
        assert_eq!(defaults.activity_events_cap(), 4096);
        defaults.event_retention_count = 5000;
        assert_eq!(defaults.activity_events_cap(), 2500);
        defaults.event_retention_count = 1;
        assert_eq!(defaults.activity_events_cap(), 1);
    }

    #[test]
    fn delta_chunks_merge_alike_live_and_restored() {
        use aiphost_model::activity::{Channel, TextDelta};
        let mut live = record(1 << 20);
        let deltas: Vec<ProductChunk> = ["Hel", "lo", ""]
            .iter()
            .map(|t| {
                TextDelta {
                    product_id: "answer".into(),
                    channel: Channel::Answer,
                    text: (*t).into(),
                    last: t.is_empty(),
                }
                .into_chunk()
            })
            .collect();
        for chunk in &deltas {
            live.apply_chunk(chunk.clone()).unwrap();
        }
        let product = &live.task.products[0];
        assert_eq!(product.data_items.len(), 1);
        assert_eq!(product.content_bytes(), 5);
        // Restored from its stored chunks (one row per delta), the product reads the same.
        let mut restored = live.clone();
        restored
            .restore_products(|_| {
                Ok::<_, ()>(
                    deltas
                        .iter()
                        .map(|c| c.product.data_items.clone())
                        .collect(),
                )
            })
            .unwrap();
        assert_eq!(restored.task.products, live.task.products);
    }

    #[test]
    fn limits_from_either_dialect() {
        let d = TaskDefaults::default();
        let p = json!({"responseTimeout": 10, "awaitingInputTimeout": 20, "awaitingCompletionTimeout": 30, "maxProductsBytes": 40});
        let l = TaskLimits::from_params(p.as_object().unwrap(), &d).unwrap();
        assert_eq!(
            (
                l.response_timeout_ms,
                l.awaiting_input_timeout_ms,
                l.awaiting_completion_timeout_ms
            ),
            (10, 20, 30)
        );
        assert_eq!(
            (l.leader_max_products_bytes, l.max_products_bytes),
            (Some(40), 40)
        );
        let v2 = TaskLimits::from_params(json!({"timeout": 99}).as_object().unwrap(), &d).unwrap();
        assert_eq!(v2.response_timeout_ms, 99);
        let capped = TaskLimits::from_params(
            json!({"maxProductsBytes": u64::MAX}).as_object().unwrap(),
            &d,
        )
        .unwrap();
        assert_eq!(capped.max_products_bytes, d.max_products_bytes);
        let err =
            TaskLimits::from_params(json!({"awaitingInputTimeout": -1}).as_object().unwrap(), &d)
                .unwrap_err();
        assert_eq!(err.field, "commandParams.awaitingInputTimeout");
        let err =
            TaskLimits::from_params(json!({"responseTimeout": "soon"}).as_object().unwrap(), &d)
                .unwrap_err();
        assert_eq!(err.field, "commandParams.responseTimeout");
    }

    #[test]
    fn deadlines_follow_awaiting_states() {
        let mut r = record(100);
        r.enter(TaskState::Working, vec![], 10);
        assert_eq!(r.deadline_ms, None);
        r.enter(TaskState::AwaitingInput, vec![], 10);
        let at = r.deadline_ms.unwrap();
        assert!(at >= Timestamp::now().unix_millis() + 3_500_000);
        r.enter(TaskState::Working, vec![], 10);
        assert_eq!(r.deadline_ms, None);
        assert_eq!(r.task.status_history.len(), 4);
    }

    #[test]
    fn stored_form_keeps_product_headers_only_and_restores() {
        let mut r = record(100);
        r.apply_chunk(chunk("a", "12", false)).unwrap();
        r.apply_chunk(chunk("a", "34", true)).unwrap();
        let stored: serde_json::Value = r.encoded().unwrap().decode().unwrap();
        assert_eq!(stored["task"]["products"][0]["id"], "a");
        assert_eq!(stored["task"]["products"][0]["dataItems"], json!([]));
        assert_eq!(
            r.task.products[0].data_items.len(),
            2,
            "the record in memory keeps its items"
        );
        let mut loaded: TaskRecord = serde_json::from_value(stored).unwrap();
        loaded
            .restore_products(|id| {
                assert_eq!(id, "a");
                Ok::<_, ()>(vec![vec![DataItem::text("12")], vec![DataItem::text("34")]])
            })
            .unwrap();
        assert_eq!(loaded.task.products, r.task.products);
        assert_eq!(loaded.products_bytes, 4);
    }

    #[test]
    fn polling_gets_do_not_grow_the_history_without_bound() {
        let mut r = record(10);
        let limits = HistoryLimits::default();
        for i in 0..100 {
            let mut get = start();
            get.command = CommandKind::Get;
            get.id = format!("get-{i}");
            r.record_command(get, true, &limits);
        }
        let mut cont = start();
        cont.command = CommandKind::Continue;
        r.record_command(cont, false, &limits);
        let kinds: Vec<_> = r.task.commands.iter().map(|c| c.command).collect();
        assert_eq!(kinds.len(), 1 + limits.max_unchanging + 1);
        assert_eq!(kinds[0], CommandKind::Start, "the start is never dropped");
        assert_eq!(
            r.task.commands[1].id,
            format!("get-{}", 100 - limits.max_unchanging)
        );
        assert_eq!(kinds.last(), Some(&CommandKind::Continue));
    }

    /// The creating start is stored in the record; later commands as entries of their own, and
    /// a loaded record gets them back from the entries (or, stored inline by an older host,
    /// keeps them and moves all but the start out with its next write).
    #[test]
    fn commands_after_the_start_are_stored_beside_the_record() {
        let mut r = record(10);
        let mut get = start();
        get.command = CommandKind::Get;
        get.id = "g".into();
        r.record_command(get, true, &HistoryLimits::default());
        let stored: serde_json::Value = r.encoded().unwrap().decode().unwrap();
        assert_eq!(stored["task"]["commands"].as_array().unwrap().len(), 1);
        assert_eq!(stored["task"]["commands"][0]["command"], "start");
        assert_eq!(stored["next_command"], 2);
        assert_eq!(
            r.task.commands.len(),
            2,
            "the record in memory keeps them all"
        );
        let writes = r.take_history_writes();
        assert_eq!(writes.put.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1]);
        let mut loaded: TaskRecord = serde_json::from_value(stored.clone()).unwrap();
        loaded.restore_history(writes.put).unwrap();
        assert_eq!(loaded.task.commands, r.task.commands);
        assert!(!loaded.has_history_writes());

        let mut inline = stored;
        inline["task"]["commands"] = serde_json::to_value(&r.task.commands).unwrap();
        inline.as_object_mut().unwrap().remove("next_command");
        let mut old: TaskRecord = serde_json::from_value(inline).unwrap();
        old.restore_history(Vec::new()).unwrap();
        assert_eq!(old.task.commands, r.task.commands);
        assert!(
            old.must_rewrite(),
            "an adopted record is written again, not its entries alone"
        );
        assert_eq!(old.take_history_writes().put.len(), 1);
        old.encoded().unwrap();
        assert!(!old.must_rewrite() && !old.has_history_writes());
    }

    #[test]
    fn chunks_append_replace_and_respect_the_limit() {
        let mut r = record(10);
        r.apply_chunk(chunk("a", "1234", true)).unwrap();
        r.apply_chunk(chunk("a", "56", true)).unwrap();
        assert_eq!(r.products_bytes, 6);
        assert_eq!(r.task.products[0].data_items.len(), 2);
        r.apply_chunk(chunk("a", "xy", false)).unwrap();
        assert_eq!(r.products_bytes, 2);
        assert_eq!(r.task.products[0].data_items.len(), 1);
        r.apply_chunk(chunk("b", "12345678", false)).unwrap();
        assert_eq!(r.apply_chunk(chunk("b", "x", true)), Err(11));
        assert_eq!(r.products_bytes, 10, "a refused chunk changes nothing");
    }

    /// The running count (an appended chunk only adds to it) is what the products hold, after
    /// many appends, replaces of another product and of the long one, and refusals.
    #[test]
    fn the_products_byte_count_follows_appends_and_replaces() {
        let mut r = record(100_000);
        for n in 0..5000 {
            r.apply_chunk(chunk("long", "0123456789", n > 0)).unwrap();
            if n % 1000 == 0 {
                r.apply_chunk(chunk("short", &"x".repeat(n / 100), false))
                    .unwrap();
            }
        }
        assert!(
            r.apply_chunk(chunk("long", &"y".repeat(60_000), true))
                .is_err()
        );
        let held =
            |r: &TaskRecord| -> u64 { r.task.products.iter().map(Product::content_bytes).sum() };
        assert_eq!(r.products_bytes, held(&r));
        assert_eq!(r.products_bytes, 50_000 + 40);
        r.apply_chunk(chunk("long", "z", false)).unwrap();
        assert_eq!(r.products_bytes, held(&r));
        assert_eq!(r.products_bytes, 1 + 40);
    }
}
