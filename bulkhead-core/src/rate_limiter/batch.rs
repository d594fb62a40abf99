//! # Implementation details
//!
//! Permits spent from a per-thread *batch*, so that a thread calling a
//! limiter many times per period pays no atomic read-modify-write on most
//! calls (issue 33, item 3: the `lock cmpxchg` on the permits' word was
//! about 8.6 ns of every call at the default 500 ns period on an Intel
//! Xeon, however many permits were left).
//!
//! ## The claim
//!
//! The compare-exchange that takes serial `s` of cycle `c` (see `state.rs`,
//! *Cycles and serial numbers*) may instead take the run `s .. s + k` of
//! serials of the same cycle ([`PermitState::try_claim_at`]): every serial
//! is still counted in the shared word exactly once. The caller spends `s`
//! at once and keeps the other `k - 1` in a thread-local [`Batch`] tagged
//! with the limiter and the cycle; later calls on that thread whose
//! reading is in that cycle spend from it with no atomic operation at all.
//! A serial of cycle `c` is only ever spent on a reading in cycle `c`, so a
//! cycle still grants at most `limit_for_period` permits, by construction;
//! claimed serials not spent by the end of their cycle lapse with it, as
//! unused permits do.
//!
//! ## How many
//!
//! A thread claims as many permits as it took in the current cycle so far,
//! or else in the previous one (its recent rate), doubling within a cycle
//! from one: a thread that calls once per period never claims more than
//! one, and one that calls often claims [`CLAIM_MAX`] (8) at a time. A
//! claim also takes at most a quarter of the permits its cycle has left
//! ([`claim_size`]), so a limit below 8 per period, or the last 7 permits of
//! any cycle, are taken one by one, and the permits a thread holds unspent
//! are never more than it has just shown it uses. At the default 50 permits
//! per 500 ns a thread hammering the limiter spends 8 permits per atomic
//! operation.
//!
//! ## What it changes
//!
//! [`available_permits`](super::RateLimiter::available_permits) counts the
//! permits claimed into batches and not yet spent as taken (at most 7 per
//! thread that called in the current period, and only at short periods).
//! Other threads see them as taken too: near the limit, a thread can be
//! refused while another holds a few of the cycle's permits it will not
//! use, for what is left of a period of under 20 ms.
//!
//! ## Where
//!
//! Only on a limiter that counts on the time-stamp counter (a period
//! shorter than 20 ms on the `SystemClock`, see `mod.rs`, *Readings of the
//! clock*): its readings are precise (no `margin`), the periods are short,
//! so that an unspent batch lapses within 20 ms, and its calls are the
//! frequent ones. A limiter on recent readings or on another clock (the
//! `ManualClock` of the tests, whose counts stay exact) takes each permit
//! with its own compare-exchange, as before. Under loom there is no counter,
//! so no batch: the claim itself (one compare-exchange on the shared word)
//! is modelled in `state.rs`; the batch is the thread's own memory.
//!
//! ## Identity
//!
//! A batch is tagged with the limiter's `id`, drawn from a process-wide
//! counter when the limiter is built (never 0, never reused: a limiter
//! freed and another built at the same address do not share a batch), and
//! with the start of its cycle on that limiter's time line. An async task
//! that moves between threads spends from the batch of the thread it runs
//! on at the time of the call.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Shared;
use super::state::CLAIM_MAX;
#[cfg(doc)]
use super::state::{PermitState, claim_size};

/// The permits of one limiter's cycle this thread has claimed.
struct Batch {
    /// The limiter's `id`; 0 for none.
    id: Cell<u64>,
    /// The start of the cycle, on the limiter's time line.
    start: Cell<u64>,
    /// Claimed and not yet spent.
    left: Cell<u64>,
    /// Taken by this thread in that cycle: claimed, spent or not.
    used: Cell<u64>,
}

thread_local! {
    /// Constant-initialised and with nothing to drop: an access is a few
    /// instructions relative to the thread pointer, with no registration.
    static BATCH: Batch = const {
        Batch {
            id: Cell::new(0),
            start: Cell::new(0),
            left: Cell::new(0),
            used: Cell::new(0),
        }
    };
}

/// A fresh limiter identity: never 0, never reused in a process (2^64
/// limiters are never built).
pub(super) fn new_id() -> u64 {
    // A plain std atomic, also under loom: no model builds limiters
    // concurrently with this counter in view.
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Shared {
    /// Takes a permit of the cycle of `elapsed`, a precise reading: from
    /// this thread's batch if it holds one of that cycle, else by a claim
    /// on the shared word; `false` as for
    /// [`try_take_at`](super::state::PermitState::try_take_at).
    #[inline(always)]
    pub(super) fn take_batched(&self, elapsed: u64) -> bool {
        let spent = BATCH.try_with(|batch| {
            let left = batch.left.get();
            if batch.id.get() == self.id
                && left != 0
                && elapsed.wrapping_sub(batch.start.get()) < self.permits.period()
            {
                batch.left.set(left - 1);
                true
            } else {
                self.claim(batch, elapsed)
            }
        });
        // No thread-local storage (a thread being torn down): one permit.
        spent.unwrap_or_else(|_| self.permits.try_take_at(elapsed, 0))
    }

    /// Claims a run of permits of the cycle of `elapsed` into `batch`, and
    /// spends the first.
    #[inline(never)]
    fn claim(&self, batch: &Batch, elapsed: u64) -> bool {
        let start = self.permits.cycle_start(elapsed);
        let mine = batch.id.get() == self.id;
        let want = match start.wrapping_sub(batch.start.get()) {
            // This cycle, or the one before: the thread's recent rate.
            0 if mine => batch.used.get(),
            since if mine && since == self.permits.period() => batch.used.get(),
            _ => 0,
        };
        let taken = self
            .permits
            .try_claim_at(elapsed, 0, want.clamp(1, CLAIM_MAX));
        if taken == 0 {
            return false;
        }
        let used = if mine && batch.start.get() == start {
            batch.used.get().saturating_add(taken)
        } else {
            taken
        };
        batch.id.set(self.id);
        batch.start.set(start);
        batch.left.set(taken - 1);
        batch.used.set(used);
        true
    }
}
