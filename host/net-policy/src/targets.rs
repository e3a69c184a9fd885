//! Where a Leader may have the host call back (a webhook, an A2A push config): an http(s) URL
//! with a host and no user name or password, whose host the address policy allows.
//! [`TargetPolicy`] is the rule as a value: the engine is given it at start and checks every
//! notification config with it, whatever door the config came through; delivery checks each
//! connection again ([`crate::PolicyResolver`]), so a name cannot be re-pointed after the check.
//!
//! Credentials in a URL would be shown wherever the URL is (the config, the given-up listing)
//! and logged; a config's token is the way to authenticate a notification.

use crate::AddressError;
use reqwest::Url;
use std::net::SocketAddr;

/// Why a callback URL was refused.
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

/// The host's rule for callback URLs: whether its operator allows private targets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TargetPolicy {
    /// Private (loopback, link-local, ...) addresses are allowed too.
    pub allow_private: bool,
}

impl TargetPolicy {
    /// The check of a callback URL when a config is made: its form ([`check_url`]), then where
    /// it points, unless private targets are allowed: an IP literal, or a name that resolves to
    /// an address the policy forbids, is refused. A name that does not resolve now is accepted:
    /// the receiver may not be deployed yet, or the host's resolver may be down for a moment,
    /// and every delivery resolves the name again and connects only to allowed addresses, so
    /// nothing is reached through it that this check would have refused.
    pub async fn check(&self, url: &str) -> Result<Url, TargetError> {
        let parsed = check_url(url)?;
        match self.resolve_checked(&parsed).await {
            Ok(_)
            | Err(TargetError::Address(
                AddressError::Resolve { .. } | AddressError::NoAddresses { .. },
            )) => Ok(parsed),
            Err(e) => Err(e),
        }
    }

    /// Resolve `url`'s host and check every address (unless private targets are allowed).
    pub async fn resolve_checked(&self, url: &Url) -> Result<Vec<SocketAddr>, TargetError> {
        let host = url.host_str().ok_or(TargetError::NoHost)?;
        let port = url.port_or_known_default().unwrap_or(80);
        Ok(crate::resolve_checked(host, port, self.allow_private).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: TargetPolicy = TargetPolicy {
        allow_private: false,
    };
    const LENIENT: TargetPolicy = TargetPolicy {
        allow_private: true,
    };

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

    #[tokio::test]
    async fn urls_are_checked_on_their_resolved_addresses() {
        let url = check_url("http://localhost:9/x").unwrap();
        let err = STRICT.resolve_checked(&url).await.unwrap_err();
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
        assert!(LENIENT.resolve_checked(&url).await.is_ok());
        let literal = check_url("http://[::1]:9/").unwrap();
        assert!(STRICT.resolve_checked(&literal).await.is_err());
        let metadata = check_url("http://169.254.169.254/latest/meta-data").unwrap();
        assert!(STRICT.resolve_checked(&metadata).await.is_err());
        let site_local = check_url("http://[fec0::1]/").unwrap();
        assert!(STRICT.resolve_checked(&site_local).await.is_err());
    }

    #[tokio::test]
    async fn targets_are_refused_for_their_form_and_forbidden_addresses_not_for_silent_dns() {
        // `.invalid` never resolves (RFC 6761): accepted, as delivery checks each connection.
        assert!(STRICT.check("https://receiver.invalid/hook").await.is_ok());
        for url in [
            "http://localhost:9/x",
            "http://127.0.0.1/",
            "http://[::1]/",
            "http://10.0.0.1/",
        ] {
            let err = STRICT.check(url).await.unwrap_err();
            assert!(
                matches!(err, TargetError::Address(AddressError::Forbidden { .. })),
                "{url}: {err}"
            );
            assert!(LENIENT.check(url).await.is_ok(), "{url}");
        }
        assert!(matches!(
            LENIENT.check("http://u:p@receiver.invalid/").await,
            Err(TargetError::Credentials)
        ));
    }
}
