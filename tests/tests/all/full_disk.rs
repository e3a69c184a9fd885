//! Issue 29 item 2: a full disk is an outage, not a wedge. The host serves from a small tmpfs
//! this test mounts (it runs as root, as CI does); a file fills it. Below the reserve new work
//! is refused with a retryable 503 and nothing is left of it, reads and ends go on, `/readyz`
//! says so; below the floor every write is refused and reads still answer; when space returns
//! the host takes work again at once, the refused start retried with the same id; a task whose
//! partner finished while nothing could be written fails by itself once there is room; and after
//! a restart everything acknowledged is there.

use aiphost_tests::*;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, mib: u64) -> Tmpfs {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir)
            .status();
        assert!(
            status.is_ok_and(|s| s.success()),
            "this test mounts a {mib} MiB tmpfs at {}: it must run as root (CI does)",
            dir.display()
        );
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Grow `file` until the file system is full, then give back `leave` bytes: what is left free.
fn fill_leaving(file: &Path, leave: u64) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .expect("filler");
    let chunk = vec![0xA5u8; 256 * 1024];
    while f.write_all(&chunk).is_ok() {}
    // What a partial write left in the buffer is the file system's now; give `leave` back.
    let len = f.metadata().expect("filler size").len();
    f.set_len(len.saturating_sub(leave)).expect("shrink filler");
}

async fn readyz(url: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{url}/readyz")).await.expect("readyz");
    let status = response.status().as_u16();
    (status, response.json().await.expect("readyz JSON"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_new_work_keeps_reads_and_recovers_by_itself() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("data")).expect("mount point");
    // The data dir is the mount; the host's log goes beside it (`data.log`), off the tmpfs.
    let mount = Tmpfs::mount(&dir.path().join("data"), 64);
    let data = mount.0.clone();
    // Reserve 16 MiB: below it new work is refused, below 4 MiB every write.
    let flags = ["--store-reserve-mib", "16"];
    let host = ProcessHost::start(&data, &flags);
    let echo = host.rpc("echo");
    let a2a_url = format!("{}/agents/echo/a2a", host.url);
    let answer = post(&echo, &v2("start", "before", text("hello"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(readyz(&host.url).await.0, 200);

    // Below the reserve.
    let filler = mount.0.join("filler");
    fill_leaving(&filler, 8 << 20);
    let response = reqwest::Client::new()
        .post(&echo)
        .json(&v2("start", "during", text("hello"), json!({})))
        .send()
        .await
        .expect("start");
    assert_eq!(response.status().as_u16(), 503);
    let retry = response.headers().get("retry-after").cloned();
    assert_eq!(retry.as_ref().map(|v| v.to_str().unwrap_or("")), Some("5"));
    let answer: Value = response.json().await.expect("JSON");
    assert_eq!(error_code(&answer), -32000, "{answer}");
    assert_eq!(answer["error"]["data"]["error"], "store-full", "{answer}");
    assert_eq!(answer["error"]["data"]["retryable"], true, "{answer}");
    // A2A says it in its words: the same code, UNAVAILABLE over HTTP+JSON.
    let (_, answer) = post_status(
        &a2a_url,
        &a2a::request(
            "SendMessage",
            json!({"message": a2a::message(&uuid(), "hi")}),
        ),
    )
    .await;
    assert_eq!(error_code(&answer), -32000, "{answer}");
    let (status, body) = post_status(
        &format!("{a2a_url}/rest/message:send"),
        &json!({"message": a2a::message(&uuid(), "hi")}),
    )
    .await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["status"], "UNAVAILABLE", "{body}");
    // Nothing of the refused start is stored.
    let answer = post(&echo, &v2("get", "during", json!([]), json!({}))).await;
    assert_eq!(error_code(&answer), -32001, "{answer}");
    // Reads answer, and a task can still be ended.
    let answer = post(&echo, &v2("get", "before", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let answer = post(&a2a_url, &a2a::request("GetTask", json!({"id": "before"}))).await;
    assert!(answer["result"]["status"]["state"].is_string(), "{answer}");
    let answer = post(&echo, &v2("complete", "before", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "{answer}");
    let (status, body) = readyz(&host.url).await;
    assert_eq!(
        (status, &body["store"]["disk"]),
        (503, &json!("low")),
        "{body}"
    );

    // Below the floor: every write is refused, reads still answer.
    fill_leaving(&filler, 1 << 20);
    let (status, body) = readyz(&host.url).await;
    assert_eq!(
        (status, &body["store"]["disk"]),
        (503, &json!("full")),
        "{body}"
    );
    let answer = post(&echo, &v2("get", "before", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "{answer}");
    let answer = post(&a2a_url, &a2a::request("GetTask", json!({"id": "before"}))).await;
    assert_eq!(
        answer["result"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );

    // Space returns: the host takes work again by itself, and the refused start, retried with
    // its id, is a start like any other.
    std::fs::remove_file(&filler).expect("free the space");
    let (status, body) = readyz(&host.url).await;
    assert_eq!(status, 200, "{body}");
    let answer = post(&echo, &v2("start", "during", text("hello"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");

    // A partner that ends its work while every write is refused: its task stays as stored
    // (working) meanwhile, and fails by itself once there is room again.
    let hostile = host.rpc("hostile");
    let answer = post(
        &hostile,
        &v1(
            "start",
            "lost-work",
            text("slow:2000"),
            json!({"responseTimeout": 100}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "working", "{answer}");
    fill_leaving(&filler, 1 << 20);
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let answer = post(&hostile, &v1("get", "lost-work", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "working", "{answer}");
    std::fs::remove_file(&filler).expect("free the space");
    let answer = wait_for_state(&hostile, "lost-work", "failed", Duration::from_secs(20)).await;
    assert!(answer.to_string().contains("disk was full"), "{answer}");
    let log = host.log();
    assert_eq!(log.matches("below its reserve").count(), 2, "{log}");
    assert_eq!(log.matches("has room again").count(), 2, "{log}");

    // What was acknowledged survives a restart.
    host.stop();
    let host = ProcessHost::start(&data, &flags);
    let echo = host.rpc("echo");
    for (task, want) in [("before", "completed"), ("during", "awaiting-completion")] {
        let answer = post(&echo, &v2("get", task, json!([]), json!({}))).await;
        assert_eq!(state(&answer), want, "{task}: {answer}");
    }
    let answer = post(
        &host.rpc("hostile"),
        &v1("get", "lost-work", json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "failed", "{answer}");
    drop(host);
    // Wait for the process to let go of the mount.
    tokio::time::sleep(Duration::from_millis(100)).await;
}
