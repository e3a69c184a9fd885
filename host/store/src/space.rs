//! Room on the disk: the store refuses to write before the disk is full, so a full disk is an
//! outage that ends by itself when space returns, not a wedge.
//!
//! Why refuse before: sled 0.34.7 keeps the first I/O error it meets (`hit error while writing
//! iobuf ... No space left on device`) and answers every later write **and read** with it until
//! the process restarts. The store therefore never lets sled meet a full disk: it measures the
//! free space of the file system it lives on (`statvfs`, about a microsecond) and
//!
//! - below the **reserve** refuses new work ([`Store::room_for_new_work`]: the engine asks it
//!   before a start or a continue invokes a partner), so what runs can still finish;
//! - below the **floor** (a quarter of the reserve) refuses every write ([`Store::write_task`]
//!   and the writes outside the committer), before anything reaches sled.
//!
//! Both answer [`StoreError::Full`], which the doors turn into a retryable "unavailable" (HTTP
//! 503 with `Retry-After`). Reads never touch the disk's free space and keep working. Nothing is
//! remembered: the first write after space returns goes through. The state is shown on
//! `/readyz` ([`Store::disk`]).

use super::{Store, StoreError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The reserve when the operator does not say: room for the writes of what runs, and for sled's
/// checkpoints, on a disk a host shares with others.
pub const DEFAULT_RESERVE_BYTES: u64 = 256 * 1024 * 1024;

/// How the disk the store lives on is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskState {
    /// Free space above the reserve.
    Ok,
    /// Below the reserve: new work is refused, what runs finishes.
    Low,
    /// Below the floor: every write is refused.
    Full,
}

impl DiskState {
    /// Its name on `/readyz`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiskState::Ok => "ok",
            DiskState::Low => "low",
            DiskState::Full => "full",
        }
    }
}

/// What [`Store::disk`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Disk {
    /// Low, full or fine.
    pub state: DiskState,
    /// Free bytes (for an unprivileged writer) on the store's file system; `None`: unknown.
    pub free: Option<u64>,
    /// The reserve.
    pub reserve: u64,
}

/// The store's watch on its disk.
pub(crate) struct Space {
    dir: PathBuf,
    reserve: AtomicU64,
    /// Whether the last check found the disk below the reserve (to log each change once).
    short: AtomicBool,
}

impl Space {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Space {
            dir,
            reserve: AtomicU64::new(DEFAULT_RESERVE_BYTES),
            short: AtomicBool::new(false),
        }
    }

    /// Free bytes on the store's file system, as an unprivileged process may use them.
    fn free(&self) -> Option<u64> {
        let stat = rustix::fs::statvfs(&self.dir).ok()?;
        Some(stat.f_bavail.saturating_mul(stat.f_frsize))
    }

    fn disk(&self) -> Disk {
        let reserve = self.reserve.load(Ordering::Relaxed);
        let free = self.free();
        let state = match free {
            // A file system that cannot be measured is not refused for it.
            None => DiskState::Ok,
            Some(free) if free < reserve / 4 => DiskState::Full,
            Some(free) if free < reserve => DiskState::Low,
            Some(_) => DiskState::Ok,
        };
        let short = state != DiskState::Ok;
        if self.short.swap(short, Ordering::Relaxed) != short {
            match short {
                true => tracing::warn!(free = ?free, reserve,
                    "the store's disk is below its reserve: new work is refused until space returns"),
                false => tracing::info!(free = ?free, reserve,
                    "the store's disk has room again: new work is taken"),
            }
        }
        Disk {
            state,
            free,
            reserve,
        }
    }

    /// `Err` when the disk is in `state` or worse.
    fn refuse_at(&self, worst: DiskState) -> Result<(), StoreError> {
        let disk = self.disk();
        let refused = match worst {
            DiskState::Full => disk.state == DiskState::Full,
            _ => disk.state != DiskState::Ok,
        };
        match refused {
            false => Ok(()),
            true => Err(StoreError::Full {
                path: self.dir.display().to_string(),
                free: disk.free.unwrap_or(0),
                reserve: disk.reserve,
            }),
        }
    }

    /// Refuse every write below the floor.
    pub(crate) fn writable(&self) -> Result<(), StoreError> {
        self.refuse_at(DiskState::Full)
    }
}

impl Store {
    /// Keep `bytes` free on the store's disk: below them new work is refused, below a quarter of
    /// them every write ([`DEFAULT_RESERVE_BYTES`] unless set).
    pub fn set_disk_reserve(&self, bytes: u64) {
        self.inner.space.reserve.store(bytes, Ordering::Relaxed);
    }

    /// Whether the disk has room for new work (a start, a continue): [`StoreError::Full`]
    /// below the reserve.
    pub fn room_for_new_work(&self) -> Result<(), StoreError> {
        self.inner.space.refuse_at(DiskState::Low)
    }

    /// The disk as it is now.
    pub fn disk(&self) -> Disk {
        self.inner.space.disk()
    }
}
