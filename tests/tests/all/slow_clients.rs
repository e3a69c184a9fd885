//! Hostile and slow clients through a real host, on raw sockets where a well-behaved client
//! library would not misbehave enough: idle connections, slowloris heads, slow bodies, clients
//! that stop reading, more connections than the cap, on the plain and the TLS listener; and the
//! admin API answering before it reads a body it will not take. Every host runs with timeouts
//! of a fraction of a second, so each test ends in a few seconds.

use aiphost::transport::connections::HttpLimits;
use aiphost::transport::tls::TlsFiles;
use aiphost_tests::raw::{authority, connect, json_body, read_response, until_closed};
use aiphost_tests::tenants::{create_tenant, example_component, example_manifest, publish};
use aiphost_tests::*;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, SanType};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Long enough never to fire in a test that is about another limit.
const NEVER: Duration = Duration::from_secs(30);

fn limits(header: Duration, body: Duration, idle: Duration, write: Duration) -> HttpLimits {
    HttpLimits {
        header_timeout: header,
        body_timeout: body,
        idle_timeout: idle,
        write_timeout: write,
        max_connections: 1000,
    }
}

async fn host_with(http: HttpLimits) -> TestHost {
    TestHost::start(HostOptions {
        http,
        ..HostOptions::default()
    })
    .await
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n")
}

// ---- point 5: timeouts and the connection cap ----

/// A connection with no request under way is closed after the idle timeout: a fresh one that
/// never sends anything, and a kept-alive one after its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_after_the_idle_timeout() {
    let idle = Duration::from_millis(600);
    let host = host_with(limits(NEVER, NEVER, idle, NEVER)).await;

    let opened = Instant::now();
    let mut silent = connect(&host.url).await;
    let mut kept = connect(&host.url).await;
    kept.write_all(get("/healthz").as_bytes()).await.unwrap();
    let (status, _, _) = read_response(&mut kept, Duration::from_secs(5)).await;
    assert_eq!(status, 200);
    let answered = Instant::now();

    let (silent_got, silent_closed) = until_closed(&mut silent, Duration::from_secs(4)).await;
    let silent_closed = silent_closed.expect("an idle connection is closed");
    assert!(silent_got.is_empty(), "{silent_got:?}");
    assert!(
        silent_closed - opened >= idle - Duration::from_millis(50),
        "closed after {:?}, before the idle timeout",
        silent_closed - opened
    );
    let (kept_got, kept_closed) = until_closed(&mut kept, Duration::from_secs(4)).await;
    let kept_closed = kept_closed.expect("a kept-alive connection is closed once idle");
    assert!(kept_got.is_empty(), "{kept_got:?}");
    assert!(kept_closed - answered >= idle - Duration::from_millis(50));
}

/// A request head dribbled a byte at a time is cut after the header timeout, counted from its
/// first byte (time idle before it does not count), while other clients are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_heads_are_closed_after_the_header_timeout() {
    let header = Duration::from_millis(500);
    let host = host_with(limits(header, NEVER, Duration::from_secs(10), NEVER)).await;

    // Waiting longer than the header timeout before the first byte is being idle, not slow.
    let mut patient = connect(&host.url).await;
    tokio::time::sleep(header + Duration::from_millis(300)).await;
    patient.write_all(get("/healthz").as_bytes()).await.unwrap();
    let (status, _, _) = read_response(&mut patient, Duration::from_secs(5)).await;
    assert_eq!(status, 200, "a request head sent at once after a pause");

    let mut slow = connect(&host.url).await;
    let head = b"POST /agents/echo/rpc HTTP/1.1\r\nHost: test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let started = Instant::now();
    let mut sent = 0;
    let mut buf = [0u8; 1024];
    let closed = loop {
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "a slowloris head was still open after {:?}",
            started.elapsed()
        );
        tokio::select! {
            read = slow.read(&mut buf) => match read {
                Ok(0) | Err(_) => break Instant::now(),
                Ok(n) => panic!("an answer to half a head: {:?}", String::from_utf8_lossy(&buf[..n])),
            },
            _ = tokio::time::sleep(Duration::from_millis(50)) => {
                if sent < head.len() {
                    // A write after the host closed may fail; the read above tells.
                    let _ = slow.write_all(&head[sent..sent + 1]).await;
                    sent += 1;
                }
                if sent == 4 {
                    // Meanwhile, everybody else is served.
                    let answer = post(&host.rpc("echo"), &v2("start", &uuid(), text("hi"), json!({}))).await;
                    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
                }
            }
        }
    };
    assert!(
        closed - started >= header - Duration::from_millis(50),
        "cut after {:?}, before the header timeout",
        closed - started
    );
    assert!(sent < head.len(), "the whole head was sent before the cut");
}

