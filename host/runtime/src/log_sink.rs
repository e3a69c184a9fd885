//! Where a partner's `log` calls go: a [`LogSink`] the host gives each partner's code
//! ([`crate::PartnerCode::logging_to`]), handed one bounded [`PartnerLog`] per call.
//!
//! The runtime knows the partner's id and the task as the store keys it, nothing of tenants or
//! Leaders: the sink (the host's) adds those. A runtime given no sink writes each line to
//! `tracing` ([`TracingSink`]), as the engine's tests and the benches need nothing more.

/// Longest log message kept (the rest is cut, and `…` marks the cut).
pub const MAX_LOG_BYTES: usize = 8 * 1024;
/// Fields kept of one line (those after are dropped).
pub const MAX_LOG_FIELDS: usize = 32;
/// Longest field name kept (the rest is cut).
pub const MAX_FIELD_KEY_BYTES: usize = 64;
/// Longest field value kept (the rest is cut, and `…` marks the cut).
pub const MAX_FIELD_VALUE_BYTES: usize = 1024;

/// One `log` call of a partner, bounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartnerLog {
    /// Its level.
    pub level: tracing::Level,
    /// Its message, at most [`MAX_LOG_BYTES`] (and the `…` of a cut).
    pub message: String,
    /// Its fields in the partner's order: at most [`MAX_LOG_FIELDS`], names unique (the first of
    /// a repeated name is kept), each bounded.
    pub fields: Vec<(String, String)>,
}

impl PartnerLog {
    /// A line as the partner sent it, cut to the bounds above: a partner's log is its own
    /// business until it costs the host memory.
    pub fn bounded(level: tracing::Level, message: String, fields: Vec<(String, String)>) -> Self {
        let mut kept: Vec<(String, String)> = Vec::with_capacity(fields.len().min(MAX_LOG_FIELDS));
        for (key, value) in fields {
            if kept.len() == MAX_LOG_FIELDS {
                break;
            }
            let key = cut(key, MAX_FIELD_KEY_BYTES, "");
            // A JSON object cannot say one name twice: the first is what the partner meant.
            if kept.iter().any(|(k, _)| *k == key) {
                continue;
            }
            kept.push((key, cut(value, MAX_FIELD_VALUE_BYTES, "…")));
        }
        PartnerLog {
            level,
            message: cut(message, MAX_LOG_BYTES, "…"),
            fields: kept,
        }
    }

    /// The bytes of text it holds: its message, field names and values.
    pub fn text_bytes(&self) -> usize {
        self.message.len()
            + self
                .fields
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }
}

/// `text` cut to at most `max` bytes at a character boundary, `mark` appended after a cut.
fn cut(mut text: String, max: usize, mark: &str) -> String {
    if text.len() > max {
        let mut at = max;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
        text.push_str(mark);
    }
    text
}

/// Where a partner's log lines go.
pub trait LogSink: Send + Sync + 'static {
    /// One line of partner `agent`, logged while it worked on `task` (the task as the store keys
    /// it: `{leader}\u{1f}{task}` for an authenticated Leader's task).
    fn log(&self, agent: &str, task: &str, line: PartnerLog);
}

/// Each line to `tracing` (target `partner`), its fields as one JSON object: what a runtime does
/// with no other sink.
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingSink;

impl LogSink for TracingSink {
    fn log(&self, agent: &str, task: &str, line: PartnerLog) {
        let fields = fields_json(&line.fields);
        let message = &line.message;
        use tracing::Level;
        match line.level {
            Level::TRACE => tracing::trace!(target: "partner", agent, task, fields, "{message}"),
            Level::DEBUG => tracing::debug!(target: "partner", agent, task, fields, "{message}"),
            Level::INFO => tracing::info!(target: "partner", agent, task, fields, "{message}"),
            Level::WARN => tracing::warn!(target: "partner", agent, task, fields, "{message}"),
            Level::ERROR => tracing::error!(target: "partner", agent, task, fields, "{message}"),
        }
    }
}

/// `fields` as one JSON object, in their order (`tracing` takes no names made at run time).
pub fn fields_json(fields: &[(String, String)]) -> String {
    // serde_json's map keeps no order without its `preserve_order` feature: write it out.
    let mut text = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&serde_json::Value::String(key.clone()).to_string());
        text.push(':');
        text.push_str(&serde_json::Value::String(value.clone()).to_string());
    }
    text.push('}');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    #[test]
    fn a_line_is_cut_to_its_bounds_and_keeps_its_fields_in_order() {
        let fields = (0..40)
            .map(|i| (format!("k{i}"), "v".repeat(i * 100)))
            .chain([("k0".to_string(), "again".to_string())])
            .collect();
        let line = PartnerLog::bounded(Level::INFO, "é".repeat(MAX_LOG_BYTES), fields);
        assert!(line.message.len() <= MAX_LOG_BYTES + "…".len());
        assert!(line.message.ends_with('…'));
        assert_eq!(line.fields.len(), MAX_LOG_FIELDS);
        let keys: Vec<&str> = line.fields.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys[..3], ["k0", "k1", "k2"]);
        assert_eq!(line.fields[0].1, "", "the first k0 is kept, not the repeat");
        assert_eq!(line.fields[10].1.len(), 1000);
        assert_eq!(line.fields[11].1.len(), MAX_FIELD_VALUE_BYTES + "…".len());
        let long_key = PartnerLog::bounded(
            Level::INFO,
            String::new(),
            vec![("x".repeat(100), String::new())],
        );
        assert_eq!(long_key.fields[0].0.len(), MAX_FIELD_KEY_BYTES);
    }

    #[test]
    fn fields_are_one_json_object_in_the_partners_order() {
        let fields = vec![
            ("task".to_string(), "j1".to_string()),
            ("chars".to_string(), "9".to_string()),
            ("a\"b".to_string(), "x\ny".to_string()),
        ];
        let text = fields_json(&fields);
        assert_eq!(text, r#"{"task":"j1","chars":"9","a\"b":"x\ny"}"#);
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(parsed["chars"], "9");
        assert_eq!(fields_json(&[]), "{}");
    }
}
