//! `aiphost call`: a Leader-side client for any AIP partner, or (`--protocol a2a`) any A2A
//! agent over A2A's JSON-RPC binding.

use super::output::{Column, Format, Kind, OutputArgs, render_table};
use aiphost::model::{CommandKind, DataItem, JsonObject, Timestamp};
use aiphost::protocol::aip::Dialect;
use aiphost_client::a2a::{self, A2aClient, A2aClientError, Part, TaskQuery};
use aiphost_client::{Client, ClientConfig, ClientError, ClientTls, Until};
use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use std::fmt::Display;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct CallArgs {
    /// The partner's base URL (`http://HOST/agents/echo`) or its endpoint (`…/rpc`, or `…/a2a`
    /// with `--protocol a2a`).
    pub url: String,
    /// The protocol to speak: AIP, or A2A v1.0 (JSON-RPC binding at `BASE/a2a`).
    #[arg(long, value_enum, default_value_t = ProtocolArg::Aip, global = true)]
    pub protocol: ProtocolArg,
    /// The AIP dialect to speak (AIP only).
    #[arg(long, value_enum, default_value_t = DialectArg::V2)]
    pub dialect: DialectArg,
    /// The Leader's identity (AIC) sent as `senderId` (AIP only). Default: with --api-key or
    /// --cert, none (the host takes the Leader the key or certificate names); without, the CLI's
    /// own AIC, 1.2.156.3088.1.1.AIPHST.CLI.1.0000.
    #[arg(long)]
    pub leader: Option<String>,
    /// Session id to send (over A2A: the `contextId`; `list` lists that context's tasks).
    #[arg(long, global = true)]
    pub session: Option<String>,
    #[command(flatten)]
    pub credentials: CredentialArgs,
    #[command(subcommand)]
    pub command: CallCommand,
}

/// How the client proves which Leader it is. Unset, it sends no credentials; the defaults of
/// everything else a client needs are in [`ClientConfig`].
#[derive(Args, Default)]
#[command(next_help_heading = "Leader credentials")]
pub struct CredentialArgs {
    /// An API key the partner's tenant issued to this Leader, sent as `Authorization: Bearer
    /// KEY` (for partners whose Leaders use API keys).
    #[arg(long, env = "AIPHOST_API_KEY", hide_env_values = true, global = true)]
    pub api_key: Option<String>,
    /// PEM: a client certificate to present over `https://` (mutual TLS), for partners whose
    /// Leaders are known by certificate (its AIC as the URI SAN `acps://AIC`). Needs --key.
    #[arg(long, global = true, requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM: the private key of --cert.
    #[arg(long, global = true, requires = "cert")]
    pub key: Option<PathBuf>,
    /// PEM: the CA to trust for the host's certificate (a private CA), instead of the system's.
    #[arg(long, global = true)]
    pub ca: Option<PathBuf>,
}

/// The Leader the CLI says it is when it is given none and has no credential.
const DEFAULT_LEADER: &str = "1.2.156.3088.1.1.AIPHST.CLI.1.0000";

impl std::fmt::Debug for CredentialArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CredentialArgs")
            .field("api_key", &aiphost::redact::Redacted::of(&self.api_key))
            .field("cert", &self.cert)
            .field("key", &self.key)
            .field("ca", &self.ca)
            .finish()
    }
}

impl CredentialArgs {
    /// Whether these credentials name a Leader (an API key or a client certificate).
    fn authenticates(&self) -> bool {
        self.api_key.is_some() || self.cert.is_some()
    }