/// A body that does not arrive within the body timeout (dribbled or stalled) is answered with
/// a JSON-RPC error saying so, and the connection is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_get_an_error_after_the_body_timeout() {
    let body_timeout = Duration::from_millis(500);
    let host = host_with(limits(NEVER, body_timeout, Duration::from_secs(10), NEVER)).await;
    let head = "POST /agents/echo/rpc HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n";

    let mut stalled = connect(&host.url).await;
    let mut dribbled = connect(&host.url).await;
    stalled
        .write_all(format!("{head}{{\"jsonrpc\":").as_bytes())
        .await
        .unwrap();
    dribbled.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let dribbler = tokio::spawn(async move {
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            tokio::select! {
                read = dribbled.read(&mut buf) => match read {
                    Ok(0) | Err(_) => return answer,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                },
                _ = tokio::time::sleep(Duration::from_millis(50)) => {
                    let _ = dribbled.write_all(b" ").await;
                }
            }
            if started.elapsed() > Duration::from_secs(4) {
                return answer;
            }
        }
    });

    let (status, response_head, body) = read_response(&mut stalled, Duration::from_secs(4)).await;
    let answered = Instant::now();
    assert_eq!(status, 200, "JSON-RPC errors are HTTP 200");
    let answer = json_body(&response_head, &body);
    assert_eq!(error_code(&answer), -32600, "{answer}");
    assert_eq!(answer["error"]["data"]["timeoutMs"], 500, "{answer}");
    assert!(
        answer["error"]["data"]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("500 ms"),
        "{answer}"
    );
    assert!(answered - started >= body_timeout - Duration::from_millis(50));
    let (rest, closed) = until_closed(&mut stalled, Duration::from_secs(3)).await;
    assert!(rest.is_empty(), "{rest:?}");
    assert!(
        closed.is_some(),
        "the connection is closed after the answer"
    );

    let dribbled_answer = dribbler.await.unwrap();
    let text = String::from_utf8_lossy(&dribbled_answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"timeoutMs\":500"), "{text}");
}

/// A client that stops reading while its answers pile up is cut after the write timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_stop_reading_are_cut_after_the_write_timeout() {
    let write = Duration::from_millis(500);
    let host = host_with(limits(NEVER, NEVER, Duration::from_secs(10), write)).await;
    // A small receive window, and far more pipelined answers than any socket buffer holds.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket
        .connect(authority(&host.url).parse().unwrap())
        .await
        .unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let requests = 10_000;
    let one = get("/agents/echo/.well-known/acs.json");
    let writing = tokio::spawn(async move {
        let all = one.repeat(requests);
        let _ = writer.write_all(all.as_bytes()).await;
        writer
    });
    // Not reading for longer than the write timeout.
    tokio::time::sleep(write + Duration::from_millis(1500)).await;
    let (got, closed) = until_closed(&mut reader, Duration::from_secs(5)).await;
    let answers = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200")
        .count();
    assert!(closed.is_some(), "the connection is closed");
    assert!(
        answers < requests,
        "all {requests} answers were delivered: the client was never cut"
    );
    writing.abort();
    // The host serves others as before.
    let response = reqwest::get(format!("{}/healthz", host.url)).await.unwrap();
    assert_eq!(response.status(), 200);
}

