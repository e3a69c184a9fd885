"""Interop check: the official reference group Leader (acps-sdk 2.1.0) against a running aiphost.

Usage: python leader_group.py BASE_URL     (BASE_URL like http://127.0.0.1:8080)

Needs RabbitMQ at 127.0.0.1:5672 (guest/guest; override with INTEROP_AMQP_HOST, INTEROP_AMQP_PORT,
INTEROP_AMQP_USER, INTEROP_AMQP_PASSWORD) and the host's partners `echo` and `trip-planner`, whose
AICs are read from plugins/{echo,trip-planner}/partner.toml (override with INTEROP_ECHO_AIC,
INTEROP_TRIP_PLANNER_AIC, e.g. to run against another partner implementation).

Everything goes through the SDK's own group Leader, `acps_sdk.aip.GroupLeader` (the class its
README names for group mode; it wraps one `GroupLeaderMqClient` per group session):
  * `create_group_session(session_id, [])` declares the fanout exchange
    `group_{leaderAic}_{groupId}` and the Leader's queue. The SDK derives the group id from the
    session id: a fresh session id `interop-<8 hex>` per run gives the group
    `group-interop-<8 hex>`, and every command carries that session id as sessionId.
  * `invite_partner(session_id, ACSObject(aic), partner_rpc_url=...)` POSTs the JSON-RPC `group`
    invitation to `{BASE_URL}/agents/{agent}/group` and validates the reply with the SDK's
    `RabbitMQResponse` model (an error reply or a reply that does not validate fails `invite`).
  * tasks: `start_task` / `complete_task`; management: `check_partner_status` (get-status),
    `request_partner_leave` (leave-group), `GroupLeaderMqClient.mute_partner` / `unmute_partner`
    (GroupLeader has no mute wrapper; the SDK expects no reply, this script requires the member's
    group-mgmt-result with the new status), and `dissolve_group_session` for disband (it publishes
    `disband` with mentions "all" and no sessionId, waits 2 s, then deletes the Leader's queue and
    the exchange).
The SDK parses every message on the Leader's queue with its pydantic models; this script records
each parsed message (in arrival order) before handing it to the SDK's own router
(`GroupLeader._handle_group_message`), and reads member status from `get_group_runtime`. A message
the SDK cannot parse never reaches the record; it shows under "sdk_log" in the failure detail, and
any SDK message_parse_error during a scenario fails it.
`dissolve_group_session` unregisters the session before its 2 s wait, so the SDK no longer routes
the member's goodbye; `disband` therefore checks the record of parsed messages.
AICs: the SDK's group runtime refuses AICs that fail `acps_sdk.aic.validate_aic_format`
(10 levels; level 7, the vendor, 1-6 Base36 characters; level 8 1-9; level 9 1-9; level 10 exactly
4). The Leader here uses 1.2.156.3088.1.1.INTRP.LEADER.1.0000 (INTEROP is 7 characters), and
`invite` fails, after joining both partners, if a partner's AIC fails that check.

Scenarios (one JSON line each, {"scenario", "ok", "detail"}; exit code 1 if any failed; each is
bounded by SCENARIO_TIMEOUT_S): invite, start, complete, mentions, get-status, mute-unmute,
leave-group, disband. Later scenarios need echo in the group (not `invite` passing). "Not
answered" means no task-result from that partner for that task within SILENCE_S; a start "with no
mentions" omits the field (the SDK drops None). Queue checks use a passive queue declare over
aio-pika (the SDK's own AMQP library) on a separate connection; NOT_FOUND (404) means gone.
Nothing here works around the host: what the SDK rejects fails the scenario. For diagnostics only,
the HTTP client the SDK uses for invitations is given event hooks so a failure shows the exchange.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import tomllib
import traceback
import uuid
from pathlib import Path
from typing import Any, Awaitable, Callable

import aio_pika
import httpx
from aio_pika.exceptions import ChannelNotFoundEntity
from acps_sdk.aip import (
    ACSObject,
    GroupLeader,
    GroupLeaderSession,
    GroupMgmtCommand,
    GroupMgmtResult,
    TaskCommand,
    TaskResult,
    TaskState,
    TextDataItem,
)
from acps_sdk.aip import aip_group_leader
from acps_sdk.aic import validate_aic_format

# acps-sdk's group runtime refuses AICs that fail `acps_sdk.aic.validate_aic_format` (10 levels;
# level 7, the vendor, at most 6 Base36 characters; level 8 at most 9), so not INTEROP (7).
LEADER_ID = "1.2.156.3088.1.1.INTRP.LEADER.1.0000"
PLUGINS = Path(__file__).resolve().parents[2] / "plugins"

AMQP_HOST = os.environ.get("INTEROP_AMQP_HOST", "127.0.0.1")
AMQP_PORT = int(os.environ.get("INTEROP_AMQP_PORT", "5672"))
AMQP_USER = os.environ.get("INTEROP_AMQP_USER", "guest")
AMQP_PASSWORD = os.environ.get("INTEROP_AMQP_PASSWORD", "guest")

SCENARIO_TIMEOUT_S = 30.0
REPLY_TIMEOUT_S = 10.0  # a reply the scenario waits for
SILENCE_S = 2.0  # how long "does not answer" is watched
QUEUE_GONE_S = 5.0  # how long a queue may take to disappear

BASE_URL = ""
ECHO_AIC = ""  # from plugins/echo/partner.toml, or INTEROP_ECHO_AIC
TRIP_AIC = ""  # from plugins/trip-planner/partner.toml, or INTEROP_TRIP_PLANNER_AIC

NON_PROGRESS = {"accepted", "working"}


# --------------------------------------------------------------------------------------------
# Diagnostics: the SDK's invitation HTTP exchanges and its warnings
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


class _RecordingAsyncClient(httpx.AsyncClient):
    """httpx.AsyncClient as the SDK creates it for an invitation, plus recording hooks."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        exchange = Exchange()
        self.event_hooks = {"request": [exchange.on_request], "response": [exchange.on_response]}
        EXCHANGES.append(exchange)


