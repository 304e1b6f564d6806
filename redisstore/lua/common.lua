-- Helpers shared by every script; the Go side prepends this file. ARGV[1] is
-- always the store's key prefix. The key names here mirror keys.go.
local P = ARGV[1]
local EXPIRY = P .. 'expiry'
local PROJECTS = P .. 'projects'

-- parse splits an index member "<project> <session>[ <subpath>]".
local function parse(m)
  local p, s, sub = string.match(m, '^([^ ]+) ([^ ]+) ?([^ ]*)$')
  if sub == '' then sub = nil end
  return p, s, sub
end

local function name(p, s, sub)
  if sub then return p .. '/' .. s .. ':' .. sub end
  return p .. '/' .. s
end

local function metakey(p, s, sub) return P .. 'meta:' .. name(p, s, sub) end
local function logkey(p, s, sub) return P .. 'log:' .. name(p, s, sub) end
local function subidx(p, s) return P .. 'idx:sub:' .. p .. '/' .. s end
local function allidx(p) if p then return P .. 'idx:all:' .. p end return P .. 'idx:all' end
local function activeidx(p) if p then return P .. 'idx:active:' .. p end return P .. 'idx:active' end

local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- less compares strings by their bytes. (Lua's < follows the server's
-- collation locale, which need not be byte order; Redis orders members by
-- bytes.)
local function less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- unindex removes member m from every index that can hold it, and its
-- project from the project set once the project's index is empty.
local function unindex(m)
  local p, s, sub = parse(m)
  if p then
    if sub then
      redis.call('ZREM', subidx(p, s), m)
    else
      redis.call('ZREM', allidx(nil), m)
      redis.call('ZREM', activeidx(nil), m)
      redis.call('ZREM', allidx(p), m)
      redis.call('ZREM', activeidx(p), m)
      if redis.call('EXISTS', allidx(p)) == 0 then redis.call('ZREM', PROJECTS, p) end
    end
  end
  redis.call('ZREM', EXPIRY, m)
end

-- exists reports whether the session of member m exists.
local function exists(m)
  local p, s, sub = parse(m)
  return p ~= nil and redis.call('EXISTS', metakey(p, s, sub)) == 1
end

-- prune unindexes up to n sessions whose TTL has run out and returns how
-- many due members it looked at. A session that still exists (its TTL was
-- moved since) gets its true expiry back.
local function prune(n)
  local now = nowms()
  local due = redis.call('ZRANGEBYSCORE', EXPIRY, '-inf', now, 'LIMIT', 0, n)
  for _, m in ipairs(due) do
    if exists(m) then
      local pt = redis.call('PTTL', metakey(parse(m)))
      if pt < 0 then redis.call('ZREM', EXPIRY, m) else redis.call('ZADD', EXPIRY, now + pt, m) end
    else
      unindex(m)
    end
  end
  return #due
end

-- rank returns the rank in idx of the first member after the bound (score,
-- member): a greater score, or the same score and a member sorting after.
-- score '' is before everything; member '' is before every member.
local function rank(idx, score, member)
  if score == '' then return 0 end
  local r = redis.call('ZCOUNT', idx, '-inf', '(' .. score)
  if member == '' then return r end
  -- the ties at score are few (sessions updated in the same µs): step
  -- over those that sort at or before member
  local off = 0
  while true do
    local ties = redis.call('ZRANGEBYSCORE', idx, score, score, 'LIMIT', off, 64)
    for _, t in ipairs(ties) do
      if less(member, t) then return r end
      r = r + 1
    end
    if #ties < 64 then return r end
    off = off + 64
  end
end

-- A log element is "<seq>\n<header JSON>\n<data>" (see record.go); the
-- header starts with the kind and holds "n", the item count, for a
-- compaction. split returns an element's header and data.
local function split(el)
  local a = string.find(el, '\n', 1, true)
  local b = a and string.find(el, '\n', a + 1, true)
  if not b then return '', '' end
  return string.sub(el, a + 1, b - 1), string.sub(el, b + 1)
end

local function refkey(seq, index) return string.format('%d:%d', seq, index) end

-- newest finds the newest live item of a log whose last seq is last, the
-- way recall.Tail(1) does: reading back from the end, a pop hides the item
-- it names, and a clear or a compaction ends the scan. It returns the
-- item's seq, its index (in a compaction, else 0), its entry's data and
-- kind, or nothing when the view is empty. Element i of the log holds
-- seq first+i.
local function newest(log, last, first)
  local hidden = {}
  local hi, chunk = last - first, 16
  while hi >= 0 do
    local lo = math.max(hi - chunk + 1, 0)
    local els = redis.call('LRANGE', log, lo, hi)
    for i = #els, 1, -1 do
      local seq = first + lo + i - 1
      local header, data = split(els[i])
      local kind = string.match(header, '^{"k":"(%l+)"')
      if kind == 'item' then
        local r = refkey(seq, 0)
        if hidden[r] then hidden[r] = nil else return seq, 0, data, kind end
      elseif kind == 'pop' then
        local ok, ref = pcall(cjson.decode, data)
        if ok and type(ref) == 'table' and type(ref.seq) == 'number' then
          hidden[refkey(ref.seq, tonumber(ref.index) or 0)] = true
        end
      elseif kind == 'clear' then
        return
      elseif kind == 'compaction' then
        local n = tonumber(string.match(header, '"n":(%d+)'))
        if n then
          for j = n - 1, 0, -1 do
            local r = refkey(seq, j)
            if hidden[r] then hidden[r] = nil else return seq, j, data, kind end
          end
          return
        end
      end
    end
    hi = lo - 1
    chunk = math.min(chunk * 2, 1024)
  end
end

-- popped rebuilds the reply of the pop that wrote seq, for a retried call.
local function popped(log, seq, first)
  local _, data = split(redis.call('LINDEX', log, seq - first) or '')
  local ok, ref = pcall(cjson.decode, data)
  if not ok or type(ref) ~= 'table' or type(ref.seq) ~= 'number' then return {} end
  local index = tonumber(ref.index) or 0
  local iheader, idata = split(redis.call('LINDEX', log, ref.seq - first) or '')
  return {seq, ref.seq, index, idata, string.match(iheader, '^{"k":"(%l+)"') or ''}
end
