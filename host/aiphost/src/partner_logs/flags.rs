//! The partner logs' command-line flags. `aiphost serve` flattens them into its own and hands
//! them back here ([`PartnerLogFlags::apply`]).

use super::PartnerLogConfig;
use crate::units;
use clap::Args;

/// The most records or lines a second a flag may set: far above any use, low enough that no
/// count overflows.
const MAX_COUNT: u64 = 10_000_000;
/// The least bytes a ring may be given: room for one line of the largest size a partner can
/// log (an 8 KiB message and 32 fields of up to 1 KiB).
const MIN_BYTES: usize = 64 * 1024;

/// The partner logs' flags; unset ones leave [`PartnerLogConfig::default`]'s values.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Partner logs (memory only: a restart empties them)")]
pub struct PartnerLogFlags {
    #[arg(long, value_name = "N", value_parser = count, help = with_default("Log lines kept per partner for `aiphost logs` and GET /admin/agents/{agent}/logs, the oldest dropped", PartnerLogConfig::default().lines))]
    partner_log_lines: Option<u64>,
    #[arg(long, value_name = "SIZE", value_parser = ring_bytes, help = with_default("Bytes of log lines kept per partner (64KiB at least), the oldest dropped", "1MiB"))]
    partner_log_bytes: Option<usize>,
    #[arg(long, value_name = "N", value_parser = count, help = with_default("Log lines a second each partner may write; more are dropped (counted, and a record \"N lines dropped\" marks the gap)", PartnerLogConfig::default().rate))]
    partner_log_rate: Option<u64>,
    #[arg(long, value_name = "N", value_parser = count, help = "Log lines a partner may write at once above --partner-log-rate [default: 5 times the rate]")]
    partner_log_burst: Option<u64>,
}

impl PartnerLogFlags {
    /// `config` with every given flag applied.
    pub fn apply(&self, config: &mut PartnerLogConfig) {
        let narrow = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        if let Some(lines) = self.partner_log_lines {
            config.lines = usize::try_from(lines).unwrap_or(usize::MAX);
        }
        if let Some(bytes) = self.partner_log_bytes {
            config.bytes = bytes;
        }
        if let Some(rate) = self.partner_log_rate {
            config.rate = narrow(rate);
            config.burst = narrow(rate.saturating_mul(5));
        }
        if let Some(burst) = self.partner_log_burst {
            config.burst = narrow(burst);
        }
    }
}

/// A flag's help: `text` and the default it leaves.
fn with_default(text: &str, default: impl std::fmt::Display) -> String {
    format!("{text} [default: {default}]")
}

/// A count of 1 to [`MAX_COUNT`].
fn count(text: &str) -> Result<u64, String> {
    let n: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a whole number"))?;
    if n == 0 || n > MAX_COUNT {
        return Err(format!("must be from 1 to {MAX_COUNT}"));
    }
    Ok(n)
}

/// A ring's size: at least [`MIN_BYTES`].
fn ring_bytes(text: &str) -> Result<usize, String> {
    let bytes = units::bytes_usize(text)?;
    if bytes < MIN_BYTES {
        return Err(format!(
            "must be at least 64KiB ({MIN_BYTES} bytes): room for one line of the largest size"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_take_sizes_and_counts_and_refuse_zero_and_garbage() {
        assert_eq!(count("500"), Ok(500));
        assert!(count("0").unwrap_err().contains("from 1"));
        assert!(count("many").unwrap_err().contains("not a whole number"));
        assert!(count("-1").is_err());
        assert_eq!(ring_bytes("2MiB"), Ok(2 << 20));
        assert!(ring_bytes("0").unwrap_err().contains("at least 64KiB"));
        assert!(ring_bytes("lots").is_err());
        let mut config = PartnerLogConfig::default();
        PartnerLogFlags {
            partner_log_lines: Some(50),
            partner_log_bytes: None,
            partner_log_rate: Some(20),
            partner_log_burst: None,
        }
        .apply(&mut config);
        assert_eq!(
            (config.lines, config.bytes, config.rate, config.burst),
            (50, 1 << 20, 20, 100)
        );
        PartnerLogFlags {
            partner_log_burst: Some(7),
            ..PartnerLogFlags::default()
        }
        .apply(&mut config);
        assert_eq!(config.burst, 7);
    }
}
