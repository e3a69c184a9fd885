//! How secrets print in `Debug`: never their value, only whether there is one.
//!
//! Why: a `{:?}` of a config or a credential in a log line or a panic message would otherwise
//! carry the operator's token, a Leader's API key or a partner's outbound secret with it.

/// A secret as `Debug` shows it: `<redacted>`, or `None` / `""` when there is none.
pub struct Redacted<'a>(pub Option<&'a str>);

impl Redacted<'_> {
    /// An optional secret.
    pub fn of(secret: &Option<String>) -> Redacted<'_> {
        Redacted(secret.as_deref())
    }
}

impl std::fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            None => f.write_str("None"),
            Some("") => f.write_str("\"\""),
            Some(_) => f.write_str("<redacted>"),
        }
    }
}
