"""Interop check: the Agent API's own client, `agentscope-runtime` 1.1.6.post2's
`HTTPAgentAPIClient`, and its schema classes against the Agent API door of a running aiphost.

Usage: AGENT_API_AGENT=ID AGENT_API_KEY=KEY python agent_api_client.py BASE_URL
       (BASE_URL like http://127.0.0.1:8080; ID a partner built from `plugins/concierge` whose
       Leaders take API keys, KEY one of them)

Every turn goes through `HTTPAgentAPIClient.astream` (and one through `stream`; the request built with the schema classes
`AgentRequest`, `Message`, `TextContent`, `DataContent`, sent as the client sends it: its
`model_dump(exclude_none=True)`, its headers, its `raise_for_status`), and every event is what the
client parsed with the schema classes. Since the client drops an event it cannot parse with only
a log line, and a line it cannot read as JSON with only a debug line, every record of its logger
fails the scenario (but the "HTTP request failed" error of a refusal the scenario expects). Each
event is also validated anew by its class (`type(e).model_validate(e.model_dump())`) and must
not be a bare `Event`/`Content` (an `object` or content `type` the client does not know), and
each turn's events are checked for their order: `sequence_number` 0..n-1 without gaps, `created`
then `in_progress` first, one final response last, one response id and `session_id` on every
response, each content about the message open at the time (`msg_id`), a message's completed
text its deltas joined, its type a `MessageType` and its role a `Role`, every status a
`RunStatus`, and a completed response's `output` the messages completed in it. One turn per run
is also read raw with httpx (`echo`): `text/event-stream`, nothing but `data: ` lines (and SSE
comments), no `event:`, no `[DONE]`, as many events as the client yielded for the same turn.

Scenarios: echo (no session_id: one made up, on every response), think (a reasoning message, then
the answer), tool (`plugin_call` with a `FunctionCall`, `plugin_call_output` by the role `tool`
with a `FunctionCallOutput`), form (the trip form as a message with a `DataContent`), form-wrong
(an answer that does not fit: the client raises `HTTPStatusError` 400, the body names the field
and the paths), form-answer (the right one in the same session continues the same task), fail
(`failed`, `CONCIERGE_FAILED`), reply (a plain reply, one message), stream-false (one JSON
`AgentResponse` holding the messages; to the client, which accepts only SSE, the turn streamed), slow-stop (`/process/stop` while `slow` streams: 200, the
stream ends `canceled`), busy (a second turn meanwhile: one `rejected` response, `SESSION_BUSY`),
malformed (no `input`, `n: 9`, the role `robot`, an image without its URL: 400 naming each
field), unauthenticated (no key: 401).

Each scenario prints one JSON line {"scenario", "ok", "detail"}; the exit code is 1 if any failed.
A passing scenario's detail holds the `session_id` and the task ids (`metadata["aiphost.taskId"]`)
of its turns, for the caller to read those tasks over the other doors.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from agentscope_runtime.engine.helpers.agent_api_client import HTTPAgentAPIClient
from agentscope_runtime.engine.schemas.agent_schemas import (
    AgentRequest,
    AgentResponse,
    Content,
    DataContent,
    Error,
    Event,
    FunctionCall,
    FunctionCallOutput,
    ImageContent,
    Message,
    MessageType,
    Role,
    RunStatus,
    TextContent,
)

SCENARIO_TIMEOUT_S = 60.0
# Longest wait for one turn (`slow X` streams for 5 s).
STREAM_TIMEOUT_S = 30.0

BASE_URL = ""
AGENT = ""
KEY = ""

# The trip form of `form X` (plugins/concierge): its request id, title, description and schema.
TRIP_FORM = "trip"
TRIP_SCHEMA = {
    "type": "object",
    "required": ["city", "days"],
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
}
# How many answer deltas `slow X` streams (one each 250 ms).
SLOW_DELTAS = 20

ROLES = {Role.ASSISTANT, Role.USER, Role.SYSTEM, Role.TOOL}
STATUSES = {v for k, v in vars(RunStatus).items() if not k.startswith("_") and isinstance(v, str)}
FINAL = {
    RunStatus.Completed,
    RunStatus.Failed,
    RunStatus.Canceled,
    RunStatus.Rejected,
    RunStatus.Incomplete,
}


def endpoint() -> str:
    return f"{BASE_URL}/agents/{AGENT}/process"


# --------------------------------------------------------------------------------------------
# The client's logger: what it drops, it only logs
# --------------------------------------------------------------------------------------------


class Watch(logging.Handler):
    """Every record of the client's logger (a dropped event is a warning, an unreadable line a
    debug record, a refused request an error)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        said = [f"{r.levelname}: {r.getMessage()}" for r in self.records]
        self.records.clear()
        return said


