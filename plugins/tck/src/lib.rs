//! The A2A conformance kit's partner: each scenario of `a2a-tck` is chosen by the prefix of
//! the A2A message id, which the host's A2A door passes in `commandParams.a2a.messageId`.
//!
//! It is an ordinary partner (the same SDK, the same sandbox): a scenario that "completes" a
//! task returns a result, which the A2A door completes for its client; `tck-message-response`
//! answers with a plain reply and no task, which the A2A door sends as a `Message`.

use aiphost_sdk::serde_json::json;
use aiphost_sdk::{DataItem, Decision, File, Outcome, Partner, Product, Task};
use std::time::Duration;

/// The TCK partner.
pub struct Tck;

/// The A2A message id of the command being handled ("" over AIP).
fn message_id(task: &Task) -> String {
    task.params()
        .get("a2a")
        .and_then(|a| a.get("messageId"))
        .and_then(|id| id.as_str())
        .unwrap_or_default()
        .to_string()
}

fn text_product(id: &str, text: &str) -> Product {
    Product::new(id).with_item(DataItem::text(text))
}

impl Partner for Tck {
    fn decide(task: &Task, _input: &[DataItem]) -> Decision {
        let id = message_id(task);
        if id.starts_with("tck-reject-task") {
            Decision::reject("rejected")
        } else if id.starts_with("tck-message-response") {
            // A plain reply and no task: the kit expects a `Message` back (DM-MSG-001).
            Decision::reply("Direct message response")
        } else {
            Decision::Accept
        }
    }

    fn work(task: &mut Task, _input: Vec<DataItem>) -> Outcome {
        let id = message_id(task);
        let has = |prefix: &str| id.starts_with(prefix);
        if has("tck-complete-task") {
            Outcome::Reply {
                products: Vec::new(),
                message: vec![DataItem::text("Hello from TCK")],
            }
        } else if has("tck-input-required") {
            Outcome::ask("Input required: send another message to this task")
        } else if has("tck-artifact-text") {
            Outcome::Done(vec![text_product("artifact-1", "Generated text content")])
        } else if has("tck-artifact-file-url") {
            let file = File::uri("https://example.com/output.txt")
                .named("output.txt")
                .with_mime_type("text/plain");
            Outcome::Done(vec![
                Product::new("artifact-1").with_item(DataItem::file(file)),
            ])
        } else if has("tck-artifact-file") || has("tck-stream-artifact-file") {
            let file = File::bytes(b"tck".to_vec())
                .named("output.txt")
                .with_mime_type("text/plain");
            Outcome::Done(vec![
                Product::new("artifact-1").with_item(DataItem::file(file)),
            ])
        } else if has("tck-artifact-data") {
            let data = DataItem::data(json!({"key": "value", "count": 42}));
            Outcome::Done(vec![Product::new("artifact-1").with_item(data)])
        } else if has("tck-stream-artifact-chunked") {
            for (text, last) in [("chunk-1 ", false), ("chunk-2", true)] {
                if let Err(e) = task.emit_chunk(text_product("artifact-1", text), true, last) {
                    return Outcome::Abort(e.to_string());
                }
            }
            Outcome::Done(Vec::new())
        } else if has("test-resubscribe-message-id") {
            // Working long enough for a client to subscribe to the task while it runs.
            std::thread::sleep(Duration::from_secs(4));
            Outcome::Done(Vec::new())
        } else if has("tck-stream-artifact-text") {
            Outcome::Done(vec![text_product("artifact-1", "Streamed text content")])
        } else if has("tck-stream-ordering-001") {
            Outcome::Done(vec![text_product("artifact-1", "Ordered output")])
        } else if has("tck-stream-001") {
            Outcome::Done(vec![text_product("artifact-1", "Stream hello from TCK")])
        } else if has("tck-stream-003") {
            Outcome::Done(vec![text_product("artifact-1", "Stream task lifecycle")])
        } else if has("tck-stream-002") {
            Outcome::Done(Vec::new())
        } else {
            Outcome::Reply {
                products: Vec::new(),
                message: vec![DataItem::text(format!("Unhandled messageId prefix: {id}"))],
            }
        }
    }
}

aiphost_sdk::export!(Tck);

#[cfg(test)]
mod tests {
    use aiphost_sdk::State;
    use aiphost_sdk::serde_json::Map;
    use aiphost_sdk::testing::{MockHost, Start, Turn};

    use super::*;

    fn send(host: &mut MockHost<Tck>, message_id: &str) -> Turn {
        let params = json!({"a2a": {"messageId": message_id}});
        let start = Start {
            params: params.as_object().cloned().unwrap_or_else(Map::new),
            ..Start::default()
        };
        host.start_with(vec![DataItem::text("hello")], start)
    }

    #[test]
    fn a_message_response_is_a_plain_reply() {
        let mut host = MockHost::<Tck>::new();
        let turn = send(&mut host, "tck-message-response-1");
        assert_eq!(turn.error, None);
        assert_eq!(
            turn.reply,
            Some(vec![DataItem::text("Direct message response")])
        );
        assert_eq!(turn.state, None);
        assert!(host.task_ids().is_empty());
    }

    #[test]
    fn the_other_scenarios_keep_their_tasks() {
        let mut host = MockHost::<Tck>::new();
        let turn = send(&mut host, "tck-complete-task-1");
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert_eq!(turn.text(), "Hello from TCK");
        assert_eq!(turn.reply, None);
        let turn = send(&mut host, "tck-reject-task-1");
        assert_eq!(turn.state, Some(State::Rejected));
        let turn = send(&mut host, "tck-input-required-1");
        assert_eq!(turn.state, Some(State::AwaitingInput));
        let turn = send(&mut host, "tck-stream-artifact-chunked-1");
        let chunks = &turn.product("artifact-1").expect("the artifact").data_items;
        assert_eq!(chunks.len(), 2);
    }
}
