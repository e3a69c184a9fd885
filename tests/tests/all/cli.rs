//! The `aiphost` command line: scaffold a partner, build it, serve it, call it; help everywhere;
//! JSON logs on a flag.

use aiphost_tests::*;
use serde_json::Value;
use std::process::{Command, Output};

fn aiphost(args: &[&str]) -> Output {
    Command::new(aiphost_bin())
        .args(args)
        .current_dir(repo_root())
        // Share the plugins' target dir so a scaffold reuses the SDK already compiled for wasm.
        .env("CARGO_TARGET_DIR", repo_root().join("plugins/target"))
        .output()
        .expect("running aiphost")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_everywhere() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["agent", "--help"],
        vec!["agent", "new", "--help"],
        vec!["agent", "build", "--help"],
        vec!["agent", "list", "--help"],
        vec!["call", "--help"],
        vec!["call", "http://x", "start", "--help"],
        vec!["call", "http://x", "get", "--help"],
    ] {
        let out = aiphost(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("Usage:"), "{args:?}");
    }
    let out = aiphost(&["agent", "frobnicate"]);
    assert!(!out.status.success());
}

#[test]
fn list_shows_bundles() {
    let dist = plugins_dist();
    let out = aiphost(&["agent", "list", "--agents", dist.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = stdout(&out);
    for id in [
        "chunked",
        "echo",
        "fetcher",
        "hostile",
        "stats",
        "trip-planner",
    ] {
        assert!(
            listing.lines().any(|l| l.starts_with(id)),
            "{id} missing from:\n{listing}"
        );
    }
    assert!(listing.contains("1.2.156.3088.1.1.AIPHST.ECHO.1.0000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaffold_build_serve_call() {
    plugins_dist();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("shout");
    let dist = dir.path().join("dist");
    let out = aiphost(&["agent", "new", "shout", "--path", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(src.join("partner.toml").is_file() && src.join("src/lib.rs").is_file());
    let again = aiphost(&["agent", "new", "shout", "--path", src.to_str().unwrap()]);
    assert!(!again.status.success() && stderr(&again).contains("already exists"));

    let out = aiphost(&[
        "agent",
        "build",
        src.to_str().unwrap(),
        "--out",
        dist.to_str().unwrap(),
    ]);
    let progress = stderr(&out);
    assert!(out.status.success(), "{progress}");
    for step in ["[1/4]", "[2/4]", "[3/4]", "[4/4]", "built shout"] {
        assert!(progress.contains(step), "{step} missing from:\n{progress}");
    }
    assert!(dist.join("shout/partner.wasm").is_file());

    let data = dir.path().join("data");
    let host = ProcessHost::start(&data, &["--agents", dist.to_str().unwrap(), "--log-json"]);
    let base = format!("{}/agents/shout", host.url);
    let out = aiphost(&["call", &base, "start", "--task", "cli-1", "--text", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let task: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(task["type"], "task-result");
    assert_eq!(task["status"]["state"], "awaiting-completion");
    assert_eq!(task["products"][0]["dataItems"][0]["text"], "HELLO");

    let out = aiphost(&["call", "--dialect", "v1", &base, "get", "--task", "cli-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let task: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(task["type"], "task");
    assert_eq!(task["messageHistory"][0]["command"], "start");

    let out = aiphost(&["call", &base, "complete", "--task", "cli-1"]);
    let task: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(task["status"]["state"], "completed");

    let out = aiphost(&["call", &base, "cancel", "--task", "no-such-task"]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("-32001"), "{}", stdout(&out));

    // The bundled partners are served beside it, and logs are JSON lines.
    let out = aiphost(&[
        "call",
        &format!("{}/agents/echo", host.url),
        "start",
        "--data",
        r#"{"k": 1}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(data.with_extension("log")).unwrap();
    let first = log.lines().next().expect("some log output");
    let line: Value =
        serde_json::from_str(first).unwrap_or_else(|e| panic!("not JSON ({e}): {first}"));
    assert!(line.get("level").is_some(), "{line}");
}

#[test]
fn build_refuses_bad_manifests_precisely() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("broken");
    let out = aiphost(&["agent", "new", "broken", "--path", src.to_str().unwrap()]);
    assert!(out.status.success());
    let manifest = std::fs::read_to_string(src.join("partner.toml")).unwrap();
    std::fs::write(
        src.join("partner.toml"),
        manifest.replace("id = \"broken\"\naic", "id = \"Not A Slug\"\naic"),
    )
    .unwrap();
    let out = aiphost(&["agent", "build", src.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("agent.id"), "{}", stderr(&out));
}
