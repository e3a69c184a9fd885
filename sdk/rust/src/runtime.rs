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
    use std::cell::{Cell, RefCell};
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::bindings::aiphost::partner::kv as wit_kv;
    use crate::{EndReason, KvError, Product};

    /// A host that records every report and applies a tiny state machine.
    struct MockHost {
        state: Cell<Option<wit::TaskState>>,
        calls: RefCell<Vec<String>>,
        /// Refuse a status change to this state with this error.
        refuse: RefCell<Option<(wit::TaskState, wit::ReportError)>>,
        /// Refuse every chunk with this error.
        refuse_chunks: RefCell<Option<wit::ReportError>>,
        kv: RefCell<HashMap<(bool, String), Vec<u8>>>,
    }

    impl MockHost {
        fn new(state: Option<wit::TaskState>) -> Rc<Self> {
            Rc::new(MockHost {
                state: Cell::new(state),
                calls: RefCell::new(Vec::new()),
                refuse: RefCell::new(None),
                refuse_chunks: RefCell::new(None),
                kv: RefCell::new(HashMap::new()),
            })
        }

        fn calls(&self) -> Vec<String> {
            self.calls.borrow().clone()
        }
    }

    fn describe(items: &[wit::DataItem]) -> String {
        let parts: Vec<String> = items
            .iter()
            .map(|item| match &item.kind {
                wit::DataKind::Text(t) => format!("text:{t}"),
                wit::DataKind::Data(d) => format!("data:{d}"),
                wit::DataKind::File(_) => "file".to_owned(),
            })
            .collect();
        format!("[{}]", parts.join(", "))
    }

    fn name(state: wit::TaskState) -> &'static str {
        State::from_wit(state).as_str()
    }

    impl Host for MockHost {
        fn set_status(
            &self,
            state: wit::TaskState,
            items: &[wit::DataItem],
        ) -> Result<(), wit::ReportError> {
            self.calls
                .borrow_mut()
                .push(format!("status {} {}", name(state), describe(items)));
            if let Some((refused, err)) = self.refuse.borrow().clone()
                && refused == state
            {
                return Err(err);
            }
            if self
                .state
                .get()
                .is_some_and(|s| State::from_wit(s).is_final())
            {
                return Err(wit::ReportError::TaskEnded);
            }
            self.state.set(Some(state));
            Ok(())
        }

        fn emit_product_chunk(&self, chunk: &wit::ProductChunk) -> Result<(), wit::ReportError> {
            self.calls.borrow_mut().push(format!(
                "chunk {} append={} last={} {}",
                chunk.product.id,
                chunk.append,
                chunk.last_chunk,
                describe(&chunk.product.data_items)
            ));
            match self.refuse_chunks.borrow().clone() {
                Some(err) => {
                    if matches!(err, wit::ReportError::ProductsTooLarge(_)) {
                        self.state.set(Some(wit::TaskState::Failed));
                    }
                    Err(err)
                }
                None => Ok(()),
            }
        }

        fn current_state(&self) -> Option<wit::TaskState> {
            self.state.get()
        }

        fn kv_get(
            &self,
            scope: wit_kv::Scope,
            key: &str,
        ) -> Result<Option<Vec<u8>>, wit_kv::KvError> {
            let task = matches!(scope, wit_kv::Scope::Task);
            Ok(self.kv.borrow().get(&(task, key.to_owned())).cloned())
        }

        fn kv_set(
            &self,
            scope: wit_kv::Scope,
            key: &str,
            value: &[u8],
        ) -> Result<(), wit_kv::KvError> {
            if value.len() > 1024 {
                return Err(wit_kv::KvError::TooLarge("1024 bytes".into()));
            }
            let task = matches!(scope, wit_kv::Scope::Task);
            self.kv
                .borrow_mut()
                .insert((task, key.to_owned()), value.to_vec());
            Ok(())
        }

        fn kv_delete(&self, scope: wit_kv::Scope, key: &str) -> Result<(), wit_kv::KvError> {
            let task = matches!(scope, wit_kv::Scope::Task);
            self.kv.borrow_mut().remove(&(task, key.to_owned()));
            Ok(())
        }
    }

    fn invocation(event: wit::Event, items: Vec<DataItem>) -> wit::Invocation {
        let state = match event {
            wit::Event::Start => None,
            wit::Event::Continue => Some(wit::TaskState::Working),
            _ => Some(wit::TaskState::Completed),
        };
        wit::Invocation {
            event,
            task_id: "t-1".into(),
            session_id: Some("s-1".into()),
            leader_id: None,
            state,
            data_items: items.into_iter().map(DataItem::into_wit).collect(),
            max_products_bytes: Some(100),
            products_bytes: 30,
            command_params: r#"{"size": 5}"#.into(),
        }
    }

    fn run_on(
        host: &Rc<MockHost>,
        event: wit::Event,
        items: Vec<DataItem>,
        partner: fn(wit::Invocation, Rc<dyn Host>) -> Result<(), String>,
    ) -> Result<(), String> {
        let dyn_host: Rc<dyn Host> = host.clone();
        partner(invocation(event, items), dyn_host)
    }

    struct Echo;
    impl Partner for Echo {
        fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
            assert_eq!(task.id(), "t-1");
            assert_eq!(task.session_id(), Some("s-1"));
            assert_eq!(task.params()["size"], 5);
            assert_eq!(task.products_bytes_left(), Some(70));
            Outcome::Done(vec![Product::new("echo").with_items(input)])
        }
    }

    #[test]
    fn start_accepts_works_and_awaits_completion() {
        let host = MockHost::new(None);
        let r = run_on(
            &host,
            wit::Event::Start,
            vec![DataItem::text("hi")],
            run_with::<Echo>,
        );
        assert_eq!(r, Ok(()));
        assert_eq!(
            host.calls(),
            [
                "status accepted []",
                "status working []",
                "chunk echo append=false last=true [text:hi]",
                "status awaiting-completion []",
            ]
        );
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
        let host = MockHost::new(Some(wit::TaskState::Working));
        let r = run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::text("hi")],
            run_with::<Replier>,
        );
        assert_eq!(r, Ok(()));
        assert_eq!(
            host.calls(),
            [
                "chunk p append=false last=true [text:hi]",
                "status awaiting-completion [text:done]",
            ]
        );
    }

    #[test]
    fn continue_goes_straight_to_work() {
        let host = MockHost::new(Some(wit::TaskState::Working));
        let r = run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::data(json!({"a": 1}))],
            run_with::<Echo>,
        );
        assert_eq!(r, Ok(()));
        assert_eq!(
            host.calls(),
            [
                r#"chunk echo append=false last=true [data:{"a":1}]"#,
                "status awaiting-completion []",
            ]
        );
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
        fn canceled(task: &Task, reason: EndReason) {
            assert_eq!(reason, EndReason::Timeout);
            task.kv().delete("turns").unwrap();
        }
    }

    #[test]
    fn reject_reports_the_reason() {
        let host = MockHost::new(None);
        let r = run_on(&host, wit::Event::Start, vec![], run_with::<Picky>);
        assert_eq!(r, Ok(()));
        assert_eq!(host.calls(), ["status rejected [text:nothing to do]"]);
    }

    #[test]
    fn need_input_fail_and_abort() {
        let host = MockHost::new(None);
        run_on(
            &host,
            wit::Event::Start,
            vec![DataItem::text("hello")],
            run_with::<Picky>,
        )
        .unwrap();
        assert_eq!(
            host.calls().last().unwrap(),
            r#"status awaiting-input [text:turn 1, data:{"missing":["x"]}]"#
        );
        // The task KV carries over to the next invocation.
        host.state.set(Some(wit::TaskState::Working));
        run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::text("more")],
            run_with::<Picky>,
        )
        .unwrap();
        assert!(host.calls().last().unwrap().contains("turn 2"));

        host.state.set(Some(wit::TaskState::Working));
        run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::text("fail")],
            run_with::<Picky>,
        )
        .unwrap();
        assert_eq!(host.calls().last().unwrap(), "status failed [text:cannot]");

        host.state.set(Some(wit::TaskState::Working));
        let r = run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::text("abort")],
            run_with::<Picky>,
        );
        assert_eq!(r, Err("gave up".to_owned()));
    }

    #[test]
    fn a_refused_report_of_the_partner_can_be_propagated() {
        let host = MockHost::new(Some(wit::TaskState::Working));
        *host.refuse.borrow_mut() = Some((
            wit::TaskState::Completed,
            wit::ReportError::InvalidTransition("working -> completed".into()),
        ));
        let r = run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::text("nonsense")],
            run_with::<Picky>,
        );
        assert_eq!(
            r,
            Err("invalid state transition: working -> completed".to_owned())
        );
    }

    #[test]
    fn refused_sdk_reports_become_errors_unless_the_task_ended() {
        let host = MockHost::new(None);
        *host.refuse.borrow_mut() = Some((
            wit::TaskState::Working,
            wit::ReportError::InvalidTransition("accepted -> working".into()),
        ));
        let r = run_on(
            &host,
            wit::Event::Start,
            vec![DataItem::text("x")],
            run_with::<Echo>,
        );
        assert_eq!(
            r,
            Err("the host refused a report: invalid state transition: accepted -> working".into())
        );

        // The Leader canceled meanwhile: every report gets task-ended, and the SDK stops quietly.
        let host = MockHost::new(Some(wit::TaskState::Canceled));
        let r = run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::text("x")],
            run_with::<Echo>,
        );
        assert_eq!(r, Ok(()));
        assert_eq!(host.calls().len(), 2);

        // Products too large: the host failed the task; stop after the first refused chunk.
        let host = MockHost::new(Some(wit::TaskState::Working));
        *host.refuse_chunks.borrow_mut() = Some(wit::ReportError::ProductsTooLarge(100));
        let r = run_on(
            &host,
            wit::Event::Continue,
            vec![DataItem::text("x")],
            run_with::<Echo>,
        );
        assert_eq!(r, Ok(()));
        assert_eq!(host.calls().len(), 1);
    }

    #[test]
    fn complete_and_cancel_call_the_hooks() {
        let host = MockHost::new(Some(wit::TaskState::Canceled));
        host.kv
            .borrow_mut()
            .insert((true, "turns".into()), b"3".to_vec());
        let r = run_on(
            &host,
            wit::Event::Cancel(wit::EndReason::Timeout),
            vec![],
            run_with::<Picky>,
        );
        assert_eq!(r, Ok(()));
        assert!(host.kv.borrow().is_empty());
        assert!(host.calls().is_empty());
        let r = run_on(
            &host,
            wit::Event::Complete(wit::EndReason::Leader),
            vec![],
            run_with::<Picky>,
        );
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn malformed_invocations_are_errors() {
        let host: Rc<dyn Host> = MockHost::new(None);
        let mut inv = invocation(wit::Event::Start, vec![]);
        inv.command_params = "[]".into();
        let err = run_with::<Echo>(inv, host.clone()).unwrap_err();
        assert!(err.contains("commandParams"), "{err}");
        let mut inv = invocation(wit::Event::Start, vec![]);
        inv.command_params = String::new();
        inv.max_products_bytes = None;
        let (_, _, task) = Task::from_invocation(inv, host).unwrap();
        assert!(task.params().is_empty());
        assert_eq!(task.products_bytes_left(), None);
        assert_eq!(task.state(), None);
        assert_eq!(task.initial_state(), None);
    }

    #[test]
    fn kv_errors_and_json() {
        let host: Rc<dyn Host> = MockHost::new(Some(wit::TaskState::Working));
        let (_, _, task) =
            Task::from_invocation(invocation(wit::Event::Continue, vec![]), host).unwrap();
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
    }
}
