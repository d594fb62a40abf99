//! The fleet's Lua scripts (`lua/`), the keys they work on, and their
//! replies. Each step runs as one script: atomic on Redis, and on Redis
//! Cluster too, since every key of a resource has the same hash tag.

use redis::aio::ConnectionLike;
use redis::{RedisResult, Script};

/// `allocate.lua` then `acquire.lua`: join, renew, acknowledge, rebalance.
pub(crate) const ACQUIRE: &str = concat!(
    include_str!("lua/allocate.lua"),
    "\n",
    include_str!("lua/acquire.lua")
);
/// `leave.lua`: give the share back.
pub(crate) const LEAVE: &str = include_str!("lua/leave.lua");

/// The keys of one resource of one application:
/// `bulkhead:{<prefix>:<resource>}:meta` and `...:procs`. The part between
/// braces is the hash tag: Redis Cluster puts both in one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Keys {
    pub(crate) meta: String,
    pub(crate) procs: String,
}

impl Keys {
    pub(crate) fn new(prefix: &str, resource: &str) -> Self {
        Keys {
            meta: format!("bulkhead:{{{prefix}:{resource}}}:meta"),
            procs: format!("bulkhead:{{{prefix}:{resource}}}:procs"),
        }
    }
}

/// What one `acquire` sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) seq: u64,
    pub(crate) acked: u64,
    pub(crate) seen_epoch: String,
    /// The bound on the calls in flight from now on.
    pub(crate) held: u32,
    pub(crate) demand: u32,
    pub(crate) lease_ms: u64,
    pub(crate) budget: u32,
    pub(crate) lease_valid: bool,
    pub(crate) ceiling: u32,
    /// When the lease of the reply to `acked` runs out, in ms on Redis's
    /// clock (0: no reply yet): a record missing before then was lost.
    pub(crate) acked_exp: u64,
    /// The fallback its `on_unreachable` asks for.
    pub(crate) asks: u32,
    /// The fallback it was last told, which it may use now.
    pub(crate) fallback: u32,
}

/// What one `acquire` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    /// `false` for a request older than one already applied: nothing
    /// changed.
    pub(crate) ok: bool,
    pub(crate) epoch: String,
    pub(crate) grant: u32,
    pub(crate) target: u32,
    pub(crate) processes: u32,
    pub(crate) budget: u32,
    pub(crate) recover_ms: u64,
    pub(crate) held: u32,
    pub(crate) owned: u32,
    /// The slots it may fall back to (see `lease`).
    pub(crate) fallback: u32,
    /// When its lease runs out, in ms on Redis's clock.
    pub(crate) exp: u64,
}

/// The two scripts, loaded once per connection (EVALSHA, and SCRIPT LOAD
/// when Redis does not know them yet).
#[derive(Debug)]
pub(crate) struct Scripts {
    acquire: Script,
    leave: Script,
}

impl Scripts {
    pub(crate) fn new() -> Self {
        Scripts {
            acquire: Script::new(ACQUIRE),
            leave: Script::new(LEAVE),
        }
    }

    /// Runs `acquire` for process `pid`.
    pub(crate) async fn acquire(
        &self,
        con: &mut impl ConnectionLike,
        keys: &Keys,
        pid: &str,
        request: &Request,
    ) -> RedisResult<Reply> {
        type Raw = (String, String, u32, u32, u32, u32, u64, u32, u32, u32, u64);
        let raw: Raw = self
            .acquire
            .key(&keys.meta)
            .key(&keys.procs)
            .arg(pid)
            .arg(request.seq)
            .arg(request.acked)
            .arg(&request.seen_epoch)
            .arg(request.held)
            .arg(request.demand)
            .arg(request.lease_ms)
            .arg(request.budget)
            .arg(u8::from(request.lease_valid))
            .arg(request.ceiling)
            .arg(request.acked_exp)
            .arg(request.asks)
            .arg(request.fallback)
            .invoke_async(con)
            .await?;
        let (
            status,
            epoch,
            grant,
            target,
            processes,
            budget,
            recover_ms,
            held,
            owned,
            fallback,
            exp,
        ) = raw;
        Ok(Reply {
            ok: status == "ok",
            epoch,
            grant,
            target,
            processes,
            budget,
            recover_ms,
            held,
            owned,
            fallback,
            exp,
        })
    }

    /// Runs `leave` for process `pid`, with `held` calls still in flight.
    /// Returns 1 if it left, 0 if Redis had no lease of it, -1 if the
    /// request was stale.
    pub(crate) async fn leave(
        &self,
        con: &mut impl ConnectionLike,
        keys: &Keys,
        pid: &str,
        seq: u64,
        held: u32,
    ) -> RedisResult<i64> {
        self.leave
            .key(&keys.meta)
            .key(&keys.procs)
            .arg(pid)
            .arg(seq)
            .arg(held)
            .invoke_async(con)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::Keys;

    #[test]
    fn every_key_of_a_resource_has_one_hash_tag() {
        let keys = Keys::new("shop", "db");
        assert_eq!(keys.meta, "bulkhead:{shop:db}:meta");
        assert_eq!(keys.procs, "bulkhead:{shop:db}:procs");
    }
}
