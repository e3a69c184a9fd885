//! The life of one membership: consume the group queue, hand commands to the task engine (one
//! worker per task, so commands to a task keep their order while tasks run side by side), answer
//! management commands, publish the membership's outbox, and reconnect with backoff when the
//! link breaks.

use super::broker::{self, BrokerError, Link};
use super::membership::{Membership, handles};
use super::shared::Shared;
use super::views::MemberState;
use crate::agent::Agent;
use crate::model::{CommandKind, Inbound, TaskNotice};
use crate::protocol::aip::Dialect;
use crate::protocol::aip::group::{self, GroupInbound, Mgmt, MgmtCommand};
use crate::protocol::aip::notice::{Audience, render_notice};
use crate::store::{Outgoing, TaskKey};
use crate::task::EngineError;
use lapin::Acker;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tracing::Instrument;

/// A command waiting for its task's worker.
struct Work {
    inbound: Inbound,
    acker: Acker,
    redelivered: bool,
}

/// How a link's service ended.
enum Ended {
    Left,
    Shutdown,
    /// The member's partner is no longer hosted (unpublished, or its tenant removed).
    Retired,
}

/// One membership's actor.
pub(super) struct Session {
    pub(super) shared: Arc<Shared>,
    pub(super) agent: Arc<Agent>,
    pub(super) membership: Membership,
    pub(super) id: String,
    pub(super) wake: Arc<Notify>,
    /// Per-task workers, kept across reconnects so a redelivered command queues behind the
    /// original.
    workers: HashMap<String, mpsc::UnboundedSender<Work>>,
}

/// Idle workers stop after this long.
const WORKER_IDLE: Duration = Duration::from_secs(10);
/// Results published per outbox read.
const DRAIN_BATCH: usize = 64;
/// How often a session checks that its partner is still hosted.
const RESCAN: Duration = Duration::from_secs(2);

impl Session {
    pub(super) fn new(
        shared: Arc<Shared>,
        agent: Arc<Agent>,
        membership: Membership,
        wake: Arc<Notify>,
    ) -> Self {
        Session {
            id: membership.id(),
            shared,
            agent,
            membership,
            wake,
            workers: HashMap::new(),
        }
    }

    /// Serve the membership until it is left or the host stops; `link` is the one the join
    /// opened (none when resuming after a restart).
    pub(super) async fn run(mut self, mut link: Option<Link>) {
        let span = tracing::info_span!("group", agent = %self.membership.agent, group = %self.membership.invitation.group_id);
        async move {
            let mut backoff = self.shared.config.reconnect_min;
            loop {
                let current = match link.take() {
                    Some(l) => l,
                    None => match self.reconnect().await {
                        Ok(l) => {
                            backoff = self.shared.config.reconnect_min;
                            l
                        }
                        Err(e) => {
                            self.set_state(MemberState::Reconnecting, Some(e.to_string()));
                            tracing::warn!(error = %e, retry_in = ?backoff, "group broker unreachable");
                            tokio::select! {
                                _ = self.shared.shutdown.cancelled() => return,
                                _ = tokio::time::sleep(backoff) => {}
                            }
                            if !self.hosted() {
                                self.retire();
                                return;
                            }
                            backoff = (backoff * 2).min(self.shared.config.reconnect_max);
                            continue;
                        }
                    },
                };
                self.set_state(MemberState::Connected, None);
                match self.serve(current).await {
                    Ok(Ended::Left) => {
                        self.shared.forget(&self.id);
                        tracing::info!("left the group");
                        return;
                    }
                    Ok(Ended::Retired) => {
                        self.retire();
                        return;
                    }
                    Ok(Ended::Shutdown) => return,
                    Err(e) => {
                        self.shared.stats.reconnects.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        self.set_state(MemberState::Reconnecting, Some(e.to_string()));
                        tracing::warn!(error = %e, "group link broke; reconnecting");
                    }
                }
            }
        }
        .instrument(span)
        .await
    }

    fn set_state(&self, state: MemberState, error: Option<String>) {
        self.shared
            .set_state(&self.id, state, error, self.membership.muted);
    }

