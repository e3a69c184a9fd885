"""Interop check: the official MCP SDK, `mcp` 2.3.0's `Client` over Streamable HTTP, against the
host-level MCP server of a running aiphost (`POST /mcp`, every partner the caller may use, tools
named `{agent}__{tool}`), a partner whose skill gives its own input schema and annotations, and
the door's entry rules (keys, the Origin allow-list, the call timeout).

Usage: MCP_KEY=KEY MCP_KEYED=ID MCP_OTHER=ID MCP_TYPED=ID python mcp_host_client.py BASE_URL
       KEY: an API key of partner MCP_KEYED (a concierge whose Leaders take API keys);
       MCP_OTHER: another such partner (KEY was not issued for it); MCP_TYPED: an open echo
       whose skill `echo` has an input-schema and annotations. The host runs with
       `--mcp-allow-origin https://app.example --mcp-allow-origin null --mcp-call-timeout 1s`.

Scenarios: host-discover (the server is `aiphost`), host-list (the key's partner and the open
ones, every page; not the other keyed partner), host-call (a keyed and an open partner's tool,
each result naming its partner and task), host-form (a form through `/mcp`: asked in the call's
answer to a client with an elicitation callback; for one without, answered with the partner's
`{agent}__aiphost.continue_task`, which the result names), anonymous (no key: only open partners are listed, a
keyed partner's tool is an unknown tool, -32602), invalid-key (401 `WWW-Authenticate: Bearer`),
unauthenticated (a keyed partner's own server without a key: 401), other-partner-key (403),
origin-refused (an unlisted Origin: 403 at both URLs), origin-allowed (a listed one and `null`
pass), schema-list (the skill's schema and annotations as the tool's), schema-call (the whole
arguments object reaches the partner as one data item), schema-wrong (`isError`
INVALID_ARGUMENTS naming each failing JSON Pointer), host-schema (the same through `/mcp`),
still-working (a call longer than the call timeout: `isError` STILL_WORKING naming the task,
which goes on), unknown-agent (the gate's 404 as a JSON-RPC error).

Each scenario prints one JSON line {"scenario", "ok", "detail"}; the exit code is 1 if any failed.
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
KEY = ""
KEYED = ""
OTHER = ""
TYPED = ""

TYPED_SCHEMA = {
    "type": "object",
    "required": ["text"],
    "additionalProperties": False,
    "properties": {
        "text": {"type": "string", "maxLength": 100},
        "days": {"type": "integer", "minimum": 1},
    },
}


def host_url() -> str:
    return f"{BASE_URL}/mcp"


def partner_url(agent: str) -> str:
    return f"{BASE_URL}/agents/{agent}/mcp"


def client(url: str, key: str | None = None, **options: Any) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30.0)
    return Client(streamable_http_client(url, http_client=http), **options)


def expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def texts(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def meta(result: Any) -> dict:
    return result.meta or {}


async def all_tools(c: Client) -> list[Any]:
    tools, cursor, pages = [], None, 0
    while True:
        page = await c.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            return tools
        expect(pages < 50, "more than 50 pages")


async def raw_post(url: str, headers: dict[str, str]) -> httpx2.Response:
    """A 2026-07-28 `server/discover` as the SDK sends it, with `headers` added."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    base = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "server/discover",
    }
    async with httpx2.AsyncClient(timeout=30.0) as http:
        return await http.post(url, json=body, headers={**base, **headers})


async def host_discover() -> dict:
    async with client(host_url(), KEY) as c:
        expect(c.protocol_version == "2026-07-28", f"protocol {c.protocol_version}")
        info = c.server_info
        expect(info is not None and info.name == "aiphost", f"server info {info}")
        return {"server": info.name, "version": info.version}


async def host_list() -> dict:
    async with client(host_url(), KEY) as c:
        tools = await all_tools(c)
    names = [t.name for t in tools]
    for name in [f"{KEYED}__concierge", f"{KEYED}__aiphost.continue_task", "echo__echo", f"{TYPED}__echo"]:
        expect(name in names, f"{name} not in {names}")
    expect(not any(n.startswith(f"{OTHER}__") for n in names), f"the other partner's: {names}")
    expect(len(names) == len(set(names)), f"a name twice: {names}")
    keyed = next(t for t in tools if t.name == f"{KEYED}__concierge")
    expect((keyed.meta or {}).get("aiphost.agent") == KEYED, f"meta {keyed.meta}")
    expect((keyed.meta or {}).get("aiphost.skill") == "concierge", f"meta {keyed.meta}")
    return {"tools": len(names)}


