//! The durable key-value store the host keeps for a partner.

use std::fmt;
use std::rc::Rc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::aiphost::partner::kv as wit_kv;
use crate::task::Host;

/// A durable key-value store kept by the host, private to this partner: either the current task's
/// entries ([`Task::kv`](crate::Task::kv)) or the entries shared by all its tasks
/// ([`Task::agent_kv`](crate::Task::agent_kv)).
///
/// ```no_run
/// # use aiphost_sdk::Task;
/// # fn turn(task: &Task) -> Result<(), aiphost_sdk::KvError> {
/// let kv = task.kv();
/// let turns: u32 = kv.get_json("turns")?.unwrap_or(0);
/// kv.set_json("turns", &(turns + 1))?;
/// # Ok(()) }
/// ```
pub struct Kv {
    host: Rc<dyn Host>,
    scope: wit_kv::Scope,
}

impl fmt::Debug for Kv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = match self.scope {
            wit_kv::Scope::Task => "task",
            wit_kv::Scope::Agent => "agent",
        };
        f.debug_struct("Kv").field("scope", &scope).finish()
    }
}

/// Why a key-value operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvError {
    /// The key or value is larger than the host allows (the limit is in the message).
    TooLarge(String),
    /// The partner's storage quota is used up.
    QuotaExceeded(String),
    /// The store failed; try again later.
    Unavailable(String),
    /// A value could not be encoded as JSON, or a stored value is not the JSON expected
    /// ([`Kv::get_json`] and [`Kv::set_json`] only).
    Json(String),
}

impl KvError {
    fn from_wit(err: wit_kv::KvError) -> Self {
        match err {
            wit_kv::KvError::TooLarge(m) => KvError::TooLarge(m),
            wit_kv::KvError::QuotaExceeded(m) => KvError::QuotaExceeded(m),
            wit_kv::KvError::Unavailable(m) => KvError::Unavailable(m),
        }
    }
}

impl fmt::Display for KvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvError::TooLarge(m) => write!(f, "key or value too large: {m}"),
            KvError::QuotaExceeded(m) => write!(f, "storage quota exceeded: {m}"),
            KvError::Unavailable(m) => write!(f, "key-value store unavailable: {m}"),
            KvError::Json(m) => write!(f, "JSON value error: {m}"),
        }
    }
}

impl std::error::Error for KvError {}

impl Kv {
    pub(crate) fn new(host: Rc<dyn Host>, scope: wit_kv::Scope) -> Self {
        Kv { host, scope }
    }

    /// The value stored under `key`, or `None`.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, KvError> {
        self.host.kv_get(self.scope, key).map_err(KvError::from_wit)
    }

    /// Stores `value` under `key`, replacing any previous value.
    pub fn set(&self, key: &str, value: &[u8]) -> Result<(), KvError> {
        self.host
            .kv_set(self.scope, key, value)
            .map_err(KvError::from_wit)
    }

    /// Removes `key` (removing a missing key is not an error).
    pub fn delete(&self, key: &str) -> Result<(), KvError> {
        self.host
            .kv_delete(self.scope, key)
            .map_err(KvError::from_wit)
    }

    /// The value stored under `key`, decoded from JSON, or `None`.
    pub fn get_json<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, KvError> {
        match self.get(key)? {
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| KvError::Json(format!("{key}: {e}"))),
            None => Ok(None),
        }
    }

    /// Stores `value` under `key` as JSON.
    pub fn set_json<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<(), KvError> {
        let bytes = serde_json::to_vec(value).map_err(|e| KvError::Json(format!("{key}: {e}")))?;
        self.set(key, &bytes)
    }
}
