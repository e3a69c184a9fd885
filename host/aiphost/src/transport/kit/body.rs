//! Request bodies: every body arrives within the body timeout (the connection layer wraps it
//! in a [`Deadline`]) and is read against a limit the route chooses ([`read`]), so the AIP and
//! the admin routes refuse a slow or oversized body the same way, each in its own error shape.

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// Why a request body was not taken.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Larger than the route's limit (announced, or found while reading).
    #[error("the request body is larger than the {limit} bytes this host accepts here")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    #[error("the request body did not arrive within {} ms", .timeout.as_millis())]
    /// Not all there within the body timeout.
    TimedOut {
        /// The body timeout.
        timeout: Duration,
    },
    #[error("the request body could not be read: {0}")]
    /// The connection failed while the body was read.
    Read(String),
}

impl BodyError {
    /// What a client needs to know: the reason, and the limit or the timeout it ran into.
    pub fn details(&self) -> serde_json::Value {
        let mut details = serde_json::json!({"reason": self.to_string()});
        match self {
            BodyError::TooLarge { limit } => details["limitBytes"] = (*limit).into(),
            BodyError::TimedOut { timeout } => {
                details["timeoutMs"] = u64::try_from(timeout.as_millis())
                    .unwrap_or(u64::MAX)
                    .into()
            }
            BodyError::Read(_) => {}
        }
        details
    }
}

/// The error a [`Deadline`] body ends with once its time is up.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within {} ms", .0.as_millis())]
pub struct BodyTimedOut(pub Duration);

/// At most `limit` bytes of `body`. A body whose announced length is over the limit is refused
/// before any of it is read.
pub async fn read(body: Body, limit: usize) -> Result<Bytes, BodyError> {
    let announced = body.size_hint().lower();
    if !usize::try_from(announced).is_ok_and(|n| n <= limit) {
        return Err(BodyError::TooLarge { limit });
    }
    // The announced length is within the limit; never reserve more than a little up front.
    let reserve = usize::try_from(announced).unwrap_or(0).min(64 * 1024);
    let mut bytes = BytesMut::with_capacity(reserve);
    let mut body = body;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            let e = e.into_inner();
            match e.downcast_ref::<BodyTimedOut>() {
                Some(BodyTimedOut(timeout)) => BodyError::TimedOut { timeout: *timeout },
                None => BodyError::Read(e.to_string()),
            }
        })?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > limit {
                return Err(BodyError::TooLarge { limit });
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes.freeze())
}

/// A request body that must end within a time; it also tells its connection when it is dropped
/// before its end (the client may still be sending, so closing needs care).
pub struct Deadline<B> {
    inner: B,
    timeout: Duration,
    deadline: Instant,
    /// Made only when the body has to wait (most bodies never do).
    sleep: Option<Pin<Box<Sleep>>>,
    ended: bool,
    unread: Arc<AtomicBool>,
}

impl<B: HttpBody> Deadline<B> {
    /// `inner`, which must end within `timeout` from now; `unread` is set if it is dropped
    /// before its end.
    pub fn new(inner: B, timeout: Duration, unread: Arc<AtomicBool>) -> Self {
        Deadline {
            ended: inner.is_end_stream(),
            inner,
            timeout,
            deadline: Instant::now() + timeout,
            sleep: None,
            unread,
        }
    }
}

impl<B> HttpBody for Deadline<B>
where
    B: HttpBody + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.ended = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(frame)) => {
                this.ended = this.inner.is_end_stream();
                Poll::Ready(Some(frame.map_err(Into::into)))
            }
            Poll::Pending => {
                let deadline = this.deadline;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(BodyTimedOut(this.timeout).into()))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ended
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for Deadline<B> {
    fn drop(&mut self) {
        if !self.ended {
            self.unread.store(true, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::StreamBody;

    fn chunks(n: usize, size: usize) -> Body {
        let frames = (0..n)
            .map(move |_| Ok::<_, std::io::Error>(Frame::data(Bytes::from(vec![b'x'; size]))));
        Body::new(StreamBody::new(futures::stream::iter(frames)))
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let bytes = read(Body::from(vec![1u8; 1000]), 1000).await.unwrap();
        assert_eq!(bytes.len(), 1000);
        let bytes = read(chunks(10, 100), 1000).await.unwrap();
        assert_eq!(bytes.len(), 1000);
    }

    #[tokio::test]
    async fn an_announced_or_streamed_body_over_the_limit_is_refused() {
        let e = read(Body::from(vec![1u8; 1001]), 1000).await.unwrap_err();
        assert!(matches!(e, BodyError::TooLarge { limit: 1000 }), "{e}");
        assert_eq!(e.details()["limitBytes"], 1000);
        let e = read(chunks(11, 100), 1000).await.unwrap_err();
        assert!(matches!(e, BodyError::TooLarge { limit: 1000 }), "{e}");
    }

    #[tokio::test]
    async fn a_body_that_does_not_end_in_time_times_out_and_counts_as_unread() {
        let unread = Arc::new(AtomicBool::new(false));
        let never = StreamBody::new(futures::stream::pending::<
            Result<Frame<Bytes>, std::io::Error>,
        >());
        let body = Deadline::new(never, Duration::from_millis(50), unread.clone());
        let e = read(Body::new(body), 1000).await.unwrap_err();
        assert!(matches!(e, BodyError::TimedOut { .. }), "{e}");
        assert_eq!(e.details()["timeoutMs"], 50);
        assert!(unread.load(Ordering::Relaxed), "dropped before its end");

        let unread = Arc::new(AtomicBool::new(false));
        let whole = Deadline::new(
            http_body_util::Full::new(Bytes::from_static(b"{}")),
            Duration::from_millis(50),
            unread.clone(),
        );
        assert_eq!(read(Body::new(whole), 1000).await.unwrap(), "{}");
        assert!(!unread.load(Ordering::Relaxed));
    }
}
