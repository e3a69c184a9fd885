//! JavaScript and TypeScript partners (sdk/js) through the real host: the echo-js example and the
//! lab-ts test partner, built from source by scripts/build-plugins.sh with the SDK's build tool
//! (QuickJS), served over real HTTP; and `aiphost agent new --lang js|ts` then `agent build`.
//!
//! The hosts here serve only the JavaScript bundles (copied out of plugins/dist), so they do not
//! compile every example partner; compiled components go to the shared test cache.

use aiphost::server::{Server, ServerConfig};
use aiphost_tests::*;
use serde_json::{Value, json};
use std::process::{Command, Output};

const JS_AGENTS: [&str; 2] = ["echo-js", "lab-ts"];

/// A host in this process serving the JavaScript example partners only.
async fn js_host() -> (Server, tempfile::TempDir) {
    let dist = plugins_dist();
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agents");
    for agent in JS_AGENTS {
        let bundle = agents.join(agent);
        std::fs::create_dir_all(&bundle).unwrap();
        for file in ["partner.toml", "partner.wasm"] {
            std::fs::copy(dist.join(agent).join(file), bundle.join(file)).unwrap();
        }
    }
    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dir.path().join("data"),
        vec![agents],
    );
    config.runtime.cache_dir = shared_cache();
    config.operator_token = Some(OPERATOR_TOKEN.to_string());
    let server = Server::start(config).await.expect("starting the host");
    server.ready().await;
    (server, dir)
}

fn rpc(server: &Server, agent: &str) -> String {
    format!("{}/agents/{agent}/rpc", server.url())
}

fn id(prefix: &str) -> String {
    format!("{prefix}-{}", uuid())
}

fn first_item(answer: &Value) -> &Value {
    &result(answer)["products"][0]["dataItems"][0]
}