class _HttpxForSdk:
    """What the SDK's leader module sees as `httpx`: the real module, recording AsyncClient."""

    AsyncClient = _RecordingAsyncClient

    def __getattr__(self, name: str) -> Any:
        return getattr(httpx, name)


aip_group_leader.httpx = _HttpxForSdk()  # type: ignore[assignment]


class SdkLog(logging.Handler):
    """Warnings and errors the SDK logs (unparsable or unroutable messages, failed cleanups)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.levelname} {record.name}: {record.getMessage()}"[:600])


SDK_LOG = SdkLog()
SDK_PARSE_ERROR = "event=message_parse_error"  # a group message the SDK's models rejected
for _name in ("acps_sdk", "aio_pika", "aiormq"):
    logging.getLogger(_name).addHandler(SDK_LOG)


# --------------------------------------------------------------------------------------------
# The group under test
# --------------------------------------------------------------------------------------------


Msg = TaskCommand | TaskResult | GroupMgmtCommand | GroupMgmtResult


def summary(m: Msg) -> dict[str, Any]:
    """The fields of a group message that matter when a scenario fails."""
    out: dict[str, Any] = {"type": m.type, "senderId": m.senderId}
    if isinstance(m, TaskResult):
        out.update(taskId=m.taskId, state=state(m), products=product_texts(m))
    elif isinstance(m, GroupMgmtResult):
        out.update(status=m.status.model_dump())
    elif isinstance(m, (TaskCommand, GroupMgmtCommand)):
        out.update(command=getattr(m.command, "value", m.command), mentions=m.mentions)
        if isinstance(m, TaskCommand):
            out.update(taskId=m.taskId)
    out.update(groupId=m.groupId, sessionId=m.sessionId)
    return out


class Group:
    """One group session of the SDK Leader, with every message its MQ client parsed."""

    def __init__(self, leader: GroupLeader, session: GroupLeaderSession) -> None:
        self.leader = leader
        self.session = session
        self.session_id = session.session_id
        self.group_id = session.group_id
        self.client = session.leader_mq_client
        self.messages: list[Msg] = []
        self._changed = asyncio.Event()
        self.client.set_message_handler(self._on_message)

    @classmethod
    async def create(cls, leader: GroupLeader) -> "Group":
        session_id = f"interop-{uuid.uuid4().hex[:8]}"
        return cls(leader, await leader.create_group_session(session_id, []))

    async def _on_message(self, message: Msg) -> None:
        self.messages.append(message)
        self._changed.set()
        await self.leader._handle_group_message(message)  # the SDK's own routing

    def mark(self) -> int:
        return len(self.messages)

    def since(self, mark: int) -> list[Msg]:
        return self.messages[mark:]

    async def wait_for(self, predicate: Callable[[Msg], bool], what: str, mark: int,
                       timeout: float = REPLY_TIMEOUT_S) -> Msg:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self._changed.clear()
            for m in self.since(mark):
                if predicate(m):
                    return m
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(
                    f"no {what} within {timeout:g}s; group messages since: "
                    f"{[summary(m) for m in self.since(mark)]}"
                )
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def wait_task(self, task_id: str, sender: str, wanted: str, mark: int) -> TaskResult:
        """The first result of `sender` for `task_id` past accepted/working; must be `wanted`."""
        r = await self.wait_for(
            lambda m: isinstance(m, TaskResult) and m.taskId == task_id and m.senderId == sender
            and (state(m) == wanted or state(m) not in NON_PROGRESS),
            f"task-result {wanted!r} from {sender} for {task_id}",
            mark,
        )
        assert isinstance(r, TaskResult)
        expect_state(r, wanted, f"task {task_id} from {sender}")
        return r

    async def wait_status(self, sender: str, mark: int, what: str,
                          timeout: float = REPLY_TIMEOUT_S) -> GroupMgmtResult:
        r = await self.wait_for(
            lambda m: isinstance(m, GroupMgmtResult) and m.senderId == sender,
            f"group-mgmt-result from {sender} ({what})",
            mark,
            timeout,
        )
        assert isinstance(r, GroupMgmtResult)
        assert r.groupId == self.group_id, (
            f"{what}: group-mgmt-result groupId {r.groupId!r}, expected {self.group_id!r}"
        )
        return r

    def task_results(self, task_id: str, sender: str, mark: int = 0) -> list[TaskResult]:
        return [
            m for m in self.since(mark)
            if isinstance(m, TaskResult) and m.taskId == task_id and m.senderId == sender
        ]

    def member(self, aic: str) -> dict[str, Any] | None:
        """The SDK's own view of a member (GroupLeader.get_group_runtime)."""
        runtime = self.leader.get_group_runtime(self.session_id)
        return next((m for m in runtime["members"] if m["partner_aic"] == aic), None)

    async def invite(self, agent: str, aic: str) -> dict[str, Any]:
        """Invites `agent` through the SDK and waits for its group-mgmt-result connected:true."""
        mark = self.mark()
        url = f"{BASE_URL}/agents/{agent}/group"
        await self.leader.invite_partner(self.session_id, ACSObject(aic=aic), partner_rpc_url=url)
        info = self.client.partners.get(aic)
        assert info is not None, f"the SDK does not track {agent} after a successful invite"
        expected_queue = queue_name(self.group_id, aic)
        assert info.queue_name == expected_queue, (
            f"{agent}: invitation reply queueName {info.queue_name!r}, expected {expected_queue!r}"
        )
        joined = await self.wait_status(aic, mark, f"{agent} joined")
        assert joined.status.connected is True and joined.status.muted is False, (
            f"{agent}: first group-mgmt-result after the invitation is "
            f"{joined.status.model_dump()}, expected connected:true muted:false"
        )
        consumers = await PROBE.queue_consumers(expected_queue)
        assert consumers is not None, (
            f"{agent}: queue {expected_queue!r} does not exist after joining"
        )
        assert consumers >= 1, f"{agent}: queue {expected_queue!r} has no consumer after joining"
        member = self.member(aic)
        assert member and member["connected"], f"{agent}: SDK member view {member!r}"
        return {
            "url": url,
            "queue": info.queue_name,
            "connection": info.connection_name,
            "vhost": info.vhost,
            "node": info.node_name,
        }


