//! Large values, stored in parts.
//!
//! sled 0.34 keeps a value it has written or read in memory for as long as its leaf stays
//! cached, and a leaf holding large values is, in practice, never evicted: 8 rounds of 8 tasks
//! writing sixteen 1 MiB values each left a process at 2 GiB, whatever `cache_capacity` said,
//! while the same bytes as 8 KiB values stayed under 100 MiB (`aiphost-bench sled-values`,
//! BENCHMARKS.md, issue 12). A partner or a Leader decides how large a product chunk, a command
//! or a key-value entry is, so no value the store writes is larger than [`PART_BYTES`]: a larger
//! one is stored as a head that names its parts, and the parts under keys of their own, in the
//! same batch.
//!
//! ```text
//! small value:  key                              → the value as it is
//! large value:  key                              → 0xFE, parts: u32 BE, generation: u64 BE
//!               0xFF key generation index: u32 BE → the part at that index (each PART_BYTES but
//!                                                   the last)
//! ```
//!
//! Each write of a large value has a generation of its own, so parts are never overwritten: a
//! reader that meets a head reads exactly that value's parts, or finds them gone (the value was
//! replaced or removed meanwhile) and reads the key again. Whoever replaces or removes a value
//! removes the parts its head names, so the caller must keep writers of one key apart (the
//! engine serialises a task's writes; the store locks the keys others write).
//!
//! Every value a store kept before parts existed is small or starts with another byte (JSON, an
//! event batch's 0xFF), so it reads unchanged; a partner's key-value entry that itself starts with
//! 0xFE is stored in parts whatever its size, so a head is never mistaken for a value (and an
//! older entry that looks like a head but has no parts reads as it is). Part keys start with
//! 0xFF, after every tag: no prefix scan of the store's own keys meets them.

use super::StoreError;
use super::write_batch::Writes;
use sled::IVec;
use std::borrow::Cow;

/// The largest value stored as it is.
pub const PART_BYTES: usize = 8 * 1024;

/// The first byte of a head.
const HEAD: u8 = 0xFE;
/// The first byte of a part key.
const PART: u8 = 0xFF;
/// The most parts a head may name (8 GiB): more is not a head.
const MAX_PARTS: u32 = 1 << 20;
/// How often a read starts again when the value it reads is replaced under it.
const READ_TRIES: usize = 8;

/// What a head says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    parts: u32,
    generation: u64,
}

impl Head {
    fn parse(value: &[u8]) -> Option<Head> {
        let [HEAD, rest @ ..] = value else {
            return None;
        };
        let (parts, generation) = rest.split_first_chunk::<4>()?;
        let generation: [u8; 8] = generation.try_into().ok()?;
        let parts = u32::from_be_bytes(*parts);
        (parts > 0 && parts <= MAX_PARTS).then_some(Head {
            parts,
            generation: u64::from_be_bytes(generation),
        })
    }

    fn encode(self) -> Vec<u8> {
        let mut head = Vec::with_capacity(13);
        head.push(HEAD);
        head.extend_from_slice(&self.parts.to_be_bytes());
        head.extend_from_slice(&self.generation.to_be_bytes());
        head
    }

    fn part_key(self, key: &[u8], index: u32) -> Vec<u8> {
        let mut k = Vec::with_capacity(1 + key.len() + 12);
        k.push(PART);
        k.extend_from_slice(key);
        k.extend_from_slice(&self.generation.to_be_bytes());
        k.extend_from_slice(&index.to_be_bytes());
        k
    }
}

/// Put `value` at `key` in `batch`, replacing `old` (the value stored there now, if any: its
/// parts go). `db` numbers the generation of a value that needs parts.
pub(crate) fn insert(
    batch: &mut impl Writes,
    db: &sled::Db,
    key: &[u8],
    value: &[u8],
    old: Option<&[u8]>,
) -> Result<(), StoreError> {
    if value.len() > PART_BYTES || value.first() == Some(&HEAD) {
        let chunks: Vec<&[u8]> = value.chunks(PART_BYTES).collect();
        let head = Head {
            // A value is bounded by a request body or a product chunk, far below MAX_PARTS.
            parts: u32::try_from(chunks.len().max(1)).unwrap_or(MAX_PARTS),
            generation: db.generate_id()?,
        };
        for (index, part) in (0u32..).zip(chunks) {
            batch.insert(head.part_key(key, index), part);
        }
        batch.insert(key, head.encode());
    } else {
        batch.insert(key, value);
    }
    if let Some(old) = old.and_then(Head::parse) {
        for index in 0..old.parts {
            batch.remove(old.part_key(key, index));
        }
    }
    Ok(())
}

/// Remove the value at `key`, stored as `head` now, and its parts.
pub(crate) fn remove(batch: &mut impl Writes, key: &[u8], head: &[u8]) {
    if let Some(head) = Head::parse(head) {
        for index in 0..head.parts {
            batch.remove(head.part_key(key, index));
        }
    }
    batch.remove(key);
}

