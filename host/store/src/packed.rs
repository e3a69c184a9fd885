//! A task's stored value: its record, where the listing index holds it, and, while they fit
//! beside it, the newest events and product chunks of its writes (issue 35, decision 2).
//!
//! sled's cost goes with the number of entries a write touches, not with their bytes (see
//! `event_batch.rs`): a `start` that ends awaiting completion wrote its record, its events, its
//! product chunk and what the listing index holds for it (`listing.rs`) as four entries. Packed,
//! they are one, and the record is rewritten by every change anyway, so carrying a few small
//! events and chunks along costs bytes, not entries.
//!
//! ```text
//! packed = 0xFD, listing length: u32 BE, listing (empty: not listed; else as `listing.rs`
//!          encodes it), record length: u32 BE, record (JSON),
//!          event count: u32 BE, (seq: u64 BE, length: u32 BE, event)*,
//!          (product length: u32 BE, product, seq: u64 BE, length: u32 BE, items)*
//! plain  = the record (JSON, as every record was stored before packing: nothing inline, and
//!          what is listed in its own `k` entry)
//! packed, compressed = 0xFC, length of the packed value less its marker: u32 BE,
//!          that value less its marker as an LZ4 block
//! ```
//!
//! A packed value of [`COMPRESS_FROM`] bytes or more is stored compressed when that is smaller
//! and its task is not running (issue 35, decision 2's compact encoding; a running task's value
//! is written again with its next report): sled 0.34 writes a value to its log again each
//! time it rewrites the leaf that holds it (a split of a leaf past 16 entries writes both
//! halves, every value), so its CPU per start goes with the bytes of the values; an echo
//! start's value of ~1.8 KB of JSON compresses to about half. LZ4 (`lz4_flex`, its safe
//! encoder and decoder) because compressing 2 KB costs a few µs where sled's rewrites cost
//! tens; the keys and the JSON inside are unchanged, so every reader goes through [`Unpacked`]
//! and nothing else changes.
//!
//! The rules, kept by `Store::task_batch` when it writes a record:
//! - a write's new events and chunks stay inline while the whole value fits in one entry
//!   ([`super::parts::PART_BYTES`]) and the task has not ended; otherwise the inline ones and the
//!   new ones go to entries of their own (the events of one write under one key), so what is
//!   inline is always newer than what is keyed;
//! - a write that ends the task moves its inline events out, so the sweep of ended tasks' events
//!   (`retention.rs`) finds them all under the events prefix; inline chunks stay (a product
//!   lives as long as its record);
//! - readers take the keyed entries, then the inline ones, by seq.

use super::parts::PART_BYTES;

/// The first byte of a packed value (a plain record is JSON: it starts with `{`).
const PACKED: u8 = 0xFD;
/// The first byte of a packed value stored compressed.
const COMPRESSED: u8 = 0xFC;
/// The smallest packed value worth compressing: below, the saving is a few bytes at best.
pub const COMPRESS_FROM: usize = 256;

/// A stored task value made readable: decompressed when it was stored compressed, borrowed
/// as it is otherwise. The one way to a [`Packed`], so no reader can take compressed bytes for
/// a record.
#[derive(Debug)]
pub struct Unpacked<'v>(std::borrow::Cow<'v, [u8]>);

impl<'v> Unpacked<'v> {
    /// A stored value, decompressed if it was compressed. A compressed value says how long it
    /// was; that length is at most one entry ([`PART_BYTES`]: only a value that fits one is
    /// compressed), so a damaged one cannot ask for more.
    pub fn new(value: &'v [u8]) -> Result<Self, Malformed> {
        let Some((&COMPRESSED, mut rest)) = value.split_first() else {
            return Ok(Unpacked(std::borrow::Cow::Borrowed(value)));
        };
        let len = u32::from_be_bytes(*take_array::<4>(&mut rest, "compressed length")?) as usize;
        if len > PART_BYTES {
            return Err(Malformed("a compressed value longer than an entry"));
        }
        let mut out = Vec::with_capacity(len + 1);
        out.push(PACKED);
        out.resize(len + 1, 0);
        match lz4_flex::block::decompress_into(rest, &mut out[1..]) {
            Ok(n) if n == len => Ok(Unpacked(std::borrow::Cow::Owned(out))),
            _ => Err(Malformed("a compressed value that does not decompress")),
        }
    }

    /// The value read: its record, listing, inline events and chunks.
    pub fn read(&self) -> Result<Packed<'_>, Malformed> {
        Packed::decode(&self.0)
    }

    /// Its bytes, uncompressed.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A stored task value that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed task value: {0}")]
