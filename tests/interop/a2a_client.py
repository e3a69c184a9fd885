"""Interop check: the official A2A Python SDK client (a2a-sdk 1.3.0) against a running aiphost.

Usage: python a2a_client.py BASE_URL     (BASE_URL like http://127.0.0.1:8080)

The host must serve the example partners `echo`, `trip-planner`, `chunked` and `tck`. Every
scenario reaches the host only through the SDK: the agent card is fetched and parsed by the SDK's
`A2ACardResolver` (from /agents/{id}/.well-known/agent-card.json), the client is made by the SDK's
`ClientFactory` from that card, choosing the card's interface of one protocol binding, and every
call is a method of the SDK's `Client` (send_message, get_task, cancel_task, list_tasks,
subscribe), whose transports parse each answer into the SDK's protobuf types and map each error to
the SDK's exception classes. Each scenario runs once over JSON-RPC and once over HTTP+JSON
("jsonrpc/<name>", "rest/<name>"); the card is checked once ("card").

Each scenario prints one JSON line {"scenario", "ok", "detail"}; the exit code is 1 if any failed.
Nothing here works around the host: an answer the SDK rejects is a failed scenario, and its detail
shows the HTTP exchanges of that scenario (and the stream events the SDK yielded).

The "push" scenario runs a webhook receiver of its own on 127.0.0.1 (the host must allow private
webhook URLs) and checks what it got: A2A `StreamResponse`s, with the config's authentication.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.server.tasks.task_manager import append_artifact_to_task
from a2a.types.a2a_pb2 import (
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import (
    A2AError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

SCENARIO_TIMEOUT_S = 60.0
# Longest wait for one stream to end (the tck partner's long-running task works for 4 s).
STREAM_TIMEOUT_S = 30.0

BASE_URL = ""
# The card extension naming the partner's chat doors (the Agent API's URL among its params).
CHAT_DOORS_EXTENSION = "https://aiphost.dev/ext/chat-doors/v1"

BINDINGS: list[tuple[str, str]] = [
    ("jsonrpc", TransportProtocol.JSONRPC.value),
    ("rest", TransportProtocol.HTTP_JSON.value),
]


# --------------------------------------------------------------------------------------------
# Diagnostics: every HTTP exchange of a scenario, and every stream event the SDK yielded
# --------------------------------------------------------------------------------------------


class Log:
    """What a scenario sent and got, shown when it fails."""

    def __init__(self) -> None:
        self.exchanges: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []

    async def on_request(self, request: httpx.Request) -> None:
        self.exchanges.append(
            {
                "request": f"{request.method} {request.url} "
                f"{request.content.decode(errors='replace') if request.content else ''}".rstrip(),
                "response": None,
            }
        )

    async def on_response(self, response: httpx.Response) -> None:
        entry = next(
            (
                e
                for e in reversed(self.exchanges)
                if e["response"] is None
                and e["request"].startswith(f"{response.request.method} {response.request.url}")
            ),
            None,
        )
        content_type = response.headers.get("content-type", "")
        if "text/event-stream" in content_type:
            # Reading it here would wait for the stream's end; its events are logged as the SDK
            # yields them.
            text = f"HTTP {response.status_code} ({content_type}: events below)"
        else:
            await response.aread()
            text = f"HTTP {response.status_code} {response.text}"
        if entry is not None:
            entry["response"] = text

    def event(self, what: str, event: Any) -> None:
        self.events.append({what: MessageToDict(event)})

    def urls(self) -> list[str]:
        return [e["request"].split(" ", 2)[1] for e in self.exchanges]


LOG = Log()


class Sdk:
    """An httpx client shared by the SDK clients of one scenario (closed with it), recording into
    LOG. The SDK's factory adds its A2A-Version header to it."""

    def __init__(self) -> None:
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(STREAM_TIMEOUT_S),
            event_hooks={"request": [LOG.on_request], "response": [LOG.on_response]},
        )
        self.clients: list[Client] = []

    async def card(self, agent: str) -> AgentCard:
        """The agent's card, as the SDK's resolver fetches and parses it."""
        resolver = A2ACardResolver(self.http, f"{BASE_URL}/agents/{agent}")
        return await resolver.get_agent_card()

    async def client(
        self, agent: str, binding: str, *, streaming: bool = True
    ) -> tuple[Client, str]:
        """An SDK client for `agent` over `binding`, made by the SDK's factory from the agent's
        card, and the URL of the interface it was made for."""
        card = await self.card(agent)
        config = ClientConfig(
            streaming=streaming,
            httpx_client=self.http,
            supported_protocol_bindings=[binding],
        )
        client = ClientFactory(config).create(card)
        self.clients.append(client)
        urls = [i.url for i in card.supported_interfaces if i.protocol_binding == binding]
        assert urls, f"the card of {agent} has no {binding} interface: {MessageToDict(card)}"
        return client, urls[0]

    async def __aenter__(self) -> Sdk:
        return self

    async def __aexit__(self, *exc: object) -> None:
        for client in self.clients:
            await client.close()
        await self.http.aclose()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def user_message(
    text: str,
    *,
    prefix: str = "m",
    task_id: str | None = None,
    context_id: str | None = None,
) -> Message:
    """A user message; the tck partner picks its scenario by the message id's prefix."""
    return Message(
        role=Role.ROLE_USER,
        message_id=f"{prefix}-{uuid.uuid4()}",
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def send_request(message: Message, **configuration: Any) -> SendMessageRequest:
    request = SendMessageRequest(message=message)
    if configuration:
        request.configuration.CopyFrom(SendMessageConfiguration(**configuration))
    return request


def state_name(state: int) -> str:
    return TaskState.Name(state)


def expect_state(task: Task, wanted: int, what: str) -> None:
    assert task.status.state == wanted, (
        f"{what}: expected {state_name(wanted)}, got {state_name(task.status.state)}; "
        f"task={MessageToDict(task)}"
    )


def texts(parts: Any) -> list[str]:
    return [p.text for p in parts if p.WhichOneof("content") == "text"]


def artifact_texts(task: Task) -> list[str]:
    return [t for a in task.artifacts for t in texts(a.parts)]


def kind(event: StreamResponse) -> str:
    return event.WhichOneof("payload") or "empty"


async def send_blocking(client: Client, request: SendMessageRequest) -> Task:
    """A non-streaming client's send: the SDK yields exactly one response, here a task."""
    responses = [r async for r in client.send_message(request)]
    for r in responses:
        LOG.event("sent", r)
    assert len(responses) == 1, f"a blocking send yielded {len(responses)} responses"
    assert kind(responses[0]) == "task", f"expected a task, got {MessageToDict(responses[0])}"
    return responses[0].task


async def drain(stream: AsyncIterator[StreamResponse], what: str) -> list[StreamResponse]:
    """Every event of `stream` until the host ends it (failing if it does not within the limit)."""
    events: list[StreamResponse] = []

    async def collect() -> None:
        async for event in stream:
            LOG.event(what, event)
            events.append(event)

    try:
        await asyncio.wait_for(collect(), STREAM_TIMEOUT_S)
    except TimeoutError:
        raise AssertionError(
            f"{what}: the stream did not end within {STREAM_TIMEOUT_S} s; events so far: "
            f"{[kind(e) for e in events]}"
        ) from None
    return events


def check_stream(
    events: list[StreamResponse], what: str, *, first: str, final: int
) -> tuple[str, str]:
    """A stream of one task: it begins with `first`, every event names the same task and context,
    and its last event is the status update to `final`. Returns (task id, context id)."""
    assert events, f"{what}: the stream was empty"
    kinds = [kind(e) for e in events]
    assert kinds[0] == first, f"{what}: the stream begins with {kinds[0]}, not {first}: {kinds}"
    assert all(k in ("task", "status_update", "artifact_update") for k in kinds), (
        f"{what}: unexpected events {kinds}"
    )
    ids = set()
    contexts = set()
    for e in events:
        body = getattr(e, kind(e))
        ids.add(body.id if kind(e) == "task" else body.task_id)
        contexts.add(body.context_id)
    assert len(ids) == 1 and "" not in ids, f"{what}: events of tasks {ids}"
    assert len(contexts) == 1 and "" not in contexts, f"{what}: events of contexts {contexts}"
    assert kinds[-1] == "status_update", f"{what}: the stream ends with {kinds[-1]}: {kinds}"
    last = events[-1].status_update.status.state
    assert last == final, f"{what}: the stream ends at {state_name(last)}, not {state_name(final)}"
    for e in events[:-1]:
        if kind(e) == "status_update":
            assert e.status_update.status.state not in TERMINAL, (
                f"{what}: an ended state before the last event: {MessageToDict(e)}"
            )
    return ids.pop(), contexts.pop()


TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


async def expect_error(call: Awaitable[Any], error: type[A2AError], what: str) -> str:
    try:
        answer = await call
    except error as e:
        return f"{type(e).__name__}: {e.message}"
    except Exception as e:  # noqa: BLE001 - any other outcome is the failure this reports
        raise AssertionError(
            f"{what}: expected the SDK to raise {error.__name__}, it raised {e!r}"
        ) from e
    shown = MessageToDict(answer) if hasattr(answer, "DESCRIPTOR") else answer
    raise AssertionError(f"{what}: expected {error.__name__}, got an answer: {shown}")


async def expect_stream_error(
    stream: AsyncIterator[StreamResponse], error: type[A2AError], what: str
) -> str:
    async def first() -> Any:
        async for event in stream:
            LOG.event(what, event)
            return event
        return "the stream ended without an error"

    return await expect_error(asyncio.wait_for(first(), STREAM_TIMEOUT_S), error, what)


def only_binding(log: Log, binding: str, what: str) -> None:
    """Every A2A call went to an interface of `binding` (the one the factory chose from the card):
    JSON-RPC posts to /agents/{id}/a2a, HTTP+JSON calls paths under /agents/{id}/a2a/rest/."""
    calls = [u.split("?", 1)[0] for u in log.urls() if "/.well-known/" not in u]
    assert calls, f"{what}: no A2A call was made"
    if binding == TransportProtocol.JSONRPC.value:
        stray = [u for u in calls if not u.endswith("/a2a")]
    else:
        stray = [u for u in calls if "/a2a/rest/" not in u]
    assert not stray, f"{what}: calls outside the {binding} interfaces: {stray}"


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


async def scenario_card() -> str:
    async with Sdk() as sdk:
        card = await sdk.card("echo")
    assert card.name == "Echo", f"name: {card.name!r}"
    assert card.capabilities.streaming, "the card does not declare streaming"
    # The v1.0 interface of each binding (the JSON-RPC endpoint also declares its v0.3 one,
    # which a2a_v03_client.py checks).
    interfaces = {
        i.protocol_binding: i for i in card.supported_interfaces if i.protocol_version == "1.0"
    }
    for _, binding in BINDINGS:
        assert binding in interfaces, f"no {binding} interface of version 1.0: {MessageToDict(card)}"
    assert interfaces[TransportProtocol.JSONRPC.value].url == f"{BASE_URL}/agents/echo/a2a"
    assert interfaces[TransportProtocol.HTTP_JSON.value].url == f"{BASE_URL}/agents/echo/a2a/rest"
    assert [s.id for s in card.skills] == ["echo"], f"skills: {[s.id for s in card.skills]}"
    # The other doors: one optional extension, its params naming the Agent API's, AIFlowy's and
    # MCP's URLs.
    chat = [e for e in card.capabilities.extensions if e.uri == CHAT_DOORS_EXTENSION]
    assert len(chat) == 1, f"extensions: {MessageToDict(card.capabilities)}"
    assert not chat[0].required, "the chat-doors extension is required"
    params = MessageToDict(chat[0].params)
    assert params == {
        "agentApi": f"{BASE_URL}/agents/echo/process",
        "aiflowyChat": f"{BASE_URL}/agents/echo/aiflowy/chat",
        "aiflowyForm": f"{BASE_URL}/agents/echo/aiflowy/form",
        "mcp": f"{BASE_URL}/agents/echo/mcp",
    }, f"params: {params}"
    return (
        f"name={card.name} version={card.version} "
        f"interfaces={[(i.protocol_binding, i.url) for i in card.supported_interfaces]}"
    )


async def scenario_send(binding: str) -> str:
    async with Sdk() as sdk:
        client, url = await sdk.client("echo", binding, streaming=False)
        task = await send_blocking(client, send_request(user_message("hello from a2a-sdk")))
    expect_state(task, TaskState.TASK_STATE_COMPLETED, "send")
    assert task.id and task.context_id, f"no id or context: {MessageToDict(task)}"
    assert "hello from a2a-sdk" in artifact_texts(task), (
        f"no artifact echoes the text: {[MessageToDict(a) for a in task.artifacts]}"
    )
    only_binding(LOG, binding, "send")
    return f"{url}: task {task.id} {state_name(task.status.state)} artifacts={artifact_texts(task)}"


async def scenario_stream(binding: str) -> str:
    async with Sdk() as sdk:
        client, _ = await sdk.client("echo", binding)
        events = await drain(
            client.send_message(send_request(user_message("streamed hello"))), "stream"
        )
        task_id, _ = check_stream(
            events, "stream", first="task", final=TaskState.TASK_STATE_COMPLETED
        )
        got = await client.get_task(GetTaskRequest(id=task_id))
    kinds = [kind(e) for e in events]
    updates = [e.artifact_update for e in events if kind(e) == "artifact_update"]
    assert updates, f"no artifact update: {kinds}"
    streamed = [t for u in updates for t in texts(u.artifact.parts)]
    assert "streamed hello" in streamed, f"no artifact update echoes the text: {streamed}"
    same_artifacts(fold(events), got, "stream")
    only_binding(LOG, binding, "stream")
    return f"task {task_id}: {kinds}"


async def stream_chunks(client: Client) -> list[StreamResponse]:
    """The tck partner's chunked artifact: "chunk-1 " then "chunk-2", the last chunk marked."""
    message = user_message("chunks", prefix="tck-stream-artifact-chunked")
    events = await drain(client.send_message(send_request(message)), "stream")
    check_stream(events, "stream", first="task", final=TaskState.TASK_STATE_COMPLETED)
    return events


async def scenario_stream_chunks(binding: str) -> str:
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding)
        events = await stream_chunks(client)
    updates = [e.artifact_update for e in events if kind(e) == "artifact_update"]
    assert len(updates) == 2, (
        f"expected 2 artifact chunks, got {[MessageToDict(u) for u in updates]}"
    )
    assert [u.artifact.artifact_id for u in updates] == ["artifact-1", "artifact-1"]
    assert updates[1].append, f"the second chunk does not append: {MessageToDict(updates[1])}"
    assert [u.last_chunk for u in updates] == [False, True], (
        f"lastChunk: {[u.last_chunk for u in updates]}"
    )
    whole = "".join(t for u in updates for t in texts(u.artifact.parts))
    assert whole == "chunk-1 chunk-2", f"the chunks make {whole!r}"
    only_binding(LOG, binding, "stream-chunks")
    return f"{[kind(e) for e in events]} artifact={whole!r}"


