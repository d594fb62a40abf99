//! Fleet-wide budgets against a real `redis-server` (feature `redis`): the
//! Lua scripts on their own (`scripts`), registries in this process
//! (`registry`), which bulkheads count against a share (`membership`),
//! worker processes (`workers`) sharing one budget through joins, leaves,
//! kills, Redis stopped, flushed and paused (`processes`), and one of them
//! cut from Redis or slowed down by a proxy (`partition`, `proxy`).
//!
//! The tests start their own `redis-server` on a free loopback port; they
//! fail, never pass, when there is none (`.ci/run` installs it).

mod membership;
mod partition;
mod processes;
mod proxy;
mod registry;
mod scripts;
mod support;
mod workers;
