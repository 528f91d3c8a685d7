-- KEYS: the ledger (4), then each candidate's group (6 each). ARGV: now_ms, tomb_ms, candidate members...
--  -> {removed, absent}: the members removed here (re-checked: expired by the ledger, not pinned), and those not in
--     the ledger at all (on a cluster: store-wide entries of outputs already gone, or reservations never published)
-- (run with prelude.lua in front)
local L = ledger(1)
local tomb = tonumber(ARGV[2])
local removed, absent = {}, {}
for i = 3, #ARGV do
  local m = ARGV[i]
  local o = group(5 + 6 * (i - 3))
  local exp = redis.call('ZSCORE', L.exp, m)
  if not exp then
    absent[#absent + 1] = m
  elseif tonumber(exp) <= NOW and not pinned(o) then
    if remove(o, L, m, string.sub(m, 34), 'expired', tomb) == 1 then removed[#removed + 1] = m end
  end
end
return {removed, absent}
