//! Which imports a published component may have: the partner world, the sandboxed WASI that
//! Rust's standard library links against, and nothing that reaches outside unless granted.
//!
//! ```
//! use aiphost_engine::agent::imports::{check, ImportPolicy};
//! let policy = ImportPolicy::default();
//! assert!(check(&["aiphost:partner/task@0.1.0".into()], &policy, false).is_ok());
//! let refused = check(&["wasi:sockets/tcp@0.2.6".into()], &policy, false).unwrap_err();
//! assert_eq!(refused.import, "wasi:sockets/tcp@0.2.6");
//! ```

/// What the operator lets published components import beyond the baseline.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportPolicy {
    /// Allow `wasi:sockets/*` imports. The sandbox still grants no network: this only lets
    /// components whose standard library links the socket API load at all.
    pub allow_socket_imports: bool,
}

/// An import the policy refuses, and why.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("the component imports {import}: {reason}")]
pub struct Refused {
    /// The refused import name, as the component declares it.
    pub import: String,
    /// Why the policy refuses it, readable by the publisher.
    pub reason: String,
}

/// Interfaces every partner may import: its own world, and WASI that is sandboxed to nothing
/// (no preopened directories, no environment, no arguments; output captured for diagnostics).
const BASELINE: &[&str] = &[
    "aiphost:partner/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:cli/",
    "wasi:filesystem/",
];

/// Check every import name of a component against `policy`; `http_granted`: the partner was
/// granted outbound HTTP to some host.
pub fn check(imports: &[String], policy: &ImportPolicy, http_granted: bool) -> Result<(), Refused> {
    for import in imports {
        if BASELINE.iter().any(|p| import.starts_with(p)) {
            continue;
        }
        let reason = if import.starts_with("wasi:sockets/") {
            if policy.allow_socket_imports {
                continue;
            }
            "network sockets are not granted to partners on this host"
        } else if import.starts_with("wasi:http/") {
            if http_granted {
                continue;
            }
            "outbound HTTP is not granted to this partner (its manifest lists no [capabilities] http host)"
        } else {
            "this host does not offer that interface to partners"
        };
        return Err(Refused {
            import: import.clone(),
            reason: reason.into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_passes_and_reach_outside_is_refused() {
        let std_imports: Vec<String> = [
            "wasi:cli/environment@0.2.6",
            "wasi:cli/exit@0.2.6",
            "wasi:io/streams@0.2.6",
            "wasi:clocks/wall-clock@0.2.6",
            "wasi:filesystem/preopens@0.2.6",
            "wasi:random/random@0.2.6",
            "aiphost:partner/kv@0.1.0",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(check(&std_imports, &ImportPolicy::default(), false), Ok(()));
        for outside in [
            "wasi:sockets/tcp@0.2.6",
            "wasi:http/outgoing-handler@0.2.6",
            "acme:secret/door",
        ] {
            let mut imports = std_imports.clone();
            imports.push(outside.into());
            let refused = check(&imports, &ImportPolicy::default(), false).unwrap_err();
            assert_eq!(refused.import, outside);
        }
        let sockets = vec!["wasi:sockets/tcp@0.2.6".to_string()];
        let lenient = ImportPolicy {
            allow_socket_imports: true,
        };
        assert_eq!(check(&sockets, &lenient, false), Ok(()));
        let http = vec!["wasi:http/outgoing-handler@0.2.6".to_string()];
        assert_eq!(check(&http, &ImportPolicy::default(), true), Ok(()));
    }
}
