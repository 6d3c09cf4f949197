-- admit_debounce.lua: the ack path under `Debounce`, in one atomic step.
--
-- KEYS[1]  dedupe mark of the event       (named; a field of an hourly hash)
-- KEYS[2]  subscription of its thread     (string)
-- KEYS[3]  the scope's lease              (hash, PX lease TTL)
-- KEYS[4]  the bucket's fence counter     (string, no TTL)
-- KEYS[5]  the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[6]  the scope's pending event      (hash {e = entry, ready = ms})
-- KEYS[7]  the scope's outbox             (list of reports)
-- KEYS[8]  threads with waiting work      (set)
-- KEYS[9]  the scope's queue              (list; for a repeat's depth)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[#ARGV] the subscription TTL (ms) an admission in a subscribed thread renews
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the request id (the new lease's token)
-- ARGV[4] lease TTL (ms)
-- ARGV[5] the scope's member in the orphan index
-- ARGV[6] the event's thread
-- ARGV[7] the event ("<ref>\n<JSON>")
-- ARGV[8] quiet interval (ms)
-- ARGV[9] entry TTL (ms): a pending event older than this when handed over
--         is expired
--
-- Atomic: dedupe check and mark, the gate, replacing the pending event (its
-- report 'superseded' goes to the outbox, also when its holder is gone) and
-- restarting the quiet interval, and granting the lease when it is free.
-- Reply: {'duplicate'|'not-subscribed'|'stored', subscribed}
--        {'hold', subscribed, fence}
--        {'pending', subscribed, replaced 0|1}

local stop, subscribed = gate(KEYS[1], ARGV[2], KEYS[2], KEYS[8], ARGV[6], ARGV[1], ARGV[3], ARGV[#ARGV])
if stop then
  if stop[1] == 'replay' then
    return replay(stop[3], ARGV[3], subscribed, KEYS[3], KEYS[9], ARGV[4])
  end
  return stop
end
local now, us = clock()
local replaced = redis.call('HGET', KEYS[6], 'e')
redis.call('HSET', KEYS[6], 'e', int(now) .. '|' .. int(now + tonumber(ARGV[9])) .. '|' .. ARGV[7],
  'ready', int(now + tonumber(ARGV[8])))
redis.call('SADD', KEYS[8], ARGV[6])
if replaced then
  redis.call('RPUSH', KEYS[7], report('s', replaced))
end

if redis.call('EXISTS', KEYS[3]) == 0 then
  mark(KEYS[1], ARGV[2], ARGV[3], 'hold')
  local fence = grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)
  index_held(KEYS[5], ARGV[5], tonumber(ARGV[4]), now)
  return {'hold', subscribed, fence}
end
mark(KEYS[1], ARGV[2], ARGV[3], 'pending')
reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
local r = 0
if replaced then
  r = 1
end
return {'pending', subscribed, r}
