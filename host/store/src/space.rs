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
//!
//! A measure that lets a write through is reused for [`FRESH`] (a durable start asked the file
//! system two or three times, 1.2 % of its CPU: issue 35); one that would refuse is never
//! reused, and `/readyz` always measures. So the host may write for up to a millisecond into a
//! disk that another process has just filled, far less than the floor keeps free, and it takes
//! work again the moment space returns.

use super::{Store, StoreError};
use std::path::PathBuf;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

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

/// How long a measure that let a write through is trusted.
const FRESH: Duration = Duration::from_millis(1);

/// The start of the clock the last measure's time is kept on (nanoseconds since it, so an atomic
/// holds it).
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Nanoseconds since [`EPOCH`].
fn now_ns() -> u64 {
    u64::try_from(EPOCH.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// [`Space::free`]'s "unknown", as kept in [`Space::last_free`].
const UNKNOWN: u64 = u64::MAX;

/// The store's watch on its disk.
pub(crate) struct Space {
    dir: PathBuf,
    reserve: AtomicU64,
    /// Whether the last check found the disk below the reserve (to log each change once).
    short: AtomicBool,
    /// The free bytes the last measure found ([`UNKNOWN`] if none could be taken) and when
    /// ([`now_ns`]; 0: never). Written after each measure; the two may be a measure apart, which
    /// costs at most one more measure.
    last_free: AtomicU64,
    last_at: AtomicU64,
    /// Measures taken (the file system asked).
    #[cfg(test)]
    measures: AtomicU64,
}

impl Space {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Space {
            dir,
            reserve: AtomicU64::new(DEFAULT_RESERVE_BYTES),
            short: AtomicBool::new(false),
            last_free: AtomicU64::new(UNKNOWN),
            last_at: AtomicU64::new(0),
            #[cfg(test)]
            measures: AtomicU64::new(0),
        }
    }

    /// Free bytes on the store's file system, as an unprivileged process may use them, measured
    /// now.
    fn free(&self) -> Option<u64> {
        #[cfg(test)]
        self.measures.fetch_add(1, Ordering::Relaxed);
        let free = rustix::fs::statvfs(&self.dir)
            .ok()
            .map(|stat| stat.f_bavail.saturating_mul(stat.f_frsize).min(UNKNOWN - 1));
        self.last_free
            .store(free.unwrap_or(UNKNOWN), Ordering::Relaxed);
        self.last_at.store(now_ns().max(1), Ordering::Relaxed);
        free
    }

    /// The last measure, if it is younger than [`FRESH`].
    fn fresh_free(&self) -> Option<Option<u64>> {
        let at = self.last_at.load(Ordering::Relaxed);
        let young = at != 0 && now_ns().saturating_sub(at) < FRESH.as_nanos() as u64;
        young.then(|| Some(self.last_free.load(Ordering::Relaxed)).filter(|&f| f != UNKNOWN))
    }

    /// The disk, measured now.
    fn disk(&self) -> Disk {
        self.disk_with(self.free())
    }

    /// The disk with `free` bytes free, and the log line when its state changed.
    fn disk_with(&self, free: Option<u64>) -> Disk {
        let reserve = self.reserve.load(Ordering::Relaxed);
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

    /// `Err` when the disk is in `state` or worse: a fresh measure is taken unless a young one
    /// lets the write through.
    fn refuse_at(&self, worst: DiskState) -> Result<(), StoreError> {
        let refuses = |disk: &Disk| match worst {
            DiskState::Full => disk.state == DiskState::Full,
            _ => disk.state != DiskState::Ok,
        };
        if let Some(free) = self.fresh_free()
            && !refuses(&self.disk_with(free))
        {
            return Ok(());
        }
        let disk = self.disk();
        match refuses(&disk) {
            false => Ok(()),
            true => Err(StoreError::Full {
                path: self.dir.display().to_string(),
                free: disk.free.unwrap_or(0),
                reserve: disk.reserve,
            }),
        }
    }

    /// How many times the file system was asked.
    #[cfg(test)]
    fn measures(&self) -> u64 {
        self.measures.load(Ordering::Relaxed)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measure_that_lets_writes_through_is_reused_for_a_moment_a_refusal_never() {
        let dir = tempfile::tempdir().unwrap();
        let space = Space::new(dir.path().to_path_buf());
        space.reserve.store(0, Ordering::Relaxed);
        assert!(space.writable().is_ok());
        assert!(space.refuse_at(DiskState::Low).is_ok());
        assert_eq!(
            space.measures(),
            1,
            "the second check reused the first measure"
        );
        std::thread::sleep(FRESH * 2);
        assert!(space.writable().is_ok());
        assert_eq!(space.measures(), 2, "an old measure is taken again");
        // No disk has this much room: every check refuses, each on a measure of its own, so
        // the first write after space returns goes through.
        space.reserve.store(u64::MAX, Ordering::Relaxed);
        for n in 3..6 {
            assert!(matches!(space.writable(), Err(StoreError::Full { .. })));
            assert_eq!(space.measures(), n);
        }
        // Space back (here: the reserve lowered): the young measure, judged anew, lets it through.
        space.reserve.store(0, Ordering::Relaxed);
        assert!(space.writable().is_ok());
        assert_eq!(space.measures(), 5);
    }
}