WATCH = Watch()
CLIENT_LOGGER = logging.getLogger("agentscope_runtime.engine.helpers.agent_api_client")
CLIENT_LOGGER.addHandler(WATCH)
CLIENT_LOGGER.setLevel(logging.DEBUG)


def quiet(allowed_http_errors: int = 0) -> None:
    """The client logged nothing since the last look, but `allowed_http_errors` refusals."""
    said = WATCH.take()
    refusals = [s for s in said if s.startswith("ERROR: HTTP request failed")]
    others = [s for s in said if s not in refusals]
    assert not others, f"the client logged (an event dropped or unreadable): {others}"
    assert len(refusals) == allowed_http_errors, (
        f"{len(refusals)} refusals logged, {allowed_http_errors} expected: {refusals}"
    )


# --------------------------------------------------------------------------------------------
# Requests, as the schema classes build them
# --------------------------------------------------------------------------------------------


def say(words: str, session: str | None = None, **options: Any) -> AgentRequest:
    """A turn of one user message saying `words`, in `session` if any."""
    message = Message(role=Role.USER, type=MessageType.MESSAGE, content=[TextContent(text=words)])
    return AgentRequest(input=[message], session_id=session, **options)


def answer(data: dict[str, Any], session: str) -> AgentRequest:
    """A turn of one user message holding `data` (a form's answer), in `session`."""
    message = Message(role=Role.USER, type=MessageType.MESSAGE, content=[DataContent(data=data)])
    return AgentRequest(input=[message], session_id=session)


class Raw:
    """A body the schema classes refuse to build (`n: 9`, no `input`), handed to the client as
    if it were an `AgentRequest`: the client only calls its `model_dump`."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self.body


def session() -> str:
    return f"s-{uuid.uuid4()}"


def client(token: str | None = None) -> HTTPAgentAPIClient:
    return HTTPAgentAPIClient(endpoint(), token=token or KEY, timeout=STREAM_TIMEOUT_S)


async def turn(request: AgentRequest | Raw, token: str | None = None) -> list[Event]:
    """Every event the client yields for `request`, checked (see [`check_turn`])."""

    async def read() -> list[Event]:
        return [e async for e in client(token).astream(request)]

    events = await asyncio.wait_for(read(), STREAM_TIMEOUT_S)
    quiet()
    check_turn(events)
    return events


async def refused(request: AgentRequest | Raw, status: int, token: str | None = None) -> dict:
    """The client refused `request` with HTTP `status` (`HTTPStatusError`, yielding nothing); the
    body of the same request, read raw, is the door's error, returned."""
    yielded: list[Event] = []
    try:
        async for event in client(token).astream(request):
            yielded.append(event)
        raise AssertionError(f"the client was not refused: {dump(yielded)}")
    except httpx.HTTPStatusError as e:
        assert e.response.status_code == status, f"HTTP {e.response.status_code}, not {status}"
    assert not yielded, f"events before the refusal: {dump(yielded)}"
    quiet(allowed_http_errors=1)
    headers = {"Authorization": f"Bearer {token or KEY}"} if (token or KEY) else {}
    async with httpx.AsyncClient(timeout=STREAM_TIMEOUT_S) as http:
        response = await http.post(
            endpoint(), json=request.model_dump(exclude_none=True), headers=headers
        )
    assert response.status_code == status, f"raw: HTTP {response.status_code} {response.text}"
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert isinstance(body.get("error"), dict), body
    assert isinstance(body["error"].get("code"), str), body
    assert isinstance(body["error"].get("message"), str), body
    return body


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def dump(events: list[Event]) -> list[dict[str, Any]]:
    return [e.model_dump(exclude_none=True) for e in events]


