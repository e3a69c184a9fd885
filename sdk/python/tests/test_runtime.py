"""The run loop's semantics, through the mock host: the same reports as the Rust SDK's run loop."""

from __future__ import annotations

import pytest

from aiphost_sdk import (
    DataItem,
    Decision,
    EndReason,
    LogLevel,
    Outcome,
    Partner,
    Product,
    ReportError,
    State,
    Task,
    config,
    log,
)
from aiphost_sdk.testing import MockHost


class Echo(Partner):
    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        return Outcome.done([Product("echo").with_items(input)])


class Picky(Partner):
    """Rejects empty starts, counts turns in the task KV, and fails or aborts on request."""

    def __init__(self) -> None:
        self.ended: list[tuple[str, EndReason]] = []

    def decide(self, task: Task, input: list[DataItem]) -> Decision:
        assert task.is_start and task.initial_state is None and task.state is None
        return Decision.accept() if input else Decision.reject("nothing to do")

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        turns = task.kv.get_json("turns", 0) + 1
        task.kv.set_json("turns", turns)
        word = input[0].as_text() if input else None
        if word == "fail":
            return Outcome.fail("cannot")
        if word == "abort":
            return Outcome.abort("gave up")
        if word == "boom":
            return {"not": "an outcome"}  # type: ignore[return-value]
        if word == "raise":
            raise ZeroDivisionError("division by zero")
        if word == "nonsense":
            task.set_status(State.COMPLETED)
        if word == "reply":
            return Outcome.reply([Product("p").with_items(input)], "here you are")
        return Outcome.need_input(
            [DataItem.text(f"turn {turns}"), DataItem.data({"missing": ["x"]})]
        )

    def completed(self, task: Task, reason: EndReason) -> None:
        self.ended.append(("completed", reason))

    def canceled(self, task: Task, reason: EndReason) -> None:
        self.ended.append(("canceled", reason))
        task.kv.delete("turns")


def test_start_accepts_works_and_awaits_completion() -> None:
    host = MockHost(Echo)
    turn = host.start([DataItem.text("hi")])
    assert turn.error is None
    assert [(r.kind, r.state) for r in turn.reports] == [
        ("status", State.ACCEPTED),
        ("status", State.WORKING),
        ("chunk", None),
        ("status", State.AWAITING_COMPLETION),
    ]
    chunk = turn.reports[2]
    assert (chunk.append, chunk.last) == (False, True)
    assert turn.state == State.AWAITING_COMPLETION
    assert turn.product("echo").items == (DataItem.text("hi"),)
    # A continue replaces the product.
    turn = host.continue_(turn.task_id, [DataItem.data({"a": 1})])
    assert turn.product("echo").items == (DataItem.data({"a": 1}),)
    assert host.history(turn.task_id) == [
        State.ACCEPTED,
        State.WORKING,
        State.AWAITING_COMPLETION,
        State.WORKING,
        State.AWAITING_COMPLETION,
    ]


def test_reject_reports_the_reason() -> None:
    host = MockHost(Picky)
    turn = host.start([])
    assert turn.state == State.REJECTED
    assert turn.text() == "nothing to do"
    assert len(turn.reports) == 1


def test_need_input_kv_across_turns_fail_and_abort() -> None:
    host = MockHost(Picky)
    turn = host.start([DataItem.text("hello")])
    assert turn.state == State.AWAITING_INPUT
    assert turn.status_items == [DataItem.text("turn 1"), DataItem.data({"missing": ["x"]})]
    turn = host.continue_(turn.task_id, [DataItem.text("more")])
    assert turn.text() == "turn 2"
    assert host.task_kv[turn.task_id]["turns"] == b"2"

    turn = host.continue_(turn.task_id, [DataItem.text("fail")])
    assert (turn.state, turn.text(), turn.error) == (State.FAILED, "cannot", None)

    t = host.start([DataItem.text("abort")])
    assert t.error == "gave up"
    assert t.state == State.FAILED
    assert t.text() == "the partner failed: gave up"


def test_a_reply_says_something_with_its_result() -> None:
    turn = MockHost(Picky).start([DataItem.text("reply")])
    assert turn.state == State.AWAITING_COMPLETION
    assert turn.text() == "here you are"
    assert turn.product("p").items == (DataItem.text("reply"),)


def test_an_exception_fails_the_task_with_a_short_reason_and_logs_the_traceback() -> None:
    host = MockHost(Picky)
    turn = host.start([DataItem.text("raise")])
    assert turn.state == State.FAILED
    assert turn.error is not None
    assert turn.error.startswith(
        "work raised ZeroDivisionError: division by zero (at test_runtime.py line"
    )
    assert turn.text() == f"the partner failed: {turn.error}"
    [record] = [r for r in turn.logs if r.level == LogLevel.ERROR]
    assert "Traceback" in record.fields["traceback"]
    assert "raise ZeroDivisionError" in record.fields["traceback"]


