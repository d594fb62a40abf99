//! Every policy's table of keys, one file per policy, one row per key:
//! see [`rows`](crate::rows) for how a row reads.

pub(crate) mod bulkhead;
pub(crate) mod chaos;
pub(crate) mod circuit_breaker;
pub(crate) mod fallback;
pub(crate) mod hedge;
pub(crate) mod rate_limiter;
pub(crate) mod retry;
pub(crate) mod timeout;