def check_event(event: Event) -> None:
    """`event` is one of the classes the client parses into (not a bare `Event` or `Content`),
    validates anew as its class, and says known statuses, types and roles."""
    assert type(event) in (AgentResponse, Message, TextContent, DataContent, ImageContent), (
        f"parsed as a bare {type(event).__name__}: {event.model_dump()}"
    )
    again = type(event).model_validate(event.model_dump())
    assert again == event, f"validated anew, it differs: {again} != {event}"
    assert event.status in STATUSES, f"status {event.status!r}: {event.model_dump()}"
    if isinstance(event, Message):
        assert event.type in MessageType.all_values(), f"type {event.type!r}"
        assert event.role in ROLES, f"role {event.role!r}"
        for content in event.content or []:
            assert type(content) in (TextContent, DataContent, ImageContent), content
            assert content.msg_id == event.id, f"content of {content.msg_id}, in {event.id}"
    if isinstance(event, AgentResponse):
        for message in event.output or []:
            assert isinstance(message, Message), message
            check_event(message)
        if event.error is not None:
            Error.model_validate(event.error.model_dump())


def check_turn(events: list[Event]) -> None:
    """One turn's events in the order and shape `Runner.stream_query` sends them."""
    assert len(events) >= 3 or (
        len(events) == 1 and events[0].status == RunStatus.Rejected
    ), f"too few events: {dump(events)}"
    for i, event in enumerate(events):
        check_event(event)
        assert event.sequence_number == i, f"event {i} is numbered {event.sequence_number}"
    responses = [e for e in events if isinstance(e, AgentResponse)]
    assert responses, "no response"
    assert len({r.id for r in responses}) == 1, f"response ids {[r.id for r in responses]}"
    sessions = {r.session_id for r in responses}
    assert len(sessions) == 1 and None not in sessions, f"session ids {sessions}"
    last = events[-1]
    assert isinstance(last, AgentResponse) and last.status in FINAL, f"last: {last}"
    finals = [r for r in responses if r.status in FINAL]
    assert finals == [last], f"final responses {dump(finals)}"
    if len(events) == 1:
        return
    assert isinstance(events[0], AgentResponse) and events[0].status == RunStatus.Created
    assert isinstance(events[1], AgentResponse) and events[1].status == RunStatus.InProgress
    assert [r.status for r in responses[:-1]] == [RunStatus.Created, RunStatus.InProgress]
    # The messages between: each opened, its contents, closed; one at a time.
    open_message: Message | None = None
    deltas = ""
    completed_contents: list[Content] = []
    completed: list[Message] = []
    seen_ids: set[str] = set()
    for event in events[2:-1]:
        if isinstance(event, Message):
            if event.status == RunStatus.InProgress:
                assert open_message is None, f"{event.id} opened while {open_message.id} is open"
                assert event.id not in seen_ids, f"message id {event.id} used twice"
                seen_ids.add(event.id)
                open_message, deltas, completed_contents = event, "", []
            else:
                assert open_message is not None and event.id == open_message.id, (
                    f"{event.id} closed, open: {open_message and open_message.id}"
                )
                assert event.status in (RunStatus.Completed, RunStatus.Incomplete), event
                assert (event.type, event.role) == (open_message.type, open_message.role), event
                assert [c.model_dump(exclude={"sequence_number"}) for c in event.content or []] == [
                    c.model_dump(exclude={"sequence_number"}) for c in completed_contents
                ], f"{event.id}'s contents are not those it streamed: {event.content}"
                if event.status == RunStatus.Completed:
                    completed.append(event)
                open_message = None
        else:
            assert isinstance(event, (TextContent, DataContent, ImageContent)), event
            assert open_message is not None, f"a content outside a message: {event}"
            assert event.msg_id == open_message.id, f"about {event.msg_id}, open: {open_message.id}"
            if event.delta:
                assert isinstance(event, TextContent) and event.status == RunStatus.InProgress
                assert event.index == 0, event
                deltas += event.text or ""
            else:
                assert event.status == RunStatus.Completed, event
                if deltas:
                    assert isinstance(event, TextContent) and event.text == deltas, (
                        f"completed text {event.text!r}, the deltas say {deltas!r}"
                    )
                assert event.index == len(completed_contents), event
                completed_contents.append(event)
    if last.status == RunStatus.Completed:
        assert open_message is None, f"{open_message.id} still open at the end"
        assert [m.id for m in last.output or []] == [m.id for m in completed], (
            f"output {dump(last.output or [])}, completed {[m.id for m in completed]}"
        )
        assert last.completed_at is not None and last.completed_at >= last.created_at, last


