//! A skill's `input-schema` and `annotations` (issue 33's manifest fields) at publish, through
//! the real admin API: a manifest breaking one of their rules is refused with the field at fault
//! and leaves no partner behind; a good one is published, serves, and loads again from the store
//! after a restart.

use aiphost_tests::tenants::{create_tenant, example_component, example_manifest, publish};
use aiphost_tests::*;
use reqwest::Method;
use serde_json::json;

/// The echo bundle as partner `acme-echo`, with `skill` TOML added to its one skill.
fn echo_with(skill: &str) -> String {
    let manifest = example_manifest("echo", "acme-echo", "");
    assert!(manifest.contains("\n[limits]"), "{manifest}");
    manifest.replacen("\n[limits]", &format!("\n{skill}\n[limits]"), 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_checks_a_skills_input_schema_and_annotations() {
    let mut host = TestHost::start(HostOptions::default()).await;
    let acme = create_tenant(&host.url, "acme", json!({})).await;
    let wasm = example_component("echo");

    // (what, manifest, the field refused, text its reason holds)
    let refusals = [
        (
            "a TOML date-time",
            echo_with(
                "[skills.input-schema]\ntype = \"object\"\nproperties.when = { type = \"string\", default = 2026-11-28T09:00:00Z }\n",
            ),
            "manifest.skills[0].input-schema.properties.when.default",
            "TOML date-time",
        ),
        (
            "a schema that is not of an object",
            echo_with("[skills.input-schema]\ntype = \"array\"\n"),
            "manifest.skills[0].input-schema.type",
            "must be \"object\"",
        ),
        (
            "a schema that does not compile",
            echo_with(
                "[skills.input-schema]\ntype = \"object\"\nproperties.days = { type = \"integer\", minimum = \"one\" }\n",
            ),
            "manifest.skills[0].input-schema.properties.days.minimum",
            "not a valid JSON Schema",
        ),
        (
            "a schema fetching a remote $ref",
            echo_with(
                "[skills.input-schema]\ntype = \"object\"\n\"$ref\" = \"https://example.com/schema.json\"\n",
            ),
            "manifest.skills[0].input-schema",
            "not a valid JSON Schema",
        ),
        (
            "an empty annotation title",
            echo_with("[skills.annotations]\ntitle = \"\"\n"),
            "manifest.skills[0].annotations.title",
            "must not be empty",
        ),
        (
            "two skills of one id",
            echo_with(
                "[[skills]]\nid = \"echo\"\nname = \"Echo again\"\ndescription = \"Echoes twice\"\n",
            ),
            "manifest.skills[1].id",
            "unique",
        ),
        (
            "an unknown annotation (MCP's spelling)",
            echo_with("[skills.annotations]\nreadOnlyHint = true\n"),
            "manifest",
            "readOnlyHint",
        ),
    ];
    for (what, manifest, field, reason) in refusals {
        let (status, body) = publish(&host.url, &acme, &manifest, &wasm).await;
        assert_eq!(status, 422, "{what}: {body}");
        assert_eq!(body["error"]["details"]["field"], field, "{what}: {body}");
        let said = body["error"]["details"]["reason"]
            .as_str()
            .unwrap_or_default();
        assert!(said.contains(reason), "{what}: {body}");
        let (status, body) = admin(
            &host.url,
            Method::GET,
            "/admin/agents/acme-echo/versions",
            &acme,
            None,
        )
        .await;
        assert_eq!(status, 404, "{what} left a partner behind: {body}");
    }

    let good = echo_with(
        r#"[skills.input-schema]
type = "object"
required = ["text"]
additionalProperties = false
properties.text = { type = "string", maxLength = 1000 }
properties.when = { type = "string", format = "date-time", default = "2026-11-28T09:00:00Z" }

[skills.annotations]
title = "Echo"
read-only = true
destructive = false
idempotent = true
open-world = false
"#,
    );
    let (status, body) = publish(&host.url, &acme, &good, &wasm).await;
    assert_eq!(status, 201, "{body}");
    let answer = post(
        &host.rpc("acme-echo"),
        &v2("start", &uuid(), text("hello"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "hello"
    );

    // Loaded again from the store, its schema checked again at load.
    host.restart(HostOptions::default()).await;
    let answer = post(
        &host.rpc("acme-echo"),
        &v2("start", &uuid(), text("hello again"), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    assert_eq!(
        result(&answer)["products"][0]["dataItems"][0]["text"],
        "hello again"
    );
}
