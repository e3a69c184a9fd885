//! How the store encodes what it keeps: one place, so callers hand it values and read values back,
//! and never choose a format or handle its errors themselves.

use crate::StoreError;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A value as the store keeps it. Made from a value with [`Encoded::of`], read back with
/// [`Encoded::decode`]; its size ([`Encoded::len`]) is what it costs on disk.
///
/// ```
/// # use aiphost_store::Encoded;
/// let stored = Encoded::of(&vec![1, 2, 3]).unwrap();
/// assert_eq!(stored.decode::<Vec<u32>>().unwrap(), [1, 2, 3]);
/// assert!(stored.decode::<String>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded(pub(crate) Vec<u8>);

impl Encoded {
    /// Encode `value`.
    pub fn of(value: &impl Serialize) -> Result<Self, StoreError> {
        serde_json::to_vec(value)
            .map(Encoded)
            .map_err(|e| StoreError::Corrupt(format!("a value could not be encoded: {e}")))
    }

    /// Read the value back; [`StoreError::Corrupt`] if it is not a `T`.
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, StoreError> {
        decode(&self.0)
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty (no value encodes to nothing).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// What was stored, as it was stored.
    pub(crate) fn from_stored(bytes: Vec<u8>) -> Self {
        Encoded(bytes)
    }

    /// The bytes to store.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Read back a value stored as `bytes` (see [`Encoded::decode`]).
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))
}
