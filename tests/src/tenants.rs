//! Tenancy helpers: tenants, example bundles under other ids, and publishing them.

use crate::{OPERATOR_TOKEN, admin, plugins_dist};
use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};

/// The manifest of example bundle `bundle`, served as `id` with an AIC of its own (a host
/// refuses two partners with one AIC), with `extra` TOML appended.
pub fn example_manifest(bundle: &str, id: &str, extra: &str) -> String {
    let text = std::fs::read_to_string(plugins_dist().join(bundle).join("partner.toml"))
        .expect("bundle manifest");
    let original = format!("id = \"{bundle}\"\n");
    assert!(text.contains(&original), "{text}");
    let aic_line = text
        .lines()
        .find(|l| l.starts_with("aic = "))
        .expect("the bundle's AIC")
        .to_string();
    format!(
        "{}\n{extra}",
        text.replacen(&original, &format!("id = \"{id}\"\n"), 1)
            .replacen(&aic_line, &format!("aic = \"{}\"", aic_of(id)), 1)
    )
}

/// The AIC [`example_manifest`] gives partner `id`: in the form acps-sdk accepts (level 8 is
/// 1-9 Base36 characters).
pub fn aic_of(id: &str) -> String {
    let level: String = id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .take(9)
        .collect();
    format!("1.2.156.3088.1.1.TENANT.{level}.1.0000")
}

/// The component of example bundle `bundle`.
pub fn example_component(bundle: &str) -> Vec<u8> {
    std::fs::read(plugins_dist().join(bundle).join("partner.wasm")).expect("bundle component")
}

/// Publish `manifest` and `wasm` with a tenant's `token`: `(HTTP status, answer)`.
pub async fn publish(host_url: &str, token: &str, manifest: &str, wasm: &[u8]) -> (u16, Value) {
    let body = json!({
        "manifest": manifest,
        "component": base64::engine::general_purpose::STANDARD.encode(wasm),
    });
    admin(host_url, Method::POST, "/admin/agents", token, Some(body)).await
}

/// Create tenant `id` with `quotas` (`{}`: the defaults); its admin token.
pub async fn create_tenant(host_url: &str, id: &str, quotas: Value) -> String {
    let (status, body) = admin(
        host_url,
        Method::POST,
        "/admin/tenants",
        OPERATOR_TOKEN,
        Some(json!({"id": id, "quotas": quotas})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["adminToken"]
        .as_str()
        .expect("admin token")
        .to_string()
}

/// Publish example bundle `bundle` as partner `id` with a tenant's `token`, its Leaders taking
/// API keys; a key for each of `leaders`, in order.
pub async fn publish_keyed(
    host_url: &str,
    token: &str,
    bundle: &str,
    id: &str,
    leaders: &[&str],
) -> Vec<String> {
    let manifest = example_manifest(bundle, id, "[access]\nleaders = \"api-key\"\n");
    let (status, body) = publish(host_url, token, &manifest, &example_component(bundle)).await;
    assert_eq!(status, 201, "{body}");
    let mut keys = Vec::new();
    for leader in leaders {
        let (status, body) = admin(
            host_url,
            Method::POST,
            &format!("/admin/agents/{id}/keys"),
            token,
            Some(json!({"leader": leader})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        keys.push(body["key"].as_str().expect("a key").to_string());
    }
    keys
}