async def host_call() -> dict:
    async with client(host_url(), KEY) as c:
        keyed = await c.call_tool(f"{KEYED}__concierge", {"text": "hello there"})
        expect(not keyed.is_error, f"isError: {keyed}")
        expect(texts(keyed) == "hello there", f"text {texts(keyed)!r}")
        expect(meta(keyed).get("aiphost.agent") == KEYED, f"meta {keyed.meta}")
        echo = await c.call_tool("echo__echo", {"text": "hi all"})
        expect(not echo.is_error, f"isError: {echo}")
        expect(texts(echo) == "hi all", f"text {texts(echo)!r}")
        expect(meta(echo).get("aiphost.agent") == "echo", f"meta {echo.meta}")
    return {"keyed_task": meta(keyed)["aiphost.taskId"], "echo_task": meta(echo)["aiphost.taskId"]}


async def anonymous() -> dict:
    async with client(host_url()) as c:
        names = [t.name for t in await all_tools(c)]
        expect("echo__echo" in names and f"{TYPED}__echo" in names, f"tools {names}")
        keyed = [n for n in names if n.startswith((f"{KEYED}__", f"{OTHER}__"))]
        expect(not keyed, f"keyed partners listed to anyone: {keyed}")
        try:
            result = await c.call_tool(f"{KEYED}__concierge", {"text": "x"})
        except MCPError as e:
            expect(e.code == -32602, f"code {e.code}: {e.message}")
            return {"tools": len(names), "code": e.code}
        raise AssertionError(f"answered: {result}")


async def invalid_key() -> dict:
    raw = await raw_post(host_url(), {"Authorization": "Bearer not-a-key"})
    expect(raw.status_code == 401, f"status {raw.status_code}")
    expect(raw.headers.get("www-authenticate") == "Bearer", f"headers {raw.headers}")
    expect(raw.json()["error"]["data"]["code"] == "UNAUTHENTICATED", f"body {raw.text}")
    return {"status": raw.status_code}


async def unauthenticated() -> dict:
    raw = await raw_post(partner_url(KEYED), {})
    expect(raw.status_code == 401, f"status {raw.status_code}")
    expect(raw.headers.get("www-authenticate") == "Bearer", f"headers {raw.headers}")
    body = raw.json()
    expect(body["id"] is None, f"body {raw.text}")
    expect(body["error"]["data"]["code"] == "UNAUTHENTICATED", f"body {raw.text}")
    return {"status": raw.status_code}


async def other_partner_key() -> dict:
    raw = await raw_post(partner_url(OTHER), {"Authorization": f"Bearer {KEY}"})
    expect(raw.status_code == 403, f"status {raw.status_code}")
    error = raw.json()["error"]
    expect(error["data"]["code"] == "PERMISSION_DENIED", f"body {raw.text}")
    expect("another partner" in error["data"]["message"], f"body {raw.text}")
    return {"status": raw.status_code}


async def origin_refused() -> dict:
    for url in [host_url(), partner_url("echo")]:
        raw = await raw_post(url, {"Origin": "https://evil.example"})
        expect(raw.status_code == 403, f"{url}: status {raw.status_code}")
        expect(raw.json()["error"]["data"]["code"] == "ORIGIN_REFUSED", f"body {raw.text}")
    return {"status": 403}


async def origin_allowed() -> dict:
    for origin in ["https://app.example", "null"]:
        raw = await raw_post(host_url(), {"Origin": origin})
        expect(raw.status_code == 200, f"{origin}: status {raw.status_code} {raw.text}")
        expect("result" in raw.json(), f"{origin}: body {raw.text}")
    return {"status": 200}


async def schema_list() -> dict:
    async with client(partner_url(TYPED)) as c:
        tools = (await c.list_tools()).tools
    expect([t.name for t in tools] == ["echo", "aiphost.continue_task"], f"tools {[t.name for t in tools]}")
    tool = tools[0]
    expect(tool.input_schema == TYPED_SCHEMA, f"schema {tool.input_schema}")
    hints = tool.annotations
    expect(hints is not None, "no annotations")
    expect(hints.title == "Typed echo", f"annotations {hints}")
    expect(hints.read_only_hint is True and hints.idempotent_hint is True, f"annotations {hints}")
    expect(hints.open_world_hint is False and hints.destructive_hint is None, f"annotations {hints}")
    return {"schema": tool.input_schema}


async def schema_call() -> dict:
    async with client(partner_url(TYPED)) as c:
        result = await c.call_tool("echo", {"text": "hi", "days": 3})
    expect(not result.is_error, f"isError: {result}")
    expect(result.structured_content == {"text": "hi", "days": 3}, f"structured {result}")
    return {"task_id": meta(result)["aiphost.taskId"]}


