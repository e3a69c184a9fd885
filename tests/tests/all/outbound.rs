//! Outbound capabilities by grant, through the real `aiphost` binary: a published partner
//! (the `fetcher` fixture) reaches a local upstream only when granted and allowed, gets typed
//! errors otherwise, never sees the secret the host adds to its requests, and the secret never
//! reaches the host's log.

use aiphost_tests::tenants::{create_tenant, publish};
use aiphost_tests::*;
use axum::http::HeaderMap;
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const SECRET: &str = "Bearer sk-upstream-SECRET-5f2c9a";

/// A local upstream API: `/hello` (records the Authorization header it got), `/big` (2 MiB),
/// `/slow` (answers after 3 s).
struct Upstream {
    port: u16,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

async fn upstream() -> Upstream {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let record = seen.clone();
    let app = axum::Router::new()
        .route(
            "/hello",
            axum::routing::get(move |headers: HeaderMap| {
                let record = record.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    record.lock().unwrap().push(auth);
                    "hello from upstream"
                }
            }),
        )
        .route(
            "/big",
            axum::routing::get(|| async { "x".repeat(2 * 1024 * 1024) }),
        )
        .route(
            "/slow",
            axum::routing::get(|| async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Upstream { port, seen }
}

fn fetcher_manifest(id: &str, http: &[String], config: &[&str]) -> String {
    let text = aiphost_tests::tenants::example_manifest("fetcher", id, "");
    let base = text.split("[capabilities]").next().unwrap();
    format!("{base}[capabilities]\nhttp = {http:?}\nconfig = {config:?}\n")
}

/// Ask the fetcher to run `command`; its `fetched` data item.
async fn fetch(rpc: &str, command: &str) -> Value {
    let answer = post(rpc, &v2("start", &uuid(), text(command), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let answer_text = answer.to_string();
    assert!(
        !answer_text.contains("sk-upstream"),
        "the secret reached the partner: {answer}"
    );
    result(&answer)["products"][0]["dataItems"][0]["data"].clone()
}

fn fetcher_wasm() -> Vec<u8> {
    std::fs::read(plugins_dist().join("fetcher/partner.wasm")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outbound_http_and_config_are_granted_checked_and_secrets_stay_hidden() {
    let up = upstream().await;
    let other = upstream().await;
    let granted = format!("127.0.0.1:{}", up.port);
    let data = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(
        &data.path().join("host"),
        &[
            "--log",
            "debug,wasmtime=info,cranelift=info",
            "--outbound-hosts",
            &granted,
            "--outbound-allow-private",
            "--outbound-timeout-ms",
            "1000",
            "--outbound-max-response-bytes",
            "1048576",
        ],
    );
    let acme = create_tenant(&host.url, "acme", json!({})).await;

    // Publish validation: a host the operator does not allow, and wasi:http without a grant.
    let (status, body) = publish(
        &host.url,
        &acme,
        &fetcher_manifest("acme-fetch", &["api.example.com".into()], &[]),
        &fetcher_wasm(),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["error"]["details"]["field"],
        "manifest.capabilities.http[0]"
    );
    let (status, body) = publish(
        &host.url,
        &acme,
        &fetcher_manifest("acme-fetch", &[], &[]),
        &fetcher_wasm(),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("wasi:http"), "{body}");

    // The tenant publishes a bundle and sets its secret and config with the CLI.
    let bundle = data.path().join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(
        bundle.join("partner.toml"),
        fetcher_manifest("acme-fetch", std::slice::from_ref(&granted), &["GREETING"]),
    )
    .unwrap();
    std::fs::write(bundle.join("partner.wasm"), fetcher_wasm()).unwrap();
    let cli = |args: &[&str], extra_env: Option<(&str, &str)>| {
        let mut command = std::process::Command::new(aiphost_bin());
        command
            .args(args)
            .args(["--url", &host.url])
            .env("AIPHOST_TOKEN", &acme);
        if let Some((name, value)) = extra_env {
            command.env(name, value);
        }
        let out = command.output().expect("aiphost");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "aiphost {args:?}: {printed}");
        assert!(
            !printed.contains("sk-upstream"),
            "the CLI printed the secret"
        );
        printed
    };
    let printed = cli(&["agent", "publish", bundle.to_str().unwrap()], None);
    assert!(printed.contains("published version 1"), "{printed}");
    cli(
        &[
            "agent",
            "set-secret",
            "acme-fetch",
            "upstream-key",
            "--host",
            &granted,
            "--header",
            "authorization",
        ],
        Some(("AIPHOST_SECRET_VALUE", SECRET)),
    );
    cli(
        &["agent", "set-config", "acme-fetch", "GREETING", "hello"],
        None,
    );
    let rpc = host.rpc("acme-fetch");

    // Granted: the request goes through, with the secret added by the host.
    let got = fetch(&rpc, &format!("get http://{granted}/hello")).await;
    assert_eq!(got, json!({"status": 200, "body": "hello from upstream"}));
    assert_eq!(
        up.seen.lock().unwrap().clone(),
        vec![Some(SECRET.to_string())]
    );
    // From an invocation busy long enough to have moved to the guest threads, the same.
    let got = fetch(&rpc, &format!("after 40 get http://{granted}/hello")).await;
    assert_eq!(got, json!({"status": 200, "body": "hello from upstream"}));
    assert_eq!(up.seen.lock().unwrap().len(), 2);
    // Not granted: a typed error, and the other server sees nothing.
    let got = fetch(&rpc, &format!("get http://127.0.0.1:{}/hello", other.port)).await;
    assert_eq!(got, json!({"error": "HttpRequestDenied"}));
    assert!(other.seen.lock().unwrap().is_empty());
    let got = fetch(&rpc, &format!("get http://localhost:{}/hello", up.port)).await;
    assert_eq!(got, json!({"error": "HttpRequestDenied"}));
    // Size cap and timeout.
    let got = fetch(&rpc, &format!("get http://{granted}/big")).await;
    assert!(
        got["error"]
            .as_str()
            .unwrap_or("")
            .contains("HttpResponseBodySize"),
        "{got}"
    );
    let got = fetch(&rpc, &format!("get http://{granted}/slow")).await;
    assert!(
        got["error"].as_str().unwrap_or("").contains("Timeout"),
        "{got}"
    );
    // Config: granted and set, not granted, granted but unset.
    assert_eq!(
        fetch(&rpc, "config GREETING").await,
        json!({"value": "hello"})
    );
    assert_eq!(
        fetch(&rpc, "config DATABASE_URL").await,
        json!({"error": "NotGranted"})
    );
    cli(&["agent", "unset", "acme-fetch", "GREETING"], None);
    assert_eq!(
        fetch(&rpc, "config GREETING").await,
        json!({"error": "NotSet"})
    );

    // The admin API shows where a secret goes, never its value; other tenants see nothing.
    let (status, values) = admin(
        &host.url,
        Method::GET,
        "/admin/agents/acme-fetch/values",
        &acme,
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(values["secrets"]["upstream-key"]["header"], "authorization");
    assert!(!values.to_string().contains("sk-upstream"), "{values}");
    let shown = cli(&["agent", "values", "acme-fetch"], None);
    assert!(shown.contains("upstream-key"), "{shown}");
    let globex = create_tenant(&host.url, "globex", json!({})).await;
    let (status, _) = admin(
        &host.url,
        Method::GET,
        "/admin/agents/acme-fetch/values",
        &globex,
        None,
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = admin(
        &host.url,
        Method::PUT,
        "/admin/agents/acme-fetch/secrets/steal",
        &globex,
        Some(json!({"host": "127.0.0.1:1", "header": "x", "value": "y"})),
    )
    .await;
    assert_eq!(status, 404);

    // The host logged the outbound requests, never the secret.
    host.kill();
    let log = std::fs::read_to_string(data.path().join("host.log")).unwrap();
    assert!(log.contains("outbound request"), "debug logging was on");
    assert!(!log.contains("sk-upstream"), "the secret is in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_are_refused_unless_the_operator_allows_them() {
    let up = upstream().await;
    let granted = format!("127.0.0.1:{}", up.port);
    let data = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(&data.path().join("host"), &["--outbound-hosts", &granted]);
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let (status, body) = publish(
        &host.url,
        &acme,
        &fetcher_manifest("acme-fetch", std::slice::from_ref(&granted), &[]),
        &fetcher_wasm(),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let got = fetch(
        &host.rpc("acme-fetch"),
        &format!("get http://{granted}/hello"),
    )
    .await;
    assert_eq!(got, json!({"error": "DestinationIpProhibited"}));
    assert!(up.seen.lock().unwrap().is_empty());
}
