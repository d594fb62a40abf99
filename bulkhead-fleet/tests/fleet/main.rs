//! Fleet-wide budgets against a real `redis-server`: the
//! Lua scripts on their own (`scripts`), registries in this process
//! (`registry`), which bulkheads count against a share (`membership`),
//! worker processes (`workers`) sharing one budget through joins, leaves,
//! kills, Redis stopped, flushed and paused (`processes`), one of them
//! cut from Redis or slowed down by a proxy (`partition`, `proxy`) or
//! stalled and answered late (`stall`), the whole fleet losing Redis with
//! every `on_unreachable` (`outage`), and passwords and authentication
//! (`secrets`).
//!
//! The tests start their own `redis-server` on a free loopback port; they
//! fail, never pass, when there is none (`.ci/run` installs it).

mod membership;
mod outage;
mod partition;
mod processes;
mod proxy;
mod registry;
mod scripts;
mod secrets;
mod stall;
mod support;
mod workers;
