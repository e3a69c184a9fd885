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
        vec!["dev", "--help"],
        vec!["agent", "--help"],
        vec!["agent", "new", "--help"],
        vec!["agent", "build", "--help"],
        vec!["agent", "list", "--help"],
        vec!["call", "--help"],
        vec!["call", "http://x", "start", "--help"],
        vec!["call", "http://x", "get", "--help"],
        vec!["call", "--protocol", "a2a", "http://x", "list", "--help"],
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
    // `agent build PATH` writes PATH/dist, which `serve --agents PATH/dist` reads, as the
    // scaffold's last words say.
    let dist = src.join("dist");
    let out = aiphost(&["agent", "new", "shout", "--path", src.to_str().unwrap()]);
    let said = stderr(&out);
    for next in ["aiphost agent test", "aiphost dev", "aiphost agent build"] {
        assert!(
            said.contains(&format!("{next} {}", src.display())),
            "{said}"
        );
    }
    assert!(out.status.success(), "{}", stderr(&out));
    let readme = std::fs::read_to_string(src.join("README.md")).unwrap();
    assert!(readme.contains("aiphost serve --agents dist"), "{readme}");
    assert!(src.join("partner.toml").is_file() && src.join("src/lib.rs").is_file());
    // The SDK by version; this checkout's SDK only as a patch over it.
    let cargo_toml = std::fs::read_to_string(src.join("Cargo.toml")).unwrap();
    let (deps, patch) = cargo_toml.split_once("[patch.crates-io]").unwrap();
    assert!(deps.contains("aiphost-sdk = \"0.1\""), "{cargo_toml}");
    assert!(!deps.contains("path ="), "{cargo_toml}");
    assert!(patch.contains("sdk/rust"), "{cargo_toml}");
    let again = aiphost(&["agent", "new", "shout", "--path", src.to_str().unwrap()]);
    assert!(!again.status.success() && stderr(&again).contains("already exists"));

    let out = aiphost(&["agent", "build", src.to_str().unwrap()]);
    let progress = stderr(&out);
    assert!(out.status.success(), "{progress}");
    for step in ["[1/4]", "[2/4]", "[3/4]", "[4/4]", "built shout"] {
        assert!(progress.contains(step), "{step} missing from:\n{progress}");
    }
    assert!(dist.join("shout/partner.wasm").is_file());
    // Linked with the SDK's small stack (rust.rs `STACK_BYTES`), below its data.
    let wasm = std::fs::read(dist.join("shout/partner.wasm")).unwrap();
    let layouts = aiphost::runtime::layouts_of(&wasm).unwrap();
    assert!(
        layouts.iter().any(|l| l.stack_top == Some(64 * 1024)),
        "{layouts:?}"
    );

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

#[test]
fn build_keeps_the_compilers_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("typo");
    let out = aiphost(&["agent", "new", "typo", "--path", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lib = std::fs::read_to_string(src.join("src/lib.rs")).unwrap();
    std::fs::write(
        src.join("src/lib.rs"),
        lib.replace("text.join(\" \")", "text.joinn(\" \")"),
    )
    .unwrap();
    let out = aiphost(&["agent", "build", src.to_str().unwrap()]);
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    // rustc's full diagnostic: the code, the snippet with its caret line, and the help.
    for part in ["error[E0599]", "joinn", "^^^^^", "cargo rustc failed"] {
        assert!(said.contains(part), "{part} missing from:\n{said}");
    }
    // The target is installed, so no hint to install it.
    assert!(!said.contains("rustup target add"), "{said}");
    assert!(!src.join("dist").exists());
}

/// The flags `aiphost serve --help` lists, each with the default it shows (`[default: …]`).
fn serve_flags() -> std::collections::BTreeMap<String, Option<String>> {
    let help = aiphost(&["serve", "--help"]);
    assert!(help.status.success(), "{}", stderr(&help));
    let mut flags = std::collections::BTreeMap::new();
    let mut current: Option<String> = None;
    for line in stdout(&help).lines() {
        let trimmed = line.trim_start();
        if line.starts_with("  ") && (trimmed.starts_with("--") || trimmed.starts_with("-h")) {
            let flag = trimmed
                .split_whitespace()
                .find(|w| w.starts_with("--"))
                .map(|w| w.trim_end_matches(',').to_string());
            current = flag.clone();
            if let Some(flag) = flag {
                flags.insert(flag, None);
            }
        } else if let (Some(flag), Some(at)) = (&current, line.find("[default: ")) {
            let rest = &line[at + "[default: ".len()..];
            let value = rest.split(']').next().unwrap_or_default().to_string();
            flags.insert(flag.clone(), Some(value));
        }
    }
    flags
}

/// A README default as `--help` would show it: `4 MiB` as bytes, without backticks.
fn readme_value(cell: &str) -> String {
    let cell = cell.trim().trim_matches('`');
    match cell.strip_suffix(" MiB").map(str::parse::<u64>) {
        Some(Ok(mib)) => (mib << 20).to_string(),
        _ => cell.to_string(),
    }
}

/// The README's configuration table and `aiphost serve --help` name the same flags, with the
/// same defaults: the library's config holds them and `--help` shows them from there, so a
/// README that drifts from the code fails here.
#[test]
fn the_readme_configuration_table_matches_serve_help() {
    let help = serve_flags();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let section = readme
        .split("## Configuration (`aiphost serve`)")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the README has a configuration section");
    let mut documented = std::collections::BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with("| `--")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        // The flags of the first cell (`--a` / `--b`, or `--a X --b Y [--c Z]`).
        let flags: Vec<String> = cells[0]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--"))
            .map(str::to_string)
            .collect();
        let defaults: Vec<&str> = cells[1].split(" / ").collect();
        for (i, flag) in flags.iter().enumerate() {
            documented.insert(flag.clone());
            let shown = help.get(flag).unwrap_or_else(|| {
                panic!("README documents {flag}, which `aiphost serve --help` does not list")
            });
            if let (Some(shown), true) = (shown, defaults.len() == flags.len()) {
                assert_eq!(
                    &readme_value(defaults[i]),
                    shown,
                    "{flag}: README says {:?}, --help {shown:?}",
                    defaults[i]
                );
            }
        }
    }
    // Global flags (logging, help) are documented apart.
    let undocumented: Vec<&String> = help
        .keys()
        .filter(|f| {
            !documented.contains(*f) && !["--help", "--log", "--log-json"].contains(&f.as_str())
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "flags missing from the README's configuration table: {undocumented:?}"
    );
}

/// `aiphost call --protocol a2a URL ARGS…`, the real binary against `host`, run without blocking
/// the host's runtime (it serves in this process).
async fn a2a_call(url: &str, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(aiphost_bin());
    cmd.args(["call", "--protocol", "a2a", url])
        .args(args)
        .kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("aiphost call finished within 60 s")
        .expect("running aiphost")
}

/// The JSON the call printed on success.
fn printed(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(out)))
}

