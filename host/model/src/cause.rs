//! Why the host itself moved a task (not its Leader, not its partner): one of the task's
//! awaiting timers ran out (`engine/expiry.rs`).
//!
//! The status the host writes then says so twice: in words, for people, as its text item
//! (`awaitingInputTimeout of 60000 ms expired`), and typed, as that item's metadata [`CAUSE`]
//! (`{"aiphost.cause": "awaitingInputTimeout"}`), so that a door telling a form's timeout from
//! a cancel reads the cause, never the words. The key is not [`crate::activity::KIND`]: the item
//! is still what the status says for people (a door shows it as it shows any unmarked text).

use super::values::{DataItem, JsonObject};
use serde_json::Value;

/// The item metadata key naming why the host moved the task (a [`Cause`]).
pub const CAUSE: &str = "aiphost.cause";

/// Why the host moved a task on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The task's `awaitingInputTimeout` ran out: it was canceled.
    AwaitingInputTimeout,
    /// The task's `awaitingCompletionTimeout` ran out: it was completed.
    AwaitingCompletionTimeout,
}

impl Cause {
    /// Its name: the `commandParams` key of the timer that ran out.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::AwaitingInputTimeout => "awaitingInputTimeout",
            Cause::AwaitingCompletionTimeout => "awaitingCompletionTimeout",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [
            Cause::AwaitingInputTimeout,
            Cause::AwaitingCompletionTimeout,
        ]
        .into_iter()
        .find(|c| c.as_str() == name)
    }

    /// The status item that says it: `text` for people, its metadata naming the cause.
    pub fn item(self, text: impl Into<String>) -> DataItem {
        let mut metadata = JsonObject::new();
        metadata.insert(CAUSE.into(), Value::String(self.as_str().into()));
        DataItem::Text {
            text: text.into(),
            metadata: Some(metadata),
        }
    }

    /// The cause a status's items name, if the host moved the task itself.
    pub fn of(items: &[DataItem]) -> Option<Cause> {
        items.iter().find_map(|item| {
            let metadata = match item {
                DataItem::Text { metadata, .. }
                | DataItem::File { metadata, .. }
                | DataItem::Data { metadata, .. } => metadata.as_ref(),
            };
            Cause::parse(metadata?.get(CAUSE)?.as_str()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity;
    use serde_json::json;

    #[test]
    fn a_cause_is_found_again_in_its_status_items_and_nowhere_else() {
        for cause in [
            Cause::AwaitingInputTimeout,
            Cause::AwaitingCompletionTimeout,
        ] {
            let item = cause.item(format!("{} of 5 ms expired", cause.as_str()));
            assert_eq!(Cause::of(std::slice::from_ref(&item)), Some(cause));
            // Still words for people: no `aiphost.kind`, so doors show it as any text.
            assert_eq!(activity::kind_of(&item), None);
        }
        assert_eq!(
            serde_json::to_value(Cause::AwaitingInputTimeout.item("t")).unwrap(),
            json!({"type": "text", "text": "t",
                   "metadata": {"aiphost.cause": "awaitingInputTimeout"}})
        );
        // The words alone name no cause (a Leader's cancel may say anything), nor does an
        // unknown name.
        let said = DataItem::text("awaitingInputTimeout of 5 ms expired");
        assert_eq!(Cause::of(&[said]), None);
        let unknown: DataItem = serde_json::from_value(
            json!({"type": "text", "text": "x", "metadata": {"aiphost.cause": "boredom"}}),
        )
        .unwrap();
        assert_eq!(Cause::of(&[unknown]), None);
    }
}
