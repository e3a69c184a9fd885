"""Interop check: the official reference Leader SDK (acps-sdk 2.1.0) against a running aiphost.

Usage: python leader_rpc.py BASE_URL     (BASE_URL like http://127.0.0.1:8080)

The host must serve the example partners `echo` and `trip-planner`. Every scenario drives the
host only through the SDK's `AipRpcClient` (which validates each reply strictly with its pydantic
models and checks the response id) or, for the ACS document, the SDK's `AgentCapabilitySpec`.
Each scenario prints one JSON line {"scenario", "ok", "detail"}; the exit code is 1 if any failed.
Nothing here works around the host: a reply the SDK rejects is a failed scenario, and its detail
shows the last HTTP exchange.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
import uuid
from datetime import datetime, timedelta
from typing import Any, Awaitable, Callable

import httpx
from acps_sdk.acs import AgentCapabilitySpec
from acps_sdk.aip import AipRpcClient, TaskResult, TaskState, TextDataItem

LEADER_ID = "1.2.156.3088.1.1.INTEROP.LEADER.1.0000"
SCENARIO_TIMEOUT_S = 60.0

BASE_URL = ""
# Every TaskResult any scenario received, for the timestamp check.
SEEN: list[TaskResult] = []


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


class Exchange:
    """The last HTTP request/response of a client, shown when a scenario fails."""

    def __init__(self) -> None:
        self.request: str | None = None
        self.response: str | None = None

    async def on_request(self, request: httpx.Request) -> None:
        self.request = f"{request.method} {request.url} {request.content.decode(errors='replace')}"
        self.response = None

    async def on_response(self, response: httpx.Response) -> None:
        await response.aread()
        self.response = f"HTTP {response.status_code} {response.text}"

    def describe(self) -> dict[str, Any]:
        return {"request": self.request, "response": self.response}


EXCHANGES: list[Exchange] = []


def client(agent: str) -> AipRpcClient:
    """An SDK client for `agent`, recording its last HTTP exchange for diagnostics only."""
    c = AipRpcClient(f"{BASE_URL}/agents/{agent}/rpc", LEADER_ID)
    exchange = Exchange()
    c.http_client.event_hooks = {
        "request": [exchange.on_request],
        "response": [exchange.on_response],
    }
    EXCHANGES.append(exchange)
    return c


def new_ids() -> tuple[str, str]:
    return f"task-{uuid.uuid4()}", f"session-{uuid.uuid4()}"


def seen(result: Any) -> TaskResult:
    assert isinstance(result, TaskResult), f"expected a TaskResult, got {type(result)!r}"
    SEEN.append(result)
    return result


def state(result: TaskResult) -> str:
    s = result.status.state
    return s.value if isinstance(s, TaskState) else str(s)


def texts(items: Any) -> list[str]:
    return [i.text for i in (items or []) if isinstance(i, TextDataItem)]


def product_texts(result: TaskResult) -> list[str]:
    out: list[str] = []
    for product in result.products or []:
        out.extend(texts(product.dataItems))
    return out


def expect_state(result: TaskResult, wanted: str, what: str) -> None:
    assert state(result) == wanted, (
        f"{what}: expected state {wanted!r}, got {state(result)!r}; "
        f"status={result.status.model_dump(exclude_none=True)}"
    )


def expect_product_text(result: TaskResult, text: str, what: str) -> None:
    found = product_texts(result)
    assert any(text in t for t in found), (
        f"{what}: expected a product with text {text!r}, products have texts {found!r}"
    )


async def fetch_acs(agent: str) -> tuple[dict[str, Any], AgentCapabilitySpec]:
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{BASE_URL}/agents/{agent}/.well-known/acs.json", timeout=30.0)
    assert response.status_code == 200, (
        f"ACS of {agent}: HTTP {response.status_code} {response.text}"
    )
    raw = response.json()
    return raw, AgentCapabilitySpec.model_validate(raw)


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


async def scenario_start() -> str:
    _, acs = await fetch_acs("echo")
    task_id, session_id = new_ids()
    c = client("echo")
    try:
        r = seen(await c.start_task(session_id, "hello from acps-sdk", task_id=task_id))
    finally:
        await c.close()
    expect_state(r, "awaiting-completion", "start")
    assert r.taskId == task_id, f"taskId: sent {task_id!r}, got {r.taskId!r}"
    assert r.senderRole == "partner", f"senderRole: expected 'partner', got {r.senderRole!r}"
    assert r.senderId == acs.aic, (
        f"senderId: expected the echo partner's AIC {acs.aic!r} (from its ACS), got {r.senderId!r}"
    )
    assert r.type == "task-result", f"type: expected 'task-result', got {r.type!r}"
    expect_product_text(r, "hello from acps-sdk", "start")
    return f"state={state(r)} senderId={r.senderId} products={product_texts(r)}"


async def scenario_get() -> str:
    task_id, session_id = new_ids()
    c = client("echo")
    try:
        started = seen(await c.start_task(session_id, "get me", task_id=task_id))
        expect_state(started, "awaiting-completion", "start")
        r = seen(await c.get_task(task_id, session_id))
    finally:
        await c.close()
    expect_state(r, "awaiting-completion", "get")
    assert r.taskId == task_id, f"taskId: sent {task_id!r}, got {r.taskId!r}"
    commands = r.commandHistory or []
    assert any(cmd.command.value == "start" for cmd in commands), (
        f"commandHistory has no start command: {[cmd.model_dump(exclude_none=True) for cmd in commands]}"
    )
    start = next(cmd for cmd in commands if cmd.command.value == "start")
    assert start.taskId == task_id, f"the start command's taskId is {start.taskId!r}"
    assert start.senderId == LEADER_ID, f"the start command's senderId is {start.senderId!r}"
    assert "get me" in texts(start.dataItems), (
        f"the start command's dataItems lost the input: {start.dataItems!r}"
    )
    history = [s.state.value for s in (r.statusHistory or [])]
    assert history, "statusHistory is empty or missing"
    assert history[0] == "accepted", f"statusHistory starts with {history[0]!r}: {history}"
    assert history[-1] == "awaiting-completion", (
        f"statusHistory ends with {history[-1]!r}: {history}"
    )
    expect_product_text(r, "get me", "get")
    return f"commands={[cmd.command.value for cmd in commands]} statusHistory={history}"


async def scenario_continue() -> str:
    task_id, session_id = new_ids()
    c = client("echo")
    try:
        first = seen(await c.start_task(session_id, "first turn", task_id=task_id))
        expect_state(first, "awaiting-completion", "start")
        r = seen(await c.continue_task(task_id, session_id, "second turn"))
    finally:
        await c.close()
    expect_state(r, "awaiting-completion", "continue")
    assert r.taskId == task_id, f"taskId: sent {task_id!r}, got {r.taskId!r}"
    expect_product_text(r, "second turn", "continue")
    return f"state={state(r)} products={product_texts(r)}"


async def scenario_complete() -> str:
    task_id, session_id = new_ids()
    c = client("echo")
    try:
        seen(await c.start_task(session_id, "to complete", task_id=task_id))
        r = seen(await c.complete_task(task_id, session_id))
        expect_state(r, "completed", "complete")
        again = seen(await c.complete_task(task_id, session_id))
        expect_state(again, "completed", "second complete")
        got = seen(await c.get_task(task_id, session_id))
    finally:
        await c.close()
    expect_state(got, "completed", "get after complete")
    history = [s.state.value for s in (got.statusHistory or [])]
    assert history.count("completed") == 1, (
        f"the ignored second complete changed the status history: {history}"
    )
    return f"complete={state(r)} second complete={state(again)} statusHistory={history}"


async def scenario_cancel() -> str:
    task_id, session_id = new_ids()
    c = client("echo")
    try:
        seen(await c.start_task(session_id, "to cancel", task_id=task_id))
        r = seen(await c.cancel_task(task_id, session_id))
        expect_state(r, "canceled", "cancel")
        again = seen(await c.cancel_task(task_id, session_id))
        expect_state(again, "canceled", "second cancel")
    finally:
        await c.close()
    return f"cancel={state(r)} second cancel={state(again)}"


async def scenario_unknown_task() -> str:
    task_id, session_id = new_ids()
    c = client("echo")
    try:
        try:
            r = await c.get_task(task_id, session_id)
        except Exception as e:  # the SDK raises a bare Exception("RPC Error: {code} - {message}")
            message = str(e)
        else:
            raise AssertionError(
                f"get on a never-started task succeeded: {r.model_dump(exclude_none=True)}"
            )
    finally:
        await c.close()
    assert "-32001" in message, f"expected a -32001 error, got {message!r}"
    return message


async def scenario_trip_planner() -> str:
    task_id, session_id = new_ids()
    c = client("trip-planner")
    try:
        r = seen(await c.start_task(session_id, "I want a trip", task_id=task_id))
        expect_state(r, "awaiting-input", "start")
        question = texts(r.status.dataItems)
        assert question and any(q.strip() for q in question), (
            f"awaiting-input without a text question in status.dataItems: {r.status.dataItems!r}"
        )
        r2 = seen(
            await c.continue_task(
                task_id,
                session_id,
                "destination: Beijing, dates: 2025-10-01 to 2025-10-03, budget: 5000",
            )
        )
        expect_state(r2, "awaiting-completion", "continue with all details")
        assert r2.products, f"awaiting-completion without products: {r2.model_dump(exclude_none=True)}"
        assert any("Beijing" in t for t in product_texts(r2)), (
            f"the itinerary does not mention Beijing: {product_texts(r2)!r}"
        )
        r3 = seen(await c.complete_task(task_id, session_id))
        expect_state(r3, "completed", "complete")
    finally:
        await c.close()
    return f"question={question[0]!r} products={[p.name or p.id for p in r2.products or []]}"


async def scenario_acs() -> str:
    raw, acs = await fetch_acs("echo")
    assert acs.aic == "1.2.156.3088.1.1.AIPHST.ECHO.1.0000", f"aic: got {acs.aic!r}"
    assert acs.active is True, f"active: got {acs.active!r}"
    assert any(e.url == f"{BASE_URL}/agents/echo/rpc" for e in acs.end_points), (
        f"no endPoint at {BASE_URL}/agents/echo/rpc: {raw.get('endPoints')!r}"
    )
    assert any(e.transport == "JSONRPC" for e in acs.end_points), (
        f"no JSONRPC endPoint: {raw.get('endPoints')!r}"
    )
    # The chat doors' endPoints follow, their transport free text the SDK keeps as it is; a
    # Leader taking the first endPoint still gets AIP's JSON-RPC one.
    assert acs.end_points[0].transport == "JSONRPC", f"first endPoint: {raw.get('endPoints')!r}"
    assert any(
        e.transport == "AGENT_API" and e.url == f"{BASE_URL}/agents/echo/process"
        for e in acs.end_points
    ), f"no AGENT_API endPoint: {raw.get('endPoints')!r}"
    assert any(
        e.transport == "AIFLOWY_CHAT" and e.url == f"{BASE_URL}/agents/echo/aiflowy/chat"
        for e in acs.end_points
    ), f"no AIFLOWY_CHAT endPoint: {raw.get('endPoints')!r}"
    modified = datetime.fromisoformat(acs.last_modified_time)
    assert modified.utcoffset() is not None, (
        f"lastModifiedTime has no UTC offset: {acs.last_modified_time!r}"
    )
    return f"aic={acs.aic} protocolVersion={acs.protocol_version} skills={[s.id for s in acs.skills]}"


def check_timestamp(value: Any, where: str) -> None:
    assert isinstance(value, str), f"{where}: not a string: {value!r}"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as e:
        raise AssertionError(f"{where}: {value!r} does not parse as ISO 8601: {e}") from e
    assert parsed.utcoffset() is not None, f"{where}: {value!r} has no UTC offset"


async def scenario_timestamps() -> str:
    task_id, session_id = new_ids()
    c = client("echo")
    try:
        seen(await c.start_task(session_id, "tick", task_id=task_id))
        seen(await c.continue_task(task_id, session_id, "tock"))
        seen(await c.complete_task(task_id, session_id))
        final = seen(await c.get_task(task_id, session_id))
    finally:
        await c.close()
    checked = 0
    for n, r in enumerate(SEEN):
        where = f"result #{n} (task {r.taskId})"
        check_timestamp(r.sentAt, f"{where} sentAt")
        check_timestamp(r.status.stateChangedAt, f"{where} status.stateChangedAt")
        checked += 2
        for i, s in enumerate(r.statusHistory or []):
            check_timestamp(s.stateChangedAt, f"{where} statusHistory[{i}].stateChangedAt")
            checked += 1
        for i, cmd in enumerate(r.commandHistory or []):
            check_timestamp(cmd.sentAt, f"{where} commandHistory[{i}].sentAt")
            checked += 1
    # The history of the final get is in order and ends at the status.
    changes = [datetime.fromisoformat(s.stateChangedAt) for s in final.statusHistory or []]
    assert changes == sorted(changes), f"statusHistory is out of order: {final.statusHistory!r}"
    assert changes and changes[-1] == datetime.fromisoformat(final.status.stateChangedAt), (
        f"the last statusHistory entry is not the status: {final.model_dump(exclude_none=True)}"
    )
    sent = datetime.fromisoformat(final.sentAt)
    now = datetime.now().astimezone()
    assert abs(sent - now) < timedelta(minutes=5), (
        f"sentAt {final.sentAt!r} is far from now ({now.isoformat()})"
    )
    return f"{checked} timestamps in {len(SEEN)} results"


SCENARIOS: list[tuple[str, Callable[[], Awaitable[str]]]] = [
    ("start", scenario_start),
    ("get", scenario_get),
    ("continue", scenario_continue),
    ("complete", scenario_complete),
    ("cancel", scenario_cancel),
    ("unknown-task", scenario_unknown_task),
    ("trip-planner", scenario_trip_planner),
    ("acs", scenario_acs),
    ("timestamps", scenario_timestamps),  # last: also checks every result seen before
]


async def run_all() -> bool:
    all_ok = True
    for name, scenario in SCENARIOS:
        first_exchange = len(EXCHANGES)
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
                "last_exchanges": [x.describe() for x in EXCHANGES[first_exchange:]],
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
    return 0 if asyncio.run(run_all()) else 1


if __name__ == "__main__":
    sys.exit(main())
