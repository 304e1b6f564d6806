-- list reads one index after a bound and returns the metadata of up to
-- want sessions, in index (List) order, from one consistent snapshot.
-- Members whose session is gone (expired, removed behind the index) are
-- unindexed as they are met, so the index heals as it is read.
--
-- KEYS[1] the index. ARGV[1] prefix, [2] bound score ('' = from the start),
-- [3] bound member ('' = every member of that score), [4] want, [5] '1'
-- to skip archived sessions, [6] budget: the most members to look at in
-- this call, so that a long run of stale or skipped members cannot block
-- Redis, [7] '1' to skip sessions that are not pinned, '2' to do so in
-- an index of pinned sessions (P idx:pin[:<project>]), which unindexes
-- them from both pinned indexes as they are met: a session an older
-- version of this package unpinned stays behind in them until then. [8]
-- '1' to return only the sessions in the trash, '2' those and the others,
-- else only those not in it.
--
-- Returns {next score, next member, member, hash, member, hash, ...}: the
-- next bound to go on from when the budget ran out first, else '', ''.
prune(16)
local idx, want, skiparch, budget = KEYS[1], tonumber(ARGV[4]), ARGV[5] == '1', tonumber(ARGV[6])
local pinmode = ARGV[7] or ''
local trashmode = ARGV[8] or '0'
local r = rank(idx, ARGV[2], ARGV[3])
local out = {'', ''}
local found = 0
local lastm, lasts
while found < want and budget > 0 do
  local ms = redis.call('ZRANGE', idx, r, r + math.min(budget, want - found + 8, 500) - 1, 'WITHSCORES')
  if #ms == 0 then return out end
  for i = 1, #ms, 2 do
    local m = ms[i]
    budget = budget - 1
    lastm, lasts = m, ms[i + 1]
    local p, s, sub = parse(m)
    local mk = p and metakey(p, s, sub)
    local f = mk and redis.call('HMGET', mk, 'arch', 'pin', 'trash') or {}
    local arch, unpinned = f[1], f[2] ~= '1'
    if not arch then
      unindex(m) -- the members after it move up one rank
    elseif pinmode == '2' and unpinned then
      -- not pinned (any more): out of the pinned indexes, the members
      -- after it move up one rank
      redis.call('ZREM', pinidx(nil), m)
      redis.call('ZREM', pinidx(p), m)
    else
      r = r + 1
      if not (skiparch and arch == '1') and not (pinmode == '1' and unpinned) and (trashmode == '2' or (f[3] and '1' or '0') == trashmode) then
        out[#out + 1] = m
        out[#out + 1] = redis.call('HGETALL', mk)
        found = found + 1
        if found >= want then return out end
      end
    end
    if budget == 0 then break end
  end
end
if found < want and lastm then out[1], out[2] = lasts, lastm end
return out