async def scenario_stream_chunks_fold(binding: str) -> str:
    """The chunks, folded as the SDK folds them, make the artifact the task has: the first chunk
    of an artifact must not say append=true (A2A 1.0, 4.2.2: append extends an artifact sent
    before; the SDK's fold refuses it with InvalidAgentResponseError)."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding)
        events = await stream_chunks(client)
        got = await client.get_task(GetTaskRequest(id=events[0].task.id))
    same_artifacts(fold(events), got, "stream-chunks-fold")
    only_binding(LOG, binding, "stream-chunks-fold")
    return f"artifacts={[MessageToDict(a) for a in got.artifacts]}"


async def scenario_input_required(binding: str) -> str:
    """The trip planner asks for what it is missing; a follow-up naming the task completes it."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("trip-planner", binding, streaming=False)
        asked = await send_blocking(client, send_request(user_message("I want a trip")))
        expect_state(asked, TaskState.TASK_STATE_INPUT_REQUIRED, "first turn")
        question = texts(asked.status.message.parts)
        assert asked.status.message.role == Role.ROLE_AGENT, (
            f"the question's role: {MessageToDict(asked.status)}"
        )
        assert any(q.strip() for q in question), f"no question: {MessageToDict(asked.status)}"
        follow_up = user_message(
            "destination: Beijing, dates: 2025-10-01 to 2025-10-03, budget: 5000",
            task_id=asked.id,
        )
        done = await send_blocking(client, send_request(follow_up))
    expect_state(done, TaskState.TASK_STATE_COMPLETED, "follow-up")
    assert done.id == asked.id, f"the follow-up answered task {done.id}, not {asked.id}"
    assert done.context_id == asked.context_id, (
        f"context changed: {asked.context_id} -> {done.context_id}"
    )
    plan = artifact_texts(done)
    assert any("Beijing" in t for t in plan), f"the itinerary does not mention Beijing: {plan}"
    only_binding(LOG, binding, "input-required")
    return f"question={question[0]!r} artifacts={[a.artifact_id for a in done.artifacts]}"


