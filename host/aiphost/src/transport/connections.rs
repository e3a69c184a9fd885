//! Serving connections, for the plain and the TLS listener alike: one accept loop, hyper's
//! HTTP/1.1 (and h2 where a TLS client chooses it by ALPN), and the limits that keep slow,
//! idle or too many clients from holding the host:
//!
//! - **idle**: a connection with no request under way, from accept or from the end of its last
//!   answer, is closed after `idle_timeout` (h2 gets a GOAWAY first).
//! - **header**: a request head must be complete within `header_timeout` of its first byte,
//!   else the connection is closed (slowloris). hyper's own header timeout is off: it starts
//!   when hyper waits for a head, so it would count idle time and close every kept-alive
//!   connection after the header timeout. A TLS handshake has `header_timeout` as well.
//! - **body**: a request body must end within `body_timeout` of its head (`body::Deadline`);
//!   the route answers the error in its own shape, and the connection is closed after the
//!   answer since the rest of the body was not read.
//! - **write**: a connection whose writes stay blocked for `write_timeout` (a client that
//!   stopped reading) is closed. Writing to a client that reads is never timed, so an event
//!   stream lives as long as its task.
//! - **cap**: at most `max_connections` at once, TLS handshakes included. Over the cap a plain
//!   connection is answered `503` with a JSON error and `Connection: close` as soon as its
//!   request head is in, rather than left in the kernel's backlog waiting for a slot that slow
//!   clients may hold for long;
//!   a TLS connection is closed before its handshake, since answering would take a handshake,
//!   the dearest thing a connection costs, just when the host has too many. Refusals under way
//!   are capped too; beyond that a connection is closed at once.
//!
//! Shutdown: the listener closes at once; every connection is told to finish (requests under
//! way finish, idle connections close) and [`serve`] returns when all have.

use super::kit::body::Deadline;
use super::tls::{self, Peer};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use bytes::Bytes;
use futures::future::BoxFuture;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

/// How long a connection told to close (idle, or the host shutting down) may take to do so
/// with no request under way.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// How long an HTTP/1.1 connection that leaves a request body unread keeps reading (and
/// dropping) after its answer before it closes: closing a socket with unread input resets the
/// connection, and a reset can destroy the answer before the client reads it.
const LINGER: Duration = Duration::from_millis(500);
/// Over-the-cap answers under way at once; more connections are closed unanswered.
const REFUSALS_AT_ONCE: usize = 64;
/// How long an over-the-cap answer may take: reading the request head, answering, lingering.
const REFUSAL_TIME: Duration = Duration::from_secs(2);
/// The cap's largest value: all slots are taken at once at shutdown, counted in a u32.
const MAX_CAP: usize = if (u32::MAX as usize) < Semaphore::MAX_PERMITS {
    u32::MAX as usize
} else {
    Semaphore::MAX_PERMITS
};
/// At most one warning this often while the host refuses connections.
const REFUSAL_WARNING_EVERY: Duration = Duration::from_secs(60);

/// How long clients may take and how many may be connected at once.
#[derive(Clone, Debug)]
pub struct HttpLimits {
    /// From the first byte of a request head until the head is complete (a slowloris client
    /// sends one byte at a time); it also bounds a TLS handshake.
    pub header_timeout: Duration,
    /// From a complete request head until the last byte of its body.
    pub body_timeout: Duration,
    /// How long a connection may wait for a request with none under way: from accept, or from
    /// the end of the last answer, until the first byte of the next request.
    pub idle_timeout: Duration,
    /// How long writing an answer may stay blocked on a client that does not read. A client
    /// that reads, however slowly, is never cut: long event streams stay open.
    pub write_timeout: Duration,
    /// Connections open at once, TLS handshakes included; more are refused.
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            // Far above what the benchmarks open at once (the one holding 10,000 idle event
            // streams sets its own cap). Each connection is a file descriptor: `ulimit -n` must
            // allow this many and the host's own files.
            max_connections: 10_000,
        }
    }
}

