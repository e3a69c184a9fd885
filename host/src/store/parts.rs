//! Large values, stored in parts.
//!
//! sled 0.34 keeps a value it has written or read in memory for as long as its leaf stays
//! cached, and a leaf holding large values is, in practice, never evicted: 8 rounds of 8 tasks
//! writing sixteen 1 MiB values each left a process at 2 GiB, whatever `cache_capacity` said,
//! while the same bytes as 8 KiB values stayed under 100 MiB (BENCHMARKS.md, issue 12). A partner
//! or a Leader decides how large a product chunk, a command or a key-value entry is, so no value
//! the store writes is larger than [`PART_BYTES`]: a larger one is stored as a head that counts its
//! parts, and the parts under keys of their own, in the same batch.
//!
//! ```text
//! small value:  key                       → the value as it is
//! large value:  key                       → 0xFE, parts: u32 BE
//!               0xFF key index: u32 BE     → the part at that index (each PART_BYTES but the last)
//! ```
//!
//! Every value a store kept before parts existed is small or starts with another byte (JSON, an
//! event batch's 0xFF), so it reads unchanged. A partner's key-value entry that itself starts
//! with 0xFE is stored in parts whatever its size, so a head is never mistaken. Part keys start
//! with 0xFF, after every tag: no prefix scan of the store's own keys meets them.

use super::StoreError;
use sled::IVec;
use std::borrow::Cow;

/// The largest value stored as it is.
pub const PART_BYTES: usize = 8 * 1024;

/// The first byte of a head.
const HEAD: u8 = 0xFE;
/// The first byte of a part key.
const PART: u8 = 0xFF;

/// The key of part `index` of the value at `key`.
fn part_key(key: &[u8], index: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + key.len() + 4);
    k.push(PART);
    k.extend_from_slice(key);
    k.extend_from_slice(&index.to_be_bytes());
    k
}

/// How many parts the stored value `head` has (0: it is stored whole).
pub fn parts_of(head: &[u8]) -> u32 {
    match head {
        [HEAD, count @ ..] => count.try_into().map(u32::from_be_bytes).unwrap_or_default(),
        _ => 0,
    }
}

/// Put `value` at `key` in `batch`, whose value now has `old_parts` parts (0 when it is new or
/// small): parts the new value does not overwrite are removed.
pub fn insert(batch: &mut sled::Batch, key: &[u8], value: &[u8], old_parts: u32) {
    let split = value.len() > PART_BYTES || value.first() == Some(&HEAD);
    let parts = if split {
        let parts: Vec<&[u8]> = value.chunks(PART_BYTES).collect();
        // A value is bounded by a request body or a product chunk, far below 4 GiB × 8 KiB.
        let count = u32::try_from(parts.len()).unwrap_or(u32::MAX);
        let mut head = vec![HEAD];
        head.extend_from_slice(&count.to_be_bytes());
        batch.insert(key, head);
        for (index, part) in (0u32..).zip(parts) {
            batch.insert(part_key(key, index), part);
        }
        count
    } else {
        batch.insert(key, value);
        0
    };
    for index in parts..old_parts {
        batch.remove(part_key(key, index));
    }
}

/// Remove the value at `key`, whose stored head is `head`, and its parts.
pub fn remove(batch: &mut sled::Batch, key: &[u8], head: &[u8]) {
    for index in 0..parts_of(head) {
        batch.remove(part_key(key, index));
    }
    batch.remove(key);
}

/// The whole value whose head, stored at `key`, is `head`.
pub fn assemble<'h>(
    tree: &sled::Tree,
    key: &[u8],
    head: &'h IVec,
) -> Result<Cow<'h, [u8]>, StoreError> {
    let count = parts_of(head);
    if count == 0 {
        return Ok(Cow::Borrowed(&head[..]));
    }
    let mut value = Vec::with_capacity(count as usize * PART_BYTES);
    for index in 0..count {
        let part = tree.get(part_key(key, index))?.ok_or_else(|| {
            StoreError::Corrupt(format!(
                "part {index} of {count} of a stored value is missing"
            ))
        })?;
        value.extend_from_slice(&part);
    }
    Ok(Cow::Owned(value))
}

/// The whole value at `key` in `tree`, if there is one.
pub fn get(tree: &sled::Tree, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
    match tree.get(key)? {
        None => Ok(None),
        Some(head) => Ok(Some(assemble(tree, key, &head)?.into_owned())),
    }
}

/// How many parts the value at `key` has now (0 when there is none).
pub fn stored_parts(tree: &sled::Tree, key: &[u8]) -> Result<u32, StoreError> {
    Ok(tree.get(key)?.map_or(0, |head| parts_of(&head)))
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

    #[test]
    fn large_values_are_stored_in_parts_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let tree = db.open_tree("t").unwrap();
        let large: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut batch = sled::Batch::default();
        insert(&mut batch, b"a", &large, 0);
        insert(&mut batch, b"small", b"{\"x\":1}", 0);
        insert(&mut batch, b"odd", &[HEAD, 1, 2], 0);
        tree.apply_batch(batch).unwrap();
        assert!(raw(&tree).iter().all(|(_, v)| v.len() <= PART_BYTES));
        assert_eq!(get(&tree, b"a").unwrap().unwrap(), large);
        assert_eq!(get(&tree, b"small").unwrap().unwrap(), b"{\"x\":1}");
        assert_eq!(get(&tree, b"odd").unwrap().unwrap(), [HEAD, 1, 2]);
        assert_eq!(stored_parts(&tree, b"a").unwrap(), 13);
        // A scan of the store's own prefixes never meets a part.
        assert_eq!(tree.scan_prefix(b"a").count(), 1);

        // Overwritten by a smaller value: the parts it no longer has go.
        let mut batch = sled::Batch::default();
        insert(
            &mut batch,
            b"a",
            &large[..20_000],
            stored_parts(&tree, b"a").unwrap(),
        );
        tree.apply_batch(batch).unwrap();
        assert_eq!(get(&tree, b"a").unwrap().unwrap(), &large[..20_000]);
        let mut batch = sled::Batch::default();
        insert(
            &mut batch,
            b"a",
            b"tiny",
            stored_parts(&tree, b"a").unwrap(),
        );
        tree.apply_batch(batch).unwrap();
        assert_eq!(
            raw(&tree).len(),
            1 + 1 + 1 + 1,
            "a, small, odd and odd's one part"
        );

        let mut batch = sled::Batch::default();
        let head = tree.get(b"odd").unwrap().unwrap();
        remove(&mut batch, b"odd", &head);
        tree.apply_batch(batch).unwrap();
        assert_eq!(raw(&tree).len(), 2, "removed with its parts");
    }
}
