//! The listing index: a Leader's tasks of a partner in the order a listing pages them (the
//! status changed most recently first, then the task id), so a page costs its own entries, not
//! every task of the namespace (issue 29 item 4).
//!
//! Keys, in the `tasks` tree (`{ns}` is the Leader's namespace: `0` for the shared one of an
//! open partner, or `1`, the Leader's length as `u32` big-endian, and the Leader; `{inv}` is
//! `u64::MAX - changed ms`, big-endian, so the newest comes first):
//! - `i\0{agent}\0{ns}s{state}{inv}{task id}`: by state (one byte, [`state_byte`]); a listing of
//!   every task merges the states' entries (a page costs at most a page per state), so no entry
//!   of its own is written per task (issue 35: a durable start writes few keys);
//! - `i\0{agent}\0{ns}c{session length, u32 BE}{session}{inv}{task id}`: by session (A2A's
//!   `contextId`: a client's string, which may hold any byte, hence its length first);
//!
//! each → `{state}{0 | 1 and the session}`, so a filter on both session and state reads the
//! session's entries alone. What the entries hold for a task (`{changed ms, i64 BE}{state}{0 | 1
//! and the session}`) is kept in the task's value (`packed.rs`), which every change rewrites
//! anyway: a status change finds the entries it replaces there, and every deletion (retention,
//! set-aside, a tenant's removal) finds them in the value it deletes. Hosts before issue 35 kept
//! it in an entry of its own, `k\0{agent}\0{scoped task}`, still read for a task whose value is
//! plain and removed by its next write.
//!
//! The task write path ([`Store::write_task`]) keeps both up to date from the [`Listing`] the
//! engine passes with each record. The numbers of tasks per namespace and state are kept in
//! memory ([`Counts`]): built at open from the entries by state, changed where entries are written or
//! deleted, so a listing's total is exact without counting every match. A store written before
//! the index gets it built once, at start-up ([`Store::listing_index`]).

use super::packed::Packed;
use super::write_batch::Writes;
use super::{Encoded, Store, StoreError, TaskKey};
use aiphost_model::TaskState;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Mutex;

/// Marks a store whose listing index is complete.
const LISTING_MARK: &[u8] = b"m\0list-index";
/// The tag of the index entries.
const INDEX: u8 = b'i';
/// The tag of the per-task entries that say what is indexed.
const INDEXED: u8 = b'k';
/// Every task, by status change: written by hosts before issue 35 (every task is in its
/// state's entries, so listings of all tasks merge those), removed once at open.
const ALL: u8 = b'a';
/// Marks a store whose entries of [`ALL`] are gone.
const ALL_GONE_MARK: &[u8] = b"m\0list-index-2";
/// By state, then status change.
const BY_STATE: u8 = b's';
/// By session, then status change.
const BY_SESSION: u8 = b'c';

/// What a task's listing entries hold: where it sorts and what the filters look at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// When its status last changed (Unix ms): the listing's order, newest first.
    pub changed_ms: i64,
    /// Its state.
    pub state: TaskState,
    /// Its session (A2A's `contextId`), if it has one.
    pub session: Option<String>,
}

/// Which of a namespace's tasks a page holds.
#[derive(Clone, Debug, Default)]
pub struct ListQuery<'a> {
    /// Only tasks of this session.
    pub session: Option<&'a str>,
    /// Only tasks in one of these states (`None`: any).
    pub states: Option<&'a [TaskState]>,
    /// Only tasks whose status changed after this instant (Unix ms).
    pub changed_after_ms: Option<i64>,
    /// Start after this position (a page's last task): `(changed ms, task id)`.
    pub after: Option<(i64, &'a str)>,
    /// At most this many positions.
    pub limit: usize,
}

/// A task's place in a listing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listed {
    /// `u64::MAX - changed ms`: sorts the newest first.
    inverted: u64,
    /// The task's id (as its Leader knows it).
    pub task_id: String,
}

impl Listed {
    /// The entry at `inverted` (`u64::MAX - changed ms`) for `task_id`.
    pub(crate) fn at(inverted: u64, task_id: String) -> Self {
        Listed { inverted, task_id }
    }

    /// When its status changed (Unix ms), as indexed.
    pub fn changed_ms(&self) -> i64 {
        i64::try_from(u64::MAX - self.inverted).unwrap_or(i64::MAX)
    }
}

/// One byte per state, stable on disk whatever order the enum has.
pub fn state_byte(state: TaskState) -> u8 {
    match state {
        TaskState::Accepted => 0,
        TaskState::Working => 1,
        TaskState::AwaitingInput => 2,
        TaskState::AwaitingCompletion => 3,
        TaskState::Completed => 4,
        TaskState::Canceled => 5,
        TaskState::Failed => 6,
        TaskState::Rejected => 7,
    }
}

fn state_of(byte: u8) -> Option<TaskState> {
    TaskState::ALL
        .into_iter()
        .find(|state| state_byte(*state) == byte)
}

const STATES: usize = TaskState::ALL.len();

/// A namespace: the agent and the Leader (`None`: the shared one).
type Namespace = (String, Option<String>);

/// Tasks per namespace and state, as the index holds them.
#[derive(Default)]
pub(crate) struct Counts(Mutex<HashMap<Namespace, [u64; STATES]>>);

