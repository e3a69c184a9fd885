//! The HTTP settings every door reads, and the base URL clients reach the host at.

use axum::http::{HeaderMap, header};

/// What the HTTP layer needs to know about its host.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// The URL Leaders reach this host at (for ACS documents and agent cards); without it the
    /// request's Host is used.
    pub public_url: Option<String>,
    /// The listener serves HTTPS: a URL built from a request's Host is an `https://` one.
    pub https: bool,
    /// How often an idle stream gets a keep-alive comment.
    pub sse_keep_alive: std::time::Duration,
}

impl HttpConfig {
    /// The URL this host is reached at: the configured public URL, else the request's Host.
    pub fn base_url(&self, headers: &HeaderMap) -> String {
        if let Some(url) = &self.public_url {
            return url.trim_end_matches('/').to_string();
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("127.0.0.1");
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{host}")
    }
}
