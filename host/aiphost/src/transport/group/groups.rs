//! The host's group memberships: join on an invitation, resume after a restart, list, shut down.

use super::broker::{self, Link};
use super::config::GroupConfig;
use super::links::GroupLinks;
use super::membership::Membership;
use super::session;
use super::shared::Shared;
use super::stats::GroupStats;
use super::views::{MemberState, MemberView, view};
use crate::agent::manifest::LeaderAuth;
use crate::agent::{Agent, Registry};
use crate::model::Timestamp;
use crate::protocol::aip::group;
use crate::protocol::{ErrorCode, RpcError};
use crate::store::{Encoded, Store};
use crate::task::TaskEngine;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

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
