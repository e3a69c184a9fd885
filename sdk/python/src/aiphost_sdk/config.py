"""Named config values: the partner's manifest asks for names (``[capabilities] config``), and its
tenant sets the values.

>>> from aiphost_sdk import config
>>> model = config.get("MODEL", default="small")   # doctest: +SKIP
"""

from __future__ import annotations

from typing import overload

from . import _host
from .errors import ConfigError

__all__ = ["ConfigError", "get"]

_MISSING = object()


@overload
def get(name: str) -> str: ...


@overload
def get(name: str, default: str | None) -> str | None: ...


def get(name: str, default: object = _MISSING) -> str | None:
    """The value of config ``name``.

    Raises :class:`ConfigError` when the manifest does not ask for it or the tenant has not set it,
    unless a ``default`` is given, which is returned instead. Outside an invocation there is no
    config: the error (or the default) then too."""
    host = _host.current
    try:
        if host is None:
            raise ConfigError("not-set", name)
        return host.config_get(name)
    except ConfigError:
        if default is _MISSING:
            raise
        return default  # type: ignore[return-value]