impl Counts {
    /// Count one more task of `agent` in `leader`'s namespace in `state`.
    fn add(&self, agent: &str, leader: Option<&str>, state: TaskState) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let namespace = counts
            .entry((agent.to_string(), leader.map(str::to_string)))
            .or_default();
        namespace[state_byte(state) as usize] += 1;
    }

    fn change(&self, key: &TaskKey, old: Option<TaskState>, new: Option<TaskState>) {
        if old == new {
            return;
        }
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let namespace = counts
            .entry((key.agent.clone(), key.leader.clone()))
            .or_default();
        if let Some(old) = old {
            let n = &mut namespace[state_byte(old) as usize];
            *n = n.saturating_sub(1);
        }
        if let Some(new) = new {
            namespace[state_byte(new) as usize] += 1;
        }
    }

    fn of(&self, agent: &str, leader: Option<&str>, states: Option<&[TaskState]>) -> u64 {
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(namespace) = counts.get(&(agent.to_string(), leader.map(str::to_string))) else {
            return 0;
        };
        match states {
            None => namespace.iter().sum(),
            Some(states) => {
                let mut bytes: Vec<u8> = states.iter().map(|s| state_byte(*s)).collect();
                bytes.sort_unstable();
                bytes.dedup();
                bytes.iter().map(|b| namespace[*b as usize]).sum()
            }
        }
    }

    /// The namespaces of `agent` that hold (or held) listed tasks: the Leaders, `None` for the
    /// shared one.
    pub(crate) fn namespaces_of(&self, agent: &str) -> Vec<Option<String>> {
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        counts
            .iter()
            .filter(|((a, _), n)| a == agent && n.iter().any(|n| *n > 0))
            .map(|((_, leader), _)| leader.clone())
            .collect()
    }

    /// Tasks per agent and state (every namespace of an agent added up), states with none left
    /// out.
    pub(crate) fn by_agent(&self) -> Vec<(String, TaskState, u64)> {
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut sums: HashMap<&str, [u64; STATES]> = HashMap::new();
        for ((agent, _), namespace) in counts.iter() {
            let sum = sums.entry(agent.as_str()).or_default();
            for (total, n) in sum.iter_mut().zip(namespace) {
                *total += n;
            }
        }
        let mut out = Vec::new();
        for (agent, sum) in sums {
            for state in TaskState::ALL {
                let n = sum[state_byte(state) as usize];
                if n > 0 {
                    out.push((agent.to_string(), state, n));
                }
            }
        }
        out
    }

    /// The namespaces with tasks that have not ended, and those tasks' states.
    fn unended(&self) -> Vec<(String, Option<String>, Vec<TaskState>)> {
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        counts
            .iter()
            .filter_map(|((agent, leader), n)| {
                let states: Vec<TaskState> = TaskState::ALL
                    .into_iter()
                    .filter(|s| !s.is_terminal() && n[state_byte(*s) as usize] > 0)
                    .collect();
                (!states.is_empty()).then(|| (agent.clone(), leader.clone(), states))
            })
            .collect()
    }

    /// Forget every namespace of `agent` (its tasks are gone).
    fn forget(&self, agent: &str) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        counts.retain(|(a, _), _| a != agent);
    }
}

/// `i\0{agent}\0{ns}`: the prefix of a namespace's index entries.
pub(crate) fn namespace_prefix(agent: &str, leader: Option<&str>) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + agent.len() + leader.map_or(0, str::len));
    k.extend_from_slice(&[INDEX, 0]);
    k.extend_from_slice(agent.as_bytes());
    k.push(0);
    match leader {
        None => k.push(0),
        Some(leader) => {
            k.push(1);
            k.extend_from_slice(&(leader.len() as u32).to_be_bytes());
            k.extend_from_slice(leader.as_bytes());
        }
    }
    k
}

pub(crate) fn inverted(ms: i64) -> u64 {
    u64::MAX - ms.max(0) as u64
}

/// The prefix of one dimension's entries: all, one state's, or one session's.
pub(crate) fn dimension(ns: &[u8], dim: Dim<'_>) -> Vec<u8> {
    let mut k = ns.to_vec();
    match dim {
        Dim::State(state) => k.extend_from_slice(&[BY_STATE, state_byte(state)]),
        Dim::Session(session) => {
            k.push(BY_SESSION);
            k.extend_from_slice(&(session.len() as u32).to_be_bytes());
            k.extend_from_slice(session.as_bytes());
        }
    }
    k
}

#[derive(Clone, Copy)]
pub(crate) enum Dim<'a> {
    State(TaskState),
    Session(&'a str),
}

pub(crate) fn entry_key(dim_prefix: &[u8], changed_ms: i64, task: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(dim_prefix.len() + 8 + task.len());
    k.extend_from_slice(dim_prefix);
    k.extend_from_slice(&inverted(changed_ms).to_be_bytes());
    k.extend_from_slice(task.as_bytes());
    k
}

/// A state byte with this bit set is followed by a deadline.
const WITH_DEADLINE: u8 = 0x80;

/// `{state | WITH_DEADLINE}{deadline ms, i64 BE, if any}{0 | 1 and the session}`: the entry by
/// state carries the task's deadline (so it needs no deadline entry of its own), the entry by
/// session none.
fn entry_value(listing: &Listing, deadline: Option<i64>) -> Vec<u8> {
    let session = listing.session.as_ref().map_or(0, String::len);
    let mut v = Vec::with_capacity(10 + session);
    match deadline {
        None => v.push(state_byte(listing.state)),
        Some(at) => {
            v.push(state_byte(listing.state) | WITH_DEADLINE);
            v.extend_from_slice(&at.to_be_bytes());
        }
    }
    match &listing.session {
        None => v.push(0),
        Some(session) => {
            v.push(1);
            v.extend_from_slice(session.as_bytes());
        }
    }
    v
}

/// An index entry's state and session.
pub(crate) fn read_entry_value(v: &[u8]) -> Option<(TaskState, Option<&str>)> {
    read_entry(v).map(|(state, _, session)| (state, session))
}

