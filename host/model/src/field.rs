//! [`InvalidField`]: one input field is wrong, said without a protocol's error code, so that
//! code which is not a door (the engine) can check input with these functions and say what it
//! found in its own error; each door renders it (AIP: -32602 `{field, reason}`, `aiphost-protocol`'s `jsonrpc.rs`).

/// An input field that is wrong: where (a dotted path such as `params.taskId`) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} {reason}")]
pub struct InvalidField {
    /// The field's path.
    pub field: String,
    /// What is wrong with it, worded to follow the field's name ("must not be empty").
    pub reason: String,
}

impl InvalidField {
    /// `field` is wrong because of `reason`.
    pub fn new(field: &str, reason: impl Into<String>) -> Self {
        InvalidField {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}