/// Over the cap, a connection gets a quick 503 with a JSON error and is closed; a connection
/// that closes frees its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_get_503_and_a_closed_one_frees_its_slot() {
    let host = host_with(HttpLimits {
        max_connections: 3,
        ..HttpLimits::default()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = connect(&host.url).await;
        c.write_all(get("/healthz").as_bytes()).await.unwrap();
        let (status, _, _) = read_response(&mut c, Duration::from_secs(5)).await;
        assert_eq!(status, 200);
        held.push(c);
    }

    let mut fourth = connect(&host.url).await;
    fourth.write_all(get("/healthz").as_bytes()).await.unwrap();
    let (status, head, body) = read_response(&mut fourth, Duration::from_secs(5)).await;
    assert_eq!(status, 503, "{head}");
    let error = json_body(&head, &body);
    assert_eq!(error["error"]["code"], "overloaded", "{error}");
    assert_eq!(error["error"]["details"]["maxConnections"], 3, "{error}");
    assert!(head.to_ascii_lowercase().contains("connection: close"));
    let (_, closed) = until_closed(&mut fourth, Duration::from_secs(3)).await;
    assert!(closed.is_some(), "a refused connection is closed");
    // An ordinary client library gets the answer too.
    let response = reqwest::get(format!("{}/healthz", host.url)).await.unwrap();
    assert_eq!(response.status(), 503);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "overloaded");

    // One closes: its slot is free again.
    drop(held.pop());
    let started = Instant::now();
    loop {
        let response = reqwest::get(format!("{}/healthz", host.url)).await.unwrap();
        if response.status() == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "no slot was freed: {}",
            response.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The held connections are still served.
    for c in &mut held {
        c.write_all(get("/healthz").as_bytes()).await.unwrap();
        let (status, _, _) = read_response(c, Duration::from_secs(5)).await;
        assert_eq!(status, 200);
    }
}

/// An event stream to a client that reads stays open however long it lasts: none of the
/// timeouts cut it, and it ends when its task does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_outlive_every_timeout() {
    let short = Duration::from_millis(300);
    let host = TestHost::start(HostOptions {
        sse_keep_alive: Duration::from_millis(100),
        http: limits(short, short, short, short),
        ..HostOptions::default()
    })
    .await;
    let id = format!("long-{}", uuid());
    let request = stream_request("v2", "start", &id, text("hello"), json!({}));
    let mut stream = SseStream::open(&format!("{}/agents/echo/stream", host.url), &request).await;
    assert_eq!(stream.status, 200);
    while stream
        .next_event(Duration::from_secs(10))
        .await
        .and_then(|(e, _)| event_state(&e))
        .as_deref()
        != Some("awaiting-completion")
    {}
    // Five times every timeout, with nothing but keep-alive comments.
    let quiet_until = Instant::now() + 5 * short;
    let mut comments = 0;
    while Instant::now() < quiet_until {
        match tokio::time::timeout(Duration::from_secs(1), stream.frames.recv()).await {
            Ok(Some(Frame::Comment(_))) => comments += 1,
            Ok(Some(Frame::Event { raw, .. })) => panic!("an event from a waiting task: {raw}"),
            Ok(None) => panic!("the stream was closed while its client read it"),
            Err(_) => panic!("no keep-alive within 1 s"),
        }
    }
    assert!(comments >= 5, "{comments} keep-alive comments");
    let answer = post(
        &host.rpc("echo"),
        &v2("complete", &id, json!([]), json!({})),
    )
    .await;
    assert_eq!(state(&answer), "completed");
    let rest = stream.until_closed(Duration::from_secs(10)).await;
    assert_eq!(
        event_state(rest.last().unwrap()).as_deref(),
        Some("completed")
    );
}

/// `aiphost serve` takes the limits from its flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_flags_set_the_limits() {
    let dir = tempfile::tempdir().unwrap();
    let host = ProcessHost::start(
        &dir.path().join("data"),
        &[
            "--http-idle-timeout-ms",
            "1000",
            "--http-header-timeout-ms",
            "300",
            "--max-connections",
            "3",
        ],
    );
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = connect(&host.url).await;
        c.write_all(get("/healthz").as_bytes()).await.unwrap();
        let (status, _, _) = read_response(&mut c, Duration::from_secs(5)).await;
        assert_eq!(status, 200);
        held.push(c);
    }
    let answered = Instant::now();
    // The third slot: a head that never ends.
    let mut slow = connect(&host.url).await;
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let started = Instant::now();
    let response = reqwest::get(format!("{}/healthz", host.url)).await.unwrap();
    assert_eq!(response.status(), 503, "the cap is 3");
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["details"]["maxConnections"], 3, "{error}");

    let (_, closed) = until_closed(&mut slow, Duration::from_secs(4)).await;
    // (The default header timeout, 10 s, would not cut it in time.)
    let closed = closed.expect("a slow head is cut");
    assert!(closed - started >= Duration::from_millis(250));
    for mut c in held {
        let (_, closed) = until_closed(&mut c, Duration::from_secs(4)).await;
        let closed = closed.expect("an idle connection is closed");
        assert!(closed - answered >= Duration::from_millis(900));
    }
}

