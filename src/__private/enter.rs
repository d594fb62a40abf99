//! A bulkhead alone: what a method or function whose only policy is
//! `#[bulkhead]` calls to take a slot, a rejection being its result.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bulkhead_core::{Bulkhead, BulkheadPermit, CallOutcome, Enter};

use super::reject::Reject;

/// [`Bulkhead::enter`], a rejection being given as the method's result.
///
/// # Errors
///
/// The rejected call's result.
#[inline]
pub fn enter<R>(bulkhead: &Bulkhead, reject: Reject<R>) -> Result<BulkheadPermit<'_>, R> {
    match bulkhead.enter() {
        Ok(permit) => Ok(permit),
        Err(full) => Err(reject.reject(full)),
    }
}

/// What a sync method with a bulkhead alone decides at once
/// ([`Bulkhead::enter_at_once`]): `Some(Ok(permit))` with a free slot,
/// `Some(Err(result))` rejected quietly, `None` when [`enter_then`] has to
/// decide.
///
/// The generated sync method is `#[inline(always)]`, and is this, the
/// delegate's call and the slot's release ([`call_then_release`]): what a
/// semaphore written by hand in the caller's loop would be. Everything
/// else, which needs registers kept across calls of its own (a wait, a
/// rejection counted or published, a pool), is [`enter_then`], out of
/// line (docs/benchmarks-history.md, *The wrapper inlined, its slow paths
/// out of line*). Always inlined itself: left out of line, its result
/// (three words) came back through memory and was read back by a wider
/// load, a store-forwarding stall (issue 33).
#[inline(always)]
pub fn enter_at_once<R>(
    bulkhead: &Bulkhead,
    reject: Reject<R>,
) -> Option<Result<BulkheadPermit<'_>, R>> {
    match bulkhead.enter_at_once()? {
        Ok(permit) => Some(Ok(permit)),
        Err(full) => Some(Err(reject.reject(full))),
    }
}

/// A sync method's call with the slot [`enter_at_once`] took:
/// `call(receiver, arguments)`, then the slot given back with its result.
/// The call is a closure that captures nothing, given the delegate and the
/// arguments as values, so that the method writes it once for both this
/// and [`enter_then`].
#[inline(always)]
pub fn call_then_release<R, D, A>(
    permit: BulkheadPermit<'_>,
    reject: Reject<R>,
    receiver: D,
    arguments: A,
    call: impl FnOnce(D, A) -> R,
) -> R {
    let output = call(receiver, arguments);
    reject.release(permit, &output);
    output
}

/// The rest of a sync method's call when [`enter_at_once`] could not
/// decide: [`Bulkhead::enter`] (which may wait, count, publish, borrow
/// from a pool, then reject), and with a slot
/// `call(receiver, arguments)`, the slot given back with its result. Out
/// of line: the method inlined into its caller carries only the call to
/// it.
#[inline(never)]
pub fn enter_then<R, D, A>(
    bulkhead: &Bulkhead,
    reject: Reject<R>,
    receiver: D,
    arguments: A,
    call: impl FnOnce(D, A) -> R,
) -> R {
    match bulkhead.enter() {
        Ok(permit) => call_then_release(permit, reject, receiver, arguments, call),
        Err(full) => reject.reject(full),
    }
}

/// [`Bulkhead::enter_async`], a rejection being given as the method's
/// result. The permit counts as dropped until [`Reject::release`] gives it
/// back with the call's result: a future dropped before it completes is a
/// dropped call to an adaptive bulkhead.
#[inline]
pub fn enter_async<R>(bulkhead: &Bulkhead, reject: Reject<R>) -> EnterAsync<'_, R> {
    EnterAsync {
        enter: bulkhead.enter_async(),
        reject,
    }
}

/// The future of [`enter_async`].
#[must_use = "futures do nothing unless polled"]
pub struct EnterAsync<'a, R> {
    enter: bulkhead_core::Enter<'a>,
    reject: Reject<R>,
}

impl<'a, R> Future for EnterAsync<'a, R> {
    type Output = Result<BulkheadPermit<'a>, R>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let reject = self.reject;
        match Pin::new(&mut self.enter).poll(cx) {
            Poll::Ready(Ok(mut permit)) => {
                permit.set_outcome(CallOutcome::Dropped);
                Poll::Ready(Ok(permit))
            }
            Poll::Ready(Err(full)) => Poll::Ready(Err(reject.reject(full))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<R> fmt::Debug for EnterAsync<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterAsync")
            .field("enter", &self.enter)
            .finish_non_exhaustive()
    }
}

/// The future of an async method with a bulkhead alone that borrows its
/// bulkhead: `call` (the delegate's call, an `async` block that calls the
/// method when first polled) run with a slot of `bulkhead`, a rejection
/// being given as the method's result through `reject`.
///
/// Nothing happens until it is first polled. Its first poll decides as
/// [`Bulkhead::enter_at_once`] does, inlined into the caller: a free slot
/// taken, or a quiet rejection (no wait, nothing to count or publish)
/// returned at once, its result built in registers; anything else (a
/// wait, a rejection to count or publish, a pool, a priority, a lost
/// compare-exchange) goes through [`Bulkhead::enter_async`] as an `async`
/// block's `enter_async(..).await` would. Written out rather than as an
/// `async` block, whose first poll copies what it captured into its own
/// locals and whose awaited results are written to memory field by field
/// and read back whole: each such copy waits for the stores to reach the
/// cache (a store-forwarding stall, ≈ 5 ns each on the AMD guest of
/// issue 33; a rejected call cost 21 ns that way).
#[inline(always)]
pub fn guard_async<R, F>(bulkhead: &Bulkhead, reject: Reject<R>, call: F) -> GuardAsync<'_, R, F>
where
    F: Future<Output = R>,
{
    GuardAsync {
        call,
        phase: Phase::Start,
        bulkhead,
        reject,
    }
}

pin_project_lite::pin_project! {
    /// The future of [`guard_async`].
    #[must_use = "futures do nothing unless polled"]
    pub struct GuardAsync<'a, R, F> {
        // First: dropped before the slot it runs with, as the call of an
        // `async` block awaiting it would be. A wait in progress is
        // withdrawn before it (`PinnedDrop`), as an `async` block would
        // drop its awaited `enter_async` first.
        #[pin]
        call: F,
        phase: Phase<'a>,
        bulkhead: &'a Bulkhead,
        reject: Reject<R>,
    }

