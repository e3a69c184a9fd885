"""Interop check: the official MCP SDK, `mcp` 2.3.0's `Client` over Streamable HTTP, against the
MCP door of a running aiphost (`POST /agents/{agent}/mcp`, protocol revision 2026-07-28).

Usage: MCP_AGENT=ID MCP_KEY=KEY python mcp_client.py BASE_URL
       (BASE_URL like http://127.0.0.1:8080; ID a partner built from `plugins/concierge` whose
       Leaders take API keys, KEY one of them, sent as `Authorization: Bearer KEY` through the
       client's own HTTP library, httpx2)

Scenarios: discover (the client's `auto` mode probes `server/discover` and lands on 2026-07-28;
the server's name is the partner's), list (one tool `concierge`, the default input schema),
echo (`hello there` answered `hello there`), think (`think tea` answered `thought about tea`, the
reasoning left out of the result), fail (`fail out of coffee`: `isError`, `CONCIERGE_FAILED:
out of coffee`, the code in `structuredContent`), unknown-tool (an MCPError -32602),
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

SCENARIO_TIMEOUT_S = 60.0

BASE_URL = ""
AGENT = ""
KEY = ""


def url() -> str:
    return f"{BASE_URL}/agents/{AGENT}/mcp"


def client(keyed: bool = True) -> Client:
    """A client of the partner's MCP server, with the key as its Bearer token (`keyed`)."""
    headers = {"Authorization": f"Bearer {KEY}"} if keyed else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30.0)
    return Client(streamable_http_client(url(), http_client=http))


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
        expect(names == ["concierge"], f"tools {names}")
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


async def think() -> dict:
    result = await call("think tea")
    expect(not result.is_error, f"isError: {result}")
    expect(texts(result) == "thought about tea", f"text {texts(result)!r}")
    return {"task_id": task_of(result)}


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


SCENARIOS: list[tuple[str, Callable[[], Awaitable[dict]]]] = [
    ("discover", discover),
    ("list", list_tools),
    ("echo", echo),
    ("think", think),
    ("fail", fail),
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
