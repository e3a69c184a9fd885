//! The admin API's tasks (what the console's tasks page shows, and what a script can read):
//! `GET /admin/me`, `GET /admin/tasks` (the caller's partners' tasks across all their Leaders,
//! newest change first, paged), `GET /admin/agents/{agent}/tasks/{task}?leader=` (one task as
//! the engine holds it) and `POST .../cancel?leader=` (a cancel on the Leader's behalf, through
//! the same engine path as the Leader's own). The timeline is `timeline.rs`.
//!
//! The operator sees every hosted partner, a tenant its own: another tenant's partner, and its
//! tasks, answer 404 exactly as ones that do not exist.

use super::admin::{AdminError, AdminPath, principal};
use super::endpoints::Endpoints;
use crate::agent::Agent;
use crate::model::{DataItem, HistoryFilter, Inbound, LeaderCommand, TaskState};
use crate::task::{EngineError, OverviewPosition, OverviewQuery, Stuck, TaskView};
use crate::tenant::Principal;
use axum::Json;
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// A page's size when none is asked for.
const DEFAULT_LIMIT: usize = 50;
/// The longest cursor taken (one is a task's position: two ids, a Leader and an instant).
const MAX_CURSOR_BYTES: usize = 2048;
/// The longest filter value taken (a Leader's AIC, a session).
const MAX_FILTER_BYTES: usize = 1024;

/// The query of a route, its parameters as given (a query that does not parse is 400).
pub(super) type Params = Result<Query<HashMap<String, String>>, QueryRejection>;

/// The routes of the admin API's tasks (the timeline's are `timeline.rs`'s).
pub(super) fn routes() -> Router<Endpoints> {
    Router::new()
        .route("/admin/me", get(me))
        .route("/admin/tasks", get(list))
        .route("/admin/agents/{agent}/tasks/{task}", get(show))
        .route("/admin/agents/{agent}/tasks/{task}/cancel", post(cancel))
}

