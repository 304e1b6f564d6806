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
local function ctlkey(p, s, sub) return P .. 'ctl:' .. name(p, s, sub) end
local function subidx(p, s) return P .. 'idx:sub:' .. p .. '/' .. s end
local function allidx(p) if p then return P .. 'idx:all:' .. p end return P .. 'idx:all' end
local function activeidx(p) if p then return P .. 'idx:active:' .. p end return P .. 'idx:active' end
local function pinidx(p) if p then return P .. 'idx:pin:' .. p end return P .. 'idx:pin' end

-- scoreof is the index score of an update time in µs, given as its
-- decimal string: minus the time, so that ascending order is newest first.
local function scoreof(updated)
  if string.sub(updated, 1, 1) == '-' then return string.sub(updated, 2) end
  return '-' .. updated
end

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
      redis.call('ZREM', pinidx(nil), m)
      redis.call('ZREM', pinidx(p), m)
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
-- header holds the kind "k", the time "t" and, for a compaction, "n", its
-- item count. entry decodes an element that must hold seq the way
-- record.go's decodeElement does, and returns its kind, header and data,
-- or nothing when it is not a readable entry (damaged, or written by
-- another program): readers skip such elements.
local function entry(el, seq)
  local a = string.find(el, '\n', 1, true)
  local b = a and string.find(el, '\n', a + 1, true)
  if not b then return end
  local s = string.sub(el, 1, a - 1)
  if not string.match(s, '^[+-]?%d+$') or tonumber(s) ~= seq then return end
  local ok, hd = pcall(cjson.decode, string.sub(el, a + 1, b - 1))
  if not ok or type(hd) ~= 'table' or type(hd.k) ~= 'string' or hd.k == '' then return end
  if type(hd.t) ~= 'number' or hd.t ~= math.floor(hd.t) then return end
  if hd.n == cjson.null then hd.n = nil end
  if hd.n ~= nil and (type(hd.n) ~= 'number' or hd.n ~= math.floor(hd.n)) then return end
  if hd.u ~= nil and hd.u ~= cjson.null and type(hd.u) ~= 'table' then return end
  return hd.k, hd, string.sub(el, b + 1)
end

-- JSON syntax as Go's encoding/json.Valid checks it (and so
-- internal/jsonvalid, which Append validates items with, and the Go
-- readers of this store; TestLuaJSONAgrees holds them to it): RFC 8259,
-- white space being space, tab, CR and LF; a string holds any bytes but
-- those below 0x20 (invalid UTF-8 included), with the escapes \" \\ \/ \b
-- \f \n \r \t and \u and four hex digits (a lone surrogate included);
-- names may repeat; nesting goes 10,000 levels deep. Runs of string bytes
-- are skipped with string.find, in C.

-- skipws returns the index of the first byte of s at or after i that is
-- not white space, #s + 1 when there is none.
local function skipws(s, i)
  return string.find(s, '[^ \t\r\n]', i) or #s + 1
end

-- jsonstring returns the index just past the JSON string that starts at
-- byte i of s (a quote), or nothing when it is not one.
local function jsonstring(s, i)
  i = i + 1
  while true do
    local j = string.find(s, '["\\%z\1-\31]', i)
    if not j then return end
    local c = string.byte(s, j)
    if c == 34 then return j + 1 end
    if c ~= 92 then return end -- a control character
    c = string.byte(s, j + 1)
    if c == 117 then -- \uXXXX
      if not string.find(s, '^%x%x%x%x', j + 2) then return end
      i = j + 6
    elseif c == 34 or c == 92 or c == 47 or c == 98 or c == 102 or c == 110 or c == 114 or c == 116 then
      i = j + 2
    else
      return
    end
  end
end

-- jsonnumber returns the index just past the JSON number that starts at
-- byte i of s, -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, or nothing.
local function jsonnumber(s, i)
  if string.byte(s, i) == 45 then i = i + 1 end
  local c = string.byte(s, i)
  if c == 48 then
    i = i + 1
  elseif c and c >= 49 and c <= 57 then
    local _, e = string.find(s, '^%d*', i + 1)
    i = e + 1
  else
    return
  end
  if string.byte(s, i) == 46 then
    local _, e = string.find(s, '^%d+', i + 1)
    if not e then return end
    i = e + 1
  end
  c = string.byte(s, i)
  if c == 101 or c == 69 then
    local _, e = string.find(s, '^[+-]?%d+', i + 1)
    if not e then return end
    i = e + 1
  end
  return i
end

local literals = {[116] = 'true', [102] = 'false', [110] = 'null'}

