//! Per-tenant quotas through the real admin and AIP APIs: each breach is refused precisely, and a
//! tenant flooding the host with hostile partners does not starve another tenant.

use aiphost_tests::tenants::{
    create_tenant, example_component as component, example_manifest, publish,
};
use aiphost_tests::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn quota_of(answer: &Value) -> Option<&str> {
    let error = answer.get("error")?;
    (error["code"] == -32009)
        .then(|| error["data"]["quota"].as_str())
        .flatten()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_breaches_are_refused_precisely_and_stay_with_their_tenant() {
    let host = TestHost::start(HostOptions {
        storage_meter: Duration::from_millis(100),
        ..HostOptions::default()
    })
    .await;
    let calm = create_tenant(&host.url, "calm", json!({})).await;
    let (status, body) = publish(
        &host.url,
        &calm,
        &example_manifest("echo", "calm-echo", ""),
        &component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    // Number of partners.
    let small = create_tenant(&host.url, "small", json!({"maxAgents": 1})).await;
    let (status, _) = publish(
        &host.url,
        &small,
        &example_manifest("echo", "small-a", ""),
        &component("echo"),
    )
    .await;
    assert_eq!(status, 201);
    let (status, body) = publish(
        &host.url,
        &small,
        &example_manifest("echo", "small-b", ""),
        &component("echo"),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["error"]["details"],
        json!({"quota": "maxAgents", "limit": 1, "needed": 2})
    );
    // A new version of the partner it has is not another partner.
    let (status, body) = publish(
        &host.url,
        &small,
        &example_manifest("echo", "small-a", ""),
        &component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    // CPU time per invocation.
    let strict = create_tenant(&host.url, "strict", json!({"maxInvocationMs": 1000})).await;
    let (status, body) = publish(
        &host.url,
        &strict,
        &example_manifest("echo", "strict-echo", ""),
        &component("echo"),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["details"]["quota"], "maxInvocationMs");

    // Stored bytes: the echo component itself is most of this tenant's allowance; its tasks fill
    // the rest, then new tasks are refused while the calm tenant carries on.
    let allowance = component("echo").len() as u64 + 6_000;
    let tiny = create_tenant(&host.url, "tiny", json!({"maxStoredBytes": allowance})).await;
    let (status, body) = publish(
        &host.url,
        &tiny,
        &example_manifest("echo", "tiny-echo", ""),
        &component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut refused = None;
    let mut i = 0;
    while refused.is_none() {
        assert!(
            Instant::now() < deadline,
            "the stored-bytes quota never took effect"
        );
        let answer = post(
            &host.rpc("tiny-echo"),
            &v2(
                "start",
                &format!("fill-{i}"),
                text(&"x".repeat(500)),
                json!({}),
            ),
        )
        .await;
        if let Some(quota) = quota_of(&answer) {
            refused = Some((quota.to_string(), answer["error"]["data"].clone()));
        } else {
            assert_eq!(state(&answer), "awaiting-completion", "{answer}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        i += 1;
    }
    let (quota, data) = refused.expect("refused");
    assert_eq!(quota, "maxStoredBytes", "{data}");
    assert_eq!(data["tenant"], "tiny");
    assert!(data["storedBytes"].as_u64().unwrap() > allowance, "{data}");
    // Existing tasks can still be finished (which frees nothing, but is not a new task).
    let answer = post(
        &host.rpc("tiny-echo"),
        &v2("complete", "fill-0", json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "completed", "{answer}");
    let answer = post(
        &host.rpc("calm-echo"),
        &v2("start", "fine", text("hi"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let (_, tenants) = admin(
        &host.url,
        Method::GET,
        "/admin/tenants",
        OPERATOR_TOKEN,
        None,
    )
    .await;
    let tiny_row = tenants["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "tiny")
        .cloned()
        .unwrap();
    assert!(
        tiny_row["storedBytes"].as_u64().unwrap() > allowance,
        "{tiny_row}"
    );
}

/// One tenant floods the host with hostile partners (spinning guests, memory hogs) and far more
/// requests than its rate allows; another tenant's requests all succeed meanwhile, each within a
/// bound far below what queueing behind the flood would cost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_hostile_tenant_does_not_starve_another() {
    let host = TestHost::start(HostOptions::default()).await;
    let flood = create_tenant(
        &host.url,
        "flood",
        json!({"maxConcurrentInvocations": 1, "requestsPerSecond": 20, "requestBurst": 20}),
    )
    .await;
    let (status, body) = publish(
        &host.url,
        &flood,
        &example_manifest("hostile", "flood-hostile", ""),
        &component("hostile"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let calm = create_tenant(&host.url, "calm", json!({})).await;
    let (status, body) = publish(
        &host.url,
        &calm,
        &example_manifest("echo", "calm-echo", ""),
        &component("echo"),
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let flooding_for = Duration::from_secs(6);
    let flooders: Vec<_> = (0..8)
        .map(|f| {
            let rpc = host.rpc("flood-hostile");
            tokio::spawn(async move {
                let started = Instant::now();
                let (mut sent, mut rate_limited) = (0u32, 0u32);
                while started.elapsed() < flooding_for {
                    let command = ["loop", "alloc", "recurse", "slow:500"][(sent as usize + f) % 4];
                    let answer = post(
                        &rpc,
                        &v2(
                            "start",
                            &format!("flood-{f}-{sent}"),
                            text(command),
                            json!({"responseTimeout": 200}),
                        ),
                    )
                    .await;
                    sent += 1;
                    if quota_of(&answer) == Some("requestsPerSecond") {
                        assert!(answer["error"]["data"]["retryAfterMs"].as_u64().is_some());
                        rate_limited += 1;
                    }
                }
                (sent, rate_limited)
            })
        })
        .collect();

    // And a burst of cheap requests, far above the 20 a second the tenant may make.
    let burst = {
        let rpc = host.rpc("flood-hostile");
        tokio::spawn(async move {
            let started = Instant::now();
            let (mut sent, mut rate_limited) = (0u32, 0u32);
            while started.elapsed() < flooding_for {
                let answer = post(&rpc, &v2("get", "nothing", json!([]), json!({}))).await;
                sent += 1;
                if quota_of(&answer) == Some("requestsPerSecond") {
                    assert!(answer["error"]["data"]["retryAfterMs"].as_u64().is_some());
                    rate_limited += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (sent, rate_limited)
        })
    };
    let calm_rpc = host.rpc("calm-echo");
    let mut slowest = Duration::ZERO;
    let mut calls = 0;
    let started = Instant::now();
    while started.elapsed() < flooding_for {
        let sent = Instant::now();
        let answer = post(
            &calm_rpc,
            &v2("start", &format!("calm-{calls}"), text("hi"), json!({})),
        )
        .await;
        assert_eq!(state(&answer), "awaiting-completion", "{answer}");
        slowest = slowest.max(sent.elapsed());
        calls += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (mut sent, mut rate_limited) = (0, 0);
    for flooder in flooders.into_iter().chain([burst]) {
        let (s, r) = flooder.await.expect("flooder");
        sent += s;
        rate_limited += r;
    }
    println!(
        "calm: {calls} calls, slowest {slowest:?}; flood: {sent} sent, {rate_limited} rate-limited"
    );
    assert!(
        calls >= 20,
        "the calm tenant got only {calls} calls through"
    );
    assert!(
        rate_limited > 0,
        "the flood was never rate-limited ({sent} sent)"
    );
    // A hostile invocation may run 3 s (its manifest's limit); a calm request stuck behind one
    // would take that long.
    assert!(
        slowest < Duration::from_millis(1500),
        "a calm request took {slowest:?}"
    );
}
