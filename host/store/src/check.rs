//! `aiphost store check`: verify a stopped store entry by entry, and say what it holds.
//!
//! First what start-up checks (`identity.rs`: is a file missing, older or cut short?); then every
//! entry of every tree: each value is whole (a large value's parts all there, no part without its
//! value), each decodes as what it is (a task record through the caller's decoder, since the
//! store does not know the engine's type; events, outbox entries and notification configs as
//! their types; the rest as JSON), the index entries (running `l`, deadline `d`, ended `x`,
//! retention `r`, listing `i` and `k`) point at stored records, and a task's events, history, product chunks, outbox
//! entries and given-up notifications belong to a stored task (the events and chunks packed into
//! a task's value, `packed.rs`, are checked with it).
//!
//! A whole store is opened as the host would open it (the rounds sled lost are applied from the
//! write-ahead log first, so the check sees what the host would serve); a damaged one is read as
//! it is and left unchanged. A store a running host holds is refused ([`StoreError::Locked`]).

use super::committer::{self, Committer, OnDamage};
use super::{Encoded, OutboxEntry, StoreError, event_batch, open_sled, parts, unreadable, unwind};
use aiphost_model::TaskEvent;
use aiphost_model::notification::NotificationConfig;
use serde::de::{DeserializeOwned, IgnoredAny};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// How long a check waits for the lock of a store that is closing.
const CLOSING_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The most problems a check lists; the rest are only counted.
const LISTED: usize = 50;

/// What a check found.
#[derive(Debug, Default)]
pub struct Checked {
    /// Entries by kind ("task records", "events", …), in name order.
    pub counts: BTreeMap<&'static str, u64>,
    /// The problems found (the first [`LISTED`] of them), each naming what is wrong where.
    pub problems: Vec<String>,
    /// Problems found beyond those listed.
    pub unlisted: u64,
}

impl Checked {
    /// Whether the store is whole: no problem found.
    pub fn is_whole(&self) -> bool {
        self.problems.is_empty()
    }

    fn count(&mut self, kind: &'static str) {
        *self.counts.entry(kind).or_default() += 1;
    }

    fn problem(&mut self, problem: String) {
        if self.problems.len() < LISTED {
            self.problems.push(problem);
        } else {
            self.unlisted += 1;
        }
    }
}

impl super::Store {
    /// Check the stopped store in `dir` (see the module's doc); `decode_record` reads a task
    /// record as the engine would. `Err` only when the check could not be made (no store there,
    /// a host holds it, a disk error); damage found is in [`Checked::problems`].
    pub fn check(
        dir: &Path,
        decode_record: impl Fn(&Encoded) -> Result<(), StoreError>,
    ) -> Result<Checked, StoreError> {
        if !dir.is_dir() {
            return Err(StoreError::Missing {
                path: dir.display().to_string(),
            });
        }
        let mut checked = Checked::default();
        // A short wait for the lock: a store closed a moment ago may still be held by sled's own
        // I/O threads finishing their last job (a check right after `drop(store)` was refused
        // as in use, now and then, in CI); a running host holds it for longer than this.
        let sled = match open_sled(dir, super::DEFAULT_CACHE_BYTES, CLOSING_WAIT) {
            Err(StoreError::Damaged { problems, .. }) => {
                problems.into_iter().for_each(|p| checked.problem(p));
                return Ok(checked);
            }
            other => other?,
        };
        let inspected = unwind::quietly(|| committer::inspect(&sled.db, &sled.tasks, dir))
            .map_err(|panic| unreadable(dir, &panic))??;
        let problems = inspected.problems();
        drop(inspected);
        let (trees, _committer) = if problems.is_empty() {
            // Whole: recovered as the host would, so the entries are the ones it would serve.
            let log = std::fs::File::open(dir.join("db"))?;
            let (db, tasks) = (sled.db.clone(), sled.tasks.clone());
            let (committer, _) = unwind::quietly(|| {
                Committer::start(db, tasks, log, dir, OnDamage::Refuse, Default::default())
            })
            .map_err(|panic| unreadable(dir, &panic))??;
            (sled, Some(committer))
        } else {
            problems.into_iter().for_each(|p| checked.problem(p));
            (sled, None)
        };
        let scanned = unwind::quietly(|| {
            let tasks = &trees.tasks;
            let parts = [
                scan(tasks, &mut checked, |k, v, c| {
                    task_entry(tasks, k, v, c, &decode_record)
                }),
                scan(&trees.kv, &mut checked, |_, _, c| {
                    c.count("key-value entries");
                    Ok(())
                }),
                scan(&trees.groups, &mut checked, |_, v, c| {
                    c.count("group memberships");
                    decodes::<IgnoredAny>(v)
                }),
                scan(&trees.tenancy, &mut checked, |_, v, c| {
                    c.count("tenancy records");
                    decodes::<IgnoredAny>(v)
                }),
            ];
            parts.into_iter().sum::<u64>()
        });
        match scanned {
            Ok(parts) if parts > 0 => {
                checked.counts.insert("parts of large values", parts);
            }
            Ok(_) => {}
            Err(panic) => checked.problem(format!("sled failed while reading the store: {panic}")),
        }
        Ok(checked)
    }
}

