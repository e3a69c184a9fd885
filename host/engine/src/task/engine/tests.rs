//! The engine on its own: a real sled store in a temporary directory, partners played by a fake
//! [`PartnerRunner`] (no wasmtime), a [`FanOut`] that records what it is told. These drive rows of
//! the state machine through the engine, its timers, its serialisation of one task's commands,
//! its admission of commands, and what it hands the fan-out once a change is durable.

use super::{EngineError, Reply, Subscribe, TaskEngine, TaskQuery};
use crate::agent::manifest::Manifest;
use crate::agent::{Agent, Registry};
use crate::quota::{QuotaError, Quotas, TenantState};
use crate::task::record::TaskDefaults;
use crate::task::{FanOut, PartnerRunner};
use aiphost_model::cause::Cause;
use aiphost_model::{
    CommandKind, CommandPolicy, DataItem, HistoryFilter, Inbound, LeaderCommand, Product,
    ProductChunk, TaskState, Timestamp, WireForm,
};
use aiphost_runtime::{Hold, Invocation, InvocationEnd, KvOwner, PartnerEvent, Reporter};
use aiphost_store::{Store, TaskKey};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Partners played in Rust, by agent id:
/// - `echo`: accepts, works, answers with the command's items as product `echo`, awaits completion;
/// - `asker`: accepts, works, asks a question (awaiting input); a continue is echoed like `echo`;
/// - `failer`: accepts, works, then fails with "boom";
/// - `slow`: like `echo`, 100 ms into each invocation;
/// - `script`: does what the first text item says, step by step (see [`script`]).
#[derive(Default)]
struct FakePartners {
    /// (agent, event, task) of every invocation, in the order they began.
    calls: Mutex<Vec<(String, String, String)>>,
    running: AtomicUsize,
    most_at_once: AtomicUsize,
}