async def scenario_input_required_stream(binding: str) -> str:
    """A stream ends when its task needs input; a streamed follow-up runs it to its end."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding)
        first = await drain(
            client.send_message(send_request(user_message("x", prefix="tck-input-required"))),
            "first turn",
        )
        task_id, context_id = check_stream(
            first, "first turn", first="task", final=TaskState.TASK_STATE_INPUT_REQUIRED
        )
        follow_up = user_message("go on", prefix="tck-complete-task", task_id=task_id)
        second = await drain(client.send_message(send_request(follow_up)), "follow-up")
        second_kind = kind(second[0]) if second else "task"
        same, same_context = check_stream(
            second, "follow-up", first=second_kind, final=TaskState.TASK_STATE_COMPLETED
        )
    assert second_kind in ("task", "status_update"), (
        f"the follow-up's stream begins with {second_kind}"
    )
    assert same == task_id and same_context == context_id, (
        f"the follow-up streamed task {same}/{same_context}, not {task_id}/{context_id}"
    )
    final = second[-1].status_update.status
    assert texts(final.message.parts) == ["Hello from TCK"], (
        f"the final status message: {MessageToDict(final)}"
    )
    only_binding(LOG, binding, "input-required-stream")
    return f"first={[kind(e) for e in first]} follow-up={[kind(e) for e in second]}"


class Subscription:
    """An SDK subscription to a task (`Client.subscribe`), read in the background."""

    def __init__(self, client: Client, task_id: str) -> None:
        self.events: list[StreamResponse] = []
        self._first = asyncio.Event()
        self._reading = asyncio.create_task(self._read(client, task_id))

    async def _read(self, client: Client, task_id: str) -> None:
        async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
            LOG.event("subscription", event)
            self.events.append(event)
            self._first.set()

    async def first(self) -> StreamResponse:
        """The subscription's first event (once it is here, the subscription is in place)."""
        waiting = asyncio.create_task(self._first.wait())
        await asyncio.wait(
            {self._reading, waiting}, timeout=STREAM_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
        )
        waiting.cancel()
        if not self.events:
            if self._reading.done():
                self._reading.result()  # raises what the SDK raised
                raise AssertionError("the subscription ended without an event")
            self._reading.cancel()
            raise AssertionError(f"the subscription yielded nothing within {STREAM_TIMEOUT_S} s")
        return self.events[0]

    async def end(self) -> list[StreamResponse]:
        """Every event, once the host has ended the stream."""
        try:
            await asyncio.wait_for(asyncio.shield(self._reading), STREAM_TIMEOUT_S)
        except TimeoutError:
            self._reading.cancel()
            raise AssertionError(
                f"the subscription did not end with its task; events: "
                f"{[kind(e) for e in self.events]}"
            ) from None
        return self.events


