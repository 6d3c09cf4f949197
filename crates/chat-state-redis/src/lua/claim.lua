-- claim.lua: recovery. Gives one run whose holder is gone to the sweeping
-- process: the lease of a scope with work and no lease, or one slot run whose
-- slot and reservation both lapsed (re-keyed under the new token as a waiter).
--
-- KEYS[1]  the scope's lease              (hash, PX lease TTL)
-- KEYS[2]  the bucket's fence counter     (string, no TTL)
-- KEYS[3]  the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[4]  the scope's in-flight batch    (hash)
-- KEYS[5]  the scope's queue              (list)
-- KEYS[6]  the scope's pending event      (hash {e, ready})
-- KEYS[7]  the scope's burst members      (list)
-- KEYS[8]  the scope's outbox             (list)
-- KEYS[9]  the scope's slots              (sorted set token -> expiry ms)
-- KEYS[10] the scope's slot stop counts   (hash token -> count)
-- KEYS[11] the scope's slot waiters       (sorted set token -> expiry ms)
-- KEYS[12] the scope's slot runs          (hash token -> run record)
-- KEYS[13] the bucket's slot-orphan index (sorted set scope -> ms)
-- ARGV[1] the scope's member in the orphan indexes
-- ARGV[2] the new token
-- ARGV[3] lease TTL (ms)
--
-- Atomic: the orphan check and the grant. A repeat with the same token returns
-- what it gave. Scopes are rescored (or leave the indexes) as they are found.
-- Reply: {'scope', fence} | {'slot', attempt, lapses, max ('' unknown), entry} | false

local now, us = clock()
local tok, ttl, member = ARGV[2], tonumber(ARGV[3]), ARGV[1]
local l = redis.call('HMGET', KEYS[1], 'tok', 'f', 's')
if l[1] == tok and l[3] == '0' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'scope', l[2]}
end
local again = redis.call('HGET', KEYS[12], tok)
if again and redis.call('ZSCORE', KEYS[11], tok) then
  local a, lapses, _, _, max, entry = split_slot_run(again)
  return {'slot', a, lapses, max, entry}
end

local work = has_work(KEYS[5], KEYS[6], KEYS[7], KEYS[4], KEYS[8])
if not l[1] and work then
  local fence = grant(KEYS[1], KEYS[2], tok, ARGV[3], us)
  index_held(KEYS[3], member, ttl, now)
  return {'scope', fence}
end
reindex(KEYS[3], member, KEYS[1], work, now)

purge_slots(KEYS[9], KEYS[10], KEYS[11], now)
for _, old in ipairs(redis.call('HKEYS', KEYS[12])) do
  if not redis.call('ZSCORE', KEYS[9], old) and not redis.call('ZSCORE', KEYS[11], old) then
    local v = redis.call('HGET', KEYS[12], old)
    local a, lapses, h, _, max, entry = split_slot_run(v)
    a = tonumber(a) + 1
    lapses = tonumber(lapses)
    if h ~= '1' then
      lapses = lapses + 1
    end
    redis.call('HDEL', KEYS[12], old)
    redis.call('HSET', KEYS[12], tok, int(a) .. '|' .. int(lapses) .. '|0|0|m' .. max .. '|' .. entry)
    redis.call('ZADD', KEYS[11], int(now + ttl), tok)
    reindex_slots(KEYS[13], member, KEYS[9], KEYS[11], KEYS[12], now)
    return {'slot', int(a), int(lapses), max, entry}
  end
end
reindex_slots(KEYS[13], member, KEYS[9], KEYS[11], KEYS[12], now)
return false
