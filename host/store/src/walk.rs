//! Walking one namespace's listing index lazily, from a point in listing order: what a listing
//! across Leaders (the admin API's, over many namespaces and partners) merges, reading from each
//! namespace only the entries it takes. It reuses the listing index (`listing.rs`) as it is: no
//! entry of its own, so nothing to build or migrate.
//!
//! Why not one index across namespaces: a page of the merge costs one range seek per namespace
//! plus the page's entries, and the namespaces of a partner are its Leaders (known in memory,
//! [`Store::listed_leaders`]); an index of its own would cost every task write three more keys.

use super::listing::{Dim, dimension, entry_key, inverted, namespace_prefix, read_entry_value};
use super::{Listed, Store, StoreError};
use aiphost_model::TaskState;
use std::ops::Bound;

/// Where a walk starts, in listing order (the newest status change first, then the task id).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkFrom<'a> {
    /// At the tasks whose status changed at or before this instant (Unix ms).
    ChangedAtOrBefore(i64),
    /// At the tasks whose status changed before this instant (Unix ms).
    ChangedBefore(i64),
    /// Right after this task, whose status changed at this instant.
    After(i64, &'a str),
}

/// Which of a namespace's entries a walk reads.
#[derive(Clone, Debug, Default)]
pub struct Walk<'a> {
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// Only tasks of this session.
    pub session: Option<&'a str>,
    /// Start at the furthest of these points (none: at the newest task).
    pub from: Vec<WalkFrom<'a>>,
}

impl Store {
    /// The namespaces of `agent` that hold listed tasks: its Leaders, `None` for the shared one
    /// (from the counts kept in memory: nothing is read).
    pub fn listed_leaders(&self, agent: &str) -> Vec<Option<String>> {
        self.inner.listed.namespaces_of(agent)
    }

    /// The listing entries of `agent`'s tasks in `leader`'s namespace that `walk` asks for, in
    /// listing order, read lazily: each one taken costs one entry (a walk of a session and a
    /// state skips the session's entries in other states).
    pub fn walk_listing(
        &self,
        agent: &str,
        leader: Option<&str>,
        walk: &Walk<'_>,
    ) -> impl Iterator<Item = Result<Listed, StoreError>> + Send + 'static {
        let ns = namespace_prefix(agent, leader);
        // Every task is in its state's dimension: a walk of all of them merges those (one
        // entry read per task taken, plus one per state to start).
        let dims: Vec<Vec<u8>> = match (walk.session, walk.state) {
            (Some(session), _) => vec![dimension(&ns, Dim::Session(session))],
            (None, Some(state)) => vec![dimension(&ns, Dim::State(state))],
            (None, None) => TaskState::ALL
                .into_iter()
                .map(|state| dimension(&ns, Dim::State(state)))
                .collect(),
        };
        let filter = walk.state.filter(|_| walk.session.is_some());
        let sources = dims
            .into_iter()
            .map(|dim| self.walk_dimension(dim, &walk.from, filter).peekable())
            .collect();
        Merged { sources }
    }

    /// The entries of one dimension (`dim`, its prefix) a walk reads, in listing order.
    fn walk_dimension(
        &self,
        dim: Vec<u8>,
        from: &[WalkFrom<'_>],
        filter: Option<TaskState>,
    ) -> impl Iterator<Item = Result<Listed, StoreError>> + Send + 'static {
        let start = from
            .iter()
            .map(|from| start_of(&dim, *from))
            .max_by(later_start)
            .unwrap_or_else(|| Bound::Included(dim.clone()));
        let mut end = dim.clone();
        end.extend_from_slice(&[0xff; 9]);
        let prefix = dim;
        self.inner
            .tasks
            .range((start, Bound::Excluded(end)))
            .filter_map(move |entry| {
                let (k, v) = match entry {
                    Ok(kv) => kv,
                    Err(e) => return Some(Err(StoreError::from(e))),
                };
                // Past the prefix (a longer task id of the last instant sorts before 0xff…).
                if !k.starts_with(&prefix) {
                    return None;
                }
                if let Some(state) = filter
                    && read_entry_value(&v).is_none_or(|(s, _)| s != state)
                {
                    return None;
                }
                let malformed = || StoreError::Corrupt("malformed listing index key".into());
                let Some((inv, task)) = k
                    .get(prefix.len()..)
                    .and_then(|tail| tail.split_first_chunk::<8>())
                else {
                    return Some(Err(malformed()));
                };
                Some(match std::str::from_utf8(task) {
                    Ok(task) => Ok(Listed::at(u64::from_be_bytes(*inv), task.to_string())),
                    Err(_) => Err(malformed()),
                })
            })
    }
}

/// Walks of several dimensions, each in listing order, merged into one in listing order.
struct Merged<I: Iterator> {
    sources: Vec<std::iter::Peekable<I>>,
}

