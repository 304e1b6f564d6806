-- append writes a batch of entries to one session's log and updates its
-- metadata and index entries, all in one atomic step: the guard is checked
-- and every seq is assigned here, so a batch that fails writes nothing.
--
-- KEYS[1] meta hash, KEYS[2] log list, KEYS[3] control record (a list of
-- seqs, see below), then the indexes: for a main session all, active,
-- project all, project active, pinned, project pinned (9 keys); for a
-- subagent record its parent's index (4 keys).
--
-- ARGV[1] prefix, [2] mode: 'a' append (the script assigns seqs), 'i'
-- import (entries carry seqs), 'p' pop (one entry: a pop whose data the
-- script fills in), [3] expected last seq or '' (Import planned against
-- it: RECALL_STALE when it moved), [4] guard (recall.Guard): '' checks
-- nothing, else 'e' (the session must exist), 'n' (must not) and
-- 's<seq>' (its last seq must be seq) in any combination; a failed guard
-- is RECALL_GUARD <exists 0|1> <last seq>, [5] TTL in ms (0: none), [6]
-- generation for a new session, [7] batch token, [8] index member, [9]
-- project, [10] entry count, then 12 values per entry: seq, body, time
-- µs, activity ('1' when recall.Kind.IsActivity says the entry moves
-- Updated, else ''), op, a1, a2, a3, usage in, out, total, and the
-- prompt the entry offers for FirstPrompt (recall.PromptOf) or ''.
--
-- Ops carry the effect of an entry on the metadata, decoded by the Go side
-- (record.go, effect) from its payload, so that this script applies
-- recall.Meta.Apply without parsing JSON: item, pop (a pop or a removal),
-- clear, count (a compaction: a1 = item count, a2 = the creation time of
-- a purged log or ''), title (a1 = title, a2 = source), meta (a1 =
-- archived, pinned and trashed as '-', '0' or '1'; a2 = '=' .. labels
-- JSON, or '' unchanged; a3 = the metadata change, see record.go
-- metadataChange), fork
-- (a1 = origin JSON), none.
--
-- Updated is the first entry's time, then moves only for conversation
-- activity. The field trash is recall.Meta.Trashed (µs), there while the
-- session is in the trash; the active indexes hold the sessions neither
-- archived nor in the trash. The field fp (FirstPrompt) is set once, by the first entry
-- that offers a prompt.
--
-- The control record holds the seqs of the view's control entries, oldest
-- first: the clear or compaction the view starts at (ops clear and count),
-- if any, then the pops and removals after it (op pop), so that ReadItems
-- (page.go) finds them without reading the log. A clear or a compaction
-- starts it again. The hash field ctl is the last seq the record covers:
-- a writer that does not keep the record (an older version of this
-- package) leaves ctl behind last, and then the record is left alone
-- until a clear or compaction starts it again, or a reader rebuilds it
-- from the log (lua/page.lua).
--
-- Returns the last seq; a pop returns {last seq, item seq, item index, data
-- and kind of the item's entry}, or {} when there was nothing to pop.
local W = 12 -- values per entry
local meta, log = KEYS[1], KEYS[2]
local mode, expect, guard = ARGV[2], ARGV[3], ARGV[4]
local ttl = tonumber(ARGV[5])
local token, member = ARGV[7], ARGV[8]
local ctl = KEYS[3]
local h = redis.call('HMGET', meta, 'last', 'tok', 'created', 'updated', 'items', 'tsrc', 'arch', 'ttl', 'first', 'fp', 'ctl', 'pin', 'trash')
local exists = h[1] and true or false
local last = tonumber(h[1] or '0')
-- the seq of the log's first element: 1, or where a purged log that was
-- imported starts
local first = tonumber(h[9] or '1')

-- A batch token seen before means this is a client retry of a batch that
-- was applied (its reply was lost): answer as the first time did.
if token ~= '' and h[2] then
  local done = string.match(' ' .. h[2], ' ' .. token .. ':(%d+)')
  if done then
    if mode == 'p' then return popped(log, tonumber(done), first) end
    return tonumber(done)
  end
end
if expect ~= '' and tonumber(expect) ~= last then return redis.error_reply('RECALL_STALE ' .. last) end
if guard ~= '' then
  local ok = true
  if string.find(guard, 'e', 1, true) and not exists then ok = false end
  if string.find(guard, 'n', 1, true) and exists then ok = false end
  local want = string.match(guard, 's(%-?%d+)')
  if want and tonumber(want) ~= last then ok = false end
  if not ok then return redis.error_reply('RECALL_GUARD ' .. (exists and '1' or '0') .. ' ' .. string.format('%d', last)) end
end

local n = tonumber(ARGV[10])
if n == 0 then return last end

-- Every check comes before the first write: Redis does not roll a script
-- back, so a batch refused halfway would be half written.
if mode == 'i' then
  local want = last + 1
  for i = 0, n - 1 do
    local seq = tonumber(ARGV[10 + i * W + 1])
    -- A new session may start past seq 1 (at the compaction entry a
    -- purged log starts with); the Go side checked it (storekit.ImportPlan).
    if i == 0 and last == 0 then want = seq end
    if seq ~= want then
      return redis.error_reply('RECALL_GAP seq ' .. ARGV[10 + i * W + 1] .. ' after ' .. string.format('%d', want - 1))
    end
    want = want + 1
  end
end
local pop
if mode == 'p' then
  if not exists then return {} end
  pop = {newest(log, last, first)}
  if not pop[1] then return {} end
  -- the pop entry's data is its recall.ItemRef, as json.Marshal writes it
  local data = '{"seq":' .. string.format('%d', pop[1])
  if pop[2] > 0 then data = data .. ',"index":' .. string.format('%d', pop[2]) end
  ARGV[12] = ARGV[12] .. data .. '}'
end
if not exists then
  -- The metadata defines the session: a log without it is a leftover (of
  -- an expiry, say), never something to continue.
  redis.call('DEL', log, ctl)
end

-- applymetadata applies an encoded metadata change to the hash fields
-- "m:<key>" (record.go, metadataChange).
local function applymetadata(c)
  if string.sub(c, 1, 1) == 'c' then
    for _, f in ipairs(redis.call('HKEYS', meta)) do
      if string.sub(f, 1, 2) == 'm:' then redis.call('HDEL', meta, f) end
    end
  end
  local pos = 2
  while pos <= #c do
    local kl, p = string.match(c, '^(%d+):()', pos)
    local k = 'm:' .. string.sub(c, p, p + tonumber(kl) - 1)
    pos = p + tonumber(kl)
    if string.sub(c, pos, pos) == '~' then
      redis.call('HDEL', meta, k)
      pos = pos + 1
    else
      local vl, q = string.match(c, '^=(%d+):()', pos)
      redis.call('HSET', meta, k, string.sub(c, q, q + tonumber(vl) - 1))
      pos = q + tonumber(vl)
    end
  end
end

local created, updated = h[3], h[4]
local items = tonumber(h[5] or '0')
local tsrc = h[6] or ''
local arch = h[7] or '0'
local trash = h[13] -- false when not in the trash
local title, pin, labels, fork
local fp = h[10] or ''
local newfp
local push = {}
-- the record covers the log so far (a new session's empty one does), and
-- the seqs to add to it; restart: a clear or compaction starts it again
local ctlok = not exists or h[11] == h[1]
local ctlpush, restart = {}, false
for i = 0, n - 1 do
  local o = 10 + i * W
  local seq = last + 1
  if i == 0 and last == 0 and mode == 'i' then
    seq = tonumber(ARGV[o + 1])
    first = seq
  end
  last = seq
  push[#push + 1] = string.format('%d', seq) .. '\n' .. ARGV[o + 2]
  local t = ARGV[o + 3]
  local op, a1, a2, a3 = ARGV[o + 5], ARGV[o + 6], ARGV[o + 7], ARGV[o + 8]
  if not created then
    created = t
    -- the creation time a purge kept in the compaction a log starts with
    if op == 'count' and a2 ~= '' then created = a2 end
  end
  if not updated or (ARGV[o + 4] == '1' and tonumber(t) > tonumber(updated)) then updated = t end
  if op == 'item' then
    items = items + 1
  elseif op == 'pop' then
    if items > 0 then items = items - 1 end
    ctlpush[#ctlpush + 1] = string.format('%d', seq)
  elseif op == 'clear' then
    items = 0
    ctlpush, restart, ctlok = {string.format('%d', seq)}, true, true
  elseif op == 'count' then
    items = tonumber(a1)
    ctlpush, restart, ctlok = {string.format('%d', seq)}, true, true
  elseif op == 'title' then
    -- an auto title never replaces a user title
    if not (tsrc == 'user' and a2 == 'auto') then
      title, tsrc = a1, a2
      if a1 == '' then tsrc = '' end
    end
  elseif op == 'meta' then
    local ar, pn, tr = string.sub(a1, 1, 1), string.sub(a1, 2, 2), string.sub(a1, 3, 3)
    if ar ~= '-' then arch = ar end
    if tr == '1' then trash = t elseif tr == '0' then trash = false end
    if pn ~= '-' then pin = pn end
    if a2 ~= '' then labels = string.sub(a2, 2) end
    if a3 ~= '' then applymetadata(a3) end
  elseif op == 'fork' then
    fork = a1
  end
  if fp == '' and ARGV[o + 12] ~= '' then
    fp = ARGV[o + 12]
    newfp = fp
  end
  if ARGV[o + 9] ~= '' then
    redis.call('HINCRBY', meta, 'uin', ARGV[o + 9])
    redis.call('HINCRBY', meta, 'uout', ARGV[o + 10])
    redis.call('HINCRBY', meta, 'utot', ARGV[o + 11])
  end
end
for i = 1, #push, 1000 do
  redis.call('RPUSH', log, unpack(push, i, math.min(i + 999, #push)))
end
if restart then redis.call('DEL', ctl) end
if ctlok then
  for i = 1, #ctlpush, 1000 do
    redis.call('RPUSH', ctl, unpack(ctlpush, i, math.min(i + 999, #ctlpush)))
  end
end

-- Remember the last 8 batch tokens, for retries.
local toks = {}
for tk in string.gmatch(h[2] or '', '%S+') do toks[#toks + 1] = tk end
if token ~= '' then toks[#toks + 1] = token .. ':' .. string.format('%d', last) end
while #toks > 8 do table.remove(toks, 1) end

local fields = {'last', string.format('%d', last), 'created', created, 'updated', updated,
  'items', string.format('%d', items), 'tsrc', tsrc, 'arch', arch, 'tok', table.concat(toks, ' '),
  'ttl', ttl > 0 and '1' or '0'}
if not exists then fields[#fields + 1] = 'gen'; fields[#fields + 1] = ARGV[6] end
if not exists and first ~= 1 then fields[#fields + 1] = 'first'; fields[#fields + 1] = string.format('%d', first) end
if title then fields[#fields + 1] = 'title'; fields[#fields + 1] = title end -- '' is no title
if pin then fields[#fields + 1] = 'pin'; fields[#fields + 1] = pin end
if labels then fields[#fields + 1] = 'labels'; fields[#fields + 1] = labels end
if fork then fields[#fields + 1] = 'fork'; fields[#fields + 1] = fork end
if newfp then fields[#fields + 1] = 'fp'; fields[#fields + 1] = newfp end
if ctlok then fields[#fields + 1] = 'ctl'; fields[#fields + 1] = string.format('%d', last) end
if trash then fields[#fields + 1] = 'trash'; fields[#fields + 1] = trash end
redis.call('HSET', meta, unpack(fields))
if h[13] and not trash then redis.call('HDEL', meta, 'trash') end

-- Move the session in its indexes: the score is minus the update time.
local score = scoreof(updated)
local subpt
if #KEYS == 4 then
  subpt = redis.call('PTTL', KEYS[4])
  redis.call('ZADD', KEYS[4], score, member)
else
  redis.call('ZADD', KEYS[4], score, member)
  redis.call('ZADD', KEYS[6], score, member)
  if arch == '1' or trash then
    if h[7] ~= '1' and not h[13] and exists then
      redis.call('ZREM', KEYS[5], member)
      redis.call('ZREM', KEYS[7], member)
    end
  else
    redis.call('ZADD', KEYS[5], score, member)
    redis.call('ZADD', KEYS[7], score, member)
  end
  -- The pinned indexes hold a session while its pin field is '1'.
  if (pin or h[12]) == '1' then
    redis.call('ZADD', KEYS[8], score, member)
    redis.call('ZADD', KEYS[9], score, member)
  elseif h[12] == '1' then
    redis.call('ZREM', KEYS[8], member)
    redis.call('ZREM', KEYS[9], member)
  end
  if not exists then redis.call('ZADD', PROJECTS, 0, ARGV[9]) end
end

-- The TTL is refreshed on every append; the expiry index lets later
-- scripts unindex the session once it is gone.
if ttl > 0 then
  redis.call('PEXPIRE', meta, ttl)
  redis.call('PEXPIRE', log, ttl)
  redis.call('PEXPIRE', ctl, ttl)
  redis.call('ZADD', EXPIRY, nowms() + ttl, member)
  -- A parent's index of subagent records lives as long as its longest-lived
  -- record; one without a TTL (-1) keeps it forever.
  if subpt and (subpt == -2 or (subpt >= 0 and subpt < ttl)) then redis.call('PEXPIRE', KEYS[4], ttl) end
  prune(2)
else
  if h[8] == '1' then
    redis.call('PERSIST', meta)
    redis.call('PERSIST', log)
    redis.call('PERSIST', ctl)
    redis.call('ZREM', EXPIRY, member)
  end
  if subpt and subpt >= 0 then redis.call('PERSIST', KEYS[4]) end
end
if pop then return {last, pop[1], pop[2], pop[3], pop[4]} end
return last