class Probe:
    """A separate AMQP connection for passive queue declares."""

    def __init__(self) -> None:
        self.connection: aio_pika.abc.AbstractConnection | None = None

    async def queue_consumers(self, name: str) -> int | None:
        """The queue's consumer count, or None if the broker says NOT_FOUND."""
        if self.connection is None or self.connection.is_closed:
            self.connection = await aio_pika.connect(
                host=AMQP_HOST, port=AMQP_PORT, login=AMQP_USER, password=AMQP_PASSWORD
            )
        channel = await self.connection.channel()
        try:
            queue = await channel.declare_queue(name, passive=True)
        except ChannelNotFoundEntity:
            return None
        finally:
            if not channel.is_closed:
                await channel.close()
        return queue.declaration_result.consumer_count

    async def wait_gone(self, name: str) -> float:
        loop = asyncio.get_running_loop()
        start = loop.time()
        consumers: int | None = None
        while loop.time() - start < QUEUE_GONE_S:
            consumers = await self.queue_consumers(name)
            if consumers is None:
                return loop.time() - start
            await asyncio.sleep(0.1)
        raise AssertionError(
            f"queue {name!r} still exists {QUEUE_GONE_S:g}s later ({consumers} consumers)"
        )

    async def close(self) -> None:
        if self.connection is not None and not self.connection.is_closed:
            await self.connection.close()