pub struct Malformed(&'static str);

/// One product chunk kept inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineChunk<'v> {
    /// The product's id.
    pub product: &'v str,
    /// The seq of the chunk's event.
    pub seq: u64,
    /// Its DataItems, as JSON.
    pub items: &'v [u8],
}

/// A task value, read.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Packed<'v> {
    /// Where the listing index holds the task, encoded (`listing.rs`); empty: not listed, or
    /// said by an entry of its own (a plain value).
    pub listing: &'v [u8],
    /// The record, as JSON.
    pub record: &'v [u8],
    /// Inline events: `(seq, event)`, in seq order.
    pub events: Vec<(u64, &'v [u8])>,
    /// Inline product chunks, in seq order.
    pub chunks: Vec<InlineChunk<'v>>,
}

impl<'v> Packed<'v> {
    /// Read a stored task value, packed or plain; a compressed one is refused (it is read
    /// through [`Unpacked`]).
    fn decode(value: &'v [u8]) -> Result<Self, Malformed> {
        if value.first() == Some(&COMPRESSED) {
            return Err(Malformed("a compressed value read as it is stored"));
        }
        let Some((&PACKED, mut rest)) = value.split_first() else {
            return Ok(Packed {
                record: value,
                ..Packed::default()
            });
        };
        let listing = take(&mut rest, "listing")?;
        let record = take(&mut rest, "record")?;
        let count = u32::from_be_bytes(*take_array::<4>(&mut rest, "event count")?);
        let mut events = Vec::new();
        for _ in 0..count {
            let seq = u64::from_be_bytes(*take_array::<8>(&mut rest, "event seq")?);
            events.push((seq, take(&mut rest, "event")?));
        }
        let mut chunks = Vec::new();
        while !rest.is_empty() {
            let product = std::str::from_utf8(take(&mut rest, "product")?)
                .map_err(|_| Malformed("a product id that is not UTF-8"))?;
            let seq = u64::from_be_bytes(*take_array::<8>(&mut rest, "chunk seq")?);
            let items = take(&mut rest, "chunk")?;
            chunks.push(InlineChunk {
                product,
                seq,
                items,
            });
        }
        Ok(Packed {
            listing,
            record,
            events,
            chunks,
        })
    }

    /// Whether the value is a record alone (stored plain).
    fn is_plain(&self) -> bool {
        self.listing.is_empty() && self.events.is_empty() && self.chunks.is_empty()
    }

    /// The bytes [`Packed::encode`] writes; a record alone is stored plain.
    pub fn encoded_len(&self) -> usize {
        if self.is_plain() {
            return self.record.len();
        }
        1 + 4
            + self.listing.len()
            + 4
            + self.record.len()
            + 4
            + self.events.iter().map(|(_, e)| 12 + e.len()).sum::<usize>()
            + self
                .chunks
                .iter()
                .map(|c| 16 + c.product.len() + c.items.len())
                .sum::<usize>()
    }

    /// Whether the value fits in one sled entry (no parts).
    pub fn fits(&self) -> bool {
        self.encoded_len() <= PART_BYTES
    }

    /// The value to store: compressed when that is smaller (see [`Unpacked`]).
    pub fn encode(&self) -> Vec<u8> {
        let packed = self.encode_uncompressed();
        // Only a value that fits one entry: what [`Unpacked::new`] takes, bounded.
        if !(COMPRESS_FROM..=PART_BYTES).contains(&packed.len()) || packed.first() != Some(&PACKED)
        {
            return packed;
        }
        let body = &packed[1..];
        let mut out = vec![0u8; 5 + lz4_flex::block::get_maximum_output_size(body.len())];
        out[0] = COMPRESSED;
        out[1..5].copy_from_slice(&(body.len() as u32).to_be_bytes());
        match lz4_flex::block::compress_into(body, &mut out[5..]) {
            Ok(n) if 5 + n < packed.len() => {
                out.truncate(5 + n);
                out
            }
            _ => packed,
        }
    }

    /// The value to store, uncompressed: for a value about to be written again (see
    /// `Store::task_batch`), where compressing it would cost CPU for bytes that do not stay.
    pub fn encode_uncompressed(&self) -> Vec<u8> {
        if self.is_plain() {
            return self.record.to_vec();
        }
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(PACKED);
        put(&mut out, self.listing);
        put(&mut out, self.record);
        // Counts and lengths are bounded by the request body limit, far below 4 GiB.
        out.extend_from_slice(&(self.events.len() as u32).to_be_bytes());
        for (seq, event) in &self.events {
            out.extend_from_slice(&seq.to_be_bytes());
            put(&mut out, event);
        }
        for chunk in &self.chunks {
            put(&mut out, chunk.product.as_bytes());
            out.extend_from_slice(&chunk.seq.to_be_bytes());
            put(&mut out, chunk.items);
        }
        out
    }
}

