//! The shared home's atomic steps as Lua scripts (Redis runs each whole, no other replica's
//! command between its reads and its writes). They hold no OAuth rule: the rules are Rust
//! ([`super::Grant::present`], [`super::evictions`]), and a script only makes a write
//! conditional on what was read, counts, or takes something out once.
//!
//! - [`SET_GRANT`]: compare-and-set one grant and its refresh-token index.
//! - [`GRANT_BY_REFRESH`]: the grant a refresh-token hash names, as stored.
//! - [`ADD_PENDING`], [`WRONG_ATTEMPT`]: pending approvals, bounded in number, attempts counted.
//! - [`PUBLISH_KEY`], [`LIVE_KEYS`]: the public signing keys, each valid until a time by
//!   Redis's clock (so the replicas' clocks never disagree about it).

use std::sync::LazyLock;

use redis::Script;

/// `KEYS`: the grants (a hash: id → JSON), the refresh index (a hash: token hash → grant id).
/// `ARGV`: the grant's id, the JSON expected now (`''`: there must be none), the JSON to write
/// (`''`: delete it), the number N of index entries to add, those N hashes, then hashes to drop
/// from the index. Returns 1 when written, 0 when the grant was not as expected (the caller
/// reads again and decides again).
const SET_GRANT_LUA: &str = r"
local current = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '' then
  if current then return 0 end
elseif current ~= ARGV[2] then
  return 0
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
local n = tonumber(ARGV[4])
for i = 5, 4 + n do redis.call('HSET', KEYS[2], ARGV[i], ARGV[1]) end
for i = 5 + n, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
return 1
";

/// `KEYS`: the grants, the refresh index. `ARGV`: a refresh-token hash. Returns the grant's
/// JSON, or nil.
const GRANT_BY_REFRESH_LUA: &str = r"
local id = redis.call('HGET', KEYS[2], ARGV[1])
if not id then return false end
return redis.call('HGET', KEYS[1], id)
";

/// `KEYS`: the index of pending approvals (a sorted set: id → expiry, ms), this approval's
/// hash. `ARGV`: its id, its JSON, its lifetime (ms), the most that may wait. Returns 1 when
/// kept, 0 when too many wait.
const ADD_PENDING_LUA: &str = r"
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('HSET', KEYS[2], 'json', ARGV[2], 'attempts', 0)
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1
";

/// `KEYS`: the index of pending approvals, this approval's hash. `ARGV`: its id, the most
/// wrong attempts. Returns `{attempts, JSON}`: `{-1, ''}` when there is no such approval; at
/// the most, the approval is gone.
const WRONG_ATTEMPT_LUA: &str = r"
local json = redis.call('HGET', KEYS[2], 'json')
if not json then return {-1, ''} end
local n = redis.call('HINCRBY', KEYS[2], 'attempts', 1)
if n >= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return {n, json}
";

/// `KEYS`: the keys (a sorted set: kid → valid until, ms), their JWKs (a hash: kid → JSON).
/// `ARGV`: the kid, the JWK, how long it stays valid from now (ms). A key is never made valid
/// for less than before; keys past their time are forgotten. Returns the time it is valid to.
const PUBLISH_KEY_LUA: &str = r"
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local valid_to = now + tonumber(ARGV[3])
local before = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not before or tonumber(before) < valid_to then
  redis.call('ZADD', KEYS[1], valid_to, ARGV[1])
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
for _, kid in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('ZREM', KEYS[1], kid)
  redis.call('HDEL', KEYS[2], kid)
end
return valid_to
";

/// `KEYS`: the keys, their JWKs. `ARGV`: a kid, or `''` for all. Returns the JWKs (JSON) still
/// valid now.
const LIVE_KEYS_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local kids
if ARGV[1] == '' then
  kids = redis.call('ZRANGEBYSCORE', KEYS[1], now, '+inf')
else
  local valid_to = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not valid_to or tonumber(valid_to) < now then return {} end
  kids = {ARGV[1]}
end
local out = {}
for _, kid in ipairs(kids) do
  local jwk = redis.call('HGET', KEYS[2], kid)
  if jwk then table.insert(out, jwk) end
end
return out
";

pub(super) static SET_GRANT: LazyLock<Script> = LazyLock::new(|| Script::new(SET_GRANT_LUA));
pub(super) static GRANT_BY_REFRESH: LazyLock<Script> =
    LazyLock::new(|| Script::new(GRANT_BY_REFRESH_LUA));
pub(super) static ADD_PENDING: LazyLock<Script> = LazyLock::new(|| Script::new(ADD_PENDING_LUA));
pub(super) static WRONG_ATTEMPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(WRONG_ATTEMPT_LUA));
pub(super) static PUBLISH_KEY: LazyLock<Script> = LazyLock::new(|| Script::new(PUBLISH_KEY_LUA));
pub(super) static LIVE_KEYS: LazyLock<Script> = LazyLock::new(|| Script::new(LIVE_KEYS_LUA));
