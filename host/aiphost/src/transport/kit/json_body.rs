//! A JSON request body: its content type checked before any of it is read (the media types a
//! door accepts are its own), then read under the door's size limit and the connection's
//! deadline ([`super::body`]). A refusal is a [`BodyRefused`] each door answers in its own
//! wire shape.
//!
//! Why the content type first: a web page can make a browser POST `text/plain` (or a body with
//! no type at all) to any URL without asking; only a JSON content type needs the target's
//! consent (CORS). So a request that does not say it is JSON is refused whatever it holds.

use super::body::{self, BodyError};
use axum::body::Body;
use axum::http::{HeaderMap, header};
use bytes::Bytes;
use serde_json::Value;

/// Why a body was not taken.
#[derive(Debug, thiserror::Error)]
pub enum BodyRefused {
    /// The request does not say its body is one of the accepted media types.
    #[error("the request's content type is not JSON")]
    ContentType {
        /// The `Content-Type` sent, if any.
        given: Option<String>,
    },
    /// Too large, too slow, or unreadable.
    #[error(transparent)]
    Read(#[from] BodyError),
    /// Read whole, but not JSON ([`value`] only).
    #[error("the body is not JSON: {0}")]
    NotJson(serde_json::Error),
}

/// `Ok` when the request's `Content-Type` (any parameters) is one of `accepted` (lower case).
pub fn content_type(headers: &HeaderMap, accepted: &[&str]) -> Result<(), BodyRefused> {
    let given = headers
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let media = given
        .as_deref()
        .and_then(|v| v.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase());
    if media.is_some_and(|m| accepted.contains(&m.as_str())) {
        return Ok(());
    }
    Err(BodyRefused::ContentType { given })
}

/// The body's bytes, once its content type is one of `accepted`, at most `limit` of them.
pub async fn bytes(
    headers: &HeaderMap,
    body: Body,
    accepted: &[&str],
    limit: usize,
) -> Result<Bytes, BodyRefused> {
    content_type(headers, accepted)?;
    Ok(body::read(body, limit).await?)
}

/// The body as a JSON value (for a door that reads no envelope of its own).
pub async fn value(
    headers: &HeaderMap,
    body: Body,
    accepted: &[&str],
    limit: usize,
) -> Result<Value, BodyRefused> {
    let bytes = bytes(headers, body, accepted, limit).await?;
    serde_json::from_slice(&bytes).map_err(BodyRefused::NotJson)
}