/// Go through every entry of `tree`: `each` checks one whole value (assembled from its parts);
/// then every part must belong to a value. Returns the number of parts.
fn scan(
    tree: &sled::Tree,
    checked: &mut Checked,
    mut each: impl FnMut(&[u8], &[u8], &mut Checked) -> Result<(), String>,
) -> u64 {
    // The parts each large value's head names: (key, generation) → parts.
    let mut named: HashMap<Vec<u8>, u32> = HashMap::new();
    let mut part_count = 0u64;
    for entry in tree.iter() {
        let (k, v) = match entry {
            Ok(entry) => entry,
            Err(e) => {
                checked.problem(format!("sled failed to read {}: {e}", tree_name(tree)));
                break;
            }
        };
        if let Some((value, generation, index)) = parts::part_of(&k) {
            part_count += 1;
            let mut head = value.to_vec();
            head.extend_from_slice(&generation.to_be_bytes());
            if named.get(&head).is_none_or(|parts| index >= *parts) {
                checked.problem(format!(
                    "{}: a part of a large value that no value names (at {})",
                    tree_name(tree),
                    show(value)
                ));
            }
            continue;
        }
        if let Some((parts, generation)) = parts::head_of(&v) {
            let mut head = k.to_vec();
            head.extend_from_slice(&generation.to_be_bytes());
            named.insert(head, parts);
        }
        let whole = match parts::assemble(tree, &k, &v) {
            Ok(Some(whole)) => whole,
            Ok(None) => continue,
            Err(e) => {
                checked.problem(format!("{} at {}: {e}", tree_name(tree), show(&k)));
                continue;
            }
        };
        if let Err(e) = each(&k, &whole, checked) {
            checked.problem(format!("{} at {}: {e}", tree_name(tree), show(&k)));
        }
    }
    part_count
}

