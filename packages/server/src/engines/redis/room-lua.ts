/**
 * Lua shared by every script that touches a room (history reads and writes, Broker.publish), so ids,
 * trims and epochs follow one set of rules. Scripts are this prelude plus a body.
 *
 * A room has four keys, one hash tag `{<app>:<room>}` (so all four share a cluster slot), passed as
 * four consecutive KEYS:
 * - `:m` meta hash: e epoch, g generation written under (on a cluster: its shard's entry, see
 *   generation), l newest id issued (kept or not),
 *   k newest id kept, d newest id dropped (limit, age or TTL), u newest id issued and not kept,
 *   b where the epoch began (`<ms>-0`: every id issued under it is at or above it; the events a new
 *   generation kept stay below it. A `since` without an epoch that is below it and not in the
 *   stream names an event of a lost stream, so it is truncated);
 * - `:s` stream of kept events; entry ids are the event ids, fields e (event), d (data), f (from);
 * - `:i` list of the kept ids, oldest first, mirroring the stream (positions: `last`, counts);
 * - `:x` expiry stack: "<expiresAt> <id>" with expiresAt strictly rising. An event goes when it or any
 *   newer one ages out (trims drop a prefix, as in SQLite), so only suffix minima matter: an element
 *   stands for the events up to its id and after the previous element's.
 *
 * TTLs: `:s`, `:i`, `:x` live as long as the longest-lived event (all three get the same TTL, so they
 * go together); the meta lives META_IDLE_MS longer (and at least META_IDLE_MS after any use), so a
 * quiet room keeps its epoch, its rising ids and its watermark for a day after its last event aged
 * out, instead of looking lost. A room whose meta is gone starts a new epoch.
 */

/** How long a room's meta outlives its events, and any use of the room. */
export const META_IDLE_MS = 24 * 3_600_000;

