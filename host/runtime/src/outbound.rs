//! What a partner may reach outside its sandbox, by grant: outbound HTTP to listed hosts
//! (through `wasi:http`, every request checked here) and named config values. Secrets are added
//! to outgoing requests by the host and never pass through the partner.
//!
//! A partner's manifest asks (`[capabilities] http = [...]`, `config = [...]`); the operator's
//! [`OutboundPolicy`] decides which hosts may be granted at all; the tenant sets the config values
//! and secrets. A request to a host that was not granted, or that resolves to a private or
//! metadata address the operator did not allow, gets the typed `wasi:http` error
//! `HTTP-request-denied` / `destination-IP-prohibited`, never a trap.

use aiphost_net_policy::{self as net_policy, AddressError};
use bytes::Bytes;
use http_body_util::BodyExt;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// The operator's rules for outbound HTTP.
#[derive(Clone, Debug)]
pub struct OutboundPolicy {
    /// Hosts a manifest may be granted: `api.example.com`, `api.example.com:8443`,
    /// `*.example.com`, or `*` for any. Empty: no outbound HTTP for anyone.
    pub allowed_hosts: Vec<String>,
    /// Let requests reach loopback, private, link-local and metadata addresses.
    pub allow_private: bool,
    /// The longest a request may wait to connect, and for each part of the response.
    pub timeout: Duration,
    /// The largest response body a partner may read.
    pub max_response_bytes: u64,
    /// Writes the trace context of the current span (W3C `traceparent`) into a request's
    /// headers, when the host exports traces (set by the host: this crate knows no tracer).
    pub trace_context: Option<fn(&mut http::HeaderMap)>,
}

impl Default for OutboundPolicy {
    fn default() -> Self {
        OutboundPolicy {
            allowed_hosts: Vec::new(),
            allow_private: false,
            timeout: Duration::from_secs(30),
            max_response_bytes: 8 << 20,
            trace_context: None,
        }
    }
}

impl OutboundPolicy {
    /// Whether a manifest may be granted `grant` (`host` or `host:port`).
    pub fn allows(&self, grant: &str) -> bool {
        let grant = grant.to_ascii_lowercase();
        let (host, _) = split_host_port(&grant);
        self.allowed_hosts.iter().any(|pattern| {
            let pattern = pattern.to_ascii_lowercase();
            pattern == "*"
                || pattern == grant
                || pattern == host
                || pattern
                    .strip_prefix("*.")
                    .is_some_and(|suffix| host.ends_with(&format!(".{suffix}")))
        })
    }
}

fn split_host_port(authority: &str) -> (&str, Option<u16>) {
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            match port.parse() {
                Ok(port) => (host, Some(port)),
                Err(_) => (authority, None),
            }
        }
        _ => (authority, None),
    }
}

/// Whether `entry` (`host`, or `host:port`) names `host`:`port`: an entry without a port names
/// the scheme's default port only.
fn names_authority(entry: &str, host: &str, port: u16, default_port: u16) -> bool {
    let entry = entry.to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    match split_host_port(&entry) {
        (h, Some(p)) => h == host && p == port,
        (h, None) => h == host && port == default_port,
    }
}

/// A header the host adds to requests to one host; the partner never sees its value.
#[derive(Clone, serde::Serialize, serde::Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecretHeader {
    /// `host` or `host:port` the header is sent to, and to no other.
    pub host: String,
    /// The header's name, e.g. `authorization`.
    pub header: String,
    /// The header's value, sent as given and marked sensitive.
    pub value: String,
}

impl std::fmt::Debug for SecretHeader {
    // The value is a third party's credential: never in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretHeader")
            .field("host", &self.host)
            .field("header", &self.header)
            .field("value", &"<redacted>")
            .finish()
    }
}

/// The values a tenant set for its partner, as stored and as read at request time. Secrets are
/// kept as given: the host must send them.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentValues {
    /// Config values by name.
    pub config: BTreeMap<String, String>,
    /// Secret headers by the name the tenant gave each.
    pub secrets: BTreeMap<String, SecretHeader>,
}

/// Why a config value was not given (mirrors the WIT `config-error`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The manifest did not ask for this name.
    NotGranted,
    /// Granted, but the tenant has not set a value.
    NotSet,
}