def messages(events: list[Event], kind: str = MessageType.MESSAGE) -> list[Message]:
    """The completed messages of type `kind`."""
    return [
        e
        for e in events
        if isinstance(e, Message) and e.status == RunStatus.Completed and e.type == kind
    ]


def text(message: Message) -> str:
    return "".join(c.text or "" for c in message.content or [] if isinstance(c, TextContent))


def final(events: list[Event]) -> AgentResponse:
    last = events[-1]
    assert isinstance(last, AgentResponse), last
    return last


def task_of(events: list[Event]) -> str:
    """The task behind a turn, named on its responses (and messages) by `aiphost.taskId`."""
    ids = {
        (getattr(e, "metadata", None) or {}).get("aiphost.taskId")
        for e in events
        if isinstance(e, (AgentResponse, Message))
    }
    assert len(ids) == 1 and None not in ids and "" not in ids, f"task ids {ids}"
    return ids.pop()


def done(events: list[Event], **extra: Any) -> dict[str, Any]:
    """A scenario's detail: its turn's session and task, and what else it says."""
    return {
        "session_id": final(events).session_id,
        "task_ids": [task_of(events)],
        "events": len(events),
        **extra,
    }


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------

# What `form` leaves for `form-wrong` and `form-answer`: its session and task.
FORM: dict[str, str] = {}


async def scenario_echo() -> dict[str, Any]:
    words = "hello there, agent api"
    events = await turn(say(words))
    answers = messages(events)
    assert len(answers) == 1 and text(answers[0]) == words, dump(events)
    assert answers[0].role == Role.ASSISTANT
    last = final(events)
    assert last.status == RunStatus.Completed, last
    # No session_id asked for: a made-up one, on every response (check_turn: the same).
    assert last.session_id, last
    # The same turn read raw: what the client read, line by line.
    raw = await raw_stream(say(words))
    assert raw["events"] == len(events), f"raw {raw['events']} events, the client {len(events)}"
    assert raw["last"]["object"] == "response" and raw["last"]["status"] == "completed", raw
    # The client's other path (`stream`, over requests), with the conversation so far in `input`
    # as a client that keeps it sends it, and a request id: the last message is the turn, and
    # the response takes the request's id.
    request_id = f"req-{uuid.uuid4()}"
    history = [
        Message(role=Role.USER, type=MessageType.MESSAGE, content=[TextContent(text="before")]),
        Message(
            role=Role.ASSISTANT, type=MessageType.MESSAGE, content=[TextContent(text="before")]
        ),
        Message(role=Role.USER, type=MessageType.MESSAGE, content=[TextContent(text=words)]),
    ]
    request = AgentRequest(input=history, id=request_id)
    synced = await asyncio.wait_for(
        asyncio.to_thread(lambda: list(client().stream(request))), STREAM_TIMEOUT_S
    )
    quiet()
    check_turn(synced)
    assert [text(m) for m in messages(synced)] == [words], dump(synced)
    assert final(synced).id == request_id, final(synced)
    assert final(synced).status == RunStatus.Completed, final(synced)
    return done(events, raw=raw, sync_task=task_of(synced))


