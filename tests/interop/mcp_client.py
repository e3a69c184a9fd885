"""Interop check: the official MCP SDK, `mcp` 2.3.0's `Client` over Streamable HTTP, against the
MCP door of a running aiphost (`POST /agents/{agent}/mcp`, protocol revision 2026-07-28).

Usage: MCP_AGENT=ID MCP_KEY=KEY python mcp_client.py BASE_URL
       (BASE_URL like http://127.0.0.1:8080; ID a partner built from `plugins/concierge` whose
       Leaders take API keys, KEY one of them, sent as `Authorization: Bearer KEY` through the
       client's own HTTP library, httpx2)

Scenarios: discover (the client's `auto` mode probes `server/discover` and lands on 2026-07-28;
the server's name is the partner's), list (the tool `concierge` with the default input schema,
then the door's own `aiphost.continue_task`), echo (`hello there` answered `hello there`), think
(`think tea` with a progress callback: progress notifications, reasoning then answer, `progress`
increasing, the task named in each; the result `thought about tea`, the reasoning left out),
tool (`tool x`: the tool call and its result as progress lines, then the answer `found x`),
form (`form`: the client's elicitation callback is asked the trip form once, accepts
{city: Oslo, days: 3}, the call answers `Oslo for 3 days`), form-wrong (the first answer has
days 0: the form is asked again, its message led by `/days`, then answered right),
form-wrong-five (five wrong answers: `isError` INVALID_ANSWER, the task still waiting),
form-closed (rounds driven by hand: the same requestState sent after the form was answered is
`isError` FORM_CLOSED), decline and
cancel-form (the callback declines / cancels: `isError` INPUT_DECLINED / INPUT_CANCELED),
no-elicitation (a client with no callback declares no elicitation: the form comes back as a
non-error result saying input is required with the task id; `aiphost.continue_task` answers it),
continue-decline (`aiphost.continue_task` with action decline: INPUT_DECLINED), fail (`fail out of coffee`: `isError`, `CONCIERGE_FAILED:
out of coffee`, the code in `structuredContent`), reply (`reply straight away`: the plain reply),
concurrent (8 calls at once on 8 clients: 8 tasks, each its own answer), slow-cancel (`slow`
abandoned after its first progress notification: the client closes the call's stream, the
host cancels the task), legacy-form (`mode="legacy"`: `initialize` at 2025-11-25 opens a
session; the form is asked by `elicitation/create`, a wrong answer asks again led by `/days`,
then `Oslo for 3 days`), legacy-decline, legacy-cancel (`slow` abandoned in a session: the
client sends `notifications/cancelled`, the host cancels the task), unknown-tool (an MCPError -32602),
bad-arguments (`{"text": 3}`: `isError`, `INVALID_ARGUMENTS` naming `/text`), unauthenticated
(no key: HTTP 401 with `WWW-Authenticate: Bearer`), origin (an `Origin` header: 403).

Each scenario prints one JSON line {"scenario", "ok", "detail"}; the exit code is 1 if any failed.
A passing call's detail holds its task id (`_meta["aiphost.taskId"]`), for the caller to read
that task over the other doors.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp import types

SCENARIO_TIMEOUT_S = 60.0

BASE_URL = ""
AGENT = ""
KEY = ""


def url() -> str:
    return f"{BASE_URL}/agents/{AGENT}/mcp"


def client(keyed: bool = True, **options: Any) -> Client:
    """A client of the partner's MCP server, with the key as its Bearer token (`keyed`);
    `options` are the `Client`'s (callbacks)."""
    headers = {"Authorization": f"Bearer {KEY}"} if keyed else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30.0)
    return Client(streamable_http_client(url(), http_client=http), **options)


