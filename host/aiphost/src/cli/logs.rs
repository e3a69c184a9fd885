//! `aiphost logs AGENT`: a partner's own log lines, from a running host's admin API
//! (`GET /admin/agents/{agent}/logs`), one line each (`--json`: the records as JSON lines).
//! `--follow` keeps reading new lines as they come; a dropped stream is opened again with
//! `Last-Event-ID`, so nothing the host still holds is missed or shown twice.

use super::admin::AdminArgs;
use anyhow::{Context, bail};
use clap::Args;
use reqwest::Method;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt::Write as _;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct LogsArgs {
    /// The partner's id.
    agent: String,
    /// Keep reading new lines as they come (Ctrl-C to stop).
    #[arg(long, short = 'f')]
    follow: bool,
    /// Only lines after this seq (without it: the newest --limit lines).
    #[arg(long, value_name = "SEQ")]
    since: Option<u64>,
    /// Only lines of this level and above: trace, debug, info, warn, error.
    #[arg(long, value_name = "LEVEL")]
    level: Option<String>,
    /// Only lines of this task (the id its Leader gave it).
    #[arg(long, value_name = "ID")]
    task: Option<String>,
    /// Only lines of this Leader's tasks (its AIC).
    #[arg(long, value_name = "AIC")]
    leader: Option<String>,
    /// The most lines shown at first (the host gives at most 2000).
    #[arg(long, value_name = "N", default_value_t = 200)]
    limit: usize,
    /// Print each record as one line of JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    admin: AdminArgs,
}

/// One record as the host sends it.
#[derive(Debug, Deserialize, Serialize)]
struct Line {
    seq: u64,
    time: String,
    level: String,
    agent: String,
    version: u64,
    tenant: Option<String>,
    leader: Option<String>,
    task: Option<String>,
    message: String,
    #[serde(deserialize_with = "ordered_fields", serialize_with = "fields_object")]
    fields: Vec<(String, String)>,
}

impl Line {
    /// `TIME LEVEL [leader/task] message k=v ...`.
    fn text(&self) -> String {
        let mut out = format!("{} {:<5} ", self.time, self.level.to_uppercase());
        match (&self.leader, &self.task) {
            (Some(leader), Some(task)) => {
                let _ = write!(out, "[{leader}/{task}] ");
            }
            (None, Some(task)) => {
                let _ = write!(out, "[{task}] ");
            }
            _ => {}
        }
        out.push_str(&self.message);
        for (key, value) in &self.fields {
            // Quoted only where a reader could not tell where it ends.
            if value.is_empty()
                || value.contains(|c: char| c.is_whitespace() || c == '"' || c == '=')
            {
                let _ = write!(out, " {key}={value:?}");
            } else {
                let _ = write!(out, " {key}={value}");
            }
        }
        out
    }

    fn print(&self, json: bool) {
        if json {
            match serde_json::to_string(self) {
                Ok(text) => println!("{text}"),
                Err(e) => eprintln!("cannot print line {}: {e}", self.seq),
            }
        } else {
            println!("{}", self.text());
        }
    }
}

/// The record's `fields` object as pairs in the order the host sent them (a
/// `serde_json::Value` would sort them).
fn ordered_fields<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    struct Pairs;
    impl<'de> Visitor<'de> for Pairs {
        type Value = Vec<(String, String)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object of strings")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::new();
            while let Some((key, value)) = map.next_entry::<String, serde_json::Value>()? {
                let value = match value {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                pairs.push((key, value));
            }
            Ok(pairs)
        }
    }
    d.deserialize_map(Pairs)
}

fn fields_object<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(pairs.len()))?;
    for (key, value) in pairs {
        map.serialize_entry(key, value)?;
    }
    map.end()
}

#[derive(Deserialize)]
struct Listing {
    lines: Vec<Line>,
    next: u64,
}

/// The path and query of `args`' request (with `follow=1` when following).
fn path(args: &LogsArgs, follow: bool) -> String {
    // Url only encodes the query here; the host's own URL is put in front by the caller.
    let mut encoder = reqwest::Url::parse("http://localhost/").expect("a constant URL");
    encoder.query_pairs_mut().extend_pairs(query(args, follow));
    format!(
        "/admin/agents/{}/logs?{}",
        args.agent,
        encoder.query().unwrap_or("")
    )
}

