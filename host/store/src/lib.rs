//! Durable state in sled, behind an interface of our own so no other module sees sled types.
//!
//! A task's changes go to one committer thread ([`Store::write_task`], `committer.rs`), which
//! applies every change waiting to sled and makes them durable with one record in a write-ahead
//! log of our own and one `fdatasync` (`wal.rs`); other writes go to sled at once and are made
//! durable by the committer's next checkpoint (a flush of sled). Every
//! caller that needs its write on disk awaits [`Store::durable`] with the ticket its write
//! returned. A reply reports only durable state.
//!
//! Layout (all keys namespaced by agent; one tree, so a task's record, events and index entries
//! change in one atomic batch; `{task}` is the task's id scoped to its Leader,
//! [`TaskKey::scoped_task`]):
//! - tree `tasks`: `t\0{agent}\0{task}` → the task's value: its record (JSON), what the listing
//!   index holds for it, and, while they fit in the one entry and the task has not ended, the
//!   newest events and product chunks (`packed.rs`: a `start` writes them as one key);
//!   `d\0{deadline ms, big-endian}{agent}\0{task}` → deadline index entry, for a task written
//!   without a listing or by an older host (a listed task's deadline is carried by its listing
//!   entry by state, `listing.rs`, so a `start` writes no entry for it);
//!   `e\0{agent}\0{task}\0{seq, big-endian}` → the events one write stored outside the task's
//!   value, from that seq on (one event: its JSON; several: a batch, see `event_batch`);
//!   `x\0{ended ms, big-endian}{agent}\0{task}` → ended-task index entry (event retention);
//!   `r\0{delete at ms, big-endian}{agent}\0{task}` → ended ms: when the task is deleted (task
//!   retention, fixed when it ends; see `retention.rs`);
//!   `c\0{agent}\0{task}\0{product id}\0{seq, big-endian}` → the DataItems of one product chunk
//!   stored outside the task's value (products are stored chunk by chunk, so appending costs
//!   the chunk, not the product);
//!   `n\0{agent}\0{task}\0{config id}` → notification config;
//!   `o\0{agent}\0{task}\0{seq, big-endian}` → outbox entry (a notification to deliver, in order);
//!   `g\0{agent}\0{task}\0{seq, big-endian}` → a notification given up on, kept for inspection.
//!   `h\0{agent}\0{task}\0{index, big-endian}` → one command of the task's history (so a
//!   command costs its own bytes, not a rewrite of the record);
//!   `l\0{agent}\0{task}` → `r`: the task is running (accepted or working; stored only once an
//!   invocation's change is written before it rests), so that after a crash the tasks whose
//!   invocation died with the host are found. A waiting task (awaiting input or completion) is
//!   known by its deadline: with these two, start-up counts the tasks that have not ended;
//!   `i\0…` → the listing index, in the order listings page (`listing.rs`; walked across
//!   namespaces by `walk.rs`; `k\0{agent}\0{task}`, what it holds for a task stored before
//!   packing, goes with that task's next write);
//!   `m\0list-index` → marks that the listing index is complete (built once for older stores);
//!   `m\0list-index-2` → marks that an older store's all-tasks listing entries are gone;
//!   `m\0live-index` → marks that the running index is complete (stores written before it
//!   existed get it built once, at start-up);
//!   `m\0wal-applied` → the last committer round applied to sled (`wal.rs`);
//!   `m\0identity` → the store's id and its last checkpoint (`identity.rs`).
//!   `p\0{membership}\0{id, big-endian}` → a task result waiting to be published to a group.
//!   `q\0{agent}\0{task}\0{ms, big-endian}` → a task record that could not be read, set aside
//!   when the engine failed its task (`set_aside.rs`).
//! - tree `kv`: `{agent}\0{a|t}\0{task}\0{key}` → partner value.
//! - tree `groups`: `{membership id}` → group membership (JSON).
//!
//! Files in the store's directory: sled's (`conf`, `db`, `snap.*`), the write-ahead log `wal`,
//! and `identity`, which tells a whole store from one that lost data (`identity.rs`): such a
//! store is refused ([`StoreError::Damaged`]) until its loss is accepted ([`Store::accept_loss`]).
//! [`Store::check`] verifies a stopped store record by record (`check.rs`).

#![deny(missing_docs)]

mod check;
mod committer;
mod configs;
mod encoded;
mod event_batch;
mod gather;
mod groups;
mod identity;
mod listing;
mod outbox;
mod packed;
mod parts;
mod removal;
mod retention;
mod set_aside;
mod space;
mod tenancy;
mod timing;
mod unwind;
mod wal;
mod walk;
mod write_batch;

pub use check::Checked;
pub use configs::WaitingConfigs;
pub use encoded::Encoded;
pub use groups::Pending;
pub use listing::{ListQuery, Listed, Listing};
pub use outbox::{OutboxEntry, Outgoing};
pub use parts::PART_BYTES;
pub use retention::DueTask;
pub use set_aside::SetAside;
pub use space::{DEFAULT_RESERVE_BYTES, Disk, DiskState};
pub use timing::CommitObserver;
pub use walk::{Walk, WalkFrom};

use aiphost_model::notification::NotificationConfig;
pub use committer::PendingWrite;
use committer::{Committer, OnDamage};
use serde::de::DeserializeOwned;
use std::path::Path;
use std::sync::Arc;
use write_batch::{WriteBatch, Writes};

/// Something went wrong with the disk or a record on it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// sled failed.
    #[error("store I/O failed: {0}")]
    Io(#[from] sled::Error),
    /// Another process holds the store (another aiphost serving the same data directory).
    #[error(
        "the store {path} is in use by another process (another aiphost serving the same data directory?); stop that one, or give this one another --data"
    )]
    Locked {
        /// The store's directory.
        path: String,
    },
    /// A value nests deeper than the store can read back: refused, not stored.
    #[error(
        "a value nests {depth} levels deep, deeper than the {limit} the store can read back; it was not stored"
    )]
    TooDeep {
        /// How deep it nests.
        depth: usize,
        /// The most the store takes.
        limit: usize,
    },
    /// The store's disk is (nearly) full: the write was refused before it reached sled, nothing
    /// of it is stored; retry once space returns (see `space.rs`).
    #[error(
        "the disk of the store {path} is full: {free} bytes free, below the {reserve} bytes it keeps in reserve; nothing was stored, retry once space is freed"
    )]
    Full {
        /// The store's directory.
        path: String,
        /// Free bytes found.
        free: u64,
        /// The reserve.
        reserve: u64,
    },
    /// A stored record or key could not be read.
    #[error("a stored record is unreadable: {0}")]
    Corrupt(String),
    /// A flush to disk failed.
    #[error("the store could not make writes durable: {0}")]
    Flush(String),
    /// The store's files could not be opened or its committer started.
    #[error("the store could not start: {0}")]
    Start(#[from] std::io::Error),
    /// The store lost data (a file deleted, replaced by an older copy, cut short or unreadable):
    /// it is not opened until the loss is accepted ([`Store::accept_loss`]).
    #[error(
        "the store in {dir} has lost data: {}. Nothing was changed: restore these files from a backup, or accept the loss to start from what is left",
        problems.join("; ")
    )]
    Damaged {
        /// The store's directory.
        dir: String,
        /// What is missing, each naming its files.
        problems: Vec<String>,
    },
    /// There is no store where one was to be checked.
    #[error("there is no store in {path}")]
    Missing {
        /// Where it was looked for.
        path: String,
    },
}

/// Proof that a write reached sled; await [`Store::durable`] with it before announcing the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Ticket(u64);

/// The key of a task: the agent that hosts it, the Leader whose namespace it lives in, and the id
/// that Leader gave it.
///
/// Two authenticated Leaders may use the same task id: their tasks are two tasks, and neither can
/// name the other's. Everything a Leader is shown carries [`TaskKey::task`], the id it sent; the
/// store keeps the namespace in its keys (`{leader}\u{1f}{task}`, see [`TaskKey::scoped_task`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    /// The agent that hosts the task.
    pub agent: String,
    /// The authenticated Leader (its AIC) that owns the task; `None`: the shared namespace of a
    /// partner whose Leaders do not authenticate.
    pub leader: Option<String>,
    /// The task id as its Leader knows it.
    pub task: String,
}

/// Separates a Leader from its task id in stored keys. Task ids never contain it: they may not
/// hold control characters (`model::task::check_task_id`).
const LEADER_SEPARATOR: char = '\u{1f}';

impl TaskKey {
    /// The key of task `task` of `agent` in the shared namespace (an open partner).
    pub fn new(agent: impl Into<String>, task: impl Into<String>) -> Self {
        TaskKey {
            agent: agent.into(),
            leader: None,
            task: task.into(),
        }
    }

    /// The key of task `task` of `agent` in the namespace of `leader` (an authenticated Leader),
    /// or in the shared one for `None`.
    pub fn owned(agent: &str, leader: Option<&str>, task: &str) -> Self {
        TaskKey {
            agent: agent.to_string(),
            leader: leader.map(str::to_string),
            task: task.to_string(),
        }
    }