// ---- the TLS listener ----

struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
    files: TlsFiles,
    _dir: tempfile::TempDir,
}

fn pki() -> Pki {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.subject_alt_names = vec![SanType::IpAddress("127.0.0.1".parse().unwrap())];
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &ca).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let files = TlsFiles {
        cert: write("server.pem", cert.pem()),
        key: write("server-key.pem", key.serialize_pem()),
        client_ca: None,
    };
    Pki {
        ca,
        files,
        _dir: dir,
    }
}

/// A TLS connection to `url` offering `alpn`.
async fn tls_connect(
    url: &str,
    ca: &CertificateDer<'static>,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).unwrap();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(authority(url)).await?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
}

async fn tls_host(pki: &Pki, http: HttpLimits) -> TestHost {
    let host = TestHost::start(HostOptions {
        tls: Some(pki.files.clone()),
        http,
        ..HostOptions::default()
    })
    .await;
    assert!(host.url.starts_with("https://"));
    host
}

/// The TLS listener applies the same timeouts, and serves h2 (by ALPN) under them too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connections_get_the_same_timeouts_and_h2() {
    let pki = pki();
    let (header, idle) = (Duration::from_millis(500), Duration::from_millis(700));
    let host = tls_host(&pki, limits(header, NEVER, idle, NEVER)).await;
    let ca = pki.ca.der().clone();

    // Idle after the handshake: closed after the idle timeout.
    let mut silent = tls_connect(&host.url, &ca, &[b"http/1.1"]).await.unwrap();
    let opened = Instant::now();
    // Slowloris over TLS: cut after the header timeout.
    let mut slow = tls_connect(&host.url, &ca, &[b"http/1.1"]).await.unwrap();
    let started = Instant::now();
    let head = b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut buf = [0u8; 1024];
    let mut sent = 0;
    let slow_closed = loop {
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "a TLS slowloris head was still open"
        );
        tokio::select! {
            read = slow.read(&mut buf) => match read {
                Ok(0) | Err(_) => break Instant::now(),
                Ok(n) => panic!("an answer to half a head: {:?}", String::from_utf8_lossy(&buf[..n])),
            },
            _ = tokio::time::sleep(Duration::from_millis(50)) => {
                if sent < head.len() {
                    let _ = slow.write_all(&head[sent..sent + 1]).await;
                    let _ = slow.flush().await;
                    sent += 1;
                }
            }
        }
    };
    assert!(slow_closed - started >= header - Duration::from_millis(50));
    assert!(sent < head.len());
    let (got, silent_closed) = until_closed(&mut silent, Duration::from_secs(4)).await;
    let silent_closed = silent_closed.expect("an idle TLS connection is closed");
    assert!(got.is_empty(), "{got:?}");
    assert!(silent_closed - opened >= idle - Duration::from_millis(50));

    // h2, chosen by ALPN: answered, then closed once idle.
    let tls = tls_connect(&host.url, &ca, &[b"h2", b"http/1.1"])
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .expect("an h2 handshake");
    let connection = tokio::spawn(connection);
    let body = v2("start", &uuid(), text("over h2"), json!({})).to_string();
    let request = hyper::Request::post(format!("{}/agents/echo/rpc", host.url))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.expect("an h2 answer");
    assert_eq!(response.status(), 200);
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(state(&answer), "awaiting-completion", "{answer}");
    let answered = Instant::now();
    tokio::time::timeout(Duration::from_secs(4), connection)
        .await
        .expect("an idle h2 connection is closed")
        .unwrap()
        .ok();
    assert!(answered.elapsed() >= idle - Duration::from_millis(50));
}

