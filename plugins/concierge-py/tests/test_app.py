"""Every flow of the concierge against the SDK's mock host (which applies the host's checks to each
report), and its parsing of the first word."""

import time

import pytest
from app import FAIL_CODE, TRIP, Concierge, command

from aiphost_sdk import Channel, DataItem, Failure, Json, State, TextDelta, ToolCall, ToolResult
from aiphost_sdk.testing import FormAnswerError, MockHost, Turn


def start(text: str) -> tuple[MockHost, Turn]:
    """A mock host serving a concierge whose ``slow`` does not wait, and a task started with
    ``text``."""
    host = MockHost(Concierge(pause=0))
    return host, host.start([DataItem.text(text)])


def answered(turn: Turn, answer: str, before: str = "") -> None:
    """``turn`` streamed ``answer`` word by word, closed it, and rests in awaiting-completion. The
    deltas extend the product ``answer``, after the text ``before`` of earlier turns."""
    assert turn.error is None and turn.refused == []
    assert turn.state == State.AWAITING_COMPLETION
    words = [d.text for d in turn.deltas if d.channel == Channel.ANSWER and not d.last]
    assert words == [w if i == 0 else f" {w}" for i, w in enumerate(answer.split())]
    assert turn.deltas[-1] == TextDelta("answer", Channel.ANSWER, "", last=True)
    assert turn.said() == answer
    assert turn.product("answer").items[0].as_text() == before + answer


def test_the_first_word_picks_the_flow() -> None:
    assert command("Think  about\ndinner ") == ("think", "about\ndinner")
    assert command("tool") == ("tool", "")
    assert command("  ") == ("", "")


def test_think_streams_reasoning_then_the_answer() -> None:
    _, turn = start("think about dinner")
    assert turn.thought() == "Let me think about about dinner."
    reasoning = [i for i, d in enumerate(turn.deltas) if d.channel == Channel.REASONING]
    answer = [i for i, d in enumerate(turn.deltas) if d.channel == Channel.ANSWER and d.text]
    assert max(reasoning[:-1]) < min(answer), "the reasoning comes before the answer"
    assert turn.product("reasoning").items[0].as_text() == "Let me think about about dinner."
    answered(turn, "thought about about dinner")


def test_tool_calls_lookup_then_answers() -> None:
    _, turn = start("tool weather in Oslo")
    assert turn.tool_calls == [ToolCall("lookup-1", "lookup", {"query": "weather in Oslo"})]
    assert turn.tool_results == [ToolResult("lookup-1", Json({"found": "weather in Oslo"}))]
    kinds = [r.kind for r in turn.reports]
    assert kinds.index("tool-call") < kinds.index("tool-result") < kinds.index("delta")
    answered(turn, "found weather in Oslo")


def test_form_asks_then_answers_from_the_values() -> None:
    host, turn = start("form holiday")
    assert turn.state == State.AWAITING_INPUT
    assert turn.form == TRIP
    assert (TRIP.request_id, TRIP.title) == ("trip", "Trip")
    assert TRIP.schema == {
        "type": "object",
        "required": ["city", "days"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    }
    # A wrong answer never reaches the partner.
    with pytest.raises(FormAnswerError) as e:
        host.answer_form(turn.task_id, {"city": "Paris", "days": 0})
    assert e.value.errors == [("/days", "0 is less than the minimum of 1")]
    turn = host.answer_form(turn.task_id, {"city": "Paris", "days": 3})
    answered(turn, "Paris for 3 days")


def test_a_plain_data_item_answers_the_form_too() -> None:
    host, turn = start("form")
    turn = host.continue_(turn.task_id, [DataItem.data({"city": "Rome", "days": 1})])
    answered(turn, "Rome for 1 days")


def test_fail_fails_with_the_code() -> None:
    _, turn = start("fail out of coffee")
    assert turn.state == State.FAILED and turn.error is None
    assert turn.failure == Failure(FAIL_CODE, "out of coffee", retryable=False)
    assert turn.text() == "out of coffee"


def test_slow_streams_twenty_deltas_apart() -> None:
    host = MockHost(Concierge(pause=0.01))
    began = time.monotonic()
    turn = host.start([DataItem.text("slow down")])
    assert time.monotonic() - began >= 19 * 0.01
    answered(turn, " ".join(str(i) for i in range(1, 21)))
    assert len([d for d in turn.deltas if d.text]) == 20


def test_slow_stops_quietly_when_canceled() -> None:
    host = MockHost(Concierge(pause=0))
    turn = host.start([DataItem.text("slow")], cancel_after=7)  # accepted, working, 5 deltas
    assert turn.error is None
    assert turn.state == State.CANCELED
    assert turn.said() == "1 2 3 4 5"
    [refused] = turn.refused
    assert refused.refused is not None and refused.refused.kind == "task-ended"


def test_reply_answers_with_no_task() -> None:
    host, turn = start("reply hello there")
    assert turn.reply == [DataItem.text("hello there")]
    assert turn.state is None
    assert [r.kind for r in turn.reports] == ["reply"]
    assert host.history(turn.task_id) == []


def test_reply_on_a_continue_answers_in_text() -> None:
    host, turn = start("hi")
    turn = host.continue_(turn.task_id, [DataItem.text("reply hello")])
    answered(turn, "hello", before="hi")


def test_anything_else_is_echoed_word_by_word() -> None:
    host, turn = start("Hello  there,\nworld")
    answered(turn, "Hello there, world")
    # A continue starts over with its own first word.
    turn = host.continue_(turn.task_id, [DataItem.text("think again")])
    assert turn.thought() == "Let me think about again."
    answered(turn, "thought about again", before="Hello there, world")
    host.complete(turn.task_id)
    assert host.state(turn.task_id) == State.COMPLETED


def test_no_text_gets_the_help() -> None:
    _, turn = start("")
    assert turn.state == State.AWAITING_INPUT
    assert turn.text().startswith("Send some text: its first word picks what I do")
