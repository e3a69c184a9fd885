//! The operator's view of tasks (the admin API's, not a Leader's): a task as the engine holds it
//! ([`TaskView`], with its limits and deadline), which tasks look stuck ([`Stuck`]), a page of
//! the tasks of many partners across all their Leaders, and a task's events from any seq.
//!
//! A page merges the listing index of every namespace it covers (`store/src/walk.rs`), each read
//! lazily from where the page starts: it costs one seek per namespace (a partner's Leaders) and
//! the entries it takes, never every task. `stuck` asks for working tasks changed before the
//! partner's invocation limit (a start point in the index, so exact and cheap) and tasks awaiting
//! input, whose deadline is in their record: those are read, at most [`STUCK_SCAN`] pages' worth
//! per page, so a page of stuck tasks may come back short with a cursor to go on from.

use super::{EngineError, TaskEngine};
use crate::agent::Agent;
use crate::task::feed::EventFeed;
use crate::task::record::{ActivityUse, TaskLimits};
use aiphost_model::{Task, TaskState, Timestamp, WireForm};
use aiphost_store::{TaskKey, Walk, WalkFrom};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// The most tasks one page of the operator's listing holds.
pub const MAX_OVERVIEW_PAGE: usize = 200;
/// With `stuck`, how many pages' worth of candidates one page reads at most.
pub const STUCK_SCAN: usize = 4;

/// A task as the engine holds it: what the operator is shown of it.
#[derive(Clone, Debug)]
pub struct TaskView {
    /// Its partner, its Leader's namespace (`None`: the shared one) and its id.
    pub key: TaskKey,
    /// The task (its id is the one its Leader knows).
    pub task: Task,
    /// Its limits, fixed at its start.
    pub limits: TaskLimits,
    /// The wire form the door that started it chose (AIP: its Leader's dialect).
    pub form: Option<WireForm>,
    /// When its awaiting state times out (Unix ms), if it is in one.
    pub deadline_ms: Option<i64>,
    /// The published version of the partner it runs on (0: an operator's bundle).
    pub agent_version: u64,
    /// Its newest event's seq.
    pub last_event_seq: u64,
    /// The content bytes its products hold.
    pub products_bytes: u64,
    /// What its partner spent of its activity budget.
    pub activity: ActivityUse,
}

/// Why a task looks stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stuck {
    /// Working for longer than one invocation of its partner may take.
    WorkingTooLong,
    /// Awaiting input, within a tenth of its timeout of being canceled.
    InputTimeoutNear,
}

impl Stuck {
    /// The word the admin API uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Stuck::WorkingTooLong => "working_too_long",
            Stuck::InputTimeoutNear => "input_timeout_near",
        }
    }
}

impl TaskView {
    /// Whether the task looks stuck at `now_ms`, its partner's invocations taking at most
    /// `invocation_limit` (`None`: not known, its component still compiling).
    pub fn stuck(&self, invocation_limit: Option<Duration>, now_ms: i64) -> Option<Stuck> {
        let status = &self.task.status;
        match status.state {
            TaskState::Working => {
                let limit = i64::try_from(invocation_limit?.as_millis()).unwrap_or(i64::MAX);
                let working = now_ms.saturating_sub(status.state_changed_at.unix_millis());
                (working > limit).then_some(Stuck::WorkingTooLong)
            }
            TaskState::AwaitingInput => {
                let left = i128::from(self.deadline_ms?) - i128::from(now_ms);
                let timeout = i128::from(self.limits.awaiting_input_timeout_ms);
                (left * 10 <= timeout).then_some(Stuck::InputTimeoutNear)
            }
            _ => None,
        }
    }

    /// When the task came into being (its first status, which its history always keeps).
    pub fn created(&self) -> Timestamp {
        self.task
            .status_history
            .first()
            .unwrap_or(&self.task.status)
            .state_changed_at
    }
}

