"""The reference partner: acps-sdk 2.1.0's own AIP server (FastAPI) with an echo handler.

Run as `python reference_partner.py PORT`; serves POST http://127.0.0.1:PORT/rpc until killed.
Used to check that `aiphost call` works against a partner that is not aiphost, and as the
baseline of the side-by-side benchmarks.

The echo handler does what aiphost's `echo` partner does: a start answers with one product that
echoes the input items and goes to awaiting-completion; continue echoes again.
"""

import sys

import uvicorn
from fastapi import FastAPI

from acps_sdk.aip.aip_base_model import Product, TaskState
from acps_sdk.aip.aip_rpc_server import (
    CommandHandlers,
    TaskManager,
    add_aip_rpc_router,
)


def echo(command):
    TaskManager.set_products(
        command.taskId,
        [Product(id="echo", name="echo", dataItems=command.dataItems or [])],
    )
    return TaskManager.update_task_status(command.taskId, TaskState.AwaitingCompletion)


async def on_start(command, task):
    if task is not None:
        TaskManager.add_command_to_history(command.taskId, command)
        return task
    TaskManager.create_task(command, initial_state=TaskState.Accepted)
    TaskManager.update_task_status(command.taskId, TaskState.Working)
    return echo(command)


async def on_continue(command, task):
    TaskManager.add_command_to_history(command.taskId, command)
    if task.status.state not in (TaskState.AwaitingInput, TaskState.AwaitingCompletion):
        return task
    TaskManager.update_task_status(command.taskId, TaskState.Working)
    return echo(command)


def main():
    port = int(sys.argv[1])
    app = FastAPI()
    add_aip_rpc_router(app, "/rpc", CommandHandlers(on_start=on_start, on_continue=on_continue))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
