//! [`WireForm`]: how a door renders what is said later, unasked — a task's notices (in the
//! dialect of the door that started it), a notification config's notifications (in the form of
//! the door that made it) — kept by the engine and the store without being understood.

use serde::{Deserialize, Serialize};

/// A door's name for the wire form of later messages: AIP's dialect (`"v1"`, `"v2"`) for a
/// task, A2A's (`"a2a"`, `"a2a-v0.3"`) for a push config. The door chooses it and whoever
/// renders reads it back; the engine and the store only keep it. Its serde form is the bare string, so records stored when
/// this was AIP's `Dialect` read unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WireForm(String);

impl WireForm {
    /// The form a door names `name`.
    pub fn new(name: impl Into<String>) -> Self {
        WireForm(name.into())
    }

    /// The door's name for it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_serde_form_is_the_bare_string() {
        let form = WireForm::new("v2");
        assert_eq!(serde_json::to_string(&form).unwrap(), r#""v2""#);
        assert_eq!(
            serde_json::from_str::<WireForm>(r#""v1""#)
                .unwrap()
                .as_str(),
            "v1"
        );
    }
}
