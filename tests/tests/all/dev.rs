//! `aiphost dev`: build, serve, watch, rebuild and swap the new version in while a task on the
//! old one finishes on it (issue 16 item 4).

use aiphost_tests::*;
use serde_json::json;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `aiphost dev` as a child process, its output in files.
struct Dev {
    child: Child,
    out: std::path::PathBuf,
    err: std::path::PathBuf,
}

impl Dev {
    fn said(&self) -> String {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        format!("{}{}", read(&self.out), read(&self.err))
    }

    /// Wait until the output contains `text` (the first build compiles the SDK: minutes at
    /// worst on a loaded machine).
    async fn wait_for(&self, text: &str) {
        let started = Instant::now();
        while !self.said().contains(text) {
            assert!(
                started.elapsed() < Duration::from_secs(600),
                "{text:?} never came; aiphost dev said:\n{}",
                self.said()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_swaps_a_rebuilt_partner_in_while_a_task_on_the_old_one_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("shout");
    let made = Command::new(aiphost_bin())
        .args(["agent", "new", "shout", "--path", src.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );

    let port = free_port();
    let (out, err) = (dir.path().join("dev.out"), dir.path().join("dev.err"));
    let child = Command::new(aiphost_bin())
        .arg("dev")
        .arg(&src)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--agents")
        .arg(plugins_dist())
        .args(["--poll", "200ms"])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .stdin(Stdio::null())
        .spawn()
        .expect("spawning aiphost dev");
    let dev = Dev { child, out, err };
    dev.wait_for("watching").await;
    let said = dev.said();
    let rpc = format!("http://127.0.0.1:{port}/agents/shout/rpc");
    assert!(said.contains(&rpc), "{said}");
    assert!(said.contains("published version 1"), "{said}");

    // A task on version 1 rests, waiting for input.
    let answer = post(&rpc, &v2("start", "old", json!([]), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    // The bundled partners are served beside it.
    let echo = format!("http://127.0.0.1:{port}/agents/echo/rpc");
    let answer = post(&echo, &v2("start", "e", text("hi"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");

    // Version 2 whispers.
    let lib = src.join("src/lib.rs");
    let code = std::fs::read_to_string(&lib).unwrap();
    assert!(code.contains(".to_uppercase()"), "{code}");
    std::fs::write(&lib, code.replace(".to_uppercase()", ".to_lowercase()")).unwrap();
    dev.wait_for("published version 2").await;

    // The old task finishes on version 1; a new one runs on version 2.
    let answer = post(&rpc, &v2("continue", "old", text("Hello There"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "HELLO THERE",
        "{answer}"
    );
    let answer = post(&rpc, &v2("start", "new", text("Hello There"), json!({}))).await;
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "hello there",
        "{answer}"
    );
    // The partner's log lines are shown.
    dev.wait_for("working on 1 items").await;

    // A build that fails keeps the last version serving.
    std::fs::write(&lib, "this is not Rust").unwrap();
    dev.wait_for("the build failed; the last version keeps serving")
        .await;
    let answer = post(&rpc, &v2("start", "after", text("Still"), json!({}))).await;
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "still",
        "{answer}"
    );
}
