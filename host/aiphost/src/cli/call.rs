//! `aiphost call`: a Leader-side client for any AIP partner.

use aiphost::client::{Client, ClientError};
use aiphost::protocol::{CommandKind, DataItem, Dialect, JsonObject};
use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

#[derive(Args, Debug)]
pub struct CallArgs {
    /// The partner's base URL (`http://HOST/agents/echo`) or its rpc endpoint.
    pub url: String,
    /// The AIP dialect to speak.
    #[arg(long, value_enum, default_value_t = DialectArg::V2)]
    pub dialect: DialectArg,
    /// The Leader's identity (AIC) sent as `senderId`.
    #[arg(long, default_value = "1.2.156.3088.1.1.AIPHST.CLI.1.0000")]
    pub leader: String,
    /// Session id to send.
    #[arg(long, global = true)]
    pub session: Option<String>,
    #[command(subcommand)]
    pub command: CallCommand,
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
    /// A structured `data` DataItem: a JSON object (repeatable).
    #[arg(long = "data")]
    pub data: Vec<String>,
    /// A file DataItem by URI (repeatable).
    #[arg(long = "file-uri")]
    pub file_uris: Vec<String>,
    /// `commandParams` as a JSON object, e.g. '{"awaitingInputTimeout": 60000}'.
    #[arg(long)]
    pub params: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum CallCommand {
    /// Start a task.
    Start {
        /// Task id (default: a fresh one).
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
    /// Accept a task's products.
    Complete {
        #[arg(long)]
        task: String,
    },
    /// Cancel a task.
    Cancel {
        #[arg(long)]
        task: String,
    },
    /// Start a task with the streaming style and print its events as they arrive.
    Stream {
        /// Task id (default: a fresh one).
        #[arg(long)]
        task: Option<String>,
        #[command(flatten)]
        content: Content,
    },
    /// Reconnect to a task's event stream: replay the events after --last-event-seq (all when
    /// absent), then follow it live until it ends.
    ReStream {
        #[arg(long)]
        task: String,
        /// The last event seq already seen.
        #[arg(long)]
        last_event_seq: Option<u64>,
    },
    /// Read a task with its histories.
    Get {
        #[arg(long)]
        task: String,
        /// Only commands sent after this ISO 8601 instant.
        #[arg(long)]
        since_command: Option<String>,
        /// Only statuses entered after this ISO 8601 instant.
        #[arg(long)]
        since_state: Option<String>,
    },
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
    let url = if args.url.trim_end_matches('/').ends_with("/rpc") {
        args.url.clone()
    } else {
        format!("{}/rpc", args.url.trim_end_matches('/'))
    };
    let dialect = match args.dialect {
        DialectArg::V1 => Dialect::V1,
        DialectArg::V2 => Dialect::V2,
    };
    let client = Client::new(url, dialect, args.leader.clone());
    let session = args.session.as_deref();
    let print = |event: &Value| println!("{event}");
    let result = match &args.command {
        CallCommand::Stream { task, content } => {
            let (items, params) = items(content)?;
            let outcome = client
                .stream(
                    CommandKind::Start,
                    task.as_deref(),
                    session,
                    items,
                    params,
                    print,
                )
                .await;
            return streamed(outcome);
        }
        CallCommand::ReStream {
            task,
            last_event_seq,
        } => {
            let mut params = JsonObject::new();
            params.insert("lastEventSeq".into(), json!(last_event_seq));
            let outcome = client
                .stream(
                    CommandKind::ReStream,
                    Some(task),
                    session,
                    vec![],
                    params,
                    print,
                )
                .await;
            return streamed(outcome);
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
    };
    match result {
        Ok(task) => {
            println!("{}", serde_json::to_string_pretty(&task)?);
            Ok(())
        }
        Err(e) => rpc_error(e),
    }
}

/// The end of a stream: the events were printed as they came.
fn streamed(outcome: Result<(), ClientError>) -> anyhow::Result<()> {
    outcome.or_else(rpc_error)
}

/// Print a JSON-RPC error as JSON (for scripts) and fail with it.
fn rpc_error(e: ClientError) -> anyhow::Result<()> {
    match e {
        ClientError::Rpc {
            code,
            message,
            data,
        } => {
            println!(
                "{}",
                serde_json::to_string_pretty(
                    &json!({"error": {"code": code, "message": message, "data": data}})
                )?
            );
            bail!("the partner answered with error {code} ({message})")
        }
        other => Err(other.into()),
    }
}
