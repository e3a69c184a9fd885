//! The admin HTTP API: the operator manages tenants; a tenant publishes, rolls back and
//! unpublishes its own partners and issues API keys for them; both see their partners' tasks
//! (`tasks.rs`, `timeline.rs`). Every route takes
//! `Authorization: Bearer <operator or tenant admin token>`; errors are
//! `{"error": {"code", "message", "details"?}}` with a fitting HTTP status.
//!
//! A handler authenticates (and checks who may call it) from the headers before it reads any of
//! the body, so a request that will be refused costs nothing however large a body it announces.
//! Then it reads the body against its route's limit: a publish, what the tenant's component
//! quota allows; every other route, [`BODY_LIMIT`]. A body over the limit gets 413
//! `too-large` with `details.limitBytes` (at once when its length is announced), a body slower
//! than the body timeout 408 `timeout` with `details.timeoutMs`.

use super::endpoints::Endpoints;
use crate::tenant::{Principal, Tenancy, TenancyError};
use crate::transport::kit::body::{self, BodyError};
use crate::transport::kit::caller::bearer;
use axum::body::Body;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

/// An admin API failure.
pub struct AdminError {
    status: StatusCode,
    code: &'static str,
    message: String,
    details: Value,
}

impl AdminError {
    pub(super) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        AdminError {
            status,
            code,
            message: message.into(),
            details: Value::Null,
        }
    }

    fn forbidden() -> Self {
        AdminError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "this needs the operator token",
        )
    }
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        // A refusal that clears on its own says when, as HTTP clients read it.
        let retry_after = self.details["retryAfterMs"]
            .as_u64()
            .map(|ms| ms.div_ceil(1000).max(1));
        let mut error = json!({"code": self.code, "message": self.message});
        if !self.details.is_null() {
            error["details"] = self.details;
        }
        let mut response = (self.status, Json(json!({ "error": error }))).into_response();
        if let Some(seconds) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

impl From<TenancyError> for AdminError {
    fn from(e: TenancyError) -> Self {
        let message = e.to_string();
        match e {
            TenancyError::NotFound { .. } => {
                AdminError::new(StatusCode::NOT_FOUND, "not-found", message)
            }
            TenancyError::Exists { .. } => AdminError::new(StatusCode::CONFLICT, "exists", message),
            TenancyError::Invalid { field, reason } => AdminError {
                details: json!({"field": field, "reason": reason}),
                ..AdminError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
            },
            TenancyError::Quota {
                quota,
                limit,
                needed,
            } => AdminError {
                details: json!({"quota": quota, "limit": limit, "needed": needed}),
                ..AdminError::new(StatusCode::FORBIDDEN, "quota", message)
            },
            TenancyError::PublishBudget(e) => AdminError {
                details: json!({
                    "quota": e.quota(),
                    "retryAfterMs": e.retry_after_ms(),
                }),
                ..AdminError::new(StatusCode::TOO_MANY_REQUESTS, "publish-budget", message)
            },
            TenancyError::Forbidden(_) => {
                AdminError::new(StatusCode::FORBIDDEN, "forbidden", message)
            }
            TenancyError::Store(_) | TenancyError::Io(_) => {
                tracing::error!(error = %message, "admin request failed");
                AdminError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the host could not complete the change; nothing was switched",
                )
            }
        }
    }
}

/// Tenancy and publishing. Every handler reads its body itself, after authenticating, against
/// its own limit (see `admin`); every route here takes its body as a stream.
pub(super) fn routes() -> Router<Endpoints> {
    Router::new()
        .route("/admin/tenants", get(list_tenants).post(create_tenant))
        .route("/admin/tenants/{tenant}", delete(remove_tenant))
        .route("/admin/agents", get(list_published).post(publish))
        .route("/admin/agents/{agent}", delete(unpublish))
        .route("/admin/agents/{agent}/versions", get(versions))
        .route("/admin/agents/{agent}/rollback", post(rollback))
        .route("/admin/agents/{agent}/keys", get(list_keys).post(issue_key))
        .route("/admin/agents/{agent}/keys/{key}", delete(revoke_key))
        .route("/admin/agents/{agent}/values", get(list_values))
        .route(
            "/admin/agents/{agent}/config/{name}",
            put(set_config).delete(delete_config),
        )
        .route(
            "/admin/agents/{agent}/secrets/{name}",
            put(set_secret).delete(delete_secret),
        )
}

type AdminResult = Result<Response, AdminError>;

