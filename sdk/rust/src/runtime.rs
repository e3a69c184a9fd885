//! The run loop behind [`export!`](crate::export). Not public API.

use std::rc::Rc;

use crate::bindings::aiphost::partner::types as wit;
use crate::item::{DataItem, Product};
use crate::partner::{Decision, Outcome, Partner};
use crate::task::{Event, Host, ReportError, State, Task, WitHost};

/// Handles one invocation for partner `P` against the component's imports.
pub fn run<P: Partner>(invocation: wit::Invocation) -> Result<(), String> {
    log_panics();
    run_with::<P>(invocation, Rc::new(WitHost))
}

/// Sends panic messages to the host's log too (the default hook only writes to stderr). The panic
/// still traps the instance, and the host fails the task.
fn log_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
            .unwrap_or("(no message)");
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        crate::log::with_fields(
            crate::log::Level::Error,
            &format!("partner panicked: {message}"),
            &[("location", &location)],
        );
        default(info);
    }));
}

/// Why the run loop stopped early.
enum Stop {
    /// The task is over (ended, or failed by the host): return quietly.
    Quiet,
    /// Return this error from `handle`; the host fails the task with it.
    Error(String),
}

impl From<ReportError> for Stop {
    fn from(err: ReportError) -> Self {
        if err.ends_task() {
            Stop::Quiet
        } else {
            Stop::Error(format!("the host refused a report: {err}"))
        }
    }
}

pub(crate) fn run_with<P: Partner>(
    invocation: wit::Invocation,
    host: Rc<dyn Host>,
) -> Result<(), String> {
    let (event, input, mut task) = Task::from_invocation(invocation, host)?;
    let flow = match event {
        Event::Start => start::<P>(&mut task, input),
        Event::Continue => {
            let outcome = P::work(&mut task, input);
            apply(&mut task, outcome)
        }
        Event::Complete(reason) => {
            P::completed(&task, reason);
            Ok(())
        }
        Event::Cancel(reason) => {
            P::canceled(&task, reason);
            Ok(())
        }
    };
    match flow {
        Ok(()) | Err(Stop::Quiet) => Ok(()),
        Err(Stop::Error(message)) => Err(message),
    }
}

fn start<P: Partner>(task: &mut Task, input: Vec<DataItem>) -> Result<(), Stop> {
    match P::decide(task, &input) {
        Decision::Reject(reason) => {
            task.report_status(State::Rejected, vec![DataItem::text(reason)])?;
            Ok(())
        }
        Decision::Reply(items) => {
            task.reply(items)?;
            Ok(())
        }
        Decision::Accept => {
            task.report_status(State::Accepted, Vec::new())?;
            task.report_status(State::Working, Vec::new())?;
            let outcome = P::work(task, input);
            apply(task, outcome)
        }
    }
}

fn apply(task: &mut Task, outcome: Outcome) -> Result<(), Stop> {
    // The host already said the task is over (canceled while the partner worked, say): anything
    // more would be refused, and an error would only be noise in the host's log.
    if task.has_ended() {
        return Err(Stop::Quiet);
    }
    match outcome {
        Outcome::NeedInput(items) => {
            task.close_streams()?;
            task.report_status(State::AwaitingInput, items)?;
        }
        Outcome::Form(form) => {
            task.close_streams()?;
            task.ask(form)?;
        }
        Outcome::Done(products) => rest(task, products, Vec::new())?,
        Outcome::Reply { products, message } => rest(task, products, message)?,
        Outcome::Fail(reason) => task.report_status(State::Failed, vec![DataItem::text(reason)])?,
        Outcome::FailWith(failure) => task.fail(failure)?,
        Outcome::Abort(reason) => return Err(Stop::Error(reason)),
    }
    Ok(())
}

