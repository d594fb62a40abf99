-- bulkhead fleet lease: leave (shutdown, or the registry dropped).
-- KEYS[1] meta, KEYS[2] procs; ARGV[1] pid, ARGV[2] seq, ARGV[3] held
-- held: calls still in flight after the process closed its bulkheads
-- (limit 0) and waited for them; 0 frees everything at once, otherwise the
-- record stays (demand 0) until its lease runs out.
-- Returns 1 if it left, 0 if it had no record, -1 for a stale request.
--
-- No role check here, unlike acquire.lua (F1), on purpose: a leave only
-- removes this process's own record (nothing in flight) or shrinks it to
-- the calls still running, owned no more than before; it never grants.
-- On a node that is not the primary it fails with READONLY, or, on a
-- writable replica (replica-read-only no), it is written there and never
-- reaches the primary: the primary keeps the record until its lease runs
-- out, so the slots come back later, never too early. Should that replica
-- be promoted, what it recorded is still true, and acquire.lua's
-- promotion hold (F3) applies there. A check would cost an INFO per leave
-- and gain nothing.
local procs_key = KEYS[2]
local pid, seq, held = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local v = redis.call('HGET', procs_key, pid)
if not v then return 0 end
local h, o, d, e, s, b, c = string.match(v,
  '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
if not h then
  redis.call('HDEL', procs_key, pid)
  return 1
end
if seq <= tonumber(s) then return -1 end
if held == 0 then
  redis.call('HDEL', procs_key, pid)
else
  -- Calls still running after the drain: keep them counted (owned no
  -- more than before) until the lease runs out. A process that left has
  -- no fallback.
  redis.call('HSET', procs_key, pid, string.format('%d:%d:%d:%s:%d:%s:%s:0:0',
    held, math.min(held, tonumber(o)), 0, e, seq, b, c))
end
return 1
