//! What policies report: [`Event`]s, published on an [`EventBus`] and read
//! from an [`EventStream`].
//!
//! Admitted calls publish nothing. A rejection publishes one event, and only
//! when someone subscribed: with no subscriber, publishing costs one relaxed
//! load. Subscribers read from a bounded buffer of their own; one that falls
//! behind loses the oldest events (counted in [`EventStream::missed`]) and
//! never slows a caller down.
//!
//! `bus.rs` holds the bus and the stream; this file the events.

use std::time::{Duration, Instant};

use crate::Priority;
use crate::rejection::RejectionKind;

mod bus;

pub use bus::{EventBus, EventStream};

/// Something a policy did that is worth knowing about.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A bulkhead event.
    Bulkhead(BulkheadEvent),
    /// A retry event.
    Retry(RetryEvent),
    /// A circuit breaker event.
    CircuitBreaker(CircuitBreakerEvent),
    /// A timeout event.
    Timeout(TimeoutEvent),
    /// A rate limiter event.
    RateLimiter(RateLimiterEvent),
    /// A hedge event.
    Hedge(HedgeEvent),
    /// A fallback event.
    Fallback(FallbackEvent),
    /// A chaos policy's event.
    Chaos(ChaosEvent),
    /// A fleet resource's share of its budget changed (the registry's
    /// feature `redis`).
    FleetShareChanged(FleetShareChanged),
}

impl Event {
    /// The id of the instance the event is about (for a fleet resource's
    /// event, the resource's name).
    pub fn instance(&self) -> &'static str {
        match self {
            Event::Bulkhead(event) => event.instance,
            Event::Retry(event) => event.instance,
            Event::CircuitBreaker(event) => event.instance,
            Event::Timeout(event) => event.instance,
            Event::RateLimiter(event) => event.instance,
            Event::Hedge(event) => event.instance,
            Event::Fallback(event) => event.instance,
            Event::Chaos(event) => event.instance,
            Event::FleetShareChanged(event) => event.resource,
        }
    }

    /// When it happened, on the registry's clock.
    pub fn at(&self) -> Instant {
        match self {
            Event::Bulkhead(event) => event.at,
            Event::Retry(event) => event.at,
            Event::CircuitBreaker(event) => event.at,
            Event::Timeout(event) => event.at,
            Event::RateLimiter(event) => event.at,
            Event::Hedge(event) => event.at,
            Event::Fallback(event) => event.at,
            Event::Chaos(event) => event.at,
            Event::FleetShareChanged(event) => event.at,
        }
    }

    /// Hands the event to `visitor`'s method for its kind.
    pub fn visit<V: EventVisitor>(self, visitor: &mut V) -> V::Output {
        match self {
            Event::Bulkhead(event) => visitor.bulkhead(event),
            Event::Retry(event) => visitor.retry(event),
            Event::CircuitBreaker(event) => visitor.circuit_breaker(event),
            Event::Timeout(event) => visitor.timeout(event),
            Event::RateLimiter(event) => visitor.rate_limiter(event),
            Event::Hedge(event) => visitor.hedge(event),
            Event::Fallback(event) => visitor.fallback(event),
            Event::Chaos(event) => visitor.chaos(event),
            Event::FleetShareChanged(event) => visitor.fleet_share_changed(event),
        }
    }
}

/// What to do with each kind of [`Event`]: [`Event::visit`] calls the
/// method of the event's kind.
///
/// `Event` is `#[non_exhaustive]`, so a `match` on it outside this crate
/// needs an arm for kinds it does not know. A visitor does not: no method
/// has a default, so a new kind of event fails to compile in every visitor
/// until it says what to do with it.
pub trait EventVisitor {
    /// What each method returns.
    type Output;
    /// A bulkhead's event.
    fn bulkhead(&mut self, event: BulkheadEvent) -> Self::Output;
    /// A retry policy's event.
    fn retry(&mut self, event: RetryEvent) -> Self::Output;
    /// A circuit breaker's event.
    fn circuit_breaker(&mut self, event: CircuitBreakerEvent) -> Self::Output;
    /// A timeout policy's event.
    fn timeout(&mut self, event: TimeoutEvent) -> Self::Output;
    /// A rate limiter's event.
    fn rate_limiter(&mut self, event: RateLimiterEvent) -> Self::Output;
    /// A hedge policy's event.
    fn hedge(&mut self, event: HedgeEvent) -> Self::Output;
    /// A fallback policy's event.
    fn fallback(&mut self, event: FallbackEvent) -> Self::Output;
    /// A chaos policy's event.
    fn chaos(&mut self, event: ChaosEvent) -> Self::Output;
    /// A fleet resource's share of its budget changed.
    fn fleet_share_changed(&mut self, event: FleetShareChanged) -> Self::Output;
}