    /// The task id as the store keys it: the Leader's namespace and the task id.
    ///
    /// ```
    /// # use aiphost_store::TaskKey;
    /// assert_eq!(TaskKey::new("echo", "t1").scoped_task(), "t1");
    /// assert_eq!(TaskKey::owned("echo", Some("L"), "t1").scoped_task(), "L\u{1f}t1");
    /// ```
    pub fn scoped_task(&self) -> std::borrow::Cow<'_, str> {
        match &self.leader {
            Some(leader) => format!("{leader}{LEADER_SEPARATOR}{}", self.task).into(),
            None => self.task.as_str().into(),
        }
    }

    /// The key whose [`TaskKey::scoped_task`] is `scoped`.
    ///
    /// ```
    /// # use aiphost_store::TaskKey;
    /// let key = TaskKey::from_scoped("echo", "L\u{1f}t1");
    /// assert_eq!((key.leader.as_deref(), key.task.as_str()), (Some("L"), "t1"));
    /// assert_eq!(TaskKey::from_scoped("echo", "t1").leader, None);
    /// ```
    pub fn from_scoped(agent: &str, scoped: &str) -> Self {
        // At the last separator: a task id holds none, whatever a Leader's name might.
        match scoped.rsplit_once(LEADER_SEPARATOR) {
            Some((leader, task)) => TaskKey::owned(agent, Some(leader), task),
            None => TaskKey::new(agent, scoped),
        }
    }

    /// `{agent}\0{scoped task}`.
    fn push_names(&self, k: &mut Vec<u8>) {
        k.extend_from_slice(self.agent.as_bytes());
        k.push(0);
        if let Some(leader) = &self.leader {
            k.extend_from_slice(leader.as_bytes());
            let mut sep = [0u8; 4];
            k.extend_from_slice(LEADER_SEPARATOR.encode_utf8(&mut sep).as_bytes());
        }
        k.extend_from_slice(self.task.as_bytes());
    }

    fn names_len(&self) -> usize {
        self.agent.len() + 2 + self.leader.as_ref().map_or(0, |l| l.len() + 1) + self.task.len()
    }

    fn record_key(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(2 + self.names_len());
        k.extend_from_slice(b"t\0");
        self.push_names(&mut k);
        k
    }

    fn timed_key(&self, tag: u8, at_ms: i64) -> Vec<u8> {
        let mut k = Vec::with_capacity(10 + self.names_len());
        k.extend_from_slice(&[tag, 0]);
        k.extend_from_slice(&(at_ms.max(0) as u64).to_be_bytes());
        self.push_names(&mut k);
        k
    }

    fn deadline_key(&self, at_ms: i64) -> Vec<u8> {
        self.timed_key(b'd', at_ms)
    }

    fn events_prefix(&self) -> Vec<u8> {
        self.tagged_prefix(b'e')
    }

    fn product_prefix(&self, product: &str) -> Vec<u8> {
        let mut k = self.tagged_prefix(b'c');
        k.extend_from_slice(product.as_bytes());
        k.push(0);
        k
    }

    /// `{tag}\0{agent}\0{scoped task}\0`: the prefix of this task's entries of a kind.
    fn tagged_prefix(&self, tag: u8) -> Vec<u8> {
        let mut k = Vec::with_capacity(3 + self.names_len() + 8);
        k.extend_from_slice(&[tag, 0]);
        self.push_names(&mut k);
        k.push(0);
        k
    }

    fn seq_key(&self, tag: u8, seq: u64) -> Vec<u8> {
        let mut k = self.tagged_prefix(tag);
        k.extend_from_slice(&seq.to_be_bytes());
        k
    }

    fn live_key(&self) -> Vec<u8> {
        let mut k = Vec::with_capacity(2 + self.names_len());
        k.extend_from_slice(b"l\0");
        self.push_names(&mut k);
        k
    }

    fn config_key(&self, config: &str) -> Vec<u8> {
        let mut k = self.tagged_prefix(b'n');
        k.extend_from_slice(config.as_bytes());
        k
    }

    fn event_key(&self, seq: u64) -> Vec<u8> {
        let mut k = self.events_prefix();
        k.extend_from_slice(&seq.to_be_bytes());
        k
    }

    /// The instant and the task of a time index key (`timed_key`).
    fn from_timed_key(k: &[u8]) -> Result<(i64, TaskKey), StoreError> {
        let at = k
            .get(2..10)
            .and_then(|b| b.try_into().ok())
            .and_then(|b| i64::try_from(u64::from_be_bytes(b)).ok());
        at.zip(k.get(10..).and_then(TaskKey::from_tail))
            .ok_or_else(|| StoreError::Corrupt("malformed time index key".into()))
    }

    /// Parse the agent and task out of a timed index key's tail.
    fn from_tail(tail: &[u8]) -> Option<TaskKey> {
        let rest = std::str::from_utf8(tail).ok()?;
        let (agent, task) = rest.split_once('\0')?;
        Some(TaskKey::from_scoped(agent, task))
    }
}

/// Whether a task that has not ended is running or waiting (its entry in the live index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Accepted or working: an invocation drives it.
    Running,
    /// Awaiting input or completion: it waits for its Leader or its timer.
    Waiting,
}

/// Marks a store whose live index is complete.
const LIVE_INDEX_MARK: &[u8] = b"m\0live-index";

/// One change of a task, written atomically: the record, its deadline index entry, new events,
/// events dropped by retention, and the ended-task index entry.
pub struct TaskWrite<'a> {
    /// The task written.
    pub key: &'a TaskKey,
    /// The record (`None`: it did not change, as when a command that changes nothing only adds
    /// to the history).
    pub record: Option<Encoded>,
    /// The deadline the index holds now, and the one it should hold.
    pub deadline: (Option<i64>, Option<i64>),
    /// Whether the task has not ended and how, as stored now and as it should be (`None`: it
    /// has ended). Only a running task has an index entry of its own.
    pub live: (Option<Liveness>, Option<Liveness>),
    /// History entries to store: `(index, entry)`.
    pub history: Vec<(u64, Encoded)>,
    /// History entries to delete, by index.
    pub history_dropped: Vec<u64>,
    /// New events: `(seq, event)`.
    pub events: Vec<(u64, Encoded)>,
    /// Drop stored events with seq below this (count retention).
    pub trim_below: Option<u64>,
    /// The task ended at this instant (Unix ms): index it for age retention.
    pub ended_at: Option<i64>,
    /// When the task, if it ended with this change, is to be deleted (Unix ms; `None`: kept).
    pub delete_at: Option<i64>,
    /// Product chunks to store: `(product id, seq, DataItems as JSON, replaces the product)`.
    pub chunks: Vec<ChunkWrite>,
    /// Notifications to deliver: `(seq, entry)`.
    pub outbox: Vec<(u64, OutboxEntry)>,
    /// Results to publish to group memberships: `(membership, message)`.
    pub published: Vec<(String, Outgoing)>,
    /// Where the task sorts in listings now (`None`: as it did; given with every record).
    pub listing: Option<Listing>,
    /// Notification configs of the task to store (each replacing the one with its id): a config
    /// sent with the command that makes this change is stored with it, or not at all.
    pub configs: Vec<NotificationConfig>,
    /// The writer knows the store holds nothing of the task yet (it read no record of it, and
    /// every write of it goes through the writer): nothing stored is read to be carried or
    /// replaced. A task's first write is most of a durable start's writes, and the look-ups it
    /// skips find nothing (issue 35).
    pub new_task: bool,
}

impl<'a> TaskWrite<'a> {
    /// A write of `record` alone; struct-update syntax fills in the rest.
    ///
    /// ```
    /// # use aiphost_store::{Encoded, TaskKey, TaskWrite};
    /// let key = TaskKey::new("echo", "t1");
    /// let write = TaskWrite {
    ///     ended_at: Some(1_000),
    ///     ..TaskWrite::record_only(&key, Encoded::of(&"the record").unwrap())
    /// };
    /// assert!(write.events.is_empty());
    /// ```
    pub fn record_only(key: &'a TaskKey, record: Encoded) -> Self {
        TaskWrite {
            record: Some(record),
            ..TaskWrite::without_record(key)
        }
    }

    /// A write that leaves the record as it is; struct-update syntax fills in the rest.
    pub fn without_record(key: &'a TaskKey) -> Self {
        TaskWrite {
            key,
            record: None,
            deadline: (None, None),
            live: (None, None),
            history: Vec::new(),
            history_dropped: Vec::new(),
            events: Vec::new(),
            trim_below: None,
            ended_at: None,
            delete_at: None,
            chunks: Vec::new(),
            outbox: Vec::new(),
            published: Vec::new(),
            listing: None,
            configs: Vec::new(),
            new_task: false,
        }
    }
}

/// The stored part of one product chunk.
pub struct ChunkWrite {
    /// The product's id.
    pub product: String,
    /// The seq of the chunk's event: a product's chunks are read back in this order.
    pub seq: u64,
    /// The chunk's DataItems.
    pub items: Encoded,
    /// The chunk starts the product afresh: its earlier chunks are dropped.
    pub replaces: bool,
}

/// Whose key-value entries: one task's, or the whole agent's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvScope<'a> {
    /// The entries of one task, by its scoped id ([`TaskKey::scoped_task`]).
    Task(&'a str),
    /// The agent's own entries, shared by all its tasks.
    Agent,
}

