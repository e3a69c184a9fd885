-- wrk script: each request is one Agent API turn (`POST …/process`) of a new session, with a
-- session id unique per run, wrk thread and request, whose one user message says "echo <id>":
--   wrk -t2 -c16 -d10s -s bench/wrk/agent-api.lua URL -- [RUN]
-- RUN (default: the clock, in µs) names the run in every session id, so a measured run never
-- continues a session of its warm-up.
-- Every reply is checked: HTTP 200, an SSE stream of `data:` lines whose last event is the
-- response, completed, and which carries a completed message with the text "echo <id>" of *this*
-- request's id. Anything else counts as wrong; the first wrong reply of each thread is printed
-- at the end. The request is the same for every target (aiphost's Agent API door,
-- agentscope-runtime's own AgentApp), so both do the same parsing work.

local counter = 0
local threads = {}
prefix = "w"

function setup(thread)
  thread:set("prefix", "w" .. #threads)
  table.insert(threads, thread)
end

function init(args)
  prefix = prefix .. "-" .. (args[1] or string.format("%d", os.clock() * 1e6 + os.time() * 1e6))
  wrong = 0
  first_wrong = ""
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "text/event-stream"
end

function request()
  counter = counter + 1
  local id = prefix .. "-" .. counter

  local body = '{"input":[{"role":"user","type":"message","content":[{"type":"text","text":"echo '
    .. id .. '"}]}],"session_id":"' .. id .. '"}'
  return wrk.format(nil, nil, nil, body)
end

-- nil if the reply is right, else why not. Replies come back in request order on a connection,
-- but wrk threads share no state with their connections, so the id is read from the reply:
-- every response event carries the session id, which is the request's id.
local function check(status, body)
  if status ~= 200 then return "HTTP " .. status end
  local last
  for line in string.gmatch(body, "[^\n]+") do
    if string.sub(line, 1, 6) == "data: " then last = line
    elseif line ~= "" and string.sub(line, 1, 1) ~= ":" then return "not only data: lines" end
  end
  if not last then return "no event" end
  if not string.find(last, '"object":"response"', 1, true) then return "the last event is not the response" end
  if not string.find(last, '"status":"completed"', 1, true) then return "the response did not complete" end
  local session = string.match(last, '"session_id":"([^"]+)"')
  if not session then return "no session_id" end
  if not string.find(body, '"text":"echo ' .. session .. '"', 1, true) then
    return "no message echoing this request"
  end
  return nil
end

function response(status, headers, body)
  local why = check(status, body)
  if why then
    wrong = wrong + 1
    if first_wrong == "" then first_wrong = why .. ": " .. string.sub(body or "", 1, 400) end
  end
end

done = dofile("bench/wrk/result.lua")(threads)
