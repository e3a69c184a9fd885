//! [`NoticeFormat`]: the wire form of a notification config's notifications, read back from
//! the opaque name the door that made the config stored with it (`model::WireForm`).

use aiphost_model::WireForm;

/// The protocol a config's notifications speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoticeFormat {
    /// AIP: the task as `get` shows it, in the dialect of the Leader that started it, with the
    /// config's token in `X-ACPS-AIP-Notification-Token`.
    #[default]
    Aip,
    /// A2A: a `StreamResponse` holding the task, with `Authorization` from the config's
    /// authentication and its token in `X-A2A-Notification-Token`.
    A2a,
    /// A2A v0.3 (a config made with v0.3's methods): the task itself in v0.3's shape, with
    /// the same headers.
    A2aV03,
}

impl NoticeFormat {
    /// The name stored with a config (none for AIP: configs from before formats had names are
    /// AIP's, and AIP's still store none).
    pub fn form(self) -> Option<WireForm> {
        match self {
            NoticeFormat::Aip => None,
            NoticeFormat::A2a => Some(WireForm::new("a2a")),
            NoticeFormat::A2aV03 => Some(WireForm::new("a2a-v0.3")),
        }
    }

    /// The format of a stored name; none, or one no door here made, is AIP's.
    pub fn of(form: Option<&WireForm>) -> NoticeFormat {
        match form.map(WireForm::as_str) {
            Some("a2a") => NoticeFormat::A2a,
            Some("a2a-v0.3") => NoticeFormat::A2aV03,
            _ => NoticeFormat::Aip,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_reads_back_from_what_it_stores() {
        for format in [NoticeFormat::Aip, NoticeFormat::A2a, NoticeFormat::A2aV03] {
            assert_eq!(NoticeFormat::of(format.form().as_ref()), format);
        }
    }

    #[test]
    fn configs_stored_before_read_as_they_did() {
        // What the stored config's `format` held when this was the model's serde enum.
        for (stored, format) in [
            (
                r#"{"id":"c","url":"u","token":"t","taskId":"x"}"#,
                NoticeFormat::Aip,
            ),
            (
                r#"{"id":"c","url":"u","token":"t","taskId":"x","format":"a2a"}"#,
                NoticeFormat::A2a,
            ),
            (
                r#"{"id":"c","url":"u","token":"t","taskId":"x","format":"a2a-v0.3"}"#,
                NoticeFormat::A2aV03,
            ),
        ] {
            let config: aiphost_model::notification::NotificationConfig =
                serde_json::from_str(stored).expect("a stored config reads");
            assert_eq!(NoticeFormat::of(config.format.as_ref()), format, "{stored}");
            assert_eq!(serde_json::to_string(&config).expect("it writes"), stored);
        }
    }
}