/// The work is done: the products emitted whole, the streamed text closed, `awaiting-completion`
/// with `message`.
fn rest(task: &mut Task, products: Vec<Product>, message: Vec<DataItem>) -> Result<(), Stop> {
    for product in products {
        task.emit_chunk(product, false, true)?;
    }
    task.close_streams()?;
    task.report_status(State::AwaitingCompletion, message)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The run loop on the public mock host ([`crate::testing`]).

    use serde_json::{Map, json};

    use super::*;
    use crate::testing::{MockHost, Start};
    use crate::{EndReason, KvError, Product};

    fn transcript(turn: &crate::testing::Turn) -> Vec<String> {
        turn.reports.iter().map(ToString::to_string).collect()
    }

    fn params() -> Map<String, serde_json::Value> {
        let mut params = Map::new();
        params.insert("size".into(), json!(5));
        params
    }

    struct Echo;
    impl Partner for Echo {
        fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
            assert_eq!(task.id(), "t-1");
            assert_eq!(task.session_id(), Some("s-1"));
            assert_eq!(task.leader_id(), Some("leader"));
            assert_eq!(task.params()["size"], 5);
            Outcome::Done(vec![Product::new("echo").with_items(input)])
        }
    }

    fn echo_start(host: &mut MockHost<Echo>, input: Vec<DataItem>, max: Option<u64>) -> Turn {
        host.start_with(
            input,
            Start {
                task_id: Some("t-1".into()),
                params: params(),
                session_id: Some("s-1".into()),
                leader_id: Some("leader".into()),
                max_products_bytes: max,
            },
        )
    }

    use crate::testing::Turn;

    #[test]
    fn start_accepts_works_and_awaits_completion() {
        let mut host = MockHost::<Echo>::new();
        let turn = echo_start(&mut host, vec![DataItem::text("hi")], Some(100));
        assert_eq!(turn.error, None);
        assert_eq!(
            transcript(&turn),
            [
                "status accepted []",
                "status working []",
                "chunk echo append=false last=true [text:hi]",
                "status awaiting-completion []",
            ]
        );
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
    }

    #[test]
    fn a_reply_says_something_with_its_result() {
        struct Replier;
        impl Partner for Replier {
            fn work(_task: &mut Task, input: Vec<DataItem>) -> Outcome {
                Outcome::Reply {
                    products: vec![Product::new("p").with_items(input)],
                    message: vec![DataItem::text("done")],
                }
            }
        }
        let mut host = MockHost::<Replier>::new();
        let turn = host.start(vec![DataItem::text("hi")]);
        assert_eq!(
            transcript(&turn)[2..],
            [
                "chunk p append=false last=true [text:hi]",
                "status awaiting-completion [text:done]",
            ]
        );
        assert_eq!(turn.text(), "done");
    }

    #[test]
    fn continue_goes_straight_to_work_and_sees_the_products_so_far() {
        struct Counter;
        impl Partner for Counter {
            fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
                let left = task.products_bytes_left();
                Outcome::Done(vec![
                    Product::new("echo").with_items(input),
                    Product::new("left").with_item(DataItem::data(json!({"left": left}))),
                ])
            }
        }
        let mut host = MockHost::<Counter>::new();
        let first = host.start_with(
            vec![DataItem::text("abc")],
            Start {
                max_products_bytes: Some(100),
                ..Start::default()
            },
        );
        // 100 minus "abc" (3) and {"left":100} (12) from the first turn.
        let turn = host.continue_(&first.task_id, vec![DataItem::data(json!({"a": 1}))]);
        assert_eq!(turn.error, None);
        assert_eq!(
            transcript(&turn),
            [
                r#"chunk echo append=false last=true [data:{"a":1}]"#,
                r#"chunk left append=false last=true [data:{"left":85}]"#,
                "status awaiting-completion []",
            ]
        );
        assert_eq!(turn.products.len(), 2);
    }

    struct Picky;
    impl Partner for Picky {
        fn decide(task: &Task, input: &[DataItem]) -> Decision {
            assert!(task.is_start());
            if input.is_empty() {
                Decision::reject("nothing to do")
            } else {
                Decision::Accept
            }
        }
        fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
            let kv = task.kv();
            let turns: u32 = kv.get_json("turns").unwrap().unwrap_or(0);
            kv.set_json("turns", &(turns + 1)).unwrap();
            match input.first().and_then(DataItem::as_text) {
                Some("fail") => Outcome::fail("cannot"),
                Some("abort") => Outcome::Abort("gave up".into()),
                Some("nonsense") => match task.set_status(State::Completed, vec![]) {
                    Ok(()) => Outcome::Done(vec![]),
                    Err(e) => Outcome::Abort(e.to_string()),
                },
                _ => Outcome::NeedInput(vec![
                    DataItem::text(format!("turn {}", turns + 1)),
                    DataItem::data(json!({"missing": ["x"]})),
                ]),
            }
        }
        fn completed(task: &Task, reason: EndReason) {
            assert_eq!(reason, EndReason::Leader);
            task.agent_kv().set_json("completed", &task.id()).unwrap();
        }
        fn canceled(task: &Task, reason: EndReason) {
            assert_eq!(reason, EndReason::Timeout);
            task.kv().delete("turns").unwrap();
        }
    }

    #[test]
    fn reject_reports_the_reason() {
        let mut host = MockHost::<Picky>::new();
        let turn = host.start(vec![]);
        assert_eq!(transcript(&turn), ["status rejected [text:nothing to do]"]);
        assert_eq!(turn.state, Some(State::Rejected));
    }

    #[test]
    fn need_input_fail_and_abort() {
        let mut host = MockHost::<Picky>::new();
        let turn = host.start(vec![DataItem::text("hello")]);
        assert_eq!(
            transcript(&turn).last().unwrap(),
            r#"status awaiting-input [text:turn 1, data:{"missing":["x"]}]"#
        );
        // The task KV carries over to the next invocation.
        let id = turn.task_id;
        let turn = host.continue_(&id, vec![DataItem::text("more")]);
        assert_eq!(turn.text(), "turn 2");
        let turn = host.continue_(&id, vec![DataItem::text("fail")]);
        assert_eq!(transcript(&turn), ["status failed [text:cannot]"]);
        assert_eq!(host.task_kv(&id).get_json::<u32>("turns"), Ok(Some(3)));

        let turn = host.start(vec![DataItem::text("abort")]);
        assert_eq!(turn.error.as_deref(), Some("gave up"));
        // The host fails the task with the error.
        assert_eq!(turn.state, Some(State::Failed));
        assert_eq!(turn.text(), "gave up");
    }

    #[test]
    fn a_refused_report_of_the_partner_can_be_propagated() {
        let mut host = MockHost::<Picky>::new();
        let turn = host.start(vec![DataItem::text("nonsense")]);
        assert_eq!(
            turn.error.as_deref(),
            Some(
                "invalid state transition: a partner cannot move a task from working to completed"
            )
        );
        assert_eq!(turn.state, Some(State::Failed));
    }

    #[test]
    fn refused_sdk_reports_become_errors_unless_the_task_ended() {
        let mut host = MockHost::<Picky>::new();
        host.refuse_next(
            State::Working,
            ReportError::InvalidTransition("accepted -> working".into()),
        );
        let turn = host.start(vec![DataItem::text("x")]);
        assert_eq!(
            turn.error.as_deref(),
            Some("the host refused a report: invalid state transition: accepted -> working")
        );
        assert_eq!(
            host.history(&turn.task_id),
            [State::Accepted, State::Working, State::Failed]
        );

        // The Leader canceled meanwhile: the report gets task-ended, and the SDK stops quietly.
        host.refuse_next(State::AwaitingInput, ReportError::TaskEnded);
        let turn = host.start(vec![DataItem::text("x")]);
        assert_eq!(turn.error, None);

        // Products too large: the host failed the task; stop after the first refused chunk.
        let mut host = MockHost::<Echo>::new();
        let turn = echo_start(
            &mut host,
            vec![DataItem::text("hello"), DataItem::text("world")],
            Some(3),
        );
        assert_eq!(turn.error, None);
        assert_eq!(
            transcript(&turn),
            ["status accepted []", "status working []"]
        );
        assert_eq!(turn.state, Some(State::Failed));
        assert_eq!(
            turn.text(),
            "the products would reach 10 bytes, over maxProductsBytes of 3"
        );
        assert!(turn.products.is_empty());
    }

    #[test]
    fn complete_and_cancel_call_the_hooks() {
        let mut host = MockHost::<Picky>::new();
        let turn = host.start(vec![DataItem::text("x")]);
        assert_eq!(
            host.task_kv(&turn.task_id).get("turns"),
            Ok(Some(b"1".to_vec()))
        );
        let turn = host.timeout(&turn.task_id);
        assert_eq!(turn.state, Some(State::Canceled));
        assert!(turn.reports.is_empty());
        assert!(host.task_kv_entries(&turn.task_id).is_empty());

        let mut host = MockHost::<Echo>::new();
        let turn = echo_start(&mut host, vec![DataItem::text("x")], None);
        let turn = host.complete(&turn.task_id);
        assert_eq!(turn.state, Some(State::Completed));
        assert_eq!(turn.error, None);
    }

    #[test]
    fn malformed_invocations_are_errors() {
        let host = MockHost::<Echo>::new();
        let invocation = |params: &str| wit::Invocation {
            event: wit::Event::Start,
            task_id: "t".into(),
            session_id: None,
            leader_id: None,
            state: None,
            data_items: Vec::new(),
            max_products_bytes: None,
            products_bytes: 0,
            command_params: params.into(),
        };
        let err = run_with::<Echo>(invocation("[]"), host.bound("t")).unwrap_err();
        assert!(err.contains("commandParams"), "{err}");
        let (_, _, task) = Task::from_invocation(invocation(""), host.bound("t")).unwrap();
        assert!(task.params().is_empty());
        assert_eq!(task.products_bytes_left(), None);
        assert_eq!(task.state(), None);
        assert_eq!(task.initial_state(), None);
    }

    #[test]
    fn kv_errors_and_json() {
        let host = MockHost::<Echo>::new().with_kv_value_limit(1024);
        host.with_task("t", |task| {
            let kv = task.kv();
            assert_eq!(kv.get("missing"), Ok(None));
            kv.set("raw", b"not json").unwrap();
            assert!(matches!(kv.get_json::<u32>("raw"), Err(KvError::Json(_))));
            assert!(matches!(
                kv.set("big", &[0; 2048]),
                Err(KvError::TooLarge(_))
            ));
            task.agent_kv()
                .set_json("shared", &json!({"a": 1}))
                .unwrap();
            assert_eq!(kv.get("shared"), Ok(None));
            assert_eq!(
                task.agent_kv().get_json::<serde_json::Value>("shared"),
                Ok(Some(json!({"a": 1})))
            );
        });
        assert_eq!(host.agent_kv_entries()["shared"], br#"{"a":1}"#);
    }

    /// Thinks, calls a tool, reports usage and answers, all streamed; what it does next depends
    /// on the first word of its text input.
    struct Chat;
    impl Partner for Chat {
        fn decide(_task: &Task, input: &[DataItem]) -> Decision {
            match input.first().and_then(DataItem::as_text) {
                Some("hello") => Decision::reply("hi there"),
                _ => Decision::Accept,
            }
        }

        fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
            if let Some(trip) = crate::form_answer(&input, "trip") {
                let city = trip["city"].as_str().unwrap_or("?").to_owned();
                return match task.say(&city) {
                    Ok(()) => Outcome::Done(vec![]),
                    Err(e) => e.into(),
                };
            }
            let text = input.first().and_then(DataItem::as_text).unwrap_or("");
            match text {
                "form" => Outcome::ask_form(
                    Form::new("trip", "Trip", json!({"type": "object"})).described("Where?"),
                ),
                "fail" => Outcome::FailWith(
                    Failure::new("RATE_LIMITED", "busy")
                        .retryable()
                        .with_detail(json!({"retryAfter": 5})),
                ),
                "ask" => {
                    // Streamed text is closed before the task waits for input too.
                    let said = task.say("Let me see.");
                    said.map_or_else(Outcome::from, |()| Outcome::ask("And then?"))
                }
                _ => match chat(task) {
                    Ok(()) => Outcome::Done(vec![]),
                    Err(e) => e.into(),
                },
            }
        }
    }

    fn chat(task: &mut Task) -> Result<(), ReportError> {
        task.think("Looking ")?;
        task.think("")?; // skipped
        task.think("it up.")?;
        task.tool_call("c1", "lookup", &json!({"q": "x"}))?;
        task.tool_result("c1", ToolOutput::Json(json!({"found": 1})), false)?;
        task.usage(Usage {
            model: Some("m".into()),
            input_tokens: Some(3),
            output_tokens: Some(5),
            ..Usage::default()
        })?;
        task.say("Found ")?;
        task.say("it.")?;
        // A product closed by the partner itself is not closed again.
        task.stream_text("note", Channel::Answer, "n", true)
    }

    use crate::{Channel, Failure, Form, ToolOutput, Usage};

    #[test]
    fn streamed_text_tools_and_usage_are_reported_and_closed() {
        let mut host = MockHost::<Chat>::new();
        let turn = host.start(vec![DataItem::text("chat")]);
        assert_eq!(turn.error, None);
        assert_eq!(
            transcript(&turn),
            [
                "status accepted []",
                "status working []",
                r#"text reasoning/reasoning last=false "Looking ""#,
                r#"text reasoning/reasoning last=false "it up.""#,
                r#"tool-call c1 lookup {"q":"x"}"#,
                r#"tool-result c1 error=false json:{"found":1}"#,
                "usage model=m input=3 output=5",
                r#"text answer/answer last=false "Found ""#,
                r#"text answer/answer last=false "it.""#,
                r#"text note/answer last=true "n""#,
                r#"text reasoning/reasoning last=true """#,
                r#"text answer/answer last=true """#,
                "status awaiting-completion []",
            ]
        );
        assert_eq!(turn.said(), "Found it.n");
        assert_eq!(turn.thought(), "Looking it up.");
        // The products hold the merged text, as the host keeps it.
        let answer = turn.product(crate::ANSWER_PRODUCT).expect("the answer");
        assert_eq!(answer.data_items.len(), 1);
        assert_eq!(answer.data_items[0].as_text(), Some("Found it."));
        assert_eq!(
            answer.data_items[0].metadata.as_ref().unwrap()["aiphost.kind"],
            "answer"
        );
        let reasoning = turn
            .product(crate::REASONING_PRODUCT)
            .expect("the reasoning");
        assert_eq!(reasoning.data_items[0].as_text(), Some("Looking it up."));
        assert_eq!(turn.products[0].id, "reasoning");
    }

    #[test]
    fn streams_are_closed_before_asking_too() {
        let mut host = MockHost::<Chat>::new();
        let turn = host.start(vec![DataItem::text("ask")]);
        assert_eq!(
            transcript(&turn)[2..],
            [
                r#"text answer/answer last=false "Let me see.""#,
                r#"text answer/answer last=true """#,
                "status awaiting-input [text:And then?]",
            ]
        );
    }

    #[test]
    fn a_form_is_asked_and_its_answer_read_on_continue() {
        let mut host = MockHost::<Chat>::new();
        let turn = host.start(vec![DataItem::text("form")]);
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::AwaitingInput));
        assert_eq!(transcript(&turn)[2..], [r#"ask trip "Trip" []"#]);
        let form = turn.form.expect("the form");
        assert_eq!(form.description.as_deref(), Some("Where?"));
        assert_eq!(form.schema, json!({"type": "object"}));

        let turn = host.answer_form(&turn.task_id, json!({"city": "Oslo"}));
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert_eq!(turn.form, None);
        assert_eq!(turn.said(), "Oslo");
    }

    #[test]
    fn a_failure_with_a_code() {
        let mut host = MockHost::<Chat>::new();
        let turn = host.start(vec![DataItem::text("fail")]);
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::Failed));
        assert_eq!(
            transcript(&turn)[2..],
            [r#"fail RATE_LIMITED retryable=true "busy""#]
        );
        assert_eq!(turn.text(), "busy");
        let failure = turn.failure.expect("the failure");
        assert_eq!(failure.detail.unwrap()["retryAfter"], 5);
        assert_eq!(
            Outcome::fail_with("X", "m"),
            Outcome::FailWith(Failure::new("X", "m"))
        );
    }

    #[test]
    fn a_plain_reply_leaves_no_task() {
        let mut host = MockHost::<Chat>::new();
        let turn = host.start(vec![DataItem::text("hello")]);
        assert_eq!(turn.error, None);
        assert_eq!(transcript(&turn), ["reply [text:hi there]"]);
        assert_eq!(turn.reply, Some(vec![DataItem::text("hi there")]));
        assert_eq!(turn.state, None);
        assert!(host.task_ids().is_empty());
        assert!(host.history(&turn.task_id).is_empty());
    }

    #[test]
    fn a_cancel_while_streaming_stops_quietly() {
        let mut host = MockHost::<Chat>::new();
        // accepted, working, two deltas of reasoning: then the Leader cancels.
        host.cancel_after(4);
        let turn = host.start(vec![DataItem::text("chat")]);
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::Canceled));
        assert_eq!(transcript(&turn).len(), 4);
        // The outcome (an abort after task-ended) is ignored: nothing more was tried.
        assert_eq!(
            host.history(&turn.task_id),
            [State::Accepted, State::Working, State::Canceled]
        );
    }

    #[test]
    fn the_activity_cap() {
        // Two events: the third report is refused, and the partner gives up with the error.
        let mut host = MockHost::<Chat>::new().with_activity_limit(2);
        let turn = host.start(vec![DataItem::text("chat")]);
        assert_eq!(
            turn.error.as_deref(),
            Some(
                "an activity limit is reached: at most 2 activity events (streamed text, tool \
                 calls and results, usage) per task"
            )
        );
        assert_eq!(turn.state, Some(State::Failed));

        // A closing delta over the cap is skipped with a warning: the work is not lost.
        let mut host = MockHost::<Chat>::new().with_activity_limit(1);
        let turn = host.start(vec![DataItem::text("ask")]);
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::AwaitingInput));
        assert_eq!(
            turn.logs[0].message,
            "a streamed product stays open: the activity cap is used up"
        );
    }
}