/// The whole value at `key`, met as `head` by a scan or a read; `None` when it went meanwhile
/// (removed, as a trim removes events under a stream that reads them).
pub fn assemble<'h>(
    tree: &sled::Tree,
    key: &[u8],
    head: &'h IVec,
) -> Result<Option<Cow<'h, [u8]>>, StoreError> {
    let Some(mut current) = Head::parse(head) else {
        return Ok(Some(Cow::Borrowed(&head[..])));
    };
    let mut raw: Cow<'h, [u8]> = Cow::Borrowed(&head[..]);
    for _ in 0..READ_TRIES {
        let mut value = Vec::with_capacity(PART_BYTES.min(current.parts as usize * PART_BYTES));
        let mut whole = true;
        for index in 0..current.parts {
            match tree.get(current.part_key(key, index))? {
                Some(part) => value.extend_from_slice(&part),
                None => {
                    whole = false;
                    break;
                }
            }
        }
        if whole {
            return Ok(Some(Cow::Owned(value)));
        }
        // A part is missing: the value was replaced or removed since its head was read, or it
        // is an older value that only looks like a head.
        match tree.get(key)? {
            None => return Ok(None),
            Some(now) if now[..] == raw[..] => {
                if value.is_empty() {
                    return Ok(Some(raw));
                }
                return Err(StoreError::Corrupt(format!(
                    "a part of a stored value of {} parts is missing",
                    current.parts
                )));
            }
            Some(now) => match Head::parse(&now) {
                Some(head) => {
                    current = head;
                    raw = Cow::Owned(now.to_vec());
                }
                None => return Ok(Some(Cow::Owned(now.to_vec()))),
            },
        }
    }
    Err(StoreError::Corrupt(
        "a stored value kept changing while it was read".into(),
    ))
}

/// The whole value at `key` in `tree`, if there is one.
pub fn get(tree: &sled::Tree, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
    match tree.get(key)? {
        None => Ok(None),
        Some(head) => Ok(assemble(tree, key, &head)?.map(Cow::into_owned)),
    }
}

/// The parts and generation a stored value's head names; `None` for a value stored as it is.
pub(crate) fn head_of(value: &[u8]) -> Option<(u32, u64)> {
    Head::parse(value).map(|head| (head.parts, head.generation))
}

/// The key of the value a part key belongs to, its generation and the part's index; `None` for
/// a key that is no part's.
pub(crate) fn part_of(key: &[u8]) -> Option<(&[u8], u64, u32)> {
    let [PART, rest @ ..] = key else {
        return None;
    };
    let (value, tail) = rest.split_at(rest.len().checked_sub(12)?);
    let (generation, index) = tail.split_first_chunk::<8>()?;
    let index: [u8; 4] = index.try_into().ok()?;
    Some((
        value,
        u64::from_be_bytes(*generation),
        u32::from_be_bytes(index),
    ))
}

/// The prefix of the part keys of every value whose key starts with `prefix`.
pub fn parts_prefix(prefix: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + prefix.len());
    k.push(PART);
    k.extend_from_slice(prefix);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(tree: &sled::Tree) -> Vec<(Vec<u8>, Vec<u8>)> {
        tree.iter()
            .map(|e| {
                let (k, v) = e.unwrap();
                (k.to_vec(), v.to_vec())
            })
            .collect()
    }

    fn put(db: &sled::Db, tree: &sled::Tree, key: &[u8], value: &[u8]) {
        let old = tree.get(key).unwrap();
        let mut batch = sled::Batch::default();
        insert(&mut batch, db, key, value, old.as_deref()).unwrap();
        tree.apply_batch(batch).unwrap();
    }

    #[test]
    fn large_values_are_stored_in_parts_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("t").unwrap();
        let large: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        put(&db, &tree, b"a", &large);
        put(&db, &tree, b"small", b"{\"x\":1}");
        put(&db, &tree, b"odd", &[HEAD, 1, 2]);
        assert!(raw(&tree).iter().all(|(_, v)| v.len() <= PART_BYTES));
        assert_eq!(get(&tree, b"a").unwrap().unwrap(), large);
        assert_eq!(get(&tree, b"small").unwrap().unwrap(), b"{\"x\":1}");
        assert_eq!(get(&tree, b"odd").unwrap().unwrap(), [HEAD, 1, 2]);
        // A scan of the store's own prefixes never meets a part.
        assert_eq!(tree.scan_prefix(b"a").count(), 1);

        // Replaced by smaller values: the old parts go.
        put(&db, &tree, b"a", &large[..20_000]);
        assert_eq!(get(&tree, b"a").unwrap().unwrap(), &large[..20_000]);
        put(&db, &tree, b"a", b"tiny");
        assert_eq!(raw(&tree).len(), 4, "a, small, odd and odd's one part");

        let head = tree.get(b"odd").unwrap().unwrap();
        let mut batch = sled::Batch::default();
        remove(&mut batch, b"odd", &head);
        tree.apply_batch(batch).unwrap();
        assert_eq!(raw(&tree).len(), 2, "removed with its parts");
    }

    /// A reader holding a head whose value is replaced reads the new value, never a mix; one
    /// whose value is removed reads nothing; an older value that only looks like a head reads as
    /// it is; a head naming absurdly many parts is no head.
    #[test]
    fn reads_survive_replacement_and_old_values() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("t").unwrap();
        put(&db, &tree, b"k", &vec![1u8; 30_000]);
        let stale = tree.get(b"k").unwrap().unwrap();
        put(&db, &tree, b"k", &vec![2u8; 20_000]);
        let read = assemble(&tree, b"k", &stale).unwrap().unwrap();
        assert_eq!(read.as_ref(), &vec![2u8; 20_000][..]);
        let head = tree.get(b"k").unwrap().unwrap();
        let mut batch = sled::Batch::default();
        remove(&mut batch, b"k", &head);
        tree.apply_batch(batch).unwrap();
        assert_eq!(assemble(&tree, b"k", &head).unwrap(), None);

        let looks_like_a_head = Head {
            parts: 2,
            generation: 7,
        }
        .encode();
        tree.insert(b"old", looks_like_a_head.clone()).unwrap();
        assert_eq!(get(&tree, b"old").unwrap().unwrap(), looks_like_a_head);
        let absurd = [HEAD, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(Head::parse(&absurd), None);
    }
}
