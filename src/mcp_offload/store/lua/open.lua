-- ARGV: P, now_ms, s, h, tomb_ms, lease_ms, mode ('open' | 'meta'), eager_bytes
--  -> {'ok', meta, index, content-or-nil} | {'gone', reason} | {'unknown'}
-- (run with prelude.lua in front: P, NOW, k(), pinned(), remove(), tombstone())
local s, h = ARGV[3], ARGV[4]
local now, tomb, lease, mode, eager = NOW, tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7],
  tonumber(ARGV[8])
local m = s .. ':' .. h
local dk, mk = k('d', s, h), k('m', s, h)
local exp = redis.call('ZSCORE', P .. ':g:exp', m)
if exp and tonumber(exp) <= now then
  if not pinned(s, h) then remove(s, h, 'expired', tomb) end
  return {'gone', 'expired'}
end
local vals = redis.call('HMGET', mk, 'meta', 'index', 'size')
if not vals[1] or redis.call('EXISTS', dk) == 0 or redis.call('STRLEN', dk) ~= tonumber(vals[3]) then
  if exp then
    remove(s, h, 'evicted', tomb)
    return {'gone', 'evicted'}
  end
  local t = tombstone(s, h, tomb)
  if t then return {'gone', t} end
  return {'unknown'}
end
if mode == 'meta' then return {'ok', vals[1]} end
local pin = k('p', s, h)
redis.call('INCR', pin)
redis.call('PEXPIRE', pin, lease)
if redis.call('PTTL', dk) < lease then
  redis.call('PEXPIRE', dk, lease)
  redis.call('PEXPIRE', mk, lease)
end
redis.call('ZADD', P .. ':s:' .. s .. ':lru', 'XX', now, h)
redis.call('ZADD', P .. ':g:lru', 'XX', now, m)
local content = false
if tonumber(vals[3]) <= eager then content = redis.call('GET', dk) end
return {'ok', vals[1], vals[2], content}
