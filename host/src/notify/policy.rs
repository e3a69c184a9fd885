//! Where a webhook may point. By default the host refuses loopback, private, link-local (cloud
//! metadata lives there), shared, unspecified, multicast and broadcast addresses, checked on the
//! addresses a name resolves to — at `notification/set` and again on every delivery, by the HTTP
//! client's own resolver, so a name cannot be re-pointed after the check. Operators (and tests)
//! can allow private targets.

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why a webhook URL was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("not a valid URL: {0}")]
    Parse(String),
    #[error("the scheme must be http or https, not {0:?}")]
    Scheme(String),
    #[error("the URL has no host")]
    NoHost,
    #[error("{host} resolves to {addr}, a {why} address, which webhooks may not target")]
    Forbidden {
        host: String,
        addr: IpAddr,
        why: &'static str,
    },
    #[error("{host} could not be resolved: {reason}")]
    Resolve { host: String, reason: String },
}

/// Check a URL's form: http or https, with a host.
pub fn check_url(url: &str) -> Result<Url, TargetError> {
    let parsed = Url::parse(url).map_err(|e| TargetError::Parse(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(TargetError::Scheme(parsed.scheme().to_string()));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(TargetError::NoHost);
    }
    Ok(parsed)
}

/// What kind of address `ip` is, if it is one webhooks may not target by default.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => forbidden_v4(v4),
            None => forbidden_v6(v6),
        },
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local (cloud metadata)")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if a == 192 && b == 0 && ip.octets()[2] == 0 {
        Some("IETF protocol assignment")
    } else if a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    let first = s[0];
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    // Forms that carry an IPv4 address: NAT64 (64:ff9b::/96), 6to4 (2002::/16) and the old
    // IPv4-compatible ::a.b.c.d. They are as forbidden as the address inside.
    let inner =
        if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || (s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1)) {
            Some(embedded(s[6], s[7]))
        } else if first == 0x2002 {
            Some(embedded(s[1], s[2]))
        } else {
            None
        };
    if let Some(v4) = inner {
        return forbidden_v4(v4);
    }
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private (unique local)")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else {
        None
    }
}

/// Resolve `url`'s host and check every address (unless private targets are allowed).
pub async fn resolve_checked(
    url: &Url,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, TargetError> {
    let host = url.host_str().ok_or(TargetError::NoHost)?;
    let port = url.port_or_known_default().unwrap_or(80);
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((bare, port))
            .await
            .map_err(|e| TargetError::Resolve {
                host: host.to_string(),
                reason: e.to_string(),
            })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(TargetError::Resolve {
            host: host.to_string(),
            reason: "no addresses".into(),
        });
    }
    if !allow_private {
        for addr in &addrs {
            if let Some(why) = forbidden(addr.ip()) {
                return Err(TargetError::Forbidden {
                    host: host.to_string(),
                    addr: addr.ip(),
                    why,
                });
            }
        }
    }
    Ok(addrs)
}

/// The HTTP client's resolver: names resolve only to addresses the policy allows.
pub struct PolicyResolver {
    pub allow_private: bool,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let url = Url::parse(&format!("http://{host}/"))
                .map_err(|e| Box::new(TargetError::Parse(e.to_string())))?;
            let addrs = resolve_checked(&url, allow_private)
                .await
                .map_err(Box::new)?;
            let addrs: Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_http_with_a_host() {
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
    }

    #[test]
    fn forbidden_ranges() {
        for (ip, why) in [
            ("127.0.0.1", "loopback"),
            ("10.1.2.3", "private"),
            ("172.20.0.1", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local (cloud metadata)"),
            ("0.0.0.0", "unspecified"),
            ("100.100.100.200", "shared (carrier-grade NAT)"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("::1", "loopback"),
            ("fd00:ec2::254", "private (unique local)"),
            ("fe80::1", "link-local"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("64:ff9b::7f00:1", "loopback"),
            ("2002:a00:1::", "private"),
            ("::10.0.0.1", "private"),
            ("192.0.0.8", "IETF protocol assignment"),
        ] {
            assert_eq!(forbidden(ip.parse().unwrap()), Some(why), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "172.32.0.1",
            "100.128.0.1",
        ] {
            assert_eq!(forbidden(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[tokio::test]
    async fn names_are_checked_after_resolution() {
        let url = check_url("http://localhost:9/x").unwrap();
        let err = resolve_checked(&url, false).await.unwrap_err();
        assert!(
            matches!(
                err,
                TargetError::Forbidden {
                    why: "loopback",
                    ..
                }
            ),
            "{err}"
        );
        assert!(resolve_checked(&url, true).await.is_ok());
        let literal = check_url("http://[::1]:9/").unwrap();
        assert!(resolve_checked(&literal, false).await.is_err());
        let metadata = check_url("http://169.254.169.254/latest/meta-data").unwrap();
        assert!(resolve_checked(&metadata, false).await.is_err());
    }
}
