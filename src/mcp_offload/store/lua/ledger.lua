-- The store-wide ledger of a Redis Cluster (store/redis/ledger.py), all in one hash slot:
-- KEYS: G.lru (member -> last use), G.exp (member -> expiry, or a reservation's hold), G.size (member -> bytes),
-- G.tot (b, n). ARGV: op, now_ms, then per op:
--   'reserve' m size max_b max_n hold_ms  -> 'ok' | 'over' | 'exists'   (books the output before it is published)
--   'publish' m exp_ms                    -> 'ok' | 'lost'              (the output is out: LRU and expiry)
--   'forget'  m...                        -> number unbooked            (idempotent: a member is unbooked once)
local lru, exp, sizes, tot = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, now = ARGV[1], tonumber(ARGV[2])
if op == 'reserve' then
  local m, size, max_b, max_n, hold = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]),
    tonumber(ARGV[7])
  if redis.call('ZSCORE', exp, m) then return 'exists' end
  local t = redis.call('HMGET', tot, 'b', 'n')
  if tonumber(t[1] or 0) + size > max_b or tonumber(t[2] or 0) + 1 > max_n then return 'over' end
  redis.call('ZADD', exp, now + hold, m)
  redis.call('HSET', sizes, m, size)
  redis.call('HINCRBY', tot, 'b', size)
  redis.call('HINCRBY', tot, 'n', 1)
  return 'ok'
end
if op == 'publish' then
  if not redis.call('ZSCORE', exp, ARGV[3]) then return 'lost' end  -- its reservation was reaped meanwhile
  redis.call('ZADD', exp, tonumber(ARGV[4]), ARGV[3])
  redis.call('ZADD', lru, now, ARGV[3])
  return 'ok'
end
local n = 0
for i = 3, #ARGV do
  local m = ARGV[i]
  redis.call('ZREM', lru, m)
  if redis.call('ZREM', exp, m) == 1 then
    local size = tonumber(redis.call('HGET', sizes, m) or 0)
    redis.call('HDEL', sizes, m)
    redis.call('HINCRBY', tot, 'b', -size)
    redis.call('HINCRBY', tot, 'n', -1)
    n = n + 1
  end
end
return n