/// Where a page of the operator's listing ends: its order is the newest status change first,
/// then partner, Leader (the shared namespace first) and task id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverviewPosition {
    /// When the task's status changed (Unix ms).
    pub changed_ms: i64,
    /// Its partner.
    pub agent: String,
    /// Its Leader's namespace.
    pub leader: Option<String>,
    /// Its id.
    pub task_id: String,
}

impl Ord for OverviewPosition {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .changed_ms
            .cmp(&self.changed_ms)
            .then_with(|| self.agent.cmp(&other.agent))
            .then_with(|| self.leader.cmp(&other.leader))
            .then_with(|| self.task_id.cmp(&other.task_id))
    }
}

impl PartialOrd for OverviewPosition {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Which tasks the operator's listing shows.
#[derive(Clone, Default)]
pub struct OverviewQuery {
    /// The partners whose tasks are listed.
    pub agents: Vec<Arc<Agent>>,
    /// Only the tasks of this Leader.
    pub leader: Option<String>,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks of this session.
    pub session: Option<String>,
    /// Only tasks that look stuck ([`TaskView::stuck`]).
    pub stuck: bool,
    /// At most this many (capped at [`MAX_OVERVIEW_PAGE`]).
    pub limit: usize,
    /// Continue after this task of an earlier page.
    pub after: Option<OverviewPosition>,
}

/// A page of the operator's listing.
#[derive(Clone, Debug)]
pub struct OverviewPage {
    /// The tasks as they are now, each with why it looks stuck (if it does).
    pub tasks: Vec<(TaskView, Option<Stuck>)>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<OverviewPosition>,
}

/// One namespace's walk, ready to merge.
type Walker = Box<dyn Iterator<Item = Result<OverviewPosition, EngineError>> + Send>;

impl TaskEngine {
    /// Task `task_id` of `agent` in `owner`'s namespace as the engine holds it, durably.
    /// Nothing is recorded.
    pub async fn inspect(
        &self,
        agent: &Agent,
        owner: Option<&str>,
        task_id: &str,
    ) -> Result<TaskView, EngineError> {
        let key = Self::key_of(agent, owner, task_id)?;
        let slot = self.hold(&key);
        let mut st = slot.state.lock().await;
        self.ensure_loaded(&slot, &mut st).await?;
        if st.record.is_none() {
            return Err(EngineError::task_not_found(task_id));
        }
        self.write_out(&slot, &mut st).await?;
        let ticket = st.ticket;
        let record = st
            .record
            .as_ref()
            .ok_or(EngineError::Internal("the task vanished while answering"))?;
        let view = TaskView {
            key: key.clone(),
            task: record.task.clone(),
            limits: record.limits.clone(),
            form: record.form.clone(),
            deadline_ms: record.deadline_ms,
            agent_version: record.agent_version,
            last_event_seq: record.last_event_seq,
            products_bytes: record.products_bytes,
            activity: record.activity,
        };
        drop(st);
        self.inner.store.durable(ticket).await?;
        Ok(view)
    }

    /// Task `task_id` as it durably is, and a feed of its events after seq `after` (0: from the
    /// first), replayed and then live until it ends. Events retention dropped are skipped: the
    /// feed starts at the oldest kept (its first seq says what is missing). Nothing is recorded.
    pub async fn follow_from(
        &self,
        agent: &Agent,
        owner: Option<&str>,
        task_id: &str,
        after: u64,
    ) -> Result<(TaskView, EventFeed), EngineError> {
        let key = Self::key_of(agent, owner, task_id)?;
        // Follow before reading, so no event slips between the snapshot and the feed.
        let follow = self.inner.watermarks.follow(&key);
        let view = self.inspect(agent, owner, task_id).await?;
        let last = view.last_event_seq;
        let after = match self.inner.store.first_event_seq(&key)? {
            Some(first) if first > after.saturating_add(1) => (first - 1).min(last),
            Some(_) => after.min(last),
            // None kept (an ended task past its event retention): nothing to replay.
            None => last,
        };
        let task = &view.task;
        let feed = EventFeed::new(
            key,
            (task.session_id.clone(), task.group_id.clone()),
            self.inner.store.clone(),
            follow,
            after,
            last,
            task.status.state.is_terminal(),
        )
        .completing_on_result(task.completes_on_result)
        .responding_within(Duration::from_millis(view.limits.response_timeout_ms));
        Ok((view, feed))
    }

