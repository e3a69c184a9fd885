"""Structured logging into the host's ``tracing``, tagged with the agent and the task.

>>> from aiphost_sdk import log
>>> log.info("planning the trip", destination="Beijing")   # doctest: +SKIP

Field values are turned into text. Outside an invocation (at import time, say) the messages go to
standard error; in :mod:`aiphost_sdk.testing` the mock host records them.
"""

from __future__ import annotations

import sys

from . import _host
from .errors import LogLevel

__all__ = ["LogLevel", "debug", "error", "info", "log", "trace", "warn"]


def log(level: LogLevel, message: str, **fields: object) -> None:
    """Logs ``message`` at ``level`` with structured ``fields``."""
    pairs = [(key, str(value)) for key, value in fields.items()]
    host = _host.current
    if host is None:
        line = f"{level.value.upper()} {message}" + "".join(f" {k}={v!r}" for k, v in pairs)
        print(line, file=sys.stderr)
    else:
        host.log(level, str(message), pairs)


def trace(message: str, **fields: object) -> None:
    """Logs ``message`` at trace level."""
    log(LogLevel.TRACE, message, **fields)


def debug(message: str, **fields: object) -> None:
    """Logs ``message`` at debug level."""
    log(LogLevel.DEBUG, message, **fields)


def info(message: str, **fields: object) -> None:
    """Logs ``message`` at info level."""
    log(LogLevel.INFO, message, **fields)


def warn(message: str, **fields: object) -> None:
    """Logs ``message`` at warn level."""
    log(LogLevel.WARN, message, **fields)


def error(message: str, **fields: object) -> None:
    """Logs ``message`` at error level."""
    log(LogLevel.ERROR, message, **fields)
