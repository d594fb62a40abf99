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

#[cfg(test)]
mod tests;
