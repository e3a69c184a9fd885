"""Concierge (Python): a partner that talks to people, deterministically, so that tests can drive
every kind of report aiphost:partner@0.2.0 has. The Python twin of ``plugins/concierge``.

The first word of the text it is sent picks the flow (the rest of the text is ``X``):

- ``think X``: reasoning deltas (``Let me think about X.``), then the answer ``thought about X`` as text deltas;
- ``tool X``: a call of the tool ``lookup`` with ``{"query": X}``, its result ``{"found": X}``, then
  the answer ``found X``;
- ``form X``: asks with the form ``trip`` (a city and a number of days); the continue that answers
  it gets the answer ``CITY for DAYS days``;
- ``fail X``: fails with the code ``CONCIERGE_FAILED`` and the message X, not retryable;
- ``slow X``: 20 text deltas, 250 ms apart (for cancel tests);
- ``reply X``: on a start, a plain reply X and no task (on a continue, where there is no plain
  reply, X is answered as text deltas);
- anything else: the text echoed back as text deltas, word by word.

Answers are streamed into the product ``answer`` (reasoning into ``reasoning``); after an answer
the task rests in awaiting-completion, and a continue starts over with its own first word.
"""

from __future__ import annotations

import time

from aiphost_sdk import (
    DataItem,
    Decision,
    Form,
    Outcome,
    Partner,
    Task,
    export,
    form_answer,
)

TRIP = Form(
    "trip",
    "Trip",
    {
        "type": "object",
        "required": ["city", "days"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
    },
    description="Where to, and for how many days?",
)
"""The form ``form X`` asks with."""
FAIL_CODE = "CONCIERGE_FAILED"
"""The code ``fail X`` fails with."""
TOOL = "lookup"
"""The tool ``tool X`` calls."""
TOOL_CALL_ID = "lookup-1"
"""The id of that call (one call per invocation, so a fixed id is unique)."""
SLOW_DELTAS = 20
"""How many deltas ``slow X`` streams."""
SLOW_PAUSE = 0.25
"""Seconds between two of them."""
HELP = (
    "Send some text: its first word picks what I do (think, tool, form, fail, slow, reply); "
    "anything else is echoed back."
)


def text_of(input: list[DataItem]) -> str:
    """The input's text items, joined by spaces."""
    return " ".join(t for t in (item.as_text() for item in input) if t).strip()


def command(text: str) -> tuple[str, str]:
    """The first word of ``text`` (lower case) and the rest (``X``)."""
    parts = text.split(None, 1)
    if not parts:
        return "", ""
    return parts[0].lower(), parts[1].strip() if len(parts) > 1 else ""


def say_words(task: Task, text: str) -> None:
    """Streams ``text`` into the answer one word a delta (spaces kept between them), as a model
    streams tokens. A refusal that ends the task propagates: the SDK then stops quietly."""
    for i, word in enumerate(text.split()):
        task.say(word if i == 0 else f" {word}")


@export
class Concierge(Partner):
    """See the module documentation. ``pause`` is the time between two ``slow`` deltas (tests
    make it 0)."""

    def __init__(self, pause: float = SLOW_PAUSE) -> None:
        self.pause = pause

    def decide(self, task: Task, input: list[DataItem]) -> Decision:
        """``reply X`` answers at once, with no task; everything else is taken on."""
        word, rest = command(text_of(input))
        if word == "reply":
            return Decision.reply(rest)
        return Decision.accept()

    def work(self, task: Task, input: list[DataItem]) -> Outcome:
        """Answers the form if this continue carries its answer, else does what the first word
        says."""
        answer = form_answer(input, TRIP.request_id)
        if answer is not None:
            # The host has checked the answer against the form's schema.
            say_words(task, f"{answer['city']} for {answer['days']} days")
            return Outcome.done()
        text = text_of(input)
        word, rest = command(text)
        if word == "think":
            for i, piece in enumerate(f"Let me think about {rest}.".split()):
                task.think(piece if i == 0 else f" {piece}")
            say_words(task, f"thought about {rest}")
        elif word == "tool":
            task.tool_call(TOOL_CALL_ID, TOOL, {"query": rest})
            task.tool_result(TOOL_CALL_ID, {"found": rest})
            say_words(task, f"found {rest}")
        elif word == "form":
            return Outcome.ask(TRIP)
        elif word == "fail":
            return Outcome.fail_with(FAIL_CODE, rest, retryable=False)
        elif word == "slow":
            for i in range(SLOW_DELTAS):
                if i and self.pause:
                    time.sleep(self.pause)
                # Once the Leader canceled, the host answers task-ended: the ReportError
                # propagates and the SDK ends the invocation quietly.
                task.say(str(i + 1) if i == 0 else f" {i + 1}")
        elif word == "reply":
            # A continue has no plain reply: answer X as the other flows do.
            say_words(task, rest)
        elif word:
            say_words(task, text)
        else:
            return Outcome.ask(HELP)
        return Outcome.done()
