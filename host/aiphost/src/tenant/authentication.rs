//! Authentication: who calls the admin API (operator or tenant, by token), and which Leader calls
//! a partner (by API key or client certificate, as its manifest's `[access]` says).

use super::credentials::{Credential, Kind};
use super::records::*;
use super::*;
use crate::agent::Agent;
use crate::agent::manifest::LeaderAuth;
use crate::model::Timestamp;
use std::sync::Arc;

/// How a Leader proves who it is, as a partner's manifest asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// An API key as a bearer token.
    Bearer,
    /// A client certificate (mutual TLS).
    Mtls,
}

impl Scheme {
    /// Its name in error data.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Bearer => "bearer",
            Scheme::Mtls => "mtls",
        }
    }
}

/// Why a Leader may not call a partner. Each door says it in its own protocol's words.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LeaderAuthError {
    /// No credential, where the partner requires one.
    #[error("{reason}")]
    Missing {
        /// The credential required.
        scheme: Scheme,
        /// What to send.
        reason: &'static str,
    },
    /// A credential that is not valid (unknown, revoked, expired, naming no Leader).
    #[error("{reason}")]
    Invalid {
        /// The credential given.
        scheme: Scheme,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A valid Leader that may not call this partner.
    #[error("{reason}: {leader}")]
    NotAllowed {
        /// The Leader the credential names.
        leader: String,
        /// Why not.
        reason: &'static str,
    },
    /// The host could not read its keys; the caller may retry.
    #[error("the host could not check the API key")]
    Unavailable,
}

/// A partner a Leader may use, and the Leader it acts as there (`None`: an open partner's
/// shared namespace).
pub type LeaderPartner = (Arc<Agent>, Option<String>);

/// What the connection's TLS layer verified of the client's certificate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientCertificate<'a> {
    /// No verified client certificate (plain HTTP, or TLS without one).
    Absent,
    /// A verified certificate naming this Leader (a URI SAN `acps://{AIC}`).
    Leader(&'a str),
    /// A verified certificate that names no Leader.
    Anonymous,
}

/// The Leader a verified client certificate names.
fn leader_by_certificate(certificate: ClientCertificate<'_>) -> Result<String, LeaderAuthError> {
    match certificate {
        ClientCertificate::Leader(leader) => Ok(leader.to_string()),
        ClientCertificate::Anonymous => Err(LeaderAuthError::Invalid {
            scheme: Scheme::Mtls,
            reason: "the client certificate names no Leader: it needs a URI SAN acps://{AIC}",
        }),
        ClientCertificate::Absent => Err(LeaderAuthError::Missing {
            scheme: Scheme::Mtls,
            reason: "this partner requires a client certificate (mutual TLS) from the host operator's CA",
        }),
    }
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
        let credential: AdminCredential = bytes.decode()?;
        if !Credential::matches(&credential.hash, token)
            || self.tenant(&credential.tenant).is_none()
        {
            return Err(refused());
        }
        Ok(Principal::Tenant(credential.tenant))
    }

    /// Authenticate the Leader of an AIP request to `agent`: `Ok(None)` for an open partner,
    /// `Ok(Some(leader AIC))` for a valid credential, else why not.
    pub fn authenticate_leader(
        &self,
        agent: &Agent,
        bearer: Option<&str>,
        certificate: ClientCertificate<'_>,
    ) -> Result<Option<String>, LeaderAuthError> {
        let leader = match agent.manifest.access.leaders {
            LeaderAuth::Open => return Ok(None),
            LeaderAuth::ApiKey => self.leader_by_key(agent, bearer)?,
            LeaderAuth::Mtls => leader_by_certificate(certificate)?,
        };
        let allowed = &agent.manifest.access.allowed_leaders;
        if !allowed.is_empty() && !allowed.contains(&leader) {
            return Err(LeaderAuthError::NotAllowed {
                leader,
                reason: "this Leader is not among the partner's allowed Leaders",
            });
        }
        Ok(Some(leader))
    }

    /// The Leader an API key authenticates, for `agent`.
    pub(super) fn leader_by_key(
        &self,
        agent: &Agent,
        bearer: Option<&str>,
    ) -> Result<String, LeaderAuthError> {
        let Some(token) = bearer else {
            return Err(LeaderAuthError::Missing {
                scheme: Scheme::Bearer,
                reason: "this partner requires an API key: send `Authorization: Bearer <key>`",
            });
        };
        let key = self.leader_key(token)?;
        if key.agent != agent.id() {
            return Err(LeaderAuthError::NotAllowed {
                leader: key.leader,
                reason: "the API key was issued for another partner",
            });
        }
        Ok(key.leader)
    }

    /// The partners a Leader may use through one server for all of them (the MCP door's
    /// `/mcp`), each with the Leader it acts as there (`None`: an open partner's shared
    /// namespace), in the registry's order. API keys are issued per partner, so:
    /// - an API key: the partner it was issued for (when hosted, taking API keys and that
    ///   Leader) and the open partners;
    /// - a client certificate naming a Leader: every mTLS partner that takes it, and the open
    ///   partners;
    /// - neither: the open partners — what `GET /agents` shows anyone as open.
    ///
    /// A bearer token that is not a valid API key is refused rather than ignored: its sender
    /// meant to be someone.
    pub fn leader_partners(
        &self,
        bearer: Option<&str>,
        certificate: ClientCertificate<'_>,
    ) -> Result<Vec<LeaderPartner>, LeaderAuthError> {
        let key = bearer.map(|token| self.leader_key(token)).transpose()?;
        let allows = |agent: &Agent, leader: &str| {
            let allowed = &agent.manifest.access.allowed_leaders;
            allowed.is_empty() || allowed.iter().any(|l| l == leader)
        };
        let partners = self
            .agents
            .list()
            .into_iter()
            .filter_map(|agent| {
                let leader = match agent.manifest.access.leaders {
                    LeaderAuth::Open => None,
                    LeaderAuth::ApiKey => {
                        let key = key.as_ref().filter(|k| k.agent == agent.id())?;
                        Some(key.leader.clone())
                    }
                    LeaderAuth::Mtls => match certificate {
                        ClientCertificate::Leader(leader) => Some(leader.to_string()),
                        _ => return None,
                    },
                };
                match leader {
                    Some(leader) if !allows(&agent, &leader) => None,
                    leader => Some((agent, leader)),
                }
            })
            .collect();
        Ok(partners)
    }

    /// The valid API key `token` is: known, its secret matching, not expired.
    fn leader_key(&self, token: &str) -> Result<LeaderKey, LeaderAuthError> {
        let invalid_token = |reason| LeaderAuthError::Invalid {
            scheme: Scheme::Bearer,
            reason,
        };
        let Some((Kind::LeaderKey, id)) = Credential::parse(token) else {
            return Err(invalid_token("the bearer token is not an aiphost API key"));
        };
        let stored = self.store.tenancy_get(&leader_key_key(id)).map_err(|e| {
            tracing::error!(error = %e, "cannot read an API key");
            LeaderAuthError::Unavailable
        })?;
        let Some(bytes) = stored else {
            return Err(invalid_token("unknown or revoked API key"));
        };
        let key: LeaderKey = bytes.decode().map_err(|e| {
            tracing::error!(error = %e, "an unreadable API key record");
            LeaderAuthError::Unavailable
        })?;
        if !Credential::matches(&key.hash, token) {
            return Err(invalid_token("unknown or revoked API key"));
        }
        if let Some(expires) = key.expires_ms
            && Timestamp::now_ms() >= expires
        {
            return Err(invalid_token("the API key has expired"));
        }
        Ok(key)
    }
}