/// What one partner was granted.
#[derive(Debug)]
pub struct Capabilities {
    /// `host` or `host:port` entries it may send requests to.
    pub http_hosts: Vec<String>,
    /// Config names it may read.
    pub config_names: Vec<String>,
    /// The tenant's config values and secrets, read at request time (so changes apply at once).
    pub values: Arc<RwLock<AgentValues>>,
    /// The operator's policy: private addresses, timeouts, the response size cap.
    pub policy: Arc<OutboundPolicy>,
}

impl Capabilities {
    /// Nothing granted.
    pub fn none(policy: Arc<OutboundPolicy>) -> Self {
        Capabilities {
            http_hosts: Vec::new(),
            config_names: Vec::new(),
            values: Arc::default(),
            policy,
        }
    }

    /// Whether a request to `host`:`port` (with the scheme's default port `default_port`) is
    /// granted: an entry without a port covers the scheme's default port only.
    pub fn grants(&self, host: &str, port: u16, default_port: u16) -> bool {
        self.http_hosts
            .iter()
            .any(|grant| names_authority(grant, host, port, default_port))
    }

    /// The config value `name`, if granted and set.
    pub fn config(&self, name: &str) -> Result<String, ConfigError> {
        if !self.config_names.iter().any(|n| n == name) {
            return Err(ConfigError::NotGranted);
        }
        let values = self.values.read().unwrap_or_else(|p| p.into_inner());
        values.config.get(name).cloned().ok_or(ConfigError::NotSet)
    }

    /// The secret headers bound to `host`:`port`.
    fn secrets_for(&self, host: &str, port: u16, default_port: u16) -> Vec<SecretHeader> {
        let values = self.values.read().unwrap_or_else(|p| p.into_inner());
        values
            .secrets
            .values()
            .filter(|s| names_authority(&s.host, host, port, default_port))
            .cloned()
            .collect()
    }
}

/// The `wasi:http` hooks of one invocation: every outgoing request passes through here.
pub struct OutboundHooks {
    /// What the partner was granted.
    pub caps: Arc<Capabilities>,
    /// The partner's agent id, for logs.
    pub agent: String,
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        mut request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let _ = fut;
        // Here, not in the future below: this runs in the invocation's span.
        if let Some(inject) = self.caps.policy.trace_context {
            inject(request.headers_mut());
        }
        let caps = self.caps.clone();
        let agent = self.agent.clone();
        Box::new(async move {
            let uri = request.uri().clone();
            let https = uri.scheme_str() != Some("http");
            let default_port = if https { 443 } else { 80 };
            let host = uri
                .host()
                .ok_or(HttpError::HttpRequestUriInvalid)?
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase();
            let port = uri.port_u16().unwrap_or(default_port);
            if !caps.grants(&host, port, default_port) {
                tracing::warn!(agent = %agent, %host, port, "outbound request refused: host not granted");
                return Err(HttpError::HttpRequestDenied);
            }
            match net_policy::resolve_checked(&host, port, caps.policy.allow_private).await {
                Ok(_) => {}
                Err(AddressError::Resolve { reason, .. }) => {
                    return Err(HttpError::DnsError {
                        rcode: Some(reason),
                        info_code: None,
                    });
                }
                Err(AddressError::NoAddresses { .. }) => {
                    return Err(HttpError::DestinationNotFound);
                }
                Err(AddressError::Forbidden { why, .. }) => {
                    tracing::warn!(agent = %agent, %host, port, why, "outbound request refused: address not allowed");
                    return Err(HttpError::DestinationIpProhibited);
                }
            }
            for secret in caps.secrets_for(&host, port, default_port) {
                let (Ok(name), Ok(mut value)) = (
                    http::HeaderName::from_bytes(secret.header.as_bytes()),
                    http::HeaderValue::from_str(&secret.value),
                ) else {
                    continue;
                };
                value.set_sensitive(true);
                request.headers_mut().insert(name, value);
            }
            let limit = caps.policy.timeout;
            let clamp = |asked: Option<Duration>| Some(asked.map_or(limit, |d| d.min(limit)));
            let options = RequestOptions {
                connect_timeout: clamp(options.and_then(|o| o.connect_timeout)),
                first_byte_timeout: clamp(options.and_then(|o| o.first_byte_timeout)),
                between_bytes_timeout: clamp(options.and_then(|o| o.between_bytes_timeout)),
            };
            tracing::debug!(agent = %agent, method = %request.method(), %host, port, path = uri.path(), "outbound request");
            let (response, io) =
                wasmtime_wasi_http::default_send_request(request, Some(options)).await?;
            let max = caps.policy.max_response_bytes;
            // A declared length over the cap is refused before the partner reads anything (and
            // with a typed error: errors while streaming reach the guest only as text).
            let declared = response
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            if let Some(length) = declared.filter(|l| *l > max) {
                tracing::warn!(agent = %agent, %host, length, max, "outbound response refused: too large");
                return Err(HttpError::HttpResponseBodySize(Some(length)));
            }
            let response = response.map(|body| capped(body, max));
            Ok((response, Box::new(io) as Box<dyn Future<Output = _> + Send>))
        })
    }
}

