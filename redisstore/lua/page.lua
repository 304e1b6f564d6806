-- page reads, in one snapshot, what ReadItems (page.go) builds a page of
-- a session's view from: the session's generation, last and first seq,
-- the view's control entries, and a first chunk of the log where the page
-- starts (most pages need no other read).
--
-- KEYS[1] meta hash, KEYS[2] log list, KEYS[3] control record (see
-- append.lua). ARGV[1] prefix, [2] 'b' (newest first) or 'f' (oldest
-- first), [3] the seq of the page's cursor, 0 for none, [4] the page's
-- limit (<= 0: none).
--
-- When the record does not cover the log (the hash field ctl is not the
-- last seq: the session was written by an older version of this package),
-- the controls are read from the log instead, from its end back to the
-- start of the view, and the record is written again from them, so that
-- the next page finds it. That read is the one whose cost follows the
-- session's length, once per such session.
--
-- Returns {} for a missing session; {gen, last, first} when last or first
-- is no number (page.go reports it); else {gen, last, first, count of
-- controls, then the seq and element of each control, newest first, then
-- the seq of the chunk's first element and the chunk's elements in log
-- order}.
local meta, log, ctl = KEYS[1], KEYS[2], KEYS[3]
local dir, cursor, limit = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local h = redis.call('HMGET', meta, 'gen', 'last', 'first', 'ctl')
if not h[1] or not h[2] then return {} end
local out = {h[1], h[2], h[3] or '1'}
local last, first = tonumber(h[2]), tonumber(h[3] or '1')
if not last or not first then return out end

-- rebuild reads the view's control entries from the log, newest first,
-- and returns their seqs, oldest first: every pop and removal (page.go
-- keeps those whose ref decodes) back to the first clear or compaction
-- with an item count, where the view starts. A compaction without one
-- is kept and passed over: page.go decides whether it is usable.
local function rebuild()
  local found = {}
  scanback(log, last, first, function(seq, el)
    local kind, hd = entry(el, seq)
    if kind == 'pop' or kind == 'remove' or kind == 'clear' or kind == 'compaction' then
      found[#found + 1] = string.format('%d', seq)
      return kind == 'clear' or (kind == 'compaction' and hd.n ~= nil)
    end
  end)
  local seqs = {}
  for i = #found, 1, -1 do seqs[#seqs + 1] = found[i] end
  redis.call('DEL', ctl)
  for i = 1, #seqs, 1000 do
    redis.call('RPUSH', ctl, unpack(seqs, i, math.min(i + 999, #seqs)))
  end
  redis.call('HSET', meta, 'ctl', h[2])
  local pt = redis.call('PTTL', meta)
  if pt > 0 then redis.call('PEXPIRE', ctl, pt) end
  return seqs
end

local seqs
if h[4] == h[2] then seqs = redis.call('LRANGE', ctl, 0, -1) else seqs = rebuild() end

-- The controls, newest first. base is the seq of the clear or compaction
-- the view starts at (0: none), the place where an oldest-first page
-- starts.
out[4] = 0
local base = 0
for i = #seqs, 1, -1 do
  local seq = tonumber(seqs[i])
  if seq and seq >= first and seq <= last then
    local el = redis.call('LINDEX', log, seq - first) or ''
    out[#out + 1] = seq
    out[#out + 1] = el
    out[4] = out[4] + 1
    if i == 1 then
      local kind, hd = entry(el, seq)
      if kind == 'clear' or (kind == 'compaction' and hd.n) then base = seq end
    end
  end
end

-- The first chunk: the page's items, and as many entries again as there
-- are controls (a pop or removal is an entry and hides one item), and a
-- few for titles and the like.
local n = 256
if limit > 0 then n = math.min(limit + 1 + 2 * out[4] + 8, 4096) end
local lo, hi
if dir == 'b' then
  hi = last
  if cursor > 0 and cursor < hi then hi = cursor end
  lo = math.max(hi - n + 1, base + 1, first)
else
  lo = math.max(cursor, base + 1, first)
  hi = math.min(lo + n - 1, last)
end
if lo > hi then
  out[#out + 1] = 0
  return out
end
out[#out + 1] = lo
for _, el in ipairs(redis.call('LRANGE', log, lo - first, hi - first)) do out[#out + 1] = el end
return out
