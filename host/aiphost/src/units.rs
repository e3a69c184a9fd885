//! Value parsers for flags that take durations or byte sizes: `30s`, `500ms`, `10m`, `64MiB`,
//! `1GiB`. A bare number means the unit the flag already documents (its name's `-ms`, `-secs`,
//! `-mib`, `-bytes`), so existing command lines keep working; a value with a unit is converted to
//! that unit and refused if it is not a whole number of it (rounding silently would run the host
//! with a value nobody asked for).

use std::time::Duration;

const DURATION_UNITS: &str = "ms, s, m, h, d";
const SIZE_UNITS: &str = "B, KiB, MiB, GiB, TiB, kB, MB, GB, TB";

/// `text` split into its number (digits, optionally with a fraction) and its unit (what follows,
/// spaces between them allowed). `None` when it does not start with a plain decimal number.
fn split(text: &str) -> Option<(u128, u128, u32, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() || (number.contains('.') && fraction.is_empty()) {
        return None;
    }
    // More digits than this would overflow u128 below; no sensible value needs them.
    if whole.len() > 20 || fraction.len() > 9 {
        return None;
    }
    let whole: u128 = whole.parse().ok()?;
    let digits = u32::try_from(fraction.len()).ok()?;
    let fraction: u128 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().ok()?
    };
    Some((whole, fraction, digits, unit.trim_start()))
}

/// `whole.fraction × scale`, exactly, or `None` when the product has a part below 1.
fn scale(whole: u128, fraction: u128, digits: u32, scale: u128) -> Option<u128> {
    let denominator = 10u128.pow(digits);
    let part = fraction * scale;
    if !part.is_multiple_of(denominator) {
        return None;
    }
    whole.checked_mul(scale)?.checked_add(part / denominator)
}

/// A time unit a bare number may stand for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Milliseconds.
    Millis,
    /// Seconds.
    Secs,
}

impl TimeUnit {
    fn nanos(self) -> u128 {
        match self {
            TimeUnit::Millis => 1_000_000,
            TimeUnit::Secs => 1_000_000_000,
        }
    }

    fn name(self) -> &'static str {
        match self {
            TimeUnit::Millis => "milliseconds",
            TimeUnit::Secs => "seconds",
        }
    }
}

/// A duration: a number with a unit (ms, s, m, h, d), or a bare number of `bare`.
pub fn duration(text: &str, bare: TimeUnit) -> Result<Duration, String> {
    let expected = || format!("expected a duration like 30s or 500ms, got {text:?}");
    let (whole, fraction, digits, unit) = split(text).ok_or_else(expected)?;
    let unit_nanos: u128 = match unit {
        "" => bare.nanos(),
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        other => {
            return Err(format!(
                "{}: unknown unit {other:?} (one of {DURATION_UNITS})",
                expected()
            ));
        }
    };
    let nanos = scale(whole, fraction, digits, unit_nanos)
        .ok_or_else(|| format!("{text:?} is not a whole number of nanoseconds"))?;
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| format!("{text:?} is too long"))?;
    // Below 1e9, so it fits.
    let subsec = (nanos % 1_000_000_000) as u32;
    Ok(Duration::new(secs, subsec))
}

/// `text` as a whole number of `unit`s, for flags whose value is kept in that unit.
fn duration_in(text: &str, unit: TimeUnit) -> Result<u64, String> {
    let d = duration(text, unit)?;
    let nanos = d.as_nanos();
    if nanos % unit.nanos() != 0 {
        return Err(format!("{text:?} is not a whole number of {}", unit.name()));
    }
    u64::try_from(nanos / unit.nanos()).map_err(|_| format!("{text:?} is too long"))
}

/// For `--*-ms` flags: milliseconds, bare or with a unit (`2s` is 2000).
pub fn millis(text: &str) -> Result<u64, String> {
    duration_in(text, TimeUnit::Millis)
}

/// For `--*-secs` flags: seconds, bare or with a unit (`10m` is 600).
pub fn seconds(text: &str) -> Result<u64, String> {
    duration_in(text, TimeUnit::Secs)
}

/// A size in bytes: a number with a unit (B; KiB, MiB, GiB, TiB are powers of 1024, kB, MB, GB,
/// TB of 1000; any case), or a bare number of `bare` bytes.
pub fn size(text: &str, bare: u64) -> Result<u64, String> {
    let expected = || format!("expected a size like 64MiB or 1GiB, got {text:?}");
    let (whole, fraction, digits, unit) = split(text).ok_or_else(expected)?;
    let unit_bytes: u128 = match unit.to_ascii_lowercase().as_str() {
        "" => u128::from(bare),
        "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => {
            return Err(format!(
                "{}: unknown unit {unit:?} (one of {SIZE_UNITS})",
                expected()
            ));
        }
    };
    let bytes = scale(whole, fraction, digits, unit_bytes)
        .ok_or_else(|| format!("{text:?} is not a whole number of bytes"))?;
    u64::try_from(bytes).map_err(|_| format!("{text:?} is too large"))
}

