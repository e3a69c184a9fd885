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

/// RFC 3339 with the offset it was written in and as many fraction digits as it needs (none,
/// 3, 6 or 9: chrono's `SecondsFormat::AutoSi`), e.g. `2025-09-01T11:58:00.123456+08:00`.
///
/// Written digit by digit into a buffer on the stack: every record, event and reply carries
/// timestamps, and chrono's formatter builds a `String` through its general format machinery
/// for each (issue 35). An instant that form cannot hold — a year outside 0..=9999, an offset
/// with seconds, a leap second — goes through chrono, which writes it the same way it always did.
impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match rfc3339(&self.0) {
            Some(written) => f.write_str(written.as_str()?),
            None => f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::AutoSi, false)),
        }
    }
}

/// The longest form [`rfc3339`] writes: `YYYY-MM-DDTHH:MM:SS.fffffffff+HH:MM`.
const RFC3339_MAX: usize = 35;

/// `at` in the form [`Timestamp`]'s `Display` writes, or `None` where only chrono can write it.
fn rfc3339(at: &DateTime<FixedOffset>) -> Option<Written> {
    use chrono::{Datelike, Timelike};
    let offset = at.offset().local_minus_utc();
    let local = at.naive_local();
    let (year, nanos) = (local.year(), local.nanosecond());
    if !(0..=9999).contains(&year) || offset % 60 != 0 || nanos >= 1_000_000_000 {
        return None;
    }
    let (sign, offset) = (if offset < 0 { b'-' } else { b'+' }, offset.unsigned_abs());
    let (fraction_digits, fraction) = match nanos {
        0 => (0, 0),
        n if n % 1_000_000 == 0 => (3, n / 1_000_000),
        n if n % 1_000 == 0 => (6, n / 1_000),
        n => (9, n),
    };
    let mut out = Written {
        buf: [0; RFC3339_MAX],
        len: 0,
    };
    // `year` is in 0..=9999, so it converts without loss.
    out.digits(4, year.unsigned_abs());
    out.byte(b'-');
    out.digits(2, local.month());
    out.byte(b'-');
    out.digits(2, local.day());
    out.byte(b'T');
    out.digits(2, local.hour());
    out.byte(b':');
    out.digits(2, local.minute());
    out.byte(b':');
    out.digits(2, local.second());
    if fraction_digits > 0 {
        out.byte(b'.');
        out.digits(fraction_digits, fraction);
    }
    out.byte(sign);
    out.digits(2, offset / 3600);
    out.byte(b':');
    out.digits(2, offset / 60 % 60);
    Some(out)
}

/// A fixed buffer written from the front ([`rfc3339`] never writes past its end).
struct Written {
    buf: [u8; RFC3339_MAX],
    len: usize,
}

impl Written {
    fn byte(&mut self, b: u8) {
        self.buf[self.len] = b;
        self.len += 1;
    }

    /// `value`'s last `count` decimal digits, zero-padded.
    fn digits(&mut self, count: usize, mut value: u32) {
        for i in (0..count).rev() {
            self.buf[self.len + i] = b'0' + (value % 10) as u8;
            value /= 10;
        }
        self.len += count;
    }

    /// What was written (only ASCII digits and separators, so it is always text).
    fn as_str(&self) -> Result<&str, fmt::Error> {
        std::str::from_utf8(&self.buf[..self.len]).map_err(|_| fmt::Error)
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

    /// The hand-written form is chrono's `AutoSi` RFC 3339, byte for byte, over instants from
    /// year 0 to 9999 with every fraction length and offsets east and west; where it cannot
    /// write an instant, `Display` still writes chrono's form.
    #[test]
    fn display_writes_what_chrono_writes() {
        let chrono_form = |t: &Timestamp| t.0.to_rfc3339_opts(SecondsFormat::AutoSi, false);
        // A small linear congruential generator: the same instants on every run.
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            seed >> 11
        };
        let first = DateTime::parse_from_rfc3339("0000-01-01T00:00:00+00:00")
            .unwrap()
            .timestamp();
        let last = DateTime::parse_from_rfc3339("9999-12-31T23:59:59+00:00")
            .unwrap()
            .timestamp();
        let mut written = 0;
        for i in 0..20_000u64 {
            let secs = first + (next() % (last - first) as u64) as i64;
            let nanos = match i % 4 {
                0 => 0,
                1 => (next() % 1000) as u32 * 1_000_000,
                2 => (next() % 1_000_000) as u32 * 1_000,
                _ => (next() % 1_000_000_000) as u32,
            };
            // Offsets of whole minutes, -23:59 to +23:59.
            let minutes = (next() % (2 * 1439 + 1)) as i32 - 1439;
            let Some(offset) = FixedOffset::east_opt(minutes * 60) else {
                continue;
            };
            let Some(utc) = DateTime::from_timestamp(secs, nanos) else {
                continue;
            };
            let t = Timestamp(utc.with_timezone(&offset));
            assert_eq!(t.to_string(), chrono_form(&t), "{secs} {nanos} {minutes}");
            written += 1;
        }
        assert!(written > 19_000, "only {written} instants were tried");
        // What only chrono writes: an offset with seconds, a year past 9999, a leap second.
        let odd = [
            Timestamp(
                DateTime::from_timestamp(1_756_699_200, 0)
                    .unwrap()
                    .with_timezone(&FixedOffset::east_opt(3600 + 30).unwrap()),
            ),
            Timestamp(
                DateTime::from_timestamp(400_000_000_000, 5_000)
                    .unwrap()
                    .fixed_offset(),
            ),
            Timestamp(
                DateTime::from_timestamp(1_483_228_799, 1_500_000_000)
                    .unwrap()
                    .fixed_offset(),
            ),
        ];
        for t in odd {
            assert!(rfc3339(&t.0).is_none(), "{}", chrono_form(&t));
            assert_eq!(t.to_string(), chrono_form(&t));
        }
        // The boundaries of the form: the first and last instants of years 0 and 9999.
        for text in [
            "0000-01-01T00:00:00+00:00",
            "9999-12-31T23:59:59.999999999-23:59",
        ] {
            let t = Timestamp::parse(text).unwrap();
            assert_eq!(t.to_string(), text);
        }
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