PROBE = Probe()


class Run:
    leader: GroupLeader | None = None
    group: Group | None = None
    echo_in: bool = False
    trip_in: bool = False
    task_id: str | None = None  # echo's task from `start`, completed by `complete`
    inbox_group: Group | None = None  # the group of `inbox-invite`


RUN = Run()


def leader() -> GroupLeader:
    if RUN.leader is None:
        RUN.leader = GroupLeader(
            LEADER_ID,
            {
                "host": AMQP_HOST,
                "port": AMQP_PORT,
                "vhost": "/",
                "user": AMQP_USER,
                "password": AMQP_PASSWORD,
            },
        )
    return RUN.leader


def group_with_echo() -> Group:
    if RUN.group is None or not RUN.echo_in:
        raise AssertionError("not run: needs echo in the group, and `invite` did not get it there")
    return RUN.group


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def plugin_aic(plugin: str) -> str:
    with (PLUGINS / plugin / "partner.toml").open("rb") as f:
        return tomllib.load(f)["agent"]["aic"]


def queue_name(group_id: str, member_aic: str) -> str:
    """A member's queue, as the SDK's build_group_queue_name names it (without its AIC check)."""
    return f"group_{LEADER_ID}_{group_id}_{member_aic}"


def new_task() -> str:
    return f"task-{uuid.uuid4()}"


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


def expect_envelope(r: TaskResult | GroupMgmtResult, g: Group, sender: str, what: str,
                    session_id: str | None) -> None:
    assert r.senderId == sender, f"{what}: senderId {r.senderId!r}, expected {sender!r}"
    assert r.senderRole == "partner", f"{what}: senderRole {r.senderRole!r}"
    assert r.groupId == g.group_id, f"{what}: groupId {r.groupId!r}, expected {g.group_id!r}"
    if session_id is not None:
        assert r.sessionId == session_id, (
            f"{what}: sessionId {r.sessionId!r}, expected the command's {session_id!r}"
        )


async def start(g: Group, text: str, mentions: list[str] | None) -> tuple[str, int]:
    task_id, mark = new_task(), g.mark()
    await g.leader.start_task(
        g.session_id, task_content=text, task_id=task_id, target_partners=mentions
    )
    return task_id, mark