    /// A page of the tasks of `query.agents` across all their Leaders, newest status change
    /// first (see the module doc for what it costs).
    pub async fn overview(&self, query: &OverviewQuery) -> Result<OverviewPage, EngineError> {
        let limit = query.limit.clamp(1, MAX_OVERVIEW_PAGE);
        let now = Timestamp::now_ms();
        let budget = if query.stuck {
            limit * STUCK_SCAN
        } else {
            limit
        };
        let mut candidates = self.overview_candidates(query, now, budget + 1).await?;
        let mut more = candidates.len() > budget;
        candidates.truncate(budget);
        let mut tasks = Vec::new();
        let mut last = None;
        let mut rest = candidates.into_iter();
        for position in rest.by_ref() {
            if tasks.len() == limit {
                more = true;
                break;
            }
            let Some(agent) = query.agents.iter().find(|a| a.id() == position.agent) else {
                continue;
            };
            let view = match self
                .inspect(agent, position.leader.as_deref(), &position.task_id)
                .await
            {
                Ok(view) => view,
                // Gone since the index was read.
                Err(EngineError::TaskNotFound { .. }) => {
                    last = Some(position);
                    continue;
                }
                Err(e) => return Err(e),
            };
            last = Some(position);
            let stuck = view.stuck(agent.code.invocation_limit(), now);
            if query.stuck && stuck.is_none() {
                continue;
            }
            tasks.push((view, stuck));
        }
        Ok(OverviewPage {
            tasks,
            next: last.filter(|_| more),
        })
    }