def test_an_exception_in_decide_rejects_the_task() -> None:
    class Broken(Partner):
        def decide(self, task: Task, input: list[DataItem]) -> Decision:
            raise KeyError("destination")

        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            raise AssertionError("not reached")

    turn = MockHost(Broken).start([])
    assert turn.state == State.REJECTED
    assert turn.text().startswith("the partner failed: decide raised KeyError: 'destination'")


def test_work_must_return_an_outcome() -> None:
    turn = MockHost(Picky).start([DataItem.text("boom")])
    assert turn.state == State.FAILED
    assert turn.error == "work returned {'not': 'an outcome'}, not an Outcome"


def test_a_refused_report_of_the_partner_fails_the_task() -> None:
    turn = MockHost(Picky).start([DataItem.text("nonsense")])
    assert turn.state == State.FAILED
    assert (
        turn.error is not None
        and "ReportError: invalid state transition: working -> completed" in turn.error
    )


def test_reports_after_the_task_ended_stop_quietly() -> None:
    class Streamer(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            for i in range(10):
                task.emit_chunk(
                    Product("big").with_item(DataItem.text("x" * 40)), append=i > 0, last=False
                )
            return Outcome.done([])

    turn = MockHost(Streamer).start([DataItem.text("go")], max_products_bytes=100)
    # The third chunk crosses 100 bytes: the host fails the task, and the partner stops quietly.
    assert turn.error is None
    assert turn.state == State.FAILED
    assert len([r for r in turn.reports if r.kind == "chunk"]) == 3
    assert turn.text() == "the products exceed maxProductsBytes (100)"


def test_task_fields_and_params() -> None:
    seen: dict[str, object] = {}

    class Inspect(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            seen.update(
                id=task.id,
                session=task.session_id,
                leader=task.leader_id,
                params=task.params,
                left=task.products_bytes_left,
                state=task.state,
            )
            return Outcome.done([])

    MockHost(Inspect).start(
        [], task_id="t-1", params={"size": 5}, leader_id="L", max_products_bytes=100
    )
    assert seen == {
        "id": "t-1",
        "session": "session-test",
        "leader": "L",
        "params": {"size": 5},
        "left": 100,
        "state": State.WORKING,
    }


def test_complete_cancel_and_timeouts_call_the_hooks() -> None:
    partner = Picky()
    host = MockHost(partner)
    a = host.start([DataItem.text("x")])
    host.cancel(a.task_id)
    assert host.state(a.task_id) == State.CANCELED
    assert host.task_kv[a.task_id] == {}
    b = host.start([DataItem.text("reply")])
    turn = host.complete(b.task_id)
    assert turn.reports == [] and turn.error is None
    c = host.start([DataItem.text("x")])
    host.timeout(c.task_id)
    assert partner.ended == [
        ("canceled", EndReason.LEADER),
        ("completed", EndReason.LEADER),
        ("canceled", EndReason.TIMEOUT),
    ]
    with pytest.raises(ValueError):
        host.continue_(c.task_id, [])


def test_agent_kv_is_shared_and_task_kv_is_not() -> None:
    class Counter(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            total = task.agent_kv.get_json("total", 0) + 1
            task.agent_kv.set_json("total", total)
            mine = task.kv.get_json("mine", 0) + 1
            task.kv.set_json("mine", mine)
            return Outcome.done(
                [Product("n").with_item(DataItem.data({"total": total, "mine": mine}))]
            )

    host = MockHost(Counter)
    host.start([])
    turn = host.start([])
    assert turn.product("n").items[0].as_data() == {"total": 2, "mine": 1}


def test_kv_errors() -> None:
    host = MockHost(Echo, kv_value_limit=8)
    task = host.task()
    task.kv.set("raw", b"not json")
    from aiphost_sdk import KvError

    with pytest.raises(KvError) as e:
        task.kv.get_json("raw")
    assert e.value.kind == "json"
    with pytest.raises(KvError) as e:
        task.kv.set("big", b"0123456789")
    assert e.value.kind == "too-large"
    with pytest.raises(KvError):
        task.kv.set_json("set", {1, 2})
    assert task.kv.get("missing") is None


def test_log_and_config() -> None:
    class Configured(Partner):
        def work(self, task: Task, input: list[DataItem]) -> Outcome:
            log.info("working", items=len(input))
            model = config.get("MODEL")
            unset = config.get("REGION", default="none")
            try:
                config.get("SECRET")
            except config.ConfigError as e:
                denied = e.kind
            return Outcome.done(
                [Product("c").with_item(DataItem.data({"m": model, "r": unset, "s": denied}))]
            )

    host = MockHost(Configured, config={"MODEL": "small"}, granted=["REGION"])
    turn = host.start([DataItem.text("a")])
    assert turn.product("c").items[0].as_data() == {"m": "small", "r": "none", "s": "not-granted"}
    assert turn.logs[0].message == "working" and turn.logs[0].fields == {"items": "1"}
    assert turn.logs[0].task_id == turn.task_id


def test_report_error_ends_task() -> None:
    assert ReportError("task-ended").ends_task
    assert ReportError("products-too-large", limit=3).ends_task
    assert not ReportError("invalid-transition", "x").ends_task
