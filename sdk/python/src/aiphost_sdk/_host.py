"""The host imports behind a small interface, so the run loop is the same inside the component
(the real imports, in ``_guest``) and in native tests (``aiphost_sdk.testing``). Not public API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .errors import LogLevel
from .forms import Form
from .items import DataItem, Product
from .reports import Failure, TextDelta, ToolCall, ToolResult, Usage
from .state import State


class Host(Protocol):
    """What a partner can ask of the host during one invocation.

    Report methods raise :class:`~aiphost_sdk.ReportError`, key-value methods
    :class:`~aiphost_sdk.KvError` and ``config_get`` :class:`~aiphost_sdk.ConfigError`."""

    def set_status(self, state: State, items: Sequence[DataItem]) -> None: ...

    def emit_product_chunk(self, product: Product, append: bool, last: bool) -> None: ...

    def current_state(self) -> State | None: ...

    def stream_text(self, delta: TextDelta) -> None: ...

    def report_tool_call(self, call: ToolCall) -> None: ...

    def report_tool_result(self, result: ToolResult) -> None: ...

    def report_usage(self, usage: Usage) -> None: ...

    def ask(self, form: Form, items: Sequence[DataItem]) -> None: ...

    def fail(self, failure: Failure) -> None: ...

    def reply(self, items: Sequence[DataItem]) -> None: ...

    def kv_get(self, agent: bool, key: str) -> bytes | None: ...

    def kv_set(self, agent: bool, key: str, value: bytes) -> None: ...

    def kv_delete(self, agent: bool, key: str) -> None: ...

    def log(self, level: LogLevel, message: str, fields: Sequence[tuple[str, str]]) -> None: ...

    def config_get(self, name: str) -> str: ...


current: Host | None = None
"""The host of the running invocation (``None`` outside one: logging goes to stderr then)."""
