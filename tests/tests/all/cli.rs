//! The `aiphost` command line: scaffold a partner, build it, serve it, call it; help everywhere;
//! JSON logs on a flag.

use aiphost_tests::*;
use serde_json::Value;
use std::process::{Command, Output};

fn aiphost(args: &[&str]) -> Output {
    Command::new(aiphost_bin())
        .args(args)
        .current_dir(repo_root())
        // Share the plugins' target dir so a scaffold reuses the SDK already compiled for wasm.
        .env("CARGO_TARGET_DIR", repo_root().join("plugins/target"))
        .output()
        .expect("running aiphost")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_everywhere() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["agent", "--help"],
        vec!["agent", "new", "--help"],
        vec!["agent", "build", "--help"],
        vec!["agent", "list", "--help"],
        vec!["call", "--help"],
        vec!["call", "http://x", "start", "--help"],
        vec!["call", "http://x", "get", "--help"],
    ] {
        let out = aiphost(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).contains("Usage:"), "{args:?}");
    }
    let out = aiphost(&["agent", "frobnicate"]);
    assert!(!out.status.success());
}

#[test]
fn list_shows_bundles() {
    let dist = plugins_dist();
    let out = aiphost(&["agent", "list", "--agents", dist.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listing = stdout(&out);
    for id in [
        "chunked",
        "echo",
        "fetcher",
        "hostile",
        "stats",
        "trip-planner",
    ] {
        assert!(
            listing.lines().any(|l| l.starts_with(id)),
            "{id} missing from:\n{listing}"
        );
    }
    assert!(listing.contains("1.2.156.3088.1.1.AIPHST.ECHO.1.0000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaffold_build_serve_call() {
    plugins_dist();
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("shout");
    let dist = dir.path().join("dist");
    let out = aiphost(&["agent", "new", "shout", "--path", src.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(src.join("partner.toml").is_file() && src.join("src/lib.rs").is_file());
    let again = aiphost(&["agent", "new", "shout", "--path", src.to_str().unwrap()]);
    assert!(!again.status.success() && stderr(&again).contains("already exists"));

    let out = aiphost(&[
        "agent",
        "build",
        src.to_str().unwrap(),
        "--out",
        dist.to_str().unwrap(),
    ]);
    let progress = stderr(&out);
    assert!(out.status.success(), "{progress}");
    for step in ["[1/4]", "[2/4]", "[3/4]", "[4/4]", "built shout"] {
        assert!(progress.contains(step), "{step} missing from:\n{progress}");
    }
    assert!(dist.join("shout/partner.wasm").is_file());

    let data = dir.path().join("data");
    let host = ProcessHost::start(&data, &["--agents", dist.to_str().unwrap(), "--log-json"]);
    let base = format!("{}/agents/shout", host.url);
    let out = aiphost(&["call", &base, "start", "--task", "cli-1", "--text", "hello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let task: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(task["type"], "task-result");
    assert_eq!(task["status"]["state"], "awaiting-completion");
    assert_eq!(task["products"][0]["dataItems"][0]["text"], "HELLO");

    let out = aiphost(&["call", "--dialect", "v1", &base, "get", "--task", "cli-1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let task: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(task["type"], "task");
    assert_eq!(task["messageHistory"][0]["command"], "start");

    let out = aiphost(&["call", &base, "complete", "--task", "cli-1"]);
    let task: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(task["status"]["state"], "completed");

    let out = aiphost(&["call", &base, "cancel", "--task", "no-such-task"]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("-32001"), "{}", stdout(&out));

    // The bundled partners are served beside it, and logs are JSON lines.
    let out = aiphost(&[
        "call",
        &format!("{}/agents/echo", host.url),
        "start",
        "--data",
        r#"{"k": 1}"#,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(data.with_extension("log")).unwrap();
    let first = log.lines().next().expect("some log output");
    let line: Value =
        serde_json::from_str(first).unwrap_or_else(|e| panic!("not JSON ({e}): {first}"));
    assert!(line.get("level").is_some(), "{line}");
}

#[test]
fn build_refuses_bad_manifests_precisely() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("broken");
    let out = aiphost(&["agent", "new", "broken", "--path", src.to_str().unwrap()]);
    assert!(out.status.success());
    let manifest = std::fs::read_to_string(src.join("partner.toml")).unwrap();
    std::fs::write(
        src.join("partner.toml"),
        manifest.replace("id = \"broken\"\naic", "id = \"Not A Slug\"\naic"),
    )
    .unwrap();
    let out = aiphost(&["agent", "build", src.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("agent.id"), "{}", stderr(&out));
}

/// The flags `aiphost serve --help` lists, each with the default it shows (`[default: …]`).
fn serve_flags() -> std::collections::BTreeMap<String, Option<String>> {
    let help = aiphost(&["serve", "--help"]);
    assert!(help.status.success(), "{}", stderr(&help));
    let mut flags = std::collections::BTreeMap::new();
    let mut current: Option<String> = None;
    for line in stdout(&help).lines() {
        let trimmed = line.trim_start();
        if line.starts_with("  ") && (trimmed.starts_with("--") || trimmed.starts_with("-h")) {
            let flag = trimmed
                .split_whitespace()
                .find(|w| w.starts_with("--"))
                .map(|w| w.trim_end_matches(',').to_string());
            current = flag.clone();
            if let Some(flag) = flag {
                flags.insert(flag, None);
            }
        } else if let (Some(flag), Some(at)) = (&current, line.find("[default: ")) {
            let rest = &line[at + "[default: ".len()..];
            let value = rest.split(']').next().unwrap_or_default().to_string();
            flags.insert(flag.clone(), Some(value));
        }
    }
    flags
}

/// A README default as `--help` would show it: `4 MiB` as bytes, without backticks.
fn readme_value(cell: &str) -> String {
    let cell = cell.trim().trim_matches('`');
    match cell.strip_suffix(" MiB").map(str::parse::<u64>) {
        Some(Ok(mib)) => (mib << 20).to_string(),
        _ => cell.to_string(),
    }
}

/// The README's configuration table and `aiphost serve --help` name the same flags, with the
/// same defaults: the library's config holds them and `--help` shows them from there, so a
/// README that drifts from the code fails here.
#[test]
fn the_readme_configuration_table_matches_serve_help() {
    let help = serve_flags();
    let readme = std::fs::read_to_string(repo_root().join("README.md")).expect("README.md");
    let section = readme
        .split("## Configuration (`aiphost serve`)")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("the README has a configuration section");
    let mut documented = std::collections::BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with("| `--")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        // The flags of the first cell (`--a` / `--b`, or `--a X --b Y [--c Z]`).
        let flags: Vec<String> = cells[0]
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .filter(|w| w.starts_with("--"))
            .map(str::to_string)
            .collect();
        let defaults: Vec<&str> = cells[1].split(" / ").collect();
        for (i, flag) in flags.iter().enumerate() {
            documented.insert(flag.clone());
            let shown = help.get(flag).unwrap_or_else(|| {
                panic!("README documents {flag}, which `aiphost serve --help` does not list")
            });
            if let (Some(shown), true) = (shown, defaults.len() == flags.len()) {
                assert_eq!(
                    &readme_value(defaults[i]),
                    shown,
                    "{flag}: README says {:?}, --help {shown:?}",
                    defaults[i]
                );
            }
        }
    }
    // Global flags (logging, help) are documented apart.
    let undocumented: Vec<&String> = help
        .keys()
        .filter(|f| {
            !documented.contains(*f) && !["--help", "--log", "--log-json"].contains(&f.as_str())
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "flags missing from the README's configuration table: {undocumented:?}"
    );
}