macro_rules! policy_event {
    ($(#[$meta:meta])* $name:ident, $kind:ident, $policy:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub struct $name {
            #[doc = concat!("The ", $policy, "'s instance id.")]
            pub instance: &'static str,
            /// What happened.
            pub kind: $kind,
            /// When, on the registry's clock.
            pub at: Instant,
        }

        impl $name {
            /// An event of `instance`.
            pub fn new(instance: &'static str, kind: $kind, at: Instant) -> Self {
                $name { instance, kind, at }
            }
        }
    };
}

policy_event!(
    /// An event of one retry policy.
    RetryEvent, RetryEventKind, "retry"
);
policy_event!(
    /// An event of one circuit breaker.
    CircuitBreakerEvent, CircuitBreakerEventKind, "circuit breaker"
);
policy_event!(
    /// An event of one timeout policy.
    TimeoutEvent, TimeoutEventKind, "timeout"
);
policy_event!(
    /// An event of one rate limiter.
    RateLimiterEvent, RateLimiterEventKind, "rate limiter"
);
policy_event!(
    /// An event of one hedge policy.
    HedgeEvent, HedgeEventKind, "hedge"
);
policy_event!(
    /// An event of one fallback policy.
    FallbackEvent, FallbackEventKind, "fallback"
);
policy_event!(
    /// An event of one chaos policy.
    ChaosEvent, ChaosEventKind, "chaos policy"
);

/// What a retry policy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryEventKind {
    /// An attempt failed and another will follow after `delay`.
    Retrying {
        /// The attempt that failed (1 for the first call).
        attempt: u32,
        /// The wait before the next attempt.
        delay: Duration,
        /// The rejection that failed it, or `None` for the call's own error.
        rejection: Option<RejectionKind>,
    },
    /// A call succeeded after at least one retry.
    Succeeded {
        /// Attempts made, the successful one included.
        attempts: u32,
    },
    /// The last allowed attempt failed.
    Exhausted {
        /// Attempts made.
        attempts: u32,
        /// The rejection that failed the last one, or `None` for an error.
        rejection: Option<RejectionKind>,
    },
    /// An attempt failed in a way that is not retried (`abort_on`, or
    /// `retry_if` said no).
    Aborted {
        /// Attempts made.
        attempts: u32,
        /// The rejection that failed the last one, or `None` for an error.
        rejection: Option<RejectionKind>,
    },
    /// An attempt failed and would have been retried, but the instance's
    /// retry budget had no room left: the call ended with this failure.
    BudgetExhausted {
        /// Attempts made.
        attempts: u32,
        /// The rejection that failed the last one, or `None` for an error.
        rejection: Option<RejectionKind>,
    },
    /// An attempt failed and would have been retried, but the retry would
    /// have come too late: the call ended with this failure (no retry
    /// budget was taken for it).
    GaveUp {
        /// Attempts made.
        attempts: u32,
        /// The rejection that failed the last one, or `None` for an error.
        rejection: Option<RejectionKind>,
        /// Why the retry would have come too late.
        reason: GiveUpReason,
    },
}

/// Why a retry gave up on a call it would otherwise have retried
/// ([`RetryEventKind::GaveUp`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// The next attempt would have started with `min_attempt_time` or less
    /// left before the call's deadline (`bulkhead::deadline`).
    Deadline,
    /// The error asked for a wait longer than `max_wait_interval` before
    /// the next attempt, or asked not to try again (`Duration::MAX`)
    /// (`bulkhead::retry::Pushback`): the wait it asked for.
    Pushback(Duration),
}

