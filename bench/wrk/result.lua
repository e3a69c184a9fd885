-- The `done` of every aiphost wrk script (loaded from the repository's root, where the scripts
-- that run wrk work): the RESULT line they read, and the first wrong reply of each thread. A
-- script counts `wrong` per thread, may keep `first_wrong`, and passes its list of threads:
--   done = dofile("bench/wrk/result.lua")(threads)
return function(threads)
  return function(summary, latency, requests)
    local wrong_total = 0
    for _, thread in ipairs(threads) do
      wrong_total = wrong_total + thread:get("wrong")
      local w = thread:get("first_wrong")
      if w and w ~= "" then io.write("WRONG " .. w .. "\n") end
    end
    io.write(string.format("RESULT requests=%d seconds=%.3f wrong=%d errors=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d\n",
      summary.requests, summary.duration / 1e6, wrong_total,
      summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
  end
end
