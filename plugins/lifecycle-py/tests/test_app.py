"""The lifecycle fixture against the SDK's mock host: the same walk the end-to-end tests make."""

from app import Lifecycle

from aiphost_sdk import DataItem, LogLevel, State
from aiphost_sdk.testing import MockHost


def test_ask_continue_complete_and_the_hook() -> None:
    host = MockHost(Lifecycle)
    turn = host.start([DataItem.text("ask")])
    assert (turn.state, turn.text()) == (State.AWAITING_INPUT, "what next? (turn 1)")
    turn = host.continue_(turn.task_id, [DataItem.text("hi")], params={"k": 1})
    assert turn.product("echo").items[1].as_data() == {
        "turn": 2,
        "totalTurns": 2,
        "params": {"k": 1},
    }
    host.complete(turn.task_id)
    ended = host.start([DataItem.text("ended?")])
    assert ended.product("ended").items[0].as_text() == f"{turn.task_id} completed by leader"


def test_raise_fails_with_the_reason_and_logs_the_traceback() -> None:
    turn = MockHost(Lifecycle).start([DataItem.text("raise")])
    assert turn.state == State.FAILED
    assert turn.text().startswith(
        "the partner failed: work raised ValueError: asked to raise on turn 1 (at app.py line"
    )
    assert any(
        r.level == LogLevel.ERROR and "ValueError" in r.fields["traceback"] for r in turn.logs
    )


def test_reject_and_fail() -> None:
    host = MockHost(Lifecycle)
    assert host.start([DataItem.text("reject")]).text() == "asked to reject"
    assert host.start([DataItem.text("fail")]).state == State.FAILED
