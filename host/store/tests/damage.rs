//! A store that lost data refuses to open, with an error naming its files, until the loss is
//! accepted; `Store::check` says what it found. Each test damages a real sled store in a temp
//! directory the way a disk, a restore or an operator does: `db` deleted (sled's `conf` kept),
//! replaced by an older copy of itself, its last 64 KiB cut, halved, bytes flipped; the
//! write-ahead log deleted, or starting past what sled holds.

use aiphost_store::{Encoded, KvScope, Store, StoreError, TaskKey, TaskWrite};
use serde_json::json;
use std::path::Path;

/// Write tasks `range` of agent `a` (a record of ~1 KB and a deadline each), make them durable,
/// then force a checkpoint (a key-value write outside the log) and close the store.
async fn fill(dir: &Path, range: std::ops::Range<u32>) {
    let store = Store::open(dir).unwrap();
    write(&store, range).await;
    let ticket = store.kv_set("a", KvScope::Agent, "k", b"v").unwrap();
    store.durable(ticket).await.unwrap();
}

/// Write tasks `range` and wait until they are durable (in the write-ahead log).
async fn write(store: &Store, range: std::ops::Range<u32>) {
    for i in range {
        let key = TaskKey::new("a", format!("t{i}"));
        let record = Encoded::of(&json!({"i": i, "pad": "p".repeat(1000)})).unwrap();
        let pending = store
            .write_task(TaskWrite {
                deadline: (None, Some(1_000 + i64::from(i))),
                ..TaskWrite::record_only(&key, record)
            })
            .unwrap();
        let ticket = pending.applied().await.unwrap();
        store.durable(ticket).await.unwrap();
    }
}

fn tasks(store: &Store) -> usize {
    store.task_records("a", None).count()
}

/// The problems of a refused open; panics if the store opened.
fn refused(dir: &Path) -> Vec<String> {
    match Store::open(dir) {
        Err(StoreError::Damaged { problems, .. }) => problems,
        Err(other) => panic!("refused with another error: {other}"),
        Ok(store) => panic!("a damaged store opened with {} tasks", tasks(&store)),
    }
}

fn check(dir: &Path) -> aiphost_store::Checked {
    Store::check(dir, |record| record.decode::<serde_json::Value>().map(drop)).unwrap()
}

/// Refused (twice: a refusal changes nothing), named, reported by a check, and after the loss
/// is accepted the store opens, and opens again.
fn refused_until_accepted(dir: &Path, file: &str) -> Vec<String> {
    let problems = refused(dir);
    let named = dir.join(file).display().to_string();
    assert!(
        problems.iter().any(|p| p.contains(&named)),
        "no problem names {named}: {problems:?}"
    );
    let message = Store::open(dir).err().unwrap().to_string();
    assert!(message.contains(&named), "{message}");
    assert!(message.contains("accept the loss"), "{message}");
    assert_eq!(refused(dir), problems, "a refusal changes nothing");
    let checked = check(dir);
    assert!(!checked.is_whole(), "the check finds the damage");
    assert!(
        checked.problems.iter().any(|p| p.contains(&named)),
        "{:?}",
        checked.problems
    );
    let accepted = Store::accept_loss(dir).unwrap();
    assert!(!accepted.is_empty(), "what was lost is said");
    drop(Store::open(dir).expect("opens once the loss is accepted"));
    drop(Store::open(dir).expect("and again"));
    assert!(check(dir).is_whole(), "{:?}", check(dir).problems);
    problems
}

#[tokio::test]
async fn a_new_store_and_a_whole_store_open_and_check_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    {
        let store = Store::open(&store_dir).unwrap();
        assert_eq!(tasks(&store), 0);
    }
    drop(Store::open(&store_dir).expect("a new store reopens"));
    fill(&store_dir, 0..50).await;
    {
        // Rounds left in the write-ahead log only (no checkpoint after them), then a reopen.
        let store = Store::open(&store_dir).unwrap();
        write(&store, 50..60).await;
    }
    let store = Store::open(&store_dir).unwrap();
    assert_eq!(tasks(&store), 60);
    drop(store);
    let checked = check(&store_dir);
    assert!(checked.is_whole(), "{:?}", checked.problems);
    assert_eq!(checked.counts["task records"], 60);
    assert_eq!(checked.counts["deadline index entries"], 60);
    assert_eq!(checked.counts["key-value entries"], 1);
    assert!(
        Store::accept_loss(&store_dir).unwrap().is_empty(),
        "nothing lost"
    );
}