/// The state of a circuit breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CircuitState {
    /// Calls pass; outcomes are recorded.
    Closed,
    /// Calls are rejected until `wait_in_open` has passed.
    Open,
    /// A limited number of trial calls pass; their outcomes decide.
    HalfOpen,
    /// Always open, by an operator's hand.
    ForcedOpen,
    /// Never opens, by an operator's hand (nothing is recorded).
    Disabled,
}

/// What a circuit breaker did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CircuitBreakerEventKind {
    /// The breaker changed state.
    StateTransition {
        /// The state before.
        from: CircuitState,
        /// The state after.
        to: CircuitState,
    },
    /// A call was not permitted (open, or no trial call left in half-open).
    Rejected {
        /// The state that refused it.
        state: CircuitState,
    },
}

/// What a timeout policy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutEventKind {
    /// A call did not complete in time: an async call was dropped, or a sync
    /// call's wait for a bulkhead slot was cut short.
    TimedOut {
        /// The configured timeout.
        timeout: Duration,
    },
    /// A sync call ran past its timeout; it cannot be pre-empted, so its
    /// result was kept and this reports the overrun.
    Overrun {
        /// The configured timeout.
        timeout: Duration,
        /// How long the call took.
        took: Duration,
    },
}

/// What a rate limiter did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RateLimiterEventKind {
    /// A call got no permit within `max_wait`.
    Rejected {
        /// Permits per refresh period at the time.
        limit_for_period: u32,
    },
}

/// What a hedge policy did. Hedges are numbered from 1 within their call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HedgeEventKind {
    /// A hedge started: the attempts before it had not finished after
    /// `delay`.
    Started {
        /// The hedge's number in its call.
        hedge: u32,
    },
    /// A hedge was refused before it ran, by a full bulkhead, an open
    /// circuit breaker or the rate limiter: it is skipped, not a failure.
    Skipped {
        /// The hedge's number in its call.
        hedge: u32,
        /// What refused it.
        rejection: RejectionKind,
    },
    /// A hedge was due, but the retry budget had no room left: it was not
    /// made.
    BudgetExhausted {
        /// The hedge's number in its call.
        hedge: u32,
    },
    /// A hedge succeeded first: its result is the call's, and the other
    /// attempts were dropped.
    Won {
        /// The hedge's number in its call.
        hedge: u32,
    },
}

/// What a fallback policy did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FallbackEventKind {
    /// The call failed in a way the fallback covers (`on`, `on_error`): the
    /// fallback method answered instead.
    Used {
        /// The rejection that ended the call, or `None` for the method's
        /// own error.
        rejection: Option<RejectionKind>,
    },
}

/// What a chaos policy injected into a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChaosEventKind {
    /// The call was delayed by `latency` before it ran, holding its
    /// bulkhead slot.
    LatencyInjected {
        /// The delay.
        latency: Duration,
    },
    /// The call did not run: it failed with `Rejection::Injected`.
    FaultInjected,
    /// The call did not run: a panic was raised in its place.
    PanicInjected,
}

/// An event of one bulkhead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkheadEvent {
    /// The bulkhead's instance id.
    pub instance: &'static str,
    /// What happened.
    pub kind: BulkheadEventKind,
    /// When, on the registry's clock.
    pub at: Instant,
}

/// What happened to a bulkhead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BulkheadEventKind {
    /// A call was rejected: no slot was free, and none came free within
    /// `max_wait`.
    Rejected {
        /// The limit at the time.
        max_concurrent: u32,
        /// Whether the call had waited (`max_wait` > 0) before it was rejected.
        waited: bool,
    },
    /// A call was refused by its class's share of the limit (its
    /// `shed_at`), slots left free for higher classes: shed at once,
    /// without waiting. Its error is a full bulkhead's.
    Shed {
        /// The call's class.
        priority: Priority,
        /// The calls in flight at which its class is refused, at the time.
        threshold: u32,
        /// The limit at the time.
        max_concurrent: u32,
    },
    /// A call of a keyed bulkhead was refused (its error is a full
    /// bulkhead's).
    KeyRejected {
        /// What was full.
        reason: KeyRefusal,
        /// The limit that was reached: the key's `per_key`, the global
        /// `max_concurrent`, or `max_keys`.
        limit: u32,
        /// Whether the call had waited before it was refused.
        waited: bool,
    },
    /// The limit in force was changed at run time (by a handle, a
    /// configuration reload, or a fleet resource's share).
    LimitChanged {
        /// The limit before.
        from: u32,
        /// The limit after.
        to: u32,
    },
}