export const ROOM_LUA = `
local META_IDLE_MS = ${META_IDLE_MS}

local function parse_id(text)
  if not text then return nil end
  local ms, seq = string.match(text, '^(%d+)-(%d+)$')
  if not ms then return nil end
  return {tonumber(ms), tonumber(seq)}
end

local function fmt(id)
  return string.format('%d-%d', id[1], id[2])
end

local function later(a, b)
  return a[1] > b[1] or (a[1] == b[1] and a[2] > b[2])
end

local function newest(a, b)
  if not a then return b end
  if not b then return a end
  if later(a, b) then return a end
  return b
end

local function room_keys(base)
  return {m = KEYS[base], s = KEYS[base + 1], i = KEYS[base + 2], x = KEYS[base + 3]}
end

-- The generation this shard writes under, and whether a room's recorded one is still good. On one
-- Redis gens is one token. On a cluster it is '@ <id>:<inc> <id>:<inc> ... ' (every current
-- primary: the first 12 characters of its CLUSTER MYID and its incarnation): this shard's entry is
-- written, and any live primary's entry stays good (a slot moved by a reshard keeps its epoch).
-- Answers mine, or raises UNCONFIRMED when the client's list does not know this primary yet.
local function generation(gens, g)
  if string.sub(gens, 1, 1) ~= '@' then return gens, g == gens end
  local me = string.sub(redis.call('cluster', 'myid'), 1, 12)
  local mine = string.match(gens, ' (' .. me .. ':[^ ]+) ')
  if not mine then error({err = 'UNCONFIRMED shard ' .. me}) end
  return mine, g ~= false and g ~= nil and string.find(gens, ' ' .. g .. ' ', 1, true) ~= nil
end

-- The room's state, started anew (new epoch, beginning now) when its meta is missing or was written
-- under another generation (Redis may have lost writes since).
local function open_room(k, gens, epoch, now)
  local meta = redis.call('hmget', k.m, 'e', 'g', 'l', 'k', 'd', 'u', 'b')
  local gen, good = generation(gens, meta[2])
  local room = {k = k, gen = gen, epoch = meta[1], top = parse_id(meta[3]), kept = parse_id(meta[4]),
    dropped = parse_id(meta[5]), unkept = parse_id(meta[6]), began = parse_id(meta[7]), dirty = false}
  if not meta[1] then
    -- New, or its meta was lost (evicted): what is left of an old stream goes with it.
    if redis.call('exists', k.s) == 1 then
      local info = redis.call('xinfo', 'stream', k.s)
      for n = 1, #info, 2 do
        if info[n] == 'last-generated-id' then room.top = parse_id(info[n + 1]) end
      end
    end
    redis.call('del', k.s, k.i, k.x)
    room.kept, room.dropped, room.unkept = nil, nil, nil
  end
  if not meta[1] or not good then
    room.epoch = epoch
    room.began = {now, 0}
    room.dirty = true
  end
  -- The stream's TTL ran out (every kept event had aged): the watermark covers what it held.
  if room.kept and (not room.dropped or later(room.kept, room.dropped)) and redis.call('exists', k.s) == 0 then
    room.dropped = room.kept
    room.dirty = true
  end
  return room
end

-- The next id: the given time, or the same millisecond as the newest id when the clock is behind it
-- (or as the stream's beginning: a node whose clock is behind the one that began it).
local function issue(room, now)
  local top = room.top
  if room.began and now < room.began[1] then now = room.began[1] end
  local id
  if not top or now > top[1] then id = {now, 0} else id = {top[1], top[2] + 1} end
  room.top = id
  room.dirty = true
  return id
end

-- Drops every kept event up to and including id b; answers how many went.
local function drop_through(room, b)
  local k = room.k
  local gone = redis.call('xtrim', k.s, 'MINID', string.format('%d-%d', b[1], b[2] + 1))
  room.dropped = newest(room.dropped, b)
  room.dirty = true
  local left = redis.call('xlen', k.s)
  if left == 0 then
    redis.call('del', k.s, k.i, k.x)
  else
    redis.call('ltrim', k.i, -left, -1)
  end
  return gone
end

local function trim_limit(room, limit)
  local len = redis.call('xlen', room.k.s)
  if len <= limit then return 0 end
  return drop_through(room, parse_id(redis.call('lindex', room.k.i, len - limit - 1)))
end

-- Drops the events aged out at now: up to the newest stack element that expired.
local function trim_age(room, now)
  local k = room.k
  local through
  while true do
    local head = redis.call('lindex', k.x, 0)
    if not head then break end
    local expires, text = string.match(head, '^(%d+) (.+)$')
    local id = parse_id(text)
    if tonumber(expires) <= now then
      through = id
    elseif room.dropped and not later(id, room.dropped) then
      -- Its events already went by the limit: nothing left to time.
    else
      break
    end
    redis.call('lpop', k.x)
  end
  if through then return drop_through(room, through) end
  return 0
end

local function push_expiry(room, id, expires)
  local k = room.k
  while true do
    local tail = redis.call('lindex', k.x, -1)
    if not tail then break end
    if tonumber(string.match(tail, '^(%d+) ')) < expires then break end
    redis.call('rpop', k.x)
  end
  redis.call('rpush', k.x, string.format('%d %s', expires, fmt(id)))
end

-- Stores one event; answers its id.
local function append(room, now, limit, hours_ms, event, data, from)
  local k = room.k
  local id = issue(room, now)
  local text = fmt(id)
  if from then
    redis.call('xadd', k.s, text, 'e', event, 'd', data, 'f', from)
  else
    redis.call('xadd', k.s, text, 'e', event, 'd', data)
  end
  redis.call('rpush', k.i, text)
  push_expiry(room, id, now + hours_ms)
  room.kept = id
  trim_limit(room, limit)
  trim_age(room, now)
  -- The three keys go together, when the longest-lived event would (-1: new, no TTL yet; -2: trimmed away).
  local ttl = redis.call('pttl', k.s)
  if ttl ~= -2 then
    if ttl < hours_ms then ttl = hours_ms end
    redis.call('pexpire', k.s, ttl)
    redis.call('pexpire', k.i, ttl)
    redis.call('pexpire', k.x, ttl)
  end
  return text
end

-- An id for an event the room does not keep.
local function skip(room, now)
  local id = issue(room, now)
  room.unkept = id
  return fmt(id)
end

local function save_room(room)
  local k = room.k
  if room.dirty then
    local fields = {'e', room.epoch, 'g', room.gen}
    if room.top then fields[#fields + 1] = 'l'; fields[#fields + 1] = fmt(room.top) end
    if room.kept then fields[#fields + 1] = 'k'; fields[#fields + 1] = fmt(room.kept) end
    if room.dropped then fields[#fields + 1] = 'd'; fields[#fields + 1] = fmt(room.dropped) end
    if room.unkept then fields[#fields + 1] = 'u'; fields[#fields + 1] = fmt(room.unkept) end
    if room.began then fields[#fields + 1] = 'b'; fields[#fields + 1] = fmt(room.began) end
    redis.call('hset', k.m, unpack(fields))
    room.dirty = false
  end
  local events = redis.call('pttl', k.s)
  if events < 0 then events = 0 end
  local want = events + META_IDLE_MS
  local ttl = redis.call('pttl', k.m)
  if ttl ~= -2 and ttl < want then redis.call('pexpire', k.m, want) end
end

-- Adds the events from position lo of the id list to out (id, event, data, from or false each):
-- at most max_events, and no more once their size would pass max_bytes (one always comes).
local function read_page(room, lo, total, max_events, max_bytes, out)
  if total <= 0 then return 0 end
  local k = room.k
  local want = math.min(total, max_events)
  local from = redis.call('lindex', k.i, lo)
  local n, bytes = 0, 0
  while n < want and from do
    local chunk = redis.call('xrange', k.s, from, '+', 'COUNT', math.min(want - n, 32))
    if #chunk == 0 then break end
    for _, entry in ipairs(chunk) do
      local f = entry[2]
      local size = #f[2] + #f[4]
      if n > 0 and bytes + size > max_bytes then return n end
      out[#out + 1] = entry[1]
      out[#out + 1] = f[2]
      out[#out + 1] = f[4]
      out[#out + 1] = f[6] or false
      n = n + 1
      bytes = bytes + size
      if n >= want then return n end
    end
    from = '(' .. chunk[#chunk][1]
  end
  return n
end

-- Position in the id list of the first id after a (binary search: the list is in id order).
local function position_after(room, a)
  local lo, hi = 0, redis.call('llen', room.k.i)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if later(parse_id(redis.call('lindex', room.k.i, mid)), a) then hi = mid else lo = mid + 1 end
  end
  return lo
end
`;