/// A store of 401 tasks, the last in the write-ahead log only, whose `db` is deleted.
async fn without_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    fill(&store_dir, 0..400).await;
    {
        let store = Store::open(&store_dir).unwrap();
        write(&store, 400..401).await;
    }
    std::fs::remove_file(store_dir.join("db")).unwrap();
    assert!(store_dir.join("conf").exists());
    dir
}

/// sled's snapshot names places in the `db` that is gone: sled cannot recover. Accepting the
/// loss moves sled's files aside and starts from the write-ahead log.
#[tokio::test]
async fn a_deleted_db_with_conf_and_snapshot_kept_is_refused() {
    let dir = without_db().await;
    let store_dir = dir.path().join("store");
    let problems = refused_until_accepted(&store_dir, "db");
    assert!(problems[0].contains("cannot be read"), "{problems:?}");
    let aside = std::fs::read_dir(&store_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .find(|name| name.starts_with("damaged-"));
    let aside = store_dir.join(aside.expect("sled's files moved aside"));
    assert!(aside.join("conf").exists(), "nothing is deleted");
    assert_eq!(
        tasks(&Store::open(&store_dir).unwrap()),
        1,
        "the log's round"
    );
}

/// Without the snapshot, sled opens empty: the identity says what it lost.
#[tokio::test]
async fn a_deleted_db_with_its_conf_kept_is_refused() {
    let dir = without_db().await;
    let store_dir = dir.path().join("store");
    for entry in std::fs::read_dir(&store_dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("snap.")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    let problems = refused_until_accepted(&store_dir, "db");
    assert!(
        problems[0].contains("holds no data of store"),
        "{problems:?}"
    );
    assert!(
        problems[1].contains("rounds 1 to 400 are in neither"),
        "{problems:?}"
    );
}

#[tokio::test]
async fn a_db_replaced_by_an_older_copy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    fill(&store_dir, 0..100).await;
    let older = dir.path().join("db.older");
    std::fs::copy(store_dir.join("db"), &older).unwrap();
    fill(&store_dir, 100..200).await;
    std::fs::copy(&older, store_dir.join("db")).unwrap();
    refused_until_accepted(&store_dir, "db");
}

/// `db` of a store of 400 tasks, with `damage` done to it.
async fn damaged_db(damage: impl FnOnce(&Path)) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    fill(&store_dir, 0..400).await;
    damage(&store_dir.join("db"));
    dir
}

fn cut_to(db: &Path, len: u64) {
    let file = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    file.set_len(len).unwrap();
}

#[tokio::test]
async fn a_db_whose_last_64_kib_are_cut_is_refused() {
    let dir = damaged_db(|db| {
        let len = std::fs::metadata(db).unwrap().len();
        assert!(len > 256 << 10, "db is {len} bytes");
        cut_to(db, len - (64 << 10));
    })
    .await;
    refused_until_accepted(&dir.path().join("store"), "db");
}

#[tokio::test]
async fn a_halved_db_is_refused() {
    let dir = damaged_db(|db| cut_to(db, std::fs::metadata(db).unwrap().len() / 2)).await;
    refused_until_accepted(&dir.path().join("store"), "db");
}

#[tokio::test]
async fn a_db_with_flipped_bytes_is_refused() {
    let dir = damaged_db(|db| {
        let mut bytes = std::fs::read(db).unwrap();
        let middle = bytes.len() / 2;
        for b in &mut bytes[middle..middle + 4096] {
            *b ^= 0x5A;
        }
        std::fs::write(db, &bytes).unwrap();
    })
    .await;
    refused_until_accepted(&dir.path().join("store"), "db");
}

#[tokio::test]
async fn a_deleted_write_ahead_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    fill(&store_dir, 0..10).await;
    std::fs::remove_file(store_dir.join("wal")).unwrap();
    let problems = refused_until_accepted(&store_dir, "wal");
    assert!(problems[0].contains("is missing"), "{problems:?}");
}