impl FakePartners {
    fn calls(&self) -> Vec<(String, String, String)> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

async fn echo(reporter: &dyn Reporter, items: Vec<DataItem>) -> Result<(), String> {
    if reporter.current_state().await == Some(TaskState::Accepted) {
        reporter
            .set_status(TaskState::Working, Vec::new())
            .await
            .map_err(|e| e.to_string())?;
    }
    let chunk = ProductChunk {
        product: Product {
            id: "echo".into(),
            name: None,
            description: None,
            data_items: items,
        },
        append: false,
        last_chunk: true,
    };
    reporter
        .emit_chunk(chunk)
        .await
        .map_err(|e| e.to_string())?;
    reporter
        .set_status(TaskState::AwaitingCompletion, Vec::new())
        .await
        .map_err(|e| e.to_string())
}

/// Play a script, one word a step: a state name reports that status; `hold` waits (until the
/// invocation is aborted, at most 10 s); `chunk` emits one product chunk that appends; `boom`
/// fails the invocation. Reports refused by the engine fail it too.
async fn script(reporter: &dyn Reporter, items: &[DataItem]) -> Result<(), String> {
    let Some(DataItem::Text { text, .. }) = items.first() else {
        return Ok(());
    };
    for step in text.split_whitespace() {
        match step {
            "hold" => tokio::time::sleep(Duration::from_secs(10)).await,
            "boom" => return Err("boom".into()),
            "chunk" => {
                let chunk = ProductChunk {
                    product: Product {
                        id: "log".into(),
                        name: None,
                        description: None,
                        data_items: vec![DataItem::text(step)],
                    },
                    append: true,
                    last_chunk: false,
                };
                reporter
                    .emit_chunk(chunk)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            state => {
                let state = TaskState::parse(state).ok_or_else(|| format!("no step {state}"))?;
                reporter
                    .set_status(state, Vec::new())
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

impl PartnerRunner for FakePartners {
    fn run<'a>(
        &'a self,
        agent: &'a Agent,
        reporter: Arc<dyn Reporter>,
        _store: Store,
        _owner: KvOwner<'a>,
        invocation: Invocation,
        _holds: Vec<Hold>,
    ) -> BoxFuture<'a, InvocationEnd> {
        Box::pin(async move {
            let event = match invocation.event {
                PartnerEvent::Start => "start",
                PartnerEvent::Continue => "continue",
                PartnerEvent::Complete(_) => "complete",
                PartnerEvent::Cancel(_) => "cancel",
            };
            if let Ok(mut calls) = self.calls.lock() {
                calls.push((agent.id().into(), event.into(), invocation.task_id.clone()));
            }
            let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_at_once.fetch_max(now, Ordering::SeqCst);
            let reporter = reporter.as_ref();
            let items = invocation.data_items.clone();
            let outcome: Result<(), String> = async {
                match (agent.id(), invocation.event) {
                    (_, PartnerEvent::Complete(_) | PartnerEvent::Cancel(_)) => Ok(()),
                    ("script", _) => script(reporter, &items).await,
                    (id, PartnerEvent::Start) => {
                        reporter
                            .set_status(TaskState::Accepted, Vec::new())
                            .await
                            .map_err(|e| e.to_string())?;
                        if id == "slow" {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        match id {
                            "asker" => {
                                reporter
                                    .set_status(TaskState::Working, Vec::new())
                                    .await
                                    .map_err(|e| e.to_string())?;
                                let question = DataItem::Text {
                                    text: "where to?".into(),
                                    metadata: None,
                                };
                                reporter
                                    .set_status(TaskState::AwaitingInput, vec![question])
                                    .await
                                    .map_err(|e| e.to_string())
                            }
                            "failer" => {
                                reporter
                                    .set_status(TaskState::Working, Vec::new())
                                    .await
                                    .map_err(|e| e.to_string())?;
                                Err("boom".to_string())
                            }
                            _ => echo(reporter, items).await,
                        }
                    }
                    (id, PartnerEvent::Continue) => {
                        if id == "slow" {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        echo(reporter, items).await
                    }
                }
            }
            .await;
            self.running.fetch_sub(1, Ordering::SeqCst);
            match outcome {
                Ok(()) => InvocationEnd::Returned,
                Err(message) => InvocationEnd::PartnerError(message),
            }
        })
    }
}

/// A fan-out that records what it is told; memberships named `live-*` are live.
#[derive(Default)]
struct Recorded {
    notifications: Mutex<Vec<(TaskKey, u64)>>,
    group_results: Mutex<Vec<String>>,
}

impl FanOut for Recorded {
    fn notifications_due(&self, task: TaskKey, durable_seq: u64) {
        if let Ok(mut n) = self.notifications.lock() {
            n.push((task, durable_seq));
        }
    }

    fn group_is_live(&self, membership: &str) -> bool {
        membership.starts_with("live-")
    }

    fn group_results_due(&self, membership: &str) {
        if let Ok(mut g) = self.group_results.lock() {
            g.push(membership.to_string());
        }
    }
}

fn manifest(id: &str, input_modes: &str) -> Manifest {
    let text = format!(
        r#"[agent]
id = "{id}"
aic = "1.2.156.3088.1.1.AIPHST.{upper}.1.0000"
name = "{id}"
description = "A fake partner of the engine's tests."
version = "0.1.0"

[[skills]]
id = "{id}"
name = "{id}"
description = "Plays a part in the engine's tests."
input-modes = [{input_modes}]
output-modes = ["text/plain"]
"#,
        upper = id.to_uppercase()
    );
    Manifest::parse(&text, "test").expect("a test manifest")
}

struct Engine {
    engine: TaskEngine,
    agents: Arc<Registry>,
    partners: Arc<FakePartners>,
    fan_out: Arc<Recorded>,
    _dir: tempfile::TempDir,
}

impl Engine {
    fn start(defaults: TaskDefaults) -> Engine {
        Engine::start_in(tempfile::tempdir().expect("temp dir"), defaults)
    }

    /// An engine over the store in `dir` (a restart when an engine used it before).
    fn start_in(dir: tempfile::TempDir, defaults: TaskDefaults) -> Engine {
        let store = Store::open(&dir.path().join("store")).expect("store");
        let agents = Arc::new(Registry::default());
        for (id, modes) in [
            ("echo", r#""text/plain""#),
            ("asker", r#""text/plain""#),
            ("failer", r#""text/plain""#),
            ("slow", r#""text/plain""#),
            ("numbers", r#""application/json""#),
            ("script", r#""text/plain""#),
            ("rated", r#""text/plain""#),
        ] {
            agents
                .insert(Agent {
                    manifest: manifest(id, modes),
                    code: crate::agent::code::Code::missing(),
                    loaded_at: Timestamp::now(),
                    bundle: PathBuf::from("test"),
                    version: 0,
                    // `rated` belongs to a tenant that may send one request, then one a second.
                    list_tasks: false,
                    rate: None,
                    skill_inputs: Default::default(),
                    tenant: (id == "rated").then(|| {
                        let quotas = Quotas {
                            requests_per_second: 1,
                            request_burst: 1,
                            ..Quotas::default()
                        };
                        Arc::new(TenantState::new("slow-tenant", quotas))
                    }),
                })
                .expect("insert a fake partner");
        }
        let partners = Arc::new(FakePartners::default());
        let fan_out = Arc::new(Recorded::default());
        let engine = TaskEngine::start(
            store,
            partners.clone(),
            agents.clone(),
            defaults,
            fan_out.clone(),
            Arc::new(crate::task::Unobserved),
        )
        .expect("engine");
        Engine {
            engine,
            agents,
            partners,
            fan_out,
            _dir: dir,
        }
    }

    fn agent(&self, id: &str) -> Arc<Agent> {
        self.agents.get(id).expect("a fake partner")
    }

    async fn send(&self, agent: &str, inbound: Inbound) -> Result<Reply, EngineError> {
        self.engine.command(&self.agent(agent), inbound, None).await
    }
}

/// A v2 command as the Leader `leader` sends it, as AIP's door hands it to the engine.
fn command(command: &str, task: &str, items: Value, params: Value) -> Inbound {
    let Value::Object(params) = params else {
        panic!("commandParams must be an object");
    };
    Inbound {
        form: Some(WireForm::new("v2")),
        command: LeaderCommand {
            id: format!("cmd-{}", uuid::Uuid::new_v4()),
            sent_at: Timestamp::now(),
            sender_id: "1.2.156.3088.1.1.TEST.LEADER.1.0000".into(),
            command: CommandKind::parse(command).expect("a known command"),
            params,
            data_items: serde_json::from_value(items).expect("well-formed DataItems"),
            task_id: Some(task.into()),
            session_id: None,
            group_id: None,
            mentions: None,
        },
        owner: None,
        policy: CommandPolicy::default(),
        history: Ok(HistoryFilter::default()),
    }
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

fn state(reply: &Reply) -> TaskState {
    reply.task.status.state
}

fn refusal(result: Result<Reply, EngineError>) -> EngineError {
    match result {
        Err(e) => e,
        Ok(r) => panic!("expected a refusal, got {:?}", r.task.status),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_rests_with_the_product_and_complete_ends_the_task() {
    let e = Engine::start(TaskDefaults::default());
    let started = e
        .send("echo", command("start", "t1", text("hi"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&started), TaskState::AwaitingCompletion);
    assert_eq!(
        started.task.products[0].data_items,
        vec![DataItem::Text {
            text: "hi".into(),
            metadata: None
        }]
    );
    let statuses: Vec<TaskState> = started
        .task
        .status_history
        .iter()
        .map(|s| s.state)
        .collect();
    assert_eq!(
        statuses,
        [
            TaskState::Accepted,
            TaskState::Working,
            TaskState::AwaitingCompletion
        ]
    );
    let continued = e
        .send("echo", command("continue", "t1", text("again"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&continued), TaskState::AwaitingCompletion);
    assert_eq!(
        continued.task.products.len(),
        1,
        "a continue replaces the product"
    );
    let done = e
        .send("echo", command("complete", "t1", json!([]), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&done), TaskState::Completed);
    // An ended task ignores a start with its id: it stays as it ended.
    let again = e
        .send("echo", command("start", "t1", text("hi"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&again), TaskState::Completed);
    let events: Vec<String> = e
        .partners
        .calls()
        .into_iter()
        .map(|(_, ev, _)| ev)
        .collect();
    assert_eq!(events, ["start", "continue", "complete"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partner_that_fails_fails_its_task_with_the_reason() {
    let e = Engine::start(TaskDefaults::default());
    let failed = e
        .send("failer", command("start", "t2", text("x"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&failed), TaskState::Failed);
    let reason = serde_json::to_string(&failed.task.status.data_items).unwrap();
    assert!(reason.contains("boom"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_ends_a_task_awaiting_input_and_the_partner_hears_of_it() {
    let e = Engine::start(TaskDefaults::default());
    let asked = e
        .send("asker", command("start", "t3", text("trip"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&asked), TaskState::AwaitingInput);
    let canceled = e
        .send("asker", command("cancel", "t3", json!([]), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&canceled), TaskState::Canceled);
    // The cancel hook runs after the reply; give it a moment.
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while !e
        .partners
        .calls()
        .iter()
        .any(|(_, ev, t)| ev == "cancel" && t == "t3")
    {
        assert!(
            std::time::Instant::now() < until,
            "{:?}",
            e.partners.calls()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_awaiting_input_timer_cancels_the_task() {
    let defaults = TaskDefaults {
        awaiting_input_timeout_ms: 200,
        ..TaskDefaults::default()
    };
    let e = Engine::start(defaults);
    let asked = e
        .send("asker", command("start", "t4", text("trip"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&asked), TaskState::AwaitingInput);
    until_state(&e, "asker", "t4", TaskState::Canceled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tasks_commands_run_one_at_a_time_and_all_are_kept() {
    let e = Engine::start(TaskDefaults::default());
    e.send("slow", command("start", "t5", text("0"), json!({})))
        .await
        .unwrap();
    let sends = (1..=3).map(|i| {
        e.send(
            "slow",
            command("continue", "t5", text(&i.to_string()), json!({})),
        )
    });
    // A continue that finds the task working (another continue's invocation runs) is ignored
    // by the state machine, and answered with the task as it is; none runs beside another.
    let states: Vec<TaskState> = futures::future::join_all(sends)
        .await
        .into_iter()
        .map(|reply| state(&reply.unwrap()))
        .collect();
    assert!(
        states.contains(&TaskState::AwaitingCompletion),
        "{states:?}"
    );
    assert!(
        states
            .iter()
            .all(|s| matches!(s, TaskState::AwaitingCompletion | TaskState::Working)),
        "{states:?}"
    );
    assert_eq!(e.partners.most_at_once.load(Ordering::SeqCst), 1);
    let task = e
        .send("slow", command("get", "t5", json!([]), json!({})))
        .await
        .unwrap();
    let continues = task
        .task
        .commands
        .iter()
        .filter(|c| c.command.to_string() == "continue")
        .count();
    assert_eq!(continues, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_with_content_no_skill_accepts_are_refused_and_leave_nothing() {
    let e = Engine::start(TaskDefaults::default());
    let refused = e
        .send("numbers", command("start", "t6", text("1 2 3"), json!({})))
        .await;
    assert!(matches!(
        refusal(refused),
        EngineError::ContentTypeNotAccepted { .. }
    ));
    let get = e
        .send("numbers", command("get", "t6", json!([]), json!({})))
        .await;
    assert!(
        matches!(refusal(get), EngineError::TaskNotFound { .. }),
        "no task was stored"
    );
    assert!(e.partners.calls().is_empty());
    // The same rule holds for a command from a group.
    let group = e
        .engine
        .group_command(
            &e.agent("numbers"),
            command("start", "t6", text("1"), json!({})),
            "live-m".into(),
        )
        .await;
    assert!(matches!(
        refusal(group),
        EngineError::ContentTypeNotAccepted { .. }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_results_reach_the_fan_out_and_a_left_group_hears_nothing() {
    let e = Engine::start(TaskDefaults::default());
    let reply = e
        .engine
        .group_command(
            &e.agent("echo"),
            command("start", "g1", text("hi"), json!({})),
            "live-m1".into(),
        )
        .await
        .unwrap();
    assert_eq!(state(&reply), TaskState::AwaitingCompletion);
    let until = std::time::Instant::now() + Duration::from_secs(5);
    while e.fan_out.group_results.lock().map(|g| g.len()).unwrap_or(0) < 1 {
        assert!(
            std::time::Instant::now() < until,
            "no group result announced"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        e.fan_out
            .group_results
            .lock()
            .unwrap()
            .iter()
            .all(|m| m == "live-m1")
    );
    // A left group (not live) is not told.
    e.engine
        .group_command(
            &e.agent("echo"),
            command("start", "g2", text("hi"), json!({})),
            "left-m2".into(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let told = e.fan_out.group_results.lock().unwrap().clone();
    assert!(told.iter().all(|m| m == "live-m1"), "{told:?}");
    assert!(e.fan_out.notifications.lock().unwrap().is_empty());
}

/// The task's statuses, oldest first.
fn path(reply: &Reply) -> Vec<TaskState> {
    reply.task.status_history.iter().map(|s| s.state).collect()
}

/// Wait (at most 5 s) until a `get` of `task` shows it in `want`.
async fn until_state(e: &Engine, agent: &str, task: &str, want: TaskState) -> Reply {
    let until = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = e
            .send(agent, command("get", task, json!([]), json!({})))
            .await
            .unwrap();
        if state(&now) == want {
            return now;
        }
        assert!(
            std::time::Instant::now() < until,
            "{task} is still {:?}, not {want:?}",
            state(&now)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A start that answers once the task rests, or after 300 ms (so a held task answers).
fn start(task: &str, script: &str) -> Inbound {
    command("start", task, text(script), json!({"responseTimeout": 300}))
}

/// Every row of the spec's transition table, each driven through the engine by a Leader command,
/// a partner's report or a timer, and seen in the task's status history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_row_of_the_state_machine_through_the_engine() {
    use TaskState::*;
    let defaults = TaskDefaults {
        awaiting_input_timeout_ms: 60_000,
        awaiting_completion_timeout_ms: 60_000,
        ..TaskDefaults::default()
    };
    let e = Engine::start(defaults);
    let send = |task: &'static str, cmd: &'static str, script: &'static str| {
        e.send(
            "script",
            command(cmd, task, text(script), json!({"responseTimeout": 300})),
        )
    };
    // Partner reports: 1 (accepted), 2 (rejected), 3 (working), 5, 6, 7.
    let r2 = e.send("script", start("r2", "rejected")).await.unwrap();
    assert_eq!(path(&r2), [Rejected], "row 2");
    let r5 = e
        .send(
            "script",
            start("r5", "accepted working awaiting-completion"),
        )
        .await
        .unwrap();
    assert_eq!(
        path(&r5),
        [Accepted, Working, AwaitingCompletion],
        "rows 1, 3, 5"
    );
    let r6 = e
        .send("script", start("r6", "accepted working awaiting-input"))
        .await
        .unwrap();
    assert_eq!(path(&r6), [Accepted, Working, AwaitingInput], "row 6");
    let r7 = e
        .send("script", start("r7", "accepted working boom"))
        .await
        .unwrap();
    assert_eq!(state(&r7), Failed, "row 7");
    // Leader cancels: 4 (accepted), 8 (working), 10 (awaiting input), 14 (awaiting completion).
    let r4 = e
        .send("script", start("r4", "accepted hold"))
        .await
        .unwrap();
    assert_eq!(state(&r4), Accepted);
    assert_eq!(
        path(&send("r4", "cancel", "").await.unwrap()),
        [Accepted, Canceled],
        "row 4"
    );
    let r8 = e
        .send("script", start("r8", "accepted working hold"))
        .await
        .unwrap();
    assert_eq!(state(&r8), Working);
    assert_eq!(
        state(&send("r8", "cancel", "").await.unwrap()),
        Canceled,
        "row 8"
    );
    assert_eq!(
        state(&send("r6", "cancel", "").await.unwrap()),
        Canceled,
        "row 10"
    );
    assert_eq!(
        state(&send("r5", "cancel", "").await.unwrap()),
        Canceled,
        "row 14"
    );
    // Leader continues and completes: 9, 13, 12.
    e.send("script", start("r9", "accepted working awaiting-input"))
        .await
        .unwrap();
    let r9 = send("r9", "continue", "awaiting-completion").await.unwrap();
    assert_eq!(
        path(&r9),
        [
            Accepted,
            Working,
            AwaitingInput,
            Working,
            AwaitingCompletion
        ],
        "rows 9, 5"
    );
    let r13 = send("r9", "continue", "awaiting-input").await.unwrap();
    assert_eq!(
        &path(&r13)[4..],
        [AwaitingCompletion, Working, AwaitingInput],
        "row 13"
    );
    send("r9", "continue", "awaiting-completion").await.unwrap();
    let r12 = send("r9", "complete", "").await.unwrap();
    assert_eq!(state(&r12), Completed, "row 12");
    // Terminal states ignore every command (16-19): each task stays as it ended, and a command
    // that does not apply elsewhere (complete on a working task) changes nothing either.
    for (task, ended) in [
        ("r9", Completed),
        ("r8", Canceled),
        ("r7", Failed),
        ("r2", Rejected),
    ] {
        for cmd in ["start", "continue", "complete", "cancel"] {
            let reply = send(task, cmd, "accepted working awaiting-input")
                .await
                .unwrap();
            assert_eq!(state(&reply), ended, "{cmd} on {task}");
        }
    }
    assert_eq!(
        e.partners
            .calls()
            .iter()
            .filter(|(_, ev, t)| t == "r9" && ev == "continue")
            .count(),
        3,
        "commands ignored in a terminal state reach no partner"
    );
}

/// Rows 11 and 15: the awaiting timers, input to canceled and completion to completed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awaiting_timers_cancel_or_complete() {
    let defaults = TaskDefaults {
        awaiting_input_timeout_ms: 150,
        awaiting_completion_timeout_ms: 150,
        ..TaskDefaults::default()
    };
    let e = Engine::start(defaults);
    e.send("script", start("t11", "accepted working awaiting-input"))
        .await
        .unwrap();
    e.send(
        "script",
        start("t15", "accepted working awaiting-completion"),
    )
    .await
    .unwrap();
    let r11 = until_state(&e, "script", "t11", TaskState::Canceled).await;
    let r15 = until_state(&e, "script", "t15", TaskState::Completed).await;
    assert_eq!(path(&r11).last(), Some(&TaskState::Canceled), "row 11");
    assert_eq!(path(&r15).last(), Some(&TaskState::Completed), "row 15");
    // Each status says which timer ran out, typed for doors beside the words for people.
    for (reply, cause) in [
        (&r11, Cause::AwaitingInputTimeout),
        (&r15, Cause::AwaitingCompletionTimeout),
    ] {
        let items = &reply.task.status.data_items;
        assert_eq!(Cause::of(items), Some(cause), "{items:?}");
        let words = serde_json::to_string(items).unwrap_or_default();
        assert!(words.contains("ms expired"), "{words}");
    }
    // A command in time moves the timer: a continue re-arms it for the new rest.
    let calls = e.partners.calls();
    assert!(
        calls.iter().any(|(_, ev, t)| ev == "cancel" && t == "t11"),
        "{calls:?}"
    );
    assert!(
        calls
            .iter()
            .any(|(_, ev, t)| ev == "complete" && t == "t15"),
        "{calls:?}"
    );
}

/// A move no row allows is refused, and the partner's invocation failing over it ends the task
/// along rows of the table: a started task fails (through working), a new one is rejected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_no_row_allows_is_refused_and_fails_the_task() {
    let e = Engine::start(TaskDefaults::default());
    for (task, script, ended) in [
        ("skip", "accepted awaiting-completion", TaskState::Failed),
        ("end", "accepted working completed", TaskState::Failed),
        ("new", "working", TaskState::Rejected),
    ] {
        let reply = e.send("script", start(task, script)).await.unwrap();
        assert_eq!(state(&reply), ended, "{task}: {:?}", path(&reply));
        assert!(
            path(&reply).iter().all(|s| matches!(
                s,
                TaskState::Accepted | TaskState::Working | TaskState::Failed | TaskState::Rejected
            )),
            "{task}: {:?}",
            path(&reply)
        );
    }
}

/// What an invocation reports while nobody can see it may be kept back, but every event is in
/// the store, in order and without gaps, once the task rests; the product holds every chunk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_kept_back_are_all_written_in_order_by_the_next_rest() {
    let e = Engine::start(TaskDefaults::default());
    let reply = e
        .send(
            "script",
            start(
                "h1",
                "accepted working chunk chunk chunk chunk awaiting-completion",
            ),
        )
        .await
        .unwrap();
    assert_eq!(state(&reply), TaskState::AwaitingCompletion);
    assert_eq!(reply.task.products[0].data_items.len(), 4);
    let key = TaskKey::new("script", "h1");
    let events = e.engine.inner.store.events_after(&key, 0, 100).unwrap();
    let seqs: Vec<u64> = events.iter().map(|(seq, _)| *seq).collect();
    assert_eq!(
        seqs,
        (1..=reply.seq).collect::<Vec<_>>(),
        "every event, in order"
    );
    // created (accepted), working, four chunks, awaiting-completion.
    assert_eq!(reply.seq, 7);
}

/// An engine over a store another engine left: tasks, their histories and their awaiting timers
/// are all there (a timer armed before the restart fires after it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_engine_finds_its_tasks_and_their_timers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path_of = dir.path().to_path_buf();
    let defaults = TaskDefaults {
        awaiting_input_timeout_ms: 600,
        ..TaskDefaults::default()
    };
    let first = Engine::start_in(dir, defaults.clone());
    first
        .send(
            "script",
            start("kept", "accepted working awaiting-completion"),
        )
        .await
        .unwrap();
    first
        .send("script", start("timed", "accepted working awaiting-input"))
        .await
        .unwrap();
    let Engine {
        engine, _dir: dir, ..
    } = first;
    drop(engine);
    // sled lets one process hold a store at a time: wait until the first engine lets go.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while Store::open(&path_of.join("store")).is_err() {
        assert!(
            std::time::Instant::now() < until,
            "the first engine kept its store"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let second = Engine::start_in(dir, defaults);
    let kept = second
        .send("script", command("get", "kept", json!([]), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&kept), TaskState::AwaitingCompletion);
    assert_eq!(kept.task.commands.len(), 2, "the start and this get");
    let timed = until_state(&second, "script", "timed", TaskState::Canceled).await;
    assert_eq!(path(&timed).last(), Some(&TaskState::Canceled));
    assert!(
        second
            .partners
            .calls()
            .iter()
            .any(|(_, ev, t)| ev == "cancel" && t == "timed")
    );
}

/// The tenant's rate quota counts every command, whatever door it came through: a group's
/// command is refused like an rpc one, and nothing of a refused command is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tenants_rate_quota_applies_to_commands_from_every_door() {
    let e = Engine::start(TaskDefaults::default());
    let first = e
        .send("rated", command("start", "q1", text("hi"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&first), TaskState::AwaitingCompletion);
    let from_a_group = e
        .engine
        .group_command(
            &e.agent("rated"),
            command("start", "q2", text("hi"), json!({})),
            "live-m".into(),
        )
        .await;
    assert!(
        matches!(
            from_a_group,
            Err(EngineError::Quota(QuotaError::RequestRate { limit: 1, .. }))
        ),
        "{:?}",
        from_a_group.map(|r| r.task.status)
    );
    let streamed = e
        .engine
        .stream(
            &e.agent("rated"),
            command("start", "q3", text("hi"), json!({})),
            None,
        )
        .await;
    assert!(matches!(streamed, Err(EngineError::Quota(_))));
    let calls: Vec<String> = e.partners.calls().into_iter().map(|(_, _, t)| t).collect();
    assert_eq!(calls, ["q1"], "refused commands reach no partner");
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let later = e
        .send("rated", command("get", "q2", json!([]), json!({})))
        .await;
    assert!(
        matches!(refusal(later), EngineError::TaskNotFound { .. }),
        "the refused start stored no task"
    );
}

/// `command` with a door's policy.
fn with_policy(mut inbound: Inbound, policy: CommandPolicy) -> Inbound {
    inbound.policy = policy;
    inbound
}

const A2A_LIKE: CommandPolicy = CommandPolicy {
    complete_on_result: true,
    strict: true,
    answer_at_once: false,
};

/// A task started with `complete_on_result` is completed in the change that brings its result:
/// the answer shows it completed with the products, its history passes through
/// awaiting-completion (row 12), and the partner hears the completion once its invocation ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_completes_on_result_is_completed_with_it() {
    let e = Engine::start(TaskDefaults::default());
    let reply = e
        .send(
            "echo",
            with_policy(command("start", "t-auto", text("hi"), json!({})), A2A_LIKE),
        )
        .await
        .expect("started");
    assert_eq!(reply.task.status.state, TaskState::Completed);
    assert!(reply.task.completes_on_result);
    assert_eq!(
        reply.task.products[0].data_items,
        vec![DataItem::text("hi")]
    );
    let states: Vec<TaskState> = reply.task.status_history.iter().map(|s| s.state).collect();
    assert_eq!(
        states,
        [
            TaskState::Accepted,
            TaskState::Working,
            TaskState::AwaitingCompletion,
            TaskState::Completed
        ]
    );
    for _ in 0..100 {
        if e.partners.calls().iter().any(|c| c.1 == "complete") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let events: Vec<String> = e.partners.calls().into_iter().map(|c| c.1).collect();
    assert_eq!(events, ["start", "complete"]);
    // Answered at once: the slow partner's task is still on its way; a later command of the
    // same task waits for it to rest as usual (the task's response timeout is untouched).
    let quick = e
        .send(
            "slow",
            with_policy(
                command("start", "t-quick", text("hi"), json!({})),
                CommandPolicy {
                    answer_at_once: true,
                    ..A2A_LIKE
                },
            ),
        )
        .await
        .expect("started");
    assert!(
        !quick.task.status.state.is_resting(),
        "{:?}",
        quick.task.status
    );
    let read = wait_until_rests(&e, "slow", "t-quick").await;
    assert_eq!(read, TaskState::Completed);
    // Without the policy the same partner's task rests for its Leader.
    let aip = e
        .send("echo", command("start", "t-aip", text("hi"), json!({})))
        .await
        .expect("started");
    assert_eq!(aip.task.status.state, TaskState::AwaitingCompletion);
}

/// Under `strict`, a command that does not apply to an ended task is refused and nothing is
/// recorded; a continue naming another session is refused too. Without it, AIP's rule holds:
/// the command is recorded and answered with the task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_commands_leave_ended_tasks_as_they_are() {
    let e = Engine::start(TaskDefaults::default());
    let done = e
        .send(
            "echo",
            with_policy(command("start", "t-1", text("hi"), json!({})), A2A_LIKE),
        )
        .await
        .expect("started");
    assert_eq!(done.task.status.state, TaskState::Completed);
    let agent = e.agent("echo");
    let before = e.engine.read(&agent, None, "t-1").await.expect("read");
    for kind in ["continue", "cancel", "complete"] {
        let refused = e
            .send(
                "echo",
                with_policy(command(kind, "t-1", text("more"), json!({})), A2A_LIKE),
            )
            .await;
        match refused {
            Err(EngineError::TaskEnded {
                task_id, command, ..
            }) => {
                assert_eq!(command.as_str(), kind);
                assert_eq!(task_id, "t-1");
            }
            other => panic!("{kind} on an ended task: {other:?}"),
        }
    }
    let after = e.engine.read(&agent, None, "t-1").await.expect("read");
    assert_eq!(after.task.commands.len(), before.task.commands.len());
    assert_eq!(after.seq, before.seq);
    // A continue in another session than its task's.
    e.send(
        "asker",
        with_policy(command("start", "t-2", text("go"), json!({})), A2A_LIKE),
    )
    .await
    .expect("started");
    let mut other = command("continue", "t-2", text("x"), json!({}));
    other.command.session_id = Some("another".into());
    match e.send("asker", with_policy(other, A2A_LIKE)).await {
        Err(EngineError::OtherSession { session_id, .. }) => assert_eq!(session_id, "another"),
        other => panic!("a continue in another session: {other:?}"),
    }
    // AIP's rule: recorded and answered.
    let ignored = e
        .send("echo", command("continue", "t-1", text("more"), json!({})))
        .await
        .expect("answered");
    assert_eq!(ignored.task.status.state, TaskState::Completed);
}

/// `read` records nothing; `list` pages a namespace newest change first, filters by session
/// and state, and never shows another Leader's tasks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_record_nothing_and_listings_page_newest_first() {
    let e = Engine::start(TaskDefaults::default());
    let agent = e.agent("echo");
    for i in 0..5 {
        let mut start = command("start", &format!("t-{i}"), text("x"), json!({}));
        start.command.session_id = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        e.send("echo", start).await.expect("started");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let mut theirs = command("start", "t-other", text("x"), json!({}));
    theirs.owner = Some("another-leader".into());
    theirs.command.sender_id = String::new();
    e.send("echo", theirs).await.expect("started");
    let first = e.engine.read(&agent, None, "t-0").await.expect("read");
    let again = e.engine.read(&agent, None, "t-0").await.expect("read");
    assert_eq!(first.task.commands.len(), again.task.commands.len());
    assert!(e.engine.read(&agent, None, "t-other").await.is_err());

    let mut query = TaskQuery {
        page_size: 2,
        ..TaskQuery::default()
    };
    let mut seen = Vec::new();
    loop {
        let page = e.engine.list(&agent, None, &query).await.expect("listed");
        assert_eq!(page.total, 5);
        seen.extend(page.tasks.iter().map(|t| t.id.clone()));
        match page.next {
            Some(next) => query.after = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ["t-4", "t-3", "t-2", "t-1", "t-0"]);
    let even = e
        .engine
        .list(
            &agent,
            None,
            &TaskQuery {
                session_id: Some("even".into()),
                states: Some(vec![TaskState::AwaitingCompletion]),
                page_size: 10,
                ..TaskQuery::default()
            },
        )
        .await
        .expect("listed");
    let ids: Vec<&str> = even.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["t-4", "t-2", "t-0"]);
    let none = e
        .engine
        .list(
            &agent,
            None,
            &TaskQuery {
                states: Some(vec![TaskState::Failed]),
                page_size: 10,
                ..TaskQuery::default()
            },
        )
        .await
        .expect("listed");
    assert!(none.tasks.is_empty() && none.next.is_none() && none.total == 0);
    let theirs = e
        .engine
        .list(&agent, Some("another-leader"), &TaskQuery::default())
        .await
        .expect("listed");
    assert_eq!(theirs.tasks.len(), 1);
    assert_eq!(theirs.tasks[0].id, "t-other");
}

/// `newest_in_session` finds a session's most recently changed task, in the caller's namespace
/// only, without counting; a task a start made that is not stored yet (its creation kept back
/// while the start waits) is found from its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_newest_task_is_found_stored_or_not_yet() {
    let e = Engine::start(TaskDefaults::default());
    let echo = e.agent("echo");
    for (i, session) in ["a", "b", "a", "b"].into_iter().enumerate() {
        let mut start = command("start", &format!("t-{i}"), text("x"), json!({}));
        start.command.session_id = Some(session.into());
        e.send("echo", start).await.expect("started");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let mut theirs = command("start", "t-theirs", text("x"), json!({}));
    theirs.owner = Some("another-leader".into());
    theirs.command.sender_id = String::new();
    theirs.command.session_id = Some("a".into());
    e.send("echo", theirs).await.expect("started");
    let newest = |owner: Option<&'static str>, session: &'static str| {
        let (engine, agent) = (e.engine.clone(), echo.clone());
        async move {
            engine
                .newest_in_session(&agent, owner, session)
                .await
                .expect("looked up")
                .map(|t| t.id)
        }
    };
    assert_eq!(newest(None, "a").await.as_deref(), Some("t-2"));
    assert_eq!(newest(None, "b").await.as_deref(), Some("t-3"));
    assert_eq!(newest(None, "c").await, None);
    assert_eq!(
        newest(Some("another-leader"), "a").await.as_deref(),
        Some("t-theirs")
    );
    // A change moves a task first: t-0 completed is newer than t-2.
    e.send("echo", command("complete", "t-0", json!([]), json!({})))
        .await
        .expect("completed");
    assert_eq!(newest(None, "a").await.as_deref(), Some("t-0"));

    // A start whose partner works on: while the start waits, its creation is kept in the slot.
    let script = e.agent("script");
    let mut held = command(
        "start",
        "held",
        text("accepted working hold"),
        json!({"responseTimeout": 5000}),
    );
    held.command.session_id = Some("a".into());
    let engine = e.engine.clone();
    let starting = tokio::spawn({
        let script = script.clone();
        async move { engine.command(&script, held, None).await }
    });
    let until = std::time::Instant::now() + Duration::from_secs(3);
    let found = loop {
        let in_store = e
            .engine
            .inner
            .store
            .list_session("script", None, "a", None, 10)
            .expect("listed");
        assert!(in_store.is_empty(), "written before its start answered");
        let found = e
            .engine
            .newest_in_session(&script, None, "a")
            .await
            .expect("looked up");
        if let Some(task) = found {
            break task;
        }
        assert!(
            std::time::Instant::now() < until,
            "the held task never showed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(!starting.is_finished());
    assert_eq!(found.id, "held");
    assert_eq!(found.status.state, TaskState::Working);
    // The read wrote it out: it is durable now, found through the store from here on.
    let stored = e
        .engine
        .inner
        .store
        .list_session("script", None, "a", None, 10)
        .expect("listed");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].task_id, "held");
    starting.abort();
}

/// The state of `task` of `agent` once it rests (at most 5 s).
async fn wait_until_rests(e: &Engine, agent: &str, task: &str) -> TaskState {
    let agent = e.agent(agent);
    for _ in 0..250 {
        let state = e
            .engine
            .read(&agent, None, task)
            .await
            .expect("read")
            .task
            .status
            .state;
        if state.is_resting() {
            return state;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{task} did not rest within 5 s");
}

/// A2A push configs made while a task lives are subscribed at once: each change goes to every
/// config that wants its state, in one outbox entry per change, in the order they were made;
/// one deleted leaves the task's list when the next is made; a task that does not exist gets
/// none (unless the config waits for its start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_configs_made_while_a_task_lives_hear_its_changes() {
    use aiphost_model::WireForm;
    use aiphost_model::notification::NotificationConfig;
    let e = Engine::start(TaskDefaults {
        webhook_targets: aiphost_net_policy::TargetPolicy {
            allow_private: true,
        },
        ..TaskDefaults::default()
    });
    let asked = e
        .send("asker", command("start", "p1", text("trip"), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&asked), TaskState::AwaitingInput);
    let key = TaskKey::owned("asker", None, "p1");
    let config = |id: &str, task: &str| NotificationConfig {
        id: id.into(),
        url: format!("http://127.0.0.1:9/{id}"),
        task_id: task.into(),
        format: Some(WireForm::new("a2a")),
        ..Default::default()
    };
    let push =
        |id: &str, states: Vec<TaskState>| e.engine.put_push_config(&key, config(id, "p1"), states);
    push("gone", Vec::new()).await.unwrap();
    e.engine.delete_push_config(&key, "gone").await.unwrap();
    // Deleting twice is no error.
    e.engine.delete_push_config(&key, "gone").await.unwrap();
    push("all", Vec::new()).await.unwrap();
    push("ends", vec![TaskState::Canceled, TaskState::Completed])
        .await
        .unwrap();
    // Made again: replaced, not subscribed twice.
    push("all", Vec::new()).await.unwrap();
    let record = e
        .engine
        .inner
        .store
        .load_task::<crate::task::record::TaskRecord>(&key)
        .unwrap()
        .unwrap();
    let subscribed: Vec<&str> = record.push.iter().map(|s| s.config_id.as_str()).collect();
    assert_eq!(subscribed, ["all", "ends"]);

    let canceled = e
        .send("asker", command("cancel", "p1", json!([]), json!({})))
        .await
        .unwrap();
    assert_eq!(state(&canceled), TaskState::Canceled);
    let (seq, entry) = e.engine.inner.store.outbox_head(&key).unwrap().unwrap();
    let entry = entry.unwrap();
    assert_eq!(seq, canceled.seq);
    assert_eq!(
        (entry.config_id.as_str(), entry.then.as_slice()),
        ("all", &["ends".to_string()][..])
    );

    // No task: refused and nothing stored.
    let other = TaskKey::owned("asker", None, "p2");
    let refused = e
        .engine
        .put_push_config(&other, config("x", "p2"), Vec::new())
        .await;
    assert!(
        matches!(&refused, Err(EngineError::TaskNotFound { .. })),
        "{refused:?}"
    );
    assert!(e.engine.inner.store.configs(&other).unwrap().is_empty());
    assert!(e.engine.delete_push_config(&other, "x").await.is_err());

    // Sent with a command: stored with the command's change or not at all. A continue of the
    // ended task refused under a strict policy stores none...
    let inline = |id: &str, task: &str| {
        Some(Subscribe::Inline {
            config: config(id, task),
            states: Vec::new(),
        })
    };
    let mut late = command("continue", "p1", text("more"), json!({}));
    late.policy.strict = true;
    let refused = e
        .engine
        .command(&e.agent("asker"), late, inline("late", "p1"))
        .await;
    assert!(
        matches!(&refused, Err(EngineError::TaskEnded { .. })),
        "{refused:?}"
    );
    assert!(e.engine.inner.store.config(&key, "late").unwrap().is_none());
    // ... and a start stores its config with the task it creates, subscribed to it.
    e.engine
        .command(
            &e.agent("asker"),
            command("start", "p2", text("trip"), json!({})),
            inline("x", "p2"),
        )
        .await
        .unwrap();
    assert_eq!(e.engine.inner.store.configs(&other).unwrap().len(), 1);
    let record = e
        .engine
        .inner
        .store
        .load_task::<crate::task::record::TaskRecord>(&other)
        .unwrap()
        .unwrap();
    assert_eq!(record.notify.map(|n| n.config_id).as_deref(), Some("x"));
}

/// Where a config may point is the engine's rule, whatever door it came through: under the
/// default policy a private address is refused for a config made by itself and for one sent
/// with a command (which then starts nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_to_private_addresses_are_refused_below_the_doors() {
    use aiphost_model::notification::{NotificationConfig, SetConfig};
    let e = Engine::start(TaskDefaults::default());
    let key = TaskKey::owned("asker", None, "p1");
    let set = SetConfig {
        id: None,
        url: "http://127.0.0.1:9/hook".into(),
        token: "t".into(),
        task_id: "p1".into(),
    };
    let refused = e.engine.set_notification_config(&key, set).await;
    assert!(
        matches!(
            &refused,
            Err(EngineError::TargetRefused {
                with_command: false,
                ..
            })
        ),
        "{refused:?}"
    );
    let config = NotificationConfig {
        id: "c".into(),
        url: "http://10.0.0.1/hook".into(),
        task_id: "p1".into(),
        ..Default::default()
    };
    let refused = e
        .engine
        .command(
            &e.agent("asker"),
            command("start", "p1", text("trip"), json!({})),
            Some(Subscribe::Inline {
                config,
                states: Vec::new(),
            }),
        )
        .await;
    assert!(
        matches!(
            &refused,
            Err(EngineError::TargetRefused {
                with_command: true,
                ..
            })
        ),
        "{refused:?}"
    );
    assert!(e.engine.inner.store.configs(&key).unwrap().is_empty());
    assert!(!e.engine.inner.store.has_task(&key).unwrap());
}
