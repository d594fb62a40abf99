-- bulkhead fleet lease: join, renew, acknowledge a shrink, rebalance.
-- (allocate.lua is prepended: `allocate(budget, procs)`.)
-- KEYS[1] = bulkhead:{<prefix>:<resource>}:meta   (hash)
-- KEYS[2] = bulkhead:{<prefix>:<resource>}:procs  (hash: pid -> record)
-- A record is "held:owned:demand:exp:seq:budget:ceiling:fallback:asks":
--   held    = bound on the process's calls in flight (what it reported, or
--             a grant it may apply): room is what the budget leaves after
--             every held bound, so nothing is granted while calls run over
--   owned   = the part of held that is the process's own share (<= held);
--             held - owned is "excess": calls that outlived a lost lease,
--             counted but never turned into grantable slots
--   exp     = when the lease runs out, in ms on Redis's clock
--   fallback = the slots it may use once Redis is unreachable and every
--             grant made before could have run out (lease.rs): at least
--             what it was last told, so that the fallbacks recorded add
--             up to at most the budget (a smaller one is told at once and
--             recorded once the process reports it, like `held`)
--   asks    = the fallback its on_unreachable asks for (0: closed)
-- ARGV[1] pid          process id (random, unique per process start)
-- ARGV[2] seq          this request's number, strictly increasing per process
-- ARGV[3] acked        the seq of the last request it got a reply to (0: none)
-- ARGV[4] seen_epoch   the epoch of that reply ("" if none)
-- ARGV[5] held         H: bound on its calls in flight from now on, the sum
--                      over its bulkheads of max(limit in force, in flight)
-- ARGV[6] demand       D: slots it would use (in flight + waiting + refused)
-- ARGV[7] lease_ms     its lease
-- ARGV[8] budget       its configured budget for the resource
-- ARGV[9] lease_valid  1 if its local lease deadline had not passed when sent
-- ARGV[10] ceiling     the most it could use: the sum of its bulkheads' limits
-- ARGV[11] acked_exp   the `exp` of the reply to `acked` (0: none)
-- ARGV[12] asks        the fallback its on_unreachable asks for
-- ARGV[13] fallback    the fallback it was last told (it may use it now)
-- Returns {status, epoch, grant, target, processes, budget, recover_ms,
--          held, owned, fallback, exp}, status 'ok' or 'stale'; or
--         {'replica', role} from a node that is not the primary.
--
-- Fencing on highly available Redis (Sentinel, Cluster, a managed
-- endpoint): the rules below keep the budget on one Redis that may lose
-- writes; two more keep it when the primary changes.
--
-- F1, only a primary grants. The script first reads INFO replication
-- (allowed in scripts on Redis 7.0 and Valkey 9.1; ROLE is not) and,
-- unless it says role:master, writes nothing and returns {'replica',
-- role}: a node demoted to replica, even one with replica-read-only no
-- (whose writes no primary would ever see), never records or grants
-- anything. The client turns that into a READONLY error (script.rs) and
-- looks the primary up again.
--
-- F3, the promotion hold. meta.replid records the master_replid of the
-- node that ran the last script. A node promoted from replica takes a new
-- replid (the old one becomes master_replid2), a node holding data
-- restored or migrated (MIGRATE of a Cluster slot) from another node has
-- another node's replid in meta, and a primary restarted from its own RDB
-- or AOF starts with a new replid (Redis 7.0) and may have lost its last
-- writes. So when the recorded replid is not the node's own, the state
-- came from another node (or an earlier run), which may have granted
-- what it did not pass on. Then, exactly as for lost writes,
-- recover_until = max(recover_until, now + lease): for one lease nobody is
-- granted more than it owns here, and no fallback grows. Why that keeps
-- the budget through a promotion (docs/design/fleet-ha-35.md, 3.2):
--   - a grant is used until its request's send time plus the lease at the
--     latest (the process's deadline is sent + lease - margin, and calls
--     admitted before it end within the margin);
--   - the old primary's grants are applied only while it is the primary
--     (F1 here, and the client's confirmation by the Sentinels), so every
--     one of them was sent before the promotion and is over one lease
--     after it;
--   - the first script on the promoted node runs after the promotion, and
--     from then on every process is held at what it owns here, which is
--     its own replicated record, counted by the old primary too. Growth
--     starts one lease after that first script, when every grant of the
--     old primary is over.
-- The cost: after a promotion, service is back within one lease of the
-- first script on the promoted node (processes that kept a valid lease
-- keep their replicated share meanwhile; only growth waits). A meta
-- written before replid existed gets it recorded, with no hold; an empty
-- node is held by the new-epoch rule below.
local meta_key, procs_key = KEYS[1], KEYS[2]
local pid = ARGV[1]
local seq, acked = tonumber(ARGV[2]), tonumber(ARGV[3])
local seen_epoch = ARGV[4]
local held, demand = tonumber(ARGV[5]), tonumber(ARGV[6])
local lease, budget_cfg = tonumber(ARGV[7]), tonumber(ARGV[8])
local lease_valid = ARGV[9] == '1'
local ceiling = tonumber(ARGV[10])
local acked_exp = tonumber(ARGV[11]) or 0
local asks, kept = tonumber(ARGV[12]) or 0, tonumber(ARGV[13]) or 0
demand = math.min(demand, ceiling)

-- F1: a node that is not the primary writes nothing. Valkey says
-- role:master too; 'primary' is accepted should a server say so.
local info = '\n' .. redis.call('INFO', 'replication')
local role = string.match(info, '\nrole:(%a+)')
if role ~= 'master' and role ~= 'primary' then
  return { 'replica', role or 'unknown' }
end
-- F3: the node's replication id (nil if the server has none to give).
local replid = string.match(info, '\nmaster_replid:(%x+)')
  or string.match(info, '\nprimary_replid:(%x+)')

-- One reading of Redis's clock for the whole script (TIME is not frozen
-- inside a script on Redis 7.0: read it once).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local m = redis.call('HMGET', meta_key, 'epoch', 'created', 'recover_until', 'last', 'replid')
local epoch, created, recover_until = m[1], tonumber(m[2]), tonumber(m[3])
-- When a script last ran, on Redis's clock (nil: none since the epoch).
local last = tonumber(m[4])
-- The node that ran the last script (false: none recorded).
local recorded_replid = m[5]
if not epoch then
  -- First start, or Redis lost our data (restart without persistence,
  -- FLUSHALL, failover to an empty replica): nobody knows what the old
  -- processes hold, so no increase for one lease.
  epoch = t[1] .. '.' .. t[2] .. '.' .. pid
  created, recover_until = now, now + lease
  redis.call('HSET', meta_key, 'epoch', epoch, 'created', created,
             'recover_until', recover_until)
  if replid then redis.call('HSET', meta_key, 'replid', replid) end
