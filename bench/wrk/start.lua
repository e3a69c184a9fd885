-- wrk script: each request is an rpc `start` of a new task (v2 dialect), with an id unique per
-- run, wrk thread and request; a reply that does not contain `expect` counts as an error.
--   wrk -t2 -c16 -d10s --latency -s bench/wrk/start.lua URL -- EXPECT [RUN]
-- RUN (default: the clock, in µs) names the run in every task id, so a measured run never
-- re-sends the ids of its warm-up (a `start` of an existing task is ignored, and cheaper).
-- The request is the same for every target (aiphost, the reference partner, a bare JSON echo),
-- so the three do the same parsing work on the server side.

local counter = 0
local threads = {}
prefix = "w"

function setup(thread)
  thread:set("prefix", "w" .. #threads)
  table.insert(threads, thread)
end

function init(args)
  expect = args[1] or "awaiting-completion"
  prefix = prefix .. "-" .. (args[2] or string.format("%d", os.clock() * 1e6 + os.time() * 1e6))
  wrong = 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local task = prefix .. "-" .. counter
  local body = '{"jsonrpc":"2.0","method":"rpc","id":"' .. task .. '","params":{"command":{'
    .. '"type":"task-command","id":"m-' .. task .. '","sentAt":"2026-01-01T00:00:00+00:00",'
    .. '"senderRole":"leader","senderId":"1.2.156.3088.1.1.BENCH.LEADER.1.0000",'
    .. '"command":"start","dataItems":[{"type":"text","text":"hello"}],'
    .. '"taskId":"' .. task .. '","sessionId":"bench"}}}'
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  if status ~= 200 or not string.find(body, expect, 1, true) then
    wrong = wrong + 1
  end
end

done = dofile("bench/wrk/result.lua")(threads)
