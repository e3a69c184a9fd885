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
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _runtime
from .errors import ConfigError, KvError, LogLevel, ReportError
from .items import DataItem, Product, compact_json
from .partner import Partner
from .state import EndReason, State
from .task import Task

__all__ = ["LogRecord", "MockHost", "Report", "Turn"]


@dataclass(frozen=True)
class LogRecord:
    """One message the partner logged."""

    level: LogLevel
    message: str
    fields: dict[str, str]
    task_id: str | None


@dataclass(frozen=True)
class Report:
    """One report the partner (or the SDK for it) made: a status or a product chunk."""

    kind: str
    """``"status"`` or ``"chunk"``."""
    state: State | None = None
    """The state of a status report."""
    items: tuple[DataItem, ...] = ()
    """The items of a status report."""
    product: Product | None = None
    """The product of a chunk."""
    append: bool = False
    last: bool = True


@dataclass
class _Task:
    state: State | None = None
    status_items: list[DataItem] = field(default_factory=list)
    products: dict[str, Product] = field(default_factory=dict)
    history: list[State] = field(default_factory=list)
    max_products_bytes: int | None = None
    session_id: str | None = None
    leader_id: str | None = None


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


class MockHost:
    """A host in memory for one partner. See the module documentation.

    ``partner`` is a :class:`Partner` subclass (instantiated once, here) or instance. ``config``
    holds the config values the tenant set (and the manifest asks for); ``granted`` names more
    values the manifest asks for but that are not set. ``kv_value_limit`` makes larger values
    fail with a ``too-large`` :class:`KvError`, as the host's own limit would.
    """

    def __init__(
        self,
        partner: Partner | type[Partner],
        *,
        config: dict[str, str] | None = None,
        granted: Iterable[str] = (),
        kv_value_limit: int | None = None,
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
        self._tasks: dict[str, _Task] = {}
        self._ids = itertools.count(1)
        self._current: str | None = None
        self._reports: list[Report] = []

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
    ) -> Turn:
        """A new task with ``input`` (and ``commandParams`` ``params``): decide, then work."""
        task_id = task_id or f"task-{next(self._ids)}"
        if task_id in self._tasks:
            raise ValueError(f"task {task_id} exists already")
        self._tasks[task_id] = _Task(
            max_products_bytes=max_products_bytes, session_id=session_id, leader_id=leader_id
        )
        return self._invoke(task_id, "start", input, params)

    def continue_(
        self, task_id: str, input: Sequence[DataItem] = (), *, params: dict[str, Any] | None = None
    ) -> Turn:
        """New input for a task awaiting input or completion: the task is ``working`` again, and
        the partner works."""
        task = self._task(task_id)
        if task.state not in (State.AWAITING_INPUT, State.AWAITING_COMPLETION):
            raise ValueError(f"a Leader cannot continue task {task_id} in state {task.state}")
        self._move(task, State.WORKING, [])
        return self._invoke(task_id, "continue", input, params)

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
        task = self._task(self._require_current())
        self._reports.append(Report("status", state=state, items=tuple(items)))
        if task.state is not None and task.state.is_final():
            raise ReportError("task-ended")
        if (task.state, state) not in _ROWS:
            raise ReportError("invalid-transition", f"{task.state or 'no state'} -> {state}")
        for item in items:
            _check_item(item)
        self._move(task, state, list(items))

    def emit_product_chunk(self, product: Product, append: bool, last: bool) -> None:
        task = self._task(self._require_current())
        self._reports.append(Report("chunk", product=product, append=append, last=last))
        if task.state is not None and task.state.is_final():
            raise ReportError("task-ended")
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
        products = dict(task.products)
        products[product.id] = merged
        limit = task.max_products_bytes
        if limit is not None and sum(p.content_bytes() for p in products.values()) > limit:
            self._fail(task, f"the products exceed maxProductsBytes ({limit})")
            raise ReportError("products-too-large", limit=limit)
        task.products = products

    def current_state(self) -> State | None:
        return self._task(self._require_current()).state

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

    def _kv(self, agent: bool) -> dict[str, bytes]:
        if agent:
            return self.agent_kv
        return self.task_kv.setdefault(self._require_current(), {})

    def _move(self, task: _Task, state: State, items: list[DataItem]) -> None:
        task.state = state
        task.status_items = items
        task.history.append(state)

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
        self._reports = []
        logged = len(self.logs)
        try:
            error = _runtime.run(self.partner, invocation, self)
        finally:
            self._current = None
        if event in ("start", "continue"):
            # As the host: a task the partner left moving fails, with the reason.
            if error is not None:
                self._fail(task, f"the partner failed: {error}")
            elif task.state in (None, State.ACCEPTED, State.WORKING):
                self._fail(
                    task,
                    "the partner returned without reaching a resting state "
                    f"(it left the task {task.state or 'undecided'})",
                )
        return Turn(
            task_id=task_id,
            state=task.state,
            status_items=list(task.status_items),
            products=dict(task.products),
            error=error,
            reports=list(self._reports),
            logs=self.logs[logged:],
        )


def _check_item(item: DataItem) -> None:
    """What the host checks of an item: data and metadata are JSON objects."""
    if not isinstance(item, DataItem):
        raise ReportError("invalid-data", f"{item!r} is not a DataItem")
    if item.kind == "data" and not isinstance(item.value, dict):
        raise ReportError("invalid-data", "data is not a JSON object")
