//! Group mode (spec section 7): hosted partners join RabbitMQ groups on a Leader's invitation,
//! receive its commands from their group queue and publish their task results and membership
//! status on the group's exchange.
//!
//! Each membership is an actor ([`session`]) over one broker link ([`broker`]). Commands go
//! through the same task engine as direct mode and are acknowledged only once their effect is
//! durable; results are published from a durable outbox written with the change they announce,
//! so a crash or a broken link neither loses nor reorders them. Memberships are stored, and
//! resumed when the host restarts.

pub mod broker;
pub mod inbox;
pub mod membership;
mod session;

use crate::agent::manifest::LeaderAuth;
use crate::agent::{Agent, Registry};
use crate::model::Timestamp;
use crate::protocol::aip::{Dialect, group};
use crate::protocol::{ErrorCode, RpcError};
use crate::store::{Encoded, Store};
use crate::task::TaskEngine;
use broker::Link;
use membership::{Membership, UnaddressedPolicy};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Group settings.
#[derive(Clone, Debug)]
pub struct GroupConfig {
    /// What a member does with a message that mentions nobody.
    pub unaddressed: UnaddressedPolicy,
    /// How long opening a link (resolving, connecting, setting up the queue, announcing the
    /// member) may take before it fails and the connection is cut.
    pub connect_timeout: Duration,
    /// The first reconnect waits this long, each next one twice as long, up to `reconnect_max`.
    pub reconnect_min: Duration,
    /// The longest wait between reconnects.
    pub reconnect_max: Duration,
    /// Brokers an invitation may name whatever they resolve to: exactly these hosts (as
    /// spelled here) and ports. Any other broker must resolve to addresses the address policy
    /// ([`crate::net_policy`]) allows.
    pub brokers: Vec<crate::net_policy::HostPort>,
    /// Let invitations name brokers at any address, also those the address policy forbids
    /// (loopback, private, link-local, ...).
    pub allow_private: bool,
    /// The broker whose inboxes (`inbox_{AIC}`) the host consumes for its partners: the second
    /// invitation route of v02.01 (`None`: only JSON-RPC invitations).
    pub inbox_broker: Option<inbox::InboxBroker>,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            unaddressed: UnaddressedPolicy::Handle,
            connect_timeout: Duration::from_secs(10),
            reconnect_min: Duration::from_millis(200),
            reconnect_max: Duration::from_secs(30),
            brokers: Vec::new(),
            allow_private: false,
            inbox_broker: None,
        }
    }
}

/// The engine's view of the memberships: which are live, and how to tell one that results wait.
#[derive(Default)]
pub struct GroupLinks {
    live: Mutex<HashMap<String, Arc<Notify>>>,
}

impl GroupLinks {
    /// Whether `membership` is live (results for a left group are not queued).
    pub fn is_live(&self, membership: &str) -> bool {
        self.lock().contains_key(membership)
    }