/// Over the cap on TLS, a connection is closed before its handshake; a closed one frees its
/// slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connections_over_the_cap_are_closed() {
    let pki = pki();
    let host = tls_host(
        &pki,
        HttpLimits {
            max_connections: 2,
            ..HttpLimits::default()
        },
    )
    .await;
    let ca = pki.ca.der().clone();
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = tls_connect(&host.url, &ca, &[b"http/1.1"]).await.unwrap();
        c.write_all(get("/healthz").as_bytes()).await.unwrap();
        let (status, _, _) = read_response(&mut c, Duration::from_secs(5)).await;
        assert_eq!(status, 200);
        held.push(c);
    }
    let refused = tls_connect(&host.url, &ca, &[b"http/1.1"]).await;
    assert!(refused.is_err(), "a third TLS connection got through");

    drop(held.pop());
    let started = Instant::now();
    let mut c = loop {
        if let Ok(c) = tls_connect(&host.url, &ca, &[b"http/1.1"]).await {
            break c;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "no slot was freed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    c.write_all(get("/healthz").as_bytes()).await.unwrap();
    let (status, _, _) = read_response(&mut c, Duration::from_secs(5)).await;
    assert_eq!(status, 200);
}

// ---- point 6: admin bodies ----

/// Send a request head (its body announced, none sent) and read the answer.
async fn head_only<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    method: &str,
    path: &str,
    token: Option<&str>,
    length: u64,
) -> (u16, Value) {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\n{auth}Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (status, head, body) = read_response(stream, Duration::from_secs(3)).await;
    (status, json_body(&head, &body))
}

/// Without a valid token, or without the right one, an admin request is refused from its
/// headers: a client that announces 40 MB and sends none of it gets its answer at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_requests_are_authenticated_before_their_body_is_read() {
    let host = host_with(HttpLimits::default()).await;
    let tenant = create_tenant(&host.url, "acme", json!({})).await;
    let cases = [
        ("POST", "/admin/agents", None, 401, "unauthenticated"),
        (
            "POST",
            "/admin/agents",
            Some("aht.not-a-token"),
            401,
            "unauthenticated",
        ),
        ("POST", "/admin/tenants", None, 401, "unauthenticated"),
        (
            "POST",
            "/admin/tenants",
            Some(tenant.as_str()),
            403,
            "forbidden",
        ),
        (
            "POST",
            "/admin/agents",
            Some(OPERATOR_TOKEN),
            403,
            "forbidden",
        ),
        (
            "PUT",
            "/admin/agents/echo/config/MODEL",
            None,
            401,
            "unauthenticated",
        ),
        (
            "POST",
            "/admin/agents/echo/keys",
            Some("nope"),
            401,
            "unauthenticated",
        ),
    ];
    for (method, path, token, want, code) in cases {
        let mut c = connect(&host.url).await;
        let (status, error) = head_only(&mut c, method, path, token, 40_000_000).await;
        assert_eq!(status, want, "{method} {path}: {error}");
        assert_eq!(error["error"]["code"], code, "{method} {path}: {error}");
        let (_, closed) = until_closed(&mut c, Duration::from_secs(3)).await;
        assert!(
            closed.is_some(),
            "{method} {path}: the connection is closed, the body unread"
        );
    }
}

