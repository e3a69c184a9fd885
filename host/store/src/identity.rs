//! The store's identity: what tells a whole store from one whose sled (`db`) or write-ahead log
//! (`wal`) lost data, so that the host refuses to start on it instead of serving what is left.
//!
//! Why: sled recovers whatever prefix of its log it finds. A `db` deleted (sled's `conf` kept),
//! replaced by an older copy or cut short opens without a word, and the log's rounds, replayed
//! onto it, hid the loss further. So the store carries its identity in two places:
//! - the file `identity` beside the log: the store's id, the number of the last checkpoint and
//!   the last round applied at it, written after the checkpoint's flush and `fdatasync` of `db`
//!   ([`IdentityFile::record`]; synced at start-up and shutdown, left to the kernel between);
//! - the key [`SLED_KEY`] in sled's `tasks` tree: the same id and checkpoint number, written just
//!   before that flush. sled recovers a prefix of its writes, so a sled that recovered mark `n`
//!   holds everything written before checkpoint `n`.
//!
//! At open ([`problems`]) sled's id must be the file's, its checkpoint at least the file's, and
//! the log's first round at most one past the last round sled holds (else the rounds between are
//! in neither). A new store, and a store from before identities, gets its file at its first
//! open. Cost: one small write per checkpoint; nothing per round.
//!
//! The file holds two slots of [`SLOT`] bytes, written in turn (checkpoint `n` into slot
//! `n % 2`) in place: a write torn by a power loss spoils one slot, and the other still holds the
//! checkpoint before. A slot: `magic (8) | id (16) | checkpoint: u64 BE | applied: u64 BE |
//! crc32 of those: u32 BE`, zero-padded.

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The key in the `tasks` tree that holds sled's copy: `id (16) | checkpoint: u64 BE`.
pub(crate) const SLED_KEY: &[u8] = b"m\0identity";

/// The name of the identity file in the store's directory.
pub(crate) const FILE_NAME: &str = "identity";

const MAGIC: &[u8; 8] = b"aipstor1";
const SLOT: usize = 64;
const SLOT_DATA: usize = 8 + 16 + 8 + 8;

/// A store's id: random, made once when the store is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StoreId([u8; 16]);

impl StoreId {
    /// A new id, from the OS's randomness (the seed of std's `RandomState`) and the clock.
    pub(crate) fn fresh() -> Self {
        let mut bytes = [0u8; 16];
        for half in bytes.chunks_mut(8) {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            hasher.write_u128(now);
            hasher.write_u32(std::process::id());
            half.copy_from_slice(&hasher.finish().to_be_bytes());
        }
        StoreId(bytes)
    }
}

impl std::fmt::Display for StoreId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// What the identity file says: the store, and its last checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub(crate) id: StoreId,
    /// Checkpoints made since the store got its identity (0: none yet).
    pub(crate) checkpoint: u64,
    /// The last committer round applied to sled at that checkpoint.
    pub(crate) applied: u64,
}

impl Mark {
    fn encode(&self) -> [u8; SLOT] {
        let mut slot = [0u8; SLOT];
        slot[..8].copy_from_slice(MAGIC);
        slot[8..24].copy_from_slice(&self.id.0);
        slot[24..32].copy_from_slice(&self.checkpoint.to_be_bytes());
        slot[32..40].copy_from_slice(&self.applied.to_be_bytes());
        let crc = crc32fast::hash(&slot[..SLOT_DATA]);
        slot[SLOT_DATA..SLOT_DATA + 4].copy_from_slice(&crc.to_be_bytes());
        slot
    }

    fn decode(slot: &[u8]) -> Option<Mark> {
        let data = slot.get(..SLOT_DATA)?;
        let crc = u32::from_be_bytes(slot.get(SLOT_DATA..SLOT_DATA + 4)?.try_into().ok()?);
        if &data[..8] != MAGIC || crc32fast::hash(data) != crc {
            return None;
        }
        Some(Mark {
            id: StoreId(data[8..24].try_into().ok()?),
            checkpoint: u64::from_be_bytes(data[24..32].try_into().ok()?),
            applied: u64::from_be_bytes(data[32..40].try_into().ok()?),
        })
    }