impl<I: Iterator<Item = Result<Listed, StoreError>>> Iterator for Merged<I> {
    type Item = Result<Listed, StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut first: Option<(usize, &Listed)> = None;
        let mut failed = None;
        for (i, source) in self.sources.iter_mut().enumerate() {
            match source.peek() {
                None => {}
                Some(Err(_)) => {
                    // An error is said at once.
                    failed = Some(i);
                    break;
                }
                Some(Ok(listed)) if first.is_none_or(|(_, best)| listed < best) => {
                    first = Some((i, listed));
                }
                Some(Ok(_)) => {}
            }
        }
        let i = failed.or(first.map(|(i, _)| i))?;
        self.sources[i].next()
    }
}

/// The first key of `dim` a walk from `from` reads.
fn start_of(dim: &[u8], from: WalkFrom<'_>) -> Bound<Vec<u8>> {
    let at = |inv: u64| {
        let mut k = dim.to_vec();
        k.extend_from_slice(&inv.to_be_bytes());
        k
    };
    match from {
        WalkFrom::ChangedAtOrBefore(ms) => Bound::Included(at(inverted(ms))),
        // Before `ms` is after every entry at `ms` (the inverted instant one more).
        WalkFrom::ChangedBefore(ms) => match inverted(ms).checked_add(1) {
            Some(inv) => Bound::Included(at(inv)),
            None => Bound::Excluded(at(u64::MAX)),
        },
        WalkFrom::After(ms, task) => Bound::Excluded(entry_key(dim, ms, task)),
    }
}

/// Which of two starts reads less: the later key, or at the same key the excluding one.
fn later_start(a: &Bound<Vec<u8>>, b: &Bound<Vec<u8>>) -> std::cmp::Ordering {
    let key = |s: &Bound<Vec<u8>>| match s {
        Bound::Included(k) | Bound::Excluded(k) => k.clone(),
        Bound::Unbounded => Vec::new(),
    };
    key(a)
        .cmp(&key(b))
        .then_with(|| matches!(a, Bound::Excluded(_)).cmp(&matches!(b, Bound::Excluded(_))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::WriteNow;
    use crate::{Encoded, Listing, TaskKey, TaskWrite};

    fn write(store: &Store, key: &TaskKey, changed_ms: i64, state: TaskState, session: &str) {
        store
            .write_task_now(TaskWrite {
                listing: Some(Listing {
                    changed_ms,
                    state,
                    session: Some(session.to_string()),
                }),
                ..TaskWrite::record_only(key, Encoded::of(&"record").unwrap())
            })
            .unwrap();
    }

    fn walked(store: &Store, leader: Option<&str>, walk: &Walk<'_>) -> Vec<(i64, String)> {
        store
            .walk_listing("echo", leader, walk)
            .map(|l| l.map(|l| (l.changed_ms(), l.task_id)))
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// A walk reads its namespace alone, in listing order, from the furthest of its starts, and
    /// filters a session's entries by state; the namespaces are those with tasks.
    #[tokio::test]
    async fn walks_start_where_asked_and_stay_in_their_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
            let state = if i % 2 == 0 {
                TaskState::Working
            } else {
                TaskState::Completed
            };
            write(
                &store,
                &TaskKey::new("echo", *id),
                100 + i as i64,
                state,
                "s",
            );
        }
        write(
            &store,
            &TaskKey::owned("echo", Some("L"), "a"),
            500,
            TaskState::Working,
            "s",
        );
        write(
            &store,
            &TaskKey::new("other", "z"),
            900,
            TaskState::Working,
            "s",
        );
        write(
            &store,
            &TaskKey::new("echo", "b2"),
            101,
            TaskState::Working,
            "t",
        );
        let all = walked(&store, None, &Walk::default());
        let ids: Vec<&str> = all.iter().map(|(_, id)| id.as_str()).collect();
        assert_eq!(ids, ["d", "c", "b", "b2", "a"]);
        let from = |from| Walk {
            from,
            ..Walk::default()
        };
        let ids = |w: &Walk<'_>| -> Vec<String> {
            walked(&store, None, w)
                .into_iter()
                .map(|(_, id)| id)
                .collect()
        };
        assert_eq!(
            ids(&from(vec![WalkFrom::ChangedAtOrBefore(101)])),
            ["b", "b2", "a"]
        );
        assert_eq!(ids(&from(vec![WalkFrom::ChangedBefore(101)])), ["a"]);
        assert_eq!(ids(&from(vec![WalkFrom::After(101, "b")])), ["b2", "a"]);
        // The furthest start wins, whichever order they come in.
        let both = vec![WalkFrom::After(103, "d"), WalkFrom::ChangedBefore(102)];
        assert_eq!(ids(&from(both)), ["b", "b2", "a"]);
        let working_in_s = Walk {
            state: Some(TaskState::Working),
            session: Some("s"),
            from: Vec::new(),
        };
        assert_eq!(ids(&working_in_s), ["c", "a"]);
        let working = Walk {
            state: Some(TaskState::Working),
            ..Walk::default()
        };
        assert_eq!(ids(&working), ["c", "b2", "a"]);
        assert_eq!(
            walked(&store, Some("L"), &Walk::default()),
            [(500, "a".into())]
        );
        let mut leaders = store.listed_leaders("echo");
        leaders.sort();
        assert_eq!(leaders, [None, Some("L".to_string())]);
    }
}