/// An index entry's state, deadline and session.
fn read_entry(v: &[u8]) -> Option<(TaskState, Option<i64>, Option<&str>)> {
    let (&byte, mut rest) = v.split_first()?;
    let state = state_of(byte & !WITH_DEADLINE)?;
    let mut deadline = None;
    if byte & WITH_DEADLINE != 0 {
        let (at, tail) = rest.split_first_chunk::<8>()?;
        deadline = Some(i64::from_be_bytes(*at));
        rest = tail;
    }
    match rest.split_first()? {
        (0, []) => Some((state, deadline, None)),
        (1, session) => Some((state, deadline, Some(std::str::from_utf8(session).ok()?))),
        _ => None,
    }
}

impl TaskKey {
    /// `k\0{agent}\0{scoped task}`: what the listing index holds for this task.
    fn indexed_key(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(2 + self.names_len());
        k.extend_from_slice(&[INDEXED, 0]);
        self.push_names(&mut k);
        k
    }

    /// The keys of this task's index entries for `listing`.
    fn index_keys(&self, listing: &Listing) -> [Vec<u8>; 2] {
        let ns = namespace_prefix(&self.agent, self.leader.as_deref());
        let at = |dim| entry_key(&dimension(&ns, dim), listing.changed_ms, &self.task);
        [
            at(Dim::State(listing.state)),
            match &listing.session {
                Some(session) => at(Dim::Session(session)),
                // No session: no entry by session (the key is never written).
                None => Vec::new(),
            },
        ]
    }
}

/// What the index holds for a task: where it is listed, and the deadline its entry by state
/// carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Indexed {
    pub(crate) listing: Listing,
    pub(crate) deadline: Option<i64>,
}

/// `{changed ms, i64 BE}` and the entry by state's value: as the task's value says it
/// (`packed.rs`), or, in a store written before packing, its `k` entry (never a deadline).
pub(crate) fn encode_indexed(indexed: &Indexed) -> Vec<u8> {
    let mut v = indexed.listing.changed_ms.to_be_bytes().to_vec();
    v.extend_from_slice(&entry_value(&indexed.listing, indexed.deadline));
    v
}

pub(crate) fn decode_indexed(v: &[u8]) -> Option<Indexed> {
    let (ms, rest) = v.split_first_chunk::<8>()?;
    let (state, deadline, session) = read_entry(rest)?;
    Some(Indexed {
        listing: Listing {
            changed_ms: i64::from_be_bytes(*ms),
            state,
            session: session.map(str::to_string),
        },
        deadline,
    })
}

/// The tag of an index entry's dimension ([`ALL`], [`BY_STATE`] or [`BY_SESSION`]).
fn dimension_tag(k: &[u8]) -> Option<u8> {
    let (_, _, rest) = split_namespace(k)?;
    rest.first().copied()
}

/// An index entry's agent, Leader and what follows them (from the dimension's tag on).
fn split_namespace(k: &[u8]) -> Option<(&str, Option<&str>, &[u8])> {
    let rest = k.get(2..)?;
    let agent_end = rest.iter().position(|b| *b == 0)?;
    let agent = std::str::from_utf8(&rest[..agent_end]).ok()?;
    let rest = rest.get(agent_end + 1..)?;
    match rest.split_first()? {
        (0, tail) => Some((agent, None, tail)),
        (1, tail) => {
            let (len, tail) = tail.split_first_chunk::<4>()?;
            let (leader, tail) = tail.split_at_checked(u32::from_be_bytes(*len) as usize)?;
            Some((agent, Some(std::str::from_utf8(leader).ok()?), tail))
        }
        _ => None,
    }
}

/// The task an index entry or an indexed entry names, for `aiphost store check`.
fn task_of_entry(k: &[u8]) -> Option<TaskKey> {
    match *k.first()? {
        INDEXED => k.get(2..).and_then(TaskKey::from_tail),
        INDEX => {
            let (agent, leader, rest) = split_namespace(k)?;
            let rest = match rest.split_first()? {
                (&ALL, tail) => tail,
                (&BY_STATE, tail) => tail.get(1..)?,
                (&BY_SESSION, tail) => {
                    let (len, tail) = tail.split_first_chunk::<4>()?;
                    tail.get(u32::from_be_bytes(*len) as usize..)?
                }
                _ => return None,
            };
            let task = std::str::from_utf8(rest.get(8..)?).ok()?;
            Some(TaskKey::owned(agent, leader, task))
        }
        _ => None,
    }
}

/// What kind of listing entry `k` → `v` is and the task it names, for `aiphost store check`
/// (`Err`: it is malformed).
pub(crate) fn check_entry(k: &[u8], v: &[u8]) -> Result<(&'static str, TaskKey), String> {
    let kind = match k.first() {
        Some(&INDEX) => {
            read_entry_value(v).ok_or("a malformed listing index entry")?;
            "listing index entries"
        }
        _ => {
            decode_indexed(v).ok_or("a malformed listing entry")?;
            "listed tasks"
        }
    };
    let task = task_of_entry(k).ok_or("a malformed listing key")?;
    Ok((kind, task))
}