    /// sled's copy: the id and the checkpoint.
    pub(crate) fn sled_value(&self) -> [u8; 24] {
        let mut value = [0u8; 24];
        value[..16].copy_from_slice(&self.id.0);
        value[16..].copy_from_slice(&self.checkpoint.to_be_bytes());
        value
    }
}

/// sled's copy, read back: `(id, checkpoint)`; `None` when it is not one.
pub(crate) fn parse_sled_value(value: &[u8]) -> Option<(StoreId, u64)> {
    let id = StoreId(value.get(..16)?.try_into().ok()?);
    let checkpoint = u64::from_be_bytes(value.get(16..24)?.try_into().ok()?);
    (value.len() == 24).then_some((id, checkpoint))
}

/// The identity file of the store in `dir`: `Ok(None)` when there is none; `Err` with what is
/// wrong when it is there but neither slot reads.
pub(crate) fn read(dir: &Path) -> Result<Option<Mark>, String> {
    let path = dir.join(FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read: {e}", path.display())),
    };
    let newest = bytes
        .chunks(SLOT)
        .take(2)
        .filter_map(Mark::decode)
        .max_by_key(|m| m.checkpoint);
    match newest {
        Some(mark) => Ok(Some(mark)),
        None => Err(format!(
            "{} is unreadable (neither of its copies is intact)",
            path.display()
        )),
    }
}

/// The open identity file, where each checkpoint is recorded.
pub(crate) struct IdentityFile {
    file: File,
    id: StoreId,
}

impl IdentityFile {
    /// Write `mark` as the whole file, atomically (a new file renamed over the old one, both
    /// synced), and open it for the checkpoints to come.
    pub(crate) fn create(dir: &Path, mark: Mark) -> std::io::Result<IdentityFile> {
        let path = dir.join(FILE_NAME);
        let fresh = dir.join(format!("{FILE_NAME}.new"));
        let mut bytes = mark.encode().to_vec();
        bytes.extend_from_slice(&mark.encode());
        {
            let file = File::create(&fresh)?;
            file.write_all_at(&bytes, 0)?;
            file.sync_all()?;
        }
        std::fs::rename(&fresh, &path)?;
        // The new name lives in the directory: without this a power loss could undo it.
        File::open(dir)?.sync_all()?;
        IdentityFile::open(dir, mark.id)
    }

    /// Open the existing file of store `id`.
    pub(crate) fn open(dir: &Path, id: StoreId) -> std::io::Result<IdentityFile> {
        let file = OpenOptions::new().write(true).open(dir.join(FILE_NAME))?;
        Ok(IdentityFile { file, id })
    }

    /// The store's id.
    pub(crate) fn id(&self) -> StoreId {
        self.id
    }

    /// Record checkpoint `checkpoint`, at which sled held every round up to `applied`: its slot,
    /// then, with `sync`, an `fdatasync`.
    ///
    /// Why not always synced: it tripled a checkpoint's cost (3.5 ms instead of 0.6 on the test
    /// machine: 300 `kv_set` + `durable`). Unsynced is safe: the slot is written after sled's
    /// flush and `fdatasync`, so the file never claims more than sled holds; a power loss may
    /// only leave it a few checkpoints behind (until the kernel writes it back), which makes the
    /// next start's check that much weaker, never wrong. Start-up and shutdown sync it.
    pub(crate) fn record(&self, checkpoint: u64, applied: u64, sync: bool) -> std::io::Result<()> {
        let mark = Mark {
            id: self.id,
            checkpoint,
            applied,
        };
        let at = (checkpoint % 2) * SLOT as u64;
        self.file.write_all_at(&mark.encode(), at)?;
        if sync {
            self.file.sync_data()?;
        }
        Ok(())
    }
}

