-- finish.lua: the holder of a scope's exclusive lease acknowledges its batch
-- and gets the next one (release-or-handoff), in one atomic step.
--
-- KEYS[1]  the scope's lease              (hash, PX lease TTL)
-- KEYS[2]  the bucket's orphan index      (sorted set scope -> lease expiry ms)
-- KEYS[3]  the scope's in-flight batch    (hash)
-- KEYS[4]  its entries                    (list)
-- KEYS[5]  the scope's queue              (list)
-- KEYS[6]  the scope's pending event      (hash {e, ready})
-- KEYS[7]  the scope's burst members      (list)
-- KEYS[8]  the scope's burst batches      (hash)
-- KEYS[9]  the scope's outbox             (list of reports)
-- KEYS[10] this batch's acknowledgement    (string, PX)
-- KEYS[11] threads with waiting work      (set)
-- ARGV[1] the holder's token
-- ARGV[2] the batch it acknowledges (its lease's seq)
-- ARGV[3] lease TTL (ms)
-- ARGV[4] the scope's member in the orphan index
--
-- Atomic: the token and seq check, the acknowledgement, extending the lease,
-- and then handing over the next batch — an in-flight batch another holder
-- left (adopted: attempt + 1), or what is ready plus the outbox, moved in
-- flight as batch seq + 1 — or deleting the lease when nothing is left. As
-- two steps, an entry admitted in between would be stranded. A repeat of a
-- call that handed a batch over hands the same batch again; a lapsed holder's
-- call acknowledges its own batch if nobody adopted it.
-- Reply: {'lost'} | {'released'} | {'wait', ms}
--        {'run', seq, attempt, lapses, handed-out ms, items}

local lease, index, run, items = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local queue, pending, burst, meta, outbox = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local ack, threads = KEYS[10], KEYS[11]
local tok, seq, ttl, member = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
-- Batch numbers are compared as the text both sides write (decimal, no
-- leading zeros), read as a number only where one is added to.
local r = redis.call('HMGET', run, 'o', 's')
local own = r[1] == tok and r[2] == seq
local l = redis.call('HMGET', lease, 'tok', 's')

if l[1] ~= tok then
  if own then
    redis.call('DEL', run, items)
    remember_ack(ack, ttl)
    reindex(index, member, lease, has_work(queue, pending, burst, run, outbox))
    return {'released'}
  end
  if was_acked(ack) then
    return {'released'}
  end
  return {'lost'}
end
if l[2] ~= seq then
  if tonumber(l[2]) == tonumber(seq) + 1 and r[1] == tok and r[2] == l[2] then
    -- The same batch again, and the same extension the first answer gave.
    redis.call('PEXPIRE', lease, ARGV[3])
    index_held(index, member, ttl, clock())
    return handed(run, items)
  end
  return {'lost'}
end

remember_ack(ack, ttl)

-- The common case: its own batch done and nothing left to hand over: the
-- batch and the lease go together.
local waiting = redis.call('EXISTS', queue, pending, burst, outbox) > 0
if own and not waiting then
  redis.call('DEL', run, items, lease, threads, meta)
  reindex(index, member, lease, false)
  return {'released'}
end
if own then
  redis.call('DEL', run, items)
elseif not waiting and redis.call('EXISTS', run) == 0 then
  redis.call('DEL', lease, threads, meta)
  reindex(index, member, lease, false)
  return {'released'}
end
local now = clock()
local next_seq = int(tonumber(seq) + 1)
redis.call('PEXPIRE', lease, ARGV[3])

if not own and redis.call('EXISTS', run) == 1 then
  -- Left by a holder that is gone: it runs again, first.
  if redis.call('HGET', run, 'h') ~= '1' then
    redis.call('HINCRBY', run, 'l', 1)
  end
  redis.call('HINCRBY', run, 'a', 1)
  redis.call('HSET', run, 'o', tok, 's', next_seq, 'h', '0')
  redis.call('HSET', lease, 's', next_seq, 'c', '0')
  index_held(index, member, ttl, now)
  return handed(run, items)
end

local ready = next_ready(queue, pending, burst, meta, now)
local whole_queue = ready and ready[1] == 'queue'
-- The queue, when it is what is ready, goes in flight whole.
local left
if whole_queue then
  left = redis.call('EXISTS', pending, burst) > 0
else
  left = has_waiting(queue, pending, burst)
end
if not left then
  redis.call('DEL', threads)
end
local reports = redis.call('EXISTS', outbox) == 1
-- Reports go out with the next batch; alone only before a release.
if ready and ready[1] == 'wait' then
  index_held(index, member, ttl, now)
  return ready
end
if not ready and not reports then
  redis.call('DEL', lease)
  reindex(index, member, lease, false, now)
  return {'released'}
end

redis.call('DEL', run, items)
if whole_queue and not reports then
  -- The batch is the queue: renamed, its entries never read into the script.
  redis.call('RENAME', queue, items)
else
  if whole_queue then
    ready = {'run', redis.call('LRANGE', queue, 0, -1)}
    redis.call('DEL', queue)
  end
  if reports then
    redis.call('RENAME', outbox, items)
  end
  if ready and ready[1] == 'run' then
    push_all(items, ready[2])
  end
end
redis.call('HSET', run, 'o', tok, 's', next_seq, 'a', '1', 'l', '0', 'h', '0', 't', int(now))
redis.call('HSET', lease, 's', next_seq, 'c', '0')
index_held(index, member, ttl, now)
return handed(run, items)