    /// Open the link again (checked against the operator's broker rules as they are now) and
    /// announce the member is back.
    async fn reconnect(&self) -> Result<Link, BrokerError> {
        let status = group::render_member_status(
            self.membership.dialect,
            &self.membership.aic,
            &self.membership.invitation.group_id,
            None,
            true,
            self.membership.muted,
        );
        Link::open(
            &self.membership.invitation,
            &self.id,
            &self.shared.connection_name(&self.membership),
            &self.shared.config,
            status.to_string().as_bytes(),
            broker::Purpose::Resume,
        )
        .await
    }

    /// Whether the member's partner is still hosted.
    fn hosted(&self) -> bool {
        self.shared.agents.get(&self.membership.agent).is_some()
    }

    /// The member's partner is no longer hosted: the membership goes (stored, and from the
    /// operator's view) with one log line.
    fn retire(&self) {
        if let Err(e) = self.shared.store.delete_membership(&self.id) {
            tracing::error!(error = %e, "could not forget the membership of a partner no longer hosted");
        }
        self.shared.forget(&self.id);
        tracing::info!("left the group: the partner is no longer hosted");
    }

    /// Leave the group on the broker for a partner no longer hosted.
    async fn leave_retired(link: Link) -> Result<Ended, BrokerError> {
        if let Err(e) = link.leave().await {
            tracing::warn!(error = %e, "could not clean up on the broker after leaving");
        }
        Ok(Ended::Retired)
    }

    async fn serve(&mut self, mut link: Link) -> Result<Ended, BrokerError> {
        self.drain(&link).await?;
        // Unpublishing or removing the partner is seen within a tick (and before any command).
        let mut rescan = tokio::time::interval(RESCAN);
        loop {
            tokio::select! {
                _ = self.shared.shutdown.cancelled() => {
                    link.close().await;
                    return Ok(Ended::Shutdown);
                }
                _ = rescan.tick() => {
                    if !self.hosted() {
                        return Self::leave_retired(link).await;
                    }
                }
                _ = self.wake.notified() => self.drain(&link).await?,
                delivery = link.next() => {
                    let delivery = delivery?;
                    if !self.hosted() {
                        // Not acknowledged: the queue goes with the membership.
                        return Self::leave_retired(link).await;
                    }
                    if let Some(ended) = self.on_delivery(&link, delivery).await? {
                        return match ended {
                            Ended::Left => {
                                if let Err(e) = link.leave().await {
                                    tracing::warn!(error = %e, "could not clean up on the broker after leaving");
                                }
                                Ok(Ended::Left)
                            }
                            Ended::Retired => Self::leave_retired(link).await,
                            Ended::Shutdown => Ok(Ended::Shutdown),
                        };
                    }
                }
            }
        }
    }

    /// Publish what waits in the membership's outbox, oldest first, each confirmed by the broker
    /// before it is dropped.
    async fn drain(&self, link: &Link) -> Result<(), BrokerError> {
        loop {
            let pending = match self.shared.store.group_outbox(&self.id, DRAIN_BATCH) {
                Ok(p) => p,
                Err(e) => {
                    tracing::error!(error = %e, "cannot read the group outbox");
                    return Ok(());
                }
            };
            for entry in &pending {
                let body = match &entry.message {
                    Ok(Outgoing::Notice(notice)) => render_notice(notice, Audience::Group),
                    Ok(Outgoing::Rendered(body)) => body.clone(),
                    Err(e) => {
                        tracing::error!(error = %e, "dropping an unreadable group result");
                        if let Err(e) = self.shared.store.published(entry) {
                            tracing::error!(error = %e, "cannot drop an unreadable group result");
                        }
                        continue;
                    }
                };
                link.publish(body.to_string().as_bytes()).await?;
                self.shared
                    .stats
                    .published
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if let Err(e) = self.shared.store.published(entry) {
                    tracing::error!(error = %e, "cannot drop a published result; it may be sent again");
                }
            }
            if pending.len() < DRAIN_BATCH {
                return Ok(());
            }
        }
    }

