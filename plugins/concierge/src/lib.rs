//! Concierge: the example of a partner that talks to people (`aiphost:partner@0.2.0`).
//!
//! It behaves deterministically from the first word of its text, so that every door's tests can
//! drive every flow of the contract:
//!
//! | text | what it does |
//! | --- | --- |
//! | `think X` | reasoning deltas (`Let me think about X.`), then the answer `thought about X` |
//! | `tool X` | the tool call `lookup` with `{"query": X}`, its result `{"found": X}`, then the answer `found X` |
//! | `form X` | awaiting-input with the form `trip` (city, days); the continue with its answer → the answer `CITY for DAYS days` |
//! | `fail X` | fails with code `CONCIERGE_FAILED`, message X, not retryable |
//! | `slow X` | 20 answer deltas (`1 ` … `20`) 250 ms apart, to cancel while it streams |
//! | `reply X` | on start: the plain reply X and no task (on a continue, the answer X) |
//! | anything else | the text echoed back as answer deltas, word by word |
//!
//! Answers go into the product `answer`, reasoning into `reasoning`, both as deltas a word at a
//! time (the merged text is exactly the answer above); the SDK closes them, and the task rests in
//! awaiting-completion. The input's text items are joined with a space; X is the rest of the text
//! after the first word, trimmed. A continue (after an answer, or with text instead of a form
//! answer) is read the same way.

use std::time::Duration;

use aiphost_sdk::serde_json::json;
use aiphost_sdk::{
    Channel, DataItem, Decision, Form, Outcome, Partner, ReportError, Task, ToolOutput,
    form_answer_as,
};
use serde::Deserialize;

/// The concierge partner.
pub struct Concierge;

/// The request id of the trip form.
const TRIP_FORM: &str = "trip";
/// The failure code of `fail X`.
const FAILED: &str = "CONCIERGE_FAILED";
/// The call id of the `lookup` tool call (one call per invocation).
const LOOKUP_CALL: &str = "lookup-1";
/// How many deltas `slow X` streams.
const SLOW_DELTAS: u32 = 20;
/// The pause between two deltas of `slow X`; none in the unit tests, which count deltas only.
const SLOW_PAUSE: Duration = if cfg!(test) {
    Duration::ZERO
} else {
    Duration::from_millis(250)
};

