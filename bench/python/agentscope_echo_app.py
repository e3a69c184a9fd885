"""The chat benchmark's reference server: agentscope-runtime 1.1.6.post2's own `AgentApp`
serving an echo agent over its Agent API, in memory.

    .venv-agentscope/bin/python bench/python/agentscope_echo_app.py PORT

`POST /process` is the AgentApp's own route (its `Runner.stream_query`: response created,
in_progress, the agent's messages through the agentscope adapter, response completed, as SSE).
The agent answers each request with one assistant message saying the text of the request's last
message, as aiphost's `echo` partner answers it over the Agent API door. `GET /bench/turns` is the
number of turns the agent answered (the benchmark checks that it grew by one per request). One
uvicorn worker, access log off; no durability, no sandbox, no tenancy.
"""

import sys

import uvicorn
from agentscope.message import Msg
from fastapi.responses import PlainTextResponse

from agentscope_runtime.engine import AgentApp

app = AgentApp(app_name="echo", app_description="echoes the last message")
turns = 0


@app.query(framework="agentscope")
async def echo(self, msgs, **kwargs):
    """One turn: the last message's text, said back at once."""
    global turns
    text = msgs[-1].get_text_content() if msgs else ""
    turns += 1
    yield Msg("echo", text, "assistant"), True


@app.get("/bench/turns")
async def bench_turns():
    return PlainTextResponse(str(turns))


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
