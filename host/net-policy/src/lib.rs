//! Where the host may connect on someone else's say-so: a Leader's webhook, a partner's outbound
//! HTTP request, a Leader's group broker. One policy for all of them: by default no loopback,
//! private, link-local (cloud metadata lives there), shared, documentation, benchmarking,
//! reserved, multicast or broadcast address, nor an IPv6 form that carries one of those IPv4
//! addresses — checked on the addresses a name resolves to, never on the name, so no spelling
//! (`2130706433`, `0x7f.1`, `localhost`, `[::ffff:7f00:1]`) gets around it. Callers connect to the
//! addresses checked here, not to the name again, so a name cannot be re-pointed between the
//! check and the connection.
//!
//! Knows nothing of webhooks, partners or groups: each caller decides whether its operator
//! allows private targets.

#![deny(missing_docs)]

mod targets;

pub use targets::{TargetError, TargetPolicy, check_url};

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// Why a host's addresses may not be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// The name could not be resolved: an empty name, no answer in time, or a lookup error.
    #[error("{host} could not be resolved: {reason}")]
    Resolve {
        /// The host as the caller gave it.
        host: String,
        /// What went wrong.
        reason: String,
    },
    /// The name resolved to no address at all.
    #[error("{host} resolves to no address")]
    NoAddresses {
        /// The host as the caller gave it.
        host: String,
    },
    /// One of the addresses is of a kind the policy forbids.
    #[error("{host} resolves to {addr}, a {why} address, which this host's policy does not allow")]
    Forbidden {
        /// The host as the caller gave it.
        host: String,
        /// The first forbidden address it resolves to.
        addr: IpAddr,
        /// What kind of address that is, as [`forbidden`] names it (e.g. `loopback`).
        why: &'static str,
    },
}

/// How long a name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// What kind of address `ip` is, if it is one the host may not reach unless its operator allows
/// private targets.
pub fn forbidden(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local (cloud metadata)")
    } else if a == 0 {
        Some("unspecified")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if (a, b, c) == (192, 0, 0) {
        Some("IETF protocol assignment")
    } else if matches!((a, b, c), (192, 0, 2) | (198, 51, 100) | (203, 0, 113)) {
        Some("documentation")
    } else if a == 198 && (b == 18 || b == 19) {
        Some("benchmarking")
    } else if (a, b, c) == (192, 88, 99) {
        Some("deprecated (6to4 relay anycast)")
    } else if a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

/// The IPv4 address an IPv6 address carries in one of the forms that reach it: IPv4-mapped
/// (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`), NAT64 (`64:ff9b::/96`), 6to4
/// (`2002::/16`) and the old IPv4-compatible `::a.b.c.d` (`::/96`, but `::` and `::1`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo]
        | [0, 0, 0, 0, 0xffff, 0, hi, lo]
        | [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(v4(hi, lo)),
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 || lo > 1 => Some(v4(hi, lo)),
        [0x2002, hi, lo, ..] => Some(v4(hi, lo)),
        _ => None,
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return forbidden_v4(v4);
    }
    let s = ip.segments();
    let first = s[0];
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
    } else if first & 0xffc0 == 0xfec0 {
        Some("site-local (deprecated)")
    } else if s[..3] == [0x64, 0xff9b, 1] {
        Some("private (local-use NAT64)")
    } else if s[..3] == [0x100, 0, 0] && s[3] <= 1 {
        Some("discard-only")
    } else if (first == 0x2001 && s[1] == 0xdb8) || (first == 0x3fff && s[1] < 0x1000) {
        Some("documentation")
    } else if first == 0x2001 && s[1] < 0x200 {
        // Teredo (2001::/32) and the other IETF assignments: none is a place to connect to.
        Some("IETF protocol assignment")
    } else if first == 0x5f00 {
        Some("segment routing (SRv6)")
    } else if first & 0xe000 != 0x2000 {
        // Outside 2000::/3, the only global unicast space there is.
        Some("reserved")
    } else {
        None
    }
}

