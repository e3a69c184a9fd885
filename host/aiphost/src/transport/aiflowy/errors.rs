//! The AIFlowy door's errors: the one place where what the request, the engine and the quotas
//! refuse becomes an HTTP status and the protocol's JSON body (`protocol/aiflowy/error.rs`) —
//! the status and code of the refusal's kind, its facts (`refusal.rs`, the same AIP and A2A
//! send) beside them. Refusals after a stream began are `event: error` envelopes instead
//! (`protocol/aiflowy/render.rs`).

use crate::protocol::aiflowy::AiflowyError;
use crate::quota::QuotaError;
use crate::refusal::{self, Kind, Refusal};
use crate::task::EngineError;
use crate::task::forms::FormError;
use crate::transport::kit::body::BodyError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use axum::extract::rejection::QueryRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The HTTP answer of `e`: the JSON body; `WWW-Authenticate` on a 401; `Retry-After` (whole
/// seconds) on a quota or a full disk that says when.
pub(super) fn response(e: &AiflowyError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        e.body().to_string(),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    let retry_after_ms = e.error.get("retryAfterMs").and_then(Value::as_u64);
    if let (StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE, Some(ms)) =
        (status, retry_after_ms)
    {
        response.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(ms.div_ceil(1000).max(1)),
        );
    }
    response
}

/// The error of an engine failure; store details stay in the log.
pub(super) fn engine(e: EngineError) -> AiflowyError {
    of_refusal(refusal::engine(e))
}

/// The error of an engine failure on a chat turn's command, the command's item it names
/// (`dataItems[n]…`, as `field` or, for content no skill takes, `dataItem`) said as the
/// request's `field`: item 0 is the `prompt`, item n the `attachments[n-1]`.
pub(super) fn engine_on_chat(e: EngineError) -> AiflowyError {
    let mut refusal = refusal::engine(e);
    if let Some(facts) = refusal.facts.as_object_mut() {
        let named = ["field", "dataItem"]
            .into_iter()
            .find_map(|key| facts.get(key).and_then(Value::as_str))
            .and_then(request_path);
        if let Some(named) = named {
            facts.remove("dataItem");
            facts.insert("field".into(), json!(named));
        }
    }
    of_refusal(refusal)
}

/// The chat request's path of a command's item path (`dataItems[n]…`).
fn request_path(path: &str) -> Option<String> {
    let rest = path.strip_prefix("dataItems[")?;
    let (n, after) = rest.split_once(']')?;
    Some(match n.parse::<usize>().ok()? {
        0 => format!("prompt{after}"),
        n => format!("attachments[{}]{after}", n - 1),
    })
}

/// The error of an engine failure on a form submit: values that do not satisfy the schema are
/// `FORM_INVALID` with their JSON Pointer paths; a task that ended meanwhile (its form timed
/// out, say) closed the form.
pub(super) fn engine_on_submit(
    e: EngineError,
    conversation_id: &str,
    form_id: &str,
) -> AiflowyError {
    match e {
        EngineError::Form(FormError::Invalid { errors, .. }) => {
            let reason = format!("the values do not satisfy form {form_id:?}'s schema");
            let errors: Vec<Value> = errors
                .iter()
                .map(|e| json!({"path": e.path, "message": e.message}))
                .collect();
            AiflowyError::form_invalid(form_id, &reason, json!(errors))
        }
        EngineError::TaskEnded { .. } => AiflowyError::form_closed(conversation_id, form_id),
        e => {
            // The command's one item is the values (a value nested too deep, say).
            let mut refusal = refusal::engine(e);
            if let Some(field) = refusal.facts.get_mut("field")
                && let Some(rest) = field
                    .as_str()
                    .and_then(|f| f.strip_prefix("dataItems[0].data"))
            {
                *field = json!(format!("values{rest}"));
            }
            of_refusal(refusal)
        }
    }
}

/// A request over the partner's rate (its tenant's quota, or the operator's
/// `--requests-per-second`): 429 with when to retry.
pub(super) fn quota(e: &QuotaError) -> AiflowyError {
    of_refusal(refusal::quota(e))
}