async def raw_stream(request: AgentRequest) -> dict[str, Any]:
    """`request`'s answer read raw with the client's headers: SSE with nothing but `data: `
    lines (SSE comments aside), each one JSON object, no `event:`, `id:` or `[DONE]`."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Cache-Control": "no-cache",
        "Authorization": f"Bearer {KEY}",
    }
    async with httpx.AsyncClient(timeout=STREAM_TIMEOUT_S) as http:
        response = await http.post(
            endpoint(), content=request.model_dump_json(exclude_none=True), headers=headers
        )
    assert response.status_code == 200, f"HTTP {response.status_code} {response.text}"
    content_type = response.headers["content-type"]
    assert content_type.startswith("text/event-stream"), content_type
    assert response.headers.get("cache-control") == "no-cache", response.headers
    body = response.text
    assert body.endswith("\n\n"), f"the stream does not end with a frame's end: {body[-80:]!r}"
    frames = [f for f in body.split("\n\n") if f]
    data: list[dict[str, Any]] = []
    for frame in frames:
        lines = [line for line in frame.split("\n") if not line.startswith(":")]
        if not lines:
            continue  # a comment (keep-alive)
        assert len(lines) == 1 and lines[0].startswith("data: "), f"frame {frame!r}"
        payload = lines[0][len("data: ") :]
        assert payload != "[DONE]", "a [DONE] frame"
        value = json.loads(payload)
        assert isinstance(value, dict) and "object" in value, payload
        data.append(value)
    assert "event:" not in body and "\nid:" not in body and not body.startswith("id:"), body
    return {"events": len(data), "last": data[-1], "content_type": content_type}


async def scenario_think() -> dict[str, Any]:
    events = await turn(say("think tea"))
    reasoning, answers = messages(events, MessageType.REASONING), messages(events)
    assert len(reasoning) == 1 and len(answers) == 1, dump(events)
    assert text(reasoning[0]) == "Let me think about tea.", dump(reasoning)
    assert text(answers[0]) == "thought about tea", dump(answers)
    assert events.index(reasoning[0]) < events.index(answers[0])
    assert final(events).status == RunStatus.Completed
    assert [m.type for m in final(events).output or []] == ["reasoning", "message"]
    return done(events)


async def scenario_tool() -> dict[str, Any]:
    events = await turn(say("tool kettles"))
    calls = messages(events, MessageType.PLUGIN_CALL)
    outputs = messages(events, MessageType.PLUGIN_CALL_OUTPUT)
    answers = messages(events)
    assert len(calls) == 1 and len(outputs) == 1 and len(answers) == 1, dump(events)
    assert calls[0].role == Role.ASSISTANT and outputs[0].role == Role.TOOL
    (call_content,) = calls[0].content or []
    (output_content,) = outputs[0].content or []
    assert isinstance(call_content, DataContent) and isinstance(output_content, DataContent)
    call = FunctionCall.model_validate(call_content.data)
    assert (call.call_id, call.name) == ("lookup-1", "lookup"), call
    assert json.loads(call.arguments or "") == {"query": "kettles"}, call
    output = FunctionCallOutput.model_validate(output_content.data)
    assert (output.call_id, output.name) == ("lookup-1", "lookup"), output
    assert json.loads(output.output) == {"found": "kettles"}, output
    assert outputs[0].code is None, outputs[0]
    assert events.index(calls[0]) < events.index(outputs[0]) < events.index(answers[0])
    assert text(answers[0]) == "found kettles"
    assert final(events).status == RunStatus.Completed
    return done(events)


async def scenario_form() -> dict[str, Any]:
    s = session()
    events = await turn(say("form a trip", s))
    (question,) = messages(events)
    assert (question.metadata or {}).get("aiphost.kind") == "input-request", question
    forms = [c for c in question.content or [] if isinstance(c, DataContent)]
    assert len(forms) == 1, question
    form = forms[0].data or {}
    assert form.get("form_id") == TRIP_FORM and form.get("title") == "Trip", form
    assert form.get("description") == "Where to, and for how many days?", form
    assert form.get("schema") == TRIP_SCHEMA, form
    last = final(events)
    # The turn is done; the task awaits the next request's answer.
    assert last.status == RunStatus.Completed and last.session_id == s, last
    FORM.update(session=s, task=task_of(events))
    return done(events)


async def scenario_form_wrong() -> dict[str, Any]:
    assert FORM, "form did not run"
    body = await refused(answer({"city": "Oslo", "days": "three"}, FORM["session"]), 400)
    error = body["error"]
    assert error["code"] == "INVALID_REQUEST", body
    assert error.get("field") == "input[0].content[0].data", body
    paths = [e.get("path") for e in error.get("errors") or []]
    assert "/days" in paths, body
    return {"session_id": FORM["session"], "task_ids": [FORM["task"]], "error": error}


async def scenario_form_answer() -> dict[str, Any]:
    assert FORM, "form did not run"
    events = await turn(answer({"city": "Oslo", "days": 3}, FORM["session"]))
    (said,) = messages(events)
    assert text(said) == "Oslo for 3 days", dump(events)
    last = final(events)
    assert last.status == RunStatus.Completed and last.session_id == FORM["session"], last
    # The answer continued the task that asked.
    assert task_of(events) == FORM["task"], f"{task_of(events)} is not {FORM['task']}"
    return done(events)


async def scenario_fail() -> dict[str, Any]:
    events = await turn(say("fail out of tea"))
    last = final(events)
    assert last.status == RunStatus.Failed, last
    assert last.error is not None and last.error.code == "CONCIERGE_FAILED", last
    assert last.error.message == "out of tea", last
    return done(events)


async def scenario_reply() -> dict[str, Any]:
    events = await turn(say("reply just this"))
    answers = messages(events)
    assert [text(m) for m in answers] == ["just this"], dump(events)
    assert final(events).status == RunStatus.Completed
    return done(events)


async def scenario_stream_false() -> dict[str, Any]:
    request = say("think coffee", stream=False)
    async with httpx.AsyncClient(timeout=STREAM_TIMEOUT_S) as http:
        response = await http.post(
            endpoint(),
            json=request.model_dump(exclude_none=True),
            headers={"Authorization": f"Bearer {KEY}"},
        )
    assert response.status_code == 200, f"HTTP {response.status_code} {response.text}"
    assert response.headers["content-type"].startswith("application/json"), response.headers
    folded = AgentResponse.model_validate(response.json())
    check_event(folded)
    assert folded.status == RunStatus.Completed, folded
    output = folded.output or []
    assert [m.type for m in output] == ["reasoning", "message"], folded
    assert [text(m) for m in output] == ["Let me think about coffee.", "thought about coffee"]
    assert folded.session_id, folded
    task = (getattr(folded, "metadata", None) or {}).get("aiphost.taskId")
    assert task, folded
    # The client itself reads nothing but SSE, whatever the request's `stream` (and says so:
    # `Accept: text/event-stream`), as AgentApp always streams: it gets the turn streamed.
    events = await turn(say("think tea", stream=False))
    assert [m.type for m in final(events).output or []] == ["reasoning", "message"], dump(events)
    return {"session_id": folded.session_id, "task_ids": [task], "streamed": task_of(events)}


async def start_slow(s: str) -> tuple[asyncio.Task, asyncio.Queue]:
    """`slow count` in session `s`, its events queued as the client yields them (None at the
    end); returns once the answer streams (the task works)."""
    queue: asyncio.Queue = asyncio.Queue()

    async def read() -> list[Event]:
        events = []
        try:
            async for event in client().astream(say("slow count", s)):
                events.append(event)
                await queue.put(event)
        finally:
            await queue.put(None)
        return events

    reader = asyncio.create_task(read())
    while True:
        event = await asyncio.wait_for(queue.get(), STREAM_TIMEOUT_S)
        assert event is not None, "the slow turn ended before its answer streamed"
        if isinstance(event, TextContent):
            return reader, queue


async def stop(s: str) -> tuple[int, dict[str, Any]]:
    async with httpx.AsyncClient(timeout=STREAM_TIMEOUT_S) as http:
        response = await http.post(
            f"{endpoint()}/stop", json={"session_id": s}, headers={"Authorization": f"Bearer {KEY}"}
        )
    return response.status_code, response.json()


async def canceled_end(reader: asyncio.Task) -> list[Event]:
    """The slow turn's events once its stream ended: checked, the last `canceled`."""
    events = await asyncio.wait_for(reader, STREAM_TIMEOUT_S)
    quiet()
    check_turn(events)
    last = final(events)
    assert last.status == RunStatus.Canceled, last
    assert last.error is not None and last.error.code == "CANCELED", last
    deltas = [e for e in events if isinstance(e, TextContent) and e.delta]
    assert 0 < len(deltas) < SLOW_DELTAS, f"{len(deltas)} deltas came"
    # The message cut short is incomplete, not completed.
    assert not messages(events), dump(events)
    assert any(
        isinstance(e, Message) and e.status == RunStatus.Incomplete for e in events
    ), dump(events)
    return events


