"""The A2A benchmark's reference server: the official Python A2A SDK (a2a-sdk 1.3.0) serving an
echo agent over its own v1.0 JSON-RPC app, in memory.

    .venv/bin/python bench/python/a2a_echo_server.py PORT

`POST /a2a` is the SDK's JSON-RPC binding (`create_jsonrpc_routes` over `DefaultRequestHandler`,
i.e. `DefaultRequestHandlerV2`, with `InMemoryTaskStore`); the card is at
`/.well-known/agent-card.json`. One uvicorn worker, access log off. Every message is answered as
aiphost's `echo` partner answers it over A2A: a new task that goes submitted → working → one
artifact named `echo` holding the message's parts → completed, and `SendMessage` returns the
completed task (with its history and the artifact).

The SDK's OpenTelemetry instrumentation is off unless the environment asks for it
(`OTEL_INSTRUMENTATION_A2A_SDK_ENABLED`): with no tracer configured its spans are pure overhead
(~25 % of the server's CPU per request here: bench-results/a2a-cpu-per-request-1.md), so the
reference runs in its fastest setting.
uvicorn runs with what the venv has: the asyncio loop and h11 (no uvloop, no httptools).
"""

import os
import sys

os.environ.setdefault("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", "false")

import uvicorn

from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)


class EchoExecutor(AgentExecutor):
    """Completes every task with one artifact holding the message's parts."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.start_work()
        await updater.add_artifact(list(context.message.parts), name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def app(port: int) -> Starlette:
    card = AgentCard(
        name="echo",
        description="Echoes each message as the artifact of a completed task.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/a2a",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo",
                name="echo",
                description="Returns its input.",
                tags=["echo"],
            )
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, "/a2a")
    return Starlette(routes=routes)


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 18200
    uvicorn.run(app(port), host="127.0.0.1", port=port, workers=1, access_log=False, log_level="warning")
