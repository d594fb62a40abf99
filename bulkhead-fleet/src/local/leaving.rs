//! Bulkheads leaving a fleet resource: moved off it by a reload, or
//! declared in a batch that was dropped.
//!
//! A leaving bulkhead admits no call (cap 0), and its calls in flight, all
//! admitted under the process's share, stay counted in the bound the
//! process promises Redis until they have finished. Only then is it let go
//! ([`Leaving::settle`]): its cap is lifted if it is on no other fleet
//! resource; if it moved to another one, that resource keeps it closed
//! until this one's [`Handover`] is done, and then runs it within its own
//! share. So a move never lets a call go uncounted by the fleet that
//! admitted it, and never lets two resources set its cap at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bulkhead_core::Bulkhead;

/// Done once the resource a bulkhead left no longer needs it closed: its
/// calls admitted there have finished, or it came back.
///
/// # Memory ordering
///
/// Done with `Release` after the last count of the calls in flight, read
/// with `Acquire` by the resource that waits for it (another task of the
/// fleet thread, or a reload on another thread).
#[derive(Debug, Clone, Default)]
pub(crate) struct Handover(Arc<AtomicBool>);

impl Handover {
    pub(crate) fn done(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn finish(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// A bulkhead leaving one resource.
#[derive(Debug)]
pub(super) struct Leaving {
    pub(super) bulkhead: Bulkhead,
    handover: Handover,
    /// The handovers of resources it left before this one, not done yet:
    /// it is let go only after them.
    after: Vec<Handover>,
    /// Lift its cap once let go: it went to no other fleet resource.
    pub(super) release: bool,
    /// Its instance is still declared (a reload moved it, and may bring it
    /// back); false once its batch was dropped.
    pub(super) declared: bool,
}

impl Leaving {
    /// Closes `bulkhead`, which leaves after `after`.
    pub(super) fn new(
        bulkhead: Bulkhead,
        after: Vec<Handover>,
        release: bool,
        declared: bool,
    ) -> Self {
        bulkhead.set_limit_cap(Some(0));
        Leaving {
            bulkhead,
            handover: Handover::default(),
            after,
            release,
            declared,
        }
    }

    pub(super) fn instance(&self) -> &'static str {
        self.bulkhead.instance()
    }

    /// Its calls in flight: all admitted under the share, since it admits
    /// none any more (nobody lifts its cap before it is let go).
    pub(super) fn in_flight(&self) -> u32 {
        self.bulkhead.concurrent_calls()
    }

    /// The handover a resource it goes to waits for.
    pub(super) fn handover(&self) -> Handover {
        self.handover.clone()
    }

    /// Lets it go if its calls have drained and the resources it left
    /// before let it go; returns whether it did.
    pub(super) fn settle(&mut self) -> bool {
        self.after.retain(|h| !h.done());
        if !self.after.is_empty() || self.bulkhead.concurrent_calls() > 0 {
            return false;
        }
        if self.release {
            self.bulkhead.set_limit_cap(None);
        }
        self.handover.finish();
        true
    }

    /// Taken back as a member (a reload moved it back): the resource
    /// counts it as before, so whoever waited for its handover may go on.
    /// Returns what it still waits for.
    pub(super) fn take_back(self) -> Vec<Handover> {
        self.handover.finish();
        self.after
    }
}