/// The host's durable store.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    db: sled::Db,
    tasks: sled::Tree,
    kv: sled::Tree,
    groups: sled::Tree,
    tenancy: sled::Tree,
    commit: Committer,
    /// Listed tasks per namespace and state (`listing.rs`).
    listed: listing::Counts,
    /// Who hears how long the committer's rounds and syncs take.
    timing: Arc<timing::Timing>,
    /// Keeps writers of one key apart where nothing else does (a value's parts are replaced by
    /// reading its head first).
    keys: KeyLocks,
    /// Room on the disk: writes are refused before sled meets a full one.
    space: space::Space,
}

/// A few locks, one per key by its hash: two writers of one key never overlap (two of different
/// keys rarely wait for each other).
struct KeyLocks([std::sync::Mutex<()>; 64]);

impl KeyLocks {
    fn new() -> Self {
        KeyLocks(std::array::from_fn(|_| std::sync::Mutex::new(())))
    }

    fn lock(&self, key: &[u8]) -> std::sync::MutexGuard<'_, ()> {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(key);
        self.0[(hash % 64) as usize]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }
}

impl Store {
    /// Open (or create) the store under `dir` with the default cache (64 MiB). Must be called
    /// inside a tokio runtime.
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        Self::open_with_cache(dir, DEFAULT_CACHE_BYTES)
    }

    /// Open the store with a page cache of `cache_bytes`. A store that lost data is refused
    /// ([`StoreError::Damaged`]) and left as it was.
    pub fn open_with_cache(dir: &Path, cache_bytes: u64) -> Result<Self, StoreError> {
        Self::open_as(dir, cache_bytes, OnDamage::Refuse).map(|(store, _)| store)
    }

    /// Open the store under `dir` whatever it lost, give it its identity anew so that the next
    /// [`Store::open`] takes it, and close it. Returns what was lost (empty: the store was
    /// whole). When sled cannot read its files at all, they are moved aside (into
    /// `damaged-{unix seconds}` in `dir`, nothing is deleted) and the store starts from what the
    /// write-ahead log holds.
    pub fn accept_loss(dir: &Path) -> Result<Vec<String>, StoreError> {
        if !dir.is_dir() {
            return Err(StoreError::Missing {
                path: dir.display().to_string(),
            });
        }
        let (store, accepted) = Self::open_as(dir, DEFAULT_CACHE_BYTES, OnDamage::Accept)?;
        drop(store);
        Ok(accepted)
    }

    fn open_as(
        dir: &Path,
        cache_bytes: u64,
        on_damage: OnDamage,
    ) -> Result<(Self, Vec<String>), StoreError> {
        match Self::start(dir, cache_bytes, on_damage) {
            // Only a store sled cannot read is refused when its loss is accepted.
            Err(StoreError::Damaged { problems, .. }) if on_damage == OnDamage::Accept => {
                let aside = set_aside(dir)?;
                let (store, mut accepted) = Self::start(dir, cache_bytes, on_damage)?;
                let mut lost = problems;
                lost.push(format!("sled's files were moved to {}", aside.display()));
                lost.append(&mut accepted);
                Ok((store, lost))
            }
            other => other,
        }
    }

    fn start(
        dir: &Path,
        cache_bytes: u64,
        on_damage: OnDamage,
    ) -> Result<(Self, Vec<String>), StoreError> {
        let sled = open_sled(dir, cache_bytes, LOCK_WAIT)?;
        // The committer checkpoints with an fdatasync of sled's log, the file `db`, and logs
        // task changes ahead of sled in the file `wal` beside it.
        let log = std::fs::File::open(dir.join("db"))?;
        let (db, tasks) = (sled.db.clone(), sled.tasks.clone());
        let timing = Arc::new(timing::Timing::default());
        let committer_timing = timing.clone();
        // Recovery reads what sled recovered, where sled may meet damage its open did not.
        let (commit, accepted) =
            unwind::quietly(|| Committer::start(db, tasks, log, dir, on_damage, committer_timing))
                .map_err(|panic| unreadable(dir, &panic))??;
        let store = Store {
            inner: Arc::new(Inner {
                db: sled.db,
                tasks: sled.tasks,
                kv: sled.kv,
                groups: sled.groups,
                tenancy: sled.tenancy,
                commit,
                listed: listing::Counts::default(),
                timing,
                keys: KeyLocks::new(),
                space: space::Space::new(dir.to_path_buf()),
            }),
        };
        store.forget_all_entries()?;
        store.count_listed()?;
        Ok((store, accepted))
    }

    /// Read a task record.
    pub fn load_task<T: DeserializeOwned>(&self, key: &TaskKey) -> Result<Option<T>, StoreError> {
        match parts::get(&self.inner.tasks, &key.record_key())? {
            None => Ok(None),
            Some(bytes) => record_of(key, &bytes)?
                .decode()
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("task {}/{}: {e}", key.agent, key.task))),
        }
    }

    /// Whether a task is stored (without reading its record).
    pub fn has_task(&self, key: &TaskKey) -> Result<bool, StoreError> {
        Ok(self.inner.tasks.contains_key(key.record_key())?)
    }

    /// Hand one change of a task to the committer, to be applied atomically, merged with the
    /// changes of other tasks in its next round. Once [`PendingWrite::applied`] returns, the
    /// change is visible to readers; [`Store::durable`] with its ticket waits until it is on
    /// disk. The caller keeps a task's writes apart (one at a time, each applied before the
    /// next is made): the parts a change replaces are read from what sled holds when it is
    /// made.
    pub fn write_task(&self, write: TaskWrite<'_>) -> Result<PendingWrite, StoreError> {
        self.inner.space.writable()?;
        let batch = self.task_batch(write)?;
        Ok(self.inner.commit.apply(batch))
    }

    /// The writes of one change of a task.
    fn task_batch(&self, write: TaskWrite<'_>) -> Result<WriteBatch, StoreError> {
        let key = write.key;
        let (tasks, db) = (&self.inner.tasks, &self.inner.db);
        let mut batch = WriteBatch::default();
        let running = |live: Option<Liveness>| live == Some(Liveness::Running);
        match (running(write.live.0), running(write.live.1)) {
            (false, true) => batch.insert(key.live_key(), &b"r"[..]),
            (true, false) => batch.remove(key.live_key()),
            _ => {}
        }
        for index in write.history_dropped {
            let entry_key = key.seq_key(b'h', index);
            if let Some(head) = tasks.get(&entry_key)? {
                parts::remove(&mut batch, &entry_key, &head);
            }
        }
        for (index, entry) in write.history {
            parts::insert(
                &mut batch,
                db,
                &key.seq_key(b'h', index),
                entry.as_bytes(),
                None,
            )?;
        }
        let mut events = write.events;
        if let Some(below) = write.trim_below {
            // Every stored entry that starts below `below` goes; the newest of them may also hold
            // events at or after it, which stay, under a key of their own.
            let prefix = key.events_prefix();
            for entry in tasks.range(prefix.clone()..key.event_key(below)) {
                let (k, head) = entry?;
                // The engine writes a task one change at a time: nothing replaces these meanwhile.
                let Some(value) = parts::assemble(tasks, &k, &head)? else {
                    continue;
                };
                let kept: Vec<(u64, &[u8])> = stored_events(&prefix, &k, &value)?
                    .into_iter()
                    .filter(|(seq, _)| *seq >= below)
                    .collect();
                if let Some((first, _)) = kept.first() {
                    let tail = event_batch::encode(&kept);
                    parts::insert(&mut batch, db, &key.event_key(*first), &tail, None)?;
                }
                parts::remove(&mut batch, &k, &head);
            }
            events.retain(|(seq, _)| *seq >= below);
        }
        // One write may carry several chunks of a product (an invocation's chunks are written
        // together): a replacing chunk drops the stored chunks and the earlier ones of this write.
        let chunks = &write.chunks;
        let kept: Vec<bool> = (0..chunks.len())
            .map(|i| {
                !chunks[i + 1..]
                    .iter()
                    .any(|later| later.replaces && later.product == chunks[i].product)
            })
            .collect();
        let chunks: Vec<ChunkWrite> = write
            .chunks
            .into_iter()
            .zip(kept)
            .filter_map(|(chunk, kept)| kept.then_some(chunk))
            .collect();
        // Of a product's chunks in this write, only the last replacing one is kept, so one scan
        // per product at most.
        if !write.new_task {
            for chunk in chunks.iter().filter(|c| c.replaces) {
                for old in tasks.scan_prefix(key.product_prefix(&chunk.product)) {
                    let (k, head) = old?;
                    parts::remove(&mut batch, &k, &head);
                }
            }
        }
        let ended = write.ended_at.is_some()
            || write
                .listing
                .as_ref()
                .is_some_and(|l| l.state.is_terminal());
        let mut keyed_events: Vec<(u64, &[u8])> = Vec::new();
        let mut keyed_chunks: Vec<(&str, u64, &[u8])> = Vec::new();
        // Read before `record` is matched: the old value's inline events and chunks borrow it.
        let record_key = key.record_key();
        let old_head = match &write.record {
            Some(_) if !write.new_task => tasks.get(&record_key)?,
            _ => None,
        };
        let old_value = match &old_head {
            Some(head) => parts::assemble(tasks, &record_key, head)?,
            None => None,
        };
        let old_value = old_value.as_deref().map(packed::Unpacked::new);
        // A value that does not parse has been set aside (`set_aside.rs`) before the engine
        // writes over it: nothing of it is carried.
        let old = match old_value.as_ref().map(|v| match v {
            Ok(v) => v.read(),
            Err(e) => Err(e.clone()),
        }) {
            Some(Ok(old)) => old,
            Some(Err(e)) => {
                tracing::warn!(agent = %key.agent, task = %key.task, error = %e,
                    "an unreadable task value is replaced whole");
                packed::Packed::default()
            }
            None => packed::Packed::default(),
        };
        // What the listing index holds for the task now, and what its value says from now on:
        // with a listing, the deadline is carried by the entry by state (`listing.rs`), and one
        // an older host stored in an entry of its own goes; without, it has an entry of its own.
        let (old_deadline, new_deadline) = write.deadline;
        let listed = match &write.listing {
            Some(listing) => {
                // A task stored for the first time has nothing listed yet: nothing to read.
                let (now, older) = match old_value {
                    Some(_) => self.listed_now(&mut batch, key, Some(&old))?,
                    None => (None, false),
                };
                if let (true, Some(at)) = (older, old_deadline) {
                    batch.remove(key.deadline_key(at));
                }
                let new = listing::Indexed {
                    listing: listing.clone(),
                    deadline: new_deadline,
                };
                Some((now, new))
            }
            None => {
                if old_deadline != new_deadline {
                    if let Some(at) = old_deadline {
                        batch.remove(key.deadline_key(at));
                    }
                    if let Some(at) = new_deadline {
                        batch.insert(key.deadline_key(at), &[][..]);
                    }
                }
                None
            }
        };
        let said = listed.as_ref().map(|(_, new)| listing::encode_indexed(new));
        let mut new_value = None;
        match &write.record {
            Some(record) => {
                // What stays inline: the old value's events after the trim and its chunks not
                // replaced, then this write's (packed.rs has the rules).
                let replaced =
                    |product: &str| chunks.iter().any(|c| c.replaces && c.product == product);
                let below = write.trim_below.unwrap_or(0);
                let mut value = packed::Packed {
                    listing: said.as_deref().unwrap_or(old.listing),
                    record: record.as_bytes(),
                    events: old
                        .events
                        .into_iter()
                        .filter(|(seq, _)| *seq >= below)
                        .collect(),
                    chunks: old
                        .chunks
                        .into_iter()
                        .filter(|c| !replaced(c.product))
                        .collect(),
                };
                value
                    .events
                    .extend(events.iter().map(|(seq, e)| (*seq, e.as_bytes())));
                value
                    .chunks
                    .extend(chunks.iter().map(|c| packed::InlineChunk {
                        product: &c.product,
                        seq: c.seq,
                        items: c.items.as_bytes(),
                    }));
                if ended || !value.fits() {
                    keyed_events = std::mem::take(&mut value.events);
                    if !value.fits() {
                        keyed_chunks = std::mem::take(&mut value.chunks)
                            .into_iter()
                            .map(|c| (c.product, c.seq, c.items))
                            .collect();
                    }
                }
                // Written after the keys it moves events and chunks to: a reader that meets
                // the value without them finds them there (sled applies a round key by key).
                // Compressed only once the task rests or has ended: a running task's value is
                // written again with its next report (a partner streaming a product rewrites
                // it per chunk), so compressing it, and decompressing it to write the next,
                // would cost CPU on every report for bytes sled soon drops.
                new_value = Some(match write.live.1 {
                    Some(Liveness::Running) => value.encode_uncompressed(),
                    _ => value.encode(),
                });
            }
            None => {
                keyed_events = events.iter().map(|(seq, e)| (*seq, e.as_bytes())).collect();
                keyed_chunks = chunks
                    .iter()
                    .map(|c| (c.product.as_str(), c.seq, c.items.as_bytes()))
                    .collect();
            }
        }
        if let Some((first, _)) = keyed_events.first() {
            let value = event_batch::encode(&keyed_events);
            parts::insert(&mut batch, db, &key.event_key(*first), &value, None)?;
        }
        for (product, seq, items) in keyed_chunks {
            let mut chunk_key = key.product_prefix(product);
            chunk_key.extend_from_slice(&seq.to_be_bytes());
            parts::insert(&mut batch, db, &chunk_key, items, None)?;
        }
        if let Some(value) = new_value {
            parts::insert(&mut batch, db, &record_key, &value, old_head.as_deref())?;
        }
        if let Some(at) = write.ended_at {
            batch.insert(key.timed_key(b'x', at), &[][..]);
            if let Some(delete_at) = write.delete_at {
                batch.insert(key.timed_key(b'r', delete_at), at.to_be_bytes().to_vec());
            }
        }
        for config in write.configs {
            let config_key = key.config_key(&config.id);
            let old = tasks.get(&config_key)?;
            parts::insert(
                &mut batch,
                db,
                &config_key,
                &to_json(&config)?,
                old.as_deref(),
            )?;
        }
        for (seq, entry) in write.outbox {
            let bytes = to_json(&entry)?;
            parts::insert(&mut batch, db, &key.seq_key(b'o', seq), &bytes, None)?;
        }
        for (membership, message) in write.published {
            let mut k = groups::outbox_prefix(&membership);
            k.extend_from_slice(&self.inner.db.generate_id()?.to_be_bytes());
            parts::insert(&mut batch, db, &k, &to_json(&message)?, None)?;
        }
        // Last: the listing counts change with it, and nothing after it may fail.
        if let Some((now, new)) = listed {
            self.relist(&mut batch, key, now, Some(&new));
        }
        Ok(batch)
    }

    /// The first pending notification of a task: `(seq, entry)`; the entry is `None` when it
    /// cannot be read (remove it with [`Store::outbox_remove`]).
    pub fn outbox_head(
        &self,
        key: &TaskKey,
    ) -> Result<Option<(u64, Option<OutboxEntry>)>, StoreError> {
        let prefix = key.tagged_prefix(b'o');
        match self.inner.tasks.scan_prefix(&prefix).next() {
            None => Ok(None),
            Some(entry) => {
                let (k, head) = entry?;
                let seq = k
                    .get(prefix.len()..)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_be_bytes)
                    .ok_or_else(|| StoreError::Corrupt("malformed outbox key".into()))?;
                // Delivered and removed while read: the next head is for the next loop.
                let value = parts::assemble(&self.inner.tasks, &k, &head)?;
                Ok(value.map(|v| (seq, serde_json::from_slice(&v).ok())))
            }
        }
    }

    /// Replace a pending notification (after a failed attempt).
    pub fn outbox_update(
        &self,
        key: &TaskKey,
        seq: u64,
        entry: &OutboxEntry,
    ) -> Result<Ticket, StoreError> {
        let entry = to_json(entry)?;
        let tasks = &self.inner.tasks;
        let entry_key = key.seq_key(b'o', seq);
        let _writing = self.inner.keys.lock(&entry_key);
        let mut batch = sled::Batch::default();
        let old = tasks.get(&entry_key)?;
        parts::insert(
            &mut batch,
            &self.inner.db,
            &entry_key,
            &entry,
            old.as_deref(),
        )?;
        tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Be done with a pending notification's config: delivered, or (with `given_up`: the
    /// config's id and the record) moved to the given-up list. The entry leaves the outbox, or,
    /// when it goes on to another config, becomes `next`, in the same write.
    pub fn outbox_remove(
        &self,
        key: &TaskKey,
        seq: u64,
        given_up: Option<(&str, &Encoded)>,
        next: Option<&OutboxEntry>,
    ) -> Result<Ticket, StoreError> {
        let tasks = &self.inner.tasks;
        let mut batch = sled::Batch::default();
        let entry_key = key.seq_key(b'o', seq);
        let _writing = self.inner.keys.lock(&entry_key);
        let old = tasks.get(&entry_key)?;
        match (next, &old) {
            (Some(next), _) => {
                let db = &self.inner.db;
                parts::insert(&mut batch, db, &entry_key, &to_json(next)?, old.as_deref())?;
            }
            (None, Some(head)) => parts::remove(&mut batch, &entry_key, head),
            (None, None) => {}
        }
        if let Some((config_id, record)) = given_up {
            // One change may be given up on for each of its task's configs.
            let mut given_key = key.seq_key(b'g', seq);
            given_key.extend_from_slice(config_id.as_bytes());
            let old = tasks.get(&given_key)?;
            parts::insert(
                &mut batch,
                &self.inner.db,
                &given_key,
                record.as_bytes(),
                old.as_deref(),
            )?;
        }
        tasks.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Tasks with pending notifications.
    pub fn outbox_tasks(&self) -> Result<Vec<TaskKey>, StoreError> {
        let mut tasks: Vec<TaskKey> = Vec::new();
        for k in self.inner.tasks.scan_prefix(b"o\0").keys() {
            let k = k?;
            let tail = k.get(2..k.len().saturating_sub(9)).unwrap_or_default();
            if let Some(task) = TaskKey::from_tail(tail)
                && tasks.last() != Some(&task)
            {
                tasks.push(task);
            }
        }
        Ok(tasks)
    }

    /// Notifications given up on (all agents), oldest task first.
    pub fn given_up(&self, limit: usize) -> Result<Vec<Encoded>, StoreError> {
        let tasks = &self.inner.tasks;
        tasks
            .scan_prefix(b"g\0")
            .filter_map(|entry| match entry {
                Ok((k, head)) => parts::assemble(tasks, &k, &head)
                    .map(|v| v.map(|v| Encoded::from_stored(v.into_owned())))
                    .transpose(),
                Err(e) => Some(Err(e.into())),
            })
            .take(limit)
            .collect()
    }

    /// The stored records of `agent`'s tasks in the namespace of `leader` (`None`: the shared
    /// namespace of an open partner), in key order. A record removed while the scan passes is
    /// left out.
    pub fn task_records<'s>(
        &'s self,
        agent: &str,
        leader: Option<&str>,
    ) -> impl Iterator<Item = Result<(TaskKey, Encoded), StoreError>> + 's {
        let mut prefix = b"t\0".to_vec();
        prefix.extend_from_slice(agent.as_bytes());
        prefix.push(0);
        if let Some(leader) = leader {
            prefix.extend_from_slice(leader.as_bytes());
            let mut sep = [0u8; 4];
            prefix.extend_from_slice(LEADER_SEPARATOR.encode_utf8(&mut sep).as_bytes());
        }
        let tasks = &self.inner.tasks;
        let leader = leader.map(str::to_string);
        tasks.scan_prefix(prefix).filter_map(move |entry| {
            let read = || {
                let (k, head) = entry?;
                let key = k
                    .get(2..)
                    .and_then(TaskKey::from_tail)
                    .ok_or_else(|| StoreError::Corrupt("malformed task key".into()))?;
                // The shared namespace's prefix is every namespace's: keep its own keys only.
                if key.leader != leader {
                    return Ok(None);
                }
                let Some(value) = parts::assemble(tasks, &k, &head)? else {
                    return Ok(None);
                };
                let record = record_of(&key, &value)?;
                Ok(Some((key, record)))
            };
            read().transpose()
        })
    }

    /// The stored history entries of a task: `(index, entry)`, in order.
    pub fn command_history(&self, key: &TaskKey) -> Result<Vec<(u64, Encoded)>, StoreError> {
        let prefix = key.tagged_prefix(b'h');
        let tasks = &self.inner.tasks;
        tasks
            .scan_prefix(&prefix)
            .filter_map(|entry| {
                let read = || {
                    let (k, head) = entry?;
                    let index = k
                        .get(prefix.len()..)
                        .and_then(|b| b.try_into().ok())
                        .map(u64::from_be_bytes)
                        .ok_or_else(|| StoreError::Corrupt("malformed history key".into()))?;
                    let value = parts::assemble(tasks, &k, &head)?;
                    Ok(value.map(|v| (index, Encoded::from_stored(v.into_owned()))))
                };
                read().transpose()
            })
            .collect()
    }

    /// Every running task (accepted or working, as last written).
    ///
    /// A store written before the running index existed gets it built first, once: `liveness`
    /// tells it from a stored record (`Err`: the record is unreadable).
    pub fn running_tasks(
        &self,
        liveness: impl Fn(&Encoded) -> Result<Option<Liveness>, StoreError>,
    ) -> Result<Vec<TaskKey>, StoreError> {
        let tasks = &self.inner.tasks;
        if tasks.get(LIVE_INDEX_MARK)?.is_none() {
            let mut batch = sled::Batch::default();
            let mut built = 0usize;
            let mut scanned = 0usize;
            for entry in tasks.scan_prefix(b"t\0") {
                let (k, head) = entry?;
                scanned += 1;
                let key = k
                    .get(2..)
                    .and_then(TaskKey::from_tail)
                    .ok_or_else(|| StoreError::Corrupt("malformed task key".into()))?;
                let Some(record) = parts::assemble(tasks, &k, &head)? else {
                    continue;
                };
                // One unreadable record must not keep the host from starting: it is left out
                // of the index (and fails loudly when a command loads it).
                let live = match record_of(&key, &record).and_then(|r| liveness(&r)) {
                    Ok(live) => live,
                    Err(e) => {
                        tracing::error!(agent = %key.agent, task = %key.task, error = %e,
                            "an unreadable task record is left out of the running index");
                        continue;
                    }
                };
                if live == Some(Liveness::Running) {
                    batch.insert(key.live_key(), &b"r"[..]);
                    built += 1;
                }
            }
            batch.insert(LIVE_INDEX_MARK, &[][..]);
            tasks.apply_batch(batch)?;
            tasks.flush()?;
            // A new store gets its (empty) index here too: nothing to say about it.
            if scanned > 0 {
                tracing::info!(
                    tasks = scanned,
                    running = built,
                    "built the running-task index of an older store"
                );
            }
        }
        tasks
            .scan_prefix(b"l\0")
            .keys()
            .map(|k| {
                k?.get(2..)
                    .and_then(TaskKey::from_tail)
                    .ok_or_else(|| StoreError::Corrupt("malformed running index entry".into()))
            })
            .collect()
    }

    /// The stored chunks of one product of a task, in order: each its DataItems.
    pub fn product_chunks(&self, key: &TaskKey, product: &str) -> Result<Vec<Encoded>, StoreError> {
        let tasks = &self.inner.tasks;
        // Inline chunks are newer than keyed ones (`packed.rs`); read first, so a write that
        // moves them to keys meanwhile leaves them to be met there.
        let record = parts::get(tasks, &key.record_key())?;
        let value = unpacked(key, record.as_deref())?;
        let inline = stored_value(key, value.as_ref())?.chunks;
        let mut out = Vec::new();
        let mut last = None;
        for entry in tasks.scan_prefix(key.product_prefix(product)) {
            let (k, head) = entry?;
            let seq = k
                .len()
                .checked_sub(8)
                .and_then(|at| k.get(at..))
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map(u64::from_be_bytes);
            if let Some(value) = parts::assemble(tasks, &k, &head)? {
                out.push(Encoded::from_stored(value.into_owned()));
                last = last.max(seq);
            }
        }
        for chunk in inline {
            if chunk.product == product && Some(chunk.seq) > last {
                out.push(Encoded::from_stored(chunk.items.to_vec()));
            }
        }
        Ok(out)
    }

    /// Up to `limit` stored events of a task with seq greater than `after`, in order.
    pub fn events_after(
        &self,
        key: &TaskKey,
        after: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Encoded)>, StoreError> {
        // The inline events are newer than the keyed ones (`packed.rs`); read first, so a write
        // that moves them to a key meanwhile leaves them to be met there.
        let record = parts::get(&self.inner.tasks, &key.record_key())?;
        let value = unpacked(key, record.as_deref())?;
        let inline = stored_value(key, value.as_ref())?.events;
        let prefix = key.events_prefix();
        let mut wanted = after.saturating_add(1);
        // The entry holding `wanted` is the last one that starts at or before it.
        let start = match self
            .inner
            .tasks
            .range(prefix.clone()..=key.event_key(wanted))
            .next_back()
        {
            Some(entry) => entry?.0,
            None => key.event_key(wanted).into(),
        };
        let mut out = Vec::new();
        for entry in self.inner.tasks.range(start..) {
            let (k, head) = entry?;
            if !k.starts_with(&prefix) || out.len() >= limit {
                break;
            }
            // Trimmed while read: its tail, if any, is under a higher key, met next.
            let Some(value) = parts::assemble(&self.inner.tasks, &k, &head)? else {
                continue;
            };
            for (seq, event) in stored_events(&prefix, &k, &value)? {
                // A trim that runs while this reads moves the tail of the entry it cuts to a
                // higher key, where sled's iterator (no snapshot) may meet it again.
                if seq >= wanted && out.len() < limit {
                    out.push((seq, Encoded::from_stored(event.to_vec())));
                    wanted = seq + 1;
                }
            }
        }
        for (seq, event) in inline {
            if seq >= wanted && out.len() < limit {
                out.push((seq, Encoded::from_stored(event.to_vec())));
                wanted = seq + 1;
            }
        }
        Ok(out)
    }

    /// The oldest stored event of a task, if any.
    pub fn first_event_seq(&self, key: &TaskKey) -> Result<Option<u64>, StoreError> {
        Ok(self.events_after(key, 0, 1)?.first().map(|(seq, _)| *seq))
    }

    /// Every pending deadline: `(at_ms, task)`, earliest first. Those of listed tasks are
    /// carried by their listing entries (read for the tasks that have not ended); those written
    /// without a listing, or by an older host, have entries of their own.
    pub fn deadlines(&self) -> Result<Vec<(i64, TaskKey)>, StoreError> {
        self.deadlines_until(i64::MAX)
    }

    /// The pending deadlines at or before `until_ms`, earliest first (the timers read those that
    /// have come near: `aiphost_engine`'s `timers.rs`).
    pub fn deadlines_until(&self, until_ms: i64) -> Result<Vec<(i64, TaskKey)>, StoreError> {
        let mut out = self.indexed_deadlines(until_ms)?;
        for entry in self.inner.tasks.scan_prefix(b"d\0") {
            let (k, _) = entry?;
            let (at, key) = TaskKey::from_timed_key(&k)?;
            if at <= until_ms {
                out.push((at, key));
            }
        }
        out.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| a.1.scoped_task().cmp(&b.1.scoped_task()))
        });
        Ok(out)
    }

    /// A ticket covering every write issued so far: for state read back from the store, whose
    /// writer may not have waited for it to be durable.
    pub fn latest_ticket(&self) -> Ticket {
        self.inner.commit.latest()
    }

    /// Wait until the write that returned `ticket` (and every earlier one) is on disk.
    pub async fn durable(&self, ticket: Ticket) -> Result<(), StoreError> {
        self.inner.commit.durable(ticket).await
    }

    /// Committer rounds that made writes durable so far, each with one `fdatasync` (of the
    /// write-ahead log, or of sled's log at a checkpoint): syncs per second against commands per
    /// second.
    pub fn flush_count(&self) -> u64 {
        self.inner.commit.sync_count()
    }

    /// Tell `observer` how long each committer round and each `fdatasync` takes from now on
    /// (once: a second observer is ignored, `false`).
    pub fn observe_commits(&self, observer: Arc<dyn CommitObserver>) -> bool {
        self.inner.timing.set(observer)
    }

    /// Tasks per partner and state, as the listing index holds them now (its counts, kept with
    /// every task write and counted at open: no scan).
    pub fn tasks_by_state(&self) -> Vec<(String, aiphost_model::TaskState, u64)> {
        self.inner.listed.by_agent()
    }

    /// Checkpoints so far: rounds that flushed sled (see `committer.rs`).
    pub fn checkpoint_count(&self) -> u64 {
        self.inner.commit.checkpoint_count()
    }

    /// Task changes applied by the committer so far (changes per sync: this over
    /// [`Store::flush_count`]).
    pub fn committed_changes(&self) -> u64 {
        self.inner.commit.applied_count()
    }

    /// Keys the committer's task changes wrote to sled so far, inserts and removals (keys per
    /// durable start: this over the starts).
    pub fn committed_keys(&self) -> u64 {
        self.inner.commit.keys_count()
    }

    /// Read a partner's key-value entry.
    pub fn kv_get(
        &self,
        agent: &str,
        scope: KvScope<'_>,
        key: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        parts::get(&self.inner.kv, &kv_key(agent, scope, key))
    }

    /// Write a partner's key-value entry. It becomes durable with the next flush.
    pub fn kv_set(
        &self,
        agent: &str,
        scope: KvScope<'_>,
        key: &str,
        value: &[u8],
    ) -> Result<Ticket, StoreError> {
        self.inner.space.writable()?;
        let (kv, entry_key) = (&self.inner.kv, kv_key(agent, scope, key));
        // Invocations of one partner may set one agent-scoped key at once.
        let _writing = self.inner.keys.lock(&entry_key);
        let mut batch = sled::Batch::default();
        let old = kv.get(&entry_key)?;
        parts::insert(
            &mut batch,
            &self.inner.db,
            &entry_key,
            value,
            old.as_deref(),
        )?;
        kv.apply_batch(batch)?;
        Ok(self.inner.commit.written())
    }

    /// Delete a partner's key-value entry.
    pub fn kv_delete(
        &self,
        agent: &str,
        scope: KvScope<'_>,
        key: &str,
    ) -> Result<Ticket, StoreError> {
        let (kv, entry_key) = (&self.inner.kv, kv_key(agent, scope, key));
        let _writing = self.inner.keys.lock(&entry_key);
        if let Some(head) = kv.get(&entry_key)? {
            let mut batch = sled::Batch::default();
            parts::remove(&mut batch, &entry_key, &head);
            kv.apply_batch(batch)?;
        }
        Ok(self.inner.commit.written())
    }

    /// Flush everything now (used at shutdown).
    pub async fn flush(&self) -> Result<(), StoreError> {
        let ticket = self.inner.commit.written();
        self.inner.commit.durable(ticket).await
    }
}

