//! Fleet-wide budgets against a real `redis-server` (feature `redis`): the
//! Lua scripts on their own (`scripts`), registries in this process
//! (`registry`), and worker processes sharing one budget through joins,
//! leaves, kills, Redis stopped, flushed and paused (`processes`).
//!
//! The tests start their own `redis-server` on a free loopback port; they
//! fail, never pass, when there is none (`.ci/run` installs it).

mod membership;
mod processes;
mod registry;
mod scripts;
mod support;
