//! The permission to make one call through a circuit breaker, and how the
//! call ended: [`BreakerPermit`], [`OwnedBreakerPermit`], [`BreakerOutcome`].

use std::fmt;
use std::time::Duration;

use super::CircuitBreaker;
use super::machine::{Shared, Ticket};

/// How a call made under a [`BreakerPermit`] ended, as the breaker counts it.
///
/// The composition decides: `Ok` is a success; the call's own error is a
/// failure if `record_if` says so (the default), else a success; a rejection
/// by an inner policy is ignored if its kind is in `ignore_on`, else a
/// failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakerOutcome {
    /// The call succeeded.
    Success,
    /// The call failed.
    Failure,
    /// The call counts neither way. In half-open, its trial is given back
    /// for another call (as Resilience4j does for ignored exceptions).
    Ignored,
}

/// Permission to make one call through a circuit breaker; record how the
/// call ended with [`record`](Self::record).
///
/// Dropping it without recording (a cancelled call, or a panic) records
/// nothing; a half-open breaker's trial is given back for another call.
#[must_use = "record the call's outcome with `record`; dropping the permit counts nothing"]
pub struct BreakerPermit<'a> {
    shared: &'a Shared,
    ticket: Ticket,
}

impl<'a> BreakerPermit<'a> {
    #[inline]
    pub(super) fn new(shared: &'a Shared, ticket: Ticket) -> Self {
        BreakerPermit { shared, ticket }
    }

    /// Whether the call's duration can matter, so that the caller should
    /// measure it and pass it to [`record`](Self::record).
    ///
    /// True unless `slow_call_threshold` is [`Duration::MAX`], which no
    /// call can exceed: then nothing is slow, and the closed path of a
    /// count-window breaker reads no clock at all. With the defaults
    /// (`slow_call_threshold` 60 s, `slow_call_rate_threshold` 100) calls
    /// are timed, as in Resilience4j: a window in which every call took
    /// longer than 60 s opens the breaker. A duration passed anyway is
    /// always honoured.
    ///
    /// Also false for a disabled breaker, which records nothing.
    #[inline]
    pub fn tracks_slow_calls(&self) -> bool {
        self.shared.tracks_slow_calls(self.ticket)
    }

    /// Records how the call ended and how long it took (`None` if not
    /// measured: the call is then not slow).
    ///
    /// A call longer than `slow_call_threshold` is slow, whether it
    /// succeeded or failed. Recording a call admitted before the breaker
    /// last changed state does nothing: it belongs to a state that is gone.
    #[inline]
    pub fn record(mut self, outcome: BreakerOutcome, duration: Option<Duration>) {
        let ticket = std::mem::replace(&mut self.ticket, Ticket::FREE);
        self.shared.record(ticket, outcome, duration, None);
    }

    /// [`record`](Self::record) of a call that took `took` nanoseconds,
    /// with the time it ended on the breaker's clock, in nanoseconds since
    /// the breaker was created, if the caller has read it (the composition
    /// shares its readings).
    #[inline]
    pub(crate) fn record_at(mut self, outcome: BreakerOutcome, took: Option<u64>, at: Option<u64>) {
        let ticket = std::mem::replace(&mut self.ticket, Ticket::FREE);
        self.shared.record_nanos(ticket, outcome, took, at);
    }

    fn into_ticket(mut self) -> Ticket {
        std::mem::replace(&mut self.ticket, Ticket::FREE)
    }
}

impl Drop for BreakerPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.shared.cancel(self.ticket);
    }
}

impl fmt::Debug for BreakerPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerPermit")
            .field("instance", &self.shared.instance)
            .field("ticket", &self.ticket)
            .finish()
    }
}

/// A [`BreakerPermit`] that owns a handle to its breaker, so that it can
/// move into a spawned task or another thread.
#[must_use = "record the call's outcome with `record`; dropping the permit counts nothing"]
pub struct OwnedBreakerPermit {
    breaker: CircuitBreaker,
    ticket: Ticket,
}

impl OwnedBreakerPermit {
    pub(super) fn new(breaker: &CircuitBreaker, permit: BreakerPermit<'_>) -> Self {
        OwnedBreakerPermit {
            breaker: breaker.clone(),
            ticket: permit.into_ticket(),
        }
    }

    /// See [`BreakerPermit::tracks_slow_calls`].
    pub fn tracks_slow_calls(&self) -> bool {
        self.breaker.shared.tracks_slow_calls(self.ticket)
    }

    /// See [`BreakerPermit::record`].
    pub fn record(mut self, outcome: BreakerOutcome, duration: Option<Duration>) {
        let ticket = std::mem::replace(&mut self.ticket, Ticket::FREE);
        self.breaker.shared.record(ticket, outcome, duration, None);
    }
}

impl Drop for OwnedBreakerPermit {
    fn drop(&mut self) {
        self.breaker.shared.cancel(self.ticket);
    }
}

impl fmt::Debug for OwnedBreakerPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedBreakerPermit")
            .field("instance", &self.breaker.instance())
            .field("ticket", &self.ticket)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    impl BreakerPermit<'_> {
        pub(in crate::circuit_breaker) fn ticket(&self) -> Ticket {
            self.ticket
        }
    }
}
