-- wrk script: what an A2A `SendMessage` to the echo partner does, asked for over AIP: an rpc
-- `start` of a new task (v2 dialect), then, once it answered, the rpc `complete` of the same
-- task. Needs exactly one connection per wrk thread (-tN -cN): the two commands of a task go on
-- one connection, one after the other.
--   wrk -t16 -c16 -d10s -s bench/wrk/a2a-aip-pair.lua URL/agents/echo/rpc -- [RUN]
-- RUN (default: the clock, in µs) names the run in every task id. A start's reply must be the
-- task in `awaiting-completion`, a complete's the task `completed`; anything else counts as
-- wrong (the first wrong reply of each thread is printed). A "pair" is two requests: the
-- caller of this script divides wrk's request count by two.

local threads = {}
prefix = "w"

function setup(thread)
  thread:set("prefix", "p" .. #threads)
  table.insert(threads, thread)
end

function init(args)
  prefix = prefix .. "-" .. (args[1] or string.format("%d", os.clock() * 1e6 + os.time() * 1e6))
  wrong = 0
  first_wrong = ""
  kind, n = "start", 1
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

local function command(kind, task)
  return '{"jsonrpc":"2.0","method":"rpc","id":"' .. kind .. "-" .. task .. '","params":{"command":{'
    .. '"type":"task-command","id":"m-' .. kind .. "-" .. task .. '","sentAt":"2026-01-01T00:00:00+00:00",'
    .. '"senderRole":"leader","senderId":"1.2.156.3088.1.1.BENCH.LEADER.1.0000",'
    .. '"command":"' .. kind .. '","dataItems":[{"type":"text","text":"hello"}],'
    .. '"taskId":"' .. task .. '","sessionId":"bench"}}}'
end

-- The replies drive the pair: a start answered right is followed by the complete of its task,
-- anything else by the start of the next task. (wrk may call request() once more than it sends.)
function request()
  return wrk.format(nil, nil, nil, command(kind, prefix .. "-" .. n))
end

function response(status, headers, body)
  local expect = kind == "start" and '"state":"awaiting-completion"' or '"state":"completed"'
  local right = status == 200 and string.find(body, expect, 1, true)
  if not right then
    wrong = wrong + 1
    if first_wrong == "" then first_wrong = kind .. ": " .. string.sub(body or "", 1, 400) end
  end
  if kind == "start" and right then
    kind = "complete"
  else
    kind, n = "start", n + 1
  end
end

done = dofile("bench/wrk/result.lua")(threads)