elseif replid and recorded_replid ~= replid then
  if recorded_replid then
    -- F3: the state came from another node (promoted replica, restore):
    -- what that node granted and did not replicate may be in use for one
    -- lease still. Nobody grows until then.
    recover_until = math.max(recover_until or 0, now + lease)
    redis.call('HSET', meta_key, 'recover_until', recover_until, 'replid', replid)
  else
    -- Written by a version without the field: record it, no hold.
    redis.call('HSET', meta_key, 'replid', replid)
  end
end

-- Read every lease; reap those that ran out on Redis's clock.
local raw = redis.call('HGETALL', procs_key)
local others, mine = {}, nil
local ran_out = false
for i = 1, #raw, 2 do
  local id = raw[i]
  local h, o, d, e, s, b, c, f, a = string.match(raw[i + 1],
    '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+)$')
  if not h or tonumber(e) <= now then
    redis.call('HDEL', procs_key, id)
    ran_out = ran_out or (h ~= nil and id ~= pid)
  else
    local r = { id = id, held = tonumber(h), owned = tonumber(o), demand = tonumber(d),
                exp = tonumber(e), seq = tonumber(s), budget = tonumber(b), ceiling = tonumber(c),
                fallback = tonumber(f), asks = tonumber(a) }
    if id == pid then mine = r else others[#others + 1] = r end
  end
end
redis.call('HSET', meta_key, 'last', now)

-- A request older than one already applied (retried or delayed): change
-- nothing.
if mine and seq <= mine.seq then
  return { 'stale', epoch, 0, 0, #others + 1, 0, 0, mine.held, mine.owned, 0, 0 }
end

-- Lost writes: the state is older than what this process was told.
local lost = false
if seen_epoch ~= '' and seen_epoch ~= epoch then
  -- The meta was re-created after this process last heard from Redis:
  -- processes that held slots before stop at the latest one lease after
  -- the loss, which happened before `created`.
  lost = true
  recover_until = math.max(recover_until, created + lease)
elseif lease_valid and acked > 0 and (mine == nil or mine.seq < acked)
    and (acked_exp == 0 or now < acked_exp) then
  -- Same epoch, but our last acknowledged write is missing although its
  -- lease has not run out on this clock (failover to a replica that
  -- lagged, or a restore from an old snapshot). A request that comes after
  -- its lease ran out (held up on the way, answered late) finds its record
  -- reaped, as it should be: that is no loss.
  lost = true
  recover_until = math.max(recover_until, now + lease)
end
-- A lease that ran out while no process reached Redis for half a lease or
-- more (Redis stopped, paused or cut off from the whole fleet, and back
-- with its data): its process may be alive on its fallback, which no record
-- counts any more. Nobody grows for one lease, by when every process that
-- reaches Redis has come back and is counted again.
local silenced = ran_out and last ~= nil and now - last >= lease / 2
if silenced then recover_until = math.max(recover_until, now + lease) end
if lost or silenced then redis.call('HSET', meta_key, 'recover_until', recover_until) end
local recovering = now < recover_until

-- The effective budget is the smallest configured one among live
-- processes: lowering takes effect as soon as one process has the new
-- configuration, raising once all have it.
local budget, sum_others = budget_cfg, 0
for _, r in ipairs(others) do
  budget = math.min(budget, r.budget)
  sum_others = sum_others + r.held
end

local all = { { id = pid, demand = demand, ceiling = ceiling } }
for _, r in ipairs(others) do
  all[#all + 1] = { id = r.id, demand = math.min(r.demand, r.ceiling), ceiling = r.ceiling }
end
allocate(budget, all)
local target = 0
for _, r in ipairs(all) do
  if r.id == pid then target = r.target end
end

-- What this process owns inside the budget. A lease in good standing
-- whose record Redis lost or rolled back (lost) was counted before the
-- loss: its reported bound is adopted. A new process, or one whose record
-- was reaped, owns nothing: calls it still has in flight are recorded in
-- `held` but never become grantable slots. Owned slots above the reported
-- bound are released: that is the second phase of a shrink (the process
-- reports a smaller bound once its calls in flight fit the smaller grant).
local owned = mine and mine.owned or 0
if lost and lease_valid then owned = held end
owned = math.min(owned, held)

-- Grant: never more than the target; beyond what it owns, only from room
-- that no bound holds (budget - every held bound, its own included). While
-- recovering, never more than it owns. A decrease is granted at once; the
-- slots stay held until the process reports the smaller bound.
local cap = owned + math.max(0, budget - sum_others - held)
if recovering then cap = owned end
local grant = math.min(target, cap)
local new_owned = math.max(owned, grant)
local new_held = math.max(held, grant)

-- The fallback: max-min fair on what every process's on_unreachable asks
-- for, and never more than the fallbacks the others hold leave, so that
-- the fallbacks recorded add up to at most the budget. Nobody's grows
-- while recovering. What the process was last told stays recorded until
-- it reports the new value.
asks = math.min(asks, budget)
local wishes, fallbacks_others = { { id = pid, demand = asks, ceiling = asks } }, 0
for _, r in ipairs(others) do
  local a = math.min(r.asks, budget)
  wishes[#wishes + 1] = { id = r.id, demand = a, ceiling = a }
  fallbacks_others = fallbacks_others + r.fallback
end
allocate(budget, wishes)
local fallback = 0
for _, r in ipairs(wishes) do
  if r.id == pid then fallback = r.target end
end
fallback = math.min(fallback, math.max(0, budget - fallbacks_others))
if recovering then fallback = math.min(fallback, kept) end
local new_fallback = math.max(kept, fallback)

local exp = now + lease
redis.call('HSET', procs_key, pid, string.format('%d:%d:%d:%d:%d:%d:%d:%d:%d',
  new_held, new_owned, demand, exp, seq, budget_cfg, ceiling, new_fallback, asks))

local recover_ms = recovering and (recover_until - now) or 0
return { 'ok', epoch, grant, target, #all, budget, recover_ms, new_held, new_owned,
         fallback, exp }