/// Who is calling; 401 without a valid admin token.
pub(super) fn principal(tenancy: &Tenancy, headers: &HeaderMap) -> Result<Principal, AdminError> {
    let token = bearer(headers).ok_or_else(|| {
        AdminError::new(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "send `Authorization: Bearer <admin token>`",
        )
    })?;
    tenancy.authenticate_admin(token).map_err(|e| match e {
        TenancyError::Forbidden(m) => {
            AdminError::new(StatusCode::UNAUTHORIZED, "unauthenticated", m)
        }
        other => other.into(),
    })
}

fn operator(state: &Endpoints, headers: &HeaderMap) -> Result<(), AdminError> {
    match principal(&state.tenancy, headers)? {
        Principal::Operator => Ok(()),
        Principal::Tenant(_) => Err(AdminError::forbidden()),
    }
}

fn tenant_only(principal: &Principal) -> Result<&str, AdminError> {
    match principal {
        Principal::Tenant(t) => Ok(t),
        Principal::Operator => Err(AdminError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "publish with a tenant's admin token: partners belong to tenants",
        )),
    }
}

/// The largest body of an admin route other than publish. The largest such body is a config
/// value of up to 64 KiB, which JSON escapes can make six times larger.
const BODY_LIMIT: usize = 512 * 1024;

/// Room for the manifest and the JSON around a published component.
const PUBLISH_ROOM: u64 = 2 * 1024 * 1024;

impl From<BodyError> for AdminError {
    fn from(e: BodyError) -> Self {
        let (status, code) = match e {
            BodyError::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "too-large"),
            BodyError::TimedOut { .. } => (StatusCode::REQUEST_TIMEOUT, "timeout"),
            BodyError::Read(_) => (StatusCode::BAD_REQUEST, "bad-request"),
        };
        AdminError {
            details: e.details(),
            ..AdminError::new(status, code, e.to_string())
        }
    }
}

/// A path parameter; a path that does not parse gets the admin error shape, not plain text.
pub(super) struct AdminPath<T>(pub T);

impl<S, T> FromRequestParts<S> for AdminPath<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned + Send,
{
    type Rejection = AdminError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AdminError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(AdminPath(value)),
            Err(rejection) => {
                let status = rejection.status();
                let code = if status.is_client_error() {
                    "bad-request"
                } else {
                    "internal"
                };
                Err(AdminError {
                    details: json!({"reason": rejection.body_text()}),
                    ..AdminError::new(status, code, "the request path is not valid")
                })
            }
        }
    }
}

/// The JSON body of a request, read against `limit` (only once the caller is authenticated).
async fn body<T: serde::de::DeserializeOwned>(body: Body, limit: usize) -> Result<T, AdminError> {
    let bytes = body::read(body, limit).await?;
    serde_json::from_slice(&bytes).map_err(|e| AdminError {
        details: json!({"reason": e.to_string()}),
        ..AdminError::new(
            StatusCode::BAD_REQUEST,
            "bad-request",
            format!("the body is not the expected JSON: {e}"),
        )
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewTenant {
    id: String,
    #[serde(default)]
    quotas: Option<crate::tenant::quota::Quotas>,
}

pub(super) async fn create_tenant(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    request: Body,
) -> AdminResult {
    operator(&state, &headers)?;
    let new: NewTenant = body(request, BODY_LIMIT).await?;
    let (record, token) = state.tenancy.create_tenant(&new.id, new.quotas).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"tenant": record.id, "quotas": record.quotas, "adminToken": token})),
    )
        .into_response())
}

pub(super) async fn list_tenants(
    State(state): State<Endpoints>,
    headers: HeaderMap,
) -> AdminResult {
    operator(&state, &headers)?;
    Ok(Json(json!({"tenants": state.tenancy.list_tenants()?})).into_response())
}

