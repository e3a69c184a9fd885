//! The run loop behind [`export!`](crate::export). Not public API.

use std::rc::Rc;

use crate::bindings::aiphost::partner::types as wit;
use crate::item::DataItem;
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
        Decision::Accept => {
            task.report_status(State::Accepted, Vec::new())?;
            task.report_status(State::Working, Vec::new())?;
            let outcome = P::work(task, input);
            apply(task, outcome)
        }
    }
}

fn apply(task: &mut Task, outcome: Outcome) -> Result<(), Stop> {
    match outcome {
        Outcome::NeedInput(items) => task.report_status(State::AwaitingInput, items)?,
        Outcome::Done(products) => {
            for product in products {
                task.emit_chunk(product, false, true)?;
            }
            task.report_status(State::AwaitingCompletion, Vec::new())?;
        }
        Outcome::Reply { products, message } => {
            for product in products {
                task.emit_chunk(product, false, true)?;
            }
            task.report_status(State::AwaitingCompletion, message)?;
        }
        Outcome::Fail(reason) => task.report_status(State::Failed, vec![DataItem::text(reason)])?,
        Outcome::Abort(reason) => return Err(Stop::Error(reason)),
    }
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
}
