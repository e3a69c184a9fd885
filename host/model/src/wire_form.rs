//! [`WireForm`]: how the door that started a task renders what is said of it later, unasked
//! (its notices), kept by the engine and the store without being understood.

use serde::{Deserialize, Serialize};

/// A door's name for the wire form of a task's later messages: AIP's dialect (`"v1"`, `"v2"`).
/// The door chooses it when the task starts and reads it back when it renders a notice; the
/// engine and the store only keep it. Its serde form is the bare string, so records stored when
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