fn status_text(answer: &Value) -> String {
    result(answer)["status"]["dataItems"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// echo-js behaves as the Rust echo: start, continue (the product is replaced), complete, and a
/// cancel of a waiting task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_js_round_trip() {
    let (server, _dir) = js_host().await;
    let rpc = rpc(&server, "echo-js");
    let task = id("echo-js");
    let answer = post(&rpc, &v2("start", &task, text("hello"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let product = &result(&answer)["products"][0];
    assert_eq!(product["id"], "echo");
    assert_eq!(product["name"], "echo");
    assert_eq!(
        product["dataItems"],
        json!([{"type": "text", "text": "hello"}])
    );

    let data = json!([{"type": "data", "data": {"k": [1, 2]}}, {"type": "text", "text": "two"}]);
    let answer = post(&rpc, &v1("continue", &task, data.clone(), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion");
    assert_eq!(result(&answer)["products"][0]["dataItems"], data);
    assert_eq!(result(&answer)["products"].as_array().unwrap().len(), 1);

    let answer = post(&rpc, &v2("complete", &task, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed");

    let other = id("echo-js");
    post(&rpc, &v2("start", &other, text("x"), json!({}))).await;
    let answer = post(&rpc, &v2("cancel", &other, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
    server.shutdown().await;
}

/// The lab partner: awaiting-input with a question, kv across turns (task and agent scope), the
/// task's ids and params, reject, fail, abort, an exception (failed with a short reason), a
/// non-Outcome, streamed chunks, a reply, config, and the cancel hook's clean-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lab_ts_lifecycle() {
    let (server, _dir) = js_host().await;
    let rpc = rpc(&server, "lab-ts");

    // No text: asked for some, with a data item saying what is missing.
    let task = id("lab");
    let answer = post(&rpc, &v2("start", &task, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    assert_eq!(
        result(&answer)["status"]["dataItems"],
        json!([{"type": "text", "text": "Send me some text."}, {"type": "data", "data": {"missing": ["text"]}}])
    );
    // Continue with text: upper-cased, awaiting completion; then complete.
    let answer = post(&rpc, &v2("continue", &task, text("shout this"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion");
    assert_eq!(first_item(&answer)["text"], "SHOUT THIS");
    let answer = post(&rpc, &v2("complete", &task, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed");

    // kv across turns: the task's count restarts per task, the agent's goes on.
    let counted = id("lab-count");
    let answer = post(&rpc, &v2("start", &counted, text("count"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-input", "{answer}");
    let first = result(&answer)["status"]["dataItems"][1]["data"].clone();
    assert_eq!(first["turns"], 1);
    let answer = post(&rpc, &v2("continue", &counted, text("count"), json!({}))).await;
    assert_eq!(status_text(&answer), "turn 2");
    let second = &result(&answer)["status"]["dataItems"][1]["data"];
    assert_eq!(second["total"], first["total"].as_u64().unwrap() + 1);
    let answer = post(
        &rpc,
        &v2("continue", &counted, text("info"), json!({"size": 5})),
    )
    .await;
    let info = &first_item(&answer)["data"];
    assert_eq!(info["id"], counted.as_str());
    assert_eq!(info["sessionId"], "session-test");
    assert_eq!(info["leaderId"], "1.2.156.3088.1.1.TEST.LEADER.1.0000");
    assert_eq!(info["params"], json!({"size": 5}));
    assert_eq!(info["isContinue"], true);
    assert_eq!(info["initialState"], "working");
    assert_eq!(info["state"], "working");
    assert_eq!(info["turns"], 2);
    // The cancel hook deletes the task's count and notes the cancel in the agent's entries.
    let answer = post(&rpc, &v2("cancel", &counted, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "canceled");
    let again = id("lab-count");
    let answer = post(&rpc, &v2("start", &again, text("count"), json!({}))).await;
    assert_eq!(status_text(&answer), "turn 1");
    assert_eq!(
        result(&answer)["status"]["dataItems"][1]["data"]["total"],
        first["total"].as_u64().unwrap() + 2
    );

    let answer = post(&rpc, &v2("start", &id("lab"), text("reject"), json!({}))).await;
    assert_eq!(state(&answer), "rejected");
    assert_eq!(status_text(&answer), "told to reject");

    let answer = post(&rpc, &v2("start", &id("lab"), text("fail"), json!({}))).await;
    assert_eq!(state(&answer), "failed");
    assert_eq!(status_text(&answer), "told to fail");

    let answer = post(&rpc, &v2("start", &id("lab"), text("abort"), json!({}))).await;
    assert_eq!(state(&answer), "failed");
    assert!(status_text(&answer).ends_with("told to abort"), "{answer}");

    // An exception escaping work: failed, with the exception as a short reason (the stack goes to
    // the host's log).
    let answer = post(&rpc, &v2("start", &id("lab"), text("throw"), json!({}))).await;
    assert_eq!(state(&answer), "failed");
    let reason = status_text(&answer);
    assert!(
        reason.ends_with("work threw Error: boom on purpose"),
        "{reason}"
    );
    assert!(
        !reason.contains("\n    at "),
        "no stack in the reason: {reason}"
    );

    let answer = post(&rpc, &v2("start", &id("lab"), text("bad"), json!({}))).await;
    assert_eq!(state(&answer), "failed");
    assert!(
        status_text(&answer).contains("work returned string \"not an outcome\""),
        "{answer}"
    );

    let answer = post(&rpc, &v2("start", &id("lab"), text("stream 3"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"],
        json!([{"type": "text", "text": "part 0"}, {"type": "text", "text": "part 1"}, {"type": "text", "text": "part 2"}])
    );

    let answer = post(&rpc, &v2("start", &id("lab"), text("reply"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion");
    assert_eq!(status_text(&answer), "here it is");
    assert_eq!(first_item(&answer)["text"], "42");

    // Config: GREETING is granted by the manifest but not set; OTHER is not granted.
    let answer = post(
        &rpc,
        &v2("start", &id("lab"), text("config GREETING"), json!({})),
    )
    .await;
    assert_eq!(first_item(&answer)["data"], json!({"error": "not-set"}));
    let answer = post(
        &rpc,
        &v2("start", &id("lab"), text("config OTHER"), json!({})),
    )
    .await;
    assert_eq!(first_item(&answer)["data"], json!({"error": "not-granted"}));
    server.shutdown().await;
}

fn aiphost(args: &[&str]) -> Output {
    Command::new(aiphost_bin())
        .args(args)
        .output()
        .expect("running aiphost")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `aiphost agent new x --lang js` and `--lang ts`, the template's own test (npm test against the
/// mock host), `agent build`, and the bundles served and answering like the Rust template.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaffold_js_and_ts_build_serve_call() {
    plugins_dist(); // the SDK's tools are installed by scripts/js-env.sh, which this runs
    let dir = tempfile::tempdir().unwrap();
    let dist = dir.path().join("dist");
    for (name, lang) in [("shout-js", "js"), ("shout-ts", "ts")] {
        let src = dir.path().join(name);
        let out = aiphost(&[
            "agent",
            "new",
            name,
            "--lang",
            lang,
            "--path",
            src.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        // The SDK by version; this checkout's SDK linked in node_modules, not named by path.
        let package: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(src.join("package.json")).unwrap())
                .unwrap();
        assert_eq!(
            package["devDependencies"]["@aiphost/sdk"], "^0.1.0",
            "{package}"
        );
        let link = std::fs::read_link(src.join("node_modules/@aiphost/sdk")).unwrap();
        assert_eq!(link, repo_root().join("sdk/js").canonicalize().unwrap());
        assert!(src.join(format!("src/partner.{lang}")).is_file());

        // The template's test runs natively against the SDK's mock host.
        let npm = |args: &[&str]| {
            let out = Command::new("npm")
                .args(args)
                .current_dir(&src)
                .output()
                .expect("running npm");
            assert!(
                out.status.success(),
                "npm {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                stderr(&out)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        npm(&[
            "install",
            "--offline",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
        ]);
        let tested = npm(&["test"]);
        assert!(tested.contains("# pass 1"), "{tested}");

        let out = aiphost(&[
            "agent",
            "build",
            src.to_str().unwrap(),
            "--out",
            dist.to_str().unwrap(),
        ]);
        let progress = stderr(&out);
        assert!(out.status.success(), "{progress}");
        assert!(progress.contains("quickjs"), "{progress}");
        assert!(dist.join(name).join("partner.wasm").is_file());
    }

    // A --sdk-path that is not the SDK is refused before anything is written.
    let elsewhere = dir.path().join("elsewhere");
    let out = aiphost(&[
        "agent",
        "new",
        "elsewhere",
        "--lang",
        "js",
        "--path",
        elsewhere.to_str().unwrap(),
        "--sdk-path",
        dist.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not the JavaScript SDK"),
        "{}",
        stderr(&out)
    );
    assert!(!elsewhere.exists());

    let serve = ProcessHost::serve(&dir.path().join("data"), &dist, &[]);
    for name in ["shout-js", "shout-ts"] {
        let rpc = serve.rpc(name);
        let task = id(name);
        let answer = post(&rpc, &v2("start", &task, text("hello"), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
        assert_eq!(first_item(&answer)["text"], "HELLO");
        let answer = post(&rpc, &v2("start", &id(name), json!([]), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-input");
        assert_eq!(status_text(&answer), "Send me some text to work on.");
    }
}

/// The StarlingMonkey backend: sdk/js/examples/fetcher-js (`fetch` in an async `work`, built with
/// ComponentizeJS because its manifest asks for `[capabilities] http`) reaches a local upstream
/// through the host's wasi:http when granted, and gets an error for a host it was not granted.
/// Not in plugins/: its 12 MB component is the slowest to compile (14 s in a debug host, 2 s for a
/// QuickJS one), which every host serving plugins/dist would pay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starlingmonkey_fetcher_fetches_through_the_host() {
    plugins_dist(); // installs the SDK's tools
    let root = repo_root();
    let dir = tempfile::tempdir().unwrap();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let wasm = target.join("js-examples/fetcher-js.wasm");
    let built = Command::new("node")
        .arg(root.join("sdk/js/bin/aiphost-build.mjs"))
        .arg(root.join("sdk/js/examples/fetcher-js"))
        .arg("-o")
        .arg(&wasm)
        .arg("--if-changed")
        .output()
        .expect("running node");
    assert!(built.status.success(), "{}", stderr(&built));

    let app = axum::Router::new().route(
        "/hello",
        axum::routing::get(|| async { "hello from upstream" }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let bundle = dir.path().join("agents/fetcher-js");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::copy(&wasm, bundle.join("partner.wasm")).unwrap();
    let manifest =
        std::fs::read_to_string(root.join("sdk/js/examples/fetcher-js/partner.toml")).unwrap();
    let granted = manifest.replace(
        r#"http = ["api.example.com"]"#,
        &format!(r#"http = ["{upstream}"]"#),
    );
    assert_ne!(
        granted, manifest,
        "the example's manifest grants api.example.com"
    );
    std::fs::write(bundle.join("partner.toml"), granted).unwrap();

    let mut config = ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dir.path().join("data"),
        vec![dir.path().join("agents")],
    );
    config.runtime.cache_dir = shared_cache();
    config.operator_token = Some(OPERATOR_TOKEN.to_string());
    let mut policy = (*config.runtime.outbound).clone();
    policy.allowed_hosts = vec![upstream.to_string()];
    policy.allow_private = true;
    config.runtime.outbound = std::sync::Arc::new(policy);
    let server = Server::start(config).await.expect("starting the host");
    server.ready().await;
    let rpc = rpc(&server, "fetcher-js");

    let get = format!("get http://{upstream}/hello");
    let answer = post(&rpc, &v2("start", &id("fetch"), text(&get), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(
        first_item(&answer)["data"],
        json!({"status": 200, "body": "hello from upstream"})
    );
    // A host the manifest does not name: the host refuses, fetch rejects, the partner says so.
    let answer = post(
        &rpc,
        &v2(
            "start",
            &id("fetch"),
            text("get http://api.example.com/x"),
            json!({}),
        ),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert!(first_item(&answer)["data"]["error"].is_string(), "{answer}");
    let answer = post(
        &rpc,
        &v2("start", &id("fetch"), text("config GREETING"), json!({})),
    )
    .await;
    assert_eq!(first_item(&answer)["data"], json!({"error": "not-set"}));
    server.shutdown().await;
}
