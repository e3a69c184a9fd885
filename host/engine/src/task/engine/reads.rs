//! Reads that change nothing and record nothing: a task as it durably is, a subscription to its
//! events from that point on, and a page of a Leader's tasks, most recently changed first.
//! (AIP's `get` is a command and goes into the task's history; these are for doors whose
//! protocols read without a command.)

use super::{EngineError, Reply, TaskEngine};
use crate::agent::Agent;
use crate::task::feed::EventFeed;
use crate::task::record::TaskRecord;
use aiphost_protocol::dialect::check_task_id;
use aiphost_protocol::{ErrorCode, RpcError, Task, TaskState};
use aiphost_store::TaskKey;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The most tasks one page holds, whatever is asked.
pub const MAX_PAGE_SIZE: usize = 100;

/// Which of a Leader's tasks to list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskQuery {
    /// Only tasks of this session.
    pub session_id: Option<String>,
    /// Only tasks in one of these states (`None`: any).
    pub states: Option<Vec<TaskState>>,
    /// Only tasks whose status changed after this instant (Unix ms).
    pub changed_after_ms: Option<i64>,
    /// At most this many (capped at [`MAX_PAGE_SIZE`]).
    pub page_size: usize,
    /// Continue after this task of an earlier page.
    pub after: Option<PagePosition>,
}

/// Where a page ended: the listing's order is by status change, newest first, then task id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagePosition {
    /// When the status of the page's last task changed (Unix ms).
    pub changed_ms: i64,
    /// Its id.
    pub task_id: String,
}

impl PagePosition {
    fn of(task: &Task) -> Self {
        PagePosition {
            changed_ms: task.status.state_changed_at.unix_millis(),
            task_id: task.id.clone(),
        }
    }
}

impl Ord for PagePosition {
    /// Listing order: the newer change first, then the smaller id.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .changed_ms
            .cmp(&self.changed_ms)
            .then_with(|| self.task_id.cmp(&other.task_id))
    }
}

impl PartialOrd for PagePosition {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One page of a listing.
#[derive(Clone, Debug)]
pub struct TaskPage {
    /// The tasks, as durably stored, in listing order.
    pub tasks: Vec<Task>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<PagePosition>,
    /// How many tasks match the query, over all pages.
    pub total: u64,
}

impl TaskQuery {
    /// Whether `task` is one this query asks for (wherever the page starts).
    fn matches(&self, task: &Task) -> bool {
        self.session_id
            .as_ref()
            .is_none_or(|s| task.session_id.as_ref() == Some(s))
            && self
                .states
                .as_ref()
                .is_none_or(|s| s.contains(&task.status.state))
            && self
                .changed_after_ms
                .is_none_or(|after| task.status.state_changed_at.unix_millis() > after)
    }
}

impl TaskEngine {
    /// The key of task `task_id` of `agent` in `owner`'s namespace, the id checked.
    fn key_of(agent: &Agent, owner: Option<&str>, task_id: &str) -> Result<TaskKey, RpcError> {
        check_task_id(task_id, "id")?;
        Ok(TaskKey::owned(agent.id(), owner, task_id))
    }

    /// Task `task_id` of `agent` in `owner`'s namespace, as it durably is. Nothing is recorded.
    pub async fn read(
        &self,
        agent: &Agent,
        owner: Option<&str>,
        task_id: &str,
    ) -> Result<Reply, EngineError> {
        let key = Self::key_of(agent, owner, task_id)?;
        let slot = self.hold(&key);
        let mut st = slot.state.lock().await;
        self.ensure_loaded(&slot, &mut st).await?;
        if st.record.is_none() {
            return Err(RpcError::task_not_found(task_id).into());
        }
        self.durable_reply(&slot, st, None).await
    }

    /// Task `task_id` as it durably is, and a feed of its events after it: nothing that happens
    /// to the task in between is missed. Nothing is recorded.
    pub async fn subscribe(
        &self,
        agent: &Agent,
        owner: Option<&str>,
        task_id: &str,
    ) -> Result<(Reply, EventFeed), EngineError> {
        let key = Self::key_of(agent, owner, task_id)?;
        // Follow before reading, so no event slips between the snapshot and the feed.
        let follow = self.inner.watermarks.follow(&key);
        let slot = self.hold(&key);
        let mut st = slot.state.lock().await;
        self.ensure_loaded(&slot, &mut st).await?;
        let Some(record) = &st.record else {
            return Err(RpcError::task_not_found(task_id).into());
        };
        let ids = (record.task.session_id.clone(), record.task.group_id.clone());
        let ended = record.state().is_terminal();
        let completes = record.task.completes_on_result;
        let reply = self.durable_reply(&slot, st, None).await?;
        let feed = EventFeed::new(
            key,
            ids,
            self.inner.store.clone(),
            follow,
            reply.seq,
            reply.seq,
            ended,
        )
        .completing_on_result(completes);
        Ok((reply, feed))
    }

    /// A page of `agent`'s tasks in `owner`'s namespace that match `query`, most recently
    /// changed first. Every stored task of the namespace is looked at (there is no index by
    /// time); memory holds one page.
    pub async fn list(
        &self,
        agent: &Agent,
        owner: Option<&str>,
        query: &TaskQuery,
    ) -> Result<TaskPage, EngineError> {
        let size = query.page_size.clamp(1, MAX_PAGE_SIZE);
        // The `size + 1` first positions after the cursor: a max-heap whose top is the last.
        let mut best: BinaryHeap<PagePosition> = BinaryHeap::with_capacity(size + 2);
        let mut total = 0u64;
        let mut unreadable = Vec::new();
        let mut consider = |task: &Task| {
            if !query.matches(task) {
                return;
            }
            total += 1;
            let position = PagePosition::of(task);
            if query.after.as_ref().is_some_and(|after| &position <= after) {
                return;
            }
            best.push(position);
            if best.len() > size + 1 {
                best.pop();
            }
        };
        for entry in self.inner.store.task_records(agent.id(), owner) {
            let (key, encoded) = entry?;
            match encoded.decode::<TaskRecord>() {
                Ok(record) => consider(&record.task),
                Err(_) => unreadable.push(key),
            }
        }
        // Met unreadable: set aside (failed) now, and listed as such.
        for key in unreadable {
            let slot = self.hold(&key);
            let mut st = slot.state.lock().await;
            self.ensure_loaded(&slot, &mut st).await?;
            if let Some(record) = &st.record {
                consider(&record.task);
            }
        }
        let mut positions = best.into_sorted_vec();
        let more = positions.len() > size;
        positions.truncate(size);
        let mut tasks = Vec::with_capacity(positions.len());
        for position in &positions {
            // The task as it is now (it may have changed, or gone, since the scan).
            match self.read(agent, owner, &position.task_id).await {
                Ok(reply) => tasks.push(reply.task),
                Err(EngineError::Rpc(e)) if e.code == ErrorCode::TaskNotFound.code() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(TaskPage {
            tasks,
            next: if more { positions.pop() } else { None },
            total,
        })
    }
}
