"""Run a partner natively in CPython against a mock host, for unit tests (pytest or any other).

The mock keeps what the real host keeps between invocations (each task's state and products, the
task and agent key-value entries), applies the same AIP state machine to the partner's reports,
records log messages, and serves config values you give it::

    from aiphost_sdk import DataItem, State
    from aiphost_sdk.testing import MockHost
    from app import Greeter

    def test_asks_then_greets():
        host = MockHost(Greeter)
        turn = host.start([])
        assert turn.state == State.AWAITING_INPUT
        turn = host.continue_(turn.task_id, [DataItem.text("Ada")])
        assert turn.state == State.AWAITING_COMPLETION
        assert turn.product("greeting").items[0].as_text() == "Hello, Ada!"
        host.complete(turn.task_id)

Each command runs one invocation, as the host would: ``start`` (decide, then work),
``continue_``, ``complete`` and ``cancel`` (the clean-up hooks), and ``timeout`` (an awaiting
timer running out). An invocation that ends with an error (an exception escaping the partner, an
``Outcome.abort``) fails the task the way the host does; the error is on the :class:`Turn`.

Every report is recorded on the :class:`Turn` (refused ones too, with the refusal) after the checks
the host makes: text deltas, tool calls and results, usage, forms, failures with a code and plain
replies (``aiphost:partner@0.2.0``) included, with the same sizes, formats and per-task activity
cap. Text deltas build the products the way the host merges them. A form is answered with
``continue_``: as the host does, the mock tags a single untagged data item as the form's answer and
checks it against the schema (a subset of JSON Schema: ``required``, ``type``, ``enum``,
``minimum`` and ``maximum`` of the top-level properties; the host checks all of it) before the
partner hears of it.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _runtime
from .errors import ConfigError, KvError, LogLevel, ReportError
from .forms import ANSWER_KIND, Form
from .items import DataItem, Product, compact_json
from .partner import Partner
from .reports import Channel, Failure, Json, TextDelta, ToolCall, ToolResult, Usage, json_text
from .state import EndReason, State
from .task import Task

__all__ = ["FormAnswerError", "LogRecord", "MockHost", "Report", "Turn"]

KIB = 1024
MAX_DELTA_TEXT = 64 * KIB
MAX_TOOL_ARGUMENTS = 64 * KIB
MAX_TOOL_OUTPUT = 256 * KIB
MAX_JSON_DEPTH = 64
MAX_SCHEMA = 64 * KIB
MAX_SCHEMA_DEPTH = 32
MAX_DESCRIPTION = 4 * KIB
MAX_MESSAGE = 4 * KIB
MAX_DETAIL = 16 * KIB
MAX_ACTIVITY_EVENTS = 4096
"""The host's caps on what a partner reports (the defaults, where the host has a setting)."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
_CODE = re.compile(r"[A-Z0-9_]{1,64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class LogRecord:
    """One message the partner logged."""

    level: LogLevel
    message: str
    fields: dict[str, str]
    task_id: str | None


@dataclass(frozen=True)
class Report:
    """One report the partner (or the SDK for it) made, whether the host took it or not."""

    kind: str
    """``"status"``, ``"chunk"``, ``"delta"``, ``"tool-call"``, ``"tool-result"``, ``"usage"``,
    ``"ask"``, ``"fail"`` or ``"reply"``."""
    state: State | None = None
    """The state of a status report."""
    items: tuple[DataItem, ...] = ()
    """The items of a status report, a form (``ask``) or a plain reply."""
    product: Product | None = None
    """The product of a chunk."""
    append: bool = False
    last: bool = True
    delta: TextDelta | None = None
    """The text of a ``delta``."""
    call: ToolCall | None = None
    """The call of a ``tool-call``."""
    result: ToolResult | None = None
    """The result of a ``tool-result``."""
    usage: Usage | None = None
    """The counts of a ``usage`` report."""
    form: Form | None = None
    """The form of an ``ask``."""
    failure: Failure | None = None
    """The failure of a ``fail``."""
    refused: ReportError | None = None
    """Why the host refused the report, or ``None`` when it took it."""


@dataclass
class _Task:
    state: State | None = None
    status_items: list[DataItem] = field(default_factory=list)
    products: dict[str, Product] = field(default_factory=dict)
    history: list[State] = field(default_factory=list)
    max_products_bytes: int | None = None
    session_id: str | None = None
    leader_id: str | None = None
    form: Form | None = None
    """The form the task awaits an answer to."""
    failure: Failure | None = None
    """The failure with a code the task failed with."""
    reply: list[DataItem] | None = None
    """The plain reply the partner answered its start with (no task was created)."""
    activity: int = 0
    """Deltas, tool calls, tool results and usage reports so far (capped)."""


@dataclass
class Turn:
    """What one invocation left behind."""

    task_id: str
    state: State | None
    """The task's state after the invocation (and after the host failed it, if it did)."""
    status_items: list[DataItem]
    """The items of the task's latest status (a question, a rejection or failure reason, ...)."""
    products: dict[str, Product]
    """The task's products by id, as the Leader would get them."""
    error: str | None
    """The error the invocation ended with, or ``None``."""
    reports: list[Report]
    """The reports made during the invocation, in order."""
    logs: list[LogRecord]
    """The messages logged during the invocation."""
    form: Form | None = None
    """The form the task awaits an answer to (when the partner asked with one)."""
    failure: Failure | None = None
    """The code and details the task failed with (:meth:`~aiphost_sdk.Outcome.fail_with`)."""
    reply: list[DataItem] | None = None
    """The plain reply of a start (:meth:`~aiphost_sdk.Decision.reply`); the host keeps no task
    then, and :attr:`state` is ``None``."""

    def _taken(self, kind: str) -> list[Report]:
        return [r for r in self.reports if r.kind == kind and r.refused is None]

    @property
    def deltas(self) -> list[TextDelta]:
        """The text deltas the host took, in order."""
        return [r.delta for r in self._taken("delta") if r.delta is not None]

    @property
    def tool_calls(self) -> list[ToolCall]:
        """The tool calls the host took, in order."""
        return [r.call for r in self._taken("tool-call") if r.call is not None]

    @property
    def tool_results(self) -> list[ToolResult]:
        """The tool results the host took, in order."""
        return [r.result for r in self._taken("tool-result") if r.result is not None]

    @property
    def usages(self) -> list[Usage]:
        """The usage reports the host took, in order."""
        return [r.usage for r in self._taken("usage") if r.usage is not None]

    @property
    def refused(self) -> list[Report]:
        """The reports the host refused."""
        return [r for r in self.reports if r.refused is not None]

    def streamed(
        self, channel: Channel | str = Channel.ANSWER, product_id: str | None = None
    ) -> str:
        """The text streamed on ``channel`` (``"answer"`` or ``"reasoning"``) during the
        invocation, of product ``product_id`` or of all products, joined."""
        ch = Channel(channel)
        return "".join(
            d.text
            for d in self.deltas
            if d.channel == ch and (product_id is None or d.product_id == product_id)
        )

    def said(self) -> str:
        """The answer text streamed during the invocation (:meth:`~aiphost_sdk.Task.say`)."""
        return self.streamed(Channel.ANSWER)

    def thought(self) -> str:
        """The reasoning text streamed during the invocation (:meth:`~aiphost_sdk.Task.think`)."""
        return self.streamed(Channel.REASONING)

    def text(self) -> str:
        """The text items of the latest status, joined by newlines."""
        return "\n".join(t for t in (i.as_text() for i in self.status_items) if t is not None)

    def product(self, id: str) -> Product:
        """The product ``id`` (``KeyError`` if there is none)."""
        return self.products[id]


_ROWS = {
    (None, State.ACCEPTED),
    (None, State.REJECTED),
    (State.ACCEPTED, State.WORKING),
    (State.WORKING, State.AWAITING_COMPLETION),
    (State.WORKING, State.AWAITING_INPUT),
    (State.WORKING, State.FAILED),
}
"""The moves the AIP state machine lets a partner make (from, to)."""


class FormAnswerError(ValueError):
    """The answer to a form does not fit its schema: the host refuses the continue (nothing is
    stored, the partner is not invoked). ``errors`` lists ``(path, message)`` pairs; a path is a
    JSON Pointer into the answer (``/days``)."""

    def __init__(self, request_id: str, errors: list[tuple[str, str]]) -> None:
        self.request_id = request_id
        self.errors = errors
        listed = "; ".join(f"{path or '/'}: {message}" for path, message in errors)
        super().__init__(f"the answer to form {request_id!r} does not fit its schema: {listed}")


class MockHost:
    """A host in memory for one partner. See the module documentation.

    ``partner`` is a :class:`Partner` subclass (instantiated once, here) or instance. ``config``
    holds the config values the tenant set (and the manifest asks for); ``granted`` names more
    values the manifest asks for but that are not set. ``kv_value_limit`` makes larger values
    fail with a ``too-large`` :class:`KvError`, as the host's own limit would.
    ``max_activity_events`` is the per-task cap on deltas, tool calls, tool results and usage
    reports (the host's default unless given): past it they are refused with ``limit-reached``.
    """

    def __init__(
        self,
        partner: Partner | type[Partner],
        *,
        config: dict[str, str] | None = None,
        granted: Iterable[str] = (),
        kv_value_limit: int | None = None,
        max_activity_events: int = MAX_ACTIVITY_EVENTS,
    ) -> None:
        self.partner: Partner = partner() if isinstance(partner, type) else partner
        self.config: dict[str, str] = dict(config or {})
        self.granted: set[str] = set(granted) | set(self.config)
        self.kv_value_limit = kv_value_limit
        self.task_kv: dict[str, dict[str, bytes]] = {}
        """Each task's key-value entries, by task id."""
        self.agent_kv: dict[str, bytes] = {}
        """The entries shared by all tasks of the partner."""
        self.logs: list[LogRecord] = []
        """Every message logged, across invocations."""
        self.max_activity_events = max_activity_events
        self._tasks: dict[str, _Task] = {}
        self._ids = itertools.count(1)
        self._current: str | None = None
        self._event: str | None = None
        self._reports: list[Report] = []
        # The Leader's cancel lands after this many reports of the running invocation (then the
        # number of reports it landed after, so the clean-up hook runs once the invocation ends).
        self._cancel_after: int | None = None
        self._canceled_during = False

    # ----- Leader commands -----

    def start(
        self,
        input: Sequence[DataItem] = (),
        *,
        task_id: str | None = None,
        params: dict[str, Any] | None = None,
        session_id: str | None = "session-test",
        leader_id: str | None = None,
        max_products_bytes: int | None = None,
        cancel_after: int | None = None,
    ) -> Turn:
        """A new task with ``input`` (and ``commandParams`` ``params``): decide, then work.

        ``cancel_after=N`` has the Leader cancel the task while the partner works, once the host
        has taken N reports of this invocation: later reports are refused with ``task-ended``,
        and the partner's :meth:`~aiphost_sdk.Partner.canceled` hook runs after the invocation
        returns (its turn is not returned)."""
        task_id = task_id or f"task-{next(self._ids)}"
        if task_id in self._tasks:
            raise ValueError(f"task {task_id} exists already")
        self._tasks[task_id] = _Task(
            max_products_bytes=max_products_bytes, session_id=session_id, leader_id=leader_id
        )
        return self._invoke(task_id, "start", input, params, cancel_after=cancel_after)

    def continue_(
        self,
        task_id: str,
        input: Sequence[DataItem] = (),
        *,
        params: dict[str, Any] | None = None,
        cancel_after: int | None = None,
    ) -> Turn:
        """New input for a task awaiting input or completion: the task is ``working`` again, and
        the partner works. ``cancel_after`` as for :meth:`start`.

        A task awaiting the answer to a form takes it as the host does: the data item tagged with
        the form's request id, or else the only data item, which is then tagged. The answer is
        checked against the schema first; one that does not fit raises :class:`FormAnswerError`
        and changes nothing. Input without a data item (text) reaches the partner as it is."""
        task = self._task(task_id)
        if task.state not in (State.AWAITING_INPUT, State.AWAITING_COMPLETION):
            raise ValueError(f"a Leader cannot continue task {task_id} in state {task.state}")
        items = list(input)
        if task.state == State.AWAITING_INPUT and task.form is not None:
            items = _take_answer(task.form, items)
        self._move(task, State.WORKING, [])
        return self._invoke(task_id, "continue", items, params, cancel_after=cancel_after)

    def answer_form(self, task_id: str, values: dict[str, Any]) -> Turn:
        """Answers the form task ``task_id`` awaits with ``values``, as a Leader would: a
        :meth:`continue_` with one data item tagged with the form's request id."""
        form = self._task(task_id).form
        if form is None:
            raise ValueError(f"task {task_id} awaits no form")
        tag = {"aiphost.kind": ANSWER_KIND, "requestId": form.request_id}
        return self.continue_(task_id, [DataItem.data(values).with_metadata(tag)])

    def complete(self, task_id: str) -> Turn:
        """The Leader completes a task awaiting completion; the partner hears of it."""
        return self._end(task_id, State.COMPLETED, EndReason.LEADER, (State.AWAITING_COMPLETION,))

    def cancel(self, task_id: str) -> Turn:
        """The Leader cancels a task that has not ended; the partner hears of it."""
        waiting = (State.ACCEPTED, State.WORKING, State.AWAITING_INPUT, State.AWAITING_COMPLETION)
        return self._end(task_id, State.CANCELED, EndReason.LEADER, waiting)

    def timeout(self, task_id: str) -> Turn:
        """The awaiting timer runs out: a task awaiting input is canceled, one awaiting completion
        completed; the partner hears of it with :attr:`EndReason.TIMEOUT`."""
        state = self._task(task_id).state
        if state == State.AWAITING_INPUT:
            return self._end(task_id, State.CANCELED, EndReason.TIMEOUT, (state,))
        return self._end(task_id, State.COMPLETED, EndReason.TIMEOUT, (State.AWAITING_COMPLETION,))

    def state(self, task_id: str) -> State | None:
        """The state of task ``task_id`` now."""
        return self._task(task_id).state

    def history(self, task_id: str) -> list[State]:
        """Every state task ``task_id`` went through, in order."""
        return list(self._task(task_id).history)

    def task(self, task_id: str = "task-direct", *, params: dict[str, Any] | None = None) -> Task:
        """A :class:`Task` on this host, for calling a partner's methods (or helpers taking a task)
        directly. Its reports go to the mock's task ``task_id``, which starts ``working``."""
        record = self._tasks.setdefault(
            task_id, _Task(state=State.WORKING, history=[State.WORKING])
        )
        self._current = task_id
        return Task(
            self, id=task_id, event="continue", initial_state=record.state, params=params or {}
        )

    # ----- the host interface the SDK calls -----

    def set_status(self, state: State, items: Sequence[DataItem]) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task)
            if (task.state, state) not in _ROWS:
                raise ReportError("invalid-transition", f"{task.state or 'no state'} -> {state}")
            for item in items:
                _check_item(item)
            self._move(task, state, list(items))

        self._record(Report("status", state=state, items=tuple(items)), apply)

    def emit_product_chunk(self, product: Product, append: bool, last: bool) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task)
            for item in product.items:
                _check_item(item)
            previous = task.products.get(product.id)
            if append and previous is not None:
                merged = Product(
                    product.id,
                    product.name or previous.name,
                    product.description or previous.description,
                    (*previous.items, *product.items),
                )
            else:
                merged = product
            self._set_product(task, merged)

        self._record(Report("chunk", product=product, append=append, last=last), apply)

    def current_state(self) -> State | None:
        return self._task(self._require_current()).state

    def stream_text(self, delta: TextDelta) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task, (State.ACCEPTED, State.WORKING))
            _check_id(delta.product_id, "product id", 256)
            if _CONTROL.search(delta.product_id):
                raise ReportError("invalid-data", "a product id has no control characters")
            _check_size(delta.text, MAX_DELTA_TEXT, "delta text")
            if not delta.text and not delta.last:
                raise ReportError("invalid-data", "a delta's text is empty only with `last`")
            self._count_activity(task)
            if task.state == State.ACCEPTED:
                self._move(task, State.WORKING, [])
            self._set_product(task, _with_delta(task.products.get(delta.product_id), delta))

        self._record(Report("delta", delta=delta, last=delta.last), apply)

    def report_tool_call(self, call: ToolCall) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task, (State.WORKING,))
            _check_id(call.call_id, "call id", 128)
            _check_id(call.name, "tool name", 128)
            _check_json(call.arguments, MAX_TOOL_ARGUMENTS, MAX_JSON_DEPTH, "tool arguments")
            self._count_activity(task)

        self._record(Report("tool-call", call=call), apply)

    def report_tool_result(self, result: ToolResult) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task, (State.WORKING,))
            _check_id(result.call_id, "call id", 128)
            if isinstance(result.output, Json):
                _check_json(result.output.value, MAX_TOOL_OUTPUT, MAX_JSON_DEPTH, "tool output")
            else:
                _check_size(result.output, MAX_TOOL_OUTPUT, "tool output")
            self._count_activity(task)

        self._record(Report("tool-result", result=result), apply)

    def report_usage(self, usage: Usage) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task, (State.WORKING,))
            self._count_activity(task)

        self._record(Report("usage", usage=usage), apply)

    def ask(self, form: Form, items: Sequence[DataItem]) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task)
            if (task.state, State.AWAITING_INPUT) not in _ROWS:
                raise ReportError("invalid-transition", f"{task.state or 'no state'} -> ask")
            _check_form(form)
            for item in items:
                _check_item(item)
            self._move(task, State.AWAITING_INPUT, list(items))
            task.form = form

        self._record(Report("ask", items=tuple(items), form=form), apply)

    def fail(self, failure: Failure) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task)
            if (task.state, State.FAILED) not in _ROWS:
                raise ReportError("invalid-transition", f"{task.state or 'no state'} -> failed")
            if not _CODE.fullmatch(failure.code):
                raise ReportError(
                    "invalid-data",
                    f"a failure code is 1-64 bytes of A-Z 0-9 _, not {failure.code!r}",
                )
            _check_size(failure.message, MAX_MESSAGE, "failure message")
            if failure.detail is not None:
                _check_json(failure.detail, MAX_DETAIL, MAX_JSON_DEPTH, "failure detail")
            self._move(task, State.FAILED, [DataItem.text(failure.message)])
            task.failure = failure

        self._record(Report("fail", failure=failure), apply)

    def reply(self, items: Sequence[DataItem]) -> None:
        def apply(task: _Task) -> None:
            self._require_live(task)
            if self._event != "start" or task.state is not None:
                raise ReportError(
                    "invalid-transition", "a plain reply only answers a start, before a decision"
                )
            for item in items:
                _check_item(item)
            task.reply = list(items)

        self._record(Report("reply", items=tuple(items)), apply)

    def kv_get(self, agent: bool, key: str) -> bytes | None:
        return self._kv(agent).get(key)

    def kv_set(self, agent: bool, key: str, value: bytes) -> None:
        if self.kv_value_limit is not None and len(value) > self.kv_value_limit:
            raise KvError("too-large", f"values are at most {self.kv_value_limit} bytes")
        self._kv(agent)[key] = bytes(value)

    def kv_delete(self, agent: bool, key: str) -> None:
        self._kv(agent).pop(key, None)

    def log(self, level: LogLevel, message: str, fields: Sequence[tuple[str, str]]) -> None:
        record = LogRecord(level, message, dict(fields), self._current)
        self.logs.append(record)
        # pytest shows captured stderr when a test fails.
        print(f"{level.value.upper()} {message} {record.fields or ''}".rstrip(), file=sys.stderr)

    def config_get(self, name: str) -> str:
        if name not in self.granted:
            raise ConfigError("not-granted", name)
        if name not in self.config:
            raise ConfigError("not-set", name)
        return self.config[name]

    # ----- internals -----

    def _task(self, task_id: str) -> _Task:
        try:
            return self._tasks[task_id]
        except KeyError:
            raise ValueError(f"no task {task_id}") from None

    def _require_current(self) -> str:
        if self._current is None:
            raise RuntimeError("no invocation is running on this MockHost")
        return self._current

    def _record(self, report: Report, apply: Callable[[_Task], None]) -> None:
        """Applies a report to the current task with the host's checks, and records it (with the
        refusal, if the host refused it)."""
        task = self._task(self._require_current())
        try:
            apply(task)
        except ReportError as e:
            self._reports.append(dataclasses.replace(report, refused=e))
            raise
        self._reports.append(report)
        taken = sum(1 for r in self._reports if r.refused is None)
        if self._cancel_after is not None and taken >= self._cancel_after:
            # The Leader's cancel lands between two reports, as it can on the host.
            self._cancel_after = None
            if task.state is not None and not task.state.is_final():
                self._move(task, State.CANCELED, [])
                self._canceled_during = True

    def _require_live(self, task: _Task, states: tuple[State, ...] | None = None) -> None:
        """Refuses a report on a task that ended (or never began: a plain reply), or, given
        ``states``, on a task in none of them."""
        if task.reply is not None or (task.state is not None and task.state.is_final()):
            raise ReportError("task-ended")
        if states is not None and task.state not in states:
            allowed = " or ".join(s.value for s in states)
            raise ReportError(
                "invalid-transition", f"the task is {task.state or 'undecided'}, not {allowed}"
            )

    def _count_activity(self, task: _Task) -> None:
        if task.activity >= self.max_activity_events:
            raise ReportError(
                "limit-reached",
                f"at most {self.max_activity_events} activity events (deltas, tool calls, tool "
                "results, usage) per task",
            )
        task.activity += 1

    def _set_product(self, task: _Task, product: Product) -> None:
        """Stores ``product``, unless the products would exceed ``maxProductsBytes``: then the host
        fails the task."""
        products = dict(task.products)
        products[product.id] = product
        limit = task.max_products_bytes
        if limit is not None and sum(p.content_bytes() for p in products.values()) > limit:
            self._fail(task, f"the products exceed maxProductsBytes ({limit})")
            raise ReportError("products-too-large", limit=limit)
        task.products = products

    def _kv(self, agent: bool) -> dict[str, bytes]:
        if agent:
            return self.agent_kv
        return self.task_kv.setdefault(self._require_current(), {})

    def _move(self, task: _Task, state: State, items: list[DataItem]) -> None:
        task.state = state
        task.status_items = items
        task.history.append(state)
        # A form or a failure belongs to the status that carried it.
        task.form = None
        task.failure = None

    def _fail(self, task: _Task, reason: str) -> None:
        """Walks the task to its end the way the host does when its partner fails."""
        path = {
            None: [State.REJECTED],
            State.ACCEPTED: [State.WORKING, State.FAILED],
            State.WORKING: [State.FAILED],
        }.get(task.state, [])
        for i, state in enumerate(path):
            self._move(task, state, [DataItem.text(reason)] if i == len(path) - 1 else [])

    def _end(
        self, task_id: str, state: State, reason: EndReason, allowed: tuple[State, ...]
    ) -> Turn:
        task = self._task(task_id)
        if task.state not in allowed:
            raise ValueError(f"task {task_id} in state {task.state} cannot become {state}")
        self._move(task, state, [])
        event = "complete" if state == State.COMPLETED else "cancel"
        return self._invoke(task_id, event, (), None, reason)

    def _invoke(
        self,
        task_id: str,
        event: str,
        input: Sequence[DataItem],
        params: dict[str, Any] | None,
        end_reason: EndReason | None = None,
        cancel_after: int | None = None,
    ) -> Turn:
        task = self._task(task_id)
        invocation = _runtime.Invocation(
            event=event,
            task_id=task_id,
            end_reason=end_reason,
            session_id=task.session_id,
            leader_id=task.leader_id,
            state=task.state,
            items=list(input),
            max_products_bytes=task.max_products_bytes,
            products_bytes=sum(p.content_bytes() for p in task.products.values()),
            command_params=compact_json(params or {}),
        )
        self._current = task_id
        self._event = event
        self._reports = []
        self._cancel_after = cancel_after
        self._canceled_during = False
        logged = len(self.logs)
        try:
            error = _runtime.run(self.partner, invocation, self)
        finally:
            self._current = None
            self._event = None
            self._cancel_after = None
        if event == "start" and task.reply is not None:
            pass  # A plain reply: the host keeps no task, and there is nothing to end.
        elif event in ("start", "continue"):
            # As the host: a task the partner left moving fails, with the reason.
            if error is not None:
                self._fail(task, f"the partner failed: {error}")
            elif task.state in (None, State.ACCEPTED, State.WORKING):
                self._fail(
                    task,
                    "the partner returned without reaching a resting state "
                    f"(it left the task {task.state or 'undecided'})",
                )
        turn = Turn(
            task_id=task_id,
            state=task.state,
            status_items=list(task.status_items),
            products=dict(task.products),
            error=error,
            reports=list(self._reports),
            logs=self.logs[logged:],
            form=task.form,
            failure=task.failure,
            reply=None if task.reply is None else list(task.reply),
        )
        if self._canceled_during:
            # The host tells the partner of the cancel once the running invocation is over.
            self._invoke(task_id, "cancel", (), None, EndReason.LEADER)
        return turn


