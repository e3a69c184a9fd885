//! Criterion: writing a timestamp, as every stored record, event and reply does — through
//! `Timestamp`'s own `Display` (digits on the stack), against chrono's RFC 3339 formatter that
//! `Display` called before (a `String` per timestamp), each into a reused buffer and as the JSON
//! of a field.
//!
//! ```sh
//! cargo bench -p aiphost-model --bench timestamp
//! ```

use aiphost_model::Timestamp;
use chrono::{DateTime, SecondsFormat};
use criterion::{Criterion, criterion_group, criterion_main};
use std::fmt::Write;
use std::hint::black_box;

fn timestamps(c: &mut Criterion) {
    // What `Timestamp::now()` makes (microseconds, `+00:00`) and what a Leader may send.
    let text = [
        "2026-12-08T02:40:11.123456+00:00",
        "2025-09-01T11:58:00+08:00",
    ];
    for text in text {
        let ours = Timestamp::parse(text).expect("a valid timestamp");
        let theirs = DateTime::parse_from_rfc3339(text).expect("a valid timestamp");
        assert_eq!(
            ours.to_string(),
            theirs.to_rfc3339_opts(SecondsFormat::AutoSi, false)
        );
        let mut out = String::with_capacity(64);
        c.bench_function(&format!("display {text}"), |b| {
            b.iter(|| {
                out.clear();
                write!(out, "{}", black_box(&ours)).expect("writing to a String");
                black_box(out.len())
            })
        });
        c.bench_function(&format!("chrono {text}"), |b| {
            b.iter(|| {
                out.clear();
                out.push_str(&black_box(&theirs).to_rfc3339_opts(SecondsFormat::AutoSi, false));
                black_box(out.len())
            })
        });
        let mut json = Vec::with_capacity(64);
        c.bench_function(&format!("json {text}"), |b| {
            b.iter(|| {
                json.clear();
                serde_json::to_writer(&mut json, black_box(&ours)).expect("writing to a Vec");
                black_box(json.len())
            })
        });
    }
}

criterion_group!(benches, timestamps);
criterion_main!(benches);
