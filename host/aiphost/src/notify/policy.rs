//! Where a webhook may point: an http(s) URL with a host and no user name or password, whose
//! host the address policy ([`crate::net_policy`]) allows — checked at `notification/set` and
//! again on every delivery, by the HTTP client's own resolver, so a name cannot be re-pointed
//! after the check. Operators (and tests) can allow private targets.
//!
//! Credentials in a URL would be shown wherever the URL is (the config, the given-up listing)
//! and logged; the config's token is the way to authenticate a notification. URLs stored before
//! they were refused are shown and logged only through [`redact`].

use crate::net_policy::{self, AddressError};
use reqwest::Url;
use std::net::SocketAddr;

/// Why a webhook URL was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The URL does not parse (the parser's reason).
    #[error("not a valid URL: {0}")]
    Parse(String),
    /// The scheme (given) is not http or https.
    #[error("the scheme must be http or https, not {0:?}")]
    Scheme(String),
    /// The URL names no host.
    #[error("the URL has no host")]
    NoHost,
    /// The URL carries a user name or password.
    #[error(
        "the URL carries a user name or password, which would be shown and logged with it; \
         authenticate notifications with the config's token instead"
    )]
    Credentials,
    /// The host did not resolve, or resolved to an address the address policy forbids.
    #[error(transparent)]
    Address(#[from] AddressError),
}

/// Check a URL's form: http or https, with a host, without credentials.
pub fn check_url(url: &str) -> Result<Url, TargetError> {
    let parsed = Url::parse(url).map_err(|e| TargetError::Parse(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(TargetError::Scheme(parsed.scheme().to_string()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(TargetError::NoHost);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(TargetError::Credentials);
    }
    Ok(parsed)
}

/// Resolve `url`'s host and check every address (unless private targets are allowed).
pub async fn resolve_checked(
    url: &Url,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, TargetError> {
    let host = url.host_str().ok_or(TargetError::NoHost)?;
    let port = url.port_or_known_default().unwrap_or(80);
    Ok(net_policy::resolve_checked(host, port, allow_private).await?)
}

/// The check of a webhook URL when a config is made (AIP `notification/set`, A2A's push
/// notification configs): its form ([`check_url`]), then where it points, unless private targets
/// are allowed: an IP literal, or a name that resolves to an address the policy forbids, is
/// refused. A name that does not resolve now is accepted: the receiver may not be deployed yet,
/// or the host's resolver may be down for a moment, and every delivery resolves the name again
/// and connects only to allowed addresses (`PolicyResolver`), so nothing is reached through it
/// that this check would have refused.
pub async fn check_target(url: &str, allow_private: bool) -> Result<Url, TargetError> {
    let parsed = check_url(url)?;
    match resolve_checked(&parsed, allow_private).await {
        Ok(_)
        | Err(TargetError::Address(
            AddressError::Resolve { .. } | AddressError::NoAddresses { .. },
        )) => Ok(parsed),
        Err(e) => Err(e),
    }
}

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
    fn urls_must_be_http_with_a_host_and_no_credentials() {
        assert!(check_url("https://example.com/hook").is_ok());
        assert!(matches!(
            check_url("ftp://example.com"),
            Err(TargetError::Scheme(_))
        ));
        assert!(matches!(
            check_url("file:///etc/passwd"),
            Err(TargetError::Scheme(_))
        ));
        assert!(matches!(check_url("not a url"), Err(TargetError::Parse(_))));
        for url in [
            "http://user:pw@example.com/",
            "http://user@example.com/",
            "http://:pw@example.com/",
            "https://token:@example.com/",
        ] {
            assert_eq!(check_url(url), Err(TargetError::Credentials), "{url}");
        }
    }

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

    #[tokio::test]
    async fn urls_are_checked_on_their_resolved_addresses() {
        let url = check_url("http://localhost:9/x").unwrap();
        let err = resolve_checked(&url, false).await.unwrap_err();
        assert!(
            matches!(
                err,
                TargetError::Address(AddressError::Forbidden {
                    why: "loopback",
                    ..
                })
            ),
            "{err}"
        );
        assert!(resolve_checked(&url, true).await.is_ok());
        let literal = check_url("http://[::1]:9/").unwrap();
        assert!(resolve_checked(&literal, false).await.is_err());
        let metadata = check_url("http://169.254.169.254/latest/meta-data").unwrap();
        assert!(resolve_checked(&metadata, false).await.is_err());
        let site_local = check_url("http://[fec0::1]/").unwrap();
        assert!(resolve_checked(&site_local, false).await.is_err());
    }

    #[tokio::test]
    async fn targets_are_refused_for_their_form_and_forbidden_addresses_not_for_silent_dns() {
        // `.invalid` never resolves (RFC 6761): accepted, as delivery checks each connection.
        assert!(
            check_target("https://receiver.invalid/hook", false)
                .await
                .is_ok()
        );
        for url in [
            "http://localhost:9/x",
            "http://127.0.0.1/",
            "http://[::1]/",
            "http://10.0.0.1/",
        ] {
            let err = check_target(url, false).await.unwrap_err();
            assert!(
                matches!(err, TargetError::Address(AddressError::Forbidden { .. })),
                "{url}: {err}"
            );
            assert!(check_target(url, true).await.is_ok(), "{url}");
        }
        assert!(matches!(
            check_target("http://u:p@receiver.invalid/", true).await,
            Err(TargetError::Credentials)
        ));
    }
}
