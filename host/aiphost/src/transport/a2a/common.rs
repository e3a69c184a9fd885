//! What the A2A methods share: a parameter read by either of its names, the params object, and
//! a read counted against the partner's rate.

use super::entry::Caller;
use super::errors;
use crate::protocol::a2a::A2aError;
use serde_json::{Map, Value};

/// A field by its ProtoJSON name or its proto name (clients send either).
pub(super) fn field<'a>(
    params: &'a Map<String, Value>,
    camel: &str,
    snake: &str,
) -> Option<&'a Value> {
    params
        .get(camel)
        .or_else(|| params.get(snake))
        .filter(|v| !v.is_null())
}

pub(super) fn object(params: &Value) -> Result<&Map<String, Value>, A2aError> {
    params
        .as_object()
        .ok_or_else(|| A2aError::invalid_params("params", "must be an object"))
}

/// Count a request that is not a command against the partner's rate (a command counts in the
/// engine, as over AIP).
pub(super) fn admit_read(caller: &Caller) -> Result<(), A2aError> {
    caller.agent.admit_request().map_err(|e| errors::quota(&e))
}