pub(super) async fn remove_tenant(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(id): AdminPath<String>,
) -> AdminResult {
    operator(&state, &headers)?;
    // 202: the tenant is gone from the API at once; its data goes in the background, and the
    // list of tenants shows it as removing until then (a DELETE meanwhile answers the same).
    let removal = state.tenancy.remove_tenant(&id).await?;
    Ok((StatusCode::ACCEPTED, Json(removal.to_json())).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Publish {
    /// The text of `partner.toml`.
    manifest: String,
    /// The component, base64.
    component: String,
}

pub(super) async fn publish(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    request: Body,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    let tenant = tenant_only(&who)?;
    let request: Publish = body(request, publish_limit(&state, tenant)).await?;
    let wasm = base64::engine::general_purpose::STANDARD
        .decode(request.component.as_bytes())
        .map_err(|e| {
            AdminError::from(TenancyError::Invalid {
                field: "component".into(),
                reason: format!("is not base64: {e}"),
            })
        })?;
    let info = state
        .tenancy
        .publish(tenant, &request.manifest, wasm)
        .await?;
    Ok((StatusCode::CREATED, Json(json!({"published": info}))).into_response())
}

/// The largest publish body `tenant` may send: its largest component in base64, and room for
/// the manifest, so that a component just over the quota still gets the quota's own answer.
fn publish_limit(state: &Endpoints, tenant: &str) -> usize {
    match state.tenancy.tenant(tenant) {
        Some(t) => {
            let encoded = t.quotas.max_component_bytes.div_ceil(3).saturating_mul(4);
            usize::try_from(encoded.saturating_add(PUBLISH_ROOM)).unwrap_or(usize::MAX)
        }
        // Removed meanwhile: the publish will be refused; take no more than any other route.
        None => BODY_LIMIT,
    }
}

/// The partners the caller manages: a tenant's own, or all published ones for the operator.
pub(super) async fn list_published(
    State(state): State<Endpoints>,
    headers: HeaderMap,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    Ok(Json(json!({"agents": state.tenancy.list_agents(&who)?})).into_response())
}

pub(super) async fn versions(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    let record = state.tenancy.versions(&who, &agent)?;
    Ok(Json(json!({
        "agent": record.id,
        "current": record.current,
        "versions": record.versions,
    }))
    .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rollback {
    version: u64,
}

pub(super) async fn rollback(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
    request: Body,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    let request: Rollback = body(request, BODY_LIMIT).await?;
    let info = state
        .tenancy
        .rollback(&who, &agent, request.version)
        .await?;
    Ok(Json(json!({"current": info})).into_response())
}

pub(super) async fn unpublish(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    state.tenancy.unpublish(&who, &agent).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct NewKey {
    leader: String,
    #[serde(default)]
    ttl_seconds: Option<u64>,
    /// What the key is for (`console`), shown in the key listing.
    #[serde(default)]
    label: Option<String>,
}

pub(super) async fn issue_key(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
    request: Body,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    let request: NewKey = body(request, BODY_LIMIT).await?;
    let (key, token) = state
        .tenancy
        .issue_key(
            &who,
            &agent,
            &request.leader,
            request.ttl_seconds,
            request.label.as_deref(),
        )
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "id": key.id, "key": token, "agent": key.agent, "leader": key.leader,
            "expiresMs": key.expires_ms, "label": key.label,
        })),
    )
        .into_response())
}

pub(super) async fn list_keys(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    Ok(Json(json!({"keys": state.tenancy.list_keys(&who, &agent)?})).into_response())
}

pub(super) async fn revoke_key(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, key)): AdminPath<(String, String)>,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    state.tenancy.revoke_key(&who, &agent, &key).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Whether `principal` may see things of hosted partner `agent` (memberships, given-up
/// notifications): the operator sees all, a tenant only its own partners.
pub(super) fn may_see(tenancy: &Arc<Tenancy>, principal: &Principal, agent: &str) -> bool {
    match principal {
        Principal::Operator => true,
        Principal::Tenant(t) => tenancy.owner_of(agent).as_deref() == Some(t.as_str()),
    }
}

pub(super) async fn list_values(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath(agent): AdminPath<String>,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    Ok(Json(state.tenancy.list_values(&who, &agent)?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigValue {
    value: String,
}

pub(super) async fn set_config(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, name)): AdminPath<(String, String)>,
    request: Body,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    let request: ConfigValue = body(request, BODY_LIMIT).await?;
    state
        .tenancy
        .set_config(&who, &agent, &name, request.value)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn delete_config(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, name)): AdminPath<(String, String)>,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    state
        .tenancy
        .delete_value(&who, &agent, &name, false)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn set_secret(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, name)): AdminPath<(String, String)>,
    request: Body,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    let secret: crate::runtime::outbound::SecretHeader = body(request, BODY_LIMIT).await?;
    state
        .tenancy
        .set_secret(&who, &agent, &name, secret)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn delete_secret(
    State(state): State<Endpoints>,
    headers: HeaderMap,
    AdminPath((agent, name)): AdminPath<(String, String)>,
) -> AdminResult {
    let who = principal(&state.tenancy, &headers)?;
    state
        .tenancy
        .delete_value(&who, &agent, &name, true)
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}
