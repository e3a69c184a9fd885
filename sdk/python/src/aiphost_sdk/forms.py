"""Forms: a partner asks for structured input with a JSON Schema and reads the answer on the next
continue.

>>> from aiphost_sdk import Form, Outcome, form_answer
>>> trip = Form("trip", "Trip", {"type": "object", "required": ["city"],
...                              "properties": {"city": {"type": "string"}}})
>>> outcome = Outcome.ask(trip)                 # in work(): awaiting-input with the form
>>> form_answer([], "trip") is None             # in the continue's work(): the values, or None
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .items import DataItem
from .reports import json_text

__all__ = ["ANSWER_KIND", "Form", "form_answer"]

ANSWER_KIND = "input-answer"
"""The ``aiphost.kind`` metadata of the data item that carries a form's answer."""


@dataclass(frozen=True)
class Form:
    """What a partner asks for when it needs structured input: the task moves to awaiting-input
    with it, and the Leader's answer comes back on the next continue (read it with
    :func:`form_answer`).

    The host checks it and refuses it (``invalid-data``) unless: ``request_id`` is 1-128 bytes of
    ``A-Z a-z 0-9 . _ -``, ``title`` 1-256 bytes, ``description`` at most 4 KiB, and ``schema`` a
    valid JSON Schema (draft 2020-12 unless it says otherwise) of an object (top level
    ``"type": "object"``), at most 64 KiB as JSON text, nested at most 32 levels, with no remote
    ``$ref``. A door that knows the form checks the answer against the schema before the partner
    hears of it."""

    request_id: str
    """Names the request; the answer comes back tagged with it."""
    title: str
    """For people: what is asked."""
    schema: dict[str, Any]
    """The JSON Schema of the answer (a dict)."""
    description: str | None = None
    """More words for people, if the title is not enough."""

    def __post_init__(self) -> None:
        if not isinstance(self.schema, dict):
            raise TypeError(f"a form's schema is a JSON object (a dict), not {self.schema!r}")
        json_text(self.schema)


def form_answer(items: Iterable[DataItem], request_id: str) -> dict[str, Any] | None:
    """The values answering the form ``request_id`` among ``items`` (a continue's input), or
    ``None`` when none does (the Leader sent text instead, say).

    The answer is the ``data`` item whose metadata is
    ``{"aiphost.kind": "input-answer", "requestId": request_id}``; the host has tagged it (a plain
    data item sent in answer to the form is tagged by the host) and checked it against the form's
    schema."""
    for item in items:
        meta = item.metadata or {}
        if (
            item.kind == "data"
            and meta.get("aiphost.kind") == ANSWER_KIND
            and meta.get("requestId") == request_id
        ):
            return item.as_data()
    return None
