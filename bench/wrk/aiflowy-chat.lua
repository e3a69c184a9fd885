-- wrk script: each request is one AIFlowy chat turn (`POST …/aiflowy/chat`, the seed's wire) of a
-- new conversation, with a conversation id unique per run, wrk thread and request, whose prompt
-- says "echo <id>":
--   wrk -t2 -c16 -d10s -s bench/wrk/aiflowy-chat.lua URL -- [RUN]
-- RUN (default: the clock, in µs) names the run in every conversation id, so a measured run
-- never continues a conversation of its warm-up.
-- Every reply is checked: HTTP 200, an SSE stream whose last event is `done`, with no `error`
-- event, and an `llm` message event of this conversation carrying the text "echo <id>".
-- Anything else counts as wrong; the first wrong reply of each thread is printed at the end.

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
  local body = '{"prompt":"echo ' .. id .. '","conversationId":"' .. id .. '"}'
  return wrk.format(nil, nil, nil, body)
end

-- nil if the reply is right, else why not.
local function check(status, body)
  if status ~= 200 then return "HTTP " .. status end
  local last_event
  for line in string.gmatch(body, "[^\n]+") do
    local name = string.match(line, "^event: ?(.*)$")
    if name then
      if name == "error" then return "an error event" end
      last_event = name
    end
  end
  if last_event ~= "done" then return "the last event is not done" end
  local conversation = string.match(body, '"conversation_id":"([^"]+)"')
  if not conversation then return "no conversation_id" end
  local echoed = false
  for line in string.gmatch(body, "[^\n]+") do
    if string.find(line, '"echo ' .. conversation .. '"', 1, true) then
      if not string.find(line, '"domain":"llm"', 1, true) then return "the echo is not an llm event" end
      echoed = true
    end
  end
  if not echoed then return "no message echoing this request" end
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
