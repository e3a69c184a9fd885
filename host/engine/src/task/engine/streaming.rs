//! The streaming entry point of the engine: a command that came with the `stream` method answers
//! with the task's events rather than a snapshot.

use super::admission::Admitted;
use super::notifications::{Split, Subscribe};
use super::{EngineError, Incoming, StreamStart, TaskEngine};
use crate::agent::Agent;
use crate::task::feed::EventFeed;
use aiphost_model::{CommandKind, Inbound, InvalidField, JsonObject};
use std::sync::Arc;
use tracing::Instrument;

impl TaskEngine {
    /// Carry out a Leader command that came with the `stream` method: the answer is the task's
    /// events, from the ones this command causes on (all of them for a start or a re-stream from
    /// the beginning), live until the task ends. The command may subscribe the task to
    /// notifications (`subscribe`), as `command`'s does.
    pub async fn stream(
        &self,
        agent: &Arc<Agent>,
        inbound: Inbound,
        subscribe: Option<Subscribe>,
    ) -> Result<StreamStart, EngineError> {
        self.check_inline_target(subscribe.as_ref()).await?;
        let Admitted {
            key,
            task_id,
            command,
            form,
            policy,
            history,
            span,
        } = self.let_in(agent, inbound, "stream")?;
        let kind = command.command;
        let after_param = match kind {
            CommandKind::ReStream => last_event_seq(&command.params)?,
            _ => None,
        };
        let command_ids = (command.session_id.clone(), command.group_id.clone());
        let Split { notify, inline } =
            self.split_subscribe(&key, subscribe, kind == CommandKind::Start)?;
        async move {
            // Follow before anything can happen to the task, so no event slips past the stream.
            let follow = self.inner.watermarks.follow(&key);
            let slot = self.hold(&key);
            let applied = self
                .command_in_slot(
                    agent,
                    &slot,
                    Incoming {
                        command,
                        task_id: task_id.clone(),
                        form,
                        policy,
                        history,
                        notify,
                        inline,
                        group: None,
                    },
                    false,
                )
                .await;
            drop(slot);
            let applied = applied?;
            if kind == CommandKind::Get {
                let reply = applied
                    .reply
                    .ok_or(EngineError::Internal("get was not answered"))?;
                let seq = reply.seq;
                return Ok(StreamStart::Snapshot { reply, seq });
            }
            // The stream starts from what is durable now; later events reach it through the
            // watermark it follows already.
            let point = self.stream_point(&key).await?;
            self.inner.store.durable(point.ticket).await?;
            let (last, ended) = (point.last, point.ended);
            let after = match kind {
                CommandKind::ReStream => {
                    let after = after_param.unwrap_or(0);
                    if after > last {
                        return Err(InvalidField::new(
                            "commandParams.lastEventSeq",
                            format!("is {after}, beyond the task's newest event {last}"),
                        )
                        .into());
                    }
                    let oldest = self.inner.store.first_event_seq(&key)?;
                    if after < last && oldest.is_none_or(|first| first > after + 1) {
                        return Err(EngineError::EventsGone {
                            task_id,
                            last_event_seq: after,
                            oldest_available_seq: oldest,
                        });
                    }
                    after
                }
                // Start for an existing task: replay everything.
                CommandKind::Start if applied.reply.is_some() => 0,
                _ => applied.seq_before,
            };
            let ids = point.ids.unwrap_or(command_ids);
            // A start not yet decided has no record: its policy says what it will be.
            let completes = point.completes_on_result
                || (kind == CommandKind::Start && policy.complete_on_result);
            Ok(StreamStart::Events(
                EventFeed::new(
                    key.clone(),
                    ids,
                    self.inner.store.clone(),
                    follow,
                    after,
                    last,
                    ended,
                )
                .completing_on_result(completes)
                .responding_within(point.response_timeout),
            ))
        }
        .instrument(span)
        .await
    }
}

/// `lastEventSeq` of a re-stream: absent or null = from the first event.
fn last_event_seq(params: &JsonObject) -> Result<Option<u64>, InvalidField> {
    match params.get("lastEventSeq") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            InvalidField::new(
                "commandParams.lastEventSeq",
                "must be a non-negative whole number or null",
            )
        }),
    }
}
