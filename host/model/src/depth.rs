//! One nesting limit for every free-form JSON value a client or a partner gives and the host
//! stores (a data item's `data` and `metadata`, a command's `commandParams`, A2A's `metadata`).
//!
//! Why: the store reads records back with serde_json, which refuses documents nested deeper than
//! 128 levels. A value that was accepted at 121 levels, counted from the request's envelope, ended
//! up deeper than that inside its task's record: the task was acknowledged and could never be
//! read again. So each value is limited on its own, well under what the record around it can
//! add, and refused where it comes in, with the path to where it goes too deep.

use serde_json::Value;

/// The deepest a stored JSON value may nest: `{}` and `[]` are one level, `{"a": []}` two.
pub const MAX_JSON_DEPTH: usize = 64;

/// A value nested deeper than [`MAX_JSON_DEPTH`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TooDeep {
    /// Where it goes too deep: `field` and the keys and indexes below it, the first few of them.
    pub path: String,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} nests deeper than {MAX_JSON_DEPTH} levels (the most the host stores)",
            self.path
        )
    }
}

/// `Ok` if `value` (found at `field`) nests at most [`MAX_JSON_DEPTH`] levels.
pub fn check_depth(value: &Value, field: &str) -> Result<(), TooDeep> {
    check_depth_below(value, field, 0)
}

/// [`check_depth`] of a value found `above` levels inside the value the limit counts from.
pub fn check_depth_below(value: &Value, field: &str, above: usize) -> Result<(), TooDeep> {
    let mut path = Vec::new();
    if exceeds(value, above + 1, &mut path) {
        // The path to the first level too deep can be 64 segments long: the first few say where.
        const SHOWN: usize = 6;
        let mut shown = field.to_string();
        for segment in path.iter().take(SHOWN) {
            shown.push_str(segment);
        }
        if path.len() > SHOWN {
            shown.push('…');
        }
        return Err(TooDeep { path: shown });
    }
    Ok(())
}

/// Whether a container at `level` (or one below it) is deeper than the limit. Recursion stops at
/// the limit, so the stack never holds more than [`MAX_JSON_DEPTH`] frames.
fn exceeds(value: &Value, level: usize, path: &mut Vec<String>) -> bool {
    let children: Box<dyn Iterator<Item = (String, &Value)>> = match value {
        Value::Object(map) => Box::new(map.iter().map(|(k, v)| (format!(".{k}"), v))),
        Value::Array(items) => {
            Box::new(items.iter().enumerate().map(|(i, v)| (format!("[{i}]"), v)))
        }
        _ => return false,
    };
    if level > MAX_JSON_DEPTH {
        return true;
    }
    for (segment, child) in children {
        if !matches!(child, Value::Object(_) | Value::Array(_)) {
            continue;
        }
        path.push(segment);
        if exceeds(child, level + 1, path) {
            return true;
        }
        path.pop();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> Value {
        let mut v = json!("leaf");
        for i in 0..levels {
            v = if i % 2 == 0 {
                json!({ "k": v })
            } else {
                json!([v])
            };
        }
        v
    }

    #[test]
    fn the_limit_is_counted_from_the_value_itself() {
        assert!(check_depth(&json!("scalar"), "x").is_ok());
        assert!(check_depth(&json!({}), "x").is_ok());
        assert!(check_depth(&nested(MAX_JSON_DEPTH), "x").is_ok());
        let err = check_depth(&nested(MAX_JSON_DEPTH + 1), "metadata").unwrap_err();
        assert!(err.path.starts_with("metadata"), "{err}");
        assert!(err.path.ends_with('…'), "{err}");
        assert!(err.to_string().contains("deeper than 64"), "{err}");
        // Wide is fine; the path names the deep branch, not the first one.
        let wide = json!({"a": [1, 2, {"b": 3}], "deep": {"k": nested(MAX_JSON_DEPTH)}});
        let err = check_depth(&wide, "data").unwrap_err();
        assert!(err.path.starts_with("data.deep.k"), "{err}");
    }
}