/// Why a keyed bulkhead refused a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyRefusal {
    /// The call's key held its `per_key` slots (or others of its key were
    /// waiting first).
    KeyFull,
    /// All keys together held `max_concurrent` (or calls of other keys
    /// were waiting first).
    GlobalFull,
    /// The key was new and `max_keys` keys were live (REG-017).
    TooManyKeys,
}

impl KeyRefusal {
    /// The reason's name, as in metrics labels: `key_full`,
    /// `global_full`, `too_many_keys`.
    pub const fn name(self) -> &'static str {
        match self {
            KeyRefusal::KeyFull => "key_full",
            KeyRefusal::GlobalFull => "global_full",
            KeyRefusal::TooManyKeys => "too_many_keys",
        }
    }
}

/// The slots this process may use on a resource whose budget a fleet of
/// processes shares changed: a renewal moved its share, or it lost the
/// fleet (Redis unreachable past its lease) and fell back, or joined it
/// again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetShareChanged {
    /// The resource's name.
    pub resource: &'static str,
    /// Why it changed.
    pub reason: FleetShareReason,
    /// The slots before.
    pub from: u32,
    /// The slots now: what the resource's bulkheads may hold together.
    pub to: u32,
    /// The share the fleet's allocation aims at for this process (0 when
    /// it does not know: unreachable).
    pub target: u32,
    /// The fleet's budget, as last seen.
    pub budget: u32,
    /// The processes sharing it, this one included, as last seen.
    pub processes: u32,
    /// When, on the registry's clock.
    pub at: Instant,
}

impl FleetShareChanged {
    /// A change of `resource`'s share from `from` to `to` slots, for
    /// `reason`; the fleet's figures are 0 until [`fleet`](Self::fleet)
    /// gives them.
    pub fn new(
        resource: &'static str,
        reason: FleetShareReason,
        from: u32,
        to: u32,
        at: Instant,
    ) -> Self {
        FleetShareChanged {
            resource,
            reason,
            from,
            to,
            target: 0,
            budget: 0,
            processes: 0,
            at,
        }
    }

    /// The same event, with the target share, the budget and the number of
    /// processes the fleet reported.
    #[must_use]
    pub fn fleet(mut self, target: u32, budget: u32, processes: u32) -> Self {
        self.target = target;
        self.budget = budget;
        self.processes = processes;
        self
    }
}

/// Why a fleet resource's share changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FleetShareReason {
    /// The first share granted to this process.
    Joined,
    /// A renewal moved the share: another process joined or left, or the
    /// demands changed.
    Rebalanced,
    /// The lease ran out on this process's clock without a renewal (Redis
    /// unreachable or too slow): the share fell back to the fallback or
    /// the last grant, whichever is smaller; or, later, it rose to the
    /// whole fallback, once no grant made before could be in use.
    Unreachable,
    /// Redis answered again after a fallback: the share is the fleet's
    /// again.
    Rejoined,
    /// The process left the fleet (shutdown): no slots.
    Left,
}

impl FleetShareReason {
    /// The reason in lower case, as metrics and traces name it:
    /// `joined`, `rebalanced`, `unreachable`, `rejoined`, `left`.
    pub fn as_str(self) -> &'static str {
        match self {
            FleetShareReason::Joined => "joined",
            FleetShareReason::Rebalanced => "rebalanced",
            FleetShareReason::Unreachable => "unreachable",
            FleetShareReason::Rejoined => "rejoined",
            FleetShareReason::Left => "left",
        }
    }
}