/// What the connection layer counts, for `/metrics`.
#[derive(Debug, Default)]
pub struct ConnectionStats {
    /// Connections open now, TLS handshakes included.
    pub open: AtomicU64,
    /// Connections refused over the cap.
    pub refused: AtomicU64,
    /// Connections closed because the client was too slow: a head past the header timeout, or
    /// an answer it stopped reading past the write timeout. (Idle connections closing is
    /// normal and not counted.)
    pub timed_out: AtomicU64,
}

/// Serve `app` on `tcp` (HTTPS with `tls`) under `limits` until `stop`; returns when every
/// connection has ended.
pub async fn serve(
    tcp: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Router,
    limits: HttpLimits,
    stats: Arc<ConnectionStats>,
    stop: CancellationToken,
) {
    let capacity = limits.max_connections.clamp(1, MAX_CAP);
    let slots = Arc::new(Semaphore::new(capacity));
    let refusals = Arc::new(Semaphore::new(REFUSALS_AT_ONCE));
    let overloaded = overloaded_answer(capacity);
    let mut last_warning: Option<Instant> = None;
    let acceptor = tls.map(TlsAcceptor::from);
    let shared = Arc::new(Shared {
        app: TowerToHyperService::new(app),
        limits,
        stats,
        stop,
    });
    loop {
        let (stream, addr) = tokio::select! {
            biased;
            _ = shared.stop.cancelled() => break,
            accepted = tcp.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Most likely out of file descriptors: wait for some to be freed.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            shared.stats.refused.fetch_add(1, Ordering::Relaxed);
            if last_warning.is_none_or(|at| at.elapsed() >= REFUSAL_WARNING_EVERY) {
                last_warning = Some(Instant::now());
                tracing::warn!(
                    max_connections = capacity,
                    "refusing connections: the host is at its connection cap (--max-connections)"
                );
            }
            if acceptor.is_none() {
                refuse(stream, overloaded.clone(), &refusals);
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let slot = Slot::new(permit, shared.stats.clone());
        tokio::spawn(connection(
            shared.clone(),
            slot,
            stream,
            addr,
            acceptor.clone(),
        ));
    }
    drop(tcp);
    // Each connection holds a slot until it ends: when all are free, all have ended.
    let all = u32::try_from(capacity).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// What every connection of one listener shares.
struct Shared {
    app: TowerToHyperService<Router>,
    limits: HttpLimits,
    stats: Arc<ConnectionStats>,
    stop: CancellationToken,
}

/// A connection's place under the cap, counted while it is held.
struct Slot {
    _permit: OwnedSemaphorePermit,
    stats: Arc<ConnectionStats>,
}

impl Slot {
    fn new(permit: OwnedSemaphorePermit, stats: Arc<ConnectionStats>) -> Self {
        stats.open.fetch_add(1, Ordering::Relaxed);
        Slot {
            _permit: permit,
            stats,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The over-the-cap answer: the admin API's error shape, and the cap.
fn overloaded_answer(capacity: usize) -> Bytes {
    let body = serde_json::json!({"error": {
        "code": "overloaded",
        "message": "the host has as many connections as it takes; retry shortly",
        "details": {"maxConnections": capacity},
    }})
    .to_string();
    Bytes::from(format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ))
}

/// Answer an over-the-cap plain connection with 503 and close it, if few refusals are under
/// way; else close it at once.
fn refuse(mut stream: TcpStream, answer: Bytes, refusals: &Arc<Semaphore>) {
    let Ok(permit) = refusals.clone().try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let _ = tokio::time::timeout(REFUSAL_TIME, async {
            // Clients take no answer before they have sent their request: wait for its head
            // (not its body).
            let mut head = Vec::new();
            let mut scratch = [0u8; 4096];
            loop {
                let n = stream.read(&mut scratch).await?;
                if n == 0 {
                    return Ok(());
                }
                let from = head.len().saturating_sub(3);
                head.extend_from_slice(&scratch[..n]);
                if head[from..].windows(4).any(|w| w == b"\r\n\r\n") || head.len() > 16 * 1024 {
                    break;
                }
            }
            stream.write_all(&answer).await?;
            stream.shutdown().await?;
            // Read what the client still sends until it closes, so closing does not reset the
            // connection before it has read the answer.
            while stream.read(&mut scratch).await? > 0 {}
            Ok::<(), io::Error>(())
        })
        .await;
    });
}

/// One connection, from its TLS handshake (if any) to its end.
async fn connection(
    shared: Arc<Shared>,
    _slot: Slot,
    stream: TcpStream,
    addr: SocketAddr,
    acceptor: Option<TlsAcceptor>,
) {
    let Some(acceptor) = acceptor else {
        let peer = Peer {
            addr,
            leader: None,
            anonymous_certificate: false,
        };
        return serve_connection(&shared, stream, peer, false).await;
    };
    let handshake = tokio::select! {
        done = tokio::time::timeout(
            shared.limits.header_timeout,
            tls::accept(&acceptor, stream, addr),
        ) => done,
        _ = shared.stop.cancelled() => return,
    };
    match handshake {
        Ok(Ok((stream, peer))) => {
            let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
            serve_connection(&shared, stream, peer, h2).await;
        }
        Ok(Err(e)) => tracing::debug!(%addr, error = %e, "TLS handshake refused"),
        Err(_) => tracing::debug!(%addr, "TLS handshake timed out"),
    }
}

async fn serve_connection<I>(shared: &Shared, io: I, peer: Peer, h2: bool)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let clock = Arc::new(Clock::new(h2, &shared.limits));
    let io = TokioIo::new(Watched::new(io, clock.clone()));
    let service = Handler {
        app: shared.app.clone(),
        peer,
        clock: clock.clone(),
        body_timeout: shared.limits.body_timeout,
    };
    if h2 {
        let builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        let conn = builder.serve_connection(io, service);
        drive(shared, &clock, conn, |c| c.graceful_shutdown()).await;
    } else {
        let mut builder = hyper::server::conn::http1::Builder::new();
        // This layer times heads from their first byte (see the module doc).
        builder.header_read_timeout(None);
        let conn = builder.serve_connection(io, service);
        drive(shared, &clock, conn, |c| c.graceful_shutdown()).await;
    }
}

/// Poll `conn` until it ends, closing it when one of its deadlines passes and telling it to
/// finish when the host stops.
async fn drive<C, F>(shared: &Shared, clock: &Clock, conn: C, graceful_shutdown: F)
where
    C: Future<Output = Result<(), hyper::Error>>,
    F: Fn(Pin<&mut C>),
{
    let mut conn = std::pin::pin!(conn);
    let mut stopping = false;
    // One timer for the connection's life, moved when its deadline moves: a request on a
    // kept-alive connection sets no timer of its own (issue 35 decision 4).
    let sleep = tokio::time::sleep_until(Instant::now());
    let mut sleep = std::pin::pin!(sleep);
    loop {
        let armed = match clock.arm() {
            Some((at, _)) => {
                if sleep.deadline() != at {
                    sleep.as_mut().reset(at);
                }
                true
            }
            None => false,
        };
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!(error = %e, "a connection ended with an error");
                }
                return;
            }
            _ = clock.changed.notified() => {}
            _ = sleep.as_mut(), if armed => match clock.next() {
                Some((at, why)) if at <= Instant::now() => match why {
                    Expiry::Idle => {
                        graceful_shutdown(conn.as_mut());
                        clock.closing();
                    }
                    Expiry::Closing => return,
                    Expiry::Header | Expiry::Write => {
                        shared.stats.timed_out.fetch_add(1, Ordering::Relaxed);
                        tracing::debug!(?why, "closing a connection whose client is too slow");
                        return;
                    }
                },
                // It moved on meanwhile (a later deadline, armed on the next turn).
                _ => {}
            },
            _ = shared.stop.cancelled(), if !stopping => {
                stopping = true;
                graceful_shutdown(conn.as_mut());
                clock.closing();
            }
        }
    }
}

