//! A newcomer's first hour with the real binary: `aiphost serve` answers at once and each partner
//! as soon as its component is compiled; start-up errors are said once, in words, with the hint
//! that fixes them; a partner that is not hosted is a 404 that names it.

use aiphost_tests::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `aiphost serve` with `args` that is expected to fail at start-up: its output.
fn serve_fails(args: &[&str]) -> Output {
    let output = Command::new(aiphost_bin())
        .arg("serve")
        .args(args)
        .env("AIPHOST_OPERATOR_TOKEN", OPERATOR_TOKEN)
        .stdin(Stdio::null())
        .output()
        .expect("running aiphost serve");
    assert!(
        !output.status.success(),
        "aiphost serve {args:?} should have failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The `error: ...` line of a failed start, checked for what every such line must be: one line,
/// no cause said twice, no Rust debug forms, no colour codes.
fn error_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes in a pipe: {stderr:?}"
    );
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(errors.len(), 1, "one error line: {stderr}");
    let line = errors[0].to_string();
    assert!(!line.contains("Os {") && !line.contains("kind:"), "{line}");
    let parts: Vec<&str> = line.split(": ").collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..].contains(part),
            "{part:?} is said twice in {line}"
        );
    }
    line
}

/// A directory of bundles holding copies of `agents` from plugins/dist.
fn bundles(dir: &Path, agents: &[&str]) -> std::path::PathBuf {
    let dist = plugins_dist();
    let out = dir.join("agents");
    for agent in agents {
        let bundle = out.join(agent);
        std::fs::create_dir_all(&bundle).unwrap();
        for file in ["partner.toml", "partner.wasm"] {
            std::fs::copy(dist.join(agent).join(file), bundle.join(file)).unwrap();
        }
    }
    out
}

#[test]
fn start_up_errors_are_said_once_with_their_fix() {
    let dir = tempfile::tempdir().unwrap();
    let echo = bundles(dir.path(), &["echo"]);
    let echo_arg = echo.to_str().unwrap();
    let data = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let any_port = format!("127.0.0.1:{}", free_port());

    // A busy port: said before anything else is done (no store is made).
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_addr = busy.local_addr().unwrap().to_string();
    let line = error_line(&serve_fails(&[
        "--listen",
        &busy_addr,
        "--data",
        &data("busy"),
        "--agents",
        echo_arg,
    ]));
    assert!(
        line.contains(&busy_addr) && line.contains("already in use"),
        "{line}"
    );
    assert!(line.contains("choose another --listen"), "{line}");
    assert!(
        !dir.path().join("busy/store").exists(),
        "a store was made before the port"
    );

    // A data directory another aiphost is serving.
    let serving = dir.path().join("serving");
    std::fs::create_dir_all(&serving).unwrap();
    let host = ProcessHost::serve(&serving, &echo, &[]);
    let line = error_line(&serve_fails(&[
        "--listen",
        &any_port,
        "--data",
        serving.to_str().unwrap(),
        "--agents",
        echo_arg,
    ]));
    assert!(line.contains("in use by another process"), "{line}");
    assert!(line.contains("another --data"), "{line}");
    host.kill();

    // An agents directory that does not exist.
    let line = error_line(&serve_fails(&[
        "--listen",
        &any_port,
        "--data",
        &data("d1"),
        "--agents",
        "/nonexistent/aiphost-agents",
    ]));
    assert!(
        line.contains("/nonexistent/aiphost-agents does not exist"),
        "{line}"
    );

    // A partner's project instead of its bundle.
    let project = dir.path().join("shout");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("Cargo.toml"), "[package]\nname = \"shout\"\n").unwrap();
    std::fs::copy(echo.join("echo/partner.toml"), project.join("partner.toml")).unwrap();
    let line = error_line(&serve_fails(&[
        "--listen",
        &any_port,
        "--data",
        &data("d2"),
        "--agents",
        project.to_str().unwrap(),
    ]));
    assert!(line.contains("is a partner's project"), "{line}");
    assert!(
        line.contains(&format!("{}/dist", project.display())),
        "{line}"
    );

    // A bundle whose component is not a component, and one whose component cannot be read.
    for (name, make) in [
        (
            "garbage",
            Box::new(|p: &Path| std::fs::write(p, b"hello").unwrap()) as Box<dyn Fn(&Path)>,
        ),
        (
            "unreadable",
            Box::new(|p: &Path| std::fs::create_dir_all(p).unwrap()),
        ),
    ] {
        let bundle = dir.path().join(name).join("bad");
        std::fs::create_dir_all(&bundle).unwrap();
        std::fs::copy(echo.join("echo/partner.toml"), bundle.join("partner.toml")).unwrap();
        make(&bundle.join("partner.wasm"));
        let line = error_line(&serve_fails(&[
            "--listen",
            &any_port,
            "--data",
            &data(&format!("d-{name}")),
            "--agents",
            bundle.parent().unwrap().to_str().unwrap(),
        ]));
        assert!(
            line.contains(&bundle.join("partner.wasm").display().to_string()),
            "{line}"
        );
    }

    // TLS files that are not there.
    let line = error_line(&serve_fails(&[
        "--listen",
        &any_port,
        "--data",
        &data("d3"),
        "--agents",
        echo_arg,
        "--tls-cert",
        "/nonexistent/cert.pem",
        "--tls-key",
        "/nonexistent/key.pem",
    ]));
    assert!(line.contains("/nonexistent/cert.pem"), "{line}");
}