    /// Up to `wanted` positions of the tasks `query` asks for, in listing order: the index of
    /// every namespace merged, and the tasks in memory not stored yet (made during an invocation).
    async fn overview_candidates(
        &self,
        query: &OverviewQuery,
        now: i64,
        wanted: usize,
    ) -> Result<Vec<OverviewPosition>, EngineError> {
        let states: Vec<Option<TaskState>> = if query.stuck {
            [TaskState::Working, TaskState::AwaitingInput]
                .into_iter()
                .filter(|s| query.state.is_none_or(|q| q == *s))
                .map(Some)
                .collect()
        } else {
            vec![query.state]
        };
        let after = query.after.as_ref();
        let mut walkers: Vec<Walker> = Vec::new();
        let mut unstored = Vec::new();
        for agent in &query.agents {
            let leaders = match &query.leader {
                Some(leader) => vec![Some(leader.clone())],
                None => self.inner.store.listed_leaders(agent.id()),
            };
            let limit = agent.code.invocation_limit();
            for leader in leaders {
                for state in &states {
                    let mut from = Vec::new();
                    if let Some(a) = after {
                        from.push(resume_point(a, agent.id(), leader.as_deref()));
                    }
                    if query.stuck && *state == Some(TaskState::Working) {
                        // Working for longer than an invocation: changed before now - limit.
                        let Some(limit) = limit else { continue };
                        let limit = i64::try_from(limit.as_millis()).unwrap_or(i64::MAX);
                        from.push(WalkFrom::ChangedBefore(now.saturating_sub(limit)));
                    }
                    let walk = Walk {
                        state: *state,
                        session: query.session.as_deref(),
                        from,
                    };
                    let (agent_id, leader_id) = (agent.id().to_string(), leader.clone());
                    let entries = self
                        .inner
                        .store
                        .walk_listing(agent.id(), leader.as_deref(), &walk)
                        .map(move |listed| {
                            let listed = listed?;
                            Ok(OverviewPosition {
                                changed_ms: listed.changed_ms(),
                                agent: agent_id.clone(),
                                leader: leader_id.clone(),
                                task_id: listed.task_id,
                            })
                        });
                    let boxed: Box<dyn Iterator<Item = _> + Send> = Box::new(entries);
                    walkers.push(boxed);
                }
            }
            // Tasks in their slot alone (made during an invocation not written yet), as a
            // Leader's listing takes them: met twice if written meanwhile, kept once.
            for slot in self.slots_of_agent(agent.id()) {
                let st = slot.state.lock().await;
                let Some(record) = st.record.as_ref().filter(|_| !st.stored) else {
                    continue;
                };
                let task = &record.task;
                let leader = slot.key.leader.clone();
                let position = OverviewPosition {
                    changed_ms: task.status.state_changed_at.unix_millis(),
                    agent: agent.id().to_string(),
                    leader: leader.clone(),
                    task_id: slot.key.task.clone(),
                };
                let fits = query
                    .leader
                    .as_ref()
                    .is_none_or(|l| leader.as_ref() == Some(l))
                    && states
                        .iter()
                        .any(|s| s.is_none_or(|s| s == task.status.state))
                    && query
                        .session
                        .as_ref()
                        .is_none_or(|s| task.session_id.as_ref() == Some(s))
                    && after.is_none_or(|a| position > *a);
                if fits {
                    unstored.push(position);
                }
            }
        }
        unstored.sort();
        let boxed: Box<dyn Iterator<Item = _> + Send> = Box::new(unstored.into_iter().map(Ok));
        walkers.push(boxed);
        merge(walkers, wanted)
    }
}

/// Where a namespace's walk resumes after `after`: past its instant for namespaces that sort
/// before it, after the task itself in its own, at its instant for those that sort after.
fn resume_point<'a>(
    after: &'a OverviewPosition,
    agent: &str,
    leader: Option<&str>,
) -> WalkFrom<'a> {
    match (agent, leader).cmp(&(after.agent.as_str(), after.leader.as_deref())) {
        Ordering::Less => WalkFrom::ChangedBefore(after.changed_ms),
        Ordering::Equal => WalkFrom::After(after.changed_ms, &after.task_id),
        Ordering::Greater => WalkFrom::ChangedAtOrBefore(after.changed_ms),
    }
}