impl Store {
    /// What the listing index holds for `key` now, said by its stored value (`stored`, read by
    /// the caller; `None`: none), and whether that value is older than packing (`true`: its
    /// listing, if any, was said by its `k` entry, which the caller's batch then removes, and
    /// its deadline, if any, by a deadline entry of its own).
    pub(crate) fn listed_now(
        &self,
        batch: &mut impl Writes,
        key: &TaskKey,
        stored: Option<&Packed<'_>>,
    ) -> Result<(Option<Indexed>, bool), StoreError> {
        let malformed = || {
            StoreError::Corrupt(format!(
                "the listing entry of task {}/{} is malformed",
                key.agent, key.task
            ))
        };
        if let Some(stored) = stored
            && !stored.listing.is_empty()
        {
            let indexed = decode_indexed(stored.listing).ok_or_else(malformed)?;
            return Ok((Some(indexed), false));
        }
        let indexed_key = key.indexed_key();
        match self.inner.tasks.get(&indexed_key)? {
            Some(v) => {
                batch.remove(indexed_key);
                let indexed = decode_indexed(&v).ok_or_else(malformed)?;
                Ok((Some(indexed), true))
            }
            None => Ok((None, true)),
        }
    }

    /// The writes that make `key`'s listing entries say `new` (`None`: none, the task goes),
    /// given what they say now (`old`, from [`Store::listed_now`]); the counts follow. What the
    /// entries say is kept in the task's value (`packed.rs`), which the caller writes.
    pub(crate) fn relist(
        &self,
        batch: &mut impl Writes,
        key: &TaskKey,
        old: Option<Indexed>,
        new: Option<&Indexed>,
    ) {
        if old.as_ref() == new {
            return;
        }
        if let (Some(old), Some(new)) = (&old, new)
            && old.listing == new.listing
        {
            // Only the deadline moved: the entry by state carries it.
            let [by_state, _] = key.index_keys(&new.listing);
            batch.insert(by_state, entry_value(&new.listing, new.deadline));
            return;
        }
        if let Some(old) = &old {
            for k in key
                .index_keys(&old.listing)
                .into_iter()
                .filter(|k| !k.is_empty())
            {
                batch.remove(k);
            }
        }
        if let Some(new) = new {
            let [by_state, by_session] = key.index_keys(&new.listing);
            batch.insert(by_state, entry_value(&new.listing, new.deadline));
            if !by_session.is_empty() {
                batch.insert(by_session, entry_value(&new.listing, None));
            }
        }
        self.inner.listed.change(
            key,
            old.map(|o| o.listing.state),
            new.map(|n| n.listing.state),
        );
    }

    /// The deadlines the entries by state carry: `(at ms, task)`, for the states a task waits
    /// in with one, in the namespaces that have such tasks (the counts say which): what is read
    /// is the tasks that have not ended.
    pub(crate) fn indexed_deadlines(
        &self,
        until_ms: i64,
    ) -> Result<Vec<(i64, TaskKey)>, StoreError> {
        let mut out = Vec::new();
        for (agent, leader, states) in self.inner.listed.unended() {
            let ns = namespace_prefix(&agent, leader.as_deref());
            for state in states {
                let dim = dimension(&ns, Dim::State(state));
                for entry in self.inner.tasks.scan_prefix(&dim) {
                    let (k, v) = entry?;
                    let Some((_, Some(at), _)) = read_entry(&v) else {
                        continue;
                    };
                    if at > until_ms {
                        continue;
                    }
                    let task = k
                        .get(dim.len() + 8..)
                        .and_then(|t| std::str::from_utf8(t).ok())
                        .ok_or_else(|| StoreError::Corrupt("malformed listing index key".into()))?;
                    out.push((at, TaskKey::owned(&agent, leader.as_deref(), task)));
                }
            }
        }
        Ok(out)
    }

    /// Remove the entries of every task (tag [`ALL`]) an older host wrote, once.
    pub(crate) fn forget_all_entries(&self) -> Result<(), StoreError> {
        let tasks = &self.inner.tasks;
        if tasks.contains_key(ALL_GONE_MARK)? {
            return Ok(());
        }
        let mut batch = sled::Batch::default();
        let mut removed = 0usize;
        for k in tasks.scan_prefix([INDEX, 0]).keys() {
            let k = k?;
            if dimension_tag(&k) == Some(ALL) {
                batch.remove(k);
                removed += 1;
            }
        }
        batch.insert(ALL_GONE_MARK, &[][..]);
        tasks.apply_batch(batch)?;
        tasks.flush()?;
        if removed > 0 {
            tracing::info!(
                removed,
                "removed the all-tasks listing entries of an older store"
            );
        }
        Ok(())
    }