def check_wrong(result: Any) -> list[str]:
    expect(result.is_error, f"not an error: {result}")
    error = (result.structured_content or {}).get("error", {})
    expect(error.get("code") == "INVALID_ARGUMENTS", f"structured {result.structured_content}")
    paths = sorted(e.get("path") for e in error.get("errors", []))
    expect(paths == ["", "/days", "/text"], f"paths {paths}")
    expect("arguments/text" in texts(result) and "arguments/days" in texts(result), texts(result))
    expect("aiphost.taskId" not in meta(result), f"a task was started: {result.meta}")
    return paths


async def schema_wrong() -> dict:
    async with client(partner_url(TYPED)) as c:
        result = await c.call_tool("echo", {"text": 3, "days": 0, "extra": True})
    return {"paths": check_wrong(result), "text": texts(result)}


async def host_schema() -> dict:
    async with client(host_url()) as c:
        result = await c.call_tool(f"{TYPED}__echo", {"text": 3, "days": 0, "extra": True})
    return {"paths": check_wrong(result)}


async def still_working() -> dict:
    async with client(host_url(), KEY) as c:
        result = await c.call_tool(f"{KEYED}__concierge", {"text": "slow count"})
    expect(result.is_error, f"not an error: {result}")
    error = (result.structured_content or {}).get("error", {})
    expect(error.get("code") == "STILL_WORKING", f"structured {result.structured_content}")
    task = meta(result).get("aiphost.taskId", "")
    expect(task.startswith("task-") and error.get("taskId") == task, f"task {result}")
    expect(meta(result).get("aiphost.agent") == KEYED, f"meta {result.meta}")
    return {"task_id": task}


async def unknown_agent() -> dict:
    raw = await raw_post(partner_url("no-such-partner"), {})
    expect(raw.status_code == 404, f"status {raw.status_code}")
    body = raw.json()
    expect(body.get("jsonrpc") == "2.0" and body["id"] is None, f"body {raw.text}")
    expect(body["error"]["code"] == -32600, f"body {raw.text}")
    return {"status": raw.status_code}


async def host_form() -> dict:
    """A form at /mcp: asked in the call's answer (MRTR) of a client with an elicitation
    callback; for one without, the result names the partner's `{agent}__aiphost.continue_task`,
    which answers it."""
    tool = f"{KEYED}__concierge"

    async def answer(context: Any, params: Any) -> Any:
        from mcp import types
        return types.ElicitResult(action="accept", content={"city": "Oslo", "days": 3})

    async with client(host_url(), KEY, elicitation_callback=answer) as c:
        asked = await c.call_tool(tool, {"text": "form"})
    expect(not asked.is_error and texts(asked) == "Oslo for 3 days", f"MRTR: {asked}")
    async with client(host_url(), KEY) as c:
        waiting = await c.call_tool(tool, {"text": "form"})
        structured = waiting.structured_content or {}
        cont = f"{KEYED}__aiphost.continue_task"
        expect(structured.get("continueTool") == cont, f"structured {structured}")
        expect(cont in texts(waiting), f"text {texts(waiting)!r}")
        done = await c.call_tool(cont, {"taskId": structured["taskId"], "values": {"city": "Oslo", "days": 3}})
    expect(not done.is_error and texts(done) == "Oslo for 3 days", f"continued: {done}")
    return {"mrtr_task": meta(asked)["aiphost.taskId"], "continued_task": structured["taskId"]}


SCENARIOS: list[tuple[str, Callable[[], Awaitable[dict]]]] = [
    ("host-discover", host_discover),
    ("host-list", host_list),
    ("host-call", host_call),
    ("host-form", host_form),
    ("anonymous", anonymous),
    ("invalid-key", invalid_key),
    ("unauthenticated", unauthenticated),
    ("other-partner-key", other_partner_key),
    ("origin-refused", origin_refused),
    ("origin-allowed", origin_allowed),
    ("schema-list", schema_list),
    ("schema-call", schema_call),
    ("schema-wrong", schema_wrong),
    ("host-schema", host_schema),
    ("still-working", still_working),
    ("unknown-agent", unknown_agent),
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
    KEY = os.environ["MCP_KEY"]
    KEYED = os.environ["MCP_KEYED"]
    OTHER = os.environ["MCP_OTHER"]
    TYPED = os.environ["MCP_TYPED"]
    sys.exit(asyncio.run(main()))
