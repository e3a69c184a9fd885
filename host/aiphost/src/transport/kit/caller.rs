//! Who is calling, about which partner: the partner named in the path looked up, and the
//! Leader authenticated (API key, mTLS peer, or none for an open partner) through tenancy —
//! once, in one place, for every door. A refusal is a [`CallerError`] each door says in its
//! own words.

use crate::agent::{Agent, Registry};
use crate::store::TaskKey;
use crate::tenant::{LeaderAuthError, Tenancy};
use crate::transport::tls::Peer;
use axum::http::{HeaderMap, header};
use std::sync::Arc;

/// The partner and the Leader calling it (cloned where a door hands it across a layer it does
/// not own: the MCP door's entry to its `rmcp` handler, through the request's extensions).
#[derive(Clone)]
pub struct Caller {
    /// The partner.
    pub agent: Arc<Agent>,
    /// The authenticated Leader, whose task namespace the call acts in (`None`: an open
    /// partner's shared one).
    pub owner: Option<String>,
}

impl Caller {
    /// Task `task` of this partner in the caller's namespace.
    pub fn key(&self, task: &str) -> TaskKey {
        TaskKey::owned(self.agent.id(), self.owner.as_deref(), task)
    }
}

/// Why a caller was not let in.
#[derive(Debug, thiserror::Error)]
pub enum CallerError {
    /// No partner of that id is hosted (unpublished after the gate let the request in).
    #[error("no agent {agent:?} is hosted here; GET /agents lists them")]
    NotHosted {
        /// The id asked for.
        agent: String,
    },
    /// The Leader is not authenticated, or not one the partner takes.
    #[error(transparent)]
    Refused(#[from] LeaderAuthError),
}

/// What a door needs of tenancy: the hosted partners and their Leaders' authentication.
#[derive(Clone)]
pub struct Callers {
    agents: Arc<Registry>,
    tenancy: Arc<Tenancy>,
}

impl Callers {
    /// Callers of `agents`, authenticated by `tenancy`.
    pub(super) fn new(agents: Arc<Registry>, tenancy: Arc<Tenancy>) -> Self {
        Callers { agents, tenancy }
    }

    /// The hosted partner `id`.
    pub fn partner(&self, id: &str) -> Result<Arc<Agent>, CallerError> {
        self.agents
            .get(id)
            .ok_or_else(|| CallerError::NotHosted { agent: id.into() })
    }

    /// The Leader calling `agent`, from its bearer token or its TLS client certificate.
    pub fn authenticate(
        &self,
        agent: Arc<Agent>,
        headers: &HeaderMap,
        peer: &Peer,
    ) -> Result<Caller, CallerError> {
        let owner =
            self.tenancy
                .authenticate_leader(&agent, bearer(headers), peer.certificate())?;
        Ok(Caller { agent, owner })
    }

    /// Every partner the Leader of a request may use through one server for all of them (the
    /// MCP door's `/mcp`), each as the caller it is there: see [`Tenancy::leader_partners`].
    pub fn leader_partners(
        &self,
        headers: &HeaderMap,
        peer: &Peer,
    ) -> Result<Vec<Caller>, CallerError> {
        let partners = self
            .tenancy
            .leader_partners(bearer(headers), peer.certificate())?;
        Ok(partners
            .into_iter()
            .map(|(agent, owner)| Caller { agent, owner })
            .collect())
    }

    /// The partner `id` and the Leader calling it.
    pub fn caller(
        &self,
        id: &str,
        headers: &HeaderMap,
        peer: &Peer,
    ) -> Result<Caller, CallerError> {
        let agent = self.partner(id)?;
        self.authenticate(agent, headers, peer)
    }
}

/// The bearer token of a request, if it has one (a Leader's API key, an admin token).
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
        .filter(|t| !t.is_empty())
}