/// Append `bytes` with their length first.
fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Take a length-prefixed field off the front of `rest`.
fn take<'v>(rest: &mut &'v [u8], what: &'static str) -> Result<&'v [u8], Malformed> {
    let len = u32::from_be_bytes(*take_array::<4>(rest, what)?) as usize;
    let (field, tail) = rest.split_at_checked(len).ok_or(Malformed(what))?;
    *rest = tail;
    Ok(field)
}

/// Take `N` bytes off the front of `rest`.
fn take_array<'v, const N: usize>(
    rest: &mut &'v [u8],
    what: &'static str,
) -> Result<&'v [u8; N], Malformed> {
    let (array, tail) = rest.split_first_chunk::<N>().ok_or(Malformed(what))?;
    *rest = tail;
    Ok(array)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::WriteNow;
    use crate::{ChunkWrite, Encoded, Store, TaskKey, TaskWrite};

    fn event(seq: u64, pad: usize) -> (u64, Encoded) {
        (
            seq,
            Encoded::of(&serde_json::json!({ "seq": seq, "pad": "p".repeat(pad) })).unwrap(),
        )
    }

    /// The record every write of these tests stores.
    fn record() -> Encoded {
        Encoded::of(&serde_json::json!({ "task": "t" })).unwrap()
    }

    /// A chunk of product `p` appended at `seq`.
    fn chunk(seq: u64, items: &str) -> ChunkWrite {
        ChunkWrite {
            product: "p".into(),
            seq,
            items: Encoded::of(&items).unwrap(),
            replaces: false,
        }
    }

    fn seqs(store: &Store, key: &TaskKey, after: u64, limit: usize) -> Vec<u64> {
        let events = store.events_after(key, after, limit).unwrap();
        events.into_iter().map(|(seq, _)| seq).collect()
    }

    /// sled applies a round key by key and a reader reads the value first, then the keys: the
    /// keys a write moves inline events and chunks to are written before the value without
    /// them, so a reader between the two finds them in one place or the other.
    #[tokio::test]
    async fn moved_events_and_chunks_are_written_before_the_value_that_lets_them_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("a", "t");
        store
            .write_task_now(TaskWrite {
                events: vec![event(1, 0)],
                chunks: vec![chunk(1, "first")],
                ..TaskWrite::record_only(&key, record())
            })
            .unwrap();
        let batch = store
            .task_batch(TaskWrite {
                events: vec![event(2, PART_BYTES)],
                chunks: vec![chunk(2, &"x".repeat(PART_BYTES))],
                ..TaskWrite::record_only(&key, record())
            })
            .unwrap();
        let keys = batch.keys();
        let at = |k: &[u8]| keys.iter().position(|w| *w == k).unwrap();
        let value = at(&key.record_key());
        assert!(at(&key.event_key(1)) < value, "{keys:?}");
        let mut first_chunk = key.product_prefix("p");
        first_chunk.extend_from_slice(&1u64.to_be_bytes());
        assert!(at(&first_chunk) < value, "{keys:?}");
    }

    /// A task's first write, marked new by its writer (`TaskWrite::new_task`), skips the
    /// look-ups for a stored value and stored chunks, and stores exactly what the same write
    /// unmarked does.
    #[tokio::test]
    async fn a_first_write_marked_new_stores_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (marked, unmarked) = (TaskKey::new("a", "t"), TaskKey::new("b", "t"));
        for (key, new_task) in [(&marked, true), (&unmarked, false)] {
            store
                .write_task_now(TaskWrite {
                    events: vec![event(1, 0), event(2, 0)],
                    chunks: vec![ChunkWrite {
                        replaces: true,
                        ..chunk(2, "whole")
                    }],
                    listing: Some(crate::Listing {
                        changed_ms: 1,
                        state: aiphost_model::TaskState::AwaitingCompletion,
                        session: Some("s".into()),
                    }),
                    new_task,
                    ..TaskWrite::record_only(key, record())
                })
                .unwrap();
        }
        let value = |key: &TaskKey| store.inner.tasks.get(key.record_key()).unwrap();
        assert!(value(&marked).is_some());
        assert_eq!(value(&marked), value(&unmarked));
        assert_eq!(seqs(&store, &marked, 0, 10), [1, 2]);
        let chunks = store.product_chunks(&marked, "p").unwrap();
        let items: Vec<String> = chunks.iter().map(|c| c.decode().unwrap()).collect();
        assert_eq!(items, ["whole"]);
    }

    /// A new task's record, events and chunk are one key; a write that outgrows one entry or
    /// ends the task moves its events to a key of their own; every read sees them all, in order.
    #[tokio::test]
    async fn a_new_task_is_one_key_until_it_outgrows_one_entry_or_ends() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let key = TaskKey::new("a", "t");
        let before = store.committed_keys();
        store
            .write_task_now(TaskWrite {
                events: vec![event(1, 0), event(2, 0), event(3, 0)],
                chunks: vec![chunk(3, "first")],
                ..TaskWrite::record_only(&key, record())
            })
            .unwrap();
        assert_eq!(store.committed_keys() - before, 1);
        assert_eq!(seqs(&store, &key, 0, 10), [1, 2, 3]);
        let items = |store: &Store| -> Vec<String> {
            let chunks = store.product_chunks(&key, "p").unwrap();
            chunks.iter().map(|c| c.decode().unwrap()).collect()
        };
        assert_eq!(items(&store), ["first"]);

        // Too large for one entry: the inline events and this one go to a key, as do the chunks.
        store
            .write_task_now(TaskWrite {
                events: vec![event(4, PART_BYTES)],
                chunks: vec![chunk(4, "second")],
                ..TaskWrite::record_only(&key, record())
            })
            .unwrap();
        // Small again: inline, after the keyed ones.
        store
            .write_task_now(TaskWrite {
                events: vec![event(5, 0)],
                chunks: vec![chunk(5, "third")],
                ..TaskWrite::record_only(&key, record())
            })
            .unwrap();
        assert_eq!(seqs(&store, &key, 0, 10), [1, 2, 3, 4, 5]);
        assert_eq!(seqs(&store, &key, 3, 10), [4, 5]);
        assert_eq!(seqs(&store, &key, 0, 2), [1, 2]);
        assert_eq!(items(&store), ["first", "second", "third"]);
        assert_eq!(store.first_event_seq(&key).unwrap(), Some(1));

        // The trim reaches into the keyed entry; the inline event stays.
        store
            .write_task_now(TaskWrite {
                events: vec![event(6, 0)],
                trim_below: Some(4),
                ..TaskWrite::record_only(&key, record())
            })
            .unwrap();
        assert_eq!(seqs(&store, &key, 0, 10), [4, 5, 6]);

        // Ending moves the inline events to a key, where the sweep of ended tasks finds them;
        // the product stays whole.
        store
            .write_task_now(TaskWrite {
                events: vec![event(7, 0)],
                ended_at: Some(1_000),
                ..TaskWrite::record_only(&key, record())
            })
            .unwrap();
        assert_eq!(seqs(&store, &key, 0, 10), [4, 5, 6, 7]);
        assert_eq!(store.sweep_ended_events(2_000).unwrap(), 1);
        assert!(seqs(&store, &key, 0, 10).is_empty());
        assert_eq!(items(&store), ["first", "second", "third"]);
        let record: serde_json::Value = store.load_task(&key).unwrap().unwrap();
        assert_eq!(record["task"], "t");
    }

    fn sample() -> Packed<'static> {
        Packed {
            listing: b"\0\0\0\0\0\0\0\x07\x01\0",
            record: br#"{"task":{"id":"t1"}}"#,
            events: vec![(1, b"{\"a\":1}"), (2, b"")],
            chunks: vec![InlineChunk {
                product: "p1",
                seq: 2,
                items: b"[]",
            }],
        }
    }

    #[test]
    fn packed_values_round_trip_and_a_bare_record_is_stored_plain() {
        let packed = sample();
        let bytes = packed.encode();
        assert_eq!(bytes.len(), packed.encoded_len());
        assert_eq!(Packed::decode(&bytes), Ok(sample()));
        let plain = Packed {
            record: b"{}",
            ..Packed::default()
        };
        assert_eq!(plain.encode(), b"{}");
        assert_eq!(plain.encoded_len(), 2);
        assert_eq!(Packed::decode(b"{}"), Ok(plain));
    }

    #[test]
    fn every_truncation_of_a_packed_value_is_an_error_or_a_shorter_whole() {
        let bytes = sample().encode();
        for cut in 1..bytes.len() {
            // A cut after the events leaves a value without its chunk; anything else fails.
            if let Ok(p) = Packed::decode(&bytes[..cut]) {
                assert!(p.chunks.is_empty() && p.events.len() == 2, "cut at {cut}");
            }
        }
    }
}