/// The kit's refusal of a caller: 404 for a partner not hosted, else 401/403/500.
pub(super) fn caller(e: CallerError) -> AiflowyError {
    match e {
        CallerError::NotHosted { .. } => {
            AiflowyError::new(404, "AGENT_NOT_FOUND", json!({"reason": e.to_string()}))
        }
        CallerError::Refused(e) => of_refusal(refusal::leader_auth(&e)),
    }
}

/// A body refused before it was parsed: 415 (not JSON by its type), 413/408/400 (its limit,
/// its deadline, unreadable), 400 (not JSON).
pub(super) fn body(e: BodyRefused) -> AiflowyError {
    match e {
        BodyRefused::ContentType { given } => AiflowyError::new(
            415,
            "UNSUPPORTED_MEDIA_TYPE",
            json!({
                "reason": "an AIFlowy request body must be sent as `Content-Type: application/json`",
                "contentType": given,
            }),
        ),
        BodyRefused::Read(e) => {
            let status = match e {
                BodyError::TooLarge { .. } => 413,
                BodyError::TimedOut { .. } => 408,
                BodyError::Read(_) => 400,
            };
            AiflowyError::new(status, "INVALID_REQUEST", e.details())
        }
        e @ BodyRefused::NotJson(_) => {
            AiflowyError::new(400, "INVALID_REQUEST", json!({"reason": e.to_string()}))
        }
    }
}

/// A query string that is not one (`?a=%zz`).
pub(super) fn query(e: QueryRejection) -> AiflowyError {
    AiflowyError::new(
        400,
        "INVALID_REQUEST",
        json!({"field": "query", "reason": e.body_text()}),
    )
}

/// A refusal as this door says it: the status and code of its kind, its facts beside them.
fn of_refusal(refusal: Refusal) -> AiflowyError {
    let (status, code) = match refusal.kind {
        Kind::InvalidParams => (400, "INVALID_REQUEST"),
        Kind::Unsupported => (400, "UNSUPPORTED"),
        Kind::ContentType => (415, "UNSUPPORTED_CONTENT"),
        Kind::TaskNotFound => (404, "TASK_NOT_FOUND"),
        Kind::NotCancelable => (409, "NOT_CANCELABLE"),
        Kind::Unauthenticated | Kind::InvalidCredential => (401, "UNAUTHENTICATED"),
        Kind::NotAllowed => (403, "PERMISSION_DENIED"),
        Kind::Quota => (429, "RESOURCE_EXHAUSTED"),
        Kind::Unavailable => (503, "UNAVAILABLE"),
        Kind::Internal => (500, "INTERNAL"),
    };
    AiflowyError::new(status, code, refusal.facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::InvalidField;

    #[test]
    fn a_chat_items_field_is_the_requests() {
        let named = |field: &str| {
            let e = engine_on_chat(EngineError::InvalidInput(InvalidField::new(field, "bad")));
            e.error["field"].clone()
        };
        assert_eq!(named("dataItems[0].text"), "prompt.text");
        assert_eq!(named("dataItems[2]"), "attachments[1]");
        assert_eq!(named("commandParams.x"), "commandParams.x");
        let e = engine_on_chat(EngineError::ContentTypeNotAccepted {
            item: 1,
            mime_type: "image/png".into(),
            accepted: vec!["text/plain".into()],
        });
        assert_eq!(e.status, 415);
        assert_eq!(e.error["field"], "attachments[0]");
        assert!(!e.error.contains_key("dataItem"));
    }

    #[test]
    fn a_submits_values_are_named_as_the_request_names_them() {
        let deep = EngineError::TooDeep(crate::model::depth::TooDeep {
            path: "dataItems[0].data.a.b".into(),
        });
        let e = engine_on_submit(deep, "c", "trip");
        assert_eq!(e.error["field"], "values.a.b");
        let ended = EngineError::TaskEnded {
            task_id: "t".into(),
            state: crate::model::TaskState::Canceled,
            command: crate::model::CommandKind::Continue,
        };
        assert_eq!(
            engine_on_submit(ended, "c", "trip").error["code"],
            "FORM_CLOSED"
        );
    }

    #[test]
    fn a_quota_says_when_to_retry() {
        let e = AiflowyError::new(429, "RESOURCE_EXHAUSTED", json!({"retryAfterMs": 1500}));
        let r = response(&e);
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
    }
}
