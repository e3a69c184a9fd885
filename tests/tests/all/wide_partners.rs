//! Partners whose instances take more of the pool than a Rust one: a componentize-py partner
//! links 14 core instances, and a large component compiles for seconds. The host takes them as
//! they are (issue 16 item 3).

use aiphost_tests::tenants::{create_tenant, example_component, example_manifest, publish};
use aiphost_tests::*;
use serde_json::json;
use std::time::Duration;

/// Sixteen Python invocations at once through a pool of two slots: each waits for its share of
/// the pool, none fails. (At 8 core instances per slot, two 14-instance Python instances did not
/// fit in 16, and starts failed with "maximum concurrent limit of 16 for core instances".)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_python_invocations_at_once_share_a_small_pool() {
    let host = TestHost::start(HostOptions {
        max_concurrent: 2,
        ..HostOptions::default()
    })
    .await;
    let rpc = host.rpc("echo-py");
    let starts: Vec<_> = (0..16)
        .map(|i| {
            let rpc = rpc.clone();
            tokio::spawn(async move {
                post(
                    &rpc,
                    &v2(
                        "start",
                        &format!("wide-{i}"),
                        text(&format!("hello {i}")),
                        json!({}),
                    ),
                )
                .await
            })
        })
        .collect();
    for (i, start) in starts.into_iter().enumerate() {
        let answer = start.await.expect("the request ran");
        assert_eq!(state(&answer), "awaiting-completion", "start {i}: {answer}");
        assert_eq!(
            result(&answer)["products"][0]["dataItems"][0]["text"],
            format!("hello {i}"),
            "start {i}: {answer}"
        );
    }
}

/// A small publish is not held behind another one's compile: compiling runs outside the lock
/// that orders publishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_publish_does_not_wait_for_a_large_one_to_compile() {
    let host = TestHost::start(HostOptions {
        // The Python component is ~18 MB, sent base64-encoded.
        max_body_bytes: 64 << 20,
        ..HostOptions::default()
    })
    .await;
    // Two compiles at once are this tenant's to have (its publishing budget is another test's).
    let tenant = create_tenant(&host.url, "compilers", json!({"maxConcurrentPublishes": 2})).await;
    let large = {
        let (url, tenant) = (host.url.clone(), tenant.clone());
        tokio::spawn(async move {
            publish(
                &url,
                &tenant,
                &example_manifest("echo-py", "large-py", ""),
                &example_component("echo-py"),
            )
            .await
        })
    };
    // Let the large publish reach its compile (it compiles for seconds: `Runtime::check` does
    // not use the compiled cache).
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !large.is_finished(),
        "the large publish ended too soon to test anything"
    );
    let (status, body) = publish(
        &host.url,
        &tenant,
        &example_manifest("echo", "small", ""),
        &example_component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(
        !large.is_finished(),
        "the small publish waited for the large one's compile"
    );
    let (status, body) = large.await.expect("the large publish ran");
    assert_eq!(status, 201, "{body}");
    // Both serve.
    for agent in ["small", "large-py"] {
        let answer = post(&host.rpc(agent), &v2("start", "t", text("hi"), json!({}))).await;
        assert_eq!(state(&answer), "awaiting-completion", "{agent}: {answer}");
    }
}
