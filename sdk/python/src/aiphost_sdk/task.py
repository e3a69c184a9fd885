"""The task an invocation is about, its key-value store, and the reports a partner makes on it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ._host import Host
from .errors import KvError
from .items import DataItem, Product
from .reports import Channel, Json, TextDelta, ToolCall, ToolResult, Usage
from .state import State

__all__ = ["Kv", "Task"]


class Kv:
    """A durable key-value store kept by the host, private to this partner: either the current
    task's entries (:attr:`Task.kv`) or the entries shared by all its tasks (:attr:`Task.agent_kv`).

    Every method raises :class:`~aiphost_sdk.KvError` when the host refuses or fails.

    >>> turns = task.kv.get_json("turns", 0)       # doctest: +SKIP
    >>> task.kv.set_json("turns", turns + 1)        # doctest: +SKIP
    """

    def __init__(self, host: Host, agent: bool) -> None:
        self._host = host
        self._agent = agent

    @property
    def scope(self) -> str:
        """``"task"`` or ``"agent"``."""
        return "agent" if self._agent else "task"

    def __repr__(self) -> str:
        return f"Kv(scope={self.scope!r})"

    def get(self, key: str) -> bytes | None:
        """The value stored under ``key``, or ``None``."""
        return self._host.kv_get(self._agent, key)

    def set(self, key: str, value: bytes | str) -> None:
        """Stores ``value`` under ``key`` (a ``str`` as UTF-8), replacing any previous value."""
        data = value.encode() if isinstance(value, str) else bytes(value)
        self._host.kv_set(self._agent, key, data)

    def delete(self, key: str) -> None:
        """Removes ``key`` (removing a missing key is not an error)."""
        self._host.kv_delete(self._agent, key)

    def get_json(self, key: str, default: Any = None) -> Any:
        """The value stored under ``key``, decoded from JSON, or ``default`` when there is none."""
        raw = self.get(key)
        if raw is None:
            return default
        try:
            return json.loads(raw)
        except ValueError as e:
            raise KvError("json", f"{key}: {e}") from e

    def set_json(self, key: str, value: Any) -> None:
        """Stores ``value`` under ``key`` as JSON."""
        try:
            data = json.dumps(value, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            raise KvError("json", f"{key}: {e}") from e
        self.set(key, data)


class Task:
    """The task the current invocation is about: what the host told the partner about it, and the
    reports the partner can make on it.

    A ``Task`` lives for one invocation. Anything the partner must remember for the next one (a
    multi-turn conversation, say) goes into :attr:`kv`.
    """

    def __init__(
        self,
        host: Host,
        *,
        id: str,
        event: str,
        session_id: str | None = None,
        leader_id: str | None = None,
        initial_state: State | None = None,
        max_products_bytes: int | None = None,
        products_bytes: int = 0,
        params: dict[str, Any] | None = None,
    ) -> None:
        self._host = host
        self._event = event
        self._id = id
        self._session_id = session_id
        self._leader_id = leader_id
        self._initial_state = initial_state
        self._max_products_bytes = max_products_bytes
        self._products_bytes = products_bytes
        self._params: dict[str, Any] = dict(params or {})
        self._kv = Kv(host, agent=False)
        self._agent_kv = Kv(host, agent=True)
        # Products this invocation streamed text into and has not closed yet (by id, with the
        # channel of their latest delta): the SDK closes them before awaiting-completion.
        self._open: dict[str, Channel] = {}

    def __repr__(self) -> str:
        return (
            f"Task(id={self._id!r}, event={self._event!r}, session_id={self._session_id!r}, "
            f"initial_state={self._initial_state!r}, params={self._params!r})"
        )

    @property
    def id(self) -> str:
        """The task id."""
        return self._id

    @property
    def session_id(self) -> str | None:
        """The session the task belongs to, if the Leader gave one."""
        return self._session_id

    @property
    def leader_id(self) -> str | None:
        """The Leader's identity (its AIC), if it gave one."""
        return self._leader_id

    @property
    def is_start(self) -> bool:
        """Whether this invocation starts the task."""
        return self._event == "start"

    @property
    def is_continue(self) -> bool:
        """Whether this invocation continues the task with new input."""
        return self._event == "continue"

    @property
    def initial_state(self) -> State | None:
        """The state the task was in when this invocation began (see :attr:`state` for now);
        ``None`` for a new task that is not yet accepted or rejected."""
        return self._initial_state

    @property
    def state(self) -> State | None:
        """The task's state right now, asked of the host (a cancel from the Leader can end the task
        while the partner works); ``None`` while a new task is not yet accepted or rejected."""
        return self._host.current_state()

    @property
    def max_products_bytes(self) -> int | None:
        """The Leader's ``maxProductsBytes``, if it set one."""
        return self._max_products_bytes

    @property
    def products_bytes(self) -> int:
        """Product bytes the task already held when this invocation began (they count against
        :attr:`max_products_bytes`). Chunks emitted during this invocation are not added."""
        return self._products_bytes

    @property
    def products_bytes_left(self) -> int | None:
        """How many more product bytes ``maxProductsBytes`` allows, as of the start of this
        invocation; ``None`` when the Leader set no limit."""
        if self._max_products_bytes is None:
            return None
        return max(0, self._max_products_bytes - self._products_bytes)

    @property
    def params(self) -> dict[str, Any]:
        """The command's ``commandParams`` (an empty dict when there were none)."""
        return self._params

    @property
    def kv(self) -> Kv:
        """The key-value entries of this task (kept by the host across invocations until the
        task's records go)."""
        return self._kv

    @property
    def agent_kv(self) -> Kv:
        """The key-value entries shared by all tasks of this partner."""
        return self._agent_kv

    def emit_chunk(self, product: Product, append: bool = False, last: bool = True) -> None:
        """Streams (part of) a product now. With ``append`` the items are added to the product with
        the same id (or start it); without it the product is replaced. ``last`` says the product is
        whole.

        Products reach the Leader with the task's next status. Raises
        :class:`~aiphost_sdk.ReportError`; when its ``ends_task`` is true (``maxProductsBytes`` was
        exceeded and the host failed the task, say), stop working: let it propagate and the SDK
        ends the invocation quietly."""
        self._host.emit_product_chunk(product, append, last)

    def set_status(self, state: State, items: Iterable[DataItem] = ()) -> None:
        """Moves the task to ``state`` with explanatory ``items``.

        The low-level escape hatch: the SDK already reports ``accepted``, ``working`` and the state
        an :class:`~aiphost_sdk.Outcome` or :class:`~aiphost_sdk.Decision` implies. The host
        refuses changes the AIP state machine does not allow (:class:`~aiphost_sdk.ReportError`),
        and leaves the task as it was."""
        self._host.set_status(state, list(items))

    # ----- talking: text deltas, tool activity, usage (aiphost:partner@0.2.0) -----

    def stream_text(
        self, product_id: str, channel: Channel | str, text: str, last: bool = False
    ) -> None:
        """Appends ``text`` to the ``channel`` text (``"answer"`` or ``"reasoning"``) of product
        ``product_id``, starting the product or its text if needed: how an LLM's tokens reach a
        chat UI as they come. ``last`` says the product is whole (``text`` may be empty then).

        The task must be accepted or working (it is, in :meth:`~aiphost_sdk.Partner.work`; not yet
        in :meth:`~aiphost_sdk.Partner.decide`). Text is at most 64 KiB per delta, and the deltas,
        tool calls, tool results and usage reports of a task are capped (4096 by default;
        ``limit-reached`` after that). The text counts against ``maxProductsBytes``.

        When ``work`` returns an outcome that finishes the work (:meth:`~aiphost_sdk.Outcome.done`,
        :meth:`~aiphost_sdk.Outcome.reply`), the SDK closes every product still open with an empty
        ``last`` delta before it reports ``awaiting-completion``. Raises
        :class:`~aiphost_sdk.ReportError`: with ``ends_task`` (the Leader canceled meanwhile), let
        it propagate and the SDK stops quietly."""
        ch = Channel(channel)
        self._host.stream_text(TextDelta(product_id, ch, text, last))
        if last:
            self._open.pop(product_id, None)
        else:
            self._open[product_id] = ch

    def say(self, text: str, product_id: str = "answer") -> None:
        """Streams ``text`` as the next piece of the answer (the ``answer`` channel of product
        ``product_id``); see :meth:`stream_text`."""
        self.stream_text(product_id, Channel.ANSWER, text)

    def think(self, text: str, product_id: str = "reasoning") -> None:
        """Streams ``text`` as the next piece of what the partner thinks on the way (the
        ``reasoning`` channel of product ``product_id``); see :meth:`stream_text`."""
        self.stream_text(product_id, Channel.REASONING, text)

    def close_streams(self) -> None:
        """Closes every product this invocation streamed text into and did not close yet, with one
        empty ``last`` delta each. The SDK calls it before ``awaiting-completion``; call it
        yourself to mark the products whole earlier."""
        for product_id, channel in list(self._open.items()):
            self.stream_text(product_id, channel, "", last=True)

    def tool_call(self, call_id: str, name: str, args: Mapping[str, Any]) -> None:
        """Reports that the partner calls tool ``name`` with ``args`` (a JSON object; at most
        64 KiB as JSON). ``call_id`` (1-128 bytes) ties it to its :meth:`tool_result`. Tool
        activity is shown to the Leader as it happens; it is not a product. The task must be
        working. Raises :class:`~aiphost_sdk.ReportError`."""
        if not isinstance(args, Mapping):
            raise TypeError(f"tool arguments are a JSON object (a dict), not {args!r}")
        self._host.report_tool_call(ToolCall(call_id, name, dict(args)))

    def tool_result(self, call_id: str, output: Any, is_error: bool = False) -> None:
        """Reports what the tool of call ``call_id`` gave back (at most 256 KiB): a ``str`` is
        sent as text; any other JSON value (a dict, a list, a number, ``None``, ...) as JSON. To
        send a JSON *string*, wrap it: ``Json("ok")``. ``is_error`` says the tool failed (the
        output says how). The task must be working. Raises :class:`~aiphost_sdk.ReportError`."""
        out = output if isinstance(output, (str, Json)) else Json(output)
        self._host.report_tool_result(ToolResult(call_id, out, bool(is_error)))

    def usage(
        self,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        reasoning_tokens: int | None = None,
    ) -> None:
        """Reports the token counts (and model name) of the model calls behind this invocation;
        every field is optional. The task must be working. Raises
        :class:`~aiphost_sdk.ReportError`."""
        self._host.report_usage(Usage(model, input_tokens, output_tokens, reasoning_tokens))