async fn readyz(url: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{url}/readyz")).await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// `aiphost serve` on a fresh data directory and an empty compiled cache: `/healthz` answers at
/// once, a partner still compiling is a 503 with `Retry-After` in its door's shape, a small
/// partner answers while a large one compiles, and `/readyz` says which are ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_at_once_and_each_partner_when_it_is_ready() {
    let dir = tempfile::tempdir().unwrap();
    let agents = bundles(dir.path(), &["echo", "echo-py"]);
    let data = dir.path().join("data");
    let cache = dir.path().join("cache");
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let log = std::fs::File::create(dir.path().join("log")).unwrap();
    let mut child = Command::new(aiphost_bin())
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data")
        .arg(&data)
        .arg("--agents")
        .arg(&agents)
        .arg("--compiled-cache")
        .arg(&cache)
        .env("AIPHOST_OPERATOR_TOKEN", OPERATOR_TOKEN)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let started = Instant::now();
    while client.get(format!("{url}/healthz")).send().await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(60), "no /healthz");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The Python partner (18 MB, CPython inside) takes seconds to compile from an empty cache.
    let (status, ready) = readyz(&url).await;
    assert_eq!(status, 503, "{ready}");
    assert_eq!(ready["partners"]["echo-py"], "compiling", "{ready}");
    let response = client
        .post(format!("{url}/agents/echo-py/rpc"))
        .json(&v2("start", "py-1", text("hi"), serde_json::json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "2");
    let refused: Value = response.json().await.unwrap();
    assert_eq!(refused["jsonrpc"], "2.0", "{refused}");
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert_eq!(refused["error"]["data"]["agent"], "echo-py", "{refused}");
    assert_eq!(refused["error"]["data"]["retryable"], true, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still compiling"),
        "{refused}"
    );
    // The A2A door says it in its own shape (AIP-193), and the card is served meanwhile.
    let response = client
        .post(format!("{url}/agents/echo-py/a2a/rest/message:send"))
        .json(&a2a::message("m-1", "hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let refused: Value = response.json().await.unwrap();
    assert_eq!(refused["error"]["status"], "UNAVAILABLE", "{refused}");
    let card = client
        .get(format!("{url}/agents/echo-py/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(card.status(), 200);
    // The CLI says it in words (the JSON-RPC error inside the 503), not as an HTTP status.
    let out = Command::new(aiphost_bin())
        .args([
            "call",
            &format!("{url}/agents/echo-py"),
            "start",
            "--text",
            "hi",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("-32000") && said.contains("still compiling"),
        "{said}"
    );

    // echo is small: it serves as soon as its own compile ends.
    loop {
        let summary: Value = client
            .get(format!("{url}/agents/echo"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if summary["readiness"] == "ready" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "echo never ready"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answer = post(
        &format!("{url}/agents/echo/rpc"),
        &v2("start", "echo-1", text("hi"), serde_json::json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let (_, ready) = readyz(&url).await;
    assert_eq!(ready["partners"]["echo"], "ready", "{ready}");
    assert_eq!(
        ready["partners"]["echo-py"], "compiling",
        "echo answered while echo-py compiled: {ready}"
    );

    // Then echo-py is ready too, and answers.
    loop {
        let (status, _) = readyz(&url).await;
        if status == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "echo-py never ready"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let answer = post(
        &format!("{url}/agents/echo-py/rpc"),
        &v2("start", "py-2", text("hi"), serde_json::json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
    assert!(log.contains("partner ready (2 of 2)"), "{log}");
    assert!(!log.contains('\u{1b}'), "colour codes in a log file");
    assert!(!log.contains("older store"), "{log}");
    let _ = child.kill();
    let _ = child.wait();
}

/// `GET /`, `GET /agents/{id}` and an unknown partner in every door.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_and_its_partners_say_where_things_are() {
    let host = TestHost::start(HostOptions::default()).await;
    let home: Value = reqwest::get(format!("{}/", host.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(home["agents"], format!("{}/agents", host.url), "{home}");
    assert!(
        home["hosted"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == &format!("{}/agents/echo", host.url)),
        "{home}"
    );
    let echo: Value = reqwest::get(format!("{}/agents/echo", host.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(echo["readiness"], "ready", "{echo}");
    assert_eq!(
        echo["aip"]["rpc"],
        format!("{}/agents/echo/rpc", host.url),
        "{echo}"
    );
    assert_eq!(
        echo["a2a"]["card"],
        format!("{}/agents/echo/.well-known/agent-card.json", host.url),
        "{echo}"
    );
    let (status, ready) = readyz(&host.url).await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(ready["ready"], true, "{ready}");

    for path in [
        "",
        "/a2a/rest/tasks",
        "/.well-known/agent-card.json",
        "/.well-known/acs.json",
    ] {
        let response = reqwest::get(format!("{}/agents/nobody{path}", host.url))
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        assert_json(&response);
        let body: Value = response.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("\"nobody\"") && message.contains("GET /agents"),
            "{path}: {body}"
        );
    }
    let response = reqwest::Client::new()
        .post(format!("{}/agents/nobody/a2a", host.url))
        .json(&a2a::request("GetTask", serde_json::json!({"id": "t"})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["data"]["agent"], "nobody", "{body}");
}

/// The README is self-contained: every relative link points at a file of this repository, and
/// nothing points outside it.
#[test]
fn the_readme_links_only_inside_the_repository() {
    let root = repo_root();
    for doc in [
        "README.md",
        "sdk/rust/README.md",
        "sdk/python/README.md",
        "sdk/js/README.md",
    ] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        assert!(
            !text.contains("../shared"),
            "{doc} links outside the repository"
        );
        let base = root.join(doc).parent().unwrap().to_path_buf();
        for (i, _) in text.match_indices("](") {
            let target = &text[i + 2..];
            let target = &target[..target.find(')').unwrap_or(target.len())];
            if target.starts_with("http") || target.starts_with('#') {
                continue;
            }
            let path = target.split('#').next().unwrap_or_default();
            assert!(
                base.join(path).exists(),
                "{doc} links to {target}, which is not in the repository"
            );
        }
    }
}
