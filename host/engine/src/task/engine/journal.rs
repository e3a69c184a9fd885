//! The write path: every change of a task goes to the store through [`TaskEngine::store_change`],
//! with its events, product chunks, history entries, notifications and group results in one
//! write; what nobody can have seen yet may be kept back and written with the next change.

use super::TaskEngine;
use super::slots::{Slot, SlotState};
use crate::task::live_tasks::liveness;
use crate::task::record::TaskRecord;
use aiphost_model::notification::NotificationConfig;
use aiphost_model::{EventKind, TaskEvent, TaskNotice, TaskState, Timestamp};
use aiphost_store::{
    ChunkWrite, Encoded, OutboxEntry, Outgoing, PendingWrite, StoreError, TaskKey, TaskWrite,
    Ticket,
};

/// Events and product chunks of the slot's task not yet handed to the store.
#[derive(Default)]
pub(super) struct Unwritten {
    pub(super) events: Vec<(u64, Encoded)>,
    pub(super) chunks: Vec<ChunkWrite>,
    /// Notification configs sent with the command that made these changes: stored with them.
    pub(super) configs: Vec<NotificationConfig>,
}

impl Unwritten {
    pub(super) fn is_empty(&self) -> bool {
        self.events.is_empty() && self.chunks.is_empty() && self.configs.is_empty()
    }

    fn bytes(&self) -> usize {
        bytes_of(&self.events, &self.chunks)
    }
}

/// The bytes of encoded events and chunks.
pub(super) fn bytes_of(events: &[(u64, Encoded)], chunks: &[ChunkWrite]) -> usize {
    events.iter().map(|(_, e)| e.len()).sum::<usize>()
        + chunks.iter().map(|c| c.items.len()).sum::<usize>()
}

/// The most events a running invocation may keep unwritten: bounds the memory they take and how
/// much a partner that never rests can pile up before it is written out.
pub(super) const MAX_UNWRITTEN_EVENTS: usize = 64;

/// The most bytes of events and chunks an invocation may keep unwritten: a partner streaming
/// large chunks has them written as they come, not held in memory (each is held twice, as its
/// event and as its product chunk).
pub(super) const MAX_UNWRITTEN_BYTES: usize = 256 * 1024;

impl TaskEngine {
    /// Write the slot's record with the events of this change, move its deadline index entry,
    /// arm a new deadline, and tell the task's followers once the write is durable.
    ///
    /// A change made by a running invocation that leaves the task moving (accepted, working, a
    /// product chunk) and that nobody is told of — no notification, no group result, no stream
    /// following the task — is kept in the slot instead and written with the next change that is
    /// written: a `start` that passes through accepted, working and a product to
    /// awaiting-completion costs one store write instead of four. Nothing is lost that anybody
    /// was promised: every answer and every stream first writes out what the slot keeps
    /// ([`TaskEngine::write_out`]), and an invocation's end always does.
    pub(super) async fn persist(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        events: Vec<EventKind>,
    ) -> Result<(), StoreError> {
        let may_keep_back = st.running.is_some();
        self.store_change(slot, st, events, may_keep_back).await
    }