    impl<'a, R, F> PinnedDrop for GuardAsync<'a, R, F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Phase::Entering(_) = this.phase {
                *this.phase = Phase::Done;
            }
        }
    }
}

/// Where a [`GuardAsync`] stands.
enum Phase<'a> {
    /// Not polled yet.
    Start,
    /// Waiting for a slot (or to be told it has none).
    Entering(Enter<'a>),
    /// Running the call with this slot.
    Running(BulkheadPermit<'a>),
    /// Done (or the call panicked): polled again, it stays pending.
    Done,
}

impl<R, F> Future for GuardAsync<'_, R, F>
where
    F: Future<Output = R>,
{
    type Output = R;

    /// The first poll's decision, inlined into the caller; the rest,
    /// which waits or keeps a slot across polls, is out of line
    /// ([`GuardAsync::poll_rest`]).
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.as_mut().project();
        if let Phase::Start = this.phase {
            // Read before any call, while the compiler still knows them
            // from the method that made the future: the rejecter's pointer
            // is then a direct call, inlined.
            let (bulkhead, reject) = (*this.bulkhead, *this.reject);
            match bulkhead.enter_at_once() {
                Some(Ok(mut permit)) => {
                    permit.set_outcome(CallOutcome::Dropped);
                    done(this.phase);
                    return run(this.call, this.phase, reject, permit, cx);
                }
                Some(Err(full)) => {
                    done(this.phase);
                    return Poll::Ready(reject.reject(full));
                }
                None => {}
            }
        }
        self.poll_rest(cx)
    }
}

impl<R, F> GuardAsync<'_, R, F>
where
    F: Future<Output = R>,
{
    /// Every poll but a first one [`Bulkhead::enter_at_once`] decided:
    /// [`Bulkhead::enter_async`] polled until it decides, then the call
    /// polled with the slot.
    #[inline(never)]
    fn poll_rest(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.project();
        loop {
            match this.phase {
                Phase::Start => *this.phase = Phase::Entering(this.bulkhead.enter_async()),
                Phase::Entering(enter) => match Pin::new(enter).poll(cx) {
                    Poll::Ready(Ok(mut permit)) => {
                        permit.set_outcome(CallOutcome::Dropped);
                        *this.phase = Phase::Done;
                        return run(this.call, this.phase, *this.reject, permit, cx);
                    }
                    Poll::Ready(Err(full)) => {
                        *this.phase = Phase::Done;
                        return Poll::Ready(this.reject.reject(full));
                    }
                    Poll::Pending => return Poll::Pending,
                },
                Phase::Running(_) => {
                    let Phase::Running(permit) = std::mem::replace(this.phase, Phase::Done) else {
                        return Poll::Pending;
                    };
                    return run(this.call, this.phase, *this.reject, permit, cx);
                }
                Phase::Done => return Poll::Pending,
            }
        }
    }
}

/// `phase`, known to be `Start`, set to `Done` with no drop glue called
/// (the compiler cannot always tell that `Start` holds nothing).
#[inline(always)]
fn done(phase: &mut Phase<'_>) {
    std::mem::forget(std::mem::replace(phase, Phase::Done));
}

/// Polls `call` holding `permit` (`phase` is `Done`): if it is ready, the
/// slot is given back with its result; if not, `phase` keeps the slot. The
/// permit is a local while the call is polled, so that a call that
/// panics gives its slot back as it unwinds, as in an `async` block.
#[inline(always)]
fn run<'a, R, F>(
    call: Pin<&mut F>,
    phase: &mut Phase<'a>,
    reject: Reject<R>,
    permit: BulkheadPermit<'a>,
    cx: &mut Context<'_>,
) -> Poll<R>
where
    F: Future<Output = R>,
{
    match call.poll(cx) {
        Poll::Ready(output) => {
            reject.release(permit, &output);
            Poll::Ready(output)
        }
        Poll::Pending => {
            *phase = Phase::Running(permit);
            Poll::Pending
        }
    }
}

impl<R, F> fmt::Debug for GuardAsync<'_, R, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.phase {
            Phase::Start => "start",
            Phase::Entering(_) => "entering",
            Phase::Running(_) => "running",
            Phase::Done => "done",
        };
        f.debug_struct("GuardAsync")
            .field("phase", &phase)
            .finish_non_exhaustive()
    }
}