/// `GET /admin/me`: who the token is.
pub(super) async fn me(State(state): State<Endpoints>, headers: HeaderMap) -> Response {
    match principal(&state.tenancy, &headers) {
        Ok(Principal::Operator) => Json(json!({"principal": "operator"})).into_response(),
        Ok(Principal::Tenant(t)) => {
            Json(json!({"principal": "tenant", "tenant": t})).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// A bad request: `message` says what to send instead.
pub(super) fn bad_request(message: impl Into<String>) -> AdminError {
    AdminError::new(StatusCode::BAD_REQUEST, "bad-request", message)
}

/// The parameters of `query`, only those of `known`.
pub(super) fn params(query: Params, known: &[&str]) -> Result<HashMap<String, String>, AdminError> {
    let Query(params) = query.map_err(|e| bad_request(format!("the query is not valid: {e}")))?;
    if let Some(unknown) = params.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(bad_request(format!(
            "unknown query parameter {unknown:?}; this route takes {}",
            known.join(", ")
        )));
    }
    for (name, value) in &params {
        let limit = if name == "cursor" {
            MAX_CURSOR_BYTES
        } else {
            MAX_FILTER_BYTES
        };
        if value.len() > limit {
            return Err(bad_request(format!(
                "{name} is {} bytes long; at most {limit} are taken",
                value.len()
            )));
        }
    }
    Ok(params)
}

/// The hosted partners `who` sees: every one for the operator, a tenant's own for it.
fn visible_agents(state: &Endpoints, who: &Principal) -> Vec<Arc<Agent>> {
    let mut agents: Vec<Arc<Agent>> = state
        .agents
        .list()
        .into_iter()
        .filter(|a| sees(who, a))
        .collect();
    agents.sort_by(|a, b| a.id().cmp(b.id()));
    agents
}

fn sees(who: &Principal, agent: &Agent) -> bool {
    match who {
        Principal::Operator => true,
        Principal::Tenant(t) => agent.tenant.as_ref().is_some_and(|s| s.id == *t),
    }
}

/// Hosted partner `agent`, if `who` sees it; 404 otherwise (another tenant's partner looks
/// like one that does not exist).
pub(super) fn visible_agent(
    state: &Endpoints,
    who: &Principal,
    agent: &str,
) -> Result<Arc<Agent>, AdminError> {
    state
        .agents
        .get(agent)
        .filter(|a| sees(who, a))
        .ok_or_else(|| {
            AdminError::new(
                StatusCode::NOT_FOUND,
                "not-found",
                format!("no partner {agent:?} is hosted here for you"),
            )
        })
}

/// The task's `leader` parameter: its Leader's namespace (absent or empty: the shared one).
pub(super) fn leader_param(params: &HashMap<String, String>) -> Option<String> {
    params.get("leader").filter(|l| !l.is_empty()).cloned()
}

/// An engine refusal of an admin task route.
pub(super) fn engine_error(e: EngineError, task: &str) -> AdminError {
    match e {
        EngineError::TaskNotFound { .. } | EngineError::InvalidInput(_) => AdminError::new(
            StatusCode::NOT_FOUND,
            "not-found",
            format!(
                "no task {task:?} of this partner in that Leader's namespace (give ?leader= the Leader's id for a partner whose Leaders authenticate)"
            ),
        ),
        EngineError::TaskEnded { state, .. } => AdminError::new(
            StatusCode::CONFLICT,
            "task-ended",
            format!(
                "task {task:?} has already ended ({}); an ended task cannot be canceled",
                state.as_str()
            ),
        ),
        other => {
            tracing::error!(error = %other, task, "an admin task request failed");
            AdminError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("the host could not read or change the task: {other}"),
            )
        }
    }
}

/// A task's summary: what a listing shows of it.
pub(super) fn summary(view: &TaskView, stuck: Option<Stuck>) -> Value {
    let task = &view.task;
    json!({
        "agent": view.key.agent,
        "leader": view.key.leader,
        "id": task.id,
        "state": task.status.state.as_str(),
        "session": task.session_id,
        "created": view.created().to_utc_z(),
        "updated": task.status.state_changed_at.to_utc_z(),
        "stuck": stuck.map(Stuck::as_str),
    })
}

/// `GET /admin/tasks?agent=&state=&leader=&session=&stuck=true&limit=&cursor=`.
pub(super) async fn list(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    query: Params,
) -> Result<Response, AdminError> {
    let who = principal(&state.tenancy, &headers)?;
    let params = params(
        query,
        &[
            "agent", "state", "leader", "session", "stuck", "limit", "cursor",
        ],
    )?;
    let agents = match params.get("agent").filter(|a| !a.is_empty()) {
        Some(agent) => vec![visible_agent(&state, &who, agent)?],
        None => visible_agents(&state, &who),
    };
    let query = OverviewQuery {
        agents,
        leader: leader_param(&params),
        state: params
            .get("state")
            .filter(|s| !s.is_empty())
            .map(String::as_str)
            .map(parse_state)
            .transpose()?,
        session: params.get("session").filter(|s| !s.is_empty()).cloned(),
        stuck: match params.get("stuck").map(String::as_str) {
            None | Some("" | "false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(bad_request(format!(
                    "stuck must be true or false, not {other:?}"
                )));
            }
        },
        limit: parse_limit(params.get("limit").map(String::as_str))?,
        after: params
            .get("cursor")
            .filter(|c| !c.is_empty())
            .map(String::as_str)
            .map(decode_cursor)
            .transpose()?,
    };
    let page = state
        .engine
        .overview(&query)
        .await
        .map_err(|e| engine_error(e, ""))?;
    let tasks: Vec<Value> = page
        .tasks
        .iter()
        .map(|(view, stuck)| summary(view, *stuck))
        .collect();
    Ok(Json(json!({
        "tasks": tasks,
        "next_cursor": page.next.as_ref().map(encode_cursor),
    }))
    .into_response())
}

fn parse_state(text: &str) -> Result<TaskState, AdminError> {
    TaskState::ALL
        .into_iter()
        .find(|s| s.as_str() == text)
        .ok_or_else(|| {
            let known: Vec<&str> = TaskState::ALL.iter().map(|s| s.as_str()).collect();
            bad_request(format!(
                "unknown state {text:?}; the states are {}",
                known.join(", ")
            ))
        })
}

fn parse_limit(text: Option<&str>) -> Result<usize, AdminError> {
    let max = crate::task::MAX_OVERVIEW_PAGE;
    match text {
        None | Some("") => Ok(DEFAULT_LIMIT),
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(bad_request(format!(
                "limit must be a whole number from 1 to {max}, not {text:?}"
            ))),
        },
    }
}

/// A cursor: the page's last position, as JSON in URL-safe base64 (opaque to clients).
fn encode_cursor(at: &OverviewPosition) -> String {
    let json = json!([at.changed_ms, at.agent, at.leader, at.task_id]);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
}

fn decode_cursor(text: &str) -> Result<OverviewPosition, AdminError> {
    let bad = || bad_request("cursor is not one this listing gave; send next_cursor as it came");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| bad())?;
    let (changed_ms, agent, leader, task_id): (i64, String, Option<String>, String) =
        serde_json::from_slice(&bytes).map_err(|_| bad())?;
    Ok(OverviewPosition {
        changed_ms,
        agent,
        leader,
        task_id,
    })
}

/// `GET /admin/agents/{agent}/tasks/{task}?leader=L`: one task as the engine holds it.
pub(super) async fn show(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, task)): AdminPath<(String, String)>,
    query: Params,
) -> Result<Response, AdminError> {
    let who = principal(&state.tenancy, &headers)?;
    let params = params(query, &["leader"])?;
    let agent = visible_agent(&state, &who, &agent)?;
    let leader = leader_param(&params);
    let view = state
        .engine
        .inspect(&agent, leader.as_deref(), &task)
        .await
        .map_err(|e| engine_error(e, &task))?;
    let stuck = view.stuck(
        agent.code.invocation_limit(),
        crate::model::Timestamp::now_ms(),
    );
    Ok(Json(json!({"task": detail(&view, stuck)})).into_response())
}