/// Which deadline of a connection passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expiry {
    /// No request for `idle_timeout`: close it gracefully.
    Idle,
    /// Told to close, and it has not within [`CLOSE_GRACE`].
    Closing,
    /// A request head took longer than `header_timeout`.
    Header,
    /// Writing stayed blocked for `write_timeout`.
    Write,
}

/// What a connection is doing, and since when: enough to tell its next deadline.
///
/// The connection's task sleeps until the deadline it last armed ([`Clock::arm`]); a change
/// that brings a deadline nearer than that wakes it to arm again, and one that moves it later
/// (a request ending on a kept-alive connection, the next request's head) does not: the armed
/// deadline then passes early, the task finds the real one later and arms that. So a request
/// wakes nothing and moves no timer in the usual case (issue 35 decision 4).
struct Clock {
    h2: bool,
    limits: HttpLimits,
    timing: Mutex<Timing>,
    /// Told when a deadline came nearer than the armed one.
    changed: Notify,
    /// Set while writing is blocked, so unblocked writes need no lock.
    blocked: AtomicBool,
    /// A request body was dropped before its end (the client may still be sending it).
    unread: Arc<AtomicBool>,
}

struct Timing {
    /// Requests whose answers are not finished.
    in_flight: usize,
    /// When the last request ended (or the connection began).
    idle_since: Instant,
    /// When the first byte of a request head arrived, until the request starts.
    head_since: Option<Instant>,
    write_blocked_since: Option<Instant>,
    closing_since: Option<Instant>,
    /// The deadline the connection's task sleeps until (`None`: none).
    armed: Option<Instant>,
}

