-- KEYS: the output's group (6), the ledger (4).
-- ARGV: now_ms, s, h, tomb_ms, lease_ms, mode ('open' | 'meta'), eager_bytes
--  -> {'ok', meta, index, content-or-nil} | {'gone', reason} | {'unknown'}
-- (run with prelude.lua in front)
local o, L = group(1), ledger(7)
local s, h = ARGV[2], ARGV[3]
local now, tomb, lease, mode, eager = NOW, tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6], tonumber(ARGV[7])
local m = s .. ':' .. h
local exp = redis.call('ZSCORE', L.exp, m)
if exp and tonumber(exp) <= now then
  if not pinned(o) then remove(o, L, m, h, 'expired', tomb) end
  return {'gone', 'expired'}
end
local vals = redis.call('HMGET', o.m, 'meta', 'index', 'size')
if not vals[1] or redis.call('EXISTS', o.d) == 0 or redis.call('STRLEN', o.d) ~= tonumber(vals[3]) then
  if exp then
    remove(o, L, m, h, 'evicted', tomb)
    return {'gone', 'evicted'}
  end
  local t = tombstone(o, tomb)
  if t then return {'gone', t} end
  return {'unknown'}
end
if mode == 'meta' then return {'ok', vals[1]} end
redis.call('INCR', o.p)
redis.call('PEXPIRE', o.p, lease)
if redis.call('PTTL', o.d) < lease then
  redis.call('PEXPIRE', o.d, lease)
  redis.call('PEXPIRE', o.m, lease)
end
redis.call('ZADD', o.lru, 'XX', now, h)
redis.call('ZADD', L.lru, 'XX', now, m)
local content = false
if tonumber(vals[3]) <= eager then content = redis.call('GET', o.d) end
return {'ok', vals[1], vals[2], content}