/// The query of `args`' request.
fn query(args: &LogsArgs, follow: bool) -> Vec<(&'static str, String)> {
    let mut query = vec![("limit", args.limit.to_string())];
    if let Some(since) = args.since {
        query.push(("since", since.to_string()));
    }
    for (name, value) in [
        ("level", &args.level),
        ("task", &args.task),
        ("leader", &args.leader),
    ] {
        if let Some(value) = value {
            query.push((name, value.clone()));
        }
    }
    if follow {
        query.push(("follow", "1".into()));
    }
    query
}

pub async fn run(args: LogsArgs) -> anyhow::Result<()> {
    if args.follow {
        return follow(&args).await;
    }
    let answer = args
        .admin
        .request_text(Method::GET, &path(&args, false))
        .await?;
    let listing: Listing =
        serde_json::from_str(&answer).context("the host's answer is not a list of log lines")?;
    if listing.lines.is_empty() && !args.json {
        eprintln!(
            "no log lines of {} (next: --since {})",
            args.agent, listing.next
        );
    }
    for line in &listing.lines {
        line.print(args.json);
    }
    Ok(())
}

/// How long to wait before opening a dropped stream again: doubling from 0.5 s to 10 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << attempt.min(5)).min(10_000))
}

async fn follow(args: &LogsArgs) -> anyhow::Result<()> {
    let endpoint = format!(
        "{}{}",
        args.admin.url.trim_end_matches('/'),
        path(args, true)
    );
    let client = reqwest::Client::new();
    let mut last: Option<u64> = None;
    let mut attempt = 0u32;
    let mut connected_once = false;
    loop {
        let mut request = client.get(&endpoint);
        if let Some(token) = &args.admin.token {
            request = request.bearer_auth(token);
        }
        if let Some(seq) = last {
            request = request.header("Last-Event-ID", seq.to_string());
        }
        match request.send().await {
            Ok(response) if response.status().is_success() => {
                connected_once = true;
                attempt = 0;
                if let Err(e) = read_stream(response, args.json, &mut last).await {
                    eprintln!("the log stream broke ({e}); opening it again");
                }
            }
            Ok(response) => {
                // A refusal (no such partner, a wrong token, too many followers) does not
                // clear by asking again at once: said, and stopped.
                let status = response.status();
                let text = response.text().await.unwrap_or_default();
                let message = serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                    .unwrap_or(text);
                bail!("{endpoint} answered HTTP {status}: {message}");
            }
            Err(e) if !connected_once && e.is_connect() => bail!(
                "nothing answers at {}: is aiphost serving there? (give the host's URL with --url or AIPHOST_URL)",
                args.admin.url
            ),
            Err(e) => eprintln!("cannot reach {endpoint} ({e}); trying again"),
        }
        tokio::time::sleep(backoff(attempt)).await;
        attempt = attempt.saturating_add(1);
    }
}

/// Print the events of an SSE answer until it ends, keeping the id of the last line in `last`.
async fn read_stream(
    mut response: reqwest::Response,
    json: bool,
    last: &mut Option<u64>,
) -> anyhow::Result<()> {
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let raw: Vec<u8> = buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&raw);
            let mut event = "";
            let mut data = String::new();
            let mut id = None;
            for field in text.lines() {
                let (name, value) = field.split_once(':').unwrap_or((field, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match name {
                    "event" => {
                        event = if value == "log" {
                            "log"
                        } else if value == "lagged" {
                            "lagged"
                        } else {
                            ""
                        }
                    }
                    "data" => data.push_str(value),
                    "id" => id = value.trim().parse::<u64>().ok(),
                    _ => {}
                }
            }
            match event {
                "log" => {
                    if json {
                        println!("{data}");
                    } else {
                        match serde_json::from_str::<Line>(&data) {
                            Ok(line) => println!("{}", line.text()),
                            Err(e) => eprintln!("cannot read a log line ({e}): {data}"),
                        }
                    }
                    if id.is_some() {
                        *last = id;
                    }
                }
                "lagged" => {
                    let lagged: serde_json::Value = serde_json::from_str(&data).unwrap_or_default();
                    eprintln!(
                        "... {} lines missed: the host no longer holds them",
                        lagged["missed"]
                    );
                }
                _ => {}
            }
        }
        // A frame larger than any line the host sends: not a log stream.
        if buffer.len() > 1 << 20 {
            bail!("the stream sent a frame over 1 MiB");
        }
    }
    Ok(())
}
