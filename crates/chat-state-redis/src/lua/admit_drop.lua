-- admit_drop.lua: the ack path under `Drop`, in one atomic step.
--
-- KEYS[1]  dedupe mark of the event       (named; a field of an hourly hash)
-- KEYS[2]  subscription of its thread     (string)
-- KEYS[3]  the scope's lease              (hash, PX lease TTL)
-- KEYS[4]  the bucket's fence counter     (string, no TTL)
-- KEYS[5]  the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[6]  the scope's in-flight batch    (hash)
-- KEYS[7]  its entries                    (list)
-- KEYS[8]  the scope's queue              (list)
-- KEYS[9]  the scope's pending event      (hash)
-- KEYS[10] the scope's burst members      (list)
-- KEYS[11] the scope's outbox             (list of reports)
-- KEYS[12] threads with waiting work      (set)
-- ARGV[1] gate: 'open' | 'subscribed'
-- ARGV[#ARGV] the subscription TTL (ms) an admission in a subscribed thread renews
-- ARGV[2] dedupe TTL (ms)
-- ARGV[3] the request id (the new lease's token)
-- ARGV[4] lease TTL (ms)
-- ARGV[5] the scope's member in the orphan index
-- ARGV[6] the event's thread
-- ARGV[7] the event as its run-at-once entry ("<AT_HAND_OUT>||<ref>\n<JSON>")
--
-- Atomic: dedupe check and mark, the subscription gate, and the lease grant
-- with the event stored in flight. Work a holder left behind counts as busy
-- (the sweep adopts it).
-- Reply: {'duplicate'|'not-subscribed'|'stored', subscribed}
--        {'run', subscribed, fence}
--        {'dropped', subscribed, 'busy'}

local stop, subscribed = gate(KEYS[1], ARGV[2], KEYS[2], KEYS[12], ARGV[6], ARGV[1], ARGV[3], ARGV[#ARGV])
if stop then
  if stop[1] == 'replay' then
    return replay(stop[3], ARGV[3], subscribed, KEYS[3], KEYS[8], ARGV[4])
  end
  return stop
end
-- Busy: the lease is held, or work waits for a holder (one EXISTS of both).
if redis.call('EXISTS', KEYS[3], KEYS[8], KEYS[9], KEYS[10], KEYS[6], KEYS[11]) > 0 then
  mark(KEYS[1], ARGV[2], ARGV[3], 'dropped-busy')
  return {'dropped', subscribed, 'busy'}
end
local now, us = clock()
mark(KEYS[1], ARGV[2], ARGV[3], 'run')
local fence = grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)
run_first(KEYS[6], KEYS[7], ARGV[3], ARGV[7], now)
index_held(KEYS[5], ARGV[5], tonumber(ARGV[4]), now)
return {'run', subscribed, fence}