/// sled's page cache when the operator does not say.
pub const DEFAULT_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// How long an open waits for the lock of a previous owner that is still closing (a host
/// restarting in the same process, or a killed one whose lock the kernel has not yet released).
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// sled's database and the store's trees in it.
struct Sled {
    db: sled::Db,
    tasks: sled::Tree,
    kv: sled::Tree,
    groups: sled::Tree,
    tenancy: sled::Tree,
}

/// Open sled and its trees, waiting up to `lock_wait` for the lock of a previous owner. Damage
/// sled meets (its corruption errors, its panics) is [`StoreError::Damaged`].
fn open_sled(
    dir: &Path,
    cache_bytes: u64,
    lock_wait: std::time::Duration,
) -> Result<Sled, StoreError> {
    let open = || -> Result<Sled, sled::Error> {
        let db = open_db(dir, cache_bytes, lock_wait)?;
        Ok(Sled {
            tasks: db.open_tree("tasks")?,
            kv: db.open_tree("kv")?,
            groups: db.open_tree("groups")?,
            tenancy: db.open_tree("tenancy")?,
            db,
        })
    };
    match unwind::quietly(open) {
        Err(panic) => Err(unreadable(dir, &panic)),
        Ok(Err(sled::Error::Io(e))) if is_lock_error(&e) => Err(StoreError::Locked {
            path: dir.display().to_string(),
        }),
        Ok(Err(e @ (sled::Error::Corruption { .. } | sled::Error::ReportableBug(_)))) => {
            Err(unreadable(dir, &e.to_string()))
        }
        Ok(other) => Ok(other?),
    }
}

