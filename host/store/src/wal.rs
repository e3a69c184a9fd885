//! The write-ahead log of task changes: what makes a committer round durable with one `write` and
//! one `fdatasync` of a file of our own, instead of a flush of sled.
//!
//! Why: sled 0.34 seals its log buffer and hands it to its I/O thread pool (waking all seven of
//! its threads) twice for every multi-key `apply_batch` and again for every `flush`; a committer
//! round paid that and the flush's wait. Now a round applies its writes to sled key by key (no
//! seal, no pool) and appends them to this log as one record; sled is flushed only at a
//! checkpoint, when the log is full or a write outside the committer must be made durable.
//!
//! The file holds records back to back: `len: u32 | crc32: u32 | seq: u64 | payload (len bytes)`,
//! the checksum over `seq` and the payload, the payload a [`WriteBatch`] ([`WriteBatch::encode`]).
//! Round `seq` is followed by a write of `seq` under [`APPLIED_KEY`] in sled, after the round's
//! own writes: sled recovers a prefix of its writes, so a recovered mark `n` means every round up
//! to `n` is in sled whole. At start-up the records after the mark are applied again
//! ([`Wal::open`]) and sled is flushed; then the log is written from its start again.
//!
//! The file is reused, not truncated: once sled holds everything (a checkpoint), writing starts
//! over at offset 0 and overwrites in place, so the file's size (and so its metadata) stops
//! changing after the first cycle and an `fdatasync` writes only data. A reader knows where the
//! current cycle ends because each record's `seq` is one more than the one before it; a torn or
//! stale record breaks the chain.

use crate::write_batch::WriteBatch;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The key in the `tasks` tree that holds the last round applied to sled (`u64`, big-endian).
pub(crate) const APPLIED_KEY: &[u8] = b"m\0wal-applied";

/// Bytes written before the log starts over (after a checkpoint). A round larger than this
/// still goes in whole: the file grows.
pub(crate) const CYCLE_BYTES: u64 = 16 << 20;

const HEADER: usize = 16;

/// Something went wrong with the log's file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WalError {
    #[error("write-ahead log: {0}")]
    Io(#[from] std::io::Error),
}

/// The open log, positioned where the next record goes.
pub(crate) struct Wal {
    file: File,
    /// Where the next record goes.
    pos: u64,
    /// The seq of the next record.
    next_seq: u64,
    /// The first round of the cycle found at open, if any.
    first: Option<u64>,
}

/// A round found in the log at start-up, to be applied again.
pub(crate) struct Replayed {
    pub(crate) seq: u64,
    pub(crate) batch: WriteBatch,
}

impl Wal {
    /// Open (or create) the log at `path`; `applied` is the last round sled holds. Returns the
    /// log and the rounds after `applied` that it holds, in order. The caller applies them and
    /// checkpoints ([`Wal::restart`]) before the next append. [`Wal::first_seq`] says where the
    /// log's current cycle starts.
    pub(crate) fn open(path: &Path, applied: u64) -> Result<(Wal, Vec<Replayed>), WalError> {
        let existed = path.exists();
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if !existed && let Some(dir) = path.parent() {
            // A new file's name lives in its directory: without this, a power loss could lose
            // the whole log however often its data was synced.
            File::open(dir)?.sync_all()?;
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let mut replayed = Vec::new();
        let mut first = None::<u64>;
        let mut last = None::<u64>;
        let mut at = 0usize;
        while let Some((seq, payload, next)) = record_at(&bytes, at) {
            if last.is_some_and(|l| seq != l + 1) {
                break; // a record of an earlier cycle: the current one ends here
            }
            // A record whose payload does not decode has a good checksum: it was written so,
            // which only a bug does; stop there rather than apply a part of the log.
            let Some(batch) = WriteBatch::decode(payload) else {
                tracing::error!(
                    seq,
                    "an unreadable record in the write-ahead log; replay stops"
                );
                break;
            };
            if seq > applied {
                replayed.push(Replayed { seq, batch });
            }
            first.get_or_insert(seq);
            last = Some(seq);
            at = next;
        }
        let next_seq = last.unwrap_or(0).max(applied) + 1;
        Ok((
            Wal {
                file,
                pos: 0,
                next_seq,
                first,
            },
            replayed,
        ))
    }

    /// The first round the log held when it was opened (its current cycle's start), if any: the
    /// rounds before it are in sled, or lost.
    pub(crate) fn first_seq(&self) -> Option<u64> {
        self.first
    }

    /// The seq the next record gets.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Whether a record of `payload_len` bytes fits before the cycle ends (if not, checkpoint
    /// and [`Wal::restart`] first; a log just restarted takes any record).
    pub(crate) fn fits(&self, payload_len: usize) -> bool {
        self.pos == 0 || self.pos + (HEADER + payload_len) as u64 <= CYCLE_BYTES
    }

    /// Write the record of round [`Wal::next_seq`] (not yet synced). The seq is used up even if
    /// the write fails: sled may already hold the round under it.
    pub(crate) fn append(&mut self, payload: &[u8]) -> Result<(), WalError> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let len = u32::try_from(payload.len())
            .map_err(|_| std::io::Error::other("a round larger than 4 GiB"))?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(&seq.to_be_bytes());
        crc.update(payload);
        let mut record = Vec::with_capacity(HEADER + payload.len());
        record.extend_from_slice(&len.to_be_bytes());
        record.extend_from_slice(&crc.finalize().to_be_bytes());
        record.extend_from_slice(&seq.to_be_bytes());
        record.extend_from_slice(payload);
        self.file.write_all_at(&record, self.pos)?;
        self.pos += record.len() as u64;
        Ok(())
    }