/// Check one entry of the `tasks` tree (`k` → the whole value `v`).
fn task_entry(
    tasks: &sled::Tree,
    k: &[u8],
    v: &[u8],
    checked: &mut Checked,
    decode_record: &impl Fn(&Encoded) -> Result<(), StoreError>,
) -> Result<(), String> {
    let tag = k.first().copied().unwrap_or_default();
    let owner = match tag {
        b't' => {
            checked.count("task records");
            if k.get(2..).and_then(super::TaskKey::from_tail).is_none() {
                return Err("a malformed task key".into());
            }
            let unpacked = super::packed::Unpacked::new(v).map_err(|e| e.to_string())?;
            let value = unpacked.read().map_err(|e| e.to_string())?;
            if !value.listing.is_empty() && super::listing::decode_indexed(value.listing).is_none()
            {
                return Err("its listing is malformed".into());
            }
            decode_record(&Encoded::from_stored(value.record.to_vec()))
                .map_err(|e| e.to_string())?;
            // Its inline events and chunks, checked as the keyed ones are.
            for (seq, event) in value.events {
                checked.count("events");
                decodes::<TaskEvent>(event).map_err(|e| format!("its event {seq}: {e}"))?;
            }
            for chunk in value.chunks {
                checked.count("product chunks");
                decodes::<IgnoredAny>(chunk.items)
                    .map_err(|e| format!("its product chunk {}: {e}", chunk.seq))?;
            }
            return Ok(());
        }
        b'l' => {
            checked.count("running index entries");
            k.get(2..)
        }
        b'd' | b'x' | b'r' => {
            checked.count(match tag {
                b'd' => "deadline index entries",
                b'x' => "ended index entries",
                _ => "retention index entries",
            });
            if tag == b'r' && v.len() != 8 {
                return Err("a malformed retention entry".into());
            }
            k.get(10..)
        }
        b'e' => {
            checked.count("event entries");
            let first = k
                .len()
                .checked_sub(8)
                .and_then(|at| k.get(at..))
                .and_then(|b| b.try_into().ok())
                .map(u64::from_be_bytes)
                .ok_or("a malformed event key")?;
            for (_, event) in event_batch::decode(first, v).map_err(|e| e.to_string())? {
                checked.count("events");
                decodes::<TaskEvent>(event)?;
            }
            task_names(k)
        }
        b'h' | b'c' | b'o' | b'g' => {
            checked.count(match tag {
                b'h' => "history entries",
                b'c' => "product chunks",
                b'o' => "outbox entries",
                _ => "given-up notifications",
            });
            match tag {
                b'o' => decodes::<OutboxEntry>(v)?,
                _ => decodes::<IgnoredAny>(v)?,
            }
            task_names(k)
        }
        b'n' => {
            // A config may be made before its task starts: it needs no record.
            checked.count("notification configs");
            return decodes::<NotificationConfig>(v);
        }
        b'w' => {
            checked.count("waiting config entries");
            return Ok(());
        }
        b'q' => {
            // Unreadable by nature: a record set aside when its task was failed for it.
            checked.count("records set aside (unreadable, their tasks failed)");
            return Ok(());
        }
        b'p' => {
            checked.count("group results waiting");
            return decodes::<IgnoredAny>(v);
        }
        b'i' | b'k' => {
            let (kind, task) = super::listing::check_entry(k, v)?;
            checked.count(kind);
            return match tasks.contains_key(task.record_key()) {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!(
                    "its task {} is not stored",
                    show(&task.record_key()[2..])
                )),
                Err(e) => Err(e.to_string()),
            };
        }
        b'm' => {
            checked.count("marks");
            return Ok(());
        }
        _ => {
            checked.count("unknown entries");
            return Err("an entry of no kind the store writes".into());
        }
    };
    let names = owner.ok_or("a malformed key")?;
    let mut record = b"t\0".to_vec();
    record.extend_from_slice(names);
    match tasks.contains_key(&record) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("its task {} is not stored", show(names))),
        Err(e) => Err(e.to_string()),
    }
}

/// `{agent}\0{scoped task}` of a key `{tag}\0{agent}\0{scoped task}\0…`.
fn task_names(k: &[u8]) -> Option<&[u8]> {
    let rest = k.get(2..)?;
    let agent_end = rest.iter().position(|b| *b == 0)?;
    let task_end = agent_end + 1 + rest[agent_end + 1..].iter().position(|b| *b == 0)?;
    rest.get(..task_end)
}

/// Whether `v` reads back as a `T`.
fn decodes<T: DeserializeOwned>(v: &[u8]) -> Result<(), String> {
    super::encoded::decode::<T>(v)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn tree_name(tree: &sled::Tree) -> String {
    format!("tree {}", String::from_utf8_lossy(&tree.name()))
}

/// A key as a person can read it: printable ASCII as it is, `\0` as `/`, other bytes in hex.
fn show(key: &[u8]) -> String {
    let mut out = String::with_capacity(key.len());
    for &b in key {
        match b {
            0 => out.push('/'),
            b' '..=b'~' => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}
