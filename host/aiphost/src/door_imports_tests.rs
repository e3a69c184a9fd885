//! The doors stay apart (issue 30): no file of one door names another door, and within the AIP
//! door imports run one way (entry → methods → command). A door-to-door import fails this test,
//! so CI fails on it.

use std::path::{Path, PathBuf};

/// Each door's folder (under `src/`), and how other code names it.
const DOORS: &[(&str, &[&str])] = &[
    ("transport/aip", &["transport::aip", "aip::"]),
    (
        "transport/a2a",
        &["transport::a2a", "a2a::errors", "a2a::push"],
    ),
    ("group", &["crate::group", "group::"]),
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
