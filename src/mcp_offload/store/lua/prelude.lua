-- Shared by reap/publish/open/delete (loaded in front of each): removal, pins, tombstones.
-- Every key a script touches comes in KEYS (a Redis Cluster routes by them and refuses any other), in groups:
--   an output's group: d (content), m (meta hash), p (pin), t (tombstone), s:lru, s:tot (its session's zset/hash)
--   the ledger: L.lru (member -> last use), L.exp (member -> expiry), L.size (member -> bytes), L.tot (b, n)
-- On one Redis node the ledger is the store-wide one (P:g:*); on a cluster it is the session's own (same hash
-- tag as its outputs), and the store-wide view is kept beside it by store/redis/ledger.py.
-- ARGV[1] is the store's clock in ms.
local NOW = tonumber(ARGV[1])
local function group(at)  -- the 6 keys of one output starting at KEYS[at]
  return {d = KEYS[at], m = KEYS[at + 1], p = KEYS[at + 2], t = KEYS[at + 3], lru = KEYS[at + 4],
    tot = KEYS[at + 5]}
end
local function ledger(at)  -- the 4 ledger keys starting at KEYS[at]
  return {lru = KEYS[at], exp = KEYS[at + 1], size = KEYS[at + 2], tot = KEYS[at + 3]}
end
local function pinned(o)
  local v = redis.call('GET', o.p)
  return v ~= false and tonumber(v) > 0
end
-- remove output o (member m = "s:h", handle h) from the keys and the books; 1 if it was published
local function remove(o, L, m, h, reason, tomb_ms)
  local size = redis.call('HGET', L.size, m)
  if pinned(o) then
    -- an explicit delete of an output being read: readers in flight keep its bytes until their lease ends
    redis.call('UNLINK', o.m)
  else
    redis.call('UNLINK', o.d, o.m)
  end
  local was = redis.call('ZREM', L.lru, m)
  redis.call('ZREM', L.exp, m)
  redis.call('HDEL', L.size, m)
  redis.call('ZREM', o.lru, h)
  if was == 1 and size then
    local n = tonumber(size)
    redis.call('HINCRBY', L.tot, 'b', -n)
    redis.call('HINCRBY', L.tot, 'n', -1)
    redis.call('HINCRBY', o.tot, 'b', -n)
    if redis.call('HINCRBY', o.tot, 'n', -1) <= 0 then
      redis.call('DEL', o.tot, o.lru)
    end
  end
  if was == 1 and reason ~= '' then
    redis.call('SET', o.t, reason .. ' ' .. NOW, 'PX', tomb_ms)
  end
  return was
end
-- the tombstone's reason if it is younger than tomb_ms by the store's clock, else nil
local function tombstone(o, tomb_ms)
  local t = redis.call('GET', o.t)
  if not t then return nil end
  local reason, when = string.match(t, '^(%a+) (%d+)$')
  if reason and NOW - tonumber(when) < tomb_ms then return reason end
  return nil
end