async def expect_silence(g: Group, task_id: str, sender: str, since: float, what: str) -> None:
    """No task-result of `sender` for `task_id` until SILENCE_S after `since` (loop time)."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, since + SILENCE_S - loop.time()))
    answered = g.task_results(task_id, sender)
    assert not answered, f"{what}: got {[summary(m) for m in answered]}"


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


async def scenario_invite() -> Any:
    g = RUN.group = await Group.create(leader())
    echo = await g.invite("echo", ECHO_AIC)
    RUN.echo_in = True
    trip = await g.invite("trip-planner", TRIP_AIC)
    RUN.trip_in = True
    # The SDK's group runtime refuses these AICs in some of its paths: build_group_queue_name (used
    # when the Leader learns of a member from its group-mgmt-result before the invitation reply,
    # and by the SDK's own partner for its queue) and the inbox invitation route.
    bad = {
        name: error
        for name, aic in (("echo", ECHO_AIC), ("trip-planner", TRIP_AIC))
        for valid, error in [validate_aic_format(aic)]
        if not valid
    }
    assert not bad, (
        "both joined, but acps-sdk's AIC format check (acps_sdk.aic.validate_aic_format: 10 "
        "levels, level 7 at most 6 Base36 characters, level 8 and 9 at most 9, level 10 "
        "exactly 4), which its group runtime applies, rejects "
        f"{ {n: (ECHO_AIC if n == 'echo' else TRIP_AIC, e) for n, e in bad.items()} }"
    )
    runtime = g.leader.get_group_runtime(g.session_id)
    return {
        "groupId": g.group_id,
        "sessionId": g.session_id,
        "echo": echo,
        "trip-planner": trip,
        "connected_members": runtime["connected_members"],
    }


async def scenario_start() -> str:
    g = group_with_echo()
    task_id, mark = await start(g, "hi group", [ECHO_AIC])
    r = await g.wait_task(task_id, ECHO_AIC, "awaiting-completion", mark)
    expect_envelope(r, g, ECHO_AIC, "start", g.session_id)
    found = product_texts(r)
    assert any("hi group" in t for t in found), (
        f"start: expected a product with text 'hi group', products have texts {found!r}"
    )
    sequence = [state(m) for m in g.task_results(task_id, ECHO_AIC, mark)]
    assert "accepted" in sequence and sequence.index("accepted") < sequence.index(
        "awaiting-completion"
    ), f"no accepted before awaiting-completion: {sequence}"
    tracked = g.session.task_states.get(task_id, {}).get(ECHO_AIC)
    assert tracked == TaskState.AwaitingCompletion, (
        f"the SDK's session tracks the task as {tracked!r}"
    )
    RUN.task_id = task_id
    return f"sequence={sequence} products={found} sessionId={r.sessionId} groupId={r.groupId}"


async def scenario_complete() -> str:
    g = group_with_echo()
    if RUN.task_id is None:
        raise AssertionError("not run: needs the task of `start`, which failed")
    mark = g.mark()
    await g.leader.complete_task(g.session_id, RUN.task_id, target_partner=ECHO_AIC)
    r = await g.wait_task(RUN.task_id, ECHO_AIC, "completed", mark)
    expect_envelope(r, g, ECHO_AIC, "complete", g.session_id)
    sequence = [state(m) for m in g.task_results(RUN.task_id, ECHO_AIC, mark)]
    return f"state={state(r)} sequence={sequence}"


async def scenario_mentions() -> str:
    g = group_with_echo()
    loop = asyncio.get_running_loop()
    other = TRIP_AIC  # a member when `invite` got trip-planner in, a non-member otherwise
    sent = loop.time()
    not_mine, mark = await start(g, "plan me a trip", [other])
    mine, _ = await start(g, "for echo only", [ECHO_AIC])
    r = await g.wait_task(mine, ECHO_AIC, "awaiting-completion", mark)
    expect_envelope(r, g, ECHO_AIC, "start mentioning echo", g.session_id)
    await expect_silence(
        g, not_mine, ECHO_AIC, sent, "echo answered a start mentioning only trip-planner"
    )
    detail = f"echo answered its own start ({state(r)}) and not the one for trip-planner"
    if RUN.trip_in:
        t = await g.wait_task(not_mine, TRIP_AIC, "awaiting-input", mark)
        detail += f"; trip-planner answered its start ({state(t)}: {texts(t.status.dataItems)})"
    return detail


async def scenario_get_status() -> str:
    g = group_with_echo()
    mark = g.mark()
    await g.leader.check_partner_status(ECHO_AIC, session_id=g.session_id)
    r = await g.wait_status(ECHO_AIC, mark, "get-status")
    expect_envelope(r, g, ECHO_AIC, "get-status", g.session_id)
    assert r.status.connected is True and r.status.muted is False, (
        f"get-status: status {r.status.model_dump()}, expected connected:true muted:false"
    )
    return f"status={r.status.model_dump()} groupId={r.groupId} sessionId={r.sessionId}"


async def scenario_mute_unmute() -> str:
    g = group_with_echo()
    loop = asyncio.get_running_loop()

    mark = g.mark()
    await g.client.mute_partner(ECHO_AIC, session_id=g.session_id)
    r = await g.wait_status(ECHO_AIC, mark, "mute")
    expect_envelope(r, g, ECHO_AIC, "mute", g.session_id)
    assert r.status.muted is True and r.status.connected is True, (
        f"mute: status {r.status.model_dump()}, expected connected:true muted:true"
    )
    member = g.member(ECHO_AIC)
    assert member and member["muted"] is True, f"mute: SDK member view {member!r}"

    sent = loop.time()
    muted_task, _ = await start(g, "anyone there?", None)
    await expect_silence(
        g, muted_task, ECHO_AIC, sent, "muted echo answered a start without mentions"
    )

    mark = g.mark()
    await g.client.unmute_partner(ECHO_AIC, session_id=g.session_id)
    r = await g.wait_status(ECHO_AIC, mark, "unmute")
    expect_envelope(r, g, ECHO_AIC, "unmute", g.session_id)
    assert r.status.muted is False and r.status.connected is True, (
        f"unmute: status {r.status.model_dump()}, expected connected:true muted:false"
    )
    member = g.member(ECHO_AIC)
    assert member and member["muted"] is False, f"unmute: SDK member view {member!r}"

    task_id, mark = await start(g, "anyone there now?", None)
    answer = await g.wait_task(task_id, ECHO_AIC, "awaiting-completion", mark)
    expect_envelope(answer, g, ECHO_AIC, "start without mentions after unmute", g.session_id)
    late = g.task_results(muted_task, ECHO_AIC)
    assert not late, (
        f"echo answered the start it got while muted, after unmute: {[summary(m) for m in late]}"
    )
    return (
        "mute -> muted:true, no answer while muted, unmute -> muted:false, "
        f"then answered ({state(answer)}: {product_texts(answer)})"
    )


async def scenario_leave_group() -> str:
    g = group_with_echo()
    queue = queue_name(g.group_id, ECHO_AIC)
    mark = g.mark()
    await g.leader.request_partner_leave(ECHO_AIC, session_id=g.session_id)
    r = await g.wait_for(
        lambda m: isinstance(m, GroupMgmtResult) and m.senderId == ECHO_AIC
        and m.status.connected is False,
        "group-mgmt-result connected:false from echo",
        mark,
    )
    assert isinstance(r, GroupMgmtResult)
    expect_envelope(r, g, ECHO_AIC, "leave-group", g.session_id)
    RUN.echo_in = False
    member = g.member(ECHO_AIC)
    assert member and member["connected"] is False, f"leave-group: SDK member view {member!r}"
    took = await PROBE.wait_gone(queue)
    return f"status={r.status.model_dump()}; queue {queue} gone after {took:.2f}s"


async def scenario_disband() -> str:
    g = await Group.create(leader())
    await g.invite("echo", ECHO_AIC)
    queue = queue_name(g.group_id, ECHO_AIC)
    mark = g.mark()
    # Publishes group-mgmt-command disband (mentions "all"), waits 2 s while still consuming,
    # then deletes the Leader's queue and the exchange.
    await g.leader.dissolve_group_session(g.session_id)
    goodbye = [
        m for m in g.since(mark)
        if isinstance(m, GroupMgmtResult) and m.senderId == ECHO_AIC and m.status.connected is False
    ]
    assert goodbye, (
        "echo announced no connected:false within the 2 s the SDK waits after disband; "
        f"group messages since: {[summary(m) for m in g.since(mark)]}"
    )
    expect_envelope(goodbye[0], g, ECHO_AIC, "disband", None)
    took = await PROBE.wait_gone(queue)
    return (
        f"group {g.group_id}: status={goodbye[0].status.model_dump()}; queue {queue} gone "
        f"{took:.2f}s after the Leader's 2 s wait"
    )


SCENARIOS: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
    ("invite", scenario_invite),
    ("start", scenario_start),
    ("complete", scenario_complete),
    ("mentions", scenario_mentions),
    ("get-status", scenario_get_status),
    ("mute-unmute", scenario_mute_unmute),
    ("leave-group", scenario_leave_group),
    ("disband", scenario_disband),
]


INBOX_ERRORS: list[Any] = []


def record_inbox_errors(leader_obj: GroupLeader) -> None:
    """Record every group-invitation-error the SDK Leader's own inbox consumer parsed."""
    original = leader_obj._handle_invitation_error

    async def recorded(error_message: Any) -> None:
        INBOX_ERRORS.append(error_message)
        await original(error_message)

    leader_obj._handle_invitation_error = recorded


