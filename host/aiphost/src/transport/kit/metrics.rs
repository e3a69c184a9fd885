//! The Prometheus text of a metric: what the host's and each door's lines are written with.

/// `# HELP` and `# TYPE` of a family whose samples follow (`kind`: `counter` or `gauge`).
pub fn family(text: &mut String, name: &str, help: &str, kind: &str) {
    text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
}

/// A counter with one sample.
pub fn counter(text: &mut String, name: &str, help: &str, value: u64) {
    family(text, name, help, "counter");
    text.push_str(&format!("{name} {value}\n"));
}

/// A gauge with one sample.
pub fn gauge(text: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    family(text, name, help, "gauge");
    text.push_str(&format!("{name} {value}\n"));
}