/// What the first word of the text asks for; the rest of the text is its argument.
#[derive(Debug, PartialEq)]
enum Command<'a> {
    Think(&'a str),
    Tool(&'a str),
    Form,
    Fail(&'a str),
    Slow,
    Reply(&'a str),
    /// Anything else: the whole text.
    Echo(&'a str),
}

impl<'a> Command<'a> {
    fn parse(text: &'a str) -> Self {
        let trimmed = text.trim_start();
        let (word, rest) = trimmed
            .split_once(char::is_whitespace)
            .unwrap_or((trimmed, ""));
        let rest = rest.trim();
        match word {
            "think" => Command::Think(rest),
            "tool" => Command::Tool(rest),
            "form" => Command::Form,
            "fail" => Command::Fail(rest),
            "slow" => Command::Slow,
            "reply" => Command::Reply(rest),
            _ => Command::Echo(text),
        }
    }
}

/// The answer to the trip form, as its schema describes it.
#[derive(Debug, Deserialize)]
struct Trip {
    city: String,
    days: u64,
}

/// The form `form X` asks with.
fn trip_form() -> Form {
    Form::new(
        TRIP_FORM,
        "Trip",
        json!({
            "type": "object",
            "required": ["city", "days"],
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1}
            }
        }),
    )
    .described("Where to, and for how many days?")
}

/// The text items of the input, joined with a space.
fn text_of(input: &[DataItem]) -> String {
    let texts: Vec<&str> = input.iter().filter_map(DataItem::as_text).collect();
    texts.join(" ")
}

impl Partner for Concierge {
    fn decide(_task: &Task, input: &[DataItem]) -> Decision {
        match Command::parse(&text_of(input)) {
            Command::Reply(text) => Decision::reply(text),
            _ => Decision::Accept,
        }
    }

    fn work(task: &mut Task, input: Vec<DataItem>) -> Outcome {
        match form_answer_as::<Trip>(&input, TRIP_FORM) {
            Some(Ok(trip)) => {
                let answer = format!("{} for {} days", trip.city, trip.days);
                return finish(stream_words(task, Channel::Answer, &answer));
            }
            // The host checks answers against the schema; should one still not fit, ask again.
            Some(Err(_)) => return Outcome::ask_form(trip_form()),
            None => {}
        }
        let text = text_of(&input);
        let flow = match Command::parse(&text) {
            Command::Form => return Outcome::ask_form(trip_form()),
            Command::Fail(message) => return Outcome::fail_with(FAILED, message),
            Command::Think(topic) => think(task, topic),
            Command::Tool(query) => lookup(task, query),
            Command::Slow => slow(task),
            // A plain reply answers a start only; on a continue the reply is the answer.
            Command::Reply(text) => stream_words(task, Channel::Answer, text),
            Command::Echo(text) => stream_words(task, Channel::Answer, text),
        };
        finish(flow)
    }
}

aiphost_sdk::export!(Concierge);

/// The outcome of a streamed answer: the task rests in awaiting-completion (the SDK closes the
/// streamed products first). A refused report gives up; quietly if the task is over (canceled
/// while it streamed, say).
fn finish(flow: Result<(), ReportError>) -> Outcome {
    match flow {
        Ok(()) => Outcome::Done(Vec::new()),
        Err(e) => e.into(),
    }
}

/// Streams `text` into the default product of `channel`, a word (with the whitespace after it) at
/// a time, so that the deltas join back into exactly `text`.
fn stream_words(task: &mut Task, channel: Channel, text: &str) -> Result<(), ReportError> {
    for word in text.split_inclusive(char::is_whitespace) {
        match channel {
            Channel::Answer => task.say(word)?,
            Channel::Reasoning => task.think(word)?,
        }
    }
    Ok(())
}

/// `think X`: reasoning first, then the answer.
fn think(task: &mut Task, topic: &str) -> Result<(), ReportError> {
    stream_words(
        task,
        Channel::Reasoning,
        &format!("Let me think about {topic}."),
    )?;
    stream_words(task, Channel::Answer, &format!("thought about {topic}"))
}

/// `tool X`: a tool call and its result, then the answer.
fn lookup(task: &mut Task, query: &str) -> Result<(), ReportError> {
    task.tool_call(LOOKUP_CALL, "lookup", &json!({ "query": query }))?;
    let found = ToolOutput::Json(json!({ "found": query }));
    task.tool_result(LOOKUP_CALL, found, false)?;
    stream_words(task, Channel::Answer, &format!("found {query}"))
}

/// `slow X`: 20 deltas with a pause before each but the first. A cancel meanwhile makes the next
/// delta fail with task-ended, which ends the loop.
fn slow(task: &mut Task) -> Result<(), ReportError> {
    for i in 1..=SLOW_DELTAS {
        if i > 1 {
            std::thread::sleep(SLOW_PAUSE);
        }
        let delta = if i < SLOW_DELTAS {
            format!("{i} ")
        } else {
            i.to_string()
        };
        task.say(&delta)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use aiphost_sdk::testing::{MockHost, Report, Turn};
    use aiphost_sdk::{ANSWER_PRODUCT, Failure, REASONING_PRODUCT, State};

    use super::*;

    fn start(host: &mut MockHost<Concierge>, text: &str) -> Turn {
        host.start(vec![DataItem::text(text)])
    }

    fn transcript(turn: &Turn) -> Vec<String> {
        turn.reports.iter().map(ToString::to_string).collect()
    }

    /// The deltas of `channel` in `turn`, the closing one (empty, `last`) included.
    fn deltas(turn: &Turn, wanted: Channel) -> Vec<(String, bool)> {
        turn.reports
            .iter()
            .filter_map(|r| match r {
                Report::Text {
                    channel,
                    text,
                    last,
                    ..
                } if *channel == wanted => Some((text.clone(), *last)),
                _ => None,
            })
            .collect()
    }

    fn answer_text(turn: &Turn) -> Option<&str> {
        turn.product(ANSWER_PRODUCT)?.data_items.first()?.as_text()
    }

    #[test]
    fn commands_are_read_from_the_first_word() {
        assert_eq!(Command::parse("  think  a b "), Command::Think("a b"));
        assert_eq!(Command::parse("tool x"), Command::Tool("x"));
        assert_eq!(Command::parse("form"), Command::Form);
        assert_eq!(Command::parse("fail\tboom"), Command::Fail("boom"));
        assert_eq!(Command::parse("slow x"), Command::Slow);
        assert_eq!(Command::parse("reply hi"), Command::Reply("hi"));
        assert_eq!(Command::parse("Think x"), Command::Echo("Think x"));
        assert_eq!(Command::parse("thinking x"), Command::Echo("thinking x"));
        assert_eq!(Command::parse(""), Command::Echo(""));
    }

    #[test]
    fn think_streams_reasoning_then_the_answer() {
        let mut host = MockHost::<Concierge>::new();
        let turn = start(&mut host, "think dinner plans");
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert_eq!(turn.thought(), "Let me think about dinner plans.");
        assert_eq!(turn.said(), "thought about dinner plans");
        assert_eq!(
            deltas(&turn, Channel::Answer),
            [
                ("thought ".into(), false),
                ("about ".into(), false),
                ("dinner ".into(), false),
                ("plans".into(), false),
                (String::new(), true),
            ]
        );
        assert_eq!(
            deltas(&turn, Channel::Reasoning).last(),
            Some(&(String::new(), true))
        );
        // The reasoning comes first, the answer after it.
        let first_answer = transcript(&turn)
            .iter()
            .position(|r| r.starts_with("text answer/answer"));
        let last_reasoning = transcript(&turn)
            .iter()
            .position(|r| r == r#"text reasoning/reasoning last=false "plans.""#);
        assert!(last_reasoning < first_answer, "{:?}", transcript(&turn));
        let reasoning = turn.product(REASONING_PRODUCT).expect("the reasoning");
        assert_eq!(
            reasoning.data_items[0].as_text(),
            Some("Let me think about dinner plans.")
        );
        assert_eq!(answer_text(&turn), Some("thought about dinner plans"));
    }

    #[test]
    fn tool_calls_lookup_then_answers() {
        let mut host = MockHost::<Concierge>::new();
        let turn = start(&mut host, "tool the weather");
        assert_eq!(turn.error, None);
        assert_eq!(
            transcript(&turn),
            [
                "status accepted []",
                "status working []",
                r#"tool-call lookup-1 lookup {"query":"the weather"}"#,
                r#"tool-result lookup-1 error=false json:{"found":"the weather"}"#,
                r#"text answer/answer last=false "found ""#,
                r#"text answer/answer last=false "the ""#,
                r#"text answer/answer last=false "weather""#,
                r#"text answer/answer last=true """#,
                "status awaiting-completion []",
            ]
        );
        assert_eq!(answer_text(&turn), Some("found the weather"));
    }

    #[test]
    fn form_asks_for_the_trip_then_answers_with_it() {
        let mut host = MockHost::<Concierge>::new();
        let turn = start(&mut host, "form a holiday");
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::AwaitingInput));
        let form = turn.form.as_ref().expect("the trip form");
        assert_eq!(form.request_id, "trip");
        assert_eq!(form.title, "Trip");
        assert_eq!(
            form.schema,
            json!({
                "type": "object",
                "required": ["city", "days"],
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1}
                }
            })
        );
        assert!(turn.said().is_empty());

        let turn = host.answer_form(&turn.task_id, json!({"city": "Oslo", "days": 3}));
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert_eq!(turn.said(), "Oslo for 3 days");
        assert_eq!(deltas(&turn, Channel::Answer).len(), 5);
        assert_eq!(answer_text(&turn), Some("Oslo for 3 days"));
    }

    #[test]
    fn an_answer_that_does_not_fit_asks_again_and_text_is_a_new_command() {
        let mut host = MockHost::<Concierge>::new();
        let asked = start(&mut host, "form").task_id;
        let turn = host.answer_form(&asked, json!({"city": "Oslo", "days": "three"}));
        assert_eq!(turn.state, Some(State::AwaitingInput));
        assert_eq!(turn.form.map(|f| f.request_id).as_deref(), Some("trip"));

        // Text instead of an answer: read as a command like any other.
        let turn = host.continue_(&asked, vec![DataItem::text("hello again")]);
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert_eq!(turn.said(), "hello again");
    }

    #[test]
    fn fail_fails_with_the_code() {
        let mut host = MockHost::<Concierge>::new();
        let turn = start(&mut host, "fail out of coffee");
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::Failed));
        assert_eq!(
            turn.failure,
            Some(Failure::new("CONCIERGE_FAILED", "out of coffee"))
        );
        assert_eq!(turn.text(), "out of coffee");
    }

    #[test]
    fn slow_streams_twenty_deltas() {
        let mut host = MockHost::<Concierge>::new();
        let turn = start(&mut host, "slow count");
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        let answer = deltas(&turn, Channel::Answer);
        // 20 deltas and the SDK's closing one.
        assert_eq!(answer.len(), 21);
        assert_eq!(answer[0], ("1 ".into(), false));
        assert_eq!(answer[19], ("20".into(), false));
        assert_eq!(
            turn.said(),
            (1..=20)
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
    }

    #[test]
    fn slow_stops_quietly_when_canceled() {
        let mut host = MockHost::<Concierge>::new();
        // accepted, working and five deltas; then the Leader cancels.
        host.cancel_after(7);
        let turn = start(&mut host, "slow count");
        assert_eq!(turn.error, None);
        assert_eq!(turn.state, Some(State::Canceled));
        assert_eq!(deltas(&turn, Channel::Answer).len(), 5);
        assert_eq!(
            host.history(&turn.task_id),
            [State::Accepted, State::Working, State::Canceled]
        );
    }

    #[test]
    fn reply_answers_without_a_task() {
        let mut host = MockHost::<Concierge>::new();
        let turn = start(&mut host, "reply hello there");
        assert_eq!(turn.error, None);
        assert_eq!(transcript(&turn), ["reply [text:hello there]"]);
        assert_eq!(turn.reply, Some(vec![DataItem::text("hello there")]));
        assert_eq!(turn.state, None);
        assert!(host.task_ids().is_empty());

        // On a continue there is a task already: the reply is the answer.
        let task = start(&mut host, "hi").task_id;
        let turn = host.continue_(&task, vec![DataItem::text("reply later")]);
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert_eq!(turn.said(), "later");
    }

    #[test]
    fn anything_else_is_echoed_word_by_word() {
        let mut host = MockHost::<Concierge>::new();
        let turn = host.start(vec![DataItem::text("Hello"), DataItem::text("big  world")]);
        assert_eq!(turn.error, None);
        assert_eq!(
            deltas(&turn, Channel::Answer),
            [
                ("Hello ".into(), false),
                ("big ".into(), false),
                (" ".into(), false),
                ("world".into(), false),
                (String::new(), true),
            ]
        );
        assert_eq!(answer_text(&turn), Some("Hello big  world"));
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        let turn = host.complete(&turn.task_id);
        assert_eq!(turn.state, Some(State::Completed));

        // No text at all: nothing to echo, the task still rests.
        let turn = host.start(vec![DataItem::data(json!({"a": 1}))]);
        assert_eq!(turn.state, Some(State::AwaitingCompletion));
        assert!(turn.products.is_empty());
    }
}