async def scenario_resubscribe(binding: str) -> str:
    """A subscription to a task waiting for input begins with the task as it is, then follows it
    to its end when another client's message continues it."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding, streaming=False)
        follower, _ = await sdk.client("tck", binding)
        asked = await send_blocking(
            client, send_request(user_message("x", prefix="tck-input-required"))
        )
        expect_state(asked, TaskState.TASK_STATE_INPUT_REQUIRED, "first turn")
        subscription = Subscription(follower, asked.id)
        first = await subscription.first()
        assert kind(first) == "task", f"the subscription begins with {kind(first)}"
        expect_state(first.task, TaskState.TASK_STATE_INPUT_REQUIRED, "the subscription's task")
        done = await send_blocking(
            client,
            send_request(user_message("go on", prefix="tck-complete-task", task_id=asked.id)),
        )
        expect_state(done, TaskState.TASK_STATE_COMPLETED, "follow-up")
        events = await subscription.end()
    task_id, _ = check_stream(
        events, "subscription", first="task", final=TaskState.TASK_STATE_COMPLETED
    )
    assert task_id == asked.id, f"the subscription followed {task_id}, not {asked.id}"
    only_binding(LOG, binding, "resubscribe")
    return describe(events)


async def scenario_resubscribe_chunks(binding: str) -> str:
    """A subscription that joins while an artifact is being streamed: the task it begins with
    carries the artifact so far, the updates that follow append to it, and folded as the SDK
    folds them they make the artifact the task ends with (nothing lost, nothing twice)."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("chunked", binding, streaming=False)
        follower, _ = await sdk.client("chunked", binding)
        # Ten chunks of 500 bytes, 500 ms apart: the subscription joins between them.
        message = user_message("size=5000 chunkSize=500 delayMs=500")
        started = await send_blocking(client, send_request(message, return_immediately=True))
        got = started
        for _ in range(400):
            if got.artifacts:
                break
            await asyncio.sleep(0.025)
            got = await client.get_task(GetTaskRequest(id=started.id))
        assert got.artifacts, f"no chunk was stored: {MessageToDict(got)}"
        events = await drain(
            follower.subscribe(SubscribeToTaskRequest(id=started.id)), "subscription"
        )
        final = await client.get_task(GetTaskRequest(id=started.id))
    check_stream(events, "subscription", first="task", final=TaskState.TASK_STATE_COMPLETED)
    joined = [t for a in events[0].task.artifacts for t in texts(a.parts)]
    assert joined, f"the subscription's task carries no artifact: {MessageToDict(events[0].task)}"
    updates = [e.artifact_update for e in events if kind(e) == "artifact_update"]
    assert updates, f"the subscription got no chunk after it joined: {describe(events)}"
    assert all(u.append for u in updates), (
        f"a chunk after the join does not append: {[MessageToDict(u) for u in updates]}"
    )
    same_artifacts(fold(events), final, "resubscribe-chunks")
    assert sum(len(t) for t in artifact_texts(final)) == 5000, "the report is not 5000 bytes"
    only_binding(LOG, binding, "resubscribe-chunks")
    return f"joined with {len(joined)} chunk(s), then {len(updates)} appended"


