//! One line of a partner's log as the host keeps and shows it: who logged it (partner, version,
//! tenant), for which task (the Leader and the Leader's own task id, never the store's key),
//! its level, message and fields in the partner's order.

use crate::model::Timestamp;
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A log level, least severe first (so `level >= Warn` is "warnings and errors").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `trace`.
    Trace,
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `warn`.
    Warn,
    /// `error`.
    Error,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 5] = [
        LogLevel::Trace,
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warn,
        LogLevel::Error,
    ];

    /// Its name: `trace`, `debug`, `info`, `warn`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
        }
    }

    /// The level named `text` (any case; `warning` too).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim().to_ascii_lowercase();
        if text == "warning" {
            return Some(LogLevel::Warn);
        }
        LogLevel::ALL.into_iter().find(|l| l.as_str() == text)
    }
}

impl From<tracing::Level> for LogLevel {
    fn from(level: tracing::Level) -> Self {
        match level {
            tracing::Level::TRACE => LogLevel::Trace,
            tracing::Level::DEBUG => LogLevel::Debug,
            tracing::Level::INFO => LogLevel::Info,
            tracing::Level::WARN => LogLevel::Warn,
            tracing::Level::ERROR => LogLevel::Error,
        }
    }
}

/// Bytes a record costs beyond its text (its numbers, time, pointers and the ring's slot): what
/// the ring's byte bound counts with the text.
const RECORD_OVERHEAD: usize = 160;

/// One kept line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogRecord {
    /// Its place in its partner's log: 1, 2, ... (per partner, since the host started).
    pub seq: u64,
    /// When the host took it: RFC 3339 in UTC, to the millisecond.
    #[serde(serialize_with = "utc_z")]
    pub time: Timestamp,
    /// Its level.
    pub level: LogLevel,
    /// The partner.
    pub agent: Arc<str>,
    /// The partner's version that logged it (0: an operator's bundle).
    pub version: u64,
    /// The partner's tenant (`None`: the operator's partner).
    pub tenant: Option<Arc<str>>,
    /// The authenticated Leader whose task it was (`None`: an open partner's shared namespace).
    pub leader: Option<String>,
    /// The task id as its Leader knows it (`None`: a line of the host's, such as a gap marker).
    pub task: Option<String>,
    /// The message.
    pub message: String,
    /// The fields, in the partner's order: serialized as one JSON object.
    #[serde(serialize_with = "ordered_object")]
    pub fields: Vec<(String, String)>,
}

impl LogRecord {
    /// What it counts against the ring's byte bound.
    pub fn cost(&self) -> usize {
        RECORD_OVERHEAD
            + self.message.len()
            + self.leader.as_ref().map_or(0, String::len)
            + self.task.as_ref().map_or(0, String::len)
            + self
                .fields
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }
}

fn utc_z<S: Serializer>(time: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&time.to_utc_z())
}

/// Pairs as one JSON object, in their order (a `serde_json::Value` would sort them).
fn ordered_object<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(pairs.len()))?;
    for (key, value) in pairs {
        map.serialize_entry(key, value)?;
    }
    map.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_json_with_its_fields_as_an_object_in_the_partners_order() {
        let record = LogRecord {
            seq: 7,
            time: Timestamp::now(),
            level: LogLevel::Warn,
            agent: Arc::from("echo"),
            version: 2,
            tenant: Some(Arc::from("acme")),
            leader: Some("L1".into()),
            task: Some("t1".into()),
            message: "hello".into(),
            fields: vec![("zeta".into(), "1".into()), ("alpha".into(), "2".into())],
        };
        let text = serde_json::to_string(&record).expect("JSON");
        assert!(
            text.contains(r#""fields":{"zeta":"1","alpha":"2"}"#),
            "{text}"
        );
        let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(value["level"], "warn");
        assert_eq!(value["tenant"], "acme");
        assert_eq!(value["leader"], "L1");
        assert_eq!(value["task"], "t1");
        assert!(value["time"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert!(record.cost() > RECORD_OVERHEAD + 5);
    }

    #[test]
    fn levels_order_by_severity_and_parse_by_name() {
        assert!(LogLevel::Error > LogLevel::Warn && LogLevel::Debug > LogLevel::Trace);
        assert_eq!(LogLevel::parse("WARNING"), Some(LogLevel::Warn));
        assert_eq!(LogLevel::parse(" info "), Some(LogLevel::Info));
        assert_eq!(LogLevel::parse("loud"), None);
        assert_eq!(LogLevel::from(tracing::Level::ERROR), LogLevel::Error);
    }
}