impl Timing {
    /// Whether a deadline at `since + after` comes before the armed one (the task must wake to
    /// arm it).
    fn nearer(&self, since: Instant, after: Duration) -> bool {
        match since.checked_add(after) {
            Some(at) => self.armed.is_none_or(|armed| at < armed),
            None => false,
        }
    }
}

impl Clock {
    fn new(h2: bool, limits: &HttpLimits) -> Self {
        Clock {
            h2,
            limits: limits.clone(),
            timing: Mutex::new(Timing {
                in_flight: 0,
                idle_since: Instant::now(),
                head_since: None,
                write_blocked_since: None,
                closing_since: None,
                armed: None,
            }),
            changed: Notify::new(),
            blocked: AtomicBool::new(false),
            unread: Arc::new(AtomicBool::new(false)),
        }
    }

    fn timing(&self) -> MutexGuard<'_, Timing> {
        self.timing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes arrived. On HTTP/1.1 with no request under way, they begin a request head. (h2
    /// frames arrive on an idle connection too, pings and window updates; a half-sent request
    /// there is bounded by the idle timeout, as no request has started.)
    fn read(&self) {
        if self.h2 {
            return;
        }
        let mut t = self.timing();
        if t.in_flight == 0 && t.head_since.is_none() {
            let now = Instant::now();
            t.head_since = Some(now);
            if t.nearer(now, self.limits.header_timeout) {
                drop(t);
                self.changed.notify_one();
            }
        }
    }

    fn write_blocked(&self) {
        if !self.blocked.swap(true, Ordering::Relaxed) {
            let mut t = self.timing();
            let now = Instant::now();
            t.write_blocked_since = Some(now);
            if t.nearer(now, self.limits.write_timeout) {
                drop(t);
                self.changed.notify_one();
            }
        }
    }

    fn write_moved(&self) {
        if self.blocked.swap(false, Ordering::Relaxed) {
            self.timing().write_blocked_since = None;
        }
    }

    fn request_started(self: &Arc<Self>) -> Busy {
        let mut t = self.timing();
        t.in_flight += 1;
        t.head_since = None;
        Busy(self.clone())
    }

    fn closing(&self) {
        let mut t = self.timing();
        if t.closing_since.is_none() {
            t.closing_since = Some(Instant::now());
        }
    }

    /// The nearest deadline, and what passes then, now armed: the connection's task sleeps
    /// until it.
    fn arm(&self) -> Option<(Instant, Expiry)> {
        let mut t = self.timing();
        let next = Self::next_of(&t, &self.limits);
        t.armed = next.map(|(at, _)| at);
        next
    }

    /// The nearest deadline, and what passes then.
    fn next(&self) -> Option<(Instant, Expiry)> {
        Self::next_of(&self.timing(), &self.limits)
    }

    fn next_of(t: &Timing, limits: &HttpLimits) -> Option<(Instant, Expiry)> {
        let mut next: Option<(Instant, Expiry)> = None;
        let mut consider = |since: Instant, after: Duration, why: Expiry| {
            // A deadline too far to represent never comes.
            if let Some(at) = since.checked_add(after)
                && next.is_none_or(|(n, _)| at < n)
            {
                next = Some((at, why));
            }
        };
        if let Some(since) = t.write_blocked_since {
            consider(since, limits.write_timeout, Expiry::Write);
        }
        if t.in_flight == 0 {
            if let Some(since) = t.closing_since {
                consider(since, CLOSE_GRACE, Expiry::Closing);
            }
            match t.head_since {
                Some(since) => consider(since, limits.header_timeout, Expiry::Header),
                None if t.closing_since.is_none() => {
                    consider(t.idle_since, limits.idle_timeout, Expiry::Idle)
                }
                None => {}
            }
        }
        next
    }
}

/// A request under way, until its answer is finished (or dropped).
struct Busy(Arc<Clock>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut t = self.0.timing();
        t.in_flight = t.in_flight.saturating_sub(1);
        if t.in_flight == 0 {
            let now = Instant::now();
            t.idle_since = now;
            if t.nearer(now, self.0.limits.idle_timeout) {
                drop(t);
                self.0.changed.notify_one();
            }
        }
    }
}

