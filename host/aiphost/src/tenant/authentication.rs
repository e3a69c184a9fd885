//! Authentication: who calls the admin API (operator or tenant, by token), and which Leader calls
//! a partner (by API key or client certificate, as its manifest's `[access]` says).

use super::credentials::{Credential, Kind};
use super::records::*;
use super::*;
use crate::agent::Agent;
use crate::agent::manifest::LeaderAuth;
use crate::protocol::{ErrorCode, RpcError, Timestamp};
use crate::transport::tls::Peer;
use serde_json::json;

/// The Leader a verified client certificate names.
pub(super) fn leader_by_certificate(peer: &Peer) -> Result<String, RpcError> {
    if let Some(leader) = &peer.leader {
        return Ok(leader.clone());
    }
    if peer.anonymous_certificate {
        return Err(RpcError::new(
            ErrorCode::AccessTokenInvalid,
            json!({
                "reason": "the client certificate names no Leader: it needs a URI SAN acps://{AIC}",
                "scheme": "mtls",
            }),
        ));
    }
    Err(RpcError::new(
        ErrorCode::AuthenticationRequired,
        json!({
            "reason": "this partner requires a client certificate (mutual TLS) from the host operator's CA",
            "scheme": "mtls",
        }),
    ))
}

impl Tenancy {
    /// Who holds `token`: the operator, a tenant, or nobody.
    pub fn authenticate_admin(&self, token: &str) -> Result<Principal, TenancyError> {
        if Credential::matches(&self.operator_hash, token) {
            return Ok(Principal::Operator);
        }
        let refused = || TenancyError::Forbidden("the admin token is not valid".into());
        let Some((Kind::TenantAdmin, id)) = Credential::parse(token) else {
            return Err(refused());
        };
        let Some(bytes) = self.store.tenancy_get(&credential_key(id))? else {
            return Err(refused());
        };
        let credential: AdminCredential = serde_json::from_slice(&bytes).map_err(corrupt)?;
        if !Credential::matches(&credential.hash, token)
            || self.tenant(&credential.tenant).is_none()
        {
            return Err(refused());
        }
        Ok(Principal::Tenant(credential.tenant))
    }

    /// Authenticate the Leader of an AIP request to `agent`: `Ok(None)` for an open partner,
    /// `Ok(Some(leader AIC))` for a valid key, else the AIP error (-32008, -32010 or -32009).
    pub fn authenticate_leader(
        &self,
        agent: &Agent,
        bearer: Option<&str>,
        peer: &Peer,
    ) -> Result<Option<String>, RpcError> {
        let leader = match agent.manifest.access.leaders {
            LeaderAuth::Open => return Ok(None),
            LeaderAuth::ApiKey => self.leader_by_key(agent, bearer)?,
            LeaderAuth::Mtls => leader_by_certificate(peer)?,
        };
        let allowed = &agent.manifest.access.allowed_leaders;
        if !allowed.is_empty() && !allowed.contains(&leader) {
            return Err(RpcError::new(
                ErrorCode::AuthorizationFailed,
                json!({
                    "reason": "this Leader is not among the partner's allowed Leaders",
                    "leader": leader,
                }),
            ));
        }
        Ok(Some(leader))
    }

    /// The Leader an API key authenticates, for `agent`.
    pub(super) fn leader_by_key(
        &self,
        agent: &Agent,
        bearer: Option<&str>,
    ) -> Result<String, RpcError> {
        let Some(token) = bearer else {
            return Err(RpcError::new(
                ErrorCode::AuthenticationRequired,
                json!({
                    "reason": "this partner requires an API key: send `Authorization: Bearer <key>`",
                    "scheme": "bearer",
                }),
            ));
        };
        let invalid_token = |reason: &str| {
            RpcError::new(
                ErrorCode::AccessTokenInvalid,
                json!({"reason": reason, "scheme": "bearer"}),
            )
        };
        let Some((Kind::LeaderKey, id)) = Credential::parse(token) else {
            return Err(invalid_token("the bearer token is not an aiphost API key"));
        };
        let stored = self.store.tenancy_get(&leader_key_key(id)).map_err(|e| {
            tracing::error!(error = %e, "cannot read an API key");
            RpcError::internal("the host could not check the API key; retry")
        })?;
        let Some(bytes) = stored else {
            return Err(invalid_token("unknown or revoked API key"));
        };
        let key: LeaderKey = serde_json::from_slice(&bytes)
            .map_err(|_| RpcError::internal("the host could not check the API key; retry"))?;
        if !Credential::matches(&key.hash, token) {
            return Err(invalid_token("unknown or revoked API key"));
        }
        if let Some(expires) = key.expires_ms
            && Timestamp::now_ms() >= expires
        {
            return Err(invalid_token("the API key has expired"));
        }
        if key.agent != agent.id() {
            return Err(RpcError::new(
                ErrorCode::AuthorizationFailed,
                json!({
                    "reason": "the API key was issued for another partner",
                    "leader": key.leader,
                }),
            ));
        }
        Ok(key.leader)
    }
}
