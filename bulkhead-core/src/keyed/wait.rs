//! The future of an async caller entering a keyed bulkhead.

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::slots::SlotRef;
use super::{KeyedBulkhead, Waited};
use crate::bulkhead::BulkheadPermit;
use crate::clock::{Sleep, Wake};
use crate::rejection::BulkheadFull;

/// Waits, without blocking a thread, for a slot of a key of a
/// [`KeyedBulkhead`]; returned by [`KeyedBulkhead::enter_async`].
///
/// The first poll takes a free slot if there is one. Otherwise, with
/// `max_wait` zero (or a deadline scope already passed), it resolves to
/// [`BulkheadFull`]; else it queues: a waiter gets a slot when its key has
/// room and, if the key needs one beyond its reservation, a global slot
/// is free, the key holding the fewest slots first, and within a key the
/// oldest waiter first. It resolves to [`BulkheadFull`] once `max_wait`
/// (or the deadline in force at the first poll) has passed on the
/// bulkhead's clock without a slot.
///
/// # Cancel safety
///
/// Dropping it while queued leaves the queue at once; a slot handed to it
/// meanwhile is passed on to the next waiter (or freed).
#[must_use = "futures do nothing unless polled"]
pub struct KeyedEnter<'a, 'k, K, Q: ?Sized> {
    keyed: &'a KeyedBulkhead<K>,
    /// Read at the first poll only: the permit borrows the bulkhead, not
    /// the key.
    key: &'k Q,
    state: State,
}

enum State {
    Start,
    Queued {
        seq: u64,
        slot: SlotRef,
        sleep: Sleep,
    },
    Done,
}

impl<'a, 'k, K, Q: ?Sized> KeyedEnter<'a, 'k, K, Q> {
    pub(super) fn new(keyed: &'a KeyedBulkhead<K>, key: &'k Q) -> Self {
        KeyedEnter {
            keyed,
            key,
            state: State::Start,
        }
    }
}

impl<'a, K, Q> Future for KeyedEnter<'a, '_, K, Q>
where
    K: Hash + Eq + Send + Sync + 'static + Borrow<Q>,
    Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
{
    type Output = Result<BulkheadPermit<'a>, BulkheadFull>;

    // The first poll of an enabled bulkhead decides here, inlined in the
    // caller, when the key is live and no wait is possible: a free slot
    // is taken, a refusal returned, with no call but the lookup's (and
    // the rejection's); the rest is `poll_slow`.
    // Always inlined: called, the poll's result (three words) goes
    // through memory, and a `#[inline]` poll is left out of line once
    // the lookup is inlined in it (callgrind, user crate: 190
    // instructions a refused call this way, 157 inlined; `try_enter`'s
    // 145).
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let keyed = this.keyed;
        let mut fast = super::SLOW;
        if let State::Start = this.state
            && keyed.inner.enabled
        {
            // A free slot of a live key: no clock read, no waker cloned.
            fast = keyed.fast(this.key);
            if fast > super::SLOW {
                this.state = State::Done;
                return Poll::Ready(Ok(keyed.taken(fast)));
            }
            // Refused with no wait: as `try_enter` refuses.
            if !keyed.waits()
                && let Some(refusal) = super::refusal_of(fast)
            {
                this.state = State::Done;
                return Poll::Ready(Err(keyed.reject(refusal, false)));
            }
        }
        self.poll_slow(cx, fast)
    }
}

impl<'a, K, Q> KeyedEnter<'a, '_, K, Q>
where
    K: Hash + Eq + Send + Sync + 'static + Borrow<Q>,
    Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
{
    /// A first poll that may wait, of a new key, or of a disabled
    /// bulkhead (`fast` what the lookup of an enabled one got), or a poll
    /// while queued.
    #[inline(never)]
    fn poll_slow(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        fast: usize,
    ) -> Poll<Result<BulkheadPermit<'a>, BulkheadFull>> {
        let this = &mut *self;
        let keyed = this.keyed;
        match &mut this.state {
            State::Done => panic!("KeyedEnter polled after completion"),
            State::Start => {
                if !keyed.inner.enabled {
                    this.state = State::Done;
                    return Poll::Ready(Ok(keyed.anchor().keyed_permit(None)));
                }
                let until = keyed.wait_until();
                // A live key refused, and the wait over before it starts
                // (a deadline scope passed): refused as `try_enter`
                // refuses, without going to the shard's lock to find out
                // again.
                if until.is_none()
                    && let Some(refusal) = super::refusal_of(fast)
                {
                    this.state = State::Done;
                    return Poll::Ready(Err(keyed.reject(refusal, false)));
                }
                let wake = until.map(|_| Wake::Task(cx.waker().clone()));
                match keyed.take(this.key, wake) {
                    Ok(slot) => {
                        this.state = State::Done;
                        Poll::Ready(Ok(keyed.anchor().keyed_permit(Some(slot))))
                    }
                    Err(Waited::Refused(refusal)) => {
                        this.state = State::Done;
                        Poll::Ready(Err(keyed.reject(refusal, false)))
                    }
                    Err(Waited::Queued(seq, slot)) => {
                        let until = until.unwrap_or_else(|| keyed.anchor().context().clock().now());
                        let sleep = keyed.anchor().context().clock().sleep_until(until);
                        this.state = State::Queued { seq, slot, sleep };
                        // Granted during its own enqueue, or not: poll on.
                        self.poll_slow(cx, super::SLOW)
                    }
                }
            }
            State::Queued { seq, slot, sleep } => {
                let (seq, slot) = (*seq, *slot);
                let slots = &keyed.inner.slots;
                if slots.granted(seq, Some(cx)) {
                    this.state = State::Done;
                    return Poll::Ready(Ok(keyed.anchor().keyed_permit(Some(slot.as_ptr()))));
                }
                if Pin::new(sleep).poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.state = State::Done;
                // SAFETY: still queued until the cancel below.
                let blocked_by = unsafe { slots.blocked_by(slot) };
                if slots.cancel(seq) {
                    return Poll::Ready(Ok(keyed.anchor().keyed_permit(Some(slot.as_ptr()))));
                }
                Poll::Ready(Err(keyed.reject(blocked_by, true)))
            }
        }
    }
}

impl<K, Q: ?Sized> Drop for KeyedEnter<'_, '_, K, Q> {
    fn drop(&mut self) {
        if let State::Queued { seq, slot, .. } = self.state
            && self.keyed.inner.slots.cancel(seq)
        {
            // SAFETY: the slot was handed to this waiter: it holds it.
            unsafe { self.keyed.inner.slots.release(slot) };
        }
    }
}

impl<K, Q: ?Sized> fmt::Debug for KeyedEnter<'_, '_, K, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Start => "start",
            State::Queued { .. } => "queued",
            State::Done => "done",
        };
        f.debug_struct("KeyedEnter")
            .field("instance", &self.keyed.anchor().instance())
            .field("state", &state)
            .finish()
    }
}
