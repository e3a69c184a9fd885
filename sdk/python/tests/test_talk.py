"""The calls of a partner that talks to people (aiphost:partner@0.2.0) through the mock host: text
deltas, tool activity, usage, forms, failures with a code and plain replies, with the host's checks
and what the mock records of each."""

from __future__ import annotations

import math
from typing import Any

import pytest

from aiphost_sdk import (
    Channel,
    DataItem,
    Decision,
    EndReason,
    Failure,
    Form,
    Json,
    LogLevel,
    Outcome,
    Partner,
    Product,
    ReportError,
    State,
    Task,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    form_answer,
)
from aiphost_sdk.testing import FormAnswerError, MockHost

TRIP = Form(
    "trip",
    "Trip",
    {
        "type": "object",
        "required": ["city", "days"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    },
    description="Where to, and for how long?",
)


def refusal(call: Any) -> ReportError:
    """The ReportError ``call()`` raises."""
    with pytest.raises(ReportError) as e:
        call()
    return e.value


class Talker(Partner):
    """Thinks, calls a tool, reports usage and streams its answer word by word."""

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        text = " ".join(t for t in (i.as_text() for i in input) if t)
        task.think("reading ")
        task.think("the text")
        task.tool_call("c1", "count", {"text": text})
        task.tool_result("c1", {"words": len(text.split())})
        task.usage(model="tiny", input_tokens=3, output_tokens=2)
        for i, word in enumerate(text.split()):
            task.say(word if i == 0 else f" {word}")
        return Outcome.done()


def test_deltas_are_merged_into_products_and_closed_before_awaiting_completion() -> None:
    turn = MockHost(Talker).start([DataItem.text("hello there world")])
    assert turn.error is None and turn.refused == []
    assert turn.state == State.AWAITING_COMPLETION
    assert [r.kind for r in turn.reports] == [
        "status",
        "status",
        "delta",
        "delta",
        "tool-call",
        "tool-result",
        "usage",
        "delta",
        "delta",
        "delta",
        "delta",  # the SDK closes "reasoning" ...
        "delta",  # ... and "answer", in the order they were opened
        "status",
    ]
    assert turn.deltas[-2:] == [
        TextDelta("reasoning", Channel.REASONING, "", last=True),
        TextDelta("answer", Channel.ANSWER, "", last=True),
    ]
    assert turn.said() == turn.streamed() == "hello there world"
    assert turn.thought() == turn.streamed("reasoning") == "reading the text"
    # The host keeps one text item per channel, marked with its kind.
    assert turn.product("answer").items == (
        DataItem.text("hello there world").with_metadata({"aiphost.kind": "answer"}),
    )
    assert turn.product("reasoning").items[0].as_text() == "reading the text"
    assert turn.tool_calls == [ToolCall("c1", "count", {"text": "hello there world"})]
    assert turn.tool_results == [ToolResult("c1", Json({"words": 3}))]
    assert turn.usages == [Usage("tiny", 3, 2, None)]


def test_a_product_closed_by_the_partner_is_not_closed_again() -> None:
    class Closer(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            task.stream_text("notes", "reasoning", "a")
            task.stream_text("notes", Channel.ANSWER, "b", last=True)
            task.say("c", product_id="other")
            task.close_streams()
            return Outcome.reply([Product("extra").with_item(DataItem.text("x"))], "done")

    turn = MockHost(Closer).start()
    assert [(d.product_id, d.text, d.last) for d in turn.deltas] == [
        ("notes", "a", False),
        ("notes", "b", True),
        ("other", "c", False),
        ("other", "", True),
    ]
    assert [r.kind for r in turn.reports][-2:] == ["chunk", "status"]
    assert turn.text() == "done"
    # Both channels in one product: two text items, each with its kind.
    assert [i.metadata for i in turn.product("notes").items] == [
        {"aiphost.kind": "reasoning"},
        {"aiphost.kind": "answer"},
    ]


def test_the_host_checks_of_a_delta() -> None:
    host = MockHost(Talker)
    task = host.task()
    assert refusal(lambda: task.say("")).kind == "invalid-data"  # empty only with last
    assert refusal(lambda: task.say("x", product_id="")).kind == "invalid-data"
    assert refusal(lambda: task.say("x", product_id="a" * 257)).kind == "invalid-data"
    assert refusal(lambda: task.say("x", product_id="a\nb")).kind == "invalid-data"
    assert refusal(lambda: task.say("x" * (64 * 1024 + 1))).kind == "invalid-data"
    task.say("x" * 64 * 1024)
    task.stream_text("answer", "answer", "", last=True)
    with pytest.raises(ValueError):
        task.stream_text("answer", "shouting", "x")


def test_no_delta_before_the_decision() -> None:
    seen: list[str] = []

    class Eager(Partner):
        def decide(self, task: Task, input: list[DataItem]) -> Decision:
            seen.append(refusal(lambda: task.say("hi")).kind)
            seen.append(refusal(lambda: task.tool_call("c", "t", {})).kind)
            return Decision.reject("no")

    turn = MockHost(Eager).start()
    assert seen == ["invalid-transition", "invalid-transition"]
    assert turn.state == State.REJECTED
    assert [r.kind for r in turn.refused] == ["delta", "tool-call"]


def test_tool_outputs_text_json_and_json_strings() -> None:
    task = MockHost(Talker).task()
    host = task._host
    assert isinstance(host, MockHost)
    task.tool_call("c1", "lookup", {"query": "x"})
    task.tool_result("c1", "plain text")
    task.tool_result("c1", Json("a JSON string"))
    task.tool_result("c1", [1, 2])
    task.tool_result("c1", None, is_error=True)
    results = [r.result for r in host._reports if r.kind == "tool-result"]
    assert results == [
        ToolResult("c1", "plain text"),
        ToolResult("c1", Json("a JSON string")),
        ToolResult("c1", Json([1, 2])),
        ToolResult("c1", Json(None), is_error=True),
    ]


def test_the_checks_of_tool_activity_and_usage() -> None:
    task = MockHost(Talker).task()
    with pytest.raises(TypeError):
        task.tool_call("c", "t", ["not", "an", "object"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        task.tool_call("c", "t", {"set": {1}})
    with pytest.raises(ValueError):
        task.tool_result("c", math.nan)  # not JSON
    with pytest.raises(ValueError):
        task.usage(input_tokens=-1)
    with pytest.raises(ValueError):
        task.usage(output_tokens=True)
    assert refusal(lambda: task.tool_call("", "t", {})).kind == "invalid-data"
    assert refusal(lambda: task.tool_call("c", "t" * 129, {})).kind == "invalid-data"
    big = {"q": "x" * 64 * 1024}
    assert refusal(lambda: task.tool_call("c", "t", big)).kind == "invalid-data"
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(64):
        inner["a"] = {}
        inner = inner["a"]
    assert refusal(lambda: task.tool_call("c", "t", deep)).kind == "invalid-data"
    assert refusal(lambda: task.tool_result("c", "x" * (256 * 1024 + 1))).kind == "invalid-data"
    task.tool_result("c", "x" * 256 * 1024)
    task.usage()


def test_the_activity_cap() -> None:
    class Chatty(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            task.say("a")
            task.usage(model="m")
            task.say("b")
            # The cap is used up: the closing delta is refused, and the work still finishes.
            return Outcome.done()

    host = MockHost(Chatty, max_activity_events=3)
    turn = host.start()
    assert turn.state == State.AWAITING_COMPLETION and turn.error is None
    [refused] = turn.refused
    assert refused.kind == "delta" and refused.refused is not None
    assert refused.refused.kind == "limit-reached" and not refused.refused.ends_task
    assert "at most 3 activity events" in str(refused.refused)
    assert [r.level for r in turn.logs] == [LogLevel.WARN]
    # Per task, across invocations; a status is not activity.
    turn = host.continue_(turn.task_id, [DataItem.text("again")])
    assert turn.state == State.FAILED
    assert turn.error is not None and "limit reached" in turn.error


class Planner(Partner):
    """Asks with the trip form, then answers from the form's values (or asks again on text)."""

    def __init__(self) -> None:
        self.inputs: list[list[DataItem]] = []

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        self.inputs.append(input)
        answer = form_answer(input, "trip")
        if answer is None:
            return Outcome.ask(TRIP, [DataItem.data({"hint": "a city and a number of days"})])
        task.say(f"{answer['city']} for {answer['days']} days")
        return Outcome.done()


def test_a_form_asks_and_its_answer_arrives_tagged() -> None:
    planner = Planner()
    host = MockHost(planner)
    turn = host.start([DataItem.text("plan")])
    assert turn.state == State.AWAITING_INPUT
    assert turn.form == TRIP
    assert turn.status_items == [DataItem.data({"hint": "a city and a number of days"})]
    assert turn.reports[-1].kind == "ask" and turn.reports[-1].form == TRIP

    # Text is no answer: the partner hears it as it is, and asks again.
    turn = host.continue_(turn.task_id, [DataItem.text("not sure")])
    assert planner.inputs[-1] == [DataItem.text("not sure")]
    assert turn.form == TRIP

    # An answer that does not fit the schema is refused before the partner hears of it.
    with pytest.raises(FormAnswerError) as e:
        host.continue_(turn.task_id, [DataItem.data({"city": 5, "days": 0})])
    assert e.value.errors == [
        ("/city", "5 is not of type 'string'"),
        ("/days", "0 is less than the minimum of 1"),
    ]
    with pytest.raises(FormAnswerError) as e:
        host.continue_(turn.task_id, [DataItem.data({"city": "Paris"})])
    assert e.value.errors == [("", "'days' is a required property")]
    assert host.state(turn.task_id) == State.AWAITING_INPUT
    assert len(planner.inputs) == 2

    # A plain data item is the answer: the host tags it with the request id.
    turn = host.continue_(turn.task_id, [DataItem.data({"city": "Paris", "days": 3})])
    assert planner.inputs[-1] == [
        DataItem.data({"city": "Paris", "days": 3}).with_metadata(
            {"aiphost.kind": "input-answer", "requestId": "trip"}
        )
    ]
    assert turn.state == State.AWAITING_COMPLETION
    assert turn.form is None
    assert turn.said() == "Paris for 3 days"
    with pytest.raises(ValueError):
        host.answer_form(turn.task_id, {"city": "Oslo", "days": 1})


def test_answer_form_continues_with_a_tagged_answer() -> None:
    host = MockHost(Planner)
    turn = host.start()
    with pytest.raises(FormAnswerError):
        host.answer_form(turn.task_id, {"city": "Oslo"})
    turn = host.answer_form(turn.task_id, {"city": "Oslo", "days": 2})
    assert turn.said() == "Oslo for 2 days"


def test_form_answer_reads_only_its_own_request() -> None:
    tag = {"aiphost.kind": "input-answer", "requestId": "trip"}
    items = [
        DataItem.text("hi"),
        DataItem.data({"x": 1}),
        DataItem.data({"y": 2}).with_metadata({**tag, "requestId": "other"}),
        DataItem.data({"city": "Rome"}).with_metadata(tag),
    ]
    assert form_answer(items, "trip") == {"city": "Rome"}
    assert form_answer(items, "other") == {"y": 2}
    assert form_answer(items[:2], "trip") is None


@pytest.mark.parametrize(
    "form",
    [
        Form("trip plan", "Trip", {"type": "object"}),  # a space in the request id
        Form("trip", "", {"type": "object"}),
        Form("trip", "Trip", {"type": "array"}),
        Form("trip", "Trip", {"properties": {}}),
        Form("trip", "Trip", {"type": "object", "$ref": "https://example.com/s.json"}),
        Form("trip", "Trip", {"type": "object", "description": "x" * 64 * 1024}),
        Form("trip", "Trip", {"type": "object"}, description="x" * (4 * 1024 + 1)),
    ],
)
def test_a_form_the_host_refuses_fails_the_task(form: Form) -> None:
    class Asker(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            return Outcome.ask(form)

    turn = MockHost(Asker).start()
    assert turn.state == State.FAILED
    assert turn.error is not None and "the host refused a report: invalid data" in turn.error
    assert turn.refused[0].kind == "ask"


def test_a_form_schema_is_a_dict_and_a_text_question_keeps_working() -> None:
    with pytest.raises(TypeError):
        Form("trip", "Trip", '{"type": "object"}')  # type: ignore[arg-type]
    outcome = Outcome.ask("Where to?", [DataItem.data({"missing": ["city"]})])
    assert outcome.items == (DataItem.text("Where to?"), DataItem.data({"missing": ["city"]}))
    assert outcome.form is None


def test_fail_with_a_code() -> None:
    class Failing(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            code = input[0].as_text() if input else "RATE_LIMITED"
            return Outcome.fail_with(code or "", "slow down", retryable=True, detail={"after": 5})

    host = MockHost(Failing)
    turn = host.start()
    assert turn.state == State.FAILED and turn.error is None
    assert turn.failure == Failure("RATE_LIMITED", "slow down", True, {"after": 5})
    assert turn.text() == "slow down"
    assert turn.reports[-1].kind == "fail"

    turn = host.start([DataItem.text("lower_case")])
    assert turn.state == State.FAILED
    assert turn.failure is None
    assert turn.error is not None and "a failure code is 1-64 bytes" in turn.error
    with pytest.raises(TypeError):
        Failure("X", "y", detail=["not", "an", "object"])  # type: ignore[arg-type]


def test_a_plain_reply_creates_no_task() -> None:
    worked: list[bool] = []

    class Replier(Partner):
        def decide(self, task: Task, input: list[DataItem]) -> Decision:
            text = input[0].as_text() if input else None
            if text == "twice":
                decision = Decision.reply("first")
                task.set_status(State.ACCEPTED)
                return decision
            return Decision.reply([DataItem.text("hi"), DataItem.data({"n": 1})])

        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            worked.append(True)
            return Outcome.done()

    host = MockHost(Replier)
    turn = host.start()
    assert turn.reply == [DataItem.text("hi"), DataItem.data({"n": 1})]
    assert turn.state is None and turn.error is None
    assert [r.kind for r in turn.reports] == ["reply"]
    assert host.history(turn.task_id) == []
    assert worked == []
    # After a decision, a reply is refused.
    turn = host.start([DataItem.text("twice")])
    assert turn.reply is None
    assert turn.refused[0].kind == "reply"
    assert turn.refused[0].refused is not None
    assert turn.refused[0].refused.kind == "invalid-transition"


def test_reports_after_a_reply_are_refused_as_task_ended() -> None:
    # The SDK returns right after a reply; drive the mock as a start that replied, directly.
    host = MockHost(Talker)
    task = host.task("t")
    host._event = "start"
    host._tasks["t"].state = None
    host.reply([DataItem.text("x")])
    assert refusal(lambda: task.say("more")).kind == "task-ended"
    assert refusal(lambda: task.set_status(State.ACCEPTED)).kind == "task-ended"


def test_a_reply_only_answers_a_start() -> None:
    task = MockHost(Talker).task()
    host = task._host
    assert isinstance(host, MockHost)
    assert refusal(lambda: host.reply([DataItem.text("x")])).kind == "invalid-transition"


def test_a_cancel_while_streaming_stops_the_partner_quietly() -> None:
    class Slow(Partner):
        def __init__(self) -> None:
            self.sent = 0
            self.ended: list[EndReason] = []

        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            for i in range(20):
                task.say(f"{i} ")  # raises task-ended once the cancel landed: the SDK stops
                self.sent += 1
            return Outcome.done()

        def canceled(self, task: Task, reason: EndReason) -> None:
            self.ended.append(reason)

    slow = Slow()
    host = MockHost(slow)
    turn = host.start(cancel_after=5)  # accepted, working, three deltas
    assert turn.error is None
    assert turn.state == State.CANCELED
    assert slow.sent == 3
    assert turn.streamed() == "0 1 2 "
    assert turn.refused[-1].refused is not None and turn.refused[-1].refused.ends_task
    assert slow.ended == [EndReason.LEADER]


def test_deltas_count_against_max_products_bytes() -> None:
    class Long(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            for _ in range(10):
                task.say("x" * 40)
            return Outcome.done()

    turn = MockHost(Long).start(max_products_bytes=100)
    assert turn.error is None
    assert turn.state == State.FAILED
    assert len(turn.deltas) == 2
    assert turn.text() == "the products exceed maxProductsBytes (100)"