/// `host` without the brackets of an IPv6 literal (`[::1]` → `::1`).
pub fn bare_host(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// The addresses `host` (a name or an IP literal, IPv6 with or without brackets) stands for at
/// `port`.
pub async fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, AddressError> {
    let bare = bare_host(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let failed = |reason: String| AddressError::Resolve {
        host: host.to_string(),
        reason,
    };
    if bare.is_empty() {
        return Err(failed("the name is empty".into()));
    }
    let addrs: Vec<SocketAddr> =
        tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((bare, port)))
            .await
            .map_err(|_| failed(format!("no answer within {RESOLVE_TIMEOUT:?}")))?
            .map_err(|e| failed(e.to_string()))?
            .collect();
    if addrs.is_empty() {
        return Err(AddressError::NoAddresses {
            host: host.to_string(),
        });
    }
    Ok(addrs)
}

/// Refuse `addrs` (what `host` resolved to) if any of them is forbidden, unless private targets
/// are allowed: a name with one forbidden address is refused whole, since the caller cannot
/// know which one a later connection would get.
pub fn check(host: &str, addrs: &[SocketAddr], allow_private: bool) -> Result<(), AddressError> {
    if allow_private {
        return Ok(());
    }
    match addrs
        .iter()
        .find_map(|a| forbidden(a.ip()).map(|why| (a.ip(), why)))
    {
        Some((addr, why)) => Err(AddressError::Forbidden {
            host: host.to_string(),
            addr,
            why,
        }),
        None => Ok(()),
    }
}

/// Resolve `host` and check every address it stands for: the addresses to connect to.
pub async fn resolve_checked(
    host: &str,
    port: u16,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, AddressError> {
    let addrs = resolve(host, port).await?;
    check(host, &addrs, allow_private)?;
    Ok(addrs)
}

/// An HTTP client's resolver under the policy: names resolve only to addresses it allows, at
/// the moment of each connection, and the client connects to exactly those.
pub struct PolicyResolver {
    /// Allow private targets: resolve without refusing any address (the operator's choice).
    pub allow_private: bool,
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            // The client puts the port in itself; any will do here.
            let addrs = resolve_checked(&host, 0, allow_private)
                .await
                .map_err(Box::new)?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// A host and port an operator names (`broker.example:5672`, `10.0.0.5:5672`,
/// `[fd00::5]:5672`): exactly that host, spelled that way, and that port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    host: String,
    port: u16,
}

/// Why an operator's `host:port` could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not host:port (e.g. broker.example:5672 or [fd00::5]:5672)")]
pub struct HostPortError(pub String);

/// One spelling of a host for comparing: case and a final dot of a name do not matter, nor the
/// way an IP literal is written (`[::1]` and `0:0::1` are one host). Other numeric spellings of
/// IPv4 (`2130706433`, `127.1`) are names here, so they match nothing an operator wrote as an
/// address.
fn canonical_host(host: &str) -> String {
    let bare = bare_host(host);
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => bare.trim_end_matches('.').to_ascii_lowercase(),
    }
}

impl std::str::FromStr for HostPort {
    type Err = HostPortError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || HostPortError(text.to_string());
        let (host, port) = text.trim().rsplit_once(':').ok_or_else(bad)?;
        // An IPv6 host needs its brackets, or its last group would read as the port.
        if host.contains(':') && !(host.starts_with('[') && host.ends_with(']')) {
            return Err(bad());
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(bad)?;
        let host = canonical_host(host);
        if host.is_empty() || host.contains(['/', '@', '[', ']', ' ']) {
            return Err(bad());
        }
        Ok(HostPort { host, port })
    }
}

impl std::fmt::Display for HostPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl HostPort {
    /// Whether `host`:`port` (as someone else wrote it) is this one.
    pub fn names(&self, host: &str, port: u16) -> bool {
        self.port == port && self.host == canonical_host(host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_ranges() {
        for (ip, why) in [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("10.1.2.3", "private"),
            ("172.20.0.1", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local (cloud metadata)"),
            ("0.0.0.0", "unspecified"),
            ("0.1.2.3", "unspecified"),
            ("100.100.100.200", "shared (carrier-grade NAT)"),
            ("192.0.0.8", "IETF protocol assignment"),
            ("192.0.2.1", "documentation"),
            ("198.51.100.7", "documentation"),
            ("203.0.113.9", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.254", "benchmarking"),
            ("192.88.99.1", "deprecated (6to4 relay anycast)"),
            ("224.0.0.1", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("ff02::1", "multicast"),
            ("fd00:ec2::254", "private (unique local)"),
            ("fc00::1", "private (unique local)"),
            ("fe80::1", "link-local"),
            ("febf::1", "link-local"),
            ("fec0::1", "site-local (deprecated)"),
            ("feff::1", "site-local (deprecated)"),
            // IPv4 inside IPv6: mapped, translated, NAT64, 6to4, IPv4-compatible.
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:0:169.254.169.254", "link-local (cloud metadata)"),
            ("64:ff9b::7f00:1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata)"),
            ("2002:a00:1::", "private"),
            ("2002:7f00:1::5", "loopback"),
            ("::10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b:1::1", "private (local-use NAT64)"),
            ("100::1", "discard-only"),
            ("100:0:0:1::1", "discard-only"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("2001::1", "IETF protocol assignment"),
            (
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                "IETF protocol assignment",
            ),
            ("5f00::1", "segment routing (SRv6)"),
            ("4000::1", "reserved"),
            ("1::1", "reserved"),
        ] {
            assert_eq!(forbidden(ip.parse().unwrap()), Some(why), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "192.0.3.1",
            "198.20.0.1",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2001:4860::8888",
            "3fff:1000::1",
        ] {
            assert_eq!(forbidden(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[tokio::test]
    async fn names_are_checked_after_resolution() {
        for host in ["localhost", "127.0.0.1", "[::1]", "2130706433", "127.1"] {
            let err = resolve_checked(host, 9, false).await.unwrap_err();
            assert!(
                matches!(
                    err,
                    AddressError::Forbidden {
                        why: "loopback",
                        ..
                    }
                ),
                "{host}: {err}"
            );
            assert!(resolve_checked(host, 9, true).await.is_ok(), "{host}");
        }
        let addrs = resolve_checked("[::1]", 5672, true).await.unwrap();
        assert_eq!(addrs, ["[::1]:5672".parse().unwrap()]);
        assert!(matches!(
            resolve("", 80).await,
            Err(AddressError::Resolve { .. })
        ));
        assert!(matches!(
            resolve("no-such-host.invalid", 80).await,
            Err(AddressError::Resolve { .. })
        ));
    }

    #[test]
    fn host_ports_name_exactly_one_host_and_port() {
        let broker: HostPort = "127.0.0.1:5672".parse().unwrap();
        assert!(broker.names("127.0.0.1", 5672));
        assert!(!broker.names("127.0.0.1", 5673));
        assert!(!broker.names("localhost", 5672));
        assert!(!broker.names("2130706433", 5672));
        assert!(!broker.names("127.1", 5672));
        let named: HostPort = "Rabbit.Example.:5671".parse().unwrap();
        assert!(named.names("rabbit.example", 5671));
        assert!(named.names("RABBIT.EXAMPLE.", 5671));
        assert_eq!(named.to_string(), "rabbit.example:5671");
        let v6: HostPort = "[::1]:5672".parse().unwrap();
        assert!(v6.names("::1", 5672));
        assert!(v6.names("[0:0::1]", 5672));
        assert_eq!(v6.to_string(), "[::1]:5672");
        for bad in [
            "",
            "rabbit",
            "rabbit:",
            ":5672",
            "rabbit:0",
            "rabbit:70000",
            "::1:5672",
            "user@rabbit:5672",
            "rabbit/x:5672",
        ] {
            assert!(bad.parse::<HostPort>().is_err(), "{bad:?}");
        }
    }
}
