"""Interop check: the official A2A Python SDK's A2A v0.3 client (a2a-sdk 1.3.0, its
`a2a.compat.v0_3` layer) against a running aiphost.

Usage: python a2a_v03_client.py BASE_URL     (BASE_URL like http://127.0.0.1:8080)

The host must serve the example partners `echo`, `trip-planner`, `chunked` and `tck`, and let
webhook configs name 127.0.0.1 (push-configs registers one there; its task does not change while
the config exists, so nothing is sent to it).

The SDK speaks v0.3 through its `CompatJsonRpcTransport`, which its `ClientFactory` chooses when
the card's JSON-RPC interface says `protocolVersion` 0.3. Here every client is made from the card
*as a v0.3 client reads it*: the served card without v1.0's `supportedInterfaces`, so that the
SDK's card parser finds the endpoint from v0.3's own fields (`url`, `preferredTransport`,
`protocolVersion`, `additionalInterfaces`). Every request then goes out in v0.3's JSON-RPC
(`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`,
`tasks/pushNotificationConfig/*`, with `A2A-Version: 0.3`) and every answer is parsed by the SDK's
v0.3 models and converted back by its v0.3 layer.

The scenarios are `a2a_client.py`'s, unchanged (the same checks through the same `Client` API),
run over this one interface as "jsonrpc-v0.3/<name>" — all but `list-tasks`, which v0.3's
JSON-RPC binding does not have (the SDK refuses it before sending anything). After each one, the
HTTP exchanges it made must all be v0.3 method calls. Two scenarios are this script's own:
"v0.3-card" (the served card is a valid v0.3 `AgentCard` by the SDK's own model, pointing at the
JSON-RPC endpoint) and "jsonrpc-v0.3/push-configs" (a push notification config set, read back by
id, listed and deleted through the SDK's v0.3 calls).

Each scenario prints one JSON line {"scenario", "ok", "detail"}; the exit code is 1 if any failed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import a2a_client as base
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as types_v03
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict

LABEL = "jsonrpc-v0.3"
JSONRPC = TransportProtocol.JSONRPC.value

# a2a_client.py's scenarios that v0.3's JSON-RPC binding can carry.
SHARED = [
    (name, scenario)
    for name, scenario in base.BINDING_SCENARIOS
    # v0.3's JSON-RPC has no tasks/list: the SDK's v0.3 transport raises NotImplementedError.
    if name != "list-tasks"
]


async def served_card(http: Any, agent: str) -> dict[str, Any]:
    response = await http.get(f"{base.BASE_URL}/agents/{agent}/.well-known/agent-card.json")
    response.raise_for_status()
    return response.json()


class SdkV03(base.Sdk):
    """`a2a_client.Sdk` whose clients are the SDK's v0.3 clients, made from the v0.3 view of the
    card."""

    async def client(
        self, agent: str, binding: str, *, streaming: bool = True
    ) -> tuple[Client, str]:
        assert binding == JSONRPC, f"v0.3 is served over JSON-RPC only, not {binding}"
        served = await served_card(self.http, agent)
        legacy = {k: v for k, v in served.items() if k != "supportedInterfaces"}
        card = parse_agent_card(legacy)
        # The main `url` and `additionalInterfaces` (which v0.3 says should repeat it): all the
        # one JSON-RPC endpoint, at version 0.3.
        interfaces = list(card.supported_interfaces)
        assert interfaces and all(
            (i.protocol_binding, i.protocol_version, i.url)
            == (JSONRPC, "0.3", f"{base.BASE_URL}/agents/{agent}/a2a")
            for i in interfaces
        ), f"the v0.3 view of the card: {[MessageToDict(i) for i in interfaces]}"
        interface = interfaces[0]
        config = ClientConfig(
            streaming=streaming,
            httpx_client=self.http,
            supported_protocol_bindings=[JSONRPC],
        )
        client = ClientFactory(config).create(card)
        self.clients.append(client)
        return client, interface.url


def v03_calls(log: base.Log, what: str) -> list[str]:
    """The methods of the scenario's A2A calls, each of which must be a v0.3 one."""
    methods = []
    for exchange in log.exchanges:
        request = exchange["request"]
        if "/.well-known/" in request:
            continue
        body = request.split(" ", 2)[2] if request.count(" ") >= 2 else ""
        method = json.loads(body).get("method", "") if body.startswith("{") else ""
        assert "/" in method, f"{what}: a call that is not v0.3's: {request[:300]}"
        methods.append(method)
    assert methods, f"{what}: no A2A call was made"
    return sorted(set(methods))


