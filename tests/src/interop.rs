//! Interop scripts: the Python of `.venv` or `.venv-agentscope` (set up by `scripts/python-env.sh`
//! with the official SDKs), a script of `tests/interop/` run against a host to its end within a
//! limit, what it wrote, and the scenarios it reported (one JSON line each, `{"scenario", "ok",
//! ...}`).

use crate::repo_root;
use serde_json::Value;
use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::process::Command;

/// `output`'s exit status, stdout and stderr, for a failure's message.
pub fn show(output: &Output) -> String {
    format!(
        "{}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Run `command` (from the repository's root) to completion within `limit`, killing it if it
/// takes longer.
pub async fn run(mut command: Command, what: &str, limit: Duration) -> Output {
    command
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {what}: {e}"));
    tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {limit:?}"))
        .unwrap_or_else(|e| panic!("waiting for {what}: {e}"))
}

/// The python of `.venv`, with the SDKs installed (the last line `python-env.sh` prints).
pub async fn sdk_python() -> String {
    env_python(&[]).await
}

/// The python of `.venv-agentscope`, with `agentscope-runtime` installed (its own venv: it needs
/// an `a2a-sdk` below 1.0, `.venv` has 1.3.0).
pub async fn agentscope_python() -> String {
    env_python(&["agentscope"]).await
}

/// The last line `python-env.sh {args}` prints: the python of the venv it set up.
async fn env_python(args: &[&str]) -> String {
    let what = format!("scripts/python-env.sh {}", args.join(" "));
    let mut command = Command::new("bash");
    command
        .arg(repo_root().join("scripts/python-env.sh"))
        .args(args);
    let output = run(command, &what, Duration::from_secs(600)).await;
    assert!(output.status.success(), "{what} failed\n{}", show(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let python = stdout.lines().last().unwrap_or_default().trim().to_string();
    assert!(
        !python.is_empty(),
        "{what} printed no python path\n{}",
        show(&output)
    );
    python
}

/// A script's run to its end: what it wrote, and that shown (see [`show`]).
pub struct Ran {
    pub output: Output,
    pub report: String,
}

/// Run `tests/interop/{script}` with `python` against the host at `host_url` (unbuffered, no
/// bytecode written, `env` set besides) to completion within `limit`, and print what it wrote.
pub async fn run_script(
    python: &str,
    script: &str,
    host_url: &str,
    env: &[(&str, &str)],
    limit: Duration,
) -> Ran {
    let mut command = Command::new(python);
    command
        .arg(repo_root().join("tests/interop").join(script))
        .arg(host_url)
        .envs(env.iter().copied())
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = run(command, script, limit).await;
    let report = show(&output);
    println!("{report}");
    Ran { output, report }
}

impl Ran {
    /// The scenario lines the script printed (those starting with `{`), each of which must be
    /// JSON.
    pub fn results(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.output.stdout)
            .lines()
            .filter(|line| line.trim_start().starts_with('{'))
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| {
                    panic!("not a JSON scenario line ({e}): {line}\n{}", self.report)
                })
            })
            .collect()
    }

    /// The scenario lines of a script every scenario of which must pass: each of `expected`
    /// reported and ok, nothing reported that `expected` does not list (a scenario added to the
    /// script and not to its test is a failure), and the script's exit code 0.
    pub fn all_passed(&self, script: &str, expected: &[&str]) -> Vec<Value> {
        let results = self.results();
        let mut failed = failed_scenarios(&results, expected);
        for result in &results {
            let scenario = result["scenario"].as_str().unwrap_or_default();
            if !expected.contains(&scenario) {
                failed.push(format!("{scenario}: not listed in this test: {result}"));
            }
        }
        self.assert_none_failed(&failed);
        assert_eq!(
            self.output.status.code(),
            Some(0),
            "{script} failed\n{}",
            self.report
        );
        results
    }

    /// Assert that `failed` (see [`failed_scenarios`]) is empty, showing the run if not.
    pub fn assert_none_failed(&self, failed: &[String]) {
        assert!(
            failed.is_empty(),
            "failed scenarios:\n{}\n{}",
            failed.join("\n"),
            self.report
        );
    }
}

/// What went wrong in `results`: each of `expected` that was not reported or did not pass, and
/// each other scenario reported that did not pass.
pub fn failed_scenarios<S: AsRef<str>>(results: &[Value], expected: &[S]) -> Vec<String> {
    let mut failed = Vec::new();
    for scenario in expected.iter().map(AsRef::as_ref) {
        match results.iter().find(|r| r["scenario"] == scenario) {
            None => failed.push(format!("{scenario}: did not run")),
            Some(found) if found["ok"] != true => failed.push(format!("{scenario}: {found}")),
            Some(_) => {}
        }
    }
    for result in results {
        let listed = expected.iter().any(|s| result["scenario"] == s.as_ref());
        if !listed && result["ok"] != true {
            failed.push(format!("{}: {result}", result["scenario"]));
        }
    }
    failed
}
