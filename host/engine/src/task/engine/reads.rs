//! Reads that change nothing and record nothing: a task as it durably is, a subscription to its
//! events from that point on, a page of a Leader's tasks, most recently changed first, and the
//! newest task of a session.
//! (AIP's `get` is a command and goes into the task's history; these are for doors whose
//! protocols read without a command.)

use super::{EngineError, Reply, TaskEngine};
use crate::agent::Agent;
use crate::task::feed::EventFeed;
use crate::task::record::TaskRecord;
use aiphost_model::check_task_id;
use aiphost_model::{Task, TaskState};
use aiphost_store::{ListQuery, Listing, TaskKey};

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

    /// Listing order: the newer change first, then the smaller id.
    fn order(a: &Self, b: &Self) -> std::cmp::Ordering {
        b.changed_ms
            .cmp(&a.changed_ms)
            .then_with(|| a.task_id.cmp(&b.task_id))
    }

    /// Whether `self` comes after `other` in listing order.
    fn follows(&self, other: &Self) -> bool {
        Self::order(self, other) == std::cmp::Ordering::Greater
    }
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

impl TaskEngine {
    /// The key of task `task_id` of `agent` in `owner`'s namespace, the id checked.
    pub(super) fn key_of(
        agent: &Agent,
        owner: Option<&str>,
        task_id: &str,
    ) -> Result<TaskKey, EngineError> {
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
            return Err(EngineError::task_not_found(task_id));
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
            return Err(EngineError::task_not_found(task_id));
        };
        let ids = (record.task.session_id.clone(), record.task.group_id.clone());
        let ended = record.state().is_terminal();
        let completes = record.task.completes_on_result;
        let response_timeout = self.response_timeout(&st);
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
        .completing_on_result(completes)
        .responding_within(response_timeout);
        Ok((reply, feed))
    }

    /// A page of `agent`'s tasks in `owner`'s namespace that match `query`, most recently
    /// changed first. The store's listing index is read in the order it pages: a page costs its
    /// own entries (and, for a session or time filter, counting the matches for the total), and
    /// only the page's tasks are read.
    pub async fn list(
        &self,
        agent: &Agent,
        owner: Option<&str>,
        query: &TaskQuery,
    ) -> Result<TaskPage, EngineError> {
        let size = query.page_size.clamp(1, MAX_PAGE_SIZE);
        // Tasks that exist in their slot alone first (created during an invocation that has
        // not written them yet): looked at before the index, so a task written meanwhile is
        // met twice (and kept once), never missed.
        let mut positions = Vec::new();
        let mut unstored = 0u64;
        for slot in self.slots_of(agent.id(), owner) {
            let st = slot.state.lock().await;
            let Some(record) = st.record.as_ref().filter(|_| !st.stored) else {
                continue;
            };
            if !query.matches(&record.task) {
                continue;
            }
            unstored += 1;
            let position = PagePosition::of(&record.task);
            if query
                .after
                .as_ref()
                .is_none_or(|after| position.follows(after))
            {
                positions.push(position);
            }
        }
        let (listed, total) = self.inner.store.list_tasks(
            agent.id(),
            owner,
            &ListQuery {
                session: query.session_id.as_deref(),
                states: query.states.as_deref(),
                changed_after_ms: query.changed_after_ms,
                after: query
                    .after
                    .as_ref()
                    .map(|a| (a.changed_ms, a.task_id.as_str())),
                // One more than the page: whether there is a next one.
                limit: size + 1,
            },
        )?;
        positions.extend(listed.into_iter().map(|l| PagePosition {
            changed_ms: l.changed_ms(),
            task_id: l.task_id,
        }));
        positions.sort_by(PagePosition::order);
        let mut seen = std::collections::HashSet::new();
        positions.retain(|p| seen.insert(p.task_id.clone()));
        let total = total + unstored;
        let more = positions.len() > size;
        positions.truncate(size);
        let mut tasks = Vec::with_capacity(positions.len());
        for position in &positions {
            // The task as it is now (it may have changed, or gone, since the index was read; one
            // that cannot be read is set aside and failed here, and listed as such).
            match self.read(agent, owner, &position.task_id).await {
                Ok(reply) => tasks.push(reply.task),
                Err(EngineError::TaskNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        let next = positions.pop().filter(|_| more);
        Ok(TaskPage { tasks, next, total })
    }
}

impl TaskEngine {
    /// The newest task of session `session_id` of `agent` in `owner`'s namespace (most recently
    /// changed first, as [`TaskEngine::list`] orders), as it durably is; `None` if the session
    /// has none. What a chat door asks of every request, so it costs what it reads: the store's
    /// session index from its newest entry on (one entry, unless a task there has gone
    /// meanwhile: then the next), nothing counted, and of the tasks in memory only those a
    /// start made in this session (a task made during an invocation may not be stored yet).
    pub async fn newest_in_session(
        &self,
        agent: &Agent,
        owner: Option<&str>,
        session_id: &str,
    ) -> Result<Option<Task>, EngineError> {
        // The tasks in their slot alone first, as `list` does: a task written meanwhile is met
        // twice (and read once), never missed.
        let mut unstored = Vec::new();
        for slot in self.slots_of(agent.id(), owner) {
            let made_here = slot
                .made_in_session
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_deref()
                == Some(session_id);
            if !made_here {
                continue;
            }
            let st = slot.state.lock().await;
            if let Some(record) = st.record.as_ref().filter(|_| !st.stored)
                && record.task.session_id.as_deref() == Some(session_id)
            {
                unstored.push(PagePosition::of(&record.task));
            }
        }
        unstored.sort_by(PagePosition::order);
        let mut unstored = unstored.into_iter().peekable();
        let first_stored_after = |after: Option<&PagePosition>| {
            let after = after.map(|a| (a.changed_ms, a.task_id.as_str()));
            let listed = self
                .inner
                .store
                .list_session(agent.id(), owner, session_id, after, 1)?;
            Ok::<_, EngineError>(listed.into_iter().next().map(|l| PagePosition {
                changed_ms: l.changed_ms(),
                task_id: l.task_id,
            }))
        };
        let mut stored = first_stored_after(None)?;
        // Each turn reads the newest candidate left and ends, or drops a task gone meanwhile.
        loop {
            let from_store = match (unstored.peek(), &stored) {
                (None, None) => return Ok(None),
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(u), Some(s)) => PagePosition::order(s, u).is_le(),
            };
            let newest = if from_store {
                stored.clone()
            } else {
                unstored.next()
            };
            let Some(newest) = newest else {
                return Ok(None);
            };
            match self.read(agent, owner, &newest.task_id).await {
                Ok(reply) => return Ok(Some(reply.task)),
                Err(EngineError::TaskNotFound { .. }) if from_store => {
                    stored = first_stored_after(Some(&newest))?;
                }
                Err(EngineError::TaskNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Where a task's record sorts in listings, and what their filters look at.
pub(super) fn listing_of(record: &TaskRecord) -> Listing {
    Listing {
        changed_ms: record.task.status.state_changed_at.unix_millis(),
        state: record.task.status.state,
        session: record.task.session_id.clone(),
    }
}