def describe(events: list[StreamResponse]) -> str:
    return f"{[kind(e) for e in events]} states={[state_name(s) for s in states(events)]}"


def fold(events: list[StreamResponse]) -> Task:
    """The task a stream tells of, its events folded the way the SDK folds them into a task (its
    `append_artifact_to_task`: an update with append=false adds or replaces its artifact, one with
    append=true extends an artifact sent before, and refuses one never sent)."""
    task = Task()
    task.CopyFrom(events[0].task)
    for e in events[1:]:
        if kind(e) == "status_update":
            task.status.CopyFrom(e.status_update.status)
        elif kind(e) == "artifact_update":
            append_artifact_to_task(task, e.artifact_update)
    return task


def same_artifacts(folded: Task, got: Task, what: str) -> None:
    assert list(folded.artifacts) == list(got.artifacts), (
        f"{what}: the stream's artifacts {[MessageToDict(a) for a in folded.artifacts]} are not "
        f"the task's {[MessageToDict(a) for a in got.artifacts]}"
    )


def states(events: list[StreamResponse]) -> list[int]:
    out = []
    for e in events:
        if kind(e) == "task":
            out.append(e.task.status.state)
        elif kind(e) == "status_update":
            out.append(e.status_update.status.state)
    return out


async def scenario_resubscribe_working(binding: str) -> str:
    """A task still working (returnImmediately answered at once): a subscription sees it working
    and ends with its completion."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding, streaming=False)
        follower, _ = await sdk.client("tck", binding)
        message = user_message("work", prefix="test-resubscribe-message-id")
        started = await send_blocking(client, send_request(message, return_immediately=True))
        assert started.status.state in (
            TaskState.TASK_STATE_SUBMITTED,
            TaskState.TASK_STATE_WORKING,
        ), f"returnImmediately answered {state_name(started.status.state)}"
        events = await drain(
            follower.subscribe(SubscribeToTaskRequest(id=started.id)), "subscription"
        )
    task_id, _ = check_stream(
        events, "subscription", first="task", final=TaskState.TASK_STATE_COMPLETED
    )
    assert task_id == started.id
    assert events[0].task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    ), f"the subscription's task: {MessageToDict(events[0].task.status)}"
    only_binding(LOG, binding, "resubscribe-working")
    return describe(events)


async def scenario_cancel(binding: str) -> str:
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding, streaming=False)
        waiting = await send_blocking(
            client, send_request(user_message("x", prefix="tck-input-required"))
        )
        expect_state(waiting, TaskState.TASK_STATE_INPUT_REQUIRED, "before the cancel")
        canceled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        expect_state(canceled, TaskState.TASK_STATE_CANCELED, "cancel")
        assert canceled.id == waiting.id
        got = await client.get_task(GetTaskRequest(id=waiting.id))
        expect_state(got, TaskState.TASK_STATE_CANCELED, "get after the cancel")
        again = await expect_error(
            client.cancel_task(CancelTaskRequest(id=waiting.id)),
            TaskNotCancelableError,
            "second cancel",
        )
        echo, _ = await sdk.client("echo", binding, streaming=False)
        completed = await send_blocking(echo, send_request(user_message("done")))
        expect_state(completed, TaskState.TASK_STATE_COMPLETED, "echo")
        ended = await expect_error(
            echo.cancel_task(CancelTaskRequest(id=completed.id)),
            TaskNotCancelableError,
            "cancel of a completed task",
        )
        unknown = await expect_error(
            client.cancel_task(CancelTaskRequest(id=f"no-such-task-{uuid.uuid4()}")),
            TaskNotFoundError,
            "cancel of an unknown task",
        )
    only_binding(LOG, binding, "cancel")
    return f"canceled; second cancel: {again}; completed: {ended}; unknown: {unknown}"


async def scenario_cancel_working(binding: str) -> str:
    """A task canceled while its partner works: CANCELED at once, and a subscription to it ends
    with the cancel."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding, streaming=False)
        follower, _ = await sdk.client("tck", binding)
        message = user_message("work", prefix="test-resubscribe-message-id")
        started = await send_blocking(client, send_request(message, return_immediately=True))
        subscription = Subscription(follower, started.id)
        first = await subscription.first()
        assert kind(first) == "task", f"the subscription begins with {kind(first)}"
        assert first.task.status.state in (
            TaskState.TASK_STATE_SUBMITTED,
            TaskState.TASK_STATE_WORKING,
        ), f"the subscription's task: {MessageToDict(first.task.status)}"
        canceled = await client.cancel_task(CancelTaskRequest(id=started.id))
        expect_state(canceled, TaskState.TASK_STATE_CANCELED, "cancel")
        events = await subscription.end()
        got = await client.get_task(GetTaskRequest(id=started.id))
    check_stream(events, "subscription", first="task", final=TaskState.TASK_STATE_CANCELED)
    expect_state(got, TaskState.TASK_STATE_CANCELED, "get after the cancel")
    only_binding(LOG, binding, "cancel-working")
    return f"subscription: {describe(events)}"


