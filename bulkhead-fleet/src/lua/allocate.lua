-- bulkhead fleet: the allocation, max-min fair on demand, then the spare
-- evenly. Shared by acquire.lua (prepended to it) and the tests, which
-- compare it with the Rust port in fleet/alloc.rs.
--
-- procs: array of { id = string, demand = n, ceiling = n } with
-- demand <= ceiling; sets procs[i].target. Targets sum to at most budget,
-- each at most its ceiling.
local function allocate(budget, procs)
  -- Water-filling on demand: the smallest demands are met first, each
  -- process gets at most an equal part of what is left.
  table.sort(procs, function(a, b)
    if a.demand ~= b.demand then return a.demand < b.demand end
    return a.id < b.id
  end)
  local n, remaining = #procs, budget
  for i, p in ipairs(procs) do
    p.target = math.min(p.demand, math.floor(remaining / (n - i + 1)))
    remaining = remaining - p.target
  end
  -- Slots left over by rounding go first to processes still below their
  -- demand, one each in id order.
  table.sort(procs, function(a, b) return a.id < b.id end)
  for _, p in ipairs(procs) do
    if remaining > 0 and p.target < p.demand then
      p.target, remaining = p.target + 1, remaining - 1
    end
  end
  -- The rest evenly among the processes below their ceiling (the slots
  -- they could use), the remainder in id order: an idle fleet keeps room
  -- for bursts everywhere.
  while remaining > 0 do
    local open = {}
    for _, p in ipairs(procs) do
      if p.target < p.ceiling then open[#open + 1] = p end
    end
    if #open == 0 then break end
    local each, extra = math.floor(remaining / #open), remaining % #open
    for i, p in ipairs(open) do
      local give = math.min(p.ceiling - p.target, each + ((i <= extra) and 1 or 0))
      p.target, remaining = p.target + give, remaining - give
    end
  end
  return procs
end
