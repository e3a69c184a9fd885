//! The AIFlowy door's command-line flags. `aiphost serve` flattens them into its own and hands
//! them back here ([`AiflowyFlags::apply`]): a door owns its flags, so adding or changing one
//! edits this file and not the server's list.

use super::config::AiflowyConfig;
use crate::protocol::aiflowy::Ui;
use crate::task::record::MAX_AWAITING_TIMEOUT_MS;
use crate::units;
use clap::Args;
use std::time::Duration;

/// The AIFlowy door's flags; unset ones leave [`AiflowyConfig::default`]'s values.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "AIFlowy chat door")]
pub struct AiflowyFlags {
    #[arg(long, value_parser = form_timeout, value_name = "DURATION", help = "How long a form asked at the AIFlowy door waits for its submit before its task is canceled (an open …/aiflowy/chat/events stream then gets form_cancel with reason timeout); a duration such as 10m, a bare number in ms [default: --awaiting-input-timeout-ms]")]
    aiflowy_form_timeout: Option<u64>,
    #[arg(long, value_name = "TEXT", help = with_default("The submit button's text in every AIFlowy form_request's `ui`", Ui::default().submit_text))]
    aiflowy_ui_submit_text: Option<String>,
    #[arg(long, value_name = "TEXT", help = with_default("The cancel button's text in every AIFlowy form_request's `ui`", Ui::default().cancel_text))]
    aiflowy_ui_cancel_text: Option<String>,
}

impl AiflowyFlags {
    /// `config` with every given flag applied.
    pub fn apply(&self, config: &mut AiflowyConfig) {
        if let Some(ms) = self.aiflowy_form_timeout {
            config.form_timeout = Some(Duration::from_millis(ms));
        }
        if let Some(text) = &self.aiflowy_ui_submit_text {
            config.ui.submit_text = text.clone();
        }
        if let Some(text) = &self.aiflowy_ui_cancel_text {
            config.ui.cancel_text = text.clone();
        }
    }
}

/// A flag's help: `text` and the default it leaves.
fn with_default(text: &str, default: impl std::fmt::Display) -> String {
    format!("{text} [default: {default}]")
}

/// A form timeout: a duration of 1 ms to the longest awaiting timeout a task may have (a longer
/// one would make the engine refuse every chat's start).
fn form_timeout(text: &str) -> Result<u64, String> {
    let ms = units::millis(text)?;
    if ms == 0 || ms > MAX_AWAITING_TIMEOUT_MS {
        return Err(format!(
            "must be from 1 ms to {} days",
            MAX_AWAITING_TIMEOUT_MS / 86_400_000
        ));
    }
    Ok(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_timeout_takes_a_unit_and_stays_within_a_tasks_limit() {
        assert_eq!(form_timeout("1s"), Ok(1000));
        assert_eq!(form_timeout("250"), Ok(250));
        assert!(form_timeout("0").is_err());
        assert!(form_timeout("31d").is_err());
        let flags = AiflowyFlags {
            aiflowy_form_timeout: Some(1000),
            aiflowy_ui_submit_text: Some("Go".into()),
            aiflowy_ui_cancel_text: None,
        };
        let mut config = AiflowyConfig::default();
        flags.apply(&mut config);
        assert_eq!(config.form_timeout, Some(Duration::from_millis(1000)));
        assert_eq!(config.ui.submit_text, "Go");
        assert_eq!(config.ui.cancel_text, "Cancel");
    }
}