CONTINUE_TASK = "aiphost.continue_task"
TRIP = {"city": "Oslo", "days": 3}


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def texts(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def task_of(result: Any) -> str:
    meta = result.meta or {}
    task = meta.get("aiphost.taskId", "")
    expect(isinstance(task, str) and task.startswith("task-"), f"no task id in _meta: {meta}")
    return task


async def discover() -> dict:
    async with client() as c:
        expect(c.protocol_version == "2026-07-28", f"protocol {c.protocol_version}")
        info = c.server_info
        expect(info is not None and info.name == "Concierge", f"server info {info}")
        expect(c.server_capabilities.tools is not None, "no tools capability")
        return {"protocol": c.protocol_version, "server": info.name}


async def list_tools() -> dict:
    async with client() as c:
        tools = (await c.list_tools()).tools
        names = [t.name for t in tools]
        expect(names == ["concierge", CONTINUE_TASK], f"tools {names}")
        answer = tools[1].input_schema
        expect(answer.get("required") == ["taskId"], f"continue_task schema {answer}")
        expect(set(answer.get("properties", {})) == {"taskId", "values", "action"}, f"schema {answer}")
        schema = tools[0].input_schema
        expect(schema.get("required") == ["text"], f"schema {schema}")
        expect(set(schema.get("properties", {})) == {"text", "data"}, f"schema {schema}")
        expect(tools[0].title == "Concierge", f"title {tools[0].title}")
        return {"tools": names}


async def call(words: str) -> Any:
    async with client() as c:
        return await c.call_tool("concierge", {"text": words})


async def echo() -> dict:
    result = await call("hello there")
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "hello there", f"text {texts(result)!r}")
    return {"task_id": task_of(result)}


class Progress:
    """What a call's progress callback and the client's message handler saw: each
    notification's (progress, message), and its `_meta` by progress."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str]] = []
        self.meta: dict[float, dict] = {}

    async def callback(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, message or ""))

    async def handler(self, message: Any) -> None:
        if isinstance(message, types.ProgressNotification):
            meta = message.params.meta
            if meta is not None and not isinstance(meta, dict):
                meta = meta.model_dump(by_alias=True)
            self.meta[float(message.params.progress)] = dict(meta or {})

    def lines(self, task: str) -> list[tuple[str, str]]:
        """(kind, message) of each notification, checked: progress increases, each names `task`."""
        values = [p for p, _ in self.seen]
        expect(values == sorted(set(values)), f"progress does not increase: {values}")
        out = []
        for progress, message in self.seen:
            meta = self.meta.get(progress, {})
            expect(meta.get("aiphost.taskId") == task, f"progress {progress} _meta {meta}")
            out.append((meta.get("aiphost.kind", ""), message))
        return out


async def call_with_progress(words: str) -> tuple[Any, Progress]:
    progress = Progress()
    async with client(message_handler=progress.handler) as c:
        result = await c.call_tool("concierge", {"text": words}, progress_callback=progress.callback)
    # The handler's copies are spawned tasks: let them land.
    for _ in range(50):
        if len(progress.meta) >= len(progress.seen):
            break
        await asyncio.sleep(0.02)
    return result, progress


def merged(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Consecutive lines of one kind joined (how many batches the feed took is the host's)."""
    out: list[tuple[str, str]] = []
    for kind, text in lines:
        if out and out[-1][0] == kind and kind in ("answer", "reasoning"):
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


async def think() -> dict:
    result, progress = await call_with_progress("think tea")
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "thought about tea", f"text {texts(result)!r}")
    task = task_of(result)
    lines = merged(progress.lines(task))
    expect(
        lines == [("reasoning", "Let me think about tea."), ("answer", "thought about tea")],
        f"progress {progress.seen} {progress.meta}",
    )
    return {"task_id": task, "notifications": len(progress.seen)}


async def tool() -> dict:
    result, progress = await call_with_progress("tool x")
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "found x", f"text {texts(result)!r}")
    task = task_of(result)
    lines = merged(progress.lines(task))
    expect(
        lines
        == [
            ("tool-call", 'tool lookup {"query":"x"}'),
            ("tool-result", 'tool lookup → {"found":"x"}'),
            ("answer", "found x"),
        ],
        f"progress {progress.seen} {progress.meta}",
    )
    return {"task_id": task}


