//! Which imports a published component may have: the partner world, the sandboxed WASI that
//! the languages' standard libraries link against, and nothing that reaches outside unless
//! granted.
//!
//! ```
//! use aiphost_engine::agent::imports::check;
//! assert!(check(&["aiphost:partner/task@0.1.0".into()], false).is_ok());
//! assert!(check(&["wasi:sockets/tcp@0.2.6".into()], false).is_ok());
//! let refused = check(&["wasi:http/outgoing-handler@0.2.6".into()], false).unwrap_err();
//! assert_eq!(refused.import, "wasi:http/outgoing-handler@0.2.6");
//! ```

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
    // Python's and JavaScript's runtimes link the socket API whether or not a partner uses it
    // (componentize-py always imports seven `wasi:sockets` interfaces). Importing it can do
    // nothing: the sandbox grants no socket (every address check says no and name lookup is
    // off), so a connect or a bind fails inside the guest (sandbox::partners_have_no_ambient_authority).
    "wasi:sockets/",
];

/// Check every import name of a component; `http_granted`: the partner was granted outbound
/// HTTP to some host.
pub fn check(imports: &[String], http_granted: bool) -> Result<(), Refused> {
    for import in imports {
        if BASELINE.iter().any(|p| import.starts_with(p)) {
            continue;
        }
        let reason = if import.starts_with("wasi:http/") {
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
        assert_eq!(check(&std_imports, false), Ok(()));
        let mut with_sockets = std_imports.clone();
        with_sockets.push("wasi:sockets/tcp@0.2.6".into());
        assert_eq!(check(&with_sockets, false), Ok(()));
        for outside in ["wasi:http/outgoing-handler@0.2.6", "acme:secret/door"] {
            let mut imports = std_imports.clone();
            imports.push(outside.into());
            let refused = check(&imports, false).unwrap_err();
            assert_eq!(refused.import, outside);
        }
        let http = vec!["wasi:http/outgoing-handler@0.2.6".to_string()];
        assert_eq!(check(&http, true), Ok(()));
    }
}