    fn config(&self) -> ClientConfig {
        ClientConfig {
            api_key: self.api_key.clone(),
            tls: ClientTls {
                cert: self.cert.clone(),
                key: self.key.clone(),
                ca: self.ca.clone(),
            },
            ..ClientConfig::default()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    /// ACPs AIP, in the dialect of `--dialect`.
    Aip,
    /// A2A v1.0 over its JSON-RPC binding: start and continue are `SendMessage`, stream is
    /// `SendStreamingMessage`, re-stream `SubscribeToTask`, get `GetTask`, list `ListTasks`,
    /// cancel `CancelTask`.
    A2a,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DialectArg {
    /// AIP v01.00 (`message` / `Task`).
    V1,
    /// AIP v02.01, as acps-sdk 2.1.0 speaks it (`task-command` / `TaskResult`).
    V2,
}

/// Content for start and continue.
#[derive(Args, Debug, Default)]
pub struct Content {
    /// A text DataItem (repeatable).
    #[arg(long = "text")]
    pub texts: Vec<String>,
    /// A structured `data` DataItem: a JSON object (repeatable; over A2A any JSON value).
    #[arg(long = "data")]
    pub data: Vec<String>,
    /// A file DataItem by URI (repeatable; over A2A a `url` part).
    #[arg(long = "file-uri")]
    pub file_uris: Vec<String>,
    /// `commandParams` as a JSON object, e.g. '{"awaitingInputTimeout": 60000}' (AIP only).
    #[arg(long)]
    pub params: Option<String>,
    /// The `SendMessageConfiguration` as a JSON object, e.g. '{"returnImmediately": true}'
    /// (A2A only).
    #[arg(long)]
    pub configuration: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum CallCommand {
    /// Start a task.
    Start {
        /// Task id (default: a fresh one; AIP only: an A2A agent names its tasks).
        #[arg(long)]
        task: Option<String>,
        #[command(flatten)]
        content: Content,
    },
    /// Give a waiting task more input.
    Continue {
        #[arg(long)]
        task: String,
        #[command(flatten)]
        content: Content,
    },
    /// Accept a task's products (AIP only: an A2A task completes with its result).
    Complete {
        #[arg(long)]
        task: String,
    },
    /// Cancel a task.
    Cancel {
        #[arg(long)]
        task: String,
    },
    /// Start a task with the streaming style and print its events as they arrive, one JSON
    /// line each (over A2A, each `StreamResponse`), until the task rests (awaits input or
    /// completion) or ends.
    Stream {
        /// Task id (default: a fresh one). Over A2A, where an agent names its tasks: a task to
        /// continue, streamed.
        #[arg(long)]
        task: Option<String>,
        /// Keep following while the task rests, until it ends (another client continues,
        /// completes or cancels it).
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        content: Content,
    },
    /// Reconnect to a task's event stream: replay the events after --last-event-seq (all when
    /// absent), then follow it live until it rests or ends. Over A2A (`SubscribeToTask`): the
    /// task as it is, then its events.
    ReStream {
        #[arg(long)]
        task: String,
        /// The last event seq already seen (AIP only).
        #[arg(long)]
        last_event_seq: Option<u64>,
        /// Keep following while the task rests, until it ends.
        #[arg(long)]
        follow: bool,
    },
    /// Read a task with its histories.
    Get {
        #[arg(long)]
        task: String,
        /// Only commands sent after this ISO 8601 instant (AIP only).
        #[arg(long)]
        since_command: Option<String>,
        /// Only statuses entered after this ISO 8601 instant (AIP only).
        #[arg(long)]
        since_state: Option<String>,
        /// At most this many of the newest history messages (A2A only).
        #[arg(long)]
        history_length: Option<u64>,
    },
    /// List tasks, most recently changed first, a page at a time (A2A only: `ListTasks`; the
    /// context is --session).
    List {
        /// Only tasks in this state: `working`, `input-required`, `completed`, … (or
        /// `TASK_STATE_…`).
        #[arg(long)]
        status: Option<String>,
        /// Only tasks whose status changed after this ISO 8601 instant.
        #[arg(long)]
        since: Option<String>,
        /// At most this many tasks.
        #[arg(long)]
        page_size: Option<u64>,
        /// The `nextPageToken` of the page before.
        #[arg(long)]
        page_token: Option<String>,
        /// At most this many history messages per task (none by default).
        #[arg(long)]
        history_length: Option<u64>,
        /// Include each task's artifacts.
        #[arg(long)]
        include_artifacts: bool,
        #[command(flatten)]
        output: OutputArgs,
    },
}

/// The columns of `list`'s table (a task per row).
const TASK_COLUMNS: &[Column] = &[
    Column::new("ID", "/id", Kind::Text),
    Column::new("STATE", "/status/state", Kind::Text),
    Column::new("CHANGED", "/status/timestamp", Kind::Time),
    Column::new("CONTEXT", "/contextId", Kind::Text),
];

/// `list`'s answer as a table, and where the next page starts.
fn task_table(page: &Value) -> String {
    let tasks = page["tasks"].as_array().cloned().unwrap_or_default();
    let mut text = if tasks.is_empty() {
        "no tasks\n".to_string()
    } else {
        render_table(&tasks, TASK_COLUMNS)
    };
    if let Some(token) = page["nextPageToken"].as_str().filter(|t| !t.is_empty()) {
        text.push_str(&format!("more: --page-token {token}\n"));
    }
    text
}

fn items(content: &Content) -> anyhow::Result<(Vec<DataItem>, JsonObject)> {
    let mut items: Vec<DataItem> = content.texts.iter().map(DataItem::text).collect();
    for (i, text) in content.data.iter().enumerate() {
        let value: Value =
            serde_json::from_str(text).with_context(|| format!("--data #{} is not JSON", i + 1))?;
        let Value::Object(data) = value else {
            bail!("--data #{} must be a JSON object", i + 1);
        };
        items.push(DataItem::Data {
            data,
            metadata: None,
        });
    }
    for uri in &content.file_uris {
        items.push(DataItem::File {
            name: None,
            mime_type: None,
            uri: Some(uri.clone()),
            bytes: None,
            metadata: None,
        });
    }
    let params = match &content.params {
        None => JsonObject::new(),
        Some(text) => match serde_json::from_str(text).context("--params is not JSON")? {
            Value::Object(p) => p,
            _ => bail!("--params must be a JSON object"),
        },
    };
    Ok((items, params))
}

pub async fn run(args: CallArgs) -> anyhow::Result<()> {
    let mut out = Out::default();
    let result = match args.protocol {
        ProtocolArg::Aip => run_aip(args, &mut out).await,
        ProtocolArg::A2a => run_a2a(args, &mut out).await,
    };
    // A failure to write what was answered is the one to report, whatever came after it.
    match out.failed.take() {
        Some(e) => Err(anyhow::Error::new(e).context("cannot write to standard output")),
        None => result,
    }
}

/// Standard output, one line at a time. A reader that has gone away (`aiphost call … | head
/// -1`) means "stop": nothing more is written and the call ends quietly, as a Unix filter
/// does, instead of panicking as `println!` would.
#[derive(Default)]
struct Out {
    /// Writing failed for another reason than a closed pipe.
    failed: Option<std::io::Error>,
    /// The reader has gone away, or writing failed: write nothing more.
    stopped: bool,
}

impl Out {
    /// Write `text` and a newline; break off when nothing more should be written.
    fn line(&mut self, text: impl Display) -> ControlFlow<()> {
        if self.stopped {
            return ControlFlow::Break(());
        }
        let mut stdout = std::io::stdout().lock();
        // Flushed each line: a stream's events are read as they come.
        match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                self.stopped = true;
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    self.failed = Some(e);
                }
                ControlFlow::Break(())
            }
        }
    }

    /// Write `value` as pretty JSON.
    fn pretty(&mut self, value: &Value) -> anyhow::Result<()> {
        let _ = self.line(serde_json::to_string_pretty(value)?);
        Ok(())
    }
}

/// Refuse a flag the other protocol has.
fn only(protocol: &str, flag: &str, given: bool) -> anyhow::Result<()> {
    if given {
        bail!("{flag} has no meaning here: it is {protocol} only");
    }
    Ok(())
}

async fn run_aip(args: CallArgs, out: &mut Out) -> anyhow::Result<()> {
    match &args.command {
        CallCommand::List { .. } => {
            bail!(
                "`list` has no AIP equivalent (AIP cannot list tasks); it is A2A's ListTasks: use --protocol a2a"
            )
        }
        CallCommand::Get { history_length, .. } => {
            only("A2A", "--history-length", history_length.is_some())?
        }
        CallCommand::Start { content, .. }
        | CallCommand::Continue { content, .. }
        | CallCommand::Stream { content, .. } => {
            only("A2A", "--configuration", content.configuration.is_some())?
        }
        _ => {}
    }
    let url = if args.url.trim_end_matches('/').ends_with("/rpc") {
        args.url.clone()
    } else {
        format!("{}/rpc", args.url.trim_end_matches('/'))
    };
    let dialect = match args.dialect {
        DialectArg::V1 => Dialect::V1,
        DialectArg::V2 => Dialect::V2,
    };
    let leader = match (&args.leader, args.credentials.authenticates()) {
        (Some(leader), _) => leader.clone(),
        (None, true) => String::new(),
        (None, false) => DEFAULT_LEADER.to_string(),
    };
    let client = Client::with_config(url, dialect, leader, args.credentials.config())?;
    let session = args.session.as_deref();
    let result = match &args.command {
        CallCommand::Stream {
            task,
            follow,
            content,
        } => {
            let (items, params) = items(content)?;
            let outcome = client
                .stream(
                    CommandKind::Start,
                    task.as_deref(),
                    session,
                    items,
                    params,
                    until(*follow),
                    None,
                    |event| out.line(event),
                )
                .await;
            return outcome.or_else(|e| rpc_error(e, out));
        }
        CallCommand::ReStream {
            task,
            last_event_seq,
            follow,
        } => {
            // A re-stream replays the task's earlier events, rests it has left among them:
            // only a rest from where the task stands now on ends the stream.
            let since = match until(*follow) {
                Until::Ends => None,
                Until::Rests => {
                    match client
                        .send(
                            CommandKind::Get,
                            Some(task),
                            session,
                            vec![],
                            JsonObject::new(),
                        )
                        .await
                    {
                        Ok(now) => serde_json::from_value::<Timestamp>(
                            now["status"]["stateChangedAt"].clone(),
                        )
                        .ok(),
                        Err(e) => return rpc_error(e, out),
                    }
                }
            };
            let mut params = JsonObject::new();
            params.insert("lastEventSeq".into(), json!(last_event_seq));
            let outcome = client
                .stream(
                    CommandKind::ReStream,
                    Some(task),
                    session,
                    vec![],
                    params,
                    until(*follow),
                    since,
                    |event| out.line(event),
                )
                .await;
            return outcome.or_else(|e| rpc_error(e, out));
        }
        CallCommand::Start { task, content } => {
            let (items, params) = items(content)?;
            client
                .send(CommandKind::Start, task.as_deref(), session, items, params)
                .await
        }
        CallCommand::Continue { task, content } => {
            let (items, params) = items(content)?;
            client
                .send(CommandKind::Continue, Some(task), session, items, params)
                .await
        }
        CallCommand::Complete { task } => {
            client
                .send(
                    CommandKind::Complete,
                    Some(task),
                    session,
                    vec![],
                    JsonObject::new(),
                )
                .await
        }
        CallCommand::Cancel { task } => {
            client
                .send(
                    CommandKind::Cancel,
                    Some(task),
                    session,
                    vec![],
                    JsonObject::new(),
                )
                .await
        }
        CallCommand::Get {
            task,
            since_command,
            since_state,
            history_length: _,
        } => {
            let mut params = JsonObject::new();
            let command_field = match dialect {
                Dialect::V1 => "lastMessageSentAt",
                Dialect::V2 => "lastCommandSentAt",
            };
            params.insert(command_field.into(), json!(since_command));
            params.insert("lastStateChangedAt".into(), json!(since_state));
            client
                .send(CommandKind::Get, Some(task), session, vec![], params)
                .await
        }
        CallCommand::List { .. } => bail!("`list` is A2A only"),
    };
    match result {
        Ok(task) => out.pretty(&task),
        Err(e) => rpc_error(e, out),
    }
}

/// `--follow`: how long a stream is followed.
fn until(follow: bool) -> Until {
    if follow { Until::Ends } else { Until::Rests }
}

/// Print a JSON-RPC error as JSON (for scripts) and fail with it.
fn rpc_error(e: ClientError, out: &mut Out) -> anyhow::Result<()> {
    match e {
        ClientError::Rpc {
            code,
            message,
            data,
        } => {
            out.pretty(&json!({"error": {"code": code, "message": message, "data": data}}))?;
            // The reason is what a person needs: AIP puts it in `data.reason`.
            match data.get("reason").and_then(Value::as_str) {
                Some(reason) => {
                    bail!("the partner answered with error {code} ({message}): {reason}")
                }
                None if !data.is_null() => {
                    bail!("the partner answered with error {code} ({message}): {data}")
                }
                None => bail!("the partner answered with error {code} ({message})"),
            }
        }
        other => Err(other.into()),
    }
}

/// The parts of an A2A message: its texts, data values and file URLs, in that order.
fn parts(content: &Content) -> anyhow::Result<Vec<Part>> {
    only("AIP", "--params", content.params.is_some())?;
    let mut parts: Vec<Part> = content.texts.iter().cloned().map(Part::Text).collect();
    for (i, text) in content.data.iter().enumerate() {
        let value: Value =
            serde_json::from_str(text).with_context(|| format!("--data #{} is not JSON", i + 1))?;
        parts.push(Part::Data(value));
    }
    parts.extend(content.file_uris.iter().cloned().map(Part::Url));
    if parts.is_empty() {
        bail!("an A2A message needs at least one part: give --text, --data or --file-uri");
    }
    Ok(parts)
}

/// The `SendMessageConfiguration` of `--configuration`.
fn configuration(content: &Content) -> anyhow::Result<Option<JsonObject>> {
    match &content.configuration {
        None => Ok(None),
        Some(text) => match serde_json::from_str(text).context("--configuration is not JSON")? {
            Value::Object(c) => Ok(Some(c)),
            _ => bail!("--configuration must be a JSON object"),
        },
    }
}

/// `aiphost call --protocol a2a`: each subcommand as the A2A operation that means the same.
async fn run_a2a(args: CallArgs, out: &mut Out) -> anyhow::Result<()> {
    let client = A2aClient::with_config(a2a::endpoint(&args.url), args.credentials.config())?;
    let context = args.session.as_deref();
    let result = match &args.command {
        CallCommand::Start { task, content } => {
            if task.is_some() {
                bail!(
                    "an A2A agent names its tasks: `start` takes no --task over A2A \
                     (to send to an existing task, use `continue --task ID`)"
                );
            }
            let message = a2a::user_message(&parts(content)?, None, context);
            client.send_message(message, configuration(content)?).await
        }
        CallCommand::Continue { task, content } => {
            let message = a2a::user_message(&parts(content)?, Some(task), context);
            client.send_message(message, configuration(content)?).await
        }
        CallCommand::Stream {
            task,
            follow,
            content,
        } => {
            let message = a2a::user_message(&parts(content)?, task.as_deref(), context);
            let last = match client
                .send_streaming_message(message, configuration(content)?, |e| out.line(e))
                .await
            {
                Ok(last) => last,
                Err(e) => return a2a_error(e, out),
            };
            // The agent ends a message's stream when the task needs input; to follow the task
            // past that, subscribe to it.
            let resting = last
                .as_ref()
                .filter(|e| a2a::rests(e, a2a::StreamKind::Message))
                .filter(|e| !a2a::ends_stream(e, a2a::StreamKind::Subscription))
                .and_then(|e| e["statusUpdate"]["taskId"].as_str());
            if let (true, Some(id), false) = (*follow, resting, out.stopped) {
                let outcome = client
                    .subscribe_to_task(id, Until::Ends, |e| out.line(e))
                    .await;
                return outcome.map(drop).or_else(|e| a2a_error(e, out));
            }
            return Ok(());
        }
        CallCommand::ReStream {
            task,
            last_event_seq,
            follow,
        } => {
            if last_event_seq.is_some() {
                bail!(
                    "--last-event-seq has no A2A equivalent: SubscribeToTask begins with the task \
                     as it is now, then its events"
                );
            }
            let outcome = client
                .subscribe_to_task(task, until(*follow), |e| out.line(e))
                .await;
            return outcome.map(drop).or_else(|e| a2a_error(e, out));
        }
        CallCommand::Get {
            task,
            since_command,
            since_state,
            history_length,
        } => {
            only("AIP", "--since-command", since_command.is_some())?;
            only("AIP", "--since-state", since_state.is_some())?;
            client.get_task(task, *history_length).await
        }
        CallCommand::List {
            status,
            since,
            page_size,
            page_token,
            history_length,
            include_artifacts,
            output,
        } => {
            let query = TaskQuery {
                context_id: args.session.clone(),
                status: status.clone(),
                status_timestamp_after: since.clone(),
                page_size: *page_size,
                page_token: page_token.clone(),
                history_length: *history_length,
                include_artifacts: *include_artifacts,
            };
            match (client.list_tasks(&query).await, output.format()) {
                (Ok(page), Format::Table) => {
                    let _ = out.line(task_table(&page).trim_end());
                    return Ok(());
                }
                (result, _) => result,
            }
        }
        CallCommand::Cancel { task } => client.cancel_task(task).await,
        CallCommand::Complete { .. } => bail!(
            "`complete` has no A2A equivalent: an A2A task completes as soon as its agent has \
             the result (there is no awaiting-completion); use `get` to read it"
        ),
    };
    match result {
        Ok(result) => out.pretty(&result),
        Err(e) => a2a_error(e, out),
    }
}

/// Print an A2A JSON-RPC error as JSON (for scripts) and fail with a one-line summary.
fn a2a_error(e: A2aClientError, out: &mut Out) -> anyhow::Result<()> {
    if let A2aClientError::Rpc {
        code,
        message,
        data,
    } = &e
    {
        out.pretty(&json!({"error": {"code": code, "message": message, "data": data}}))?;
        bail!("the agent answered with {e}")
    }
    Err(e.into())
}
