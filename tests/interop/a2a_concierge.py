"""Interop check: the official A2A Python SDK client (a2a-sdk 1.3.0) drives the `concierge`
partners (`aiphost:partner@0.2.0`, Rust and Python) of a running aiphost through every flow.

Usage: python a2a_concierge.py BASE_URL     (BASE_URL like http://127.0.0.1:8080)

The host must serve `concierge` and `concierge-py`. As in `a2a_client.py` (whose helpers this
uses: the card resolved and the client made by the SDK, every answer parsed by its transports,
every error mapped to its exception classes), nothing here works around the host. Each flow runs
for each concierge over each binding, as "<agent>/<binding>/<flow>":

- think: a blocking send; the task completes with the artifacts `answer` and `reasoning`, each one
  merged text part marked with its `aiphost.kind`.
- tool: streamed; the tool call and its result are WORKING status updates whose message holds a
  DataPart and says `aiphost.kind` tool-call / tool-result (message and part metadata); the answer
  streams as artifact chunks that the SDK's own fold makes into the task's answer text (in a part
  per chunk, where the task keeps the deltas merged in one part).
- form: input-required whose status message holds the form's schema as a DataPart; a DataPart
  answer that does not fit it makes the SDK raise `InvalidParamsError` (-32602) with the failing
  field paths, and nothing is stored; the right one completes the task with "Rome for 3 days".
- form-stream: the same over streams (the refusal raised from the stream).
- fail: a failed task whose status message holds a DataPart with the code CONCIERGE_FAILED.
- reply: the SDK's send_message yields a `Message` (no task), blocking and streamed.
- cancel: `slow X` streamed and canceled by another client once the answer has begun: the stream
  ends CANCELED before all twenty deltas came.

Each scenario prints one JSON line {"scenario", "ok", "detail"}; the exit code is 1 if any failed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import a2a_client as base
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value

AGENTS = ["concierge", "concierge-py"]

# The trip form of `form X` (plugins/concierge): its request id, title and schema.
TRIP_SCHEMA = {
    "type": "object",
    "required": ["city", "days"],
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
}
# How many answer deltas `slow X` streams (one each 250 ms).
SLOW_DELTAS = 20


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def data_message(data: dict[str, Any], task_id: str) -> Message:
    """A user message to `task_id` holding one DataPart (the SDK's `Part.data` is a
    `google.protobuf.Value`, so its numbers go out as doubles: 3 as `3.0`)."""
    return Message(
        role=Role.ROLE_USER,
        message_id=f"m-{uuid.uuid4()}",
        task_id=task_id,
        parts=[Part(data=ParseDict(data, Value()))],
    )


def as_dict(value: Any) -> Any:
    """A protobuf message (a part's `data`, a message's `metadata`) as plain JSON values."""
    return MessageToDict(value)


def data_parts(message: Message) -> list[Part]:
    return [p for p in message.parts if p.WhichOneof("content") == "data"]


def kind_of(metadata: Any) -> Any:
    """The `aiphost.kind` of a message's or a part's metadata (None if absent)."""
    return as_dict(metadata).get("aiphost.kind")


def artifact_text(task: Task, artifact_id: str) -> tuple[str, list[Part]]:
    """The merged text of the artifact `artifact_id` (it must be there exactly once), and its
    parts."""
    found = [a for a in task.artifacts if a.artifact_id == artifact_id]
    assert len(found) == 1, (
        f"artifact {artifact_id!r} {len(found)} times: {[MessageToDict(a) for a in task.artifacts]}"
    )
    parts = list(found[0].parts)
    return "".join(base.texts(parts)), parts


def is_one_marked_text(parts: list[Part], kind: str) -> bool:
    """Deltas merged: one text part, marked `kind`."""
    return (
        len(parts) == 1
        and parts[0].WhichOneof("content") == "text"
        and kind_of(parts[0].metadata) == kind
    )


def field_paths(error: InvalidParamsError) -> list[str]:
    """The failing field paths of a refused form answer. `ErrorInfo.metadata` holds strings only,
    so the list of `{path, message}` comes as JSON text."""
    assert error.data, f"the error carries no ErrorInfo metadata: {error!r}"
    errors = error.data.get("errors")
    assert isinstance(errors, str), f"no field errors: {error.data}"
    return [e["path"] for e in json.loads(errors)]


async def refused(call: Awaitable[Any], what: str) -> tuple[str, list[str]]:
    """What the SDK raised for a form answer that does not fit: `InvalidParamsError` (-32602)
    naming /city and /days."""
    try:
        answer = await call
    except InvalidParamsError as e:
        paths = field_paths(e)
        assert "/city" in paths and "/days" in paths, f"{what}: field paths {paths}: {e.data}"
        return e.message, paths
    except Exception as e:  # noqa: BLE001 - any other outcome is the failure this reports
        raise AssertionError(f"{what}: expected InvalidParamsError, the SDK raised {e!r}") from e
    shown = MessageToDict(answer) if hasattr(answer, "DESCRIPTOR") else answer
    raise AssertionError(f"{what}: expected InvalidParamsError, got an answer: {shown}")


async def first_event(stream: Any, what: str) -> StreamResponse:
    """The first event of `stream` (to see what the SDK raises when a stream is refused)."""
    async for event in stream:
        base.LOG.event(what, event)
        return event
    raise AssertionError(f"{what}: the stream ended without an event")


def expect_form(task: Task, what: str) -> None:
    """`task` waits for the trip form: INPUT_REQUIRED, the agent's status message holding the
    form as a DataPart marked input-request."""
    base.expect_state(task, TaskState.TASK_STATE_INPUT_REQUIRED, what)
    message = task.status.message
    assert message.role == Role.ROLE_AGENT, f"{what}: {MessageToDict(task.status)}"
    forms = [p for p in data_parts(message) if kind_of(p.metadata) == "input-request"]
    assert len(forms) == 1, f"{what}: no DataPart with the form: {MessageToDict(task.status)}"
    form = as_dict(forms[0].data)
    assert form["requestId"] == "trip" and form["title"] == "Trip", f"{what}: {form}"
    # Protobuf numbers are doubles (minimum 1.0), equal to the schema's ints.
    assert form["schema"] == TRIP_SCHEMA, f"{what}: schema {form['schema']}"


def history_holds(task: Task, fragment: str) -> bool:
    return any(fragment in json.dumps(MessageToDict(m)) for m in task.history)


# --------------------------------------------------------------------------------------------
# Flows
# --------------------------------------------------------------------------------------------


async def flow_think(agent: str, binding: str) -> str:
    async with base.Sdk() as sdk:
        client, _ = await sdk.client(agent, binding, streaming=False)
        task = await base.send_blocking(
            client, base.send_request(base.user_message("think about tea"))
        )
    base.expect_state(task, TaskState.TASK_STATE_COMPLETED, "think")
    answer, answer_parts = artifact_text(task, "answer")
    reasoning, reasoning_parts = artifact_text(task, "reasoning")
    assert answer == "thought about about tea", f"answer {answer!r}"
    assert reasoning == "Let me think about about tea.", f"reasoning {reasoning!r}"
    assert is_one_marked_text(answer_parts, "answer"), (
        f"the answer's deltas are not merged: {[MessageToDict(p) for p in answer_parts]}"
    )
    assert is_one_marked_text(reasoning_parts, "reasoning"), (
        f"the reasoning's deltas are not merged: {[MessageToDict(p) for p in reasoning_parts]}"
    )
    base.only_binding(base.LOG, binding, "think")
    return f"answer={answer!r} reasoning={reasoning!r}"


async def flow_tool(agent: str, binding: str) -> str:
    async with base.Sdk() as sdk:
        client, _ = await sdk.client(agent, binding)
        events = await base.drain(
            client.send_message(base.send_request(base.user_message("tool kettles"))), "tool"
        )
        task_id, _ = base.check_stream(
            events, "tool", first="task", final=TaskState.TASK_STATE_COMPLETED
        )
        got = await client.get_task(GetTaskRequest(id=task_id))
    activity = [
        e.status_update.status
        for e in events
        if base.kind(e) == "status_update" and e.status_update.status.HasField("message")
    ]
    kinds = [kind_of(s.message.metadata) for s in activity]
    assert kinds == ["tool-call", "tool-result"], (
        f"activity updates {kinds}: {[MessageToDict(s) for s in activity]}"
    )
    for status in activity:
        assert status.state == TaskState.TASK_STATE_WORKING, f"{MessageToDict(status)}"
        parts = data_parts(status.message)
        assert len(parts) == 1 and kind_of(parts[0].metadata) == kind_of(status.message.metadata), (
            f"the activity is not one marked DataPart: {MessageToDict(status)}"
        )
    call, result = (as_dict(data_parts(s.message)[0].data) for s in activity)
    assert call == {"callId": "lookup-1", "name": "lookup", "arguments": {"query": "kettles"}}, (
        f"the tool call: {call}"
    )
    assert result == {"callId": "lookup-1", "output": {"found": "kettles"}, "isError": False}, (
        f"the tool result: {result}"
    )
    chunks = [
        e.artifact_update
        for e in events
        if base.kind(e) == "artifact_update" and e.artifact_update.artifact.artifact_id == "answer"
    ]
    assert len(chunks) > 1, f"the answer did not stream in pieces: {base.describe(events)}"
    assert chunks[-1].last_chunk, f"the last chunk is not marked: {MessageToDict(chunks[-1])}"
    answer, parts = artifact_text(got, "answer")
    assert answer == "found kettles", f"answer {answer!r}"
    assert is_one_marked_text(parts, "answer"), f"{[MessageToDict(p) for p in parts]}"
    # The SDK's fold appends each chunk as a part of its own (A2A's `append` adds parts), while
    # the host keeps the deltas merged in one part: the same text, in more parts.
    folded, folded_parts = artifact_text(base.fold(events), "answer")
    assert folded == answer, f"the folded stream says {folded!r}, the task {answer!r}"
    assert all(kind_of(p.metadata) == "answer" for p in folded_parts), (
        f"a chunk is not marked: {[MessageToDict(p) for p in folded_parts]}"
    )
    base.only_binding(base.LOG, binding, "tool")
    return f"{[base.kind(e) for e in events]} answer={answer!r} in {len(chunks)} chunks"


async def flow_form(agent: str, binding: str) -> str:
    async with base.Sdk() as sdk:
        client, _ = await sdk.client(agent, binding, streaming=False)
        asked = await base.send_blocking(
            client, base.send_request(base.user_message("form a trip"))
        )
        expect_form(asked, "form")
        wrong = await refused(
            base.send_blocking(
                client, base.send_request(data_message({"city": 7, "days": 0}, asked.id))
            ),
            "a wrong answer",
        )
        still = await client.get_task(GetTaskRequest(id=asked.id))
        expect_form(still, "after the wrong answer")
        assert not history_holds(still, '"city": 7'), (
            f"the wrong answer was stored: {[MessageToDict(m) for m in still.history]}"
        )
        done = await base.send_blocking(
            client, base.send_request(data_message({"city": "Rome", "days": 3}, asked.id))
        )
    base.expect_state(done, TaskState.TASK_STATE_COMPLETED, "the right answer")
    assert done.id == asked.id, f"the answer completed {done.id}, not {asked.id}"
    answer, _ = artifact_text(done, "answer")
    assert answer == "Rome for 3 days", f"answer {answer!r}"
    base.only_binding(base.LOG, binding, "form")
    return f"refused: {wrong[0]} at {wrong[1]}; answered {answer!r}"


async def flow_form_stream(agent: str, binding: str) -> str:
    async with base.Sdk() as sdk:
        client, _ = await sdk.client(agent, binding)
        first = await base.drain(
            client.send_message(base.send_request(base.user_message("form a trip"))), "ask"
        )
        task_id, _ = base.check_stream(
            first, "ask", first="task", final=TaskState.TASK_STATE_INPUT_REQUIRED
        )
        expect_form(base.fold(first), "the stream's last status")
        wrong = await refused(
            first_event(
                client.send_message(
                    base.send_request(data_message({"city": 7, "days": 0}, task_id))
                ),
                "a wrong answer",
            ),
            "a wrong answer, streamed",
        )
        second = await base.drain(
            client.send_message(
                base.send_request(data_message({"city": "Rome", "days": 3}, task_id))
            ),
            "the right answer",
        )
        same, _ = base.check_stream(
            second,
            "the right answer",
            first=base.kind(second[0]) if second else "task",
            final=TaskState.TASK_STATE_COMPLETED,
        )
        got = await client.get_task(GetTaskRequest(id=task_id))
    assert same == task_id, f"the answer streamed task {same}, not {task_id}"
    answer, _ = artifact_text(got, "answer")
    assert answer == "Rome for 3 days", f"answer {answer!r}"
    streamed = "".join(
        t
        for e in second
        if base.kind(e) == "artifact_update"
        for t in base.texts(e.artifact_update.artifact.parts)
    )
    assert streamed == answer, f"the stream's answer {streamed!r}"
    base.only_binding(base.LOG, binding, "form-stream")
    return f"refused: {wrong[0]} at {wrong[1]}; streamed {[base.kind(e) for e in second]}"


async def flow_fail(agent: str, binding: str) -> str:
    async with base.Sdk() as sdk:
        client, _ = await sdk.client(agent, binding, streaming=False)
        task = await base.send_blocking(
            client, base.send_request(base.user_message("fail out of tea"))
        )
    base.expect_state(task, TaskState.TASK_STATE_FAILED, "fail")
    message = task.status.message
    assert "out of tea" in base.texts(message.parts), f"{MessageToDict(task.status)}"
    codes = [as_dict(p.data) for p in data_parts(message)]
    failure = {"code": "CONCIERGE_FAILED", "message": "out of tea", "retryable": False}
    assert failure in codes, f"no DataPart with the failure: {MessageToDict(task.status)}"
    base.only_binding(base.LOG, binding, "fail")
    return f"failed with {codes}"


def expect_reply(response: StreamResponse, text: str, what: str) -> None:
    assert base.kind(response) == "message", (
        f"{what}: expected a Message, got {base.kind(response)}: {MessageToDict(response)}"
    )
    message = response.message
    assert message.role == Role.ROLE_AGENT, f"{what}: {MessageToDict(message)}"
    assert base.texts(message.parts) == [text], f"{what}: {MessageToDict(message)}"
    assert not message.task_id, f"{what}: a reply names a task: {MessageToDict(message)}"


async def flow_reply(agent: str, binding: str) -> str:
    async with base.Sdk() as sdk:
        client, _ = await sdk.client(agent, binding, streaming=False)
        streaming, _ = await sdk.client(agent, binding)
        sent = [
            r
            async for r in client.send_message(
                base.send_request(base.user_message("reply just this"))
            )
        ]
        for r in sent:
            base.LOG.event("sent", r)
        streamed = await base.drain(
            streaming.send_message(base.send_request(base.user_message("reply streamed"))),
            "reply",
        )
    assert len(sent) == 1, f"a blocking send yielded {len(sent)} responses"
    expect_reply(sent[0], "just this", "send")
    assert len(streamed) == 1, f"the stream: {base.describe(streamed)}"
    expect_reply(streamed[0], "streamed", "stream")
    base.only_binding(base.LOG, binding, "reply")
    return f"sent: {MessageToDict(sent[0].message)}; streamed: {MessageToDict(streamed[0].message)}"


async def flow_cancel(agent: str, binding: str) -> str:
    async with base.Sdk() as sdk:
        client, _ = await sdk.client(agent, binding)
        canceler, _ = await sdk.client(agent, binding, streaming=False)
        events: list[StreamResponse] = []
        canceled: Task | None = None

        async def follow() -> None:
            nonlocal canceled
            stream = client.send_message(base.send_request(base.user_message("slow steps")))
            async for event in stream:
                base.LOG.event("slow", event)
                events.append(event)
                # Once the answer has begun, another client cancels the task.
                if canceled is None and base.kind(event) == "artifact_update":
                    canceled = await canceler.cancel_task(CancelTaskRequest(id=events[0].task.id))

        try:
            await asyncio.wait_for(follow(), base.STREAM_TIMEOUT_S)
        except TimeoutError:
            raise AssertionError(
                f"the stream did not end with the cancel: {base.describe(events)}"
            ) from None
        task_id, _ = base.check_stream(
            events, "slow", first="task", final=TaskState.TASK_STATE_CANCELED
        )
        got = await canceler.get_task(GetTaskRequest(id=task_id))
    assert canceled is not None, f"the answer never began: {base.describe(events)}"
    base.expect_state(canceled, TaskState.TASK_STATE_CANCELED, "cancel")
    base.expect_state(got, TaskState.TASK_STATE_CANCELED, "get after the cancel")
    deltas = [
        t
        for e in events
        if base.kind(e) == "artifact_update"
        for t in base.texts(e.artifact_update.artifact.parts)
        if t
    ]
    assert 0 < len(deltas) < SLOW_DELTAS, f"{len(deltas)} deltas came: {deltas}"
    base.only_binding(base.LOG, binding, "cancel")
    return f"canceled after {len(deltas)} of {SLOW_DELTAS} deltas: {base.describe(events)}"


FLOWS: list[tuple[str, Callable[[str, str], Awaitable[str]]]] = [
    ("think", flow_think),
    ("tool", flow_tool),
    ("form", flow_form),
    ("form-stream", flow_form_stream),
    ("fail", flow_fail),
    ("reply", flow_reply),
    ("cancel", flow_cancel),
]


def scenarios() -> list[tuple[str, Callable[[], Awaitable[str]]]]:
    return [
        (f"{agent}/{label}/{name}", lambda f=flow, a=agent, b=binding: f(a, b))
        for agent in AGENTS
        for label, binding in base.BINDINGS
        for name, flow in FLOWS
    ]


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BASE_URL", file=sys.stderr)
        return 2
    base.BASE_URL = sys.argv[1].rstrip("/")
    return 0 if asyncio.run(base.run_all(scenarios())) else 1


if __name__ == "__main__":
    sys.exit(main())
