"""The errors the host can answer with, and log levels."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = ["ConfigError", "KvError", "LogLevel", "ReportError"]


class LogLevel(StrEnum):
    """How important a log message is."""

    TRACE = "trace"
    DEBUG = "debug"
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


ReportErrorKind = Literal[
    "invalid-transition", "task-ended", "products-too-large", "invalid-data", "limit-reached"
]


class ReportError(Exception):
    """The host refused a report (a status change, a product chunk, a text delta, tool activity,
    usage, a form, a failure or a reply).

    ``kind`` says why: ``"invalid-transition"`` (the state machine does not allow the change),
    ``"task-ended"`` (the task is over), ``"products-too-large"`` (the products would exceed
    ``maxProductsBytes``, whose value is ``limit``; the host has failed the task),
    ``"invalid-data"`` (a DataItem, a form, a tool call ... is malformed or too large) or
    ``"limit-reached"`` (the task's cap on activity events is used up; the task is unchanged, and
    ``message`` names the cap).
    """

    def __init__(self, kind: ReportErrorKind, message: str = "", limit: int | None = None) -> None:
        self.kind: ReportErrorKind = kind
        self.message = message
        self.limit = limit
        super().__init__(str(self))

    @property
    def ends_task(self) -> bool:
        """Whether the task is over after this error (task-ended or products-too-large): nothing
        more can be reported."""
        return self.kind in ("task-ended", "products-too-large")

    def __str__(self) -> str:
        if self.kind == "invalid-transition":
            return f"invalid state transition: {self.message}"
        if self.kind == "task-ended":
            return "the task has already ended"
        if self.kind == "products-too-large":
            return f"the products would exceed maxProductsBytes ({self.limit})"
        if self.kind == "limit-reached":
            return f"limit reached: {self.message}"
        return f"invalid data: {self.message}"


KvErrorKind = Literal["too-large", "quota-exceeded", "unavailable", "json"]


class KvError(Exception):
    """A key-value operation failed.

    ``kind``: ``"too-large"`` (the key or value is larger than the host allows),
    ``"quota-exceeded"`` (the partner's storage quota is used up), ``"unavailable"`` (the store
    failed; try again later) or ``"json"`` (a value is not JSON-serialisable, or a stored value is
    not JSON; ``get_json``/``set_json`` only). ``message`` has the details.
    """

    def __init__(self, kind: KvErrorKind, message: str) -> None:
        self.kind: KvErrorKind = kind
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        what = {
            "too-large": "key or value too large",
            "quota-exceeded": "storage quota exceeded",
            "unavailable": "key-value store unavailable",
            "json": "JSON value error",
        }[self.kind]
        return f"{what}: {self.message}"


ConfigErrorKind = Literal["not-granted", "not-set"]


class ConfigError(Exception):
    """A config value is not there: ``kind`` is ``"not-granted"`` (the manifest does not ask for
    the name under ``[capabilities] config``) or ``"not-set"`` (the tenant has not set it)."""

    def __init__(self, kind: ConfigErrorKind, name: str) -> None:
        self.kind: ConfigErrorKind = kind
        self.name = name
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.kind == "not-granted":
            return f"the manifest does not ask for config value {self.name!r}"
        return f"config value {self.name!r} is not set"
