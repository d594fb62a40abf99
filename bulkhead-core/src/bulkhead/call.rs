//! The path of a call through a bulkhead: admission, waiting, rejection
//! (counted and published), and the timed release of an adaptive or
//! sizing bulkhead.

use super::*;

impl Shared {
    // Always inlined: with the classed arms (`Shed`, `Classed`, both calls
    // out of line) the compiler stopped inlining it into `try_enter` in a
    // user's crate, which cost the free slot 1.4 ns and the rejection
    // 1.0 ns (perf/user-crate/compare.sh, Intel Xeon).
    #[inline(always)]
    pub(super) fn permit_or_reject(
        &self,
        acquired: Acquired,
        waited: bool,
    ) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        match acquired {
            Acquired::Full if self.rejects_quietly() => Err(BulkheadFull::new(self.instance)),
            Acquired::Full => Err(self.reject(waited)),
            Acquired::Shed => Err(self.reject_shed()),
            acquired => Ok(self.admit(acquired)),
        }
    }

    /// The permit of a call that got a slot (`Slot`, or `Classed` through
    /// the classed path) or needs none (`Uncounted`, a disabled bulkhead).
    #[inline]
    pub(super) fn admit(&self, acquired: Acquired) -> BulkheadPermit<'_> {
        BulkheadPermit::new(match acquired {
            Acquired::Uncounted => Held::NOTHING,
            Acquired::Classed(class) => self.held_classed(class),
            _ if self.timed => Held::timed(self, self.admitted_at(), CallOutcome::Success),
            _ => Held::slot(self),
        })
    }

    /// What a permit of a call admitted as `class` through the classed
    /// path holds: out of line, as that path is.
    #[inline(never)]
    fn held_classed(&self, class: Priority) -> Held<'_> {
        if self.timed {
            Held::timed_as(self, self.admitted_at(), CallOutcome::Success, class)
        } else {
            Held::classed(self, class)
        }
    }

    /// A call refused by its class's share of the limit: counted and
    /// published (`BulkheadEventKind::Shed`); the error is a full
    /// bulkhead's, as the caller's contract has it.
    #[cold]
    #[inline(never)]
    pub(super) fn reject_shed(&self) -> BulkheadFull {
        if let Some(traffic) = &self.traffic {
            traffic.rejected();
        }
        let (shed_at, default) = self.semaphore.classes.settings();
        let priority = crate::priority::resolve(crate::priority::raw(), default);
        self.context.publish(move |at| {
            let max_concurrent = self.semaphore.limit();
            Event::Bulkhead(BulkheadEvent {
                instance: self.instance,
                kind: BulkheadEventKind::Shed {
                    priority,
                    threshold: shed_at.threshold(priority, max_concurrent),
                    max_concurrent,
                },
                at,
            })
        });
        BulkheadFull::new(self.instance)
    }

    /// Counts an admission (when sizing is tracked) and returns the stamp
    /// its slot is held from. Hold times are measured on recent readings of
    /// the clock (to within its resolution, 5 ms on the system clock): they
    /// feed histograms and means. The reading is inline (one load on the
    /// system clock); the count, when sizing is tracked, is out of line,
    /// as [`release_timed`](Self::release_timed) is: the callers that
    /// inline an admission save no registers for it.
    #[inline]
    pub(super) fn admitted_at(&self) -> u64 {
        if self.traffic.is_some() {
            self.count_admission();
        }
        self.timeline.recent()
    }

    #[inline(never)]
    fn count_admission(&self) {
        if let Some(traffic) = &self.traffic {
            traffic.admitted();
        }
    }

    /// Gives back a slot taken at `started` (a stamp) on a timed bulkhead,
    /// by a call that ended with `outcome`. Out of line: a permit's drop,
    /// inlined into its holder, then saves no registers for the sample's
    /// work when it gives back an untimed slot.
    #[inline(never)]
    pub(super) fn release_timed(
        &self,
        started: u64,
        outcome: CallOutcome,
        class: Option<Priority>,
    ) {
        let now = self.timeline.recent();
        if let Some(class) = class {
            self.semaphore.classes.release(class);
        }
        let released = self.semaphore.release(self.context.clock());
        if let Some(traffic) = &self.traffic {
            traffic.completed(now.saturating_sub(started));
        }
        if let Some(limiter) = &self.adaptive {
            // On a pool the word's limit is the reservation: whether the
            // call was bound is judged against the limit in force.
            let released = if released.pooled {
                Released {
                    max: self.semaphore.limit(),
                    ..released
                }
            } else {
                released
            };
            limiter.sample(self, (started, now), outcome, released);
        }
    }

    /// What [`Bulkhead::enter`] does when it found no free slot: waits for
    /// one if the bulkhead waits, and counts and publishes the rejection
    /// (`Full`) if none came. Out of line, returning a byte.
    #[cold]
    #[inline(never)]
    pub(super) fn wait_or_reject(&self) -> Acquired {
        if self.waits {
            return self.wait_blocking();
        }
        // Nothing to keep across a call: no registers saved.
        self.count_rejection(false);
        Acquired::Full
    }

    /// [`wait_or_reject`](Self::wait_or_reject) on a bulkhead that waits.
    #[cold]
    #[inline(never)]
    pub(super) fn wait_blocking(&self) -> Acquired {
        if self.semaphore.refuse_waiting().is_some() {
            // A class that may not use the whole limit does not wait.
            self.reject_shed();
            return Acquired::Full;
        }
        let acquired = self.acquire_blocking();
        if acquired == Acquired::Full {
            self.count_rejection(true);
        }
        self.semaphore.tag_waited(acquired)
    }

    /// Whether a call that found no free slot is rejected with nothing
    /// else to do: the bulkhead neither waits nor counts, and nobody
    /// listens to its events.
    #[inline(always)]
    pub(super) fn rejects_quietly(&self) -> bool {
        self.quiet && !self.context.has_listeners()
    }

    /// A rejection: counted and published out of line
    /// ([`note_rejection`](Self::note_rejection)), its error made inline (a
    /// copy of the instance id).
    #[inline]
    pub(super) fn reject(&self, waited: bool) -> BulkheadFull {
        self.note_rejection(waited);
        BulkheadFull::new(self.instance)
    }

    /// [`count_rejection`](Self::count_rejection), out of line and taking
    /// two arguments: a rejected call pays one call for it, and the paths
    /// that admit save no registers for it.
    #[cold]
    #[inline(never)]
    pub(super) fn note_rejection(&self, waited: bool) {
        self.count_rejection(waited);
    }

    /// Counts (when sizing is tracked) and publishes a rejection.
    #[inline(always)]
    pub(super) fn count_rejection(&self, waited: bool) {
        if let Some(traffic) = &self.traffic {
            traffic.rejected();
        }
        self.context.publish(move |at| {
            Event::Bulkhead(BulkheadEvent {
                instance: self.instance,
                kind: BulkheadEventKind::Rejected {
                    max_concurrent: self.semaphore.limit(),
                    waited,
                },
                at,
            })
        });
    }

    /// Waits for a slot up to `max_wait`, or up to the call's deadline
    /// ([`crate::deadline`]) if that comes first: either way a wait that
    /// ends without a slot is `Full` (a `BulkheadFull` to the caller of
    /// [`Bulkhead::enter`], whose error type stays what it was).
    #[cold]
    pub(super) fn acquire_blocking(&self) -> Acquired {
        let clock = self.context.clock();
        let now = clock.now();
        let own = now.checked_add(self.config.max_wait());
        let deadline = crate::deadline::first_before(own).or(own);
        let class = self.semaphore.waiting_class();
        self.semaphore
            .acquire_blocking_as(clock, class, now, deadline)
    }

    #[cold]
    pub(super) fn enter_blocking_until(
        &self,
        outer: Option<Instant>,
    ) -> Result<BulkheadPermit<'_>, EnterError> {
        let clock = self.context.clock();
        let now = clock.now();
        let own = now.checked_add(self.config.max_wait());
        // The outer deadline binds only if it comes strictly first.
        let outer_first = match (outer, own) {
            (Some(outer), Some(own)) => outer < own,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let deadline = if outer_first { outer } else { own };
        if let Some(shed) = self.semaphore.refuse_waiting() {
            return self.permit_or_reject(shed, false).map_err(EnterError::Full);
        }
        let class = self.semaphore.waiting_class();
        let acquired = self
            .semaphore
            .acquire_blocking_as(clock, class, now, deadline);
        match self.semaphore.tag_waited(acquired) {
            // The outer deadline ended the wait (not a refusal by the
            // queue's discipline before it).
            Acquired::Full if outer_first && deadline.is_some_and(|d| clock.now() >= d) => {
                if let Some(traffic) = &self.traffic {
                    traffic.abandoned();
                }
                Err(EnterError::DeadlineReached)
            }
            acquired => self
                .permit_or_reject(acquired, true)
                .map_err(EnterError::Full),
        }
    }
}
