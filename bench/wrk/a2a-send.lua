-- wrk script: each request is an A2A v1.0 JSON-RPC `SendMessage` of a new message (no taskId, so
-- a new task), with a message id unique per run, wrk thread and request, whose one text part is
-- "echo <messageId>":
--   wrk -t2 -c16 -d10s -s bench/wrk/a2a-send.lua URL -- [RUN]
-- RUN (default: the clock, in µs) names the run in every message id, so a measured run never
-- re-sends the ids of its warm-up.
-- Every reply is checked: HTTP 200, a JSON-RPC result (no error) holding a task whose one status
-- state is TASK_STATE_COMPLETED, with exactly one artifact whose one part is the text
-- "echo <id>", where <id> is a messageId the reply carries too (the request's message in the
-- task's history: the artifact echoes *this* request's message). Anything else counts as wrong;
-- the first wrong reply of each thread is printed at the end.
-- The request is the same for every target (aiphost's A2A door, the a2a-sdk server), so both do
-- the same parsing work.

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
  wrk.headers["A2A-Version"] = "1.0"
end

function request()
  counter = counter + 1
  local id = prefix .. "-" .. counter
  local body = '{"jsonrpc":"2.0","id":"' .. id .. '","method":"SendMessage","params":{"message":{'
    .. '"role":"ROLE_USER","messageId":"' .. id .. '","parts":[{"text":"echo ' .. id .. '"}]}}}'
  return wrk.format(nil, nil, nil, body)
end

local function count(s, needle)
  local n, at = 0, 1
  while true do
    local i = string.find(s, needle, at, true)
    if not i then return n end
    n, at = n + 1, i + #needle
  end
end

-- nil if the reply is right, else why not.
local function check(status, body)
  if status ~= 200 then return "HTTP " .. status end
  if not string.find(body, '"result":{', 1, true) or string.find(body, '"error":{', 1, true) then
    return "no JSON-RPC result"
  end
  if count(body, '"state":"') ~= 1 or not string.find(body, '"state":"TASK_STATE_COMPLETED"', 1, true) then
    return "not one status, completed"
  end
  -- The artifacts array: from its opening bracket to the matching one (ids and texts here hold
  -- no brackets).
  local open = string.find(body, '"artifacts":[', 1, true)
  if not open then return "no artifacts" end
  local i, depth = open + #'"artifacts":[', 1
  while depth > 0 and i <= #body do
    local c = string.sub(body, i, i)
    if c == "[" then depth = depth + 1 elseif c == "]" then depth = depth - 1 end
    i = i + 1
  end
  local artifacts = string.sub(body, open, i - 1)
  if count(artifacts, '"artifactId":"') ~= 1 then return "not exactly one artifact" end
  if count(artifacts, '"text":"') ~= 1 then return "not one text part" end
  local text = string.match(artifacts, '"text":"echo ([^"]+)"')
  if not text then return "the artifact's text is not an echo" end
  if not string.find(body, '"messageId":"' .. text .. '"', 1, true) then
    return "the artifact echoes another message than the reply's"
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