/// A store from before identities: it gets one at its first open, and from then on is checked;
/// one that lost its `db` before that is still refused when the log starts past what sled holds.
#[tokio::test]
async fn a_store_from_before_identities_gets_one_and_a_gap_in_its_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    fill(&store_dir, 0..20).await;
    {
        let store = Store::open(&store_dir).unwrap();
        write(&store, 20..22).await;
    }
    let older = dir.path().join("older");
    std::fs::create_dir(&older).unwrap();
    for file in ["conf", "db", "wal"] {
        std::fs::copy(store_dir.join(file), older.join(file)).unwrap();
    }
    // The identity file lost: sled's key alone does not tell whether the rest is whole.
    std::fs::remove_file(store_dir.join("identity")).unwrap();
    let problems = refused(&store_dir);
    assert!(problems[0].contains("identity is missing"), "{problems:?}");
    // As it was before identities: sled without its key, no file. It opens, and gets both.
    {
        let db = sled::open(&store_dir).unwrap();
        db.open_tree("tasks")
            .unwrap()
            .remove(b"m\0identity")
            .unwrap();
        db.flush().unwrap();
    }
    assert_eq!(tasks(&Store::open(&store_dir).unwrap()), 22);
    assert!(store_dir.join("identity").exists());
    assert_eq!(tasks(&Store::open(&store_dir).unwrap()), 22);

    // A store that never had one: sled without its key, no file.
    std::fs::remove_file(older.join("db")).unwrap();
    let problems = refused(&older);
    assert!(
        problems[0].contains("starts at round") && problems[0].contains("are in neither"),
        "{problems:?}"
    );
}

#[tokio::test]
async fn a_check_refuses_a_store_in_use_and_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    let store = Store::open(&store_dir).unwrap();
    match Store::check(&store_dir, |_| Ok(())) {
        Err(StoreError::Locked { .. }) => {}
        other => panic!("a store in use was checked: {other:?}"),
    }
    drop(store);
    assert!(check(&store_dir).is_whole());
    match Store::check(&dir.path().join("nowhere"), |_| Ok(())) {
        Err(StoreError::Missing { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        !dir.path().join("nowhere").exists(),
        "a check creates nothing"
    );
}

/// A check reads every entry: an index entry, a history entry or an event whose task is not
/// stored, a part no value names, an event that is no event are each a problem, named.
#[tokio::test]
async fn a_check_finds_entries_without_their_task() {
    use aiphost_store::Liveness;
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    {
        let store = Store::open(&store_dir).unwrap();
        let key = TaskKey::new("a", "t1");
        let big = Encoded::of(&json!({"pad": "p".repeat(20_000)})).unwrap();
        let pending = store
            .write_task(TaskWrite {
                deadline: (None, Some(5_000)),
                live: (None, Some(Liveness::Running)),
                history: vec![(0, Encoded::of(&json!({"command": "start"})).unwrap())],
                listing: Some(aiphost_store::Listing {
                    changed_ms: 1_000,
                    state: aiphost_model::TaskState::Working,
                    session: Some("s".into()),
                }),
                ..TaskWrite::record_only(&key, big)
            })
            .unwrap();
        store
            .durable(pending.applied().await.unwrap())
            .await
            .unwrap();
        let key = TaskKey::new("a", "t2");
        let not_an_event = Encoded::of(&json!({"not": "an event"})).unwrap();
        let pending = store
            .write_task(TaskWrite {
                events: vec![(1, not_an_event)],
                ..TaskWrite::record_only(&key, Encoded::of(&json!({})).unwrap())
            })
            .unwrap();
        store
            .durable(pending.applied().await.unwrap())
            .await
            .unwrap();
    }
    let whole = check(&store_dir);
    assert_eq!(whole.problems.len(), 1, "{:?}", whole.problems);
    // The start's event is packed into the task's value: checked there.
    assert!(
        whole.problems[0].contains("t/a/t2: its event 1:"),
        "{:?}",
        whole.problems
    );
    {
        // t1's record goes, its parts and index entries stay.
        let db = sled::open(&store_dir).unwrap();
        db.open_tree("tasks").unwrap().remove(b"t\0a\0t1").unwrap();
        db.flush().unwrap();
    }
    let checked = check(&store_dir);
    let said = |what: &str| checked.problems.iter().filter(|p| p.contains(what)).count();
    assert_eq!(
        said("its task a/t1 is not stored"),
        2 + 2,
        "{:?}",
        checked.problems
    );
    // Its deadline is carried by its listing entry by state: no entry of its own.
    assert!(said("at d/") == 0 && said("at l/") == 1 && said("at h/") == 1);
    // The listing's two index entries (by state, by session); what they hold for the task went
    // with its value.
    assert!(
        said("at i/") == 2 && said("at k/") == 0,
        "{:?}",
        checked.problems
    );
    assert_eq!(said("no value names"), 3, "{:?}", checked.problems);
    assert_eq!(checked.counts["task records"], 1);
    assert_eq!(checked.counts["events"], 1);
}