async def scenario_slow_stop() -> dict[str, Any]:
    s = session()
    reader, _ = await start_slow(s)
    status, stopped = await stop(s)
    assert status == 200, f"HTTP {status} {stopped}"
    assert stopped.get("status") == "canceled" and stopped.get("session_id") == s, stopped
    events = await canceled_end(reader)
    assert stopped.get("task_id") == task_of(events), stopped
    # Nothing runs any more.
    status, none = await stop(s)
    assert status == 404 and none["error"]["code"] == "NO_RUNNING_TASK", none
    return done(events)


async def scenario_busy() -> dict[str, Any]:
    s = session()
    reader, _ = await start_slow(s)
    try:
        busy = await asyncio.wait_for(
            _collect(client().astream(say("think again", s))), STREAM_TIMEOUT_S
        )
        quiet()
        check_turn(busy)
        (only,) = busy
        assert isinstance(only, AgentResponse) and only.status == RunStatus.Rejected, only
        assert only.sequence_number == 0 and only.session_id == s, only
        assert only.error is not None and only.error.code == "SESSION_BUSY", only
    finally:
        status, stopped = await stop(s)
    assert status == 200, f"HTTP {status} {stopped}"
    events = await canceled_end(reader)
    # The busy turn named the running task.
    assert task_of(events) in (only.error.message or ""), only
    return done(events, busy=only.model_dump(exclude_none=True))