async def scenario_ended_task(binding: str) -> str:
    """An ended task takes no more messages, and cannot be subscribed to."""
    async with Sdk() as sdk:
        client, _ = await sdk.client("echo", binding, streaming=False)
        streaming, _ = await sdk.client("echo", binding)
        done = await send_blocking(client, send_request(user_message("once")))
        expect_state(done, TaskState.TASK_STATE_COMPLETED, "send")
        message = await expect_error(
            send_blocking(client, send_request(user_message("twice", task_id=done.id))),
            UnsupportedOperationError,
            "message to a completed task",
        )
        subscribe = await expect_stream_error(
            streaming.subscribe(SubscribeToTaskRequest(id=done.id)),
            UnsupportedOperationError,
            "subscription to a completed task",
        )
        unknown = await expect_stream_error(
            streaming.subscribe(SubscribeToTaskRequest(id=f"no-such-task-{uuid.uuid4()}")),
            TaskNotFoundError,
            "subscription to an unknown task",
        )
        got = await client.get_task(GetTaskRequest(id=done.id))
    texts_seen = [t for m in got.history for t in texts(m.parts)]
    assert "twice" not in texts_seen, f"the refused message is in the history: {texts_seen}"
    only_binding(LOG, binding, "ended-task")
    return f"message: {message}; subscribe: {subscribe}; unknown: {unknown}"