/// The first `wanted` positions of the sorted `walkers`, merged in order, each once.
fn merge(mut walkers: Vec<Walker>, wanted: usize) -> Result<Vec<OverviewPosition>, EngineError> {
    let mut heap = BinaryHeap::new();
    for (i, walker) in walkers.iter_mut().enumerate() {
        if let Some(next) = walker.next() {
            heap.push(Reverse((next?, i)));
        }
    }
    let mut out: Vec<OverviewPosition> = Vec::new();
    let mut seen = HashSet::new();
    while out.len() < wanted {
        let Some(Reverse((position, i))) = heap.pop() else {
            break;
        };
        if let Some(next) = walkers[i].next() {
            heap.push(Reverse((next?, i)));
        }
        let id = (
            position.agent.clone(),
            position.leader.clone(),
            position.task_id.clone(),
        );
        if seen.insert(id) {
            out.push(position);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiphost_model::TaskStatus;

    fn view(state: TaskState, changed_ms: i64, deadline_ms: Option<i64>, timeout: u64) -> TaskView {
        let mut status = TaskStatus::now(state, Vec::new());
        status.state_changed_at = Timestamp::parse("1970-01-01T00:00:00Z")
            .unwrap()
            .plus_millis(changed_ms as u64);
        TaskView {
            key: TaskKey::new("echo", "t"),
            task: Task {
                id: "t".into(),
                session_id: None,
                leader_id: None,
                group_id: None,
                status: status.clone(),
                products: Vec::new(),
                commands: Vec::new(),
                status_history: vec![status],
                completes_on_result: false,
                plain_reply: false,
            },
            limits: TaskLimits {
                response_timeout_ms: 1_000,
                awaiting_input_timeout_ms: timeout,
                awaiting_completion_timeout_ms: 1_000,
                leader_max_products_bytes: None,
                max_products_bytes: 1_000,
            },
            form: None,
            deadline_ms,
            agent_version: 0,
            last_event_seq: 1,
            products_bytes: 0,
            activity: ActivityUse::default(),
        }
    }

    /// Working past the invocation limit, or awaiting input in the last tenth of its timeout, is
    /// stuck; nothing else is, and a limit not known yet says nothing.
    #[test]
    fn stuck_is_working_past_the_limit_or_input_near_its_timeout() {
        let limit = Some(Duration::from_millis(1_000));
        let working = view(TaskState::Working, 10_000, None, 0);
        assert_eq!(working.stuck(limit, 11_000), None);
        assert_eq!(working.stuck(limit, 11_001), Some(Stuck::WorkingTooLong));
        assert_eq!(working.stuck(None, 99_000), None);
        // Times out at 20 000 after 10 000 ms: stuck from 19 000 on.
        let waiting = view(TaskState::AwaitingInput, 10_000, Some(20_000), 10_000);
        assert_eq!(waiting.stuck(limit, 18_999), None);
        assert_eq!(waiting.stuck(limit, 19_000), Some(Stuck::InputTimeoutNear));
        assert_eq!(waiting.stuck(limit, 25_000), Some(Stuck::InputTimeoutNear));
        let done = view(TaskState::Completed, 0, None, 0);
        assert_eq!(done.stuck(limit, i64::MAX), None);
        assert_eq!(Stuck::InputTimeoutNear.as_str(), "input_timeout_near");
    }

    fn at(ms: i64, agent: &str, leader: Option<&str>, task: &str) -> OverviewPosition {
        OverviewPosition {
            changed_ms: ms,
            agent: agent.into(),
            leader: leader.map(str::to_string),
            task_id: task.into(),
        }
    }

    /// Sorted walks merge in listing order, a task met twice kept once; a namespace resumes
    /// exactly after the cursor, whichever side of it it sorts.
    #[test]
    fn walks_merge_in_order_and_resume_after_the_cursor() {
        let walker = |items: Vec<OverviewPosition>| -> Walker {
            let boxed: Box<dyn Iterator<Item = _> + Send> = Box::new(items.into_iter().map(Ok));
            boxed
        };
        let a = vec![at(9, "a", None, "x"), at(5, "a", None, "y")];
        let b = vec![at(9, "a", Some("L"), "x"), at(7, "a", Some("L"), "z")];
        let c = vec![at(5, "a", None, "y"), at(1, "b", None, "w")];
        let merged = merge(vec![walker(a), walker(b), walker(c)], 10).unwrap();
        let ids: Vec<(i64, Option<&str>, &str)> = merged
            .iter()
            .map(|p| (p.changed_ms, p.leader.as_deref(), p.task_id.as_str()))
            .collect();
        assert_eq!(
            ids,
            [
                (9, None, "x"),
                (9, Some("L"), "x"),
                (7, Some("L"), "z"),
                (5, None, "y"),
                (1, None, "w")
            ]
        );
        assert!(merge(vec![], 3).unwrap().is_empty());
        let cursor = at(9, "a", Some("L"), "x");
        assert_eq!(resume_point(&cursor, "a", None), WalkFrom::ChangedBefore(9));
        assert_eq!(
            resume_point(&cursor, "a", Some("L")),
            WalkFrom::After(9, "x")
        );
        assert_eq!(
            resume_point(&cursor, "a", Some("M")),
            WalkFrom::ChangedAtOrBefore(9)
        );
        assert_eq!(
            resume_point(&cursor, "b", None),
            WalkFrom::ChangedAtOrBefore(9)
        );
    }
}