/// sled could not recover the store's files: `why` is what it said (or how it panicked).
fn unreadable(dir: &Path, why: &str) -> StoreError {
    StoreError::Damaged {
        dir: dir.display().to_string(),
        problems: vec![format!(
            "{} cannot be read: sled failed to recover it ({why})",
            dir.join("db").display()
        )],
    }
}

/// Open sled, waiting up to `lock_wait` for the lock of a previous owner.
fn open_db(
    dir: &Path,
    cache_bytes: u64,
    lock_wait: std::time::Duration,
) -> Result<sled::Db, sled::Error> {
    let started = std::time::Instant::now();
    loop {
        match sled::Config::new()
            .path(dir)
            .cache_capacity(cache_bytes)
            .open()
        {
            Err(sled::Error::Io(e)) if is_lock_error(&e) && started.elapsed() < lock_wait => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Move sled's files (`conf`, `db`, `snap.*`, `blobs`) out of the way of a new sled, into
/// `damaged-{unix seconds}` in `dir`; the write-ahead log and the identity stay.
fn set_aside(dir: &Path) -> Result<std::path::PathBuf, StoreError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let aside = dir.join(format!("damaged-{now}"));
    std::fs::create_dir(&aside)?;
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        let sleds = name
            .to_str()
            .is_some_and(|n| matches!(n, "conf" | "db" | "blobs") || n.starts_with("snap."));
        if sleds {
            std::fs::rename(dir.join(&name), aside.join(&name))?;
        }
    }
    std::fs::File::open(dir)?.sync_all()?;
    Ok(aside)
}

/// The events of one stored entry: `key` (under the task's events `prefix`) and its `value`.
fn stored_events<'v>(
    prefix: &[u8],
    key: &[u8],
    value: &'v [u8],
) -> Result<Vec<(u64, &'v [u8])>, StoreError> {
    let first = key
        .get(prefix.len()..)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .ok_or_else(|| StoreError::Corrupt("malformed event key".into()))?;
    event_batch::decode(first, value).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn is_lock_error(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::WouldBlock || e.to_string().contains("could not acquire lock")
}

fn kv_key(agent: &str, scope: KvScope<'_>, key: &str) -> Vec<u8> {
    let (tag, task) = match scope {
        KvScope::Task(task) => (b't', task),
        KvScope::Agent => (b'a', ""),
    };
    let mut k = Vec::with_capacity(agent.len() + task.len() + key.len() + 5);
    k.extend_from_slice(agent.as_bytes());
    k.push(0);
    k.push(tag);
    k.push(0);
    k.extend_from_slice(task.as_bytes());
    k.push(0);
    k.extend_from_slice(key.as_bytes());
    k
}

/// A value the store keeps, read back.
/// The record in a stored task value, packed or plain (`packed.rs`).
fn record_of(key: &TaskKey, value: &[u8]) -> Result<Encoded, StoreError> {
    let value = unpacked(key, Some(value))?;
    Ok(Encoded::from_stored(
        stored_value(key, value.as_ref())?.record.to_vec(),
    ))
}

/// A stored task value made readable (`packed::Unpacked`; `None`: no task), or the error
/// naming the task.
fn unpacked<'v>(
    key: &TaskKey,
    value: Option<&'v [u8]>,
) -> Result<Option<packed::Unpacked<'v>>, StoreError> {
    value
        .map(packed::Unpacked::new)
        .transpose()
        .map_err(|e| corrupt_task(key, e))
}

