//! The doors stay apart (issue 30): no file of one door names another door (nor does the kit
//! name any door), within the AIP door imports run one way (door → entry → methods → command),
//! and no two files of `transport/` import each other. A door-to-door import or a circle fails
//! this test, so CI fails on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each door's folder (under `src/`), and how other code names it.
const DOORS: &[(&str, &[&str])] = &[
    ("transport/aip", &["transport::aip", "aip::"]),
    (
        "transport/a2a",
        &["transport::a2a", "a2a::errors", "a2a::push"],
    ),
    ("transport/group", &["transport::group", "group::"]),
    ("transport/agent_api", &["transport::agent_api"]),
    ("transport/aiflowy", &["transport::aiflowy"]),
    ("transport/mcp", &["transport::mcp"]),
];

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The file's code, without comments (a doc may name another door).
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_door_names_another() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (door, _) in DOORS {
        for file in rust_files(&src.join(door)) {
            let code = code(&file);
            for (other, names) in DOORS.iter().filter(|(o, _)| o != door) {
                for name in *names {
                    // `crate::protocol::a2a::…` is the A2A wire format, not the door.
                    let hits = code
                        .match_indices(name)
                        .filter(|(at, _)| !code[..*at].ends_with("protocol::"))
                        .count();
                    if hits > 0 {
                        found.push(format!("{} names {other} ({name})", file.display()));
                    }
                }
            }
            // AIP's wire errors are the AIP doors' (AIP and its group mode); A2A maps its own.
            if *door == "transport/a2a" && code.contains("aip_error") {
                found.push(format!("{} uses AIP's errors", file.display()));
            }
        }
    }
    // The kit is below every door, and so are the host's metrics: they name none.
    let below = [src.join("transport/kit"), src.join("metrics")];
    for file in below.iter().flat_map(|dir| rust_files(dir)) {
        let code = code(&file);
        for (door, names) in DOORS {
            for name in *names {
                let hits = code
                    .match_indices(name)
                    .filter(|(at, _)| !code[..*at].ends_with("protocol::"))
                    .count();
                if hits > 0 {
                    found.push(format!(
                        "{} (below the doors) names {door} ({name})",
                        file.display()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "door-to-door imports:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_aip_doors_imports_run_one_way() {
    let aip = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/transport/aip");
    // Who may name whom: entry → methods → command.
    let layers: &[(&str, &[&str])] = &[
        ("command.rs", &[]),
        ("rpc.rs", &["command"]),
        ("stream.rs", &["command"]),
        ("notification.rs", &["command"]),
        ("entry.rs", &["rpc", "stream", "notification"]),
    ];
    let modules = ["command", "rpc", "stream", "notification", "entry"];
    let mut found = Vec::new();
    for (file, allowed) in layers {
        let code = code(&aip.join(file));
        let me = file.trim_end_matches(".rs");
        for module in modules.iter().filter(|m| **m != me && !allowed.contains(m)) {
            let named = code.contains(&format!("super::{module}"))
                || code.contains(&format!("super::{{{module}"))
                || code.contains(&format!(", {module}}}"))
                || code.contains(&format!(", {module},"));
            if named {
                found.push(format!("{file} imports {module}"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A file's module path under `src/` (`transport/a2a/mod.rs` is `transport::a2a`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn skip_spaces(code: &[char], at: &mut usize) {
    while *at < code.len() && code[*at].is_whitespace() {
        *at += 1;
    }
}

/// The paths written at `at`: `a::b::c`, or a `use` tree `a::{b, c::{d, self}}`, each as its
/// segments (what follows the last segment, like `as x`, is read as more paths; harmless,
/// since only the longest prefix naming a file counts).
fn paths_at(code: &[char], at: &mut usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    loop {
        skip_spaces(code, at);
        if *at < code.len() && code[*at] == '{' {
            *at += 1;
            let mut out = Vec::new();
            while *at < code.len() {
                skip_spaces(code, at);
                match code.get(*at) {
                    Some('}') => {
                        *at += 1;
                        break;
                    }
                    Some(',') => *at += 1,
                    Some(_) => {
                        let before = *at;
                        for path in paths_at(code, at) {
                            out.push(prefix.iter().cloned().chain(path).collect());
                        }
                        if *at == before {
                            *at += 1;
                        }
                    }
                    None => break,
                }
            }
            return out;
        }
        let start = *at;
        while *at < code.len() && is_ident(code[*at]) {
            *at += 1;
        }
        if *at == start {
            return vec![prefix];
        }
        prefix.push(code[start..*at].iter().collect());
        if code.get(*at) == Some(&':') && code.get(*at + 1) == Some(&':') {
            *at += 2;
        } else {
            return vec![prefix];
        }
    }
}

/// The files of `transport/` each file there names (`crate::transport::…`, `super::…`,
/// `self::…`, and in a `mod.rs` its own child modules).
fn transport_imports(src: &Path) -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let files = rust_files(&src.join("transport"));
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let me = module_of(src, file);
        let text = code(file);
        // Test modules may name anything of their file (`use super::*`).
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        let chars: Vec<char> = text.chars().collect();
        let children: BTreeSet<String> = if file.ends_with("mod.rs") {
            text.lines()
                .filter_map(|l| {
                    let l = l.trim();
                    let l = l
                        .strip_prefix("pub(crate) ")
                        .or_else(|| l.strip_prefix("pub "))
                        .unwrap_or(l);
                    l.strip_prefix("mod ")?
                        .strip_suffix(';')
                        .map(str::to_string)
                })
                .collect()
        } else {
            BTreeSet::new()
        };
        let mut targets = BTreeSet::new();
        let mut at = 0;
        while at < chars.len() {
            let boundary = at == 0 || !(is_ident(chars[at - 1]) || chars[at - 1] == ':');
            if !boundary || !is_ident(chars[at]) {
                at += 1;
                continue;
            }
            let mut end = at;
            while end < chars.len() && is_ident(chars[end]) {
                end += 1;
            }
            let word: String = chars[at..end].iter().collect();
            let starts =
                matches!(word.as_str(), "crate" | "super" | "self") || children.contains(&word);
            if !starts || chars.get(end) != Some(&':') || chars.get(end + 1) != Some(&':') {
                at = end;
                continue;
            }
            let mut cursor = at;
            for path in paths_at(&chars, &mut cursor) {
                let mut base: Vec<String> = Vec::new();
                let mut rest = path.as_slice();
                match rest.first().map(String::as_str) {
                    Some("crate") => rest = &rest[1..],
                    Some("super") => {
                        base = me.clone();
                        while rest.first().is_some_and(|s| s == "super") {
                            base.pop();
                            rest = &rest[1..];
                        }
                    }
                    Some("self") => {
                        base = me.clone();
                        rest = &rest[1..];
                    }
                    _ => base = me.clone(),
                }
                let full: Vec<String> = base
                    .into_iter()
                    .chain(rest.iter().filter(|s| *s != "self").cloned())
                    .collect();
                let target = (1..=full.len()).rev().find_map(|n| modules.get(&full[..n]));
                if let Some(target) = target.filter(|t| *t != file) {
                    targets.insert(target.clone());
                }
            }
            at = cursor.max(end);
        }
        graph.insert(file.clone(), targets);
    }
    graph
}

#[test]
fn no_two_files_of_the_door_layer_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = transport_imports(&src);
    let mut circles = Vec::new();
    for (file, targets) in &graph {
        for target in targets {
            if file < target && graph.get(target).is_some_and(|t| t.contains(file)) {
                circles.push(format!(
                    "{} <-> {}",
                    file.strip_prefix(&src).unwrap_or(file).display(),
                    target.strip_prefix(&src).unwrap_or(target).display()
                ));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "files of transport/ that import each other:\n{}",
        circles.join("\n")
    );
    // The parse finds imports at all (a parse that found none would pass anything).
    let entry = src.join("transport/aip/entry.rs");
    assert!(graph[&entry].contains(&src.join("transport/aip/rpc.rs")));
    assert!(graph[&entry].contains(&src.join("transport/kit/caller.rs")));
}

/// What every door may reach outside its folder: the model, the kit and the connection layer
/// below it, the engine's API (tasks, partners, quotas, the task key and what the store keeps
/// for group memberships), the door-independent refusals, and the host's small shared helpers.
const ANY_DOOR_MAY_REACH: &[&str] = &[
    "model",
    "transport::kit",
    "transport::tls",
    "task",
    "agent",
    "quota",
    "store",
    "refusal",
    "tenant::LeaderAuthError",
    "redact",
    "units",
    "net_policy",
    // The host's metrics, on which a door registers its counters (they name no door).
    "metrics",
];

/// A door's own wire format (and, for AIP and its group mode, AIP's error mapping).
const WIRE_OF: &[(&str, &[&str])] = &[
    (
        "transport/aip",
        &[
            "protocol::aip",
            "protocol::jsonrpc",
            "protocol::ErrorCode",
            "protocol::RpcError",
            "aip_error",
        ],
    ),
    (
        "transport/a2a",
        &[
            "protocol::a2a",
            "protocol::jsonrpc",
            "protocol::notice_format",
        ],
    ),
    (
        "transport/group",
        &[
            "protocol::aip",
            "protocol::jsonrpc",
            "protocol::ErrorCode",
            "protocol::RpcError",
            "aip_error",
        ],
    ),
    // The chat doors: their protocol, and the refusal body both answer with.
    (
        "transport/agent_api",
        &["protocol::agent_api", "protocol::error_object"],
    ),
    (
        "transport/aiflowy",
        &["protocol::aiflowy", "protocol::error_object"],
    ),
    // The MCP door: its wire (rmcp's types, built in protocol::mcp), and the error object its
    // refusals share with the chat doors.
    (
        "transport/mcp",
        &["protocol::mcp", "protocol::error_object"],
    ),
];

/// Every `crate::a::b` a file's code names (a `use crate::{x, y}` group names each), as
/// `a::b` (`protocol` and `transport` need two segments to say which part is meant).
fn crate_paths(code: &str) -> BTreeSet<String> {
    let chars: Vec<char> = code.chars().collect();
    let needle: Vec<char> = "crate::".chars().collect();
    let mut found = BTreeSet::new();
    let mut at = 0;
    while at + needle.len() <= chars.len() {
        let starts_here =
            chars[at..at + needle.len()] == needle[..] && (at == 0 || !is_ident(chars[at - 1]));
        if !starts_here {
            at += 1;
            continue;
        }
        at += needle.len();
        for path in paths_at(&chars, &mut at) {
            let two = matches!(
                path.first().map(String::as_str),
                Some("protocol" | "transport" | "tenant")
            );
            let depth = if two { 2 } else { 1 };
            found.insert(path.into_iter().take(depth).collect::<Vec<_>>().join("::"));
        }
    }
    found
}

#[test]
fn each_door_reaches_only_the_model_its_wire_the_kit_and_the_engine() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    let mut graph = String::new();
    for (door, wire) in WIRE_OF {
        let mut reached = BTreeSet::new();
        for file in rust_files(&src.join(door)) {
            for path in crate_paths(&code(&file)) {
                let own = path.replace("::", "/").starts_with(door);
                let allowed = ANY_DOOR_MAY_REACH
                    .iter()
                    .chain(wire.iter())
                    .any(|a| path == *a || path.starts_with(&format!("{a}::")));
                if !allowed && !own {
                    found.push(format!("{} reaches crate::{path}", file.display()));
                }
                if !own {
                    reached.insert(path);
                }
            }
        }
        let reached: Vec<_> = reached.into_iter().collect();
        graph.push_str(&format!("{door} -> {}\n", reached.join(", ")));
    }
    // The module graph, for the record (`cargo test -p aiphost --lib door_imports -- --nocapture`).
    println!("{graph}");
    assert!(
        found.is_empty(),
        "a door reaches beyond its layer:\n{}",
        found.join("\n")
    );
}

/// Every door's reach is checked: a door added to [`DOORS`] without its wire in [`WIRE_OF`]
/// would be checked by neither test's second half.
#[test]
fn every_door_has_its_wire_listed() {
    for (door, _) in DOORS {
        assert!(
            WIRE_OF.iter().any(|(d, _)| d == door),
            "{door} is not in WIRE_OF"
        );
    }
}