async def _collect(events: Any) -> list[Event]:
    return [e async for e in events]


async def scenario_malformed() -> dict[str, Any]:
    user = {"role": "user", "type": "message", "content": [{"type": "text", "text": "hi"}]}
    cases = [
        ({"stream": True}, "input"),
        ({"input": [user], "n": 9}, "n"),
        (
            {"input": [{"role": "robot", "content": [{"type": "text", "text": "x"}]}]},
            "input[0].role",
        ),
        (
            # A schema class that the client would build (image_url is optional there).
            AgentRequest(
                input=[Message(role=Role.USER, content=[ImageContent()])]
            ).model_dump(exclude_none=True),
            "input[0].content[0].image_url",
        ),
    ]
    seen = []
    for body, field in cases:
        error = (await refused(Raw(body), 400))["error"]
        assert error["code"] == "INVALID_REQUEST", error
        assert error.get("field") == field, f"{body}: {error}"
        seen.append(error)
    return {"errors": seen}


async def scenario_unauthenticated() -> dict[str, Any]:
    global KEY
    key, KEY = KEY, ""
    try:
        client_without = HTTPAgentAPIClient(endpoint(), token=None, timeout=STREAM_TIMEOUT_S)
        try:
            async for _ in client_without.astream(say("hi")):
                raise AssertionError("an event without a key")
            raise AssertionError("no refusal without a key")
        except httpx.HTTPStatusError as e:
            assert e.response.status_code == 401, e
            assert e.response.headers.get("www-authenticate") == "Bearer", e.response.headers
        quiet(allowed_http_errors=1)
        error = (await refused(say("hi"), 401))["error"]
        assert error["code"] == "UNAUTHENTICATED", error
    finally:
        KEY = key
    # A wrong key: 401 too.
    error = (await refused(say("hi"), 401, token="not-a-key"))["error"]
    assert error["code"] == "UNAUTHENTICATED", error
    return {"error": error}


SCENARIOS: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
    ("echo", scenario_echo),
    ("think", scenario_think),
    ("tool", scenario_tool),
    ("form", scenario_form),
    ("form-wrong", scenario_form_wrong),
    ("form-answer", scenario_form_answer),
    ("fail", scenario_fail),
    ("reply", scenario_reply),
    ("stream-false", scenario_stream_false),
    ("slow-stop", scenario_slow_stop),
    ("busy", scenario_busy),
    ("malformed", scenario_malformed),
    ("unauthenticated", scenario_unauthenticated),
]


async def run_all() -> bool:
    all_ok = True
    for name, scenario in SCENARIOS:
        WATCH.take()
        try:
            detail: Any = await asyncio.wait_for(scenario(), SCENARIO_TIMEOUT_S)
            ok = True
        except BaseException as e:  # noqa: BLE001 - every failure is reported, none stops the run
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            ok = False
            detail = {
                "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(limit=-6),
                "client_log": WATCH.take(),
            }
        all_ok = all_ok and ok
        print(json.dumps({"scenario": name, "ok": ok, "detail": detail}), flush=True)
    return all_ok


def main() -> int:
    global BASE_URL, AGENT, KEY
    AGENT = os.environ.get("AGENT_API_AGENT", "")
    KEY = os.environ.get("AGENT_API_KEY", "")
    if len(sys.argv) != 2 or not AGENT or not KEY:
        print(f"usage: AGENT_API_AGENT=ID AGENT_API_KEY=KEY {sys.argv[0]} BASE_URL", file=sys.stderr)
        return 2
    BASE_URL = sys.argv[1].rstrip("/")
    return 0 if asyncio.run(run_all()) else 1


if __name__ == "__main__":
    sys.exit(main())
