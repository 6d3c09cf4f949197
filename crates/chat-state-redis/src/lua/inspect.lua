-- inspect.lua: one scope as an operator sees it, read atomically.
--
-- KEYS[1] the scope's lease              (hash, PX lease TTL)
-- KEYS[2] its in-flight batch's entries  (list)
-- KEYS[3] its queue                      (list)
-- KEYS[4] its pending event              (hash)
-- KEYS[5] its burst members              (list)
-- KEYS[6] its slots                      (sorted set token -> expiry ms)
-- KEYS[7] its slot runs                  (hash token -> run record)
-- KEYS[8] its in-flight batch             (hash)
--
-- Entries are returned by their header, "<admitted ms>|<expires ms>|<ref>",
-- without their JSON; an in-flight entry admitted as the first of its batch
-- gets its batch's hand-out time as its admission time.
-- Reply: {now, {token, fence, pttl} | {}, in-flight headers, queued headers,
--         pending headers, burst headers, {token, expiry ms, fence, ...},
--         slot run headers}

local now = clock()

local function headers(list, handed_out)
  local out = {}
  for _, e in ipairs(list) do
    if string.sub(e, 1, 1) ~= 'R' then
      local h = string.match(e, '^[^\n]*')
      if handed_out and string.sub(h, 1, #AT_HAND_OUT) == AT_HAND_OUT then
        h = handed_out .. '||' .. string.sub(h, #AT_HAND_OUT + 1)
      end
      out[#out + 1] = h
    end
  end
  return out
end

local lease = {}
local l = redis.call('HMGET', KEYS[1], 'tok', 'f')
if l[1] then
  lease = {l[1], l[2], redis.call('PTTL', KEYS[1])}
end
local pending = {}
local p = redis.call('HGET', KEYS[4], 'e')
if p then
  pending = {string.match(p, '^[^\n]*')}
end
local slots = {}
local live = redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. int(now), '+inf', 'WITHSCORES')
for i = 1, #live, 2 do
  slots[#slots + 1] = live[i]
  slots[#slots + 1] = live[i + 1]
  slots[#slots + 1] = slot_fence(KEYS[7], live[i])
end
local runs = {}
for _, v in ipairs(redis.call('HVALS', KEYS[7])) do
  local _, _, _, _, _, entry = split_slot_run(v)
  runs[#runs + 1] = string.match(entry, '^[^\n]*')
end
return {
  now, lease,
  headers(redis.call('LRANGE', KEYS[2], 0, -1), redis.call('HGET', KEYS[8], 't') or int(now)),
  headers(redis.call('LRANGE', KEYS[3], 0, -1)),
  pending,
  headers(redis.call('LRANGE', KEYS[5], 0, -1)),
  slots, runs,
}
