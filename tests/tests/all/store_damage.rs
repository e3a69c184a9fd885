//! A store that lost data: the real binary refuses to serve it with one error naming the file
//! (no panic, no backtrace), `aiphost store check` reports it, and after
//! `aiphost store accept-loss` the host serves what is left.

use aiphost_tests::*;
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn aiphost(args: &[&str]) -> Output {
    Command::new(aiphost_bin())
        .args(args)
        .env_remove("AIPHOST_DATA")
        .output()
        .expect("running aiphost")
}

fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Stop a host as Ctrl-C does (a clean shutdown, the store closed), and wait until it has.
fn stop(mut host: ProcessHost) {
    let pid = host.child.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    let started = Instant::now();
    while host.child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{}",
            host.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `aiphost store check data`: `(exit success, stdout, stderr)`.
fn check(data: &Path) -> (bool, String, String) {
    let out = aiphost(&["store", "check", data.to_str().unwrap()]);
    (
        out.status.success(),
        text_of(&out.stdout),
        text_of(&out.stderr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_lost_its_db_is_refused_checked_and_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let host = ProcessHost::start(&data, &[]);
    let rpc = host.rpc("echo");
    for i in 0..20 {
        let task = format!("kept-{i}");
        let answer = post(&rpc, &v2("start", &task, text("hello"), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
        let answer = post(&rpc, &v2("complete", &task, json!([]), json!({}))).await;
        assert_eq!(state(&answer), "completed", "{answer}");
    }
    stop(host);

    let (whole, out, err) = check(&data);
    assert!(whole, "a whole store checks whole: {out}{err}");
    assert!(
        out.contains("task records") && out.contains("no problems found"),
        "{out}"
    );

    // The `db` goes, sled's `conf` stays.
    let store = data.join("store");
    for entry in std::fs::read_dir(&store).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "db" || name.starts_with("snap.") {
            std::fs::remove_file(&path).unwrap();
        }
    }
    assert!(store.join("conf").exists());

    let db = store.join("db").display().to_string();
    let port = free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    let refused = aiphost(&[
        "serve",
        "--listen",
        &listen,
        "--data",
        data.to_str().unwrap(),
        "--agents",
        plugins_dist().to_str().unwrap(),
        "--compiled-cache",
        shared_cache().to_str().unwrap(),
    ]);
    let err = text_of(&refused.stderr);
    assert!(
        !refused.status.success(),
        "a damaged store was served: {err}"
    );
    assert!(err.contains(&db), "the error names the file: {err}");
    assert!(err.contains("holds no data of store"), "{err}");
    assert!(err.contains("aiphost store accept-loss"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "one error: {err}");

    let (whole, out, err) = check(&data);
    assert!(!whole, "the check fails: {out}");
    assert!(out.contains(&db), "the check names the file: {out}");
    assert!(err.contains("accept-loss"), "{err}");

    let accepted = aiphost(&["store", "accept-loss", data.to_str().unwrap()]);
    let out = text_of(&accepted.stdout);
    assert!(
        accepted.status.success(),
        "{out}{}",
        text_of(&accepted.stderr)
    );
    assert!(out.contains(&db), "what was lost is said: {out}");

    let host = ProcessHost::start(&data, &[]);
    let answer = post(
        &host.rpc("echo"),
        &v2("start", "after", text("hi"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    stop(host);
    let (whole, out, err) = check(&data);
    assert!(whole, "{out}{err}");
}
