//! Fetcher: reaches outside its sandbox only through what the host grants.
//!
//! - `get URL`: a GET through the host's outbound HTTP; the product `fetched` holds
//!   `{"status", "body"}`, or `{"error"}` with the `wasi:http` error code when the host refuses
//!   (a host not granted, a private address, a response too large) or the request fails;
//! - `config NAME`: the product `fetched` holds `{"value"}` or `{"error"}`;
//! - `after MS COMMAND`: keeps the CPU busy for MS milliseconds first, then does COMMAND (a busy
//!   invocation moves to the host's guest threads: its outbound calls must work there too).

use aiphost_sdk::serde_json::json;
use aiphost_sdk::{DataItem, Outcome, Partner, Product, Task};

/// The fetcher partner.
pub struct Fetcher;

impl Partner for Fetcher {
    fn work(_task: &mut Task, input: Vec<DataItem>) -> Outcome {
        let command = input
            .iter()
            .find_map(DataItem::as_text)
            .unwrap_or("")
            .trim()
            .to_owned();
        let command = match command
            .strip_prefix("after ")
            .and_then(|r| r.split_once(' '))
        {
            Some((ms, rest)) => {
                let busy = std::time::Duration::from_millis(ms.parse().unwrap_or(0));
                let started = std::time::Instant::now();
                while started.elapsed() < busy {
                    std::hint::black_box(());
                }
                rest.trim().to_owned()
            }
            None => command,
        };
        let result = if let Some(url) = command.strip_prefix("get ") {
            match aiphost_sdk::http::request("GET", url.trim(), &[("accept", "text/plain")], None) {
                Ok(response) => json!({
                    "status": response.status,
                    "body": String::from_utf8_lossy(&response.body),
                }),
                Err(e) => json!({ "error": e.code }),
            }
        } else if let Some(name) = command.strip_prefix("config ") {
            match aiphost_sdk::config::get(name.trim()) {
                Ok(value) => json!({ "value": value }),
                Err(e) => json!({ "error": format!("{e:?}") }),
            }
        } else {
            return Outcome::Fail(format!(
                "unknown command {command:?}: send `get URL` or `config NAME`"
            ));
        };
        Outcome::Done(vec![
            Product::new("fetched")
                .named("fetched")
                .with_item(DataItem::data(result)),
        ])
    }
}

aiphost_sdk::export!(Fetcher);
