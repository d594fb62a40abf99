//! What a call records while its instance's telemetry records
//! ([`crate::telemetry`]): a [`Rec`] the attempt's code is generic over, so
//! that a call that records nothing ([`NoRec`]) carries no stamp and makes
//! no reading: its stamps are `()`.

use super::Policies;
use crate::rejection::CallError;
use crate::telemetry::{Recorder, WaitOutcome, outcome_of};

/// Records a call's durations, or does nothing.
pub(super) trait Rec: Copy {
    /// A reading of the clock (`()` when nothing records).
    type Stamp: Copy;

    /// Reads the clock (precisely).
    fn stamp(self, policies: &Policies) -> Self::Stamp;

    /// A wait for a bulkhead slot, from `from` to now.
    fn wait(self, policies: &Policies, from: Self::Stamp, outcome: WaitOutcome);

    /// A call that got its slot, or was refused, without waiting (a
    /// sample of zero).
    fn no_wait(self, outcome: WaitOutcome);

    /// Attempt `number`, from `from` to now, ended with `result`; returns
    /// the end's stamp.
    fn attempt<T, E>(
        self,
        policies: &Policies,
        number: u32,
        from: Self::Stamp,
        result: &Result<T, CallError<E>>,
    ) -> Self::Stamp;

    /// The call, from `from` to `to`, ended with `result`.
    fn call<T, E>(self, from: Self::Stamp, to: Self::Stamp, result: &Result<T, CallError<E>>);
}

/// Nothing recorded.
#[derive(Clone, Copy)]
pub(super) struct NoRec;

impl Rec for NoRec {
    type Stamp = ();

    #[inline(always)]
    fn stamp(self, _: &Policies) {}

    #[inline(always)]
    fn wait(self, _: &Policies, (): (), _: WaitOutcome) {}

    #[inline(always)]
    fn no_wait(self, _: WaitOutcome) {}

    #[inline(always)]
    fn attempt<T, E>(self, _: &Policies, _: u32, (): (), _: &Result<T, CallError<E>>) {}

    #[inline(always)]
    fn call<T, E>(self, (): (), (): (), _: &Result<T, CallError<E>>) {}
}

impl Rec for Recorder<'_> {
    type Stamp = u64;

    #[inline]
    fn stamp(self, policies: &Policies) -> u64 {
        policies.clock.now()
    }

    #[inline]
    fn wait(self, policies: &Policies, from: u64, outcome: WaitOutcome) {
        let to = policies.clock.now();
        Recorder::wait(&self, to.saturating_sub(from), outcome);
    }

    #[inline]
    fn no_wait(self, outcome: WaitOutcome) {
        Recorder::wait(&self, 0, outcome);
    }

    #[inline]
    fn attempt<T, E>(
        self,
        policies: &Policies,
        number: u32,
        from: u64,
        result: &Result<T, CallError<E>>,
    ) -> u64 {
        let to = policies.clock.now();
        Recorder::attempt(&self, number, from, to, outcome_of(result), &policies.clock);
        to
    }

    #[inline]
    fn call<T, E>(self, from: u64, to: u64, result: &Result<T, CallError<E>>) {
        Recorder::call(&self, to.saturating_sub(from), outcome_of(result));
    }
}

/// How a wait for a slot ended, from the attempt's result when the
/// bulkhead refused it.
pub(super) fn refused(rejection: &crate::rejection::Rejection) -> WaitOutcome {
    match rejection.kind() {
        crate::rejection::RejectionKind::BulkheadFull => WaitOutcome::Rejected,
        _ => WaitOutcome::Abandoned,
    }
}
