"""The typed reports a partner that talks to people makes (``aiphost:partner@0.2.0``): text streamed
as deltas, tool activity, token usage and a failure with a code.

Partners make them through :class:`~aiphost_sdk.Task` (``task.say``, ``task.think``,
``task.tool_call``, ...) and :meth:`~aiphost_sdk.Outcome.fail_with`; the values here are what the
SDK hands the host, and what :mod:`aiphost_sdk.testing` records for an author's assertions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Channel", "Failure", "Json", "TextDelta", "ToolCall", "ToolResult", "Usage"]


def json_text(value: Any) -> str:
    """``value`` as compact JSON text, the way the host and the other SDKs write it.

    Raises ``TypeError`` for a value JSON cannot hold and ``ValueError`` for NaN or infinity
    (Python would write them, but they are not JSON and the host would refuse the text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class Channel(StrEnum):
    """Which text of a product a delta extends (the value is the WIT name)."""

    ANSWER = "answer"
    """What the partner answers: a chat UI shows it as the reply."""
    REASONING = "reasoning"
    """What the partner thinks on the way: a chat UI may fold it away."""


@dataclass(frozen=True)
class TextDelta:
    """A piece of text appended to one text item of one product, as an LLM streams tokens."""

    product_id: str
    """The product the text belongs to (1-256 bytes, no control characters)."""
    channel: Channel
    text: str
    """At most 64 KiB; empty only together with :attr:`last`."""
    last: bool = False
    """The product is whole after this delta."""


@dataclass(frozen=True)
class Json:
    """Marks a value as JSON where plain ``str`` would mean text: ``task.tool_result(id, "ok")``
    reports the text ``ok``, ``task.tool_result(id, Json("ok"))`` the JSON string ``"ok"``.

    The value must be JSON-serialisable (checked here, so a mistake shows where it is made)."""

    value: Any

    def __post_init__(self) -> None:
        json_text(self.value)


@dataclass(frozen=True)
class ToolCall:
    """The partner calls a tool: an event of the task, not a product."""

    call_id: str
    """1-128 bytes; the matching :class:`ToolResult` names it again."""
    name: str
    """1-128 bytes."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """A JSON object (at most 64 KiB as JSON text)."""

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, dict):
            raise TypeError(f"tool arguments are a JSON object (a dict), not {self.arguments!r}")
        json_text(self.arguments)


@dataclass(frozen=True)
class ToolResult:
    """What a tool gave back: :class:`Json`, or plain text (``str``); at most 256 KiB."""

    call_id: str
    output: Json | str
    is_error: bool = False
    """The tool failed; :attr:`output` says how."""


@dataclass(frozen=True)
class Usage:
    """Token counts of the model calls behind this invocation; every field optional."""

    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens", "reasoning_tokens"):
            value = getattr(self, name)
            # The WIT type is u64: a bool or a negative count would only fail deep in the bindings.
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64
            ):
                raise ValueError(f"{name} is a count of tokens (an int >= 0), not {value!r}")


@dataclass(frozen=True)
class Failure:
    """A failure with a code a client can act on (see :meth:`~aiphost_sdk.Outcome.fail_with`)."""

    code: str
    """1-64 bytes of ``A-Z 0-9 _``, for example ``RATE_LIMITED``."""
    message: str
    """For people, at most 4 KiB."""
    retryable: bool = False
    """Trying the same request again may succeed."""
    detail: dict[str, Any] | None = None
    """More detail as a JSON object (at most 16 KiB as JSON text)."""

    def __post_init__(self) -> None:
        if self.detail is not None:
            if not isinstance(self.detail, dict):
                raise TypeError(
                    f"a failure's detail is a JSON object (a dict), not {self.detail!r}"
                )
            json_text(self.detail)