    /// Tell `membership` that durable results wait in its outbox.
    pub fn wake(&self, membership: &str) {
        if let Some(n) = self.lock().get(membership) {
            n.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where a membership's link stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MemberState {
    /// The link is open and serving.
    Connected,
    /// The link is down (or not yet reopened after a restart); it is retried with backoff.
    Reconnecting,
}

/// A membership as `/admin/groups` and `aiphost groups` show it.
#[derive(Clone, Debug, Serialize)]
pub struct MemberView {
    /// The hosted partner's id.
    pub agent: String,
    /// The group's id.
    #[serde(rename = "groupId")]
    pub group_id: String,
    /// The AIC of the Leader the invitation names.
    pub leader: String,
    /// The member's queue on the broker (also the membership's id).
    pub queue: String,
    /// The group's exchange, where the member publishes.
    pub exchange: String,
    /// The broker's host and port, followed by the vhost.
    pub broker: String,
    /// The dialect the group speaks, as far as the host knows: `v01.00` or `v02.01`.
    pub dialect: &'static str,
    /// Whether the link is up.
    pub state: MemberState,
    /// The Leader muted the member: it handles only messages that name it.
    pub muted: bool,
    /// When the partner joined the group.
    #[serde(rename = "joinedAt")]
    pub joined_at: Timestamp,
    /// Why the link last failed, while it is reconnecting.
    #[serde(rename = "lastError", skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Counters for `/metrics`.
#[derive(Default)]
pub struct GroupStats {
    /// Commands from group queues handed to the task engine (duplicates not counted).
    pub commands: AtomicU64,
    /// Outbox messages (task results, answers to `get`) published and confirmed by the broker.
    pub published: AtomicU64,
    /// Commands found already applied, and acknowledged without running them again.
    pub duplicates: AtomicU64,
    /// Times a serving link broke (the member then reconnects).
    pub reconnects: AtomicU64,
    /// Commands the engine refused, by JSON-RPC error code: group mode has no channel to answer
    /// an error on, so this (and the log) is where a refusal shows.
    refused: Mutex<std::collections::BTreeMap<i64, u64>>,
}

impl GroupStats {
    /// Count a command refused with `code`.
    pub fn refused(&self, code: i64) {
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        *refused.entry(code).or_default() += 1;
    }

    /// Refused commands by code.
    pub fn refusals(&self) -> Vec<(i64, u64)> {
        let refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        refused.iter().map(|(&code, &n)| (code, n)).collect()
    }
}

/// What the actors share.
struct Shared {
    engine: TaskEngine,
    /// The partners hosted now: a session whose partner is gone (unpublished, its tenant
    /// removed) leaves its group.
    agents: Arc<Registry>,
    store: Store,
    config: GroupConfig,
    links: Arc<GroupLinks>,
    views: Mutex<HashMap<String, MemberView>>,
    shutdown: CancellationToken,
    stats: GroupStats,
}

impl Shared {
    fn connection_name(&self, m: &Membership) -> String {
        // acps-sdk names it `agent-{aic}`; the group makes it tell memberships apart.
        format!("agent-{}/{}", m.aic, m.invitation.group_id)
    }

    fn set_state(&self, id: &str, state: MemberState, error: Option<String>, muted: bool) {
        let mut views = self.views.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = views.get_mut(id) {
            v.state = state;
            v.last_error = error;
            v.muted = muted;
        }
    }

    /// Store a membership's changed settings (mute, dialect).
    fn save(&self, m: &Membership) {
        let stored = Encoded::of(m).and_then(|record| self.store.put_membership(&m.id(), &record));
        if let Err(e) = stored {
            tracing::error!(error = %e, "could not store a membership change");
        }
    }

    fn forget(&self, id: &str) {
        self.links.lock().remove(id);
        self.views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }
}

fn view(m: &Membership, state: MemberState) -> MemberView {
    let s = &m.invitation.server;
    MemberView {
        agent: m.agent.clone(),
        group_id: m.invitation.group_id.clone(),
        leader: m.invitation.leader_aic.clone(),
        queue: m.id(),
        exchange: m.invitation.exchange.clone(),
        broker: format!("{}:{}{}", s.host, s.port, s.vhost),
        dialect: match m.dialect {
            Dialect::V1 => "v01.00",
            Dialect::V2 => "v02.01",
        },
        state,
        muted: m.muted,
        joined_at: m.joined_at,
        last_error: None,
    }
}

/// The host's group memberships. Cheap to clone.
#[derive(Clone)]
pub struct Groups {
    shared: Arc<Shared>,
    agents: Arc<Registry>,
    /// Joins in progress, so two invitations to one group cannot both connect.
    joining: Arc<tokio::sync::Mutex<()>>,
}

impl Groups {
    /// The group side of a host; `links` is the handle the engine was built with.
    pub fn new(
        engine: TaskEngine,
        store: Store,
        agents: Arc<Registry>,
        links: Arc<GroupLinks>,
        config: GroupConfig,
    ) -> Self {
        Groups {
            shared: Arc::new(Shared {
                store,
                engine,
                agents: agents.clone(),
                config,
                links,
                views: Mutex::new(HashMap::new()),
                shutdown: CancellationToken::new(),
                stats: GroupStats::default(),
            }),
            agents,
            joining: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    /// The group counters, for `/metrics`.
    pub fn stats(&self) -> &GroupStats {
        &self.shared.stats
    }

    /// Resume every stored membership (after a restart): each reconnects on its own, with
    /// backoff, so an unreachable broker delays only its own groups.
    pub fn resume(&self) -> Result<usize, crate::store::StoreError> {
        let stored = self.shared.store.memberships()?;
        let mut live = Vec::new();
        for (id, bytes) in stored {
            let mut m: Membership = match bytes.decode() {
                Ok(m) => m,
                Err(e) => {
                    tracing::error!(membership = %id, error = %e, "an unreadable membership is skipped");
                    continue;
                }
            };
            let Some(agent) = self.agents.get(&m.agent) else {
                tracing::warn!(membership = %id, agent = %m.agent, "a membership of an agent no longer hosted is skipped");
                continue;
            };
            // A membership stored before memberships knew their Leader, of a partner whose
            // Leaders authenticate: it is the invitation's Leader's (whose key invited it).
            if m.leader.is_none() && agent.manifest.access.leaders != LeaderAuth::Open {
                m.leader = Some(m.invitation.leader_aic.clone());
                self.shared.save(&m);
            }
            live.push(id);
            self.spawn(agent, m, None, MemberState::Reconnecting);
        }
        let dropped = self.shared.store.drop_orphaned_results(&live)?;
        if dropped > 0 {
            tracing::info!(dropped, "dropped results of groups left before the restart");
        }
        Ok(live.len())
    }

    fn spawn(&self, agent: Arc<Agent>, m: Membership, link: Option<Link>, state: MemberState) {
        let id = m.id();
        let wake = Arc::new(Notify::new());
        self.shared.links.lock().insert(id.clone(), wake.clone());
        self.shared
            .views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, view(&m, state));
        let session = session::Session::new(self.shared.clone(), agent, m, wake);
        tokio::spawn(session.run(link));
    }

    /// Answer a `group` invitation for `agent` from `leader` (the authenticated Leader, `None` for
    /// an open partner): join (or confirm an existing membership) and reply with the fields both
    /// dialects expect.
    pub async fn join(
        &self,
        agent: &Arc<Agent>,
        leader: Option<&str>,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let invitation = group::parse_invitation(params)?;
        if let Some(leader) = leader
            && invitation.leader_aic != leader
        {
            // The group's commands will act in the authenticated Leader's namespace: the
            // invitation cannot name another Leader as the group's.
            return Err(RpcError::new(
                ErrorCode::AuthorizationFailed,
                json!({
                    "reason": "the invitation's group.leader.aic is not the authenticated Leader",
                    "field": "params.group.leader.aic",
                    "leader": invitation.leader_aic,
                    "authenticated": leader,
                }),
            ));
        }
        let aic = agent.aic().to_string();
        let membership = Membership {
            agent: agent.id().to_string(),
            aic: aic.clone(),
            leader: leader.map(str::to_string),
            dialect: invitation.dialect_hint(),
            invitation,
            muted: false,
            joined_at: Timestamp::now(),
        };
        let id = membership.id();
        let _joining = self.joining.lock().await;
        // lapin does not expose the broker's node name; acps-sdk says "unknown" too.
        let reply = json!({
            "connectionName": self.shared.connection_name(&membership),
            "vhost": membership.invitation.server.vhost,
            "nodeName": "unknown",
            "queueName": id,
            "processId": format!("pid-{}", std::process::id()),
            "status": "joining",
            "groupId": membership.invitation.group_id,
        });
        if self.shared.links.is_live(&id) {
            // Invited again: the membership stands.
            return Ok(reply);
        }
        // The cause stays in the log: the Leader gets what `leader_reason` allows.
        let failed = |e: broker::BrokerError| {
            let s = &membership.invitation.server;
            tracing::warn!(agent = %membership.agent, group = %membership.invitation.group_id,
                broker = %format!("{}:{}", s.host, s.port), vhost = %s.vhost, error = %e,
                "could not join a group");
            group::connection_failed(s, e.leader_reason())
        };
        let announced = group::render_member_status(
            membership.dialect,
            &aic,
            &membership.invitation.group_id,
            None,
            true,
            false,
        );
        let link = Link::open(
            &membership.invitation,
            &id,
            &self.shared.connection_name(&membership),
            &self.shared.config,
            announced.to_string().as_bytes(),
            broker::Purpose::Join,
        )
        .await
        .map_err(failed)?;
        let stored = Encoded::of(&membership)
            .and_then(|record| self.shared.store.put_membership(&id, &record))
            .map_err(|e| RpcError::internal(e.to_string()));
        let ticket = match stored {
            Ok(t) => t,
            Err(e) => {
                let _ = link.leave().await;
                return Err(e);
            }
        };
        if let Err(e) = self.shared.store.durable(ticket).await {
            let _ = link.leave().await;
            let _ = self.shared.store.delete_membership(&id);
            return Err(RpcError::internal(e.to_string()));
        }
        tracing::info!(agent = %membership.agent, group = %membership.invitation.group_id, "joined a group");
        self.spawn(
            agent.clone(),
            membership,
            Some(link),
            MemberState::Connected,
        );
        Ok(reply)
    }

    /// Current memberships, for operators.
    pub fn list(&self) -> Vec<MemberView> {
        let mut all: Vec<MemberView> = self
            .shared
            .views
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        all.sort_by(|a, b| (&a.agent, &a.group_id).cmp(&(&b.agent, &b.group_id)));
        all
    }

    /// Close every link without leaving (the memberships resume at the next start).
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }
}