class Answers:
    """An elicitation callback giving `answers` in turn, keeping what it was asked."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params)
        expect(self.answers != [], f"asked once more than expected: {params}")
        return self.answers.pop(0)


def accept(values: dict) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content=values)


def check_trip_form(params: Any) -> None:
    expect(getattr(params, "mode", "form") == "form", f"mode {params}")
    expect(params.message.startswith("Trip") or "\n\nTrip" in params.message, f"message {params.message!r}")
    schema = params.requested_schema
    schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
    expect(set(schema.get("properties", {})) == {"city", "days"}, f"schema {schema}")
    expect(sorted(schema.get("required", [])) == ["city", "days"], f"schema {schema}")


async def call_form(answers: Answers) -> Any:
    async with client(elicitation_callback=answers) as c:
        return await c.call_tool("concierge", {"text": "form"})


async def form() -> dict:
    answers = Answers(accept(TRIP))
    result = await call_form(answers)
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "Oslo for 3 days", f"text {texts(result)!r}")
    expect(len(answers.asked) == 1, f"asked {len(answers.asked)} times")
    check_trip_form(answers.asked[0])
    expect(answers.asked[0].message == "Trip\n\nWhere to, and for how many days?", f"{answers.asked[0]}")
    return {"task_id": task_of(result)}


async def form_wrong() -> dict:
    answers = Answers(accept({"city": "Oslo", "days": 0}), accept(TRIP))
    result = await call_form(answers)
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "Oslo for 3 days", f"text {texts(result)!r}")
    expect(len(answers.asked) == 2, f"asked {len(answers.asked)} times")
    again = answers.asked[1]
    check_trip_form(again)
    expect(again.message.startswith("/days"), f"message {again.message!r}")
    return {"task_id": task_of(result), "asked_again": again.message}


async def form_wrong_five() -> dict:
    answers = Answers(*[accept({"city": "Oslo", "days": 0}) for _ in range(5)])
    result = await call_form(answers)
    expect(result.is_error, f"not an error: {result}")
    expect(texts(result).startswith("INVALID_ANSWER: "), f"text {texts(result)!r}")
    expect(len(answers.asked) == 5, f"asked {len(answers.asked)} times")
    error = (result.structured_content or {}).get("error", {})
    paths = [e.get("path") for e in error.get("errors", [])]
    expect(paths == ["/days"] and error.get("wrongAnswers") == 5, f"structured {error}")
    return {"task_id": task_of(result)}


async def form_closed() -> dict:
    """Drive the rounds by hand: the right answer completes the task; the same requestState
    sent again finds the form closed."""
    async with client(elicitation_callback=Answers()) as c:
        first = await c.session.call_tool("concierge", {"text": "form"}, allow_input_required=True)
        expect(isinstance(first, types.InputRequiredResult), f"answered: {first}")
        [key] = list(first.input_requests or {})
        expect(key.startswith("trip."), f"key {key}")
        responses = {key: accept(TRIP)}
        state = first.request_state
        done = await c.session.call_tool(
            "concierge", {"text": "form"}, input_responses=responses, request_state=state,
            allow_input_required=True,
        )
        expect(isinstance(done, types.CallToolResult) and texts(done) == "Oslo for 3 days", f"{done}")
        again = await c.session.call_tool(
            "concierge", {"text": "form"}, input_responses=responses, request_state=state,
            allow_input_required=True,
        )
        expect(isinstance(again, types.CallToolResult) and again.is_error, f"{again}")
        expect(texts(again).startswith("FORM_CLOSED: "), f"text {texts(again)!r}")
        task = task_of(done)
        expect(task_of(again) == task, f"{again.meta}")
        return {"task_id": task}


async def refused_form(action: str, code: str, how: str) -> dict:
    answers = Answers(types.ElicitResult(action=action))
    result = await call_form(answers)
    expect(result.is_error, f"not an error: {result}")
    expect(texts(result) == f"{code}: the user {how} form trip", f"text {texts(result)!r}")
    error = (result.structured_content or {}).get("error", {})
    expect(error.get("code") == code, f"structured {result.structured_content}")
    return {"task_id": task_of(result)}


async def decline() -> dict:
    return await refused_form("decline", "INPUT_DECLINED", "declined")


async def cancel_form() -> dict:
    return await refused_form("cancel", "INPUT_CANCELED", "canceled")


async def asked_without_elicitation(c: Client) -> str:
    """Call `form` on a client that declared no elicitation: the input-required result's task."""
    result = await c.call_tool("concierge", {"text": "form"})
    expect(not result.is_error, f"isError: {result}")
    structured = result.structured_content or {}
    expect(structured.get("status") == "input-required", f"structured {structured}")
    task = task_of(result)
    expect(structured.get("taskId") == task, f"structured {structured}")
    expect(structured.get("form", {}).get("requestId") == "trip", f"structured {structured}")
    text = texts(result)
    expect(text.startswith("Concierge asks: Trip\n\nWhere to"), f"text {text!r}")
    expect(CONTINUE_TASK in text, f"text {text!r}")
    return task


