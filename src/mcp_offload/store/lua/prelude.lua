-- Shared by reap/publish/open/delete (loaded in front of each): key names, pins, removal, tombstones.
-- ARGV[1] is the key prefix P, ARGV[2] the store's clock in ms.
local P = ARGV[1]
local NOW = tonumber(ARGV[2])
local function k(kind, s, h) return P .. ':' .. kind .. ':' .. s .. ':' .. h end
local function pinned(s, h)
  local v = redis.call('GET', k('p', s, h))
  return v ~= false and tonumber(v) > 0
end
local function remove(s, h, reason, tomb_ms)
  local m = s .. ':' .. h
  local stot = P .. ':s:' .. s .. ':tot'
  local size = redis.call('HGET', P .. ':g:size', m)
  if pinned(s, h) then
    -- an explicit delete of an output being read: readers in flight keep its bytes until their lease ends
    redis.call('UNLINK', k('m', s, h))
  else
    redis.call('UNLINK', k('d', s, h), k('m', s, h))
  end
  local was = redis.call('ZREM', P .. ':g:lru', m)
  redis.call('ZREM', P .. ':g:exp', m)
  redis.call('HDEL', P .. ':g:size', m)
  redis.call('ZREM', P .. ':s:' .. s .. ':lru', h)
  if was == 1 and size then
    local n = tonumber(size)
    redis.call('HINCRBY', P .. ':g:tot', 'b', -n)
    redis.call('HINCRBY', P .. ':g:tot', 'n', -1)
    redis.call('HINCRBY', stot, 'b', -n)
    if redis.call('HINCRBY', stot, 'n', -1) <= 0 then
      redis.call('DEL', stot, P .. ':s:' .. s .. ':lru')
    end
  end
  if was == 1 and reason ~= '' then
    redis.call('SET', k('t', s, h), reason .. ' ' .. NOW, 'PX', tomb_ms)
  end
  return was
end
-- the tombstone's reason if it is younger than tomb_ms by the store's clock, else nil
local function tombstone(s, h, tomb_ms)
  local t = redis.call('GET', k('t', s, h))
  if not t then return nil end
  local reason, when = string.match(t, '^(%a+) (%d+)$')
  if reason and NOW - tonumber(when) < tomb_ms then return reason end
  return nil
end
