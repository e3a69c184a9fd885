"""The MCP benchmark's reference server: the official Python MCP SDK (mcp 2.3.0) serving one
`echo` tool over its own Streamable HTTP app, in memory.

    .venv/bin/python bench/python/mcp_echo_server.py PORT

`POST /mcp` is the SDK's `MCPServer.streamable_http_app` with `stateless_http=True,
json_response=True`: a 2026-07-28 request (its `_meta` naming the protocol version and the
client) is one POST answered by one JSON body, as aiphost's door answers it. The tool `echo`
takes what aiphost's echo partner's tool takes (`text`, required; `data`, an optional object)
and returns the text, whole, as its one `text` content block: the reply scripts/
mcp-cpu-per-request.sh checks at both servers (bench/wrk/mcp-call.lua). One uvicorn worker,
access log off, the asyncio loop and h11 (what the venv has: no uvloop, no httptools); no
durability, no sandbox, no tenancy.

`GET /bench/calls` is the number of calls the tool answered: the benchmark checks it grew by
one per request.
"""

import sys

import uvicorn
from starlette.requests import Request
from starlette.responses import PlainTextResponse

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo", description="Echoes its input back", log_level="WARNING")
calls = 0


@server.tool(name="echo", description="Returns the text it receives, unchanged.")
def echo(text: str, data: dict | None = None) -> str:
    """The text, whole (the data is taken, as aiphost's tool takes it, and not echoed)."""
    global calls
    calls += 1
    return text


@server.custom_route("/bench/calls", methods=["GET"])
async def bench_calls(_: Request) -> PlainTextResponse:
    return PlainTextResponse(str(calls))


def main() -> None:
    port = int(sys.argv[1])
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
