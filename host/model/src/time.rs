//! Timestamps as AIP puts them on the wire: ISO 8601 with an offset.
//!
//! Leaders send any offset (`+08:00` in the v01.00 examples, `+00:00` with microseconds from the
//! reference SDK, `Z` from others). We keep the offset we were given so a history reads back as it was
//! sent, but every comparison is between instants, never between strings.

use chrono::{DateTime, FixedOffset, NaiveDateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::fmt;

/// An instant with the offset it was written in.
#[derive(Clone, Copy, Debug)]
pub struct Timestamp(DateTime<FixedOffset>);

impl Timestamp {
    /// Now, in UTC, to the microsecond (the precision the reference SDK writes).
    pub fn now() -> Self {
        let now = Utc::now();
        let micros = now.timestamp_micros();
        let truncated = DateTime::from_timestamp_micros(micros).unwrap_or(now);
        Timestamp(truncated.fixed_offset())
    }

    /// Now as Unix milliseconds (for deadlines and records, not for the wire).
    pub fn now_ms() -> i64 {
        Utc::now().timestamp_millis()
    }

    /// Parse leniently: RFC 3339 (`Z` or `±HH:MM`), `±HHMM`, or no offset at all (taken as UTC).
    ///
    /// ```
    /// use aiphost_model::Timestamp;
    /// let a = Timestamp::parse("2025-09-01T12:00:00+08:00").unwrap();
    /// let b = Timestamp::parse("2025-09-01T04:00:00Z").unwrap();
    /// assert_eq!(a, b);
    /// ```
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Ok(t) = DateTime::parse_from_rfc3339(text) {
            return Some(Timestamp(t));
        }
        if let Ok(t) = DateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f%z") {
            return Some(Timestamp(t));
        }
        for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"] {
            if let Ok(naive) = NaiveDateTime::parse_from_str(text, format) {
                return Some(Timestamp(naive.and_utc().fixed_offset()));
            }
        }
        None
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// The instant in UTC, to the millisecond, with a `Z` (the form A2A's ProtoJSON requires).
    ///
    /// ```
    /// use aiphost_model::Timestamp;
    /// let t = Timestamp::parse("2025-09-01T12:00:00.5+08:00").unwrap();
    /// assert_eq!(t.to_utc_z(), "2025-09-01T04:00:00.500Z");
    /// ```
    pub fn to_utc_z(&self) -> String {
        self.0
            .with_timezone(&Utc)
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    }

    /// The instant as an HTTP date (`Last-Modified`), to the second.
    ///
    /// ```
    /// use aiphost_model::Timestamp;
    /// let t = Timestamp::parse("2025-09-01T12:00:00+08:00").unwrap();
    /// assert_eq!(t.to_http_date(), "Mon, 01 Sep 2025 04:00:00 GMT");
    /// ```
    pub fn to_http_date(&self) -> String {
        self.0
            .with_timezone(&Utc)
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string()
    }

    /// The instant `millis` after this one.
    pub fn plus_millis(&self, millis: u64) -> Self {
        let delta = chrono::Duration::milliseconds(i64::try_from(millis).unwrap_or(i64::MAX / 2));
        Timestamp(self.0.checked_add_signed(delta).unwrap_or(self.0))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::AutoSi, false))
    }
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Timestamp {}
impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Timestamp::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not an ISO 8601 timestamp: {text}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_compare_as_instants() {
        let beijing = Timestamp::parse("2025-09-01T12:00:00+08:00").unwrap();
        let utc_later = Timestamp::parse("2025-09-01T04:00:00.000001+00:00").unwrap();
        assert!(beijing < utc_later);
        // As strings they would sort the other way round.
        assert!("2025-09-01T12:00:00+08:00" > "2025-09-01T04:00:00.000001+00:00");
    }

    #[test]
    fn lenient_forms() {
        for text in [
            "2025-09-01T04:00:00Z",
            "2025-09-01T04:00:00+0000",
            "2025-09-01T04:00:00",
            "2025-09-01 04:00:00",
        ] {
            let t = Timestamp::parse(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(t.unix_millis(), 1_756_699_200_000, "{text}");
        }
        assert!(Timestamp::parse("yesterday").is_none());
    }

    #[test]
    fn keeps_offset_and_roundtrips() {
        let t = Timestamp::parse("2025-09-01T11:58:00+08:00").unwrap();
        assert_eq!(t.to_string(), "2025-09-01T11:58:00+08:00");
        let now = Timestamp::now();
        assert_eq!(Timestamp::parse(&now.to_string()), Some(now));
        assert!(now.to_string().ends_with("+00:00"));
    }
}
