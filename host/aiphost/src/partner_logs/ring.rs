//! A partner's recent log lines: the newest records up to a count and a byte size, the oldest
//! dropped first. The newest record is always kept, whatever its size.

use super::record::LogRecord;
use std::collections::VecDeque;
use std::sync::Arc;

/// The bounded history of one partner's log.
#[derive(Debug)]
pub struct Ring {
    records: VecDeque<Arc<LogRecord>>,
    bytes: usize,
    max_lines: usize,
    max_bytes: usize,
}

impl Ring {
    /// An empty ring keeping at most `max_lines` records and `max_bytes` of them
    /// ([`LogRecord::cost`]).
    pub fn new(max_lines: usize, max_bytes: usize) -> Self {
        Ring {
            records: VecDeque::new(),
            bytes: 0,
            max_lines: max_lines.max(1),
            max_bytes,
        }
    }

    /// Keep `record` (its seq above every kept one's), dropping the oldest over the bounds.
    pub fn push(&mut self, record: Arc<LogRecord>) {
        self.bytes += record.cost();
        self.records.push_back(record);
        while self.records.len() > 1
            && (self.records.len() > self.max_lines || self.bytes > self.max_bytes)
        {
            if let Some(old) = self.records.pop_front() {
                self.bytes -= old.cost();
            }
        }
    }

    /// The kept records after seq `after`, oldest first.
    pub fn after(&self, after: u64) -> impl DoubleEndedIterator<Item = &Arc<LogRecord>> {
        // Seqs only grow along the ring: the first one after `after` is found by halving.
        let start = self.records.partition_point(|r| r.seq <= after);
        self.records.range(start..)
    }

    /// The seq of the oldest record kept.
    pub fn first_seq(&self) -> Option<u64> {
        self.records.front().map(|r| r.seq)
    }

    /// Bytes the kept records count.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::LogLevel;
    use super::*;
    use crate::model::Timestamp;

    fn record(seq: u64, message_bytes: usize) -> Arc<LogRecord> {
        Arc::new(LogRecord {
            seq,
            time: Timestamp::now(),
            level: LogLevel::Info,
            agent: Arc::from("echo"),
            version: 0,
            tenant: None,
            leader: None,
            task: Some("t".into()),
            message: "m".repeat(message_bytes),
            fields: Vec::new(),
        })
    }

    fn seqs(ring: &Ring, after: u64) -> Vec<u64> {
        ring.after(after).map(|r| r.seq).collect()
    }

    #[test]
    fn the_ring_keeps_the_newest_lines_up_to_its_count() {
        let mut ring = Ring::new(3, usize::MAX);
        for seq in 1..=5 {
            ring.push(record(seq, 10));
        }
        assert_eq!(seqs(&ring, 0), [3, 4, 5]);
        assert_eq!(seqs(&ring, 3), [4, 5]);
        assert_eq!(seqs(&ring, 5), Vec::<u64>::new());
        assert_eq!(ring.first_seq(), Some(3));
        assert_eq!(ring.bytes(), 3 * record(0, 10).cost());
    }

    #[test]
    fn the_ring_keeps_the_newest_lines_up_to_its_bytes_and_always_the_newest() {
        let one = record(0, 1000).cost();
        let mut ring = Ring::new(100, 3 * one);
        for seq in 1..=10 {
            ring.push(record(seq, 1000));
        }
        assert_eq!(seqs(&ring, 0), [8, 9, 10]);
        assert!(ring.bytes() <= 3 * one);
        // A record larger than the whole bound replaces everything, and stays.
        ring.push(record(11, 10 * one));
        assert_eq!(seqs(&ring, 0), [11]);
        ring.push(record(12, 10));
        assert_eq!(seqs(&ring, 0), [12]);
        assert_eq!(ring.after(0).count(), 1);
    }
}