    async fn on_delivery(
        &mut self,
        link: &Link,
        delivery: lapin::message::Delivery,
    ) -> Result<Option<Ended>, BrokerError> {
        let me = &self.membership.aic;
        let inbound = match group::classify(&delivery.data, me) {
            Ok(i) => i,
            Err(reason) => {
                // A poison message must not come back forever: drop it, loudly.
                tracing::warn!(%reason, "dropping an unreadable group message");
                broker::ack(&delivery.acker).await;
                return Ok(None);
            }
        };
        let policy = self.shared.config.unaddressed;
        match inbound {
            GroupInbound::Own | GroupInbound::Other => broker::ack(&delivery.acker).await,
            GroupInbound::Mgmt(mgmt) => {
                if !self.membership.takes_commands_from(&mgmt.sender_id) {
                    tracing::warn!(sender = %mgmt.sender_id, leader = ?self.membership.leader,
                        "refused a management command from someone else than the member's Leader");
                    broker::ack(&delivery.acker).await;
                    return Ok(None);
                }
                if !self.for_this_group(mgmt.group_id.as_deref())
                    || !handles(
                        group::addressed(mgmt.mentions.as_ref(), me),
                        self.membership.muted,
                        policy,
                    )
                {
                    broker::ack(&delivery.acker).await;
                    return Ok(None);
                }
                let left = self.on_mgmt(link, &mgmt).await?;
                broker::ack(&delivery.acker).await;
                if left {
                    return Ok(Some(Ended::Left));
                }
            }
            GroupInbound::Command(mut inbound) => {
                if !self
                    .membership
                    .takes_commands_from(&inbound.command.sender_id)
                {
                    tracing::warn!(sender = %inbound.command.sender_id, leader = ?self.membership.leader,
                        "refused a task command from someone else than the member's Leader");
                    broker::ack(&delivery.acker).await;
                    return Ok(None);
                }
                // The member acts in the namespace of the Leader that invited it.
                inbound.owner = self.membership.leader.clone();
                let command = &inbound.command;
                if !self.for_this_group(command.group_id.as_deref())
                    || !handles(
                        group::addressed(command.mentions.as_ref(), me),
                        self.membership.muted,
                        policy,
                    )
                {
                    broker::ack(&delivery.acker).await;
                    return Ok(None);
                }
                self.remember_dialect(Dialect::of(inbound.form.as_ref()));
                let work = Work {
                    inbound: *inbound,
                    acker: delivery.acker,
                    redelivered: delivery.redelivered,
                };
                self.dispatch(work);
            }
        }
        Ok(None)
    }

    fn for_this_group(&self, group_id: Option<&str>) -> bool {
        group_id.is_none_or(|g| g == self.membership.invitation.group_id)
    }

    /// The Leader's messages tell the group's dialect better than the invitation did.
    fn remember_dialect(&mut self, dialect: Dialect) {
        if self.membership.dialect != dialect {
            self.membership.dialect = dialect;
            self.shared.save(&self.membership);
        }
    }

    /// Carry out a management command; `true` when the member has left.
    async fn on_mgmt(&mut self, link: &Link, mgmt: &Mgmt) -> Result<bool, BrokerError> {
        self.remember_dialect(mgmt.dialect);
        let mut connected = true;
        match mgmt.command {
            MgmtCommand::GetStatus => {}
            MgmtCommand::Mute | MgmtCommand::Unmute => {
                self.membership.muted = mgmt.command == MgmtCommand::Mute;
                self.shared.save(&self.membership);
                self.set_state(MemberState::Connected, None);
            }
            MgmtCommand::LeaveGroup | MgmtCommand::Disband => connected = false,
        }
        let status = group::render_member_status(
            mgmt.dialect,
            &self.membership.aic,
            &self.membership.invitation.group_id,
            mgmt.session_id.as_deref(),
            connected,
            self.membership.muted,
        );
        if !connected {
            // Whatever was still to be published goes first; then the last word.
            self.drain(link).await?;
        }
        link.publish(status.to_string().as_bytes()).await?;
        if !connected {
            if let Err(e) = self.shared.store.delete_membership(&self.id) {
                tracing::error!(error = %e, "could not forget the membership");
            }
            // Gone from the host's list before its queue goes from the broker: whoever sees the
            // queue gone must not still find the membership listed.
            self.shared.forget(&self.id);
        }
        Ok(!connected)
    }