-- isjson reports whether s is one JSON value, with white space around it.
-- It keeps the closing byte of each open array or object on a stack rather
-- than recursing, so 10,000 levels cost no Lua call depth.
local function isjson(s)
  local i, depth, closer, want = 1, 0, {}, 'value' -- want: 'value', 'name' or 'next'
  while true do
    i = skipws(s, i)
    local c = string.byte(s, i)
    if want == 'value' then
      if c == 123 or c == 91 then -- { or [
        depth = depth + 1
        if depth > 10000 then return false end
        closer[depth] = c + 2 -- } or ]
        i = skipws(s, i + 1)
        if string.byte(s, i) == closer[depth] then
          depth, i, want = depth - 1, i + 1, 'next'
        elseif c == 123 then
          want = 'name'
        end
      elseif c == 34 then
        i = jsonstring(s, i)
        if not i then return false end
        want = 'next'
      elseif c == 45 or (c and c >= 48 and c <= 57) then
        i = jsonnumber(s, i)
        if not i then return false end
        want = 'next'
      else
        local w = c and literals[c]
        if not w or string.sub(s, i, i + #w - 1) ~= w then return false end
        i, want = i + #w, 'next'
      end
    elseif want == 'name' then
      if c ~= 34 then return false end
      i = jsonstring(s, i)
      if not i then return false end
      i = skipws(s, i)
      if string.byte(s, i) ~= 58 then return false end
      i, want = i + 1, 'value'
    else -- after a value
      if depth == 0 then return c == nil end
      if c == 44 then
        i = i + 1
        if closer[depth] == 125 then want = 'name' else want = 'value' end
      elseif c == closer[depth] then
        depth, i = depth - 1, i + 1
      else
        return false
      end
    end
  end
end

-- isitem is the check the store's Go readers make of an item (record.go,
-- decodeElement): recall.ItemOf's, that it starts with '{' and ends with
-- '}' once white space is trimmed, and that it is JSON, since ItemOf alone
-- takes "{x}" for an object. Together: one JSON object, with white space
-- around it. An item that fails it is damaged: it is not part of the view.
local function isitem(s)
  return string.byte(s, skipws(s, 1)) == 123 and isjson(s)
end

-- ref decodes a pop or removal's payload, a recall.ItemRef, into its seq
-- and index, or nothing when it does not decode.
local function ref(data)
  local ok, r = pcall(cjson.decode, data)
  if not ok or type(r) ~= 'table' or type(r.seq) ~= 'number' or r.seq ~= math.floor(r.seq) then return end
  if r.index == nil or r.index == cjson.null then return r.seq, 0 end
  if type(r.index) ~= 'number' or r.index ~= math.floor(r.index) then return end
  return r.seq, r.index
end

local function refkey(seq, index) return string.format('%d:%d', seq, index) end

-- scanback calls fn(seq, element) for the elements of a log whose last
-- seq is last, from the end back, reading it in growing chunks, until fn
-- returns true. Element i of the log holds seq first+i.
local function scanback(log, last, first, fn)
  local hi, chunk = last - first, 16
  while hi >= 0 do
    local lo = math.max(hi - chunk + 1, 0)
    local els = redis.call('LRANGE', log, lo, hi)
    for i = #els, 1, -1 do
      if fn(first + lo + i - 1, els[i]) then return end
    end
    hi = lo - 1
    chunk = math.min(chunk * 2, 1024)
  end
end

-- newest finds the newest live item of a log whose last seq is last, the
-- way storekit.Tail(1) does: reading back from the end, a pop or removal
-- hides the item it names, a damaged element or item is skipped, and a
-- clear or a compaction ends the scan. It returns the item's seq, its
-- index (in a compaction, else 0), its entry's data and kind, or nothing
-- when the view is empty.
local function newest(log, last, first)
  local hidden, found = {}, nil
  scanback(log, last, first, function(seq, el)
    local kind, hd, data = entry(el, seq)
    if kind == 'item' then
      if isitem(data) then
        local r = refkey(seq, 0)
        if hidden[r] then hidden[r] = nil else found = {seq, 0, data, kind} return true end
      end
    elseif kind == 'pop' or kind == 'remove' then
      local rs, ri = ref(data)
      if rs then hidden[refkey(rs, ri)] = true end
    elseif kind == 'clear' then
      return true
    elseif kind == 'compaction' and hd.n then
      for j = hd.n - 1, 0, -1 do
        local r = refkey(seq, j)
        if hidden[r] then hidden[r] = nil else found = {seq, j, data, kind} return true end
      end
      return true
    end
  end)
  if found then return unpack(found) end
end

-- popped rebuilds the reply of the pop that wrote seq, for a retried call.
local function popped(log, seq, first)
  local _, _, data = entry(redis.call('LINDEX', log, seq - first) or '', seq)
  local rs, ri = ref(data or '')
  if not rs then return {} end
  local kind, _, idata = entry(redis.call('LINDEX', log, rs - first) or '', rs)
  return {seq, rs, ri, idata or '', kind or ''}
end