/// The connection's stream, telling its clock when bytes arrive and when writing blocks.
struct Watched<I> {
    io: I,
    clock: Arc<Clock>,
    shut: bool,
    linger: Option<Pin<Box<Sleep>>>,
}

impl<I> Watched<I> {
    fn new(io: I, clock: Arc<Clock>) -> Self {
        Watched {
            io,
            clock,
            shut: false,
            linger: None,
        }
    }

    fn wrote<T>(&self, polled: Poll<T>) -> Poll<T> {
        match polled {
            Poll::Pending => self.clock.write_blocked(),
            Poll::Ready(_) => self.clock.write_moved(),
        }
        polled
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.clock.read();
        }
        polled
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write(cx, buf);
        this.wrote(polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.wrote(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.io).poll_flush(cx);
        this.wrote(polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.shut {
            ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
            this.shut = true;
        }
        if this.clock.h2 || !this.clock.unread.load(Ordering::Relaxed) {
            return Poll::Ready(Ok(()));
        }
        // A request body was left unread and the client may still be sending it: read and
        // drop it for a moment (see LINGER).
        let linger = this
            .linger
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(LINGER)));
        let mut scratch = [0u8; 8192];
        loop {
            if linger.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.io).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) if !buf.filled().is_empty() => {}
                // Closed by the client, or broken: nothing left to wait for.
                Poll::Ready(_) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// The service of one connection: the router, with the peer as `ConnectInfo`, request bodies
/// under the body timeout, and each request counted until its answer is finished.
struct Handler {
    app: TowerToHyperService<Router>,
    peer: Peer,
    clock: Arc<Clock>,
    body_timeout: Duration,
}

impl hyper::service::Service<Request<Incoming>> for Handler {
    type Response = Response<Answer>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Response<Answer>, Infallible>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let busy = self.clock.request_started();
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(ConnectInfo(self.peer.clone()));
        let body = Deadline::new(body, self.body_timeout, self.clock.unread.clone());
        let answer = self.app.call(Request::from_parts(parts, Body::new(body)));
        let (h1, unread) = (!self.clock.h2, self.clock.unread.clone());
        Box::pin(async move {
            let mut response = match answer.await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            // An HTTP/1.1 connection whose request body was left unread is closed after the
            // answer (the rest of the body would read as the next request). Say so: a client
            // that reuses the connection for its next request would find it closed unanswered.
            if h1 && unread.load(Ordering::Relaxed) {
                response.headers_mut().insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("close"),
                );
            }
            Ok(response.map(|body| Answer { body, _busy: busy }))
        })
    }
}

/// An answer's body; the request is under way until it is finished or dropped.
struct Answer {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> HttpLimits {
        HttpLimits {
            header_timeout: Duration::from_secs(1),
            body_timeout: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(3),
            write_timeout: Duration::from_secs(4),
            max_connections: 1,
        }
    }

    /// The clock's next deadline is `want`: `why`, `d` after a moment between `before` and
    /// `after`.
    fn assert_next(
        clock: &Clock,
        before: Instant,
        after: Instant,
        want: Option<(Duration, Expiry)>,
    ) {
        match (clock.next(), want) {
            (None, None) => {}
            (Some((at, why)), Some((d, want))) => {
                assert_eq!(why, want);
                assert!(
                    before + d <= at && at <= after + d,
                    "{why:?} at the wrong time"
                );
            }
            (next, want) => panic!("next {next:?}, wanted {want:?}"),
        }
    }