    /// Hand a command to its task's worker, starting one if needed.
    fn dispatch(&mut self, work: Work) {
        let key = work
            .inbound
            .command
            .task_id
            .clone()
            .unwrap_or_else(|| work.inbound.command.id.clone());
        let work = match self.workers.get(&key) {
            Some(tx) => match tx.send(work) {
                Ok(()) => return,
                Err(mpsc::error::SendError(work)) => work,
            },
            None => work,
        };
        if self.workers.len() > 1024 {
            self.workers.retain(|_, tx| !tx.is_closed());
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(work);
        self.workers.insert(key, tx);
        let worker = Worker {
            shared: self.shared.clone(),
            agent: self.agent.clone(),
            membership: self.id.clone(),
            aic: self.membership.aic.clone(),
            wake: self.wake.clone(),
        };
        tokio::spawn(worker.run(rx).in_current_span());
    }
}

/// Runs one task's commands in order.
struct Worker {
    shared: Arc<Shared>,
    agent: Arc<Agent>,
    membership: String,
    aic: String,
    wake: Arc<Notify>,
}

impl Worker {
    async fn run(self, mut rx: mpsc::UnboundedReceiver<Work>) {
        loop {
            match tokio::time::timeout(WORKER_IDLE, rx.recv()).await {
                Ok(Some(work)) => self.handle(work).await,
                Ok(None) => return,
                Err(_) => {
                    // Idle: refuse new work, finish what slipped in, then stop.
                    rx.close();
                    while let Ok(work) = rx.try_recv() {
                        self.handle(work).await;
                    }
                    return;
                }
            }
        }
    }

    async fn handle(&self, work: Work) {
        let Work {
            inbound,
            acker,
            redelivered,
        } = work;
        let (kind, form) = (inbound.command.command, inbound.form.clone());
        let (task_id, message_id) = (inbound.command.task_id.clone(), inbound.command.id.clone());
        let span = tracing::info_span!("group_command", task = ?task_id, command = %kind, id = %message_id);
        async move {
            // Every command is checked, not only those the broker marks redelivered: a
            // redelivery after a reconnect need not carry the flag, and a Leader may resend.
            if let Some(task) = &task_id {
                let key = TaskKey::owned(self.agent.id(), inbound.owner.as_deref(), task);
                match self.shared.engine.knows_command(&key, &message_id).await {
                    Ok(true) => {
                        tracing::info!(redelivered, "a command already applied; acknowledged");
                        self.shared
                            .stats
                            .duplicates
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        broker::ack(&acker).await;
                        return;
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::error!(error = %e, "cannot check a redelivered command; requeued");
                        broker::requeue(&acker).await;
                        return;
                    }
                }
            }
            self.shared
                .stats
                .commands
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match self
                .shared
                .engine
                .group_command(&self.agent, inbound, self.membership.clone())
                .await
            {
                Ok(reply) => {
                    // Status changes publish themselves through the outbox; a read answers
                    // with the task as it is.
                    if kind == CommandKind::Get {
                        // Rendered like every other result the group hears of.
                        let notice = TaskNotice::now(&self.aic, form, &reply.task);
                        match self
                            .shared
                            .store
                            .enqueue_result(&self.membership, &Outgoing::Notice(Box::new(notice)))
                        {
                            Ok(ticket) => {
                                if self.shared.store.durable(ticket).await.is_ok() {
                                    self.wake.notify_one();
                                }
                            }
                            Err(e) => {
                                tracing::error!(error = %e, "cannot queue the answer to a get")
                            }
                        }
                    }
                    broker::ack(&acker).await;
                }
                Err(EngineError::Store(e)) => {
                    tracing::error!(error = %e, "group command not stored; requeued");
                    broker::requeue(&acker).await;
                }
                Err(refused) => {
                    // The Leader asked for something that cannot be (an unknown task, bad
                    // params, over a quota): there is no reply channel for errors in group mode.
                    let e = crate::aip_error::engine(refused);
                    tracing::warn!(code = e.code, data = %e.data, "group command refused");
                    self.shared.stats.refused(e.code);
                    broker::ack(&acker).await;
                }
            }
        }
        .instrument(span)
        .await
    }
}