    /// Count the listed tasks per namespace and state (at open), from the entries by state:
    /// each task has one.
    pub(crate) fn count_listed(&self) -> Result<(), StoreError> {
        // A namespace's entries by session sort before its entries by state: each run of them
        // is skipped with one seek, so a restart reads one entry per task (issue 35 point 5).
        let mut from = vec![INDEX, 0];
        let end = vec![INDEX, 1];
        'namespaces: loop {
            for k in self.inner.tasks.range(from.clone()..end.clone()).keys() {
                let k = k?;
                let Some((agent, leader, rest)) = split_namespace(&k) else {
                    tracing::error!("a malformed listing entry is not counted");
                    continue;
                };
                match rest.first().copied() {
                    Some(BY_SESSION) => {
                        from = k[..k.len() - rest.len()].to_vec();
                        from.push(BY_SESSION + 1);
                        continue 'namespaces;
                    }
                    Some(BY_STATE) => match rest.get(1).copied().and_then(state_of) {
                        Some(state) => self.inner.listed.add(agent, leader, state),
                        None => tracing::error!("a malformed listing entry is not counted"),
                    },
                    _ => {}
                }
            }
            return Ok(());
        }
    }

    /// Forget the listing of `agent` (its tasks are gone): entries left without their task.
    pub(crate) fn unlist_agent(
        &self,
        agent: &str,
        batch: &mut sled::Batch,
    ) -> Result<usize, StoreError> {
        let mut removed = 0;
        for tag in [INDEX, INDEXED] {
            let mut prefix = vec![tag, 0];
            prefix.extend_from_slice(agent.as_bytes());
            prefix.push(0);
            for k in self.inner.tasks.scan_prefix(prefix).keys() {
                batch.remove(k?);
                removed += 1;
            }
        }
        self.inner.listed.forget(agent);
        Ok(removed)
    }

    /// Build the listing index of a store written before it existed, once: `listing` reads a
    /// stored record's listing (`Err`: the record is unreadable; it is left out, and listed
    /// once a command or a read fails and rewrites it).
    pub fn listing_index(
        &self,
        listing: impl Fn(&Encoded) -> Result<Listing, StoreError>,
    ) -> Result<(), StoreError> {
        let tasks = &self.inner.tasks;
        if tasks.get(LISTING_MARK)?.is_some() {
            return Ok(());
        }
        let mut listed = 0usize;
        for entry in tasks.scan_prefix(b"t\0") {
            let (k, head) = entry?;
            let key = k
                .get(2..)
                .and_then(TaskKey::from_tail)
                .ok_or_else(|| StoreError::Corrupt("malformed task key".into()))?;
            let Some(record) = super::parts::assemble(tasks, &k, &head)? else {
                continue;
            };
            match super::record_of(&key, &record).and_then(|r| listing(&r)) {
                Ok(found) => {
                    // Its entries, and what they hold in a `k` entry, as the older store's
                    // tasks have it (its deadline stays in its deadline entry): the task's next
                    // write moves both into its value.
                    let found = Indexed {
                        listing: found,
                        deadline: None,
                    };
                    let mut batch = sled::Batch::default();
                    self.relist(&mut batch, &key, None, Some(&found));
                    batch.insert(key.indexed_key(), encode_indexed(&found));
                    tasks.apply_batch(batch)?;
                    listed += 1;
                }
                Err(e) => {
                    tracing::error!(agent = %key.agent, task = %key.task, error = %e,
                        "an unreadable task record is left out of the listing index");
                }
            }
        }
        tasks.insert(LISTING_MARK, &[][..])?;
        tasks.flush()?;
        if listed > 0 {
            tracing::info!(tasks = listed, "built the listing index of an older store");
        }
        Ok(())
    }

    /// A page of the tasks of `agent` in `leader`'s namespace (`None`: the shared one) that
    /// match `query`, in listing order (at most `query.limit`), and how many match over all
    /// pages.
    ///
    /// Cost: the page's entries, plus what the total needs: nothing (no filter, or states only:
    /// the counts), or the matching entries' keys (a session or a time filter: that dimension's
    /// range is counted).
    pub fn list_tasks(
        &self,
        agent: &str,
        leader: Option<&str>,
        query: &ListQuery<'_>,
    ) -> Result<(Vec<Listed>, u64), StoreError> {
        let ns = namespace_prefix(agent, leader);
        let page = |after| -> Result<Vec<Listed>, StoreError> {
            match (query.session, query.states) {
                (Some(session), states) => self.scan(
                    &dimension(&ns, Dim::Session(session)),
                    after,
                    query.changed_after_ms,
                    states,
                    query.limit,
                ),
                (None, states) => {
                    // One range per state (every state: all tasks), merged: each holds at most
                    // a page.
                    let states = states.unwrap_or(&TaskState::ALL);
                    let mut merged = Vec::new();
                    let mut seen = Vec::new();
                    for state in states {
                        if seen.contains(state) {
                            continue;
                        }
                        seen.push(*state);
                        merged.extend(self.scan(
                            &dimension(&ns, Dim::State(*state)),
                            after,
                            query.changed_after_ms,
                            None,
                            query.limit,
                        )?);
                    }
                    merged.sort_unstable();
                    merged.truncate(query.limit);
                    Ok(merged)
                }
            }
        };
        let listed = page(query.after)?;
        let total = match (query.session, query.changed_after_ms) {
            (None, None) => self.inner.listed.of(agent, leader, query.states),
            (Some(_), _) | (None, Some(_)) => {
                let counting = ListQuery {
                    after: None,
                    limit: usize::MAX,
                    ..query.clone()
                };
                self.count(&ns, &counting)?
            }
        };
        Ok((listed, total))
    }

    /// Up to `limit` of the tasks of `agent` in `leader`'s namespace in `session`, in listing
    /// order after `after`, nothing counted: what it costs is the session's entries it reads
    /// (its newest task is one).
    pub fn list_session(
        &self,
        agent: &str,
        leader: Option<&str>,
        session: &str,
        after: Option<(i64, &str)>,
        limit: usize,
    ) -> Result<Vec<Listed>, StoreError> {
        let ns = namespace_prefix(agent, leader);
        self.scan(
            &dimension(&ns, Dim::Session(session)),
            after,
            None,
            None,
            limit,
        )
    }

    /// How many entries match `query` (a session or time filter): keys read, values only when
    /// both session and states are asked.
    fn count(&self, ns: &[u8], query: &ListQuery<'_>) -> Result<u64, StoreError> {
        let mut dims = Vec::new();
        match (query.session, query.states) {
            (Some(session), _) => dims.push(dimension(ns, Dim::Session(session))),
            (None, states) => {
                for state in states.unwrap_or(&TaskState::ALL) {
                    let dim = dimension(ns, Dim::State(*state));
                    if !dims.contains(&dim) {
                        dims.push(dim);
                    }
                }
            }
        }
        let states = query.states.filter(|_| query.session.is_some());
        let mut total = 0u64;
        for dim in dims {
            let end = Self::end_of(&dim, query.changed_after_ms);
            let range = self.inner.tasks.range(dim.clone()..end);
            match states {
                None => {
                    for k in range.keys() {
                        k?;
                        total += 1;
                    }
                }
                Some(states) => {
                    for entry in range {
                        let (_, v) = entry?;
                        if read_entry_value(&v).is_some_and(|(s, _)| states.contains(&s)) {
                            total += 1;
                        }
                    }
                }
            }
        }
        Ok(total)
    }

    /// Where a dimension's entries newer than `changed_after_ms` end (exclusive).
    fn end_of(dim: &[u8], changed_after_ms: Option<i64>) -> Vec<u8> {
        match changed_after_ms {
            // Entries at that instant or before sort from here on.
            Some(after) if after >= 0 => {
                let mut end = dim.to_vec();
                end.extend_from_slice(&inverted(after).to_be_bytes());
                end
            }
            _ => {
                // Past every key with this prefix: all 0xff for the instant and beyond.
                let mut end = dim.to_vec();
                end.extend_from_slice(&[0xff; 9]);
                end
            }
        }
    }

    /// Up to `limit` entries of one dimension after `after`, newer than `changed_after_ms`, in
    /// one of `states` (read from the values; `None`: any).
    fn scan(
        &self,
        dim: &[u8],
        after: Option<(i64, &str)>,
        changed_after_ms: Option<i64>,
        states: Option<&[TaskState]>,
        limit: usize,
    ) -> Result<Vec<Listed>, StoreError> {
        let start = match after {
            Some((ms, task)) => Bound::Excluded(entry_key(dim, ms, task)),
            None => Bound::Included(dim.to_vec()),
        };
        let end = Self::end_of(dim, changed_after_ms);
        let mut out = Vec::new();
        for entry in self.inner.tasks.range((start, Bound::Excluded(end))) {
            if out.len() >= limit {
                break;
            }
            let (k, v) = entry?;
            // Past the prefix (a longer task id of the last instant sorts before 0xff…).
            if !k.starts_with(dim) {
                break;
            }
            if let Some(states) = states
                && !read_entry_value(&v).is_some_and(|(s, _)| states.contains(&s))
            {
                continue;
            }
            let malformed = || StoreError::Corrupt("malformed listing index key".into());
            let tail = k.get(dim.len()..).ok_or_else(malformed)?;
            let (inv, task) = tail.split_first_chunk::<8>().ok_or_else(malformed)?;
            out.push(Listed {
                inverted: u64::from_be_bytes(*inv),
                task_id: std::str::from_utf8(task)
                    .map_err(|_| malformed())?
                    .to_string(),
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::WriteNow;
    use crate::{TaskWrite, Ticket};

    fn listing(changed_ms: i64, state: TaskState, session: Option<&str>) -> Listing {
        Listing {
            changed_ms,
            state,
            session: session.map(str::to_string),
        }
    }

    fn write(store: &Store, key: &TaskKey, l: Listing) -> Ticket {
        store
            .write_task_now(TaskWrite {
                listing: Some(l),
                ..TaskWrite::record_only(key, Encoded::of(&"record").unwrap())
            })
            .unwrap()
    }

    /// What a listing must answer, worked out from every task by brute force.
    fn expected(tasks: &HashMap<String, Listing>, q: &ListQuery<'_>) -> (Vec<(i64, String)>, u64) {
        let mut matching: Vec<(i64, String)> = tasks
            .iter()
            .filter(|(_, l)| q.session.is_none_or(|s| l.session.as_deref() == Some(s)))
            .filter(|(_, l)| q.states.is_none_or(|s| s.contains(&l.state)))
            .filter(|(_, l)| q.changed_after_ms.is_none_or(|a| l.changed_ms > a))
            .map(|(id, l)| (l.changed_ms, id.clone()))
            .collect();
        matching.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let total = matching.len() as u64;
        let page = matching
            .into_iter()
            .filter(|(ms, id)| {
                q.after
                    .is_none_or(|(at, after)| *ms < at || (*ms == at && id.as_str() > after))
            })
            .take(q.limit)
            .collect();
        (page, total)
    }

    fn listed(store: &Store, leader: Option<&str>, q: &ListQuery<'_>) -> (Vec<(i64, String)>, u64) {
        let (page, total) = store.list_tasks("echo", leader, q).unwrap();
        let page = page
            .into_iter()
            .map(|l| (l.changed_ms(), l.task_id))
            .collect();
        (page, total)
    }

    /// Pages in order, every filter and its total, after status changes and a reopen, each
    /// namespace on its own: the same answers as a brute-force look at every task.
    #[tokio::test]
    async fn pages_and_totals_are_those_of_every_task_looked_at() {
        let dir = tempfile::tempdir().unwrap();
        let mut tasks: HashMap<String, Listing> = HashMap::new();
        let sessions = [None, Some("s1"), Some("s\0two")];
        {
            let store = Store::open(dir.path()).unwrap();
            for i in 0..60i64 {
                let id = format!("t{:02}{}", i % 7, if i % 2 == 0 { "" } else { "x" });
                let id = format!("{id}-{i}");
                let state = TaskState::ALL[(i % 8) as usize];
                let l = listing(1_000 + i % 9, state, sessions[(i % 3) as usize]);
                write(&store, &TaskKey::new("echo", &id), l.clone());
                tasks.insert(id, l);
            }
            // Status changes move tasks; another namespace and another agent are apart.
            for (i, id) in ["t00-0", "t01x-1", "t03x-45"].iter().enumerate() {
                let l = listing(5_000 + i as i64, TaskState::Completed, Some("s1"));
                write(&store, &TaskKey::new("echo", *id), l.clone());
                tasks.insert(id.to_string(), l);
            }
            let l = listing(9_000, TaskState::Working, Some("s1"));
            write(
                &store,
                &TaskKey::owned("echo", Some("L"), "t00-0"),
                l.clone(),
            );
            write(&store, &TaskKey::new("other", "t00-0"), l);
        }
        let store = Store::open(dir.path()).unwrap();
        let states = [TaskState::Completed, TaskState::Working];
        let queries = [
            ListQuery::default(),
            ListQuery {
                session: Some("s1"),
                ..Default::default()
            },
            ListQuery {
                session: Some("s\0two"),
                ..Default::default()
            },
            ListQuery {
                states: Some(&states),
                ..Default::default()
            },
            ListQuery {
                states: Some(&states),
                session: Some("s1"),
                ..Default::default()
            },
            ListQuery {
                changed_after_ms: Some(1_004),
                ..Default::default()
            },
            ListQuery {
                changed_after_ms: Some(1_004),
                states: Some(&states),
                ..Default::default()
            },
        ];
        for query in queries {
            for limit in [1, 7, 100] {
                let mut q = ListQuery {
                    limit,
                    ..query.clone()
                };
                let mut seen = Vec::new();
                loop {
                    let (page, total) = listed(&store, None, &q);
                    let (want, want_total) = expected(&tasks, &q);
                    assert_eq!(page, want, "{q:?}");
                    assert_eq!(total, want_total, "{q:?}");
                    // A session's page alone, uncounted, is the same page.
                    if let (Some(session), None, None) = (q.session, q.states, q.changed_after_ms) {
                        let alone: Vec<(i64, String)> = store
                            .list_session("echo", None, session, q.after, limit)
                            .unwrap()
                            .into_iter()
                            .map(|l| (l.changed_ms(), l.task_id))
                            .collect();
                        assert_eq!(alone, want, "{q:?}");
                    }
                    seen.extend(page.iter().cloned());
                    let Some((ms, id)) = page.last().filter(|_| page.len() == limit) else {
                        break;
                    };
                    let id = id.clone();
                    q.after = Some((*ms, Box::leak(id.into_boxed_str())));
                }
                assert_eq!(seen.len() as u64, expected(&tasks, &query).1);
            }
        }
        let leader = listed(
            &store,
            Some("L"),
            &ListQuery {
                limit: 10,
                ..Default::default()
            },
        );
        assert_eq!(leader, (vec![(9_000, "t00-0".to_string())], 1));
    }

    /// A store written before the index gets it built at start-up, once.
    #[tokio::test]
    async fn an_older_store_gets_its_index_built_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for i in 0..5 {
            let key = TaskKey::new("echo", format!("t{i}"));
            store
                .write_task_now(TaskWrite::record_only(&key, Encoded::of(&i).unwrap()))
                .unwrap();
        }
        let all = ListQuery {
            limit: 10,
            ..Default::default()
        };
        assert_eq!(listed(&store, None, &all).1, 0, "not indexed yet");
        let read = |e: &Encoded| {
            let i: i64 = e.decode()?;
            if i == 4 {
                return Err(StoreError::Corrupt("unreadable".into()));
            }
            Ok(listing(i, TaskState::Completed, None))
        };
        store.listing_index(read).unwrap();
        let (page, total) = listed(&store, None, &all);
        assert_eq!(total, 4, "the unreadable one is left out");
        assert_eq!(page[0], (3, "t3".to_string()));
        // Once: a second call finds the mark and builds nothing.
        store.listing_index(|_| panic!("built twice")).unwrap();
    }

    /// A task listed by an older host (a plain record and a `k` entry) is relisted from that
    /// entry, which goes: its value says what is listed from then on, and a deletion finds it.
    #[tokio::test]
    async fn a_task_listed_by_an_older_host_moves_its_listing_into_its_value() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("echo", "t1");
        let first = Indexed {
            listing: listing(5, TaskState::Working, None),
            deadline: None,
        };
        // As an older host left it: the record plain, what is listed in an entry of its own.
        let mut batch = sled::Batch::default();
        store.relist(&mut batch, &key, None, Some(&first));
        batch.insert(key.indexed_key(), encode_indexed(&first));
        batch.insert(key.record_key(), Encoded::of(&"record").unwrap().as_bytes());
        store.inner.tasks.apply_batch(batch).unwrap();
        let all = ListQuery {
            limit: 10,
            ..Default::default()
        };
        assert_eq!(listed(&store, None, &all), (vec![(5, "t1".to_string())], 1));

        write(&store, &key, listing(9, TaskState::Completed, None));
        assert!(!store.inner.tasks.contains_key(key.indexed_key()).unwrap());
        assert_eq!(listed(&store, None, &all), (vec![(9, "t1".to_string())], 1));
        let working = ListQuery {
            states: Some(&[TaskState::Working]),
            ..all.clone()
        };
        assert_eq!(listed(&store, None, &working), (vec![], 0));
        let record: String = store.load_task(&key).unwrap().unwrap();
        assert_eq!(record, "record");

        // Deleted, it leaves no entry behind.
        let batch = store.task_entries_deletion(&key, b"").unwrap();
        store.inner.tasks.apply_batch(batch).unwrap();
        assert_eq!(store.inner.tasks.scan_prefix([INDEX, 0]).count(), 0);
        assert_eq!(listed(&store, None, &all), (vec![], 0));
    }

    /// A listed task's deadline is carried by its entry by state: found by `deadlines` (after a
    /// reopen too), moved by rewriting that entry alone, gone when the task ends; one an older
    /// host stored in an entry of its own is moved there by the task's next write.
    #[tokio::test]
    async fn deadlines_ride_on_the_entries_by_state() {
        let dir = tempfile::tempdir().unwrap();
        let key = TaskKey::owned("echo", Some("L"), "t1");
        let waiting = || listing(5, TaskState::AwaitingInput, Some("s"));
        let deadline_write = |store: &Store, l: Listing, deadline: (Option<i64>, Option<i64>)| {
            store
                .write_task_now(TaskWrite {
                    listing: Some(l),
                    deadline,
                    ..TaskWrite::record_only(&key, Encoded::of(&"record").unwrap())
                })
                .unwrap()
        };
        {
            let store = Store::open(dir.path()).unwrap();
            let before = store.committed_keys();
            deadline_write(&store, waiting(), (None, Some(9_000)));
            // The value, the entry by state, the entry by session: no deadline entry.
            assert_eq!(store.committed_keys() - before, 3);
            assert_eq!(store.deadlines().unwrap(), [(9_000, key.clone())]);
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.deadlines().unwrap(), [(9_000, key.clone())]);
        let before = store.committed_keys();
        deadline_write(&store, waiting(), (Some(9_000), Some(12_000)));
        assert_eq!(
            store.committed_keys() - before,
            2,
            "the value and the entry by state"
        );
        assert_eq!(store.deadlines().unwrap(), [(12_000, key.clone())]);
        // The timers read back those that have come near.
        assert!(store.deadlines_until(11_999).unwrap().is_empty());
        assert_eq!(
            store.deadlines_until(12_000).unwrap(),
            [(12_000, key.clone())]
        );
        let all = ListQuery {
            limit: 10,
            ..Default::default()
        };
        assert_eq!(
            listed(&store, Some("L"), &all),
            (vec![(5, "t1".to_string())], 1)
        );
        deadline_write(
            &store,
            listing(6, TaskState::Completed, Some("s")),
            (Some(12_000), None),
        );
        assert!(store.deadlines().unwrap().is_empty());

        // An older host's task: a plain record, a `k` entry and a deadline entry.
        let old = TaskKey::new("echo", "t2");
        let mut batch = sled::Batch::default();
        let first = Indexed {
            listing: listing(5, TaskState::AwaitingInput, None),
            deadline: None,
        };
        store.relist(&mut batch, &old, None, Some(&first));
        batch.insert(old.indexed_key(), encode_indexed(&first));
        batch.insert(old.record_key(), Encoded::of(&"record").unwrap().as_bytes());
        batch.insert(old.deadline_key(7_000), &[][..]);
        store.inner.tasks.apply_batch(batch).unwrap();
        assert_eq!(store.deadlines().unwrap(), [(7_000, old.clone())]);
        store
            .write_task_now(TaskWrite {
                listing: Some(listing(8, TaskState::AwaitingInput, None)),
                deadline: (Some(7_000), Some(8_000)),
                ..TaskWrite::record_only(&old, Encoded::of(&"record").unwrap())
            })
            .unwrap();
        assert_eq!(store.deadlines().unwrap(), [(8_000, old.clone())]);
        assert!(
            !store
                .inner
                .tasks
                .contains_key(old.deadline_key(7_000))
                .unwrap()
        );
        assert!(!store.inner.tasks.contains_key(old.indexed_key()).unwrap());
    }

    /// The counts built at open skip every namespace's entries by session: the same totals as
    /// before the restart, in every namespace.
    #[tokio::test]
    async fn counts_at_open_are_those_before() {
        let dir = tempfile::tempdir().unwrap();
        let namespaces = [None, Some("L1"), Some("L2")];
        let all = ListQuery {
            limit: 100,
            ..Default::default()
        };
        let mut before = Vec::new();
        {
            let store = Store::open(dir.path()).unwrap();
            for (n, leader) in namespaces.iter().enumerate() {
                for i in 0..(3 + n) {
                    let key = TaskKey::owned("echo", *leader, &format!("t{i}"));
                    let state = [TaskState::Working, TaskState::Completed][i % 2];
                    let session = (i % 3 != 0).then_some("s");
                    write(&store, &key, listing(i as i64, state, session));
                }
                before.push(listed(&store, *leader, &all).1);
            }
        }
        let store = Store::open(dir.path()).unwrap();
        let after: Vec<u64> = namespaces
            .iter()
            .map(|l| listed(&store, *l, &all).1)
            .collect();
        assert_eq!(after, before);
        assert_eq!(after, [3, 4, 5]);
    }

    /// The all-tasks entries an older host wrote are removed at open, once; listings of every
    /// task read the states' entries and find the same tasks.
    #[tokio::test]
    async fn an_older_stores_all_tasks_entries_go_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let key = TaskKey::owned("echo", Some("L"), "t1");
        let all = ListQuery {
            limit: 10,
            ..Default::default()
        };
        {
            let store = Store::open(dir.path()).unwrap();
            write(&store, &key, listing(7, TaskState::Working, Some("s")));
            // As an older host left it: an entry of every task, and no mark.
            let ns = namespace_prefix("echo", Some("L"));
            let mut old = ns.clone();
            old.push(ALL);
            let old = entry_key(&old, 7, "t1");
            store
                .inner
                .tasks
                .insert(
                    old,
                    entry_value(&listing(7, TaskState::Working, Some("s")), None),
                )
                .unwrap();
            store.inner.tasks.remove(ALL_GONE_MARK).unwrap();
            store.inner.tasks.flush().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let tags: Vec<Option<u8>> = store
            .inner
            .tasks
            .scan_prefix([INDEX, 0])
            .keys()
            .map(|k| dimension_tag(&k.unwrap()))
            .collect();
        assert_eq!(tags, [Some(BY_SESSION), Some(BY_STATE)]);
        assert_eq!(
            listed(&store, Some("L"), &all),
            (vec![(7, "t1".to_string())], 1)
        );
    }
}