/// For `--*-bytes` flags: bytes, bare or with a unit (`8MiB`).
pub fn bytes(text: &str) -> Result<u64, String> {
    size(text, 1)
}

/// [`bytes`] for flags kept as `usize`.
pub fn bytes_usize(text: &str) -> Result<usize, String> {
    usize::try_from(bytes(text)?).map_err(|_| format!("{text:?} is too large"))
}

/// For `--*-mib` flags: MiB, bare or with a unit (`1GiB` is 1024); a part of a MiB is refused.
pub fn mebibytes(text: &str) -> Result<u64, String> {
    let bytes = size(text, 1 << 20)?;
    if bytes % (1 << 20) != 0 {
        return Err(format!("{text:?} is not a whole number of MiB"));
    }
    Ok(bytes >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_with_units() {
        for (text, ms) in [
            ("500ms", 500),
            ("30s", 30_000),
            ("10m", 600_000),
            ("10min", 600_000),
            ("2h", 7_200_000),
            ("1d", 86_400_000),
            ("1.5s", 1_500),
            ("0.25m", 15_000),
            (" 2 s ", 2_000),
            ("0", 0),
        ] {
            assert_eq!(millis(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn a_bare_number_is_the_flags_unit() {
        assert_eq!(millis("2500"), Ok(2_500));
        assert_eq!(seconds("86400"), Ok(86_400));
        assert_eq!(seconds("10m"), Ok(600));
        assert_eq!(duration("3", TimeUnit::Secs), Ok(Duration::from_secs(3)));
        assert_eq!(bytes("4096"), Ok(4_096));
        assert_eq!(mebibytes("64"), Ok(64));
    }

    #[test]
    fn bad_durations_say_what_was_expected() {
        for text in ["", "s", "abc", "-5s", "1..5s", "5.s", ".5s", "1e3"] {
            let error = millis(text).expect_err(text);
            assert!(
                error.starts_with("expected a duration like 30s or 500ms, got "),
                "{text}: {error}"
            );
        }
        assert_eq!(
            millis("10x"),
            Err(
                "expected a duration like 30s or 500ms, got \"10x\": unknown unit \"x\" (one of ms, s, m, h, d)"
                    .into()
            )
        );
        assert_eq!(
            seconds("1500ms"),
            Err("\"1500ms\" is not a whole number of seconds".into())
        );
        assert_eq!(
            millis("1.5ms"),
            Err("\"1.5ms\" is not a whole number of milliseconds".into())
        );
        assert_eq!(
            millis("99999999999999999999d"),
            Err("\"99999999999999999999d\" is too long".into())
        );
    }

    #[test]
    fn sizes_with_units() {
        for (text, n) in [
            ("64MiB", 64 << 20),
            ("1GiB", 1 << 30),
            ("1gib", 1 << 30),
            ("512KiB", 512 << 10),
            ("10B", 10),
            ("5kB", 5_000),
            ("2MB", 2_000_000),
            ("1.5KiB", 1_536),
            ("1 TiB", 1 << 40),
        ] {
            assert_eq!(bytes(text), Ok(n), "{text}");
        }
        assert_eq!(mebibytes("1GiB"), Ok(1_024));
        assert_eq!(bytes_usize("4MiB"), Ok(4 << 20));
    }

    #[test]
    fn bad_sizes_say_what_was_expected() {
        for text in ["", "MiB", "lots", "-1MiB"] {
            let error = bytes(text).expect_err(text);
            assert!(
                error.starts_with("expected a size like 64MiB or 1GiB, got "),
                "{text}: {error}"
            );
        }
        assert_eq!(
            bytes("64M"),
            Err("expected a size like 64MiB or 1GiB, got \"64M\": unknown unit \"M\" (one of B, KiB, MiB, GiB, TiB, kB, MB, GB, TB)".into())
        );
        assert_eq!(
            mebibytes("1500KiB"),
            Err("\"1500KiB\" is not a whole number of MiB".into())
        );
        assert_eq!(
            bytes("0.5B"),
            Err("\"0.5B\" is not a whole number of bytes".into())
        );
        assert_eq!(
            bytes("99999999TiB"),
            Err("\"99999999TiB\" is too large".into())
        );
    }
}