/// What a stored task value holds (nothing when there is no task), or the error naming it.
fn stored_value<'v>(
    key: &TaskKey,
    value: Option<&'v packed::Unpacked<'_>>,
) -> Result<packed::Packed<'v>, StoreError> {
    value.map_or(Ok(packed::Packed::default()), |v| {
        v.read().map_err(|e| corrupt_task(key, e))
    })
}

/// A task value that does not parse, said with the task's name.
fn corrupt_task(key: &TaskKey, e: packed::Malformed) -> StoreError {
    StoreError::Corrupt(format!("task {}/{}: {e}", key.agent, key.task))
}

fn from_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    encoded::decode(bytes)
}

/// A value as the store keeps it.
fn to_json(value: &impl serde::Serialize) -> Result<Vec<u8>, StoreError> {
    Encoded::of(value).map(|e| e.0)
}

#[cfg(test)]
mod tests {
    /// A stored value as the store would hold it, byte for byte.
    fn raw(bytes: impl AsRef<[u8]>) -> crate::Encoded {
        crate::Encoded(bytes.as_ref().to_vec())
    }

    use super::*;
    use serde_json::{Value, json};

    /// Writing a task change and waiting until it is applied, for tests that write in sequence.
    pub(crate) trait WriteNow {
        fn write_task_now(&self, write: TaskWrite<'_>) -> Result<Ticket, StoreError>;
    }

