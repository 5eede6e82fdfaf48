//! The shared decisions as Lua scripts, each run by Redis atomically (no command of another
//! replica runs between its reads and its writes), with Redis's own clock (`TIME`), so the
//! replicas' clocks never disagree about a window.
//!
//! - [`ADMIT`]: one call against one or more budgets (a policy rule's budget of a principal, a
//!   client's request rate). Every budget is checked first; only when all admit is anything
//!   counted, so a refused call consumes nothing. Per budget:
//!   - a total (`max_calls`): a counter, checked `< max` and incremented;
//!   - a rate (`per_minute`): GCRA, the algorithm `governor` runs in process, over one stored
//!     value, the theoretical arrival time in microseconds: a burst of `per_minute` calls,
//!     then one every minute / `per_minute`; the key expires when the bucket is full again;
//!   - calls at once (`max_running`): a set of running call ids `REPLICA/N`, each removed
//!     when its call ends; a member whose replica has stopped beating is dropped before the
//!     count, so a replica that died mid-call does not hold its calls' places for ever.
//! - [`REFUND`]: give back the count of a call that was not really made (a confirmation
//!   question the client answers with a retry).
//! - [`BEAT`]: a replica's heartbeat in the registry (score: when it expires, by Redis's
//!   clock), forgetting replicas gone for longer than [`super::registry::FORGET_AFTER`].
//!
//! The in-process twin of [`ADMIT`] is `observe/budget.rs` (`SessionBudget::admit`), which
//! decides the same way with the same limits when no Redis is configured (or while it is
//! away, with `when_redis_away = "local"`).
//!
//! Writing after `TIME` needs effects replication: the default from Redis 5 (and in Valkey);
//! `redis.replicate_commands()` turns it on in 3.2 and 4 and does nothing later.

use std::sync::LazyLock;

use redis::Script;

/// Which limit of a budget refused a call, as [`ADMIT`] numbers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SharedLimit {
    /// `max_calls`: the total.
    Calls,
    /// `per_minute`: the rate.
    Rate,
    /// `max_running`: calls at once.
    Running,
}

/// `KEYS`: per budget its counter, its rate and its running set (three keys each, in that
/// order), then the registry of live replicas. `ARGV`: the number of budgets, this call's id
/// (`REPLICA/N`), then per budget `max_calls`, `per_minute`, `max_running` (0: no limit).
/// Returns `{0, 0, 0}` when admitted, else `{budget (1-based), limit (1 total, 2 rate, 3 at
/// once), retry after (ms, rates only)}`.
const ADMIT_LUA: &str = r"
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n = tonumber(ARGV[1])
local member = ARGV[2]
local live = KEYS[3 * n + 1]
local now_ms = math.floor(now / 1000)
for i = 1, n do
  local calls, rate, running = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local max_calls = tonumber(ARGV[3 * i])
  local per_minute = tonumber(ARGV[3 * i + 1])
  local max_running = tonumber(ARGV[3 * i + 2])
  if max_running > 0 then
    for _, m in ipairs(redis.call('SMEMBERS', running)) do
      local replica = string.match(m, '^(.*)/[^/]*$')
      local expires = replica and redis.call('ZSCORE', live, replica)
      if not expires or tonumber(expires) < now_ms then
        redis.call('SREM', running, m)
      end
    end
    if redis.call('SCARD', running) >= max_running then
      return {i, 3, 0}
    end
  end
  if max_calls > 0 and tonumber(redis.call('GET', calls) or '0') >= max_calls then
    return {i, 1, 0}
  end
  if per_minute > 0 then
    local interval = math.floor(60000000 / per_minute)
    local tat = tonumber(redis.call('GET', rate) or '0')
    if tat < now then tat = now end
    local over = tat - now - interval * (per_minute - 1)
    if over > 0 then
      return {i, 2, math.ceil(over / 1000)}
    end
  end
end
for i = 1, n do
  local calls, rate, running = KEYS[3 * i - 2], KEYS[3 * i - 1], KEYS[3 * i]
  local max_calls = tonumber(ARGV[3 * i])
  local per_minute = tonumber(ARGV[3 * i + 1])
  local max_running = tonumber(ARGV[3 * i + 2])
  if max_calls > 0 then redis.call('INCR', calls) end
  if per_minute > 0 then
    local interval = math.floor(60000000 / per_minute)
    local tat = tonumber(redis.call('GET', rate) or '0')
    if tat < now then tat = now end
    tat = tat + interval
    redis.call('SET', rate, string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000))
  end
  if max_running > 0 then redis.call('SADD', running, member) end
end
return {0, 0, 0}
";

/// `KEYS`: counters. Each is decremented, never below zero.
const REFUND_LUA: &str = r"
for _, key in ipairs(KEYS) do
  local v = tonumber(redis.call('GET', key) or '0')
  if v > 0 then redis.call('DECR', key) end
end
return 0
";

/// `KEYS`: the registry (a sorted set: replica id → expiry in ms), its details (a hash: id →
/// JSON). `ARGV`: this replica's id, its time to live (ms), its details, how long a replica
/// that stopped beating is remembered (ms). Returns Redis's time (ms).
const BEAT_LUA: &str = r"
redis.replicate_commands()
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[4]))) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
return now
";

pub(crate) static ADMIT: LazyLock<Script> = LazyLock::new(|| Script::new(ADMIT_LUA));
pub(crate) static REFUND: LazyLock<Script> = LazyLock::new(|| Script::new(REFUND_LUA));
pub(crate) static BEAT: LazyLock<Script> = LazyLock::new(|| Script::new(BEAT_LUA));

/// What [`ADMIT`] answered, read from its three numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Admitted,
    /// Refused by budget `index` (0-based), with the rate's wait in ms.
    Refused {
        index: usize,
        limit: SharedLimit,
        retry_after_ms: u64,
    },
}

impl Verdict {
    /// Read the script's answer; anything else is a script that does not match this code.
    pub(crate) fn read(answer: &[i64]) -> Result<Self, String> {
        let &[index, limit, wait] = answer else {
            return Err(format!("the admit script answered {answer:?}"));
        };
        if index == 0 {
            return Ok(Self::Admitted);
        }
        let limit = match limit {
            1 => SharedLimit::Calls,
            2 => SharedLimit::Rate,
            3 => SharedLimit::Running,
            _ => return Err(format!("the admit script answered {answer:?}")),
        };
        Ok(Self::Refused {
            index: usize::try_from(index - 1).map_err(|e| e.to_string())?,
            limit,
            retry_after_ms: u64::try_from(wait).unwrap_or(0),
        })
    }
}