/// A call that failed with the A2A error `code` (`reason`): printed once as JSON on stdout, named
/// once on stderr, and a non-zero exit.
fn failed_with(out: &Output, code: i64, reason: &str) {
    let (out_text, err_text) = (stdout(out), stderr(out));
    assert!(!out.status.success(), "{out_text}");
    let printed: Value =
        serde_json::from_str(&out_text).unwrap_or_else(|e| panic!("not JSON ({e}): {out_text}"));
    assert_eq!(printed["error"]["code"], code, "{out_text}");
    assert_eq!(printed["error"]["data"][0]["reason"], reason, "{out_text}");
    assert!(
        printed["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    let code = code.to_string();
    assert_eq!(out_text.matches(&code).count(), 1, "{out_text}");
    assert_eq!(err_text.matches(&code).count(), 1, "{err_text}");
    assert_eq!(err_text.lines().count(), 1, "{err_text}");
    assert!(err_text.contains(reason), "{err_text}");
}

/// A call refused before anything is sent: a clear word on stderr, nothing on stdout.
fn refused(out: &Output, says: &str) {
    assert!(!out.status.success(), "{}", stdout(out));
    assert!(stdout(out).is_empty(), "{}", stdout(out));
    assert!(stderr(out).contains(says), "{}", stderr(out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_call_start_get_continue_and_list() {
    // Listing an open partner's shared tasks is the operator's choice.
    let host = TestHost::start(HostOptions {
        list_tasks_on: vec!["trip-planner".into()],
        ..HostOptions::default()
    })
    .await;
    // The partner's base URL, as for AIP: the client derives `/a2a`.
    let base = format!("{}/agents/trip-planner", host.url);
    let context = format!("ctx-{}", uuid());

    let sent = printed(
        &a2a_call(
            &base,
            &[
                "start",
                "--session",
                &context,
                "--text",
                "a trip to Beijing",
            ],
        )
        .await,
    );
    let task = &sent["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    assert_eq!(task["contextId"], context.as_str());
    assert_eq!(
        task["status"]["message"]["parts"][1]["data"]["missing"],
        serde_json::json!(["dates", "budget"])
    );
    let id = task["id"].as_str().expect("the task's id").to_string();

    let got = printed(&a2a_call(&base, &["get", "--task", &id, "--history-length", "0"]).await);
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    assert!(got.get("history").is_none(), "{got}");
    // The question is the status's message; the history so far is the Leader's start.
    let all = printed(&a2a_call(&base, &["get", "--task", &id]).await);
    assert_eq!(all["history"].as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(all["history"][0]["role"], "ROLE_USER");
    assert_eq!(all["history"][0]["parts"][0]["text"], "a trip to Beijing");

    // A text part and a data part; the task's context given as --session.
    let done = printed(
        &a2a_call(
            &base,
            &[
                "continue",
                "--task",
                &id,
                "--session",
                &context,
                "--text",
                "dates: 2025-10-01 to 2025-10-03",
                "--data",
                r#"{"budget": 5000}"#,
            ],
        )
        .await,
    );
    let task = &done["task"];
    assert_eq!(task["id"], id.as_str());
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(task["artifacts"][0]["artifactId"], "itinerary", "{done}");
    let history = task["history"].as_array().expect("a history");
    assert!(
        history.iter().any(|m| m["role"] == "ROLE_USER"
            && m["parts"][1]["data"]["budget"] == 5000
            && m["parts"][0]["text"] == "dates: 2025-10-01 to 2025-10-03"),
        "{done}"
    );

    let page = printed(
        &a2a_call(
            &base,
            &[
                "list",
                "--session",
                &context,
                "--status",
                "completed",
                "-o",
                "json",
            ],
        )
        .await,
    );
    assert_eq!(page["tasks"].as_array().map(Vec::len), Some(1), "{page}");
    assert_eq!(page["tasks"][0]["id"], id.as_str());
    assert_eq!(page["nextPageToken"], "");
    let none = printed(
        &a2a_call(
            &base,
            &[
                "list",
                "--session",
                &context,
                "--status",
                "working",
                "--output",
                "json",
            ],
        )
        .await,
    );
    assert_eq!(none["tasks"], serde_json::json!([]), "{none}");
    // For people (the default): a table, a task per row, its change time in UTC.
    let table = a2a_call(&base, &["list", "--session", &context]).await;
    assert!(table.status.success(), "{}", stderr(&table));
    let lines: Vec<String> = stdout(&table).lines().map(str::to_string).collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("STATE"),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains(id.as_str())
            && l.contains("TASK_STATE_COMPLETED")
            && l.contains('Z')),
        "{lines:?}"
    );
    // A second task, so a page of one has a next page.
    assert!(
        a2a_call(&base, &["start", "--text", "a trip to Xi'an"])
            .await
            .status
            .success()
    );
    let page_of_one = a2a_call(&base, &["list", "--page-size", "1"]).await;
    assert!(
        stdout(&page_of_one).contains("more: --page-token "),
        "{}",
        stdout(&page_of_one)
    );

    // What A2A has no word for is refused before anything is sent.
    refused(
        &a2a_call(&base, &["complete", "--task", &id]).await,
        "`complete` has no A2A equivalent",
    );
    refused(
        &a2a_call(&base, &["start", "--task", "mine", "--text", "x"]).await,
        "names its tasks",
    );
    refused(
        &a2a_call(
            &base,
            &["re-stream", "--task", &id, "--last-event-seq", "2"],
        )
        .await,
        "--last-event-seq has no A2A equivalent",
    );
    refused(
        &aiphost(&["call", &base, "list"]),
        "`list` has no AIP equivalent",
    );
    // An ended task takes no more messages.
    failed_with(
        &a2a_call(&base, &["continue", "--task", &id, "--text", "more"]).await,
        -32004,
        "UNSUPPORTED_OPERATION",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_call_streams_print_events_as_they_come_until_the_task_ends() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let host = TestHost::start(HostOptions::default()).await;
    let base = format!("{}/agents/chunked", host.url);

    // stream: SendStreamingMessage. The first event is printed while the partner still works.
    let mut child = tokio::process::Command::new(aiphost_bin())
        .args(["call", "--protocol", "a2a", &base, "stream", "--text"])
        .arg("size=2000 chunkSize=500 delayMs=300")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("running aiphost");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let limit = std::time::Duration::from_secs(60);
    let first = tokio::time::timeout(limit, lines.next_line())
        .await
        .expect("a first event in time")
        .expect("reading stdout")
        .expect("a first event");
    // The partner pauses 300 ms between its four chunks: printed as they come, the events
    // after the first take that long to follow it; printed at the end, they come at once.
    let first_at = std::time::Instant::now();
    let mut events: Vec<Value> = vec![serde_json::from_str(&first).expect("an event as JSON")];
    while let Some(line) = tokio::time::timeout(limit, lines.next_line())
        .await
        .expect("events in time")
        .expect("reading stdout")
    {
        events.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    let took = first_at.elapsed();
    assert!(
        took >= std::time::Duration::from_millis(600),
        "the events came together {took:?} after the first: they were not printed as they came"
    );
    let status = tokio::time::timeout(limit, child.wait())
        .await
        .expect("the call ends with its stream")
        .expect("the call's status");
    assert!(status.success(), "{events:?}");
    assert_eq!(events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let id = events[0]["task"]["id"].as_str().expect("the task's id");
    let chunks: Vec<&Value> = events
        .iter()
        .filter_map(|e| e.get("artifactUpdate"))
        .collect();
    assert_eq!(chunks.len(), 4, "{events:?}");
    assert!(chunks.iter().all(|c| c["taskId"] == id));
    assert_eq!(chunks[3]["lastChunk"], true);
    let last = events.last().expect("events");
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{events:?}"
    );

    // re-stream: SubscribeToTask follows a task started without waiting, until it ends.
    let sent = printed(
        &a2a_call(
            &base,
            &[
                "start",
                "--configuration",
                r#"{"returnImmediately": true}"#,
                "--text",
                "size=2500 chunkSize=500 delayMs=400",
            ],
        )
        .await,
    );
    let id = sent["task"]["id"]
        .as_str()
        .expect("the task's id")
        .to_string();
    let out = a2a_call(&base, &["re-stream", "--task", &id]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events[0]["task"]["id"], id.as_str(), "{events:?}");
    assert!(events.iter().any(|e| e.get("artifactUpdate").is_some()));
    assert_eq!(
        events.last().expect("events")["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{events:?}"
    );
    // Once it has ended there is nothing to follow.
    failed_with(
        &a2a_call(&base, &["re-stream", "--task", &id]).await,
        -32004,
        "UNSUPPORTED_OPERATION",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_call_cancel() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = format!("{}/agents/trip-planner/a2a", host.url);
    let sent = printed(&a2a_call(&base, &["start", "--text", "a trip to Rome"]).await);
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
    let id = sent["task"]["id"]
        .as_str()
        .expect("the task's id")
        .to_string();
    // `stream --task` continues a task, streamed: it begins with the task as it was and ends
    // when the task needs input again (the budget is still missing).
    let out = a2a_call(
        &base,
        &[
            "stream",
            "--task",
            &id,
            "--text",
            "dates: 2025-10-01 to 2025-10-03",
        ],
    )
    .await;
    assert!(out.status.success(), "{}", stderr(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(events[0]["task"]["id"], id.as_str(), "{events:?}");
    assert_eq!(
        events[0]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    let last = &events.last().expect("events")["statusUpdate"];
    assert_eq!(
        last["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{events:?}"
    );
    assert_eq!(
        last["status"]["message"]["parts"][1]["data"]["missing"],
        serde_json::json!(["budget"]),
        "{events:?}"
    );
    let canceled = printed(&a2a_call(&base, &["cancel", "--task", &id]).await);
    assert_eq!(canceled["id"], id.as_str());
    assert_eq!(
        canceled["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let got = printed(&a2a_call(&base, &["get", "--task", &id]).await);
    assert_eq!(got["status"]["state"], "TASK_STATE_CANCELED");
    failed_with(
        &a2a_call(&base, &["cancel", "--task", &id]).await,
        -32002,
        "TASK_NOT_CANCELABLE",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_call_errors_print_once_and_fail() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = format!("{}/agents/echo", host.url);
    for args in [
        vec!["get", "--task", "no-such-task"],
        vec!["cancel", "--task", "no-such-task"],
        vec!["continue", "--task", "no-such-task", "--text", "x"],
        // Before a stream starts, too.
        vec!["stream", "--task", "no-such-task", "--text", "x"],
        vec!["re-stream", "--task", "no-such-task"],
    ] {
        let out = a2a_call(&base, &args).await;
        assert!(
            stderr(&out).contains("Task not found"),
            "{args:?}: {}",
            stderr(&out)
        );
        failed_with(&out, -32001, "TASK_NOT_FOUND");
    }
    // What is not JSON is not sent.
    refused(
        &a2a_call(&base, &["start", "--data", "{oops"]).await,
        "--data #1 is not JSON",
    );
    // Nothing listens: a plain error, no JSON.
    let out = a2a_call(
        &format!("http://127.0.0.1:{}/agents/echo", free_port()),
        &["get", "--task", "t"],
    )
    .await;
    assert!(!out.status.success());
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(said.contains("HTTP request failed"), "{said}");
    assert_eq!(said.matches("error sending request").count(), 1, "{said}");
}

/// `aiphost call ARGS…` with environment `envs`, the real binary against a host serving in this
/// process (so run without blocking its runtime), bounded so that a hang fails.
async fn call_with_env(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = tokio::process::Command::new(aiphost_bin());
    cmd.arg("call")
        .args(args)
        .env_remove("AIPHOST_API_KEY")
        .envs(envs.iter().copied())
        .kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("aiphost call finished within 60 s")
        .expect("running aiphost")
}

async fn call(args: &[&str]) -> Output {
    call_with_env(args, &[]).await
}

/// The JSON lines a stream printed, after checking it succeeded.
fn events(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        stdout(out),
        stderr(out)
    );
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// A running `aiphost call ARGS…` whose output is read line by line as it comes.
struct Following {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Following {
    fn spawn(args: &[&str]) -> Following {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(aiphost_bin())
            .arg("call")
            .args(args)
            .env_remove("AIPHOST_API_KEY")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("running aiphost");
        let stdout = child.stdout.take().expect("stdout");
        Following {
            child,
            lines: tokio::io::BufReader::new(stdout).lines(),
        }
    }

    /// The next line, as JSON (`None` once the call has closed its output).
    async fn next(&mut self) -> Option<Value> {
        let line = tokio::time::timeout(std::time::Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("a line within 60 s")
            .expect("reading stdout")?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")))
    }

    /// Lines until one satisfies `wanted` (returned), failing if output ends first.
    async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let event = self.next().await.expect("the awaited event before the end");
            if wanted(&event) {
                return event;
            }
        }
    }

    /// The remaining lines, then the exit, which must be a success.
    async fn finish(mut self) -> Vec<Value> {
        let mut rest = Vec::new();
        while let Some(event) = self.next().await {
            rest.push(event);
        }
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            self.child.wait_with_output(),
        )
        .await
        .expect("the call ends with its stream")
        .expect("the call's status");
        assert!(out.status.success(), "{rest:?}\nstderr: {}", stderr(&out));
        rest
    }
}

/// The state an AIP stream event carries, if any.
fn aip_state(event: &Value) -> Option<&str> {
    event["result"]["eventData"]["status"]["state"].as_str()
}

/// AIP `stream` and `re-stream` end, with success, as soon as the task rests (here: the trip
/// planner asks for dates and a budget) instead of waiting on a stream the host keeps open;
/// `--follow` keeps following until another client has completed the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_streams_end_where_the_task_rests_and_follow_on_request() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = format!("{}/agents/trip-planner", host.url);
    let task = format!("trip-{}", uuid());

    let streamed = events(
        &call(&[
            &base,
            "stream",
            "--task",
            &task,
            "--text",
            "a trip to Beijing",
        ])
        .await,
    );
    let last = streamed.last().expect("events");
    assert_eq!(aip_state(last), Some("awaiting-input"), "{streamed:?}");

    // re-stream replays from the first event and stops where the task stands.
    let replayed = events(&call(&[&base, "re-stream", "--task", &task]).await);
    assert_eq!(
        replayed.last().and_then(aip_state),
        Some("awaiting-input"),
        "{replayed:?}"
    );

    // --follow: past the rests, until another client completes the task.
    let mut follow = Following::spawn(&[&base, "re-stream", "--task", &task, "--follow"]);
    follow
        .until(|e| aip_state(e) == Some("awaiting-input"))
        .await;
    let more = call(&[
        &base,
        "continue",
        "--task",
        &task,
        "--text",
        "dates: 2025-10-01 to 2025-10-03, budget: 5000",
    ])
    .await;
    assert!(more.status.success(), "{}", stderr(&more));
    follow
        .until(|e| aip_state(e) == Some("awaiting-completion"))
        .await;
    let done = call(&[&base, "complete", "--task", &task]).await;
    assert!(done.status.success(), "{}", stderr(&done));
    let rest = follow.finish().await;
    assert_eq!(
        rest.last().and_then(aip_state),
        Some("completed"),
        "{rest:?}"
    );

    // Resting at awaiting-completion ends a stream too; an ended task's re-stream just replays.
    let echo = format!("{}/agents/echo", host.url);
    let echoed = events(&call(&[&echo, "stream", "--task", &uuid(), "--text", "hi"]).await);
    assert_eq!(
        echoed.last().and_then(aip_state),
        Some("awaiting-completion"),
        "{echoed:?}"
    );
    let ended = events(&call(&[&base, "re-stream", "--task", &task]).await);
    assert_eq!(ended.last().and_then(aip_state), Some("completed"));
}

/// Over A2A: `re-stream` (SubscribeToTask) of a task that needs input ends at once with the
/// task as it is; `stream --follow` follows a task past its need for input until it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_call_streams_end_where_the_task_rests_and_follow_on_request() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = format!("{}/agents/trip-planner", host.url);
    let a2a = ["--protocol", "a2a", base.as_str()];

    let mut follow = Following::spawn(
        &[
            &a2a[..],
            &["stream", "--follow", "--text", "a trip to Rome"],
        ]
        .concat(),
    );
    let asked = follow
        .until(|e| e["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED")
        .await;
    let id = asked["statusUpdate"]["taskId"]
        .as_str()
        .expect("the task's id")
        .to_string();

    let now = events(&call(&[&a2a[..], &["re-stream", "--task", &id]].concat()).await);
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(
        now[0]["task"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    let more = call(
        &[
            &a2a[..],
            &[
                "continue",
                "--task",
                &id,
                "--text",
                "dates: 2025-10-01 to 2025-10-03",
                "--data",
                r#"{"budget": 5000}"#,
            ],
        ]
        .concat(),
    )
    .await;
    assert!(more.status.success(), "{}", stderr(&more));
    let rest = follow.finish().await;
    let last = rest.last().expect("events after the question");
    let state = last["statusUpdate"]["status"]["state"]
        .as_str()
        .or(last["task"]["status"]["state"].as_str());
    assert_eq!(state, Some("TASK_STATE_COMPLETED"), "{rest:?}");
}

/// `--api-key` (or `AIPHOST_API_KEY`) is how a Leader calls a partner whose Leaders need keys;
/// without one the call fails and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_sends_a_leaders_api_key() {
    use aiphost_tests::tenants::{create_tenant, publish_keyed};
    const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", serde_json::json!({})).await;
    let keys = publish_keyed(&host.url, &acme, "echo", "vault", &[LEADER]).await;
    let base = format!("{}/agents/vault", host.url);

    let out = call(&[
        "--leader",
        LEADER,
        "--api-key",
        &keys[0],
        &base,
        "start",
        "--text",
        "hi",
    ])
    .await;
    let task = printed(&out);
    assert_eq!(task["status"]["state"], "awaiting-completion", "{task}");
    let out = call_with_env(
        &["--protocol", "a2a", &base, "start", "--text", "hi"],
        &[("AIPHOST_API_KEY", &keys[0])],
    )
    .await;
    let sent = printed(&out);
    assert!(sent["task"]["id"].is_string(), "{sent}");
    let streamed = events(
        &call(&[
            "--leader",
            LEADER,
            "--api-key",
            &keys[0],
            &base,
            "stream",
            "--text",
            "hi",
        ])
        .await,
    );
    assert_eq!(
        streamed.last().and_then(aip_state),
        Some("awaiting-completion")
    );

    for (args, says) in [
        (
            vec!["--leader", LEADER, base.as_str(), "start", "--text", "hi"],
            "Authentication required",
        ),
        (
            vec![
                "--leader",
                LEADER,
                "--api-key",
                "aho.wrong",
                base.as_str(),
                "start",
                "--text",
                "hi",
            ],
            "Invalid access token",
        ),
        (
            vec!["--protocol", "a2a", base.as_str(), "start", "--text", "hi"],
            "requires an API key",
        ),
    ] {
        let out = call(&args).await;
        assert!(!out.status.success(), "{args:?}: {}", stdout(&out));
        let said = stderr(&out);
        assert!(said.contains(says), "{args:?}: {said}");
        assert!(!said.contains("panicked"), "{said}");
    }
}

/// `aiphost call … | head -1`: once the reader has gone the call ends quietly and successfully,
/// without a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_ends_quietly_when_its_reader_goes_away() {
    let host = TestHost::start(HostOptions::default()).await;
    let base = format!("{}/agents/chunked", host.url);
    for protocol in ["aip", "a2a"] {
        let mut follow = Following::spawn(&[
            "--protocol",
            protocol,
            &base,
            "stream",
            "--text",
            "size=4000 chunkSize=100 delayMs=50",
        ]);
        follow.next().await.expect("a first event");
        let Following { mut child, lines } = follow;
        drop(lines);
        let stderr_pipe = child.stderr.take().expect("stderr");
        let status = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait())
            .await
            .expect("the call ends once its reader is gone")
            .expect("the call's status");
        let mut said = String::new();
        tokio::io::AsyncReadExt::read_to_string(
            &mut tokio::io::BufReader::new(stderr_pipe),
            &mut said,
        )
        .await
        .expect("reading stderr");
        assert!(status.success(), "{protocol}: {status:?}: {said}");
        assert!(!said.contains("panicked"), "{protocol}: {said}");
    }
}

/// A failure's causes are each said once: nothing listens, over AIP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_errors_name_each_cause_once() {
    let url = format!("http://127.0.0.1:{}/agents/echo", free_port());
    for args in [
        vec![url.as_str(), "get", "--task", "t"],
        vec![url.as_str(), "stream", "--text", "x"],
    ] {
        let out = call(&args).await;
        assert!(!out.status.success());
        assert!(stdout(&out).is_empty(), "{}", stdout(&out));
        let said = stderr(&out);
        assert_eq!(said.matches("HTTP request failed").count(), 1, "{said}");
        assert_eq!(said.matches("error sending request").count(), 1, "{said}");
        assert_eq!(said.matches("onnection refused").count(), 1, "{said}");
    }
}

/// Listings print a table by default (times in UTC to the second, sizes with a unit) and the
/// host's JSON with `--output json`; `serve` takes durations and sizes with units, and they take
/// effect (`--max-body-bytes 64KiB` refuses a 100 KiB request with `limitBytes` 65536).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_print_a_table_or_json_and_serve_takes_units() {
    let dir = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(
        &dir.path().join("data"),
        &[
            "--webhook-timeout-ms",
            "2s",
            "--max-body-bytes",
            "64KiB",
            "--sse-keep-alive-secs",
            "1m",
            "--store-cache-mib",
            "16MiB",
        ],
    );
    let big = "x".repeat(100 * 1024);
    let answer = post(
        &host.rpc("echo"),
        &v2("start", "big", text(&big), serde_json::json!({})),
    )
    .await;
    assert_eq!(answer["error"]["data"]["limitBytes"], 64 * 1024, "{answer}");
    aiphost_tests::tenants::create_tenant(&host.url, "acme", serde_json::json!({})).await;

    let list = |extra: &[&str]| {
        let out = Command::new(aiphost_bin())
            .args(["tenant", "list", "--url", &host.url])
            .args(extra)
            .env("AIPHOST_TOKEN", OPERATOR_TOKEN)
            .env_remove("AIPHOST_OUTPUT")
            .output()
            .expect("aiphost tenant list");
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let table = list(&[]);
    let mut lines = table.lines();
    let header = lines.next().unwrap_or_default();
    for column in ["TENANT", "CREATED", "STORED", "AGENTS"] {
        assert!(header.contains(column), "{table}");
    }
    let row = lines.find(|l| l.starts_with("acme")).expect("acme's row");
    // The creation time, at the CREATED column: `2026-11-23 17:42:36Z`.
    let at = header.find("CREATED").unwrap_or(0);
    let created: Vec<char> = row.chars().skip(at).take(20).collect();
    assert!(
        created.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == '-',
            10 => *c == ' ',
            13 | 16 => *c == ':',
            19 => *c == 'Z',
            _ => c.is_ascii_digit(),
        }),
        "{table}"
    );
    assert!(row.contains(" B") || row.contains("iB"), "{table}");

    for flags in [&["--output", "json"][..], &["-o", "json"], &["--json"]] {
        let json: Value = serde_json::from_str(&list(flags)).expect("JSON");
        let acme = json
            .as_array()
            .and_then(|a| a.iter().find(|t| t["id"] == "acme"))
            .unwrap_or_else(|| panic!("{flags:?}: {json}"));
        assert!(
            acme["createdMs"].is_i64() && acme["storedBytes"].is_u64(),
            "{acme}"
        );
    }
}

/// A malformed duration or size is refused before the host starts, saying what was expected,
/// with clap's usage exit code.
#[test]
fn serve_refuses_a_malformed_duration_or_size() {
    for (flag, value, said) in [
        (
            "--webhook-timeout-ms",
            "2x",
            "expected a duration like 30s or 500ms, got \"2x\"",
        ),
        (
            "--webhook-horizon-secs",
            "1500ms",
            "\"1500ms\" is not a whole number of seconds",
        ),
        (
            "--max-body-bytes",
            "lots",
            "expected a size like 64MiB or 1GiB, got \"lots\"",
        ),
    ] {
        let out = aiphost(&["serve", flag, value]);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{flag} {value}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(said),
            "{flag} {value}: {}",
            stderr(&out)
        );
    }
}

/// A CA for a TLS host, and PEM files it signs, in `dir`.
struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    dir: std::path::PathBuf,
}

impl TestCa {
    fn new(dir: &std::path::Path) -> TestCa {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = rcgen::KeyPair::generate().unwrap();
        let issuer = rcgen::CertifiedIssuer::self_signed(params, key).unwrap();
        std::fs::write(dir.join("ca.pem"), issuer.pem()).unwrap();
        TestCa {
            issuer,
            dir: dir.to_path_buf(),
        }
    }

    fn ca(&self) -> std::path::PathBuf {
        self.dir.join("ca.pem")
    }

    /// A certificate with `san` and its key, as `NAME.pem` and `NAME-key.pem`.
    fn leaf(&self, name: &str, san: rcgen::SanType) -> (std::path::PathBuf, std::path::PathBuf) {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![san];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let (cert_path, key_path) = (
            self.dir.join(format!("{name}.pem")),
            self.dir.join(format!("{name}-key.pem")),
        );
        std::fs::write(&cert_path, cert.pem()).unwrap();
        std::fs::write(&key_path, key.serialize_pem()).unwrap();
        (cert_path, key_path)
    }
}

/// One HTTPS POST to the host, trusting `ca`, with an optional bearer token: the JSON answer.
async fn https_post(ca: &TestCa, url: &str, token: &str, body: &Value) -> (u16, Value) {
    use http_body_util::BodyExt;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_file(ca.ca()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let uri: hyper::Uri = url.parse().unwrap();
    let authority = uri.authority().unwrap().to_string();
    let tcp = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(
            rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::post(uri.path())
        .header("host", &authority)
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(http_body_util::Full::new(hyper::body::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// `--cert/--key` (with `--ca` for the host's private CA): over HTTPS, a Leader known by its
/// client certificate calls a partner that takes Leaders by certificate, over AIP and A2A;
/// without the certificate it is refused, and `--ca` alone reaches an open partner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_presents_a_leaders_client_certificate() {
    use base64::Engine as _;
    const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    let pki = tempfile::tempdir().unwrap();
    let ca = TestCa::new(pki.path());
    let (server_cert, server_key) = ca.leaf(
        "server",
        rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()),
    );
    let (leader_cert, leader_key) = ca.leaf(
        "leader",
        rcgen::SanType::URI(format!("acps://{LEADER}").try_into().unwrap()),
    );
    let host = TestHost::start(HostOptions {
        tls: Some(aiphost::transport::tls::TlsFiles {
            cert: server_cert,
            key: server_key,
            client_ca: Some(ca.ca()),
        }),
        ..HostOptions::default()
    })
    .await;
    assert!(host.url.starts_with("https://"), "{}", host.url);
    let (status, tenant) = https_post(
        &ca,
        &format!("{}/admin/tenants", host.url),
        OPERATOR_TOKEN,
        &serde_json::json!({"id": "acme"}),
    )
    .await;
    assert_eq!(status, 201, "{tenant}");
    let token = tenant["adminToken"].as_str().expect("a token");
    let manifest = aiphost_tests::tenants::example_manifest(
        "echo",
        "guarded",
        "[access]\nleaders = \"mtls\"\n",
    );
    let wasm = std::fs::read(plugins_dist().join("echo/partner.wasm")).unwrap();
    let (status, published) = https_post(
        &ca,
        &format!("{}/admin/agents", host.url),
        token,
        &serde_json::json!({
            "manifest": manifest,
            "component": base64::engine::general_purpose::STANDARD.encode(&wasm),
        }),
    )
    .await;
    assert_eq!(status, 201, "{published}");

    let base = format!("{}/agents/guarded", host.url);
    let (ca_path, cert, key) = (
        ca.ca().display().to_string(),
        leader_cert.display().to_string(),
        leader_key.display().to_string(),
    );
    let tls = ["--ca", &ca_path, "--cert", &cert, "--key", &key];
    let task = printed(
        &call(
            &[
                &tls[..],
                &["--leader", LEADER, &base, "start", "--text", "hi"],
            ]
            .concat(),
        )
        .await,
    );
    assert_eq!(task["status"]["state"], "awaiting-completion", "{task}");
    let streamed = events(
        &call(
            &[
                &tls[..],
                &["--leader", LEADER, &base, "stream", "--text", "hi"],
            ]
            .concat(),
        )
        .await,
    );
    assert_eq!(
        streamed.last().and_then(aip_state),
        Some("awaiting-completion"),
        "{streamed:?}"
    );
    let sent = printed(
        &call(
            &[
                &tls[..],
                &["--protocol", "a2a", &base, "start", "--text", "hi"],
            ]
            .concat(),
        )
        .await,
    );
    assert!(sent["task"]["id"].is_string(), "{sent}");

    // Without the certificate: refused by the partner, said once.
    let out = call(&[
        "--ca", &ca_path, "--leader", LEADER, &base, "start", "--text", "hi",
    ])
    .await;
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("Authentication required"),
        "{}",
        stderr(&out)
    );
    // The host's certificate is checked: without its CA there is no connection.
    let out = call(
        &[
            &tls[2..],
            &["--leader", LEADER, &base, "start", "--text", "hi"],
        ]
        .concat(),
    )
    .await;
    assert!(!out.status.success(), "{}", stdout(&out));
    assert_eq!(
        stderr(&out).matches("TLS handshake").count(),
        1,
        "{}",
        stderr(&out)
    );
    // An open partner over HTTPS needs only the CA; a certificate needs its key.
    let echo = format!("{}/agents/echo", host.url);
    let task = printed(&call(&["--ca", &ca_path, &echo, "start", "--text", "hi"]).await);
    assert_eq!(task["status"]["state"], "awaiting-completion", "{task}");
    let out = call(&["--cert", &cert, &echo, "start", "--text", "hi"]).await;
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--key"), "{}", stderr(&out));
}

/// Keys mean something: `key issue` for a partner that admits any Leader is refused with how to
/// require keys; `--api-key` alone names the Leader; an AIP error's reason is printed; a missing
/// admin token is explained in the CLI's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_mean_something_and_errors_say_why() {
    use aiphost_tests::tenants::{create_tenant, example_component, example_manifest, publish};
    const LEADER: &str = "1.2.156.3088.1.1.TEST.LEADER.1.0000";
    let host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", serde_json::json!({})).await;
    let (status, body) = publish(
        &host.url,
        &acme,
        &example_manifest("echo", "open-echo", ""),
        &example_component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let key_issue = |token: Option<&str>| {
        let mut cmd = Command::new(aiphost_bin());
        cmd.args([
            "key",
            "issue",
            "open-echo",
            "--leader",
            LEADER,
            "--url",
            &host.url,
        ])
        .env_remove("AIPHOST_TOKEN");
        if let Some(token) = token {
            cmd.env("AIPHOST_TOKEN", token);
        }
        cmd.output().expect("aiphost key issue")
    };
    let out = key_issue(Some(&acme));
    assert!(!out.status.success(), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(said.contains("does not take API keys"), "{said}");
    assert!(
        said.contains(r#"leaders = \"api-key\""#) || said.contains(r#"leaders = "api-key""#),
        "{said}"
    );
    assert!(!stdout(&out).contains("ahk."), "no key was printed");

    let out = key_issue(None);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("--token") && said.contains("AIPHOST_TOKEN"),
        "{said}"
    );

    // --api-key alone: the host takes the key's Leader.
    let keys =
        aiphost_tests::tenants::publish_keyed(&host.url, &acme, "echo", "vault", &[LEADER]).await;

    // agent list --published: the tenant's published partners, from the running host.
    let listed = Command::new(aiphost_bin())
        .args([
            "agent",
            "list",
            "--published",
            "--output",
            "json",
            "--url",
            &host.url,
        ])
        .env("AIPHOST_TOKEN", &acme)
        .output()
        .expect("aiphost agent list --published");
    assert!(listed.status.success(), "{}", stderr(&listed));
    let listed: Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let ids: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["id"].as_str())
        .collect();
    assert_eq!(ids, ["open-echo", "vault"], "{listed}");
    let base = format!("{}/agents/vault", host.url);
    let task = printed(&call(&["--api-key", &keys[0], &base, "start", "--text", "hi"]).await);
    assert_eq!(task["status"]["state"], "awaiting-completion", "{task}");

    // An AIP error's reason reaches the person.
    let out = call(&[
        &format!("{}/agents/echo", host.url),
        "get",
        "--task",
        "no-such-task",
    ])
    .await;
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains("-32001") && said.contains("no-such-task"),
        "{said}"
    );
}

/// Every command's help describes every argument and option, and lists every subcommand.
#[test]
fn every_argument_is_described() {
    fn walk(path: &[String], missing: &mut Vec<String>) {
        let mut args: Vec<String> = path.to_vec();
        // `call` takes the partner's URL before its subcommand.
        if path.len() >= 2 && path[0] == "call" {
            args.insert(1, "http://x".into());
        }
        args.push("--help".into());
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = aiphost(&arg_refs);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let help = stdout(&out);
        let lines: Vec<&str> = help.lines().collect();
        let mut section = "";
        let mut commands = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if !line.starts_with(' ') && line.ends_with(':') {
                section = line.trim_end_matches(':');
                continue;
            }
            // An entry starts two spaces in; its description follows two or more spaces after
            // it, or on the next, deeper-indented line.
            let Some(entry) = line.strip_prefix("  ") else {
                continue;
            };
            if entry.starts_with("        ") || entry.trim().is_empty() {
                continue;
            }
            let entry = entry.trim_start();
            let described = entry.trim_end().contains("  ")
                || lines
                    .get(i + 1)
                    .is_some_and(|next| next.starts_with("          "));
            let name = entry.split("  ").next().unwrap_or_default().trim();
            if section == "Commands" && name != "help" {
                commands.push(name.to_string());
            }
            if !described {
                missing.push(format!("{}: {section}: {name}", path.join(" ")));
            }
        }
        for command in commands {
            let mut next = path.to_vec();
            next.push(command);
            walk(&next, missing);
        }
    }
    let mut missing = Vec::new();
    walk(&[], &mut missing);
    assert!(missing.is_empty(), "undescribed: {missing:#?}");

    let agent = stdout(&aiphost(&["agent", "--help"]));
    for sub in [
        "new",
        "build",
        "test",
        "list",
        "publish",
        "versions",
        "rollback",
        "unpublish",
    ] {
        assert!(
            agent
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{sub} "))),
            "agent --help lists {sub}:\n{agent}"
        );
    }
    let list = stdout(&aiphost(&["agent", "list", "--help"]));
    assert!(list.contains("--published"), "{list}");
}

/// `aiphost agent test` runs a partner's own tests in every language, and fails when they fail;
/// a TypeScript type error stops the build; a Python syntax error is said as the author's file
/// and line.
#[test]
fn agent_test_runs_each_languages_tests() {
    plugins_dist();
    let dir = tempfile::tempdir().unwrap();
    for (lang, test_file, broken) in [
        (
            "rust",
            "src/lib.rs",
            "\n#[test]\nfn broken() { assert_eq!(1, 2); }\n",
        ),
        (
            "python",
            "tests/test_app.py",
            "\n\ndef test_broken():\n    assert 1 == 2\n",
        ),
        (
            "js",
            "test/partner.test.js",
            "\ntest(\"broken\", () => { assert.equal(1, 2); });\n",
        ),
        (
            "ts",
            "test/partner.test.ts",
            "\ntest(\"broken\", () => { assert.equal(1, 2); });\n",
        ),
    ] {
        let src = dir.path().join(format!("t-{lang}"));
        let name = format!("t-{lang}");
        let out = aiphost(&[
            "agent",
            "new",
            &name,
            "--lang",
            lang,
            "--path",
            src.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{lang}: {}", stderr(&out));
        assert!(
            src.join("README.md").is_file(),
            "{lang}: a scaffold has a README"
        );
        let out = aiphost(&["agent", "test", src.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{lang}: {}\n{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("tests passed"),
            "{lang}: {}",
            stderr(&out)
        );

        let file = src.join(test_file);
        let mut text = std::fs::read_to_string(&file).unwrap();
        text.push_str(broken);
        std::fs::write(&file, text).unwrap();
        let out = aiphost(&["agent", "test", src.to_str().unwrap()]);
        assert!(!out.status.success(), "{lang}: a failing test passed");
        assert!(
            stderr(&out).contains("tests failed"),
            "{lang}: {}",
            stderr(&out)
        );
    }

    // TypeScript: a type error fails the build, with the file and line.
    let ts = dir.path().join("t-ts");
    let source = ts.join("src/partner.ts");
    let mut text = std::fs::read_to_string(&source).unwrap();
    text.push_str("\nexport const oops: number = \"not a number\";\n");
    std::fs::write(&source, text).unwrap();
    let out = aiphost(&["agent", "build", ts.to_str().unwrap()]);
    assert!(!out.status.success(), "a type error built");
    let said = stderr(&out);
    assert!(
        said.contains("src/partner.ts(") && said.contains("TS2322"),
        "{said}"
    );

    // Python: a syntax error is the author's file and line, without componentize-py's frames.
    let py = dir.path().join("t-python");
    let app = py.join("app.py");
    let mut text = std::fs::read_to_string(&app).unwrap();
    text.push_str("\ndef broken(:\n    pass\n");
    std::fs::write(&app, text).unwrap();
    let out = aiphost(&["agent", "build", py.to_str().unwrap()]);
    assert!(!out.status.success(), "a syntax error built");
    let said = stderr(&out);
    assert!(
        said.contains(&format!("{}:", app.display())) && said.contains("SyntaxError"),
        "{said}"
    );
    assert!(
        !said.contains("Traceback") && !said.contains("componentize_py"),
        "{said}"
    );
}
