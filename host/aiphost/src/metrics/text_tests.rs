//! The text `/metrics` renders keeps the Prometheus conventions `promtool check metrics`
//! checks (the e2e test `metrics_promtool` runs promtool itself on a live host): every family
//! has `# HELP` and `# TYPE`; `_total` names counters and only counters; a duration histogram
//! is in seconds; histograms have buckets (not summaries) ending in `+Inf`.

use super::store::StoreTiming;
use super::{HostMetrics, Labels};
use crate::agent::Registry;
use crate::store::CommitObserver;
use axum::http::StatusCode;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A family as the text declares it.
#[derive(Default, Debug)]
struct Family {
    help: bool,
    kind: Option<String>,
    samples: Vec<String>,
}

/// The families of `text`, by name; a sample's family is its name less a histogram's suffix.
fn families(text: &str) -> BTreeMap<String, Family> {
    let mut out: BTreeMap<String, Family> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap_or_default();
            out.entry(name.to_string()).or_default().help = true;
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split(' ');
            let name = words.next().unwrap_or_default();
            out.entry(name.to_string()).or_default().kind = words.next().map(str::to_string);
        } else {
            let name = line.split(['{', ' ']).next().unwrap_or_default();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    name.strip_suffix(s).filter(|base| {
                        out.get(*base)
                            .is_some_and(|f| f.kind.as_deref() == Some("histogram"))
                    })
                })
                .unwrap_or(name);
            out.entry(family.to_string())
                .or_default()
                .samples
                .push(line.to_string());
        }
    }
    out
}

/// What breaks the conventions in `text`, one line each.
fn problems(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (name, family) in families(text) {
        let kind = family.kind.as_deref().unwrap_or("");
        if !family.help {
            found.push(format!("{name}: no HELP"));
        }
        if kind.is_empty() {
            found.push(format!("{name}: no TYPE"));
        }
        if name.ends_with("_total") != (kind == "counter") {
            found.push(format!("{name}: `_total` is for counters only ({kind})"));
        }
        if kind == "summary" {
            found.push(format!("{name}: a summary, not a histogram"));
        }
        if name.contains("duration") && !name.ends_with("_seconds") {
            found.push(format!("{name}: a duration not in seconds"));
        }
        if kind == "histogram"
            && !family
                .samples
                .iter()
                .any(|s| s.starts_with(&format!("{name}_bucket{{")) && s.contains("le=\"+Inf\""))
        {
            found.push(format!("{name}: a histogram without its +Inf bucket"));
        }
    }
    found
}

#[test]
fn the_rendered_text_keeps_the_conventions() {
    let host = HostMetrics::new(Arc::new(Registry::default()));
    let timing = StoreTiming::new(&host.metrics);
    timing.round(Duration::from_millis(2));
    timing.synced(Duration::from_micros(700));
    host.requests
        .observe("aip", "nobody", StatusCode::OK, Duration::from_millis(3));
    host.requests.observe(
        "mcp",
        "",
        StatusCode::UNAUTHORIZED,
        Duration::from_micros(90),
    );
    host.metrics
        .counter("aiphost_example_total", "An example", Labels::none())
        .increment(2);
    let text = host.metrics.render();
    assert_eq!(problems(&text), Vec::<String>::new(), "{text}");
    let families = families(&text);
    for (name, kind) in [
        ("aiphost_store_commit_duration_seconds", "histogram"),
        ("aiphost_store_sync_duration_seconds", "histogram"),
        ("aiphost_request_duration_seconds", "histogram"),
        ("aiphost_requests_total", "counter"),
        ("aiphost_tasks_set_aside_total", "counter"),
    ] {
        assert_eq!(
            families.get(name).and_then(|f| f.kind.as_deref()),
            Some(kind),
            "{name} in\n{text}"
        );
    }
    // An id the registry does not host is no label: the request counts as the host's.
    assert!(!text.contains("nobody"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("aiphost_requests_total{")
                && l.contains("agent=\"\"")
                && l.contains("door=\"aip\"")
                && l.contains("outcome=\"ok\"")
                && l.ends_with(" 1")),
        "{text}"
    );
    // Buckets in seconds, 0.5 ms to 30 s.
    assert!(
        text.contains("aiphost_store_sync_duration_seconds_bucket{le=\"0.001\"} 1"),
        "{text}"
    );
    assert!(text.contains("le=\"30\""), "{text}");
}

#[test]
fn the_linter_sees_what_it_checks() {
    let bad = "# TYPE a_total gauge\na_total 1\n# HELP b_seconds b\n# TYPE b_seconds summary\nb_seconds{quantile=\"0.5\"} 1\nc 2\n";
    let found = problems(bad);
    for expected in [
        "a_total: no HELP",
        "a_total: `_total` is for counters only (gauge)",
        "b_seconds: a summary, not a histogram",
        "c: no HELP",
        "c: no TYPE",
    ] {
        assert!(
            found.iter().any(|f| f == expected),
            "{expected} not in {found:?}"
        );
    }
}

/// The host uses no global recorder: a `metrics` macro would record into whatever recorder the
/// process installed (none: lost), not into its host's. No file under `host/` calls one.
#[test]
fn no_file_of_the_host_uses_the_metrics_macros() {
    fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let host = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut all = Vec::new();
    files(&host, &mut all);
    assert!(
        all.len() > 100,
        "the host's sources are read ({})",
        all.len()
    );
    let macros = ["counter!(", "gauge!(", "histogram!("];
    let mut found = Vec::new();
    for file in all.iter().filter(|f| !f.ends_with("metrics/text_tests.rs")) {
        let code = std::fs::read_to_string(file).unwrap_or_default();
        if macros.iter().any(|m| code.contains(m)) {
            found.push(file.display().to_string());
        }
    }
    assert!(found.is_empty(), "metrics macros in {found:?}");
}
