//! How secrets are shown: in `Debug` never their value, only whether there is one
//! ([`Redacted`]); in a URL (a webhook's, shown in its config and the given-up listing, and
//! logged) never its user name and password ([`url`]).
//!
//! Why: a `{:?}` of a config or a credential in a log line or a panic message would otherwise
//! carry the operator's token, a Leader's API key or a partner's outbound secret with it; URLs
//! stored before they were refused are shown and logged only through [`url`]. (Where a webhook
//! may point is the engine's rule: `net_policy::TargetPolicy`, and the notifier's resolver.)

use reqwest::Url;

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

/// What stands for the user name and password of a URL when it is shown or logged.
const HIDDEN: &str = "***";

/// `url` as it may be shown or logged: whatever user name and password it carries become `***`.
pub fn url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let hidden = parsed.set_password(None).is_ok() && parsed.set_username(HIDDEN).is_ok();
            if hidden {
                parsed.to_string()
            } else {
                redact_text(url)
            }
        }
        Ok(_) => url.to_string(),
        Err(_) => redact_text(url),
    }
}

/// [`url`] for text that is not a URL the parser reads: everything before the last `@` of
/// what would be the authority.
fn redact_text(url: &str) -> String {
    let start = url.find("://").map_or(0, |i| i + 3);
    let rest = &url[start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{HIDDEN}{}", &url[..start], &rest[at..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn credentials_are_never_shown() {
        for (url, shown) in [
            (
                "http://alice:hunter2@example.com:8080/hook?x=1",
                "http://***@example.com:8080/hook?x=1",
            ),
            ("https://token@example.com/", "https://***@example.com/"),
            ("http://:pw@127.0.0.1:9/", "http://***@127.0.0.1:9/"),
            ("http://example.com/a@b", "http://example.com/a@b"),
            ("https://example.com/", "https://example.com/"),
            // Not readable as a URL: the authority's userinfo goes all the same.
            ("http://a:b@c:d@[bad/x", "http://***@[bad/x"),
            ("no scheme:pw@host/p", "***@host/p"),
        ] {
            assert_eq!(super::url(url), shown, "{url}");
            assert!(!super::url(url).contains("hunter2"));
        }
    }
}
