//! How a webhook URL is shown and logged. Where a webhook may point is the engine's rule, the
//! address policy it is given at start (`net_policy::TargetPolicy`, checked when a config is
//! made, whatever door it came through), and again on every delivery, by the HTTP client's own
//! resolver (`net_policy::PolicyResolver`).
//!
//! Credentials in a URL would be shown wherever the URL is (the config, the given-up listing)
//! and logged; URLs stored before they were refused are shown and logged only through
//! [`redact`].

use reqwest::Url;

/// What stands for the user name and password of a URL when it is shown or logged.
const HIDDEN: &str = "***";

/// `url` as it may be shown or logged: whatever user name and password it carries become `***`.
pub fn redact(url: &str) -> String {
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

/// [`redact`] for text that is not a URL the parser reads: everything before the last `@` of
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
    use super::*;

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
            assert_eq!(redact(url), shown, "{url}");
            assert!(!redact(url).contains("hunter2"));
        }
    }
}