async def scenario_get_task(binding: str) -> str:
    async with Sdk() as sdk:
        client, _ = await sdk.client("tck", binding, streaming=False)
        asked = await send_blocking(
            client, send_request(user_message("x", prefix="tck-input-required"))
        )
        follow_up = user_message("go on", prefix="tck-complete-task", task_id=asked.id)
        await send_blocking(client, send_request(follow_up))
        full = await client.get_task(GetTaskRequest(id=asked.id))
        one = await client.get_task(GetTaskRequest(id=asked.id, history_length=1))
        none = await client.get_task(GetTaskRequest(id=asked.id, history_length=0))
        unknown = await expect_error(
            client.get_task(GetTaskRequest(id=f"no-such-task-{uuid.uuid4()}")),
            TaskNotFoundError,
            "get of an unknown task",
        )
    expect_state(full, TaskState.TASK_STATE_COMPLETED, "get")
    assert full.id == asked.id and full.context_id == asked.context_id
    users = [m.message_id for m in full.history if m.role == Role.ROLE_USER]
    assert users[:1] and users[0].startswith("tck-input-required"), f"user messages: {users}"
    assert users[-1] == follow_up.message_id, f"user messages: {users}"
    assert len(full.history) >= 2, f"history: {[MessageToDict(m) for m in full.history]}"
    assert len(one.history) == 1, f"historyLength=1 gave {len(one.history)} messages"
    assert one.history[0] == full.history[-1], (
        f"historyLength=1 is not the newest message: {MessageToDict(one.history[0])}"
    )
    assert len(none.history) == 0, f"historyLength=0 gave {len(none.history)} messages"
    only_binding(LOG, binding, "get-task")
    return f"history={len(full.history)} messages (users {users}); unknown: {unknown}"


async def scenario_list_tasks(binding: str) -> str:
    async with Sdk() as sdk:
        client, _ = await sdk.client("echo", binding, streaming=False)
        first = await send_blocking(client, send_request(user_message("one")))
        context = first.context_id
        second = await send_blocking(client, send_request(user_message("two", context_id=context)))
        listed = await client.list_tasks(
            ListTasksRequest(context_id=context, page_size=10, include_artifacts=True)
        )
    assert second.context_id == context, f"the second task's context: {second.context_id}"
    ids = [t.id for t in listed.tasks]
    assert sorted(ids) == sorted([first.id, second.id]), f"listed {ids}"
    assert listed.total_size == 2, f"totalSize {listed.total_size}"
    assert all(artifact_texts(t) for t in listed.tasks), "includeArtifacts gave no artifacts"
    only_binding(LOG, binding, "list-tasks")
    return f"context {context}: {ids}"


