//! HTTP on raw sockets, for tests of clients a well-behaved client library would never be:
//! ones that stall, dribble, or stop reading. Connect to a host, read until it closes, read one
//! response with a `Content-Length`.

use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::net::TcpStream;

/// `host:port` of a host's URL.
pub fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_start_matches("https://")
        .to_string()
}

/// A plain TCP connection to the host at `url`.
pub async fn connect(url: &str) -> TcpStream {
    TcpStream::connect(authority(url)).await.expect("connect")
}

/// Read until the peer closes (EOF or reset) or `limit` passes: what arrived, and when the
/// connection ended (`None`: still open at `limit`).
pub async fn until_closed<S: AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> (Vec<u8>, Option<Instant>) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut data = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (data, None),
            Ok(Ok(0)) | Ok(Err(_)) => return (data, Some(Instant::now())),
            Ok(Ok(n)) => data.extend_from_slice(&buf[..n]),
        }
    }
}

/// One HTTP/1.1 response read off a raw stream (it must carry `Content-Length`):
/// `(status, head, body)`; panics after `limit`.
pub async fn read_response<S: AsyncRead + Unpin>(
    stream: &mut S,
    limit: Duration,
) -> (u16, String, Vec<u8>) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .unwrap_or_else(|_| panic!("no response within {limit:?}; got {data:?}"))
            .expect("reading a response");
        assert!(n > 0, "closed before a response: {data:?}");
        data.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let status = head[9..12].parse().expect("a status code");
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no content-length in {head}"));
    while data.len() < head_end + length {
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .expect("the body in time")
            .expect("reading a body");
        assert!(n > 0, "closed in the body");
        data.extend_from_slice(&buf[..n]);
    }
    (status, head, data[head_end..head_end + length].to_vec())
}

/// A response body that must be JSON by its head and its bytes.
pub fn json_body(head: &str, body: &[u8]) -> Value {
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{head}"
    );
    serde_json::from_slice(body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(body)))
}
