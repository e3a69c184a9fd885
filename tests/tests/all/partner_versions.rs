//! Partners built against an older contract keep working: the echo partner as built against
//! `aiphost:partner@0.1.0` (`tests/fixtures/partner-0.1.0`, bytes kept, never rebuilt) is
//! served by today's host as it always was.

use aiphost_tests::*;
use serde_json::json;
use sha2::{Digest, Sha256};

/// The fixture's SHA-256 when it was kept (see its README).
const ECHO_0_1_0_SHA256: &str = "03388216c18e12ad48630b6bc65da201cf1db726bbeb1c66784d7c2a36e3b197";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partner_built_against_0_1_0_serves_unchanged() {
    let fixtures = repo_root().join("tests/fixtures/partner-0.1.0");
    let wasm = std::fs::read(fixtures.join("echo/partner.wasm")).expect("the 0.1.0 fixture");
    let digest: String = Sha256::digest(&wasm)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        digest, ECHO_0_1_0_SHA256,
        "the 0.1.0 fixture is kept as it was built, never rebuilt"
    );

    let host = TestHost::start(HostOptions {
        examples: false,
        extra_agents: vec![fixtures],
        ..HostOptions::default()
    })
    .await;
    let rpc = host.rpc("echo");
    let id = format!("old-contract-{}", uuid());

    let answer = post(&rpc, &v2("start", &id, text("hello from 0.1.0"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "hello from 0.1.0"
    );

    let answer = post(&rpc, &v2("continue", &id, text("again"), json!({}))).await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "again"
    );

    let answer = post(&rpc, &v2("complete", &id, json!([]), json!({}))).await;
    assert_eq!(state(&answer), "completed", "{answer}");
}
