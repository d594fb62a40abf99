//! Fleet-wide budgets for [`bulkhead`](https://docs.rs/bulkhead): a
//! resource's budget shared by every process that names it on one Redis.
//! Most users reach it through the facade's feature `redis`
//! (`bulkhead::fleet`).
//!
//! ```no_run
//! use std::time::Duration;
//! use bulkhead_fleet::{FleetConfig, OnUnreachable};
//! use bulkhead_registry::{Pipeline, Registry};
//!
//! let registry = Registry::new();
//! // 100 connections for the whole fleet, however many replicas run.
//! registry.fleet_resource(
//!     "db",
//!     100,
//!     FleetConfig::redis("redis://10.0.0.5:6379/0")?
//!         .prefix("shop")
//!         .lease(Duration::from_secs(10))
//!         .on_unreachable(OnUnreachable::Closed),
//! )?;
//! let orders = Pipeline::builder(&registry, "orders")
//!     .bulkhead(|b| b.max_concurrent(40).resource("db"))
//!     .build()?;
//! // `orders` admits calls within this process's share of the 100 slots.
//! let snapshot = registry.snapshot();
//! let share = &snapshot.fleets()[0];
//! println!("{} of {} slots, {} processes", share.share, share.budget, share.processes);
//! # Ok::<(), bulkhead_registry::RegistryError>(())
//! ```
//!
//! Each process leases a share of the budget from Redis, renews it every
//! third of the lease, and runs its bulkheads on the resource within it:
//! their limits in force are capped so that they add up to the share
//! (their configured `max_concurrent` is the most each may get). Shares
//! follow demand, max-min fair. Calls never touch the network: the share
//! is applied from a thread of the registry's (`bulkhead-fleet`).
//!
//! Across the fleet, calls in flight on the resource never exceed the
//! budget: a process gives slots back only once its calls in flight fit
//! its smaller share, leases expire on Redis's clock, and a process that
//! cannot renew stops admitting calls before its lease could have run out
//! there. See the guide page `fleet` of the `bulkhead` crate for the
//! protocol, its failure modes and its limits.
//!
//! # Highly available Redis
//!
//! The leases may live on one Redis (or a managed endpoint whose name
//! follows its primary), on the primary that a set of Sentinels names, or
//! on a Redis Cluster: [`FleetConfig::redis`] reads
//! `redis+sentinel://host1,host2,host3/mymaster` and
//! `redis+cluster://host1:7000,host2:7000` as well, and
//! [`FleetConfig::sentinel`] and [`FleetConfig::cluster`] take the
//! addresses in code.
//!
//! ```no_run
//! use bulkhead_fleet::FleetConfig;
//! use bulkhead_registry::Registry;
//!
//! let registry = Registry::new();
//! registry.fleet_resource(
//!     "db",
//!     100,
//!     FleetConfig::sentinel("mymaster", ["10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"])?
//!         .primary_auth(Some("app"), "s3cr3t"),
//! )?;
//! registry.fleet_resource(
//!     "cache",
//!     40,
//!     FleetConfig::redis("redis+cluster://10.0.1.1:7000,10.0.1.2:7000,10.0.1.3:7000")?,
//! )?;
//! # Ok::<(), bulkhead_registry::RegistryError>(())
//! ```
//!
//! - **Sentinel.** Every configured Sentinel is asked for the primary at
//!   once; it is the node named at the highest `config-epoch`, by a
//!   majority of them, at an epoch no lower than any seen before (unless
//!   every one of them names one address at one epoch), and it
//!   must say `role:master`. The connection is dropped, and the primary
//!   looked up again, after an I/O error or a timeout, a `READONLY`,
//!   `MASTERDOWN`, `LOADING` or `NOREPLICAS` reply, and on Sentinel's
//!   `+switch-master`. After each request, a fresh lookup must still name
//!   the node that answered: otherwise its grant is not applied, and the
//!   snapshot's `last_error` reads `REG-019: <reason>` (a node not
//!   confirmed as the primary; the reasons: `no Sentinel majority names
//!   <addr>`, `Sentinel config-epoch went back`).
//! - **Cluster.** The client follows `MOVED` and `ASK` and a failover of
//!   the slot's primary (a resource's keys share one hash tag, so one
//!   slot).
//! - **One Redis.** The same replies drop the connection, so that a
//!   managed endpoint's name is resolved again.
//!
//! With the feature `tls` (`redis-tls` of the facade), `rediss://`,
//! `rediss+sentinel://` and `rediss+cluster://` connect over TLS (rustls,
//! with its `ring` provider and the system's root certificates).
//!
//! # How it plugs into the registry
//!
//! Through the registry's extension point, `bulkhead_registry::fleet`:
//! [`FleetConfig`] is a `FleetSpec` (what `Registry::fleet_resource`
//! takes); the kind `redis` (`FleetKind`, registered with `inventory` so
//! that the registry's configuration sources find it) reads the keys
//! `fleet`, `lease`, `margin`, `prefix` and `on_unreachable` of
//! `[resources.<name>]`; and each registry's backend (`FleetBackend`) keeps
//! its fleet resources and the thread that keeps their leases.

#![forbid(unsafe_code)]
#![cfg_attr(bulkhead_docsrs, feature(doc_cfg))]

mod alloc;
mod backend;
mod config;
mod driver;
mod failure;
mod lease;
#[cfg(test)]
mod live;
mod local;
mod resource;
mod script;
mod sentinel;
mod spec;
mod topology;
mod url;

pub use bulkhead_registry::fleet::{FleetSnapshot, FleetState};
pub use config::{FleetConfig, OnUnreachable};

#[doc(hidden)]
pub mod __testing {
    //! What the tests need to reach failures they cannot cause otherwise.
    /// Makes the start of a registry's fleet thread fail on the calling
    /// thread (`true`), as if the system refused a thread, or work again.
    pub fn refuse_thread_starts(refuse: bool) {
        super::driver::refuse_starts_on_this_thread(refuse);
    }
}

#[doc(hidden)]
pub mod __scripts {
    //! The Lua scripts, for the tests that run them against a real Redis.
    /// `acquire`: join, renew, acknowledge, rebalance.
    pub const ACQUIRE: &str = super::script::ACQUIRE;
    /// `leave`.
    pub const LEAVE: &str = super::script::LEAVE;
    /// The allocation alone, for the tests that compare it with the Rust
    /// port: `allocate.lua` then a call of it on `ARGV` (budget, then
    /// `id demand ceiling` triples), returning the targets in order.
    pub const ALLOCATE: &str = concat!(
        include_str!("lua/allocate.lua"),
        "\n",
        r#"local budget = tonumber(ARGV[1])
local procs, order = {}, {}
for i = 2, #ARGV, 3 do
  local p = { id = ARGV[i], demand = tonumber(ARGV[i + 1]), ceiling = tonumber(ARGV[i + 2]) }
  procs[#procs + 1] = p
  order[#order + 1] = p
end
allocate(budget, procs)
local out = {}
for i, p in ipairs(order) do out[i] = p.target end
return out
"#
    );
    /// The Rust port of the allocation, on `(id, demand, ceiling)`.
    pub fn allocate(budget: u32, claims: &[(&str, u32, u32)]) -> Vec<u32> {
        let claims: Vec<super::alloc::Claim<'_>> = claims
            .iter()
            .map(|&(id, demand, ceiling)| super::alloc::Claim {
                id,
                demand,
                ceiling,
            })
            .collect();
        super::alloc::allocate(budget, &claims)
    }
}
