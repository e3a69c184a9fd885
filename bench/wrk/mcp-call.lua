-- wrk script: each request is one MCP `tools/call` at protocol 2026-07-28 (stateless: no
-- `initialize`, no session; the client's context in the request's `_meta`), calling TOOL with
-- `{"text":"echo <id>"}`, the id unique per run, wrk thread and request and also the JSON-RPC id:
--   wrk -t2 -c16 -d10s -s bench/wrk/mcp-call.lua URL -- TOOL [RUN]
-- RUN (default: the clock, in µs) names the run in every id, so a measured run never re-sends
-- the ids of its warm-up.
-- The headers are the ones a 2026-07-28 client sends and rmcp's Streamable HTTP server checks
-- (rmcp 3.11.0 transport/streamable_http_server/tower.rs): Accept naming JSON and SSE (else
-- 406), Content-Type JSON (415), MCP-Protocol-Version equal to the `_meta` protocolVersion,
-- and SEP-2243's Mcp-Method and Mcp-Name matching the body (else 400, -32020).
-- Every reply is checked: HTTP 200, a JSON body (Content-Type application/json, one JSON-RPC
-- response object), the response to *this* request (its id), a result that is not an error
-- (no `error`, no `"isError":true`) whose first content block is the text "echo <id>".
-- Anything else counts as wrong; the first wrong reply of each thread is printed at the end.
-- The request is the same for every target (aiphost's MCP door, the Python SDK's own server),
-- so both do the same parsing work.

local counter = 0
local threads = {}
prefix = "w"

function setup(thread)
  thread:set("prefix", "w" .. #threads)
  table.insert(threads, thread)
end

function init(args)
  tool = args[1] or "echo"
  prefix = prefix .. "-" .. (args[2] or string.format("%d", os.clock() * 1e6 + os.time() * 1e6))
  wrong = 0
  first_wrong = ""
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = tool
end

function request()
  counter = counter + 1
  local id = prefix .. "-" .. counter
  local body = '{"jsonrpc":"2.0","id":"' .. id .. '","method":"tools/call","params":{"name":"'
    .. tool .. '","arguments":{"text":"echo ' .. id .. '"},"_meta":{'
    .. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    .. '"io.modelcontextprotocol/clientInfo":{"name":"aiphost-bench","version":"1.0.0"},'
    .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'
  return wrk.format(nil, nil, nil, body)
end

local function header(headers, name)
  for key, value in pairs(headers) do
    if string.lower(key) == name then return value end
  end
  return nil
end

-- nil if the reply is right, else why not. Replies come back in request order on a connection,
-- but wrk threads share no state with their connections, so the id is read from the reply: the
-- JSON-RPC id, the first `"id"` of the body (both servers write `jsonrpc` and `id` first, and
-- nothing before the result could hold another), which is the request's id.
local function check(status, headers, body)
  if status ~= 200 then return "HTTP " .. status end
  local kind = header(headers, "content-type") or ""
  if not string.find(string.lower(kind), "application/json", 1, true) then
    return "Content-Type " .. kind .. ", not JSON"
  end
  if not (string.match(body, '^%s*{') and string.match(body, '}%s*$')) then return "not one JSON object" end
  if not string.find(body, '"jsonrpc":"2.0"', 1, true) then return "not JSON-RPC 2.0" end
  local id = string.match(body, '"id":"([^"]+)"')
  if not id then return "no id" end
  if string.find(body, '"error":', 1, true) then return "a JSON-RPC error" end
  if not string.find(body, '"result":', 1, true) then return "no result" end
  if string.find(body, '"isError":true', 1, true) then return "the result is an error" end
  -- The first content block: from `"content":[{` to its closing brace (a text block's only
  -- nested string is the echo of an id, which holds no brace).
  local first = string.match(body, '"content":%[(%b{})')
  if not first then return "no content" end
  if not string.find(first, '"type":"text"', 1, true) then return "the first content block is not text" end
  if not string.find(first, '"text":"echo ' .. id .. '"', 1, true) then
    return "the first content block does not echo this request"
  end
  return nil
end

function response(status, headers, body)
  local why = check(status, headers, body)
  if why then
    wrong = wrong + 1
    if first_wrong == "" then first_wrong = why .. ": " .. string.sub(body or "", 1, 400) end
  end
end

done = dofile("bench/wrk/result.lua")(threads)
