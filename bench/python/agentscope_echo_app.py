"""The Agent API's reference server for the chat benchmark: agentscope-runtime 1.1.6.post2's own
`AgentApp` serving an echo agent, run in `.venv-agentscope` (`scripts/python-env.sh agentscope`).

Usage: .venv-agentscope/bin/python bench/python/agentscope_echo_app.py --port N [--host H]

`POST /process` takes an `AgentRequest` and answers as `Runner.stream_query` does: `response
created`, `in_progress`, the echo as one assistant message (its text: the last input message's
text), `response completed`, as SSE. The agent is the framework's own path (`framework=
"agentscope"`: the request's messages turned into agentscope `Msg`s, the yielded `Msg` adapted
back into Agent API events), with nothing of a model: what is measured is the framework. One
uvicorn worker, logging at warning (no access log), in memory (no durability, no sandbox).
`GET /bench/turns` is the number of turns the agent answered: the benchmark checks it grew by
one per request (scripts/chat-cpu-per-request.sh).
"""

from __future__ import annotations

import argparse

import uvicorn
from agentscope.message import Msg
from agentscope_runtime.engine import AgentApp
from fastapi.responses import PlainTextResponse

app = AgentApp(app_name="echo", app_description="Echoes the last message's text")
turns = 0


@app.query(framework="agentscope")
async def echo(self, msgs, request=None, **kwargs):
    """Yield the last input message's text back, whole, as the agent's final message."""
    global turns
    last = msgs[-1] if isinstance(msgs, list) else msgs
    text = last.get_text_content() or ""
    turns += 1
    yield Msg("echo", text, "assistant"), True


@app.get("/bench/turns")
async def bench_turns() -> PlainTextResponse:
    return PlainTextResponse(str(turns))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