async def no_elicitation() -> dict:
    async with client() as c:
        task = await asked_without_elicitation(c)
        result = await c.call_tool(CONTINUE_TASK, {"taskId": task, "values": TRIP})
        expect(not result.is_error, f"isError: {result}")
        expect(texts(result) == "Oslo for 3 days", f"text {texts(result)!r}")
        expect(task_of(result) == task, f"another task: {result.meta}")
        return {"task_id": task}


async def continue_decline() -> dict:
    async with client() as c:
        task = await asked_without_elicitation(c)
        result = await c.call_tool(CONTINUE_TASK, {"taskId": task, "action": "decline"})
        expect(result.is_error, f"not an error: {result}")
        expect(texts(result) == "INPUT_DECLINED: the user declined form trip", f"{texts(result)!r}")
        expect(task_of(result) == task, f"another task: {result.meta}")
        return {"task_id": task}


async def fail() -> dict:
    result = await call("fail out of coffee")
    expect(result.is_error, f"not an error: {result}")
    expect(texts(result) == "CONCIERGE_FAILED: out of coffee", f"text {texts(result)!r}")
    error = (result.structured_content or {}).get("error", {})
    expect(error.get("code") == "CONCIERGE_FAILED", f"structured {result.structured_content}")
    expect(error.get("retryable") is False, f"structured {result.structured_content}")
    return {"task_id": task_of(result)}


async def unknown_tool() -> dict:
    async with client() as c:
        try:
            result = await c.call_tool("no-such-tool", {"text": "x"})
        except MCPError as e:
            expect(e.code == -32602, f"code {e.code}: {e.message}")
            return {"code": e.code, "message": e.message}
        raise AssertionError(f"answered: {result}")


async def bad_arguments() -> dict:
    async with client() as c:
        result = await c.call_tool("concierge", {"text": 3})
        expect(result.is_error, f"not an error: {result}")
        expect("arguments/text" in texts(result), f"text {texts(result)!r}")
        error = (result.structured_content or {}).get("error", {})
        expect(error.get("code") == "INVALID_ARGUMENTS", f"structured {result.structured_content}")
        paths = [e.get("path") for e in error.get("errors", [])]
        expect(paths == ["/text"], f"paths {paths}")
        return {"text": texts(result)}


def leaves(e: BaseException) -> list[BaseException]:
    """The exceptions inside `e`'s exception groups (`e` itself if it is none)."""
    if isinstance(e, BaseExceptionGroup):
        return [leaf for inner in e.exceptions for leaf in leaves(inner)]
    return [e]


async def raw_post(headers: dict[str, str]) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
    base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30.0) as http:
        return await http.post(url(), json=body, headers={**base, **headers})


async def unauthenticated() -> dict:
    try:
        # The client's first request (its `server/discover` probe) is already refused.
        async with client(keyed=False) as c:
            await c.list_tools()
    except Exception as e:  # the client's error for a 401 is its own; the wire says why
        raw = await raw_post({})
        expect(raw.status_code == 401, f"status {raw.status_code}")
        expect(raw.headers.get("www-authenticate") == "Bearer", f"headers {raw.headers}")
        error = raw.json()["error"]
        expect(error["data"]["code"] == "UNAUTHENTICATED", f"body {raw.text}")
        # The client raises the refusal's JSON-RPC error (inside its task groups' exception
        # groups): the message says what to send.
        refused = [x for x in leaves(e) if isinstance(x, MCPError)]
        expect(len(refused) == 1 and "API key" in refused[0].message, f"the client raised {e!r}")
        return {"client": refused[0].message, "status": raw.status_code}
    raise AssertionError("listed tools without a key")


async def origin() -> dict:
    raw = await raw_post({"Authorization": f"Bearer {KEY}", "Origin": "https://evil.example"})
    expect(raw.status_code == 403, f"status {raw.status_code}")
    expect(raw.json()["error"]["data"]["code"] == "ORIGIN_REFUSED", f"body {raw.text}")
    return {"status": raw.status_code}


async def reply() -> dict:
    result = await call("reply straight away")
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "straight away", f"text {texts(result)!r}")
    return {"meta": result.meta or {}}