class Webhook:
    """A webhook receiver on 127.0.0.1 that keeps every POST: (path, headers, JSON body)."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], Any]] = []
        got = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the standard library's name
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{path}"

    async def until(self, path: str, state: str, what: str) -> list[tuple[dict[str, str], Any]]:
        """The notifications at `path` (each as the task it carries) once one says the task is
        in `state` (a v1.0 state name). A v1.0 notification is a StreamResponse holding the task;
        one to a config made over v0.3 is the task itself, its state spelled v0.3's way."""
        v03_state = state.removeprefix("TASK_STATE_").lower().replace("_", "-")
        for _ in range(int(SCENARIO_TIMEOUT_S * 10)):
            hits = [(h, b.get("task", b)) for p, h, b in list(self.got) if p == f"/{path}"]
            if any(t.get("status", {}).get("state") in (state, v03_state) for _, t in hits):
                return hits
            await asyncio.sleep(0.1)
        raise AssertionError(f"{what}: no {state} notification at /{path}; got {self.got}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def scenario_push(binding: str) -> str:
    """Push configs through the SDK: one sent with a message that starts a task, one made for
    the task while it waits for input; both hear it complete, as A2A StreamResponses with the
    configs' authentication; read, listed and deleted (twice) through the SDK."""
    hook = Webhook()
    try:
        async with Sdk() as sdk:
            client, _ = await sdk.client("tck", binding, streaming=False)
            inline = TaskPushNotificationConfig(
                id="inline",
                url=hook.url("inline"),
                token="tok-inline",
                authentication=AuthenticationInfo(scheme="Bearer", credentials="cred-inline"),
            )
            asked = await send_blocking(
                client,
                send_request(
                    user_message("x", prefix="tck-input-required"),
                    task_push_notification_config=inline,
                ),
            )
            expect_state(asked, TaskState.TASK_STATE_INPUT_REQUIRED, "send")
            made = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=asked.id, id="made", url=hook.url("made"))
            )
            assert made.id == "made" and made.task_id == asked.id, f"made: {MessageToDict(made)}"
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=asked.id, id="inline")
            )
            assert got.url == inline.url and got.authentication.scheme == "Bearer", (
                f"got: {MessageToDict(got)}"
            )
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=asked.id)
            )
            ids = sorted(c.id for c in listed.configs)
            assert ids == ["inline", "made"], f"listed {ids}"
            await send_blocking(
                client,
                send_request(user_message("go on", prefix="tck-complete-task", task_id=asked.id)),
            )
            inline_hits = await hook.until("inline", "TASK_STATE_COMPLETED", "inline config")
            made_hits = await hook.until("made", "TASK_STATE_COMPLETED", "made config")
            for headers, body in inline_hits:
                assert headers.get("authorization") == "Bearer cred-inline", f"headers {headers}"
                assert headers.get("x-a2a-notification-token") == "tok-inline", f"headers {headers}"
                assert body["id"] == asked.id, f"body {body}"
            assert all("authorization" not in h for h, _ in made_hits), "made has no authentication"
            for _ in range(2):
                await client.delete_task_push_notification_config(
                    DeleteTaskPushNotificationConfigRequest(task_id=asked.id, id="made")
                )
            missing = await expect_error(
                client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=asked.id, id="made")
                ),
                TaskNotFoundError,
                "get of a deleted config",
            )
    finally:
        hook.close()
    only_binding(LOG, binding, "push")
    inline_states = [t["status"]["state"] for _, t in inline_hits]
    return f"inline heard {inline_states}; made heard {len(made_hits)}; deleted: {missing}"


BINDING_SCENARIOS: list[tuple[str, Callable[[str], Awaitable[str]]]] = [
    ("send", scenario_send),
    ("stream", scenario_stream),
    ("stream-chunks", scenario_stream_chunks),
    ("stream-chunks-fold", scenario_stream_chunks_fold),
    ("input-required", scenario_input_required),
    ("input-required-stream", scenario_input_required_stream),
    ("resubscribe", scenario_resubscribe),
    ("resubscribe-working", scenario_resubscribe_working),
    ("resubscribe-chunks", scenario_resubscribe_chunks),
    ("cancel", scenario_cancel),
    ("cancel-working", scenario_cancel_working),
    ("ended-task", scenario_ended_task),
    ("get-task", scenario_get_task),
    ("list-tasks", scenario_list_tasks),
    ("push", scenario_push),
]


def scenarios() -> list[tuple[str, Callable[[], Awaitable[str]]]]:
    out: list[tuple[str, Callable[[], Awaitable[str]]]] = [("card", scenario_card)]
    for label, binding in BINDINGS:
        for name, scenario in BINDING_SCENARIOS:
            out.append((f"{label}/{name}", lambda s=scenario, b=binding: s(b)))
    return out


async def run_all(chosen: list[tuple[str, Callable[[], Awaitable[str]]]]) -> bool:
    """Run `chosen` in order, each with a fresh LOG, printing one JSON line per scenario (other
    scripts run their own scenarios through this, with this module's helpers)."""
    global LOG
    all_ok = True
    for name, scenario in chosen:
        LOG = Log()
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
                "exchanges": LOG.exchanges,
                "stream_events": LOG.events,
            }
        all_ok = all_ok and ok
        print(json.dumps({"scenario": name, "ok": ok, "detail": detail}), flush=True)
    return all_ok


def main() -> int:
    global BASE_URL
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BASE_URL", file=sys.stderr)
        return 2
    BASE_URL = sys.argv[1].rstrip("/")
    return 0 if asyncio.run(run_all(scenarios())) else 1


if __name__ == "__main__":
    sys.exit(main())