async def scenario_card() -> str:
    """The served card is a v0.3 AgentCard by the SDK's v0.3 model, pointing at the JSON-RPC
    endpoint, and the SDK's v0.3 reading of it is the JSON-RPC interface at version 0.3."""
    async with SdkV03() as sdk:
        served = await served_card(sdk.http, "echo")
    card = types_v03.AgentCard.model_validate(served)
    endpoint = f"{base.BASE_URL}/agents/echo/a2a"
    assert card.url == endpoint, f"url: {card.url}"
    assert card.preferred_transport == JSONRPC, f"preferredTransport: {card.preferred_transport}"
    assert card.protocol_version == "0.3", f"protocolVersion: {card.protocol_version}"
    assert [(i.url, i.transport) for i in card.additional_interfaces or []] == [
        (endpoint, JSONRPC)
    ], f"additionalInterfaces: {card.additional_interfaces}"
    assert card.capabilities.streaming, "the card does not declare streaming"
    assert [s.id for s in card.skills] == ["echo"], f"skills: {[s.id for s in card.skills]}"
    return f"url={card.url} protocolVersion={card.protocol_version}"


async def scenario_push_configs(binding: str) -> str:
    """A push notification config set through the SDK's v0.3 call reads back the same by id and
    in the task's list, and is gone once deleted."""
    async with SdkV03() as sdk:
        client, _ = await sdk.client("tck", binding, streaming=False)
        waiting = await base.send_blocking(
            client, base.send_request(base.user_message("x", prefix="tck-input-required"))
        )
        base.expect_state(waiting, TaskState.TASK_STATE_INPUT_REQUIRED, "the task")
        config = TaskPushNotificationConfig(
            task_id=waiting.id,
            id=f"push-{uuid.uuid4()}",
            url="http://127.0.0.1:9/a2a-v03-hook",
            token="tok",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="s3"),
        )
        made = await client.create_task_push_notification_config(config)
        assert made == config, f"set answered {MessageToDict(made)}, not {MessageToDict(config)}"
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=waiting.id, id=config.id)
        )
        assert got == config, f"get answered {MessageToDict(got)}"
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=waiting.id)
        )
        assert list(listed.configs) == [config], (
            f"list answered {[MessageToDict(c) for c in listed.configs]}"
        )
        await client.delete_task_push_notification_config(
            DeleteTaskPushNotificationConfigRequest(task_id=waiting.id, id=config.id)
        )
        gone = await base.expect_error(
            client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=waiting.id, id=config.id)
            ),
            TaskNotFoundError,
            "get of a deleted config",
        )
        after = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=waiting.id)
        )
    assert not after.configs, f"still listed: {[MessageToDict(c) for c in after.configs]}"
    return f"set, got, listed and deleted {config.id}; then: {gone}"


def scenarios() -> list[tuple[str, Callable[[], Awaitable[str]]]]:
    out: list[tuple[str, Callable[[], Awaitable[str]]]] = [("v0.3-card", scenario_card)]
    for name, scenario in [*SHARED, ("push-configs", scenario_push_configs)]:
        out.append((f"{LABEL}/{name}", lambda s=scenario: s(JSONRPC)))
    return out


async def run_all() -> bool:
    # a2a_client.py's scenarios make their clients with its `Sdk` and log into its `LOG`.
    base.Sdk = SdkV03
    all_ok = True
    for name, scenario in scenarios():
        base.LOG = base.Log()
        try:
            detail: Any = await asyncio.wait_for(scenario(), base.SCENARIO_TIMEOUT_S)
            if name.startswith(f"{LABEL}/"):
                detail = {"result": detail, "methods": v03_calls(base.LOG, name)}
            ok = True
        except BaseException as e:  # noqa: BLE001 - every failure is reported, none stops the run
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            ok = False
            detail = {
                "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc(limit=-6),
                "exchanges": base.LOG.exchanges,
                "stream_events": base.LOG.events,
            }
        all_ok = all_ok and ok
        print(json.dumps({"scenario": name, "ok": ok, "detail": detail}), flush=True)
    return all_ok


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} BASE_URL", file=sys.stderr)
        return 2
    base.BASE_URL = sys.argv[1].rstrip("/")
    return 0 if asyncio.run(run_all()) else 1


if __name__ == "__main__":
    sys.exit(main())