    /// Skip a round's record: sled was flushed with the round in it (a checkpoint took its
    /// place), so the log need not hold it.
    pub(crate) fn skip(&mut self) {
        self.next_seq += 1;
    }

    /// Make every record written so far durable.
    pub(crate) fn sync(&self) -> Result<(), WalError> {
        self.file.sync_data()?;
        Ok(())
    }

    /// Start writing at the file's beginning again: every round so far is durable in sled.
    pub(crate) fn restart(&mut self) {
        self.pos = 0;
    }
}

/// The record at `at`: its seq, its payload and where the next one starts; `None` where no
/// whole, intact record starts.
fn record_at(bytes: &[u8], at: usize) -> Option<(u64, &[u8], usize)> {
    let header = bytes.get(at..at.checked_add(HEADER)?)?;
    let len = u32::from_be_bytes(header[0..4].try_into().ok()?) as usize;
    let crc = u32::from_be_bytes(header[4..8].try_into().ok()?);
    let seq_bytes = &header[8..16];
    let start = at + HEADER;
    let payload = bytes.get(start..start.checked_add(len)?)?;
    if len == 0 {
        return None; // never written (or zeroed)
    }
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(seq_bytes);
    hasher.update(payload);
    if hasher.finalize() != crc {
        return None;
    }
    let seq = u64::from_be_bytes(seq_bytes.try_into().ok()?);
    Some((seq, payload, start + len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_batch::Writes;

    fn batch(n: u8) -> WriteBatch {
        let mut b = WriteBatch::default();
        b.insert(vec![b'k', n], vec![n; 3]);
        b.remove(vec![b'r', n]);
        b
    }

    fn seqs(replayed: &[Replayed]) -> Vec<u64> {
        replayed.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn rounds_after_the_applied_mark_come_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let (mut wal, replayed) = Wal::open(&path, 0).unwrap();
        assert!(replayed.is_empty());
        for n in 1..=5 {
            wal.append(&batch(n).encode()).unwrap();
        }
        wal.sync().unwrap();
        drop(wal);
        let (wal, replayed) = Wal::open(&path, 2).unwrap();
        assert_eq!(seqs(&replayed), vec![3, 4, 5]);
        assert_eq!(wal.next_seq(), 6);
        assert_eq!(replayed[0].batch.encode(), batch(3).encode());
    }

    #[test]
    fn a_torn_record_ends_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let (mut wal, _) = Wal::open(&path, 0).unwrap();
        for n in 1..=3 {
            wal.append(&batch(n).encode()).unwrap();
        }
        drop(wal);
        // Tear the last record: its last byte never reached the disk.
        let len = std::fs::metadata(&path).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 1)
            .unwrap();
        let (wal, replayed) = Wal::open(&path, 0).unwrap();
        assert_eq!(seqs(&replayed), vec![1, 2]);
        assert_eq!(wal.next_seq(), 3);
        // A flipped byte in the middle record ends the log there.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER + batch(1).encode().len() + HEADER + 2] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let (_, replayed) = Wal::open(&path, 0).unwrap();
        assert_eq!(seqs(&replayed), vec![1]);
    }

    #[test]
    fn a_new_cycle_hides_the_records_of_the_last_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let (mut wal, _) = Wal::open(&path, 0).unwrap();
        for n in 1..=4 {
            wal.append(&batch(n).encode()).unwrap();
        }
        // A checkpoint: sled holds rounds 1-4; the next cycle overwrites from the start.
        wal.restart();
        wal.append(&batch(5).encode()).unwrap();
        drop(wal);
        // Records 2-4 still lie after record 5, but their seqs break the chain.
        let (wal, replayed) = Wal::open(&path, 4).unwrap();
        assert_eq!(seqs(&replayed), vec![5]);
        assert_eq!(wal.next_seq(), 6);
        // Killed just after the checkpoint, before anything new: the old cycle is all applied.
        let (mut wal, _) = Wal::open(&path, 5).unwrap();
        wal.restart();
        drop(wal);
        let (wal, replayed) = Wal::open(&path, 5).unwrap();
        assert!(replayed.is_empty());
        assert_eq!(wal.next_seq(), 6);
    }
}
