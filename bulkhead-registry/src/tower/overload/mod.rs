//! The overload layers: a server's requests run under the deadline and the
//! class their caller sent ([`DeadlineLayer`], [`PriorityLayer`]); a
//! client's requests carry the time left on ([`PropagateDeadlineLayer`])
//! and answers that ask it to wait become errors a retry reads
//! ([`PushbackLayer`]).

mod client;
pub mod grpc_timeout;
mod header;
mod priority;
mod pushback;
mod pushed_back;
mod server;

pub use client::{PROPAGATE_DEADLINE, PropagateDeadline, PropagateDeadlineLayer, PropagateFuture};
pub use header::DeadlineHeader;
pub use priority::{PriorityFuture, PriorityLayer, PriorityService};
pub use pushback::{PushbackFuture, PushbackLayer, PushbackService};
pub use pushed_back::{PushbackError, PushedBack};
pub use server::{DeadlineFuture, DeadlineLayer, DeadlineService};

/// The non-negative integer `value` writes in ASCII digits and nothing
/// else (no sign, no space), saturating at `u64::MAX`; `None` for anything
/// else. The one reading of the integer headers: `Retry-After`'s
/// delta-seconds, `grpc-retry-pushback-ms`, a millisecond deadline header
/// and `grpc-timeout`'s count.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(value.iter().fold(0_u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

#[cfg(test)]
mod tests;