#[cfg(test)]
mod compression_tests {
    use super::*;

    /// A value like an echo start's: a JSON record and events with the same keys again and
    /// again, ~1.5 KB.
    fn large() -> (Vec<u8>, Vec<Vec<u8>>) {
        let status = |s: &str| {
            format!(r#"{{"state":"{s}","stateChangedAt":"2026-12-07T18:47:29.477782+00:00"}}"#)
        };
        let record = format!(
            r#"{{"task":{{"id":"x2","status":{},"status_history":[{},{},{}]}},"limits":{{"response_timeout_ms":25000}}}}"#,
            status("awaiting-completion"),
            status("accepted"),
            status("working"),
            status("awaiting-completion")
        );
        let events = (1..=4)
            .map(|i| format!(r#"{{"seq":{i},"at":"2026-12-07T18:47:29.47789{i}+00:00","kind":"status","status":{}}}"#, status("working")).into_bytes())
            .collect();
        (record.into_bytes(), events)
    }

    fn packed<'v>(record: &'v [u8], events: &'v [Vec<u8>]) -> Packed<'v> {
        Packed {
            listing: b"\0\0\0\0\0\0\0\x07\x01\0",
            record,
            events: events
                .iter()
                .enumerate()
                .map(|(i, e)| (i as u64 + 1, e.as_slice()))
                .collect(),
            chunks: vec![InlineChunk {
                product: "echo",
                seq: 3,
                items: br#"[{"type":"text","text":"hello"}]"#,
            }],
        }
    }

    /// A packed value from [`COMPRESS_FROM`] bytes to one entry is stored compressed, smaller,
    /// and reads back whole; a smaller one, a larger one (stored in parts) and a plain record
    /// are stored as before.
    #[test]
    fn large_packed_values_are_stored_compressed_and_read_back_whole() {
        let (record, events) = large();
        let value = packed(&record, &events);
        let stored = value.encode();
        assert_eq!(stored[0], COMPRESSED);
        assert!(
            stored.len() * 2 < value.encoded_len(),
            "{} of {}",
            stored.len(),
            value.encoded_len()
        );
        let unpacked = Unpacked::new(&stored).unwrap();
        assert_eq!(unpacked.bytes().len(), value.encoded_len());
        assert_eq!(unpacked.read(), Ok(packed(&record, &events)));
        // Read as stored, without unpacking: an error, never a record of compressed bytes.
        assert!(Packed::decode(&stored).is_err());
        // Small: packed as before; plain: the record itself.
        let small = Packed {
            listing: b"\x01",
            record: b"{}",
            ..Packed::default()
        };
        assert_eq!(small.encode()[0], PACKED);
        let small_stored = small.encode();
        assert!(matches!(
            Unpacked::new(&small_stored),
            Ok(Unpacked(std::borrow::Cow::Borrowed(_)))
        ));
        let plain = Packed {
            record: &record,
            ..Packed::default()
        };
        assert_eq!(plain.encode(), record);
        let big = vec![b'x'; PART_BYTES];
        let large = Packed {
            listing: b"\x01",
            record: &big,
            ..Packed::default()
        };
        assert_eq!(large.encode()[0], PACKED);
        let large_stored = large.encode();
        assert_eq!(Unpacked::new(&large_stored).unwrap().read(), Ok(large));
    }

    /// A damaged compressed value is an error, whatever the damage: cut short, a byte changed,
    /// or a length past one entry (which is refused before anything is allocated for it).
    #[test]
    fn a_damaged_compressed_value_is_an_error() {
        let (record, events) = large();
        let stored = packed(&record, &events).encode();
        for cut in 0..stored.len() {
            let unpacked = Unpacked::new(&stored[..cut]);
            assert!(
                unpacked.is_err() || cut == 0 || unpacked.unwrap().read().is_err(),
                "cut at {cut}"
            );
        }
        for at in 1..stored.len() {
            let mut damaged = stored.clone();
            damaged[at] ^= 0x5A;
            // Either refused, or read as some value: never a panic, never more than an entry.
            if let Ok(v) = Unpacked::new(&damaged) {
                assert!(v.bytes().len() <= PART_BYTES + 1, "at {at}");
            }
        }
        let mut long = stored.clone();
        long[1..5].copy_from_slice(&(PART_BYTES as u32 + 1).to_be_bytes());
        assert_eq!(
            Unpacked::new(&long).err(),
            Some(Malformed("a compressed value longer than an entry"))
        );
    }
}
