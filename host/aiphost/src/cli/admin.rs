//! The admin API client the CLI's tenant, publish and key commands share.

use anyhow::{Context, bail};
use clap::Args;
use reqwest::Method;
use serde_json::Value;

/// Where the host is and whose token to use.
#[derive(Args, Clone)]
pub struct AdminArgs {
    /// The host's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080", env = "AIPHOST_URL")]
    pub url: String,
    /// The operator token or a tenant's admin token.
    #[arg(long, env = "AIPHOST_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

impl std::fmt::Debug for AdminArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminArgs")
            .field("url", &self.url)
            .field("token", &aiphost::redact::Redacted::of(&self.token))
            .finish()
    }
}

impl AdminArgs {
    /// Send an admin request and return its JSON answer (`Null` for 204), or the host's error.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        let text = self.request_with(method, path, body).await?;
        Ok(if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        })
    }

    /// Send a bodiless admin request and return its answer's text, or the host's error (for an
    /// answer read as it is, not as a `Value`, which would sort its objects' keys).
    pub async fn request_text(&self, method: Method, path: &str) -> anyhow::Result<String> {
        self.request_with(method, path, None).await
    }

    async fn request_with(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<String> {
        let endpoint = format!("{}{path}", self.url.trim_end_matches('/'));
        let mut request = reqwest::Client::new().request(method, &endpoint);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_connect() => bail!(
                "nothing answers at {}: is aiphost serving there? (start it with `aiphost serve`, \
                 or give the host's URL with --url or AIPHOST_URL)",
                self.url
            ),
            Err(e) => return Err(e).with_context(|| format!("asking {endpoint}")),
        };
        let status = response.status();
        let text = response.text().await.context("reading the answer")?;
        if status == reqwest::StatusCode::UNAUTHORIZED && self.token.is_none() {
            bail!(
                "{endpoint} needs an admin token: give --token TOKEN or set AIPHOST_TOKEN \
                 (the operator's is in the host's data directory, DATA/operator-token; a tenant's \
                 is printed by `aiphost tenant create`)"
            );
        }
        if status.is_success() {
            return Ok(text);
        }
        let json: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        let message = json["error"]["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| json.to_string());
        let details = &json["error"]["details"];
        if details.is_null() {
            bail!("{endpoint} answered HTTP {status}: {message}");
        }
        bail!("{endpoint} answered HTTP {status}: {message} ({details})");
    }
}