async def scenario_inbox_invite() -> str:
    """The v02.01 inbox route: `GroupLeaderMqClient.invite_via_inbox` publishes the invitation to
    `inbox_{echo AIC}` on `inbox.topic`; the host (serving with --inbox-broker) joins and
    announces connected:true, and a task started in the group gets its result."""
    g = RUN.inbox_group = await Group.create(leader())
    record_inbox_errors(g.leader)
    mark = g.mark()
    await g.client.invite_via_inbox(ACSObject(aic=ECHO_AIC), partner_inbox=f"inbox_{ECHO_AIC}")
    joined = await g.wait_status(ECHO_AIC, mark, "echo joined through its inbox")
    assert joined.status.connected is True and joined.status.muted is False, (
        f"first group-mgmt-result after the inbox invitation is {joined.status.model_dump()}"
    )
    task_id, mark = await start(g, "through the inbox", [ECHO_AIC])
    r = await g.wait_task(task_id, ECHO_AIC, "awaiting-completion", mark)
    found = product_texts(r)
    assert any("through the inbox" in t for t in found), f"products {found!r}"
    return f"groupId={g.group_id} joined={joined.status.model_dump()} products={found}"


async def scenario_inbox_expired() -> str:
    """An inbox invitation past its expiresAt is refused with a group-invitation-error on the
    Leader's inbox, which the SDK's own Leader parses; the partner does not join."""
    g = RUN.inbox_group
    if g is None:
        raise AssertionError("not run: needs the group of inbox-invite, which failed")
    mark, errors = g.mark(), len(INBOX_ERRORS)
    invitation = await g.client.invite_via_inbox(
        ACSObject(aic=TRIP_AIC),
        partner_inbox=f"inbox_{TRIP_AIC}",
        expires_at="2020-01-01T00:00:00Z",
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + REPLY_TIMEOUT_S
    while not any(e.partnerAic == TRIP_AIC for e in INBOX_ERRORS[errors:]):
        assert loop.time() < deadline, "no group-invitation-error on the Leader's inbox"
        await asyncio.sleep(0.05)
    error = next(e for e in INBOX_ERRORS[errors:] if e.partnerAic == TRIP_AIC)
    assert error.groupId == g.group_id, f"groupId {error.groupId!r}"
    assert error.invitationToken == invitation.invitationToken, "another invitation's token"
    assert error.error.data is not None and error.error.data.errorType == "INVITATION_REJECTED", (
        f"error {error.error.model_dump()}"
    )
    await asyncio.sleep(SILENCE_S)
    joined = [m for m in g.since(mark) if isinstance(m, GroupMgmtResult) and m.senderId == TRIP_AIC]
    assert not joined, f"trip-planner joined anyway: {[summary(m) for m in joined]}"
    return f"error={error.error.model_dump()}"


if os.environ.get("INTEROP_INBOX") == "1":
    SCENARIOS += [("inbox-invite", scenario_inbox_invite), ("inbox-expired", scenario_inbox_expired)]


async def run_all() -> bool:
    all_ok = True
    try:
        for name, scenario in SCENARIOS:
            first_exchange, first_log = len(EXCHANGES), len(SDK_LOG.records)
            first_message = RUN.group.mark() if RUN.group else 0
            try:
                detail: Any = await asyncio.wait_for(scenario(), SCENARIO_TIMEOUT_S)
                rejected = [
                    r for r in SDK_LOG.records[first_log:]
                    if r.split(" ", 2)[-1].startswith(SDK_PARSE_ERROR)
                ]
                assert not rejected, (
                    f"the SDK rejected group messages during the scenario: {rejected[-6:]}"
                )
                ok = True
            except BaseException as e:  # noqa: BLE001 - every failure is reported
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                ok = False
                detail = {
                    "error": f"{type(e).__name__}: {e}",
                    "traceback": traceback.format_exc(limit=-6),
                    "last_exchanges": [x.describe() for x in EXCHANGES[first_exchange:]],
                    "sdk_log": SDK_LOG.records[first_log:][-12:],
                }
                if RUN.group:
                    detail["group_messages"] = [
                        summary(m) for m in RUN.group.since(first_message)
                    ][-12:]
            all_ok = all_ok and ok
            line = {"scenario": name, "ok": ok, "detail": detail}
            print(json.dumps(line, default=str), flush=True)
    finally:
        if RUN.leader is not None:
            try:  # disbands what is left of the first group (the SDK waits 2 s per group)
                await asyncio.wait_for(RUN.leader.close(), 15.0)
            except Exception as e:  # noqa: BLE001 - cleanup only
                print(f"leader cleanup failed: {type(e).__name__}: {e}", file=sys.stderr)
        await PROBE.close()
    return all_ok


def main() -> int:
    global BASE_URL, ECHO_AIC, TRIP_AIC
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BASE_URL", file=sys.stderr)
        return 2
    BASE_URL = sys.argv[1].rstrip("/")
    ECHO_AIC = os.environ.get("INTEROP_ECHO_AIC") or plugin_aic("echo")
    TRIP_AIC = os.environ.get("INTEROP_TRIP_PLANNER_AIC") or plugin_aic("trip-planner")
    return 0 if asyncio.run(run_all()) else 1


if __name__ == "__main__":
    sys.exit(main())
