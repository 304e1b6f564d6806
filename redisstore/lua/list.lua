-- list reads one index from a ZRANGEBYLEX bound and returns the metadata of
-- up to want sessions, in index (List) order, from one consistent snapshot.
-- Members whose session is gone (expired, removed behind the index) are
-- unindexed as they are met, so the index heals as it is read.
--
-- KEYS[1] the index. ARGV[1] prefix, [2] start bound, [3] want, [4] '1' to
-- skip archived sessions, [5] budget: the most members to look at in this
-- call, so that a long run of stale or skipped members cannot block Redis.
--
-- Returns {next, member, hash, member, hash, ...}: next is the bound to go
-- on from when the budget ran out before want sessions were found and the
-- index was not exhausted, else ''.
prune(16)
local idx, start, want, skiparch, budget = KEYS[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1', tonumber(ARGV[5])
local out = {''}
local found = 0
while found < want and budget > 0 do
  local ms = redis.call('ZRANGEBYLEX', idx, start, '+', 'LIMIT', 0, math.min(budget, want - found + 8, 500))
  if #ms == 0 then return out end
  for _, m in ipairs(ms) do
    budget = budget - 1
    start = '(' .. m
    local _, p, s, sub = parse(m)
    local mk = p and metakey(p, s, sub)
    local h = mk and redis.call('HMGET', mk, 'm', 'arch')
    if not h or h[1] ~= m then
      unindex(m)
    elseif not (skiparch and h[2] == '1') then
      out[#out + 1] = m
      out[#out + 1] = redis.call('HGETALL', mk)
      found = found + 1
      if found >= want then return out end
    end
  end
end
if found < want then out[1] = start end
return out
