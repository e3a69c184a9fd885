"""The run loop: one invocation in, the reports its Partner's answers imply out. The same code runs
inside the component (``_guest``) and under ``aiphost_sdk.testing``. Not public API."""

from __future__ import annotations

import json
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

from . import _host
from ._host import Host
from .errors import LogLevel, ReportError
from .items import DataItem
from .partner import Decision, Outcome, Partner
from .state import EndReason, State
from .task import Task

# The reason a Leader sees for an exception is kept short; the traceback is in the host's log.
MAX_REASON = 300
# The traceback logged is cut to its last this many characters (the innermost frames matter most).
MAX_TRACEBACK = 8000


@dataclass
class Invocation:
    """Everything the host says about one invocation, in SDK types."""

    event: str
    """``"start"``, ``"continue"``, ``"complete"`` or ``"cancel"``."""
    task_id: str
    end_reason: EndReason | None = None
    session_id: str | None = None
    leader_id: str | None = None
    state: State | None = None
    items: list[DataItem] = field(default_factory=list)
    max_products_bytes: int | None = None
    products_bytes: int = 0
    command_params: str = "{}"


class _Stop(Exception):
    """Ends the run loop early with the invocation's error (``None``: return quietly)."""

    def __init__(self, error: str | None) -> None:
        super().__init__(error)
        self.error = error


def parse_object(text: str, what: str) -> dict[str, Any]:
    """Parses JSON text the host sent where the contract promises an object."""
    try:
        value = json.loads(text)
    except ValueError as e:
        raise _Stop(f"aiphost-sdk: the host sent {what} that is not valid JSON: {e}") from e
    if not isinstance(value, dict):
        raise _Stop(f"aiphost-sdk: the host sent {what} that is not a JSON object")
    return value


def run(partner: Partner, invocation: Invocation, host: Host) -> str | None:
    """Handles one invocation for ``partner`` against ``host``. Returns ``None``, or the error the
    invocation ends with (the host then fails the task with it, if it is not final yet)."""
    previous = _host.current
    _host.current = host
    try:
        _run(partner, invocation, host)
        return None
    except _Stop as stop:
        return stop.error
    finally:
        _host.current = previous


def _run(partner: Partner, inv: Invocation, host: Host) -> None:
    params: dict[str, Any] = {}
    if inv.command_params.strip():
        params = parse_object(inv.command_params, "commandParams")
    task = Task(
        host,
        id=inv.task_id,
        event=inv.event,
        session_id=inv.session_id,
        leader_id=inv.leader_id,
        initial_state=inv.state,
        max_products_bytes=inv.max_products_bytes,
        products_bytes=inv.products_bytes,
        params=params,
    )
    items = list(inv.items)
    reason = inv.end_reason or EndReason.LEADER
    if inv.event == "start":
        decision = _call(host, "decide", partner.decide, task, list(items))
        if not isinstance(decision, Decision):
            raise _Stop(f"decide returned {decision!r}, not a Decision")
        if decision.rejection is not None:
            _report(task, State.REJECTED, [DataItem.text(decision.rejection)])
            return
        if decision.reply_items is not None:
            reply = list(decision.reply_items)
            _guarded(lambda: host.reply(reply))
            return
        _report(task, State.ACCEPTED, [])
        _report(task, State.WORKING, [])
        _apply(host, task, _call(host, "work", partner.work, task, items))
    elif inv.event == "continue":
        _apply(host, task, _call(host, "work", partner.work, task, items))
    elif inv.event == "complete":
        _call(host, "completed", partner.completed, task, reason)
    elif inv.event == "cancel":
        _call(host, "canceled", partner.canceled, task, reason)
    else:
        raise _Stop(f"aiphost-sdk: unknown event {inv.event!r}")


def _guarded(report: Callable[[], None]) -> None:
    """Makes a report for the partner. Refused because the task is over, it stops quietly (the
    Leader canceled meanwhile, or the host failed the task); refused otherwise, it ends the
    invocation with an error."""
    try:
        report()
    except ReportError as e:
        raise _Stop(None if e.ends_task else f"the host refused a report: {e}") from e


def _report(task: Task, state: State, items: list[DataItem]) -> None:
    """Moves the task to ``state`` with ``items`` (see :func:`_guarded`)."""
    _guarded(lambda: task.set_status(state, items))


def _close_streams(host: Host, task: Task) -> None:
    """Closes the products the partner streamed text into. The activity cap being used up is no
    reason to fail finished work: the text is all there, only the mark that it is whole is missing,
    so that refusal is logged and the work still finishes."""
    try:
        task.close_streams()
    except ReportError as e:
        if e.kind != "limit-reached":
            raise _Stop(None if e.ends_task else f"the host refused a report: {e}") from e
        host.log(LogLevel.WARN, "streamed products left open: the activity cap is used up", [])


def _apply(host: Host, task: Task, outcome: object) -> None:
    if not isinstance(outcome, Outcome):
        raise _Stop(f"work returned {outcome!r}, not an Outcome")
    if outcome.kind == "need-input":
        items = list(outcome.items)
        form = outcome.form
        if form is None:
            _report(task, State.AWAITING_INPUT, items)
        else:
            _guarded(lambda: host.ask(form, items))
    elif outcome.kind == "done":
        _close_streams(host, task)
        for product in outcome.products:
            _guarded(partial(task.emit_chunk, product, append=False, last=True))
        _report(task, State.AWAITING_COMPLETION, list(outcome.items))
    elif outcome.kind == "fail":
        failure = outcome.failure
        if failure is None:
            _report(task, State.FAILED, [DataItem.text(outcome.reason or "")])
        else:
            _guarded(lambda: host.fail(failure))
    else:
        raise _Stop(outcome.reason or "")


T = TypeVar("T")


def _call(host: Host, what: str, method: Callable[..., T], *args: object) -> T:
    """Calls the partner's ``what``. An exception escaping it ends the invocation with a short
    reason (the host fails the task with it); its traceback goes to the host's log at error level.
    A refused report the partner let escape that says the task is over ends it quietly, as the
    SDK's own would."""
    try:
        return method(*args)
    except ReportError as e:
        if e.ends_task:
            raise _Stop(None) from e
        raise _Stop(_exception(host, what, e)) from e
    except BaseException as e:  # noqa: BLE001 - anything the partner raises fails the task, SystemExit too
        raise _Stop(_exception(host, what, e)) from e


def _exception(host: Host, what: str, e: BaseException) -> str:
    """Logs ``e`` with its traceback; returns the short reason."""
    frames = traceback.extract_tb(e.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {os.path.basename(last.filename)} line {last.lineno})"
    detail = "".join(traceback.format_exception_only(type(e), e)).strip()
    reason = f"{what} raised {detail}"
    if len(reason) > MAX_REASON:
        reason = reason[: MAX_REASON - 1] + "…"
    reason += where
    trace = "".join(traceback.format_exception(e))
    if len(trace) > MAX_TRACEBACK:
        trace = "…" + trace[-MAX_TRACEBACK:]
    try:
        host.log(
            LogLevel.ERROR,
            f"partner raised an exception in {what}",
            [("exception", detail), ("traceback", trace)],
        )
    except Exception:  # noqa: BLE001 - the reason still reaches the Leader
        pass
    return reason