/// Bodies over an admin route's limit get 413 with the admin error shape and the limit, at once
/// when the length is announced; a slow body gets 408; bad paths and bodies get JSON too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_bodies_over_the_limit_or_late_get_json_errors() {
    let host = host_with(limits(NEVER, Duration::from_millis(500), NEVER, NEVER)).await;
    let small = 512 * 1024;

    // Announced and far too large: refused without reading it.
    let mut c = connect(&host.url).await;
    let (status, error) = head_only(
        &mut c,
        "POST",
        "/admin/tenants",
        Some(OPERATOR_TOKEN),
        100_000_000,
    )
    .await;
    assert_eq!(status, 413, "{error}");
    assert_eq!(error["error"]["code"], "too-large", "{error}");
    assert_eq!(error["error"]["details"]["limitBytes"], small, "{error}");

    // Sent whole, with a length and chunked.
    let padded = json!({"id": "padded", "pad": "x".repeat(600 * 1024)}).to_string();
    let response = reqwest::Client::new()
        .post(format!("{}/admin/tenants", host.url))
        .bearer_auth(OPERATOR_TOKEN)
        .header("content-type", "application/json")
        .body(padded.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["details"]["limitBytes"], small, "{error}");
    let chunks: Vec<Result<String, std::io::Error>> = padded
        .as_bytes()
        .chunks(64 * 1024)
        .map(|c| Ok(String::from_utf8_lossy(c).to_string()))
        .collect();
    let response = reqwest::Client::new()
        .post(format!("{}/admin/tenants", host.url))
        .bearer_auth(OPERATOR_TOKEN)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "too-large", "{error}");
    let (status, _) = admin(
        &host.url,
        reqwest::Method::GET,
        "/admin/tenants",
        OPERATOR_TOKEN,
        None,
    )
    .await;
    assert_eq!(status, 200, "the host still answers");

    // A body that stops coming: 408 after the body timeout.
    let mut c = connect(&host.url).await;
    c.write_all(
        format!(
            "POST /admin/tenants HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {OPERATOR_TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"id\":"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let (status, head, body) = read_response(&mut c, Duration::from_secs(3)).await;
    let error = json_body(&head, &body);
    assert_eq!(status, 408, "{error}");
    assert_eq!(error["error"]["code"], "timeout", "{error}");
    assert_eq!(error["error"]["details"]["timeoutMs"], 500, "{error}");

    // Not JSON; a path segment that is not UTF-8.
    let response = reqwest::Client::new()
        .post(format!("{}/admin/tenants", host.url))
        .bearer_auth(OPERATOR_TOKEN)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "bad-request", "{error}");
    let mut c = connect(&host.url).await;
    c.write_all(
        format!(
            "GET /admin/agents/%FF/versions HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {OPERATOR_TOKEN}\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let (status, head, body) = read_response(&mut c, Duration::from_secs(3)).await;
    let error = json_body(&head, &body);
    assert_eq!(status, 400, "{error}");
    assert_eq!(error["error"]["code"], "bad-request", "{error}");
}

/// Publishing keeps a large limit, the publishing tenant's own: what its component quota
/// allows (base64) plus room for the manifest, so an over-quota component still gets the
/// precise quota answer and only a body beyond that gets 413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_takes_bodies_as_large_as_the_tenants_quota_allows() {
    let host = host_with(HttpLimits::default()).await;
    let small = create_tenant(&host.url, "small", json!({"maxComponentBytes": 100_000})).await;
    let large = create_tenant(&host.url, "large", json!({"maxComponentBytes": 3_000_000})).await;

    // A real bundle (larger than every other admin route takes).
    let (status, body) = publish(
        &host.url,
        &large,
        &example_manifest("trip-planner", "big-trip", ""),
        &example_component("trip-planner"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    // 2 MB of garbage: read and judged, not refused for its size.
    let (status, body) = publish(
        &host.url,
        &large,
        &example_manifest("echo", "garbage", ""),
        &vec![7u8; 2_000_000],
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body.to_string().contains("not a WebAssembly component"),
        "{body}"
    );

    // Over the small tenant's quota but within the room: the quota answer.
    let (status, body) = publish(
        &host.url,
        &small,
        &example_manifest("echo", "small-echo", ""),
        &vec![7u8; 150_000],
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "quota", "{body}");
    // Beyond it: 413 with the small tenant's limit.
    let (status, body) = publish(
        &host.url,
        &small,
        &example_manifest("echo", "small-echo", ""),
        &vec![7u8; 3_000_000],
    )
    .await;
    assert_eq!(status, 413, "{body}");
    assert_eq!(body["error"]["code"], "too-large", "{body}");
    let limit = body["error"]["details"]["limitBytes"].as_u64().unwrap();
    assert!(
        (133_336..3_000_000).contains(&limit),
        "the small tenant's limit: {limit}"
    );
}

/// A request whose body the host leaves unread (here an HTTP+JSON cancel, which reads nothing
/// from its body) ends its HTTP/1.1 connection, and the answer says `Connection: close`, so a
/// client does not send its next request on it and find it closed unanswered (seen with the
/// official A2A SDK's pooled client). A request whose body is read keeps the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_leaves_the_body_unread_says_the_connection_closes() {
    let host = host_with(HttpLimits::default()).await;
    let request = |path: &str, body: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let mut kept = connect(&host.url).await;
    let read = request(
        "/agents/echo/a2a",
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"nobody"}}"#,
    );
    for _ in 0..2 {
        kept.write_all(read.as_bytes()).await.unwrap();
        let (status, head, _) = read_response(&mut kept, Duration::from_secs(10)).await;
        assert_eq!(status, 200);
        assert!(
            !head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
    }

    let mut closed = connect(&host.url).await;
    let unread = request(
        "/agents/echo/a2a/rest/tasks/nobody:cancel",
        r#"{"id":"nobody","metadata":{"why":"a body nobody reads"}}"#,
    );
    closed.write_all(unread.as_bytes()).await.unwrap();
    let (status, head, _) = read_response(&mut closed, Duration::from_secs(10)).await;
    assert_eq!(status, 404, "{head}");
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );
    let (_, ended) = until_closed(&mut closed, Duration::from_secs(10)).await;
    assert!(ended.is_some(), "the connection closes after the answer");
}
