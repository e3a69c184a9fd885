//! Bearer credentials: how they are made, what they look like, how they are checked.
//!
//! A credential is `{kind}.{id}.{secret}`: the id finds the stored record without scanning, the
//! secret is 256 random bits. Only a SHA-256 of the whole token is stored. A salted slow hash
//! protects low-entropy passwords; these tokens carry 256 bits, so one SHA-256 is enough and keeps
//! a check at about a microsecond on the request path.
//!
//! ```
//! use aiphost::tenant::credentials::{Credential, Kind};
//! let issued = Credential::issue(Kind::LeaderKey);
//! let (kind, id) = Credential::parse(&issued.token).unwrap();
//! assert_eq!((kind, id), (Kind::LeaderKey, issued.id.as_str()));
//! assert!(Credential::matches(&issued.hash, &issued.token));
//! assert!(!Credential::matches(&issued.hash, "ahk.0123.forged"));
//! ```

use sha2::{Digest, Sha256};

/// What a credential lets its bearer do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A tenant's admin token: manage its own partners and keys.
    TenantAdmin,
    /// A Leader's API key for one hosted partner.
    LeaderKey,
}

impl Kind {
    fn prefix(self) -> &'static str {
        match self {
            Kind::TenantAdmin => "aht",
            Kind::LeaderKey => "ahk",
        }
    }
}

/// A freshly issued credential: the token is shown once, only the hash is kept.
#[derive(Clone)]
pub struct Credential {
    /// The id in the token, which finds its stored record: 16 lowercase hex digits.
    pub id: String,
    /// The whole token, `{kind}.{id}.{secret}`, for its holder.
    pub token: String,
    /// SHA-256 of the token, hex: all that is stored.
    pub hash: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("id", &self.id)
            .field("token", &crate::redact::Redacted(Some(&self.token)))
            .finish_non_exhaustive()
    }
}

impl Credential {
    /// A new random credential of `kind`.
    pub fn issue(kind: Kind) -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
        let secret = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        let token = format!("{}.{id}.{secret}", kind.prefix());
        let hash = hash(&token);
        Credential { id, token, hash }
    }

    /// The kind and id a well-formed token names (`None`: not one of ours).
    pub fn parse(token: &str) -> Option<(Kind, &str)> {
        let mut parts = token.splitn(3, '.');
        let kind = match parts.next()? {
            "aht" => Kind::TenantAdmin,
            "ahk" => Kind::LeaderKey,
            _ => return None,
        };
        let id = parts.next()?;
        let secret = parts.next()?;
        let well_formed = |s: &str, len: usize| {
            s.len() == len
                && s.bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        };
        (well_formed(id, 16) && well_formed(secret, 64)).then_some((kind, id))
    }

    /// Whether `token` is the one whose hash is `stored_hash`, in time independent of where they
    /// differ.
    pub fn matches(stored_hash: &str, token: &str) -> bool {
        constant_time_eq(stored_hash.as_bytes(), hash(token).as_bytes())
    }
}

/// The stored form of a token.
pub fn hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_prints_without_its_token() {
        let credential = Credential::issue(Kind::LeaderKey);
        let shown = format!("{credential:?}");
        assert!(!shown.contains(&credential.token), "{shown}");
        assert!(
            shown.contains(&credential.id) && shown.contains("redacted"),
            "{shown}"
        );
    }

    #[test]
    fn tokens_are_unique_well_formed_and_checked_by_hash() {
        let a = Credential::issue(Kind::TenantAdmin);
        let b = Credential::issue(Kind::TenantAdmin);
        assert_ne!(a.token, b.token);
        assert_ne!(a.id, b.id);
        assert_eq!(
            Credential::parse(&a.token),
            Some((Kind::TenantAdmin, a.id.as_str()))
        );
        assert!(Credential::matches(&a.hash, &a.token));
        assert!(!Credential::matches(&a.hash, &b.token));
        assert!(!a.hash.contains(&a.token[20..]));
    }

    #[test]
    fn malformed_tokens_are_not_ours() {
        let good = Credential::issue(Kind::LeaderKey).token;
        for bad in [
            "",
            "ahk",
            "ahk..",
            "xyz.0123456789abcdef.00",
            &good[..good.len() - 1],
            &good.to_uppercase(),
            &format!("{good}0"),
            &good.replace("ahk.", "aht.x"),
        ] {
            assert_eq!(Credential::parse(bad), None, "{bad:?}");
        }
    }
}