/// Everything the engine holds of a task that an operator may want, door-neutral.
fn detail(view: &TaskView, stuck: Option<Stuck>) -> Value {
    let task = &view.task;
    let mut out = summary(view, stuck);
    let statuses: Vec<Value> = task
        .status_history
        .iter()
        .map(|s| json!({"state": s.state.as_str(), "at": s.state_changed_at.to_utc_z()}))
        .collect();
    let limits = &view.limits;
    let fields = json!({
        "sender": task.leader_id,
        "group": task.group_id,
        "status": task.status,
        "products": task.products,
        "history_len": task.commands.len(),
        "commands": task.commands,
        "statuses": statuses,
        "deadline": view.deadline_ms.map(ms_to_rfc3339),
        "limits": {
            "response_timeout_ms": limits.response_timeout_ms,
            "awaiting_input_timeout_ms": limits.awaiting_input_timeout_ms,
            "awaiting_completion_timeout_ms": limits.awaiting_completion_timeout_ms,
            "max_products_bytes": limits.max_products_bytes,
        },
        "products_bytes": view.products_bytes,
        "activity": {"events": view.activity.events, "bytes": view.activity.bytes},
        "agent_version": view.agent_version,
        "last_event_seq": view.last_event_seq,
        "completes_on_result": task.completes_on_result,
    });
    if let (Value::Object(out), Value::Object(fields)) = (&mut out, fields) {
        out.extend(fields);
    }
    out
}

fn ms_to_rfc3339(ms: i64) -> String {
    crate::model::Timestamp::parse("1970-01-01T00:00:00Z")
        .map(|epoch| epoch.plus_millis(ms.max(0) as u64).to_utc_z())
        .unwrap_or_default()
}

/// `POST /admin/agents/{agent}/tasks/{task}/cancel?leader=L`: cancel the task on its Leader's
/// behalf (a Leader cancel, marked as the admin's: its command id `admin-cancel-…` and its
/// text say who); 409 if it has ended.
pub(super) async fn cancel(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, task)): AdminPath<(String, String)>,
    query: Params,
) -> Result<Response, AdminError> {
    let who = principal(&state.tenancy, &headers)?;
    let params = params(query, &["leader"])?;
    let agent = visible_agent(&state, &who, &agent)?;
    let leader = leader_param(&params);
    let by = match &who {
        Principal::Operator => "the operator".to_string(),
        Principal::Tenant(t) => format!("tenant {t}'s admin"),
    };
    let inbound = Inbound {
        form: None,
        history: Ok(HistoryFilter::default()),
        command: LeaderCommand {
            id: format!("admin-cancel-{}", uuid::Uuid::new_v4()),
            data_items: vec![DataItem::text(format!(
                "canceled by {by} through the admin API"
            ))],
            ..LeaderCommand::cancel_of(&task)
        },
        owner: leader.clone(),
        // Strict: an ended task is refused (409), never recorded as canceled again.
        policy: crate::model::CommandPolicy {
            strict: true,
            ..Default::default()
        },
    };
    state
        .engine
        .command(&agent, inbound, None)
        .await
        .map_err(|e| engine_error(e, &task))?;
    let view = state
        .engine
        .inspect(&agent, leader.as_deref(), &task)
        .await
        .map_err(|e| engine_error(e, &task))?;
    let stuck = view.stuck(
        agent.code.invocation_limit(),
        crate::model::Timestamp::now_ms(),
    );
    Ok(Json(summary(&view, stuck)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_foreign_ones_are_refused() {
        let at = OverviewPosition {
            changed_ms: 1_700_000_000_123,
            agent: "echo".into(),
            leader: Some("L\u{1f}x".into()),
            task_id: "t/1".into(),
        };
        let text = encode_cursor(&at);
        assert!(!text.contains('='), "{text}");
        assert_eq!(decode_cursor(&text).ok(), Some(at));
        assert!(decode_cursor("not a cursor").is_err());
        assert!(
            decode_cursor(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("[1]")).is_err()
        );
    }

    #[test]
    fn limits_and_states_are_read_strictly() {
        assert_eq!(parse_limit(None).ok(), Some(DEFAULT_LIMIT));
        assert_eq!(parse_limit(Some("200")).ok(), Some(200));
        for bad in ["0", "201", "-1", "ten", "1.5"] {
            assert!(parse_limit(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            parse_state("awaiting-input").ok(),
            Some(TaskState::AwaitingInput)
        );
        assert!(parse_state("AwaitingInput").is_err());
        assert!(parse_state("sleeping").is_err());
    }
}
