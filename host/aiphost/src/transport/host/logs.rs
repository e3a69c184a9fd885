//! `GET /admin/agents/{agent}/logs`: a partner's own log lines, for the operator (any partner)
//! or its tenant (its own; another's partner is 404, as one that does not exist).
//!
//! Query: `since=SEQ` (lines after it, oldest first; without it the newest `limit`),
//! `level=L` (that level and above), `task=ID` and `leader=AIC` (the Leader's task id, the
//! Leader), `limit=N` ([`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]). The answer is
//! `{"lines": [record...], "next": SEQ}`: ask again with `since=next` for what came after.
//!
//! With `follow=1` the answer is an SSE stream: `event: log`, `id: SEQ`, the record as data,
//! from the same start (or after the `Last-Event-ID` of a reconnecting client), then each new
//! line as it comes. A follower that falls behind reads on from the ring; lines the ring no
//! longer holds are told of with `event: lagged` (`{"missed": N, "after": SEQ}`). At most
//! [`MAX_FOLLOWERS_PER_PARTNER`] follow one partner at once (429 above); the stream ends when
//! the partner's log goes (unpublished, tenant removed).

use super::admin::{self, AdminError, AdminPath};
use super::endpoints::Endpoints;
use crate::partner_logs::MAX_FOLLOWERS_PER_PARTNER;
use crate::partner_logs::partner::{FollowerGuard, PartnerLogState, Subscription};
use crate::partner_logs::record::{LogLevel, LogRecord};
use crate::tenant::{Principal, TenancyError};
use crate::transport::kit::sse;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::sync::broadcast::error::RecvError;

/// Lines in an answer when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 200;
/// The most lines in one answer (a larger `limit` is taken as this).
pub const MAX_LIMIT: usize = 2000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LogQuery {
    since: Option<u64>,
    level: Option<String>,
    task: Option<String>,
    leader: Option<String>,
    limit: Option<usize>,
    follow: Option<String>,
}

/// Which lines a reader wants.
#[derive(Clone, Debug, Default)]
struct Filter {
    level: Option<LogLevel>,
    task: Option<String>,
    leader: Option<String>,
}

impl Filter {
    fn matches(&self, record: &LogRecord) -> bool {
        self.level.is_none_or(|l| record.level >= l)
            && self
                .task
                .as_ref()
                .is_none_or(|t| record.task.as_ref() == Some(t))
            && self
                .leader
                .as_ref()
                .is_none_or(|l| record.leader.as_ref() == Some(l))
    }
}

fn invalid(field: &str, reason: impl Into<String>) -> AdminError {
    TenancyError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
    .into()
}

/// The partner's log lines (see the module doc).
pub(super) async fn partner_logs(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
    query: Result<Query<LogQuery>, QueryRejection>,
) -> Result<Response, AdminError> {
    let who = admin::principal(&state.tenancy, &headers)?;
    let Query(query) = query.map_err(|e| invalid("query", e.body_text()))?;
    let level = match &query.level {
        Some(name) => Some(LogLevel::parse(name).ok_or_else(|| {
            invalid(
                "level",
                format!("{name:?} is not trace, debug, info, warn or error"),
            )
        })?),
        None => None,
    };
    let follow = match query.follow.as_deref() {
        None | Some("0" | "false") => false,
        Some("1" | "true" | "") => true,
        Some(other) => return Err(invalid("follow", format!("{other:?} is not 1 or 0"))),
    };
    let filter = Filter {
        level,
        task: query.task,
        leader: query.leader,
    };
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let log = log_of(&state, &who, &agent)?;
    if !follow {
        return Ok(list(&log, &filter, query.since, limit));
    }
    let resume =
        sse::resume_after(&headers).map_err(|e| invalid("Last-Event-ID", e.to_string()))?;
    let Some(guard) = log.admit_follower(MAX_FOLLOWERS_PER_PARTNER) else {
        return Err(AdminError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too-many-followers",
            format!(
                "{MAX_FOLLOWERS_PER_PARTNER} clients follow {agent:?}'s log already; close one, or read without follow"
            ),
        ));
    };
    let from = resume.or(query.since);
    let mut subscription = log.subscribe(from.unwrap_or(0));
    if from.is_none() {
        // Like `tail -f`: the newest lines first, not the whole ring.
        let matching: Vec<_> = subscription
            .backlog
            .drain(..)
            .filter(|r| filter.matches(r))
            .collect();
        let skip = matching.len().saturating_sub(limit);
        subscription.backlog = matching.into_iter().skip(skip).collect();
        subscription.missed = 0;
    }
    let events = follow_stream(log, subscription, filter, guard);
    Ok(Sse::new(events)
        .keep_alive(
            KeepAlive::new()
                .interval(state.http.sse_keep_alive)
                .text("keep-alive"),
        )
        .into_response())
}