def _check_item(item: DataItem) -> None:
    """What the host checks of an item: data and metadata are JSON objects."""
    if not isinstance(item, DataItem):
        raise ReportError("invalid-data", f"{item!r} is not a DataItem")
    if item.kind == "data" and not isinstance(item.value, dict):
        raise ReportError("invalid-data", "data is not a JSON object")


def _check_id(value: str, what: str, limit: int) -> None:
    if not 1 <= len(value.encode()) <= limit:
        raise ReportError("invalid-data", f"a {what} is 1-{limit} bytes, not {value!r}")


def _check_size(text: str, limit: int, what: str) -> None:
    if len(text.encode()) > limit:
        raise ReportError("invalid-data", f"the {what} is over {limit} bytes")


def _depth(value: Any) -> int:
    """How deeply ``value`` nests objects and arrays (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _check_json(value: Any, limit: int, depth: int, what: str) -> None:
    try:
        text = json_text(value)
    except (TypeError, ValueError) as e:
        raise ReportError("invalid-data", f"the {what} are not JSON: {e}") from e
    _check_size(text, limit, what)
    if _depth(value) > depth:
        raise ReportError("invalid-data", f"the {what} nest deeper than {depth} levels")


def _check_form(form: Form) -> None:
    """The host's checks of a form, but for the meta-schema (the host validates the schema
    against it too)."""
    if not _REQUEST_ID.fullmatch(form.request_id):
        raise ReportError(
            "invalid-data",
            f"a request id is 1-128 bytes of A-Z a-z 0-9 . _ -, not {form.request_id!r}",
        )
    _check_id(form.title, "form title", 256)
    if form.description is not None:
        _check_size(form.description, MAX_DESCRIPTION, "form description")
    _check_json(form.schema, MAX_SCHEMA, MAX_SCHEMA_DEPTH, "form schema")
    if form.schema.get("type") != "object":
        raise ReportError("invalid-data", 'a form\'s schema has "type": "object" at the top')
    for key, value in _walk(form.schema):
        if key == "$ref" and not (isinstance(value, str) and value.startswith("#")):
            raise ReportError("invalid-data", f"a form's schema has no remote $ref ({value!r})")


def _walk(value: Any) -> Iterable[tuple[str, Any]]:
    """Every ``(key, value)`` pair of every object nested in ``value``."""
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key, inner
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def _with_delta(product: Product | None, delta: TextDelta) -> Product:
    """The product after ``delta``, merged as the host merges: the text extends the product's
    last text item of the delta's channel (marked ``{"aiphost.kind": "answer"}`` or
    ``"reasoning"``), or starts one."""
    product = product or Product(delta.product_id)
    if not delta.text:
        return product
    mark = {"aiphost.kind": delta.channel.value}
    items = list(product.items)
    last = items[-1] if items else None
    if last is not None and last.kind == "text" and last.metadata == mark:
        items[-1] = DataItem.text(f"{last.as_text()}{delta.text}").with_metadata(mark)
    else:
        items.append(DataItem.text(delta.text).with_metadata(mark))
    return dataclasses.replace(product, items=tuple(items))


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


def _take_answer(form: Form, items: list[DataItem]) -> list[DataItem]:
    """``items`` with the answer to ``form`` tagged (as the host tags a single untagged data
    item), after checking it; :class:`FormAnswerError` when it does not fit."""
    tag = {"aiphost.kind": ANSWER_KIND, "requestId": form.request_id}

    def tagged(item: DataItem) -> bool:
        meta = item.metadata or {}
        return meta.get("aiphost.kind") == ANSWER_KIND and meta.get("requestId") == form.request_id

    index = next((i for i, item in enumerate(items) if item.kind == "data" and tagged(item)), None)
    if index is None:
        untagged = [
            i
            for i, item in enumerate(items)
            if item.kind == "data" and "aiphost.kind" not in (item.metadata or {})
        ]
        if len(untagged) != 1:
            return items  # No answer (text, say): the partner hears the input as it is.
        index = untagged[0]
        items = list(items)
        items[index] = items[index].with_metadata({**(items[index].metadata or {}), **tag})
    errors = _schema_errors(form.schema, items[index].as_data() or {})
    if errors:
        raise FormAnswerError(form.request_id, errors)
    return items


def _schema_errors(schema: dict[str, Any], answer: dict[str, Any]) -> list[tuple[str, str]]:
    """What of ``schema`` ``answer`` breaks: ``required`` and, per top-level property, ``type``,
    ``enum``, ``minimum`` and ``maximum`` (the host checks the whole schema)."""
    errors = [
        ("", f"{name!r} is a required property")
        for name in schema.get("required", [])
        if name not in answer
    ]
    properties = schema.get("properties", {})
    for name, value in answer.items():
        rules = properties.get(name)
        if not isinstance(rules, dict):
            continue
        path = f"/{name}"
        types = rules.get("type")
        names = [types] if isinstance(types, str) else list(types or [])
        if names and not any(_JSON_TYPES.get(t, lambda v: True)(value) for t in names):
            errors.append((path, f"{value!r} is not of type {' or '.join(map(repr, names))}"))
            continue
        if "enum" in rules and value not in rules["enum"]:
            errors.append((path, f"{value!r} is not one of {rules['enum']!r}"))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if "minimum" in rules and value < rules["minimum"]:
                errors.append((path, f"{value!r} is less than the minimum of {rules['minimum']!r}"))
            if "maximum" in rules and value > rules["maximum"]:
                errors.append((path, f"{value!r} is more than the maximum of {rules['maximum']!r}"))
    return errors