/// A response body that fails with `HTTP-response-body-size` past `max` bytes.
fn capped<B>(body: B, max: u64) -> WasiBody
where
    B: http_body_util::BodyExt<Data = Bytes, Error = HttpError> + Send + 'static,
{
    let max_usize = usize::try_from(max).unwrap_or(usize::MAX);
    http_body_util::Limited::new(body, max_usize)
        .map_err(move |e| match e.downcast::<HttpError>() {
            Ok(inner) => *inner,
            Err(other) if other.is::<http_body_util::LengthLimitError>() => {
                HttpError::HttpResponseBodySize(Some(max))
            }
            Err(other) => HttpError::InternalError(Some(other.to_string())),
        })
        .boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(hosts: &[&str], config: &[&str]) -> Capabilities {
        Capabilities {
            http_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            config_names: config.iter().map(|h| h.to_string()).collect(),
            values: Arc::default(),
            policy: Arc::new(OutboundPolicy::default()),
        }
    }

    #[test]
    fn grants_match_host_and_port_exactly() {
        let c = caps(&["api.example.com", "127.0.0.1:8080"], &[]);
        assert!(c.grants("api.example.com", 443, 443));
        assert!(c.grants("API.example.com", 80, 80));
        assert!(!c.grants("api.example.com", 8443, 443));
        assert!(!c.grants("evil.example.com", 443, 443));
        assert!(!c.grants("api.example.com.evil.net", 443, 443));
        assert!(c.grants("127.0.0.1", 8080, 80));
        assert!(!c.grants("127.0.0.1", 8081, 80));
    }

    #[test]
    fn the_operator_policy_bounds_what_may_be_granted() {
        let policy = OutboundPolicy {
            allowed_hosts: vec!["*.openai.com".into(), "127.0.0.1:9000".into()],
            ..OutboundPolicy::default()
        };
        assert!(policy.allows("api.openai.com"));
        assert!(!policy.allows("openai.com.evil.net"));
        assert!(policy.allows("127.0.0.1:9000"));
        assert!(!policy.allows("127.0.0.1:9001"));
        assert!(!OutboundPolicy::default().allows("api.openai.com"));
        let any = OutboundPolicy {
            allowed_hosts: vec!["*".into()],
            ..OutboundPolicy::default()
        };
        assert!(any.allows("anything.example"));
    }

    #[test]
    fn config_values_need_a_grant_and_a_value() {
        let c = caps(&[], &["MODEL", "REGION"]);
        c.values
            .write()
            .unwrap()
            .config
            .insert("MODEL".into(), "small".into());
        assert_eq!(c.config("MODEL"), Ok("small".into()));
        assert_eq!(c.config("REGION"), Err(ConfigError::NotSet));
        assert_eq!(c.config("API_KEY"), Err(ConfigError::NotGranted));
    }

    #[test]
    fn secrets_are_bound_to_their_host() {
        let c = caps(&["api.example.com", "127.0.0.1:9000"], &[]);
        c.values.write().unwrap().secrets.insert(
            "key".into(),
            SecretHeader {
                host: "127.0.0.1:9000".into(),
                header: "authorization".into(),
                value: "Bearer s3cret".into(),
            },
        );
        assert_eq!(c.secrets_for("127.0.0.1", 9000, 80).len(), 1);
        assert!(c.secrets_for("api.example.com", 443, 443).is_empty());
        assert!(c.secrets_for("127.0.0.1", 9001, 80).is_empty());
    }
}
