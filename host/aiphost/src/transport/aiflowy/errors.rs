//! The AIFlowy door's errors: the one place where what the request, the engine and the quotas
//! refuse becomes an HTTP status and the protocol's JSON body (`protocol/aiflowy/error.rs`) —
//! the status and code of the refusal's kind, its facts (`refusal.rs`, the same AIP and A2A
//! send) beside them. Refusals after a stream began are `event: error` envelopes instead
//! (`protocol/aiflowy/render.rs`).

use crate::protocol::aiflowy::AiflowyError;
use crate::quota::QuotaError;
use crate::refusal::{self, Refusal};
use crate::task::EngineError;
use crate::task::forms::FormError;
use crate::transport::kit::caller::CallerError;
use crate::transport::kit::json_body::BodyRefused;
use crate::transport::kit::refusals::{self, HttpRefusal};
use axum::extract::rejection::QueryRejection;
use axum::response::Response;
use serde_json::{Value, json};

/// The HTTP answer of `e`: the JSON body; `WWW-Authenticate` on a 401; `Retry-After` (whole
/// seconds) on a quota or a full disk that says when.
pub(crate) fn response(e: &AiflowyError) -> Response {
    refusals::respond(e.status, &e.error)
}

/// The error of an engine failure; store details stay in the log.
pub(crate) fn engine(e: EngineError) -> AiflowyError {
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
pub(crate) fn caller(e: CallerError) -> AiflowyError {
    from_kit(refusals::caller(e))
}

/// A body refused before it was parsed: 415, 413/408/400, 400 (the kit's).
pub(crate) fn body(e: BodyRefused) -> AiflowyError {
    from_kit(refusals::body(e, "AIFlowy"))
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
    from_kit(refusals::of(refusal))
}

/// A refusal the kit said as HTTP.
fn from_kit(r: HttpRefusal) -> AiflowyError {
    AiflowyError::new(r.status, r.code, r.facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::InvalidField;
    use axum::http::{StatusCode, header};

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