/// The log of `agent` if `who` may read it: a hosted partner's (begun if it has none yet), or
/// the kept log of one no longer served; 404 for any other, a tenant's partner for another
/// tenant included.
fn log_of(
    state: &Endpoints,
    who: &Principal,
    agent: &str,
) -> Result<Arc<PartnerLogState>, AdminError> {
    let may_read = |tenant: Option<&str>| match who {
        Principal::Operator => true,
        Principal::Tenant(t) => tenant == Some(t.as_str()),
    };
    if let Some(hosted) = state.agents.get(agent) {
        if may_read(hosted.tenant.as_ref().map(|t| t.id.as_str())) {
            return Ok(state.logs.of(&hosted));
        }
    } else if let Some(log) = state.logs.existing(agent)
        && may_read(log.tenant())
    {
        return Ok(log);
    }
    Err(TenancyError::NotFound {
        what: "partner",
        id: agent.to_string(),
    }
    .into())
}

#[derive(Serialize)]
struct Lines<'a> {
    lines: Vec<&'a LogRecord>,
    next: u64,
}

/// The lines after `since` (the first `limit`), or without it the newest `limit`.
fn list(log: &PartnerLogState, filter: &Filter, since: Option<u64>, limit: usize) -> Response {
    let (records, newest) = log.after(since.unwrap_or(0));
    let matching = records.iter().map(|r| &**r).filter(|r| filter.matches(r));
    let (lines, next) = match since {
        Some(_) => {
            let lines: Vec<&LogRecord> = matching.take(limit).collect();
            // Cut short by the limit: the next page starts after the last line given.
            let next = match lines.last() {
                Some(last) if lines.len() == limit => last.seq,
                _ => newest,
            };
            (lines, next)
        }
        None => {
            let mut lines: Vec<&LogRecord> = matching.rev().take(limit).collect();
            lines.reverse();
            (lines, newest)
        }
    };
    // Serialized as it is, not through a `serde_json::Value`, which would sort the fields.
    axum::Json(Lines { lines, next }).into_response()
}

/// The state of one follower's stream.
struct Follower {
    log: Arc<PartnerLogState>,
    filter: Filter,
    backlog: VecDeque<Arc<LogRecord>>,
    live: tokio::sync::broadcast::Receiver<Arc<LogRecord>>,
    /// The seq of the last record taken (sent or filtered out).
    last: u64,
    /// Lines lost to the ring, to be told of before the next record.
    missed: u64,
    _guard: FollowerGuard,
}

fn follow_stream(
    log: Arc<PartnerLogState>,
    subscription: Subscription,
    filter: Filter,
    guard: FollowerGuard,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static {
    let follower = Follower {
        log,
        filter,
        missed: subscription.missed,
        backlog: subscription.backlog.into(),
        live: subscription.live,
        last: subscription.after,
        _guard: guard,
    };
    stream::unfold(follower, |mut f| async move {
        loop {
            if f.missed > 0 {
                let data = serde_json::json!({"missed": f.missed, "after": f.last});
                f.missed = 0;
                return Some((
                    Ok(Event::default().event("lagged").data(data.to_string())),
                    f,
                ));
            }
            if let Some(record) = f.backlog.pop_front() {
                // A record already taken (from the ring, then again live) is skipped.
                if record.seq <= f.last {
                    continue;
                }
                f.last = record.seq;
                if !f.filter.matches(&record) {
                    continue;
                }
                let data = serde_json::to_string(&*record).unwrap_or_default();
                let event = Event::default()
                    .event("log")
                    .id(record.seq.to_string())
                    .data(data);
                return Some((Ok(event), f));
            }
            let closed = f.log.closed().clone();
            tokio::select! {
                _ = closed.cancelled() => return None,
                received = f.live.recv() => match received {
                    Ok(record) => f.backlog.push_back(record),
                    // Fallen behind the channel: read on from the ring, and tell of what it
                    // no longer holds.
                    Err(RecvError::Lagged(_)) => {
                        let Subscription { backlog, missed, live, .. } = f.log.subscribe(f.last);
                        f.backlog = backlog.into();
                        f.missed = missed;
                        f.live = live;
                    }
                    Err(RecvError::Closed) => return None,
                },
            }
        }
    })
}