/// What start-up found on disk, to be checked against each other ([`problems`]).
pub(crate) struct Found<'a> {
    /// The store's directory.
    pub(crate) dir: &'a Path,
    /// The identity file ([`read`]).
    pub(crate) file: Result<Option<Mark>, String>,
    /// sled's copy: `Err` when it is there but malformed.
    pub(crate) sled: Result<Option<(StoreId, u64)>, ()>,
    /// Whether sled holds anything at all.
    pub(crate) sled_has_data: bool,
    /// The last round sled holds (its applied mark; 0: none).
    pub(crate) applied: u64,
    /// Whether the write-ahead log's file was there.
    pub(crate) wal_existed: bool,
    /// The first round of the log's current cycle, if it holds any.
    pub(crate) wal_first: Option<u64>,
}

impl Found<'_> {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// What is missing, each naming its files; empty when the store is whole.
pub(crate) fn problems(found: &Found<'_>) -> Vec<String> {
    let (db, wal, identity) = (found.path("db"), found.path("wal"), found.path(FILE_NAME));
    let mut problems = Vec::new();
    let file = match &found.file {
        Ok(file) => *file,
        Err(unreadable) => {
            problems.push(format!(
                "{unreadable}: whether {} is whole cannot be told",
                db.display()
            ));
            None
        }
    };
    match (file, found.sled) {
        (_, Err(())) => problems.push(format!(
            "{} holds a malformed store identity: it is damaged",
            db.display()
        )),
        (None, Ok(Some((id, _)))) if found.file.is_ok() => problems.push(format!(
            "{} is missing while {} holds store {id}: whether the store is whole cannot be told",
            identity.display(),
            db.display()
        )),
        (Some(mark), Ok(None)) if mark.checkpoint > 0 => problems.push(format!(
            "{} holds no data of store {} (named by {}): it was deleted or replaced, and \
                 every task it held is lost",
            db.display(),
            mark.id,
            identity.display()
        )),
        (Some(mark), Ok(Some((id, _)))) if id != mark.id => problems.push(format!(
            "{} belongs to store {id}, not to store {} named by {}: it was replaced",
            db.display(),
            mark.id,
            identity.display()
        )),
        (Some(mark), Ok(Some((_, checkpoint)))) if checkpoint < mark.checkpoint => {
            problems.push(format!(
                "{} is older than the store: it holds checkpoint {checkpoint} (rounds up to {}), \
                 but checkpoint {} (rounds up to {}) was made durable: what was written between \
                 is lost (an older copy, or a file cut short)",
                db.display(),
                found.applied,
                mark.checkpoint,
                mark.applied
            ))
        }
        _ => {}
    }
    if !found.wal_existed && file.is_some_and(|m| m.checkpoint > 0) {
        problems.push(format!(
            "{} is missing: the task changes made after the last checkpoint, if any, are lost",
            wal.display()
        ));
    }
    if let Some(first) = found.wal_first
        && first > found.applied + 1
    {
        let lost = if first == found.applied + 2 {
            format!("round {} is", found.applied + 1)
        } else {
            format!("rounds {} to {} are", found.applied + 1, first - 1)
        };
        problems.push(format!(
            "{} starts at round {first} and {} holds rounds up to {}: {lost} in neither: lost",
            wal.display(),
            db.display(),
            found.applied
        ));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_slot_leaves_the_checkpoint_before() {
        let dir = tempfile::tempdir().unwrap();
        let id = StoreId::fresh();
        let mark = Mark {
            id,
            checkpoint: 0,
            applied: 0,
        };
        let file = IdentityFile::create(dir.path(), mark).unwrap();
        file.record(1, 10, true).unwrap();
        file.record(2, 15, false).unwrap();
        let read_back = read(dir.path()).unwrap().unwrap();
        assert_eq!((read_back.id, read_back.checkpoint), (id, 2));
        // Checkpoint 3's write tore: slot 1 holds half of it.
        let path = dir.path().join(FILE_NAME);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[SLOT + 30] ^= 0xFF;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(dir.path()).unwrap().unwrap().checkpoint, 2);
        bytes[3] ^= 0xFF;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(dir.path()).unwrap_err().contains("unreadable"));
        assert_ne!(StoreId::fresh(), StoreId::fresh());
    }
}