async def concurrent() -> dict:
    """Eight calls at once, each on its own client: eight tasks, each answered its own words."""
    words = [f"call number {i}" for i in range(8)]
    results = await asyncio.gather(*(call(w) for w in words))
    tasks = []
    for w, result in zip(words, results):
        expect(not result.is_error and texts(result) == w, f"{w!r} answered {texts(result)!r}")
        tasks.append(task_of(result))
    expect(len(set(tasks)) == 8, f"tasks {tasks}")
    return {"tasks": tasks}


async def cancel_mid_slow(mode: str) -> dict:
    """Call `slow`, and once its first progress notification names the task, abandon the call:
    at 2026-07-28 the client closes the call's stream, in a 2025-11-25 session it sends
    `notifications/cancelled`; either way the host cancels the task (read by the caller)."""
    progress = Progress()
    async with client(mode=mode, message_handler=progress.handler) as c:
        expect(c.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28"),
               f"protocol {c.protocol_version}")
        call = asyncio.create_task(
            c.call_tool("concierge", {"text": "slow"}, progress_callback=progress.callback))
        task = ""
        for _ in range(200):
            task = next((m.get("aiphost.taskId") for m in progress.meta.values()), "") or ""
            if task or call.done():
                break
            await asyncio.sleep(0.02)
        expect(bool(task) and not call.done(), f"no progress before the end: {progress.seen}")
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            pass
        # Let the cancel reach the host before the session closes.
        await asyncio.sleep(0.5)
    return {"task_id": task, "deltas_seen": len(progress.seen)}


async def slow_cancel() -> dict:
    return await cancel_mid_slow("auto")


async def legacy_form() -> dict:
    """A 2025-11-25 client (`initialize`, a session): the form is asked by `elicitation/create`
    in its session, accepted, and the call answers with the trip."""
    answers = Answers(accept({"city": "Oslo", "days": 0}), accept(TRIP))
    async with client(mode="legacy", elicitation_callback=answers) as c:
        expect(c.protocol_version == "2025-11-25", f"protocol {c.protocol_version}")
        result = await c.call_tool("concierge", {"text": "form"})
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "Oslo for 3 days", f"text {texts(result)!r}")
    expect(len(answers.asked) == 2, f"asked {len(answers.asked)} times")
    check_trip_form(answers.asked[0])
    expect(answers.asked[1].message.startswith("/days"), f"again {answers.asked[1].message!r}")
    return {"task_id": task_of(result)}


async def legacy_decline() -> dict:
    answers = Answers(types.ElicitResult(action="decline"))
    async with client(mode="legacy", elicitation_callback=answers) as c:
        result = await c.call_tool("concierge", {"text": "form"})
    expect(result.is_error, f"not an error: {result}")
    expect(texts(result) == "INPUT_DECLINED: the user declined form trip", f"text {texts(result)!r}")
    return {"task_id": task_of(result)}


async def legacy_cancel() -> dict:
    return await cancel_mid_slow("legacy")


SCENARIOS: list[tuple[str, Callable[[], Awaitable[dict]]]] = [
    ("discover", discover),
    ("list", list_tools),
    ("echo", echo),
    ("think", think),
    ("tool", tool),
    ("form", form),
    ("form-wrong", form_wrong),
    ("form-wrong-five", form_wrong_five),
    ("form-closed", form_closed),
    ("decline", decline),
    ("cancel-form", cancel_form),
    ("no-elicitation", no_elicitation),
    ("continue-decline", continue_decline),
    ("fail", fail),
    ("reply", reply),
    ("concurrent", concurrent),
    ("slow-cancel", slow_cancel),
    ("legacy-form", legacy_form),
    ("legacy-decline", legacy_decline),
    ("legacy-cancel", legacy_cancel),
    ("unknown-tool", unknown_tool),
    ("bad-arguments", bad_arguments),
    ("unauthenticated", unauthenticated),
    ("origin", origin),
]


async def main() -> int:
    failed = 0
    for name, scenario in SCENARIOS:
        try:
            detail = await asyncio.wait_for(scenario(), SCENARIO_TIMEOUT_S)
            ok = True
        except BaseException as e:  # noqa: BLE001 - each scenario reports its own failure
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            detail = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}
            ok = False
            failed += 1
        print(json.dumps({"scenario": name, "ok": ok, "detail": detail}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    BASE_URL = sys.argv[1].rstrip("/")
    AGENT = os.environ["MCP_AGENT"]
    KEY = os.environ["MCP_KEY"]
    sys.exit(asyncio.run(main()))
