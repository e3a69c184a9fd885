//! Outbound HTTP through the host (`wasi:http`), for hosts the partner's manifest lists under
//! `[capabilities] http` and its operator allows. The host checks every request; a refusal
//! comes back as an [`HttpError`] with the `wasi:http` error code (for example
//! `HttpRequestDenied`), never as a trap. Headers the host adds (API keys bound to a host) are
//! never visible here.
//!
//! Enable with the SDK's `http` feature.
//!
//! ```no_run
//! let answer = aiphost_sdk::http::request("GET", "https://api.example.com/v1/models", &[], None);
//! match answer {
//!     Ok(response) => println!("{} bytes, status {}", response.body.len(), response.status),
//!     Err(e) => println!("refused or failed: {}", e.code),
//! }
//! ```

use wasip2::http::outgoing_handler;
use wasip2::http::types::{self, Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;

/// A response, read whole.
#[derive(Clone, Debug)]
pub struct Response {
    /// The HTTP status code.
    pub status: u16,
    /// Header names and values, in the order received.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The whole body.
    pub body: Vec<u8>,
}

/// Why a request failed: the `wasi:http` error code (`HttpRequestDenied`,
/// `DestinationIpProhibited`, `HttpResponseBodySize(..)`, `ConnectionTimeout`…) or a usage error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpError {
    /// The error code's name, e.g. `HttpRequestDenied`.
    pub code: String,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.code)
    }
}

impl std::error::Error for HttpError {}

fn error(code: impl Into<String>) -> HttpError {
    HttpError { code: code.into() }
}

/// `HttpRequestDenied`, `HttpResponseBodySize(Some(1048576))`, … (the variant, unqualified).
fn code_error(code: &types::ErrorCode) -> HttpError {
    let text = format!("{code:?}");
    error(text.strip_prefix("ErrorCode::").unwrap_or(&text))
}

/// Send `method url` with `headers` and an optional body; read the whole response.
pub fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Result<Response, HttpError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| error("InvalidUrl: no scheme"))?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => return Err(error(format!("InvalidUrl: scheme {other}"))),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let fields = Fields::new();
    for (name, value) in headers {
        fields
            .append(&name.to_string(), &value.as_bytes().to_vec())
            .map_err(|e| error(format!("InvalidHeader: {name}: {e:?}")))?;
    }
    let outgoing = OutgoingRequest::new(fields);
    let method = match method.to_ascii_uppercase().as_str() {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "PATCH" => Method::Patch,
        "HEAD" => Method::Head,
        other => Method::Other(other.to_string()),
    };
    let invalid = |what: &str| error(format!("InvalidRequest: {what}"));
    outgoing
        .set_method(&method)
        .map_err(|()| invalid("method"))?;
    outgoing
        .set_scheme(Some(&scheme))
        .map_err(|()| invalid("scheme"))?;
    outgoing
        .set_authority(Some(authority))
        .map_err(|()| invalid("authority"))?;
    outgoing
        .set_path_with_query(Some(path))
        .map_err(|()| invalid("path"))?;
    let outgoing_body = outgoing.body().map_err(|()| invalid("body"))?;
    if let Some(bytes) = body {
        let stream = outgoing_body.write().map_err(|()| invalid("body stream"))?;
        for chunk in bytes.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| error(format!("WriteFailed: {e:?}")))?;
        }
    }
    let pending = outgoing_handler::handle(outgoing, None).map_err(|code| code_error(&code))?;
    OutgoingBody::finish(outgoing_body, None).map_err(|code| code_error(&code))?;
    let answer = loop {
        match pending.get() {
            Some(answer) => break answer,
            None => pending.subscribe().block(),
        }
    };
    let response = answer
        .map_err(|()| error("ResponseAlreadyTaken"))?
        .map_err(|code| code_error(&code))?;
    let status = response.status();
    let headers = response.headers().entries();
    let incoming = response.consume().map_err(|()| invalid("response body"))?;
    let stream = incoming.stream().map_err(|()| invalid("response stream"))?;
    let mut body = Vec::new();
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => body.extend_from_slice(&chunk),
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(match types::http_error_code(&e) {
                    Some(code) => code_error(&code),
                    None => {
                        let detail = e.to_debug_string();
                        let first_line = detail.lines().next().unwrap_or_default();
                        error(format!("ReadFailed: {first_line}"))
                    }
                });
            }
        }
    }
    Ok(Response {
        status,
        headers,
        body,
    })
}