    impl WriteNow for Store {
        fn write_task_now(&self, write: TaskWrite<'_>) -> Result<Ticket, StoreError> {
            // Dropping a pending write waits until it is applied.
            self.write_task(write).map(|pending| pending.ticket())
        }
    }

    /// Write `record` for `key` with only a deadline change.
    fn save(
        store: &Store,
        key: &TaskKey,
        record: &Value,
        old: Option<i64>,
        new: Option<i64>,
    ) -> Result<Ticket, StoreError> {
        store.write_task_now(TaskWrite {
            deadline: (old, new),
            ..TaskWrite::record_only(key, Encoded::of(record).unwrap())
        })
    }

    #[tokio::test]
    async fn tasks_and_deadlines_roundtrip_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let key = TaskKey::new("echo", "task-1");
        {
            let store = Store::open(dir.path()).unwrap();
            save(&store, &key, &json!({"n": 1}), None, Some(5_000)).unwrap();
            let t = save(&store, &key, &json!({"n": 2}), Some(5_000), Some(9_000)).unwrap();
            store.durable(t).await.unwrap();
            assert_eq!(store.deadlines().unwrap(), vec![(9_000, key.clone())]);
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.load_task::<Value>(&key).unwrap(),
            Some(json!({"n": 2}))
        );
        assert_eq!(store.deadlines().unwrap(), vec![(9_000, key.clone())]);
        assert!(store.deadlines_until(8_999).unwrap().is_empty());
        assert_eq!(store.deadlines_until(9_000).unwrap().len(), 1);
        let t = save(&store, &key, &json!({"n": 3}), Some(9_000), None).unwrap();
        store.durable(t).await.unwrap();
        assert!(store.deadlines().unwrap().is_empty());
    }

