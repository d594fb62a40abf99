//! The disciplines' settings and the state of CoDel, as folly's
//! `folly/executors/Codel.cpp` keeps it (its "sloughing" variant).
//!
//! Each hand-off under `codel` feeds the time the waiter it considers has
//! spent in the queue (its *sojourn*) to [`Codel::refuses`]:
//!
//! 1. at the end of an interval (or at the first hand-off), the queue is
//!    *overloaded* for the next interval if the shortest sojourn of the
//!    interval that ended was above `target`; the next interval ends
//!    `interval` from now, and its shortest sojourn starts as this one
//!    (never refused, as folly: more than one waiter must come by in an
//!    interval before any is refused);
//! 2. otherwise the sojourn lowers the interval's shortest if it is
//!    shorter;
//! 3. while overloaded, a waiter whose sojourn is above twice `target`
//!    (folly's slough timeout) is refused.
//!
//! So a waiter is refused only when every waiter a hand-off considered for
//! a whole interval had waited longer than the target, and it has waited
//! twice that. CoDel proper (Nichols and Jacobson) drops at a rate growing
//! with the square root of the drops; folly found the slough timeout
//! works better for RPC queues, whose callers do not back off on one drop.

use std::time::{Duration, Instant};

use crate::QueueDiscipline;

/// How a queue orders the waiters of one class, and its times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Discipline {
    pub(crate) queue: QueueDiscipline,
    /// `queue_target`.
    pub(crate) target: Duration,
    /// `queue_interval`.
    pub(crate) interval: Duration,
}

impl Discipline {
    /// First come, first served (the times unused).
    pub(crate) const FIFO: Discipline = Discipline {
        queue: QueueDiscipline::Fifo,
        target: QueueDiscipline::DEFAULT_TARGET,
        interval: QueueDiscipline::DEFAULT_INTERVAL,
    };
}

/// CoDel's state between hand-offs (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Codel {
    /// The shortest sojourn seen in the current interval; `None` before
    /// the first hand-off.
    min_sojourn: Option<Duration>,
    /// When the current interval ends; `None` before the first hand-off.
    interval_end: Option<Instant>,
    /// Whether the last interval that ended left the queue overloaded.
    overloaded: bool,
}

impl Codel {
    /// Before the first hand-off.
    pub(super) const NEW: Codel = Codel {
        min_sojourn: None,
        interval_end: None,
        overloaded: false,
    };

    /// Feeds the sojourn of the waiter a hand-off at `now` considers;
    /// returns whether that waiter is refused.
    pub(super) fn refuses(&mut self, now: Instant, sojourn: Duration, times: Discipline) -> bool {
        if self.interval_end.is_none_or(|end| now >= end) {
            self.overloaded = self.min_sojourn.is_some_and(|min| min > times.target);
            // An interval ending past the clock's range ends at once
            // instead (no panic): every hand-off starts a new one.
            self.interval_end = now.checked_add(times.interval).or(Some(now));
            self.min_sojourn = Some(sojourn);
            return false;
        }
        if self.min_sojourn.is_none_or(|min| sojourn < min) {
            self.min_sojourn = Some(sojourn);
        }
        self.overloaded && sojourn > times.target.saturating_mul(2)
    }

    /// Whether the last interval that ended left the queue overloaded.
    #[cfg(all(test, not(loom)))]
    pub(super) fn is_overloaded(&self) -> bool {
        self.overloaded
    }
}
