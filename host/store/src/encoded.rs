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
    /// Encode `value`; [`StoreError::TooDeep`] if it nests deeper than the store can read back.
    ///
    /// What is written can always be read: the one way a value serde_json writes fails to parse
    /// again is nesting past its recursion limit, and that is checked here, on the bytes, before
    /// anything is stored (the doors keep client and partner values far below it; this is the
    /// proof, not the rule).
    pub fn of(value: &impl Serialize) -> Result<Self, StoreError> {
        let bytes = serde_json::to_vec(value)
            .map_err(|e| StoreError::Corrupt(format!("a value could not be encoded: {e}")))?;
        // A value cannot nest deeper than it has brackets: counting them is one vectorised
        // pass, where following strings and escapes is a byte at a time (1.5 % of a durable
        // start's CPU when done for every value, issue 35). Most values stop here.
        if opening_brackets(&bytes) <= MAX_STORED_DEPTH {
            return Ok(Encoded(bytes));
        }
        let depth = nesting(&bytes);
        if depth > MAX_STORED_DEPTH {
            return Err(StoreError::TooDeep {
                depth,
                limit: MAX_STORED_DEPTH,
            });
        }
        Ok(Encoded(bytes))
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

/// The deepest nesting serde_json parses back (its recursion limit is 128).
pub const MAX_STORED_DEPTH: usize = 127;

/// The `[` and `{` in `bytes`, in strings too: a bound on how deep it nests.
fn opening_brackets(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'[' || b == b'{').count()
}

/// How deep the arrays and objects of the JSON text `bytes` nest (strings skipped, escapes
/// included): one pass, no allocation.
fn nesting(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Read back a value stored as `bytes` (see [`Encoded::decode`]).
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn nested(levels: usize) -> Value {
        let mut v = json!("a \\ \"tricky\" [string] {with} brackets");
        for i in 0..levels {
            v = if i % 2 == 0 {
                json!({ "k": v, "s": "]}" })
            } else {
                json!([v, "[{"])
            };
        }
        v
    }

    /// What is stored reads back, up to the deepest value the store takes; one level more is
    /// refused before anything is stored, never stored unreadable.
    #[test]
    fn what_is_encoded_decodes() {
        for levels in [0, 1, 2, 63, 64, 65, 100, MAX_STORED_DEPTH] {
            let value = nested(levels);
            let stored = Encoded::of(&value).unwrap_or_else(|e| panic!("{levels}: {e}"));
            assert_eq!(nesting(&stored.0), levels);
            // The bound that lets most values skip the walk holds.
            assert!(opening_brackets(&stored.0) >= levels, "{levels}");
            assert_eq!(stored.decode::<Value>().unwrap(), value, "{levels}");
        }
        // Plain nesting, no brackets in strings: the count is the depth, and the walk decides
        // from one level past the limit.
        let plain = |levels: usize| (0..levels).fold(json!(1), |v, _| json!([v]));
        assert!(Encoded::of(&plain(MAX_STORED_DEPTH)).is_ok());
        assert!(Encoded::of(&plain(MAX_STORED_DEPTH + 1)).is_err());
        for levels in [MAX_STORED_DEPTH + 1, 200] {
            let err = Encoded::of(&nested(levels)).unwrap_err();
            assert!(matches!(err, StoreError::TooDeep { .. }), "{levels}: {err}");
            // And indeed serde_json could not have read it back.
            let bytes = serde_json::to_vec(&nested(levels)).unwrap();
            assert!(serde_json::from_slice::<Value>(&bytes).is_err(), "{levels}");
        }
        // Wide values: many keys and items, every JSON type.
        let wide = json!({
            "n": null, "t": true, "i": -3, "u": u64::MAX, "f": 1.5e300, "s": "\u{1f600}\n",
            "list": (0..1000).map(|i| json!({"i": i, "v": [i, "x"]})).collect::<Vec<_>>(),
        });
        assert_eq!(Encoded::of(&wide).unwrap().decode::<Value>().unwrap(), wide);
    }
}
