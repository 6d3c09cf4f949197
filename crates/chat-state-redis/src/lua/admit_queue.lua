-- admit_queue.lua: the ack path under `Queue`, in one atomic step.
--
-- KEYS[1]  dedupe mark of the event       (named; a field of an hourly hash)
-- KEYS[2]  subscription of its thread     (string)
-- KEYS[3]  the scope's lease              (hash, PX lease TTL)
-- KEYS[4]  the bucket's fence counter     (string, no TTL)
-- KEYS[5]  the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[6]  the scope's in-flight batch    (hash)
-- KEYS[7]  its entries                    (list)
-- KEYS[8]  the scope's queue              (list of entries, oldest first)
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
-- ARGV[8] max_size
-- ARGV[9] on_full: 'drop-oldest' | 'drop-newest'
-- ARGV[10] entry TTL (ms)
--
-- Atomic: dedupe check and mark, the gate, and the queue decision: grant the
-- lease with the event in flight, or — when work outlived its holder — queue
-- it behind that work; or append with eviction (the evicted entry's report
-- goes to the outbox).
-- Reply: {'duplicate'|'not-subscribed'|'stored', subscribed}
--        {'run'|'hold', subscribed, fence}
--        {'queued', subscribed, depth}
--        {'dropped', subscribed, 'queue-full'}

local stop, subscribed = gate(KEYS[1], ARGV[2], KEYS[2], KEYS[12], ARGV[6], ARGV[1], ARGV[3], ARGV[#ARGV])
if stop then
  if stop[1] == 'replay' then
    return replay(stop[3], ARGV[3], subscribed, KEYS[3], KEYS[8], ARGV[4])
  end
  return stop
end
local now, us = clock()
-- Run at once, the event is stored as it came; one that waits (queued, or
-- behind work a holder left) is stored with its times (`dated`).
local held, left = held_and_work(KEYS[3], KEYS[8], KEYS[9], KEYS[10], KEYS[6], KEYS[11])
if not held then
  local fence = grant(KEYS[3], KEYS[4], ARGV[3], ARGV[4], us)
  if not left then
    mark(KEYS[1], ARGV[2], ARGV[3], 'run')
    run_first(KEYS[6], KEYS[7], ARGV[3], ARGV[7], now)
    index_held(KEYS[5], ARGV[5], tonumber(ARGV[4]), now)
    return {'run', subscribed, fence}
  end
  -- Work outlived its holder: the new holder drains it, then this event.
  mark(KEYS[1], ARGV[2], ARGV[3], 'hold')
  redis.call('RPUSH', KEYS[8], dated(ARGV[7], now, ARGV[10]))
  redis.call('SADD', KEYS[12], ARGV[6])
  index_held(KEYS[5], ARGV[5], tonumber(ARGV[4]), now)
  return {'hold', subscribed, fence}
end

local max = tonumber(ARGV[8])
if ARGV[9] == 'drop-newest' and redis.call('LLEN', KEYS[8]) >= max then
  mark(KEYS[1], ARGV[2], ARGV[3], 'dropped-full')
  return {'dropped', subscribed, 'queue-full'}
end
mark(KEYS[1], ARGV[2], ARGV[3], 'queued')
local depth = redis.call('RPUSH', KEYS[8], dated(ARGV[7], now, ARGV[10]))
redis.call('SADD', KEYS[12], ARGV[6])
if depth > max then
  redis.call('RPUSH', KEYS[11], report('e', redis.call('LPOP', KEYS[8])))
  depth = depth - 1
end
reindex(KEYS[5], ARGV[5], KEYS[3], true, now)
return {'queued', subscribed, depth}