    /// Do `act`; then the clock's next deadline is `want`, counted from the moment of `act`.
    fn check(clock: &Clock, act: impl FnOnce(), want: Option<(Duration, Expiry)>) {
        let before = Instant::now();
        act();
        assert_next(clock, before, Instant::now(), want);
    }

    #[tokio::test]
    async fn deadlines_follow_what_the_connection_does() {
        let s = Duration::from_secs;
        // New: idle, from now.
        let before = Instant::now();
        let clock = Arc::new(Clock::new(false, &limits()));
        assert_next(&clock, before, Instant::now(), Some((s(3), Expiry::Idle)));
        // The first byte of a head: the header timeout, from then.
        check(&clock, || clock.read(), Some((s(1), Expiry::Header)));
        // More bytes of it do not move it.
        let header = clock.next();
        clock.read();
        assert_eq!(clock.next(), header);
        // A request under way has no deadline of its own...
        let mut busy = None;
        check(&clock, || busy = Some(clock.request_started()), None);
        // ...and bytes of its body are not a new head...
        check(&clock, || clock.read(), None);
        // ...but writing its answer may not stay blocked.
        check(
            &clock,
            || clock.write_blocked(),
            Some((s(4), Expiry::Write)),
        );
        check(&clock, || clock.write_moved(), None);
        // Answered: idle, from then.
        check(&clock, || drop(busy.take()), Some((s(3), Expiry::Idle)));
        // Told to close: a short grace instead.
        check(
            &clock,
            || clock.closing(),
            Some((CLOSE_GRACE, Expiry::Closing)),
        );
    }

    /// Whether the connection's task was told to arm again (a permit is waiting).
    async fn told(clock: &Clock) -> bool {
        tokio::time::timeout(Duration::ZERO, clock.changed.notified())
            .await
            .is_ok()
    }

    /// Only a deadline nearer than the armed one wakes the connection's task: requests one
    /// after another on a kept-alive connection wake it once, for the first head.
    #[tokio::test]
    async fn only_a_nearer_deadline_wakes_the_connection() {
        let clock = Arc::new(Clock::new(false, &limits()));
        assert_eq!(clock.arm().map(|(_, why)| why), Some(Expiry::Idle));
        clock.read();
        assert!(told(&clock).await, "a head is timed from its first byte");
        assert_eq!(clock.arm().map(|(_, why)| why), Some(Expiry::Header));
        for _ in 0..3 {
            let busy = clock.request_started();
            drop(busy);
            clock.read();
            assert!(
                !told(&clock).await,
                "later deadlines wait for the armed one"
            );
        }
        // The armed deadline passes early: the real one is later, and armed then.
        let armed = clock.timing().armed;
        let (real, why) = clock.arm().unwrap();
        assert_eq!(why, Expiry::Header);
        assert!(Some(real) > armed);
        // Nothing armed while a request runs: a blocked write arms its deadline...
        let busy = clock.request_started();
        assert_eq!(clock.arm(), None);
        clock.write_blocked();
        assert!(told(&clock).await);
        assert_eq!(clock.arm().map(|(_, why)| why), Some(Expiry::Write));
        clock.write_moved();
        // ...and the request's end the idle deadline, nearer than the write's.
        drop(busy);
        assert!(told(&clock).await);
        assert_eq!(clock.arm().map(|(_, why)| why), Some(Expiry::Idle));
    }

    #[tokio::test]
    async fn h2_frames_on_an_idle_connection_are_not_a_head() {
        let clock = Clock::new(true, &limits());
        let idle = clock.next();
        assert_eq!(idle.map(|(_, why)| why), Some(Expiry::Idle));
        clock.read();
        assert_eq!(clock.next(), idle);
    }

    #[tokio::test]
    async fn a_deadline_too_far_to_represent_never_comes() {
        let endless = HttpLimits {
            idle_timeout: Duration::MAX,
            ..limits()
        };
        assert_eq!(Clock::new(false, &endless).next(), None);
    }
}