    /// [`TaskEngine::persist`], told whether this change may be kept back in the slot.
    ///
    /// The slot is brought up to date as soon as the change is handed to the store, before it
    /// is applied: if the caller goes away while it waits, the change is applied all the same
    /// (see [`aiphost_store::PendingWrite`]) and the slot already says so.
    pub(super) async fn store_change(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        events: Vec<EventKind>,
        may_keep_back: bool,
    ) -> Result<(), StoreError> {
        let Some(record) = st.record.as_mut() else {
            return Ok(());
        };
        let at = Timestamp::now();
        let appended = events.len() as u64;
        let mut logged = Vec::with_capacity(events.len());
        let mut chunks = Vec::new();
        let mut ends = false;
        let mut notified = Vec::new();
        let mut status_changed = false;
        for kind in events {
            record.last_event_seq += 1;
            if let EventKind::Created { status, .. } | EventKind::Status { status } = &kind
                && record.subscriptions().any(|n| n.wants(status.state))
            {
                notified.push((record.last_event_seq, status.state));
            }
            status_changed |= matches!(kind, EventKind::Created { .. } | EventKind::Status { .. });
            if let EventKind::Chunk { chunk } = &kind {
                chunks.push(ChunkWrite {
                    product: chunk.product.id.clone(),
                    seq: record.last_event_seq,
                    items: Encoded::of(&chunk.product.data_items)?,
                    replaces: !chunk.append,
                });
            }
            let event = TaskEvent {
                seq: record.last_event_seq,
                at,
                kind,
            };
            ends |= event.is_terminal();
            logged.push((event.seq, Encoded::of(&event)?));
        }
        let outbox = self.outbox_entries(&slot.key, record, &notified);
        let published_to = record
            .group
            .clone()
            .filter(|m| status_changed && self.inner.fan_out.group_is_live(m));
        let published = match &published_to {
            Some(membership) => vec![(membership.clone(), self.group_result(&slot.key, record))],
            None => Vec::new(),
        };
        let last = record.last_event_seq;
        let unseen = may_keep_back
            && !ends
            && !record.state().is_resting()
            && notified.is_empty()
            && published_to.is_none()
            && st.unwritten.events.len() + logged.len() <= MAX_UNWRITTEN_EVENTS
            && st.unwritten.bytes() + bytes_of(&logged, &chunks) <= MAX_UNWRITTEN_BYTES
            && !self.inner.watermarks.has_followers(&slot.key);
        if unseen {
            st.unwritten.events.extend(logged);
            st.unwritten.chunks.extend(chunks);
            self.inner.observer.events(&slot.key.agent, appended);
            st.changed();
            return Ok(());
        }
        let held_back = std::mem::take(&mut st.unwritten);
        let newly = appended;
        let appended = appended + held_back.events.len() as u64;
        let mut events = held_back.events;
        events.extend(logged);
        let mut all_chunks = held_back.chunks;
        all_chunks.extend(chunks);
        let keep = self.inner.defaults.event_retention_count.max(1);
        let trim_below = (appended > 0 && last > keep).then(|| last - keep + 1);
        let (old, new) = (st.stored_deadline, record.deadline_ms);
        let live = liveness(record.state());
        let stored = record.encoded()?;
        let listing = super::reads::listing_of(record);
        let history = record.take_history_writes();
        let written = self.inner.store.write_task(TaskWrite {
            key: &slot.key,
            record: Some(stored),
            deadline: (old, new),
            live: (st.stored_live, live),
            history: history.put,
            history_dropped: history.dropped,
            events,
            trim_below,
            ended_at: ends.then(|| at.unix_millis()),
            delete_at: ends
                .then(|| self.retention_of(&slot.key))
                .flatten()
                .map(|ms| {
                    at.unix_millis()
                        .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX))
                }),
            chunks: all_chunks,
            outbox,
            published,
            listing: Some(listing),
            configs: held_back.configs,
            // Read from the store and found absent, or made here and never written: nothing
            // of it is stored (every write of a task goes through its slot).
            new_task: !st.stored,
        });
        let pending = match written {
            Ok(pending) => pending,
            Err(e) => {
                // The cached record is ahead of the store now: forget it, so the next command
                // reads what is really stored, and wake whoever waits on the task.
                self.forget_cached(slot, st);
                return Err(e);
            }
        };
        st.ticket = pending.ticket();
        st.stored = true;
        if let Some(&(newest, _)) = notified.last() {
            let (fan_out, key) = (self.inner.fan_out.clone(), slot.key.clone());
            self.when_durable(st.ticket, "notifications", move || {
                fan_out.notifications_due(key, newest)
            });
        }
        if let Some(membership) = published_to {
            let fan_out = self.inner.fan_out.clone();
            self.when_durable(st.ticket, "group results", move || {
                fan_out.group_results_due(&membership)
            });
        }
        st.stored_deadline = new;
        st.stored_live = live;
        match (old, new) {
            (_, Some(at)) if Some(at) != old => self.inner.timers.arm(at, slot.key.clone()),
            (Some(_), None) => self.inner.timers.disarm(slot.key.clone()),
            _ => {}
        }
        if appended > 0 {
            self.inner.observer.events(&slot.key.agent, newly);
            if self.inner.watermarks.has_followers(&slot.key) {
                let (marks, key) = (self.inner.watermarks.clone(), slot.key.clone());
                self.when_durable(st.ticket, "events", move || marks.advance(&key, last));
            }
        }
        self.applied(slot, st, pending).await
    }

    /// Wake whoever waits on the task, then wait until `pending`, the slot's newest change, is
    /// in the store. The wake goes first so that no waiter misses it if this caller goes away
    /// meanwhile; a waiter reads the task under the slot's lock, which this caller holds until
    /// the change is applied. A change that failed to apply leaves the cached record ahead of
    /// the store: forget it (another wake), so the next command reads what is really stored.
    async fn applied(
        &self,
        slot: &Slot,
        st: &mut SlotState,
        pending: PendingWrite,
    ) -> Result<(), StoreError> {
        st.changed();
        if let Err(e) = pending.applied().await {
            self.forget_cached(slot, st);
            return Err(e);
        }
        Ok(())
    }

    /// Hand the store what the slot has kept back (see [`TaskEngine::persist`]), before anybody
    /// is shown the task or its events.
    pub(super) async fn write_out(
        &self,
        slot: &Slot,
        st: &mut SlotState,
    ) -> Result<(), StoreError> {
        let history = st
            .record
            .as_ref()
            .is_some_and(TaskRecord::has_history_writes);
        if st.unwritten.is_empty() && !history {
            return Ok(());
        }
        self.store_change(slot, st, Vec::new(), false).await
    }

    /// Store what a command that changed nothing added to the task's history: its entry (and
    /// the entries it pushed out), not the record. With changes kept back in the slot, those go
    /// too, in one write.
    pub(super) async fn persist_history(
        &self,
        slot: &Slot,
        st: &mut SlotState,
    ) -> Result<(), StoreError> {
        let rewrite = st.record.as_ref().is_some_and(TaskRecord::must_rewrite);
        if rewrite || !st.unwritten.is_empty() {
            return self.store_change(slot, st, Vec::new(), false).await;
        }
        let Some(record) = st.record.as_mut() else {
            return Ok(());
        };
        let history = record.take_history_writes();
        let written = self.inner.store.write_task(TaskWrite {
            history: history.put,
            history_dropped: history.dropped,
            ..TaskWrite::without_record(&slot.key)
        });
        let pending = match written {
            Ok(pending) => pending,
            Err(e) => {
                self.forget_cached(slot, st);
                return Err(e);
            }
        };
        st.ticket = pending.ticket();
        self.applied(slot, st, pending).await
    }

    /// The outbox entries for the notified statuses `seqs` (with the state each entered) of
    /// `record`: the task as it now is, to each config that wants the state in turn (each
    /// config's door renders it: in the wire form the task's starting door chose, or as A2A).
    pub(super) fn outbox_entries(
        &self,
        key: &TaskKey,
        record: &TaskRecord,
        seqs: &[(u64, TaskState)],
    ) -> Vec<(u64, OutboxEntry)> {
        if seqs.is_empty() {
            return Vec::new();
        }
        let aic = self.aic_of(key);
        seqs.iter()
            .filter_map(|&(seq, state)| {
                let mut configs = record
                    .subscriptions()
                    .filter(|s| s.wants(state))
                    .map(|s| s.config_id.clone());
                let first = configs.next()?;
                let notice = TaskNotice::now(&aic, record.form.clone(), &record.task);
                Some((
                    seq,
                    OutboxEntry::new(&first, notice).then(configs.collect()),
                ))
            })
            .collect()
    }

    /// The AIC of the agent hosting `key`'s task (its `senderId`).
    pub(super) fn aic_of(&self, key: &TaskKey) -> String {
        self.inner
            .agents
            .get(&key.agent)
            .map(|a| a.aic().to_string())
            .unwrap_or_default()
    }

    /// The task as its group hears of it (the group door renders it).
    pub(super) fn group_result(&self, key: &TaskKey, record: &TaskRecord) -> Outgoing {
        Outgoing::Notice(Box::new(TaskNotice::now(
            &self.aic_of(key),
            record.form.clone(),
            &record.task,
        )))
    }

    /// Run `announce` once the write behind `ticket` is on disk: streams and webhooks, like
    /// replies, never tell of a change that a crash could take back.
    pub(super) fn when_durable(
        &self,
        ticket: Ticket,
        what: &'static str,
        announce: impl FnOnce() + Send + 'static,
    ) {
        let store = self.inner.store.clone();
        // In the caller's span (an invocation's, a command's): the wait is traced as theirs.
        let wait = async move {
            match store.durable(ticket).await {
                Ok(()) => announce(),
                Err(e) => tracing::error!(error = %e, "{what} could not be made durable"),
            }
        };
        self.inner
            .host
            .spawn(tracing::Instrument::in_current_span(wait));
    }
}
