//! Fleet-wide budgets against a real `redis-server`: the
//! Lua scripts on their own (`scripts`), registries in this process
//! (`registry`), which bulkheads count against a share (`membership`),
//! worker processes (`workers`) sharing one budget through joins, leaves,
//! kills, Redis stopped, flushed and paused (`processes`), one of them
//! cut from Redis or slowed down by a proxy (`partition`, `proxy`) or
//! stalled and answered late (`stall`), the whole fleet losing Redis with
//! every `on_unreachable` (`outage`), passwords and authentication
//! (`secrets`), a primary watched by Sentinels killed, restarted empty or
//! demoted (`sentinel`; with passwords on the nodes and the Sentinels:
//! `sentinel_auth`), a cluster's slot failing over or moving
//! (`cluster`), Valkey in place of Redis (`valkey`), and TLS to one
//! server, a Sentinel set and a cluster (`tls`, with the feature `tls`).
//!
//! The tests start their own `redis-server` (and Sentinels, clusters,
//! `valkey-server`) on free loopback ports; they fail, never pass, when
//! there is none (`.ci/run` installs them). The tests that start many
//! processes (Sentinels, clusters, Valkey's) take `support::serial`, so
//! that they run one at a time.

mod cluster;
mod membership;
mod outage;
mod partition;
mod processes;
mod proxy;
mod registry;
mod scripts;
mod secrets;
mod sentinel;
mod sentinel_auth;
mod stall;
mod support;
#[cfg(feature = "tls")]
mod tls;
mod valkey;
mod workers;
