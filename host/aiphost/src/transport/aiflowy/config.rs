//! The AIFlowy door's settings: how long a form waits for its submit, and the texts of a form's
//! buttons (the contract has no place for them, so the operator chooses them for every form).

use crate::protocol::aiflowy::Ui;
use std::time::Duration;

/// AIFlowy door settings.
#[derive(Clone, Debug, Default)]
pub struct AiflowyConfig {
    /// How long a task started at this door waits on a form before it is canceled (its
    /// `commandParams.awaitingInputTimeout`; `None`: the host's default for every task).
    pub form_timeout: Option<Duration>,
    /// The texts of a form's buttons.
    pub ui: Ui,
}