    #[tokio::test]
    async fn events_are_ordered_trimmed_and_swept() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("a", "t");
        let other = TaskKey::new("a", "t2");
        let write = |key: &TaskKey, seqs: std::ops::RangeInclusive<u64>, trim_below, ended_at| {
            store
                .write_task_now(TaskWrite {
                    events: seqs.map(|s| (s, raw(format!("e{s}")))).collect(),
                    trim_below,
                    ended_at,
                    ..TaskWrite::record_only(key, raw(b"{}"))
                })
                .unwrap()
        };
        write(&key, 1..=300, None, None);
        write(&other, 1..=2, None, None);
        let first = store.events_after(&key, 0, 1000).unwrap();
        assert_eq!(first.len(), 300, "no events of another task leak in");
        assert_eq!(first[0], (1, raw(b"e1")));
        assert_eq!(store.events_after(&key, 298, 10).unwrap().len(), 2);
        assert_eq!(store.events_after(&key, 10, 5).unwrap()[0].0, 11);
        write(&key, 301..=301, Some(101), Some(1_000));
        assert_eq!(store.first_event_seq(&key).unwrap(), Some(101));
        assert_eq!(store.sweep_ended_events(999).unwrap(), 0);
        assert_eq!(store.sweep_ended_events(1_001).unwrap(), 1);
        assert_eq!(store.sweep_ended_events(1_001).unwrap(), 0, "swept once");
        assert_eq!(store.first_event_seq(&key).unwrap(), None);
        assert!(store.has_task(&key).unwrap(), "the task itself stays");
        assert_eq!(store.first_event_seq(&other).unwrap(), Some(1));
    }

    /// Events written several to a key read back from any seq, with any limit; trimming below any
    /// seq (inside an earlier entry, on its edge, or inside the trimming write itself) leaves
    /// exactly the events from that seq on.
    #[tokio::test]
    async fn batched_events_read_from_any_seq_and_trim_below_any_seq() {
        let event = |s: u64| raw(format!("{{\"seq\":{s}}}"));
        for below in 1..=14 {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap();
            let key = TaskKey::new("a", "t");
            let write = |seqs: std::ops::RangeInclusive<u64>, trim_below| {
                store
                    .write_task_now(TaskWrite {
                        events: seqs.map(|s| (s, event(s))).collect(),
                        trim_below,
                        ..TaskWrite::record_only(&key, raw(b"{}"))
                    })
                    .unwrap()
            };
            // Entries: 1 | 2..=4 | 5 | 6..=9 | 10..=11, then 12..=14 trimming.
            for seqs in [1..=1, 2..=4, 5..=5, 6..=9, 10..=11] {
                write(seqs, None);
            }
            write(12..=14, Some(below));
            let stored: Vec<(u64, Encoded)> = (below..=14).map(|s| (s, event(s))).collect();
            assert_eq!(store.first_event_seq(&key).unwrap(), Some(below));
            for after in 0..=14 {
                let expected: Vec<_> = stored.iter().filter(|(s, _)| *s > after).cloned().collect();
                assert_eq!(
                    store.events_after(&key, after, 100).unwrap(),
                    expected,
                    "below {below}, after {after}"
                );
                let limited = store.events_after(&key, after, 2).unwrap();
                assert_eq!(limited, expected[..expected.len().min(2)], "below {below}");
            }
        }
    }

    #[tokio::test]
    async fn product_chunks_append_and_replace() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("a", "t");
        let write = |product: &str, seq: u64, replaces: bool| {
            store
                .write_task_now(TaskWrite {
                    chunks: vec![ChunkWrite {
                        product: product.into(),
                        seq,
                        items: raw(format!("{product}{seq}")),
                        replaces,
                    }],
                    ..TaskWrite::record_only(&key, raw(b"{}"))
                })
                .unwrap()
        };
        write("p", 1, true);
        write("q", 2, true);
        write("p", 3, false);
        write("p", 300, false);
        let p = store.product_chunks(&key, "p").unwrap();
        assert_eq!(p, [raw(b"p1"), raw(b"p3"), raw(b"p300")]);
        write("p", 301, true);
        assert_eq!(store.product_chunks(&key, "p").unwrap(), [raw(b"p301")]);
        assert_eq!(store.product_chunks(&key, "q").unwrap(), [raw(b"q2")]);
    }

    #[tokio::test]
    async fn chunks_of_one_write_replace_each_other_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("a", "t");
        let chunk = |product: &str, seq: u64, replaces: bool| ChunkWrite {
            product: product.into(),
            seq,
            items: raw(format!("{product}{seq}")),
            replaces,
        };
        let write = |chunks: Vec<ChunkWrite>| {
            store
                .write_task_now(TaskWrite {
                    chunks,
                    ..TaskWrite::record_only(&key, raw(b"{}"))
                })
                .unwrap()
        };
        write(vec![chunk("p", 1, true), chunk("p", 2, false)]);
        // Stored p1 p2; this write appends, replaces (dropping p1, p2 and p3), appends again.
        write(vec![
            chunk("p", 3, false),
            chunk("q", 4, true),
            chunk("p", 5, true),
            chunk("p", 6, false),
            chunk("q", 7, false),
        ]);
        assert_eq!(
            store.product_chunks(&key, "p").unwrap(),
            [raw(b"p5"), raw(b"p6")]
        );
        assert_eq!(
            store.product_chunks(&key, "q").unwrap(),
            [raw(b"q4"), raw(b"q7")]
        );
    }

    /// No value the store writes is larger than a part (sled keeps large values in memory for
    /// good), and everything reads back whole: records, events, chunks, history, outbox, KV.
    #[tokio::test]
    async fn large_values_are_written_in_parts_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::owned("a", Some("L"), "t");
        let big = |c: char, n: usize| c.to_string().repeat(n).into_bytes();
        let record = format!("{{\"x\":\"{}\"}}", "r".repeat(100_000));
        let notification = OutboxEntry {
            config_id: "c".into(),
            then: Vec::new(),
            body: Outgoing::Rendered(Value::String("o".repeat(20_000))),
            attempts: 0,
            first_attempt_ms: 0,
            next_attempt_ms: 0,
            last_error: None,
        };
        store
            .write_task_now(TaskWrite {
                events: vec![(1, raw(big('e', 70_000))), (2, raw(big('f', 9_000)))],
                chunks: vec![ChunkWrite {
                    product: "p".into(),
                    seq: 1,
                    items: raw(big('c', 50_000)),
                    replaces: true,
                }],
                history: vec![(0, raw(big('h', 30_000)))],
                outbox: vec![(1, notification.clone())],
                ..TaskWrite::record_only(&key, raw(&record))
            })
            .unwrap();
        store
            .kv_set("a", KvScope::Agent, "k", &big('k', 40_000))
            .unwrap();
        let largest =
            |tree: &sled::Tree| tree.iter().map(|e| e.unwrap().1.len()).max().unwrap_or(0);
        assert!(largest(&store.inner.tasks) <= PART_BYTES);
        assert!(largest(&store.inner.kv) <= PART_BYTES);
        let read: Value = store.load_task(&key).unwrap().unwrap();
        assert_eq!(read.to_string(), record);
        let events = store.events_after(&key, 0, 10).unwrap();
        assert_eq!(
            events,
            vec![(1, raw(big('e', 70_000))), (2, raw(big('f', 9_000)))]
        );
        assert_eq!(
            store.product_chunks(&key, "p").unwrap(),
            [raw(big('c', 50_000))]
        );
        assert_eq!(
            store.command_history(&key).unwrap(),
            [(0, raw(big('h', 30_000)))]
        );
        assert_eq!(
            store.outbox_head(&key).unwrap(),
            Some((1, Some(notification)))
        );
        assert_eq!(
            store.kv_get("a", KvScope::Agent, "k").unwrap(),
            Some(big('k', 40_000))
        );
        // Replaced, trimmed, delivered and deleted: their parts go with them.
        store
            .write_task_now(TaskWrite {
                events: vec![(3, raw(b"{}"))],
                trim_below: Some(3),
                chunks: vec![ChunkWrite {
                    product: "p".into(),
                    seq: 3,
                    items: raw(b"[]"),
                    replaces: true,
                }],
                history_dropped: vec![0],
                ..TaskWrite::record_only(&key, raw(b"{}"))
            })
            .unwrap();
        store.outbox_remove(&key, 1, None, None).unwrap();
        store.kv_delete("a", KvScope::Agent, "k").unwrap();
        let parts_left = store
            .inner
            .tasks
            .iter()
            .filter(|e| e.as_ref().unwrap().0.first() == Some(&0xFF))
            .count();
        assert_eq!(parts_left, 0, "no part outlives its value");
        assert_eq!(
            store.events_after(&key, 0, 10).unwrap(),
            vec![(3, raw(b"{}"))]
        );
        assert!(store.inner.kv.is_empty());
    }

    #[tokio::test]
    async fn kv_scopes_are_separate() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.kv_set("a", KvScope::Task("t1"), "k", b"one").unwrap();
        store.kv_set("a", KvScope::Agent, "k", b"all").unwrap();
        store
            .kv_set("b", KvScope::Task("t1"), "k", b"other agent")
            .unwrap();
        assert_eq!(
            store.kv_get("a", KvScope::Task("t1"), "k").unwrap(),
            Some(b"one".to_vec())
        );
        assert_eq!(store.kv_get("a", KvScope::Task("t2"), "k").unwrap(), None);
        assert_eq!(
            store.kv_get("a", KvScope::Agent, "k").unwrap(),
            Some(b"all".to_vec())
        );
        store.kv_delete("a", KvScope::Agent, "k").unwrap();
        assert_eq!(store.kv_get("a", KvScope::Agent, "k").unwrap(), None);
        assert_eq!(
            store.kv_get("b", KvScope::Task("t1"), "k").unwrap(),
            Some(b"other agent".to_vec())
        );
    }

    #[tokio::test]
    async fn concurrent_writers_share_flushes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let before = store.flush_count();
        let mut joins = Vec::new();
        for i in 0..200 {
            let store = store.clone();
            joins.push(tokio::spawn(async move {
                let key = TaskKey::new("a", format!("t{i}"));
                let record = Encoded::of(&json!({"i": i})).unwrap();
                let pending = store.write_task(TaskWrite::record_only(&key, record));
                let ticket = pending.unwrap().applied().await.unwrap();
                assert!(store.has_task(&key).unwrap(), "applied: visible");
                store.durable(ticket).await.unwrap();
            }));
        }
        for j in joins {
            j.await.unwrap();
        }
        let flushes = store.flush_count() - before;
        assert!(flushes >= 1);
        assert!(
            flushes < 200,
            "200 concurrent writes took {flushes} flushes"
        );
        assert_eq!(store.committed_changes(), 200);
    }

    /// A round the write-ahead log holds and sled lost is applied again at start-up; a round at
    /// or below sled's mark is not (sled holds it, and later writes may have changed its keys).
    #[tokio::test]
    async fn rounds_sled_lost_come_back_from_the_log() {
        use write_batch::Writes;
        let dir = tempfile::tempdir().unwrap();
        {
            let db = open_db(dir.path(), DEFAULT_CACHE_BYTES, LOCK_WAIT).unwrap();
            let tasks = db.open_tree("tasks").unwrap();
            // What sled recovered: rounds up to 3, and a key round 2 wrote was removed since.
            tasks.insert(wal::APPLIED_KEY, &3u64.to_be_bytes()).unwrap();
            tasks.insert(b"kept", &b"by a later write"[..]).unwrap();
            tasks.insert(b"gone", &b"removed by round 5"[..]).unwrap();
            db.flush().unwrap();
            let (mut log, replayed) = wal::Wal::open(&dir.path().join("wal"), 0).unwrap();
            assert!(replayed.is_empty());
            for round in 1..=5u8 {
                let mut batch = WriteBatch::default();
                batch.insert(vec![b'k', round], vec![round]);
                if round == 2 {
                    batch.insert(&b"kept"[..], &b"by round 2"[..]);
                }
                if round == 5 {
                    batch.remove(&b"gone"[..]);
                }
                log.append(&batch.encode()).unwrap();
            }
            log.sync().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let tasks = &store.inner.tasks;
        for round in 1..=3u8 {
            assert_eq!(
                tasks.get([b'k', round]).unwrap(),
                None,
                "round {round} is below the mark"
            );
        }
        for round in 4..=5u8 {
            assert_eq!(
                tasks.get([b'k', round]).unwrap().as_deref(),
                Some(&[round][..])
            );
        }
        assert_eq!(
            tasks.get(b"kept").unwrap().as_deref(),
            Some(&b"by a later write"[..])
        );
        assert_eq!(tasks.get(b"gone").unwrap(), None);
        assert_eq!(
            tasks.get(wal::APPLIED_KEY).unwrap().as_deref(),
            Some(&5u64.to_be_bytes()[..])
        );

        // The next change is round 6, logged from the log's start; a reopen applies nothing twice.
        let key = TaskKey::new("a", "t1");
        let record = Encoded::of(&json!({"v": 1})).unwrap();
        let ticket = store
            .write_task(TaskWrite::record_only(&key, record))
            .unwrap();
        store
            .durable(ticket.applied().await.unwrap())
            .await
            .unwrap();
        assert_eq!(
            tasks.get(wal::APPLIED_KEY).unwrap().as_deref(),
            Some(&6u64.to_be_bytes()[..])
        );
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        let loaded: serde_json::Value = store.load_task(&key).unwrap().unwrap();
        assert_eq!(loaded, json!({"v": 1}));
        assert_eq!(
            store.inner.tasks.get(b"kept").unwrap().as_deref(),
            Some(&b"by a later write"[..])
        );
    }

    /// A write outside the committer is made durable by a checkpoint (a flush of sled); task
    /// changes alone are made durable by the log, without one.
    #[tokio::test]
    async fn only_writes_outside_the_committer_cost_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let start = store.checkpoint_count();
        for i in 0..20 {
            let key = TaskKey::new("a", format!("t{i}"));
            let record = Encoded::of(&json!({"i": i})).unwrap();
            let pending = store
                .write_task(TaskWrite::record_only(&key, record))
                .unwrap();
            store
                .durable(pending.applied().await.unwrap())
                .await
                .unwrap();
        }
        assert_eq!(
            store.checkpoint_count(),
            start,
            "task changes go through the log"
        );
        let ticket = store.kv_set("a", KvScope::Agent, "k", b"v").unwrap();
        store.durable(ticket).await.unwrap();
        assert_eq!(store.checkpoint_count(), start + 1);
    }

    /// A task's value is stored compressed only once the task rests or has ended: a running
    /// task's value is written again with its next report, so it stays uncompressed; either
    /// way it reads back whole.
    #[tokio::test]
    async fn a_running_tasks_value_is_stored_uncompressed_a_resting_ones_compressed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("a", "t");
        let record = json!({"text": "a record long enough to be worth compressing ".repeat(20)});
        let event = |s: u64| raw(format!("{{\"seq\":{s},\"text\":\"{}\"}}", "e".repeat(100)));
        let first_byte = || store.inner.tasks.get(key.record_key()).unwrap().unwrap()[0];
        for (seq, live, marker) in [
            (1, Some(Liveness::Running), 0xFD),
            (2, Some(Liveness::Waiting), 0xFC),
            (3, Some(Liveness::Running), 0xFD),
        ] {
            store
                .write_task_now(TaskWrite {
                    events: vec![(seq, event(seq))],
                    live: (None, live),
                    new_task: seq == 1,
                    ..TaskWrite::record_only(&key, Encoded::of(&record).unwrap())
                })
                .unwrap();
            assert_eq!(first_byte(), marker, "after write {seq} ({live:?})");
            assert_eq!(
                store.load_task::<Value>(&key).unwrap(),
                Some(record.clone())
            );
            let events = store.events_after(&key, 0, 10).unwrap();
            assert_eq!(events.len() as u64, seq, "every event inline, read back");
            assert_eq!(events.last(), Some(&(seq, event(seq))));
        }
    }
}
